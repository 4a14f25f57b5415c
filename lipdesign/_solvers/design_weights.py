"""Optimal design weights: minimise tr(M(w)^-1) (A-optimal) or c^T M(w)^-1 c (c-optimal), M(w) = sum_i w_i r_i r_i^T,
subject to sum_i w_i r_i = 1 and w >= 0, by a primal barrier method with equality-constrained Newton steps (Boyd and
Vandenberghe, Convex Optimization, §10.2 and §11.3); c-optimal derivatives use M^+ (the optimum may be singular).

Both objectives are convex in w. Derivatives, with G = R M^-1 R^T and H = R M^-2 R^T (R: the rays as rows):
A-optimal, grad_i = -H_ii and Hess = 2 G o H; c-optimal with u = R M^-1 c, grad_i = -u_i^2 and Hess = 2 (u u^T) o G
(o: the elementwise product; both Hessians are PSD by the Schur product theorem). Each Newton step solves one
(n + k) x (n + k) system from a feasible start (an LP) that is positive on every ray a feasible w can weight, so the
cost is that of a few dense solves in the number n of rays.
"""

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog


@dataclass(frozen=True)
class DesignWeights:
    weights: np.ndarray  # (n,) optimal weights: positive on the support the start found, 0 elsewhere
    multipliers: np.ndarray  # (k,) multipliers y of the equations sum w r = 1: grad F + R y >= 0 at the optimum
    value: float  # F at the weights
    converged: bool


#: Barrier parameter growth per centering step, and the Newton tolerance of each centering (Newton decrement^2/2).
GROWTH = 50.0
NEWTON_TOLERANCE = 1e-10
MAX_NEWTON = 50
MAX_CENTERINGS = 40


def _inverse(information, values):
    """M^-1 (A-optimal), or M^+ for the c-optimal objective, whose optimum may be singular: with every weight of a
    fixed support positive the range of M is fixed, and on it the derivatives below hold with M^+."""
    if values is None:
        return np.linalg.inv(information)
    return np.linalg.pinv(information, rcond=1e-12, hermitian=True)


def _value(rays, weights, values):
    information = rays.T @ (weights[:, None] * rays)
    try:
        inverse = _inverse(information, values)
    except np.linalg.LinAlgError:
        return np.inf
    return float(np.trace(inverse)) if values is None else float(values @ inverse @ values)


def _derivatives(rays, weights, values):
    information = rays.T @ (weights[:, None] * rays)
    inverse = _inverse(information, values)
    g = rays @ inverse @ rays.T
    if values is None:
        h = rays @ inverse @ inverse @ rays.T
        return float(np.trace(inverse)), -np.diag(h).copy(), 2.0 * g * h
    u = rays @ (inverse @ values)
    return float(values @ inverse @ values), -(u**2), 2.0 * np.outer(u, u) * g


@dataclass(frozen=True)
class Objective:
    """A convex objective of the weights for ``barrier``: ``value(w)`` (inf where undefined) and
    ``derivatives(w)`` -> (value, gradient, Hessian), the latter raising LinAlgError where the information is
    singular."""

    value: object
    derivatives: object


#: The cap on each weight in the search for a point of large support (well above HiGHS' feasibility tolerance).
SUPPORT_CAP = 1e-4


def _capped_point(rays, rhs):
    """The LP max sum_i min(w_i, SUPPORT_CAP) s.t. R^T w = rhs, w >= 0 (HiGHS): (w, min(w, cap)), or None."""
    n, k = rays.shape
    result = linprog(np.r_[np.zeros(n), -np.ones(n)],
                     A_eq=np.hstack([rays.T, np.zeros((k, n))]), b_eq=rhs,
                     A_ub=np.hstack([-np.eye(n), np.eye(n)]), b_ub=np.zeros(n),
                     bounds=[(0, None)] * n + [(0, SUPPORT_CAP)] * n, method="highs")
    return None if result.status != 0 else (result.x[:n], result.x[n:])


def interior_point(rays, rhs):
    """(w, support): a feasible w (R^T w = rhs) with every weight on ``support`` at least SUPPORT_CAP / 2 and none
    elsewhere, from the LP above, solved again on the rays it could weight; None when no w is feasible. The rays
    left out carry (almost) no weight in any feasible w; column generation can bring them back."""
    found = _capped_point(rays, rhs)
    if found is None:
        return None
    support = found[1] > SUPPORT_CAP / 2
    again = _capped_point(rays[support], rhs)
    if again is None or not (again[1] > SUPPORT_CAP / 2).all():
        return None
    weights = np.zeros(len(rays))
    weights[support] = again[0]
    return weights, support


def design_weights(rays, values=None, *, tolerance=1e-11, start=None):
    """The optimal weights over ``rays`` (n x k, rows r_i); ``values`` c for the c-optimal objective (None:
    A-optimal). ``start``: a feasible w (R^T w = 1, w >= 0), e.g. the previous round's optimum, whose support the
    barrier keeps (a c-optimal optimum may need columns whose weights are tiny). Stops when the barrier's duality
    gap n/t is below ``tolerance`` times the objective; ``converged`` is False when that was not reached on a
    feasible point (the caller then needs another solver)."""
    rays = np.asarray(rays, dtype=float)
    found = interior_point(rays, np.ones(rays.shape[1]))
    if found is None:
        return DesignWeights(np.zeros(len(rays)), np.zeros(rays.shape[1]), float("nan"), False)
    weights, support = found
    if start is not None:  # the average of two feasible points is feasible, positive on both supports
        start = np.asarray(start, dtype=float)
        if (start >= 0).all() and np.abs(rays.T @ start - 1.0).max() < 1e-9:
            weights = 0.5 * (weights + start)
            support = weights > 0
    chosen = rays[support]
    objective = Objective(lambda w: _value(chosen, w, values), lambda w: _derivatives(chosen, w, values))
    result = barrier(chosen, np.ones(rays.shape[1]), weights[support], objective, tolerance)
    full = np.zeros(len(rays))
    full[support] = result.weights
    return DesignWeights(full, result.multipliers, result.value, result.converged)


def barrier(constraints, rhs, weights, objective, tolerance):
    """Minimise ``objective`` over w >= 0 with C^T w = rhs (C = ``constraints``, n x k) from the strictly feasible
    ``weights``: equality-constrained Newton steps on t F(w) - sum log w with Armijo backtracking, t growing
    GROWTH-fold per centering, until the barrier gap n/t is below ``tolerance`` times F. The multipliers y (the
    dual of C^T w = rhs, y = -nu/t) satisfy grad F + C y >= 0 at the end of a centering."""
    n, k = constraints.shape
    try:
        value, gradient, hessian = objective.derivatives(weights)
    except np.linalg.LinAlgError:  # the start's rays do not see every value (M singular): the caller falls back
        return DesignWeights(weights, np.zeros(k), float("nan"), False)
    t = n / max(abs(value), 1e-12)
    dual = np.zeros(k)
    for _ in range(MAX_CENTERINGS):
        for _ in range(MAX_NEWTON):
            residual = constraints.T @ weights - rhs  # rounding only: every step keeps C^T w = rhs
            barrier_gradient = t * gradient - 1.0 / weights
            system = np.zeros((n + k, n + k))
            system[:n, :n] = t * hessian + np.diag(1.0 / weights**2)
            system[:n, n:] = constraints
            system[n:, :n] = constraints.T
            try:
                step = np.linalg.solve(system, -np.concatenate([barrier_gradient, residual]))
            except np.linalg.LinAlgError:
                return DesignWeights(weights, dual, value, False)
            direction, dual = step[:n], step[n:] / t
            slope = float(direction @ barrier_gradient)
            if -slope / 2 < NEWTON_TOLERANCE:
                break
            size = 1.0
            negative = direction < 0
            if negative.any():
                size = min(1.0, 0.99 * float(np.min(-weights[negative] / direction[negative])))
            level = t * value - np.log(weights).sum()
            while size > 1e-12:  # Armijo backtracking on the barrier function
                trial = weights + size * direction
                trial_value = objective.value(trial)
                if t * trial_value - np.log(trial).sum() <= level + 0.01 * size * slope:
                    break
                size *= 0.5
            else:
                break
            weights = trial
            try:
                value, gradient, hessian = objective.derivatives(weights)
            except np.linalg.LinAlgError:
                return DesignWeights(weights, dual, value, False)
        if n / t < tolerance * abs(value):
            # the steps keep C^T w = rhs only up to rounding: the least relative change w (1 + d) that restores it
            weights = weights * (1.0 + np.linalg.lstsq(constraints.T * weights, rhs - constraints.T @ weights,
                                                       rcond=None)[0])
            scale = np.abs(rhs).max()
            converged = bool((weights > 0).all() and np.abs(constraints.T @ weights - rhs).max() < 1e-10 * scale)
            return DesignWeights(weights, dual, objective.value(weights), converged)
        t *= GROWTH
    return DesignWeights(weights, dual, value, False)
