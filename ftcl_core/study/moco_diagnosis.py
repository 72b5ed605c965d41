"""MoCo variants that test explanations of FT's cost; none is in the paper, each keeps MoCo's networks and
equations (:class:`ftcl_core.methods.moco.MoCo`) and changes one thing.

- :class:`LabelledMoCo`: the queue remembers each key's class.  It records the share of the queue that belongs
  to the query's class (``stats.same_class``: the false negatives a label-free loss pushes away) and, as the
  false-negative oracle (``moco.drop_same_class``), drops those negatives from the loss: if FT still costs
  readout without them, false negatives are not the cause.
- :class:`ShardedMoCo`: one FT lambda per shard of queries (``ft.shards``), the released run's 8 processes
  imitated in one.
- :class:`GatedMoCo`: +pos held back on a step whose raw Mean(neg) stands above its level before the switch
  (``ft.pos_gate``; issue 66's arm in which the crowding changes and the clock does not).

:func:`moco_class` picks the class a config asks for; :mod:`ftcl_core.study` registers it with the library's
registry (:func:`ftcl_core.methods.register_variants`), so :func:`ftcl_core.methods.build_model` builds these by
the config's keys while the library names none of them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ftcl_core import distributed, transforms
from ftcl_core.config import ConfigError, FTConfig, RunConfig
from ftcl_core.losses import FTLogits, mixed_queue, moco_logits, positive_ft
from ftcl_core.methods.base import Scores, StepContext, contrastive_loss
from ftcl_core.methods.moco import MoCo
from ftcl_core.stats import score_statistics


@dataclass(frozen=True)
class LabelledScores(Scores):
    """MoCo's scores, with what a queue that keeps labels adds."""

    key_labels: torch.Tensor | None = None        # (N,) the keys' classes, to enqueue beside them
    neg_mask: torch.Tensor | None = None          # (N, K') True: a same-class negative the oracle drops
    # (and Scores.same_class_share: the queue's share of the query's class, first n queries)


def same_class_share(labels: torch.Tensor, queue_labels: torch.Tensor, n: int = 64) -> torch.Tensor:
    """The share of a queue's keys that belong to the query's own class (the false negatives a label-free loss
    pushes away), over the first ``n`` queries; ``queue_labels`` is -1 where no key was written yet. NaN while the
    queue holds no key. About 1 / classes for a class-balanced set; chapter 7's false-negative question."""
    written = queue_labels >= 0
    same = (labels[:n, None] == queue_labels[None, :]) & written
    count = written.sum() * min(n, labels.shape[0])
    return torch.where(count > 0, same.sum() / count.clamp_min(1), torch.full((), math.nan, device=labels.device))


def same_class_negatives(labels: torch.Tensor, queue_labels: torch.Tensor, sources: torch.Tensor) -> torch.Tensor:
    """``(N, K')`` True where negative j shares query i's class, i.e. where any queue row it is made of
    (``sources``, ``(K', 2)``) holds a key of that class.  Queue rows not yet written (label -1) never are."""
    src = queue_labels.to(labels.device)[sources.to(labels.device)]  # (K', 2)
    return (labels[:, None, None] == src[None]).any(-1)


class LabelledMoCo(MoCo):
    """MoCo whose queue keeps each key's class: it records the same-class share and, with ``drop_same_class``
    (the oracle), leaves same-class negatives out of the loss (eq. 1 over the other negatives)."""

    needs_labels = True  # the loop hands the step the batch's classes

    def __init__(self, *args, drop_same_class: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.drop_same_class = drop_same_class
        self.register_buffer("queue_labels", torch.full((self.queue.shape[0],), -1, dtype=torch.long))  # -1: empty

    @classmethod
    def from_config(cls, cfg: RunConfig, backbone: torch.nn.Module) -> LabelledMoCo:
        """MoCo's networks; the oracle where ``moco.drop_same_class``."""
        model = super().from_config(cfg, backbone)
        model.drop_same_class = cfg.moco.drop_same_class
        return model

    def scores(self, out: tuple[torch.Tensor, ...], ctx: StepContext) -> LabelledScores:
        """MoCo's scores, with the batch's labels for the queue, the same-class share and the oracle's mask."""
        if ctx.labels is None:
            raise ValueError("a queue that keeps labels (moco.drop_same_class or stats.same_class) needs the batch's "
                             "labels in the training step (StepContext.labels).")
        q, k, k_all = out
        pos, neg, partners = self.ft_logits(q, k, ctx)
        mask = None
        if self.drop_same_class:
            own = torch.arange(partners.shape[0], device=partners.device) % self.queue.shape[0]
            mask = same_class_negatives(ctx.labels, self.queue_labels, torch.stack([own, partners], 1))
        share = same_class_share(ctx.labels, self.queue_labels, ctx.n_stats)
        return LabelledScores(pos, neg, *self.raw_scores(q, k, pos, neg, ctx), keys=k_all, views=(q.detach(), k.detach()),
                              key_labels=ctx.labels, neg_mask=mask, same_class_share=share)

    def loss(self, scores: LabelledScores) -> tuple[torch.Tensor, torch.Tensor]:
        """eq. 1 without the negatives the oracle drops."""
        neg = scores.neg if scores.neg_mask is None else scores.neg.masked_fill(scores.neg_mask, float("-inf"))
        return contrastive_loss(scores.pos, neg, self.tau)

    def after_step(self, scores: LabelledScores) -> None:
        """Enqueue the clean keys and their classes."""
        rows = self.enqueue(scores.keys)
        self.queue_labels.index_copy_(0, rows, scores.key_labels.to(self.queue_labels.device))


def sharded_ft_logits(q: torch.Tensor, k: torch.Tensor, queue: torch.Tensor, ft: FTConfig, gen: transforms.Draws
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """The released run's 8 processes imitated in one (not in the paper): eq. 3 with one lambda per shard of
    ``N / ft.shards`` pairs, and each shard of queries against its own mixture of the queue (Sec 4.2)."""
    q, k = positive_ft(q, k, ft, gen)
    l_pos = (q * k).sum(1)
    l_neg = torch.cat([qs @ mixed_queue(queue, ft, gen)[0].T for qs in q.chunk(ft.shards)])
    return l_pos, l_neg


class ShardedMoCo(MoCo):
    """MoCo with one lambda per shard of ``ft.shards`` queries, each shard against its own mixture of the queue
    (:func:`sharded_ft_logits`): the released run's per-process draws, in one process."""

    def ft_logits(self, q: torch.Tensor, k: torch.Tensor, ctx: StepContext) -> FTLogits:
        if not ctx.ft_on:
            return super().ft_logits(q, k, ctx)
        return FTLogits(*sharded_ft_logits(q, k, self.queue, ctx.ft, ctx.ft_draws), None)


class LabelledShardedMoCo(ShardedMoCo, LabelledMoCo):
    """Both: the same-class share recorded with one lambda per shard (the config forbids the oracle here)."""


class GatedMoCo(MoCo):
    """MoCo with +pos held back while the images crowd (``ft.pos_gate``): a step whose raw Mean(neg) (Supp A, the
    recorded statistic: its first ``ctx.n_stats`` queries against the queue before this step enqueues) exceeds
    ``gate_at`` (its epoch's level, :meth:`start_epoch`: the mean over the epoch before the switch plus the margin) runs
    without +pos; the queue's FT, the clock and the draws of every other step are the run's without the gate."""

    margin: float | None = None  # ft.pos_gate
    switch: int = 0  # ft.start_epoch
    gate_at: float | None = None  # this epoch's level (None: no step is held back)

    @classmethod
    def from_config(cls, cfg: RunConfig, backbone: torch.nn.Module) -> GatedMoCo:
        """MoCo's networks, and the gate's margin and epoch (``ft.pos_gate``, ``ft.start_epoch``)."""
        model = super().from_config(cfg, backbone)
        model.margin, model.switch = cfg.ft.pos_gate, cfg.ft.start_epoch
        return model

    def start_epoch(self, epoch: int, steps_per_epoch: int, metrics: Callable[[], dict[str, np.ndarray]]) -> None:
        """The gate's level for ``epoch``'s steps (None before the switch): the raw Mean(neg) the log holds for the
        epoch before ``ft.start_epoch`` (a resumed run's restored log alike), plus the margin."""
        self.gate_at = None
        if self.margin is not None and epoch >= self.switch:
            end = self.switch * steps_per_epoch
            self.gate_at = float(metrics()["neg_mean"][end - steps_per_epoch:end].mean()) + self.margin

    def ft_logits(self, q: torch.Tensor, k: torch.Tensor, ctx: StepContext) -> FTLogits:
        if self.gate_at is not None and ctx.ft_on and ctx.ft.pos:
            n = ctx.n_stats
            if float(score_statistics(*moco_logits(q[:n].detach(), k[:n], self.queue), n)[1]) > self.gate_at:
                ctx = dataclasses.replace(ctx, ft=without_pos(ctx.ft))
        return super().ft_logits(q, k, ctx)


def without_pos(cfg: FTConfig) -> FTConfig:
    """``cfg`` with positive extrapolation off, its own keys back at their defaults (an FTConfig refuses keys of a
    transformation that is off); of ``cfg``'s own class (the study's, :mod:`.config_keys`, or the library's)."""
    if not (cfg.neg or cfg.hard):  # +pos was the only transformation: without it, plain MoCo
        return type(cfg)()
    keys = ("pos_mode", "alpha_ex", "renorm_pos", "pos_gate")
    defaults = {f.name: f.default for f in dataclasses.fields(cfg) if f.name in keys}
    return dataclasses.replace(cfg, pos=False, **defaults)


def moco_class(cfg: RunConfig) -> type[MoCo]:
    """The MoCo a config asks for: a queue that keeps labels (``moco.drop_same_class`` or ``stats.same_class``),
    one FT lambda per shard against the queue (``ft.shards > 1`` with ``ft.neg``), both, or the paper's."""
    labelled = cfg.moco.drop_same_class or cfg.stats.same_class
    sharded = cfg.ft.shards > 1 and cfg.ft.neg
    if cfg.ft.pos_gate is not None:
        if labelled or sharded:
            raise ConfigError("ft.pos_gate runs on MoCo's own queue: drop moco.drop_same_class, stats.same_class and "
                              "ft.shards, or drop ft.pos_gate.")
        return GatedMoCo
    return {(False, False): MoCo, (True, False): LabelledMoCo, (False, True): ShardedMoCo,
            (True, True): LabelledShardedMoCo}[(labelled, sharded)]


def pick_variant(cfg: RunConfig) -> type[MoCo] | None:
    """The picker :mod:`ftcl_core.study` registers (:func:`ftcl_core.methods.register_variants`): MoCo's configs
    get :func:`moco_class`; the other methods are not this picker's.  The diagnosis' keys run in one process only
    (the oracle's labels, the released run's per-process draws imitated in one): under torchrun, a
    :class:`~ftcl_core.config.ConfigError`."""
    asked = [key for key, on in (("ft.shards > 1", cfg.ft.shards > 1), ("ft.pos_gate", cfg.ft.pos_gate is not None),
                                 ("moco.drop_same_class=true", cfg.moco.drop_same_class),
                                 ("stats.same_class=true", cfg.stats.same_class)) if on]
    if asked and distributed.world_size() > 1:
        raise ConfigError(f"{', '.join(asked)} (the diagnosis' MoCo) runs in one process only: launch without torchrun.")
    return moco_class(cfg) if cfg.method == "moco" else None
