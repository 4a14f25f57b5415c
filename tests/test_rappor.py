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
    reports = rappor.perturb(values, rng=2)
    estimate = rappor.estimate(reports)
    share, error = rappor.unlisted_mass(reports)
    assert share > 4 * error  # one unlisted value of a quarter of the users: seen in the cells no candidate uses
    assert f"users outside the list, estimated from the cells no candidate uses: {share:.3f}" in estimate.note


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
    ({"f": 0.01, "h": 4}, r"f, p, q and h give epsilon_permanent = 42.3.*; it must be at most 30"),
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


@pytest.mark.parametrize("grouped", [True, False])
def test_the_bit_counts_are_the_reports_bits_counted_one_by_one(monkeypatch, grouped):
    """The statistics (per cohort: reports, and the ones of each bit) equal a count made report by report from the
    packed bytes, on the grouped path (one column sum per cohort) and on the np.add.at path it falls back to."""
    from lipdesign.mechanisms import hashed_bits

    if not grouped:  # np.add.at when more cohorts are present than GROUPED_COHORTS and n / 256
        monkeypatch.setattr(hashed_bits, "GROUPED_COHORTS", 0)
    rappor = RAPPOR(f=0.5, p=0.25, q=0.75, m=13, h=2, cohorts=5, seed=3)
    users = np.array(WORDS, dtype=object)[np.random.default_rng(0).integers(0, len(WORDS), 3000 if grouped else 800)]
    reports = rappor.perturb(users, rng=1)
    reports = reports[reports[:, 0] != 2]  # cohort 2 absent
    expected_reports, expected_bits = np.zeros(5, dtype=np.int64), np.zeros((5, 13), dtype=np.int64)
    for report in reports.tolist():
        expected_reports[report[0]] += 1
        for bit in range(13):
            expected_bits[report[0], bit] += (report[2 + bit // 8] >> (bit % 8)) & 1
    aggregate = rappor.aggregate(reports)
    assert np.array_equal(aggregate.statistics["cohort_reports"], expected_reports)
    assert np.array_equal(aggregate.statistics["bit_counts"], expected_bits)


# ---------------------------------------------------------------------------- memoisation (docs/math.md §16.5)
def chacha20_reference(key_words, counter, nonce):
    """RFC 8439 §2.3 written out in Python integers, the original layout: a 64-bit counter in words 12-13 and a
    64-bit nonce in words 14-15."""
    mask = 2**32 - 1
    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *key_words,
             counter & mask, counter >> 32, nonce & mask, nonce >> 32]
    x = list(state)

    def quarter(a, b, c, d):
        for (p, q, r), shift in zip(((a, b, d), (c, d, b), (a, b, d), (c, d, b)), (16, 12, 8, 7)):
            x[p] = (x[p] + x[q]) & mask
            x[r] ^= x[p]
            x[r] = ((x[r] << shift) | (x[r] >> (32 - shift))) & mask

    for _ in range(10):
        for indices in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15), (0, 5, 10, 15),
                        (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
            quarter(*indices)
    return [(a + b) & mask for a, b in zip(x, state)]


def test_the_chacha20_block_is_rfc_8439s():
    from lipdesign.chacha import block

    key = list(np.frombuffer(bytes(range(32)), dtype="<u4"))
    nonce = np.frombuffer(bytes.fromhex("000000090000004a00000000"), dtype="<u4")
    out = block(np.array(key, np.uint32), np.concatenate(([1], nonce))[None, :].astype(np.uint32))[0]
    # RFC 8439 §2.3.2, the block after the 20 rounds and the addition
    assert [f"{w:08x}" for w in out] == ["e4e7f110", "15593bd1", "1fdd0f50", "c47120a3", "c7f4d1c7", "0368c033",
                                         "9aaa2204", "4e6cd4c3", "466482d2", "09aa9f07", "05d7c214", "a2028bd9",
                                         "d19c12b5", "b94e16de", "e883d0cb", "4e3c50a2"]


def test_a_device_memoises_from_its_key_as_the_recipe_says():
    """The permanent response of docs/runtime.md §12, recomputed from the reference ChaCha20: the stream keyed by
    the device key with the value's keyed BLAKE2b digest as nonce, word i against T and 2T; the cohort from block
    2^63, which no value's words reach."""
    import hashlib

    rappor = RAPPOR(f=0.5, p=0.5, q=0.75, m=40, h=2, cohorts=4, seed=6)
    keys = RAPPOR.device_keys(3, rng=1)
    values = ["the", "héllo", "the"]
    memo = rappor.permanent(values, keys)
    for device, value in enumerate(values):
        key_words = [int(word) for word in keys[device]]
        cohort = (chacha20_reference(key_words, 2**63, 0)[0] * 4) >> 32  # block 2^63, nonce 0
        assert rappor.device_cohorts(keys)[device] == cohort
        key_bytes = b"".join(word.to_bytes(4, "little") for word in key_words)
        person = bytes.fromhex(rappor.fingerprint)[:16]
        nonce = int.from_bytes(hashlib.blake2b(value.encode(), digest_size=8, key=key_bytes, person=person).digest(),
                               "little")
        words = chacha20_reference(key_words, 0, nonce) + chacha20_reference(key_words, 1, nonce) + \
            chacha20_reference(key_words, 2, nonce)
        threshold = rappor.permanent_threshold
        bits = rappor.filters([value], [cohort])[0]
        expected = [True if w < threshold else False if w < 2 * threshold else bool(bit)
                    for w, bit in zip(words[:40], bits)]
        assert memo[device].tolist() == expected


def test_memoised_permanent_responses_have_the_permanent_distribution():
    """Over 20,000 devices holding one value, a bit of its filter is 1 in the memo with probability 1 - f/2 and any
    other bit with f/2 (each within 5 sd), and each device's memo is the same at every call."""
    rappor = RAPPOR(f=0.4, p=0.5, q=0.75, m=24, h=2, cohorts=1, seed=8)
    keys = RAPPOR.device_keys(20_000, rng=2)
    memo = rappor.permanent(["word"] * 20_000, keys)
    assert np.array_equal(memo, rappor.permanent(["word"] * 20_000, keys))
    inside = rappor.filters(["word"], [0])[0]
    half_f = float(Fraction(rappor.permanent_threshold, 2**32))
    rates = memo.mean(axis=0)
    sd = math.sqrt(half_f * (1 - half_f) / 20_000)
    assert np.all(np.abs(rates[inside] - (1 - half_f)) < 5 * sd)
    assert np.all(np.abs(rates[~inside] - half_f) < 5 * sd)


def test_many_rounds_of_one_value_reveal_the_memo_and_no_more():
    """The averaging attack: 3,000 memoised reports of one device recover its permanent response B' (every bit's
    mean is within 5 sd of q or p as B' says), so they reveal exactly what B' reveals; for any other value the
    likelihood ratio of that B' is at most e^epsilon_permanent."""
    rappor = RAPPOR(f=0.5, p=0.25, q=0.75, m=32, h=2, cohorts=1, seed=9)
    key = RAPPOR.device_keys(1, rng=3)
    rounds = 3000
    reports = rappor.perturb_memoised(["secret"] * rounds, np.repeat(key, rounds, axis=0), rng=0)  # one device
    _, bits = rappor.unpack(reports)
    memo = rappor.permanent(["secret"], key)[0]
    q, p = float(rappor.q_threshold) / 2**32, float(rappor.p_threshold) / 2**32
    expected = np.where(memo, q, p)
    assert np.all(np.abs(bits.mean(axis=0) - expected) < 5 * np.sqrt(expected * (1 - expected) / rounds))
    recovered = bits.mean(axis=0) > (p + q) / 2
    assert np.array_equal(recovered, memo)
    half_f = Fraction(rappor.permanent_threshold, 2**32)

    def likelihood(value):
        filter_bits = rappor.filters([value], [0])[0]
        return math.prod((1 - half_f) if kept == bit else half_f for kept, bit in zip(recovered, filter_bits))

    for other in ("other", "words", "x"):
        ratio = likelihood("secret") / likelihood(other)
        assert math.log(ratio) <= rappor.epsilon_permanent


def test_a_long_list_is_decoded_by_conjugate_gradients_as_the_dense_solve_does(monkeypatch):
    """Past DENSE_CANDIDATES the counts come from conjugate gradients on G = A^T A, never formed: the same counts as
    the dense solve, and the same standard errors (given the cohorts) for the largest estimates."""
    import lipdesign.mechanisms.hashed_bits as hashed_bits

    words = [f"w{i}" for i in range(60)]
    rappor = RAPPOR(f=0.25, p=0.3, q=0.7, m=64, h=2, cohorts=8, seed=4, candidates=words)
    weights = 1 / np.arange(1, 61)
    users = np.array(words, dtype=object)[np.random.default_rng(0).choice(60, size=30_000, p=weights / weights.sum())]
    aggregate = rappor.aggregate(rappor.perturb(users, rng=1))
    monkeypatch.setattr(hashed_bits, "MAX_COHORT_TERM", 0)  # the dense path without the cohort draw's term
    dense = rappor.estimate(aggregate)
    monkeypatch.setattr(hashed_bits, "DENSE_CANDIDATES", 10)
    sparse = rappor.estimate(aggregate)
    assert "conjugate gradients" in sparse.note and "conjugate gradients" not in dense.note
    assert np.allclose(sparse.values, dense.values, rtol=0, atol=1e-10)
    listed = np.isfinite(sparse.standard_errors)
    assert listed.sum() == hashed_bits.SPARSE_ERRORS
    assert np.array_equal(np.flatnonzero(listed), np.sort(np.argsort(-dense.values)[:hashed_bits.SPARSE_ERRORS]))
    assert np.allclose(sparse.standard_errors[listed], dense.standard_errors[listed], rtol=1e-5)


def test_values_that_share_a_public_hash_still_get_independent_memos():
    """The memo's nonce is keyed by the device (BLAKE2b): two values built to collide under the public string hash
    (so a server could choose them) get different nonces and independent-looking permanent responses, whose bits
    differ where their filters agree about as often as independent memos do, 2 (f/2)(1 - f/2)."""
    from lipdesign.strings import MIX_1, MIX_2, byte_words, hash_key, string_hash

    def mix(z):
        z = ((z ^ (z >> 30)) * MIX_1) % 2**64
        z = ((z ^ (z >> 27)) * MIX_2) % 2**64
        return z ^ (z >> 31)

    key = int(hash_key(1, [0])[0])  # any public 64-bit key: build two 16-byte strings with one hash under it
    start = mix(key ^ 16)
    first = b"prefix01AAAAAAAA"
    target = mix(start ^ int.from_bytes(first[:8], "little")) ^ int.from_bytes(first[8:], "little")
    second = next(p + w.to_bytes(8, "little") for p, w in
                  ((f"p{i:07d}".encode(), target ^ mix(start ^ int.from_bytes(f"p{i:07d}".encode(), "little")))
                   for i in range(100_000)) if all(0 < c < 128 for c in w.to_bytes(8, "little")))
    hashes = string_hash(*byte_words([first, second]), [key])
    assert hashes[0, 0] == hashes[1, 0]  # they do collide under the public hash
    rappor = RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=1, seed=1)
    keys = RAPPOR.device_keys(4000, rng=0)
    memos = [rappor.permanent([value.decode()] * 4000, keys) for value in (first, second)]
    filters = rappor.filters([first.decode(), second.decode()], [0, 0])
    agree = filters[0] == filters[1]
    differ = (memos[0][:, agree] != memos[1][:, agree]).mean()
    assert abs(differ - 2 * 0.25 * 0.75) < 0.02


def test_one_time_rappor_without_instantaneous_noise_runs():
    """p = 0 and q = 1 (pure-ldp's RAPPOR): the threshold of q is 2^32 itself, compared in 64 bits (it crashed in
    32), and one report is then the permanent response, so the two epsilons agree."""
    rappor = RAPPOR(f=0.5, p=0.0, q=1.0, m=16, h=2, cohorts=2, seed=1, candidates=WORDS[:4])
    assert rappor.q_threshold == 2**32
    assert math.isclose(rappor.epsilon, rappor.epsilon_permanent, rel_tol=1e-12)
    reports = rappor.perturb(WORDS[:4] * 50, rng=0)
    assert rappor.estimate(reports).values.shape == (4,)
    keys = RAPPOR.device_keys(4, rng=0)
    assert np.array_equal(rappor.unpack(rappor.perturb_memoised(WORDS[:4], keys, rng=0))[1],
                          rappor.permanent(WORDS[:4], keys).astype(np.uint8))  # S = B' exactly


def test_variance_takes_the_number_of_users():
    rappor = RAPPOR(f=0.5, p=0.5, q=0.75, m=16, h=2, cohorts=2, seed=1, candidates=["hello", "b", "c"])
    values = ["hello", "b", "c"]
    assert rappor.variance(values, n=3).shape == (3,)
    with pytest.raises(ld.ValidationError, match=r"n is 5; .* whose number \(3\) is n"):
        rappor.variance(values, n=5)


def test_a_long_list_with_candidates_no_decoder_separates_is_refused(monkeypatch):
    """Conjugate gradients converge even on a singular G (the right-hand side lies in its range), so a long list
    is checked first: two candidates with the same filter everywhere, or more candidates than cells, are refused."""
    import lipdesign.mechanisms.hashed_bits as hashed_bits

    monkeypatch.setattr(hashed_bits, "DENSE_CANDIDATES", 2)
    words = [f"w{i}" for i in range(200)]
    rappor = RAPPOR(f=0.25, p=0.3, q=0.7, m=64, h=1, cohorts=1, seed=3)
    buckets = [int(np.flatnonzero(rappor.filters([w], [0])[0])[0]) for w in words]
    first = next(i for i in range(200) if buckets.index(buckets[i]) != i)
    twins = [words[buckets.index(buckets[first])], words[first]]  # one bucket: the same filter
    with pytest.raises(ld.ValidationError, match=r"have the same filter in every cohort: no decoder can tell"):
        rappor.with_candidates(twins + ["x", "y"]).estimate(rappor.perturb(twins * 10, rng=0))
    # 2 cohorts of 4 bits, one hash: at most 8 cells, 16 distinct filters; 9 distinct filters cannot be separated
    small = RAPPOR(f=0.25, p=0.3, q=0.7, m=4, h=1, cohorts=2, seed=3)
    signatures = {}
    for word in words:
        key = tuple(int(np.flatnonzero(small.filters([word], [c])[0])[0]) for c in range(2))
        signatures.setdefault(key, word)
    distinct = list(signatures.values())[:9]
    assert len(distinct) == 9
    with pytest.raises(ld.ValidationError, match=r"candidates holds 9 strings; their filters use only [78] "):
        small.with_candidates(distinct).estimate(small.perturb(distinct, rng=0))


@pytest.mark.parametrize("h", [1, 2, 4])
@pytest.mark.parametrize("permanent, one", [(4.0, 1.0), (2.0, None), (8.0, 3.0)])
def test_for_epsilon_certifies_what_it_is_asked_for_whatever_h(h, permanent, one):
    """f follows from epsilon_permanent and h (filters of two strings differ in up to 2h bits): the certified
    epsilons are at or just below the ones asked for (within the 2^-32 grid of the thresholds)."""
    rappor = RAPPOR.for_epsilon(permanent, one, m=32, h=h, cohorts=2, seed=1)
    assert permanent - 1e-6 <= rappor.epsilon_permanent <= permanent
    assert rappor.permanent_certificate()["passed"] and rappor.verify().passed
    target = permanent if one is None else one
    assert target - 1e-6 <= rappor.epsilon <= target


def test_a_conversion_that_leaves_out_h_runs_at_h_times_epsilon():
    """pure-ldp 1.2.0's RAPPOR sets f = 1 / (0.5 e^(eps/2) + 0.5) whatever the number of hashes (its
    convert_eps_to_f, restated here): with h = 2 hashes the certified epsilon of any number of reports is 2 eps."""
    epsilon = 2.0
    f = 1 / (0.5 * math.exp(epsilon / 2) + 0.5)
    leaky = RAPPOR(f=f, p=0.0, q=1.0, m=32, h=2, cohorts=1, seed=1)
    assert math.isclose(leaky.epsilon_permanent, 2 * epsilon, rel_tol=1e-6)
    assert math.isclose(RAPPOR.for_epsilon(epsilon, m=32, h=2, seed=1).epsilon_permanent, epsilon, rel_tol=1e-6)


def test_for_epsilon_refuses_one_report_above_the_unbounded_guarantee():
    with pytest.raises(ld.ValidationError, match=r"epsilon is 3.0; one report's guarantee is at most the unbounded"):
        RAPPOR.for_epsilon(2.0, 3.0, seed=1)


def test_the_estimate_adds_the_cohort_draws_variance(monkeypatch):
    """Where candidates share bits the users' cohort draw adds variance (docs/math.md §16.4): the estimate's errors
    include it, so they exceed the bits' term alone wherever it is positive, and never fall below it."""
    import lipdesign.mechanisms.hashed_bits as hashed_bits

    rappor = RAPPOR(f=0.25, p=0.3, q=0.7, m=24, h=2, cohorts=3, seed=11, candidates=WORDS[:12])
    aggregate = rappor.aggregate(rappor.perturb(zipf_words(20_000, np.random.default_rng(0))[:20_000], rng=1))
    with_term = rappor.estimate(aggregate).standard_errors
    monkeypatch.setattr(hashed_bits, "MAX_COHORT_TERM", 0)
    bits_only = rappor.estimate(aggregate).standard_errors
    assert np.all(with_term >= bits_only) and np.any(with_term > bits_only * (1 + 1e-6))


def test_a_key_used_by_two_mechanisms_gives_each_its_own_memos():
    """The memo's nonce is personalised with the mechanism's fingerprint: the same device key and value give the
    same permanent words under one mechanism and unrelated ones under another (with the same words, a pair of
    reports from two mechanisms could rule values out with certainty)."""
    keys = RAPPOR.device_keys(2_000, rng=5)
    values = ["the"] * 2_000
    first, second = (RAPPOR(f=0.5, p=0.5, q=0.75, m=64, h=2, cohorts=4, seed=seed) for seed in (5, 6))
    words = [np.concatenate([chunk[2] for chunk in mechanism._memo_words(values, keys)])
             for mechanism in (first, second)]
    again = np.concatenate([chunk[2] for chunk in first._memo_words(values, keys)])
    assert np.array_equal(words[0], again)
    assert np.mean(words[0] == words[1]) < 1e-3  # independent 32-bit words agree with probability 2^-32
