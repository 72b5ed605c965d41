"""Part 3 of the GPU check: MoCo v2's training throughput at GPU sizes (bf16 + channels_last, synthetic images).

Per setting: images/s of the unsynchronised step (what training gets), the step split into phases
(:func:`benchmarks.profiling.breakdown`, synchronised), peak memory, FLOPs a step and achieved TFLOP/s against the
chip's bf16 peak, the FT and statistics overheads (interleaved, :func:`benchmarks.timing.interleaved`), and the
anchor: the same model step fed by per-sample torchvision transforms in a DataLoader.

FT draws as training does (:func:`ftcl_core.execution.ft_device_draws`: on a GPU from a generator on the device);
``ft_overhead_host_draws`` is the same FT step with the host draws of the stored runs, for comparison.
"""

from __future__ import annotations

import os

import torch
from torch.utils.flop_counter import FlopCounterMode

from benchmarks import timing
from benchmarks.gpucheck.environment import bf16_peak
from benchmarks.gpucheck.kernels import step_runner, synthetic_images
from benchmarks.gpucheck.setting import Budget, Setting
from benchmarks.profiling import breakdown
from ftcl_core.config import FTConfig, load_config
from ftcl_core.execution import ft_draws_mode, host_to_device


def _throughput_settings(s: Setting) -> dict[str, list[str]]:
    """The settings measured: ``{name: overrides of configs/gpu_in100_moco_v2.yaml}``."""
    if s.dry:  # FT's draws as on a GPU (a CPU generator for the device's), so the dry run runs the GPU's code
        return {"r10_16px (dry run)": ["model.encoder=resnet10_w16", "data.image_size=20", "augment.out_size=16",
                                       "train.batch_size=16", "moco.queue_size=64", "model.bn_splits=2",
                                       "train.ft_draws=device"]}
    return {
        "resnet50_224px": ["model.encoder=resnet50", "data.image_size=256", "augment.out_size=224"],
        "resnet18_64px": ["model.encoder=resnet18", "data.image_size=72", "augment.out_size=64"],
    }


class PilGaussianBlur:
    """MoCo v2's blur as its released code (``moco/loader.py``) and lightly write it: PIL's ``ImageFilter``
    with a radius drawn from ``sigma``.  On one core of an Intel Xeon it costs 0.64 ms a 224-px view (applied to
    half the views), torchvision's ``T.GaussianBlur`` (a 23-tap float convolution of the tensor) 24.9 ms, which
    made the whole anchor 6.4x slower a core (``results/bench_anchor_blur_intel-xeon-avx512.txt``): the blur the
    anchor used before this class, slower than either library's pipeline."""

    def __init__(self, sigma: tuple[float, float] = (0.1, 2.0)) -> None:
        self.sigma = sigma

    def __call__(self, im):
        import random

        from PIL import ImageFilter

        return im.filter(ImageFilter.GaussianBlur(radius=random.uniform(*self.sigma)))


def anchor_pipeline(images: torch.Tensor, out_size: int, blur: str = "pil"):
    """The anchor's per-sample torchvision transforms of MoCo v2 (as the released code and lightly build them, with
    their PIL blur; ``blur="torchvision"``: torchvision's tensor blur, the anchor of the reports before 2026-12-01)
    and ``images`` as PIL images: ``(transform, pil_images)``."""
    import numpy as np
    from PIL import Image
    from torchvision import transforms

    if blur == "pil":
        blurring = PilGaussianBlur((0.1, 2.0))
    else:
        blurring = transforms.GaussianBlur(max(3, int(0.1 * out_size) // 2 * 2 + 1), sigma=(0.1, 2.0))
    tf = transforms.Compose([
        transforms.RandomResizedCrop(out_size, scale=(0.2, 1.0)),
        transforms.RandomApply([transforms.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
        transforms.RandomGrayscale(p=0.2),
        transforms.RandomApply([blurring], p=0.5),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    return tf, [Image.fromarray(np.ascontiguousarray(im.permute(1, 2, 0).numpy())) for im in images]


def torchvision_loader(images: torch.Tensor, out_size: int, batch: int, workers: int, blur: str = "pil"):
    """The anchor: :func:`anchor_pipeline` on ``images``, two views, in a DataLoader with ``workers`` processes and
    pinned memory."""
    tf, pil = anchor_pipeline(images, out_size, blur)

    class TwoViews(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return len(pil)

        def __getitem__(self, i: int):
            return tf(pil[i]), tf(pil[i])

    dataset = TwoViews()
    # samples drawn with replacement, an "epoch" of 64 batches per worker: with shuffle=True over the few batches the
    # images make (4 before 2026-12-01), at most that many workers were ever busy and every epoch restarted them
    sampler = torch.utils.data.RandomSampler(dataset, replacement=True, num_samples=batch * 64 * max(1, workers))
    return torch.utils.data.DataLoader(dataset, batch_size=batch, sampler=sampler, drop_last=True, num_workers=workers,
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
    """One setting's measurements (the part's docstring); the anchor is skipped when the budget cannot hold it."""
    steps, warmup = (2, 1) if s.dry else (10, 3)
    cfg = load_config(base, over)
    bs, size, out = cfg.train.batch_size, cfg.data.image_size, cfg.augment.out_size
    n_img = 4 * bs
    r: dict = {"batch": bs, "image_size": size, "crop": out, "encoder": cfg.model.encoder}
    br = breakdown(base, over, steps=steps, warmup=warmup, synthetic=n_img)
    r["phases_ms_synchronised"] = br["phases_ms"]
    r["step_ms_synchronised"] = br["step_ms"]
    # the same step without a synchronisation between phases: what training gets (the statistics recorded, as in
    # training); FT's draws as a training run of this config makes them: on a GPU from a generator on the device
    if s.device.startswith("cuda"):
        torch.cuda.empty_cache()
    images = synthetic_images(n_img, size)  # the model step's and the anchor's
    run, _ = step_runner(s, base, over, images=images)
    if s.device.startswith("cuda"):  # the peak of this model's steps alone (the breakdown's model is gone)
        torch.cuda.reset_peak_memory_stats()
    r["ft_draws"] = ft_draws_mode(cfg, s.device)

    def step(ft: FTConfig = FTConfig(), stats: bool = True, views=None, host_draws: bool = False):  # noqa: B008
        return run(ft, stats, views, host_draws)

    step_s = timing.timed(step, steps, warmup, s.device)
    r["step_ms"] = 1e3 * step_s
    r["images_per_s"] = bs / step_s
    r["peak_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30 if s.device.startswith("cuda") else None
    with FlopCounterMode(display=False) as counter:
        step()
    r["step_tflop"] = counter.get_total_flops() / 1e12
    r["achieved_tflops"] = r["step_tflop"] / step_s
    peak = bf16_peak(torch.cuda.get_device_name()) if s.device.startswith("cuda") else None
    r["fraction_of_bf16_peak"] = r["achieved_tflops"] / peak if peak else None
    # FT and statistics overhead, interleaved so that drift hits every variant alike
    # (ft_host: the same FT step drawing on the host, as every stored run did: what device draws save)
    ft = FTConfig(pos=True, neg=True)
    variants = {"plain": (FTConfig(), False), "ft": (ft, False), "stats": (FTConfig(), True)}
    runs = {k: (lambda v=v: step(*v)) for k, v in variants.items()}
    if r["ft_draws"] == "device":
        runs["ft_host"] = lambda: step(ft, False, host_draws=True)
    med = timing.medians(timing.interleaved(runs, 1 if s.dry else 3, max(2, steps // 2), 1, s.device))
    r["ft_overhead"] = med["ft"] / med["plain"] - 1
    r["ft_overhead_host_draws"] = med["ft_host"] / med["plain"] - 1 if "ft_host" in med else r["ft_overhead"]
    r["stats_overhead"] = med["stats"] / med["plain"] - 1
    # the anchor: the same model step fed by per-sample torchvision transforms in a DataLoader
    if not budget.fits(3 if s.dry else 40):
        r["anchor"] = {"skipped": f"{budget.left():.0f} s left"}
        return r
    workers = 0 if s.dry else min(16, os.cpu_count() or 1)
    loader = torchvision_loader(images, out, bs, workers)
    batches = iter(loader)

    def anchor_step():
        nonlocal batches
        try:
            v1, v2 = next(batches)
        except StopIteration:
            batches = iter(loader)
            v1, v2 = next(batches)
        return step(views=(host_to_device(v1, s.device), host_to_device(v2, s.device)))

    anchor_s = timing.timed(anchor_step, steps, warmup, s.device)
    r["anchor"] = {"pipeline": "torchvision transforms per sample (PIL, the released code's PIL blur), DataLoader",
                   "workers": workers,
                   "images_per_s": bs / anchor_s, "step_ms": 1e3 * anchor_s}
    r["speedup_vs_anchor"] = r["images_per_s"] / r["anchor"]["images_per_s"]
    return r
