"""The GPU check: one command, one process, a hard time budget, for the first GPU this project is lent.

``PYTHONPATH=. python -m ftcl_core.gpucheck --out DIR [--budget-s 420] [--dry-run]`` writes
``DIR/gpucheck.json`` and ``DIR/gpucheck.md`` (rewritten after every part, so a run stopped from outside still
leaves what it measured).  Parts, each skipped, and said so, when the time left cannot hold it:

1. **environment**: GPU, memory, driver/CUDA, library versions, TF32/bf16 support, a measured bf16 matrix
   product against the chip's datasheet peak;
2. **agreement**: one training step (MoCo v2 with FT; SimCLR) from the same weights and views on the CPU in
   fp32 and on the GPU in fp32 (TF32 off), then bf16 + channels_last, then ``train.compile=true``; GPU
   augmentation against CPU augmentation from the same per-sample parameters;
3. **throughput**: MoCo v2 ResNet-50 at 224 px and ResNet-18 at 64 px, batch 256, bf16 + channels_last on
   synthetic images: images/s, the step split into phases, peak memory, achieved TFLOP/s, FT and statistics
   overhead, and the same model step fed by a per-sample torchvision-transforms DataLoader (the pipeline of
   lightly and of the released code) as the anchor;
4. **scale**: one pair beyond the CPU's scale (embedded shapes at 64 px, ResNet-18, MoCo v1 against
   MoCo v1 + ``ft.pos ft.neg``, one seed, the same short budget): linear readout, random-init readout and the
   first step at which Mean(neg) of the raw cosines exceeds 0.9.

``--dry-run`` shrinks every part so that the whole check runs on a 2-core CPU in well under a minute: the
"GPU" side of every comparison is then the CPU itself, ``train.compile`` uses the ``eager`` backend, and
the GPU-only measurements say that they were skipped.  Needs only torch, torchvision, timm, numpy, pyyaml
and tqdm (what the GPU machines have); nothing is installed or downloaded.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ftcl_core.config import RunConfig
from ftcl_core.runs import cpu_model

# The chips' dense bf16 tensor-core peaks (TFLOP/s, no sparsity), from NVIDIA's datasheets.  Checked in order:
# the first name contained in the device name wins.
BF16_PEAK_TFLOPS = (
    ("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.0), ("H200", 989.0), ("GH200", 989.0),
    ("B200", 2250.0), ("A100", 312.0), ("A10G", 70.0), ("A10", 125.0), ("L40S", 362.0), ("L40", 181.0),
    ("L4", 121.0), ("RTX 4090", 165.0), ("RTX A6000", 155.0),
)

# Tolerances, each stated once.  fp32 on two devices: the same maths with reductions in another order, so the
# loss agrees to 1e-4 relative.  The gradient of one step through ~20 layers of convolution and small-group
# batch-norm is ill-conditioned: the CPU's own float32 gradient is ~2e-3 (relative L2) away from a float64 one
# (measured on this check's steps), so a fixed bound says little.  The GPU's float32 gradient passes when it is
# at most 3x as far from the float64 reference as the CPU's float32 gradient is; a compiled step likewise
# against the eager step's own distance.  bf16 keeps
# 8 bits of mantissa (3.9e-3 relative rounding per operation): the loss agrees to 2e-2.  Augmentation: the same
# per-sample parameters through the same tensor ops on either device, to 1e-5 absolute.
TOL = {"fp32_loss_rel": 1e-4, "fp32_grad_vs_cpu_error": 3.0, "bf16_loss_rel": 2e-2, "compile_loss_rel": 1e-4,
       "augment_abs": 1e-5}


@dataclass
class Budget:
    """A wall-clock budget: ``fits(s)`` says whether ``s`` more seconds fit in what is left."""

    total_s: float
    start: float = field(default_factory=time.perf_counter)

    def used(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return self.total_s - self.used()

    def fits(self, seconds: float) -> bool:
        return self.left() >= seconds


@dataclass
class Setting:
    """The sizes of one check: the real GPU sizes, or the dry run's CPU sizes."""

    dry: bool
    device: str

    @property
    def small(self) -> dict:  # the model and views of the agreement steps
        if self.dry:
            return {"encoder": "resnet10_w16", "size": 20, "out": 16, "batch": 16, "queue": 64}
        return {"encoder": "resnet18", "size": 72, "out": 64, "batch": 64, "queue": 4096}


# ---------------------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------------------


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


@contextlib.contextmanager
def _tf32(enabled: bool):
    """TF32 for matmul and cuDNN on or off inside the block (off: true fp32 on the GPU)."""
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-12)


def _grad_rel(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> dict:
    """Relative L2 error of all gradients together, the worst tensor's, and the cosine of the two gradients."""
    if a.keys() != b.keys():
        raise AssertionError(f"the two steps have gradients for different parameters: {sorted(a.keys() ^ b.keys())}")
    va = torch.cat([a[k].flatten().double() for k in a])
    vb = torch.cat([b[k].flatten().double() for k in a])
    worst = max(a, key=lambda k: float((a[k] - b[k]).norm() / b[k].norm().clamp_min(1e-30)))
    return {"rel_l2": float((va - vb).norm() / vb.norm()), "cosine": float(va @ vb / (va.norm() * vb.norm())),
            "worst_tensor": worst, "worst_tensor_rel": float((a[worst] - b[worst]).norm() / b[worst].norm().clamp_min(1e-30))}


def _against_float64(g_test: dict[str, torch.Tensor], g_fp32: dict[str, torch.Tensor], g_ref: dict[str, torch.Tensor]
                     ) -> tuple[dict, dict, float]:
    """The float32 rule for gradients (see :data:`TOL`): ``g_test``'s and a trusted float32 gradient ``g_fp32``'s
    distances to the float64 reference ``g_ref``, and the bound on the first (3x the second)."""
    e_test, e_fp32 = _grad_rel(g_test, g_ref), _grad_rel(g_fp32, g_ref)
    return e_test, e_fp32, max(TOL["fp32_grad_vs_cpu_error"] * e_fp32["rel_l2"], 1e-6)


def _config(base: str, overrides: list[str]) -> RunConfig:
    from ftcl_core.runs import load_config

    return load_config(base, overrides)


def _bf16_peak(name: str) -> float | None:
    return next((peak for key, peak in BF16_PEAK_TFLOPS if key in name), None)


def _version(module: str) -> str | None:
    try:
        return __import__(module).__version__
    except Exception:  # a missing or broken package is a fact to report, not a reason to stop
        return None


# ---------------------------------------------------------------------------------------------------------------
# 1. environment
# ---------------------------------------------------------------------------------------------------------------


def environment(s: Setting) -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__, "torchvision": _version("torchvision"),
            "timm": _version("timm"), "numpy": _version("numpy"), "cpu": cpu_model(), "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "cuda_available": torch.cuda.is_available(),
            "device": s.device}
    if s.device.startswith("cuda"):
        p = torch.cuda.get_device_properties(0)
        info.update({
            "gpu": p.name, "gpu_memory_gib": p.total_memory / 2**30, "multiprocessors": p.multi_processor_count,
            "compute_capability": f"{p.major}.{p.minor}", "cuda_runtime": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "bf16_supported": torch.cuda.is_bf16_supported(),
            "tf32_matmul_default": torch.backends.cuda.matmul.allow_tf32,
            "tf32_cudnn_default": torch.backends.cudnn.allow_tf32,
            "bf16_peak_tflops_datasheet": _bf16_peak(p.name),
        })
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20).stdout.strip()
            info["driver"] = out or None
    n = 512 if s.dry else 8192
    a = torch.randn(n, n, device=s.device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=s.device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    _sync(s.device)
    t0 = time.perf_counter()
    reps = 10
    for _ in range(reps):
        a @ b
    _sync(s.device)
    info["bf16_matmul_tflops_measured"] = reps * 2 * n**3 / (time.perf_counter() - t0) / 1e12
    info["bf16_matmul_size"] = n
    return {"status": "pass", "info": info}


# ---------------------------------------------------------------------------------------------------------------
# 2. agreement
# ---------------------------------------------------------------------------------------------------------------


def _agreement_configs(s: Setting) -> dict[str, tuple[str, list[str]]]:
    m = s.small
    common = [f"model.encoder={m['encoder']}", f"data.image_size={m['size']}", f"augment.out_size={m['out']}",
              f"train.batch_size={m['batch']}", "model.bn_splits=4"]
    return {
        "moco_v2_ft": ("configs/cpu_moco_v2.yaml", [*common, f"moco.queue_size={m['queue']}", "ft.pos=true", "ft.neg=true"]),
        "simclr": ("configs/cpu_simclr.yaml", common),
    }


def one_step(cfg: RunConfig, device: str, views: tuple[torch.Tensor, torch.Tensor], amp: str | None = None,
             channels_last: bool = False, compile_with: bool | str = False, dtype: torch.dtype = torch.float32
             ) -> tuple[float, dict[str, torch.Tensor]]:
    """One training step of ``cfg``'s method from its seeded initial weights on two given views: the loss and
    every parameter's gradient (on the CPU).  The FT and shuffle draws come from a generator of ``cfg.seed``,
    so two calls differ only by device, precision and compilation.  ``dtype=torch.float64`` runs the networks
    in double precision (the scores, FT and loss stay float32, as in every run): the reference against which
    float32's own rounding error is measured."""
    from ftcl_core.execution import memory_format, prepare_model
    from ftcl_core.training import StepOptions, build_optimizer, train_step

    cfg = cfg.updated({"train.amp": amp, "train.channels_last": channels_last, "train.compile": compile_with})
    model, net = prepare_model(cfg, device)
    if dtype != torch.float32:
        model.to(dtype)
        if hasattr(model, "queue"):
            model.queue = model.queue.float()
    opt = build_optimizer(cfg, model, device)
    gen = torch.Generator().manual_seed(cfg.seed)
    v = memory_format(tuple(x.to(device, dtype) for x in views), channels_last)
    out = train_step(model, opt, v, gen, StepOptions(cfg.ft, record_stats=False, amp=amp), net=net)
    grads = {n: p.grad.detach().float().cpu() for n, p in model.named_parameters() if p.grad is not None}
    return float(out.loss), grads


def _views(cfg: RunConfig, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    from ftcl_core.augment import augment
    from ftcl_core.training import augment_config

    n, size = cfg.train.batch_size, cfg.data.image_size
    gen = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=gen)
    aug = augment_config(cfg)
    return augment(images, aug, gen), augment(images, aug, gen)


def agreement(s: Setting) -> dict:
    """GPU fp32 against CPU fp32 (each measured against a float64 reference), GPU bf16 + channels_last against
    GPU fp32, for each method; GPU augmentation against CPU augmentation from the same parameters."""
    from ftcl_core.augment import augment
    from ftcl_core.training import augment_config

    checks: dict[str, dict] = {}
    for name, (base, over) in _agreement_configs(s).items():
        cfg = _config(base, over)
        views = _views(cfg)
        with _tf32(False):
            loss_ref, g_ref = one_step(cfg, "cpu", views, dtype=torch.float64)
            loss_cpu, g_cpu = one_step(cfg, "cpu", views)
            loss_gpu, g_gpu = one_step(cfg, s.device, views)
        g = _grad_rel(g_gpu, g_cpu)
        e_gpu, e_cpu, bound = _against_float64(g_gpu, g_cpu, g_ref)
        checks[f"{name}: gpu fp32 vs cpu fp32"] = {
            "loss_cpu": loss_cpu, "loss_gpu": loss_gpu, "loss_rel": _rel(loss_gpu, loss_cpu), "grad": g,
            "loss_float64": loss_ref, "grad_cpu_vs_float64": e_cpu, "grad_gpu_vs_float64": e_gpu,
            "tolerance": {"loss_rel": TOL["fp32_loss_rel"], "grad_gpu_vs_float64": bound},
            "pass": _rel(loss_gpu, loss_cpu) <= TOL["fp32_loss_rel"] and e_gpu["rel_l2"] <= bound}
        loss_bf, g_bf = one_step(cfg, s.device, views, amp="bf16", channels_last=True)
        gb = _grad_rel(g_bf, g_gpu)
        checks[f"{name}: gpu bf16 + channels_last vs gpu fp32"] = {
            "loss_fp32": loss_gpu, "loss_bf16": loss_bf, "loss_rel": _rel(loss_bf, loss_gpu), "grad": gb,
            "tolerance": {"loss_rel": TOL["bf16_loss_rel"]}, "pass": _rel(loss_bf, loss_gpu) <= TOL["bf16_loss_rel"]}
    cfg = _config(*_agreement_configs(s)["moco_v2_ft"])
    n, size = 64, cfg.data.image_size
    images = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    aug = augment_config(cfg)
    cpu = augment(images, aug, torch.Generator().manual_seed(2))
    with _tf32(False):
        gpu = augment(images.to(s.device), aug, torch.Generator().manual_seed(2)).cpu()
    with _tf32(True):
        gpu_tf32 = augment(images.to(s.device), aug, torch.Generator().manual_seed(2)).cpu()
    err = float((gpu - cpu).abs().max())
    checks["augmentation: gpu vs cpu, same parameters"] = {
        "max_abs": err, "max_abs_with_tf32": float((gpu_tf32 - cpu).abs().max()),
        "tolerance": {"max_abs": TOL["augment_abs"]}, "pass": err <= TOL["augment_abs"]}
    return {"status": "pass" if all(c["pass"] for c in checks.values()) else "fail", "device": s.device, "checks": checks}


def compile_agreement(s: Setting) -> dict:
    """``train.compile`` (inductor; the dry run: the eager backend) against the eager step, for each method."""
    checks: dict[str, dict] = {}
    for name, (base, over) in _agreement_configs(s).items():
        cfg = _config(base, over)
        views = _views(cfg)
        with _tf32(False):
            _, g_ref = one_step(cfg, "cpu", views, dtype=torch.float64)
            loss_e, g_e = one_step(cfg, s.device, views)
            t0 = time.perf_counter()
            loss_c, g_c = one_step(cfg, s.device, views, compile_with="eager" if s.dry else True)
            compile_s = time.perf_counter() - t0
        gc = _grad_rel(g_c, g_e)
        e_comp, e_eager, bound = _against_float64(g_c, g_e, g_ref)
        checks[f"{name}: train.compile vs eager"] = {
            "backend": "eager (dry run)" if s.dry else "inductor", "loss_eager": loss_e, "loss_compiled": loss_c,
            "loss_rel": _rel(loss_c, loss_e), "grad": gc, "first_step_s": compile_s,
            "grad_compiled_vs_float64": e_comp, "grad_eager_vs_float64": e_eager,
            "tolerance": {"loss_rel": TOL["compile_loss_rel"], "grad_compiled_vs_float64": bound},
            "pass": _rel(loss_c, loss_e) <= TOL["compile_loss_rel"] and e_comp["rel_l2"] <= bound}
    return {"status": "pass" if all(c["pass"] for c in checks.values()) else "fail", "device": s.device, "checks": checks}


def compile_in_subprocess(s: Setting, timeout_s: float) -> dict:
    """:func:`compile_agreement` in a child process with a hard time limit: a compiler that takes longer than
    the budget is stopped and reported, and the rest of the report is kept."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent),
                                                                       os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "ftcl_core.gpucheck", "--child", "--parts", "compile", "--out", tmp, "--budget-s",
               str(max(1.0, timeout_s)), *(["--dry-run"] if s.dry else [])]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=max(1.0, timeout_s), env=env)
        except subprocess.TimeoutExpired:
            return {"status": "did not finish", "why": f"compiling and running one step per method took over "
                    f"{timeout_s:.0f} s (the time left in the budget); stopped"}
        path = Path(tmp) / "gpucheck.json"
        if not path.is_file():
            return {"status": "error", "error": (done.stdout + done.stderr)[-4000:]}
        return json.loads(path.read_text())["parts"]["compile"]


# ---------------------------------------------------------------------------------------------------------------
# 3. throughput
# ---------------------------------------------------------------------------------------------------------------


def _throughput_settings(s: Setting) -> dict[str, list[str]]:
    if s.dry:
        return {"r10_16px (dry run)": ["model.encoder=resnet10_w16", "data.image_size=20", "augment.out_size=16",
                                       "train.batch_size=16", "moco.queue_size=64", "model.bn_splits=2"]}
    return {
        "resnet50_224px": ["model.encoder=resnet50", "data.image_size=256", "augment.out_size=224"],
        "resnet18_64px": ["model.encoder=resnet18", "data.image_size=72", "augment.out_size=64"],
    }


def _timed(fn: Callable[[], object], device: str, steps: int, warmup: int) -> float:
    """Seconds per call of ``fn`` after ``warmup`` calls, synchronised at the ends only."""
    for _ in range(warmup):
        fn()
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    _sync(device)
    return (time.perf_counter() - t0) / steps


def _torchvision_loader(images: torch.Tensor, out_size: int, batch: int, workers: int):
    """The anchor: per-sample torchvision transforms of MoCo v2 (as the released code and lightly build
    them) on PIL images, two views, in a DataLoader with ``workers`` processes and pinned memory."""
    import numpy as np
    from PIL import Image
    from torchvision import transforms as T

    blur = max(3, int(0.1 * out_size) // 2 * 2 + 1)
    tf = T.Compose([
        T.RandomResizedCrop(out_size, scale=(0.2, 1.0)),
        T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
        T.RandomGrayscale(p=0.2),
        T.RandomApply([T.GaussianBlur(blur, sigma=(0.1, 2.0))], p=0.5),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    pil = [Image.fromarray(np.ascontiguousarray(im.permute(1, 2, 0).numpy())) for im in images]

    class TwoViews(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return len(pil)

        def __getitem__(self, i: int):
            return tf(pil[i]), tf(pil[i])

    return torch.utils.data.DataLoader(TwoViews(), batch_size=batch, shuffle=True, drop_last=True, num_workers=workers,
                                       pin_memory=torch.cuda.is_available(), persistent_workers=workers > 0)


def throughput(s: Setting, budget: Budget) -> dict:
    """Images/s, phases, peak memory, TFLOP/s, FT and statistics overheads, and the torchvision anchor."""
    base = "configs/gpu_in100_moco_v2.yaml"
    results: dict[str, dict] = {}
    for name, over in _throughput_settings(s).items():
        if not budget.fits(5 if s.dry else 70):
            results[name] = {"skipped": f"{budget.left():.0f} s left"}
            continue
        results[name] = _throughput_one(s, budget, base, [*over, f"device={s.device}", "train.amp=bf16",
                                                          "train.channels_last=true"])
        if s.device.startswith("cuda"):
            torch.cuda.empty_cache()
    return {"status": "measured", "device": s.device, "settings": results}


def _throughput_one(s: Setting, budget: Budget, base: str, over: list[str]) -> dict:
    from torch.utils.flop_counter import FlopCounterMode

    from ftcl_core.execution import host_to_device, memory_format, prepare_model
    from ftcl_core.losses import FTConfig
    from ftcl_core.profiling import breakdown
    from ftcl_core.training import StepOptions, augment_config, build_optimizer, make_views, train_step

    steps, warmup = (2, 1) if s.dry else (10, 3)
    cfg = _config(base, over)
    bs, size, out = cfg.train.batch_size, cfg.data.image_size, cfg.augment.out_size
    n_img = 4 * bs
    r: dict = {"batch": bs, "image_size": size, "crop": out, "encoder": cfg.model.encoder}
    br = breakdown(base, over, steps=steps, warmup=warmup, synthetic=n_img)
    r["phases_ms_synchronised"] = br["phases_ms"]
    r["step_ms_synchronised"] = br["step_ms"]
    # the same step without a synchronisation between phases: what training gets
    model, net = prepare_model(cfg, s.device)
    opt = build_optimizer(cfg, model, s.device)
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (n_img, 3, size, size), dtype=torch.uint8, generator=gen)
    aug = augment_config(cfg)
    on_device = images.to(s.device)
    if s.device.startswith("cuda"):  # the peak of this model's steps alone (the breakdown's model is gone)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()

    def step(ft: FTConfig = FTConfig(), stats: bool = True, views=None):  # noqa: B008 (a frozen dataclass)
        x = on_device[torch.randint(n_img, (bs,), generator=gen).to(s.device)]
        views = memory_format(views, True) if views is not None else make_views(x, aug, gen, True)
        return train_step(model, opt, views, gen, StepOptions(ft, record_stats=stats, amp="bf16"), net=net)

    step_s = _timed(step, s.device, steps, warmup)
    r["step_ms"] = 1e3 * step_s
    r["images_per_s"] = bs / step_s
    r["peak_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30 if s.device.startswith("cuda") else None
    with FlopCounterMode(display=False) as counter:
        step()
    r["step_tflop"] = counter.get_total_flops() / 1e12
    r["achieved_tflops"] = r["step_tflop"] / step_s
    peak = _bf16_peak(torch.cuda.get_device_name()) if s.device.startswith("cuda") else None
    r["fraction_of_bf16_peak"] = r["achieved_tflops"] / peak if peak else None
    # FT and statistics overhead, interleaved so that drift hits every variant alike
    variants = {"plain": (FTConfig(), False), "ft": (FTConfig(pos=True, neg=True), False), "stats": (FTConfig(), True)}
    times: dict[str, list[float]] = {k: [] for k in variants}
    for rnd in range(1 if s.dry else 3):
        for k in (list(variants) if rnd % 2 == 0 else list(variants)[::-1]):
            times[k].append(_timed(lambda k=k: step(*variants[k]), s.device, max(2, steps // 2), 1))
    med = {k: statistics.median(v) for k, v in times.items()}
    r["ft_overhead"] = med["ft"] / med["plain"] - 1
    r["stats_overhead"] = med["stats"] / med["plain"] - 1
    # the anchor: the same model step fed by per-sample torchvision transforms in a DataLoader
    if not budget.fits(3 if s.dry else 40):
        r["anchor"] = {"skipped": f"{budget.left():.0f} s left"}
        return r
    workers = 0 if s.dry else min(16, os.cpu_count() or 1)
    loader = _torchvision_loader(images, out, bs, workers)
    batches = iter(loader)

    def anchor_step():
        nonlocal batches
        try:
            v1, v2 = next(batches)
        except StopIteration:
            batches = iter(loader)
            v1, v2 = next(batches)
        return step(views=(host_to_device(v1, s.device), host_to_device(v2, s.device)))

    anchor_s = _timed(anchor_step, s.device, steps, warmup)
    r["anchor"] = {"pipeline": "torchvision transforms per sample (PIL), DataLoader", "workers": workers,
                   "images_per_s": bs / anchor_s, "step_ms": 1e3 * anchor_s}
    r["speedup_vs_anchor"] = r["images_per_s"] / r["anchor"]["images_per_s"]
    return r


# ---------------------------------------------------------------------------------------------------------------
# 4. the scale question: one pair
# ---------------------------------------------------------------------------------------------------------------


def _scale_overrides(s: Setting) -> list[str]:
    if s.dry:
        return ["model.encoder=resnet10_w16", "data.image_size=20", "augment.out_size=16", "data.n_train=512",
                "data.n_test=256", "train.batch_size=64", "moco.queue_size=256", "model.bn_splits=2",
                "eval.linear_epochs=2", "eval.knn_k=20", f"device={s.device}", "train.checkpoint_every=1000",
                "stats.sync_every=4"]
    return ["model.encoder=resnet18", "data.image_size=72", "augment.out_size=64", "data.n_train=10000",
            "data.n_test=2000", "train.batch_size=256", "moco.queue_size=4096", "model.bn_splits=8",
            "eval.linear_epochs=50", f"device={s.device}", "train.amp=bf16", "train.channels_last=true",
            "train.checkpoint_every=1000"]


def _step_seconds(cfg: RunConfig, device: str, steps: int = 12) -> float:
    """Seconds per training step of ``cfg`` (FT on, statistics on, as in the FT arm) on random images."""
    from ftcl_core.execution import prepare_model
    from ftcl_core.losses import FTConfig
    from ftcl_core.training import StepOptions, augment_config, build_optimizer, make_views, train_step

    model, net = prepare_model(cfg, device)
    opt = build_optimizer(cfg, model, device)
    gen = torch.Generator().manual_seed(0)
    bs, size, t = cfg.train.batch_size, cfg.data.image_size, cfg.train
    x = torch.randint(0, 256, (bs, 3, size, size), dtype=torch.uint8, generator=gen).to(device)
    aug, opts = augment_config(cfg), StepOptions(FTConfig(pos=True, neg=True), amp=t.amp)
    return _timed(lambda: train_step(model, opt, make_views(x, aug, gen, bool(t.channels_last)), gen, opts, net=net),
                  device, steps, 4)


def scale_pair(s: Setting, budget: Budget, arm_s: float) -> dict:
    """MoCo v1 (``configs/cpu_moco_v1.yaml``'s recipe, scaled up) against the same with ``ft.pos ft.neg``: the
    same number of epochs each, chosen from timed steps so that an arm trains for about ``arm_s`` seconds (the
    loop's own overhead, data drawing and the readout come on top)."""
    from ftcl_core.data import SHAPE_CLASSES
    from ftcl_core.runs import RunDir
    from ftcl_core.training import train


    base = "configs/cpu_moco_v1.yaml"
    over = _scale_overrides(s)
    probe = _config(base, [*over, "train.epochs=1"])
    steps_per_epoch = probe.data.n_train // probe.train.batch_size
    step_s = None if s.dry else _step_seconds(probe, s.device)
    epochs = 1 if s.dry else max(1, int(arm_s / (step_s * steps_per_epoch)))
    milestones = [int(epochs * 0.6), int(epochs * 0.8)]
    arms = {"baseline": [], "ft_pos_neg": ["ft.pos=true", "ft.neg=true"]}
    result: dict = {"config": base, "overrides": over, "epochs": epochs, "steps": epochs * steps_per_epoch,
                    "estimated_step_s": step_s, "classes": len(SHAPE_CLASSES), "arms": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for arm, extra in arms.items():
            need = 4 if s.dry else arm_s * 1.3 + 25
            if not budget.fits(need):
                result["arms"][arm] = {"skipped": f"{budget.left():.0f} s left, the arm needs ~{need:.0f} s"}
                continue
            cfg = _config(base, [*over, f"train.epochs={epochs}", f"optim.milestones={milestones}", *extra,
                                 f"eval.random_init={'true' if arm == 'baseline' else 'false'}"])
            t0 = time.perf_counter()
            ev = train(cfg, Path(tmp) / arm, progress=False)
            m = RunDir(Path(tmp) / arm).load_metrics()
            above = (m["neg_mean"] > 0.9).nonzero()[0]
            result["arms"][arm] = {
                "linear_top1": ev["linear_top1"], "knn_top1": ev["knn_top1"],
                "random_init_linear_top1": ev.get("random_init_linear_top1"), "train_s": ev["train_s"],
                "wall_s": time.perf_counter() - t0, "first_step_neg_mean_above_0.9": int(above[0]) if len(above) else None,
                "final_loss": float(m["loss"][-1]), "max_neg_mean": float(m["neg_mean"].max())}
    arms_done = result["arms"]
    if all("linear_top1" in arms_done.get(a, {}) for a in arms):
        result["ft_minus_baseline"] = arms_done["ft_pos_neg"]["linear_top1"] - arms_done["baseline"]["linear_top1"]
        result["random_init_linear_top1"] = arms_done["baseline"]["random_init_linear_top1"]
    done = sum("linear_top1" in a for a in arms_done.values())
    return {"status": "measured" if done == len(arms) else ("partial" if done else "skipped"), **result}


# ---------------------------------------------------------------------------------------------------------------
# reports
# ---------------------------------------------------------------------------------------------------------------


def _fmt(x, digits: int = 3) -> str:
    """A number as a reader wants it: ``digits`` significant figures, no trailing noise."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e6):
            return f"{x:.2e}"
        if abs(x) >= 10 ** (digits - 1):
            return f"{x:.0f}"
        return f"{x:.{digits}g}"
    return str(x)


def report_markdown(r: dict) -> str:
    """The Markdown report of a check's JSON (also used by the book to show a stored report)."""
    parts = r.get("parts", {})
    env = parts.get("environment", {}).get("info", {})
    title = env.get("gpu") or f"no GPU ({env.get('cpu', 'cpu')})"
    lines = [f"# GPU check: {title}", "",
             f"Started {r.get('started')}, {'dry run, ' if r.get('dry_run') else ''}budget {r.get('budget_s')} s, "
             f"used {_fmt(r.get('used_s'), 4)} s. Command: `{r.get('command')}`.", ""]
    lines += ["## Status", "", "| part | status |", "|---|---|"]
    for name in PARTS:
        p = parts.get(name, {"status": "not run"})
        lines.append(f"| {name} | {p.get('status')}{': ' + p['why'] if p.get('why') else ''} |")
    if env:
        lines += ["", "## 1. Environment", "", "| item | value |", "|---|---|"]
        lines += [f"| {k} | {_fmt(v, 4)} |" for k, v in env.items()]
    ag = {"checks": {**parts.get("agreement", {}).get("checks", {}), **parts.get("compile", {}).get("checks", {})}}
    if ag.get("checks"):
        lines += ["", "## 2. The GPU path agrees with the CPU", "",
                  "| check | loss a | loss b | loss rel. diff | grad rel. L2 | grad cosine | tolerance | pass |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, c in ag["checks"].items():
            if "skipped" in c:
                lines.append(f"| {name} | skipped: {c['skipped']} | | | | | | |")
                continue
            if "max_abs" in c:
                lines.append(f"| {name} | | | max abs {_fmt(c['max_abs'])} (TF32 on: {_fmt(c['max_abs_with_tf32'])}) | | | "
                             f"{_fmt(c['tolerance']['max_abs'])} | {_fmt(c['pass'])} |")
                continue
            losses = [v for k, v in c.items() if k.startswith("loss_") and k != "loss_rel"]
            tol = ", ".join(f"{k} {_fmt(v)}" for k, v in c["tolerance"].items())
            to64 = {k.removeprefix("grad_").removesuffix("_vs_float64"): v["rel_l2"] for k, v in c.items()
                    if k.endswith("_vs_float64")}
            if to64:
                tol += " (grad rel. L2 to float64: " + ", ".join(f"{k} {_fmt(v)}" for k, v in to64.items()) + ")"
            lines.append(f"| {name} | {_fmt(losses[0], 6)} | {_fmt(losses[1], 6)} | {_fmt(c['loss_rel'])} | "
                         f"{_fmt(c['grad']['rel_l2'])} | {_fmt(c['grad']['cosine'], 6)} | {tol} | {_fmt(c['pass'])} |")
    th = parts.get("throughput", {}).get("settings", {})
    if th:
        lines += ["", "## 3. Throughput (MoCo v2, bf16 + channels_last, synthetic images in memory)", "",
                  "| setting | images/s | step ms | peak GiB | TFLOP/step | TFLOP/s | of bf16 peak | FT overhead | "
                  "stats overhead | anchor images/s | speed-up vs anchor |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for name, t in th.items():
            if "skipped" in t:
                lines.append(f"| {name} | skipped: {t['skipped']} |" + " |" * 10)
                continue
            anc = t.get("anchor", {})
            lines.append(f"| {name} | {_fmt(t['images_per_s'], 4)} | {_fmt(t['step_ms'], 4)} | {_fmt(t['peak_memory_gib'])} | "
                         f"{_fmt(t['step_tflop'])} | {_fmt(t['achieved_tflops'])} | {_fmt(t['fraction_of_bf16_peak'])} | "
                         f"{_fmt(t['ft_overhead'])} | {_fmt(t['stats_overhead'])} | {_fmt(anc.get('images_per_s'), 4)} | "
                         f"{_fmt(t.get('speedup_vs_anchor'))} |")
        lines += ["", "Step phases (ms, synchronised at every phase, so they add up to an upper bound of the step):", ""]
        for name, t in th.items():
            if "phases_ms_synchronised" in t:
                lines.append(f"- {name}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in t["phases_ms_synchronised"].items()))
    sc = parts.get("scale", {})
    if sc.get("arms"):
        lines += ["", f"## 4. The scale question, one pair ({_fmt(sc.get('epochs'))} epochs, {_fmt(sc.get('steps'))} steps, "
                  f"{_fmt(sc.get('classes'))} classes)", "",
                  "| arm | linear top-1 % | kNN top-1 % | random init linear % | first step Mean(neg) > 0.9 | max Mean(neg) "
                  "| train s |",
                  "|---|---|---|---|---|---|---|"]
        for arm, a in sc["arms"].items():
            if "skipped" in a:
                lines.append(f"| {arm} | skipped: {a['skipped']} | | | | | |")
                continue
            rand = a["random_init_linear_top1"] if a["random_init_linear_top1"] is not None else sc.get("random_init_linear_top1")
            lines.append(f"| {arm} | {_fmt(a['linear_top1'], 4)} | {_fmt(a['knn_top1'], 4)} | {_fmt(rand, 4)} | "
                         f"{_fmt(a['first_step_neg_mean_above_0.9'])} | {_fmt(a['max_neg_mean'])} | {_fmt(a['train_s'], 4)} |")
        if "ft_minus_baseline" in sc:
            lines += ["", f"FT minus baseline: {_fmt(sc['ft_minus_baseline'], 3)} points (one seed each: a first point "
                      "beyond the CPU's scale, not a verdict)."]
    for name, p in parts.items():
        if p.get("error"):
            lines += ["", f"## Error in {name}", "", "```", p["error"], "```"]
    return "\n".join(lines) + "\n"


def stored_reports(folder: str | os.PathLike) -> list[dict]:
    """The GPU check reports stored in ``folder`` (``results/gpu``), oldest first, each with its ``file``."""
    reports = []
    for path in sorted(Path(folder).glob("*.json")):
        r = json.loads(path.read_text())
        reports.append({**r, "file": path.name})
    return sorted(reports, key=lambda r: (r.get("started", ""), r["file"]))


def latest_parts(reports: list[dict]) -> dict[str, dict]:
    """For each part, the newest stored report's result that finished (measured, passed, failed or stopped at
    its time limit), with the report's GPU, date and file."""
    out: dict[str, dict] = {}
    for r in reports:
        gpu = r["parts"].get("environment", {}).get("info", {}).get("gpu")
        for name, p in r["parts"].items():
            if p.get("status") not in ("not run", "running", "skipped", None):
                out[name] = {**p, "gpu": gpu, "started": r.get("started"), "file": r["file"]}
    return out


def book_tables(reports: list[dict]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """The book's tables (header, rows) of the newest result of each part."""
    parts = latest_parts(reports)
    tables: dict[str, tuple[list[str], list[list[str]]]] = {}
    checks = {**parts.get("agreement", {}).get("checks", {}), **parts.get("compile", {}).get("checks", {})}
    if checks:
        rows = []
        for name, c in checks.items():
            if "max_abs" in c:
                rows.append([name, f"max abs {_fmt(c['max_abs'])}", "", "", f"<= {_fmt(c['tolerance']['max_abs'])}",
                             _fmt(c["pass"])])
                continue
            to64 = {k.removeprefix("grad_").removesuffix("_vs_float64"): v["rel_l2"] for k, v in c.items()
                    if k.endswith("_vs_float64")}
            rows.append([name, _fmt(c["loss_rel"]), _fmt(c["grad"]["cosine"], 6),
                         ", ".join(f"{k} {_fmt(v)}" for k, v in to64.items()),
                         ", ".join(f"{k} <= {_fmt(v)}" for k, v in c["tolerance"].items()), _fmt(c["pass"])])
        if parts.get("compile", {}).get("status") == "did not finish":
            rows.append(["train.compile vs eager", "", "", "", "", f"did not finish: {parts['compile']['why']}"])
        tables["agreement"] = (["check", "loss rel. diff", "grad cosine", "grad rel. L2 to float64", "tolerance",
                                "pass"], rows)
    th = parts.get("throughput", {}).get("settings", {})
    if th:
        rows = [[name, _fmt(t["images_per_s"], 4), _fmt(t["step_ms"], 4), _fmt(t["peak_memory_gib"]),
                 _fmt(t["achieved_tflops"]), _fmt(100 * t["fraction_of_bf16_peak"]) if t.get("fraction_of_bf16_peak") else "–",
                 _fmt(100 * t["ft_overhead"]), _fmt(100 * t["stats_overhead"]),
                 _fmt(t.get("anchor", {}).get("images_per_s"), 4), _fmt(t.get("speedup_vs_anchor"))]
                for name, t in th.items() if "images_per_s" in t]
        tables["throughput"] = (["setting", "images/s", "step ms", "peak GiB", "TFLOP/s", "% of bf16 peak",
                                 "FT overhead %", "statistics overhead %", "torchvision DataLoader images/s",
                                 "speed-up"], rows)
    sc = parts.get("scale", {})
    if sc.get("arms"):
        rand = sc.get("random_init_linear_top1")
        rows = [[arm, _fmt(a.get("linear_top1"), 4), _fmt(a.get("knn_top1"), 4), _fmt(rand, 4),
                 _fmt(a.get("first_step_neg_mean_above_0.9")), _fmt(a.get("max_neg_mean")), _fmt(a.get("train_s"), 4)]
                for arm, a in sc["arms"].items() if "linear_top1" in a]
        tables["scale"] = (["arm", "linear top-1 %", "kNN top-1 %", "random init linear %", "first step Mean(neg) > 0.9",
                            "max Mean(neg)", "train s"], rows)
    return tables


def book_summary(reports: list[dict]) -> str:
    """Sentences for the book, generated from the stored reports (no number typed by hand)."""
    if not reports:
        return ("No GPU result exists yet: `results/gpu/` is empty. When a GPU is available, "
                "`PYTHONPATH=. python -m ftcl_core.gpucheck --out DIR` measures it (about seven minutes).")
    parts = latest_parts(reports)
    env = parts.get("environment", {})
    info = env.get("info", {})
    out = [f"Measured on one {info.get('gpu', 'GPU')} (torch {info.get('torch')}, CUDA {info.get('cuda_runtime')}), "
           f"{str(env.get('started', ''))[:10]}; files in `results/gpu/`."]
    checks = {**parts.get("agreement", {}).get("checks", {})}
    fp32 = [c for k, c in checks.items() if "fp32 vs cpu fp32" in k]
    if fp32:
        worst = max(c["loss_rel"] for c in fp32)
        ok = all(c["pass"] for c in fp32)
        out.append(f"One fp32 training step on the GPU {'agrees' if ok else 'does not agree'} with the CPU's: losses to "
                   f"{_fmt(worst)} relative, and the GPU's gradient is as close to a float64 reference as the CPU's "
                   f"own float32 gradient ({', '.join(_fmt(c['grad_gpu_vs_float64']['rel_l2']) for c in fp32)} against "
                   f"{', '.join(_fmt(c['grad_cpu_vs_float64']['rel_l2']) for c in fp32)}, relative L2).")
    bf = [c for k, c in checks.items() if "bf16" in k]
    if bf:
        out.append(f"bf16 autocast with channels-last moves the loss by at most {_fmt(max(c['loss_rel'] for c in bf))} "
                   "relative, within bf16 rounding.")
    comp = parts.get("compile", {})
    if comp.get("status") == "did not finish":
        out.append(f"`train.compile=true` (inductor) {comp['why']}: on this machine compiling costs more than a short "
                   "check can pay, and its agreement is still to be measured.")
    th = parts.get("throughput", {}).get("settings", {})
    for name, t in th.items():
        if "images_per_s" in t and t.get("anchor", {}).get("images_per_s"):
            out.append(f"MoCo v2 {name}: {_fmt(t['images_per_s'], 4)} images/s, {_fmt(t['achieved_tflops'])} TFLOP/s "
                       f"({_fmt(100 * (t.get('fraction_of_bf16_peak') or 0))} % of the bf16 peak), "
                       f"{_fmt(t['speedup_vs_anchor'])} times the same step fed by per-sample torchvision transforms "
                       f"in a {t['anchor']['workers']}-worker DataLoader (whose own rate, "
                       f"{_fmt(t['anchor']['images_per_s'], 4)} images/s, is not yet explained: not a library comparison).")
    sc = parts.get("scale", {})
    arms = sc.get("arms", {})
    if "linear_top1" in arms.get("baseline", {}) and "linear_top1" in arms.get("ft_pos_neg", {}):
        b, f = arms["baseline"], arms["ft_pos_neg"]
        step = f["first_step_neg_mean_above_0.9"]
        out.append(f"The scale pair (ResNet-18, 64 px, {_fmt(sc['epochs'])} epochs, one seed each): the MoCo v1 baseline "
                   f"reads out {_fmt(b['linear_top1'], 3)} %, with FT (+pos +neg) {_fmt(f['linear_top1'], 3)} %, "
                   f"against {_fmt(sc.get('random_init_linear_top1'), 3)} % for the random-init encoder; "
                   + (f"Mean(neg) of FT's raw cosines passes 0.9 at step {step}." if step is not None
                      else "Mean(neg) of FT's raw cosines never passes 0.9.")
                   + (" One pair, one seed each, decides nothing by itself: it is a first point beyond the CPU's scale, "
                      "where the FT arm again ends below its baseline; a verdict needs three seeds, paired."
                      if f["linear_top1"] < b["linear_top1"] else ""))
    return " ".join(out)


def _write(out: Path, report: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpucheck.json").write_text(json.dumps(report, indent=2, default=str))
    (out / "gpucheck.md").write_text(report_markdown(report))


PARTS = ("environment", "agreement", "throughput", "scale", "compile")


def run_check(out: str | os.PathLike, budget_s: float = 420.0, dry_run: bool = False, argv: list[str] | None = None,
              parts: tuple[str, ...] = PARTS, child: bool = False) -> dict:
    """Run every part of ``parts`` that fits in ``budget_s``; write and return the report.

    Before a part starts the report marks it ``running``, so a check stopped from outside says where it
    stopped.  ``compile`` runs in a child process (``child=True`` there) that is stopped at the budget."""
    budget = Budget(budget_s)
    out = Path(out)
    if dry_run:
        device = "cpu"
    elif torch.cuda.is_available():
        device = "cuda"
    else:
        raise SystemExit("gpucheck: no CUDA device is visible. Run it on a GPU machine, or add --dry-run to exercise "
                         "it on this CPU.")
    s = Setting(dry_run, device)
    report: dict = {"started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "dry_run": dry_run,
                    "budget_s": budget_s, "command": "python -m ftcl_core.gpucheck " + " ".join(argv or []),
                    "tolerances": TOL, "parts": {}}
    torch.backends.cudnn.benchmark = device.startswith("cuda")
    # (name, estimated seconds on a GPU, the part)
    plan: dict[str, tuple[float, Callable[[], dict]]] = {
        "environment": (10, lambda: environment(s)),
        "agreement": (25, lambda: agreement(s)),
        "throughput": (90, lambda: throughput(s, budget)),
        "scale": (160, lambda: scale_pair(s, budget, arm_s=min(90.0, max(20.0, (budget.left() - 100) / 2.6)))),
        "compile": (60, (lambda: compile_agreement(s)) if child else (lambda: compile_in_subprocess(s, budget.left() - 5))),
    }
    for name in parts:
        estimate, part = plan[name]
        if not budget.fits(1 if dry_run else estimate):
            report["parts"][name] = {"status": "skipped",
                                     "why": f"needs ~{estimate:.0f} s, {budget.left():.0f} s of the budget left"}
            continue
        report["parts"][name] = {"status": "running", "why": f"started at {budget.used():.0f} s; a report that still "
                                 "says so was stopped from outside during this part"}
        _write(out, report)
        t0 = time.perf_counter()
        try:
            result = part()
        except Exception:  # one part's failure is reported and the next part still runs
            result = {"status": "error", "error": traceback.format_exc(limit=8)[-4000:]}
        result["seconds"] = time.perf_counter() - t0
        report["parts"][name] = result
        report["used_s"] = budget.used()
        _write(out, report)
        print(f"gpucheck: {name} {result['status']} ({result['seconds']:.1f} s, {budget.left():.0f} s left)", flush=True)
    report["used_s"] = budget.used()
    _write(out, report)
    return report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m ftcl_core.gpucheck", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for gpucheck.json and gpucheck.md")
    p.add_argument("--budget-s", type=float, default=420.0, help="wall-clock budget; parts that do not fit are skipped")
    p.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU (the test suite's run)")
    p.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not math.isfinite(args.budget_s) or args.budget_s <= 0:
        p.error(f"--budget-s {args.budget_s} must be a positive number of seconds")
    parts = tuple(x for x in args.parts.split(",") if x)
    unknown = [x for x in parts if x not in PARTS]
    if unknown:
        p.error(f"--parts: unknown {unknown}; choose from {','.join(PARTS)}")
    report = run_check(args.out, args.budget_s, args.dry_run, argv, parts, args.child)
    failed = [k for k, v in report["parts"].items() if v.get("status") in ("fail", "error")]
    print(f"gpucheck: wrote {Path(args.out) / 'gpucheck.json'} and gpucheck.md; "
          + (f"FAILED: {', '.join(failed)}" if failed else "no part failed"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
