"""Sets of plausible priors for bounded-prior LIP (docs/math.md §2): listed priors and polytopes kept as their
vertices; boxes and TV balls (intersected with the simplex) kept implicitly, by the greedy fill that finds the
prior minimising or maximising P . q over the set (``extreme_prior``), their vertices listed only when asked for.

Numpy only; scipy is imported only to test membership of a general polytope.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lipdesign._solvers.rays import bit_patterns, box_slice_vertices, unique_rows
from lipdesign.errors import ValidationError
from lipdesign.immutable import Immutable
from lipdesign.model.prior import frozen
from lipdesign.validation import PROBABILITY_ATOL, float_array, fmt, probability_vector, real_number

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Self

    import numpy.typing as npt

    from lipdesign.model.prior import Prior

#: Kinds of set whose prior minimising P . q depends only on the order of q's entries (a greedy fill finds it,
#: docs/math.md §3, §5): boxes and TV balls intersected with the simplex.
GREEDY_KINDS = ("box", "tv_ball")


def greedy_extreme(kind: str, parameters: Mapping[str, Any], column: Sequence[Any],
                   lowest: bool) -> tuple[Any, list[Any]]:
    """(P . q, P): the prior of a box or TV ball (intersected with the simplex) that minimises (``lowest``) or
    maximises P . q for the column q (docs/math.md §3): a box fills lower with the mass left, on the smallest (largest)
    q first, each up to its upper bound; a TV ball moves its radius of mass onto the smallest (largest) q, taken
    from the largest (smallest) q first. Works on lists of floats or of Fractions (the exact verifier's)."""
    order = sorted(range(len(column)), key=column.__getitem__, reverse=not lowest)
    if kind == "box":
        prior = list(parameters["lower"])
        left = 1 - sum(prior)
        for x in order:
            step = min(parameters["upper"][x] - prior[x], left)
            prior[x] += step
            left -= step
    else:
        prior = list(parameters["center"])
        receiver, left = order[0], parameters["radius"]
        for x in reversed(order[1:]):
            step = min(prior[x], left)
            prior[x] -= step
            prior[receiver] += step
            left -= step
    return sum(p * q for p, q in zip(prior, column)), prior


class PriorSet(Immutable):
    """A set of plausible priors for bounded-prior LIP (docs/math.md §2).

    Build it with ``PriorSet.finite``, ``PriorSet.box``, ``PriorSet.tv_ball`` or ``PriorSet.polytope``. The LIP
    ratio is linear-fractional in the prior, so enforcing the constraints at the vertices enforces them on the whole
    set: ``vertices`` is an (n, k) array, listed at construction for finite sets and polytopes and on first use for
    boxes and TV balls (which raises ValidationError when there would be too many to list); a box or a TV ball is
    enforced without them through ``extreme_prior``, at any k. Pass it to ``ld.LIP(epsilon, prior_set=...)``; the
    set must contain the design prior. A PriorSet is immutable.

    Parameters
    ----------
    kind : str
        ``"finite"``, ``"polytope"``, ``"box"`` or ``"tv_ball"``.
    vertices : array_like of float, shape (n, k), or None
        The vertices of a finite set or a polytope; None for a box or a TV ball (listed on first use).
    parameters : mapping
        The set's defining numbers, its JSON form without ``kind``: ``priors``, ``vertices``, ``lower`` and
        ``upper``, or ``center`` and ``radius``.
    k : int, optional
        The number of values when ``vertices`` is None.

    Attributes
    ----------
    kind : str
        The kind of set.
    parameters : mapping
        The defining numbers (read-only).

    See Also
    --------
    LIP : Bounded-prior LIP takes a PriorSet.

    Notes
    -----
    The constructor does not validate: build sets with the class methods (``finite``, ``polytope``, ``box``,
    ``tv_ball``, ``from_counts``, ``from_dict``), which check their input.

    Examples
    --------
    >>> import lipdesign as ld
    >>> plausible = ld.PriorSet.tv_ball([0.5, 0.3, 0.2], 0.1)
    >>> plausible
    PriorSet.tv_ball(k=3)
    >>> plausible.vertices.shape
    (6, 3)
    >>> plausible.contains([0.45, 0.35, 0.2]), plausible.contains([0.7, 0.2, 0.1])
    (True, False)
    >>> notion = ld.LIP(1.0, prior_set=plausible)
    >>> notion.kind
    'BP-LIP'
    """

    def __init__(self, kind: str, vertices: npt.ArrayLike | None, parameters: Mapping[str, Any],
                 k: int | None = None) -> None:
        self.kind = kind
        if vertices is not None:
            self.__dict__["vertices"] = frozen(vertices)
        self.parameters = MappingProxyType(dict(parameters))
        self._k = frozen(vertices).shape[1] if vertices is not None else k

    @property
    def k(self) -> int:
        """The number of values of each prior of the set."""
        return cast(int, self._k)

    @property
    def implicit(self) -> bool:
        """Whether the set is enforced by ``extreme_prior`` (a box or a TV ball), without its vertices."""
        return self.kind in GREEDY_KINDS

    @cached_property
    def vertices(self) -> npt.NDArray[np.float64]:
        """The (n, k) vertices of a box or TV ball intersected with the simplex (enumerated on first use).

        For a finite set its distinct priors, for a polytope the priors given. Enumerating a box or a TV ball
        raises ValidationError when it would examine more than MAX_VERTEX_CANDIDATES (2,000,000) candidates.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.PriorSet.tv_ball([0.5, 0.3, 0.2], 0.1).vertices
        array([[0.6, 0.2, 0.2],
               [0.6, 0.3, 0.1],
               [0.4, 0.4, 0.2],
               [0.5, 0.4, 0.1],
               [0.4, 0.3, 0.3],
               [0.5, 0.2, 0.3]])
        """
        if self.kind == "box":
            lower, upper = np.array(self.parameters["lower"]), np.array(self.parameters["upper"])
            _check_vertex_budget("box", lower.size * 2 ** (lower.size - 1))
            return frozen(box_slice_vertices(np.ones(lower.size), lower, upper, atol=PROBABILITY_ATOL))
        center = np.array(self.parameters["center"])
        _check_vertex_budget("tv_ball", center.size**2 * 2 ** max(center.size - 2, 0))
        return frozen(_tv_ball_vertices(center, self.parameters["radius"]))

    def extreme_prior(self, column: npt.ArrayLike, lowest: bool = True) -> tuple[float, npt.NDArray[np.float64]]:
        """(P . q, P): the prior of the set minimising (``lowest``) or maximising P . q for the column q: the greedy
        fill for a box or a TV ball (O(k log k), ``greedy_extreme``), a scan of the vertices otherwise.

        This is how a bounded-prior LIP constraint is enforced on a box or a TV ball without listing its vertices
        (docs/math.md §3, §5).

        Parameters
        ----------
        column : array_like of float, shape (k,)
            The column q of a table (Pr[Y=y | X=x] over x).
        lowest : bool, default True
            Minimise P . q (True) or maximise it (False).

        Returns
        -------
        mass : float
            The extreme value of P . q over the set.
        prior : numpy.ndarray
            A prior P of the set that attains it, shape (k,).

        Examples
        --------
        >>> import numpy as np
        >>> import lipdesign as ld
        >>> plausible = ld.PriorSet.tv_ball([0.5, 0.3, 0.2], 0.1)
        >>> mass, prior = plausible.extreme_prior([0.1, 0.5, 0.9])
        >>> round(mass, 4), np.round(prior, 3)
        (0.3, array([0.6, 0.3, 0.1]))
        >>> mass, prior = plausible.extreme_prior([0.1, 0.5, 0.9], lowest=False)
        >>> round(mass, 4), np.round(prior, 3)
        (0.46, array([0.4, 0.3, 0.3]))
        """
        column = np.asarray(column, dtype=float)
        if self.implicit:
            parameters = {key: value for key, value in self.parameters.items()}
            mass, prior = greedy_extreme(self.kind, parameters, column.tolist(), lowest)
            return float(mass), np.array(prior)
        masses = self.vertices @ column
        at = int(np.argmin(masses) if lowest else np.argmax(masses))
        return float(masses[at]), self.vertices[at]

    def smallest_entry(self) -> float:
        """The smallest probability any prior of the set gives any value.

        Returns
        -------
        float
            The minimum over the priors P of the set and the values x of P[x].

        Examples
        --------
        >>> import lipdesign as ld
        >>> round(ld.PriorSet.tv_ball([0.5, 0.3, 0.2], 0.1).smallest_entry(), 4)
        0.1
        """
        if self.kind == "box":
            lower, upper = np.array(self.parameters["lower"]), np.array(self.parameters["upper"])
            return float(np.maximum(lower, 1.0 - (upper.sum() - upper)).min())
        if self.kind == "tv_ball":
            return float(np.maximum(np.array(self.parameters["center"]) - self.parameters["radius"], 0.0).min())
        return float(self.vertices.min())

    @classmethod
    def finite(cls, priors: Iterable[Prior | npt.ArrayLike]) -> Self:
        """A finite set of priors; every member is enforced.

        Parameters
        ----------
        priors : iterable of Prior or array_like of float
            The priors, each a Prior or a probability vector, all of the same length.

        Returns
        -------
        PriorSet
            A set of kind ``"finite"`` whose vertices are the distinct priors.

        Raises
        ------
        ValidationError
            When ``priors`` is not a list of probability vectors of one length.

        Examples
        --------
        >>> import lipdesign as ld
        >>> scenarios = ld.PriorSet.finite([ld.Prior([0.5, 0.3, 0.2]), [0.4, 0.4, 0.2]])
        >>> scenarios
        PriorSet.finite(2 vertices, k=3)
        """
        if not hasattr(priors, "__iter__"):
            raise ValidationError(f"prior_set.priors is {fmt(priors)}; it must be a list of priors")
        priors = float_array([getattr(p, "probabilities", p) for p in priors], "prior_set.priors", 2)
        rows = np.array([probability_vector(p, f"prior_set.priors[{i}]") for i, p in enumerate(priors)])
        return cls("finite", np.unique(rows, axis=0), {"priors": rows.tolist()})

    @classmethod
    def polytope(cls, vertices: Iterable[Prior | npt.ArrayLike]) -> Self:
        """The convex hull of the given priors (its vertices are enforced).

        Parameters
        ----------
        vertices : iterable of Prior or array_like of float
            The priors spanning the polytope, each a Prior or a probability vector, all of the same length.

        Returns
        -------
        PriorSet
            A set of kind ``"polytope"``.

        Raises
        ------
        ValidationError
            When ``vertices`` is not a list of probability vectors of one length.

        Examples
        --------
        >>> import lipdesign as ld
        >>> hull = ld.PriorSet.polytope([[0.5, 0.3, 0.2], [0.3, 0.3, 0.4], [0.4, 0.4, 0.2]])
        >>> hull
        PriorSet.polytope(3 vertices, k=3)
        >>> hull.contains([0.4, 0.33, 0.27])
        True
        """
        rows = cls.finite(vertices).vertices
        return cls("polytope", rows, {"vertices": rows.tolist()})

    @classmethod
    def box(cls, lower: npt.ArrayLike, upper: npt.ArrayLike) -> Self:
        """Per-value intervals lower <= P <= upper intersected with the simplex.

        Parameters
        ----------
        lower : array_like of float, shape (k,)
            The lower bound of each probability, >= 0.
        upper : array_like of float, shape (k,)
            The upper bound of each probability, >= ``lower`` and <= 1.

        Returns
        -------
        PriorSet
            A set of kind ``"box"`` (implicit: enforced through ``extreme_prior``).

        Raises
        ------
        ValidationError
            When the bounds break 0 <= lower <= upper <= 1, differ in length, or leave the box empty (it needs
            sum(lower) <= 1 <= sum(upper), checked exactly).

        Examples
        --------
        >>> import lipdesign as ld
        >>> box = ld.PriorSet.box([0.2, 0.2, 0.1], [0.6, 0.5, 0.4])
        >>> box, box.vertices.shape
        (PriorSet.box(k=3), (6, 3))
        >>> ld.PriorSet.box([0.5, 0.5, 0.2], [0.6, 0.6, 0.3])
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: prior_set box is empty: sum(lower) is 1.2 and sum(upper) is 1.5 in exact
        arithmetic; it needs sum(lower) <= 1 <= sum(upper)
        """
        lower = float_array(lower, "prior_set.lower", 1)
        upper = float_array(upper, "prior_set.upper", 1)
        if lower.size != upper.size:
            raise ValidationError(f"prior_set.upper has {upper.size} entries; it must have as many as prior_set.lower "
                                  f"({lower.size})")
        for name, bad in (("lower", lower < 0), ("upper", upper > 1), ("upper", upper < lower)):
            if bad.any():
                x = int(np.argmax(bad))
                raise ValidationError(
                    f"prior_set.{name}[{x}] is {(lower if name == 'lower' else upper)[x]:g}; "
                    "it must satisfy 0 <= lower <= upper <= 1")
        lower_total, upper_total = sum(map(Fraction, lower.tolist())), sum(map(Fraction, upper.tolist()))
        if not lower_total <= 1 <= upper_total:  # exactly: a box empty by 1e-10 must not verify "inside" it
            raise ValidationError(
                f"prior_set box is empty: sum(lower) is {float(lower_total):.17g} and sum(upper) is "
                f"{float(upper_total):.17g} in exact arithmetic; it needs sum(lower) <= 1 <= sum(upper)")
        return cls("box", None, {"lower": lower.tolist(), "upper": upper.tolist()}, k=lower.size)

    @classmethod
    def tv_ball(cls, center: Prior | npt.ArrayLike, radius: float) -> Self:
        """Priors within total-variation distance ``radius`` (half the L1 distance) of ``center``.

        Parameters
        ----------
        center : Prior or array_like of float
            The prior at the centre.
        radius : float
            The total-variation radius, in [0, 1].

        Returns
        -------
        PriorSet
            A set of kind ``"tv_ball"`` (implicit: enforced through ``extreme_prior``).

        Raises
        ------
        ValidationError
            When ``center`` is not a probability vector or ``radius`` lies outside [0, 1].

        Examples
        --------
        >>> import lipdesign as ld
        >>> ball = ld.PriorSet.tv_ball(ld.Prior([0.5, 0.3, 0.2]), 0.1)
        >>> ball.contains([0.45, 0.35, 0.2])
        True
        """
        center = probability_vector(getattr(center, "probabilities", center), "prior_set.center")
        radius = real_number(radius, "prior_set.radius", 0.0, 1.0)
        return cls("tv_ball", None, {"center": center.tolist(), "radius": radius}, k=center.size)

    @classmethod
    def from_counts(cls, counts: npt.ArrayLike, confidence: float = 0.95, kind: str = "tv") -> Self:
        """A set that holds the prior the ``counts`` were drawn from with probability at least ``confidence``
        (docs/math.md §11), around their frequencies P_hat:

        - ``kind="tv"``: the TV ball of radius t/2, t = sqrt(2 (ln(2^k - 2) + ln(1/delta)) / n), from Weissman et
          al. (2003): Pr[``|P_hat - P|_1`` >= t] <= (2^k - 2) e^(-n t^2 / 2), delta = 1 - confidence;
        - ``kind="box"``: per-value Clopper-Pearson intervals at level 1 - delta/k each (Bonferroni over the k
          values), intersected with the simplex; tighter than the ball at large k (needs scipy).

        Parameters
        ----------
        counts : array_like of int
            How often each value was observed: non-negative integers, at least 2 values and 1 observation.
        confidence : float, default 0.95
            The probability, strictly between 0 and 1, that the set holds the true prior.
        kind : {"tv", "box"}, default "tv"
            A TV ball or a box of simultaneous intervals.

        Returns
        -------
        PriorSet
            A ``"tv_ball"`` or ``"box"`` set around the observed frequencies.

        Raises
        ------
        ValidationError
            When a count is negative or not an integer, there are fewer than 2 values or no observation, the
            confidence is not in (0, 1), or ``kind`` is neither ``"tv"`` nor ``"box"``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ball = ld.PriorSet.from_counts([500, 300, 200], confidence=0.95)
        >>> ball, round(ball.parameters["radius"], 4)
        (PriorSet.tv_ball(k=3), 0.0489)
        >>> notion = ld.LIP(1.0, prior_set=ball)
        """
        counts = float_array(counts, "counts", 1)
        if (counts < 0).any() or (counts != np.floor(counts)).any():
            x = int(np.argmax((counts < 0) | (counts != np.floor(counts))))
            raise ValidationError(f"counts[{x}] is {counts[x]:g}; counts must be non-negative integers")
        n, k = int(counts.sum()), counts.size
        if n < 1 or k < 2:
            raise ValidationError(f"counts has {k} values and {n} observations; a prior set needs k >= 2 and n >= 1")
        confidence = real_number(confidence, "confidence")
        if not 0.0 < confidence < 1.0:
            raise ValidationError(f"confidence is {confidence!r}; it must lie strictly between 0 and 1")
        delta, estimate = 1.0 - confidence, counts / n
        if kind == "tv":
            log_patterns = k * math.log(2.0) + math.log1p(-(2.0 ** (1 - k)))  # ln(2^k - 2) without overflow
            radius = min(1.0, math.sqrt(2.0 * (log_patterns + math.log(1.0 / delta)) / n) / 2.0)
            return cls.tv_ball(estimate, radius)
        if kind == "box":
            from scipy.stats import binomtest

            level = 1.0 - delta / k
            intervals = [binomtest(int(c), n).proportion_ci(confidence_level=level, method="exact") for c in counts]
            return cls.box([interval.low for interval in intervals], [interval.high for interval in intervals])
        raise ValidationError(f"kind is {kind!r}; it must be 'tv' or 'box'")

    def membership_decidable(self) -> bool:
        """Whether ``contains`` can answer here: always, except for a general polytope without scipy (the lean
        runtime install), whose membership is an LP.

        Returns
        -------
        bool
            True when ``contains`` can decide membership in this install.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.PriorSet.box([0.2, 0.2, 0.1], [0.6, 0.5, 0.4]).membership_decidable()
        True
        """
        if self.kind != "polytope":
            return True
        try:
            import scipy.optimize  # noqa: F401
        except ImportError:
            return False
        return True

    def contains(self, probabilities: Prior | npt.ArrayLike, atol: float = PROBABILITY_ATOL) -> bool:
        """Whether a prior lies in the set (for a general polytope an LP over convex combinations of the vertices,
        with scipy).

        Parameters
        ----------
        probabilities : Prior or array_like of float, shape (k,)
            The prior, or its probabilities.
        atol : float, default 1e-9
            The tolerance on each bound (PROBABILITY_ATOL).

        Returns
        -------
        bool
            True when the prior lies in the set, within ``atol``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> box = ld.PriorSet.box([0.2, 0.2, 0.1], [0.6, 0.5, 0.4])
        >>> box.contains(ld.Prior([0.4, 0.3, 0.3]))
        True
        >>> box.contains([0.7, 0.2, 0.1])
        False
        """
        probabilities = np.asarray(getattr(probabilities, "probabilities", probabilities), dtype=float)
        if self.kind == "finite":
            return bool(np.abs(self.vertices - probabilities).max(axis=1).min() <= atol)
        if self.kind == "box":
            lower, upper = np.array(self.parameters["lower"]), np.array(self.parameters["upper"])
            return bool(((probabilities >= lower - atol) & (probabilities <= upper + atol)).all())
        if self.kind == "tv_ball":
            return bool(0.5 * np.abs(probabilities - self.parameters["center"]).sum()
                        <= self.parameters["radius"] + atol)
        from scipy.optimize import linprog

        n = self.vertices.shape[0]
        # min s  s.t.  -s <= V^T w - p <= s,  sum w = 1,  w >= 0
        a_ub = np.block([[self.vertices.T, -np.ones((self.k, 1))], [-self.vertices.T, -np.ones((self.k, 1))]])
        b_ub = np.concatenate([probabilities, -probabilities])
        result = linprog(np.r_[np.zeros(n), 1.0], A_ub=a_ub, b_ub=b_ub,
                         A_eq=np.r_[np.ones(n), 0.0][None], b_eq=[1.0], method="highs")
        return bool(result.status == 0 and result.fun <= atol)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the set (as written in spec and mechanism files).

        Returns
        -------
        dict
            ``{"kind": ..., **parameters}``, read back by ``from_dict``.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.PriorSet.tv_ball([0.5, 0.3, 0.2], 0.1).to_dict()
        {'kind': 'tv_ball', 'center': [0.5, 0.3, 0.2], 'radius': 0.1}
        """
        return {"kind": self.kind, **self.parameters}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild a set from its JSON form (``to_dict``), validating it again.

        Parameters
        ----------
        data : mapping
            ``{"kind": "finite", "priors": ...}``, ``{"kind": "polytope", "vertices": ...}``, ``{"kind": "box",
            "lower": ..., "upper": ...}`` or ``{"kind": "tv_ball", "center": ..., "radius": ...}``.

        Returns
        -------
        PriorSet
            The set the mapping describes.

        Raises
        ------
        ValidationError
            When the kind is unknown or the numbers break the rules of its builder.

        Examples
        --------
        >>> import lipdesign as ld
        >>> ld.PriorSet.from_dict({"kind": "box", "lower": [0.2, 0.3], "upper": [0.7, 0.8]})
        PriorSet.box(k=2)
        >>> ld.PriorSet.from_dict({"kind": "ball"})
        Traceback (most recent call last):
        ...
        lipdesign.errors.ValidationError: prior_set.kind is 'ball'; it must be one of ['box', 'finite', 'polytope',
        'tv_ball']
        """
        kind = data.get("kind")
        builders = {
            "finite": lambda: cls.finite(data["priors"]),
            "polytope": lambda: cls.polytope(data["vertices"]),
            "box": lambda: cls.box(data["lower"], data["upper"]),
            "tv_ball": lambda: cls.tv_ball(data["center"], data["radius"]),
        }
        if kind not in builders:
            raise ValidationError(f"prior_set.kind is {kind!r}; it must be one of {sorted(builders)}")
        return builders[kind]()

    def __repr__(self) -> str:
        if self.implicit:
            return f"PriorSet.{self.kind}(k={self.k})"
        return f"PriorSet.{self.kind}({len(self.vertices)} vertices, k={self.k})"


#: Prior sets whose vertex enumeration would examine more candidates than this are refused.
MAX_VERTEX_CANDIDATES = 2_000_000


def _check_vertex_budget(kind, candidates):
    if candidates > MAX_VERTEX_CANDIDATES:
        raise ValidationError(
            f"prior_set {kind} would examine {candidates} candidate vertices (limit {MAX_VERTEX_CANDIDATES}); "
            "use fewer values or a finite set / polytope of priors")


#: A simplex corner counts as inside a TV ball when its distance exceeds the radius by at most this (rounding).
CORNER_ATOL = 1e-15


def _tv_ball_vertices(center, radius):
    """Vertices of {p in simplex : sum_x (center_x - p_x)_+ <= radius} (TV ball intersected with the simplex).

    A vertex either is a simplex corner e_j inside the ball, or moves exactly ``radius`` of mass to one
    receiver j from donors that are each emptied or untouched, except at most one partial donor i.
    """
    k = center.size
    found = [np.eye(k)[j] for j in range(k) if 1.0 - center[j] <= radius + CORNER_ATOL]
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
