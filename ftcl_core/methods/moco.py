"""MoCo v1/v2 (He et al. 2020; Chen et al. 2020) with FT as the paper's released code runs it."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ftcl_core.arguments import check_counts, check_head
from ftcl_core.config import MoCoConfig, RunConfig
from ftcl_core.distributed import gather_rows, global_rows, shard_rows, world_size
from ftcl_core.losses import FTLogits, info_nce, moco_ft_logits, moco_logits
from ftcl_core.methods.base import Method, Scores, StepContext, contrastive_loss
from ftcl_core.models import Encoder, ema_update, frozen_copy, projection_head
from ftcl_core.transforms import extrapolate_positive, interpolate_negatives, sample_lambda, sample_permutation


class MoCo(Method):
    """MoCo: a query encoder, a momentum key encoder (eq. 2) and a queue of K clean keys (Sec 3.1).

    Shuffle-BN: the key batch is gathered from every rank, shuffled with a permutation every rank draws alike,
    encoded in shards, gathered and unshuffled; in one process, split-BN over the shuffled batch does the same
    job (MoCo's CIFAR demo)."""

    has_negatives = True
    forward_takes_gen = True  # the shuffle-BN permutation

    def __init__(self, encoder: Encoder, dim: int, queue_size: int, momentum: float, seed: int = 0,
                 tau: float = 0.2) -> None:
        super().__init__()
        check_head("MoCo", encoder, dim)
        check_counts("MoCo", 0, seed=seed)
        MoCoConfig(queue_size=queue_size, momentum=momentum, tau=tau)  # the config's bounds, named as its keys
        self.encoder_q = encoder
        self.encoder_k = frozen_copy(encoder)
        self.momentum, self.tau = momentum, tau
        gen = torch.Generator().manual_seed(seed)
        self.register_buffer("queue", F.normalize(torch.randn(queue_size, dim, generator=gen), dim=1))  # KxC
        self.register_buffer("queue_ptr", torch.zeros((), dtype=torch.long))

    @classmethod
    def from_config(cls, cfg: RunConfig, backbone: torch.nn.Module) -> MoCo:
        """MoCo v1's linear head (``model.mlp=false``) or v2's MLP head, and the ``moco.*`` settings."""
        m, mc = cfg.model, cfg.moco
        head = projection_head(backbone.out_dim, m.dim, m.mlp)
        return cls(Encoder(backbone, head), m.dim, mc.queue_size, mc.momentum, seed=cfg.seed, tau=mc.tau)

    @torch.no_grad()
    def momentum_update(self) -> None:
        """eq. 2: theta_k <- m theta_k + (1 - m) theta_q; the key encoder keeps its own BN statistics."""
        ema_update(self.encoder_k, self.encoder_q, self.momentum)

    def forward(self, x_q: torch.Tensor, x_k: torch.Tensor, gen: torch.Generator
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Normalised queries, this rank's keys and all ranks' keys (shuffle-BN, He et al. 2020, Sec 3.3)."""
        q = F.normalize(self.encoder_q(x_q), dim=1)                 # queries: NxC
        with torch.no_grad():
            self.momentum_update()
            x_all = gather_rows(x_k)                                # key images of all ranks: (world N)x3xHxW
            perm = torch.randperm(x_all.shape[0], generator=gen)
            inverse = torch.argsort(perm)
            k_shard = F.normalize(self.encoder_k(shard_rows(x_all[perm.to(x_all.device)])), dim=1)
            k_all = gather_rows(k_shard)[inverse.to(x_all.device)]  # keys of all ranks, unshuffled: (world N)xC
        return q, shard_rows(k_all), k_all                          # NxC, NxC, (world N)xC

    def ft_logits(self, q: torch.Tensor, k: torch.Tensor, ctx: StepContext) -> FTLogits:
        """The pair's and the queue's scores with FT inside the loss: eq. 3 on the pair, Sec 4.2 on the queue
        (:func:`ftcl_core.losses.moco_ft_logits`)."""
        rows, n_global = (global_rows(q.shape[0]), world_size() * q.shape[0]) if world_size() > 1 else (None, None)
        return moco_ft_logits(q, k, self.queue, ctx.ft, ctx.ft_draws, ctx.ft_active, rows, n_global,
                              queue_layout="KC")  # K x C by construction

    def raw_scores(self, q: torch.Tensor, k: torch.Tensor, pos: torch.Tensor, neg: torch.Tensor, ctx: StepContext
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """The plain cosines of the first ``ctx.n_stats`` queries (Supp A statistics), without FT."""
        n = ctx.n_stats
        return moco_logits(q[:n].detach(), k[:n], self.queue) if ctx.ft_on else (pos[:n].detach(), neg[:n].detach())

    def scores(self, out: tuple[torch.Tensor, ...], ctx: StepContext) -> Scores:
        """Queries against their keys and the queue, FT inside the loss."""
        q, k, k_all = out
        pos, neg, _ = self.ft_logits(q, k, ctx)                           # N, NxK'
        return Scores(pos, neg, *self.raw_scores(q, k, pos, neg, ctx), keys=k_all, views=(q.detach(), k.detach()))

    def loss(self, scores: Scores) -> tuple[torch.Tensor, torch.Tensor]:
        """eq. 1: InfoNCE at temperature ``moco.tau``."""
        return contrastive_loss(scores.pos, scores.neg, self.tau)

    def after_step(self, scores: Scores) -> None:
        """Enqueue the clean keys of the whole batch (after the loss used the old queue)."""
        self.enqueue(scores.keys)

    @torch.no_grad()
    def enqueue(self, keys: torch.Tensor) -> torch.Tensor:
        """Write ``keys`` (clean, normalised) at the pointer, wrapping around when K % batch != 0 (Sec 3.1's
        queue; the released code enqueues the un-transformed keys); returns the rows written."""
        k_size, n = self.queue.shape[0], keys.shape[0]
        if n > k_size:
            raise ValueError(f"batch {n} is larger than the queue K={k_size}; use K >= batch size.")
        ptr = int(self.queue_ptr)
        rows = (torch.arange(n, device=keys.device) + ptr) % k_size
        self.queue.index_copy_(0, rows, keys.detach().to(self.queue.dtype))
        self.queue_ptr.fill_((ptr + n) % k_size)
        return rows


def moco_ft_step(model: MoCo, optimizer: torch.optim.Optimizer, x_q: torch.Tensor,
                 x_k: torch.Tensor, gen: torch.Generator, alpha_ex: float = 2.0,
                 alpha_in: float = 1.6) -> torch.Tensor:
    """One MoCo step with FT (eq. 3 on the pair, Sec 4.2 on the queue) in one process:
    the paper's path only, to read beside facebookresearch/moco's builder.py.  MoCo with
    ``FTConfig(pos=True, neg=True)`` in the training loop takes the same step
    (tests/test_moco_step.py compares loss, gradients, weights and queue)."""
    q = F.normalize(model.encoder_q(x_q), dim=1)              # queries: N×C
    with torch.no_grad():                                     # no gradient to keys
        ema_update(model.encoder_k, model.encoder_q, model.momentum)  # eq. 2
        perm = torch.randperm(len(x_k), generator=gen)        # shuffle-BN
        k = F.normalize(model.encoder_k(x_k[perm]), dim=1)[perm.argsort()]  # keys: N×C
    (n, c), size = q.shape, len(model.queue)
    lam_ex = sample_lambda(alpha_ex, "step", n, c, gen, shift=1.0)  # in (1, 2)
    q_ft, k_ft = extrapolate_positive(q, k, lam_ex)           # eq. 3
    lam_in = sample_lambda(alpha_in, "step", size, c, gen)    # in (0, 1)
    partners = sample_permutation(size, gen)
    negatives = interpolate_negatives(model.queue, lam_in, partners)  # Sec 4.2: K×C
    l_pos = (q_ft * k_ft).sum(1, keepdim=True)                # N×1
    l_neg = q_ft @ negatives.T                                # N×K
    logits = torch.cat([l_pos, l_neg], dim=1) / model.tau     # N×(1+K)
    loss = info_nce(logits)                                   # eq. 1
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model.enqueue(k)                                          # the clean keys
    return loss.detach()
