"""Command line: ``python -m ftcl_core train CONFIG [key=value ...] --out DIR``.

Several processes: ``torchrun --nproc_per_node=N -m ftcl_core train CONFIG --out DIR`` (gloo on CPU, nccl
on CUDA); each process takes ``batch_size / N`` images of every batch.

Trains into DIR, or resumes from DIR's checkpoint with the same command, or prints DIR's results when
the run is complete.  ``python -m ftcl_core sweep FILE`` trains an experiment file's missing runs;
``python -m ftcl_core screen CONFIG [key=value ...] --steps N`` trains N steps and prints the concentration signature;
``python -m ftcl_core calibration`` writes ``results/calibration.csv`` from the baseline calibration runs;
``python -m ftcl_core plan [--calibrated --seeds 0 1 2]`` says which runs are left to train;
``python -m ftcl_core summary`` writes ``results/summary.csv`` (and, through ``tools/readme_findings.py``, the README's
copy of the findings and its figure) and prints it as one Markdown table per paper table.  Any config key can be overridden, e.g.
``ft.pos=true ft.neg=true moco.momentum=0.9``.

Every failure is one line on stderr and an exit status: 2 for a wrong input (``error: ...``, naming the problem and
the fix), 3 for a run that diverged (``error: training diverged at step ...``, its last good checkpoint kept), 130
for Ctrl-C and 143 for SIGTERM (``interrupted at step N of M; the same command resumes from epoch E``).

Its entry point, ``ftcl_core/__main__.py``, calls :func:`main`.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import errno
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import yaml

from ftcl_core import distributed
from ftcl_core.checkpoints import IncompatibleCheckpoint
from ftcl_core.config import EXECUTION_KEYS, ConfigError, load_config
from ftcl_core.runs import RunDir, RunFileError, lock_held
from ftcl_core.study import predict, preflight
from ftcl_core.study.calibration import markdown, trials, write_csv
from ftcl_core.study.diagnosis import HEADROOM_CSV, diagnosis_rows, headroom_rows, write_diagnosis_csv
from ftcl_core.study.experiment_file import ROOT, Experiment, profile_root, seed_list, writes_committed
from ftcl_core.study.results.numbers import pm_cell
from ftcl_core.study.results.records import unfinished_runs
from ftcl_core.study.results.verdicts import row_label
from ftcl_core.study.signatures import collapse_signature
from ftcl_core.study.store import check_store
from ftcl_core.study.sweeps import plan_rows, step_rates_here, sweep, switch_to_calibrated
from ftcl_core.study.table_verdicts import summarize, summary_markdown, tally, write_summary
from ftcl_core.study.threads import threads_to_train, training_threads
from ftcl_core.training import Terminated, TrainingDiverged, TrainingInterrupted, train

EXIT_ERROR = 2  # a wrong input: config, command line, files, data
EXIT_DIVERGED = 3  # a run's features, loss or gradient became NaN or infinite (training.TrainingDiverged)


def _seed(value: str) -> int:
    """A --seeds value: a whole number in the digits 0-9; a file name there was meant to come before the option
    (``--seeds`` takes every word after it)."""
    if re.fullmatch(r"[0-9]+", value.strip()):
        return int(value)
    if value.endswith((".yaml", ".yml")) or "/" in value:
        hint = " (put the experiment files before --seeds: it takes every word after it)"
    else:
        hint = "; give each seed as a word of digits 0-9, e.g. --seeds 0 1 2"
    raise argparse.ArgumentTypeError(f"{value!r} is not a seed, a whole number{hint}")


def check_unique_overrides(items: list[str]) -> None:
    """Refuse a key given twice among a command line's ``key=value`` overrides (the last would win silently);
    internal callers layer overrides on purpose and use :func:`ftcl_core.config.parse_overrides` alone."""
    seen: dict[str, str] = {}
    for item in items:
        key = item.split("=", 1)[0].strip()
        if key in seen:
            raise ConfigError(f"{key} is given twice ({seen[key]!r} and {item!r}): give it once.")
        seen[key] = item


def main(argv: list[str] | None = None, banner: str | None = None) -> int:
    """The command line (see the module); ``banner``, ``train``'s first line where the program could not yet be sure
    of it, is printed once the command's checks pass.  A damaged run file that any command meets (``summary`` reading the
    stored runs, say) is its one ``error:`` line, naming the file and the recovery, as every other fault is; a
    diverged run is its one line and :data:`EXIT_DIVERGED`; Ctrl-C and SIGTERM are one line and 128 + the signal's
    number (130, 143), wherever they come."""
    with _sigterm_interrupts():
        try:
            return _main(argv, banner)
        except (RunFileError, ConfigError) as err:  # a command's own checks say theirs earlier; these are the rest
            print(f"error: {err}", file=sys.stderr)
            return EXIT_ERROR
        except yaml.YAMLError as err:  # a value typed on the command line that YAML cannot read
            print(f"error: a value is not YAML ({getattr(err, 'problem', None) or 'unreadable'}): write a list as "
                  "[1, 2], a text with brackets or colons in quotes.", file=sys.stderr)
            return EXIT_ERROR
        except TrainingDiverged as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_DIVERGED
        except TrainingInterrupted as err:
            print(err, file=sys.stderr)
            return 128 + err.signal
        except (OSError, EOFError, zlib.error) as err:  # a user's file or folder, unreadable or unwritable
            where, what = _unreadable(err)
            fix = ("Name a shorter path" if getattr(err, "errno", None) == errno.ENAMETOOLONG else
                   "Replace it with a whole copy (a data set: re-download or re-install it), check its permissions, "
                   "or name another path")
            print(f"error: {where[:120]}: {what}. {fix}.", file=sys.stderr)
            return EXIT_ERROR
        except KeyboardInterrupt as err:  # outside a run's steps: nothing half-done to say
            sig = signal.SIGTERM if isinstance(err, Terminated) else signal.SIGINT
            print(f"interrupted ({sig.name}) outside a run's training steps; nothing was lost: run the same command "
                  "again.", file=sys.stderr)
            return 128 + int(sig)


def _unreadable(err: BaseException) -> tuple[str, str]:
    """The file an ``OSError``, ``EOFError`` or decoding error was about (its own ``filename``, or the gzip file read
    where it came from, a Fashion-MNIST ``.gz`` that is not gzip or is cut short) and what went wrong."""
    path, tb = getattr(err, "filename", None), err.__traceback__
    while path is None and tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        path, tb = (owner.name if isinstance(owner, gzip.GzipFile) else None), tb.tb_next
    what = " ".join(str(getattr(err, "strerror", None) or err).split())[:160]
    cut = isinstance(err, (EOFError, zlib.error, gzip.BadGzipFile))
    return str(path or "a file"), f"{type(err).__name__}: {what}" + ("; cut short, or not gzip" if cut else "")


@contextlib.contextmanager
def _sigterm_interrupts():
    """While the block runs, SIGTERM raises :class:`ftcl_core.training.Terminated` (a ``KeyboardInterrupt``), so a
    run stops as on Ctrl-C: its one line, its lock released (only where signals can be handled: the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str] | None = None, banner: str | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    twice = sorted({a.split("=")[0] for a in given if a.startswith("--")
                    and sum(b.split("=")[0] == a.split("=")[0] for b in given) > 1})
    if twice:  # argparse keeps the last: a run would go where the user may not have meant
        print(f"error: {', '.join(twice)} given more than once; give each option once.", file=sys.stderr)
        return EXIT_ERROR
    parser = argparse.ArgumentParser(prog="python -m ftcl_core", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train or resume a run into --out")
    tr.add_argument("config", help="YAML config, e.g. configs/cpu_moco_v2.yaml")
    tr.add_argument("overrides", nargs="*", help="key=value overrides, e.g. ft.pos=true")
    tr.add_argument("--out", required=True, help="run folder (created, or resumed if it holds a checkpoint)")
    tr.add_argument("--no-progress", action="store_true", help="no progress bar")
    sw = sub.add_parser("sweep", help="train every missing run of an experiment file (resumable)")
    sw.add_argument("experiment", help="experiment file, e.g. experiments/table1_momentum.yaml")
    sw.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "gpu"])
    sw.add_argument("--seeds", type=_seed, nargs="*", help="only these seeds (default: the file's)")
    sw.add_argument("--settings", nargs="*", help="only these settings (default: all)")
    sw.add_argument("--set", nargs="*", default=None, metavar="KEY=VALUE", dest="execution",
                    help="how every run executes, e.g. device=cuda (only the execution keys: "
                         f"{', '.join(EXECUTION_KEYS)})")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")
    sw.add_argument("--parallel", type=int, default=1, metavar="N",
                    help="N training processes at once, the seeds dealt among them, each with cores // N threads "
                         "(on 2 cores two one-thread processes trained about 10 %% more runs an hour than one "
                         "two-thread process: results/screens/2026-12-03_parallel-threads.md)")
    sw.add_argument("--no-summary", action="store_true", help=argparse.SUPPRESS)  # --parallel's children: one summary
    sw.add_argument("--calibrated", action="store_true",
                    help="first move the file's runs of another recipe to the dated record (results/cpu-2026-11/) "
                         "and point the file at its calibrated recipe (configs/cpu_cal_*.yaml); resumable")
    sc = sub.add_parser("screen", help="train N steps of a config (nothing stored) and print the concentration signature")
    sc.add_argument("config", help="YAML config, e.g. configs/cpu_moco_v1.yaml")
    sc.add_argument("overrides", nargs="*", help="key=value overrides, e.g. ft.pos=true")
    sc.add_argument("--steps", type=int, default=120, help="steps to train (default 120)")
    pr = sub.add_parser("predict", help="fit the FT-outcome predictor on the stored runs, judge it held out by "
                                        "experiment, write results/predictor.json; print its scores")
    pr.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "gpu"])
    sm = sub.add_parser("summary", help="write results/summary.csv from the stored runs; print it as Markdown")
    sm.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "gpu"])
    cal = sub.add_parser("calibration", help="write results/calibration.csv from the calibration runs; print it")
    cal.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "gpu"])
    pl = sub.add_parser("plan", help="what is left to run: per experiment file, stored / stale / copied / to-train runs")
    pl.add_argument("experiments", nargs="*", help="experiment files (default: the tables, experiments/*.yaml)")
    pl.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "gpu"])
    pl.add_argument("--seeds", type=_seed, nargs="+", help="plan these seeds (default: each file's)")
    pl.add_argument("--calibrated", action="store_true",
                    help="plan each table on its calibrated recipe (configs/cpu_cal_*.yaml), as a rerun would")
    pl.add_argument("--list", action="store_true", help="also name each run to train and each stale run")
    # listed for --help only: python -m ftcl_core routes 'report' to the pages layer before this parser (__main__.report)
    sub.add_parser("report", help="run a chapter under papermill with parameters and write it as one HTML page: "
                   "report CHAPTER [-p NAME VALUE ...] [--out PAGE]", add_help=False)
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "out", None):  # --out=~/x reaches us unexpanded (the shell expands only a word that starts with ~)
        args.out = os.path.expanduser(args.out)
    if args.command == "report":  # reached only when this parser is called on its own, not through python -m ftcl_core
        print("error: report runs as python -m ftcl_core report CHAPTER [-p NAME VALUE ...] [--out PAGE]",
              file=sys.stderr)
        return EXIT_ERROR
    # key=value overrides may also come after --out (argparse stops collecting positionals at an option)
    stray = [e for e in extra if args.command not in ("train", "screen") or "=" not in e or e.startswith("-")]
    if stray:
        parser.error(f"unrecognized arguments: {' '.join(stray)}")
    if args.command in ("train", "screen"):
        args.overrides = [*args.overrides, *extra]
    if args.command in ("sweep", "plan"):
        try:
            for path in [args.experiment] if args.command == "sweep" else args.experiments:
                preflight.check_experiment_file(path)
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_ERROR
    if args.command in ("predict", "summary", "calibration") and not _has_runs(root := profile_root(args.profile)):
        runs_root = os.environ.get("FTCL_RUNS_ROOT")
        print(f"error: no runs found under {root} (" + (f"FTCL_RUNS_ROOT={runs_root}, " if runs_root else "")
              + f"profile {args.profile}): nothing to read, and nothing was written. Train runs first (python -m "
              "ftcl_core sweep EXPERIMENT_FILE), or point FTCL_RUNS_ROOT at a folder of stored runs.", file=sys.stderr)
        return EXIT_ERROR
    if args.command == "sweep":
        return _sweep(args)
    if args.command == "screen":
        return _screen(args)
    if args.command == "predict":
        try:
            report = predict.write_report(args.profile)
        except ConfigError as err:  # e.g. a store with no FT run to fit on
            print(f"error: {err}", file=sys.stderr)
            return EXIT_ERROR
        print(f"{len(report['examples'])} distinct FT runs, each against the baseline of its seed; held out: "
              f"{report['held_out']}; written to {predict.report_path(args.profile)}")
        print(predict.report_markdown(report))
        return 0
    if args.command == "plan":
        return _plan(args)
    if args.command == "calibration":
        rows = trials(profile=args.profile)
        if not rows:
            return _none_where_files_put_them(args.profile, "calibration", "experiments/calibration/")
        scratch = profile_root(args.profile) / "calibration.csv"  # a store elsewhere keeps its own (writes_committed)
        path = write_csv(rows) if writes_committed(args.profile) else write_csv(rows, scratch) if args.profile == "cpu" else None
        print((f"<!-- written: {path} -->\n" if path else "") + markdown(rows))
        return 0
    if args.command == "summary":
        if not check_store(args.profile):  # every run where its experiment file says, or a one-line refusal
            return _none_where_files_put_them(args.profile, "summary", "experiments/")
        path = write_summary(args.profile)
        print(f"<!-- written: {path} -->\n" + summary_markdown(path))
        if left := unfinished_runs(profile_root(args.profile)):  # fewer seeds than the store holds folders for
            shown = ", ".join(left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
            print(f"note: {len(left)} run folder{'s' if len(left) > 1 else ''} under {profile_root(args.profile)} "
                  f"hold{'' if len(left) > 1 else 's'} no eval.json, so the summary counts no seed of "
                  f"{'them' if len(left) > 1 else 'it'} ({shown}): a run still training, interrupted, or whose "
                  "readouts were deleted. Run its sweep again to finish or re-evaluate it.", file=sys.stderr)
        with open(path) as fh:
            print("\nVerdicts by table (distinct comparisons):")
            for table, t in tally(list(csv.DictReader(fh))).items():  # one line per table and kind, no empty words
                for kind, label in (("ft", "paper's claims"), ("ft_bh", "paper's claims after BH"),
                                    ("ft_errors", "decided on error scale"), ("sanity", "sanity checks")):
                    if sum(t[kind].values()):
                        print(f"{table:10s} {label:24s} " + ", ".join(f"{w}: {n}" for w, n in t[kind].items() if n))
        rows = diagnosis_rows(profile=args.profile)
        if rows:
            out = write_diagnosis_csv(rows) if writes_committed(args.profile) else None
            print("\n### Diagnosis: when does FT help?" + (f" <!-- written: {out} -->" if out else "") + "\n")
            print("| question | table | setting | seeds | mean | Δ vs reference | verdict | first step Mean(neg) > 0.9 |")
            print("|---|---|---|---|---|---|---|---|")
            for r in rows:
                diff = "" if r["reference"] == "" else f"{pm_cell(r['diff_mean'], r['diff_ci95'])} vs {r['reference']}"
                print(f"| {r['question']} | {r['table']} | {r['setting']} | {r['n_seeds']} | "
                      f"{pm_cell(r['mean'], None)} | {diff} | "
                      f"{row_label(r)} | {r['first_step_neg_mean_above_0.9'] or 'never'} |")
        rows = headroom_rows(profile=args.profile)
        if writes_committed(args.profile) and any(r["n_seeds"] for r in rows):
            print(f"\n### The task with headroom <!-- written: {write_diagnosis_csv(rows, HEADROOM_CSV)} -->\n")
            print("| setting | seeds | mean | Δ vs reference | verdict |\n|---|---|---|---|---|")
            for r in rows:
                diff = "" if r["diff_mean"] in ("", None) or r["reference"] == "" or not r["n_seeds"] else (
                    f"{pm_cell(r['diff_mean'], r['diff_ci95'])} vs {r['reference']}")
                mean = pm_cell(r["mean"], None) if r["n_seeds"] else ""
                print(f"| {r['setting']} | {r['n_seeds']} | {mean} | {diff} | {row_label(r)} |")
        tool = ROOT / "tools" / "readme_findings.py"
        if writes_committed(args.profile) and tool.is_file():  # the README's copy of the findings, from the same runs
            import importlib.util  # a script of the repository, not a module of the package

            spec = importlib.util.spec_from_file_location("readme_findings", tool)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            status = module.main([])
            if status:
                return status
        return 0

    try:  # the config is checked before training starts (the entry point has said where the run goes)
        check_unique_overrides(args.overrides)
        cfg = load_config(args.config, args.overrides)
        preflight.check_command(cfg, args.out)
    except (ConfigError, FileNotFoundError, IncompatibleCheckpoint, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    complete = RunDir(args.out).is_complete()  # its files are checked whole in train: the line waits for them
    if banner and not complete:
        try:
            RunDir(args.out).check_logs()  # a resume's damaged log is refused alone, not after "resuming ..."
        except RunFileError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        if preflight.data_in_place(cfg) and not lock_held(Path(os.path.expanduser(args.out))):
            print(banner, flush=True)  # else the data's refusal, or the wait for another process, comes alone
    try:
        with threads_to_train(args.out, say=not args.no_progress and distributed.rank_from_env() == 0):
            result = train(cfg, args.out, progress=not args.no_progress)
    except (ConfigError, FileNotFoundError, IncompatibleCheckpoint, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        distributed.shutdown()
    if banner and complete:
        print(banner, flush=True)
    if distributed.rank_from_env() == 0:
        print(json.dumps(result, indent=2, sort_keys=True))
        run = RunDir(args.out)
        if run.is_complete():
            held = [f.name for f in (run.config, run.metrics) if f.is_file()] + ["checkpoint.pt"] * run.whole_checkpoint()
            print(f"readouts: {run.eval} (the run folder {args.out} holds {', '.join(held) or 'its readouts alone'})",
                  flush=True)
    return 0


def _plan(args) -> int:
    """``plan``: one Markdown row per experiment file (:func:`ftcl_core.study.sweeps.plan_rows`), then the totals
    and what they cost on this CPU (:func:`ftcl_core.study.sweeps.step_rates_here`)."""
    paths = args.experiments or sorted(str(p.relative_to(ROOT)) for p in (ROOT / "experiments").glob("*.yaml"))
    where = [str((Path(p) if Path(p).is_file() else ROOT / p).resolve()) for p in paths]  # as plan_rows finds them
    twice = next((p for i, p in enumerate(paths) if where[i] in where[:i]), None)
    if twice:
        print(f"error: plan names {twice} twice (its runs would be counted twice in the totals); name each experiment "
              "file once.", file=sys.stderr)
        return 2
    try:
        rates = step_rates_here(args.profile)
        rows = plan_rows(paths, args.profile, seeds=args.seeds, calibrated=args.calibrated, rates=rates)
    except (ConfigError, FileNotFoundError, RunFileError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("| file | table | recipe | runs | stored | stale | copy | train | steps to train |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['file']} | {r['table']} | {r['base']} | {r['runs']} | {r['stored']} | {r['stale']} | {r['copy']} "
              f"| {r['train']} | {r['steps']} |")
        for what in ("to_train", "stale_runs") if args.list else ():
            if r[what]:
                print(f"|  | {what.replace('_', ' ')}: " + ", ".join(r[what]) + " |" + " |" * 7)
    steps, seconds = sum(r["steps"] for r in rows), sum(r["seconds"] for r in rows)
    n = sum(len(v) for v in rates.values())
    cost = (f", about {seconds / 3600:.1f} h of one training process on this CPU (from the seconds a step of the {n} "
            "runs trained on it, per method, data set and encoder, scaled by the crops' pixels)") if n and steps else ""
    print(f"\n{sum(r['train'] for r in rows)} runs to train: {steps} steps{cost}. "
          f"{sum(r['copy'] for r in rows)} to copy from identical runs; {sum(r['stale'] for r in rows)} stored runs hold "
          "another recipe (move them to a dated record, e.g. results/cpu-2026-11/, before the rerun).")
    return 0


def _screen(args) -> int:
    """A screen: the first ``--steps`` steps of a config in a temporary folder, then the concentration signature of
    the raw cosines (:func:`ftcl_core.study.signatures.collapse_signature`) and the time per step."""
    if args.steps < 1:
        print(f"error: --steps {args.steps} must be >= 1", file=sys.stderr)
        return 2
    try:
        check_unique_overrides(args.overrides)
        cfg = load_config(args.config, args.overrides)
        if cfg.ft.start == "auto":
            raise ConfigError("screen reads the steps around a fixed switch (ft.start_epoch); with ft.start=auto the "
                              "run decides later, from its own loss. Screen the run without FT, or give ft.start_epoch.")
        preflight.check_command(cfg, None)
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp, training_threads(say=False):
            out = train(cfg, tmp, progress=False, max_steps=args.steps)
            m = out["metrics"] if "metrics" in out else RunDir(tmp).load_metrics()  # --steps past the run: all of it
        took = time.perf_counter() - t0
    except (ConfigError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except TrainingInterrupted as err:  # its temporary folder is gone: nothing to resume
        print(f"{str(err).split(';')[0]}; a screen keeps nothing: run the same command again.", file=sys.stderr)
        return 128 + err.signal
    if len(m["loss"]) < args.steps:
        print(f"note: --steps {args.steps} asks past the config's whole run, {len(m['loss'])} steps "
              f"(train.epochs={cfg.train.epochs}): these are all of them. Raise train.epochs to screen more.",
              file=sys.stderr)
    sig = collapse_signature(m["neg_mean"], m["neg_var"], early_steps=len(m["loss"]))
    first = sig["first_step_above"]
    print(f"{args.config} {' '.join(args.overrides)}: {len(m['loss'])} steps in {took:.1f} s "
          f"({took / len(m['loss']):.3f} s a step, data and set-up included)")
    print(f"Mean(neg) > 0.9 first at step {first if first is not None else 'never'}; "
          f"max Mean(neg) {float(m['neg_mean'].max()):.3f}; min Var(neg) {sig['early_min_var']:.4f}; "
          f"final Mean(pos) {float(m['pos_mean'][-1]):.3f}, Mean(neg) {sig['final_neg_mean']:.3f}, "
          f"Var(neg) {sig['final_neg_var']:.4f}, loss {float(m['loss'][-1]):.3f}")
    picks = sorted({0, len(m["loss"]) // 4, len(m["loss"]) // 2, len(m["loss"]) - 1})
    print("step " + " ".join(f"{s:>7d}" for s in picks))
    shown = ("neg_mean", "rho", "align", "uniform", "erank") + (("same_class",) if cfg.stats.same_class else ())
    for col in shown:
        print(f"{col:<8} " + " ".join(f"{float(m[col][s]):7.3f}" for s in picks))
    print(_screen_prediction(cfg, m))
    return 0


def _screen_prediction(cfg, metrics: dict) -> str:
    """What the predictor fitted on the stored runs (results/predictor.json) says of this screen's FT run."""
    if not cfg.ft.any:
        return "predicted outcome: none (no FT in this config)"
    epochs = np.asarray(metrics["epoch"])
    if (epochs > epochs[0]).any():  # a whole epoch screened: its steps, as the run counted them
        per_epoch = int(np.sum(epochs == epochs[0]))
    else:  # the run's own count (training: the training set's images // the batch, the last partial batch dropped)
        per_epoch = max(1, cfg.data.n_train // cfg.train.batch_size)
    switch, total = cfg.ft.start_epoch * per_epoch, cfg.train.epochs * per_epoch
    if switch + predict.WINDOW > total:
        return (f"predicted outcome: none: the predictor reads the {predict.WINDOW} steps after FT switches on (step "
                f"{switch}, epoch {cfg.ft.start_epoch}), past this config's whole run of {total} steps; raise "
                f"train.epochs to {-(-(switch + predict.WINDOW) // per_epoch)} or more, or switch FT on earlier")
    if switch + predict.WINDOW > len(metrics["neg_mean"]):
        return (f"predicted outcome: needs --steps {switch + predict.WINDOW} ({predict.WINDOW} steps after FT switches "
                f"on at step {switch}, epoch {cfg.ft.start_epoch})")
    try:
        model = predict.load_model()
    except (FileNotFoundError, ValueError) as err:
        return f"predicted outcome: {err}"
    stats = predict.window_stats(metrics, switch)
    p_loss, size = (float(v[0]) for v in model.predict(stats.features))
    rule = "loses" if predict.rule_predicts_loss(stats) else "does not lose"
    return (f"predicted outcome against the baseline of the same seed (results/predictor.json, fitted on the stored "
            f"runs): P(loses readout) {p_loss:.2f}, paired difference {size:+.1f} points; the Mean(neg) > "
            f"{predict.RULE_THRESHOLD} by step {predict.RULE_STEPS} rule says it {rule}")


def _sweep(args) -> int:
    if args.parallel < 1:
        print(f"error: --parallel {args.parallel}: give the number of training processes, 1 or more", file=sys.stderr)
        return 2
    if args.settings == []:  # "--settings" with nothing after it: never read as "every setting"
        print("error: --settings names no setting: give one or more (quoted when they hold spaces), or leave "
              "--settings out to train every setting of the file", file=sys.stderr)
        return 2
    if args.execution == []:  # "--set" with nothing after it: refused as --settings is, never read as "no change"
        print("error: --set names no KEY=VALUE: give one or more (e.g. --set device=cuda), or leave --set out",
              file=sys.stderr)
        return 2
    args.execution = args.execution or []
    try:
        pairs = [_key_value(e) for e in args.execution]
        if twice := sorted({k for k, _ in pairs if [p for p, _ in pairs].count(k) > 1}):
            raise ConfigError(f"--set names {twice} twice: give each key once (the last would win silently).")
        execution = dict(pairs)
        if execution.get("device", "auto") != "auto":
            preflight.check_device(str(execution["device"]))
        exp = Experiment.load(args.experiment)
        if unknown := [name for name in args.settings or [] if name not in exp.settings]:  # as sweep() says it
            raise ConfigError(f"unknown setting(s) {unknown} of {exp.table}; known: {list(exp.settings)}.")
        if args.seeds is not None:  # a seed given twice, refused before --parallel deals the seeds out
            seed_list(args.seeds)
        # checked first: switching rewrites the file and moves its runs, so nothing refused may follow it
        for moved in switch_to_calibrated(args.experiment, args.profile) if args.calibrated else ():
            print(f"moved to the dated record: {moved}", flush=True)
        if args.parallel > 1:
            status = _sweep_parallel(args, list(args.seeds or Experiment.load(args.experiment).seeds))
            if status:
                return status
            args.no_progress = True  # every run is stored now: the sweep below reads them, one summary of all
        records = sweep(args.experiment, args.profile, args.seeds, args.settings, progress=not args.no_progress,
                        execution=execution)
    except (ConfigError, FileNotFoundError, IncompatibleCheckpoint, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.no_summary:
        return 0
    for setting, s in summarize(records).items():
        spread = f" +- {s['ci95']:.2f}" if s["n_seeds"] > 1 else ""  # one seed has no interval
        print(f"{setting:>24}: linear {s['mean']:6.2f}{spread} (n={s['n_seeds']}), "
              f"random init {s['random_init_mean']:6.2f}")
    return 0


def _sweep_parallel(args, seeds: list[int]) -> int:
    """``sweep --parallel N``: N child sweeps of the same file at once, ``seeds`` dealt round-robin (a late start
    forks from its own seed's baseline, so each seed stays in one process), each child with ``cores // N`` threads
    (at least one; ``OMP_NUM_THREADS``, which a run keeps), no progress bars (the children's lines would mix)."""
    n = min(args.parallel, len(seeds))
    threads = max(1, (os.cpu_count() or 1) // n)
    base = [sys.executable, "-m", "ftcl_core", "sweep", args.experiment, "--profile", args.profile, "--no-progress",
            "--no-summary"]
    base += ["--settings", *args.settings] if args.settings else []
    base += ["--set", *args.execution] if args.execution else []
    print(f"sweep: {n} processes of {threads} thread(s), seeds {[seeds[i::n] for i in range(n)]}", flush=True)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    children = [subprocess.Popen([*base, "--seeds", *map(str, seeds[i::n])], env=env) for i in range(n)]
    try:
        return max(child.wait() for child in children)
    except KeyboardInterrupt as err:  # Ctrl-C reached the children too; SIGTERM (the parent's alone) is passed on
        sig = signal.SIGTERM if isinstance(err, Terminated) else signal.SIGINT
        for child in children:
            if sig == signal.SIGTERM and child.poll() is None:
                child.send_signal(signal.SIGTERM)
        codes = [child.wait() for child in children]  # each stops at its checkpoint and says so
        done = "stopped at their checkpoints" if any(c in (130, 143) for c in codes) else \
            "ran to their end (the signal reached this process only)"
        print(f"interrupted ({sig.name}): the {n} sweeps {done}; the same command resumes what is left.",
              file=sys.stderr)
        return 128 + int(sig)


def _none_where_files_put_them(profile: str, command: str, files: str) -> int:
    """Say that the store holds runs, but none where an experiment file under ``files`` puts them (runs trained with
    ``train --out`` elsewhere, say), so ``command`` would write empty results; status 2, nothing written."""
    root = profile_root(profile)
    found = sum(1 for _ in root.rglob("eval.json"))
    print(f"error: {found} complete run(s) under {root}, but none in a folder an experiment file of {files} names "
          f"({root}/<table>/<setting>/seed<N>, where sweep writes): {command} reads only those, and would write empty "
          f"results; nothing was written. Train the runs with python -m ftcl_core sweep EXPERIMENT_FILE, or point "
          "FTCL_RUNS_ROOT at a store a sweep made.", file=sys.stderr)
    return EXIT_ERROR


def _has_runs(root) -> bool:
    """Whether the store ``root`` holds a complete run: ``summary``, ``predict`` and ``calibration`` read none from
    an empty one, and would write empty files to results/."""
    return root.is_dir() and any(root.rglob("eval.json"))


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ConfigError(f"--set {text!r}: write KEY=VALUE, e.g. --set device=cuda.")
    return key, yaml.safe_load(value)
