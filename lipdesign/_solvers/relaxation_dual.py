"""A lower bound on tr(M^-1) over information matrices with M P = 1, capped diagonals and capped inverse diagonals,
in 2k numbers (docs/math.md §11, "The relaxation's dual in 2k numbers").

The set: M = 1 1^T + C with C >= 0, C P = 0 and C of rank k - 1 (so M is invertible), C_xx <= u for every x, and
(M^-1)_xx >= v_x for every x. For any d >= 0 and s in [0, 1]^k,

    tr(M^-1) >= 2 ||D^(1/2) (I - 1 P^T) S^(1/2)||_* - u sum(d) + sum_x s_x P_x^2 + sum_x (1 - s_x) v_x,

D = diag(d), S = diag(s), ||.||_* the nuclear norm (the sum of the singular values). The right side is concave in
(d, s); ``maximise`` finds a good (d, s) by L-BFGS-B and ``certified_value`` evaluates it with a rounding margin,
so that the figure returned is below the exact right side at that (d, s), hence a valid bound whatever the
optimiser did. Cost: one dense k x k symmetric eigendecomposition per evaluation (about 10 s in all at k = 1024).
"""

import math
import time
from typing import Any

import numpy as np
from scipy.optimize import minimize

#: The optimiser's iteration cap; any point is a valid bound, so stopping early only loosens it.
MAX_ITERATIONS = 500

#: Relative margin taken off the certified figure for the rounding of everything but the singular values.
ROUNDING = 1e-12


class _Budget(Exception):
    """The optimiser's time budget ran out (raised from its callback)."""


def _parts(d, s, prior, u, v):
    """(value, gradient) of the right side at (d, s), from the eigendecomposition of E^T E with
    E = D^(1/2) (I - 1 P^T) S^(1/2) (diagonal plus rank 2 inside S^(1/2) ... S^(1/2))."""
    k = prior.size
    root_d, root_s = np.sqrt(d), np.sqrt(s)
    centred = np.eye(k) - np.outer(np.ones(k), prior)  # I - 1 P^T
    scaled = centred * root_s[None, :]  # (I - 1 P^T) S^(1/2)
    gram = scaled.T @ (d[:, None] * scaled)
    eigenvalues, vectors = np.linalg.eigh(gram)
    positive = eigenvalues > 1e-13 * max(float(eigenvalues[-1]), 1e-300)
    sigma = np.sqrt(np.where(positive, eigenvalues, 0.0))
    inverse = np.where(positive, 1.0 / np.where(positive, sigma, 1.0), 0.0)
    value = 2.0 * sigma.sum() - u * d.sum() + s @ prior**2 + (1.0 - s) @ v
    projected = scaled @ vectors  # E V = D^(1/2) (this)
    gradient_d = (projected**2) @ inverse - u
    back = (root_d[:, None] * centred).T @ (root_d[:, None] * projected)  # (D^(1/2) (I - 1 P^T))^T E V
    gradient_s = ((back * inverse[None, :]) ** 2) @ inverse + prior**2 - v
    return value, np.concatenate([gradient_d, gradient_s])


def maximise(prior, u, v, *, time_limit=None):
    """(d, s): a maximiser (or a good point, after MAX_ITERATIONS or ``time_limit`` seconds) of the right side for
    the prior P, the diagonal cap u on C and the caps v on the inverse's diagonal."""
    prior, v = np.asarray(prior, dtype=float), np.asarray(v, dtype=float)
    k = prior.size
    start = time.perf_counter()
    best: dict[str, Any] = {}

    def negative(z):
        value, gradient = _parts(z[:k], z[k:], prior, u, v)
        if "value" not in best or value > best["value"]:
            best.update(value=value, point=z.copy())
        return -value, -gradient

    def budget(_):
        if time_limit is not None and time.perf_counter() - start > time_limit:
            raise _Budget

    z = np.concatenate([np.full(k, 1.0 / u**2), np.full(k, 0.5)])
    try:
        minimize(negative, z, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * k + [(0.0, 1.0)] * k,
                 callback=budget, options={"maxiter": MAX_ITERATIONS, "maxcor": 30, "ftol": 1e-14, "gtol": 1e-10})
    except _Budget:
        pass
    point = best["point"]
    return np.maximum(point[:k], 0.0), np.clip(point[k:], 0.0, 1.0)


def certified_value(d, s, prior, u, v):
    """The right side at (d, s), less its rounding: the singular values of E by LAPACK's SVD (each within
    p(k) eps ||E|| of the exact ones; the entries of E within 3 eps of theirs, which moves each singular value by at
    most 3 eps ||E||_F, Weyl), each lowered by 8 k eps ||E||_F, and the rest lowered by ROUNDING of its size."""
    prior = np.asarray(prior, dtype=float)
    d, s = np.maximum(np.asarray(d, dtype=float), 0.0), np.clip(np.asarray(s, dtype=float), 0.0, 1.0)
    k = prior.size
    matrix = (np.sqrt(d)[:, None] * (np.eye(k) - np.outer(np.ones(k), prior))) * np.sqrt(s)[None, :]
    sigma = np.linalg.svd(matrix, compute_uv=False)
    margin = 8.0 * k * np.finfo(float).eps * float(np.linalg.norm(matrix))
    nuclear = float(np.maximum(sigma - margin, 0.0).sum())
    rest = [-u * float(d.sum()), float(s @ prior**2), float((1.0 - s) @ v)]
    value = 2.0 * nuclear + sum(rest)
    return value - ROUNDING * (2.0 * nuclear + sum(abs(term) for term in rest)) - math.ulp(value)
