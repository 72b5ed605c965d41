"""Figures drawn from stored runs: score statistics (Fig 3, Supp A), gradient landscapes (Fig 4, Supp C),
the eq. 4 score bound, and accuracy tables.  Every function takes arrays from a run folder
(:class:`ftcl_core.runs.RunDir`) and returns a matplotlib Figure; nothing here trains or computes results.
"""

from __future__ import annotations

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
    axes[0][-1].legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def _progress(m: Mapping[str, np.ndarray]) -> np.ndarray:
    """Fractional epoch of every step: epoch + position of the step inside its epoch."""
    epoch, step = np.asarray(m["epoch"]), np.asarray(m["step"])
    steps_per_epoch = max(1, int(np.sum(epoch == epoch[0])))
    return step / steps_per_epoch


def score_trajectory_3d(runs: Mapping[str, Mapping[str, np.ndarray]], window: int = 10):
    """Fig 5 style: each run as a curve in (Mean(pos), Mean(neg), Var(neg)) space, coloured by time."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(6, 5))
    ax = fig.add_subplot(projection="3d")
    for label, m in runs.items():
        ax.plot(smooth(m["pos_mean"], window), smooth(m["neg_mean"], window), smooth(m["neg_var"], window),
                label=label, lw=1.3)
    ax.set_xlabel("Mean(pos)")
    ax.set_ylabel("Mean(neg)")
    ax.set_zlabel("Var(neg)")
    ax.legend(fontsize=8)
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


def accuracy_bars(labels: list[str], means: list[float], ci95: list[float], baseline: float | None = None,
                  paper: list[float] | None = None, title: str = ""):
    """Bar chart of readout accuracy (mean +- 95 % CI), the random-init baseline as a line, the paper's
    numbers as markers on a second axis when given (their scale differs: IN-100 vs the embedded data)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(4, 0.9 * len(labels) + 1.5), 3.4))
    xs = np.arange(len(labels))
    ax.bar(xs, means, yerr=ci95, capsize=3, color="#4c72b0", label="ours (linear top-1)")
    if baseline is not None:
        ax.axhline(baseline, color="crimson", ls="--", lw=1, label="random-init encoder")
    ax.set_xticks(xs, labels, rotation=30, ha="right")
    ax.set_ylabel("linear top-1 (%)")
    ax.set_title(title)
    if paper is not None:
        ax2 = ax.twinx()
        ax2.plot(xs, paper, "o", color="darkorange", label="paper (IN-100)")
        ax2.set_ylabel("paper top-1 (%)", color="darkorange")
        ax2.legend(loc="upper right", fontsize=8)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig
