"""Exact verification with the float64 interval prefilter (docs/math.md §3.7): the same ratio, place and verdict as
rational arithmetic over the whole table, sound enclosures, and the size cap."""

import math
from fractions import Fraction

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.errors import ValidationError
from lipdesign.mechanisms import TableMechanism
from lipdesign.verification import exp_bounds, log_upper, tightest, verify_table
from lipdesign.verification.exact import (
    MAX_VERIFY_ENTRIES,
    UNIT,
    _enclosure,
    _gamma,
    _ratio_bounds,
    _rational_tightest,
)


def random_table(rng, k, n_out, style):
    """Rows from a Dirichlet; "rounded" ones on a coarse grid (ties within and across columns, zero entries),
    "tiny" ones with subnormal and 2^-600 entries (outside the prefilter's error model)."""
    table = rng.dirichlet(np.full(n_out, 0.7), size=k)
    if style == "rounded":
        table = np.round(table * 4) / 4
        table[table.sum(axis=1) == 0, 0] = 1.0
        table = table / table.sum(axis=1, keepdims=True)
    elif style == "tiny":
        table[:, 0] = rng.choice([5e-324, 2.0**-600, 1e-310, 0.0], size=k)
        table[table.sum(axis=1) == 0, 0] = 1.0
    return table


def notions(rng, k):
    conditional = rng.dirichlet(np.ones(k), size=3)
    conditional[0] = np.round(conditional[0], 1)  # zero weights and ties among secret masses
    conditional[0] /= conditional[0].sum()
    secret = ld.SecretModel.from_conditional(conditional)
    vertices = rng.dirichlet(np.ones(k), size=3)
    center = np.full(k, 1.0 / k)
    return [ld.LDP(1.0), ld.LIP(1.0), ld.WorstCaseLIP(1.0), ld.LIP(1.0, secret=secret),
            ld.WorstCaseLIP(1.0, secret=secret),
            ld.LIP(1.0, prior_set=ld.PriorSet.finite([center, *vertices])),
            ld.LIP(1.0, prior_set=ld.PriorSet.polytope([center, *vertices])),
            ld.LIP(1.0, prior_set=ld.PriorSet.box(center * 0.5, center * 1.5)),
            ld.LIP(1.0, prior_set=ld.PriorSet.tv_ball(center, 0.1))]


@pytest.mark.parametrize("style", ["plain", "rounded", "tiny"])
def test_prefiltered_equals_rational_over_every_column(style):
    """Ratio (as a Fraction), place and verdict equal the reference path's: every column in rational arithmetic,
    the corners of the simplex listed as priors (WC-LIP)."""
    rng = np.random.default_rng({"plain": 1, "rounded": 2, "tiny": 3}[style])
    compared = 0
    for _ in range(25):
        k, n_out = int(rng.integers(2, 6)), int(rng.integers(1, 7))
        table = random_table(rng, k, n_out, style)
        prior = ld.Prior(np.full(k, 1.0 / k)) if rng.random() < 0.3 else ld.Prior(rng.dirichlet(np.ones(k)))
        for notion in notions(rng, k):
            expected = _rational_tightest(table, notion, prior)
            assert tightest(table, notion, prior, exact=True) == expected, (notion, table.tolist())
            assert isinstance(expected[0], (Fraction, int)) or expected[0] == math.inf
            compared += 1
    assert compared == 25 * 9


def brute_column_ratios(table, notion, prior):
    """The largest ratio of every column, in Fractions, written out from docs/math.md §3.1 (listed priors: the
    design prior, the vertices of a finite set or polytope, the corners of the simplex for WC-LIP)."""
    rows = [[Fraction(v) for v in row] for row in np.asarray(table).tolist()]
    rows = [[v / sum(row) for v in row] for row in rows]
    k = len(rows)
    if isinstance(notion, ld.LDP):
        priors, secrets = None, None
    else:
        if isinstance(notion, ld.WorstCaseLIP):
            listed = np.eye(k)
        elif notion.prior_set is None:
            listed = [prior.probabilities]
        else:
            listed = notion.prior_set.vertices
        priors = [[Fraction(v) / sum(map(Fraction, row)) for v in row] for row in np.asarray(listed).tolist()]
        conditional = np.eye(k) if notion.secret is None else notion.secret.conditional
        secrets = [[Fraction(v) / sum(map(Fraction, row)) for v in row] for row in np.asarray(conditional).tolist()]
    ratios = []
    for column in zip(*rows):
        if not any(column):
            ratios.append(None)
        elif priors is None:
            ratios.append(math.inf if min(column) == 0 else max(column) / min(column))
        else:
            masses = [sum(x * q for x, q in zip(p, column)) for p in priors]
            secret_masses = [sum(x * q for x, q in zip(t, column)) for t in secrets]
            pairs = [(s, m) for s in secret_masses for m in masses] + [(m, s) for s in secret_masses for m in masses]
            ratios.append(max(math.inf if b == 0 and a > 0 else (0 if b == 0 else a / b) for a, b in pairs))
    return ratios


def test_enclosures_contain_the_exact_column_ratio():
    """lower <= the exact largest ratio of each column <= upper (brute force), and the interval is narrow."""
    rng = np.random.default_rng(4)
    checked = 0
    for _ in range(30):
        k, n_out = int(rng.integers(2, 7)), int(rng.integers(2, 7))
        table = random_table(rng, k, n_out, "plain")
        prior = ld.Prior(rng.dirichlet(np.ones(k)))
        for notion in notions(rng, k)[:7]:  # the greedy kinds (box, TV ball) are left to rational arithmetic
            lower, upper = _ratio_bounds(table, notion, prior)
            for y, exact in enumerate(brute_column_ratios(table, notion, prior)):
                if exact is None:
                    continue
                assert Fraction(lower[y]) <= exact <= Fraction(upper[y]) or lower[y] == exact == math.inf
                assert upper[y] <= lower[y] * (1 + 1e-12)  # narrow: a prefilter that keeps every column fails
                checked += 1
    assert checked > 500


def test_tiny_entries_leave_their_column_to_rational_arithmetic():
    table = np.array([[0.5, 0.5 - 2.0**-600, 2.0**-600], [0.25, 0.75, 0.0]])
    lower, upper = _ratio_bounds(table, ld.LDP(1.0), None)
    assert lower[2] == 0 and upper[2] == math.inf and np.isfinite(upper[:2]).all()
    assert tightest(table, ld.LDP(1.0), None, exact=True) == (math.inf, {"output": 2, "inputs": [0, 1]})


@pytest.mark.parametrize("count", [2, 3, 10, 1000, 10**6])
def test_enclosure_covers_gamma_after_its_own_rounding(count):
    rng = np.random.default_rng(count)
    values = np.concatenate([rng.uniform(0.5, 4.0, 200), 2.0 ** rng.integers(-900, 900, 50).astype(float)])
    lower, upper = _enclosure(values, count)
    gamma = Fraction(count) * Fraction(UNIT) / (1 - Fraction(count) * Fraction(UNIT))
    assert float(gamma) == pytest.approx(_gamma(count), rel=1e-15)
    for value, low, high in zip(values.tolist(), lower.tolist(), upper.tolist()):
        assert Fraction(low) <= Fraction(value) * (1 - gamma) and Fraction(high) >= Fraction(value) * (1 + gamma)
    assert _enclosure(np.array([math.inf]), count) == (math.inf, math.inf)


def test_grr_ties_report_the_first_place_and_the_exact_ratio():
    """Every column ties: the worst is output 0, inputs (0, 1), at exactly p / q (equal row multisets)."""
    for k in (3, 40, 160):
        e = math.exp(1.0)
        p, q = e / (e + k - 1), 1.0 / (e + k - 1)
        table = np.full((k, k), q)
        np.fill_diagonal(table, p)
        ratio, worst = tightest(table, ld.LDP(1.0), None, exact=True)
        assert ratio == Fraction(p) / Fraction(q) and worst == {"output": 0, "inputs": [0, 1]}
        ratio, worst = tightest(table, ld.WorstCaseLIP(1.0), ld.Prior(np.full(k, 1.0 / k)), exact=True)
        assert ratio == Fraction(p) / Fraction(q)
        assert worst == {"output": 0, "secret": 0, "side": "upper", "prior": np.eye(k)[1].tolist()}


def boundary_table(epsilon):
    """Rows (a, 1 - a) and (1/4, 3/4), row sums exactly 1, with 4a the largest double ratio within the rational
    lower end of e^eps: column 0 has ratio 4a, column 1 a smaller one."""
    bound = exp_bounds(epsilon)[0]
    a = float(bound / 4)
    while 4 * Fraction(a) > bound:
        a = math.nextafter(a, 0.0)
    while 4 * Fraction(math.nextafter(a, 1.0)) <= bound:
        a = math.nextafter(a, 1.0)
    return a, lambda value: np.array([[value, 1.0 - value], [0.25, 0.75]])


@pytest.mark.parametrize("epsilon", [0.8, 1.0, 1.05])
def test_the_largest_ratio_within_the_bound_passes_and_one_ulp_more_fails(epsilon):
    a, table = boundary_table(epsilon)
    above = math.nextafter(a, 1.0)
    for notion, prior in ((ld.LDP(epsilon), None), (ld.WorstCaseLIP(epsilon), ld.Prior([0.5, 0.5]))):
        at, over = verify_table(table(a), notion, prior), verify_table(table(above), notion, prior)
        assert at.passed and not over.passed
        assert at.epsilon == log_upper(4 * Fraction(a)) and over.epsilon == log_upper(4 * Fraction(above))
        assert at.epsilon >= epsilon - 1e-15  # tight: the table sits at the bound
        assert tightest(table(above), notion, prior, exact=True)[0] == 4 * Fraction(above)


def test_lip_at_the_bound_agrees_with_the_rational_path():
    """A table whose LIP ratio sits within a few ulps of the bound: the prefilter cannot decide, the exact step does."""
    epsilon = 0.6
    e, p = math.exp(epsilon), 0.2
    rare, common = 1.0 / (1.0 + e), (1.0 - p * e) / ((1.0 + e) * (1.0 - p))  # the exact-bound channel (§6)
    prior = ld.Prior([p, 1 - p])
    for step in range(-3, 4):
        shifted = rare
        for _ in range(abs(step)):
            shifted = math.nextafter(shifted, 1.0 if step > 0 else 0.0)
        table = np.array([[1.0 - shifted, shifted], [common, 1.0 - common]])
        expected, _ = _rational_tightest(table, ld.LIP(epsilon), prior)
        certificate = verify_table(table, ld.LIP(epsilon), prior)
        assert certificate.passed == (expected <= exp_bounds(epsilon)[0])
        assert certificate.epsilon == log_upper(expected)


def test_size_cap_names_the_size_and_the_cap():
    n_out = MAX_VERIFY_ENTRIES // 2 + 1
    table = np.full((2, n_out), 1.0 / n_out)
    message = f"table has 2 x {n_out} = {2 * n_out} entries; exact verification takes at most MAX_VERIFY_ENTRIES"
    with pytest.raises(ValidationError, match=message):
        verify_table(table, ld.LDP(1.0))
    with pytest.raises(ValidationError, match="MAX_VERIFY_ENTRIES"):
        TableMechanism(table, ld.LDP(1.0), ld.Prior([0.5, 0.5]))
    at_cap = np.full((2, MAX_VERIFY_ENTRIES // 2), 2.0 / MAX_VERIFY_ENTRIES)
    assert verify_table(at_cap, ld.LDP(1.0)).epsilon == 0.0
