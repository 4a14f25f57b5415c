"""Boxes and TV balls kept implicitly (docs/math.md §2, §12): the greedy extreme prior against an LP over the set,
the extended formulation of bounded-prior LIP against the slice cut by the listed vertices, and designs past the
vertices' reach that verify exactly."""

import numpy as np
import pytest
from helpers import zipf
from scipy.optimize import linprog

import lipdesign as ld
from lipdesign._solvers.slices import PolytopeSlice
from lipdesign.designer.columns import notion_slice


def lp_extreme(prior_set, column, lowest):
    """min (or max) of P . q over the set by an LP written here: a box {l <= P <= u, sum P = 1}, or a TV ball
    {P = c + s - t, s, t >= 0, sum s = sum t <= radius, P >= 0}."""
    k = column.size
    sign = 1.0 if lowest else -1.0
    if prior_set.kind == "box":
        bounds = list(zip(prior_set.parameters["lower"], prior_set.parameters["upper"]))
        result = linprog(sign * column, A_eq=np.ones((1, k)), b_eq=[1.0], bounds=bounds, method="highs")
        return sign * result.fun
    center, radius = np.array(prior_set.parameters["center"]), prior_set.parameters["radius"]
    cost = sign * np.r_[column, -column]
    a_eq = np.r_[np.ones(k), -np.ones(k)][None]
    a_ub = np.vstack([np.r_[np.ones(k), np.zeros(k)][None], np.hstack([-np.eye(k), np.eye(k)])])
    b_ub = np.r_[radius, center]
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[0.0], bounds=(0, None), method="highs")
    return center @ column + sign * result.fun


@pytest.mark.parametrize("kind", ["tv", "box"])
def test_a_survey_set_at_k_64_is_kept_without_its_vertices(kind):
    counts = np.random.default_rng(1).multinomial(5000, zipf(64)) + 1
    prior_set = ld.PriorSet.from_counts(counts, kind=kind)
    assert prior_set.implicit and prior_set.k == 64 and "vertices" not in repr(prior_set)
    with pytest.raises(ld.ValidationError, match="candidate vertices"):
        prior_set.vertices  # noqa: B018 (listing them is what is refused)
    rng = np.random.default_rng(2)
    for _ in range(20):
        column = rng.random(64)
        for lowest in (True, False):
            mass, prior = prior_set.extreme_prior(column, lowest)
            assert mass == pytest.approx(lp_extreme(prior_set, column, lowest), abs=1e-12)
            assert prior_set.contains(prior) and mass == pytest.approx(prior @ column, abs=1e-12)
    assert prior_set.smallest_entry() == pytest.approx(
        min(lp_extreme(prior_set, np.eye(64)[x], True) for x in range(64)), abs=1e-12)


@pytest.mark.parametrize("make", [lambda p: ld.PriorSet.tv_ball(p, 0.07),
                                  lambda p: ld.PriorSet.box(0.7 * p, np.minimum(1, 1.4 * p))], ids=["tv", "box"])
def test_the_extended_formulation_is_the_slice_of_the_listed_vertices(make):
    """Linear maximisation over the lifted slice (docs/math.md §12) equals that over the slice cut by every vertex's
    LIP rows, on random directions at k = 7."""
    prior = ld.Prior(np.random.default_rng(3).dirichlet(3 * np.ones(7)))
    notion = ld.LIP(1.0, prior_set=make(prior.probabilities))
    lifted = notion_slice(prior, notion)
    listed = PolytopeSlice(prior.probabilities, notion.constraint_rows(prior))
    directions = np.random.default_rng(4).standard_normal((40, 7))
    np.testing.assert_allclose((lifted.linear_max(directions) * directions).sum(axis=1),
                               (listed.linear_max(directions) * directions).sum(axis=1), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("kind", ["tv", "box"])
def test_bp_lip_past_enumeration_designs_and_verifies(kind, tmp_path):
    """k = 40 from survey counts: column generation over the lifted slice (a few rounds here; benchmarks/large.py
    runs k = 64 to its end), exactly verified over the whole set, above the plain LIP design at the survey's
    frequencies (a larger set, a stronger guarantee) and below the LDP level's subset selection."""
    counts = np.random.default_rng(5).multinomial(4000, zipf(40)) + 1
    prior = ld.Prior.from_counts(counts)
    notion = ld.LIP(1.0, prior_set=ld.PriorSet.from_counts(counts, kind=kind))
    mechanism = ld.design(prior, notion, baselines=False, max_rounds=4)
    certificate = mechanism.verify()
    assert certificate.passed and certificate.notion == "BP-LIP"
    worst = ld.verify(mechanism, prior=notion.prior_set)
    assert worst.epsilon <= 1.0
    plain = ld.design(prior, ld.LIP(1.0), baselines=False, max_rounds=20)
    assert plain.mse < mechanism.mse
    ld.save(mechanism, tmp_path / "bp.json")
    copy = ld.load(tmp_path / "bp.json")  # re-verified exactly over the set on load
    assert copy == mechanism and copy.verify().passed
