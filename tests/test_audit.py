"""The statistical audit (docs/math.md §14): sound mechanisms pass, broken ones are caught, the bounds are right."""

import json
import math
import subprocess
import sys
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from helpers import lipdesign
from scipy import stats

import lipdesign as ld
from lipdesign.auditor import clopper_pearson, downward, empirical_epsilon, log_lower
from lipdesign.mechanisms import GRR, OUE, families, family_class
from lipdesign.mechanisms.bit_reports import unary_reports
from lipdesign.mechanisms.rr import randomized_response


class LieMayEqualTheTruth(GRR):
    """GRR with the bug of docs/math.md §8.7: it keeps the truth with GRR's keep probability p, and otherwise
    draws the lie uniformly from ALL k values, so the truth comes out with p + (1 - p)/k."""

    def _perturb(self, values, rng, user_ids):
        keep = rng.random(values.shape) < self.p
        return np.where(keep, values, rng.integers(0, self.k, size=values.shape))


class LouderOUE(OUE):
    """OUE that claims eps but flips the other bits with 1/(e^(1.5 eps) + 1), the probability of 1.5 eps."""

    def _perturb(self, values, rng, user_ids):
        return unary_reports(values, self.k, self.p, 1.0 / (math.exp(1.5 * self.epsilon) + 1.0), rng, "OUE")


@pytest.mark.parametrize("family", families())
def test_every_family_example_passes_at_99_percent(family):
    mechanism = family_class(family).example()
    result = ld.audit(mechanism, reports=100_000, rng=11)
    assert result.passed, result.summary()
    assert result.empirical_epsilon <= result.claimed_epsilon == mechanism.guarantee.epsilon
    assert result.distribution_threshold == pytest.approx(0.005) and result.p_value >= 0.005
    # the events are the informative ones: every table ratio above 1, each bounded from counts of 100000 reports
    assert all(event["table_epsilon"] > 0 for event in result.events)
    assert all(sum(event["hits"]) > 0 for event in result.events)


@pytest.mark.parametrize("notion", [ld.LIP(1.0), ld.LDP(1.0)], ids=["LIP", "LDP"])
def test_a_designed_table_passes_and_its_events_are_the_tightest(notion):
    mechanism = ld.design(ld.Prior([0.2, 0.3, 0.5]), notion)
    result = ld.audit(mechanism, reports=100_000, rng=5)
    assert result.passed, result.summary()
    # the first event is attained where exact verification says the table is tight (the claim, up to the repair)
    assert result.events[0]["table_epsilon"] == pytest.approx(mechanism.verify().epsilon, abs=1e-6)
    # LIP compares a value with the prior population, LDP two values
    names = {result.events[0]["numerator"], result.events[0]["denominator"]}
    assert ("prior" in names) == (notion.kind == "LIP")


def test_grr_events_have_the_closed_form_ratio_and_a_bound_close_below_it():
    mechanism = GRR(1.0, 6)
    result = ld.audit(mechanism, reports=200_000, rng=2)
    event = result.events[0]
    assert event["class"] in ("y=0", "y=1")
    # the table's ratio is keep / lie = e^eps (1 - 1e-10) (docs/math.md §8.2)
    assert event["table_epsilon"] == pytest.approx(math.log(mechanism.p / mechanism.q), abs=1e-12)
    assert event["table_probabilities"] == pytest.approx([math.e / (math.e + 5), 1 / (math.e + 5)], rel=1e-9)
    # at 200000 reports a side the lower bound is within 0.06 of the truth (its width is about 3 sd of log p1/p2)
    assert 0.94 < result.empirical_epsilon <= 1.0


def test_the_lie_that_may_equal_the_truth_is_caught():
    broken = LieMayEqualTheTruth(1.0, 6)
    result = ld.audit(broken, reports=100_000, rng=1)
    assert not result.passed and not result.epsilon_passed and not result.distribution_passed
    # what it really does: Pr[y = x] = p + (1 - p)/6 against (1 - p)/6, so eps = log(1 + 6p/(1 - p)) = 1.45
    p = broken.p
    assert result.empirical_epsilon > 1.0
    assert result.empirical_epsilon < math.log(1 + 6 * p / (1 - p)) < 1.46
    assert result.p_value < 1e-12
    assert result.summary().startswith("FAIL")


def test_a_mechanism_sampling_at_a_larger_epsilon_than_it_claims_is_caught():
    result = ld.audit(LouderOUE(1.0, 5), reports=100_000, rng=4)
    assert not result.passed and not result.epsilon_passed
    # its true ratio on bits (1, 0) is (1 - q') / q' = e^1.5
    assert 1.0 < result.empirical_epsilon <= 1.5


def test_a_uniform_lie_in_a_designed_table_is_caught_by_the_distribution_test():
    mechanism = ld.design(ld.Prior([0.2, 0.3, 0.5]), ld.LIP(1.0))

    class Uniform(type(mechanism)):
        def _perturb(self, values, rng, user_ids):
            return randomized_response(values % self.table.shape[1], self.table.shape[1], 0.0, rng)

    broken = Uniform(mechanism.table, mechanism.notion, mechanism.prior)
    result = ld.audit(broken, reports=50_000, rng=3)
    assert not result.distribution_passed and result.p_value < 1e-12
    assert result.epsilon_passed  # a uniform output leaks nothing: only the distribution test sees it


@pytest.mark.parametrize(("hits", "n"), [(0, 50), (50, 50), (7, 40), (1234, 10_000)])
def test_clopper_pearson_against_the_binomial_tails(hits, n):
    alpha = 0.01
    lower, upper = (float(bound) for bound in clopper_pearson(hits, n, alpha))
    # closed forms at the ends (the "rule of three" family): 1 - alpha^(1/n) and alpha^(1/n)
    if hits == 0:
        assert lower == 0 and upper == pytest.approx(1 - alpha ** (1 / n), rel=1e-12)
    if hits == n:
        assert upper == 1 and lower == pytest.approx(alpha ** (1 / n), rel=1e-12)
    # the defining tails, computed by scipy's binomial distribution instead of the beta quantile
    if hits > 0:
        assert stats.binom.sf(hits - 1, n, lower) == pytest.approx(alpha, rel=1e-9)
    if hits < n:
        assert stats.binom.cdf(hits, n, upper) == pytest.approx(alpha, rel=1e-9)
    assert lower < hits / n < upper or hits in (0, n)


def test_the_empirical_bound_is_the_log_of_the_bounds_rounded_down():
    alpha = 0.001
    bound = empirical_epsilon(7000, 2600, 20_000, 20_000, alpha)
    lower = stats.beta.ppf(alpha, 7000, 20_000 - 7000 + 1)
    upper = stats.beta.ppf(1 - alpha, 2601, 20_000 - 2600)
    assert bound <= math.log(lower / upper) and bound == pytest.approx(math.log(lower / upper), abs=1e-8)
    getcontext().prec = 50
    for ratio in (Fraction(1), Fraction(3, 2), Fraction(1, 3), Fraction(10**6 + 1, 10**6), Fraction(7, 10**9)):
        exact = (Decimal(ratio.numerator) / Decimal(ratio.denominator)).ln()
        assert Decimal(log_lower(ratio)) <= exact
        assert float(exact) - log_lower(ratio) < 1e-14 * max(1, abs(float(exact)))
    assert log_lower(Fraction(0)) == -math.inf


def test_downward_never_prints_above_the_value():
    for value in (0.973658986897, 1.0, 2.5e-7, -0.0192183, 123.456789):
        text = downward(value, 4)
        assert float(text) <= value and value - float(text) < 1e-3 * abs(value)
    assert downward(0.97365898, 4) == "0.9736"


def test_progress_lines_show_a_bar():
    lines = []
    ld.audit(GRR(1.0, 4), reports=3 * 2**16, rng=0, progress=lines.append)
    assert lines[-1].endswith("(393216 of 393216 reports)") and "[##########] 100 %" in lines[-1]
    assert 4 <= len(lines) <= 11 and all(line.startswith("audit grr: [") for line in lines)


def test_bad_input_names_the_field():
    for options, field in (({"confidence": 1.0}, "confidence"), ({"confidence": "0.9"}, "confidence"),
                           ({"reports": 0}, "reports"), ({"rng": -1}, "rng")):
        with pytest.raises(ld.ValidationError, match=field):
            ld.audit(GRR(1.0, 4), **options)

    class Custom(ld.Mechanism):
        family = "custom-audit-test"

    with pytest.raises(ld.ValidationError, match="custom-audit-test.*the audit knows the output classes"):
        ld.audit(Custom())


def test_the_result_is_json():
    result = ld.audit(OUE(1.0, 4), reports=20_000, rng=1)
    document = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert document["passed"] is result.passed and document["reports"] == 20_000
    assert document["populations"] == ["x=0", "x=1"] and len(document["events"]) == len(result.events)


def test_cli_exit_codes(tmp_path):
    path = tmp_path / "grr.json"
    assert lipdesign("mechanism", "grr", "--epsilon", 1, "-p", "k=5", "-o", path, cwd=tmp_path).returncode == 0
    result = lipdesign("audit", path, "--reports", 50_000, "--seed", 3, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("PASS: audit of grr"), result.stdout + result.stderr
    assert "100 %" in result.stderr
    result = lipdesign("audit", path, "--reports", 50_000, "--seed", 3, "--quiet", "--json", cwd=tmp_path)
    assert result.returncode == 0 and json.loads(result.stdout)["passed"] is True and result.stderr == ""
    for bad in (("--confidence", 1.5), ("--reports", 0)):
        result = lipdesign("audit", path, *bad, cwd=tmp_path)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert bad[0].strip("-") in result.stderr
    result = lipdesign("audit", tmp_path / "missing.json", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.startswith("lipdesign: error:")
    # a broken plugin family, registered and saved by a user's program, then audited by the command: exit 1
    program = ("import sys, numpy as np\n"
               "from lipdesign.mechanisms import GRR, register\n"
               "from lipdesign.cli import main\n"
               "@register\n"
               "class Broken(GRR):\n"
               "    family = 'broken-grr'\n"
               "    def _perturb(self, values, rng, user_ids):\n"
               "        keep = rng.random(values.shape) < self.p\n"
               "        return np.where(keep, values, rng.integers(0, self.k, size=values.shape))\n"
               "Broken(1.0, 5).to_json('broken.json')\n"
               "sys.exit(main(['audit', 'broken.json', '--reports', '50000', '--seed', '1', '-q']))\n")
    result = subprocess.run([sys.executable, "-c", program], check=False, cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 1 and result.stdout.startswith("FAIL: audit of broken-grr"), result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("family", families())
def test_slow_every_family_passes_a_large_audit(family):
    result = ld.audit(family_class(family).example(), reports=2_000_000, rng=7)
    assert result.passed, result.summary()
    # with 2 million reports a side the bound comes within 10 % of the table's epsilon at the first event
    assert result.empirical_epsilon > 0.9 * result.events[0]["table_epsilon"]


@pytest.mark.slow
def test_slow_a_sound_mechanism_fails_at_most_as_often_as_the_confidence_allows():
    failures = sum(not ld.audit(GRR(1.0, 4), reports=20_000, confidence=0.9, rng=seed).passed for seed in range(60))
    # at most 10 % of the audits may fail; P(more than 14 of 60 | 10 %) < 1e-3
    assert failures <= 14


@pytest.mark.slow
def test_slow_a_small_excess_is_caught_with_many_reports():
    class Slightly(OUE):
        def _perturb(self, values, rng, user_ids):
            return unary_reports(values, self.k, self.p, 1.0 / (math.exp(1.1 * self.epsilon) + 1.0), rng, "OUE")

    result = ld.audit(Slightly(1.0, 4), reports=2_000_000, rng=9)
    assert not result.passed and 1.0 < result.empirical_epsilon <= 1.1


@pytest.mark.parametrize("family", ["rr", "unary", "hashing"])
def test_designs_with_integer_labels_are_audited_through_their_labels(family):
    """Integer labels other than the indices are read as labels, so the audit passes its inputs as labels (it
    refused these designs before, found in review)."""
    mechanism = ld.design(ld.Prior([0.2, 0.3, 0.5], labels=[10, 20, 30]), ld.LIP(1.0), family=family)
    result = ld.audit(mechanism, reports=50_000, rng=3)
    assert result.passed and 0.5 < result.empirical_epsilon <= 1.0
