"""Input domains: what a mechanism accepts, checked in this one place (docs/math.md §1).

Every mechanism carries one (``mechanism.input_domain``), as OpenDP's measurements carry theirs:

- ``Categorical(k, labels)``: one value per user out of k, given as labels or as indices 0..k-1;
- ``Box(d)``: one row of d numbers in [-1, 1] per user (map raw ranges with ``lipdesign.Range``);
- ``MixedTuple(attributes)``: one row per user, column j numeric in [-1, 1] or a category index;
- ``Strings(max_bytes, candidates)``: one string per user from an open domain (docs/math.md §16.1); the candidates,
  if any, are the strings a server decodes over, not a limit on what users may hold.

``validate(values)`` returns the canonical array (or raises ValidationError naming the entry), ``sample(n, rng)``
draws a built-in population, ``truth(values)`` is what a frequency or mean estimate targets for that population
and ``names()`` names its entries. Numpy only.
"""

from functools import cached_property
from typing import Any, cast

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.immutable import Immutable
from lipdesign.strings import byte_words, encoded, hash_key, string_hash
from lipdesign.strings import max_bytes as string_bytes
from lipdesign.validation import (
    check_indices,
    float_array,
    fmt,
    index_array,
    integer,
    labels_for,
    probability_vector,
)

#: Standard deviation of the built-in numeric population (normal, clipped to [-1, 1]).
POPULATION_SD = 0.4

#: Batches of at most this many labels are looked up one by one (cheaper than numpy's vectorised search).
SMALL_BATCH = 8

#: Largest k of a sampled categorical population (the frequencies are held in memory).
MAX_SAMPLE_K = 10**7


def tuple_or_range(labels):
    """Labels compared as a range when they are the default indices 0..k-1 (no tuple of k entries is built)."""
    return range(len(labels)) if not isinstance(labels, range) and labels == tuple(range(len(labels))) else labels


def _check_generator(rng):
    if not isinstance(rng, np.random.Generator):
        raise ValidationError(f"rng is {fmt(rng)}; sample needs a numpy.random.Generator")
    return rng


class Categorical(Immutable):
    """One of k values per user. ``labels`` (default: the indices 0..k-1, kept as a ``range`` so that k may be huge)
    are what users pass; ``frequencies`` (default Zipf(1)) is the distribution ``sample`` draws from."""

    kind = "categorical"

    def __init__(self, k, labels=None, frequencies=None):
        self.k = integer(k, "k", low=1)
        self.labels = range(self.k) if labels is None else labels_for(labels, self.k)
        self.frequencies = None if frequencies is None else probability_vector(frequencies, "frequencies",
                                                                               length=self.k)
        if self.frequencies is not None:
            self.frequencies.setflags(write=False)
        self._integer_labels = not isinstance(self.labels, range) and self.labels != tuple(range(self.k)) and \
            all(isinstance(label, int) for label in self.labels)

    def validate(self, values, field="values"):
        """Indices 0..k-1 (int64 vector) of ``values`` (docs/math.md §1, "Values and labels"): text is matched
        exactly against the labels (no trimming, no parsing: ``"02"`` is the label ``"02"`` or nothing); numbers are
        labels when every label is an integer, indices when no label spells a number other than its own index, and
        refused as ambiguous otherwise."""
        array = np.asarray(values)
        if array.ndim != 1:
            raise ValidationError(f"{field} has shape {array.shape}; it must be a vector, one value per user")
        if array.size == 0:
            raise ValidationError(f"{field} is empty; it must hold at least one value")
        if isinstance(self.labels, range):  # default labels: only indices (k may be huge)
            return index_array(array, self.k, field)
        if array.dtype == object:
            self._check_label_objects(array, field)
        if array.dtype.kind in "USO" or (self._integer_labels and array.dtype.kind in "iu"):
            return self._label_indices(array, field)
        if self._numeric_label is not None and array.dtype.kind in "iuf":
            at, label = self._numeric_label
            raise ValidationError(
                f"{field} holds numbers ({array.dtype}), which are ambiguous for these labels: labels[{at}] is "
                f"{label!r}, which spells a number other than its index {at}; pass the values as text labels "
                "(lipdesign perturb reads a CSV column as text; a Parquet column must be a string column)")
        return index_array(array, self.k, field)

    @cached_property
    def _numeric_label(self):
        """(index, label) of the first label that is or spells a number (in any form Python reads: "02", "2.0",
        " 2", "1e0") other than its own index, or None: numbers then cannot be read as indices."""
        for at, label in enumerate(self.labels):
            if isinstance(label, str):
                try:
                    number = float(label)
                except ValueError:
                    continue
            else:
                number = label
            if number != at:
                return at, label
        return None

    @staticmethod
    def _check_label_objects(array, field):
        """An object array (a pandas column, a list of mixed types) holds labels: each entry text or an integer."""
        def is_label(kind):
            return issubclass(kind, (str, int)) and not issubclass(kind, bool)

        if all(map(is_label, set(map(type, array.tolist())))):  # the types present, found in C: no per-value call
            return
        bad = np.flatnonzero([not is_label(type(value)) for value in array.tolist()])
        if bad.size:
            raise ValidationError(f"{field}[{bad[0]}] is {fmt(array[bad[0]])}; labels are text (or integers, for "
                                  "integer labels)")

    @cached_property
    def _sorted_labels(self):
        """(order, sorted texts) of the labels compared as text, built once."""
        keys = np.array(self.labels, dtype=object)
        order = np.argsort(keys.astype(str))
        return order, keys[order].astype(str)

    @cached_property
    def _label_index(self):
        """{label as text: index}, for a handful of values (a device's single report)."""
        return {str(label): index for index, label in enumerate(self.labels)}

    def _label_indices(self, array, field):
        if array.size <= SMALL_BATCH:
            indices = [self._label_index.get(str(value)) for value in array.tolist()]
            if None not in indices:
                return np.array(indices, dtype=np.int64)
        order, sorted_keys = self._sorted_labels
        try:
            text = array.astype(str)
        except (TypeError, ValueError):
            raise ValidationError(f"{field} is {fmt(array)}; it must hold labels or integer indices") from None
        at = np.clip(np.searchsorted(sorted_keys, text), 0, self.k - 1)
        unknown = np.flatnonzero(sorted_keys[at] != text)
        if unknown.size:
            raise ValidationError(f"{field}[{unknown[0]}] is {str(text[unknown[0]])!r}; it must be one of the "
                                  f"labels {list(self.labels)}")
        return order[at]

    def sample(self, n, rng):
        """n indices drawn from ``frequencies`` (Zipf(1) over 0..k-1 when not given; k <= MAX_SAMPLE_K)."""
        if self.k > MAX_SAMPLE_K:
            raise ValidationError(f"k is {self.k}; a population is sampled for k <= {MAX_SAMPLE_K} (its frequencies "
                                  "are held in memory)")
        weights = self.frequencies if self.frequencies is not None else 1.0 / np.arange(1, self.k + 1)
        return _check_generator(rng).choice(self.k, size=integer(n, "n"), p=weights / weights.sum())

    def truth(self, values):
        """The frequency of each value among ``values`` (what a frequency estimate targets)."""
        indices = self.validate(values)
        return np.bincount(indices, minlength=self.k) / indices.size

    def names(self):
        return [f"frequency[{label}]" for label in self.labels]

    def to_dict(self):
        labels = None if isinstance(self.labels, range) else list(self.labels)
        return {"kind": self.kind, "k": self.k, "labels": labels}

    def __eq__(self, other):
        return isinstance(other, Categorical) and self.k == other.k and tuple_or_range(self.labels) == \
            tuple_or_range(other.labels)

    def __hash__(self):
        return hash((self.kind, self.k))

    def __repr__(self):
        return f"Categorical(k={self.k})"


class Box(Immutable):
    """One row of d numbers in [-1, 1] per user; a vector is accepted when d == 1."""

    kind = "box"

    def __init__(self, d):
        self.d = integer(d, "d", low=1)

    def validate(self, values, field="values"):
        """``values`` as a float (n, d) array with every entry in [-1, 1]."""
        try:
            flat = self.d == 1 and np.ndim(values) == 1
        except ValueError:  # a ragged nested list; float_array names the problem
            flat = False
        array = float_array(values, field, 1 if flat else 2)
        array = array.reshape(-1, 1) if flat else array
        if array.shape[1] != self.d:
            raise ValidationError(f"{field} has shape {array.shape}; it must have shape (n, {self.d}), one row of "
                                  f"{self.d} value{'s' if self.d > 1 else ''} in [-1, 1] per user")
        outside = np.flatnonzero(np.abs(array.ravel()) > 1.0)
        if outside.size:
            row, column = np.unravel_index(outside[0], array.shape)
            raise ValidationError(f"{field}[{row}, {column}] is {fmt(array[row, column])}; every value must lie in "
                                  "[-1, 1] (map raw ranges with lipdesign.Range(low, high).to_unit)")
        return array

    def sample(self, n, rng):
        """Coordinate j ~ N(mu_j, POPULATION_SD) clipped to [-1, 1], the means spread over [-0.5, 0.5]."""
        return np.column_stack([numeric_column(integer(n, "n"), j, self.d, _check_generator(rng))
                                for j in range(self.d)])

    def truth(self, values):
        """The mean of each coordinate (what a mean estimate targets)."""
        return self.validate(values).mean(axis=0)

    def names(self):
        return [f"mean[{j}]" for j in range(self.d)]

    def to_dict(self):
        return {"kind": self.kind, "d": self.d}

    def __eq__(self, other):
        return isinstance(other, Box) and self.d == other.d

    def __hash__(self):
        return hash((self.kind, self.d))

    def __repr__(self):
        return f"Box(d={self.d})"


class Strings(Immutable):
    """One non-empty string of at most ``max_bytes`` UTF-8 bytes per user, from a domain nobody listed (docs/math.md
    §16.1). ``candidates`` (optional) are the strings a server decodes over and a simulation draws from (with
    ``frequencies``, default Zipf(1)); users may hold any other string."""

    kind = "strings"

    #: Most candidates a decoder takes (docs/math.md §16.4; beyond 2048 the decoding is sparse).
    MAX_CANDIDATES = 2**20

    def __init__(self, max_bytes, candidates=None, frequencies=None):
        self.max_bytes = string_bytes(max_bytes)
        self.candidates = None
        self.frequencies = None
        if candidates is not None:
            data = encoded(candidates, self.max_bytes, "candidates")
            if len(data) > self.MAX_CANDIDATES:
                raise ValidationError(f"candidates holds {len(data)} strings; a decoder takes at most "
                                      f"{self.MAX_CANDIDATES}")
            first: dict[bytes, int] = {}  # each candidate's first position
            for position, item in enumerate(data):
                if item in first:
                    raise ValidationError(f"candidates[{position}] is {fmt(item.decode('utf-8'))}, the same string as "
                                          f"candidates[{first[item]}]; every candidate must be listed once")
                first[item] = position
            self.candidates = tuple(item.decode("utf-8") for item in data)
            if frequencies is not None:
                self.frequencies = probability_vector(frequencies, "frequencies", length=len(data))
                self.frequencies.setflags(write=False)

    def validate(self, values, field="values"):
        """The UTF-8 bytes of each value (a list), refused naming the first entry that breaks a rule."""
        return encoded(values, self.max_bytes, field)

    def required_candidates(self, what):
        """The candidates, or ValidationError saying that ``what`` needs them."""
        if self.candidates is None:
            raise ValidationError(f"candidates is None; {what} needs the candidate strings (the list a server decodes "
                                  "over): give candidates=[...] (with_candidates; `lipdesign estimate --candidates "
                                  "FILE`)")
        return self.candidates

    def sample(self, n, rng):
        """n candidates drawn from ``frequencies`` (Zipf(1) over the list order when not given), as an object array
        of str."""
        candidates = self.required_candidates("a sampled population")
        weights = self.frequencies if self.frequencies is not None else 1.0 / np.arange(1, len(candidates) + 1)
        draws = _check_generator(rng).choice(len(candidates), size=integer(n, "n"), p=weights / weights.sum())
        return np.array(candidates, dtype=object)[draws]

    def indices(self, values):
        """Each value's position in the candidates, -1 for a value not listed: matched by a 64-bit hash of the
        whole string (two different strings share one with probability 2^-64 per pair)."""
        candidates = self.required_candidates("matching values to candidates")
        key = hash_key(0, [0])
        listed = string_hash(*byte_words(encoded(candidates, self.max_bytes, "candidates")), key)[:, 0]
        hashes = string_hash(*byte_words(self.validate(values)), key)[:, 0]
        order = np.argsort(listed)
        at = np.minimum(np.searchsorted(listed[order], hashes), listed.size - 1)
        return np.where(listed[order][at] == hashes, order[at], -1)

    def truth(self, values):
        """The frequency of each candidate among ``values`` (values not listed count for none of them)."""
        indices = self.indices(values)
        candidates = cast("tuple[str, ...]", self.candidates)  # not None: indices refuses a domain without them
        return np.bincount(indices[indices >= 0], minlength=len(candidates)) / indices.size

    def names(self):
        return [f"frequency[{candidate}]" for candidate in self.required_candidates("naming the estimates")]

    def to_dict(self):
        return {"kind": self.kind, "max_bytes": self.max_bytes,
                "candidates": None if self.candidates is None else list(self.candidates)}

    def __eq__(self, other):
        return isinstance(other, Strings) and (self.max_bytes, self.candidates) == (other.max_bytes,
                                                                                   other.candidates)

    def __hash__(self):
        return hash((self.kind, self.max_bytes))

    def __repr__(self):
        listed = "" if self.candidates is None else f", {len(self.candidates)} candidates"
        return f"Strings(max_bytes={self.max_bytes}{listed})"


def numeric_column(n, position, count, rng):
    """Column ``position`` of ``count`` of the built-in numeric population."""
    mean = 0.3 if count == 1 else -0.5 + position / (count - 1)
    return np.clip(rng.normal(mean, POPULATION_SD, n), -1.0, 1.0)


class MixedTuple(Immutable):
    """One row per user: ``attributes[j]`` is "numeric" (a value in [-1, 1]) or an int k >= 2 (a category index
    0..k-1, given as a number in the row)."""

    kind = "mixed"

    def __init__(self, attributes):
        if not isinstance(attributes, (list, tuple)):
            raise ValidationError(f"attributes is {fmt(attributes)}; it must be a list of 'numeric' or category "
                                  "counts k >= 2, in column order")
        if not attributes:
            raise ValidationError("attributes is empty; a tuple needs at least one attribute")
        parsed: list[Any] = []  # "numeric" or a category count k (each use compares with "numeric" first)
        for j, attribute in enumerate(attributes):
            if isinstance(attribute, str) and attribute == "numeric":
                parsed.append("numeric")
            elif isinstance(attribute, str):
                raise ValidationError(f"attributes[{j}] is {attribute!r}; each attribute must be 'numeric' or an int "
                                      "k >= 2 (a categorical attribute with k categories)")
            else:
                parsed.append(integer(attribute, f"attributes[{j}]", low=2))
        self.attributes = tuple(parsed)
        self.d = len(self.attributes)

    def validate(self, values, field="values"):
        """A list of d columns: float in [-1, 1] for a numeric attribute, int64 indices for a categorical one."""
        array = float_array(values, field, 2)
        if array.shape[1] != self.d:
            raise ValidationError(f"{field} has shape {array.shape}; it must have shape (n, {self.d}), one column "
                                  "per attribute")
        columns = []
        for j, (column, attribute) in enumerate(zip(array.T, self.attributes)):
            name = f"{field}[:, {j}]"
            if attribute == "numeric":
                columns.append(Box(1).validate(column, name)[:, 0])
            else:
                columns.append(index_array(column, attribute, name))
        return columns

    def sample(self, n, rng):
        n, rng = integer(n, "n"), _check_generator(rng)
        return np.column_stack([numeric_column(n, j, self.d, rng) if attribute == "numeric"
                                else Categorical(attribute).sample(n, rng)
                                for j, attribute in enumerate(self.attributes)])

    def truth(self, values):
        """Per attribute, the mean (numeric) or the frequencies (categorical)."""
        return [float(column.mean()) if attribute == "numeric"
                else np.bincount(column, minlength=attribute) / column.size
                for column, attribute in zip(self.validate(values), self.attributes)]

    def names(self):
        names = []
        for j, attribute in enumerate(self.attributes):
            names += [f"mean[{j}]"] if attribute == "numeric" else [f"frequency[{j}][{v}]" for v in range(attribute)]
        return names

    def to_dict(self):
        return {"kind": self.kind, "attributes": list(self.attributes)}

    def __eq__(self, other):
        return isinstance(other, MixedTuple) and self.attributes == other.attributes

    def __hash__(self):
        return hash((self.kind, self.attributes))

    def __repr__(self):
        return f"MixedTuple({list(self.attributes)})"


__all__ = ["Box", "Categorical", "MixedTuple", "check_indices"]
