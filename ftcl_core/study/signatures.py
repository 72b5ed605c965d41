"""What a run's stored statistics say about collapse (Supp A, Figs 3-4), in a few numbers: when Mean(neg) of the raw
cosines first passes a level, the collapse signature a screen prints, and how much the statistics swing."""

from __future__ import annotations

import numpy as np


def volatility(neg_mean: np.ndarray, grad_norms_per_epoch: np.ndarray) -> tuple[float, float]:
    """How much a run's training swings, in two numbers: the standard deviation of the step-to-step change of
    Mean(neg) (Supp A's statistic), and of the epoch-to-epoch change of the summed layer gradient norms
    (Supp C's landscape).  The paper reads collapse off these swings (Sec 3.3, Figs 3-4)."""
    total = np.asarray(grad_norms_per_epoch).sum(1)
    return float(np.std(np.diff(np.asarray(neg_mean)))), float(np.std(np.diff(total)))


def first_step_above(neg_mean: np.ndarray, threshold: float = 0.9) -> int | None:
    """The first step at which Mean(neg) of the raw cosines passes ``threshold`` (None: never)."""
    above = np.flatnonzero(np.asarray(neg_mean) > threshold)
    return int(above[0]) if above.size else None


def collapse_signature(neg_mean: np.ndarray, neg_var: np.ndarray, threshold: float = 0.9,
                       early_steps: int = 100) -> dict[str, float | int | None]:
    """The Supp A reading of collapse in a few numbers: the first step at which Mean(neg) exceeds
    ``threshold`` (None if never: the negatives are almost the positives, every image maps near one point),
    the smallest Var(neg) of the first ``early_steps`` steps, and Mean(neg), Var(neg) at the end."""
    neg_mean, neg_var = np.asarray(neg_mean), np.asarray(neg_var)
    return {"first_step_above": first_step_above(neg_mean, threshold),
            "early_min_var": float(neg_var[:early_steps].min()),
            "final_neg_mean": float(neg_mean[-1]), "final_neg_var": float(neg_var[-1])}
