"""The source distribution carries what its own tests read, so that its test suite runs from the unpacked archive.

MANIFEST.in says what goes in beside the package: the tests with their helpers and data (tests/data), the examples
(tests/test_cli.py designs them), docs, notebooks, benchmarks and examples' scripts (tests/test_citations.py checks
their citations, tests/test_notebooks.py runs the notebooks, tests/test_layout.py and tests/test_stable_api.py read
docs/), README.md and .ci/run (tests/test_quickstart.py), .ci/floors.txt (tests/test_dependency_floors.py),
SECURITY.md, and the project's files at the top. The slow test builds the sdist as a release would
(``python -m build --sdist``, with the build requirements of pyproject.toml in an isolated environment) and lists it.
It builds from a copy of the tree without *.egg-info: setuptools adds every file an old SOURCES.txt lists, so a
checkout that was built before would hide a file MANIFEST.in leaves out.
"""

import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Files at the top of the project that the tests read or that a release carries.
TOP = ("README.md", "SECURITY.md", "LICENSE", "CHANGELOG.md", "CITATION.cff", "CONTRIBUTING.md", "pyproject.toml",
       ".ci/run", ".ci/floors.txt")
#: Folders that go in whole (MANIFEST.in grafts them; compiled Python files are left out).
FOLDERS = ("tests", "examples", "docs", "notebooks", "benchmarks")
#: Files the tests name directly, checked by name so that a failure says which one is missing.
NAMED = ("tests/conftest.py", "tests/helpers.py", "tests/brute_force.py", "tests/data/v1/runs.npz",
         "tests/data/v1/README.md", "tests/data/v2/runs.npz", "tests/data/v2/make.py", "docs/math.md",
         "docs/runtime.md", "docs/layout.md", "docs/stable-api.md", "docs/adding-a-family.md",
         "examples/screen-time-lip.json", "notebooks/_notebook.py", "lipdesign/io/schemas/lipdesign-v2.schema.json",
         "lipdesign/datasets/adult.csv.gz")


#: What the copy of the tree leaves out: build products (an old SOURCES.txt above all), environments and caches.
BUILD_PRODUCTS = shutil.ignore_patterns("*.egg-info", ".git", ".venv*", "build", "dist", "__pycache__", "*.py[cod]",
                                        ".pytest_cache", ".ruff_cache", ".mypy_cache", ".hypothesis", "lipdesign-demo")
#: What a docs build writes into docs/ (the HTML, autosummary's pages): MANIFEST.in prunes both.
DOCS_BUILT = ("docs/_build", "docs/api/generated")


def _not_copied(directory, names):
    here = Path(directory).relative_to(ROOT).as_posix()
    return set(BUILD_PRODUCTS(directory, names)) | {name for name in names if f"{here}/{name}" in DOCS_BUILT}


def _expected(root):
    """Every file the sdist of the tree at ``root`` must hold, relative to ``root``."""
    files = set(TOP) | set(NAMED)
    for folder in FOLDERS:
        for path in (root / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
                files.add(path.relative_to(root).as_posix())
    return files


@pytest.mark.slow
def test_the_sdist_holds_every_file_its_tests_read(tmp_path):
    pytest.importorskip("build", reason="the sdist is built by the 'build' package (pip install build)")
    tree = tmp_path / "tree"
    shutil.copytree(ROOT, tree, ignore=_not_copied)
    result = subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(tree)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"python -m build --sdist failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    archive = tmp_path / f"lipdesign-{version}.tar.gz"
    with tarfile.open(archive) as tar:
        prefix = f"lipdesign-{version}/"
        members = {member.name.removeprefix(prefix) for member in tar.getmembers() if member.isfile()}
    missing = sorted(_expected(tree) - members)
    assert not missing, f"{archive.name} lacks files its tests read (MANIFEST.in): {missing[:20]}"


def test_the_citation_file_names_the_package_version():
    """CITATION.cff's version is the package's (a release changes both)."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    cited = re.search(r"^version: ([^\s#]+)", (ROOT / "CITATION.cff").read_text(), flags=re.MULTILINE)
    assert cited and cited.group(1).strip("\"'") == version, "CITATION.cff's version differs from pyproject.toml's"
