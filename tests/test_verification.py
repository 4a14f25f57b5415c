"""Tightest epsilon (docs/math.md §3) against closed forms, exact mode, and prior-set extremes."""

import math
from fractions import Fraction

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.verification import exp_bounds, log_upper


def grr(k, epsilon):
    e = math.exp(epsilon)
    return (np.full((k, k), 1.0) + (e - 1) * np.eye(k)) / (e + k - 1)


@pytest.mark.parametrize("k, epsilon", [(2, 0.5), (4, 1.0), (7, 2.5)])
def test_grr_has_ldp_epsilon_exactly_epsilon(k, epsilon):
    certificate = ld.verify(grr(k, epsilon), ld.LDP(epsilon), exact=False)
    assert certificate.epsilon == pytest.approx(epsilon, abs=1e-12)
    assert certificate.epsilon >= epsilon - 1e-15  # rounded outward
    assert certificate.passed
    assert not ld.verify(grr(k, epsilon), ld.LDP(0.99 * epsilon), exact=False).passed


def test_lip_epsilon_of_grr_matches_a_direct_computation():
    # Under prior P, Pr[Y=y] = (1 + (e-1) P_y)/(e+k-1); the largest ratio is max over y of
    # max(e/(1+(e-1)P_y), (1+(e-1)P_y)/1) (input x = y or x != y).
    prior = ld.Prior([0.1, 0.2, 0.7])
    e = math.exp(1.2)
    mass = 1 + (e - 1) * prior.probabilities
    expected = math.log(max((e / mass).max(), mass.max()))
    assert ld.verify(grr(3, 1.2), ld.LIP(1.2), prior, exact=False).epsilon == pytest.approx(expected, abs=1e-12)
    assert ld.verify(grr(3, 1.2), ld.LIP(1.2), prior, exact=False).passed  # eps-LDP implies eps-LIP


def test_latent_secret_epsilon_is_the_convex_combination_bound():
    # The identity table releases X; its LIP leakage for G is max |ln(T[g,x] / P_x)| (docs/math.md §2, Prop. 1).
    conditional = np.array([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]])
    secret = ld.SecretModel(conditional, [0.5, 0.5])
    prior = ld.Prior([0.35, 0.3, 0.35])
    expected = np.abs(np.log(conditional / prior.probabilities)).max()
    certificate = ld.verify(np.eye(3), ld.LIP(1.0, secret=secret), prior, exact=True)
    assert certificate.epsilon == pytest.approx(expected, abs=1e-12)
    assert certificate.worst["secret"] in (0, 1)


def test_mixed_zero_columns_have_infinite_ldp_epsilon_and_empty_columns_are_ignored():
    table = np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]])
    prior = ld.Prior([0.5, 0.5])
    assert ld.verify(table, ld.LDP(1.0), prior, exact=False).epsilon == math.inf
    assert not ld.verify(table, ld.LDP(1.0), prior, exact=True).passed
    assert ld.verify(np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]), ld.LDP(1.0), prior, exact=False).epsilon == 0.0


def test_exact_mode_catches_what_floating_point_forgives():
    # GRR pushed just past its bound: the ratio exceeds e^eps by ~1e-15 relative, within the float slack.
    epsilon = 0.6
    e_high_precision = decimal_exp(epsilon)
    table = np.array([[1.0, 0.0], [0.0, 1.0]])
    table[0, 1] = 1 / (1 + math.exp(epsilon))
    table[0, 0] = 1 - table[0, 1]
    table[1] = table[0, ::-1]
    ratio = ((Fraction(table[0, 0]) / sum(map(Fraction, table[0])))
             / (Fraction(table[1, 0]) / sum(map(Fraction, table[1]))))
    bumped = table.copy()
    bumped[0, 0] = math.nextafter(math.nextafter(table[0, 0], 2), 2)
    bumped[0, 1] = 1 - bumped[0, 0]
    bumped_ratio = (Fraction(bumped[0, 0]) / sum(map(Fraction, bumped[0]))) / (
        Fraction(bumped[1, 0]) / sum(map(Fraction, bumped[1])))
    assert ld.verify(bumped, ld.LDP(epsilon), exact=False).passed  # floating point forgives
    assert ld.verify(table, ld.LDP(epsilon), exact=True).passed == (ratio < e_high_precision)
    assert ld.verify(bumped, ld.LDP(epsilon), exact=True).passed == (bumped_ratio < e_high_precision)
    assert bumped_ratio > e_high_precision  # the bumped table really violates the claim


def decimal_exp(epsilon):
    """e^epsilon to 50 digits, computed here independently of lipdesign.verification."""
    import decimal
    with decimal.localcontext() as context:
        context.prec = 50
        return Fraction(decimal.Decimal(epsilon).exp())


def test_exact_mode_reads_rows_as_the_distributions_a_perturber_samples():
    # Row 1 sums to 1 - 9e-10: the perturber samples row / sum, which leaks more than the raw numbers.
    epsilon = 1.0
    e = math.exp(epsilon)
    table = np.array([[e / (1 + e), 1 / (1 + e)], [1 / (1 + e), e / (1 + e)]])
    table[1] *= 1 - 9e-10
    assert not ld.verify(table, ld.LDP(epsilon), exact=True).passed


def test_exp_bounds_bracket_and_log_upper_rounds_up():
    for epsilon in (1e-6, 0.5, 1.0, 7.0):
        low, high = exp_bounds(epsilon)
        assert (low < high and float(low) <= math.exp(epsilon) * (1 + 1e-15)
                and float(high) >= math.exp(epsilon) * (1 - 1e-15))
        assert (high - low) / low < Fraction(1, 10**40)
    for ratio in (Fraction(3, 2), Fraction(10**20 + 1, 10**20), Fraction(7)):
        assert log_upper(ratio) >= math.log(float(ratio))
        assert math.exp(log_upper(ratio)) >= float(ratio) * (1 - 1e-15)


def brute_force_bp_epsilon(table, vertices):
    """max over enforced priors, outputs and inputs of |ln(q[x] / P.q)| with G = X (docs/math.md §3)."""
    ratios = table[None, :, :] / np.einsum("vk,ky->vy", vertices, table)[:, None, :]
    return np.abs(np.log(ratios)).max()


@pytest.mark.parametrize("kind", ["box", "tv_ball", "finite", "polytope"])
def test_bounded_prior_epsilon_matches_enumeration_over_vertices(kind, rng):
    k = 4
    center = rng.dirichlet(3 * np.ones(k))
    prior_set = {
        "box": lambda: ld.PriorSet.box(center * 0.8, np.minimum(1, center * 1.3)),
        "tv_ball": lambda: ld.PriorSet.tv_ball(center, 0.1),
        "finite": lambda: ld.PriorSet.finite([center, rng.dirichlet(np.ones(k))]),
        "polytope": lambda: ld.PriorSet.polytope([center, rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))]),
    }[kind]()
    table = rng.dirichlet(np.ones(5), size=k)
    expected = brute_force_bp_epsilon(table, prior_set.vertices)
    notion = ld.LIP(1.0, prior_set=prior_set)
    assert ld.verify(table, notion, ld.Prior(center), exact=False).epsilon == pytest.approx(expected, rel=1e-12)
    exact = ld.verify(table, notion, ld.Prior(center), exact=True)
    assert exact.epsilon == pytest.approx(expected, rel=1e-12)
    assert prior_set.contains(exact.worst["prior"])


def test_worst_case_lip_is_ldp_for_x(rng):
    table = rng.dirichlet(np.ones(4), size=3)
    prior = ld.Prior([0.2, 0.3, 0.5])
    assert ld.verify(table, ld.WorstCaseLIP(1.0), prior, exact=False).epsilon == pytest.approx(
        ld.verify(table, ld.LDP(1.0), prior, exact=False).epsilon, rel=1e-12)


def test_verify_needs_what_it_checks():
    with pytest.raises(ld.ValidationError, match="notion is None; verify needs"):
        ld.verify(np.eye(2))
    with pytest.raises(ld.ValidationError, match="design prior"):
        ld.verify(np.eye(2), ld.LIP(1.0))
    with pytest.raises(ld.ValidationError, match="row 0 sums to 0.9"):
        ld.verify(np.array([[0.5, 0.4], [0.5, 0.5]]), ld.LDP(1.0))
    with pytest.raises(ld.ValidationError, match=r"table has 3 rows; it must have one per value of the prior \(2\)"):
        ld.verify(np.eye(3), ld.LIP(1.0), ld.Prior([0.5, 0.5]))


def test_a_certificate_line_cuts_a_long_worst_case_prior_and_keeps_it_whole_in_the_certificate():
    """k = 100 over a TV ball: the worst prior has 100 entries; printed whole it made `lipdesign verify` a screenful."""
    k = 100
    prior = np.full(k, 1 / k)
    table = ld.mechanisms.GRR(1.0, k).full_table()
    certificate = ld.verify(table, ld.LIP(1.0, prior_set=ld.PriorSet.tv_ball(prior, 0.05)), prior=prior)
    worst = certificate.worst["prior"]
    assert len(worst) == k and sum(worst) == pytest.approx(1.0)
    line = certificate.summary()
    assert f"'prior': {worst[:8]!r}"[:-1] + ", '... (100 entries; Certificate.worst has them all)']" in line
    assert len(line) < 600
