"""``python -m ftcl_core``: the entry point of the command line (:mod:`ftcl_core.study.cli`, which documents it).

It sits above the three layers (the library, :mod:`ftcl_core.study`, :mod:`ftcl_core.pages`); ``tests/test_layers.py``
exempts it from the layers' import rules. Run as a program, ``train`` says where it writes before the command line's
imports load torch (seconds).
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
from pathlib import Path


def __getattr__(name: str):
    """``main`` and the exit statuses (``EXIT_ERROR``, ``EXIT_DIVERGED``) of :mod:`ftcl_core.study.cli`, loaded on
    first use, so that running the module prints ``train``'s first line before torch loads."""
    if name in ("main", "EXIT_ERROR", "EXIT_DIVERGED"):
        from ftcl_core.study import cli

        return getattr(cli, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _announce(argv: list[str]) -> str | None:
    """Print ``train``'s first line (:func:`train_banner`) from the config alone, before torch loads, where nothing
    the command line checks next could contradict it; else return it, for the command line to print once its checks
    pass (an ``--out`` under a file, a folder holding another config's run: their refusal comes alone). None where
    there is no such line (another command, a config that does not load: the command line then says why)."""
    if argv[:1] != ["train"] or argv.count("--out") != 1 or os.environ.get("RANK", "0") != "0":
        return None
    from ftcl_core.config import load_config

    at = argv.index("--out")
    overrides = [a for i, a in enumerate(argv[2:], 2) if not a.startswith("-") and i != at + 1]  # before or after --out
    try:
        cfg = load_config(argv[1], overrides)
    except Exception:  # noqa: BLE001  (the command line reports it, in its one line)
        return None
    try:
        banner = train_banner(argv[1], overrides, argv[at + 1], cfg.train.checkpoint_every)
        keys = [o.split("=", 1)[0].strip() for o in overrides]
        plain = len(set(keys)) == len(keys) and _plainly_this_run(Path(os.path.expanduser(argv[at + 1])), cfg)
    except OSError:  # an --out the system cannot look at (a name too long, say): the command line says why
        return None
    if not plain:
        return banner
    print(banner, flush=True)
    return ""


def _plainly_this_run(out: Path, cfg) -> bool:  # noqa: ANN001  (a RunConfig; its module loads lazily)
    """Whether ``out`` is a plain folder (or none yet, under folders) whose run files, if any, are an unfinished run
    of ``cfg``'s config by its ``config.yaml``, and the config's images are of a size the machine surely holds: the
    cases the banner's words are sure of.
    Everything else waits for the command line's checks (torch-free here: the config module alone)."""
    from ftcl_core.config import ConfigError, check_schedule, config_mismatch, load_config

    if any(p.is_symlink() and not p.exists() or p.exists() and not p.is_dir() for p in (out, *out.parents)):
        return False
    if not os.access(next(p for p in (out, *out.parents) if p.exists()), os.W_OK | os.X_OK):
        return False  # a folder that cannot be written
    d = cfg.data
    if d.image_size > 256 or d.n_train > 1_000_000:  # perhaps beyond the machine's memory (study.preflight weighs it)
        return False
    if cfg.model.encoder.startswith("timm:"):
        return False  # whether it takes the views' size is one forward pass away (study.preflight.check_input_size)
    if cfg.device not in ("cpu", "auto") or any(v and not Path(os.path.expanduser(v)).exists()
                                                 for v in (cfg.data.root, cfg.data.test_root)):
        return False  # a device torch must look at, or data the command line will not find
    from ftcl_core.runs import RUN_FILES, lock_held

    if lock_held(out):
        return False  # another process trains it: the wait is said first, by the lock
    names = {p.name for p in out.iterdir()} if out.is_dir() else set()
    if names and not names & set(RUN_FILES):
        return False  # a folder of the user's files
    if any((out / f).exists() and not (out / f).is_file() for f in set(RUN_FILES) & names):
        return False  # a run's file that is a folder
    try:
        check_schedule(cfg)
    except ConfigError:
        return False
    if (out / "eval.json").exists():
        return False  # a complete run: its files are checked whole first (quick, nothing trains)
    if out.is_dir() and any((out / f).exists() for f in ("checkpoint.pt", "metrics.npz")):
        from ftcl_core.runs import RunDir

        try:
            if config_mismatch(load_config(out / "config.yaml"), cfg):
                return False
            RunDir(out).check_logs()  # a damaged log is refused by the command line's checks: no line before it
        except Exception:  # noqa: BLE001  (missing, damaged or another's: the command line's checks say which)
            return False
    return True


def train_banner(config: str, overrides: list[str], out: str | os.PathLike, every: int = 1) -> str:
    """What ``python -m ftcl_core train`` says at once (before torch loads; the
    command line's words, so they live here): where the run goes and the command that
    resumes it, or that ``out`` holds a complete run already."""
    out = Path(out)
    again = shlex.join(["python", "-m", "ftcl_core", "train", config, *overrides, "--out", str(out)])
    if (out / "eval.json").is_file():
        return f"{out} holds a complete run: its readouts ({out / 'eval.json'}) follow, nothing is trained."
    if (out / "checkpoint.pt").is_file():
        return (f"resuming the run in {out} from its checkpoint ({out / 'checkpoint.pt'}); interrupted again, "
                f"the same command resumes: {again}")
    when = "each epoch" if every == 1 else f"every {every} epochs"
    if (out / "metrics.npz").is_file():  # an unfinished run whose checkpoint is gone: its log cannot resume
        return (f"training the run in {out} again from its first step: it holds a log (metrics.npz) but no checkpoint.pt "
                f"to resume from, so its log is replaced. Interrupted (Ctrl-C), the same command resumes: {again}")
    return (f"training into {out}: config.yaml now, metrics and checkpoint.pt after {when}, eval.json at the end. "
            f"Interrupted (Ctrl-C), the same command resumes from the last checkpoint: {again}")


STARTUP_INTERRUPTED = ("interrupted ({signal}) while the command started, before it wrote anything; run the same "
                       "command again.")


def _startup_signal(signum: int, frame: object) -> None:
    """SIGTERM while the command starts (torch loading): raised as Ctrl-C is, naming the signal."""
    raise KeyboardInterrupt(signal.Signals(signum))


def report(argv: list[str]) -> int:
    """``python -m ftcl_core report CHAPTER [-p NAME VALUE ...] [--out PAGE]``: run a chapter under papermill with
    parameters and write it as one HTML page, numbers resolved and figures in place (:mod:`ftcl_core.pages.report`;
    a page of the pages layer, so it is routed here, above the layers)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ftcl_core report", description=report.__doc__)
    parser.add_argument("chapter", help="a chapter notebook, e.g. book/05_momentum.ipynb")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                        help='a papermill parameter; VALUE is read as YAML, so -p seeds "[0, 1, 2]" is a list')
    parser.add_argument("--out", help="the page to write (default reports/<chapter>.html)")
    args = parser.parse_args(argv)
    if sum(a == "--out" or a.startswith("--out=") for a in argv) > 1:
        print("error: --out given more than once (the last would win silently); give the page once.", file=sys.stderr)
        return 2
    if args.out is not None and not args.out.strip():
        print("error: --out '' names no page; give one (--out reports/momentum.html) or leave --out out for the default.",
              file=sys.stderr)
        return 2
    from ftcl_core.pages import report as report_page

    def stop(signum: int, frame: object) -> None:
        if signum == signal.SIGTERM:  # once: a second signal while the kernel shuts down is not news
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        logging.disable(logging.CRITICAL)  # nbclient logs "Kernel died" as the kernel goes down: one line is said
        raise KeyboardInterrupt(signal.Signals(signum))

    previous = signal.signal(signal.SIGTERM, stop)  # SIGTERM stops a report as Ctrl-C does: one line
    previous_int = signal.signal(signal.SIGINT, stop)
    try:
        report_page.report(args.chapter, args.out, report_page.parse_parameters(args.parameter))
    except report_page.ReportError as err:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        for each in (signal.SIGINT, signal.SIGTERM):  # the kernel's shutdown may signal again: one line is said
            signal.signal(each, signal.SIG_IGN)
        sig = signal.SIGTERM if err.args == (signal.SIGTERM,) else signal.SIGINT
        print(f"interrupted ({sig.name}) while running {args.chapter}: its page was not written (an executed notebook "
              "beside it is partial); run the same command again.", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + sig)  # at once: asyncio's teardown would log the interrupted kernel task's traceback
    signal.signal(signal.SIGTERM, previous)
    signal.signal(signal.SIGINT, previous_int)
    return 0


def run(argv: list[str]) -> int:
    """The program: ``train``'s first line, then the command line (:func:`ftcl_core.study.cli.main`, which turns
    every interrupt inside it into its one line); ``report`` (:func:`report`).  Ctrl-C before that, while the
    imports load torch (seconds), is one line too, and status 130 (SIGTERM: 143)."""
    if argv[:1] == ["report"]:
        return report(argv[1:])
    previous = signal.signal(signal.SIGTERM, _startup_signal)  # the command line installs its own once loaded
    try:
        banner = _announce(argv)
        from ftcl_core.study.cli import main as cli_main
    except KeyboardInterrupt as err:
        sig = signal.SIGTERM if err.args == (signal.SIGTERM,) else signal.SIGINT
        print(STARTUP_INTERRUPTED.format(signal=sig.name), file=sys.stderr)
        return 128 + sig
    finally:
        signal.signal(signal.SIGTERM, previous)
    return cli_main(argv, banner=banner or None)


if __name__ == "__main__":
    try:
        status = run(sys.argv[1:])
    except KeyboardInterrupt:  # between the command line's handlers: still one line
        print(STARTUP_INTERRUPTED.format(signal="SIGINT").replace("while the command started, before it wrote "
                                                                   "anything", "outside a run's training steps; "
                                                                   "nothing was lost"), file=sys.stderr)
        status = 130
    for each in (signal.SIGINT, signal.SIGTERM):  # the command is done: an interrupt now would only break torch's
        signal.signal(each, signal.SIG_IGN)      # exit handlers (a traceback after the last line)
    if status in (130, 143):  # interrupted while torch was half imported: its teardown can die of the same interrupt
        sys.stdout.flush()  # (status -2 instead of 130), so leave at once, the one line said
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)
