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

from lipdesign.domains import Strings
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import EXACT_TABLE, Guarantee, Mechanism
from lipdesign.mechanisms.estimate import Estimate
from lipdesign.mechanisms.sampling import MAX_SEED, public_seed
from lipdesign.notions import LDP
from lipdesign.strings import DEFAULT_MAX_BYTES, bounded, byte_words, hash_key, string_hash
from lipdesign.validation import fmt, integer, real_number
from lipdesign.verification import log_upper, verify_table

if TYPE_CHECKING:  # annotations only
    from collections.abc import Sequence
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.aggregate import Aggregate

#: Largest Bloom filter (bits per report), number of hash functions and number of cohorts.
MAX_BITS = 2**16
MAX_HASHES = 64
MAX_COHORTS = 2**16

#: Users perturbed per chunk (each holds two m x 32-bit word arrays).
CHUNK = 2**14

#: Most candidates for which ``estimate`` adds the cohort draw's variance (it costs C K^2 m).
MAX_COHORT_TERM = 512

#: 2^32: the 32-bit words every coin of RAPPOR compares with an integer threshold (docs/math.md §16.2).
WORD = 2**32


def threshold(probability: float, field: str, scale: int = WORD) -> int:
    """The integer threshold round(probability * scale) of a coin drawn on a 32-bit word."""
    return int(round(real_number(probability, field, 0.0, 1.0) * scale))


class RAPPOR(Mechanism):
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
        self.m = integer(m, "m", low=1, high=MAX_BITS)
        self.h = integer(h, "h", low=1, high=MAX_HASHES)
        if self.h > self.m:
            raise ValidationError(f"h is {self.h}; a Bloom filter of m = {self.m} bits takes at most m hash functions")
        self.cohorts = integer(cohorts, "cohorts", low=1, high=MAX_COHORTS)
        self.seed = public_seed(seed)
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
        #: The input domain, typed as what it is (``input_domain`` is the same object).
        self.strings = Strings(max_bytes, candidates)
        self.input_domain = self.strings
        half_f = Fraction(self.permanent_threshold, WORD)  # f/2 as realised
        q_r, p_r = Fraction(self.q_threshold, WORD), Fraction(self.p_threshold, WORD)
        self.q_star = (1 - half_f) * q_r + half_f * p_r
        self.p_star = half_f * q_r + (1 - half_f) * p_r
        # 0 < f < 1 and p != q put both strictly inside (0, 1): every epsilon is finite
        high, low = max(self.q_star, self.p_star), min(self.q_star, self.p_star)
        self.epsilon = log_upper((high * (1 - low) / (low * (1 - high))) ** self.h)
        self.epsilon_permanent = log_upper(((1 - half_f) / half_f) ** (2 * self.h))
        keys = hash_key(self.seed, np.arange(self.cohorts * self.h))
        keys.setflags(write=False)
        #: The hash keys of cohort c: row c (docs/math.md §16.1, functions c h .. c h + h - 1).
        self.keys = keys.reshape(self.cohorts, self.h)

    @property
    def max_bytes(self) -> int:
        """The longest value, in bytes of UTF-8."""
        return self.strings.max_bytes

    @property
    def candidates(self) -> tuple[str, ...] | None:
        """The strings ``estimate`` decodes over (None until given)."""
        return self.strings.candidates

    def with_candidates(self, candidates: Sequence[str]) -> RAPPOR:
        """The same mechanism (same reports, file and fingerprint) decoding over ``candidates``.

        Parameters
        ----------
        candidates : sequence of str
            Distinct non-empty strings of at most ``max_bytes`` bytes.

        Returns
        -------
        RAPPOR
            A copy whose ``estimate`` decodes over the candidates.

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=4, seed=1)
        >>> decoder = rappor.with_candidates(["the", "of", "and"])
        >>> decoder == rappor, decoder.candidates
        (True, ('the', 'of', 'and'))
        """
        return type(self)(**self.parameters(), candidates=candidates)

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

    @property
    def report_bits(self) -> int:
        """Bits per report: 16 (the cohort) + m."""
        return 16 + self.m

    @property
    def report_bytes(self) -> int:
        """Bytes per report: 2 + ceil(m / 8)."""
        return 2 + (self.m + 7) // 8

    # -- privacy ------------------------------------------------------------------------------------------------

    def privacy_table(self) -> npt.NDArray[np.object_]:
        """The exact grouped table of the worst pair of strings (docs/math.md §16.3): rows v and v' whose filters
        are disjoint sets of h bits, column (a, b) the outputs with a ones on v's bits and b ones on v''s, as exact
        rationals of what the sampler realises.

        Returns
        -------
        numpy.ndarray
            2 x (h + 1)^2, of ``fractions.Fraction`` (object dtype); its exact LDP epsilon is ``epsilon``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=4, seed=1)
        >>> table = rappor.privacy_table()
        >>> table.shape, sum(table[0]) == 1
        ((2, 9), True)
        """
        h, q_star, p_star = self.h, self.q_star, self.p_star

        def ones(count, probability):
            return math.comb(h, count) * probability ** count * (1 - probability) ** (h - count)

        rows = [[ones(a, q_star) * ones(b, p_star) for a in range(h + 1) for b in range(h + 1)],
                [ones(a, p_star) * ones(b, q_star) for a in range(h + 1) for b in range(h + 1)]]
        table = np.empty((2, (h + 1) ** 2), dtype=object)
        table[:] = rows
        return table

    def _certify(self):
        return verify_table(self.privacy_table(), LDP(self.epsilon), exact=True)

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

    def filters(self, values: Any, cohorts: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """The Bloom filters of ``values`` in the given cohorts (docs/math.md §16.2), (n, m) booleans.

        Parameters
        ----------
        values : sequence of str or bytes
            The strings (checked as ``perturb`` checks them).
        cohorts : array_like of int
            One cohort per value, 0 to ``cohorts`` - 1.

        Returns
        -------
        numpy.ndarray
            bool (n, m): bit i of row u is set when one of the h hashes of value u in its cohort is i.

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=16, h=2, cohorts=4, seed=1)
        >>> rappor.filters(["the", "the"], [0, 1]).sum(axis=1)
        array([2, 2])
        """
        data = self.input_domain.validate(values)
        cohorts = np.asarray(cohorts, dtype=np.int64)
        if cohorts.shape != (len(data),) or (cohorts.size and (cohorts.min() < 0 or cohorts.max() >= self.cohorts)):
            raise ValidationError(f"cohorts is {fmt(cohorts)}; it must hold one cohort in 0..{self.cohorts - 1} per "
                                  "value")
        return self._filters(data, cohorts)

    def _filters(self, data, cohorts):
        positions = bounded(string_hash(*byte_words(data), self.keys[cohorts]), self.m)
        filters = np.zeros((len(data), self.m), dtype=bool)
        filters[np.arange(len(data))[:, None], positions] = True
        return filters

    def _perturb(self, values, rng, user_ids):
        """Per chunk of users: the cohorts (a bounded integer each), then the permanent words of every user (m
        each), then the instantaneous words (m each); a single report draws its cohort, m words, then m words."""
        chunks = []
        for start in range(0, len(values), CHUNK):
            data = values[start:start + CHUNK]
            cohorts = rng.integers(0, self.cohorts, size=len(data)) if self.cohorts > 1 else np.zeros(len(data), int)
            filters = self._filters(data, cohorts)
            permanent = rng.integers(0, WORD, size=filters.shape, dtype=np.uint32)
            memo = np.where(permanent < self.permanent_threshold, True,
                            np.where(permanent < 2 * self.permanent_threshold, False, filters))
            instant = rng.integers(0, WORD, size=filters.shape, dtype=np.uint32)
            bits = instant < np.where(memo, np.uint32(self.q_threshold), np.uint32(self.p_threshold))
            chunks.append(self._pack(cohorts, bits))
        return np.concatenate(chunks)

    def _pack(self, cohorts, bits):
        head = np.stack([cohorts & 0xFF, cohorts >> 8], axis=1).astype(np.uint8)
        return np.concatenate([head, np.packbits(bits, axis=1, bitorder="little")], axis=1)

    def empty_reports(self) -> npt.NDArray[np.uint8]:
        return np.zeros((0, self.report_bytes), dtype=np.uint8)

    def unpack(self, reports: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
        """The cohorts and bits of ``reports`` (checked).

        Parameters
        ----------
        reports : array_like of uint8, shape (n, 2 + ceil(m / 8))
            Reports as ``perturb`` returns them.

        Returns
        -------
        cohorts : numpy.ndarray
            int64 (n,).
        bits : numpy.ndarray
            uint8 (n, m), 0 or 1.

        Raises
        ------
        ValidationError
            A report of another shape or dtype, a cohort out of range, or a spare bit of the last byte set.

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=16, h=2, cohorts=4, seed=1)
        >>> cohorts, bits = rappor.unpack(rappor.perturb(["the", "of"], rng=0))
        >>> cohorts.shape, bits.shape
        ((2,), (2, 16))
        """
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.report_bytes or reports.dtype != np.uint8:
            raise ValidationError(f"reports has shape {reports.shape} and dtype {reports.dtype}; RAPPOR reports are "
                                  f"uint8 (n, {self.report_bytes}): the cohort in 2 bytes, then m = {self.m} bits")
        cohorts = reports[:, 0].astype(np.int64) | (reports[:, 1].astype(np.int64) << 8)
        if cohorts.size and cohorts.max() >= self.cohorts:
            row = int(np.argmax(cohorts >= self.cohorts))
            raise ValidationError(f"reports[{row}] has cohort {cohorts[row]}; this mechanism has cohorts "
                                  f"0..{self.cohorts - 1}")
        bits = np.unpackbits(reports[:, 2:], axis=1, bitorder="little")
        if bits.shape[1] > self.m and bits[:, self.m:].any():
            row = int(np.argmax(bits[:, self.m:].any(axis=1)))
            raise ValidationError(f"reports[{row}] sets a bit beyond m = {self.m}; the spare bits of the last byte "
                                  "must be 0")
        return cohorts, bits[:, :self.m]

    # -- server side --------------------------------------------------------------------------------------------

    def _statistics(self, reports):
        cohorts, bits = self.unpack(reports)
        counts = np.zeros((self.cohorts, self.m), dtype=np.int64)
        np.add.at(counts, cohorts, bits.astype(np.int64))
        return len(cohorts), {"cohort_reports": np.bincount(cohorts, minlength=self.cohorts).astype(np.int64),
                              "bit_counts": counts}

    def _design(self):
        """Per cohort, the candidates' filters X_c (C, m, K) as floats, and G = sum_c X_c^T X_c."""
        candidates = self.strings.required_candidates("decoding RAPPOR reports")
        data = [candidate.encode("utf-8") for candidate in candidates]
        filters = np.stack([self._filters(data, np.full(len(data), c)) for c in range(self.cohorts)])
        design = filters.transpose(0, 2, 1).astype(float)  # (C, m, K)
        gram = np.einsum("cik,cil->kl", design, design)
        if np.linalg.matrix_rank(gram) < len(candidates):
            raise ValidationError(f"candidates holds {len(candidates)} strings; their filters over {self.cohorts} "
                                  f"cohorts of m = {self.m} bits are not linearly independent, so least squares cannot "
                                  "tell them apart: use fewer candidates, or more bits or cohorts")
        return design, gram

    def _estimate(self, aggregate: Aggregate, method: str) -> Estimate:
        """Least squares over the candidates (docs/math.md §16.4): unbiased for every listed value's frequency
        when the list holds all the users' values, with conservative standard errors from the bit counts."""
        design, gram = self._design()
        n = aggregate.n
        reports, counts = aggregate.statistics["cohort_reports"], aggregate.statistics["bit_counts"]
        scale = float(self.q_star - self.p_star)
        centred = (counts - reports[:, None] * float(self.p_star)) / scale  # E = X_c N / C
        counts_hat = self.cohorts * np.linalg.solve(gram, np.einsum("cik,ci->k", design, centred))
        rate = np.divide(counts, reports[:, None], out=np.zeros(counts.shape), where=reports[:, None] > 0)
        bit_variance = reports[:, None] * rate * (1 - rate) / scale ** 2
        inverse = np.linalg.inv(gram)
        variance = self._bit_term(inverse, design, bit_variance)
        if len(gram) <= MAX_COHORT_TERM:  # the cohort draw's own variance, at the estimated counts
            variance = variance + np.maximum(counts_hat, 0.0) @ self._cohort_spread(inverse, design,
                                                                                   design.transpose(0, 2, 1))
            errors = "conservative binomial standard errors"
        else:
            errors = f"binomial standard errors given the cohorts (over {MAX_COHORT_TERM} candidates)"
        frequencies = counts_hat / n
        listed = frequencies.sum()
        note = (f"least squares over {len(gram)} candidates (docs/math.md §16.4): unbiased when they hold every "
                f"value the users have; the candidates explain {listed:.3f} of the users (1 - that is the mass "
                f"outside the list, as estimated); {errors}")
        return Estimate(frequencies, np.sqrt(np.maximum(variance, 0.0)) / n, n=n, method=method,
                        names=self.estimand_names(), note=note)

    def _expected(self, population, method, user_ids):
        """E[frequencies] given the users' values (docs/math.md §16.4): the candidates' frequencies when the list
        holds every value; a value outside it moves mass onto the candidates whose bits it shares."""
        design, gram = self._design()
        unique, counts = self._unique(population)
        filters = np.stack([self._filters(unique, np.full(len(unique), c)) for c in range(self.cohorts)])
        expected_centred = np.einsum("cui,u->ci", filters.astype(float), counts.astype(float)) / self.cohorts
        return self.cohorts * np.linalg.solve(gram, np.einsum("cik,ci->k", design, expected_centred)) / counts.sum()

    def _variance(self, population, n, method, user_ids):
        """Var[frequencies] given the users' values: the bits' binomial variance averaged over the uniform cohort,
        plus the variance of the cohort draw itself (docs/math.md §16.4)."""
        design, gram = self._design()
        unique, counts = self._unique(population)
        q_star, p_star = float(self.q_star), float(self.p_star)
        scale = q_star - p_star
        inverse = np.linalg.inv(gram)
        filters = np.stack([self._filters(unique, np.full(len(unique), c)) for c in range(self.cohorts)])
        pi = np.where(filters, q_star, p_star)  # (C, U, m)
        bit_variance = np.einsum("cui,u->ci", pi * (1 - pi), counts.astype(float)) / self.cohorts / scale ** 2
        variance = self._bit_term(inverse, design, bit_variance)
        variance = variance + counts @ self._cohort_spread(inverse, design, filters.astype(float))
        return variance / counts.sum() ** 2

    def _bit_term(self, inverse, design, bit_variance):
        """diag(C^2 G^-1 (sum_c X_c^T D_c X_c) G^-1): the bits' variance through least squares."""
        middle = np.einsum("cik,ci,cil->kl", design, bit_variance, design)
        return self.cohorts ** 2 * np.einsum("kj,jl,kl->k", inverse, middle, inverse)

    def _cohort_spread(self, inverse, design, filters):
        """Per value (rows of ``filters``, (C, U, m)) the variance over its uniform cohort c of its expected
        contribution C G^-1 X_c^T x_c(v) to the counts: (U, K)."""
        contributions = self.cohorts * np.einsum("kj,cij,cui->cuk", inverse, design, filters)
        return (contributions ** 2).mean(axis=0) - contributions.mean(axis=0) ** 2

    @staticmethod
    def _unique(population):
        """The distinct values of a population (UTF-8 bytes) and how many users hold each."""
        index: dict[bytes, int] = {}
        positions = np.fromiter((index.setdefault(value, len(index)) for value in population), dtype=np.int64,
                                count=len(population))
        return list(index), np.bincount(positions, minlength=len(index))

    def audit_plan(self) -> AuditPlan | None:
        """What ``ld.audit`` reads (docs/math.md §14): two strings whose filters are disjoint sets of h bits in every
        cohort (the worst pair of docs/math.md §16.3), each report classed by the ones it has on each string's bits,
        the rows ``privacy_table()``'s. None when no such pair is found among 10^4 generated strings (a filter too
        small for its hash functions).

        Returns
        -------
        AuditPlan or None
            Inputs the two strings; (h + 1)^2 classes (a, b).

        Examples
        --------
        >>> import lipdesign as ld
        >>> rappor = ld.mechanisms.RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=4, seed=1)
        >>> plan = rappor.audit_plan()
        >>> plan.table.shape, len(plan.class_names)
        ((2, 9), 9)
        """
        pair = self._disjoint_pair()
        if pair is None:
            return None
        masks = np.stack([self._filters(pair, np.full(2, c)) for c in range(self.cohorts)])  # (C, 2, m)
        side = self.h + 1

        def classify(reports):
            cohorts, bits = self.unpack(reports)
            ones = np.einsum("ni,nvi->nv", bits.astype(np.int64), masks[cohorts].astype(np.int64))
            return ones[:, 0] * side + ones[:, 1]

        names = [f"{a} of v's bits, {b} of v''s" for a in range(side) for b in range(side)]
        return AuditPlan(np.array([value.decode("utf-8") for value in pair], dtype=object), self.privacy_table(),
                         classify, [f"v={pair[0].decode()!r}", f"v'={pair[1].decode()!r}"], names)

    def _disjoint_pair(self):
        """Two generated strings whose filters have h bits each and share none, in every cohort."""
        tries = [f"audit-{i}".encode() for i in range(10_000)]
        filters = np.stack([self._filters(tries, np.full(len(tries), c)) for c in range(self.cohorts)])
        full = (filters.sum(axis=2) == self.h).all(axis=0)
        candidates = np.flatnonzero(full)
        for position, first in enumerate(candidates[:200]):
            overlap = (filters[:, first, None, :] & filters[:, candidates[position + 1:], :]).any(axis=2).any(axis=0)
            if (~overlap).any():
                return [tries[first], tries[candidates[position + 1 + int(np.argmax(~overlap))]]]
        return None

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
