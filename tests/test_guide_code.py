"""The code of the getting-started page and the user guide (docs/guide/*.md) runs as written.

Each page's ```python blocks run in order in one namespace, in a scratch folder, as a reader who copies them would
run them. A block whose first line is ``# not run: <why>`` needs something a test cannot have (a Dask scheduler's
address): it is only compiled.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "docs" / "getting-started.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]


def blocks(page):
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), flags=re.S | re.M)


@pytest.mark.parametrize("page", [page for page in PAGES if blocks(page)], ids=lambda page: page.name)
def test_page_code_runs(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__guide__"}
    ran = 0
    for number, code in enumerate(blocks(page), start=1):
        compiled = compile(code, f"{page.name}, block {number}", "exec")  # a syntax error fails here
        if code.startswith("# not run:"):
            continue
        exec(compiled, namespace)  # an exception in a block fails the test, naming the page and block
        ran += 1
    assert ran >= 1, f"{page.name}: every block is marked 'not run'"
    assert any(not name.startswith("__") for name in namespace), f"{page.name}: the blocks defined nothing"
    capsys.readouterr()


def test_blocks_not_run_are_rare_and_say_why():
    """The skip marker is an exception: at most one block per page, and it says why."""
    for page in PAGES:
        skipped = [code for code in blocks(page) if code.startswith("# not run:")]
        assert len(skipped) <= 1, page.name
        assert all(len(code.splitlines()[0]) > len("# not run: ") + 10 for code in skipped), page.name
