"""Running the `lipdesign` command as a user does (a real process), shared by the CLI tests."""

import subprocess
import sys


def lipdesign(*args, cwd):
    return subprocess.run([sys.executable, "-m", "lipdesign.cli", *map(str, args)], check=False, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def one_line_error(result):
    """The one stderr line of a refused command (exit code 2, no traceback)."""
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lipdesign: error: "), result.stderr
    return lines[0]
