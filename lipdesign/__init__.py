"""lipdesign: design, verify and run local privacy mechanisms (LIP and LDP).

The pipeline, one folder per step: declare (``model``: Prior, SecretModel, PriorSet, Range) -> constrain
(``notions``, ``objectives``) -> design (``designer``) -> verify (``verification``) -> export (``io``) -> perturb,
aggregate, estimate (``mechanisms``, numpy only), with ``learn`` (LDP learners), ``simulation`` and ``testing``
(the conformance suite) on top. The derivations the code cites are in docs/math.md.

Names are imported lazily, so that ``import lipdesign.mechanisms`` needs numpy only (a device or an ingestion job
does not pay for cvxpy and scipy).
"""

from importlib import import_module

__version__ = "0.3.0"

_EXPORTS = {
    "Prior": "lipdesign.model",
    "SecretModel": "lipdesign.model",
    "PriorSet": "lipdesign.model",
    "Range": "lipdesign.model",
    "LDP": "lipdesign.notions",
    "LIP": "lipdesign.notions",
    "WorstCaseLIP": "lipdesign.notions",
    "Frequencies": "lipdesign.objectives",
    "Mean": "lipdesign.objectives",
    "BayesHistogram": "lipdesign.objectives",
    "BayesSum": "lipdesign.objectives",
    "Histogram": "lipdesign.objectives",
    "WeightedSum": "lipdesign.objectives",
    "mse": "lipdesign.objectives",
    "design": "lipdesign.designer",
    "compare": "lipdesign.designer",
    "Mechanism": "lipdesign.mechanisms",
    "TableMechanism": "lipdesign.mechanisms",
    "Aggregate": "lipdesign.mechanisms",
    "Estimate": "lipdesign.mechanisms",
    "Guarantee": "lipdesign.mechanisms",
    "verify": "lipdesign.mechanisms",
    "Certificate": "lipdesign.verification",
    "JointCertificate": "lipdesign.verification",
    "Ledger": "lipdesign.verification",
    "compose": "lipdesign.verification",
    "audit": "lipdesign.auditor",
    "load": "lipdesign.io",
    "save": "lipdesign.io",
    "simulate": "lipdesign.simulation",
    "aggregate": "lipdesign.engine",
    "estimate_with_errors": "lipdesign.engine",
    "perturb_blocks": "lipdesign.engine",
    "perturb_file": "lipdesign.engine",
    "read_reports": "lipdesign.reports",
    "write_reports": "lipdesign.reports",
    "LipdesignError": "lipdesign.errors",
    "ValidationError": "lipdesign.errors",
    "InfeasibleError": "lipdesign.errors",
    "ProblemTooLargeError": "lipdesign.errors",
    "VerificationError": "lipdesign.errors",
    "FormatError": "lipdesign.errors",
    "SolverError": "lipdesign.errors",
}

#: Subpackages reachable as attributes (``ld.mechanisms.GRR``) without an explicit import. ``harmony`` and
#: ``runtime`` are the old names (deprecated since 0.2.0, removed in 0.4.0).
_SUBPACKAGES = ("designer", "domains", "engine", "harmony", "io", "learn", "mechanisms", "model", "reports",
                "runtime", "testing", "vectors", "verification")

#: Reachable for old code but left out of ``__all__`` (``from lipdesign import *`` would warn): removed in 0.4.0.
_DEPRECATED = ("Histogram", "WeightedSum", "estimate_with_errors", "harmony", "runtime")

__all__ = [name for name in (*_EXPORTS, *_SUBPACKAGES, "__version__") if name not in _DEPRECATED]


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    if name in _SUBPACKAGES:
        return import_module(f"lipdesign.{name}")
    raise AttributeError(f"module 'lipdesign' has no attribute {name!r}")


def __dir__():
    return __all__
