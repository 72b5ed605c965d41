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

import contextlib
import csv
import dataclasses
import io
import math
import os
import shutil
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from ftcl_core import execution
from ftcl_core.config import (
    EXECUTION_KEYS,
    ConfigError,
    FTConfig,
    RunConfig,
    _flatten,
    as_config,
    config_diff,
    config_mismatch,
    load_config,
    load_yaml_mapping,
)
from ftcl_core.runs import RunDir, RunFileError, atomic_write_bytes, cpu_isa, cpu_model, write_json
from ftcl_core.study.results import claims as verdicts
from ftcl_core.study.results import records as run_records
from ftcl_core.study.results.claims import BASELINE, KINDS, MIN_SEEDS, NOT_RUN, Claim
from ftcl_core.study.results.numbers import csv_number, fixed, plus_minus, pm_cell
from ftcl_core.study.results.paired import by_seed, mean_ci95, pair
from ftcl_core.study.threads import threads_to_train

PROFILES = ("smoke", "cpu", "gpu")
ROOT = Path(__file__).resolve().parents[2]  # the repository: ftcl_core/study/ is two below
SMOKE_OVERRIDES = [
    "data.n_train=512", "data.n_test=256", "data.n_val=256", "augment.out_size=16", "model.dim=32", "model.bn_splits=2",
    "moco.queue_size=128", "train.epochs=2", "train.batch_size=64", "stats.sync_every=4",
    "eval.linear_epochs=5", "eval.knn_k=20",
]


def config_identity(cfg: RunConfig | dict) -> tuple:
    """A hashable key that two configs share exactly when :func:`config_diff` finds no difference between them
    (what a run computes; the execution keys left out): an index of stored runs by what they computed. Values
    compare by ``repr``, so here NaN equals NaN and -0.0 differs from 0.0 (no config holds either)."""
    flat = _flatten(as_config(cfg).to_dict())
    return tuple(sorted((k, repr(v)) for k, v in flat.items() if k not in EXECUTION_KEYS))


@dataclass
class Experiment:
    """An experiment file. ``claims`` holds the claims the file declares (see :func:`parse_claims`); with the
    claims read off the paper's numbers (:meth:`paper_claim`) they make :meth:`claims_of`."""

    table: str
    title: str
    base: dict[str, str]
    seeds: list[int]
    settings: dict[str, dict]
    paper: dict[str, object]  # setting -> the paper's top-1, or "collapse" (Table 1)
    path: Path
    compare: dict[str, str]  # setting -> the setting it is compared with (default: the first setting)
    claims: tuple[Claim, ...] = ()  # the claims the file declares beyond (or instead of) the paper's numbers
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
        if not isinstance(d, dict):
            raise ConfigError(f"experiment file {p} holds {type(d).__name__} {d!r}, not a mapping of table, base and "
                              "settings; see experiments/table7_ft_v1.yaml for the layout.")
        missing = [k for k in ("table", "base", "settings") if k not in d]
        if missing:
            raise ConfigError(f"experiment file {p} lacks {missing}; see experiments/table7_ft_v1.yaml for the layout.")
        settings = d["settings"]
        if not isinstance(settings, dict) or not settings:
            raise ConfigError(f"experiment file {p}: `settings` must map at least one name to its overrides.")
        check_experiment_names(p, d["table"], settings, d.get("base"), d.get("seeds", [0]))
        first = next(iter(settings))
        compare = d.get("compare") or {k: first for k in settings if k != first}
        paper = d.get("paper") or {}
        claims = parse_claims(d.get("claims"), compare, p)
        named = {c.arm for c in claims} | {c.reference for c in claims if c.kind != "sanity"}
        unknown = sorted({*compare, *compare.values(), *paper, *named} - set(settings))
        if unknown:
            raise ConfigError(f"experiment file {p} names unknown setting(s) {unknown} in compare/paper/claims; "
                              f"its settings are {list(settings)}.")
        bad = {k: v for k, v in paper.items() if v != "collapse" and not isinstance(v, (int, float))}
        if bad:
            raise ConfigError(f"experiment file {p}: {bad}: a paper entry is a number or 'collapse', a claim "
                              "is 'above' or 'below'.")
        common = d.get("common") or {}
        if not isinstance(common, dict):
            raise ConfigError(f"experiment file {p}: `common` must map config keys to values, e.g. {{train.epochs: 10}}.")
        exp = cls(d["table"], d.get("title", d["table"]), d["base"], list(d.get("seeds", [0])),
                  settings, paper, p, compare, (), common)
        try:
            exp.claims = tuple(exp.with_paper_effect(c) for c in claims)
        except ValueError as e:  # a claim's stated effect against the file's own numbers
            raise ConfigError(f"experiment file {p}: {e}.") from None
        return exp

    def paper_number(self, setting: str) -> float:
        """The paper's top-1 for ``setting``; NaN where it states none (or states a collapse)."""
        v = self.paper.get(setting)
        return float(v) if isinstance(v, (int, float)) else math.nan

    def paper_effect(self, arm: str, reference: str) -> float | None:
        """The paper's ``arm - reference`` in points, rounded to the paper's two decimals; None without both numbers."""
        a, b = self.paper_number(arm), self.paper_number(reference)
        return None if math.isnan(a) or math.isnan(b) else round(a - b, 2)

    def paper_pair(self, arm: str, reference: str) -> tuple[float, float] | None:
        """The paper's two readouts (reference, arm) in % top-1; None without both numbers."""
        a, b = self.paper_number(arm), self.paper_number(reference)
        return None if math.isnan(a) or math.isnan(b) else (b, a)

    def with_paper_effect(self, claim: Claim) -> Claim:
        """``claim`` with the paper's effect and two readouts read off the file's ``paper:`` numbers where the
        claim states none (the effect from a claim's own two numbers where it gives them)."""
        if claim.kind == "sanity":
            return claim
        numbers = claim.paper or self.paper_pair(claim.arm, claim.reference)
        effect = claim.effect
        if effect is None and numbers is not None:
            effect = round(numbers[1] - numbers[0], 2)
        return dataclasses.replace(claim, effect=effect, paper=numbers)

    def paper_claim(self, setting: str) -> Claim | None:
        """The claim the paper's numbers make for ``setting``: Table 1's sanity checks against the random-init
        encoder (``collapse``: below it, a number: above it), else a difference against ``compare[setting]``
        with the paper's effect, where the paper gives both numbers."""
        if self.table.split("-")[0] == "T1":  # T1, or T1 on another data set (T1-fmnist)
            if setting not in self.paper:
                return None
            collapse = self.paper[setting] == "collapse"
            return Claim(setting, "random init", "sanity", direction=-1 if collapse else 1, source="Tab. 1",
                         text="collapses (below random init)" if collapse else "learns (above random init)")
        ref = self.compare.get(setting)
        effect = self.paper_effect(setting, ref) if ref else None
        return None if effect is None else Claim(setting, ref, "difference", effect, source=f"Tab. {self.table}",
                                                 paper=self.paper_pair(setting, ref))

    def claims_of(self, setting: str) -> list[Claim]:
        """Every claim on ``setting`` as arm: first its primary claim (against ``compare[setting]``, or Table 1's
        sanity check), declared or read off the paper's numbers, then the file's other claims in their order."""
        declared = [c for c in self.claims if c.arm == setting]
        derived = self.paper_claim(setting)
        ref = derived.reference if derived is not None else self.compare.get(setting)
        primary = next((c for c in declared if c.reference == ref), derived)
        return ([primary] if primary is not None else []) + [c for c in declared if c is not primary]


CLAIM_KEYS = ("arm", "vs", "kind", "effect", "margin", "direction", "source", "text", "paper")


def parse_claims(raw, compare: dict[str, str], path: Path) -> list[Claim]:
    """An experiment file's ``claims:``, in one of two forms: a mapping ``{setting: above | below}`` (a difference
    against ``compare[setting]`` whose size the paper does not state), or ``{setting: {vs, kind, effect, margin,
    source}}``; or a list of such mappings, each with its ``arm``. ``kind`` (default ``difference``) is one of
    :data:`~ftcl_core.study.results.claims.KINDS`; ``effect`` is the paper's ``arm - vs`` in points (default: read off
    ``paper``, else the file's ``paper:`` numbers); ``margin`` is an equivalence claim's ± points; ``paper`` the
    paper's two readouts ``[reference, arm]`` in % where the file's ``paper:`` lacks them (a diagnosis quoting
    Table 7), from which the claim's size on the error scale is read."""
    if not raw:
        return []
    items = [{"arm": k, **(v if isinstance(v, dict) else {"direction": v})} for k, v in raw.items()] \
        if isinstance(raw, dict) else list(raw)
    out = []
    for item in items:
        if not isinstance(item, dict) or "arm" not in item or sorted(set(item) - set(CLAIM_KEYS)):
            raise ConfigError(f"experiment file {path}: claim {item!r} must be a mapping with an `arm` and only "
                              f"the keys {CLAIM_KEYS}.")
        direction = item.get("direction", "above")
        if direction not in ("above", "below") or item.get("kind", "difference") not in KINDS:
            raise ConfigError(f"experiment file {path}: claim {item!r}: a claim is 'above' or 'below', of a kind in "
                              f"{KINDS}.")
        ref = item.get("vs", compare.get(item["arm"]))
        if ref is None:
            raise ConfigError(f"experiment file {path}: claim {item!r} names no reference (`vs`) and its arm has "
                              "no `compare` entry.")
        numbers = item.get("paper")
        try:
            if numbers is not None and not (isinstance(numbers, list) and len(numbers) == 2):
                raise ValueError(f"claim {item!r}: `paper` is the paper's two readouts [reference, arm]")
            out.append(Claim(item["arm"], ref, item.get("kind", "difference"),
                             None if item.get("effect") is None else float(item["effect"]),
                             1 if direction == "above" else -1, item.get("margin"), item.get("source", ""),
                             item.get("text", ""), None if numbers is None else (float(numbers[0]), float(numbers[1]))))
        except (ValueError, TypeError) as e:
            raise ConfigError(f"experiment file {path}: {e}.") from None
    return out


def profile_root(profile: str) -> Path:
    """Where a profile's runs live: ``results/cpu`` (committed), ``runs/smoke``, ``runs/gpu``."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}; choose one of {PROFILES}.")
    env = os.environ.get("FTCL_RUNS_ROOT")
    if env:
        return Path(env) / profile
    return ROOT / ("results" if profile == "cpu" else "runs") / profile


STORED = ROOT / "results" / "cpu"  # the committed runs of the cpu profile, the evidence the book's findings rest on


def writes_committed(profile: str) -> bool:
    """Whether the summaries of ``profile``'s runs replace the committed ones (``results/*.csv``, the README's
    findings): only the cpu profile read from the committed store; a store elsewhere (``FTCL_RUNS_ROOT``) gets its
    own files in its folder, so a scratch store never overwrites the evidence."""
    return profile == "cpu" and profile_root(profile).resolve() == STORED.resolve()


def resolve(base: str, overrides: list[str] | dict, profile: str) -> RunConfig:
    """The full config of a setting under a profile (smoke shrinks everything for CI).

    A setting's value may depend on the profile: ``{cpu: 8192, gpu: 131072}`` (Table 5's 2K) or
    ``{cpu: 9, gpu: 30}`` (Table 6's start epoch, scaled to each profile's run length).  The smoke profile
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
    method = next((yaml.safe_load(i.split("=", 1)[1]) for i in reversed(items) if i.startswith("method=")),
                  load_yaml_mapping(_path(base), "config file", "configs/cpu_moco_v2.yaml").get("method", "moco"))
    if method != "moco":  # the smoke profile's queue is MoCo's key alone
        extra = [o for o in extra if not o.startswith("moco.")]
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


def check_experiment_names(path: Path, table: object, settings: dict, base: object, seeds: object) -> None:
    """Refuse, with the fix, what would put runs in the wrong folder or count one run twice: a table name that is not
    one folder name, settings that are not mappings or that share a folder (:func:`setting_folder`), a base that is
    not a mapping of profiles, and seeds that are not a non-empty list of distinct integers."""
    if not isinstance(table, str) or not table or "/" in table or "\\" in table or table in (".", ".."):
        raise ConfigError(f"experiment file {path}: table {table!r} must be one folder name (no '/', not '..'), "
                          "e.g. table: T1.")
    if not isinstance(base, dict):
        raise ConfigError(f"experiment file {path}: `base` must map profiles to configs, e.g. "
                          "base: {cpu: configs/cpu_cal_moco_v1.yaml}.")
    folders: dict[str, str] = {}
    for name, overrides in settings.items():
        if not isinstance(overrides, dict):
            raise ConfigError(f"experiment file {path}: setting {name!r} must map config keys to values, e.g. "
                              f"{name}: {{ft.pos: true}} (it holds {type(overrides).__name__} {overrides!r}).")
        other = folders.setdefault(setting_folder(str(name)), str(name))
        if other != str(name):
            raise ConfigError(f"experiment file {path}: settings {other!r} and {name!r} would share the folder "
                              f"{setting_folder(str(name))}; rename one.")
    if (not isinstance(seeds, list) or not seeds or not all(isinstance(x, int) and not isinstance(x, bool)
                                                            for x in seeds)):
        raise ConfigError(f"experiment file {path}: `seeds` must be a non-empty list of integers, e.g. seeds: [0, 1, 2] "
                          f"(it holds {seeds!r}).")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"experiment file {path}: `seeds` {seeds} names a seed twice; each seed is one run.")


def setting_folder(setting: str) -> str:
    """The folder name of a setting's runs (spaces and slashes as underscores)."""
    return setting.replace("/", "_").replace(" ", "_")


def run_dir(exp: Experiment, setting: str, seed: int, profile: str, root: str | os.PathLike | None = None) -> Path:
    """The folder of one run: ``<root>/<table>/<setting>/seed<N>``, under :func:`profile_root` unless ``root``."""
    safe = setting_folder(setting)
    return (Path(root) if root else profile_root(profile)) / exp.table / safe / f"seed{seed}"


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


def table_facts(exp: Experiment, profile: str, records: list[dict] | None = None) -> dict:
    """What a table's caption in the book names: its name and title, the images (:func:`data_label`) and recipe
    (``recipe``: the base config; ``recipe_kind``: :func:`recipe_kind`, since a table on the profile's original
    recipe and one on a recipe calibrated without FT are not comparable row by row) its runs use and, given the
    table's ``records``, the settings that have no stored run yet (``missing``, comma-separated; "" for none)."""
    stored = {r["setting"] for r in records or []}
    missing = [s for s in exp.settings if s not in stored] if records is not None else []
    base = base_for(exp, profile)
    return {"table": exp.table, "title": exp.title, "data": data_label(exp, profile), "recipe": base,
            "recipe_kind": recipe_kind(base), "missing": ", ".join(missing)}


def seed_list(seeds) -> list[int] | None:
    """``seeds`` as a list of ints: a list or tuple of ints, or the text of one as a papermill parameter passes it
    (``"[0, 1, 2]"``, ``"0 1 2"``, ``"0,1,2"``); None stays None. Anything else is refused with the form it takes."""
    if seeds is None:
        return None
    if isinstance(seeds, str):
        text = seeds.strip()
        try:
            parsed = yaml.safe_load(text) if text.startswith("[") else [int(s) for s in text.replace(",", " ").split()]
        except (yaml.YAMLError, ValueError):
            parsed = None
        seeds = parsed
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = [seeds]
    if not isinstance(seeds, (list, tuple)) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool)
                                                                     and s >= 0 for s in seeds):
        raise ConfigError(f"seeds={seeds!r}: give a list of seeds (integers >= 0), e.g. [0, 1, 2] (papermill: "
                          '-p seeds "[0, 1, 2]").')
    if twice := sorted({s for s in seeds if list(seeds).count(s) > 1}):
        raise ConfigError(f"seeds={list(seeds)!r} names seed(s) {twice} twice, which would count one run as two: "
                          "give each seed once.")
    return list(seeds)


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
        with epoch_callback(keep_prefix(keep)) if keep else contextlib.nullcontext(), threads_to_train(out, progress):
            result = train(cfg, out, progress=progress)
        if forked:
            note_fork(out, forked, forks[out][1])
        records.append({"table": exp.table, "setting": name, "seed": seed, "dir": str(out), **result})
    return records


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
    seconds here. ``seeds``/``calibrated`` plan a rerun at other seeds or on :func:`calibrated_base`. Nothing is
    trained, copied or moved here."""
    index: dict[tuple, Path] = {}
    for run in stored_runs(profile).values():
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
            if diff := config_mismatch(RunDir(path).load_config(), cfg).replace("(this command's)", f"({f.name}'s)"):
                raise RunFileError(f"{path} holds a run of another config than {f.name} asks of setting {name!r}, "
                                   f"seed {seed}: {diff}. Move the folder out of the store (a summary would count it "
                                   f"as this setting's), then train the run with: python -m ftcl_core sweep "
                                   f"{f.relative_to(ROOT) if f.is_relative_to(ROOT) else f} --settings {name!r} --seeds {seed}")
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


TABLE_HEADER = ["setting", "ours", "±95%", "n", "Δ", "vs", "paper", "paper Δ", "ours/paper", "verdict"]


def table_cells(exp: Experiment, records: list[dict], kinds: Collection[str] | None = None
                ) -> tuple[str, list[str], list[list[str]]]:
    """Title, header and cells of an experiment's table: the rows of :func:`table_rows`, i.e. mean, 95 % CI,
    seeds, paired difference against each claim's reference, the paper's number and effect, our effect over the
    paper's, and the verdict. ``kinds``: only the rows of those claim kinds (``Claim.kind``: "sanity", "ordering",
    ...; a baseline row has none and is kept only without ``kinds``)."""
    rows = []
    for r in table_rows(exp, records):
        if kinds is not None and r.get("kind") not in kinds:
            continue
        rows.append([r["setting"], fixed(r["mean"]), pm_cell(r["ci95"], None), str(r["n_seeds"]),
                     pm_cell(r["diff_mean"], r["diff_ci95"], signed=True), r["reference"],
                     "" if r["paper"] is None else str(r["paper"]), pm_cell(r["effect"], None, 2, signed=True),
                     pm_cell(r["ratio"], None, 2), r["verdict"]])
    return f"{exp.table}: {exp.title}", TABLE_HEADER, rows


def format_table(exp: Experiment, records: list[dict]) -> str:
    """:func:`table_cells` as plain text (for a terminal; the book shows them as HTML tables)."""
    title, header, rows = table_cells(exp, records)
    widths = [22, 6, 5, 2, 15, 12, 8, 7, 10]

    def line(cells: list[str]) -> str:
        return " ".join(f"{c[:w] if i == 5 else c:>{w}s}" for i, (c, w) in enumerate(zip(cells, widths))) + f"  {cells[-1]}"

    return "\n".join([title, line(header), *(line(r) for r in rows)])


def table_order(table: str) -> tuple[int, str]:
    """Sort key: the paper's tables T1..T7 first, then the supplement's (S-F, S-G)."""
    return (0 if table.startswith("T") else 1, table)


# the columns of the error scale (claims.judge): the paired log error ratio, the paper's, the verdict on each scale,
# the scale that decided, and the seeds whose two runs trained on different devices (such a pair leaves the BH family)
SCALE_COLUMNS = ("verdict_points", "log_error_ratio", "log_error_ratio_ci95", "paper_log_error_ratio",
                 "verdict_errors", "scale", "mixed_seeds", "floor_sensitive")
SUMMARY_COLUMNS = ("table", "data", "setting", "mean", "ci95", "n_seeds", "paper", "verdict", "reference", "diff_mean",
                   "diff_ci95", "random_init_mean", "claim", "base", "kind", "effect", "margin", "ratio", "p_value",
                   "q_value", "verdict_bh", "reference_shared_by", "knn_diff_mean", "knn_diff_ci95", "knn_verdict",
                   *SCALE_COLUMNS)
KNN = "knn_top1"  # the kNN readout, judged beside the linear one where the runs hold it


def claim_row(exp: Experiment, records: list[dict], claim: Claim, key: str = "linear_top1") -> dict:
    """The paired comparison of one claim on ``records`` and its verdict, as row fields: the reference, the
    paired difference, the claim's kind, the paper's effect and margin, our effect over the paper's, the p-value
    and the verdict (:func:`ftcl_core.study.results.claims.judge`) with both of its scales (:data:`SCALE_COLUMNS`), and
    the same verdict on the kNN readout. A sanity check against ``random init`` pairs each run with its own
    random-init encoder's readout."""
    def paired_on(readout: str):
        if claim.kind == "sanity":
            return pair(by_seed(records, claim.arm, readout), by_seed(records, claim.arm, f"random_init_{readout}"))
        return pair(by_seed(records, claim.arm, readout), by_seed(records, claim.reference, readout),
                    record_devices(records, claim.arm, claim.reference))

    judged = verdicts.judge(claim, paired_on(key))
    knn = verdicts.judge(claim, paired_on(KNN)) if any(KNN in r for r in records if r["setting"] == claim.arm) else None
    return {"reference": claim.reference, "diff_mean": judged.paired.mean, "diff_ci95": judged.paired.ci95,
            "verdict": judged.word, "claim": claim.describe(), "kind": claim.kind, "effect": claim.effect,
            "margin": claim.margin, "ratio": judged.ratio, "p_value": judged.p, "q_value": math.nan,
            "verdict_bh": judged.word, "knn_diff_mean": knn.paired.mean if knn else math.nan,
            "knn_diff_ci95": knn.paired.ci95 if knn else math.nan, "knn_verdict": knn.word if knn else "",
            **scale_cells(judged), "_verdict": judged}


def scale_cells(judged: verdicts.Verdict) -> dict:
    """The :data:`SCALE_COLUMNS` of one verdict: the word on points, the paired log error ratio (mean and 95 %
    half-width, NaN where the claim is not judged on errors), the paper's, the word on errors, the scale that
    decided, and the seeds whose arms trained on different devices (space-separated)."""
    errors = judged.errors
    return {"verdict_points": judged.points, "log_error_ratio": errors.mean if errors else math.nan,
            "log_error_ratio_ci95": errors.ci95 if errors else math.nan,
            "paper_log_error_ratio": judged.claim.paper_log_error_ratio if errors else math.nan,
            "verdict_errors": judged.error_word, "scale": judged.scale,
            "mixed_seeds": " ".join(map(str, judged.paired.mixed_seeds)),
            "floor_sensitive": "yes" if judged.floor_sensitive else ""}


def record_devices(records: list[dict], arm: str, reference: str) -> dict[int, tuple[str, str]]:
    """Per seed both settings hold, the kinds of machine their runs trained on (:func:`machine_kind`; "" for a record
    without a run folder), for :func:`ftcl_core.study.results.paired.pair`."""
    runs = {(r["setting"], r["seed"]): r for r in records if r["setting"] in (arm, reference)}

    def device(r: dict) -> str:
        return machine_kind(RunDir(r["dir"])) if r.get("dir") else ""

    return {s: (device(runs[arm, s]), device(runs[reference, s])) for (name, s) in runs
            if name == arm and (reference, s) in runs}


def table_rows(exp: Experiment, records: list[dict]) -> list[dict]:
    """One row per claim of ``exp`` (:meth:`Experiment.claims_of`) whose arm has runs, after the arm's own row
    where the arm has no primary claim (a ``baseline`` row: it claims nothing, and ``reference`` names the setting
    it is compared with, where there is one). A claim's row carries :func:`claim_row`; ``reference_shared_by``
    counts the table's claims against the same reference arm (their verdicts are not independent)."""
    summary = summarize(records)
    rows = []
    for setting, v in summary.items():
        base = {"table": exp.table, "data": "", "setting": setting, "mean": v["mean"], "ci95": v["ci95"],
                "n_seeds": v["n_seeds"], "paper": exp.paper.get(setting), "verdict": BASELINE, "reference": "",
                "diff_mean": math.nan, "diff_ci95": math.nan, "random_init_mean": v["random_init_mean"], "claim": "",
                "kind": "", "effect": None, "margin": None, "ratio": math.nan, "p_value": math.nan,
                "q_value": math.nan, "verdict_bh": BASELINE, "reference_shared_by": "", "knn_diff_mean": math.nan,
                "knn_diff_ci95": math.nan, "knn_verdict": "", "verdict_points": "", "log_error_ratio": math.nan,
                "log_error_ratio_ci95": math.nan, "paper_log_error_ratio": math.nan, "verdict_errors": "",
                "scale": "", "mixed_seeds": "", "floor_sensitive": ""}
        claims = [c for c in exp.claims_of(setting) if c.kind == "sanity" or c.reference in summary]
        primary = bool(claims) and (claims[0].kind == "sanity" or claims[0].reference == exp.compare.get(setting))
        if not primary:
            ref = exp.compare.get(setting)
            if ref in summary:  # compared, but the paper claims nothing of it
                paired = pair(by_seed(records, setting), by_seed(records, ref))
                errors = paired.log_error_ratios()  # both scales, as a claim's row has them
                base.update(reference=ref, diff_mean=paired.mean, diff_ci95=paired.ci95,
                            log_error_ratio=errors.mean, log_error_ratio_ci95=errors.ci95)
            rows.append(base)
        rows += [{**base, **claim_row(exp, records, c)} for c in claims]
    shared: dict[str, int] = {}
    for r in rows:
        if r["kind"] and r["kind"] != "sanity":
            shared[r["reference"]] = shared.get(r["reference"], 0) + 1
    for r in rows:
        if r["kind"] and r["kind"] != "sanity":
            r["reference_shared_by"] = shared[r["reference"]]
    return rows


DATA_SUFFIXES = {"fashion_mnist": "-fmnist"}  # a table's name on another data set: T6 -> T6-fmnist


def data_set_verdicts(rows: list[dict]) -> list[dict]:
    """Each claim tested on more than one data set (a table and its ``-fmnist`` twin, same setting), with the
    verdict per data set and where the claim holds (matches the paper or larger): on every data set, on some (named),
    on ``none`` (opposite to the paper on every data set), or ``open`` (it holds on no data set and not every one reads
    opposite, or one data
    set's runs are on the original recipe and another's on a calibrated one: ``recipes``, per data set).
    ``rows``: summary rows (:func:`write_summary`'s CSV)."""
    claims: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        if r["verdict"] == BASELINE:
            continue
        table = r["table"]
        for suffix in DATA_SUFFIXES.values():
            table = table.removesuffix(suffix)
        claims.setdefault((table, r["setting"], r.get("reference", "")), {})[r["data"]] = r
    out = []
    for (table, setting, reference), per in claims.items():
        if len(per) < 2:
            continue
        decided = {d: r["verdict"] for d, r in per.items() if int(r["n_seeds"]) >= MIN_SEEDS}
        holds = sorted(d for d, v in decided.items() if v in (verdicts.MATCHES, verdicts.LARGER, verdicts.EQUIVALENT))
        recipes = {d: recipe_kind(r.get("base", "")) for d, r in per.items()}
        if len(set(recipes.values())) > 1:  # one data set still on the original recipe: not yet comparable
            where = "open (recipes differ)"  # "open", not "undecided": that verdict means fewer than 3 seeds
        elif len(holds) == len(per):
            where = "every data set"
        elif holds:
            where = ", ".join(holds)
        elif len(decided) == len(per) and all(v in (verdicts.OPPOSITE, verdicts.NOT_EQUIVALENT)
                                              for v in decided.values()):
            where = "none"
        else:  # no data set replicates it, and one has < 3 seeds or an interval that includes zero
            where = "open"
        out.append({"table": table, "setting": setting, "reference": reference, "claim": next(iter(per.values()))["claim"],
                    "per_data": {d: (r["verdict"], int(r["n_seeds"])) for d, r in sorted(per.items())},
                    "recipes": dict(sorted(recipes.items())), "holds_on": where})
    return out


def row_claim(row: dict) -> Claim:
    """The claim a summary row (a CSV row as read by ``csv.DictReader``, or :func:`table_rows`'s) judges."""
    kind = row.get("kind") or ("sanity" if row.get("reference") == "random init" else "difference")
    number = [None if row.get(k) in (None, "") else float(row[k]) for k in ("effect", "margin")]
    below = str(row.get("claim", "")).startswith(("below", "collapses"))
    return Claim(row["setting"], row.get("reference", ""), kind, number[0], -1 if below else 1, number[1],
                 text=row.get("claim", ""))


def judge_cells(row: dict, diff_mean, diff_ci95, n_seeds) -> str:
    """The verdict on ``row``'s claim (:func:`row_claim`) of a paired difference given as numbers or CSV cells."""
    if pm_cell(diff_mean, None) == "":
        return verdicts.UNDECIDED
    mean, ci = float(diff_mean), float(diff_ci95) if pm_cell(diff_ci95, None) else math.nan
    return verdicts.verdict_word(row_claim(row), mean - ci, mean + ci, int(n_seeds))


RECIPE_RECORD = ROOT / "results" / "cpu-2026-11" / "summary.csv"  # the tables on the profile's original recipes
# Rows filed under another table since the dated record was written: (table now, a setting) -> its table there.
# BYOL's rows are the supplement's IN-1K table (Supp E), not Table 7, where the record still has them (issue 50).
REFILED = {("S-E", "byol baseline"): "T7", ("S-E", "byol +pos"): "T7"}


def recorded_table(table: str, setting: str) -> str:
    """The table under which the dated record (:data:`RECIPE_RECORD`) holds ``setting`` of ``table``
    (:data:`REFILED`; the same table for every row not refiled)."""
    return REFILED.get((table, setting), table)


def recipe_sensitivity(before: list[dict], after: list[dict]) -> list[dict]:
    """Each claim whose table now runs on another recipe (another ``base`` config) than in the dated record
    ``before`` (e.g. :data:`RECIPE_RECORD`): both verdicts, both paired differences and seeds, and whether the
    verdict changed. ``before``/``after``: summary rows (:func:`write_summary`'s CSV). Both verdicts are the ones
    on points (``verdict_points``, where ``after`` has it): the record holds no reference readouts per seed to judge
    its pairs on the error scale. A row refiled under another table since the record (:data:`REFILED`) is matched
    with its row there."""
    old = {(r["table"], r["data"], r["setting"], r.get("reference", "")): r for r in before if r["verdict"] != BASELINE}
    out = []
    for r in after:
        o = old.get((recorded_table(r["table"], r["setting"]), r["data"], r["setting"], r.get("reference", "")))
        if o is None or r["verdict"] == BASELINE or o.get("base") == r.get("base"):
            continue
        # the record's paired interval judged by today's verdict on today's claim (the record was written under
        # earlier rules: a sign-only verdict, two seeds deciding a claim)
        was, now = judge_cells(r, o["diff_mean"], o["diff_ci95"], o["n_seeds"]), r.get("verdict_points") or r["verdict"]
        out.append({"table": r["table"], "data": r["data"], "setting": r["setting"], "claim": r["claim"],
                    "base_before": o.get("base", ""), "base_after": r["base"],
                    "before": (was, o["diff_mean"], o["diff_ci95"], int(o["n_seeds"])),
                    "after": (now, r["diff_mean"], r["diff_ci95"], int(r["n_seeds"])),
                    "changed": was != now})
    return out


METHOD_TABLES = ("T7", "T7-fmnist", "S-E")  # the tables holding each method's baseline: Table 7 (each data set), Supp E
BASELINE_AIMS = {"gain": 25.0, "spread": 5.0}  # issue "fair baselines": >= random init + 25 points, 95 % CI <= 5


def baseline_aims(rows: list[dict]) -> list[dict]:
    """The bar this book sets for each method's baseline, judged at the tables' budget (the ``<method> baseline``
    rows of Table 7 and of Supp E's BYOL table, :data:`METHOD_TABLES`, in ``rows``, :func:`write_summary`'s CSV, on a
    calibrated recipe): linear readout at least
    ``BASELINE_AIMS["gain"]`` points above the random-init encoder, and a run-to-run spread (95 % CI over seeds)
    of at most ``BASELINE_AIMS["spread"]`` points.  Calibration chose the recipes at a shorter, shared budget
    (:mod:`ftcl_core.study.calibration`); these rows say where the tables' longer runs stand.  On data where the
    random-init encoder is not the bar (Fashion-MNIST: the raw-pixel probe, which the summary does not hold)
    ``gain_met`` is None.  ``spread_met`` is None below :data:`MIN_SEEDS` seeds."""
    out = []
    for r in rows:
        if not (r["table"] in METHOD_TABLES and r["verdict"] == "baseline"
                and recipe_kind(r.get("base", "")) == "calibrated"):
            continue
        mean, ci, n = float(r["mean"]), float(r["ci95"] or "nan"), int(r["n_seeds"])
        rand = float(r.get("random_init_mean") or "nan")  # a run stored before the random-init readout has none
        gain = mean - rand
        out.append({"table": r["table"], "data": r["data"], "setting": r["setting"], "base": r["base"], "mean": mean,
                    "ci95": ci, "n_seeds": n, "random_init": rand, "gain": gain,
                    "gain_met": gain >= BASELINE_AIMS["gain"] if r["data"] == "shapes" and not math.isnan(gain) else None,
                    "spread_met": ci <= BASELINE_AIMS["spread"] if n >= MIN_SEEDS else None})
    return out


def v2_against_v1(aims: list[dict]) -> dict[str, tuple[float, float]]:
    """Per data set with both, the mean linear readout of MoCo v1's and v2's baselines (:func:`baseline_aims`): the
    issue's aim is v2 >= v1, the order the literature reports."""
    by = {(a["data"], a["setting"]): a["mean"] for a in aims}
    return {d: (by[d, "v1 baseline"], by[d, "v2 baseline"]) for d, _ in by if (d, "v1 baseline") in by
            and (d, "v2 baseline") in by}


def _run_means(metrics: Mapping[str, Mapping[int, Mapping[str, np.ndarray]]], settings: tuple[str, str],
               keys: tuple[str, ...], tail: int | None = None) -> tuple[list[int], dict]:
    """The seeds both ``settings`` hold in ``metrics`` (a setting to ``{seed: run metrics}``), and each run's mean of
    each of ``keys`` over all its steps (its last ``tail`` steps when given), keyed ``(setting, seed, key)``."""
    seeds = sorted(set(metrics.get(settings[0], {})) & set(metrics.get(settings[1], {})))
    start = -tail if tail else 0
    return seeds, {(s, k, key): float(np.mean(np.asarray(metrics[s][k][key])[start:])) for s in settings
                   for k in seeds for key in keys}


def undone_positive_facts(metrics: Mapping[str, Mapping[int, Mapping[str, np.ndarray]]], arm: str = "v1 +pos",
                          reference: str = "v1 baseline", tail: int = 100) -> dict:
    """How the encoder answers positive extrapolation (eq. 3): eq. 4 reads ``S' = 1 - A (1 - S)`` with
    ``A = 1 + 2 l (l - 1)`` >= 1, so extrapolation multiplies a pair's gap to 1 by A, and an encoder can shrink that
    gap (raise its raw S) until the transformed pair is no harder than before; InfoNCE (eq. 1) rewards the margin
    between a positive and the negatives, which that need not keep. ``metrics`` maps a setting to ``{seed: run
    metrics}``. Facts over the seeds both hold, each a run's mean over its last ``tail`` steps, then over the seeds:
    raw Mean(pos) of the reference and the arm (``ref_pos``, ``arm_pos``), the arm's transformed Mean(pos)
    (``arm_ft``), raw Mean(neg) (``ref_neg``, ``arm_neg``), the margin the loss sees, Mean(pos) - Mean(neg) after
    FT (``ref_margin``, ``arm_margin``), ``n`` / ``seeds``; and in every seed: ``undone``, the arm's raw Mean(pos)
    above the reference's and its transformed Mean(pos) no lower (the harder pair no harder than the baseline's);
    ``crowded``, its raw Mean(neg) above the reference's and its margin below."""
    seeds, mean = _run_means(metrics, (arm, reference), ("pos_mean", "neg_mean", "ft_pos_mean", "ft_neg_mean"), tail)
    if not seeds:
        return {"n": 0, "undone": False, "crowded": False}
    margin = lambda s, k: mean[s, k, "ft_pos_mean"] - mean[s, k, "ft_neg_mean"]  # noqa: E731
    avg = lambda s, key: f"{np.mean([mean[s, k, key] for k in seeds]):.2f}"  # noqa: E731
    return {"n": len(seeds), "seeds": str(len(seeds)), "ref_pos": avg(reference, "pos_mean"),
            "arm_pos": avg(arm, "pos_mean"), "arm_ft": avg(arm, "ft_pos_mean"), "ref_neg": avg(reference, "neg_mean"),
            "arm_neg": avg(arm, "neg_mean"), "ref_margin": f"{np.mean([margin(reference, k) for k in seeds]):.2f}",
            "arm_margin": f"{np.mean([margin(arm, k) for k in seeds]):.2f}", "tail": str(tail),
            "undone": all(mean[arm, k, "pos_mean"] > mean[reference, k, "pos_mean"]
                          and mean[arm, k, "ft_pos_mean"] >= mean[reference, k, "pos_mean"] for k in seeds),
            "crowded": all(mean[arm, k, "neg_mean"] > mean[reference, k, "neg_mean"]
                           and margin(arm, k) < margin(reference, k) for k in seeds)}


def moco_order_facts(aims: list[dict], data: str = "shapes") -> dict:
    """Chapter 4's run in context: MoCo v1's and v2's baselines on ``data`` (:func:`baseline_aims`), each as
    "mean ± 95 % CI" (``v1``, ``v2``), the fewer seeds of the two (``seeds``), and ``v2_below``: v2's mean below
    v1's, the reverse of the paper's order."""
    by = {a["setting"]: a for a in aims if a["data"] == data}
    if not {"v1 baseline", "v2 baseline"} <= set(by):
        return {"v2_below": None}
    v1, v2 = by["v1 baseline"], by["v2 baseline"]
    return {"v1": plus_minus(v1["mean"], v1["ci95"]), "v2": plus_minus(v2["mean"], v2["ci95"]),
            "seeds": str(min(v1["n_seeds"], v2["n_seeds"])), "v2_below": v2["mean"] < v1["mean"]}


def ft_kind(exp: Experiment, setting: str, profile: str) -> str:
    """What a setting's resolved config (base, shared and own overrides) does to the pairs: ``none`` without FT,
    ``late start`` for FT switched on after the first epoch (Table 6), else ``harder`` when it moves the query away
    from its key or a negative towards the query (positive extrapolation, eq. 3; negative extrapolation, Supp G.1;
    hard negatives, Supp G.2), ``negatives mixed`` for negative interpolation alone (Sec 4.2, re-normalised or
    not), ``other`` for the rest (e.g. Table 3's positive interpolation)."""
    ft = resolve(base_for(exp, profile), exp.overrides(setting, 0), profile).ft
    if not (ft.pos or ft.neg or ft.hard):
        return "none"
    if ft.start_epoch > 0:
        return "late start"
    if (ft.pos and ft.pos_mode == "extrapolate") or (ft.neg and ft.neg_mode == "extrapolate") or ft.hard:
        return "harder"
    return "negatives mixed" if ft.neg and not ft.pos else "other"


def _sign_word(word: str) -> str:
    """A sign-only verdict's word in the momentum paragraph's three groups: seen (``replicated``), ``not
    replicated`` (the other side), or ``inconclusive`` (an interval that holds zero, or too few seeds)."""
    return {1: "replicated", -1: "not replicated"}.get(verdicts.side(word), "inconclusive")


def momentum_facts(exp: Experiment, records: list[dict]) -> dict:
    """Table 1's runs (eq. 2's momentum sweep) as facts for chapter 5's authored reading: the seeds per momentum;
    where readout peaks against the random-init encoder, and the frozen key encoder's (m = 1) readout; the momenta
    the paper says learn, grouped by their sign-only verdict against the random-init encoder (``learn_replicated``,
    ``learn_inconclusive``, ``learn_not``: momenta, comma-separated); per momentum the paper says collapses (in order,
    ``collapse_m_<i>``, ``collapse_readout_<i>``, ``collapse_diff_<i>``, ``collapse_verdict_<i>``) and grouped
    (``collapse_replicated`` ...); each learning momentum against the largest collapsing one (``edge``), paired by
    seed (``edge_above``, ``edge_undecided``, ``edge_below``), with the first learner's gap (``first``,
    ``step_diff``, ``step_seeds``, ``step``: its sign word); on real images, each momentum against the raw-pixel
    probe, paired by run (``probe``, ``pixels_above`` ...). Entries that are not strings are the checks' (:data:`CHECKS`)."""
    rows: dict[str, dict] = {}
    for r in table_rows(exp, records):  # each momentum's own row (its sanity check), not its ordering claims
        rows.setdefault(r["setting"], r)
    out: dict = {"n": len(rows)}
    if not rows:
        return out

    def named(settings: list[str]) -> str:
        return ", ".join(s.removeprefix("m=") for s in settings)

    def momentum(s: str) -> float:
        return float(s.removeprefix("m="))

    def sides(gaps_of) -> dict[str, list[str]]:  # the tables' rule (verdict) on paired gaps, with "above" as the claim
        side: dict[str, list[str]] = {"replicated": [], "inconclusive": [], "not replicated": []}
        for s, gap in gaps_of.items():
            side[_sign_word(verdicts.judge(Claim(s, "reference", direction=1), gap).word)].append(s)
        return side

    peak = max(rows, key=lambda s: rows[s]["mean"])
    said_learn = [s for s, r in rows.items() if r["claim"].startswith("learns")]
    said_collapse = [s for s, r in rows.items() if r["claim"].startswith("collapses")]
    n_seeds = sorted({r["n_seeds"] for r in rows.values()})
    out.update({"seeds": " to ".join(map(str, n_seeds[::max(1, len(n_seeds) - 1)])), "min_seeds": min(n_seeds),
                "peak": peak.removeprefix("m="), "peak_readout": plus_minus(rows[peak]["mean"], rows[peak]["ci95"]),
                "random": fixed(float(np.mean([r["random_init_mean"] for r in rows.values()])))})
    if "m=1.0" in rows:
        out["frozen_readout"] = plus_minus(rows["m=1.0"]["mean"], rows["m=1.0"]["ci95"])
    for word in ("replicated", "inconclusive", "not replicated"):
        key = word.replace(" ", "_").replace("not_replicated", "not")
        out[f"learn_{key}"] = named([s for s in said_learn if _sign_word(rows[s]["verdict"]) == word])
        out[f"collapse_{key}"] = named([s for s in said_collapse if _sign_word(rows[s]["verdict"]) == word])
    out["collapse_few_seeds"] = named([s for s in said_collapse if rows[s]["n_seeds"] < MIN_SEEDS])
    for i, s in enumerate(said_collapse):
        out.update({f"collapse_m_{i}": s.removeprefix("m="),
                    f"collapse_readout_{i}": plus_minus(rows[s]["mean"], rows[s]["ci95"]),
                    f"collapse_diff_{i}": plus_minus(rows[s]["diff_mean"], rows[s]["diff_ci95"], signed=True),
                    f"collapse_verdict_{i}": rows[s]["verdict"]})
    if said_collapse and said_learn:  # the paper's boundary: readout steps up between its last collapse and first learner
        edge, first = max(said_collapse, key=momentum), min(said_learn, key=momentum)
        gaps = {s: pair(by_seed(records, s), by_seed(records, edge)) for s in sorted(said_learn, key=momentum)}
        side = sides(gaps)
        gap = gaps[first]
        out.update({"edge": named([edge]), "first": named([first]), "edge_above": named(side["replicated"]),
                    "edge_undecided": named(side["inconclusive"]), "edge_below": named(side["not replicated"]),
                    "step_diff": plus_minus(gap.mean, gap.ci95, signed=True), "step_seeds": str(gap.n),
                    "step_n": gap.n, "step": _sign_word(verdicts.judge(Claim(first, edge, direction=1), gap).word)})
    pixels = [r for r in records if "raw_pixels_linear_top1" in r]
    if pixels:  # real images: the probe on the raw pixels is the bar an encoder must clear (paired by run)
        side = sides({s: pair(by_seed(pixels, s), by_seed(pixels, s, "raw_pixels_linear_top1")) for s in rows})
        out.update({"probe": fixed(float(np.mean([r["raw_pixels_linear_top1"] for r in pixels]))),
                    "pixels_above": named(side["replicated"]), "pixels_undecided": named(side["inconclusive"]),
                    "pixels_below": named(side["not replicated"])})
    return out


def _empty(*keys: str):
    """A check that the comma-separated momenta of each of ``keys`` are none (the authored text names none)."""
    def check(f: dict) -> str | None:
        bad = [f"{k}: {f.get(k)}" for k in keys if f.get(k, "")]
        return "; ".join(bad) or None
    return check


def _all_three_seeds(f: dict) -> str | None:
    return None if f["n"] and f["min_seeds"] >= MIN_SEEDS else "a momentum has fewer than 3 seeds"


def _step_not_seen(f: dict) -> str | None:
    if "step" not in f or f["step_n"] < MIN_SEEDS:
        return "the step from collapse to learning is undecided"
    return None if f["step"] == "inconclusive" else f"the step at m = {f['first']}: {f['step']}"


def score_ends_facts(metrics: dict[str, dict], seed: int, window: int = 100) -> dict:
    """Where Supp A's statistics end in each momentum's run (one seed; means over the last ``window`` steps of the
    raw cosines), for chapter 5: the momenta whose Mean(neg) ends highest (``hi``) and lowest (``lo``) with those
    values, and Mean(pos) of a frozen key encoder (m = 1, ``frozen``) against the other momenta's range.
    ``metrics`` maps a setting ("m=0.9") to its run's metrics."""
    out: dict = {"window": str(window), "seed": str(seed), "n": len(metrics)}
    if not metrics:
        return out
    ends = {s: {k: float(np.mean(np.asarray(m[k])[-window:])) for k in ("pos_mean", "neg_mean")} for s, m in metrics.items()}
    hi = max(ends, key=lambda s: ends[s]["neg_mean"])
    lo = min(ends, key=lambda s: ends[s]["neg_mean"])
    out.update({"hi": hi.removeprefix("m="), "hi_neg": f"{ends[hi]['neg_mean']:.2f}", "lo": lo.removeprefix("m="),
                "lo_neg": f"{ends[lo]['neg_mean']:.2f}"})
    others = [e["pos_mean"] for s, e in ends.items() if s != "m=1.0"]
    if "m=1.0" in ends and others:
        frozen = ends["m=1.0"]["pos_mean"]
        out.update({"frozen_pos": f"{frozen:.2f}", "others_pos_lo": f"{min(others):.2f}",
                    "others_pos_hi": f"{max(others):.2f}", "frozen_agrees_least": frozen < min(others)})
    return out


def harder_positive_facts(metrics: Mapping[str, Mapping[int, Mapping[str, np.ndarray]]], easy: str = "m=0.9",
                          hard: str = "m=0.99") -> dict:
    """Sec 3.3, "Hard positive boosts performance": raising the momentum from 0.9 to 0.99 turns easy positive pairs
    (Mean(pos) near 0.9) into hard ones (near 0.7), and Table 1's readout rises with it. ``metrics`` maps a setting to
    ``{seed: run metrics}``. Facts, over the seeds both settings hold: each setting's Mean(pos) averaged over its
    whole run, then over the seeds (``pos_easy``, ``pos_hard``), the seeds (``n``), and ``harder``: True when in every
    seed the ``hard`` run's Mean(pos) lies below the ``easy`` run's."""
    seeds, run_mean = _run_means(metrics, (easy, hard), ("pos_mean",))
    if not seeds:
        return {"n": 0, "harder": False}
    return {"n": len(seeds), "seeds": str(len(seeds)), "easy": easy.removeprefix("m="), "hard": hard.removeprefix("m="),
            "pos_easy": f"{np.mean([run_mean[easy, k, 'pos_mean'] for k in seeds]):.2f}",
            "pos_hard": f"{np.mean([run_mean[hard, k, 'pos_mean'] for k in seeds]):.2f}",
            "harder": all(run_mean[hard, k, "pos_mean"] < run_mean[easy, k, "pos_mean"] for k in seeds)}


METHOD_ARMS = ("simclr +pos", "simclr +neg", "simclr +both", "simclr +both_dim", "byol +pos", "simsiam +pos",
               "swav +pos")  # chapter 10's claims, each against its method's baseline


def methods_facts(rows: list[dict], last: Mapping[str, Mapping[str, float]], negatives: int) -> dict:
    """Chapter 10's reading of the other methods: per arm of :data:`METHOD_ARMS` (``simclr_pos``, ``byol_pos``, ...)
    its paired difference ± 95 % interval from ``rows`` (results/summary.csv), the paper's effect (``<arm>_paper``)
    and verdict (``<arm>_word``); each method's baseline (``<method>_base``); ``last`` maps a setting to its lowest
    seed's last-step ``pos_mean``, ``neg_mean`` and ``loss``; ``negatives``: SimCLR's in-batch negatives per anchor
    (2M - 2), so ``constant_loss`` = ln(negatives + 1) is the InfoNCE loss of a constant encoder (eq. 1: every logit
    equal)."""
    out: dict = {"negatives": str(negatives), "constant_loss": f"{math.log(negatives + 1):.2f}",
                 "constant_value": math.log(negatives + 1), "last": last}
    for arm in METHOD_ARMS:
        key = arm.replace(" +", "_")
        row = next((r for r in rows if r["setting"] == arm and r.get("reference", "").endswith("baseline")), None)
        if row is None:
            out[f"{key}_word"] = NOT_RUN
            continue
        out |= {key: plus_minus(float(row["diff_mean"]), float(row["diff_ci95"] or "nan"), signed=True),
                f"{key}_paper": fixed(float(row["effect"]), 2, signed=True), f"{key}_word": row["verdict"]}
    for method in ("simclr", "byol", "simsiam", "swav"):
        base = next((r for r in rows if r["setting"] == f"{method} baseline"), None)
        out[f"{method}_base"] = plus_minus(float(base["mean"]), float(base["ci95"])) if base else NOT_RUN
    random_init = [float(r["random_init_mean"]) for r in rows if r["setting"] in ("byol baseline", "simsiam baseline")]
    out["random_init"] = fixed(float(np.mean(random_init))) if random_init else NOT_RUN
    weak = [a["gain_met"] for a in baseline_aims(rows) if a["setting"] in ("byol baseline", "simsiam baseline")]
    out["weak"] = len(weak) == 2 and not any(weak)  # both miss the bar this book sets for a baseline
    for arm in ("simclr +pos", "swav +pos"):
        if arm in last:
            key = arm.replace(" +", "_")
            out |= {f"{key}_last_{k}": f"{last[arm][k]:.2f}" for k in ("pos_mean", "neg_mean", "loss")}
    return out


def _words(words: Mapping[str, str]):
    """Each arm's verdict (``<arm>_word`` in :func:`methods_facts`) is the word named."""
    def check(f: Mapping) -> str | None:
        bad = [f"{k}: {f.get(f'{k}_word')}" for k, w in words.items() if f.get(f"{k}_word") != w]
        return "; ".join(bad) or None
    return check


def _simclr_constant(f: Mapping) -> str | None:
    """SimCLR +pos ends as a constant encoder: Mean(pos) and Mean(neg) above 0.95, the loss within 0.05 of
    ln(negatives + 1)."""
    last = f["last"].get("simclr +pos")
    if last is None:
        return "simclr +pos has no stored run"
    ok = min(last["pos_mean"], last["neg_mean"]) > 0.95 and abs(last["loss"] - f["constant_value"]) < 0.05
    return None if ok else f"simclr +pos ends at {dict(last)}, against a constant encoder's loss {f['constant_loss']}"


def _swav_short_of_collapse(f: Mapping) -> str | None:
    last = f["last"].get("swav +pos")
    return None if last is not None and last["neg_mean"] < 0.9 else f"swav +pos ends at {last}"


METHOD_CHECKS = {  # chapter 10's reading (methods_facts)
    "positive extrapolation reverses SimCLR": _words({k: verdicts.OPPOSITE for k in (
        "simclr_pos", "simclr_both", "simclr_both_dim")}),
    "SimCLR's +neg alone is undecided": _words({"simclr_neg": verdicts.UNDECIDED}),
    "SimCLR with +pos ends as a constant encoder": _simclr_constant,
    "without negatives nothing is decided": _words({"byol_pos": verdicts.UNDECIDED,
                                                    "simsiam_pos": verdicts.UNDECIDED}),
    "BYOL's and SimSiam's baselines miss the bar": lambda f: None if f["weak"] else (
        "BYOL's or SimSiam's baseline meets the bar (baseline_aims)"),
    "SwAV's +pos is reversed short of a collapse": lambda f: _words({"swav_pos": verdicts.OPPOSITE})(f) or
    _swav_short_of_collapse(f),
}


def claim_facts(rows: list[dict], table: str, setting: str) -> dict:
    """One claim of ``results/summary.csv`` (``rows``) as chapter 9's text quotes it: our paired difference ± 95 %
    interval (``diff``), the paper's effect (``effect``), ours over the paper's (``ratio``), the verdict
    (``verdict``); raw values for the checks: ``diff_value``, ``ci_value``, ``effect_value``, ``verdict_word``.
    Raises KeyError naming the table and setting when the summary holds no such claim."""
    row = next((r for r in rows if r["table"] == table and r["setting"] == setting and r.get("effect")), None)
    if row is None:
        raise KeyError(f"results/summary.csv holds no claim of {table} {setting!r}: run python -m ftcl_core summary")
    diff, ci, effect = float(row["diff_mean"]), float(row["diff_ci95"] or "nan"), float(row["effect"])
    return {"diff": plus_minus(diff, ci, signed=True), "effect": fixed(effect, signed=True),
            "ratio": fixed(float(row["ratio"]), 0), "verdict": row["verdict"],
            "diff_value": diff, "ci_value": ci, "effect_value": effect, "verdict_word": row["verdict"]}


def _beyond_the_paper(f: Mapping) -> str | None:
    """The whole interval lies past the paper's effect, on its side: ours is larger, not just as large."""
    if f["verdict_word"] != verdicts.LARGER:
        return f"the verdict is {f['verdict_word']}, not {verdicts.LARGER}"
    far = abs(f["diff_value"]) - f["ci_value"] > abs(f["effect_value"]) and f["diff_value"] * f["effect_value"] > 0
    return None if far else f"{f['diff']} does not lie wholly past the paper's {f['effect']}"


def _in_every_seed(flag: str):
    """A per-seed comparison holds in every one of at least :data:`MIN_SEEDS` seeds (facts ``n`` and ``flag``)."""
    return lambda f: (None if f.get("n", 0) >= MIN_SEEDS and f.get(flag) else
                      f"{f.get('n', 0)} seed(s); {flag} in every seed: {f.get(flag)}")


# the baselines below the bar that the book's words name (chapter 9, the findings): MoCo v2, SimSiam and SwAV in
# Table 7, BYOL in Supp E
NAMED_UNFIT = {("T7", "v2 baseline"), ("T7", "simsiam baseline"), ("T7", "swav baseline"), ("S-E", "byol baseline")}


def unfit_facts(rows: list[dict]) -> dict:
    """The paper's claims left out of the tallies for their baseline (:func:`unfit_baselines`): how many
    (``unfit_claims``) and the baselines (raw ``unfit``, a set of ``(table, setting)``)."""
    return {"unfit_claims": str(sum(tally(rows)["all"]["unfit"].values())), "unfit": set(unfit_baselines(rows))}


def _unfit_as_named(f: Mapping) -> str | None:
    return None if f["unfit"] == NAMED_UNFIT else f"below the bar: {sorted(f['unfit'])}, named: {sorted(NAMED_UNFIT)}"


CLAIM_CHECKS = {  # chapters 5 and 9: the reading of one claim (claim_facts)
    "the baselines below the bar are those named": _unfit_as_named,
    "tables share runs": lambda f: None if f["same"] and int(f["distinct"]) < int(f["rows"]) else (
        f"T2 alpha_ex=2.0 and T7 v1 +pos are {'one' if f['same'] else 'not one'} comparison; "
        f"{f['distinct']} distinct of {f['rows']} claim rows"),
    "larger than the paper's size": _beyond_the_paper,
    "undecided: the interval holds zero and the paper's effect": (
        lambda f: None if f["verdict_word"] == verdicts.UNDECIDED else f"the verdict is {f['verdict_word']}"),
    "matches: the interval holds the paper's effect and excludes zero": (
        lambda f: None if f["verdict_word"] == verdicts.MATCHES else f"the verdict is {f['verdict_word']}"),
}

CHECKS = {
    # chapter 5's reading of Table 1 (momentum_facts), on the shapes and on Fashion-MNIST
    "every momentum has 3 seeds": _all_three_seeds,
    "every learning momentum learns as the paper says": _empty("learn_inconclusive", "learn_not"),
    "the collapse is not reproduced": _empty("collapse_replicated", "collapse_inconclusive"),
    "the collapse is undecided": _empty("collapse_replicated", "collapse_not", "collapse_few_seeds"),
    "no learning momentum is below the collapse edge": _empty("edge_below"),
    "every learning momentum is above the collapse edge": _empty("edge_undecided", "edge_below"),
    "the step from collapse to learning is not seen": _step_not_seen,
    "the collapsing momenta are below the raw pixels": (
        lambda f: None if f.get("pixels_below") and not f.get("pixels_undecided") else
        f"below the pixels: {f.get('pixels_below')}; undecided: {f.get('pixels_undecided')}"),
    # chapter 5's score statistics (score_ends_facts)
    "MoCo v2's baseline reads below MoCo v1's": (  # moco_order_facts
        lambda f: None if f.get("v2_below") else f"v2 below v1: {f.get('v2_below')}"),
    "the encoder undoes the harder positive": _in_every_seed("undone"),  # undone_positive_facts
    "the encoder crowds the images together": _in_every_seed("crowded"),  # undone_positive_facts
    "a larger momentum makes the positives harder": _in_every_seed("harder"),  # harder_positive_facts
    "the frozen key encoder's views agree least": (
        lambda f: None if f.get("frozen_agrees_least") else "m = 1 does not end with the lowest Mean(pos)"),
}


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
    apply_bh(rows)
    return [{k: csv_number(v) for k, v in r.items() if not k.startswith("_")} for r in rows]


def comparison_key(row: dict) -> tuple:
    """What makes two rows one comparison: tables share runs (Table 7's v1 +pos is Table 2's alpha_ex=2.0, copied
    by :func:`sweep`), and a copied run's readouts are the source's to the last digit, so two rows whose data,
    recipe, means, intervals, seeds and paired difference agree are the same comparison."""
    return tuple(csv_number(row.get(k, "")) for k in ("data", "base", "mean", "ci95", "n_seeds", "diff_mean", "diff_ci95"))


def apply_bh(rows: list[dict]) -> None:
    """Fill ``q_value`` and ``verdict_bh`` of ``rows`` (:func:`table_rows`' rows, holding their ``_verdict``) in
    place: Benjamini-Hochberg over the family of the rows' claims that are not sanity checks
    (:attr:`~ftcl_core.study.results.claims.Claim.in_family`: differences, orderings, equivalences), each distinct
    comparison (:func:`comparison_key`) counted once; the linear readout only (the kNN verdicts are not adjusted).
    A pair with a seed whose two runs trained on different types of device (a CPU run against a GPU run: float
    rounding besides the effect) leaves the family: its q-value stays blank and its verdict is not adjusted. A pair on
    two CPU models stays in it, marked in ``mixed_seeds``."""
    family: dict[tuple, float] = {}

    def member(v) -> bool:
        return v is not None and v.claim.in_family and not v.paired.mixed_device_types

    for r in rows:
        v = r.get("_verdict")
        if member(v) and not math.isnan(v.p):
            family.setdefault(comparison_key(r) + (v.claim.kind, v.claim.margin), v.p)
    keys = list(family)
    q = dict(zip(keys, verdicts.benjamini_hochberg(list(family.values()))))
    for r in rows:
        v = r.get("_verdict")
        if member(v):
            key = comparison_key(r) + (v.claim.kind, v.claim.margin)
            r["q_value"] = q.get(key, math.nan)
            r["verdict_bh"] = verdicts.after_bh(v, r["q_value"])
            for p_alt in v.floor_p if key in family else ():  # the error floor's rule: half and twice the floor
                alt = verdicts.benjamini_hochberg([p_alt if k == key else family[k] for k in keys])[keys.index(key)]
                if verdicts.after_bh(v, alt) != r["verdict_bh"]:
                    r["floor_sensitive"] = "yes"


def unfit_baselines(rows: list[dict]) -> list[tuple[str, str]]:
    """The baselines (``(table, setting)``) of :func:`baseline_aims` below the bar this book sets for a baseline at the
    tables' budget (:data:`BASELINE_AIMS`: its gain over the random-init encoder, its seed spread): a claim measured
    against one of them is not judged in the tallies (:func:`tally`)."""
    return [(a["table"], a["setting"]) for a in baseline_aims(rows) if a["gain_met"] is False or a["spread_met"] is False]


def tally(rows: list[dict]) -> dict[str, dict[str, dict[str, int]]]:
    """Per table (and ``all``), the distinct claims (:func:`distinct_claims`) of ``rows`` by verdict word, the
    paper's claims (``ft``: every kind but sanity) apart from the ``sanity`` checks, before BH (``verdict``) and after
    it (``verdict_bh``), and the paper's claims that the error scale decided (``ft_errors``: ``scale`` is
    ``errors``, where the ceiling forbids the paper's point effect; their word is in ``ft`` too); the paper's claims
    against a baseline below the bar (:func:`unfit_baselines`) are counted apart (``unfit``), in none of the others:
    ``{table: {"ft": {word: n}, "ft_bh": {...}, "ft_errors": {...}, "sanity": {...}, "unfit": {...}}}``."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    unfit = set(unfit_baselines(rows))
    for table in ["all", *dict.fromkeys(r["table"] for r in rows)]:
        group = distinct_claims([r for r in rows if r["verdict"] != BASELINE and table in ("all", r["table"])])
        claims = [r for r in group if r.get("kind") != "sanity" and r.get("reference") != "random init"]
        ft = [r for r in claims if (r["table"], r.get("reference")) not in unfit]
        sanity = [r for r in group if r not in claims]
        on_errors = [r for r in ft if r.get("scale") == verdicts.ERRORS]
        out[table] = {"ft": {w: sum(r["verdict"] == w for r in ft) for w in verdicts.TALLY_WORDS},
                      "ft_bh": {w: sum(r.get("verdict_bh", r["verdict"]) == w for r in ft) for w in verdicts.TALLY_WORDS},
                      "ft_errors": {w: sum(r["verdict"] == w for r in on_errors) for w in verdicts.TALLY_WORDS},
                      "sanity": {w: sum(r["verdict"] == w for r in sanity) for w in verdicts.TALLY_WORDS},
                      "unfit": {w: sum(r["verdict"] == w for r in claims if r not in ft) for w in verdicts.TALLY_WORDS}}
    return out


def write_summary(profile: str = "cpu", folder: str | os.PathLike | None = None,
                  out: str | os.PathLike | None = None) -> Path:
    """Summarise every experiment file's stored runs into one CSV (``results/summary.csv`` for cpu)."""
    default = ROOT / "results" / "summary.csv" if writes_committed(profile) else profile_root(profile) / "summary.csv"
    target = Path(out) if out else default
    target.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(summary_rows(profile, folder))
    atomic_write_bytes(target, buf.getvalue().encode())
    return target


def summary_markdown(path: str | os.PathLike, folder: str | os.PathLike | None = None,
                     heading: str = "### {table}", fold: bool = False) -> str:
    """``summary.csv`` as one Markdown table per paper table, each with the commands that regenerate it.

    Columns: the setting, its verdict (see :func:`verdict`) and the verdict after Benjamini-Hochberg first, then ours
    (linear top-1, mean ± 95 % CI over seeds), seeds, the paper's number, the claim, and the paired difference
    against the reference.  ``fold``: each table behind its heading and its count of verdicts (an HTML
    ``<details>``, opened on demand; ``heading`` is then HTML, not Markdown).
    """
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
        title = heading.format(table=f"{table} ({label})" if label else table)
        if fold:  # the table opens on demand; its heading says what it holds
            tally = Counter(r["verdict"] for r in group if r["verdict"] != BASELINE)
            title = (f"<details><summary>{title}: " + (", ".join(f"{n} {v}" for v, n in tally.most_common()) or
                                                       "no claim") + "</summary>")
        def term(word: str, anchor: str) -> str:  # in the book, a header links its word to the glossary
            return f"[{word}](glossary.html#term-{anchor})" if fold else word

        out += [title, "",
                f"| setting | {term('verdict', 'verdict')} | {term('after BH', 'BH')} | ours | seeds | paper | claim | "
                f"Δ vs ref. | {term('paper Δ', 'paper')} | ours/paper | {term('q (BH)', 'BH')} |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in group:
            try:
                paper = f"{float(r['paper']):g}"
            except ValueError:  # "" or "collapse"
                paper = r["paper"]
            out.append(f"| {r['setting']} | {verdicts.row_label(r)} | "
                       f"{r.get('verdict_bh', '')} | {pm_cell(r['mean'], r['ci95'])} | {r['n_seeds']} | {paper} | "
                       f"{r['claim']} | {pm_cell(r['diff_mean'], r['diff_ci95'])} | "
                       f"{pm_cell(r.get('effect'), None, 2, signed=True)} | {pm_cell(r.get('ratio'), None, 2)} | "
                       f"{pm_cell(r.get('q_value'), None, 3)} |")
        cmds = ", ".join(f"`python -m ftcl_core sweep {f}`" for f in files.get((table, base)) or files.get((table, ""), []))
        out += ["", f"Regenerate: {cmds}", ""] + (["</details>", ""] if fold else [])
    return "\n".join(out)


def tables_without_runs(profile: str = "cpu", folder: str | os.PathLike | None = None) -> list[str]:
    """The experiment files with no stored run on their current recipe (a table just switched to a calibrated recipe,
    say), as ``"T7 (supp_e_byol, cpu_cal_byol)"``: :func:`write_summary` has no row for them, so a reader is told."""
    folder = Path(folder) if folder else ROOT / "experiments"
    waiting = []
    for path in sorted(folder.glob("*.yaml")):
        exp = Experiment.load(path)
        if ("gpu" if profile == "gpu" else "cpu") in exp.base and not load_records(path, profile):
            waiting.append(f"{exp.table} ({path.stem}, {Path(base_for(exp, profile)).stem})")
    return waiting


OPEN_FOLDERS = ("experiments", "experiments/diagnosis", "experiments/headroom")  # the book's questions (no calibration)


def open_runs(paths: list[str | os.PathLike] | None = None, profile: str = "cpu",
              root: str | os.PathLike | None = None) -> list[dict]:
    """What the experiment files at ``paths`` (default: every file of :data:`OPEN_FOLDERS`) ask for and the store
    (``root``) does not hold, one row per setting short of its seeds: ``table``, ``file``, ``setting``, ``planned``
    and ``stored`` (seed lists), ``missing`` (the seeds to train) and ``never`` (True for a setting
    :func:`table_facts` names as missing: no stored run at all). Files without a base for ``profile`` are skipped.
    Nothing is trained here."""
    if paths is None:
        paths = [str(p.relative_to(ROOT)) for d in OPEN_FOLDERS for p in sorted((ROOT / d).glob("*.yaml"))]
    rows = []
    for path in paths:
        exp = Experiment.load(path)
        if not _has_entry(exp.base, profile):
            continue
        records = load_records(path, profile, root)
        never = set(filter(None, table_facts(exp, profile, records)["missing"].split(", ")))
        for name in exp.settings:
            stored = sorted(r["seed"] for r in records if r["setting"] == name)
            missing = [s for s in exp.seeds if s not in stored]
            if missing:
                rows.append({"table": exp.table, "file": str(path), "setting": name, "planned": list(exp.seeds),
                             "stored": stored, "missing": missing, "never": name in never})
    return rows


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def distinct_claims(claims: list[dict]) -> list[dict]:
    """``claims`` (summary rows that make a claim) with each comparison kept once: tables share runs (Table 7's
    v1 +pos is Table 2's alpha_ex=2.0, copied by :func:`sweep`), and a copied run's readouts are the source's to
    the last digit, so two rows whose data, recipe, means, intervals and seeds all agree are the same comparison."""
    seen: dict[tuple, dict] = {}
    for r in claims:
        seen.setdefault(comparison_key(r) + (r.get("kind", ""), r.get("verdict", "")), r)
    return list(seen.values())


def shared_run_facts(rows: list[dict], a: tuple[str, str] = ("T2", "alpha_ex=2.0"),
                     b: tuple[str, str] = ("T7", "v1 +pos")) -> dict:
    """How many of ``rows`` (summary rows) make a claim (``rows``) and how many distinct comparisons they hold
    (``distinct``, :func:`distinct_claims`), and whether the rows ``a`` and ``b`` (table, setting) are one comparison
    (``same``: one set of runs listed under two tables)."""
    claims = [r for r in rows if r["verdict"] != BASELINE]
    pick = [next((r for r in claims if (r["table"], r["setting"]) == t), None) for t in (a, b)]
    same = None not in pick and comparison_key(pick[0]) == comparison_key(pick[1])
    return {"rows": str(len(claims)), "distinct": str(len(distinct_claims(claims))), "same": same}


def recipe_rows(cfg: RunConfig, keys: tuple[str, ...]) -> list[list[str]]:
    """``[key, value]`` rows of a run's config for the dotted ``keys`` (``"moco.tau"``), the few settings a reader
    needs to read a recipe; a key the config does not hold is a clear error."""
    flat = cfg.to_dict()
    rows = []
    for key in keys:
        section, _, name = key.partition(".")
        if section not in flat or name not in flat[section]:
            raise ConfigError(f"the config has no key {key!r}; see ftcl_core/config.py for its sections and fields.")
        rows.append([key, str(flat[section][name])])
    return rows
