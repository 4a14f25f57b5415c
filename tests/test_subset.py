"""The subset families (docs/math.md §11): every output enumerated at small k, against which the sampler, the
exact certificate, the estimate and its variance are checked; the closed forms at large k; intervals on a
population that is not the design prior."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import lipdesign as ld
from lipdesign.designer import uniform_prior_optimum
from lipdesign.mechanisms import SubsetLIP, SubsetSelection, unbiased_frequencies
from lipdesign.verification import verify_table


def unpack(reports, bits):
    return np.unpackbits(reports, axis=1, count=bits, bitorder="little").astype(bool)


def selection_outputs(mechanism):
    """Every d-subset S and the realised Pr[S | x] (Fractions): the coin's p over the C(k-1, d-1) subsets with x,
    1 - p over the C(k-1, d) without, written out here from the definition."""
    k, d = mechanism.k, mechanism.d
    inside = Fraction(mechanism.inside)
    subsets = list(itertools.combinations(range(k), d))
    table = [[inside / math.comb(k - 1, d - 1) if x in s else (1 - inside) / math.comb(k - 1, d) for s in subsets]
             for x in range(k)]
    return subsets, np.array(table, dtype=object)


def orbit_outputs(mechanism):
    """Every (z, H) and the realised Pr[(z, H) | x] (Fractions), from the case probabilities of the definition:
    free Pr[u < free_end] over the C(k-1, j) outputs with z = x, high over the (k-1) C(k-2, j-1) with x in H, low
    over the (k-1) C(k-2, j) others."""
    k, j = mechanism.k, mechanism.j
    free_end, high_end = Fraction(mechanism.free_end), Fraction(mechanism.high_end)
    free, high, low = free_end, high_end - free_end, 1 - high_end
    outputs = [(z, h) for z in range(k) for h in itertools.combinations([v for v in range(k) if v != z], j)]
    table = []
    for x in range(k):
        row = []
        for z, h in outputs:
            if x == z:
                row.append(free / math.comb(k - 1, j))
            elif x in h:
                row.append(high / ((k - 1) * math.comb(k - 2, j - 1)))
            else:
                row.append(low / ((k - 1) * math.comb(k - 2, j)))
        table.append(row)
    return outputs, np.array(table, dtype=object)


def output_index(mechanism, reports, outputs):
    """The index in ``outputs`` of each packed report."""
    k = mechanism.k
    if mechanism.family == "subset":
        keys = {s: index for index, s in enumerate(outputs)}
        return np.array([keys[tuple(np.flatnonzero(row))] for row in unpack(reports, k)])
    keys = {(z, h): index for index, (z, h) in enumerate(outputs)}
    bits = unpack(reports, 2 * k)
    return np.array([keys[(int(np.flatnonzero(row[k:])[0]), tuple(np.flatnonzero(row[:k])))] for row in bits])


CASES = [SubsetSelection(1.0, 5, 2), SubsetSelection(0.4, 6, 3), SubsetSelection(2.0, 4, 3),
         SubsetLIP(1.0, 5), SubsetLIP(0.5, 6, 2), SubsetLIP(2.0, 4, 0), SubsetLIP(0.3, 5, 2), SubsetLIP(1.0, 2),
         SubsetLIP(3.0, 3)]


@pytest.mark.parametrize("mechanism", CASES, ids=repr)
def test_the_sampler_draws_the_enumerated_table(mechanism):
    """Chi-square of 40,000 reports of each input against its row of the table written out above (every output
    has expected count >= 5 at these sizes)."""
    outputs, table = (selection_outputs if mechanism.family == "subset" else orbit_outputs)(mechanism)
    rng = np.random.default_rng(7)
    for x in range(mechanism.k):
        reports = mechanism.perturb(np.full(40_000, x), rng=rng)
        counts = np.bincount(output_index(mechanism, reports, outputs), minlength=len(outputs))
        expected = 40_000 * np.array(table[x], dtype=float)
        assert (counts[expected == 0] == 0).all()
        assert stats.chisquare(counts[expected > 0], expected[expected > 0]).pvalue > 1e-4


@pytest.mark.parametrize("mechanism", CASES, ids=repr)
def test_the_certificate_is_the_enumerated_tables_exact_epsilon(mechanism):
    _, table = (selection_outputs if mechanism.family == "subset" else orbit_outputs)(mechanism)
    uniform = ld.Prior(np.full(mechanism.k, 1 / mechanism.k))
    ldp = verify_table(table, ld.LDP(mechanism.epsilon if mechanism.family == "subset" else 2 * mechanism.epsilon))
    if mechanism.family == "subset":
        assert mechanism.verify().epsilon == ldp.epsilon and mechanism.verify().passed
    else:
        lip = verify_table(table, ld.LIP(mechanism.epsilon), uniform)
        assert mechanism.verify().epsilon == lip.epsilon and lip.passed and mechanism.verify().passed
        assert mechanism.verified_epsilons()["LDP"] == ldp.epsilon
        other = np.random.default_rng(mechanism.k).dirichlet(np.ones(mechanism.k))
        assert ld.verify(mechanism, prior=other).epsilon == verify_table(table, ld.LIP(mechanism.epsilon),
                                                                          ld.Prior(other)).epsilon


@pytest.mark.parametrize("mechanism", CASES, ids=repr)
def test_the_estimate_and_its_variance_are_those_of_the_enumerated_table(mechanism):
    """The estimate from the bit sums equals the GLS estimate of the full table at the uniform prior (subset
    selection: its own support estimate, which is unbiased too), and the variance formula equals
    diag(B (diag(pi) - Q^T diag(f) Q) B^T)/n with B the estimate's matrix read off unit count vectors."""
    outputs, table = (selection_outputs if mechanism.family == "subset" else orbit_outputs)(mechanism)
    q = np.array(table, dtype=float)
    rng = np.random.default_rng(3)
    values = rng.integers(0, mechanism.k, size=3000)
    reports = mechanism.perturb(values, rng=rng)
    counts = np.bincount(output_index(mechanism, reports, outputs), minlength=len(outputs))
    estimate = np.asarray(mechanism.estimate(reports))
    if mechanism.family == "subset-lip":
        gls = unbiased_frequencies(q, counts, prior=np.full(mechanism.k, 1 / mechanism.k))
        np.testing.assert_allclose(estimate, gls, atol=1e-9)
    # the estimate is linear in the report frequencies: its matrix B from one report of each output
    b = np.column_stack([np.asarray(mechanism.estimate(report_of(mechanism, output))) for output in outputs])
    np.testing.assert_allclose(b @ (counts / counts.sum()), estimate, atol=1e-9)
    f = rng.dirichlet(np.ones(mechanism.k))
    pi = q.T @ f
    covariance = b @ (np.diag(pi) - q.T @ (f[:, None] * q)) @ b.T
    np.testing.assert_allclose(mechanism.variance(f, n=1), np.diag(covariance), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b @ (q.T @ f), f, atol=1e-9)  # unbiased at a truth that is not the design prior


def report_of(mechanism, output):
    """The packed report (one row) of an enumerated output, built here bit by bit."""
    k = mechanism.k
    bits = np.zeros(k if mechanism.family == "subset" else 2 * k, dtype=bool)
    if mechanism.family == "subset":
        bits[list(output)] = True
    else:
        z, h = output
        bits[list(h)] = True
        bits[k + z] = True
    return np.packbits(bits[None, :], axis=1, bitorder="little")


@pytest.mark.parametrize(("k", "epsilon"), [(64, 1.0), (256, 0.5), (1024, 2.0), (3000, 1.0)])
def test_the_figures_are_the_uniform_prior_optima(k, epsilon):
    """docs/math.md §11: at the uniform prior the orbits are optimal; the exact variance of each family's own
    estimate (from the realised probabilities, 1e-10 inside e^eps) equals the closed form."""
    lip, ldp = SubsetLIP(epsilon, k), SubsetSelection(epsilon, k)
    assert lip.mse == pytest.approx(uniform_prior_optimum(k, epsilon, "LIP")[0], rel=1e-8)
    assert ldp.mse == pytest.approx(uniform_prior_optimum(k, epsilon, "LDP")[0], rel=1e-8)
    assert lip.verify().passed and ldp.verify().passed


def test_intervals_cover_a_population_that_is_not_the_design_prior():
    """95 % intervals over 300 seeded runs at n = 4000 on a Zipf population (the design prior is uniform): the
    coverage of each value is binomial(300, 0.95) if the standard errors are right; every value's coverage lies
    within 4 binomial sd of 0.95 and the average within 2 sd of the average's."""
    truth = 1 / np.arange(1, 9) ** 1.1
    truth /= truth.sum()
    rng = np.random.default_rng(11)
    for mechanism in (SubsetSelection(1.0, 8), SubsetLIP(1.0, 8)):
        covered = np.zeros(8)
        for _ in range(300):
            values = rng.choice(8, size=4000, p=truth)
            low, high = mechanism.estimate(mechanism.perturb(values, rng=rng)).confidence_interval(0.95)
            counts = np.bincount(values, minlength=8) / 4000  # given the users' values
            covered += (low <= counts) & (counts <= high)
        rate = covered / 300
        sd = math.sqrt(0.95 * 0.05 / 300)
        assert (np.abs(rate - 0.95) < 4 * sd).all(), (mechanism, rate)
        assert abs(rate.mean() - 0.95) < 2 * sd


def test_bad_parameters_are_refused_with_the_rule():
    with pytest.raises(ld.ValidationError, match="j is 0; .* free value"):
        SubsetLIP(1.0, 64, 0)
    with pytest.raises(ld.ValidationError, match="d is 7"):
        SubsetSelection(1.0, 7, 7)
    with pytest.raises(ld.ValidationError, match="k is 1"):
        SubsetLIP(1.0, 1)
    with pytest.raises(ld.ValidationError, match="reports"):
        SubsetLIP(1.0, 5).estimate(np.zeros((3, 1), dtype=np.uint8))


def test_lip_over_a_tv_ball_equals_the_worst_over_its_listed_vertices():
    """The TV ball's extremes are found from the centre's j + 1 smallest and largest entries (docs/math.md §11);
    checked against the maximum over every vertex the ball's enumeration lists, on random centres and radii."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        k = int(rng.integers(3, 8))
        epsilon = float(rng.uniform(0.3, 2.5))
        e, a = math.exp(epsilon), math.exp(-epsilon)
        valid = [j for j in range(k) if a <= k - j * e - (k - 1 - j) * a <= e]  # the free value is a slice entry
        mechanism = SubsetLIP(epsilon, k, int(rng.choice(valid)))
        ball = ld.PriorSet.tv_ball(rng.dirichlet(np.ones(k) * 0.7), float(rng.uniform(0.01, 0.6)))
        listed = max(mechanism.certificate_at(vertex).epsilon for vertex in ball.vertices)
        assert mechanism.certificate_at(ball).epsilon == pytest.approx(listed, rel=1e-12, abs=1e-12), (k, mechanism.j)
        # each side on its own, by brute force over every output (z, H): D = sum_x P_x rho_(x's case)
        rho = {case: float(value) for case, value in mechanism.ratios().items()}

        def d_range(prior):
            values = [sum(prior[x] * rho["z" if x == z else "high" if x in high else "low"] for x in range(k))
                      for z in range(k) for high in itertools.combinations([x for x in range(k) if x != z],
                                                                           mechanism.j)]
            return min(values), max(values)

        smallest, largest = mechanism._tv_ball_extremes(ball)
        ranges = [d_range(vertex) for vertex in ball.vertices]
        assert d_range(smallest)[0] == pytest.approx(min(low for low, _ in ranges), rel=1e-12)
        assert d_range(largest)[1] == pytest.approx(max(high for _, high in ranges), rel=1e-12)


def test_lip_over_a_tv_ball_at_large_k_needs_no_vertices():
    """k = 128 (a TV ball with about 10^40 candidate vertices): the certificate comes from the two extreme priors and
    is at least the certificate at the centre and at random priors inside the ball."""
    rng = np.random.default_rng(3)
    k, radius = 128, 0.05
    mechanism = SubsetLIP(1.0, k)
    centre = rng.dirichlet(np.ones(k) * 5)
    worst = mechanism.certificate_at(ld.PriorSet.tv_ball(centre, radius)).epsilon
    assert worst >= mechanism.certificate_at(centre).epsilon
    for _ in range(20):  # move at most the radius of mass between two random values
        inside = centre.copy()
        giver, taker = rng.choice(k, 2, replace=False)
        moved = min(radius, inside[giver]) * rng.random()
        inside[giver] -= moved
        inside[taker] += moved
        assert mechanism.certificate_at(inside).epsilon <= worst + 1e-12
