"""Longitudinal reports: a permanent response memoised per device and value, then a fresh instantaneous one
(docs/math.md §19). Numpy and the standard library only.

One report is the chained table Q1 Q2; any number of reports of one value are a randomised function of the one
permanent response, so together they reveal at most what Q1 does (post-processing, docs/math.md §19.1). Both
guarantees are computed from the probabilities the sampler realises, in exact arithmetic: every stage decides with
32-bit words against integer thresholds. The permanent stage's words come from a keyed pseudo-random function of
(device key, mechanism, value) on the device (``perturb_memoised``, ``lipdesign.mechanisms.memo``), the
instantaneous stage's from ``rng``; ``perturb`` (one report, no memo) draws both from ``rng``, through the same
transform, so one report has the same table on both paths.

- ``LongitudinalGRR`` (``"l-grr"``): GRR then GRR (L-GRR of [Arcolezi22]);
- ``LongitudinalUE`` (``"l-ue"``): unary encoding, each bit through a permanent then an instantaneous binary channel,
  in the four shapes of [Arcolezi22]: L-OUE, L-OSUE, L-SUE (basic RAPPOR's bits), L-SOUE.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import EXACT_TABLE, Guarantee
from lipdesign.mechanisms.bit_reports import UnaryOracleReports
from lipdesign.mechanisms.memo import WORD, checked_keys, device_keys, memo_words
from lipdesign.mechanisms.oracle import PureProtocol, pure_estimate, pure_variance
from lipdesign.mechanisms.rr import grr_audit_plan, grr_probabilities, grr_reduced_rows
from lipdesign.mechanisms.sampling import as_generator, index_reports
from lipdesign.model import PriorSet
from lipdesign.notions import LDP
from lipdesign.validation import MAX_EPSILON, choice, fmt, integer, probability_vector
from lipdesign.validation import epsilon as checked_epsilon
from lipdesign.verification import exp_bounds, verify_table
from lipdesign.verification.exact import Certificate, log_upper

if TYPE_CHECKING:  # annotations only
    from collections.abc import Sequence
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.sampling import RandomSource
    from lipdesign.model import Prior

#: Uniform draws a GRR stage tries (Lemire's rule on a 32-bit word each) before it keeps the value (docs/math.md
#: §19.2): a fixed number, so a permanent response always takes the same words of its stream.
ATTEMPTS = 2

#: Words of one GRR stage: the keep word, then ATTEMPTS uniform draws.
GRR_WORDS = 1 + ATTEMPTS

#: Unary stages draw the words of at most this many bits at a time (users x k).
BLOCK_BITS = 2**21

#: The largest k of the longitudinal families (a unary report is k bits; L-GRR's uniform draw needs k < 2^31).
MAX_K = 2**20


def _ratio_bound(epsilon: float) -> Fraction:
    """The largest likelihood ratio an epsilon allows, as the exact rational lower end of e^epsilon."""
    return exp_bounds(epsilon)[0]


# -- GRR stages (docs/math.md §19.2) ---------------------------------------------------------------------------


def grr_rejection(k: int) -> Fraction:
    """Pr[all ATTEMPTS uniform draws are rejected]: ((2^32 mod k) / 2^32)^ATTEMPTS (0 when k is a power of two)."""
    return Fraction(WORD % k, WORD) ** ATTEMPTS


def grr_alpha(threshold: int, k: int) -> Fraction:
    """The realised mixing probability of a GRR stage: it keeps the value when the keep word is below ``threshold``
    or every uniform draw is rejected, else it reports a uniform value, so Pr[keep] = t + (1 - t) rho exactly."""
    keep, rejected = Fraction(threshold, WORD), grr_rejection(k)
    return keep + (1 - keep) * rejected


def grr_threshold(alpha: Fraction, k: int) -> int:
    """The largest threshold in 0..2^32 whose realised mixing probability is at most ``alpha``."""
    rejected = grr_rejection(k)
    return max(0, min(WORD, math.floor(WORD * (alpha - rejected) / (1 - rejected))))


def grr_stage(values: npt.NDArray[np.int64], k: int, threshold: int, words: npt.NDArray[np.uint32]
              ) -> npt.NDArray[np.int64]:
    """One GRR stage on 32-bit words (n, GRR_WORDS): keep the value if word 0 < ``threshold``, else the first of
    the next ATTEMPTS words accepted by Lemire's rule ((w k) mod 2^32 >= 2^32 mod k) gives (w k) >> 32, uniform on
    0..k-1; if none is accepted, keep the value."""
    wide = words.astype(np.uint64)
    product = wide[:, 1:] * np.uint64(k)
    accepted = (product & np.uint64(WORD - 1)) >= np.uint64(WORD % k)
    first = accepted.argmax(axis=1)
    uniform = (product[np.arange(len(words)), first] >> np.uint64(32)).astype(np.int64)
    keep = (wide[:, 0] < np.uint64(threshold)) | ~accepted.any(axis=1)
    return np.where(keep, values, uniform)


def grr_lip_ratio(keep: Fraction, lie: Fraction, prior: Sequence[Fraction]) -> tuple[Fraction, str, int]:
    """(ratio, side, value): the largest posterior ratio Pr[X = x | y] / P_x or its inverse of a GRR table with
    Pr[y = x | x] = ``keep`` and ``lie`` otherwise, at ``prior`` (docs/math.md §19.3): keep / (lie + P_min (keep -
    lie)) at the least likely value, (lie + P_max (keep - lie)) / lie at the most likely."""
    least = min(range(len(prior)), key=prior.__getitem__)
    most = max(range(len(prior)), key=prior.__getitem__)
    upper = keep / (lie + prior[least] * (keep - lie))
    inverse = (lie + prior[most] * (keep - lie)) / lie
    return (upper, "upper", least) if upper >= inverse else (inverse, "inverse", most)


# -- unary stages (docs/math.md §19.4) ---------------------------------------------------------------------------


def ue_ratio(p: Fraction, q: Fraction) -> Fraction | float:
    """The LDP likelihood ratio p (1 - q) / (q (1 - p)) of unary encoding with bit probabilities p > q (inf when
    q = 0 or p = 1)."""
    return math.inf if q == 0 or p == 1 else p * (1 - q) / (q * (1 - p))


def ue_chain(first: tuple[Fraction, Fraction], second: tuple[Fraction, Fraction]) -> tuple[Fraction, Fraction]:
    """(p, q) of a bit through the permanent channel ``first`` = (Pr[1 | value's bit], Pr[1 | other bit]) then the
    instantaneous ``second`` = (Pr[1 | permanent 1], Pr[1 | permanent 0])."""
    (p1, q1), (p2, q2) = first, second
    return p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2


def ue_lip_ratio(p: Fraction, q: Fraction, prior: Sequence[Fraction]) -> tuple[Fraction, str, int]:
    """(ratio, side, value): the largest posterior ratio or its inverse over the 2^k reports of unary encoding with
    bit probabilities p (the value's bit) and q (the others) at ``prior`` (docs/math.md §19.4): with Hi, Lo the
    larger and smaller of p/q and (1 - p)/(1 - q), Hi / (P_min Hi + (1 - P_min) Lo) and (P_min Lo + (1 - P_min)
    Hi) / Lo, both at the least likely value."""
    high, low = max(p / q, (1 - p) / (1 - q)), min(p / q, (1 - p) / (1 - q))
    least = min(range(len(prior)), key=prior.__getitem__)
    smallest = prior[least]
    upper = high / (smallest * high + (1 - smallest) * low)
    inverse = (smallest * low + (1 - smallest) * high) / low
    return (upper, "upper", least) if upper >= inverse else (inverse, "inverse", least)


def _smallest(predicate: Any, low: int, high: int) -> int:
    """The smallest integer t in [low, high] with ``predicate(t)`` (monotone: false then true; true at high)."""
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if predicate(middle) else (middle + 1, high)
    return high


# -- the composition ----------------------------------------------------------------------------------------------


class Memoised(PureProtocol):
    """A permanent mechanism memoised per device and value, then a fresh instantaneous one (docs/math.md §19.1).

    Subclasses set ``permanent_words`` (the words that decide one value's permanent response), ``_keep_lie`` /
    ``_permanent_keep_lie`` (the exact support probabilities of one report and of the permanent stage), and
    implement ``_permanent(values, words)``, ``_instantaneous(permanent, rng)`` and ``_support_matrix(reports)``.
    """

    #: What the one-report and the unbounded guarantees' LIP closed form is (``grr_lip_ratio`` or ``ue_lip_ratio``).
    _lip_ratio: ClassVar[Any]
    epsilon_permanent: float
    permanent_words: int

    def _epsilons(self, epsilon: float, epsilon_permanent: float, k: int) -> None:
        super().__init__(epsilon, k, max_k=MAX_K)
        self.epsilon_permanent = checked_epsilon(epsilon_permanent, field="epsilon_permanent")
        if self.epsilon > self.epsilon_permanent:
            raise ValidationError(f"epsilon is {fmt(self.epsilon)}; one report's guarantee is at most the unbounded "
                                  f"one's, epsilon_permanent = {fmt(self.epsilon_permanent)} (docs/math.md §19.1)")

    def _probabilities(self) -> None:
        """Set p and q (floats, for the estimate) from the exact one-report support probabilities, once both claims
        are certified on the realised thresholds (a mechanism whose thresholds cannot meet them is never built)."""
        for certificate, what in ((self.certificate, "epsilon"), (self.permanent_certificate(), "epsilon_permanent")):
            if not certificate.passed:
                raise ValidationError(f"{what} is {fmt(certificate.claimed_epsilon)} with k = {self.k}; on 32-bit "
                                      f"words the sampler realises {certificate.epsilon:.6g}: use more epsilon or "
                                      "fewer values")
        keep, lie = self._keep_lie
        self.p, self.q = float(keep), float(lie)

    @property
    def _keep_lie(self) -> tuple[Fraction, Fraction]:
        raise NotImplementedError

    @property
    def _permanent_keep_lie(self) -> tuple[Fraction, Fraction]:
        raise NotImplementedError

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "epsilon_permanent": self.epsilon_permanent, "k": self.k}

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee("LDP", self.epsilon, EXACT_TABLE,
                         f"one report; any number of reports of one value, memoised: LDP "
                         f"{self.epsilon_permanent:.6g} (docs/math.md §19.1)")

    # -- privacy ----------------------------------------------------------------------------------------------------

    def _exact_table(self, keep_lie: tuple[Fraction, Fraction]) -> npt.NDArray[np.object_]:
        raise NotImplementedError

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The exact reduction of one report's table (docs/math.md §19.2, §19.4), in floats.

        Returns
        -------
        numpy.ndarray
            Rows the inputs 0 and 1; columns the classes of reports that decide every ratio.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.LongitudinalGRR(1.0, 2.0, k=4).privacy_table().shape
        (2, 3)
        """
        return self._exact_table(self._keep_lie).astype(float)

    def _certify(self):
        return verify_table(self._exact_table(self._keep_lie), LDP(self.epsilon), exact=True)

    def permanent_certificate(self) -> Certificate:
        """The unbounded-reports guarantee: the exact LDP Certificate of the permanent stage alone, which bounds any
        number of reports of one value by one device (docs/math.md §19.1).

        Returns
        -------
        Certificate
            Against the claim ``epsilon_permanent``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> certificate = ld.mechanisms.LongitudinalGRR(1.0, 2.0, k=4).permanent_certificate()
        >>> certificate.passed, round(certificate.epsilon, 4)
        (True, 2.0)
        """
        return verify_table(self._exact_table(self._permanent_keep_lie), LDP(self.epsilon_permanent), exact=True)

    def certificate_at(self, prior: Prior | PriorSet | npt.ArrayLike) -> Certificate:
        """One report's exact LIP Certificate for X at ``prior`` (docs/math.md §19.3, §19.4), against the claim
        ``epsilon`` (eps-LDP implies eps-LIP at every prior).

        Parameters
        ----------
        prior : Prior, PriorSet or array_like
            k probabilities, a Prior, or a PriorSet (the worst over its vertices).

        Returns
        -------
        Certificate
            The tightest LIP epsilon at ``prior``, rounded up.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.LongitudinalGRR(1.0, 2.0, k=4)
        >>> round(mechanism.certificate_at([0.4, 0.3, 0.2, 0.1]).epsilon, 4)
        0.8414
        """
        return self._lip_certificate(self._keep_lie, self.epsilon, prior)

    def permanent_certificate_at(self, prior: Prior | PriorSet | npt.ArrayLike) -> Certificate:
        """The unbounded-reports guarantee under LIP: the permanent stage's exact LIP Certificate for X at ``prior``
        (docs/math.md §19.1), against the claim ``epsilon_permanent``.

        Parameters
        ----------
        prior : Prior, PriorSet or array_like
            k probabilities, a Prior, or a PriorSet (the worst over its vertices).

        Returns
        -------
        Certificate
            The tightest LIP epsilon of any number of reports of one value, at ``prior``, rounded up.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.LongitudinalGRR(1.0, 2.0, k=4)
        >>> round(mechanism.permanent_certificate_at([0.4, 0.3, 0.2, 0.1]).epsilon, 4)
        1.506
        """
        return self._lip_certificate(self._permanent_keep_lie, self.epsilon_permanent, prior)

    def _lip_certificate(self, keep_lie, claim, prior):
        if isinstance(prior, PriorSet):  # LIP over a polytope of priors: the worst vertex (docs/math.md §2)
            if prior.k != self.k:
                raise ValidationError(f"prior has {prior.k} values; it must have one per value of the mechanism "
                                      f"({self.k})")
            return max((self._lip_certificate(keep_lie, claim, vertex) for vertex in prior.vertices),
                       key=lambda certificate: certificate.epsilon)
        probabilities = probability_vector(getattr(prior, "probabilities", prior), "prior", length=self.k)
        exact = [Fraction(float(p)) for p in probabilities]
        total = sum(exact)
        ratio, side, value = self._lip_ratio(*keep_lie, [p / total for p in exact])
        return Certificate("LIP", claim, log_upper(ratio), bool(ratio <= _ratio_bound(claim)), True,
                           {"side": side, "value": value, "prior": probabilities.tolist()})

    # -- device side ----------------------------------------------------------------------------------------------

    device_keys = staticmethod(device_keys)

    def _chunk(self) -> int:
        return max(1, BLOCK_BITS // max(self.permanent_words, 1))

    def _perturb(self, values, rng, user_ids):
        """Per chunk of users: the permanent stage's words of every user, then the instantaneous stage's draws."""
        size = self._chunk()
        return self._joined([self._instantaneous(self._permanent(part, self._words(rng, len(part))), rng)
                             for part in (values[start:start + size] for start in range(0, len(values), size))])

    def _words(self, rng, n):
        return rng.integers(0, WORD, size=(n, self.permanent_words), dtype=np.uint32)

    def _joined(self, parts):
        return np.concatenate(parts) if parts else self.empty_reports()

    def _memo_words(self, values, keys):
        data = self.input_domain.validate(values)
        checked = checked_keys(keys, len(data))
        size = self._chunk()
        for start in range(0, len(data), size):
            part = data[start:start + size]
            yield part, memo_words(self.fingerprint, [int(value).to_bytes(8, "little") for value in part],
                                   checked[start:start + size], self.permanent_words)

    def permanent(self, values: npt.ArrayLike, keys: npt.ArrayLike) -> npt.NDArray[Any]:
        """The memoised permanent responses of each device's value (docs/math.md §19.1): the ChaCha20 stream keyed
        by the device's key, with a keyed BLAKE2b nonce of (this mechanism, the value) (``lipdesign.mechanisms.memo``),
        decides the permanent stage, so the same device and value always give the same response.

        Parameters
        ----------
        values : array_like of int
            One value per device, in 0..k-1.
        keys : array_like of uint32, shape (n, 8)
            The devices' keys (``device_keys``).

        Returns
        -------
        numpy.ndarray
            The permanent responses: int64 (n,) values for L-GRR, bool (n, k) bits for L-UE.

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.LongitudinalGRR(1.0, 2.0, k=4)
        >>> keys = mechanism.device_keys(3, rng=0)
        >>> np.array_equal(mechanism.permanent([1, 1, 1], keys), mechanism.permanent([1, 1, 1], keys))
        True
        """
        parts = [self._permanent(part, words) for part, words in self._memo_words(values, keys)]
        return np.concatenate(parts) if parts else self._permanent(np.zeros(0, np.int64),
                                                                   np.zeros((0, self.permanent_words), np.uint32))

    def perturb_memoised(self, values: npt.ArrayLike, keys: npt.ArrayLike, *, rng: RandomSource = None
                         ) -> npt.NDArray[Any]:
        """Reports as devices send them, round after round: the permanent response from the device's key (memoised,
        ``permanent``), the instantaneous one fresh from ``rng``. Any number of these reports of one value by one
        device are ``epsilon_permanent``-LDP together (docs/math.md §19.1); each one alone is ``epsilon``-LDP.

        Parameters
        ----------
        values : array_like of int
            One value per device, in 0..k-1.
        keys : array_like of uint32, shape (n, 8)
            The devices' keys (``device_keys``), the same every round.
        rng : numpy.random.Generator or int, optional
            The instantaneous stage's source (by default ChaCha20 keyed from the operating system).

        Returns
        -------
        numpy.ndarray
            One report per device, as ``perturb`` returns them.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.LongitudinalGRR(1.0, 2.0, k=4)
        >>> keys = mechanism.device_keys(3, rng=0)
        >>> mechanism.perturb_memoised([0, 1, 2], keys, rng=1).shape
        (3,)
        """
        generator = as_generator(rng)
        return self._joined([self._instantaneous(self._permanent(part, words), generator)
                             for part, words in self._memo_words(values, keys)])

    # -- server side ----------------------------------------------------------------------------------------------

    def user_terms(self, reports: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Each report's term of the unbiased estimate, (1[report supports v] - q) / (p - q) per value v: the
        estimate of a round is their mean (docs/math.md §19.5), and a combination of rounds of the same devices is
        estimated from their per-device combination (``lipdesign.rounds``).

        Parameters
        ----------
        reports : array_like
            One round's reports.

        Returns
        -------
        numpy.ndarray
            float (n, k).

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.LongitudinalGRR(1.0, 2.0, k=4)
        >>> reports = mechanism.perturb([0, 1, 2, 3] * 500, rng=0)
        >>> np.allclose(mechanism.user_terms(reports).mean(axis=0), mechanism.estimate(reports).values)
        True
        """
        return pure_estimate(self._support_matrix(reports), 1, self.p, self.q)

    def rounds_variance(self, frequencies: npt.ArrayLike | None = None, n: int = 1, rounds: int = 1
                        ) -> npt.NDArray[np.float64]:
        """The variance of the average of ``rounds`` rounds' estimates, all from the same ``n`` devices with memoised
        permanent responses and values that do not change (docs/math.md §19.5): (V_1 + (R - 1) V_perm) / R, with
        V_1 one round's variance and V_perm the permanent stage's, the covariance of two rounds. It falls to V_perm,
        not to 0, as R grows: averaging rounds cannot remove the permanent noise.

        Parameters
        ----------
        frequencies : array_like, optional
            The devices' value frequencies (default uniform).
        n : int, default 1
            The devices.
        rounds : int, default 1
            The rounds averaged.

        Returns
        -------
        numpy.ndarray
            float (k,).

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.LongitudinalGRR(1.0, 2.0, k=4)
        >>> bool(np.allclose(mechanism.rounds_variance(rounds=1), mechanism.variance()))
        True
        >>> np.round(mechanism.rounds_variance(rounds=10**6) / mechanism.rounds_variance(rounds=1), 3)
        array([0.163, 0.163, 0.163, 0.163])
        """
        rounds = integer(rounds, "rounds", low=1)
        one = self.variance(frequencies, n)
        f = (np.full(self.k, 1.0 / self.k) if frequencies is None else
             probability_vector(frequencies, "frequencies", length=self.k))
        keep, lie = self._permanent_keep_lie
        permanent = pure_variance(f, integer(n, "n", low=1), float(keep), float(lie))
        return (one + (rounds - 1) * permanent) / rounds

    def _support_matrix(self, reports) -> npt.NDArray[np.float64]:
        raise NotImplementedError

    def _permanent(self, values, words):
        raise NotImplementedError

    def _instantaneous(self, permanent, rng):
        raise NotImplementedError


class LongitudinalGRR(Memoised):
    """L-GRR ([Arcolezi22]; docs/math.md §19.2): a permanent GRR over k values at ``epsilon_permanent``, memoised per
    device and value, then an instantaneous GRR chosen so that one report is ``epsilon``-LDP.

    Each stage is a GRR mixture (keep the value with probability alpha, else report a uniform value), and two
    mixtures chain into one with alpha = alpha_1 alpha_2, so one report is GRR with that alpha. The sampler's
    realised alphas (``grr_alpha``: thresholds on 32-bit words, uniform values by Lemire's rule with a fixed number
    of attempts) are chosen so that both certified epsilons are at most the ones asked for.

    Parameters
    ----------
    epsilon : float
        One report's LDP level, in (0, 30], at most ``epsilon_permanent``.
    epsilon_permanent : float
        Any number of reports of one value, memoised: the permanent GRR's LDP level, in (0, 30].
    k : int
        The number of values, 2 to ``MAX_K``.

    Attributes
    ----------
    alpha_permanent, alpha : fractions.Fraction
        The permanent stage's and one report's realised mixing probabilities.
    p, q : float
        Pr[report = v] when v is, and is not, the device's value (one report), for the estimate.

    Raises
    ------
    ValidationError
        An epsilon out of range, ``epsilon`` above ``epsilon_permanent``, or a k too large for the epsilons (the
        reports would carry no information).

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.LongitudinalGRR(1.0, 3.0, k=4)
    >>> mechanism.verify().passed, mechanism.permanent_certificate().passed
    (True, True)
    >>> keys = mechanism.device_keys(20_000, rng=0)
    >>> values = np.random.default_rng(1).choice(4, size=20_000, p=[0.4, 0.3, 0.2, 0.1])
    >>> np.round(mechanism.estimate(mechanism.perturb_memoised(values, keys, rng=2)).values, 2)
    array([0.42, 0.28, 0.19, 0.1 ])
    """

    family = "l-grr"
    epsilon_range = (0.0, MAX_EPSILON)
    parameter_rules = (("epsilon_permanent", "in (0, 30], at least epsilon"), ("k", f"integer in 2..{MAX_K}"))
    client_cost = "O(1) per report (6 words; 3 through the memo's ChaCha20 block)"
    _lip_ratio = staticmethod(grr_lip_ratio)
    permanent_words = GRR_WORDS

    def __init__(self, epsilon: float, epsilon_permanent: float, k: int) -> None:
        self._epsilons(epsilon, epsilon_permanent, k)
        bound = _ratio_bound(self.epsilon_permanent)
        self.permanent_threshold = grr_threshold((bound - 1) / (bound - 1 + self.k), self.k)
        self.alpha_permanent = grr_alpha(self.permanent_threshold, self.k)  # above the target when it is below rho:
        # _probabilities refuses the mechanism then (its certificate fails)
        bound = _ratio_bound(self.epsilon)
        self.instantaneous_threshold = (grr_threshold((bound - 1) / (bound - 1 + self.k) / self.alpha_permanent, self.k)
                                        if self.alpha_permanent else 0)
        self.alpha = self.alpha_permanent * grr_alpha(self.instantaneous_threshold, self.k)
        if not self.alpha:
            raise ValidationError(f"k is {self.k}; with epsilon = {fmt(self.epsilon)} a report of one of {self.k} "
                                  "values carries no information on 32-bit words: use fewer values or more epsilon")
        self._probabilities()

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 2.0, 6)

    @property
    def report_bits(self) -> int:
        return math.ceil(math.log2(self.k))

    @property
    def _keep_lie(self) -> tuple[Fraction, Fraction]:
        return grr_probabilities(self.alpha, self.k, exact=True)

    @property
    def _permanent_keep_lie(self) -> tuple[Fraction, Fraction]:
        return grr_probabilities(self.alpha_permanent, self.k, exact=True)

    def _exact_table(self, keep_lie):
        """The 2 x 3 reduction of a GRR table (2 x 2 for k = 2): rows x = 0, 1; columns y = 0, y = 1, the rest."""
        keep, lie = keep_lie
        return grr_reduced_rows(keep, lie, self.k)

    def empty_reports(self) -> npt.NDArray[np.int64]:
        return np.zeros(0, dtype=np.int64)

    def _permanent(self, values, words):
        return grr_stage(values, self.k, self.permanent_threshold, words)

    def _instantaneous(self, permanent, rng):
        words = rng.integers(0, WORD, size=(len(permanent), GRR_WORDS), dtype=np.uint32)
        return grr_stage(permanent, self.k, self.instantaneous_threshold, words)

    def _support(self, reports):
        reports = index_reports(reports, self.k)
        return np.bincount(reports, minlength=self.k), reports.size

    def _support_matrix(self, reports):
        reports = index_reports(reports, self.k)
        support = np.zeros((reports.size, self.k))
        support[np.arange(reports.size), reports] = 1.0
        return support

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs 0 and 1; classes y = 0, y = 1 and any other output.

        Returns
        -------
        AuditPlan
            The inputs, the ``privacy_table`` and the classifier of reports into its columns.
        """
        return grr_audit_plan(self.privacy_table())

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §15): the two stages' keep thresholds on 32-bit words.

        Returns
        -------
        dict
            ``k``, ``permanent_threshold``, ``instantaneous_threshold`` and ``attempts``.
        """
        return {"k": self.k, "permanent_threshold": self.permanent_threshold,
                "instantaneous_threshold": self.instantaneous_threshold, "attempts": ATTEMPTS}

    def display_name(self) -> str:
        return "L-GRR"


#: The four shapes of L-UE ([Arcolezi22]): (permanent, instantaneous) channel shapes. An "oue" channel reports a 1
#: bit as 1 with probability 1/2; a "sue" channel is symmetric (Pr[1 | 0] = 1 - Pr[1 | 1]).
VARIANTS = {"oue": ("oue", "oue"), "osue": ("oue", "sue"), "sue": ("sue", "sue"), "soue": ("sue", "oue")}


def _shape(shape: str, threshold: int) -> tuple[int, int]:
    """(threshold of a 1 bit, threshold of a 0 bit) of a channel of ``shape`` whose 0 bit is 1 below ``threshold``."""
    return (WORD // 2 if shape == "oue" else WORD - threshold), threshold


class LongitudinalUE(UnaryOracleReports, Memoised):
    """L-UE ([Arcolezi22]; docs/math.md §19.4): unary encoding whose every bit goes through a permanent binary
    channel, memoised per device and value, then an instantaneous one; ``variant`` names the two channels' shapes:
    ``"oue"`` (L-OUE), ``"osue"`` (L-OSUE, the default), ``"sue"`` (L-SUE, basic RAPPOR's bits) and ``"soue"``
    (L-SOUE). The first letter is the permanent channel (OUE: a 1 bit stays 1 with probability 1/2; SUE:
    symmetric), the second the instantaneous one.

    Each channel is two integer thresholds on 32-bit words, chosen exactly: the permanent one the least noisy of its
    shape within ``epsilon_permanent``, the instantaneous one the least noisy of its shape that brings one report
    within ``epsilon`` (the published parameter choices, realised).

    Parameters
    ----------
    epsilon : float
        One report's LDP level, in (0, 30], at most ``epsilon_permanent``.
    epsilon_permanent : float
        Any number of reports of one value, memoised: the permanent channel's LDP level, in (0, 30].
    k : int
        The number of values, 2 to ``MAX_K``.
    variant : {"osue", "oue", "sue", "soue"}, default "osue"
        The shapes of the two channels.

    Attributes
    ----------
    permanent_thresholds, instantaneous_thresholds : tuple of int
        (threshold of a 1 bit, of a 0 bit) of each channel: the bit is 1 when its word is below.
    p, q : float
        Pr[reported bit = 1] for the device's value's bit and for another bit (one report), for the estimate.

    Raises
    ------
    ValidationError
        An epsilon out of range, ``epsilon`` above ``epsilon_permanent``, or an unknown variant.

    Examples
    --------
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> mechanism = ld.mechanisms.LongitudinalUE(1.0, 3.0, k=4, variant="osue")
    >>> mechanism.verify().passed, mechanism.permanent_certificate().passed
    (True, True)
    >>> keys = mechanism.device_keys(20_000, rng=0)
    >>> values = np.random.default_rng(1).choice(4, size=20_000, p=[0.4, 0.3, 0.2, 0.1])
    >>> np.round(mechanism.estimate(mechanism.perturb_memoised(values, keys, rng=2)).values, 2)
    array([0.4 , 0.3 , 0.21, 0.09])
    """

    family = "l-ue"
    epsilon_range = (0.0, MAX_EPSILON)
    parameter_rules = (("epsilon_permanent", "in (0, 30], at least epsilon"), ("k", f"integer in 2..{MAX_K}"),
                       ("variant", "one of 'osue', 'oue', 'sue', 'soue'"))
    client_cost = "O(k) per report (2k words; k through the memo's ChaCha20 stream)"
    _lip_ratio = staticmethod(ue_lip_ratio)

    def __init__(self, epsilon: float, epsilon_permanent: float, k: int, variant: str = "osue") -> None:
        self._epsilons(epsilon, epsilon_permanent, k)
        self.variant = choice(variant, "variant", tuple(VARIANTS))
        self.permanent_words = self.k
        first, second = VARIANTS[self.variant]
        bound = _ratio_bound(self.epsilon_permanent)
        low = _smallest(lambda t: ue_ratio(*self._exact(_shape(first, t))) <= bound, 1, WORD // 2)
        self.permanent_thresholds = _shape(first, low)
        permanent = self._exact(self.permanent_thresholds)
        bound = _ratio_bound(self.epsilon)
        low = _smallest(lambda t: ue_ratio(*ue_chain(permanent, self._exact(_shape(second, t)))) <= bound,
                        0, WORD // 2)
        self.instantaneous_thresholds = _shape(second, low)
        self._probabilities()

    @staticmethod
    def _exact(thresholds: tuple[int, int]) -> tuple[Fraction, Fraction]:
        return Fraction(thresholds[0], WORD), Fraction(thresholds[1], WORD)

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 2.0, 6)

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "variant": self.variant}

    @property
    def _keep_lie(self) -> tuple[Fraction, Fraction]:
        return ue_chain(self._permanent_keep_lie, self._exact(self.instantaneous_thresholds))

    @property
    def _permanent_keep_lie(self) -> tuple[Fraction, Fraction]:
        return self._exact(self.permanent_thresholds)

    def _exact_table(self, keep_lie):
        """The 2 x 4 reduction (docs/math.md §8.3): inputs x, x' differ only in bits x and x'; columns (bit x, bit
        x') = 00, 01, 10, 11."""
        p, q = keep_lie
        return np.array([[(1 - p) * (1 - q), (1 - p) * q, p * (1 - q), p * q],
                         [(1 - q) * (1 - p), (1 - q) * p, q * (1 - p), q * p]], dtype=object)

    def _permanent(self, values, words):
        own = np.zeros(words.shape, dtype=bool)
        own[np.arange(len(values)), values] = True
        one, zero = self.permanent_thresholds  # both below 2^32: the permanent channel is never the identity
        return words < np.where(own, np.uint32(one), np.uint32(zero))

    def _instantaneous(self, permanent, rng):
        words = rng.integers(0, WORD, size=permanent.shape, dtype=np.uint32)
        one, zero = self.instantaneous_thresholds
        bits = np.where(permanent, words.astype(np.uint64) < np.uint64(one), words < np.uint32(zero))
        return np.packbits(bits, axis=1, bitorder="little")

    def _support_matrix(self, reports):
        return self.bits(reports).astype(float)

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs 0 and 1; classes the pair (bit 0, bit 1).

        Returns
        -------
        AuditPlan
            The inputs, the ``privacy_table`` and the classifier of reports into its columns.
        """
        def classify(reports):
            bits = self.bits(reports, [0, 1]).astype(np.int64)
            return 2 * bits[:, 0] + bits[:, 1]

        return AuditPlan(np.array([0, 1]), self.privacy_table(), classify, ["x=0", "x=1"],
                         ["bits 00", "bits 01", "bits 10", "bits 11"])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §15): each channel's (1 bit, 0 bit) thresholds.

        Returns
        -------
        dict
            ``k``, ``permanent_thresholds`` and ``instantaneous_thresholds``.
        """
        return {"k": self.k, "permanent_thresholds": list(self.permanent_thresholds),
                "instantaneous_thresholds": list(self.instantaneous_thresholds)}

    def display_name(self) -> str:
        return f"L-{self.variant.upper()}"


__all__ = ["ATTEMPTS", "LongitudinalGRR", "LongitudinalUE", "Memoised", "VARIANTS", "grr_alpha", "grr_stage",
           "grr_threshold", "ue_chain"]
