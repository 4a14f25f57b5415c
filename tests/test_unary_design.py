"""Unary encoding designed under LIP (docs/math.md §7.1): the exact joint condition against brute force over all
2^k reports, the design against an independent optimiser, the estimate against its variance, files, and errors."""

import itertools
import math
import warnings

import numpy as np
import pytest
from helpers import zipf
from scipy.optimize import minimize

import lipdesign as ld
from lipdesign._solvers.unary_encoding import ALPHA_CAP
from lipdesign.designer.baselines import symmetric_unary_variance
from lipdesign.errors import ShrinkageWarning
from lipdesign.mechanisms.unary_encoding import UnaryEncoding
from lipdesign.simulation import drifted


def brute_force_epsilons(a, b, prior):
    """(LIP for X, LDP) of unary encoding by listing all 2^k reports: Pr[y | x] = prod_j Pr[bit j = y_j | x]."""
    k = len(a)
    lip, ldp = 0.0, 0.0
    for report in itertools.product((0, 1), repeat=k):
        y = np.array(report, dtype=bool)
        rows = np.empty(k)
        for x in range(k):
            ones = np.where(np.arange(k) == x, a, b)
            rows[x] = np.prod(np.where(y, ones, 1 - ones))
        lip = max(lip, np.abs(np.log(rows / (prior @ rows))).max())
        ldp = max(ldp, math.log(rows.max() / rows.min()))
    return lip, ldp


@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_the_joint_condition_is_the_worst_report_over_all_2_to_the_k(k):
    """Random bit probabilities, some with a < b: the exact joint condition (and the generic verifier on the reduced
    table) gives the same LIP epsilon as listing every report, and the LDP epsilon too."""
    rng = np.random.default_rng(k)
    for _ in range(3):
        prior = rng.dirichlet(np.ones(k))
        a, b = rng.uniform(0.05, 0.95, k), rng.uniform(0.05, 0.95, k)
        mechanism = UnaryEncoding(a, b, ld.LIP(30.0), prior)
        lip, ldp = brute_force_epsilons(*mechanism.bit_probabilities, prior)
        assert mechanism.epsilons["LIP for X"] == pytest.approx(lip, rel=1e-9)
        assert mechanism.epsilons["LDP"] == pytest.approx(ldp, rel=1e-9)
        reduced = ld.verify(mechanism.privacy_table(), ld.LIP(30.0), prior)
        assert reduced.epsilon == pytest.approx(lip, rel=1e-9)


def test_per_bit_lip_is_not_joint_lip():
    """docs/math.md §7.1: tuning every bit to be eps-LIP for its own binary prior is not eps-LIP for X (MATH's
    example, P = (.1, .2, .3, .4), eps = 1, gives 2.70): each bit is the binary closed form of §6 at p = P_j."""
    prior, e = np.array([0.1, 0.2, 0.3, 0.4]), math.e
    a, b = np.empty(4), np.empty(4)
    for j, p in enumerate(prior):  # the binary channel of §6 on 1[X = j], whose rare value is j (p <= 1/2)
        if p <= 1 / (1 + e):
            flip_rare, flip_common = 1 / (1 + e), (1 - p * e) / ((1 + e) * (1 - p))
        else:
            flip_rare, flip_common = (1 - p) / e, p / e
        a[j], b[j] = 1 - flip_rare, flip_common
    lip, _ = brute_force_epsilons(a, b, prior)
    assert lip == pytest.approx(2.70, abs=0.01)
    with pytest.raises(ld.VerificationError, match="not LIP with eps=1"):
        UnaryEncoding(a, b, ld.LIP(1.0), prior)


def independent_optimum(prior, epsilon):
    """The same program solved by SLSQP in z = (u, v), u = a/b, v = (1 - a)/(1 - b), with ../MATH's forms: the
    figure sum_j (P_j u_j v_j + 1 - P_j)/((u_j - 1)(1 - v_j)) and the linear joint condition (a >= b)
    u_x (1 - e P_x) + e P_x v_x <= e P . v and P_x u_x + (e - P_x) v_x >= P . u."""
    k, e = prior.size, math.exp(epsilon)

    def figure(z):
        u, v = z[:k], z[k:]
        return float(np.sum((prior * u * v + 1 - prior) / ((u - 1) * (1 - v))))

    def sides(z):
        u, v = z[:k], z[k:]
        return np.concatenate([e * (prior @ v) - u * (1 - e * prior) - e * prior * v,
                               prior * u + (e - prior) * v - prior @ u])

    start = 0.3 * (e - 1) / (e + 1)
    z0 = np.concatenate([np.full(k, 1 + start), np.full(k, 1 - start)])
    result = minimize(figure, z0, method="SLSQP", bounds=[(1 + 1e-9, None)] * k + [(1e-9, 1 - 1e-9)] * k,
                      constraints=[{"type": "ineq", "fun": sides}], options={"ftol": 1e-14, "maxiter": 3000})
    # SLSQP may end on "positive directional derivative" at this ftol, at the optimum to rounding: judged by the
    # comparison, on a feasible point
    assert sides(result.x).min() > -1e-9, result.message
    return result.fun


@pytest.mark.parametrize(("k", "epsilon"), [(3, 0.5), (5, 1.0), (8, 2.0)])
def test_the_design_is_the_optimum_and_beats_the_symmetric_encodings(k, epsilon):
    prior = zipf(k)
    mechanism = ld.design(prior, ld.LIP(epsilon), family="unary")
    assert mechanism.verify().passed and mechanism.family == "unary"
    optimum = independent_optimum(prior, epsilon)
    assert mechanism.mse == pytest.approx(optimum, rel=1e-6)
    assert mechanism.optimality["lower_bound"] <= optimum * (1 + 1e-9)
    assert mechanism.optimality["variance"] == mechanism.mse  # the design's record is the mechanism's own figure
    baselines = mechanism.provenance["baselines"]
    # the figure is the variance of the library's unbiased estimate: sum_j [P a(1-a) + (1-P) b(1-b)]/(a-b)^2
    a, b = mechanism.bit_probabilities
    assert mechanism.mse == pytest.approx(np.sum((prior * a * (1 - a) + (1 - prior) * b * (1 - b)) / (a - b) ** 2))
    assert mechanism.mse < baselines["symmetric LIP unary"] < baselines["OUE"]
    # no unary encoding beats the best RR table under the same notion (docs/math.md §7)
    assert baselines["optimal RR table (LIP)"] < mechanism.mse


def lagrange_dual(prior, epsilon, upper_weights, lower_weights):
    """The Lagrange dual of the unary program (docs/math.md §7.1) at multipliers >= 0 of its two LIP sides, a lower
    bound on the optimum whatever the multipliers: the Lagrangian is separable over values; for each value the
    minimum over alpha of (1/beta - P)/alpha + c_a alpha is 2 sqrt((1/beta - P) c_a), and beta in (0, 1] is
    searched numerically."""
    from scipy.optimize import minimize_scalar

    e = math.exp(epsilon)
    c_alpha = upper_weights * (1 - e * prior) - lower_weights * prior + lower_weights.sum() * prior
    c_beta = -upper_weights * e * prior + upper_weights.sum() * e * prior + lower_weights * (e - prior)
    assert (c_alpha > 0).all()
    total = -(upper_weights.sum() + lower_weights.sum()) * (e - 1)
    for p, ca, cb in zip(prior, c_alpha, c_beta):
        def inner(beta, p=p, ca=ca, cb=cb):
            return 2 * math.sqrt((1 / beta - p) * ca) + p / beta - p + cb * beta
        found = minimize_scalar(inner, bounds=(1e-15, 1.0), method="bounded", options={"xatol": 1e-14})
        total += min(found.fun, inner(1.0))
    return total


def test_the_barrier_gap_is_below_the_lagrange_dual():
    """The certificate value - m/t never claims more than the Lagrange dual at the barrier's own multipliers
    1/(t slack) proves (computed here independently of the Newton steps)."""
    from lipdesign._solvers.unary_encoding import design_unary

    rng = np.random.default_rng(12)
    for _ in range(8):
        k = int(rng.integers(2, 25))
        prior = rng.dirichlet(np.ones(k) * rng.choice([0.3, 1.0, 3.0]))
        if prior.max() > 0.75:
            continue
        epsilon = float(np.exp(rng.uniform(np.log(0.1), np.log(5))))
        result = design_unary(prior, epsilon)
        t = 5 * k / result.gap
        alpha, beta, e = result.alpha, result.beta, math.exp(epsilon)  # slacks of the rows of docs/math.md §7.1
        upper = e - 1 - (alpha * (1 - e * prior) - e * prior * beta + e * (prior @ beta))
        lower = e - 1 - ((e - prior) * beta - prior * alpha + prior @ alpha)
        dual = lagrange_dual(prior, epsilon, 1 / (t * upper), 1 / (t * lower))
        assert result.converged and dual <= result.value * (1 + 1e-12)
        assert result.value - result.gap <= dual * (1 + 1e-9), (k, epsilon)


def test_the_symmetric_encoding_is_exactly_at_its_bound():
    prior, epsilon = zipf(6), 1.0
    _, a, b = symmetric_unary_variance(ld.Prior(prior), epsilon)
    symmetric = UnaryEncoding(np.full(6, a), np.full(6, b), ld.LIP(epsilon + 1e-6), prior)
    assert symmetric.epsilons["LIP for X"] == pytest.approx(epsilon, abs=1e-6)


def test_the_estimate_is_unbiased_on_a_drifted_population_with_the_stated_variance():
    mechanism = ld.design(zipf(6), ld.LIP(1.0), family="unary", baselines=False)
    truth = drifted(zipf(6))
    result = ld.simulate(mechanism, 20_000, rng=4, truth=truth, repetitions=200, drift=False, level=0.9)
    assert result.largest_z < 4, result.summary()
    # the plug-in standard errors cover at their nominal rate (less 4 binomial sd) and not vacuously more
    assert result.interval.startswith("the estimate's plug-in")
    assert (result.coverage >= 0.9 - 4 * math.sqrt(0.09 / 200)).all() and result.coverage.mean() <= 0.95
    assert np.allclose(result.empirical_std, result.std, rtol=0.25), result.summary()
    np.testing.assert_allclose(mechanism.variance(truth, n=20_000),
                               (truth * mechanism.bit_probabilities[0] * (1 - mechanism.bit_probabilities[0])
                                + (1 - truth) * mechanism.bit_probabilities[1] * (1 - mechanism.bit_probabilities[1]))
                               / (20_000 * (mechanism.bit_probabilities[0] - mechanism.bit_probabilities[1]) ** 2))


def test_reports_are_packed_bits_and_aggregate_like_the_unpacked_ones():
    """k = 13: two bytes per report; bits() unpacks them; the aggregate counts each bit; the draw of each bit is
    Bernoulli(a) for the user's own value and Bernoulli(b) otherwise (counts within 5 sd over 40000 users)."""
    mechanism = ld.design(zipf(13), ld.LIP(1.0), family="unary", baselines=False)
    values = np.random.default_rng(6).choice(13, size=40_000, p=zipf(13))
    reports = mechanism.perturb(values, rng=7)
    assert reports.shape == (40_000, 2) and reports.dtype == np.uint8 and mechanism.report_bytes == 2
    bits = mechanism.bits(reports)
    assert bits.shape == (40_000, 13) and set(np.unique(bits)) <= {0, 1}
    np.testing.assert_array_equal(mechanism.aggregate(reports)["support"], bits.sum(axis=0))
    a, b = mechanism.bit_probabilities
    own = bits[np.arange(values.size), values]
    for j in range(13):
        mine, others = values == j, values != j
        for observed, p, size in ((own[mine].mean(), a[j], mine.sum()), (bits[others, j].mean(), b[j], others.sum())):
            assert abs(observed - p) < 5 * math.sqrt(p * (1 - p) / size), j
    bad = reports.copy()
    bad[0, 1] |= 0b1000_0000  # bit 15 of a 13-bit report
    with pytest.raises(ld.ValidationError, match=r"reports\[0\] sets bits beyond k = 13"):
        mechanism.aggregate(bad)
    with pytest.raises(ld.ValidationError, match=r"unary reports are uint8 of shape \(n, 2\)"):
        mechanism.aggregate(bits)


def test_a_unary_file_round_trips_and_a_tampered_one_is_refused(tmp_path):
    mechanism = ld.design(zipf(5), ld.LIP(1.0), family="unary", baselines=False)
    path = tmp_path / "unary.json"
    mechanism.to_json(path)
    loaded = ld.load(path)
    assert loaded == mechanism and loaded.verify().passed
    values = np.random.default_rng(1).choice(5, size=1000, p=zipf(5))
    np.testing.assert_array_equal(loaded.perturb(values, rng=2), mechanism.perturb(values, rng=2))
    document = mechanism.to_dict()
    document["parameters"]["a"][0] = 0.99  # the rare... first value's bit now says far too much
    with pytest.raises(ld.VerificationError, match="not LIP"):
        UnaryEncoding.from_parameters(document["parameters"])


def test_what_the_unary_family_refuses():
    with pytest.raises(ld.ValidationError, match="family='unary' is designed under ld.LIP"):
        ld.design(zipf(4), ld.LIP(1.0, secret=ld.SecretModel.from_joint(np.outer([0.5, 0.5], zipf(4))),
                                  prior_set=ld.PriorSet.tv_ball(zipf(4), 0.1)), family="unary")
    with pytest.raises(ld.ValidationError, match="designed for the histogram"):
        ld.design(zipf(4), ld.LIP(1.0), ld.Mean([0, 1, 2, 3]), family="unary")
    with pytest.raises(ld.ValidationError, match="Bayesian unary design is built under ld.LIP"):
        ld.design(zipf(4), ld.LDP(1.0), ld.BayesHistogram(), family="unary")
    with pytest.raises(ld.ValidationError, match=r"a\[1\] and b\[1\] .* are realised as the same probability"):
        UnaryEncoding([0.6, 0.3, 0.7], [0.2, 0.3, 0.1], ld.LIP(5.0), [0.3, 0.3, 0.4])
    with pytest.raises(ld.ValidationError, match=r"a\[0\] and b\[0\] .* realised as the same"):  # one grid step
        UnaryEncoding([0.3, 0.6], [np.nextafter(0.3, 1), 0.3], ld.LIP(5.0), [0.5, 0.5])
    with pytest.raises(ld.ValidationError, match=r"^a\[0\] is 1.0; it must lie strictly between 0 and 1"):
        UnaryEncoding([1.0, 0.5], [0.2, 0.3], ld.LIP(5.0), [0.5, 0.5])
    with pytest.raises(ld.ValidationError, match=r"^b has 3 entries; it must have one per value \(2\)"):
        UnaryEncoding([0.6, 0.5], [0.2, 0.3, 0.1], ld.LIP(5.0), [0.5, 0.5])
    mechanism = UnaryEncoding.example()
    with pytest.raises(ld.ValidationError, match=r"prior\[0\] is -1"):
        ld.verify(mechanism, prior=[-1.0, 1.0, 1.0])
    # a prior with all its mass on one value is a valid prior: the posterior ratios are then those of that value
    assert ld.verify(mechanism, prior=[1.0, 0.0, 0.0]).epsilon == pytest.approx(
        ld.verify(mechanism.privacy_table(), ld.LIP(30.0), [1.0, 0.0, 0.0]).epsilon, rel=1e-9)


def _unbiased_figure(prior):
    """(figure, unpack) for SLSQP over z = (ln(u - 1), logit v) (a >= b): n x sum Var of the unbiased estimate,
    sum_j (P_j u_j v_j + 1 - P_j)/((u_j - 1)(1 - v_j)) (docs/math.md §7.1)."""
    k = prior.size

    def unpack(z):
        return 1 + np.exp(z[:k]), 1 / (1 + np.exp(-z[k:]))

    def figure(z):
        u, v = unpack(z)
        return float(np.sum((prior * u * v + 1 - prior) / ((u - 1) * (1 - v))))

    return figure, unpack


def _general_ldp_unary(prior, epsilon, starts=12):
    """The best unbiased UE under eps-LDP found by SLSQP over every (u, v) with u_x <= e^eps v_x' for x != x'
    (a >= b; docs/math.md §7.1), from perturbed symmetric starts: independent of the designer's 1-D search."""
    k, e = prior.size, math.exp(epsilon)
    rng = np.random.default_rng(0)
    figure, unpack = _unbiased_figure(prior)

    def margins(z):
        u, v = unpack(z)
        table = e * v[None, :] - u[:, None]
        np.fill_diagonal(table, 1.0)
        return table.ravel()

    best = np.inf
    for _ in range(starts):
        v0 = rng.uniform(1 / e, 1)
        start = np.concatenate([np.log(e * v0 - 1 + 1e-9) + rng.normal(0, 0.3, k),
                                np.log(v0 / (1 - v0)) + rng.normal(0, 0.3, k)])
        result = minimize(figure, start, method="SLSQP", constraints=[{"type": "ineq", "fun": margins}],
                          options={"maxiter": 500, "ftol": 1e-13})
        if result.success and margins(result.x).min() > -1e-9:
            best = min(best, result.fun)
    return best


@pytest.mark.parametrize(("k", "epsilon"), [(3, 0.5), (3, 4.0), (5, 1.0), (8, 2.0)])
def test_the_ldp_design_is_symmetric_and_as_good_as_any_ldp_unary_encoding(k, epsilon):
    """Under eps-LDP the design is one (a, b) with u/v = e^eps: exactly eps-LDP over all 2^k reports, no worse than
    an independent optimiser over every LDP unary encoding, and better than OUE (whose a = 1/2 ignores the prior)."""
    prior = zipf(k)
    mechanism = ld.design(prior, ld.LDP(epsilon), family="unary")
    a, b = mechanism.bit_probabilities
    assert np.ptp(a) == 0 and np.ptp(b) == 0 and mechanism.verify().notion == "LDP"
    lip, ldp = brute_force_epsilons(a, b, prior)
    assert ldp == pytest.approx(epsilon, abs=1e-9) and mechanism.epsilons["LDP"] <= epsilon
    assert mechanism.epsilons["LIP for X"] == pytest.approx(lip, rel=1e-9)
    assert mechanism.mse <= _general_ldp_unary(prior, epsilon) * (1 + 1e-6)
    assert mechanism.mse < mechanism.provenance["baselines"]["OUE"]


def test_the_ldp_design_is_oue_like_at_large_k():
    """As k grows the prior's weight on any one bit fades and the LDP design tends to OUE (a = 1/2)."""
    mechanism = ld.design(zipf(256), ld.LDP(1.0), family="unary")
    a, _ = mechanism.bit_probabilities
    oue = ld.mechanisms.OUE(1.0, 256)
    assert abs(a[0] - 0.5) < 0.02
    assert mechanism.mse == pytest.approx(float(oue.variance(zipf(256)).sum()), rel=0.01)


def test_the_joint_posterior_mean_against_every_report():
    """k = 5, random (a, b) with some a < b: listing all 2^5 reports, the mmse estimate of a batch is the mean of
    its reports' posteriors P_x Pr[y | x] / Pr[y]; bayes_risk is sum_y Pr[y] (1 - ||posterior||^2); and given the
    users' values, expected_estimate and variance are sum_x f_x E[posterior | x] and sum_x f_x Var[posterior | x]
    / n (docs/math.md §7.1)."""
    k, rng = 5, np.random.default_rng(11)
    prior = rng.dirichlet(np.ones(k))
    mechanism = UnaryEncoding(rng.uniform(0.1, 0.9, k), rng.uniform(0.1, 0.9, k), ld.LIP(30.0), prior)
    a, b = mechanism.bit_probabilities
    reports, laws = [], []
    for report in itertools.product((0, 1), repeat=k):
        y = np.array(report, dtype=bool)
        rows = np.array([np.prod(np.where(y, np.where(np.arange(k) == x, a, b), 1 - np.where(np.arange(k) == x, a, b)))
                         for x in range(k)])
        reports.append(y)
        laws.append(rows)
    laws = np.array(laws).T  # (x, report)
    posteriors = (prior[:, None] * laws / (prior @ laws)).T  # (report, v)
    risk = float((prior @ laws) @ (1 - (posteriors**2).sum(axis=1)))
    assert mechanism.bayes_risk == pytest.approx(risk, rel=1e-9)
    truth = drifted(prior, 0.2)
    mean = laws @ posteriors  # (x, v): E[posterior_v | X = x]
    np.testing.assert_allclose(mechanism.expected_estimate(truth, method="mmse"), truth @ mean, rtol=1e-9)
    np.testing.assert_allclose(mechanism.variance(truth, 7, method="mmse"),
                               truth @ (laws @ posteriors**2 - mean**2) / 7, rtol=1e-8)
    chosen = rng.integers(0, 2**k, size=300)
    batch = np.packbits(np.array(reports)[chosen].astype(np.uint8), axis=1, bitorder="little")
    with pytest.warns(ShrinkageWarning, match="pulled toward it"):
        estimate = mechanism.estimate(batch, method="mmse")
    np.testing.assert_allclose(estimate, posteriors[chosen].mean(axis=0), rtol=1e-12)
    assert not np.isfinite(estimate.standard_errors).any()


def test_the_joint_posterior_mean_on_a_drifted_population():
    """The mmse estimate is within its stated sd of its stated expectation (given the users' values), which leans
    toward the design prior; beyond k = 256 its moments are refused with the reason."""
    mechanism = ld.design(zipf(8), ld.LIP(1.0), family="unary", baselines=False)
    truth = drifted(zipf(8), 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShrinkageWarning)
        result = ld.simulate(mechanism, 20_000, rng=3, truth=truth, repetitions=40, drift=False, method="mmse")
    assert result.largest_z < 4.5, result.summary()
    assert np.abs(result.expected - zipf(8)).sum() < np.abs(result.expected - truth).sum()
    large = ld.design(zipf(300), ld.LIP(1.0), family="unary", baselines=False)
    with pytest.raises(ld.ValidationError, match="built for k <= 256"):
        large.variance(zipf(300), method="mmse")
    assert 0 < large.bayes_risk < 1


def test_the_summary_of_a_large_design_says_where_to_verify_other_priors():
    """k = 40: a TV ball's vertices are too many to list, so the summary points to ld.verify instead of failing."""
    mechanism = ld.design(zipf(40), ld.LIP(1.0), family="unary", baselines=False)
    assert "ld.verify(mech, prior=...) computes it exactly" in mechanism.summary()
    assert "if X's prior is off by up to TV 0.1" in ld.design(zipf(6), ld.LIP(1.0), family="unary").summary()


def _secret_example(k=5, m=3, seed=0):
    joint = np.random.default_rng(seed).dirichlet(np.ones(k * m) * 2).reshape(m, k)
    return ld.SecretModel.from_joint(joint), joint.sum(axis=0)


def brute_force_secret_epsilon(a, b, prior, conditional):
    """LIP of the latent secret by listing all 2^k reports:
    Pr[G = g | y]/Pr[G = g] = T[g] . Pr[y | .] / P . Pr[y | .]."""
    k, worst = len(a), 0.0
    for report in itertools.product((0, 1), repeat=k):
        y = np.array(report, dtype=bool)
        rows = np.array([np.prod(np.where(y, np.where(np.arange(k) == x, a, b), 1 - np.where(np.arange(k) == x, a, b)))
                         for x in range(k)])
        worst = max(worst, np.abs(np.log(conditional @ rows / (prior @ rows))).max())
    return worst


def test_the_secret_condition_is_the_worst_report_over_all_2_to_the_k():
    """Random bit probabilities (some a < b) and random secrets: the exact secret condition (thresholds of
    T[g, x]/P_x, docs/math.md §7.1) gives the epsilon of listing every report; with T = I it is the X condition."""
    rng = np.random.default_rng(5)
    for trial in range(4):
        secret, prior = _secret_example(seed=trial)
        a, b = rng.uniform(0.05, 0.95, 5), rng.uniform(0.05, 0.95, 5)
        mechanism = UnaryEncoding(a, b, ld.LIP(30.0, secret=secret), prior)
        p, q = mechanism.bit_probabilities
        assert mechanism.epsilons["LIP for the secret"] == pytest.approx(
            brute_force_secret_epsilon(p, q, prior, secret.conditional), rel=1e-9)
        assert mechanism.epsilons["LIP for X"] == pytest.approx(brute_force_epsilons(p, q, prior)[0], rel=1e-9)


def _independent_secret_optimum(prior, conditional, epsilon):
    """SLSQP over (u, v), a >= b, with one constraint per report, secret value and side (all 2^k reports listed)."""
    k, e = prior.size, math.exp(epsilon)
    reports = np.array(list(itertools.product((0, 1), repeat=k)), dtype=bool)
    figure, unpack = _unbiased_figure(prior)

    def margins(z):
        u, v = unpack(z)
        rho = np.where(reports, u, v)  # (reports, k)
        secret, overall = rho @ conditional.T, (rho @ prior)[:, None]
        return np.concatenate([(e * overall - secret).ravel(), (secret - overall / e).ravel()])

    start = np.full(2 * k, -1.0)
    result = minimize(figure, start, method="SLSQP", constraints=[{"type": "ineq", "fun": margins}],
                      options={"maxiter": 1000, "ftol": 1e-14})
    assert result.success and margins(result.x).min() > -1e-9
    return result.fun


@pytest.mark.parametrize("epsilon", [0.3, 1.0])
def test_the_secret_design_is_the_optimum_and_protects_the_secret_only(epsilon):
    secret, prior = _secret_example(k=5)
    notion = ld.LIP(epsilon, secret=secret)
    mechanism = ld.design(prior, notion, family="unary")
    p, q = mechanism.bit_probabilities
    assert mechanism.verify().passed
    assert brute_force_secret_epsilon(p, q, prior, secret.conditional) <= epsilon + 1e-12
    # capped bits (u <= ALPHA_CAP) cost (1/beta_x - P_x)/ALPHA_CAP each: a few 1e-6 here
    assert mechanism.mse <= _independent_secret_optimum(prior, secret.conditional, epsilon) + 10 * 5 / ALPHA_CAP
    assert mechanism.mse < ld.design(prior, ld.LIP(epsilon), family="unary").mse  # a weaker constraint
    rr = mechanism.provenance["baselines"]["optimal RR table (LIP)"]
    assert rr <= mechanism.mse and "LIP for the secret" in mechanism.summary()
    assert "at 2 eps" not in " ".join(mechanism.provenance["baselines"])  # no LDP level is implied for X


def test_the_secret_design_estimates_a_drifted_population():
    secret, prior = _secret_example(k=6, seed=3)
    mechanism = ld.design(prior, ld.LIP(0.5, secret=secret), family="unary", baselines=False)
    truth = drifted(prior, 0.2)
    result = ld.simulate(mechanism, 20_000, rng=9, truth=truth, repetitions=60, drift=False)
    assert result.largest_z < 4.5, result.summary()
    assert np.allclose(result.empirical_std, result.std, rtol=0.3), result.summary()


@pytest.mark.parametrize(("prior", "epsilon"), [([0.8, 0.1, 0.06, 0.04], 1.0), ([0.9, 0.05, 0.03, 0.02], 3.0),
                                                ([0.85, 0.1, 0.05], 0.5)])
def test_a_prior_with_an_entry_above_three_quarters_is_certified_by_the_lagrange_dual(prior, epsilon):
    """max P > 3/4: the objective is not convex, so the m/t gap proves nothing; the bound is then the Lagrange dual
    at the barrier's multipliers (weak duality), here within 1e-6 of the figure, and the figure is SLSQP's from an
    independent start."""
    prior = np.array(prior)
    mechanism = ld.design(prior, ld.LIP(epsilon), family="unary")
    optimality = mechanism.optimality
    assert optimality["bound"].startswith("Lagrange dual") and optimality["gap"] < 1e-6
    assert mechanism.mse == pytest.approx(independent_optimum(prior, epsilon), rel=1e-6)
    assert optimality["lower_bound"] <= independent_optimum(prior, epsilon) * (1 + 1e-9)


def _binary_mmse(prior, a, b):
    """sum_j E[(B_j - E[B_j | Y_j])^2] from each bit's 2 x 2 joint law (independent of the closed form)."""
    total = 0.0
    for p, one, other in zip(prior, a, b):
        joint = np.array([[p * (1 - one), p * one], [(1 - p) * (1 - other), (1 - p) * other]])  # (B = 1/0, y)
        total += p - float(np.sum(joint[0] ** 2 / joint.sum(axis=0)))
    return total


def test_the_bayesian_design_degenerates_to_one_bit_on_a_skewed_prior():
    """Zipf(1.1), k = 8, eps = 1 (docs/math.md §7.1): the best found design under the posterior-mean objective keeps
    one informative bit, for the mode; its figure is the joint posterior mean's MSE (listing all 2^8 reports), above
    the §10 bound and the optimal RR table; its per-bit MMSE is the recorded objective; there is no unbiased
    estimate."""
    prior = zipf(8)
    mechanism = ld.design(prior, ld.LIP(1.0), ld.BayesHistogram(), family="unary")
    a, b = mechanism.bit_probabilities
    assert list(np.flatnonzero(a != b)) == [0] and mechanism.default_method == "mmse"
    assert mechanism.mse == pytest.approx(mechanism.bayes_risk) and mechanism.verify().passed
    laws = []
    for report in itertools.product((0, 1), repeat=8):
        y = np.array(report, dtype=bool)
        laws.append([np.prod(np.where(y, np.where(np.arange(8) == x, a, b), 1 - np.where(np.arange(8) == x, a, b)))
                     for x in range(8)])
    joint = prior[:, None] * np.array(laws).T
    assert mechanism.mse == pytest.approx(1 - ((joint**2).sum(axis=0) / joint.sum(axis=0)).sum(), rel=1e-9)
    bound = mechanism.optimality["lower_bound"]
    assert bound < mechanism.provenance["baselines"]["optimal RR table (LIP)"] <= mechanism.mse
    assert mechanism.provenance["per_bit_mmse"] == pytest.approx(_binary_mmse(prior, a, b), rel=1e-7)
    assert "degenerates to ONE informative bit, for value 0" in mechanism.summary()
    with pytest.raises(ld.ValidationError, match="no unbiased estimate: use method='mmse'"):
        mechanism.estimate(mechanism.perturb([0, 1, 2], rng=1), method="unbiased")
    assert UnaryEncoding.from_parameters(mechanism.parameters()) == mechanism


def test_the_bayesian_design_is_no_worse_than_any_start_in_its_own_figure():
    """Review findings: candidates were once ranked by per-bit MMSE (which charges an uninformative bit its whole
    P(1-P)) and SLSQP results just over the rows (by an ulp of e^eps - 1 = 2980) were dropped. The figure reported,
    the joint posterior mean's MSE (listing every report), is now no worse than that of the unbiased design or of
    any one-bit design, and at k = 2 it is the §10 bound, the optimum."""
    from lipdesign._solvers.unary_encoding import design_unary
    from lipdesign.designer.bounds import bayes_histogram_bound
    from lipdesign.designer.unary_encoding import _bits, _one_bit

    def joint_figure(prior, a, b):
        k = prior.size
        laws = np.array([[np.prod(np.where(np.array(y, bool), np.where(np.arange(k) == x, a, b),
                                           1 - np.where(np.arange(k) == x, a, b))) for x in range(k)]
                         for y in itertools.product((0, 1), repeat=k)]).T
        joint = prior[:, None] * laws
        return 1 - float(((joint**2).sum(axis=0) / joint.sum(axis=0)).sum())

    for prior, epsilon in (([0.5, 0.5], 3.0), ([0.9, 0.1], 8.0), ([0.01, 0.85, 0.14], 3.0), (zipf(6, 2.0), 8.0)):
        prior = np.array(prior)
        mechanism = ld.design(prior, ld.LIP(epsilon), ld.BayesHistogram(), family="unary", baselines=False)
        assert mechanism.mse == pytest.approx(joint_figure(prior, *mechanism.bit_probabilities), rel=1e-9)
        unbiased = design_unary(prior, epsilon)
        starts = [_bits(unbiased.alpha, unbiased.beta)] + [_bits(*_one_bit(prior, epsilon, x)) for x in
                                                           range(min(3, prior.size))]
        assert all(mechanism.mse <= joint_figure(prior, *start) * (1 + 1e-6) for start in starts), prior
        if prior.size == 2:
            assert mechanism.mse == pytest.approx(bayes_histogram_bound(ld.Prior(prior), epsilon), rel=1e-6)
        assert mechanism.epsilons["claimed"] <= epsilon


def test_the_posterior_integrals_hold_when_a_bit_almost_never_fires():
    """Review finding: with b = 1e-6 the integrand in t has a narrow peak near 1/(P_x u_x) that an adaptive rule on
    [0, inf) missed (0.81 instead of 0.31). The integral now runs in ln t, split at those points."""
    prior = np.array([0.2, 0.3, 0.5])
    mechanism = UnaryEncoding([0.5, 0.9, 0.7], [1e-6, 1e-9, 0.3], ld.LIP(30.0), prior)
    a, b = mechanism.bit_probabilities
    laws = np.array([[np.prod(np.where(np.array(y, bool), np.where(np.arange(3) == x, a, b),
                                       1 - np.where(np.arange(3) == x, a, b))) for x in range(3)]
                     for y in itertools.product((0, 1), repeat=3)]).T
    joint = prior[:, None] * laws
    assert mechanism.bayes_risk == pytest.approx(1 - ((joint**2).sum(axis=0) / joint.sum(axis=0)).sum(), rel=1e-9)
    posteriors = joint / joint.sum(axis=0)
    np.testing.assert_allclose(mechanism.expected_estimate(prior, method="mmse"), (prior @ laws) @ posteriors.T,
                               rtol=1e-9)


def test_a_secret_whose_values_may_all_be_released():
    """Review finding: when releasing any value keeps the secret's posterior in bounds, the optimum is near 0 and
    the relative gap meaningless; the design is accepted on its absolute gap, and compare does not divide by 0."""
    joint = np.array([[0.05, 0.15, 0.1, 0.2], [0.05, 0.05, 0.2, 0.2]])
    secret, prior = ld.SecretModel.from_joint(joint), joint.sum(axis=0)
    mechanism = ld.design(prior, ld.LIP(1.0, secret=secret), family="unary", baselines=False)
    assert mechanism.verify().passed and mechanism.mse < 1e-4
    assert "LIP for the secret" in mechanism.summary()
    text = str(ld.compare(prior, ld.LIP(1.0, secret=secret)))
    assert "unary encoding" in text and "latent secret" in text
    with pytest.raises(ld.ValidationError, match="secret"):  # a prior that is not the secret's marginal
        UnaryEncoding(*mechanism.bit_probabilities, ld.LIP(1.0, secret=secret), [0.7, 0.1, 0.1, 0.1])


@pytest.mark.parametrize("radius", [0.02, 0.1])
def test_the_bounded_prior_design_holds_over_the_set_and_is_the_optimum(radius):
    """BP-LIP over a TV ball (docs/math.md §7.1): the joint condition is linear-fractional in the prior for each
    report, so it is enforced at the ball's vertices; the design is exactly LIP over the ball (and at priors drawn
    inside it, by listing every report), costs more than the plain design, and equals SLSQP with every vertex's rows."""
    prior = np.array([0.12, 0.34, 0.28, 0.16, 0.10])
    ball = ld.PriorSet.tv_ball(prior, radius)
    mechanism = ld.design(prior, ld.LIP(1.0, prior_set=ball), family="unary")
    assert mechanism.verify().passed and ld.verify(mechanism, prior=ball).epsilon <= 1.0
    a, b = mechanism.bit_probabilities
    rng = np.random.default_rng(2)
    for _ in range(5):
        weights = rng.dirichlet(np.ones(len(ball.vertices)))
        assert brute_force_epsilons(a, b, weights @ ball.vertices)[0] <= 1.0 + 1e-12
    assert mechanism.mse > ld.design(prior, ld.LIP(1.0), family="unary", baselines=False).mse
    e = math.e
    figure, unpack = _unbiased_figure(prior)

    def margins(z):
        u, v = unpack(z)
        rows = []
        for vertex in ball.vertices:
            rows.append(e * (vertex @ v) - (u * (1 - e * vertex) + e * vertex * v))
            rows.append(vertex * u + (e - vertex) * v - vertex @ u)
        return np.concatenate(rows)

    result = minimize(figure, np.full(10, -1.0), method="SLSQP", constraints=[{"type": "ineq", "fun": margins}],
                      options={"maxiter": 2000, "ftol": 1e-14})
    assert margins(result.x).min() > -1e-9
    assert mechanism.mse == pytest.approx(result.fun, rel=1e-6)
    assert "at every prior of the set" in mechanism.summary()


@pytest.mark.parametrize("notion", [ld.LDP(2.0), ld.LIP(2.0)])
def test_a_unary_encoding_of_a_single_value_is_certified_like_a_table_of_one_row(notion):
    """mypy check_untyped_defs finding: joint_ldp_ratio unpacked None when no pair x != x' exists (one value), so a
    unary encoding of a single value raised TypeError; its LDP ratio is 1 (epsilon 0), as a table mechanism's."""
    mechanism = UnaryEncoding([0.7], [0.2], notion, [1.0])
    assert mechanism.verify().passed
    if isinstance(notion, ld.LDP):
        assert mechanism.verify().epsilon == 0.0
        assert mechanism.verify().epsilon == ld.TableMechanism([[1.0]], notion, [1.0]).verify().epsilon
