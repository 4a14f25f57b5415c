"""The standard errors of a designed table's estimates against closed forms computed here (docs/math.md §11), at
the cases the mutation pass found untested (issue 23): the sum's errors (n x the mean's), and errors at a plug-in
population projected onto the simplex when the raw estimate of a rare or absent value is negative."""

import math

import numpy as np
import pytest

import lipdesign as ld

K = 4
VALUES = np.array([0.0, 1.0, 2.0, 5.0])


def square_table(epsilon=1.0, k=K):
    """An invertible k x k table (randomized response): the unbiased estimate is Q^-T (c/n), whatever its weights."""
    keep = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    table = np.full((k, k), (1 - keep) / (k - 1))
    np.fill_diagonal(table, keep)
    return table


def project(vector):
    """Euclidean projection onto the probability simplex (sort-based, Duchi et al. 2008)."""
    ordered = np.sort(vector)[::-1]
    cumulative = np.cumsum(ordered) - 1
    rho = np.nonzero(ordered - cumulative / np.arange(1, vector.size + 1) > 0)[0][-1]
    return np.maximum(vector - cumulative[rho] / (rho + 1), 0)


def report_covariance(table, frequencies, n):
    """Cov(c/n) given the users' values: (diag(Q^T f) - Q^T diag(f) Q) / n."""
    return (np.diag(table.T @ frequencies) - table.T @ (frequencies[:, None] * table)) / n


@pytest.fixture(scope="module")
def mechanism():
    return ld.TableMechanism(square_table(), ld.LDP(1.01), ld.Prior([0.4, 0.3, 0.2, 0.1]), ld.Mean(VALUES))


def counts_of(mechanism, reports):
    return np.bincount(np.asarray(reports), minlength=K)


def test_the_sum_and_its_errors_are_n_times_the_mean_by_the_delta_method(mechanism):
    values = np.random.default_rng(0).choice(K, size=5000, p=[0.1, 0.2, 0.3, 0.4])
    reports = mechanism.perturb(values, rng=1)
    n, observed = values.size, counts_of(mechanism, reports) / values.size
    table = mechanism.realized  # what perturb drew from; equal to the stored table up to 2^-53
    raw = np.linalg.solve(table.T, observed)
    weights = np.linalg.solve(table, VALUES)  # the unbiased linear estimator of the mean: Q w = values
    error = math.sqrt(weights @ report_covariance(table, project(raw), n) @ weights)
    total = mechanism.estimate(reports, what="sum")
    mean = mechanism.estimate(reports, what="mean")
    assert float(mean.values[0]) == pytest.approx(VALUES @ raw, rel=1e-6)
    assert float(mean.standard_errors[0]) == pytest.approx(error, rel=1e-6)
    assert float(total.values[0]) == pytest.approx(n * VALUES @ raw, rel=1e-6)
    assert float(total.standard_errors[0]) == pytest.approx(n * error, rel=1e-6)


def test_the_sum_intervals_cover_the_true_sum(mechanism):
    """300 seeded runs of 3000 users: the share of 95 % intervals that hold the true sum is 0.95 within 4 binomial
    standard deviations (0.05); errors left unscaled (the mean's) would cover almost never."""
    rng = np.random.default_rng(7)
    values = rng.choice(K, size=3000, p=[0.1, 0.2, 0.3, 0.4])
    truth = VALUES[values].sum()
    runs, covered = 300, 0
    for _ in range(runs):
        estimate = mechanism.estimate(mechanism.perturb(values, rng=rng), what="sum")
        low, high = estimate.confidence_interval(0.95)
        covered += bool(low <= truth <= high)
    assert abs(covered / runs - 0.95) <= 4 * math.sqrt(0.95 * 0.05 / runs), covered


def test_errors_at_a_negative_raw_estimate_are_those_at_its_projection():
    """At eps = 4 an absent value's output has little mass, so its plug-in variance depends on the projection."""
    mechanism = ld.TableMechanism(square_table(4.0), ld.LDP(4.01), ld.Prior([0.4, 0.3, 0.2, 0.1]))
    values = np.random.default_rng(3).choice(K - 1, size=500, p=[0.5, 0.3, 0.2])  # the last value is absent
    table = mechanism.realized

    def raw_of(reports):
        return np.linalg.solve(table.T, counts_of(mechanism, reports) / values.size)

    reports = min((mechanism.perturb(values, rng=seed) for seed in range(40)), key=lambda r: raw_of(r).min())
    raw = raw_of(reports)
    assert raw.min() < 0, "no seed gave a negative raw estimate"
    inverse = np.linalg.inv(table.T)
    at = {name: np.sqrt(np.diag(inverse @ report_covariance(table, plug_in, values.size) @ inverse.T))
          for name, plug_in in (("projection", project(raw)), ("raw", raw))}
    assert np.abs(at["projection"] / at["raw"] - 1).max() > 1e-3  # far above the rel=1e-6 compared below
    estimate = mechanism.estimate(reports, what="frequencies")
    assert np.asarray(estimate.raw) == pytest.approx(raw, abs=1e-9)
    assert np.asarray(estimate.standard_errors) == pytest.approx(at["projection"], rel=1e-6)


def test_what_histogram_is_the_old_name_of_what_frequencies():
    mechanism = ld.design(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0), baselines=False)
    reports = mechanism.perturb(np.arange(300) % 3, rng=4)
    with pytest.warns(DeprecationWarning, match='what="frequencies"'):
        old = mechanism.estimate(reports, what="histogram")
    assert np.array_equal(old.values, mechanism.estimate(reports, what="frequencies").values)
