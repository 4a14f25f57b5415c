"""lipdesign.harmony: the mechanisms of the Harmony system (seed 000, MATH §9), the Piecewise and Hybrid
mechanisms, and the LDP frequency oracles (seed 002, MATH §8).

They have the runtime shape of designed tables: batched ``perturb(values, rng=None)`` -> reports and
``estimate(reports)`` -> means or frequencies, numpy only; ``variance(...)`` where a closed form exists; JSON
export with ``to_json`` (read back by ``lipdesign.load``, re-verified exactly where the output space is finite).

- numeric means, t in [-1, 1]^d: ``Laplace``, ``Duchi``, ``HarmonyNumeric``, ``Piecewise``, ``Hybrid``
  (Laplace outputs floats: eps-LDP in ideal real arithmetic only, not hardened against floating-point attacks;
  the others are verified exactly, Piecewise and Hybrid through a public input grid and output bins)
- categorical frequencies: ``HarmonyCategorical``, ``GRR``, ``OUE``, ``OLH``, ``HadamardResponse``
- mixed numeric + categorical tuples: ``HarmonyMixed``
- LDP learning (Harmony Alg. 4): ``LDPLinearRegression``, ``LDPLogisticRegression``, ``LDPLinearSVC``
- ``Range(low, high)`` maps raw numeric ranges to [-1, 1] and back.
"""

from importlib import import_module

_EXPORTS = {
    "HarmonyMechanism": "lipdesign.harmony._base",
    "Range": "lipdesign.harmony._base",
    "Laplace": "lipdesign.harmony.numeric",
    "Duchi": "lipdesign.harmony.numeric",
    "HarmonyNumeric": "lipdesign.harmony.numeric",
    "Piecewise": "lipdesign.harmony.numeric",
    "Hybrid": "lipdesign.harmony.numeric",
    "GRR": "lipdesign.harmony.frequency",
    "OUE": "lipdesign.harmony.frequency",
    "OLH": "lipdesign.harmony.frequency",
    "HadamardResponse": "lipdesign.harmony.frequency",
    "HarmonyCategorical": "lipdesign.harmony.frequency",
    "HarmonyMixed": "lipdesign.harmony.mixed",
    "LDPLinearRegression": "lipdesign.harmony.learning",
    "LDPLogisticRegression": "lipdesign.harmony.learning",
    "LDPLinearSVC": "lipdesign.harmony.learning",
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'lipdesign.harmony' has no attribute {name!r}")


def load_all():
    """Import every mechanism module, so that ``HarmonyMechanism.registry`` names every class."""
    for module in sorted(set(_EXPORTS.values())):
        import_module(module)


def __dir__():
    return __all__
