"""Solver failures of the unary design (issue 23 item 7): a numerically singular Newton system at small eps over a box
prior set is not let out as numpy's LinAlgError; where a looser stopping gap avoids it the design succeeds (and is
checked here independently, in exact arithmetic, at every vertex of the box), and every failure left is a
SolverError that says what to try."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import lipdesign as ld
import lipdesign.designer.unary_encoding as unary_designer
from lipdesign._solvers.unary_encoding import UnaryDesign
from lipdesign.errors import SolverError
from lipdesign.model.prior_set import PriorSet

EPSILON = 1.23e-3
RADIUS = 0.12
#: k = 4 with a 7.5e-4 entry: a box of +-0.12 around it made the barrier's Woodbury solve raise LinAlgError.
SINGULAR_PRIOR = [0.00075, 0.9491483130626455, 0.004867085273533418, 0.04523460166382099]


def box_around(prior):
    prior = np.array(prior)
    return np.clip(prior - RADIUS, 0.0, 1.0), np.clip(prior + RADIUS, 0.0, 1.0)


def exact_box_vertices(lower, upper):
    """Vertices of {P : lower <= P <= upper, sum P = 1} in Fraction, listed independently of lipdesign: at a vertex
    every entry but at most one sits at a bound, and the free one is 1 minus the others."""
    lower, upper = [Fraction(x) for x in lower], [Fraction(x) for x in upper]
    k, found = len(lower), set()
    for free in range(k):
        others = [x for x in range(k) if x != free]
        for pattern in itertools.product((0, 1), repeat=k - 1):
            point = [None] * k
            for x, top in zip(others, pattern):
                point[x] = upper[x] if top else lower[x]
            point[free] = 1 - sum(point[x] for x in others)
            if lower[free] <= point[free] <= upper[free]:
                found.add(tuple(point))
    return sorted(found)


def exact_lip_epsilon(a, b, priors):
    """max over the 2^k reports, the values x and the priors of |ln Pr[y | x] / Pr[y]| for unary encoding with bit
    probabilities a (own bit) and b (other bits), the ratio computed in Fraction."""
    a, b = [Fraction(float(x)) for x in a], [Fraction(float(x)) for x in b]
    k, worst = len(a), 0.0
    for report in itertools.product((0, 1), repeat=k):
        rows = []
        for x in range(k):
            row = Fraction(1)
            for j, bit in enumerate(report):
                one = a[j] if j == x else b[j]
                row *= one if bit else 1 - one
            rows.append(row)
        for prior in priors:
            marginal = sum(p * row for p, row in zip(prior, rows))
            for row in rows:
                worst = max(worst, abs(math.log(row / marginal)))
    return worst


def test_singular_newton_system_at_small_eps_over_a_box_designs_and_holds_at_every_vertex():
    lower, upper = box_around(SINGULAR_PRIOR)
    notion = ld.LIP(EPSILON, prior_set=PriorSet.box(lower, upper))
    mechanism = ld.design(SINGULAR_PRIOR, notion, ld.Frequencies(), family="unary")
    vertices = exact_box_vertices(lower, upper)
    assert len(vertices) >= 4
    assert exact_lip_epsilon(mechanism.p, mechanism.q, vertices) <= EPSILON
    assert mechanism.provenance["optimality"]["gap"] <= 1e-5


def test_a_singular_system_at_every_tolerance_is_a_solver_error_that_says_what_to_try(monkeypatch):
    def singular(*args, **kwargs):
        raise np.linalg.LinAlgError("Singular matrix")

    monkeypatch.setattr(unary_designer, "design_unary", singular)
    lower, upper = box_around(SINGULAR_PRIOR)
    notion = ld.LIP(EPSILON, prior_set=PriorSet.box(lower, upper))
    for objective in (ld.Frequencies(), ld.BayesHistogram()):
        if objective.kind == "histogram":
            notion = ld.LIP(EPSILON)
        with pytest.raises(SolverError) as caught:
            ld.design(SINGULAR_PRIOR, notion, objective, family="unary")
        message = str(caught.value)
        assert "singular" in message
        assert "larger epsilon" in message and "smaller prior set" in message and "family='rr'" in message


def test_an_uncertified_barrier_result_is_a_solver_error_that_says_what_to_try(monkeypatch):
    def uncertified(prior, epsilon, **kwargs):
        alpha = np.full(len(prior), 1e-3)
        return UnaryDesign(alpha, alpha, 1e7, 1e3, False, 1e7 - 1e3)

    monkeypatch.setattr(unary_designer, "design_unary", uncertified)
    lower, upper = box_around(SINGULAR_PRIOR)
    notion = ld.LIP(EPSILON, prior_set=PriorSet.box(lower, upper))
    with pytest.raises(SolverError) as caught:
        ld.design(SINGULAR_PRIOR, notion, ld.Frequencies(), family="unary")
    message = str(caught.value)
    assert "did not certify" in message
    assert "larger epsilon" in message and "smaller prior set" in message and "family='rr'" in message
