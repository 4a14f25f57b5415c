# Sphinx configuration of the lipdesign docs site: Sphinx with the PyData theme (the convention of numpy, scipy and
# pandas), MyST for the Markdown pages, numpydoc for the docstrings, myst-nb for the notebooks (stored outputs).
# Why Sphinx and not MkDocs: mkdocstrings reads the source statically and cannot resolve lipdesign's lazily
# exported names (``ld.design`` is a module ``__getattr__``); autodoc imports them, so the API pages are the real names.
#
# Build (warnings are errors): python -m sphinx -W --keep-going -b html docs docs/_build/html
# tests/test_docs.py (slow) runs the same build into a temporary directory.

import lipdesign

project = "lipdesign"
author = "the lipdesign developers"
copyright = "the lipdesign developers"
release = lipdesign.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",  # registers myst_parser for the .md pages and renders the .ipynb notebooks
]

# docs/notebooks is a symbolic link to the repository's notebooks/ (the generated, committed .ipynb files); the
# generators (notebooks/*.py) and everything outside these pages are not sources
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "api/_templates", "Thumbs.db", ".DS_Store"]
templates_path = ["api/_templates"]

# MyST: $...$ math in the derivations and guide pages, heading anchors for links such as runtime.md#section
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# The sections of docs/math/ begin at "## N. Title" (the numbering docs/math.md describes and
# tests/test_citations.py checks), so each page's first heading is H2: kept as it is, and only that warning class
# (myst.header) is silenced
suppress_warnings = ["myst.header"]

# Notebooks: rendered from the outputs stored in notebooks/*.ipynb, never executed here (tests/test_notebooks.py
# executes them)
nb_execution_mode = "off"

# API reference: autosummary writes one page per name into api/generated (not committed)
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "none"
# numpydoc: the docstrings are prose with ``literals``, not yet numpydoc sections; no validation of the sections,
# and no member tables (autosummary's class template lists the members)
numpydoc_validation_checks = set()
numpydoc_show_class_members = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = f"lipdesign {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}


def _drop_inherited_data_docstring(app, what, name, obj, options, lines):
    """A constant without a ``#:`` comment would show its type's docstring (float's, numpy.dtype's): drop it."""
    if what in ("data", "attribute") and lines and getattr(obj, "__doc__", None) == type(obj).__doc__:
        lines.clear()


def setup(app):
    app.connect("autodoc-process-docstring", _drop_inherited_data_docstring)
