"""The command line as a user runs it: real processes, exit codes, one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def lipdesign(*args, cwd):
    return subprocess.run([sys.executable, "-m", "lipdesign.cli", *map(str, args)], check=False, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


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
    ({"prior": {"probabilities": [0.5, 0.6]}, "notion": {"kind": "LIP", "epsilon": 1}}, "prior sums to 1.1; it must sum to 1"),
    ({"prior": {"probabilities": [0.5, 0.5]}, "notion": {"kind": "LIP", "epsilon": 0}}, "notion/epsilon"),
    ({"prior": {"probabilities": [0.5, 0.5]}, "notion": {"kind": "DP", "epsilon": 1}}, "notion/kind"),
    ({"prior": {"probabilities": [0.5, 0.5]}}, "'notion' is a required property"),
    ({"prior": {"probabilities": [0.5, 0.0, 0.5]}, "notion": {"kind": "LIP", "epsilon": 1}}, r"prior\[1\] \(1\) is 0"),
    ({"prior": {"probabilities": [0.2, 0.8]}, "notion": {"kind": "BP-LIP", "epsilon": 1,
      "prior_set": {"kind": "box", "lower": [0.3, 0.5], "upper": [0.5, 0.7]}}}, "not in the box prior_set"),
])
def test_bad_specs_exit_2_with_one_line(spec, message, tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    result = lipdesign("design", path, "-o", tmp_path / "m.json", cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("lipdesign: error: ")
    import re
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
