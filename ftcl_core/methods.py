"""The methods behind one training step: MoCo (v1/v2), SimCLR, BYOL, SimSiam and SwAV, each with FT.

A method is a module of :mod:`ftcl_core.models` plus three functions here: :func:`method_scores` runs the
model on two views and returns the scores after FT (and the plain cosines for the statistics),
:func:`method_loss` turns them into the loss, :func:`after_step` does what follows the optimiser step
(MoCo enqueues its clean keys).  FT follows the paper's reading of each method (Table 5 and the
supplement): MoCo and SimCLR get positive extrapolation and negative interpolation (and every other
option of :class:`ftcl_core.losses.FTConfig`); BYOL and SimSiam, which have no negatives, get positive
extrapolation only, on the normalised prediction and target, inside the loss; SwAV gets positive
extrapolation of its two views' features before the prototype scores (the rest of SwAV unchanged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn

from ftcl_core import distributed as D
from ftcl_core.config import CONTRASTIVE, METHODS, check_method_config  # noqa: F401
from ftcl_core.losses import (
    FTConfig,
    byol_loss,
    in_batch_negative_scores,
    info_nce,
    logits_from_scores,
    moco_ft_logits,
    moco_logits,
    other_sample_mask,
    positive_ft,
    same_class_negatives,
    simclr_ft_logits,
    simsiam_loss,
    swav_loss,
    symmetric_pairs,
    symmetric_rows,
)
from ftcl_core.models import BYOL, Encoder, MoCo, SimCLR, SimSiam, SwAV, build_encoder, kaiming_init, mlp, projection_head


@dataclass
class Scores:
    """What a step's loss and statistics need."""

    pos: torch.Tensor              # (M,) positive scores after FT (the loss uses these)
    neg: torch.Tensor | None       # (M, K) negative scores after FT; None for BYOL / SimSiam
    raw_pos: torch.Tensor          # (n,) plain cosines of the first n anchors, detached (Supp A statistics)
    raw_neg: torch.Tensor          # (n, K') plain negative cosines (in-batch ones for BYOL / SimSiam)
    keys: torch.Tensor | None = None  # MoCo: the clean keys of the whole batch, to enqueue
    prototype_scores: tuple[torch.Tensor, torch.Tensor] | None = None  # SwAV: both views against the prototypes
    views: tuple[torch.Tensor, torch.Tensor] | None = None  # the pair the loss aligns, detached, one row per image
    neg_mask: torch.Tensor | None = None  # (M, K) True: a negative the loss ignores (the oracle's same-class ones)
    key_labels: torch.Tensor | None = None  # MoCo with the oracle: the keys' classes, to enqueue beside them


def build_model(cfg: dict) -> nn.Module:
    """The model of ``cfg['method']``, initialised from ``cfg['seed']`` (identically on every rank)."""
    check_method_config(cfg)
    torch.manual_seed(cfg["seed"])
    m = cfg["model"]
    backbone = build_encoder(m["encoder"], bn_splits=m["bn_splits"])
    if m.get("init", "default") == "kaiming":  # absent in runs stored before the key existed: the default
        kaiming_init(backbone)
    method, dim, width, splits = cfg["method"], m["dim"], backbone.out_dim, m["bn_splits"]
    hidden = m["hidden"] or width
    if method == "moco":
        return MoCo(Encoder(backbone, projection_head(width, dim, m["mlp"])), dim, cfg["moco"]["queue_size"],
                    cfg["moco"]["momentum"], seed=cfg["seed"], queue_labels=bool(cfg["moco"].get("drop_same_class")))
    if method == "simclr":  # Linear-BN-ReLU-Linear projector (SimCLR v1 with BN, as lightly and solo-learn)
        return SimCLR(Encoder(backbone, mlp(width, hidden, dim, bn_splits=splits)))
    if method == "byol":  # projector and predictor: Linear-BN-ReLU-Linear
        return BYOL(Encoder(backbone, mlp(width, hidden, dim, bn_splits=splits)), mlp(dim, hidden, dim, bn_splits=splits),
                    cfg["moco"]["momentum"])
    if method == "swav":  # Linear-BN-ReLU-Linear projector, then the prototypes
        return SwAV(Encoder(backbone, mlp(width, hidden, dim, bn_splits=splits)), dim, cfg["swav"]["prototypes"])
    # SimSiam: 3-layer projector ending in BN, bottleneck predictor (dim/4)
    pred_hidden = m["pred_hidden"] or max(1, dim // 4)
    projector = mlp(width, hidden, dim, layers=3, last_bn=True, bn_splits=splits)
    return SimSiam(Encoder(backbone, projector), mlp(dim, pred_hidden, dim, bn_splits=splits))


def target_momentum(cfg: dict, step: int, total_steps: int) -> float:
    """BYOL: the target momentum rises from ``moco.momentum`` to 1 on a cosine; MoCo keeps it constant (eq. 2)."""
    base = cfg["moco"]["momentum"]
    if cfg["method"] != "byol":
        return base
    return 1 - (1 - base) * (math.cos(math.pi * step / max(1, total_steps)) + 1) / 2


def method_scores(net: nn.Module, model: nn.Module, x1: torch.Tensor, x2: torch.Tensor, ft: FTConfig,
                  active: bool, gen: torch.Generator, n_raw: int = 64, labels: torch.Tensor | None = None) -> Scores:
    """Run ``net`` (``model`` itself, or its DistributedDataParallel wrapper) on two views; FT inside the loss.
    ``labels`` (the batch's classes) only for the diagnosis oracle, a MoCo whose queue keeps labels."""
    if isinstance(model, MoCo):
        q, k, k_all = net(x1, x2, gen)
        rows, n_global = (D.global_rows(q.shape[0]), k_all.shape[0]) if D.world_size() > 1 else (None, None)
        oracle = hasattr(model, "queue_labels")
        if oracle and labels is None:
            raise ValueError("moco.drop_same_class=true needs the batch's labels in the training step.")
        pos, neg, sources = moco_ft_logits(q, k, model.queue, ft, gen, active, rows, n_global, with_sources=True)
        mask = same_class_negatives(labels, model.queue_labels, sources) if oracle else None
        if active and ft.any:
            raw_pos, raw_neg = moco_logits(q[:n_raw].detach(), k[:n_raw], model.queue)
        else:
            raw_pos, raw_neg = pos[:n_raw].detach(), neg[:n_raw].detach()
        return Scores(pos, neg, raw_pos, raw_neg, keys=k_all, views=(q.detach(), k.detach()), neg_mask=mask,
                      key_labels=labels)
    if isinstance(model, SimCLR):
        z1, z2 = net(x1, x2)
        bank1, bank2 = D.gather_rows(z1, grad=True), D.gather_rows(z2, grad=True)
        rows = D.global_rows(z1.shape[0], z1.device)
        pos, neg = simclr_ft_logits(z1, z2, bank1, bank2, rows, ft, gen, active=active)
        if active and ft.any:
            anchors, positives = symmetric_pairs(z1.detach(), z2.detach(), z1.detach(), z2.detach())
            keep = other_sample_mask(rows, bank1.shape[0])[:n_raw]
            full = anchors[:n_raw] @ torch.cat([bank1, bank2]).detach().T
            raw_pos, raw_neg = (anchors[:n_raw] * positives[:n_raw]).sum(1), full[keep].view(keep.shape[0], -1)
        else:
            raw_pos, raw_neg = pos[:n_raw].detach(), neg[:n_raw].detach()
        return Scores(pos, neg, raw_pos, raw_neg, views=(z1.detach(), z2.detach()))
    if isinstance(model, (BYOL, SimSiam)):
        p1, p2, t1, t2 = net(x1, x2)
        anchors, positives = symmetric_pairs(p1, p2, t1, t2)
        n_global = p1.shape[0] * D.world_size()
        rows = symmetric_rows(D.global_rows(p1.shape[0]), n_global)
        a, b = positive_ft(anchors, positives, ft, gen, rows, 2 * n_global) if active else (anchors, positives)
        pos = (a * b).sum(1)
        a0, b0 = anchors.detach(), positives.detach()
        raw_pos = (a0[:n_raw] * b0[:n_raw]).sum(1)
        raw_neg = in_batch_negative_scores(a0, b0)[:n_raw]
        return Scores(pos, None, raw_pos, raw_neg, views=(p1.detach(), t2.detach()))
    if isinstance(model, SwAV):  # FT on the two views' features, then the prototype scores (paper Supp)
        z1, z2 = net(x1, x2)
        rows = D.global_rows(z1.shape[0])
        a, b = positive_ft(z1, z2, ft, gen, rows, z1.shape[0] * D.world_size()) if active else (z1, z2)
        anchors, positives = symmetric_pairs(z1.detach(), z2.detach(), z1.detach(), z2.detach())
        raw_neg = in_batch_negative_scores(anchors, positives)[:n_raw]
        return Scores((a * b).sum(1), None, (anchors * positives).sum(1)[:n_raw], raw_neg,
                      prototype_scores=(model.prototypes(a), model.prototypes(b)), views=(z1.detach(), z2.detach()))
    raise TypeError(f"unknown method model {type(model).__name__}")


def method_loss(model: nn.Module, scores: Scores, tau: float, swav: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss and the top-1 'positive beats every negative' rate (in %) of a step (``swav``: the
    ``swav.*`` config keys)."""
    if scores.neg is not None:  # eq. 1 (InfoNCE) for MoCo and SimCLR
        neg = scores.neg if scores.neg_mask is None else scores.neg.masked_fill(scores.neg_mask, float("-inf"))
        logits = logits_from_scores(scores.pos, neg, tau)
        top1 = (logits.detach().argmax(1) == 0).float().mean() * 100
        return info_nce(logits), top1
    top1 = (scores.raw_pos > scores.raw_neg.max(1).values).float().mean() * 100
    if isinstance(model, SwAV):
        s = swav or {"epsilon": 0.05, "sinkhorn_iters": 3}
        return swav_loss(*scores.prototype_scores, tau, s["epsilon"], s["sinkhorn_iters"]), top1
    loss = byol_loss(scores.pos) if isinstance(model, BYOL) else simsiam_loss(scores.pos)
    return loss, top1


def before_optimizer_step(model: nn.Module) -> None:
    """SwAV: no prototype update while they are frozen (the first ``swav.freeze_prototypes_epochs``)."""
    if isinstance(model, SwAV) and model.freeze_prototypes:
        model.prototypes.weight.grad = None


def after_step(model: nn.Module, scores: Scores) -> None:
    """MoCo: enqueue the clean keys of the whole batch (after the loss used the old queue)."""
    if isinstance(model, MoCo):
        model.enqueue(scores.keys, scores.key_labels)
