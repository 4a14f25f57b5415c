"""The package's annotations hold: mypy reports nothing on the files of pyproject.toml's [tool.mypy], and the package
ships its py.typed marker (PEP 561), so that a user's type checker reads them.

It runs the mypy installed with the interpreter running pytest (the dev extra's "mypy"), with a fresh cache in a
temporary folder (a cache left by another mypy version is never read), and skips when mypy is not installed.
"""

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_ships_py_typed():
    assert (ROOT / "lipdesign" / "py.typed").is_file()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data.get("lipdesign", [])


def test_mypy_reports_nothing(tmp_path):
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this environment (pip install -e .[dev]); the annotations are "
                    "not checked")
    # No paths: mypy checks [tool.mypy]'s files with its settings, read from the project root.
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, f"mypy reports problems:\n{result.stdout}{result.stderr}"
