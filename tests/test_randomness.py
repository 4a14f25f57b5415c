"""Randomness sources (docs/math.md §3.8): the secure default bit stream, seeded PCG64 for simulation, the 53-bit
mapping the exact samplers rely on, and public seeds that never come from the users' noise stream."""

import math

import numpy as np
import pytest
import randomgen
from randomgen import AESCounter, ChaCha

from lipdesign.errors import ValidationError
from lipdesign.learn import LDPLinearRegression, LDPLogisticRegression, Trainer, client_report
from lipdesign.mechanisms import GRR, sampling
from lipdesign.mechanisms.sampling import as_generator, secure_generator

MASK = 0xFFFFFFFF


def _rotate(value, count):
    return ((value << count) & MASK) | (value >> (32 - count))


def _quarter_round(x, a, b, c, d):
    x[a] = (x[a] + x[b]) & MASK
    x[d] = _rotate(x[d] ^ x[a], 16)
    x[c] = (x[c] + x[d]) & MASK
    x[b] = _rotate(x[b] ^ x[c], 12)
    x[a] = (x[a] + x[b]) & MASK
    x[d] = _rotate(x[d] ^ x[a], 8)
    x[c] = (x[c] + x[d]) & MASK
    x[b] = _rotate(x[b] ^ x[c], 7)


def chacha20_block(key, block):
    """The 64 bytes of ChaCha20 block ``block`` under the 256-bit int ``key`` (RFC 8439 §2.3, in plain Python):
    words 12..15 of the input hold the 128-bit block number, little-endian."""
    initial = ([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
               + [(key >> (32 * i)) & MASK for i in range(8)]
               + [(block >> (32 * i)) & MASK for i in range(4)])
    x = list(initial)
    for _ in range(10):  # 20 rounds: a column round and a diagonal round each time
        for a, b, c, d in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                           (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
            _quarter_round(x, a, b, c, d)
    return b"".join(((word + start) & MASK).to_bytes(4, "little") for word, start in zip(x, initial))


def top_53_bits(words):
    return (words >> np.uint64(11)).astype(np.float64) * 2.0**-53


# ------------------------------------------------------------------------------ the bit stream itself

def test_plain_chacha20_matches_the_rfc_8439_block_vector():
    """RFC 8439 §2.3.2: key 00 01 .. 1f, block counter 1, nonce 00 00 00 09 00 00 00 4a 00 00 00 00."""
    key = int.from_bytes(bytes(range(32)), "little")
    block = int.from_bytes(bytes.fromhex("01000000" "00000009" "0000004a" "00000000"), "little")
    expected = bytes.fromhex("10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
                             "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")
    assert chacha20_block(key, block) == expected
    # randomgen's ChaCha with 20 rounds is that cipher: its counter counts 32-bit words, 16 per block
    words = ChaCha(key=key, counter=16 * block, rounds=20).random_raw(8)
    assert words.astype("<u8").tobytes() == expected


@pytest.mark.parametrize("key", [0, 1, 2**256 - 1,
                                 0x0123456789ABCDEF_FEDCBA9876543210_0F1E2D3C4B5A6978_8796A5B4C3D2E1F0])
def test_secure_generator_is_chacha20_under_its_key(key):
    generator = secure_generator(key)
    assert isinstance(generator.bit_generator, ChaCha)
    stream = b"".join(chacha20_block(key, block) for block in range(3))  # 24 words, from block 0
    assert generator.bit_generator.random_raw(24).astype("<u8").tobytes() == stream


def test_default_generator_is_chacha20_keyed_with_256_bits_from_the_os(monkeypatch):
    requested = []
    key = 0xA5A5A5A5_00000001_DEADBEEF_12345678_87654321_0BADF00D_FFFFFFFF_00000000

    def randbits(bits):
        requested.append(bits)
        return key

    monkeypatch.setattr(sampling.secrets, "randbits", randbits)
    generator = as_generator(None)
    assert requested == [256]
    assert isinstance(generator.bit_generator, ChaCha)
    assert generator.bit_generator.state["state"]["rounds"] == 20
    assert generator.bit_generator.random_raw(8).astype("<u8").tobytes() == chacha20_block(key, 0)


def test_two_default_generators_differ():
    """Two independent 256-bit keys: the first 8 words agree with probability 2^-512."""
    first, second = as_generator(None), as_generator(None)
    assert first.bit_generator is not second.bit_generator
    assert not np.array_equal(first.bit_generator.random_raw(8), second.bit_generator.random_raw(8))


def test_rng_none_perturbs_with_the_chacha20_stream_of_the_os_key(monkeypatch):
    key = 2**200 + 77
    monkeypatch.setattr(sampling.secrets, "randbits", lambda bits: key)
    mechanism = GRR(1.0, 16)
    values = np.arange(16).repeat(400)
    by_default = mechanism.perturb(values, rng=None)
    assert np.array_equal(by_default, mechanism.perturb(values, rng=ChaCha(key=key, rounds=20)))
    assert not np.array_equal(by_default, mechanism.perturb(values, rng=ChaCha(key=key + 1, rounds=20)))


@pytest.mark.parametrize("make", [lambda: ChaCha(key=2**255 + 3, rounds=20), lambda: AESCounter(key=2**127 + 3),
                                  lambda: np.random.PCG64(20261201)],
                         ids=["ChaCha20", "AESCounter", "PCG64"])
def test_random_is_the_top_53_bits_of_the_words(make):
    """The realised tables of docs/math.md §3.5-§3.6 assume random() = (next 64-bit word >> 11) 2^-53: pinned for
    the secure stream and the alternatives as_generator documents, whole arrays and the chunked fill
    TablePerturber uses."""
    words = make().random_raw(3 * 4099)
    generator = np.random.Generator(make())
    chunk = np.empty(4099)
    generator.random(out=chunk)
    assert np.array_equal(chunk, top_53_bits(words[:4099]))
    assert np.array_equal(generator.random(4099), top_53_bits(words[4099:8198]))
    assert np.array_equal([generator.random() for _ in range(5)], top_53_bits(words[8198:8203]))


# ------------------------------------------------------------------------------ seeds, generators, errors

def test_int_seeds_are_reproducible_pcg64():
    generator = as_generator(7)
    assert isinstance(generator.bit_generator, np.random.PCG64)
    expected = np.random.PCG64(np.random.SeedSequence(7)).random_raw(16)
    assert np.array_equal(generator.bit_generator.random_raw(16), expected)
    assert np.array_equal(as_generator(np.int64(7)).bit_generator.random_raw(16), expected)
    assert not np.array_equal(as_generator(8).bit_generator.random_raw(16), expected)


def test_a_generator_passes_through_and_a_bit_generator_is_wrapped():
    generator = np.random.Generator(AESCounter(key=5))
    assert as_generator(generator) is generator
    bit_generator = ChaCha(key=9, rounds=20)
    wrapped = as_generator(bit_generator)
    assert isinstance(wrapped, np.random.Generator) and wrapped.bit_generator is bit_generator
    assert np.array_equal(wrapped.random(4), top_53_bits(ChaCha(key=9, rounds=20).random_raw(4)))


def test_a_secure_key_replays_its_stream():
    assert np.array_equal(secure_generator(123).random(50), secure_generator(123).random(50))
    assert not np.array_equal(secure_generator(123).random(50), secure_generator(124).random(50))


@pytest.mark.parametrize(("rng", "message"), [
    ("seed", ("rng is 'seed' of type str; it must be None, a non-negative int seed, a numpy.random.Generator "
              "or a BitGenerator")),
    (1.5, "rng is 1.5 of type float; it must be None"),
    (-1, "rng is -1; an int seed must be non-negative"),
    (True, "rng is True (a bool); it must be None"),
    (np.random.RandomState(0), "of type RandomState; it must be None"),
    ([1, 2], "rng is [1, 2] of type list"),
])
def test_bad_rng_is_refused_naming_the_rule(rng, message):
    with pytest.raises(ValidationError) as error:
        as_generator(rng)
    assert str(error.value).startswith("rng is ") and message in str(error.value)


@pytest.mark.parametrize("key", [-1, 2**256, 1.0, True, "k", [1, 2]])
def test_bad_secure_key_is_refused(key):
    with pytest.raises(ValidationError, match=r"^key is .*; a ChaCha20 key must be None \(drawn from the OS\) or an "
                                              r"int in \[0, 2\*\*256\)$"):
        secure_generator(key)


# ------------------------------------------------------------------------------ the learners' public seed

def regression(n, seed=0, d=6):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    y = np.clip(X @ np.linspace(-0.4, 0.4, d) + rng.normal(0.0, 0.1, n), -1.0, 1.0)
    return X, y


def fit(n=2000, **options):
    X, y = regression(n)
    return LDPLinearRegression(2.0, reduced_dim=3, batch_size=200, **options).fit(X, y)


def fitted_numbers(model):
    return (model.projection_seed_, model.projection_.tolist(), model.alpha_.tolist(), model.intercept_)


def signs_from_raw_words(seed, rows, columns):
    """docs/math.md §9.4's recipe, bit by bit: entry 64 w + j is bit j of PCG64 word w, 0 -> +1, 1 -> -1."""
    words = [int(word) for word in np.random.PCG64(seed).random_raw(-(-rows * columns // 64))]
    bits = [(words[i // 64] >> (i % 64)) & 1 for i in range(rows * columns)]
    return np.array([1 - 2 * bit for bit in bits], dtype=float).reshape(rows, columns)


def test_projection_is_the_public_sign_recipe_of_its_seed():
    model = fit(random_state=np.random.Generator(ChaCha(key=1, rounds=20)), projection_seed=99)
    assert model.projection_seed_ == 99
    np.testing.assert_array_equal(model.projection_, signs_from_raw_words(99, 3, 6) / math.sqrt(3))


def test_noise_streams_that_differ_leave_the_projection_alone():
    one = fit(random_state=np.random.Generator(ChaCha(key=1, rounds=20)), projection_seed=99)
    two = fit(random_state=np.random.Generator(ChaCha(key=2, rounds=20)), projection_seed=99)
    np.testing.assert_array_equal(one.projection_, two.projection_)
    assert not np.array_equal(one.alpha_, two.alpha_)  # the noise did differ


def test_an_int_random_state_fixes_the_public_seed_whatever_the_noise_draws():
    """Same random_state: same public seed and projection for 2000 or 4000 users (10 or 20 batches of noise);
    another random_state gives another one."""
    small, large = fit(2000, random_state=5), fit(4000, random_state=5)
    assert small.n_iter_ == 10 and large.n_iter_ == 20
    assert small.projection_seed_ == large.projection_seed_
    np.testing.assert_array_equal(small.projection_, large.projection_)
    assert fit(random_state=6).projection_seed_ != small.projection_seed_


def test_an_int_random_state_draws_nothing_public_from_its_noise_stream():
    """The public seed of random_state=s is its own SeedSequence child (docs/math.md §9.11): stating it changes
    nothing else, and another public seed leaves the plan (and so the noise streams) as they were."""
    seeded = fit(random_state=5)
    assert fitted_numbers(fit(random_state=5, projection_seed=seeded.projection_seed_)) == fitted_numbers(seeded)
    X, y = regression(2000)
    plans = [Trainer(LDPLinearRegression(2.0, reduced_dim=3, batch_size=200, random_state=5, projection_seed=seed),
                     *X.shape) for seed in (seeded.projection_seed_, 12345)]
    assert plans[0].projection_seed == seeded.projection_seed_ and plans[1].projection_seed == 12345
    for task_a, task_b in zip(plans[0].tasks(), plans[1].tasks()):
        users = plans[0].participants(task_a)
        np.testing.assert_array_equal(users, plans[1].participants(task_b))
        for trainer, task in zip(plans, (task_a, task_b)):  # one report is enough to step
            trainer.update(task, trainer.aggregate(client_report(task, X[users[:1]], y[users[:1]], rng=0)))


def test_a_generator_random_state_takes_the_public_seed_from_the_os_not_from_itself(monkeypatch):
    monkeypatch.setattr(sampling.secrets, "randbits", lambda bits: {63: 4242}[bits])
    from_os = fit(random_state=np.random.default_rng(8))
    assert from_os.projection_seed_ == 4242
    given = fit(random_state=np.random.default_rng(8), projection_seed=4242)
    assert fitted_numbers(from_os) == fitted_numbers(given)  # the Generator's stream went to the noise only


def test_random_state_none_keys_the_noise_and_the_public_seed_separately(monkeypatch):
    """random_state=None: the 63-bit public seed, the server's plan and each round's devices are separate draws
    from the OS (a ChaCha20 key of 256 bits each; docs/math.md §3.8, §9.11)."""
    draws = []

    def randbits(bits):
        draws.append(bits)
        return 777 if bits == 63 else 2**255 + len(draws)

    monkeypatch.setattr(sampling.secrets, "randbits", randbits)
    X, y = regression(3000, seed=3)
    model = LDPLogisticRegression(4.0, reduced_dim=3, batch_size=300).fit(X, np.sign(y) + (y == 0))
    assert model.projection_seed_ == 777 and model.n_iter_ == 10
    assert draws == [63, 256] + [256] * model.n_iter_  # the public seed, the plan, then one key per round


@pytest.mark.parametrize(("seed", "message"), [
    (-1, "projection_seed is -1; it must be an integer in 0..9223372036854775807"),
    (2**63, "projection_seed is 9223372036854775808; it must be an integer in 0..9223372036854775807"),
    ("x", "projection_seed is 'x'; it must be an integer >= 0"),
    (1.5, "projection_seed is 1.5; it must be an integer >= 0"),
])
def test_bad_projection_seed_is_refused(seed, message):
    with pytest.raises(ValidationError) as error:
        fit(random_state=0, projection_seed=seed)
    assert str(error.value) == message


def test_bad_random_state_still_names_the_field():
    with pytest.raises(ValidationError, match=r"^random_state is 'seed' of type str; it must be None"):
        fit(random_state="seed")


def test_a_bit_stream_whose_doubles_follow_another_recipe_is_refused():
    """The certified tables are what random() realises when it returns the top 53 bits of one 64-bit word; a
    stream with another recipe (MT19937 builds a double from two 32-bit words, DSFMT has its own) would sample other
    tables, so it is refused, as a BitGenerator and inside a Generator (found in review)."""
    for stream in (np.random.MT19937(1), randomgen.DSFMT(1)):
        with pytest.raises(ValidationError, match=r"its random\(\) is not the top 53 bits of one 64-bit word"):
            as_generator(stream)
        with pytest.raises(ValidationError, match="not the top 53 bits"):
            GRR(1.0, 4).perturb([0, 1], rng=np.random.Generator(stream))
    for stream in (np.random.PCG64(1), np.random.Philox(1), randomgen.ChaCha(seed=1), randomgen.AESCounter(seed=1)):
        assert as_generator(stream).bit_generator is stream
