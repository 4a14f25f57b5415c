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
# numpydoc: every documented object is held to these checks of numpydoc's validator (every parameter documented
# and none invented, a Returns section when something is returned), and the build fails otherwise;
# tests/test_docstrings.py runs them in the test suite too, with GL08 (a docstring) and EX01 (an example). GL08 is
# left to the test: an override without a docstring of its own shows its base's (autodoc inherits it), which
# numpydoc's validator, reading the object's own __doc__, would call missing. No member tables (autosummary's class
# template lists the members).
numpydoc_validation_checks = {"PR01", "PR02", "RT01"}
numpydoc_show_class_members = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = f"lipdesign {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}


def _constant_comments():
    """``#:`` comments of the package's module-level constants, by name: {name: [(module, lines), ...]}."""
    import pkgutil

    from sphinx.errors import PycodeError
    from sphinx.pycode import ModuleAnalyzer

    comments = {}
    for module in pkgutil.walk_packages(lipdesign.__path__, "lipdesign."):
        if module.name.endswith("__main__"):
            continue
        try:  # a module of an extra the docs install lacks (numba's kernels) defines no documented constant
            analyzer = ModuleAnalyzer.for_module(module.name)
        except PycodeError:
            continue
        for (scope, name), lines in analyzer.find_attr_docs().items():
            if scope == "":
                comments.setdefault(name, []).append((module.name, list(lines)))
    return comments


_COMMENTS = {}


def _constant_docstring(app, what, name, obj, options, lines):
    """A constant has no docstring of its own, and autodoc finds its ``#:`` comment only in the module it documents
    it from: a constant that a package re-exports (``REPORT_DTYPE`` in ``lipdesign.learn``) would show its type's
    docstring (numpy.dtype's). Every constant gets the comment of the module that defines it, found by identity."""
    import sys

    if what != "data":
        return
    lines.clear()
    if not _COMMENTS:
        _COMMENTS.update(_constant_comments())
    short = name.rsplit(".", 1)[1]
    for module, comment in _COMMENTS.get(short, []):
        if getattr(sys.modules.get(module), short, None) is obj:  # imported: it defines the documented object
            lines.extend(comment)
            return


def setup(app):
    app.connect("autodoc-process-docstring", _constant_docstring)
