"""The registry of mechanism families: stable JSON ids -> classes, listed explicitly (never Python class names,
so that a user class named like one of ours changes nothing on load). ``register`` adds a family and refuses an id
that is taken."""

import inspect

from lipdesign.errors import ValidationError
from lipdesign.mechanisms.base import Mechanism
from lipdesign.mechanisms.class_lip import ClassSymmetricLIP
from lipdesign.mechanisms.hadamard import HadamardResponse
from lipdesign.mechanisms.harmony_categorical import HarmonyCategorical
from lipdesign.mechanisms.harmony_mixed import HarmonyMixed
from lipdesign.mechanisms.local_hashing import LocalHashing
from lipdesign.mechanisms.numeric import Duchi, HarmonyNumeric, Laplace
from lipdesign.mechanisms.olh import OLH
from lipdesign.mechanisms.oue import OUE
from lipdesign.mechanisms.piecewise import Hybrid, Piecewise
from lipdesign.mechanisms.rr import GRR
from lipdesign.mechanisms.subset import SubsetLIP, SubsetSelection
from lipdesign.mechanisms.table import TableMechanism
from lipdesign.mechanisms.unary_encoding import UnaryEncoding
from lipdesign.validation import fmt

_FAMILIES: dict[str, type[Mechanism]] = {}


def register(cls):
    """Add the mechanism class ``cls`` under its ``family`` id (a non-empty string not yet taken); returns ``cls``,
    so it works as a class decorator."""
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


def family_class(family):
    """The class registered under ``family``; ValidationError naming the known ids otherwise."""
    if family not in _FAMILIES:
        raise ValidationError(f"family is {fmt(family)}; it must be one of the registered families: "
                              f"{', '.join(sorted(_FAMILIES))}")
    return _FAMILIES[family]


def families():
    """The registered family ids, sorted."""
    return sorted(_FAMILIES)


def describe(family):
    """(name, default, rule) of each constructor argument of ``family``'s class, in the signature's order: the default
    from the signature (``inspect.Parameter.empty`` where the argument is required), the rule from the class's
    ``parameter_rules`` and, for epsilon, its ``epsilon_range`` ("" where the class states none)."""
    cls = family_class(family)
    low, high = cls.epsilon_range
    rules = {"epsilon": f"in {'(' if low == 0 else '['}{low:g}, {high:g}]", **dict(cls.parameter_rules)}
    return [(name, parameter.default, rules.get(name, ""))
            for name, parameter in inspect.signature(cls.__init__).parameters.items() if name != "self"]


for _cls in (TableMechanism, UnaryEncoding, LocalHashing, GRR, OUE, OLH, HadamardResponse, HarmonyCategorical, Laplace,
             Duchi, HarmonyNumeric, Piecewise, Hybrid, HarmonyMixed, SubsetSelection, SubsetLIP,
             ClassSymmetricLIP):
    register(_cls)
