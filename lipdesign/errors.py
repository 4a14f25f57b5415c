"""One small exception hierarchy. The CLI turns every LipdesignError into exit code 2 and one line.

Pure Python on purpose: lipdesign.mechanisms (numpy only) raises these too.
"""


class LipdesignError(Exception):
    """Base class of every error lipdesign raises on purpose.

    Catch it to handle any refusal of lipdesign in one place: the CLI turns every LipdesignError into exit code 2
    and its one-line message. Each subclass says which kind of rule was broken.

    See Also
    --------
    ValidationError : Input that breaks a documented rule.
    InfeasibleError : A design problem with no feasible table.
    ProblemTooLargeError : An exact design too large to attempt.
    VerificationError : A table that does not satisfy its claimed guarantee.
    FormatError : A document that is not a valid lipdesign document.
    SolverError : A numerical back-end result that fails a consistency check.

    Examples
    --------
    >>> import lipdesign as ld
    >>> try:
    ...     ld.Prior([0.5, 0.6])
    ... except ld.LipdesignError as error:
    ...     print(f"{type(error).__name__}: {error}")
    ValidationError: prior sums to 1.1; it must sum to 1 within 1e-09
    """


class ValidationError(LipdesignError, ValueError):
    """Input that breaks a documented rule. The message names the field, the value and the rule.

    It is also a ``ValueError``, so code that already catches ``ValueError`` keeps working.

    Examples
    --------
    >>> import lipdesign as ld
    >>> ld.Prior([0.5, 0.6])
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: prior sums to 1.1; it must sum to 1 within 1e-09
    >>> ld.LDP(-1.0)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: epsilon is -1...
    """


class InfeasibleError(LipdesignError):
    """A design problem with no feasible table; the message says which constraint and which prior.

    Every notion allows the column that reports a constant, so the design LPs are feasible on valid input: in
    practice this signals an LP solve that did not end optimal (the message carries the solver's). A baseline of
    ``ld.design`` that fails this way is left out rather than blocking the design.

    Examples
    --------
    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> try:
    ...     mechanism = ld.design(prior, ld.LIP(1.0), baselines=False)
    ... except (ld.InfeasibleError, ld.SolverError) as error:
    ...     print("no table:", error)
    ... else:
    ...     print(mechanism.guarantee.notion, mechanism.guarantee.epsilon)
    LIP 1.0
    >>> issubclass(ld.InfeasibleError, ld.LipdesignError)
    True
    """


class ProblemTooLargeError(LipdesignError):
    """Exact design would need more extreme rays than allowed; raised before the expensive work.

    The message gives the count, the limit (``max_rays``) and what designs the problem instead (column
    generation, another family, fewer values).

    Examples
    --------
    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.4, 0.3, 0.2, 0.1])
    >>> ld.design(prior, ld.LDP(1.0), method="exact", max_rays=4)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ProblemTooLargeError: k is 4; exact LDP design needs 2^k - 2 = 14 extreme rays (limit
    max_rays=4); method='auto' (the default) or method='columns' designs it at any k by column generation ...
    """


class VerificationError(LipdesignError):
    """A table does not satisfy the privacy guarantee it claims.

    Raised when a mechanism is built or loaded: its guarantee is re-verified exactly, and a claim that does not
    hold is refused with the epsilon the table really has and where it is attained.

    Examples
    --------
    >>> import lipdesign as ld
    >>> table = [[0.9, 0.1], [0.1, 0.9]]  # randomized response with e^eps = 9
    >>> ld.mechanisms.TableMechanism(table, ld.LDP(1.0), [0.5, 0.5])
    Traceback (most recent call last):
    ...
    lipdesign.errors.VerificationError: the table is not LDP with eps=1 as sampled: the tightest epsilon of the
    table its sampler realises is 2.19722457734 (exact verification), attained at {'output': 0, 'inputs': [0, 1]}
    """


class FormatError(LipdesignError):
    """A JSON document that is not a valid lipdesign document (schema, version, or content).

    The message starts with the file (or source) and says what is wrong in it.

    Examples
    --------
    >>> import json
    >>> import lipdesign as ld
    >>> with open("notes.json", "w") as file:
    ...     json.dump({"format": "notes", "text": "hello"}, file)
    >>> ld.load("notes.json")
    Traceback (most recent call last):
    ...
    lipdesign.errors.FormatError: notes.json: not a lipdesign mechanism (format must be 'lipdesign.mechanism' or,
    from lipdesign 0.1.0, 'lipdesign.harmony')
    """


class SolverError(LipdesignError):
    """A numerical back-end returned something that fails a consistency check; no table is returned.

    The message says which check failed and, where there is one, what to try instead (a larger epsilon, a smaller
    prior set, another family or method). A design that succeeds has passed these checks.

    Examples
    --------
    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.5, 0.3, 0.2])
    >>> try:
    ...     mechanism = ld.design(prior, ld.LIP(1.0), family="unary", baselines=False)
    ... except ld.SolverError as error:
    ...     print("the design failed:", error)
    ... else:
    ...     print(type(mechanism).__name__, mechanism.guarantee.epsilon)
    UnaryEncoding 1.0
    """


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
        raise MissingDependencyError(f"{what}: this install leaves out {', '.join(missing)}; install the extra "
                                     f'"{extra}": pip install "lipdesign[{extra}]" (from a clone: '
                                     f'pip install ".[{extra}]")')


class ShrinkageWarning(UserWarning):
    """An MMSE estimate was computed: posterior means under the design prior shrink toward it, so on a population
    that has drifted from the prior they are biased (docs/math.md §4, §11).

    ``method="unbiased"`` (the default of the population objectives) or ``"mle"`` estimate the population without
    that bias.

    Examples
    --------
    >>> import warnings
    >>> import lipdesign as ld
    >>> mech = ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0), baselines=False)
    >>> reports = mech.perturb([0, 1, 2] * 100, rng=0)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     estimate = mech.estimate(reports, method="mmse")
    >>> [warning.category.__name__ for warning in caught]
    ['ShrinkageWarning']
    """


class SampleSizeWarning(UserWarning):
    """Too few users for the dimension and the epsilon: an LDP learner keeps only part of the features (docs/math.md
    §9.10); ``lipdesign.learn.users_needed`` says how many keep them all.

    Below that number the fitted model varies widely with the users' randomness and may not beat a constant
    prediction.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import lipdesign as ld
    >>> ld.learn.users_needed(5, 1.0)
    5050
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (1000, 5))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     model = ld.learn.LDPLogisticRegression(1.0, classes=(0, 1), random_state=0).fit(X, y)
    >>> [warning.category.__name__ for warning in caught]
    ['SampleSizeWarning']
    """


class LegacyFileWarning(UserWarning):
    """A lipdesign 0.1.0 file was loaded: it carries no fingerprint, so an edit that keeps its claim true (a public
    seed, a table entry) cannot be detected; its guarantee is still re-verified exactly (docs/math.md §3.9).

    Saving the mechanism again (``ld.save``) writes the current format, with its fingerprint.

    Examples
    --------
    >>> import json
    >>> import warnings
    >>> import lipdesign as ld
    >>> old = {"format": "lipdesign.harmony", "format_version": 1, "lipdesign_version": "0.1.0",
    ...        "mechanism": "GRR", "parameters": {"epsilon": 1.0, "k": 6},
    ...        "guarantee": "exact verification of the privacy table", "verified_epsilon": 0.9999999999}
    >>> with open("grr-0.1.0.json", "w") as file:
    ...     json.dump(old, file)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     mech = ld.load("grr-0.1.0.json")
    >>> mech, [warning.category.__name__ for warning in caught]
    (GRR(epsilon=1.0, k=6), ['LegacyFileWarning'])
    >>> ld.save(mech, "grr.json")  # the current format: no warning when loaded
    """
