"""Whether a figure reads in the book: its width in the column, its smallest text, a legend over the data; and the
shared style every figure uses (the column's width in inches, the text sizes, legends beside or below, titles wrapped)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only: matplotlib loads when a figure is drawn
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend
    from matplotlib.path import Path
    from matplotlib.transforms import Bbox


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
