"""Optimal design weights: minimise tr(M(w)^-1) (A-optimal) or c^T M(w)^-1 c (c-optimal), M(w) = sum_i w_i r_i r_i^T,
subject to sum_i w_i r_i = 1 and w >= 0, by a primal barrier method with infeasible-start Newton steps (Boyd and
Vandenberghe, Convex Optimization, §10.3 and §11.3).

Both objectives are convex in w. Derivatives, with G = R M^-1 R^T and H = R M^-2 R^T (R: the rays as rows):
A-optimal, grad_i = -H_ii and Hess = 2 G o H; c-optimal with u = R M^-1 c, grad_i = -u_i^2 and Hess = 2 (u u^T) o G
(o: the elementwise product; both Hessians are PSD by the Schur product theorem). Each Newton step solves one
(n + k) x (n + k) system from a strictly feasible start (an LP), so the cost is that of a few dense solves in the number n of rays.
"""

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog


@dataclass(frozen=True)
class DesignWeights:
    weights: np.ndarray  # (n,) optimal weights, strictly positive (the barrier keeps them off 0)
    multipliers: np.ndarray  # (k,) multipliers y of the equations sum w r = 1: grad F + R y >= 0 at the optimum
    value: float  # F at the weights
    converged: bool


#: Barrier parameter growth per centering step, and the Newton tolerance of each centering (Newton decrement^2/2).
GROWTH = 50.0
NEWTON_TOLERANCE = 1e-10
MAX_NEWTON = 50
MAX_CENTERINGS = 40


def _value(rays, weights, values):
    information = rays.T @ (weights[:, None] * rays)
    try:
        inverse = np.linalg.inv(information)
    except np.linalg.LinAlgError:
        return np.inf
    return float(np.trace(inverse)) if values is None else float(values @ inverse @ values)


def _derivatives(rays, weights, values):
    information = rays.T @ (weights[:, None] * rays)
    inverse = np.linalg.inv(information)
    g = rays @ inverse @ rays.T
    if values is None:
        h = rays @ inverse @ inverse @ rays.T
        return float(np.trace(inverse)), -np.diag(h).copy(), 2.0 * g * h
    u = rays @ (inverse @ values)
    return float(values @ inverse @ values), -(u**2), 2.0 * np.outer(u, u) * g


def _interior_point(rays):
    """A strictly positive w with R^T w = 1 (HiGHS: maximise the smallest weight), or None when every feasible w has
    a zero entry."""
    n, k = rays.shape
    result = linprog(np.r_[np.zeros(n), -1.0], A_eq=np.hstack([rays.T, np.zeros((k, 1))]), b_eq=np.ones(k),
                     A_ub=np.hstack([-np.eye(n), np.ones((n, 1))]), b_ub=np.zeros(n),
                     bounds=[(0, None)] * n + [(0, 1)], method="highs")
    if result.status != 0 or not result.x[-1] > 1e-9:
        return None
    return result.x[:n]


def design_weights(rays, values=None, *, tolerance=1e-11):
    """The optimal weights over ``rays`` (n x k, rows r_i); ``values`` c for the c-optimal objective (None:
    A-optimal). Stops when the barrier's duality gap n/t is below ``tolerance`` times the objective; ``converged``
    is False when that was not reached on a feasible point (the caller then needs another solver)."""
    rays = np.asarray(rays, dtype=float)
    n, k = rays.shape
    weights = _interior_point(rays)
    if weights is None:
        return DesignWeights(np.zeros(n), np.zeros(k), float("nan"), False)
    value, gradient, hessian = _derivatives(rays, weights, values)
    t = n / max(abs(value), 1e-12)
    dual = np.zeros(k)
    for _ in range(MAX_CENTERINGS):
        for _ in range(MAX_NEWTON):
            residual = rays.T @ weights - 1.0  # rounding only: every step keeps R^T w = 1
            barrier_gradient = t * gradient - 1.0 / weights
            system = np.zeros((n + k, n + k))
            system[:n, :n] = t * hessian + np.diag(1.0 / weights**2)
            system[:n, n:] = rays
            system[n:, :n] = rays.T
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
            barrier = t * value - np.log(weights).sum()
            while size > 1e-12:  # Armijo backtracking on the barrier function
                trial = weights + size * direction
                trial_value = _value(rays, trial, values)
                if t * trial_value - np.log(trial).sum() <= barrier + 0.01 * size * slope:
                    break
                size *= 0.5
            else:
                break
            weights = trial
            value, gradient, hessian = _derivatives(rays, weights, values)
        if n / t < tolerance * abs(value):
            converged = bool(np.abs(rays.T @ weights - 1.0).max() < 1e-10)
            return DesignWeights(weights, dual, value, converged)
        t *= GROWTH
    return DesignWeights(weights, dual, value, False)
