"""Prior sets decided exactly and the design prior inside its set on every path (issue 23, item 8 and the
mutation gap on load): a box empty by 9e-10 was accepted and verified PASS at a prior outside it."""

import json

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.mechanisms.base import content_fingerprint
from lipdesign.mechanisms.table import TableMechanism
from lipdesign.mechanisms.unary_encoding import UnaryEncoding


def test_a_box_empty_in_exact_arithmetic_is_refused():
    lower = [0.5, 0.25, 0.25 + 9e-10]  # sums to 1 + 9e-10 (within the float tolerance of a probability vector)
    with pytest.raises(ld.ValidationError, match=r"prior_set box is empty: sum\(lower\) is 1.0000000009"):
        ld.PriorSet.box(lower, [0.9, 0.9, 0.9])
    with pytest.raises(ld.ValidationError, match="prior_set box is empty"):
        ld.PriorSet.box([0.1, 0.1, 0.1], [0.3, 0.3, 0.4 - 1e-10])  # sum(upper) = 1 - 1e-10


def test_a_box_that_is_one_point_exactly_is_a_set():
    box = ld.PriorSet.box([0.5, 0.25, 0.25], [0.5, 0.25, 0.25])  # sums exactly 1 as doubles
    assert box.vertices.tolist() == [[0.5, 0.25, 0.25]]


def test_a_mechanism_file_with_an_empty_box_is_refused(tmp_path):
    prior = ld.Prior([0.5, 0.3, 0.2])
    box = ld.PriorSet.box([0.4, 0.2, 0.1], [0.6, 0.4, 0.3])
    mechanism = ld.design(prior, ld.LIP(1.0, prior_set=box), ld.Frequencies(), baselines=False)
    data = mechanism.to_dict()
    data["parameters"]["notion"]["prior_set"]["lower"] = [0.5, 0.3, 0.2 + 9e-10]
    data["fingerprint"] = content_fingerprint(data["family"], data["parameters"])
    path = tmp_path / "empty-box.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ld.FormatError, match="prior_set box is empty"):
        ld.load(path)


UNIFORM_ROWS = np.full((3, 2), 0.5)  # every column constant: 0-LIP at every prior, so only membership can fail


@pytest.mark.parametrize("build", [
    lambda notion, prior: TableMechanism(UNIFORM_ROWS, notion, prior),
    lambda notion, prior: UnaryEncoding([0.6, 0.6, 0.6], [0.4, 0.4, 0.4], notion, prior),
], ids=["table", "unary"])
def test_the_constructor_refuses_a_design_prior_outside_its_set(build):
    box = ld.PriorSet.box([0.4, 0.2, 0.1], [0.6, 0.4, 0.3])
    notion = ld.LIP(1.0, prior_set=box)
    build(notion, ld.Prior([0.5, 0.3, 0.2]))  # inside
    with pytest.raises(ld.ValidationError, match="is not in the box prior_set"):
        build(notion, ld.Prior([0.7, 0.2, 0.1]))


def test_a_file_whose_design_prior_left_its_set_is_refused(tmp_path):
    prior = ld.Prior([0.5, 0.3, 0.2])
    ball = ld.PriorSet.tv_ball(prior, 0.05)
    mechanism = ld.design(prior, ld.LIP(1.0, prior_set=ball), ld.Frequencies(), baselines=False)
    data = mechanism.to_dict()
    data["parameters"]["prior"]["probabilities"] = [0.6, 0.2, 0.2]  # TV 0.1 from the centre
    data["fingerprint"] = content_fingerprint(data["family"], data["parameters"])
    path = tmp_path / "outside.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ld.FormatError, match="is not in the tv_ball prior_set"):
        ld.load(path)


@pytest.mark.parametrize("prior_set", [ld.PriorSet.box([0.2, 0.2, 0.1], [0.6, 0.5, 0.4]),
                                       ld.PriorSet.tv_ball([0.4, 0.3, 0.3], 0.05),
                                       ld.PriorSet.finite([[0.4, 0.3, 0.3], [0.5, 0.3, 0.2]]),
                                       ld.PriorSet.polytope([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])])
def test_contains_takes_a_prior_as_well_as_its_probabilities(prior_set):
    for probabilities, inside in (([0.4, 0.3, 0.3], True), ([0.9, 0.05, 0.05], False)):
        assert prior_set.contains(ld.Prior(probabilities)) is inside
        assert prior_set.contains(probabilities) is inside
