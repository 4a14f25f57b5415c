"""The floors that pyproject.toml declares are the ones .ci/floors.txt pins exactly, and .ci/run installs them.

.ci/run installs the package with `-c .ci/floors.txt` and runs the demo and part of the suite there, so a floor
that drifts from pyproject (or a dependency added without a pin) would leave the declared floors untested.
"""

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version
except ImportError:  # pragma: no cover - pytest depends on packaging; a plain parser all the same
    Requirement = None

    def canonicalize_name(name):
        return re.sub(r"[-_.]+", "-", name).lower()

    def Version(text):  # stands in for packaging's class
        parts = [int(part) for part in text.split(".")]
        while parts and parts[-1] == 0:
            parts.pop()
        return tuple(parts)


_SPEC = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*?)\s*(?:;.*)?$")


def _parse(line):
    """(canonical name, [(operator, version), ...]) of one requirement string."""
    if Requirement is not None:
        requirement = Requirement(line)
        return canonicalize_name(requirement.name), [(s.operator, s.version) for s in requirement.specifier]
    match = _SPEC.match(line)
    if match is None:
        raise ValueError(f"cannot parse requirement {line!r}")
    specifiers = [re.match(r"(===|==|>=|<=|~=|!=|>|<)\s*(\S+)", part.strip()).groups()
                  for part in match.group(2).split(",") if part.strip()]
    return canonicalize_name(match.group(1)), specifiers


def declared_floors(pyproject_text):
    """{name: floor} of [project.dependencies] and of the "design" extra (the full install, what the floors job
    installs); a dependency without exactly one '>=' floor is an error."""
    floors, problems = {}, []
    project = tomllib.loads(pyproject_text)["project"]
    for line in project["dependencies"] + project.get("optional-dependencies", {}).get("design", []):
        name, specifiers = _parse(line)
        lower = [version for operator, version in specifiers if operator == ">="]
        if len(lower) != 1:
            problems.append(f"pyproject: {line!r} declares no single '>=' floor")
        else:
            floors[name] = lower[0]
    return floors, problems


def pinned(constraints_text):
    """{name: version} of the '==' pins of a constraints file; anything else in it is an error."""
    pins, problems = {}, []
    for raw in constraints_text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, specifiers = _parse(line)
        if len(specifiers) != 1 or specifiers[0][0] != "==" or "*" in specifiers[0][1]:
            problems.append(f"floors.txt: {line!r} is not one exact '==' pin")
        elif name in pins:
            problems.append(f"floors.txt: {name} is pinned twice")
        else:
            pins[name] = specifiers[0][1]
    return pins, problems


def mismatches(pyproject_text, constraints_text):
    """Every way the two files disagree, as one line each (empty when they agree)."""
    floors, problems = declared_floors(pyproject_text)
    pins, more = pinned(constraints_text)
    problems += more
    for name, floor in floors.items():
        if name not in pins:
            problems.append(f"{name}: pyproject declares >={floor} but floors.txt does not pin it")
        elif Version(pins[name]) != Version(floor):
            problems.append(f"{name}: pyproject declares >={floor} but floors.txt pins =={pins[name]}")
    problems += [f"{name}: floors.txt pins =={version} but pyproject does not declare it"
                 for name, version in pins.items() if name not in floors]
    return problems


def test_floors_txt_pins_every_declared_floor_exactly_and_nothing_else():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert mismatches(pyproject, (ROOT / ".ci/floors.txt").read_text()) == []
    assert declared_floors(pyproject)[0]  # the parse found the dependencies


def test_ci_installs_the_floors_and_runs_the_demo_and_tests_there():
    script = (ROOT / ".ci/run").read_text()
    assert re.search(r"pip install [^\n]*-c \.ci/floors\.txt", script)
    assert ".venv-floors/bin/pip check" in script
    assert re.search(r"cd \"\$demo_dir\" && \"\$floors_bin/lipdesign\" demo", script)
    assert 'floors_bin="$PWD/.venv-floors/bin"' in script
    assert re.search(r"\.venv-floors/bin/(python -m )?pytest", script)


@pytest.fixture(params=["packaging", "plain"])
def parser(request, monkeypatch):
    """Each check runs with packaging's parser and with the plain one used where packaging is missing."""
    if request.param == "plain":
        monkeypatch.setattr(__import__(__name__), "Requirement", None)
    return request.param


PYPROJECT = """
[project]
name = "x"
dependencies = ["numpy>=2.0", "{arrow}", "tqdm>=4.66,<5"]
"""


@pytest.mark.parametrize("floors, expected", [
    ("numpy==2.0.0\nPyArrow==16\ntqdm==4.66.0  # at the floor\n", []),
    ("numpy==2.0.0\npyarrow==16\n", ["tqdm: pyproject declares >=4.66 but floors.txt does not pin it"]),
    ("numpy==2.0.1\npyarrow==16\ntqdm==4.66\n", ["numpy: pyproject declares >=2.0 but floors.txt pins ==2.0.1"]),
    ("numpy==2.0\npyarrow==16\ntqdm==4.66\nscipy==1.13.0\n",
     ["scipy: floors.txt pins ==1.13.0 but pyproject does not declare it"]),
    ("numpy>=2.0\npyarrow==16\ntqdm==4.66\n", ["floors.txt: 'numpy>=2.0' is not one exact '==' pin",
                                               "numpy: pyproject declares >=2.0 but floors.txt does not pin it"]),
    ("numpy==2.0\nnumpy==2.0\npyarrow==16\ntqdm==4.66\n", ["floors.txt: numpy is pinned twice"]),
])
def test_the_check_names_each_disagreement(floors, expected, parser):
    assert mismatches(PYPROJECT.format(arrow="PyArrow[parquet]>=16"), floors) == expected


def test_a_dependency_without_a_floor_is_refused(parser):
    assert mismatches(PYPROJECT.format(arrow="pyarrow"), "numpy==2.0\ntqdm==4.66\n") == [
        "pyproject: 'pyarrow' declares no single '>=' floor"]
