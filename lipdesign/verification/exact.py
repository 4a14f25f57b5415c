"""Verification: the tightest epsilon a table actually gives (docs/math.md §3), in floating point or exactly.

``verify_table(table, notion, prior)`` returns a Certificate with the tightest epsilon, where it is attained
(output y, secret value g or input pair, and the prior), and pass/fail against the claim. Each table row is read as the
distribution a perturber samples: the stored numbers divided by their row sum. ``exact=True`` does this
in rational arithmetic (every stored float is the rational number it is, fractions.Fraction; a table may also hold
the exact rationals of a realised distribution that no double holds) and compares against a rational lower bound of
e^eps, so a pass is a proof about the stored numbers; its reported epsilon is rounded up, never down, and finite
for every finite ratio (beyond the double range too). Exact mode first bounds every column's worst ratio by
outward-rounded float64 intervals (numpy, docs/math.md §3.7) and evaluates in rational arithmetic only the columns
whose interval reaches the largest lower end: the result (ratio, place, pass/fail) is the one rational arithmetic
gives on the whole table. Floating-point mode is approximate (within FLOAT_SLACK).
"""

from __future__ import annotations

import decimal
import math
import numbers
import operator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.model.prior import Prior
from lipdesign.model.prior_set import GREEDY_KINDS, greedy_extreme
from lipdesign.notions import LDP, LIP, WorstCaseLIP
from lipdesign.validation import stochastic_rows

if TYPE_CHECKING:
    import numpy.typing as npt

#: Floating-point verification passes when the tightest epsilon exceeds the claim by at most this.
FLOAT_SLACK = 1e-9

#: The largest table (rows x columns) verified; past it ``verify_table`` refuses (docs/math.md §3.7: a tie-heavy
#: table of this size, every column evaluated in rational arithmetic, still verifies in a few seconds).
MAX_VERIFY_ENTRIES = 2**22

#: Largest common denominator (in bits) of the rows that the exact step scales every column by; past it (rows with
#: many different sums, e.g. a hand-made table) the candidate columns are read as per-entry fractions, whose size
#: does not grow with k (a common multiple of k different 60-bit sums has about 60 k bits).
MAX_COMMON_BITS = 4096

#: Unit roundoff of float64 (round to nearest): fl(a op b) = (a op b)(1 + d) with |d| <= UNIT for normal results.
UNIT = 2.0**-53

#: A positive normalised entry, prior weight or conditional weight below this leaves its column (or, for the
#: weights, the table) to rational arithmetic: above it no product and no ratio of the prefilter leaves the
#: normal range, where the error model holds (docs/math.md §3.7).
TINY = 2.0**-500


@dataclass(frozen=True)
class Certificate:
    """What verification found: the tightest epsilon of a table, where it is attained, and pass/fail.

    With ``exact=True``, ``epsilon`` is an upper bound on the table's tightest epsilon (docs/math.md §3: rational
    arithmetic, rounded up); in floating point it is the computed value. ``verify_table``, ``ld.verify`` and
    ``mechanism.verify()`` return one; it is frozen (its fields cannot be set).

    Parameters
    ----------
    notion : str
        The notion verified: ``"LDP"``, ``"LIP"`` or ``"WC-LIP"`` (the notion's ``kind``).
    claimed_epsilon : float or None
        The epsilon the table claims (the notion's), or None when no claim was checked.
    epsilon : float
        The tightest epsilon found (an upper bound in exact mode).
    passed : bool or None
        Whether ``epsilon`` is within the claim (None: no claim).
    exact : bool
        True for a proof in exact arithmetic, False for a floating-point computation.
    worst : dict, optional
        Where the tightest epsilon is first attained: the ``output`` and, under LDP, the pair of ``inputs``; under
        LIP the ``secret`` value, the ``side`` of the ratio and the ``prior``. Default empty.
    arithmetic : str, optional
        How an exact certificate was computed when not in rational arithmetic (a bounded-rounding method); default
        ``""`` (exact rational).

    See Also
    --------
    verify_table : The certificate of a table.
    lipdesign.verify : The certificate of a mechanism or a table.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> table = np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
    >>> certificate = ld.verification.verify_table(table, ld.LDP(1.1))
    >>> certificate.passed, round(certificate.epsilon, 4), certificate.worst
    (True, 1.0986, {'output': 0, 'inputs': [0, 1]})
    >>> print(certificate.summary())
    PASS: tightest LDP epsilon <= 1.09861228867 against claimed eps = 1.1 (exact rational);
    worst at {'output': 0, 'inputs': [0, 1]}
    """

    notion: str
    claimed_epsilon: float | None
    epsilon: float
    passed: bool | None
    exact: bool
    worst: dict[str, Any] = field(default_factory=dict)
    #: How an exact certificate was computed, when not in rational arithmetic (a bounded-rounding method).
    arithmetic: str = ""

    def summary(self) -> str:
        """One line of text: the verdict, the tightest epsilon against the claim, the arithmetic and the worst place.

        Long lists in the worst place (a prior over many values) are cut to their first ``SUMMARY_ENTRIES``
        entries; ``worst`` and ``to_dict`` keep them all.

        Returns
        -------
        str
            ``"PASS: ..."``, ``"FAIL: ..."`` or ``"no claim: ..."``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> certificate = ld.verification.verify_table([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.0))
        >>> print(certificate.summary())
        FAIL: tightest LDP epsilon <= 1.09861228867 against claimed eps = 1 (exact rational);
        worst at {'output': 0, 'inputs': [0, 1]}
        """
        verdict = {True: "PASS", False: "FAIL", None: "no claim"}[self.passed]
        mode = (self.arithmetic or "exact rational") if self.exact else "floating point"
        claim = "" if self.claimed_epsilon is None else f" against claimed eps = {self.claimed_epsilon:g}"
        return (f"{verdict}: tightest {self.notion} epsilon <= {self.epsilon:.12g}{claim} ({mode}); "
                f"worst at {_shortened(self.worst)}")

    def to_dict(self) -> dict[str, Any]:
        """The certificate as a JSON-able dict (``arithmetic`` left out).

        Returns
        -------
        dict
            ``notion``, ``claimed_epsilon``, ``epsilon``, ``passed``, ``exact`` and ``worst``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> certificate = ld.verification.verify_table([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1))
        >>> sorted(certificate.to_dict())
        ['claimed_epsilon', 'epsilon', 'exact', 'notion', 'passed', 'worst']
        """
        return {"notion": self.notion, "claimed_epsilon": self.claimed_epsilon, "epsilon": self.epsilon,
                "passed": self.passed, "exact": self.exact, "worst": self.worst}


#: Entries of a list (a worst-case prior) that a certificate's summary line shows; to_dict keeps them all.
SUMMARY_ENTRIES = 8


def _shortened(worst):
    """The worst case for one line of text: long lists (a prior over many values) cut to their first entries."""
    return {key: value[:SUMMARY_ENTRIES] + [f"... ({len(value)} entries; Certificate.worst has them all)"]
            if isinstance(value, list) and len(value) > SUMMARY_ENTRIES else value for key, value in worst.items()}


def exp_bounds(epsilon: float) -> tuple[Fraction, Fraction]:
    """Rational (lower, upper) bracket of e^epsilon for the float ``epsilon`` (decimal exp at 60 digits).

    Exact verification passes a table when its largest ratio is at most the lower end (docs/math.md §3), so a
    pass never rests on a rounding of e^epsilon.

    Parameters
    ----------
    epsilon : float
        The exponent (a claimed epsilon), read as the exact rational value of the double.

    Returns
    -------
    tuple of fractions.Fraction
        ``(lower, upper)`` with lower < e^epsilon < upper, each within a relative 10^-50 of it.

    Examples
    --------
    >>> import lipdesign as ld
    >>> lower, upper = ld.verification.exp_bounds(1.0)
    >>> lower < upper, float(lower), float(upper)
    (True, 2.718281828459045, 2.718281828459045)
    """
    with decimal.localcontext() as context:
        context.prec = 60
        value = Fraction(decimal.Decimal(epsilon).exp())
    slack = value * Fraction(1, 10**50)
    return value - slack, value + slack


#: Decimal digits of ``log_upper``'s logarithm; its error is bounded far below one ulp of a double and added.
LOG_DIGITS = 60

#: ``log_upper`` reads numerator and denominator to this many leading bits (a relative error below 2^-(bits - 1)).
LOG_BITS = 256

#: Below this, ``log_upper`` bounds ln(1 + x) by x itself (ln(1 + x) <= x, and x - ln(1 + x) < x^2 / 2).
LOG_LINEAR = Fraction(1, 10**20)


def log_upper(ratio: Fraction | float) -> float:
    """The smallest double >= ln(ratio), or the next one up: an epsilon rounded up, never down.

    For a Fraction, int or float ratio >= 1 (0.0 at or below 1, inf for inf): outward rounding of the exact
    rational, finite for every finite ratio, also one beyond the double range (an exact ratio of 2^1100 gives
    762.46..., never an OverflowError).

    The ratio n/d is read from the leading LOG_BITS bits of n and d, N 2^a and D 2^b, so ln(ratio) = ln(N/D) +
    (a - b) ln 2 + delta with ``|delta|`` < 2^(2 - LOG_BITS); the logarithms of these rationals (ln(numerator) -
    ln(denominator) of a ratio of double-sized integers, computed without forming n/d) are evaluated at
    LOG_DIGITS digits (decimal's ln is correctly rounded), and the bound on every rounding and on delta is added
    before the result is rounded up to a double. Ratios within 10^-20 of 1 use ln(1 + x) <= x instead.

    Parameters
    ----------
    ratio : fractions.Fraction, int or float
        A largest probability ratio (``tightest`` gives it).

    Returns
    -------
    float
        A double >= ln(ratio), at most one ulp above the smallest such double.

    Examples
    --------
    >>> import lipdesign as ld
    >>> from fractions import Fraction
    >>> print(f"{ld.verification.log_upper(3):.6f}")
    1.098612
    >>> print(f"{ld.verification.log_upper(Fraction(2) ** 1100):.2f}")
    762.46
    >>> ld.verification.log_upper(Fraction(1, 2)), ld.verification.log_upper(float("inf"))
    (0.0, inf)
    """
    if ratio == math.inf:
        return math.inf
    ratio = Fraction(ratio)
    if ratio <= 1:
        return 0.0
    excess = ratio - 1
    if excess < LOG_LINEAR:
        return _double_at_least(excess)
    numerator, denominator = ratio.numerator, ratio.denominator
    shifts = [max(0, number.bit_length() - LOG_BITS) for number in (numerator, denominator)]
    with decimal.localcontext() as context:
        context.prec = LOG_DIGITS
        head = decimal.Decimal(numerator >> shifts[0]) / decimal.Decimal(denominator >> shifts[1])
        rest = (shifts[0] - shifts[1]) * decimal.Decimal(2).ln()
        value = head.ln() + rest
        error = (abs(head.ln()) + abs(rest) + 1) * decimal.Decimal(10) ** (4 - LOG_DIGITS)
        return _double_at_least(value + error)


def _double_at_least(value):
    """The smallest double >= ``value`` (a Decimal or a Fraction, beyond 0)."""
    double = float(value)  # the nearest double (both conversions are correctly rounded)
    exact = decimal.Decimal(double) if isinstance(value, decimal.Decimal) else Fraction(double)
    return math.nextafter(double, math.inf) if exact < value else double


def _as_numbers(array, exact):
    """Nested lists of Fractions (exact) or floats; an object array of exact rationals (``rational_entries``) is
    read as the rationals it holds."""
    array = np.asarray(array)
    if array.dtype != object:
        array = array.astype(float)
    return [_as_numbers(row, exact) for row in array] if array.ndim > 1 else \
        [Fraction(v) if exact else float(v) for v in array]


def rational_entries(table: Any) -> npt.NDArray[Any] | None:
    """``table`` as an object array when it is one of exact rationals (Fractions or ints, possibly beside floats,
    each read as the rational it is): the form of a realised table whose probabilities no double holds (GRR's
    alpha + (1 - alpha)/k). None for anything else, which is read as floats."""
    try:
        array = np.asarray(table)
    except (TypeError, ValueError):  # ragged nested lists: check_table names the problem
        return None
    if array.dtype != object or not all(issubclass(kind, (numbers.Rational, float)) and not issubclass(kind, bool)
                                        for kind in {type(value) for value in array.flat}):
        return None
    return array


def _normalised(vector):
    total = sum(vector)
    return [v / total for v in vector]


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b))


class _Weights:
    """A probability vector (a listed prior, a row of T) normalised by its sum: ``values`` (Fractions, or floats)
    and, exactly, integer numerators over one common denominator, so that a dot product with a column of Python
    ints stays in integer arithmetic."""

    def __init__(self, vector, exact):
        self.values = _normalised(_as_numbers(vector, exact))
        self.denominator = math.lcm(*(v.denominator for v in self.values)) if exact else 1.0
        self.numerators = [int(v * self.denominator) for v in self.values] if exact else self.values

    def dot(self, column):
        total = sum(map(operator.mul, self.numerators, column))
        # an int total means exact (int numerators; float ones give a float sum), so the denominator is the int lcm
        return Fraction(total, cast(int, self.denominator)) if isinstance(total, int) else total / self.denominator


def _corner(k, x):
    """The prior e_x."""
    return [1.0 if z == x else 0.0 for z in range(k)]


class _Scenarios:
    """min and max of P . q over the priors a LIP notion enforces (docs/math.md §3): a plain max over listed
    priors, the column's own extremes for the corners of the simplex (WC-LIP), a greedy fill for a box or a TV ball
    intersected with the simplex. ``corners=False`` lists the corners as priors (the reference path)."""

    def __init__(self, notion, prior, exact, corners=True):
        self.kind = "listed"
        prior_set = getattr(notion, "prior_set", None)
        declared = None if isinstance(notion, WorstCaseLIP) else notion.declared_prior()
        #: The secret model's declared Pr[X], enforced beside the prior or the set (a corner is already covered).
        self.declared = None if declared is None else _Weights(declared, exact)
        if isinstance(notion, WorstCaseLIP):
            self.kind = "corners" if corners else "listed"
            self.priors = [] if corners else [_Weights(row, exact) for row in np.eye(prior.k)]
        elif prior_set is None:
            self.priors = [_Weights(prior.probabilities, exact)]
        elif prior_set.kind in GREEDY_KINDS:
            self.kind = prior_set.kind
            self.parameters = {key: _as_numbers(value, exact) if isinstance(value, list) else
                               (Fraction(value) if exact else float(value))
                               for key, value in prior_set.parameters.items()}
            if self.kind == "tv_ball":
                self.parameters["center"] = _normalised(self.parameters["center"])
        else:
            self.priors = [_Weights(row, exact) for row in np.asarray(prior_set.vertices, dtype=float)]

    def mass_range(self, column):
        """((min P.q, argmin P), (max P.q, argmax P))."""
        low, high = self._enforced_range(column)
        if self.declared is not None:
            mass = (self.declared.dot(column), self.declared.values)
            low, high = min(low, mass, key=_mass), max(high, mass, key=_mass)
        return low, high

    def _enforced_range(self, column):
        if self.kind == "corners":  # P = e_x: P.q = q[x], the first extreme as the listed corners give it
            low, high = min(column), max(column)
            return (low, _corner(len(column), column.index(low))), (high, _corner(len(column), column.index(high)))
        if self.kind == "listed":
            masses = [p.dot(column) for p in self.priors]
            low, high = masses.index(min(masses)), masses.index(max(masses))
            return (masses[low], self.priors[low].values), (masses[high], self.priors[high].values)
        return self._greedy(column, lowest=True), self._greedy(column, lowest=False)

    def _greedy(self, column, lowest):
        mass, prior = greedy_extreme(self.kind, self.parameters, column, lowest)
        return _dot(prior, column), prior


def _mass(pair):
    return pair[0]


def _ratio(numerator, denominator):
    if denominator == 0:
        return math.inf if numerator > 0 else 0
    if isinstance(numerator, int) and isinstance(denominator, int):  # integer-scaled exact columns
        return Fraction(numerator, denominator)
    return numerator / denominator


def _column_lip(y, column, conditional, scenarios):
    """Largest posterior/prior ratio of G in the column of output y over secret values g and enforced priors,
    and where it is first attained."""
    (low, low_prior), (high, high_prior) = scenarios.mass_range(column)
    if conditional is None:  # G = X: the secret masses are the column's entries; only its extremes can be worst
        largest, smallest = max(column), min(column)
        candidates = [(column.index(largest), largest), (column.index(smallest), smallest)]
    else:
        candidates = [(g, row.dot(column)) for g, row in enumerate(conditional)]
    best, worst = 0, {}
    for g, secret_mass in candidates:
        for ratio, side, where in ((_ratio(secret_mass, low), "upper", low_prior),
                                   (_ratio(high, secret_mass), "lower", high_prior)):
            if ratio > best:
                best = ratio
                worst = {"output": y, "secret": g, "side": side, "prior": where}
    return best, worst


def _column_ldp(y, column):
    largest, smallest = max(column), min(column)
    return _ratio(largest, smallest), {"output": y, "inputs": [column.index(largest), column.index(smallest)]}


def _column_worst(notion, prior, exact, corners=True):
    """The function (y, column) -> (largest ratio of the column, where it is first attained) of ``notion``."""
    if isinstance(notion, LDP):
        return _column_ldp
    if not isinstance(notion, (LIP, WorstCaseLIP)):
        raise ValidationError(f"notion is {notion!r}; it must be ld.LDP, ld.LIP or ld.WorstCaseLIP")
    conditional = None if notion.secret is None else \
        [_Weights(row, exact) for row in np.asarray(notion.conditional(prior.k), dtype=float)]
    scenarios = _Scenarios(notion, prior, exact, corners)
    return lambda y, column: _column_lip(y, column, conditional, scenarios)


def _first_largest(columns, column_worst):
    """Over (y, column) pairs in output order, skipping all-zero columns: the largest ratio and the first place
    attaining it (the order of a single pass over the whole table)."""
    best, worst = 0, {}
    for y, column in columns:
        if not any(column):
            continue
        ratio, place = column_worst(y, column)
        if ratio > best:
            best, worst = ratio, place
    if "prior" in worst:  # converted once, for the place reported
        worst = dict(worst, prior=[float(p) for p in worst["prior"]])
    return best, worst


def _rational_tightest(table, notion, prior, *, corners=False):
    """``tightest(..., exact=True)`` without the interval prefilter: every column in rational arithmetic (with
    ``corners=False`` the corners of the simplex listed as priors, as before docs/math.md §3.7; the reference of
    the tests and of benchmarks/verify.py)."""
    rows = [_normalised(row) for row in _as_numbers(table, True)]  # what a perturber samples
    return _first_largest(enumerate(map(list, zip(*rows))), _column_worst(notion, prior, True, corners))


def integer_entries(table: npt.ArrayLike) -> npt.NDArray[Any]:
    """``table`` (floats >= 0, any shape) as Python integers N (an object array) with table = N 2^-E for one E:
    exact, since every double is an integer times a power of two (np.frexp). An object array of exact rationals
    (``rational_entries``) gives table = N / D, D the least common multiple of their denominators."""
    if np.asarray(table).dtype == object:
        entries = np.asarray(table)
        # Any: typeshed's numbers.Rational has no arithmetic on its denominators
        rationals: list[Any] = [value if isinstance(value, numbers.Rational) else Fraction(value)
                                for value in entries.flat]
        factors = dict.fromkeys(value.denominator for value in rationals)
        common = math.lcm(*factors)
        factors = {denominator: common // denominator for denominator in factors}
        integers = np.empty(entries.shape, dtype=object)
        integers.flat[:] = [value.numerator * factors[value.denominator] for value in rationals]
        return integers
    table = np.asarray(table, dtype=float)
    mantissa, exponent = np.frexp(table)
    positive = table > 0
    low = int(exponent[positive].min()) if positive.any() else 0
    integers = (mantissa * 2.0**53).astype(np.int64).astype(object)  # table = integers * 2^(exponent - 53)
    return np.left_shift(integers, np.where(positive, exponent - low, 0).astype(object))


def _integer_columns(integers, outputs):
    """The normalised columns ``outputs`` of a table, each scaled by one positive constant (the same for all): lists
    of Python ints. ``integers`` is the table as ``integer_entries`` gives it, V (for floats, the table over its
    smallest power of two: every double is an integer times a power of two, np.frexp); with S its integer row sums,
    column y is V[:, y] / S = V[:, y] (L / S) / L, L = lcm(S)."""
    sums = integers.sum(axis=1)
    multiple = math.lcm(*{int(total) for total in sums if total})
    if multiple.bit_length() > MAX_COMMON_BITS:  # many different row sums: per-entry fractions stay small instead
        return [[Fraction(int(value), int(total)) for value, total in zip(integers[:, y], sums)] for y in outputs]
    weights = np.array([multiple // int(total) if total else 0 for total in sums], dtype=object)
    return (integers[:, outputs] * weights[:, None]).T.tolist()


def _gamma(count):
    """gamma_n = n u / (1 - n u): the relative error of n roundings compounded (docs/math.md §3.7)."""
    return count * UNIT / (1 - count * UNIT)


def _enclosure(value, count):
    """Floats (lower, upper) around the exact r with value = r (1 + theta), |theta| <= gamma_count, count >= 2:
    widened by 2 gamma and stepped one ulp outward, so that the rounding of the widening itself is covered."""
    gamma = _gamma(count)
    lower = np.nextafter(value * (1 - 2 * gamma), 0.0)
    upper = np.nextafter(value * (1 + 2 * gamma), np.inf)
    infinite = np.isinf(value)
    return np.where(infinite, np.inf, lower), np.where(infinite, np.inf, upper)


def _float_ratio(numerator, denominator):
    """numerator / denominator elementwise, with ``_ratio``'s convention for a zero denominator."""
    # an overflow (to inf) happens only in columns with an entry below TINY, which _ratio_bounds leaves to rational
    # arithmetic whatever the quotient is
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        quotient = numerator / np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, quotient, np.where(numerator > 0, np.inf, 0.0))


def _ratio_bounds(table, notion, prior):
    """Per column of ``table``, floats (lower, upper) enclosing the column's largest ratio under ``notion`` in
    exact arithmetic (docs/math.md §3.7): (0, inf) where the error model does not apply (a tiny entry, a box or a
    TV ball, whose greedy fill is not bounded here)."""
    k, n_out = table.shape
    sums = table.sum(axis=1)
    columns = table / sums[:, None]  # each = exact (1 + theta), |theta| <= gamma_n (n - 1 additions, 1 division)
    count = n_out + 1  # one spare rounding keeps count >= 2 (``_enclosure``)
    unknown = ((columns > 0) & (columns < TINY)).any(axis=0)
    if isinstance(notion, LDP):
        bounds = [_enclosure(_float_ratio(columns.max(axis=0), columns.min(axis=0)), 2 * count + 1)]
    else:
        prior_set = getattr(notion, "prior_set", None)
        if isinstance(notion, WorstCaseLIP):
            low, high, mass_count = columns.min(axis=0), columns.max(axis=0), count
        else:
            if prior_set is not None and prior_set.kind in GREEDY_KINDS or notion.declared_prior() is not None:
                return np.zeros(n_out), np.full(n_out, np.inf)  # greedy fills and a declared marginal: not bounded
            priors = np.atleast_2d(np.asarray(prior.probabilities if prior_set is None else prior_set.vertices,
                                              dtype=float))
            priors = priors / priors.sum(axis=1, keepdims=True)  # each weight within gamma_k
            if ((priors > 0) & (priors < TINY)).any():
                return np.zeros(n_out), np.full(n_out, np.inf)
            masses = priors @ columns  # k products of (gamma_k, gamma_count) factors, k - 1 additions
            low, high, mass_count = masses.min(axis=0), masses.max(axis=0), 2 * k + count
        if notion.secret is None:
            secret, secret_count = np.stack([columns.max(axis=0), columns.min(axis=0)]), count
        else:
            conditional = np.asarray(notion.conditional(k), dtype=float)
            conditional = conditional / conditional.sum(axis=1, keepdims=True)
            if ((conditional > 0) & (conditional < TINY)).any():
                return np.zeros(n_out), np.full(n_out, np.inf)
            secret, secret_count = conditional @ columns, 2 * k + count
        ratio_count = secret_count + mass_count + 1
        bounds = [_enclosure(_float_ratio(secret, low), ratio_count),
                  _enclosure(_float_ratio(high, secret), ratio_count)]
    lower = np.max([np.max(np.atleast_2d(low_end), axis=0) for low_end, _ in bounds], axis=0)
    upper = np.max([np.max(np.atleast_2d(high_end), axis=0) for _, high_end in bounds], axis=0)
    return np.where(unknown, 0.0, lower), np.where(unknown, np.inf, upper)


def _prefiltered_tightest(table, notion, prior):
    """``tightest(..., exact=True)``: rational arithmetic only on the columns whose interval reaches the largest
    lower end, which hold every column attaining the exact maximum (docs/math.md §3.7). A table of exact rationals
    (``rational_entries``) has every non-zero column evaluated in rational arithmetic (the error model of the
    prefilter is about doubles)."""
    column_worst = _column_worst(notion, prior, True)
    if rational_entries(table) is not None:
        return _first_largest(zip(*_nonzero_columns(table)), column_worst)
    table = np.asarray(table, dtype=float)
    lower, upper = _ratio_bounds(table, notion, prior)
    nonzero = table.any(axis=0)
    reach = lower[nonzero].max() if nonzero.any() else 0.0
    candidates = np.flatnonzero(nonzero & (upper >= reach))
    return _first_largest(zip(candidates.tolist(), _integer_columns(integer_entries(table), candidates)),
                          column_worst)


def _nonzero_columns(table):
    """(indices, integer columns) of the columns of an object array of exact rationals with a non-zero entry."""
    integers = integer_entries(table)
    candidates = np.flatnonzero((integers != 0).any(axis=0))
    return candidates.tolist(), _integer_columns(integers, candidates)


def tightest(table: npt.ArrayLike, notion: LDP | LIP | WorstCaseLIP, prior: Prior, *,
             exact: bool = False) -> tuple[Fraction | float, dict[str, Any]]:
    """(largest ratio, worst place) of ``table`` under ``notion``; the tightest epsilon is ln(ratio).

    Exact mode returns the Fraction and place that rational arithmetic over every column gives (docs/math.md
    §3.7). Each row is read as the distribution a perturber samples (divided by its sum); the table is not
    checked (``check_table`` does that, ``verify_table`` both).

    Parameters
    ----------
    table : array_like
        The table, one row per input value (floats, or exact rationals in an object array).
    notion : LDP, LIP or WorstCaseLIP
        The notion whose ratios are taken.
    prior : Prior
        The design prior (LIP notions; for LDP any prior with one value per row).
    exact : bool, default False
        Rational arithmetic (True) or floating point (False).

    Returns
    -------
    ratio : fractions.Fraction or float
        The largest ratio (a Fraction in exact mode; ``math.inf`` for a zero beside a positive entry; 0 for a
        table without a positive column).
    worst : dict
        Where it is first attained (as ``Certificate.worst``).

    Raises
    ------
    ValidationError
        ``notion`` is not ``ld.LDP``, ``ld.LIP`` or ``ld.WorstCaseLIP``.

    Examples
    --------
    >>> import lipdesign as ld
    >>> table = [[0.75, 0.25], [0.25, 0.75]]
    >>> ratio, worst = ld.verification.tightest(table, ld.LDP(1.0), ld.Prior([0.5, 0.5]), exact=True)
    >>> print(ratio, worst)
    3 {'output': 0, 'inputs': [0, 1]}
    >>> print(f"{ld.verification.log_upper(ratio):.4f}")
    1.0986
    """
    if exact:
        return _prefiltered_tightest(table, notion, prior)
    rows = [_normalised(row) for row in _as_numbers(table, False)]  # what a perturber samples
    return _first_largest(enumerate(map(list, zip(*rows))), _column_worst(notion, prior, False))


def check_table(table: npt.ArrayLike, k: int | None = None) -> npt.NDArray[np.float64]:
    """A finite, non-negative table whose rows sum to 1 within 1e-9, with ``k`` rows when given.

    The table is kept as given (verification reads the numbers as they are, not renormalised), and has at most
    MAX_VERIFY_ENTRIES entries (docs/math.md §3.7).

    Parameters
    ----------
    table : array_like
        A 2-D table, one row per input value.
    k : int, optional
        The number of rows required (the prior's number of values); default any.

    Returns
    -------
    numpy.ndarray
        The table as a float array.

    Raises
    ------
    ValidationError
        The table is not 2-D, has a negative or non-finite entry, a row not summing to 1, not ``k`` rows, or more
        than MAX_VERIFY_ENTRIES entries.

    Examples
    --------
    >>> import lipdesign as ld
    >>> ld.verification.check_table([[0.5, 0.5], [0.1, 0.9]])
    array([[0.5, 0.5],
           [0.1, 0.9]])
    >>> ld.verification.check_table([[0.5, 0.6], [0.1, 0.9]])
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: table row 0 sums to 1.1; each row must sum to 1 within 1e-09
    """
    table = stochastic_rows(table, "table")
    if k is not None and table.shape[0] != k:
        raise ValidationError(f"table has {table.shape[0]} rows; it must have one per value of the prior ({k})")
    if table.size > MAX_VERIFY_ENTRIES:
        raise ValidationError(f"table has {table.shape[0]} x {table.shape[1]} = {table.size} entries; exact "
                              f"verification takes at most MAX_VERIFY_ENTRIES = {MAX_VERIFY_ENTRIES} "
                              "(docs/math.md §3.7)")
    return table


def _non_negative_rationals(table):
    """``table`` (exact rationals, already checked as floats) unless an entry is negative (a tiny negative one is
    -0.0 as a float)."""
    negative = [index for index, value in enumerate(table.flat) if getattr(value, "numerator", value) < 0]
    if negative:
        row, column = np.unravel_index(negative[0], table.shape)
        raise ValidationError(f"table[{row}, {column}] is {table[row, column]}; every entry must be >= 0")
    return table


# table and prior are Any: they are checked here (ValidationError), and ld.verify passes them on as it gets them
def verify_table(table: Any, notion: LDP | LIP | WorstCaseLIP | None, prior: Any = None, *,
                 exact: bool = True) -> Certificate:
    """Certificate of the tightest epsilon of ``table`` under ``notion`` (docs/math.md §3); the claim checked is
    ``notion.epsilon``.

    ``prior`` (a Prior or probabilities) is needed for LIP notions; it is checked against the notion's secret and
    prior set for sizes only (membership of the design prior in a prior set is a design-time rule). Exact mode
    (the default) has no slack and rounds the reported epsilon up; ``exact=False`` is floating point and passes
    within FLOAT_SLACK. ``table`` holds floats, or exact rationals in an object array (``rational_entries``: a
    realised table no double holds), which are checked as floats and verified as the rationals they are. The
    epsilon is finite for every table without a zero beside a positive entry in a column, even when the ratio is
    beyond the double range (``log_upper``).

    Parameters
    ----------
    table : array_like
        The table, one row per input value: floats, or exact rationals (Fractions, ints) in an object array.
    notion : LDP, LIP or WorstCaseLIP
        The notion and its claimed epsilon.
    prior : Prior or array_like, optional
        The design prior; required for ``ld.LIP``, default uniform otherwise.
    exact : bool, default True
        Rational arithmetic (a proof, rounded up) or floating point (within FLOAT_SLACK).

    Returns
    -------
    Certificate
        The tightest epsilon, where it is attained, and whether it is within the claim.

    Raises
    ------
    ValidationError
        ``notion`` is not one of the three notions (None included), an LIP notion without a prior, a prior that
        is not probabilities (a PriorSet: ``ld.verify`` takes one with a mechanism) or of the wrong size for the
        table or the notion, or a table that ``check_table`` refuses (None included).

    See Also
    --------
    lipdesign.verify : The same for a mechanism (its privacy table and claim).

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> table = np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
    >>> certificate = ld.verification.verify_table(table, ld.LDP(1.1))
    >>> certificate.passed, round(certificate.epsilon, 4)
    (True, 1.0986)
    >>> certificate = ld.verification.verify_table(table, ld.LIP(1.0), [0.5, 0.3, 0.2])
    >>> certificate.passed, round(certificate.epsilon, 4), certificate.worst["output"]
    (True, 0.7621, 2)
    >>> ld.verification.verify_table(table, ld.LIP(1.0))
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: prior is None; verifying an LIP notion needs the design prior
    """
    if not isinstance(notion, (LDP, LIP, WorstCaseLIP)):
        raise ValidationError(f"notion is {notion!r}; verify needs ld.LIP, ld.LDP or ld.WorstCaseLIP")
    if prior is not None and not isinstance(prior, Prior):
        prior = Prior(prior)
    if prior is None:
        if isinstance(notion, LIP):
            raise ValidationError("prior is None; verifying an LIP notion needs the design prior")
        try:
            shape = np.shape(table)
        except ValueError:  # ragged nested lists: check_table names the problem
            shape = ()
        size = shape[0] if len(shape) == 2 and shape[0] else 1
        prior = Prior(np.full(size, 1.0 / size))
    notion.check_sizes(prior)
    rational = rational_entries(table)
    table = check_table(table, prior.k)
    if rational is not None:
        table = _non_negative_rationals(rational)
    ratio, worst = tightest(table, notion, prior, exact=exact)
    epsilon = log_upper(ratio) if ratio else 0.0
    if exact:
        passed = ratio <= exp_bounds(notion.epsilon)[0]
    else:
        passed = epsilon <= notion.epsilon + FLOAT_SLACK
    return Certificate(notion.kind, notion.epsilon, epsilon, bool(passed), exact, worst)

