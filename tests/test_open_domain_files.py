"""The open-domain families through files and the command line, as a deployment runs them: values in a CSV of
strings, `lipdesign perturb`, `aggregate`, and `estimate --candidates FILE` (docs/math.md §16.4)."""

import json

import numpy as np
import pytest
from helpers import lipdesign, one_line_error

WORDS = ["the", "01", "1", "and", "to"]  # "01" and "1" stay strings: never read as numbers
TRUTH = np.array([0.4, 0.2, 0.2, 0.1, 0.1])


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """A RAPPOR mechanism file, 20,000 users' values in a CSV and the aggregate of their reports."""
    folder = tmp_path_factory.mktemp("open")
    result = lipdesign("mechanism", "rappor", "-p", "f=0.5", "-p", "p=0.25", "-p", "q=0.75", "-p", "m=64", "-p", "h=2",
                       "-p", "cohorts=4", "-p", "seed=1", "-o", folder / "rappor.json")
    assert result.returncode == 0, result.stderr
    users = np.array(WORDS)[np.random.default_rng(0).choice(5, size=20_000, p=TRUTH)]
    (folder / "values.csv").write_text("value\n" + "\n".join(users) + "\n")
    for command in (("perturb", folder / "rappor.json", folder / "values.csv", "-o", folder / "reports.parquet",
                     "--seed", "1", "-q"),
                    ("aggregate", folder / "rappor.json", folder / "reports.parquet", "-o", folder / "aggregate.json",
                     "-q")):
        result = lipdesign(*command)
        assert result.returncode == 0, result.stderr
    (folder / "candidates.txt").write_text("\n".join(WORDS) + "\n")
    return folder, users


def test_estimate_over_a_candidate_file(collected):
    folder, users = collected
    result = lipdesign("estimate", folder / "rappor.json", folder / "aggregate.json", "--candidates",
                       folder / "candidates.txt", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    truth = np.array([np.mean(users == word) for word in WORDS])
    z = (np.array(document["values"]) - truth) / np.array(document["standard_errors"])
    assert np.abs(z).max() < 4  # least squares is unbiased when the list holds every value (docs/math.md §16.4)
    assert document["names"] == [f"frequency[{word}]" for word in WORDS]


def test_estimate_without_candidates_says_how_to_give_them(collected):
    folder, _ = collected
    line = one_line_error(lipdesign("estimate", folder / "rappor.json", folder / "aggregate.json"))
    assert "candidates is None" in line and "--candidates FILE" in line


@pytest.mark.parametrize("content, expected", [
    (b"the\nof\nthe\n", "line 3 repeats line 1 ('the')"),
    (b"the\n\xff\n", "line 2 is not valid UTF-8"),
    (b"the\n" + b"x" * 65 + b"\n", "line 2 is 65 bytes; every string must be at most max_bytes = 64 bytes (the "
                                     "mechanism's max_bytes"),
])
def test_bad_candidate_files(collected, content, expected):
    folder, _ = collected
    path = folder / "bad.txt"
    path.write_bytes(content)
    line = one_line_error(lipdesign("estimate", folder / "rappor.json", folder / "aggregate.json", "--candidates",
                                    path))
    assert expected in line


def test_candidates_for_a_family_that_takes_none(collected, tmp_path):
    folder, _ = collected
    result = lipdesign("mechanism", "grr", "--epsilon", "1", "-p", "k=3", "-o", tmp_path / "grr.json")
    assert result.returncode == 0, result.stderr
    (tmp_path / "values.csv").write_text("value\n0\n1\n2\n")
    assert lipdesign("perturb", tmp_path / "grr.json", tmp_path / "values.csv", "-o", tmp_path / "r.parquet", "-q",
                     "--seed", "1").returncode == 0
    assert lipdesign("aggregate", tmp_path / "grr.json", tmp_path / "r.parquet", "-o", tmp_path / "a.json",
                     "-q").returncode == 0
    line = one_line_error(lipdesign("estimate", tmp_path / "grr.json", tmp_path / "a.json", "--candidates",
                                    folder / "candidates.txt"))
    assert "grr takes none" in line


def test_more_cohorts_than_users_is_refused(tmp_path):
    result = lipdesign("mechanism", "rappor", "-p", "f=0.5", "-p", "p=0.25", "-p", "q=0.75", "-p", "m=16", "-p",
                       "cohorts=8", "-p", "seed=1", "-o", tmp_path / "rappor.json")
    assert result.returncode == 0, result.stderr
    (tmp_path / "values.csv").write_text("value\nthe\nof\nand\n")
    (tmp_path / "candidates.txt").write_text("the\nof\nand\n")
    assert lipdesign("perturb", tmp_path / "rappor.json", tmp_path / "values.csv", "-o", tmp_path / "r.parquet",
                     "-q", "--seed", "1").returncode == 0
    assert lipdesign("aggregate", tmp_path / "rappor.json", tmp_path / "r.parquet", "-o", tmp_path / "a.json",
                     "-q").returncode == 0
    line = one_line_error(lipdesign("estimate", tmp_path / "rappor.json", tmp_path / "a.json", "--candidates",
                                    tmp_path / "candidates.txt"))
    assert "reports holds 3 reports" in line and "8 cohorts" in line


def test_unlisted_mass_is_found_in_the_cells_no_candidate_uses():
    """A quarter of the candidates' users plus 300 unlisted words (75 % of users): the estimate from the unused cells
    agrees with 0.75 within 4 standard errors for each of 12 public hash seeds (RAPPOR and both sketches),
    and their average within 4 standard errors of the mean; with no unlisted users it is 0 within 4 standard errors.
    The estimate's note says it."""
    import lipdesign as ld

    words = np.array([f"w{i}" for i in range(400)], dtype=object)
    rng = np.random.default_rng(0)
    users = words[rng.integers(0, 400, size=60_000)]
    listed = words[rng.integers(0, 100, size=60_000)]
    for build in (lambda seed: ld.mechanisms.CountMeanSketch(4.0, m=256, d=16, seed=seed),
                  lambda seed: ld.mechanisms.HadamardCountMeanSketch(4.0, m=256, d=16, seed=seed),
                  lambda seed: ld.mechanisms.RAPPOR.for_epsilon(4.0, 2.0, m=256, h=2, cohorts=8, seed=seed)):
        shares, errors = [], []
        for seed in range(12):
            mechanism = build(seed).with_candidates(list(words[:100]))
            share, error = mechanism.unlisted_mass(mechanism.perturb(users, rng=seed))
            assert abs(share - 0.75) < 4 * error
            shares.append(share)
            errors.append(error)
        assert abs(np.mean(shares) - 0.75) < 4 * np.sqrt(np.sum(np.square(errors))) / len(shares)
        reports = mechanism.perturb(listed, rng=99)
        share, error = mechanism.unlisted_mass(reports)
        assert abs(share) < 4 * error
        estimate = mechanism.estimate(mechanism.perturb(users, rng=7))
        assert "users outside the list, estimated from the cells no candidate uses" in estimate.note


def test_a_byte_order_mark_is_not_part_of_the_first_candidate(collected):
    """Editors that write a UTF-8 byte-order mark first: without stripping it the first candidate would be
    '\\ufeffthe', a string no user holds, decoded silently as nearly 0."""
    folder, users = collected
    path = folder / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + (folder / "candidates.txt").read_bytes())
    result = lipdesign("estimate", folder / "rappor.json", folder / "aggregate.json", "--candidates", path, "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["names"][0] == "frequency[the]" and abs(document["values"][0] - np.mean(users == "the")) < 0.05


def test_white_space_around_a_candidate_is_kept_and_said(collected):
    folder, _ = collected
    path = folder / "spaces.txt"
    path.write_text("the\nof \nand\n")
    result = lipdesign("estimate", folder / "rappor.json", folder / "aggregate.json", "--candidates", path)
    assert result.returncode == 0 and "frequency[of ]" in result.stdout
    assert "line 2 ('of ') starts or ends with white space" in result.stderr


@pytest.mark.parametrize("content, expected", [
    (b"value\nthe\n\nof\n", "data row 2 (line 3): values is the empty string"),
    (b"value\nthe\nof\n\xff\xfe\n", "line 4 is not valid UTF-8"),
])
def test_a_values_file_with_an_empty_or_broken_line_is_refused_at_that_line(collected, tmp_path, content, expected):
    """An empty line was skipped (a user lost without a word); invalid UTF-8 was refused without its line."""
    folder, _ = collected
    (tmp_path / "values.csv").write_bytes(content)
    line = one_line_error(lipdesign("perturb", folder / "rappor.json", tmp_path / "values.csv", "-o",
                                    tmp_path / "r.parquet", "--seed", "1", "-q"))
    assert expected in line and not (tmp_path / "r.parquet").exists()


def test_a_reader_that_stops_early_is_no_error(tmp_path):
    """`lipdesign estimate ... | head -1`: the broken pipe ends the command quietly, exit 0. 2,000 candidates print
    about 180 KB, more than a pipe holds, so the command is still writing when the reader stops."""
    import subprocess
    import sys

    import lipdesign as ld

    words = [f"word{i}" for i in range(2000)]
    sketch = ld.mechanisms.CountMeanSketch(2.0, m=1024, d=16, seed=3)
    sketch.to_json(tmp_path / "cms.json")
    aggregate = sketch.aggregate(sketch.perturb(np.array(words * 5, dtype=object), rng=1))
    (tmp_path / "aggregate.json").write_text(json.dumps(aggregate.to_dict()))
    (tmp_path / "candidates.txt").write_text("\n".join(words) + "\n")
    command = [sys.executable, "-m", "lipdesign.cli", "estimate", str(tmp_path / "cms.json"),
               str(tmp_path / "aggregate.json"), "--candidates", str(tmp_path / "candidates.txt")]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout.readline().startswith(b"frequencies from n = 10000 reports")
        process.stdout.close()
        error = process.stderr.read().decode()
        assert process.wait(timeout=120) == 0 and error == "", error


def test_simulate_takes_candidates(collected):
    folder, _ = collected
    result = lipdesign("simulate", folder / "rappor.json", "-n", "20000", "--seed", "1", "-r", "3", "-q",
                       "--no-drift", "--candidates", folder / "candidates.txt", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["names"] == [f"frequency[{word}]" for word in WORDS]
    zipf = 1 / np.arange(1, 6)
    assert np.allclose(document["truth"], zipf / zipf.sum(), atol=0.01)  # Zipf(1) over the file's order


def test_non_negative_least_squares():
    """method='nnls' (scipy's solver): its counts meet the optimality conditions of min |y - A N / C|^2 over N >= 0,
    rebuilt here from the filters (the gradient A^T (A N / C - y) is >= 0, and 0 where N > 0); it carries no
    standard errors and no closed-form variance, and says so."""
    import lipdesign as ld

    words = np.array([f"w{i}" for i in range(300)], dtype=object)
    rng = np.random.default_rng(0)
    zipf = 1 / np.arange(1, 101)
    users = words[rng.choice(100, size=50_000, p=zipf / zipf.sum())]  # 300 candidates, 100 of them held
    rappor = ld.mechanisms.RAPPOR.for_epsilon(2.0, m=128, h=2, cohorts=16, seed=1, candidates=list(words))
    aggregate = rappor.aggregate(rappor.perturb(users, rng=2))
    estimate = rappor.estimate(aggregate, method="nnls")
    assert (estimate.values >= 0).all() and np.isnan(estimate.standard_errors).all()
    assert "no standard errors" in estimate.note
    # the optimality conditions, from the filters and the bit counts directly
    cohorts = np.arange(rappor.cohorts)
    columns = np.stack([rappor.filters([word] * rappor.cohorts, cohorts).ravel() for word in words], axis=1)
    reports, counts = aggregate.statistics["cohort_reports"], aggregate.statistics["bit_counts"]
    on, off = rappor.cell_probabilities()
    y = ((counts - reports[:, None] * off) / (on - off)).ravel()
    design = columns / rappor.cohorts
    counts_hat = estimate.values * aggregate.n
    gradient = design.T @ (design @ counts_hat - y)
    scale = np.abs(design.T @ y).max()
    assert (gradient > -1e-6 * scale).all()
    assert np.abs(gradient[counts_hat > 1e-6 * aggregate.n]).max() < 1e-6 * scale
    with pytest.raises(ld.ValidationError, match="method is 'nnls'"):
        rappor.variance(list(users[:100]), method="nnls")


def test_heavy_hitters_text_escapes_control_characters(tmp_path):
    """A string found from noise can hold control characters (NUL, ESC): the text output shows them escaped, so a
    terminal never receives them raw; printable strings (accents included) are shown as they are."""
    path = tmp_path / "values.txt"
    path.write_bytes(b"a\x01b\n" * 3 + "caf\u00e9\n".encode() * 3)
    result = lipdesign("heavy-hitters", path, "--epsilon", "8", "--top", "2", "--max-bytes", "5", "--seed", "1")
    assert result.returncode == 0, result.stderr
    assert "\x00" not in result.stdout and "\x01" not in result.stdout and "\x1b" not in result.stdout
    assert all(character.isprintable() or character == "\n" for character in result.stdout)
