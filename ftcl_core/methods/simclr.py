"""SimCLR (Chen et al. 2020) with FT: MoCo's transformations with the in-batch bank in place of the queue."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ftcl_core.batch_losses import other_sample_mask, simclr_ft_logits, symmetric_pairs
from ftcl_core.config import RunConfig, SimCLRConfig
from ftcl_core.distributed import gather_rows, global_rows
from ftcl_core.methods.base import Method, Scores, StepContext, contrastive_loss
from ftcl_core.models import Encoder, mlp


class SimCLR(Method):
    """SimCLR: one encoder for both views; the negatives are the other samples of the
    (all-rank) batch."""

    has_negatives = True

    def __init__(self, encoder: Encoder, tau: float = 0.2) -> None:
        super().__init__()
        SimCLRConfig(tau=tau)  # the config's bounds
        self.encoder_q = encoder
        self.tau = tau

    @classmethod
    def from_config(cls, cfg: RunConfig, backbone: torch.nn.Module) -> SimCLR:
        """Linear-BN-ReLU-Linear projector (SimCLR v1 with BN, as lightly and
        solo-learn); temperature ``simclr.tau``."""
        m, width = cfg.model, backbone.out_dim
        head = mlp(width, m.hidden or width, m.dim, bn_splits=m.bn_splits)
        return cls(Encoder(backbone, head), tau=cfg.simclr.tau)

    def forward(self, x1: torch.Tensor, x2: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        z1, z2 = self.encoder_q(x1), self.encoder_q(x2)
        return F.normalize(z1, dim=1), F.normalize(z2, dim=1)

    def scores(self, out: tuple[torch.Tensor, ...], ctx: StepContext) -> Scores:
        """NT-Xent's symmetric scores with FT (Supp E.1,
        :func:`ftcl_core.batch_losses.simclr_ft_logits`): each view against the
        other and against every other sample of both views of the (all-rank)
        batch."""
        z1, z2 = out
        bank1, bank2 = gather_rows(z1, grad=True), gather_rows(z2, grad=True)
        rows = global_rows(z1.shape[0], z1.device)
        pos, neg = simclr_ft_logits(z1, z2, bank1, bank2, rows, ctx.ft, ctx.ft_draws,
                                    active=ctx.ft_active)
        n = ctx.n_stats
        if ctx.ft_on:  # the statistics' plain cosines, without FT
            a, b = symmetric_pairs(z1.detach(), z2.detach(), z1.detach(), z2.detach())
            keep = other_sample_mask(rows, bank1.shape[0])[:n]
            full = a[:n] @ torch.cat([bank1, bank2]).detach().T
            raw_pos = (a[:n] * b[:n]).sum(1)
            raw_neg = full[keep].view(keep.shape[0], -1)
        else:
            raw_pos, raw_neg = pos[:n].detach(), neg[:n].detach()
        return Scores(pos, neg, raw_pos, raw_neg, views=(z1.detach(), z2.detach()))

    def loss(self, scores: Scores) -> tuple[torch.Tensor, torch.Tensor]:
        """eq. 1: InfoNCE (NT-Xent) at temperature ``tau``."""
        return contrastive_loss(scores.pos, scores.neg, self.tau)
