"""The package's annotations hold: mypy reports nothing on the files of pyproject.toml's [tool.mypy], and the package
ships its py.typed marker (PEP 561), so that a user's type checker reads them.

It runs the mypy installed with the interpreter running pytest (the dev extra's "mypy"), with a fresh cache in a
temporary folder (a cache left by another mypy version is never read), and skips when mypy is not installed.
"""

import importlib.util
import inspect
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


def test_the_type_checkers_view_of_the_lazy_names_is_the_lazy_table():
    """lipdesign/__init__.py imports its lazy names under TYPE_CHECKING for type checkers: exactly the names of
    ``_EXPORTS`` and ``_SUBPACKAGES`` but the deprecated ones, each the very object the lazy lookup returns."""
    import ast
    import importlib
    from pathlib import Path

    import lipdesign

    tree = ast.parse((Path(lipdesign.__file__)).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If) and getattr(node.test, "id", "") ==
                 "TYPE_CHECKING")
    seen = {}
    for node in ast.walk(block):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                seen[alias.asname or alias.name] = (node.module, alias.name)
    assert set(seen) == (set(lipdesign._EXPORTS) | set(lipdesign._SUBPACKAGES)) - set(lipdesign._DEPRECATED)
    for name, (module, attribute) in seen.items():
        assert getattr(importlib.import_module(module), attribute) is getattr(lipdesign, name), name


def test_every_public_signature_is_annotated():
    """Every function and class the API pages list (docs/api/*.rst), and every public method and property its
    classes define, annotates each parameter and its return: the public API is what a user's type checker reads."""
    from helpers import api_names, public_members, resolve

    unannotated = []
    for name in api_names():
        obj = resolve(name)
        if inspect.isclass(obj):
            functions = [(f"{name}.__init__", vars(obj)["__init__"])] if "__init__" in vars(obj) else []
            for member in public_members(name):
                function = inspect.getattr_static(obj, member.rsplit(".", 1)[1])
                function = function.fget if isinstance(function, property) else function
                functions.append((member, getattr(function, "__func__", function)))
        elif callable(obj):
            functions = [(name, obj)]
        else:
            continue
        for label, function in functions:
            signature = inspect.signature(function)
            parameters = list(signature.parameters.values())
            if parameters and parameters[0].name in ("self", "cls"):
                parameters = parameters[1:]
            missing = [parameter.name for parameter in parameters if parameter.annotation is inspect.Parameter.empty]
            if signature.return_annotation is inspect.Signature.empty:
                missing.append("return")
            if missing:
                unannotated.append(f"{label}: {', '.join(missing)}")
    assert not unannotated, "\n".join(unannotated)
