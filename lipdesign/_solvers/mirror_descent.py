"""A-optimal design weights by mirror descent, for restricted problems with thousands of columns (docs/math.md §12).

The problem: minimise F(w) = tr(M(w)^-1), M(w) = sum_i w_i r_i r_i^T, over w >= 0 with sum_i w_i r_i = 1 (the rows
r_i are the columns of a table, normalised to P . r_i = 1). F is convex with gradient -K_i, K_i = r_i^T M^-2 r_i.
A step multiplies the weights by exp(eta K_i / F) and projects back onto {R^T w = 1} in Kullback-Leibler divergence:
w_i = w~_i exp(r_i . lambda), with the k numbers lambda solving R^T w = 1 by Newton's method on the convex function
sum_i w~_i exp(r_i . lambda) - 1 . lambda (its Hessian is M at the projected weights). A step costs a few
O(n k^2) products, where the barrier method of ``_solvers.design_weights`` costs O(n^3); the rate eta grows by half
after a step that lowers F and halves until one does. Weights are kept as logarithms, so that a column the descent
abandons fades to exp(-700) instead of underflowing to a zero that the projection could not bring back.
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.blas import dsyrk

#: Newton steps of one projection at most; the row-sum error at which it stops, and the largest it accepts when
#: the steps run out (rounding limits it near 1e-12 when the weights span a hundred orders of magnitude).
PROJECTION_STEPS = 60
PROJECTION_TOLERANCE = 1e-11
PROJECTION_ACCEPTED = 1e-8

#: Row-sum error below which the projection takes Newton's full step without a line search.
NEWTON_REGION = 1e-6

#: The largest change of a log-weight in one step, to first order (the rate is capped to keep within it).
LOG_STEP = 2.0

#: The rate's bounds: a step that lowers F raises it by RATE_GROWTH, a failed one halves it.
RATE_GROWTH = 1.5
MIN_RATE = 1e-12
MAX_RATE = 1e3


@dataclass(frozen=True)
class Descent:
    weights: np.ndarray  # (n,) on the constraint R^T w = 1 (to PROJECTION_ACCEPTED at worst)
    value: float  # F = tr(M^-1) at the weights
    inverse: np.ndarray  # M^-1 at the weights
    rate: float  # the rate to start the next call from
    steps: int  # steps that lowered F


def information(columns, weights):
    """M = R^T diag(w) R (BLAS syrk on the rows scaled by sqrt(w): half the products of a general product)."""
    scaled = columns * np.sqrt(weights)[:, None]
    upper = dsyrk(1.0, scaled, trans=1)  # the upper triangle of scaled^T scaled
    return np.triu(upper) + np.triu(upper, 1).T


def trace_inverse(columns, weights):
    """(tr M^-1, M^-1), or (inf, None) when M is not positive definite."""
    matrix = information(columns, weights)
    try:
        factor = cho_factor(matrix, lower=True)
    except np.linalg.LinAlgError:
        return np.inf, None
    inverse = cho_solve(factor, np.eye(len(matrix)))
    return float(np.trace(inverse)), inverse


def project(log_weights, columns, multipliers=None):
    """(weights, multipliers, ok): the Kullback-Leibler projection of exp(``log_weights``) onto {R^T w = 1}, i.e.
    exp(``log_weights`` + R lambda), Newton's method from ``multipliers`` when given (a first-order guess), else
    from lambda = 0 after scaling the weights to sum 1; ok is False when Newton's method ends with a row-sum error above
    PROJECTION_ACCEPTED (the columns cannot make the row sums 1 with these supports)."""
    k = columns.shape[1]
    if multipliers is None:
        # feasible weights sum to P . (R^T w) = P . 1 = 1: start from that scale (the shift t P of lambda, which
        # multiplies every weight by e^t, would otherwise take Newton's method many damped steps)
        top = log_weights.max()
        log_weights = log_weights - (top + np.log(np.exp(log_weights - top).sum()))
        lam = np.zeros(k)
    else:
        lam = multipliers.copy()

    def weights_at(multipliers):
        return np.exp(np.minimum(log_weights + columns @ multipliers, 700.0))

    weights = weights_at(lam)
    residual = columns.T @ weights - 1.0
    for _ in range(PROJECTION_STEPS):
        if np.abs(residual).max() < PROJECTION_TOLERANCE:
            break
        hessian = information(columns, weights)
        hessian[np.diag_indices(k)] += 1e-14 * np.trace(hessian) / k
        try:
            step = np.linalg.solve(hessian, -residual)
        except np.linalg.LinAlgError:
            break
        value, slope, size = weights.sum() - lam.sum(), float(residual @ step), 1.0
        trial = lam + step
        trial_weights = weights_at(trial)
        # near the solution Newton's full step converges quadratically, and the decrease it makes is below the
        # rounding of the dual function, which a line search would misread as no descent
        if np.abs(residual).max() > NEWTON_REGION:
            while trial_weights.sum() - trial.sum() > value + 1e-4 * size * slope:  # Armijo backtracking
                size *= 0.5
                if size < 1e-12:
                    break
                trial = lam + size * step
                trial_weights = weights_at(trial)
            if size < 1e-12:
                break  # no descent left
        lam, weights = trial, trial_weights
        residual = columns.T @ weights - 1.0
    return weights, lam, bool(np.abs(residual).max() < PROJECTION_ACCEPTED)


def descend(columns, weights, *, steps, rate=1.0, tolerance=1e-9):
    """``steps`` mirror-descent steps from the feasible ``weights`` (R^T w = 1, w > 0 on the columns in use); stops
    early once a step lowers F by less than ``tolerance`` of F. A Descent with the last weights."""
    value, inverse = trace_inverse(columns, weights)
    if inverse is None:
        raise np.linalg.LinAlgError("the starting weights give a singular information matrix")
    log_weights = np.log(np.maximum(weights, 1e-300))
    taken = 0
    for _ in range(steps):
        gradient = ((columns @ inverse) ** 2).sum(axis=1) / value  # K_i / F, scale-free
        # the multipliers that keep R^T w = 1 to first order: R^T (w (g + R lambda)) = 0, M lambda = -R^T (w g)
        first_order = -inverse @ (columns.T @ (weights * gradient))
        # a step moves each log-weight by at most LOG_STEP to first order: larger ones leave the region where the
        # projection's Newton method converges in a few steps (at k = 1024 a rate of 1 took 18, a tenth of it 3)
        rate = min(rate, LOG_STEP / max(float(np.abs(gradient + columns @ first_order).max()), 1e-300))
        while rate > MIN_RATE:
            trial, _, ok = project(log_weights + rate * gradient, columns, rate * first_order)
            trial_value, trial_inverse = trace_inverse(columns, trial) if ok else (np.inf, None)
            if trial_value < value:
                break
            rate *= 0.5
        else:
            break
        improvement = value - trial_value
        weights, value, inverse = trial, trial_value, trial_inverse
        log_weights = np.log(np.maximum(weights, 1e-300))
        rate = min(rate * RATE_GROWTH, MAX_RATE)
        taken += 1
        if improvement < tolerance * value:
            break
    return Descent(weights, value, inverse, rate, taken)


def multipliers_and_prices(columns, weights, inverse):
    """(Z, lambda, reduced): the equivalence theorem's Z = M^-2, the multipliers lambda that fit K_i = lambda . r_i
    best on the weights (weighted least squares: M lambda = R^T (w K)), and every column's reduced price
    K_i - lambda . r_i (0 on the support at the optimum, <= 0 elsewhere; a slice point pricing above 0 improves
    the design)."""
    projected = columns @ inverse
    prices = (projected**2).sum(axis=1)
    lam = inverse @ (columns.T @ (weights * prices))
    return inverse @ inverse, lam, prices - columns @ lam
