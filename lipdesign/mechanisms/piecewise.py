"""The Piecewise and Hybrid mechanisms of Wang et al. (ICDE 2019) for means of t in [-1, 1]^d, made
finite-output (docs/math.md §9). Numpy only.

t is rounded at random to a grid of M + 1 points (``grid``, unbiased), and the Piecewise output for a grid point
is sampled as one of finitely many bins of constant density plus a point uniform in the bin, which reproduces the
Piecewise distribution for grid inputs exactly. The float reported given the bin does not depend on the input, so
the privacy claim is the bin table (``privacy_table``), verified exactly; with several attributes per user the
claim is the sequential composition of the per-attribute tables.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign.domains import Box
from lipdesign.errors import ValidationError
from lipdesign.mechanisms.audit_plan import AuditPlan, extremes
from lipdesign.mechanisms.base import COMPOSITION, EXACT_TABLE, Guarantee
from lipdesign.mechanisms.numeric import MeanOfReports, chunks, refuse_reports
from lipdesign.mechanisms.rr import one_bit, one_bit_scale, one_bit_table
from lipdesign.mechanisms.sampling import (
    REPORT_RTOL,
    TablePerturber,
    implemented_exp,
    realized_probability,
)
from lipdesign.notions import LDP
from lipdesign.validation import fmt, integer
from lipdesign.verification import sequential, verify_table

if TYPE_CHECKING:  # annotations only
    from typing import Self

    import numpy.typing as npt

#: eps* of Wang et al. (ICDE 2019, "~0.61"): the root of (s + 3) / (3 (s - 1)^2) = c^2 with s = e^(eps/2),
#: c = (e^eps + 1) / (e^eps - 1). Above it the PM/Duchi mix of ``Hybrid`` beats Duchi's worst case.
HYBRID_THRESHOLD = 0.6093524930273998

#: Default input grid M of ``Piecewise`` and ``Hybrid`` (M + 1 grid points, at most 2M + 1 output bins): the
#: rounding adds at most (1/M)^2 e^(eps/2) / (e^(eps/2) - 1) to the per-attribute variance.
DEFAULT_GRID = 256

#: Largest requested input grid M of ``Piecewise`` and ``Hybrid``. The grid used is the smallest M' >= M whose bins
#: are all at least a quarter of the spacing wide (``separated_grid``), so every bin has probability at least
#: 1/(4 M' (e^(eps/2) + 1)); at M <= 256 that keeps the alias sampler's resolution (about 2^-43 / n_out per entry)
#: below a third of EXP_MARGIN, and ``privacy_table`` (the REALISED table) then verifies. Exact verification
#: takes about a second at M = 256.
MAX_GRID = 256

#: Smallest per-attribute epsilon of ``Piecewise``: below it the grid cannot keep its bins apart within a few
#: hundred points (their spacing shrinks with e^(eps/2) - 1). PM's worst-case variance is above Duchi's for
#: eps < 1.29 anyway (``Hybrid`` uses the one-bit mechanism alone below eps* = 0.609).
PIECEWISE_MIN_EPSILON = 0.01


def _piecewise_bound(half_exp):
    """C = (e^(eps/2) + 1) / (e^(eps/2) - 1), the largest |output| of the Piecewise mechanism."""
    return (half_exp + 1.0) / (half_exp - 1.0)


def _piecewise_variance(values, exp_epsilon):
    """t^2 / (e^(eps/2) - 1) + (e^(eps/2) + 3) / (3 (e^(eps/2) - 1)^2): the continuous PM (docs/math.md §9)."""
    half_exp = math.sqrt(exp_epsilon)
    return values**2 / (half_exp - 1.0) + (half_exp + 3.0) / (3.0 * (half_exp - 1.0) ** 2)


def separated_grid(grid: int, half_exp: float) -> int:
    """The smallest M >= ``grid`` with frac(M / s) in [1/4, 3/4], s = e^(eps/2). The left ends l_i of the PM's
    high-density intervals are spaced (C + 1)/M apart and each right end r_j = l_j + (C - 1) sits a fraction
    frac(M (C - 1)/(C + 1)) = frac(M / s) of a spacing past an l_i, so every bin is at least a quarter spacing
    wide: no sliver bin whose probability the sampler could not resolve."""
    size = grid
    while not 0.25 <= (size / half_exp) % 1.0 <= 0.75:
        size += 1
    return size


class PiecewiseGrid:
    """The finite-output Piecewise mechanism of one attribute: randomized rounding of t to the grid
    g_i = -1 + 2i/M (i = 0..M), then Wang et al.'s PM at g_i sampled as (bin, uniform point in the bin).

    M is ``separated_grid`` of the requested grid. Bin edges: the sorted union of -C, C and every l_i, r_i (as
    computed floats, exact duplicates removed), so
    each bin lies inside or outside [l_i, r_i] for every i: the PM density is constant on it under every grid
    input, Pr[bin | g_i] = density x width, and edge + U width given the bin reproduces the PM exactly
    (E[output | g_i] = g_i). The float output given the bin does not depend on the input, so the privacy of
    the sampler is that of the (M + 1) x bins table it realises, ``realized_table`` (rows: grid inputs): the bins
    are drawn by alias tables (lipdesign.mechanisms.sampling.TablePerturber), whose exact output distribution, including
    the resolution of numpy's uniforms, is what ``privacy_table`` returns and ``verify`` checks. The rounding
    is pre-processing: any input's output distribution is a mixture of the rows. The point in the bin,
    edge + U width, is rounded to a double, but that rounding is the same for every input.
    """

    def __init__(self, exp_epsilon: float, grid: int) -> None:
        self.exp_epsilon = exp_epsilon
        self.half_exp = math.sqrt(exp_epsilon)
        self.grid = separated_grid(grid, self.half_exp)
        bound = _piecewise_bound(self.half_exp)
        self.bound = bound
        self.points = -1.0 + 2.0 * np.arange(self.grid + 1) / self.grid
        left = (bound + 1.0) / 2.0 * self.points - (bound - 1.0) / 2.0
        right = left + (bound - 1.0)
        left[0], right[-1] = -bound, bound  # ideal values: l_0 = -C, r_M = C
        left = np.clip(left, -bound, bound)
        right = np.clip(right, -bound, bound)
        self.edges = np.unique(np.concatenate([[-bound, bound], left, right]))
        self.widths = np.diff(self.edges)
        inside = (left[:, None] <= self.edges[None, :-1]) & (self.edges[None, 1:] <= right[:, None])
        # Density e^eps' on [l_i, r_i] and 1 elsewhere, up to the common factor; rows normalised.
        weights = np.where(inside, exp_epsilon, 1.0) * self.widths
        self.table = weights / weights.sum(axis=1, keepdims=True)
        self.table.setflags(write=False)

    @cached_property
    def sampler(self) -> TablePerturber:
        """The alias tables of the bins (built on first use: a grid is also built just to read its size)."""
        return TablePerturber(self.table)

    def round(self, values: npt.ArrayLike, rng: np.random.Generator) -> npt.NDArray[np.int64]:
        """Grid indices i with E[g_i] = t: i = floor((t + 1) M / 2) (at most M - 1), plus 1 with probability
        equal to the fractional part."""
        position = (np.asarray(values, dtype=float) + 1.0) * (self.grid / 2.0)
        low = np.minimum(np.floor(position), self.grid - 1)
        return low.astype(np.int64) + (rng.random(position.shape) < position - low)

    def rounding_variance(self, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Var of g under the randomized rounding: (g_{i+1} - t)(t - g_i), computed as the sampler rounds."""
        position = (np.asarray(values, dtype=float) + 1.0) * (self.grid / 2.0)
        fraction = position - np.minimum(np.floor(position), self.grid - 1)
        return fraction * (1.0 - fraction) * (2.0 / self.grid) ** 2

    @cached_property
    def realized_table(self) -> npt.NDArray[np.float64]:
        """The (M + 1) x bins table the alias sampler realises exactly (TablePerturber.realized_table), computed
        once (about a second at M = 256)."""
        table = self.sampler.realized_table()
        table.setflags(write=False)
        return table

    def sample_bins(self, indices: npt.NDArray[np.int64], rng: np.random.Generator) -> npt.NDArray[np.int64]:
        """The bin of each grid index, drawn from its row of the table by the alias sampler."""
        return self.sampler.perturb(indices, rng)

    def outputs(self, bins: npt.NDArray[np.int64], rng: np.random.Generator) -> npt.NDArray[np.float64]:
        """A point uniform in each bin: edge + U width (the same float for the same bin and U, whatever the
        input)."""
        return self.edges[bins] + rng.random(np.shape(bins)) * self.widths[bins]

    def perturb(self, values: npt.ArrayLike, rng: np.random.Generator) -> npt.NDArray[np.float64]:
        """The finite-output PM of each value t in [-1, 1]: rounded to the grid, a bin, a point in the bin."""
        return self.outputs(self.sample_bins(self.round(values, rng), rng), rng)

    def variance(self, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Var_PM(t) + rv(t) s / (s - 1): E over rounding of Var_PM(g) is Var_PM(t) + rv / (s - 1) (Var_PM is
        t^2 / (s - 1) + const), plus the variance rv of g itself."""
        return _piecewise_variance(values, self.exp_epsilon) + \
            self.rounding_variance(values) * (self.half_exp / (self.half_exp - 1.0))


class _AttributeSampling(MeanOfReports):
    """Wang et al.'s extension to d attributes: each user perturbs k = max(1, min(d, floor(eps / 2.5)))
    attributes drawn uniformly without replacement, each with eps / k, scaled by d / k; the others report 0.
    The attribute subset is drawn independently of the data, so sequential composition gives eps-LDP from the
    per-attribute table (``privacy_table``, verified at eps / k; ``verify`` reports k times its epsilon).
    Reports: float (n, d); the aggregate holds their sums and sums of squares. ``grid`` (M, 2..MAX_GRID): the input
    grid of the finite-output Piecewise part. Epsilon in [1e-6, 10]."""

    parameter_rules = (("d", "integer >= 1"), ("grid", f"integer in 2..{MAX_GRID}"))

    if TYPE_CHECKING:  # annotations only: what each subclass implements for one attribute at eps / k
        def _perturb_one(self, values, rng): ...

        def _variance_one(self, values): ...

    def __init__(self, epsilon: float, d: int = 1, grid: int = DEFAULT_GRID) -> None:
        self.epsilon = self.checked_epsilon(epsilon)
        self.d = integer(d, "d")
        self.input_domain = Box(self.d)
        self.grid = integer(grid, "grid", low=2, high=MAX_GRID)
        self.attributes = max(1, min(self.d, math.floor(self.epsilon / 2.5)))
        self.attribute_epsilon = self.epsilon / self.attributes
        self.attribute_exp = implemented_exp(self.attribute_epsilon)
        self.half_exp = math.sqrt(self.attribute_exp)
        self.bound = _piecewise_bound(self.half_exp)

    @cached_property
    def piecewise(self) -> PiecewiseGrid:
        """The finite-output Piecewise mechanism of one attribute at eps / k (built on first use)."""
        return PiecewiseGrid(self.attribute_exp, self.grid)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "d": self.d, "grid": self.grid}

    @property
    def guarantee(self) -> Guarantee:
        if self.attributes == 1:
            return Guarantee("LDP", self.epsilon, EXACT_TABLE)
        return Guarantee("LDP", self.epsilon, COMPOSITION,
                         f"{self.attributes} attributes per user, each with an exact table at eps/{self.attributes}")

    def _perturb(self, values, rng, user_ids):
        n, d = values.shape
        k = self.attributes
        reports = np.zeros((n, d))
        for rows in chunks(n, d):
            count = rows.stop - rows.start
            # in increasing attribute order: argpartition's own order is not specified (docs/runtime.md)
            chosen = np.sort(np.argpartition(rng.random((count, d)), k - 1, axis=1)[:, :k], axis=1)
            users = np.arange(rows.start, rows.stop)[:, None]
            reports[users, chosen] = (d / k) * self._perturb_one(values[users, chosen], rng)
        return reports

    def _checked_reports(self, reports):
        """Raise unless every report lies in [-B, B], B = (d / k) C (up to rounding)."""
        bound = self.d / self.attributes * self.bound
        refuse_reports(reports, np.abs(reports) > bound * (1.0 + REPORT_RTOL), f"{type(self).__name__} reports lie "
                       f"in [-{bound:.12g}, {bound:.12g}] (reports of another mechanism or epsilon?)")
        return reports

    def _variance(self, values, n, method, user_ids):
        """sum_i [(d/k) (Var_1D(t_ij; eps/k) + t_ij^2) - t_ij^2] / n^2 per coordinate."""
        scale = self.d / self.attributes
        per_user = scale * (self._variance_one(values) + values**2) - values**2
        return per_user.sum(axis=0) / n**2

    def _certify(self):
        """The per-attribute table verified exactly at eps / k, its certified epsilon times k (rounded up)
        against the claim eps (sequential composition over the k sampled attributes, docs/math.md §9.8, §13)."""
        single = verify_table(self.privacy_table(), LDP(self.attribute_epsilon), exact=True)
        return sequential([single] * self.attributes, self.epsilon)

    def audit_plan(self) -> AuditPlan:
        """What ``ld.audit`` reads (docs/math.md §14): inputs +1 and -1 in every coordinate; classes of the first
        coordinate: not sampled (report 0), or sampled with its bin of the realised table (Hybrid: or its one-bit
        output +-c). With k > 1 sampled attributes a coordinate alone carries eps / k (docs/math.md §9.8).

        Returns
        -------
        AuditPlan
            2 inputs; the classes "not sampled", the bins (and +c, -c for Hybrid).
        """
        table = cast("npt.NDArray[np.float64]", self.privacy_table())  # both families' tables are arrays
        one_bit_only = getattr(self, "piecewise_probability", 1.0) == 0.0
        top, bottom = (0, 1) if one_bit_only else (table.shape[0] - 1, 0)
        chosen = self.attributes / self.d
        rows = np.column_stack([np.full(2, 1 - chosen), chosen * table[[top, bottom]]])
        scale = self.d / self.attributes
        bins = 0 if one_bit_only else self.piecewise.edges.size - 1
        bit = getattr(self, "scale", None)

        def classify(reports):
            value = np.asarray(reports).reshape(-1, self.d)[:, 0] / scale
            code = np.ones(value.size, dtype=np.int64)
            if bins:
                code += np.clip(np.searchsorted(self.piecewise.edges, value, side="right") - 1, 0, bins - 1)
            if bit is not None:
                code = np.where(np.isclose(value, bit, rtol=1e-12, atol=0), 1 + bins,
                                np.where(np.isclose(value, -bit, rtol=1e-12, atol=0), 2 + bins, code))
            return np.where(value == 0, 0, code)

        names = ["not sampled"] + [f"bin {b}" for b in range(bins)] + (["+c", "-c"] if bit is not None else [])
        return AuditPlan(extremes(self.d), rows, classify, ["t=+1", "t=-1"], names)

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()`` (docs/runtime.md §8).

        Returns
        -------
        dict
            ``d``, the k sampled ``attributes``, the ``grid`` M used, the bins' ``edges`` and ``widths`` and the
            alias tables of the bins.
        """
        grid = self.piecewise
        return {"d": self.d, "attributes": self.attributes, "grid": grid.grid, "edges": grid.edges.tolist(),
                "widths": grid.widths.tolist(), **grid.sampler.device_numbers()}


class Piecewise(_AttributeSampling):
    """Wang et al.'s Piecewise mechanism (ICDE 2019, docs/math.md §9) with a finite output space: t is rounded at
    random to the grid g_i = -1 + 2i/M (unbiased), then the PM output for g_i (density e^(eps/2)(e^(eps/2) -
    1) / (2 (e^(eps/2) + 1)) on [l(g_i), r(g_i)], e^-eps times that elsewhere on [-C, C]) is sampled exactly as
    a bin of constant density (alias table) and a point uniform in it. Unbiased; variance Var_PM(t) + (g_{i+1}
    - t)(t - g_i) e^(eps/2) / (e^(eps/2) - 1) per attribute, at most (1/M)^2 e^(eps/2)/(e^(eps/2) - 1) above
    the continuous PM's. M is the requested ``grid`` raised to ``separated_grid``. The output given its bin
    does not depend on the input, so ``privacy_table`` (grid inputs x bins, as realised) is the whole privacy
    claim, verified exactly.

    With d attributes (Wang et al.'s extension) each user perturbs k = max(1, min(d, floor(eps / 2.5)))
    attributes drawn uniformly without replacement, each with eps / k, scaled by d / k; the others report 0.
    The attribute subset is drawn independently of the data, so sequential composition gives eps-LDP from the
    per-attribute table (``verify`` reports k times its epsilon, docs/math.md §9.8).

    Parameters
    ----------
    epsilon : float
        The LDP level of the whole report, in [1e-6, 10]; each of the k sampled attributes gets eps / k.
    d : int, default 1
        The number of attributes, >= 1.
    grid : int, default 256
        The requested input grid M, 2..``MAX_GRID`` (256); the grid used is the smallest M' >= M whose bins are
        all at least a quarter of the spacing wide (``separated_grid``).

    Attributes
    ----------
    attributes : int
        k, the attributes each user perturbs.
    bound : float
        C = (e^(eps/2k) + 1)/(e^(eps/2k) - 1), the largest absolute output of one attribute before the scaling by d / k.
    piecewise : PiecewiseGrid
        The finite-output mechanism of one attribute at eps / k (its ``grid`` is the M used).

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10], d or grid is not an integer in its range, or eps / k is below
        ``PIECEWISE_MIN_EPSILON`` (0.01).

    See Also
    --------
    Hybrid : Piecewise mixed with the one-bit mechanism, better for small epsilon.
    Duchi, Laplace, HarmonyNumeric : The other mean estimators of docs/math.md §9.

    Notes
    -----
    Reports: float (n, d), 0 on the attributes a user did not sample; the aggregate holds their sums and sums
    of squares per attribute.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> pm = ld.mechanisms.Piecewise(3.0, d=2, grid=16)
    >>> pm.attributes, pm.piecewise.grid, round(pm.bound, 4)
    (1, 16, 1.5744)
    >>> certificate = pm.verify()
    >>> certificate.passed, round(certificate.epsilon, 6)
    (True, 3.0)

    Each user reports one attribute (scaled by d / k = 2) and 0 for the other:

    >>> values = np.random.default_rng(0).uniform(-1, 1, size=(5000, 2))
    >>> reports = pm.perturb(values, rng=2)
    >>> np.round(reports[:3], 3)
    array([[ 0.416,  0.   ],
           [ 0.   , -2.173],
           [ 1.24 ,  0.   ]])
    >>> np.round(values.mean(axis=0), 3)
    array([-0.001, -0.001])
    >>> estimate = pm.estimate(reports)
    >>> np.round(estimate.values, 3), np.round(estimate.standard_errors, 3)
    (array([-0.004, -0.012]), array([0.016, 0.016]))

    Below eps / k = 0.01 the grid cannot keep the bins apart:

    >>> ld.mechanisms.Piecewise(0.005)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: epsilon is 0.005; Piecewise needs epsilon / k >= 0.01 per perturbed ...
    """

    family = "piecewise"

    def __init__(self, epsilon: float, d: int = 1, grid: int = DEFAULT_GRID) -> None:
        super().__init__(epsilon, d, grid)
        if self.attribute_epsilon < PIECEWISE_MIN_EPSILON:
            raise ValidationError(f"epsilon is {fmt(epsilon)}; Piecewise needs epsilon / k >= "
                                  f"{PIECEWISE_MIN_EPSILON:g} per perturbed attribute (use Hybrid or Duchi, which "
                                  "have the lower variance there)")

    @classmethod
    def example(cls) -> Self:
        return cls(3.0, 2, grid=16)

    def _perturb_one(self, values, rng):
        return self.piecewise.perturb(values, rng)

    def _variance_one(self, values):
        return self.piecewise.variance(values)

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The per-attribute table Pr[bin | g_i] for the grid inputs, as the sampler realises it.

        Rounding is pre-processing: any input's output distribution is a mixture of these rows. Its exact epsilon
        is eps / k; ``verify`` composes the k sampled attributes.

        Returns
        -------
        numpy.ndarray
            (M + 1) x bins, rows the grid inputs g_i (read-only).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.Piecewise(3.0, grid=16).privacy_table().shape
        (17, 33)
        """
        return self.piecewise.realized_table


class Hybrid(_AttributeSampling):
    """Wang et al.'s Hybrid mechanism (ICDE 2019, docs/math.md §9): above eps* (HYBRID_THRESHOLD, per attribute)
    the finite-output Piecewise mechanism (see ``Piecewise``) with probability alpha = 1 - e^(-eps/2), else the
    one-bit Duchi mechanism (+-c) on t itself; at or below eps* always the one-bit mechanism. Finite output
    space: ``privacy_table`` is verified exactly. With d attributes each user perturbs k of them, as in
    ``Piecewise``.

    Parameters
    ----------
    epsilon : float
        The LDP level of the whole report, in [1e-6, 10]; each of the k sampled attributes gets eps / k.
    d : int, default 1
        The number of attributes, >= 1.
    grid : int, default 256
        The requested input grid M, 2..``MAX_GRID`` (256); the grid used is the smallest M' >= M whose bins are
        all at least a quarter of the spacing wide (``separated_grid``).

    Attributes
    ----------
    attributes : int
        k, the attributes each user perturbs.
    piecewise_probability : float
        alpha, the probability of the Piecewise branch (0 at or below eps*).
    scale : float
        c = (e^(eps/k) + 1)/(e^(eps/k) - 1), the absolute output of the one-bit branch.

    Raises
    ------
    ValidationError
        If epsilon is outside [1e-6, 10] or d or grid is not an integer in its range.

    See Also
    --------
    Piecewise : The Piecewise branch alone.
    Duchi, Laplace, HarmonyNumeric : The other mean estimators of docs/math.md §9.

    Notes
    -----
    Reports: float (n, d), 0 on the attributes a user did not sample; the aggregate holds their sums and sums
    of squares per attribute.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> hybrid = ld.mechanisms.Hybrid(3.0, d=2, grid=16)
    >>> round(hybrid.piecewise_probability, 4), round(hybrid.scale, 4)
    (0.7769, 1.1048)
    >>> certificate = hybrid.verify()
    >>> certificate.passed, round(certificate.epsilon, 6)
    (True, 3.0)
    >>> values = np.random.default_rng(0).uniform(-1, 1, size=(5000, 2))
    >>> estimate = hybrid.estimate(hybrid.perturb(values, rng=2))
    >>> np.round(values.mean(axis=0), 3)
    array([-0.001, -0.001])
    >>> np.round(estimate.values, 3), np.round(estimate.standard_errors, 3)
    (array([-0.019, -0.015]), array([0.018, 0.018]))

    At or below eps* = 0.609 it is the one-bit mechanism alone:

    >>> ld.mechanisms.Hybrid(0.5).piecewise_probability
    0.0
    """

    family = "hybrid"

    def __init__(self, epsilon: float, d: int = 1, grid: int = DEFAULT_GRID) -> None:
        super().__init__(epsilon, d, grid)
        self.piecewise_probability = 1.0 - 1.0 / self.half_exp if self.attribute_epsilon > HYBRID_THRESHOLD \
            else 0.0
        self.scale = one_bit_scale(self.attribute_exp)

    @classmethod
    def example(cls) -> Self:
        return cls(3.0, 2, grid=16)

    def _perturb_one(self, values, rng):
        bit = self.scale * one_bit(values, self.attribute_exp, rng)
        if not self.piecewise_probability:
            return bit
        piecewise = self.piecewise.perturb(values, rng)
        return np.where(rng.random(values.shape) < self.piecewise_probability, piecewise, bit)

    def _variance_one(self, values):
        alpha = self.piecewise_probability
        if not alpha:
            return self.scale**2 - values**2
        return alpha * self.piecewise.variance(values) + (1.0 - alpha) * (self.scale**2 - values**2)

    @cached_property
    def _table(self):
        if not self.piecewise_probability:
            table = one_bit_table(self.attribute_exp)
        else:
            alpha = realized_probability(self.piecewise_probability)  # the branch coin random() < alpha
            bits = one_bit_table(self.attribute_exp, self.piecewise.points)
            table = np.hstack([alpha * self.piecewise.realized_table, (1.0 - alpha) * bits])
        table.setflags(write=False)
        return table

    def privacy_table(self) -> npt.NDArray[np.float64]:
        """The per-attribute table of both branches, as the samplers realise it.

        At or below eps*: ``one_bit_table``. Above: rows g_i (i = 0..M), columns the Piecewise bins then +c,
        -c: [alpha Pr[bin | g_i], (1 - alpha) Pr[+-1 | g_i]], every probability as the samplers realise it.
        Column by column this bounds every input: a bin's probability is alpha times a mixture of the rows'
        (rounding), and the one-bit branch, which runs on t itself, has Pr[+-1 | t] monotone in t, so its
        extremes are the rows t = -1 and +1.

        Returns
        -------
        numpy.ndarray
            2 x 2 at or below eps*, else (M + 1) x (bins + 2) (read-only).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.Hybrid(3.0, grid=16).privacy_table().shape
        (17, 35)
        >>> ld.mechanisms.Hybrid(0.5).privacy_table().shape  # below eps*: the one-bit mechanism alone
        (2, 2)
        """
        return self._table

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()``: the piecewise ones and the one-bit branch
        (docs/runtime.md §8).

        Returns
        -------
        dict
            Those of ``Piecewise.device_numbers``, plus ``exp_epsilon`` (e^(eps/k) as the sampler uses it), the
            one-bit ``scale`` c and ``piecewise_probability`` alpha.
        """
        return {**super().device_numbers(), "exp_epsilon": self.attribute_exp, "scale": self.scale,
                "piecewise_probability": self.piecewise_probability}
