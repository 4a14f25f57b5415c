"""The one contract every mechanism keeps (docs/math.md §1-§3).

A mechanism is an immutable object built in one step. It has

- ``family``: a stable id, used in JSON (``"table"``, ``"grr"``, ``"duchi"``, ...); ``lipdesign.mechanisms.registry``
  maps ids to classes;
- ``input_domain``: what it accepts (``lipdesign.domains``), the one place where inputs are checked;
- ``guarantee``: the notion, epsilon and what the claim rests on; ``verify()`` returns the exact Certificate
  wherever the output space is finite (``privacy_table()`` is then not None);
- ``perturb(values, *, rng=None, user_ids=None)`` -> reports (batched, numpy only; ``rng=None`` draws from ChaCha20
  keyed from the OS, docs/math.md §3.8);
- ``aggregate(reports)`` -> an ``Aggregate`` of sufficient statistics, mergeable with ``+`` and ``sum`` across
  files and machines; ``estimate(reports_or_aggregate, *, method=None, consistency=None)`` gives the same answer
  from either;
- ``variance(frequencies=None, n=1, *, method=None)`` and ``expected_estimate(frequencies=None, n=1, *, method=None)``:
  for a categorical input domain, at the true frequencies (default: the ``prior`` of a mechanism that has one,
  the design prior of every designed family; the uniform distribution otherwise) of ``n`` users (default 1: the
  per-user variance), given their values (docs/math.md §8, §11); for a numeric domain the first argument is the
  users' values, on which the variance depends;
- ``term_moments(aggregate)`` (numeric families, optional): (sum Y, sum Y^2, users) per entry of the estimate, a mean
  of independent per-user terms Y, from which ``estimate`` gives sample-variance standard errors (docs/math.md
  §15);
- ``report_bits`` and ``client_cost``: the size of a report and what a client computes for it, where stated;
- ``parameters()`` / ``from_parameters``, ``to_dict()`` (the versioned envelope that ``lipdesign.load`` reads),
  ``to_json(path)``.

Subclasses implement ``parameters``, ``example``, ``_perturb``, ``_statistics``, ``_estimate``, ``_expected``,
``_variance`` and, for a finite output space, ``privacy_table``. Numpy, randomgen and the standard library only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from lipdesign import __version__
from lipdesign.errors import ValidationError
from lipdesign.immutable import Immutable
from lipdesign.mechanisms.aggregate import Aggregate
from lipdesign.mechanisms.estimate import PLUG_IN, Estimate, sample_standard_errors
from lipdesign.mechanisms.postprocess import CONSISTENCY, consistent
from lipdesign.mechanisms.sampling import MAX_SEED, ONE_BIT_MAX_EPSILON, ONE_BIT_MIN_EPSILON, as_generator
from lipdesign.model import PriorSet
from lipdesign.notions import LDP, LIP
from lipdesign.validation import choice, fmt, integer, probability_vector
from lipdesign.validation import epsilon as epsilon_in
from lipdesign.verification import verify_table

if TYPE_CHECKING:  # annotations only: nothing more is imported at run time
    import os
    from typing import Self, TypeAlias

    import numpy.typing as npt

    from lipdesign.domains import Box, Categorical, MixedTuple, Strings
    from lipdesign.mechanisms.audit_plan import AuditPlan
    from lipdesign.mechanisms.sampling import RandomSource
    from lipdesign.model import Prior
    from lipdesign.notions import WorstCaseLIP
    from lipdesign.verification import Certificate

    #: What ``variance`` and ``expected_estimate`` give: an array, or one entry per attribute (HarmonyMixed).
    Values: TypeAlias = npt.NDArray[np.float64] | list[Any]

#: The envelope every mechanism is written in (``to_dict``); ``lipdesign.io`` reads it and the older ones.
FORMAT = "lipdesign.mechanism"
FORMAT_VERSION = 2

#: What a guarantee rests on (``Guarantee.basis``).
EXACT_TABLE = "exact table"
COMPOSITION = "composition of exact tables"
CLOSED_FORM = "ideal-arithmetic closed form"

#: The rule of a ``seed`` of public randomness (``sampling.public_seed``), for ``parameter_rules``.
SEED_RULE = f"integer in 0..{MAX_SEED - 1} (by default drawn from the OS and stored in the file)"


@dataclass(frozen=True)
class Guarantee:
    """The privacy claim of a mechanism: a notion at an epsilon, and what the claim rests on.

    ``basis`` is one of the exact verification of a finite table (``"exact table"``), a composition of exactly
    verified parts (``"composition of exact tables"``), or, for a continuous output only, a closed form in ideal
    real arithmetic (``"ideal-arithmetic closed form"``); ``detail`` says more where it matters (docs/math.md §3).
    Every mechanism states one as its ``guarantee``; ``Mechanism.verify`` certifies it where the output space is
    finite.

    Parameters
    ----------
    notion : str
        The privacy notion: ``"LDP"``, ``"LIP"``, ``"BP-LIP"`` or ``"WC-LIP"``.
    epsilon : float
        The claimed epsilon.
    basis : str
        What the claim rests on (see above).
    detail : str, optional
        More on the basis, e.g. the closed form of a continuous mechanism; empty by default.

    See Also
    --------
    Mechanism.verify : The exact certificate of a finite mechanism's guarantee.

    Examples
    --------
    >>> import lipdesign as ld
    >>> guarantee = ld.mechanisms.GRR(1.0, k=4).guarantee
    >>> guarantee.notion, guarantee.epsilon, guarantee.basis
    ('LDP', 1.0, 'exact table')
    >>> print(ld.mechanisms.Laplace(1.0, d=2).guarantee.summary())
    LDP eps=1 (composition of exact tables; 2 coordinates per user, each with an exact table at eps/2)
    """

    notion: str
    epsilon: float
    basis: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The guarantee as a JSON-able dict (the ``guarantee`` field of ``Mechanism.to_dict``).

        Returns
        -------
        dict
            ``notion``, ``epsilon``, ``basis`` and ``detail``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR(1.0, k=4).guarantee.to_dict()
        {'notion': 'LDP', 'epsilon': 1.0, 'basis': 'exact table', 'detail': ''}
        """
        return {"notion": self.notion, "epsilon": self.epsilon, "basis": self.basis, "detail": self.detail}

    def summary(self) -> str:
        """The guarantee in one line, as summaries print it.

        Returns
        -------
        str
            ``notion eps=epsilon (basis; detail)``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> print(ld.mechanisms.GRR(1.0, k=4).guarantee.summary())
        LDP eps=1 (exact table)
        """
        return f"{self.notion} eps={self.epsilon:g} ({self.basis}{'; ' + self.detail if self.detail else ''})"


class Mechanism(Immutable):
    """Base class of every mechanism: the one contract that every family keeps (docs/math.md §1-§3).

    A mechanism is immutable and built in one step. It perturbs each user's value into a report (``perturb``),
    counts reports into mergeable sufficient statistics (``aggregate``), estimates from reports or their aggregate
    with standard errors (``estimate``), predicts the exact variance of that estimate (``variance``), and
    certifies its privacy claim (``guarantee``) exactly wherever the output space is finite (``verify``). It is
    written to and read back from a versioned JSON envelope (``to_dict``, ``to_json``, ``lipdesign.load``)
    under its ``fingerprint``. The module docstring of ``lipdesign.mechanisms.base`` lists the contract in full.

    Subclasses implement ``parameters``, ``example``, ``_perturb``, ``_statistics``, ``_estimate``,
    ``_expected``, ``_variance`` and, for a finite output space, ``privacy_table``; ``register`` adds a family to
    the registry (docs/adding-a-family.md).

    See Also
    --------
    lipdesign.mechanisms.DesignedMechanism : The base of the mechanisms ``ld.design`` makes at a prior.
    lipdesign.mechanisms.register : Add a family to the registry of family ids.
    lipdesign.verify : The exact certificate of a mechanism's guarantee, also at another prior.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> mechanism = ld.mechanisms.GRR(1.0, k=4)
    >>> isinstance(mechanism, ld.mechanisms.Mechanism)
    True
    >>> values = np.random.default_rng(0).choice(4, size=20_000, p=[0.4, 0.3, 0.2, 0.1])
    >>> reports = mechanism.perturb(values, rng=1)
    >>> estimate = mechanism.estimate(reports)
    >>> np.round(estimate.values, 2)
    array([0.39, 0.31, 0.21, 0.09])
    >>> print(mechanism.verify().summary())
    PASS: tightest LDP epsilon <= 0.9999999999 against claimed eps = 1 (exact rational); worst at ...
    """

    #: The stable id in JSON and in the registry.
    family: ClassVar[str] = ""
    #: Estimation methods; the first is the default (``default_method`` may choose per instance).
    methods: ClassVar[tuple[str, ...]] = ("unbiased",)
    #: The epsilons the family accepts, [low, high] (low = 0 means any epsilon > 0). The default is the range of
    #: the mechanisms with a flip probability computed in floating point (``sampling.ONE_BIT_MIN_EPSILON``).
    epsilon_range: ClassVar[tuple[float, float]] = (ONE_BIT_MIN_EPSILON, ONE_BIT_MAX_EPSILON)
    #: (name, rule) of each constructor argument but epsilon (``epsilon_range``): what it accepts, in words, from the
    #: constants the constructor checks with; ``registry.describe`` sets them beside the signature's defaults (the
    #: CLI's help and errors).
    parameter_rules: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: Design provenance written with the envelope (designed tables); None for the fixed mechanisms.
    provenance: Mapping[str, Any] | None = None

    #: Whether ``ld.design`` may have made this family (with a provenance in its files that ``load`` checks for form
    #: and leaves out) although the mechanism itself can be built without one.
    records_provenance = False
    #: What a client computes per report, in words (``ld.compare`` shows it; empty where not stated).
    client_cost: ClassVar[str] = ""
    #: Set by every family's constructor (annotations only).
    epsilon: float
    input_domain: Categorical | Box | MixedTuple | Strings
    #: What every family implements (the module docstring); annotations only, so a family without one still fails
    #: with AttributeError.
    _perturb: Callable[..., npt.NDArray[Any]]
    _statistics: Callable[..., tuple[int, dict[str, Any]]]
    _estimate: Callable[..., Any]
    _expected: Callable[..., Any]
    _variance: Callable[..., Any]

    @property
    def uses_user_ids(self) -> bool:
        """Whether public randomness is keyed by user ids: ``perturb``, ``aggregate`` and ``estimate`` then take
        ``user_ids`` (``HarmonyNumeric`` with ``coordinates="public"``); False for every other family.

        Returns
        -------
        bool
            True when ``perturb(values, user_ids=...)`` needs the users' ids.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR(1.0, 3).uses_user_ids
        False
        """
        return False

    @property
    def report_bits(self) -> int | None:
        """Bits of information in one report (the log2 of the number of possible reports, rounded up), or None where
        a family does not state it (continuous reports).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR(1.0, k=4).report_bits
        2
        """
        return None

    # -- what a family provides -----------------------------------------------------------------------------
    def parameters(self) -> dict[str, Any]:
        """The constructor arguments (JSON-able), including the seeds of public randomness.

        ``from_parameters`` rebuilds the same mechanism from them, ``to_dict`` writes them and ``fingerprint``
        hashes them.

        Returns
        -------
        dict
            Each constructor argument by name.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR(1.0, k=4).parameters()
        {'epsilon': 1.0, 'k': 4}
        """
        raise NotImplementedError

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any], provenance: Mapping[str, Any] | None = None) -> Self:
        """The mechanism of ``parameters()``, as read back from JSON.

        Refused unless ``parameters`` names exactly what ``parameters()`` writes (``check_parameter_names``: nothing
        is defaulted); the fixed mechanisms record no provenance.

        Parameters
        ----------
        parameters : mapping
            The constructor arguments by name, every one of them, as ``parameters()`` writes them.
        provenance : mapping, optional
            The design provenance of a designed family; None (the default) for the fixed mechanisms, which record
            none.

        Returns
        -------
        Mechanism
            The mechanism of this class with these parameters.

        Raises
        ------
        ValidationError
            A name missing from ``parameters`` or unknown to the class, an argument the constructor refuses, or a
            provenance for a class that records none.

        Examples
        --------
        >>> import lipdesign as ld
        >>> grr = ld.mechanisms.GRR(1.0, k=4)
        >>> ld.mechanisms.GRR.from_parameters(grr.parameters()) == grr
        True
        >>> ld.mechanisms.Laplace.from_parameters({"epsilon": 1.0})
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: parameters.d, parameters.grid are missing; Laplace writes ...
        """
        if provenance is not None:
            raise ValidationError(f"provenance is {fmt(provenance)}; {cls.__name__} records no design provenance")
        mechanism = cls(**parameters)
        check_parameter_names(parameters, mechanism.parameters(), cls.__name__)
        return mechanism

    @classmethod
    def example(cls) -> Self:
        """A small instance, for the conformance suite (``lipdesign.testing.check_mechanism``) and for docs.

        Returns
        -------
        Mechanism
            An instance of this class with small parameters.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR.example()
        GRR(epsilon=1.0, k=6)
        """
        raise NotImplementedError

    @property
    def guarantee(self) -> Guarantee:
        """The privacy claim; finite mechanisms rest it on their exactly verified ``privacy_table``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR(1.0, k=4).guarantee
        Guarantee(notion='LDP', epsilon=1.0, basis='exact table', detail='')
        """
        return Guarantee("LDP", self.epsilon, EXACT_TABLE)

    def privacy_table(self) -> npt.NDArray[Any] | None:
        """A finite table whose exact epsilon is the mechanism's, as the sampler realises it.

        For a composition of parts (basis COMPOSITION: Piecewise, Hybrid, Laplace with d > 1) it is one part's
        table, which ``_certify`` composes.

        Returns
        -------
        numpy.ndarray or None
            Rows: inputs, columns: outputs, Pr[output | input]; None when the output space is continuous (the
            guarantee is then the documented closed form).

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> np.round(ld.mechanisms.GRR(1.0, k=2).privacy_table(), 4)
        array([[0.7311, 0.2689],
               [0.2689, 0.7311]])
        """
        return None  # noqa: RET501 (finite families return their table)

    def _certify(self) -> Certificate:
        """The exact Certificate of the claim (finite families; override to compose parts)."""
        return verify_table(self.privacy_table(), LDP(self.epsilon), exact=True)

    @classmethod
    def checked_epsilon(cls, value: float) -> float:
        """``value`` as an epsilon of this family (``epsilon_range``).

        Parameters
        ----------
        value : float
            The epsilon to check.

        Returns
        -------
        float
            ``value`` as a float.

        Raises
        ------
        ValidationError
            ``value`` is not a number in the family's ``epsilon_range``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR.checked_epsilon(2)
        2.0
        >>> ld.mechanisms.GRR.checked_epsilon(31)
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: epsilon is 31; it must lie in (0, 30]
        """
        low, high = cls.epsilon_range
        return epsilon_in(value, low, high, include_low=low > 0)

    # -- optional capabilities: the tools ask the mechanism (docs/adding-a-family.md) ------------------------------
    #: The ``ld.design`` family (``design(family=...)``) that rebuilds this family from its provenance (``lipdesign
    #: plot``), None where ``ld.design`` does not make it.
    design_family: ClassVar[str | None] = None

    def audit_plan(self) -> AuditPlan | None:
        """What ``ld.audit`` reads (docs/math.md §14).

        Returns
        -------
        AuditPlan or None
            The inputs to audit, the output classes and their probabilities from the realised sampler; None where
            the family states none (the audit refuses it).

        Examples
        --------
        >>> import lipdesign as ld
        >>> plan = ld.mechanisms.GRR(1.0, k=4).audit_plan()
        >>> plan.row_names, plan.class_names
        (['x=0', 'x=1'], ['y=0', 'y=1', 'other'])
        """
        return None

    def device_numbers(self) -> dict[str, Any]:
        """The numbers a device reads beyond ``parameters()``, exactly as ``perturb`` uses them.

        They are written into the test vectors (docs/runtime.md: floats in shortest round-trip form, tables of
        integers).

        Returns
        -------
        dict
            The numbers by name; {} where the parameters are all a device needs.

        Examples
        --------
        >>> import lipdesign as ld
        >>> sorted(ld.mechanisms.GRR(1.0, k=4).device_numbers())
        ['alpha', 'k']
        """
        return {}

    def display_name(self) -> str:
        """A short name of this mechanism for tables (``ld.compare``) and figures.

        Returns
        -------
        str
            The class name by default.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR(1.0, k=4).display_name()
        'GRR'
        """
        return type(self).__name__

    @property
    def default_method(self) -> str:
        """The estimation method ``estimate`` and ``variance`` use when given none: the first of ``methods``
        (designed families choose per instance).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR(1.0, k=4).default_method
        'unbiased'
        """
        return self.methods[0]

    @property
    def finite(self) -> bool:
        """Whether the output space is finite, so that ``verify()`` is an exact certificate.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR(1.0, k=4).finite
        True
        """
        return self.guarantee.basis != CLOSED_FORM

    # -- the contract -----------------------------------------------------------------------------------------
    @cached_property
    def certificate(self) -> Certificate:
        """The exact Certificate of the guarantee (computed once)."""
        if not self.finite:
            raise ValidationError(f"{type(self).__name__} has a continuous output space; its guarantee is the "
                                  f"{self.guarantee.basis} ({self.guarantee.detail}), not a finite table")
        return self._certify()

    def verify(self) -> Certificate:
        """The exact Certificate of the guarantee (docs/math.md §3), computed once.

        Returns
        -------
        Certificate
            The tightest epsilon in exact rational arithmetic (rounded up), where it is attained, and whether it is
            within the claim.

        Raises
        ------
        ValidationError
            The output space is continuous: the guarantee is a closed form, with no finite table to verify.

        See Also
        --------
        lipdesign.verify : The same, and a designed table's LIP at another prior.

        Examples
        --------
        >>> import lipdesign as ld
        >>> certificate = ld.mechanisms.GRR(1.0, k=4).verify()
        >>> certificate.passed, round(certificate.epsilon, 6)
        (True, 1.0)
        """
        return self.certificate

    def summary(self) -> str:
        """What the mechanism is and what it guarantees, as printed by the CLI (designed families say more).

        Returns
        -------
        str
            The mechanism's repr, then its certificate's summary (or the closed-form guarantee).

        Examples
        --------
        >>> import lipdesign as ld
        >>> print(ld.mechanisms.GRR(1.0, k=4).summary())
        GRR(epsilon=1.0, k=4)
        PASS: tightest LDP epsilon <= 0.9999999999 against claimed eps = 1 (exact rational); worst at ...
        """
        if not self.finite:
            return (f"{self!r}\ncontinuous output space, no finite table to verify; "
                    f"guarantee: {self.guarantee.summary()}")
        return f"{self!r}\n{self.verify().summary()}"

    def verified_epsilons(self) -> dict[str, float]:
        """Exactly verified tightest epsilons, by name.

        Returns
        -------
        dict of str to float
            ``{"claimed": ...}`` for the fixed mechanisms, more names for the designed ones (``"LDP"``,
            ``"LIP for X"``, ...); {} for a continuous output space; inf where unbounded.

        Examples
        --------
        >>> import lipdesign as ld
        >>> epsilons = ld.mechanisms.GRR(1.0, k=4).verified_epsilons()
        >>> {name: round(value, 6) for name, value in epsilons.items()}
        {'claimed': 1.0}
        """
        if not self.finite:
            return {}
        return {"claimed": self.certificate.epsilon}

    def perturb(self, values: npt.ArrayLike, *, rng: RandomSource = None,
                user_ids: npt.ArrayLike | None = None) -> npt.NDArray[Any]:
        """One report per user: the users' ``values`` perturbed, in a batch.

        The values are checked by ``input_domain``, the one place where inputs are checked.

        Parameters
        ----------
        values : array_like
            One value per user, as ``input_domain`` takes them (category indices or labels, points of a box, ...).
        rng : numpy.random.Generator, numpy.random.BitGenerator or int, optional
            The randomness: an int seed (PCG64), a Generator or a BitGenerator; None (the default) draws from
            ChaCha20 keyed from the OS (docs/math.md §3.8).
        user_ids : array_like, optional
            One id per user, keying the public randomness of the families that use it (``uses_user_ids``); refused
            by the others.

        Returns
        -------
        numpy.ndarray
            The reports, one per user (a row per user for vector reports).

        Raises
        ------
        ValidationError
            A value outside ``input_domain``, or ``user_ids`` for a family that keys no public randomness by user.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.GRR(1.0, k=4)
        >>> reports = mechanism.perturb([0, 1, 2, 3, 0, 0], rng=0)
        >>> reports.shape, reports.dtype
        ((6,), dtype('int64'))
        >>> mechanism.perturb([4], rng=0)
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: values contains 4 at position 0; it must be an index in 0..3
        """
        values = self.input_domain.validate(values)
        return self._perturb(values, as_generator(rng), self._user_ids(user_ids))

    def aggregate(self, reports: npt.ArrayLike) -> Aggregate:
        """The sufficient statistics of ``reports``, mergeable across files and machines.

        Parameters
        ----------
        reports : array_like
            Reports of this mechanism, as ``perturb`` returns them.

        Returns
        -------
        Aggregate
            The statistics with the number of reports; ``+`` (and ``sum``) merges aggregates of the same mechanism,
            and ``aggregate(empty_reports())`` is the zero.

        Raises
        ------
        ValidationError
            A report that this mechanism cannot produce.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.GRR(1.0, k=4)
        >>> first = mechanism.aggregate(mechanism.perturb([0, 1, 2], rng=0))
        >>> second = mechanism.aggregate(mechanism.perturb([3, 3], rng=1))
        >>> first + second
        Aggregate(grr, n=5, statistics=['support'])
        """
        n, statistics = self._statistics(reports)
        return Aggregate(self.fingerprint, self.family, n, statistics)

    def empty_reports(self) -> npt.NDArray[Any]:
        """A batch of no reports in this mechanism's report format (indices, unless a family says otherwise).

        Returns
        -------
        numpy.ndarray
            An array with no reports.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.GRR(1.0, k=4)
        >>> mechanism.empty_reports()
        array([], dtype=int64)
        >>> mechanism.aggregate(mechanism.empty_reports()).n
        0
        """
        return np.zeros(0, dtype=np.int64)

    @cached_property
    def _zero(self) -> Aggregate:
        return self.aggregate(self.empty_reports())

    def estimate(self, reports: npt.ArrayLike | Aggregate, *, method: str | None = None,
                 consistency: str | None = None) -> Estimate:
        """The estimate from reports or from their Aggregate (the same numbers either way), with standard errors for
        every family (docs/math.md §11, §15).

        Parameters
        ----------
        reports : array_like or Aggregate
            Reports of this mechanism (at least one), or their aggregate.
        method : str, optional
            One of ``methods``; None (the default) is ``default_method``.
        consistency : {"norm-sub"}, optional
            ``"norm-sub"`` makes estimated frequencies non-negative and sum to 1 (docs/math.md §8; the errors and
            intervals refer to the unbiased values, ``raw``); None (the default) leaves them as estimated.

        Returns
        -------
        Estimate
            The estimated frequencies (categorical input) or means (numeric input), with standard errors.

        Raises
        ------
        ValidationError
            No reports, an aggregate of another mechanism, a method not in ``methods``, an unknown consistency, or
            a consistency for a numeric estimate.

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> mechanism = ld.mechanisms.GRR(1.0, k=4)
        >>> values = np.random.default_rng(0).choice(4, size=20_000, p=[0.4, 0.3, 0.2, 0.1])
        >>> reports = mechanism.perturb(values, rng=1)
        >>> estimate = mechanism.estimate(reports)
        >>> np.round(estimate.values, 2), np.round(estimate.standard_errors, 2)
        (array([0.39, 0.31, 0.21, 0.09]), array([0.01, 0.01, 0.01, 0.01]))

        The aggregates of two halves merge into the same estimate:

        >>> halves = mechanism.aggregate(reports[:10_000]) + mechanism.aggregate(reports[10_000:])
        >>> np.round(mechanism.estimate(halves).values, 2)
        array([0.39, 0.31, 0.21, 0.09])
        """
        aggregate = self._aggregate_of(reports)
        method = self._method(method)
        consistency = None if consistency is None else choice(consistency, "consistency", CONSISTENCY)
        raw = self._estimate(aggregate, method)
        values = self._consistent(raw, consistency)
        return values if isinstance(values, Estimate) else with_standard_errors(self, aggregate, raw, values, method)

    def expected_estimate(self, frequencies: npt.ArrayLike | None = None, n: int | None = 1, *,
                          method: str | None = None, user_ids: npt.ArrayLike | None = None) -> Values:
        """E[estimate] at the true ``frequencies`` (categorical) or the users' values (numeric): the truth for an
        unbiased estimator.

        Parameters
        ----------
        frequencies : array_like, optional
            For a categorical input domain, the true frequencies (None, the default: as for ``variance``); for a
            numeric one, the users' values.
        n : int, optional
            The number of users, as for ``variance`` (default 1; only a sum estimate depends on it).
        method : str, optional
            One of ``methods``; None (the default) is ``default_method``.
        user_ids : array_like, optional
            The users' ids, for the families that key public randomness by user (``uses_user_ids``).

        Returns
        -------
        numpy.ndarray or list
            The expected estimate, an entry per entry of the estimate (a list of one per attribute for mixed
            tuples).

        Raises
        ------
        ValidationError
            As for ``variance``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR(1.0, k=4).expected_estimate([0.4, 0.3, 0.2, 0.1])
        array([0.4, 0.3, 0.2, 0.1])
        """
        population, _ = self._population(frequencies, n)
        return self._expected(population, self._method(method), self._user_ids(user_ids))

    def variance(self, frequencies: npt.ArrayLike | None = None, n: int | None = 1, *, method: str | None = None,
                 user_ids: npt.ArrayLike | None = None) -> Values:
        """The exact variance of each entry of the estimate, given the users' values (docs/math.md §8, §11).

        Parameters
        ----------
        frequencies : array_like, optional
            For a categorical input domain, the true frequencies; None (the default) is the mechanism's ``prior``
            where it has one, the design prior of a designed family, else uniform. For a numeric one, the users'
            values, on which the variance depends (required).
        n : int, optional
            The number of users (default 1: the per-user variance); for a numeric domain, None, 1 or the number of
            values.
        method : str, optional
            One of ``methods``; None (the default) is ``default_method``.
        user_ids : array_like, optional
            The users' ids, for the families that key public randomness by user (``uses_user_ids``).

        Returns
        -------
        numpy.ndarray or list
            The variance of each entry of the estimate (a list of one array per attribute for mixed tuples).

        Raises
        ------
        ValidationError
            Frequencies that are not a probability vector with one entry per value, no values for a numeric domain,
            an ``n`` other than their number, a method not in ``methods``, or ``user_ids`` for a family that takes
            none.

        Examples
        --------
        The standard errors of GRR's frequencies from 20,000 users, as ``estimate`` finds them:

        >>> import lipdesign as ld
        >>> import numpy as np
        >>> variance = ld.mechanisms.GRR(1.0, k=4).variance([0.4, 0.3, 0.2, 0.1], n=20_000)
        >>> np.round(np.sqrt(variance), 4)
        array([0.0102, 0.0099, 0.0096, 0.0093])
        """
        population, n = self._population(frequencies, n)
        return self._variance(population, n, self._method(method), self._user_ids(user_ids))

    def population_of(self, values: npt.ArrayLike) -> tuple[Any, int | None]:
        """(population, n) for ``variance`` and ``expected_estimate`` from the users' ``values``.

        Parameters
        ----------
        values : array_like
            One value per user, as ``input_domain`` takes them.

        Returns
        -------
        tuple
            For a categorical input domain, the frequencies of the values and their number; for a numeric one, the
            values themselves and None.

        Raises
        ------
        ValidationError
            A categorical value outside ``input_domain``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> frequencies, n = ld.mechanisms.GRR(1.0, k=4).population_of([0, 1, 1, 3])
        >>> frequencies.tolist(), n
        ([0.25, 0.5, 0.0, 0.25], 4)
        """
        if self.input_domain.kind == "categorical":
            domain = cast("Categorical", self.input_domain)
            indices = domain.validate(values)
            return np.bincount(indices, minlength=domain.k) / indices.size, indices.size
        return values, None

    def estimand(self, values: npt.ArrayLike) -> Any:
        """What the estimate targets for the population ``values``.

        Parameters
        ----------
        values : array_like
            One value per user, as ``input_domain`` takes them.

        Returns
        -------
        numpy.ndarray or list
            The frequencies of the values (categorical), their means (numeric), or a list of both (mixed tuples).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR(1.0, k=4).estimand([0, 1, 1, 3]).tolist()
        [0.25, 0.5, 0.0, 0.25]
        >>> ld.mechanisms.Laplace(1.0).estimand([0.5, -0.2]).round(4).tolist()
        [0.15]
        """
        return self.input_domain.truth(values)

    def estimand_names(self) -> list[str]:
        """Names of the entries of the (flattened) estimate.

        Returns
        -------
        list of str
            One name per entry.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.mechanisms.GRR(1.0, k=3).estimand_names()
        ['frequency[0]', 'frequency[1]', 'frequency[2]']
        """
        return self.input_domain.names()

    @cached_property
    def fingerprint(self) -> str:
        """The sha256 (64 hex digits) of the canonical JSON of ``{"family", "parameters"}`` (docs/math.md §3.9): the
        mechanism's identity. Files carry it, ``load`` refuses a file whose mechanism is not the one it names, and
        aggregates merge and estimate only with the mechanism whose reports they count."""
        return content_fingerprint(self.family, self.parameters())

    def to_dict(self) -> dict[str, Any]:
        """The versioned JSON envelope, with the ``fingerprint``; ``lipdesign.load`` reads it back and re-verifies.

        Returns
        -------
        dict
            ``format``, ``format_version``, ``lipdesign_version``, ``family``, ``fingerprint``, ``parameters``,
            ``guarantee`` (with the verified epsilons) and, for a designed family, ``provenance``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> document = ld.mechanisms.GRR(1.0, k=4).to_dict()
        >>> document["format"], document["family"], document["parameters"]
        ('lipdesign.mechanism', 'grr', {'epsilon': 1.0, 'k': 4})
        >>> document["guarantee"]["notion"], document["guarantee"]["basis"]
        ('LDP', 'exact table')
        """
        verified = {name: (value if np.isfinite(value) else None) for name, value in self.verified_epsilons().items()}
        document = {"format": FORMAT, "format_version": FORMAT_VERSION, "lipdesign_version": __version__,
                    "family": self.family, "fingerprint": self.fingerprint, "parameters": self.parameters(),
                    "guarantee": {**self.guarantee.to_dict(), "verified_epsilons": verified}}
        if self.provenance is not None:
            document["provenance"] = json.loads(json.dumps(dict(self.provenance), default=float))
        return document

    def to_json(self, path: str | os.PathLike[str]) -> None:
        """Write ``to_dict()`` to ``path`` (serialised first: a failure leaves no truncated file).

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (replaced if it exists).

        Examples
        --------
        >>> import lipdesign as ld
        >>> mechanism = ld.mechanisms.GRR(1.0, k=4)
        >>> mechanism.to_json("grr.json")
        >>> ld.load("grr.json") == mechanism
        True
        """
        text = json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n"
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and isinstance(other, Mechanism) and self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        arguments = ", ".join(f"{name}={value!r}" for name, value in self.parameters().items())
        return f"{type(self).__name__}({arguments})"

    # -- shared checks ----------------------------------------------------------------------------------------
    def _method(self, method):
        method = self.default_method if method is None else method
        return choice(method, "method", self.methods)

    def _user_ids(self, user_ids):
        if user_ids is None or self.uses_user_ids:
            return user_ids
        raise ValidationError(f"user_ids is {fmt(user_ids)}; {type(self).__name__} keys no public randomness by "
                              "user id, so it takes no user_ids")

    def _population(self, population, n):
        if self.input_domain.kind == "categorical":
            domain = cast("Categorical", self.input_domain)
            if population is None:  # a designed mechanism's design prior, else the uniform distribution
                prior = getattr(self, "prior", None)
                population = prior.probabilities if prior is not None else np.full(domain.k, 1.0 / domain.k)
            frequencies = probability_vector(population, "frequencies", length=domain.k)
            return frequencies, 1 if n is None else integer(n, "n")
        if population is None:
            raise ValidationError(f"values is None; {type(self).__name__}'s variance depends on the users' values, so "
                                  "pass them")
        values = self.input_domain.validate(population)
        if n is not None and n not in (1, _size(values)):
            raise ValidationError(f"n is {fmt(n)}; {type(self).__name__}'s variance depends on the users' values, "
                                  f"whose number ({_size(values)}) is n")
        return values, _size(values)

    def _aggregate_of(self, reports):
        if not isinstance(reports, Aggregate):
            aggregate = self.aggregate(reports)
            if aggregate.n == 0:
                raise ValidationError(f"reports has shape {np.shape(reports)}; estimating needs a non-empty vector "
                                      "of reports")
            return aggregate
        if (reports.mechanism, reports.family) != (self.fingerprint, self.family):
            raise ValidationError(f"aggregate is of mechanism {reports.mechanism} ({reports.family}); this "
                                  f"{type(self).__name__} is {self.fingerprint} ({self.family}): aggregates only "
                                  "estimate with the mechanism whose reports they count")
        reports.check_like(self._zero)
        if reports.n == 0:
            raise ValidationError("aggregate holds 0 reports; estimating needs at least one")
        return reports

    def _consistent(self, estimate, consistency):
        """Consistency post-processing of the estimate (frequencies only)."""
        if consistency is None:
            return estimate
        if self.input_domain.kind == "strings":
            raise ValidationError(f"consistency is {consistency!r}; the frequencies of a candidate list need not sum "
                                  "to 1 (users may hold values outside it), so no consistency step applies")
        if self.input_domain.kind != "categorical":
            raise ValidationError(f"consistency is {consistency!r}; it applies to frequencies, and "
                                  f"{type(self).__name__} estimates means")
        return consistent(estimate, consistency)


def with_standard_errors(mechanism: Mechanism, aggregate: Aggregate, raw: Any, values: Any, method: str) -> Estimate:
    """The Estimate of a family whose estimator states no errors of its own (docs/math.md §15): ``raw`` its
    estimate, ``values`` the same after the consistency step. Frequencies: the plug-in standard errors, the square
    roots of ``mechanism.variance`` at the Norm-Sub projection of ``raw`` (docs/math.md §8.1, §8.6), computed when
    first asked for (a pooled OLH's variance costs seconds at k = 1000). Means (and
    mixed tuples): the sample-variance standard errors of the per-user terms (``term_moments``, Proposition 15.3),
    conservative when the users' values differ, exact in expectation when they share one value; nan where fewer
    than 2 reports estimate an entry, or where a family states no per-user terms."""
    from lipdesign.mechanisms.postprocess import norm_sub

    names, n = mechanism.estimand_names(), aggregate.n
    if mechanism.input_domain.kind == "categorical":
        def errors():  # computed when first asked for
            return np.sqrt(mechanism.variance(norm_sub(raw), n, method=method))

        return Estimate(values, errors, n=n, method=method, names=names, raw=raw, note=PLUG_IN)
    parts = None
    if isinstance(values, list):  # a mixed tuple: one block per attribute
        parts = [("mean", 1) if np.ndim(part) == 0 else ("frequencies", np.size(part)) for part in values]
        values = np.concatenate([np.atleast_1d(part) for part in values])
    kind = "mean" if parts is None else "tuple"
    term_moments = getattr(mechanism, "term_moments", None)
    if term_moments is None:  # a registered family that does not state its per-user terms
        return Estimate(values, np.full(np.size(values), np.nan), n=n, method=method, kind=kind, names=names,
                        parts=parts, note="no standard errors: this family's variance depends on the users' values")
    sums, squares, users = (np.broadcast_to(np.asarray(part, dtype=float), np.shape(values))
                            for part in term_moments(aggregate))
    note = ("sample-variance standard errors of the per-user terms: conservative when the users' values differ, "
            "exact in expectation when they share one value (docs/math.md §15)")
    if (users < 2).any():
        note += "; nan where fewer than 2 reports estimate an entry (n < 2, or a bucket of fewer than 2 users)"
    if np.isnan(users).any():
        note += "; none for the frequencies of the categorical attributes"
    return Estimate(values, sample_standard_errors(sums, squares, users), n=n, method=method, kind=kind,
                    names=names, parts=parts, note=note)


def canonical_json(content: Any) -> str:
    """The canonical JSON text of ``content`` (docs/math.md §3.9): keys sorted, no whitespace, ASCII only (other
    characters as \\u escapes), floats as Python's repr (the shortest text that reads back as the same double),
    integers in decimal, NaN and infinities refused."""
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def content_fingerprint(family: str, parameters: Mapping[str, Any]) -> str:
    """The fingerprint (``Mechanism.fingerprint``) of the mechanism of ``family`` with ``parameters``."""
    text = canonical_json({"family": family, "parameters": parameters})
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def check_parameter_names(parameters: Any, written: Mapping[str, Any], writer: str, field: str = "parameters") -> None:
    """Raise ValidationError unless ``parameters`` (as read) has, at every depth of its objects, exactly the names
    of ``written`` (what ``writer`` writes, e.g. the rebuilt mechanism's ``parameters()``): a name left out would
    silently take its default (a file without ``d`` must not become d = 1), an unknown one would be ignored."""
    missing, unknown = [], []
    pending = [(field, parameters, written)]
    while pending:
        path, stored, expected = pending.pop()
        if isinstance(stored, dict) and isinstance(expected, dict):
            missing += [f"{path}.{name}" for name in expected if name not in stored]
            unknown += [f"{path}.{name}" for name in stored if name not in expected]
            pending += [(f"{path}.{name}", stored[name], expected[name]) for name in expected if name in stored]
        elif isinstance(stored, list) and isinstance(expected, list) and len(stored) == len(expected):
            pending += [(f"{path}[{at}]", *pair) for at, pair in enumerate(zip(stored, expected))
                        if isinstance(pair[1], (dict, list))]
    problems = [f"{', '.join(sorted(names))} {'is' if len(names) == 1 else 'are'} {what}"
                for names, what in ((missing, "missing"), (unknown, "unknown")) if names]
    if problems:
        raise ValidationError(f"{'; '.join(problems)}; {writer} writes {', '.join(sorted(written))}, each stored in "
                              "full (a name left out is not defaulted)")


def _size(values):
    """The number of users: a mixed tuple's values are a list of columns, a string domain's a list of values."""
    return len(values[0]) if isinstance(values, list) and values and not isinstance(values[0], bytes) else len(values)


def verify(subject: Mechanism | npt.ArrayLike, notion: LDP | LIP | WorstCaseLIP | None = None,
           prior: Prior | PriorSet | npt.ArrayLike | None = None, *, exact: bool = True) -> Certificate:
    """The exact Certificate of a mechanism's guarantee, of a designed table at another prior, or of a bare table.

    Given a mechanism alone, the certificate of its own guarantee (``Mechanism.verify``). Given a designed table
    and a ``prior`` (a Prior or probabilities), the tightest LIP epsilon for its secret at that prior; given a
    PriorSet, the worst over the set, which for a TV ball or a box is attained at its vertices (docs/math.md §2,
    §3). Given a bare ``table``, its certificate under ``notion``, with the design ``prior`` for LIP notions: exact
    by default (rational arithmetic, docs/math.md §3); ``exact=False`` is the quick floating-point check, which
    passes within 1e-9 of the claim.

    Parameters
    ----------
    subject : Mechanism or array_like
        A mechanism, or a bare table (one row per input value, one column per output, Pr[output | input]).
    notion : LDP, LIP or WorstCaseLIP, optional
        The notion and its claimed epsilon, for a bare table (required there); a mechanism is verified against its
        own guarantee, so None (the default) for a mechanism.
    prior : Prior, PriorSet or array_like, optional
        For a designed mechanism, the prior (or prior set) at which to verify its LIP; for a bare table, the design
        prior of an LIP notion. None by default.
    exact : bool, default True
        For a bare table: rational arithmetic (a proof, rounded up) or floating point. A mechanism is always
        verified exactly.

    Returns
    -------
    Certificate
        The tightest epsilon, where it is attained, and whether it is within the claim.

    Raises
    ------
    ValidationError
        A notion given with a mechanism, a prior given for a mechanism with no design prior (eps-LDP is eps-LIP at
        every prior), a prior with another number of values than the mechanism, or what ``Mechanism.verify`` and
        ``lipdesign.verification.verify_table`` refuse.

    See Also
    --------
    lipdesign.mechanisms.Mechanism.verify : The certificate of a mechanism's own guarantee.
    lipdesign.verification.verify_table : The certificate of a bare table.

    Examples
    --------
    A designed table, at its design prior and at another one:

    >>> import lipdesign as ld
    >>> import numpy as np
    >>> mechanism = ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0))
    >>> certificate = ld.verify(mechanism)
    >>> certificate.passed, round(certificate.epsilon, 4)
    (True, 1.0)
    >>> certificate = ld.verify(mechanism, prior=[0.4, 0.4, 0.2])
    >>> certificate.passed, round(certificate.epsilon, 4)
    (False, 1.1912)

    A bare table under LDP:

    >>> table = np.array([[0.75, 0.25], [0.25, 0.75]])
    >>> certificate = ld.verify(table, ld.LDP(1.1))
    >>> certificate.passed, round(certificate.epsilon, 4)
    (True, 1.0986)
    """
    if isinstance(subject, Mechanism):
        if notion is not None:
            raise ValidationError(f"notion is {notion!r}; a mechanism is verified against its own guarantee (pass "
                                  "prior= to verify a designed table's LIP at another prior)")
        if prior is None:
            return subject.verify()
        return _verify_at(subject, prior)
    return verify_table(subject, notion, prior, exact=exact)


def worst_over_vertices(mechanism: Any, prior_set: PriorSet) -> Certificate:
    """The certificate of ``mechanism.certificate_at`` with the largest epsilon over the vertices of ``prior_set``
    (LIP over a polytope of priors is the worst over its vertices, docs/math.md §2); ValidationError when the set has
    another number of values than the mechanism."""
    if prior_set.k != mechanism.k:
        raise ValidationError(f"prior has {prior_set.k} values; it must have one per value of the mechanism "
                              f"({mechanism.k})")
    return max((mechanism.certificate_at(vertex) for vertex in prior_set.vertices), key=lambda c: c.epsilon)


def _verify_at(mechanism, prior):
    """LIP of a designed table, for the secret it protects, at ``prior`` or over a prior set."""
    design_prior = getattr(mechanism, "prior", None)
    if design_prior is None:
        raise ValidationError(f"prior is given but {type(mechanism).__name__} has no design prior: it is "
                              f"{mechanism.guarantee.notion} eps={mechanism.epsilon:g}, and an eps-LDP mechanism is "
                              "eps-LIP at every prior (docs/math.md §2)")
    secret = getattr(mechanism.notion, "secret", None)
    size = prior.k if isinstance(prior, PriorSet) else np.size(getattr(prior, "probabilities", prior))
    if size != design_prior.k:
        raise ValidationError(f"prior has {size} values; it must have one per value of the mechanism "
                              f"({design_prior.k})")
    certificate_at = getattr(mechanism, "certificate_at", None)
    if certificate_at is not None:  # a family with its own exact condition (unary encoding, docs/math.md §7.1)
        return certificate_at(prior)
    if isinstance(prior, PriorSet):  # the worst case over the set
        return verify_table(mechanism.privacy_table(), LIP(mechanism.epsilon, secret=secret, prior_set=prior),
                            design_prior, exact=True)
    return verify_table(mechanism.privacy_table(), LIP(mechanism.epsilon, secret=secret), prior, exact=True)
