"""Shared by the make_*.py scripts: build a notebook from (kind, source) cells with fixed cell ids, stored
without outputs, so that regenerating it gives a byte-identical file when the cells do not change."""

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


def write(cells, target):
    nbformat.write(build(cells), target)
    print(f"wrote {target}")
