"""Part 4 of the GPU check: split batch-norm's kernels on the GPU (issue "A GPU lease that decides things", item 1).

Two levels.  The layer alone: one split batch-norm of a ResNet-50 stage-1 activation (channels-last, 8 groups) and
plain batch-norm of the same tensor (cuDNN's one kernel: the floor), forward and backward, in bf16 and fp16, for
each kernel (``per_group``: one F.batch_norm per group and a concatenation; ``view``:
:func:`ftcl_core.models.grouped_batch_norm`), with the names of the GPU kernels that ran (a profile).  The model
step: MoCo v2 at ResNet-50/224 px and ResNet-18/64 px, bf16 + channels-last, ``train.split_bn=per_group`` against
``view``, interleaved, so the faster one can be the CUDA default.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from benchmarks import timing
from benchmarks.gpucheck.setting import Budget, Setting
from ftcl_core.config import FTConfig, load_config
from ftcl_core.execution import exact_float32, ft_device_draws, memory_format, prepare_model
from ftcl_core.methods import StepContext
from ftcl_core.models import SplitBatchNorm2d
from ftcl_core.training import augment_config, build_optimizer, make_views, train_step


def step_runner(s: Setting, base: str, over: list[str], ft: FTConfig = FTConfig(),  # noqa: B008
                images: torch.Tensor | None = None):
    """A function running one unsynchronised training step of ``base`` + ``over`` on synthetic uint8 images held on
    the device (what training gets after the cache), and the config.

    The step takes, per call: ``ft`` (default: the runner's), ``stats`` (record the statistics, as training does),
    ``views`` (a batch of views made elsewhere, e.g. by the DataLoader anchor, instead of the device's images) and
    ``host_draws`` (FT's draws on the host, as every stored run made them, instead of where training of this config
    makes them: :func:`ftcl_core.execution.ft_device_draws`).  ``images``: the host images to draw batches from
    (default two batches of :func:`synthetic_images`), copied to the device."""
    cfg = load_config(base, [*over, f"device={s.device}"])
    exact_float32(cfg, s.device)  # as training does: a float32 recipe stays float32 on CUDA (TF32 off)
    model, net = prepare_model(cfg, s.device)
    opt = build_optimizer(cfg, model, s.device)
    gen = torch.Generator().manual_seed(0)
    bs = cfg.train.batch_size
    images = (synthetic_images(2 * bs, cfg.data.image_size) if images is None else images).to(s.device)
    n_img = len(images)
    aug = augment_config(cfg)
    draws = ft_device_draws(cfg, s.device)  # FT draws as training does (on a GPU: there)

    def step(ft_now: FTConfig | None = None, stats: bool = False, views=None, host_draws: bool = False):
        if views is None:
            views = make_views(images[torch.randint(n_img, (bs,), generator=gen).to(s.device)], aug, gen, True)
        ctx = StepContext(gen, ft if ft_now is None else ft_now, record_stats=stats, amp=cfg.train.amp, wrapped=net,
                          captured=cfg.train.cuda_graph, device_draws=None if host_draws else draws)
        return train_step(model, opt, memory_format(views, True), ctx)

    return step, cfg


def synthetic_images(n: int, size: int) -> torch.Tensor:
    """``n`` random uint8 RGB images of ``size`` x ``size`` on the host, the same for every caller (seed 0)."""
    gen = torch.Generator().manual_seed(0)
    return torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=gen)


def _layer(s: Setting, kernel: str | None, dtype: torch.dtype, shape: tuple[int, ...], groups: int):
    """Forward + backward of one batch-norm layer on a channels-last tensor: split (``kernel``) or plain (None)."""
    x = torch.randn(shape, device=s.device, dtype=dtype).contiguous(memory_format=torch.channels_last)
    x.requires_grad_()
    up = torch.randn_like(x)
    if kernel is None:
        bn = torch.nn.BatchNorm2d(shape[1]).to(s.device)
    else:
        bn = SplitBatchNorm2d(shape[1], groups).to(s.device)
        bn.layout, bn.kernel = "blocks", kernel

    def run():
        with torch.autocast(s.device.split(":")[0], dtype=dtype, enabled=s.device.startswith("cuda")):
            y = bn(x) if kernel is not None else F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias,
                                                               True, 0.1, 1e-5)
        y.backward(up)

    return run


def _kernel_names(s: Setting, run, top: int = 6) -> list[str]:
    """The names of the kernels (GPU) or ops (CPU) that take the most time in three calls of ``run``."""
    from torch.profiler import ProfilerActivity, profile

    cuda = s.device.startswith("cuda")
    acts = [ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
    with profile(activities=acts) as prof:
        for _ in range(3):
            run()
        timing.synchronize(s.device)
    events = [e for e in prof.key_averages() if (e.device_type.name == "CUDA") == cuda]
    key = (lambda e: e.device_time_total) if cuda else (lambda e: e.self_cpu_time_total)
    return [f"{e.key[:90]} x{e.count // 3}" for e in sorted(events, key=key, reverse=True)[:top]]


def kernels(s: Setting, budget: Budget) -> dict:
    """The layer-level and the step-level comparison (the module's docstring)."""
    shape, groups = ((16, 8, 6, 6), 4) if s.dry else ((256, 256, 56, 56), 8)
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16} if not s.dry else {"fp32": torch.float32}
    layer: dict[str, dict] = {}
    for dname, dtype in dtypes.items():
        runs = {f"{k or 'plain (one group, cuDNN)'} {dname}": _layer(s, k, dtype, shape, groups)
                for k in ("per_group", "view", None)}
        med = timing.medians(timing.interleaved(runs, 2 if s.dry else 5, 2 if s.dry else 10, 1, s.device))
        for name, fn in runs.items():
            layer[name] = {"ms": 1e3 * med[name], "kernels": _kernel_names(s, fn)}
    step: dict[str, dict] = {}
    tiny = ["model.encoder=resnet10_w16", "data.image_size=20", "augment.out_size=16", "train.batch_size=16",
            "moco.queue_size=64", "model.bn_splits=2"]
    sizes = {"r10_16px (dry run)": tiny} if s.dry else {
        "resnet50_224px": ["model.encoder=resnet50", "data.image_size=256", "augment.out_size=224"],
        "resnet18_64px": ["model.encoder=resnet18", "data.image_size=72", "augment.out_size=64"]}
    for name, over in sizes.items():
        if not budget.fits(3 if s.dry else 45):
            step[name] = {"skipped": f"{budget.left():.0f} s left"}
            continue
        runs = {}
        for kernel in ("per_group", "view"):
            fn, cfg = step_runner(s, "configs/gpu_in100_moco_v2.yaml",
                                  [*over, "train.amp=bf16", "train.channels_last=true", f"train.split_bn={kernel}"])
            runs[kernel] = fn
        med = timing.medians(timing.interleaved(runs, 1 if s.dry else 3, 2 if s.dry else 5, 1 if s.dry else 3, s.device))
        bs = cfg.train.batch_size
        step[name] = {k: {"step_ms": 1e3 * v, "images_per_s": bs / v} for k, v in med.items()}
        step[name]["view_speedup"] = med["per_group"] / med["view"]
        del runs
        if s.device.startswith("cuda"):
            torch.cuda.empty_cache()
    return {"status": "measured", "device": s.device, "layer_shape": list(shape), "groups": groups,
            "layer": layer, "step": step}
