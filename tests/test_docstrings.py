"""The API reference's docstrings: every name the API pages list (docs/api/*.rst) has numpydoc sections and an
example, its public methods have their Parameters and Returns, and every example runs as a doctest.

The sections are checked by numpydoc's own validator (``numpydoc.validate``) with the checks ``SECTION_CHECKS``
(its codes: GL08 no docstring, PR01 a parameter not documented, PR02 a documented parameter that does not exist,
RT01 no Returns section for a function that returns, EX01 no Examples section). docs/conf.py turns PR01, PR02
and RT01 on for the site build. The examples run with ``np`` and ``ld`` (``import lipdesign as ld``) defined, in
a scratch folder, and must print what they show.
"""

import doctest
import inspect
import os

import numpy as np
import pytest
from helpers import api_names, is_data, public_members, resolve

numpydoc_validate = pytest.importorskip("numpydoc.validate", reason="numpydoc (the dev and docs extras)")

import lipdesign as ld  # noqa: E402

#: Checked on every listed name and on the public members of the listed classes (not EX01: a method's example
#: is welcome, not required).
SECTION_CHECKS = {"GL08", "PR01", "PR02", "RT01"}


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
