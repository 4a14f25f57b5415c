"""The slices {r in C : P . r = 1} of the column cones C of the notions at a prior P, and the maximisations over
them that column generation prices with (docs/math.md §12).

Every point of a slice is a feasible column direction; a table is sum_r w_r r with sum_r w_r r = 1. The slices of
eps-LIP for X itself and of eps-LDP have a linear maximisation in O(k log k): a fractional knapsack for the LIP box
slice, the best prefix of a sort for the LDP staircase slice. Any other cone {q >= 0, A q >= 0} (a latent secret, a
prior set) is a polytope slice, maximised by HiGHS. Points are rows.
"""

import math
import os
import sys
import threading
from dataclasses import dataclass

import highspy
import numpy as np


class BoxSlice:
    """The eps-LIP slice for X itself: {e^-eps <= r_x <= e^eps, P . r = 1} (docs/math.md §5)."""

    def __init__(self, prior, epsilon):
        self.prior = np.asarray(prior, dtype=float)
        self.low, self.high = math.exp(-epsilon), math.exp(epsilon)

    def linear_max(self, directions):
        """For each row g of ``directions``, a vertex maximising g . r: every coordinate starts at e^-eps and the
        budget 1 - e^-eps is spent on the coordinates of largest g_x / P_x first (each raised to e^eps), the last
        one partly."""
        directions = np.atleast_2d(directions)
        p, span = self.prior, self.high - self.low
        order = np.argsort(-directions / p, axis=1, kind="stable")
        spent = np.cumsum(span * p[order], axis=1)
        budget = 1.0 - self.low
        full = spent <= budget
        partial = np.argmin(full, axis=1)  # the first coordinate the budget does not cover (k if it covers all)
        rows = np.arange(len(directions))
        before = np.where(partial > 0, spent[rows, np.maximum(partial - 1, 0)], 0.0)
        raised = np.where(full, span, 0.0)
        some = ~full[rows, partial]
        raised[rows[some], partial[some]] = (budget - before[some]) / p[order[rows[some], partial[some]]]
        points = np.empty_like(directions, dtype=float)
        np.put_along_axis(points, order, self.low + raised, axis=1)
        return points


class StaircaseSlice:
    """The eps-LDP slice: the convex hull of s / (P . s) over the non-constant s in {1, e^eps}^k
    (docs/math.md §5)."""

    def __init__(self, prior, epsilon):
        self.prior = np.asarray(prior, dtype=float)
        self.ratio = math.exp(epsilon)

    def linear_max(self, directions):
        """For each row g, the staircase maximising g . s / (P . s): s = e^eps on a prefix of the values sorted by
        g_x / P_x (a ratio of linear functions over the cube is maximised on a level set of g_x / P_x)."""
        directions = np.atleast_2d(directions)
        p, lift = self.prior, self.ratio - 1.0
        order = np.argsort(-directions / p, axis=1, kind="stable")
        gained = np.cumsum(np.take_along_axis(directions, order, axis=1), axis=1)[:, :-1]
        mass = np.cumsum(p[order], axis=1)[:, :-1]
        values = (directions.sum(axis=1, keepdims=True) + lift * gained) / (1.0 + lift * mass)
        size = np.argmax(values, axis=1) + 1
        high = np.arange(p.size)[None, :] < size[:, None]
        steps = np.empty_like(directions, dtype=float)
        np.put_along_axis(steps, order, np.where(high, self.ratio, 1.0), axis=1)
        return steps / (steps @ p)[:, None]


class PolytopeSlice:
    """The slice {r >= 0 : A r >= 0, P . r = 1} of a cone given by its rows A (docs/math.md §2: a latent secret, a
    prior set). Linear maximisation by HiGHS's simplex, warm-started from the previous direction's basis; the rows
    enter the program as the points found violate them (cutting planes), so a prior set with many vertices costs
    only the rows that bind; a cone whose rows are too many to list comes as a ``Lifting`` (auxiliary variables
    whose rows project onto it). The slice is bounded (P > 0) and holds r = 1."""

    #: A point counts as violating a row (scaled to largest entry 1) when the row's value is below -TOLERANCE.
    TOLERANCE = 1e-9

    #: Rows added per cut: the most violated ones.
    CUT_ROWS = 16

    def __init__(self, prior, rows, lifting=None):
        self.prior = np.asarray(prior, dtype=float)
        rows = np.asarray(rows, dtype=float)
        self.rows = rows / np.abs(rows).max(axis=1, keepdims=True).clip(min=1e-300)
        self.entered = np.zeros(len(self.rows), dtype=bool)
        k = self.prior.size
        self.indices = np.arange(k, dtype=np.int32)
        self.highs = _silent_highs()
        for option, value in (("primal_feasibility_tolerance", 1e-10), ("dual_feasibility_tolerance", 1e-10)):
            self.highs.setOptionValue(option, value)
        self.highs.addVars(k, np.zeros(k), np.full(k, highspy.kHighsInf))
        self.highs.addRow(1.0, 1.0, k, self.indices, self.prior)
        if lifting is not None:  # auxiliary variables and their rows, whose projection onto r is the cone
            aux = lifting.lower.size
            self.highs.addVars(aux, lifting.lower, lifting.upper)
            every = np.arange(k + aux, dtype=np.int32)
            for row, low, high in zip(lifting.rows, lifting.row_lower, lifting.row_upper):
                used = np.flatnonzero(row)
                self.highs.addRow(low, high, used.size, every[used], row[used])
        self.highs.changeObjectiveSense(highspy.ObjSense.kMaximize)

    def linear_max(self, directions):
        """For each row g of ``directions``, a vertex of the slice maximising g . r."""
        directions = np.atleast_2d(np.asarray(directions, dtype=float))
        return np.array([self._maximise(g) for g in directions]).reshape(directions.shape)

    def _maximise(self, direction):
        self.highs.changeColsCost(direction.size, self.indices, direction)
        while True:
            self.highs.run()
            status = self.highs.getModelStatus()
            if status != highspy.HighsModelStatus.kOptimal:
                raise SliceError(f"HiGHS reports {self.highs.modelStatusToString(status)} on a bounded, feasible "
                                 "slice")
            point = np.maximum(np.asarray(self.highs.getSolution().col_value)[: self.prior.size], 0.0)
            values = self.rows @ point
            violated = np.flatnonzero((values < -self.TOLERANCE) & ~self.entered)
            if not violated.size:
                return point
            cut = violated[np.argsort(values[violated])[: self.CUT_ROWS]]
            self.entered[cut] = True
            for row in self.rows[cut]:
                self.highs.addRow(0.0, highspy.kHighsInf, row.size, self.indices, row)


@dataclass(frozen=True)
class Lifting:
    """Auxiliary variables z (bounds ``lower`` <= z <= ``upper``) and rows ``row_lower`` <= M [r; z] <= ``row_upper``
    whose projection onto r is a cone's slice: an extended formulation, for cones whose own rows are too many to
    list (the robust counterpart of a prior set, docs/math.md §12)."""

    lower: np.ndarray
    upper: np.ndarray
    rows: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray


class SliceError(RuntimeError):
    """The linear program over a slice did not end at an optimum."""


_DESCRIPTOR_LOCK = threading.Lock()


def _silent_highs():
    """A HiGHS instance with its log off. highspy's wrapper prints a banner on file descriptor 1 when it is built,
    before any option can be set; standard output stays clean (a JSON export may be going there), so the descriptor
    points at the null device for that moment (one thread at a time, so that each restores the real one). Without a
    descriptor 1 there is nothing to keep clean."""
    with _DESCRIPTOR_LOCK:
        if sys.stdout is not None:
            sys.stdout.flush()
        try:
            saved = os.dup(1)
        except OSError:  # descriptor 1 is closed
            saved = None
        try:
            if saved is not None:
                with open(os.devnull, "w") as null:
                    os.dup2(null.fileno(), 1)
            highs = highspy.Highs()
        finally:
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)
    highs.setOptionValue("output_flag", False)
    return highs


def prices(points, quadratic, linear):
    """r^T Z r + y . r for every row r of ``points`` (Z = ``quadratic``, y = ``linear``)."""
    return ((points @ quadratic) * points).sum(axis=1) + points @ linear  # a BLAS product: einsum's loop is 10x slower


def ascend(slice_, quadratic, linear, starts, max_steps=200):
    """(points, values): from each start, the monotone ascent r <- argmax over the slice of (2 Z r + y) . r' on
    f(r) = r^T Z r + y . r (Z = ``quadratic`` PSD, y = ``linear``): f is convex, so each step's linear maximum does
    not lower it, and the ascent stops at a vertex where the linearisation points back at itself."""
    points = np.atleast_2d(np.asarray(starts, dtype=float)).copy()
    values = prices(points, quadratic, linear)
    moving = np.ones(len(points), dtype=bool)
    for _ in range(max_steps):
        if not moving.any():
            break
        current = points[moving]
        proposed = slice_.linear_max(2.0 * current @ quadratic + linear)
        proposed_values = prices(proposed, quadratic, linear)
        better = proposed_values > values[moving] + 1e-13 * np.abs(values[moving]).clip(min=1.0)
        index = np.flatnonzero(moving)
        points[index[better]] = proposed[better]
        values[index[better]] = proposed_values[better]
        moving[index[~better]] = False
    return points, values
