"""Mean estimation of numeric attributes t in [-1, 1]^d under eps-LDP (docs/math.md §9). Numpy only.

- ``Laplace``: the Laplace baseline of Harmony Sec. 3.1 with a finite output space (a discrete Laplace on a grid).
- ``Duchi``: Duchi et al.'s multidimensional mechanism with Harmony's even-d fix (Alg. 1).
- ``HarmonyNumeric``: Harmony Alg. 2, one randomized bit for one coordinate per user.

Every ``estimate`` is unbiased and every ``variance(values)`` is the exact variance of ``estimate(perturb(values))``
for that population. Every estimate is also a mean of independent per-user terms whose sums and sums of squares the
aggregate determines (``term_moments``), which gives sample-variance standard errors from the aggregate alone
(``estimate.sample_standard_errors``, docs/math.md §15).

Every mechanism here has a finite output space and a privacy table verified exactly on what its sampler realises.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.domains import Box
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan, extremes
from lipdesign.mechanisms.base import COMPOSITION, EXACT_TABLE, SEED_RULE, Guarantee, Mechanism
from lipdesign.mechanisms.harmony_categorical import signed_counts
from lipdesign.mechanisms.rr import one_bit, one_bit_scale, one_bit_table
from lipdesign.mechanisms.sampling import (
    ONE_BIT_MIN_EPSILON,
    REPORT_RTOL,
    TablePerturber,
    implemented_exp,
    public_index,
    public_seed,
    realized_probability,
    sign_field,
    structured_reports,
)
from lipdesign.notions import LDP
from lipdesign.validation import choice, float_array, fmt, integer
from lipdesign.verification import sequential, verify_table

if TYPE_CHECKING:  # annotations only
    from typing import Self

    import numpy.typing as npt

    from lipdesign.mechanisms.aggregate import Aggregate

#: The reports of ``HarmonyNumeric`` and of the learners (``lipdesign.learn.client_report``): one record per user,
#: the coordinate j (int32) and the sign of the one bit (int8, -1 or +1).
REPORT_DTYPE = np.dtype([("coordinate", "<i4"), ("sign", "i1")])

#: Default and largest grid M of ``Laplace`` (M + 1 grid points, M + 1 reports per coordinate). The rounding adds
#: at most 1/M^2 to a coordinate's variance (2.4e-4 at M = 64, against 8 d^2 / eps^2 >= 0.08 for the noise).
LAPLACE_GRID = 64
LAPLACE_MAX_GRID = 256

#: Relative margins below eps / d that ``Laplace`` tries in turn for its decay a (the first whose realised table
#: verifies is used; every grid up to 256 verifies with the first for eps / d >= 1e-5).
LAPLACE_MARGINS = (0.0, 1e-4, 1e-3, 1e-2, 1e-1)

#: Largest d of ``Laplace`` (as for ``Duchi``: reports of d floats per user are impractical beyond it).
LAPLACE_MAX_D = 4096

#: Largest d of ``Duchi``: its exact parameters use binomial coefficients and 2^d as Python integers, so a huge d
#: (e.g. from a JSON file) would take long to construct; reports of d floats per user are impractical anyway.
DUCHI_MAX_D = 4096

#: Users per chunk are chosen so that an (users x d) float temporary has about this many entries.
CHUNK_ENTRIES = 2**20


def chunks(n: int, d: int) -> list[slice]:
    """Slices of users so that (users x d) temporaries stay near CHUNK_ENTRIES entries."""
    step = max(1, CHUNK_ENTRIES // d)
    return [slice(start, min(start + step, n)) for start in range(0, n, step)]


def numeric_reports(reports: npt.ArrayLike, d: int) -> npt.NDArray[np.float64]:
    """Float reports of shape (n, d) (or (n,) when d == 1), finite; an empty batch is allowed."""
    try:
        flat = d == 1 and np.ndim(reports) == 1
    except ValueError:  # ragged nested lists; float_array names the problem
        flat = False
    if np.size(reports) == 0 and np.ndim(reports) in (1, 2):
        return np.zeros((0, d))
    array = float_array(reports, "reports", 1 if flat else 2)
    array = array.reshape(-1, 1) if flat else array
    if array.shape[1] != d:
        raise ValidationError(f"reports has shape {array.shape}; it must have shape (n, {d}), one report row per "
                              "user")
    return array


def refuse_reports(reports: npt.NDArray[np.float64], bad: npt.NDArray[np.bool_], rule: str) -> None:
    """Raise ValidationError at the first entry of the (n, d) float ``reports`` that ``bad`` (a mask of the same
    shape) flags, saying what the reports of the mechanism are (``rule``)."""
    at = np.flatnonzero(bad.ravel())
    if at.size:
        row, column = np.unravel_index(at[0], reports.shape)
        raise ValidationError(f"reports[{row}, {column}] is {fmt(reports[row, column])}; {rule}")


#: Laplace's audit reads the joint class of at most this many coordinates (3 classes per coordinate).
LAPLACE_COORDINATES = 6


class NumericReports(Mechanism):
    """Mechanisms whose reports are d floats per user."""

    d: int

    def empty_reports(self) -> npt.NDArray[np.float64]:
        return np.zeros((0, self.d))


class MeanOfReports(NumericReports):
    """Mechanisms whose estimate is the mean of the reports: the aggregate holds their sum ("sums") and the sum of
    their squares ("squares", for the standard errors) per coordinate, float sums that add up to rounding."""

    def _statistics(self, reports):
        reports = self._checked_reports(numeric_reports(reports, self.d))
        return reports.shape[0], {"sums": reports.sum(axis=0), "squares": np.square(reports).sum(axis=0)}

    def term_moments(self, aggregate: Aggregate) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int]:
        """The moments of the per-user terms Y (the reports) whose mean is the estimate (docs/math.md §15).

        Parameters
        ----------
        aggregate : Aggregate
            An aggregate of this mechanism's reports.

        Returns
        -------
        tuple of (numpy.ndarray, numpy.ndarray, int)
            (sum Y, sum Y^2) per coordinate and the number of users.
        """
        return aggregate["sums"], aggregate["squares"], aggregate.n

    def _checked_reports(self, reports):
        return reports

    def _estimate(self, aggregate, method):
        return aggregate["sums"] / aggregate.n

    def _expected(self, values, method, user_ids):
        return values.mean(axis=0)


class Laplace(MeanOfReports):
    """The Laplace mechanism with a finite output space (docs/math.md §9.9), Harmony's baseline (Sec. 3.1).

    Each coordinate t is rounded at random to the grid g_i = -1 + 2i/M (unbiased), moved by a two-sided geometric
    (discrete Laplace) number of grid steps Z, Pr[Z = z] proportional to a^|z| with a = e^(-eps / (d M)), and
    clamped to the grid ends. A clamped report is the mean of the unclamped position given that it lies beyond
    the end: the tail of a geometric law is memoryless, so that mean is the end -+ step a / (1 - a) whatever the
    input, and the report stays unbiased. Per coordinate the sampler realises an (M + 1) x (M + 1) table
    (``privacy_table``, verified exactly) whose largest ratio is a^-M = e^(eps/d); the d coordinates compose to
    eps. The variance is at most that of Lap(2d/eps) (8 d^2 / eps^2 per coordinate) plus the rounding's
    (at most 1/M^2).

    Parameters
    ----------
    epsilon : float
        The LDP level of the whole report, in [1e-6, 10]; each coordinate gets eps / d.
    d : int, default 1
        The number of coordinates, 1..``LAPLACE_MAX_D`` (4096), with epsilon / d >= 1e-6.
    grid : int, default 64
        M, the grid of the rounding and of the reports (M + 1 points), 2..``LAPLACE_MAX_GRID`` (256).

    Attributes
    ----------
    outputs : numpy.ndarray
        The M + 1 possible reports of a coordinate: the grid, its two ends moved out to -+``bound``.
    bound : float
        The largest absolute report, 1 + step a / (1 - a).
    decay : float
        a, the ratio of the geometric law per grid step.

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10], d or grid is not an integer in its range, epsilon / d < 1e-6, or the
        sampler cannot realise the table within the claim at this grid (a smaller grid can).

    See Also
    --------
    Duchi, HarmonyNumeric, Piecewise, Hybrid : The other mean estimators of docs/math.md §9.

    Notes
    -----
    Reports: float (n, d), each entry one of the M + 1 ``outputs``; the aggregate holds their sums and sums of
    squares per coordinate.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> laplace = ld.mechanisms.Laplace(1.0, d=2, grid=16)
    >>> laplace.guarantee.basis
    'composition of exact tables'
    >>> certificate = laplace.verify()
    >>> certificate.passed, round(certificate.epsilon, 6)
    (True, 1.0)

    Reports are points of the grid; the estimate is their mean, unbiased for the mean of the values:

    >>> values = np.random.default_rng(0).uniform(-1, 1, size=(5000, 2))
    >>> reports = laplace.perturb(values, rng=1)
    >>> reports.shape, bool(np.isin(reports, laplace.outputs).all())
    ((5000, 2), True)
    >>> estimate = laplace.estimate(reports)
    >>> np.round(values.mean(axis=0), 3)
    array([-0.001, -0.001])
    >>> np.round(estimate.values, 3), np.round(estimate.standard_errors, 3)
    (array([-0.089, -0.076]), array([0.062, 0.062]))

    The exact standard deviation of the estimate for this population (``variance``):

    >>> np.round(np.sqrt(laplace.variance(values, n=5000)), 3)
    array([0.062, 0.062])

    A float that is not a report of this mechanism is refused:

    >>> laplace.estimate(reports + 0.01)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: reports[0, 0] is ...; Laplace reports are the 17 values of its grid ...
    """

    family = "laplace"
    parameter_rules = (("d", f"integer in 1..{LAPLACE_MAX_D} with epsilon / d >= {ONE_BIT_MIN_EPSILON:g}"),
                       ("grid", f"integer in 2..{LAPLACE_MAX_GRID}"))

    def __init__(self, epsilon: float, d: int = 1, grid: int = LAPLACE_GRID) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        self.d = integer(d, "d", high=LAPLACE_MAX_D)
        self.grid = integer(grid, "grid", low=2, high=LAPLACE_MAX_GRID)
        self.input_domain = Box(self.d)
        self.coordinate_epsilon = self.epsilon / self.d
        if self.coordinate_epsilon < ONE_BIT_MIN_EPSILON:
            raise ValidationError(f"epsilon is {fmt(epsilon)}; Laplace needs epsilon / d >= "
                                  f"{ONE_BIT_MIN_EPSILON:g} per coordinate (d = {self.d})")
        # The realised table must keep a^-M <= e^(eps/d): near 1e-6 its smallest entries (about eps / 2M) are fine
        # enough for the alias sampler's resolution to matter, so the first margin on the ladder that verifies
        # is used (docs/math.md §9.9); the variance grows by about twice the margin, relatively.
        for margin in LAPLACE_MARGINS:
            self.margin = margin
            self.decay = math.exp(-math.log(implemented_exp(self.coordinate_epsilon)) * (1.0 - margin) / self.grid)
            self.table = self._table()
            self.sampler = TablePerturber(self.table)
            realized = self.sampler.realized_table()
            self._coordinate_certificate = verify_table(realized, LDP(self.coordinate_epsilon), exact=True)
            if self._coordinate_certificate.passed:
                break
        else:
            raise ValidationError(f"grid is {self.grid}; at epsilon / d = {fmt(self.coordinate_epsilon)} the sampler "
                                  "cannot realise the Laplace table within the claim (use a smaller grid)")
        realized.setflags(write=False)
        self._realized = realized
        step = 2.0 / self.grid
        overshoot = step * self.decay / (1.0 - self.decay)  # E[steps beyond an end | beyond it] x step
        outputs = -1.0 + step * np.arange(self.grid + 1)
        outputs[0], outputs[-1] = -1.0 - overshoot, 1.0 + overshoot
        outputs.setflags(write=False)
        self.outputs = outputs
        self.bound = 1.0 + overshoot

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "d": self.d, "grid": self.grid}

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 3, grid=16)

    def _table(self):
        """Pr[report j | grid input i] in ideal arithmetic: (1 - a)/(1 + a) a^|i - j| inside, a^i / (1 + a) and
        a^(M - i) / (1 + a) at the two ends (the clamped tails)."""
        a, m = self.decay, self.grid
        steps = np.abs(np.arange(m + 1)[:, None] - np.arange(m + 1)[None, :])
        table = (1.0 - a) / (1.0 + a) * a**steps
        table[:, 0] = a ** np.arange(m + 1) / (1.0 + a)
        table[:, -1] = a ** np.arange(m, -1, -1) / (1.0 + a)
        table.setflags(write=False)
        return table

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The per-coordinate table Pr[report j | g_i] as the alias sampler realises it.

        Rounding is pre-processing: any input's report distribution is a mixture of these rows. Its exact epsilon
        is eps / d; ``verify`` composes the d coordinates (docs/math.md §9.9).

        Returns
        -------
        numpy.ndarray
            (M + 1) x (M + 1), rows the grid inputs g_i, columns the ``outputs`` (read-only).

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> table = ld.mechanisms.Laplace(1.0, d=2, grid=16).privacy_table()
        >>> table.shape, bool(np.allclose(table.sum(axis=1), 1.0))
        ((17, 17), True)
        """
        return self._realized

    @property
    def guarantee(self) -> Guarantee:
        if self.d == 1:
            return Guarantee("LDP", self.epsilon, EXACT_TABLE)
        return Guarantee("LDP", self.epsilon, COMPOSITION,
                         f"{self.d} coordinates per user, each with an exact table at eps/{self.d}")

    def _certify(self):
        """The per-coordinate table verified exactly at eps / d, its epsilon times d rounded up (docs/math.md
        §9.8: the coordinates' noises are independent, so LDP budgets add)."""
        return sequential([self._coordinate_certificate] * self.d, self.epsilon)

    def _position(self, values):
        return (np.asarray(values, dtype=float) + 1.0) * (self.grid / 2.0)

    def _perturb(self, values, rng, user_ids):
        position = self._position(values)
        low = np.minimum(np.floor(position), self.grid - 1)
        grid_index = low.astype(np.int64) + (rng.random(position.shape) < position - low)
        return self.outputs[self.sampler.perturb(grid_index, rng)]

    def _checked_reports(self, reports):
        """Raise unless every report is one of the M + 1 ``outputs`` exactly."""
        refuse_reports(reports, ~np.isin(reports, self.outputs), f"Laplace reports are the {self.grid + 1} values of "
                       "its grid (reports of another mechanism, epsilon or grid?)")
        return reports

    def _variance(self, values, n, method, user_ids):
        """sum_i (E[report^2 | t_ij] - t_ij^2) / n^2 per coordinate: E[report^2 | g_i] from the table, mixed over
        the two grid points the rounding chooses between."""
        second = self.table @ self.outputs**2
        position = self._position(values)
        low = np.minimum(np.floor(position), self.grid - 1)
        fraction = position - low
        low = low.astype(np.int64)
        per_user = (1.0 - fraction) * second[low] + fraction * second[low + 1] - values**2
        return per_user.sum(axis=0) / n**2

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs +1 and -1 in every coordinate (grid points M and 0).

        Per coordinate the classes bottom end, interior, top end of the realised per-coordinate table, joint over
        the first ``LAPLACE_COORDINATES`` coordinates (independent, so the joint table is the product).

        Returns
        -------
        AuditPlan
            2 inputs and 3^min(d, 6) classes.
        """
        realized, grid = self.privacy_table(), self.grid
        per = np.array([[row[0], row[1:grid].sum(), row[grid]] for row in (realized[grid], realized[0])])
        used = min(self.d, LAPLACE_COORDINATES)
        table = np.ones((2, 1))
        for _ in range(used):
            table = (table[:, :, None] * per[:, None, :]).reshape(2, -1)
        powers = 3 ** np.arange(used)[::-1]

        def classify(reports):
            reports = np.asarray(reports).reshape(-1, self.d)[:, :used]
            code = np.where(reports == self.outputs[0], 0, np.where(reports == self.outputs[-1], 2, 1))
            return code @ powers

        codes = (np.arange(3**used)[:, None] // powers) % 3
        names = ["".join("lit"[c] for c in code) for code in codes]
        return AuditPlan(extremes(self.d), table, classify, ["t=+1", "t=-1"],
                     [f"coordinates {name} (l: lowest, i: interior, t: top)" for name in names])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()`` (docs/runtime.md §8).

        Returns
        -------
        dict
            ``d``, ``grid``, the ``outputs`` and the alias tables of the sampler.
        """
        return {"d": self.d, "grid": self.grid, "outputs": self.outputs.tolist(), **self.sampler.device_numbers()}


class Duchi(NumericReports):
    """Duchi et al.'s mechanism with Harmony's even-d fix (docs/math.md §9, Harmony Alg. 1).

    v_j = +-1 with Pr[v_j = 1] = (1 + t_j) / 2; with probability ``plus_probability`` the output is uniform on
    T+ = {s in {-B, B}^d : s.v > 0}, else uniform on the rest. Every output has probability e^eps / Z or 1 / Z
    given v, and E[s | v] = v.

    Parameters
    ----------
    epsilon : float
        The LDP level, in [1e-6, 10].
    d : int, default 1
        The number of coordinates, 1..``DUCHI_MAX_D`` (4096).

    Attributes
    ----------
    bound : float
        B, the absolute value of every entry of every report.
    plus_probability : float
        Pr[s . v > 0], the probability of an output on v's side.

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10] or d is not an integer in 1..4096.

    See Also
    --------
    HarmonyNumeric : One bit per user, for large d.
    Laplace, Piecewise, Hybrid : The other mean estimators of docs/math.md §9.

    Notes
    -----
    Reports: float (n, d) with entries +-B (``bound``); the aggregate counts the +B entries per coordinate.

    Sampling is exact apart from the Bernoulli draws of v and u (``rng.random() < p``, as in every mechanism
    here): u ~ Bernoulli(plus_probability), then w uniform on {-1, 1}^d from fair bits, redrawn until
    (sum(w) > 0) == u, and s = B w v. Given u, the accepted w is exactly uniform on its half (rejection sampling;
    each round accepts with probability >= 1/4). No floating-point distribution of the agreement count is used,
    so even the rarest outputs (all coordinates agreeing with v, probability ~2^-d) keep their exact probability.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> duchi = ld.mechanisms.Duchi(1.0, d=3)
    >>> round(duchi.bound, 4), round(duchi.plus_probability, 4)
    (4.3279, 0.7311)
    >>> certificate = duchi.verify()
    >>> certificate.passed, round(certificate.epsilon, 6)
    (True, 1.0)

    Every report entry is +-B; their mean estimates the mean of the values:

    >>> values = np.random.default_rng(0).uniform(-1, 1, size=(5000, 3))
    >>> reports = duchi.perturb(values, rng=1)
    >>> reports.shape, np.unique(np.round(np.abs(reports), 4))
    ((5000, 3), array([4.3279]))
    >>> np.round(values.mean(axis=0), 3)
    array([ 0.022, -0.004, -0.007])
    >>> estimate = duchi.estimate(reports)
    >>> np.round(estimate.values, 3), np.round(estimate.standard_errors, 3)
    (array([ 0.087,  0.042, -0.033]), array([0.061, 0.061, 0.061]))
    """

    family = "duchi"
    parameter_rules = (("d", f"integer in 1..{DUCHI_MAX_D}"),)

    def __init__(self, epsilon: float, d: int = 1) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        self.exp_epsilon = implemented_exp(self.epsilon)
        self.d = integer(d, "d")
        if self.d > DUCHI_MAX_D:
            raise ValidationError(f"d is {self.d}; Duchi needs d <= {DUCHI_MAX_D} (its exact parameters use "
                                  "binomial coefficients of d; use HarmonyNumeric for more coordinates)")
        self.input_domain = Box(self.d)
        d, e = self.d, self.exp_epsilon
        # C = |T+|; M = binom(d-1, floor((d-1)/2)); the integer ratios keep every float finite for any d.
        self.plus_count = 2 ** (d - 1) - (math.comb(d, d // 2) // 2 if d % 2 == 0 else 0)
        middle = math.comb(d - 1, (d - 1) // 2)
        self.plus_probability = e / ((e - 1.0) + 2**d / self.plus_count)
        self.bound = (2**d / middle + (self.plus_count / middle) * (e - 1.0)) / (e - 1.0)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "d": self.d}

    @classmethod
    def example(cls) -> Self:
        return cls(1.0, 4)

    def _agreements(self, plus, rng):
        """Uniform w in {-1, 1}^d (int8) per user, with sum(w) > 0 exactly where ``plus``: fair bits, redrawn for
        the rejected users only (rounds over users, not a loop over users)."""
        d = self.d
        agree = np.empty((plus.size, d), dtype=np.int8)
        pending = np.arange(plus.size)
        while pending.size:
            bits = rng.integers(0, 2, size=(pending.size, d), dtype=np.int8)
            accepted = (2 * bits.sum(axis=1, dtype=np.int64) > d) == plus[pending]
            agree[pending[accepted]] = 2 * bits[accepted] - 1
            pending = pending[~accepted]
        return agree

    def _perturb(self, values, rng, user_ids):
        n, d = values.shape
        reports = np.empty((n, d))
        for rows in chunks(n, d):
            t = values[rows]
            v = np.where(rng.random(t.shape) < (1.0 + t) / 2.0, 1.0, -1.0)
            plus = rng.random(t.shape[0]) < self.plus_probability
            reports[rows] = self.bound * self._agreements(plus, rng) * v
        return reports

    def _statistics(self, reports):
        reports = numeric_reports(reports, self.d)
        refuse_reports(reports, np.abs(np.abs(reports) - self.bound) > REPORT_RTOL * self.bound,
                       f"Duchi reports are +-B = +-{self.bound:.12g} (reports of another mechanism or epsilon?)")
        return reports.shape[0], {"positives": np.count_nonzero(reports > 0, axis=0)}

    def _estimate(self, aggregate, method):
        return self.bound * (2 * aggregate["positives"] - aggregate.n) / aggregate.n

    def term_moments(self, aggregate: Aggregate) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int]:
        """The moments of the per-user terms Y = +-B (the reports) whose mean is the estimate (docs/math.md §15).

        Every Y^2 is B^2, so the count of +B entries determines both sums.

        Parameters
        ----------
        aggregate : Aggregate
            An aggregate of this mechanism's reports.

        Returns
        -------
        tuple of (numpy.ndarray, numpy.ndarray, int)
            (sum Y, sum Y^2) per coordinate and the number of users.
        """
        n = aggregate.n
        return self.bound * (2 * aggregate["positives"] - n), np.full(self.d, n * self.bound**2), n

    def _expected(self, values, method, user_ids):
        return values.mean(axis=0)

    def _variance(self, values, n, method, user_ids):
        """sum_i (B^2 - t_ij^2) / n^2 per coordinate (E[s_j^2] = B^2, E[s_j] = t_j)."""
        return (self.bound**2 - values**2).sum(axis=0) / n**2

    def privacy_table(self) -> npt.NDArray[np.object_]:
        """The grouped privacy table: rows v = (1,...,1) and -v, columns the groups of outputs with s.v > 0, < 0
        (and = 0 when d is even), as exact rationals of what the sampler realises.

        Given v the sampler puts Pr[u] = p' = ceil(p 2^53) / 2^53 (``realized_probability``) on the C outputs of T+
        uniformly and 1 - p' on the other 2^d - C uniformly (rejection sampling is exact), so every output has
        probability p' / C or (1 - p') / (2^d - C) under any v: within a group every output has the same
        probability under each row, and the table's largest ratio is the mechanism's (docs/math.md §3.5, §9).

        Returns
        -------
        numpy.ndarray
            2 x 2 (odd d) or 2 x 3 (even d), of ``fractions.Fraction`` (object dtype).

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> table = ld.mechanisms.Duchi(1.0, d=3).privacy_table()
        >>> np.round(table.astype(float), 4)
        array([[0.7311, 0.2689],
               [0.2689, 0.7311]])
        """
        realized = Fraction(float(realized_probability(self.plus_probability)))
        rest = (1 - realized) / (2**self.d - self.plus_count)  # per output outside T+
        row = [realized, self.plus_count * rest]  # |{s.v < 0}| = |{s.v > 0}| = C
        if self.d % 2 == 0:
            row.append(math.comb(self.d, self.d // 2) * rest)
        return np.array([row, [row[1], row[0], *row[2:]]], dtype=object)

    def full_table(self, max_d: int = 12) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float64]]:
        """The whole 2^d x 2^d table of the ideal mechanism given v, for audits at small d.

        Parameters
        ----------
        max_d : int, default 12
            The largest d it is built for (the table has 4^d entries).

        Returns
        -------
        signs : numpy.ndarray
            {-1, 1}^d, int8, 2^d x d.
        table : numpy.ndarray
            ``table[a, b]`` = Pr[s = B signs[b] | v = signs[a]], 2^d x 2^d.

        Raises
        ------
        ValidationError
            If d > ``max_d``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> signs, table = ld.mechanisms.Duchi(1.0, d=3).full_table()
        >>> signs.shape, table.shape
        ((8, 3), (8, 8))
        >>> round(float(table.max() / table.min()), 4)  # e^eps
        2.7183
        """
        if self.d > max_d:
            raise ValidationError(f"d is {self.d}; the full table has 4^d entries, so it is built for d <= {max_d}")
        codes = np.arange(2**self.d)
        signs = np.where((codes[:, None] >> np.arange(self.d)) & 1, 1, -1).astype(np.int8)
        dots = signs.astype(np.int64) @ signs.T.astype(np.int64)
        z = (self.exp_epsilon - 1.0) * self.plus_count + 2**self.d
        return signs, np.where(dots > 0, self.exp_epsilon, 1.0) / z

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs +1 and -1 in every coordinate; classes s.1 > 0, < 0
        (and = 0 for even d), the privacy table's columns (docs/math.md §9.3).

        Returns
        -------
        AuditPlan
            2 inputs and 2 (odd d) or 3 (even d) classes.
        """
        d = self.d

        def classify(reports):
            balance = 2 * np.count_nonzero(reports > 0, axis=1) - d
            return np.select([balance > 0, balance < 0], [0, 1], 2)

        table = self.privacy_table()
        return AuditPlan(extremes(d), table, classify, ["t=+1", "t=-1"],
                         ["s.1 > 0", "s.1 < 0", "s.1 = 0"][:table.shape[1]])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()`` (docs/runtime.md §8).

        Returns
        -------
        dict
            ``d``, ``bound`` and ``plus_probability``.
        """
        return {"d": self.d, "bound": self.bound, "plus_probability": self.plus_probability}


class HarmonyNumeric(Mechanism):
    """Harmony Alg. 2 (docs/math.md §9): each user reports one randomized bit (``rr.one_bit``) for one coordinate j.

    ``coordinates="private"``: j is drawn uniformly by the user; the report stands for +-d c in coordinate j and
    the estimate is (1/n) sum of d c sign per coordinate (per-user variance d c^2 - t_j^2), with
    c = (e^eps + 1)/(e^eps - 1) (``scale``).
    ``coordinates="public"``: j = public_index(seed, user_id, d), which the server recomputes from the user id
    (Harmony Sec. 3.2); ``perturb`` then needs ``user_ids`` and the estimate is c (sum of signs) / n_j per
    coordinate, n_j the number of reports for it: given the hashed buckets, unbiased for the mean of t_j over
    bucket j (a hash-chosen subsample of the users). A coordinate nobody reported on is estimated as nan.

    Parameters
    ----------
    epsilon : float
        The LDP level, in [1e-6, 10].
    d : int, default 1
        The number of coordinates, >= 1.
    coordinates : {"private", "public"}, default "private"
        Who chooses each user's coordinate: the user, at random, or a public hash of its user id.
    seed : int, optional
        The public seed of the hash, with ``coordinates="public"`` only (default: drawn from the OS and stored
        in the mechanism's file).

    Attributes
    ----------
    scale : float
        c = (e^eps + 1)/(e^eps - 1), which makes c times the bit unbiased for t.

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10], d is not a positive integer, ``coordinates`` is neither mode, or a
        seed is given with ``coordinates="private"``.

    See Also
    --------
    Duchi : All d coordinates per user, for small d.
    HarmonyCategorical, HarmonyMixed : The same one-bit report for categorical values and mixed tuples.

    Notes
    -----
    Reports: a structured array of ``REPORT_DTYPE`` (fields "coordinate" int32 and "sign" int8 in {-1, 1});
    the aggregate holds the sum of signs and the number of reports per coordinate.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> harmony = ld.mechanisms.HarmonyNumeric(2.0, d=3)
    >>> certificate = harmony.verify()
    >>> certificate.passed, round(certificate.epsilon, 6)
    (True, 2.0)
    >>> values = np.random.default_rng(0).uniform(-1, 1, size=(5000, 3))
    >>> reports = harmony.perturb(values, rng=1)
    >>> reports[:3]
    array([(1, 1), (1, 1), (2, 1)], dtype=[('coordinate', '<i4'), ('sign', 'i1')])
    >>> np.round(values.mean(axis=0), 3)
    array([ 0.022, -0.004, -0.007])
    >>> estimate = harmony.estimate(reports)
    >>> np.round(estimate.values, 3), np.round(estimate.standard_errors, 3)
    (array([ 0.026, -0.05 , -0.054]), array([0.032, 0.032, 0.032]))

    With public coordinates each user's coordinate is a hash of its id, so ``perturb`` needs the ids:

    >>> public = ld.mechanisms.HarmonyNumeric(2.0, d=3, coordinates="public", seed=7)
    >>> public.perturb(values, rng=1)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: user_ids is None; coordinates='public' derives each user's coordinate from ...
    >>> reports = public.perturb(values, rng=1, user_ids=np.arange(5000))
    >>> np.round(public.estimate(reports).values, 3)
    array([ 0.036,  0.034, -0.023])
    """

    family = "harmony-numeric"
    MODES = ("private", "public")
    parameter_rules = (("d", "integer >= 1"), ("coordinates", " or ".join(map(repr, MODES))),
                       ("seed", f"with coordinates 'public' only: {SEED_RULE}"))

    def __init__(self, epsilon: float, d: int = 1, coordinates: str = "private",
                 seed: int | None = None) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        self.exp_epsilon = implemented_exp(self.epsilon)
        self.d = integer(d, "d")
        self.input_domain = Box(self.d)
        self.coordinates = choice(coordinates, "coordinates", self.MODES)
        if coordinates == "private" and seed is not None:
            raise ValidationError(f"seed is {fmt(seed)}; a seed is only used with coordinates='public'")
        self.seed = public_seed(seed) if coordinates == "public" else None
        self.scale = one_bit_scale(self.exp_epsilon)

    @property
    def uses_user_ids(self) -> bool:
        """Whether ``perturb`` needs ``user_ids``: with ``coordinates="public"``."""
        return self.coordinates == "public"

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "d": self.d, "coordinates": self.coordinates, "seed": self.seed}

    @classmethod
    def example(cls) -> Self:
        return cls(2.0, 5)

    def empty_reports(self) -> npt.NDArray[np.void]:
        return np.zeros(0, dtype=REPORT_DTYPE)

    def _public_coordinates(self, n, user_ids):
        """The hashed coordinate of each of n users in public mode; None in private mode."""
        if self.coordinates == "private":
            return None
        if user_ids is None:
            raise ValidationError("user_ids is None; coordinates='public' derives each user's coordinate from "
                                  "its user id")
        ids = np.asarray(user_ids)
        if ids.ndim != 1 or ids.shape[0] != n:
            raise ValidationError(f"user_ids has shape {ids.shape}; it must have shape ({n},), one id per row of "
                                  "values")
        return public_index(cast(int, self.seed), ids, self.d)  # not None: coordinates "public" has a seed

    def _perturb(self, values, rng, user_ids):
        n = values.shape[0]
        coordinate = self._public_coordinates(n, user_ids)
        if coordinate is None:
            coordinate = rng.integers(0, self.d, n)
        reports = np.empty(n, dtype=REPORT_DTYPE)
        reports["coordinate"] = coordinate
        reports["sign"] = one_bit(values[np.arange(n), coordinate], self.exp_epsilon, rng)
        return reports

    def _statistics(self, reports):
        """Sums of signs and report counts per coordinate, from a structured array with exactly the fields of
        REPORT_DTYPE, both of integer dtype."""
        structured_reports(reports, REPORT_DTYPE)
        coordinate = reports["coordinate"]
        bad = np.flatnonzero((coordinate < 0) | (coordinate >= self.d))
        if bad.size:
            raise ValidationError(f"reports['coordinate'][{bad[0]}] is {coordinate[bad[0]]}; coordinates lie in "
                                  f"0..{self.d - 1}")
        coordinate = coordinate.astype(np.int64)
        return coordinate.size, {"sign_sums": signed_counts(coordinate, sign_field(reports), self.d),
                                 "counts": np.bincount(coordinate, minlength=self.d)}

    def _estimate(self, aggregate, method):
        sums = aggregate["sign_sums"]
        if self.coordinates == "private":
            return self.d * self.scale * sums / aggregate.n
        with np.errstate(invalid="ignore"):
            return self.scale * sums / aggregate["counts"]

    def term_moments(self, aggregate: Aggregate) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                                                          int | npt.NDArray[np.int64]]:
        """The moments of the per-user terms Y whose mean is the estimate (docs/math.md §15).

        Private coordinates: Y = d c sign on the user's coordinate and 0 elsewhere, over all n users, so
        sum Y^2 = (d c)^2 counts. Public: Y = c sign over the counts[j] users of bucket j.

        Parameters
        ----------
        aggregate : Aggregate
            An aggregate of this mechanism's reports.

        Returns
        -------
        tuple of (numpy.ndarray, numpy.ndarray, int or numpy.ndarray)
            (sum Y, sum Y^2) per coordinate, and the number of users: n (private) or the users of each
            coordinate (public).
        """
        weight = self.d * self.scale if self.coordinates == "private" else self.scale
        users = aggregate.n if self.coordinates == "private" else aggregate["counts"]
        return weight * aggregate["sign_sums"], weight**2 * aggregate["counts"], users

    def _expected(self, values, method, user_ids):
        """The mean of each coordinate (private), or given the hashed buckets the mean of t_j over the users of
        bucket j (public; nan for an empty bucket)."""
        n = values.shape[0]
        coordinate = self._public_coordinates(n, user_ids)
        if coordinate is None:
            return values.mean(axis=0)
        own = values[np.arange(n), coordinate]
        with np.errstate(invalid="ignore"):
            return np.bincount(coordinate, weights=own, minlength=self.d) / np.bincount(coordinate, minlength=self.d)

    def _variance(self, values, n, method, user_ids):
        """Private: sum_i (d c^2 - t_ij^2) / n^2. Public, given the hashed buckets: sum over the users of bucket
        j of (c^2 - t_ij^2) / n_j^2 (nan for an empty bucket)."""
        coordinate = self._public_coordinates(n, user_ids)
        if coordinate is None:
            return (self.d * self.scale**2 - values**2).sum(axis=0) / n**2
        own = values[np.arange(n), coordinate]
        counts = np.bincount(coordinate, minlength=self.d)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.bincount(coordinate, weights=self.scale**2 - own**2, minlength=self.d) / counts**2

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The realised one-bit table (``rr.one_bit_table``): rows t = +1 and -1, columns the signs + and -.

        Returns
        -------
        numpy.ndarray
            2 x 2; its exact epsilon is the mechanism's.
        """
        return one_bit_table(self.exp_epsilon)

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs +1 and -1 in every coordinate; class the sign (whichever
        coordinate is reported, its input is the same extreme).

        Returns
        -------
        AuditPlan
            2 inputs and 2 classes.
        """
        return AuditPlan(extremes(self.d), self.privacy_table(), lambda reports: (reports["sign"] < 0).astype(int),
                     ["t=+1", "t=-1"], ["sign +", "sign -"])

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()`` (docs/runtime.md §8).

        Returns
        -------
        dict
            ``d``, ``exp_epsilon`` (e^eps as the sampler uses it), ``coordinates`` and ``seed``.
        """
        return {"d": self.d, "exp_epsilon": self.exp_epsilon, "coordinates": self.coordinates, "seed": self.seed}
