"""Part 6 of the GPU check: where the per-sample torchvision DataLoader anchor spends its time.

The throughput part's anchor (MoCo v2's transforms per sample on PIL images, two views, in a DataLoader) reached
50 images/s at 224 px with 16 workers on the H200 machine, far below what published setups sustain per worker.
Its epoch held only 4 batches, so at most 4 workers were ever busy (4 x 17 images/s a core with its blur: 68);
it now samples with replacement, many batches per worker.
Its blur was torchvision's ``T.GaussianBlur`` (a tensor convolution, 39x the released code's PIL blur a view on a
CPU core); the anchor now blurs as the released code does
(:class:`~benchmarks.gpucheck.throughput.PilGaussianBlur`), and this part measures both.  It measures, on the same
images: each transform's time per view in one process (where a sample's time goes), the rate one process
sustains, and the DataLoader's rate with 1 and with all workers alone (no training step beside it), with the CPU
seconds its workers used per wall second (how many cores were busy).  A rate per busy core near the
single-process rate means the anchor is CPU-bound as a per-sample pipeline must be; a much lower one means the
machine (threads, memory, the training process) held the workers back.
"""

from __future__ import annotations

import os
import time

import torch

from benchmarks.gpucheck.kernels import synthetic_images
from benchmarks.gpucheck.setting import Budget, Setting
from benchmarks.gpucheck.throughput import anchor_pipeline, torchvision_loader


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of the processes ``pids`` so far (``/proc``; 0 where unreadable)."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
    return total


def _per_transform(images: torch.Tensor, out_size: int, n: int, blur: str = "pil") -> dict[str, float]:
    """Milliseconds per view of each transform of the anchor's pipeline, in this process, over ``n`` images."""
    tf, pil = anchor_pipeline(images[:n], out_size, blur)

    def name(t) -> str:  # RandomApply names what it applies (two of them: colour jitter, blur)
        inner = getattr(t, "transforms", None)
        return f"{type(t).__name__}({', '.join(type(i).__name__ for i in inner)})" if inner else type(t).__name__

    spent = {name(t): 0.0 for t in tf.transforms}
    for im in pil:
        x = im
        for t in tf.transforms:
            t0 = time.perf_counter()
            x = t(x)
            spent[name(t)] += time.perf_counter() - t0
    return {k: 1e3 * v / len(pil) for k, v in spent.items()}


def _loader_rate(images: torch.Tensor, out_size: int, batch: int, workers: int, batches: int) -> dict:
    """Images/s of the DataLoader alone over ``batches`` batches after one, and its workers' busy cores."""
    loader = torchvision_loader(images, out_size, batch, workers)
    it = iter(loader)
    next(it)
    pids = [w.pid for w in getattr(it, "_workers", [])] or [os.getpid()]
    c0, t0 = _cpu_seconds(pids), time.perf_counter()
    for _ in range(batches):
        try:
            next(it)
        except StopIteration:
            it = iter(loader)
            next(it)
    wall = time.perf_counter() - t0
    busy = (_cpu_seconds(pids) - c0) / wall
    return {"workers": workers, "images_per_s": batches * batch / wall, "busy_cores": busy,
            "images_per_s_per_busy_core": batches * batch / wall / max(busy, 1e-9)}


def loader_profile(s: Setting, budget: Budget) -> dict:
    """The anchor's time per transform, one process's rate, and the DataLoader's rate and busy cores."""
    size, out, batch = (20, 16, 8) if s.dry else (256, 224, 64)
    n = 4 * batch
    images = synthetic_images(n, size)
    per = _per_transform(images, out, 8 if s.dry else 64)
    old_blur = _per_transform(images, out, 4 if s.dry else 16, "torchvision")
    view_ms = sum(per.values())
    r = {"status": "measured", "image_size": size, "crop": out, "cores": os.cpu_count(),
         "torch_threads": torch.get_num_threads(), "per_transform_ms_per_view": per, "ms_per_view": view_ms,
         "one_process_images_per_s": 1e3 / (2 * view_ms),  # an image is two views
         "torchvision_blur_ms_per_view": old_blur["RandomApply(GaussianBlur)"],
         "one_process_images_per_s_torchvision_blur": 1e3 / (2 * sum(old_blur.values()))}
    rates = []
    for workers in ((0,) if s.dry else (1, min(16, os.cpu_count() or 1))):
        if not budget.fits(2 if s.dry else 25):
            rates.append({"workers": workers, "skipped": f"{budget.left():.0f} s left"})
            continue
        rates.append(_loader_rate(images, out, batch, workers, 2 if s.dry else 12))
    r["dataloader"] = rates
    return r
