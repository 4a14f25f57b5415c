"""Frequency oracles of lipdesign.mechanisms (rr, oue, olh, hadamard, harmony_categorical): GRR, OUE, OLH,
HadamardResponse (docs/math.md §8) and Harmony's categorical mechanism (Alg. 3, docs/math.md §9).

Expected values come from the closed forms of docs/math.md §8/§9 or from independent computations in this file (full
enumeration, scipy's Hadamard matrix, per-user Python loops, brute force over a hash family); statistical
tests are seeded and their tolerances follow from the closed-form variances.
"""

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.linalg import hadamard
from scipy.stats import chi2

from lipdesign.errors import ValidationError
from lipdesign.mechanisms import (
    GRR,
    OLH,
    OUE,
    HadamardResponse,
    HarmonyCategorical,
    bit_reports,
    harmony_categorical,
    olh,
    rr,
)
from lipdesign.mechanisms.postprocess import norm_sub
from lipdesign.mechanisms.sampling import implemented_exp
from lipdesign.notions import LDP
from lipdesign.verification import exp_bounds, verify_table

P = 2**31 - 1  # OLH's documented hash prime


def make(name, epsilon):
    return {
        "GRR": lambda: GRR(epsilon, k=4),
        "OUE": lambda: OUE(epsilon, k=4),
        "OLH": lambda: OLH(epsilon, k=4),
        "HadamardResponse": lambda: HadamardResponse(epsilon, k=5),
        "HarmonyCategorical": lambda: HarmonyCategorical(epsilon, k=4, m=32, seed=1),
    }[name]()


NAMES = ["GRR", "OUE", "OLH", "HadamardResponse", "HarmonyCategorical"]


def exact_epsilon(table, epsilon):
    """Exact rational tightest LDP epsilon (rounded up) of a table, and whether it meets ``epsilon``."""
    certificate = verify_table(np.asarray(table, dtype=float), LDP(epsilon), exact=True)
    return certificate.epsilon, certificate.passed


def population(counts, seed=0):
    """Users with value v repeated counts[v] times, shuffled, and their exact histogram."""
    values = np.random.default_rng(seed).permutation(np.repeat(np.arange(len(counts)), counts))
    return values, np.asarray(counts, dtype=float) / sum(counts)


# ---------------------------------------------------------------- exact LDP


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0, 10.0])
@pytest.mark.parametrize("name", NAMES)
def test_verify_certifies_the_claimed_epsilon_tightly(name, epsilon):
    certificate = make(name, epsilon).verify()
    assert certificate.passed and certificate.exact
    assert epsilon - 1e-9 <= certificate.epsilon <= epsilon


def grr_realised(epsilon, k):
    """(keep, lie) of GRR sampled as the mixture 'truth with probability alpha, else uniform on all k', alpha =
    (e - 1)/(e - 1 + k) rounded down to numpy's 2^-53 grid (docs/math.md §8)."""
    e = implemented_exp(epsilon)
    alpha = math.floor((e - 1) / (e - 1 + k) * 2**53) / 2**53
    return alpha + (1 - alpha) / k, (1 - alpha) / k


def test_grr_tables_are_the_closed_form():
    e = implemented_exp(1.3)
    keep, lie = grr_realised(1.3, 6)
    assert keep == pytest.approx(e / (e + 5), rel=1e-14) and lie == pytest.approx(1 / (e + 5), rel=1e-14)
    expected = np.full((6, 6), lie)
    np.fill_diagonal(expected, keep)
    mechanism = GRR(1.3, k=6)
    assert np.allclose(mechanism.full_table(), expected, rtol=1e-15, atol=0)
    assert np.allclose(mechanism.privacy_table(), [[keep, lie, 4 * lie], [lie, keep, 4 * lie]], rtol=1e-15, atol=0)
    two = GRR(1.3, k=2)  # no merged column
    assert np.array_equal(two.privacy_table(), two.full_table())


@pytest.mark.parametrize("epsilon", [0.05, 1.0, 4.0, 10.0])
@pytest.mark.parametrize("k", [2, 3, 5, 17])
def test_grr_reduced_table_matches_the_full_table(k, epsilon):
    mechanism = GRR(epsilon, k)
    keep, lie = grr_realised(epsilon, k)
    full = np.full((k, k), lie)
    np.fill_diagonal(full, keep)
    reduced = mechanism.privacy_table()
    assert reduced.shape == (2, min(k, 3)) and np.all(reduced > 0)
    assert np.allclose(reduced.sum(axis=1), 1, rtol=1e-14)
    eps_reduced, passed = exact_epsilon(reduced, epsilon)
    assert passed
    assert eps_reduced == exact_epsilon(full, epsilon)[0]  # the same floats, so the same exact ratios


class _Scripted(np.random.Generator):
    """A generator whose random() returns ``u`` everywhere and integers() the fixed value ``other``."""

    def __init__(self, u, other):
        super().__init__(np.random.PCG64(0))
        self.u, self.other = u, other

    def random(self, size=None, dtype=np.float64, out=None):
        return np.full(size, self.u)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        return np.full(size, self.other, dtype=np.int64)


def realised_keep_probability(perturb):
    """Pr[the sampler keeps the truth], read back from ``perturb(rng)`` by bisection over numpy's 2^-53 grid of
    uniforms (the sampler keeps the truth when the uniform is below its threshold)."""
    low, high = 0, 2**53
    if not perturb(_Scripted(0.0, 1)):
        return Fraction(0)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if perturb(_Scripted(middle / 2**53, 1)) else (low, middle)
    return Fraction(high, 2**53)


@pytest.mark.parametrize("epsilon, k", [(1e-6, 10**8), (0.01, 10**8), (1.0, 2**32), (1.0, 2**40),
                                        (10.0, rr.MAX_K)])
def test_grr_as_realised_by_the_sampler_is_eps_ldp_for_any_k(epsilon, k):
    """The keep probability the sampler REALISES (read back by probing), mixed with the exactly uniform
    integers(), gives a table whose exact ratio 1 + k alpha/(1 - alpha) is within the claim. A GRR that drew
    'keep' with a float probability e/(e + k - 1) overshot (eps 1 at k = 2^40 by 4e-5, at k = 2^62 eps 6.2)."""
    mechanism = GRR(epsilon, k)
    alpha = realised_keep_probability(lambda rng: mechanism.perturb([0], rng=rng)[0] == 0)
    ratio = 1 + k * alpha / (1 - alpha)
    assert 1 < ratio <= exp_bounds(epsilon)[0]
    assert mechanism.p - mechanism.q == pytest.approx(float(alpha), rel=1e-12)  # the estimator uses it


def test_olh_as_realised_by_the_sampler_is_eps_ldp_for_a_huge_g():
    """OLH's y is the same mixture over g buckets (``rr.randomized_response`` with the mechanism's alpha)."""
    mechanism = OLH(1e-6, k=10, g=P)
    alpha = realised_keep_probability(
        lambda rng: rr.randomized_response(np.array([0]), P, mechanism.alpha, rng)[0] == 0)
    assert 1 < 1 + P * alpha / (1 - alpha) <= exp_bounds(1e-6)[0]
    assert mechanism.p == pytest.approx(float(alpha + (1 - alpha) / P), rel=1e-12)


def test_a_domain_too_large_for_the_epsilon_is_refused():
    with pytest.raises(ValidationError, match=f"epsilon is 1.0 with k = {rr.MAX_K}; .*2\\^-53"):
        GRR(1.0, rr.MAX_K)


def test_tables_for_huge_k_have_constant_size_and_verify_fast():
    """GRR's table was k x k (k = 100,000: 80 GB) and HadamardResponse's k x K."""
    for mechanism in (GRR(1.0, 100_000), GRR(10.0, rr.MAX_K), OLH(1.0, P - 1),
                      HadamardResponse(1.0, 10**6), HadamardResponse(1.0, rr.MAX_K)):
        assert mechanism.privacy_table().shape[0] == 2 and mechanism.privacy_table().shape[1] <= 4
        certificate = mechanism.verify()
        # GRR at k = 2^62: alpha ~ 5e-15 loses up to 2^-53 / alpha = 2% to the grid, so eps is a little lower
        assert certificate.passed and mechanism.epsilon - 1e-3 <= certificate.epsilon <= mechanism.epsilon
    assert HadamardResponse(1.0, rr.MAX_K).K == 2**62
    with pytest.raises(ValidationError, match="full table"):
        GRR(1.0, 100_000).full_table()
    with pytest.raises(ValidationError, match="k <= 10"):
        HadamardResponse(1.0, 11).full_table(max_k=10)
    assert HadamardResponse(1.0, 10).full_table(max_k=10).shape == (10, 16)


@pytest.mark.parametrize("build", [GRR, OUE, HadamardResponse])
def test_k_is_capped_so_outputs_stay_in_int64(build):
    with pytest.raises(ValidationError, match="k is"):
        build(1.0, rr.MAX_K + 1)
    if build is not OUE:  # the largest k still perturbs (OUE's n * k bytes bound is tested below)
        # (GRR needs eps = 10 at this k: at eps = 1 it keeps the truth with probability below 2^-53)
        reports = build(10.0, rr.MAX_K).perturb([0, 1, rr.MAX_K - 1], rng=0)
        assert reports.dtype == np.int64 and reports.min() >= 0


@pytest.mark.parametrize("k, epsilon", [(2, 0.7), (3, 2.0), (5, 4.0)])
def test_oue_reduced_table_matches_the_full_enumeration(k, epsilon):
    e = implemented_exp(epsilon)
    full = np.empty((k, 2**k))
    for x in range(k):
        for column, bits in enumerate(itertools.product((0, 1), repeat=k)):
            one = [0.5 if j == x else 1 / (e + 1) for j in range(k)]
            full[x, column] = math.prod(o if b else 1 - o for o, b in zip(one, bits))
    reduced, passed = exact_epsilon(OUE(epsilon, k).privacy_table(), epsilon)
    assert passed
    assert reduced == pytest.approx(exact_epsilon(full, epsilon)[0], abs=1e-9)


@pytest.mark.parametrize("g, epsilon", [(2, 0.3), (3, 1.0), (6, 3.0)])
def test_olh_reduced_table_matches_the_full_grr_table(g, epsilon):
    e = implemented_exp(epsilon)
    full = np.full((g, g), 1 / (e + g - 1))
    np.fill_diagonal(full, e / (e + g - 1))
    assert OLH(epsilon, k=10, g=g).privacy_table().shape == (2, min(g, 3))  # no empty column for g = 2
    reduced, passed = exact_epsilon(OLH(epsilon, k=10, g=g).privacy_table(), epsilon)
    assert passed
    assert reduced == pytest.approx(exact_epsilon(full, epsilon)[0], abs=1e-9)


def test_olh_hash_choice_does_not_change_the_epsilon_on_a_toy_prime():
    """Full table over outputs (a, b, y) of OLH with a toy prime 7, g = 3, k = 4: its epsilon is the GRR one."""
    prime, g, k, epsilon = 7, 3, 4, 1.5
    e = implemented_exp(epsilon)
    keep, lie = e / (e + g - 1), 1 / (e + g - 1)
    columns = [(a, b, y) for a in range(1, prime) for b in range(prime) for y in range(g)]
    full = np.array([[(keep if ((a * x + b) % prime) % g == y else lie) / (prime * (prime - 1))
                      for a, b, y in columns] for x in range(k)])
    assert exact_epsilon(full, epsilon)[0] == pytest.approx(
        exact_epsilon(OLH(epsilon, k=k, g=g).privacy_table(), epsilon)[0], abs=1e-9)


def test_hadamard_tables_match_scipy_hadamard():
    epsilon, k = 1.1, 6
    mechanism = HadamardResponse(epsilon, k)
    e, size = implemented_exp(epsilon), 8
    assert mechanism.K == size
    h = hadamard(size)[1:k + 1]
    full = np.where(h == 1, e, 1.0) * 2 / ((e + 1) * size)
    assert np.allclose(mechanism.full_table(), full, rtol=1e-15, atol=0)
    # the reduced table: rows x = 0, 1; columns C_0 & C_1, C_0 - C_1, C_1 - C_0, neither, summed from scipy's H
    classes = [(h[0] == a) & (h[1] == b) for a, b in ((1, 1), (1, -1), (-1, 1), (-1, -1))]
    assert [c.sum() for c in classes] == [size // 4] * 4
    expected = np.array([[full[x, c].sum() for c in classes] for x in (0, 1)])
    assert np.allclose(mechanism.privacy_table(), expected, rtol=1e-15, atol=0)
    for x in (0, 1):  # every output of a class has the same probability under each row
        assert all(np.ptp(full[x, c]) == 0 for c in classes)


@pytest.mark.parametrize("epsilon", [0.05, 1.0, 4.0, 10.0])
@pytest.mark.parametrize("k", [2, 3, 4, 7, 8, 20])
def test_hadamard_reduced_table_matches_the_full_table(k, epsilon):
    mechanism = HadamardResponse(epsilon, k)
    size = mechanism.K
    full = np.where(hadamard(size)[1:k + 1] == 1, implemented_exp(epsilon), 1.0) * 2 / (
        (implemented_exp(epsilon) + 1) * size)
    reduced = mechanism.privacy_table()
    assert reduced.shape == (2, 4)
    assert np.allclose(reduced.sum(axis=1), 1, rtol=1e-14)
    eps_reduced, passed = exact_epsilon(reduced, epsilon)
    assert passed
    assert eps_reduced == pytest.approx(exact_epsilon(full, epsilon)[0], abs=1e-12)
    # every likelihood ratio of the full table, between any two inputs, is one of the reduced table's
    ratios = {r for column in reduced.T for r in (column[0] / column[1], column[1] / column[0])}
    full_ratios = {full[a, y] / full[b, y] for a in range(k) for b in range(k) for y in range(size)}
    assert full_ratios <= ratios


@pytest.mark.parametrize("k, m, epsilon", [(2, 4, 0.5), (3, 8, 2.0), (4, 6, 5.0)])
def test_harmony_categorical_reduced_table_matches_the_full_table(k, m, epsilon):
    mechanism = HarmonyCategorical(epsilon, k, m=m, seed=11)
    e = implemented_exp(epsilon)
    full = np.empty((k, 2 * m))
    for v in range(k):
        for s in range(m):
            for j, b in enumerate((1, -1)):
                full[v, 2 * s + j] = (e if b == mechanism.signs[s, v] else 1.0) / ((e + 1) * m)
    reduced, passed = exact_epsilon(mechanism.privacy_table(), epsilon)
    assert passed
    assert reduced == pytest.approx(exact_epsilon(full, epsilon)[0], abs=1e-9)


# ---------------------------------------------------------------- perturbation


def assert_rows_match(values, reports, table):
    """For every input x, the output counts match n_x * table[x] within 5 sigma per cell (binomial)."""
    for x, row in enumerate(table):
        n_x = np.count_nonzero(values == x)
        counts = np.bincount(reports[values == x], minlength=row.size)
        assert counts.size == row.size
        sigma = np.sqrt(n_x * row * (1 - row))
        assert np.all(np.abs(counts - n_x * row) <= 5 * sigma + 1e-9), (x, counts, n_x * row)


def test_grr_and_hadamard_outputs_follow_their_tables():
    rng = np.random.default_rng(5)
    epsilon, k = 0.8, 4
    e = implemented_exp(epsilon)
    values = rng.integers(0, k, 80_000)
    table = np.full((k, k), 1 / (e + k - 1))
    np.fill_diagonal(table, e / (e + k - 1))
    assert_rows_match(values, GRR(epsilon, k).perturb(values, rng=rng), table)
    k = 5
    values = rng.integers(0, k, 80_000)
    table = np.where(hadamard(8)[1:k + 1] == 1, e, 1.0) * 2 / ((e + 1) * 8)
    assert_rows_match(values, HadamardResponse(epsilon, k).perturb(values, rng=rng), table)


def test_oue_bits_have_the_documented_probabilities():
    epsilon, k, n = 1.0, 5, 20_001
    values = np.full(n, 3)
    oue = OUE(epsilon, k)
    packed = oue.perturb(values, rng=9)
    assert packed.dtype == np.uint8 and packed.shape == (n, 1)  # k bits packed little-endian into ceil(k/8) bytes
    reports = oue.bits(packed)
    assert reports.shape == (n, k) and set(np.unique(reports)) <= {0, 1}
    np.testing.assert_array_equal(reports, np.unpackbits(packed, axis=1, count=k, bitorder="little"))
    expected = np.full(k, 1 / (implemented_exp(epsilon) + 1))
    expected[3] = 0.5
    sigma = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(reports.mean(axis=0) - expected) <= 5 * sigma)


def test_oue_perturb_refuses_reports_above_the_byte_bound(monkeypatch):
    assert bit_reports.MAX_OUE_BYTES == 2**31
    with pytest.raises(ValidationError, match="n \\* ceil\\(k / 8\\) = 1 \\* 137438953472"):
        OUE(1.0, 2**40).perturb([0], rng=0)  # 128 GiB of packed bits: refused before allocating
    monkeypatch.setattr(bit_reports, "MAX_OUE_BYTES", 100)
    assert OUE(1.0, 10).perturb(np.arange(50) % 10, rng=0).shape == (50, 2)
    with pytest.raises(ValidationError, match="MAX_OUE_BYTES = 100"):
        OUE(1.0, 10).perturb(np.arange(51) % 10, rng=0)


def test_report_formats():
    values = np.array([0, 1, 2, 3])
    assert GRR(1.0, 4).perturb(values, rng=0).dtype == np.int64
    olh = OLH(1.0, 4).perturb(values, rng=0)
    assert olh.dtype == np.dtype([("a", "<i8"), ("b", "<i8"), ("y", "<i4")])
    assert np.all((olh["a"] >= 1) & (olh["a"] < P) & (olh["b"] >= 0) & (olh["b"] < P))
    assert HadamardResponse(1.0, 4).perturb(values, rng=0).dtype == np.int64
    harmony = HarmonyCategorical(1.0, 4, m=16, seed=2).perturb(values, rng=0)
    assert harmony.dtype == np.dtype([("row", "<i4"), ("sign", "i1")])
    assert set(np.unique(harmony["sign"])) <= {-1, 1}


# ---------------------------------------------------------------- estimation: closed forms


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_variances_at_f_zero_match_math_section_8(epsilon):
    e, k, n = math.exp(epsilon), 7, 1000
    zero = np.eye(k)[0]  # every value but 0 has f = 0
    g = round(e) + 1
    expected = {
        GRR(epsilon, k): (e + k - 2) / (e - 1) ** 2,
        OUE(epsilon, k): 4 * e / (e - 1) ** 2,
        OLH(epsilon, k): (e - 1 + g) ** 2 / ((e - 1) ** 2 * (g - 1)),
        HadamardResponse(epsilon, k): ((e + 1) / (e - 1)) ** 2,  # q(1-q)/(p-q)^2 with p = e/(e+1), q = 1/2
    }
    for mechanism, per_user in expected.items():
        assert n * mechanism.variance(zero, n)[1:] == pytest.approx(np.full(k - 1, per_user), rel=1e-6)


def test_olh_default_g_and_exact_q():
    for epsilon in (0.1, 1.0, 3.0, 10.0):
        assert OLH(epsilon, 3).g == round(math.exp(epsilon)) + 1
    for g in (2, 3, 7, 100, 12345):
        mechanism = OLH(1.5, 10, g=g)
        sizes = [len(range(z, P, g)) for z in range(g)]
        collision = Fraction(sum(s * (s - 1) for s in sizes), P * (P - 1))
        e = implemented_exp(1.5)
        keep = e / (e + g - 1)
        assert mechanism.p == pytest.approx(keep, rel=1e-14)
        expected = float(collision) * keep + (1 - float(collision)) * (1 - keep) / (g - 1)
        assert mechanism.q == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("prime", [5, 7, 11, 13])
def test_hash_collision_matches_brute_force_over_the_family(prime):
    a, b = np.meshgrid(np.arange(1, prime), np.arange(prime), indexing="ij")
    for g in range(2, prime + 3):
        hashes = [((a * x + b) % prime) % g for x in range(min(prime, 5))]
        for x, y in itertools.combinations(range(len(hashes)), 2):
            collisions = np.count_nonzero(hashes[x] == hashes[y])
            # int / int is correctly rounded, so the two floats agree exactly
            assert olh.hash_collision(g, prime) == collisions / (prime * (prime - 1))


def test_olh_support_matches_a_per_user_python_computation(monkeypatch):
    epsilon, k, g = 1.0, 9, 4
    mechanism = OLH(epsilon, k, g=g)
    values = np.random.default_rng(1).integers(0, k, 60)
    reports = mechanism.perturb(values, rng=2)
    support = [sum(((int(r["a"]) * v + int(r["b"])) % P) % g == int(r["y"]) for r in reports) for v in range(k)]
    expected = (np.array(support) / values.size - mechanism.q) / (mechanism.p - mechanism.q)
    assert np.allclose(mechanism.estimate(reports), expected, rtol=1e-13, atol=1e-13)
    monkeypatch.setattr(olh, "BLOCK", 100)  # 1 value per chunk
    assert np.allclose(mechanism.estimate(reports), expected, rtol=1e-13, atol=1e-13)


def test_olh_support_probability_for_other_values_is_q():
    """Users all with value 0: the fraction supporting value 1 estimates q (within 5 sigma)."""
    mechanism = OLH(0.5, 3, g=2)
    n = 100_000
    reports = mechanism.perturb(np.zeros(n, dtype=int), rng=4)
    supported = np.mean(((reports["a"] * 1 + reports["b"]) % P) % 2 == reports["y"])
    assert abs(supported - mechanism.q) <= 5 * math.sqrt(mechanism.q * (1 - mechanism.q) / n)


def test_hadamard_fwht_support_equals_the_direct_matrix_computation():
    epsilon, k = 1.0, 11
    mechanism = HadamardResponse(epsilon, k)
    assert mechanism.K == 16
    reports = np.random.default_rng(3).integers(0, 16, 5000)
    support = (hadamard(16)[1:k + 1] == 1).astype(int) @ np.bincount(reports, minlength=16)
    p = implemented_exp(epsilon) / (implemented_exp(epsilon) + 1)
    assert np.allclose(mechanism.estimate(reports), (support / 5000 - 0.5) / (p - 0.5), rtol=1e-13, atol=1e-13)


# ---------------------------------------------------------------- estimation: statistics

COUNTS = [12_000, 7_500, 5_000, 3_000, 2_500, 0]  # n = 30,000; one value nobody holds


@pytest.mark.parametrize("mechanism", [GRR(1.0, 6), OUE(1.0, 6), OLH(1.0, 6), OLH(2.0, 6, g=3),
                                       HadamardResponse(1.0, 6)], ids=repr)
def test_pure_protocols_are_unbiased_within_five_sigma(mechanism):
    values, f = population(COUNTS)
    estimate = mechanism.estimate(mechanism.perturb(values, rng=21))
    sigma = np.sqrt(mechanism.variance(f, values.size))
    assert np.all(np.abs(estimate - f) <= 5 * sigma), (estimate, f, sigma)
    assert estimate.sum() == pytest.approx(1.0, abs=10 * sigma.max())


def assert_variance_matches(estimates, variance):
    """Sample variance over R repetitions: (R-1) s^2 / sigma^2 ~ chi-square(R-1); two-sided 1e-4 per value."""
    repetitions = estimates.shape[0]
    statistic = (repetitions - 1) * estimates.var(axis=0, ddof=1) / variance
    alpha = 1e-4 / variance.size
    low, high = chi2.ppf(alpha / 2, repetitions - 1), chi2.isf(alpha / 2, repetitions - 1)
    assert np.all((statistic >= low) & (statistic <= high)), (statistic, low, high)


def repeated_estimates(mechanism, values, repetitions, seed, **options):
    reports = mechanism.perturb(np.tile(values, repetitions), rng=seed)
    n = values.size
    return np.array([mechanism.estimate(reports[r * n:(r + 1) * n], **options) for r in range(repetitions)])


@pytest.mark.parametrize("mechanism", [GRR(1.5, 4), OUE(1.5, 4), OLH(1.5, 4), HadamardResponse(1.5, 4)],
                         ids=repr)
def test_empirical_variance_matches_the_closed_form(mechanism):
    values, f = population([300, 150, 50, 0])
    estimates = repeated_estimates(mechanism, values, 400, seed=8)
    assert_variance_matches(estimates, mechanism.variance(f, values.size))


def test_norm_sub_consistency():
    mechanism = GRR(0.5, 6)
    values, _ = population([200, 100, 0, 0, 0, 0])
    reports = mechanism.perturb(values, rng=1)
    raw = mechanism.estimate(reports)
    assert raw.min() < 0  # otherwise the test shows nothing
    consistent = mechanism.estimate(reports, consistency="norm-sub")
    assert consistent.min() >= 0 and consistent.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.array_equal(consistent, norm_sub(raw))


# ---------------------------------------------------------------- Harmony categorical


def test_projection_signs_follow_the_documented_recipe():
    m, k, seed = 7, 5, 123
    mechanism = HarmonyCategorical(1.0, k, m=m, seed=seed)
    words = np.random.PCG64(np.random.SeedSequence(seed)).random_raw(1)  # m k = 35 bits fit in one word
    expected = [1 - 2 * ((int(words[0]) >> i) & 1) for i in range(m * k)]
    assert mechanism.signs.dtype == np.int8 and mechanism.signs.shape == (m, k)
    assert mechanism.signs.ravel().tolist() == expected
    again = HarmonyCategorical(3.0, k, m=m, seed=seed)
    assert np.array_equal(again.signs, mechanism.signs)
    assert not np.array_equal(HarmonyCategorical(1.0, k, m=m, seed=seed + 1).signs, mechanism.signs)
    big = HarmonyCategorical(1.0, 40, m=100, seed=5)
    assert abs(big.signs.mean()) < 5 / math.sqrt(big.signs.size)


def test_harmony_categorical_defaults():
    assert HarmonyCategorical(1.0, 3, seed=0).m == 4096
    assert HarmonyCategorical(1.0, 1500, seed=0).m == 6000
    with pytest.raises(ValidationError, match="m \\* k"):
        HarmonyCategorical(1.0, 5000, m=20_000)


def gram(mechanism):
    signs = mechanism.signs.astype(float)
    return signs.T @ signs / mechanism.m


def test_harmony_categorical_projection_has_mean_g_f_and_unbiased_method_recovers_f():
    mechanism = HarmonyCategorical(1.0, 4, m=6, seed=4)
    g = gram(mechanism)
    assert np.allclose(mechanism.gram, g)
    values, f = population([40_000, 25_000, 15_000, 0])
    reports = mechanism.perturb(values, rng=6)
    n = values.size
    projection = mechanism.estimate(reports, method="projection")
    sigma = np.sqrt(mechanism.variance(f, n, method="projection"))
    assert np.all(np.abs(projection - g @ f) <= 5 * sigma)
    assert np.max(np.abs(g @ f - f) / sigma) > 10  # the cross-talk bias is visible at this m
    assert np.allclose(mechanism.expected_estimate(f, method="projection"), g @ f)
    assert np.allclose(mechanism.expected_estimate(f), f)
    unbiased = mechanism.estimate(reports)  # the default method
    sigma = np.sqrt(mechanism.variance(f, n))
    assert np.all(np.abs(unbiased - f) <= 5 * sigma)
    assert np.allclose(unbiased, np.linalg.solve(g, projection), rtol=1e-10, atol=1e-12)
    # the paper's report alpha = c m Phi[s, v] (with the kept/flipped sign) gives the same projection
    c = (implemented_exp(1.0) + 1) / (implemented_exp(1.0) - 1)
    phi = mechanism.signs / math.sqrt(mechanism.m)
    z_bar = np.zeros(mechanism.m)
    np.add.at(z_bar, reports["row"], c * math.sqrt(mechanism.m) * reports["sign"])
    assert np.allclose(projection, (z_bar / n) @ phi, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_harmony_categorical_variance_matches_exact_moments_of_the_reports(epsilon):
    """Exact per-user moments from the full output distribution (s, b) with probability (1/m) Pr[b | signs[s, v]]
    and estimate terms c b signs[s, :] (projection) or G^-1 of it (unbiased)."""
    mechanism = HarmonyCategorical(epsilon, 3, m=5, seed=2)
    e, m, k, n = implemented_exp(epsilon), 5, 3, 50
    c = (e + 1) / (e - 1)
    inverse = np.linalg.inv(gram(mechanism))
    f = np.array([0.7, 0.2, 0.1])
    for method, transform in (("projection", np.eye(k)), ("unbiased", inverse)):
        variance = np.zeros(k)
        for v in range(k):
            terms, weights = [], []
            for s, b in itertools.product(range(m), (1, -1)):
                terms.append(transform @ (c * b * mechanism.signs[s].astype(float)))
                weights.append((e if b == mechanism.signs[s, v] else 1.0) / ((e + 1) * m))
            terms, weights = np.array(terms), np.array(weights)
            mean = weights @ terms
            variance += f[v] * (weights @ (terms - mean) ** 2)
        assert np.allclose(mechanism.variance(f, n, method=method), variance / n, rtol=1e-10)


@pytest.mark.parametrize("method", ["projection", "unbiased"])
def test_harmony_categorical_empirical_variance_matches_the_closed_form(method):
    mechanism = HarmonyCategorical(4.0, 3, m=8, seed=4)
    values, f = population([250, 40, 10])
    estimates = repeated_estimates(mechanism, values, 400, seed=3, method=method)
    assert_variance_matches(estimates, mechanism.variance(f, values.size, method=method))


def test_chunked_projection_and_gram_agree(monkeypatch):
    mechanism = HarmonyCategorical(1.0, 5, m=12, seed=8)
    reports = mechanism.perturb(np.arange(5).repeat(30), rng=1)
    direct = mechanism.estimate(reports)
    monkeypatch.setattr(harmony_categorical, "BLOCK", 13)  # one column / one row per chunk
    chunked = HarmonyCategorical(1.0, 5, m=12, seed=8)
    assert np.allclose(chunked.estimate(reports), direct, rtol=1e-13, atol=1e-13)
    assert np.allclose(chunked.gram, gram(mechanism))


def test_unbiased_method_needs_an_invertible_gram():
    reports = HarmonyCategorical(1.0, 5, m=4, seed=1).perturb([0, 1, 2], rng=0)
    with pytest.raises(ValidationError, match="m >= k"):
        HarmonyCategorical(1.0, 5, m=4, seed=1).estimate(reports, method="unbiased")
    seed = next(s for s in range(100) if abs(gram(HarmonyCategorical(1.0, 2, m=2, seed=s))[0, 1]) == 1)
    mechanism = HarmonyCategorical(1.0, 2, m=2, seed=seed)
    with pytest.raises(ValidationError, match="nonsingular"):
        mechanism.estimate(mechanism.perturb([0, 1], rng=0), method="unbiased")


# ---------------------------------------------------------------- parameters


@pytest.mark.parametrize("mechanism", [GRR(1.0, 3), OUE(2.0, 5), OLH(3.0, 7), OLH(1.0, 7, g=5),
                                       HadamardResponse(0.5, 9), HarmonyCategorical(1.0, 4, m=16, seed=77),
                                       HarmonyCategorical(1.0, 4, m=16)], ids=repr)
def test_parameters_round_trip(mechanism):
    parameters = json.loads(json.dumps(mechanism.parameters()))
    again = type(mechanism)(**parameters)
    assert again == mechanism
    values = np.arange(3).repeat(4)
    reports, again_reports = mechanism.perturb(values, rng=5), again.perturb(values, rng=5)
    assert np.array_equal(reports, again_reports)
    assert np.array_equal(mechanism.estimate(reports), again.estimate(again_reports))


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("build, field", [
    (lambda: GRR(1.0, 1), "k"),
    (lambda: OUE(1.0, 2.5), "k"),
    (lambda: HadamardResponse(1.0, True), "k"),
    (lambda: OLH(1.0, P), "k"),
    (lambda: OLH(1.0, 5, g=1), "g"),
    (lambda: OLH(1.0, 5, g=P + 1), "g"),
    (lambda: HarmonyCategorical(1.0, 5, m=0), "m"),
    (lambda: HarmonyCategorical(1.0, 5, seed=-1), "seed"),
    (lambda: GRR(0.0, 3), "epsilon"),
])
def test_bad_parameters_are_refused(build, field):
    with pytest.raises(ValidationError, match=field):
        build()


@pytest.mark.parametrize("name", NAMES)
def test_bad_values_are_refused(name):
    mechanism = make(name, 1.0)
    for values, message in [([0, 1, 9], "values contains 9"), ([[0, 1]], "values has shape"),
                            ([0.5], "values contains 0.5"), ([], "values is empty")]:
        with pytest.raises(ValidationError, match=message):
            mechanism.perturb(values, rng=0)


def olh_reports(**change):
    reports = OLH(1.0, 4, g=3).perturb([0, 1, 2], rng=0)
    for key, value in change.items():
        reports[key][1] = value
    return reports


@pytest.mark.parametrize("mechanism, reports, message", [
    (GRR(1.0, 4), [0, 4], "reports contains 4"),
    (GRR(1.0, 4), [[0, 1]], "reports has shape"),
    (HadamardResponse(1.0, 4), [8], "reports contains 8"),
    (OUE(1.0, 3), np.zeros((2, 4), dtype=np.uint8), "reports has shape"),
    (OUE(1.0, 3), np.array([[0, 2, 0]]), "reports\\[0, 1\\] is 2"),
    (OUE(1.0, 3), np.zeros((2, 3)), "reports has dtype float64"),
    (OLH(1.0, 4, g=3), np.array([0, 1]), "structured array"),
    (OLH(1.0, 4, g=3), olh_reports(a=0), "reports\\['a'\\]\\[1\\] is 0"),
    (OLH(1.0, 4, g=3), olh_reports(b=P), "reports\\['b'\\]"),
    (OLH(1.0, 4, g=3), olh_reports(y=3), "reports\\['y'\\]"),
    (OLH(1.0, 4, g=3), olh_reports()[:0], "non-empty"),
    (HarmonyCategorical(1.0, 4, m=8, seed=1), np.array([(8, 1)], dtype=[("row", "<i4"), ("sign", "i1")]),
     "reports\\['row'\\]"),
    (HarmonyCategorical(1.0, 4, m=8, seed=1), np.array([(2, 0)], dtype=[("row", "<i4"), ("sign", "i1")]),
     "reports\\['sign'\\]\\[0\\] is 0"),
    (HarmonyCategorical(1.0, 4, m=8, seed=1), np.array([(2, 0.5)], dtype=[("row", "<i4"), ("sign", "f8")]),
     "reports\\['sign'\\] has dtype"),
])
def test_malformed_reports_are_refused(mechanism, reports, message):
    with pytest.raises(ValidationError, match=message):
        mechanism.estimate(reports)


def retyped(reports, **types):
    """``reports`` with some fields cast to other dtypes (values kept)."""
    dtype = np.dtype([(name, types.get(name, reports.dtype[name])) for name in reports.dtype.names])
    out = np.empty(reports.size, dtype=dtype)
    for name in reports.dtype.names:
        out[name] = reports[name]
    return out


def test_structured_reports_need_exactly_the_mechanisms_fields():
    from lipdesign.mechanisms import HarmonyMixed

    categorical = HarmonyCategorical(1.0, 3, m=8, seed=1)
    mixed = HarmonyMixed(1.0, [3, 3], m=8, seed=1).perturb([[0, 1], [2, 0], [1, 1]], rng=0)
    assert set(mixed.dtype.names) > {"row", "sign"}  # another mechanism's reports, with an extra field
    with pytest.raises(ValidationError, match="exactly the fields row, sign"):
        categorical.estimate(mixed)
    olh = OLH(1.0, 4, g=3)
    reports = olh.perturb([0, 1, 2], rng=0)
    extra = np.empty(3, dtype=[*olh.report_dtype.descr, ("c", "<i8")])
    for name in ("a", "b", "y"):
        extra[name] = reports[name]
    extra["c"] = 0
    with pytest.raises(ValidationError, match="exactly the fields a, b, y"):
        olh.estimate(extra)
    reordered = np.empty(3, dtype=[("y", "<i8"), ("b", "<u8"), ("a", "<i4")])  # order and widths are free
    for name in ("a", "b", "y"):
        reordered[name] = reports[name]
    assert np.array_equal(olh.estimate(reordered), olh.estimate(reports))


@pytest.mark.parametrize("dtype", ["<f8", "?", ("<i8", (2,))], ids=["float", "bool", "subarray"])
@pytest.mark.parametrize("field", ["a", "b", "y"])
def test_olh_report_fields_must_be_integers(field, dtype):
    olh = OLH(1.0, 4, g=3)
    bad = np.ones(3, dtype=[(name, dtype if name == field else olh.report_dtype[name]) for name in "aby"])
    with pytest.raises(ValidationError, match=f"reports\\['{field}'\\] has dtype .*scalar integer"):
        olh.estimate(bad)


def test_harmony_categorical_row_must_be_an_integer():
    mechanism = HarmonyCategorical(1.0, 4, m=8, seed=1)
    reports = mechanism.perturb([0, 1, 2], rng=0)
    with pytest.raises(ValidationError, match="reports\\['row'\\] has dtype float64; .*scalar integer"):
        mechanism.estimate(retyped(reports, row="<f8"))
    with pytest.raises(ValidationError, match="reports\\['sign'\\] has dtype float32"):
        mechanism.estimate(retyped(reports, sign="<f4"))


def test_bad_estimate_and_variance_arguments_are_refused():
    grr, harmony = GRR(1.0, 3), HarmonyCategorical(1.0, 3, m=8, seed=1)
    with pytest.raises(ValidationError, match="consistency"):
        grr.estimate([0, 1], consistency="clip")
    with pytest.raises(ValidationError, match="method"):
        harmony.estimate(harmony.perturb([0], rng=0), method="lasso")
    with pytest.raises(ValidationError, match="frequencies"):
        grr.variance([0.5, 0.5], 10)
    with pytest.raises(ValidationError, match="n is 0"):
        grr.variance([0.5, 0.25, 0.25], 0)
    with pytest.raises(ValidationError, match="method"):
        harmony.variance([0.5, 0.25, 0.25], 10, method="exact")
