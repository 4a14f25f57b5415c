"""Mean estimation of numeric attributes t in [-1, 1]^d under eps-LDP (MATH §9).

- ``Laplace``: t + Lap(2d/eps) per coordinate (the baseline of Harmony Sec. 3.1).
- ``Duchi``: Duchi et al.'s multidimensional mechanism with Harmony's even-d fix (Alg. 1).
- ``HarmonyNumeric``: Harmony Alg. 2, one randomized bit for one coordinate per user.
- ``Piecewise`` and ``Hybrid``: Wang et al., ICDE 2019, with their attribute sampling for d > 1, made
  finite-output: t is rounded at random to a grid of M + 1 points (``grid``, unbiased), and the Piecewise output
  for a grid point is sampled as one of finitely many bins of constant density plus a point uniform in the bin,
  which reproduces the Piecewise distribution for grid inputs exactly. The float reported given the bin does not
  depend on the input, so the privacy claim is the bin table (``privacy_table``), verified exactly.

Every ``estimate`` is unbiased and every ``variance(values)`` is the exact variance of ``estimate(perturb(values))``
for that population. Numpy only.

Floating-point output: ``Laplace`` reports continuous floating-point numbers. Its eps-LDP guarantee holds in
ideal real arithmetic only; the numpy sampler is not hardened against Mironov's attack (CCS 2012: the set of
doubles a sampler can reach depends on the input, so one output can rule inputs out). It carries
``guarantee = FLOAT_GUARANTEE``; every other mechanism here has a finite privacy table verified exactly.
"""

from __future__ import annotations

import math

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.harmony._base import (
    HarmonyMechanism,
    as_generator,
    implemented_exp,
    integer_parameter,
    one_bit,
    one_bit_scale,
    one_bit_table,
    public_index,
    public_seed,
    realized_probability,
    sign_field,
    structured_reports,
    unit_values,
)
from lipdesign.runtime.perturb import fmt
from lipdesign.validation import float_array

__all__ = [
    "DEFAULT_GRID",
    "DUCHI_MAX_D",
    "FLOAT_GUARANTEE",
    "HYBRID_THRESHOLD",
    "MAX_GRID",
    "PIECEWISE_MIN_EPSILON",
    "REPORT_DTYPE",
    "Duchi",
    "HarmonyNumeric",
    "Hybrid",
    "Laplace",
    "Piecewise",
    "separated_grid",
]

#: Reports of ``HarmonyNumeric``: the coordinate j and the sign of the one bit.
REPORT_DTYPE = np.dtype([("coordinate", "<i4"), ("sign", "i1")])

#: eps* of Wang et al. (ICDE 2019, "~0.61"): the root of (s + 3) / (3 (s - 1)^2) = c^2 with s = e^(eps/2),
#: c = (e^eps + 1) / (e^eps - 1). Above it the PM/Duchi mix of ``Hybrid`` beats Duchi's worst case.
HYBRID_THRESHOLD = 0.6093524930273998

#: The ``guarantee`` of the mechanism with continuous floating-point output (Laplace); see the module docstring.
FLOAT_GUARANTEE = "closed form, ideal real arithmetic (floating-point sampler not hardened)"

#: Largest d of ``Duchi``: its exact parameters use binomial coefficients and 2^d as Python integers, so a huge d
#: (e.g. from a JSON file) would take long to construct; reports of d floats per user are impractical anyway.
DUCHI_MAX_D = 4096

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

#: Users per chunk are chosen so that an (users x d) float temporary has about this many entries.
CHUNK_ENTRIES = 2**20


def _dimension(d):
    return integer_parameter(d, "d")


def _chunks(n, d):
    """Slices of users so that (users x d) temporaries stay near CHUNK_ENTRIES entries."""
    step = max(1, CHUNK_ENTRIES // d)
    return [slice(start, min(start + step, n)) for start in range(0, n, step)]


def _numeric_reports(reports, d):
    """Float reports of shape (n, d) (or (n,) when d == 1), finite."""
    try:
        flat = d == 1 and np.ndim(reports) == 1
    except ValueError:  # ragged nested lists; float_array names the problem
        flat = False
    array = float_array(reports, "reports", 1 if flat else 2)
    array = array.reshape(-1, 1) if flat else array
    if array.shape[1] != d:
        raise ValidationError(f"reports has shape {array.shape}; expected (n, {d}), one report row per user")
    return array


def _check_bound(reports, bound, mechanism):
    """Raise unless every report lies in [-bound, bound] (up to rounding)."""
    outside = np.flatnonzero(np.abs(reports.ravel()) > bound * (1.0 + 1e-9))
    if outside.size:
        row, column = np.unravel_index(outside[0], reports.shape)
        raise ValidationError(f"reports[{row}, {column}] is {fmt(reports[row, column])}; {mechanism} reports lie "
                              f"in [-{bound:.12g}, {bound:.12g}] (reports of another mechanism or epsilon?)")


class Laplace(HarmonyMechanism):
    """t + Lap(2d/eps) per coordinate: the L1 sensitivity of t on [-1, 1]^d is 2d (MATH §9, Harmony Sec. 3.1).

    Reports: float (n, d). Continuous output, so the true eps sets the scale and there is no privacy table.

    The guarantee holds in ideal real arithmetic; the floating-point sampler is not hardened against Mironov's
    attack. For deployment prefer the finite-output HarmonyNumeric or Duchi.
    """

    guarantee = FLOAT_GUARANTEE

    def __init__(self, epsilon, d=1):
        super().__init__(epsilon)
        self.d = _dimension(d)
        self.scale = 2.0 * self.d / self.epsilon

    def parameters(self):
        return {"epsilon": self.epsilon, "d": self.d}

    def perturb(self, values, rng=None):
        values = unit_values(values, self.d)
        return values + as_generator(rng).laplace(0.0, self.scale, values.shape)

    def estimate(self, reports):
        return _numeric_reports(reports, self.d).mean(axis=0)

    def variance(self, values):
        """2 scale^2 / n = 8 d^2 / (eps^2 n) per coordinate, whatever the values."""
        n = unit_values(values, self.d).shape[0]
        return np.full(self.d, 2.0 * self.scale**2 / n)


class Duchi(HarmonyMechanism):
    """Duchi et al.'s mechanism with Harmony's even-d fix (MATH §9, Harmony Alg. 1).

    v_j = +-1 with Pr[v_j = 1] = (1 + t_j) / 2; with probability ``plus_probability`` the output is uniform on
    T+ = {s in {-B, B}^d : s.v > 0}, else uniform on the rest. Every output has probability e^eps / Z or 1 / Z
    given v, and E[s | v] = v. Reports: float (n, d) with entries +-B (``bound``). d <= DUCHI_MAX_D (4096).

    Sampling is exact apart from the Bernoulli draws of v and u (``rng.random() < p``, as in every mechanism
    here): u ~ Bernoulli(plus_probability), then w uniform on {-1, 1}^d from fair bits, redrawn until
    (sum(w) > 0) == u, and s = B w v. Given u, the accepted w is exactly uniform on its half (rejection sampling;
    each round accepts with probability >= 1/4). No floating-point distribution of the agreement count is used,
    so even the rarest outputs (all coordinates agreeing with v, probability ~2^-d) keep their exact probability.
    """

    def __init__(self, epsilon, d=1):
        super().__init__(epsilon)
        self.d = _dimension(d)
        if self.d > DUCHI_MAX_D:
            raise ValidationError(f"d is {self.d}; Duchi needs d <= {DUCHI_MAX_D} (its exact parameters use "
                                  "binomial coefficients of d; use HarmonyNumeric for more coordinates)")
        d, e = self.d, self.exp_epsilon
        # C = |T+|; M = binom(d-1, floor((d-1)/2)); the integer ratios keep every float finite for any d.
        self.plus_count = 2 ** (d - 1) - (math.comb(d, d // 2) // 2 if d % 2 == 0 else 0)
        middle = math.comb(d - 1, (d - 1) // 2)
        self.plus_probability = e / ((e - 1.0) + 2**d / self.plus_count)
        self.bound = (2**d / middle + (self.plus_count / middle) * (e - 1.0)) / (e - 1.0)

    def parameters(self):
        return {"epsilon": self.epsilon, "d": self.d}

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

    def perturb(self, values, rng=None):
        values = unit_values(values, self.d)
        rng = as_generator(rng)
        n, d = values.shape
        reports = np.empty((n, d))
        for rows in _chunks(n, d):
            t = values[rows]
            v = np.where(rng.random(t.shape) < (1.0 + t) / 2.0, 1.0, -1.0)
            plus = rng.random(t.shape[0]) < self.plus_probability
            reports[rows] = self.bound * self._agreements(plus, rng) * v
        return reports

    def estimate(self, reports):
        reports = _numeric_reports(reports, self.d)
        off = np.flatnonzero(np.abs(np.abs(reports.ravel()) - self.bound) > 1e-9 * self.bound)
        if off.size:
            row, column = np.unravel_index(off[0], reports.shape)
            raise ValidationError(f"reports[{row}, {column}] is {fmt(reports[row, column])}; Duchi reports are "
                                  f"+-B = +-{self.bound:.12g} (reports of another mechanism or epsilon?)")
        return reports.mean(axis=0)

    def variance(self, values):
        """sum_i (B^2 - t_ij^2) / n^2 per coordinate (E[s_j^2] = B^2, E[s_j] = t_j)."""
        values = unit_values(values, self.d)
        return (self.bound**2 - values**2).sum(axis=0) / values.shape[0] ** 2

    def privacy_table(self):
        """Rows v = (1,...,1) and -v; columns: the outputs with s.v > 0, < 0 (and = 0 when d is even).

        Within a column every output has the same probability under each row, and every output has
        probability e^eps / Z or 1 / Z under any v, so the table's largest ratio is the mechanism's.
        """
        e = self.exp_epsilon
        if self.d % 2:
            row = np.array([e, 1.0])
        else:
            row = np.array([e, 1.0, math.comb(self.d, self.d // 2) / self.plus_count])
        row = row / row.sum()
        other = row.copy()
        other[[0, 1]] = row[[1, 0]]
        return np.vstack([row, other])

    def full_table(self, max_d=12):
        """(signs, table): ``signs`` lists {-1, 1}^d (int8, 2^d x d); ``table[a, b]`` = Pr[s = B signs[b] | v =
        signs[a]], the whole 2^d x 2^d table, for audits at small d (at most ``max_d``)."""
        if self.d > max_d:
            raise ValidationError(f"d is {self.d}; the full table has 4^d entries, so it is built for d <= {max_d}")
        codes = np.arange(2**self.d)
        signs = np.where((codes[:, None] >> np.arange(self.d)) & 1, 1, -1).astype(np.int8)
        dots = signs.astype(np.int64) @ signs.T.astype(np.int64)
        z = (self.exp_epsilon - 1.0) * self.plus_count + 2**self.d
        return signs, np.where(dots > 0, self.exp_epsilon, 1.0) / z


class HarmonyNumeric(HarmonyMechanism):
    """Harmony Alg. 2 (MATH §9): each user reports one randomized bit (``one_bit``) for one coordinate j.

    ``coordinates="private"``: j is drawn uniformly by the user; the report stands for +-d c in coordinate j and
    ``estimate`` is (1/n) sum of d c sign per coordinate (per-user variance d c^2 - t_j^2).
    ``coordinates="public"``: j = public_index(seed, user_id, d), which the server recomputes from the user id
    (Harmony Sec. 3.2); ``perturb`` then needs ``user_ids`` and ``estimate`` is c (sum of signs) / n_j per
    coordinate, n_j the number of reports for it: given the hashed buckets, unbiased for the mean of t_j over
    bucket j (a hash-chosen subsample of the users). A coordinate nobody reported on is estimated as nan.
    Reports: structured array of REPORT_DTYPE (fields "coordinate" int32 and "sign" int8 in {-1, 1}).
    """

    MODES = ("private", "public")

    def __init__(self, epsilon, d=1, coordinates="private", seed=None):
        super().__init__(epsilon)
        self.d = _dimension(d)
        if coordinates not in self.MODES:
            raise ValidationError(f"coordinates is {coordinates!r}; it must be 'private' (drawn by each user) "
                                  "or 'public' (a hash of the user id)")
        self.coordinates = coordinates
        if coordinates == "private" and seed is not None:
            raise ValidationError(f"seed is {seed!r}; a seed is only used with coordinates='public'")
        self.seed = public_seed(seed) if coordinates == "public" else None
        self.scale = one_bit_scale(self.exp_epsilon)

    def parameters(self):
        return {"epsilon": self.epsilon, "d": self.d, "coordinates": self.coordinates, "seed": self.seed}

    def _public_coordinates(self, n, user_ids):
        """The hashed coordinate of each of n users in public mode; None in private mode."""
        if self.coordinates == "private":
            if user_ids is not None:
                raise ValidationError("user_ids were given but coordinates='private' draws j on the device; "
                                      "use coordinates='public' to derive j from user ids")
            return None
        if user_ids is None:
            raise ValidationError("user_ids is missing; coordinates='public' derives each user's coordinate "
                                  "from its user id")
        ids = np.asarray(user_ids)
        if ids.ndim != 1 or ids.shape[0] != n:
            raise ValidationError(f"user_ids has shape {ids.shape}; expected ({n},), one id per row of values")
        return public_index(self.seed, ids, self.d)

    def perturb(self, values, rng=None, user_ids=None):
        values = unit_values(values, self.d)
        rng = as_generator(rng)
        n = values.shape[0]
        coordinate = self._public_coordinates(n, user_ids)
        if coordinate is None:
            coordinate = rng.integers(0, self.d, n)
        reports = np.empty(n, dtype=REPORT_DTYPE)
        reports["coordinate"] = coordinate
        reports["sign"] = one_bit(values[np.arange(n), coordinate], self.exp_epsilon, rng)
        return reports

    def _reports(self, reports):
        """(coordinate, sign) as int64 vectors from a structured array with exactly the fields of REPORT_DTYPE,
        both of integer dtype."""
        structured_reports(reports, REPORT_DTYPE)
        coordinate = reports["coordinate"]
        bad = np.flatnonzero((coordinate < 0) | (coordinate >= self.d))
        if bad.size:
            raise ValidationError(f"reports['coordinate'][{bad[0]}] is {coordinate[bad[0]]}; coordinates lie in "
                                  f"0..{self.d - 1}")
        return coordinate.astype(np.int64), sign_field(reports)

    def estimate(self, reports):
        coordinate, sign = self._reports(reports)
        sums = np.bincount(coordinate, weights=sign, minlength=self.d)
        if self.coordinates == "private":
            return self.d * self.scale * sums / coordinate.size
        counts = np.bincount(coordinate, minlength=self.d)
        with np.errstate(invalid="ignore"):
            return self.scale * sums / counts

    def expected_estimate(self, values, user_ids=None):
        """E[estimate]: the mean of each coordinate (private), or given the hashed buckets the mean of t_j over
        the users of bucket j (public; nan for an empty bucket)."""
        values = unit_values(values, self.d)
        n = values.shape[0]
        coordinate = self._public_coordinates(n, user_ids)
        if coordinate is None:
            return values.mean(axis=0)
        own = values[np.arange(n), coordinate]
        with np.errstate(invalid="ignore"):
            return np.bincount(coordinate, weights=own, minlength=self.d) / np.bincount(coordinate, minlength=self.d)

    def variance(self, values, user_ids=None):
        """Private: sum_i (d c^2 - t_ij^2) / n^2. Public, given the hashed buckets: sum over the users of bucket
        j of (c^2 - t_ij^2) / n_j^2 (nan for an empty bucket)."""
        values = unit_values(values, self.d)
        n = values.shape[0]
        coordinate = self._public_coordinates(n, user_ids)
        if coordinate is None:
            return (self.d * self.scale**2 - values**2).sum(axis=0) / n**2
        own = values[np.arange(n), coordinate]
        counts = np.bincount(coordinate, minlength=self.d)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.bincount(coordinate, weights=self.scale**2 - own**2, minlength=self.d) / counts**2

    def privacy_table(self):
        return one_bit_table(self.exp_epsilon)


def _piecewise_bound(half_exp):
    """C = (e^(eps/2) + 1) / (e^(eps/2) - 1), the largest |output| of the Piecewise mechanism."""
    return (half_exp + 1.0) / (half_exp - 1.0)


def _piecewise_variance(values, exp_epsilon):
    """t^2 / (e^(eps/2) - 1) + (e^(eps/2) + 3) / (3 (e^(eps/2) - 1)^2): the continuous PM (MATH §9)."""
    half_exp = math.sqrt(exp_epsilon)
    return values**2 / (half_exp - 1.0) + (half_exp + 3.0) / (3.0 * (half_exp - 1.0) ** 2)


def separated_grid(grid, half_exp):
    """The smallest M >= ``grid`` with frac(M / s) in [1/4, 3/4], s = e^(eps/2). The left ends l_i of the PM's
    high-density intervals are spaced (C + 1)/M apart and each right end r_j = l_j + (C - 1) sits a fraction
    frac(M (C - 1)/(C + 1)) = frac(M / s) of a spacing past an l_i, so every bin is at least a quarter spacing
    wide: no sliver bin whose probability the sampler could not resolve."""
    size = grid
    while not 0.25 <= (size / half_exp) % 1.0 <= 0.75:
        size += 1
    return size


class _PiecewiseGrid:
    """The finite-output Piecewise mechanism of one attribute: randomized rounding of t to the grid
    g_i = -1 + 2i/M (i = 0..M), then Wang et al.'s PM at g_i sampled as (bin, uniform point in the bin).

    M is ``separated_grid`` of the requested grid. Bin edges: the sorted union of -C, C and every l_i, r_i (as
    computed floats, exact duplicates removed), so
    each bin lies inside or outside [l_i, r_i] for every i: the PM density is constant on it under every grid
    input, Pr[bin | g_i] = density x width, and edge + U width given the bin reproduces the PM exactly
    (E[output | g_i] = g_i). The float output given the bin does not depend on the input, so the privacy of
    the sampler is that of the (M + 1) x bins table it realises, ``realized_table`` (rows: grid inputs): the bins
    are drawn by alias tables (lipdesign.runtime.TablePerturber), whose exact output distribution, including
    the resolution of numpy's uniforms, is what ``privacy_table`` returns and ``verify`` checks. The rounding
    is pre-processing: any input's output distribution is a mixture of the rows. The point in the bin,
    edge + U width, is rounded to a double, but that rounding is the same for every input.
    """

    def __init__(self, exp_epsilon, grid):
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
        self._sampler = None

    @property
    def sampler(self):
        if self._sampler is None:
            from lipdesign.runtime import TablePerturber

            self._sampler = TablePerturber(self.table)
        return self._sampler

    def round(self, values, rng):
        """Grid indices i with E[g_i] = t: i = floor((t + 1) M / 2) (at most M - 1), plus 1 with probability
        equal to the fractional part."""
        position = (np.asarray(values, dtype=float) + 1.0) * (self.grid / 2.0)
        low = np.minimum(np.floor(position), self.grid - 1)
        return low.astype(np.int64) + (rng.random(position.shape) < position - low)

    def rounding_variance(self, values):
        """Var of g under the randomized rounding: (g_{i+1} - t)(t - g_i), computed as the sampler rounds."""
        position = (np.asarray(values, dtype=float) + 1.0) * (self.grid / 2.0)
        fraction = position - np.minimum(np.floor(position), self.grid - 1)
        return fraction * (1.0 - fraction) * (2.0 / self.grid) ** 2

    def realized_table(self):
        """The (M + 1) x bins table the alias sampler realises exactly (TablePerturber.realized_table)."""
        return self.sampler.realized_table()

    def sample_bins(self, indices, rng):
        return self.sampler.perturb(indices, rng)

    def outputs(self, bins, rng):
        """A point uniform in each bin: edge + U width (the same float for the same bin and U, whatever the
        input)."""
        return self.edges[bins] + rng.random(np.shape(bins)) * self.widths[bins]

    def perturb(self, values, rng):
        return self.outputs(self.sample_bins(self.round(values, rng), rng), rng)

    def variance(self, values):
        """Var_PM(t) + rv(t) s / (s - 1): E over rounding of Var_PM(g) is Var_PM(t) + rv / (s - 1) (Var_PM is
        t^2 / (s - 1) + const), plus the variance rv of g itself."""
        return _piecewise_variance(values, self.exp_epsilon) + \
            self.rounding_variance(values) * (self.half_exp / (self.half_exp - 1.0))


class _AttributeSampling(HarmonyMechanism):
    """Wang et al.'s extension to d attributes: each user perturbs k = max(1, min(d, floor(eps / 2.5)))
    attributes drawn uniformly without replacement, each with eps / k, scaled by d / k; the others report 0.
    The attribute subset is drawn independently of the data, so sequential composition gives eps-LDP from the
    per-attribute table (``privacy_table``, verified at eps / k; ``verify`` reports k times its epsilon).
    Reports: float (n, d). ``grid`` (M, 2..MAX_GRID): the input grid of the finite-output Piecewise part."""

    def __init__(self, epsilon, d=1, grid=DEFAULT_GRID):
        super().__init__(epsilon)
        self.d = _dimension(d)
        self.grid = integer_parameter(grid, "grid", low=2, high=MAX_GRID)
        self.attributes = max(1, min(self.d, math.floor(self.epsilon / 2.5)))
        self.attribute_epsilon = self.epsilon / self.attributes
        self.attribute_exp = implemented_exp(self.attribute_epsilon)
        self.half_exp = math.sqrt(self.attribute_exp)
        self.bound = _piecewise_bound(self.half_exp)
        self._piecewise_grid = None

    @property
    def piecewise(self):
        """The finite-output Piecewise mechanism of one attribute at eps / k (built on first use)."""
        if self._piecewise_grid is None:
            self._piecewise_grid = _PiecewiseGrid(self.attribute_exp, self.grid)
        return self._piecewise_grid

    def parameters(self):
        return {"epsilon": self.epsilon, "d": self.d, "grid": self.grid}

    def perturb(self, values, rng=None):
        values = unit_values(values, self.d)
        rng = as_generator(rng)
        n, d = values.shape
        k = self.attributes
        reports = np.zeros((n, d))
        for rows in _chunks(n, d):
            count = rows.stop - rows.start
            chosen = np.argpartition(rng.random((count, d)), k - 1, axis=1)[:, :k]
            users = np.arange(rows.start, rows.stop)[:, None]
            reports[users, chosen] = (d / k) * self._perturb_one(values[users, chosen], rng)
        return reports

    def estimate(self, reports):
        reports = _numeric_reports(reports, self.d)
        _check_bound(reports, self.d / self.attributes * self.bound, type(self).__name__)
        return reports.mean(axis=0)

    def variance(self, values):
        """sum_i [(d/k) (Var_1D(t_ij; eps/k) + t_ij^2) - t_ij^2] / n^2 per coordinate."""
        values = unit_values(values, self.d)
        scale = self.d / self.attributes
        per_user = scale * (self._variance_one(values) + values**2) - values**2
        return per_user.sum(axis=0) / values.shape[0] ** 2

    def verify(self):
        """Exact certificate: the per-attribute table verified exactly at eps / k, its certified epsilon times
        k (rounded up) against the claim eps (sequential composition over the k sampled attributes)."""
        from lipdesign.notions import LDP
        from lipdesign.verification import Certificate, verify

        single = verify(self.privacy_table(), LDP(self.attribute_epsilon), exact=True)
        epsilon = single.epsilon
        if self.attributes > 1:
            epsilon = math.nextafter(self.attributes * single.epsilon, math.inf)
        worst = dict(single.worst, attributes=self.attributes, attribute_epsilon=single.epsilon)
        passed = bool(single.passed) and epsilon <= self.epsilon
        return Certificate("LDP", self.epsilon, epsilon, passed, True, worst)


class Piecewise(_AttributeSampling):
    """Wang et al.'s Piecewise mechanism (ICDE 2019, MATH §9) with a finite output space: t is rounded at
    random to the grid g_i = -1 + 2i/M (unbiased), then the PM output for g_i (density e^(eps/2)(e^(eps/2) -
    1) / (2 (e^(eps/2) + 1)) on [l(g_i), r(g_i)], e^-eps times that elsewhere on [-C, C]) is sampled exactly as
    a bin of constant density (alias table) and a point uniform in it. Unbiased; variance Var_PM(t) + (g_{i+1}
    - t)(t - g_i) e^(eps/2) / (e^(eps/2) - 1) per attribute, at most (1/M)^2 e^(eps/2)/(e^(eps/2) - 1) above
    the continuous PM's. M is the requested ``grid`` raised to ``separated_grid``. The output given its bin
    does not depend on the input, so ``privacy_table`` (grid inputs x bins, as realised) is the whole privacy
    claim, verified exactly. Needs eps / k >= PIECEWISE_MIN_EPSILON.
    """

    def __init__(self, epsilon, d=1, grid=DEFAULT_GRID):
        super().__init__(epsilon, d, grid)
        if self.attribute_epsilon < PIECEWISE_MIN_EPSILON:
            raise ValidationError(f"epsilon is {epsilon!r}; Piecewise needs epsilon / k >= "
                                  f"{PIECEWISE_MIN_EPSILON:g} per perturbed attribute (use Hybrid or Duchi, which "
                                  "have the lower variance there)")

    def _perturb_one(self, values, rng):
        return self.piecewise.perturb(values, rng)

    def _variance_one(self, values):
        return self.piecewise.variance(values)

    def privacy_table(self):
        """(M + 1) x bins: Pr[bin | g_i] for the grid inputs as the sampler realises it (rounding is
        pre-processing: any input's output distribution is a mixture of these rows)."""
        return self.piecewise.realized_table()


class Hybrid(_AttributeSampling):
    """Wang et al.'s Hybrid mechanism (ICDE 2019, MATH §9): above eps* (HYBRID_THRESHOLD, per attribute) the
    finite-output Piecewise mechanism (see ``Piecewise``) with probability alpha = 1 - e^(-eps/2), else the
    one-bit Duchi mechanism (+-c) on t itself; at or below eps* always the one-bit mechanism. Finite output
    space: ``privacy_table`` is verified exactly.
    """

    def __init__(self, epsilon, d=1, grid=DEFAULT_GRID):
        super().__init__(epsilon, d, grid)
        self.piecewise_probability = 1.0 - 1.0 / self.half_exp if self.attribute_epsilon > HYBRID_THRESHOLD \
            else 0.0
        self.scale = one_bit_scale(self.attribute_exp)

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

    def privacy_table(self):
        """At or below eps*: ``one_bit_table``. Above: rows g_i (i = 0..M), columns the Piecewise bins then +c,
        -c: [alpha Pr[bin | g_i], (1 - alpha) Pr[+-1 | g_i]], every probability as the samplers realise it.
        Column by column this bounds every input: a bin's probability is alpha times a mixture of the rows'
        (rounding), and the one-bit branch, which runs on t itself, has Pr[+-1 | t] monotone in t, so its
        extremes are the rows t = -1 and +1."""
        if not self.piecewise_probability:
            return one_bit_table(self.attribute_exp)
        alpha = realized_probability(self.piecewise_probability)  # the branch coin random() < alpha
        bits = one_bit_table(self.attribute_exp, self.piecewise.points)
        return np.hstack([alpha * self.piecewise.realized_table(), (1.0 - alpha) * bits])
