"""Standard errors of the numeric families' means from their Aggregate (docs/math.md §15, Proposition 15.3): the
sample variance s^2 of the per-user terms over sqrt(n). Over repeated perturbations of one population whose values
differ, the mean of s^2 / n matches (1/n^2) sum Var(Y_i) + (1/(n (n - 1))) sum (mu_i - mu_bar)^2, with sum Var(Y_i)
from the mechanism's own exact ``variance``; the intervals cover at least as often as the level; the "squares"
statistic survives JSON, merges and the command line; fewer than 2 reports give nan, not a crash."""

import json
import warnings

import numpy as np
import pytest
from helpers import lipdesign
from scipy import stats

from lipdesign.errors import ValidationError
from lipdesign.io import load
from lipdesign.mechanisms import Aggregate, Duchi, HarmonyMixed, HarmonyNumeric, Hybrid, Laplace, Piecewise
from lipdesign.mechanisms.estimate import sample_standard_errors
from lipdesign.mechanisms.sampling import public_index
from lipdesign.reports import read_reports

#: Users per repetition and repetitions: about 0.2 s per family.
USERS, REPETITIONS = 1000, 400

FAMILIES = {
    "laplace": lambda: Laplace(1.0, 2, grid=16),
    "duchi": lambda: Duchi(1.0, 3),
    "harmony-numeric private": lambda: HarmonyNumeric(2.0, 3),
    "harmony-numeric public": lambda: HarmonyNumeric(2.0, 3, coordinates="public", seed=7),
    "piecewise": lambda: Piecewise(3.0, 2, grid=16),
    "hybrid": lambda: Hybrid(3.0, 2, grid=16),
    "harmony-mixed": lambda: HarmonyMixed(1.0, ["numeric", 3, "numeric"], m=8, seed=5),
}
FLOAT_FAMILIES = ["laplace", "piecewise", "hybrid"]


def population(mechanism, n, rng, shared=False):
    """Values that differ a lot (two clusters, near -0.9 and 0.6), or, ``shared``, one value for every user; a mixed
    tuple's categorical attribute takes categories 0..2."""
    d = mechanism.d
    values = np.full((n, d), 0.3) if shared else \
        np.clip(rng.choice([-0.9, 0.6], (n, d)) + rng.uniform(-0.1, 0.1, (n, d)), -1.0, 1.0)
    if isinstance(mechanism, HarmonyMixed):
        for j in mechanism.categorical:
            values[:, j] = rng.integers(0, mechanism.categorical[j].k, n)
    return values


def numeric_entries(mechanism):
    """Positions of the mean entries in the flattened estimate (all of them, except for a mixed tuple)."""
    if not isinstance(mechanism, HarmonyMixed):
        return np.arange(mechanism.d)
    sizes = [1 if attribute == "numeric" else attribute for attribute in mechanism.attributes]
    starts = np.cumsum([0, *sizes[:-1]])
    return np.array([start for start, attribute in zip(starts, mechanism.attributes) if attribute == "numeric"])


def flat(parts, entries):
    return np.concatenate([np.atleast_1d(part) for part in parts])[entries] if isinstance(parts, list) else \
        np.asarray(parts)[entries]


def groups(mechanism, values, user_ids):
    """(users' E[Y], group of each user) per entry: E[Y_i] = t_ij; the group is coordinate j's users, which is all
    of them except for a public coordinate, where it is the hashed bucket j."""
    n = values.shape[0]
    columns = [j for j, attribute in enumerate(mechanism.attributes) if attribute == "numeric"] \
        if isinstance(mechanism, HarmonyMixed) else list(range(mechanism.d))
    means = values[:, columns]
    if getattr(mechanism, "coordinates", None) == "public":
        buckets = public_index(mechanism.seed, user_ids, mechanism.d)
        return means, buckets[:, None] == np.arange(mechanism.d)[None, :]
    return means, np.ones((n, len(columns)), dtype=bool)


def spread_term(means, members):
    """(1/(m (m - 1))) sum over the group of (mu_i - mu_bar)^2 per entry, m the group's size."""
    m = members.sum(axis=0)
    mean = (means * members).sum(axis=0) / m
    return (((means - mean) ** 2) * members).sum(axis=0) / (m * (m - 1))


def repeated(mechanism, values, user_ids, repetitions, seed):
    """(values, standard errors) of mechanism.estimate over ``repetitions`` independent perturbations of the
    population (one call of perturb for all of them: every user's report is independent)."""
    n = values.shape[0]
    ids = None if user_ids is None else np.tile(user_ids, repetitions)
    reports = mechanism.perturb(np.tile(values, (repetitions, 1)), rng=seed, user_ids=ids)
    results = [mechanism.estimate(mechanism.aggregate(reports[r * n:(r + 1) * n]))
               for r in range(repetitions)]
    return np.array([result.values for result in results]), np.array([result.standard_errors for result in results])


@pytest.mark.parametrize("name", FAMILIES)
def test_the_squared_errors_average_to_the_closed_form_and_intervals_cover(name):
    mechanism = FAMILIES[name]()
    rng = np.random.default_rng(31)
    values = population(mechanism, USERS, rng)
    user_ids = np.arange(USERS) if mechanism.uses_user_ids else None
    entries = numeric_entries(mechanism)
    estimates, errors = repeated(mechanism, values, user_ids, REPETITIONS, seed=32)
    estimates, errors = estimates[:, entries], errors[:, entries]
    assert np.isfinite(errors).all()
    # E[s^2 / n] = Var(mean) + spread / (n (n - 1)); Var(mean) = (1/n^2) sum Var(Y_i) from the family's own closed form
    variance = flat(mechanism.variance(values, user_ids=user_ids), entries)
    spread = spread_term(*groups(mechanism, values, user_ids))
    expected = variance + spread
    squared = errors**2
    tolerance = 5 * squared.std(axis=0, ddof=1) / np.sqrt(REPETITIONS)
    assert np.all(np.abs(squared.mean(axis=0) - expected) <= tolerance), (squared.mean(axis=0), expected, tolerance)
    # the test can fail: half the variance, or the variance alone (no spread of the users' values), is rejected
    assert np.all(np.abs(squared.mean(axis=0) - (variance / 2 + spread)) > 3 * tolerance)
    assert np.all(np.abs(squared.mean(axis=0) - variance) > 3 * tolerance)
    # 95 % intervals: at least 95 % coverage, and what the inflation sqrt(expected / variance) of the errors predicts
    truth = flat(mechanism.expected_estimate(values, user_ids=user_ids), entries)
    covered = np.abs(estimates - truth) <= stats.norm.ppf(0.975) * errors
    predicted = np.mean(2 * stats.norm.cdf(stats.norm.ppf(0.975) * np.sqrt(expected / variance)) - 1)
    trials = covered.size
    band = 4.5 * np.sqrt(predicted * (1 - predicted) / trials) + 0.5 / trials
    assert predicted >= 0.95 and abs(covered.mean() - predicted) <= band, (covered.mean(), predicted, band)
    assert covered.mean() >= 0.95 - 4.5 * np.sqrt(0.95 * 0.05 / trials)


@pytest.mark.parametrize("name", ["laplace", "duchi", "harmony-numeric private"])
def test_the_errors_are_exact_in_expectation_when_the_users_share_one_value(name):
    mechanism = FAMILIES[name]()
    values = population(mechanism, USERS, np.random.default_rng(4), shared=True)
    _, errors = repeated(mechanism, values, None, REPETITIONS, seed=5)
    squared = errors**2
    tolerance = 5 * squared.std(axis=0, ddof=1) / np.sqrt(REPETITIONS)
    variance = mechanism.variance(values)
    assert np.all(np.abs(squared.mean(axis=0) - variance) <= tolerance)
    assert np.all(tolerance < 0.1 * variance)


def test_sample_standard_errors_are_the_sample_standard_deviation_over_root_m():
    terms = np.random.default_rng(8).normal(1.0, 2.0, (50, 3))
    found = sample_standard_errors(terms.sum(axis=0), (terms**2).sum(axis=0), 50)
    np.testing.assert_allclose(found, terms.std(axis=0, ddof=1) / np.sqrt(50), rtol=1e-12)
    found = sample_standard_errors([3.0, 2.0, 0.0, 1.0], [5.0, 4.0, 0.0, np.nan], [2, 1, 0, 3])
    assert found[0] == pytest.approx(np.sqrt((5 - 9 / 2) / 1 / 2)) and np.isnan(found[1:]).all()
    assert sample_standard_errors(4.0, 8.0 - 1e-15, 2) == 0.0  # rounding below (sum Y)^2 / m is floored at 0


# -- the aggregate ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FLOAT_FAMILIES)
def test_squares_survive_json_and_merge_as_the_concatenated_reports(name):
    mechanism = FAMILIES[name]()
    values = population(mechanism, 3000, np.random.default_rng(2))
    reports = mechanism.perturb(values, rng=3)
    whole = mechanism.aggregate(reports)
    assert sorted(whole.statistics) == ["squares", "sums"] and whole["squares"].dtype == np.float64
    np.testing.assert_allclose(whole["squares"], (reports**2).sum(axis=0), rtol=1e-12)
    assert Aggregate.from_dict(json.loads(json.dumps(whole.to_dict()))) == whole
    merged = mechanism.aggregate(reports[:1100]) + mechanism.aggregate(reports[1100:])
    assert merged.n == whole.n and merged.statistics.keys() == whole.statistics.keys()
    # float sums in another order differ by rounding: at most (128 + log2 n) u sum |x| each way (docs/math.md §15)
    for statistic, terms in (("sums", reports), ("squares", reports**2)):
        bound = 2 * (128 + np.log2(3000)) * np.finfo(float).eps * np.abs(terms).sum(axis=0)
        assert np.all(np.abs(merged[statistic] - whole[statistic]) <= bound)
    np.testing.assert_allclose(mechanism.estimate(merged).standard_errors,
                               mechanism.estimate(whole).standard_errors, rtol=1e-9)


@pytest.mark.parametrize("name", ["duchi", "harmony-numeric private", "harmony-numeric public", "harmony-mixed"])
def test_integer_statistics_merge_exactly_and_gain_nothing(name):
    mechanism = FAMILIES[name]()
    values = population(mechanism, 2000, np.random.default_rng(2))
    user_ids = np.arange(2000) if mechanism.uses_user_ids else None
    reports = mechanism.perturb(values, rng=3, user_ids=user_ids)
    whole = mechanism.aggregate(reports)
    assert all(array.dtype == np.int64 for array in whole.statistics.values())
    assert mechanism.aggregate(reports[:700]) + mechanism.aggregate(reports[700:]) == whole
    assert np.array_equal(mechanism.estimate(whole).standard_errors,
                          mechanism.estimate(Aggregate.from_dict(whole.to_dict())).standard_errors,
                          equal_nan=True)


def test_an_aggregate_without_squares_or_with_negative_ones_is_refused():
    mechanism = FAMILIES["laplace"]()
    whole = mechanism.aggregate(mechanism.perturb(population(mechanism, 100, np.random.default_rng(1)), rng=2))
    older = Aggregate(whole.mechanism, whole.family, whole.n, {"sums": whole["sums"]})  # as written before "squares"
    with pytest.raises(ValidationError, match=r"aggregate statistics are sums \[2\] float64; the laplace mechanism's "
                                              r"are squares \[2\] float64, sums \[2\] float64"):
        mechanism.estimate(older)
    forged = Aggregate(whole.mechanism, whole.family, whole.n, {"sums": whole["sums"], "squares": [-1.0, 5.0]})
    with pytest.raises(ValidationError, match=r"statistics\['squares'\] reaches -1.0; a sum of squares is never "
                                              "negative"):
        mechanism.estimate(forged)


# -- fewer than 2 reports -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FAMILIES)
def test_one_report_gives_nan_errors_and_says_why(name):
    mechanism = FAMILIES[name]()
    values = population(mechanism, 1, np.random.default_rng(6))
    user_ids = np.arange(1) if mechanism.uses_user_ids else None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division warnings either
        result = mechanism.estimate(mechanism.aggregate(mechanism.perturb(values, rng=7,
                                                                                       user_ids=user_ids)))
    assert result.n == 1 and np.isnan(result.standard_errors).all()
    assert "nan where fewer than 2 reports estimate an entry" in result.note
    with pytest.raises(ValidationError, match="no standard errors"):
        result.confidence_interval()


def test_a_public_bucket_of_fewer_than_2_users_has_a_nan_error():
    mechanism = FAMILIES["harmony-numeric public"]()
    buckets = public_index(mechanism.seed, np.arange(200), mechanism.d)
    # 30 users in bucket 0, one in bucket 1, none in bucket 2
    ids = np.concatenate([np.flatnonzero(buckets == 0)[:30], np.flatnonzero(buckets == 1)[:1]])
    values = population(mechanism, ids.size, np.random.default_rng(9))
    result = mechanism.estimate(mechanism.aggregate(mechanism.perturb(values, rng=10, user_ids=ids)))
    assert np.isfinite(result.standard_errors[0]) and np.isnan(result.standard_errors[1:]).all()
    assert np.isfinite(result.values[:2]).all() and np.isnan(result.values[2])
    assert "a bucket of fewer than 2 users" in result.note


def test_a_mixed_tuple_keeps_no_errors_for_its_frequencies():
    mechanism = FAMILIES["harmony-mixed"]()
    values = population(mechanism, 3000, np.random.default_rng(12))
    result = mechanism.estimate(mechanism.aggregate(mechanism.perturb(values, rng=13)))
    numeric = numeric_entries(mechanism)
    assert np.isfinite(result.standard_errors[numeric]).all()
    assert np.isnan(np.delete(result.standard_errors, numeric)).all()
    assert "none for the frequencies of the categorical attributes" in result.note


# -- the command line ---------------------------------------------------------------------------------------------
def test_lipdesign_estimate_prints_finite_errors_for_laplace(tmp_path):
    result = lipdesign("mechanism", "laplace", "--epsilon", 1, "-p", "d=2", "-o", "laplace.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = np.random.default_rng(0).uniform(-1, 1, size=(4000, 2))
    (tmp_path / "v.csv").write_text("value_0,value_1\n" + "".join(f"{a},{b}\n" for a, b in rows))
    for command in (("perturb", "laplace.json", "v.csv", "-o", "r.parquet", "--seed", 3),
                    ("aggregate", "laplace.json", "r.parquet", "-o", "agg.json")):
        result = lipdesign(*command, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    assert "squares" in json.loads((tmp_path / "agg.json").read_text())["statistics"]
    mechanism = load(tmp_path / "laplace.json")
    reports = read_reports(tmp_path / "r.parquet", mechanism)
    result = lipdesign("estimate", "laplace.json", "agg.json", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert all(np.isfinite(error) for error in document["standard_errors"])
    np.testing.assert_allclose(document["standard_errors"], reports.std(axis=0, ddof=1) / np.sqrt(4000), rtol=1e-9)
    assert None not in document["confidence_interval"]["low"] and "conservative" in document["note"]
    result = lipdesign("estimate", "laplace.json", "agg.json", cwd=tmp_path)
    assert result.returncode == 0 and "95% interval" in result.stdout and "mean[1]" in result.stdout


def test_a_mixed_tuple_shows_the_errors_it_has(tmp_path):
    """Errors for the numeric attributes, none for the frequencies: the summary and the CLI's JSON show each entry
    as it is (an interval, or null), not all or nothing."""
    mechanism = FAMILIES["harmony-mixed"]()
    values = population(mechanism, 3000, np.random.default_rng(14))
    aggregate = mechanism.aggregate(mechanism.perturb(values, rng=15))
    result = mechanism.estimate(aggregate)
    numeric = numeric_entries(mechanism)
    low, high = result.confidence_interval(0.9)
    half = stats.norm.ppf(0.95) * result.standard_errors[numeric]
    np.testing.assert_allclose(high[numeric] - result.values[numeric], half, rtol=1e-12)
    assert np.isnan(np.delete(low, numeric)).all()
    lines = result.summary(0.9).splitlines()[1:1 + result.values.size]
    assert [("90% interval" in line) for line in lines] == [i in numeric for i in range(result.values.size)]
    assert all(line.endswith("(no standard error)") for i, line in enumerate(lines) if i not in numeric)
    mechanism.to_json(tmp_path / "mixed.json")
    (tmp_path / "agg.json").write_text(json.dumps(aggregate.to_dict()))
    run = lipdesign("estimate", "mixed.json", "agg.json", "--json", "--level", 0.9, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    for i, error in enumerate(document["standard_errors"]):
        assert (error is None) == (i not in numeric)
        assert (document["confidence_interval"]["low"][i] is None) == (i not in numeric)
    np.testing.assert_allclose([document["standard_errors"][i] for i in numeric],
                               result.standard_errors[numeric], rtol=1e-12)
