"""SimSiam (Chen & He 2021) with FT: positive extrapolation of the normalised prediction and target (Table 7)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ftcl_core.batch_losses import simsiam_loss
from ftcl_core.config import RunConfig
from ftcl_core.methods.base import Method, Scores, StepContext, predictive_scores, raw_top1
from ftcl_core.models import Encoder, mlp


class SimSiam(Method):
    """SimSiam: one encoder, a predictor, and stop-gradient on the other view's
    projection (no negatives)."""

    def __init__(self, encoder: Encoder, predictor: nn.Module) -> None:
        super().__init__()
        self.encoder_q = encoder
        self.predictor = predictor

    @classmethod
    def from_config(cls, cfg: RunConfig, backbone: nn.Module) -> SimSiam:
        """3-layer projector ending in BN, bottleneck predictor (``model.pred_hidden``,
        default dim/4)."""
        m, width = cfg.model, backbone.out_dim
        dim, splits = m.dim, m.bn_splits
        pred_hidden = m.pred_hidden or max(1, dim // 4)
        projector = mlp(width, m.hidden or width, dim, layers=3, last_bn=True,
                        bn_splits=splits)
        predictor = mlp(dim, pred_hidden, dim, bn_splits=splits)
        return cls(Encoder(backbone, projector), predictor)

    def forward(self, x1: torch.Tensor, x2: torch.Tensor):
        z1, z2 = self.encoder_q(x1), self.encoder_q(x2)
        p1 = F.normalize(self.predictor(z1), dim=1)
        p2 = F.normalize(self.predictor(z2), dim=1)
        return p1, p2, F.normalize(z1.detach(), dim=1), F.normalize(z2.detach(), dim=1)

    def scores(self, out: tuple[torch.Tensor, ...], ctx: StepContext) -> Scores:
        """Each view's prediction against the other's stopped projection, eq. 3 on the
        pair."""
        return predictive_scores(out, ctx)

    def loss(self, scores: Scores) -> tuple[torch.Tensor, torch.Tensor]:
        """SimSiam's negative cosine on the scores after FT."""
        return simsiam_loss(scores.pos), raw_top1(scores)
