"""docs/layout.md names every module of the package, once, and no module that does not exist."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_layout_page_names_every_module_once():
    listed = re.findall(r"^    (lipdesign/\S+\.py)\s", (ROOT / "docs" / "layout.md").read_text(), flags=re.MULTILINE)
    modules = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "lipdesign").rglob("*.py"))
    assert len(listed) == len(set(listed)), "a module is listed twice"
    assert sorted(listed) == modules
