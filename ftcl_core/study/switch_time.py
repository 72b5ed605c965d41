"""When FT switches on (issue 66): the separating experiment's facts and the checks that bind chapter 11's words on it.

The map confounds the crowding with the clock: every cell that crowds the images switches FT on earlier in its run's
steps than every cell that does not. :data:`SWITCH` (its predictions committed before its runs) switches FT on at the
30-epoch late start's step in longer runs (:data:`ARMS`), once with +pos held back while the images crowd; each arm
is paired by seed with the map's baseline of its length.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ftcl_core.runs import RunDir
from ftcl_core.study import experiment_file
from ftcl_core.study.diagnosis import NOT_RUN
from ftcl_core.study.headroom_task import crowding, setting, steps_per_epoch
from ftcl_core.study.results import verdicts
from ftcl_core.study.results.numbers import fixed, grouped, plus_minus
from ftcl_core.study.results.paired import paired_records
from ftcl_core.study.results.verdicts import MIN_SEEDS

SWITCH = experiment_file.ROOT / "experiments" / "headroom" / "switch_v1.yaml"  # issue 66: the crowding against the clock
# the separating experiment's arms: key -> (setting, length in epochs, the epoch FT switches on)
ARMS = {"from_9_of_120": ("+both from 9 of 120", 120, 9), "from_18_of_120": ("+both from 18 of 120", 120, 18),
        "from_9_of_240": ("+both from 9 of 240", 240, 9),
        "held_9_of_120": ("+both held back from 9 of 120", 120, 9)}  # ft.pos_gate: +pos held back while crowded


def facts(map_records: list[dict], switch_records: list[dict], tail: int = 100) -> dict:
    """The separating experiment of issue 66 (:data:`SWITCH`, its predictions committed before its runs): each arm of
    :data:`ARMS` against the map's baseline of the same length and seed (``switch_<key>_diff``: points ± 95 %
    interval, ``_n`` paired seeds, ``_step`` the optimiser step FT switches on at; raw ``_value``, ``_ci``,
    ``_seeds``), its side (``_side``: "costs" or "gains" where 3 or more paired seeds put the interval wholly on that
    side of 0, "neither" where it holds 0, "undecided" below 3 seeds), and whether it crowds the images as it
    switches on (``switch_<key>_crowd_...``, as
    :func:`~ftcl_core.study.headroom.crowding_facts`). ``switch_planned``: the seeds the file plans (raw
    ``switch_planned_seeds``). Compared, not claimed: the paper has no such arm."""
    records = [*switch_records, *map_records]
    planned = len(experiment_file.Experiment.load(SWITCH).seeds)
    per_epoch, out = steps_per_epoch(), {"switch_planned": str(planned), "switch_planned_seeds": planned}
    for key, (name, length, start) in ARMS.items():
        p, k = paired_records(records, name, setting("baseline", length)), f"switch_{key}"
        side = (verdicts.UNDECIDED if p.n < MIN_SEEDS else "costs" if p.hi < 0 else "gains" if p.lo > 0
                else "neither")
        out |= {f"{k}_diff": plus_minus(p.mean, p.ci95, signed=True) if p.n else NOT_RUN, f"{k}_n": str(p.n),
                f"{k}_value": p.mean, f"{k}_ci": p.ci95, f"{k}_seeds": p.n, f"{k}_side": side,
                f"{k}_step": grouped(start * per_epoch)}
        runs = {r["seed"]: r for r in records if r["setting"] == name and r.get("dir")}
        bases = {r["seed"]: r for r in records if r["setting"] == setting("baseline", length) and r.get("dir")}
        pairs = {s: (RunDir(runs[s]["dir"]).load_metrics(), RunDir(bases[s]["dir"]).load_metrics())
                 for s in sorted(set(runs) & set(bases))}
        out |= crowding(f"{k}_crowd", pairs, start, length, tail)
    # E1's own comparison: the later switch of the same length against the earlier, paired by seed; E3's: the arm
    # with +pos held back while crowded against the same switch without the gate
    for key, (arm, ref) in {"later": ("from_18_of_120", "from_9_of_120"), "held": ("held_9_of_120", "from_9_of_120")}.items():
        p = paired_records(records, ARMS[arm][0], ARMS[ref][0])
        out |= {f"switch_{key}_diff": plus_minus(p.mean, p.ci95, signed=True) if p.n else NOT_RUN,
                f"switch_{key}_n": str(p.n), f"switch_{key}_seeds": p.n, f"switch_{key}_side": verdicts.UNDECIDED
                if p.n < MIN_SEEDS else "costs" if p.hi < 0 else "gains" if p.lo > 0 else "neither"}
    out |= _held_back_share(records, per_epoch)
    return out


def _held_back_share(records: list[dict], per_epoch: int) -> dict:
    """How often the gate of the held-back arm (``ft.pos_gate``) held +pos back over the first tenth of the run after
    its switch: the share of those steps whose logged positive score after FT equals the raw one (+neg leaves the
    positive as it is), averaged over its seeds (``switch_held_share``, percent; raw ``_value``)."""
    name, length, start = ARMS["held_9_of_120"]
    first, tenth = start * per_epoch, length * per_epoch // 10
    shares = []
    for r in records:
        if r["setting"] == name and r.get("dir"):
            m = RunDir(r["dir"]).load_metrics()
            ft_pos, raw = (np.asarray(m[k], dtype=float)[first:first + tenth] for k in ("ft_pos_mean", "pos_mean"))
            shares.append(float(np.isclose(ft_pos, raw, rtol=0.0, atol=1e-6).mean()))
    value = 100 * float(np.mean(shares)) if shares else math.nan
    return {"switch_held_share": fixed(value, 0) if shares else NOT_RUN, "switch_held_share_value": value}


def _switch_short(key: str):
    """The separating experiment's arm ``key`` holds fewer paired seeds than its file plans (the words say how many
    and give no verdict of the whole arm)."""
    def check(f: Mapping) -> str | None:
        n = f[f"switch_{key}_seeds"]
        return None if n < f["switch_planned_seeds"] else f"switch_{key} holds all {n} planned seeds: report its verdict"
    return check


def _switch_below(key: str, gain: float):
    """The separating experiment's arm ``key`` holds the seeds its file plans and its whole 95 % interval lies below
    ``gain`` points (a prediction of at least that gain is refuted)."""
    def check(f: Mapping) -> str | None:
        k = f"switch_{key}"
        if f[f"{k}_seeds"] < f["switch_planned_seeds"]:
            return f"{k}: {f[f'{k}_seeds']} of {f['switch_planned']} planned paired seeds"
        top = f[f"{k}_value"] + f[f"{k}_ci"]
        return None if top < gain else f"{k}: {f[f'{k}_diff']} reaches {top:+.1f}, not below {gain:+.1f}"
    return check


def _switch_crowds(key: str):
    """The separating experiment's arm ``key`` crowds the images as FT switches on (:func:`facts`)."""
    def check(f: Mapping) -> str | None:
        word = f[f"switch_{key}_crowd_word"]
        return None if word == "crowds" else f"switch_{key} after the switch: {word}"
    return check


def _switch_spreads(key: str):
    """The separating experiment's arm ``key`` does not crowd the images as FT switches on, in any seed."""
    def check(f: Mapping) -> str | None:
        word = f[f"switch_{key}_crowd_word"]
        return None if word == "spread" else f"switch_{key} after the switch: {word}"
    return check


def _switch_side(key: str, side: str):
    """The separating experiment's arm ``key`` (:data:`ARMS`) holds the seeds its file plans and reads
    ``side`` ("costs", "gains", "neither") against its baseline (:func:`facts`)."""
    def check(f: Mapping) -> str | None:
        k = f"switch_{key}"
        if f[f"{k}_seeds"] < f["switch_planned_seeds"]:
            return f"{k}: {f[f'{k}_seeds']} of {f['switch_planned']} planned paired seeds"
        return None if f[f"{k}_side"] == side else f"{k}: {f[f'{k}_diff']} {f[f'{k}_side']}, not {side}"
    return check


def _switch_held_against_ungated(f: Mapping) -> str | None:
    """The held-back arm (``ft.pos_gate``), at the seeds its file plans, crowds less than the same switch without
    the gate and costs less than it, paired by seed (its interval wholly above 0)."""
    if f["switch_held_seeds"] < f["switch_planned_seeds"]:
        return f"switch_held: {f['switch_held_seeds']} of {f['switch_planned']} planned paired seeds"
    held, ungated = (f[f"switch_{k}_crowd_ft"] for k in ("held_9_of_120", "from_9_of_120"))
    try:
        problems = [] if float(held) < float(ungated) else [f"crowd {held} >= {ungated}"]
    except ValueError:  # a crowding not measured (no stored curves): nothing to compare
        problems = [f"crowd {held} vs {ungated}"]
    problems += [] if f["switch_held_side"] == "gains" else [f"switch_held {f['switch_held_diff']}"]
    return "; ".join(problems) or None


CHECKS = {
    # FT switched on at the 30-epoch late start's step in longer runs
    "switch-from-9-of-120-costs": _switch_side("from_9_of_120", "costs"),
    "switch-from-9-of-120-crowds": _switch_crowds("from_9_of_120"),
    "switch-from-9-of-240-short-of-its-seeds": _switch_short("from_9_of_240"),
    "switch-from-9-of-240-holds-zero": lambda f: None if f["switch_from_9_of_240_side"] == "neither" else (
        f"switch_from_9_of_240: {f['switch_from_9_of_240_diff']} over {f['switch_from_9_of_240_n']} seeds reads "
        f"{f['switch_from_9_of_240_side']}, not an interval that holds zero"),
    "switch-from-9-of-240-holds-zero-at-its-seeds": _switch_side("from_9_of_240", "neither"),
    # E2, the time left, predicted a gain of at least 3 points here (experiments/headroom/switch_v1.yaml)
    "switch-from-9-of-240-below-the-time-lefts-gain": _switch_below("from_9_of_240", 3.0),
    "switch-from-9-of-240-crowds": _switch_crowds("from_9_of_240"),
    "switch-held-9-of-120-short-of-its-seeds": _switch_short("held_9_of_120"),
    # E3, the crowding, predicted no cost for the held-back arm (experiments/headroom/switch_v1.yaml)
    "switch-held-9-of-120-costs": _switch_side("held_9_of_120", "costs"),
    "switch-held-9-of-120-crowds": _switch_crowds("held_9_of_120"),
    "switch-held-crowds-and-costs-less-than-ungated": _switch_held_against_ungated,
    "switch-from-18-of-120-costs": _switch_side("from_18_of_120", "costs"),
    "switch-from-18-of-120-does-not-crowd": _switch_spreads("from_18_of_120"),
    # E1, the clock: the later switch costs less than the earlier one of the same length (paired by seed)
    "switch-later-costs-less": lambda f: None if f["switch_later_side"] == "gains" else (
        f"from 18 minus from 9 of 120: {f['switch_later_diff']} over {f['switch_later_n']} seeds reads "
        f"{f['switch_later_side']}, not above zero"),
}
