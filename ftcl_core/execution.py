"""How a run executes, apart from what it computes: the device, float32 exactness on CUDA, the memory format
and split batch-norm layout, ``torch.compile``, and the model's wrapped forms (SyncBN, DDP, compiled).

The keys that choose the device, the memory format and the compiler (:data:`ftcl_core.config.EXECUTION_KEYS`)
are not part of a run's identity: two executions of one config that differ only in them compute the same maths
and differ by floating-point rounding.  One of them, ``train.ft_draws`` (:func:`ft_draws_mode`), changes more:
where FT draws its lambdas and permutations, on the host (every CPU run, and every run stored before the key) or
on the device (the CUDA default), so a GPU run's lambdas and permutations differ from those of a CPU run of its
seed (the same distributions, another random stream).  What a run chose is recorded in its
``provenance.json`` (:func:`execution_path`, and ``ft_draws``), so that a replay runs it the same way.  The
training loop, the step-time profile, the benchmarks and the GPU check all read the policy from here.
"""

from __future__ import annotations

import inspect
import os
import shutil

import torch

from ftcl_core import distributed
from ftcl_core.config import ConfigError, RunConfig
from ftcl_core.methods import build_model
from ftcl_core.models import Encoder, group_major
from ftcl_core.transforms import DeviceDraws

# Measured on an Intel Xeon (AVX-512, 2 threads; `python -m benchmarks.bench compile`,
# results/bench_compile_intel-xeon-avx512.txt): compiling the MoCo v2 networks with inductor costs about 90 s with
# an empty cache (C++ kernels built by the system compiler) and about 6 s with a warm one, and makes the model
# step about 1.16x faster (some 30 ms of 200).  A cold compile pays for itself within one run from about 3 200
# steps, a warm one from about 220.  So `auto` compiles runs of at least 3 000 steps; shorter runs stay eager,
# except in a sweep whose runs of one network add up to that (ftcl_core.study.sweeps.sweep_compiles: only the
# first compiles cold).
COMPILE_AUTO_MIN_STEPS = 3000


def resolve_device(cfg: RunConfig) -> str:
    """The device the run trains on: ``cfg.device``, with ``auto`` read as CUDA where a CUDA device is visible,
    else the CPU.  Raises :class:`ConfigError` when the config asks for CUDA and none is visible."""
    device = cfg.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError("device=cuda but no CUDA device is visible; use device=cpu or device=auto.")
    return device


def exact_float32(cfg: RunConfig, device: str) -> None:
    """Make a float32 run on CUDA compute in float32 (a process-wide setting): PyTorch lets cuDNN convolutions
    round their inputs to TF32 (10 mantissa bits) by default, which would make a GPU run of a CPU recipe a
    different computation, not another execution of the same one.  ``train.amp=bf16`` runs choose their
    precision themselves and are left alone; on the CPU nothing changes."""
    if device.startswith("cuda") and cfg.train.amp is None:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False


def channels_last(cfg: RunConfig) -> bool:
    """Whether the networks run channels-last: ``train.channels_last`` true, or ``auto`` (the default).

    Measured on an Intel Xeon (AVX-512, 2 threads; ``results/bench_breakdown_intel-xeon-avx512.txt``), a channels-last
    ResNet-10 with split batch-norm in the ``blocks`` layout runs its forward and backward about 1.3x faster
    than NCHW; on tensor cores channels-last is the usual fast layout."""
    return cfg.train.channels_last in (True, "auto")


def memory_format(views: tuple[torch.Tensor, torch.Tensor], channels_last: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The views channels-last (NHWC) where ``channels_last``, else as they are (the same values either way)."""
    if not channels_last:
        return views
    return tuple(v.contiguous(memory_format=torch.channels_last) for v in views)


def split_bn_layout(cfg: RunConfig) -> str | None:
    """How split batch-norm groups its samples: ``blocks`` (group-major, contiguous groups; with channels-last,
    :func:`ftcl_core.models.group_major`) or ``interleaved`` (strided groups, NCHW); ``None`` without split
    batch-norm.  Both layouts normalise the same groups."""
    if cfg.model.bn_splits <= 1:
        return None
    return "blocks" if channels_last(cfg) else "interleaved"


def split_bn_kernel(cfg: RunConfig, device: str, steps: int | None = None) -> str | None:
    """How the ``blocks`` layout's split batch-norm computes its groups (``train.split_bn``), resolved:
    ``per_group`` (one batch-norm per group) or ``view`` (one pass over a view of the batch,
    :func:`ftcl_core.models.grouped_batch_norm`); ``None`` without the blocks layout.  ``auto`` keeps the CPU's
    :class:`~ftcl_core.models.BlockBatchNorm` where it applies (eager, float32) and takes the view elsewhere (CUDA,
    bf16 autocast, compiled), where the per-group path launches one kernel per group and copies every activation
    into a concatenation."""
    if split_bn_layout(cfg) != "blocks":
        return None
    value = cfg.train.split_bn
    if value != "auto":
        return value
    block = device.startswith("cpu") and cfg.train.amp is None and not compile_backend(cfg, device, steps)
    return "per_group" if block else "view"


def compile_backend(cfg: RunConfig, device: str, steps: int | None = None) -> bool | str:
    """What ``torch.compile`` backend the run's networks get: ``False`` (eager), ``True`` (inductor) or a
    backend name.  ``train.compile=auto`` compiles with inductor on CPU when the run takes at least
    :data:`COMPILE_AUTO_MIN_STEPS` steps and a C++ compiler is installed (inductor needs one there); else eager."""
    value = cfg.train.compile
    if value != "auto":
        return value
    if not device.startswith("cpu") or steps is None or steps < COMPILE_AUTO_MIN_STEPS:
        return False
    return bool(shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++") or shutil.which("clang++"))


def ft_draws_mode(cfg: RunConfig, device: str) -> str:
    """Where FT draws its lambdas and permutations in a new run: ``host`` or ``device`` (``train.ft_draws``;
    ``auto`` reads as ``device`` on CUDA and ``host`` on the CPU).

    Host draws (a CPU ``torch.Generator``, Marsaglia-Tsang Beta, CPU ``randperm``, copied to the device) are
    what every stored run did; on the CPU ``auto`` keeps them, so CPU runs stay bit-identical.  On a GPU the
    copies and the rejection loop's host checks cost 41 % of a ResNet-18/64 px MoCo step with a 65 536-entry
    queue (H200), so ``auto`` draws there on the device.  Device draws have the same distributions but are another
    random stream: a GPU run's lambda sequence is not that of a CPU run of its seed."""
    value = cfg.train.ft_draws
    if value == "auto":
        return "device" if device.startswith("cuda") else "host"
    return value


def ft_device_draws(cfg: RunConfig, device: str) -> DeviceDraws | None:
    """The device generator FT draws from in a new run of ``cfg`` on ``device`` (:func:`ft_draws_mode`), seeded
    with :meth:`~ftcl_core.transforms.DeviceDraws.seed_for` ``(cfg.seed)`` alike on every rank; ``None`` for host
    draws (FT then draws from the run's host generator, as every stored run did).  A resumed run takes its
    device generator's state, or its host draws, from the checkpoint (:func:`ftcl_core.checkpoints.resume`)."""
    if ft_draws_mode(cfg, device) == "host":
        return None
    return DeviceDraws.seeded(cfg.seed, device)


def execution_path(cfg: RunConfig, device: str = "cpu", steps: int | None = None) -> dict:
    """How a run executes (recorded in ``provenance.json``): memory format, split batch-norm layout and the
    kernel (:func:`split_bn_kernel`) and the ``torch.compile`` backend (``None``: eager)."""
    backend = "inductor+cudagraphs" if cfg.train.cuda_graph else compile_backend(cfg, device, steps)
    return {"memory_format": "channels_last" if channels_last(cfg) else "contiguous",
            "split_bn_layout": split_bn_layout(cfg), "split_bn_kernel": split_bn_kernel(cfg, device, steps),
            "compile": "inductor" if backend is True else (backend or None)}


def host_to_device(x: torch.Tensor, device: str) -> torch.Tensor:
    """A uint8 batch to the device; on CUDA through page-locked memory (PyTorch caches those buffers), so
    the copy runs asynchronously behind the previous step's kernels."""
    if device.startswith("cuda"):
        return x.pin_memory().to(device, non_blocking=True)
    return x.to(device)


def prepare_model(cfg: RunConfig, device: str, steps: int | None = None) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The method's model on ``device`` and the network the step calls: the model itself, or its
    SyncBN / channels_last / torch.compile / DistributedDataParallel form as the config asks (``steps``: the
    run's length, which ``train.compile=auto`` weighs, :func:`compile_backend`).  The first is the module whose
    parameters the optimiser updates and checkpoints hold; the second shares those parameters."""
    model = build_model(cfg)
    if cfg.model.sync_bn and distributed.world_size() > 1 and not device.startswith("cuda"):
        raise ConfigError("model.sync_bn=true needs CUDA (torch's SyncBatchNorm has no CPU kernel); on CPU "
                          "use model.bn_splits (shuffle-BN) instead.")
    if cfg.model.sync_bn:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.to(device)
    if channels_last(cfg):
        model = model.to(memory_format=torch.channels_last)
        for module in list(model.modules()):  # each backbone keeps its split batch-norm groups contiguous
            if isinstance(module, Encoder):
                group_major(module.backbone, cfg.train.split_bn)
    net: torch.nn.Module = model
    if distributed.world_size() > 1:  # the queue stays identical by the maths; BN statistics are averaged at checkpoints
        ddp = torch.nn.parallel.DistributedDataParallel
        # per-rank buffers: the newer keyword where torch has it (it deprecates broadcast_buffers)
        no_sync = ("forward_sync_buffers" if "forward_sync_buffers" in inspect.signature(ddp).parameters
                   else "broadcast_buffers")
        net = ddp(net, **{no_sync: False})
    if cfg.train.cuda_graph:
        captured_step_possible(device)
        return model, torch.compile(net, mode="reduce-overhead")  # inductor + CUDA graphs (cudagraph trees)
    compile_with = compile_backend(cfg, device, steps)
    if compile_with:  # true: inductor; a string names another torch.compile backend (tests use "eager")
        net = torch.compile(net, **({"backend": compile_with} if isinstance(compile_with, str) else {}))
    return model, net


def captured_step_possible(device: str) -> None:
    """Raise :class:`ConfigError` where ``train.cuda_graph=true`` cannot apply: off CUDA (no graphs to capture) and
    under torchrun (a DistributedDataParallel step's gradient all-reduce is not captured here)."""
    if not device.startswith("cuda"):
        raise ConfigError(f"train.cuda_graph=true captures the step in CUDA graphs, but the run trains on {device}. "
                          "Train on a GPU (device=cuda), or set train.cuda_graph=false.")
    if distributed.world_size() > 1:
        raise ConfigError("train.cuda_graph=true runs in one process; under torchrun set train.cuda_graph=false "
                          "(train.compile=true still compiles each rank's networks).")
