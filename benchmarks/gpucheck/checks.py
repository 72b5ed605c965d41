"""Part 2 of the GPU check: one training step on the GPU computes what it computes on the CPU.

Each check runs one step of a method from the same seeded weights on the same two views (:func:`one_step`) and
compares the losses and every parameter's gradient: GPU fp32 against CPU fp32, each judged against a float64
reference; GPU bf16 + channels_last against GPU fp32; ``train.compile`` against the eager step; and the batched
augmentation on the GPU against the CPU's from the same per-sample parameters.  :data:`TOL` states every bound.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import torch

from benchmarks.gpucheck.setting import Setting
from ftcl_core.augment import augment
from ftcl_core.config import RunConfig, load_config
from ftcl_core.execution import memory_format, prepare_model
from ftcl_core.methods import StepContext
from ftcl_core.training import augment_config, build_optimizer, train_step

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
    """|a - b| / |b|, the relative difference of ``a`` from the reference ``b``."""
    return abs(a - b) / max(abs(b), 1e-12)


def grad_rel(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> dict:
    """Gradients ``a`` against the reference ``b``: the relative L2 error ||a - b|| / ||b|| of all gradients together,
    the worst tensor and its own relative error, and the cosine of the two gradients."""
    if a.keys() != b.keys():
        raise AssertionError(f"the two steps have gradients for different parameters: {sorted(a.keys() ^ b.keys())}")
    va = torch.cat([a[k].flatten().double() for k in a])
    vb = torch.cat([b[k].flatten().double() for k in a])
    worst = max(a, key=lambda k: float((a[k] - b[k]).norm() / b[k].norm().clamp_min(1e-30)))
    return {"rel_l2": float((va - vb).norm() / vb.norm()), "cosine": float(va @ vb / (va.norm() * vb.norm())),
            "worst_tensor": worst, "worst_tensor_rel": float((a[worst] - b[worst]).norm() / b[worst].norm().clamp_min(1e-30))}


def against_float64(g_test: dict[str, torch.Tensor], g_fp32: dict[str, torch.Tensor], g_ref: dict[str, torch.Tensor]
                    ) -> tuple[dict, dict, float]:
    """The float32 rule for gradients (see :data:`TOL`): ``g_test``'s and a trusted float32 gradient ``g_fp32``'s
    distances to the float64 reference ``g_ref``, and the bound on the first (3x the second)."""
    e_test, e_fp32 = grad_rel(g_test, g_ref), grad_rel(g_fp32, g_ref)
    return e_test, e_fp32, max(TOL["fp32_grad_vs_cpu_error"] * e_fp32["rel_l2"], 1e-6)


def agreement_configs(s: Setting) -> dict[str, tuple[str, list[str]]]:
    """``{name: (base config, overrides)}`` of the methods whose step is checked, at the setting's small sizes."""
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
    cfg = cfg.updated({"train.amp": amp, "train.channels_last": channels_last, "train.compile": compile_with})
    model, net = prepare_model(cfg, device)
    if dtype != torch.float32:
        model.to(dtype)
        if hasattr(model, "queue"):
            model.queue = model.queue.float()
    opt = build_optimizer(cfg, model, device)
    gen = torch.Generator().manual_seed(cfg.seed)
    v = memory_format(tuple(x.to(device, dtype) for x in views), channels_last)
    out = train_step(model, opt, v, StepContext(gen, cfg.ft.step_only(), record_stats=False, amp=amp, wrapped=net))
    grads = {n: p.grad.detach().float().cpu() for n, p in model.named_parameters() if p.grad is not None}
    return float(out.loss), grads


def random_views(cfg: RunConfig, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two augmented views (float32, on the CPU) of a batch of random uint8 images of ``cfg``'s sizes, all random
    draws from a generator of ``seed``."""
    n, size = cfg.train.batch_size, cfg.data.image_size
    gen = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=gen)
    aug = augment_config(cfg)
    return augment(images, aug, gen), augment(images, aug, gen)


def _cases(s: Setting) -> Iterator[tuple[str, RunConfig, tuple[torch.Tensor, torch.Tensor]]]:
    """Each checked method's name, config (:func:`agreement_configs`) and two views (:func:`random_views`)."""
    for name, (base, over) in agreement_configs(s).items():
        cfg = load_config(base, over)
        yield name, cfg, random_views(cfg)


def _verdict(s: Setting, checks: dict[str, dict]) -> dict:
    """A part's result: ``pass`` when every check passed, else ``fail``."""
    return {"status": "pass" if all(c["pass"] for c in checks.values()) else "fail", "device": s.device, "checks": checks}


def agreement(s: Setting) -> dict:
    """GPU fp32 against CPU fp32 (each measured against a float64 reference), GPU bf16 + channels_last against
    GPU fp32, for each method; GPU augmentation against CPU augmentation from the same parameters."""
    checks: dict[str, dict] = {}
    for name, cfg, views in _cases(s):
        with _tf32(False):
            loss_ref, g_ref = one_step(cfg, "cpu", views, dtype=torch.float64)
            loss_cpu, g_cpu = one_step(cfg, "cpu", views)
            loss_gpu, g_gpu = one_step(cfg, s.device, views)
        g = grad_rel(g_gpu, g_cpu)
        e_gpu, e_cpu, bound = against_float64(g_gpu, g_cpu, g_ref)
        checks[f"{name}: gpu fp32 vs cpu fp32"] = {
            "loss_cpu": loss_cpu, "loss_gpu": loss_gpu, "loss_rel": _rel(loss_gpu, loss_cpu), "grad": g,
            "loss_float64": loss_ref, "grad_cpu_vs_float64": e_cpu, "grad_gpu_vs_float64": e_gpu,
            "tolerance": {"loss_rel": TOL["fp32_loss_rel"], "grad_gpu_vs_float64": bound},
            "pass": _rel(loss_gpu, loss_cpu) <= TOL["fp32_loss_rel"] and e_gpu["rel_l2"] <= bound}
        loss_bf, g_bf = one_step(cfg, s.device, views, amp="bf16", channels_last=True)
        gb = grad_rel(g_bf, g_gpu)
        checks[f"{name}: gpu bf16 + channels_last vs gpu fp32"] = {
            "loss_fp32": loss_gpu, "loss_bf16": loss_bf, "loss_rel": _rel(loss_bf, loss_gpu), "grad": gb,
            "tolerance": {"loss_rel": TOL["bf16_loss_rel"]}, "pass": _rel(loss_bf, loss_gpu) <= TOL["bf16_loss_rel"]}
    cfg = load_config(*agreement_configs(s)["moco_v2_ft"])
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
    return _verdict(s, checks)


def compile_agreement(s: Setting) -> dict:
    """``train.compile`` (inductor; the dry run: the eager backend) against the eager step, for each method."""
    checks: dict[str, dict] = {}
    for name, cfg, views in _cases(s):
        with _tf32(False):
            _, g_ref = one_step(cfg, "cpu", views, dtype=torch.float64)
            loss_e, g_e = one_step(cfg, s.device, views)
            t0 = time.perf_counter()
            loss_c, g_c = one_step(cfg, s.device, views, compile_with="eager" if s.dry else True)
            compile_s = time.perf_counter() - t0
        gc = grad_rel(g_c, g_e)
        e_comp, e_eager, bound = against_float64(g_c, g_e, g_ref)
        checks[f"{name}: train.compile vs eager"] = {
            "backend": "eager (dry run)" if s.dry else "inductor", "loss_eager": loss_e, "loss_compiled": loss_c,
            "loss_rel": _rel(loss_c, loss_e), "grad": gc, "first_step_s": compile_s,
            "grad_compiled_vs_float64": e_comp, "grad_eager_vs_float64": e_eager,
            "tolerance": {"loss_rel": TOL["compile_loss_rel"], "grad_compiled_vs_float64": bound},
            "pass": _rel(loss_c, loss_e) <= TOL["compile_loss_rel"] and e_comp["rel_l2"] <= bound}
    return _verdict(s, checks)
