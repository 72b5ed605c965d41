"""The stored runs: where an experiment's runs lie, their records, which machine trained them, the identical run a
sweep may copy, and the check that every folder holds the run its experiment file asks for (:func:`check_store`)."""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

import numpy as np

from ftcl_core.config import (
    RunConfig,
    config_diff,
    config_mismatch,
)
from ftcl_core.runs import RunDir, RunFileError, atomic_write_bytes, write_json
from ftcl_core.study.experiment_file import (
    ROOT,
    STORED,
    Experiment,
    base_for,
    planned_runs,
    profile_root,
    recipe_kind,
    run_dir,
)
from ftcl_core.study.results import records as run_records


def machine_kind(run: RunDir) -> str:
    """The kind of machine a stored run trained on, from its provenance: the device type and, for a CPU, its model
    (``cpu/AMD EPYC``), for a GPU its name (``cuda/NVIDIA H200``). Two runs of one recipe and seed on two kinds round
    floats differently, so a pair of them is marked (:attr:`~ftcl_core.study.results.paired.Paired.mixed_seeds`)."""
    prov = run.load_provenance()
    device = trained_on(run, prov)
    model = prov.get("cpu_model") if device == "cpu" else prov.get("device_name")
    return f"{device}/{str(model or 'unknown').split(' @')[0]}"


def trained_on(run: RunDir, provenance: dict | None = None) -> str:
    """The kind of device a stored run trained on, without an index ("cpu", "cuda"): its provenance (``provenance``
    where the caller has read it already), else its config (runs stored before provenance named the device)."""
    prov = run.load_provenance() if provenance is None else provenance
    return str(prov.get("device") or run.load_config().device).split(":")[0]


def find_identical_run(cfg: RunConfig, profile: str) -> Path | None:
    """A complete run of the profile whose config equals ``cfg`` (the baselines that several tables share).

    One trained on the kind of device ``cfg`` names comes first: the same recipe on another device differs in
    float rounding, and a table pairs a copied baseline with runs trained where ``cfg`` runs."""
    found = []
    for run in stored_runs(profile).values():
        if not config_diff(run.load_config(), cfg):
            found.append((trained_on(run) != cfg.device.split(":")[0], str(run.path), run.path))
    return min(found)[2] if found else None


def copy_run(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy a complete run's stored files (not its checkpoint) to ``dst``; provenance records the source.

    The evaluation is written last, so an interrupted copy is never taken for a complete run.  Every file is read
    before any is copied: a damaged one stops the copy with its :class:`~ftcl_core.runs.RunFileError` (naming it
    and the recovery) instead of spreading to the copy."""
    src_run, dst_run = RunDir(src), RunDir(dst)
    src_run.load_config()
    for path, load in ((src_run.metrics, src_run.load_metrics), (src_run.grad_norms, src_run.load_grad_norms),
                       (src_run.histograms, src_run.load_histograms)):
        if path.is_file():
            load()
    prov, result = src_run.load_provenance(), src_run.load_eval()
    dst_run.path.mkdir(parents=True, exist_ok=True)
    for name in ("config.yaml", "metrics.npz", "grad_norms.npz", "histograms.npz"):
        if (src_run.path / name).is_file():
            atomic_write_bytes(dst_run.path / name, (src_run.path / name).read_bytes())
    rel = os.path.relpath(src_run.path, dst_run.path)
    write_json(dst_run.provenance, {**prov, "copied_from": rel})
    write_json(dst_run.eval, result)


def stored_runs(profile: str) -> dict[str, RunDir]:
    """Every complete run of a profile, keyed by its path under the profile's root (``T1/m=0.9/seed0``)."""
    return run_records.complete_runs(profile_root(profile))


def runs_by_device(profile: str = "cpu") -> list[dict]:
    """Where the stored runs of a profile were trained: one row per (folder of a setting, device), with the seeds
    and the mean training seconds a run (copies of another run are left out: they were not trained there).
    ``device`` is an execution key, so a setting's seeds may come from more than one machine."""
    groups: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for label, run in stored_runs(profile).items():
        prov = run.load_provenance()
        if "copied_from" in prov:
            continue
        folder, seed = label.rsplit("/", 1)
        on_gpu = str(prov.get("device", "cpu")).startswith("cuda")
        device = (prov.get("device_name") if on_gpu else prov.get("cpu_model")) or ("GPU" if on_gpu else "CPU")
        groups.setdefault((folder, device), []).append((int(seed.removeprefix("seed")), float(prov.get("train_s", math.nan))))
    return [{"runs": folder, "device": device, "seeds": sorted(s for s, _ in v), "n": len(v),
             "train_s": float(np.mean([t for _, t in v]))} for (folder, device), v in sorted(groups.items())]


def one_seed_per_setting(labels: list[str]) -> list[str]:
    """The first (lowest) seed of every ``table/setting`` among :func:`stored_runs` labels."""
    first: dict[str, str] = {}
    for name in labels:
        first.setdefault(name.rsplit("/", 1)[0], name)
    return list(first.values())


def stored_run(path: str | os.PathLike, setting: str, seed: int) -> RunDir:
    """The committed cpu run of one setting and seed of the experiment file at ``path`` (under :data:`STORED`,
    wherever ``FTCL_RUNS_ROOT`` points): the run a page's words read, whatever profile the page ran with. A missing
    run is a :class:`RunFileError` naming its folder."""
    exp = Experiment.load(path)
    if setting not in exp.settings:
        raise ValueError(f"{exp.path} has no setting {setting!r}: it has {', '.join(map(repr, exp.settings))}.")
    run = RunDir(run_dir(exp, setting, seed, "cpu", STORED))
    if not run.is_complete():
        raise RunFileError(f"{run.path}: no complete stored run of {exp.table} {setting!r} seed {seed}; the checkout's "
                           f"results/ holds the committed runs (a fresh clone has them).")
    return run


def load_records(path: str | os.PathLike, profile: str = "cpu", root: str | os.PathLike | None = None) -> list[dict]:
    """Records of the complete runs of an experiment (missing runs are skipped, not trained), under the profile's
    root or ``root`` (:data:`STORED`: the committed runs, wherever ``FTCL_RUNS_ROOT`` points)."""
    exp = Experiment.load(path)
    out = []
    for name in exp.settings:
        for seed in exp.seeds:
            d = RunDir(run_dir(exp, name, seed, profile, root))
            if d.is_complete():
                out.append(run_records.record(exp.table, name, seed, d))
    return out


def check_store(profile: str = "cpu", folder: str | os.PathLike | None = None) -> int:
    """Refuse a store where a run folder of an experiment file (under ``folder``, default ``experiments/``, any depth)
    holds a run of another config than the file asks of that setting and seed: a run copied or linked into the wrong
    folder, or a ``config.yaml`` edited by hand, which a summary would count as the setting's.  The first such folder
    is a :class:`~ftcl_core.runs.RunFileError` naming both values and the fix; returns the runs checked."""
    folder = Path(folder) if folder else ROOT / "experiments"
    checked = 0
    for f in sorted(folder.glob("**/*.yaml")):
        exp = Experiment.load(f)
        if ("gpu" if profile == "gpu" else "cpu") not in exp.base or not (profile_root(profile) / exp.table).is_dir():
            continue
        stored = [(name, seed) for name in exp.settings for seed in exp.seeds
                  if RunDir(run_dir(exp, name, seed, profile)).is_complete()]
        for name, seed, cfg, path in planned_runs(exp, profile) if stored else []:
            if (name, seed) not in stored:
                continue
            checked += 1
            run, rel = RunDir(path), f.relative_to(ROOT) if f.is_relative_to(ROOT) else f
            if changed := run.changed_files():  # another run's log copied in: its curves would be read as this one's
                for changed_file in changed:  # a damaged file says so first, with its own recovery
                    {"metrics.npz": run.load_metrics, "grad_norms.npz": run.load_grad_norms,
                     "histograms.npz": run.load_histograms, "eval.json": run.load_eval}[changed_file]()
                raise RunFileError(f"{run.path / changed[0]} is not the file this run completed with (its "
                                   "provenance.json keeps each log's sha256). Restore the run's own file, or move the "
                                   f"folder out of the store and train it again: python -m ftcl_core sweep {rel} "
                                   f"--settings {name!r} --seeds {seed}")
            recorded = run.load_provenance().get("seed", seed)  # a copied seed whose config.yaml was edited to match
            diff = config_mismatch(run.load_config(), cfg).replace("(this command's)", f"({f.name}'s)")
            problem = (f"a run of seed {recorded} (its provenance.json), in the folder of seed {seed}" if recorded != seed
                       else f"a run of another config than {f.name} asks of setting {name!r}, seed {seed}: {diff}"
                       if diff else "")
            if problem:
                raise RunFileError(f"{path} holds {problem}. Move the folder out of the store (a summary would count it "
                                   f"as this setting's), then train the run with: python -m ftcl_core sweep {rel} "
                                   f"--settings {name!r} --seeds {seed}")
    return checked


def original_recipe_records(path: str | os.PathLike, profile: str = "cpu") -> list[dict]:
    """An experiment's runs on the CPU profile's original recipe: the dated record's once the table has been
    rerun on a calibrated recipe (its ``base`` is a ``configs/cpu_cal_*`` file), else its current runs."""
    exp = Experiment.load(path)
    if profile == "cpu" and recipe_kind(base_for(exp, profile)) == "calibrated":
        return load_recorded(path)
    return load_records(path, profile)


def load_recorded(path: str | os.PathLike, root: str | os.PathLike | None = None) -> list[dict]:
    """Records of an experiment's runs in the dated record (:data:`RECIPE_RECORD`'s folder, or ``root``): the
    runs a table had on its original recipe before it was rerun, every stored seed. Empty while the table has
    not moved there (its runs are still the current ones: :func:`load_records`)."""
    exp = Experiment.load(path)
    root = Path(root) if root is not None else RECIPE_RECORD.parent
    filed = dataclasses.replace(exp, table=recorded_table(exp.table, next(iter(exp.settings))))
    out = []
    for name in exp.settings:
        folder = run_dir(filed, name, 0, "cpu").parent.relative_to(profile_root("cpu"))
        for seed, d in run_records.seed_folders(root / folder):
            run = RunDir(d)
            if run.is_complete():
                out.append(run_records.record(exp.table, name, seed, run))
    return out


RECIPE_RECORD = ROOT / "results" / "cpu-2026-11" / "summary.csv"  # the tables on the profile's original recipes
# Rows filed under another table since the dated record was written: (table now, a setting) -> its table there.
# BYOL's rows are the supplement's IN-1K table (Supp E), not Table 7, where the record still has them (issue 50).
REFILED = {("S-E", "byol baseline"): "T7", ("S-E", "byol +pos"): "T7"}


def recorded_table(table: str, setting: str) -> str:
    """The table under which the dated record (:data:`RECIPE_RECORD`) holds ``setting`` of ``table``
    (:data:`REFILED`; the same table for every row not refiled)."""
    return REFILED.get((table, setting), table)
