"""The findings' figure: the phase diagram of :func:`ftcl_core.study.evidence.phase_grid`, drawn, and written as the
PNG that the README and the book's index show (``tools/readme_findings.py``, run by ``python -m ftcl_core summary``,
rewrites it). Titles and column labels come from the caller: the words are the page's."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from ftcl_core.pages import result_figures
from ftcl_core.runs import atomic_write_bytes
from ftcl_core.study import evidence, experiment_file
from ftcl_core.study.results import verdicts


def draw_phase_diagram(ev: evidence.Evidence, knn: bool = False, *, title: str, column: Callable[[float], str],
                       footnote: str):
    """The phase diagram (:func:`ftcl_core.pages.result_figures.difference_grid` of
    :func:`ftcl_core.study.evidence.phase_grid`), titled ``title``, each column labelled ``column(start fraction)``;
    a cell the error scale decided carries a dagger in place of " on the error scale", which ``footnote`` (the
    page's words, starting with the dagger) explains under the figure."""
    labels, fractions, diff, ci, words = evidence.phase_grid(ev, knn)
    return result_figures.difference_grid(labels, [column(f) for f in fractions], diff, ci, words, title=title,
                                          marked=verdicts.ON_ERRORS, footnote=footnote)


def write_figure(ev: evidence.Evidence, out: str | Path | None = None, **labels) -> Path:
    """The phase diagram (``labels``: :func:`draw_phase_diagram`'s title and column) as a PNG for the README and the
    index (:data:`ftcl_core.study.evidence.FIGURE`)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    target = Path(out) if out else experiment_file.ROOT / evidence.FIGURE
    draw_phase_diagram(ev, **labels)
    buf = io.BytesIO()
    plt.gcf().savefig(buf, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close("all")
    atomic_write_bytes(target, buf.getvalue())
    return target
