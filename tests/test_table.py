"""Tests of a finite table's runtime: the alias sampler (lipdesign.mechanisms.sampling) and the estimators
(lipdesign.mechanisms.table, postprocess), numpy only.

Statistical tests state their false-alarm rate: chi-square goodness-of-fit tests reject at p < 1e-6 per row
(about 20 rows in this file, so a false alarm rate below 2e-5 per run, Bonferroni), and z-tests use 5 standard
deviations (two-sided 5.7e-7 per coordinate). Every seed is fixed, so a run is reproducible. Expected values are
computed independently in the tests (direct Bayes loops, closed forms from docs/math.md §4 and §8, or by hand).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from helpers import run_python
from hypothesis import given, settings
from hypothesis import strategies as st

import lipdesign as ld
from lipdesign.errors import ValidationError
from lipdesign.mechanisms import GRR
from lipdesign.mechanisms.postprocess import norm_sub
from lipdesign.mechanisms.sampling import TablePerturber, as_generator
from lipdesign.mechanisms.table import ibu_frequencies, mmse_frequencies, posterior, unbiased_frequencies

P_THRESHOLD = 1e-6


def grr_table(k, epsilon):
    """The ideal GRR table of docs/math.md §8, written here independently of the library: a convenient full-rank
    table with known estimator closed forms (the library's own GRR is lipdesign.mechanisms.GRR)."""
    e = math.exp(epsilon)
    return (np.ones((k, k)) + (e - 1) * np.eye(k)) / (e + k - 1)


# ---------------------------------------------------------------------------------------------------------
# An exact chi-square survival function (no scipy), for integer degrees of freedom.
# even df = 2m: sf = e^{-x/2} sum_{i<m} (x/2)^i / i!
# odd df: sf = erfc(sqrt(x/2)) + e^{-x/2} sum_{i=0}^{(df-3)/2} (x/2)^{i+1/2} / Gamma(i + 3/2)
# ---------------------------------------------------------------------------------------------------------
def chi2_sf(x: float, df: int) -> float:
    if x <= 0:
        return 1.0
    h = x / 2.0
    if df % 2 == 0:
        return math.exp(-h) * sum(h**i / math.factorial(i) for i in range(df // 2))
    return math.erfc(math.sqrt(h)) + math.exp(-h) * sum(
        h ** (i + 0.5) / math.gamma(i + 1.5) for i in range((df - 1) // 2)
    )


@pytest.mark.parametrize(
    "x, df, p",
    # textbook critical values (any chi-square table): Pr[chi2_df > x] = p
    [
        (3.841459, 1, 0.05),
        (5.991465, 2, 0.05),
        (7.814728, 3, 0.05),
        (11.070498, 5, 0.05),
        (6.634897, 1, 0.01),
        (15.086272, 5, 0.01),
        (16.811894, 6, 0.01),
    ],
)
def test_chi2_sf_helper_matches_tables(x, df, p):
    assert chi2_sf(x, df) == pytest.approx(p, rel=1e-5)


def assert_matches_row(out: np.ndarray, row: np.ndarray) -> None:
    """Chi-square goodness of fit of the outputs ``out`` to the distribution ``row`` (p-threshold 1e-6)."""
    n = out.size
    obs = np.bincount(out, minlength=row.size)
    assert obs.size == row.size, f"an output >= n_out = {row.size} appeared"
    support = row > 0
    assert obs[~support].sum() == 0, (
        f"zero-probability outputs {np.flatnonzero(~support & (obs > 0))} appeared"
    )
    if support.sum() == 1:
        assert obs[support][0] == n
        return
    exp = n * row[support]
    stat = float(((obs[support] - exp) ** 2 / exp).sum())
    p = chi2_sf(stat, int(support.sum()) - 1)
    assert p > P_THRESHOLD, f"chi-square {stat:.1f} (p = {p:.2e}) for row {row}, observed {obs / n}"


def random_table(rng: np.random.Generator, k: int, n_out: int, zero_frac: float = 0.3) -> np.ndarray:
    """Random table with some zero entries, row 0 deterministic; positive entries >= ~0.005."""
    w = rng.uniform(0.05, 1.0, size=(k, n_out))
    w[rng.random((k, n_out)) < zero_frac] = 0.0
    for x in range(k):
        if not w[x].any():
            w[x, rng.integers(n_out)] = 1.0
    w[0] = 0.0
    w[0, rng.integers(n_out)] = 1.0
    return w / w.sum(axis=1, keepdims=True)


def fixed_tables() -> list[np.ndarray]:
    rng = np.random.default_rng(20240601)
    return [
        np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.2, 0.3, 0.5]]),
        grr_table(4, 1.0),
        random_table(rng, 4, 6),
        random_table(rng, 5, 3),
        random_table(rng, 3, 9, zero_frac=0.5),
    ]


# ------------------------------------------------------------------ perturbation: distribution


@pytest.mark.parametrize("t_index", range(5))
def test_perturb_matches_table_rows(t_index):
    table = fixed_tables()[t_index]
    k = table.shape[0]
    n = 200_000
    # mixed, shuffled inputs: exercises chunk boundaries (chunk 2**16 < k * n) and the flat index x * n_out + j
    values = np.random.default_rng(7).permutation(np.repeat(np.arange(k), n))
    out = TablePerturber(table).perturb(values, rng=1000 + t_index)
    assert out.dtype == np.int64 and out.shape == values.shape
    for x in range(k):
        assert_matches_row(out[values == x], table[x])


def test_chi_square_check_has_power():
    """The goodness-of-fit check rejects a table that is off by 0.02 in two entries (so it can fail)."""
    table = np.array([[0.2, 0.3, 0.5]])
    wrong = np.array([0.22, 0.28, 0.5])
    out = TablePerturber(table).perturb(np.zeros(200_000, dtype=int), rng=3)
    assert_matches_row(out, table[0])
    with pytest.raises(AssertionError):
        assert_matches_row(out, wrong)


def alias_distribution(prob: np.ndarray, alias: np.ndarray) -> np.ndarray:
    """The exact output distribution of alias tables, written out slot by slot (independent of the code)."""
    k, n_out = prob.shape
    dist = np.zeros((k, n_out))
    for x in range(k):
        for j in range(n_out):
            dist[x, j] += prob[x, j] / n_out
            dist[x, alias[x, j]] += (1.0 - prob[x, j]) / n_out
    return dist


def check_alias_invariants(table: np.ndarray) -> None:
    tp = TablePerturber(table)
    prob, alias = tp.prob, tp.alias
    assert np.all((prob >= 0) & (prob <= 1))
    assert np.all((alias >= 0) & (alias < table.shape[1]))
    rows = np.arange(table.shape[0])[:, None]
    # a slot whose own column has probability 0 is never taken; an alias with probability 0 is never used
    assert np.all(prob[table == 0] == 0.0)
    reachable_alias = prob < 1.0
    assert np.all(table[rows.repeat(table.shape[1], 1), alias][reachable_alias] > 0)
    np.testing.assert_allclose(alias_distribution(prob, alias), table, rtol=0, atol=1e-12)
    np.testing.assert_allclose(tp.implied_table(), table, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "table",
    [
        np.full((1, 10), 0.1),
        np.full((2, 3), 1 / 3),
        np.array([[1 - 1e-12, 1e-12, 0.0], [0.0, 0.0, 1.0]]),
        np.array([[0.0, 0.0, 0.0, 0.0, 1.0]]),
        np.array([[0.7, 0.2, 0.1, 0.0], [0.0, 0.1, 0.2, 0.7]]),
        np.array([[1e-300, 0.0, 1.0 - 1e-300]]),
        np.array([[0.1] * 7 + [0.3, 0.0, 0.0]]),
    ],
)
def test_alias_tables_awkward_floats(table):
    check_alias_invariants(table)


@st.composite
def tables_with_zeros(draw):
    k = draw(st.integers(1, 4))
    n_out = draw(st.integers(1, 12))
    rows = []
    for _ in range(k):
        w = draw(st.lists(st.one_of(st.just(0.0), st.floats(1e-9, 1.0)), min_size=n_out, max_size=n_out))
        if sum(w) == 0:
            w[draw(st.integers(0, n_out - 1))] = 1.0
        w = np.array(w)
        rows.append(w / w.sum())
    return np.array(rows)


@settings(max_examples=150, deadline=None)
@given(tables_with_zeros())
def test_alias_tables_property(table):
    check_alias_invariants(table)


def test_deterministic_and_zero_columns_with_many_draws():
    table = np.array([[0.0, 1.0, 0.0, 0.0], [0.25, 0.0, 0.75, 0.0], [0.0, 0.0, 0.0, 1.0]])
    values = np.repeat(np.arange(3), 300_000)
    out = TablePerturber(table).perturb(values, rng=11)
    assert np.all(out[values == 0] == 1)
    assert np.all(out[values == 2] == 3)
    assert set(np.unique(out[values == 1])) == {0, 2}


# ------------------------------------------------------------------ perturbation: API behaviour


def test_same_seed_same_output_and_generator_passthrough():
    table = fixed_tables()[2]
    values = np.random.default_rng(1).integers(0, table.shape[0], 50_000)
    tp = TablePerturber(table)
    a = tp.perturb(values, rng=123)
    assert np.array_equal(a, tp.perturb(values, rng=123))
    assert not np.array_equal(a, tp.perturb(values, rng=124))
    g = np.random.default_rng(123)
    assert as_generator(g) is g
    assert np.array_equal(tp.perturb(values, rng=g), a)
    assert not np.array_equal(tp.perturb(values, rng=g), a)  # the generator's state advanced


def test_chunk_size_does_not_change_result():
    table = fixed_tables()[3]
    values = np.random.default_rng(2).integers(0, table.shape[0], 10_000)
    a = TablePerturber(table).perturb(values, rng=5)
    b = TablePerturber(table, chunk_size=777).perturb(values, rng=5)
    assert np.array_equal(a, b)


def test_rng_none_works():
    table = grr_table(6, 0.5)
    values = np.arange(6).repeat(500)
    a = TablePerturber(table).perturb(values)
    b = TablePerturber(table).perturb(values, rng=None)
    assert a.min() >= 0 and a.max() <= 5 and b.min() >= 0 and b.max() <= 5
    # two OS-seeded runs agree on all 3000 values with probability < 0.5**3000
    assert not np.array_equal(a, b)
    assert isinstance(as_generator(None), np.random.Generator)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint64, np.float64, np.float32])
def test_value_dtypes_give_the_same_result(dtype):
    table = grr_table(12, 1.0)  # x * n_out reaches 143: overflows int8 if not widened
    values = np.arange(12).repeat(100)
    ref = TablePerturber(table).perturb(values.astype(np.int64), rng=9)
    assert np.array_equal(TablePerturber(table).perturb(values.astype(dtype), rng=9), ref)


def test_shapes():
    tp = TablePerturber(grr_table(3, 1.0))
    out = tp.perturb(np.array([[0, 1], [2, 0]]), rng=1)
    assert out.shape == (2, 2) and out.dtype == np.int64
    empty = tp.perturb(np.array([], dtype=int), rng=1)
    assert empty.shape == (0,) and empty.dtype == np.int64
    assert tp.perturb(2, rng=1).shape == ()
    assert tp.perturb([0, 1, 2], rng=1).shape == (3,)


@pytest.mark.parametrize(
    "values, message",
    [
        ([0, 1, 2, 7], "values contains 7 at position 3; it must be an index in 0..2"),
        ([0, -1], "values contains -1 at position 1; it must be an index in 0..2"),
        ([0.0, 1.5], "values contains 1.5 at position 1; it must be an integer index in 0..2"),
        ([0.0, float("nan")], "values contains nan at position 1"),
        ([0.0, 3.0], "values contains 3 at position 1; it must be an index in 0..2"),
        ([[0, 1], [5, 0]], "values contains 5 at position (1, 0)"),
        (["a", "b"], "values has dtype <U1"),
        ([True, False], "values has dtype bool"),
    ],
)
def test_bad_values(values, message):
    with pytest.raises(ValidationError) as exc:
        TablePerturber(grr_table(3, 1.0)).perturb(values, rng=1)
    assert message in str(exc.value)


def test_bad_value_after_first_chunk_reports_its_position():
    values = np.zeros(200_000, dtype=np.int64)
    values[150_001] = 3
    with pytest.raises(
        ValidationError, match=r"values contains 3 at position 150001; it must be an index in 0\.\.2"
    ):
        TablePerturber(grr_table(3, 1.0)).perturb(values, rng=1)


@pytest.mark.parametrize("rng", ["seed", 1.5, -1, True, np.random.RandomState(0), [1, 2]])
def test_bad_rng(rng):
    with pytest.raises(ValidationError, match=r"^rng is "):
        TablePerturber(grr_table(3, 1.0)).perturb([0, 1], rng=rng)


@pytest.mark.parametrize(
    "table, message",
    [
        ([0.5, 0.5], "table has shape (2,); it must be a 2-D array"),
        (np.zeros((0, 3)), "table is empty; it must have at least one entry"),
        ([[0.5, float("nan")], [0.5, 0.5]], "table[0, 1] is nan; every entry must be finite"),
        ([[1.2, -0.2], [0.5, 0.5]], "table[0, 1] is -0.2; every entry must be >= 0"),
        ([[0.5, 0.5], [0.6, 0.5]], "table row 1 sums to 1.1; each row must sum to 1 within 1e-09"),
        ([["a", "b"]], "it must be a rectangular array of numbers"),
        ([[1.0], [0.5, 0.5]], "it must be a rectangular array of numbers"),
    ],
)
def test_bad_tables(table, message):
    with pytest.raises(ValidationError) as exc:
        TablePerturber(table)
    assert message in str(exc.value)


def test_counts():
    """A table mechanism's aggregate counts the reports per output (the counts every estimator takes)."""
    mechanism = ld.TableMechanism(GRR(1.0, 5).full_table(), ld.LDP(1.0), np.full(5, 0.2))
    reports = np.array([3, 0, 3, 1, 3, 0])
    assert mechanism.aggregate(reports)["counts"].tolist() == [2, 1, 0, 3, 0]
    assert mechanism.aggregate([])["counts"].tolist() == [0, 0, 0, 0, 0]
    assert mechanism.aggregate(reports)["counts"].dtype == np.int64
    with pytest.raises(
        ValidationError, match=r"reports contains 5 at position 2; it must be an index in 0\.\.4"
    ):
        mechanism.aggregate([0, 1, 5])
    with pytest.raises(ValidationError, match=r"^table has shape \(1, 0\)|^table is empty"):
        ld.TableMechanism(np.zeros((1, 0)), ld.LDP(1.0), [1.0])


# ------------------------------------------------------------------ estimation


def random_full_rank(rng, k, n_out):
    q = rng.uniform(0.05, 1.0, size=(k, n_out))
    q /= q.sum(axis=1, keepdims=True)
    assert np.linalg.matrix_rank(q) == k
    return q


def test_posterior_matches_direct_bayes():
    rng = np.random.default_rng(3)
    table = random_table(rng, 4, 6)
    table[:, 2] = 0.0  # an output that never occurs: its posterior row is the prior (documented)
    table /= table.sum(axis=1, keepdims=True)
    prior = np.array([0.1, 0.2, 0.3, 0.4])
    post = posterior(table, prior=prior)
    assert post.shape == (6, 4)
    for y in range(6):
        evidence = sum(prior[x] * table[x, y] for x in range(4))
        for x in range(4):
            expected = prior[x] * table[x, y] / evidence if evidence > 0 else prior[x]
            assert post[y, x] == pytest.approx(expected, abs=1e-14)


def test_mmse_on_expected_counts_is_the_prior():
    rng = np.random.default_rng(4)
    for table in (random_table(rng, 4, 6), grr_table(5, 0.7), np.array([[0.5, 0.5], [0.5, 0.5], [1.0, 0.0]])):
        k = table.shape[0]
        prior = rng.dirichlet(np.ones(k))
        c = 1000 * (table.T @ prior)  # exact expected counts
        # sum_y Pr[Y=y] Pr[X=x | Y=y] = Pr[X=x]
        np.testing.assert_allclose(mmse_frequencies(table, c, prior=prior), prior, rtol=0, atol=1e-12)


def test_mmse_is_a_distribution_on_skewed_counts():
    table = grr_table(3, 1.0)
    prior = np.array([0.2, 0.3, 0.5])
    est = mmse_frequencies(table, [100, 0, 0], prior=prior)
    assert np.all(est >= 0) and est.sum() == pytest.approx(1.0, abs=1e-12)
    # one report, y = 0: the estimate is the posterior of y = 0, by hand: prior * Q[:, 0] normalised
    e = math.e
    by_hand = np.array([0.2 * e, 0.3, 0.5]) / (0.2 * e + 0.3 + 0.5)
    np.testing.assert_allclose(est, by_hand, rtol=0, atol=1e-14)


@pytest.mark.parametrize("use_prior", ["none", "truth", "other"])
def test_unbiased_on_expected_counts_returns_the_truth(use_prior):
    # the estimator is affine in c / n, so returning the truth on E[c] is exactly unbiasedness
    rng = np.random.default_rng(5)
    truth4 = np.array([0.1, 0.2, 0.3, 0.4])
    truth3 = np.array([0.5, 0.3, 0.2])
    for table, truth in ((grr_table(4, 1.0), truth4), (random_full_rank(rng, 3, 5), truth3)):
        prior = {"none": None, "truth": truth, "other": rng.dirichlet(np.ones(truth.size))}[use_prior]
        c = 12_345 * (table.T @ truth)
        np.testing.assert_allclose(unbiased_frequencies(table, c, prior=prior), truth, rtol=0, atol=1e-12)


def test_unbiased_grr_is_the_closed_form():
    # docs/math.md §8: f_v = (C_v/n - q) / (p - q) for GRR
    k, eps = 5, 1.3
    p, q = math.exp(eps) / (math.exp(eps) + k - 1), 1 / (math.exp(eps) + k - 1)
    c = np.array([10, 0, 3, 50, 7])
    expected = (c / c.sum() - q) / (p - q)
    np.testing.assert_allclose(unbiased_frequencies(grr_table(k, eps), c), expected, rtol=0, atol=1e-12)
    assert expected.min() < 0  # negative entries are allowed; they still sum to 1
    assert unbiased_frequencies(grr_table(k, eps), c).sum() == pytest.approx(1.0, abs=1e-12)


def test_unbiased_sums_to_one_on_noisy_counts_of_a_rectangular_table():
    rng = np.random.default_rng(6)
    table = random_full_rank(rng, 3, 6)
    c = rng.integers(0, 100, size=6)
    for prior in (None, np.array([0.2, 0.3, 0.5])):
        assert unbiased_frequencies(table, c, prior=prior).sum() == pytest.approx(1.0, abs=1e-12)


def test_gls_variance_matches_math4():
    """docs/math.md §4: n * sum Var of the GLS estimate = tr((Q D^-1 Q^T)^-1) - |P|^2, D = diag(Q^T P).

    The estimate is affine in the report frequencies, so with v_y = estimate(e_y) and pi = Q^T P,
    n * sum Var = sum_y pi_y |v_y|^2 - |P|^2 exactly (multinomial covariance).
    """
    rng = np.random.default_rng(8)
    table = random_full_rank(rng, 3, 5)
    prior = np.array([0.2, 0.5, 0.3])
    pi = table.T @ prior
    v = np.array([unbiased_frequencies(table, np.eye(5)[y], prior=prior) for y in range(5)])
    n_sum_var = float(pi @ (v**2).sum(axis=1)) - float(prior @ prior)
    d_inv = np.diag(1 / pi)
    closed = float(np.trace(np.linalg.inv(table @ d_inv @ table.T))) - float(prior @ prior)
    assert n_sum_var == pytest.approx(closed, rel=1e-10)


@pytest.mark.parametrize(
    "table",
    [
        np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]),  # two equal rows
        np.array([[0.6, 0.4], [0.3, 0.7], [0.1, 0.9]]),  # n_out < k
    ],
)
def test_unbiased_rank_deficient(table):
    with pytest.raises(ValidationError, match=r"table has rank 2 < k = 3 .*estimate a mean in its range \(ld.Mean\)"):
        unbiased_frequencies(table, np.ones(table.shape[1]))


def test_unbiased_bad_counts():
    with pytest.raises(ValidationError, match=r"counts has shape \(3,\); it must have shape \(4,\)"):
        unbiased_frequencies(grr_table(4, 1.0), [1, 2, 3])
    with pytest.raises(ValidationError, match=r"counts\[1\] is -1; every entry must be >= 0"):
        unbiased_frequencies(grr_table(4, 1.0), [1, -1, 3, 4])
    with pytest.raises(ValidationError, match=r"counts sums to 0"):
        unbiased_frequencies(grr_table(4, 1.0), [0, 0, 0, 0])
    with pytest.raises(ValidationError, match=r"prior sums to 0.9; it must sum to 1 within 1e-09"):
        unbiased_frequencies(grr_table(2, 1.0), [1, 1], prior=[0.5, 0.4])


def test_ibu_on_expected_counts_converges_to_the_truth():
    rng = np.random.default_rng(9)
    for table, truth in (
        (grr_table(4, 1.0), np.array([0.1, 0.2, 0.3, 0.4])),
        (random_full_rank(rng, 3, 5), np.array([0.5, 0.3, 0.2])),
    ):
        c = 1000 * (table.T @ truth)
        np.testing.assert_allclose(ibu_frequencies(table, c), truth, rtol=0, atol=1e-6)


def test_the_mle_at_the_edge_of_the_simplex_matches_an_independent_solver():
    """Values with true frequency 0: the fit ends at the edge (some values exactly 0) without a warning, at the
    maximum that an exponential-cone program (cvxpy, Clarabel) finds independently."""
    import cvxpy as cp

    rng = np.random.default_rng(4)
    table = random_full_rank(rng, 6, 12)
    truth = np.array([0.4, 0.3, 0.2, 0.1, 0.0, 0.0])
    for trial in range(5):
        counts = rng.multinomial(20_000, table.T @ truth)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            fitted = ibu_frequencies(table, counts)
        f = cp.Variable(6, nonneg=True)
        problem = cp.Problem(cp.Maximize(counts @ cp.log(table.T @ f) / counts.sum()), [cp.sum(f) == 1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "may be inaccurate" at tolerances this tight
            problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
        np.testing.assert_allclose(fitted, f.value, atol=1e-5)  # the likelihood is flat: f is less sharp than l
        ours = counts @ np.log(table.T @ fitted) / counts.sum()
        assert ours >= problem.value - 1e-12
        gradient = table @ (counts / counts.sum() / (table.T @ fitted))  # optimality: g <= 1, = 1 where f > 0
        assert gradient.max() < 1 + 1e-9 and np.abs(gradient[fitted > 0] - 1).max() < 1e-9
    assert (fitted == 0).any()
    # a fit that once stalled: a Newton step cut at a value left 1e-19 of it in the support, and 10^4 steps later
    # the fit warned, short of the maximum (its Newton steps now set that value to exactly 0)
    table = np.array([[0.6, 0, 0.4], [0.4, 0.2, 0.4], [1 / 3, 1 / 3, 1 / 3], [0.75, 0.25, 0], [1 / 6, 0.5, 1 / 3]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fitted = ibu_frequencies(table, [2, 5, 0])
    np.testing.assert_allclose(fitted, [0, 0, 0, 18 / 49, 31 / 49], atol=1e-12)


def test_ibu_rank_deficient_matches_the_report_distribution():
    # rows 0 and 1 are equal: the split between them is not identifiable, but the fitted report
    # distribution Q^T f must equal the observed frequencies, and f must be a distribution
    table = np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.1, 0.2, 0.7]])
    truth = np.array([0.3, 0.3, 0.4])
    c = table.T @ truth
    f = ibu_frequencies(table, c)
    assert np.all(f >= 0) and f.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(table.T @ f, c / c.sum(), rtol=0, atol=1e-8)
    assert f[2] == pytest.approx(0.4, abs=1e-6)


def test_ibu_validation_and_warning():
    table = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])
    with pytest.raises(ValidationError, match=r"counts\[0\] is 3.0 but column 0 of the table is all zero"):
        ibu_frequencies(np.array([[0.0, 1.0], [0.0, 1.0]]), [3, 1])
    with pytest.raises(ValidationError, match=r"init gives output 0 probability 0 but counts\[0\] is 2.0"):
        ibu_frequencies(table, [2, 1, 1], init=[0.0, 1.0])
    with pytest.raises(ValidationError, match=r"^tol is 0; it must be a finite number > 0"):
        ibu_frequencies(table, [2, 1, 1], tol=0)
    with pytest.raises(ValidationError, match=r"^max_iter is 0; it must be an integer >= 1"):
        ibu_frequencies(table, [2, 1, 1], max_iter=0)
    with pytest.warns(RuntimeWarning, match="stopped after 2 of max_iter=2 steps"):
        ibu_frequencies(grr_table(4, 0.1), [1, 2, 3, 4], max_iter=2)


@pytest.mark.parametrize(
    "freqs, expected",
    [
        ([0.6, 0.5, -0.1], [0.55, 0.45, 0.0]),  # zero -0.1, total 1.1, shift -0.05
        ([1.0, 0.2, 0.02, -0.22], [0.9, 0.1, 0.0, 0.0]),  # two rounds: shift -0.22/3 makes 0.02 negative
        ([0.3, 0.3, -0.2, 0.1], [0.4, 0.4, 0.0, 0.2]),  # positives total 0.7: shift +0.1
        ([0.2, 0.8], [0.2, 0.8]),  # already consistent
        ([-1.0, -2.0], [0.5, 0.5]),  # no positive entry: uniform (documented)
    ],
)
def test_norm_sub_examples(freqs, expected):
    np.testing.assert_allclose(norm_sub(freqs), expected, rtol=0, atol=1e-14)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-2.0, 2.0), min_size=1, max_size=20))
def test_norm_sub_properties(freqs):
    f = np.array(freqs)
    out = norm_sub(f)
    assert np.all(out >= 0)
    assert out.sum() == pytest.approx(1.0, abs=1e-12)
    if (f > 0).any():
        kept = out > 0
        shift = out[kept] - f[kept]  # every surviving entry moved by the same amount
        assert np.ptp(shift) < 1e-12
        assert np.all(f[out > 0] > 0)  # an entry that was not positive stays zero
        order = np.argsort(f, kind="stable")
        assert np.all(np.diff(out[order]) >= -1e-12)  # order is preserved


def test_norm_sub_bad_input():
    with pytest.raises(ValidationError, match=r"frequencies\[1\] is nan; every entry must be finite"):
        norm_sub([0.5, float("nan")])
    with pytest.raises(ValidationError, match=r"frequencies is empty; it must have at least one entry"):
        norm_sub([])


def test_grr_table():
    """The package's only GRR (lipdesign.mechanisms.GRR): its full table against the closed form of
    docs/math.md §8, within the 1e-10 margin and the 2^-53 grid it samples on, up to eps = 30 (the designs' range)."""
    for k, eps in ((2, 1e-3), (4, 1.0), (12, 3.5), (3, 30.0)):
        t = GRR(eps, k).full_table()
        assert t.shape == (k, k)
        np.testing.assert_allclose(t.sum(axis=1), 1.0, rtol=0, atol=1e-15)
        e = math.exp(eps)
        assert t[0, 0] == pytest.approx(e / (e + k - 1), rel=2e-10)
        assert t[0, 1] == pytest.approx(1 / (e + k - 1), rel=1e-9)
        assert t[0, 0] / t[0, 1] <= e  # no overflow, and never above the claim
    with pytest.raises(ValidationError, match=r"^k is 1; it must be an integer in 2\.\."):
        GRR(1.0, 1)
    with pytest.raises(ValidationError, match=r"^k is 0; it must be an integer in 2\.\."):
        GRR(1.0, 0)
    with pytest.raises(ValidationError, match=r"^epsilon is -1.0; it must lie in \(0, 30\]"):
        GRR(-1.0, 3)
    with pytest.raises(ValidationError, match=r"^epsilon is inf"):
        GRR(float("inf"), 3)


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0])
def test_every_grr_table_passes_exact_ldp_verification(epsilon):
    """The defect of lipdesign 0.1.0's runtime.grr_table (94 of 228 (k, eps) failed exact verification, e.g. k = 3,
    eps = 1): the GRR the package hands out now passes at every k = 2..39, for its full table and its reduction."""
    for k in range(2, 40):
        mechanism = GRR(epsilon, k)
        for table in (mechanism.full_table(), mechanism.privacy_table()):
            certificate = ld.verify(table, ld.LDP(epsilon), exact=True)
            assert certificate.passed, (k, epsilon, certificate.summary())
    t = math.exp(-1.0)  # lipdesign 0.1.0's runtime.grr_table(3, 1.0), computed as it did: it fails
    old = np.full((3, 3), t / (1 + 2 * t))
    np.fill_diagonal(old, 1 / (1 + 2 * t))
    assert not ld.verify(old, ld.LDP(1.0), exact=True).passed


def test_grr_end_to_end_within_five_sigma():
    """Seeded: n = 100_000 users, GRR k = 5, eps = 1, unbiased estimate vs the users' true histogram.

    docs/math.md §8: Var = [f p(1-p) + (1-f) q(1-q)] / (n (p-q)^2), with f the realised fraction of each value (the
    estimate is unbiased for the realised histogram). Each coordinate within 5 sd: false alarm < 3e-6.
    """
    k, eps, n = 5, 1.0, 100_000
    rng = np.random.default_rng(2024)
    prior = np.array([0.4, 0.3, 0.15, 0.1, 0.05])
    x = rng.choice(k, size=n, p=prior)
    reports = TablePerturber(grr_table(k, eps)).perturb(x, rng=rng)
    est = unbiased_frequencies(grr_table(k, eps), np.bincount(reports, minlength=k))
    f = np.bincount(x, minlength=k) / n
    e = math.exp(eps)
    p, q = e / (e + k - 1), 1 / (e + k - 1)
    sd = np.sqrt((f * p * (1 - p) + (1 - f) * q * (1 - q)) / (n * (p - q) ** 2))
    z = (est - f) / sd
    assert np.all(np.abs(z) < 5), f"z-scores {z}"
    assert est.sum() == pytest.approx(1.0, abs=1e-12)


def test_import_is_numpy_only():
    code = (
        "import lipdesign.mechanisms, sys; "
        "print(sorted(m for m in ('scipy','cvxpy','networkx','jsonschema','matplotlib') if m in sys.modules))"
    )
    assert run_python(code, timeout=60) == "[]"


class _FixedUniforms(np.random.Generator):
    """A generator whose random(out=...) returns the given uniforms, to drive perturb deterministically."""

    def __init__(self, uniforms):
        super().__init__(np.random.PCG64(0))
        self.uniforms = np.asarray(uniforms, dtype=np.float64)

    def random(self, size=None, dtype=np.float64, out=None):
        out[...] = self.uniforms[: out.size]
        return out


@pytest.mark.parametrize("tiny", [3e-16, 1e-15, 2.5e-14])
def test_realized_table_counts_the_uniforms_that_give_each_output(tiny):
    """numpy's random() is k / 2^53: enumerate the k of slot 0 through perturb itself and count how many give
    the tiny output 0; realized_table must hold exactly that count / 2^53 (implied_table says `tiny`, which
    is not a multiple of 2^-53 / 7 and is what the coin's resolution cannot deliver)."""
    table = np.array([[tiny, 0.25, 0.25, 0.25 - tiny, 0.1, 0.1, 0.05], [1 / 7] * 7])
    perturber = TablePerturber(table)
    realized = perturber.realized_table()
    ks = np.arange(0, 2000)
    outputs = perturber.perturb(np.zeros(ks.size, dtype=np.int64), rng=_FixedUniforms(ks * 2.0**-53))
    assert realized[0, 0] * 2**53 == np.count_nonzero(outputs == 0)
    assert np.all(realized.sum(axis=1) == 1.0)  # exact: the counts add up to 2^53
    np.testing.assert_allclose(realized, table, rtol=0, atol=1e-15)


def test_realized_table_matches_perturb_on_random_uniforms():
    """For random k, the output of perturb lies in the support realized_table gives its row, and frequencies over
    many k follow it."""
    rng = np.random.default_rng(8)
    table = rng.dirichlet(np.full(13, 0.3), size=3)
    perturber = TablePerturber(table)
    realized = perturber.realized_table()
    assert np.all((realized > 0) <= (table > 0))
    values = np.repeat(np.arange(3), 100_000)
    reports = perturber.perturb(values, rng=rng)
    for x in range(3):
        counts = np.bincount(reports[values == x], minlength=13)
        sigma = np.sqrt(100_000 * realized[x] * (1 - realized[x]))
        assert np.all(np.abs(counts - 100_000 * realized[x]) <= 5 * sigma + 1e-9)


@pytest.mark.parametrize("seed", [0, 20261201])
def test_numpy_random_is_the_top_53_bits_of_the_bit_stream(seed):
    """realized_table (and every exact certificate built on it) assumes Generator.random() returns
    (next 64-bit word >> 11) * 2^-53, which numpy does not promise; only the bit stream is stable. Fail loudly if a
    numpy release changes the conversion."""
    words = np.random.PCG64(seed).random_raw(4096)
    uniforms = np.random.Generator(np.random.PCG64(seed)).random(4096)
    assert np.array_equal(uniforms, (words >> np.uint64(11)).astype(np.float64) * 2.0**-53)
