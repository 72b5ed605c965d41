"""Figures drawn from stored runs: score statistics (Fig 3, Supp A), gradient landscapes (Fig 4, Supp C),
the eq. 4 score bound, and accuracy tables.  Every function takes arrays from a run folder
(:class:`ftcl_core.runs.RunDir`) and returns a matplotlib Figure; nothing here trains or computes results.
"""

from __future__ import annotations

import textwrap
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ftcl_core.study import experiment_file
from ftcl_core.study.curves import smooth  # the moving average the figures and their facts (chapter 4) share
from ftcl_core.transforms import score_range, transformed_positive_score

if TYPE_CHECKING:  # annotations only: matplotlib loads when a figure is drawn
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.colors import SymLogNorm
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend
    from matplotlib.path import Path
    from matplotlib.transforms import Bbox


STAT_LABELS = {
    "pos_mean": "Mean(pos), raw", "neg_mean": "Mean(neg), raw", "neg_var": "Var(neg), raw",
    "ft_pos_mean": "Mean(pos) after FT", "ft_neg_mean": "Mean(neg) after FT", "ft_neg_var": "Var(neg) after FT",
    "top1": "contrastive top-1, %",
}


# ---------------------------------------------------------------------------------------------------
# Checks of a drawn figure, as the book shows it: how large its text comes out in the page's column, and
# whether a legend sits on plotted data.  The tests run them on every figure function below.
# ---------------------------------------------------------------------------------------------------

BOOK_COLUMN_PX = 784
"""Width (CSS px) of a cell output in the built book at a 1400 px window (sphinx-book-theme 1.3, measured in
Chromium): a PNG narrower than this is shown at its own size, a wider one scaled down to it."""
NARROWEST_COLUMN_PX = 720
"""The narrowest the column gets at a 1400 px window (a reader's measure: 720-820 px, with the theme's sidebars): the
legibility rule is checked at this width, so it holds wherever the page is shown between them."""
MIN_TEXT_PX = 11.0
"""The smallest text height a figure may carry: font size in pt x dpi / 72 x (displayed width / PNG width), in px."""
SAVE_PAD_INCHES = 0.1
"""Padding the inline backend adds around the tight bounding box (``bbox_inches='tight'``, savefig.pad_inches)."""


def _draw_noting_text(fig: Figure) -> list[tuple[float, str]]:
    """Draw ``fig`` on its canvas's renderer (layout engine, 3-D projections and all), noting each piece of text
    as ``(font size in points, text)`` instead of painting it: the checks need where things are and how large the
    text is, not its glyphs (which cost most of a draw)."""
    renderer = fig.canvas.get_renderer()
    noted: list[tuple[float, str]] = []

    def note(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if str(s).strip():
            noted.append((prop.get_size_in_points(), str(s)))

    renderer.draw_text = note
    try:
        fig.draw(renderer)
    finally:
        del renderer.draw_text  # back to the class's method
    return noted


def _png_width_px(fig: Figure) -> float:
    """:func:`rendered_width_px` of a figure just drawn."""
    bbox = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
    return (bbox.width + 2 * SAVE_PAD_INCHES) * fig.dpi


def rendered_width_px(fig: Figure) -> float:
    """Width in px of the PNG a notebook embeds for ``fig``: the inline backend saves the figure's tight bounding
    box (everything drawn, legends placed outside the figure included) plus a 0.1-inch pad, at the figure's dpi."""
    _draw_noting_text(fig)
    return _png_width_px(fig)


def text_sizes_px(fig: Figure, column_px: float = BOOK_COLUMN_PX) -> list[tuple[float, str]]:
    """Every piece of text the figure draws (tick labels, titles, axis labels, legend, annotations, colour bar),
    as ``(height in px as shown in a column column_px wide, text)``: a font of S points at dpi D comes out at
    S * D / 72 px in the PNG, scaled by min(1, column / PNG width) on the page.  Read off the renderer while the
    figure draws, so only text that is really drawn counts (not the labels of ticks outside the view)."""
    noted = _draw_noting_text(fig)
    scale = min(1.0, column_px / _png_width_px(fig))
    return [(pt * fig.dpi / 72 * scale, text) for pt, text in noted]


def smallest_text_px(fig: Figure, column_px: float = BOOK_COLUMN_PX) -> float:
    """The height in px of the smallest text ``fig`` draws, as shown in the book's column (:func:`text_sizes_px`);
    infinity for a figure without text."""
    sizes = text_sizes_px(fig, column_px)
    return min(px for px, _ in sizes) if sizes else float("inf")


def _split_finite(xy: np.ndarray) -> list[np.ndarray]:
    """The runs of consecutive finite points of an (n, 2) array: a NaN breaks a line, as matplotlib draws it."""
    ok = np.isfinite(xy).all(axis=1)
    if ok.all():
        return [xy]
    edges = np.flatnonzero(np.diff(np.r_[0, ok.astype(int), 0]))
    return [xy[a:b] for a, b in zip(edges[::2], edges[1::2])]


def _path_hits(path: Path, region: Bbox, filled: bool) -> bool:
    """Whether a path in display coordinates crosses (or, ``filled``, covers part of) the box ``region``."""
    from matplotlib.path import Path

    for part in _split_finite(np.asarray(path.vertices, dtype=float)):
        if len(part) == 1 and region.contains(*part[0]):
            return True
        if len(part) > 1 and Path(part).intersects_bbox(region, filled=filled):
            return True
    return False


def _points_hit(xy: np.ndarray, region: Bbox, radius_px: float) -> bool:
    """Whether any point (display coordinates) lies inside ``region`` grown by a marker's radius."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    xy = xy[np.isfinite(xy).all(axis=1)]
    r = radius_px
    return bool(np.any((xy[:, 0] > region.x0 - r) & (xy[:, 0] < region.x1 + r)
                       & (xy[:, 1] > region.y0 - r) & (xy[:, 1] < region.y1 + r)))


def _artist_hits(artist: Artist, box: Bbox, renderer) -> bool:
    """Whether a plotted artist (line, bar, collection, image, text) draws inside the display box ``box``; only the
    part of ``box`` inside the artist's clip box counts (a curve cut at the frame draws nothing beyond it)."""
    from matplotlib.collections import PathCollection
    from matplotlib.image import AxesImage
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    region = box
    clip = artist.get_clip_box() if artist.get_clip_on() else None
    if clip is not None:
        region = Bbox.intersection(box, clip)
        if region is None or region.width < 1 or region.height < 1:
            return False
    to_px = artist.figure.dpi / 72
    if isinstance(artist, Line2D):
        path = artist.get_transform().transform_path(artist.get_path())
        if artist.get_linestyle() not in ("None", "", " ", "none") and _path_hits(path, region, filled=False):
            return True
        return artist.get_marker() not in (None, "None", "", " ", "none") and _points_hit(
            path.vertices, region, artist.get_markersize() * to_px / 2)
    if isinstance(artist, PathCollection):  # scatter: markers at the offsets
        sizes = artist.get_sizes()
        radius = float(np.sqrt(np.max(sizes)) * to_px / 2) if len(sizes) else 0.0
        return _points_hit(artist.get_offset_transform().transform(artist.get_offsets()), region, radius)
    if isinstance(artist, Patch):
        path = artist.get_transform().transform_path(artist.get_path())
        return _path_hits(path, region, filled=artist.get_fill())
    if hasattr(artist, "get_paths"):  # error bars, filled bands, surfaces
        transform = artist.get_transform()
        filled = len(artist.get_facecolor()) > 0 and np.any(np.asarray(artist.get_facecolor())[:, 3] > 0)
        return any(_path_hits(transform.transform_path(p), region, filled=bool(filled)) for p in artist.get_paths())
    if isinstance(artist, (AxesImage, Text)):
        if isinstance(artist, Text) and not artist.get_text().strip():
            return False
        hit = Bbox.intersection(artist.get_window_extent(renderer), region)
        return hit is not None and hit.width >= 1 and hit.height >= 1
    return False


def legend_overlaps_data(fig: Figure) -> list[str]:
    """What each legend of ``fig`` covers: after drawing, every legend's box (the axes' legends and the figure's)
    is tested against every plotted artist of every visible axes (lines and their markers, bars and other patches,
    scatter points, error bars, filled bands, images, annotations); one line per legend and artist it lies on.
    An empty list: no legend hides data."""
    _draw_noting_text(fig)  # lays the figure out: every position below is the drawn one
    renderer = fig.canvas.get_renderer()
    legends = [(f"legend of axes {i}", ax.get_legend()) for i, ax in enumerate(fig.axes) if ax.get_legend()]
    figures, k = [fig], 0
    while k < len(figures):  # the figure and its subfigures, nested
        figures += figures[k].subfigs
        k += 1
    legends += [(f"figure legend {i}", leg) for i, leg in enumerate(leg for f in figures for leg in f.legends)]
    found = []
    for name, legend in legends:
        if not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        for i, ax in enumerate(fig.axes):
            if not ax.get_visible():
                continue
            artists = [*ax.lines, *ax.patches, *ax.collections, *ax.images, *ax.texts]
            for artist in artists:
                if artist.get_visible() and artist.get_alpha() != 0 and _artist_hits(artist, box, renderer):
                    what = artist.get_label() if not str(artist.get_label()).startswith("_") else ""
                    found.append(f"{name} covers {type(artist).__name__} {what!r} in axes {i} "
                                 f"({ax.get_title() or 'untitled'})".replace(" ''", ""))
    return found


BOOK_WIDTH_IN = 7.6
"""Width (inches) of the figures drawn here: with the 0.1-inch pad at 100 dpi their PNG stays within the column's
784 px, so the page shows them at their own size and a font of S points comes out at S * 100 / 72 px (9 pt: 12.5)."""
TEXT_PT = 9.0
"""Tick labels, legends, cell labels."""
TITLE_PT = 10.0


def _legend_columns(labels: list[str], width_in: float, fontsize: float = TEXT_PT) -> int:
    """How many legend entries fit side by side in ``width_in``: each takes its longest label (about 0.6 em a
    character) plus its handle and the spacing between columns (about 5 em)."""
    if not labels:
        return 1
    per_entry = (0.6 * max(len(s) for s in labels) + 5) * fontsize / 72
    return max(1, min(len(labels), int(width_in // per_entry)))


def _legend_beside(ax: Axes, **kwargs) -> Legend:
    """A legend to the right of ``ax``, outside its frame and aligned with its top: it covers no data, and a layout
    engine (tight or constrained) makes room for it."""
    kwargs = {"loc": "upper left", "bbox_to_anchor": (1.02, 1), "borderaxespad": 0, "fontsize": TEXT_PT,
              "frameon": False, **kwargs}
    return ax.legend(**kwargs)


def _legend_outside(fig: Figure, handles: list, labels: list[str], where: str = "lower") -> Legend:
    """One legend for the whole figure, under (``where='lower'``) or above its axes, in as many columns as fit; the
    figure's constrained layout reserves its room, so it covers no panel."""
    return fig.legend(handles, labels, loc=f"outside {where} center", ncol=_legend_columns(labels, fig.get_figwidth()),
                      fontsize=TEXT_PT, frameon=False)


def _unique_handles(axes: Iterable[Axes]) -> tuple[list, list[str]]:
    """The legend entries of several axes, each label once (panels of one figure share one legend)."""
    seen: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    return list(seen.values()), list(seen)


def _wrap(text: str, ax: Axes, fontsize: float = TITLE_PT) -> str:
    """``text`` wrapped to the width of ``ax`` (about 0.6 em a character), so a title never runs into a neighbour."""
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    return "\n".join(textwrap.wrap(text, max(18, int(width_in / (0.6 * fontsize / 72))))) if text else ""


def _finish(fig: Figure) -> None:
    """Lay out a figure a chapter made and passed an axes of (tight, as before); leave one with the constrained
    layout (every figure made here) to its engine."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    if not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.tight_layout()


def _progress_label(x: str, window: int) -> str:
    """The x label of a per-step curve: epochs or steps, and the moving average the curves are drawn with."""
    return ("epoch" if x == "epoch" else "step") + (f" ({window}-step mean)" if window > 1 else "")


def score_statistics(runs: Mapping[str, Mapping[str, np.ndarray]], columns=("pos_mean", "neg_mean", "neg_var"),
                     window: int = 10, x: str = "epoch", title: str | None = None,
                     highlight: Sequence[str] | None = None, others: str = "the other runs", row_height: float = 1.35):
    """Fig 3 / Supp A: one panel per statistic, one curve per run, against training progress.

    ``runs`` maps a label to a run's metrics (:meth:`RunDir.load_metrics`).  ``x='epoch'`` uses the
    fractional epoch (step / steps per epoch) so runs of different lengths line up.  The figure is the book
    column's width, with one legend for all panels under them, in as many columns as fit, so no legend covers a
    curve; ``title`` heads the whole figure, above the panels' own titles (the layout keeps them apart).

    ``highlight`` (labels of ``runs``) draws small multiples instead of one tangle of many colours: one row per
    highlighted run, that run in colour over every other run in grey (``others`` names the grey ones in the legend),
    the rows sharing each statistic's axis so they compare at a glance; ``row_height`` inches each.
    """
    import matplotlib.pyplot as plt

    if highlight:
        return _score_statistics_rows(runs, list(highlight), columns, window, x, title, others, row_height)
    labels = list(runs)
    legend_rows = -(-len(labels) // _legend_columns(labels, BOOK_WIDTH_IN)) if labels else 0
    fig, axes = plt.subplots(1, len(columns), figsize=(BOOK_WIDTH_IN, 2.7 + 0.22 * legend_rows), squeeze=False,
                             layout="constrained")
    for label, m in runs.items():
        xs = fractional_epoch(m) if x == "epoch" else m["step"]
        for ax, col in zip(axes[0], columns):
            ax.plot(xs, smooth(m[col], window), label=label, lw=1.4)
    for ax, col in zip(axes[0], columns):
        ax.set_title(STAT_LABELS.get(col, col), fontsize=TITLE_PT)
        ax.set_xlabel(_progress_label(x, window), fontsize=TEXT_PT)
        ax.tick_params(labelsize=TEXT_PT)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        _legend_outside(fig, handles, labels, "lower")
    if title:
        fig.suptitle(title, fontsize=TITLE_PT)
    return fig


GREY = "#c8c8c8"
"""The runs a highlighted figure sets back (:func:`score_statistics`, :func:`grad_norm_epochs`)."""


def _score_statistics_rows(runs, highlight: list[str], columns, window: int, x: str, title: str | None,
                           others: str, row_height: float = 1.35):
    """:func:`score_statistics` as small multiples: a row per highlighted run, the others grey behind it."""
    import matplotlib.pyplot as plt

    rows = [h for h in highlight if h in runs]
    fig, axes = plt.subplots(len(rows), len(columns), figsize=(BOOK_WIDTH_IN, row_height * len(rows) + 1.0), squeeze=False,
                             sharex=True, sharey="col", layout="constrained")
    curves = {label: (fractional_epoch(m) if x == "epoch" else m["step"], {c: smooth(m[c], window) for c in columns})
              for label, m in runs.items()}
    for i, (row, label) in enumerate(zip(axes, rows)):
        for ax, col in zip(row, columns):
            for other, (xs, ys) in curves.items():
                if other != label:
                    ax.plot(xs, ys[col], color=GREY, lw=0.9, label=others)
            xs, ys = curves[label]
            ax.plot(xs, ys[col], color=f"C{i}", lw=1.6)
            ax.tick_params(labelsize=TEXT_PT)
            ax.grid(alpha=0.3)
        row[0].set_ylabel(label, fontsize=TITLE_PT, color=f"C{i}")
    for ax, col in zip(axes[0], columns):
        ax.set_title(STAT_LABELS.get(col, col), fontsize=TITLE_PT)
    for ax in axes[-1]:
        ax.set_xlabel(_progress_label(x, window), fontsize=TEXT_PT)
    grey = [h for h in axes[0][0].lines if h.get_label() == others][:1]
    if grey:
        _legend_outside(fig, grey, [others], "lower")
    if title:
        fig.suptitle(title, fontsize=TITLE_PT)
    return fig


def fractional_epoch(m: Mapping[str, np.ndarray]) -> np.ndarray:
    """Fractional epoch of every step: epoch + position of the step inside its epoch."""
    epoch, step = np.asarray(m["epoch"]), np.asarray(m["step"])
    steps_per_epoch = max(1, int(np.sum(epoch == epoch[0])))
    return step / steps_per_epoch


def score_trajectory_3d(runs: Mapping[str, Mapping[str, np.ndarray]], window: int = 10,
                        highlight: Sequence[str] | None = None, others: str = "the other runs"):
    """Fig 5 style: each run as a curve in (Mean(pos), Mean(neg), Var(neg)) space.  ``highlight`` (labels of
    ``runs``) keeps those in colour and draws the others in grey, named ``others`` in the legend."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(BOOK_WIDTH_IN, 4.6), layout="constrained")
    ax = fig.add_subplot(projection="3d")
    keep = [h for h in (highlight or runs) if h in runs]
    grey = [label for label in runs if label not in keep]
    for label in [*keep, *grey]:  # the legend lists the coloured runs first, the grey ones once after them
        m, coloured = runs[label], label in keep
        ax.plot(smooth(m["pos_mean"], window), smooth(m["neg_mean"], window), smooth(m["neg_var"], window),
                label=label if coloured else (others if label == grey[0] else None), lw=1.5 if coloured else 0.9,
                color=f"C{keep.index(label)}" if coloured else GREY, zorder=3 if coloured else 1)
    ax.set_xlabel("Mean(pos)", fontsize=TEXT_PT)
    ax.set_ylabel("Mean(neg)", fontsize=TEXT_PT)
    ax.set_zlabel("Var(neg)", fontsize=TEXT_PT)
    ax.tick_params(labelsize=TEXT_PT)
    _legend_beside(ax, bbox_to_anchor=(1.12, 0.9))
    return fig


def grad_norm_epochs(per_epoch: Mapping[str, np.ndarray], title: str = "", ylabel: str = "summed gradient L2 norm",
                     cols: int = 3):
    """Supp C's landscape reduced to the slice that carries its reading: each run's per-layer gradient norms
    (:meth:`RunDir.load_grad_norms`' ``per_epoch``) summed over the layers, against the epoch.  Two runs or fewer share
    one panel; more become small multiples, ``cols`` a row, each run in colour over the others in grey, on one
    shared axis (the spikiness the paper reads off a landscape is this curve's epoch-to-epoch swing)."""
    import matplotlib.pyplot as plt

    totals = {name: np.asarray(p, dtype=float).sum(1) for name, p in per_epoch.items()}
    if len(totals) <= 2:
        fig, ax = plt.subplots(figsize=(BOOK_WIDTH_IN, 3.0), layout="constrained")
        for name, t in totals.items():
            ax.plot(np.arange(1, len(t) + 1), t, "-o", ms=3, lw=1.5, label=name)
        ax.set_xlabel("epoch", fontsize=TEXT_PT)
        ax.set_ylabel(ylabel, fontsize=TEXT_PT)
        ax.tick_params(labelsize=TEXT_PT)
        ax.grid(alpha=0.3)
        ax.set_title(title, fontsize=TITLE_PT)
        if len(totals) > 1:
            _legend_beside(ax)
        return fig
    n_rows = -(-len(totals) // cols)
    fig, axes = plt.subplots(n_rows, cols, figsize=(BOOK_WIDTH_IN, 2.0 * n_rows + 0.5), squeeze=False, sharex=True,
                             sharey=True, layout="constrained")
    for i, (ax, name) in enumerate(zip(axes.flat, totals)):
        for other, t in totals.items():
            if other != name:
                ax.plot(np.arange(1, len(t) + 1), t, color=GREY, lw=0.9)
        t = totals[name]
        ax.plot(np.arange(1, len(t) + 1), t, color=f"C{i}", lw=1.6)
        ax.set_title(name, fontsize=TITLE_PT, color=f"C{i}")
        ax.tick_params(labelsize=TEXT_PT)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(totals):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel if n_rows == 1 else "summed norm", fontsize=TEXT_PT)
    for i, ax in enumerate(axes.flat[:len(totals)]):
        if i + cols >= len(totals):  # the lowest panel of its column
            ax.set_xlabel("epoch", fontsize=TEXT_PT)
            ax.xaxis.set_tick_params(labelbottom=True)
    if title:
        fig.suptitle(title, fontsize=TITLE_PT)
    return fig


def grad_heatmap(per_epoch: np.ndarray, layers: Sequence[str], title: str = ""):
    """Supp C's landscape flat: the L2 norm of every layer's gradient (rows, from the input down to the head) in
    every epoch (columns), on a logarithmic colour scale, so each layer reads as a row of colour; ``layers`` are the
    parameter names of :meth:`RunDir.load_grad_norms` (shown without their ``backbone.`` prefix)."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    per_epoch = np.asarray(per_epoch, dtype=float)
    n_epochs, n_layers = per_epoch.shape
    fig, ax = plt.subplots(figsize=(BOOK_WIDTH_IN, 0.17 * n_layers + 1.4), layout="constrained")
    positive = per_epoch[per_epoch > 0]
    norm = LogNorm(vmin=float(positive.min()), vmax=float(positive.max())) if positive.size else None
    im = ax.imshow(per_epoch.T, aspect="auto", cmap="viridis", norm=norm, interpolation="nearest",
                   extent=(0.5, n_epochs + 0.5, n_layers - 0.5, -0.5))
    ax.set_yticks(range(n_layers), [str(name).removeprefix("backbone.") for name in layers], fontsize=TEXT_PT)
    ax.set_xlabel("epoch", fontsize=TEXT_PT)
    ax.tick_params(axis="x", labelsize=TEXT_PT)
    bar = fig.colorbar(im, ax=ax)
    bar.ax.tick_params(labelsize=TEXT_PT)
    bar.set_label("gradient L2 norm", fontsize=TEXT_PT)
    ax.set_title(title, fontsize=TITLE_PT)
    return fig


def grad_landscape(per_epoch: np.ndarray, title: str = "", ax=None):
    """Fig 4 / Supp C: per-layer gradient L2 norm (z) over layers (x) and epochs (y), as a 3-D surface (the run
    explorer's; the chapters draw :func:`grad_heatmap` and :func:`grad_norm_epochs`, which read at page width)."""
    import matplotlib.pyplot as plt

    per_epoch = np.asarray(per_epoch, dtype=float)
    if ax is None:
        fig = plt.figure(figsize=(6, 4.5))
        ax = fig.add_subplot(projection="3d")
    else:
        fig = ax.figure
    n_epochs, n_layers = per_epoch.shape
    xx, yy = np.meshgrid(np.arange(n_layers), np.arange(n_epochs))
    ax.plot_surface(xx, yy, per_epoch, cmap="viridis", linewidth=0, antialiased=True)
    ax.set_xlabel("layer")
    ax.set_ylabel("epoch")
    ax.set_zlabel("grad L2 norm")
    ax.set_title(title)
    return fig


def moco_pipeline():
    """One MoCo step with FT as a block diagram (the paper's Fig 2): two views of an image through the query encoder and
    the momentum key encoder (eq. 2), FT on their outputs and on the queue (eqs. 3 and 5), the logits and InfoNCE
    (eq. 1); the clean keys enter the queue, and the loss's gradient reaches the query encoder only."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(BOOK_WIDTH_IN, 3.3), layout="constrained")
    ax.set_xlim(0, 10.4)
    ax.set_ylim(0, 4.0)
    ax.axis("off")
    for x, y, text, colour in (
            (0.55, 2.0, "image", "0.9"), (2.0, 3.3, "view 1", "0.9"), (2.0, 0.7, "view 2", "0.9"),
            (3.95, 3.3, "query encoder $f_q$", "#cfe2f3"), (3.95, 0.7, "key encoder $f_k$", "#cfe2f3"),
            (6.6, 2.3, "FT\nextrapolate $z_q, z_{k^+}$ (eq. 3)\ninterpolate the queue (eq. 5)", "#f4cccc"),
            (6.6, 0.45, "queue of $K$ keys", "#d9ead3"), (9.25, 2.3, "scores / $\\tau$\nInfoNCE (eq. 1)", "#fff2cc")):
        ax.text(x, y, text, ha="center", va="center", fontsize=TEXT_PT, zorder=3,
                bbox={"boxstyle": "round,pad=0.35", "facecolor": colour, "edgecolor": "0.4"})

    def arrow(start: tuple, end: tuple, label: str = "", at: tuple | None = None, ha: str = "center", ls: str = "-"):
        ax.annotate("", end, start, arrowprops={"arrowstyle": "-|>", "ls": ls, "color": "0.3", "shrinkA": 0,
                                                "shrinkB": 0}, zorder=2)
        if label:
            ax.text(*at, label, ha=ha, va="center", fontsize=TEXT_PT, color="0.2")

    arrow((0.85, 2.25), (1.6, 3.1), "augment", (1.05, 2.85), "right")
    arrow((0.85, 1.75), (1.6, 0.9), "augment", (1.05, 1.15), "right")
    arrow((2.42, 3.3), (3.0, 3.3))
    arrow((2.42, 0.7), (3.05, 0.7))
    arrow((4.9, 3.2), (5.45, 2.75), "$z_q$", (5.3, 3.15), "left")
    arrow((4.85, 0.85), (5.45, 1.85), "$z_{k^+}$,\nno gradient", (5.3, 1.25), "left")
    arrow((3.95, 3.0), (3.95, 1.0), "momentum, eq. 2:\n$\\theta_k \\leftarrow m\\theta_k + (1-m)\\theta_q$",
          (3.8, 2.0), "right", ls="--")
    arrow((4.85, 0.55), (5.75, 0.45), "enqueue the clean keys", (5.3, 0.12))
    arrow((6.6, 0.75), (6.6, 1.7), "negatives", (6.72, 1.22), "left")
    arrow((7.85, 2.3), (8.45, 2.3), "$\\hat S$", (8.15, 2.55))
    ax.text(9.25, 1.55, "gradient to $f_q$ only", ha="center", va="center", fontsize=TEXT_PT, color="0.2")
    return fig


def ft_geometry(lam_ex: float = 1.5, lam_in: float = 0.4, angle_deg: float = 50.0):
    """The two transformations in the plane (the paper's Fig 6): left, positive extrapolation (eq. 3) pushes z_q and
    z_k+ apart along their chord, past the unit circle (``lam_ex`` in [1, 2]); right, negative interpolation (eq. 5)
    puts a new negative on the chord between two queue entries, inside the circle (``lam_in`` in (0, 1))."""
    import matplotlib.pyplot as plt

    from ftcl_core.transforms import extrapolate_positive

    half = np.deg2rad(angle_deg) / 2
    a, b = np.array([np.cos(half), np.sin(half)]), np.array([np.cos(half), -np.sin(half)])  # two unit vectors
    fig, axes = plt.subplots(1, 2, figsize=(BOOK_WIDTH_IN, 3.6), layout="constrained")
    circle = np.linspace(0, 2 * np.pi, 200)
    arrow = {"angles": "xy", "scale_units": "xy", "scale": 1, "width": 0.006}
    for ax in axes:
        ax.plot(np.cos(circle), np.sin(circle), color="0.8", lw=1)
        ax.set_aspect("equal")
        ax.set_xlim(-0.3, 1.9)
        ax.set_ylim(-1.1, 1.1)
        ax.set_xticks([])
        ax.set_yticks([])
    qe, ke = (np.asarray(v) for v in extrapolate_positive(a, b, lam_ex))  # eq. 3
    left = axes[0]
    left.plot(*zip(qe, ke), ":", color="0.5", lw=1)
    left.quiver([0, 0], [0, 0], *zip(a, b), color="C0", **arrow)
    left.quiver([0, 0], [0, 0], *zip(qe, ke), color="C3", **arrow)
    for v, text in ((a, "$z_q$"), (b, "$z_{k^+}$")):
        left.annotate(text, v, xytext=(-14, 6 if v[1] > 0 else -14), textcoords="offset points", color="C0")
    for v, text in ((qe, "$\\hat z_q$"), (ke, "$\\hat z_{k^+}$")):
        left.annotate(text, v, xytext=(4, 4 if v[1] > 0 else -12), textcoords="offset points", color="C3")
    left.set_title(f"positive extrapolation (eq. 3), λ = {lam_ex:g}\nfarther apart, longer than one", fontsize=TITLE_PT)
    mixed = lam_in * a + (1 - lam_in) * b  # eq. 5, one negative and its partner
    right = axes[1]
    right.plot(*zip(a, b), ":", color="0.5", lw=1)
    right.quiver([0, 0], [0, 0], *zip(a, b), color="C0", **arrow)
    right.quiver([0], [0], [mixed[0]], [mixed[1]], color="C2", **arrow)
    for v, text in ((a, "$z_{neg}$"), (b, "$z_{perm}$")):
        right.annotate(text, v, xytext=(4, 4 if v[1] > 0 else -12), textcoords="offset points", color="C0")
    right.annotate("$\\hat z_{neg}$", mixed, xytext=(4, 4), textcoords="offset points", color="C2")
    right.set_title(f"negative interpolation (eq. 5), λ = {lam_in:g}\nbetween two negatives, shorter than one",
                    fontsize=TITLE_PT)
    return fig


def score_bound(s: np.ndarray | None = None, near: tuple[float, float] = (0.5, 1.0)):
    """eq. 4: transformed positive score S' against S for several lambda, with the range [-4+5S, S] for lambda in
    [1, 2]; left over all of S in [-1, 1], right over ``near`` (where a trained encoder's positive pairs lie)."""
    import matplotlib.pyplot as plt

    s = np.linspace(-1, 1, 201) if s is None else s
    fig, axes = plt.subplots(1, 2, figsize=(BOOK_WIDTH_IN, 3.6), layout="constrained", width_ratios=(1, 1))
    for ax, grid in zip(axes, (s, np.linspace(*near, 101))):
        lo, hi = score_range(grid)
        ax.fill_between(grid, lo, hi, alpha=0.15, label="range for λ in [1, 2]")
        for lam in (0.5, 1.0, 1.25, 1.5, 1.75, 2.0):
            style = "--" if lam < 1 else "-"
            ax.plot(grid, transformed_positive_score(grid, lam), style, label=f"λ = {lam}")
        ax.set_xlabel("S = z_q · z_k", fontsize=TEXT_PT)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Ŝ after FT", fontsize=TEXT_PT)
    axes[0].set_title("all of S", fontsize=TITLE_PT)
    axes[1].set_title(f"S from {near[0]:g} to {near[1]:g}", fontsize=TITLE_PT)
    _legend_beside(axes[1])  # beside the axes: inside, it sat on the shaded range
    return fig


def experiment_bars(exp, summary: Mapping[str, Mapping[str, float]], ax=None, legend: bool = True):
    """:func:`accuracy_bars` of an experiment's summary (:func:`ftcl_core.study.table_verdicts.summarize`); ``legend=False``
    leaves the key to the caller (:func:`experiment_grid` draws one for all its panels)."""
    if not summary:  # a table switched to a new recipe before its first run landed: an empty, labelled panel
        import matplotlib.pyplot as plt

        ax = ax if ax is not None else plt.subplots(figsize=(4, 3.4), layout="constrained")[1]
        ax.text(0.5, 0.5, "no stored run yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(_wrap(exp.title, ax), fontsize=TITLE_PT)
        ax.set_xticks([])
        ax.set_yticks([])
        return ax.figure
    pixels = [v.get("raw_pixels_mean", np.nan) for v in summary.values()]
    return accuracy_bars(list(summary), [v["mean"] for v in summary.values()],
                         [0 if np.isnan(v["ci95"]) else v["ci95"] for v in summary.values()],
                         baseline=float(np.mean([v["random_init_mean"] for v in summary.values()])),
                         paper=[exp.paper_number(k) for k in summary], title=exp.title, ax=ax,
                         paper_collapse=[exp.paper.get(k) == "collapse" for k in summary],
                         pixels=None if np.all(np.isnan(pixels)) else float(np.nanmean(pixels)),
                         paper_label="paper (ImageNet-1K)" if "IN-1K" in exp.title else "paper (ImageNet-100)",
                         legend=legend)


def experiment_grid(panels: list[tuple[experiment_file.Experiment, Mapping[str, Mapping[str, float]]]], cols: int = 2,
                    titles: list[str] | None = None) -> Figure:
    """Several experiments' :func:`experiment_bars` in one figure the book column's width, ``cols`` panels a row,
    with one legend for every panel above them (the panels share their entries): the chapters' grids of tables
    (chapters 6 and 10).  ``panels`` holds ``(Experiment, summary)`` pairs; ``titles`` replaces the experiments'
    titles (shorter ones read better in a narrow panel)."""
    import matplotlib.pyplot as plt

    n_rows = max(1, -(-len(panels) // cols))
    fig, axes = plt.subplots(n_rows, cols, figsize=(BOOK_WIDTH_IN, 3.4 * n_rows + 0.4), squeeze=False,
                             layout="constrained")
    for i, (ax, (exp, summary)) in enumerate(zip(axes.flat, panels)):
        experiment_bars(exp, summary, ax=ax, legend=False)
        if titles is not None:
            ax.set_title(_wrap(titles[i], ax), fontsize=TITLE_PT)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    handles, labels = _bars_first(*_unique_handles(fig.axes))  # the panels and their paper axes
    papers = [i for i, label in enumerate(labels) if label.startswith("paper (")]
    if len(papers) > 1:  # one diamond for all: "paper (ImageNet-100, ImageNet-1K)"
        merged = "paper (" + ", ".join(labels[i][len("paper ("):-1] for i in papers) + ")"
        handles = [h for i, h in enumerate(handles) if i not in papers[1:]]
        labels = [merged if i == papers[0] else s for i, s in enumerate(labels) if i not in papers[1:]]
    if handles:
        _legend_outside(fig, handles, labels, "upper")
    return fig


def _bars_first(handles: list, labels: list[str]) -> tuple[list, list[str]]:
    """:func:`accuracy_bars`' legend entries in reading order: the bars, the reference lines, the paper's marks."""
    rank = {"ours (linear top-1)": 0, "random-init encoder": 1, "raw pixels (linear)": 2}
    order = sorted(range(len(labels)), key=lambda i: (rank.get(labels[i], 3), i))
    return [handles[i] for i in order], [labels[i] for i in order]


def _zoomed(values: Iterable[float], lo: float = 0.0, hi: float = 100.0, pad: float = 0.08, least: float = 2.0):
    """Axis limits around the finite ``values``: their range widened by ``pad`` of itself (at least ``least``) each
    side, kept inside ``[lo, hi]``."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if not v.size:
        return lo, hi
    margin = max(least, pad * float(v.max() - v.min()))
    return max(lo, float(v.min()) - margin), min(hi, float(v.max()) + margin)


def accuracy_bars(labels: list[str], means: list[float], ci95: list[float], baseline: float | None = None,
                  paper: list[float] | None = None, title: str = "", ax=None, pixels: float | None = None,
                  paper_label: str = "paper (ImageNet-100)", legend: bool = True,
                  paper_collapse: Sequence[bool] | None = None):
    """Readout accuracy per setting: our mean ± 95 % CI as a point with its interval, the random-init encoder (and
    the raw pixels' linear probe, where given) as reference lines, on an axis zoomed to them (readouts that sit
    within a few points of each other stay apart; points, not bars, since the axis does not start at zero).  The
    paper's numbers, when given, are diamonds on an axis of their own at the right, zoomed to them likewise
    (ImageNet-100 against the embedded data: compare the pattern across settings, not the levels). A setting the paper
    reports as collapsed (``paper_collapse``: True; no number) is a cross at the foot of the paper's axis.

    The legend never sits in the frame: under the axes in a figure of its own, beside the axes in a caller's
    (``ax``), none with ``legend=False``."""
    import matplotlib.pyplot as plt

    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(min(BOOK_WIDTH_IN, max(5.0, 0.45 * len(labels) + 3.0)), 3.9),
                               layout="constrained")
    fig = ax.figure
    xs = np.arange(len(labels))
    means, ci95 = np.asarray(means, dtype=float), np.nan_to_num(np.asarray(ci95, dtype=float))
    ax.errorbar(xs, means, yerr=ci95, fmt="o", ms=6, capsize=3, lw=1.4, color="#4c72b0", label="ours (linear top-1)")
    refs = []
    if baseline is not None:
        ax.axhline(baseline, color="crimson", ls="--", lw=1, label="random-init encoder")
        refs.append(baseline)
    if pixels is not None:  # real images: the encoder must beat a linear probe on the pixels themselves
        ax.axhline(pixels, color="dimgray", ls=":", lw=1.2, label="raw pixels (linear)")
        refs.append(pixels)
    ax.set_xticks(xs, labels, rotation=30, ha="right")
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.tick_params(labelsize=TEXT_PT)
    ax.set_ylabel("linear top-1 (%)", fontsize=TEXT_PT)
    ax.set_ylim(*_zoomed([*(means - ci95), *(means + ci95), *refs]))  # a wide interval is cut at 0 or 100
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(_wrap(title, ax), fontsize=TITLE_PT)
    handles, names = ax.get_legend_handles_labels()
    marks = np.asarray(paper if paper is not None else [], dtype=float)
    if np.isfinite(marks).any():
        pax = ax.twinx()
        pax.plot(xs, marks, "D", color="darkorange", label=paper_label)
        pax.set_ylim(*_zoomed(marks))
        fell = [x for x, c in zip(xs, paper_collapse or []) if c]
        if fell:  # no number in the paper, only "collapse": a cross at the bottom of its axis
            foot = pax.get_ylim()[0]
            pax.plot(fell, [foot] * len(fell), "X", color="darkorange", ms=8, clip_on=False,
                     label="paper: collapse (no number)")
        pax.tick_params(axis="y", labelsize=TEXT_PT, colors="darkorange")
        pax.set_ylabel("paper top-1 (%)", fontsize=TEXT_PT, color="darkorange")
        more = pax.get_legend_handles_labels()
        handles, names = handles + more[0], names + more[1]
    if legend and own:
        _legend_outside(fig, *_bars_first(handles, names), "lower")
    elif legend:
        _legend_beside(ax, handles=handles, labels=names, bbox_to_anchor=(1.2 if len(fig.axes) > 1 else 1.02, 1))
    _finish(fig)
    return fig


def readout_by_length(steps: list[int], arms: Mapping[str, list[list[float]]], random_init: float | None = None,
                      ylabel: str = "linear top-1 (%)", title: str = "", ax=None):
    """Readout against training steps, one line per arm (its mean over seeds) with every seed as a dot:
    ``arms[name][i]`` holds the per-seed readouts at ``steps[i]`` (empty where that length was not run).  The
    legend sits beside the axes: inside, wherever it went, a seed's dot or the random-init line ran under it."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(6.6, 3.6), layout="constrained")
    fig = ax.figure
    for (name, per_step), color in zip(arms.items(), ("#4c72b0", "#dd8452", "#55a868", "#c44e52")):
        xs = [x for x, v in zip(steps, per_step) if len(v)]
        ax.plot(xs, [np.mean(v) for v in per_step if len(v)], "-o", color=color, label=name)
        for x, v in zip(steps, per_step):
            ax.plot([x] * len(v), v, ".", color=color, alpha=0.5, ms=7)
    if random_init is not None:
        ax.axhline(random_init, color="crimson", ls="--", lw=1, label="random-init encoder")
    ax.set_xscale("log")
    run = [x for i, x in enumerate(steps) if any(len(per[i]) for per in arms.values())]
    ax.set_xticks(run, [f"{s:,}" for s in run])
    ax.minorticks_off()
    ax.set_xlabel("training steps (log scale)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 100)
    ax.set_title(_wrap(title, ax), fontsize=TITLE_PT)
    _legend_beside(ax)
    _finish(fig)
    return fig


VERDICT_COLORS = {  # one colour per verdict word of ftcl_core.study.results.claims (greens: the paper's side)
    "matches the paper": "#2ca02c", "larger than the paper": "#006d2c", "smaller than the paper": "#98df8a",
    "no effect of the paper's size": "#ff9896", "opposite to the paper": "#d62728", "equivalent": "#1f77b4",
    "not equivalent": "#9467bd", "undecided": "#c7c7c7"}
# and one marker, so that a reader who cannot tell red from green still can: circles where a claim reaches the
# paper's side (a diamond where it goes beyond the paper's size), squares where it goes the other way or falls
# short of its size, hollow for the weaker of each pair
VERDICT_MARKERS = {"matches the paper": ("o", True), "larger than the paper": ("D", True),
                   "smaller than the paper": ("o", False), "opposite to the paper": ("s", True),
                   "no effect of the paper's size": ("s", False), "equivalent": ("v", True),
                   "not equivalent": ("P", True), "undecided": ("p", False)}  # verdict -> (marker, filled)


def verdict_style(verdict: str) -> dict:
    """Matplotlib marker keywords for ``verdict`` (:data:`VERDICT_COLORS`, :data:`VERDICT_MARKERS`)."""
    marker, filled = VERDICT_MARKERS[verdict]
    colour = VERDICT_COLORS[verdict]
    return {"marker": marker, "color": colour, "markerfacecolor": colour if filled else "white",
            "markeredgecolor": colour}


def _forest_claims(rows: list[Mapping[str, str]], tables: set[str] | None = None) -> list[Mapping[str, str]]:
    """The rows of ``results/summary.csv`` that are claims (a difference against a reference), of ``tables`` only
    when given."""
    return [r for r in rows if r["verdict"] != "baseline" and r["diff_mean"] not in ("", None)
            and (tables is None or r["table"] in tables)]


def verdict_forest(rows: list[Mapping[str, str]], ax=None, table: str | Collection[str] | None = None) -> Figure:
    """The claims of ``results/summary.csv`` at a glance: the paired difference against its reference
    (mean ± 95 % CI over seeds, coloured by verdict), and the paper's difference between the same two
    settings as an orange diamond (ImageNet-100 points, so only its sign and rough size compare).  Table 1's
    claims are against the random-init encoder, for which the paper gives no number.

    ``table`` (a table's name, or several) draws only those tables' claims, so a figure stays under a screen tall
    (:func:`verdict_forests` draws every table that way); without it, every claim in one figure, as before.  The
    legend names the verdicts drawn and sits above the rows (beside the axes when the caller gives ``ax``)."""
    import matplotlib.pyplot as plt

    def num(v) -> float:  # "" (no number) and "collapse" (Table 1) are not numbers
        try:
            return float(v)
        except (TypeError, ValueError):
            return np.nan

    tables = None if table is None else ({table} if isinstance(table, str) else set(table))
    claims = _forest_claims(rows, tables)
    unknown = sorted({r["verdict"] for r in claims} - set(VERDICT_COLORS))
    if unknown:  # a new verdict word of results.claims: give it a colour rather than drop its claims
        raise KeyError(f"verdict(s) without a colour in VERDICT_COLORS: {unknown}")
    paper = {(r["table"], r["setting"]): num(r["paper"]) for r in rows}
    own = ax is None
    if own:
        _, ax = plt.subplots(figsize=(BOOK_WIDTH_IN, 0.24 * len(claims) + 1.7), layout="constrained")
    ys = np.arange(len(claims))[::-1]
    means = np.array([num(r["diff_mean"]) for r in claims], dtype=float)
    cis = np.nan_to_num(np.array([num(r["diff_ci95"]) for r in claims], dtype=float))
    for verdict in VERDICT_COLORS:  # one errorbar call per verdict: a 90-claim forest draws fast
        pick = np.array([r["verdict"] == verdict for r in claims], dtype=bool)
        if pick.any():
            ax.errorbar(means[pick], ys[pick], xerr=cis[pick], ls="", ms=5, capsize=2, **verdict_style(verdict))
    claimed = np.array([paper[(r["table"], r["setting"])] - paper.get((r["table"], r["reference"]), np.nan)
                        for r in claims], dtype=float)
    diamonds = bool(np.isfinite(claimed).any())
    if diamonds:
        ax.plot(claimed[np.isfinite(claimed)], ys[np.isfinite(claimed)], "D", ls="", ms=5, color="darkorange")
    ax.axvline(0, color="black", lw=0.8)
    one_table = len({r["table"] for r in claims}) == 1
    ax.set_yticks(ys, [(f"{r['setting']}" if one_table else f"{r['table']} {r['setting']}") + f"  (vs {r['reference']})"
                       for r in claims], fontsize=TEXT_PT)
    ax.set_ylim(-0.7, len(claims) - 0.3)
    ax.tick_params(axis="x", labelsize=TEXT_PT)
    ax.set_xlabel("difference in linear top-1 (points)", fontsize=TEXT_PT)
    if tables is not None:
        ax.set_title(", ".join(t for t in dict.fromkeys(r["table"] for r in rows) if t in tables), fontsize=TITLE_PT)
    drawn = [v for v in VERDICT_COLORS if any(r["verdict"] == v for r in claims)]
    handles = [plt.Line2D([], [], ls="", label=v, **verdict_style(v)) for v in drawn]
    if diamonds:
        handles.append(plt.Line2D([], [], marker="D", ls="", color="darkorange", label="paper (ImageNet scale)"))
    if handles and own:
        _legend_outside(ax.figure, handles, [h.get_label() for h in handles], "upper")
    elif handles:
        _legend_beside(ax, handles=handles)
    _finish(ax.figure)
    return ax.figure


def comparison_forest(rows: list[Mapping], title: str = "", xlabel: str = "FT minus its baseline (points)") -> Figure:
    """:func:`ftcl_core.study.diagnosis.paired_comparison` rows at a glance, one line each: the paired difference
    (mean ± 95 % interval over seeds), marked by its verdict as :func:`verdict_forest` marks a claim; a row with no
    paired seed is left out (the open questions page lists it)."""
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["n_seeds"] and r["verdict"] in VERDICT_COLORS]
    fig, ax = plt.subplots(figsize=(BOOK_WIDTH_IN, 0.3 * len(rows) + 1.5), layout="constrained")
    ys = np.arange(len(rows))[::-1]
    for y, r in zip(ys, rows):
        ax.errorbar(r["diff"], y, xerr=np.nan_to_num(r["ci95"]), ls="", ms=6, capsize=2, **verdict_style(r["verdict"]))
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(ys, [f"{r['comparison']}  ({r['n_seeds']} seeds)" for r in rows], fontsize=TEXT_PT)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.tick_params(axis="x", labelsize=TEXT_PT)
    ax.set_xlabel(xlabel, fontsize=TEXT_PT)
    if title:
        ax.set_title(_wrap(title, ax), fontsize=TITLE_PT)
    drawn = list(dict.fromkeys(r["verdict"] for r in rows))
    handles = [plt.Line2D([], [], ls="", label=v, **verdict_style(v)) for v in drawn]
    if handles:
        _legend_outside(fig, handles, drawn, "lower")
    _finish(fig)
    return fig


def forest_groups(rows: list[Mapping[str, str]], max_claims: int = 20) -> list[list[str]]:
    """The tables of ``results/summary.csv`` in their order, packed into groups of at most ``max_claims`` claims
    (a table with more stays whole, alone), each group on one data set (so that Fashion-MNIST's differences of a
    point or two are not drawn on an axis the shapes' -50 stretches): one :func:`verdict_forest` figure each, about
    600 px tall at most."""
    counts: dict[str, int] = {}
    data: dict[str, str] = {}
    for r in _forest_claims(rows):
        counts[r["table"]] = counts.get(r["table"], 0) + 1
        data.setdefault(r["table"], r.get("data", ""))
    groups: list[list[str]] = []
    size = 0
    for t, n in counts.items():
        if groups and size + n <= max_claims and data[t] == data[groups[-1][0]]:
            groups[-1].append(t)
            size += n
        else:
            groups.append([t])
            size = n
    return groups


def verdict_forests(rows: list[Mapping[str, str]], max_claims: int = 20) -> list[Figure]:
    """Every claim of ``results/summary.csv`` as :func:`verdict_forest` figures of a few tables each
    (:func:`forest_groups`), none taller than a screen; in a notebook, ``plt.show()`` after it shows them in order."""
    return [verdict_forest(rows, table=group) for group in forest_groups(rows, max_claims)]


def plain_number(v: float) -> str:
    """A colour-bar or axis label as a reader writes it: 0, +1, −10, +0.5 (no powers of ten, a true minus)."""
    return "0" if v == 0 else f"{v:+g}".replace("-", "\N{MINUS SIGN}")


def symlog_ticks(norm: SymLogNorm, candidates: tuple[float, ...] = (1, 10, 100, 40, 3, 30, 2, 20, 5, 50, 0.5),
                 min_gap: float = 0.08) -> list[float]:
    """Round ticks for a colour bar on a symmetric-log ``norm``: zero, then each of ``candidates`` (and its
    negative) inside the norm's range, in that order of preference, kept where it lies at least ``min_gap`` of the
    bar's length from every tick kept (so no two labels collide where the scale compresses)."""
    kept = [0.0]
    for c in candidates:
        for v in (c, -c):
            if abs(v) <= norm.vmax and all(abs(float(norm(v)) - float(norm(k))) >= min_gap for k in kept):
                kept.append(float(v))
    return sorted(kept)


def difference_grid(rows: list[str], cols: list[str], diff: np.ndarray, ci: np.ndarray, verdicts: list[list[str]],
                    title: str = "", ax=None):
    """A phase diagram over two factors: each cell the FT-minus-baseline difference (points), coloured on a
    diverging symmetric-log scale centred at zero, annotated with its 95 % interval and verdict; empty cells: not run.

    Drawn for the book's column: cell labels at 9 pt (12.5 px on the page; a long verdict wraps inside its cell),
    row and column names wrapped, and the colour bar ticked at round points written plainly (−40, −10, −3, −1,
    0, +1, ...: a symmetric-log bar otherwise reads −10⁰, 10¹)."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import SymLogNorm
    from matplotlib.ticker import FixedLocator, FuncFormatter

    diff, ci = np.asarray(diff, dtype=float), np.asarray(ci, dtype=float)
    if ax is None:
        _, ax = plt.subplots(figsize=(min(BOOK_WIDTH_IN, 1.25 * len(cols) + 2.9), 0.72 * len(rows) + 1.6),
                             layout="constrained")
    bound = max(1.0, float(np.nanmax(np.abs(diff)))) if np.isfinite(diff).any() else 1.0
    # linear within +-1 point, logarithmic beyond: a 1-point effect stays visible beside a 40-point collapse
    norm = SymLogNorm(linthresh=1.0, vmin=-bound, vmax=bound, base=10)
    im = ax.imshow(np.ma.masked_invalid(diff), cmap="RdBu", norm=norm, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(cols)):
            if np.isnan(diff[i, j]):
                ax.text(j, i, "not run", ha="center", va="center", fontsize=TEXT_PT, color="gray")
                continue
            band = "" if np.isnan(ci[i, j]) else f" ± {ci[i, j]:.1f}"
            ink = "white" if abs(norm(diff[i, j]) - 0.5) > 0.3 else "black"  # legible on the dark ends of the scale
            verdict = textwrap.fill(verdicts[i][j], 14)
            ax.text(j, i, f"{diff[i, j]:+.1f}{band}\n{verdict}", ha="center", va="center", fontsize=TEXT_PT,
                    color=ink)
    ax.set_xticks(range(len(cols)), [textwrap.fill(c, 12) for c in cols], fontsize=TEXT_PT)
    ax.set_yticks(range(len(rows)), [textwrap.fill(r, 24) for r in rows], fontsize=TEXT_PT)
    bar = ax.figure.colorbar(im, ax=ax)
    bar.minorticks_off()
    bar_in = ax.get_position().height * ax.figure.get_figheight()  # labels a quarter inch apart at least
    bar.ax.yaxis.set_major_locator(FixedLocator(symlog_ticks(norm, min_gap=max(0.08, 0.25 / bar_in))))
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: plain_number(v)))
    bar.ax.tick_params(labelsize=TEXT_PT)
    bar.set_label("FT minus baseline (points)", fontsize=TEXT_PT)
    ax.set_title(_wrap(title, ax), fontsize=TITLE_PT)
    _finish(ax.figure)
    return ax.figure


def contraction_figure(rhos: np.ndarray, rates: Mapping[float, np.ndarray], thresholds: Mapping[float, float]):
    """Chapter 7's test of the attraction threshold: per λ, the relative change of a concentrated state's spread after
    one SGD step (:func:`ftcl_core.study.diagnosis.contraction_rate`) against ρ, with the predicted threshold
    ``1 - λ/A`` dotted (below zero the state contracts)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(BOOK_WIDTH_IN, 3.6), layout="constrained")
    for (lam, rate), color in zip(rates.items(), plt.cm.viridis(np.linspace(0, 0.9, len(rates)))):
        ax.plot(rhos, rate, color=color, label=f"λ = {lam:g}" + (" (no FT)" if lam == 1 else ""))
        ax.axvline(thresholds[lam], color=color, ls=":", lw=1)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("ρ: correlation of the two views' deviations", fontsize=TEXT_PT)
    ax.set_ylabel("relative change of the spread\nafter one step", fontsize=TEXT_PT)
    ax.set_title("Concentrated states contract left of the threshold", fontsize=TITLE_PT)
    ax.tick_params(labelsize=TEXT_PT)
    _legend_beside(ax)
    return fig


def early_training(runs: Mapping[str, Mapping[str, np.ndarray]], band: tuple[float, float], steps: int = 400,
                   window: int = 5):
    """ρ and Mean(neg) of the raw cosines over the first ``steps`` steps of each run (baselines solid, the others
    dashed), with the band of attraction thresholds ``1 - λ/A`` shaded: where training sits against the algebra."""
    import matplotlib.pyplot as plt

    steps = min([steps, *(len(m["rho"]) for m in runs.values())])
    fig, axes = plt.subplots(1, 2, figsize=(BOOK_WIDTH_IN, 3.4), layout="constrained")
    for name, m in runs.items():
        for ax, column in zip(axes, ("rho", "neg_mean")):
            ax.plot(m["step"][:steps], smooth(m[column][:steps], window), "-" if "baseline" in name else "--", label=name)
    axes[0].axhspan(*sorted(band), color="orange", alpha=0.2, label="threshold 1 - λ/A (FT)")
    axes[0].axhline(0, color="black", lw=0.8)
    for ax, label in zip(axes, ("ρ (views' deviation correlation)", "Mean(neg), raw cosines")):
        ax.set_xlabel("step", fontsize=TEXT_PT)
        ax.set_ylabel(label, fontsize=TEXT_PT)
        ax.tick_params(labelsize=TEXT_PT)
    _legend_outside(fig, *axes[0].get_legend_handles_labels())
    return fig


# ---------------------------------------------------------------------------------------------------
# Explorers that respond in the static HTML (plotly sliders over precomputed data, no kernel needed)
# and their ipywidgets counterparts for a live kernel.
# ---------------------------------------------------------------------------------------------------


def capacity_figure(rows: list[Mapping], readout: str = "linear top-1"):
    """Is it the network? (:func:`ftcl_core.study.diagnosis.capacity_rows`): left, each encoder's readout for the baseline
    and for FT from the first step (seed mean, 95 % interval) against its parameters; right, each arm's final
    effective rank of the features. Encoders without stored runs are named on the axis but left empty.  The book
    column's width, one legend for both panels under them."""
    import matplotlib.pyplot as plt

    fig, (ax, axr) = plt.subplots(1, 2, figsize=(BOOK_WIDTH_IN, 3.9), layout="constrained")
    x = np.array([r["parameters"] for r in rows], float)
    for arm, label, colour in (("baseline", "baseline", "tab:blue"), ("ft", "FT from the first step", "tab:red")):
        mean = np.array([r[arm] for r in rows], float)
        ci = np.nan_to_num(np.array([r[f"{arm}_ci95"] for r in rows], float))
        ax.errorbar(x, mean, yerr=ci, marker="o", capsize=3, color=colour, label=label)
        axr.plot(x, [r[f"{arm}_erank"] for r in rows], marker="o", color=colour, label=label)
    for a in (ax, axr):
        a.set_xscale("log")
        # three short lines: the two middle encoders sit 0.6 inch apart on the log axis
        a.set_xticks(x, [f"{r['comparison'].replace('_', chr(10))}\n{r['parameters'] / 1e6:.1f} M" for r in rows],
                     fontsize=TEXT_PT - 0.4)
        a.minorticks_off()
        a.tick_params(axis="y", labelsize=TEXT_PT)
    ax.set_ylabel(f"{readout} (%)", fontsize=TEXT_PT)
    axr.set_ylabel("final effective rank\nof the features", fontsize=TEXT_PT)
    _legend_outside(fig, *ax.get_legend_handles_labels(), "lower")
    ax.set_title("readout against the\nencoder's parameters", fontsize=TITLE_PT)
    axr.set_title("how many directions\nthe features keep", fontsize=TITLE_PT)
    return fig


def predictor_figure(report: Mapping, features: tuple[str, ...] | None = None):
    """The FT-outcome predictor (``results/predictor.json``, :func:`ftcl_core.study.predict.write_report`): above, each
    stored FT run's held-out P(loses) against its paired difference, one colour per data set (the legend beside the
    axes); below, the weights of the model fitted on every run (standardised features: how much one standard
    deviation moves the log-odds).  One above the other, each the book column's width, so the feature names and
    the titles keep a readable size."""
    import matplotlib.pyplot as plt

    ex = report["examples"]
    names = list(features or report["features"])
    fig = plt.figure(figsize=(BOOK_WIDTH_IN, 3.4 + 0.28 * len(names) + 1.0), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[3.4, 0.28 * len(names) + 1.0])  # each panel its own width
    ax, axw = top.subplots(), bottom.subplots()
    for data, colour in (("shapes", "tab:blue"), ("fashion_mnist", "tab:orange")):
        pts = [(e["diff"], e["p_loss_held_out"]) for e in ex
               if e["data"] == data and np.isfinite(e["p_loss_held_out"])]
        if pts:
            d, p = zip(*pts)
            label = {"shapes": "shapes", "fashion_mnist": "Fashion-MNIST"}[data]
            ax.scatter(d, p, s=14, alpha=0.7, color=colour, label=label)
    ax.axvline(0, color="grey", lw=0.8)
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("paired difference, FT minus baseline (linear top-1 points)", fontsize=TEXT_PT)
    ax.set_ylabel("held-out P(FT loses)", fontsize=TEXT_PT)
    ax.tick_params(labelsize=TEXT_PT)
    if ax.get_legend_handles_labels()[0]:
        _legend_beside(ax)
    ax.set_title("each run predicted by a model that never saw its experiment", fontsize=TITLE_PT)
    weights = report["model"]["sign_weights"][1:] if report.get("model") else [0.0] * len(names)
    axw.barh(range(len(names)), weights, color=["tab:red" if w > 0 else "tab:green" for w in weights])
    axw.set_yticks(range(len(names)), names, fontsize=TEXT_PT)
    axw.tick_params(axis="x", labelsize=TEXT_PT)
    axw.axvline(0, color="grey", lw=0.8)
    axw.invert_yaxis()
    axw.set_xlabel("weight on the log-odds of losing (per s.d.)", fontsize=TEXT_PT)
    axw.set_title("the model fitted on every run", fontsize=TITLE_PT)
    return fig
