"""The Learn chapters' figures: the toy contrastive problem (:mod:`ftcl_core.study.toy`), the minutes of MoCo they
train, the bound's panels and what the runs say."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from ftcl_core.pages import palette
from ftcl_core.study.results.numbers import fixed
from ftcl_core.study.toy import ToyRun, hardest_share, push_curve

CLUSTER_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def _circle(ax, features: np.ndarray, labels: np.ndarray, title: str) -> None:
    """Unit 2-d features drawn on the circle, coloured by cluster (the labels the loss never saw)."""
    t = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.cos(t), np.sin(t), color="#cccccc", lw=1, zorder=0)
    jitter = 1 + 0.04 * np.random.default_rng(0).standard_normal(len(features))  # points that coincide stay visible
    for c in np.unique(labels):
        f = features[labels == c] * jitter[labels == c, None]
        ax.scatter(f[:, 0], f[:, 1], s=6, color=CLUSTER_COLOURS[int(c) % len(CLUSTER_COLOURS)], alpha=0.6)
    ax.set_aspect("equal")
    ax.set_xlim(-1.3, 1.3)
    ax.set_ylim(-1.3, 1.3)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)


def toy_figure(points: np.ndarray, point_labels: np.ndarray, run: ToyRun, collapsed: ToyRun):
    """Four panels: the toy's inputs in the plane; their features on the circle before training, after InfoNCE, and
    after the positives-only loss (a collapse); and under them alignment and uniformity through training. Drawn at
    the book column's width, so its text keeps its size on the page."""
    from ftcl_core.pages import legibility

    fig = plt.figure(figsize=(legibility.BOOK_WIDTH_IN, 4.9), layout="constrained")
    grid = fig.add_gridspec(2, 4, height_ratios=(1.1, 1))
    ax = fig.add_subplot(grid[0, 0])
    for c in np.unique(point_labels):
        p = points[point_labels == c]
        ax.scatter(p[:, 0], p[:, 1], s=4, color=CLUSTER_COLOURS[int(c) % len(CLUSTER_COLOURS)], alpha=0.6)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title("inputs (colour:\ncluster, unseen)", fontsize=legibility.TEXT_PT)
    _circle(fig.add_subplot(grid[0, 1]), run.before, run.labels, "features\nbefore training")
    _circle(fig.add_subplot(grid[0, 2]), run.after, run.labels, f"after InfoNCE\n(τ = {run.tau:g})")
    _circle(fig.add_subplot(grid[0, 3]), collapsed.after, collapsed.labels, "after positives\nonly: collapse")
    for i, (key, name) in enumerate((("align", "alignment (0: the views coincide)"),
                                     ("uniform", "uniformity (0: all at one point)"))):
        ax = fig.add_subplot(grid[1, 2 * i: 2 * i + 2])
        ax.plot(run.history[key], label="InfoNCE", color="#4c72b0")
        ax.plot(collapsed.history[key], label="positives only", color="#c44e52")
        ax.set_xlabel("step", fontsize=legibility.TEXT_PT)
        ax.tick_params(labelsize=legibility.TEXT_PT)
        ax.set_title(name, fontsize=legibility.TEXT_PT)
    handles, labels = legibility._unique_handles(fig.axes)
    legibility._legend_outside(fig, handles, labels, "lower")
    return fig


def _title(run: ToyRun) -> str:
    share = hardest_share(run.after, run.tau)
    return f"τ = {run.tau:g}: the hardest 10 % of negatives take {100 * share:.0f} % of the push"


def temperature_explorer(runs: Sequence[ToyRun]):
    """A plotly figure with a temperature slider over precomputed toy runs (responds in the static HTML, no
    kernel): left, the trained features on the circle, coloured by cluster; right, how the push spreads over the
    negatives (:func:`ftcl_core.study.toy.push_curve`: the share of it the hardest fraction receives, against the
    diagonal where every negative is pushed alike; every temperature's curve drawn faint behind the chosen one); the
    title gives the hardest tenth's share."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, column_widths=[0.5, 0.5], horizontal_spacing=0.12,
                        subplot_titles=("the features on the circle",
                                        "the push over the negatives (grey: other τ)"))
    t = np.linspace(0, 2 * np.pi, 200)
    clusters = [int(c) for c in np.unique(runs[0].labels)]
    mid = len(runs) // 2
    for i, run in enumerate(runs):
        for c in clusters:
            f = run.after[run.labels == c]
            fig.add_trace(go.Scatter(x=f[:, 0], y=f[:, 1], mode="markers", visible=i == mid,
                                     marker=dict(size=5, color=CLUSTER_COLOURS[c % len(CLUSTER_COLOURS)], opacity=0.6),
                                     name=f"cluster {c}", showlegend=False), row=1, col=1)
        x, share = push_curve(run.after, run.tau)
        fig.add_trace(go.Scatter(x=100 * x, y=100 * share, mode="lines", visible=i == mid, showlegend=False,
                                 line=dict(color="#4c72b0", width=3), name=f"τ = {run.tau:g}",
                                 hovertemplate="hardest %{x:.0f} % of negatives: %{y:.0f} % of the push"),
                      row=1, col=2)
    fig.add_trace(go.Scatter(x=np.cos(t), y=np.sin(t), mode="lines", line=dict(color="#cccccc"), showlegend=False,
                             hoverinfo="skip"), row=1, col=1)
    fig.add_trace(go.Scatter(x=[0, 100], y=[0, 100], mode="lines", line=dict(color="#999999", dash="dash"),
                             showlegend=False, hoverinfo="skip"), row=1, col=2)
    fig.add_annotation(x=62, y=48, text="every negative<br>pushed alike", showarrow=False, font=dict(color="#777777"),
                       row=1, col=2)
    for run in runs:  # every temperature's curve, faint, behind the slider's: the prose compares them
        x, share = push_curve(run.after, run.tau)
        fig.add_trace(go.Scatter(x=100 * x, y=100 * share, mode="lines", showlegend=False, name=f"τ = {run.tau:g}",
                                 line=dict(color="#c9d3e3", width=1.5), hovertemplate="τ = " + f"{run.tau:g}"
                                 + ": hardest %{x:.0f} % of negatives, %{y:.0f} % of the push<extra></extra>"),
                      row=1, col=2)
    per = len(clusters) + 1  # a run's traces: its clusters, then its push curve
    steps = []
    for i, run in enumerate(runs):
        vis = [False] * (per * len(runs)) + [True, True] + [True] * len(runs)
        vis[i * per:(i + 1) * per] = [True] * per
        steps.append(dict(method="update", label=f"{run.tau:g}",
                          args=[{"visible": vis}, {"title.text": _title(run)}]))
    fig.update_layout(sliders=[dict(active=mid, currentvalue={"prefix": "temperature τ = "}, steps=steps, pad={"t": 40})],
                      title=_title(runs[mid]), height=460, margin=dict(t=80, b=10, l=10, r=10))
    fig.update_xaxes(range=[-1.3, 1.3], visible=False, row=1, col=1)
    fig.update_yaxes(range=[-1.3, 1.3], visible=False, scaleanchor="x", row=1, col=1)
    fig.update_xaxes(range=[0, 100], title_text="the hardest negatives, % of all", row=1, col=2)
    fig.update_yaxes(range=[0, 101], title_text="their share of the push, %", row=1, col=2)
    return fig


def views_figure(images, view_1, view_2, aug) -> plt.Figure:
    """Each image (uint8, ``(n, 3, H, W)``) above its two augmented views (normalised with ``aug``'s mean and std,
    shown un-normalised): the positive pairs MoCo learns from."""
    mean = np.asarray(aug.mean).reshape(1, 3, 1, 1)
    std = np.asarray(aug.std).reshape(1, 3, 1, 1)
    shown = [images.numpy() / 255.0, *(np.clip(v.detach().float().numpy() * std + mean, 0, 1) for v in (view_1, view_2))]
    from ftcl_core.pages import legibility

    n = images.shape[0]
    side = legibility.BOOK_WIDTH_IN / (n + 0.6)  # the column's width: a square cell an image, a margin for the names
    fig, axes = plt.subplots(3, n, figsize=(legibility.BOOK_WIDTH_IN, 3 * side + 0.45), squeeze=False)
    for row, (imgs, name) in enumerate(zip(shown, ("image", "view 1", "view 2"))):
        for i in range(n):
            ax = axes[row, i]
            ax.imshow(imgs[i].transpose(1, 2, 0), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_ylabel(name, fontsize=legibility.TEXT_PT)
    fig.suptitle("two views of each image: a positive pair", fontsize=legibility.TITLE_PT)
    fig.tight_layout(pad=0.3, h_pad=0.2, w_pad=0.2)
    return fig


def moco_training_figure(history: dict, queue_size: int) -> plt.Figure:
    """A from-scratch MoCo's first steps: its loss against a guess among ``queue_size + 1`` (left), and the share of
    queries whose own key scores above every key of the queue (right), at the book column's width."""
    from ftcl_core.pages import legibility

    fig, (a, b) = plt.subplots(1, 2, figsize=(legibility.BOOK_WIDTH_IN, 3.0), layout="constrained")
    a.plot(history["loss"], color="#4c72b0")
    a.axhline(np.log(queue_size + 1), color="#999999", ls="--", lw=1, label=f"log({queue_size + 1}): a guess")
    a.set_title("InfoNCE loss", fontsize=legibility.TITLE_PT)
    a.legend(fontsize=legibility.TEXT_PT, frameon=False)
    b.plot(100 * np.asarray(history["found"]), color="#55a868")
    b.set_ylim(0, 100)
    b.set_title(f"contrastive top-1: % of queries whose\nkey beats all {queue_size} negatives", fontsize=legibility.TITLE_PT)
    for ax in (a, b):
        ax.set_xlabel("step", fontsize=legibility.TEXT_PT)
        ax.tick_params(labelsize=legibility.TEXT_PT)
    return fig


def score_histograms(panels: Sequence[tuple[np.ndarray, np.ndarray, str]]) -> plt.Figure:
    """Side by side, each panel's negative and positive scores as densities (``(l_pos, l_neg, x label)`` per panel):
    where a batch's cosines lie before the tool (Supp A) reduces them to three numbers."""
    from ftcl_core.pages import legibility

    fig, axes = plt.subplots(1, len(panels), figsize=(legibility.BOOK_WIDTH_IN, 3), layout="constrained", squeeze=False)
    for ax, (pos, neg, label) in zip(axes[0], panels):
        ax.hist(np.asarray(neg).ravel(), bins=80, density=True, alpha=0.6, label="negative scores")
        ax.hist(np.asarray(pos).ravel(), bins=40, density=True, alpha=0.6, label="positive scores")
        ax.set_xlabel(label)
    axes[0][0].set_ylabel("density")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=9, frameon=False)
    return fig


def bound_panels(alpha: float = 2.0, lam: float = 1.5, s: float = 0.6) -> plt.Figure:
    """eq. 4 for a live kernel's sliders: the density of lambda ~ Beta(alpha, alpha) + 1 with ``lam`` marked (left),
    and the density of the transformed positive score for a starting score ``s``, with its value at ``lam`` and the
    range [-4 + 5S, S] shaded (right)."""
    from ftcl_core import transforms
    from ftcl_core.pages import explorers, legibility

    fig, ax = plt.subplots(1, 2, figsize=(legibility.BOOK_WIDTH_IN, 3.4), layout="constrained")
    u = np.linspace(0.001, 0.999, 300)
    ax[0].plot(1 + u, explorers.beta_density(u, alpha))
    ax[0].axvline(lam, color="crimson")
    ax[0].set_title(f"λ ~ Beta({alpha}, {alpha}) + 1")
    grid = np.linspace(-4, 1, 500)
    ax[1].plot(grid, explorers.transformed_score_density(s, alpha, grid))
    ax[1].axvline(transforms.transformed_positive_score(s, lam), color="crimson", label=f"Ŝ at λ={lam}")
    ax[1].axvspan(*transforms.score_range(s), alpha=0.1)
    ax[1].set_title(f"Ŝ for S = {s}")
    ax[1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=9, frameon=False)
    return fig


def bound_check_figure(s, s_ex, s_in, s_dim=None, shown: int = 3000) -> plt.Figure:
    """eq. 4 measured: the score of each test pair after extrapolation (``s_ex``, left, between the bounds S and
    5S - 4; ``s_dim``, when given, with one λ per dimension, Sec 4.3) and after interpolation (``s_in``, right, above
    S), against its score ``s`` before; ``shown`` pairs."""
    from ftcl_core.pages import legibility

    s, s_ex, s_in = (np.asarray(v)[:shown] for v in (s, s_ex, s_in))
    grid = np.linspace(-1, 1, 100)
    fig, ax = plt.subplots(1, 2, figsize=(legibility.BOOK_WIDTH_IN, 3.2), layout="constrained")
    ax[0].scatter(s, s_ex, s=2, alpha=0.4, label="measured (λ ~ Beta(2,2)+1)")
    if s_dim is not None:
        ax[0].scatter(s, np.asarray(s_dim)[:shown], s=2, alpha=0.4, color="tab:orange", label="one λ per dimension")
    ax[0].plot(grid, grid, "k-", lw=1, label="S (upper bound)")
    ax[0].plot(grid, -4 + 5 * grid, "k--", lw=1, label="5S - 4 (lower bound)")
    ax[0].set_ylabel("Ŝ after extrapolation")
    ax[1].scatter(s, s_in, s=2, alpha=0.4, color="tab:purple", label="interpolation, λ ~ Beta(2,2)")
    ax[1].plot(grid, grid, "k-", lw=1, label="S")
    ax[1].set_ylabel("Ŝ after interpolation")
    for a in ax:
        a.set_xlabel("S")
        a.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=9, frameon=False)
    return fig


def differences_figure(said: Mapping[str, tuple[Mapping, str, str | None]]) -> plt.Figure:
    """What the runs say, one line each (``said``: label -> ``(facts, key, paper key or None)``): the paired
    difference ``facts[key + '_value']`` ± its 95 % interval ``facts[key + '_ci']`` in points, with
    ``facts[key + '_seeds']`` paired seeds in the label where given, and the paper's effect ``facts[paper key]`` (a
    signed number) as a diamond. A line's colour says only its side: a cost, a gain, or an interval across zero."""
    from ftcl_core.pages import legibility

    fig, ax = plt.subplots(figsize=(legibility.BOOK_WIDTH_IN, 0.24 * len(said) + 1.0), layout="constrained")
    ys = np.arange(len(said))[::-1]
    sides = palette.SIDE_COLORS
    drawn: dict[str, object] = {}
    labels = []
    for y, (label, (facts, key, paper)) in zip(ys, said.items()):
        value, ci = float(facts[f"{key}_value"]), float(facts[f"{key}_ci"])
        side = "costs" if value + ci < 0 else "gains" if value - ci > 0 else "too small to tell from zero"
        drawn[side] = ax.errorbar(value, y, xerr=ci, fmt="o", color=sides[side], ms=6, capsize=3)
        if paper is not None:
            drawn["the paper's effect"] = ax.plot(float(facts[paper]), y, zorder=3, **palette.PAPER_MARK)[0]
        seeds = facts.get(f"{key}_seeds")
        labels.append(f"{label} ({seeds} seeds)" if seeds else label)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(ys, labels, fontsize=legibility.TEXT_PT)
    ax.set_ylim(-0.7, len(said) - 0.3)
    ax.tick_params(axis="x", labelsize=legibility.TEXT_PT)
    ax.set_xlabel("readout with FT minus without (points, ± 95 % interval)", fontsize=legibility.TEXT_PT)
    order = [s for s in (*sides, "the paper's effect") if s in drawn]
    legibility._legend_outside(fig, [drawn[s] for s in order], order, "lower")
    return fig


MINUTE_LABELS = {"plain": "plain MoCo", "both": "FT from the first step"}
MINUTE_TITLES = ("Mean(pos): a view against its other view", "Mean(neg): against the queue's keys")


def minute_figure(readings: Mapping[str, Mapping[str, Sequence[float]]], knn: Mapping[str, float]) -> plt.Figure:
    """A minute of MoCo read with the paper's tool, one line a run (``readings``: ``plain`` or ``both`` -> its probe's
    ``step``, raw ``pos`` and ``neg``; ``knn``: the same names -> kNN readout, %, in the legend): Mean(pos) left,
    Mean(neg) right."""
    from ftcl_core.pages import legibility

    fig, axes = plt.subplots(1, 2, figsize=(legibility.BOOK_WIDTH_IN, 2.6), layout="constrained", sharex=True)
    for (label, r), colour in zip(readings.items(), ("#4c72b0", palette.SIDE_COLORS["costs"])):
        for ax, stat in zip(axes, ("pos", "neg")):
            ax.plot(r["step"], r[stat], color=colour, label=f"{MINUTE_LABELS.get(label, label)} (kNN {fixed(knn[label], 1)} %)")
    for ax, title in zip(axes, MINUTE_TITLES):
        ax.set_title(title, fontsize=legibility.TITLE_PT)
        ax.set_xlabel("step", fontsize=legibility.TEXT_PT)
        ax.set_ylim(-0.1, 1.0)
        ax.tick_params(labelsize=legibility.TEXT_PT)
    axes[0].legend(fontsize=legibility.TEXT_PT, frameon=False)
    return fig
