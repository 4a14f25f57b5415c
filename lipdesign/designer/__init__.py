"""Design: the optimal mechanism for a prior, a notion and an objective (docs/math.md §5-§7, §10-§12).

The modules, by what they compute: ``design`` validates a problem and dispatches it to its family's designer (``rr``
for randomized-response tables, ``unary_encoding``, ``local_hashing``, ``sketch``); ``compare`` sets every family side
by side; ``bounds`` holds the lower bounds valid for every mechanism of a notion; ``weights`` the weight problems over
given columns (criterion, column-generation loop, the pricer over enumerated rays); ``columns`` column generation over
a notion's slice (pricing, seeds, stopping); ``baselines`` the figures of the fixed protocols beside a design; ``rays``
the extreme-ray builders; ``repair`` the exact repair of the stored numbers. Closed forms are plain functions of arrays
in ``lipdesign.mechanisms.closed_forms`` (the mechanisms build their numbers from them); the numerical back-ends are in
the private ``lipdesign._solvers``, which knows no privacy words. Needs scipy (HiGHS) and, for the bounds and the
fallback solver, cvxpy (Clarabel).
"""

from lipdesign.errors import require

require("ld.design and ld.compare", "design", "scipy", "cvxpy", "highspy", "threadpoolctl")

from lipdesign.designer.baselines import fixed_protocols, subset_selection_variance
from lipdesign.designer.bounds import per_bin_bound, uniform_prior_optimum
from lipdesign.designer.compare import Comparison, compare
from lipdesign.designer.design import FAMILIES, design
from lipdesign.designer.longitudinal import design_longitudinal
from lipdesign.designer.rays import MAX_RAYS, extreme_rays
from lipdesign.designer.repair import exact_repair
from lipdesign.designer.sketch import sketch_design

__all__ = ["FAMILIES", "MAX_RAYS", "Comparison", "compare", "design", "design_longitudinal", "exact_repair",
           "extreme_rays", "fixed_protocols", "per_bin_bound", "sketch_design", "subset_selection_variance",
           "uniform_prior_optimum"]
