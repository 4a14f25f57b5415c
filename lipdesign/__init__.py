"""lipdesign: design, verify and run local privacy mechanisms (LIP and LDP).

The pipeline: declare (model) -> constrain (notions) -> design (design + solvers) -> verify -> export (io)
-> perturb and estimate (runtime). Names are imported lazily so that ``import lipdesign.runtime`` needs
numpy only (a device or an ingestion job does not pay for cvxpy and scipy).
"""

from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "Prior": "lipdesign.model",
    "SecretModel": "lipdesign.model",
    "PriorSet": "lipdesign.model",
    "LDP": "lipdesign.notions",
    "LIP": "lipdesign.notions",
    "WorstCaseLIP": "lipdesign.notions",
    "Histogram": "lipdesign.utility",
    "WeightedSum": "lipdesign.utility",
    "mse": "lipdesign.utility",
    "design": "lipdesign.designer",
    "Mechanism": "lipdesign.designer",
    "verify": "lipdesign.verification",
    "Certificate": "lipdesign.verification",
    "load": "lipdesign.io",
    "LipdesignError": "lipdesign.errors",
    "ValidationError": "lipdesign.errors",
    "InfeasibleError": "lipdesign.errors",
    "ProblemTooLargeError": "lipdesign.errors",
    "VerificationError": "lipdesign.errors",
    "FormatError": "lipdesign.errors",
    "SolverError": "lipdesign.errors",
}

__all__ = [*_EXPORTS, "harmony", "runtime", "__version__"]  # noqa: PLE0604 (names are the keys of _EXPORTS)


#: Subpackages reachable as attributes (``ld.harmony.GRR``) without an explicit import.
_SUBPACKAGES = ("harmony", "runtime")


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    if name in _SUBPACKAGES:
        return import_module(f"lipdesign.{name}")
    raise AttributeError(f"module 'lipdesign' has no attribute {name!r}")


def __dir__():
    return __all__
