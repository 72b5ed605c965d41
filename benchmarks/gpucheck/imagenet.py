"""Part 7 of the GPU check: the ImageNet-100 path end to end, on an ImageNet-shaped tree made on the machine.

ImageNet-100 itself cannot be downloaded on a lent machine, so the part fabricates its shape on the local disk:
the 100 class folders of ``data/imagenet100.txt``, 260 JPEGs each (quality 90, about 400 x 350 px, smooth random
content so that a file's size is near a photograph's) and 50 per class for validation.  Then the user's own command,
``python -m ftcl_core train configs/gpu_in100_moco_v2.yaml data.root=... data.test_root=... --out ...``, with one
epoch and a short linear readout: the cache build's rate (images/s, the cores it used), training images/s, and the
readout's seconds, read from the run's ``provenance.json`` and ``eval.json``.  Nothing is kept but the numbers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmarks import timing
from benchmarks.gpucheck.setting import Budget, Setting
from ftcl_core.data import read_class_list


def _write_jpegs(args: tuple[str, int, int, int, int]) -> int:
    """Write ``n`` JPEGs of about ``w`` x ``h`` into ``folder`` (seeded by ``seed``); returns their bytes."""
    import numpy as np
    from PIL import Image

    folder, n, w, h, seed = args
    rng = np.random.default_rng(seed)
    total = 0
    for i in range(n):
        ww, hh = int(w * rng.uniform(0.8, 1.2)), int(h * rng.uniform(0.8, 1.2))
        coarse = rng.integers(0, 256, (hh // 12 + 1, ww // 12 + 1, 3), dtype=np.uint8)
        im = Image.fromarray(coarse).resize((ww, hh), Image.BICUBIC)
        fine = np.asarray(im, dtype=np.int16) + rng.integers(-12, 13, (hh, ww, 3))
        path = Path(folder) / f"{i:04d}.JPEG"
        Image.fromarray(fine.clip(0, 255).astype(np.uint8)).save(path, quality=90)
        total += path.stat().st_size
    return total


def fabricate(root: Path, classes: list[str], per_class: int, size: tuple[int, int], workers: int) -> dict:
    """An ImageFolder tree ``root/<class>/<i>.JPEG``; its image count, mean file size and images/s written."""
    t0 = time.perf_counter()
    jobs = []
    for k, c in enumerate(classes):
        (root / c).mkdir(parents=True, exist_ok=True)
        jobs.append((str(root / c), per_class, *size, k))
    with ProcessPoolExecutor(max(1, workers)) as pool:
        total = sum(pool.map(_write_jpegs, jobs))
    n = per_class * len(classes)
    return {"images": n, "mean_kib": total / n / 1024, "images_per_s": n / (time.perf_counter() - t0)}


def imagenet_end_to_end(s: Setting, budget: Budget) -> dict:
    """Fabricate the tree, build the cache, train one epoch, read out (the module's docstring)."""
    classes = read_class_list("data/imagenet100.txt")
    cores = os.cpu_count() or 1
    if s.dry:
        classes, per_train, per_val, size, workers = classes[:3], 4, 2, (48, 40), 0
        over = ["device=cpu", "model.encoder=resnet10_w16", "data.image_size=24", "augment.out_size=16",
                "train.batch_size=8", "moco.queue_size=16", "model.bn_splits=2", "train.amp=null", "data.workers=0"]
    else:
        per_train, per_val, size, workers = 260, 50, (400, 350), min(16, cores)
        over = [f"data.workers={workers}"]
    config = "configs/gpu_in100_moco_v2.yaml"
    scratch = Path(os.environ.get("FTCL_SCRATCH", tempfile.gettempdir())) / "ftcl_in100_shaped"
    shutil.rmtree(scratch, ignore_errors=True)
    r: dict = {"status": "measured", "config": config, "cores": cores}
    try:
        if s.dry:  # three of the hundred classes: a class list of those
            scratch.mkdir(parents=True)
            (scratch / "classes.txt").write_text("\n".join(classes) + "\n")
            over.append(f"data.class_list={scratch / 'classes.txt'}")
        r["fabricate_train"] = fabricate(scratch / "train", classes, per_train, size, workers or 1)
        r["fabricate_val"] = fabricate(scratch / "val", classes, per_val, size, workers or 1)
        if not budget.fits(5 if s.dry else 90):
            return {**r, "status": "skipped", "why": f"{budget.left():.0f} s left after fabricating the tree"}
        # the cache alone first: its rate and the cores it kept busy
        from ftcl_core.config import load_config
        from ftcl_core.data import load_image_folder

        cfg = load_config(config, [f"data.root={scratch / 'train'}", f"data.test_root={scratch / 'val'}",
                                   f"data.cache={scratch / 'cache'}", *over])
        c0, t0 = os.times(), time.perf_counter()
        load_image_folder(cfg.data.root, cfg.data.image_size, classes, workers=cfg.data.workers, cache=cfg.data.cache)
        wall, c1 = time.perf_counter() - t0, os.times()
        busy = (c1.user + c1.system + c1.children_user + c1.children_system
                - c0.user - c0.system - c0.children_user - c0.children_system) / wall
        n = r["fabricate_train"]["images"]
        r["cache"] = {"images_per_s": n / wall, "seconds": wall, "busy_cores": busy, "image_size": cfg.data.image_size,
                      "bytes": sum(f.stat().st_size for f in (scratch / "cache").glob("*.npy"))}
        # the user's command, one epoch, a short readout (the val cache is built inside it)
        run = scratch / "run"
        cmd = [sys.executable, "-m", "ftcl_core", "train", config, f"data.root={scratch / 'train'}",
               f"data.test_root={scratch / 'val'}", f"data.cache={scratch / 'cache'}", "train.epochs=1",
               "eval.linear_epochs=2", *over, "--out", str(run), "--no-progress"]
        r["command"] = " ".join(cmd[1:])
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=timing.ROOT,
                              timeout=max(10.0, budget.left() - 5))
        r["command_s"] = time.perf_counter() - t0
        if done.returncode:
            return {**r, "status": "error", "error": (done.stdout + done.stderr)[-3000:]}
        prov = json.loads((run / "provenance.json").read_text())
        ev = json.loads((run / "eval.json").read_text())
        steps = n // cfg.train.batch_size
        r["train"] = {"seconds": prov["train_s"], "steps": steps,
                      "images_per_s": steps * cfg.train.batch_size / prov["train_s"]}
        r["readout"] = {"seconds": prov["eval_s"], "linear_epochs": 2, "linear_top1": ev.get("linear_top1"),
                        "knn_top1": ev.get("knn_top1")}
        return r
    except subprocess.TimeoutExpired:
        return {**r, "status": "did not finish", "why": "the training command ran past the budget; stopped"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
