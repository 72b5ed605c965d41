"""Figures drawn from stored runs: score statistics (Fig 3, Supp A), gradient landscapes (Fig 4, Supp C),
the eq. 4 score bound, and accuracy tables.  Every function takes arrays from a run folder
(:class:`ftcl_core.runs.RunDir`) and returns a matplotlib Figure; nothing here trains or computes results.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping

import numpy as np

STAT_LABELS = {
    "pos_mean": "Mean(pos)", "neg_mean": "Mean(neg)", "neg_var": "Var(neg)",
    "ft_pos_mean": "Mean(pos) after FT", "ft_neg_mean": "Mean(neg) after FT", "ft_neg_var": "Var(neg) after FT",
}


def smooth(y: np.ndarray, window: int) -> np.ndarray:
    """Moving average (edges use the available points), for noisy per-step curves."""
    if window <= 1 or len(y) < window:
        return np.asarray(y, dtype=float)
    kernel = np.ones(window)
    num = np.convolve(y, kernel, mode="same")
    den = np.convolve(np.ones_like(y, dtype=float), kernel, mode="same")
    return num / den


def score_statistics(runs: Mapping[str, Mapping[str, np.ndarray]], columns=("pos_mean", "neg_mean", "neg_var"),
                     window: int = 10, x: str = "epoch"):
    """Fig 3 / Supp A: one panel per statistic, one curve per run, against training progress.

    ``runs`` maps a label to a run's metrics (:meth:`RunDir.load_metrics`).  ``x='epoch'`` uses the
    fractional epoch (step / steps per epoch) so runs of different lengths line up.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(columns), figsize=(4.2 * len(columns), 3.2), squeeze=False)
    for label, m in runs.items():
        xs = _progress(m) if x == "epoch" else m["step"]
        for ax, col in zip(axes[0], columns):
            ax.plot(xs, smooth(m[col], window), label=label, lw=1.4)
    for ax, col in zip(axes[0], columns):
        ax.set_title(STAT_LABELS.get(col, col))
        ax.set_xlabel("epoch" if x == "epoch" else "step")
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()  # one legend under the panels, covering no curve
    fig.tight_layout(rect=(0, 0.12 if len(labels) <= 6 else 0.2, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), fontsize=8, frameon=False)
    return fig


def _progress(m: Mapping[str, np.ndarray]) -> np.ndarray:
    """Fractional epoch of every step: epoch + position of the step inside its epoch."""
    epoch, step = np.asarray(m["epoch"]), np.asarray(m["step"])
    steps_per_epoch = max(1, int(np.sum(epoch == epoch[0])))
    return step / steps_per_epoch


def score_trajectory_3d(runs: Mapping[str, Mapping[str, np.ndarray]], window: int = 10):
    """Fig 5 style: each run as a curve in (Mean(pos), Mean(neg), Var(neg)) space, coloured by time."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(8, 5))
    ax = fig.add_subplot(projection="3d")
    for label, m in runs.items():
        ax.plot(smooth(m["pos_mean"], window), smooth(m["neg_mean"], window), smooth(m["neg_var"], window),
                label=label, lw=1.3)
    ax.set_xlabel("Mean(pos)")
    ax.set_ylabel("Mean(neg)")
    ax.set_zlabel("Var(neg)")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.18, 0.5), frameon=False)  # beside the axes, not on them
    fig.tight_layout()
    return fig


def grad_landscape(per_epoch: np.ndarray, title: str = "", ax=None):
    """Fig 4 / Supp C: per-layer gradient L2 norm (z) over layers (x) and epochs (y), as a 3-D surface."""
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


def score_bound(s: np.ndarray | None = None):
    """eq. 4: transformed positive score S' against S for several lambda, with the range [-4+5S, S]."""
    import matplotlib.pyplot as plt

    from ftcl_core.transforms import score_range, transformed_positive_score

    s = np.linspace(-1, 1, 201) if s is None else s
    fig, ax = plt.subplots(figsize=(5, 4))
    lo, hi = score_range(s)
    ax.fill_between(s, lo, hi, alpha=0.15, label="range for λ in [1, 2]")
    for lam in (0.5, 1.0, 1.25, 1.5, 1.75, 2.0):
        style = "--" if lam < 1 else "-"
        ax.plot(s, transformed_positive_score(s, lam), style, label=f"λ = {lam}")
    ax.set_xlabel("S = z_q · z_k")
    ax.set_ylabel("S' after FT")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def experiment_bars(exp, summary: Mapping[str, Mapping[str, float]], ax=None):
    """:func:`accuracy_bars` of an experiment's summary (:func:`ftcl_core.experiments.summarize`)."""
    if not summary:  # a table switched to a new recipe before its first run landed: an empty, labelled panel
        import matplotlib.pyplot as plt

        ax = ax if ax is not None else plt.subplots(figsize=(4, 3.4))[1]
        ax.text(0.5, 0.5, "no stored run yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(exp.title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        return ax.figure
    pixels = [v.get("raw_pixels_mean", np.nan) for v in summary.values()]
    return accuracy_bars(list(summary), [v["mean"] for v in summary.values()],
                         [0 if np.isnan(v["ci95"]) else v["ci95"] for v in summary.values()],
                         baseline=float(np.mean([v["random_init_mean"] for v in summary.values()])),
                         paper=[exp.paper_number(k) for k in summary], title=exp.title, ax=ax,
                         pixels=None if np.all(np.isnan(pixels)) else float(np.nanmean(pixels)),
                         paper_label="paper (ImageNet-1K)" if "IN-1K" in exp.title else "paper (ImageNet-100)")


def accuracy_bars(labels: list[str], means: list[float], ci95: list[float], baseline: float | None = None,
                  paper: list[float] | None = None, title: str = "", ax=None, pixels: float | None = None,
                  paper_label: str = "paper (ImageNet-100)"):
    """Bar chart of readout accuracy (mean +- 95 % CI), the random-init baseline as a line, and the paper's
    numbers as markers on the same 0-100 axis when given (ImageNet-100 against the embedded data: compare the
    pattern across settings, not the levels; one axis, so no marker sits misleadingly above or below a bar)."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(max(4, 0.9 * len(labels) + 1.5), 3.4))
    fig = ax.figure
    xs = np.arange(len(labels))
    ax.bar(xs, means, yerr=ci95, capsize=3, color="#4c72b0", label="ours (linear top-1)")
    if baseline is not None:
        ax.axhline(baseline, color="crimson", ls="--", lw=1, label="random-init encoder")
    if pixels is not None:  # real images: the encoder must beat a linear probe on the pixels themselves
        ax.axhline(pixels, color="dimgray", ls=":", lw=1.2, label="raw pixels (linear)")
    ax.set_xticks(xs, labels, rotation=30, ha="right")
    ax.set_ylabel("linear top-1 (%)")
    ax.set_ylim(0, 100)  # an accuracy; a two-seed interval may reach past it and is cut at the frame
    ax.set_title("\n".join(textwrap.wrap(title, 60)), fontsize=10)
    if paper is not None:
        ax.plot(xs, np.asarray(paper, dtype=float), "D", color="darkorange", label=paper_label)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def readout_by_length(steps: list[int], arms: Mapping[str, list[list[float]]], random_init: float | None = None,
                      ylabel: str = "linear top-1 (%)", title: str = "", ax=None):
    """Readout against training steps, one line per arm (its mean over seeds) with every seed as a dot:
    ``arms[name][i]`` holds the per-seed readouts at ``steps[i]`` (empty where that length was not run)."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(5, 3.4))
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
    ax.set_title("\n".join(textwrap.wrap(title, 60)), fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


VERDICT_COLORS = {  # one colour per verdict word of ftcl_core.results.claims
    "replicated": "#2ca02c", "smaller than the paper": "#98df8a", "contradicted": "#d62728",
    "no effect of the paper's size": "#ff9896", "inconclusive": "#7f7f7f", "equivalent": "#1f77b4",
    "not equivalent": "#9467bd", "undecided": "#c7c7c7"}


def verdict_forest(rows: list[Mapping[str, str]], ax=None):
    """Every claim of ``results/summary.csv`` at a glance: the paired difference against its reference
    (mean ± 95 % CI over seeds, coloured by verdict), and the paper's difference between the same two
    settings as an orange diamond (ImageNet-100 points, so only its sign and rough size compare).  Table 1's
    claims are against the random-init encoder, for which the paper gives no number."""
    import matplotlib.pyplot as plt

    def num(v) -> float:  # "" (no number) and "collapse" (Table 1) are not numbers
        try:
            return float(v)
        except (TypeError, ValueError):
            return np.nan

    claims = [r for r in rows if r["verdict"] != "baseline" and r["diff_mean"] not in ("", None)]
    paper = {(r["table"], r["setting"]): num(r["paper"]) for r in rows}
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.26 * len(claims) + 1.2))
    ys = np.arange(len(claims))[::-1]
    for y, r in zip(ys, claims):
        ci = num(r["diff_ci95"])
        ax.errorbar(num(r["diff_mean"]), y, xerr=0 if np.isnan(ci) else ci, fmt="o", ms=4, capsize=2,
                    color=VERDICT_COLORS[r["verdict"]])
        claimed = paper[(r["table"], r["setting"])] - paper.get((r["table"], r["reference"]), np.nan)
        if not np.isnan(claimed):
            ax.plot(claimed, y, "D", ms=4, color="darkorange")
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(ys, [f"{r['table']} {r['setting']}  (vs {r['reference']})" for r in claims], fontsize=7)
    ax.set_xlabel("difference in linear top-1 (points)")
    handles = [plt.Line2D([], [], marker="o", ls="", color=c, label=v) for v, c in VERDICT_COLORS.items()]
    handles.append(plt.Line2D([], [], marker="D", ls="", color="darkorange", label="paper (ImageNet scale)"))
    ax.legend(handles=handles, fontsize=7, loc="lower right")
    ax.figure.tight_layout()
    return ax.figure


def difference_grid(rows: list[str], cols: list[str], diff: np.ndarray, ci: np.ndarray, verdicts: list[list[str]],
                    title: str = "", ax=None):
    """A phase diagram over two factors: each cell the FT-minus-baseline difference (points), coloured on a
    diverging symmetric-log scale centred at zero, annotated with its 95 % interval and verdict; empty cells: not run."""
    import matplotlib.pyplot as plt

    diff, ci = np.asarray(diff, dtype=float), np.asarray(ci, dtype=float)
    if ax is None:
        _, ax = plt.subplots(figsize=(1.9 * len(cols) + 2.5, 0.9 * len(rows) + 1.4))
    from matplotlib.colors import SymLogNorm

    bound = max(1.0, float(np.nanmax(np.abs(diff)))) if np.isfinite(diff).any() else 1.0
    # linear within +-1 point, logarithmic beyond: a 1-point effect stays visible beside a 40-point collapse
    norm = SymLogNorm(linthresh=1.0, vmin=-bound, vmax=bound, base=10)
    im = ax.imshow(np.ma.masked_invalid(diff), cmap="RdBu", norm=norm, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(cols)):
            if np.isnan(diff[i, j]):
                ax.text(j, i, "not run", ha="center", va="center", fontsize=8, color="gray")
                continue
            band = "" if np.isnan(ci[i, j]) else f" ± {ci[i, j]:.1f}"
            ink = "white" if abs(norm(diff[i, j]) - 0.5) > 0.3 else "black"  # legible on the dark ends of the scale
            ax.text(j, i, f"{diff[i, j]:+.1f}{band}\n{verdicts[i][j]}", ha="center", va="center", fontsize=8, color=ink)
    ax.set_xticks(range(len(cols)), cols, fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.figure.colorbar(im, ax=ax, label="FT minus baseline (points)")
    ax.set_title(title, fontsize=10)
    ax.figure.tight_layout()
    return ax.figure


# ---------------------------------------------------------------------------------------------------
# Explorers that respond in the static HTML (plotly sliders over precomputed data, no kernel needed)
# and their ipywidgets counterparts for a live kernel.
# ---------------------------------------------------------------------------------------------------


def capacity_figure(rows: list[Mapping], readout: str = "linear top-1"):
    """Is it the network? (:func:`ftcl_core.diagnosis.capacity_rows`): left, each encoder's readout for the baseline
    and for FT from the first step (seed mean, 95 % interval) against its parameters; right, each arm's final
    effective rank of the features. Encoders without stored runs are named on the axis but left empty."""
    import matplotlib.pyplot as plt

    fig, (ax, axr) = plt.subplots(1, 2, figsize=(11, 3.6))
    x = np.array([r["parameters"] for r in rows], float)
    for arm, label, colour in (("baseline", "baseline", "tab:blue"), ("ft", "FT from the first step", "tab:red")):
        mean = np.array([r[arm] for r in rows], float)
        ci = np.nan_to_num(np.array([r[f"{arm}_ci95"] for r in rows], float))
        ax.errorbar(x, mean, yerr=ci, marker="o", capsize=3, color=colour, label=label)
        axr.plot(x, [r[f"{arm}_erank"] for r in rows], marker="o", color=colour, label=label)
    for a in (ax, axr):
        a.set_xscale("log")
        a.set_xticks(x, [f"{r['comparison']}\n{r['parameters'] / 1e6:.1f} M" for r in rows], fontsize=8)
        a.minorticks_off()
    ax.set_ylabel(f"{readout} (%)")
    axr.set_ylabel("final effective rank of the features")
    ax.legend(loc="center right", fontsize=8, frameon=False)  # clear of the smallest encoder's points
    ax.set_title("readout against the encoder's parameters", fontsize=9)
    axr.set_title("how many directions the features keep", fontsize=9)
    fig.tight_layout()
    return fig


def predictor_figure(report: Mapping, features: tuple[str, ...] | None = None):
    """The FT-outcome predictor (``results/predictor.json``, :func:`ftcl_core.predict.write_report`): left, each
    stored FT run's held-out P(loses) against its paired difference, one colour per data set; right, the weights of
    the model fitted on every run (standardised features: how much one standard deviation moves the log-odds)."""
    import matplotlib.pyplot as plt

    ex = report["examples"]
    fig, (ax, axw) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1.4, 1]})
    for data, colour in (("shapes", "tab:blue"), ("fashion_mnist", "tab:orange")):
        pts = [(e["diff"], e["p_loss_held_out"]) for e in ex
               if e["data"] == data and np.isfinite(e["p_loss_held_out"])]
        if pts:
            d, p = zip(*pts)
            label = {"shapes": "shapes", "fashion_mnist": "Fashion-MNIST"}[data]
            ax.scatter(d, p, s=14, alpha=0.7, color=colour, label=label)
    ax.axvline(0, color="grey", lw=0.8)
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("paired difference, FT minus baseline (linear top-1 points)")
    ax.set_ylabel("held-out P(FT loses)")
    ax.legend(loc="lower left", fontsize=8, frameon=False)
    ax.set_title("each run predicted by a model that never saw its experiment", fontsize=9)
    names = list(features or report["features"])
    weights = report["model"]["sign_weights"][1:] if report.get("model") else [0.0] * len(names)
    axw.barh(range(len(names)), weights, color=["tab:red" if w > 0 else "tab:green" for w in weights])
    axw.set_yticks(range(len(names)), names, fontsize=8)
    axw.axvline(0, color="grey", lw=0.8)
    axw.invert_yaxis()
    axw.set_xlabel("weight on the log-odds of losing (per s.d.)")
    axw.set_title("the model fitted on every run", fontsize=9)
    fig.tight_layout()
    return fig


def beta_density(x: np.ndarray, a: float) -> np.ndarray:
    """Beta(a, a) density on (0, 1)."""
    from math import lgamma

    x = np.clip(x, 1e-6, 1 - 1e-6)
    log_b = 2 * lgamma(a) - lgamma(2 * a)
    return np.exp((a - 1) * (np.log(x) + np.log1p(-x)) - log_b)


def transformed_score_density(s: float, a: float, grid: np.ndarray) -> np.ndarray:
    """Density of S' = S + 2 l (1 - l)(1 - S) (eq. 4) for l ~ Beta(a, a) + 1, on ``grid``.

    With u = l - 1 in (0, 1): S' = S - 2 u (1 + u)(1 - S), monotone in u, so the density is the Beta
    density at the inverse, divided by |dS'/du| = 2 (1 + 2u)(1 - S).
    """
    if s >= 1:
        return np.zeros_like(grid)
    c = (s - grid) / (2 * (1 - s))  # u^2 + u - c = 0
    u = (-1 + np.sqrt(np.maximum(1 + 4 * c, 0))) / 2
    inside = (c > 0) & (u < 1)
    dens = np.zeros_like(grid, dtype=float)
    dens[inside] = beta_density(u[inside], a) / (2 * (1 + 2 * u[inside]) * (1 - s))
    return dens


def bound_explorer(alphas=(0.2, 0.6, 1.0, 1.6, 2.0, 4.0), scores=(0.9, 0.6, 0.3, 0.0)):
    """Plotly figure with an alpha slider: Beta(a, a) + 1 density of lambda (left) and the density of the
    transformed positive score S' for several S (right), eq. 4 with its range [-4 + 5S, S] shaded."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    lam = np.linspace(1.001, 1.999, 300)
    grid = np.linspace(-4, 1, 600)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("λ ~ Beta(α, α) + 1", "density of S' (eq. 4)"))
    n_traces = 1 + len(scores)
    for i, a in enumerate(alphas):
        visible = i == len(alphas) // 2
        fig.add_trace(go.Scatter(x=lam, y=beta_density(lam - 1, a), name=f"α={a}", visible=visible,
                                 line=dict(color="#4c72b0")), 1, 1)
        for s in scores:
            fig.add_trace(go.Scatter(x=grid, y=transformed_score_density(s, a, grid), name=f"S={s}",
                                     visible=visible), 1, 2)
    steps = []
    for i, a in enumerate(alphas):
        vis = [False] * (n_traces * len(alphas))
        vis[i * n_traces : (i + 1) * n_traces] = [True] * n_traces
        steps.append(dict(method="update", args=[{"visible": vis}], label=str(a)))
    fig.update_layout(sliders=[dict(active=len(alphas) // 2, currentvalue={"prefix": "α = "}, steps=steps, pad={"t": 50})],
                      height=460, margin=dict(t=40, b=10), legend=dict(orientation="h", y=-0.45))
    fig.update_xaxes(title_text="λ", row=1, col=1)
    fig.update_xaxes(title_text="S'", row=1, col=2)
    fig.update_yaxes(title_text="density", row=1, col=1)
    fig.update_yaxes(title_text="density", row=1, col=2)
    return fig


def lambda_explorer(lams: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(21))):
    """Plotly figure with a lambda slider: S' against S (eq. 4) with the extrapolation range shaded."""
    import plotly.graph_objects as go

    from ftcl_core.transforms import score_range, transformed_positive_score

    s = np.linspace(-1, 1, 201)
    lo, hi = score_range(s)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=s, y=hi, line=dict(width=0), showlegend=False, hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=s, y=lo, fill="tonexty", line=dict(width=0), name="range for λ in [1, 2]",
                             hoverinfo="skip"))
    for i, lam in enumerate(lams):
        fig.add_trace(go.Scatter(x=s, y=transformed_positive_score(s, lam), name=f"S' at λ={lam}",
                                 visible=i == len(lams) * 3 // 4))
    steps = []
    for i, lam in enumerate(lams):
        vis = [True, True] + [j == i for j in range(len(lams))]
        steps.append(dict(method="update", args=[{"visible": vis}], label=str(lam)))
    fig.update_layout(sliders=[dict(active=len(lams) * 3 // 4, currentvalue={"prefix": "λ = "}, steps=steps)],
                      xaxis_title="S = z_q · z_k", yaxis_title="S'", height=420, margin=dict(t=30, b=10),
                      yaxis_range=[-9.2, 1.2])
    return fig


def runs_explorer(runs: Mapping[str, Mapping[str, np.ndarray]], window: int = 10, points: int = 300):
    """Plotly figure with a dropdown over runs: Mean(pos), Mean(neg), Var(neg) (raw cosines, solid; after
    FT, dotted) against the fractional epoch; the static-HTML run explorer.  Each smoothed curve keeps
    ``points`` evenly spaced steps, so a page with a hundred runs stays a few MB."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    cols = ("pos_mean", "neg_mean", "neg_var")
    fig = make_subplots(rows=1, cols=3, subplot_titles=[STAT_LABELS[c] for c in cols])
    labels = list(runs)
    per_run = 6
    for i, label in enumerate(labels):
        m = runs[label]
        x = _progress(m)
        keep = np.unique(np.linspace(0, len(x) - 1, min(points, len(x))).round().astype(int))
        for j, c in enumerate(cols):
            fig.add_trace(go.Scatter(x=x[keep], y=smooth(m[c], window)[keep], name=f"{label}: {c}", visible=i == 0,
                                     line=dict(color="#4c72b0")), 1, j + 1)
            fig.add_trace(go.Scatter(x=x[keep], y=smooth(m["ft_" + c], window)[keep], name=f"{label}: {c} after FT",
                                     visible=i == 0, line=dict(color="#dd8452", dash="dot")), 1, j + 1)
    buttons = []
    for i, label in enumerate(labels):
        vis = [False] * (per_run * len(labels))
        vis[i * per_run : (i + 1) * per_run] = [True] * per_run
        buttons.append(dict(method="update", args=[{"visible": vis}], label=label))
    fig.update_layout(updatemenus=[dict(buttons=buttons, direction="down", x=0, y=1.32, xanchor="left", yanchor="bottom")],
                      height=420, showlegend=False, margin=dict(t=110, b=10, l=50, r=10))
    fig.update_xaxes(title_text="epoch")
    for j, c in enumerate(cols):
        fig.update_yaxes(title_text=STAT_LABELS[c], row=1, col=j + 1)
    return fig


def plotly_html(fig, include_js: bool = True):
    """An IPython HTML object of a plotly figure with plotly.js embedded (no CDN: the static book works
    offline).  Embed the library once per page (``include_js=True`` for the first figure only)."""
    from IPython.display import HTML

    return HTML(fig.to_html(full_html=False, include_plotlyjs=bool(include_js), config={"displaylogo": False}))


def live_widget(make_widget):
    """The widget ``make_widget()`` builds, in a live kernel; in the static book build (``FTCL_BOOK_BUILD=1``,
    set by ``make book``) a note instead, and the widget is never built: ipywidgets need a kernel, the static
    explorers above already respond, and building one during the build froze the executing client at random
    (jupyter/nbclient#312: a widget's comm messages while a cell executes)."""
    import os

    if os.environ.get("FTCL_BOOK_BUILD") == "1":
        from IPython.display import Markdown

        return Markdown("*The ipywidgets version of this explorer runs in a live kernel (JupyterLab, Colab).*")
    return make_widget()


def html_table(header: list[str], rows: list[list[str]], caption: str | None = None, collapsed: str | None = None):
    """An IPython HTML table (escaped), which renders the same in Jupyter and in the static book; a long
    table can start ``collapsed`` behind a summary line."""
    from html import escape

    from IPython.display import HTML

    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    table = f'<table class="table">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    if collapsed:
        table = f"<details><summary>{escape(collapsed)}</summary>{table}</details>"
    return HTML(table)


def markdown_html(text: str):
    """Markdown with tables as an IPython HTML object: the static book renders ``text/markdown`` outputs
    without table support (tables came out as raw ``| a | b |`` text), HTML renders everywhere."""
    from IPython.display import HTML
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable("table").render(text)
    return HTML(html.replace("<table>", '<table class="table">'))


def source_code(*objects, caption: str | None = None):
    """The source of functions or classes (``inspect.getsource``), highlighted, as an IPython HTML object with
    the file and lines it comes from: a chapter shows the code it is about, as it runs today."""
    import inspect
    from html import escape
    from pathlib import Path

    from IPython.display import HTML
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    root = Path(__file__).resolve().parent.parent
    parts = []
    for obj in objects:
        lines, first = inspect.getsourcelines(obj)
        path = Path(inspect.getsourcefile(obj)).resolve()
        where = path.relative_to(root) if path.is_relative_to(root) else path.name
        parts.append(f"<p><code>{escape(str(where))}</code>, lines {first}-{first + len(lines) - 1}</p>"
                     + highlight("".join(lines), PythonLexer(), HtmlFormatter(noclasses=True)))
    cap = f"<p>{escape(caption)}</p>" if caption else ""
    return HTML(cap + "".join(parts))
