"""Sphinx extension: every page of the built book loads plotly.js from one shared file, not inline.

A chapter's explorer embeds plotly.js in its output (``include_plotlyjs=True``), so that the figure responds
wherever the notebook is opened: JupyterLab, Colab, GitHub's viewer, a papermill output converted to HTML. In the
built book that copy made each explorer page about 5 MB. After the build, this writes plotly.js once to
``_static/plotly.min.js`` and replaces each page's inline copy with a ``<script src>`` to it, which the browser
caches across pages. Only the exact bundled plotly.js is replaced; the figures' own scripts stay as they are.
"""

from __future__ import annotations

import os
from pathlib import Path

SHARED = "_static/plotly.min.js"


def share_plotly(out: Path, plotlyjs: str) -> list[Path]:
    """Replace ``<script>`` + ``plotlyjs`` + ``</script>`` in every HTML file under ``out`` with one ``<script src>``
    to ``out/_static/plotly.min.js`` (written when any page held it); returns the pages changed."""
    inline = f"<script>{plotlyjs}</script>"
    changed = []
    for page in sorted(out.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        if inline not in text:
            continue
        src = Path(os.path.relpath(out / SHARED, page.parent)).as_posix()
        page.write_text(text.replace(inline, f'<script charset="utf-8" src="{src}"></script>'), encoding="utf-8")
        changed.append(page)
    if changed:
        (out / SHARED).parent.mkdir(parents=True, exist_ok=True)
        (out / SHARED).write_text(plotlyjs, encoding="utf-8")
    return changed


def _finished(app, exception) -> None:  # noqa: ANN001  (Sphinx's application)
    if exception is not None or app.builder.format != "html":
        return
    from plotly.offline import get_plotlyjs

    share_plotly(Path(app.outdir), get_plotlyjs())


def setup(app):  # noqa: ANN001, ANN201  (Sphinx's application; the extension's metadata)
    app.connect("build-finished", _finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
