"""``ft.start=auto`` against its baselines and against the fixed 30 % start (issue 66, item 2): facts and checks.

The rule (:class:`ftcl_core.ft.PlateauStart`) was chosen on the task with room's 30- and 120-epoch runs and frozen
in ``experiments/headroom/auto_start_v1.yaml`` with its predictions, before any auto run; the other settings are held
out (``auto_start_shapes_v1.yaml``, ``auto_start_fmnist_v1.yaml``).  Before FT switches on, an auto run is its
baseline, so the epoch its rule switches on at is known from the baseline's stored losses
(:meth:`~ftcl_core.ft.PlateauStart.replay`): :func:`facts` sets the epoch each auto run switched on at beside that
prediction, the auto run against its baseline, and the fixed 30 % start of the same setting against its own.
Compared, not claimed: the paper has no such rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ftcl_core.ft import PlateauStart
from ftcl_core.runs import RunDir
from ftcl_core.study import experiment_file, store
from ftcl_core.study.diagnosis import NOT_RUN, encoder_label
from ftcl_core.study.results.numbers import plus_minus
from ftcl_core.study.results.paired import paired_records
from ftcl_core.study.results.verdicts import MIN_SEEDS, UNDECIDED

EXPERIMENTS = experiment_file.ROOT / "experiments"


@dataclass(frozen=True)
class Setting:
    """One place the rule is tried: the auto arm and its baseline (``file``), and the fixed 30 % start there with
    its own baseline (``fixed_file``; None where no fixed start was trained), ``role`` "chosen on" (the rule's
    training set) or "held out"."""

    key: str
    label: str
    file: str
    auto: str
    baseline: str
    fixed_file: str | None
    fixed: str
    fixed_baseline: str
    role: str


SETTINGS = (
    Setting("map_30", "task with room, 30 epochs", "headroom/auto_start_v1.yaml", "auto 30", "baseline 30",
            "headroom/map_v1.yaml", "+both from 9 of 30", "baseline 30", "chosen on"),
    Setting("map_120", "task with room, 120 epochs", "headroom/auto_start_v1.yaml", "auto 120", "baseline 120",
            "headroom/map_v1.yaml", "+both from 36 of 120", "baseline 120", "chosen on"),
    Setting("map_240", "task with room, 240 epochs", "headroom/auto_start_v1.yaml", "auto 240", "baseline 240",
            "headroom/map_v1.yaml", "+both from 72 of 240", "baseline 240", "held out"),
    Setting("shapes_30", "shapes, 30 epochs", "headroom/auto_start_shapes_v1.yaml", "auto 30", "baseline 30",
            "table6_start_epoch.yaml", "start 9", "never", "held out"),
    Setting("shapes_120", "shapes, 120 epochs", "headroom/auto_start_shapes_v1.yaml", "auto 120", "baseline 120",
            "diagnosis/start_long_v1.yaml", "start 36", "never", "held out"),
    Setting("fmnist_30", "Fashion-MNIST, 30 epochs", "headroom/auto_start_fmnist_v1.yaml", "auto", "baseline",
            "table6_start_epoch_fmnist.yaml", "start 9", "never", "held out"),
    Setting("width_30", f"shapes, 30 epochs, {encoder_label('resnet10_w32')}", "headroom/auto_start_width_v1.yaml", "auto 30 w32",
            "baseline 30 w32", "headroom/auto_start_width_v1.yaml", "fixed 30 w32", "baseline 30 w32", "held out"),
)


def load() -> dict[str, list[dict]]:
    """Every file's stored run records (the committed runs; nothing here trains), by file."""
    files = {s.file for s in SETTINGS} | {s.fixed_file for s in SETTINGS if s.fixed_file}
    return {f: store.load_records(EXPERIMENTS / f, "cpu", experiment_file.STORED) for f in sorted(files)}


def switch_epoch(run: RunDir) -> int | None:
    """The epoch the rule of ``run``'s config switches FT on at, replayed on the run's own losses (the loss of the run
    without FT up to that epoch: an auto run's own, or its baseline's for the prediction); None if it never does."""
    rule = run.load_config().ft
    return PlateauStart.replay(epoch_losses(run), rule.auto_window, rule.auto_fraction)


def epoch_losses(run: RunDir) -> list[float]:
    """The stored run's mean training loss of each epoch."""
    m = run.load_metrics()
    epoch, loss = np.asarray(m["epoch"]), np.asarray(m["loss"], dtype=float)
    return [float(loss[epoch == e].mean()) for e in range(int(epoch.max()) + 1)]


def _side(p) -> str:
    if p.n < MIN_SEEDS:
        return UNDECIDED
    return "costs" if p.hi < 0 else "gains" if p.lo > 0 else "neither"


def _epochs(values: list[int | None]) -> str:
    return ", ".join("never" if v is None else str(v) for v in values) or NOT_RUN


def facts(records: Mapping[str, list[dict]] | None = None) -> dict:
    """For each :data:`SETTINGS` entry (``<key>_...``): the auto arm against its baseline (``diff``: points ± 95 %
    interval, ``n`` paired seeds, ``side``: "costs"/"gains" where 3 or more seeds put the interval wholly below/above
    0, "neither", "undecided"), the fixed 30 % start against its own baseline (``fixed_diff``, ``fixed_n``), the epoch
    each stored auto run switched on at (``switched``) beside its baseline's replay (``predicted``), and whether they
    agree within one epoch (``agree``); raw ``_value``/``_ci``/``_seeds`` and ``fixed_value``. ``records``: by file
    (:func:`load`)."""
    records = load() if records is None else records
    out: dict = {}
    offsets: list[int] = []
    gaps: list[float] = []
    for s in SETTINGS:
        rec, k = records[s.file], s.key
        p, fixed = paired_records(rec, s.auto, s.baseline), paired_records(records.get(s.fixed_file, []), s.fixed,
                                                                         s.fixed_baseline)
        autos = {r["seed"]: r for r in rec if r["setting"] == s.auto and r.get("dir")}
        bases = {r["seed"]: r for r in rec if r["setting"] == s.baseline and r.get("dir")}
        seeds = sorted(set(autos) & set(bases))
        switched = [switch_epoch(RunDir(autos[seed]["dir"])) for seed in seeds]
        # the prediction: the auto run's config's rule, replayed on its baseline's losses
        rules = [RunDir(autos[seed]["dir"]).load_config().ft for seed in seeds]
        predicted = [PlateauStart.replay(epoch_losses(RunDir(bases[seed]["dir"])), r.auto_window, r.auto_fraction)
                     for seed, r in zip(seeds, rules)]
        agree = all(a is not None and b is not None and abs(a - b) <= 1 for a, b in zip(switched, predicted))
        offsets += [abs(a - b) for a, b in zip(switched, predicted) if a is not None and b is not None]
        for seed, a, b in zip(seeds, switched, predicted):  # how far apart the losses the rule read were
            upto = min(x for x in (a, b, s_epochs(rec, s.baseline, seed)) if x is not None)
            la, lb = epoch_losses(RunDir(autos[seed]["dir"])), epoch_losses(RunDir(bases[seed]["dir"]))
            gaps.append(max(abs(x - y) for x, y in zip(la[:upto], lb[:upto])))
        out |= {f"{k}_label": s.label, f"{k}_role": s.role, f"{k}_n": str(p.n), f"{k}_seeds": p.n,
                f"{k}_diff": plus_minus(p.mean, p.ci95, signed=True) if p.n else NOT_RUN, f"{k}_value": p.mean,
                f"{k}_ci": p.ci95, f"{k}_side": _side(p), f"{k}_fixed_n": str(fixed.n),
                f"{k}_fixed_diff": plus_minus(fixed.mean, fixed.ci95, signed=True) if fixed.n else NOT_RUN,
                f"{k}_fixed_value": fixed.mean, f"{k}_fixed_ci": fixed.ci95, f"{k}_switched": _epochs(switched),
                f"{k}_predicted": _epochs(predicted), f"{k}_agree": agree}
    out |= {"runs": str(len(offsets)), "agree": str(sum(o <= 1 for o in offsets)), "max_off": str(max(offsets, default=0)),
            "agree_all": all(o <= 1 for o in offsets), "max_loss_gap": max(gaps, default=0.0),
            "loss_gap": f"{max(gaps, default=0.0):.2f}"}
    decided = [s.key for s in SETTINGS if out[f"{s.key}_seeds"] >= MIN_SEEDS]
    out["decided"] = str(len(decided))
    out["decided_keys"] = decided
    out["settings"] = str(len(SETTINGS))
    return out


def s_epochs(records: list[dict], setting: str, seed: int) -> int | None:
    """The epochs of a stored run of ``setting`` and ``seed`` among ``records`` (None if none)."""
    run = next((r for r in records if r["setting"] == setting and r["seed"] == seed and r.get("dir")), None)
    return RunDir(run["dir"]).load_config().train.epochs if run else None


def rows(f: Mapping) -> list[list[str]]:
    """The table of :data:`SETTINGS`: setting, chosen on / held out, epochs switched on (predicted), auto minus its
    baseline, the fixed 30 % start minus its own, and the paired seeds."""
    return [[f[f"{s.key}_label"], f[f"{s.key}_role"], f"{f[f'{s.key}_switched']} ({f[f'{s.key}_predicted']})",
             f[f"{s.key}_diff"], f[f"{s.key}_fixed_diff"], f[f"{s.key}_n"]] for s in SETTINGS]


def _never_costs(f: Mapping) -> str | None:
    bad = [k for k in f["decided_keys"] if f[f"{k}_side"] == "costs"]
    return f"auto costs readout on {', '.join(bad)}" if bad else None


def _some_switch_away(f: Mapping) -> str | None:
    return "all switched within an epoch of the replay" if f["agree_all"] else None


def _short(f: Mapping) -> str | None:
    short = [s.key for s in SETTINGS if f[f"{s.key}_seeds"] < MIN_SEEDS]
    return f"below {MIN_SEEDS} paired seeds: {', '.join(short)}" if short else None


def _no_gain_where_fixed_gains(key: str):
    def check(f: Mapping) -> str | None:
        if f[f"{key}_seeds"] < MIN_SEEDS or f[f"{key}_side"] != "neither":
            return f"{key}: auto reads {f[f'{key}_diff']} ({f[f'{key}_side']}), not an interval that holds 0"
        lo = f[f"{key}_fixed_value"] - f[f"{key}_fixed_ci"]
        return None if lo > 0 else f"{key}: the fixed start reads {f[f'{key}_fixed_diff']}, not a gain"
    return check


def _late_in_short_runs(f: Mapping) -> str | None:
    early = [(s.key, e) for s in SETTINGS if s.key.endswith("_30") for e in f[f"{s.key}_switched"].split(", ")
             if e.isdigit() and int(e) <= 15]
    return f"switched on by epoch 15 of 30: {early}" if early else None


CHECKS = {
    "auto-never-costs": _never_costs,  # the aim: no decided setting reads a cost
    "auto-some-runs-switch-away-from-their-baselines-replay": _some_switch_away,
    # the losses the rule read in an auto run and in its baseline differ little before the switch (under a quarter)
    "auto-loss-gaps-small": lambda f: None if f["max_loss_gap"] < 0.25 else f"a loss gap of {f['loss_gap']}",
    "auto-every-setting-holds-its-seeds": _short,  # the text reports every setting as decided or not
    "auto-no-gain-where-the-fixed-start-gains-on-fashion-mnist": _no_gain_where_fixed_gains("fmnist_30"),
    "auto-no-gain-where-the-fixed-start-gains-on-the-shapes-at-120": _no_gain_where_fixed_gains("shapes_120"),
    # where the rule switches on in a run of 120 epochs: before the fixed start's 30 %, after a tenth
    "auto-switches-before-30-percent-of-120-epochs": lambda f: None if all(
        12 < int(e) < 36 for e in f["shapes_120_switched"].split(", ") if e.isdigit()) else (
        f"shapes at 120 epochs switched at {f['shapes_120_switched']}"),
    "auto-switches-past-half-of-a-30-epoch-run": _late_in_short_runs,
}
