"""lipdesign/_solvers/: extreme-ray enumeration and the closed forms it must agree with (docs/math.md §5)."""

import math

import numpy as np
import pytest
from brute_force import lip_rows

import lipdesign as ld
from lipdesign._solvers.rays import (
    EnumerationLimitError,
    bit_patterns,
    box_slice_vertices,
    cone_extreme_rays,
    level_rays,
    staircase_rays,
)
from lipdesign.designer import rays as designer_rays


def as_set(rays):
    return set(map(tuple, np.round(rays / rays.sum(axis=1, keepdims=True), 9)))


@pytest.mark.parametrize("k", [3, 6, 9])
def test_double_description_finds_the_closed_form_rays(k, rng):
    prior, epsilon = rng.dirichlet(np.ones(k)), float(rng.uniform(0.2, 2))
    e = math.exp(epsilon)
    closed = box_slice_vertices(prior, np.full(k, 1 / e), np.full(k, e))
    assert np.allclose(closed @ prior, 1) and (closed >= 1 / e - 1e-12).all() and (closed <= e + 1e-12).all()
    # every closed-form vertex has at most one coordinate strictly inside the box (docs/math.md §5)
    inside = (closed > 1 / e + 1e-12) & (closed < e - 1e-12)
    assert (inside.sum(axis=1) <= 1).all()
    assert as_set(cone_extreme_rays(lip_rows(prior, epsilon))) == as_set(closed)
    ldp_rows = np.array([e * np.eye(k)[b] - np.eye(k)[a] for a in range(k) for b in range(k) if a != b])
    assert as_set(cone_extreme_rays(ldp_rows)) == as_set(staircase_rays(k, e))
    assert len(staircase_rays(k, e)) == 2**k - 2


def prior_sets(rng):
    """Boxes and TV balls of several sizes, some cut by the simplex (clipped), at k = 3..6."""
    for k in (3, 4, 5, 6):
        prior = rng.dirichlet(np.ones(k))
        yield ld.PriorSet.tv_ball(prior, 0.05)
        yield ld.PriorSet.tv_ball(prior, float(rng.uniform(0.15, 0.4)))  # larger than the rarest value: clipped
        yield ld.PriorSet.box(prior * 0.7, np.minimum(1.0, prior * 1.4))
        yield ld.PriorSet.from_counts(rng.multinomial(100, prior), kind="box")


def test_bp_lip_rays_over_a_box_or_tv_ball_take_three_values_and_are_all_found(rng):
    """docs/math.md §5: every extreme ray of the BP-LIP cone over a box or a TV ball takes at most three values, so
    level_rays (built from the set's subset masses) contains every ray the double description finds over the
    vertex constraints, and every level ray satisfies those constraints."""
    for prior_set in prior_sets(rng):
        epsilon = float(rng.uniform(0.3, 2.0))
        k = prior_set.k
        rows = ld.LIP(epsilon, prior_set=prior_set).constraint_rows(ld.Prior(np.full(k, 1 / k)))
        described = cone_extreme_rays(rows)
        assert max(len(np.unique(np.round(ray, 9))) for ray in described) <= 3
        masses = prior_set.vertices @ bit_patterns(k).T
        levels = level_rays(math.exp(epsilon), masses.min(axis=0), masses.max(axis=0))
        assert as_set(described) <= as_set(levels), prior_set
        assert (levels @ rows.T >= -1e-12).all()


def test_double_description_does_not_depend_on_constraint_order(rng):
    prior = rng.dirichlet(3 * np.ones(6))
    rows = ld.LIP(1.0, prior_set=ld.PriorSet.tv_ball(prior, 0.05)).constraint_rows(ld.Prior(prior))
    rays = cone_extreme_rays(rows)
    assert as_set(rays) == as_set(cone_extreme_rays(rows[rng.permutation(len(rows))]))
    assert (rays @ rows.T >= -1e-12).all()
    # each ray is extreme: its active constraints have rank k - 1
    full = np.concatenate([np.eye(6), rows / np.abs(rows).max(axis=1, keepdims=True)])
    for ray in rays:
        assert np.linalg.matrix_rank(full[np.abs(full @ ray) < 1e-9], tol=1e-9) == 5


def test_enumeration_limits_are_enforced(monkeypatch, rng):
    prior = rng.dirichlet(np.ones(8))
    rows = ld.LIP(1.0, prior_set=ld.PriorSet.tv_ball(prior, 0.1)).constraint_rows(ld.Prior(prior))
    with pytest.raises(EnumerationLimitError, match="more than 20 extreme rays"):
        cone_extreme_rays(rows, max_rays=20)
    with pytest.raises(EnumerationLimitError, match="work budget of 0 adjacency tests"):
        cone_extreme_rays(rows, max_work=0)
    monkeypatch.setattr(designer_rays, "MAX_DD_RAYS", 20)
    polytope = ld.PriorSet.polytope(ld.PriorSet.tv_ball(prior, 0.1).vertices)  # a general polytope: double description
    with pytest.raises(ld.ProblemTooLargeError, match="too large for extreme-ray enumeration"):
        ld.design(prior, ld.LIP(1.0, prior_set=polytope), method="exact")
    assert "column generation" in ld.design(prior, ld.LIP(1.0, prior_set=polytope)).provenance["method"]  # 'auto'


def test_long_enumerations_report_progress_and_spend_a_deterministic_budget(rng):
    prior = ld.Prior(rng.dirichlet(np.ones(5)))
    notion = ld.LIP(1.0, prior_set=ld.PriorSet.polytope(ld.PriorSet.tv_ball(prior.probabilities, 0.05).vertices))
    lines = []
    mechanism = ld.design(prior, notion, baselines=False, progress=lines.append)
    assert lines and all(line.startswith("double description: ") for line in lines)
    assert "at most 0 left" in lines[-1] and mechanism.verify().passed
    rows = notion.constraint_rows(prior)
    steps = []
    cone_extreme_rays(rows, progress=lambda *step: steps.append(step))
    again = []
    cone_extreme_rays(rows, progress=lambda *step: again.append(step))
    assert steps == again  # the work spent is counted, not timed: the same input gives the same steps
    with pytest.raises(EnumerationLimitError, match="work budget"):
        cone_extreme_rays(rows, max_work=steps[-1][3] - 1)
