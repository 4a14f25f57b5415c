"""Deprecated: the names of lipdesign 0.1.0's ``lipdesign.harmony``, deprecated since 0.2.0, removed in 0.4.0.

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

warnings.warn("lipdesign.harmony is deprecated since 0.2.0 and will be removed in 0.4.0: import the mechanisms from "
              "lipdesign.mechanisms, the learners from lipdesign.learn and Range from lipdesign", DeprecationWarning,
              stacklevel=2)

__all__ = ["GRR", "OLH", "OUE", "Duchi", "HadamardResponse", "HarmonyCategorical", "HarmonyMixed", "HarmonyNumeric",
           "Hybrid", "LDPLinearRegression", "LDPLinearSVC", "LDPLogisticRegression", "Laplace", "Piecewise", "Range"]
