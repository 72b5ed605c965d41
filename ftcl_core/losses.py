"""InfoNCE (eq. 1) and the MoCo loss with the feature transformations, as the released code runs them (the other
methods' losses: :mod:`ftcl_core.batch_losses`).

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

from collections.abc import Mapping
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F

from ftcl_core import transforms
from ftcl_core.arguments import (
    UNIT_NORM_TOL,
    check_dense,
    check_global_rows,
    check_scores,
    described,
    off_unit_norm,
    temperature,
)
from ftcl_core.config import FTConfig
from ftcl_core.config_fields import is_numpy_bool

# the module's public names: each checks its arguments and names the fix; the rest are building blocks that
# take what these pass them
__all__ = ["FTLogits", "check_moco_inputs", "info_nce", "logits_from_scores", "mixed_queue", "moco_ft_logits",
           "moco_logits", "positive_ft"]


def info_nce(logits: torch.Tensor) -> torch.Tensor:
    """eq. 1 with the positive in column 0: ``-log softmax(logits)[:, 0]`` (logits already divided by tau).
    ``logits`` is a floating-point ``N x (1 + K)`` tensor, N >= 1 and K >= 1; anything else is refused with the fix."""
    check_dense("info_nce", logits=logits)
    if not (isinstance(logits, torch.Tensor) and logits.dim() == 2 and logits.is_floating_point()):
        raise TypeError(f"info_nce takes floating-point logits N x (1 + K), the positive in column 0, got {described(logits)}: "
                        "build them with ft.logits (or torch.cat([l_pos, l_neg], 1) / tau).")
    if logits.shape[0] == 0 or logits.shape[1] < 2:
        raise ValueError(f"info_nce needs at least one query and one negative, got logits of shape "
                         f"{tuple(logits.shape)} (N x (1 + K)): with no negative the loss is 0 whatever the features.")
    return F.cross_entropy(logits, torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device))


def moco_logits(q: torch.Tensor, k: torch.Tensor, negatives: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive scores ``(N,)`` and negative scores ``(N, K)``: cosines for unit inputs (the scores of eq. 1).
    ``q``, ``k``: N x C; ``negatives``: K x C (shapes checked, nothing read)."""
    _check_pair("moco_logits", q, k)
    _check_queue("moco_logits", negatives, q.shape[1])
    return (q * k).sum(1), q @ negatives.T


def _check_pair(caller: str, q: object, k: object) -> None:
    """Queries and keys: float tensors of one shape N x C (shape and dtype only)."""
    if not (isinstance(q, torch.Tensor) and isinstance(k, torch.Tensor) and q.dim() == 2 and q.shape == k.shape
            and q.is_floating_point() and k.is_floating_point()):
        raise ValueError(f"{caller}: q and k must be float tensors of one shape N x C, got {described(q)} and "
                         f"{described(k)}.")


def _check_queue(caller: str, queue: object, width: int | None = None) -> None:
    """A queue of keys: a 2-D float tensor K x C with K >= 1 and C the features' width, when given (shape only)."""
    if not (isinstance(queue, torch.Tensor) and queue.dim() == 2 and queue.is_floating_point() and len(queue)
            and (width is None or queue.shape[1] == width)):
        raise ValueError(f"{caller}: the queue must be a float tensor K x {'C' if width is None else width} (K >= 1 "
                         f"keys of the features' width), got {described(queue)}.")


QueueLayout = Literal["auto", "KC"]

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
    if sparse := next((n for n, t in (("q", q), ("k", k), ("queue", queue)) if t.layout != torch.strided), None):
        raise TypeError(f"{sparse} is a sparse tensor; features are dense: pass {sparse}.to_dense().")  # no data read
    if q.dim() == 2 and q.shape[1] < 2:  # C = 1 normalises to +-1: every score +-1, as model.dim=1 is refused
        raise ValueError(f"q is {tuple(q.shape)}: features of C = {q.shape[1]} dimension score "
                         f"{'0' if q.shape[1] == 0 else '+-1'} against everything; pass the encoder's N x C output, "
                         "C >= 2.")
    if (idle := next((k for k in ("union_queue", "renorm_neg") if getattr(ft, k)), None)) and not ft.neg:
        raise ValueError(f"ft.{idle}=True acts on the transformed negatives only; set neg=True too, or drop it.")
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
    if off_unit_norm(queue, 1) <= UNIT_NORM_TOL and queue.isfinite().all():  # rows of unit norm: normalised keys
        return
    if off_unit_norm(queue, 0) <= UNIT_NORM_TOL and queue.isfinite().all():
        raise ValueError(builder + f" (K = C = {c}: its columns are unit-norm keys, its rows are not).")
    raise ValueError(f"queue is square (K = C = {c}) and its rows are not unit-norm keys, nor are its columns: "
                     "the layout cannot be told. MoCo stores normalised keys; if this queue is K x C (one key per "
                     "row), pass queue_layout='KC'; if it is builder.py's C x K, pass queue.T.")


def _check_ft(caller: str, ft: object) -> None:
    if not isinstance(ft, FTConfig):
        raise TypeError(f"{caller}: ft must be an FTConfig (from ftcl_core.ft import FTConfig), got {described(ft)}: "
                        "FTConfig(pos=True, neg=True), say; FTConfig() is FT off.")
    _check_when(caller, ft)


def _check_when(caller: str, ft: FTConfig) -> None:
    """Refuse an FTConfig that says when FT acts (its ``WHEN_KEYS``: ``start_epoch``, ``start``, ...): one step
    cannot read it, so it would be ignored; the step takes ``active`` instead."""
    if when := ft.when_keys():
        raise ValueError(f"{caller} computes one step, so FTConfig({when}) would be ignored: pass ft.step_only() and "
                         "active=epoch >= start_epoch (or ft.PlateauStart's start.on); the library's loop does this.")


def _rows_of_this_rank(lam: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
    """This rank's rows of a per-sample lambda drawn for the global batch (unchanged otherwise); the rows are
    moved to lambda's device (a host lambda: to the CPU, as ever; a device lambda: no copy, no wait)."""
    return lam[rows.to(lam.device)] if rows is not None and lam.dim() and lam.shape[0] > 1 else lam


def positive_ft(q: torch.Tensor, k: torch.Tensor, ft: FTConfig, gen: transforms.Draws,
                rows: torch.Tensor | None = None, n_global: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """eq. 3 (extrapolation) or Table 3 (interpolation) on a batch of positive pairs, then Supp F if asked.

    Under torch.distributed, ``rows`` are the global indices of the local pairs among ``n_global``: a
    per-sample lambda is drawn for all of them, alike on every rank, and each rank takes its own."""
    _check_ft("positive_ft", ft)
    _check_pair("positive_ft", q, k)
    if rows is not None or n_global is not None:
        check_global_rows(rows, n_global, q.shape[0])
    if not ft.pos:
        return q, k
    shift = 1.0 if ft.pos_mode == "extrapolate" else 0.0
    n = q.shape[0] if n_global is None else n_global
    granularity, count = ft.lambda_draws(n)  # the paper's: ft.granularity, n
    lam = transforms.sample_lambda(ft.alpha_ex, granularity, count, q.shape[1], gen, shift=shift)
    if count != n:  # each of the count draws serves n / count pairs in turn
        lam = lam.repeat_interleave(n // count, 0)
    lam = _rows_of_this_rank(lam, rows).to(q.device)
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
    ``rows``/``n_global`` as in :func:`positive_ft`.

    ``q, k`` are ``N x C``, ``queue`` is ``K x C`` (one stored key per row;
    facebookresearch/moco's ``builder.py`` keeps ``C x K``: pass ``queue.T``), checked
    by :func:`check_moco_inputs` (``queue_layout`` as there: ``"KC"`` states the layout
    of a square queue and skips its data check).
    """
    check_moco_inputs(q, k, queue, ft, queue_layout)
    _check_when("moco_ft_logits", ft)
    if rows is not None or n_global is not None:
        check_global_rows(rows, n_global, q.shape[0])
    active = bool(active) if is_numpy_bool(active) else active
    if not isinstance(active, bool):
        raise TypeError(f"active={active!r}: True (FT on) or False (plain MoCo's "
                        "logits); a string, a number or a tensor is refused ('no' "
                        "and 0.0 would read differently): pass bool(...) of it.")
    own_rows = torch.arange(queue.shape[0], device=queue.device)
    if not (active and ft.any):
        pos, neg = moco_logits(q, k, queue)
        return FTLogits(pos, neg, own_rows)
    if ft.neg and (draws := ft.lambda_draws(q.shape[0])[1]) != q.shape[0]:
        raise ValueError(f"this FTConfig draws {draws} lambdas for {q.shape[0]} "
                         "queries, each group against its own mixture of the queue: "
                         "its owner's step computes it (sharded_ft_logits).")
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
        lam_h = _rows_of_this_rank(lam_h, rows).to(q.device)
        l_neg = transforms.hard_negative_logits(q, negatives, lam_h, z_anchor=q_clean)
    else:
        l_neg = q @ negatives.T
    return FTLogits(l_pos, l_neg, partners)


def mixed_queue(queue: torch.Tensor, ft: FTConfig, gen: transforms.Draws) -> tuple[torch.Tensor, torch.Tensor]:
    """Sec 4.2 (interpolation) or Supp G.1 (extrapolation) of the queue with a random partner per row, then
    Supp F if asked: the transformed negatives and the partners' rows.  Lambda first, then the permutation,
    both from ``gen`` (on the host or on the device, :data:`ftcl_core.transforms.Draws`)."""
    _check_ft("mixed_queue", ft)
    _check_queue("mixed_queue", queue)
    shift = 1.0 if ft.neg_mode == "extrapolate" else 0.0
    lam_n = transforms.sample_lambda(ft.alpha_in, ft.granularity, queue.shape[0], queue.shape[1], gen, shift=shift)
    perm = transforms.sample_permutation(queue.shape[0], gen).to(queue.device)
    negatives = transforms.interpolate_negatives(queue, lam_n.to(queue.device), perm)
    if ft.renorm_neg:  # Supp F
        negatives = transforms.renormalize(negatives)
    return negatives, perm


def logits_from_scores(l_pos: torch.Tensor, l_neg: torch.Tensor, tau: float) -> torch.Tensor:
    """Stack positive and negative scores into InfoNCE logits divided by the temperature ``tau`` (eq. 1): a number
    (NumPy's too), or a one-element tensor, a learnable temperature (its range read on the CPU only: on a GPU the
    read would wait on the device every step)."""
    check_scores("logits_from_scores", l_pos, l_neg)
    if isinstance(tau, torch.Tensor) and tau.numel() == 1 and tau.is_floating_point():
        if tau.device.type == "cpu":  # negative, NaN or tiny: logits of the wrong sign, NaN or overflowing
            temperature("logits", float(tau.detach()), "MoCo v1 uses 0.07, v2 0.2", tensors=True)
        return torch.cat([l_pos.unsqueeze(1), l_neg], dim=1) / tau
    tau = temperature("logits", tau, "MoCo v1 uses 0.07, v2 0.2", tensors=True)
    return torch.cat([l_pos.unsqueeze(1), l_neg], dim=1) / tau
