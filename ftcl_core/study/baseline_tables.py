"""The tables of *Baselines and recipes* (``book/09c_baselines``), which glues no words: each claim's verdict per data set,
each verdict before and after calibration, the calibration's chosen trials and the baselines against the bar, as
table cells (the page's captions and words are written in the page; nothing here makes a sentence)."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from ftcl_core.study import calibration, experiment_file, readings, sweeps, table_verdicts
from ftcl_core.study.results.numbers import plus_minus
from ftcl_core.study.results.verdicts import MIN_SEEDS


def _data_name(d: str) -> str:
    return experiment_file.DATA_NAMES.get(d, d)


def across_table(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Claims tested on more than one data set (:func:`ftcl_core.study.table_verdicts.data_set_verdicts` of the
    summary ``rows``): a header and, per claim, its verdict on each data set with its seeds and recipe, and where it
    holds.  No rows while no table has runs on two data sets."""
    across = table_verdicts.data_set_verdicts(rows)
    data_sets = sorted({d for r in across for d in r["per_data"]})

    def data_cell(r: dict, d: str) -> str:
        if d not in r["per_data"]:
            return ""
        word, n = r["per_data"][d][:2]
        return f"{word} ({n} seeds, {r['recipes'][d] or 'own'} recipe)"

    return (["table", "setting", "claim", *map(_data_name, data_sets), "holds on"],
            [[r["table"], r["setting"], r["claim"], *(data_cell(r, d) for d in data_sets),
              ", ".join(_data_name(d) for d in r["holds_on"].split(", "))] for r in across])


def recipe_table(before: list[dict], rows: list[dict]) -> list[list[str]]:
    """Each claim rerun on a calibrated recipe (:func:`ftcl_core.study.table_verdicts.recipe_sensitivity` of the dated
    record ``before`` and the summary ``rows``): table, setting, claim, the verdict and paired difference on each
    recipe with its seeds, and whether the verdict changed ("too few seeds before" where the record decided nothing)."""
    def cell(v: tuple) -> str:
        word, diff, ci, n = v
        return f"{word}: {plus_minus(float(diff), float(ci) if ci else math.nan)} ({n} seeds)"

    def changed(r: dict) -> str:
        return "no" if not r["changed"] else "yes" if r["before"][3] >= MIN_SEEDS else "yes (too few seeds before)"

    return [[r["table"], r["setting"], r["claim"], cell(r["before"]), cell(r["after"]), changed(r)]
            for r in table_verdicts.recipe_sensitivity(before, rows)]


TRIAL_COLUMNS = ["method", "chosen trial (its overrides)", "validation kNN %", "seeds", "validation linear %",
                 "random init %", "gain (points)", "bar", "bar met", "effective rank at the end"]


def chosen_trials_table(trials: list[dict]) -> list[list[str]]:
    """Per method, the calibration's chosen trial (:func:`ftcl_core.study.calibration.choose`) against the bar a
    baseline is held to (:func:`~ftcl_core.study.calibration.chosen_aim`: a gain over the random-init encoder, or on
    real images the raw-pixel probe), named by its config overrides (its short name says the same, less exactly), with
    its features' effective rank at the last step (columns :data:`TRIAL_COLUMNS`)."""
    out = []
    for method, b in calibration.choose(trials).items():
        a = calibration.chosen_aim(b)
        bar = f"gain ≥ {a['need']:.0f}" if a["bar"] == "gain" else f"raw pixels {a['need']:.1f} %"
        out.append([method, b["knobs"], f"{b['val_knn']:.1f}", str(b["n_seeds"]), f"{b['val_linear']:.1f}",
                    f"{b['random_init_val_linear']:.1f}", f"{a['gain']:+.1f}", bar, "met" if a["met"] else "not met",
                    f"{calibration.final_erank(trials, method, b['trial']):.1f}"])
    return out


def v2_against_v1_table(aims: list[dict]) -> list[list[str]]:
    """Per data set with both, MoCo v1's and v2's baselines at the tables' budget and whether v2 ≥ v1 holds."""
    return [[_data_name(d), f"{v1:.1f}", f"{v2:.1f}", "met" if v2 >= v1 else "not met"]
            for d, (v1, v2) in readings.v2_against_v1(aims).items()]


SMOKE_TRIALS = ("table: CAL-moco_v2\nbase: {cpu: configs/cpu_moco_v2.yaml}\nseeds: [0]\n"
                "common: {train.epochs: 1, data.eval_split: val}\n"
                "settings:\n  recipe: {}\n  kaiming: {model.init: kaiming}\n")


def trials_for(profile: str) -> list[dict]:
    """The calibration trials the page shows: the stored cpu trials, or under the smoke profile two tiny trials
    trained into a temporary folder, so that CI runs the page's code."""
    if profile != "smoke":
        return calibration.trials(profile="cpu")
    tmp = Path(tempfile.mkdtemp())
    (tmp / "moco_v2.yaml").write_text(SMOKE_TRIALS)
    sweeps.sweep(tmp / "moco_v2.yaml", profile, progress=False)
    return calibration.trials(tmp, profile)
