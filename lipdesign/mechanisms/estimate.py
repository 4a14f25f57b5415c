"""What ``estimate`` returns for every family: the estimate with its standard errors (docs/math.md §11, §15).

An ``Estimate`` behaves as the numpy array of its values (``np.asarray(est)``, arithmetic, indexing), and also
carries ``standard_errors``, ``n``, ``method`` and ``confidence_interval(level)``; the estimate of a mixed tuple
(Harmony's mixed mechanism) is one flat vector whose ``attribute(j)`` gives attribute j's mean or frequencies.
Families whose estimator has its own errors build it themselves; ``with_standard_errors`` gives the others theirs.
Numpy and the standard library only (the normal quantile of an interval is ``statistics.NormalDist``'s, so a runtime
install needs no scipy).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from lipdesign.errors import ValidationError
from lipdesign.validation import fmt, real_number

if TYPE_CHECKING:
    import numpy.typing as npt


#: What an estimate estimates ("tuple": a mixed tuple's per-attribute means and frequencies, one flat vector;
#: "combination": a weighted sum of rounds' frequencies, such as a change, ``lipdesign.rounds``).
KINDS = ("frequencies", "mean", "sum", "tuple", "combination")

#: The note of an MMSE estimate (``shrinkage_note``).
SHRINKAGE = ("MMSE: posterior means under the design prior, pulled toward it; biased when the population differs "
             "from the prior, and without standard errors")


def shrinkage_note(alternatives: str = "'unbiased'") -> str:
    """Warn (ShrinkageWarning) that an MMSE estimate shrinks toward the design prior, and return the note it
    carries; ``alternatives`` names the methods to use for the population instead."""
    import warnings

    from lipdesign.errors import ShrinkageWarning

    warnings.warn(f"method 'mmse': {SHRINKAGE} (docs/math.md §4, §11); use method={alternatives} for the population",
                  ShrinkageWarning, stacklevel=3)
    return SHRINKAGE


def _frozen(numbers):
    array = np.array(numbers, dtype=float)
    array.setflags(write=False)
    return array


class Estimate(NDArrayOperatorsMixin):
    """An estimate from ``n`` reports by ``method``, with its standard errors (docs/math.md §11, §15).

    ``values`` (the frequencies, or one mean or sum), their ``standard_errors`` (nan where the method has none: an
    MMSE estimate is biased toward the design prior, so an interval around it would not cover the truth), and, for
    frequencies made consistent, the ``raw`` unbiased values the errors and intervals refer to. Every family's
    ``estimate`` returns one; it behaves as the numpy array of its values (``np.asarray(est)``, arithmetic,
    indexing, ``len``, the array's methods such as ``est.argmax()``), and ``print(est)`` shows its ``summary``.
    Read-only: ``values`` and ``raw`` are read-only arrays.

    Parameters
    ----------
    values : array_like of float
        The estimate: the frequencies, one mean or sum, or a mixed tuple's blocks one after the other.
    standard_errors : array_like of float or callable
        The standard error of each entry (nan where there is none), or a function of no arguments that returns
        them, called the first time they are asked for (plug-in errors can be costly).
    n : int
        The number of reports the estimate is from.
    method : str
        The estimator that made it ("unbiased", "mle", "mmse", ...).
    kind : {"frequencies", "mean", "sum", "tuple", "combination"}, default "frequencies"
        What it estimates; "tuple" is a mixed tuple's per-attribute means and frequencies (see ``parts``);
        "combination" a weighted sum of rounds' frequencies (``lipdesign.rounds``), whose intervals are not clipped.
    names : sequence of str, optional
        A name per entry, used by ``summary`` and ``to_dict``; by default "0", "1", ...
    raw : array_like of float, optional
        The unbiased values before a consistency step, to which the standard errors and the intervals refer; by
        default ``values``.
    note : str, default ""
        What a reader should know about the estimate (bias, where its errors come from), shown by ``summary``.
    parts : sequence of (str, int), optional
        For a mixed tuple: the kind ("mean" or "frequencies") and size of each attribute's block of ``values``, in
        order (``attribute``).

    See Also
    --------
    TableMechanism.estimate : The estimate of a designed table.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> est = ld.Estimate([0.3, 0.7], [0.02, 0.02], n=1000, method="unbiased", names=["no", "yes"])
    >>> est
    Estimate(frequencies, method='unbiased', n=1000, values=[0.3 0.7])
    >>> print(est)
    frequencies from n = 1000 reports, method 'unbiased'
      no: 0.3 +- 0.02 (95% interval 0.260801 .. 0.339199)
      yes: 0.7 +- 0.02 (95% interval 0.660801 .. 0.739199)
    >>> est * 100, float(est[1]), len(est)
    (array([30., 70.]), 0.7, 2)

    A mechanism's estimate, beside the truth:

    >>> mech = ld.TableMechanism([[0.75, 0.25], [0.25, 0.75]], ld.LDP(1.1), ld.Prior([0.3, 0.7]))
    >>> values = np.repeat([0, 1], [300, 700])
    >>> est = mech.estimate(mech.perturb(values, rng=0))
    >>> np.round(est.values, 3), np.round(est.standard_errors, 3)
    (array([0.288, 0.712]), array([0.027, 0.027]))
    """

    values: npt.NDArray[np.float64]
    raw: npt.NDArray[np.float64]
    n: int
    method: str
    kind: str
    note: str
    names: list[str]
    parts: tuple[tuple[str, int], ...] | None

    def __init__(self, values: npt.ArrayLike, standard_errors: npt.ArrayLike | Callable[[], npt.ArrayLike], *,
                 n: int, method: str, kind: str = "frequencies", names: Sequence[str] | None = None,
                 raw: npt.ArrayLike | None = None, note: str = "",
                 parts: Sequence[tuple[str, int]] | None = None) -> None:
        self.values = np.array(values, dtype=float)
        #: For a tuple: (kind, size) of each attribute's block of ``values``, in order.
        self.parts = tuple((part_kind, int(size)) for part_kind, size in parts) if parts is not None else None
        # a callable is computed on first use: plug-in errors cost a variance, which some families pay dearly for
        self._standard_errors = standard_errors if callable(standard_errors) else _frozen(standard_errors)
        self.raw = self.values if raw is None else np.array(raw, dtype=float)
        self.n, self.method, self.kind, self.note = int(n), method, kind, note
        self.names = list(names) if names is not None else [str(i) for i in range(self.values.size)]
        for array in (self.values, self.raw):
            array.setflags(write=False)

    @property
    def standard_errors(self) -> npt.NDArray[np.float64]:
        """The standard error of each entry (nan where the method has none), a read-only float64 array."""
        if callable(self._standard_errors):
            self._standard_errors = _frozen(self._standard_errors())
        return self._standard_errors

    @property
    def frequencies(self) -> npt.NDArray[np.float64]:
        """The estimated frequencies, ``values`` (sum to 1; ValidationError for the estimate of a mean or a sum)."""
        if self.kind != "frequencies":
            raise ValidationError(f"estimate is of a {self.kind}; it has no frequencies (use .values)")
        return self.values

    def attribute(self, j: int) -> float | npt.NDArray[np.float64]:
        """A mixed tuple's attribute j: its estimated mean (a float) or frequencies (an array).

        Parameters
        ----------
        j : int
            The attribute, 0 for the first.

        Returns
        -------
        float or numpy.ndarray
            The estimated mean of a numeric attribute, or the estimated frequencies of a categorical one (a
            read-only view of ``values``).

        Raises
        ------
        ValidationError
            If the estimate is not of a mixed tuple, or ``j`` is not one of its attributes.

        Examples
        --------
        >>> import lipdesign as ld
        >>> est = ld.Estimate([0.25, 0.4, 0.6], [0.01, 0.02, 0.02], n=500, method="unbiased", kind="tuple",
        ...                   names=["age", "sex=f", "sex=m"], parts=[("mean", 1), ("frequencies", 2)])
        >>> est.attribute(0), est.attribute(1)
        (0.25, array([0.4, 0.6]))
        >>> est.attribute(2)
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: j is 2; the tuple has attributes 0..1
        """
        if self.parts is None:
            raise ValidationError(f"estimate is of {self.kind}; only the estimate of a mixed tuple has attributes")
        j = int(j)
        if not 0 <= j < len(self.parts):
            raise ValidationError(f"j is {fmt(j)}; the tuple has attributes 0..{len(self.parts) - 1}")
        start = sum(size for _, size in self.parts[:j])
        kind, size = self.parts[j]
        block = self.values[start:start + size]
        return float(block[0]) if kind == "mean" else block

    def confidence_interval(self, level: float = 0.95
                            ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | tuple[float, float]:
        """The normal confidence interval of each entry at confidence ``level``.

        Per entry, raw +- z sd around the unbiased (``raw``) values, z the normal quantile of ``(1 + level) / 2``,
        nan where an entry has no standard error (the note says why); frequencies are clipped to [0, 1], which
        keeps every interval that covered the truth covering it.

        Parameters
        ----------
        level : float, default 0.95
            The confidence level, strictly between 0 and 1.

        Returns
        -------
        tuple of (numpy.ndarray, numpy.ndarray) or tuple of (float, float)
            (low, high): two arrays with an entry per value, or two floats for the estimate of one mean or sum.

        Raises
        ------
        ValidationError
            If ``level`` is not strictly between 0 and 1, or no entry has a standard error (an MMSE estimate).

        Examples
        --------
        >>> import lipdesign as ld
        >>> import numpy as np
        >>> est = ld.Estimate([0.3, 0.7], [0.02, 0.02], n=1000, method="unbiased")
        >>> low, high = est.confidence_interval(0.9)
        >>> np.round(low, 4), np.round(high, 4)
        (array([0.2671, 0.6671]), array([0.3329, 0.7329]))
        >>> mean = ld.Estimate([0.42], [0.01], n=100, method="unbiased", kind="mean", names=["mean"])
        >>> print([round(bound, 4) for bound in mean.confidence_interval()])
        [0.4004, 0.4396]
        """
        level = real_number(level, "level")
        if not 0 < level < 1:
            raise ValidationError(f"level is {fmt(level)}; it must lie strictly between 0 and 1")
        if self.values.size and not np.isfinite(self.standard_errors).any():  # empty: (empty, empty) below
            raise ValidationError(f"method is {self.method!r}; its estimate has no standard errors, so no confidence "
                                  "interval (use method='unbiased' or 'mle')")
        half = NormalDist().inv_cdf(0.5 + level / 2) * self.standard_errors
        low, high = self.raw - half, self.raw + half
        if self.kind == "frequencies":
            low, high = np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)
        return (low, high) if self.values.size > 1 or self.kind == "frequencies" else (float(low[0]), float(high[0]))

    def to_dict(self) -> dict[str, Any]:
        """The estimate as JSON-ready plain data (what the CLI writes).

        Returns
        -------
        dict
            ``kind``, ``method``, ``n``, ``names``, and the lists ``values`` and ``standard_errors`` (nan where
            there is none).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.Estimate([0.3, 0.7], [0.02, 0.02], n=1000, method="unbiased", names=["no", "yes"]).to_dict()
        {'kind': 'frequencies', 'method': 'unbiased', 'n': 1000, 'names': ['no', 'yes'], 'values': [0.3, 0.7],
         'standard_errors': [0.02, 0.02]}
        """
        return {"kind": self.kind, "method": self.method, "n": self.n, "names": self.names,
                "values": self.values.tolist(), "standard_errors": self.standard_errors.tolist()}

    def summary(self, level: float = 0.95) -> str:
        """The estimate as text: a line per entry with its standard error and interval, then the note.

        ``print(est)`` prints it at the default level.

        Parameters
        ----------
        level : float, default 0.95
            The confidence level of the intervals shown.

        Returns
        -------
        str
            The heading line (what, from how many reports, by which method), a line per entry and the note.

        Raises
        ------
        ValidationError
            If ``level`` is not strictly between 0 and 1 (and some entry has a standard error).

        Examples
        --------
        >>> import lipdesign as ld
        >>> est = ld.Estimate([0.42], [0.01], n=100, method="unbiased", kind="mean", names=["mean"])
        >>> print(est.summary(level=0.9))
        mean from n = 100 reports, method 'unbiased'
          mean: 0.42 +- 0.01 (90% interval 0.403551 .. 0.436449)
        """
        lines = [f"{self.kind} from n = {self.n} reports, method {self.method!r}"]
        if not np.array_equal(self.values, self.raw, equal_nan=True):
            lines[0] += (", made consistent (in [0, 1], summing to 1); the errors and intervals are those of the "
                         "values before that step")
        elif self.kind == "frequencies" and np.isfinite(self.standard_errors).any() and \
                ((self.raw < 0) | (self.raw > 1)).any():
            lines[0] += " (unbiased values may fall outside [0, 1]; their intervals are clipped to it)"
        if np.isfinite(self.standard_errors).any():
            low, high = (np.atleast_1d(bound) for bound in self.confidence_interval(level))
            lines += [f"  {name}: {value:.6g} +- {error:.2g} ({level:.0%} interval {lo:.6g} .. {hi:.6g})"
                      if np.isfinite(error) else f"  {name}: {value:.6g} (no standard error)"
                      for name, value, error, lo, hi in zip(self.names, self.values, self.standard_errors, low, high)]
        else:
            lines += [f"  {name}: {value:.6g}" for name, value in zip(self.names, self.values)]
        if self.note:
            lines.append(f"  note: {self.note}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return f"Estimate({self.kind}, method={self.method!r}, n={self.n}, values={np.array2string(self.values)})"

    # -- the array it stands for --------------------------------------------------------------------------
    def __array__(self, dtype: npt.DTypeLike | None = None, copy: bool | None = None) -> npt.NDArray[Any]:
        return self.values.astype(dtype) if dtype is not None else self.values.copy()

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        inputs = tuple(x.values if isinstance(x, Estimate) else x for x in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __len__(self) -> int:
        return self.values.size

    def __getitem__(self, index: Any) -> Any:
        return self.values[index]

    def __iter__(self) -> Iterator[np.float64]:
        return iter(self.values)

    def __float__(self) -> float:
        if self.values.size != 1:
            raise TypeError(f"an estimate of {self.values.size} values is not one number")
        return float(self.values[0])

    def __getattr__(self, name: str) -> Any:  # the array's own methods and properties (min, sum, shape, tolist, ...)
        if name.startswith("__") or name == "values":
            raise AttributeError(name)
        return getattr(self.values, name)


def sample_standard_errors(sums: npt.ArrayLike, squares: npt.ArrayLike, users: npt.ArrayLike
                           ) -> npt.NDArray[np.float64]:
    """sqrt(s^2 / m) per entry of a mean of m = ``users`` independent per-user terms Y with sum ``sums`` and sum of
    squares ``squares``, s^2 = (sum Y^2 - (sum Y)^2 / m) / (m - 1) their sample variance: E[s^2 / m] is the variance
    of the mean plus sum (E[Y_i] - their mean)^2 / (m (m - 1)), never too small, exact when the users share one value
    (docs/math.md §15, Proposition 15.3). nan where m < 2 (no sample variance) or an input is nan; s^2 is floored at
    0 (float sums add up to rounding)."""
    sums, squares, users = np.broadcast_arrays(*(np.asarray(part, dtype=float) for part in (sums, squares, users)))
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.maximum(squares - sums**2 / users, 0.0) / (users - 1.0)
        return np.where(users >= 2, np.sqrt(spread / users), np.nan)


#: The note of plug-in standard errors (``with_standard_errors``, categorical families).
PLUG_IN = "plug-in standard errors (the variance at the Norm-Sub estimate)"
