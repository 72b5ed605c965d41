"""Run records and the one index of stored runs.

A stored run is a folder ``<root>/<table>/<setting>/seed<N>`` holding ``config.yaml`` and, once complete,
``eval.json``. A *record* is one run's evaluation as a flat mapping: ``table``, ``setting``, ``seed``, ``dir`` and
every readout of its ``eval.json`` (``linear_top1``, ``knn_top1``, ``random_init_linear_top1``, ...).
"""

from __future__ import annotations

import re
from pathlib import Path

from ftcl_core.runs import RunDir

SEED_FOLDER = re.compile(r"seed(\d+)")


def complete_runs(root: str | Path) -> dict[str, RunDir]:
    """Every complete run under ``root`` (any depth), keyed by its path under ``root`` (``T1/m=0.9/seed0``), in
    sorted order. The one walk over stored run folders."""
    root = Path(root)
    if not root.is_dir():
        return {}
    return {str(p.parent.relative_to(root)): RunDir(p.parent) for p in sorted(root.glob("**/eval.json"))
            if RunDir(p.parent).is_complete()}


def unfinished_runs(root: str | Path) -> list[str]:
    """The run folders under ``root`` (any depth) that hold a ``config.yaml`` but no ``eval.json``: a run still
    training, interrupted, or whose readouts were deleted. :func:`complete_runs` leaves them out, so a summary that
    counts seeds names them. Paths under ``root``, sorted."""
    root = Path(root)
    if not root.is_dir():
        return []
    return [str(p.parent.relative_to(root)) for p in sorted(root.glob("**/config.yaml"))
            if not RunDir(p.parent).is_complete()]


def seed_folders(folder: str | Path) -> list[tuple[int, Path]]:
    """``(seed, path)`` of the ``seed<N>`` folders of one setting's folder, by seed."""
    folder = Path(folder)
    found = [(int(m.group(1)), d) for d in folder.glob("seed*") if (m := SEED_FOLDER.fullmatch(d.name))]
    return sorted(found)


def record(table: str, setting: str, seed: int, run: RunDir) -> dict:
    """One run's record (see the module)."""
    return {"table": table, "setting": setting, "seed": seed, "dir": str(run.path), **run.load_eval()}
