"""Train a priority-ordered list of stored runs on one lent GPU within a hard deadline, then pack what finished.

A GPU lent for a few minutes runs this one command (``DEVELOPERS.md``: one prepared script per lease).  The runs are
the CPU profile's small networks, which leave a GPU mostly idle, so several training processes share it.  Jobs start
in the order given while slots are free; from the checkpoints (one per epoch) the driver measures each running job's
rate, does not start a job that its rate says cannot finish before the deadline, and stops the lowest-priority
running job when a higher one would otherwise miss it.  At the end every complete run folder (without its
``checkpoint.pt``) goes into one ``runs.tar.gz`` under ``--out``, with ``jobs.json`` (what ran, where it stopped, and
why) and each job's log tail in ``jobs.log``.

    PYTHONPATH=. python3 tools/device_sweep.py --out "$OUT" --deadline-s 470 --parallel 12 --set device=cuda \\
        --job experiments/diagnosis/resolution_v1.yaml "baseline 56px" 0 ...

Unpack the tarball at the repository root's ``results/`` (its members are ``cpu/TABLE/SETTING/seedN/...``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ftcl_core.runs import RunDir
from ftcl_core.study import experiment_file, sweeps


@dataclass
class Job:
    priority: int
    experiment: str
    setting: str
    seed: int
    group: str = ""  # jobs that only count together (a baseline and the arms compared with it): stopped together
    steps: int = 0
    folder: Path | None = None
    proc: subprocess.Popen | None = None
    started: float | None = None
    ended: float | None = None
    state: str = "waiting"  # waiting | running | complete | failed | stopped | skipped | stored
    why: str = ""
    epochs_done: int = 0
    epochs: int = 0
    log: Path | None = None
    history: list = field(default_factory=list)

    def rate(self) -> float | None:
        """Seconds per epoch while running, from the checkpoints of the last 40 s (the rate changes as other jobs
        start and stop); None before two checkpoints."""
        if len(self.history) < 2:
            return None
        recent = [h for h in self.history if h[0] >= self.history[-1][0] - 40]
        (t0, e0), (t1, e1) = (recent if len(recent) >= 2 else self.history[-2:])[0], self.history[-1]
        return (t1 - t0) / (e1 - e0) if e1 > e0 else None


def checkpoint_epoch(folder: Path) -> int:
    ckpt = folder / "checkpoint.pt"
    if not ckpt.is_file():
        return 0
    try:
        return int(torch.load(ckpt, map_location="cpu", weights_only=True)["epoch"])
    except Exception:  # being written: read it next time
        return -1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--job", nargs=3, action="append", default=[], metavar=("EXPERIMENT", "SETTING", "SEED"))
    ap.add_argument("--jobs-file", help="more jobs, one per line: EXPERIMENT<TAB>SETTING<TAB>SEED[<TAB>GROUP], in "
                    "priority order; consecutive lines with the same GROUP count only together (without it, --group-size)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline-s", type=float, default=470.0, help="wall seconds from start until every job stops")
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--set", nargs="*", default=["device=cuda"], dest="execution")
    ap.add_argument("--runs-root", default=os.environ.get("FTCL_RUNS_ROOT", "/tmp/ftcl_runs"))
    ap.add_argument("--poll-s", type=float, default=5.0)
    ap.add_argument("--stored-root", default=str(experiment_file.ROOT / "results" / "cpu"),
                    help="the committed runs: a job whose run is complete there is not trained again (state 'stored')")
    ap.add_argument("--group-size", type=int, default=2,
                    help="consecutive jobs without a GROUP that only count together (a baseline and its FT arm)")
    args = ap.parse_args(argv)
    if args.jobs_file:
        lines = Path(args.jobs_file).read_text().splitlines()
        args.job += [line.split("\t") for line in lines if line.strip() and not line.startswith("#")]
    if not args.job:
        ap.error("no jobs: give --job EXPERIMENT SETTING SEED or --jobs-file FILE")
    t_start = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    logs = Path(args.runs_root) / "_logs"
    logs.mkdir(parents=True, exist_ok=True)
    os.environ["FTCL_RUNS_ROOT"] = args.runs_root
    jobs = []
    for i, (path, setting, seed, *group) in enumerate(args.job):
        exp = experiment_file.Experiment.load(path)
        cfg = experiment_file.resolve(experiment_file.base_for(exp, "cpu"), exp.overrides(setting, int(seed)), "cpu")
        job = Job(i, path, setting, int(seed), group=group[0] if group else f"#{i // args.group_size}",
                  folder=experiment_file.run_dir(exp, setting, int(seed),
                                             "cpu"), epochs=cfg.train.epochs, steps=sweeps.planned_steps(cfg))
        if RunDir(experiment_file.run_dir(exp, setting, int(seed), "cpu", root=args.stored_root)).is_complete():
            job.state, job.why = "stored", f"complete under {args.stored_root} (trained elsewhere, e.g. on a CPU)"
            print(f"job {i}: {setting} seed {seed} is stored already; not trained", flush=True)
        jobs.append(job)
    # a comparison stays on one device: a group with a member stored from elsewhere is left to that device
    for j in jobs:
        if j.state == "waiting" and any(p.state == "stored" for p in jobs if p.group == j.group):
            j.state, j.why = "skipped", "its group is stored in part from another device (a pair stays on one device)"
            print(f"job {j.priority}: {j.setting} seed {j.seed} skipped: {j.why}", flush=True)
    threads = max(1, (os.cpu_count() or 2) // max(1, args.parallel))
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
    last_stop = 0.0

    def left() -> float:
        return args.deadline_s - (time.time() - t_start)

    def seconds_per_step() -> float | None:
        rates = [j.rate() / (j.steps / j.epochs) for j in jobs if j.state == "running" and j.rate()]
        return max(rates) if rates else None

    def start(job: Job) -> None:
        job.log = logs / f"job{job.priority:02d}.log"
        cmd = [sys.executable, "-m", "ftcl_core", "sweep", job.experiment, "--settings", job.setting,
               "--seeds", str(job.seed), "--no-progress", "--set", *args.execution]
        job.proc = subprocess.Popen(cmd, stdout=job.log.open("w"), stderr=subprocess.STDOUT, env=env)
        job.started, job.state = time.time(), "running"
        print(f"[{time.time() - t_start:6.1f}s] start {job.priority}: {job.setting} seed {job.seed} ({job.steps} steps)",
              flush=True)

    while True:
        now = time.time()
        running = [j for j in jobs if j.state == "running"]
        for j in running:
            if j.proc.poll() is not None:
                j.ended = now
                j.state = "complete" if j.proc.returncode == 0 and RunDir(j.folder).is_complete() else "failed"
                j.why = f"exit {j.proc.returncode}"
                print(f"[{now - t_start:6.1f}s] {j.state} {j.priority}: {j.setting} seed {j.seed} "
                      f"in {now - j.started:.0f}s", flush=True)
                continue
            e = checkpoint_epoch(j.folder)
            if e >= 0 and (not j.history or e > j.history[-1][1]):
                j.history.append((now, e))
                j.epochs_done = e
        running = [j for j in jobs if j.state == "running"]
        if left() <= 0:
            for j in running:
                j.proc.kill()
                j.state, j.why, j.ended = "stopped", f"deadline at epoch {j.epochs_done}/{j.epochs}", now
            break
        # stop the lowest-priority job while a higher one would miss the deadline (one stop, then measure again)
        late = [j for j in running if len(j.history) >= 3 and (j.epochs - j.epochs_done) * j.rate() > left()]
        if late and now - last_stop > 20:
            group = max(running, key=lambda j: j.priority).group
            first = min(late, key=lambda j: j.priority).priority
            for victim in [j for j in jobs if j.group == group and j.state in ("running", "waiting")]:
                if victim.proc is not None:
                    victim.proc.kill()
                    victim.proc.wait()
                victim.state, victim.ended = "stopped", now
                victim.why = f"stopped at epoch {victim.epochs_done}/{victim.epochs}: job {first} would miss the deadline"
                print(f"[{now - t_start:6.1f}s] job {victim.priority} {victim.why}", flush=True)
            last_stop = now
            continue
        waiting = [] if late else [j for j in jobs if j.state == "waiting"]  # no new job while one is late
        sps = seconds_per_step()
        for j in waiting:
            if len([r for r in jobs if r.state == "running"]) >= args.parallel:
                break
            if sps is not None and j.steps * sps * 1.1 + 20 > left():
                j.state, j.why = "skipped", f"needs ~{j.steps * sps:.0f}s at {sps * 1000:.1f} ms/step, {left():.0f}s left"
                continue
            if any(p.state in ("stopped", "skipped") for p in jobs if p.group == j.group):
                j.state, j.why = "skipped", "its group was stopped or skipped"
                continue
            start(j)
        if not [j for j in jobs if j.state in ("running", "waiting")]:
            break
        time.sleep(args.poll_s)

    for j in jobs:
        if j.proc is not None and j.proc.poll() is None:
            j.proc.wait()
    done = [j for j in jobs if j.state == "complete"]
    with tarfile.open(out / "runs.tar.gz", "w:gz") as tar:
        for j in done:
            for f in sorted(j.folder.iterdir()):
                if f.name not in ("checkpoint.pt", ".lock"):
                    tar.add(f, arcname=str(f.relative_to(Path(args.runs_root))))
    report = [{"priority": j.priority, "group": j.group, "experiment": j.experiment, "setting": j.setting, "seed": j.seed,
               "state": j.state, "why": j.why, "steps": j.steps, "epochs_done": j.epochs_done, "epochs": j.epochs,
               "wall_s": None if j.started is None else round((j.ended or time.time()) - j.started, 1),
               "s_per_epoch": j.rate()} for j in jobs]
    (out / "jobs.json").write_text(json.dumps({"parallel": args.parallel, "deadline_s": args.deadline_s,
                                               "elapsed_s": round(time.time() - t_start, 1), "jobs": report}, indent=1))
    with (out / "jobs.log").open("w") as f:
        for j in jobs:
            if j.log is not None and j.log.is_file():
                f.write(f"===== job {j.priority} {j.setting} seed {j.seed}: {j.state} {j.why}\n")
                f.write("".join(j.log.read_text().splitlines(keepends=True)[-15:]))
    print(f"{len(done)} of {len(jobs)} runs complete in {time.time() - t_start:.0f}s; packed into {out / 'runs.tar.gz'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
