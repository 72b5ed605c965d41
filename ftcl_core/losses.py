"""InfoNCE (eq. 1) and the MoCo loss with the feature transformations, as the released code runs them.

Released-code semantics (the authors' code, https://github.com/DTennant/CL-Visualizing-Feature-Transformation),
reproduced by :func:`moco_ft_logits`:
FT acts on the L2-normalised features inside the loss, just before the logits; the extrapolated query is
also used against the negatives; gradient flows through the mixed key (it holds ``(1-l) z_q``); the
queue is transformed only for this step, the clean keys are what gets enqueued (by the caller).

Every random draw of FT comes from the ``gen`` the caller passes (:data:`ftcl_core.transforms.Draws`): a host
``torch.Generator``, whose draws are then moved to the features' device (every stored run), or a
:class:`~ftcl_core.transforms.DeviceDraws`, whose draws are made on the device (no copy, no wait).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F

from ftcl_core import distributed, transforms
from ftcl_core.config import FTConfig


def info_nce(logits: torch.Tensor) -> torch.Tensor:
    """eq. 1 with the positive in column 0: ``-log softmax(logits)[:, 0]`` (logits already divided by tau).
    ``logits`` is a floating-point ``N x (1 + K)`` tensor, N >= 1 and K >= 1; anything else is refused with the fix."""
    if not (isinstance(logits, torch.Tensor) and logits.dim() == 2 and logits.is_floating_point()):
        what = f"a {logits.dtype} tensor of shape {tuple(logits.shape)}" if isinstance(logits, torch.Tensor) else \
            type(logits).__name__
        raise TypeError(f"info_nce takes floating-point logits N x (1 + K), the positive in column 0, got {what}: "
                        "build them with ft.logits (or torch.cat([l_pos, l_neg], 1) / tau).")
    if logits.shape[0] == 0 or logits.shape[1] < 2:
        raise ValueError(f"info_nce needs at least one query and one negative, got logits of shape "
                         f"{tuple(logits.shape)} (N x (1 + K)): with no negative the loss is 0 whatever the features.")
    return F.cross_entropy(logits, torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device))


def moco_logits(q: torch.Tensor, k: torch.Tensor, negatives: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive scores ``(N,)`` and negative scores ``(N, K)``: cosines for unit inputs (the scores of eq. 1)."""
    return (q * k).sum(1), q @ negatives.T


QueueLayout = Literal["auto", "KC"]

# |row norm^2 - 1| below which a square queue's rows count as unit-norm keys (:func:`check_moco_inputs`): keys
# normalised in bf16 are off by at most 2 * 2^-8 ~ 0.008, in fp16 by 2 * 2^-11.
UNIT_NORM_TOL = 0.02


def check_moco_inputs(q: torch.Tensor, k: torch.Tensor, queue: torch.Tensor, ft: object,
                      queue_layout: QueueLayout = "auto") -> None:
    """The errors a MoCo that lifts FT meets first, named with their fix (:func:`moco_ft_logits` runs this).

    * ``ft`` must be an :class:`~ftcl_core.config.FTConfig` (a dict: ``FTConfig(**d)``).
    * ``q`` and ``k`` are ``N x C``; ``queue`` is ``K x C``, one stored key per row (what :class:`MoCo` keeps).
      facebookresearch/moco's ``builder.py`` keeps its queue ``C x K`` (one key per column, ``l_neg =
      einsum('nc,ck->nk', q, queue)``): that layout is refused with the fix, ``queue.T``.
    * ``K = C`` (a square queue) cannot be told apart by its shape, so it is told by its data, as MoCo stores
      keys: L2-normalised.  Rows of unit norm (``|norm^2 - 1| <= UNIT_NORM_TOL``) are read as ``K x C``: a
      legitimate queue of normalised keys always passes.  Otherwise unit-norm columns are ``builder.py``'s
      ``C x K`` (refused, ``queue.T``), and neither is refused as ambiguous: pass ``queue_layout="KC"`` to
      state it.  A ``C x K`` buffer passes for ``K x C`` only if its C rows are unit-norm by chance as well:
      5 % of random unit-column buffers at C = 2, 0.1 % at C = 3, none in 200 000 from C = 6.

    Not checked: that the features are of unit norm and finite (a check would read the device every step); pass
    ``F.normalize(x, dim=1)`` of finite features, as MoCo does.

    Cost: for ``K != C``, or ``queue_layout="KC"``, a few comparisons of shapes on the host (about a
    microsecond, no work on the device, no synchronisation).  For a square queue with ``queue_layout="auto"``,
    one pass over the ``K x K`` queue and one device-to-host read (a synchronisation on a GPU), every call.
    """
    if not isinstance(ft, FTConfig):
        fix = "FTConfig(**d)" if isinstance(ft, Mapping) else "FTConfig(pos=..., neg=...)"
        raise TypeError(f"ft must be an FTConfig (from ftcl_core.ft import FTConfig), got {type(ft).__name__}: "
                        f"build it with {fix}; FTConfig() is FT off.")
    if not all(isinstance(t, torch.Tensor) for t in (q, k, queue)):
        kinds = ", ".join(type(t).__name__ for t in (q, k, queue))
        raise TypeError(f"q, k and queue must be torch tensors, got {kinds}: pass torch.as_tensor(x) (features, "
                        "normalised: F.normalize(x, dim=1)).")
    if q.dim() == 2 and q.shape[1] == 0:
        raise ValueError(f"q is {tuple(q.shape)}: features with no dimension (C = 0) score 0 against everything; pass "
                         "the encoder's N x C output, C >= 1.")
    if (idle := next((k for k in ("union_queue", "renorm_neg") if getattr(ft, k)), None)) and not ft.neg:
        raise ValueError(f"ft.{idle}=True acts on the transformed negatives only; set neg=True too, or drop it.")
    if ft.shards > 1 and q.dim() == 2 and q.shape[0] % ft.shards:
        raise ValueError(f"ft.shards={ft.shards} draws one lambda per shard of queries: the batch of {q.shape[0]} "
                         f"must divide into {ft.shards} equal shards. Set shards to a divisor of the batch, or 1.")
    if queue_layout not in ("auto", "KC"):
        raise ValueError(f"queue_layout={queue_layout!r}: 'auto' (told by shape, or by data when K = C) or 'KC' (one "
                         "key per row, stated); builder.py's C x K queue is passed as queue.T.")
    if q.dim() != 2 or k.shape != q.shape:
        raise ValueError(f"q and k must both be N x C (normalised query and key features), got q {tuple(q.shape)} "
                         f"and k {tuple(k.shape)}.")
    n, c = q.shape
    if not (q.is_floating_point() and k.is_floating_point() and queue.is_floating_point()):
        raise TypeError(f"q, k and queue must be floating-point features (normalised), got {q.dtype}, {k.dtype} and "
                        f"{queue.dtype}: pass F.normalize(x.float(), dim=1).")
    if not q.dtype == k.dtype == queue.dtype:  # under autocast the queue keeps its own dtype: cast q and k to it
        raise TypeError(f"q, k and queue must share one dtype, got {q.dtype}, {k.dtype} and {queue.dtype}: cast the "
                        f"features to the queue's, q.to(queue.dtype) and k.to(queue.dtype).")
    if n == 0:
        raise ValueError("q and k hold no query (N = 0): pass a batch of at least one image's features.")
    if queue.dim() != 2:
        raise ValueError(f"queue must be K x C = (K, {c}), one stored key per row, got shape {tuple(queue.shape)}.")
    if queue.shape[0] == 0:
        raise ValueError("queue holds no keys (K = 0): InfoNCE needs negatives; fill it with normalised keys first "
                         "(MoCo starts from random unit vectors).")
    rows, cols = queue.shape
    builder = (f"queue is {rows} x {cols}: C x K = ({c}, K={cols}), facebookresearch/moco builder.py's layout "
               f"(one key per column); ftcl_core takes K x C = ({cols}, {c}), one stored key per row: pass queue.T "
               "(queue.t(), a view, no copy)")
    if cols != c:
        if rows == c:
            raise ValueError(builder + ".")
        raise ValueError(f"queue must be K x C = (K, {c}) (C = q.shape[1], one stored key per row), got shape "
                         f"{tuple(queue.shape)}.")
    if rows != c or queue_layout == "KC":
        return
    if queue_layout != "auto":
        raise ValueError(f"queue_layout={queue_layout!r}: 'auto' (the default) or 'KC' (a stated K x C queue).")
    sq = queue.detach().float().square()
    if bool(((sq.sum(1) - 1).abs() <= UNIT_NORM_TOL).all()):  # rows of unit norm: normalised keys, K x C
        return
    if bool(((sq.sum(0) - 1).abs() <= UNIT_NORM_TOL).all()):
        raise ValueError(builder + f" (K = C = {c}: its columns are unit-norm keys, its rows are not).")
    raise ValueError(f"queue is square (K = C = {c}) and its rows are not unit-norm keys, nor are its columns: "
                     "the layout cannot be told. MoCo stores normalised keys; if this queue is K x C (one key per "
                     "row), pass queue_layout='KC'; if it is builder.py's C x K, pass queue.T.")


def _mine(lam: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
    """This rank's rows of a per-sample lambda drawn for the global batch (unchanged otherwise); the rows are
    moved to lambda's device (a host lambda: to the CPU, as ever; a device lambda: no copy, no wait)."""
    return lam[rows.to(lam.device)] if rows is not None and lam.dim() and lam.shape[0] > 1 else lam


def positive_ft(q: torch.Tensor, k: torch.Tensor, ft: FTConfig, gen: transforms.Draws,
                rows: torch.Tensor | None = None, n_global: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """eq. 3 (extrapolation) or Table 3 (interpolation) on a batch of positive pairs, then Supp F if asked.

    Under torch.distributed, ``rows`` are the global indices of the local pairs among ``n_global``: a
    per-sample lambda is drawn for all of them, alike on every rank, and each rank takes its own."""
    if not ft.pos:
        return q, k
    shift = 1.0 if ft.pos_mode == "extrapolate" else 0.0
    n = q.shape[0] if n_global is None else n_global
    if ft.shards > 1:  # the released run's 8 processes: one lambda per shard of n / shards pairs
        lam = transforms.sample_lambda(ft.alpha_ex, "sample", ft.shards, q.shape[1], gen, shift=shift)
        lam = lam.repeat_interleave(n // ft.shards, 0)
    else:
        lam = transforms.sample_lambda(ft.alpha_ex, ft.granularity, n, q.shape[1], gen, shift=shift)
    lam = _mine(lam, rows).to(q.device)
    q, k = transforms.extrapolate_positive(q, k, lam)
    if ft.renorm_pos:  # Supp F
        q, k = transforms.renormalize(q), transforms.renormalize(k)
    return q, k


class FTLogits(NamedTuple):
    """MoCo's scores after FT (before the temperature), and where each negative comes from."""

    pos: torch.Tensor       # (N,) the positive pairs' scores
    neg: torch.Tensor       # (N, K') the negatives' scores (K' = K, or 2K with the union queue)
    partners: torch.Tensor | None  # (K',) the queue row each negative is mixed with (its own row when not mixed)


def moco_ft_logits(
    q: torch.Tensor, k: torch.Tensor, queue: torch.Tensor, ft: FTConfig,
    gen: transforms.Draws, active: bool = True, rows: torch.Tensor | None = None,
    n_global: int | None = None,
    queue_layout: QueueLayout = "auto",
) -> FTLogits:
    """Positive ``(N,)`` and negative ``(N, K')`` scores after FT (before the
    temperature), as the released code computes them: eq. 3 (or Table 3) on the pair,
    Sec 4.2 (or Supp G.1) on the queue, Table 5's union queue, Supp G.2's hard
    negatives, Supp F's re-normalisation.

    ``active=False`` (before ``ft.start_epoch``) gives the plain MoCo scores.  Random
    draws come from ``gen``: a host generator's are made on the CPU and moved to the
    features' device, a :class:`~ftcl_core.transforms.DeviceDraws`' on its device;
    ``rows``/``n_global`` as in :func:`positive_ft`.  One lambda per shard of queries
    against the queue (``ft.shards > 1`` with ``ft.neg``) is :func:`sharded_ft_logits`.

    ``q, k`` are ``N x C``, ``queue`` is ``K x C`` (one stored key per row;
    facebookresearch/moco's ``builder.py`` keeps ``C x K``: pass ``queue.T``), checked
    by :func:`check_moco_inputs` (``queue_layout`` as there: ``"KC"`` states the layout
    of a square queue and skips its data check).
    """
    check_moco_inputs(q, k, queue, ft, queue_layout)
    if not isinstance(active, bool):
        raise TypeError(f"active={active!r}: True (FT on) or False (plain MoCo's "
                        "logits); a string or a number is refused, since 'no' and "
                        "0.0 would read differently.")
    own_rows = torch.arange(queue.shape[0], device=queue.device)
    if not (active and ft.any):
        pos, neg = moco_logits(q, k, queue)
        return FTLogits(pos, neg, own_rows)
    if ft.neg and ft.shards > 1:
        raise ValueError("ft.shards > 1 with ft.neg mixes one queue per shard of "
                         "queries: call sharded_ft_logits.")
    if not isinstance(gen, torch.Generator | transforms.DeviceDraws):
        raise TypeError("gen must be a torch.Generator (or "
                        "ftcl_core.transforms.DeviceDraws) for FT's draws, got "
                        f"{type(gen).__name__}: "
                        "pass torch.Generator().manual_seed(seed).")
    n, d = q.shape
    q_clean = q
    q, k = positive_ft(q, k, ft, gen, rows, n_global)
    negatives, partners = queue, own_rows
    if ft.neg:  # Sec 4.2 (interpolation) or Supp G.1 (extrapolation)
        negatives, partners = mixed_queue(queue, ft, gen)
        if ft.union_queue:  # Table 5: Z' U Z_neg
            negatives = torch.cat([negatives, queue], 0)
            partners = torch.cat([partners, own_rows])
    l_pos = (q * k).sum(1)
    if ft.hard:  # Supp G.2, one hard queue per query, never materialised
        n_all = n if n_global is None else n_global
        shape = transforms.lambda_shape(ft.granularity, n_all, d)
        lam_h = transforms.sample_beta(ft.hard_a, ft.hard_b, shape, gen)
        lam_h = _mine(lam_h, rows).to(q.device)
        l_neg = transforms.hard_negative_logits(q, negatives, lam_h, z_anchor=q_clean)
    else:
        l_neg = q @ negatives.T
    return FTLogits(l_pos, l_neg, partners)


def mixed_queue(queue: torch.Tensor, ft: FTConfig, gen: transforms.Draws) -> tuple[torch.Tensor, torch.Tensor]:
    """Sec 4.2 (interpolation) or Supp G.1 (extrapolation) of the queue with a random partner per row, then
    Supp F if asked: the transformed negatives and the partners' rows.  Lambda first, then the permutation,
    both from ``gen`` (on the host or on the device, :data:`ftcl_core.transforms.Draws`)."""
    shift = 1.0 if ft.neg_mode == "extrapolate" else 0.0
    lam_n = transforms.sample_lambda(ft.alpha_in, ft.granularity, queue.shape[0], queue.shape[1], gen, shift=shift)
    perm = transforms.sample_permutation(queue.shape[0], gen).to(queue.device)
    negatives = transforms.interpolate_negatives(queue, lam_n.to(queue.device), perm)
    if ft.renorm_neg:  # Supp F
        negatives = transforms.renormalize(negatives)
    return negatives, perm


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
    n = rows.shape[0]
    own = symmetric_rows(rows, n_global)
    pos = torch.cat([rows + n_global, rows])
    keep = torch.ones(2 * n, 2 * n_global, dtype=torch.bool, device=rows.device)
    idx = torch.arange(2 * n, device=rows.device)
    keep[idx, own] = False
    keep[idx, pos] = False
    return keep


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
    n = anchors.shape[0] // 2
    bank = torch.cat([positives[n:], positives[:n]])  # [view-1 features; view-2 features]
    keep = other_sample_mask(torch.arange(n, device=anchors.device), n)
    return (anchors @ bank.T)[keep].view(2 * n, -1)


def byol_loss(l_pos: torch.Tensor) -> torch.Tensor:
    """BYOL's loss, the mean of ``2 - 2 cos(p, z)`` over both directions, on scores after FT (eq. 3).

    The mean over both directions is half of BYOL's summed ``L + L~``, so the same lr takes half the step
    (the configs' lr is chosen for this scale)."""
    return (2 - 2 * l_pos).mean()


def simsiam_loss(l_pos: torch.Tensor) -> torch.Tensor:
    """SimSiam's loss, the mean negative cosine over both directions, on scores after FT (eq. 3)."""
    return -l_pos.mean()


def logits_from_scores(l_pos: torch.Tensor, l_neg: torch.Tensor, tau: float) -> torch.Tensor:
    """Stack positive and negative scores into InfoNCE logits divided by the temperature ``tau`` (eq. 1): a number
    (NumPy's too), or a one-element tensor, a learnable temperature (not checked for its sign: that would wait on
    the device every step)."""
    if isinstance(tau, torch.Tensor) and tau.numel() == 1 and tau.is_floating_point():
        return torch.cat([l_pos.unsqueeze(1), l_neg], dim=1) / tau
    if isinstance(tau, bool) or not isinstance(tau, numbers.Real) or not math.isfinite(tau) or tau <= 0:
        raise ValueError(f"temperature tau={tau!r} must be a finite number > 0 (or a one-element float tensor); MoCo "
                         "v1 uses 0.07, v2 0.2.")
    return torch.cat([l_pos.unsqueeze(1), l_neg], dim=1) / tau


def _logsumexp_all_ranks(x: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """log-sum-exp over ``dim`` (None: everything) of this rank's values and every other rank's."""
    local = torch.logsumexp(x.flatten() if dim is None else x, dim=0 if dim is None else dim, keepdim=dim is not None)
    m = distributed.max_over_ranks(local)
    return m + torch.log(distributed.sum_over_ranks(torch.exp(local - m)))


@torch.no_grad()
def sinkhorn(scores: torch.Tensor, epsilon: float = 0.05, iters: int = 3) -> torch.Tensor:
    """SwAV's codes ``(B, C)``: Sinkhorn-Knopp on ``exp(scores / epsilon)`` so that the (all-rank) batch
    spreads equally over the C prototypes; each row sums to 1 (Caron et al. 2020, Sec 3.1; the SwAV row of
    Table 7 and Supp E).

    SwAV's iterations, run in the log domain: the same numbers, but no overflow or underflow when FT's
    extrapolated features score far outside [-1, 1]."""
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
    q1, q2 = sinkhorn(scores1.detach(), epsilon, iters), sinkhorn(scores2.detach(), epsilon, iters)
    return -0.5 * ((q2 * F.log_softmax(scores1 / tau, dim=1)).sum(1).mean()
                   + (q1 * F.log_softmax(scores2 / tau, dim=1)).sum(1).mean())
