"""Execute every notebooks/*.ipynb top to bottom; any cell error fails the test.

Each notebook runs in a fresh "python3" kernel (jupyter_client starts it with the interpreter running
pytest, i.e. the project's venv) with a temporary working directory, so it cannot rely on or litter the
repository's files.
"""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is needed to read the notebooks (pip install -e .[dev])")
nbclient = pytest.importorskip("nbclient", reason="nbclient is needed to execute the notebooks (pip install -e .[dev])")
pytest.importorskip("ipykernel", reason="ipykernel is needed for the python3 kernel (pip install -e .[dev])")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT = 300

#: Notebooks that take a minute or so to execute here: run with the slow tests (`python -m pytest -m slow`), so the
#: default suite stays near 11 minutes on 2 cores (02-harmony: 88 s, its accuracy tables over many mechanisms;
#: 07-many-rounds-many-attributes: 44 s, its designs and 30 memoised rounds of five families).
SLOW_NOTEBOOKS = {"02-harmony.ipynb", "07-many-rounds-many-attributes.ipynb"}


def test_notebooks_exist():
    assert NOTEBOOKS, "no notebooks/*.ipynb found"


@pytest.mark.parametrize("path", [pytest.param(path, marks=pytest.mark.slow) if path.name in SLOW_NOTEBOOKS else path
                                  for path in NOTEBOOKS], ids=[path.name for path in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as error:
        pytest.fail(f"{path.name}: a cell raised\n{error}", pytrace=False)
