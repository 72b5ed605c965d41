"""BYOL (Grill et al. 2020) with FT: positive extrapolation of the normalised prediction and target (Table 7)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ftcl_core.batch_losses import byol_loss
from ftcl_core.config import BYOLConfig, RunConfig
from ftcl_core.methods.base import Method, Scores, StepContext, predictive_scores, raw_top1
from ftcl_core.models import Encoder, ema_update, frozen_copy, mlp


def cosine_momentum(base: float, step: int, total_steps: int) -> float:
    """BYOL's target momentum: from ``base`` at step 0 to 1 at the last step, on a
    cosine."""
    return 1 - (1 - base) * (math.cos(math.pi * step / max(1, total_steps)) + 1) / 2


class BYOL(Method):
    """BYOL: online encoder + predictor, momentum target encoder (no negatives).

    ``forward`` returns the normalised online predictions of both views and the target
    projections of both views (no gradient).  The target follows eq. 2 with momentum
    ``self.momentum``, which :meth:`start_step` raises from its base value to 1 on a
    cosine (BYOL's schedule).
    """

    def __init__(self, encoder: Encoder, predictor: nn.Module, momentum: float) -> None:
        super().__init__()
        BYOLConfig(momentum=momentum)  # the config's bound, [0, 1]
        self.encoder_q = encoder
        self.predictor = predictor
        self.target = frozen_copy(encoder)
        self.momentum = self.base_momentum = momentum

    @classmethod
    def from_config(cls, cfg: RunConfig, backbone: nn.Module) -> BYOL:
        """Projector and predictor Linear-BN-ReLU-Linear; base target momentum
        ``byol.momentum``."""
        m, width = cfg.model, backbone.out_dim
        hidden, dim, splits = m.hidden or width, m.dim, m.bn_splits
        projector = mlp(width, hidden, dim, bn_splits=splits)
        predictor = mlp(dim, hidden, dim, bn_splits=splits)
        return cls(Encoder(backbone, projector), predictor, cfg.byol.momentum)

    def start_step(self, epoch: int, step: int, total_steps: int) -> None:
        """The target momentum of this step (eq. 2's m on BYOL's cosine schedule)."""
        self.momentum = cosine_momentum(self.base_momentum, step, total_steps)

    # m is read here, outside a compiled graph, which would otherwise be rebuilt per m
    @torch.compiler.disable
    def update_target(self) -> None:
        """eq. 2 on the target network, at this step's momentum."""
        ema_update(self.target, self.encoder_q, self.momentum)

    def forward(self, x1: torch.Tensor, x2: torch.Tensor):
        p1, p2 = (F.normalize(self.predictor(self.encoder_q(x)), dim=1)
                  for x in (x1, x2))
        with torch.no_grad():
            self.update_target()
            t1, t2 = (F.normalize(self.target(x), dim=1) for x in (x1, x2))
        return p1, p2, t1, t2

    def scores(self, out: tuple[torch.Tensor, ...], ctx: StepContext) -> Scores:
        """Each view's prediction against the other view's target, eq. 3 on the pair
        (:func:`ftcl_core.methods.base.predictive_scores`)."""
        return predictive_scores(out, ctx)

    def loss(self, scores: Scores) -> tuple[torch.Tensor, torch.Tensor]:
        """BYOL's ``2 - 2 cos`` on the scores after FT."""
        return byol_loss(scores.pos), raw_top1(scores)
