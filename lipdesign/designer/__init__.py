"""Design: the optimal table for a prior, a notion and an objective (docs/math.md §5, §6, §11).

``design`` (in ``designer.design``), ``compare`` (every family side by side, ``designer.compare``), the population designs and their bounds (``designer.population``), the
extreme-ray builders (``designer.rays``) and the exact repair of the stored numbers (``designer.repair``); the
numerical back-ends are in the top-level ``solvers`` package, which knows no privacy words. Needs scipy (HiGHS) and,
for the bounds and the fallback solver, cvxpy (Clarabel).
"""

from lipdesign.designer.compare import Comparison, compare
from lipdesign.designer.design import FAMILIES, baseline_figures, design
from lipdesign.designer.population import per_bin_bound, uniform_prior_optimum
from lipdesign.designer.rays import MAX_RAYS, extreme_rays
from lipdesign.designer.repair import exact_repair

__all__ = ["FAMILIES", "MAX_RAYS", "Comparison", "baseline_figures", "compare", "design", "exact_repair", "extreme_rays", "per_bin_bound",
           "uniform_prior_optimum"]
