"""Part 5 of the GPU check: the CPU profile's small network on the GPU, eager, compiled and captured in CUDA graphs
(``train.cuda_graph=true``; issue "A GPU lease that decides things", item 3).

The network of every stored CPU run (``configs/cpu_cal_moco_v1.yaml``: ResNet-10 width 16, 24-px crops, batch 256)
leaves a GPU idle: its step is some 7 600 small kernels, so it is bound by their launches.  Per execution: ms a
step (after the compile), what a 30-epoch run of the shapes (1 170 steps) would take at that rate, FT's overhead
(+pos +neg, the paper's settings), and the losses of the first steps from one seed against the eager step's (the
same maths to float32 rounding; :data:`TOL`).  On a CPU (the dry run) the captured step is refused, and the check
records the refusal's message.
"""

from __future__ import annotations

import tempfile

import numpy as np

from benchmarks import timing
from benchmarks.gpucheck.kernels import step_runner
from benchmarks.gpucheck.setting import Budget, Setting
from ftcl_core.config import ConfigError, FTConfig, load_config
from ftcl_core.training import train

# The first steps' losses of a compiled or captured run against the eager run's, relative: the first step's (the same
# weights and views: float32 rounding of the same maths in other kernels) and the worst of the first five (that
# rounding grown through four SGD updates: 1e-3 measured on a CPU between eager and the compiler's split batch-norm).
TOL = {"first_loss_rel": 1e-4, "loss_rel": 1e-2, "agreement_steps": 5}
BASE = "configs/cpu_cal_moco_v1.yaml"


def _executions(s: Setting) -> dict[str, list[str]]:
    compiled = "train.compile=eager" if s.dry else "train.compile=true"
    return {"eager": ["train.compile=false"], "compiled": [compiled], "captured": ["train.cuda_graph=true"]}


def _sizes(s: Setting) -> list[str]:
    tiny = ["data.n_train=64", "data.n_test=32", "train.batch_size=16", "moco.queue_size=32", "train.epochs=2",
            "eval.knn_k=16"]
    return tiny if s.dry else []


def first_losses(over: list[str], device: str, steps: int) -> np.ndarray:
    """The loss of each of the first ``steps`` steps of :data:`BASE` with the overrides ``over``, trained on
    ``device`` (also tools/compile_agreement.py's measurement)."""
    cfg = load_config(BASE, [*over, f"device={device}"])
    with tempfile.TemporaryDirectory() as tmp:
        return train(cfg, tmp, progress=False, max_steps=steps)["metrics"]["loss"]


def _first_losses(s: Setting, over: list[str]) -> np.ndarray:
    return first_losses([*over, *_sizes(s)], s.device, TOL["agreement_steps"])


def _cudagraph_skips() -> int | None:
    """How many graphs inductor declined to capture in CUDA graphs so far (mutated inputs, CPU ops ...): 0 means
    every compiled graph replays as a CUDA graph; ``None`` where this torch does not count them."""
    try:
        from torch._dynamo.utils import counters

        return int(counters["inductor"].get("cudagraph_skips", 0))
    except Exception:  # noqa: BLE001 - a private counter: absent in some versions
        return None


def captured(s: Setting, budget: Budget) -> dict:
    """Per execution: the step time, a 30-epoch run's training time at it, FT's overhead, and loss agreement."""
    out: dict[str, dict] = {}
    eager_losses = None
    steps_per_run = 30 * (10000 // 256)
    for name, over in _executions(s).items():
        if not budget.fits(3 if s.dry else 60):
            out[name] = {"skipped": f"{budget.left():.0f} s left"}
            continue
        try:
            plain, cfg = step_runner(s, BASE, [*over, *_sizes(s)])
            with_ft, _ = step_runner(s, BASE, [*over, *_sizes(s)], FTConfig(pos=True, neg=True))
        except ConfigError as err:  # only the captured step may be refused, and only off CUDA: any other is a failure
            expected = name == "captured" and not str(s.device).startswith("cuda")
            out[name] = {"refused": str(err), **({} if expected else {"pass": False})}
            continue
        try:  # one execution's failure (a graph that cannot be captured) keeps the others' figures
            med = timing.medians(timing.interleaved({"plain": plain, "ft": with_ft}, 1 if s.dry else 3,
                                                    2 if s.dry else 20, 2 if s.dry else 10, s.device))
            r = {"step_ms": 1e3 * med["plain"], "images_per_s": cfg.train.batch_size / med["plain"],
                 "run_30_epochs_s": steps_per_run * med["plain"], "ft_overhead": med["ft"] / med["plain"] - 1,
                 "cudagraph_skips": _cudagraph_skips()}
            losses = _first_losses(s, over)
        except Exception as err:  # noqa: BLE001 - reported, and the part goes on
            out[name] = {"error": f"{type(err).__name__}: {str(err)[:1500]}", "pass": False}
            continue
        if eager_losses is None:
            eager_losses = losses
        rel = np.abs(losses - eager_losses) / np.abs(eager_losses)
        r.update({"first_losses": losses.tolist(), "first_loss_rel_vs_eager": float(rel[0]),
                  "loss_rel_vs_eager": float(rel.max()),
                  "pass": bool(rel[0] <= TOL["first_loss_rel"] and rel.max() <= TOL["loss_rel"])})
        out[name] = r
        del plain, with_ft
    status = "fail" if any(r.get("pass") is False for r in out.values()) else "measured"
    return {"status": status, "device": s.device, "config": BASE, "tolerance": TOL, "executions": out}
