"""The length x start map on the task with headroom at a glance (chapter 11): each arm against its baseline, in
points and in test errors, the paper's own effect beside it, every planned comparison shown (the ones not trained
yet marked so)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ftcl_core.pages import legibility, palette
from ftcl_core.shapes import make_shapes
from ftcl_core.study import experiment_file, headroom, headroom_task

ARM_LABELS = {"both": "+pos +neg from the first step", "both_late": "+pos +neg from 30 %", "neg": "+neg alone",
              "pos_late": "+pos alone from 30 %"}
COLORS = {**palette.VERDICT_COLORS, "compared": palette.NO_CLAIM_COLOR}  # "compared": the paper claims nothing of that arm


def _style(verdict: str) -> dict:
    """A dot's marker keywords: a verdict's colour, marker and fill (:func:`ftcl_core.pages.palette.verdict_style`),
    a filled blue hexagon where the map compares an arm the paper claims nothing of."""
    if verdict in palette.VERDICT_MARKERS:
        return palette.verdict_style(verdict)
    colour = COLORS.get(verdict, "#7f7f7f")
    return {"marker": "h", "color": colour, "markerfacecolor": colour, "markeredgecolor": colour}


PAPER_LIFT = 0.36  # rows apart: the paper's diamond sits above its row's dot, drawn under it, so a dot near it stays in view

def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


ROUND_RATIOS = (1, 2, 0.5, 4, 0.25, 1.5, 0.67, 3, 8, 1.25, 0.8, 1.1, 0.9)  # the error ratios a tick may show


def _padded(lo: float, hi: float, reach: float = 1.25) -> tuple[float, float]:
    """A log axis from ``lo`` to ``hi`` widened to the nearest round ratio within ``reach`` beyond each end, so that an
    interval near an end ends at a labelled tick."""
    above = [t for t in ROUND_RATIOS if hi < t <= hi * reach]
    below = [t for t in ROUND_RATIOS if lo / reach <= t < lo]
    return (max(below) / 1.04 if below else lo), (min(above) * 1.04 if above else hi)


def _spaced_ticks(lo: float, hi: float, gap: float = 0.2) -> list[float]:
    """Round ratios between ``lo`` and ``hi`` for a log axis, 1 first, each at least ``gap`` of the axis's log width
    from those kept, so that no two labels touch."""
    width, kept = math.log(hi / lo), []
    for t in ROUND_RATIOS:
        if lo <= t <= hi and all(abs(math.log(t / k)) >= gap * width for k in kept):
            kept.append(t)
    return sorted(kept)


def map_figure(rows: list[Mapping]):
    """Two panels sharing one row per (length, arm) of :data:`ftcl_core.study.headroom.ARMS`, for the lengths with a
    stored comparison (the first length when none is): left, the paired
    difference in linear top-1 (points, mean ± 95 % CI over seeds); right, the ratio of test errors (FT's over the
    baseline's, log scale, 1 = no change); dots coloured by verdict, the paper's effect as a hollow orange diamond on each
    scale (its two numbers' difference, and their error ratio), "(n seeds)" in the row's label (below 3 paired seeds
    a comparison is undecided), "not run" where it holds none; each axis says which side is FT's loss. ``rows``:
    :func:`ftcl_core.study.diagnosis.headroom_rows`."""
    import matplotlib.pyplot as plt

    by_setting = {r["setting"]: r for r in rows}
    stored = [
        n
        for n in headroom.LENGTHS
        if any(_num(by_setting.get(headroom.setting(a, n), {}).get("n_seeds")) > 0 for a in headroom.ARMS)
    ]
    labels, cells = [], []
    for length in stored or headroom.LENGTHS[:1]:
        for arm in headroom.ARMS:
            cell = by_setting.get(headroom.setting(arm, length), {})
            n = int(_num(cell.get("n_seeds")) or 0) if cell else 0
            seeds = f"  ({n} seed{'s' if n > 1 else ''})" if n else ""  # below 3: fewer than a verdict needs
            labels.append(f"{length} ep.  {ARM_LABELS[arm]}{seeds}")
            cells.append(cell)
    ys = np.arange(len(cells))[::-1]
    fig, (left, right) = plt.subplots(1, 2, figsize=(legibility.BOOK_WIDTH_IN, 0.3 * len(cells) + 1.9), sharey=True,
                                      layout="constrained", width_ratios=(1.2, 1))
    for y, r in zip(ys, cells):
        n = int(_num(r.get("n_seeds")) or 0) if r else 0
        if n == 0 or not math.isfinite(_num(r.get("diff_mean"))):
            left.annotate("not run", (0, y), xycoords=("axes fraction", "data"), xytext=(4, 0), va="center",
                          textcoords="offset points", fontsize=legibility.TEXT_PT, color="dimgray")
            continue
        style = _style(r["verdict"])
        diff, ci = _num(r["diff_mean"]), _num(r["diff_ci95"])
        left.errorbar(diff, y, xerr=np.nan_to_num(ci), ls="", ms=5, capsize=2, zorder=3, **style)
        ler, ler_ci = _num(r.get("log_error_ratio")), _num(r.get("log_error_ratio_ci95"))
        if math.isfinite(ler):
            lo, hi = math.exp(ler - np.nan_to_num(ler_ci)), math.exp(ler + np.nan_to_num(ler_ci))
            right.errorbar(math.exp(ler), y, xerr=[[math.exp(ler) - lo], [hi - math.exp(ler)]], ls="", ms=5,
                           capsize=2, zorder=3, **style)
        if math.isfinite(effect := _num(r.get("effect"))):
            left.plot(effect, y + PAPER_LIFT, zorder=1, **palette.PAPER_MARK)
        if math.isfinite(paper := _num(r.get("paper_log_error_ratio"))):
            right.plot(math.exp(paper), y + PAPER_LIFT, zorder=1, **palette.PAPER_MARK)
    left.axvline(0, color="black", lw=0.8)
    right.axvline(1, color="black", lw=0.8)
    right.set_xscale("log")
    lo, hi = _padded(*right.get_xlim())
    right.set_xlim(lo, hi)
    right.set_xticks(_spaced_ticks(lo, hi))
    right.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}×"))
    right.xaxis.set_minor_formatter(plt.NullFormatter())
    for ax in (left, right):
        ax.tick_params(labelsize=legibility.TEXT_PT)
        for y in ys[len(headroom.ARMS)::len(headroom.ARMS)] + 0.5:  # a rule between lengths
            ax.axhline(y, color="lightgray", lw=0.8)
    left.set_yticks(ys, labels, fontsize=legibility.TEXT_PT)
    left.set_ylim(-0.7, len(cells) - 0.3)
    left.set_xlabel("difference in linear top-1 (points)\n← FT worse    FT better →", fontsize=legibility.TEXT_PT)
    right.set_xlabel("test errors, FT / baseline (log)\n← FT better    FT worse →", fontsize=legibility.TEXT_PT)
    drawn = [v for v in COLORS if any(c and c.get("verdict") == v for c in cells)]
    handles = [plt.Line2D([], [], ls="", label="compared (no paper claim)" if v == "compared" else v, **_style(v))
               for v in drawn]
    handles.append(plt.Line2D([], [], label="paper (ImageNet-100)", **palette.PAPER_MARK))
    legibility._legend_outside(fig, handles, [h.get_label() for h in handles], "upper")
    return fig


def crowding_table(f: Mapping) -> list[list[str]]:
    """Chapter 11's crowding table from :func:`ftcl_core.study.headroom.crowding_facts` and
    :func:`~ftcl_core.study.headroom.map_facts` (``f``): for each length and arm with stored pairs, the length, the
    arm, the seeds, raw Mean(neg) over the tenth of the run after FT switches on ("FT / baseline"), whether the arm
    crowds the images there (its word: crowds, spread, mixed, undecided), Mean(neg) over the last steps, and the
    paired difference in linear readout."""
    rows = []
    for length in headroom.LENGTHS:
        for arm in headroom.ARMS:
            key = f"crowd_{arm}_{length}"
            if f[f"{key}_seeds"]:
                rows.append([str(length), ARM_LABELS[arm], f[f"{key}_n"], f"{f[f'{key}_ft']} / {f[f'{key}_base']}",
                             {"crowds": "yes", "spread": "no"}.get(f[f"{key}_word"], f[f"{key}_word"]),
                             f"{f[f'{key}_end_ft']} / {f[f'{key}_end_base']}", f[f"{arm}_{length}_diff"]])
    return rows

CURVE_STYLE = {"baseline": {"color": "black", "ls": (0, (4, 2)), "lw": 1.1, "zorder": 5},  # thin, on top of the late
               "both": {"color": "#c44e52", "ls": "-", "lw": 1.6},  # start, which can follow it exactly (120, 240 epochs)
               "both_late": {"color": "#4c72b0", "ls": "-", "lw": 2.6, "alpha": 0.85, "marker": "o", "ms": 3.5,
                             "zorder": 3},
               "pos_late": {"color": "#55a868", "ls": ":", "lw": 1.4}}


def crowding_figure(curves: Mapping[int, Mapping[str, tuple[np.ndarray, np.ndarray]]]):
    """One panel per length (``curves``: length -> :func:`ftcl_core.study.headroom.neg_curves`): raw Mean(neg)
    through training, each arm's mean over its seeds, a dotted line where the late start switches FT on; the
    legend names each arm as the map figure does."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(legibility.BOOK_WIDTH_IN, 2.5), sharey=True, layout="constrained",
                             squeeze=False)
    for ax, (length, by_arm) in zip(axes[0], curves.items()):
        for arm, (epochs, means) in by_arm.items():
            ax.plot(epochs + 1, means, label="baseline (no FT)" if arm == "baseline" else ARM_LABELS[arm],
                    markevery=max(1, length // 15), **CURVE_STYLE[arm])
        ax.axvline(length * 3 // 10 + 1, color="black", lw=1.3, ls=(0, (1.5, 2)), label="the late start switches FT on")
        ax.set_title(f"{length} epochs", fontsize=legibility.TITLE_PT)
        ax.set_xlabel("epoch", fontsize=legibility.TEXT_PT)
        ax.tick_params(labelsize=legibility.TEXT_PT)
    axes[0][0].set_ylabel("Mean(neg), raw cosine", fontsize=legibility.TEXT_PT)
    handles, labels = legibility._unique_handles(axes[0])
    legibility._legend_outside(fig, handles, labels, "upper")
    return fig


def task_images(classes: Sequence[int] | None = None, columns: int = 10, height: float = 2.6, named: bool = False):
    """One image of each of ``classes`` (default: every class, in order) of the task with room, in rows of
    ``columns``, drawn as its map's recipe draws them: ``make_shapes`` with the map's data settings, seed 0. Class c
    is shape c % 10 in fill c // 10 (solid, outline, striped); ``named``: each image titled with its class's name
    (fill over shape), the one a readout must give."""
    import matplotlib.pyplot as plt

    exp = experiment_file.Experiment.load(headroom_task.MAP)
    data = experiment_file.resolve(exp.base["cpu"], exp.settings[headroom_task.setting("baseline", 30)], "cpu").data
    chosen = list(range(data.classes)) if classes is None else [int(c) for c in classes]
    if not chosen or any(not 0 <= c < data.classes for c in chosen) or columns < 1:
        raise ValueError(f"classes={classes}, columns={columns}: name classes in 0..{data.classes - 1} and at least "
                         "one column")
    sample = make_shapes(data.classes, size=data.image_size, seed=0, classes=data.classes, clutter=data.clutter)
    first = {int(label): i for i, label in reversed(list(enumerate(sample.labels.tolist())))}  # class -> an image
    rows = math.ceil(len(chosen) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(legibility.BOOK_WIDTH_IN, height), layout="constrained",
                             squeeze=False)
    for ax in axes.flat:
        ax.set_axis_off()
    for ax, c in zip(axes.flat, chosen):
        ax.imshow(sample.images[first[c]].permute(1, 2, 0).numpy())  # (3, H, W) uint8 -> (H, W, 3)
        if named:
            ax.set_title(sample.classes[c].replace(" ", "\n").replace("_", " "), fontsize=legibility.TEXT_PT)
    return fig
