"""Designs for the population estimate: the A-optimal table over the extreme rays (docs/math.md §11).

With the rays r of the notion's column cone normalised to P . r = 1, a table with columns w_r r has Fisher information
M(w) = sum_r w_r r r^T and row sums sum_r w_r r; splitting a column into rays never loses information, so

    minimise tr(M(w)^-1)   subject to   sum_r w_r r = 1,  w >= 0

is the exact design problem, and it is convex (cvxpy ``tr_inv``, solved by Clarabel). The solution is certified by
the dual bound of the equivalence theorem, 2 tr Z^(1/2) + 1 . y - max_r (r^T Z r + y . r) <= tr(M^-1) for every
Z >= 0 and y, at Z = M*^-2 (exact over the enumerated rays), and by the per-bin Cramer-Rao bound where it applies;
the weights are then reduced to a basic solution of the moment equations M(w) = M* (at most k(k+1)/2 columns).
"""

import math
import warnings

import numpy as np
from scipy.optimize import linprog

from lipdesign.designer.repair import polished
from lipdesign.errors import SolverError
from lipdesign.notions import LDP, WorstCaseLIP
from lipdesign.objectives import gains
from solvers.ray_lp import solve_ray_lp

#: A weight below this fraction of the largest is solver noise, not a column.
WEIGHT_FLOOR = 1e-10

#: Clarabel's gap and feasibility tolerances (its default 1e-8 leaves a gap of about 1e-5 in the design).
SOLVER_TOLERANCE = 1e-10

#: A ray enters the restricted problem when its price exceeds the columns' in use by more than this, relatively.
PRICE_SLACK = 1e-9

#: Rounds of column generation at most (each adds up to 2k rays).
MAX_ROUNDS = 200


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


def per_bin_bound(prior, notion):
    """The per-bin lower bound on n x the sum of the variances given the users' values (docs/math.md §11), or None
    where it does not apply (a latent secret: X itself may be released freely)."""
    if getattr(notion, "secret", None) is not None:
        return None
    p = prior.probabilities
    return float(per_bin_variance(p, notion.epsilon, notion).sum() - (1.0 - p @ p))


def _solve(rays):
    """(weights, multipliers, status) of the convex weight problem over ``rays``; ``multipliers`` are the duals of
    the row-sum equations, which give the y of the dual bound."""
    import cvxpy as cp

    weights = cp.Variable(len(rays), nonneg=True)
    information = rays.T @ cp.diag(weights) @ rays
    row_sums = rays.T @ weights == 1
    problem = cp.Problem(cp.Minimize(cp.tr_inv(information)), [row_sums])
    with warnings.catch_warnings():  # an inaccurate solve is reported by its status and judged by the dual bound
        warnings.simplefilter("ignore", UserWarning)
        problem.solve(solver=cp.CLARABEL, tol_gap_abs=SOLVER_TOLERANCE, tol_gap_rel=SOLVER_TOLERANCE,
                      tol_feas=SOLVER_TOLERANCE)
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or weights.value is None:
        raise SolverError(f"the A-optimal weight problem over {len(rays)} rays ended {problem.status}")
    return np.maximum(weights.value, 0.0), np.asarray(row_sums.dual_value, dtype=float), problem.status


def _prices(rays, information, y):
    """r^T M^-2 r + y . r for every ray: the dual bound takes their maximum; a ray above the columns in use
    improves the design (docs/math.md §11)."""
    inverse = np.linalg.inv(information)
    return np.einsum("ij,jk,ik->i", rays, inverse @ inverse, rays) + rays @ y, inverse


def dual_bound(rays, information, multipliers):
    """(bound, y): the equivalence-theorem bound on tr(M^-1) over every table of the cone (docs/math.md §11): for
    any Z >= 0 and y, 2 tr Z^(1/2) + 1 . y - max_r (r^T Z r + y . r), exact when ``rays`` are all the extreme rays,
    here at Z = M^-2 and y = -+ the multipliers of the row-sum equations (every y gives a valid bound, so the sign
    that gives the larger one is kept)."""
    best = None
    for y in (multipliers, -multipliers):
        prices, inverse = _prices(rays, information, y)
        bound = float(2 * np.trace(inverse) + y.sum() - prices.max())
        if best is None or bound > best[0]:
            best = (bound, y)
    return best


def _start(rays, prior):
    """The first columns: a feasible basis (the MMSE optimum's rays, from the ray LP), the ray that says most about
    each value (largest r_x / sum(r)), and the 2k most informative rays (largest |r|^2), so that M is invertible."""
    k = rays.shape[1]
    basis = np.flatnonzero(solve_ray_lp(rays, gains(rays, prior, "histogram")).weights > 0)
    tests = np.argmax(rays / rays.sum(axis=1, keepdims=True), axis=0)
    informative = np.argsort((rays**2).sum(axis=1))[::-1][: 2 * k]
    return np.union1d(np.union1d(basis, tests), informative)


def _column_generation(rays, start):
    """Weights over all ``rays`` from restricted problems: solve on the columns in use, price every ray, add the
    best ones that would improve the design, until none does (then the dual bound over all rays certifies it)."""
    active = np.asarray(start)
    for _ in range(MAX_ROUNDS):
        weights, multipliers, status = _solve(rays[active])
        information = rays[active].T @ (weights[:, None] * rays[active])
        if np.linalg.matrix_rank(information) < rays.shape[1]:  # the columns cannot see every value yet
            rest = np.setdiff1d(np.arange(len(rays)), active)
            active = np.union1d(active, rest[np.argsort((rays[rest] ** 2).sum(axis=1))[::-1][: 4 * rays.shape[1]]])
            continue
        _, y = dual_bound(rays[active], information, multipliers)
        prices, _ = _prices(rays, information, y)
        used = active[weights > WEIGHT_FLOOR * weights.max()]
        level = prices[used].max()
        candidates = np.setdiff1d(np.flatnonzero(prices > level + PRICE_SLACK * abs(level)), active)
        if not candidates.size:
            break
        active = np.union1d(used, candidates[np.argsort(prices[candidates])[::-1][:rays.shape[1] * 2]])
    full = np.zeros(len(rays))
    full[active] = weights
    return full, multipliers, status


def _basic_weights(rays, weights):
    """A basic (sparse) w >= 0 with sum_r w_r r r^T equal to that of ``weights`` (HiGHS dual simplex)."""
    k = rays.shape[1]
    rows, columns = np.triu_indices(k)
    moments = (rays[:, rows] * rays[:, columns]).T  # vech(r r^T) per ray
    result = linprog(np.zeros(len(rays)), A_eq=moments, b_eq=moments @ weights, bounds=(0, None), method="highs-ds")
    return np.maximum(result.x, 0.0) if result.status == 0 else weights


def a_optimal_table(rays, prior):
    """(table, info): the A-optimal table of the cone whose extreme rays are ``rays`` (one per row), at ``prior``."""
    p = prior.probabilities
    rays = rays / (rays @ p)[:, None]
    weights, multipliers, status = _column_generation(rays, _start(rays, p))
    information = rays.T @ (weights[:, None] * rays)
    sparse = _basic_weights(rays, weights)
    used = sparse > WEIGHT_FLOOR * sparse.max()
    table = polished(sparse[used], rays[used]) * rays[used].T
    table /= table.sum(axis=1, keepdims=True)
    bounds = {"dual (equivalence theorem over the enumerated rays)":
              dual_bound(rays, information, multipliers)[0] - 1.0}  # the designer adds the per-bin bound
    info = {"solver": f"cvxpy tr_inv, Clarabel ({status})", "rays": len(rays), "columns": int(used.sum()),
            "lower_bounds": bounds}
    return table, info


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
