"""How many threads a training process uses, given the machine's other training processes.

A policy of the runner, not of the loop: the study's commands and sweeps (:mod:`ftcl_core.study.cli`,
:func:`ftcl_core.study.sweeps.sweep`) train each run inside :func:`threads_to_train`; the library's
:func:`ftcl_core.training.train` uses the threads it finds.  Every training process so wrapped registers in a folder
of the system's temporary directory (``ftcl_core-trainers``, or ``$FTCL_TRAINERS_DIR``): one file per run, holding
its thread count and locked (``flock``) while the run lives, so the file of a killed process is known to be stale
(nobody holds its lock) and is removed.  A run that starts while others train takes the threads they leave of
``os.cpu_count()``, at least one: OpenMP threads spin-wait, and two processes of two threads each on two cores ran
about ten times slower each.  An explicit ``OMP_NUM_THREADS`` (or a caller's :func:`pinned` block:
:func:`ftcl_core.study.replay.replay` runs a stored run's own count) is kept, with a warning where it
oversubscribes the machine.  Every run says in one line how many threads it uses.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import torch

from ftcl_core.config import ConfigError
from ftcl_core.runs import RunDir, read_seal

ENV_DIR = "FTCL_TRAINERS_DIR"  # where the runs register (default: <temp dir>/ftcl_core-trainers)
SUFFIX = ".trainer"
_pinned = 0  # > 0 inside a pinned() block
_names = itertools.count()


def registry() -> Path:
    """The folder where training processes register (``$FTCL_TRAINERS_DIR``, else under the temp dir)."""
    return Path(os.environ.get(ENV_DIR) or Path(tempfile.gettempdir()) / "ftcl_core-trainers")


def others_threads(folder: Path) -> list[int]:
    """The thread counts of the live runs registered in ``folder``; stale files (their process died) are removed."""
    counts = []
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        try:
            with open(path, "r+") as fh:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:  # held: a live run
                    counts.append(max(1, int(fh.read().strip() or 1)))
                    continue
                path.unlink(missing_ok=True)  # nobody holds it: its run ended without removing it (kill -9)
        except (OSError, ValueError):
            continue  # a file that vanished meanwhile, or garbled: not a run to count
    return counts


def plan_threads(current: int, cores: int, others: list[int], explicit: bool) -> tuple[int, str]:
    """The threads a new run takes and the line that says so.

    ``current``: what it would use alone (torch's count); ``others``: the live runs' counts; ``explicit``: the count
    was chosen (``OMP_NUM_THREADS``, :func:`pinned`) and is kept.  Otherwise, beside other runs, the run takes what
    they leave of ``cores``, at least 1 and at most ``current``."""
    used = sum(others)
    threads = current if explicit or not others else max(1, min(current, cores - used))
    line = f"ftcl_core: training with {threads} thread(s) on {cores} core(s)"
    if not others:
        return threads, line + "."
    line += f"; {len(others)} other training process(es) on this machine use {used}"
    if threads < current:
        line += f", so this run takes {threads} instead of {current} (set OMP_NUM_THREADS=N to choose)"
    if threads + used > cores:
        fix = max(1, cores // (len(others) + 1))
        line += (f"; {threads + used} threads on {cores} cores slow every run: start each with OMP_NUM_THREADS={fix}, "
                 "or one at a time")
    return threads, line + "."


def chosen() -> bool:
    """Whether the caller chose the thread count (``OMP_NUM_THREADS``, or a :func:`pinned` block)."""
    return bool(_pinned) or "OMP_NUM_THREADS" in os.environ


@contextlib.contextmanager
def pinned() -> Iterator[None]:
    """Inside the block, a run keeps the thread count it finds (the caller chose it)."""
    global _pinned
    _pinned += 1
    try:
        yield
    finally:
        _pinned -= 1


@contextlib.contextmanager
def training_threads(say: bool = True, keep: int | None = None) -> Iterator[int]:
    """Register this run, set its threads (:func:`plan_threads`) for the block, and restore them after it; yields
    the count.  The line is printed (stdout) when ``say``, and always when the count was lowered or the machine is
    oversubscribed.  A registry that cannot be written (a read-only temp dir) counts no other run.  ``keep``: the
    count a resumed run began with, kept whatever else trains."""
    before = torch.get_num_threads()
    explicit = chosen() or keep is not None
    if keep is not None:
        torch.set_num_threads(keep)
    folder = registry()
    entry = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".registering", "a") as guard:  # two runs starting at once see each other
            fcntl.flock(guard, fcntl.LOCK_EX)
            others = others_threads(folder)
            threads, line = plan_threads(torch.get_num_threads(), os.cpu_count() or 1, others, explicit)
            entry = open(folder / f"{os.getpid()}-{next(_names)}{SUFFIX}", "w")
            fcntl.flock(entry, fcntl.LOCK_EX)
            entry.write(str(threads))
            entry.flush()
    except OSError:
        others = []
        threads, line = plan_threads(torch.get_num_threads(), os.cpu_count() or 1, others, explicit)
    if keep is not None:
        line = line.removesuffix(".") + ", the count this resumed run began with."
    torch.set_num_threads(threads)
    if say or threads != before or threads + sum(others) > (os.cpu_count() or 1):
        print(line, flush=True)
    try:
        yield threads
    finally:
        torch.set_num_threads(before)
        if entry is not None:
            Path(entry.name).unlink(missing_ok=True)
            entry.close()


RESUME_THREADS = ("run folder {out} began training with {sealed} thread(s) and would resume with {now} "
                  "(OMP_NUM_THREADS): another count rounds the sums otherwise, so its numbers would no longer be the "
                  "uninterrupted run's. Resume with OMP_NUM_THREADS={sealed}, or use another --out.")


def threads_to_train(out: str | os.PathLike, say: bool = True) -> contextlib.AbstractContextManager:
    """:func:`training_threads` around the training of the run in folder ``out``; nothing around a complete run,
    which :func:`ftcl_core.training.train` only loads.  A resumed run keeps the thread count its checkpoint was
    sealed with (a CPU's sums round by it): chosen for it where no count is set, refused where ``OMP_NUM_THREADS``
    sets another (:class:`~ftcl_core.config.ConfigError`)."""
    run = RunDir(out)
    if run.is_complete():
        return contextlib.nullcontext()
    sealed = (read_seal(run.checkpoint) or {}).get("threads") if run.checkpoint.is_file() else None
    if sealed is not None and chosen() and torch.get_num_threads() != sealed:
        raise ConfigError(RESUME_THREADS.format(out=out, sealed=sealed, now=torch.get_num_threads()))
    return training_threads(say, keep=sealed)
