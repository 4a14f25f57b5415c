"""Histogram encoding ([WBLJ17]; docs/math.md §17): the user's value one-hot encoded as k entries and each entry
perturbed on its own, by thresholding (THE, family "the") or by a clamped discrete Laplace noise (SHE, family
"she"). Numpy and the standard library only."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from lipdesign.domains import Categorical
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import COMPOSITION, Guarantee, Mechanism
from lipdesign.mechanisms.bit_reports import check_report_bytes, packed_unary_reports
from lipdesign.mechanisms.hashed_bits import WORD, chunk
from lipdesign.mechanisms.oracle import MAX_K, PureProtocol, pure_estimate
from lipdesign.mechanisms.oue import OUE
from lipdesign.mechanisms.sampling import ONE_BIT_MAX_EPSILON, realized_probability
from lipdesign.notions import LDP
from lipdesign.validation import fmt, integer, real_number
from lipdesign.verification import verify_table
from lipdesign.verification.composition import sequential
from lipdesign.verification.exact import exp_bounds

if TYPE_CHECKING:  # annotations only
    from typing import Self

    import numpy.typing as npt

    from lipdesign.verification import Certificate

#: SHE's default bound T is the least T >= 1 whose folded tail mass, alpha^(T + 1), is at most 2^-TAIL_BITS
#: (docs/math.md §17.3).
TAIL_BITS = 20

#: Largest bound T of SHE: reports lie in [-T, T + 1], which int16 holds.
MAX_BOUND = 2**15 - 2

#: Smallest epsilon of SHE: at 0.01 the default bound is 2772 and the rarest output has about 2^11 of the 2^32
#: words, so the realised law stays within 0.2 % of the geometric one in variance (docs/math.md §17.3).
SHE_MIN_EPSILON = 0.01


def optimal_theta(epsilon: float) -> float:
    """THE's threshold that minimises the variance of an absent value's estimate ([WBLJ17]; docs/math.md §17.2).

    theta* = (2 / eps) ln u* with u* = ((1 + c) + sqrt(1 - c + c^2)) / (3 c) and c = e^(-eps/2), the only root in
    (1, e^(eps/2)) of the stationarity condition 3 c u^2 - 2 (1 + c) u + 1 = 0; it lies in (1/2, 1), tends to 1/2 as
    eps -> 0 and to 1 as eps grows. Evaluated with expm1 and log1p, so that it stays accurate at small eps.

    Parameters
    ----------
    epsilon : float
        The LDP level, in (0, 10].

    Returns
    -------
    float
        theta*, in (1/2, 1).

    Raises
    ------
    ValidationError
        If epsilon is not a number in (0, 10].

    Examples
    --------
    >>> from lipdesign.mechanisms.histogram import optimal_theta
    >>> [round(optimal_theta(eps), 4) for eps in (0.5, 1.0, 2.0, 4.0)]
    [0.5616, 0.6186, 0.7096, 0.8157]
    """
    epsilon = THE.checked_epsilon(epsilon)
    d = -math.expm1(-epsilon / 2.0)  # 1 - c
    root = math.sqrt(1.0 - d + d * d)  # sqrt(1 - c + c^2)
    excess = d * (2.0 - (1.0 - d) / (1.0 + root)) / (3.0 * (1.0 - d))  # u* - 1, without cancellation
    return 2.0 * math.log1p(excess) / epsilon


def default_bound(epsilon: float) -> int:
    """SHE's default bound T: the least T >= 1 with alpha^(T + 1) <= 2^-TAIL_BITS, alpha = e^(-eps/2) (docs/math.md
    §17.3): T = max(1, ceil(2 TAIL_BITS ln 2 / eps) - 1).

    Parameters
    ----------
    epsilon : float
        The LDP level.

    Returns
    -------
    int
        The bound T.

    Examples
    --------
    >>> from lipdesign.mechanisms.histogram import default_bound
    >>> [default_bound(eps) for eps in (0.1, 1.0, 2.0, 4.0, 10.0)]
    [277, 27, 13, 6, 2]
    """
    return max(1, math.ceil(2 * TAIL_BITS * math.log(2) / epsilon) - 1)


def she_counts(epsilon: float, bound: int) -> list[int]:
    """The realised law of SHE's entry without the user's value (docs/math.md §17.3): for y = -T..T + 1 the number
    of the 2^32 words that give y, summing to 2^32.

    The pairs (y, 1 - y) of the geometric law, y = -i and i + 1, are built so that each ratio is at most r, a
    rational just below e^(eps/2) (``exp_bounds``): for i >= 1 each count is the nearest integer to 2^32 times its
    probability (the lighter at least 1), the heavier one then moved into [ceil(light / r), floor(light r)]; pair 0
    takes the remaining words S, split as light = ceil(S / (1 + r)), heavy = S - light.

    Parameters
    ----------
    epsilon : float
        The LDP level of the whole report (each entry gets eps / 2).
    bound : int
        T >= 1.

    Returns
    -------
    list of int
        2 T + 2 positive counts, for y = -T..T + 1.

    Examples
    --------
    >>> from lipdesign.mechanisms.histogram import she_counts
    >>> counts = she_counts(4.0, 1)  # y = -1, 0, 1, 2
    >>> counts, sum(counts) == 2**32
    ([511972652, 3271021992, 442684688, 69287964], True)
    """
    alpha = math.exp(-epsilon / 2.0)
    r = exp_bounds(epsilon / 2.0)[0]
    inner = (1.0 - alpha) / (1.0 + alpha)
    inside = [inner * alpha**i for i in range(1, bound + 1)]  # P_0(i) = P_0(-i) for -T < -i, i < T + 1
    ends = alpha**bound / (1.0 + alpha), alpha ** (bound + 1) / (1.0 + alpha)  # P_0(-T), P_0(T + 1): the folds
    light = [max(1, round(WORD * p)) for p in inside[1:] + [ends[1]]]  # y = i + 1 for i = 1..T
    heavy = [min(max(round(WORD * p), -(-count * r.denominator // r.numerator)), count * r.numerator // r.denominator)
             for p, count in zip(inside[:-1] + [ends[0]], light)]  # y = -i, within a ratio r of its pair
    rest = WORD - sum(light) - sum(heavy)
    light_0 = -(-rest * r.denominator // (r.denominator + r.numerator))
    return heavy[::-1] + [rest - light_0, light_0] + light


def pair_table(p: Fraction, q: Fraction) -> npt.NDArray[Any]:
    """The 2 x 4 table of two independent binary entries that swap laws between two inputs (docs/math.md §8.3):
    rows x and x', columns (entry x, entry x') = 00, 01, 10, 11, entry v being 1 with p when v is the input and q
    otherwise. Exact products of Fractions (object dtype)."""
    rows = [[(1 - a) * (1 - b), (1 - a) * b, a * (1 - b), a * b] for a, b in ((p, q), (q, p))]
    return np.array(rows, dtype=object)


class THE(OUE):
    """Thresholding histogram encoding over k values, eps-LDP ([WBLJ17]; docs/math.md §17.1, §17.2).

    Each entry of the one-hot encoding gets Laplace(2/eps) noise and is reported as the bit [noisy entry > theta],
    so a report is a unary encoding: the user's bit is 1 with p = 1 - e^(-(1 - theta) eps/2)/2, every other bit with
    q = e^(-theta eps/2)/2. The noise is never drawn: the bits are sampled with these probabilities, realised as
    ceil(p 2^53)/2^53 and ceil(q 2^53)/2^53 by the unary sampler (as ``UnaryEncoding``'s). The epsilon certified
    exactly from the realised p and q, ln(p (1 - q) / (q (1 - p))), is below the requested one (0.896 at eps = 1
    with the optimal theta; docs/math.md §17.2). Reports, aggregate, estimate, variance and audit are OUE's, with
    these p and q.

    Parameters
    ----------
    epsilon : float
        The LDP level of the Laplace noise, in [1e-6, 10].
    k : int
        The number of values, 2 <= k <= ``oracle.MAX_K``; inputs are the indices 0..k-1.
    theta : float, optional
        The threshold, strictly between 0 and 1; None (the default) is ``optimal_theta(epsilon)``, which minimises
        the variance of an absent value's estimate.

    Attributes
    ----------
    p, q : float
        Pr[bit v = 1] when v is, and is not, the user's value, as the sampler realises them.

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10], k is not an integer from 2 to ``oracle.MAX_K``, or theta is not a number
        strictly between 0 and 1.

    See Also
    --------
    OUE : The unary encoding with p = 1/2, of lower variance at the same epsilon.
    SHE : Histogram encoding by summation.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> the = ld.mechanisms.THE(1.0, 4)
    >>> round(the.theta, 4), round(the.p, 4), round(the.q, 4)
    (0.6186, 0.5868, 0.367)
    >>> certificate = the.verify()  # exact, on the realised p and q
    >>> certificate.passed, round(certificate.epsilon, 4)
    (True, 0.896)

    A seeded round: each report is k bits packed in bytes.

    >>> truth = np.array([0.4, 0.3, 0.2, 0.1])
    >>> values = np.random.default_rng(0).choice(4, size=20_000, p=truth)
    >>> estimate = the.estimate(the.perturb(values, rng=1))
    >>> np.round(estimate.values, 3), np.round(estimate.standard_errors, 3)
    (array([0.384, 0.298, 0.211, 0.121]), array([0.016, 0.016, 0.016, 0.016]))
    """

    family = "the"
    parameter_rules: ClassVar[tuple[tuple[str, str], ...]] = (  # type: ignore[assignment]  # OUE's has one rule
        ("k", f"integer in 2..{MAX_K}"),
        ("theta", "number strictly between 0 and 1 (default: the variance-minimising threshold)"))

    def __init__(self, epsilon: float, k: int, theta: float | None = None) -> None:
        PureProtocol.__init__(self, epsilon, k)  # OUE's p = 1/2 and its threshold do not apply
        if theta is None:
            theta = optimal_theta(self.epsilon)
        theta = real_number(theta, "theta")
        if not 0.0 < theta < 1.0:
            raise ValidationError(f"theta is {fmt(theta)}; it must lie strictly between 0 and 1 (docs/math.md "
                                  "§17.1; the variance-minimising threshold lies in (1/2, 1))")
        self.theta = theta
        self.p = float(realized_probability(1.0 - 0.5 * math.exp(-(1.0 - theta) * self.epsilon / 2.0)))
        self.q = float(realized_probability(0.5 * math.exp(-theta * self.epsilon / 2.0)))

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "k": self.k, "theta": self.theta}

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 6)

    def _perturb(self, values, rng, user_ids):
        """Bits with the realised p and q, by the unary sampler (``packed_unary_reports``)."""
        return packed_unary_reports(values, self.k, self.p, self.q, rng, "THE")

    def privacy_table(self) -> npt.NDArray[Any]:
        """The exact reduction of the 2^k reports to 2 rows x 4 (docs/math.md §8.3, §17.2).

        Two inputs x != x' differ only in bits x and x'; the columns are (bit x, bit x') = 00, 01, 10, 11 and the
        entries the exact products of the realised p and q (Fractions: no double holds them).

        Returns
        -------
        numpy.ndarray
            object (2, 4) of ``fractions.Fraction``: rows x, x'.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> table = ld.mechanisms.THE(1.0, 4).privacy_table()
        >>> np.round(table.astype(float), 4)
        array([[0.2615, 0.1516, 0.3715, 0.2154],
               [0.2615, 0.3715, 0.1516, 0.2154]])
        """
        return pair_table(Fraction(self.p), Fraction(self.q))

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §13): the bit probabilities.

        Returns
        -------
        dict
            ``k``, ``p`` and ``q`` (doubles on the 2^-53 grid, used as the coins of docs/runtime.md §3).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.THE(1.0, 4).device_numbers()
        {'k': 4, 'p': 0.5868193858791115, 'q': 0.366988817349968}
        """
        return {"k": self.k, "p": self.p, "q": self.q}

    def display_name(self) -> str:
        """The family's name in tables.

        Returns
        -------
        str
            "thresholding histogram encoding".
        """
        return "thresholding histogram encoding"


class SHE(Mechanism):
    """Summation histogram encoding over k values with a finite output space, eps-LDP ([WBLJ17]; docs/math.md
    §17.3, §17.4).

    Each entry of the one-hot encoding gets two-sided geometric noise Z (Pr[Z = z] proportional to alpha^|z|,
    alpha = e^(-eps/2): the discrete Laplace) and is clamped to [-T, T + 1]; the report is the k integers. An entry's
    likelihood ratio between the two values of its bit is at most e^(eps/2) and two entries change between any two
    inputs, so a report is eps-LDP. Each entry is drawn exactly from one 32-bit word and a table of 2 T + 1
    thresholds (``thresholds``); the user's entry is 1 - Y where Y has the law of the others, so one table serves
    both. The epsilon is certified exactly from the realised counts (``privacy_table``, per entry at eps/2, and the
    two entries composed), and the estimate (S_v/n - mu_0)/(mu_1 - mu_0) uses the realised means mu_0 and mu_1 =
    1 - mu_0 of an entry, so it is unbiased; its variance, sigma^2 / (n (mu_1 - mu_0)^2) with sigma^2 the realised
    variance of an entry, is the same for every frequency, so the standard errors are exact.

    Parameters
    ----------
    epsilon : float
        The LDP level, in [0.01, 10].
    k : int
        The number of values, 2 <= k <= ``oracle.MAX_K``; inputs are the indices 0..k-1.
    bound : int, optional
        T, 1 to ``MAX_BOUND``: reports lie in [-T, T + 1]. None (the default) is ``default_bound(epsilon)``, which
        folds a mass of at most 2^-20 of the noise into the end points (27 at eps = 1). A smaller T lowers the
        variance (docs/math.md §17.4).

    Attributes
    ----------
    counts : numpy.ndarray
        int64 (2 T + 2,): how many of the 2^32 words give y = -T..T + 1 to an entry without the user's value.
    thresholds : numpy.ndarray
        uint32 (2 T + 1,): the cumulative counts; an entry is -T + (the number of thresholds <= its word).
    mean_offset : float
        mu_0, the realised mean of an entry without the user's value (mu_1 = 1 - mu_0).
    entry_variance : float
        sigma^2, the realised variance of an entry, with or without the user's value.

    Raises
    ------
    ValidationError
        If epsilon is outside [0.01, 10], k is not an integer from 2 to ``oracle.MAX_K``, or bound is not an
        integer from 1 to ``MAX_BOUND``.

    See Also
    --------
    THE : Histogram encoding by thresholding.
    Laplace : The clamped discrete Laplace of numeric values.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> she = ld.mechanisms.SHE(1.0, 4)
    >>> she.bound, round(she.verify().epsilon, 8)
    (27, 1.0)
    >>> round(she.entry_variance, 4), round(8 / 1.0**2, 4)  # the continuous Laplace's variance is 8 / eps^2
    (7.8353, 8.0)

    A seeded round: each report is k small integers.

    >>> truth = np.array([0.4, 0.3, 0.2, 0.1])
    >>> values = np.random.default_rng(0).choice(4, size=20_000, p=truth)
    >>> reports = she.perturb(values, rng=1)
    >>> reports.shape, reports.dtype
    ((20000, 4), dtype('int8'))
    >>> estimate = she.estimate(she.aggregate(reports))
    >>> np.round(estimate.values, 3), np.round(estimate.standard_errors, 3)
    (array([0.398, 0.279, 0.182, 0.097]), array([0.02, 0.02, 0.02, 0.02]))
    """

    family = "she"
    epsilon_range = (SHE_MIN_EPSILON, ONE_BIT_MAX_EPSILON)
    parameter_rules = (("k", f"integer in 2..{MAX_K}"),
                       ("bound", f"integer in 1..{MAX_BOUND} (default: the fold of at most 2^-{TAIL_BITS})"))
    client_cost = "O(k) per report (k words, each looked up in 2T + 1 thresholds)"

    def __init__(self, epsilon: float, k: int, bound: int | None = None) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        self.k = integer(k, "k", low=2, high=MAX_K)
        self.input_domain = Categorical(self.k)
        self.bound = default_bound(self.epsilon) if bound is None else integer(bound, "bound", 1, MAX_BOUND)
        counts = she_counts(self.epsilon, self.bound)
        self.counts = np.array(counts, dtype=np.int64)
        self.thresholds = np.cumsum(self.counts)[:-1].astype(np.uint32)
        for array in (self.counts, self.thresholds):
            array.setflags(write=False)
        outputs = range(-self.bound, self.bound + 2)
        mean = Fraction(sum(y * count for y, count in zip(outputs, counts)), WORD)
        second = Fraction(sum(y * y * count for y, count in zip(outputs, counts)), WORD)
        self.mean_offset = float(mean)
        self.mean_gap = float(1 - 2 * mean)  # mu_1 - mu_0
        self.entry_variance = float(second - mean**2)
        self.report_dtype = np.dtype(np.int8 if self.bound + 1 <= 127 else np.int16)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "k": self.k, "bound": self.bound}

    @classmethod
    def example(cls) -> Self:
        return cls(2.0, 6)

    @property
    def report_bits(self) -> int:
        return self.k * math.ceil(math.log2(2 * self.bound + 2))

    @property
    def guarantee(self) -> Guarantee:
        return Guarantee("LDP", self.epsilon, COMPOSITION,
                         "two entries differ between any two values, each with an exact table at eps/2 "
                         "(docs/math.md §17.3)")

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """One entry's exact table: rows its bit 1 and 0, columns y = -T..T + 1 (docs/math.md §17.3).

        The entries are the realised counts over 2^32, exact doubles; row 1 is row 0 reversed (the user's entry is
        1 - Y). Its epsilon is that of one entry; ``verify`` composes the two entries that differ between two
        inputs, which is tight here.

        Returns
        -------
        numpy.ndarray
            float (2, 2 T + 2).

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> np.round(ld.mechanisms.SHE(4.0, 3, bound=1).privacy_table(), 4)
        array([[0.0161, 0.1031, 0.7616, 0.1192],
               [0.1192, 0.7616, 0.1031, 0.0161]])
        """
        row = self.counts / float(WORD)
        return np.array([row[::-1], row])

    def _certify(self) -> Certificate:
        """One entry's table verified exactly at eps/2; the two entries that differ compose (docs/math.md §17.3)."""
        entry = verify_table(self.privacy_table(), LDP(self.epsilon / 2.0), exact=True)
        return sequential([entry, entry], self.epsilon)

    def _perturb(self, values, rng, user_ids):
        """Per chunk of users, k 32-bit words each (row by row), each looked up in ``thresholds``; the user's entry
        is reflected, y -> 1 - y."""
        check_report_bytes(values.size, self.k * self.report_dtype.itemsize, "SHE", per_report="k * itemsize")
        out = np.empty((values.size, self.k), dtype=self.report_dtype)
        step = chunk(self.k)
        for start in range(0, values.size, step):
            users = values[start:start + step]
            words = rng.integers(0, WORD, size=(users.size, self.k), dtype=np.uint32)
            entries = np.searchsorted(self.thresholds, words, side="right").astype(np.int32) - self.bound
            rows = np.arange(users.size)
            entries[rows, users] = 1 - entries[rows, users]
            out[start:start + users.size] = entries
        return out

    def empty_reports(self) -> npt.NDArray[Any]:
        return np.zeros((0, self.k), dtype=self.report_dtype)

    def _checked(self, reports):
        """Reports as an (n, k) integer array with every entry in [-T, T + 1]; ValidationError otherwise."""
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.k or not np.issubdtype(reports.dtype, np.integer):
            raise ValidationError(f"reports has shape {reports.shape} and dtype {reports.dtype}; SHE reports are "
                                  f"integers of shape (n, {self.k})")
        outside = (reports < -self.bound) | (reports > self.bound + 1)
        if outside.any():
            row, column = np.argwhere(outside)[0]
            raise ValidationError(f"reports[{row}, {column}] is {reports[row, column]}; every entry of an SHE report "
                                  f"lies in [{-self.bound}, {self.bound + 1}]")
        return reports

    def _statistics(self, reports):
        """The per-entry sums (int64)."""
        reports = self._checked(reports)
        return reports.shape[0], {"sums": reports.sum(axis=0, dtype=np.int64)}

    def _estimate(self, aggregate, method):
        """(S_v/n - mu_0)/(mu_1 - mu_0): the pure protocols' form with the entry means in place of p and q."""
        return pure_estimate(aggregate["sums"], aggregate.n, 1.0 - self.mean_offset, self.mean_offset)

    def _expected(self, frequencies, method, user_ids):
        return frequencies

    def _variance(self, frequencies, n, method, user_ids):
        """sigma^2 / (n (mu_1 - mu_0)^2) for every value: both laws of an entry have the variance sigma^2."""
        return np.full(np.shape(frequencies), self.entry_variance / (n * self.mean_gap**2))

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14, §17.3): inputs 0 and 1; classes ([y_0 >= 1], [y_1 >= 1]).

        Whether an entry is at least 1 carries its whole likelihood ratio (Lemma 17.3a), so the four classes reach
        the full epsilon (as realised, within a relative 2 10^-6 of it for eps >= 0.1).

        Returns
        -------
        AuditPlan
            The inputs, the 2 x 4 table of the classes and the classifier.

        Examples
        --------
        >>> import lipdesign as ld
        >>> plan = ld.mechanisms.SHE(1.0, 4).audit_plan()
        >>> plan.table.shape, plan.class_names
        ((2, 4), ['y0<1, y1<1', 'y0<1, y1>=1', 'y0>=1, y1<1', 'y0>=1, y1>=1'])
        """
        high = Fraction(int(self.counts[:self.bound + 1].sum()), WORD)  # Pr[entry >= 1 | the user's entry]

        def classify(reports):
            at_least_one = self._checked(reports)[:, :2] >= 1
            return 2 * at_least_one[:, 0].astype(np.int64) + at_least_one[:, 1]

        return AuditPlan(np.array([0, 1]), pair_table(high, 1 - high), classify, ["x=0", "x=1"],
                         [f"y0{a}1, y1{b}1" for a in ("<", ">=") for b in ("<", ">=")])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads (docs/runtime.md §13).

        Returns
        -------
        dict
            ``k``, ``bound`` (T) and ``thresholds`` (2 T + 1 integers below 2^32).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.SHE(4.0, 3, bound=1).device_numbers()
        {'k': 3, 'bound': 1, 'thresholds': [511972652, 3782994644, 4225679332]}
        """
        return {"k": self.k, "bound": self.bound, "thresholds": self.thresholds.tolist()}

    def display_name(self) -> str:
        """The family's name in tables.

        Returns
        -------
        str
            "summation histogram encoding".
        """
        return "summation histogram encoding"
