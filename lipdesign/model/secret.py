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
        """From ``conditional[g, x] = Pr[X=x | G=g]`` and, optionally, Pr[G]."""
        return cls(conditional, secret_prior, secret_labels)

    @classmethod
    def from_joint(cls, joint: npt.ArrayLike, secret_labels: Sequence[str | int] | None = None,
                   observed_labels: Sequence[str | int] | None = None) -> Self:
        """From ``joint[g, x] = Pr[G=g, X=x]`` (entries sum to 1)."""
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
        marginalisation, then T = Pr[X | G].
        """
        joint, labels = _dag_marginal(graph, secret, observed)
        return cls.from_joint(joint, labels[secret], labels[observed])

    @property
    def m(self):
        return self.conditional.shape[0]

    @property
    def k(self):
        return self.conditional.shape[1]

    def check_prior(self, prior):
        """Raise unless the model fits ``prior``: same domain size and, if Pr[G] is known, the same marginal."""
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
    def marginal(self):
        """Pr[X] of the declared joint, exactly: an object array of Fractions, sum_g Pr[G=g] T[g, x] with Pr[G]
        and each row of T normalised as the verifier reads them (docs/math.md §1); None without ``secret_prior``."""
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
        return {
            "conditional": self.conditional.tolist(),
            "secret_prior": None if self.secret_prior is None else self.secret_prior.tolist(),
            "secret_labels": list(self.secret_labels),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        if "dag" in data:
            return cls.from_dag(dag_from_dict(data["dag"]), data["dag"]["secret"], data["dag"]["observed"])
        if "joint" in data:
            return cls.from_joint(data["joint"], data.get("secret_labels"))
        return cls(data["conditional"], data.get("secret_prior"), data.get("secret_labels"))

    def __repr__(self):
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


def dag_from_dict(data):
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
