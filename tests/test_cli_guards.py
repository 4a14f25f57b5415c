"""What the CLI refuses before any work, in one line with exit code 2 (issue 23): unbounded counts and sizes, outputs
it cannot or must not write; every mechanism the designer returns is printable; an audit says when it has no power."""

import json

import pytest
from helpers import lipdesign, one_line_error

import lipdesign as ld
from lipdesign.auditor import MAX_REPORTS, audit
from lipdesign.mechanisms import GRR

HUGE = 10**15




@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("guards")
    ld.save(GRR(1.0, 4), folder / "g.json")
    (folder / "v.csv").write_text("value\n1\n2\n", encoding="utf-8")
    assert lipdesign("perturb", "g.json", "v.csv", "-o", "r.parquet", "-q", cwd=folder).returncode == 0
    (folder / "spec.json").write_text(json.dumps({"prior": {"probabilities": [0.4, 0.3, 0.2, 0.1]},
                                                  "notion": {"kind": "LDP", "epsilon": 1.0}, "family": "hashing"}))
    return folder


@pytest.mark.parametrize("args, field", [
    (("audit", "g.json", "--reports", HUGE), "reports"),
    (("simulate", "g.json", "-n", HUGE), "n is"),
    (("simulate", "g.json", "-r", HUGE), "repetitions"),
    (("vectors", "g.json", "--cases", HUGE, "-o", "vec.json"), "n is"),
    (("aggregate", "g.json", "r.parquet", "-o", "a.json", "--batch-rows", HUGE), "batch_rows"),
    (("perturb", "g.json", "v.csv", "-o", "x.parquet", "--seed", 1, "--start", 65536 * 2**62), "--start"),
    (("plot", "g.json", "-o", "p.png", "--epsilons", ",".join(["1"] * 33)), "--epsilons"),
])
def test_every_count_and_size_has_an_upper_bound(folder, args, field):
    assert field in one_line_error(lipdesign(*args, cwd=folder))


@pytest.mark.parametrize("args, message", [
    (("mechanism", "grr", "--epsilon", 1, "-p", "k=4", "-o", "."), "must end in .json"),
    (("mechanism", "grr", "--epsilon", 1, "-p", "k=4", "-o", "folder.json"), "it is a folder"),
    (("mechanism", "grr", "--epsilon", 1, "-p", "k=4", "-o", "/proc/lipdesign-test.json"), "cannot be written"),
    (("mechanism", "grr", "--epsilon", 1, "-p", "k=4", "-o", "missing/m.json"), "its folder 'missing' does not"),
    (("perturb", "g.json", "v.csv", "-o", "v.csv"), "must end in .parquet"),
    (("perturb", "g.json", "v.csv", "-o", "x.csv"), "must end in .parquet"),
    (("perturb", "g.json", "r.parquet", "-o", "r.parquet"), "which is the values file"),
    (("aggregate", "g.json", "r.parquet", "-o", "g.json"), "which is the mechanism file"),
    (("design", "spec.json", "-o", "spec.json"), "which is the spec file"),
    (("plot", "g.json", "-o", "p.json"), "must end in .png or .pdf or .svg"),
    (("demo", "--out", "v.csv"), "--out is 'v.csv'; it is a file"),
])
def test_outputs_are_checked_before_any_work_and_inputs_survive(folder, args, message):
    (folder / "folder.json").mkdir(exist_ok=True)
    before = {name: (folder / name).read_bytes() for name in ("g.json", "v.csv", "r.parquet", "spec.json")}
    assert message in one_line_error(lipdesign(*args, cwd=folder))
    assert {name: (folder / name).read_bytes() for name in before} == before
    assert not (folder / "x.csv").exists() and not (folder / "p.json").exists()


def test_designing_hashing_under_ldp_prints_and_writes(folder):
    done = lipdesign("design", "spec.json", "-o", "h.json", "-q", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OLH(") and "PASS: tightest LDP epsilon" in done.stdout, done.stdout
    assert ld.load(folder / "h.json").family == "olh"


@pytest.mark.parametrize("family", ["rr", "unary", "hashing"])
@pytest.mark.parametrize("notion", [ld.LIP(1.0), ld.LDP(1.0)])
def test_every_designed_mechanism_has_a_summary(family, notion):
    mechanism = ld.design(ld.Prior([0.4, 0.3, 0.2, 0.1]), notion, family=family, baselines=False)
    text = mechanism.summary()
    assert isinstance(text, str) and "eps" in text, text


def test_every_registered_family_has_a_summary():
    from lipdesign.mechanisms.registry import families, family_class

    for family in families():
        mechanism = family_class(family).example()
        assert isinstance(mechanism.summary(), str) and mechanism.summary(), family


def test_an_audit_without_power_says_so_and_how_many_reports_would_do():
    weak = audit(GRR(1.0, 4), reports=10, rng=1)
    assert not weak.powered and weak.passed
    assert "PASS (no power)" in weak.summary() and "cannot show any leak" in weak.summary()
    needed = weak.reports_for_power
    assert 10 < needed <= MAX_REPORTS
    assert audit(GRR(1.0, 4), reports=needed, rng=1).attainable_epsilon >= 0.5
    assert audit(GRR(1.0, 4), reports=needed // 2, rng=1).attainable_epsilon < 0.5
    strong = audit(GRR(1.0, 4), reports=200_000, rng=1)
    assert strong.powered and "no power" not in strong.summary() and strong.to_dict()["powered"] is True


def test_the_audit_refuses_more_reports_than_its_bound():
    with pytest.raises(ld.ValidationError, match=r"reports is 1000000001; it must be an integer in 1\.\.1000000000"):
        audit(GRR(1.0, 4), reports=MAX_REPORTS + 1)
