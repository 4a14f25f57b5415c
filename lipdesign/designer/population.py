"""Designs for the population estimate: the A-optimal and c-optimal tables over the extreme rays, and the lower
bounds that certify them (docs/math.md §11).

With the rays r of the notion's column cone normalised to P . r = 1, a table with columns w_r r has Fisher information
M(w) = sum_r w_r r r^T and row sums sum_r w_r r; splitting a column into rays never loses information, so

    minimise tr(M(w)^-1)  (or c^T M(w)^+ c for a mean)   subject to   sum_r w_r r = 1,  w >= 0

is the exact design problem, and it is convex. Column generation solves it, each restricted problem by the barrier
method of ``solvers.design_weights`` (cvxpy with Clarabel as the fallback). The result is certified by the dual bound
of the equivalence theorem, 2 tr Z^(1/2) + 1 . y - max_r (r^T Z r + y . r) <= tr(M^-1) for every Z >= 0 and y, at
Z = M*^-2 (exact over the enumerated rays), beside the per-bin, contraction and relaxation bounds where they apply;
the weights are then reduced to a basic solution of the moment equations M(w) = M* (at most k(k+1)/2 columns).
"""

import math
import warnings

import numpy as np
from scipy.optimize import linprog

from lipdesign.designer.repair import polished
from lipdesign.errors import SolverError, ValidationError
from lipdesign.notions import LDP, WorstCaseLIP
from lipdesign.objectives import gains
from solvers.design_weights import design_weights
from solvers.ray_lp import solve_ray_lp
from solvers.slices import prices

#: A weight below this fraction of the largest is solver noise, not a column.
WEIGHT_FLOOR = 1e-10

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

#: Rounds of column generation at most (each adds up to 2k rays).
MAX_ROUNDS = 200

#: Rays added per round, per value of the prior.
CANDIDATES = 2


def per_bin_variance(p, epsilon, notion):
    """n Var of the best unbiased estimate of 1[X = b] from any eps-LIP (``notion`` LIP without a secret) or eps-LDP
    mechanism, users drawn i.i.d. (the binary channel of docs/math.md §6 and §11), for each prior entry p."""
    e = math.exp(epsilon)
    p = np.asarray(p, dtype=float)
    if isinstance(notion, (LDP, WorstCaseLIP)):
        return (p * e + 1 - p) * (p + (1 - p) * e) / (e - 1) ** 2
    q = np.minimum(p, 1 - p)
    rare = q <= 1 / (1 + e)
    return np.where(rare, e * (1 - q) ** 2, e**2 * q * (1 - q)) / (e - 1) ** 2


#: The name of ``per_bin_bound`` in bound tables.
PER_BIN = "per-bin (Cramer-Rao, docs/math.md §11)"

#: The name of ``bayes_histogram_bound`` in bound tables.
PER_BIN_BAYES = "per-bin binary optimum (docs/math.md §10)"


def bayes_histogram_bound(prior, epsilon):
    """LB(P, eps) = sum_b binMSE(P_b, eps) (docs/math.md §10): every eps-LIP mechanism for X (so every eps-LDP one) is
    eps-LIP for each indicator 1[X = b], whose MSE from any observation is at least the §6 binary optimum:
    binMSE = q - q^2 (e^(2 eps) + e^-eps)/(1 + e^eps) if q = min(p, 1 - p) <= 1/(1 + e^eps), else
    q (1 - q) e^-eps (2 - e^-eps). A lower bound on the per-user histogram MSE of any estimate at the prior."""
    q = np.minimum(prior.probabilities, 1 - prior.probabilities)
    e = math.exp(epsilon)
    small = q - q**2 * (e**2 + 1 / e) / (1 + e)
    large = q * (1 - q) / e * (2 - 1 / e)
    return float(np.where(q <= 1 / (1 + e), small, large).sum())


def per_bin_bound(prior, notion):
    """The per-bin lower bound on n x the sum of the variances given the users' values (docs/math.md §11), or None
    where it does not apply (a latent secret: X itself may be released freely)."""
    if getattr(notion, "secret", None) is not None:
        return None
    p = prior.probabilities
    return float(per_bin_variance(p, notion.epsilon, notion).sum() - (1.0 - p @ p))


#: The relaxation SDP's optimum is stepped down by this fraction (of the trace) before it is used as a bound.
RELAXATION_STEP = 1e-5

#: Largest k of the relaxation SDP (a 2k x 2k semidefinite constraint; about 30 s at k = 32, docs/math.md §11).
MAX_RELAXATION_K = 32

#: Most cone rows whose pairwise products the relaxation SDP takes with a latent secret (MAX_RELAXATION_ROWS^2
#: inequalities; 128 is worst-case LIP for a binary secret at k = 32).
MAX_RELAXATION_ROWS = 128


def relaxation_bound(prior, notion, objective):
    """The relaxation SDP of docs/math.md §11 (None above MAX_RELAXATION_K, or with more than MAX_RELAXATION_ROWS
    cone rows): minimise the figure over matrices X >= M^-1 where M has M P = 1 and the averaged products of the
    constraints every slice point meets (RLT inequalities). For X itself these are the box constraints
    a <= s_i <= e of every eps-LIP column (the diagonal cap among them), and X also meets the per-bin bounds and the
    contraction X >= P P^T + (diag P - P P^T)/(1 - e^-eps)^2 (histogram), or t >= c^T M^+ c with the contraction
    bound on t (mean): every eps-LIP (so every eps-LDP, BP-LIP and WC-LIP) mechanism at P gives a feasible point.
    With a latent secret they are the products of the notion's rows A and of r >= 0 (M >= 0, A M >= 0,
    A M A^T >= 0, docs/math.md §12), and no per-bin or contraction bound applies."""
    import cvxpy as cp

    k, plain = prior.k, getattr(notion, "secret", None) is None
    if k > MAX_RELAXATION_K:
        return None
    p, e = prior.probabilities, math.exp(notion.epsilon)
    a = 1.0 / e
    information = cp.Variable((k, k), symmetric=True)
    constraints = [information @ p == 1]
    if plain:
        constraints += [
            information <= e + a - 1,  # (s_i - a)(e - s_j) >= 0 averaged with the weights P . q_y
            information >= max(2 * a - a**2, 2 * e - e**2),  # (s_i - a)(s_j - a) >= 0 and (e - s_i)(e - s_j) >= 0
        ]
    else:
        rows = notion.constraint_rows(prior)
        if len(rows) > MAX_RELAXATION_ROWS:
            return None
        rows = rows / np.abs(rows).max(axis=1, keepdims=True)
        products = cp.Variable((len(rows), k))  # A M, so that A M A^T costs rows^2 k terms, not rows^2 k^2
        constraints += [information >= 0, products == rows @ information, products >= 0, products @ rows.T >= 0]
    values, offset, scale = _scaled(prior, objective)
    if values is not None:  # M may be singular: bound t >= c^T M^+ c through the Schur complement
        target = cp.Variable()
        constraints.append(cp.bmat([[cp.reshape(target, (1, 1), order="C"), values[None, :]],
                                    [values[:, None], information]]) >> 0)
        if plain:
            constraints.append(target >= offset / (1 - a) ** 2)
    else:
        inverse = cp.Variable((k, k), symmetric=True)
        constraints.append(cp.bmat([[inverse, np.eye(k)], [np.eye(k), information]]) >> 0)
        if plain:
            sigma = np.diag(p) - np.outer(p, p)
            constraints += [inverse - np.outer(p, p) - sigma / (1 - a) ** 2 >> 0,
                            cp.diag(inverse) >= per_bin_variance(p, notion.epsilon, notion) + p**2]
        target = cp.trace(inverse)
    problem = cp.Problem(cp.Minimize(target), constraints)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            problem.solve(solver=cp.CLARABEL, tol_gap_abs=SOLVER_TOLERANCE, tol_gap_rel=SOLVER_TOLERANCE,
                          tol_feas=SOLVER_TOLERANCE)
        except cp.error.SolverError:  # a bound is optional: the design keeps its others
            return None
    if problem.status != cp.OPTIMAL:
        return None
    # Clarabel's optimum is within its tolerances of the true one; step down by well over them (relative to the
    # trace, about 1: with a figure tr - 1 of 1e-3, at eps = 8, a step of 1e-7 had left the bound above the optimum)
    return (float(problem.value) * (1 - RELAXATION_STEP) - offset) * scale**2


def lower_bounds(prior, notion, objective, relaxation=True):
    """The valid lower bounds on the figure of ``objective`` over every mechanism of ``notion`` at ``prior``, by name
    (docs/math.md §11): per-bin (histogram), contraction (mean), the uniform-prior optimum, and the relaxation SDP
    unless ``relaxation`` is False."""
    bounds = {}
    plain = getattr(notion, "secret", None) is None
    if objective.kind == "frequencies":
        per_bin = per_bin_bound(prior, notion)
        if per_bin is not None:
            bounds[PER_BIN] = per_bin
        uniform = np.ptp(prior.probabilities) == 0
        if uniform and (isinstance(notion, LDP) or plain and getattr(notion, "prior_set", None) is None):
            cone = "LDP" if isinstance(notion, (LDP, WorstCaseLIP)) else "LIP"  # WC-LIP without a secret: LDP's
            bounds["uniform-prior optimum (docs/math.md §11)"] = uniform_prior_optimum(prior.k, notion.epsilon,
                                                                                     cone)[0]
    elif plain:
        _, offset, scale = _scaled(prior, objective)
        a = math.exp(-notion.epsilon)
        bounds["contraction (docs/math.md §11)"] = offset * (1 / (1 - a) ** 2 - 1) * scale**2
    relaxed = relaxation_bound(prior, notion, objective) if relaxation else None
    if relaxed is not None:
        bounds["relaxation SDP (docs/math.md §11)"] = relaxed
    return bounds


class _Criterion:
    """What the weight problem minimises over the rays: tr(M^-1) (A-optimal, ``values`` None) or c^T M^-1 c
    (c-optimal, c = ``values``), with the prices and the dual bound of the equivalence theorem (docs/math.md §11)."""

    def __init__(self, values=None):
        self.values = None if values is None else np.asarray(values, dtype=float)

    def solve(self, rays, start=None, tolerance=BARRIER_TOLERANCE):
        """(weights, multipliers, solver) over ``rays``; ``multipliers`` are those of the row-sum equations, which
        give the y of the dual bound. The barrier method of ``solvers.design_weights`` first (from ``start``, a
        feasible w, when given, to a duality gap of ``tolerance`` times the objective); cvxpy (tr_inv, or a Schur
        complement for c) with Clarabel if it does not converge, up to k = MAX_FALLBACK_K (its semidefinite program
        has a 2k x 2k block; past that the barrier's last feasible point is kept, or SolverError)."""
        result = design_weights(rays, self.values, start=start, tolerance=tolerance)
        if result.converged:
            return result.weights, result.multipliers, "barrier Newton (solvers.design_weights)"
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


def _start(rays, prior):
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


def _new_rows(columns, candidates, decimals=12):
    """The rows of ``candidates`` that are not (after rounding) rows of ``columns`` or earlier candidates."""
    seen = {row.tobytes() for row in np.round(columns, decimals)}
    fresh = []
    for index, row in enumerate(np.round(candidates, decimals)):
        key = row.tobytes()
        if key not in seen:
            seen.add(key)
            fresh.append(index)
    return candidates[fresh]


def column_generation(columns, criterion, pricer, *, max_rounds=MAX_ROUNDS, tolerance=BARRIER_TOLERANCE, done=None,
                      progress=None, keep_floor=KEEP_FLOOR, max_columns=None):
    """(columns, weights, multipliers, solver, rounds, ended): the restricted weight problem solved on
    ``columns``, priced by ``pricer`` (``RayPricer`` or a slice's), and the best candidates added, until no candidate
    would improve the design (``ended`` "converged"), ``done(value)`` returns a reason to stop (``ended`` that
    reason), or ``max_rounds`` rounds have run (``ended`` "budget"). The columns that carry weight stay, all of them for a c-optimal design (whose optimum may need
    tiny weights; dropping them made the rounds cycle), so the restricted optimum only improves; the last optimum is
    a feasible start of the next round. ``progress(round, columns, value)`` hears about each round; A-optimal
    columns whose weight is below ``keep_floor`` times the largest leave the restricted problem, and so do the
    lightest past ``max_columns`` (None: no cap)."""
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
        fresh = _new_rows(columns[kept], candidates)[: k * CANDIDATES]
        if not len(fresh):
            ended = "converged" if full_rank else "budget"
            break
        columns = np.concatenate([columns[kept], fresh])
        previous = np.concatenate([weights[kept], np.zeros(len(fresh))])
    else:  # the rounds ran out: solve on the columns gathered
        weights, multipliers, status = criterion.solve(columns, previous, tolerance)
    return columns, weights, multipliers, status, rounds, ended


def _basic_weights(rays, weights):
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


def _scaled(prior, objective):
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
    values, offset, scale = _scaled(prior, objective)
    criterion = _Criterion(values)
    columns, weights, multipliers, status, _, _ = column_generation(_start(rays, p), criterion, RayPricer(rays))
    information = columns.T @ (weights[:, None] * columns)
    table = weights_table(columns, _basic_weights(columns, weights))
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


def prior_matching_table(prior, epsilon):
    """The prior-matching channel Q[x, y] = e^-eps P_y (y != x), Q[x, x] = 1 - e^-eps (1 - P_x): eps-LIP for X and,
    when every P_x >= 1/(1 + e^eps), optimal among all eps-LIP mechanisms for the population histogram (it attains
    the per-bin bound, docs/math.md §10, §11). None when that condition fails."""
    p, a = prior.probabilities, math.exp(-epsilon)
    if p.min() < 1.0 / (1.0 + math.exp(epsilon)):
        return None
    table = np.tile(a * p, (p.size, 1))
    np.fill_diagonal(table, 1.0 - a * (1.0 - p))
    return table


def uniform_prior_optimum(k, epsilon, notion_kind="LIP"):
    """(figure, description): the A-optimal n x sum Var, given the users' values, at the uniform prior over k values
    (docs/math.md §11), in O(k) for any k.

    By symmetry the optimum is one permutation orbit of a slice vertex r (sum r = k), whose information matrix has
    eigenvalue k on 1 and (|r|^2 - k)/(k - 1) on its complement, so tr(M^-1) = 1/k + (k - 1)^2/(|r|^2 - k): the
    vertex of largest |r|^2 wins. LDP: d coordinates at e^eps and k - d at 1 (subset selection with the best d).
    LIP: j coordinates at e^eps, k - 1 - j at e^-eps and one fixed by sum r = k."""
    e = math.exp(epsilon)
    best = None
    if notion_kind == "LDP":
        for d in range(1, k):
            norm = k**2 * (d * e**2 + k - d) / (d * e + k - d) ** 2
            if best is None or norm > best[0]:
                best = (norm, f"subset selection, d = {d}")
    else:
        a = 1.0 / e
        for j in range(k):
            free = k - j * e - (k - 1 - j) * a
            if a - 1e-12 <= free <= e + 1e-12:
                norm = j * e**2 + (k - 1 - j) * a**2 + free**2
                if best is None or norm > best[0]:
                    best = (norm, f"orbit of {j} values at e^eps, {k - 1 - j} at e^-eps and one at {free:.6g}")
    norm, description = best
    return 1.0 / k + (k - 1) ** 2 / (norm - k) - 1.0, description
