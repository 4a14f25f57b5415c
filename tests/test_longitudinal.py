"""Longitudinal families (docs/math.md §19): L-GRR and the four L-UE shapes. Every guarantee is checked against an
independent computation: the stages' tables rebuilt from how many 32-bit words map to each output, chained and
verified in Fractions, reports of many rounds enumerated, the published parameter formulas of [Arcolezi22], and
seeded simulations with tolerances from the variance."""

import hashlib
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from test_rappor import chacha20_reference

import lipdesign as ld
from lipdesign.mechanisms.longitudinal import ATTEMPTS, VARIANTS, LongitudinalGRR, LongitudinalUE
from lipdesign.testing import check_mechanism
from lipdesign.verification import verify_table

WORD = 2**32
MECHANISMS = [LongitudinalGRR(1.0, 3.0, 4), LongitudinalGRR(0.5, 1.0, 3), LongitudinalGRR(2.0, 2.0, 5),
              *(LongitudinalUE(1.0, 3.0, 4, variant=variant) for variant in VARIANTS)]
IDS = [f"{m.display_name()}-{m.epsilon}-{m.epsilon_permanent}-{m.k}" for m in MECHANISMS]


# ------------------------------------------------------------------------------- the stages' tables, rebuilt
def grr_stage_table(threshold, k):
    """Pr[out | in] of a GRR stage counted from the words: keep when the keep word is below the threshold; else
    attempt a after a - 1 rejections hits each output with floor(2^32 / k) accepted words of 2^32; all rejected:
    keep."""
    keep = Fraction(threshold, WORD)
    rejected = Fraction(WORD % k, WORD)
    each = Fraction(WORD // k, WORD)
    uniform = sum(rejected ** a * each for a in range(ATTEMPTS))
    table = [[(1 - keep) * uniform + ((keep + (1 - keep) * rejected ** ATTEMPTS) if y == x else 0) for y in range(k)]
             for x in range(k)]
    assert all(sum(row) == 1 for row in table)
    return table


def product(first, second):
    return [[sum(a * second[z][y] for z, a in enumerate(row)) for y in range(len(second[0]))] for row in first]


def ue_full_table(k, value_bit, other_bit):
    """Pr[report | x] over the 2^k reports of unary encoding with per-bit Pr[1] value_bit (bit x) and other_bit."""
    table = []
    for x in range(k):
        row = []
        for bits in itertools.product((0, 1), repeat=k):
            p = Fraction(1)
            for j, bit in enumerate(bits):
                one = value_bit if j == x else other_bit
                p *= one if bit else 1 - one
            row.append(p)
        table.append(row)
    return table


def one_report_table(mechanism):
    """The full one-report table over every output, from the stages (independent of the mechanism's reductions)."""
    if mechanism.family == "l-grr":
        return product(grr_stage_table(mechanism.permanent_threshold, mechanism.k),
                       grr_stage_table(mechanism.instantaneous_threshold, mechanism.k))
    (p1, q1), (p2, q2) = [(Fraction(a, WORD), Fraction(b, WORD)) for a, b in
                          (mechanism.permanent_thresholds, mechanism.instantaneous_thresholds)]
    return ue_full_table(mechanism.k, p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2)


def permanent_table(mechanism):
    if mechanism.family == "l-grr":
        return grr_stage_table(mechanism.permanent_threshold, mechanism.k)
    p1, q1 = (Fraction(t, WORD) for t in mechanism.permanent_thresholds)
    return ue_full_table(mechanism.k, p1, q1)


def exact(table):
    return np.array(table, dtype=object)


# ------------------------------------------------------------------------------------ the contract and claims
@pytest.mark.parametrize("mechanism", MECHANISMS, ids=IDS)
def test_every_check_of_the_contract_passes(mechanism):
    assert check_mechanism(mechanism)


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=IDS)
def test_one_report_and_unbounded_guarantees_are_the_rebuilt_tables(mechanism):
    """The certified epsilons equal those of the full tables rebuilt from the word counts (to the rounding up),
    and both are within their claims."""
    one = verify_table(exact(one_report_table(mechanism)), ld.LDP(mechanism.epsilon))
    permanent = verify_table(exact(permanent_table(mechanism)), ld.LDP(mechanism.epsilon_permanent))
    assert one.passed and permanent.passed
    assert mechanism.verify().epsilon == pytest.approx(one.epsilon, abs=1e-12)
    assert mechanism.permanent_certificate().epsilon == pytest.approx(permanent.epsilon, abs=1e-12)
    assert mechanism.verify().passed and mechanism.permanent_certificate().passed


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=IDS)
def test_the_claims_are_met_closely(mechanism):
    """The thresholds are the least noisy the claims allow: one report within 1e-6 of epsilon unless the
    instantaneous stage passes everything (then it is the permanent one's), the permanent within 1e-6."""
    assert mechanism.epsilon_permanent - 1e-6 < mechanism.permanent_certificate().epsilon
    if mechanism.epsilon < mechanism.epsilon_permanent:
        assert mechanism.epsilon - 1e-6 < mechanism.verify().epsilon


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=IDS)
def test_many_rounds_of_one_value_never_reveal_more_than_the_permanent_stage(mechanism):
    """R reports of one value by one device, memoised: Pr[y_1..y_R | x] = sum_z Q1[x, z] prod_r Q2[z, y_r],
    enumerated in Fractions. Its LDP epsilon grows with R and stays within the permanent stage's."""
    if mechanism.family == "l-grr":
        q1 = grr_stage_table(mechanism.permanent_threshold, mechanism.k)
        q2 = grr_stage_table(mechanism.instantaneous_threshold, mechanism.k)
        rounds = range(1, 4 if mechanism.k <= 4 else 3)
    else:
        small = LongitudinalUE(mechanism.epsilon, mechanism.epsilon_permanent, 2, variant=mechanism.variant)
        p1, q1_ = (Fraction(t, WORD) for t in small.permanent_thresholds)
        p2, q2_ = (Fraction(t, WORD) for t in small.instantaneous_thresholds)
        q1 = ue_full_table(2, p1, q1_)
        bit = [[1 - q2_, q2_], [1 - p2, p2]]  # instantaneous channel per bit: rows permanent bit 0, 1
        q2 = [[bit[a][c] * bit[b][d] for c in (0, 1) for d in (0, 1)] for a in (0, 1) for b in (0, 1)]
        mechanism, rounds = small, range(1, 4)
    previous = 0.0
    for count in rounds:
        outputs = list(itertools.product(range(len(q2[0])), repeat=count))
        joint = [[sum(q1[x][z] * math.prod(q2[z][y] for y in ys) for z in range(len(q1[0]))) for ys in outputs]
                 for x in range(len(q1))]
        certificate = verify_table(exact(joint), ld.LDP(mechanism.epsilon_permanent))
        assert certificate.passed, count
        assert certificate.epsilon >= previous - 1e-12
        if count == 1:
            assert certificate.epsilon == pytest.approx(mechanism.verify().epsilon, abs=1e-12)
        previous = certificate.epsilon
    if mechanism.epsilon < mechanism.epsilon_permanent:  # more rounds do reveal more, up to the permanent stage
        assert previous > mechanism.verify().epsilon


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=IDS)
def test_lip_at_a_prior_is_the_full_tables(mechanism):
    """The LIP closed forms (docs/math.md §19.3, §19.4) against verify_table on the full tables, at priors with
    their least and most likely values in different places."""
    rng = np.random.default_rng(5)
    for _ in range(3):
        prior = rng.dirichlet(np.ones(mechanism.k))
        for certificate, table in ((mechanism.certificate_at(prior), one_report_table(mechanism)),
                                   (mechanism.permanent_certificate_at(prior), permanent_table(mechanism))):
            reference = verify_table(exact(table), ld.LIP(30.0), prior=prior)
            assert certificate.epsilon == pytest.approx(reference.epsilon, abs=1e-9)
            assert certificate.passed  # LDP at epsilon implies LIP at epsilon at every prior


def test_lip_over_a_prior_set_is_its_worst_vertex():
    mechanism = LongitudinalGRR(1.0, 2.0, 3)
    prior_set = ld.PriorSet.tv_ball([0.5, 0.3, 0.2], 0.1)
    worst = max(mechanism.certificate_at(vertex).epsilon for vertex in prior_set.vertices)
    assert mechanism.certificate_at(prior_set).epsilon == worst
    with pytest.raises(ld.ValidationError, match="prior has 3 values"):
        LongitudinalGRR(1.0, 2.0, 4).certificate_at(prior_set)


# ------------------------------------------------------------------------------ the published parameter choices
def test_l_grr_one_report_is_grr_at_epsilon():
    """[Arcolezi22]: L-GRR's chain is GRR with p = e^eps / (e^eps + k - 1); the permanent GRR's p1 = e^eps_inf /
    (e^eps_inf + k - 1)."""
    for eps, eps_inf, k in ((0.5, 2.0, 10), (1.0, 4.0, 3), (2.0, 5.0, 74)):
        mechanism = LongitudinalGRR(eps, eps_inf, k)
        assert mechanism.p == pytest.approx(math.exp(eps) / (math.exp(eps) + k - 1), abs=1e-8)
        keep = float(mechanism.alpha_permanent + (1 - mechanism.alpha_permanent) / k)
        assert keep == pytest.approx(math.exp(eps_inf) / (math.exp(eps_inf) + k - 1), abs=1e-8)


@pytest.mark.parametrize(("eps", "eps_inf"), [(0.5, 2.0), (1.0, 4.0), (2.0, 3.0)])
def test_l_ue_shapes_are_the_published_ones(eps, eps_inf):
    """[Arcolezi22]'s closed forms: L-OSUE's p2 = (1 - e^(eps + eps_inf)) / (e^eps - e^eps_inf - e^(eps + eps_inf)
    + 1) with q2 = 1 - p2 after OUE's (1/2, 1/(e^eps_inf + 1)); L-SUE's first channel SUE at eps_inf; L-OUE and
    L-SOUE second channels with p2 = 1/2."""
    e1, ei = math.exp(eps), math.exp(eps_inf)
    osue = LongitudinalUE(eps, eps_inf, 8, variant="osue")
    p1, q1 = (t / WORD for t in osue.permanent_thresholds)
    p2, q2 = (t / WORD for t in osue.instantaneous_thresholds)
    assert (p1, q1) == pytest.approx((0.5, 1 / (ei + 1)), abs=1e-8)
    assert p2 == pytest.approx((1 - e1 * ei) / (e1 - ei - e1 * ei + 1), abs=1e-8) and q2 == 1 - p2
    sue = LongitudinalUE(eps, eps_inf, 8, variant="sue")
    assert sue.permanent_thresholds[0] / WORD == pytest.approx(math.exp(eps_inf / 2) / (math.exp(eps_inf / 2) + 1),
                                                               abs=1e-8)
    for variant in ("oue", "soue"):
        assert LongitudinalUE(eps, eps_inf, 8, variant=variant).instantaneous_thresholds[0] == WORD // 2


# ------------------------------------------------------------------------------------------ the sampler
@pytest.mark.parametrize("mechanism", MECHANISMS[:2] + MECHANISMS[3:4], ids=IDS[:2] + IDS[3:4])
def test_both_paths_realise_the_table(mechanism):
    """Reports of one value from perturb and from perturb_memoised (fresh keys), and memoised permanent responses:
    every output class within 5 sd of the rebuilt tables (L-GRR: each value; L-UE: each bit's rate)."""
    n, x = 200_000, 1
    values = np.full(n, x)
    keys = mechanism.device_keys(n, rng=3)
    one, permanent = one_report_table(mechanism), permanent_table(mechanism)
    for reports, table in ((mechanism.perturb(values, rng=4), one),
                           (mechanism.perturb_memoised(values, keys, rng=5), one)):
        if mechanism.family == "l-grr":
            observed = np.bincount(reports, minlength=mechanism.k) / n
            expected = np.array([float(p) for p in table[x]])
        else:
            observed = mechanism.bits(reports).mean(axis=0)
            expected = np.full(mechanism.k, mechanism.q)
            expected[x] = mechanism.p
        assert np.all(np.abs(observed - expected) < 5 * np.sqrt(expected * (1 - expected) / n))
    memo = mechanism.permanent(values, keys)
    if mechanism.family == "l-grr":
        observed = np.bincount(memo, minlength=mechanism.k) / n
        expected = np.array([float(p) for p in permanent[x]])
    else:
        observed = memo.mean(axis=0)
        expected = np.full(mechanism.k, mechanism.permanent_thresholds[1] / WORD)
        expected[x] = mechanism.permanent_thresholds[0] / WORD
    assert np.all(np.abs(observed - expected) < 5 * np.sqrt(expected * (1 - expected) / n))


@pytest.mark.parametrize("mechanism", [MECHANISMS[0], MECHANISMS[4]], ids=[IDS[0], IDS[4]])
def test_a_device_memoises_from_its_key_as_the_recipe_says(mechanism):
    """docs/runtime.md §15 recomputed with the reference ChaCha20 and hashlib: the nonce is BLAKE2b-64 of the value
    as 8 little-endian bytes, keyed by the device key, personalised with the fingerprint's first 16 bytes; the
    stream's first words decide the permanent stage."""
    keys = mechanism.device_keys(3, rng=1)
    values = [0, 3, 0]
    memo = mechanism.permanent(values, keys)
    for device, value in enumerate(values):
        key_words = [int(word) for word in keys[device]]
        key_bytes = b"".join(word.to_bytes(4, "little") for word in key_words)
        person = bytes.fromhex(mechanism.fingerprint)[:16]
        nonce = int.from_bytes(hashlib.blake2b(value.to_bytes(8, "little"), digest_size=8, key=key_bytes,
                                               person=person).digest(), "little")
        words = chacha20_reference(key_words, 0, nonce)
        if mechanism.family == "l-grr":
            k, keep = mechanism.k, words[0] < mechanism.permanent_threshold
            uniform = next((w * k >> 32 for w in words[1:1 + ATTEMPTS] if (w * k) % WORD >= WORD % k), None)
            assert memo[device] == (value if keep or uniform is None else uniform)
        else:
            one, zero = mechanism.permanent_thresholds
            assert memo[device].tolist() == [w < (one if j == value else zero) for j, w in enumerate(words[:4])]


def test_memos_repeat_per_device_and_value_and_differ_across_mechanisms():
    first, second = LongitudinalGRR(1.0, 2.0, 4), LongitudinalGRR(1.0, 2.5, 4)
    keys = first.device_keys(5000, rng=2)
    values = np.arange(5000) % 4
    memo = first.permanent(values, keys)
    assert np.array_equal(memo, first.permanent(values, keys))
    # the same key with another mechanism: its own memo (the nonce is personalised with the fingerprint)
    assert np.mean(second.permanent(values, keys) == memo) < 0.9
    # another value of the same device: another memo, independent of the first
    assert np.mean(first.permanent((values + 1) % 4, keys) == (memo + 1) % 4) < 0.9


def test_the_averaging_attack_recovers_no_more_than_the_permanent_response():
    """4,000 devices each send 60 reports of one value. Memoised, the majority of a device's reports is its
    permanent response, which is the value with probability p1 (the permanent keep), within 5 sd; the same 60
    reports drawn afresh (no memo) give the value away almost always."""
    mechanism = LongitudinalGRR(1.0, 2.0, 4)
    n, rounds = 4000, 60
    values = np.arange(n) % 4
    keys = mechanism.device_keys(n, rng=6)
    memoised = np.stack([mechanism.perturb_memoised(values, keys, rng=r) for r in range(rounds)], axis=1)
    fresh = np.stack([mechanism.perturb(values, rng=100 + r) for r in range(rounds)], axis=1)

    def recovered(reports):
        counts = np.stack([(reports == v).sum(axis=1) for v in range(4)], axis=1)
        return np.mean(counts.argmax(axis=1) == values)

    keep = float(mechanism.alpha_permanent + (1 - mechanism.alpha_permanent) / 4)
    assert keep == pytest.approx(math.exp(2.0) / (math.exp(2.0) + 3), abs=1e-8)
    # the majority of 60 instantaneous reports of the permanent value picks it with probability >= 0.97 here
    assert abs(recovered(memoised) - keep) < 5 * math.sqrt(keep * (1 - keep) / n) + 0.03
    assert recovered(memoised) <= keep + 5 * math.sqrt(keep * (1 - keep) / n)
    assert recovered(fresh) > 0.95


# ----------------------------------------------------------------------------------------- many rounds' estimates
def test_rounds_variance_and_the_combined_standard_errors_match_simulation():
    """200 collections of 5 memoised rounds of 3,000 devices: the variance of the rounds' average and of the change
    between two rounds against the closed forms of docs/math.md §19.5 (chi-square bounds at 200 repetitions), and
    the aligned standard errors against the observed spread."""
    mechanism = LongitudinalUE(1.0, 2.0, 3, variant="osue")
    n, rounds, repetitions = 3000, 5, 200
    values = np.random.default_rng(0).choice(3, size=n, p=[0.6, 0.3, 0.1])
    f = np.bincount(values, minlength=3) / n
    averages, changes, errors = [], [], []
    for repetition in range(repetitions):
        keys = mechanism.device_keys(n, rng=1000 + repetition)
        reports = [mechanism.perturb_memoised(values, keys, rng=rounds * repetition + r) for r in range(rounds)]
        average = ld.rounds.average(mechanism, reports)
        change = ld.rounds.change(mechanism, reports[0], reports[1])
        averages.append(average.values)
        changes.append(change.values)
        errors.append(average.standard_errors)
    low, high = 0.72, 1.31  # chi-square(199) / 199 at about 1e-4 either side
    predicted = mechanism.rounds_variance(f, n, rounds)
    ratio = np.var(averages, axis=0, ddof=1) / predicted
    assert np.all((low < ratio) & (ratio < high)), ratio
    # two rounds of unchanged values differ only by instantaneous noise: 2 (V_1 - V_perm)
    predicted_change = 2 * (mechanism.variance(f, n) - mechanism.rounds_variance(f, n, 10**9))
    ratio = np.var(changes, axis=0, ddof=1) / predicted_change
    assert np.all((low < ratio) & (ratio < high)), ratio
    assert np.all(np.abs(np.mean(changes, axis=0)) < 5 * np.sqrt(predicted_change / repetitions))
    # aligned standard errors count the devices' sampling too (docs/math.md §19.5): E[SE^2] = V + f (1 - f) / (n - 1)
    assert np.allclose(np.mean(np.square(errors), axis=0) / (predicted + f * (1 - f) / (n - 1)), 1, atol=0.03)
    # the average of many rounds does not fall to 0: V_perm, a fixed share of one round's
    assert np.all(mechanism.rounds_variance(f, n, 10**9) > 0.2 * mechanism.variance(f, n))


def test_unaligned_rounds_get_the_bound_and_aligned_ones_are_checked():
    mechanism = LongitudinalGRR(1.0, 2.0, 3)
    first, second = mechanism.perturb([0] * 100, rng=1), mechanism.perturb([1] * 80, rng=2)
    bound = ld.rounds.change(mechanism, first, second, aligned=False)
    assert np.allclose(bound.standard_errors, mechanism.estimate(first).standard_errors
                       + mechanism.estimate(second).standard_errors)
    with pytest.raises(ld.ValidationError, match=r"rounds have \[100, 80\] reports"):
        ld.rounds.change(mechanism, first, second)
    with pytest.raises(ld.ValidationError, match="rounds is"):
        ld.rounds.average(mechanism, [first])
    with pytest.raises(ld.ValidationError, match="weights is"):
        ld.rounds.combine(mechanism, [first, first], [1.0])
    with pytest.raises(ld.ValidationError, match="mechanism is a GRR"):
        ld.rounds.average(ld.mechanisms.GRR(1.0, 3), [first, first])


# --------------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(("arguments", "match"), [
    ((2.0, 1.0, 4), "epsilon is 2.0; one report's guarantee is at most the unbounded one's"),
    ((1.0, 0.0, 4), "epsilon_permanent"),
    ((1.0, 2.0, 1), "k"),
    ((1e-9, 1e-9, 2**20), "carries no information"),
])
def test_bad_parameters_are_refused(arguments, match):
    with pytest.raises(ld.ValidationError, match=match):
        LongitudinalGRR(*arguments)


def test_bad_variants_keys_and_values_are_refused():
    with pytest.raises(ld.ValidationError, match="variant is 'ose'; it must be one of"):
        LongitudinalUE(1.0, 2.0, 4, variant="ose")
    mechanism = LongitudinalUE(1.0, 2.0, 4)
    keys = mechanism.device_keys(2, rng=0)
    with pytest.raises(ld.ValidationError, match="keys has 2 rows; it must have one per value"):
        mechanism.perturb_memoised([0, 1, 2], keys)
    with pytest.raises(ld.ValidationError, match="keys has shape"):
        mechanism.perturb_memoised([0, 1], keys.astype(np.int64))
    with pytest.raises(ld.ValidationError, match="values"):
        mechanism.perturb_memoised([0, 4], keys)


# ------------------------------------------------------------------------------------------ the budget ledger
def test_memoised_rounds_count_once_in_compose_and_the_ledger():
    """R memoised rounds of one mechanism count min(R eps, eps_permanent) (docs/math.md §19.1): the permanent
    certificate, never 30 eps; fresh rounds count R eps; a mechanism that cannot memoise is refused."""
    mechanism = LongitudinalGRR(0.5, 2.0, 4)
    permanent = mechanism.permanent_certificate().epsilon
    one = mechanism.verify().epsilon
    assert ld.compose([mechanism] * 3, memoised=True).epsilon == pytest.approx(3 * one, rel=1e-12)
    assert ld.compose([mechanism] * 30, memoised=True).epsilon == permanent
    assert ld.compose([mechanism] * 30).epsilon == pytest.approx(30 * one, rel=1e-12)
    other = LongitudinalUE(0.5, 1.0, 4)  # another mechanism's memo is another permanent response
    joint = ld.compose([mechanism] * 30 + [other] * 30, memoised=True)
    assert joint.epsilon == pytest.approx(permanent + other.permanent_certificate().epsilon, rel=1e-12)
    assert [part.get("memoised releases") for part in joint.parts] == [30, 30]
    ledger = ld.Ledger(ld.LDP(2.4))
    for _ in range(30):  # one entry per round, never double counting the permanent response
        ledger.spend(mechanism, memoised=True)
    assert ledger.spent == permanent and len(ledger.releases) == 30
    assert ledger.reports_allowed(mechanism, memoised=True) == math.inf
    assert ledger.reports_allowed(mechanism) == 0  # a fresh report on top would exceed the total
    grr = ld.mechanisms.GRR(1.0, 4)
    with pytest.raises(ld.ValidationError, match=r"memoised\[0\] is True and mechanisms\[0\] \(grr\) draws fresh"):
        ld.compose([grr, grr], memoised=True)
    with pytest.raises(ld.ValidationError, match="memoised is"):
        ld.compose([mechanism, mechanism], memoised=[True])


# ----------------------------------------------------------------------------------- files and the command line
def test_perturb_file_memoises_with_a_key_file(tmp_path):
    """perturb_file with a key file: the reports are perturb_memoised's with each device's key derived from the
    file's master key and its id (BLAKE2b, docs/runtime.md §15) and the seeded block's instantaneous stream; a key
    file is bound to its mechanism; a file without devices and a family without a memo are refused, and nothing is
    created by a refused run."""
    from lipdesign.engine import block_generator
    from lipdesign.io.device_keys import master_key

    mechanism = LongitudinalUE(1.0, 2.0, 5, variant="sue")
    values, devices = np.array([0, 4, 2, 2, 1]), np.array([10, 11, 12, 13, 14])
    path = tmp_path / "round.csv"
    path.write_text("device,value\n" + "".join(f"{d},{v}\n" for d, v in zip(devices, values)))
    keys = tmp_path / "devices.key"
    ld.perturb_file(mechanism, path, tmp_path / "one.parquet", seed=3, keys=keys)
    master = master_key(keys, mechanism, create=False)
    derived = np.stack([np.frombuffer(hashlib.blake2b(int(d).to_bytes(8, "little"), digest_size=32, key=master,
                                                      person=b"lipdesign.device").digest(), dtype="<u4")
                        for d in devices]).astype(np.uint32)
    expected = mechanism.perturb_memoised(values, derived, rng=block_generator(3, 0))
    assert np.array_equal(ld.read_reports(tmp_path / "one.parquet", mechanism), expected)
    assert np.array_equal(mechanism.permanent(values, derived), mechanism.permanent(values, derived))
    assert oct(keys.stat().st_mode & 0o777) == "0o600"
    other = LongitudinalUE(1.0, 2.5, 5, variant="sue")
    with pytest.raises(ld.ValidationError, match="reusing a permanent key across mechanisms is refused"):
        ld.perturb_file(other, path, tmp_path / "two.parquet", keys=keys)
    bare = tmp_path / "bare.csv"
    bare.write_text("value\n0\n1\n")
    with pytest.raises(ld.ValidationError, match=r"missing: device"):
        ld.perturb_file(mechanism, bare, tmp_path / "three.parquet", keys=tmp_path / "new.key")
    assert not (tmp_path / "new.key").exists()
    with pytest.raises(ld.ValidationError, match="grr draws fresh reports every round"):
        ld.perturb_file(ld.mechanisms.GRR(1.0, 5), path, tmp_path / "four.parquet", keys=tmp_path / "g.key")


def test_the_rounds_command_estimates_the_change_and_refuses_bad_input(tmp_path, capsys):
    from lipdesign.cli import main

    mechanism = LongitudinalGRR(1.0, 2.0, 3)
    mechanism.to_json(tmp_path / "m.json")
    rng = np.random.default_rng(0)
    before = rng.choice(3, size=4000, p=[0.6, 0.3, 0.1])
    after = np.where(rng.random(4000) < 0.2, 2, before)  # a fifth of the devices move to value 2
    for name, values in (("r1", before), ("r2", after)):
        (tmp_path / f"{name}.csv").write_text("device,value\n" + "".join(f"{i},{v}\n" for i, v in enumerate(values)))
        assert main(["perturb", str(tmp_path / "m.json"), str(tmp_path / f"{name}.csv"), "-o",
                     str(tmp_path / f"{name}.parquet"), "--keys", str(tmp_path / "k.key"), "-q"]) in (0, None)
    capsys.readouterr()
    assert main(["rounds", str(tmp_path / "m.json"), str(tmp_path / "r1.parquet"), str(tmp_path / "r2.parquet"),
                 "--change"]) in (0, None)
    printed = capsys.readouterr().out
    truth = np.bincount(after, minlength=3) / 4000 - np.bincount(before, minlength=3) / 4000
    rows = [line.split(": ", 1)[1].split() for line in printed.splitlines() if line.startswith("  change in ")]
    assert len(rows) == 3, printed  # one line per value, named as a change
    estimates, errors = [float(row[0]) for row in rows], [float(row[2]) for row in rows]
    assert all(abs(e - t) < 5 * s for e, t, s in zip(estimates, truth, errors)), printed
    assert abs(truth[2]) > 0.1 and estimates[2] > 0.1  # the move to value 2 is seen
    assert main(["rounds", str(tmp_path / "m.json"), str(tmp_path / "r1.parquet"), "--change"]) == 2
    error = capsys.readouterr().err
    assert "--change compares two rounds" in error and len(error.strip().splitlines()) == 1
    # the files carry a digest of their device ids in row order: a round written in another order is refused
    # (pyarrow 17's footer metadata; files written by pyarrow 16 are unmarked)
    import pyarrow.parquet as pq

    if not hasattr(pq.ParquetWriter, "add_key_value_metadata"):
        return
    order = np.random.default_rng(1).permutation(4000)
    (tmp_path / "r3.csv").write_text("device,value\n" + "".join(f"{i},{after[i]}\n" for i in order))
    assert main(["perturb", str(tmp_path / "m.json"), str(tmp_path / "r3.csv"), "-o", str(tmp_path / "r3.parquet"),
                 "--keys", str(tmp_path / "k.key"), "-q"]) in (0, None)
    capsys.readouterr()
    assert main(["rounds", str(tmp_path / "m.json"), str(tmp_path / "r1.parquet"), str(tmp_path / "r3.parquet"),
                 "--change"]) == 2
    assert "need the same devices in the same row order" in capsys.readouterr().err
    assert main(["rounds", str(tmp_path / "m.json"), str(tmp_path / "r1.parquet"), str(tmp_path / "r3.parquet"),
                 "--change", "--unaligned"]) in (0, None)


@pytest.mark.parametrize("mechanism", [LongitudinalGRR(1.0, 2.0, 4), LongitudinalUE(1.0, 2.0, 4, variant="soue"),
                                       ld.mechanisms.LongitudinalTable.example()],
                         ids=["l-grr", "l-soue", "l-table"])
def test_the_running_samplers_pass_their_audit(mechanism):
    """ld.audit (docs/math.md §14) on 100,000 reports per population: the empirical epsilon bound within the claim
    (under LIP at the prior for l-table) and the report classes' distribution the table's."""
    result = ld.audit(mechanism, reports=100_000, rng=1)
    assert result.passed, result.summary()
    assert result.empirical_epsilon > 0.8 * mechanism.epsilon  # the audit has the power to see the claim


def test_thresholds_that_cannot_meet_a_claim_are_refused():
    """At k = 1048322 the two rejected uniform draws alone keep the value with probability rho = 5.9e-8, more than a
    0.01-LDP stage allows: the realised epsilon would be 0.0597, so the mechanism is refused (a review found it was
    built and its memoised reports sent at 0.0597 while claiming 0.01)."""
    k = 1048322
    rho = Fraction(WORD % k, WORD) ** ATTEMPTS
    assert float(rho) > math.expm1(0.01) / (math.exp(0.01) + k - 1)  # the target alpha lies below rho
    for epsilon, permanent, field in ((0.01, 0.01, "epsilon_permanent"), (0.01, 30.0, "epsilon")):
        with pytest.raises(ld.ValidationError, match=f"^{field} is 0.01 with k = {k}; on 32-bit words the sampler "
                                                     "realises 0.0596"):
            LongitudinalGRR(epsilon, permanent, k)


def test_a_change_is_not_clipped_to_frequencies():
    """A change lies in [-1, 1]: its intervals are not clipped to [0, 1] (they were, a review found); an average's
    still are."""
    mechanism = LongitudinalGRR(1.0, 2.0, 3)
    keys = mechanism.device_keys(20_000, rng=0)
    before, after = np.zeros(20_000, dtype=int), np.where(np.arange(20_000) < 4000, 1, 0)
    change = ld.rounds.change(mechanism, mechanism.perturb_memoised(before, keys, rng=1),
                              mechanism.perturb_memoised(after, keys, rng=2))
    low, high = change.confidence_interval(0.95)
    assert change.kind == "combination" and low[0] < high[0] < 0 < low[1] < high[1]
    assert ld.rounds.average(mechanism, [mechanism.perturb_memoised(before, keys, rng=3)] * 2).kind == "frequencies"


def test_the_stages_decide_at_their_thresholds_as_the_recipe_says():
    """Constructed words at every boundary of docs/runtime.md §15 (random words almost never reach one): a GRR stage
    keeps below its threshold and not at it; Lemire's rule accepts (w k) mod 2^32 equal to 2^32 mod k and rejects one
    below; both attempts rejected keep the value; a unary bit is 1 below its threshold and 0 at it."""
    from lipdesign.mechanisms.longitudinal import grr_stage

    k, threshold = 3, 1000
    accepted = 0xAAAAAAAB  # 3 w = 2^33 + 1: (3 w) mod 2^32 = 1 = 2^32 mod 3, accepted, gives (3 w) >> 32 = 2
    rejected = 0  # (3 w) mod 2^32 = 0 < 1
    words = np.array([[threshold - 1, accepted, accepted],  # kept
                      [threshold, accepted, rejected],  # not kept: the first attempt's value
                      [threshold, rejected, accepted],  # the second attempt's value
                      [threshold, rejected, rejected],  # both rejected: kept
                      [threshold, accepted - 1, rejected]], dtype=np.uint32)  # (3 w) mod 2^32 = 2^32 - 2: accepted
    assert grr_stage(np.zeros(5, dtype=np.int64), k, threshold, words).tolist() == [0, 2, 2, 0, 1]
    mechanism = LongitudinalUE(1.0, 2.0, 3, variant="sue")
    one, zero = mechanism.permanent_thresholds
    words = np.array([[one - 1, zero - 1, zero], [one, zero, zero - 1]], dtype=np.uint32)
    assert mechanism._permanent(np.array([0, 0]), words).tolist() == [[True, True, False], [False, False, True]]
