"""One small exception hierarchy. The CLI turns every LipdesignError into exit code 2 and one line.

Pure Python on purpose: lipdesign.mechanisms (numpy only) raises these too.
"""


class LipdesignError(Exception):
    """Base class of every error lipdesign raises on purpose."""


class ValidationError(LipdesignError, ValueError):
    """Input that breaks a documented rule. The message names the field, the value and the rule."""


class InfeasibleError(LipdesignError):
    """A design problem with no feasible table; the message says which constraint and which prior."""


class ProblemTooLargeError(LipdesignError):
    """Exact design would need more extreme rays than allowed; raised before the expensive work."""


class VerificationError(LipdesignError):
    """A table does not satisfy the privacy guarantee it claims."""


class FormatError(LipdesignError):
    """A JSON document that is not a valid lipdesign document (schema, version, or content)."""


class SolverError(LipdesignError):
    """A numerical back-end returned something that fails a consistency check; no table is returned."""


class EngineError(LipdesignError):
    """A distributed engine lost what it needed to finish (its workers, the data it had sent them); no result is
    returned, and the message says whether running the same call again is safe."""


class MissingDependencyError(LipdesignError, ImportError):
    """A part of lipdesign that needs packages the install left out (the base install is the runtime: load, verify,
    perturb, aggregate in memory, estimate); the message names the packages and the extra that brings them."""


def require(what, extra, *modules):
    """Raise MissingDependencyError unless every module in ``modules`` is installed: ``what`` needs them, and
    ``pip install "lipdesign[<extra>]"`` installs them."""
    from importlib.util import find_spec

    missing = [name for name in modules if find_spec(name) is None]
    if missing:
        raise MissingDependencyError(f"{what} needs {', '.join(missing)}, which this install leaves out: "
                                     f'pip install "lipdesign[{extra}]"')


class ShrinkageWarning(UserWarning):
    """An MMSE estimate was computed: posterior means under the design prior shrink toward it, so on a population
    that has drifted from the prior they are biased (docs/math.md §4, §11)."""


class SampleSizeWarning(UserWarning):
    """Too few users for the dimension and the epsilon: an LDP learner keeps only part of the features (docs/math.md
    §9.10); ``lipdesign.learn.users_needed`` says how many keep them all."""


class LegacyFileWarning(UserWarning):
    """A lipdesign 0.1.0 file was loaded: it carries no fingerprint, so an edit that keeps its claim true (a public
    seed, a table entry) cannot be detected; its guarantee is still re-verified exactly (docs/math.md §3.9)."""
