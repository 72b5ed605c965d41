"""Experiments: named sets of runs (a table of the paper), profiles, the sweep, and summaries.

An experiment file (``experiments/*.yaml``) names a base config per profile, the seeds, and one
override set per setting::

    table: T1
    title: Momentum sweep (Table 1)
    base: {cpu: configs/cpu_moco_v1.yaml, gpu: configs/gpu_in100_moco_v1.yaml}
    seeds: [0, 1, 2]
    settings:
      m=0.99: {moco.momentum: 0.99}
    paper: {m=0.99: 56.2}

An optional ``common:`` mapping holds overrides that every setting shares (a calibration's budget and split).

Profiles: ``cpu`` (the embedded data at the scale of the base config; runs stored under ``results/``),
``smoke`` (the same settings on tiny data for CI, under ``runs/smoke/``), ``gpu`` (the paper's recipe on
ImageNet-100, under ``runs/gpu/``).  :func:`sweep` trains only what is missing, so an interrupted sweep
resumes where it stopped, and a complete run is loaded, never retrained.
"""

from __future__ import annotations

import dataclasses
import glob
import math
import os
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import yaml

from ftcl_core.config import EXECUTION_KEYS, ConfigError, RunConfig, config_diff, config_identity, load_config
from ftcl_core.runs import RunDir, atomic_write_bytes, cpu_model, write_json

PROFILES = ("smoke", "cpu", "gpu")
ROOT = Path(__file__).resolve().parent.parent
SMOKE_OVERRIDES = [
    "data.n_train=512", "data.n_test=256", "data.n_val=256", "augment.out_size=16", "model.dim=32", "model.bn_splits=2",
    "moco.queue_size=128", "train.epochs=2", "train.batch_size=64", "stats.sync_every=4",
    "eval.linear_epochs=5", "eval.knn_k=20",
]


@dataclass
class Experiment:
    table: str
    title: str
    base: dict[str, str]
    seeds: list[int]
    settings: dict[str, dict]
    paper: dict[str, object]  # setting -> the paper's top-1, or "collapse" (Table 1)
    path: Path
    compare: dict[str, str]  # setting -> the setting it is compared with (default: the first setting)
    claims: dict[str, str]  # setting -> "above" | "below" its reference, where the paper states no numbers
    common: dict | None = None  # overrides every setting shares (e.g. a calibration's budget and split)

    def overrides(self, setting: str, seed: int) -> dict:
        """The overrides of one run: the shared ones, the setting's, and its seed."""
        return {**(self.common or {}), **self.settings[setting], "seed": seed}

    @classmethod
    def load(cls, path: str | os.PathLike) -> Experiment:
        p = Path(path)
        if not p.is_file():
            p = ROOT / path
        if not p.is_file():
            raise ConfigError(f"experiment file {path} not found; see the experiments/ folder.")
        d = yaml.safe_load(p.read_text()) or {}
        missing = [k for k in ("table", "base", "settings") if k not in d]
        if missing:
            raise ConfigError(f"experiment file {p} lacks {missing}; see experiments/table5_ft_v1.yaml for the layout.")
        settings = d["settings"]
        if not isinstance(settings, dict) or not settings:
            raise ConfigError(f"experiment file {p}: `settings` must map at least one name to its overrides.")
        first = next(iter(settings))
        compare = d.get("compare") or {k: first for k in settings if k != first}
        paper, claims = d.get("paper") or {}, d.get("claims") or {}
        unknown = sorted({*compare, *compare.values(), *paper, *claims} - set(settings))
        if unknown:
            raise ConfigError(f"experiment file {p} names unknown setting(s) {unknown} in compare/paper/claims; "
                              f"its settings are {list(settings)}.")
        bad = {k: v for k, v in paper.items() if v != "collapse" and not isinstance(v, (int, float))}
        bad.update({k: v for k, v in claims.items() if v not in ("above", "below")})
        if bad:
            raise ConfigError(f"experiment file {p}: {bad}: a paper entry is a number or 'collapse', a claim "
                              "is 'above' or 'below'.")
        common = d.get("common") or {}
        if not isinstance(common, dict):
            raise ConfigError(f"experiment file {p}: `common` must map config keys to values, e.g. {{train.epochs: 10}}.")
        return cls(d["table"], d.get("title", d["table"]), d["base"], list(d.get("seeds", [0])),
                   settings, paper, p, compare, claims, common)

    def paper_number(self, setting: str) -> float:
        """The paper's top-1 for ``setting``; NaN where it states none (or states a collapse)."""
        v = self.paper.get(setting)
        return float(v) if isinstance(v, (int, float)) else math.nan

    def claimed_sign(self, setting: str) -> int | None:
        """+1 when the paper says ``setting`` beats its reference, -1 when it trails, None when it says neither."""
        p, ref = self.paper_number(setting), self.paper_number(self.compare.get(setting, ""))
        if not (math.isnan(p) or math.isnan(ref)):
            return 1 if p >= ref else -1
        return {"above": 1, "below": -1}.get(self.claims.get(setting, ""))


def profile_root(profile: str) -> Path:
    """Where a profile's runs live: ``results/cpu`` (committed), ``runs/smoke``, ``runs/gpu``."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}; choose one of {PROFILES}.")
    env = os.environ.get("FTCL_RUNS_ROOT")
    if env:
        return Path(env) / profile
    return ROOT / ("results" if profile == "cpu" else "runs") / profile


def resolve(base: str, overrides: list[str] | dict, profile: str) -> RunConfig:
    """The full config of a setting under a profile (smoke shrinks everything for CI).

    A setting's value may depend on the profile: ``{cpu: 8192, gpu: 131072}`` (Table 6's 2K) or
    ``{cpu: 9, gpu: 30}`` (Table 7's start epoch, scaled to each profile's run length).  The smoke profile
    takes its own entry, else the cpu one.
    """
    if isinstance(overrides, dict):
        picked = {k: _for_profile(k, v, profile) for k, v in overrides.items()}
        if profile == "smoke" and "moco.queue_size" in overrides and not _has_entry(overrides["moco.queue_size"], "smoke"):
            # the smoke data holds 512 images: scale a setting's queue as the profile scales the default (4096 -> 128)
            picked["moco.queue_size"] //= 32
        if profile == "smoke":
            # smoke trains every setting for its own 2 epochs: a 120-epoch setting runs the same code as a 30-epoch
            # one, and taking its length at face value made CI train 120 epochs (2.7 of chapter 7's 4 minutes)
            for key in ("train.epochs", "optim.milestones"):
                if key in overrides and not _has_entry(overrides[key], "smoke"):
                    picked.pop(key)
        overrides = picked
    items = overrides if isinstance(overrides, list) else [f"{k}={_yaml_scalar(v)}" for k, v in overrides.items()]
    extra = SMOKE_OVERRIDES if profile == "smoke" else []
    return load_config(_path(base), [*extra, *items])


def _has_entry(value, profile: str) -> bool:
    return isinstance(value, dict) and profile in value


def _for_profile(key: str, value, profile: str):
    """``value``, or its entry for ``profile`` when it is a mapping keyed by profile names."""
    if not (isinstance(value, dict) and value and set(value) <= set(PROFILES)):
        return value
    if profile in value:
        return value[profile]
    if profile == "smoke" and "cpu" in value:
        return value["cpu"]
    raise ConfigError(f"setting value {key}={value} has no entry for the {profile!r} profile; add `{profile}: ...` to it.")


def _path(p: str) -> Path:
    return p if Path(p).is_file() else ROOT / p


def _yaml_scalar(v) -> str:
    return yaml.safe_dump(v, default_flow_style=True).strip().removesuffix("...").strip()


def run_dir(exp: Experiment, setting: str, seed: int, profile: str) -> Path:
    safe = setting.replace("/", "_").replace(" ", "_")
    return profile_root(profile) / exp.table / safe / f"seed{seed}"


def base_for(exp: Experiment, profile: str) -> str:
    key = "gpu" if profile == "gpu" else "cpu"
    if key not in exp.base:
        raise ConfigError(f"experiment {exp.table} has no {key} base config.")
    return exp.base[key]


DATA_NAMES = {"shapes": "embedded shapes", "fashion_mnist": "Fashion-MNIST", "imagefolder": "ImageFolder",
              "cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "stl10": "STL-10"}


def data_set(exp: Experiment, profile: str) -> str:
    """The data set an experiment's runs train on under a profile (``data.name`` of its base config)."""
    return resolve(base_for(exp, profile), {}, profile).data.name


def data_label(exp: Experiment, profile: str) -> str:
    """:func:`data_set` as a reader's name for it ("embedded shapes", "Fashion-MNIST", ...)."""
    data = data_set(exp, profile)
    return DATA_NAMES.get(data, data)


def recipe_kind(base: str) -> str:
    """``calibrated`` for a CPU recipe calibrated without FT (``configs/cpu_cal_*``), ``original`` for the CPU
    profile's original recipes (``configs/cpu_*``), else ``""`` (the smoke and GPU configs)."""
    name = Path(base).name
    return "calibrated" if name.startswith("cpu_cal_") else "original" if name.startswith("cpu_") else ""


def recipe_label(exp: Experiment, profile: str) -> str:
    """Which images and which recipe a table's runs use, for a caption: a table on the profile's original recipe
    and one on a recipe calibrated without FT (``cpu_cal_*``) are not comparable row by row."""
    base = base_for(exp, profile)
    kind = {"calibrated": " (calibrated without FT)", "original": " (original recipe, not calibrated)"}.get(recipe_kind(base), "")
    return f"{data_label(exp, profile)}; recipe {base}{kind}"


def table_caption(exp: Experiment, profile: str, records: list[dict] | None = None) -> str:
    """A table's caption for the book: its name and title, the images and recipe its runs use, the units of
    :func:`table_cells`' columns and, given the table's ``records``, the settings that have no stored run yet."""
    stored = {r["setting"] for r in records or []}
    missing = [s for s in exp.settings if s not in stored] if records is not None else []
    return (f"{exp.table}: {exp.title}. {recipe_label(exp, profile)}. ours: linear top-1 % (mean ± 95 % CI over n seeds); "
            "Δ: the paired difference against the row or reference named under 'vs', in points; paper: the paper's "
            "top-1 % (ImageNet-100 unless the title names another data set)"
            + (f". Not run yet: {', '.join(missing)}" if missing else ""))


def sweep(path: str | os.PathLike, profile: str = "cpu", seeds: list[int] | None = None,
          settings: list[str] | None = None, progress: bool = True, execution: dict | None = None) -> list[dict]:
    """Train every missing (setting, seed) run of an experiment; return one record per run.

    ``execution`` sets how every run executes, never what it computes (only :data:`EXECUTION_KEYS`, e.g.
    ``{"device": "cuda"}``): the runs keep their folders and count for their settings wherever they ran.

    With ``train.compile=auto`` a sweep compiles the networks of its CPU runs when the runs still to train on
    one network add up to the steps that pay for a cold compile (:func:`sweep_compiles`): the first run
    compiles, the others find the compiler's cache warm.  Compiling changes float rounding only, not a
    run's identity; each run records how it ran."""
    from ftcl_core.training import train

    exp = Experiment.load(path)
    names = settings or list(exp.settings)
    unknown = [s for s in names if s not in exp.settings]
    if unknown:
        raise ConfigError(f"unknown setting(s) {unknown} of {exp.table}; known: {list(exp.settings)}.")
    execution = execution or {}
    if recipe := sorted(set(execution) - set(EXECUTION_KEYS)):
        raise ConfigError(f"{recipe} change what a run computes, not how it executes; a sweep may set only "
                          f"{list(EXECUTION_KEYS)}. Put recipe changes in the experiment file.")
    def copy_twin(name: str, seed: int, cfg: RunConfig, out: Path) -> None:
        if not RunDir(out).is_complete() and (twin := find_identical_run(cfg, profile)) is not None:
            copy_run(twin, out)
            if progress:
                print(f"[{exp.table}] {name} seed {seed}: same config as {twin}, copied", flush=True)

    jobs = planned_runs(exp, profile, seeds, names, execution)
    for job in jobs:  # the copies first, so that the compile choice counts only the runs left to train
        copy_twin(*job)
    compiled = sweep_compiles([(cfg, out) for _, _, cfg, out in jobs])
    records = []
    for name, seed, cfg, out in jobs:
        copy_twin(name, seed, cfg, out)  # a run this sweep trained may be the twin of a later one
        if out in compiled:
            cfg = cfg.updated({"train.compile": True})
        if progress and not RunDir(out).is_complete():
            print(f"[{exp.table}] {name} seed {seed} -> {out}" + (" (compiled)" if out in compiled else ""), flush=True)
        result = train(cfg, out, progress=progress)
        records.append({"table": exp.table, "setting": name, "seed": seed, "dir": str(out), **result})
    return records


def planned_runs(exp: Experiment, profile: str, seeds: list[int] | None = None, settings: list[str] | None = None,
                 execution: dict | None = None) -> list[tuple[str, int, RunConfig, Path]]:
    """(setting, seed, config, run folder) of every run an experiment asks for under a profile, seed-major (the
    order a sweep trains them in, so that every setting has seed 0 before any has seed 1)."""
    return [(name, seed, resolve(base_for(exp, profile), {**exp.overrides(name, seed), **(execution or {})}, profile),
             run_dir(exp, name, seed, profile))
            for seed in (seeds if seeds is not None else exp.seeds) for name in (settings or list(exp.settings))]


def calibrated_base(exp: Experiment) -> Experiment:
    """``exp`` on the calibrated recipe of its CPU base (``configs/cpu_X.yaml`` -> ``configs/cpu_cal_X.yaml``, where
    that file exists), the rerun that issue "fair baselines" asks of every table; unchanged where there is none."""
    if "cpu" not in exp.base:
        return exp
    cpu = Path(exp.base["cpu"])
    if recipe_kind(str(cpu)) != "original":
        return exp
    cal = cpu.with_name("cpu_cal_" + cpu.name.removeprefix("cpu_"))
    if not Path(_path(str(cal))).is_file():
        return exp
    return dataclasses.replace(exp, base={**exp.base, "cpu": str(cal)})


def switch_to_calibrated(path: str | os.PathLike, profile: str = "cpu", record: str | os.PathLike | None = None) -> list[Path]:
    """Prepare an experiment file's rerun on its calibrated recipe (:func:`calibrated_base`, issue "fair
    baselines"), the step before :func:`sweep`: move every complete run of the file's settings that holds the
    original recipe's config into the dated record ``record`` (:data:`RECIPE_RECORD`'s folder; the same folder
    under it as under the profile's root), then point the file's ``cpu`` base at the calibrated config. Returns the
    moved folders. Nothing is deleted or overwritten, and everything is checked before anything moves: a
    destination that exists, an unfinished run of the original recipe (its checkpoint would stop the sweep), a
    run that holds neither recipe's config, or a base line that cannot be rewritten stops it with an error that
    names them. A second call on a switched file moves nothing, so an interrupted rerun resumes with the same
    command."""
    import shutil

    if profile != "cpu":
        raise ConfigError(f"only the cpu profile's tables have calibrated recipes (configs/cpu_cal_*.yaml), not {profile!r}.")
    exp = Experiment.load(path)
    cal = calibrated_base(exp)
    if cal is exp and recipe_kind(base_for(exp, profile)) != "calibrated":
        raise ConfigError(f"{exp.path}: its cpu base {exp.base.get('cpu')} has no calibrated recipe "
                          "(configs/cpu_cal_<name>.yaml); calibrate it first (experiments/calibration/).")
    text = exp.path.read_text()
    old_line, new_line = f"cpu: {exp.base['cpu']}", f"cpu: {cal.base['cpu']}"
    if cal is not exp and text.count(old_line) != 1:
        raise ConfigError(f"{exp.path}: expected one '{old_line}' in its base line to switch to '{new_line}'; "
                          "edit it by hand.")
    root, record = profile_root(profile), Path(record or RECIPE_RECORD.parent)
    moves, unfinished, foreign = [], [], []
    for name in cal.settings:
        for folder in sorted(run_dir(cal, name, 0, profile).parent.glob("seed*")):
            if not re.fullmatch(r"seed\d+", folder.name) or not (folder / "config.yaml").is_file():
                continue
            run, seed = RunDir(folder), int(folder.name.removeprefix("seed"))
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
    seconds here. ``seeds``/``calibrated`` plan a rerun at other seeds or on :func:`calibrated_base`. Nothing is
    trained, copied or moved here."""
    index: dict[tuple, Path] = {}
    for config in sorted(profile_root(profile).glob("*/*/seed*/config.yaml")):
        run = RunDir(config.parent)
        if run.is_complete():
            index.setdefault(config_identity(run.load_config()), run.path)
    rows = []
    for path in paths:
        exp = Experiment.load(path)
        exp = calibrated_base(exp) if calibrated else exp
        row = {"file": str(path), "table": exp.table, "base": base_for(exp, profile), "runs": 0, "stored": 0,
               "stale": 0, "copy": 0, "train": 0, "steps": 0, "seconds": 0.0, "to_train": [], "stale_runs": []}
        for name, seed, cfg, out in planned_runs(exp, profile, seeds):
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
    """Training seconds per optimiser step of the profile's stored runs trained on this machine's CPU model (copies
    left out), by :func:`_rate_key`: what a plan's steps cost here. CPUs differ threefold, so only this machine's
    own runs say it, and methods differ twofold (SimCLR, BYOL), so each counts its own."""
    here = cpu_model()
    rates: dict[tuple, list[float]] = {}
    for run in stored_runs(profile).values():
        prov = run.load_provenance()
        if "copied_from" in prov or prov.get("device", "cpu") != "cpu" or prov.get("cpu_model") != here:
            continue
        cfg = run.load_config()
        if planned_steps(cfg) and prov.get("train_s"):
            rates.setdefault(_rate_key(cfg), []).append(float(prov["train_s"]) / planned_steps(cfg))
    return rates


def seconds_a_step(cfg: RunConfig, rates: dict[tuple, list[float]]) -> float:
    """The median of ``rates`` (:func:`step_rates_here`) for ``cfg``'s key, else of every rate (a method not yet
    trained here), else NaN (nothing trained here)."""
    own = rates.get(_rate_key(cfg)) or [r for v in rates.values() for r in v]
    return float(np.median(own)) if own else math.nan


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
    from ftcl_core.execution import COMPILE_AUTO_MIN_STEPS, compile_backend

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
        if total >= COMPILE_AUTO_MIN_STEPS and compile_backend(members[0][0], "cpu", total):
            chosen |= {out for _, out, _ in members}
    return chosen


def collect(path: str | os.PathLike, profile: str, seeds: list[int], settings: list[str] | None = None) -> list[dict]:
    """The runs a chapter shows: trains the missing (setting, seed) runs asked for, then adds the other
    stored seeds of those settings (more seeds only narrow the intervals; none is trained here)."""
    records = sweep(path, profile, seeds=seeds, settings=settings, progress=False)
    names = settings or list(Experiment.load(path).settings)
    more = [r for r in load_records(path, profile) if r["setting"] in names and r["seed"] not in seeds]
    order = {name: i for i, name in enumerate(names)}
    return sorted(records + more, key=lambda r: (order[r["setting"]], r["seed"]))


def trained_on(run: RunDir) -> str:
    """The kind of device a stored run trained on, without an index ("cpu", "cuda"): its provenance, else its
    config (runs stored before provenance named the device)."""
    return str(run.load_provenance().get("device") or run.load_config().device).split(":")[0]


def find_identical_run(cfg: RunConfig, profile: str) -> Path | None:
    """A complete run of the profile whose config equals ``cfg`` (the baselines that several tables share).

    One trained on the kind of device ``cfg`` names comes first: the same recipe on another device differs in
    float rounding, and a table pairs a copied baseline with runs trained where ``cfg`` runs."""
    found = []
    for config in sorted(profile_root(profile).glob("*/*/seed*/config.yaml")):
        run = RunDir(config.parent)
        if run.is_complete() and not config_diff(run.load_config(), cfg):
            found.append((trained_on(run) != cfg.device.split(":")[0], str(run.path), run.path))
    return min(found)[2] if found else None


def copy_run(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy a complete run's stored files (not its checkpoint) to ``dst``; provenance records the source.

    The evaluation is written last, so an interrupted copy is never taken for a complete run."""
    src_run, dst_run = RunDir(src), RunDir(dst)
    dst_run.path.mkdir(parents=True, exist_ok=True)
    for name in ("config.yaml", "metrics.npz", "grad_norms.npz", "histograms.npz"):
        if (src_run.path / name).is_file():
            atomic_write_bytes(dst_run.path / name, (src_run.path / name).read_bytes())
    prov = src_run.load_provenance()
    rel = os.path.relpath(src_run.path, dst_run.path)
    write_json(dst_run.provenance, {**prov, "copied_from": rel})
    write_json(dst_run.eval, src_run.load_eval())


def stored_runs(profile: str) -> dict[str, RunDir]:
    """Every complete run of a profile, keyed by its path under the profile's root (``T1/m=0.9/seed0``)."""
    root = profile_root(profile)
    if not root.is_dir():
        return {}
    return {str(p.parent.relative_to(root)): RunDir(p.parent) for p in sorted(root.glob("**/eval.json"))}


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


def load_records(path: str | os.PathLike, profile: str = "cpu") -> list[dict]:
    """Records of the complete runs of an experiment (missing runs are skipped, not trained)."""
    exp = Experiment.load(path)
    out = []
    for name in exp.settings:
        for seed in exp.seeds:
            d = RunDir(run_dir(exp, name, seed, profile))
            if d.is_complete():
                out.append({"table": exp.table, "setting": name, "seed": seed, "dir": str(d.path), **d.load_eval()})
    return out


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
    out = []
    for name in exp.settings:
        folder = run_dir(exp, name, 0, "cpu").parent.relative_to(profile_root("cpu"))
        seeds = [d for d in root.glob(f"{glob.escape(str(folder))}/seed*") if re.fullmatch(r"seed\d+", d.name)]
        for d in sorted(seeds, key=lambda p: int(p.name.removeprefix("seed"))):
            run = RunDir(d)
            if run.is_complete():
                seed = int(d.name.removeprefix("seed"))
                out.append({"table": exp.table, "setting": name, "seed": seed, "dir": str(d), **run.load_eval()})
    return out


# t quantiles (two-sided 95 %) for small samples; beyond 30 the normal value is close enough.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        15: 2.131, 20: 2.086, 30: 2.042}


def mean_ci95(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % t-interval (nan for a single value)."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    mean = sum(values) / n
    if n == 1:
        return mean, math.nan
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    df = n - 1
    t = _T95.get(df) or _T95[max(k for k in _T95 if k <= df)]
    return mean, t * sd / math.sqrt(n)


def summarize(records: list[dict], key: str = "linear_top1") -> dict[str, dict]:
    """Per setting: mean, ci95, n_seeds of ``key`` and of the random-init baseline."""
    out: dict[str, dict] = {}
    for setting in dict.fromkeys(r["setting"] for r in records):
        vals = [r[key] for r in records if r["setting"] == setting]
        rand = [r["random_init_linear_top1"] for r in records if r["setting"] == setting and "random_init_linear_top1" in r]
        pixels = [r["raw_pixels_linear_top1"] for r in records if r["setting"] == setting and "raw_pixels_linear_top1" in r]
        m, ci = mean_ci95(vals)
        rm, rci = mean_ci95(rand)
        out[setting] = {"mean": m, "ci95": ci, "n_seeds": len(vals), "random_init_mean": rm, "random_init_ci95": rci,
                        "raw_pixels_mean": mean_ci95(pixels)[0], "values": vals}
    return out


def paired_difference(records: list[dict], setting: str, baseline: str, key: str = "linear_top1") -> tuple[float, float, int]:
    """Mean and 95 % CI of ``setting - baseline`` over the seeds both have (paired by seed)."""
    a = {r["seed"]: r[key] for r in records if r["setting"] == setting}
    b = {r["seed"]: r[key] for r in records if r["setting"] == baseline}
    diffs = [a[s] - b[s] for s in sorted(set(a) & set(b))]
    m, ci = mean_ci95(diffs)
    return m, ci, len(diffs)


MIN_SEEDS_FOR_A_CLAIM = 3  # the project's standard: a claim needs >= 3 seeds and a paired 95 % interval


def verdict(diff_mean: float, diff_ci: float, paper_sign: int, n_seeds: int) -> str:
    """``replicated`` when the difference has the paper's sign and its CI excludes zero, ``not replicated``
    when the CI excludes zero with the opposite sign, else ``inconclusive`` -- also whenever the difference
    rests on fewer than :data:`MIN_SEEDS_FOR_A_CLAIM` seeds (one or two decide nothing, however narrow the interval)."""
    if n_seeds < MIN_SEEDS_FOR_A_CLAIM:
        return "inconclusive"
    if math.isnan(diff_ci) or abs(diff_mean) <= diff_ci:
        return "inconclusive"
    return "replicated" if (diff_mean > 0) == (paper_sign > 0) else "not replicated"


TABLE_HEADER = ["setting", "ours", "±95%", "n", "Δ", "vs", "paper", "verdict"]


def table_cells(exp: Experiment, records: list[dict]) -> tuple[str, list[str], list[list[str]]]:
    """Title, header and cells of an experiment's table: the rows of :func:`table_rows`, i.e. mean, 95 % CI,
    seeds, paired difference against each setting's reference, the paper's number and the verdict."""

    def num(v: float, fmt: str) -> str:
        return "" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)

    rows = []
    for r in table_rows(exp, records):
        delta = num(r["diff_mean"], "+.1f") + (f" ± {num(r['diff_ci95'], '.1f')}" if num(r["diff_ci95"], ".1f") else "")
        rows.append([r["setting"], f"{r['mean']:.1f}", num(r["ci95"], ".1f"), str(r["n_seeds"]), delta, r["reference"],
                     "" if r["paper"] is None else str(r["paper"]), r["verdict"]])
    return f"{exp.table}: {exp.title}", TABLE_HEADER, rows


def format_table(exp: Experiment, records: list[dict]) -> str:
    """:func:`table_cells` as plain text (for a terminal; the book shows them as HTML tables)."""
    title, header, rows = table_cells(exp, records)
    widths = [22, 6, 5, 2, 15, 12, 8]

    def line(cells: list[str]) -> str:
        return " ".join(f"{c[:w] if i == 5 else c:>{w}s}" for i, (c, w) in enumerate(zip(cells, widths))) + f"  {cells[-1]}"

    return "\n".join([title, line(header), *(line(r) for r in rows)])


def table_order(table: str) -> tuple[int, str]:
    """Sort key: the paper's tables T1..T7 first, then the supplement's (S-F, S-G)."""
    return (0 if table.startswith("T") else 1, table)


SUMMARY_COLUMNS = ("table", "data", "setting", "mean", "ci95", "n_seeds", "paper", "verdict", "reference", "diff_mean",
                   "diff_ci95", "random_init_mean", "claim", "base")


def table_rows(exp: Experiment, records: list[dict]) -> list[dict]:
    """One summary row per setting of ``exp`` that has runs, with its verdict against the paper.

    A setting with a ``compare`` reference carries the paper's claim that it beats (or trails) that
    reference, read off the paper's two numbers (or the file's ``claims`` where the paper gives none):
    ``replicated`` when the paired difference over seeds has the paper's sign and its 95 % CI excludes
    zero.  Table 1 carries collapse claims instead: ``collapse`` claims readout below the random-init
    encoder, a number claims readout above it.  Rows that claim nothing are ``baseline``.
    """
    summary = summarize(records)
    rows = []
    for setting, v in summary.items():
        row = {"table": exp.table, "data": "", "setting": setting, "mean": v["mean"], "ci95": v["ci95"], "n_seeds": v["n_seeds"],
               "paper": exp.paper.get(setting), "verdict": "baseline", "reference": "", "diff_mean": math.nan,
               "diff_ci95": math.nan, "random_init_mean": v["random_init_mean"], "claim": ""}
        if exp.table.split("-")[0] == "T1":  # T1, or T1 on another data set (T1-fmnist)
            if setting in exp.paper:
                diffs = [r["linear_top1"] - r["random_init_linear_top1"] for r in records if r["setting"] == setting]
                d, dci = mean_ci95(diffs)
                collapse = exp.paper[setting] == "collapse"
                row.update(reference="random init", diff_mean=d, diff_ci95=dci,
                           verdict=verdict(d, dci, -1 if collapse else 1, len(diffs)),
                           claim="collapses (below random init)" if collapse else "learns (above random init)")
        elif setting in exp.compare and exp.compare[setting] in summary:
            ref, sign = exp.compare[setting], exp.claimed_sign(setting)
            d, dci, n = paired_difference(records, setting, ref)
            row.update(reference=ref, diff_mean=d, diff_ci95=dci)
            if sign is not None:
                row.update(verdict=verdict(d, dci, sign, n), claim=f"{'above' if sign > 0 else 'below'} {ref}")
        rows.append(row)
    return rows


DATA_SUFFIXES = {"fashion_mnist": "-fmnist"}  # a table's name on another data set: T7 -> T7-fmnist


def data_set_verdicts(rows: list[dict]) -> list[dict]:
    """Each claim tested on more than one data set (a table and its ``-fmnist`` twin, same setting), with the
    verdict per data set and where the claim holds: on every data set, on some (named), on ``none`` (contradicted
    on every data set), or ``undecided`` (no data set replicates it and not every one contradicts it, or one data
    set's runs are on the original recipe and another's on a calibrated one: ``recipes``, per data set).
    ``rows``: summary rows (:func:`write_summary`'s CSV)."""
    claims: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        if r["verdict"] == "baseline":
            continue
        table = r["table"]
        for suffix in DATA_SUFFIXES.values():
            table = table.removesuffix(suffix)
        claims.setdefault((table, r["setting"]), {})[r["data"]] = r
    out = []
    for (table, setting), per in claims.items():
        if len(per) < 2:
            continue
        decided = {d: r["verdict"] for d, r in per.items() if int(r["n_seeds"]) >= MIN_SEEDS_FOR_A_CLAIM}
        holds = sorted(d for d, v in decided.items() if v == "replicated")
        recipes = {d: recipe_kind(r.get("base", "")) for d, r in per.items()}
        if len(set(recipes.values())) > 1:  # one data set still on the original recipe: not yet comparable
            where = "undecided (recipes differ)"
        elif len(holds) == len(per):
            where = "every data set"
        elif holds:
            where = ", ".join(holds)
        elif len(decided) == len(per) and all(v == "not replicated" for v in decided.values()):
            where = "none"
        else:  # no data set replicates it, and one has < 3 seeds or an interval that includes zero
            where = "undecided"
        out.append({"table": table, "setting": setting, "claim": next(iter(per.values()))["claim"],
                    "per_data": {d: (r["verdict"], int(r["n_seeds"])) for d, r in sorted(per.items())},
                    "recipes": dict(sorted(recipes.items())), "holds_on": where})
    return out


RECIPE_RECORD = ROOT / "results" / "cpu-2026-11" / "summary.csv"  # the tables on the profile's original recipes


def recipe_sensitivity(before: list[dict], after: list[dict]) -> list[dict]:
    """Each claim whose table now runs on another recipe (another ``base`` config) than in the dated record
    ``before`` (e.g. :data:`RECIPE_RECORD`): both verdicts, both paired differences and seeds, and whether the
    verdict changed. ``before``/``after``: summary rows (:func:`write_summary`'s CSV)."""
    old = {(r["table"], r["data"], r["setting"]): r for r in before if r["verdict"] != "baseline"}
    out = []
    for r in after:
        o = old.get((r["table"], r["data"], r["setting"]))
        if o is None or r["verdict"] == "baseline" or o.get("base") == r.get("base"):
            continue
        # the record's verdicts under today's rule (it was written when two seeds could decide a claim)
        was = o["verdict"] if int(o["n_seeds"]) >= MIN_SEEDS_FOR_A_CLAIM else "inconclusive"
        out.append({"table": r["table"], "data": r["data"], "setting": r["setting"], "claim": r["claim"],
                    "base_before": o.get("base", ""), "base_after": r["base"],
                    "before": (was, o["diff_mean"], o["diff_ci95"], int(o["n_seeds"])),
                    "after": (r["verdict"], r["diff_mean"], r["diff_ci95"], int(r["n_seeds"])),
                    "changed": was != r["verdict"]})
    return out


BASELINE_AIMS = {"gain": 25.0, "spread": 5.0}  # issue "fair baselines": >= random init + 25 points, 95 % CI <= 5


def baseline_aims(rows: list[dict]) -> list[dict]:
    """The issue's aims for each method's baseline, judged at the tables' budget (Table 5's ``<method> baseline``
    rows of ``rows``, :func:`write_summary`'s CSV, on a calibrated recipe): linear readout at least
    ``BASELINE_AIMS["gain"]`` points above the random-init encoder, and a run-to-run spread (95 % CI over seeds)
    of at most ``BASELINE_AIMS["spread"]`` points.  Calibration chose the recipes at a shorter, shared budget
    (:mod:`ftcl_core.calibration`); these rows say where the tables' longer runs stand.  On data where the
    random-init encoder is not the bar (Fashion-MNIST: the raw-pixel probe, which the summary does not hold)
    ``gain_met`` is None.  ``spread_met`` is None below :data:`MIN_SEEDS_FOR_A_CLAIM` seeds."""
    out = []
    for r in rows:
        if not (r["table"].split("-")[0] == "T5" and r["verdict"] == "baseline" and recipe_kind(r.get("base", ""))
                == "calibrated"):
            continue
        mean, ci, n = float(r["mean"]), float(r["ci95"] or "nan"), int(r["n_seeds"])
        rand = float(r.get("random_init_mean") or "nan")  # a run stored before the random-init readout has none
        gain = mean - rand
        out.append({"table": r["table"], "data": r["data"], "setting": r["setting"], "base": r["base"], "mean": mean,
                    "ci95": ci, "n_seeds": n, "random_init": rand, "gain": gain,
                    "gain_met": gain >= BASELINE_AIMS["gain"] if r["data"] == "shapes" and not math.isnan(gain) else None,
                    "spread_met": ci <= BASELINE_AIMS["spread"] if n >= MIN_SEEDS_FOR_A_CLAIM else None})
    return out


def v2_against_v1(aims: list[dict]) -> dict[str, tuple[float, float]]:
    """Per data set with both, the mean linear readout of MoCo v1's and v2's baselines (:func:`baseline_aims`): the
    issue's aim is v2 >= v1, the order the literature reports."""
    by = {(a["data"], a["setting"]): a["mean"] for a in aims}
    return {d: (by[d, "v1 baseline"], by[d, "v2 baseline"]) for d, _ in by if (d, "v1 baseline") in by
            and (d, "v2 baseline") in by}


def fixed(x: float, digits: int = 1, signed: bool = False) -> str:
    """``x`` with ``digits`` decimals, rounded half away from zero from its 6-decimal form, the precision of
    ``summary.csv``: a number formatted from runs in memory (a chapter) and the same number read back from the CSV
    (chapter 9, the README) print alike, where plain float formatting could round a tie such as 0.35 both ways."""
    rounded = Decimal(f"{x:.6f}").quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{rounded:{'+' if signed else ''}f}"


def plus_minus(mean: float, ci: float, digits: int = 1, signed: bool = False) -> str:
    """``mean ± ci`` (just the mean when there is no interval, e.g. a single seed); ``signed``: ``+`` on gains."""
    return fixed(mean, digits, signed) + ("" if math.isnan(ci) else f" ± {fixed(ci, digits)}")


def findings(exp: Experiment, records: list[dict]) -> list[str]:
    """One generated Markdown sentence per setting of an experiment's stored runs: its readout, seeds, and where it
    makes a claim, the paired difference against its reference and the verdict (so prose never goes stale)."""
    out = []
    for r in table_rows(exp, records):
        n = r["n_seeds"]
        text = f"**{r['setting']}**: {plus_minus(r['mean'], r['ci95'])} % ({n} seed{'s' if n != 1 else ''})"
        if r["reference"] and not math.isnan(r["diff_mean"]):
            text += f", {plus_minus(r['diff_mean'], r['diff_ci95'])} points against {r['reference']}"
            if r["verdict"] != "baseline":
                text += f": *{r['verdict']}*"
        out.append(text)
    return out


def ft_kind(exp: Experiment, setting: str, profile: str) -> str:
    """What a setting's resolved config (base, shared and own overrides) does to the pairs: ``none`` without FT,
    ``late start`` for FT switched on after the first epoch (Table 7), else ``harder`` when it moves the query away
    from its key or a negative towards the query (positive extrapolation, eq. 3; negative extrapolation, Supp G.1;
    hard negatives, Supp G.2), ``negatives mixed`` for negative interpolation alone (Sec 4.2, re-normalised or
    not), ``other`` for the rest (e.g. Table 4's positive interpolation)."""
    ft = resolve(base_for(exp, profile), exp.overrides(setting, 0), profile).ft
    if not (ft.pos or ft.neg or ft.hard):
        return "none"
    if ft.start_epoch > 0:
        return "late start"
    if (ft.pos and ft.pos_mode == "extrapolate") or (ft.neg and ft.neg_mode == "extrapolate") or ft.hard:
        return "harder"
    return "negatives mixed" if ft.neg and not ft.pos else "other"


def pattern_paragraph(tables: list[tuple[Experiment, list[dict]]], profile: str) -> str:
    """Chapter 6's reading of its tables, generated so that it tracks the reruns: which tables decide every claim
    (:data:`MIN_SEEDS_FOR_A_CLAIM` seeds) and which do not yet, then per data set the paired differences of the
    transformations that make a pair harder from the first step (:func:`ft_kind`) and of negative interpolation
    alone."""
    decided, pending = [], []
    by_data: dict[str, dict[str, list[dict]]] = {}
    for exp, records in tables:
        rows = [r for r in table_rows(exp, records) if r["verdict"] != "baseline"]
        if not rows:
            continue
        label = f"{exp.table} ({data_label(exp, profile)}, {Path(base_for(exp, profile)).stem})"
        (decided if min(r["n_seeds"] for r in rows) >= MIN_SEEDS_FOR_A_CLAIM else pending).append(label)
        for r in rows:
            if not math.isnan(r["diff_mean"]):
                kind = ft_kind(exp, r["setting"], profile)
                by_data.setdefault(data_label(exp, profile), {}).setdefault(kind, []).append({**r, "label": label})
    text = (f"Tables whose every claim has {MIN_SEEDS_FOR_A_CLAIM} seeds or more, so that their verdicts decide: "
            f"{', '.join(decided) or 'none yet'}. Short of that: {', '.join(pending) or 'none'}.")
    for data, kinds in by_data.items():
        if harder := kinds.get("harder"):
            verdicts = {v: sum(r["verdict"] == v for r in harder) for v in ("replicated", "not replicated", "inconclusive")}
            text += (f" {data}: the {len(harder)} rows that make a pair harder from the first step differ from their "
                     "reference by "
                     f"{min(r['diff_mean'] for r in harder):+.1f} to {max(r['diff_mean'] for r in harder):+.1f} points "
                     f"(replicated: {verdicts['replicated']}, not replicated: {verdicts['not replicated']}, "
                     f"inconclusive: {verdicts['inconclusive']}).")
        if mixed := kinds.get("negatives mixed"):
            text += f" {data}, negative interpolation alone: " + "; ".join(
                f"{r['label']} {r['setting']} {plus_minus(r['diff_mean'], r['diff_ci95'], signed=True)} points against "
                f"{r['reference']} ({r['verdict']}, {r['n_seeds']} seed{'s' if r['n_seeds'] != 1 else ''})"
                for r in mixed) + "."
    return text


def start_epoch_paragraph(exp: Experiment, records: list[dict]) -> str:
    """Table 7's runs in words: each FT start against training without FT (paired by seed, with its verdict),
    how many starts cost readout, and whether any beats "never" as every start does in the paper. Generated, so
    a rerun or another data set updates it."""
    starts = [r for r in table_rows(exp, records) if r["reference"]]
    if not starts:
        return "No stored runs."
    worse = [r for r in starts if r["verdict"] == "not replicated"]
    better = [r for r in starts if r["verdict"] == "replicated"]
    text = "; ".join(f"{r['setting']}: {plus_minus(r['mean'], r['ci95'])} % ({plus_minus(r['diff_mean'], r['diff_ci95'])} "
                     f"points against {r['reference']}, {r['verdict']}, {r['n_seeds']} seeds)" for r in starts)
    monotone = all(a["diff_mean"] <= b["diff_mean"] for a, b in zip(starts, starts[1:]))
    said = (f"{len(worse)} of {len(starts)} starts are significantly below training without FT"
            + (", and the later FT starts, the less it costs" if monotone and worse else "") + ". ")
    if not better:
        said += ("No start beats training without FT, so the paper's Table 7 (an early start best, every start above "
                 "'never') is not reproduced here.")
    else:
        said += (f"{', '.join(r['setting'] for r in better)} beat{'s' if len(better) == 1 else ''} training without FT, "
                 "as every start does in the paper's Table 7" + ("; FT from the start does not." if starts[0] not in better
                                                                 else "."))
    return f"{text}. {said}"


def momentum_paragraph(exp: Experiment, records: list[dict]) -> str:
    """Table 1's runs in words (eq. 2's momentum sweep): where readout peaks against the random-init encoder, which
    of the momenta the paper says learn do so (by verdict), whether its collapse at small momenta (readout below
    the random-init encoder) is reproduced, whether readout steps up where the paper's collapse ends (each learning
    momentum against the largest collapsing one, paired by seed), and on real images which momenta clear the raw-pixel
    probe (paired 95 % interval). Generated, so a rerun or another data set updates it."""
    rows = {r["setting"]: r for r in table_rows(exp, records)}
    if not rows:
        return "No stored runs."

    def named(settings: list[str]) -> str:
        return ", ".join(s.removeprefix("m=") for s in settings) or "none"

    def why_undecided(settings: list[str]) -> str:
        few = {s for s in settings if rows[s]["n_seeds"] < MIN_SEEDS_FOR_A_CLAIM}
        return " and ".join(filter(None, [few and f"fewer than {MIN_SEEDS_FOR_A_CLAIM} seeds at {named(sorted(few))}",
                                          len(few) < len(settings) and "an interval that includes zero"]))

    peak = max(rows, key=lambda s: rows[s]["mean"])
    rand = float(np.mean([r["random_init_mean"] for r in rows.values()]))
    said_learn = [s for s, r in rows.items() if r["claim"].startswith("learns")]
    said_collapse = [s for s, r in rows.items() if r["claim"].startswith("collapses")]
    by = {v: [s for s in said_learn if rows[s]["verdict"] == v] for v in ("replicated", "inconclusive", "not replicated")}
    n_seeds = sorted({r["n_seeds"] for r in rows.values()})
    text = [f"Seeds per momentum: {' to '.join(map(str, n_seeds[::max(1, len(n_seeds) - 1)]))}. "
            f"Readout peaks at m = {peak.removeprefix('m=')} ({plus_minus(rows[peak]['mean'], rows[peak]['ci95'])} %, "
            f"against {rand:.1f} % for the random-init encoder)"
            + (f"; a frozen key encoder (m = 1) reads out {plus_minus(rows['m=1.0']['mean'], rows['m=1.0']['ci95'])} %"
               if "m=1.0" in rows else "") + "."]
    text.append(f"Of the momenta the paper says learn, these read out above the random-init encoder (replicated): "
                f"{named(by['replicated'])}; undecided: {named(by['inconclusive'])}"
                + (f" ({why_undecided(by['inconclusive'])})" if by["inconclusive"] else "")
                + f"; below it: {named(by['not replicated'])}.")
    if said_collapse:
        parts = [f"m = {s.removeprefix('m=')}: {plus_minus(rows[s]['mean'], rows[s]['ci95'])} %, "
                 f"{plus_minus(rows[s]['diff_mean'], rows[s]['diff_ci95'], signed=True)}"
                 f" points against random init, {rows[s]['verdict']}" for s in said_collapse]
        at = {v: [s for s in said_collapse if rows[s]["verdict"] == v] for v in ("replicated", "not replicated", "inconclusive")}
        text.append("Where the paper reports a collapse (readout below the random-init encoder): " + "; ".join(parts) + ". "
                    + " ".join(filter(None, [
                        at["replicated"] and f"The collapse is reproduced at {named(at['replicated'])}.",
                        at["not replicated"] and f"It is not reproduced at {named(at['not replicated'])}: readout stays "
                                                 "above the random-init encoder, so small momenta stall learning there "
                                                 "rather than destroy the features.",
                        at["inconclusive"] and f"Undecided at {named(at['inconclusive'])} "
                                               f"({why_undecided(at['inconclusive'])})."])))
    def sides(gaps_of) -> str:  # the tables' rule (verdict) on paired gaps, with "above" as the claim
        side: dict[str, list[str]] = {"above it": [], "undecided": [], "below it": []}
        where = {"replicated": "above it", "inconclusive": "undecided", "not replicated": "below it"}
        for s in gaps_of:
            d, ci = mean_ci95(gaps_of[s])
            side[where[verdict(d, ci, 1, len(gaps_of[s]))]].append(s)
        return "; ".join(f"{k}: {named(v)}" for k, v in side.items())

    if said_collapse and said_learn:  # the paper's boundary: readout steps up between its last collapse and first learner
        def momentum(s: str) -> float:
            return float(s.removeprefix("m="))

        edge, first = max(said_collapse, key=momentum), min(said_learn, key=momentum)
        top1 = {(r["setting"], r["seed"]): r["linear_top1"] for r in records}
        gaps = {s: [top1[s, seed] - v for (t, seed), v in top1.items() if t == edge and (s, seed) in top1]
                for s in sorted(said_learn, key=momentum)}
        text.append(f"Against m = {named([edge])}, the largest momentum the paper says collapses, paired by "
                    f"seed: {sides(gaps)}.")
        d, ci = mean_ci95(gaps[first])
        step = verdict(d, ci, 1, len(gaps[first]))
        if len(gaps[first]) >= MIN_SEEDS_FOR_A_CLAIM and step != "replicated":
            text.append(f"The step from collapse to learning that the paper reports above m = {named([edge])} "
                        f"is not seen at m = {named([first])} here ({plus_minus(d, ci, signed=True)} points, "
                        f"{len(gaps[first])} seeds, "
                        + ("an interval that holds zero)." if step == "inconclusive" else "below it)."))
    pixels = [r for r in records if "raw_pixels_linear_top1" in r]
    if pixels:  # real images: the probe on the raw pixels is the bar an encoder must clear (paired by run)
        probe = float(np.mean([r["raw_pixels_linear_top1"] for r in pixels]))
        text.append(f"Against the linear probe on the raw pixels ({probe:.1f} %), paired by run: " + sides(
            {s: [r["linear_top1"] - r["raw_pixels_linear_top1"] for r in pixels if r["setting"] == s] for s in rows}) + ".")
    return " ".join(text)


def score_ends_paragraph(metrics: dict[str, dict], seed: int, window: int = 100) -> str:
    """Where Supp A's statistics end in each momentum's run, in words (one seed; means over the last ``window``
    steps of the raw cosines): which momentum ends with the highest and which with the lowest Mean(neg) (the paper
    reads collapse off a Mean(neg) that stays high, Figs 3 and 5), and Mean(pos) of a frozen key encoder (m = 1)
    against the other momenta. ``metrics`` maps a setting ("m=0.9") to its run's metrics. Generated, so that the
    reading under the figures follows the stored runs."""
    if not metrics:
        return "No stored runs."
    ends = {s: {k: float(np.mean(np.asarray(m[k])[-window:])) for k in ("pos_mean", "neg_mean")} for s, m in metrics.items()}
    hi = max(ends, key=lambda s: ends[s]["neg_mean"])
    lo = min(ends, key=lambda s: ends[s]["neg_mean"])
    text = (f"Over the last {window} steps of seed {seed}, Mean(neg) ends highest at m = {hi.removeprefix('m=')} "
            f"({ends[hi]['neg_mean']:.2f}) and lowest at m = {lo.removeprefix('m=')} ({ends[lo]['neg_mean']:.2f}).")
    others = [e["pos_mean"] for s, e in ends.items() if s != "m=1.0"]
    if "m=1.0" in ends and others:
        frozen = ends["m=1.0"]["pos_mean"]
        text += (f" With a frozen key encoder (m = 1) Mean(pos) ends at {frozen:.2f}, against {min(others):.2f} to "
                 f"{max(others):.2f} at the other momenta"
                 + ("; the key encoder never learns to agree with the query encoder." if frozen < min(others) else "."))
    return text


def summary_rows(profile: str = "cpu", folder: str | os.PathLike | None = None) -> list[dict[str, str]]:
    """Every experiment file's stored runs summarised, one row per table setting, as the cells of
    :func:`write_summary`'s CSV (text; floats at 6 decimals, blank for none): a chapter reads these without
    rewriting the file that chapter 9 writes."""
    folder = Path(folder) if folder else ROOT / "experiments"
    rows = []
    for path in sorted(folder.glob("*.yaml")):
        exp = Experiment.load(path)
        data = data_set(exp, profile)  # shapes | fashion_mnist | ...
        base = base_for(exp, profile)  # the recipe the table runs on (recipe_sensitivity compares two summaries by it)
        rows += [{**r, "data": data, "base": base} for r in table_rows(exp, load_records(path, profile))]
    rows.sort(key=lambda r: table_order(r["table"]))  # T1 ... T7, then the supplement (stable within a table)
    return [{k: (f"{v:.6f}" if isinstance(v, float) and not math.isnan(v) else ("" if v is None or
             (isinstance(v, float) and math.isnan(v)) else str(v))) for k, v in r.items()} for r in rows]


def write_summary(profile: str = "cpu", folder: str | os.PathLike | None = None,
                  out: str | os.PathLike | None = None) -> Path:
    """Summarise every experiment file's stored runs into one CSV (``results/summary.csv`` for cpu)."""
    import csv
    import io

    default = ROOT / "results" / "summary.csv" if profile == "cpu" else profile_root(profile) / "summary.csv"
    target = Path(out) if out else default
    target.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(summary_rows(profile, folder))
    from ftcl_core.runs import atomic_write_bytes

    atomic_write_bytes(target, buf.getvalue().encode())
    return target


def _pm_cells(mean: str, ci: str, signed: bool = False) -> str:
    """:func:`plus_minus` of two summary.csv cells (text; blank when there is no number)."""
    return "" if not mean else plus_minus(float(mean), float(ci) if ci else math.nan, signed=signed)


def summary_markdown(path: str | os.PathLike, folder: str | os.PathLike | None = None,
                     heading: str = "### {table}") -> str:
    """``summary.csv`` as one Markdown table per paper table, each with the commands that regenerate it.

    Columns: ours (linear top-1, mean ± 95 % CI over seeds), seeds, the paper's number, the claim, the
    paired difference against the reference, and the verdict (see :func:`verdict`).
    """
    import csv

    folder = Path(folder) if folder else ROOT / "experiments"
    files: dict[tuple[str, str], list[str]] = {}
    for f in sorted(folder.glob("*.yaml")):
        exp = Experiment.load(f)
        for base in {"", base_for(exp, "cpu") if "cpu" in exp.base else ""}:  # by table, and by table and recipe
            files.setdefault((exp.table, base), []).append(f"experiments/{f.name}")

    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    out: list[str] = []
    # one table per paper table and recipe: a table half rerun on a calibrated recipe shows its two halves apart
    for table, base in dict.fromkeys((r["table"], r.get("base", "")) for r in rows):
        group = [r for r in rows if r["table"] == table and r.get("base", "") == base]
        data = group[0].get("data")  # summaries before the column: None
        label = ", ".join(x for x in (data, Path(base).stem if base else "") if x)
        out += [heading.format(table=f"{table} ({label})" if label else table), "",
                "| setting | ours | seeds | paper | claim | Δ vs reference | verdict |",
                "|---|---|---|---|---|---|---|"]
        for r in group:
            try:
                paper = f"{float(r['paper']):g}"
            except ValueError:  # "" or "collapse"
                paper = r["paper"]
            out.append(f"| {r['setting']} | {_pm_cells(r['mean'], r['ci95'])} | {r['n_seeds']} | {paper} | {r['claim']} | "
                       f"{_pm_cells(r['diff_mean'], r['diff_ci95'])} | {r['verdict']} |")
        cmds = ", ".join(f"`python -m ftcl_core sweep {f}`" for f in files.get((table, base)) or files.get((table, ""), []))
        out += ["", f"Regenerate: {cmds}", ""]
    return "\n".join(out)


README_MARKERS = ("<!-- findings: written by `python -m ftcl_core summary` from results/summary.csv and the diagnosis "
                  "runs; edit the code, not this block -->", "<!-- /findings -->")


def tables_without_runs(profile: str = "cpu", folder: str | os.PathLike | None = None) -> list[str]:
    """The experiment files with no stored run on their current recipe (a table just switched to a calibrated recipe,
    say), as ``"T5 (table5_byol, cpu_cal_byol)"``: :func:`write_summary` has no row for them, so a reader is told."""
    folder = Path(folder) if folder else ROOT / "experiments"
    waiting = []
    for path in sorted(folder.glob("*.yaml")):
        exp = Experiment.load(path)
        if ("gpu" if profile == "gpu" else "cpu") in exp.base and not load_records(path, profile):
            waiting.append(f"{exp.table} ({path.stem}, {Path(base_for(exp, profile)).stem})")
    return waiting


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def distinct_claims(claims: list[dict]) -> list[dict]:
    """``claims`` (summary rows that make a claim) with each comparison kept once: tables share runs (Table 5's
    v1 +pos is Table 2's alpha_ex=2.0, copied by :func:`sweep`), and a copied run's readouts are the source's to
    the last digit, so two rows whose data, recipe, means, intervals and seeds all agree are the same comparison."""
    seen: dict[tuple, dict] = {}
    for r in claims:
        key = tuple(r.get(k, "") for k in ("data", "base", "mean", "ci95", "n_seeds", "diff_mean", "diff_ci95", "verdict"))
        seen.setdefault(key, r)
    return list(seen.values())


def readme_findings(rows: list[dict], answer: str, waiting: list[str] | tuple[str, ...] = ()) -> str:
    """The README's findings, generated so that no number in it is typed by hand: one bullet per table, data set and
    recipe of ``rows`` (:func:`write_summary`'s CSV, as read by ``csv.DictReader``) with each claim's paired
    difference and verdict, a count of the verdicts, the tables with no run yet on their recipe (``waiting``,
    :func:`tables_without_runs`), and ``answer`` (:func:`ftcl_core.diagnosis.stored_answer`)."""
    kinds = {"calibrated": "recipe calibrated without FT", "original": "original recipe", "": "recipe"}
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["table"], r["data"], r.get("base", "")), []).append(r)
    lines = []
    for (table, data, base), group in groups.items():
        seeds = sorted({int(r["n_seeds"]) for r in group})
        n = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
        cells = []
        for r in group:
            if r["verdict"] == "baseline":
                cells.append(f"{r['setting']} {_pm_cells(r['mean'], r['ci95'])} %")
            elif not r["diff_mean"]:  # the setting and its reference share no seed
                cells.append(f"{r['setting']} {_pm_cells(r['mean'], r['ci95'])} % (no seed paired with {r['reference']})")
            else:
                cells.append(f"{r['setting']} {_pm_cells(r['diff_mean'], r['diff_ci95'], signed=True)} vs "
                             f"{r['reference']}, *{r['verdict']}*")
        lines.append(f"- **{table}**, {DATA_NAMES.get(data, data)}, {kinds[recipe_kind(base)]} `{base}`, "
                     f"{n} seed{'s' if n != '1' else ''}: " + "; ".join(cells) + ".")
    claims = [r for r in rows if r["verdict"] != "baseline"]
    distinct = distinct_claims(claims)
    count = {v: sum(r["verdict"] == v for r in distinct) for v in ("replicated", "not replicated", "inconclusive")}
    original = [f"{table} ({Path(base).stem})" for table, _, base in groups if recipe_kind(base) == "original"]
    head = (f"Linear top-1 % (mean ± 95 % CI over seeds); a claim's Δ is its paired difference in points against the "
            f"row named, and its verdict needs {MIN_SEEDS_FOR_A_CLAIM} seeds. Claims: {_count(len(claims), 'row')}, "
            f"{_count(len(distinct), 'distinct comparison')} (a comparison that several tables share, the same runs, "
            "is one); "
            f"of these, replicated: {count['replicated']}, not replicated (contradicted): {count['not replicated']}, "
            f"inconclusive: {count['inconclusive']}."
            + (f" Still on the original, uncalibrated recipes: {', '.join(original)} (to be rerun: "
               "`python -m ftcl_core plan --calibrated --seeds 0 1 2`)." if original else "")
            + (f" No run stored yet on the current recipe (its earlier runs are in the dated record, "
               f"`results/cpu-2026-11/`): {', '.join(waiting)}." if waiting else ""))
    aims = baseline_aims(rows)
    if aims:
        def said(a: dict) -> str:
            missed = [k for k, v in (("gain", a["gain_met"]), ("spread", a["spread_met"])) if v is False]
            spread = "no spread yet" if math.isnan(a["ci95"]) else f"spread ± {a['ci95']:.1f}"
            gain = "no random-init readout stored" if math.isnan(a["gain"]) else f"{a['gain']:+.1f} points" + (
                " over random init (the bar there is the raw-pixel probe)" if a["gain_met"] is None else "")
            return (f"{a['setting']} ({DATA_NAMES.get(a['data'], a['data'])}) {gain}, {spread} "
                    f"({a['n_seeds']} seeds)" + (f", misses {' and '.join(missed)}" if missed else ""))

        order = [f"{'met' if v2 >= v1 else 'missed'} on {DATA_NAMES.get(d, d)} (v2 {v2:.1f} %, v1 {v1:.1f} %)"
                 for d, (v1, v2) in v2_against_v1(aims).items()]

        lines += ["", f"Calibrated baselines of Table 5 at the tables' budget against the issue's aims (linear readout "
                      f"≥ {BASELINE_AIMS['gain']:.0f} points above the random-init encoder on the shapes, spread ≤ "
                      f"{BASELINE_AIMS['spread']:.0f}; chapter 9): " + "; ".join(said(a) for a in aims) + "."
                  + (f" MoCo v2 ≥ v1: {'; '.join(order)}." if order else "")]
    return "\n".join([README_MARKERS[0], "", head, "", *lines, "", answer, "", README_MARKERS[1]])


def replace_readme_findings(readme: str, block: str) -> str:
    """``readme`` with the text between :data:`README_MARKERS` (markers included) replaced by ``block``."""
    start = readme.find(README_MARKERS[0])
    end = readme.find(README_MARKERS[1], start) if start >= 0 else -1
    if end < 0:
        raise ConfigError(f"README has no findings block: put the two lines {README_MARKERS[0]!r} and "
                          f"{README_MARKERS[1]!r} where the generated findings belong.")
    return readme[:start] + block + readme[end + len(README_MARKERS[1]):]
