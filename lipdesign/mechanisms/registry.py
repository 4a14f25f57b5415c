"""The registry of mechanism families: stable JSON ids -> classes, listed explicitly (never Python class names,
so that a user class named like one of ours changes nothing on load). ``register`` adds a family and refuses an id
that is taken."""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.base import Mechanism
from lipdesign.mechanisms.class_lip import ClassSymmetricLIP
from lipdesign.mechanisms.count_mean import CountMeanSketch
from lipdesign.mechanisms.hadamard import HadamardResponse
from lipdesign.mechanisms.hadamard_sketch import HadamardCountMeanSketch
from lipdesign.mechanisms.harmony_categorical import HarmonyCategorical
from lipdesign.mechanisms.harmony_mixed import HarmonyMixed
from lipdesign.mechanisms.heavy_hitters import PEM, TreeHist
from lipdesign.mechanisms.histogram import SHE, THE
from lipdesign.mechanisms.local_hashing import LocalHashing
from lipdesign.mechanisms.longitudinal import LongitudinalGRR, LongitudinalUE
from lipdesign.mechanisms.longitudinal_hashed import DBitFlipPM, LongitudinalOLH
from lipdesign.mechanisms.longitudinal_table import LongitudinalTable
from lipdesign.mechanisms.multi_attribute import RSFD, SMP, SPL
from lipdesign.mechanisms.numeric import Duchi, HarmonyNumeric, Laplace
from lipdesign.mechanisms.olh import OLH
from lipdesign.mechanisms.oue import OUE
from lipdesign.mechanisms.piecewise import Hybrid, Piecewise
from lipdesign.mechanisms.rappor import RAPPOR
from lipdesign.mechanisms.rr import GRR
from lipdesign.mechanisms.sketch_lip import CountMeanSketchLIP
from lipdesign.mechanisms.subset import SubsetLIP, SubsetSelection
from lipdesign.mechanisms.table import TableMechanism
from lipdesign.mechanisms.unary_encoding import UnaryEncoding
from lipdesign.validation import fmt

_FAMILIES: dict[str, type[Mechanism]] = {}

#: A mechanism class, as ``register`` returns it.
_M = TypeVar("_M", bound=type[Mechanism])


# ``cls`` is described in the docstring's text, not in a Parameters section: numpydoc's validator takes an argument
# named ``cls`` for a classmethod's implicit first argument and refuses it there (PR02).
def register(cls: _M) -> _M:
    """Add the mechanism class ``cls`` under its ``family`` id, so that ``lipdesign.load``, the CLI and
    ``family_class`` know it.

    ``cls`` is a subclass of ``lipdesign.mechanisms.Mechanism`` that sets its own ``family`` id, a non-empty string
    not yet taken. Family ids are stable JSON ids, never Python class names: a user class named like one of the
    package's changes nothing on load. Returns ``cls``, so it works as a class decorator (docs/adding-a-family.md).

    Returns
    -------
    type
        ``cls`` itself.

    Raises
    ------
    ValidationError
        ``cls`` is not a Mechanism subclass, it has no ``family`` id of its own (an inherited one does not count),
        or its id is already registered.

    See Also
    --------
    families : The registered family ids.
    family_class : The class registered under an id.

    Examples
    --------
    As a class decorator on a new family (docs/adding-a-family.md lists what it implements)::

        @ld.mechanisms.register
        class CoinFlip(ld.mechanisms.Mechanism):
            family = "coin-flip"
            ...

    A family id is registered once:

    >>> import lipdesign as ld
    >>> class MyGRR(ld.mechanisms.GRR):
    ...     family = "grr"
    >>> ld.mechanisms.register(MyGRR)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: family is 'grr'; it is already registered to GRR (family ids are unique)
    """
    if not (isinstance(cls, type) and issubclass(cls, Mechanism)):
        raise ValidationError(f"cls is {fmt(cls)}; only subclasses of lipdesign.mechanisms.Mechanism can be "
                              "registered")
    family = cls.__dict__.get("family")
    if not isinstance(family, str) or not family:
        raise ValidationError(f"{cls.__name__}.family is {fmt(family)}; a registered class needs its own non-empty "
                              "family id")
    if family in _FAMILIES:
        raise ValidationError(f"family is {family!r}; it is already registered to {_FAMILIES[family].__qualname__} "
                              "(family ids are unique)")
    _FAMILIES[family] = cls
    return cls


def family_class(family: str) -> type[Mechanism]:
    """The class registered under the family id ``family``.

    Parameters
    ----------
    family : str
        A registered family id (``families()``), as files and the CLI name it.

    Returns
    -------
    type
        The Mechanism subclass registered under ``family``.

    Raises
    ------
    ValidationError
        ``family`` is not a registered id; the message names the known ids.

    Examples
    --------
    >>> import lipdesign as ld
    >>> ld.mechanisms.family_class("grr")
    <class 'lipdesign.mechanisms.rr.GRR'>
    >>> ld.mechanisms.family_class("grr").example()
    GRR(epsilon=1.0, k=6)
    >>> ld.mechanisms.family_class("sketch")
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: family is 'sketch'; it must be one of the registered families: class-lip, ...
    """
    if family not in _FAMILIES:
        raise ValidationError(f"family is {fmt(family)}; it must be one of the registered families: "
                              f"{', '.join(sorted(_FAMILIES))}")
    return _FAMILIES[family]


def families() -> list[str]:
    """The registered family ids, sorted.

    Returns
    -------
    list of str
        The ids, as files and the CLI name the families.

    Examples
    --------
    >>> import lipdesign as ld
    >>> ld.mechanisms.families()
    ['class-lip', 'cms', 'cms-lip', 'dbitflip', 'duchi', 'grr', 'hadamard', 'harmony-categorical', 'harmony-mixed',
     'harmony-numeric', 'hashing', 'hcms', 'hybrid', 'l-grr', 'l-olh', 'l-table', 'l-ue', 'laplace', 'olh', 'oue',
     'pem', 'piecewise', 'rappor', 'rsfd', 'she', 'smp', 'spl', 'subset', 'subset-lip', 'table', 'the', 'treehist',
     'unary']
    """
    return sorted(_FAMILIES)


def describe(family: str) -> list[tuple[str, Any, str]]:
    """(name, default, rule) of each constructor argument of ``family``'s class, in the signature's order: the default
    from the signature (``inspect.Parameter.empty`` where the argument is required), the rule from the class's
    ``parameter_rules`` and, for epsilon, its ``epsilon_range`` ("" where the class states none).

    Parameters
    ----------
    family : str
        A registered family id.

    Returns
    -------
    list of tuple
        (name, default, rule) per constructor argument, for the CLI's help and errors.

    Raises
    ------
    ValidationError
        ``family`` is not a registered id.

    Examples
    --------
    >>> from lipdesign.mechanisms.registry import describe
    >>> for name, default, rule in describe("laplace"):
    ...     print(name, default, rule)
    epsilon <class 'inspect._empty'> in [1e-06, 10]
    d 1 integer in 1..4096 with epsilon / d >= 1e-06
    grid 64 integer in 2..256
    """
    cls = family_class(family)
    low, high = cls.epsilon_range
    rules = {"epsilon": f"in {'(' if low == 0 else '['}{low:g}, {high:g}]", **dict(cls.parameter_rules)}
    return [(name, parameter.default, rules.get(name, ""))
            for name, parameter in inspect.signature(cls.__init__).parameters.items() if name != "self"]


for _cls in (TableMechanism, UnaryEncoding, LocalHashing, GRR, OUE, OLH, HadamardResponse, HarmonyCategorical, Laplace,
             Duchi, HarmonyNumeric, Piecewise, Hybrid, HarmonyMixed, SubsetSelection, SubsetLIP,
             ClassSymmetricLIP, RAPPOR, CountMeanSketch, HadamardCountMeanSketch, CountMeanSketchLIP, SPL, SMP, RSFD,
             PEM, TreeHist, THE, SHE, LongitudinalGRR, LongitudinalUE, LongitudinalOLH, DBitFlipPM,
             LongitudinalTable):
    register(_cls)
