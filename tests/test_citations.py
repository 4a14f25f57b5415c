"""Citations of the derivations: every "docs/math.md §N" or "§N.M" (and "docs/runtime.md §N") in the code, the tests,
the notebooks, the benchmarks, the docs and the JSON schemas names a section that exists, and the index docs/math.md
lists every section file of docs/math/ (one file per top-level section, its first heading that section)."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
INDEX = DOCS / "math.md"
MATH = DOCS / "math"
RUNTIME = DOCS / "runtime.md"

#: How the code cited the team's notes before docs/math.md existed (spelled so that this file does not match).
OLD_CITATION = "MATH" + " §"

#: One cited number: a section "11" or a subsection "3.9" (a sentence's full stop after it is not part of it).
NUMBER = r"§\s?(\d+(?:\.\d+)?)"
#: A chain of numbers after one document's name: "§4 and §11", "§9.5, §9.8", "§4-§8", "§1-2", "§8/§9", "§3.5-§3.6".
CHAIN = (r"§\s?\d+(?:\.\d+)?"
         r"(?:\s*(?:,|/|and|or)\s*[\"'#]?\s*§\s?\d+(?:\.\d+)?|\s*[-–]\s*§?\s?\d+(?:\.\d+)?)*")
#: What may stand between a document's name and its first §: a space, a line break inside a docstring or comment, or
#: the quotes and "#" of a string or comment continued on the next line.
GLUE = r"(?:[\"'\s#]|\\n)*"
#: A citation of a named paragraph: docs/math.md §11, "Class-symmetric designs".
NAMED = re.compile(r"docs/math\.md §(\d+)(?:\.\d+)?, \"([^\"]+)\"")


def _math_files():
    """{N: path} of the section files docs/math/NN-slug.md (N >= 1)."""
    files = {}
    for path in sorted(MATH.glob("*.md")):
        match = re.fullmatch(r"(\d\d)-[a-z0-9]+(?:-[a-z0-9]+)*\.md", path.name)
        assert match, f"{path.name}: a file of docs/math/ is named NN-slug.md (two digits, a lower-case slug)"
        if int(match.group(1)):
            files[int(match.group(1))] = path
    return files


def _headings(text, level):
    """(number, title) of the headings '## N. Title' (level 2) or '### N.M Title' (level 3) of ``text``."""
    pattern = r"^## (\d+)\. (.+)$" if level == 2 else r"^### (\d+\.\d+) (.+)$"
    return [(number, title.strip()) for number, title in re.findall(pattern, text, flags=re.MULTILINE)]


def _sections():
    """{"3": path, "3.9": path, ...}: every section and subsection of the derivations, and the file that holds it."""
    sections = {}
    for path in _math_files().values():
        text = path.read_text()
        for number, _ in _headings(text, 2) + _headings(text, 3):
            assert number not in sections, f"§{number} is a heading of both {sections[number].name} and {path.name}"
            sections[number] = path
    return sections


def _runtime_sections():
    return {number for number, _ in _headings(RUNTIME.read_text(), 2)}


def _cited_files():
    yield from sorted((ROOT / "lipdesign").rglob("*.py"))
    yield from sorted((ROOT / "lipdesign" / "io" / "schemas").glob("*.json"))
    yield from sorted((ROOT / "tests").glob("*.py"))
    yield from sorted((ROOT / "notebooks").glob("*.py"))
    yield from sorted((ROOT / "notebooks").glob("*.ipynb"))
    yield from sorted((ROOT / "benchmarks").glob("*.py"))
    yield from sorted((ROOT / "examples").glob("*.py"))
    yield ROOT / "README.md"
    yield ROOT / "SECURITY.md"
    yield from sorted(DOCS.glob("*.md"))
    yield from sorted(MATH.glob("*.md"))


def _read(path):
    """The text of ``path``; a JSON file's strings decoded (the schemas spell § as an escape)."""
    text = path.read_text()
    if path.suffix in (".json", ".ipynb"):
        text = json.dumps(json.loads(text), ensure_ascii=False)
    return text


def _expand(chain):
    """The numbers a chain names: its numbers, and every section between the ends of a range of sections ("§4-§8")."""
    numbers = re.findall(r"\d+(?:\.\d+)?", chain)
    for low, high in re.findall(r"§\s?(\d+)\s*[-–]\s*§?\s?(\d+)(?![.\d])", chain):
        numbers += [str(number) for number in range(int(low), int(high) + 1)]
    return numbers


def _citations(path):
    """[(document, number, where)] of the sections ``path`` cites: "math" or "runtime", "3.9", "file:line"."""
    text, found = _read(path), []

    def add(document, numbers, start):
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        where = str(name) if path.suffix in (".json", ".ipynb") else f"{name}:{text.count(chr(10), 0, start) + 1}"
        found.extend((document, number, where) for number in numbers)

    explicit = []
    for match in re.finditer(r"docs/(math|runtime)\.md" + GLUE + "(" + CHAIN + ")", text):
        add(match.group(1), _expand(match.group(2)), match.start())
        explicit.append(match.span(2))
    # A bare § in a document whose own convention names the target: in docs/math/ and in README.md and SECURITY.md
    # ("section numbers point to docs/math.md") a section of the derivations, in docs/runtime.md one of its own.
    bare = {"runtime.md": "runtime", "README.md": "math", "SECURITY.md": "math"}.get(path.name)
    if path.parent == MATH:
        bare = "math"
    if bare:
        for match in re.finditer(CHAIN, text):
            inside = any(start <= match.start() < end for start, end in explicit)
            other_work = "RFC" in text[max(0, match.start() - 40):match.start()]  # RFC 8439 §2.3
            if not inside and not other_work:
                add(bare, _expand(match.group(0)), match.start())
    return found


def test_the_sections_are_numbered_from_1_one_file_each():
    files = _math_files()
    assert sorted(files) == list(range(1, len(files) + 1))
    assert {number for number in _sections() if "." not in number} == {str(n) for n in files}


@pytest.mark.parametrize("number", range(1, len(list(MATH.glob("[0-9][0-9]-*.md")))))
def test_each_section_file_starts_with_its_section(number):
    """docs/math/NN-slug.md: its first heading is '## N. Title', it has no other top heading, and every subsection is
    '### N.M' (numbered within its section)."""
    path = _math_files()[number]
    text = path.read_text()
    first = re.search(r"^#+ .*$", text, flags=re.MULTILINE)
    assert first and re.fullmatch(rf"## {number}\. .+", first.group(0)), (path.name, first and first.group(0))
    assert [n for n, _ in _headings(text, 2)] == [str(number)], path.name
    assert not re.search(r"^# ", text, flags=re.MULTILINE), f"{path.name}: a level-1 heading"
    subsections = [n for n, _ in _headings(text, 3)]
    assert all(n.split(".")[0] == str(number) for n in subsections), (path.name, subsections)
    assert len(set(subsections)) == len(subsections), (path.name, subsections)
    others = re.findall(r"^###+ \d.*$", text, flags=re.MULTILINE)
    assert len(others) == len(subsections), f"{path.name}: a numbered heading not of the form '### N.M Title'"


def test_the_index_lists_every_section_file_and_nothing_else():
    """docs/math.md is the index: a link to every file of docs/math/ (none to a file that does not exist), and for
    each section its number and title and those of its subsections, as the files spell them."""
    index = INDEX.read_text()
    linked = set(re.findall(r"\]\((math/[^)\s#]+\.md)\)", index))
    present = {f"math/{path.name}" for path in MATH.glob("*.md")}
    assert linked == present, {"not listed": sorted(present - linked), "missing": sorted(linked - present)}
    assert not _headings(index, 2) and not _headings(index, 3), "docs/math.md holds only the index"
    for number, path in _math_files().items():
        text = path.read_text()
        (_, title), = _headings(text, 2)
        entry = re.search(rf"^- \*\*§{number}\. (.+?)\*\*.*\]\(math/([^)]+)\)", index, flags=re.MULTILINE)
        assert entry, f"docs/math.md lists no §{number}"
        assert (entry.group(1), entry.group(2)) == (title, path.name), entry.group(0)
        for sub, sub_title in _headings(text, 3):
            assert f"§{sub} {sub_title}" in index, f"docs/math.md does not list §{sub} {sub_title} ({path.name})"


def test_every_cited_section_of_docs_math_exists():
    sections, runtime, cited, missing = _sections(), _runtime_sections(), {}, []
    for path in _cited_files():
        text = _read(path)
        assert OLD_CITATION not in text, f"{path}: cites the team notes, which are not part of the project"
        for document, number, where in _citations(path):
            if document == "math":
                cited.setdefault(number, []).append(where)
                if number not in sections:
                    missing.append(f"{where}: docs/math.md §{number}")
            elif number not in runtime:
                missing.append(f"{where}: docs/runtime.md §{number}")
    assert not missing, missing
    assert len({number.split(".")[0] for number in cited}) >= 8  # the code does cite the document
    assert len({number for number in cited if "." in number}) >= 20  # and its subsections


def test_every_cited_paragraph_of_docs_math_exists():
    """docs/math.md §11, "Class-symmetric designs": a paragraph of §11 starts with that name in bold."""
    sections, cited, missing = _sections(), 0, []
    for path in _cited_files():
        for match in NAMED.finditer(_read(path)):
            cited += 1
            section, name = match.group(1), " ".join(match.group(2).split())  # a name may wrap onto the next line
            if section not in sections or f"**{name}" not in sections[section].read_text():
                missing.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
    assert not missing, missing
    assert cited >= 3


@pytest.mark.parametrize("text, expected", [
    ("(docs/math.md §3.9)", [("math", "3.9")]),
    ("(docs/math.md §4 and §11)", [("math", "4"), ("math", "11")]),
    ("docs/math.md §9.5, §9.8). x", [("math", "9.5"), ("math", "9.8")]),
    ("docs/math.md §10. Next", [("math", "10")]),
    ("docs/math.md §4-§6", [("math", n) for n in ("4", "6", "4", "5", "6")]),
    ("docs/math.md §1-2)", [("math", n) for n in ("1", "2", "1", "2")]),
    ("docs/math.md §2, Prop. 1; docs/math.md §11, 2 eps", [("math", "2"), ("math", "11")]),
    ('(docs/math.md "\n    "§11)', [("math", "11")]),
    ("(docs/runtime.md §4-§8: x", [("runtime", n) for n in ("4", "8", "4", "5", "6", "7", "8")]),
    ("(docs/math.md §11, docs/runtime.md §6)", [("math", "11"), ("runtime", "6")]),
])
def test_the_citation_forms_are_read(tmp_path, text, expected):
    path = tmp_path / "module.py"
    path.write_text(text)
    assert [(document, number) for document, number, _ in _citations(path)] == expected
