"""Helpers the test files share: a Zipf prior, the `lipdesign` command and `python -c` run as real processes, and
rewriting a JSON file in place. Imported as ``from helpers import ...`` (pytest puts tests/ on sys.path, as for
tests/brute_force.py)."""

import importlib
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def zipf(k, s=1.1):
    """Zipf probabilities over k values: weight 1 / i^s for i = 1..k, normalised."""
    weights = 1.0 / np.arange(1, k + 1) ** s
    return weights / weights.sum()


def lipdesign(*args, cwd=None, timeout=300):
    """Run the `lipdesign` command as a user does (a real process) in ``cwd`` (None: this process's folder)."""
    return subprocess.run([sys.executable, "-m", "lipdesign.cli", *map(str, args)], check=False, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def one_line_error(result):
    """The one stderr line of a refused command (exit code 2, no traceback)."""
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lipdesign: error: "), result.stderr
    return lines[0]


def run_python(code, timeout=120):
    """Run ``python -c code`` in a fresh process at the repository root (the repository on PYTHONPATH), require exit
    code 0 and return its standard output, stripped."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, env=environment,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def rewrite(path, change):
    """Edit the JSON document in the file ``path`` in place: ``change(document)``, then write it back."""
    document = json.loads(Path(path).read_text())
    change(document)
    Path(path).write_text(json.dumps(document))


def run_main(capsys, *args):
    """(exit code, stdout, stderr) of ``lipdesign.cli.main(args)`` in this process (--help and --version exit)."""
    from lipdesign.cli import main

    try:
        code = main([str(arg) for arg in args])
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def api_names():
    """The dotted names the autosummary tables of docs/api/*.rst list, one per object (``ld.design`` and
    ``lipdesign.designer.design`` are the same function: the first page's name is kept)."""
    names, seen = [], set()
    for page in sorted((ROOT / "docs" / "api").glob("*.rst")):
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
