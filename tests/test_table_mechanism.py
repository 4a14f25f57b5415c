"""Designed mechanisms in use: perturb a population, estimate, and compare with theory (docs/math.md §4)."""

import math

import numpy as np
import pytest
from scipy import stats

import lipdesign as ld


def per_user_mmse_errors(mechanism, n, seed):
    """Per-user squared errors of the MMSE estimate E[f(X) | Y] for users drawn from the design prior, with the
    posterior computed here from the table (Bayes' rule, independent of the library's estimators)."""
    rng = np.random.default_rng(seed)
    prior, table = mechanism.prior.probabilities, mechanism.table
    values = rng.choice(prior.size, size=n, p=prior)
    reports = mechanism.perturb(values, rng=rng)
    joint = prior[:, None] * table
    posterior = (joint / joint.sum(axis=0)).T[reports]  # (n, k): Pr[X | Y = y_i]
    functions = mechanism.objective.functions(prior.size)
    return ((functions.T[values] - posterior @ functions.T) ** 2).sum(axis=1)


@pytest.fixture(scope="module")
def histogram_mechanism():
    return ld.design(ld.Prior([0.2, 0.3, 0.5], labels=["low", "mid", "high"]), ld.LIP(2.0))


def test_perturb_accepts_labels_and_indices_and_is_reproducible(histogram_mechanism):
    labels = ["low", "high", "mid"] * 1000
    by_label = histogram_mechanism.perturb(labels, rng=7)
    by_index = histogram_mechanism.perturb(np.array([0, 2, 1] * 1000), rng=7)
    assert np.array_equal(by_label, by_index)
    assert by_label.min() >= 0 and by_label.max() < histogram_mechanism.table.shape[1]
    with pytest.raises(ld.ValidationError, match="'huge'"):
        histogram_mechanism.perturb(["low", "huge"], rng=0)


def test_output_frequencies_match_the_table(histogram_mechanism):
    # Chi-square goodness of fit per input row; false alarm 1e-6 per row.
    n = 100_000
    for x in range(3):
        reports = histogram_mechanism.perturb(np.full(n, x), rng=100 + x)
        observed = np.bincount(reports, minlength=histogram_mechanism.table.shape[1])
        expected = n * histogram_mechanism.table[x]
        statistic = ((observed - expected) ** 2 / expected).sum()
        assert stats.chi2.sf(statistic, df=len(expected) - 1) > 1e-6


def test_empirical_mse_matches_theory_within_the_confidence_interval():
    # The per-user squared error is i.i.d.; a 99.99% interval around the empirical mean must hold the
    # theoretical MSE of docs/math.md §4 (false alarm 1e-4 per case).
    cases = [
        ld.design(ld.Prior([0.2, 0.3, 0.5]), ld.LIP(2.0), ld.BayesHistogram()),
        ld.design(ld.Prior([0.1, 0.2, 0.3, 0.4]), ld.LDP(1.0), ld.BayesSum([0, 1, 2, 3])),
        ld.design(ld.Prior([0.35, 0.3, 0.35]), ld.LIP(0.5, secret=ld.SecretModel([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]])),
                  ld.BayesHistogram()),
    ]
    for seed, mechanism in enumerate(cases):
        errors = per_user_mmse_errors(mechanism, 200_000, seed)
        half_width = stats.norm.ppf(0.5 + 0.9999 / 2) * errors.std(ddof=1) / math.sqrt(errors.size)
        low, high = errors.mean() - half_width, errors.mean() + half_width
        assert low <= mechanism.mse <= high, (mechanism.summary(), low, high)
        assert high - low < 0.1 * mechanism.mse  # the interval is informative


def test_estimates_recover_the_population(histogram_mechanism):
    prior = histogram_mechanism.prior.probabilities
    n = 200_000
    values = np.random.default_rng(5).choice(3, size=n, p=prior)
    truth = np.bincount(values, minlength=3) / n
    reports = histogram_mechanism.perturb(values, rng=6)
    table = histogram_mechanism.table
    # Unbiased (GLS) estimate: the covariance of the report frequencies is (diag(pi) - pi pi^T)/n with
    # pi = Q^T truth; propagate it through the linear estimator to get each coordinate's standard deviation.
    d_inv = np.diag(1 / (table.T @ prior))
    estimator = np.linalg.solve(table @ d_inv @ table.T, table @ d_inv)
    pi = table.T @ truth
    covariance = estimator @ ((np.diag(pi) - np.outer(pi, pi)) / n) @ estimator.T
    unbiased = histogram_mechanism.estimate(reports, method="unbiased")
    assert np.all(np.abs(unbiased - truth) <= 5 * np.sqrt(np.diag(covariance)))
    ibu = histogram_mechanism.estimate(reports, method="ibu")
    assert np.abs(ibu - truth).max() < 5 * np.sqrt(np.diag(covariance)).max()
    mmse = histogram_mechanism.estimate(reports, method="mmse")
    assert mmse.sum() == pytest.approx(1) and np.abs(mmse - truth).max() < 0.05
    consistent = histogram_mechanism.estimate(reports, method="unbiased", consistency="norm-sub")
    assert consistent.min() >= 0 and consistent.sum() == pytest.approx(1)


def test_weighted_sum_estimate_is_a_sum():
    mechanism = ld.design(ld.Prior([0.2, 0.8]), ld.LIP(0.6), ld.BayesSum([0.0, 1.0]))
    n = 100_000
    values = np.random.default_rng(1).choice(2, size=n, p=[0.2, 0.8])
    estimate = mechanism.estimate(mechanism.perturb(values, rng=2), method="unbiased")
    # Var of the unbiased sum for a binary channel: n * Var(report) / (1 - f0 - f1)^2 with f the flips.
    flips = mechanism.table[0, 1] + mechanism.table[1, 0]
    p1 = values.mean() * (1 - mechanism.table[1, 0]) + (1 - values.mean()) * mechanism.table[0, 1]
    sd = math.sqrt(n * p1 * (1 - p1)) / (1 - flips)
    assert abs(estimate - values.sum()) < 5 * sd


def test_unbiased_needs_a_full_rank_table():
    # This weighted-sum design merges four values into three outputs: it cannot be inverted.
    mechanism = ld.design(ld.Prior([0.1, 0.2, 0.3, 0.4]), ld.LIP(0.5), ld.BayesSum([0, 1, 2, 3]))
    assert mechanism.table.shape == (4, 3)
    reports = mechanism.perturb(np.zeros(100, dtype=int), rng=0)
    with pytest.raises(ld.ValidationError, match="rank"):
        mechanism.estimate(reports, method="unbiased", what="frequencies")
    # not identifiable: the likelihood is maximal on a ridge; the fit stops at a point of it, without errors
    estimate = mechanism.estimate(reports, method="ibu", what="frequencies")
    assert estimate.sum() == pytest.approx(1) and np.isnan(estimate.standard_errors).all()
    assert "no standard errors" in estimate.note and "rank" in estimate.note
    # the maximum's optimality conditions: g = Q (c/n / Q^T f) is at most 1, and 1 where f > 0
    observed = np.bincount(reports, minlength=3) / 100
    gradient = mechanism.table @ (observed / (mechanism.table.T @ estimate.frequencies))
    assert gradient.max() < 1 + 1e-9
    np.testing.assert_allclose(gradient[estimate.frequencies > 1e-9], 1, atol=1e-9)
    with pytest.raises(ld.ValidationError, match="method"):
        mechanism.estimate(reports, method="magic")


def test_the_summary_of_a_large_table_bounds_lip_over_the_drift_ball():
    """The TV ball around the design prior is kept implicitly, so the summary's drift line has its figure at any k
    (found using pooled hashing at k = 30, when the ball's vertices were listed). GRR at eps = 1 and a uniform prior:
    LIP at a prior q is max(1 - ln(1 + (e - 1) min q), ln(1 + (e - 1) max q)) (the output y = x against P(y)), and
    over the ball of radius 0.1 min q = max(0, 1/k - 0.1), max q = 1/k + 0.1."""
    for k in (5, 120):
        mechanism = ld.TableMechanism(ld.mechanisms.GRR(1.0, k).full_table(), ld.LIP(1.0), np.full(k, 1 / k))
        low, high = max(0.0, 1 / k - 0.1), 1 / k + 0.1
        worst = max(1 - np.log1p((np.e - 1) * low), np.log1p((np.e - 1) * high))
        summary = mechanism.summary().splitlines()
        line = summary[-1]
        assert line.startswith("  if X's prior is off by up to TV 0.1 from the design prior: LIP for X at worst ")
        assert float(line.split("at worst ")[1].split(" ")[0]) == pytest.approx(worst, abs=1e-4)
    # GRR's standard error at n: sqrt(Var / n), Var = q(1-q)/(p-q)^2 + f(1-p-q)/(p-q) at the frequency f = 1/k
    errors = next(line for line in summary if "standard errors" in line)
    p, q = np.e / (np.e + k - 1), 1 / (np.e + k - 1)
    variance = q * (1 - q) / (p - q) ** 2 + (1 / k) * (1 - p - q) / (p - q)
    error = f"{np.sqrt(variance / 1e6):.2g}"  # the same for every value: GRR is symmetric and the prior uniform
    assert errors.endswith(f"(design prior): {', '.join([error] * 20)}, ... (the first 20 of 120: smallest {error}, "
                           f"median {error}, largest {error}; mech.variance(n=...) gives them all)")
