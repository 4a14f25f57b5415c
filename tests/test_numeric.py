"""Tests of lipdesign.mechanisms.numeric and lipdesign.mechanisms.piecewise against docs/math.md §9 and independent
computations.

Statistical tests are seeded; their tolerances come from the closed-form variances (5 standard deviations).
Duchi's mechanism is checked exactly by enumerating its output space with rational arithmetic.
"""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize, stats

from lipdesign.errors import ValidationError
from lipdesign.mechanisms import Duchi, HarmonyNumeric, Hybrid, Laplace, Piecewise
from lipdesign.mechanisms.base import Guarantee, Mechanism
from lipdesign.mechanisms.numeric import DUCHI_MAX_D
from lipdesign.mechanisms.piecewise import DEFAULT_GRID, HYBRID_THRESHOLD, MAX_GRID
from lipdesign.mechanisms.rr import one_bit_table
from lipdesign.mechanisms.sampling import implemented_exp, public_index
from lipdesign.notions import LDP
from lipdesign.verification import verify_table as verify

Z_LIMIT = 5.0  # standard deviations allowed in every statistical check


def population(seed, n, d):
    """Values in [-1, 1]^d with mass at the extremes, at 0 and a coordinate-dependent mean."""
    rng = np.random.default_rng(seed)
    values = np.clip(rng.uniform(-1, 1, (n, d)) + np.linspace(-0.6, 0.6, d), -1, 1)
    values[: n // 10] = 1.0
    values[n // 10: n // 5, ::2] = -1.0
    values[n // 5: n // 4] = 0.0
    return values


def one_bit_c(epsilon):
    e = implemented_exp(epsilon)
    return (e + 1) / (e - 1)


def assert_unbiased(estimate, truth, variance):
    """|estimate - truth| <= Z_LIMIT sd per coordinate, sd from a closed-form variance."""
    assert np.all(np.abs(estimate - truth) <= Z_LIMIT * np.sqrt(variance)), (estimate, truth, variance)


def assert_variance(contributions, values, variance, bound):
    """sum_i (X_ij - t_ij)^2 / n^2 is unbiased for the variance of the mean of the contributions X_ij (E[X_ij] =
    t_ij, independent users). With |X - t| <= bound, Var((X - t)^2) <= bound^2 E[(X - t)^2], so its standard
    deviation is at most bound sqrt(variance) / n."""
    n = values.shape[0]
    observed = ((contributions - values) ** 2).sum(axis=0) / n**2
    assert np.all(np.abs(observed - variance) <= Z_LIMIT * bound * np.sqrt(variance) / n), (observed, variance)


# ----------------------------------------------------------------------------------------------------- Laplace

def discrete_laplace_moments(decay, grid, i):
    """(Pr[report j | g_i] for j = 0..M, E[report | g_i], E[report^2 | g_i]) of docs/math.md §9.9 by summing the
    unclamped two-sided geometric law over a wide window: a clamped report is the mean position beyond the end,
    computed here by that sum (not by the memoryless closed form)."""
    steps = np.arange(-4000, grid + 4001)
    weight = (1 - decay) / (1 + decay) * decay ** np.abs(steps - i)
    below, above = steps <= 0, steps >= grid
    position = -1.0 + 2.0 * steps / grid
    low_value = (weight[below] * position[below]).sum() / weight[below].sum()
    high_value = (weight[above] * position[above]).sum() / weight[above].sum()
    inside = ~below & ~above
    probabilities = np.concatenate([[weight[below].sum()], weight[inside], [weight[above].sum()]])
    values = np.concatenate([[low_value], position[inside], [high_value]])
    return probabilities, values, (probabilities * values).sum(), (probabilities * values**2).sum()


@pytest.mark.parametrize("epsilon, d, grid", [(1.0, 1, 64), (0.5, 4, 16), (3.0, 5, 64), (10.0, 1, 256)])
def test_laplace_table_reports_and_variance_against_the_unclamped_law(epsilon, d, grid):
    mechanism = Laplace(epsilon, d, grid)
    assert mechanism.margin == 0.0
    moments = [discrete_laplace_moments(mechanism.decay, grid, i) for i in range(grid + 1)]
    np.testing.assert_allclose(mechanism.table, [m[0] for m in moments], rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(mechanism.outputs, moments[0][1], rtol=1e-12)
    # unbiased at every grid point: E[report | g_i] = g_i
    np.testing.assert_allclose([m[2] for m in moments], -1.0 + 2.0 * np.arange(grid + 1) / grid, atol=1e-9)
    # the ideal table's epsilon is eps / d (up to the margin of the implemented exponential)
    assert verify(mechanism.table, LDP(10.0), exact=False).epsilon == pytest.approx(epsilon / d, rel=1e-8)
    values = population(1, 50_000, d)
    second = np.array([m[3] for m in moments])
    position = (values + 1) * grid / 2
    low = np.minimum(np.floor(position), grid - 1).astype(int)
    fraction = position - low
    expected = ((1 - fraction) * second[low] + fraction * second[low + 1] - values**2).sum(axis=0) / values.shape[0]**2
    np.testing.assert_allclose(mechanism.variance(values), expected, rtol=1e-8)
    # below Lap(2d/eps)'s 8 d^2 / eps^2 plus the rounding's 1 / M^2 per user
    assert np.all(mechanism.variance(values) * values.shape[0] <= 8 * d**2 / epsilon**2 * (1 + 1e-8) + 1 / grid**2)
    reports = mechanism.perturb(values, rng=np.random.default_rng(2))
    assert np.all(np.isin(reports, mechanism.outputs))
    assert_unbiased(mechanism.estimate(reports), values.mean(axis=0), mechanism.variance(values))
    assert_variance(reports, values, mechanism.variance(values), mechanism.bound + 1)


@pytest.mark.parametrize("epsilon, grid", [(1e-6, 64), (1e-6, 256), (1.5e-6, 256), (1e-3, 256), (10.0, 2)])
def test_laplace_realised_table_verifies_across_the_range(epsilon, grid):
    """The sampler's realised table (not the ideal one) is what is verified; near eps = 1e-6 with a fine grid the
    margin ladder is needed, and the one used is reported."""
    mechanism = Laplace(epsilon, 1, grid)
    realized = mechanism.sampler.realized_table()
    np.testing.assert_array_equal(mechanism.privacy_table(), realized)
    certificate = verify(realized, LDP(epsilon))
    assert certificate.passed and certificate.epsilon <= epsilon
    assert mechanism.verify().passed and mechanism.margin in (0.0, 1e-4, 1e-3, 1e-2, 1e-1)
    # every report has positive probability under every input: no output rules an input out (Mironov's attack)
    assert np.all(realized > 0)


def test_laplace_outputs_do_not_depend_on_the_input():
    """The floating-point attack on the continuous Laplace sampler fails here: the reports given t = 0 and t = 1
    come from the same finite set, and each report value appears under both inputs."""
    mechanism = Laplace(2.0, 1, 8)
    zero = mechanism.perturb(np.zeros(200_000), rng=5)
    one = mechanism.perturb(np.ones(200_000), rng=6)
    assert set(np.unique(zero)) == set(np.unique(one)) == set(mechanism.outputs)


def test_laplace_ranges():
    with pytest.raises(ValidationError, match=r"epsilon is 2e-06; Laplace needs epsilon / d >= 1e-06 per coordinate"):
        Laplace(2e-6, 3)
    with pytest.raises(ValidationError, match="grid is 1"):
        Laplace(1.0, 1, 1)
    with pytest.raises(ValidationError, match="grid is 257"):
        Laplace(1.0, 1, 257)


def test_laplace_accepts_a_vector_when_d_is_1():
    mechanism = Laplace(1.0)
    reports = mechanism.perturb([0.5, -0.5, 1.0], rng=3)
    assert reports.shape == (3, 1)
    assert mechanism.estimate(reports[:, 0]).shape == (1,)


# ------------------------------------------------------------------------------------------ Duchi, exact checks

def duchi_exact(d, E, halve_even=True):
    """(C, Z, Pr[u = 1], B) of docs/math.md §9 as Fractions for e^eps = E; halve_even=False drops the 1/2 in C (the
    uncorrected definition)."""
    C = Fraction(2 ** (d - 1))
    if d % 2 == 0 and halve_even:
        C -= Fraction(math.comb(d, d // 2), 2)
    Z = (E - 1) * C + 2**d
    return C, Z, E * C / Z, (2**d + C * (E - 1)) / (math.comb(d - 1, (d - 1) // 2) * (E - 1))


def sign_vectors(d):
    return np.array(list(itertools.product((-1, 1), repeat=d)), dtype=np.int64)


def duchi_defects(d, E, halve_even=True):
    """Enumerate Pr[s | v] for every v in {-1, 1}^d: uniform on T+ = {s : s.v > 0} with total Pr[u = 1], uniform
    on the rest otherwise (T+ counted, not taken from the formula). Returns the defects found among: 'levels'
    (some probability is not E/Z or 1/Z), 'ratio' (largest/smallest probability != E), 'mass', 'bias'."""
    _, Z, plus_probability, B = duchi_exact(d, E, halve_even)
    signs = sign_vectors(d)
    defects = set()
    for v in signs:
        in_plus = signs @ v > 0
        plus = Fraction(int(in_plus.sum()))
        high, low = plus_probability / plus, (1 - plus_probability) / (2**d - plus)
        if (high, low) != (E / Z, 1 / Z):
            defects.add("levels")
        if high / low != E:
            defects.add("ratio")
        if high * plus + low * (2**d - plus) != 1:
            defects.add("mass")
        mean = [B * (high * int(signs[in_plus, j].sum()) + low * int(signs[~in_plus, j].sum())) for j in range(d)]
        if mean != [Fraction(int(x)) for x in v]:
            defects.add("bias")
    return defects


@pytest.mark.parametrize("E", [Fraction(3), Fraction(7, 2)])
@pytest.mark.parametrize("d", range(1, 9))
def test_duchi_is_exactly_eps_ldp_and_unbiased(d, E):
    assert duchi_defects(d, E) == set()


@pytest.mark.parametrize("d", [2, 4, 6])
def test_uncorrected_even_d_definition_fails_the_same_check(d):
    assert {"ratio", "bias"} <= duchi_defects(d, Fraction(3), halve_even=False)


@pytest.mark.parametrize("d", range(1, 9))
@pytest.mark.parametrize("epsilon", [0.3, 2.0, 10.0])
def test_duchi_float_parameters_match_the_exact_formulas(d, epsilon):
    mechanism = Duchi(epsilon, d)
    C, Z, plus_probability, B = duchi_exact(d, Fraction(mechanism.exp_epsilon))
    assert mechanism.bound == pytest.approx(float(B), rel=1e-12)
    assert mechanism.plus_probability == pytest.approx(float(plus_probability), rel=1e-12)
    assert mechanism.plus_count == C
    signs, table = mechanism.full_table()
    dots = signs.astype(np.int64) @ signs.T.astype(np.int64)
    expected = np.where(dots > 0, float(Fraction(mechanism.exp_epsilon) / Z), float(1 / Z))
    np.testing.assert_allclose(table, expected, rtol=1e-12)
    np.testing.assert_allclose(table.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(table @ (mechanism.bound * signs), signs, atol=1e-9)


@pytest.mark.parametrize("d", range(1, 7))
@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_duchi_reduced_table_has_the_full_tables_epsilon(d, epsilon):
    mechanism = Duchi(epsilon, d)
    reduced = mechanism.verify()
    signs, table = mechanism.full_table()
    full = verify(table, LDP(epsilon), exact=True)
    assert reduced.passed and full.passed
    assert reduced.epsilon == pytest.approx(full.epsilon, abs=1e-9)
    assert reduced.epsilon == pytest.approx(epsilon, abs=1e-9)
    # The reduced rows are the full rows v0 = (1,...,1) and -v0 summed over the groups s.v0 > 0, < 0, = 0.
    ones = np.ones(d, dtype=np.int64)
    dot = signs.astype(np.int64) @ ones
    rows = [np.flatnonzero((signs == 1).all(axis=1))[0], np.flatnonzero((signs == -1).all(axis=1))[0]]
    groups = [dot > 0, dot < 0] + ([dot == 0] if d % 2 == 0 else [])
    grouped = np.array([[table[row, group].sum() for group in groups] for row in rows])
    np.testing.assert_allclose(np.asarray(mechanism.privacy_table(), dtype=float), grouped, rtol=1e-12)  # realised


def test_duchi_full_table_is_refused_for_large_d():
    with pytest.raises(ValidationError, match="d is 13"):
        Duchi(1.0, 13).full_table()


@pytest.mark.parametrize("epsilon, d, t", [
    (1.0, 1, [0.2]), (1.0, 2, [1.0, -0.5]), (1.0, 3, [0.3, -0.8, 1.0]), (1.0, 4, [0.5, -1.0, 0.0, 0.9]),
    (1.0, 5, [1.0] * 5), (1.0, 6, [0.1, -0.2, 0.9, -1.0, 0.5, 0.0]), (5.0, 6, [1.0, 1.0, -1.0, 0.0, 0.3, 0.0]),
    (10.0, 3, [-1.0, -1.0, -1.0]),
])
def test_duchi_samples_follow_the_exact_distribution(epsilon, d, t):
    """Chi-square of the 2^d output frequencies for one input t against sum_v Pr[v | t] Pr[s | v]."""
    mechanism = Duchi(epsilon, d)
    n = 100_000
    reports = mechanism.perturb(np.tile(t, (n, 1)), rng=np.random.default_rng(4))
    np.testing.assert_allclose(np.abs(reports), mechanism.bound, rtol=1e-15)
    code = ((reports > 0) * (2 ** np.arange(d - 1, -1, -1))).sum(axis=1)  # index in sign_vectors(d)
    observed = np.bincount(code, minlength=2**d)
    E = Fraction(mechanism.exp_epsilon)
    _, Z, _, _ = duchi_exact(d, E)
    signs = sign_vectors(d)
    prob_v = np.prod(np.where(signs == 1, (1 + np.array(t)) / 2, (1 - np.array(t)) / 2), axis=1)
    given_v = np.where(signs @ signs.T > 0, float(E / Z), float(1 / Z))
    expected = n * prob_v @ given_v
    keep = expected > 0
    assert observed[~keep].sum() == 0
    statistic = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert statistic <= stats.chi2.ppf(1 - 1e-6, keep.sum() - 1)


class ScriptedGenerator(np.random.Generator):
    """A Generator whose ``random`` returns scripted constants (one per call, broadcast to the size) and whose
    ``integers`` returns scripted fair-bit matrices (one per call), to pin down Duchi's map from draws to
    outputs."""

    def __init__(self, uniforms, bits):
        super().__init__(np.random.PCG64(0))
        self.uniforms, self.bits = list(uniforms), list(bits)

    def random(self, size=None, dtype=np.float64, out=None):
        return np.full(size, self.uniforms.pop(0), dtype=float)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        assert (low, high, endpoint) == (0, 2, False)  # fair bits only
        bits = np.asarray(self.bits.pop(0), dtype=dtype)
        assert bits.shape == size
        return bits


def test_duchi_draws_the_agreeing_set_from_fair_bits_by_rejection():
    """Why the sampler is exact at every d: the subset of coordinates agreeing with v is a uniform vector w of
    fair bits, redrawn (for the rejected users only) until (sum(w) > 0) == u with u ~ Bernoulli(plus_probability);
    given u, the accepted w is exactly uniform on T+ or on its complement, and s = B w v.

    The earlier sampler drew the agreement count kappa from a float CDF, which at d = 60 gave Pr[kappa = d] = 0
    exactly (the all-agreeing output B v was impossible, e.g. B 1 for t = +1 but not for t = -1: eps = infinity)
    and Pr[kappa = 0] = 2^-53 instead of ~2^-60. Such tail probabilities cannot be checked by sampling, so this
    test scripts the draws: every fair-bit pattern maps to its output, including the all-agree one at d = 60."""
    d = 60
    mechanism = Duchi(1.0, d)
    assert 0.0 < mechanism.plus_probability < 0.99
    ones, zeros = np.ones(d, dtype=np.int8), np.zeros(d, dtype=np.int8)
    half = np.repeat(np.int8([1, 0]), d // 2)  # sum(w) = 0: not in T+
    above = half.copy()
    above[d // 2] = 1  # sum(w) = 2 > 0: in T+
    values = np.array([[1.0] * d, [1.0] * d, [-1.0] * d])
    rng = ScriptedGenerator(
        uniforms=[0.0,  # v: 0 < (1 + t)/2, so v = +1 for t = +1 and v = -1 for t = -1
                  0.99],  # u: 0.99 >= plus_probability, so u = 0 (outside T+) for every user
        bits=[np.array([ones, zeros, ones]),  # round 1: user 0 rejected (all agree is in T+), 1 accepted, 2 rejected
              np.array([above, half]),  # round 2: user 0 rejected, user 2 accepted
              np.array([zeros])])  # round 3: user 0 accepted
    reports = mechanism.perturb(values, rng=rng)
    assert rng.uniforms == [] and rng.bits == []
    B = mechanism.bound
    np.testing.assert_array_equal(reports, np.array([-B * np.ones(d), -B * np.ones(d), -B * (2.0 * half - 1)]))
    # u = 1: the all-agreeing pattern is accepted at once and gives B v = B 1 for t = +1, -B 1 for t = -1.
    rng = ScriptedGenerator(uniforms=[0.0, 0.0], bits=[np.array([ones, zeros, ones]), np.array([above])])
    reports = mechanism.perturb(values, rng=rng)
    np.testing.assert_array_equal(reports, np.array([B * np.ones(d), B * (2.0 * above - 1), -B * np.ones(d)]))


def test_duchi_agreement_count_at_d_60():
    """At t = +1 (v = 1) the count kappa of positive outputs is Binomial(60, 1/2) conditioned on kappa > 30 with
    probability plus_probability, else conditioned on kappa <= 30: the T+ share within 5 sd and a chi-square of
    kappa (tails pooled to expected counts >= 5) within each half."""
    d, n = 60, 200_000
    mechanism = Duchi(2.0, d)
    reports = mechanism.perturb(np.ones((n, d)), rng=np.random.default_rng(31))
    np.testing.assert_array_equal(np.abs(reports), mechanism.bound)
    kappa = (reports > 0).sum(axis=1)
    p = mechanism.plus_probability
    plus = kappa > d / 2
    assert abs(plus.mean() - p) <= Z_LIMIT * math.sqrt(p * (1 - p) / n)
    weights = np.array([math.comb(d, k) for k in range(d + 1)], dtype=float)
    for half, support in ((plus, np.arange(d // 2 + 1, d + 1)), (~plus, np.arange(0, d // 2 + 1))):
        expected = half.sum() * weights[support] / weights[support].sum()
        observed = np.bincount(kappa[half], minlength=d + 1)[support]
        assert np.bincount(kappa[half], minlength=d + 1).sum() == observed.sum()  # no kappa outside the half
        keep = expected >= 5  # the bins of expected count below 5 (both tails) are pooled into one
        observed = np.append(observed[keep], observed[~keep].sum())
        expected = np.append(expected[keep], expected[~keep].sum())
        statistic = ((observed - expected) ** 2 / expected).sum()
        assert statistic <= stats.chi2.ppf(1 - 1e-6, observed.size - 1)


def test_duchi_d_is_capped_and_exact_at_the_cap():
    """Construction time is measured by benchmarks, not asserted here (a loaded CI machine is slow)."""
    assert DUCHI_MAX_D == 4096
    for d in (DUCHI_MAX_D + 1, 20_000, 10**9):
        with pytest.raises(ValidationError, match=f"d is {d}; Duchi needs d <= 4096"):
            Duchi(1.0, d)
    mechanism = Duchi(1.0, DUCHI_MAX_D)
    C, _, plus_probability, B = duchi_exact(DUCHI_MAX_D, Fraction(mechanism.exp_epsilon))
    assert mechanism.plus_count == C
    assert mechanism.plus_probability == pytest.approx(float(plus_probability), rel=1e-12)
    assert mechanism.bound == pytest.approx(float(B), rel=1e-12)
    reports = mechanism.perturb(np.zeros((3, DUCHI_MAX_D)), rng=32)
    np.testing.assert_array_equal(np.abs(reports), mechanism.bound)


@pytest.mark.parametrize("epsilon, d", [(1.0, 1), (0.7, 2), (2.0, 3), (1.0, 4), (4.0, 7)])
def test_duchi_unbiased_with_its_variance(epsilon, d):
    values = population(5, 200_000, d)
    mechanism = Duchi(epsilon, d)
    B = float(duchi_exact(d, Fraction(mechanism.exp_epsilon))[3])
    expected = (B**2 - values**2).sum(axis=0) / values.shape[0] ** 2
    np.testing.assert_allclose(mechanism.variance(values), expected, rtol=1e-12)
    reports = mechanism.perturb(values, rng=np.random.default_rng(6))
    assert_unbiased(mechanism.estimate(reports), values.mean(axis=0), expected)
    assert_variance(reports, values, expected, B + 1)


# ------------------------------------------------------------------------------------------------ HarmonyNumeric

def harmony_contributions(reports, d, scale):
    """The per-user vector scale * sign in the reported coordinate, 0 elsewhere."""
    contributions = np.zeros((reports.size, d))
    contributions[np.arange(reports.size), reports["coordinate"]] = scale * reports["sign"]
    return contributions


@pytest.mark.parametrize("epsilon, d", [(1.0, 1), (0.5, 4), (2.0, 5)])
def test_harmony_private_unbiased_with_its_variance(epsilon, d):
    values = population(7, 200_000, d)
    mechanism = HarmonyNumeric(epsilon, d)
    c = one_bit_c(epsilon)
    expected = (d * c**2 - values**2).sum(axis=0) / values.shape[0] ** 2
    np.testing.assert_allclose(mechanism.variance(values), expected, rtol=1e-12)
    reports = mechanism.perturb(values, rng=np.random.default_rng(8))
    assert reports.dtype == np.dtype([("coordinate", "<i4"), ("sign", "i1")])
    assert set(np.unique(reports["sign"])) <= {-1, 1}
    assert_unbiased(mechanism.estimate(reports), values.mean(axis=0), expected)
    assert_variance(harmony_contributions(reports, d, d * c), values, expected, d * c + 1)


@pytest.mark.parametrize("d", [1, 3, 6])
def test_harmony_public_coordinates(d):
    n, epsilon = 200_000, 1.5
    values = population(9, n, d)
    user_ids = np.random.default_rng(10).permutation(10 * n)[:n]
    mechanism = HarmonyNumeric(epsilon, d, coordinates="public", seed=12345)
    first = mechanism.perturb(values, rng=np.random.default_rng(11), user_ids=user_ids)
    second = HarmonyNumeric(**mechanism.parameters()).perturb(values, rng=np.random.default_rng(12), user_ids=user_ids)
    np.testing.assert_array_equal(first["coordinate"], second["coordinate"])
    assert not np.array_equal(first["sign"], second["sign"])
    np.testing.assert_array_equal(first["coordinate"], public_index(12345, user_ids, d))
    # Buckets are near uniform: multinomial counts within 5 sd.
    counts = np.bincount(first["coordinate"], minlength=d)
    assert np.all(np.abs(counts - n / d) <= Z_LIMIT * math.sqrt(n * (1 / d) * (1 - 1 / d)) + 1e-9)
    # Given the buckets, the estimate is unbiased for each bucket's mean with variance sum (c^2 - t^2) / n_j^2.
    c = one_bit_c(epsilon)
    bucket = first["coordinate"]
    own = values[np.arange(n), bucket]
    truth = np.bincount(bucket, weights=own, minlength=d) / counts
    expected = np.bincount(bucket, weights=c**2 - own**2, minlength=d) / counts**2
    np.testing.assert_allclose(mechanism.variance(values, user_ids=user_ids), expected, rtol=1e-12)
    for reports in (first, second):
        assert_unbiased(mechanism.estimate(reports), truth, expected)
    deviations = (c * first["sign"] - own) ** 2
    observed = np.bincount(bucket, weights=deviations, minlength=d) / counts**2
    assert np.all(np.abs(observed - expected) <= Z_LIMIT * (c + 1) * np.sqrt(expected) / counts)


def test_harmony_public_estimate_is_nan_for_an_empty_coordinate():
    mechanism = HarmonyNumeric(1.0, 3, coordinates="public", seed=1)
    reports = np.array([(0, 1), (0, -1), (2, 1)], dtype=[("coordinate", "<i4"), ("sign", "i1")])
    estimate = mechanism.estimate(reports)
    c = one_bit_c(1.0)
    assert estimate[0] == 0.0 and math.isnan(estimate[1]) and estimate[2] == pytest.approx(c, rel=1e-15)


def test_harmony_public_seed_is_drawn_and_exported():
    first, second = HarmonyNumeric(1.0, 4, "public"), HarmonyNumeric(1.0, 4, "public")
    assert isinstance(first.seed, int) and 0 <= first.seed < 2**63
    assert first.seed != second.seed
    assert first.parameters()["seed"] == first.seed
    assert HarmonyNumeric(1.0, 4).parameters()["seed"] is None


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0, 10.0])
def test_harmony_privacy_table_is_exactly_eps_ldp(epsilon):
    mechanism = HarmonyNumeric(epsilon, 3)
    certificate = mechanism.verify()
    assert certificate.passed and certificate.exact
    assert certificate.epsilon == pytest.approx(epsilon, abs=1e-9)
    E = Fraction(implemented_exp(epsilon))
    expected = [[E / (E + 1), 1 / (E + 1)], [1 / (E + 1), E / (E + 1)]]
    # the table is what the sampler realises: the ideal one up to numpy's resolution 2^-53 (and rounding)
    np.testing.assert_allclose(mechanism.privacy_table(), np.array(expected, dtype=float), rtol=0, atol=2**-52)


def test_harmony_sampled_bits_follow_the_table_at_the_extremes():
    epsilon, n = 1.0, 100_000
    mechanism = HarmonyNumeric(epsilon, 2)
    high = implemented_exp(epsilon) / (implemented_exp(epsilon) + 1)
    for t, p in ((1.0, high), (-1.0, 1 - high)):
        reports = mechanism.perturb(np.full((n, 2), t), rng=np.random.default_rng(13))
        share = (reports["sign"] == 1).mean()
        assert abs(share - p) <= Z_LIMIT * math.sqrt(p * (1 - p) / n)


# ------------------------------------------------------------------------------------------- Piecewise, Hybrid

def pm_variance(t, epsilon):
    """docs/math.md §9 / Wang et al.: t^2 / (s - 1) + (s + 3) / (3 (s - 1)^2), s = e^(eps/2) (continuous PM)."""
    s = math.sqrt(implemented_exp(epsilon))
    return t**2 / (s - 1) + (s + 3) / (3 * (s - 1) ** 2)


def pm_cdf(x, t, s):
    """Exact CDF of the continuous Piecewise output for input t with s = e^(eps/2), from its two density levels."""
    C = (s + 1) / (s - 1)
    low_t, high_t = (C + 1) / 2 * t - (C - 1) / 2, (C + 1) / 2 * t + (C - 1) / 2
    high = s * (s - 1) / (2 * (s + 1))
    low = high / s**2
    x = np.clip(x, -C, C)
    return (low * (np.minimum(x, low_t) + C) + high * np.clip(x - low_t, 0, high_t - low_t)
            + low * np.maximum(x - high_t, 0))


def rounding(t, grid):
    """(g_low, g_high, weight of g_high) of the randomized rounding of t to -1 + 2i/grid, from E[g] = t."""
    t = np.asarray(t, dtype=float)
    low = np.minimum(np.floor((t + 1) * grid / 2), grid - 1)
    g_low, g_high = -1 + 2 * low / grid, -1 + 2 * (low + 1) / grid
    return g_low, g_high, (t - g_low) / (g_high - g_low)


def grid_pm_cdf(x, t, s, grid):
    """CDF of the grid Piecewise output: the rounding's mixture of the PM CDFs at the two neighbours of t."""
    g_low, g_high, weight = rounding(t, grid)
    return (1 - weight) * pm_cdf(x, g_low, s) + weight * pm_cdf(x, g_high, s)


def grid_pm_variance(t, epsilon, grid):
    """Var over rounding and PM: E[Var_PM(g)] + Var(g), Var(g) = (g_high - t)(t - g_low), Var_PM quadratic."""
    g_low, g_high, weight = rounding(t, grid)
    return (1 - weight) * pm_variance(g_low, epsilon) + weight * pm_variance(g_high, epsilon) + \
        (g_high - t) * (t - g_low)


def hm_alpha(epsilon):
    return 1 - math.exp(-epsilon / 2) if epsilon > HYBRID_THRESHOLD else 0.0


def hm_variance(t, epsilon, grid):
    alpha = hm_alpha(epsilon)
    return alpha * grid_pm_variance(t, epsilon, grid) + (1 - alpha) * (one_bit_c(epsilon) ** 2 - t**2)


def exact_pm_bins(half_exp, grid):
    """(edges, rows): the bin edges and Pr[bin | g_i] of the grid Piecewise mechanism, in rational arithmetic from
    the PM definition with s = half_exp (as a Fraction)."""
    S = Fraction(half_exp)
    C = (S + 1) / (S - 1)
    high = S * (S - 1) / (2 * (S + 1))
    low = high / S**2
    points = [-1 + Fraction(2 * i, grid) for i in range(grid + 1)]
    lefts = [(C + 1) / 2 * g - (C - 1) / 2 for g in points]
    edges = sorted({-C, C, *lefts, *(left + C - 1 for left in lefts)})
    rows = [[(high if left <= a and b <= left + C - 1 else low) * (b - a) for a, b in itertools.pairwise(edges)]
            for left in lefts]
    return edges, rows


def test_pm_variance_formula_is_the_second_moment_of_its_density():
    for epsilon in (0.2, 1.0, 5.0):
        s = math.sqrt(implemented_exp(epsilon))
        C = (s + 1) / (s - 1)
        for t in (-1.0, -0.4, 0.0, 0.7, 1.0):
            grid = np.linspace(-C, C, 400_001)
            cdf = pm_cdf(grid, t, s)
            assert cdf[0] == pytest.approx(0, abs=1e-12) and cdf[-1] == pytest.approx(1, abs=1e-12)
            mids, masses = (grid[1:] + grid[:-1]) / 2, np.diff(cdf)
            assert mids @ masses == pytest.approx(t, abs=1e-6)
            assert mids**2 @ masses - t**2 == pytest.approx(pm_variance(t, epsilon), rel=1e-5)


@pytest.mark.parametrize("grid", [2, 4, 5])
@pytest.mark.parametrize("epsilon", [0.7, 1.0, 4.0, 9.0])
def test_pm_bin_table_is_the_pm_distribution_exactly(epsilon, grid):
    """The bins have constant density under every grid input, so in rational arithmetic the rows are
    distributions whose mean is the grid input and whose variance is the continuous PM's."""
    mechanism = Piecewise(epsilon, grid=grid)
    grid = mechanism.piecewise.grid  # the separated grid actually used
    edges, rows = exact_pm_bins(mechanism.half_exp, grid)
    S = Fraction(mechanism.half_exp)
    table = mechanism.privacy_table()
    assert table.shape == (grid + 1, len(edges) - 1)
    np.testing.assert_allclose(mechanism.piecewise.edges, [float(e) for e in edges], rtol=0, atol=1e-12)
    np.testing.assert_allclose(table, [[float(p) for p in row] for row in rows], rtol=1e-12, atol=1e-15)
    mids = [(a + b) / 2 for a, b in itertools.pairwise(edges)]
    seconds = [(a * a + a * b + b * b) / 3 for a, b in itertools.pairwise(edges)]  # E[X^2], X uniform on [a, b]
    for i, row in enumerate(rows):
        g = -1 + Fraction(2 * i, grid)
        assert sum(row) == 1
        assert sum(p * m for p, m in zip(row, mids)) == g
        assert sum(p * q for p, q in zip(row, seconds)) - g**2 == g**2 / (S - 1) + (S + 3) / (3 * (S - 1) ** 2)
        # and the float table of the mechanism has the same mean up to rounding
        assert float(np.dot(table[i], [float(m) for m in mids])) == pytest.approx(float(g), abs=1e-12)


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_hybrid_table_is_the_mixture_of_its_branches(epsilon):
    grid = 4
    mechanism = Hybrid(epsilon, grid=grid)
    grid = mechanism.piecewise.grid  # the separated grid actually used
    _, rows = exact_pm_bins(mechanism.half_exp, grid)
    alpha, c = hm_alpha(epsilon), one_bit_c(epsilon)
    expected = [[alpha * float(p) for p in row] + [(1 - alpha) * (0.5 + g / (2 * c)), (1 - alpha) * (0.5 - g / (2 * c))]
                for row, g in zip(rows, np.linspace(-1, 1, grid + 1))]
    np.testing.assert_allclose(mechanism.privacy_table(), expected, rtol=1e-9, atol=1e-15)
    assert Hybrid(0.5).privacy_table().shape == (2, 2)
    np.testing.assert_array_equal(Hybrid(0.5).privacy_table(), one_bit_table(implemented_exp(0.5)))


@pytest.mark.parametrize("cls", [Piecewise, Hybrid])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0, 10.0])
@pytest.mark.parametrize("d", [1, 3])
def test_exact_verification_passes(cls, epsilon, d):
    mechanism = cls(epsilon, d)
    k = max(1, min(d, math.floor(epsilon / 2.5)))  # eps = 10, d = 3: k = 3 attributes at 10/3 each
    assert mechanism.attributes == k
    certificate = mechanism.verify()
    assert certificate.passed and certificate.exact and certificate.notion == "LDP"
    assert certificate.claimed_epsilon == epsilon
    assert epsilon - 1e-6 <= certificate.epsilon <= epsilon
    if k > 1:
        np.testing.assert_array_equal(mechanism.privacy_table(), cls(mechanism.attribute_epsilon).privacy_table())
        assert certificate.worst["parts"] == k


@pytest.mark.parametrize("cls", [Piecewise, Hybrid])
def test_per_attribute_table_is_tight(cls):
    """The table of an attribute is exactly eps / k-LDP and no better (a smaller claim fails); verify()
    multiplies its certified epsilon by k."""
    mechanism = cls(10.0, 3, grid=32)
    single = verify(mechanism.privacy_table(), LDP(mechanism.attribute_epsilon), exact=True)
    assert single.passed and mechanism.verify().epsilon == math.nextafter(3 * single.epsilon, math.inf)
    assert not verify(mechanism.privacy_table(), LDP(mechanism.attribute_epsilon * (1 - 1e-6)), exact=True).passed


def test_verification_fails_for_a_too_steep_table():
    """The override composes what the table gives: a per-attribute table at a larger epsilon fails the claim.
    Mechanisms are immutable now, so the steep per-attribute grid is planted in the cache of the ``piecewise``
    cached_property (before the first ``verify``, whose certificate is cached too)."""
    mechanism = Piecewise(10.0, 3, grid=8)
    steep = Piecewise(4.0, grid=8)
    with pytest.raises(AttributeError, match="immutable"):
        mechanism.piecewise = steep.piecewise
    mechanism.__dict__["piecewise"] = steep.piecewise
    assert mechanism.privacy_table() is steep.privacy_table()
    certificate = mechanism.verify()
    assert not certificate.passed and certificate.epsilon > 10.0


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 6.0])
@pytest.mark.parametrize("t", [-1.0, -0.3, 0.0, 0.8, 1.0])
@pytest.mark.parametrize("grid", [4, 256])
def test_pm_output_distribution(epsilon, t, grid):
    n = 200_000
    mechanism = Piecewise(epsilon, grid=grid)
    grid = mechanism.piecewise.grid  # the separated grid actually used
    reports = mechanism.perturb(np.full(n, t), rng=np.random.default_rng(14))[:, 0]
    s = math.sqrt(implemented_exp(epsilon))
    assert stats.kstest(reports, lambda x: grid_pm_cdf(x, t, s, grid)).pvalue > 1e-6
    assert abs(reports.mean() - t) <= Z_LIMIT * math.sqrt(grid_pm_variance(t, epsilon, grid) / n)


@pytest.mark.parametrize("epsilon", [1.0, 6.0])
def test_pm_sampled_bins_follow_the_table(epsilon):
    n, grid = 200_000, 4
    mechanism = Piecewise(epsilon, grid=grid)
    grid = mechanism.piecewise.grid  # the separated grid actually used
    table = mechanism.privacy_table()
    rng = np.random.default_rng(18)
    for i in range(grid + 1):
        counts = np.bincount(mechanism.piecewise.sample_bins(np.full(n, i), rng), minlength=table.shape[1])
        sd = np.sqrt(n * table[i] * (1 - table[i]))
        assert np.all(np.abs(counts - n * table[i]) <= Z_LIMIT * sd + 1e-9)


def test_pm_output_given_the_bin_does_not_depend_on_the_input():
    """Same rng stream, two different grid inputs: wherever the same bin is drawn, the same float is reported,
    and it lies in that bin."""
    mechanism = Piecewise(1.0, grid=16)
    pm = mechanism.piecewise
    n = 20_000
    outputs = []
    for i in (0, 9, 16):
        rng = np.random.default_rng(19)
        bins = pm.sample_bins(np.full(n, i), rng)
        outputs.append((bins, pm.outputs(bins, rng)))
    for (bins_a, out_a), (bins_b, out_b) in itertools.combinations(outputs, 2):
        same = bins_a == bins_b
        assert same.sum() > 100
        np.testing.assert_array_equal(out_a[same], out_b[same])
    bins, out = outputs[0]
    assert np.all((pm.edges[bins] <= out) & (out <= pm.edges[bins + 1]))


def test_rounding_is_unbiased_and_reaches_the_neighbours_only():
    mechanism = Piecewise(1.0, grid=8)
    pm = mechanism.piecewise
    grid = pm.grid  # the separated grid actually used
    rng = np.random.default_rng(20)
    n = 200_000
    for t in (-1.0, -0.9, -0.3, 0.0, 0.55, 0.999, 1.0):
        indices = pm.round(np.full(n, t), rng)
        g = pm.points[indices]
        g_low, g_high, _weight = rounding(t, grid)
        assert set(np.unique(g)) <= {float(g_low), float(g_high)}
        rv = (g_high - t) * (t - g_low)
        assert pm.rounding_variance(np.array([t]))[0] == pytest.approx(rv, abs=1e-15)
        assert abs(g.mean() - t) <= Z_LIMIT * math.sqrt(rv / n) + 1e-15
    np.testing.assert_array_equal(pm.round(np.array([-1.0, 1.0]), rng), [0, grid])


def test_hybrid_threshold_is_wang_et_al_eps_star():
    def gap(epsilon):
        s, c = math.exp(epsilon / 2), (math.exp(epsilon) + 1) / (math.exp(epsilon) - 1)
        return (s + 3) / (3 * (s - 1) ** 2) - c**2
    assert optimize.brentq(gap, 0.1, 2.0, xtol=1e-15) == pytest.approx(HYBRID_THRESHOLD, abs=1e-12)
    assert Hybrid(0.6).piecewise_probability == 0.0
    assert Hybrid(0.62).piecewise_probability == pytest.approx(1 - math.exp(-0.31), rel=1e-9)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("grid", [4, 256])
def test_hybrid_output_distribution(epsilon, grid):
    n, t = 100_000, 0.4
    mechanism = Hybrid(epsilon, grid=grid)
    grid = mechanism.piecewise.grid  # the separated grid actually used
    reports = mechanism.perturb(np.full(n, t), rng=np.random.default_rng(15))[:, 0]
    c, alpha = one_bit_c(epsilon), hm_alpha(epsilon)
    bits = np.isclose(np.abs(reports), c, rtol=1e-12, atol=0)
    assert abs(bits.mean() - (1 - alpha)) <= Z_LIMIT * math.sqrt(alpha * (1 - alpha) / n) + 1e-12
    p_plus = 0.5 + t / (2 * c)
    assert abs((reports[bits] > 0).mean() - p_plus) <= Z_LIMIT * math.sqrt(p_plus * (1 - p_plus) / bits.sum())
    if alpha:
        s = math.sqrt(implemented_exp(epsilon))
        assert stats.kstest(reports[~bits], lambda x: grid_pm_cdf(x, t, s, grid)).pvalue > 1e-6


@pytest.mark.parametrize("cls, variance_1d", [(Piecewise, grid_pm_variance), (Hybrid, hm_variance)])
@pytest.mark.parametrize("epsilon, d, grid", [(1.0, 1, 256), (4.0, 1, 256), (4.0, 1, 3), (0.5, 3, 256),
                                              (6.0, 4, 256), (8.0, 3, 2), (10.0, 6, 256)])
def test_sampled_mechanisms_unbiased_with_their_variance(cls, variance_1d, epsilon, d, grid):
    values = population(16, 200_000, d)
    mechanism = cls(epsilon, d, grid=grid)
    grid = mechanism.piecewise.grid  # the separated grid actually used
    k = max(1, min(d, math.floor(epsilon / 2.5)))
    per_user = (d / k) * (variance_1d(values, epsilon / k, grid) + values**2) - values**2
    expected = per_user.sum(axis=0) / values.shape[0] ** 2
    np.testing.assert_allclose(mechanism.variance(values), expected, rtol=1e-9)
    reports = mechanism.perturb(values, rng=np.random.default_rng(17))
    assert np.all((reports != 0).sum(axis=1) == k)
    assert_unbiased(mechanism.estimate(reports), values.mean(axis=0), expected)
    s = math.sqrt(implemented_exp(epsilon / k))
    assert_variance(reports, values, expected, d / k * (s + 1) / (s - 1) + 1)
    assert mechanism.privacy_table() is not None


def test_grid_variance_inflation_is_the_rounding_term():
    """On the grid the variance is the continuous PM's; between grid points it exceeds it by rv s / (s - 1)."""
    for epsilon in (1.0, 4.0):
        mechanism = Piecewise(epsilon)
        s = mechanism.half_exp
        for t in (-1.0, 0.0, 0.5, 1.0):
            assert mechanism.variance([t])[0] == pytest.approx(pm_variance(t, epsilon), rel=1e-12)
        t = 1.0 / 256  # midway between grid points 0 and 2/256
        excess = Piecewise(epsilon).variance([t])[0] - pm_variance(t, epsilon)
        assert excess == pytest.approx(256.0**-2 * s / (s - 1), rel=1e-6)


def test_pm_worst_case_variance_is_at_the_extremes():
    for epsilon in (0.5, 2.0, 8.0):
        s = math.sqrt(implemented_exp(epsilon))
        mechanism = Piecewise(epsilon)
        worst = mechanism.variance([1.0])[0]
        assert worst == pytest.approx(4 * s / (3 * (s - 1) ** 2), rel=1e-12)
        assert mechanism.variance([0.0])[0] < worst
        for t in np.linspace(-1, 1, 2001):
            assert mechanism.variance([t])[0] <= worst


# ---------------------------------------------------------------------------------- parameters, bad input

MECHANISMS = [Laplace(1.0, 3), Duchi(2.0, 4), HarmonyNumeric(1.0, 5), HarmonyNumeric(0.5, 2, "public"),
              HarmonyNumeric(0.5, 2, "public", seed=7), Piecewise(3.0, 2), Hybrid(0.4, 1), Piecewise(3.0, 2, grid=16),
              Hybrid(2.0, 3, grid=64)]


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=repr)
def test_parameters_round_trip(mechanism):
    rebuilt = type(mechanism)(**mechanism.parameters())
    assert rebuilt == mechanism and hash(rebuilt) == hash(mechanism)
    assert type(mechanism).from_parameters(mechanism.parameters()) == mechanism
    assert repr(mechanism).startswith(type(mechanism).__name__ + "(")


def good_reports(mechanism):
    values = np.zeros((4, mechanism.d))
    if isinstance(mechanism, HarmonyNumeric) and mechanism.coordinates == "public":
        return mechanism.perturb(values, rng=1, user_ids=np.arange(4))
    return mechanism.perturb(values, rng=1)


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=repr)
@pytest.mark.parametrize("values, message", [
    ([[2.0] * 5] * 2, r"values\[0, 0\] is 2.*\[-1, 1\]"),
    ([[0.0] * 6] * 2, r"values has shape \(2, 6\)"),
    ([[float("nan")] * 5] * 2, r"values\[0, 0\] is nan.*finite"),
    ([], "values"),
])
def test_bad_values(mechanism, values, message):
    values = np.asarray(values)
    if values.ndim == 2 and values.shape[1] == 5:
        values = values[:, : mechanism.d]
    extra = {"user_ids": np.arange(len(values))} if getattr(mechanism, "coordinates", None) == "public" else {}
    with pytest.raises(ValidationError, match=message):
        mechanism.perturb(values, rng=1, **extra)


@pytest.mark.parametrize("cls", [Laplace, Duchi, HarmonyNumeric, Piecewise, Hybrid])
@pytest.mark.parametrize("arguments, message", [
    ({"epsilon": 0.0}, "epsilon is 0.0; it must lie in"),
    ({"epsilon": 31.0}, "epsilon is 31.0; it must lie in"),
    ({"epsilon": 10.5}, "epsilon is 10.5"),
    ({"epsilon": "big"}, "epsilon.*must be a number"),
    ({"epsilon": 1.0, "d": 0}, "d is 0"),
    ({"epsilon": 1.0, "d": 2.5}, "d is 2.5"),
    ({"epsilon": 1.0, "d": True}, "d is True"),
])
def test_bad_constructor_arguments(cls, arguments, message):
    with pytest.raises(ValidationError, match=message):
        cls(**arguments)


def test_bad_harmony_modes_and_user_ids():
    with pytest.raises(ValidationError, match="coordinates is 'hashed'"):
        HarmonyNumeric(1.0, 2, coordinates="hashed")
    with pytest.raises(ValidationError, match="seed is 3; a seed is only used"):
        HarmonyNumeric(1.0, 2, seed=3)
    with pytest.raises(ValidationError, match="seed is -1"):
        HarmonyNumeric(1.0, 2, "public", seed=-1)
    public, private = HarmonyNumeric(1.0, 2, "public", seed=1), HarmonyNumeric(1.0, 2)
    values = np.zeros((3, 2))
    with pytest.raises(ValidationError, match="user_ids is None; coordinates='public' derives"):
        public.perturb(values)
    with pytest.raises(ValidationError, match="user_ids is None; coordinates='public' derives"):
        public.variance(values)
    with pytest.raises(ValidationError, match=r"user_ids is \[1, 2, 3\]; HarmonyNumeric keys no public randomness"):
        private.perturb(values, user_ids=[1, 2, 3])
    with pytest.raises(ValidationError, match=r"user_ids has shape \(2,\); it must have shape \(3,\)"):
        public.perturb(values, user_ids=[1, 2])
    with pytest.raises(ValidationError, match="user_ids contains -4"):
        public.perturb(values, user_ids=[1, 2, -4])
    with pytest.raises(ValidationError, match="user_ids must be a non-empty vector of integers"):
        public.perturb(values, user_ids=[1.5, 2, 3])


@pytest.mark.parametrize("mechanism", [Laplace(1.0, 3), Duchi(2.0, 4), Piecewise(3.0, 2), Hybrid(0.4, 2)],
                         ids=repr)
def test_malformed_numeric_reports(mechanism):
    reports = good_reports(mechanism)
    with pytest.raises(ValidationError, match=r"reports has shape \(4, \d\); it must have shape \(n, \d\)"):
        mechanism.estimate(np.hstack([reports, reports]))
    with pytest.raises(ValidationError, match=r"reports\[1, 0\] is nan; every entry must be finite"):
        bad = reports.copy()
        bad[1, 0] = np.nan
        mechanism.estimate(bad)
    with pytest.raises(ValidationError, match=r"reports is \[\[1.0, 'x'\]\]; it must be a rectangular array"):
        mechanism.estimate([[1.0, "x"]])
    bad = reports.copy()
    bad[2, 1] = 1e6
    with pytest.raises(ValidationError, match=r"reports\[2, 1\] is 1000000(\.0)?; .* reports"):
        mechanism.estimate(bad)


def test_duchi_reports_must_be_plus_or_minus_b():
    mechanism = Duchi(1.0, 2)
    reports = good_reports(mechanism)
    reports[0, 1] = mechanism.bound / 2
    with pytest.raises(ValidationError, match=r"reports\[0, 1\] is .*Duchi reports are \+-B"):
        mechanism.estimate(reports)


def test_malformed_harmony_reports():
    mechanism = HarmonyNumeric(1.0, 3)
    reports = good_reports(mechanism)
    with pytest.raises(ValidationError, match="reports has dtype float64; it must be a numpy structured array"):
        mechanism.estimate(np.zeros(4))
    with pytest.raises(ValidationError, match="reports has type list"):
        mechanism.estimate([(0, 1)])
    with pytest.raises(ValidationError, match=r"reports has shape \(0,\)"):
        mechanism.estimate(reports[:0])
    bad = reports.copy()
    bad["coordinate"][2] = 3
    with pytest.raises(ValidationError, match=r"reports\['coordinate'\]\[2\] is 3; coordinates lie in 0..2"):
        mechanism.estimate(bad)
    bad = reports.copy()
    bad["sign"][1] = 0
    with pytest.raises(ValidationError, match=r"reports\['sign'\]\[1\] is 0; every sign must be -1 or \+1"):
        mechanism.estimate(bad)


@pytest.mark.parametrize("field, value, message", [
    ("coordinate", 0.9,
     r"reports\['coordinate'\] has dtype float64; every field of the reports must be a scalar integer"),
    ("coordinate", np.nan, r"reports\['coordinate'\] has dtype float64"),
    ("sign", 1.5, r"reports\['sign'\] has dtype float64; every field of the reports must be a scalar integer"),
    ("sign", True, r"reports\['sign'\] has dtype bool; every field of the reports must be a scalar integer"),
])
def test_harmony_report_fields_must_be_integers(field, value, message):
    mechanism = HarmonyNumeric(1.0, 3)
    reports = good_reports(mechanism)
    types = {"coordinate": "<i4", "sign": "i1"}
    types[field] = type(value).__name__ if isinstance(value, bool) else "<f8"
    bad = np.zeros(reports.size, dtype=list(types.items()))
    bad["coordinate"], bad["sign"] = reports["coordinate"], reports["sign"]
    bad[field][0] = value
    with pytest.raises(ValidationError, match=message):
        mechanism.estimate(bad)


def test_harmony_reports_need_exactly_its_fields():
    mechanism = HarmonyNumeric(1.0, 3)
    reports = good_reports(mechanism)
    extra = np.zeros(reports.size, dtype=[("coordinate", "<i4"), ("sign", "i1"), ("weight", "<f8")])
    extra["coordinate"], extra["sign"] = reports["coordinate"], reports["sign"]
    mixed = np.zeros(reports.size, dtype=[("attribute", "<i4"), ("row", "<i4"), ("sign", "i1")])
    for bad in (extra, mixed):
        with pytest.raises(ValidationError, match="it must be a numpy structured array with exactly the fields"):
            mechanism.estimate(bad)
    nested = np.zeros(reports.size, dtype=[("coordinate", "<i4", (2,)), ("sign", "i1")])
    with pytest.raises(ValidationError, match=r"reports\['coordinate'\] has dtype \('<i4', \(2,\)\)"):
        mechanism.estimate(nested)
    # Other integer dtypes and field orders are fine; a huge unsigned sign is not taken for -1.
    other = np.zeros(reports.size, dtype=[("sign", "<i8"), ("coordinate", "<u2")])
    other["coordinate"], other["sign"] = reports["coordinate"], reports["sign"]
    np.testing.assert_array_equal(mechanism.estimate(other), mechanism.estimate(reports))
    unsigned = np.zeros(reports.size, dtype=[("coordinate", "<u8"), ("sign", "<u8")])
    unsigned["coordinate"], unsigned["sign"] = reports["coordinate"], 1
    unsigned["sign"][1] = np.iinfo(np.uint64).max
    with pytest.raises(ValidationError,
                       match=r"reports\['sign'\]\[1\] is 18446744073709551615; every sign must be -1 or \+1"):
        mechanism.estimate(unsigned)


def test_every_numeric_mechanism_has_an_exact_table():
    from lipdesign.mechanisms import numeric

    assert "finite output space" in numeric.__doc__ and "Mironov" not in numeric.__doc__
    for finite in (Laplace(1.0), Duchi(1.0, 2), HarmonyNumeric(1.0, 2), Piecewise(1.0, 2), Hybrid(1.0, 2)):
        assert finite.guarantee == Mechanism.guarantee.fget(finite) == Guarantee("LDP", 1.0, "exact table")
        assert finite.finite and finite.privacy_table() is not None
    assert Laplace(1.0, 2).guarantee.basis == "composition of exact tables"
    for finite in (Piecewise(1.0, 2), Hybrid(1.0, 2), Hybrid(0.3), Laplace(1.0, 2)):
        assert "ideal real arithmetic" not in " ".join(type(finite).__doc__.split())


def test_piecewise_and_hybrid_grid_parameter():
    assert Piecewise(1.0).grid == DEFAULT_GRID == 256 and Hybrid(1.0, 2).parameters()["grid"] == DEFAULT_GRID
    assert Piecewise(1.0, grid=MAX_GRID).grid == 256
    for bad, message in [(1, "grid is 1"), (MAX_GRID + 1, "grid is 257"), (2.5, "grid is 2.5"),
                         (True, "grid is True"), ("8", "grid is '8'")]:
        for cls in (Piecewise, Hybrid):
            with pytest.raises(ValidationError, match=message):
                cls(1.0, grid=bad)


COINCIDENT = [2 * math.log(256 / m) - math.log1p(-1e-10) for m in (3, 5, 11, 33, 100)] + [
    2 * math.log(256 / 3) - math.log1p(-1e-10) + 1e-10, 2 * math.log(4)]


@pytest.mark.parametrize("epsilon", COINCIDENT)
def test_epsilons_where_bin_edges_nearly_coincide_get_a_separated_grid_and_verify(epsilon):
    """At these epsilons M / s is (nearly) an integer for M = 256, so right ends r_j fall on left ends l_i and the
    plain grid has bins of width ~1e-16 that the alias sampler cannot resolve (the realised ratio was infinite).
    The separated grid keeps every bin at least a quarter spacing wide, and the REALISED table verifies."""
    for cls in (Piecewise, Hybrid):
        mechanism = cls(epsilon)
        pm = mechanism.piecewise
        assert pm.grid >= DEFAULT_GRID
        assert pm.widths.min() >= 0.25 * (pm.bound + 1) / pm.grid * (1 - 1e-9)
        certificate = mechanism.verify()
        assert certificate.passed and epsilon - 1e-9 <= certificate.epsilon <= epsilon


def test_the_privacy_table_is_what_the_alias_sampler_realises():
    mechanism = Piecewise(4.0)
    np.testing.assert_array_equal(mechanism.privacy_table(), mechanism.piecewise.sampler.realized_table())
    np.testing.assert_allclose(mechanism.privacy_table(), mechanism.piecewise.table, rtol=1e-9, atol=0)


def test_piecewise_needs_a_per_attribute_epsilon_of_at_least_001():
    with pytest.raises(ValidationError, match="epsilon / k >= 0.01"):
        Piecewise(0.005)
    assert Piecewise(0.01).verify().passed
