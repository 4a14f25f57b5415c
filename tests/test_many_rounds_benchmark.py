"""benchmarks/many_rounds.py runs end to end on a tiny configuration (a smoke test: its figures are read, never
asserted as times): every protocol prints a row at every epsilon, in the table and in the summary, lipdesign's
columns either run or say it is not yet built, and the redraw table has a row per longitudinal protocol.
multi-freq-ldpy is a benchmark-only dependency, absent from CI: the test skips without it."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # about 10 s of CPU; the default suite skips it

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "many_rounds.py"
TINY = ["--quick", "--n", "3000", "--repeats", "2", "--epsilons", "1,2", "--redraw-users", "40",
        "--redraw-reports", "1,30", "--realised-calls", "3000", "--seed", "1"]


def benchmark():
    spec = importlib.util.spec_from_file_location("many_rounds_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_every_protocol_prints_a_row_at_every_epsilon(capsys):
    pytest.importorskip("multi_freq_ldpy")
    pytest.importorskip("xxhash")
    module = benchmark()
    module.main(TINY)
    out = capsys.readouterr().out
    protocols = module.MULTI + module.LONG
    table, summary = out.split("\nSummary")
    for protocol in protocols:
        for eps in ("1", "2"):
            pattern = rf"^{re.escape(protocol)} +{eps} "
            rows = [line for line in table.splitlines() if re.match(pattern, line)]
            assert len(rows) == (2 if protocol in module.LONG else 1), (protocol, eps)  # the MSE row (+ redraw)
            mse = float(rows[0].split()[4])
            assert 0 < mse < 0.1, (protocol, eps)  # their MSE at n = 3,000
            row = [line for line in summary.splitlines() if re.match(pattern, line)]
            assert len(row) == 1, (protocol, eps)
            assert "lipdesign: " in row[0] or re.search(r"\d\.\d{3}e-\d\d \+- ", row[0].split("+-", 1)[1]), row
    for protocol in module.LONG:  # multi-freq-ldpy's realised one-report epsilon, "eps+-se"
        row = next(line for line in table.splitlines() if re.match(rf"^{re.escape(protocol)} +1 ", line))
        assert re.fullmatch(r"\d+\.\d{3}\+-\d+\.\d{3}", row.split()[3]), row
    assert "One user with value 0" in out
    assert "recover more users than any eps_perm-LDP output allows" in out


def test_the_permanent_layer_bounds_are_exact():
    module = benchmark()
    # GRR's memo is the best any eps-LDP output allows; unary encoding and dBitFlipPM's memos allow less
    assert module.bound_memoised("L-GRR", 1.0, 0.5, 4, 1) == pytest.approx(module.bound_any_ldp(1.0, 4))
    for protocol in ("L-OUE", "L-OSUE", "L-SUE", "L-SOUE", "L-OLH", "dBitFlipPM"):
        assert 0.25 < module.bound_memoised(protocol, 1.0, 0.5, 4, 1) < module.bound_any_ldp(1.0, 4), protocol
    # dBitFlipPM with one bit over b = k buckets: right with probability 2p / k
    p = 1 / (1 + 2.718281828459045 ** -0.5)
    assert module.bound_memoised("dBitFlipPM", 1.0, None, 4, 1) == pytest.approx(2 * p / 4)


def test_the_unary_memo_bound_matches_a_simulation():
    """L-OUE's permanent layer memoised (OUE at eps_perm = 1 over K = 4), guessed by the Bayes rule (a set bit at
    random, else any value): the closed form within 4 standard errors of 200,000 simulated users."""
    import numpy as np

    module = benchmark()
    rng = np.random.default_rng(5)
    users, k, q = 200_000, 4, 1 / (np.e + 1)
    bits = rng.random((users, k)) < q
    bits[:, 0] = rng.random(users) < 0.5  # every user holds value 0
    scores = bits + rng.random((users, k)) * 1e-3  # ties at random
    share = float(np.mean(scores.argmax(axis=1) == 0))
    assert abs(share - module.bound_memoised("L-OUE", 1.0, 0.5, k, 1)) < 4 * np.sqrt(0.25 / users)
