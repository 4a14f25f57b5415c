"""The runtime install (`pip install lipdesign`, no extra): numpy, jsonschema, randomgen and tqdm only. A device or
an ingestion server loads a mechanism file, re-verifies it exactly, perturbs, aggregates in memory and estimates
with standard errors and intervals, for every family; the parts that need the designer's packages say which extra
to install, in one line.

`.ci/run` runs this file in a venv with only those packages (.venv-runtime). In the full install the same script
runs in a subprocess with the designer's packages made unimportable, so the default suite checks it too."""

import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: What the runtime install leaves out: the designer's stack, Parquet, plots, DAGs, and the optional engines.
LEFT_OUT = ("scipy", "cvxpy", "highspy", "networkx", "matplotlib", "pyarrow", "threadpoolctl", "sklearn", "dask",
            "numba")

BLOCK = f"""
import importlib.abc, sys
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {LEFT_OUT!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
sys.meta_path.insert(0, Blocker())
import importlib.util
_find = importlib.util.find_spec
importlib.util.find_spec = lambda name, *args: None if name.split(".")[0] in {LEFT_OUT!r} else _find(name, *args)
"""

RUNTIME = f"""
import glob, sys
import numpy as np
import lipdesign as ld

done = []
for path in sorted(glob.glob({str(ROOT / "tests" / "data" / "v2" / "*.json")!r})):
    mechanism = ld.load(path)  # re-verified exactly on load
    if mechanism.finite:
        assert mechanism.verify().passed
    values = mechanism.input_domain.sample(400, np.random.default_rng(0))
    ids = np.arange(400) if mechanism.uses_user_ids else None
    reports = mechanism.perturb(values, rng=1, user_ids=ids)
    total = mechanism.aggregate(reports[:150]) + mechanism.aggregate(reports[150:])
    assert ld.aggregate(mechanism, reports) == mechanism.aggregate(reports)  # the top-level function, in memory
    estimate = mechanism.estimate(total)
    assert isinstance(estimate, ld.Estimate) and estimate.values.shape == estimate.standard_errors.shape
    if np.isfinite(estimate.standard_errors).all() and estimate.kind == "frequencies":
        low, high = estimate.confidence_interval(0.9)
        assert (low <= high).all()
    done.append(mechanism.family)
np.save("reports.npy", reports)  # an NPY report file needs no pyarrow either
assert ld.aggregate(mechanism, "reports.npy") == mechanism.aggregate(reports)
rappor = ld.mechanisms.RAPPOR.example()  # a family newer than the 0.2.0 files: strings
words = rappor.input_domain.sample(2000, np.random.default_rng(0))
estimate = rappor.estimate(ld.aggregate(rappor, rappor.perturb(words, rng=1)))
assert estimate.values.shape == (len(rappor.candidates),) and np.isfinite(estimate.standard_errors).all()
for call, extra in ((lambda: ld.design([0.5, 0.5], ld.LIP(1.0)), "design"),
                    (lambda: ld.audit(ld.mechanisms.GRR(1.0, 3)), "design"),
                    (lambda: ld.simulate(ld.mechanisms.GRR(1.0, 3), 100), "design"),
                    (lambda: ld.write_reports("r.parquet", ld.mechanisms.GRR(1.0, 3), np.zeros(3, int)), "files")):
    try:
        call()
    except ld.LipdesignError as error:
        assert isinstance(error, ImportError) and f'pip install "lipdesign[{{extra}}]"' in str(error), error
    else:
        raise AssertionError("a part that needs the designer's packages ran without them")
heavy = sorted(name for name in {LEFT_OUT!r} if name in sys.modules)
print(len(done), len(set(done)), heavy)
"""


def _run(code, cwd):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.mark.parametrize("install", ["this one", "simulated"])
def test_the_runtime_install_loads_verifies_perturbs_aggregates_and_estimates_every_family(install, tmp_path):
    lean = all(find_spec(name) is None for name in LEFT_OUT)
    if install == "this one" and not lean:
        pytest.skip("this install has the designer's packages; .ci/run runs this test in .venv-runtime")
    result = _run(RUNTIME if install == "this one" else BLOCK + RUNTIME, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    files, families, heavy = result.stdout.strip().split(" ", 2)
    assert int(files) == 27 and int(families) == 17 and heavy == "[]"


def test_the_cli_says_which_extra_a_command_needs_in_one_line(tmp_path):
    code = BLOCK + (f"import sys; from lipdesign import cli; sys.exit(cli.main(['design', "
                    f"{str(ROOT / 'examples' / 'screen-time-lip.json')!r}, '-o', 'm.json']))")
    result = _run(code, tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert 'pip install "lipdesign[design]"' in result.stderr and "Traceback" not in result.stderr
    code = BLOCK + (f"import sys; from lipdesign import cli; sys.exit(cli.main(['verify', "
                    f"{str(ROOT / 'tests' / 'data' / 'v2' / 'design-unary.json')!r}]))")
    result = _run(code, tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("PASS"), result.stderr
