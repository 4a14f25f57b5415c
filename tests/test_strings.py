"""Values from an open domain (lipdesign/strings.py, docs/math.md §16.1): the UTF-8 rules, the byte
words and the public string hash, against a plain-integer implementation written from the recipe."""

import numpy as np
import pytest

import lipdesign as ld
from lipdesign import strings
from lipdesign.domains import Strings

MASK = 2**64 - 1


def mix_reference(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def hash_reference(key, text):
    """The recipe of docs/math.md §16.1 in Python integers: the length, then each 8-byte little-endian word."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    z = mix_reference(key ^ len(data))
    for start in range(0, len(data), 8):
        z = mix_reference(z ^ int.from_bytes(data[start:start + 8].ljust(8, b"\0"), "little"))
    return z


WORDS = ["a", "the", "héllo", "日本語", "exactly8", "exactly8!", "a" * 63, "x\0", "x", "emoji 🙂 and more words"]


def test_hash_matches_the_recipe():
    keys = strings.hash_key(12345, np.arange(3))
    assert [int(k) for k in keys] == [mix_reference((12345 + 0x9E3779B97F4A7C15 * (i + 1)) & MASK) for i in range(3)]
    words, lengths = strings.byte_words(strings.encoded(WORDS, 64))
    hashes = strings.string_hash(words, lengths, keys)
    assert hashes.shape == (len(WORDS), 3)
    expected = [[hash_reference(int(key), word) for key in keys] for word in WORDS]
    assert hashes.tolist() == expected


def test_per_string_keys_and_bounded_reduction():
    words, lengths = strings.byte_words(strings.encoded(WORDS, 64))
    keys = strings.hash_key(7, np.arange(len(WORDS) * 2).reshape(len(WORDS), 2))
    hashes = strings.string_hash(words, lengths, keys)
    for i, word in enumerate(WORDS):
        for j in range(2):
            z = hash_reference(int(keys[i, j]), word)
            assert int(hashes[i, j]) == z
            assert strings.bounded(hashes[i:i + 1, j], 1000)[0] == ((z >> 32) * 1000) >> 32


def test_distinct_strings_differ_only_by_padding_or_length_still_hash_apart():
    # "x" and "x\0" have the same zero-padded word: the length, hashed first, tells them apart
    words, lengths = strings.byte_words(strings.encoded(["x", "x\0", "exactly8", "exactly8\0"], 64))
    hashes = strings.string_hash(words, lengths, strings.hash_key(1, [0]))[:, 0]
    assert len(set(hashes.tolist())) == 4


def test_bytes_and_str_are_the_same_value():
    words_s, lengths_s = strings.byte_words(strings.encoded(["héllo"], 64))
    words_b, lengths_b = strings.byte_words(strings.encoded([b"h\xc3\xa9llo"], 64))
    assert np.array_equal(words_s, words_b) and np.array_equal(lengths_s, lengths_b)


def test_hashes_are_spread_evenly():
    # 20,000 distinct strings into 64 buckets: a chi-square test of uniformity at the 1e-6 level (63 degrees of
    # freedom: the 1 - 1e-6 quantile is about 133)
    values = [f"user-{i}" for i in range(20_000)]
    words, lengths = strings.byte_words(strings.encoded(values, 64))
    buckets = strings.bounded(strings.string_hash(words, lengths, strings.hash_key(3, [0]))[:, 0], 64)
    counts = np.bincount(buckets, minlength=64)
    expected = len(values) / 64
    assert ((counts - expected) ** 2 / expected).sum() < 133


@pytest.mark.parametrize("values, message", [
    (["ok", ""], r"values\[1\] is the empty string; every value must hold at least one character"),
    (["ok", "a" * 65], r"values\[1\] is 'aaaa.*', 65 bytes in UTF-8; every value must be at most max_bytes = 64"),
    (["ok", "é" * 33], r"values\[1\] is .*, 66 bytes in UTF-8; every value must be at most max_bytes = 64"),
    (["ok", b"\xff\xfe"], r"values\[1\] is b'\\xff\\xfe'; it is not valid UTF-8 \(invalid start byte at byte 0\)"),
    (["ok", "\ud800"], r"values\[1\] is '\\ud800'; it is not valid Unicode text"),
    (["ok", 3], r"values\[1\] is 3; every value must be a string"),
    ([], r"values is empty"),
    ("word", r"values is 'word'; it must be a sequence of strings, one per user"),
])
def test_bad_values_are_refused_naming_the_entry(values, message):
    with pytest.raises(ld.ValidationError, match=message):
        strings.encoded(values, 64)


def test_max_bytes_rule():
    assert strings.max_bytes(64) == 64
    with pytest.raises(ld.ValidationError, match="max_bytes is 0; it must be an integer in 1..4096"):
        strings.max_bytes(0)


def test_a_strings_domain_matches_values_to_its_candidates():
    domain = Strings(16, ["a", "bb", "日本"])
    assert domain.names() == ["frequency[a]", "frequency[bb]", "frequency[日本]"]
    values = ["bb", "zz", "a", "日本", "a", "aa"]
    assert domain.indices(values).tolist() == [1, -1, 0, 2, 0, -1]
    # values outside the list count for no candidate, so the frequencies sum to the listed share
    assert np.allclose(domain.truth(values), [2 / 6, 1 / 6, 1 / 6])
    drawn = domain.sample(30_000, np.random.default_rng(0))
    # Zipf(1) over the list order: 6/11, 3/11, 2/11, each within 5 sd of a binomial proportion
    expected = np.array([6, 3, 2]) / 11
    assert np.all(np.abs(domain.truth(drawn) - expected) < 5 * np.sqrt(expected * (1 - expected) / 30_000))


@pytest.mark.parametrize("candidates, message", [
    (["a", "b", "a"], r"candidates\[2\] is 'a', the same string as candidates\[0\]; every candidate must be listed"),
    (["a", ""], r"candidates\[1\] is the empty string"),
    (["a", "x" * 17], r"candidates\[1\] is 'x.*', 17 bytes in UTF-8; every value must be at most max_bytes = 16"),
])
def test_bad_candidates_are_refused(candidates, message):
    with pytest.raises(ld.ValidationError, match=message):
        Strings(16, candidates)


def test_a_domain_without_candidates_says_what_needs_them():
    with pytest.raises(ld.ValidationError, match=r"candidates is None; a sampled population needs the candidate"):
        Strings(16).sample(10, np.random.default_rng(0))


def test_the_shipped_words_are_an_open_domain_of_valid_values():
    """lipdesign.datasets.words_path(): 100,000 distinct words, most frequent first, each a value of a Strings
    domain of 64 bytes, with the CC BY-SA 4.0 licence and attribution beside them."""
    import csv
    import gzip
    from pathlib import Path

    from lipdesign.datasets import words_path

    with gzip.open(words_path(), "rt", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    words = [row["word"] for row in rows]
    frequencies = np.array([float(row["frequency"]) for row in rows])
    assert len(words) == len(set(words)) == 100_000 and words[:3] == ["the", "to", "and"]
    assert np.all(np.diff(frequencies) <= 0) and 0.96 < frequencies.sum() < 0.97
    assert len(Strings(64, words).candidates) == 100_000  # every word a valid, distinct value
    readme = (Path(str(words_path())).parent / "README.md").read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in readme and "doi:10.5281/zenodo.7199437" in readme


@pytest.mark.parametrize("values, message", [
    (np.array("abc"), r"values is 'abc'; it must be a sequence of strings"),
    (5, r"values is 5; it must be a sequence of strings"),
    (None, r"values is None; it must be a sequence of strings"),
    (np.array([b"x\0", b"y"]), r"values has dtype \|S\d; numpy's fixed-width bytes drop trailing NUL bytes"),
])
def test_what_is_not_a_sequence_of_strings_is_refused(values, message):
    with pytest.raises(ld.ValidationError, match=message):
        strings.encoded(values, 64)
