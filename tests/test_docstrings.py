"""The API reference's docstrings: every name the API pages list (docs/api/*.rst) has numpydoc sections and an
example, its public methods have their Parameters and Returns, and every example runs as a doctest.

The sections are checked by numpydoc's own validator (``numpydoc.validate``) with the checks ``SECTION_CHECKS``
(its codes: GL08 no docstring, PR01 a parameter not documented, PR02 a documented parameter that does not exist,
RT01 no Returns section for a function that returns, EX01 no Examples section). docs/conf.py turns the same
checks on for the site build. The examples run with ``np`` and ``ld`` (``import lipdesign as ld``) defined, in a
scratch folder, and must print what they show.
"""

import doctest
import importlib
import inspect
import os
import re
from pathlib import Path

import numpy as np
import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate", reason="numpydoc (the dev and docs extras)")

import lipdesign as ld  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"

#: Checked on every listed name and on the public members of the listed classes (not EX01: a method's example
#: is welcome, not required).
SECTION_CHECKS = {"GL08", "PR01", "PR02", "RT01"}


def api_names():
    """The dotted names the autosummary tables of docs/api/*.rst list, one per object (``ld.design`` and
    ``lipdesign.designer.design`` are the same function: the first page's name is kept)."""
    names, seen = [], set()
    for page in sorted(API.glob("*.rst")):
        text = page.read_text(encoding="utf-8")
        module = re.search(r"currentmodule:: (\S+)", text)
        if module is None:
            continue
        for line in text.splitlines():
            if re.match(r"^   ~?[A-Za-z_][\w.]*$", line):
                name = f"{module.group(1)}.{line.strip().lstrip('~')}"
                obj = resolve(name)
                if id(obj) not in seen:
                    seen.add(id(obj))
                    names.append(name)
    return names


def resolve(name):
    """The object a dotted name such as ``lipdesign.model.Prior.from_counts`` names."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            obj = getattr(obj, attribute)
        return obj
    raise ImportError(name)


def is_data(obj):
    """A constant (FAMILIES, MAX_RAYS, ...): documented by its ``#:`` comment, it has no docstring of its own."""
    return not (inspect.isclass(obj) or callable(obj))


def public_members(name):
    """The dotted names of the public methods and properties a listed class defines itself (the ones its API page
    documents; inherited ones are documented on the class that defines them). An override without a docstring of
    its own is left out: the page shows the overridden method's docstring (autodoc inherits it)."""
    cls = resolve(name)
    members = []
    for attribute, value in vars(cls).items():
        if attribute.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if not (isinstance(value, property) or inspect.isfunction(value)):
            continue
        if value.__doc__ is None and any(getattr(getattr(base, attribute, None), "__doc__", None)
                                         for base in cls.__mro__[1:]):
            continue
        members.append(f"{name}.{attribute}")
    return members


NAMES = api_names()
DOCUMENTED = [name for name in NAMES if not is_data(resolve(name))]
CLASSES = [name for name in NAMES if inspect.isclass(resolve(name))]


def failures(name, checks):
    report = numpydoc_validate.validate(name)
    return [f"{code}: {message}" for code, message in report["errors"] if code in checks]


@pytest.mark.parametrize("name", DOCUMENTED)
def test_listed_name_has_numpydoc_sections_and_an_example(name):
    problems = failures(name, SECTION_CHECKS | {"EX01"})
    assert not problems, f"{name}: " + "; ".join(problems)


@pytest.mark.parametrize("name", CLASSES)
def test_public_members_have_parameters_and_returns(name):
    problems = [f"{member}: {problem}" for member in public_members(name)
                for problem in failures(member, SECTION_CHECKS)]
    assert not problems, "\n".join(problems)


def examples(name):
    """The doctests of a listed name's docstring and of its members' docstrings."""
    obj = resolve(name)
    finder = doctest.DocTestFinder(recurse=inspect.isclass(obj), exclude_empty=True)
    module = inspect.getmodule(obj) if not is_data(obj) else None
    return [test for test in finder.find(obj, name, module=module or False, globs={})
            if test.examples and (test.name == name or test.name.rsplit(".", 1)[0] == name)]


@pytest.mark.parametrize("name", DOCUMENTED)
def test_examples_run(name, tmp_path, monkeypatch):
    tests = examples(name)
    assert tests, f"{name} has no example"
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        test.globs.update({"np": np, "ld": ld})
        with np.printoptions(precision=4, suppress=True, legacy=False):
            output = []
            runner.run(test, out=output.append)
        assert not output, "".join(output)
    assert runner.summarize(verbose=False).failed == 0
    assert os.getcwd() == str(tmp_path)
