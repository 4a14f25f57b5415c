"""ruff's configured rules hold: `ruff check` over the project reports nothing.

pyproject.toml's [tool.ruff] sets the line length and [tool.ruff.lint] the rules (pycodestyle errors and warnings,
pyflakes, import sorting); this test is how .ci/run enforces them. It runs the ruff installed with the interpreter
running pytest (the dev extra's "ruff"), never one found elsewhere on PATH, whose version could disagree.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff():
    """The command that runs the interpreter's ruff, or None when ruff is not installed with it."""
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    for name in ("ruff", "ruff.exe"):
        binary = Path(sys.executable).with_name(name)
        if binary.is_file():
            return [str(binary)]
    return None


def test_ruff_reports_nothing():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed in this environment (pip install -e .[dev]); the lint is not checked")
    # No paths: ruff checks the project from its root with pyproject's settings, excludes included.
    result = subprocess.run([*ruff, "check", "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f"ruff check reports problems:\n{result.stdout}{result.stderr}"
