"""Figures of one run's course, drawn from its run folder (:class:`ftcl_core.runs.RunDir`): the score statistics (Fig 3,
Supp A), their 3-D trajectory, the gradient landscapes (Fig 4, Supp C), early training and the contraction rates.
Nothing here trains or computes results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ftcl_core.study.curves import smooth  # the moving average the figures and their facts (chapter 4) share

if TYPE_CHECKING:  # annotations only: matplotlib loads when a figure is drawn
    pass
from ftcl_core.pages.legibility import BOOK_WIDTH_IN, TEXT_PT, TITLE_PT, _legend_beside, _legend_columns, _legend_outside

STAT_LABELS = {
    "pos_mean": "Mean(pos), raw", "neg_mean": "Mean(neg), raw", "neg_var": "Var(neg), raw",
    "ft_pos_mean": "Mean(pos) after FT", "ft_neg_mean": "Mean(neg) after FT", "ft_neg_var": "Var(neg) after FT",
    "top1": "contrastive top-1, %",
}


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


def whole_run(m: Mapping[str, np.ndarray], marks: Mapping[str, Sequence[tuple[float, float, str]]],
              columns=("pos_mean", "neg_mean", "neg_var", "top1"), zoom: float = 2.0, window: int = 10):
    """One run's score statistics over the whole run (top row, ``window``-step means) and over its first ``zoom``
    epochs, step by step (bottom row), where the queue fills and the curves move fastest. ``marks`` (per column,
    ``(epoch, value, text)``: :func:`ftcl_core.study.curves.curve_marks`) are the numbers the prose quotes, drawn as
    dots with their text, in the row whose span holds them."""
    import matplotlib.pyplot as plt

    xs = fractional_epoch(m)
    fig, axes = plt.subplots(2, len(columns), figsize=(BOOK_WIDTH_IN, 4.2), squeeze=False, layout="constrained")
    for axs, early in zip(axes, (False, True)):
        keep = xs <= zoom if early else np.ones_like(xs, dtype=bool)
        for ax, col in zip(axs, columns):
            ax.plot(xs[keep], smooth(m[col], 1 if early else window)[keep], lw=1.0 if early else 1.4, color="C0")
            for x, y, text in marks.get(col, ()):
                if (x <= zoom) == early:
                    ax.plot([x], [y], "o", color="C3", ms=4, zorder=3)
                    right = x > 0.75 * (zoom if early else xs[-1])  # a label near the right edge reads leftwards
                    ax.annotate(text, (x, y), textcoords="offset points", xytext=(-4 if right else 4, 4),
                                ha="right" if right else "left", fontsize=TEXT_PT - 1, color="C3", zorder=4,
                                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85})
                    # the white box keeps a label legible where it falls across the curve
            ax.set_title(STAT_LABELS.get(col, col) if not early else f"first {zoom:g} epochs", fontsize=TITLE_PT)
            ax.set_xlabel(_progress_label("epoch", 1 if early else window), fontsize=TEXT_PT - 1)
            ax.tick_params(labelsize=TEXT_PT)
            ax.grid(alpha=0.3)
            ax.margins(y=0.14)  # room for a label above the highest dot
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
                     cols: int = 3, colours: Mapping[str, str] | None = None, jumps: Mapping[str, float] | None = None):
    """Supp C's landscape reduced to the slice that carries its reading: each run's per-layer gradient norms
    (:meth:`RunDir.load_grad_norms`' ``per_epoch``) summed over the layers, against the epoch.  Two runs or fewer share
    one panel; more become small multiples, ``cols`` a row, each run in colour over the others in grey, on one
    shared axis (the spikiness the paper reads off a landscape is this curve's epoch-to-epoch swing).  ``colours``
    (name -> colour) keeps a run's colour of another figure; a run it does not name takes its place's. ``jumps``
    (name -> number), written in each small multiple's title: how far its line jumps from epoch to epoch."""
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
        t, colour = totals[name], (colours or {}).get(name, f"C{i}")
        ax.plot(np.arange(1, len(t) + 1), t, color=colour, lw=1.6)
        jump = f", jumps {jumps[name]:.2f}" if jumps is not None and name in jumps else ""
        ax.set_title(f"{name}{jump}", fontsize=TITLE_PT, color=colour)
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


_LAYER_PARTS = (  # the library's SmallResNet and MoCo heads: (parameter-name pattern, row label, group)
    (r"stem\.0", "stem conv", "stem"), (r"stem\.1", "stem BN", "stem"),
    (r"layers\.(\d+)\.conv(\d)", "block {b} conv {1}", "block {b}"),
    (r"layers\.(\d+)\.bn(\d)", "block {b} BN {1}", "block {b}"),
    (r"layers\.(\d+)\.shortcut\.0", "block {b} shortcut conv", "block {b}"),
    (r"layers\.(\d+)\.shortcut\.1", "block {b} shortcut BN", "block {b}"),
    (r"head", "head linear", "head"), (r"head\.(\d+)", "head linear {h}", "head"))


def layer_label(name: str) -> tuple[str, str]:
    """A gradient-landscape row as a reader names it, and its group: ``layers.2.bn1`` of the library's
    :class:`~ftcl_core.models.SmallResNet` is ("block 3 BN 1", "block 3"), ``stem.1`` ("stem BN", "stem"), ``head.2``
    (the second linear layer of an MLP head: "head linear 2", "head"); a name of another encoder is kept as it is,
    in a group of its own."""
    import re

    bare = str(name).removeprefix("backbone.")
    for pattern, label, group in _LAYER_PARTS:
        if m := re.fullmatch(pattern, bare):
            first = int(m.group(1)) if m.groups() else 0
            keys = {"b": first + 1, "h": first // 2 + 1}  # blocks count from 1; a head's linears sit at 0, 2, ...
            return label.format(*m.groups(), **keys), group.format(**keys)
    return bare, bare


def grad_heatmap(per_epoch: np.ndarray, layers: Sequence[str], title: str = ""):
    """Supp C's landscape flat: the L2 norm of every layer's gradient (rows, from the input down to the head) in
    every epoch (columns), on a logarithmic colour scale, so each layer reads as a row of colour; ``layers`` are the
    parameter names of :meth:`RunDir.load_grad_norms`, shown as :func:`layer_label` names them (a batch-norm row
    says BN), with a white line between the stem, each residual block and the head."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    per_epoch = np.asarray(per_epoch, dtype=float)
    n_epochs, n_layers = per_epoch.shape
    fig, ax = plt.subplots(figsize=(BOOK_WIDTH_IN, 0.15 * n_layers + 1.2), layout="constrained")
    positive = per_epoch[per_epoch > 0]
    norm = LogNorm(vmin=float(positive.min()), vmax=float(positive.max())) if positive.size else None
    im = ax.imshow(per_epoch.T, aspect="auto", cmap="viridis", norm=norm, interpolation="nearest",
                   extent=(0.5, n_epochs + 0.5, n_layers - 0.5, -0.5))
    labels, groups = zip(*(layer_label(name) for name in layers)) if n_layers else ((), ())
    ax.set_yticks(range(n_layers), labels, fontsize=TEXT_PT)
    for row in range(1, n_layers):
        if groups[row] != groups[row - 1]:
            ax.axhline(row - 0.5, color="white", linewidth=1.5)
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


def contraction_figure(rhos: np.ndarray, rates: Mapping[float, np.ndarray], thresholds: Mapping[float, float]):
    """Chapter 7's test of the attraction threshold: per λ, the relative change of a concentrated state's spread after
    one SGD step (:func:`ftcl_core.study.gradient_algebra.contraction_rate`) against ρ, with the predicted threshold
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
