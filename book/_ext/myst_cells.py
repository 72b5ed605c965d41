"""Sphinx extension: the book renders each chapter's Markdown as its author wrote it, in MyST.

``tools/notebooks.py`` writes the notebooks' Markdown in plain CommonMark, so that they read right in JupyterLab,
Colab, GitHub and a papermill output (``ftcl_core/pages/portable.py``); a cell it converted keeps its MyST source
in ``metadata.ftcl.myst``.  Before myst-nb parses a notebook, this puts every such cell back as the Markdown cell
it was: the book's terms, glued numbers, targets and citations are MyST's own, resolved by the build.
"""

import json


def _restore(app, docname, source):
    if not source[0].lstrip().startswith("{"):  # a Markdown page, not a notebook
        return
    nb = json.loads(source[0])
    changed = False
    for i, cell in enumerate(nb.get("cells", [])):
        myst = cell.get("metadata", {}).get("ftcl", {}).get("myst")
        if myst is not None:
            nb["cells"][i] = {"cell_type": "markdown", "id": cell.get("id", f"cell-{i}"), "metadata": {},
                              "source": myst}
            changed = True
    if changed:
        source[0] = json.dumps(nb)


def setup(app):
    app.connect("source-read", _restore)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
