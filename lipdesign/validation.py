"""Input validation in one place: every public entry point turns user input into arrays here.

Messages name the field, the value and the rule ("prior must sum to 1 (got 0.97)").
Imports numpy and lipdesign.errors only.
"""

import numpy as np

from lipdesign.errors import ValidationError

#: Probabilities must sum to 1 within this absolute tolerance unless normalisation is asked for.
PROBABILITY_ATOL = 1e-9


def _short(value):
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _entry(field, array, flat_index):
    """'field[i]' or 'field[i, j]' and the value there, for messages."""
    position = np.unravel_index(flat_index, array.shape)
    return f"{field}[{', '.join(str(int(i)) for i in position)}]", array[position].item()


def float_array(value, field, ndim):
    """Return ``value`` as a finite float array with ``ndim`` dimensions, or raise ValidationError."""
    try:
        complex_entries = np.iscomplexobj(value)
    except ValueError:  # ragged nested lists: reported below
        complex_entries = False
    if complex_entries:
        raise ValidationError(f"{field} has complex entries; every entry must be a real number")
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValidationError(f"{field} must be a rectangular array of numbers (got {_short(value)})") from None
    if array.ndim != ndim:
        shape = "a vector" if ndim == 1 else f"a {ndim}-D array"
        raise ValidationError(f"{field} must be {shape} (got shape {array.shape})")
    if array.size == 0:
        raise ValidationError(f"{field} must not be empty")
    bad = np.flatnonzero(~np.isfinite(array.ravel()))
    if bad.size:
        where, entry = _entry(field, array, bad[0])
        raise ValidationError(f"{where} is {entry}; every entry must be finite")
    return array


def non_negative(array, field):
    """Raise unless every entry of ``array`` is >= 0."""
    bad = np.flatnonzero(array.ravel() < 0)
    if bad.size:
        where, entry = _entry(field, array, bad[0])
        raise ValidationError(f"{where} is {entry:g}; every entry must be >= 0")
    return array


def probability_vector(value, field, *, normalize=False, length=None):
    """A non-negative vector summing to 1 within PROBABILITY_ATOL, kept as given so that stored numbers
    round-trip exactly; ``normalize=True`` divides any positive vector by its sum instead."""
    vector = non_negative(float_array(value, field, 1), field)
    if length is not None and vector.size != length:
        raise ValidationError(f"{field} has {vector.size} entries; expected {length}")
    with np.errstate(over="ignore"):
        total = vector.sum()
    if not np.isfinite(total):
        raise ValidationError(f"{field} sums to {total}; its entries are too large to add up")
    if total <= 0:
        raise ValidationError(f"{field} sums to {total:g}; it must have positive total mass")
    if normalize:
        return vector / total
    if abs(total - 1.0) > PROBABILITY_ATOL:
        raise ValidationError(
            f"{field} must sum to 1 within {PROBABILITY_ATOL:g} (got {total:.12g})"
        )
    return vector


def stochastic_rows(value, field, *, columns=None):
    """A non-negative matrix whose rows each sum to 1 within PROBABILITY_ATOL (kept as given)."""
    matrix = non_negative(float_array(value, field, 2), field)
    if columns is not None and matrix.shape[1] != columns:
        raise ValidationError(f"{field} has {matrix.shape[1]} columns; expected {columns}")
    sums = matrix.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > PROBABILITY_ATOL)
    if bad.size:
        raise ValidationError(
            f"{field} row {bad[0]} sums to {sums[bad[0]]:.12g}; each row must sum to 1 within {PROBABILITY_ATOL:g}")
    return matrix


#: Largest supported epsilon: e^30 ~ 1e13 already promises no privacy, and beyond it the MSEs fall
#: below double-precision resolution.
MAX_EPSILON = 30.0


def real_number(value, field, low=-np.inf, high=np.inf):
    """A finite float in [low, high]."""
    if isinstance(value, (bool, np.bool_)):
        raise ValidationError(f"{field} must be a number (got {value!r})")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{field} must be a number (got {value!r})") from None
    if not (np.isfinite(number) and low <= number <= high):
        rule = "a finite number" + (f" in [{low:g}, {high:g}]" if np.isfinite(low) or np.isfinite(high) else "")
        raise ValidationError(f"{field} must be {rule} (got {value!r})")
    return number


def positive_epsilon(value, field="epsilon"):
    """An epsilon in (0, MAX_EPSILON]."""
    epsilon = real_number(value, field)
    if not 0 < epsilon <= MAX_EPSILON:
        raise ValidationError(f"{field} must lie in (0, {MAX_EPSILON:g}] (got {value!r})")
    return epsilon


def labels_for(labels, size, field="labels"):
    """Unique JSON-friendly labels (str or int), defaulting to 0..size-1."""
    if labels is None:
        return tuple(range(size))
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__iter__"):
        raise ValidationError(f"{field} must be a list of strings or integers (got {labels!r})")
    labels = tuple(labels)
    if len(labels) != size:
        raise ValidationError(f"{field} has {len(labels)} entries; expected {size}")
    for position, label in enumerate(labels):
        if isinstance(label, (np.integer, np.str_)):
            label = label.item()
        if isinstance(label, bool) or not isinstance(label, (str, int)):
            raise ValidationError(f"{field}[{position}] is {label!r}; labels must be strings or integers")
    texts = [str(label) for label in labels]
    if len(set(texts)) != size:
        duplicate = next(label for label in labels if texts.count(str(label)) > 1)
        raise ValidationError(f"{field} repeats {duplicate!r} (labels are compared as text); labels must be unique")
    return tuple(label.item() if isinstance(label, np.generic) else label for label in labels)
