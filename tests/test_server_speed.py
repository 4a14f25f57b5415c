"""The fast server paths of issue 12 (docs/math.md §8.3, §8.4): OUE's bit-packed reports, their exact sampler and
their column sums over 64-bit words; OLH with a public pool of hashes, its estimator unbiased for the pool used and
its exact variance, both against brute force over a small pool."""

import itertools
import math
import sys
from fractions import Fraction

import numpy as np
import pytest

import lipdesign as ld
from lipdesign.errors import ValidationError
from lipdesign.mechanisms import OLH, OUE, bit_reports, bitsums, olh, parallel
from lipdesign.mechanisms.base import content_fingerprint
from lipdesign.mechanisms.sampling import implemented_exp
from lipdesign.verification.exact import log_upper

PRIME = 2**31 - 1


def unpacked(reports, k):
    """Bit j of a report is bit j % 8 of byte j // 8 (read bit by bit, without numpy's unpackbits)."""
    return np.stack([(reports[:, j // 8] >> (j % 8)) & 1 for j in range(k)], axis=1)


# ------------------------------------------------------------------------------------------------------ OUE

def test_oue_reports_are_packed_little_bit_order_and_round_trip():
    k = 13
    mechanism = OUE(1.0, k)
    values = np.arange(200) % k
    reports = mechanism.perturb(values, rng=3)
    assert reports.dtype == np.uint8 and reports.shape == (200, 2) == (values.size, mechanism.report_bytes)
    bits = mechanism.bits(reports)
    assert np.array_equal(bits, unpacked(reports, k))
    assert np.array_equal(np.packbits(bits, axis=1, bitorder="little"), reports)
    assert not (reports[:, 1] >> 5).any()  # bits 13..15 of the last byte stay 0
    assert np.array_equal(mechanism.bits(reports, [12, 0]), bits[:, [12, 0]])
    # the unpacked reports of earlier versions aggregate to the same numbers
    assert mechanism.aggregate(bits) == mechanism.aggregate(reports)
    assert np.array_equal(mechanism.aggregate(reports)["support"], bits.sum(axis=0))


def test_oue_bits_are_bytes_against_the_integer_threshold():
    """Rebuilt from a copy of the bit stream in Python integers: per user ceil(k / 8) words read as little-endian
    bytes, byte j against hi = T >> 56 (its own bit against 128), then one word per tie, (w >> 8) < lo."""
    epsilon, k, n = 1.5, 10, 3000
    mechanism = OUE(epsilon, k)
    e = implemented_exp(epsilon)
    grid = Fraction(math.ceil(Fraction(1.0 / (e + 1.0)) * 2**53), 2**53)  # the double, rounded up
    assert Fraction(mechanism.q) == grid and mechanism.p == 0.5 and mechanism.threshold == grid * 2**64
    values = np.random.default_rng(0).integers(0, k, n)
    reports = mechanism.perturb(values, rng=np.random.default_rng(11))
    stream = np.random.default_rng(11).bit_generator
    width = (k + 7) // 8
    words = [int(w) for w in stream.random_raw(n * width)]
    high, low = mechanism.threshold >> 56, mechanism.threshold % 2**56
    expected, ties = [], []
    for i, x in enumerate(values):
        row = []
        for j in range(k):
            byte = (words[i * width + j // 8] >> (8 * (j % 8))) & 0xFF
            row.append(int(byte < 128) if j == x else int(byte < high))
            if j != x and byte == high:
                ties.append((i, j))
        expected.append(row)
    assert ties  # 3000 users x 9 bits: about 105 ties
    for (i, j), w in zip(ties, stream.random_raw(len(ties))):
        expected[i][j] = int((int(w) >> 8) < low)
    assert np.array_equal(mechanism.bits(reports), np.array(expected, dtype=np.uint8))
    # exactly T / 2^64: hi of the 256 bytes decide 1, and a tie (1/256) is 1 with lo / 2^56
    assert Fraction(high, 256) + Fraction(1, 256) * Fraction(low, 2**56) == grid


def test_oue_column_ranges_of_a_large_k_follow_the_documented_stream(monkeypatch):
    """k > OUE_SEGMENT: one user at a time, each range of OUE_SEGMENT columns drawing its bytes, then its ties."""
    monkeypatch.setattr(bit_reports, "OUE_SEGMENT", 64)
    k, values = 150, np.array([3, 140, 70])
    mechanism = OUE(0.2, k)  # q close to 1/2: ties are frequent enough to occur
    high, low = mechanism.threshold >> 56, mechanism.threshold % 2**56
    stream = np.random.default_rng(8).bit_generator
    expected = []
    for x in values:
        row = []
        for first in range(0, k, 64):
            size = min(64, k - first)
            words = [int(w) for w in stream.random_raw(-(-size // 8))]
            part, tied = [], []
            for j in range(size):
                byte = (words[j // 8] >> (8 * (j % 8))) & 0xFF
                part.append(int(byte < 128) if first + j == x else int(byte < high))
                if first + j != x and byte == high:
                    tied.append(j)
            for j, w in zip(tied, stream.random_raw(len(tied))):
                part[j] = int((int(w) >> 8) < low)
            row += part
        expected.append(row)
    reports = mechanism.perturb(values, rng=np.random.default_rng(8))
    assert np.array_equal(mechanism.bits(reports), np.array(expected, dtype=np.uint8))


def test_oue_privacy_table_is_the_realised_one_and_verifies_exactly():
    for epsilon in (1e-6, 0.5, 1.0, 4.0, 10.0):
        mechanism = OUE(epsilon, 5)
        table = mechanism.privacy_table()
        q = Fraction(mechanism.q)
        assert [[Fraction(x) for x in row] for row in table] == [[(1 - q) / 2, q / 2, (1 - q) / 2, q / 2],
                                                                 [(1 - q) / 2, (1 - q) / 2, q / 2, q / 2]]
        certificate = mechanism.verify()
        assert certificate.passed and certificate.epsilon == float(log_upper((1 - q) / q))
        assert certificate.epsilon <= epsilon


COLUMN_SUMS = ["numpy", "compiled"]


def force(method, monkeypatch):
    """Make ``bitsums.column_sums`` take ``method`` at every size (skip "compiled" without numba)."""
    if method == "compiled":
        pytest.importorskip("numba")
        monkeypatch.setattr(parallel, "COMPILED_WORK", 0)
    else:
        monkeypatch.setattr(parallel, "COMPILED_WORK", math.inf)


@pytest.mark.parametrize("method", COLUMN_SUMS)
@pytest.mark.parametrize("k", [2, 13, 64, 100, 1000])
@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 26, 27, 28, 100, 1000])
def test_oue_column_sums_equal_the_unpacked_counts(method, k, n, monkeypatch):
    """Small LEVELS and CHUNKS (numpy), so that chunks, the planes of several chunks and the rows left over are all
    exercised; small blocks and several threads (compiled); padded rows when ceil(k / 8) is not a whole number of
    words."""
    force(method, monkeypatch)
    monkeypatch.setattr(bitsums, "LEVELS", 3)
    monkeypatch.setattr(bitsums, "CHUNKS", 4)
    monkeypatch.setattr(bitsums, "COMPILED_BLOCK", 48)
    monkeypatch.setattr(parallel, "threads", lambda: 3)
    mechanism = OUE(1.0, k)
    reports = np.packbits(np.random.default_rng(n + k).integers(0, 2, (n, k), dtype=np.uint8), axis=1,
                          bitorder="little")
    support = mechanism.aggregate(reports)["support"]
    assert support.dtype == np.int64 and np.array_equal(support, unpacked(reports, k).sum(axis=0))


@pytest.mark.parametrize("method", COLUMN_SUMS)
def test_oue_column_sums_at_full_size_and_on_non_contiguous_reports(method, monkeypatch):
    """Past the numpy adder's 3^9-row chunks and the compiled adder's 255-step lanes (16 * 255 rows), and all
    ones in a column (a lane that would overflow at 256)."""
    force(method, monkeypatch)
    k = 1024
    n = 3**bitsums.LEVELS * 2 + 77
    bits = np.random.default_rng(5).random((n, k)) < np.linspace(0.0, 1.0, k)  # columns 0 and 1 at the ends
    reports = np.packbits(bits, axis=1, bitorder="little")
    expected = bits.sum(axis=0)
    mechanism = OUE(1.0, k)
    assert np.array_equal(mechanism.aggregate(reports)["support"], expected)
    assert expected[0] == 0 and expected[-1] == n
    assert np.array_equal(mechanism.aggregate(reports[::-1])["support"], expected)


def test_the_two_column_sums_agree_on_oue_reports(monkeypatch):
    """The compiled and the numpy adders on 200,000 real OUE reports (k = 100: padded words), as ``aggregate``
    calls them when the work is large enough."""
    pytest.importorskip("numba")
    monkeypatch.setattr(parallel, "COMPILED_WORK", 2**18)
    mechanism = OUE(1.0, 100)
    reports = mechanism.perturb(np.random.default_rng(3).integers(0, 100, 200_000), rng=4)
    words = np.zeros((reports.shape[0], 16), dtype=np.uint8)
    words[:, :13] = reports
    words = words.view("<u8")
    compiled = bitsums.column_sums(lambda i, j: words[i:j], words.shape[0], 2)
    assert parallel.compiled_kernels(words.size) is not None
    assert np.array_equal(compiled, bitsums.numpy_column_sums(lambda i, j: words[i:j], words.shape[0], 2))
    assert np.array_equal(mechanism.aggregate(reports)["support"], compiled[:100])


def test_oue_estimate_is_unbiased_for_the_realised_q():
    epsilon, k, n = 1.0, 8, 200_000
    mechanism = OUE(epsilon, k)
    truth = np.array([0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05])
    values = np.repeat(np.arange(k), (truth * n).astype(int))
    estimate = mechanism.estimate(mechanism.perturb(values, rng=2))
    sd = np.sqrt(mechanism.variance(truth, n))
    assert np.all(np.abs(estimate - truth) <= 5 * sd)


def test_oue_refuses_reports_it_cannot_have_made():
    mechanism = OUE(1.0, 13)
    with pytest.raises(ValidationError, match="sets bits beyond k = 13"):
        mechanism.aggregate(np.array([[0, 0b00100000]], dtype=np.uint8))
    with pytest.raises(ValidationError, match="reports has shape \\(3, 3\\)"):
        mechanism.aggregate(np.zeros((3, 3), dtype=np.uint8))
    with pytest.raises(ValidationError, match="n \\* ceil\\(k / 8\\) = 1 \\* 137438953472"):
        OUE(1.0, 2**40).perturb([0], rng=0)


# ------------------------------------------------------------------------------------------------------ OLH

def splitmix_index(seed, identifier, size):
    """``sampling.public_index`` written out in Python integers."""
    mask = 2**64 - 1
    z = (identifier + seed * 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return ((z >> 32) * size) >> 32


def pool_hashes(seed, pool, k, g):
    """h_s(v) of the pool, from its definition: a_s = 1 + I(seed, 2 s, P - 1), b_s = I(seed, 2 s + 1, P)."""
    members = [(1 + splitmix_index(seed, 2 * s, PRIME - 1), splitmix_index(seed, 2 * s + 1, PRIME))
               for s in range(pool)]
    return [[(a * v + b) % PRIME % g for v in range(k)] for a, b in members]


def brute_force(mechanism, frequencies, n):
    """Exact mean and variance of the pooled estimate, from every report (s, y) and its probability per value: the
    support vector Z(s, y)[v] = 1[h_s(v) = y], its mean and covariance under each value, the estimate
    C^-1 ((mean Z - lie) / alpha), C from the hashes (independent of the code's matrices)."""
    k, g, pool = mechanism.k, mechanism.g, mechanism.pool
    hashes = np.array(pool_hashes(mechanism.seed, pool, k, g))
    collisions = np.array([[np.mean(hashes[:, v] == hashes[:, w]) for w in range(k)] for v in range(k)])
    keep, lie = mechanism.p, mechanism.lie
    mean, second = np.zeros(k), np.zeros((k, k))
    for x, f in enumerate(frequencies):
        mean_x, second_x = np.zeros(k), np.zeros((k, k))
        for s, y in itertools.product(range(pool), range(g)):
            probability = (keep if y == hashes[s, x] else lie) / pool
            z = (hashes[s] == y).astype(float)
            mean_x += probability * z
            second_x += probability * np.outer(z, z)
        mean += f * mean_x
        second += f * (second_x - np.outer(mean_x, mean_x))
    inverse = np.linalg.inv(collisions)
    expectation = inverse @ ((mean - lie) / mechanism.alpha)
    variance = np.diag(inverse @ second @ inverse.T) / (n * mechanism.alpha**2)
    return collisions, expectation, variance


@pytest.mark.parametrize("epsilon, k, g, pool", [(1.0, 4, 3, 3), (2.0, 6, None, 4), (0.5, 5, 2, 6)])
def test_pooled_olh_is_unbiased_with_its_exact_variance(epsilon, k, g, pool):
    mechanism = OLH(epsilon, k, g=g, pool=pool, seed=12345)
    frequencies = np.random.default_rng(k).dirichlet(np.ones(k))
    collisions, expectation, variance = brute_force(mechanism, frequencies, n=1000)
    np.testing.assert_allclose(mechanism.collision_matrix, collisions, rtol=0, atol=1e-15)
    np.testing.assert_allclose(expectation, frequencies, rtol=0, atol=1e-12)
    np.testing.assert_allclose(mechanism.variance(frequencies, 1000), variance, rtol=1e-9, atol=0)
    np.testing.assert_allclose(mechanism.expected_estimate(frequencies), frequencies, rtol=0, atol=1e-15)


def test_pooled_olh_estimate_from_reports_is_the_formula():
    mechanism = OLH(1.0, 12, pool=9, seed=7)
    values = np.random.default_rng(1).integers(0, 12, 3000)
    reports = mechanism.perturb(values, rng=4)
    assert reports.dtype == np.dtype([("s", "<i4"), ("y", "<i4")])
    hashes = np.array(pool_hashes(7, 9, 12, mechanism.g))
    support = np.array([sum(hashes[s, v] == y for s, y in zip(reports["s"], reports["y"])) for v in range(12)])
    aggregate = mechanism.aggregate(reports)
    assert np.array_equal(aggregate["support"], support)
    collisions = np.array([[np.mean(hashes[:, v] == hashes[:, w]) for w in range(12)] for v in range(12)])
    expected = np.linalg.solve(collisions, (support / 3000 - mechanism.lie) / mechanism.alpha)
    np.testing.assert_allclose(mechanism.estimate(aggregate), expected, rtol=0, atol=1e-12)
    halves = mechanism.aggregate(reports[:1000]) + mechanism.aggregate(reports[1000:])
    assert halves == aggregate


def test_pooled_olh_estimates_within_its_standard_errors():
    k, n = 30, 200_000
    mechanism = OLH(2.0, k, pool=40, seed=3)
    truth = np.random.default_rng(2).dirichlet(np.ones(k))
    values = np.random.default_rng(3).choice(k, n, p=truth)
    population = np.bincount(values, minlength=k) / n
    estimate = mechanism.estimate(mechanism.perturb(values, rng=5))
    assert np.all(np.abs(estimate - population) <= 5 * np.sqrt(mechanism.variance(population, n)))


def test_pooled_olh_hash_pool_and_privacy():
    mechanism = OLH(2.0, 20, pool=16, seed=99)
    a, b = mechanism.pool_members
    assert [(int(x), int(y)) for x, y in zip(a, b)] == [
        (1 + splitmix_index(99, 2 * s, PRIME - 1), splitmix_index(99, 2 * s + 1, PRIME)) for s in range(16)]
    assert mechanism.verify().epsilon == OLH(2.0, 20).verify().epsilon
    hashes = np.array(pool_hashes(99, 16, 20, mechanism.g))
    assert mechanism.collision_probability(0, 1) == np.mean(hashes[:, 0] == hashes[:, 1])
    assert mechanism.report_bits == math.ceil(math.log2(16 * mechanism.g))
    assert ld.audit(mechanism, reports=20_000, rng=1).passed


def test_olh_parameters_and_files():
    per_user = OLH(1.0, 20)
    assert per_user.parameters() == {"epsilon": 1.0, "k": 20, "g": 4}  # files without a pool keep their form
    assert per_user.fingerprint == content_fingerprint("olh", {"epsilon": 1.0, "k": 20, "g": 4})
    pooled = OLH(1.0, 20, pool=8, seed=5)
    assert pooled.parameters() == {"epsilon": 1.0, "k": 20, "g": 4, "pool": 8, "seed": 5}
    assert ld.mechanisms.family_class("olh").from_parameters(pooled.parameters()) == pooled
    assert OLH(1.0, 20, pool=8).seed != OLH(1.0, 20, pool=8).seed  # seed=None draws one


def test_a_drawn_seed_is_drawn_again_while_the_pool_is_singular(monkeypatch):
    """S = 8 hashes for k = 20 values: some seeds give a singular pool (seed 1 with S = 3, k = 10 always does);
    seed=None draws again, and only an explicit seed is refused."""
    singular = [seed for seed in range(200) if not _regular(OLH, 20, 8, seed)]
    assert singular, "no singular pool among 200 seeds: the test would not exercise the redraw"
    drawn = iter(singular[:3] + [next(seed for seed in range(200) if seed not in singular)])
    monkeypatch.setattr(olh, "public_seed", lambda seed: next(drawn) if seed is None else seed)
    mechanism = OLH(1.0, 20, pool=8)
    assert mechanism.seed not in singular and _regular(OLH, 20, 8, mechanism.seed)
    assert np.array_equal(mechanism.collision_matrix, OLH(1.0, 20, pool=8, seed=mechanism.seed).collision_matrix)
    with pytest.raises(ValidationError, match="singular"):
        OLH(1.0, 20, pool=8, seed=singular[0])
    monkeypatch.setattr(olh, "public_seed", lambda seed: singular[0] if seed is None else seed)
    with pytest.raises(ValidationError, match="singular"):  # SEED_DRAWS singular pools in a row
        OLH(1.0, 20, pool=8)


def _regular(olh, k, pool, seed):
    try:
        olh(1.0, k, pool=pool, seed=seed)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("build, match", [
    (lambda: OLH(1.0, 20, pool=3), "pool is 3; .* k = 20 needs S >= 7"),
    (lambda: OLH(1.0, 20, seed=4), "seed is 4; only a pooled OLH"),
    (lambda: OLH(1.0, 20, pool=0), "pool"),
    (lambda: OLH(1.0, 5000, pool=5000), "MAX_POOL_K"),
    (lambda: OLH(1.0, 1024, pool=1025), "S k\\^2 = 1074790400 exceeds MAX_POOL_PAIRS"),
    (lambda: OLH(1.0, 32, pool=2**19 + 1), "S k = 16777248 exceeds MAX_POOL_VALUES"),
    (lambda: OLH(1.0, 10, pool=3, seed=1), ("pool is 3, seed is 1; its collision matrix is singular .*rule is "
                                            "smallest > 1e-09 x largest")),
])
def test_olh_pool_errors(build, match):
    with pytest.raises(ValidationError, match=match):
        build()


def test_pooled_olh_refuses_foreign_reports_and_a_singular_pool():
    mechanism = OLH(1.0, 6, pool=3, seed=1)
    bad = np.zeros(2, dtype=mechanism.report_dtype)
    bad["s"] = [0, 3]
    with pytest.raises(ValidationError, match="reports\\['s'\\]"):
        mechanism.aggregate(bad)
    with pytest.raises(ValidationError, match="fields s, y"):
        mechanism.aggregate(OLH(1.0, 6).perturb([0, 1], rng=0))
    for seed, rank in ((3, 2), (0, 3)):  # seed 3: both hashes split {0, 1} from {2}; seed 0: they differ
        hashes = np.array(pool_hashes(seed, 2, 3, 2))
        collisions = np.array([[np.mean(hashes[:, v] == hashes[:, w]) for w in range(3)] for v in range(3)])
        assert np.linalg.matrix_rank(collisions) == rank
        if rank < 3:  # refused when built, before any report is made
            with pytest.raises(ValidationError, match=f"pool is 2, seed is {seed}; its collision matrix is singular"):
                OLH(1.0, 3, g=2, pool=2, seed=seed)
        else:
            pool = OLH(1.0, 3, g=2, pool=2, seed=seed)
            np.testing.assert_allclose(pool.collision_matrix, collisions, rtol=0, atol=1e-15)


def test_collision_matrix_of_a_large_pool_is_exact():
    """More hashes than the 16-bit counters hold (70000 > 2^16 - 1): the counts are still exact."""
    mechanism = OLH(1.0, 3, g=2, pool=70_000, seed=5)
    hashes = np.array(pool_hashes(5, 70_000, 3, 2))
    same = [[int((hashes[:, v] == hashes[:, w]).sum()) for w in range(3)] for v in range(3)]
    assert np.array_equal(mechanism.collision_matrix, np.array(same, dtype=float) / 70_000)
    assert 0 < same[0][1] < 70_000


def test_singular_pool_of_ten_values_is_refused_when_built():
    """(eps, k, S, seed) = (1, 10, 3, 1) passes the rank bound S (g - 1) + 1 >= k but its pool is singular (from
    the hashes' definition); it must not build, let alone export or aggregate."""
    hashes = np.array(pool_hashes(1, 3, 10, 4))
    collisions = np.array([[np.mean(hashes[:, v] == hashes[:, w]) for w in range(10)] for v in range(10)])
    assert np.linalg.matrix_rank(collisions) < 10
    with pytest.raises(ValidationError, match="pool is 3, seed is 1"):
        OLH(1.0, 10, pool=3, seed=1)


@pytest.mark.parametrize("epsilon, g", [(1.0, None), (10.0, None), (1.0, 2), (1.0, PRIME)])
def test_compiled_olh_support_equals_python_integers(epsilon, g, monkeypatch):
    """The compiled per-user count (no division per value) against ((a v + b) mod P) mod g in Python integers,
    with the extreme multipliers and offsets (a = 1, P - 1; b = 0, P - 1) and a g up to P; and the numpy count."""
    pytest.importorskip("numba")
    k = 300
    mechanism = OLH(epsilon, k, g=g)
    reports = mechanism.perturb(np.random.default_rng(8).integers(0, k, 400), rng=9)
    reports["a"][:4], reports["b"][:4] = [1, PRIME - 1, 1, PRIME - 1], [0, 0, PRIME - 1, PRIME - 1]
    expected = np.array([sum(((int(a) * v + int(b)) % PRIME) % mechanism.g == int(y) for a, b, y in reports)
                         for v in range(k)])
    monkeypatch.setattr(parallel, "COMPILED_WORK", math.inf)
    assert np.array_equal(mechanism.aggregate(reports)["support"], expected)
    monkeypatch.setattr(parallel, "COMPILED_WORK", 0)
    monkeypatch.setattr(parallel, "threads", lambda: 3)
    assert parallel.compiled_kernels(1) is not None
    assert np.array_equal(mechanism.aggregate(reports)["support"], expected)


def test_kernels_that_do_not_load_leave_numpy_counting(monkeypatch):
    """numba installed but unusable: one RuntimeWarning, and the numpy counts."""
    pytest.importorskip("numba")
    monkeypatch.setitem(sys.modules, "lipdesign.mechanisms.compiled", None)  # importing it raises ImportError
    monkeypatch.delattr(ld.mechanisms, "compiled", raising=False)  # as if it had never been imported
    parallel._kernels.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="kernels did not load"):
            assert parallel.compiled_kernels(2**40) is None
        mechanism = OUE(1.0, 64)
        reports = mechanism.perturb(np.arange(64).repeat(10), rng=1)
        assert np.array_equal(mechanism.aggregate(reports)["support"], unpacked(reports, 64).sum(axis=0))
    finally:
        parallel._kernels.cache_clear()
