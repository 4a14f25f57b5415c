"""README's Quick start and .ci/run must stay in sync."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_quick_start_has_exactly_two_commands():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert commands[0].endswith("lipdesign demo")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_exactly():
    lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    assert quick_start_commands()[1] in lines


def test_the_installed_version_is_the_one_files_record():
    import tomllib

    import lipdesign

    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == lipdesign.__version__


def test_contributing_gives_the_same_two_commands():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert all(command in text for command in quick_start_commands())


def test_the_readme_is_short_and_points_to_the_manual():
    """README.md stays under 10 KB: what lipdesign is, the two commands, one example, the headline figures and the
    links; the manual (docs/manual.md) says the rest at length."""
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) < 10_000
    assert "docs/manual.md" in text and (ROOT / "docs" / "manual.md").exists()
