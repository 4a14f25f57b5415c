"""Local hashing designed under LIP (docs/math.md §7.2): the per-hash condition against the whole (hash, bit) table,
the cell certificate against channels that break it, the sampler against its channels, the figures against
brute force over the table, the estimate on a drifted population, files, the design entry point and errors."""

import math
from fractions import Fraction

import numpy as np
import pytest
from helpers import zipf

import lipdesign as ld
from lipdesign.errors import ShrinkageWarning
from lipdesign.mechanisms import local_hashing
from lipdesign.mechanisms.closed_forms import binary_lip_flips
from lipdesign.mechanisms.local_hashing import LocalHashing, cell_channels
from lipdesign.simulation import drifted
from lipdesign.verification import exp_bounds


def family_table(mechanism):
    """Independently of the mechanism's code: the hashes ((a x + b) mod p) mod 2 listed from their seeds, each with
    the 2 x 2 channel ``mechanism.channel(seed)``, as the k x (2 hashes) table Pr[seed s, bit y | x], and the
    per-hash unbiased estimator of 1[h(X) = h(v)] (the inverse channel) on every column."""
    p, k = mechanism.prime, mechanism.k
    columns, estimators = [], []
    for seed in range(p * (p - 1)):
        a, b = 1 + seed // p, seed % p
        buckets = np.array([(a * x + b) % p % 2 for x in range(k)])
        np.testing.assert_array_equal(mechanism.hash_values(seed), buckets)
        channel = mechanism.channel(seed)
        inverse = np.linalg.inv(channel)  # channel @ inverse = I: inverse[y, z]
        for y in (0, 1):
            columns.append(channel[buckets, y] / (p * (p - 1)))
            estimators.append(inverse[y, buckets])
    return np.array(columns).T, np.array(estimators).T


@pytest.mark.parametrize(("prior", "epsilon"), [(zipf(4), 1.0), ([0.05, 0.15, 0.3, 0.5, 0.0001 + 0.0], 0.5),
                                                (zipf(7, 2.0), 2.0), ([0.5, 0.5], 4.0)])
def test_every_hash_is_lip_and_the_whole_table_agrees(prior, epsilon):
    """docs/math.md §7.2: the mechanism is eps-LIP for X exactly when each hash's channel is eps-LIP under the
    induced bucket masses. Per hash, in rational arithmetic from the prior's floats: the largest ratio equals that
    of the whole (hash, bit) table verified by the generic exact verifier, and it is within the claim."""
    prior = np.array(prior) / np.sum(prior)
    mechanism = LocalHashing(ld.LIP(epsilon), prior)
    exact_prior = [Fraction(float(x)) for x in mechanism.prior.probabilities]
    total = sum(exact_prior)
    worst = Fraction(0)
    for seed in range(mechanism.hashes):
        buckets = mechanism.hash_values(seed)
        channel = [[Fraction(float(v)) for v in row] for row in mechanism.channel(seed)]
        masses = [sum(w for w, z in zip(exact_prior, buckets) if z == bucket) / total for bucket in (0, 1)]
        for y in (0, 1):
            output = masses[0] * channel[0][y] + masses[1] * channel[1][y]
            for bucket in (0, 1):
                if masses[bucket]:
                    ratio = channel[bucket][y] / output
                    worst = max(worst, ratio, 1 / ratio)
    assert worst <= exp_bounds(epsilon)[0]
    table, _ = family_table(mechanism)
    whole = ld.verify(table, ld.LIP(epsilon), mechanism.prior)
    assert whole.passed and whole.epsilon == pytest.approx(math.log(worst), abs=1e-12)
    assert whole.epsilon <= mechanism.verify().epsilon <= epsilon


def test_the_cell_certificate_refuses_channels_that_break_it(monkeypatch):
    """Each cell's channel must hold over its whole (widened) cell: the §6 closed form at each cell's middle, at eps
    itself, holds at the middle only, and the exact check of the cell ends catches it."""
    def at_the_middle(epsilon, cells, widen, realised):
        middle = (np.arange(cells) + 0.5) / cells
        rare, common = binary_lip_flips(np.minimum(middle, 1 - middle), epsilon)
        below = middle < 0.5
        return np.where(below, rare, common), np.where(below, common, rare)

    monkeypatch.setattr(local_hashing, "cell_flips", at_the_middle)
    cell_channels.cache_clear()
    try:
        with pytest.raises(ld.VerificationError, match="cell channels are not LIP with eps=1"):
            LocalHashing(ld.LIP(1.0), zipf(5))
    finally:
        cell_channels.cache_clear()


def test_the_cells_cost_almost_nothing_against_the_closed_form_per_hash():
    """The channel of a cell is the §6 closed form at a slightly smaller epsilon: its flips are within 1e-3 of the
    closed form at the cell's masses, and n x sum Var is within 0.1 % of what the exact per-hash closed form gives
    (computed here on the whole table with the §6 flips at each hash's own mass)."""
    epsilon, prior = 1.0, zipf(9)
    mechanism = LocalHashing(ld.LIP(epsilon), prior)
    flip0, flip1, _ = cell_channels(epsilon)
    masses = (np.arange(local_hashing.CELLS) + 0.5) / local_hashing.CELLS
    rare, common = binary_lip_flips(np.minimum(masses, 1 - masses), epsilon)
    below = masses < 0.5
    assert np.abs(flip0 - np.where(below, rare, common)).max() < 1e-3
    assert np.abs(flip1 - np.where(below, common, rare)).max() < 1e-3
    ideal = 0.0
    for seed in range(mechanism.hashes):
        buckets = mechanism.hash_values(seed)
        mass = prior[buckets == 0].sum()
        f_rare, f_common = binary_lip_flips(min(mass, 1 - mass), epsilon)
        f0, f1 = (f_rare, f_common) if mass < 0.5 else (f_common, f_rare)
        inverse = np.linalg.inv(np.array([[1 - f0, f0], [f1, 1 - f1]]))
        for y, chance in ((0, mass * (1 - f0) + (1 - mass) * f1), (1, mass * f0 + (1 - mass) * (1 - f1))):
            ideal += chance * (inverse[y, buckets] ** 2).sum()
    c = mechanism.collision
    ideal = (ideal / mechanism.hashes - (prior + (1 - prior) * c**2).sum()) / (1 - c) ** 2  # given the values
    assert ideal < mechanism.mse < ideal * 1.001


@pytest.mark.parametrize("prior", [zipf(4), zipf(6, 0.5), [0.3, 0.7]])
def test_the_figures_are_those_of_the_whole_table(prior):
    """variance (unbiased and MMSE), expected_estimate and the Bayes risk, against the same figures computed on the
    k x (2 hashes) table: the unbiased estimator is identity in expectation there; given the users' values (a
    share f_x holds x) the variance of a per-report estimate e is sum_x f_x (sum_col Q[x, col] e(col)^2 -
    (sum_col Q[x, col] e(col))^2); the Bayes risk is 1 - sum_col sum_x (P_x Q[x, col])^2 / (P . q_col)
    (docs/math.md §4)."""
    prior = np.array(prior)
    mechanism = LocalHashing(ld.LIP(1.0), prior)
    table, inverse = family_table(mechanism)
    c = mechanism.collision
    estimator = (inverse - c) / (1 - c)
    np.testing.assert_allclose(table @ estimator.T, np.eye(prior.size), atol=1e-12)
    truth = drifted(prior, 0.2)
    law = truth @ table
    def given_values(frequencies, per_report):
        return frequencies @ (table @ (per_report**2).T - (table @ per_report.T) ** 2)

    np.testing.assert_allclose(mechanism.variance(truth, n=10), given_values(truth, estimator) / 10, rtol=1e-10)
    joint = prior[:, None] * table
    posterior = joint / joint.sum(axis=0)
    np.testing.assert_allclose(mechanism.expected_estimate(truth, method="mmse"), posterior @ law, rtol=1e-10)
    np.testing.assert_allclose(mechanism.variance(truth, method="mmse"), given_values(truth, posterior),
                               rtol=1e-9, atol=1e-15)
    assert mechanism.bayes_risk == pytest.approx(1 - ((joint**2).sum(axis=0) / joint.sum(axis=0)).sum(), rel=1e-12)
    assert mechanism.mse == pytest.approx(float(given_values(prior, estimator).sum()), rel=1e-10)


def test_the_sampler_draws_each_hash_uniformly_and_then_its_channel():
    """40000 users holding value 2: every seed appears about 1/hashes of the time and, given its seed, y = 1 with
    the channel's probability for the bucket of 2 (each within 5 binomial sd)."""
    mechanism = LocalHashing(ld.LIP(1.0), zipf(4))
    n = 40_000
    reports = mechanism.perturb(np.full(n, 2), rng=8)
    assert reports.dtype == mechanism.report_dtype
    counts = np.bincount(reports["seed"], minlength=mechanism.hashes)
    share = 1 / mechanism.hashes
    assert counts.size == mechanism.hashes
    assert np.abs(counts - n * share).max() < 5 * math.sqrt(n * share * (1 - share))
    for seed in range(mechanism.hashes):
        chance = mechanism.channel(seed)[mechanism.hash_values(seed)[2], 1]
        ones = reports["y"][reports["seed"] == seed]
        assert abs(ones.mean() - chance) < 5 * math.sqrt(chance * (1 - chance) / ones.size), seed


@pytest.mark.parametrize(("prior", "epsilon"), [(zipf(6), 1.0), ([0.3, 0.7], 4.0)])
def test_the_unbiased_estimate_follows_a_drifted_population_and_the_mmse_does_not(prior, epsilon):
    """Designed at a prior, used on a population drifted by TV 0.3 (the same users each run): the unbiased estimate
    is within its stated sd, the sd given the users' values is the empirical one (at k = 2, eps = 4 the variance of
    users drawn at random would be 28 times larger), its plug-in intervals cover at their rate, and the MMSE estimate
    stays near the prior (docs/math.md §11)."""
    prior = np.array(prior)
    mechanism = ld.design(prior, ld.LIP(epsilon), family="hashing", baselines=False)
    truth = drifted(prior, 0.3)
    result = ld.simulate(mechanism, 20_000, rng=4, truth=truth, repetitions=100, drift=False, level=0.9)
    assert result.largest_z < 4, result.summary()
    assert (result.coverage >= 0.9 - 4 * math.sqrt(0.09 / 100)).all() and result.coverage.mean() <= 0.96
    assert np.allclose(result.empirical_std, result.std, rtol=0.3), result.summary()
    values = np.random.default_rng(5).choice(prior.size, size=50_000, p=truth)
    with pytest.warns(ShrinkageWarning, match="pulled toward it"):
        mmse = mechanism.estimate(mechanism.perturb(values, rng=6), method="mmse")
    assert not np.isfinite(mmse.standard_errors).any()
    population = np.bincount(values, minlength=prior.size) / values.size
    centre = mechanism.expected_estimate(population, method="mmse")
    assert (np.abs(mmse - centre) < 5 * np.sqrt(mechanism.variance(population, values.size, method="mmse"))).all()
    if epsilon <= 1:  # a noisy channel: the posterior mean leans on the prior (at eps = 4, k = 2 it barely needs to)
        assert np.abs(mmse - prior).sum() < np.abs(mmse - truth).sum()


def test_beyond_the_exact_enumeration_the_average_is_sampled_and_says_so(monkeypatch):
    """k = 400 (p = 401, 160400 hashes): the figures average over a seeded sample of hashes, the summary says how
    many, and the sampled n x sum Var is within 4 of its standard errors of the exact average over every hash."""
    prior = zipf(400)
    sampled = LocalHashing(ld.LIP(1.0), prior)
    assert sampled.hashes == 401 * 400 and "16384 hashes sampled" in sampled.variance_basis
    assert sampled.mse_error > 0 and "sampled hashes" in sampled.summary()
    monkeypatch.setattr(local_hashing, "EXACT_HASHES", 401 * 400)
    exact = LocalHashing(ld.LIP(1.0), prior)
    assert exact.mse_error == 0 and exact.variance_basis.startswith("exact")
    assert abs(sampled.mse - exact.mse) < 4 * sampled.mse_error


def test_design_gives_local_hashing_under_lip_and_olh_under_ldp():
    prior = zipf(8)
    designed = ld.design(prior, ld.LIP(1.0), family="hashing")
    assert isinstance(designed, LocalHashing) and designed.verify().passed
    baselines = designed.provenance["baselines"]
    assert "optimal RR table (LIP)" in baselines and designed.mse > baselines["optimal RR table (LIP)"]
    assert designed.mse < baselines["OLH"]  # the same epsilon, under LDP (stronger)
    assert designed.optimality["lower_bound"] < designed.mse
    summary = designed.summary()
    assert "local hashing, LIP eps=1, k=8" in summary and "exact: every one of the 110 hashes" in summary
    ldp = ld.design(prior, ld.LDP(1.0), family="hashing")
    assert isinstance(ldp, ld.mechanisms.OLH) and ldp.epsilon == 1.0


def test_a_hashing_file_round_trips(tmp_path):
    mechanism = ld.design(zipf(5), ld.LIP(1.0), family="hashing", baselines=False)
    path = tmp_path / "hashing.json"
    mechanism.to_json(path)
    loaded = ld.load(path)
    assert loaded == mechanism and loaded.verify().passed and loaded.mse == mechanism.mse
    values = np.random.default_rng(1).choice(5, size=1000, p=zipf(5))
    np.testing.assert_array_equal(loaded.perturb(values, rng=2), mechanism.perturb(values, rng=2))
    document = mechanism.to_dict()
    document["parameters"]["g"] = 4
    with pytest.raises(ld.FormatError, match="parameters/g"):
        ld.io.mechanism_from_dict(document, "tampered")


def test_what_the_hashing_family_refuses():
    with pytest.raises(ld.ValidationError, match="family='hashing' is designed under ld.LIP"):
        ld.design(zipf(4), ld.LIP(1.0, prior_set=ld.PriorSet.tv_ball(zipf(4), 0.1)), family="hashing")
    with pytest.raises(ld.ValidationError, match="designed for ld.Frequencies"):
        ld.design(zipf(4), ld.LIP(1.0), ld.Mean([0, 1, 2, 3]), family="hashing")
    with pytest.raises(ld.ValidationError, match="g is 3; local hashing under LIP is built for g = 2"):
        LocalHashing(ld.LIP(1.0), zipf(4), g=3)
    mechanism = LocalHashing.example()
    with pytest.raises(ld.ValidationError, match=r"^seed is 20; it must be"):
        mechanism.channel(20)
    bad = mechanism.perturb([0, 1], rng=0)
    bad["y"][1] = 2
    with pytest.raises(ld.ValidationError, match=r"reports\['y'\]"):
        mechanism.aggregate(bad)
    bad = mechanism.perturb([0, 1], rng=0)
    bad["seed"][0] = mechanism.hashes
    with pytest.raises(ld.ValidationError, match=r"reports\['seed'\]"):
        mechanism.aggregate(bad)
    with pytest.raises(ld.ValidationError, match="columns, built for at most"):
        LocalHashing(ld.LIP(1.0), zipf(70)).privacy_table()


def test_gls_and_the_mle_through_the_whole_table():
    """Up to 4096 hashes the counts of every (seed, bit) are kept: GLS over the whole family (the best linear
    unbiased estimate at the design prior, so no worse there than the per-hash inversion) and the MLE come from the
    equivalent table; both track a drifted population within their stated errors."""
    prior = zipf(8)
    mechanism = ld.design(prior, ld.LIP(1.0), family="hashing", baselines=False)
    table = mechanism.as_table()
    np.testing.assert_array_equal(table.table, mechanism.privacy_table())
    assert float(mechanism.variance(prior, method="gls").sum()) <= mechanism.mse
    truth = drifted(prior, 0.3)
    np.testing.assert_allclose(mechanism.expected_estimate(truth, method="gls"), truth, atol=1e-12)
    result = ld.simulate(mechanism, 20_000, rng=5, truth=truth, repetitions=60, drift=False, method="gls")
    assert result.largest_z < 4.5 and np.allclose(result.empirical_std, result.std, rtol=0.3), result.summary()
    reports = mechanism.perturb(np.random.default_rng(6).choice(8, size=30_000, p=truth), rng=7)
    aggregate = mechanism.aggregate(reports)
    assert aggregate["counts"].sum() == 30_000 and aggregate["counts"].size == 2 * mechanism.hashes
    mle = mechanism.estimate(aggregate, method="mle")
    assert (np.abs(mle - truth) < 5 * mle.standard_errors).all() and mle.method == "mle"
    large = LocalHashing(ld.LIP(1.0), zipf(70))
    with pytest.raises(ld.ValidationError, match="method needs the whole table"):
        large.estimate(large.perturb([0, 1, 2], rng=1), method="gls")


def test_pooled_hashing_with_more_buckets():
    """buckets = g > 2 (docs/math.md §7.2): one ray LP per hash of a public pool, the whole (hash, output) table
    repaired and verified exactly (so on every hash of the pool). With g = 2 over the whole family (k = 8: 110 hashes)
    it is the closed form's GLS; more buckets carry more than one bit, which pays at larger eps; under LDP it is
    OLH with g buckets."""
    from lipdesign.designer.local_hashing import pooled_hashing

    prior = ld.Prior(zipf(8))
    two = pooled_hashing(prior, ld.LIP(1.0), 2, baselines=False)
    closed_form = ld.design(prior, ld.LIP(1.0), family="hashing", baselines=False)
    assert two.mse == pytest.approx(float(closed_form.variance(prior.probabilities, method="gls").sum()), rel=1e-3)
    four = ld.design(prior, ld.LIP(4.0), family="hashing", buckets=4, baselines=False)
    eight = ld.design(prior, ld.LIP(4.0), family="hashing", buckets=8, baselines=False)
    assert isinstance(eight, ld.TableMechanism) and eight.verify().passed and four.verify().passed
    assert eight.mse < four.mse < ld.design(prior, ld.LIP(4.0), family="hashing", baselines=False).mse
    assert len(eight.provenance["hashes"]) == 110 and eight.provenance["buckets"] == 8
    ldp = ld.design(prior, ld.LDP(2.0), family="hashing", buckets=4)
    assert isinstance(ldp, ld.mechanisms.OLH) and ldp.g == 4
    with pytest.raises(ld.ValidationError, match="buckets is 9"):
        ld.design(prior, ld.LIP(1.0), family="hashing", buckets=9)


def test_buckets_belong_to_the_hashing_family():
    with pytest.raises(ld.ValidationError, match="buckets is 4; it sets the buckets of family='hashing'"):
        ld.design(zipf(4), ld.LIP(1.0), buckets=4)
