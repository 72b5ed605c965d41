"""The GPU check's orchestration and command line: every part that fits the budget, a report after each.

``python -m benchmarks.gpucheck --out DIR [--budget-s S] [--dry-run] [--parts a,b]`` (the package's docstring
describes the parts).  The exit status is 1 when a part failed or raised, else 0.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

from benchmarks import timing
from benchmarks.gpucheck.captured import captured
from benchmarks.gpucheck.checks import TOL, agreement, compile_agreement
from benchmarks.gpucheck.environment import environment
from benchmarks.gpucheck.imagenet import imagenet_end_to_end
from benchmarks.gpucheck.kernels import kernels
from benchmarks.gpucheck.loader import loader_profile
from benchmarks.gpucheck.report import COMMAND, write
from benchmarks.gpucheck.scale import scale_pair
from benchmarks.gpucheck.setting import PARTS, Budget, Setting
from benchmarks.gpucheck.throughput import throughput

# Parts that run in a child process stopped at the budget: a compiler can take longer than any estimate, and a
# part stopped from outside would lose what the others measured.
CHILD_PARTS = ("compile", "captured")


def part_in_subprocess(name: str, s: Setting, timeout_s: float) -> dict:
    """The part ``name`` in a child process with a hard time limit: one that takes longer than ``timeout_s`` is
    stopped and reported, and the rest of the report is kept."""
    timeout_s = max(1.0, timeout_s)
    with tempfile.TemporaryDirectory() as tmp:
        args = ["--child", "--parts", name, "--out", tmp, "--budget-s", str(timeout_s),
                *(["--dry-run"] if s.dry else [])]
        try:
            return timing.child("benchmarks.gpucheck", args, timeout_s)
        except subprocess.TimeoutExpired:
            return {"status": "did not finish", "why": f"the {name} part (compiling included) took over "
                    f"{timeout_s:.0f} s (the time left in the budget); stopped"}
        except timing.ChildFailed as err:
            return {"status": "error", "error": str(err)[-4000:]}


def run_check(out: str | os.PathLike, budget_s: float = 420.0, dry_run: bool = False, argv: list[str] | None = None,
              parts: tuple[str, ...] = PARTS, child: bool = False) -> dict:
    """Run every part of ``parts`` that fits in ``budget_s``; write (:func:`~benchmarks.gpucheck.report.write`) and
    return the report.

    Before a part starts the report marks it ``running``, so a check stopped from outside says where it
    stopped.  The :data:`CHILD_PARTS` run in a child process (``child=True`` there) that is stopped at the budget.
    Without ``dry_run`` a CUDA device must be visible (``SystemExit`` otherwise)."""
    budget = Budget(budget_s)
    out = Path(out)
    if dry_run:
        device = "cpu"
    elif torch.cuda.is_available():
        device = "cuda"
    else:
        raise SystemExit("gpucheck: no CUDA device is visible. Run it on a GPU machine, or add --dry-run to exercise "
                         "it on this CPU.")
    s = Setting(dry_run, device)
    report: dict = {"started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "dry_run": dry_run,
                    "budget_s": budget_s, "command": f"{COMMAND} " + " ".join(argv or []),
                    "tolerances": TOL, "parts": {}}
    torch.backends.cudnn.benchmark = device.startswith("cuda")
    # (name, estimated seconds on a GPU, the part)
    plan: dict[str, tuple[float, Callable[[], dict]]] = {
        "environment": (10, lambda: environment(s)),
        "agreement": (25, lambda: agreement(s)),
        "throughput": (90, lambda: throughput(s, budget)),
        "kernels": (60, lambda: kernels(s, budget)),
        "captured": (120, lambda: captured(s, budget)),
        "loader": (40, lambda: loader_profile(s, budget)),
        "imagenet": (120, lambda: imagenet_end_to_end(s, budget)),
        "scale": (160, lambda: scale_pair(s, budget, arm_s=min(90.0, max(20.0, (budget.left() - 100) / 2.6)))),
        "compile": (60, lambda: compile_agreement(s)),
    }
    if not child:  # in the parent, these parts run in their own time-limited process
        for name in CHILD_PARTS:
            plan[name] = (plan[name][0], lambda name=name: part_in_subprocess(name, s, budget.left() - 5))
    for name in parts:
        estimate, part = plan[name]
        if not budget.fits(1 if dry_run else estimate):
            report["parts"][name] = {"status": "skipped",
                                     "why": f"needs ~{estimate:.0f} s, {budget.left():.0f} s of the budget left"}
            continue
        report["parts"][name] = {"status": "running", "why": f"started at {budget.used():.0f} s; a report that still "
                                 "says so was stopped from outside during this part"}
        write(out, report)
        t0 = time.perf_counter()
        try:
            result = part()
        except Exception:  # one part's failure is reported and the next part still runs
            result = {"status": "error", "error": traceback.format_exc(limit=8)[-4000:]}
        result["seconds"] = time.perf_counter() - t0
        report["parts"][name] = result
        report["used_s"] = budget.used()
        write(out, report)
        print(f"gpucheck: {name} {result['status']} ({result['seconds']:.1f} s, {budget.left():.0f} s left)", flush=True)
    report["used_s"] = budget.used()
    write(out, report)
    return report


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status.  With ``--child`` (a child part's own process, one part) the
    last line printed is that part's result as JSON, and the status is 0 whatever the verdict."""
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog=COMMAND, description="The GPU check: one command, one process, a hard time budget.")
    p.add_argument("--out", required=True, help="folder for gpucheck.json and gpucheck.md")
    p.add_argument("--budget-s", type=float, default=420.0, help="wall-clock budget; parts that do not fit are skipped")
    p.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU (the test suite's run)")
    p.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not math.isfinite(args.budget_s) or args.budget_s <= 0:
        p.error(f"--budget-s {args.budget_s} must be a positive number of seconds")
    parts = tuple(x for x in args.parts.split(",") if x)
    unknown = [x for x in parts if x not in PARTS]
    if unknown:
        p.error(f"--parts: unknown {unknown}; choose from {','.join(PARTS)}")
    report = run_check(args.out, args.budget_s, args.dry_run, argv, parts, args.child)
    if args.child:
        print(json.dumps(report["parts"][parts[0]], default=str))
        return 0
    failed = [k for k, v in report["parts"].items() if v.get("status") in ("fail", "error")]
    print(f"gpucheck: wrote {Path(args.out) / 'gpucheck.json'} and gpucheck.md; "
          + (f"FAILED: {', '.join(failed)}" if failed else "no part failed"))
    return 1 if failed else 0
