"""Sphinx configuration of the gpusimhash documentation.

Build with ``python -m sphinx -W --keep-going -n docs docs/_build/html`` (warnings are errors,
every cross-reference must resolve). The benchmark tables are generated from
``bench/results/*.json`` before each build by ``docs/bench_tables.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))

import bench_tables

import gpusimhash

bench_tables.write_pages(DOCS.parent / "bench" / "results", DOCS / "_generated")

project = "gpusimhash"
author = "the gpusimhash authors"
copyright = "the gpusimhash authors"
release = gpusimhash.__version__
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinxarg.ext",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_generated/*.md"]
templates_path = ["_templates"]

# every reference must resolve; names of other projects are not linked (the build stays offline)
nitpicky = True
nitpick_ignore_regex = [
    (
        "py:class",
        r"(numpy|np|pandas|pd|pyarrow|pa|scipy|faiss|dask|cupy|concurrent|collections)\..*",
    ),
    ("py:class", r"(ndarray|array_like|array-like|optional|callable|iterable|sequence|mapping)"),
]

autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # the numpydoc Parameters sections give every type
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_xref_param_type = False

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

html_theme = "pydata_sphinx_theme"
html_title = f"gpusimhash {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path: list[str] = []

# "--option" in the command-line reference stays two hyphens
smartquotes_action = "qe"


def _skip_named_tuple_fields(
    app: object, what: str, name: str, obj: object, skip: bool, options: object
) -> bool | None:
    """Leave out a named tuple's generated field docs: its Attributes section describes them."""
    if (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
        return True
    return None


def setup(app: Any) -> None:
    """Connect the hooks above."""
    app.connect("autodoc-skip-member", _skip_named_tuple_fields)
