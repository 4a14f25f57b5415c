"""L-OLH and dBitFlipPM (docs/math.md §19.6, §19.7). Every guarantee is checked against an independent computation:
the stage tables rebuilt by counting 32-bit words (tests/test_longitudinal.py), full report tables enumerated in
Fractions and verified with verify_table, the collision probability counted residue by residue, memos recomputed
with the reference ChaCha20 and hashlib's BLAKE2b from docs/runtime.md §15, and the estimators' mean and variance
against seeded simulation with tolerances from the variance."""

import hashlib
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from test_longitudinal import exact, grr_stage_table, product
from test_rappor import chacha20_reference

import lipdesign as ld
from lipdesign.mechanisms.longitudinal_hashed import DBitFlipPM, LongitudinalOLH, exact_collision
from lipdesign.mechanisms.olh import hash_collision
from lipdesign.testing import check_mechanism
from lipdesign.verification import verify_table

WORD = 2**32
PRIME = 2**31 - 1
OLHS = [LongitudinalOLH(1.0, 2.0, 6), LongitudinalOLH(0.5, 1.0, 4, g=3), LongitudinalOLH(2.0, 2.0, 5, g=4)]
FLIPS = [DBitFlipPM(2.0, 6, 3, 2), DBitFlipPM(1.0, 10, 5, 1), DBitFlipPM(1.5, 8, 4, 4), DBitFlipPM(3.0, 9, 4, 3)]
OLH_IDS = [f"l-olh-{m.epsilon}-{m.epsilon_permanent}-{m.k}-{m.g}" for m in OLHS]
FLIP_IDS = [f"dbitflip-{m.epsilon}-{m.k}-{m.buckets}-{m.d}" for m in FLIPS]


@pytest.mark.parametrize("mechanism", OLHS + FLIPS, ids=OLH_IDS + FLIP_IDS)
def test_every_check_of_the_contract_passes(mechanism):
    assert check_mechanism(mechanism)


# ------------------------------------------------------------------------------------------------------ L-OLH
def olh_stage_tables(mechanism):
    """The permanent and chained GRR tables over the g buckets, counted from the words."""
    permanent = grr_stage_table(mechanism.stages.permanent_threshold, mechanism.g)
    return permanent, product(permanent, grr_stage_table(mechanism.stages.instantaneous_threshold, mechanism.g))


def counted_collision(g):
    """sum_z n_z (n_z - 1) / (P (P - 1)), n_z = #{r < P: r = z mod g} counted per residue."""
    counts = [(PRIME - 1 - z) // g + 1 for z in range(g)]
    assert sum(counts) == PRIME
    return Fraction(sum(n * (n - 1) for n in counts), PRIME * (PRIME - 1))


@pytest.mark.parametrize("mechanism", OLHS, ids=OLH_IDS)
def test_l_olh_guarantees_are_the_grr_tables_over_the_buckets(mechanism):
    """With the hash public, one report is the chained GRR over g and many reports of a bucket the permanent GRR:
    both certificates equal verify_table on the rebuilt g x g tables, within the claims."""
    permanent, chained = olh_stage_tables(mechanism)
    one = verify_table(exact(chained), ld.LDP(mechanism.epsilon))
    unbounded = verify_table(exact(permanent), ld.LDP(mechanism.epsilon_permanent))
    assert one.passed and unbounded.passed
    assert mechanism.verify().epsilon == pytest.approx(one.epsilon, abs=1e-12)
    assert mechanism.permanent_certificate().epsilon == pytest.approx(unbounded.epsilon, abs=1e-12)
    assert mechanism.epsilon_permanent - 1e-6 < unbounded.epsilon
    if mechanism.epsilon < mechanism.epsilon_permanent:
        assert mechanism.epsilon - 1e-6 < one.epsilon


@pytest.mark.parametrize("g", [2, 3, 8, 21, 1000, 2**20])
def test_the_collision_probability_is_counted_residue_by_residue(g):
    assert exact_collision(g) == counted_collision(g)
    assert float(exact_collision(g)) == pytest.approx(hash_collision(g), rel=1e-12)


@pytest.mark.parametrize("mechanism", OLHS, ids=OLH_IDS)
def test_l_olh_support_probabilities(mechanism):
    """p = keep and q = c keep + (1 - c) lie of the chained table (docs/math.md §19.6), and q against 200,000
    simulated reports of another value (within 5 sd)."""
    _, chained = olh_stage_tables(mechanism)
    keep, lie = chained[0][0], chained[0][1]
    c = counted_collision(mechanism.g)
    assert mechanism.p == float(keep) and mechanism.q == pytest.approx(float(c * keep + (1 - c) * lie), rel=1e-15)
    n = 200_000
    reports = mechanism.perturb(np.zeros(n, dtype=int), rng=3)
    supports = (reports["a"] * 1 + reports["b"]) % PRIME % mechanism.g == reports["y"]  # value 1
    assert abs(supports.mean() - mechanism.q) < 5 * math.sqrt(mechanism.q * (1 - mechanism.q) / n)


@pytest.mark.parametrize("mechanism", OLHS[:2], ids=OLH_IDS[:2])
def test_l_olh_many_rounds_never_reveal_more_than_the_permanent_stage(mechanism):
    """R reports of one device with its fixed hash, h(x) = 0 and h(x') = 1: Pr[y_1..y_R | x] = sum_z Q1[h(x), z]
    prod_r Q2[z, y_r], enumerated; within epsilon_permanent, growing with R, one report's at R = 1."""
    permanent = grr_stage_table(mechanism.stages.permanent_threshold, mechanism.g)
    instant = grr_stage_table(mechanism.stages.instantaneous_threshold, mechanism.g)
    previous = 0.0
    for count in (1, 2, 3):
        outputs = list(itertools.product(range(mechanism.g), repeat=count))
        joint = [[sum(permanent[x][z] * math.prod(instant[z][y] for y in ys) for z in range(mechanism.g))
                  for ys in outputs] for x in range(mechanism.g)]
        certificate = verify_table(exact(joint), ld.LDP(mechanism.epsilon_permanent))
        assert certificate.passed and certificate.epsilon >= previous - 1e-12
        if count == 1:
            assert certificate.epsilon == pytest.approx(mechanism.verify().epsilon, abs=1e-12)
        previous = certificate.epsilon
    assert previous > mechanism.verify().epsilon


def test_l_olh_lip_bound_is_the_worst_partition():
    """The LIP certificate at a prior is the worst over every assignment of the 4 values to 3 buckets of the GRR
    table's posterior ratios (verify_table), for one report and the permanent stage; each real hash is within it;
    with k = 2 a separating hash attains it."""
    mechanism = OLHS[1]  # k = 4, g = 3
    permanent, chained = olh_stage_tables(mechanism)
    rng = np.random.default_rng(4)
    for prior in (rng.dirichlet(np.ones(4)), np.array([0.55, 0.25, 0.15, 0.05])):
        for certificate, table in ((mechanism.certificate_at(prior), chained),
                                   (mechanism.permanent_certificate_at(prior), permanent)):
            worst = 0.0
            for assignment in itertools.product(range(3), repeat=4):
                rows = exact([table[z] for z in assignment])
                worst = max(worst, verify_table(rows, ld.LIP(30.0), prior=prior).epsilon)
            assert certificate.epsilon == pytest.approx(worst, abs=1e-9)
            assert certificate.passed
        for a, b in zip(rng.integers(1, PRIME, 20), rng.integers(0, PRIME, 20)):
            rows = exact([chained[(int(a) * x + int(b)) % PRIME % 3] for x in range(4)])
            bound = mechanism.certificate_at(prior).epsilon
            assert verify_table(rows, ld.LIP(30.0), prior=prior).epsilon <= bound + 1e-9
    pair = LongitudinalOLH(0.5, 1.0, 2, g=3)
    _, chained = olh_stage_tables(pair)
    attained = verify_table(exact([chained[0], chained[1]]), ld.LIP(30.0), prior=[0.3, 0.7]).epsilon
    assert pair.certificate_at([0.3, 0.7]).epsilon == pytest.approx(attained, abs=1e-9)


def memo_stream(mechanism, key_words, data):
    """docs/runtime.md §15: the ChaCha20 stream whose nonce is BLAKE2b-64 of ``data`` keyed by the device key and
    personalised with the fingerprint's first 16 bytes."""
    key = b"".join(int(word).to_bytes(4, "little") for word in key_words)
    person = bytes.fromhex(mechanism.fingerprint)[:16]
    nonce = int.from_bytes(hashlib.blake2b(data, digest_size=8, key=key, person=person).digest(), "little")
    return [word for block in range(2) for word in chacha20_reference([int(w) for w in key_words], block, nonce)]


def lemire(words, m):
    products = [w * m for w in words]
    accepted = [z for z in products if z % WORD >= WORD % m]
    return (accepted[0] if accepted else products[-1]) >> 32


def test_l_olh_memo_is_the_recipe_and_repeats_per_bucket():
    """The hash from the stream of "l-olh hash", the permanent GRR from the stream of the bucket; the same device
    keeps its hash for every value, and values sharing a bucket share the permanent response."""
    mechanism = OLHS[1]
    keys = mechanism.device_keys(4, rng=1)
    values = np.array([0, 3, 2, 1])
    memo = mechanism.permanent(values, keys)
    for device, value in enumerate(values.tolist()):
        words = memo_stream(mechanism, keys[device], b"l-olh hash")
        a, b = 1 + lemire(words[0:2], PRIME - 1), lemire(words[2:4], PRIME)
        bucket = (a * value + b) % PRIME % mechanism.g
        stage = memo_stream(mechanism, keys[device], bucket.to_bytes(8, "little"))
        keep = stage[0] < mechanism.stages.permanent_threshold
        uniform = next((w * 3 >> 32 for w in stage[1:3] if (w * 3) % WORD >= WORD % 3), None)
        assert memo[device].tolist() == (a, b, bucket if keep or uniform is None else uniform)
    keys = mechanism.device_keys(3000, rng=2)
    first, second = mechanism.permanent(np.zeros(3000, int), keys), mechanism.permanent(np.ones(3000, int), keys)
    assert np.array_equal(first, mechanism.permanent(np.zeros(3000, int), keys))
    assert np.array_equal(first[["a", "b"]], second[["a", "b"]])  # one hash per device
    shared = (first["a"] + first["b"]) % PRIME % 3 == first["b"] % PRIME % 3  # h(0) = h(1)
    assert shared.any() and np.array_equal(first["y"][shared], second["y"][shared])
    assert np.mean(first["y"][~shared] == second["y"][~shared]) < 0.9  # other buckets: other responses


# ------------------------------------------------------------------------------------------------- dBitFlipPM
def flip_full_table(mechanism):
    """Pr[(ordered indices, bits) | x] over every report: an ordered d-tuple of distinct buckets uniformly, then
    per index Pr[1] = 1 - T/2^32 for x's bucket and T/2^32 otherwise."""
    b, d, k = mechanism.buckets, mechanism.d, mechanism.k
    q = Fraction(mechanism.threshold, WORD)
    tuples = list(itertools.permutations(range(b), d))
    outputs = [(s, bits) for s in tuples for bits in itertools.product((0, 1), repeat=d)]
    table = []
    for x in range(k):
        bucket = x * b // k
        row = []
        for s, bits in outputs:
            probability = Fraction(1, len(tuples))
            for j, bit in zip(s, bits):
                one = 1 - q if j == bucket else q
                probability *= one if bit else 1 - one
            row.append(probability)
        table.append(row)
    return table, outputs


@pytest.mark.parametrize("mechanism", FLIPS, ids=FLIP_IDS)
def test_dbitflip_certificates_are_the_full_tables(mechanism):
    """LDP and LIP at priors (one report and the unbounded guarantee alike) against verify_table on every report;
    the ratio e^eps is (p/q)^2 with d >= 2 and p/q with d = 1."""
    table, _ = flip_full_table(mechanism)
    full = verify_table(exact(table), ld.LDP(mechanism.epsilon))
    assert full.passed and mechanism.verify().epsilon == pytest.approx(full.epsilon, abs=1e-12)
    assert mechanism.permanent_certificate().epsilon == mechanism.verify().epsilon
    ratio = Fraction(WORD - mechanism.threshold, mechanism.threshold)
    assert full.epsilon == pytest.approx(math.log(ratio) * min(2, mechanism.d), abs=1e-12)
    assert math.log(ratio) * 2 <= mechanism.epsilon < math.log((WORD - mechanism.threshold + 1)
                                                               / (mechanism.threshold - 1)) * 2
    rng = np.random.default_rng(6)
    for prior in [rng.dirichlet(np.ones(mechanism.k)) for _ in range(3)] + [np.linspace(1, 3, mechanism.k)]:
        prior = prior / prior.sum()
        reference = verify_table(exact(table), ld.LIP(30.0), prior=prior)
        assert mechanism.certificate_at(prior).epsilon == pytest.approx(reference.epsilon, abs=1e-9)
        assert mechanism.permanent_certificate_at(prior).epsilon == mechanism.certificate_at(prior).epsilon


def test_dbitflip_samples_uniform_ordered_indices_and_the_bits():
    """Ordered index pairs of perturb and of the memo (fresh keys) each within 5 sd of 1/12 (b = 4, d = 2), and
    each bit's rate within 5 sd of p or q."""
    mechanism = DBitFlipPM(2.0, 8, 4, 2)
    n = 120_000
    values = np.full(n, 3)  # bucket 1
    for reports in (mechanism.perturb(values, rng=7), mechanism.perturb_memoised(values,
                                                                                 mechanism.device_keys(n, rng=8))):
        pairs = reports[:, 0] * 4 + reports[:, 1]
        counts = np.bincount(pairs, minlength=16)
        assert counts[[0, 5, 10, 15]].sum() == 0
        share = 1 / 12
        assert np.all(np.abs(np.delete(counts, [0, 5, 10, 15]) / n - share) < 5 * math.sqrt(share * (1 - share) / n))
        own = reports[:, :2] == 1
        p, q = 1 - mechanism.threshold / WORD, mechanism.threshold / WORD
        for mask, rate in ((own, p), (~own, q)):
            observed = reports[:, 2:][mask].mean()
            assert abs(observed - rate) < 5 * math.sqrt(rate * (1 - rate) / mask.sum())


def test_dbitflip_memo_is_the_recipe_and_repeats_per_bucket():
    """Indices from the stream of "dbitflip indices" (Fisher-Yates, 4 words a step), bits from the stream of the
    bucket; the same bucket gives the same report, another bucket keeps the indices and redraws the bits."""
    mechanism = DBitFlipPM(2.0, 9, 4, 3)
    keys = mechanism.device_keys(3, rng=3)
    values = [0, 8, 5]
    memo = mechanism.permanent(values, keys)
    for device, value in enumerate(values):
        words = memo_stream(mechanism, keys[device], b"dbitflip indices")
        pool = list(range(4))
        for i in range(3):
            t = i + lemire(words[4 * i:4 * i + 4], 4 - i)
            pool[i], pool[t] = pool[t], pool[i]
        bucket = value * 4 // 9
        bits = memo_stream(mechanism, keys[device], bucket.to_bytes(8, "little"))
        expected = pool[:3] + [int(w < (WORD - mechanism.threshold if j == bucket else mechanism.threshold))
                               for j, w in zip(pool[:3], bits)]
        assert memo[device].tolist() == expected
    keys = mechanism.device_keys(4000, rng=4)
    rounds = [mechanism.perturb_memoised(np.zeros(4000, int), keys, rng=r) for r in range(3)]
    assert all(np.array_equal(rounds[0], other) for other in rounds[1:])  # no instantaneous noise
    assert np.array_equal(rounds[0], mechanism.perturb_memoised(np.ones(4000, int), keys))  # 0 and 1 share bucket 0
    moved = mechanism.perturb_memoised(np.full(4000, 8), keys)  # bucket 3
    assert np.array_equal(moved[:, :3], rounds[0][:, :3]) and not np.array_equal(moved[:, 3:], rounds[0][:, 3:])


def test_dbitflip_two_rounds_cost_one_epsilon_per_distinct_bucket():
    """Two memoised rounds enumerated (b = 3, d = 2, k = 3): histories that keep one bucket are exactly one
    report's epsilon; histories that change bucket are within 2 epsilon and exceed one; but a kept bucket and a
    changed one are told apart for sure (the report changes only with the bucket: docs/math.md §19.7)."""
    mechanism = DBitFlipPM(1.0, 3, 3, 2)
    q = Fraction(mechanism.threshold, WORD)
    tuples = list(itertools.permutations(range(3), 2))

    def bits_probability(s, bits, bucket):
        return math.prod(((1 - q) if j == bucket else q) if bit else (1 - ((1 - q) if j == bucket else q))
                         for j, bit in zip(s, bits))

    patterns = list(itertools.product((0, 1), repeat=2))
    outputs = [(s, first, second) for s in tuples for first in patterns for second in patterns]

    def joint(history):
        row = []
        for s, first, second in outputs:
            probability = Fraction(1, len(tuples)) * bits_probability(s, first, history[0])
            if history[1] == history[0]:
                probability *= int(first == second)  # the same bucket: the same report
            else:
                probability *= bits_probability(s, second, history[1])
            row.append(probability)
        return row

    same = verify_table(exact([joint((x, x)) for x in range(3)]), ld.LDP(mechanism.epsilon))
    assert same.passed and same.epsilon == pytest.approx(mechanism.verify().epsilon, abs=1e-12)
    histories = list(itertools.product(range(3), repeat=2))
    changing = verify_table(exact([joint(h) for h in histories if h[0] != h[1]]), ld.LDP(2 * mechanism.epsilon))
    assert changing.passed and changing.epsilon > mechanism.verify().epsilon + 0.1
    assert verify_table(exact([joint(h) for h in histories]), ld.LDP(30.0)).epsilon == math.inf


# ---------------------------------------------------------------------------------------------- the estimators
def test_estimators_are_unbiased_with_the_stated_variance():
    """300 seeded collections of fixed values: the estimates' mean within 5 sd of the truth and their variance
    within chi-square(299) bounds of the closed forms, computed here from p and q: L-OLH's pure variance at the
    support probabilities, dBitFlipPM's [F ((b/d)(1 + pq/(p - q)^2) - 1) + (1 - F)(b/d) pq/(p - q)^2] / n."""
    repetitions, low, high = 300, 0.76, 1.27
    olh = LongitudinalOLH(1.0, 2.0, 4, g=3)
    n = 2000
    values = np.repeat([0, 1, 2, 3], [800, 600, 400, 200])
    f = np.array([0.4, 0.3, 0.2, 0.1])
    estimates = np.array([olh.estimate(olh.perturb(values, rng=seed)).values for seed in range(repetitions)])
    p, q = olh.p, olh.q
    predicted = (f * p * (1 - p) + (1 - f) * q * (1 - q)) / (n * (p - q) ** 2)
    assert np.all(np.abs(estimates.mean(axis=0) - f) < 5 * np.sqrt(predicted / repetitions))
    ratio = estimates.var(axis=0, ddof=1) / predicted
    assert np.all((low < ratio) & (ratio < high)), ratio
    assert np.allclose(olh.variance(f, n), predicted)

    flip = DBitFlipPM(2.0, 8, 4, 2)
    buckets = np.array([0.5, 0.3, 0.2, 0.0])
    values = np.repeat([0, 2, 5, 1], [600, 600, 400, 400])  # buckets 0, 1, 2, 0: F = 0.5, 0.3, 0.2, 0
    p, q = 1 - flip.threshold / WORD, flip.threshold / WORD
    share = 4 / 2
    predicted = (buckets * (share * (1 + p * q / (p - q) ** 2) - 1) + (1 - buckets) * share * p * q / (p - q) ** 2) / n
    half = math.exp(1.0)  # e^(eps/2): the published form agrees to the thresholds' 2^-32
    assert np.allclose(predicted, (share * half / (half - 1) ** 2 + buckets * (share - 1)) / n, rtol=1e-6)
    estimates = np.array([flip.estimate(flip.perturb(values, rng=seed)).values for seed in range(repetitions)])
    assert np.all(np.abs(estimates.mean(axis=0) - buckets) < 5 * np.sqrt(predicted / repetitions))
    ratio = estimates.var(axis=0, ddof=1) / predicted
    assert np.all((low < ratio) & (ratio < high)), ratio
    assert np.allclose(flip.variance(np.bincount(values, minlength=8) / n, n), predicted)
    assert np.allclose(flip.rounds_variance(np.bincount(values, minlength=8) / n, n, rounds=7), predicted)


def test_l_olh_rounds_variance_matches_simulation():
    """150 collections of 4 memoised rounds of 2,000 devices with unchanged values: the variance of the rounds'
    average against (V_1 + 3 V_perm) / 4, V_perm the pure variance at the permanent stage's support probabilities
    (p1, c p1 + (1 - c) lie1), computed here from the rebuilt permanent table."""
    mechanism = LongitudinalOLH(1.0, 2.0, 3, g=4)
    n, rounds, repetitions = 2000, 4, 150
    values = np.repeat([0, 1, 2], [1000, 600, 400])
    f = np.array([0.5, 0.3, 0.2])
    permanent = grr_stage_table(mechanism.stages.permanent_threshold, 4)
    c = counted_collision(4)
    p1, q1 = float(permanent[0][0]), float(c * permanent[0][0] + (1 - c) * permanent[0][1])
    v_perm = (f * p1 * (1 - p1) + (1 - f) * q1 * (1 - q1)) / (n * (p1 - q1) ** 2)
    predicted = (mechanism.variance(f, n) + (rounds - 1) * v_perm) / rounds
    assert np.allclose(mechanism.rounds_variance(f, n, rounds), predicted)
    averages = []
    for repetition in range(repetitions):
        keys = mechanism.device_keys(n, rng=500 + repetition)
        reports = [mechanism.perturb_memoised(values, keys, rng=rounds * repetition + r) for r in range(rounds)]
        averages.append(ld.rounds.average(mechanism, reports).values)
    ratio = np.var(averages, axis=0, ddof=1) / predicted
    assert np.all((0.68 < ratio) & (ratio < 1.38)), ratio  # chi-square(149) / 149 at about 1e-4 either side


# ------------------------------------------------------------------------------------ budgets and many rounds
def test_memoised_rounds_count_the_permanent_certificate_and_rounds_combine():
    """compose counts 30 memoised rounds as the permanent certificate (docs/math.md §19.1), 30 fresh ones as 30
    reports; ld.rounds estimates a change of bucket of a quarter of the devices within 4 standard errors."""
    for mechanism in (LongitudinalOLH(0.5, 2.0, 6), DBitFlipPM(1.0, 8, 4, 2)):
        permanent = mechanism.permanent_certificate().epsilon
        assert ld.compose([mechanism] * 30, memoised=True).epsilon == permanent
        assert ld.compose([mechanism] * 30).epsilon == pytest.approx(30 * mechanism.verify().epsilon, rel=1e-12)
    flip = DBitFlipPM(2.0, 8, 4, 2)
    n = 40_000
    keys = flip.device_keys(n, rng=9)
    before = np.zeros(n, dtype=int)
    after = np.where(np.arange(n) < n // 4, 7, 0)  # a quarter move from bucket 0 to bucket 3
    change = ld.rounds.change(flip, flip.perturb_memoised(before, keys), flip.perturb_memoised(after, keys))
    assert np.all(np.abs(change.values - [-0.25, 0.0, 0.0, 0.25]) < 4 * change.standard_errors)


# --------------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(("build", "match"), [
    (lambda: LongitudinalOLH(2.0, 1.0, 4), "epsilon is 2.0; one report's guarantee is at most"),
    (lambda: LongitudinalOLH(1.0, 2.0, 4, g=1), "g is 1"),
    (lambda: LongitudinalOLH(1.0, 2.0, 4, g=2**21), "g is 2097152"),
    (lambda: LongitudinalOLH(1e-9, 1e-9, 4, g=2**20), "g is 1048576; with epsilon"),
    (lambda: DBitFlipPM(1.0, 4, 5, 1), "buckets is 5"),
    (lambda: DBitFlipPM(1.0, 8, 4, 5), "d is 5"),
    (lambda: DBitFlipPM(1.0, 2**20, 2**17, 1), "buckets is 131072"),
    (lambda: DBitFlipPM(1.0, 200, 100, 65), "d is 65"),
    (lambda: DBitFlipPM(0.0, 8, 4, 2), "epsilon"),
])
def test_bad_parameters_are_refused(build, match):
    with pytest.raises(ld.ValidationError, match=match):
        build()


def test_bad_reports_and_keys_are_refused():
    flip = DBitFlipPM(1.0, 8, 4, 2)
    with pytest.raises(ld.ValidationError, match="samples an index twice"):
        flip.estimate(np.array([[1, 1, 0, 1]]))
    with pytest.raises(ld.ValidationError, match="bits"):
        flip.estimate(np.array([[1, 2, 0, 2]]))
    with pytest.raises(ld.ValidationError, match="indices"):
        flip.estimate(np.array([[1, 4, 0, 1]]))
    with pytest.raises(ld.ValidationError, match=r"reports has shape \(1, 3\)"):
        flip.estimate(np.array([[1, 2, 0]]))
    olh = OLHS[0]
    reports = olh.perturb([0, 1], rng=0)
    reports["a"][0] = 0
    with pytest.raises(ld.ValidationError, match=r"reports\['a'\]\[0\] is 0"):
        olh.estimate(reports)
    keys = olh.device_keys(2, rng=0)
    with pytest.raises(ld.ValidationError, match="keys has 2 rows"):
        olh.perturb_memoised([0, 1, 2], keys)
    with pytest.raises(ld.ValidationError, match="keys has shape"):
        flip.perturb_memoised([0, 1], keys.astype(np.int64))
    with pytest.raises(ld.ValidationError, match="values"):
        flip.perturb_memoised([0, 8], keys)
