"""The Hadamard count-mean sketch (docs/math.md §16.4): epsilon from the realised flip, the closed-form variance
against simulation, about n c^2 without collisions, and bad input."""

import math
from fractions import Fraction

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.mechanisms import HadamardCountMeanSketch


@pytest.mark.parametrize("epsilon", [0.25, 1.0, 4.0, 10.0])
def test_epsilon_is_the_flip_ratio_at_the_realised_threshold(epsilon):
    sketch = HadamardCountMeanSketch(epsilon, m=16, d=2, seed=1)
    flip = Fraction(math.ceil(2**32 / (1 + math.exp(epsilon))), 2**32)  # the recipe, recomputed here
    certificate = sketch.verify()
    assert certificate.passed and certificate.exact
    assert math.isclose(certificate.epsilon, math.log((1 - flip) / flip), rel_tol=1e-12)
    assert certificate.epsilon <= epsilon


def test_unbiased_with_the_closed_form_variance():
    """100 repetitions over one population: the mean estimate within 4 standard errors of the truth, the spread
    within 4 of its own standard errors (a sample sd of R draws is off by about 1/sqrt(2 (R - 1)) relatively) of
    ``variance`` (given the users' values), and the estimate's own errors near it."""
    words = [f"w{i}" for i in range(10)]
    sketch = HadamardCountMeanSketch(1.0, m=16, d=4, seed=2, candidates=words)
    weights = 1 / np.arange(1, 11)
    users = np.array(words, dtype=object)[np.random.default_rng(0).choice(10, size=20_000, p=weights / weights.sum())]
    truth = sketch.input_domain.truth(users)
    estimates, errors = [], []
    for repetition in range(100):
        estimate = sketch.estimate(sketch.perturb(users, rng=repetition))
        estimates.append(estimate.values)
        errors.append(estimate.standard_errors)
    estimates = np.array(estimates)
    exact = np.sqrt(sketch.variance(users, n=None))
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < 4 * exact / math.sqrt(100))
    assert np.allclose(estimates.std(axis=0, ddof=1), exact, rtol=4 / math.sqrt(2 * 99))
    assert np.allclose(np.mean(errors, axis=0), exact, rtol=0.05)


def test_without_collisions_the_variance_is_n_c_squared_less_the_count():
    words = ["a", "b"]
    sketch = HadamardCountMeanSketch(2.0, m=1024, d=1, seed=3, candidates=words)
    rows = sketch.buckets(words, [0, 0])
    assert rows[0] != rows[1]  # no collision in the one row
    users = ["a"] * 300 + ["b"] * 700
    c = float(1 / (1 - 2 * sketch.flip))
    expected = (1000 * c ** 2 - np.array([300, 700])) / 1000 ** 2
    assert np.allclose(sketch.variance(users, n=None), expected, rtol=1e-10)


@pytest.mark.parametrize("arguments, message", [
    ({"m": 12}, r"m is 12; the Hadamard sketch's width must be a power of 2"),
    ({"m": 1}, r"m is 1; it must be an integer in 2..65536"),
    ({"d": 0}, r"d is 0; it must be an integer in 1..65536"),
    ({"epsilon": 0.0}, r"epsilon is 0.0"),
])
def test_bad_parameters_are_refused(arguments, message):
    with pytest.raises(ld.ValidationError, match=message):
        HadamardCountMeanSketch(**{"epsilon": 1.0, "m": 16, "d": 2, "seed": 1, **arguments})


def test_bad_reports_are_refused():
    sketch = HadamardCountMeanSketch(1.0, m=16, d=2, seed=1)
    reports = sketch.perturb(["a", "b"], rng=0)
    bad = reports.copy()
    bad[1, 4] = 2
    with pytest.raises(ld.ValidationError, match=r"reports\[1\] has bit 2; it must be below 2"):
        sketch.aggregate(bad)
    bad = reports.copy()
    bad[0, 2] = 16
    with pytest.raises(ld.ValidationError, match=r"reports\[0\] has coefficient 16; it must be below 16"):
        sketch.aggregate(bad)
