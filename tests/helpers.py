"""Helpers the test files share: a Zipf prior, the `lipdesign` command and `python -c` run as real processes, and
rewriting a JSON file in place. Imported as ``from helpers import ...`` (pytest puts tests/ on sys.path, as for
tests/brute_force.py)."""

import json
import os
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
