"""InfoNCE (eq. 1) and the MoCo loss with the feature transformations, as the released code runs them.

Released-code semantics (shared/paper/NOTES.md), reproduced by :func:`moco_ft_logits`:
FT acts on the L2-normalised features inside the loss, just before the logits; the extrapolated query is
also used against the negatives; gradient flows through the mixed key (it holds ``(1-l) z_q``); the
queue is transformed only for this step, the clean keys are what gets enqueued (by the caller).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ftcl_core import transforms as T


@dataclass(frozen=True)
class FTConfig:
    """Which feature transformations to apply, and how (the ``ft.*`` keys of a run config)."""

    pos: bool = False                 # positive extrapolation, eq. 3
    pos_mode: str = "extrapolate"     # or "interpolate" (Table 4 ablation)
    alpha_ex: float = 2.0
    neg: bool = False                 # negative interpolation, Sec 4.2
    neg_mode: str = "interpolate"     # or "extrapolate" (Supp G.1)
    alpha_in: float = 1.6
    union_queue: bool = False         # negatives = Z' U Z_neg (Table 6)
    hard: bool = False                # hard negatives mixed with the query (Supp G.2)
    hard_a: float = 2.0
    hard_b: float = 1.0
    granularity: str = "step"         # "step" | "sample" | "dim"
    renorm_pos: bool = False          # Supp F: re-normalise q', k'
    renorm_neg: bool = False          # Supp F: re-normalise the transformed queue
    start_epoch: int = 0              # Table 7

    def __post_init__(self) -> None:
        for name in ("alpha_ex", "alpha_in", "hard_a", "hard_b"):
            if getattr(self, name) <= 0:
                raise ValueError(f"ft.{name}={getattr(self, name)} must be > 0 (a Beta parameter).")
        if self.pos_mode not in ("extrapolate", "interpolate"):
            raise ValueError(f"ft.pos_mode={self.pos_mode!r}: choose 'extrapolate' or 'interpolate'.")
        if self.neg_mode not in ("interpolate", "extrapolate"):
            raise ValueError(f"ft.neg_mode={self.neg_mode!r}: choose 'interpolate' or 'extrapolate'.")
        T.lambda_shape(self.granularity, 1, 1)  # validates the name

    @property
    def any(self) -> bool:
        return self.pos or self.neg or self.hard


def info_nce(logits: torch.Tensor) -> torch.Tensor:
    """eq. 1 with the positive in column 0: ``-log softmax(logits)[:, 0]`` (logits already divided by tau)."""
    return F.cross_entropy(logits, torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device))


def moco_logits(q: torch.Tensor, k: torch.Tensor, negatives: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive scores ``(N,)`` and negative scores ``(N, K)``: cosines for unit inputs."""
    return (q * k).sum(1), q @ negatives.T


def moco_ft_logits(
    q: torch.Tensor, k: torch.Tensor, queue: torch.Tensor, ft: FTConfig, gen: torch.Generator, active: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive ``(N,)`` and negative ``(N, K')`` scores after FT (before the temperature).

    ``active=False`` (before ``ft.start_epoch``) gives the plain MoCo scores.  Random draws come from
    ``gen`` on the CPU and are moved to the features' device.
    """
    if not (active and ft.any):
        return moco_logits(q, k, queue)
    n, d = q.shape
    dev = q.device
    q_clean = q
    if ft.pos:  # eq. 3 (extrapolation) or Table 4 (interpolation)
        shift = 1.0 if ft.pos_mode == "extrapolate" else 0.0
        lam = T.sample_lambda(ft.alpha_ex, ft.granularity, n, d, gen, shift=shift).to(dev)
        q, k = T.extrapolate_positive(q, k, lam)
        if ft.renorm_pos:  # Supp F
            q, k = T.renormalize(q), T.renormalize(k)
    negatives = queue
    if ft.neg:  # Sec 4.2 (interpolation) or Supp G.1 (extrapolation)
        shift = 1.0 if ft.neg_mode == "extrapolate" else 0.0
        lam_n = T.sample_lambda(ft.alpha_in, ft.granularity, queue.shape[0], d, gen, shift=shift).to(dev)
        perm = T.sample_permutation(queue.shape[0], gen).to(dev)
        negatives = T.interpolate_negatives(queue, lam_n, perm)
        if ft.renorm_neg:  # Supp F
            negatives = T.renormalize(negatives)
        if ft.union_queue:  # Table 6: Z' U Z_neg
            negatives = torch.cat([negatives, queue], 0)
    l_pos = (q * k).sum(1)
    if ft.hard:  # Supp G.2, one hard queue per query, never materialised
        lam_h = T.sample_beta(ft.hard_a, ft.hard_b, T.lambda_shape(ft.granularity, n, d), gen).to(dev)
        l_neg = T.hard_negative_logits(q, negatives, lam_h, z_anchor=q_clean)
    else:
        l_neg = q @ negatives.T
    return l_pos, l_neg


def logits_from_scores(l_pos: torch.Tensor, l_neg: torch.Tensor, tau: float) -> torch.Tensor:
    """Stack positive and negative scores into InfoNCE logits divided by the temperature ``tau``."""
    if tau <= 0:
        raise ValueError(f"temperature tau={tau} must be > 0; MoCo v1 uses 0.07, v2 0.2.")
    return torch.cat([l_pos.unsqueeze(1), l_neg], dim=1) / tau
