"""What the library checks of the tensors and numbers a caller hands it, before any arithmetic: one helper per kind
of bad argument, each naming the argument and the fix (the losses of :mod:`ftcl_core.losses`,
:mod:`ftcl_core.batch_losses` and :mod:`ftcl_core.ft` call them at their entry)."""

from __future__ import annotations

import math
import numbers

import torch

from ftcl_core.config_fields import is_numpy_bool
from ftcl_core.config_sections import MAX_TEMPERATURE, MIN_TEMPERATURE

# |row norm^2 - 1| below which a square queue's rows count as unit-norm keys (:func:`check_moco_inputs`): keys
# normalised in bf16 are off by at most 2 * 2^-8 ~ 0.008, in fp16 by 2 * 2^-11.
UNIT_NORM_TOL = 0.02


MAX_FEATURE = 1e18  # the largest feature a readout takes: its square, 1e36, stays below float32's 3.4e38


def off_unit_norm(x: torch.Tensor, dim: int = 1) -> float:
    """The largest ``|norm^2 - 1|`` over ``x``'s vectors along ``dim`` (rows for ``dim=1``), non-finite ones skipped
    (0.0 when there are none): how far a buffer of features is from L2-normalised."""
    off = (x.detach().float().square().sum(dim) - 1).abs()
    return float(off.nan_to_num(0.0, posinf=0.0).max()) if off.numel() else 0.0


def is_real(x: object) -> bool:
    """A real number (Python's, NumPy's, or a one-element tensor), not a bool, a complex number or a string."""
    if isinstance(x, torch.Tensor):
        return x.numel() == 1 and x.dtype != torch.bool and not x.is_complex()
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and not is_numpy_bool(x)


def is_count(x: object) -> bool:
    """A whole number (Python's or NumPy's), not a bool."""
    return isinstance(x, numbers.Integral) and not isinstance(x, bool) and not is_numpy_bool(x)


def described(x: object) -> str:
    """What an argument is, for an error message: ``a torch.float32 tensor of shape (5,)``, or its type's name."""
    return f"a {x.dtype} tensor of shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__


def is_index(x: object) -> bool:
    """An integer tensor that indexes rows: not floating, complex or bool, and not uint8, which torch's indexing reads
    as a mask (``queue[perm]`` with a uint8 ``perm`` picks rows where it is nonzero)."""
    return (isinstance(x, torch.Tensor) and not x.is_floating_point() and not x.is_complex()
            and x.dtype not in (torch.bool, torch.uint8))


def check_device(caller: str, device: object) -> None:
    """``device`` names a device torch knows (``"cpu"``, ``"cuda"``, ``"cuda:1"``, a ``torch.device``) that this
    machine has: a CUDA device where none is visible is refused with the fix, not torch's driver message."""
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError):
        raise ValueError(f"{caller}: device={device!r} is not a device: use 'cpu' or 'cuda'.") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{caller}: device={device!r} but no CUDA device is visible here; use device='cpu'.")


def check_dense(caller: str, **tensors: torch.Tensor) -> None:
    """Each of ``tensors`` holds numbers in the usual (strided) layout: a meta tensor (shapes, no data) or a sparse
    one is refused naming the argument and the fix."""
    for name, x in tensors.items():
        if isinstance(x, torch.Tensor) and x.is_meta:
            raise ValueError(f"{caller}: {name} is on the meta device, shapes without numbers: build the model on a "
                             "real device (cpu, cuda) or load its weights first.")
        if isinstance(x, torch.Tensor) and x.layout != torch.strided:
            raise TypeError(f"{caller}: {name} is a {x.layout} tensor; features are dense: pass {name}.to_dense().")


def temperature(caller: str, tau: object, hint: str, tensors: bool = False) -> float:
    """``tau`` as a float: a real number in [:data:`MIN_TEMPERATURE`, :data:`MAX_TEMPERATURE`], else a ValueError
    (``tensors``: the caller takes a one-element float tensor too, and the message says so)."""
    if not (is_real(tau) and not isinstance(tau, torch.Tensor) and math.isfinite(tau)
            and MIN_TEMPERATURE <= tau <= MAX_TEMPERATURE):
        also = ", or a one-element float tensor" if tensors else " (a Python number, not a tensor)"
        raise ValueError(f"{caller}: temperature tau={tau!r} must be a finite number > 0, from {MIN_TEMPERATURE:g} (below, "
                         f"the logits overflow) to {MAX_TEMPERATURE} (above, every logit is near 0){also}; {hint}.")
    return float(tau)


def check_global_rows(rows: object, n_global: object, n: int) -> None:
    """``rows``, the global indices of this process's ``n`` pairs among ``n_global`` (several processes), come
    together: a 1-D integer tensor of ``n`` entries, each in ``[0, n_global)`` (read on the CPU only), and a count
    ``n_global >= n``; anything else is refused naming the argument."""
    if rows is None or n_global is None:
        raise ValueError("rows and n_global come together (the global indices of this process's pairs among all "
                         "processes' n_global): pass both, or neither in one process.")
    if not is_count(n_global) or n_global < n:
        raise ValueError(f"n_global={n_global!r} must be a whole number >= the {n} local pairs (the batch over all "
                         "processes).")
    if not (is_index(rows) and rows.dim() == 1 and len(rows) == n):
        raise TypeError(f"rows must be a 1-D integer tensor of the {n} local pairs' global indices (uint8 reads as a "
                        f"mask), got {described(rows)}: pass torch.arange(n) + rank * n, say, or rows.long().")
    if rows.device.type == "cpu" and n and not (0 <= int(rows.min()) and int(rows.max()) < n_global):
        raise ValueError(f"rows hold indices from {int(rows.min())} to {int(rows.max())}, outside [0, "
                         f"n_global={n_global}): each is a pair's place in the whole batch.")
    if rows.device.type == "cpu" and rows.unique().numel() != n:
        shown = f"{rows.tolist()[:8]}{'...' if n > 8 else ''}"
        raise ValueError(f"rows repeat a global index ({shown}): each of the {n} local pairs has its own place in the "
                         "whole batch, e.g. torch.arange(n) + rank * n.")


def check_readout(caller: str, train_feats: object, train_labels: object, test_feats: object, test_labels: object,
                  **positive: object) -> None:
    """A readout's arguments: features as 2-D floating tensors of one width, labels as 1-D non-negative integer tensors
    of their rows, at least one test image, and each of ``positive`` (k, t, epochs, lr ...) a finite number > 0."""
    check_dense(caller, train_feats=train_feats, test_feats=test_feats)
    for feats, labels, which in ((train_feats, train_labels, "train"), (test_feats, test_labels, "test")):
        if not (isinstance(feats, torch.Tensor) and feats.dim() == 2 and feats.is_floating_point() and feats.shape[1]):
            raise TypeError(f"{caller}: {which}_feats must be a 2-D float tensor (images x features, at least one), "
                            f"got {described(feats)}.")
        if not (isinstance(labels, torch.Tensor) and labels.shape == feats.shape[:1] and not labels.is_floating_point()
                and labels.dtype != torch.bool and (not len(labels) or int(labels.min()) >= 0)):
            raise ValueError(f"{caller}: {which}_labels must be a 1-D integer tensor of class indices >= 0, one per "
                             f"row of {which}_feats ({feats.shape[0]}), got {described(labels)}.")
    if train_feats.shape[1] != test_feats.shape[1] or not len(test_feats) or not len(train_feats):
        raise ValueError(f"{caller}: train and test features must share their width and hold images, got "
                         f"{tuple(train_feats.shape)} and {tuple(test_feats.shape)}.")
    for name, v in positive.items():
        if not (is_real(v) and math.isfinite(v) and v > 0):
            raise ValueError(f"{caller}: {name}={v!r} must be a finite number > 0.")


def check_scores(caller: str, l_pos: object, l_neg: object, rows: bool = True) -> None:
    """A batch's scores: ``l_pos`` (N,) and ``l_neg`` (N, K), tensors (shapes only, nothing read; ``rows=False``: the
    statistics, which read the first queries of each, let N differ)."""
    if not (isinstance(l_pos, torch.Tensor) and isinstance(l_neg, torch.Tensor) and l_pos.dim() == 1 and l_neg.dim() == 2
            and (len(l_pos) == len(l_neg) or not rows) and len(l_pos) and l_neg.shape[0] and l_neg.shape[1]
            and l_pos.is_floating_point() and l_neg.is_floating_point()):
        raise ValueError(f"{caller}: l_pos must be (N,) and l_neg (N, K) float scores, N and K >= 1, got "
                         f"{described(l_pos)} and {described(l_neg)}.")


def check_views(caller: str, a: object, b: object) -> None:
    """Two views' features: 2-D float tensors of one shape and dtype (shapes only, nothing read)."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == 2 and a.shape == b.shape
            and a.dtype == b.dtype and a.is_floating_point() and a.shape[1]):
        raise ValueError(f"{caller}: the two views must be float tensors of one shape and dtype (N x C), got "
                         f"{described(a)} and {described(b)}.")


def check_modules(caller: str, hint: str = "", **modules: object) -> None:
    """Each of ``modules`` is a ``torch.nn.Module`` (a network, not its name or None); ``hint`` says what makes one."""
    for name, m in modules.items():
        if not isinstance(m, torch.nn.Module):
            raise TypeError(f"{caller}: {name} must be a torch.nn.Module, got {described(m)}" + (f": {hint}." if hint
                                                                                                else "."))


def check_counts(caller: str, minimum: int = 1, **counts: object) -> None:
    """Each of ``counts`` is a whole number >= ``minimum`` (sizes, batch sizes, layers, splits)."""
    for name, v in counts.items():
        if not is_count(v) or v < minimum:
            raise ValueError(f"{caller}: {name}={v!r} must be a whole number >= {minimum}.")


def check_head(caller: str, encoder: object, dim: object) -> None:
    """``dim`` is a whole number >= 1 and, where ``encoder`` has a ``head`` with a Linear layer, its last one's size."""
    check_counts(caller, dim=dim)
    head = getattr(encoder, "head", None)
    outs = [m.out_features for m in head.modules() if isinstance(m, torch.nn.Linear)] if isinstance(head, torch.nn.Module) else []
    if outs and outs[-1] != dim:
        raise ValueError(f"{caller}: dim={dim}, but the encoder's head makes {outs[-1]} features: pass dim={outs[-1]}.")


def check_images(caller: str, images: object) -> None:
    """A batch of images as the library stores them: a uint8 tensor ``(N, 3, H, W)`` of 0-255 values, N >= 1
    (shapes and dtype only, nothing read). Float images are refused: read as 0-255 they would be near black."""
    if isinstance(images, torch.Tensor) and images.is_floating_point():
        raise TypeError(f"{caller}: images must be uint8 (0-255), got {described(images)}: images in [0, 1] become "
                        "uint8 with (images * 255).round().to(torch.uint8).")
    if not (isinstance(images, torch.Tensor) and images.dtype == torch.uint8 and images.dim() == 4
            and images.shape[1] == 3 and len(images) and images.shape[2] and images.shape[3]):
        four = isinstance(images, torch.Tensor) and images.dim() == 4
        hint = (": channels last? pass images.permute(0, 3, 1, 2)." if four and images.shape[-1] == 3 else
                ": one gray channel becomes three with images.expand(-1, 3, -1, -1)." if four and images.shape[1] == 1
                else ".")
        raise ValueError(f"{caller}: images must be a uint8 tensor (N, 3, H, W) with N >= 1, got {described(images)}"
                         + hint)


def check_finite(caller: str, **tensors: torch.Tensor) -> None:
    """Each of ``tensors`` holds finite numbers below :data:`MAX_FEATURE` in size (read: for once-a-run inputs such as
    a readout's features; larger ones overflow float32 when squared, so normalising reads them as zeros)."""
    for name, x in tensors.items():
        x = x.detach()  # read, never differentiated
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"{caller}: {name} holds NaN or infinite values (a diverged encoder?): a readout of them "
                             "means nothing. Check the run's health first.")
        if x.numel() and float(x.abs().max()) > MAX_FEATURE:
            raise ValueError(f"{caller}: {name} holds values up to {float(x.abs().max()):.3g}, beyond {MAX_FEATURE:g}: "
                             "their squares overflow float32, so normalising reads them as zeros. Scale them first.")
