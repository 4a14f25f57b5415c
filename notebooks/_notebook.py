"""Shared by the make_*.py scripts: build a notebook from (kind, source) cells with fixed cell ids, execute it (in
a temporary folder, with the interpreter running the script) and store it WITH its outputs, so that the plots are
visible where the repository is browsed; the tests execute the notebooks again."""

import tempfile

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def build(cells):
    notebook = new_notebook()
    notebook.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }
    for number, (kind, source) in enumerate(cells):
        cell = new_markdown_cell(source) if kind == "md" else new_code_cell(source)
        cell.id = f"cell-{number:02d}"
        notebook.cells.append(cell)
    nbformat.validate(notebook)
    return notebook


def write(cells, target, execute=True):
    notebook = build(cells)
    if execute:
        import nbclient

        with tempfile.TemporaryDirectory() as folder:
            nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                    resources={"metadata": {"path": folder}}).execute()
        for cell in notebook.cells:  # execution metadata holds timestamps; drop them so reruns diff cleanly
            cell.metadata.pop("execution", None)
    nbformat.write(notebook, target)
    print(f"wrote {target}")
