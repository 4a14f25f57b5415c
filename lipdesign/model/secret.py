"""A latent secret G correlated with X, T[g, x] = Pr[X=x | G=g] (docs/math.md §1-§2).

Given as a conditional table, a joint table or a networkx DAG (networkx is imported only for DAGs).
"""

from __future__ import annotations

import functools
import string
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign.errors import ValidationError, require
from lipdesign.immutable import Immutable
from lipdesign.model.prior import frozen

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Self

    import numpy.typing as npt

    from lipdesign.model.prior import Prior
from lipdesign.validation import (
    PROBABILITY_ATOL,
    float_array,
    labels_for,
    probability_vector,
    stochastic_rows,
)

#: The design prior and the secret model's marginal secret_prior @ conditional must agree to this (both are often
#: typed in with a few digits): a larger gap is a mistake in one of them. Within it, a claim for the secret is
#: certified at both, exactly (``marginal``; docs/math.md §1).
MARGINAL_ATOL = 1e-6


class SecretModel(Immutable):
    """A latent secret G correlated with X: ``conditional[g, x] = Pr[X=x | G=g]`` (docs/math.md §1).

    ``secret_prior`` (Pr[G]) is optional: LIP never needs it (docs/math.md §2), but when given it declares the
    adversary's joint Pr[G, X], so the prior of X used in a design must agree with its marginal
    ``secret_prior @ conditional`` (within MARGINAL_ATOL) and every claim for the secret is certified at both.
    Pass it to ``ld.LIP(epsilon, secret=...)`` or ``ld.WorstCaseLIP(epsilon, secret=...)``. A SecretModel is
    immutable.

    Parameters
    ----------
    conditional : array_like of float, shape (m, k)
        ``conditional[g, x] = Pr[X=x | G=g]``: one row per secret value, each non-negative and summing to 1.
    secret_prior : array_like of float, shape (m,), optional
        Pr[G = g], summing to 1; default None (not declared).
    secret_labels : sequence of str or int, optional
        One unique label per secret value; default ``0, 1, ..., m-1``.
    observed_labels : sequence of str or int, optional
        The labels of X's states, kept as given (``from_dag`` sets them); default None.

    Attributes
    ----------
    conditional : numpy.ndarray
        The (m, k) table T, read-only.
    secret_prior : numpy.ndarray or None
        Pr[G], read-only, or None.
    secret_labels : tuple of str or int
        The labels of the secret values.

    Raises
    ------
    ValidationError
        When a row of ``conditional`` is not a probability vector, when ``secret_prior`` is not one of length m,
        or when the labels are not one unique string or integer per secret value.

    See Also
    --------
    SecretModel.from_joint : The model of a joint table Pr[G, X].
    SecretModel.from_dag : The model of a Bayesian network over discrete variables.

    Examples
    --------
    A secret age group G (young, old) correlated with a reported value X of three levels:

    >>> import lipdesign as ld
    >>> secret = ld.SecretModel([[0.8, 0.2, 0.0], [0.1, 0.3, 0.6]], secret_labels=["young", "old"])
    >>> secret
    SecretModel(m=2, k=3)
    >>> notion = ld.LIP(1.0, secret=secret)
    >>> ld.SecretModel([[0.8, 0.3], [0.5, 0.5]])
    Traceback (most recent call last):
    ...
    lipdesign.errors.ValidationError: secret.conditional row 0 sums to 1.1...
    """

    def __init__(self, conditional: npt.ArrayLike, secret_prior: npt.ArrayLike | None = None,
                 secret_labels: Sequence[str | int] | None = None,
                 observed_labels: Sequence[str | int] | None = None) -> None:
        self.conditional = frozen(stochastic_rows(conditional, "secret.conditional"))
        self.secret_prior = None if secret_prior is None else frozen(
            probability_vector(secret_prior, "secret.secret_prior", length=self.m))
        self.secret_labels = labels_for(secret_labels, self.m, "secret.secret_labels")
        #: The labels of X's states when the model came from a DAG (None otherwise).
        self.observed_labels = observed_labels

    @classmethod
    def from_conditional(cls, conditional: npt.ArrayLike, secret_prior: npt.ArrayLike | None = None,
                         secret_labels: Sequence[str | int] | None = None) -> Self:
        """From ``conditional[g, x] = Pr[X=x | G=g]`` and, optionally, Pr[G].

        The same as the constructor, named for symmetry with ``from_joint`` and ``from_dag``.

        Parameters
        ----------
        conditional : array_like of float, shape (m, k)
            ``conditional[g, x] = Pr[X=x | G=g]``, rows summing to 1.
        secret_prior : array_like of float, shape (m,), optional
            Pr[G = g]; default None (not declared).
        secret_labels : sequence of str or int, optional
            One unique label per secret value; default ``0, 1, ..., m-1``.

        Returns
        -------
        SecretModel
            The model.

        Raises
        ------
        ValidationError
            As the constructor.

        Examples
        --------
        >>> import lipdesign as ld
        >>> secret = ld.SecretModel.from_conditional([[0.9, 0.1], [0.2, 0.8]], secret_prior=[0.5, 0.5])
        >>> secret.m, secret.k
        (2, 2)
        """
        return cls(conditional, secret_prior, secret_labels)

    @classmethod
    def from_joint(cls, joint: npt.ArrayLike, secret_labels: Sequence[str | int] | None = None,
                   observed_labels: Sequence[str | int] | None = None) -> Self:
        """From ``joint[g, x] = Pr[G=g, X=x]`` (entries sum to 1).

        Pr[G] is the row sums and T = Pr[X | G] the rows divided by them, so the model declares ``secret_prior``.

        Parameters
        ----------
        joint : array_like of float, shape (m, k)
            ``joint[g, x] = Pr[G=g, X=x]``: non-negative entries summing to 1, no row all zero.
        secret_labels : sequence of str or int, optional
            One unique label per secret value; default ``0, 1, ..., m-1``.
        observed_labels : sequence of str or int, optional
            The labels of X's states, kept as given; default None.

        Returns
        -------
        SecretModel
            The model, with ``secret_prior`` set.

        Raises
        ------
        ValidationError
            When an entry is negative, the entries do not sum to 1, or a row is all zero.

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> secret = ld.SecretModel.from_joint([[0.4, 0.1], [0.1, 0.4]], secret_labels=["a", "b"])
        >>> np.round(secret.conditional, 3)
        array([[0.8, 0.2],
               [0.2, 0.8]])
        >>> np.round(secret.secret_prior, 3)
        array([0.5, 0.5])
        """
        joint = float_array(joint, "secret.joint", 2)
        if (joint < 0).any() or abs(joint.sum() - 1) > PROBABILITY_ATOL:
            raise ValidationError(
                f"secret.joint sums to {joint.sum():.12g} with smallest entry {joint.min():g}; its entries must be "
                "non-negative and sum to 1")
        secret_prior = joint.sum(axis=1)
        empty = np.flatnonzero(secret_prior <= 0)
        if empty.size:
            raise ValidationError(f"secret.joint row {empty[0]} is all zero; every secret value needs mass")
        return cls(joint / secret_prior[:, None], secret_prior, secret_labels, observed_labels)

    @classmethod
    def from_dag(cls, graph: Any, secret: str, observed: str) -> Self:
        """From a networkx DAG over discrete variables (for example G -> R -> X with X = f(R)).

        Every node carries ``states`` (a count or a list of labels) and either ``cpt``, an array of shape
        ``(*parent sizes, own size)`` whose last axis sums to 1, or ``function``, an integer array of shape
        ``(*parent sizes)`` giving the node's state (a deterministic node). Parents are taken in the order of
        the node's ``parents`` attribute (default: ``graph.predecessors``). Pr[G, X] is obtained by
        marginalisation, then T = Pr[X | G]. Needs networkx (the ``design`` extra).

        Parameters
        ----------
        graph : networkx.DiGraph
            The DAG, its nodes carrying ``states`` and ``cpt`` or ``function`` (at most 52 nodes, a joint table
            of at most 10^7 entries).
        secret : str
            The node of the secret G.
        observed : str
            The node of the reported value X.

        Returns
        -------
        SecretModel
            The model of Pr[X | G], with ``secret_prior`` set and the nodes' state labels as ``secret_labels`` and
            ``observed_labels``.

        Raises
        ------
        ValidationError
            When the graph is not a DAG, a node is missing or malformed (states, cpt, function, parents), or the
            joint table would be too large.
        MissingDependencyError
            When networkx is not installed.

        Examples
        --------
        G -> R -> X with X a deterministic function of R:

        >>> import networkx as nx
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> graph = nx.DiGraph([("G", "R"), ("R", "X")])
        >>> graph.nodes["G"].update(states=["a", "b"], cpt=[0.5, 0.5])
        >>> graph.nodes["R"].update(states=3, cpt=[[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]])
        >>> graph.nodes["X"].update(states=["low", "high"], function=np.array([0, 0, 1]))
        >>> secret = ld.SecretModel.from_dag(graph, "G", "X")
        >>> np.round(secret.conditional, 3)
        array([[0.9, 0.1],
               [0.3, 0.7]])
        >>> secret.secret_labels, secret.observed_labels
        (('a', 'b'), ('low', 'high'))
        """
        joint, labels = _dag_marginal(graph, secret, observed)
        return cls.from_joint(joint, labels[secret], labels[observed])

    @property
    def m(self) -> int:
        """The number of secret values (rows of ``conditional``)."""
        return self.conditional.shape[0]

    @property
    def k(self) -> int:
        """The number of values of X (columns of ``conditional``)."""
        return self.conditional.shape[1]

    def check_prior(self, prior: Prior) -> None:
        """Raise unless the model fits ``prior``: same domain size and, if Pr[G] is known, the same marginal.

        Parameters
        ----------
        prior : Prior
            The design prior of X.

        Raises
        ------
        ValidationError
            When ``prior`` has another number of values than X here, or differs from the marginal
            ``secret_prior @ conditional`` by more than MARGINAL_ATOL (1e-6).

        Examples
        --------
        >>> import lipdesign as ld
        >>> secret = ld.SecretModel([[0.8, 0.2, 0.0], [0.1, 0.3, 0.6]], secret_prior=[0.5, 0.5])
        >>> secret.check_prior(ld.Prior([0.45, 0.25, 0.3]))
        >>> secret.check_prior(ld.Prior([0.3, 0.3, 0.4]))
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: prior[0] is 0.3 but the secret model's marginal Pr[X=0] is 0.45; the
        prior must equal secret_prior @ conditional
        """
        if self.k != prior.k:
            raise ValidationError(f"secret.conditional has {self.k} columns; it must have one per value of the prior "
                                  f"({prior.k})")
        if self.secret_prior is not None:
            marginal = self.secret_prior @ self.conditional
            gap = np.abs(marginal - prior.probabilities)
            if gap.max() > MARGINAL_ATOL:
                x = int(np.argmax(gap))
                raise ValidationError(
                    f"prior[{x}] is {prior.probabilities[x]:.6g} but the secret model's marginal Pr[X={x}] is "
                    f"{marginal[x]:.6g}; the prior must equal secret_prior @ conditional")

    @functools.cached_property
    def marginal(self) -> npt.NDArray[np.object_] | None:
        """Pr[X] of the declared joint, exactly: an object array of Fractions, sum_g Pr[G=g] T[g, x] with Pr[G]
        and each row of T normalised as the verifier reads them (docs/math.md §1); None without ``secret_prior``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> secret = ld.SecretModel.from_joint([[0.375, 0.125], [0.125, 0.375]])
        >>> [str(p) for p in secret.marginal]
        ['1/2', '1/2']
        """
        if self.secret_prior is None:
            return None
        secret_prior = [Fraction(float(p)) for p in self.secret_prior]
        secret_total = sum(secret_prior)
        marginal = [Fraction(0)] * self.k
        for weight, row in zip(secret_prior, self.conditional):
            row = [Fraction(float(t)) for t in row]
            scale = weight / secret_total / sum(row)
            marginal = [m + scale * t for m, t in zip(marginal, row)]
        return np.array(marginal, dtype=object)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the model (as written in spec and mechanism files).

        Returns
        -------
        dict
            ``{"conditional": [[...]], "secret_prior": [...] or None, "secret_labels": [...]}``, read back by
            ``from_dict`` (``observed_labels`` is not kept).

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.SecretModel([[0.9, 0.1], [0.2, 0.8]]).to_dict()
        {'conditional': [[0.9, 0.1], [0.2, 0.8]], 'secret_prior': None, 'secret_labels': [0, 1]}
        """
        return {
            "conditional": self.conditional.tolist(),
            "secret_prior": None if self.secret_prior is None else self.secret_prior.tolist(),
            "secret_labels": list(self.secret_labels),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild a model from its JSON form: ``to_dict``'s, a ``"joint"`` table, or a ``"dag"`` of a spec file.

        Parameters
        ----------
        data : mapping
            ``{"conditional": ..., "secret_prior": ..., "secret_labels": ...}``, ``{"joint": ...,
            "secret_labels": ...}``, or ``{"dag": {"nodes": {...}, "secret": ..., "observed": ...}}``.

        Returns
        -------
        SecretModel
            The model the mapping describes, validated again.

        Raises
        ------
        ValidationError
            When the tables, labels or DAG break the rules of the constructor, ``from_joint`` or ``from_dag``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> secret = ld.SecretModel.from_dict({"joint": [[0.4, 0.1], [0.1, 0.4]]})
        >>> secret.secret_prior
        array([0.5, 0.5])
        """
        if "dag" in data:
            return cls.from_dag(dag_from_dict(data["dag"]), data["dag"]["secret"], data["dag"]["observed"])
        if "joint" in data:
            return cls.from_joint(data["joint"], data.get("secret_labels"))
        return cls(data["conditional"], data.get("secret_prior"), data.get("secret_labels"))

    def __repr__(self) -> str:
        return f"SecretModel(m={self.m}, k={self.k})"


def _node_states(graph, node):
    states = graph.nodes[node].get("states")
    if isinstance(states, bool) or not (isinstance(states, int) and states >= 1 or isinstance(states, (list, tuple))):
        raise ValidationError(
            f"secret.dag node {node!r} has states {states!r}; it needs a positive count or a list of labels")
    labels = list(range(states)) if isinstance(states, int) else list(states)
    return labels_for(labels, len(labels), f"secret.dag node {node!r} states")


def _dag_marginal(graph, secret, observed, max_entries=10**7):
    require("a secret model given as a DAG", "design", "networkx")
    import networkx as nx

    if not isinstance(graph, nx.DiGraph) or not nx.is_directed_acyclic_graph(graph):
        raise ValidationError(f"secret.dag is a {type(graph).__name__}; it must be a networkx DiGraph without cycles")
    for name in (secret, observed):
        if name not in graph:
            raise ValidationError(f"secret.dag has no node {name!r}; the secret and the observed node must be nodes "
                                  "of the graph")
    if secret == observed:
        raise ValidationError(f"secret.dag: the secret and the observed node are both {secret!r}; they must differ")
    order = list(nx.topological_sort(graph))
    if len(order) > len(string.ascii_letters):
        raise ValidationError(f"secret.dag has {len(order)} nodes; at most {len(string.ascii_letters)} are supported")
    labels = {node: _node_states(graph, node) for node in order}
    if np.prod([len(labels[node]) for node in order], dtype=float) > max_entries:
        raise ValidationError(f"secret.dag's joint table would exceed {max_entries} entries; marginalise it first")
    letter = dict(zip(order, string.ascii_letters))
    joint, axes = np.ones(()), ""
    for node in order:
        data = graph.nodes[node]
        parents = list(data.get("parents", graph.predecessors(node)))
        if len(set(parents)) != len(parents) or set(parents) != set(graph.predecessors(node)):
            raise ValidationError(f"secret.dag node {node!r} parents are {parents}; they differ from its in-edges "
                                  f"{sorted(graph.predecessors(node))} and must list each of them once")
        shape = tuple(len(labels[parent]) for parent in parents)
        size = len(labels[node])
        if "function" in data:
            function = np.asarray(data["function"])
            if function.shape != shape or function.dtype.kind not in "iu" or function.min(initial=0) < 0 \
                    or function.max(initial=0) >= size:
                raise ValidationError(
                    f"secret.dag node {node!r} function has shape {function.shape} and dtype {function.dtype}; it "
                    f"must be an integer array of shape {shape} with states in 0..{size - 1}")
            cpt = np.eye(size)[function]
        elif "cpt" in data:
            cpt = float_array(data["cpt"], f"secret.dag node {node!r} cpt", len(shape) + 1)
            if cpt.shape != shape + (size,):
                raise ValidationError(f"secret.dag node {node!r} cpt has shape {cpt.shape}; it must have shape "
                                      f"{shape + (size,)}")
            sums = cpt.sum(axis=-1)
            if (cpt < 0).any() or np.abs(sums - 1).max() > PROBABILITY_ATOL:
                at = np.unravel_index(int(np.argmax(np.abs(sums - 1) + (cpt < 0).any(axis=-1))), sums.shape)
                raise ValidationError(f"secret.dag node {node!r} cpt{list(at)} sums to {sums[at]:.12g} with smallest "
                                      f"entry {cpt[at].min():g}; cpt entries must be >= 0 and sum to 1 over the "
                                      "node's states")
        else:
            raise ValidationError(f"secret.dag node {node!r} has neither 'cpt' nor 'function'; "
                                  "a node needs one of them")
        parent_axes = "".join(letter[parent] for parent in parents)
        joint = np.einsum(f"{axes},{parent_axes}{letter[node]}->{axes}{letter[node]}", joint, cpt)
        axes += letter[node]
    keep = letter[secret] + letter[observed]
    joint = np.einsum(f"{axes}->{keep}", joint)
    return joint, labels


def dag_from_dict(data: Mapping[str, Any]) -> Any:
    """Build the networkx DAG of a spec file: ``{"nodes": {name: {states, parents, cpt | function}}, ...}``."""
    require("a secret model given as a DAG", "design", "networkx")
    import networkx as nx

    graph = nx.DiGraph()
    for name, node in data["nodes"].items():
        attributes = dict(node)
        if "function" in attributes:
            try:
                attributes["function"] = np.asarray(attributes["function"], dtype=np.int64)
            except (TypeError, ValueError):
                raise ValidationError(
                    f"secret.dag node {name!r} function is not a rectangular array of integers; it must hold the "
                    "node's state index for every combination of its parents' states") from None
        graph.add_node(name, **attributes)
        for parent in node.get("parents", []):
            graph.add_edge(parent, name)
    return graph
