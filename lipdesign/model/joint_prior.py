"""The joint prior of d categorical attributes X = (X_1, ..., X_d) reported together (docs/math.md §20). Numpy only.

A ``JointPrior`` is a table P[x_1, ..., x_d] = Pr[X = x] with a name and value labels per attribute, given in full,
from counts, or from records. It gives each attribute's marginal (a ``Prior``), the joint of two attributes, and the
latent-secret model of one attribute inside the whole tuple, T[a, x] = Pr[X = x | X_j = a] (docs/math.md §20.2),
with which the LIP of attribute j through all reports about the tuple is certified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError
from lipdesign.immutable import Immutable
from lipdesign.model.prior import Prior, frozen
from lipdesign.model.secret import MARGINAL_ATOL, SecretModel
from lipdesign.validation import PROBABILITY_ATOL, float_array, fmt, labels_for, non_negative, real_number

if TYPE_CHECKING:
    from typing import Self

    import numpy.typing as npt


def _names(names: Any) -> tuple[str, ...]:
    """One unique non-empty string per attribute."""
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence) or not names:
        raise ValidationError(f"names is {fmt(names)}; it must be a non-empty list of attribute names (strings)")
    seen: dict[str, int] = {}
    for at, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise ValidationError(f"names[{at}] is {fmt(name)}; an attribute name must be a non-empty string")
        if name in seen:
            raise ValidationError(f"names[{at}] is {name!r}; attribute names must be unique (names[{seen[name]}] is "
                                  "the same)")
        seen[name] = at
    return tuple(names)


class JointPrior(Immutable):
    """The joint prior of d categorical attributes reported together (docs/math.md §20.1).

    ``probabilities[x_1, ..., x_d] = Pr[X_1 = x_1, ..., X_d = x_d]``, an array with one axis per attribute, non-negative
    and summing to 1 within 1e-9 (``normalize=True`` rescales any positive table). Each attribute has a unique name
    and its value labels. Declared per-attribute priors (``marginals``) must agree with the table's marginals within
    1e-6. A JointPrior is immutable.

    Parameters
    ----------
    probabilities : array_like of float
        The joint table, one axis per attribute, axis j of length k_j >= 2.
    names : sequence of str
        One unique name per attribute.
    labels : sequence of sequence of str or int, optional
        The value labels of each attribute; default ``0, 1, ..., k_j - 1``.
    normalize : bool, default False
        Divide ``probabilities`` by their sum instead of requiring them to sum to 1.
    marginals : sequence of Prior or array_like, optional
        Per-attribute priors declared elsewhere; each must equal the table's marginal within 1e-6.

    Attributes
    ----------
    probabilities : numpy.ndarray
        The joint table, read-only, of shape ``k``.
    names : tuple of str
        The attribute names.
    labels : tuple of tuple
        The value labels of each attribute.
    k : tuple of int
        The number of values of each attribute.

    Raises
    ------
    ValidationError
        A table with fewer than 2 values along an axis, negative or not summing to 1; names that are not unique
        non-empty strings, one per axis; labels that are not one unique label per value; an attribute value of
        probability 0 (its conditional table would be undefined; pass ``pseudocount`` to ``from_counts``); or a
        declared marginal that disagrees with the table's.

    See Also
    --------
    Prior : The prior of one attribute.
    SecretModel : A latent secret correlated with the reported value.

    Examples
    --------
    >>> import lipdesign as ld
    >>> prior = ld.JointPrior([[0.3, 0.1], [0.2, 0.4]], names=["sex", "income"],
    ...                       labels=[["F", "M"], ["<=50K", ">50K"]])
    >>> prior
    JointPrior(names=['sex', 'income'], k=[2, 2])
    >>> prior.marginal("income")
    Prior([0.5, 0.5], labels=['<=50K', '>50K'])
    >>> prior.secret("sex").conditional.round(2)  # Pr[(sex, income) | sex]
    array([[0.75, 0.25, 0.  , 0.  ],
           [0.  , 0.  , 0.33, 0.67]])
    >>> ld.JointPrior([[0.3, 0.1], [0.2, 0.4]], names=["sex", "sex"])
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: names[1] is 'sex'; attribute names must be unique (names[0] is the same)
    >>> ld.JointPrior([[0.3, 0.1], [0.2, 0.4]], names=["sex", "income"], marginals=[[0.5, 0.5], None])
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: marginals[0] is [0.5, 0.5]; it must equal the joint prior's marginal of \
'sex', [0.4, 0.6], within 1e-06
    """

    probabilities: npt.NDArray[np.float64]
    names: tuple[str, ...]
    labels: tuple[tuple[str | int, ...], ...]
    k: tuple[int, ...]

    def __init__(self, probabilities: npt.ArrayLike, names: Sequence[str],
                 labels: Sequence[Sequence[str | int] | None] | None = None, *, normalize: bool = False,
                 marginals: Sequence[Prior | npt.ArrayLike | None] | None = None) -> None:
        names = _names(names)
        table = np.asarray(probabilities, dtype=object)
        table = non_negative(float_array(probabilities, "probabilities", table.ndim), "probabilities")
        if table.ndim != len(names):
            raise ValidationError(f"probabilities has {table.ndim} axes; it must have one per attribute name "
                                  f"({len(names)}: {', '.join(names)})")
        short = [j for j, size in enumerate(table.shape) if size < 2]
        if short:
            raise ValidationError(f"probabilities has {table.shape[short[0]]} values along axis {short[0]} "
                                  f"({names[short[0]]!r}); every attribute needs at least 2")
        total = float(table.sum())
        if normalize:
            if total <= 0:
                raise ValidationError(f"probabilities sums to {total:g}; it must have positive total mass")
            table = table / total
        elif abs(total - 1.0) > PROBABILITY_ATOL:
            raise ValidationError(f"probabilities sums to {total:.12g}; it must sum to 1 within {PROBABILITY_ATOL:g}")
        if labels is not None and (isinstance(labels, (str, bytes)) or len(labels) != len(names)):
            raise ValidationError(f"labels is {fmt(labels)}; it must hold one list of value labels per attribute "
                                  f"({len(names)})")
        self.names, self.k = names, tuple(int(size) for size in table.shape)
        self.labels = tuple(labels_for(None if labels is None else labels[j], size, f"labels[{j}]")
                            for j, size in enumerate(self.k))
        self.probabilities = frozen(table)
        for j in range(self.d):
            marginal = self._marginal(j)
            if (marginal <= 0).any():
                value = int(np.argmax(marginal <= 0))
                raise ValidationError(f"probabilities gives {names[j]!r} = {self.labels[j][value]!r} probability 0; "
                                      "every value of every attribute needs a positive probability (drop the value, or "
                                      "smooth counts with pseudocount)")
        if marginals is not None:
            self._check_marginals(marginals)

    def _check_marginals(self, marginals):
        if isinstance(marginals, (str, bytes)) or len(marginals) != self.d:
            raise ValidationError(f"marginals has {fmt(marginals)}; it must hold one prior (or None) per attribute "
                                  f"({self.d})")
        for j, declared in enumerate(marginals):
            if declared is None:
                continue
            values = declared.probabilities if isinstance(declared, Prior) else float_array(declared,
                                                                                           f"marginals[{j}]", 1)
            marginal = self._marginal(j)
            if values.shape != marginal.shape or np.abs(values - marginal).max() > MARGINAL_ATOL:
                raise ValidationError(f"marginals[{j}] is {fmt(values.tolist())}; it must equal the joint prior's "
                                      f"marginal of {self.names[j]!r}, {fmt(np.round(marginal, 6).tolist())}, within "
                                      f"{MARGINAL_ATOL:g}")

    @classmethod
    def from_counts(cls, counts: npt.ArrayLike, names: Sequence[str],
                    labels: Sequence[Sequence[str | int] | None] | None = None, *, pseudocount: float = 0.0,
                    marginals: Sequence[Prior | npt.ArrayLike | None] | None = None) -> Self:
        """The joint prior of a table of counts, ``(counts + pseudocount) / total``.

        Parameters
        ----------
        counts : array_like of float
            How often each tuple was observed, one axis per attribute.
        names : sequence of str
            One unique name per attribute.
        labels : sequence of sequence of str or int, optional
            The value labels of each attribute.
        pseudocount : float, default 0.0
            Added to every cell before normalising (>= 0).
        marginals : sequence of Prior or array_like, optional
            Declared per-attribute priors, checked as in the constructor.

        Returns
        -------
        JointPrior
            The normalised (smoothed) counts.

        Raises
        ------
        ValidationError
            A negative count or pseudocount, or what the constructor refuses.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.JointPrior.from_counts([[3, 1], [2, 4]], names=["a", "b"])
        >>> prior.probabilities.tolist()
        [[0.3, 0.1], [0.2, 0.4]]
        """
        pseudocount = real_number(pseudocount, "pseudocount", low=0.0)
        table = np.asarray(counts, dtype=object)
        table = non_negative(float_array(counts, "counts", table.ndim), "counts")
        return cls(table + pseudocount, names, labels, normalize=True, marginals=marginals)

    @classmethod
    def from_records(cls, records: Mapping[str, npt.ArrayLike], labels: Sequence[Sequence[str | int]], *,
                     pseudocount: float = 0.0) -> Self:
        """The joint prior of records given as one column per attribute name, counted over the labels.

        Parameters
        ----------
        records : mapping of str to array_like
            Column by attribute name (a dict, or a pandas DataFrame's ``to_dict("list")``), each holding one label (or
            index) per record; the names are the attributes, in this order.
        labels : sequence of sequence of str or int
            The value labels of each attribute, in the order of ``records``.
        pseudocount : float, default 0.0
            Added to every cell before normalising (>= 0).

        Returns
        -------
        JointPrior
            The normalised (smoothed) counts of the records' tuples.

        Raises
        ------
        ValidationError
            Columns of different lengths, a value that is not one of its attribute's labels, or what ``from_counts``
            refuses.

        Examples
        --------
        >>> import lipdesign as ld
        >>> records = {"sex": ["F", "M", "M", "F"], "income": ["low", "high", "low", "low"]}
        >>> prior = ld.JointPrior.from_records(records, [["F", "M"], ["low", "high"]])
        >>> prior.probabilities.tolist()
        [[0.5, 0.0], [0.25, 0.25]]
        """
        if not isinstance(records, Mapping) or not records:
            raise ValidationError(f"records is {fmt(records)}; it must map each attribute name to its column")
        names = _names(list(records))
        if isinstance(labels, (str, bytes)) or len(labels) != len(names):
            raise ValidationError(f"labels is {fmt(labels)}; it must hold one list of value labels per attribute "
                                  f"({len(names)}: {', '.join(names)})")
        k = [len(labels_for(values, len(values), f"labels[{j}]")) for j, values in enumerate(labels)]
        indices = JointPrior(np.full(k, 1.0 / np.prod(k)), names, labels).indices(records)
        counts = np.bincount(np.ravel_multi_index(indices.T, k), minlength=int(np.prod(k))).reshape(k)
        return cls.from_counts(counts, names, labels, pseudocount=pseudocount)

    @property
    def d(self) -> int:
        """The number of attributes."""
        return len(self.names)

    def index(self, attribute: int | str) -> int:
        """The position of ``attribute`` (a name, or a position 0..d-1).

        Parameters
        ----------
        attribute : int or str
            A name of this prior's attributes, or its position.

        Returns
        -------
        int
            The position of the attribute.

        Raises
        ------
        ValidationError
            Not one of the names, nor a position in 0..d-1.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.JointPrior([[0.3, 0.1], [0.2, 0.4]], names=["sex", "income"]).index("income")
        1
        """
        if isinstance(attribute, str):
            if attribute not in self.names:
                raise ValidationError(f"attribute is {attribute!r}; it must be one of the names {list(self.names)}")
            return self.names.index(attribute)
        if isinstance(attribute, (bool, np.bool_)) or not isinstance(attribute, (int, np.integer)) or \
                not 0 <= attribute < self.d:
            raise ValidationError(f"attribute is {fmt(attribute)}; it must be a name of {list(self.names)} or a "
                                  f"position in 0..{self.d - 1}")
        return int(attribute)

    def indices(self, records: Mapping[str, npt.ArrayLike] | npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Records as a (n, d) array of value indices, the input of the multi-attribute mechanisms.

        Parameters
        ----------
        records : mapping of str to array_like, or array_like
            One column per attribute name (exactly these names), or rows of d labels or indices.

        Returns
        -------
        numpy.ndarray
            int64 (n, d): column j holds attribute j's value indices.

        Raises
        ------
        ValidationError
            An attribute missing or unknown (a mapping), rows of another length than d, columns of different lengths,
            or a value that is neither a label nor an index of its attribute.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.JointPrior([[0.3, 0.1], [0.2, 0.4]], names=["sex", "income"], labels=[["F", "M"], ["lo", "hi"]])
        >>> prior.indices({"sex": ["M", "F"], "income": ["hi", "hi"]}).tolist()
        [[1, 1], [0, 1]]
        >>> prior.indices({"sex": ["M", "F"]})
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: records has the attributes ['sex']; it must have exactly ['sex', 'income'] \
(missing: ['income'])
        """
        if isinstance(records, Mapping):
            if list(records) != list(self.names):
                missing = [name for name in self.names if name not in records]
                extra = [name for name in records if name not in self.names]
                detail = "; ".join(f"{what}: {names}" for what, names in (("missing", missing), ("unknown", extra))
                                   if names) or "in another order"
                raise ValidationError(f"records has the attributes {list(records)}; it must have exactly "
                                      f"{list(self.names)} ({detail})")
            columns = [np.asarray(records[name], dtype=object) for name in self.names]
        else:
            rows = np.asarray(records, dtype=object)
            if rows.ndim != 2 or rows.shape[1] != self.d:
                raise ValidationError(f"records has shape {rows.shape}; it must have shape (n, {self.d}), one column "
                                      f"per attribute ({', '.join(self.names)})")
            columns = list(rows.T)
        sizes = {column.shape for column in columns}
        if len(sizes) != 1 or columns[0].ndim != 1:
            raise ValidationError(f"records has columns of shapes {sorted(sizes)}; every attribute needs one value "
                                  "per record")
        return np.column_stack([self.marginal(j).indices(column.tolist()) for j, column in enumerate(columns)]) \
            if columns[0].size else np.zeros((0, self.d), dtype=np.int64)

    def _marginal(self, j):
        return self.probabilities.sum(axis=tuple(i for i in range(self.d) if i != j))

    def marginal(self, attribute: int | str) -> Prior:
        """The prior of one attribute, summed from the joint table.

        Parameters
        ----------
        attribute : int or str
            A name, or a position.

        Returns
        -------
        Prior
            Pr[X_j], with attribute j's labels.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.JointPrior([[0.25, 0.25], [0.125, 0.375]], names=["a", "b"]).marginal("a")
        Prior([0.5, 0.5], labels=[0, 1])
        """
        j = self.index(attribute)
        return Prior(self._marginal(j), self.labels[j], normalize=True)

    def pair(self, first: int | str, second: int | str) -> npt.NDArray[np.float64]:
        """The joint table of two attributes, Pr[X_j = a, X_l = b].

        Parameters
        ----------
        first, second : int or str
            Two different attributes (names or positions).

        Returns
        -------
        numpy.ndarray
            (k_j, k_l): rows the values of the first attribute, columns those of the second.

        Raises
        ------
        ValidationError
            The same attribute twice, or one that is not an attribute.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.JointPrior(np.full((2, 2, 2), 0.125), names=["a", "b", "c"])
        >>> prior.pair("c", "a")
        array([[0.25, 0.25],
               [0.25, 0.25]])
        """
        j, m = self.index(first), self.index(second)
        if j == m:
            raise ValidationError(f"second is {second!r}; a pair needs two different attributes")
        table = self.probabilities.sum(axis=tuple(i for i in range(self.d) if i not in (j, m)))
        return table if j < m else table.T

    @property
    def flat(self) -> Prior:
        """The prior of the whole tuple over the product domain, tuples in C order (the last attribute fastest).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.JointPrior([[0.3, 0.1], [0.2, 0.4]], names=["a", "b"]).flat
        Prior([0.3, 0.1, 0.2, 0.4], labels=[0, 1, 2, 3])
        """
        return Prior(self.probabilities.ravel(), normalize=True)

    def secret(self, attribute: int | str) -> SecretModel:
        """The latent-secret model of one attribute inside the tuple: T[a, x] = Pr[X = x | X_j = a] (docs/math.md
        §20.2), over the product domain in C order (``flat``), with Pr[X_j] as its secret prior.

        Parameters
        ----------
        attribute : int or str
            A name, or a position.

        Returns
        -------
        SecretModel
            (k_j, prod k) conditional table; ``ld.LIP(eps, secret=...)`` at the prior ``flat`` certifies the LIP of
            attribute j through any table over the tuple.

        Examples
        --------
        >>> import lipdesign as ld
        >>> secret = ld.JointPrior([[0.3, 0.1], [0.2, 0.4]], names=["a", "b"]).secret("b")
        >>> secret.conditional.round(2)
        array([[0.6, 0. , 0.4, 0. ],
               [0. , 0.2, 0. , 0.8]])
        """
        j = self.index(attribute)
        marginal = self._marginal(j)
        moved = np.moveaxis(self.probabilities, j, 0)
        mask = np.zeros((self.k[j],) + moved.shape)  # row a keeps the tuples with x_j = a
        for a in range(self.k[j]):
            mask[(a, a)] = moved[a] / marginal[a]
        conditional = np.moveaxis(mask, 1, j + 1).reshape(self.k[j], -1)
        return SecretModel(conditional, marginal / marginal.sum(), self.labels[j])

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the table as nested lists, the names and the labels.

        Returns
        -------
        dict
            ``{"probabilities", "names", "labels"}``, the inverse of ``from_dict``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.JointPrior([[0.3, 0.1], [0.2, 0.4]], names=["a", "b"]).to_dict()["names"]
        ['a', 'b']
        """
        return {"probabilities": self.probabilities.tolist(), "names": list(self.names),
                "labels": [list(labels) for labels in self.labels]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild a joint prior from ``to_dict``, validating it again.

        Parameters
        ----------
        data : mapping
            ``{"probabilities", "names"}``, optionally with ``"labels"``.

        Returns
        -------
        JointPrior
            The prior the mapping describes.

        Examples
        --------
        >>> import lipdesign as ld
        >>> prior = ld.JointPrior([[0.3, 0.1], [0.2, 0.4]], names=["a", "b"])
        >>> ld.JointPrior.from_dict(prior.to_dict()) == prior
        True
        """
        return cls(data["probabilities"], data["names"], data.get("labels"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JointPrior) and (self.names, self.labels) == (other.names, other.labels) and \
            np.array_equal(self.probabilities, other.probabilities)

    def __hash__(self) -> int:
        return hash((self.names, self.labels, self.probabilities.tobytes()))

    def __repr__(self) -> str:
        return f"JointPrior(names={list(self.names)}, k={list(self.k)})"
