"""Command line: ``python -m ftcl_core train CONFIG [key=value ...] --out DIR``.

Several processes: ``torchrun --nproc_per_node=N -m ftcl_core train CONFIG --out DIR`` (gloo on CPU, nccl
on CUDA); each process takes ``batch_size / N`` images of every batch.

Trains into DIR, or resumes from DIR's checkpoint with the same command, or prints DIR's results when
the run is complete.  ``python -m ftcl_core sweep FILE`` trains an experiment file's missing runs;
``python -m ftcl_core summary`` writes ``results/summary.csv`` and prints it as one Markdown table per
paper table.  Any config key can be overridden, e.g. ``ft.pos=true ft.neg=true moco.momentum=0.9``.
"""

from __future__ import annotations

import argparse
import json
import sys

from ftcl_core.runs import ConfigError, load_config


def main(argv: list[str] | None = None) -> int:
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
    sw.add_argument("--seeds", type=int, nargs="*", help="only these seeds (default: the file's)")
    sw.add_argument("--settings", nargs="*", help="only these settings (default: all)")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")
    sm = sub.add_parser("summary", help="write results/summary.csv from the stored runs; print it as Markdown")
    sm.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "gpu"])
    args, extra = parser.parse_known_args(argv)
    # key=value overrides may also come after --out (argparse stops collecting positionals at an option)
    stray = [e for e in extra if args.command != "train" or "=" not in e or e.startswith("-")]
    if stray:
        parser.error(f"unrecognized arguments: {' '.join(stray)}")
    if args.command == "train":
        args.overrides = [*args.overrides, *extra]
    if args.command == "sweep":
        return _sweep(args)
    if args.command == "summary":
        from ftcl_core.experiments import summary_markdown, write_summary

        path = write_summary(args.profile)
        print(f"<!-- written: {path} -->\n" + summary_markdown(path))
        return 0

    from ftcl_core import distributed as D
    from ftcl_core.training import IncompatibleCheckpoint, TrainingDiverged, train

    try:
        cfg = load_config(args.config, args.overrides)
        result = train(cfg, args.out, progress=not args.no_progress)
    except (ConfigError, FileNotFoundError, IncompatibleCheckpoint, TrainingDiverged, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        D.shutdown()
    if D.rank_from_env() == 0:
        print(json.dumps(result, indent=2, sort_keys=True))
    return 0


def _sweep(args) -> int:
    from ftcl_core.experiments import summarize, sweep
    from ftcl_core.training import IncompatibleCheckpoint, TrainingDiverged

    try:
        records = sweep(args.experiment, args.profile, args.seeds, args.settings, progress=not args.no_progress)
    except (ConfigError, FileNotFoundError, IncompatibleCheckpoint, TrainingDiverged, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for setting, s in summarize(records).items():
        print(f"{setting:>24}: linear {s['mean']:6.2f} +- {s['ci95']:.2f} (n={s['n_seeds']}), "
              f"random init {s['random_init_mean']:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
