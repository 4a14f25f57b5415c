"""The weights of a design over given columns (docs/math.md §5, §11): the criterion each objective minimises, the
column-generation loop that adds columns a pricer finds, and the tables the weights make.

With columns r normalised to P . r = 1, a table is sum_r w_r r with sum_r w_r r = 1 (the row sums), and its Fisher
information is M(w) = sum_r w_r r r^T. ``Criterion`` minimises tr(M(w)^-1) (``Frequencies``) or c^T M(w)^+ c
(``Mean``) over the weights by the barrier method of ``_solvers.design_weights`` (cvxpy with Clarabel as the fallback)
and prices columns for the equivalence theorem; ``column_generation`` adds the columns a pricer (``RayPricer`` over
enumerated rays, or a slice's, ``designer.columns``) finds until none would improve the design; ``population_table``
is the exact design over enumerated rays with its dual bound, ``ray_lp_table`` the Bayesian objectives' ray LP.
"""

import warnings

import numpy as np
from scipy.optimize import linprog

from lipdesign._solvers.design_weights import design_weights
from lipdesign._solvers.ray_lp import solve_ray_lp
from lipdesign._solvers.slices import prices
from lipdesign.designer.repair import polished
from lipdesign.errors import InfeasibleError, SolverError, ValidationError
from lipdesign.objectives import gains

#: In a population design, a weight below this fraction of the largest is the barrier's noise, not a column.
WEIGHT_FLOOR = 1e-10

#: In a ray LP (Bayesian objectives), a weight below this fraction of the largest is the simplex's noise, not a
#: column.
LP_WEIGHT_FLOOR = 1e-13

#: Clarabel's gap and feasibility tolerances (its default 1e-8 leaves a gap of about 1e-5 in the design).
SOLVER_TOLERANCE = 1e-10

#: The barrier's duality gap, relative to the objective, at which a weight problem counts as solved.
BARRIER_TOLERANCE = 1e-11

#: Largest k whose weight problem falls back to cvxpy and Clarabel when the barrier does not converge.
MAX_FALLBACK_K = 32

#: A ray enters the restricted problem when its price exceeds the columns' in use by more than this, relatively.
PRICE_SLACK = 1e-9

#: In A-optimal designs, columns whose weight is below this fraction of the largest leave the restricted problem
#: (the barrier keeps every weight positive, so the unused ones sit near its final 1/t).
KEEP_FLOOR = 1e-10

#: Rounds of column generation over enumerated rays at most (each adds up to 2k rays; the loop ends when no ray
#: prices above the columns in use, long before this in every test).
RAY_ROUNDS = 200

#: Rays added per round, per value of the prior.
CANDIDATES = 2


class Criterion:
    """What the weight problem minimises over the rays: tr(M^-1) (A-optimal, ``values`` None) or c^T M^-1 c
    (c-optimal, c = ``values``), with the prices and the dual bound of the equivalence theorem (docs/math.md §11)."""

    def __init__(self, values=None):
        self.values = None if values is None else np.asarray(values, dtype=float)

    def solve(self, rays, start=None, tolerance=BARRIER_TOLERANCE):
        """(weights, multipliers, solver) over ``rays``; ``multipliers`` are those of the row-sum equations, which
        give the y of the dual bound. The barrier method of ``_solvers.design_weights`` first (from ``start``, a
        feasible w, when given, to a duality gap of ``tolerance`` times the objective); cvxpy (tr_inv, or a Schur
        complement for c) with Clarabel if it does not converge, up to k = MAX_FALLBACK_K (its semidefinite program
        has a 2k x 2k block; past that the barrier's last feasible point is kept, or SolverError)."""
        result = design_weights(rays, self.values, start=start, tolerance=tolerance)
        if result.converged:
            return result.weights, result.multipliers, "barrier Newton (_solvers.design_weights)"
        if rays.shape[1] > MAX_FALLBACK_K:
            if (result.weights >= 0).all() and np.abs(rays.T @ result.weights - 1).max() < 1e-8:
                return result.weights, result.multipliers, "barrier Newton (stopped before its tolerance)"
            raise SolverError(f"the weight problem over {len(rays)} columns found no feasible point (k = "
                              f"{rays.shape[1]} is past the semidefinite fallback's MAX_FALLBACK_K = "
                              f"{MAX_FALLBACK_K})")
        import cvxpy as cp

        weights = cp.Variable(len(rays), nonneg=True)
        information = rays.T @ cp.diag(weights) @ rays
        row_sums = rays.T @ weights == 1
        constraints = [row_sums]
        target: cp.Expression
        if self.values is None:
            target = cp.tr_inv(information)
        else:  # t >= c^T M^+ c by the Schur complement, which holds at a singular optimum too
            target = cp.Variable()
            vector = self.values[:, None]
            constraints.append(cp.bmat([[cp.reshape(target, (1, 1), order="C"), vector.T],
                                        [vector, information]]) >> 0)
        problem = cp.Problem(cp.Minimize(target), constraints)
        with warnings.catch_warnings():  # an inaccurate solve is reported by its status and judged by the dual bound
            warnings.simplefilter("ignore", UserWarning)
            kind = "A-optimal" if self.values is None else "c-optimal"
            try:
                problem.solve(solver=cp.CLARABEL, tol_gap_abs=SOLVER_TOLERANCE, tol_gap_rel=SOLVER_TOLERANCE,
                              tol_feas=SOLVER_TOLERANCE)
            except cp.error.SolverError as error:
                raise SolverError(f"the {kind} weight problem over {len(rays)} rays failed in Clarabel "
                                  f"({error})") from None
        if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or weights.value is None:
            raise SolverError(f"the {kind} weight problem over {len(rays)} rays ended {problem.status}")
        solver = f"cvxpy {'tr_inv' if self.values is None else 'Schur complement'}, Clarabel ({problem.status})"
        return np.maximum(weights.value, 0.0), np.asarray(row_sums.dual_value, dtype=float), solver

    def needs_full_rank(self):
        return self.values is None

    def value(self, information):
        """tr(M^-1) (A) or c^T M^+ c (c)."""
        if self.values is None:
            return float(np.trace(np.linalg.inv(information)))
        return float(self.values @ np.linalg.pinv(information, rcond=1e-12, hermitian=True) @ self.values)

    def quadratic(self, information):
        """(Z, start): the Z of the dual bound, M^-2 (A) or z z^T with z = M^+ c (c), and the value 2 tr M^-1 (A) or
        2 c^T M^+ c (c) that the bound starts from."""
        if self.values is None:
            inverse = np.linalg.inv(information)
            return inverse @ inverse, 2 * np.trace(inverse)
        direction = np.linalg.pinv(information, rcond=1e-12, hermitian=True) @ self.values
        return np.outer(direction, direction), 2 * direction @ self.values

    def prices(self, rays, information, y):
        """r^T Z r + y . r for every ray (``quadratic``), and the value that the dual bound starts from."""
        quadratic, start = self.quadratic(information)
        return prices(rays, quadratic, y), start

    def dual_bound(self, rays, information, multipliers):
        """(bound, y): the equivalence-theorem bound on tr(M^-1) or c^T M^-1 c over every table of the cone: for any
        Z >= 0 (z) and y, 2 tr Z^(1/2) + 1 . y - max_r (r^T Z r + y . r), or 2 z . c + 1 . y - max_r ((r . z)^2 +
        y . r); exact when ``rays`` are all the extreme rays, here at Z = M^-2 (z = M^+ c) and y = -+ the
        multipliers of the row-sum equations (every y gives a valid bound, so the better sign is kept)."""
        best = None
        for y in (multipliers, -multipliers):
            values, start = self.prices(rays, information, y)
            bound = float(start + y.sum() - values.max())
            if best is None or bound > best[0]:
                best = (bound, y)
        return best

    def best_dual_bound(self, rays, information):
        """The dual bound at Z = M^-2 (z = M^+ c) with the best y for that Z, from the LP
        max 1 . y - s  s.t.  r^T Z r + y . r <= s for every ray (HiGHS); None if the LP fails."""
        base, start = self.prices(rays, information, np.zeros(rays.shape[1]))
        k = rays.shape[1]
        result = linprog(np.r_[-np.ones(k), 1.0], A_ub=np.hstack([rays, -np.ones((len(rays), 1))]), b_ub=-base,
                         bounds=[(None, None)] * (k + 1), method="highs")
        if result.status != 0:
            return None
        y = result.x[:k]
        return float(start + y.sum() - (base + rays @ y).max())  # recomputed: the LP's own tolerance does not count


def ray_start(rays, prior):
    """The first columns: a feasible basis (the MMSE optimum's rays, from the ray LP), the ray that says most about
    each value (largest r_x / sum(r)), and the 2k most informative rays (largest |r|^2), so that M is invertible."""
    k = rays.shape[1]
    basis = np.flatnonzero(solve_ray_lp(rays, gains(rays, prior, "histogram")).weights > 0)
    tests = np.argmax(rays / rays.sum(axis=1, keepdims=True), axis=0)
    informative = np.argsort((rays**2).sum(axis=1))[::-1][: 2 * k]
    return rays[np.union1d(np.union1d(basis, tests), informative)]


class RayPricer:
    """Pricing over enumerated extreme rays: every ray's price is computed."""

    def __init__(self, rays):
        self.rays = rays

    def candidates(self, quadratic, linear, level, columns=None):
        """The rays whose price r^T Z r + y . r exceeds ``level``, best first (every ray is priced, so the columns
        in use are not needed)."""
        values = prices(self.rays, quadratic, linear)
        better = np.flatnonzero(values > level + PRICE_SLACK * abs(level))
        return self.rays[better[np.argsort(values[better])[::-1]]]

    def informative(self, count):
        """The ``count`` rays of largest |r|^2, for a restricted problem whose columns do not yet see every value."""
        return self.rays[np.argsort((self.rays**2).sum(axis=1))[::-1][:count]]


def new_rows(columns, candidates, decimals=12):
    """The rows of ``candidates`` that are not (after rounding) rows of ``columns`` or earlier candidates."""
    seen = {row.tobytes() for row in np.round(columns, decimals)}
    fresh = []
    for index, row in enumerate(np.round(candidates, decimals)):
        key = row.tobytes()
        if key not in seen:
            seen.add(key)
            fresh.append(index)
    return candidates[fresh]


def column_generation(columns, criterion, pricer, *, max_rounds=RAY_ROUNDS, tolerance=BARRIER_TOLERANCE, done=None,
                      progress=None, keep_floor=KEEP_FLOOR, max_columns=None):
    """(columns, weights, multipliers, solver, rounds, ended): the restricted weight problem solved on
    ``columns``, priced by ``pricer`` (``RayPricer`` or a slice's), and the best candidates added, until no candidate
    would improve the design (``ended`` "converged"), ``done(value)`` returns a reason to stop (``ended`` that
    reason), or ``max_rounds`` rounds have run (``ended`` "budget"). The columns that carry weight stay, all of them for
    a c-optimal design (whose optimum may need tiny weights; dropping them made the rounds cycle), so the restricted
    optimum only improves; the last optimum is a feasible start of the next round. ``progress(round, columns, value)``
    hears about each round; A-optimal columns whose weight is below ``keep_floor`` times the largest leave the
    restricted problem, and so do the lightest past ``max_columns`` (None: no cap)."""
    k = columns.shape[1]
    previous, ended = None, "budget"
    for rounds in range(1, max_rounds + 1):
        weights, multipliers, status = criterion.solve(columns, previous, tolerance)
        information = columns.T @ (weights[:, None] * columns)
        full_rank = not criterion.needs_full_rank() or np.linalg.matrix_rank(information) == k
        if full_rank:
            _, y = criterion.dual_bound(columns, information, multipliers)
            column_prices, _ = criterion.prices(columns, information, y)
            value = criterion.value(information)
            if progress is not None:
                progress(rounds, len(columns), value)
            reason = None if done is None else done(value)
            if reason:
                ended = reason
                break
            used = weights > WEIGHT_FLOOR * weights.max()
            candidates = pricer.candidates(criterion.quadratic(information)[0], y, column_prices[used].max(),
                                           columns[used])
        else:  # the columns cannot see every value yet
            candidates = pricer.informative(4 * k)
        floor = keep_floor * weights.max() if criterion.needs_full_rank() else 0.0
        kept = weights > floor
        if max_columns is not None and kept.sum() > max_columns - k * CANDIDATES:
            kept = weights >= np.sort(weights)[::-1][max_columns - k * CANDIDATES - 1]
        # a column kept in the problem may price a hair above the level (the barrier stops short of the optimum)
        fresh = new_rows(columns[kept], candidates)[: k * CANDIDATES]
        if not len(fresh):
            ended = "converged" if full_rank else "budget"
            break
        columns = np.concatenate([columns[kept], fresh])
        previous = np.concatenate([weights[kept], np.zeros(len(fresh))])
    else:  # the rounds ran out: solve on the columns gathered
        weights, multipliers, status = criterion.solve(columns, previous, tolerance)
    return columns, weights, multipliers, status, rounds, ended


def basic_weights(rays, weights):
    """A basic (sparse) w >= 0 with sum_r w_r r r^T equal to that of ``weights``, on the rays ``weights`` uses
    (Caratheodory: a vertex of that LP has at most k(k+1)/2 of them; HiGHS dual simplex)."""
    k = rays.shape[1]
    support = np.flatnonzero(weights > 0)
    rows, columns = np.triu_indices(k)
    moments = (rays[support][:, rows] * rays[support][:, columns]).T  # vech(r r^T) per ray
    result = linprog(np.zeros(support.size), A_eq=moments, b_eq=moments @ weights[support], bounds=(0, None),
                     method="highs-ds")
    if result.status != 0:
        return weights
    sparse = np.zeros_like(weights)
    sparse[support] = np.maximum(result.x, 0.0)
    return sparse


def centred_values(values, prior):
    """(c - (c . P) 1) / s with s the largest |entry| (the figure of a mean is unchanged by the shift and scales with
    s^2, docs/math.md §11), and s; ValidationError when every value is the same (the mean is then known)."""
    values = np.asarray(values, dtype=float)
    centred = values - values @ prior.probabilities
    scale = float(np.abs(centred).max())
    if not scale > 1e-12 * max(1.0, float(np.abs(values).max())):
        raise ValidationError("objective.values are all equal; the mean of a constant is known without any report")
    return centred / scale, scale


def scaled_objective(prior, objective):
    """(c, offset, scale) of an objective on the scale its programs are solved at: the figure is (c^T M^+ c -
    offset) scale^2 with c the centred, scaled values (``centred_values``) for a mean; c = None, offset 1, scale 1
    (tr(M^-1) - 1) for the histogram."""
    if objective.kind != "mean":
        return None, 1.0, 1.0
    values, scale = centred_values(objective.values, prior)
    return values, float(prior.probabilities @ values**2), scale


def population_table(rays, prior, objective):
    """(table, info): the A-optimal (``Frequencies``) or c-optimal (``Mean``) table of the cone whose extreme rays are
    ``rays`` (one per row), at ``prior``; ``info["lower_bounds"]`` holds the dual bound on the objective's figure."""
    p = prior.probabilities
    rays = rays / (rays @ p)[:, None]
    values, offset, scale = scaled_objective(prior, objective)
    criterion = Criterion(values)
    columns, weights, multipliers, status, _, _ = column_generation(ray_start(rays, p), criterion, RayPricer(rays))
    information = columns.T @ (weights[:, None] * columns)
    table = weights_table(columns, basic_weights(columns, weights))
    bounds = [criterion.dual_bound(rays, information, multipliers)[0], criterion.best_dual_bound(rays, information)]
    bound = (max(b for b in bounds if b is not None) - offset) * scale**2
    info = {"solver": status, "rays": len(rays), "columns": table.shape[1],
            "lower_bounds": {"dual (equivalence theorem over the enumerated rays)": bound}}
    return table, info


def weights_table(columns, weights):
    """The table whose columns are w_r r over the weights that carry weight, rows normalised (docs/math.md §11)."""
    used = weights > WEIGHT_FLOOR * weights.max()
    table = polished(weights[used], columns[used]) * columns[used].T
    return table / table.sum(axis=1, keepdims=True)


def ray_lp_table(prior, notion, objective, enumerated):
    """(table, info): the ray LP of docs/math.md §5 (the GLOBAL optimum of a Bayesian objective) over the
    enumerated ``(rays, description)``, its columns ordered by the value each says most about."""
    rays, method = enumerated
    result = solve_ray_lp(rays, gains(rays, prior.probabilities, objective))
    if result.status != "optimal":
        raise InfeasibleError(f"the ray LP for {notion.kind} eps={notion.epsilon:g} found no table: {result.message}")
    used = result.weights > LP_WEIGHT_FLOOR * result.weights.max()
    table = polished(result.weights[used], rays[used]) * rays[used].T
    table /= table.sum(axis=1, keepdims=True)
    order = np.lexsort((-table.max(axis=0), table.argmax(axis=0)))
    info = {"method": f"extreme-ray LP, {method}", "solver": "HiGHS dual simplex", "rays": len(rays),
            "lp_objective": result.objective}
    return table[:, order], info
