"""Diagrams that explain the method: MoCo's pipeline, FT's geometry on the sphere, and the eq. 4 score bound."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ftcl_core.transforms import score_range, transformed_positive_score

if TYPE_CHECKING:  # annotations only: matplotlib loads when a figure is drawn
    pass
from ftcl_core.pages.legibility import BOOK_WIDTH_IN, TEXT_PT, TITLE_PT, _legend_beside


def moco_pipeline(ft: bool = True):
    """One MoCo step with FT as a block diagram (the paper's Fig 2): two views of an image through the query encoder and
    the momentum key encoder (eq. 2), FT on their outputs and on the queue (eqs. 3 and 5), the logits and InfoNCE
    (eq. 1); the clean keys enter the queue, and the loss's gradient reaches the query encoder only.  ``ft=False``:
    plain MoCo, the scores taken from the features and the queue as they are (Learn 2, before FT is taught)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(BOOK_WIDTH_IN, 3.0 if ft else 2.2), layout="constrained")
    ax.set_xlim(0, 10.4)
    ax.set_ylim(0, 3.7)
    ax.axis("off")
    for x, y, text, colour in (
            (0.55, 2.0, "image", "0.9"), (2.0, 3.3, "view 1", "0.9"), (2.0, 0.7, "view 2", "0.9"),
            (3.95, 3.3, "query encoder $f_q$", "#cfe2f3"), (3.95, 0.7, "key encoder $f_k$", "#cfe2f3"),
            (6.6, 2.3, "FT\nextrapolate $z_q, z_{k^+}$ (eq. 3)\ninterpolate the queue (eq. 5)" if ft else
             "cosines $S$: $z_q \\cdot z_{k^+}$ and\n$z_q \\cdot$ each queued key", "#f4cccc" if ft else "#eeeeee"),
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
    arrow((4.85, 0.55), (5.75, 0.45), "enqueue the clean keys" if ft else "enqueue the keys", (5.3, 0.12))
    arrow((6.6, 0.75), (6.6, 1.7), "negatives", (6.72, 1.22), "left")
    arrow((7.85, 2.3), (8.45, 2.3), "$\\hat S$" if ft else "$S$", (8.15, 2.55))
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
    for v, text in ((a, "$z_{neg}$"), (b, "$z_{\\pi}$")):
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
