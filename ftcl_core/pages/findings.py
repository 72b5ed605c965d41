"""The findings' figure: the phase diagram of :func:`ftcl_core.study.findings.phase_grid`, drawn, and written as the
PNG that the README and the book's index show (``python -m ftcl_core summary`` rewrites it)."""

from __future__ import annotations

import io
from pathlib import Path

from ftcl_core.pages import plotting as P
from ftcl_core.runs import atomic_write_bytes
from ftcl_core.study import experiments as X
from ftcl_core.study import findings as F


def draw_phase_diagram(ev: F.Evidence, knn: bool = False, title: str | None = None):
    """The phase diagram (:func:`ftcl_core.pages.plotting.difference_grid` of :func:`ftcl_core.study.findings.phase_grid`)."""
    labels, fractions, diff, ci, words = F.phase_grid(ev, knn)
    readout = "kNN" if knn else "linear"
    return P.difference_grid(labels, [f"FT from {f:.0%} of the run" if f else "FT from the start" for f in fractions],
                             diff, ci, words,
                             title=title or f"MoCo v1: FT minus the same run without FT ({readout} top-1, points)")


def write_figure(ev: F.Evidence, out: str | Path | None = None) -> Path:
    """The phase diagram as a PNG for the README and the index (:data:`ftcl_core.study.findings.FIGURE`)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    target = Path(out) if out else X.ROOT / F.FIGURE
    draw_phase_diagram(ev)
    buf = io.BytesIO()
    plt.gcf().savefig(buf, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close("all")
    atomic_write_bytes(target, buf.getvalue())
    return target
