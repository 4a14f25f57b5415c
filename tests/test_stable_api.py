"""The stable API that docs/stable-api.md names: every exported name resolves, and each deprecated name warns with
the release that removes it."""

import importlib
import re
import warnings
from pathlib import Path

import pytest

import lipdesign as ld

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ("lipdesign.mechanisms", "lipdesign.model", "lipdesign.verification", "lipdesign.io", "lipdesign.learn",
          "lipdesign.designer")


@pytest.mark.parametrize("package", ["lipdesign", *PUBLIC])
def test_every_exported_name_resolves(package):
    module = importlib.import_module(package)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the deprecated names are exported until removed
        missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert not missing


def test_the_documented_deprecations_warn_with_their_removal_release():
    text = (ROOT / "docs" / "stable-api.md").read_text()
    table = text[text.index("| name | since |"):]
    rows = re.findall(r"^\| `([^`]+)`.*?\| ([0-9.]+) \| ([0-9.]+) \|", table, flags=re.MULTILINE)
    assert [row[0] for row in rows] == ["lipdesign.harmony", "ld.Histogram", "ld.estimate_with_errors(mech, agg)",
                                        'TableMechanism.estimate(..., what="histogram")',
                                        "lipdesign.vectors.device_numbers(mech)"]
    for name in ("Histogram", "WeightedSum"):
        with pytest.warns(DeprecationWarning, match="since 0.3.0 and will be removed in 0.4.0"):
            getattr(ld, name)
    assert all(removed == "0.4.0" for _, _, removed in rows)
    assert "_solvers" not in " ".join(dir(ld)) and ld.__version__ == "0.3.0"


def test_a_star_import_warns_nothing_and_the_old_vectors_function_warns():
    import subprocess
    import sys

    code = "from lipdesign import *\nprint(sorted(name for name in ('Histogram', 'harmony') if name in dir()))"
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stderr
    mechanism = ld.mechanisms.GRR(1.0, 4)
    with pytest.warns(DeprecationWarning, match="mechanism.device_numbers()"):
        assert ld.vectors.device_numbers(mechanism) == mechanism.device_numbers()
