"""RAPPOR: strings through Bloom filters, a memoised permanent response and an instantaneous one (docs/math.md
§16.2-§16.5). Numpy only.

A report is ``2 + ceil(m / 8)`` bytes: the cohort (2 bytes, low byte first), then the m bits of the instantaneous
response packed 8 to a byte, bit i being bit i mod 8 of byte 2 + i div 8. The server's statistics are, per cohort,
the number of reports and the count of each bit; the estimate is the least-squares decoding over a candidate list
(docs/math.md §16.4), unbiased when the list holds every value the users have.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.base import EXACT_TABLE, Guarantee
from lipdesign.mechanisms.hashed_bits import MAX_BITS, MAX_COHORTS, MAX_HASHES, WORD, HashedBitReports, chunk, threshold
from lipdesign.mechanisms.sampling import MAX_SEED, as_generator
from lipdesign.notions import LDP
from lipdesign.strings import DEFAULT_MAX_BYTES
from lipdesign.validation import MAX_EPSILON, fmt, integer, real_number
from lipdesign.verification import log_upper, verify_table

if TYPE_CHECKING:  # annotations only
    from collections.abc import Sequence
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.sampling import RandomSource




class RAPPOR(HashedBitReports):
    """RAPPOR over strings ([RAPPOR]; docs/math.md §16.2-§16.4): a Bloom filter of ``m`` bits with ``h`` hash
    functions per cohort, a permanent randomized response ``f`` and an instantaneous one (``p``, ``q``).

    Two guarantees, both computed in exact arithmetic from the probabilities the sampler realises (integer
    thresholds on 32-bit words) and stated for every pair of strings, listed or not: one report is
    ``epsilon``-LDP (docs/math.md §16.3), and any number of reports of one value by one user are
    ``epsilon_permanent``-LDP together, when the permanent response is memoised per user and value (docs/math.md
    §16.5).

    Parameters
    ----------
    f : float
        The permanent response's noise: each bit is set to 1 with probability f/2, to 0 with probability f/2 and
        kept otherwise; 0 < f < 1 (the sampler realises f = 2 round(f 2^31) / 2^32).
    p, q : float
        The instantaneous response: a bit is reported 1 with probability q when the permanent bit is 1, p when it
        is 0 (each realised as round(x 2^32) / 2^32); they must differ.
    m : int, default 128
        Bits of the Bloom filter, 1 to 65536.
    h : int, default 2
        Hash functions per cohort, 1 to 64 and at most m.
    cohorts : int, default 8
        Cohorts, each with its own hash functions, 1 to 65536.
    seed : int, optional
        The public seed of the hash functions, 0 to 2^63 - 1; by default drawn from the operating system and stored.
    max_bytes : int, default 64
        The longest value, in bytes of UTF-8.
    candidates : sequence of str, optional
        The strings the server decodes over (``estimate``). Not a parameter of the mechanism: two RAPPORs that
        differ only in candidates have the same reports, file and fingerprint (``with_candidates`` sets them).

    Attributes
    ----------
    epsilon : float
        One report's exact LDP epsilon, rounded up: h ln(q* (1 - p*) / (p* (1 - q*))).
    epsilon_permanent : float
        Any number of reports of one value: 2h ln((1 - f/2) / (f/2)), with f as realised.
    q_star, p_star : fractions.Fraction
        Pr[reported bit = 1] for a bit of the value's filter and for any other bit.

    Raises
    ------
    ValidationError
        A parameter outside its range, h > m, f at 0 or 1, or p and q with the same threshold (the reports would
        say nothing).

    Examples
    --------
    >>> import lipdesign as ld
    >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=4, seed=1)
    >>> round(rappor.epsilon, 4), round(rappor.epsilon_permanent, 4)
    (1.0743, 4.3944)
    >>> rappor.verify().passed
    True
    """

    family = "rappor"
    parameter_rules = (("f", "number in (0, 1)"), ("p", "number in [0, 1]"), ("q", "number in [0, 1], not p"),
                       ("m", f"integer in 1..{MAX_BITS}"), ("h", f"integer in 1..{MAX_HASHES}, at most m"),
                       ("cohorts", f"integer in 1..{MAX_COHORTS}"), ("seed", f"integer in 0..{MAX_SEED - 1}"),
                       ("max_bytes", "integer in 1..4096"))
    client_cost = "O(m) per report (m bits)"

    def __init__(self, f: float, p: float, q: float, m: int = 128, h: int = 2, cohorts: int = 8,
                 seed: int | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                 candidates: Sequence[str] | None = None) -> None:
        self._sketch(m, h, cohorts, seed, max_bytes, candidates)
        self.f, self.p, self.q = (real_number(value, name, 0.0, 1.0) for name, value in (("f", f), ("p", p), ("q", q)))
        #: The integer thresholds on 32-bit words (docs/math.md §16.2): permanent 1 below T, 0 below 2T.
        self.permanent_threshold = threshold(self.f, "f", WORD // 2)
        if not 0 < self.permanent_threshold < WORD // 2:
            raise ValidationError(f"f is {fmt(self.f)}; it must lie strictly between 0 and 1 (at 0 repeated reports "
                                  "reveal the filter, at 1 the reports say nothing), at least 2^-31 from both")
        self.q_threshold = threshold(self.q, "q")
        self.p_threshold = threshold(self.p, "p")
        if self.q_threshold == self.p_threshold:
            raise ValidationError(f"q is {fmt(self.q)}; it must differ from p = {fmt(self.p)} (with q = p a report "
                                  "does not depend on the value)")
        half_f = Fraction(self.permanent_threshold, WORD)  # f/2 as realised
        q_r, p_r = Fraction(self.q_threshold, WORD), Fraction(self.p_threshold, WORD)
        self.q_star = (1 - half_f) * q_r + half_f * p_r
        self.p_star = half_f * q_r + (1 - half_f) * p_r
        # 0 < f < 1 and p != q put both strictly inside (0, 1): every epsilon is finite
        high, low = max(self.q_star, self.p_star), min(self.q_star, self.p_star)
        self.epsilon = log_upper((high * (1 - low) / (low * (1 - high))) ** self.h)
        self.epsilon_permanent = log_upper(((1 - half_f) / half_f) ** (2 * self.h))
        for name, value in (("epsilon", self.epsilon), ("epsilon_permanent", self.epsilon_permanent)):
            if value > MAX_EPSILON:
                raise ValidationError(f"f, p, q and h give {name} = {value:.6g}; it must be at most {MAX_EPSILON:g} "
                                      "(e^30 promises no privacy): raise f, bring p and q closer, or use fewer hashes")

    @classmethod
    def for_epsilon(cls, epsilon_permanent: float, epsilon: float | None = None, *, m: int = 128, h: int = 2,
                    cohorts: int = 8, seed: int | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                    candidates: Sequence[str] | None = None) -> Self:
        """RAPPOR whose guarantees are the given epsilons, with f set from the number of hash functions (docs/math.md
        §16.3): f/2 = 1 / (1 + e^(epsilon_permanent / (2h))), the threshold rounded so that the certified
        ``epsilon_permanent`` never exceeds the one asked for. A value's filter differs from another's in up to 2h
        bits, so a conversion that leaves h out (f/2 = 1 / (1 + e^(epsilon / 2)), as pure-ldp 1.2.0 does) runs at h
        times the stated epsilon.

        Parameters
        ----------
        epsilon_permanent : float
            The guarantee of any number of reports of one value (the permanent response's), in (0, 30].
        epsilon : float, optional
            One report's guarantee, at most ``epsilon_permanent``: the instantaneous response is then p = 1 - q with
            q the largest on the 2^-32 grid that keeps one report within it. By default one report is the permanent
            response itself (p = 0, q = 1: one-time RAPPOR).
        m, h, cohorts, seed, max_bytes, candidates
            As for the constructor.

        Returns
        -------
        RAPPOR
            The mechanism; its ``epsilon`` and ``epsilon_permanent`` are certified at or below the ones asked for.

        Raises
        ------
        ValidationError
            An epsilon outside (0, 30], or ``epsilon`` above ``epsilon_permanent``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR.for_epsilon(4.0, 1.0, m=64, h=2, cohorts=4, seed=1)
        >>> round(rappor.epsilon_permanent, 6), round(rappor.epsilon, 6)
        (4.0, 1.0)
        >>> round(ld.mechanisms.RAPPOR.for_epsilon(2.0, h=4, seed=1).epsilon_permanent, 6)  # one-time RAPPOR
        2.0
        """
        from lipdesign.validation import epsilon as checked_epsilon

        permanent = checked_epsilon(epsilon_permanent, field="epsilon_permanent")
        h = integer(h, "h", low=1, high=MAX_HASHES)
        # realised f/2 = T / 2^32 at least the exact one: T = ceil(2^32 / (1 + e^(eps / 2h)))
        half_f = math.ceil(WORD / (1.0 + math.exp(permanent / (2 * h)))) / WORD
        arguments: dict[str, Any] = {"m": m, "h": h, "cohorts": cohorts, "seed": seed, "max_bytes": max_bytes,
                     "candidates": candidates}
        if epsilon is None:
            return cls(f=2 * half_f, p=0.0, q=1.0, **arguments)
        one = checked_epsilon(epsilon, field="epsilon")
        if one > permanent:
            raise ValidationError(f"epsilon is {fmt(one)}; one report's guarantee is at most the unbounded one's, "
                                  f"epsilon_permanent = {fmt(permanent)}")
        low, high = WORD // 2, WORD  # the q threshold: the largest whose one-report epsilon stays within
        while high - low > 1:
            middle = (low + high) // 2
            candidate = cls(f=2 * half_f, p=1 - middle / WORD, q=middle / WORD, **arguments)
            low, high = (middle, high) if candidate.epsilon <= one else (low, middle)
        return cls(f=2 * half_f, p=1 - low / WORD, q=low / WORD, **arguments)

    def parameters(self) -> dict[str, Any]:
        return {"f": self.f, "p": self.p, "q": self.q, "m": self.m, "h": self.h, "cohorts": self.cohorts,
                "seed": self.seed, "max_bytes": self.max_bytes}

    @classmethod
    def example(cls) -> Self:
        words = ["the", "of", "and", "to", "in", "is", "you", "that", "it", "he", "was", "for"]
        return cls(f=0.5, p=0.5, q=0.75, m=32, h=2, cohorts=4, seed=7, max_bytes=16, candidates=words)

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee("LDP", self.epsilon, EXACT_TABLE,
                         f"one report of any string; any number of reports of one value, memoised: "
                         f"LDP {self.epsilon_permanent:.6g} (docs/math.md §16.3)")

    # -- privacy ------------------------------------------------------------------------------------------------

    def permanent_certificate(self) -> dict[str, Any]:
        """The unbounded-reports guarantee, checked like one report's: the permanent response's grouped table of
        the worst pair (each of the 2h differing bits kept with probability 1 - f/2) verified exactly.

        Returns
        -------
        dict
            ``epsilon`` (the certified value) and ``passed`` (it is at most ``epsilon_permanent``).

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=4, seed=1)
        >>> certificate = rappor.permanent_certificate()
        >>> certificate["passed"], round(certificate["epsilon"], 4)
        (True, 4.3944)
        """
        half_f = Fraction(self.permanent_threshold, WORD)
        keep = 1 - half_f
        table = np.empty((2, 2 * self.h + 1), dtype=object)
        # column d: the permanent bits differ from v's filter on d of the 2h bits where v and v' differ
        table[:] = [[math.comb(2 * self.h, d) * keep ** (2 * self.h - d) * half_f ** d for d in range(2 * self.h + 1)],
                    [math.comb(2 * self.h, d) * keep ** d * half_f ** (2 * self.h - d) for d in range(2 * self.h + 1)]]
        certificate = verify_table(table, LDP(self.epsilon_permanent), exact=True)
        return {"epsilon": certificate.epsilon, "passed": certificate.passed}

    # -- device side --------------------------------------------------------------------------------------------

    def _perturb(self, values, rng, user_ids):
        """Per chunk of users: the cohorts (a bounded integer each), then the permanent words of every user (m
        each), then the instantaneous words (m each); a single report draws its cohort, m words, then m words."""
        chunks = []
        size = chunk(self.m)
        for start in range(0, len(values), size):
            data = values[start:start + size]
            cohorts = rng.integers(0, self.cohorts, size=len(data)) if self.cohorts > 1 else np.zeros(len(data), int)
            filters = self._filters(data, cohorts)
            permanent = rng.integers(0, WORD, size=filters.shape, dtype=np.uint32)
            memo = np.where(permanent < self.permanent_threshold, True,
                            np.where(permanent < 2 * self.permanent_threshold, False, filters))
            instant = rng.integers(0, WORD, size=filters.shape, dtype=np.uint32)
            bits = instant < np.where(memo, np.uint64(self.q_threshold), np.uint64(self.p_threshold))
            chunks.append(self._pack(cohorts, bits))
        return np.concatenate(chunks)

    def permanent(self, values: Any, keys: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """The memoised permanent responses B' of each device's value (docs/math.md §16.5): word i of the ChaCha20
        stream keyed by the device's key, with the value's keyed BLAKE2b digest as nonce, decides bit i as in
        docs/math.md §16.2, so the same device and value always give the same B'.

        Parameters
        ----------
        values : sequence of str or bytes
            One value per device.
        keys : array_like of uint32, shape (n, 8)
            The devices' keys.

        Returns
        -------
        numpy.ndarray
            bool (n, m).

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=16, h=2, cohorts=4, seed=1)
        >>> keys = rappor.device_keys(2, rng=0)
        >>> first = rappor.permanent(["the", "the"], keys)
        >>> np.array_equal(first, rappor.permanent(["the", "the"], keys)), np.array_equal(first[0], first[1])
        (True, False)
        """
        return np.concatenate([np.where(words < self.permanent_threshold, True,
                                        np.where(words < 2 * self.permanent_threshold, False, filters))
                               for _, filters, words in self._memo_words(values, keys)])

    def perturb_memoised(self, values: Any, keys: npt.ArrayLike, *, rng: RandomSource = None
                         ) -> npt.NDArray[np.uint8]:
        """Reports as devices send them, round after round: each device's cohort and permanent response come from
        its key (memoised, docs/math.md §16.5), the instantaneous response is fresh from ``rng``. Any number of
        these reports of one value by one device are ``epsilon_permanent``-LDP together.

        Parameters
        ----------
        values : sequence of str or bytes
            One value per device.
        keys : array_like of uint32, shape (n, 8)
            The devices' keys (``device_keys``), the same every round.
        rng : numpy.random.Generator or int, optional
            The instantaneous response's source.

        Returns
        -------
        numpy.ndarray
            uint8 reports, as ``perturb`` returns them. Estimate each round's reports on their own: a device's
            rounds share its permanent response, so merged rounds are not independent users and their standard
            errors would be too small.

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=16, h=2, cohorts=4, seed=1)
        >>> keys = rappor.device_keys(3, rng=0)
        >>> rappor.perturb_memoised(["a", "b", "c"], keys, rng=1).shape
        (3, 4)
        """
        memo = self.permanent(values, keys)
        instant = as_generator(rng).integers(0, WORD, size=memo.shape, dtype=np.uint32)
        bits = instant < np.where(memo, np.uint64(self.q_threshold), np.uint64(self.p_threshold))
        return self._pack(self.device_cohorts(keys), bits)

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()`` (docs/runtime.md §12): the integer thresholds.

        Returns
        -------
        dict
            ``permanent_threshold`` (T), ``q_threshold`` and ``p_threshold``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=16, h=2, cohorts=4, seed=1).device_numbers()
        {'permanent_threshold': 1073741824, 'q_threshold': 3221225472, 'p_threshold': 2147483648}
        """
        return {"permanent_threshold": self.permanent_threshold, "q_threshold": self.q_threshold,
                "p_threshold": self.p_threshold}
