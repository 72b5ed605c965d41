"""Command line: ``python -m ftcl_core train CONFIG [key=value ...] --out DIR``.

Trains into DIR, or resumes from DIR's checkpoint with the same command, or prints DIR's results when
the run is complete.  Any config key can be overridden, e.g. ``ft.pos=true ft.neg=true moco.momentum=0.9``.
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
    args = parser.parse_args(argv)

    from ftcl_core.training import IncompatibleCheckpoint, TrainingDiverged, train

    try:
        cfg = load_config(args.config, args.overrides)
        result = train(cfg, args.out, progress=not args.no_progress)
    except (ConfigError, FileNotFoundError, IncompatibleCheckpoint, TrainingDiverged, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
