"""The losses of the methods beside MoCo (Table 7 and Supp E): SimCLR's in-batch scores with FT, BYOL's and
SimSiam's losses on scores after FT, SwAV's swapped prediction with its Sinkhorn codes, and the in-batch scores the
statistics read for methods without negatives.  MoCo's loss and FT itself are :mod:`ftcl_core.losses`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ftcl_core import distributed, transforms
from ftcl_core.arguments import (
    MIN_TEMPERATURE,
    UNIT_NORM_TOL,
    check_dense,
    check_global_rows,
    check_views,
    described,
    is_count,
    is_real,
    off_unit_norm,
    temperature,
)
from ftcl_core.config import FTConfig
from ftcl_core.losses import _check_when, moco_ft_logits

# the module's public names: each checks its arguments and names the fix; the rest are building blocks that
# take what these pass them
__all__ = ["byol_loss", "in_batch_negative_scores", "other_sample_mask", "simclr_ft_logits", "simsiam_loss",
           "sinkhorn", "swav_loss"]


def symmetric_pairs(v1: torch.Tensor, v2: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Anchors ``[v1; v2]`` and their positives ``[w2; w1]``: both directions of a two-view loss at once."""
    return torch.cat([v1, v2]), torch.cat([w2, w1])


def symmetric_rows(rows: torch.Tensor, n_global: int) -> torch.Tensor:
    """Global indices of the symmetric anchors ``[view 1; view 2]`` of the local samples ``rows``."""
    return torch.cat([rows, rows + n_global])


def other_sample_mask(rows: torch.Tensor, n_global: int) -> torch.Tensor:
    """``(2N, 2M)`` mask of the in-batch negatives of anchors ``[view 1; view 2]``
    against ``[bank 1; bank 2]``.

    ``rows`` are the global indices (in ``0..M-1``) of this process's N samples; an
    anchor's own column and its positive's column are excluded, every other sample of
    either view is a negative."""
    n = rows.shape[0] if isinstance(rows, torch.Tensor) else 0
    check_global_rows(rows, n_global, n)
    own = symmetric_rows(rows, n_global)
    pos = torch.cat([rows + n_global, rows])
    keep = torch.ones(2 * n, 2 * n_global, dtype=torch.bool, device=rows.device)
    idx = torch.arange(2 * n, device=rows.device)
    keep[idx, own] = False
    keep[idx, pos] = False
    return keep


def _check_simclr_inputs(z1: torch.Tensor, z2: torch.Tensor, bank1: torch.Tensor, bank2: torch.Tensor,
                         rows: torch.Tensor) -> None:
    """:func:`simclr_ft_logits`' arguments: normalised N x C views, M x C banks (M >= 2), N global rows."""
    _check_views(z1=z1, z2=z2, bank1=bank1, bank2=bank2)
    if len(dtypes := {str(x.dtype).removeprefix("torch.") for x in (z1, z2, bank1, bank2)}) > 1:
        raise TypeError(f"simclr_ft_logits: z1, z2, bank1 and bank2 must share one dtype, got {sorted(dtypes)}: cast "
                        "them to one, e.g. .float().")
    if z1.shape != z2.shape or bank1.shape != bank2.shape or bank1.shape[1:] != z1.shape[1:]:
        raise ValueError(f"simclr_ft_logits: the views z1 {tuple(z1.shape)} and z2 {tuple(z2.shape)} must share one N x C, "
                         f"and the banks bank1 {tuple(bank1.shape)} and bank2 {tuple(bank2.shape)} one M x C.")
    if bank1.shape[0] < 2:
        raise ValueError("simclr_ft_logits: a batch of one sample has no in-batch negatives: use at least 2.")
    check_global_rows(rows, bank1.shape[0], z1.shape[0])
    if rows.device.type == "cpu" and (len(rows.unique()) != len(rows) or not torch.allclose(
            bank1.detach()[rows], z1.detach(), rtol=0, atol=0, equal_nan=True)):  # a diverged step's NaN: its own line
        raise ValueError("simclr_ft_logits: rows must give each of z1's samples its own row of bank1 (bank1[rows] is "
                         "z1; one process: torch.arange(N)), or a mixed negative would be the anchor itself.")


def _check_views(**views: object) -> None:
    """SimCLR's views and banks: dense floating-point N x C tensors, of unit rows on the CPU (as ft.logits asks)."""
    check_dense("simclr_ft_logits", **views)
    for name, x in views.items():
        if not (isinstance(x, torch.Tensor) and x.dim() == 2 and x.is_floating_point()):
            raise TypeError(f"simclr_ft_logits: {name} must be a floating-point N x C tensor of normalised features, "
                            f"got {described(x)}: pass F.normalize(torch.as_tensor(x), dim=1).")
        if x.device.type == "cpu" and (worst := off_unit_norm(x)) > UNIT_NORM_TOL:
            raise ValueError(f"simclr_ft_logits: {name} must hold L2-normalised features (one per row), but a row's "
                             f"squared norm is off 1 by {worst:.3g}: pass F.normalize({name}, dim=1).")


def simclr_ft_logits(
    z1: torch.Tensor, z2: torch.Tensor, bank1: torch.Tensor, bank2: torch.Tensor,
    rows: torch.Tensor, ft: FTConfig, gen: transforms.Draws, active: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """SimCLR's symmetric NT-Xent scores with FT: positives ``(2N,)`` and in-batch
    negatives ``(2N, 2M-2)``.

    ``z1, z2`` are this process's normalised views, ``bank1, bank2`` both views of
    the whole (all-rank) batch of M samples (``z1, z2`` themselves in one process),
    ``rows`` the global indices of the local samples.  FT is MoCo's with the in-batch
    bank in place of the queue (Supp E.1, Table 7's SimCLR row): the positive pair is
    extrapolated (eq. 3), the bank interpolated (Sec 4.2); a mixed negative is excluded
    by the index of the sample it was drawn from, so it may hold a share of the anchor,
    as a mixed queue entry can in MoCo.
    """
    _check_simclr_inputs(z1, z2, bank1, bank2, rows)
    if isinstance(ft, FTConfig):
        _check_when("simclr_ft_logits", ft)
    anchors, positives = symmetric_pairs(z1, z2, z1, z2)
    bank = torch.cat([bank1, bank2])
    m = bank1.shape[0]
    l_pos, l_neg, _ = moco_ft_logits(anchors, positives, bank, ft, gen, active,
                                     symmetric_rows(rows, m), 2 * m, queue_layout="KC")
    keep = other_sample_mask(rows, bank1.shape[0])
    keep = keep.repeat(1, l_neg.shape[1] // bank.shape[0])  # union queue: bank twice
    return l_pos, l_neg[keep].view(anchors.shape[0], -1)


def in_batch_negative_scores(anchors: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
    """Cosines of symmetric anchors ``[a1; a2]`` with every other sample's features ``[p2; p1]`` ``(2N, 2N-2)``
    (the "negatives" of the Supp A statistics for methods without negatives).

    BYOL and SimSiam have no negatives; these scores only feed the statistics (a collapsed encoder drives
    them to 1, as it does Mean(neg) in MoCo)."""
    check_views("in_batch_negative_scores", anchors, positives)
    if len(anchors) < 4 or len(anchors) % 2:  # one sample has no other sample to score against
        raise ValueError(f"in_batch_negative_scores: anchors must stack two views of N >= 2 samples ([a1; a2], 2N rows), "
                         f"got {len(anchors)} rows.")
    n = anchors.shape[0] // 2
    bank = torch.cat([positives[n:], positives[:n]])  # [view-1 features; view-2 features]
    keep = other_sample_mask(torch.arange(n, device=anchors.device), n)
    return (anchors @ bank.T)[keep].view(2 * n, -1)


def byol_loss(l_pos: torch.Tensor) -> torch.Tensor:
    """BYOL's loss, the mean of ``2 - 2 cos(p, z)`` over both directions, on scores after FT (eq. 3).

    The mean over both directions is half of BYOL's summed ``L + L~``, so the same lr takes half the step
    (the configs' lr is chosen for this scale)."""
    _check_positive_scores("byol_loss", l_pos)
    return (2 - 2 * l_pos).mean()


def simsiam_loss(l_pos: torch.Tensor) -> torch.Tensor:
    """SimSiam's loss, the mean negative cosine over both directions, on scores after FT (eq. 3)."""
    _check_positive_scores("simsiam_loss", l_pos)
    return -l_pos.mean()


def _check_positive_scores(caller: str, l_pos: object) -> None:
    """BYOL's and SimSiam's scores: a dense floating-point tensor of the pairs' cosines ``(2N,)``."""
    check_dense(caller, l_pos=l_pos)
    if not (isinstance(l_pos, torch.Tensor) and l_pos.is_floating_point() and l_pos.dim() == 1 and len(l_pos)):
        raise TypeError(f"{caller}: l_pos must be a floating-point tensor of the pairs' cosines (2N,), got "
                        f"{described(l_pos)}: pass "
                        "the scores of base.predictive_scores.")


def _logsumexp_all_ranks(x: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """log-sum-exp over ``dim`` (None: everything) of this rank's values and every other rank's."""
    local = torch.logsumexp(x.flatten() if dim is None else x, dim=0 if dim is None else dim, keepdim=dim is not None)
    m = distributed.max_over_ranks(local)
    return m + torch.log(distributed.sum_over_ranks(torch.exp(local - m)))


def _check_scores(caller: str, **scores: object) -> None:
    """Each of ``scores`` is a floating-point ``B x C`` tensor with B, C >= 1 (prototype scores), else named."""
    check_dense(caller, **scores)
    for name, x in scores.items():
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() != 2 or 0 in x.shape:
            raise TypeError(f"{caller}: {name} must be a floating-point B x C tensor (each sample's scores against "
                            f"the C prototypes, B, C >= 1), got {described(x)}: pass z @ prototypes.T of normalised z.")


@torch.no_grad()
def sinkhorn(scores: torch.Tensor, epsilon: float = 0.05, iters: int = 3) -> torch.Tensor:
    """SwAV's codes ``(B, C)``: Sinkhorn-Knopp on ``exp(scores / epsilon)`` so that the (all-rank) batch
    spreads equally over the C prototypes; each row sums to 1 (Caron et al. 2020, Sec 3.1; the SwAV row of
    Table 7 and Supp E).

    SwAV's iterations, run in the log domain: the same numbers, but no overflow or underflow when FT's
    extrapolated features score far outside [-1, 1]."""
    _check_scores("sinkhorn", scores=scores)
    if not (is_real(epsilon) and MIN_TEMPERATURE <= epsilon < math.inf) or not is_count(iters) or not 1 <= iters <= 1000:
        raise ValueError(f"sinkhorn(epsilon={epsilon!r}, iters={iters!r}): epsilon is an entropy weight >= "
                         f"{MIN_TEMPERATURE:g} (below, scores / epsilon overflow) and iters a count from 1 to 1000 (SwAV: "
                         "epsilon=0.05, iters=3).")
    epsilon = float(epsilon)
    log_q = scores.float().T / epsilon  # (C, B)
    n_proto, batch = log_q.shape[0], log_q.shape[1] * distributed.world_size()
    log_q = log_q - _logsumexp_all_ranks(log_q)
    for _ in range(iters):
        log_q = log_q - _logsumexp_all_ranks(log_q, dim=1) - math.log(n_proto)  # each prototype: 1/C of the mass
        log_q = log_q - torch.logsumexp(log_q, dim=0, keepdim=True) - math.log(batch)  # each sample: 1/B
    return torch.exp(log_q + math.log(batch)).T


def swav_loss(scores1: torch.Tensor, scores2: torch.Tensor, tau: float, epsilon: float = 0.05,
              iters: int = 3) -> torch.Tensor:
    """SwAV's swapped prediction: each view predicts the other view's codes from its prototype scores
    (Caron et al. 2020, eq. 1; Table 7's SwAV row)."""
    _check_scores("swav_loss", scores1=scores1, scores2=scores2)
    if scores1.shape != scores2.shape:
        raise ValueError(f"swav_loss: scores1 {tuple(scores1.shape)} and scores2 {tuple(scores2.shape)} must be the "
                         "same B x C (each view's scores against the same prototypes).")
    tau = temperature("swav_loss", tau, "SwAV uses 0.1")
    q1, q2 = sinkhorn(scores1.detach(), epsilon, iters), sinkhorn(scores2.detach(), epsilon, iters)
    return -0.5 * ((q2 * F.log_softmax(scores1 / tau, dim=1)).sum(1).mean()
                   + (q1 * F.log_softmax(scores2 / tau, dim=1)).sum(1).mean())
