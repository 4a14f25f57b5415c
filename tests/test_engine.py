"""Aggregation anywhere: the local engine streams files and arrays to the aggregate of all reports, the Dask engine
(a 2-worker LocalCluster) gives the same Aggregate bit for bit, and simulated reports do not depend on the split."""

import re
import subprocess
import sys
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lipdesign as ld
from lipdesign.engine import aggregate, block_generator, perturb_blocks, tree_sum
from lipdesign.errors import ValidationError
from lipdesign.mechanisms import GRR, OUE, family_class
from lipdesign.reports import ReportWriter, write_reports

INTEGER_FAMILIES = ["table", "grr", "oue", "olh", "hadamard", "harmony-categorical", "harmony-numeric",
                    "harmony-mixed", "duchi"]
FLOAT_FAMILIES = ["laplace", "piecewise", "hybrid"]


def simulated(mechanism, n, seed=5):
    values = mechanism.input_domain.sample(n, np.random.default_rng(seed))
    user_ids = np.arange(n) if mechanism.uses_user_ids else None
    return perturb_blocks(mechanism, values, seed, user_ids=user_ids, block_rows=1000)


def sources(mechanism, reports, tmp_path):
    """Three Parquet files with uneven row groups, one NPY file and one array, covering ``reports`` once."""
    cuts = [0, 1300, 2900, 4000, 4700, reports.shape[0]]
    parts = [reports[a:b] for a, b in pairwise(cuts)]
    paths = []
    for i, part in enumerate(parts[:3]):
        paths.append(tmp_path / f"r{i}.parquet")
        write_reports(paths[-1], mechanism, part, row_group_rows=350 + 100 * i)
    paths.append(tmp_path / "r3.npy")
    write_reports(paths[-1], mechanism, parts[3])
    return [*paths, parts[4]]


@pytest.mark.parametrize("family", INTEGER_FAMILIES)
def test_integer_statistics_equal_those_of_all_reports(family, tmp_path):
    mechanism = family_class(family).example()
    reports = simulated(mechanism, 5000)
    seen = []
    result = aggregate(mechanism, sources(mechanism, reports, tmp_path), batch_rows=400, progress=seen.append)
    assert result == mechanism.aggregate(reports)
    assert sum(seen) == 5000 and max(seen) < 1000


@pytest.mark.parametrize("family", FLOAT_FAMILIES)
def test_float_sums_equal_those_of_all_reports_up_to_summation_rounding(family, tmp_path):
    mechanism = family_class(family).example()
    reports = simulated(mechanism, 5000)
    result, whole = aggregate(mechanism, sources(mechanism, reports, tmp_path), batch_rows=400), \
        mechanism.aggregate(reports)
    assert result.n == 5000
    # either order of summation errs by at most (128 + log2 n) u sum |x| (numpy's pairwise sum; docs/math.md §15)
    bound = 2 * (128 + np.log2(5000)) * np.finfo(float).eps * np.abs(reports).sum(axis=0)
    assert np.all(np.abs(result["sums"] - whole["sums"]) <= bound)


def test_the_tree_is_pairwise_summation_whatever_the_count():
    def add(left, right):
        return f"({left}+{right})"

    assert tree_sum("0123456", add) == "(((0+1)+(2+3))+((4+5)+6))"
    assert tree_sum("012345", add) == "(((0+1)+(2+3))+(4+5))"
    assert tree_sum("01234", add) == "(((0+1)+(2+3))+4)"
    assert tree_sum("0", add) == "0"
    with pytest.raises(ValidationError, match="no reports"):
        tree_sum([], add)


def test_simulated_reports_do_not_depend_on_the_split():
    mechanism = GRR(1.0, 6)
    values = mechanism.input_domain.sample(5000, np.random.default_rng(1))
    whole = perturb_blocks(mechanism, values, 11, block_rows=1000)
    split = np.concatenate([perturb_blocks(mechanism, values[:2000], 11, block_rows=1000),
                            perturb_blocks(mechanism, values[2000:], 11, start=2000, block_rows=1000)])
    assert np.array_equal(whole, split)
    # block 2 draws from the third child of SeedSequence(11), as spawn() makes it
    child = np.random.SeedSequence(11).spawn(3)[2]
    expected = mechanism.perturb(values[2000:3000], rng=np.random.Generator(np.random.PCG64(child)))
    assert np.array_equal(whole[2000:3000], expected)
    assert np.array_equal(block_generator(11, 2).random(4), np.random.Generator(np.random.PCG64(child)).random(4))
    with pytest.raises(ValidationError, match="start is 1500; it must be a multiple of block_rows = 1000"):
        perturb_blocks(mechanism, values, 11, start=1500, block_rows=1000)


def test_bad_arguments_are_refused():
    mechanism = GRR(1.0, 3)
    with pytest.raises(ValidationError, match="engine is 'spark'"):
        aggregate(mechanism, [np.zeros(3, dtype=np.int64)], engine="spark")
    with pytest.raises(ValidationError, match="scheduler is 'tcp://x:1'.*engine='dask'"):
        aggregate(mechanism, [np.zeros(3, dtype=np.int64)], scheduler="tcp://x:1")
    with pytest.raises(ValidationError, match=r"sources\[1\] is 3"):
        aggregate(mechanism, [np.zeros(3, dtype=np.int64), 3])
    with pytest.raises(ValidationError, match=r"sources is \[\]; it must be a non-empty list"):
        aggregate(mechanism, [])


def test_empty_row_groups_files_and_arrays_add_nothing(tmp_path):
    mechanism = GRR(1.0, 4)
    reports = simulated(mechanism, 100)
    with ReportWriter(tmp_path / "r.parquet", mechanism) as writer:
        writer.write(reports)
        writer.write(mechanism.empty_reports())
    write_reports(tmp_path / "empty.parquet", mechanism, mechanism.empty_reports())
    write_reports(tmp_path / "empty.npy", mechanism, mechanism.empty_reports())
    assert aggregate(mechanism, [tmp_path / "r.parquet"], batch_rows=50) == mechanism.aggregate(reports)
    assert aggregate(mechanism, [tmp_path / "empty.parquet", reports, tmp_path / "empty.npy",
                                 mechanism.empty_reports()], batch_rows=30) == mechanism.aggregate(reports)
    nothing = aggregate(mechanism, [tmp_path / "empty.parquet", mechanism.empty_reports()])
    assert nothing.n == 0 and nothing["support"].tolist() == [0, 0, 0, 0]
    assert nothing.mechanism == mechanism.fingerprint


PEAK = """
import sys, tracemalloc
import pyarrow as pa
from lipdesign.engine import aggregate
from lipdesign.mechanisms import OUE
tracemalloc.start()
result = aggregate(OUE(1.0, 8000), [sys.argv[1]], batch_rows=256)
print(result.n, pa.default_memory_pool().max_memory(), tracemalloc.get_traced_memory()[1])
"""


def test_memory_does_not_grow_with_the_file(tmp_path):
    """Aggregating 4000 or 24000 reports of 1000 bytes (4 and 24 MB, one row group each) 256 at a time takes the
    same memory: Arrow's peak (pages through a bounded buffer) and Python's (one batch of reports and its bits)."""
    mechanism = OUE(1.0, 8000)
    values = np.random.default_rng(0).integers(0, 8000, 24000)
    reports = mechanism.perturb(values, rng=1)
    assert reports.shape == (24000, 1000)
    peaks = {}
    for n in (4000, 24000):
        write_reports(tmp_path / f"r{n}.parquet", mechanism, reports[:n])
        done = subprocess.run([sys.executable, "-c", PEAK, str(tmp_path / f"r{n}.parquet")], check=True,
                              capture_output=True, text=True, timeout=300)
        count, arrow, python = map(int, done.stdout.split())
        assert count == n
        peaks[n] = arrow, python
    (small_arrow, small_python), (large_arrow, large_python) = peaks[4000], peaks[24000]
    assert large_arrow <= small_arrow + 2 ** 20 and large_arrow < reports.nbytes / 2
    assert large_python <= small_python + 2 ** 20 and large_python < reports.nbytes / 2


def test_plug_in_standard_errors_of_a_frequency_oracle():
    mechanism = GRR(1.0, 4)
    reports = simulated(mechanism, 20000)
    result = mechanism.estimate(mechanism.aggregate(reports))
    f = np.asarray(mechanism.estimate(reports))
    assert np.all(f > 0)  # inside the simplex, so Norm-Sub leaves it as it is
    p, q = mechanism.p, mechanism.q  # Var f_v = [f_v p (1 - p) + (1 - f_v) q (1 - q)] / (n (p - q)^2)
    expected = np.sqrt((f * p * (1 - p) + (1 - f) * q * (1 - q)) / (20000 * (p - q) ** 2))
    np.testing.assert_allclose(result.standard_errors, expected, rtol=1e-9)
    assert np.array_equal(result.values, f)


def test_numeric_estimates_have_sample_standard_errors():
    mechanism = family_class("duchi").example()
    reports = simulated(mechanism, 2000)
    result = mechanism.estimate(mechanism.aggregate(reports))
    assert result.values.size == mechanism.input_domain.d
    # the reports' own sample standard deviation over sqrt(n), from the aggregate alone (docs/math.md §15)
    np.testing.assert_allclose(result.standard_errors, reports.std(axis=0, ddof=1) / np.sqrt(2000), rtol=1e-9)
    assert "conservative" in result.note and len(result.confidence_interval()[0]) == mechanism.input_domain.d


# -- Dask ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as local_cluster:
        yield local_cluster


@pytest.mark.parametrize("family", ["table", "unary", "hashing", "olh", "oue", "harmony-mixed", *FLOAT_FAMILIES])
def test_dask_equals_local_exactly(family, cluster, tmp_path):
    mechanism = family_class(family).example()
    reports = simulated(mechanism, 6000)
    files = sources(mechanism, reports, tmp_path)
    local = aggregate(mechanism, files, batch_rows=500)
    seen = []
    remote = aggregate(mechanism, files, engine="dask", scheduler=cluster.scheduler_address, batch_rows=500,
                       progress=seen.append)
    assert remote == local  # every statistic bit for bit, float sums included
    assert sum(seen) == 6000


def test_dask_workers_get_absolute_paths(cluster, tmp_path, monkeypatch):
    mechanism = GRR(1.0, 5)
    reports = simulated(mechanism, 2000)
    write_reports(tmp_path / "r.parquet", mechanism, reports, row_group_rows=500)
    monkeypatch.chdir(tmp_path)  # the workers run in the directory pytest started in
    assert aggregate(mechanism, ["r.parquet"], engine="dask", scheduler=cluster.scheduler_address,
                     batch_rows=500) == mechanism.aggregate(reports)


def test_a_bad_scheduler_address_is_a_validation_error():
    pytest.importorskip("distributed")
    with pytest.raises(ValidationError, match="scheduler is 'notanaddress'; cannot connect to a Dask scheduler"):
        aggregate(GRR(1.0, 3), [np.zeros(3, dtype=np.int64)], engine="dask", scheduler="notanaddress")


def test_dask_without_a_scheduler_starts_a_local_cluster(tmp_path):
    pytest.importorskip("distributed")
    mechanism = GRR(1.0, 5)
    reports = simulated(mechanism, 3000)
    write_reports(tmp_path / "r.parquet", mechanism, reports, row_group_rows=700)
    assert aggregate(mechanism, [tmp_path / "r.parquet"], engine="dask", batch_rows=1000) == \
        mechanism.aggregate(reports)


def test_aggregate_task_and_vector_documents_share_one_header_check():
    """A wrong format or version is refused with the same message shape by every JSON document reader."""
    from lipdesign.errors import FormatError
    from lipdesign.learn import LDPLinearRegression, Task, Trainer
    from lipdesign.mechanisms.aggregate import Aggregate
    from lipdesign.vectors import check_vectors, test_vectors

    grr = GRR(1.0, 3)
    task = Trainer(LDPLinearRegression(1.0, batch_size=10, random_state=0), 100, 2).task()
    readers = ((Aggregate.from_dict, grr.aggregate(grr.empty_reports()).to_dict(), ValidationError, "an aggregate"),
               (Task.from_dict, task.to_dict(), ValidationError, "a learning task"),
               (lambda document: check_vectors(grr, document), test_vectors(grr, n=2), FormatError, "a test vectors"))
    for read, document, error, what in readers:
        with pytest.raises(error, match=f"^format is 'x'; {what} document has format"):
            read({**document, "format": "x"})
        with pytest.raises(error, match=f"^format_version is 99; this lipdesign reads version \\d+ of {what} document"):
            read({**document, "format_version": 99})
        with pytest.raises(error, match=f"^format is None; {what} document"):
            read([document])


# -- perturb_file: a file of values to a report file, from Python -------------------------------------------------
LABELS = ["low", "mid", "high"]


def labelled_mechanism():
    """A designed-table mechanism over labelled values (LDP at 2: its largest ratio is 4 < e^2)."""
    return ld.TableMechanism(np.full((3, 3), 1 / 6) + np.eye(3) / 2, ld.LDP(2.0),
                             ld.Prior([0.5, 0.3, 0.2], labels=LABELS))


def write_labels(path, labels, header="value"):
    path.write_text(header + "\n" + "".join(f"{label}\n" for label in labels), encoding="utf-8")
    return path


def test_perturb_file_from_python_writes_reports_that_read_back_aggregate_and_estimate(tmp_path):
    mechanism = labelled_mechanism()
    truth = np.array([0.5, 0.3, 0.2])
    labels = np.random.default_rng(8).choice(LABELS, size=20000, p=truth)
    values = write_labels(tmp_path / "values.csv", labels)
    calls = []
    n = ld.perturb_file(mechanism, values, tmp_path / "reports.parquet", seed=7,
                        progress=lambda done, total: calls.append((done, total)))
    assert n == 20000 and calls == [(0, None), (20000, None)]  # a CSV's length is not known in advance
    assert sorted(path.name for path in tmp_path.iterdir()) == ["reports.parquet", "values.csv"]  # no .partial
    reports = ld.read_reports(tmp_path / "reports.parquet", mechanism)
    assert np.array_equal(reports, ld.perturb_blocks(mechanism, labels, 7))  # the seed's block streams
    total = ld.aggregate(mechanism, [tmp_path / "reports.parquet"])
    assert total == mechanism.aggregate(reports) and total.n == 20000
    estimate = mechanism.estimate(total)
    assert np.all(np.abs(estimate.values - truth) < 5 * estimate.standard_errors), (estimate.values, truth)


def test_perturb_file_writes_the_file_the_command_line_writes(tmp_path, capsys):
    from lipdesign.cli import main

    mechanism = labelled_mechanism()
    ld.save(mechanism, tmp_path / "mech.json")
    labels = np.random.default_rng(9).choice(LABELS, size=70000)  # two blocks of users
    pq.write_table(pa.table({"value": labels}), tmp_path / "values.parquet")
    write_labels(tmp_path / "values.csv", labels)
    for source in ("values.csv", "values.parquet"):
        command, library = tmp_path / f"cli-{source}.parquet", tmp_path / f"lib-{source}.parquet"
        assert main(["perturb", str(tmp_path / "mech.json"), str(tmp_path / source), "-o", str(command),
                     "--seed", "3", "--start", "65536", "-q"]) == 0
        assert "users 65536..135535" in capsys.readouterr().out
        assert ld.perturb_file(mechanism, tmp_path / source, library, seed=3, start=65536) == 70000
        assert command.read_bytes() == library.read_bytes()  # the same reports, metadata and layout, bit for bit
    assert np.array_equal(ld.read_reports(tmp_path / "lib-values.csv.parquet", mechanism),
                          ld.read_reports(tmp_path / "lib-values.parquet.parquet", mechanism))
    calls = []
    ld.perturb_file(mechanism, tmp_path / "values.parquet", tmp_path / "r.parquet", progress=lambda *c: calls.append(c))
    assert calls == [(0, 70000), (70000, 70000)]  # a Parquet file's length is known


def test_perturb_file_names_the_field_and_the_value_it_refuses(tmp_path):
    mechanism = labelled_mechanism()
    out = tmp_path / "r.parquet"
    nocolumn = write_labels(tmp_path / "nocolumn.csv", ["low"], header="label")
    with pytest.raises(ValidationError) as caught:
        ld.perturb_file(mechanism, nocolumn, out, seed=1)
    assert str(caught.value) == f"{nocolumn} has columns ['label']; table reads column(s) value (missing: value)"
    bad = write_labels(tmp_path / "bad.csv", ["low", "none"])
    with pytest.raises(ValidationError, match=r"bad\.csv, data row 2 \(line 3\): values is 'none'; it must be one "
                                              r"of the labels "
                                              r"\['low', 'mid', 'high'\]"):
        ld.perturb_file(mechanism, bad, out, seed=1)
    with pytest.raises(ValidationError, match=r"empty\.csv holds no values; it must hold at least one row"):
        ld.perturb_file(mechanism, write_labels(tmp_path / "empty.csv", []), out)
    assert not out.exists() and not (tmp_path / "r.parquet.partial").exists()


def test_perturb_file_refuses_bad_arguments_naming_them(tmp_path):
    mechanism = labelled_mechanism()
    values = write_labels(tmp_path / "v.csv", ["low"])
    out = tmp_path / "r.parquet"
    for arguments, message in (
            ({"start": 65536}, "start is 65536; it numbers the users of a seeded simulation, so it needs a seed"),
            ({"seed": 1, "start": 5}, "start is 5; it must be a non-negative multiple of 65536 below 2^62"),
            ({"seed": 1, "start": -65536}, "start is -65536; it must be a non-negative multiple"),
            ({"seed": -1}, "seed is -1; it must be an integer >= 0"),
            ({"seed": 1.5}, "seed is 1.5; it must be an integer >= 0"),
            ({"progress": 3}, "progress is 3; it must be None or a callable")):
        with pytest.raises(ValidationError, match="^" + re.escape(message)):
            ld.perturb_file(mechanism, values, out, **arguments)
    with pytest.raises(ValidationError, match="^mechanism is 'mech.json'; it must be a lipdesign Mechanism"):
        ld.perturb_file("mech.json", values, out)
    with pytest.raises(ValidationError, match=r"^reports_path is '.*r\.csv'; .*must end in \.parquet"):
        ld.perturb_file(mechanism, values, tmp_path / "r.csv")
    pq.write_table(pa.table({"value": ["low"]}), tmp_path / "v.parquet")
    with pytest.raises(ValidationError, match="which is the values file"):
        ld.perturb_file(mechanism, tmp_path / "v.parquet", tmp_path / "v.parquet")
    assert not out.exists() and pq.read_table(tmp_path / "v.parquet").column("value").to_pylist() == ["low"]


def test_estimate_with_errors_is_deprecated_for_estimate_itself():
    mechanism = GRR(1.0, 4)
    counts = mechanism.aggregate(mechanism.perturb(np.arange(400) % 4, rng=2))
    with pytest.warns(DeprecationWarning, match="removed in 0.4.0"):
        old = ld.estimate_with_errors(mechanism, counts)
    new = mechanism.estimate(counts)
    assert np.array_equal(old.values, new.values) and np.array_equal(old.standard_errors, new.standard_errors)
