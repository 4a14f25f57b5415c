"""The prior of the reported value X over a finite domain with value labels (docs/math.md §1). Numpy only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.domains import Categorical
from lipdesign.errors import ValidationError
from lipdesign.immutable import Immutable
from lipdesign.validation import float_array, labels_for, probability_vector, real_number

if TYPE_CHECKING:
    from typing import Self

    import numpy.typing as npt


def frozen(array: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """A read-only float copy of ``array``."""
    array = np.array(array, dtype=float)
    array.setflags(write=False)
    return array


class Prior(Immutable):
    """Prior over a finite domain: ``Prior([0.2, 0.3, 0.5], labels=["low", "mid", "high"])``.

    The distribution of the reported value X over k values (docs/math.md §1). Probabilities must be non-negative
    and sum to 1 within 1e-9 (``normalize=True`` rescales any positive vector). Probabilities are kept exactly as
    given, so exported numbers round-trip. A Prior is immutable.

    Parameters
    ----------
    probabilities : array_like of float
        Pr[X = x] for each of the k values, non-negative, summing to 1 within 1e-9 (or any non-negative vector of
        positive total with ``normalize=True``).
    labels : sequence of str or int, optional
        One unique label per value (strings or integers); default ``0, 1, ..., k-1``.
    normalize : bool, default False
        Divide ``probabilities`` by their sum instead of requiring them to sum to 1.

    Attributes
    ----------
    probabilities : numpy.ndarray
        The probabilities, a read-only float array of shape (k,).
    labels : tuple of str or int
        The value labels.

    Raises
    ------
    ValidationError
        When a probability is negative or not finite, when they do not sum to 1 (without ``normalize``), or when
        the labels are not one unique string or integer per value.

    See Also
    --------
    PriorSet : A set of plausible priors (bounded-prior LIP).
    SecretModel : A latent secret correlated with X.

    Examples
    --------
    >>> import lipdesign as ld
    >>> prior = ld.Prior([0.2, 0.3, 0.5], labels=["low", "mid", "high"])
    >>> prior
    Prior([0.2, 0.3, 0.5], labels=['low', 'mid', 'high'])
    >>> prior.k
    3
    >>> ld.Prior([2, 3, 5], normalize=True)
    Prior([0.2, 0.3, 0.5], labels=[0, 1, 2])
    >>> ld.Prior([0.5, 0.6])
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: prior sums to 1.1; it must sum to 1 within 1e-09
    """

    probabilities: npt.NDArray[np.float64]
    labels: tuple[str | int, ...]

    def __init__(self, probabilities: npt.ArrayLike, labels: Sequence[str | int] | None = None, *,
                 normalize: bool = False) -> None:
        self.probabilities = frozen(probability_vector(probabilities, "prior", normalize=normalize))
        self.labels = labels_for(labels, self.probabilities.size)

    @classmethod
    def from_counts(cls, counts: npt.ArrayLike, labels: Sequence[str | int] | None = None, *,
                    pseudocount: float = 0.0) -> Self:
        """Prior from observed counts, optionally smoothed by adding ``pseudocount`` to every value.

        The probabilities are ``(counts + pseudocount) / sum(counts + pseudocount)``. A pseudocount keeps every
        value's probability positive, which LIP design needs (docs/math.md §1).

        Parameters
        ----------
        counts : array_like of float
            How often each value was observed, one non-negative count per value.
        labels : sequence of str or int, optional
            One unique label per value; default ``0, 1, ..., k-1``.
        pseudocount : float, default 0.0
            Added to every count before normalising (>= 0).

        Returns
        -------
        Prior
            The normalised (smoothed) counts.

        Raises
        ------
        ValidationError
            When a count is negative, the pseudocount is negative, or the total is 0.

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> prior = ld.Prior.from_counts([3, 0, 7], labels=["a", "b", "c"], pseudocount=1)
        >>> np.round(prior.probabilities, 4)
        array([0.3077, 0.0769, 0.6154])
        """
        counts = float_array(counts, "counts", 1)
        pseudocount = real_number(pseudocount, "pseudocount", low=0.0)
        if (counts < 0).any():
            x = int(np.argmax(counts < 0))
            raise ValidationError(f"counts[{x}] is {counts[x]:g}; counts must be >= 0")
        return cls(counts + pseudocount, labels, normalize=True)

    @property
    def k(self) -> int:
        """The number of values of X (the length of ``probabilities``)."""
        return self.probabilities.size

    @property
    def domain(self) -> Categorical:
        """The categorical input domain of X: these labels, sampled from these probabilities.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.Prior([0.2, 0.8], labels=["no", "yes"]).domain
        Categorical(k=2)
        """
        return Categorical(self.k, self.labels, self.probabilities)

    def indices(self, values: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Map values (labels or indices) to indices 0..k-1, vectorised (``Categorical.validate``).

        Parameters
        ----------
        values : array_like
            Labels of this prior, or integer indices in 0..k-1, of any shape.

        Returns
        -------
        numpy.ndarray
            The integer indices, of the shape of ``values``.

        Raises
        ------
        ValidationError
            When a value is neither a label nor an index in 0..k-1.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.Prior([0.2, 0.3, 0.5], labels=["low", "mid", "high"])
        >>> prior.indices(["high", "low", "high"])
        array([2, 0, 2])
        >>> prior.indices(["medium"])
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: values[0] is 'medium'; it must be one of the labels ['low', 'mid', 'high']
        """
        return self.domain.validate(values)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the prior (as written in spec and mechanism files).

        Returns
        -------
        dict
            ``{"probabilities": [...], "labels": [...]}``, the inverse of ``from_dict``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.Prior([0.25, 0.75], labels=["no", "yes"]).to_dict()
        {'probabilities': [0.25, 0.75], 'labels': ['no', 'yes']}
        """
        return {"probabilities": self.probabilities.tolist(), "labels": list(self.labels)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild a prior from its JSON form (``to_dict``), validating it again.

        Parameters
        ----------
        data : mapping
            ``{"probabilities": [...]}``, optionally with ``"labels"``.

        Returns
        -------
        Prior
            The prior the mapping describes.

        Raises
        ------
        ValidationError
            When the probabilities or labels break the rules of ``Prior``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.Prior([0.25, 0.75], labels=["no", "yes"])
        >>> ld.Prior.from_dict(prior.to_dict()) == prior
        True
        """
        return cls(data["probabilities"], data.get("labels"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Prior) and self.labels == other.labels and \
            np.array_equal(self.probabilities, other.probabilities)

    def __hash__(self) -> int:
        return hash((self.labels, self.probabilities.tobytes()))

    def __repr__(self) -> str:
        return f"Prior({self.probabilities.tolist()}, labels={list(self.labels)})"
