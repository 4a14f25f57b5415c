"""Composition of releases and the budget ledger (docs/math.md §13): joint epsilons against a brute force over the
product table written here in fractions, LDP sums, LIP exceeding eps1 + eps2, the safe bound above the exact joint,
the ledger's counts, the attribute-sampling rules of the fixed mechanisms, and bad input."""

import decimal
import math
from fractions import Fraction
from itertools import product

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.errors import ValidationError
from lipdesign.mechanisms import GRR, OUE, HarmonyMixed, Piecewise, TableMechanism
from lipdesign.mechanisms.rr import one_bit_table
from lipdesign.mechanisms.sampling import implemented_exp
from lipdesign.verification import JointCertificate, sampled, sequential, verify_table
from lipdesign.verification.composition import EXACT_PAIRS, EXACT_PRODUCT, LDP_SUM, LIP_BOUND, SAMPLED

E = math.e
#: The prior of the factor-2 example of docs/math.md §2, where two eps = 1 LIP releases peak jointly.
PEAK = 1 / (1 + E)


# -- the reference: the product table in fractions, column by column ------------------------------------------
def rows_of(table):
    rows = [[Fraction(float(v)) for v in row] for row in np.asarray(table)]
    return [[v / sum(row) for v in row] for row in rows]


def product_columns(tables):
    """{(y1, y2, ...): [q[x] for each x]} with q[x] = prod_i Q_i[x, y_i] (Q_i row-normalised, exact)."""
    tables = [rows_of(table) for table in tables]
    k = len(tables[0])
    columns = {}
    for outputs in product(*[range(len(table[0])) for table in tables]):
        columns[outputs] = [math.prod((table[x][y] for table, y in zip(tables, outputs)), start=Fraction(1))
                            for x in range(k)]
    return columns


def ratio(numerator, denominator):
    if denominator == 0:
        return math.inf if numerator > 0 else 0
    return numerator / denominator


def brute_lip(tables, prior):
    """Largest of q[x] / P.q and P.q / q[x] over the product table (the LIP constraints of docs/math.md §2)."""
    weights = [Fraction(float(p)) for p in prior]
    weights = [w / sum(weights) for w in weights]
    best = 0
    for column in product_columns(tables).values():
        mass = sum(w * q for w, q in zip(weights, column))
        best = max(best, ratio(max(column), mass), ratio(mass, min(column)))
    return best


def brute_ldp(tables):
    best = 0
    for column in product_columns(tables).values():
        if any(column):
            best = max(best, ratio(max(column), min(column)))
    return best


def assert_certifies(epsilon, exact_ratio):
    """``epsilon`` is at least ln(exact_ratio) (checked in 50-digit decimals) and at most 1e-12 above it."""
    with decimal.localcontext() as context:
        context.prec = 50
        bound = decimal.Decimal(epsilon).exp()
        target = decimal.Decimal(exact_ratio.numerator) / decimal.Decimal(exact_ratio.denominator)
        assert bound >= target
        assert epsilon - float(target.ln()) <= 1e-12


def table_mechanism(table, prior, notion="LIP"):
    """A designed-table mechanism for ``table`` with a claim just above its tightest epsilon."""
    table = np.asarray(table, dtype=float)
    prior = ld.Prior(prior)
    cls = ld.LIP if notion == "LIP" else ld.LDP
    tightest = verify_table(table, cls(30.0), prior).epsilon
    return TableMechanism(table, cls(min(30.0, tightest * 1.001 + 1e-3)), prior)


def random_tables(rng, count, k, prior):
    return [table_mechanism(rng.dirichlet(np.ones(int(rng.integers(2, 5))), size=k), prior) for _ in range(count)]


@pytest.fixture(scope="module")
def binary():
    """The eps = 1 LIP optimum for binary X at the peak prior (docs/math.md §6)."""
    return ld.design(ld.Prior([PEAK, 1 - PEAK]), ld.LIP(1.0))


# -- exact joint epsilons ---------------------------------------------------------------------------------------
def test_two_lip_releases_exceed_the_sum_of_their_epsilons(binary):
    """Two eps = 1 LIP releases of one binary X reach about 2.735 jointly (docs/math.md §2), above eps1 + eps2."""
    assert binary.verify().epsilon <= 1.0
    certificate = ld.compose([binary, binary])
    reference = brute_lip([binary.privacy_table()] * 2, binary.prior.probabilities)
    assert isinstance(certificate, JointCertificate) and certificate.method == EXACT_PRODUCT
    assert_certifies(certificate.epsilon, reference)
    assert certificate.epsilon > 2.7 and reference > Fraction(math.exp(2.7))  # beyond e^(eps1 + eps2) = e^2
    assert certificate.notion == "LIP" and certificate.passed is None and certificate.exact


@pytest.mark.parametrize("seed", range(6))
def test_exact_product_table_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    prior = rng.dirichlet(np.ones(3))
    mechanisms = random_tables(rng, int(rng.integers(2, 4)), 3, prior)
    certificate = ld.compose(mechanisms)
    tables = [m.privacy_table() for m in mechanisms]
    reference = brute_lip(tables, prior)
    assert certificate.method == EXACT_PRODUCT
    assert_certifies(certificate.epsilon, reference)
    # the worst place reported is where the reference attains its ratio
    worst = certificate.worst
    column = product_columns(tables)[tuple(worst["outputs"])]
    weights = [Fraction(float(p)) for p in prior]
    mass = sum(w * q for w, q in zip(weights, column)) / sum(weights)
    attained = ratio(column[worst["value"]], mass) if worst["side"] == "upper" else ratio(mass, column[worst["value"]])
    assert attained == reference


def test_one_table_at_another_prior_agrees_with_verify(binary):
    """A single release at a prior other than the design prior: the product-table code against exact.py's."""
    other = [0.6, 0.4]
    certificate = ld.compose([binary], prior=other)
    assert certificate.epsilon == ld.verify(binary, prior=other).epsilon
    assert_certifies(certificate.epsilon, brute_lip([binary.privacy_table()], other))


@pytest.mark.parametrize("seed", range(4))
def test_exact_pairwise_ldp_matches_brute_force(seed):
    rng = np.random.default_rng(10 + seed)
    prior = rng.dirichlet(np.ones(3))
    mechanisms = [table_mechanism(rng.dirichlet(np.ones(3), size=3), prior, "LDP") for _ in range(3)]
    certificate = ld.compose(mechanisms)
    reference = brute_ldp([m.privacy_table() for m in mechanisms])
    assert certificate.method == EXACT_PAIRS and certificate.notion == "LDP"
    assert_certifies(certificate.epsilon, reference)
    # the tight joint figure never exceeds the sum of the parts' certified epsilons
    assert certificate.epsilon <= sum(m.verify().epsilon for m in mechanisms) + 1e-12


def test_pairwise_ldp_is_below_the_sum_when_the_worst_pairs_differ():
    """Each part is ln 3-LDP, part 1 worst on the pair (0, 1), part 2 on (1, 2), with 2 : 1 or 1.5 : 1 ratios on
    the other pairs: by hand the worst joint pairs are (0, 1) and (2, 1), 3 x 2 = 2 x 3 = 6, so the joint LDP
    epsilon is ln 6, below 2 ln 3 = ln 9 (the same table twice reaches ln 9)."""
    prior = [0.3, 0.3, 0.4]
    first = table_mechanism([[0.75, 0.25], [0.25, 0.75], [0.5, 0.5]], prior, "LDP")
    second = table_mechanism([[0.5, 0.5], [0.75, 0.25], [0.25, 0.75]], prior, "LDP")
    certificate = ld.compose([first, second])
    assert_certifies(certificate.epsilon, brute_ldp([first.privacy_table(), second.privacy_table()]))
    assert certificate.epsilon == pytest.approx(math.log(6), abs=1e-12)
    assert certificate.worst["inputs"] in ([0, 1], [2, 1])
    assert ld.compose([first, first]).epsilon == pytest.approx(2 * math.log(3), abs=1e-12)


def test_ldp_budgets_of_fixed_mechanisms_add():
    parts = [GRR(1.0, 5), OUE(0.5, 5), GRR(2.0, 5)]
    certificate = ld.compose(parts)
    exact_sum = sum(Fraction(m.verify().epsilon) for m in parts)
    assert certificate.method == LDP_SUM and certificate.notion == "LDP"
    assert exact_sum <= Fraction(certificate.epsilon) <= exact_sum + Fraction(1, 10**14)
    assert 3.5 - 1e-8 < certificate.epsilon < 3.5  # each part sits 1e-10 below its claim


# -- the safe bound ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_safe_bound_is_at_least_the_exact_joint(seed):
    rng = np.random.default_rng(100 + seed)
    k = int(rng.integers(2, 4))
    prior = rng.dirichlet(np.ones(k))
    mechanisms = random_tables(rng, int(rng.integers(2, 4)), k, prior)
    exact = ld.compose(mechanisms)
    bound = ld.compose(mechanisms, max_entries=0)
    assert exact.method == EXACT_PRODUCT and bound.method == LIP_BOUND
    assert bound.epsilon >= exact.epsilon
    # and the bound is the closed form of docs/math.md §13 on the verified figures, at most 2 sum eps
    lips = [m.epsilons["LIP for X"] for m in mechanisms]
    ldps = [m.epsilons["LDP"] for m in mechanisms]
    closed = min(lip + sum(ldps) - ldp for lip, ldp in zip(lips, ldps))
    assert bound.epsilon == pytest.approx(closed, rel=1e-12) and bound.epsilon >= closed
    assert bound.epsilon <= 2 * sum(lips) * (1 + 1e-12)


def test_safe_bound_mixes_ldp_and_lip_parts(binary):
    """An eps-LIP part and a delta-LDP part: LIP eps + delta at the design prior (docs/math.md §13)."""
    grr = GRR(1.0, 2)
    certificate = ld.compose([binary, grr], notion="LIP")
    assert certificate.method == LIP_BOUND
    assert certificate.epsilon == math.nextafter(float(Fraction(binary.epsilons["LIP for X"]) +
                                                       Fraction(grr.verify().epsilon)), math.inf)
    # at another prior the LIP part's design figure says nothing: both parts count at their LDP epsilons
    elsewhere = ld.compose([binary, grr], prior=[0.5, 0.5], notion="LIP")
    assert elsewhere.epsilon >= binary.epsilons["LDP"] + grr.verify().epsilon


# -- the ledger -------------------------------------------------------------------------------------------------
def test_ldp_ledger_allows_total_over_epsilon_reports():
    ledger = ld.Ledger(ld.LDP(4))
    grr = GRR(1.0, 5)
    assert ledger.reports_allowed(grr) == 4 and ledger.spent == 0.0 and ledger.remaining == 4.0
    assert ledger.reports_allowed(GRR(0.5, 5)) == 8
    for left in (3, 2, 1, 0):
        ledger.spend(grr)
        assert ledger.reports_allowed(grr) == left
    assert 4 - 1e-8 < ledger.spent <= 4 and 0 <= ledger.remaining < 1e-8
    with pytest.raises(ValidationError, match=r"^mechanism is GRR.*above the total 4"):
        ledger.spend(grr)
    assert len(ledger.releases) == 4


def test_lip_ledger_counts_the_exact_joint(binary):
    """Under LIP(4) the binary eps = 1 design fits twice (2.735) but not three times (4.69, brute force), although
    4 reports of eps = 1 would fit if LIP budgets added."""
    three = brute_lip([binary.privacy_table()] * 3, binary.prior.probabilities)
    assert three > Fraction(math.exp(4))
    ledger = ld.Ledger(ld.LIP(4))
    assert ledger.reports_allowed(binary) == 2
    ledger.spend(binary)
    ledger.spend(binary)
    with pytest.raises(ValidationError, match="joint LIP epsilon"):
        ledger.spend(binary)
    assert ledger.reports_allowed(binary) == 0


def test_lip_ledger_past_the_exact_range_uses_the_bound():
    """LDP parts in an LIP ledger: the bound is the sum of their epsilons, so LIP(4) takes four eps = 1 reports."""
    ledger = ld.Ledger(ld.LIP(4), prior=[0.2, 0.3, 0.5])
    assert ledger.reports_allowed(GRR(1.0, 3)) == 4
    silent = table_mechanism([[0.5, 0.5]] * 3, [0.2, 0.3, 0.5], "LDP")  # its reports do not depend on the value
    assert ledger.reports_allowed(silent) == math.inf


# -- the fixed mechanisms' rules --------------------------------------------------------------------------------
def test_sequential_and_sampled_rules():
    one = verify_table(one_bit_table(implemented_exp(1.0)), ld.LDP(1.0))
    two = verify_table(one_bit_table(implemented_exp(2.0)), ld.LDP(2.0))
    both = sequential([one, one, two], 4.0)
    assert both.method == LDP_SUM and both.passed and both.worst["parts"] == 3
    assert both.epsilon == math.nextafter(float(2 * Fraction(one.epsilon) + Fraction(two.epsilon)), math.inf)
    assert not sequential([two, two], 3.9).passed
    assert sequential([two]).epsilon == two.epsilon and sequential([two]).passed is None
    drawn = sampled([one, two, one], 2.0)
    assert drawn.method == SAMPLED and drawn.epsilon == two.epsilon and drawn.passed and drawn.worst["part"] == 1


def test_attribute_sampling_keeps_its_figures():
    """HarmonyMixed: the largest attribute certificate is the one-bit table's; Piecewise: k times eps / k."""
    mixed = HarmonyMixed(1.0, ["numeric", 4, "numeric"], m=32, seed=5)
    assert mixed.verify().epsilon == verify_table(one_bit_table(implemented_exp(1.0)), ld.LDP(1.0)).epsilon
    assert mixed.verify().passed and mixed.verify().method == SAMPLED
    piecewise = Piecewise(10.0, 3, grid=8)
    single = verify_table(piecewise.privacy_table(), ld.LDP(piecewise.attribute_epsilon))
    assert piecewise.verify().epsilon == math.nextafter(3 * single.epsilon, math.inf) <= 10.0


# -- bad input --------------------------------------------------------------------------------------------------
def test_bad_input(binary):
    other = ld.design(ld.Prior([0.5, 0.5]), ld.LIP(1.0))
    cases = [
        (lambda: ld.compose([]), "^mechanisms is empty"),
        (lambda: ld.compose(GRR(1.0, 2)), "^mechanisms is GRR"),
        (lambda: ld.compose([GRR(1.0, 3), GRR(1.0, 4)]),
         r"^mechanisms\[1\] takes 4 values and mechanisms\[0\] takes 3"),
        (lambda: ld.compose([GRR(1.0, 2), np.eye(2)]), r"^mechanisms\[1\] is a ndarray; it must be an ld.Mechanism"),
        (lambda: ld.compose([GRR(1.0, 2)], notion="LIP"), "^prior is None and none of the mechanisms has a design"),
        (lambda: ld.compose([binary, other]), r"^prior is None and mechanisms\[0\] and mechanisms\[1\] have diff"),
        (lambda: ld.compose([binary, GRR(1.0, 2)]), "^notion is None and the mechanisms are under both LDP and LIP"),
        (lambda: ld.compose([binary], notion="WC-LIP"), "^notion is 'WC-LIP'; the joint release is certified"),
        (lambda: ld.compose([GRR(1.0, 2)], prior=[0.5, 0.5]), r"^prior is \[0.5, 0.5\]; the joint LDP epsilon"),
        (lambda: ld.compose([binary], prior=[0.2, 0.3, 0.5]), "^prior has 3 values; it must have one per value"),
        (lambda: ld.Ledger(4), "^total is 4; a ledger's budget is ld.LDP"),
        (lambda: ld.Ledger(ld.LDP(4), prior=[0.5, 0.5]), "^prior is .*an LDP budget does not depend on a prior"),
        (lambda: sequential([]), "^parts is empty"),
        (lambda: sequential([ld.verify(binary)]), r"^parts\[0\] is certified under LIP; these parts compose under LDP"),
    ]
    for call, message in cases:
        with pytest.raises(ValidationError, match=message):
            call()


def test_named_labels_in_another_order_are_refused():
    """Rows are combined value by value: two designs whose labels list the values in different orders would be
    combined wrongly (1.55 printed against a true joint of 2, found in review), so they are refused."""
    a = ld.design(ld.Prior([0.5, 0.3, 0.2], labels=["a", "b", "c"]), ld.LDP(1.0))
    b = ld.design(ld.Prior([0.2, 0.3, 0.5], labels=["c", "b", "a"]), ld.LDP(1.0))
    with pytest.raises(ld.ValidationError, match=r"mechanisms\[1\] has labels \['c', 'b', 'a'\] and mechanisms\[0\]"):
        ld.compose([a, b])
    assert ld.compose([a, ld.mechanisms.GRR(1.0, 3)]).method == "sum of LDP budgets"  # indices: no labels to match
