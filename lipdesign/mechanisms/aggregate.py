"""Aggregates: the sufficient statistics of a set of reports, mergeable across files and machines.

Counting happens where the reports are (per file, per partition, per machine); the aggregates are added with
``+`` or ``sum`` and estimated once: ``mechanism.estimate(a + b) == mechanism.estimate(reports_a + reports_b)``.
Integer statistics add exactly in any order: counts in [0, n] (a statistic named "counts" sums to n) and signed
sums of +-1 signs in [-n, n] (names ending in "sums"); floating-point sums (Laplace, Piecewise, Hybrid reports, and
sums of their squares, names ending in "squares", never negative) add up to rounding. ``to_dict`` / ``from_dict``
give a JSON form; ``check_like`` refuses an aggregate that cannot be one of a given mechanism. Numpy only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.validation import document_header, fmt, integer

if TYPE_CHECKING:
    from typing import Self

    import numpy.typing as npt

FORMAT = "lipdesign.aggregate"
FORMAT_VERSION = 1

#: The dtypes a statistic may have: exact counts and sums of integers, or floating-point sums.
DTYPES = {"int64": np.int64, "float64": np.float64}


def _statistic(name, value):
    array = np.asarray(value)
    kind = "int64" if array.dtype.kind in "iub" else "float64" if array.dtype.kind == "f" else None
    if kind is None:
        raise ValidationError(f"statistics[{name!r}] has dtype {array.dtype}; a statistic is an array of integers "
                              "or floats")
    array = np.array(array, dtype=DTYPES[kind])
    if kind == "float64" and not np.isfinite(array).all():
        raise ValidationError(f"statistics[{name!r}] has a non-finite entry; statistics are finite sums")
    array.setflags(write=False)
    return array


def _shape(name, entry):
    """The stored shape: non-negative integers (numpy's -1, "infer", would let a file say nothing about it; a
    product other than the number of entries fails in ``reshape``)."""
    shape = entry["shape"]
    if not all(isinstance(size, int) and not isinstance(size, bool) and size >= 0 for size in shape):
        raise ValidationError(f"statistics[{name!r}].shape is {shape}, which does not fit its {len(entry['data'])} "
                              "data entries: it must list non-negative sizes whose product is their number")
    return tuple(shape)


def _describe(statistics):
    return ", ".join(f"{name} {list(shape)} {dtype}" for name, (shape, dtype) in sorted(statistics.items()))


class Aggregate:
    """The sufficient statistics of ``n`` reports of the mechanism with fingerprint ``mechanism``.

    A mechanism's ``aggregate(reports)`` builds one where the reports are; aggregates of the same mechanism add with
    ``+`` and ``sum`` (exactly, for the integer statistics) and its ``estimate`` takes the total, with the same
    answer as from all the reports at once (docs/math.md §15). Immutable; equal when the mechanism, the family,
    ``n`` and every statistic are equal.

    Parameters
    ----------
    mechanism : str
        The fingerprint of the mechanism whose reports these are (``mechanism.fingerprint``).
    family : str
        Its family id ("table", "grr", "oue", ...).
    n : int
        The number of reports, at least 0.
    statistics : dict of str to array_like
        The statistics by name: arrays of integers (stored as int64, added exactly) or of finite floats (float64).
        Their names, shapes and dtypes are the family's (see the module docstring and ``check_like``).

    Raises
    ------
    ValidationError
        If ``mechanism`` or ``family`` is not a non-empty string, ``n`` is not an integer >= 0, ``statistics`` is
        not a dict, or a statistic is not an array of integers or finite floats. Adding aggregates of different
        mechanisms, or with different statistics, raises it too.

    See Also
    --------
    TableMechanism.estimate : Takes reports or their Aggregate.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> mech = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1), ld.Prior([0.3, 0.7]))
    >>> values = np.repeat([0, 1], [30, 70])
    >>> monday = mech.aggregate(mech.perturb(values, rng=1))
    >>> tuesday = mech.aggregate(mech.perturb(values, rng=2))
    >>> monday, monday["counts"], tuesday["counts"]
    (Aggregate(table, n=100, statistics=['counts']), array([43, 57]), array([41, 59]))
    >>> total = monday + tuesday
    >>> total.n, total["counts"], sum([monday, tuesday]) == total
    (200, array([ 84, 116]), True)
    >>> np.round(mech.estimate(total).values, 3)
    array([0.34, 0.66])
    """

    __slots__ = ("family", "mechanism", "n", "statistics")

    mechanism: str
    family: str
    n: int
    statistics: dict[str, npt.NDArray[Any]]

    def __init__(self, mechanism: str, family: str, n: int, statistics: Mapping[str, npt.ArrayLike]) -> None:
        for field, value in (("mechanism", mechanism), ("family", family)):
            if not isinstance(value, str) or not value:
                raise ValidationError(f"{field} is {fmt(value)}; it must be a non-empty string")
        object.__setattr__(self, "mechanism", mechanism)
        object.__setattr__(self, "family", family)
        object.__setattr__(self, "n", integer(n, "n", low=0))
        if not isinstance(statistics, dict):
            raise ValidationError(f"statistics is {fmt(statistics)}; it must map names to arrays")
        object.__setattr__(self, "statistics", {str(name): _statistic(name, value)
                                                for name, value in sorted(statistics.items())})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Aggregate is immutable; add aggregates with + instead of setting {name!r}")

    def __reduce__(self) -> tuple[type[Aggregate], tuple[Any, ...]]:
        """Pickled as its constructor arguments (aggregates cross processes in the Dask engine)."""
        return Aggregate, (self.mechanism, self.family, self.n, dict(self.statistics))

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        return self.statistics[name]

    def __add__(self, other: Aggregate | int) -> Aggregate:
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:  # sum() starts from 0
            return self
        if not isinstance(other, Aggregate):
            return NotImplemented
        if (other.mechanism, other.family) != (self.mechanism, self.family):
            raise ValidationError(f"aggregate is of mechanism {other.mechanism} ({other.family}); it cannot be "
                                  f"merged with one of {self.mechanism} ({self.family}): they count different "
                                  "reports")
        shapes = {name: (array.shape, array.dtype) for name, array in self.statistics.items()}
        if shapes != {name: (array.shape, array.dtype) for name, array in other.statistics.items()}:
            raise ValidationError("aggregate statistics differ in names, shapes or dtypes; aggregates of one "
                                  "mechanism always have the same ones")
        return Aggregate(self.mechanism, self.family, self.n + other.n,
                         {name: array + other.statistics[name] for name, array in self.statistics.items()})

    __radd__ = __add__

    def check_like(self, template: Aggregate) -> None:
        """Raise unless this aggregate could be one of ``template``'s mechanism.

        It must have the statistics of ``template`` (names, shapes, dtypes) and counts that n reports can give (see
        the module docstring): integer statistics in [0, n] (in [-n, n] for names ending in "sums"), "counts"
        summing to n, sums of squares ("squares") never negative. Mechanisms check an aggregate from elsewhere (a
        file, another machine) this way before estimating from it.

        Parameters
        ----------
        template : Aggregate
            An aggregate of the mechanism, such as the aggregate of no reports.

        Raises
        ------
        ValidationError
            If the names, shapes or dtypes differ, or a statistic lies outside what n reports can give.

        Examples
        --------
        >>> import lipdesign as ld
        >>> mech = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1), ld.Prior([0.3, 0.7]))
        >>> template = mech.aggregate(mech.empty_reports())
        >>> ld.Aggregate(mech.fingerprint, "table", 3, {"counts": [1, 2]}).check_like(template)
        >>> ld.Aggregate(mech.fingerprint, "table", 3, {"counts": [1, 3]}).check_like(template)
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: statistics['counts'] sums to 4; it must sum to n = 3
        """
        expected = {name: (array.shape, array.dtype) for name, array in template.statistics.items()}
        actual = {name: (array.shape, array.dtype) for name, array in self.statistics.items()}
        if actual != expected:
            raise ValidationError(f"aggregate statistics are {_describe(actual)}; the {self.family} mechanism's are "
                                  f"{_describe(expected)}")
        for name, array in self.statistics.items():
            if name.endswith("squares") and array.size and array.min() < 0:
                raise ValidationError(f"statistics[{name!r}] reaches {array.min()}; a sum of squares is never negative")
            if array.dtype.kind != "i":
                continue
            low = -self.n if name.endswith("sums") else 0
            if array.size and (array.min() < low or array.max() > self.n):
                raise ValidationError(f"statistics[{name!r}] reaches {array.min()}..{array.max()}; from n = {self.n} "
                                      f"reports it lies in {low}..{self.n}")
            if name == "counts" and array.sum() != self.n:
                raise ValidationError(f"statistics['counts'] sums to {array.sum()}; it must sum to n = {self.n}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Aggregate) and (self.mechanism, self.family, self.n) == \
            (other.mechanism, other.family, other.n) and self.statistics.keys() == other.statistics.keys() and \
            all(np.array_equal(array, other.statistics[name]) for name, array in self.statistics.items())

    __hash__ = None  # type: ignore[assignment]  # unhashable, as equality compares the arrays

    def to_dict(self) -> dict[str, Any]:
        """The aggregate as JSON-ready plain data, which ``from_dict`` reads back.

        Returns
        -------
        dict
            The header (``format``, ``format_version``), ``family``, ``mechanism``, ``n`` and, per statistic, its
            ``dtype``, ``shape`` and flattened ``data``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> aggregate = ld.Aggregate("0123abcd", "table", 3, {"counts": [1, 2]})
        >>> aggregate.to_dict()
        {'format': 'lipdesign.aggregate', 'format_version': 1, 'family': 'table', 'mechanism': '0123abcd', 'n': 3,
         'statistics': {'counts': {'dtype': 'int64', 'shape': [2], 'data': [1, 2]}}}
        >>> ld.Aggregate.from_dict(aggregate.to_dict()) == aggregate
        True
        """
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "family": self.family,
                "mechanism": self.mechanism, "n": self.n,
                "statistics": {name: {"dtype": str(array.dtype), "shape": list(array.shape),
                                      "data": array.ravel().tolist()}
                               for name, array in self.statistics.items()}}

    @classmethod
    def from_dict(cls, document: Any) -> Self:
        """The Aggregate of ``to_dict()``; every field is checked.

        Parameters
        ----------
        document : dict
            What ``to_dict`` returned (for instance read back from JSON).

        Returns
        -------
        Aggregate
            The aggregate it describes.

        Raises
        ------
        ValidationError
            If the header is not that of an aggregate of a known format version, or a field is missing or
            malformed (a statistic whose data does not fit its dtype and shape, non-integer data for int64, ...).

        Examples
        --------
        >>> import lipdesign as ld
        >>> document = {"format": "lipdesign.aggregate", "format_version": 1, "family": "table",
        ...             "mechanism": "0123abcd", "n": 3,
        ...             "statistics": {"counts": {"dtype": "int64", "shape": [2], "data": [1, 2]}}}
        >>> ld.Aggregate.from_dict(document)
        Aggregate(table, n=3, statistics=['counts'])
        """
        document_header(document, "an aggregate", FORMAT, FORMAT_VERSION)
        statistics = document.get("statistics")
        if not isinstance(statistics, dict):
            raise ValidationError(f"statistics is {fmt(statistics)}; it must map names to arrays")
        arrays = {}
        for name, entry in statistics.items():
            if not isinstance(entry, dict) or entry.get("dtype") not in DTYPES or \
                    not isinstance(entry.get("shape"), list) or not isinstance(entry.get("data"), list):
                raise ValidationError(f"statistics[{name!r}] is {fmt(entry)}; it must be {{'dtype': 'int64' or "
                                      "'float64', 'shape': [...], 'data': [...]}")
            shape = _shape(name, entry)
            try:
                array = np.array(entry["data"], dtype=DTYPES[entry["dtype"]]).reshape(shape)
            except (TypeError, ValueError, OverflowError):
                raise ValidationError(f"statistics[{name!r}] data does not fit dtype {entry['dtype']} and shape "
                                      f"{entry['shape']}") from None
            if entry["dtype"] == "int64" and not all(isinstance(v, int) and not isinstance(v, bool)
                                                     for v in entry["data"]):
                raise ValidationError(f"statistics[{name!r}] has dtype int64; its data must be integers")
            arrays[name] = array
        return cls(document.get("mechanism"), document.get("family"), document.get("n"), arrays)

    def __repr__(self) -> str:
        return f"Aggregate({self.family}, n={self.n}, statistics={sorted(self.statistics)})"
