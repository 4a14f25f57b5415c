"""The Dask engine when workers die (issue 23 item 4): losing one worker is recovered with the same aggregate;
losing every worker ends `lipdesign aggregate --engine dask` with exit 2 and one line that says retrying is safe
(never a traceback, never the exit 1 of a failed verification), and a task that kills every worker it runs on is
reported the same way.

Workers are killed from inside: a preload script (Dask's `distributed.worker.preload`, run in every worker process
when it starts, restarts included) wraps `lipdesign.engine._piece_aggregate` so that a task calls `os._exit`.

The preload must wrap the original function once, though distributed runs its body twice in each worker
(`distributed.utils.import_file` imports the file and then reloads it). A wrapper that wrapped whatever it found
wrapped itself, so every task that should aggregate recursed until RecursionError, and distributed 2026.8 cannot
deliver an error whose traceback is too deep to pickle: the client's handler fails an assertion
(`distributed.core.clean_exception`) and `Future.result()` waits forever. That, not the engine, was the 300 s hang of
the first attempt at the one-worker test. Tests that need a worker to be recovered therefore run `lipdesign` in a
process of its own, killed with its cluster after a deadline (`bounded`), so a regression fails and never hangs."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from helpers import lipdesign

from lipdesign.engine import aggregate
from lipdesign.errors import EngineError
from lipdesign.io import save
from lipdesign.mechanisms import GRR, Aggregate
from lipdesign.reports import write_reports

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

PRELOAD = '''
import os

import lipdesign.engine as engine

# the original, however many times this body runs in one process (distributed imports it, then reloads it)
_aggregate = getattr(engine._piece_aggregate, "__wrapped__", engine._piece_aggregate)


def _dying(mechanism, piece, batch_rows):
    mode = os.environ["LIPDESIGN_TEST_DIE"]
    if mode == "every task":
        os._exit(17)
    if mode == "raise":
        raise RuntimeError("a task's own error")
    if mode == "first piece" and piece[0] == "file" and piece[2][0] == 0:
        os._exit(17)
    if mode.startswith("once:"):  # "once:MARKER:GROUP": the piece from row group GROUP kills its worker, the first
        marker, group = mode[5:].rsplit(":", 1)  # time it runs in the cluster (MARKER is created then), never again
        if piece[0] == "file" and piece[2][0] == int(group):
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os._exit(17)
    return _aggregate(mechanism, piece, batch_rows)


_dying.__wrapped__ = _aggregate
engine._piece_aggregate = _dying
'''


@pytest.fixture
def files(tmp_path):
    mechanism = GRR(1.0, 5)
    reports = mechanism.perturb(np.arange(4000) % 5, rng=0)
    write_reports(tmp_path / "r.parquet", mechanism, reports, row_group_rows=500)
    save(mechanism, tmp_path / "m.json")
    (tmp_path / "preload.py").write_text(PRELOAD)
    return mechanism, reports, tmp_path


def dying_workers(mode, folder, monkeypatch):
    """Every worker started from now on (in this process's clusters, or a child's) runs the preload in ``mode``."""
    monkeypatch.setenv("LIPDESIGN_TEST_DIE", mode)
    monkeypatch.setenv("DASK_DISTRIBUTED__WORKER__PRELOAD", json.dumps([str(folder / "preload.py")]))
    return dask.config.set({"distributed.worker.preload": [str(folder / "preload.py")]})


def bounded(arguments, cwd, seconds=60):
    """``python ARGUMENTS`` in a session of its own, killed with every process it started (its LocalCluster's nannies
    and workers) if it has not ended after ``seconds``: a run that would wait forever fails the test instead."""
    process = subprocess.Popen([sys.executable, *map(str, arguments)], cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"{arguments} did not end within {seconds} s (killed)\n{stdout}\n{stderr}")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def one_worker_dying(folder, monkeypatch):
    """The piece from row group 4 (of 8) kills its worker the first time it runs, while the other worker lives and
    the pieces already done on the dying one are lost; Dask's allowed-failures is pinned at its default, 3."""
    monkeypatch.setenv("DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES", "3")
    return dying_workers(f"once:{folder / 'died'}:4", folder, monkeypatch)


def test_one_worker_dying_is_recovered_with_the_same_counts(files, monkeypatch):
    """`lipdesign aggregate --engine dask` (its own 2-worker LocalCluster) loses one worker mid-aggregation: it exits
    0 with the numpy engine's counts exactly, no piece lost or counted twice."""
    mechanism, reports, folder = files
    with one_worker_dying(folder, monkeypatch):
        result = bounded(["-m", "lipdesign.cli", "aggregate", "m.json", "r.parquet", "-o", "agg.json", "--engine",
                          "dask", "--batch-rows", "500", "--quiet"], cwd=folder)
    assert result.returncode == 0, result.stderr
    assert (folder / "died").exists()  # a worker did die
    assert "Traceback" not in result.stderr
    written = Aggregate.from_dict(json.loads((folder / "agg.json").read_text()))
    assert written.n == 4000
    assert written == mechanism.aggregate(reports) == aggregate(mechanism, [folder / "r.parquet"], batch_rows=500)


SCRIPT = """
import json

from lipdesign.engine import aggregate
from lipdesign.io import load

if __name__ == "__main__":  # the workers are spawned processes, which import this file
    mechanism, seen = load("m.json"), []
    result = aggregate(mechanism, ["r.parquet"], engine="dask", progress=seen.append, batch_rows=500)
    print(json.dumps({"aggregate": result.to_dict(), "progress": seen}))
"""


def test_one_worker_dying_reports_each_piece_once_to_progress(files, monkeypatch):
    """``ld.aggregate(..., engine="dask", progress=...)``: the lost worker's pieces are recomputed, and progress still
    receives each piece's rows exactly once."""
    mechanism, reports, folder = files
    (folder / "script.py").write_text(SCRIPT)
    with one_worker_dying(folder, monkeypatch):
        result = bounded(["script.py"], cwd=folder)
    assert result.returncode == 0, result.stderr
    assert (folder / "died").exists()
    output = json.loads(result.stdout)
    assert sorted(output["progress"]) == [500] * 8
    assert Aggregate.from_dict(output["aggregate"]) == mechanism.aggregate(reports)



def test_every_worker_dying_is_one_line_and_exit_2(files, monkeypatch):
    _mechanism, _, folder = files
    with dying_workers("every task", folder, monkeypatch):
        result = lipdesign("aggregate", "m.json", "r.parquet", "-o", "agg.json", "--engine", "dask",
                           "--batch-rows", "1000", cwd=folder)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("lipdesign: error: every worker of the 2-worker LocalCluster started for this call "
                               "died before the aggregation was complete")
    assert lines[0].endswith("so running the same aggregation again is safe")
    assert "Traceback" not in result.stderr and "CancelledError" not in result.stderr
    assert not (folder / "agg.json").exists()  # nothing written, as the message says


def test_a_task_that_kills_every_worker_it_runs_on_is_an_engine_error(files, monkeypatch):
    """KilledWorker: with allowed-failures 0 the first death gives the task up, while the other worker still holds
    the mechanism, so the tasks are not cancelled first."""
    mechanism, _, folder = files
    with dying_workers("first piece", folder, monkeypatch), \
            dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                     silence_logs=50) as cluster, \
            pytest.raises(EngineError) as raised:
        aggregate(mechanism, [folder / "r.parquet"], engine="dask", scheduler=cluster.scheduler_address,
                  batch_rows=1000)
    message = str(raised.value)
    assert "\n" not in message and raised.value.__cause__ is None and raised.value.__suppress_context__
    assert message.startswith(f"one task (a piece of the sources) was running on each of the 1 workers of the "
                              f"cluster at {cluster.scheduler_address!r} that died one after another (Dask's "
                              "allowed-failures is 0)")
    assert "running the same aggregation again is safe, but the same piece may kill its workers again" in message


def test_a_task_error_is_not_an_engine_error(files, monkeypatch):
    """Only the cluster's own failures become EngineError: a task's exception reaches the caller as raised."""
    mechanism, _, folder = files
    with dying_workers("raise", folder, monkeypatch), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                     silence_logs=50) as cluster, \
            pytest.raises(RuntimeError, match="^a task's own error$"):
        aggregate(mechanism, [folder / "r.parquet"], engine="dask", scheduler=cluster.scheduler_address,
                  batch_rows=1000)
