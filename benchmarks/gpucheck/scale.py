"""Part 4 of the GPU check: one MoCo v1 pair, without and with FT (+pos +neg), beyond the CPU's scale.

Embedded shapes at 64 px, ResNet-18, one seed each, the same number of epochs, chosen from timed steps so that
each arm fits a short budget: the linear and kNN readouts, the random-init readout, and the first step at which
Mean(neg) of the raw cosines (Supp A) exceeds 0.9.  One pair decides nothing by itself: it is a first point.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import torch

from benchmarks import timing
from benchmarks.gpucheck.setting import Budget, Setting
from ftcl_core.config import FTConfig, RunConfig, load_config
from ftcl_core.execution import prepare_model
from ftcl_core.methods import StepContext
from ftcl_core.runs import RunDir
from ftcl_core.shapes import SHAPE_CLASSES
from ftcl_core.training import augment_config, build_optimizer, make_views, train, train_step


def _scale_overrides(s: Setting) -> list[str]:
    """The overrides of ``configs/cpu_moco_v1.yaml`` that scale its recipe up (the dry run: down)."""
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
    model, net = prepare_model(cfg, device)
    opt = build_optimizer(cfg, model, device)
    gen = torch.Generator().manual_seed(0)
    bs, size, t = cfg.train.batch_size, cfg.data.image_size, cfg.train
    x = torch.randint(0, 256, (bs, 3, size, size), dtype=torch.uint8, generator=gen).to(device)
    aug, ctx = augment_config(cfg), StepContext(gen, FTConfig(pos=True, neg=True), amp=t.amp, wrapped=net)
    return timing.timed(lambda: train_step(model, opt, make_views(x, aug, gen, bool(t.channels_last)), ctx),
                        steps, 4, device)


def scale_pair(s: Setting, budget: Budget, arm_s: float) -> dict:
    """MoCo v1 (``configs/cpu_moco_v1.yaml``'s recipe, scaled up) against the same with ``ft.pos ft.neg``: the
    same number of epochs each, chosen from timed steps so that an arm trains for about ``arm_s`` seconds (the
    loop's own overhead, data drawing and the readout come on top)."""
    base = "configs/cpu_moco_v1.yaml"
    over = _scale_overrides(s)
    probe = load_config(base, [*over, "train.epochs=1"])
    steps_per_epoch = probe.data.n_train // probe.train.batch_size
    step_s = None if s.dry else _step_seconds(probe, s.device)
    epochs = 1 if s.dry else max(1, int(arm_s / (step_s * steps_per_epoch)))
    milestones = sorted({int(epochs * 0.6), int(epochs * 0.8)})  # each once: a short run decays once
    arms = {"baseline": [], "ft_pos_neg": ["ft.pos=true", "ft.neg=true"]}
    result: dict = {"config": base, "overrides": over, "epochs": epochs, "steps": epochs * steps_per_epoch,
                    "estimated_step_s": step_s, "classes": len(SHAPE_CLASSES), "arms": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for arm, extra in arms.items():
            need = 4 if s.dry else arm_s * 1.3 + 25
            if not budget.fits(need):
                result["arms"][arm] = {"skipped": f"{budget.left():.0f} s left, the arm needs ~{need:.0f} s"}
                continue
            cfg = load_config(base, [*over, f"train.epochs={epochs}", f"optim.milestones={milestones}", *extra,
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
