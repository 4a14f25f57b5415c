"""The count-mean sketch (docs/math.md §16.4): its epsilon from the realised flip threshold, the sign rates, the
least-squares decoding beside [Apple17]'s count-mean estimate (computed here from the aggregate, from the paper's
formula), and bad input."""

import math
from fractions import Fraction

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.mechanisms import CountMeanSketch
from lipdesign.verification import exp_bounds


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 2.0, 4.0, 10.0])
def test_epsilon_is_the_closed_form_at_the_realised_flip(epsilon):
    sketch = CountMeanSketch(epsilon, m=16, d=2, seed=1)
    threshold = math.ceil(2**32 / (1 + math.exp(epsilon / 2)))  # the recipe, from docs/math.md §16.4
    flip = Fraction(threshold, 2**32)
    ratio = ((1 - flip) / flip) ** 2  # two differing signs of a row
    assert ratio <= exp_bounds(epsilon)[1]  # never above the claim, exactly
    certificate = sketch.verify()
    assert certificate.passed and certificate.exact
    assert math.isclose(certificate.epsilon, math.log(ratio), rel_tol=1e-12)
    # and the flip is not needlessly large: rounding it up by under 2^-32 costs at most 2 2^-32 / (flip (1 - flip))
    assert epsilon - certificate.epsilon <= 2 * 2**-32 / float(flip * (1 - flip)) * 1.01


def test_signs_follow_the_flip_probability():
    sketch = CountMeanSketch(1.0, m=32, d=1, seed=2)
    n = 40_000
    _, bits = sketch.unpack(sketch.perturb(["word"] * n, rng=0))
    bucket = sketch.filters(["word"], [0])[0]
    flip = float(Fraction(sketch.flip_threshold, 2**32))
    rates = bits.mean(axis=0)
    sd = math.sqrt(flip * (1 - flip) / n)
    assert np.all(np.abs(rates[bucket] - (1 - flip)) < 5 * sd) and np.all(np.abs(rates[~bucket] - flip) < 5 * sd)


def apple_count_mean(sketch, aggregate, candidates):
    """[Apple17]'s estimate from the aggregate: x = d (c y + 1)/2 per entry, summed into row j of M, then
    (m/(m - 1)) ((1/d) sum_l M[l, h_l(s)] - n/m), as a frequency (divided by n)."""
    e = math.exp(sketch.epsilon / 2)
    c = (e + 1) / (e - 1)
    reports, ones = aggregate.statistics["cohort_reports"], aggregate.statistics["bit_counts"]
    signs = 2 * ones - reports[:, None]  # sum of y over the reports of each row
    matrix = sketch.d * (c * signs + reports[:, None]) / 2
    n, m, d = aggregate.n, sketch.m, sketch.d
    buckets = np.array([[np.flatnonzero(sketch.filters([s], [row])[0])[0] for row in range(d)] for s in candidates])
    sums = matrix[np.arange(d)[None, :], buckets].sum(axis=1)
    return (m / (m - 1)) * (sums / d - n / m) / n


def test_least_squares_removes_the_collision_bias_that_the_count_mean_estimate_keeps():
    """With a narrow sketch the candidates collide; over 40 repetitions the least-squares estimate is within
    4 standard errors of the truth for every word, while the count-mean estimate of the same reports is off by
    its collision term for the word sharing buckets with the most frequent one."""
    words = [f"w{i}" for i in range(12)]
    sketch = CountMeanSketch(2.0, m=8, d=6, seed=4, candidates=words)
    truth_p = np.array([0.3, 0.15, 0.1, 0.08, 0.07, 0.06, 0.06, 0.05, 0.04, 0.04, 0.03, 0.02])
    users = np.array(words, dtype=object)[np.random.default_rng(0).choice(12, size=20_000, p=truth_p)]
    truth = sketch.input_domain.truth(users)
    least, apple = [], []
    for repetition in range(40):
        aggregate = sketch.aggregate(sketch.perturb(users, rng=repetition))
        least.append(sketch.estimate(aggregate).values)
        apple.append(apple_count_mean(sketch, aggregate, words))
    least, apple = np.array(least), np.array(apple)
    sd = np.sqrt(sketch.variance(users, n=None))
    assert np.all(np.abs(least.mean(axis=0) - truth) < 4 * sd / math.sqrt(40))
    # the count-mean estimate's expectation given these hash functions: the truth plus the collision term
    collide = np.array([[sum(sketch.filters([a], [row])[0] @ sketch.filters([b], [row])[0] for row in range(6))
                         for b in words] for a in words])
    # (m/(m - 1)) sum over s' != s of f_s' (c(s, s')/d - 1/m); the diagonal term (s' = s) is (1 - 1/m) f_s
    bias = (8 / 7) * ((collide / 6 - 1 / 8) @ truth - (1 - 1 / 8) * truth)
    assert np.allclose(apple.mean(axis=0), truth + bias, atol=4 * apple.std(axis=0).max() / math.sqrt(40))
    assert np.abs(bias).max() > 6 * apple.std(axis=0).max() / math.sqrt(40)  # a bias the repetitions resolve


@pytest.mark.parametrize("arguments, message", [
    ({"epsilon": 0.0}, r"epsilon is 0.0"),
    ({"epsilon": 1e-9}, r"epsilon is 1e-09"),  # a flip of 1/2: the reports would say nothing
    ({"epsilon": 11.0}, r"epsilon is 11.0"),
    ({"m": 1}, r"m is 1; a row needs at least 2 buckets"),
    ({"d": 0}, r"d is 0; it must be an integer in 1..65536"),
])
def test_bad_parameters_are_refused(arguments, message):
    with pytest.raises(ld.ValidationError, match=message):
        CountMeanSketch(**{"epsilon": 1.0, "m": 16, "d": 2, "seed": 1, **arguments})
