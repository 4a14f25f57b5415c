"""RAPPOR (docs/math.md §16.2-§16.4): both guarantees against their closed forms from the realised thresholds,
the sampler's bit probabilities, the least-squares decoding (unbiased, with standard errors that cover), and bad
input."""

import math
from fractions import Fraction

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.mechanisms import RAPPOR
from lipdesign.verification import exp_bounds

WORDS = ["the", "of", "and", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are", "as", "with"]


def realised(f, p, q):
    """f/2, p and q as the sampler realises them (integer thresholds on 32-bit words), computed here from the
    recipe of docs/math.md §16.2, not read from the mechanism."""
    return Fraction(round(f * 2**31), 2**32), Fraction(round(p * 2**32), 2**32), Fraction(round(q * 2**32), 2**32)


@pytest.mark.parametrize("f, p, q, h", [(0.5, 0.5, 0.75, 2), (0.25, 0.35, 0.65, 1), (0.1, 0.0, 1.0, 4),
                                        (0.75, 0.9, 0.1, 3), (1 / 3, 0.3, 0.7, 8)])
def test_both_guarantees_are_the_closed_forms_at_the_realised_probabilities(f, p, q, h):
    rappor = RAPPOR(f=f, p=p, q=q, m=64, h=h, cohorts=2, seed=5)
    half_f, p_r, q_r = realised(f, p, q)
    q_star = (1 - half_f) * q_r + half_f * p_r
    p_star = half_f * q_r + (1 - half_f) * p_r
    high, low = max(q_star, p_star), min(q_star, p_star)
    one_report = h * math.log(high * (1 - low) / (low * (1 - high)))
    permanent = 2 * h * math.log((1 - half_f) / half_f)
    # the stated epsilons are the exact values rounded up: never below, within a few ulps above
    assert one_report <= rappor.epsilon <= one_report * (1 + 1e-12)
    assert permanent <= rappor.epsilon_permanent <= permanent * (1 + 1e-12)
    # the exact ratios are within e^epsilon (rational comparison with a rational upper bound of e^epsilon)
    assert (high * (1 - low) / (low * (1 - high))) ** h <= exp_bounds(rappor.epsilon)[1]
    certificate = rappor.verify()
    assert certificate.passed and certificate.exact
    assert abs(certificate.epsilon - one_report) <= 1e-12 * one_report
    assert rappor.permanent_certificate()["passed"]
    # one report is a post-processing of the permanent response: never more revealing
    assert rappor.epsilon <= rappor.epsilon_permanent


def test_the_paper_parameters():
    # [RAPPOR]'s f = 0.5, p = 0.5, q = 0.75, h = 2: q* = 0.6875, p* = 0.5625; eps_inf = 4 ln 3
    rappor = RAPPOR(f=0.5, p=0.5, q=0.75, m=128, h=2, cohorts=8, seed=1)
    assert (rappor.q_star, rappor.p_star) == (Fraction(11, 16), Fraction(9, 16))
    assert rappor.epsilon_permanent == pytest.approx(4 * math.log(3), rel=1e-12)
    assert rappor.epsilon == pytest.approx(2 * math.log((11 / 16) * (7 / 16) / ((9 / 16) * (5 / 16))), rel=1e-12)


def test_bits_follow_q_star_and_p_star():
    """Over 40,000 reports of one value, each bit of its filter is set at rate q* and every other bit at p*
    (within 5 sd of a binomial proportion)."""
    rappor = RAPPOR(f=0.5, p=0.25, q=0.8, m=32, h=3, cohorts=1, seed=3)
    n = 40_000
    cohorts, bits = rappor.unpack(rappor.perturb(["hello"] * n, rng=0))
    assert (cohorts == 0).all()
    inside = rappor.filters(["hello"], [0])[0]
    rates = bits.mean(axis=0)
    for rate, expected in ((rates[inside], float(rappor.q_star)), (rates[~inside], float(rappor.p_star))):
        assert np.all(np.abs(rate - expected) < 5 * math.sqrt(expected * (1 - expected) / n))


def zipf_words(n, rng):
    weights = 1 / np.arange(1, len(WORDS) + 1)
    return np.array(WORDS, dtype=object)[rng.choice(len(WORDS), size=n, p=weights / weights.sum())]


def test_decoding_is_unbiased_and_its_errors_cover():
    """60 repetitions over one population of 20,000 users: the mean estimate is within 4 standard errors of the
    truth for every word, the spread matches the exact variance (``variance``) within 4 of its standard errors,
    and the 95 % intervals from the estimate's own standard errors cover the truth in 90 to 99 % of the cases."""
    rappor = RAPPOR(f=0.25, p=0.3, q=0.7, m=48, h=2, cohorts=4, seed=11, candidates=WORDS)
    values = zipf_words(20_000, np.random.default_rng(0))
    truth = rappor.input_domain.truth(values)
    exact_sd = np.sqrt(rappor.variance(values, n=None))
    estimates, covered = [], []
    for repetition in range(60):
        estimate = rappor.estimate(rappor.perturb(values, rng=repetition))
        estimates.append(estimate.values)
        low, high = estimate.confidence_interval(0.95)
        covered.append((low <= truth) & (truth <= high))
    estimates = np.array(estimates)
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < 4 * exact_sd / math.sqrt(60))
    # a sample sd of R draws is off by about 1/sqrt(2 (R - 1)) relatively: within 4 of that
    assert np.allclose(estimates.std(axis=0, ddof=1), exact_sd, rtol=4 / math.sqrt(2 * 59))
    assert 0.90 <= np.mean(covered) <= 0.99
    assert np.allclose(rappor.expected_estimate(values, n=None), truth, atol=1e-12)


def test_a_value_outside_the_list_shows_as_unexplained_mass():
    rappor = RAPPOR(f=0.25, p=0.3, q=0.7, m=48, h=2, cohorts=4, seed=11, candidates=WORDS)
    values = np.concatenate([zipf_words(15_000, np.random.default_rng(1)), ["unlisted"] * 5_000])
    estimate = rappor.estimate(rappor.perturb(values, rng=2))
    assert estimate.values.sum() < 0.9  # the list explains about 3/4 of the users
    assert "explain" in estimate.note


def test_candidates_are_not_part_of_the_mechanism(tmp_path):
    rappor = RAPPOR(f=0.5, p=0.5, q=0.75, m=32, h=2, cohorts=2, seed=9)
    decoder = rappor.with_candidates(WORDS)
    assert decoder == rappor and decoder.fingerprint == rappor.fingerprint
    ld.save(rappor, tmp_path / "rappor.json")
    loaded = ld.load(tmp_path / "rappor.json")
    reports = loaded.perturb(zipf_words(3000, np.random.default_rng(0)), rng=4)
    with pytest.raises(ld.ValidationError, match=r"candidates is None; decoding RAPPOR reports needs the candidate"):
        loaded.estimate(reports)
    assert loaded.with_candidates(WORDS).estimate(reports).values.shape == (len(WORDS),)


@pytest.mark.parametrize("arguments, message", [
    ({"f": 0.0}, r"f is 0.0; it must lie strictly between 0 and 1"),
    ({"f": 1.0}, r"f is 1.0; it must lie strictly between 0 and 1"),
    ({"p": 0.5, "q": 0.5}, r"q is 0.5; it must differ from p = 0.5"),
    ({"q": 1.5}, r"q is 1.5; it must be .*1"),
    ({"m": 0}, r"m is 0; it must be an integer in 1..65536"),
    ({"m": 4, "h": 5}, r"h is 5; a filter of m = 4 bits takes at most m hash functions"),
    ({"cohorts": 0}, r"cohorts is 0; it must be an integer in 1..65536"),
    ({"candidates": ["a", "a"]}, r"candidates\[1\] is 'a', the same string as candidates\[0\]"),
    ({"candidates": ["a", ""]}, r"candidates\[1\] is the empty string"),
])
def test_bad_parameters_are_refused(arguments, message):
    parameters = {"f": 0.5, "p": 0.5, "q": 0.75, "m": 16, "h": 2, "cohorts": 2, "seed": 1, **arguments}
    with pytest.raises(ld.ValidationError, match=message):
        RAPPOR(**parameters)


def test_bad_reports_are_refused():
    rappor = RAPPOR(f=0.5, p=0.5, q=0.75, m=12, h=2, cohorts=3, seed=1)
    good = rappor.perturb(["a", "b"], rng=0)
    with pytest.raises(ld.ValidationError, match=r"reports has shape \(2, 3\) and dtype uint8; RAPPOR reports are "
                                                 r"uint8 \(n, 4\)"):
        rappor.aggregate(good[:, :3])
    bad = good.copy()
    bad[1, 0] = 3
    with pytest.raises(ld.ValidationError, match=r"reports\[1\] has cohort 3; this mechanism has cohorts 0..2"):
        rappor.aggregate(bad)
    bad = good.copy()
    bad[0, 3] |= 0x80  # bit 15 of a 12-bit filter
    with pytest.raises(ld.ValidationError, match=r"reports\[0\] sets a bit beyond m = 12"):
        rappor.aggregate(bad)


def test_too_many_candidates_for_the_bits_are_refused():
    rappor = RAPPOR(f=0.5, p=0.5, q=0.75, m=8, h=1, cohorts=1, seed=1, candidates=[f"w{i}" for i in range(12)])
    reports = rappor.perturb(["w1"] * 100, rng=0)
    with pytest.raises(ld.ValidationError, match=r"candidates holds 12 strings; their filters .* are not linearly "
                                                 r"independent"):
        rappor.estimate(reports)


def test_the_sparse_gram_matrix_is_the_dense_one():
    """G = sum_c X_c^T X_c from the joined filter entries equals the product of the dense filters (``filters``),
    on a filter small enough that candidates share bits and a value's hashes collide."""
    rappor = RAPPOR(f=0.5, p=0.5, q=0.75, m=8, h=3, cohorts=3, seed=2, candidates=WORDS[:6])
    filters = [rappor.filters(WORDS[:6], [c] * 6).astype(int) for c in range(3)]  # (K, m) per cohort
    dense = sum(matrix @ matrix.T for matrix in filters)
    assert (dense - np.diag(np.diag(dense))).any()  # candidates do share bits here
    _, gram = rappor._design()
    assert np.array_equal(gram, dense)
