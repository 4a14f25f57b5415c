"""Heavy hitters over an open domain: PEM and TreeHist (lipdesign/mechanisms/heavy_hitters.py, lipdesign/hitters.py,
docs/math.md §18). The epsilons are checked against the full output table computed here from the hashes, the
estimates against the closed forms of §18.4 and against the truth, the search against planted strings, and the
command line's exit codes."""

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from helpers import run_main as run

import lipdesign as ld
from lipdesign.errors import ValidationError
from lipdesign.hitters import read_strings, truncated
from lipdesign.mechanisms import PEM, TreeHist
from lipdesign.mechanisms.heavy_hitters import next_bytes, padded
from lipdesign.testing import checks, run_check

FAMILIES = [PEM, TreeHist]


@pytest.mark.parametrize("check", [(cls, check) for cls in FAMILIES for check in checks(cls.example())],
                         ids=lambda case: f"{case[0].family}-{case[1].__name__}")
def test_conformance(check):
    cls, function = check
    run_check(cls.example(), function)


# -- the guarantee -------------------------------------------------------------------------------------------------

def full_table(mechanism, values):
    """Pr[(t, s, o) | x] for every output and each value, as exact rationals, built from the buckets the hashes give
    and the oracle's channel written from docs/math.md §18.1 (not from privacy_table)."""
    data = [value.encode() for value in values]
    matrix = padded(data, mechanism.levels)
    rows = []
    for x in range(len(values)):
        row = []
        for t, s in itertools.product(range(mechanism.levels), range(mechanism.rows)):
            bucket = int(mechanism._buckets(matrix[x:x + 1], np.array([t]), np.array([s]))[0])
            weight = Fraction(1, mechanism.levels * mechanism.rows)
            if isinstance(mechanism, PEM):
                alpha = Fraction(mechanism.alpha)
                lie = (1 - alpha) / mechanism.g
                row += [weight * (alpha + lie if y == bucket else lie) for y in range(mechanism.g)]
            else:
                phi = Fraction(mechanism.flip_threshold, 2**32)
                for coefficient in range(mechanism.m):
                    positive = bin(coefficient & bucket).count("1") % 2 == 0
                    one = (1 - phi) if positive else phi
                    row += [weight * Fraction(1, mechanism.m) * one, weight * Fraction(1, mechanism.m) * (1 - one)]
        rows.append(row)
    return rows


def table_epsilon(rows):
    worst = Fraction(1)
    for a, b in itertools.permutations(rows, 2):
        worst = max(worst, max(p / q for p, q in zip(a, b)))
    return worst


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0, 8.0])
def test_the_realised_epsilon_is_at_most_the_claim_and_is_the_full_tables(epsilon):
    values = ["a", "b", "ab", "é", "the"]
    for mechanism in (PEM(epsilon, max_bytes=3, rows=3, g=5, seed=11), TreeHist(epsilon, max_bytes=3, rows=3, m=4,
                                                                                seed=11)):
        certificate = mechanism.verify()
        assert certificate.passed and certificate.exact and certificate.epsilon <= epsilon
        ratio = table_epsilon(full_table(mechanism, values))
        # the grouped table's epsilon is the full table's (values that differ in some bucket reach the worst ratio)
        assert math.isclose(certificate.epsilon, math.log(ratio), rel_tol=1e-9)
        assert ratio <= Fraction(math.exp(epsilon)) * (1 + Fraction(1, 10**12))


def test_pem_alpha_is_olhs_mixture():
    """alpha = (e^eps - 1)/(e^eps - 1 + g) up to the 2^-53 grid and the margin that keeps the ratio below e^eps."""
    for epsilon, g in ((1.0, 4), (4.0, 56), (8.0, 1024)):
        mechanism = PEM(epsilon, max_bytes=2, g=g, seed=1)
        e = math.exp(epsilon)
        assert mechanism.alpha <= (e - 1) / (e - 1 + g) and math.isclose(mechanism.alpha, (e - 1) / (e - 1 + g),
                                                                         rel_tol=1e-9)
        assert PEM(epsilon, max_bytes=2, seed=1).g == min(round(e) + 1, 1024)


def test_the_sampler_realises_the_oracles_probabilities():
    """Over many reports of one value, the share of PEM reports in the value's bucket is keep, and the share of
    TreeHist bits equal to the sign is 1 - phi (binomial tolerance of 5 standard deviations)."""
    n = 200_000
    pem = PEM(2.0, max_bytes=3, rows=8, g=5, seed=3)
    reports = pem.perturb(["ab"] * n, rng=1)
    buckets = pem._buckets(padded([b"ab"] * n, 3), reports["level"].astype(np.int64), reports["row"].astype(np.int64))
    share, keep = np.mean(reports["y"] == buckets), pem.p
    assert abs(share - keep) < 5 * math.sqrt(keep * (1 - keep) / n)
    tree = TreeHist(2.0, max_bytes=3, rows=8, m=8, seed=3)
    reports = tree.perturb(["ab"] * n, rng=1)
    buckets = tree._buckets(padded([b"ab"] * n, 3), reports["level"].astype(np.int64),
                            reports["row"].astype(np.int64))
    signs = np.array([bin(int(c) & int(b)).count("1") % 2 == 0 for c, b in zip(reports["coefficient"][:20000],
                                                                             buckets[:20000])])
    agree = np.mean(signs == (reports["bit"][:20000] == 1))
    keep = 1 - tree.flip_threshold / 2**32
    assert abs(agree - keep) < 5 * math.sqrt(keep * (1 - keep) / 20000)
    assert np.all(np.bincount(reports["level"], minlength=3) > n / 3 - 5 * math.sqrt(n * 2 / 9))


# -- the estimates -------------------------------------------------------------------------------------------------

WORDS = ["the", "of", "and", "to", "in", "is", "été", "日本"]
TRUTH = np.array([0.25, 0.2, 0.15, 0.1, 0.1, 0.1, 0.05, 0.05])


def population(n, seed=0):
    return np.array(WORDS, dtype=object)[np.random.default_rng(seed).choice(len(WORDS), size=n, p=TRUTH)]


@pytest.mark.parametrize("cls", FAMILIES)
def test_the_closed_forms_given_the_pool_match_repeated_collections(cls):
    """Candidates' estimates over 40 seeded collections: their mean within 4 standard errors of expected_estimate
    (exact given the pool, docs/math.md §18.4), and their variance within chi-square bounds of ``variance``."""
    mechanism = cls(2.0, max_bytes=6, rows=16, seed=21).with_candidates(WORDS + ["zzz"])
    users, repetitions = population(20_000), 40
    estimates = np.array([mechanism.estimate(mechanism.perturb(users, rng=seed)).values
                          for seed in range(repetitions)])
    expected, variance = mechanism.expected_estimate(users), mechanism.variance(users, len(users))
    z = (estimates.mean(axis=0) - expected) / np.sqrt(variance / repetitions)
    assert np.all(np.abs(z) < 4), z
    ratio = estimates.var(axis=0, ddof=1) / variance
    # the 0.05% and 99.95% quantiles of chi-square with 39 degrees of freedom, divided by 39, are 0.42 and 1.92
    assert np.all((ratio > 0.41) & (ratio < 1.92)), ratio


@pytest.mark.parametrize("cls", FAMILIES)
def test_the_expectation_over_pools_is_the_truth(cls):
    """Over 300 pool seeds the exact expectation given the pool averages to the population's frequencies (the
    users' values fixed; z from the spread over seeds)."""
    users = population(5_000)
    truth = np.array([np.mean(users == word) for word in WORDS + ["zzz"]])
    expected = np.array([cls(2.0, max_bytes=6, rows=4, seed=seed).with_candidates(WORDS + ["zzz"])
                         .expected_estimate(users) for seed in range(300)])
    z = (expected.mean(axis=0) - truth) / (expected.std(axis=0, ddof=1) / math.sqrt(300))
    assert np.all(np.abs(z) < 4), z


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_the_top_strings_estimates_are_unbiased(protocol):
    """The three most frequent strings (0.25, 0.2, 0.15: at least 11 standard errors above zero) are found in every
    one of 30 collections (fresh pools), and their estimates average to the truth within 4 standard errors of the
    mean (from the spread). Their variance over collections is the plug-in one plus the pool's term of docs/math.md
    §18.5, sum over the other strings of F_x^2 / (R (B - 1)), within chi-square bounds (29 degrees of freedom:
    0.35 and 2.09 are its 0.05% and 99.95% quantiles over 29)."""
    users = population(40_000, seed=3)
    truth = np.array([np.mean(users == word) for word in WORDS[:3]])
    rows, errors = [], []
    for seed in range(30):
        found = ld.heavy_hitters(users, epsilon=3.0, top=8, protocol=protocol, max_bytes=6, seed=seed,
                                 rows=64)
        assert set(WORDS[:3]) <= set(found.names)
        at = [found.names.index(word) for word in WORDS[:3]]
        rows.append(found.values[at])
        errors.append(found.standard_errors[at])
    rows = np.array(rows)
    spread = rows.std(axis=0, ddof=1)
    assert np.all(np.abs(rows.mean(axis=0) - truth) < 4 * spread / math.sqrt(30))
    buckets = PEM(3.0, seed=1).g if protocol == "pem" else TreeHist(3.0, seed=1).m
    everyone = np.array([np.mean(users == word) for word in WORDS])
    pool = (np.sum(everyone**2) - truth**2) / (64 * (buckets - 1))
    ratio = spread**2 / (np.mean(np.square(errors), axis=0) + pool)
    assert np.all((ratio > 0.35) & (ratio < 2.09)), ratio


def planted(n, heavy_share, seed):
    """20 heavy strings (ASCII and multi-byte, lengths 1 to 8 bytes) sharing ``heavy_share`` equally, and 10,000
    tail strings of 3 to 8 random letters sharing the rest."""
    rng = np.random.default_rng(seed)
    heavy = ["a", "go", "été", "日本", "zebra", "the", "naïve", "ok", "über", "x1", "κάτι", "yes", "no", "maybe",
             "tree", "heap", "é", "qq", "hello", "world"]
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    tail = {"".join(rng.choice(letters, size=rng.integers(3, 9))) for _ in range(10_500)} - set(heavy)
    tail = sorted(tail)[:10_000]
    strings = heavy + tail
    weights = np.concatenate([np.full(20, heavy_share / 20), np.full(len(tail), (1 - heavy_share) / len(tail))])
    return heavy, np.array(strings, dtype=object)[rng.choice(len(strings), size=n, p=weights)]


def test_pem_recalls_every_planted_string():
    """20 strings of 2% each and a tail of 10,000 strings (0.006% each), n = 200,000, L = 8, eps = 4: a level has
    about 25,000 reports and an estimate's standard error is about 1.8e-3, so a heavy prefix (>= 0.02) falls below
    0.011 with probability below 1e-6 and a tail prefix beyond level 0 (< 0.001) rises above it with probability
    below 1e-8 (6 sd) for each of the at most 7,200 candidates of a level; at level 0 fewer than 40 = keep first
    bytes exist. So recall is 20/20 unless something is wrong."""
    heavy, users = planted(200_000, 0.4, seed=5)
    found = ld.heavy_hitters(users, epsilon=4.0, top=20, protocol="pem", max_bytes=8, seed=1)
    assert sorted(found.names) == sorted(heavy)
    assert np.all(np.abs(found.values - 0.02) < 5 * found.standard_errors)


def test_treehist_recalls_every_planted_string():
    """The one-bit oracle has a standard error of about c / sqrt(n_t) = 4.6e-3 at n = 400,000, L = 8, eps = 4:
    strings of 4% each are 8.7 sd above zero, so each passes the threshold of 3 sd (docs/math.md §18.3) with
    probability above 1 - 1e-8 at every level."""
    heavy, users = planted(400_000, 0.8, seed=6)
    found = ld.heavy_hitters(users, epsilon=4.0, top=20, protocol="treehist", max_bytes=8, seed=2)
    assert sorted(found.names) == sorted(heavy)


# -- the search's alphabet -----------------------------------------------------------------------------------------

def test_next_bytes_allow_every_prefix_of_every_valid_string_and_nothing_after_the_end():
    rng = np.random.default_rng(0)
    characters = ["a", "z", "\x00", "\x7f", "é", "ß", "€", "日", "\U0001f600", "\u0800", "\U00010000"]
    strings = ["".join(characters[i] for i in rng.integers(0, len(characters), size=rng.integers(1, 4)))
               for _ in range(300)]
    data = [s.encode() for s in strings if len(s.encode()) <= 8]
    matrix = padded(data, 8)
    for size in range(8):
        allowed = next_bytes(matrix[:, :size], 8)
        assert np.all(allowed[np.arange(len(data)), matrix[:, size]]), size
    # the terminator is the only byte after the terminator, never the first byte; a character must fit
    assert np.flatnonzero(next_bytes(np.array([[0x61, 0xFF]], dtype=np.uint8), 4)[0]).tolist() == [0xFF]
    assert not next_bytes(np.zeros((1, 0), dtype=np.uint8), 4)[0, 0xFF]
    last = next_bytes(np.array([[0x61, 0x61, 0x61]], dtype=np.uint8), 4)[0]
    assert not last[0xC3] and last[0x61] and last[0xFF]
    inside = next_bytes(np.array([[0xE2, 0x82]], dtype=np.uint8), 4)[0]
    assert np.flatnonzero(inside).tolist() == list(range(0x80, 0xC0))


# -- bad input -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("call", "field"), [
    (lambda: ld.heavy_hitters(["the", "x" * 17], epsilon=1.0), "values[1]"),
    (lambda: ld.heavy_hitters(["the", b"\xff"], epsilon=1.0), "values[1]"),
    (lambda: ld.heavy_hitters(["the", ""], epsilon=1.0), "values[1]"),
    (lambda: ld.heavy_hitters(["the"], epsilon=1.0, top=0), "top"),
    (lambda: ld.heavy_hitters(["the"], epsilon=0.0), "epsilon"),
    (lambda: ld.heavy_hitters(["the"], epsilon=-1.0), "epsilon"),
    (lambda: ld.heavy_hitters(["the"], epsilon=1.0, protocol="sfp"), "protocol"),
    (lambda: ld.heavy_hitters(["the"], epsilon=1.0, max_bytes=0), "max_bytes"),
    (lambda: ld.heavy_hitters(["日本"], epsilon=1.0, max_bytes=2, truncate=True), "values[0]"),
    (lambda: PEM(1.0, max_bytes=4, rows=0), "rows"),
    (lambda: PEM(1.0, max_bytes=4, g=1), "g"),
    (lambda: PEM(1.0, max_bytes=4096, rows=65536), "rows"),
    (lambda: TreeHist(1.0, max_bytes=4, m=6), "m"),
    (lambda: PEM(1.0, max_bytes=4, top=5, keep=4), "keep"),
])
def test_bad_input_is_refused_naming_the_field(call, field):
    with pytest.raises(ValidationError, match=field.replace("[", r"\[")):
        call()


def test_reports_of_another_shape_are_refused():
    pem = PEM(1.0, max_bytes=4, rows=4, seed=1)
    reports = pem.perturb(["the", "of"], rng=0)
    reports["row"][1] = 4
    with pytest.raises(ValidationError, match=r"reports\['row'\]"):
        pem.aggregate(reports)
    with pytest.raises(ValidationError, match="reports"):
        pem.aggregate(TreeHist(1.0, max_bytes=4, seed=1).perturb(["the"], rng=0))


def test_truncation_cuts_at_a_character_boundary():
    assert truncated("abé".encode(), 3) == b"ab"
    assert truncated("abé".encode(), 4) == "abé".encode()
    assert truncated("日本".encode(), 5) == "日".encode()


def test_a_file_is_read_line_by_line_and_refused_with_its_line_number(tmp_path):
    path = tmp_path / "words.txt"
    path.write_bytes("the\r\nof\nété\n".encode())
    assert read_strings(path, 6) == [b"the", b"of", "été".encode()]
    with pytest.raises(ValidationError, match="line 3 is 5 bytes"):
        read_strings(path, 4)
    assert read_strings(path, 4, truncate=True)[2] == "ét".encode()
    path.write_bytes(b"the\nof\nand\nb\xc3(\n")
    with pytest.raises(ValidationError, match="line 4 is not valid UTF-8"):
        read_strings(path, 8)
    path.write_bytes(b"the\n\nof\n")
    with pytest.raises(ValidationError, match="line 2 is empty"):
        read_strings(path, 8)


# -- the command line ----------------------------------------------------------------------------------------------

def test_the_command_line(tmp_path, capsys):
    users = population(30_000)
    path = tmp_path / "words.txt"
    path.write_text("\n".join(users) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "heavy-hitters", path, "--epsilon", "4", "--top", "3", "--max-bytes", "6",
                         "--seed", "1", "--json")
    document = json.loads(out)
    assert code == 0 and err == "" and document["strings"] == WORDS[:3] and document["users"] == 30_000
    assert all(low <= f <= high for f, low, high in zip(document["frequencies"], document["confidence_interval"]["low"],
                                                          document["confidence_interval"]["high"]))
    code, out, _ = run(capsys, "heavy-hitters", path, "--epsilon", "4", "--top", "3", "--max-bytes", "6",
                       "--protocol", "treehist", "--seed", "1")
    assert code == 0 and "the:" in out
    code, out, err = run(capsys, "heavy-hitters", path, "--epsilon", "4", "--max-bytes", "3")
    assert code == 2 and out == "" and err.count("\n") == 1 and "line" in err and "--truncate" in err
    code, out, _ = run(capsys, "heavy-hitters", path, "--epsilon", "4", "--max-bytes", "3", "--truncate", "--top", "2",
                       "--seed", "2")
    assert code == 0
    path.write_bytes(b"the\nof\n\xc3\n")
    code, out, err = run(capsys, "heavy-hitters", path, "--epsilon", "4")
    assert code == 2 and out == "" and err.count("\n") == 1 and "line 3 is not valid UTF-8" in err
    for bad in (["--epsilon", "0"], ["--epsilon", "1", "--top", "0"]):
        code, out, err = run(capsys, "heavy-hitters", path, *bad)
        assert code == 2 and out == "" and err.count("\n") == 1
