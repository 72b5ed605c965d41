"""MoCo v1/v2 (He et al. 2020; Chen et al. 2020) with FT as the paper's released code runs it."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ftcl_core import distributed as D
from ftcl_core.config import FTConfig, RunConfig
from ftcl_core.losses import moco_ft_logits, moco_logits, same_class_negatives
from ftcl_core.methods.base import Method, Net, Scores, contrastive_loss
from ftcl_core.models import Encoder, ema_update, frozen_copy, projection_head
from ftcl_core.stats import same_class_share


class MoCo(Method):
    """MoCo: query encoder, momentum key encoder (eq. 2) and a queue of K clean keys.

    ``forward`` returns the L2-normalised queries of this process, its keys, and the keys of the whole
    (all-rank) batch, which :meth:`after_step` enqueues after the loss.  Shuffle-BN: the key batch is gathered
    from every rank, shuffled with a permutation every rank draws alike, encoded in shards, gathered and
    unshuffled; in one process, split-BN over the shuffled batch does the same job (MoCo CIFAR demo).
    """

    has_negatives = True

    def __init__(self, encoder: Encoder, dim: int, queue_size: int, momentum: float, seed: int = 0,
                 queue_labels: bool = False, tau: float = 0.2, oracle: bool | None = None) -> None:
        super().__init__()
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"momentum m={momentum} is outside [0, 1]; MoCo uses 0.99 or 0.999.")
        self.encoder_q = encoder
        self.encoder_k = frozen_copy(encoder)
        self.momentum = momentum
        self.tau = tau
        gen = torch.Generator().manual_seed(seed)
        self.register_buffer("queue", F.normalize(torch.randn(queue_size, dim, generator=gen), dim=1))
        self.register_buffer("queue_ptr", torch.zeros((), dtype=torch.long))
        # the queue knows each key's class for the diagnosis: the false-negative oracle (moco.drop_same_class), which
        # drops them from the loss, or the recorder's same-class share (stats.same_class), which only counts them
        self.keeps_labels = queue_labels
        self.oracle = queue_labels if oracle is None else oracle
        if self.oracle and not queue_labels:
            raise ValueError("the false-negative oracle needs a queue that keeps labels (queue_labels=True).")
        if queue_labels:  # -1: no key written yet
            self.register_buffer("queue_labels", torch.full((queue_size,), -1, dtype=torch.long))

    @classmethod
    def from_config(cls, cfg: RunConfig, backbone: torch.nn.Module) -> MoCo:
        """MoCo v1's linear head (``model.mlp=false``) or v2's MLP head, and the ``moco.*`` settings."""
        m, mc = cfg.model, cfg.moco
        return cls(Encoder(backbone, projection_head(backbone.out_dim, m.dim, m.mlp)), m.dim, mc.queue_size,
                   mc.momentum, seed=cfg.seed, queue_labels=mc.drop_same_class or cfg.stats.same_class, tau=mc.tau,
                   oracle=mc.drop_same_class)

    @torch.no_grad()
    def momentum_update(self) -> None:
        """eq. 2: theta_k <- m theta_k + (1 - m) theta_q; the key encoder keeps its own BN statistics."""
        ema_update(self.encoder_k, self.encoder_q, self.momentum)

    def shuffle_keys(self, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Shuffle-BN's permutation of the (global) key batch and its inverse, the same on every rank
        (shuffle-BN, He et al. 2020, Sec 3.3)."""
        perm = torch.randperm(n, generator=gen)
        return perm, torch.argsort(perm)

    def forward(self, x_q: torch.Tensor, x_k: torch.Tensor, gen: torch.Generator
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Normalised queries, this rank's keys and all ranks' keys; the key encoder is the eq. 2 moving
        average of the query encoder (updated by :meth:`momentum_update`) and sees shuffled batches."""
        q = F.normalize(self.encoder_q(x_q), dim=1)
        with torch.no_grad():
            self.momentum_update()
            x_all = D.gather_rows(x_k)
            perm, inverse = self.shuffle_keys(x_all.shape[0], gen)
            k_shard = F.normalize(self.encoder_k(D.shard_rows(x_all[perm.to(x_all.device)])), dim=1)
            k_all = D.gather_rows(k_shard)[inverse.to(x_all.device)]
        return q, D.shard_rows(k_all), k_all

    def scores(self, net: Net, x1: torch.Tensor, x2: torch.Tensor, ft: FTConfig, active: bool, gen: torch.Generator,
               n_raw: int = 64, labels: torch.Tensor | None = None) -> Scores:
        """Queries against their keys and the queue, FT inside the loss (:func:`ftcl_core.losses.moco_ft_logits`:
        eq. 3 on the pair, Sec 4.2 on the queue); the statistics' raw scores are the plain cosines."""
        q, k, k_all = net(x1, x2, gen)
        rows, n_global = (D.global_rows(q.shape[0]), k_all.shape[0]) if D.world_size() > 1 else (None, None)
        if self.keeps_labels and labels is None:
            raise ValueError("a queue that keeps labels (moco.drop_same_class or stats.same_class) needs the batch's "
                             "labels in the training step.")
        out = moco_ft_logits(q, k, self.queue, ft, gen, active, rows, n_global, with_sources=self.oracle)
        pos, neg = out[:2]
        mask = same_class_negatives(labels, self.queue_labels, out[2]) if self.oracle else None
        if active and ft.any:
            raw_pos, raw_neg = moco_logits(q[:n_raw].detach(), k[:n_raw], self.queue)
        else:
            raw_pos, raw_neg = pos[:n_raw].detach(), neg[:n_raw].detach()
        share = same_class_share(labels, self.queue_labels, n_raw) if self.keeps_labels else None
        return Scores(pos, neg, raw_pos, raw_neg, keys=k_all, views=(q.detach(), k.detach()), neg_mask=mask,
                      key_labels=labels, same_class_share=share)

    def loss(self, scores: Scores) -> tuple[torch.Tensor, torch.Tensor]:
        """eq. 1: InfoNCE at temperature ``moco.tau`` (without the oracle's same-class negatives)."""
        return contrastive_loss(scores, self.tau)

    def after_step(self, scores: Scores) -> None:
        """Enqueue the clean keys of the whole batch (after the loss used the old queue)."""
        self.enqueue(scores.keys, scores.key_labels)

    @torch.no_grad()
    def enqueue(self, keys: torch.Tensor, labels: torch.Tensor | None = None) -> None:
        """Write ``keys`` (clean, normalised) at the pointer, wrapping around when K % batch != 0 (Sec 3.1's
        queue; the released code enqueues the un-transformed keys).  ``labels``: their classes, kept only by
        the diagnosis oracle's queue."""
        k_size = self.queue.shape[0]
        n = keys.shape[0]
        if n > k_size:
            raise ValueError(f"batch {n} is larger than the queue K={k_size}; use K >= batch size.")
        ptr = int(self.queue_ptr)
        idx = (torch.arange(n, device=keys.device) + ptr) % k_size
        self.queue.index_copy_(0, idx, keys.detach().to(self.queue.dtype))
        if self.keeps_labels:
            if labels is None:
                raise ValueError("this queue keeps labels (moco.drop_same_class or stats.same_class): enqueue needs "
                                 "the keys' labels.")
            self.queue_labels.index_copy_(0, idx, labels.to(self.queue_labels.device))
        self.queue_ptr.fill_((ptr + n) % k_size)
