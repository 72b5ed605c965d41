"""What every method is to the training loop: a module with an online encoder, FT-transformed scores, a loss
and a few hooks around the optimiser step.

A method file (``moco.py``, ``simclr.py``, ...) holds one subclass of :class:`Method` and reads top to bottom:
its networks (``__init__``, ``forward``), how it is built from a config (``from_config``), its scores with FT
(``scores``), its loss (``loss``) and what it does around the optimiser step.  The training step
(:func:`ftcl_core.training.train_step`) runs ``forward`` (under autocast, DDP or torch.compile), hands its
outputs to ``scores`` with the step's :class:`StepContext`, and calls only these, so one step of a method can
be followed in two files: the method's and the loop's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn

from ftcl_core import distributed
from ftcl_core.batch_losses import in_batch_negative_scores, symmetric_pairs, symmetric_rows
from ftcl_core.config import FTConfig, RunConfig
from ftcl_core.losses import info_nce, logits_from_scores, positive_ft
from ftcl_core.models import build_encoder, kaiming_init
from ftcl_core.transforms import DeviceDraws, Draws


@dataclass(frozen=True)
class StepContext:
    """What one training step computes with, besides the method and its networks: frozen, built once per run
    (:meth:`from_config`) and re-made per step only where the step changes it (``ft_active``, ``labels``)."""

    gen: torch.Generator            # the step's host draws (augmentation, shuffle-BN; FT's too without device_draws)
    ft: FTConfig = FTConfig()       # the feature transformations (the ``ft.*`` keys)
    ft_active: bool = True          # ``ft.start_epoch`` is reached: FT is on in this step
    n_stats: int = 64               # anchors whose Supp A score statistics are recorded
    record_stats: bool = True       # Supp A statistics and Supp C layer gradient norms, on the device
    histogram_bins: int = 0         # per-step score histograms (0: none)
    amp: str | None = None          # bf16: the networks under autocast (FT, scores and loss stay fp32)
    wrapped: nn.Module | None = None  # what runs the networks when it is not the model (its DDP / compiled form)
    labels: torch.Tensor | None = None  # the batch's classes: only a queue that keeps labels reads them
    device_draws: DeviceDraws | None = None  # FT's draws on the device (train.ft_draws); None: from ``gen``
    captured: bool = False          # the networks replay CUDA graphs (train.cuda_graph): each step marks its start

    @classmethod
    def from_config(cls, cfg: RunConfig, gen: torch.Generator, wrapped: nn.Module | None = None,
                    device_draws: DeviceDraws | None = None) -> StepContext:
        """The run's context: its ``ft.*``, ``stats.*`` and ``train.amp`` settings, its generators and network
        (``device_draws``: :func:`ftcl_core.execution.ft_device_draws`, or what the checkpoint resumed)."""
        s = cfg.stats
        return cls(gen, cfg.ft.step_only(), True, s.n_queries, True, 50 if s.histograms else 0, cfg.train.amp, wrapped,
                   device_draws=device_draws, captured=cfg.train.cuda_graph)

    @property
    def ft_draws(self) -> Draws:
        """What FT draws its lambdas and permutations from: ``device_draws`` where the run has them (on CUDA by
        default, ``train.ft_draws``), else the host generator ``gen``, in the order the stored runs drew them."""
        return self.gen if self.device_draws is None else self.device_draws

    @property
    def ft_on(self) -> bool:
        """Whether this step transforms anything (FT switched on and some transformation asked for)."""
        return self.ft_active and self.ft.any


@dataclass(frozen=True)
class Scores:
    """What a step's loss and statistics need."""

    pos: torch.Tensor              # (M,) positive scores after FT (the loss uses these)
    neg: torch.Tensor | None       # (M, K) negative scores after FT; None for BYOL / SimSiam
    raw_pos: torch.Tensor          # (n,) plain cosines of the first n anchors, detached (Supp A statistics)
    raw_neg: torch.Tensor          # (n, K') plain negative cosines (in-batch ones for BYOL / SimSiam)
    keys: torch.Tensor | None = None  # MoCo: the clean keys of the whole batch, to enqueue
    prototype_scores: tuple[torch.Tensor, torch.Tensor] | None = None  # SwAV: both views against the prototypes
    views: tuple[torch.Tensor, torch.Tensor] | None = None  # the pair the loss aligns, detached, one row per image
    same_class_share: torch.Tensor | None = None  # () a method that reads labels: the stats column ``same_class``


class Method(nn.Module):
    """A self-supervised method: ``encoder_q`` is its online encoder (backbone + head); subclasses add their
    other networks and override :meth:`scores` and :meth:`loss`, and the hooks they need."""

    encoder_q: nn.Module
    has_negatives = False  # whether FT may transform negatives (ftcl_core.config.CONTRASTIVE lists these methods)
    forward_takes_gen = False  # forward(x1, x2, gen): it draws at random (MoCo's shuffle-BN permutation)
    needs_labels = False  # the step hands it the batch's classes (StepContext.labels); none of the paper's methods

    @property
    def online(self) -> nn.Module:
        """The encoder the optimiser trains and the readout evaluates (its ``.backbone``)."""
        return self.encoder_q

    @classmethod
    def from_config(cls, cfg: RunConfig, backbone: nn.Module) -> Method:
        """The method's networks around ``backbone``, with its settings from ``cfg``."""
        raise NotImplementedError

    def start_epoch(self, epoch: int, steps_per_epoch: int, metrics: Callable[[], dict]) -> None:
        """Before an epoch's steps, with the log's columns so far (``metrics()``; a resumed run's restored log alike)."""

    def start_step(self, epoch: int, step: int, total_steps: int) -> None:
        """Before a step: set what follows a schedule (BYOL's target momentum, SwAV's prototype freeze)."""

    def scores(self, out: tuple[torch.Tensor, ...], ctx: StepContext) -> Scores:
        """Score the outputs of :meth:`forward` (run by the step, in float32), FT inside the loss where
        ``ctx.ft_on``; FT's random draws from ``ctx.ft_draws``, any other from ``ctx.gen``."""
        raise NotImplementedError

    def loss(self, scores: Scores) -> tuple[torch.Tensor, torch.Tensor]:
        """The loss and the top-1 'positive beats every negative' rate (in %) of a step."""
        raise NotImplementedError

    def before_optimizer_step(self) -> None:
        """After backward, before the optimiser step (SwAV drops its frozen prototypes' gradient)."""

    def after_step(self, scores: Scores) -> None:
        """After the optimiser step (MoCo enqueues its clean keys)."""


def build_backbone(cfg: RunConfig) -> nn.Module:
    """The encoder backbone of ``cfg.model`` with its init (``kaiming`` or PyTorch's default)."""
    m = cfg.model
    backbone = build_encoder(m.encoder, bn_splits=m.bn_splits)
    if m.init == "kaiming":
        kaiming_init(backbone)
    return backbone


def contrastive_loss(pos: torch.Tensor, neg: torch.Tensor, tau: float) -> tuple[torch.Tensor, torch.Tensor]:
    """eq. 1 (InfoNCE) over the scores after FT at temperature ``tau``; top-1: how often the positive scores
    above every negative."""
    logits = logits_from_scores(pos, neg, tau)
    top1 = (logits.detach().argmax(1) == 0).float().mean() * 100
    return info_nce(logits), top1


def raw_top1(scores: Scores) -> torch.Tensor:
    """Methods without negatives: how often the plain positive cosine beats every in-batch one (in %)."""
    return (scores.raw_pos > scores.raw_neg.max(1).values).float().mean() * 100


def predictive_scores(out: tuple[torch.Tensor, ...], ctx: StepContext) -> Scores:
    """BYOL's and SimSiam's scores: predictions ``p1, p2`` against the other view's
    targets ``t2, t1`` (both directions at once), with eq. 3 on each pair inside the
    loss; no negatives, so the statistics' negatives are in-batch cosines."""
    p1, p2, t1, t2 = out
    anchors, positives = symmetric_pairs(p1, p2, t1, t2)
    n_global = p1.shape[0] * distributed.world_size()
    rows = symmetric_rows(distributed.global_rows(p1.shape[0]), n_global)
    if ctx.ft_active:  # eq. 3
        a, b = positive_ft(anchors, positives, ctx.ft, ctx.ft_draws, rows, 2 * n_global)
    else:
        a, b = anchors, positives
    pos = (a * b).sum(1)
    a0, b0, n_raw = anchors.detach(), positives.detach(), ctx.n_stats
    raw_pos = (a0[:n_raw] * b0[:n_raw]).sum(1)
    raw_neg = in_batch_negative_scores(a0, b0)[:n_raw]
    return Scores(pos, None, raw_pos, raw_neg, views=(p1.detach(), t2.detach()))
