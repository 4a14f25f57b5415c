"""The docs site (docs/conf.py): the API pages list the stable API, and the site builds with warnings as errors.

The build is the command of CONTRIBUTING.md's "Docs" section, run into a temporary directory; it needs the extra
"docs" (sphinx, pydata-sphinx-theme, myst-nb, numpydoc) and is skipped without it.
"""

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: The public modules of docs/stable-api.md whose ``__all__`` the API pages list, with their page; testing and
#: vectors are listed by their functions (docs/api/testing.rst, vectors.rst).
PAGES = {
    "lipdesign": "lipdesign.rst",
    "lipdesign.mechanisms": "mechanisms.rst",
    "lipdesign.model": "model.rst",
    "lipdesign.verification": "verification.rst",
    "lipdesign.io": "io.rst",
    "lipdesign.learn": "learn.rst",
    "lipdesign.designer": "designer.rst",
    "lipdesign.rounds": "rounds.rst",
}


def listed(page):
    """The names an API page's autosummary tables list (``~model.Prior`` counts as ``Prior``)."""
    text = (DOCS / "api" / page).read_text(encoding="utf-8")
    return {line.strip().lstrip("~").rsplit(".", 1)[-1] for line in text.splitlines()
            if re.match(r"^   ~?[A-Za-z_][\w.]*$", line)}


@pytest.mark.parametrize("module", sorted(PAGES))
def test_api_pages_list_every_stable_name(module):
    package = importlib.import_module(module)
    # the subpackages that the top level exports are pages of their own (or described there)
    names = {name for name in package.__all__ if name != "__version__" and not inspect.ismodule(getattr(package, name))}
    missing = names - listed(PAGES[module])
    assert not missing, f"docs/api/{PAGES[module]} does not list {sorted(missing)} of {module}.__all__"


@pytest.mark.slow
def test_site_builds_without_warnings(tmp_path):
    for package in ("sphinx", "pydata_sphinx_theme", "myst_nb", "numpydoc"):
        pytest.importorskip(package, reason="the docs extra: pip install -e '.[docs]'")
    out = tmp_path / "html"
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-d",
                             str(tmp_path / "doctrees"), str(DOCS), str(out)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert (out / "index.html").is_file()
    design = out / "api" / "generated" / "lipdesign.design.html"
    assert design.is_file()
    assert "lipdesign.design" in design.read_text(encoding="utf-8")
    # a constant re-exported by a package shows the #: comment of the module that defines it (docs/conf.py)
    constant = (out / "api" / "generated" / "lipdesign.learn.REPORT_DTYPE.html").read_text(encoding="utf-8")
    assert "one record per user" in constant and "numpy.dtype" not in constant
    notebook = (out / "notebooks" / "01-lip-vs-ldp.html").read_text(encoding="utf-8")
    # the stored plot of the notebook, rendered from its outputs (nb_execution_mode = "off")
    assert re.search(r'<img[^>]+src="[^"]*\.png"', notebook), "the notebook page has no plot"


def test_the_docs_command_is_the_same_in_readme_contributing_and_ci():
    """README.md and CONTRIBUTING.md give the command that .ci/run runs: a venv with the docs extra alone, then the
    build with warnings as errors (so the documented install is the one tested)."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    venv = re.search(r"^python3 -m venv \.venv-docs && .*$", ci, flags=re.MULTILINE).group(0)
    build = re.search(r"^\.venv-docs/bin/python -m sphinx .*$", ci, flags=re.MULTILINE).group(0)
    command = f"{venv} && {build}"
    for document in ("README.md", "CONTRIBUTING.md"):
        assert command in (ROOT / document).read_text(encoding="utf-8"), document


def test_the_benchmarks_page_lists_every_script_with_its_machine_and_date():
    """docs/benchmarks.md names every script of benchmarks/, the machine the figures come from, and a date per row."""
    text = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        assert f"benchmarks/{script.name}" in text, f"docs/benchmarks.md does not list {script.name}"
    assert "2 virtual cores" in text and "24 GiB" in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert rows and all(re.search(r"2026-\d\d-\d\d|on each run", row) for row in rows)
