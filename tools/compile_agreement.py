"""Does a compiled training run agree with the eager one?  The losses of the first steps of one seed of
configs/cpu_cal_moco_v1.yaml, eager against
``train.compile=true`` (inductor; with ``--captured`` also ``train.cuda_graph=true``), relative to eager's.

    .venv/bin/python tools/compile_agreement.py                       # on this CPU, small sizes (about 3 minutes)
    PYTHONPATH=. python3 tools/compile_agreement.py --device cuda --captured --fallback-random   # on a GPU machine

Why: ``train.compile=auto`` compiles the CPU's long runs with inductor (264 stored runs), while on an H200 the GPU
check's captured part found compiled and captured losses 4.9 % off eager's within five steps (results/gpu/
2026-12-04_NVIDIA-H200_lease.md, part 3b).  ``--fallback-random`` sets inductor's ``fallback_random`` (random ops drawn
as eager draws them), which tells a different random stream from different arithmetic.  Prints one JSON line; exit
status 1 when an execution's worst relative difference exceeds ``--tolerance``.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import torch._inductor.config as inductor_config

from benchmarks.gpucheck.captured import first_losses

SMALL = ["data.n_train=512", "data.n_test=64", "train.batch_size=64", "moco.queue_size=256", "train.epochs=1"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--full", action="store_true", help="the profile's own sizes (batch 256, queue 4096), not small ones")
    p.add_argument("--captured", action="store_true", help="also train.cuda_graph=true (a GPU only)")
    p.add_argument("--fallback-random", action="store_true", help="also compile with inductor's fallback_random")
    p.add_argument("--tolerance", type=float, default=1e-2)
    p.add_argument("--backend", default="true", help="train.compile's value: true (inductor) or a backend name (eager)")
    a = p.parse_args(argv)
    runs = {"compiled": [f"train.compile={a.backend}"]}
    if a.captured:
        runs["captured"] = ["train.cuda_graph=true"]
    sizes = [] if a.full else SMALL
    eager = first_losses(["train.compile=false", *sizes], a.device, a.steps)
    out: dict = {"device": a.device, "steps": a.steps, "small": not a.full, "eager": eager.tolist()}
    for name, over in runs.items():
        for fallback in ([False, True] if a.fallback_random else [False]):
            inductor_config.fallback_random = fallback
            key = name + (" fallback_random" if fallback else "")
            losses = first_losses([*over, *sizes], a.device, a.steps)
            rel = np.abs(losses - eager) / np.abs(eager)
            out[key] = {"losses": losses.tolist(), "rel": rel.tolist(), "worst": float(rel.max())}
    print(json.dumps(out))
    return int(any(isinstance(v, dict) and v["worst"] > a.tolerance for v in out.values()))


if __name__ == "__main__":
    sys.exit(main())
