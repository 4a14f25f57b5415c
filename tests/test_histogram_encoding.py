"""Histogram encoding, THE and SHE (lipdesign.mechanisms.histogram; docs/math.md §17): against closed forms written
here from [WBLJ17] and the Laplace / geometric laws, brute-force sums over the finite distributions, seeded
statistical tests, and pure-ldp 1.2.0 (slow)."""

import decimal
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, stats

import lipdesign as ld
from lipdesign.errors import FormatError, ValidationError
from lipdesign.io import mechanism_from_dict
from lipdesign.mechanisms.histogram import SHE, THE, default_bound, optimal_theta
from lipdesign.verification import verify_table

EPSILONS = [1e-6, 1e-3, 0.1, 0.5, 1.0, 2.0, 4.0, 10.0]


def paper_variance(theta, eps):
    """[WBLJ17]'s n Var of THE at f = 0: (2 e^(eps theta/2) - 1) / (1 + e^(eps (theta - 1/2)) - 2 e^(eps theta/2))^2."""
    u = math.exp(eps * theta / 2)
    return (2 * u - 1) / (1 + math.exp(eps * (theta - 0.5)) - 2 * u) ** 2


def exact_log(ratio):
    with decimal.localcontext() as context:
        context.prec = 50
        return float((decimal.Decimal(ratio.numerator) / decimal.Decimal(ratio.denominator)).ln())


def exp_decimal(x):
    with decimal.localcontext() as context:
        context.prec = 50
        return decimal.Decimal(x).exp()


# -- THE ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("theta", [0.01, 0.3, 0.5, None, 0.99])
def test_the_probabilities_and_certificate(eps, theta):
    """p and q are the Laplace(2/eps) tails (scipy), rounded up to the 2^-53 grid; the exact certificate is
    ln(p (1 - q)/(q (1 - p))) of the realised p, q, below eps."""
    the = THE(eps, 5, theta=theta)
    theta = the.theta if theta is None else theta
    laplace = stats.laplace(scale=2 / eps)
    assert abs(the.p - laplace.sf(theta - 1)) <= 2.0**-51  # rounded up to the grid, from a double within an ulp
    assert abs(the.q - laplace.sf(theta)) <= 2.0**-51
    assert the.p * 2.0**53 == int(the.p * 2.0**53) and the.q * 2.0**53 == int(the.q * 2.0**53)
    p, q = Fraction(the.p), Fraction(the.q)
    tightest = exact_log(p * (1 - q) / (q * (1 - p)))
    certificate = the.verify()
    assert certificate.passed and certificate.exact
    assert tightest <= certificate.epsilon <= tightest + 1e-12 + 1e-12 * tightest
    assert certificate.epsilon < eps


def test_the_gap_matches_the_closed_form():
    """docs/math.md §17.1's table: the certified epsilon at theta* against e^(eps/2) (2 - a)(2 - b)."""
    for eps, printed in [(0.1, 0.0988), (0.5, 0.4719), (1.0, 0.8960), (2.0, 1.6357), (4.0, 2.8589), (10.0, 5.9749)]:
        theta = optimal_theta(eps)
        a, b = math.exp(-(1 - theta) * eps / 2), math.exp(-theta * eps / 2)
        closed = eps / 2 + math.log((2 - a) * (2 - b))
        assert THE(eps, 4).verify().epsilon == pytest.approx(closed, abs=1e-12)
        assert round(closed, 4) == printed


@pytest.mark.parametrize("eps", [0.01, 0.5, 1.0, 2.0, 4.0, 10.0])
def test_the_threshold_minimises_the_paper_variance(eps):
    """theta* against scipy's bounded minimisation of [WBLJ17]'s variance, inside (1/2, 1)."""
    found = optimize.minimize_scalar(paper_variance, bounds=(1e-9, 1 - 1e-9), args=(eps,), method="bounded",
                                     options={"xatol": 1e-12})
    theta = optimal_theta(eps)
    assert 0.5 < theta < 1
    assert paper_variance(theta, eps) <= found.fun * (1 + 1e-12)
    assert theta == pytest.approx(found.x, abs=1e-5)


def test_the_threshold_limits():
    assert optimal_theta(1e-6) == pytest.approx(0.5, abs=1e-6)
    assert optimal_theta(10.0) == pytest.approx(1 - 2 * math.log(1.5) / 10, abs=0.02)


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_the_variance_is_the_paper_formula(eps):
    """variance() at an absent value is [WBLJ17]'s expression (up to the 2^-53 rounding of p and q); at a present
    value it is the pure protocols' f p(1 - p) + (1 - f) q(1 - q) over (p - q)^2, from the laws of §17.1."""
    the = THE(eps, 4)
    variance = the.variance([0.0, 0.5, 0.25, 0.25], n=1)
    assert variance[0] == pytest.approx(paper_variance(the.theta, eps), rel=1e-9)
    theta = the.theta
    p, q = 1 - math.exp(-(1 - theta) * eps / 2) / 2, math.exp(-theta * eps / 2) / 2
    assert variance[1] == pytest.approx((0.5 * p * (1 - p) + 0.5 * q * (1 - q)) / (p - q) ** 2, rel=1e-9)


def test_the_is_unbiased():
    """A seeded z-test: |estimate - truth| within 4.5 standard errors for every value."""
    the = THE(1.0, 8)
    truth = np.array([0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02])
    values = np.repeat(np.arange(8), (truth * 100_000).astype(int))
    estimate = the.estimate(the.perturb(values, rng=3))
    z = (estimate.values - truth) / np.sqrt(the.variance(truth, n=values.size))
    assert np.all(np.abs(z) < 4.5), z


@pytest.mark.parametrize("theta", [0.0, 1.0, -0.1, 1.5, math.nan, "0.5"])
def test_the_refuses_bad_theta(theta):
    with pytest.raises(ValidationError, match="theta"):
        THE(1.0, 4, theta=theta)


@pytest.mark.parametrize("family", [THE, SHE])
@pytest.mark.parametrize("eps", [0.0, -1.0, 11.0, math.inf])
def test_bad_epsilon(family, eps):
    with pytest.raises(ValidationError, match="epsilon"):
        family(eps, 4)


@pytest.mark.parametrize("family", [THE, SHE])
@pytest.mark.parametrize("k", [1, 0, 2.5, True])
def test_bad_k(family, k):
    with pytest.raises(ValidationError, match="k is"):
        family(1.0, k)


# -- SHE ------------------------------------------------------------------------------------------------------------
def clamped_geometric(eps, bound):
    """Pr[clamp(Z, -T, T + 1) = y] for y = -T..T + 1, Z two-sided geometric with ratio e^(-eps/2), summed directly
    over z in a window wide enough that the rest is below 1e-300."""
    alpha = math.exp(-eps / 2)
    width = bound + 2 + int(1500 / (eps / 2))
    z = np.arange(-width, width + 1)
    mass = (1 - alpha) / (1 + alpha) * alpha ** np.abs(z).astype(float)
    law = np.zeros(2 * bound + 2)
    np.add.at(law, np.clip(z, -bound, bound + 1) + bound, mass)
    return law


@pytest.mark.parametrize("eps,bound", [(0.01, None), (0.1, None), (1.0, None), (1.0, 1), (1.0, 5), (4.0, None),
                                       (10.0, None), (10.0, 40), (2.0, 300)])
def test_she_law_ratios_and_certificate(eps, bound):
    """The realised law is the clamped geometric one up to the rounding of the counts; every mirrored pair's ratio
    is at most e^(eps/2) (50-digit decimal exp); the certificate is below eps and within 1e-7 of it."""
    she = SHE(eps, 3, bound=bound)
    T = she.bound
    realised = she.counts / 2.0**32
    ideal = clamped_geometric(eps, T)
    assert she.counts.sum() == 2**32 and she.counts.min() >= 1
    assert np.allclose(realised, ideal, rtol=2e-3, atol=4e-9)
    limit = exp_decimal(eps / 2)
    heavy, light = she.counts[:T + 1][::-1], she.counts[T + 1:]  # pairs (-i, i + 1), i = 0..T
    assert all(int(h) >= int(light_i) and decimal.Decimal(int(h)) <= limit * int(light_i)
               for h, light_i in zip(heavy, light))
    certificate = she.verify()
    assert certificate.passed and certificate.exact
    assert eps - 1e-7 <= certificate.epsilon < eps


@pytest.mark.parametrize("bound", [1, 2])
def test_she_composition_is_the_exact_joint_epsilon(bound):
    """Two entries' product table (rows x, x': (entry x, entry x') with the bits swapped), verified by brute force,
    has the epsilon of SHE's composed certificate."""
    she = SHE(1.5, 4, bound=bound)
    counts = [int(c) for c in she.counts]
    p0 = [Fraction(c, 2**32) for c in counts]
    p1 = p0[::-1]
    rows = [[a * b for a in p1 for b in p0], [a * b for a in p0 for b in p1]]
    joint = verify_table(np.array(rows, dtype=object), ld.LDP(1.5), exact=True)
    assert joint.epsilon == pytest.approx(she.verify().epsilon, abs=1e-12)


@pytest.mark.parametrize("eps,bound", [(1.0, 1), (1.0, None), (0.5, 7), (4.0, None), (0.1, None)])
def test_she_moments_brute_force(eps, bound):
    """mu_0, sigma^2 and variance() against a sum over the realised outputs (the reflection gives mu_1 = 1 - mu_0),
    and against the ideal clamped law within its rounding."""
    she = SHE(eps, 3, bound=bound)
    outputs = np.arange(-she.bound, she.bound + 2)
    table = she.privacy_table()
    mean0, mean1 = (sum(Fraction(int(y)) * Fraction(p) for y, p in zip(outputs, row)) for row in table[::-1])
    var0 = sum(Fraction(int(y)) ** 2 * Fraction(p) for y, p in zip(outputs, table[1])) - mean0**2
    var1 = sum(Fraction(int(y)) ** 2 * Fraction(p) for y, p in zip(outputs, table[0])) - mean1**2
    assert var0 == var1 and mean1 == 1 - mean0
    assert she.mean_offset == float(mean0) and she.entry_variance == float(var0)
    assert she.variance([0.5, 0.3, 0.2], n=10) == pytest.approx(np.full(3, float(var0 / (mean1 - mean0) ** 2) / 10))
    ideal = clamped_geometric(eps, she.bound)
    ideal_mean = ideal @ outputs
    assert she.entry_variance == pytest.approx(ideal @ outputs**2 - ideal_mean**2, rel=2e-3)


def test_she_variance_limits():
    """With the default bound, n Var is within 2e-4 of the unclamped 2 alpha/(1 - alpha)^2 = 1/(2 sinh^2(eps/4)),
    below the continuous 8/eps^2 and tending to it; a smaller bound gives a smaller variance (docs/math.md §17.4)."""
    for eps in [0.1, 0.5, 1.0, 2.0, 4.0, 10.0]:
        she = SHE(eps, 4)
        n_var = float(she.variance(n=1)[0])
        alpha = math.exp(-eps / 2)
        assert n_var == pytest.approx(2 * alpha / (1 - alpha) ** 2, rel=2e-4)
        assert n_var == pytest.approx(1 / (2 * math.sinh(eps / 4) ** 2), rel=2e-4)
        assert n_var < 8 / eps**2
    assert float(SHE(0.1, 4).variance(n=1)[0]) * 0.1**2 / 8 == pytest.approx(1, abs=1e-3)
    by_bound = [float(SHE(1.0, 4, bound=bound).variance(n=1)[0]) for bound in (1, 2, 5, 10, 27, 60)]
    assert by_bound == sorted(by_bound)
    # at T = 60 the farthest outputs hold 1 word each where the geometric law has less: 3e-6 more variance
    assert by_bound[-1] == pytest.approx(2 * math.exp(-0.5) / (1 - math.exp(-0.5)) ** 2, rel=1e-5)


def test_she_default_bound_folds_at_most_2_to_the_minus_20():
    for eps in [0.01, 0.1, 1.0, 2.0, 4.0, 10.0]:
        bound = default_bound(eps)
        alpha = math.exp(-eps / 2)
        assert alpha ** (bound + 1) <= 2.0**-20 and (bound == 1 or alpha**bound > 2.0**-20)


@pytest.mark.parametrize("bound", [1, None])
def test_she_is_unbiased_with_the_stated_variance(bound):
    """1000 seeded collections of 1000 users: the mean estimate is within 4.5 standard errors of the truth, and the
    sample variance within 5 of its own standard deviations (sqrt(2/(R - 1))) of variance()."""
    she = SHE(1.0, 4, bound=bound)
    truth = np.array([0.5, 0.3, 0.2, 0.0])
    runs, n = 1000, 1000
    values = np.tile(np.repeat(np.arange(4), (truth * n).astype(int)), runs)
    reports = she.perturb(values, rng=11).reshape(runs, n, 4)
    sums = reports.sum(axis=1, dtype=np.int64)
    estimates = (sums / n - she.mean_offset) / she.mean_gap
    variance = she.variance(truth, n=n)
    z = (estimates.mean(axis=0) - truth) / np.sqrt(variance / runs)
    assert np.all(np.abs(z) < 4.5), z
    ratio = estimates.var(axis=0, ddof=1) / variance
    assert np.all(np.abs(ratio - 1) < 5 * math.sqrt(2 / (runs - 1))), ratio
    one = she.estimate(reports[0])
    assert np.allclose(one.values, estimates[0]) and np.allclose(one.standard_errors, np.sqrt(variance))


def test_she_reports_int16_beyond_127():
    she = SHE(0.1, 3)
    assert she.bound == 277 and she.report_dtype == np.int16
    reports = she.perturb(np.arange(3).repeat(2000), rng=0)
    assert reports.dtype == np.int16 and reports.min() >= -277 and reports.max() <= 278
    assert reports.min() < -127 or reports.max() > 127
    assert SHE(1.0, 3).report_dtype == np.int8


def test_she_audit_classes_reach_epsilon():
    for eps in [0.1, 1.0, 4.0, 10.0]:
        plan = SHE(eps, 3).audit_plan()
        certificate = verify_table(plan.table, ld.LDP(eps), exact=False)
        assert eps * (1 - 2e-6) <= certificate.epsilon <= eps + 1e-9


@pytest.mark.parametrize("eps", [0.005, 0.0099])
def test_she_refuses_tiny_epsilon(eps):
    with pytest.raises(ValidationError, match="epsilon"):
        SHE(eps, 4)


@pytest.mark.parametrize("bound", [0, -1, 1.5, 32767, True])
def test_she_refuses_bad_bound(bound):
    with pytest.raises(ValidationError, match="bound"):
        SHE(1.0, 4, bound=bound)


def test_she_refuses_bad_reports():
    she = SHE(1.0, 3, bound=2)
    for bad, rule in [(np.zeros((2, 4), np.int8), "shape"), (np.zeros((2, 3)), "dtype"),
                      (np.array([[0, 4, 0]], np.int8), r"reports\[0, 1\] is 4"),
                      (np.array([[0, 0, -3]], np.int16), r"reports\[0, 2\] is -3")]:
        with pytest.raises(ValidationError, match=rule):
            she.aggregate(bad)


@pytest.mark.parametrize("mechanism", [THE(2.0, 5, theta=0.3), SHE(0.5, 5, bound=200), SHE(3.0, 3, bound=1)],
                         ids=["the-theta", "she-int16", "she-T1"])
def test_check_mechanism(mechanism):
    assert len(ld.testing.check_mechanism(mechanism)) >= 11


def test_files_round_trip_and_schema(tmp_path):
    for mechanism in (THE(2.0, 5), SHE(2.0, 5, bound=3)):
        ld.save(mechanism, tmp_path / "m.json")
        assert ld.load(tmp_path / "m.json") == mechanism
    for mechanism, field, bad in ((THE(2.0, 5), "theta", 1.0), (SHE(2.0, 5), "bound", 0)):
        document = mechanism.to_dict()
        document["parameters"][field] = bad
        with pytest.raises(FormatError, match=f"parameters/{field}"):
            mechanism_from_dict(document, "test")


# -- against pure-ldp 1.2.0 (slow: its clients and servers loop per report in Python) --------------------------------
@pytest.mark.slow
def test_mse_beside_pure_ldp():
    """k = 64, n = 10^5, eps in {1, 2, 4}, one run: each MSE over the values is within 5 of its standard deviations
    of the closed form (ours: variance(); pure-ldp: the continuous SHE's 8/eps^2 and THE's with its rounded theta),
    and ours is no worse than pure-ldp's beyond that noise."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from oracles import load_pure_ldp

    loaded, reason = load_pure_ldp()
    if loaded is None:
        pytest.skip(reason)
    from pure_ldp.frequency_oracles.histogram_encoding import HEClient, HEServer

    k, n = 64, 100_000
    rng = np.random.default_rng(5)
    zipf = rng.permutation(1.0 / np.arange(1, k + 1) ** 1.1)
    truth = zipf / zipf.sum()
    values = rng.choice(k, size=n, p=truth)
    frequencies = np.bincount(values, minlength=k) / n
    np.random.seed(5)
    for eps in (1.0, 2.0, 4.0):
        for ours, use_the in ((SHE(eps, k), False), (THE(eps, k), True)):
            estimate = ours.estimate(ours.perturb(values, rng=int(eps * 10) + use_the)).values
            client, server = HEClient(eps, k), HEServer(eps, k, use_the=use_the)
            for value in values:
                server.aggregate(client.privatise(int(value) + 1))
            pure = np.array([server.estimate(v + 1, suppress_warnings=True) for v in range(k)]) / n
            expected_ours = float(np.mean(ours.variance(frequencies, n=n)))
            if use_the:
                p, q = server.p, server.q
                expected_pure = float(np.mean((frequencies * p * (1 - p) + (1 - frequencies) * q * (1 - q))
                                              / (n * (p - q) ** 2)))
            else:
                expected_pure = 8 / eps**2 / n
            tolerance = 5 * math.sqrt(2 / k)
            mse_ours, mse_pure = np.mean((estimate - frequencies) ** 2), np.mean((pure - frequencies) ** 2)
            print(f"eps={eps} {'THE' if use_the else 'SHE'}: MSE ours {mse_ours:.3e} (closed form {expected_ours:.3e}),"
                  f" pure-ldp {mse_pure:.3e} (closed form {expected_pure:.3e})")
            assert abs(mse_ours / expected_ours - 1) < tolerance
            assert abs(mse_pure / expected_pure - 1) < tolerance
            assert expected_ours <= expected_pure * 1.001
