"""The command line as a user runs it: real processes, exit codes, one-line errors."""

import io
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import lipdesign, run_main

import lipdesign as ld

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("spec", sorted((ROOT / "examples").glob("*.json")), ids=lambda p: p.name)
def test_design_verify_simulate_on_the_examples(spec, tmp_path):
    out = tmp_path / "mech.json"
    result = lipdesign("design", spec, "-o", out, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "optimal LDP" in result.stdout and out.exists()
    fingerprint = json.loads(out.read_text())["fingerprint"]
    assert f"(fingerprint {fingerprint})" in result.stdout
    result = lipdesign("verify", out, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("PASS"), result.stdout + result.stderr
    assert f"fingerprint {fingerprint} " in result.stdout  # what an operator compares between server and devices
    result = lipdesign("simulate", out, "-n", 20000, "--seed", 3, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "empirical" in result.stdout and "theoretical" in result.stdout


def test_a_unary_spec_designs_verifies_and_simulates(tmp_path):
    spec = tmp_path / "unary.json"
    spec.write_text(json.dumps({"prior": {"probabilities": [0.4, 0.25, 0.15, 0.1, 0.06, 0.04]},
                                "notion": {"kind": "LIP", "epsilon": 1.0}, "family": "unary"}))
    out = tmp_path / "mech.json"
    result = lipdesign("design", spec, "-o", out, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "unary encoding, LIP eps=1, k=6" in result.stdout and "symmetric LIP unary" in result.stdout
    assert json.loads(out.read_text())["family"] == "unary"
    result = lipdesign("verify", out, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("PASS"), result.stdout + result.stderr
    result = lipdesign("simulate", out, "-n", 20000, "--seed", 3, cwd=tmp_path)
    assert result.returncode == 0 and "theoretical" in result.stdout, result.stderr
    bounded = json.loads((Path(__file__).parents[1] / "examples" / "battery-drain-bp-lip.json").read_text())
    bounded = {key: value for key, value in bounded.items() if key != "objective"}  # the histogram
    spec.write_text(json.dumps({**bounded, "family": "unary"}))
    result = lipdesign("design", spec, "-o", out, cwd=tmp_path)
    assert result.returncode == 0 and "eps-LIP for X holds at every prior of the set" in result.stdout, result.stderr
    spec.write_text(json.dumps({**bounded, "family": "hashing"}))
    result = lipdesign("design", spec, "-o", out, cwd=tmp_path)
    assert result.returncode == 2 and "a latent secret or a prior set is not built for it" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_verify_fails_with_exit_1_on_a_tampered_table(tmp_path):
    out = tmp_path / "mech.json"
    assert lipdesign("design", ROOT / "examples/screen-time-lip.json", "-o", out, cwd=tmp_path).returncode == 0
    document = json.loads(out.read_text())
    table = document["parameters"]["table"]
    document["parameters"]["table"] = [[1.0 if x == y else 0.0 for y in range(len(table[0]))]
                                       for x in range(len(table))]
    out.write_text(json.dumps(document))
    result = lipdesign("verify", out, cwd=tmp_path)
    assert result.returncode == 1 and result.stdout.startswith("FAIL")


def test_demo_writes_the_table_and_the_plot(tmp_path):
    result = lipdesign("demo", "--out", tmp_path / "demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "demo/demo-variance.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert lipdesign("verify", tmp_path / "demo/demo-mechanism.json", cwd=tmp_path).returncode == 0
    lines = result.stdout.splitlines()
    rows = [line.split() for line in lines if line.strip() and line.split()[0].replace(".", "").isdigit()]
    assert len(rows) >= 3
    for epsilon, lip, ldp, subset, grr, oue, ldp_double in (map(float, row) for row in rows):
        # eps-LDP tables are eps-LIP (docs/math.md §2), and the optimal LDP table is at least as good as any
        assert lip <= ldp * (1 + 1e-6) and ldp <= min(subset, grr, oue) * (1 + 1e-6) and ldp_double < ldp
    for phrase in ("2 eps-LDP in the worst case", "drifted by TV 0.2", "PriorSet.from_counts", "latent secret"):
        assert phrase in result.stdout, phrase


@pytest.mark.parametrize("spec, message", [
    ({"prior": {"probabilities": [0.5, 0.6]}, "notion": {"kind": "LIP", "epsilon": 1}},
     "prior sums to 1.1; it must sum to 1"),
    ({"prior": {"probabilities": [0.5, 0.5]}, "notion": {"kind": "LIP", "epsilon": 0}}, "notion/epsilon"),
    ({"prior": {"probabilities": [0.5, 0.5]}, "notion": {"kind": "DP", "epsilon": 1}}, "notion/kind"),
    ({"prior": {"probabilities": [0.5, 0.5]}}, "'notion' is a required property"),
    ({"prior": {"probabilities": [0.5, 0.0, 0.5]}, "notion": {"kind": "LIP", "epsilon": 1}},
     r"prior\[1\] is 0; LIP design needs"),
    ({"prior": {"probabilities": [0.2, 0.8]}, "notion": {"kind": "BP-LIP", "epsilon": 1,
      "prior_set": {"kind": "box", "lower": [0.3, 0.5], "upper": [0.5, 0.7]}}}, "not in the box prior_set"),
    # a field the notion cannot use is refused, never stripped from the design
    ({"prior": {"probabilities": [0.5, 0.5]}, "notion": {"kind": "LDP", "epsilon": 1, "secret": {"dag": {
        "secret": "a", "observed": "b", "nodes": {"a": {"states": 2, "cpt": [0.5, 0.5]}, "b": {
            "states": 2, "parents": ["a"], "cpt": [[0.9, 0.1], [0.1, 0.9]]}}}}}}, "notion.secret is set; an LDP"),
    ({"prior": {"probabilities": [0.2, 0.8]}, "notion": {"kind": "LDP", "epsilon": 1, "prior_set": {
        "kind": "box", "lower": [0.1, 0.7], "upper": [0.3, 0.9]}}}, "notion.prior_set is set; an LDP"),
    ({"prior": {"probabilities": [0.2, 0.8]}, "notion": {"kind": "WC-LIP", "epsilon": 1, "prior_set": {
        "kind": "box", "lower": [0.1, 0.7], "upper": [0.3, 0.9]}}}, "notion.prior_set is set; a WC-LIP"),
])
def test_bad_specs_exit_2_with_one_line(spec, message, tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    result = lipdesign("design", path, "-o", tmp_path / "m.json", cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("lipdesign: error: ")
    assert re.search(message, result.stderr), result.stderr
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("args", [["frobnicate"], ["design"], ["simulate", "missing.json"],
                                  ["simulate", "x.json", "-n", "many"]])
def test_bad_command_lines_exit_2_with_one_line(args, tmp_path):
    result = lipdesign(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_a_spec_without_objective_designs_for_the_population_and_a_mean_needs_values(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"prior": {"probabilities": [0.2, 0.3, 0.5]}, "notion": {"kind": "LIP", "epsilon": 1}}))
    assert lipdesign("design", spec, "-o", tmp_path / "m.json", "-q", cwd=tmp_path).returncode == 0
    assert json.loads((tmp_path / "m.json").read_text())["parameters"]["objective"] == {"kind": "frequencies"}
    spec.write_text(json.dumps({"prior": {"probabilities": [0.5, 0.5]}, "notion": {"kind": "LIP", "epsilon": 1},
                                "objective": {"kind": "mean"}}))
    result = lipdesign("design", spec, "-o", tmp_path / "m.json", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "objective: 'mean' needs its values" in result.stderr


# Progress bars: on stderr only, off with --quiet and when stderr is not a terminal, never on stdout.

#: A spec whose design reports progress in two phases (two rounds of column generation, then the baselines at eps
#: and 2 eps) in about a second.
SMALL_COLUMNS_SPEC = {"prior": {"probabilities": [0.4, 0.2, 0.14, 0.1, 0.08, 0.08]},
                      "notion": {"kind": "LIP", "epsilon": 1.0}, "method": "columns", "max_rounds": 2}


@pytest.fixture(scope="module")
def progress_files(tmp_path_factory):
    """A small design spec and a GRR mechanism file, in a folder of their own."""
    folder = tmp_path_factory.mktemp("progress")
    (folder / "spec.json").write_text(json.dumps(SMALL_COLUMNS_SPEC))
    made = lipdesign("mechanism", "grr", "--epsilon", 1, "-p", "k=4", "-o", "m.json", cwd=folder)
    assert made.returncode == 0, made.stderr
    return folder


#: Every long command, on the small inputs: design, compare, simulate, audit.
LONG_COMMANDS = {"design": ["design", "spec.json", "-o", "out.json"],
                 "compare": ["compare", "spec.json"],
                 "simulate": ["simulate", "m.json", "-n", 2000, "-r", 30, "--seed", 1],
                 "audit": ["audit", "m.json", "--reports", 200_000, "--seed", 1]}


def timeless(stdout):
    """``stdout`` without compare's design times (seconds, before the client cost), which differ run to run."""
    return re.sub(r" \d+\.\d\d(?=  O\()", " <time>", stdout)


@pytest.mark.parametrize("command", sorted(LONG_COMMANDS))
def test_quiet_leaves_stderr_empty_and_stdout_as_it_is(command, progress_files):
    quiet = lipdesign(*LONG_COMMANDS[command], "--quiet", cwd=progress_files)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == "" and quiet.stdout
    loud = lipdesign(*LONG_COMMANDS[command], cwd=progress_files)  # stderr is a pipe: no bar, the lines as text
    assert loud.returncode == 0, loud.stderr
    assert timeless(loud.stdout) == timeless(quiet.stdout)
    if command != "simulate":  # simulate has no lines of text, only its bar
        assert loud.stderr and "\r" not in loud.stderr and "%|" not in loud.stderr


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal: what tqdm's disable=None checks before it draws."""

    def isatty(self):
        return True


def in_process(monkeypatch, folder, args, terminal):
    """(exit code, stdout, stderr) of ``lipdesign.cli.main(args)`` run in ``folder``, stderr a terminal or not."""
    from lipdesign.cli import main

    out, err = io.StringIO(), _Terminal() if terminal else io.StringIO()
    monkeypatch.chdir(folder)
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        code = main([str(arg) for arg in args])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("command, shown", [
    ("design", ["column generation:", "/2 [", "rounds", "baselines:", "epsilons",
                "column generation round 2: ", "baselines: optimal LDP table and fixed protocols at eps=2 (2 of 2)"]),
    ("compare", ["compare:", "families", "column generation:", "rounds", "compare: designing count-mean sketch"]),
    ("simulate", ["simulate:", "/60 [", "repetitions"]),
    ("audit", ["audit grr:", "reports", "audit grr: [##########] 100 % (400000 of 400000 reports)"]),
])
def test_a_terminal_sees_a_bar_on_stderr_and_stdout_stays_byte_identical(command, shown, progress_files,
                                                                          monkeypatch):
    args = LONG_COMMANDS[command]
    code, quiet_out, quiet_err = in_process(monkeypatch, progress_files, [*args, "-q"], terminal=True)
    assert code == 0 and quiet_err == ""
    code, out, err = in_process(monkeypatch, progress_files, args, terminal=True)
    assert code == 0
    assert timeless(out) == timeless(quiet_out)
    assert "%|" in err and "\r" in err, err  # a tqdm bar, redrawn in place
    for text in shown:
        assert text in err, (text, err)
    # the bars are gone once closed (leave=False): what stays is the last line of each phase, on a line of its own
    kept = [line.rsplit("\r", 1)[-1] for line in err.split("\n")]
    assert all("%|" not in line for line in kept), kept


def test_a_real_terminal_draws_the_bar(progress_files):
    """End to end: stderr on a pseudo-terminal (of 100 columns), stdout on a pipe."""
    pty = pytest.importorskip("pty")
    import fcntl
    import os
    import select
    import struct
    import termios

    args = [sys.executable, "-m", "lipdesign.cli", *map(str, LONG_COMMANDS["simulate"])]
    master, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen(args, cwd=progress_files, stdout=subprocess.PIPE, stderr=terminal)
    os.close(terminal)
    drawn = b""
    try:
        while select.select([master], [], [], 120)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the command has closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        else:
            pytest.fail("the command stopped writing to its terminal for 2 minutes")
        stdout = process.communicate(timeout=120)[0]
    finally:
        os.close(master)
        process.kill()
    assert process.returncode == 0, drawn
    text = drawn.decode("utf-8", "replace")
    assert "simulate:" in text and "%|" in text and "/60 [" in text and "repetitions" in text, text
    quiet = lipdesign(*LONG_COMMANDS["simulate"], "-q", cwd=progress_files)
    assert stdout.decode() == quiet.stdout


def test_simulate_reports_each_repetition_and_checks_the_callable():
    from lipdesign.mechanisms import GRR

    calls = []
    ld.simulate(GRR(1.0, 4), 1000, rng=0, repetitions=3, drift=False, progress=lambda *call: calls.append(call))
    assert calls == [(1, 3), (2, 3), (3, 3)]
    calls.clear()
    result = ld.simulate(GRR(1.0, 4), 1000, rng=0, repetitions=3, progress=lambda *call: calls.append(call))
    assert result.drifted is not None and calls == [(done, 6) for done in range(1, 7)]  # and the drifted run's
    plain = ld.simulate(GRR(1.0, 4), 1000, rng=0, repetitions=3)
    assert np.array_equal(plain.estimates, result.estimates)  # progress draws nothing
    for bad in (3, "print"):
        with pytest.raises(ld.ValidationError, match="progress is"):
            ld.simulate(GRR(1.0, 4), 1000, rng=0, progress=bad)


def test_audit_counts_reports_for_a_bar_beside_its_lines():
    from lipdesign.auditor import BATCH
    from lipdesign.mechanisms import GRR

    counts, lines = [], []
    ld.audit(GRR(1.0, 4), reports=3 * BATCH, rng=0, progress=lines.append,
             progress_reports=lambda *call: counts.append(call))
    total = counts[-1][1]
    assert total % (3 * BATCH) == 0 and total > 0
    assert counts == [(done, total) for done in range(BATCH, total + 1, BATCH)]  # one call per batch
    assert lines[-1].endswith(f"({total} of {total} reports)")  # the lines are as they were
    with pytest.raises(ld.ValidationError, match="progress_reports is"):
        ld.audit(GRR(1.0, 4), reports=1000, rng=0, progress_reports=3)


def test_design_lines_are_strings_that_count_their_phase():
    lines = []
    spec = SMALL_COLUMNS_SPEC
    ld.design(spec["prior"]["probabilities"], ld.LIP(1.0), method="columns", max_rounds=2, progress=lines.append)
    assert all(isinstance(line, str) for line in lines)
    assert [(line.phase, line.done, line.total, line.unit) for line in lines] == [
        ("column generation", 0, 2, "rounds"), ("column generation", 0, 2, "rounds"),  # the bounds, the seeds
        ("column generation", 1, 2, "rounds"), ("column generation", 2, 2, "rounds"),
        ("baselines", 0, 2, "epsilons"), ("baselines", 1, 2, "epsilons")]
    assert lines[0] == "column generation: certified lower bounds (k = 6)"
    assert lines[2].startswith("column generation round 1: ") and lines[2].endswith(lines[2].detail)


def test_version_prints_the_package_version(capsys):
    assert run_main(capsys, "--version") == (0, f"lipdesign {ld.__version__}\n", "")


def test_mechanism_help_lists_every_family_and_one_familys_parameters(capsys):
    from lipdesign.mechanisms import families
    from lipdesign.mechanisms.numeric import DUCHI_MAX_D
    from lipdesign.mechanisms.oracle import MAX_K

    code, out, _ = run_main(capsys, "harmony", "--help")
    assert code == 0
    for family in ("grr", "oue", "olh", "hadamard", "harmony-categorical", "laplace", "duchi", "harmony-numeric",
                   "piecewise", "hybrid", "harmony-mixed"):
        assert re.search(rf"^  {family} \(", out, re.MULTILINE), family
    assert all(family in out for family in families())  # the designed ones on the last line
    assert re.search(rf"-p k +required +integer in 2\.\.{MAX_K}$", out, re.MULTILINE)
    code, out, _ = run_main(capsys, "mechanism", "Duchi", "--help")  # lipdesign 0.1.0's class name too
    assert code == 0 and "duchi (Duchi)" in out and "grr (GRR)" not in out
    assert re.search(r"--epsilon +required +in \[1e-06, 10\]$", out, re.MULTILINE)
    assert re.search(rf"-p d +default 1 +integer in 1\.\.{DUCHI_MAX_D}$", out, re.MULTILINE)


@pytest.mark.parametrize("args, message", [
    (["harmony", "Duchi", "--epsilon", 1, "-p", "dd=4"],
     "--param is 'dd'; duchi takes -p d and --epsilon (their ranges: `lipdesign mechanism duchi --help`)"),
    (["mechanism", "olh", "--epsilon", 1, "-p", "k=4", "-p", "buckets=3"],
     "--param is 'buckets'; olh takes -p k, -p g, -p pool, -p seed and --epsilon"),
    (["mechanism", "grr", "--epsilon", 1],
     "k is missing; pass -p k=VALUE (integer in 2..4611686018427387903); grr takes -p k and --epsilon"),
    (["mechanism", "harmony-mixed", "--epsilon", 1], "attributes is missing; pass -p attributes=VALUE (list of"),
    (["mechanism", "unary", "--epsilon", 1],
     "family is 'unary'; it must be one of class-lip, cms, dbitflip, duchi, grr,"),
])
def test_bad_or_missing_parameters_exit_2_with_one_line_naming_them(args, message, capsys, tmp_path):
    code, out, err = run_main(capsys, *args, "-o", tmp_path / "m.json")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"lipdesign: error: {message}"), err
    assert "__init__" not in err and not (tmp_path / "m.json").exists()


def png_written(path):
    return Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_draws_a_spec_design_beside_its_baselines_and_bound(capsys, tmp_path):
    from lipdesign.io import read_json, spec_to_problem
    from lipdesign.plot import design_figure

    spec = ROOT / "examples/screen-time-lip.json"
    code, out, _ = run_main(capsys, "plot", spec, "-o", tmp_path / "p.png", "--epsilons", "0.5,1", "-q")
    assert code == 0 and png_written(tmp_path / "p.png")
    assert out == "wrote " + str(tmp_path / "p.png") + ": screen-time-lip.json: k = 4, LIP, objective frequencies\n"
    figure = design_figure(*spec_to_problem(read_json(spec)), "screen-time-lip.json", epsilons=[0.5, 1.0])
    axes = figure.axes[0]
    assert axes.get_title() == "screen-time-lip.json: k = 4, LIP, objective frequencies"
    assert axes.get_ylabel() == "n x sum of variances of the unbiased estimate at the design prior"
    labels = [text.get_text() for text in axes.get_legend().get_texts()]
    assert labels == ["LIP design", "optimal LDP", "GRR", "OUE", "OLH", "subset selection", "optimal LDP at 2 eps",
                      "lower bound"]
    assert all(list(line.get_xdata()) == [0.5, 1.0] for line in axes.get_lines())
    lines = {label: line.get_ydata() for label, line in zip(labels, axes.get_lines())}
    design, bound = lines["LIP design"], lines["lower bound"]
    assert (bound <= design * (1 + 1e-6)).all()
    assert all((design <= lines[label]).all() for label in labels[1:6])  # the baselines at the same eps
    # eps-LIP is only 2 eps-LDP: that curve at eps = 0.5 is the optimal LDP table at eps = 1
    assert math.isclose(lines["optimal LDP at 2 eps"][0], lines["optimal LDP"][1], rel_tol=1e-6)
    assert axes.get_lines()[labels.index("optimal LDP at 2 eps")].get_linestyle() == "--"


def test_plot_of_a_spec_whose_design_is_a_fixed_protocol_draws_it_beside_the_oracles(capsys, tmp_path):
    """Local hashing under LDP is OLH (no design curve, baselines or bound): plotted as a fixed mechanism."""
    spec = {"prior": {"probabilities": [0.4, 0.3, 0.2, 0.1]}, "notion": {"kind": "LDP", "epsilon": 1},
            "family": "hashing"}
    path = tmp_path / "olh.json"
    path.write_text(json.dumps(spec))
    code, out, err = run_main(capsys, "plot", path, "-o", tmp_path / "olh.png", "--epsilons", "0.5,1", "-q")
    assert code == 0 and png_written(tmp_path / "olh.png"), err
    assert out.endswith(": olh.json: olh, k = 4\n")


def test_plot_draws_mechanism_files(capsys, tmp_path):
    from lipdesign.io import load
    from lipdesign.plot import mechanism_figure

    assert run_main(capsys, "mechanism", "oue", "--epsilon", 2, "-p", "k=8", "-o", tmp_path / "oue.json")[0] == 0
    code, out, _ = run_main(capsys, "plot", tmp_path / "oue.json", "-o", tmp_path / "oue.png")
    assert code == 0 and png_written(tmp_path / "oue.png") and out.endswith(": oue.json: oue, k = 8\n")
    axes = mechanism_figure(load(tmp_path / "oue.json"), "oue.json").axes[0]
    assert [text.get_text() for text in axes.get_legend().get_texts()] == ["OUE", "GRR", "OLH"]
    assert list(axes.get_lines()[0].get_xdata()) == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert run_main(capsys, "design", ROOT / "examples/screen-time-age-secret.json", "-o", tmp_path / "t.json",
                    "-q")[0] == 0
    code, out, _ = run_main(capsys, "plot", tmp_path / "t.json", "-o", tmp_path / "t.png", "--epsilons", "0.5", "-q")
    assert code == 0 and png_written(tmp_path / "t.png")
    assert out.endswith(": t.json: k = 4, LIP for a latent secret, objective frequencies\n")
    code, _, err = run_main(capsys, "plot", tmp_path / "t.json", "-o", tmp_path / "t.png", "--epsilons", "1,x")
    assert code == 2 and "--epsilons" in err and err.count("\n") == 1


@pytest.mark.parametrize("method, prior", [("classes", [0.3, 0.3, 0.1, 0.1, 0.1, 0.1]), ("auto", [0.25] * 4)])
def test_plot_redesigns_a_class_symmetric_or_subset_design_at_each_epsilon(method, prior, capsys, tmp_path):
    """Their numbers hold at their own epsilon only, so a file is redesigned (it failed: orbits outside the slice)."""
    from lipdesign.plot import mechanism_figure

    mechanism = ld.design(ld.Prior(prior), ld.LIP(1.0), method=method, baselines=False)
    assert mechanism.family == ("class-lip" if method == "classes" else "subset-lip")
    mechanism.to_json(tmp_path / "m.json")
    code, _, err = run_main(capsys, "plot", tmp_path / "m.json", "-o", tmp_path / "m.png", "--epsilons", "0.5,2", "-q")
    assert code == 0 and png_written(tmp_path / "m.png"), err
    figures = mechanism_figure(ld.load(tmp_path / "m.json"), "m.json", epsilons=[0.5, 2.0]).axes[0].get_lines()[0]
    assert list(figures.get_ydata()) == pytest.approx(
        [ld.design(ld.Prior(prior), ld.LIP(eps), method=method, baselines=False).mse for eps in (0.5, 2.0)])


def test_plot_keeps_a_hand_built_subset_selection_as_it_is():
    """Its d holds at every epsilon, so it is drawn as a fixed mechanism (not redesigned with another d)."""
    from lipdesign.plot import mechanism_figure

    axes = mechanism_figure(ld.mechanisms.SubsetSelection(1.0, 6, d=2), "ss.json", epsilons=[0.5, 1.0]).axes[0]
    assert [text.get_text() for text in axes.get_legend().get_texts()] == ["SubsetSelection", "GRR", "OUE", "OLH"]
    assert list(axes.get_lines()[0].get_ydata()) == pytest.approx(
        [float(np.sum(ld.mechanisms.SubsetSelection(eps, 6, d=2).variance())) for eps in (0.5, 1.0)])
