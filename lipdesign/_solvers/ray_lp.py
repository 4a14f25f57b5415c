"""The LP over extreme rays: maximise sum_j w_j gain_j subject to sum_j w_j r_j = 1, w >= 0 (HiGHS)."""

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog


@dataclass(frozen=True)
class RayLPResult:
    weights: np.ndarray  # (n_rays,) basic optimal solution, at most k non-zero
    objective: float
    status: str  # "optimal" or "infeasible"
    message: str
    duals: np.ndarray  # (k,) y with gain_j <= y . r_j for every ray, equality on the basis (the LP's dual solution)


def solve_ray_lp(rays, gains):
    """Solve the ray LP with HiGHS' dual simplex, which returns a basic (vertex) solution."""
    rays = np.asarray(rays, dtype=float)
    result = linprog(-np.asarray(gains, dtype=float), A_eq=rays.T, b_eq=np.ones(rays.shape[1]),
                     bounds=(0, None), method="highs-ds")
    if result.status != 0:
        return RayLPResult(np.zeros(rays.shape[0]), float("nan"), "infeasible", result.message,
                           np.zeros(rays.shape[1]))
    # HiGHS reports d(objective)/d(b) of the minimisation of -gain: the maximisation's duals are their negatives
    return RayLPResult(np.maximum(result.x, 0.0), -float(result.fun), "optimal", result.message,
                       -np.asarray(result.eqlin.marginals, dtype=float))
