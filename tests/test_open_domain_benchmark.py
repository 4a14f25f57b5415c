"""benchmarks/open_domain.py runs end to end on a tiny configuration (a smoke test: its figures are read, never
asserted as times): every family prints a row at the certified epsilon, our estimates sit within the z target, and
the pure-ldp columns appear when pure-ldp is installed (a benchmark-only dependency)."""

import importlib.util
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # about 7 s of CPU (15 pure-ldp and lipdesign runs); the default suite skips it

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "open_domain.py"
TINY = ["--epsilons", "2", "--users", "3000", "--candidates", "40", "--repeats", "4", "--z-users", "3000",
        "--decode", "0", "--seed", "1"]


def benchmark():
    spec = importlib.util.spec_from_file_location("open_domain_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows(text):
    return {line.split()[0]: line.split() for line in text.splitlines()
            if re.match(r"(RAPPOR|CMS|HCMS|OLH|SS) +2 +3,000 ", line)}


def test_every_family_prints_a_row_at_the_certified_epsilon_within_the_z_target(capsys):
    benchmark().main([*TINY, "--no-pure-ldp"])
    printed = rows(capsys.readouterr().out)
    assert sorted(printed) == ["CMS", "HCMS", "OLH", "RAPPOR", "SS"]
    for family, fields in printed.items():
        assert abs(float(fields[3]) - 2.0) < 1e-6, family  # our certified epsilon
        assert float(fields[12]) < 5.0, family  # max |z| over 40 candidates and 4 repetitions
        assert 0.2 < float(fields[5]) / float(fields[7]) < 5.0, family  # MSE against the closed form's E[MSE]


def test_the_pure_ldp_columns_run_when_pure_ldp_is_installed(capsys):
    pytest.importorskip("pure_ldp")
    pytest.importorskip("xxhash")
    pytest.importorskip("sklearn")
    benchmark().main([*TINY, "--families", "RAPPOR,CMS,OLH"])
    out = capsys.readouterr().out
    printed = rows(out)
    assert sorted(printed) == ["CMS", "OLH", "RAPPOR"]
    for family, fields in printed.items():
        assert abs(float(fields[4]) - 2.0) < 1e-6, family  # pure-ldp run at the same epsilon
    assert "pure-ldp RAPPOR client, eps = 2" in out
