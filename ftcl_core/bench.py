"""Benchmarks (not timed tests): ``python -m ftcl_core.bench overhead``.

``overhead`` measures, at the default CPU config (configs/cpu_moco_v2.yaml), the time of a full MoCo
training step (augmentation, forward, backward, SGD, enqueue) in three variants, interleaved round by
round so that drift of the machine hits all three alike:

* ``plain``: no FT, no statistics;
* ``ft``: positive extrapolation + negative interpolation (one lambda per step), no statistics;
* ``stats``: no FT, with the Supp A score statistics and the Supp C layer gradient norms.

It prints the median step times and ``ft_overhead`` and ``stats_overhead`` as fractions of the plain step.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from ftcl_core.losses import FTConfig
from ftcl_core.runs import load_config
from ftcl_core.stats import StepRecorder
from ftcl_core.training import METRIC_COLUMNS, augment_config, build_model, load_data, train_step


def overhead(config: str = "configs/cpu_moco_v2.yaml", rounds: int = 15, steps: int = 10, warmup: int = 5) -> dict:
    cfg = load_config(config)
    train_set, _ = load_data(cfg)
    aug = augment_config(cfg)
    bs, tau = cfg["train"]["batch_size"], cfg["moco"]["tau"]
    variants = {
        "plain": (FTConfig(), False),
        "ft": (FTConfig(pos=True, neg=True), False),
        "stats": (FTConfig(), True),
    }
    state = {}
    for name in variants:
        model = build_model(cfg)
        opt = torch.optim.SGD(model.encoder_q.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
        state[name] = (model, opt, torch.Generator().manual_seed(0), StepRecorder(METRIC_COLUMNS[2:], 50))
    x = train_set.images[:bs]
    times: dict[str, list[float]] = {n: [] for n in variants}

    def run(name: str, n: int) -> float:
        (ft, rec_stats), (model, opt, gen, recorder) = variants[name], state[name]
        t0 = time.perf_counter()
        for i in range(n):
            out = train_step(model, opt, x, aug, ft, True, tau, gen, record_stats=rec_stats)
            if rec_stats:
                recorder.record(i, torch.cat([out.values, out.grad_norms]))
        recorder.flush()
        return (time.perf_counter() - t0) / n

    for name in variants:
        run(name, warmup)
    for r in range(rounds):
        order = list(variants)[r % 3 :] + list(variants)[: r % 3]
        for name in order:
            times[name].append(run(name, steps))
    med = {n: statistics.median(t) for n, t in times.items()}
    return {
        "plain_step_s": med["plain"], "ft_step_s": med["ft"], "stats_step_s": med["stats"],
        "ft_overhead": med["ft"] / med["plain"] - 1, "stats_overhead": med["stats"] / med["plain"] - 1,
        "spread_plain_s": (min(times["plain"]), max(times["plain"])), "batch_size": bs,
        "threads": torch.get_num_threads(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ftcl_core.bench")
    parser.add_argument("what", choices=["overhead"])
    parser.add_argument("--config", default="configs/cpu_moco_v2.yaml")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    r = overhead(args.config, rounds=args.rounds)
    print(f"config={args.config} batch={r['batch_size']} threads={r['threads']}")
    print(f"median step: plain {r['plain_step_s'] * 1e3:.1f} ms, +FT {r['ft_step_s'] * 1e3:.1f} ms, "
          f"+stats {r['stats_step_s'] * 1e3:.1f} ms (plain range {r['spread_plain_s'][0] * 1e3:.1f}-"
          f"{r['spread_plain_s'][1] * 1e3:.1f} ms)")
    print(f"ft_overhead={r['ft_overhead']:.4f} stats_overhead={r['stats_overhead']:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
