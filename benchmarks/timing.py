"""The one timing harness of the benchmarks and the GPU check: timed calls, interleaved variants, child processes.

Every time here is wall-clock (``time.perf_counter``).  On CUDA a measurement synchronises the device at its
start and its end only, so the kernels a call queues are charged to it and calls still overlap one another,
as in training.  Variants are compared *interleaved*: each round times every variant once, in an order
rotated by one variant per round, so that each variant takes each position equally often and a drift of the
machine (clock, cache, another process) hits every variant alike.  A child process measures what must not
share a process with the caller (a compile cache cold or warm, the peak memory of one library, a compiler
that may exceed a time limit); it prints its result as one JSON line.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent  # the repository: `benchmarks` and `ftcl_core` import from here


def synchronize(device: str) -> None:
    """Wait for the device's queued kernels (CUDA); nothing to wait for on the CPU."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn: Callable[[], object], calls: int, warmup: int = 0, device: str = "cpu") -> float:
    """Seconds per call of ``fn`` over ``calls`` calls after ``warmup`` untimed ones, synchronised at the ends."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    synchronize(device)
    return (time.perf_counter() - t0) / calls


def interleaved(runs: Mapping[str, Callable[[], object]], rounds: int, calls: int, warmup: int = 3,
                device: str = "cpu") -> dict[str, list[float]]:
    """Seconds per call of each function of ``runs``, one value per round: after ``warmup`` untimed calls of
    each, every round times ``calls`` calls of every function (:func:`timed`), starting round ``r`` at the
    function ``r mod len(runs)`` of ``runs``' order."""
    for fn in runs.values():
        for _ in range(warmup):
            fn()
    names = list(runs)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(timed(runs[name], calls, device=device))
    return times


def medians(times: Mapping[str, list[float]]) -> dict[str, float]:
    """The median of each variant's rounds (robust to a round disturbed by the machine)."""
    return {name: statistics.median(values) for name, values in times.items()}


def spreads(times: Mapping[str, list[float]]) -> dict[str, tuple[float, float]]:
    """The fastest and the slowest round of each variant."""
    return {name: (min(values), max(values)) for name, values in times.items()}


class ChildFailed(RuntimeError):
    """A child process exited with an error or printed no JSON line; the message ends with its output."""


def child(module: str, args: list[str], timeout_s: float | None = None, env: Mapping[str, str] | None = None) -> dict:
    """Run ``python -m module *args`` in a fresh process from the repository's root and return the JSON object
    its last line of standard output holds.  ``env``: variables added to this process's environment (the
    repository's root is put first on ``PYTHONPATH``).  Raises ``subprocess.TimeoutExpired`` past
    ``timeout_s`` (the child is stopped) and :class:`ChildFailed` when the child fails."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout_s, env={**os.environ, **(env or {}), "PYTHONPATH": path})
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise ChildFailed(f"python -m {module} {' '.join(args)} exited {done.returncode}:\n"
                          + (done.stdout + done.stderr)[-4000:])
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError as err:
        raise ChildFailed(f"python -m {module} printed no JSON line last:\n" + (done.stdout + done.stderr)[-4000:]) from err
