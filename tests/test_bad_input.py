"""Bad input gets a lipdesign error naming the field, never a raw traceback (found in review)."""

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import lipdesign as ld

PRIOR = ld.Prior([0.2, 0.3, 0.5], labels=["low", "mid", "high"])


def dag(**overrides):
    graph = nx.DiGraph()
    graph.add_node("G", states=2, cpt=[0.5, 0.5])
    graph.add_node("X", states=2, cpt=[[0.7, 0.3], [0.2, 0.8]], **overrides)
    graph.add_edge("G", "X")
    return graph


@pytest.mark.parametrize("call, message", [
    (lambda: ld.Prior([0.5, 0.5], labels=3), "labels is 3; it must be a list"),
    (lambda: ld.Prior([0.5, 0.5], labels=["7", 7]), "repeats"),
    (lambda: ld.Prior([1e308, 1e308], normalize=True), "too large to add up"),
    (lambda: ld.Prior.from_counts([1, 2], pseudocount="a"), "pseudocount is 'a'; it must be a number"),
    (lambda: ld.PriorSet.tv_ball([0.5, 0.5], "a"), "prior_set.radius is 'a'; it must be a number"),
    (lambda: ld.PriorSet.tv_ball(np.full(30, 1 / 30), 0.1).vertices, "candidate vertices"),  # kept implicitly
    (lambda: ld.PriorSet.box(np.zeros(40), np.ones(40)).vertices, "candidate vertices"),
    (lambda: ld.PriorSet.finite(0.5), "prior_set.priors is 0.5; it must be a list"),
    (lambda: ld.LIP(True), "epsilon is True; it must be a number"),
    (lambda: ld.LDP(800), r"epsilon is 800; it must lie in \(0, 30\]"),
    (lambda: ld.SecretModel.from_dag(dag(), "G", "G"), "must differ"),
    (lambda: ld.SecretModel.from_dag(dag(parents=["G", "G"]), "G", "X"), "differ from its in-edges"),
    (lambda: ld.BayesSum([1e308, 0, 0]), "within"),
    (lambda: ld.design(PRIOR, ld.LIP(1.0), np.array([1, 2])), "objective"),
    (lambda: ld.design(PRIOR, ld.LIP(1.0), max_rays="10"), "max_rays"),
    (lambda: ld.verify(np.eye(3), "LDP"), "notion is 'LDP'; verify needs"),
    (lambda: ld.design(PRIOR, ld.LIP(1.0)).perturb(None), "values has shape \\(\\); it must be a vector"),
    (lambda: ld.design(PRIOR, ld.LIP(1.0)).perturb(["low", 1.5]), "it must be one of the labels"),
    (lambda: ld.design(PRIOR, ld.LIP(1.0)).estimate([0, 1], method=3), "method is 3; it must be one of"),
])
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(ld.LipdesignError, match=message):
        call()


def test_dag_state_counts_must_be_positive_integers():
    graph = dag()
    graph.nodes["X"]["states"] = 2.5
    with pytest.raises(ld.ValidationError, match="states 2.5"):
        ld.SecretModel.from_dag(graph, "G", "X")


def test_verify_accepts_a_prior_given_as_numbers():
    assert ld.verify(np.eye(2) * 0.5 + 0.25, ld.LIP(1.0), [0.5, 0.5]).passed


def test_a_box_on_the_tolerance_edge_is_empty_and_a_box_of_one_point_designs():
    # sum(lower) = 1 + 1e-10 is within the 1e-9 tolerance of a probability vector, but the box is empty in exact
    # arithmetic (issue 23 item 8: such a box verified PASS "at" a prior outside it), so it is refused
    with pytest.raises(ld.ValidationError, match="prior_set box is empty"):
        ld.PriorSet.box([0.5, 0.5 + 1e-10], [0.6, 0.6])
    prior_set = ld.PriorSet.box([0.5, 0.5], [0.6, 0.6])  # sum(lower) = 1 exactly: the single prior `lower`
    assert prior_set.vertices.tolist() == [[0.5, 0.5]]
    mechanism = ld.design([0.5, 0.5], ld.LIP(0.5, prior_set=prior_set))
    plain = ld.design([0.5, 0.5], ld.LIP(0.5))
    assert mechanism.mse == pytest.approx(plain.mse, abs=1e-6)


def test_mechanism_files_must_store_probabilities(tmp_path):
    path = tmp_path / "m.json"
    ld.design(PRIOR, ld.LIP(1.0)).to_json(path)
    document = json.loads(path.read_text())
    document["parameters"]["prior"] = {"counts": [2, 3, 5]}
    path.write_text(json.dumps(document))
    with pytest.raises(ld.FormatError, match="probabilities"):
        ld.load(path)
    legacy = json.loads((Path(__file__).parent / "data/v1/lip-histogram.json").read_text())  # lipdesign 0.1.0's
    legacy["prior"] = {"counts": [2, 3, 5]}
    path.write_text(json.dumps(legacy))
    with pytest.raises(ld.FormatError, match="probabilities"):
        ld.load(path)
    path.write_text("[" * 100000)
    with pytest.raises(ld.FormatError):
        ld.load(path)


def test_printed_epsilons_are_rounded_up():
    """Every epsilon a summary prints is an upper bound: ``upward`` rounds the float's exact value toward +inf."""
    from decimal import Decimal

    from lipdesign.validation import upward

    rng = np.random.default_rng(0)
    for value in np.concatenate([rng.uniform(0, 30, 200), [1.0000000000000002, 0.999999999999, 2.0, 1e-7]]):
        for digits in (4, 6):
            text = upward(float(value), digits)
            assert Decimal(text) >= Decimal(float(value)), (value, text)
            assert float(text) <= value * (1 + 10.0 ** (1 - digits)), (value, text)


@pytest.mark.parametrize("labels, at", [([2, 0, 1], 0), (["a", 2, 1], 1), ([1, 5, 7], 0), (["1", "0", "x"], 0)])
def test_integer_labels_that_could_be_read_as_other_indices_are_refused(labels, at):
    """labels=[2, 0, 1] once made perturb([0]) perturb index 1 (found in review): an integer label in 0..k-1 must
    sit at its own index."""
    with pytest.raises(ld.errors.ValidationError,
                       match=rf"labels\[{at}\] is {labels[at]!r}; a label that is \(or spells\) an integer in 0\.\.2 "
                             "must sit at its own index"):
        ld.Prior([0.2, 0.3, 0.5], labels=labels)
    with pytest.raises(ld.errors.ValidationError, match="must sit at its own index"):
        ld.domains.Categorical(3, labels)


def test_unambiguous_integer_labels_keep_their_meaning():
    mechanism = ld.mechanisms.GRR(1.0, 3)
    years = ld.design(ld.Prior([0.2, 0.3, 0.5], labels=[2019, 2020, 2021]), ld.LIP(1.0))
    assert list(years.input_domain.validate([2021, 2019])) == [2, 0]  # labels, never indices
    same = ld.design(ld.Prior([0.2, 0.3, 0.5], labels=[0, 1, 2]), ld.LIP(1.0))
    assert list(same.input_domain.validate([2, 0])) == [2, 0]
    assert list(mechanism.input_domain.validate([2, 0])) == [2, 0]


def test_a_label_with_a_lone_surrogate_is_refused():
    with pytest.raises(ld.errors.ValidationError, match=r"labels\[1\] is '\\ud800'; a label must be valid Unicode"):
        ld.Prior([0.5, 0.5], labels=["ok", "\ud800"])
