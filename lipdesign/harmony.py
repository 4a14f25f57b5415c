"""Deprecated: the names of lipdesign 0.1.0's ``lipdesign.harmony``, kept for one release.

The mechanisms are in ``lipdesign.mechanisms`` (one module per family), the learners in ``lipdesign.learn`` and
``Range`` in ``lipdesign.model``; import them from there.
"""

import warnings

from lipdesign.learn import LDPLinearRegression, LDPLinearSVC, LDPLogisticRegression
from lipdesign.mechanisms import (
    GRR,
    OLH,
    OUE,
    Duchi,
    HadamardResponse,
    HarmonyCategorical,
    HarmonyMixed,
    HarmonyNumeric,
    Hybrid,
    Laplace,
    Piecewise,
)
from lipdesign.model import Range

warnings.warn("lipdesign.harmony is deprecated: import the mechanisms from lipdesign.mechanisms, the learners from "
              "lipdesign.learn and Range from lipdesign (it goes away in the next release)", DeprecationWarning,
              stacklevel=2)

__all__ = ["GRR", "OLH", "OUE", "Duchi", "HadamardResponse", "HarmonyCategorical", "HarmonyMixed", "HarmonyNumeric",
           "Hybrid", "LDPLinearRegression", "LDPLinearSVC", "LDPLogisticRegression", "Laplace", "Piecewise", "Range"]
