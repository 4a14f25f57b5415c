"""From a spec to an estimate with standard errors in four commands, as a user runs them (real processes): design,
perturb, aggregate (local and Dask), estimate; errors are one line with exit code 2."""

import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import lipdesign, one_line_error

from lipdesign.engine import _perturb_rows
from lipdesign.io import load
from lipdesign.mechanisms import GRR, OUE, Aggregate
from lipdesign.reports import read_reports

LABELS = ["low", "mid", "high"]




@pytest.fixture(scope="module")
def designed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("deploy")
    spec = folder / "spec.json"
    spec.write_text(json.dumps({"prior": {"probabilities": [0.5, 0.3, 0.2], "labels": LABELS},
                                "notion": {"kind": "LIP", "epsilon": 1.0}}))
    result = lipdesign("design", spec, "-o", "mech.json", "-q", cwd=folder)
    assert result.returncode == 0, result.stderr
    values = np.random.default_rng(3).choice(LABELS, size=30000, p=[0.4, 0.35, 0.25])
    (folder / "a.csv").write_text("user,value\n" + "".join(f"{i},{v}\n" for i, v in enumerate(values[:10000])))
    pq.write_table(pa.table({"value": values[10000:]}), folder / "b.parquet")
    return folder, values


def test_four_commands_from_spec_to_estimate(designed):
    folder, _ = designed
    for source, out in (("a.csv", "ra.parquet"), ("b.parquet", "rb.parquet")):
        result = lipdesign("perturb", "mech.json", source, "-o", out, "--seed", 7, cwd=folder)
        assert result.returncode == 0, result.stderr
    mechanism = load(folder / "mech.json")
    assert read_reports(folder / "ra.parquet", mechanism).shape == (10000,)
    result = lipdesign("aggregate", "mech.json", "ra.parquet", "rb.parquet", "-o", "agg.json", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert "aggregated 30000 reports from 2 file(s)" in result.stdout
    counts = Aggregate.from_dict(json.loads((folder / "agg.json").read_text()))
    reports = np.concatenate([read_reports(folder / name, mechanism) for name in ("ra.parquet", "rb.parquet")])
    assert counts == mechanism.aggregate(reports)
    result = lipdesign("estimate", "mech.json", "agg.json", "--json", cwd=folder)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    expected = mechanism.estimate(reports)
    np.testing.assert_array_equal(document["values"], expected.values)
    np.testing.assert_array_equal(document["standard_errors"], expected.standard_errors)
    low, high = expected.confidence_interval(0.95)
    np.testing.assert_array_equal(document["confidence_interval"]["low"], low)
    np.testing.assert_array_equal(document["confidence_interval"]["high"], high)
    assert document["n"] == 30000 and document["mechanism"] == mechanism.fingerprint
    result = lipdesign("estimate", "mech.json", "agg.json", cwd=folder)
    assert result.returncode == 0 and "frequency[low]" in result.stdout and "95% interval" in result.stdout


def test_a_seeded_perturb_does_not_depend_on_the_input_format(designed):
    folder, values = designed
    (folder / "c.csv").write_text("value\n" + "".join(f"{v}\n" for v in values[:10000]))
    pq.write_table(pa.table({"value": values[:10000]}), folder / "c.parquet")
    for source in ("c.csv", "c.parquet"):
        assert lipdesign("perturb", "mech.json", source, "-o", f"{source}.out.parquet", "--seed", 2, "-q",
                         cwd=folder).returncode == 0
    mechanism = load(folder / "mech.json")
    assert np.array_equal(read_reports(folder / "c.csv.out.parquet", mechanism),
                          read_reports(folder / "c.parquet.out.parquet", mechanism))


def test_dask_aggregate_equals_local(designed):
    pytest.importorskip("distributed")
    folder, _ = designed
    assert lipdesign("perturb", "mech.json", "b.parquet", "-o", "rd.parquet", "--seed", 1, "-q",
                     cwd=folder).returncode == 0
    for engine in ("local", "dask"):
        result = lipdesign("aggregate", "mech.json", "rd.parquet", "-o", f"{engine}.json", "--engine", engine,
                           "--batch-rows", 5000, "-q", cwd=folder)
        assert result.returncode == 0 and result.stderr == "", result.stderr
    assert json.loads((folder / "dask.json").read_text()) == json.loads((folder / "local.json").read_text())


def test_numeric_mechanism_reads_value_columns(tmp_path):
    assert lipdesign("mechanism", "duchi", "--epsilon", 1, "-p", "d=2", "-o", "duchi.json",
                     cwd=tmp_path).returncode == 0
    rows = np.random.default_rng(0).uniform(-1, 1, size=(4000, 2))
    (tmp_path / "v.csv").write_text("value_0,value_1\n" + "".join(f"{a},{b}\n" for a, b in rows))
    assert lipdesign("perturb", "duchi.json", "v.csv", "-o", "r.parquet", "--seed", 3, cwd=tmp_path).returncode == 0
    assert lipdesign("aggregate", "duchi.json", "r.parquet", "-o", "agg.json", cwd=tmp_path).returncode == 0
    result = lipdesign("estimate", "duchi.json", "agg.json", "--json", cwd=tmp_path)
    document = json.loads(result.stdout)
    mechanism = load(tmp_path / "duchi.json")
    np.testing.assert_array_equal(document["values"], mechanism.estimate(read_reports(tmp_path / "r.parquet",
                                                                                      mechanism)))
    reports = read_reports(tmp_path / "r.parquet", mechanism)
    np.testing.assert_allclose(document["standard_errors"], reports.std(axis=0, ddof=1) / np.sqrt(4000), rtol=1e-9)
    assert "conservative when the users' values differ" in document["note"]


def test_errors_are_one_line(designed, tmp_path):
    folder, _ = designed
    assert lipdesign("mechanism", "grr", "--epsilon", 1, "-p", "k=3", "-o", tmp_path / "grr.json",
                     cwd=folder).returncode == 0
    line = one_line_error(lipdesign("aggregate", tmp_path / "grr.json", "ra.parquet", "-o", tmp_path / "x.json",
                                    cwd=folder))
    assert "reports are of mechanism" in line
    (tmp_path / "bad.csv").write_text("label\nlow\n")
    line = one_line_error(lipdesign("perturb", "mech.json", tmp_path / "bad.csv", "-o", tmp_path / "r.parquet",
                                    cwd=folder))
    assert "reads column(s) value (missing: value)" in line and not (tmp_path / "r.parquet").exists()
    (tmp_path / "unknown.csv").write_text("value\nlow\nnone\n")
    line = one_line_error(lipdesign("perturb", "mech.json", tmp_path / "unknown.csv", "-o", tmp_path / "r.parquet",
                                    cwd=folder))
    assert "'none'" in line and not (tmp_path / "r.parquet").exists()
    line = one_line_error(lipdesign("estimate", tmp_path / "grr.json", "agg.json", cwd=folder))
    assert "aggregate is of mechanism" in line
    assert "--engine" in one_line_error(lipdesign("aggregate", "mech.json", "ra.parquet", "-o", "x.json",
                                                  "--engine", "spark", cwd=folder))


def test_unreadable_inputs_and_schedulers_are_one_line_errors(tmp_path):
    grr = tmp_path / "grr.json"
    GRR(1.0, 3).to_json(grr)
    # pyarrow infers int64 from the first block of the CSV; 'foo' comes blocks later, after reports were written
    (tmp_path / "late.csv").write_text("value\n" + "1\n" * 3_000_000 + "foo\n")
    line = one_line_error(lipdesign("perturb", grr, "late.csv", "-o", "late.parquet", "--seed", 1, "-q",
                                    cwd=tmp_path))
    assert "late.csv: cannot read values" in line and "'foo'" in line
    assert not (tmp_path / "late.parquet").exists() and not (tmp_path / "late.parquet.partial").exists()
    (tmp_path / "ok.csv").write_text("value\n" + "0\n1\n2\n" * 2000)
    assert lipdesign("perturb", grr, "ok.csv", "-o", "r.parquet", "--seed", 1, "-q", cwd=tmp_path).returncode == 0
    raw = bytearray((tmp_path / "r.parquet").read_bytes())
    column = pq.read_metadata(tmp_path / "r.parquet").row_group(0).column(0)
    start = column.dictionary_page_offset if column.has_dictionary_page else column.data_page_offset
    raw[start + column.total_compressed_size - 1] ^= 0xFF  # the last byte of the data page
    (tmp_path / "bad.parquet").write_bytes(bytes(raw))
    line = one_line_error(lipdesign("aggregate", grr, "bad.parquet", "-o", "x.json", "-q", cwd=tmp_path))
    assert "bad.parquet: cannot read reports" in line and not (tmp_path / "x.json").exists()
    line = one_line_error(lipdesign("aggregate", grr, "r.parquet", "-o", "x.json", "--engine", "dask",
                                    "--scheduler", "notanaddress", "-q", cwd=tmp_path))
    assert "scheduler is 'notanaddress'" in line


def test_files_of_one_simulation_take_their_own_start(tmp_path):
    """Split on a block, with --start from the previous file's message, two files give exactly the reports of the
    whole."""
    grr = tmp_path / "grr.json"
    GRR(1.0, 5).to_json(grr)
    values = np.random.default_rng(4).integers(0, 5, 3 * 65536 + 100)
    for name, part in (("all", values), ("first", values[:2 * 65536]), ("second", values[2 * 65536:])):
        pq.write_table(pa.table({"value": part}), tmp_path / f"{name}.parquet")
    whole = lipdesign("perturb", grr, "all.parquet", "-o", "r-all.parquet", "--seed", 9, "-q", cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    first = lipdesign("perturb", grr, "first.parquet", "-o", "r-first.parquet", "--seed", 9, "-q", cwd=tmp_path)
    assert "users 0..131071; the next file of this simulation takes --seed 9 --start 131072" in first.stdout
    second = lipdesign("perturb", grr, "second.parquet", "-o", "r-second.parquet", "--seed", 9, "--start", 131072,
                       "-q", cwd=tmp_path)
    assert second.returncode == 0 and "users 131072..196707" in second.stdout
    mechanism = GRR(1.0, 5)
    split = np.concatenate([read_reports(tmp_path / f"r-{name}.parquet", mechanism) for name in ("first", "second")])
    assert np.array_equal(split, read_reports(tmp_path / "r-all.parquet", mechanism))
    for start, rule in ((5, "multiple of 65536"), (-65536, "non-negative")):
        line = one_line_error(lipdesign("perturb", grr, "second.parquet", "-o", "x.parquet", "--seed", 9, "--start",
                                        start, cwd=tmp_path))
        assert f"--start is {start}" in line and rule in line
    line = one_line_error(lipdesign("perturb", grr, "second.parquet", "-o", "x.parquet", "--start", 0, cwd=tmp_path))
    assert "needs --seed" in line


def test_a_bad_value_is_placed_in_the_file_and_missing_files_are_named(tmp_path):
    grr = tmp_path / "grr.json"
    GRR(1.0, 5).to_json(grr)
    values = np.zeros(300_000, dtype=np.int64)
    values[250_000] = 7
    pq.write_table(pa.table({"value": values}), tmp_path / "v.parquet")
    for seed in ((), ("--seed", 1)):  # chunks of users, and blocks of 65536 within them
        line = one_line_error(lipdesign("perturb", grr, "v.parquet", "-o", "r.parquet", *seed, cwd=tmp_path))
        match = re.search(r"v\.parquet, data row (\d+): values contains 7;", line)
        assert match, line
        assert int(match.group(1)) == 250_001, line  # counted from 1: the value at index 250,000
    for command, expected in ((("perturb", grr, "nope.csv", "-o", "r.parquet"), "values is 'nope.csv'"),
                              (("aggregate", grr, "nope.parquet", "-o", "a.json"), "reports is 'nope.parquet'"),
                              (("estimate", grr, "nope.json"), "aggregate is 'nope.json'"),
                              (("verify", "nope.json"), "mechanism is 'nope.json'")):
        assert one_line_error(lipdesign(*command, cwd=tmp_path)).endswith(f"{expected}; no such file")


def test_perturb_chunks_are_sized_in_bytes():
    wide, narrow = OUE(1.0, 40000), GRR(1.0, 3)  # 5000 and 8 bytes per report
    assert _perturb_rows(wide, seeded=False) == 64 * 2 ** 20 // 5000
    assert _perturb_rows(wide, seeded=True) == 2 ** 16  # one block of users, the least a seeded chunk can be
    assert _perturb_rows(narrow, seeded=False) == _perturb_rows(narrow, seeded=True) == 2 ** 20


def test_vectors_are_written_and_checked_from_the_command_line(tmp_path):
    mechanism = tmp_path / "grr.json"
    GRR(1.0, 5).to_json(mechanism)
    vectors = tmp_path / "vectors.json"
    result = lipdesign("vectors", mechanism, "-o", vectors, "--cases", 8, cwd=tmp_path)
    assert result.returncode == 0 and "wrote 8 test vectors of grr" in result.stdout, result.stderr
    assert len(json.loads(vectors.read_text())["cases"]) == 8
    result = lipdesign("vectors", mechanism, "--check", vectors, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("PASS"), result.stdout + result.stderr
    document = json.loads(vectors.read_text())
    document["cases"][3]["report"] = (document["cases"][3]["report"] + 1) % 5
    vectors.write_text(json.dumps(document))
    result = lipdesign("vectors", mechanism, "--check", vectors, cwd=tmp_path)
    assert result.returncode == 1 and "FAIL" in result.stdout and "case 3" in result.stdout, result.stdout
    result = lipdesign("vectors", mechanism, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "-o is missing" in result.stderr
