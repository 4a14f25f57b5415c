"""What users compute from a design (docs/math.md §11): ld.Estimate with standard errors and intervals that cover,
the mean of a c-optimal design, the MMSE estimate only by name, LIP at other priors, and the summary's honesty."""

import math
import warnings

import numpy as np
import pytest
from helpers import zipf
from scipy import stats

import lipdesign as ld
from lipdesign.simulation import drifted


def simplex_projection(v):
    """The Euclidean projection onto the probability simplex (sort, find the threshold), written here."""
    u = np.sort(v)[::-1]
    cumulative = np.cumsum(u) - 1
    rho = np.flatnonzero(u - cumulative / np.arange(1, v.size + 1) > 0)[-1]
    return np.maximum(v - cumulative[rho] / (rho + 1), 0)


@pytest.fixture(scope="module")
def design():
    return ld.design(ld.Prior(zipf(6), labels=list("abcdef")), ld.LIP(1.0))


def test_the_default_objective_is_the_population_histogram(design):
    assert design.objective == ld.Frequencies() and design.default_method == "unbiased"
    with pytest.warns(DeprecationWarning, match="removed in 0.4.0") as caught:  # the old names, deprecated
        assert ld.Histogram is ld.BayesHistogram and ld.WeightedSum is ld.BayesSum
    assert [w.filename for w in caught] == [__file__] * 2  # the warning points at the caller
    assert ld.BayesHistogram().to_dict() == {"kind": "histogram"}  # files written before keep their meaning


def test_an_estimate_is_an_array_with_standard_errors(design):
    reports = design.perturb(np.repeat(np.arange(6), 1000), rng=1)
    estimate = design.estimate(reports)
    assert isinstance(estimate, ld.Estimate) and estimate.n == 6000 and estimate.method == "unbiased"
    assert np.array_equal(np.asarray(estimate), estimate.frequencies) and estimate.sum() == pytest.approx(1)
    assert np.allclose(estimate - 1 / 6, estimate.values - 1 / 6) and estimate[2] == estimate.values[2]
    # the plug-in errors, given the users' values: the covariance of the report frequencies at the estimate
    # projected onto the simplex, through the GLS matrix, computed here from the table (B = M^-1 Q D^-1 at the
    # design prior, docs/math.md §11)
    q, p = design.table, design.prior.probabilities
    d = q.T @ p
    b = np.linalg.inv(q @ np.diag(1 / d) @ q.T) @ q @ np.diag(1 / d)
    raw = b @ (np.bincount(reports, minlength=q.shape[1]) / reports.size)
    f = simplex_projection(raw)
    covariance = (np.diag(q.T @ f) - q.T @ np.diag(f) @ q) / reports.size
    expected = np.sqrt(np.diag(b @ covariance @ b.T))
    assert np.allclose(estimate.standard_errors, expected, rtol=1e-10)
    low, high = estimate.confidence_interval(0.9)
    z = stats.norm.ppf(0.95)
    assert np.allclose(high - low, np.minimum(estimate.values + z * expected, 1) -
                       np.maximum(estimate.values - z * expected, 0))
    with pytest.raises(ld.ValidationError, match="level is 1.5; it must lie strictly between 0 and 1"):
        estimate.confidence_interval(1.5)
    assert "frequency[a]" in estimate.summary() and "interval" in estimate.summary()


def test_mmse_only_by_name_with_a_warning_and_no_intervals(design):
    reports = design.perturb(np.zeros(500, dtype=int), rng=2)
    with pytest.warns(ld.errors.ShrinkageWarning, match="toward"):
        mmse = design.estimate(reports, method="mmse")
    assert np.isnan(mmse.standard_errors).all()
    with pytest.raises(ld.ValidationError, match="no standard errors"):
        mmse.confidence_interval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default estimate never warns
        design.estimate(reports)


def test_mle_and_consistency_keep_the_errors_honest(design):
    values = np.random.default_rng(3).choice(6, size=3000, p=drifted(zipf(6)))
    reports = design.perturb(values, rng=4)
    mle = design.estimate(reports, method="mle")
    assert (mle.values >= 0).all() and mle.sum() == pytest.approx(1)
    assert np.isfinite(mle.standard_errors).all()
    assert np.allclose(mle.values, design.estimate(reports, method="ibu").values)  # "ibu" is the old name
    raw = design.estimate(reports)
    projected = design.estimate(reports, consistency="norm-sub")
    assert np.array_equal(projected.raw, raw.values) and (projected.values >= 0).all()
    truth = np.bincount(values, minlength=6) / values.size
    # a Euclidean projection onto the simplex never moves the estimate away from a truth inside it
    assert np.sum((projected.values - truth) ** 2) <= np.sum((raw.values - truth) ** 2) + 1e-15


def test_an_mle_at_the_edge_says_what_its_errors_mean(design):
    """A value absent from the population: the MLE puts it at 0 and its note (in print(estimate) too) says the
    large-sample errors do not hold there; the simulation's summary says so beside its theory column."""
    truth = zipf(6).copy()
    truth[5] = 0.0
    truth /= truth.sum()
    values = np.random.default_rng(9).choice(6, size=20_000, p=truth)
    # a perturbation stream independent of the values' (the same seed for both correlated them); about half the
    # perturbations put f at 0 (9 of rng = 100..119): this one
    estimate = design.estimate(design.perturb(values, rng=101), method="mle")
    assert estimate.values[5] == 0 and "note: the MLE puts frequency[f] at 0" in str(estimate)
    assert "if a true frequency is 0" in estimate.note
    result = ld.simulate(design, 20_000, rng=3, truth=truth, repetitions=5, method="mle", drift=False)
    assert "where the truth is 0 the MLE sits at the edge" in result.summary()
    assert repr(result).startswith("Simulation(20000 users") and str(result) == result.summary()


def test_intervals_cover_at_their_nominal_rate_under_drift():
    """Design at the prior, estimate a population TV 0.2 away: over 300 seeded repetitions on the same users every
    frequency's 90% interval holds the truth at least 90% of the time (less 4 binomial sd, Bonferroni-safe) and not
    vacuously more, and the estimate stays unbiased (z of the mean estimate within 4); the same for the MLE."""
    mechanism = ld.design(zipf(5), ld.LIP(1.0), baselines=False)
    result = ld.simulate(mechanism, 4000, rng=11, truth=drifted(zipf(5)), repetitions=300, level=0.9, drift=False)
    assert result.population == "the given truth" and result.interval.startswith("the estimate's plug-in")
    floor = 0.9 - 4 * math.sqrt(0.9 * 0.1 / 300)
    assert (result.coverage >= floor).all(), result.summary()
    assert result.coverage.mean() <= 0.95, result.summary()  # near nominal, not vacuous
    assert result.largest_z < 4, result.summary()
    assert np.allclose(result.empirical_std, result.std, rtol=0.25)  # 300 draws: sd of an sd is about 4 %
    mle = ld.simulate(mechanism, 4000, rng=12, truth=drifted(zipf(5)), repetitions=300, level=0.9, drift=False,
                      method="mle")
    assert (mle.coverage >= floor).all() and mle.largest_z < 4, mle.summary()


def test_the_default_simulation_shows_the_shrinkage_of_mmse():
    mechanism = ld.design(zipf(5), ld.LIP(1.0), ld.BayesHistogram(), baselines=False)
    with pytest.warns(ld.errors.ShrinkageWarning):
        result = ld.simulate(mechanism, 20_000, rng=5, repetitions=5)
    assert result.drifted is not None and "drifted" in result.drifted.population
    # on the drifted population the MMSE estimate is off by far more than its own spread
    assert np.abs(result.drifted.bias).max() > 10 * result.drifted.std.max()
    unbiased = ld.simulate(mechanism, 20_000, rng=5, repetitions=5, method="unbiased")
    assert np.abs(unbiased.drifted.bias).max() < 5 * unbiased.drifted.std.max() / math.sqrt(5) + 1e-12
    with pytest.raises(ld.ValidationError, match="truth has 3 entries"):
        ld.simulate(mechanism, 100, truth=[0.2, 0.3, 0.5])


def test_a_mean_design_estimates_the_mean_even_from_a_rank_deficient_table():
    """c-optimal designs may drop information the mean does not need (docs/math.md §11)."""
    prior, values = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.0, 1.0, 2.0, 3.0])
    mechanism = ld.design(prior, ld.LDP(1.0), ld.Mean(values), baselines=False)
    assert mechanism.objective == ld.Mean(values)
    users = np.random.default_rng(7).choice(4, size=40_000, p=[0.4, 0.3, 0.2, 0.1])
    estimate = mechanism.estimate(mechanism.perturb(users, rng=8))
    assert estimate.kind == "mean" and estimate.names == ["mean"]
    truth = values[users].mean()
    assert abs(float(estimate) - truth) < 5 * float(estimate.standard_errors[0])
    assert float(mechanism.variance(np.bincount(users) / users.size, users.size, what="mean")) == pytest.approx(
        float(estimate.standard_errors[0]) ** 2, rel=0.2)
    total = mechanism.estimate(mechanism.perturb(users, rng=8), what="sum")
    assert float(total) == pytest.approx(float(estimate) * users.size)
    with pytest.raises(ld.ValidationError, match="objective.values are all equal"):
        ld.design(prior, ld.LIP(1.0), ld.Mean([2.0] * 4))


def test_lip_at_other_priors_is_the_worst_over_the_ball_and_capped_by_ldp(design):
    ball = ld.PriorSet.tv_ball(design.prior.probabilities, 0.1)
    worst = ld.verify(design, prior=ball)
    at_vertices = max(ld.verify(design, prior=vertex).epsilon for vertex in ball.vertices)
    assert worst.epsilon == pytest.approx(at_vertices, rel=1e-12)
    assert design.epsilon < worst.epsilon <= design.epsilons["LDP"] and not worst.passed
    assert ld.verify(design, prior=design.prior).epsilon == pytest.approx(design.epsilons["LIP for X"])
    with pytest.raises(ld.ValidationError, match="eps-LIP at every prior"):
        ld.verify(ld.mechanisms.GRR(1.0, 6), prior=design.prior)


def test_the_summary_says_what_the_figures_mean(design):
    text = design.summary()
    for phrase in ("2 eps-LDP", "unbiased estimate", "given the users' values", "at eps=2 (the LDP level",
                   "subset selection", "OLH", "OUE", "GRR", "lower bound", "at n = 1e+06", "off by up to TV 0.1"):
        assert phrase in text, phrase
    counts = np.random.default_rng(2).multinomial(200, zipf(6))
    bounded = ld.design(counts / 200, ld.LIP(1.0, prior_set=ld.PriorSet.from_counts(counts)), baselines=False)
    radius = bounded.notion.prior_set.parameters["radius"]
    assert f"eps-LIP for X holds at every prior of the set, the TV ball of radius {radius:.3g}" in bounded.summary()
    assert "if X's prior is off by up to TV 0.1 from the design prior" in bounded.summary()
    from lipdesign.demo import scenario

    prior, secret = scenario()
    latent = ld.design(prior, ld.LIP(1.0, secret=secret), baselines=False)
    revealed = latent.revealed()
    assert (revealed >= 0.5).sum() >= 1 and "WARNING: the table protects the secret, not X" in latent.summary()
    # revealed[x] is the chance that a report pins x down: computed here from Bayes' rule
    joint = prior.probabilities[:, None] * latent.table
    posterior = joint / joint.sum(axis=0)
    assert np.allclose(revealed, (latent.table * (posterior >= 0.99)).sum(axis=1))


def test_variance_has_one_signature_on_every_frequency_family():
    prior = zipf(4)
    for mechanism in (ld.design(prior, ld.LIP(1.0), baselines=False), ld.mechanisms.GRR(1.0, 4),
                      ld.mechanisms.OUE(1.0, 4), ld.mechanisms.OLH(1.0, 4)):
        per_user = mechanism.variance(prior)
        assert np.allclose(mechanism.variance(prior, n=100) * 100, per_user)
        assert mechanism.variance().shape == (4,)
    table = ld.design(prior, ld.LIP(1.0), baselines=False)
    assert np.allclose(table.variance(), table.variance(prior))  # the default truth of a design is its prior
    assert table.variance().sum() == pytest.approx(table.mse)


@pytest.mark.parametrize("values", [[0, 0, 1, 1, 1], [1, 0, 0, 0, 0], [0, 1, 0, 1, 0]])
def test_the_mean_of_an_indicator_is_randomized_response_on_the_bit_under_ldp(values):
    """A proportion's c-optimal design has a singular information matrix: under eps-LDP it is binary randomized
    response on the indicator, n Var = e^eps/(e^eps - 1)^2 given the values (each report is a Bernoulli with
    p(1 - p) = e/(1 + e)^2, divided by (2p - 1)^2), whatever the prior; LIP does no worse."""
    e = math.exp(1.0)
    ldp = ld.design(zipf(5), ld.LDP(1.0), ld.Mean(values), baselines=False)
    assert ldp.mse == pytest.approx(e / (e - 1) ** 2, rel=1e-6) and ldp.verify().passed
    lip = ld.design(zipf(5), ld.LIP(1.0), ld.Mean(values))
    assert lip.mse <= ldp.mse * (1 + 1e-9) and lip.baselines["optimal LDP"] == pytest.approx(ldp.mse, rel=1e-9)


@pytest.mark.parametrize("family", ["rr", "unary", "hashing"])
def test_variance_defaults_to_the_design_prior_in_every_designed_family(family):
    """variance() and expected_estimate() with no frequencies are at the design prior for every designed family
    (UnaryEncoding used the uniform distribution), and that differs from the uniform one at a skewed prior."""
    prior = ld.Prior([0.55, 0.25, 0.12, 0.08])
    mechanism = ld.design(prior, ld.LIP(1.0), family=family, baselines=False)
    np.testing.assert_array_equal(mechanism.variance(), mechanism.variance(prior.probabilities))
    np.testing.assert_array_equal(mechanism.expected_estimate(), mechanism.expected_estimate(prior.probabilities))
    assert not np.allclose(mechanism.variance(), mechanism.variance(np.full(4, 0.25)))


def test_a_worst_case_lip_summary_says_it_holds_at_every_prior():
    prior = ld.Prior([0.5, 0.3, 0.2])
    text = ld.design(prior, ld.WorstCaseLIP(1.0), baselines=False).summary()
    assert "WC-LIP for X holds at every prior of X: it is eps-LDP" in text and "at the design prior; it" not in text
    secret = ld.SecretModel([[0.6, 0.3, 0.1], [0.2, 0.3, 0.5]], [0.75, 0.25])
    text = ld.design(ld.Prior(secret.marginal), ld.WorstCaseLIP(1.0, secret=secret), baselines=False).summary()
    assert "WC-LIP protects the latent secret (2 values) at every prior of X, not X itself" in text


def test_an_estimate_summary_says_when_a_consistency_step_changed_the_values():
    raw = np.array([-0.02, -0.02, 1.04])
    unbiased = ld.Estimate(raw, [0.1, 0.09, 0.1], n=60, method="unbiased")
    assert "unbiased values may fall outside [0, 1]" in unbiased.summary()
    assert "made consistent" not in unbiased.summary()
    projected = ld.Estimate([0.0, 0.0, 1.0], [0.1, 0.09, 0.1], n=60, method="unbiased", raw=raw)
    heading = projected.summary().splitlines()[0]
    assert heading.endswith("made consistent (in [0, 1], summing to 1); the errors and intervals are those of the "
                            "values before that step")
    assert "may fall outside" not in heading


def test_an_empty_estimate_has_empty_intervals():
    """A search that finds nothing (TreeHist with no prefix above its threshold) gives an empty estimate: its
    intervals are empty too, not an error about standard errors it does not need."""
    low, high = ld.Estimate([], [], n=10, method="unbiased", names=[]).confidence_interval()
    assert low.size == high.size == 0
    with pytest.raises(ld.ValidationError, match="no standard errors"):
        ld.Estimate([0.5], [np.nan], n=10, method="mmse").confidence_interval()
