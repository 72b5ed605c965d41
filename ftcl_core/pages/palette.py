"""One palette for every figure of the book: a verdict's colour and marker, the paper's mark, FT's side.

A reader meets the same mark for the same thing on every page: the paper's own effect is always a hollow orange
diamond; a verdict always its colour and marker (no verdict uses the diamond); where no verdict is drawn, a cost red
and a gain blue; a comparison the paper makes no claim of, dark grey.
"""

from __future__ import annotations

VERDICT_COLORS = {  # one colour per verdict word of ftcl_core.study.results.verdicts (greens: the paper's side)
    "matches the paper": "#2ca02c", "larger than the paper": "#006d2c", "smaller than the paper": "#5db85d",
    "no effect of the paper's size": "#f07470", "opposite to the paper": "#d62728", "equivalent": "#1f77b4",
    "not equivalent": "#9467bd", "undecided": "#c7c7c7"}
# and one marker, so that a reader who cannot tell red from green still can: circles where a claim reaches the
# paper's side (a triangle pointing up where it goes beyond the paper's size), squares where it goes the other way or
# falls short of its size, hollow for the weaker of each pair; the diamond is the paper's alone (PAPER_MARK)
VERDICT_MARKERS = {"matches the paper": ("o", True), "larger than the paper": ("^", True),
                   "smaller than the paper": ("o", False), "opposite to the paper": ("s", True),
                   "no effect of the paper's size": ("s", False), "equivalent": ("v", True),
                   "not equivalent": ("P", True), "undecided": ("p", False)}  # verdict -> (marker, filled)

PAPER_COLOR = "darkorange"
PAPER_MARK = {"marker": "D", "ls": "", "ms": 5, "mfc": "none", "mec": PAPER_COLOR, "color": PAPER_COLOR, "mew": 1.2}
"""The paper's own number or effect, on every figure: a hollow orange diamond (matplotlib ``plot`` keywords)."""

NO_CLAIM_COLOR = "#555555"
"""A comparison of this book's own, of which the paper claims nothing (chapter 11's +pos alone from 30 %)."""

SIDE_COLORS = {"costs": "#d62728", "gains": "#1f77b4", "too small to tell from zero": "#8c8c8c"}
"""FT's side of zero, where a figure draws no verdict (the Learn part): red where it costs, blue where it gains."""


def verdict_style(verdict: str) -> dict:
    """Matplotlib marker keywords for ``verdict`` (:data:`VERDICT_COLORS`, :data:`VERDICT_MARKERS`)."""
    marker, filled = VERDICT_MARKERS[verdict]
    colour = VERDICT_COLORS[verdict]
    return {"marker": marker, "color": colour, "markerfacecolor": colour if filled else "white",
            "markeredgecolor": colour, "markeredgewidth": 1.0 if filled else 1.6}  # a hollow mark drawn bold enough
