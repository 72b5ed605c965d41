"""Training an experiment file's runs: the sweep (:func:`sweep` trains only what is missing, so an interrupted sweep
resumes where it stopped, and a complete run is loaded, never retrained), late-start forks from a baseline's
prefix, the move to a calibrated recipe, and the plan with its time on this machine."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import shutil
from pathlib import Path

import numpy as np

from ftcl_core import execution
from ftcl_core.config import (
    EXECUTION_KEYS,
    ConfigError,
    FTConfig,
    RunConfig,
)
from ftcl_core.runs import RunDir, cpu_isa, cpu_model, write_json
from ftcl_core.study.experiment_file import (
    ROOT,
    Experiment,
    base_for,
    calibrated_base,
    config_identity,
    planned_runs,
    profile_root,
    recipe_kind,
    resolve,
    run_dir,
    seed_list,
    writes_committed,
)
from ftcl_core.study.results import records as run_records
from ftcl_core.study.store import RECIPE_RECORD, copy_run, find_identical_run, load_records, stored_runs
from ftcl_core.study.threads import threads_to_train


def sweep(path: str | os.PathLike, profile: str = "cpu", seeds: list[int] | None = None,
          settings: list[str] | None = None, progress: bool = True, execution: dict | None = None) -> list[dict]:
    """Train every missing (setting, seed) run of an experiment; return one record per run.

    ``execution`` sets how every run executes, never what it computes (only :data:`EXECUTION_KEYS`, e.g.
    ``{"device": "cuda"}``): the runs keep their folders and count for their settings wherever they ran.

    With ``train.compile=auto`` a sweep compiles the networks of its CPU runs when the runs still to train on
    one network add up to the steps that pay for a cold compile (:func:`sweep_compiles`): the first run
    compiles, the others find the compiler's cache warm.  Compiling changes float rounding only, not a
    run's identity; each run records how it ran."""
    from ftcl_core.training import epoch_callback, train  # lazily: reading records (the pages) never loads the loop

    exp = Experiment.load(path)
    seeds = seed_list(seeds)
    if settings is not None and not settings:
        raise ConfigError(f"settings=[] names no setting of {exp.table}: give some of {list(exp.settings)}, or None "
                          "for every one.")
    names = settings or list(exp.settings)
    unknown = [s for s in names if s not in exp.settings]
    if unknown:
        raise ConfigError(f"unknown setting(s) {unknown} of {exp.table}; known: {list(exp.settings)}.")
    if twice := sorted({s for s in names if names.count(s) > 1}):
        raise ConfigError(f"setting(s) {twice} given twice, which would count their runs twice: give each once.")
    execution = execution or {}
    if recipe := sorted(set(execution) - set(EXECUTION_KEYS)):
        raise ConfigError(f"{recipe} change what a run computes, not how it executes; a sweep may set only "
                          f"{list(EXECUTION_KEYS)}. Put recipe changes in the experiment file.")
    def copy_twin(name: str, seed: int, cfg: RunConfig, out: Path) -> None:
        if not RunDir(out).is_complete() and (twin := find_identical_run(cfg, profile)) is not None:
            copy_run(twin, out)
            if progress:
                print(f"[{exp.table}] {name} seed {seed}: same config as {twin}, copied", flush=True)

    from ftcl_core.checkpoints import IncompatibleCheckpoint  # the training side: loaded when a sweep trains

    jobs = planned_runs(exp, profile, seeds, names, execution)
    forks = late_start_forks([(cfg, out) for _, _, cfg, out in jobs])
    for _, _, cfg, out in jobs:  # a complete run whose damaged config.yaml was deleted (RunDir.load_config's
        RunDir(out).restore_config(cfg)  # recovery) gets it back before find_identical_run reads every stored run
    for job in jobs:  # the copies first, so that the compile choice counts only the runs left to train
        copy_twin(*job)
    compiled = sweep_compiles([(cfg, out) for _, _, cfg, out in jobs])
    records = []
    for name, seed, cfg, out in jobs:
        copy_twin(name, seed, cfg, out)  # a run this sweep trained may be the twin of a later one
        if out in compiled:
            cfg = cfg.updated({"train.compile": True})
        forked = fork_from_prefix(out, *forks[out]) if out in forks else None
        if progress and not RunDir(out).is_complete():
            print(f"[{exp.table}] {name} seed {seed} -> {out}" + (" (compiled)" if out in compiled else "")
                  + (f" (from {forked}, epoch {forks[out][1]})" if forked else ""), flush=True)
        keep = sorted(e for src, e in forks.values() if src == out)
        try:
            with epoch_callback(keep_prefix(keep)) if keep else contextlib.nullcontext(), threads_to_train(out, progress):
                result = train(cfg, out, progress=progress)
        except IncompatibleCheckpoint as err:  # the folder is the setting's: a sweep has no --out to change
            raise err.instead(SWEEP_ADVICE.format(out=out, path=exp.path)) from None
        if forked:
            note_fork(out, forked, forks[out][1])
        records.append({"table": exp.table, "setting": name, "seed": seed, "dir": str(out), **result})
    return records


SWEEP_ADVICE = "move the folder {out} away, and the sweep trains the setting anew as {path} asks"  # its way round


PREFIX_FOLDER = "prefix-epoch{}"  # inside a run folder: its checkpoint and log after that many epochs


def _resume_files(run: RunDir) -> tuple[Path, ...]:
    """The files a run resumes from (:func:`ftcl_core.checkpoints.resume`): what a kept prefix holds."""
    return run.checkpoint, run.metrics, run.grad_norms


def late_start_forks(jobs: list[tuple[RunConfig, Path]]) -> dict[Path, tuple[Path, int]]:
    """For each job that switches FT on at ``ft.start_epoch`` = s > 0, the job of the same list that is the same run
    with FT off (its baseline: every key but ``ft.*`` equal, the seed too) and s: ``{late arm's folder: (baseline's
    folder, s)}``. Before s FT is inactive (Tab. 6's start epoch), so the two runs compute the same steps; the
    baseline keeps its state at s (:func:`keep_prefix`) and the late arm starts from it (:func:`fork_from_prefix`),
    saving s epochs of training. Only a baseline that comes first in the list can serve."""
    first: dict[tuple, Path] = {}
    out: dict[Path, tuple[Path, int]] = {}
    for cfg, folder in jobs:
        if cfg.ft.any:
            base = first.get(config_identity(dataclasses.replace(cfg, ft=FTConfig())))
            if base is not None and cfg.ft.start_epoch > 0:
                out[folder] = (base, cfg.ft.start_epoch)
        else:
            first.setdefault(config_identity(cfg), folder)
    return out


def keep_prefix(epochs: list[int]):
    """An epoch callback (:func:`ftcl_core.training.epoch_callback`) that copies the run's checkpoint and log into
    ``PREFIX_FOLDER`` after each of ``epochs`` (written to a temporary name and renamed, so a copy is whole or absent)."""
    def keep(run: RunDir, epoch: int) -> None:
        if epoch not in epochs or (run.path / PREFIX_FOLDER.format(epoch)).is_dir():
            return
        tmp = run.path / (PREFIX_FOLDER.format(epoch) + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for f in _resume_files(run):
            shutil.copy2(f, tmp / f.name)
        tmp.rename(run.path / PREFIX_FOLDER.format(epoch))
    return keep


def fork_from_prefix(out: Path, base: Path, epoch: int) -> Path | None:
    """Start the late-start run ``out`` from its baseline's state after ``epoch`` epochs (:func:`late_start_forks`):
    copy the baseline's kept checkpoint and log into ``out``, where training resumes from them. Returns ``base``
    when it forked, None when ``out`` already holds a checkpoint (it resumes its own) or the baseline kept no state
    at ``epoch`` (then ``out`` trains from the start, as without forks)."""
    prefix, run = Path(base) / PREFIX_FOLDER.format(epoch), RunDir(out)
    if run.is_complete() or run.checkpoint.exists() or not prefix.is_dir():
        return None
    run.path.mkdir(parents=True, exist_ok=True)
    for f in _resume_files(run):
        shutil.copy2(prefix / f.name, f)
    return Path(base)


def note_fork(out: Path, base: Path, epoch: int) -> None:
    """Record in ``out``'s provenance that its first ``epoch`` epochs are its baseline's (``forked_from``)."""
    run = RunDir(out)
    if run.is_complete():
        rel = str(Path(base).resolve().relative_to(ROOT)) if Path(base).resolve().is_relative_to(ROOT) else str(base)
        write_json(run.provenance, {**run.load_provenance(), "forked_from": {"run": rel, "epochs": epoch}})


def check_calibrated_profile(profile: str) -> None:
    """Refuse a calibrated rerun (or its plan) on a profile other than ``cpu``: only its tables have calibrated recipes."""
    if profile != "cpu":
        raise ConfigError(f"only the cpu profile's tables have calibrated recipes (configs/cpu_cal_*.yaml), not {profile!r}.")


def calibrated_recipe(exp: Experiment, profile: str) -> Experiment:
    """``exp`` on its calibrated recipe (:func:`calibrated_base`; ``exp`` itself where its base is one already); a file
    whose cpu base has none is a :class:`ConfigError`, for a calibrated rerun and its plan alike."""
    cal = calibrated_base(exp)
    if cal is exp and recipe_kind(base_for(exp, profile)) != "calibrated":
        raise ConfigError(f"{exp.path}: its cpu base {exp.base.get('cpu')} has no calibrated recipe "
                          "(configs/cpu_cal_<name>.yaml); calibrate it first (experiments/calibration/).")
    return cal


def switch_to_calibrated(path: str | os.PathLike, profile: str = "cpu", record: str | os.PathLike | None = None) -> list[Path]:
    """Prepare an experiment file's rerun on its calibrated recipe (:func:`calibrated_base`, issue "fair baselines"), the
    step before :func:`sweep`: move every complete run of the file's settings that holds the original recipe's config
    into the dated record ``record`` (:data:`RECIPE_RECORD`'s folder for the committed store; for a store elsewhere,
    ``FTCL_RUNS_ROOT``, a folder of that name beside its profile's, so a user's runs never move into the checkout; the
    same folder under it as under the profile's root), then point the file's ``cpu`` base at the calibrated config.
    Returns the moved folders. Nothing is deleted or overwritten, and everything is checked before anything moves: a
    destination that exists, an unfinished run of the original recipe (its checkpoint would stop the sweep), a run that
    holds neither recipe's config, or a base line that cannot be rewritten stops it with an error that names them. A
    second call on a switched file moves nothing, so an interrupted rerun resumes with the same command."""
    check_calibrated_profile(profile)
    exp = Experiment.load(path)
    cal = calibrated_recipe(exp, profile)
    text = exp.path.read_text()
    old_line, new_line = f"cpu: {exp.base['cpu']}", f"cpu: {cal.base['cpu']}"
    if cal is not exp and text.count(old_line) != 1:
        raise ConfigError(f"{exp.path}: expected one '{old_line}' in its base line to switch to '{new_line}'; "
                          "edit it by hand.")
    root = profile_root(profile)
    if record is None:  # the committed store's record; a store elsewhere (FTCL_RUNS_ROOT) keeps its own beside it
        record = RECIPE_RECORD.parent if writes_committed(profile) else root.parent / RECIPE_RECORD.parent.name
    record = Path(record)
    moves, unfinished, foreign = [], [], []
    for name in cal.settings:
        for seed, folder in run_records.seed_folders(run_dir(cal, name, 0, profile).parent):
            if not (folder / "config.yaml").is_file():
                continue
            run = RunDir(folder)
            identity = config_identity(run.load_config())
            wanted = {which: config_identity(resolve(base_for(e, profile), e.overrides(name, seed), profile))
                      for which, e in (("original", exp), ("calibrated", cal))}
            if identity == wanted["calibrated"]:
                continue
            if identity != wanted["original"]:
                foreign.append(str(folder))
            elif not run.is_complete():
                unfinished.append(str(folder))
            else:
                moves.append((folder, record / folder.relative_to(root)))
    if foreign:
        raise ConfigError(f"{foreign} hold neither the original nor the calibrated recipe's config (an edited "
                          "setting?); move them aside by hand, then rerun.")
    if unfinished:
        raise ConfigError(f"{unfinished} are unfinished runs of the original recipe; delete them (their checkpoints "
                          "would stop the sweep), then rerun.")
    if clash := [str(dst) for _, dst in moves if dst.exists()]:
        raise ConfigError(f"the dated record already holds {clash}; compare them with the runs to move and remove one "
                          "copy by hand before the rerun.")
    for src, dst in moves:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(src, dst)
    if cal is not exp:
        exp.path.write_text(recipe_note(exp, cal, record) + text.replace(old_line, new_line))
    return [dst for _, dst in moves]


def recipe_note(exp: Experiment, cal: Experiment, record: Path) -> str:
    """The comment :func:`switch_to_calibrated` puts at the top of a switched experiment file: which recipe its cpu
    runs use now, and where its runs on the original recipe went."""
    folders = sorted({str(run_dir(exp, name, 0, "cpu").parent.relative_to(profile_root("cpu")).parent) for name in exp.settings})
    where = record.relative_to(ROOT) if record.is_relative_to(ROOT) else record
    return (f"# CPU profile: {cal.base['cpu']}, the recipe calibrated without FT on a validation split (issue \"fair\n"
            f"# baselines\"); the runs on the original recipe ({exp.base['cpu']}) are the dated record\n"
            f"# {where}/{', '.join(folders)}.\n")


def plan_rows(paths: list[str | os.PathLike], profile: str = "cpu", seeds: list[int] | None = None,
              calibrated: bool = False, rates: dict[tuple, list[float]] | None = None) -> list[dict]:
    """What is left to run, one row per experiment file: its table and recipe (``base``), the runs it asks for,
    how many are stored with that config, which stored ones hold another config (``stale``: runs of an earlier
    recipe, to move to a dated record before the rerun), how many a sweep would copy from an identical run
    (stored, or trained earlier in the plan: files are taken in the order given) and which it would train,
    with their optimiser steps (:func:`planned_steps`) and, given ``rates`` (:func:`step_rates_here`), their
    seconds here. ``seeds``/``calibrated`` plan a rerun at other seeds or on :func:`calibrated_recipe` (a file with
    none refused). Nothing is trained, copied or moved here."""
    if calibrated:  # what sweep --calibrated refuses is not planned
        check_calibrated_profile(profile)
    index: dict[tuple, Path] = {}
    for run in stored_runs(profile).values():
        index.setdefault(config_identity(run.load_config()), run.path)
    rows = []
    for path in paths:
        exp = Experiment.load(path)
        exp = calibrated_recipe(exp, profile) if calibrated else exp
        row = {"file": str(path), "table": exp.table, "base": base_for(exp, profile), "runs": 0, "stored": 0,
               "stale": 0, "copy": 0, "train": 0, "steps": 0, "seconds": 0.0, "to_train": [], "stale_runs": []}
        for name, seed, cfg, out in planned_runs(exp, profile, seed_list(seeds)):  # a seed twice refused
            run, identity = RunDir(out), config_identity(cfg)
            row["runs"] += 1
            if run.is_complete() and config_identity(run.load_config()) == identity:
                row["stored"] += 1
                continue
            if run.is_complete():
                row["stale"] += 1
                row["stale_runs"].append(str(out.relative_to(profile_root(profile))))
            if identity in index:
                row["copy"] += 1
            else:  # trained here; a later identical run of the plan is its copy, as in a sweep
                steps = planned_steps(cfg)
                row["train"] += 1
                row["steps"] += steps
                row["seconds"] += steps * seconds_a_step(cfg, rates or {})
                row["to_train"].append(f"{name} seed {seed}")
                index[identity] = out
        rows.append(row)
    return rows


def _rate_key(cfg: RunConfig) -> tuple:
    """What a step's cost depends on most: the method, the data set (its loader) and the encoder."""
    return cfg.method, cfg.data.name, cfg.model.encoder


def step_rates_here(profile: str = "cpu") -> dict[tuple, list[float]]:
    """Training seconds per optimiser step and crop pixel (``augment.out_size`` squared) of the profile's stored
    runs trained on this machine's kind of CPU (copies left out), by :func:`_rate_key`: what a plan's steps cost
    here. CPUs differ threefold, so only this kind's own runs say it: the same model name and vector extension
    (:func:`ftcl_core.runs.cpu_isa`; for a key without such runs, those of the same model name that did not record
    the extension, as runs before 2026-12-02). Methods differ twofold (SimCLR, BYOL), so each counts its own; a
    convolutional network's work grows with its input's pixels, so a plan at larger crops scales the rate
    (measured on an AMD EPYC: 56-px crops took 4.6-5x the 24-px steps' time, 5.4x the pixels;
    ``results/screens/2026-12-02_resolution.md``)."""
    model, isa = cpu_model(), cpu_isa()
    exact: dict[tuple, list[float]] = {}
    unrecorded: dict[tuple, list[float]] = {}
    for run in stored_runs(profile).values():
        prov = run.load_provenance()
        if "copied_from" in prov or prov.get("device", "cpu") != "cpu" or prov.get("cpu_model") != model:
            continue
        if prov.get("cpu_isa", isa) != isa:
            continue
        cfg = run.load_config()
        if planned_steps(cfg) and prov.get("train_s"):
            into = exact if "cpu_isa" in prov else unrecorded
            into.setdefault(_rate_key(cfg), []).append(float(prov["train_s"]) / planned_steps(cfg) / _pixels(cfg))
    return {**unrecorded, **exact}


def seconds_a_step(cfg: RunConfig, rates: dict[tuple, list[float]]) -> float:
    """The median of ``rates`` (:func:`step_rates_here`, per crop pixel) for ``cfg``'s key, else of every rate (a
    method not yet trained here), times ``cfg``'s crop pixels; NaN when nothing was trained here."""
    own = rates.get(_rate_key(cfg)) or [r for v in rates.values() for r in v]
    return float(np.median(own)) * _pixels(cfg) if own else math.nan


def _pixels(cfg: RunConfig) -> int:
    """The pixels of one augmented view (``augment.out_size`` squared): what a step's cost scales with."""
    return cfg.augment.out_size ** 2


def _network_key(cfg: RunConfig) -> tuple:
    """What the compiled graph depends on: the method, its networks and the input's shape (FT, the queue and the
    optimiser act outside the compiled networks)."""
    return (cfg.method, repr(cfg.model), repr(getattr(cfg, cfg.method, None)), cfg.train.batch_size,
            cfg.augment.out_size, cfg.device)


def planned_steps(cfg: RunConfig) -> int:
    """The optimiser steps a config's run takes on one process: epochs x full batches (the last partial batch is
    dropped, as the training loop does)."""
    return cfg.train.epochs * (cfg.data.n_train // cfg.train.batch_size)


def sweep_compiles(jobs: list[tuple[RunConfig, Path]]) -> set[Path]:
    """The run folders of ``jobs`` that a sweep trains compiled: on CPU, with ``train.compile=auto``, every
    unfinished run of a network whose unfinished runs together take at least
    :data:`ftcl_core.execution.COMPILE_AUTO_MIN_STEPS` steps (one cold compile, then warm ones, pay for
    themselves), where a C++ compiler is installed.  A run begun compiled resumes compiled, and one begun
    eager resumes eager, whatever is left."""
    groups: dict[tuple, list[tuple[RunConfig, Path, int]]] = {}
    chosen: set[Path] = set()
    for cfg, out in jobs:
        run = RunDir(out)
        if run.is_complete() or cfg.train.compile != "auto" or cfg.device != "cpu":
            continue
        if run.config.is_file():  # begun: keep the way it began
            if run.load_config().train.compile is True:
                chosen.add(out)
            continue
        steps = planned_steps(cfg)
        groups.setdefault(_network_key(cfg), []).append((cfg, out, steps))
    for members in groups.values():
        total = sum(steps for _, _, steps in members)
        if total >= execution.COMPILE_AUTO_MIN_STEPS and execution.compile_backend(members[0][0], "cpu", total):
            chosen |= {out for _, out, _ in members}
    return chosen


def collect(path: str | os.PathLike, profile: str, seeds: list[int], settings: list[str] | None = None) -> list[dict]:
    """The runs a chapter shows: trains the missing (setting, seed) runs asked for, then adds the other
    stored seeds of those settings (more seeds only narrow the intervals; none is trained here)."""
    seeds = seed_list(seeds)
    records = sweep(path, profile, seeds=seeds, settings=settings, progress=False)
    names = settings or list(Experiment.load(path).settings)
    more = [r for r in load_records(path, profile) if r["setting"] in names and r["seed"] not in seeds]
    order = {name: i for i, name in enumerate(names)}
    return sorted(records + more, key=lambda r: (order[r["setting"]], r["seed"]))
