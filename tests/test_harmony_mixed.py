"""HarmonyMixed (docs/math.md §9, mixed attributes): exact LDP by enumeration, unbiasedness and variance against
closed forms computed here, export, bad input."""

import json
import math
from fractions import Fraction
from itertools import product

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.errors import ValidationError
from lipdesign.mechanisms import HarmonyMixed

ATTRIBUTES = ["numeric", 3, "numeric", 4]


def population(n, rng):
    return np.column_stack([np.clip(rng.normal(0.4, 0.3, n), -1, 1), rng.choice(3, n, p=[0.6, 0.3, 0.1]),
                            rng.uniform(-1, 0.2, n), rng.choice(4, n, p=[0.1, 0.2, 0.3, 0.4])])


def gram(mechanism, j):
    signs = mechanism.categorical[j].signs.astype(float)
    return signs.T @ signs / signs.shape[0]


def output_distribution(mechanism, x, exp_epsilon):
    """Pr[(attribute, row, sign) | x] by direct enumeration, in exact arithmetic with e^eps = exp_epsilon."""
    d = mechanism.d
    distribution = {}
    for j, kind in enumerate(mechanism.attributes):
        rows = range(mechanism.categorical[j].m) if kind != "numeric" else [0]
        for s in rows:
            t = Fraction(x[j]) if kind == "numeric" else Fraction(int(mechanism.categorical[j].signs[s, x[j]]))
            plus = Fraction(1, 2) + t * (exp_epsilon - 1) / (2 * (exp_epsilon + 1))
            weight = Fraction(1, d * len(rows))
            distribution[(j, s, 1)] = weight * plus
            distribution[(j, s, -1)] = weight * (1 - plus)
    return distribution


def test_exact_ldp_by_enumeration_of_every_output():
    mechanism = HarmonyMixed(1.0, ["numeric", 3], m=4, seed=11)
    exp_epsilon = Fraction(5, 2)  # a rational stand-in for e^eps: the ratio must come out as exactly this
    inputs = [(t, v) for t in (-1, 1) for v in range(3)]
    tables = [output_distribution(mechanism, x, exp_epsilon) for x in inputs]
    assert all(sum(table.values()) == 1 for table in tables)
    worst = max(a[y] / b[y] for a, b in product(tables, tables) for y in a)
    assert worst == exp_epsilon
    certificate = mechanism.verify()
    assert certificate.passed and certificate.exact
    assert 1.0 - 1e-9 <= certificate.epsilon <= 1.0


def test_output_frequencies_match_the_enumerated_distribution():
    mechanism = HarmonyMixed(1.5, ["numeric", 3], m=4, seed=2)
    x = (0.3, 2)
    distribution = output_distribution(mechanism, x, Fraction(math.exp(1.5)))
    reports = mechanism.perturb(np.tile(x, (200_000, 1)), rng=5)
    keys = list(distribution)
    observed = np.array([np.sum((reports["attribute"] == j) & (reports["row"] == s) & (reports["sign"] == b))
                         for j, s, b in keys])
    expected = np.array([float(distribution[key]) for key in keys]) * reports.size
    from scipy import stats

    assert stats.chisquare(observed, expected).pvalue > 1e-6


@pytest.mark.parametrize("method", ["unbiased", "projection"])
def test_estimates_are_unbiased_within_five_sigma(method, rng):
    n, epsilon = 300_000, 2.0
    values = population(n, rng)
    mechanism = HarmonyMixed(epsilon, ATTRIBUTES, m=16, seed=3)
    estimate = mechanism.estimate(mechanism.perturb(values, rng=rng), method=method)
    c = (math.exp(epsilon) + 1) / (math.exp(epsilon) - 1)
    d = len(ATTRIBUTES)
    for j, kind in enumerate(ATTRIBUTES):
        if kind == "numeric":
            expected = values[:, j].mean()
            variance = (d * c * c - np.mean(values[:, j] ** 2)) / n
        else:
            frequencies = np.bincount(values[:, j].astype(int), minlength=kind) / n
            if method == "projection":  # mean G f: the paper's cross-talk
                expected = gram(mechanism, j) @ frequencies
                variance = (d * c * c - frequencies @ gram(mechanism, j) ** 2) / n
            else:
                expected = frequencies
                variance = (d * c * c * np.diag(np.linalg.inv(gram(mechanism, j))) - frequencies) / n
        assert np.allclose(mechanism.variance(values, method=method)[j], variance, rtol=1e-9)
        assert np.allclose(mechanism.expected_estimate(values, method=method)[j], expected, rtol=1e-9)
        part = estimate.attribute(j)  # the mean (a float) or the frequencies of attribute j
        assert isinstance(part, float) == (kind == "numeric")
        assert np.all(np.abs(part - expected) <= 5 * np.sqrt(variance)), (j, part, expected)
    if method == "projection":  # at m = 16 the cross-talk is far above the sampling error: the test can fail
        f = np.bincount(values[:, 3].astype(int), minlength=4) / n
        assert np.max(np.abs(estimate.attribute(3) - f) / np.sqrt(mechanism.variance(values, method=method)[3])) > 5


@pytest.mark.parametrize("method", ["unbiased", "projection"])
def test_variance_over_repetitions_matches_the_closed_form(method):
    rng = np.random.default_rng(7)
    values = population(2_000, rng)
    mechanism = HarmonyMixed(1.0, ATTRIBUTES, m=64, seed=4)
    repetitions = 400
    runs = np.array([np.hstack(mechanism.estimate(mechanism.perturb(values, rng=rng), method=method))
                     for _ in range(repetitions)])
    theory = np.hstack(mechanism.variance(values, method=method))
    ratio = runs.var(axis=0, ddof=1) / theory
    # each ratio is a sample variance over theory: mean 1, sd about sqrt(2 / (R - 1)) = 0.071 (near-normal terms)
    assert np.all(np.abs(ratio - 1) < 5 * math.sqrt(2 / (repetitions - 1))), ratio


def test_parameters_and_json_round_trip(tmp_path):
    mechanism = HarmonyMixed(0.5, ATTRIBUTES, m=32, seed=9)
    assert HarmonyMixed(**mechanism.parameters()) == mechanism
    path = tmp_path / "mixed.json"
    mechanism.to_json(path)
    loaded = ld.load(path)
    assert loaded == mechanism
    assert np.array_equal(loaded.categorical[1].signs, mechanism.categorical[1].signs)
    document = json.loads(path.read_text())
    assert document["format"] == "lipdesign.mechanism" and document["format_version"] == 2
    assert document["guarantee"]["verified_epsilons"]["claimed"] <= 0.5
    document["guarantee"]["verified_epsilons"]["claimed"] = 0.4
    path.write_text(json.dumps(document))
    with pytest.raises(ld.VerificationError, match="understates"):
        ld.load(path)


def test_the_same_seed_gives_the_same_projections_and_different_attributes_differ():
    a, b = HarmonyMixed(1, [8, 8], m=16, seed=1), HarmonyMixed(1, [8, 8], m=16, seed=1)
    assert np.array_equal(a.categorical[0].signs, b.categorical[0].signs)
    assert not np.array_equal(a.categorical[0].signs, a.categorical[1].signs)


@pytest.mark.parametrize("attributes, message", [
    ("numeric", "attributes"), ([], "empty"), (["numbers"], r"attributes\[0\]"), ([1], r"attributes\[0\]"),
    ([2.5], r"attributes\[0\]"), ([True], r"attributes\[0\]"),
])
def test_bad_attributes(attributes, message):
    with pytest.raises(ValidationError, match=message):
        HarmonyMixed(1.0, attributes)


@pytest.mark.parametrize("values, message", [
    ([[0.5, 1]], r"shape \(1, 2\)"),
    ([[1.5, 1, 0, 0]], r"values\[:, 0\]"),
    ([[0.5, 3, 0, 0]], r"values\[:, 1\]"),
    ([[0.5, 1.5, 0, 0]], r"values\[:, 1\]"),
    ([[0.5, 1, np.nan, 0]], "finite"),
])
def test_bad_values(values, message):
    with pytest.raises(ValidationError, match=message):
        HarmonyMixed(1.0, ATTRIBUTES, seed=1).perturb(values, rng=1)


def test_bad_reports():
    mechanism = HarmonyMixed(1.0, ATTRIBUTES, m=8, seed=1)
    reports = mechanism.perturb(population(50, np.random.default_rng(1)), rng=1)
    with pytest.raises(ValidationError, match="structured"):
        mechanism.estimate(np.zeros(5))
    broken = reports.copy()
    broken["sign"][0] = 0
    with pytest.raises(ValidationError, match="sign"):
        mechanism.estimate(broken)
    broken = reports.copy()
    broken["attribute"][0] = 4
    with pytest.raises(ValidationError, match="attribute"):
        mechanism.estimate(broken)
    broken = reports.copy()
    numeric = np.flatnonzero(broken["attribute"] == 0)[0]
    broken["row"][numeric] = 1
    with pytest.raises(ValidationError, match="row"):
        mechanism.estimate(broken)
