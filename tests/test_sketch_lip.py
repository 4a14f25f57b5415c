"""The count-mean sketch designed under LIP (docs/math.md §16.6): its claim against a brute-force enumeration of every
report in exact rationals, its figure against simulation, the design against Apple's symmetric sketch at the same
LIP level, the weighted unary program, and bad input."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import lipdesign as ld
from lipdesign._solvers.unary_encoding import bit_probabilities, design_unary, objective
from lipdesign.errors import ValidationError, VerificationError
from lipdesign.mechanisms import CountMeanSketch, CountMeanSketchLIP
from lipdesign.strings import bounded, byte_words, hash_key, string_hash
from lipdesign.testing import checks, run_check

WORD = 2**32
WORDS = ["the", "of", "and", "to", "in", "is", "you", "that"]
PRIOR = ld.Prior([0.3, 0.2, 0.15, 0.1, 0.1, 0.07, 0.05, 0.03], labels=WORDS)


@pytest.fixture(scope="module")
def small():
    """A design small enough to enumerate: 2 rows of 6 buckets, LIP 1 at PRIOR with 5% unlisted mass."""
    return ld.designer.sketch.sketch_design(PRIOR, ld.LIP(1.0), ld.Frequencies(), m=6, d=2, seed=11, unlisted=0.05)


def brute_force_lip(sketch, unlisted, probabilities=None):
    """max over rows j, reports y and buckets b of Pr[j, y | bucket b] / Pr[j, y] and its inverse, in Fractions,
    from the thresholds: the prior is the candidates' (scaled to 1 - unlisted) and unlisted / m per bucket. Computed
    from the hash functions directly, not from the mechanism's induced priors."""
    keys = hash_key(sketch.seed, np.arange(sketch.d))
    words = [word.encode() for word in sketch.prior.labels]
    mass = [Fraction(float(p)) for p in (sketch.prior.probabilities if probabilities is None else probabilities)]
    total = sum(mass)
    worst = Fraction(0)
    for row in range(sketch.d):
        buckets = bounded(string_hash(*byte_words(words), keys[row:row + 1]), sketch.m)[:, 0]
        prior = [Fraction(unlisted) / sketch.m] * sketch.m
        for bucket, p in zip(buckets, mass):
            prior[bucket] += p / total * (1 - Fraction(unlisted))
        on = [Fraction(int(t), WORD) for t in sketch.on[row]]
        off = [Fraction(int(t), WORD) for t in sketch.off[row]]
        for y in itertools.product((0, 1), repeat=sketch.m):
            likelihood = []
            for b in range(sketch.m):
                value = Fraction(1)
                for i, bit in enumerate(y):
                    p1 = on[i] if i == b else off[i]
                    value *= p1 if bit else 1 - p1
                likelihood.append(value)
            marginal = sum(p * value for p, value in zip(prior, likelihood))
            worst = max(worst, *(value / marginal for value in likelihood), *(marginal / value for value in likelihood))
    return worst


def test_claim_matches_brute_force(small):
    ratio = brute_force_lip(small, 0.05)
    assert small.verify().passed
    assert math.log(ratio) <= small.epsilon
    # the certificate is the exact epsilon rounded outward, not a loose bound
    assert small.epsilons["LIP for X"] == pytest.approx(math.log(ratio), abs=1e-9)
    assert small.epsilons["LIP for X"] >= math.log(ratio) - 1e-12


def test_tampered_thresholds_are_caught(small):
    on = small.on.copy()
    on[1, 2] = WORD - 1  # one bucket's bit made nearly certain: far beyond LIP 1
    tampered = small.parameters() | {"on": on.tolist()}
    with pytest.raises(VerificationError, match="row 1"):
        CountMeanSketchLIP(**tampered)
    assert math.log(brute_force_lip(CountMeanSketchLIP(**tampered | {"epsilon": 30.0}), 0.05)) > 1.0


@pytest.mark.parametrize("check", checks(CountMeanSketchLIP.example()))
def test_contract_example(check):
    run_check(CountMeanSketchLIP.example(), check)


@pytest.mark.parametrize("check", checks(CountMeanSketchLIP.example()))
def test_contract_design(small, check):
    run_check(small, check)


def test_json_round_trip(small, tmp_path):
    path = tmp_path / "sketch.json"
    small.to_json(path)
    loaded = ld.load(path)
    assert loaded == small and loaded.epsilons == small.epsilons  # the provenance is not read back (io.envelope)


def test_figure_matches_simulation(small):
    """mse is n x sum Var of the candidates' estimate with users in the prior's proportions: the sum of the sample
    variances over R = 1,200 seeded collections agrees within 4 standard errors of a variance estimate
    (sqrt(2 / (R - 1)) relative, per term, taken conservatively for the sum: 16 %)."""
    n, repetitions = 2000, 1200
    counts = np.rint(PRIOR.probabilities * n).astype(int)
    users = np.repeat(np.array(WORDS, dtype=object), counts)
    rng = np.random.default_rng(5)
    estimates = np.array([small.estimate(small.perturb(users, rng=rng)).values for _ in range(repetitions)])
    simulated = n * estimates.var(axis=0, ddof=1).sum()
    assert simulated == pytest.approx(small.mse, rel=4 * math.sqrt(2 / (repetitions - 1)))
    # and unbiased: every candidate within 4 standard errors of its truth
    z = (estimates.mean(axis=0) - counts / n) / np.sqrt(estimates.var(axis=0, ddof=1) / repetitions)
    assert np.abs(z).max() < 4


def test_variance_at_is_variance_of_proportional_users():
    sketch = CountMeanSketch(2.0, m=32, d=4, seed=3, candidates=WORDS)
    counts = np.rint(PRIOR.probabilities * 1000).astype(int)
    users = np.repeat(np.array(WORDS, dtype=object), counts)
    assert sketch.variance_at(PRIOR) == pytest.approx(counts.sum() * sketch.variance(users), rel=1e-9)


def test_design_beats_the_symmetric_sketch_at_the_same_lip():
    """At a Zipf prior over 60 words the designed rows lower n x sum Var below Apple's sketch at the largest
    epsilon whose sketch is LIP-eps there (its baseline), which is itself verified LIP-eps by the constructor."""
    words = [f"w{i}" for i in range(60)]
    zipf = 1 / np.arange(1, 61)
    prior = ld.Prior(zipf / zipf.sum(), labels=words)
    design = ld.design(prior, ld.LIP(2.0), family="cms")
    symmetric = design.baselines["count-mean sketch (LIP)"]
    assert design.verify().passed and design.epsilons["LIP for X"] <= 2.0
    assert design.mse < 0.9 * symmetric
    # the LDP level of the design lies between eps and 2 eps (docs/math.md §2)
    assert 2.0 - 1e-9 <= design.epsilons["LDP"] <= 4.0


def test_symmetric_baseline_is_at_the_lip_boundary():
    """The closed form e^eps' = (e^eps - p_min)/(1 - p_min) puts Apple's sketch exactly at LIP eps: a little more
    epsilon breaks the claim."""
    prior = ld.Prior([0.4, 0.3, 0.2, 0.1], labels=["a", "b", "c", "d"])
    unlisted, m, d, seed, eps = 0.1, 8, 3, 5, 1.0
    widest = math.log((math.exp(eps) - unlisted / m) / (1 - unlisted / m))  # p_min is an empty bucket's
    for level, holds in ((widest, True), (widest + 1e-3, False)):
        flip = math.ceil(WORD / (1 + math.exp(level / 2)))
        build = lambda: CountMeanSketchLIP(eps, prior, np.full((d, m), WORD - flip), np.full((d, m), flip), m=m,  # noqa: E731
                                           d=d, seed=seed, unlisted=unlisted)
        if holds:
            assert build().epsilons["LIP for X"] <= eps
        else:
            with pytest.raises(VerificationError):
                build()


def test_ldp_design_is_apples_sketch():
    mechanism = ld.design(PRIOR, ld.LDP(1.0), family="cms")
    assert isinstance(mechanism, CountMeanSketch) and mechanism.candidates == tuple(WORDS)


def test_weighted_unary_program():
    """Weights change the objective only: weights of 1 give the unweighted design, and the weighted optimum is no
    worse under its own weights than the unweighted one (and its bound lies below it)."""
    prior = np.array([0.05, 0.3, 0.0, 0.25, 0.4, 0.0])
    weights = np.array([1.0, 3.0, 0.1, 1.0, 2.0, 0.1])
    plain = design_unary(prior, 1.0)
    ones = design_unary(prior, 1.0, weights=np.ones(6))
    assert np.allclose(plain.alpha, ones.alpha) and np.allclose(plain.beta, ones.beta)
    weighted = design_unary(prior, 1.0, weights=weights)
    assert weighted.bound <= weighted.value <= objective(plain.alpha, plain.beta, prior, weights) + 1e-9
    a, b = bit_probabilities(weighted.alpha, weighted.beta)
    assert np.all((0 < b) & (b < a) & (a < 1))


@pytest.mark.parametrize("change, field", [
    ({"on": np.zeros((2, 6), int).tolist()}, "on"),
    ({"off": np.full((2, 5), 7).tolist()}, "off"),
    ({"unlisted": 1.0}, "unlisted"),
    ({"m": 1}, "m"),
    ({"epsilon": 0.0}, "epsilon"),
])
def test_bad_parameters(small, change, field):
    with pytest.raises(ValidationError, match=field):
        CountMeanSketchLIP(**small.parameters() | change)


def test_on_equal_to_off_is_refused(small):
    with pytest.raises(ValidationError, match="says nothing"):
        CountMeanSketchLIP(**small.parameters() | {"off": small.on.tolist()})


def test_notions_it_is_not_built_for():
    drifting = ld.LIP(1.0, prior_set=ld.PriorSet.tv_ball(PRIOR.probabilities, 0.05))
    with pytest.raises(ValidationError, match="family='cms'"):
        ld.design(PRIOR, drifting, family="cms")
    with pytest.raises(ValidationError, match="family='cms'"):
        ld.design(PRIOR, ld.LIP(1.0), "histogram", family="cms")


def test_memoised_reports_repeat_and_follow_each_cell(small):
    """perturb_memoised: a device sends the same report of a value every round (so any number of them reveal what
    one does), and over devices each bit is 1 at its cell's realised probability (z-test per cell, |z| < 4.5 over
    2 x 6 cells)."""
    n = 40_000
    keys = small.device_keys(n, rng=3)
    users = np.array(["the"] * n, dtype=object)
    reports = small.perturb_memoised(users, keys)
    assert np.array_equal(reports, small.perturb_memoised(users, keys))
    assert not np.array_equal(reports, small.perturb_memoised(users, small.device_keys(n, rng=4)))
    rows, bits = small.unpack(reports)
    buckets = small.filters(["the"] * small.d, np.arange(small.d))
    for row in range(small.d):
        mine = bits[rows == row]
        assert abs(len(mine) - n / small.d) < 4.5 * math.sqrt(n / small.d / 2)  # rows uniform over devices
        probability = np.where(buckets[row], small.on[row], small.off[row]) / WORD
        z = (mine.mean(axis=0) - probability) / np.sqrt(probability * (1 - probability) / len(mine))
        assert np.abs(z).max() < 4.5


def test_the_design_command(tmp_path):
    """`lipdesign design` with family cms writes a file that loads and verifies; a width below 2 is refused in one
    line with exit 2 and nothing written."""
    import json

    from helpers import lipdesign, one_line_error

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"prior": PRIOR.to_dict(), "notion": {"kind": "LIP", "epsilon": 1.0},
                                "family": "cms", "buckets": 16}))
    result = lipdesign("design", spec, "-o", tmp_path / "sketch.json", "-q")
    assert result.returncode == 0, result.stderr
    loaded = ld.load(tmp_path / "sketch.json")
    assert loaded.family == "cms-lip" and loaded.m == 16 and loaded.verify().passed
    assert "eps-LIP for every string at the declared prior" in result.stdout
    line = one_line_error(lipdesign("design", spec, "-o", tmp_path / "bad.json", "--buckets", "1"))
    assert "m (the buckets) is 1" in line and not (tmp_path / "bad.json").exists()


def test_audit(small):
    """ld.audit reads the worst row's buckets, comparing each candidate's reports with the prior's as the LIP claim
    does; with unlisted mass the plan is refused (the audit's populations would leave that mass out)."""
    design = ld.design(PRIOR, ld.LIP(1.0), family="cms", buckets=16)
    result = ld.audit(design, reports=20_000, rng=1)
    assert result.passed and result.notion == "LIP" and result.empirical_epsilon <= 1.0
    assert small.unlisted > 0 and small.audit_plan() is None
    with pytest.raises(ValidationError, match="audit_plan"):
        ld.audit(small, reports=1000, rng=1)


def test_verify_at_another_prior_matches_brute_force(small):
    """ld.verify(sketch, prior=...) is the claim's certificate at another prior over the candidates (the unlisted
    mass kept): the enumeration of every report in Fractions at that prior agrees, and a prior far from the design's
    raises LIP above the claim (never above the LDP level)."""
    other = np.array([0.02, 0.03, 0.05, 0.1, 0.1, 0.2, 0.2, 0.3])
    certificate = ld.verify(small, prior=other)
    ratio = brute_force_lip(small, 0.05, other)
    assert certificate.epsilon == pytest.approx(math.log(ratio), abs=1e-9) and certificate.epsilon >= math.log(ratio)
    assert certificate.epsilon > small.epsilon and not certificate.passed
    assert certificate.epsilon <= small.epsilons["LDP"] + 1e-12
    assert ld.verify(small, prior=PRIOR).epsilon == small.epsilons["LIP for X"]
    with pytest.raises(ValidationError, match="prior"):
        ld.verify(small, prior=[0.5, 0.5])


def test_simulations_draw_users_from_the_design_prior():
    """A designed sketch's users, when simulated, come from its prior over the candidates (they came from Zipf(1)
    over the list order while the summary said 'the design prior')."""
    design = ld.design(PRIOR, ld.LIP(1.0), family="cms", buckets=16, baselines=False)
    assert np.array_equal(design.input_domain.frequencies, PRIOR.probabilities)
    result = ld.simulate(design, 50_000, rng=1, repetitions=2, drift=False)
    assert result.population == "the design prior"
    assert np.abs(result.truth - PRIOR.probabilities).max() < 4 * np.sqrt(0.3 * 0.7 / 50_000)


def test_design_options_are_checked_by_name():
    with pytest.raises(ValidationError, match="unlisted is -0.1"):
        ld.designer.sketch_design(PRIOR, ld.LIP(1.0), unlisted=-0.1)
    with pytest.raises(ValidationError, match="epsilon is 20.0; the sketch's rows are designed at epsilon <= 10"):
        ld.design(PRIOR, ld.LIP(20.0), family="cms")
    assert ld.design(PRIOR, ld.LIP(10.0), family="cms", buckets=16, baselines=False).verify().passed


def test_verify_matches_a_prior_by_its_labels():
    """A Prior given to ld.verify is matched to the candidates by label: the same distribution listed in another
    order certifies the same epsilon (it used to be read by position, and a failing prior could pass), and labels
    that are not the candidates are refused."""
    design = ld.design(PRIOR, ld.LIP(1.0), family="cms", buckets=16, baselines=False)
    other = np.array([0.02, 0.03, 0.05, 0.1, 0.1, 0.2, 0.2, 0.3])
    in_order = ld.verify(design, prior=ld.Prior(other, labels=WORDS))
    shuffled = np.random.default_rng(0).permutation(8)
    reordered = ld.verify(design, prior=ld.Prior(other[shuffled], labels=[WORDS[i] for i in shuffled]))
    assert reordered.epsilon == in_order.epsilon and not in_order.passed
    with pytest.raises(ValidationError, match="prior has the label 'a'"):
        ld.verify(design, prior=ld.Prior(other, labels=list("abcdefgh")))


def test_bad_design_options_are_named():
    for options, field in (({"d": 0}, "d is 0"), ({"seed": -1}, "seed is -1"), ({"m": 1}, "m (the buckets) is 1")):
        with pytest.raises(ValidationError, match=field.replace("(", r"\(").replace(")", r"\)")):
            ld.designer.sketch_design(PRIOR, ld.LIP(1.0), baselines=False, **options)
    with pytest.raises(ValidationError, match="non-integer entries"):
        CountMeanSketchLIP(**CountMeanSketchLIP.example().parameters() | {"on": np.full((4, 16), 2.5e9 + 0.5)})


def test_the_bucket_weights_are_what_make_the_design_win():
    """Eight candidates in rows of 32 buckets (most of them empty): designed with each bucket weighted by the
    candidates it holds, the sketch beats Apple's at the same LIP level (27.2 against 33.2 at eps = 1); the
    unweighted unary design spends its budget on empty buckets and came out at 48.8, worse than Apple's."""
    for eps in (1.0, 2.0):
        design = ld.designer.sketch_design(PRIOR, ld.LIP(eps), m=32, d=8)
        assert design.mse < 0.9 * design.baselines["count-mean sketch (LIP)"], eps
