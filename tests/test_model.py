"""Declarations validate on construction (docs/math.md §1-2) and prior sets yield the right vertices."""

import math

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linprog

import lipdesign as ld


@pytest.mark.parametrize("probabilities, message", [
    ([0.5, -0.1, 0.6], r"prior\[1\] is -0.1; every entry must be >= 0"),
    ([0.5, float("nan"), 0.5], r"prior\[1\] is nan; every entry must be finite"),
    ([0.0, 0.0], "positive total mass"),
    ([0.2, 0.3, 0.4], r"prior sums to 0.9; it must sum to 1 within 1e-09"),
    ([[0.5, 0.5]], "must be a vector"),
    ("abc", "rectangular array of numbers"),
])
def test_bad_priors_are_refused_with_the_field_and_rule(probabilities, message):
    with pytest.raises(ld.ValidationError, match=message):
        ld.Prior(probabilities)


def test_prior_normalises_only_when_asked_and_from_counts():
    assert ld.Prior([2.0, 6.0], normalize=True).probabilities.tolist() == [0.25, 0.75]
    prior = ld.Prior.from_counts([1, 0, 3], labels=["a", "b", "c"], pseudocount=1)
    assert prior.probabilities.tolist() == pytest.approx([2 / 7, 1 / 7, 4 / 7])
    with pytest.raises(ld.ValidationError, match="labels has 2 entries; it must have 3"):
        ld.Prior([0.2, 0.3, 0.5], labels=["a", "b"])
    with pytest.raises(ld.ValidationError, match="repeats 'a'"):
        ld.Prior([0.2, 0.3, 0.5], labels=["a", "b", "a"])


def test_prior_maps_labels_to_indices():
    prior = ld.Prior([0.2, 0.3, 0.5], labels=["low", "mid", "high"])
    assert prior.indices(["high", "low", "mid", "high"]).tolist() == [2, 0, 1, 2]
    assert prior.indices(np.array([2, 0])).tolist() == [2, 0]
    with pytest.raises(ld.ValidationError, match="values\\[1\\] is 'huge'"):
        prior.indices(["low", "huge"])
    years = ld.Prior([0.5, 0.5], labels=[2024, 2025])
    assert years.indices([2025, 2024]).tolist() == [1, 0]


def test_secret_model_from_joint_and_conditional():
    joint = np.array([[0.1, 0.2, 0.1], [0.3, 0.1, 0.2]])
    secret = ld.SecretModel.from_joint(joint)
    assert secret.secret_prior.tolist() == pytest.approx([0.4, 0.6])
    assert secret.conditional[0].tolist() == pytest.approx([0.25, 0.5, 0.25])
    with pytest.raises(ld.ValidationError, match="row 1 sums to 0.9"):
        ld.SecretModel.from_conditional([[0.5, 0.5], [0.5, 0.4]])
    with pytest.raises(ld.ValidationError, match="sum to 1"):
        ld.SecretModel.from_joint(joint * 2)


def test_secret_model_from_dag_marginalises_the_chain():
    # G -> R -> X with X = f(R); Pr[X | G] computed by hand below.
    g_prior = np.array([0.4, 0.6])
    r_given_g = np.array([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7]])
    f = np.array([0, 0, 1])
    graph = nx.DiGraph()
    graph.add_node("G", states=2, cpt=g_prior)
    graph.add_node("R", states=3, cpt=r_given_g)
    graph.add_node("X", states=["lo", "hi"], function=f)
    graph.add_edges_from([("G", "R"), ("R", "X")])
    secret = ld.SecretModel.from_dag(graph, secret="G", observed="X")
    expected = np.array([[0.8, 0.2], [0.3, 0.7]])
    assert np.allclose(secret.conditional, expected)
    assert np.allclose(secret.secret_prior, g_prior)
    graph.add_edge("X", "G")
    with pytest.raises(ld.ValidationError, match="without cycles"):
        ld.SecretModel.from_dag(graph, "G", "X")


def test_dag_with_a_bad_cpt_is_refused():
    graph = nx.DiGraph()
    graph.add_node("G", states=2, cpt=[0.5, 0.4])
    graph.add_node("X", states=2, cpt=[[0.5, 0.5], [0.5, 0.5]])
    graph.add_edge("G", "X")
    with pytest.raises(ld.ValidationError, match=r"node 'G' cpt\[\] sums to 0.9 with smallest entry 0.4; "
                                                 r"cpt entries must be >= 0 and sum to 1"):
        ld.SecretModel.from_dag(graph, "G", "X")


def lp_min_over_box(q, lower, upper):
    result = linprog(q, A_eq=np.ones((1, q.size)), b_eq=[1], bounds=list(zip(lower, upper)), method="highs")
    return result.fun


def lp_min_over_tv_ball(q, center, radius):
    # variables p (k) and t (k) with t >= center - p, t >= 0, sum t <= radius, p in simplex
    k = q.size
    a_ub = np.block([[-np.eye(k), -np.eye(k)], [np.zeros((1, k)), np.ones((1, k))]])
    b_ub = np.r_[-center, radius]
    result = linprog(np.r_[q, np.zeros(k)], A_ub=a_ub, b_ub=b_ub, A_eq=np.r_[np.ones(k), np.zeros(k)][None],
                     b_eq=[1], bounds=[(0, None)] * (2 * k), method="highs")
    return result.fun


@pytest.mark.parametrize("k", [3, 5, 7])
def test_box_and_tv_ball_vertices_give_the_lp_extremes(k, rng):
    center = rng.dirichlet(np.ones(k))
    lower, upper = center * 0.7, np.minimum(1, center * 1.4)
    box = ld.PriorSet.box(lower, upper)
    ball = ld.PriorSet.tv_ball(center, 0.15)
    for vertices in (box.vertices, ball.vertices):
        assert np.allclose(vertices.sum(axis=1), 1) and (vertices >= -1e-15).all()
    assert np.all((box.vertices >= lower - 1e-12) & (box.vertices <= upper + 1e-12))
    assert (0.5 * np.abs(ball.vertices - center).sum(axis=1) <= 0.15 + 1e-12).all()
    for _ in range(20):
        q = rng.normal(size=k)
        assert (box.vertices @ q).min() == pytest.approx(lp_min_over_box(q, lower, upper), abs=1e-9)
        assert (ball.vertices @ q).min() == pytest.approx(lp_min_over_tv_ball(q, center, 0.15), abs=1e-9)


def test_prior_set_membership_and_errors():
    p = np.array([0.2, 0.3, 0.5])
    assert ld.PriorSet.tv_ball(p, 0.1).contains([0.25, 0.25, 0.5])
    assert not ld.PriorSet.tv_ball(p, 0.1).contains([0.4, 0.1, 0.5])
    polytope = ld.PriorSet.polytope([[0.2, 0.3, 0.5], [0.4, 0.3, 0.3], [0.2, 0.5, 0.3]])
    assert polytope.contains([0.25, 0.35, 0.4])
    assert not polytope.contains([0.1, 0.4, 0.5])
    assert ld.PriorSet.finite([p, [0.5, 0.25, 0.25]]).contains(p)
    with pytest.raises(ld.ValidationError, match="box is empty"):
        ld.PriorSet.box([0.5, 0.6], [0.9, 0.9])
    with pytest.raises(ld.ValidationError, match="radius"):
        ld.PriorSet.tv_ball(p, 1.5)
    with pytest.raises(ld.ValidationError, match=r"priors\[1\] sums to 1.5; it must sum to 1"):
        ld.PriorSet.finite([p, [0.5, 0.5, 0.5]])


def test_tv_ball_that_covers_the_simplex_has_its_corners():
    ball = ld.PriorSet.tv_ball([0.5, 0.5], 0.9)
    assert sorted(map(tuple, ball.vertices)) == [(0.0, 1.0), (1.0, 0.0)]
    assert math.isclose(ld.PriorSet.tv_ball([0.2, 0.8], 0.0).vertices[0, 0], 0.2)


def test_prior_sets_from_counts_cover_the_true_prior_at_their_level():
    """docs/math.md §11: from n = 200 survey counts, the TV ball (Weissman et al.'s bound) and the Bonferroni box of
    Clopper-Pearson intervals hold the prior the counts came from in at least 95% of 400 seeded surveys (3 sd
    below 0.95 allowed for the simulation's own error)."""
    rng = np.random.default_rng(20261201)
    truth = np.array([0.4, 0.25, 0.2, 0.1, 0.05])
    for kind in ("tv", "box"):
        covered = [ld.PriorSet.from_counts(rng.multinomial(200, truth), 0.95, kind).contains(truth)
                   for _ in range(400)]
        assert np.mean(covered) >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / 400), kind


def test_the_tv_radius_from_counts_is_weissmans():
    # k = 8, n = 1120, delta = 0.05: t/2 = sqrt(2 (ln(2^8 - 2) + ln 20) / 1120) / 2 = 0.0617 (docs/math.md §11)
    prior_set = ld.PriorSet.from_counts(np.full(8, 140), confidence=0.95, kind="tv")
    assert prior_set.kind == "tv_ball" and prior_set.parameters["radius"] == pytest.approx(0.0617, abs=5e-5)
    assert prior_set.contains(np.full(8, 1 / 8))
    for bad, message in [({"counts": [3, -1]}, "non-negative integers"), ({"counts": [1.5, 2]}, "integers"),
                         ({"counts": [5]}, "k >= 2"), ({"counts": [3, 4], "confidence": 1.0}, "strictly between"),
                         ({"counts": [3, 4], "kind": "ball"}, "kind is 'ball'")]:
        with pytest.raises(ld.ValidationError, match=message):
            ld.PriorSet.from_counts(**bad)


def test_a_design_over_a_prior_set_from_counts():
    counts = np.array([52, 61, 40, 27, 20])
    prior = ld.Prior.from_counts(counts)
    prior_set = ld.PriorSet.from_counts(counts, 0.9, "box")
    mechanism = ld.design(prior, ld.LIP(1.0, prior_set=prior_set), ld.Frequencies())
    assert mechanism.verify().passed and mechanism.notion.kind == "BP-LIP"
    assert mechanism.mse >= ld.design(prior, ld.LIP(1.0), ld.Frequencies(), baselines=False).mse  # robustness costs
