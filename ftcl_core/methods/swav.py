"""SwAV (Caron et al. 2020), two crops, with FT: positive extrapolation of the two views' features before the
prototype scores (the paper's supplement; the rest of SwAV unchanged)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ftcl_core import distributed
from ftcl_core.arguments import check_head
from ftcl_core.batch_losses import in_batch_negative_scores, swav_loss, symmetric_pairs
from ftcl_core.config import RunConfig, SwAVConfig
from ftcl_core.losses import positive_ft
from ftcl_core.methods.base import Method, Scores, StepContext, raw_top1
from ftcl_core.models import Encoder, mlp


class SwAV(Method):
    """SwAV with two crops: one encoder, learnable prototypes (kept on the unit
    sphere), codes from Sinkhorn-Knopp and a swapped prediction
    (:func:`ftcl_core.batch_losses.swav_loss`).

    ``forward`` returns the normalised features of both views; :meth:`scores` applies FT
    to them and scores them against ``self.prototypes``.  ``freeze_prototypes`` (set by
    :meth:`start_step` for the first ``freeze_epochs``, as SwAV does) drops the
    prototypes' gradient before the optimiser step."""

    def __init__(self, encoder: Encoder, dim: int, n_prototypes: int, tau: float = 0.2,
                 epsilon: float = 0.05, sinkhorn_iters: int = 3, freeze_epochs: int = 1
                 ) -> None:
        super().__init__()
        check_head("SwAV", encoder, dim)
        SwAVConfig(prototypes=n_prototypes, sinkhorn_iters=sinkhorn_iters,  # its bounds
                   epsilon=epsilon, freeze_prototypes_epochs=freeze_epochs, tau=tau)
        self.encoder_q = encoder
        self.prototypes = nn.Linear(dim, n_prototypes, bias=False)
        self.freeze_prototypes = False
        self.tau, self.epsilon = tau, epsilon
        self.sinkhorn_iters, self.freeze_epochs = sinkhorn_iters, freeze_epochs

    @classmethod
    def from_config(cls, cfg: RunConfig, backbone: nn.Module) -> SwAV:
        """Linear-BN-ReLU-Linear projector, then the prototypes; the ``swav.*`` settings
        (its temperature too)."""
        m, s, width = cfg.model, cfg.swav, backbone.out_dim
        head = mlp(width, m.hidden or width, m.dim, bn_splits=m.bn_splits)
        return cls(Encoder(backbone, head), m.dim, s.prototypes, tau=s.tau,
                   epsilon=s.epsilon, sinkhorn_iters=s.sinkhorn_iters,
                   freeze_epochs=s.freeze_prototypes_epochs)

    def start_step(self, epoch: int, step: int, total_steps: int) -> None:
        """The prototypes stay frozen for the first ``freeze_epochs``."""
        self.freeze_prototypes = epoch < self.freeze_epochs

    def forward(self, x1: torch.Tensor, x2: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            w = self.prototypes.weight
            w.copy_(F.normalize(w, dim=1))
        z1, z2 = self.encoder_q(x1), self.encoder_q(x2)
        return F.normalize(z1, dim=1), F.normalize(z2, dim=1)

    def scores(self, out: tuple[torch.Tensor, ...], ctx: StepContext) -> Scores:
        """eq. 3 on the two views' features, then both against the prototypes."""
        z1, z2 = out
        rows = distributed.global_rows(z1.shape[0])
        n_global, n = z1.shape[0] * distributed.world_size(), ctx.n_stats
        a, b = z1, z2
        if ctx.ft_active:  # eq. 3
            a, b = positive_ft(z1, z2, ctx.ft, ctx.ft_draws, rows, n_global)
        # the statistics' plain cosines, without FT
        z1_, z2_ = z1.detach(), z2.detach()
        anchors, positives = symmetric_pairs(z1_, z2_, z1_, z2_)
        raw_pos = (anchors * positives).sum(1)[:n]
        raw_neg = in_batch_negative_scores(anchors, positives)[:n]
        return Scores((a * b).sum(1), None, raw_pos, raw_neg, views=(z1_, z2_),
                      prototype_scores=(self.prototypes(a), self.prototypes(b)))

    def loss(self, scores: Scores) -> tuple[torch.Tensor, torch.Tensor]:
        """The swapped prediction at temperature ``tau``, codes from ``sinkhorn_iters``
        Sinkhorn steps."""
        loss = swav_loss(*scores.prototype_scores, self.tau, self.epsilon,
                         self.sinkhorn_iters)
        return loss, raw_top1(scores)

    def before_optimizer_step(self) -> None:
        """No prototype update while they are frozen."""
        if self.freeze_prototypes:
            self.prototypes.weight.grad = None
