"""Input validation in one place: every public entry point turns user input into numbers and arrays here.

Every message has one shape, "<field> is <value>; <rule>", so that it names what was wrong, what it was and
what is allowed: ``prior[1] is -0.1; every entry must be >= 0``. Imports numpy and lipdesign.errors only.
"""

from __future__ import annotations

import decimal
import math
import numbers
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError

if TYPE_CHECKING:
    import numpy.typing as npt

#: Probabilities must sum to 1 within this absolute tolerance unless normalisation is asked for: loose enough for
#: numbers written with 10 significant digits, tight enough that the mass a sampler loses is negligible.
PROBABILITY_ATOL = 1e-9

#: Epsilons of the designed tables (and of the notions) lie in (0, MAX_EPSILON]: e^30 ~ 1e13 already promises no
#: privacy, and beyond it the MSEs fall below double-precision resolution.
MAX_EPSILON = 30.0


def upward(value, digits=6):
    """``value`` (an epsilon) as text with ``digits`` significant digits, rounded up, never down: a printed epsilon
    is an upper bound like the certified one."""
    value = float(value)
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    nearest = f"{value:.{digits}g}"
    if float(nearest) == value:  # the float is this short decimal (the claim 0.1 is the float 0.1): print it
        return nearest
    exact = decimal.Decimal(value)  # the float's exact value; ROUND_CEILING then never goes below it
    step = decimal.Decimal(1).scaleb(exact.adjusted() - digits + 1)
    rounded = exact.quantize(step, rounding=decimal.ROUND_CEILING).normalize()
    return format(rounded, "f" if -5 <= rounded.adjusted() < digits else "g")


def fmt(value):
    """A value as it should appear in a message: ``7``, ``1.5``, ``nan``, ``'text'`` (no ``np.float64(...)``),
    cut to 120 characters."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int) and abs(value) > sys.float_info.max:  # its repr may be refused (int_max_str_digits)
        digits = int(value.bit_length() * math.log10(2)) + 1
        text = f"{'a negative' if value < 0 else 'an'} integer of about {digits} digits"
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=8, max_line_width=10**6)
    else:
        text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def document_header(document, what, format_name, version, error=ValidationError):
    """Raise ``error`` unless ``document`` is a JSON object with ``"format": format_name`` and ``"format_version":
    version``; ``what`` names the kind of document in the message ("an aggregate")."""
    found = document.get("format") if isinstance(document, dict) else None
    if found != format_name:
        raise error(f"format is {fmt(found)}; {what} document has format {format_name!r}")
    if document.get("format_version") != version:
        raise error(f"format_version is {fmt(document.get('format_version'))}; this lipdesign reads version {version} "
                    f"of {what} document")


def position(flat_index, shape):
    """The index of entry ``flat_index`` of an array of ``shape``: ``3`` or ``(1, 0)``."""
    if len(shape) <= 1:
        return str(int(flat_index))
    return str(tuple(int(i) for i in np.unravel_index(flat_index, shape)))


def _entry(field, array, flat_index):
    """'field[i]' or 'field[i, j]' and the value there, for messages."""
    where = np.unravel_index(flat_index, array.shape)
    return f"{field}[{', '.join(str(int(i)) for i in where)}]", array[where].item()


def float_array(value: Any, field: str, ndim: int) -> npt.NDArray[np.float64]:
    """``value`` as a finite float array with ``ndim`` dimensions."""
    try:
        complex_entries = np.iscomplexobj(value)
    except ValueError:  # ragged nested lists: reported below
        complex_entries = False
    if complex_entries:
        raise ValidationError(f"{field} has complex entries; every entry must be a real number")
    try:
        array = np.array(value, dtype=float)
    except OverflowError:  # an integer beyond the range of a double
        raise _beyond_double(value, field) from None
    except (TypeError, ValueError):
        raise ValidationError(f"{field} is {fmt(value)}; it must be a rectangular array of numbers") from None
    if array.ndim != ndim:
        shape = "a vector" if ndim == 1 else f"a {ndim}-D array"
        raise ValidationError(f"{field} has shape {array.shape}; it must be {shape}")
    if array.size == 0:
        raise ValidationError(f"{field} is empty; it must have at least one entry")
    bad = np.flatnonzero(~np.isfinite(array.ravel()))
    if bad.size:
        where, entry = _entry(field, array, bad[0])
        raise ValidationError(f"{where} is {entry}; every entry must be finite")
    return array


def _beyond_double(value, field):
    """The ValidationError for an array with an integer entry no double can hold, naming the first such entry."""
    try:
        entries = np.array(value, dtype=object)
        bad = np.flatnonzero(np.abs(entries.ravel()) > sys.float_info.max)
    except (TypeError, ValueError):  # ragged, or an entry without a magnitude
        bad = np.zeros(0, dtype=int)
    if not bad.size:
        return ValidationError(f"{field} has an entry beyond the range of a double (about 1.8e308); every entry must "
                               "be a finite number")
    where = ", ".join(str(int(i)) for i in np.unravel_index(bad[0], entries.shape))
    return ValidationError(f"{field}[{where}] is {fmt(entries.ravel()[bad[0]])}; every entry must be finite (a double "
                           "reaches about 1.8e308)")


def non_negative(array, field):
    """``array`` unless an entry is negative."""
    bad = np.flatnonzero(array.ravel() < 0)
    if bad.size:
        where, entry = _entry(field, array, bad[0])
        raise ValidationError(f"{where} is {entry:g}; every entry must be >= 0")
    return array


def probability_vector(value: Any, field: str, *, normalize: bool = False,
                       length: int | None = None) -> npt.NDArray[np.float64]:
    """A non-negative vector summing to 1 within PROBABILITY_ATOL, kept as given so that stored numbers
    round-trip exactly; ``normalize=True`` divides any positive vector by its sum instead."""
    vector = non_negative(float_array(value, field, 1), field)
    if length is not None and vector.size != length:
        raise ValidationError(f"{field} has {vector.size} entries; it must have {length}")
    with np.errstate(over="ignore"):
        total = vector.sum()
    if not np.isfinite(total):
        raise ValidationError(f"{field} sums to {total}; its entries are too large to add up")
    if total <= 0:
        raise ValidationError(f"{field} sums to {total:g}; it must have positive total mass")
    if normalize:
        return vector / total
    if abs(total - 1.0) > PROBABILITY_ATOL:
        raise ValidationError(f"{field} sums to {total:.12g}; it must sum to 1 within {PROBABILITY_ATOL:g}")
    return vector


def stochastic_rows(value: Any, field: str, *, columns: int | None = None) -> npt.NDArray[np.float64]:
    """A non-negative matrix whose rows each sum to 1 within PROBABILITY_ATOL (kept as given)."""
    matrix = non_negative(float_array(value, field, 2), field)
    if columns is not None and matrix.shape[1] != columns:
        raise ValidationError(f"{field} has {matrix.shape[1]} columns; it must have {columns}")
    sums = matrix.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > PROBABILITY_ATOL)
    if bad.size:
        raise ValidationError(
            f"{field} row {bad[0]} sums to {sums[bad[0]]:.12g}; each row must sum to 1 within {PROBABILITY_ATOL:g}")
    return matrix


def real_number(value: Any, field: str, low: float = -math.inf, high: float = math.inf) -> float:
    """A finite float in [low, high]; text and booleans are refused (``float("1")`` would accept text)."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or not isinstance(value, (numbers.Real, np.floating)):
        raise ValidationError(f"{field} is {fmt(value)}; it must be a number")
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the range of a double
        number = math.inf
    if not (math.isfinite(number) and low <= number <= high):
        bounds = f" in [{low:g}, {high:g}]" if math.isfinite(low) or math.isfinite(high) else ""
        raise ValidationError(f"{field} is {fmt(value)}; it must be a finite number{bounds}")
    return number


def epsilon(value, low=0.0, high=MAX_EPSILON, field="epsilon", *, include_low=False):
    """An epsilon in (low, high] (or [low, high] with ``include_low``): each family states its range."""
    number = real_number(value, field)
    if not ((low <= number if include_low else low < number) and number <= high):
        interval = f"{'[' if include_low else '('}{low:g}, {high:g}]"
        raise ValidationError(f"{field} is {fmt(value)}; it must lie in {interval}")
    return number


def integer(value: Any, field: str, low: int = 1, high: int | None = None) -> int:
    """An int in [low, high] (``high=None``: no upper bound); booleans and floats are refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValidationError(f"{field} is {fmt(value)}; it must be an integer >= {low}")
    value = int(value)
    if value < low or (high is not None and value > high):
        rule = f">= {low}" if high is None else f"in {low}..{high}"
        raise ValidationError(f"{field} is {fmt(value)}; it must be an integer {rule}")
    return value


def choice(value, field, options):
    """One of the strings ``options``."""
    if not (isinstance(value, str) and value in options):
        raise ValidationError(f"{field} is {fmt(value)}; it must be one of {', '.join(map(repr, options))}")
    return value


def labels_for(labels, size, field="labels"):
    """Unique JSON-friendly labels (str or int), defaulting to 0..size-1. A label that is (or spells, like "2") an
    integer in 0..size-1 must sit at that index, so that a value means one thing whether read as a label or as an
    index."""
    if labels is None:
        return tuple(range(size))
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__iter__"):
        raise ValidationError(f"{field} is {fmt(labels)}; it must be a list of strings or integers")
    labels = tuple(label.item() if isinstance(label, (np.integer, np.str_)) else label for label in labels)
    if len(labels) != size:
        raise ValidationError(f"{field} has {len(labels)} entries; it must have {size}")
    for at, label in enumerate(labels):
        if isinstance(label, bool) or not isinstance(label, (str, int)):
            raise ValidationError(f"{field}[{at}] is {fmt(label)}; labels must be strings or integers")
        if isinstance(label, str) and not _encodable(label):
            raise ValidationError(f"{field}[{at}] is {label!r}; a label must be valid Unicode text (it holds a lone "
                                  "surrogate, which cannot be written to JSON or printed)")
        spelled = int(label) if isinstance(label, str) and label.isdecimal() and label.isascii() and \
            str(int(label)) == label else label
        if isinstance(spelled, int) and 0 <= spelled < size and spelled != at:
            raise ValidationError(f"{field}[{at}] is {label!r}; a label that is (or spells) an integer in "
                                  f"0..{size - 1} must sit at its own index, since values are also given as indices "
                                  f"(here {label!r} would mean both the label at {at} and index {spelled}): use other "
                                  "labels, or list them in index order")
    texts = [str(label) for label in labels]
    if len(set(texts)) != size:
        duplicate = next(label for label in labels if texts.count(str(label)) > 1)
        raise ValidationError(f"{field} repeats {duplicate!r}; labels must be unique (they are compared as text)")
    return labels


def _encodable(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _out_of_range(flat, shape, bound, field, offset=0):
    bad = (flat < 0) | (flat > bound - 1)
    at = int(np.argmax(bad))
    value = flat[at]
    value = int(value) if float(value).is_integer() else value
    return ValidationError(
        f"{field} contains {fmt(value)} at position {position(offset + at, shape)}; it must be an index in "
        f"0..{bound - 1}")


def index_array(values, bound, field="values", *, check_range=True):
    """``values`` as an int64 array of indices in 0..bound-1 (any shape). Integer-valued floats are accepted
    (a column of a numeric table); booleans, fractions and text are refused, naming the first bad entry.
    ``check_range=False`` returns integer arrays as given, for a caller that checks the range itself."""
    array = np.asarray(values)
    if array.dtype == np.bool_:
        raise ValidationError(f"{field} has dtype bool; it must hold integer indices in 0..{bound - 1} "
                              "(convert with .astype(int))")
    if array.dtype.kind == "f":
        flat = array.ravel()
        bad = ~np.isfinite(flat) | (np.floor(flat) != flat)
        if bad.any():
            at = int(np.argmax(bad))
            raise ValidationError(f"{field} contains {fmt(flat[at])} at position {position(at, array.shape)}; it "
                                  f"must be an integer index in 0..{bound - 1}")
        if flat.size and (flat.min() < 0 or flat.max() > bound - 1):
            raise _out_of_range(flat, array.shape, bound, field)
        return array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise ValidationError(f"{field} has dtype {array.dtype}; it must hold integer indices in 0..{bound - 1}")
    if not check_range:  # the caller checks the range (in chunks) and widens
        return array
    check_indices(array.ravel(), bound, field, array.shape)
    return array if array.dtype == np.int64 else array.astype(np.int64)


def check_indices(flat, bound, field, shape, offset=0):
    """Raise unless every entry of the integer vector ``flat`` lies in 0..bound-1 (compared in its own dtype, so
    a huge unsigned value is not wrapped onto a valid index)."""
    if flat.size == 1:  # one value (a device's report): numpy's reductions cost more than the comparison
        if not 0 <= flat[0] <= bound - 1:
            raise _out_of_range(flat, shape, bound, field, offset)
    elif flat.size and (flat.min() < 0 or flat.max() > bound - 1):
        raise _out_of_range(flat, shape, bound, field, offset)
