"""lipdesign: design, verify and run local privacy mechanisms (LIP and LDP).

The pipeline, one folder per step: declare (``model``: Prior, SecretModel, PriorSet, Range) -> constrain
(``notions``, ``objectives``) -> design (``designer``) -> verify (``verification``) -> export (``io``) -> perturb,
aggregate, estimate (``mechanisms``, numpy only), with ``learn`` (LDP learners), ``simulation`` and ``testing``
(the conformance suite) on top. The derivations the code cites are in docs/math.md.

Names are imported lazily, so that ``import lipdesign.mechanisms`` needs numpy only (a device or an ingestion job
does not pay for cvxpy and scipy).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.3.0"

_EXPORTS = {
    "Prior": "lipdesign.model",
    "JointPrior": "lipdesign.model",
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
    "heavy_hitters": "lipdesign.hitters",
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
    "SampleSizeWarning": "lipdesign.errors",
    "ShrinkageWarning": "lipdesign.errors",
    "LegacyFileWarning": "lipdesign.errors",
}

#: Subpackages reachable as attributes (``ld.mechanisms.GRR``) without an explicit import. ``harmony`` and
#: ``runtime`` are the old names (deprecated since 0.2.0, removed in 0.4.0).
_SUBPACKAGES = ("designer", "domains", "engine", "harmony", "io", "learn", "mechanisms", "model", "reports",
                "rounds", "runtime", "testing", "vectors", "verification")

#: Reachable for old code but left out of ``__all__`` (``from lipdesign import *`` would warn): removed in 0.4.0.
_DEPRECATED = ("Histogram", "WeightedSum", "estimate_with_errors", "harmony", "runtime")

__all__ = [name for name in (*_EXPORTS, *_SUBPACKAGES, "__version__") if name not in _DEPRECATED]


if TYPE_CHECKING:  # what a type checker reads for the lazy names below (nothing is imported at run time)
    from lipdesign import designer as designer
    from lipdesign import domains as domains
    from lipdesign import engine as engine
    from lipdesign import io as io
    from lipdesign import learn as learn
    from lipdesign import mechanisms as mechanisms
    from lipdesign import model as model
    from lipdesign import reports as reports
    from lipdesign import rounds as rounds
    from lipdesign import testing as testing
    from lipdesign import vectors as vectors
    from lipdesign import verification as verification
    from lipdesign.auditor import audit as audit
    from lipdesign.designer.compare import compare as compare
    from lipdesign.designer.design import design as design
    from lipdesign.engine import aggregate as aggregate
    from lipdesign.engine import perturb_blocks as perturb_blocks
    from lipdesign.engine import perturb_file as perturb_file
    from lipdesign.errors import FormatError as FormatError
    from lipdesign.errors import InfeasibleError as InfeasibleError
    from lipdesign.errors import LegacyFileWarning as LegacyFileWarning
    from lipdesign.errors import LipdesignError as LipdesignError
    from lipdesign.errors import ProblemTooLargeError as ProblemTooLargeError
    from lipdesign.errors import SampleSizeWarning as SampleSizeWarning
    from lipdesign.errors import ShrinkageWarning as ShrinkageWarning
    from lipdesign.errors import SolverError as SolverError
    from lipdesign.errors import ValidationError as ValidationError
    from lipdesign.errors import VerificationError as VerificationError
    from lipdesign.hitters import heavy_hitters as heavy_hitters
    from lipdesign.io import load as load
    from lipdesign.io import save as save
    from lipdesign.mechanisms import Aggregate as Aggregate
    from lipdesign.mechanisms import Estimate as Estimate
    from lipdesign.mechanisms import Guarantee as Guarantee
    from lipdesign.mechanisms import Mechanism as Mechanism
    from lipdesign.mechanisms import TableMechanism as TableMechanism
    from lipdesign.mechanisms import verify as verify
    from lipdesign.model import JointPrior as JointPrior
    from lipdesign.model import Prior as Prior
    from lipdesign.model import PriorSet as PriorSet
    from lipdesign.model import Range as Range
    from lipdesign.model import SecretModel as SecretModel
    from lipdesign.notions import LDP as LDP
    from lipdesign.notions import LIP as LIP
    from lipdesign.notions import WorstCaseLIP as WorstCaseLIP
    from lipdesign.objectives import BayesHistogram as BayesHistogram
    from lipdesign.objectives import BayesSum as BayesSum
    from lipdesign.objectives import Frequencies as Frequencies
    from lipdesign.objectives import Mean as Mean
    from lipdesign.objectives import mse as mse
    from lipdesign.reports import read_reports as read_reports
    from lipdesign.reports import write_reports as write_reports
    from lipdesign.simulation import simulate as simulate
    from lipdesign.verification import Certificate as Certificate
    from lipdesign.verification import JointCertificate as JointCertificate
    from lipdesign.verification import Ledger as Ledger
    from lipdesign.verification import compose as compose


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    if name in _SUBPACKAGES:
        return import_module(f"lipdesign.{name}")
    raise AttributeError(f"module 'lipdesign' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
