"""Where a training step's time goes: images/s and the step split into its phases (data, augment, forward,
ft_loss, backward, statistics, optimizer), for any method, device, amp, channels_last or compile setting.

The step marks its phases itself (:func:`ftcl_core.training.phase`, a ``torch.profiler.record_function``
range each, so they also show in profiler traces); :class:`PhaseTimer`, an observer of the loop
(:class:`ftcl_core.training.Observer`, the loop's one seam), listens to their ends.  The
benchmarks (``python -m benchmarks.bench breakdown``), the GPU check and the book's last chapter use
:func:`breakdown`.
"""

from __future__ import annotations

import time

import torch

from ftcl_core.config import load_config
from ftcl_core.data import ImageSet, load_data
from ftcl_core.execution import (
    channels_last,
    execution_path,
    ft_device_draws,
    host_to_device,
    prepare_model,
    resolve_device,
)
from ftcl_core.methods import StepContext
from ftcl_core.runs import cpu_model
from ftcl_core.training import Observer, augment_config, build_optimizer, make_views, observe, train_step


class PhaseTimer(Observer):
    """Wall time per phase of a step: ``mark(name)`` closes the phase that started at the previous mark.

    On CUDA it synchronises at every mark, so each phase is charged its own kernels (the price: phases no
    longer overlap, so the sum is an upper bound of an unsynchronised step)."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")
        self.totals: dict[str, float] = {}
        self.last = 0.0

    def _now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def start(self) -> None:
        self.last = self._now()

    def mark(self, name: str) -> None:
        now = self._now()
        self.totals[name] = self.totals.get(name, 0.0) + now - self.last
        self.last = now

    def phase(self, name: str) -> None:  # the loop's Observer: a phase of the step ended
        self.mark(name)


def breakdown(config: str, overrides: list[str] | tuple = (), steps: int = 20, warmup: int = 3,
              synthetic: int = 0) -> dict:
    """Images/s and the step time split into data, augment, forward, ft_loss, backward, statistics and
    optimizer, for any method, device, amp, channels_last or compile setting of a config.

    ``synthetic=N`` trains on N random uint8 images of ``data.image_size`` instead of the config's data
    (a GPU machine without ImageNet measures the same pipeline: images in memory, GPU augmentation)."""
    cfg = load_config(config, list(overrides))
    device = resolve_device(cfg)
    if synthetic:
        size = cfg.data.image_size
        images = torch.randint(0, 256, (synthetic, 3, size, size), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
        train_set = ImageSet(images, torch.zeros(synthetic, dtype=torch.long), ("x",))
    else:
        train_set, _ = load_data(cfg)
    images = train_set.images
    aug, nhwc = augment_config(cfg), channels_last(cfg)
    model, net = prepare_model(cfg, device)
    opt = build_optimizer(cfg, model, device)
    gen = torch.Generator().manual_seed(cfg.seed)
    ctx = StepContext(gen, cfg.ft, n_stats=cfg.stats.n_queries, amp=cfg.train.amp, wrapped=net,
                      device_draws=ft_device_draws(cfg, device))  # FT draws where training draws (on CUDA: there)
    bs = cfg.train.batch_size
    timer = PhaseTimer(device)
    model.train()
    with observe(timer):
        timer.start()
        for i in range(warmup + steps):
            if i == warmup:  # phases follow each other without gaps, so they add up to the step time
                timer.totals.clear()
                t0 = timer.last
            x = host_to_device(images[torch.randint(len(images), (bs,), generator=gen)], device)
            timer.mark("data")
            train_step(model, opt, make_views(x, aug, gen, nhwc), ctx)
    total = timer.last - t0
    return {"config": config, "overrides": list(overrides), "method": cfg.method, "device": device,
            "cpu": cpu_model(), "path": execution_path(cfg, device),
            "device_name": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu",
            "threads": torch.get_num_threads(), "batch_size": bs, "step_ms": 1e3 * total / steps,
            "images_per_s": bs * steps / total, "phases_ms": {k: 1e3 * v / steps for k, v in timer.totals.items()}}
