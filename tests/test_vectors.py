"""Test vectors (lipdesign.vectors) and the device recipes of docs/runtime.md.

``Device`` below is an independent implementation of docs/runtime.md: it reads only a vector file's ``device``
numbers, the mechanism's parameters and each case's words (no lipdesign sampling code), and must produce every
recorded report from exactly the recorded words."""

import hashlib
import json
import math

import numpy as np
import pytest
from test_rappor import chacha20_reference

import lipdesign as ld
from lipdesign import vectors
from lipdesign.designer.classes import class_symmetric_design
from lipdesign.designer.longitudinal import design_longitudinal
from lipdesign.errors import FormatError, ValidationError
from lipdesign.mechanisms import GRR, OLH, OUE, RSFD, SMP, HarmonyNumeric, Hybrid, Piecewise, TablePerturber
from lipdesign.mechanisms.registry import families, family_class
from lipdesign.mechanisms.sampling import secure_generator

SEED = 7


def designed():
    return ld.design(ld.Prior([0.2, 0.3, 0.5], labels=["low", "mid", "high"]), ld.LIP(1.0))


MECHANISMS = [family_class(name).example() for name in families()] + [
    designed(), HarmonyNumeric(2.0, 5, coordinates="public", seed=11),
    OLH(2.0, 20, pool=16, seed=99),  # a public pool: reports (s, y)
    Piecewise(6.0, d=3), Hybrid(7.5, d=4),  # 2 and 3 attributes per report (epsilon >= 5)
    class_symmetric_design(ld.Prior([0.3, 0.2, 0.2, 0.1, 0.1, 0.1]), 1.0)[0],  # 3 classes, several orbits
    SMP(2.0, [2, 5, 3]), RSFD(1.0, [2, 9, 3], "ue-zero"), RSFD(2.0, [3, 2, 5], "ue-random"),  # multi-attribute
    design_longitudinal([0.4, 0.3, 0.2, 0.1], 0.5, 1.5, rounds=30)]  # a designed pair that refills
IDS = [f"{m.family}-{i}" for i, m in enumerate(MECHANISMS)]


@pytest.fixture(scope="module", params=range(len(MECHANISMS)), ids=IDS)
def case(request):
    mechanism = MECHANISMS[request.param]
    document = json.loads(json.dumps(vectors.test_vectors(mechanism, n=12, seed=SEED)))  # through JSON text
    return mechanism, document


def test_every_family_has_device_numbers():
    assert {m.family for m in MECHANISMS} == set(families())
    assert all(m.device_numbers() for m in MECHANISMS)


def test_replay_reproduces_every_report(case):
    mechanism, document = case
    assert vectors.check_vectors(mechanism, document) == []
    assert document["fingerprint"] == mechanism.fingerprint and len(document["cases"]) == 12


def test_words_are_the_chacha20_stream(case):
    """Consecutive perturb calls on one ChaCha20 generator keyed with the seed draw the cases' words in turn."""
    mechanism, document = case
    generator = secure_generator(SEED)
    for index, recorded in enumerate(document["cases"]):
        value = recorded["input"]
        values = [mechanism.input_domain.labels[value]] if mechanism.input_domain.kind == "categorical" else [value]
        user_ids = None if "user_id" not in recorded else [recorded["user_id"]]
        report = mechanism.perturb(values, rng=generator, user_ids=user_ids)[0]
        expected = recorded["report"]
        got = {name: report[name].item() for name in report.dtype.names} if report.dtype.names else report.tolist()
        assert got == expected, index


def test_wrong_report_or_words_fail(case):
    mechanism, document = case
    wrong = json.loads(json.dumps(document))
    report = wrong["cases"][3]["report"]
    if isinstance(report, dict):
        report[next(iter(report))] += 1
    elif isinstance(report, list):
        report[-1] = report[-1] + 1
    else:
        wrong["cases"][3]["report"] = report + 1
    expected = f"case 3: report {document['cases'][3]['report']}, the vector records {wrong['cases'][3]['report']}"
    assert vectors.check_vectors(mechanism, wrong) == [expected]
    short = json.loads(json.dumps(document))
    short["cases"][5]["words"].pop()
    failures = vectors.check_vectors(mechanism, short)
    assert len(failures) == 1 and failures[0].startswith("case 5: drew ")
    longer = json.loads(json.dumps(document))
    longer["cases"][0]["words"].append("00000000")
    assert vectors.check_vectors(mechanism, longer)[0].startswith("case 0: drew ")


def test_device_reproduces_every_case(case):
    _, document = case
    for index, recorded in enumerate(document["cases"]):
        device = Device(document, recorded)
        assert device.report() == recorded["report"], index
        assert device.used == len(recorded["words"]), index


MEMOISED = ("l-grr", "l-ue", "rappor", "l-olh", "dbitflip", "l-table")


def test_memoising_families_record_memo_cases_and_a_device_reproduces_them(case):
    """Families that memoise a permanent response record, per case, a device key and that response (docs/runtime.md
    §9). A device written from docs/runtime.md §12 and §15 (hashlib's BLAKE2b, the reference ChaCha20 of
    tests/test_rappor.py, then the permanent stage fed the stream's words) reproduces every one; a changed response
    is reported by check_vectors."""
    mechanism, document = case
    assert ("memo" in document) == (mechanism.family in MEMOISED), "a memoising family needs its device recipe here"
    if mechanism.family not in MEMOISED:
        return
    assert len(document["memo"]) == len(document["cases"])
    for recorded in document["memo"]:
        key = bytes.fromhex(recorded["key"])
        key_words = [int.from_bytes(key[4 * i:4 * i + 4], "little") for i in range(8)]
        value = recorded["input"]
        if mechanism.family in ("l-olh", "dbitflip"):
            assert hashed_memo(document, key, value) == recorded["permanent"]
            continue
        data = value.encode() if isinstance(value, str) else value.to_bytes(8, "little")
        person = bytes.fromhex(document["fingerprint"])[:16]
        nonce = int.from_bytes(hashlib.blake2b(data, digest_size=8, key=key, person=person).digest(), "little")
        stream = [word for block in range(8) for word in chacha20_reference(key_words, block, nonce)]
        device = Device(document, {"words": [f"{word:08x}" for word in stream], "input": value})
        if mechanism.family == "l-grr":
            permanent = device.grr_stage(value, document["device"]["permanent_threshold"])
        elif mechanism.family == "l-table":
            permanent = device.cumulative_draw(document["device"]["permanent_counts"][value], device.u32())
        elif mechanism.family == "l-ue":
            one, zero = document["device"]["permanent_thresholds"]
            permanent = [int(device.u32() < (one if j == value else zero)) for j in range(document["device"]["k"])]
        else:
            cohort = (chacha20_reference(key_words, 2**63, 0)[0] * document["mechanism"]["parameters"]["cohorts"]) >> 32
            filter_bits = device.filter_bits(cohort, value)
            threshold = document["device"]["permanent_threshold"]
            permanent = [1 if u < threshold else 0 if u < 2 * threshold else int(i in filter_bits)
                         for i, u in enumerate(device.u32() for _ in range(document["mechanism"]["parameters"]["m"]))]
        assert permanent == recorded["permanent"]
    wrong = json.loads(json.dumps(document))
    first = wrong["memo"][0]["permanent"]
    wrong["memo"][0]["permanent"] = [1 - first[0], *first[1:]] if isinstance(first, list) else first + 1
    assert vectors.check_vectors(mechanism, wrong) == [
        f"memo case 0: permanent response {document['memo'][0]['permanent']}, the vector records "
        f"{wrong['memo'][0]['permanent']}"]


def hashed_memo(document, key, value):
    """docs/runtime.md §15 for l-olh and dbitflip: the first words from the stream of the fixed memo string (the hash,
    or the sampled indices), then the permanent stage from the stream of the bucket's 8 bytes."""
    key_words = [int.from_bytes(key[4 * i:4 * i + 4], "little") for i in range(8)]
    person = bytes.fromhex(document["fingerprint"])[:16]

    def stream(data):
        nonce = int.from_bytes(hashlib.blake2b(data, digest_size=8, key=key, person=person).digest(), "little")
        return [f"{word:08x}" for block in range(8) for word in chacha20_reference(key_words, block, nonce)]

    n = document["device"]
    if document["family"] == "l-olh":
        a, b = Device(document, {"words": stream(b"l-olh hash"), "input": value}).hash_of()
        bucket = (a * value + b) % n["prime"] % n["g"]
        device = Device(document, {"words": stream(bucket.to_bytes(8, "little")), "input": value})
        return [a, b, device.grr_stage(bucket, n["permanent_threshold"], n["g"])]
    indices = Device(document, {"words": stream(b"dbitflip indices"), "input": value}).sampled()
    bucket = value * n["buckets"] // n["k"]
    device = Device(document, {"words": stream(bucket.to_bytes(8, "little")), "input": value})
    return indices + [int(device.u32() < (2**32 - n["threshold"] if j == bucket else n["threshold"])) for j in indices]


def test_words_per_report(case):
    """The number of 32-bit words per report that docs/runtime.md states for each family (bounded integers may
    redraw, with probability below 2^-26 for the ranges here: the fixed seed draws none)."""
    mechanism, document = case
    n, family = document["device"], mechanism.family
    for recorded in document["cases"]:
        used, report = len(recorded["words"]), recorded["report"]
        if family == "duchi":  # 2 words per coin, then rounds of ceil(d / 4) words
            base = 2 * n["d"] + 2
            assert used > base and (used - base) % -(-n["d"] // 4) == 0
            continue
        if family == "oue":  # ceil(k / 8) 64-bit draws, and one per tie (the device test counts them exactly)
            assert used >= 2 * -(-n["k"] // 8) and used % 2 == 0
            continue
        if family in ("unary", "the"):
            expected = 2 * n["k"] + 2
        elif family == "she":  # one word per entry
            expected = n["k"]
        elif family == "laplace":
            expected = 4 * n["d"]
        elif family == "harmony-numeric":
            expected = 3 if n["coordinates"] == "private" else 2
        elif family == "harmony-mixed":
            expected = 3 + (n["attributes"][report["attribute"]] != "numeric")
        elif family == "piecewise":
            expected = 2 * n["d"] + 6 * n["attributes"]
        elif family == "hybrid":
            expected = 2 * n["d"] + 2 * n["attributes"] + (8 * n["attributes"] if n["piecewise_probability"] else 0)
        elif family == "olh":
            expected = 5 if "pool" not in n else 4  # (a, b, y) or (s, y) with S >= 2
        elif family == "class-lip":  # two uniforms, z (unless free; none from a pool of 1), then Fisher-Yates steps
            bits = [(byte >> shift) & 1 for byte in report[2:] for shift in range(8)]
            k, x, o = n["k"], recorded["input"], report[0] + 256 * report[1]
            classes = n["classes"]
            own = bits[k + x] == 1
            z = bits.index(1, k) - k
            expected = 4 + (not own and sum(1 for v in range(k) if classes[v] == n["free"][o] and v != x) > 1)
            for d, count in enumerate(n["high"][o]):
                pool = sum(1 for v in range(k) if classes[v] == d and v not in (x, z))
                steps = count - (bits[x] == 1 and classes[x] == d) if count else 0
                expected += steps - (steps == pool and steps > 0)
        elif family == "rappor":  # the cohort (none for one cohort), then m permanent and m instantaneous words
            parameters = document["mechanism"]["parameters"]
            expected = (parameters["cohorts"] > 1) + 2 * parameters["m"]
        elif family == "spl":  # a coin and a bounded integer per attribute
            expected = 3 * len(n["k"])
        elif family == "smp":  # a double for the attribute, then its coin and bounded integer
            expected = 5
        elif family == "rsfd":  # the attribute, the fakes (but "ue-zero"), then GRR's coin and integer or the bits
            k, variant = n["k"], n["variant"]
            fakes = 0 if variant == "ue-zero" else len(k)
            expected = 1 + fakes + (3 if variant == "grr" else sum(2 * (size + 1) for size in k))
        elif family == "hcms":  # the row (none for one row), the coefficient, then one word
            expected = (document["mechanism"]["parameters"]["d"] > 1) + 2
        elif family == "l-grr":  # two GRR stages: a keep word and the attempts' uniform draws each
            expected = 2 * (1 + n["attempts"])
        elif family == "l-ue":  # k permanent words, then k instantaneous words
            expected = 2 * n["k"]
        elif family == "l-table":  # the permanent word, the keep word and the refill's word
            expected = 3
        elif family == "l-olh":  # the hash's a and b (the attempts each), then two GRR stages
            expected = 2 * n["attempts"] + 2 * (1 + n["attempts"])
        elif family == "dbitflip":  # the attempts of each of d Fisher-Yates steps, then d bits
            expected = n["d"] * (n["attempts"] + 1)
        elif family in ("pem", "treehist"):  # the level and the row (none for one of either), then the oracle's
            parameters = document["mechanism"]["parameters"]
            expected = (parameters["max_bytes"] > 1) + (parameters["rows"] > 1) + (3 if family == "pem" else 2)
        elif family in ("cms", "cms-lip"):  # the row (none for one row), then m words
            parameters = document["mechanism"]["parameters"]
            expected = (parameters["d"] > 1) + parameters["m"]
        elif family in ("subset", "subset-lip"):  # a coin or uniform, [z,] then one word per Fisher-Yates step
            bits = [(byte >> shift) & 1 for byte in report for shift in range(8)]
            x = recorded["input"]
            if family == "subset":
                pool, steps, expected = n["k"] - 1, n["d"] - bits[x], 2
            else:
                own = bits[n["k"] + x] == 1
                pool, steps = (n["k"] - 1, n["j"]) if own else (n["k"] - 2, n["j"] - bits[x])
                expected = 2 + (not own)
            expected += steps - (steps == pool)  # the last step of a full shuffle draws from 0..0: no word
        else:
            expected = {"table": 2, "grr": 3, "hadamard": 3, "hashing": 3, "harmony-categorical": 3}[family]
        assert used == expected


def _constructed(mechanism, cases):
    """A vectors document of ``mechanism`` whose cases are the given (input, 32-bit words), the reports left to
    the Device (docs/runtime.md) and then replayed through the Python runtime by ``check_vectors``."""
    document = json.loads(json.dumps(vectors.test_vectors(mechanism, n=1)))
    document["cases"] = []
    for value, words in cases:
        case = {"input": value, "words": [f"{word:08x}" for word in words], "report": None}
        device = Device(document, case)
        case["report"] = device.report()
        assert device.used == len(words)  # the Device drew exactly these words
        document["cases"].append(case)
    assert vectors.check_vectors(mechanism, document) == []  # the runtime: same reports, same word counts
    return [case["report"] for case in document["cases"]]


def test_oue_ties_draw_one_more_64_bit_word_each():
    """A byte equal to hi is undecided (one more 64-bit draw: 1 when (w >> 8) < lo), except the user's own bit,
    which is 1 when its byte is below 128 (docs/runtime.md §6): k = 6, x = 0, bytes (hi, hi, hi, hi - 1, hi + 1,
    255) give bits (1, tie, tie, 1, 0, 0); the ties' words 0 and 2^64 - 1 give 1 and 0."""
    mechanism = OUE.example()
    high, low = divmod(mechanism.threshold, 2**56)
    assert mechanism.k == 6 and 0 < high < 128 and low > 0
    byte_values = [high, high, high, high - 1, high + 1, 255, 0, 0]
    word = sum(b << (8 * j) for j, b in enumerate(byte_values))
    words = [word & MASK32, word >> 32, 0, 0, MASK32, MASK32]  # 2 ceil(k / 8) + 2 per undecided bit
    no_tie = sum(b << (8 * j) for j, b in enumerate([high - 1] * 6 + [0, 0]))
    assert _constructed(mechanism, [(0, words), (0, [no_tie & MASK32, no_tie >> 32])]) == [
        [0b001011], [0b111111]]


def test_bounded_integers_redraw_below_the_threshold():
    """Lemire's rejection (docs/runtime.md §3): r = 0 gives low = 0 < t = 2^32 mod n whenever t > 0, so the value
    is drawn again; r = 2^32 - 1 gives low = 2^32 - n >= n, accepted, value n - 1."""
    grr = GRR.example()  # k = 6: t = 4
    assert grr.k == 6 and 2**32 % 6 == 4
    lie = [MASK32, MASK32, 0, MASK32]  # the coin false (m = 2^53 - 1), r = 0 refused, then r = 2^32 - 1
    keep = [0, 0, 0, 0, 5]  # the coin true; r = 0 refused twice, then r = 5: (5 * 6) >> 32 = 0
    assert _constructed(grr, [(2, lie), (2, keep)]) == [5, 2]
    olh, prime = OLH.example(), 2**31 - 1  # a in 1 + 0..P-2 (t = 4) and b in 0..P-1 (t = 2) both redrawn
    assert olh.g == 8  # a power of 2: the bounded integer in 0..g-1 never redraws
    words = [0, MASK32, 0, MASK32, 0, 0, 0]  # a = P - 1, b = P - 1, keep, lie 0: 5 words + 2 redraws
    reports = _constructed(olh, [(x, words) for x in (0, 3, 19)])
    assert reports == [{"a": prime - 1, "b": prime - 1, "y": (prime - 1 - x) % 8} for x in (0, 3, 19)]


def test_pooled_olh_device_numbers_and_pool():
    """A pooled OLH's device reads pool and seed and rebuilds hash s from them (docs/runtime.md §6), as
    ``pool_members`` does."""
    mechanism = OLH(2.0, 20, pool=16, seed=99)
    numbers = mechanism.device_numbers()
    assert numbers == {"k": 20, "g": 8, "prime": 2**31 - 1, "alpha": mechanism.alpha, "pool": 16, "seed": 99}
    a, b = mechanism.pool_members
    assert [(int(x), int(y)) for x, y in zip(a, b)] == [
        (1 + Device.public_index(99, 2 * s, 2**31 - 2), Device.public_index(99, 2 * s + 1, 2**31 - 1))
        for s in range(16)]
    assert "pool" not in OLH.example().device_numbers()
    words = [MASK32, 0, 0, 0]  # s = 15, keep, lie 0 (16 and 8 are powers of 2: no redraw)
    hashed = (int(a[15]) * 7 + int(b[15])) % (2**31 - 1) % 8
    assert _constructed(mechanism, [(7, words)]) == [{"s": 15, "y": hashed}]


@pytest.mark.parametrize("family, value, match", [
    ("grr", 9, r"case 1: vectors\['cases'\]\[1\]\['input'\] is 9; it must be an integer index in 0..5"),
    ("grr", -1, r"case 1: .*\['input'\] is -1; it must be an integer index"),
    ("grr", [1, 2], r"case 1: .*\['input'\] is \[1, 2\]; it must be an integer index"),
    ("grr", True, r"case 1: .*\['input'\] is True"),
    ("piecewise", [0.5], r"case 1: .*\['input'\] has shape \(1, 1\)"),
    ("piecewise", [0.5, 2.0], r"case 1: .*\['input'\]\[0, 1\] is 2"),
    ("harmony-mixed", 0.5, r"case 1: .*\['input'\]"),
])
def test_out_of_domain_inputs_are_refused(family, value, match):
    mechanism = family_class(family).example()
    document = json.loads(json.dumps(vectors.test_vectors(mechanism, n=3)))
    document["cases"][1]["input"] = value
    with pytest.raises(FormatError, match=match):
        vectors.check_vectors(mechanism, document)


def test_bad_documents_are_refused():
    grr, oue = family_class("grr").example(), family_class("oue").example()
    document = vectors.test_vectors(grr, n=2)
    with pytest.raises(FormatError, match="another mechanism"):
        vectors.check_vectors(oue, document)
    with pytest.raises(FormatError, match="format"):
        vectors.check_vectors(grr, {**document, "format": "lipdesign.mechanism"})
    broken = json.loads(json.dumps(document))
    broken["cases"][1]["words"][0] = "xyz"
    with pytest.raises(FormatError, match=r"\['words'\] is"):
        vectors.check_vectors(grr, broken)
    with pytest.raises(ValidationError, match="seed is -1"):
        vectors.test_vectors(grr, seed=-1)
    with pytest.raises(ValidationError, match="n is 0"):
        vectors.test_vectors(grr, n=0)
    with pytest.raises(ValidationError, match="mechanism is"):
        vectors.test_vectors("grr")


def test_write_and_read(tmp_path):
    mechanism = designed()
    path = tmp_path / "vectors.json"
    vectors.write_vectors(mechanism, path, n=5, seed=3)
    document = vectors.read_vectors(path)
    assert document == json.loads(json.dumps(vectors.test_vectors(mechanism, n=5, seed=3)))
    assert vectors.check_vectors(ld.load(_saved(mechanism, tmp_path)), document) == []


def _saved(mechanism, tmp_path):
    path = tmp_path / "m.json"
    mechanism.to_json(path)
    return path


def test_single_value_path_draws_like_the_batch():
    """One value per call (the Python-float path) gives the reports and draws of one call on all values."""
    rng = np.random.default_rng(5)
    table = rng.dirichlet(np.ones(7), size=4)
    table[0, 3] = 0.0
    table /= table.sum(axis=1, keepdims=True)
    sampler = TablePerturber(table)
    values = rng.integers(0, 4, 500)
    one = np.random.default_rng(9)
    singles = np.concatenate([sampler.perturb([x], one) for x in values])
    assert np.array_equal(singles, sampler.perturb(values, np.random.default_rng(9)))
    assert one.random() == np.random.default_rng(9).random(values.size + 1)[-1]
    assert not (singles[values == 0] == 3).any()
    mechanism = designed()  # labels go through the same sampler, one value per call
    assert [mechanism.perturb([label], rng=np.random.default_rng(i))[0] for i, label in enumerate(["low", "high"])] \
        == [sampler_draw[0] for sampler_draw in (mechanism.sampler.perturb([x], np.random.default_rng(i))
                                                 for i, x in enumerate([0, 2]))]
    with pytest.raises(ValidationError, match="values"):
        sampler.perturb([4], one)


def test_thresholds_are_the_realised_table():
    """The integer alias tables give each output the realised probability (counts of 53-bit words)."""
    sampler = designed().sampler
    start, keep_end = sampler.thresholds()
    end = np.append(start[1:], 2**53)
    counts = np.zeros(sampler.table.shape, dtype=object)
    for x in range(sampler.k):
        for j in range(sampler.n_out):
            counts[x, j] += int(keep_end[x, j] - start[j])
            counts[x, sampler.alias[x, j]] += int(end[j] - keep_end[x, j])
    assert (counts.sum(axis=1) == 2**53).all()
    assert np.array_equal(np.array(counts, dtype=float) / 2.0**53, designed().realized)
    assert np.abs(designed().realized - sampler.table).max() < 1e-15


# -- an independent device, from docs/runtime.md ------------------------------------------------------------------
MASK32, MASK64 = 2**32 - 1, 2**64 - 1


class Device:
    def __init__(self, document, case):
        self.numbers, self.case = document["device"], case
        self.parameters = document["mechanism"]["parameters"]
        self.family = document["family"]
        self.words = [int(word, 16) for word in case["words"]]
        self.used = 0

    # §2: the stream
    def u32(self):
        self.used += 1
        return self.words[self.used - 1]

    def u64(self):
        low = self.u32()
        return low | self.u32() << 32

    def coin(self, p):
        """u < p with u = (w >> 11) 2^-53, as the integer comparison (w >> 11) < ceil(p 2^53)."""
        return (self.u64() >> 11) < math.ceil(p * 2**53)

    def double(self):
        return (self.u64() >> 11) * 2.0**-53

    def below(self, n):
        """Lemire's bounded integer in 0..n-1, on 32-bit draws when n - 1 < 2^32 (§3); no draw when n = 1."""
        if n == 1:
            return 0
        bits, draw = (32, self.u32) if n - 1 <= MASK32 else (64, self.u64)
        if n - 1 == (1 << bits) - 1:
            return draw()
        product = draw() * n
        if product % (1 << bits) < n:
            while product % (1 << bits) < (1 << bits) % n:
                product = draw() * n
        return product >> bits

    def alias(self, x, tables=None):
        """The integer alias method (§4)."""
        t = tables or self.numbers
        start, n = t["slot_start"], len(t["slot_start"])
        m = self.u64() >> 11
        j = (m * n) >> 53
        if j + 1 < n and m >= start[j + 1]:
            j += 1
        return j if m < t["keep_end"][x][j] else t["alias"][x][j]

    def plus(self, t, exp_epsilon):
        """§5: Pr[+1 | t] of the one-bit mechanism."""
        return 0.5 + t * ((exp_epsilon - 1.0) / (2.0 * (exp_epsilon + 1.0)))

    @staticmethod
    def sign(projection, row, value):
        entry = row * projection["k"] + value
        word = int(projection["sign_words"][entry // 64], 16)
        return 1 - 2 * ((word >> (entry % 64)) & 1)

    def report(self):
        return getattr(self, self.family.replace("-", "_"))(self.case["input"])

    # §4-§8: the families
    def table(self, x):
        return self.alias(x)

    def grr(self, x):
        keep = self.coin(self.numbers["alpha"])
        lie = self.below(self.numbers["k"])
        return x if keep else lie

    def oue(self, x):
        k, (high, low) = self.numbers["k"], divmod(self.numbers["threshold"], 2**56)
        words = [self.u64() for _ in range(-(-k // 8))]
        byte = [(words[j // 8] >> (8 * (j % 8))) & 0xFF for j in range(k)]
        bits = [int(b < high) for b in byte]
        bits[x] = int(byte[x] < 128)
        for j in range(k):
            if j != x and byte[j] == high:  # a tie: one more word decides
                bits[j] = int((self.u64() >> 8) < low)
        return self.packed(bits)

    @staticmethod
    def packed(bits):
        """Bit j is bit j % 8 of byte j // 8."""
        return [sum(bit << (j % 8) for j, bit in enumerate(bits) if j // 8 == byte)
                for byte in range(-(-len(bits) // 8))]

    def unary(self, x):
        bits = [int(self.coin(b)) for b in self.numbers["b"]]
        bits[x] = int(self.coin(self.numbers["a"][x]))
        return self.packed(bits)

    def the(self, x):
        """§13: unary encoding with b[j] = q for every j and a[x] = p."""
        bits = [int(self.coin(self.numbers["q"])) for _ in range(self.numbers["k"])]
        bits[x] = int(self.coin(self.numbers["p"]))
        return self.packed(bits)

    def she(self, x):
        """§13: one word per entry, -T + the number of thresholds <= it, the user's entry reflected."""
        n = self.numbers
        words = [self.u32() for _ in range(n["k"])]
        entries = [sum(t <= u for t in n["thresholds"]) - n["bound"] for u in words]
        entries[x] = 1 - entries[x]
        return entries

    @staticmethod
    def public_index(seed, identifier, size):
        """§6 (pooled OLH) and §7: SplitMix64 of the identifier and the seed, then multiply-shift into 0..size-1."""
        z = (identifier + seed * 0x9E3779B97F4A7C15) & MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        z ^= z >> 31
        return ((z >> 32) * size) >> 32

    def olh(self, x):
        n = self.numbers
        prime, g = n["prime"], n["g"]
        if "pool" in n:  # a public pool: s, then the pool's hash s from the seed
            s = self.below(n["pool"])
            a, b = 1 + self.public_index(n["seed"], 2 * s, prime - 1), self.public_index(n["seed"], 2 * s + 1, prime)
        else:
            a = 1 + self.below(prime - 1)
            b = self.below(prime)
        keep = self.coin(n["alpha"])
        lie = self.below(g)
        y = (a * x + b) % prime % g if keep else lie
        return {"s": s, "y": y} if "pool" in n else {"a": a, "b": b, "y": y}

    @staticmethod
    def string_hash(key, text):
        """§12: the hash of a string's UTF-8 bytes under a 64-bit key (its length, then 8-byte little-endian words)."""
        def mix(z):
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
            return z ^ (z >> 31)

        data = text.encode("utf-8")
        z = mix(key ^ len(data))
        for start in range(0, len(data), 8):
            z = mix(z ^ int.from_bytes(data[start:start + 8].ljust(8, b"\0"), "little"))
        return z

    def key(self, index):
        """§12: the key of hash function ``index`` under the mechanism's public seed."""
        key = (self.parameters["seed"] + (index + 1) * 0x9E3779B97F4A7C15) & MASK64
        key = ((key ^ (key >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        key = ((key ^ (key >> 27)) * 0x94D049BB133111EB) & MASK64
        return key ^ (key >> 31)

    def cms(self, text):
        """§12: the row, the value's bucket in it, then m signs each flipped below the threshold."""
        m = self.parameters["m"]
        row = self.below(self.parameters["d"])
        bucket = ((self.string_hash(self.key(row), text) >> 32) * m) >> 32
        bits = [int(i == bucket) ^ int(self.u32() < self.numbers["flip_threshold"]) for i in range(m)]
        return [row & 0xFF, row >> 8, *self.packed(bits)]

    def cms_lip(self, text):
        """§12: the row, the value's bucket in it, then m bits, each its word below its cell's threshold."""
        m, on, off = self.parameters["m"], self.numbers["on"], self.numbers["off"]
        row = self.below(self.parameters["d"])
        bucket = ((self.string_hash(self.key(row), text) >> 32) * m) >> 32
        bits = [int(self.u32() < (on[row][i] if i == bucket else off[row][i])) for i in range(m)]
        return [row & 0xFF, row >> 8, *self.packed(bits)]

    def hcms(self, text):
        """§12: the row, the coefficient, the sign of the value's bucket there, flipped below the threshold."""
        m = self.parameters["m"]
        row = self.below(self.parameters["d"])
        coefficient = self.below(m)
        bucket = ((self.string_hash(self.key(row), text) >> 32) * m) >> 32
        positive = bin(coefficient & bucket).count("1") % 2 == 0
        bit = int(positive) ^ int(self.u32() < self.numbers["flip_threshold"])
        return [row & 0xFF, row >> 8, coefficient & 0xFF, coefficient >> 8, bit]

    def prefix_bucket(self, text, buckets):
        """§14: the level, the row, then the bucket of the value's prefix at that level (padded with 0xFF) under the
        row's key; the prefix is hashed as bytes (its length, then 8-byte little-endian words)."""
        def mix(z):
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
            return z ^ (z >> 31)

        length = self.parameters["max_bytes"]
        level, row = self.below(length), self.below(self.parameters["rows"])
        prefix = text.encode("utf-8").ljust(length, b"\xff")[:level + 1]
        z = mix(self.key(level) ^ len(prefix))
        for start in range(0, len(prefix), 8):
            z = mix(z ^ int.from_bytes(prefix[start:start + 8].ljust(8, b"\0"), "little"))
        return level, row, ((mix(z ^ self.key(4096 + row)) >> 32) * buckets) >> 32

    def pem(self, text):
        """§14: OLH's GRR over g buckets of the prefix's bucket: a coin with probability alpha, then an integer."""
        level, row, bucket = self.prefix_bucket(text, self.parameters["g"])
        keep = self.coin(self.numbers["alpha"])
        lie = self.below(self.parameters["g"])
        return {"level": level, "row": row, "y": bucket if keep else lie}

    def treehist(self, text):
        """§14: the Hadamard sign of the prefix's bucket at a uniform coefficient, flipped below the threshold."""
        m = self.parameters["m"]
        level, row, bucket = self.prefix_bucket(text, m)
        coefficient = self.below(m)
        positive = bin(coefficient & bucket).count("1") % 2 == 0
        bit = int(positive) ^ int(self.u32() < self.numbers["flip_threshold"])
        return {"level": level, "row": row, "coefficient": coefficient, "bit": bit}

    def grr_stage(self, x, threshold, k=None):
        """§15: keep below the threshold, else the first uniform draw that Lemire's rule accepts, else keep (k values,
        by default the device numbers' k)."""
        k, keep = k or self.numbers["k"], self.u32() < threshold
        uniform = None
        for word in [self.u32() for _ in range(self.numbers["attempts"])]:
            if uniform is None and (word * k) % 2**32 >= 2**32 % k:
                uniform = (word * k) >> 32
        return x if keep or uniform is None else uniform

    @staticmethod
    def cumulative_draw(counts, u):
        """§15: the j with counts[0] + ... + counts[j - 1] <= u < counts[0] + ... + counts[j]."""
        total = 0
        for j, count in enumerate(counts):
            total += count
            if u < total:
                return j
        raise AssertionError("counts must sum to 2^32")

    def l_table(self, x):
        permanent = self.cumulative_draw(self.numbers["permanent_counts"][x], self.u32())
        keep = self.u32() < self.numbers["keep"]
        refill = self.cumulative_draw(self.numbers["refill_counts"], self.u32())
        return permanent if keep else refill

    def l_grr(self, x):
        return self.grr_stage(self.grr_stage(x, self.numbers["permanent_threshold"]),
                              self.numbers["instantaneous_threshold"])

    def l_ue(self, x):
        """§15: each bit through the permanent channel, then all through the instantaneous one."""
        (one, zero), (kept, other) = self.numbers["permanent_thresholds"], self.numbers["instantaneous_thresholds"]
        permanent = [self.u32() < (one if j == x else zero) for j in range(self.numbers["k"])]
        return self.packed([int(self.u32() < (kept if bit else other)) for bit in permanent])

    def filter_bits(self, cohort, text):
        """§12: the bits of the value's Bloom filter in its cohort."""
        m, h = self.parameters["m"], self.parameters["h"]
        return {((self.string_hash(self.key(cohort * h + j), text) >> 32) * m) >> 32 for j in range(h)}

    def attempts(self, m, count):
        """§15: a value in 0..m-1 from ``count`` words, the first accepted by Lemire's rule, else the last one's."""
        products = [self.u32() * m for _ in range(count)]
        accepted = [z for z in products if z % 2**32 >= 2**32 % m]
        return (accepted[0] if accepted else products[-1]) >> 32

    def hash_of(self):
        """§15 (l-olh): a = 1 + a value in 0..P-2, then b a value in 0..P-1."""
        prime, count = self.numbers["prime"], self.numbers["attempts"]
        a = 1 + self.attempts(prime - 1, count)
        return a, self.attempts(prime, count)

    def l_olh(self, x):
        """§15: the hash, the bucket, then the two GRR stages over the g buckets."""
        n = self.numbers
        a, b = self.hash_of()
        bucket = (a * x + b) % n["prime"] % n["g"]
        permanent = self.grr_stage(bucket, n["permanent_threshold"], n["g"])
        return {"a": a, "b": b, "y": self.grr_stage(permanent, n["instantaneous_threshold"], n["g"])}

    def sampled(self):
        """§15 (dbitflip): d distinct buckets by a partial Fisher-Yates shuffle of 0..buckets-1."""
        n = self.numbers
        pool = list(range(n["buckets"]))
        for i in range(n["d"]):
            t = i + self.attempts(n["buckets"] - i, n["attempts"])
            pool[i], pool[t] = pool[t], pool[i]
        return pool[:n["d"]]

    def dbitflip(self, x):
        """§15: the sampled indices, then one bit per index: 1 below 2^32 - T for the value's bucket, below T else."""
        n = self.numbers
        indices, bucket = self.sampled(), x * n["buckets"] // n["k"]
        return indices + [int(self.u32() < (2**32 - n["threshold"] if j == bucket else n["threshold"]))
                          for j in indices]

    def rappor(self, text):
        """§12: the cohort, the Bloom filter, the permanent then the instantaneous response, packed."""
        parameters, n = self.parameters, self.numbers
        m = parameters["m"]
        cohort = self.below(parameters["cohorts"])
        filter_bits = self.filter_bits(cohort, text)
        threshold = n["permanent_threshold"]
        permanent = []
        for i in range(m):
            u = self.u32()
            permanent.append(1 if u < threshold else 0 if u < 2 * threshold else int(i in filter_bits))
        bits = [int(self.u32() < (n["q_threshold"] if kept else n["p_threshold"])) for kept in permanent]
        return [cohort & 0xFF, cohort >> 8, *self.packed(bits)]

    def fisher_yates(self, pool, size):
        """§6 (subset families): ``size`` values of the list ``pool`` by the partial Fisher-Yates shuffle."""
        pool = list(pool)
        for i in range(size):
            t = i + self.below(len(pool) - i)
            pool[i], pool[t] = pool[t], pool[i]
        return pool[:size]

    def subset(self, x):
        k, d = self.numbers["k"], self.numbers["d"]
        inside = self.coin(self.numbers["inside"])
        chosen = self.fisher_yates([v for v in range(k) if v != x], d - 1 if inside else d) + ([x] if inside else [])
        return self.packed([int(v in chosen) for v in range(k)])

    def subset_lip(self, x):
        k, j = self.numbers["k"], self.numbers["j"]
        u = self.double()
        case = "z" if u < self.numbers["free_end"] else "high" if u < self.numbers["high_end"] else "low"
        if case == "z":
            free, high = x, self.fisher_yates([v for v in range(k) if v != x], j)
        else:
            other = self.below(k - 1)
            free = other + (other >= x)
            high = self.fisher_yates([v for v in range(k) if v not in (x, free)], j - 1 if case == "high" else j)
            high += [x] if case == "high" else []
        return self.packed([int(v in high) for v in range(k)] + [int(v == free) for v in range(k)])

    def class_lip(self, x):
        n = self.numbers
        k, classes = n["k"], n["classes"]
        c = classes[x]
        u = self.double()
        o = next(i for i, end in enumerate(n["thresholds"][c]) if u < end)
        w = self.double()
        free_end, high_end = n["case_ends"][c][o]
        case = "free" if w < free_end else "high" if w < high_end else "low"
        if case == "free":
            z = x
        else:
            pool = [v for v in range(k) if classes[v] == n["free"][o] and v != x]
            z = pool[self.below(len(pool))]
        high = [x] if case == "high" else []
        for d, count in enumerate(n["high"][o]):
            if count:
                pool = [v for v in range(k) if classes[v] == d and v not in (x, z)]
                high += self.fisher_yates(pool, count - (case == "high" and d == c))
        return [o % 256, o // 256] + self.packed([int(v in high) for v in range(k)] + [int(v == z) for v in range(k)])

    def hadamard(self, x):
        y = self.below(self.numbers["K"])
        keep = self.coin(self.numbers["p"])
        row = x + 1
        inside = (row & y).bit_count() % 2 == 0
        return y ^ (row & -row) if inside != keep else y

    def hashing(self, x):
        n = self.numbers
        seed = self.below(n["hashes"])
        a, b = 1 + seed // n["prime"], seed % n["prime"]
        buckets = [(a * v + b) % n["prime"] % 2 for v in range(n["k"])]
        mass = 0.0
        for v in range(n["k"]):
            if buckets[v] == 0:
                mass += n["weights"][v]
        cell = min(max(math.floor(mass * n["cells"]), 0), n["cells"] - 1)
        own = buckets[x]
        flip = n["flip0"][cell] if own == 0 else n["flip1"][cell]
        return {"seed": seed, "y": own ^ int(self.coin(flip))}

    def harmony_categorical(self, x):
        row = self.below(self.numbers["m"])
        t = self.sign(self.numbers, row, x)
        return {"row": row, "sign": 1 if self.coin(self.plus(t, self.numbers["exp_epsilon"])) else -1}

    def harmony_numeric(self, values):
        n = self.numbers
        if n["coordinates"] == "private":
            coordinate = self.below(n["d"])
        else:
            coordinate = self.public_index(n["seed"], self.case["user_id"], n["d"])
        sign = 1 if self.coin(self.plus(values[coordinate], n["exp_epsilon"])) else -1
        return {"coordinate": coordinate, "sign": sign}

    def grr_value(self, x, k, alpha):
        """§6: GRR's mixture, a coin then a bounded integer."""
        keep = self.coin(alpha)
        lie = self.below(k)
        return x if keep else lie

    def spl(self, values):
        """§16: attribute after attribute, GRR at its alpha."""
        n = self.numbers
        return [self.grr_value(int(x), k, alpha) for x, k, alpha in zip(values, n["k"], n["alpha"])]

    def smp(self, values):
        """§16: the attribute from one double against the integer ends, then its GRR."""
        n = self.numbers
        m = self.u64() >> 11
        j = sum(end <= m for end in n["ends"])
        return {"attribute": j, "value": self.grr_value(int(values[j]), n["k"][j], n["alpha"][j])}

    def rsfd(self, values):
        """§16: the attribute drawn, the fake values (but "ue-zero"), then GRR on the drawn attribute, or per
        attribute its k bits below q and its hot bit once more (p, or q for a "ue-zero" fake)."""
        n = self.numbers
        k, variant = n["k"], n["variant"]
        drawn = self.below(len(k))
        fakes = [] if variant == "ue-zero" else [self.below(size) for size in k]
        if variant == "grr":
            fakes[drawn] = self.grr_value(int(values[drawn]), k[drawn], n["alpha"][drawn])
            return fakes
        bits = []
        for j, size in enumerate(k):
            block = [int(self.coin(n["q"])) for _ in range(size)]
            hot = int(values[j]) if j == drawn or variant == "ue-zero" else fakes[j]
            block[hot] = int(self.coin(n["p"] if j == drawn or variant == "ue-random" else n["q"]))
            bits += block
        return self.packed(bits)

    def harmony_mixed(self, values):
        n = self.numbers
        attribute = self.below(n["d"])
        projection, row = n["attributes"][attribute], 0
        if projection == "numeric":
            t = values[attribute]
        else:
            row = self.below(projection["m"])
            t = self.sign(projection, row, int(values[attribute]))
        sign = 1 if self.coin(self.plus(t, n["exp_epsilon"])) else -1
        return {"attribute": attribute, "row": row, "sign": sign}

    def rounded(self, t, grid):
        position = (t + 1.0) * (grid / 2.0)
        low = min(math.floor(position), grid - 1)
        return low + int(self.coin(position - low))

    def laplace(self, values):
        n = self.numbers
        rows = [self.rounded(t, n["grid"]) for t in values]
        return [n["outputs"][self.alias(row)] for row in rows]

    def duchi(self, values):
        n = self.numbers
        d = n["d"]
        v = [1.0 if self.coin((1.0 + t) / 2.0) else -1.0 for t in values]
        plus = self.coin(n["plus_probability"])
        while True:
            words = [self.u32() for _ in range(-(-d // 4))]
            bits = [(words[i // 4] >> (8 * (i % 4) + 7)) & 1 for i in range(d)]
            if (2 * sum(bits) > d) == plus:
                return [n["bound"] * (2 * bit - 1) * sign for bit, sign in zip(bits, v)]

    def piecewise_points(self, ts):
        """§8: the three phases (rounding, alias, uniform), each over every chosen attribute before the next."""
        n = self.numbers
        rows = [self.rounded(t, n["grid"]) for t in ts]
        bins = [self.alias(row) for row in rows]
        return [n["edges"][b] + self.double() * n["widths"][b] for b in bins]

    def chosen(self, d):
        """The `attributes` attributes with the smallest of d doubles, in increasing attribute index."""
        draws = [self.double() for _ in range(d)]
        return sorted(sorted(range(d), key=draws.__getitem__)[:self.numbers["attributes"]])

    def spread(self, d, chosen, values):
        report = [0.0] * d
        for j, value in zip(chosen, values):
            report[j] = (d / self.numbers["attributes"]) * value
        return report

    def piecewise(self, values):
        d = len(values)
        chosen = self.chosen(d)
        return self.spread(d, chosen, self.piecewise_points([values[j] for j in chosen]))

    def hybrid(self, values):
        n, d = self.numbers, len(values)
        chosen = self.chosen(d)
        ts = [values[j] for j in chosen]
        out = [n["scale"] * (1.0 if self.coin(self.plus(t, n["exp_epsilon"])) else -1.0) for t in ts]
        if n["piecewise_probability"]:
            points = self.piecewise_points(ts)
            out = [point if self.coin(n["piecewise_probability"]) else bit for point, bit in zip(points, out)]
        return self.spread(d, chosen, out)
