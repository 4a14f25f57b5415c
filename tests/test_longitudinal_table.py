"""The memoised pair designed under LIP (family "l-table", docs/math.md §19.8): claims against tables rebuilt in
Fractions from the word counts, many rounds enumerated, the designer against the best one-report design and against
L-OSUE, the sampler and the rounds' variance against simulation."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.designer.longitudinal import design_longitudinal
from lipdesign.mechanisms.longitudinal import LongitudinalUE
from lipdesign.mechanisms.longitudinal_table import LongitudinalTable, on_grid
from lipdesign.testing import check_mechanism
from lipdesign.verification import verify_table

WORD = 2**32
PRIOR = [0.5, 0.3, 0.2]


@pytest.fixture(scope="module")
def one_round():
    return design_longitudinal(PRIOR, 0.5, 1.0)


@pytest.fixture(scope="module")
def thirty_rounds():
    return design_longitudinal(PRIOR, 0.5, 1.0, rounds=30)


def stages(pair):
    """(Q1, Q2) in Fractions from the device numbers: Q2 keeps with keep / 2^32, else draws from the refill."""
    numbers = pair.device_numbers()
    q1 = [[Fraction(c, WORD) for c in row] for row in numbers["permanent_counts"]]
    keep = Fraction(numbers["keep"], WORD)
    refill = [Fraction(c, WORD) for c in numbers["refill_counts"]]
    m = len(refill)
    q2 = [[keep * (z == y) + (1 - keep) * refill[y] for y in range(m)] for z in range(m)]
    return q1, q2


def chained(q1, q2, rounds=1):
    outputs = list(itertools.product(range(len(q2[0])), repeat=rounds))
    return np.array([[sum(q1[x][z] * math.prod(q2[z][y] for y in ys) for z in range(len(q2))) for ys in outputs]
                     for x in range(len(q1))], dtype=object)


@pytest.mark.parametrize("which", ["one_round", "thirty_rounds"])
def test_both_claims_are_the_rebuilt_tables_and_many_rounds_stay_within_the_permanent(which, request):
    pair = request.getfixturevalue(which)
    q1, q2 = stages(pair)
    one = verify_table(chained(q1, q2), ld.LIP(0.5), PRIOR)
    permanent = verify_table(np.array(q1, dtype=object), ld.LIP(1.0), PRIOR)
    assert one.passed and permanent.passed
    assert pair.verify().epsilon == pytest.approx(one.epsilon, abs=1e-12)
    assert pair.permanent_certificate().epsilon == pytest.approx(permanent.epsilon, abs=1e-12)
    for rounds in (2, 3):
        joint = verify_table(chained(q1, q2, rounds), ld.LIP(1.0), PRIOR)
        assert joint.passed and joint.epsilon <= permanent.epsilon + 1e-12


def test_one_round_is_the_best_one_report_design_memoised(one_round):
    """Every epsilon-LIP table is a feasible pair (Q2 the identity), so the one-round optimum is ld.design's at
    epsilon, kept whole, and its unbounded guarantee is epsilon itself (docs/math.md §19.8)."""
    best = ld.design(PRIOR, ld.LIP(0.5), ld.Frequencies(), baselines=False)
    assert one_round.keep == WORD
    assert ld.Frequencies().value(one_round.table, ld.Prior(PRIOR)) == pytest.approx(
        ld.Frequencies().value(best.table, ld.Prior(PRIOR)), rel=1e-5)
    assert one_round.permanent_certificate().epsilon <= 0.5


def test_the_designs_beat_l_osue_at_the_same_budgets(one_round, thirty_rounds):
    """L-OSUE at LDP (0.5, 1.0) meets the same LIP budgets at this prior (LDP implies LIP); the designs' variance
    of one round and of the 30-round average is lower, each at its own objective."""
    osue = LongitudinalUE(0.5, 1.0, 3, variant="osue")
    assert osue.certificate_at(PRIOR).epsilon <= 0.5 and osue.permanent_certificate_at(PRIOR).epsilon <= 1.0
    f = np.array(PRIOR)
    assert one_round.variance(f).sum() < osue.variance(f).sum() / 4
    assert thirty_rounds.rounds_variance(f, 1, 30).sum() < osue.rounds_variance(f, 1, 30).sum() / 4
    grr = ld.mechanisms.LongitudinalGRR(0.5, 1.0, 3)  # the design includes L-GRR's shape at LIP levels: never worse
    assert thirty_rounds.rounds_variance(f, 1, 30).sum() <= grr.rounds_variance(f, 1, 30).sum()
    # and more rounds favour fresh noise over the one-round design's repeated reports
    assert thirty_rounds.rounds_variance(f, 1, 30).sum() < one_round.rounds_variance(f, 1, 30).sum() / 2


def test_the_sampler_realises_the_table_on_both_paths(thirty_rounds):
    pair, n = thirty_rounds, 200_000
    q1, q2 = stages(pair)
    table = chained(q1, q2).astype(float)
    values = np.full(n, 2)
    keys = pair.device_keys(n, rng=1)
    for reports in (pair.perturb(values, rng=2), pair.perturb_memoised(values, keys, rng=3)):
        observed = np.bincount(reports, minlength=pair.m) / n
        assert np.all(np.abs(observed - table[2]) < 5 * np.sqrt(table[2] * (1 - table[2]) / n))
    memo = pair.permanent(values, keys)
    assert np.array_equal(memo, pair.permanent(values, keys))
    row = np.array([float(p) for p in q1[2]])
    assert np.all(np.abs(np.bincount(memo, minlength=pair.m) / n - row) < 5 * np.sqrt(row * (1 - row) / n))


def test_rounds_variance_matches_simulation(thirty_rounds):
    """150 collections of 10 memoised rounds of 2,000 devices: the variance of the rounds' average against
    rounds_variance (chi-square bounds at 150 repetitions), and the estimate unbiased."""
    pair, n, rounds, repetitions = thirty_rounds, 2000, 10, 150
    values = np.random.default_rng(0).choice(3, size=n, p=PRIOR)
    f = np.bincount(values, minlength=3) / n
    averages = []
    for repetition in range(repetitions):
        keys = pair.device_keys(n, rng=500 + repetition)
        averages.append(ld.rounds.average(pair, [pair.perturb_memoised(values, keys, rng=rounds * repetition + r)
                                                 for r in range(rounds)]).values)
    predicted = pair.rounds_variance(f, n, rounds)
    ratio = np.var(averages, axis=0, ddof=1) / predicted
    assert np.all((0.68 < ratio) & (ratio < 1.37)), ratio
    assert np.all(np.abs(np.mean(averages, axis=0) - f) < 5 * np.sqrt(predicted / repetitions))


def test_the_contract_and_memoised_accounting(thirty_rounds):
    assert check_mechanism(thirty_rounds)
    epsilons = thirty_rounds.verified_epsilons()
    joint = ld.compose([thirty_rounds] * 30, memoised=True, notion="LIP")
    assert joint.epsilon <= epsilons["permanent LIP for X"] + 1e-12
    assert ld.compose([thirty_rounds] * 30, memoised=True, notion="LDP").epsilon == epsilons["permanent LDP"]


def test_bad_tables_are_refused(thirty_rounds):
    parameters = thirty_rounds.parameters()
    first = list(parameters["permanent"][0])
    first[0] += 1e-12
    off = dict(parameters, permanent=[first] + parameters["permanent"][1:])
    with pytest.raises(ld.ValidationError, match="multiple of 2\\^-32"):
        LongitudinalTable(**off)
    with pytest.raises(ld.ValidationError, match="refill has 1 entries"):
        LongitudinalTable(**dict(parameters, refill=[1.0]))
    with pytest.raises(ld.ValidationError, match="do not meet their claim"):
        LongitudinalTable(**dict(parameters, keep=2**32))  # the permanent table unmixed exceeds epsilon
    with pytest.raises(ld.ValidationError, match="epsilon is 1.5; one report's"):
        design_longitudinal(PRIOR, 1.5, 1.0)
    assert np.all(on_grid([[0.1, 0.2, 0.7]]) * WORD % 1 == 0) and on_grid([[0.1, 0.2, 0.7]]).sum() == 1.0


def test_a_draw_from_word_counts_decides_at_the_cumulative_counts():
    """docs/runtime.md §15: output j for c_0 + ... + c_(j-1) <= u < c_0 + ... + c_j; an output with no words is never
    drawn. Constructed words at every boundary, which random words almost never reach."""
    from lipdesign.mechanisms.longitudinal_table import _draw

    counts = np.array([[5, 0, WORD - 5]])
    words = np.array([0, 4, 5, WORD - 1], dtype=np.uint32)
    assert _draw(counts, np.zeros(4, dtype=np.int64), words).tolist() == [0, 0, 2, 2]


def test_lip_over_a_prior_set_is_its_worst_vertex(thirty_rounds):
    """Both claims over a TV ball of priors: the worst of its vertices, each verified on the rebuilt tables."""
    q1, q2 = stages(thirty_rounds)
    prior_set = ld.PriorSet.tv_ball(PRIOR, 0.1)
    for certificate, table in ((thirty_rounds.certificate_at(prior_set), chained(q1, q2)),
                               (thirty_rounds.permanent_certificate_at(prior_set), np.array(q1, dtype=object))):
        worst = max(verify_table(table, ld.LIP(30.0), vertex).epsilon for vertex in prior_set.vertices)
        assert certificate.epsilon == pytest.approx(worst, abs=1e-12)
    assert thirty_rounds.certificate_at(prior_set).epsilon > thirty_rounds.verify().epsilon  # the ball holds worse
