"""Shared pieces of the Harmony mechanisms (MATH §9) and the LDP frequency oracles (MATH §8).

Numpy only (plus the standard library and lipdesign.errors / lipdesign.validation / lipdesign.runtime), so a
device can perturb without scipy or cvxpy; ``verify`` imports the verifier lazily.

Every mechanism is a ``HarmonyMechanism``: constructed with ``epsilon=`` and its shape parameters, it has
``perturb(values, rng=None)`` -> reports, ``estimate(reports)`` -> means or frequencies, ``parameters()`` (the
JSON-able constructor arguments, including the seeds of public randomness) and, where the output space is
finite, ``privacy_table()`` whose exact LDP epsilon bounds the mechanism's (``verify()``).
"""

from __future__ import annotations

import math
import numbers
import secrets
from typing import ClassVar

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.runtime.perturb import as_generator, fmt, index_array
from lipdesign.validation import float_array, positive_epsilon, real_number

__all__ = [
    "EXP_MARGIN",
    "MAX_EPSILON",
    "MIN_EPSILON",
    "HarmonyMechanism",
    "Range",
    "as_generator",
    "category_values",
    "implemented_exp",
    "integer_parameter",
    "mechanism_epsilon",
    "one_bit",
    "one_bit_scale",
    "one_bit_table",
    "public_index",
    "public_seed",
    "realized_probability",
    "sign_field",
    "structured_reports",
    "unit_values",
]

#: Every mechanism runs at e^eps * (1 - EXP_MARGIN) instead of e^eps. Its probabilities are computed in floating
#: point and sampled as ``rng.random() < p``, which realises ceil(p 2^53) / 2^53: absolute errors of about 2^-53,
#: relative errors up to 2^-53 (e^eps + 1) in a flip probability 1/(e^eps + 1) (one-bit, OUE, Hadamard, Duchi).
#: The margin covers them with room to spare for every epsilon up to MAX_EPSILON (2^-53 e^10 = 2.4e-12), so the
#: numbers a sampler really uses satisfy the claim in exact rational arithmetic; the cost in variance is about
#: 1e-10 relative. Randomized response over k values (GRR, OLH), whose smallest probability shrinks with k, puts
#: its keep probability on the 2^-53 grid instead (frequency.grr_mixing_probability).
EXP_MARGIN = 1e-10

#: Seeds of public randomness are integers in [0, 2**63).
MAX_SEED = 2**63


#: Smallest epsilon of these mechanisms: below it e^eps - 1 is too close to the margin and to rounding for
#: the scale c = (e^eps + 1)/(e^eps - 1) to be computed accurately.
MIN_EPSILON = 1e-6

#: Largest epsilon of these mechanisms (designed tables go to lipdesign.validation.MAX_EPSILON = 30): above it
#: the 2^-53 resolution of the samplers is no longer small against the probability 1/(e^eps + 1) of a flip, and
#: e^10 ~ 22000 is no meaningful local privacy anyway.
MAX_EPSILON = 10.0


def mechanism_epsilon(value, field="epsilon"):
    """An epsilon in [MIN_EPSILON, MAX_EPSILON]."""
    if isinstance(value, str):
        raise ValidationError(f"{field} is {value!r} (a string); it must be a number")
    epsilon = positive_epsilon(value, field)
    if not MIN_EPSILON <= epsilon <= MAX_EPSILON:
        raise ValidationError(f"{field} is {value!r}; lipdesign.harmony mechanisms need {field} in "
                              f"[{MIN_EPSILON:g}, {MAX_EPSILON:g}] (their probabilities are computed and sampled "
                              "in floating point)")
    return epsilon


def implemented_exp(epsilon):
    """The e^eps every mechanism uses: slightly below the true e^eps (see EXP_MARGIN)."""
    return math.exp(epsilon) * (1.0 - EXP_MARGIN)


def integer_parameter(value, field, low=1, high=None):
    """An int in [low, high] (``high=None``: no upper bound)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValidationError(f"{field} is {value!r}; it must be an integer >= {low}")
    value = int(value)
    if value < low or (high is not None and value > high):
        rule = f">= {low}" if high is None else f"in {low}..{high}"
        raise ValidationError(f"{field} is {value}; it must be an integer {rule}")
    return value


def public_seed(seed, field="seed"):
    """A seed of public randomness: an int in [0, 2**63); ``None`` draws a fresh one from the OS CSPRNG (it is
    stored with the mechanism and exported, since the server needs it)."""
    if seed is None:
        return secrets.randbits(63)
    return integer_parameter(seed, field, low=0, high=MAX_SEED - 1)


def unit_values(values, d, field="values"):
    """Numeric inputs as a float array of shape (n, d) with every entry in [-1, 1].

    Accepts shape (n, d), or (n,) when d == 1. Map raw ranges to [-1, 1] with ``Range``.
    """
    try:
        flat = d == 1 and np.ndim(values) == 1
    except ValueError:  # a ragged nested list; float_array names the problem
        flat = False
    array = float_array(values, field, 1 if flat else 2)
    array = array.reshape(-1, 1) if flat else array
    if array.shape[1] != d:
        raise ValidationError(f"{field} has shape {array.shape}; expected (n, {d}), one row of {d} "
                              f"value{'s' if d > 1 else ''} in [-1, 1] per user")
    outside = np.flatnonzero(np.abs(array.ravel()) > 1.0)
    if outside.size:
        row, column = np.unravel_index(outside[0], array.shape)
        raise ValidationError(f"{field}[{row}, {column}] is {fmt(array[row, column])}; every value must lie in "
                              "[-1, 1] (map raw ranges with lipdesign.harmony.Range(low, high).to_unit)")
    return array


def category_values(values, k, field="values"):
    """Categorical inputs as an int64 vector of indices in 0..k-1."""
    array = index_array(values, k, field)
    if array.ndim != 1:
        raise ValidationError(f"{field} has shape {array.shape}; expected a vector of category indices")
    if array.size == 0:
        raise ValidationError(f"{field} must not be empty")
    return array


def structured_reports(reports, dtype):
    """Check that ``reports`` is a non-empty vector of records with exactly the fields of ``dtype`` (in any
    order; another mechanism's reports, with other or extra fields, are refused), each a scalar integer, as a
    ``perturb`` returns them."""
    fields = getattr(getattr(reports, "dtype", None), "names", None)
    if not isinstance(reports, np.ndarray) or fields is None or set(fields) != set(dtype.names):
        got = f"dtype {reports.dtype}" if isinstance(reports, np.ndarray) else f"type {type(reports).__name__}"
        raise ValidationError(f"reports has {got}; it must be a numpy structured array with exactly the fields "
                              f"{', '.join(dtype.names)} (dtype {dtype}), as perturb returns")
    for name in dtype.names:
        field = reports.dtype.fields[name][0]
        if field.shape != () or field.kind not in "iu":
            raise ValidationError(f"reports['{name}'] has dtype {field}; every field of the reports must be a "
                                  f"scalar integer (perturb returns {dtype[name]})")
    if reports.ndim != 1 or reports.size == 0:
        raise ValidationError(f"reports has shape {reports.shape}; it must be a non-empty vector of reports")
    return reports


def sign_field(reports):
    """``reports['sign']`` as int64, refusing any value other than -1 and +1 (compared in the field's own
    dtype: casting a huge unsigned value first would wrap it onto -1)."""
    sign = reports["sign"]
    bad = np.flatnonzero(sign != 1 if sign.dtype.kind == "u" else (sign != 1) & (sign != -1))
    if bad.size:
        raise ValidationError(f"reports['sign'][{bad[0]}] is {fmt(sign[bad[0]])}; every sign must be -1 or +1")
    return sign.astype(np.int64)


def public_index(seed, user_ids, size):
    """Public randomness: a uniform index in 0..size-1 per user id, derived from ``seed`` and the id by the
    SplitMix64 finaliser (Steele, Lea, Flood 2014), so the server recomputes it from the id alone.

    ``user_ids``: non-negative integers below 2**63. Vectorised; the result is int64.
    """
    ids = np.asarray(user_ids)
    if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
        raise ValidationError(f"user_ids must be a non-empty vector of integers (got dtype {ids.dtype}, "
                              f"shape {ids.shape})")
    if ids.min() < 0:
        raise ValidationError(f"user_ids contains {fmt(ids.min())}; user ids must be non-negative integers")
    with np.errstate(over="ignore"):
        z = ids.astype(np.uint64) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    # Multiply-shift maps the 64-bit hash to 0..size-1 with bias below size / 2**32.
    return ((z >> np.uint64(32)) * np.uint64(size) >> np.uint64(32)).astype(np.int64)


def _plus_probability(values, exp_epsilon):
    """Pr[+1 | t] = 1/2 + t (e^eps - 1) / (2 (e^eps + 1)), computed as ``one_bit`` samples it."""
    return 0.5 + np.asarray(values) * ((exp_epsilon - 1.0) / (2.0 * (exp_epsilon + 1.0)))


def realized_probability(probability):
    """Pr[rng.random() < p] exactly: numpy's random() is k / 2^53, so it is ceil(p 2^53) / 2^53 (a double)."""
    return np.ceil(np.asarray(probability, dtype=float) * 2.0**53) / 2.0**53


def one_bit(values, exp_epsilon, rng):
    """Binary randomized response on values t in [-1, 1] (MATH §9, Harmony Alg. 2 lines 3-7 and Alg. 3):
    +1 with probability 1/2 + t (e^eps - 1) / (2 (e^eps + 1)), else -1; int8, same shape as ``values``.
    E[c * bit] = t with c = (e^eps + 1) / (e^eps - 1); both outcomes have probabilities within a factor e^eps
    for any two inputs. ``rng`` must already be a Generator."""
    plus = _plus_probability(values, exp_epsilon)
    return np.where(rng.random(np.shape(values)) < plus, 1, -1).astype(np.int8)


def one_bit_scale(exp_epsilon):
    """c = (e^eps + 1) / (e^eps - 1), the factor that makes c * one_bit(t) unbiased for t (MATH §9)."""
    return (exp_epsilon + 1.0) / (exp_epsilon - 1.0)


def one_bit_table(exp_epsilon, values=(1.0, -1.0)):
    """The privacy table of ``one_bit`` as the sampler realises it (``realized_probability``): rows t in
    ``values`` (by default the extreme inputs +1, -1), outputs +1, -1. Pr[+1 | t] is monotone in t, so the
    largest ratio over [-1, 1] is attained at the two extreme inputs."""
    plus = realized_probability(_plus_probability(np.asarray(values, dtype=float), exp_epsilon))
    return np.column_stack([plus, 1.0 - plus])


class Range:
    """Maps a raw numeric attribute on [low, high] to [-1, 1] and back (Harmony's inputs live in [-1, 1]).

    ``to_unit(x)`` raises on values outside [low, high] unless ``clip=True``; ``from_unit(mean)`` maps an
    estimated mean back; ``variance_from_unit(v)`` scales a variance by ((high - low) / 2)^2.
    """

    def __init__(self, low, high):
        self.low = real_number(low, "low")
        self.high = real_number(high, "high")
        if not self.high > self.low:
            raise ValidationError(f"high is {high!r} but low is {low!r}; a range needs high > low")
        self.half_width = (self.high - self.low) / 2.0
        if not np.isfinite(self.half_width):
            raise ValidationError(f"high - low is {self.high - self.low!r}; the width of a range must be finite")

    def to_unit(self, values, clip=False):
        array = float_array(values, "values", np.ndim(values)) if np.ndim(values) else \
            float_array([values], "values", 1)[0]
        if clip:
            array = np.clip(array, self.low, self.high)
        else:
            outside = np.flatnonzero((array.ravel() < self.low) | (array.ravel() > self.high))
            if outside.size:
                raise ValidationError(
                    f"values[{outside[0]}] is {fmt(array.ravel()[outside[0]])}; raw values must lie in "
                    f"[{self.low:g}, {self.high:g}] (pass clip=True to clip them)")
        return np.clip((array - self.low) / self.half_width - 1.0, -1.0, 1.0)

    def from_unit(self, values):
        return self.low + (np.asarray(values, dtype=float) + 1.0) * self.half_width

    def variance_from_unit(self, variance):
        return np.asarray(variance, dtype=float) * self.half_width**2

    def __repr__(self):
        return f"Range({self.low:g}, {self.high:g})"


class HarmonyMechanism:
    """Base class: epsilon validation, parameters for export, exact verification of ``privacy_table``."""

    #: What the privacy claim of a mechanism without a finite privacy table rests on (exported as "guarantee").
    guarantee: ClassVar[str] = "closed form (continuous output)"

    #: Every concrete mechanism class by name, for ``from_parameters`` / JSON load.
    registry: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):
            HarmonyMechanism.registry[cls.__name__] = cls

    def __init__(self, epsilon):
        self.epsilon = mechanism_epsilon(epsilon)
        self.exp_epsilon = implemented_exp(self.epsilon)

    def parameters(self):
        """The constructor arguments (JSON-able), including seeds of public randomness."""
        raise NotImplementedError

    @classmethod
    def from_parameters(cls, parameters):
        return cls(**parameters)

    def privacy_table(self):
        """A finite table (rows: extreme inputs, columns: outputs) whose LDP epsilon is the mechanism's, or
        None when the output space is continuous (the guarantee is then the documented closed form)."""
        return None  # noqa: RET501 (subclasses with a finite output space return their table)

    def verify(self):
        """Exact LDP certificate (lipdesign.verification) of ``privacy_table()``; ValidationError when the
        output space is continuous."""
        table = self.privacy_table()
        if table is None:
            raise ValidationError(f"{type(self).__name__} has a continuous output space; its guarantee is the "
                                  "closed form in its docstring, not a finite table")
        from lipdesign.notions import LDP
        from lipdesign.verification import verify

        return verify(table, LDP(self.epsilon), exact=True)

    def to_dict(self):
        from lipdesign.io import harmony_to_dict

        return harmony_to_dict(self)

    def to_json(self, path):
        """Write the versioned JSON envelope (lipdesign.io); ``lipdesign.load`` reads it back and re-verifies."""
        from lipdesign.io import save_harmony

        save_harmony(self, path)

    def __eq__(self, other):
        return type(self) is type(other) and self.parameters() == other.parameters()

    def __hash__(self):
        return hash((type(self).__name__, repr(sorted(self.parameters().items()))))

    def __repr__(self):
        arguments = ", ".join(f"{name}={value!r}" for name, value in self.parameters().items())
        return f"{type(self).__name__}({arguments})"
