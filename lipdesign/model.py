"""Declarations: what the user knows about a reported value (MATH §1-2).

- ``Prior``: the distribution of X over a finite domain with value labels.
- ``SecretModel``: the correlation of a latent secret G with X, T[g, x] = Pr[X=x | G=g].
- ``PriorSet``: the plausible priors of bounded-prior LIP, reduced to the vertices that must be enforced.
Every class validates on construction and is immutable afterwards.
"""

import itertools
import string

import networkx as nx
import numpy as np
from scipy.optimize import linprog

from lipdesign.errors import ValidationError
from lipdesign.validation import (
    PROBABILITY_ATOL,
    float_array,
    labels_for,
    probability_vector,
    real_number,
    stochastic_rows,
)
from solvers.rays import bit_patterns, box_slice_vertices, unique_rows


def _frozen(array):
    array = np.array(array, dtype=float)
    array.setflags(write=False)
    return array


class Prior:
    """Prior over a finite domain: ``Prior([0.2, 0.3, 0.5], labels=["low", "mid", "high"])``.

    Probabilities must be non-negative and sum to 1 within 1e-9 (``normalize=True`` rescales any
    positive vector). Probabilities are kept exactly as given, so exported numbers round-trip.
    """

    def __init__(self, probabilities, labels=None, *, normalize=False):
        self.probabilities = _frozen(probability_vector(probabilities, "prior", normalize=normalize))
        self.labels = labels_for(labels, self.probabilities.size)

    @classmethod
    def from_counts(cls, counts, labels=None, *, pseudocount=0.0):
        """Prior from observed counts, optionally smoothed by adding ``pseudocount`` to every value."""
        counts = float_array(counts, "counts", 1)
        pseudocount = real_number(pseudocount, "pseudocount", low=0.0)
        if (counts < 0).any():
            raise ValidationError(f"counts[{int(np.argmax(counts < 0))}] is negative; counts must be >= 0")
        return cls(counts + pseudocount, labels, normalize=True)

    @property
    def k(self):
        return self.probabilities.size

    def indices(self, values):
        """Map values to indices 0..k-1, vectorised.

        Integer values are indices, unless the labels are integers other than 0..k-1, in which case they
        are labels; any other values are labels. Range checks on indices are left to the perturber.
        """
        values = np.asarray(values)
        if values.dtype.kind not in "iuUSO" or values.ndim == 0:
            raise ValidationError(
                f"values must be an array of labels or integer indices (got {str(values)[:60]!r} of dtype {values.dtype})")
        integer_labels = all(isinstance(label, int) for label in self.labels)
        if values.dtype.kind in "iu" and (not integer_labels or self.labels == tuple(range(self.k))):
            return values
        keys = np.array(self.labels, dtype=object)
        order = np.argsort(keys.astype(str))
        sorted_keys = keys[order].astype(str)
        text = values.ravel().astype(str)
        position = np.clip(np.searchsorted(sorted_keys, text), 0, self.k - 1)
        unknown = np.flatnonzero(sorted_keys[position] != text)
        if unknown.size:
            raise ValidationError(
                f"values[{unknown[0]}] is {str(text[unknown[0]])!r}; "
                f"it is not one of the labels {list(self.labels)}"
            )
        return order[position].reshape(values.shape)

    def to_dict(self):
        return {"probabilities": self.probabilities.tolist(), "labels": list(self.labels)}

    @classmethod
    def from_dict(cls, data):
        return cls(data["probabilities"], data.get("labels"))

    def __repr__(self):
        return f"Prior({self.probabilities.tolist()}, labels={list(self.labels)})"


class SecretModel:
    """A latent secret G correlated with X: ``conditional[g, x] = Pr[X=x | G=g]`` (MATH §1).

    ``secret_prior`` (Pr[G]) is optional: LIP never uses it (MATH §2), but when given, the prior of X
    used in a design must equal its marginal ``secret_prior @ conditional``.
    """

    def __init__(self, conditional, secret_prior=None, secret_labels=None):
        self.conditional = _frozen(stochastic_rows(conditional, "secret.conditional"))
        self.secret_prior = None if secret_prior is None else _frozen(
            probability_vector(secret_prior, "secret.secret_prior", length=self.m))
        self.secret_labels = labels_for(secret_labels, self.m, "secret.secret_labels")

    @classmethod
    def from_conditional(cls, conditional, secret_prior=None, secret_labels=None):
        """From ``conditional[g, x] = Pr[X=x | G=g]`` and, optionally, Pr[G]."""
        return cls(conditional, secret_prior, secret_labels)

    @classmethod
    def from_joint(cls, joint, secret_labels=None):
        """From ``joint[g, x] = Pr[G=g, X=x]`` (entries sum to 1)."""
        joint = float_array(joint, "secret.joint", 2)
        if (joint < 0).any() or abs(joint.sum() - 1) > PROBABILITY_ATOL:
            raise ValidationError(
                f"secret.joint must be non-negative and sum to 1 (got sum {joint.sum():.12g}, min {joint.min():g})")
        secret_prior = joint.sum(axis=1)
        empty = np.flatnonzero(secret_prior <= 0)
        if empty.size:
            raise ValidationError(f"secret.joint row {empty[0]} is all zero; every secret value needs mass")
        return cls(joint / secret_prior[:, None], secret_prior, secret_labels)

    @classmethod
    def from_dag(cls, graph, secret, observed):
        """From a networkx DAG over discrete variables (for example G -> R -> X with X = f(R)).

        Every node carries ``states`` (a count or a list of labels) and either ``cpt``, an array of shape
        ``(*parent sizes, own size)`` whose last axis sums to 1, or ``function``, an integer array of shape
        ``(*parent sizes)`` giving the node's state (a deterministic node). Parents are taken in the order of
        the node's ``parents`` attribute (default: ``graph.predecessors``). Pr[G, X] is obtained by
        marginalisation, then T = Pr[X | G].
        """
        joint, labels = _dag_marginal(graph, secret, observed)
        model = cls.from_joint(joint, secret_labels=labels[secret])
        model.observed_labels = labels[observed]
        return model

    @property
    def m(self):
        return self.conditional.shape[0]

    @property
    def k(self):
        return self.conditional.shape[1]

    def check_prior(self, prior):
        """Raise unless the model fits ``prior``: same domain size and, if Pr[G] is known, the same marginal."""
        if self.k != prior.k:
            raise ValidationError(f"secret.conditional has {self.k} columns but the prior has {prior.k} values")
        if self.secret_prior is not None:
            marginal = self.secret_prior @ self.conditional
            gap = np.abs(marginal - prior.probabilities)
            if gap.max() > 1e-6:
                x = int(np.argmax(gap))
                raise ValidationError(
                    f"prior[{x}] is {prior.probabilities[x]:.6g} but the secret model's marginal Pr[X={x}] is "
                    f"{marginal[x]:.6g}; the prior must equal secret_prior @ conditional")

    def to_dict(self):
        return {
            "conditional": self.conditional.tolist(),
            "secret_prior": None if self.secret_prior is None else self.secret_prior.tolist(),
            "secret_labels": list(self.secret_labels),
        }

    @classmethod
    def from_dict(cls, data):
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
    if not isinstance(graph, nx.DiGraph) or not nx.is_directed_acyclic_graph(graph):
        raise ValidationError("secret.dag must be a networkx DiGraph without cycles")
    for name in (secret, observed):
        if name not in graph:
            raise ValidationError(f"secret.dag has no node {name!r}")
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
            raise ValidationError(f"secret.dag node {node!r}: 'parents' {parents} differ from its in-edges")
        shape = tuple(len(labels[parent]) for parent in parents)
        size = len(labels[node])
        if "function" in data:
            function = np.asarray(data["function"])
            if function.shape != shape or function.dtype.kind not in "iu" or function.min(initial=0) < 0 \
                    or function.max(initial=0) >= size:
                raise ValidationError(
                    f"secret.dag node {node!r}: 'function' must be an integer array of shape {shape} "
                    f"with states in 0..{size - 1}")
            cpt = np.eye(size)[function]
        elif "cpt" in data:
            cpt = float_array(data["cpt"], f"secret.dag node {node!r} cpt", len(shape) + 1)
            if cpt.shape != shape + (size,):
                raise ValidationError(f"secret.dag node {node!r}: cpt has shape {cpt.shape}; expected {shape + (size,)}")
            if (cpt < 0).any() or np.abs(cpt.sum(axis=-1) - 1).max() > PROBABILITY_ATOL:
                raise ValidationError(f"secret.dag node {node!r}: cpt entries must be >= 0 and sum to 1 over the node's states")
        else:
            raise ValidationError(f"secret.dag node {node!r} needs a 'cpt' or a 'function'")
        parent_axes = "".join(letter[parent] for parent in parents)
        joint = np.einsum(f"{axes},{parent_axes}{letter[node]}->{axes}{letter[node]}", joint, cpt)
        axes += letter[node]
    keep = letter[secret] + letter[observed]
    joint = np.einsum(f"{axes}->{keep}", joint)
    return joint, labels


def dag_from_dict(data):
    """Build the networkx DAG of a spec file: ``{"nodes": {name: {states, parents, cpt | function}}, ...}``."""
    graph = nx.DiGraph()
    for name, node in data["nodes"].items():
        attributes = dict(node)
        if "function" in attributes:
            try:
                attributes["function"] = np.asarray(attributes["function"], dtype=np.int64)
            except (TypeError, ValueError):
                raise ValidationError(
                    f"secret.dag node {name!r}: 'function' must be a rectangular array of state indices") from None
        graph.add_node(name, **attributes)
        for parent in node.get("parents", []):
            graph.add_edge(parent, name)
    return graph


class PriorSet:
    """A set of plausible priors for bounded-prior LIP (MATH §2), kept as the vertices that must be enforced.

    Build it with ``PriorSet.finite``, ``PriorSet.box``, ``PriorSet.tv_ball`` or ``PriorSet.polytope``.
    ``vertices`` is an (n, k) array; the LIP ratio is linear-fractional in the prior, so enforcing the
    constraints at the vertices enforces them on the whole set.
    """

    def __init__(self, kind, vertices, parameters):
        self.kind = kind
        self.vertices = _frozen(vertices)
        self.parameters = parameters

    @property
    def k(self):
        return self.vertices.shape[1]

    @classmethod
    def finite(cls, priors):
        """A finite set of priors; every member is enforced."""
        if not hasattr(priors, "__iter__"):
            raise ValidationError(f"prior_set.priors must be a list of priors (got {priors!r})")
        priors = float_array([getattr(p, "probabilities", p) for p in priors], "prior_set.priors", 2)
        rows = np.array([probability_vector(p, f"prior_set.priors[{i}]") for i, p in enumerate(priors)])
        return cls("finite", np.unique(rows, axis=0), {"priors": rows.tolist()})

    @classmethod
    def polytope(cls, vertices):
        """The convex hull of the given priors (its vertices are enforced)."""
        rows = cls.finite(vertices).vertices
        return cls("polytope", rows, {"vertices": rows.tolist()})

    @classmethod
    def box(cls, lower, upper):
        """Per-value intervals lower <= P <= upper intersected with the simplex."""
        lower = float_array(lower, "prior_set.lower", 1)
        upper = float_array(upper, "prior_set.upper", 1)
        if lower.size != upper.size:
            raise ValidationError(f"prior_set.lower has {lower.size} entries but prior_set.upper has {upper.size}")
        for name, bad in (("lower", lower < 0), ("upper", upper > 1), ("upper", upper < lower)):
            if bad.any():
                x = int(np.argmax(bad))
                raise ValidationError(
                    f"prior_set.{name}[{x}] is {(lower if name == 'lower' else upper)[x]:g}; "
                    "need 0 <= lower <= upper <= 1")
        if lower.sum() > 1 + PROBABILITY_ATOL or upper.sum() < 1 - PROBABILITY_ATOL:
            raise ValidationError(
                f"prior_set box is empty: sum(lower) = {lower.sum():.6g}, sum(upper) = {upper.sum():.6g}; "
                "need sum(lower) <= 1 <= sum(upper)")
        _check_vertex_budget("box", lower.size * 2 ** (lower.size - 1))
        vertices = box_slice_vertices(np.ones(lower.size), lower, upper, atol=PROBABILITY_ATOL)
        return cls("box", vertices, {"lower": lower.tolist(), "upper": upper.tolist()})

    @classmethod
    def tv_ball(cls, center, radius):
        """Priors within total-variation distance ``radius`` (half the L1 distance) of ``center``."""
        center = probability_vector(getattr(center, "probabilities", center), "prior_set.center")
        radius = real_number(radius, "prior_set.radius", 0.0, 1.0)
        _check_vertex_budget("tv_ball", center.size**2 * 2 ** max(center.size - 2, 0))
        return cls("tv_ball", _tv_ball_vertices(center, radius), {"center": center.tolist(), "radius": radius})

    def contains(self, probabilities, atol=1e-9):
        """Whether a prior lies in the set (an LP over convex combinations of the vertices)."""
        probabilities = np.asarray(probabilities, dtype=float)
        if self.kind == "finite":
            return bool(np.abs(self.vertices - probabilities).max(axis=1).min() <= atol)
        if self.kind == "box":
            lower, upper = np.array(self.parameters["lower"]), np.array(self.parameters["upper"])
            return bool(((probabilities >= lower - atol) & (probabilities <= upper + atol)).all())
        if self.kind == "tv_ball":
            return bool(0.5 * np.abs(probabilities - self.parameters["center"]).sum()
                        <= self.parameters["radius"] + atol)
        n = self.vertices.shape[0]
        # min s  s.t.  -s <= V^T w - p <= s,  sum w = 1,  w >= 0
        a_ub = np.block([[self.vertices.T, -np.ones((self.k, 1))], [-self.vertices.T, -np.ones((self.k, 1))]])
        b_ub = np.concatenate([probabilities, -probabilities])
        result = linprog(np.r_[np.zeros(n), 1.0], A_ub=a_ub, b_ub=b_ub,
                         A_eq=np.r_[np.ones(n), 0.0][None], b_eq=[1.0], method="highs")
        return bool(result.status == 0 and result.fun <= atol)

    def to_dict(self):
        return {"kind": self.kind, **self.parameters}

    @classmethod
    def from_dict(cls, data):
        kind = data.get("kind")
        builders = {
            "finite": lambda: cls.finite(data["priors"]),
            "polytope": lambda: cls.polytope(data["vertices"]),
            "box": lambda: cls.box(data["lower"], data["upper"]),
            "tv_ball": lambda: cls.tv_ball(data["center"], data["radius"]),
        }
        if kind not in builders:
            raise ValidationError(f"prior_set.kind is {kind!r}; expected one of {sorted(builders)}")
        return builders[kind]()

    def __repr__(self):
        return f"PriorSet.{self.kind}({len(self.vertices)} vertices, k={self.k})"


#: Prior sets whose vertex enumeration would examine more candidates than this are refused.
MAX_VERTEX_CANDIDATES = 2_000_000


def _check_vertex_budget(kind, candidates):
    if candidates > MAX_VERTEX_CANDIDATES:
        raise ValidationError(
            f"prior_set {kind} would examine {candidates} candidate vertices (limit {MAX_VERTEX_CANDIDATES}); "
            "use fewer values or a finite set / polytope of priors")


def _tv_ball_vertices(center, radius):
    """Vertices of {p in simplex : sum_x (center_x - p_x)_+ <= radius} (TV ball intersected with the simplex).

    A vertex either is a simplex corner e_j inside the ball, or moves exactly ``radius`` of mass to one
    receiver j from donors that are each emptied or untouched, except at most one partial donor i.
    """
    k = center.size
    found = [np.eye(k)[j] for j in range(k) if 1.0 - center[j] <= radius + 1e-15]
    if radius == 0:
        return center[None]
    for j, i in itertools.permutations(range(k), 2):
        others = np.array([x for x in range(k) if x not in (i, j)], dtype=int)
        emptied = bit_patterns(others.size)
        taken = emptied.astype(float) @ center[others]
        partial = radius - taken
        ok = (partial >= 0) & (partial <= center[i])
        points = np.tile(center, (ok.sum(), 1))
        points[:, others] = np.where(emptied[ok], 0.0, center[others])
        points[:, i] = center[i] - partial[ok]
        points[:, j] = center[j] + radius
        found.extend(points)
    return unique_rows(np.array(found))
