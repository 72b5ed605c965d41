"""torch.distributed for the training loop: process group set-up, and row sharding that keeps the maths of
one process.

Each rank holds the rows ``rank::world`` of the global batch (strided, not contiguous).  With that layout a
run on W ranks computes what one process computes on the whole batch with split-BN of W strided groups
(:class:`ftcl_core.models.SplitBatchNorm2d`), and :func:`gather_rows` puts gathered rows back in the global
order, so queues, in-batch negatives and shuffle-BN permutations are identical to the one-process run.
In one process every function here is the identity.
"""

from __future__ import annotations

import datetime
import os

import torch
import torch.distributed as dist


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    return dist.get_rank() if is_distributed() else 0


def world_size() -> int:
    return dist.get_world_size() if is_distributed() else 1


def launched_by_torchrun() -> bool:
    """True when the environment of ``torchrun`` (``WORLD_SIZE`` > 1) asks for several processes."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def init_from_env(device: str) -> str:
    """Join the process group ``torchrun`` describes (gloo on CPU, nccl on CUDA); return this rank's device."""
    if not launched_by_torchrun() or is_distributed():
        return device
    backend = "nccl" if device.startswith("cuda") else "gloo"
    if device.startswith("cuda"):
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        device = f"cuda:{local}"
    # collectives may wait on rank 0 while it holds the run lock, decodes a data set or writes a checkpoint
    dist.init_process_group(backend, timeout=datetime.timedelta(hours=2))
    return device


def shard_rows(x: torch.Tensor) -> torch.Tensor:
    """This rank's rows ``rank::world`` of a global batch."""
    w = world_size()
    return x if w == 1 else x[rank()::w]


def gather_rows(x: torch.Tensor, grad: bool = False) -> torch.Tensor:
    """The global batch from every rank's ``shard_rows``, in the global row order.

    ``grad=True`` keeps the graph: the backward of the gather sums every rank's gradient into the rows this
    rank owns (SimCLR's negatives from other ranks); otherwise the result is detached (MoCo's keys).
    """
    w = world_size()
    if w == 1:
        return x
    if grad:
        parts = list(_GatherWithGrad.apply(x))
    else:
        parts = [torch.empty_like(x) for _ in range(w)]
        dist.all_gather(parts, x.contiguous())
    # parts[r][i] is global row r + w * i: interleave back to the global order
    return torch.stack(parts, dim=1).reshape(w * x.shape[0], *x.shape[1:])


class _GatherWithGrad(torch.autograd.Function):
    """all_gather whose backward hands each rank the sum, over ranks, of the gradients of its own rows."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        parts = [torch.empty_like(x) for _ in range(world_size())]
        dist.all_gather(parts, x.contiguous())
        return tuple(parts)

    @staticmethod
    def backward(ctx, *grads: torch.Tensor) -> torch.Tensor:
        g = torch.stack(grads)
        dist.all_reduce(g)
        return g[rank()]


def mean_over_ranks(x: torch.Tensor) -> torch.Tensor:
    """The mean of ``x`` over ranks (for the logged loss and statistics, so every rank logs the same)."""
    return sum_over_ranks(x) / world_size()


def sum_over_ranks(x: torch.Tensor) -> torch.Tensor:
    """The sum of ``x`` over ranks (SwAV's Sinkhorn normalises over the whole batch)."""
    if world_size() == 1:
        return x
    y = x.clone()
    dist.all_reduce(y)
    return y


def max_over_ranks(x: torch.Tensor) -> torch.Tensor:
    """The elementwise maximum of ``x`` over ranks."""
    if world_size() == 1:
        return x
    y = x.clone()
    dist.all_reduce(y, op=dist.ReduceOp.MAX)
    return y


def broadcast_flag(flag: bool) -> bool:
    """Rank 0's ``flag`` on every rank (rank 0 decides, the others follow)."""
    if world_size() == 1:
        return flag
    box = [flag]
    dist.broadcast_object_list(box, src=0)
    return bool(box[0])


@torch.no_grad()
def average_batchnorm_buffers(model: torch.nn.Module) -> None:
    """Average the BN running statistics over ranks: each rank's come from its own rows, and their mean is
    what one process with split-BN keeps (the update is linear in the batch statistics)."""
    if world_size() == 1:
        return
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
            for buf in (m.running_mean, m.running_var):
                dist.all_reduce(buf)
                buf /= world_size()


def global_rows(n_local: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """The global indices of this rank's ``n_local`` rows (``rank::world`` of ``n_local * world``)."""
    return torch.arange(rank(), n_local * world_size(), world_size(), device=device)


def barrier() -> None:
    if is_distributed():
        dist.barrier()


def is_main() -> bool:
    return rank() == 0


def rank_from_env() -> int:
    """This process's rank as ``torchrun`` set it (0 when not launched by it), valid after :func:`shutdown`."""
    return int(os.environ.get("RANK", "0"))


def shutdown() -> None:
    """Leave the process group, if this process joined one."""
    if is_distributed():
        dist.destroy_process_group()
