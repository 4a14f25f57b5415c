"""The command line for scripts: --json on design, compare, verify and simulate (one strict JSON document on stdout,
the numbers the Python API gives), an example in every command's --help that runs as written, help on every
argument, and ``python -m lipdesign``."""

import argparse
import json
import math
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest
from helpers import ROOT, lipdesign, one_line_error
from helpers import run_main as run

import lipdesign as ld
from lipdesign.cli import EXAMPLES, _strict, build_parser
from lipdesign.io import read_json, spec_to_problem

#: A spec of k = 4 (the screen-time example): its design, comparison and simulations take about a second.
SPEC = ROOT / "examples/screen-time-lip.json"


def strict(text):
    """The one JSON document ``text``, refused if it holds NaN or Infinity (not JSON, though json.loads reads them)."""

    def refuse(name):
        raise AssertionError(f"{name} in the JSON output")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def designed(tmp_path_factory):
    """A folder with the spec's design (from the Python API) as mech.json, and that mechanism."""
    folder = tmp_path_factory.mktemp("json")
    prior, notion, objective, options = spec_to_problem(read_json(SPEC), SPEC)
    mechanism = ld.design(prior, notion, objective, **options)
    mechanism.to_json(folder / "mech.json")
    return folder, mechanism


def test_design_json_is_the_api_design(designed, capsys):
    folder, mechanism = designed
    code, out, err = run(capsys, "design", SPEC, "-o", folder / "out.json", "--json", "-q")
    assert code == 0 and err == ""
    document = strict(out)
    assert document["mechanism"] == mechanism.fingerprint == document["envelope"]["fingerprint"]
    assert document["family"] == mechanism.family and document["output"] == str(folder / "out.json")
    assert document["verified_epsilons"] == mechanism.verified_epsilons()
    assert document["figure"] == mechanism.mse
    assert document["envelope"] == json.loads((folder / "out.json").read_text()) == mechanism.to_dict()


def test_compare_json_has_one_row_per_family_with_the_api_figures(capsys):
    code, out, err = run(capsys, "compare", SPEC, "--json", "-q")
    assert code == 0 and err == ""
    document = strict(out)
    comparison = ld.compare(*spec_to_problem(read_json(SPEC), SPEC)[:3])
    assert [row["family"] for row in document["rows"]] == [row.family for row in comparison.rows] == [
        "rr", "unary", "hashing", "cms"]
    for row, expected in zip(document["rows"], comparison.rows):
        assert row["figure"] == pytest.approx(expected.figure, rel=1e-9)
        assert row["lower_bound"] == (None if expected.lower_bound is None else  # the sketch states none
                                      pytest.approx(expected.lower_bound, rel=1e-9))
        assert row["mechanism"] == expected.mechanism.family and row["report_bits"] == expected.report_bits
    assert document["best"] == comparison.best.family == "rr"
    assert document["bound"] == pytest.approx(comparison.bound, rel=1e-9) and document["k"] == 4
    assert document["notion"] == {"kind": "LIP", "epsilon": 1.0, "secret": None, "prior_set": None}


def test_compare_json_sends_the_family_note_to_stderr(capsys, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**read_json(SPEC), "family": "unary"}))
    code, out, err = run(capsys, "compare", spec, "--json", "-q")
    assert code == 0 and strict(out)["rows"] and "the spec names family 'unary'" in err


def test_verify_json_is_the_certificate(designed, capsys):
    folder, mechanism = designed
    code, out, err = run(capsys, "verify", folder / "mech.json", "--json")
    assert code == 0 and err == ""
    document = strict(out)
    certificate = mechanism.verify()
    assert document["passed"] is True and document["epsilon"] == certificate.epsilon <= 1.0
    assert {key: document[key] for key in certificate.to_dict()} == json.loads(json.dumps(certificate.to_dict()))
    assert document["mechanism"] == mechanism.fingerprint and document["finite"] is True
    assert document["verified_epsilons"] == mechanism.verified_epsilons()
    assert document["guarantee"] == mechanism.guarantee.to_dict()


def test_verify_json_of_a_tampered_table_fails_with_exit_1(designed, capsys, tmp_path):
    folder, _ = designed
    document = json.loads((folder / "mech.json").read_text())
    table = document["parameters"]["table"]
    document["parameters"]["table"] = [[1.0 if x == y else 0.0 for y in range(len(table[0]))]
                                       for x in range(len(table))]
    (tmp_path / "bad.json").write_text(json.dumps(document))
    code, out, err = run(capsys, "verify", tmp_path / "bad.json", "--json")
    assert code == 1 and err == ""
    result = strict(out)
    assert result["passed"] is False and result["mechanism"] is None and "not LIP" in result["error"]


def test_simulate_json_is_the_api_simulation(designed, capsys):
    folder, mechanism = designed
    code, out, err = run(capsys, "simulate", folder / "mech.json", "-n", 2000, "-r", 3, "--seed", 1, "--json", "-q")
    assert code == 0 and err == ""
    document = strict(out)
    expected = ld.simulate(ld.load(folder / "mech.json"), 2000, rng=1, repetitions=3)  # the file, as the CLI reads
    assert document["mechanism"] == mechanism.fingerprint and document["family"] == mechanism.family
    for got, simulation in ((document, expected), (document["drifted"], expected.drifted)):
        assert got["n"] == 2000 and got["repetitions"] == 3 and got["names"] == list(simulation.names)
        assert got["population"] == simulation.population and got["method"] == simulation.method
        for key in ("estimates", "expected", "std", "truth", "estimate", "bias", "empirical_std", "coverage"):
            np.testing.assert_array_equal(got[key], getattr(simulation, key), err_msg=key)
        for key in ("largest_z", "p_value", "squared_error", "expected_squared_error"):
            assert got[key] == getattr(simulation, key), key
    assert document["drifted"]["drifted"] is None


def test_simulate_json_writes_null_for_nan(designed, capsys):
    """One repetition has no empirical spread (nan in the API): null in strict JSON, as the brief requires."""
    folder, _ = designed
    code, out, _ = run(capsys, "simulate", folder / "mech.json", "-n", 500, "-r", 1, "--seed", 2, "--no-drift",
                       "--json", "-q")
    document = strict(out)
    assert code == 0 and document["empirical_std"] == [None] * 4 and document["drifted"] is None
    assert all(isinstance(value, float) for value in document["std"])


def test_strict_turns_numpy_and_non_finite_floats_into_json():
    value = {"a": math.inf, "b": np.array([np.nan, 1.5]), "c": (np.float64(-np.inf), np.int64(3)), "d": [True, "x"]}
    assert _strict(value) == {"a": None, "b": [None, 1.5], "c": [None, 3], "d": [True, "x"]}
    json.dumps(_strict(value), allow_nan=False)


def subcommands():
    """Every command's parser by name (an alias once: ``harmony`` is ``mechanism``)."""
    action = next(action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction))
    return {name: parser for name, parser in action.choices.items() if name != "harmony"}


def test_every_argument_of_every_command_has_help():
    commands = subcommands()
    assert set(commands) == set(EXAMPLES)
    for name, parser in commands.items():
        for action in parser._actions:
            if "-h" in action.option_strings:
                continue
            assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_every_help_ends_with_its_example(command, capsys):
    code, out, _ = run(capsys, command, "--help")
    assert code == 0 and "Example" in out
    for line in EXAMPLES[command][1]:
        assert f"  {line}\n" in out  # as written, not rewrapped


def test_the_examples_run_as_written_in_order(tmp_path, capsys):
    """Each help's example, in EXAMPLES order from a folder holding examples/: every input exists by then, every
    command exits 0, and the --json ones print strict JSON."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for command, (_, lines) in EXAMPLES.items():
        for line in lines:
            if not line.startswith("lipdesign "):  # the shell line that writes perturb's values
                subprocess.run(line, shell=True, check=True, cwd=tmp_path)
                continue
            with pytest.MonkeyPatch.context() as patch:
                patch.chdir(tmp_path)
                code, out, err = run(capsys, *shlex.split(line)[1:], *(["-q"] if command in QUIET else []))
            assert code == 0, (line, err)
            if "--json" in line:
                strict(out)
    assert ld.load(tmp_path / "screen-time.json").family == "table"
    assert (tmp_path / "lipdesign-demo/demo-mechanism.json").is_file()


#: The commands with a -q (the examples leave it out; the test adds it, to keep stderr short).
QUIET = {"design", "compare", "simulate", "plot", "audit", "perturb", "aggregate"}


def test_python_m_lipdesign_runs_the_command_line(tmp_path):
    shown = subprocess.run([sys.executable, "-m", "lipdesign", "--help"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=120)
    assert shown.returncode == 0 and "usage: lipdesign" in shown.stdout
    for args in (["verify", "missing.json"], ["frobnicate"]):
        refused = subprocess.run([sys.executable, "-m", "lipdesign", *args], capture_output=True, text=True,
                                 cwd=tmp_path, timeout=120)
        line = one_line_error(refused)
        assert "Traceback" not in refused.stderr
        assert "mechanism is 'missing.json'; no such file" in line or "frobnicate" in line
    # the same exit codes as the `lipdesign` command
    assert lipdesign("verify", "missing.json", cwd=tmp_path).returncode == 2


def test_every_spec_field_is_documented_and_the_design_options_are_flags(tmp_path, capsys):
    """Each property of the schema's spec is named in the manual's Spec files section (docs/manual.md); a flag
    overrides the field."""
    import lipdesign as ld
    from lipdesign.io.schema import schema

    readme = (ROOT / "docs" / "manual.md").read_text().split("### Spec files", 1)[1].split("\n### ", 1)[0]
    fields = schema("spec")["$defs"]["spec"]["properties"]
    assert [field for field in fields if f"`{field}`" not in readme] == []
    spec = ROOT / "examples" / "screen-time-lip.json"
    code, _, err = run(capsys, "design", spec, "-o", tmp_path / "u.json", "--family", "unary", "-q")
    assert code == 0, err
    assert ld.load(tmp_path / "u.json").family == "unary"
    code, _, err = run(capsys, "design", spec, "-o", tmp_path / "x.json", "--family", "unary", "--method", "exact",
                       "-q")
    assert code == 2 and "method is 'exact'" in err and err.count("\n") == 1
