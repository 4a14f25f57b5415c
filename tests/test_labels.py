"""Values given as labels that spell numbers ("02", "2.0", " 2") mean their own row on every input path: Python
lists and arrays, ld.perturb_blocks, and `lipdesign perturb` on CSV and Parquet files (docs/math.md §1, "Values and
labels"). Text is matched exactly; numbers are indices only when no label spells another number."""

import csv
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import lipdesign
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy import stats

import lipdesign as ld
from lipdesign.domains import Categorical
from lipdesign.engine import _csv_types, _input_batches
from lipdesign.errors import ValidationError
from lipdesign.mechanisms import GRR

#: Each spells a number other than its own index (read as indices, "02" would run through row 2).
LABELS = ["02", "2.0", " 2", "00", "x", "01"]
SPELLED = ["02", "2.0", " 2"]
USERS = 20000
EPSILON = 2.0


@pytest.fixture(scope="module")
def mechanism():
    k = len(LABELS)
    keep = math.exp(EPSILON) / (math.exp(EPSILON) + k - 1)
    table = np.full((k, k), (1 - keep) / (k - 1))
    np.fill_diagonal(table, keep)
    return ld.TableMechanism(table, ld.LDP(EPSILON), ld.Prior(np.full(k, 1 / k), labels=LABELS))


def assert_row(mechanism, reports, row):
    """The reports follow the realised row ``row`` (chi-square, p > 1e-6) and not the row the value's number
    would name: a test that fails when a label is read as an index."""
    counts = np.bincount(np.asarray(reports), minlength=mechanism.table.shape[1])
    expected = mechanism.realized[row] * counts.sum()
    assert stats.chisquare(counts, expected).pvalue > 1e-6, (row, counts)
    for other in range(mechanism.table.shape[0]):
        if other != row:
            assert stats.chisquare(counts, mechanism.realized[other] * counts.sum()).pvalue < 1e-12, (row, other)


@pytest.mark.parametrize("label", SPELLED)
def test_python_values_map_to_their_own_row(mechanism, label):
    row = LABELS.index(label)
    for values in ([label] * USERS, np.array([label] * USERS), np.array([label] * USERS, dtype=object)):
        assert_row(mechanism, mechanism.perturb(values, rng=1), row)
    assert_row(mechanism, ld.perturb_blocks(mechanism, np.array([label] * USERS), 5, block_rows=4096), row)


def test_numbers_are_refused_when_a_label_spells_another_number(mechanism):
    for values in ([2] * 10, np.full(10, 2.0), np.arange(6)):
        with pytest.raises(ValidationError, match=r"ambiguous for these labels: labels\[0\] is '02'"):
            mechanism.perturb(values, rng=0)


@pytest.mark.parametrize("text", ["2", "002", "2.00", "2 ", "+2", "X"])
def test_text_that_is_not_a_label_is_refused(mechanism, text):
    with pytest.raises(ValidationError, match="must be one of the labels"):
        mechanism.perturb([text], rng=0)


def test_numbers_are_indices_when_no_label_spells_another_number():
    domain = Categorical(4, labels=["00", "01", "b", "c"])  # "00" and "01" spell their own indices
    assert domain.validate([1, 3]).tolist() == [1, 3]
    assert domain.validate(np.array([1.0, 0.0])).tolist() == [1, 0]
    assert domain.validate(["01", "c"]).tolist() == [1, 3]
    with pytest.raises(ValidationError, match="labels"):
        domain.validate(["1"])


def test_integer_labels_read_integers_as_labels_and_refuse_floats():
    domain = Categorical(3, labels=[10, 20, 30])
    assert domain.validate([30, 10]).tolist() == [2, 0]
    assert domain.validate(["30"]).tolist() == [2]
    assert domain.validate(np.array([30, "10"], dtype=object)).tolist() == [2, 0]
    with pytest.raises(ValidationError, match="ambiguous"):
        domain.validate(np.array([1.0]))
    with pytest.raises(ValidationError, match=r"values\[1\] is 2.5; labels are text"):
        domain.validate(np.array([10, 2.5], dtype=object))



@pytest.fixture(scope="module")
def files(mechanism, tmp_path_factory):
    folder = tmp_path_factory.mktemp("labels")
    ld.save(mechanism, folder / "mech.json")
    for label in SPELLED:
        name = LABELS.index(label)
        with open(folder / f"v{name}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["value"])
            writer.writerows([label] for _ in range(USERS))
        pq.write_table(pa.table({"value": pa.array([label] * USERS, pa.string())}), folder / f"v{name}.parquet")
    return folder


@pytest.mark.parametrize("label", SPELLED)
@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_cli_files_map_values_to_their_own_row(mechanism, files, label, suffix):
    row = LABELS.index(label)
    out = f"r{row}-{suffix}.parquet"
    done = lipdesign("perturb", "mech.json", f"v{row}.{suffix}", "-o", out, "--seed", 3, "-q", cwd=files)
    assert done.returncode == 0, done.stderr
    assert_row(mechanism, ld.read_reports(files / out, mechanism), row)


def test_cli_refuses_a_numeric_parquet_column_for_number_spelling_labels(files):
    pq.write_table(pa.table({"value": pa.array([2] * 10, pa.int64())}), files / "numbers.parquet")
    done = lipdesign("perturb", "mech.json", "numbers.parquet", "-o", "n.parquet", cwd=files)
    assert done.returncode == 2 and "ambiguous for these labels" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (files / "n.parquet").exists()


def test_cli_refuses_text_that_is_not_a_label(files):
    (files / "bad.csv").write_text("value\n02\n2\n", encoding="utf-8")
    done = lipdesign("perturb", "mech.json", "bad.csv", "-o", "b.parquet", cwd=files)
    placed = "bad.csv, data row 2 (line 3): values is '2'; it must be one of the labels"
    assert done.returncode == 2 and placed in done.stderr, done.stderr


def test_a_mechanism_without_labels_reads_a_csv_column_as_integers(tmp_path):
    ld.save(GRR(1.0, 4), tmp_path / "grr.json")
    (tmp_path / "v.csv").write_text("value\n03\n3\n", encoding="utf-8")
    _, batches, _ = _input_batches(tmp_path / "v.csv", 10, _csv_types(ld.load(tmp_path / "grr.json")))
    assert next(iter(batches)).column("value").to_pylist() == [3, 3]
    (tmp_path / "f.csv").write_text("value\n3.0\n", encoding="utf-8")
    done = lipdesign("perturb", "grr.json", "f.csv", "-o", "r.parquet", cwd=tmp_path)
    assert done.returncode == 2 and "cannot read values" in done.stderr, done.stderr


# -- property: arbitrary text labels, numbers spelled as text among them ------------------------------------------
numbers_as_text = st.one_of(
    st.integers(-3, 12).map(str), st.integers(0, 12).map(lambda n: f"{n:03d}"),
    st.floats(-5, 12, allow_nan=False).map(str), st.integers(0, 12).map(lambda n: f" {n}"),
    st.integers(0, 12).map(lambda n: f"{n}.0"), st.sampled_from(["nan", "inf", "-0", "1e0", "1_0", "\u0662"]))
label_lists = st.lists(st.one_of(st.text(max_size=6), numbers_as_text), min_size=2, max_size=7, unique=True)
PROPERTY = settings(derandomize=True, database=None, deadline=None, max_examples=150,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def spells_another_number(labels):
    """Independent of the code under test: does some label parse as a number other than its index?"""
    for at, label in enumerate(labels):
        try:
            if float(label) != at:
                return True
        except ValueError:
            pass
    return False


@PROPERTY
@given(label_lists, st.lists(st.integers(0, 6), min_size=1, max_size=30), st.sampled_from(["csv", "parquet"]))
def test_every_path_maps_a_value_to_its_own_row(tmp_path, labels, picks, suffix):
    try:
        domain = Categorical(len(labels), labels=labels)
    except ValidationError:
        assume(False)  # labels_for's own rules (a canonical "3" away from index 3, lone surrogates, repeats)
    indices = np.array([pick % len(labels) for pick in picks])
    values = [labels[i] for i in indices]
    for given_values in (values, np.array(values), np.array(values, dtype=object)):
        assert domain.validate(given_values).tolist() == indices.tolist()
    path = tmp_path / f"values.{suffix}"
    if suffix == "csv":
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["value"])
            writer.writerows([value] for value in values)
    else:
        pq.write_table(pa.table({"value": pa.array(values, pa.string())}), path)
    k = len(labels)
    mechanism = ld.TableMechanism(np.full((k, k), 1 / k), ld.LDP(1.0), ld.Prior(np.full(k, 1 / k), labels=labels))
    _, batches, _ = _input_batches(path, 1000, _csv_types(mechanism))
    read = np.concatenate([batch.column("value").to_numpy(zero_copy_only=False) for batch in batches])
    assert domain.validate(read).tolist() == indices.tolist()
    if spells_another_number(labels):
        with pytest.raises(ValidationError, match="ambiguous"):
            domain.validate(indices)
    else:
        assert domain.validate(indices).tolist() == indices.tolist()
