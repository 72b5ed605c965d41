"""Figures of results across runs: accuracy bars with their intervals, readout by length, the verdict forests (each
claim against the paper's), difference grids, the encoders' capacity and the outcome predictor."""

from __future__ import annotations

import textwrap
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ftcl_core.pages.palette import PAPER_COLOR, PAPER_MARK, VERDICT_COLORS, VERDICT_MARKERS, verdict_style  # noqa: F401
from ftcl_core.study import experiment_file

if TYPE_CHECKING:  # annotations only: matplotlib loads when a figure is drawn
    from matplotlib.figure import Figure
from ftcl_core.pages.legibility import (
    BOOK_WIDTH_IN,
    TEXT_PT,
    TITLE_PT,
    _finish,
    _legend_beside,
    _legend_outside,
    _unique_handles,
    _wrap,
)


def experiment_bars(exp, summary: Mapping[str, Mapping[str, float]], ax=None, legend: bool = True,
                    paper_beside: bool = False):
    """:func:`accuracy_bars` of an experiment's summary (:func:`ftcl_core.study.table_verdicts.summarize`); ``legend=False``
    leaves the key to the caller (:func:`experiment_grid` draws one for all its panels); ``paper_beside``: the
    paper's numbers in a panel of their own."""
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
                         legend=legend, paper_beside=paper_beside)


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
                  paper_collapse: Sequence[bool] | None = None, paper_beside: bool = False):
    """Readout accuracy per setting: our mean ± 95 % CI as a point with its interval, the random-init encoder (and
    the raw pixels' linear probe, where given) as reference lines, on an axis zoomed to them (readouts that sit
    within a few points of each other stay apart; points, not bars, since the axis does not start at zero).  The
    paper's numbers, when given, are diamonds on an axis of their own at the right, zoomed to them likewise
    (ImageNet-100 against the embedded data: compare the pattern across settings, not the levels). A setting the paper
    reports as collapsed (``paper_collapse``: True; no number) is a cross at the foot of the paper's axis.
    ``paper_beside``: the paper's numbers in a panel of their own to the right (a figure of its own only), so no
    point of one reads against the other's axis.

    The legend never sits in the frame: under the axes in a figure of its own, beside the axes in a caller's
    (``ax``), none with ``legend=False``."""
    import matplotlib.pyplot as plt

    own, beside = ax is None, None
    if own and paper_beside:
        fig, (ax, beside) = plt.subplots(1, 2, figsize=(BOOK_WIDTH_IN, 3.9), layout="constrained")
    elif own:
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
        pax = ax.twinx() if beside is None else beside
        pax.plot(xs, marks, label=paper_label, **PAPER_MARK)
        if beside is not None:
            pax.set_xticks(xs, labels, rotation=30, ha="right")
            pax.set_xlim(-0.6, len(labels) - 0.4)
            pax.grid(axis="y", alpha=0.3)
            pax.set_title(paper_label, fontsize=TITLE_PT)
            pax.tick_params(axis="x", labelsize=TEXT_PT)
        pax.set_ylim(*_zoomed(marks))
        fell = [x for x, c in zip(xs, paper_collapse or []) if c]
        if fell:  # no number in the paper, only "collapse": a cross at the bottom of its axis
            foot = pax.get_ylim()[0]
            pax.plot(fell, [foot] * len(fell), "X", color=PAPER_COLOR, ms=8, clip_on=False,
                     label="paper: below random init (no number)")
        pax.tick_params(axis="y", labelsize=TEXT_PT, colors=PAPER_COLOR)
        pax.set_ylabel("paper top-1 (%)", fontsize=TEXT_PT, color=PAPER_COLOR)
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
    if unknown:  # a new verdict word of results.verdicts: give it a colour rather than drop its claims
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
        ax.plot(claimed[np.isfinite(claimed)], ys[np.isfinite(claimed)], zorder=1, **PAPER_MARK)
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
        handles.append(plt.Line2D([], [], label="paper (ImageNet scale)", **PAPER_MARK))
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


def verdict_base(label: str) -> str:
    """The verdict word a reader's label starts with (:func:`ftcl_core.study.results.verdicts.row_label` adds
    " on the error scale" and the like; a cell below the seeds needed reads "n seed(s): undecided"): the longest key
    of :data:`VERDICT_COLORS` it begins with, "undecided" for one that ends so, "" for a label that is no verdict."""
    if label.endswith("undecided"):
        return "undecided"
    return max((w for w in VERDICT_COLORS if label.startswith(w)), key=len, default="")


def difference_grid(rows: list[str], cols: list[str], diff: np.ndarray, ci: np.ndarray, verdicts: list[list[str]],
                    title: str = "", ax=None, *, marked: str = "", mark: str = "\N{DAGGER}", footnote: str = ""):
    """A phase diagram over two factors, each cell coloured by its verdict (:data:`VERDICT_COLORS`, lightened so
    its text stays black) and annotated with the FT-minus-baseline difference (points), its 95 % interval and the
    verdict; empty cells: not run. A verdict containing ``marked`` (e.g. " on the error scale") drops it and carries
    ``mark`` instead, and ``footnote`` (the page's words, starting with the mark) is printed under the columns, so a
    cell the error scale decided is told apart without a long label. One legend names the colours drawn.

    Drawn for the book's column: cell labels at 9 pt (12.5 px on the page; a long verdict wraps inside its cell),
    row and column names wrapped."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Patch

    diff, ci = np.asarray(diff, dtype=float), np.asarray(ci, dtype=float)
    if ax is None:
        _, ax = plt.subplots(figsize=(min(BOOK_WIDTH_IN, 1.25 * len(cols) + 2.9), 0.72 * len(rows) + 2.0),
                             layout="constrained")

    def tint(word: str) -> tuple[float, float, float]:  # toward white, so black text reads on every colour; the
        # weak words (hollow markers: smaller, no effect, undecided) paler than the strong, so the two reds and greens part
        white = 0.3 if VERDICT_MARKERS[word][1] else 0.68
        return tuple(white + (1 - white) * c for c in to_rgb(VERDICT_COLORS[word])) if word else (1.0, 1.0, 1.0)

    image = np.ones((len(rows), len(cols), 3))
    drawn: list[str] = []
    for i in range(len(rows)):
        for j in range(len(cols)):
            if np.isnan(diff[i, j]):
                ax.text(j, i, "not run", ha="center", va="center", fontsize=TEXT_PT, color="gray")
                continue
            word = verdict_base(verdicts[i][j])
            image[i, j] = tint(word)
            if word and word not in drawn:
                drawn.append(word)
            label = verdicts[i][j]
            if marked and marked in label:
                label = label.replace(marked, "") + mark
            band = "" if np.isnan(ci[i, j]) else f" ± {ci[i, j]:.1f}"
            ax.text(j, i, f"{diff[i, j]:+.1f}{band}\n{textwrap.fill(label, 14)}", ha="center", va="center",
                    fontsize=TEXT_PT, color="black")
    ax.imshow(image, aspect="auto")
    ax.set_xticks(range(len(cols)), [textwrap.fill(c, 12) for c in cols], fontsize=TEXT_PT)
    ax.set_yticks(range(len(rows)), [textwrap.fill(r, 24) for r in rows], fontsize=TEXT_PT)
    ax.set_xticks(np.arange(len(cols) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(rows) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=2)  # cells read as cells, not as one coloured block
    ax.tick_params(which="minor", length=0)
    order = [w for w in VERDICT_COLORS if w in drawn]
    _legend_outside(ax.figure, [Patch(facecolor=tint(w), edgecolor="gray") for w in order], order, "lower")
    if footnote:
        ax.set_xlabel(textwrap.fill(footnote, 90), fontsize=TEXT_PT, loc="left", labelpad=8)  # laid out, not overlaid
    ax.set_title(_wrap(title, ax), fontsize=TITLE_PT)
    _finish(ax.figure)
    return ax.figure


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
