"""Experiment files, the sweep (resumable, skips finished runs), confidence intervals and verdicts."""

import csv
import math
import os
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ftcl_core.config import ConfigError
from ftcl_core.runs import RunDir
from ftcl_core.study import experiment_file, readings, store, sweeps, table_verdicts
from ftcl_core.study.checks import failures
from ftcl_core.study.results.numbers import fixed, plus_minus
from ftcl_core.study.results.paired import mean_ci95
from ftcl_core.study.results.verdicts import Claim, verdict_word

ROOT = experiment_file.ROOT


def test_mean_ci95_matches_the_t_interval():
    m, ci = mean_ci95([1.0, 2.0, 3.0])
    assert m == 2.0 and math.isclose(ci, 4.303 * 1.0 / math.sqrt(3), rel_tol=1e-6)
    assert math.isnan(mean_ci95([5.0])[1])


@given(st.floats(-1e4, 1e4, allow_nan=False), st.integers(0, 3), st.booleans())
@settings(max_examples=200, deadline=None)
def test_a_number_prints_alike_from_memory_and_from_summary_csv(x, digits, signed):
    # summary.csv keeps 6 decimals; a chapter formats the float it computed, chapter 9 the one it read back
    assert fixed(x, digits, signed) == fixed(float(f"{x:.6f}"), digits, signed)
    assert abs(float(fixed(x, digits, signed)) - x) <= 0.5 * 10 ** -digits + 1e-6


def test_ties_round_half_away_from_zero_whichever_way_the_float_leans():
    assert [fixed(v) for v in (0.35, 0.35000038, 0.34999999, -0.35)] == ["0.4", "0.4", "0.4", "-0.4"]
    assert plus_minus(0.35, 2.936886, signed=True) == "+0.4 ± 2.9" and plus_minus(79.35,
                                                                                                          math.nan) == "79.4"


@pytest.mark.parametrize("diff, ci, sign, n, want", [
    (2.0, 1.0, 1, 3, "matches the paper"), (-2.0, 1.0, 1, 3, "opposite to the paper"), (0.5, 1.0, 1, 3, "undecided"),
    (-2.0, 1.0, -1, 3, "matches the paper"), (2.0, float("nan"), 1, 1, "undecided"),
    (50.0, 1.0, 1, 2, "undecided"),  # two seeds decide nothing, however narrow their interval
])
def test_verdicts_of_a_claim_without_a_stated_size(diff, ci, sign, n, want):
    claim = Claim("a", "b", direction=sign)
    assert verdict_word(claim, diff - ci, diff + ci, n) == want


def test_every_experiment_file_resolves_for_every_profile():
    for path in sorted((experiment_file.ROOT / "experiments").glob("*.yaml")):
        exp = experiment_file.Experiment.load(path)
        assert re.fullmatch(r"(T[1-7]|S-[EFG])(-fmnist)?", exp.table), exp.table  # a paper table, on its data
        for overrides in exp.settings.values():
            for profile in ("smoke", "cpu", "gpu") if "gpu" in exp.base else ("smoke", "cpu"):
                experiment_file.resolve(experiment_file.base_for(exp, profile), {**overrides, "seed": 0}, profile)
        assert set(exp.compare) <= set(exp.settings) and set(exp.compare.values()) <= set(exp.settings)


def test_sweep_trains_missing_runs_once_and_summarises(tmp_path, monkeypatch):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path))
    exp_file = tmp_path / "tiny.yaml"
    exp_file.write_text(
        "table: T2\ntitle: tiny\nbase: {cpu: configs/smoke_moco_v2.yaml}\nseeds: [0, 1]\n"
        "settings:\n  baseline: {}\n  alpha_ex=2.0: {ft.pos: true}\npaper: {baseline: 71.1, alpha_ex=2.0: 72.8}\n"
    )
    monkeypatch.setattr(experiment_file, "SMOKE_OVERRIDES", experiment_file.SMOKE_OVERRIDES + ["train.epochs=1"])
    records = sweeps.sweep(exp_file, "smoke", progress=False)
    assert len(records) == 4
    stamps = {r["dir"]: (tmp_path / r["dir"] / "eval.json").stat().st_mtime for r in records}
    again = sweeps.sweep(exp_file, "smoke", progress=False)  # nothing retrained
    assert [r["linear_top1"] for r in again] == [r["linear_top1"] for r in records]
    assert all((tmp_path / d / "eval.json").stat().st_mtime == t for d, t in stamps.items())
    # a chapter asking for seed 0 of one setting also gets the other stored seed, and trains nothing
    shown = sweeps.collect(exp_file, "smoke", [0], ["alpha_ex=2.0"])
    assert [(r["setting"], r["seed"]) for r in shown] == [("alpha_ex=2.0", 0), ("alpha_ex=2.0", 1)]
    rows = table_verdicts.table_rows(experiment_file.Experiment.load(exp_file), store.load_records(exp_file, "smoke"))
    assert [r["verdict"] for r in rows][0] == "baseline" and rows[1]["reference"] == "baseline"
    assert rows[1]["n_seeds"] == 2 and not math.isnan(rows[1]["diff_ci95"])
    out = table_verdicts.write_summary("smoke", folder=tmp_path, out=tmp_path / "summary.csv")
    assert [(r["setting"], r["data"]) for r in csv.DictReader(out.open())] == [("baseline", "shapes"),
                                                                               ("alpha_ex=2.0", "shapes")]
    md = table_verdicts.summary_markdown(out, folder=tmp_path).splitlines()
    assert md[0].startswith("### ") and md[2].startswith("| setting |")
    assert md[4].startswith("| baseline |") and md[5].startswith("| alpha_ex=2.0 |")
    assert md[5].startswith(f"| alpha_ex=2.0 | {rows[1]['verdict']} |")  # the verdict second, where a reader looks
    folded = table_verdicts.summary_markdown(out, folder=tmp_path, heading="<b>{table}</b>", fold=True).splitlines()
    assert folded[0] == f"<details><summary><b>T2 (shapes, smoke_moco_v2)</b>: 1 {rows[1]['verdict']}</summary>"
    assert folded[1] == "" and folded[2].startswith("| setting | [verdict](glossary.html#term-verdict) |")
    assert "</details>" in folded
    assert any(line.startswith("Regenerate: `python -m ftcl_core sweep experiments/") for line in md)
    text = table_verdicts.format_table(experiment_file.Experiment.load(exp_file), store.load_records(exp_file,
                                                                                                    "smoke")).splitlines()
    assert text[2].endswith("baseline") and text[3].endswith(rows[1]["verdict"]) and " baseline " in text[3]

    # A second table whose baseline is the same config reuses the finished run instead of training it.
    other = tmp_path / "other.yaml"
    other.write_text("table: T4\ntitle: other\nbase: {cpu: configs/smoke_moco_v2.yaml}\nseeds: [1]\n"
                     "settings:\n  baseline: {}\npaper: {baseline: 71.1}\n")
    (copied,) = sweeps.sweep(other, "smoke", progress=False)
    source = next(r for r in records if r["setting"] == "baseline" and r["seed"] == 1)
    assert copied["linear_top1"] == source["linear_top1"]
    prov = RunDir(copied["dir"]).load_provenance()
    assert (tmp_path / copied["dir"] / prov["copied_from"]).resolve() == (tmp_path / source["dir"]).resolve()
    assert not RunDir(copied["dir"]).checkpoint.exists()

    # The plan (python -m ftcl_core plan) counts what a sweep would do, and does none of it.
    (row,) = sweeps.plan_rows([exp_file], "smoke")
    assert (row["runs"], row["stored"], row["stale"], row["copy"], row["train"]) == (4, 4, 0, 0, 0)
    third = tmp_path / "third.yaml"  # the first table's folders on another recipe, and a third seed
    third.write_text(exp_file.read_text().replace("seeds: [0, 1]", "seeds: [0, 1, 2]")
                     .replace("baseline: {}", "baseline: {optim.lr: 0.5}"))
    (row,) = sweeps.plan_rows([third], "smoke")
    assert (row["runs"], row["stored"], row["stale"], row["copy"], row["train"]) == (6, 2, 2, 0, 4)
    assert row["to_train"] == ["baseline seed 0", "baseline seed 1", "baseline seed 2", "alpha_ex=2.0 seed 2"]
    assert row["steps"] == 4 * sweeps.planned_steps(experiment_file.resolve("configs/smoke_moco_v2.yaml", {}, "smoke"))
    (row,) = sweeps.plan_rows([other], "smoke")  # its baseline seed 1, copied above, is stored now
    assert (row["stored"], row["copy"], row["train"]) == (1, 0, 0)
    fourth = tmp_path / "fourth.yaml"  # T3: seed 0 is a stored run's twin; seed 2 the twin of a run "third" trains
    fourth.write_text("table: T3\ntitle: fourth\nbase: {cpu: configs/smoke_moco_v2.yaml}\nseeds: [0, 2]\n"
                      "settings:\n  alpha_ex=2.0: {ft.pos: true}\npaper: {alpha_ex=2.0: 72.8}\n")
    third_row, row = sweeps.plan_rows([third, fourth], "smoke")
    assert (row["runs"], row["stored"], row["stale"], row["copy"], row["train"]) == (2, 0, 0, 2, 0)
    assert third_row["stale_runs"] == ["T2/baseline/seed0", "T2/baseline/seed1"]
    (row,) = sweeps.plan_rows([fourth], "smoke")  # without "third" in the plan, seed 2 is trained
    assert (row["copy"], row["train"], row["to_train"]) == (1, 1, ["alpha_ex=2.0 seed 2"])
    rate_cfg = experiment_file.resolve("configs/smoke_moco_v2.yaml", {}, "smoke")
    (row,) = sweeps.plan_rows([fourth], "smoke",
                                   rates={sweeps._rate_key(rate_cfg): [0.5 / rate_cfg.augment.out_size ** 2]})
    assert row["seconds"] == pytest.approx(0.5 * row["steps"])
    assert sorted(p.name for p in (tmp_path / "smoke").glob("*/*/seed*")) == ["seed0", "seed0", "seed1", "seed1", "seed1"]


def test_unknown_profile_and_setting_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="profile"):
        experiment_file.profile_root("laptop")
    with pytest.raises(ValueError, match="unknown setting"):
        sweeps.sweep("experiments/table1_momentum.yaml", "smoke", settings=["m=0.42"], progress=False)


def test_smoke_trains_every_setting_for_its_own_length_unless_the_setting_names_one():
    long = {"train.epochs": 120, "optim.milestones": [72, 96], "ft.pos": True}
    cfg = experiment_file.resolve("configs/cpu_cal_moco_v1.yaml", long, "smoke")
    assert cfg.train.epochs == 2 and cfg.ft.pos  # the smoke length, the setting's method
    assert experiment_file.resolve("configs/cpu_cal_moco_v1.yaml", long, "cpu").train.epochs == 120
    assert experiment_file.resolve("configs/cpu_cal_moco_v1.yaml", {"train.epochs": {"cpu": 120, "smoke": 3}},
                               "smoke").train.epochs == 3


def _records(values: dict[str, list[float]], rand: float = 20.0) -> list[dict]:
    return [{"setting": s, "seed": i, "linear_top1": v, "random_init_linear_top1": rand}
            for s, vals in values.items() for i, v in enumerate(vals)]


def test_claims_come_from_the_paper_numbers_or_the_claims_entry_and_nothing_else(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text("table: T7\nbase: {cpu: configs/cpu_moco_v1.yaml}\nsettings:\n  base: {}\n  a: {}\n  b: {}\n  c: {}\n"
                 "paper: {base: 70.0, a: 72.0, b: 69.0}\nclaims: {c: above}\n")
    rows = {r["setting"]: r for r in table_verdicts.table_rows(experiment_file.Experiment.load(f), _records(
        {"base": [50, 51, 52], "a": [60, 61, 62], "b": [60, 61, 62], "c": [40, 41, 42]}))}
    assert rows["base"]["verdict"] == "baseline"
    assert (rows["a"]["claim"], rows["a"]["verdict"]) == ("above base", "larger than the paper")  # +10 against +2
    assert (rows["b"]["claim"], rows["b"]["verdict"]) == ("below base", "opposite to the paper")
    assert (rows["c"]["claim"], rows["c"]["verdict"]) == ("above base", "opposite to the paper")
    f.write_text(f.read_text().replace("claims: {c: above}\n", ""))  # no number, no claim: nothing is claimed
    rows = {r["setting"]: r for r in table_verdicts.table_rows(experiment_file.Experiment.load(f), _records({"base": [50, 51],
                                                                                                      "c": [40, 41]}))}
    assert rows["c"]["verdict"] == "baseline" and rows["c"]["claim"] == "" and rows["c"]["diff_mean"] == -10


def test_table1_claims_collapse_or_learning_against_random_init(tmp_path):
    f = tmp_path / "t1.yaml"
    f.write_text("table: T1\nbase: {cpu: configs/cpu_moco_v1.yaml}\nsettings:\n  m=0: {}\n  m=0.9: {}\n  m=0.95: {}\n"
                 "paper: {m=0: collapse, m=0.9: 46.5}\n")
    rows = {r["setting"]: r for r in table_verdicts.table_rows(experiment_file.Experiment.load(f), _records(
        {"m=0": [15, 16, 17], "m=0.9": [40, 41, 42], "m=0.95": [40, 41, 42]}))}
    assert (rows["m=0"]["claim"], rows["m=0"]["verdict"]) == ("collapses (below random init)", "matches the paper")
    assert (rows["m=0.9"]["claim"], rows["m=0.9"]["verdict"]) == ("learns (above random init)", "matches the paper")
    assert rows["m=0.95"]["verdict"] == "baseline"  # the paper has no such row: no claim


@pytest.mark.parametrize("text, match", [
    ("table: T2\nbase: {cpu: c.yaml}\n", "lacks \\['settings'\\]"),
    ("table: T2\nbase: {cpu: c.yaml}\nsettings: {}\n", "at least one"),
    ("table: T2\nbase: {cpu: c.yaml}\nsettings: {a: {}}\npaper: {hard Beta(2,1): 1}\n", "unknown setting"),
    ("table: T2\nbase: {cpu: c.yaml}\nsettings: {a: {}, b: {}}\ncompare: {b: z}\n", "unknown setting"),
    ("table: T2\nbase: {cpu: c.yaml}\nsettings: {a: {}}\npaper: {a: null}\n", "number or 'collapse'"),
    ("table: T2\nbase: {cpu: c.yaml}\nsettings: {a: {}, b: {}}\nclaims: {b: better}\n", "'above' or 'below'"),
])
def test_a_malformed_experiment_file_is_a_clear_error(tmp_path, text, match):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=match):
        experiment_file.Experiment.load(f)


def test_a_claim_on_two_data_sets_holds_where_both_have_three_seeds():
    def row(table, data, setting, verdict, n):
        return {"table": table, "data": data, "setting": setting, "verdict": verdict, "n_seeds": str(n),
                "claim": "above never"}

    m, big, opp, und = "matches the paper", "larger than the paper", "opposite to the paper", "undecided"
    rows = [row("T6", "shapes", "never", "baseline", 3), row("T6-fmnist", "fashion_mnist", "never", "baseline", 3),
            row("T6", "shapes", "start 9", opp, 3), row("T6-fmnist", "fashion_mnist", "start 9", m, 3),
            row("T6", "shapes", "start 1", big, 3), row("T6-fmnist", "fashion_mnist", "start 1", m, 3),  # larger holds too
            row("T6", "shapes", "start 0", opp, 3),
            row("T6-fmnist", "fashion_mnist", "start 0", opp, 3),
            row("T6", "shapes", "start 15", und, 3), row("T6-fmnist", "fashion_mnist", "start 15", m, 2),
            row("T6", "shapes", "start 24", opp, 3),
            row("T6-fmnist", "fashion_mnist", "start 24", und, 3),
            row("T2", "shapes", "alpha_ex=2.0", m, 3)]  # one data set only: not a cross-data claim
    got = {r["setting"]: r["holds_on"] for r in table_verdicts.data_set_verdicts(rows)}
    assert got == {"start 9": "fashion_mnist", "start 1": "every data set", "start 0": "none", "start 15": "open",
                   "start 24": "open"}  # "none" only where every data set reads opposite to the paper
    first = table_verdicts.data_set_verdicts(rows)[0]
    assert first["table"] == "T6" and first["per_data"] == {"fashion_mnist": (m, 3), "shapes": (opp, 3)}
    rows[2]["base"], rows[3]["base"] = "configs/cpu_moco_v1.yaml", "configs/cpu_cal_fmnist_moco_v1.yaml"
    assert table_verdicts.data_set_verdicts(rows)[0]["holds_on"] == "open (recipes differ)"  # not comparable yet


def test_recipe_sensitivity_pairs_a_claim_across_recipes_only_where_the_recipe_changed():
    def row(table, setting, verdict, base, diff="-5.0"):
        return {"table": table, "data": "shapes", "setting": setting, "verdict": verdict, "base": base, "claim": "above x",
                "diff_mean": diff, "diff_ci95": "1.0", "n_seeds": "3"}

    before = [row("T6", "never", "baseline", "configs/cpu_moco_v1.yaml"),
              row("T6", "start 9", "not replicated", "configs/cpu_moco_v1.yaml"),
              row("T2", "alpha_ex=2.0", "not replicated", "configs/cpu_moco_v1.yaml")]
    after = [row("T6", "never", "baseline", "configs/cpu_cal_moco_v1.yaml"),
             row("T6", "start 9", "matches the paper", "configs/cpu_cal_moco_v1.yaml", "2.0"),
             row("T2", "alpha_ex=2.0", "opposite to the paper", "configs/cpu_moco_v1.yaml"),  # not rerun yet
             row("T6", "start 24", "matches the paper", "configs/cpu_cal_moco_v1.yaml")]  # no record before
    got = table_verdicts.recipe_sensitivity(before, after)
    assert [(r["table"], r["setting"], r["changed"]) for r in got] == [("T6", "start 9", True)]
    assert got[0]["before"] == ("opposite to the paper", "-5.0", "1.0", 3)
    assert got[0]["after"][:2] == ("matches the paper", "2.0")
    two_seeds = [{**r, "n_seeds": "2"} for r in before]  # a record written when two seeds could decide a claim
    again = table_verdicts.recipe_sensitivity(two_seeds, after)[0]
    assert again["before"][0] == "undecided" and again["changed"]  # judged by today's rule: two seeds decide nothing
    after[1] = row("T6", "start 9", "undecided", "configs/cpu_cal_moco_v1.yaml")
    again = table_verdicts.recipe_sensitivity(two_seeds, after)[0]
    assert again["before"][0] == "undecided" and not again["changed"]  # undecided before and after: no change


def test_baseline_aims_judge_each_methods_baselines_on_calibrated_recipes_only():
    def row(table, setting, mean, ci, n, base, data="shapes", verdict="baseline"):
        return {"table": table, "data": data, "setting": setting, "verdict": verdict, "mean": mean, "ci95": ci,
                "n_seeds": n, "random_init_mean": "20.0", "base": base}

    rows = [row("T7", "v1 baseline", "79.0", "4.0", "3", "configs/cpu_cal_moco_v1.yaml"),
            row("S-E", "byol baseline", "38.0", "1.0", "3", "configs/cpu_cal_byol.yaml"),  # Supp E's IN-1K table
            row("S-F", "baseline", "79.0", "4.0", "3", "configs/cpu_cal_moco_v1.yaml"),  # a reference, not a method's
            row("T7", "swav baseline", "70.0", "", "1", "configs/cpu_cal_swav.yaml"),  # one seed: no interval
            row("T7", "v2 baseline", "55.0", "13.0", "3", "configs/cpu_cal_moco_v2.yaml"),
            row("T7", "simclr baseline", "86.0", "1.0", "3", "configs/cpu_simclr.yaml"),  # original recipe
            row("T7", "v1 +pos", "30.0", "4.0", "3", "configs/cpu_cal_moco_v1.yaml", verdict="opposite to the paper"),
            row("T6", "never", "79.0", "4.0", "3", "configs/cpu_cal_moco_v1.yaml"),  # not Table 7
            row("T7-fmnist", "v1 baseline", "84.0", "1.0", "3", "configs/cpu_cal_fmnist_moco_v1.yaml",
                data="fashion_mnist")]
    got = {(a["data"], a["setting"]): (a["gain_met"], a["spread_met"]) for a in table_verdicts.baseline_aims(rows)}
    assert got == {("shapes", "v1 baseline"): (True, True), ("shapes", "byol baseline"): (False, True),
                   ("shapes", "swav baseline"): (True, None), ("shapes", "v2 baseline"): (True, False),
                   ("fashion_mnist", "v1 baseline"): (None, True)}  # real images: the bar is the raw-pixel probe
    assert [a["gain"] for a in table_verdicts.baseline_aims(rows[:1])] == [59.0]
    assert readings.v2_against_v1(table_verdicts.baseline_aims(rows)) == {"shapes": (79.0, 55.0)}  # no v2 on Fashion-MNIST here


def test_the_dated_record_of_the_original_recipes_names_each_tables_recipe():
    rows = list(csv.DictReader(store.RECIPE_RECORD.open()))
    assert rows and all(r["base"].startswith("configs/cpu_") and "cal" not in r["base"] for r in rows)


def test_one_seed_per_setting_keeps_the_first_seed_of_each():
    labels = ["T1/m=0.5/seed0", "T1/m=0.5/seed1", "T1/m=0.9/seed1", "T1/m=0.9/seed2", "T7/v1_+pos/seed0"]
    assert store.one_seed_per_setting(labels) == ["T1/m=0.5/seed0", "T1/m=0.9/seed1", "T7/v1_+pos/seed0"]


def test_a_sweep_compiles_a_network_whose_runs_together_pay_for_the_compile(tmp_path, monkeypatch):
    from ftcl_core import execution
    from ftcl_core.config import load_config
    from ftcl_core.runs import write_yaml

    monkeypatch.setattr(execution.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(execution, "COMPILE_AUTO_MIN_STEPS", 30)  # the smoke runs take 16 steps each
    smoke = load_config("configs/smoke_moco_v2.yaml")
    other = smoke.updated({"model.dim": 64})  # another network
    jobs = [(smoke, tmp_path / "a"), (smoke.updated({"ft.pos": True}), tmp_path / "b"), (other, tmp_path / "c")]
    assert sweeps.sweep_compiles(jobs) == {tmp_path / "a", tmp_path / "b"}  # 32 steps on one network, 16 on the other
    assert sweeps.sweep_compiles(jobs[:1]) == set()
    assert sweeps.sweep_compiles([(c.updated({"train.compile": False}), p) for c, p in jobs]) == set()
    assert sweeps.sweep_compiles([(c.updated({"device": "cuda"}), p) for c, p in jobs]) == set()
    # a run already begun resumes the way it began
    (tmp_path / "c").mkdir()
    write_yaml(tmp_path / "c" / "config.yaml", other.updated({"train.compile": True}).to_dict())
    assert sweeps.sweep_compiles(jobs) == {tmp_path / "a", tmp_path / "b", tmp_path / "c"}
    monkeypatch.setattr(execution.shutil, "which", lambda name: None)  # no C++ compiler: eager
    assert sweeps.sweep_compiles(jobs) == {tmp_path / "c"}


def test_byols_changing_target_momentum_does_not_rebuild_a_compiled_step(tmp_path):
    """BYOL's momentum changes every step; the compiled networks must not depend on it (one graph, no
    recompiles). The eager backend traces and guards as inductor does, without building kernels."""
    import torch._dynamo

    from ftcl_core.config import load_config
    from ftcl_core.training import train

    cfg = load_config("configs/smoke_byol.yaml", ["train.compile=eager", "train.epochs=1", "eval.random_init=false"])
    torch._dynamo.reset()
    with torch._dynamo.config.patch(error_on_recompile=True):
        train(cfg, tmp_path / "run", progress=False, max_steps=4)


def test_a_sweep_may_set_only_how_runs_execute(tmp_path, monkeypatch):
    """``--set device=cuda`` moves a sweep to a GPU; a recipe key there would relabel runs, so it is refused."""
    from ftcl_core.config import config_diff, load_config

    with pytest.raises(ValueError, match="execut"):
        sweeps.sweep("experiments/table1_momentum.yaml", "smoke", execution={"train.epochs": 3}, progress=False)
    cfg = load_config("configs/smoke_moco_v2.yaml", [])
    assert config_diff(cfg, cfg.updated({"device": "cuda"})) == []  # where a run executes is not its recipe
    assert config_diff(cfg, cfg.updated({"train.epochs": 3})) == ["train.epochs"]
    from ftcl_core.__main__ import main

    assert main(["sweep", "experiments/table1_momentum.yaml", "--profile", "smoke", "--set", "device"]) == 2


@pytest.mark.slow  # tools/device_sweep.py trains runs in subprocesses
def test_device_sweep_trains_a_priority_list_and_packs_the_finished_runs(tmp_path):
    """``tools/device_sweep.py``, the one command a lent GPU runs: jobs in order, a deadline, one tarball."""
    import json
    import subprocess
    import sys
    import tarfile

    exp_file = tmp_path / "tiny.yaml"
    exp_file.write_text("table: TINY\ntitle: tiny\nbase: {cpu: configs/smoke_moco_v2.yaml}\nseeds: [0]\n"
                        "common: {data.n_train: 256, data.n_test: 64, train.batch_size: 64, moco.queue_size: 128, "
                        "train.epochs: 1, eval.linear_epochs: 1}\nsettings:\n  baseline: {}\n  +pos: {ft.pos: true}\n")
    out, stored = tmp_path / "out", tmp_path / "stored"
    (stored / "TINY" / "baseline" / "seed1").mkdir(parents=True)  # a run trained elsewhere: not trained again
    for name in ("eval.json", "provenance.json", "metrics.npz", "config.yaml"):
        (stored / "TINY" / "baseline" / "seed1" / name).write_text("{}")
    cmd = [sys.executable, "tools/device_sweep.py", "--out", str(out), "--runs-root", str(tmp_path / "runs"),
           "--deadline-s", "240", "--parallel", "2", "--set", "device=cpu", "--poll-s", "0.5", "--stored-root", str(stored),
           "--job", str(exp_file), "baseline", "0", "--job", str(exp_file), "+pos", "0",
           "--job", str(exp_file), "baseline", "1", "--job", str(exp_file), "+pos", "1"]
    done = subprocess.run(cmd, cwd=experiment_file.ROOT, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(experiment_file.ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "jobs.json").read_text())
    # seed 1's baseline is stored from elsewhere, so its FT arm is left to that device: a pair stays on one device
    assert [j["state"] for j in report["jobs"]] == ["complete", "complete", "stored", "skipped"]
    names = tarfile.open(out / "runs.tar.gz").getnames()
    assert not any("seed1" in n for n in names)
    assert "cpu/TINY/baseline/seed0/eval.json" in names and "cpu/TINY/+pos/seed0/provenance.json" in names
    assert not any(n.endswith("checkpoint.pt") for n in names)


def test_runs_by_device_groups_seeds_by_where_they_trained_and_skips_copies(tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path))
    provs = {"seed0": {"device": "cuda", "device_name": "NVIDIA H200", "train_s": 100.0},
             "seed1": {"device": "cuda", "device_name": "NVIDIA H200", "train_s": 300.0},
             "seed2": {"device": "cpu", "cpu_model": "Some CPU", "train_s": 900.0},
             "seed3": {"device": "cpu", "cpu_model": "Some CPU", "train_s": 1.0, "copied_from": "../x"}}
    for seed, prov in provs.items():
        d = tmp_path / "cpu" / "TAB" / "set" / seed
        d.mkdir(parents=True)
        (d / "eval.json").write_text("{}")
        (d / "provenance.json").write_text(json.dumps(prov))
    rows = store.runs_by_device("cpu")
    assert [(r["device"], r["seeds"], r["train_s"]) for r in rows] == [("NVIDIA H200", [0, 1], 200.0),
                                                                         ("Some CPU", [2], 900.0)]


def test_a_rerun_tables_original_runs_are_read_from_the_dated_record(tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "runs"))
    record = tmp_path / "record"
    for seed, top1 in (("seed0", 50.0), ("seed3", 53.0)):  # every stored seed of the record, not the file's seeds
        d = record / "T9" / "v1_+both" / seed
        d.mkdir(parents=True)
        (d / "eval.json").write_text(json.dumps({"linear_top1": top1}))
    (record / "T9" / "v1_+both" / "seed1").mkdir()  # an unfinished run is not a record
    current = tmp_path / "runs" / "cpu" / "T9" / "v1_+both" / "seed0"
    current.mkdir(parents=True)
    (current / "eval.json").write_text(json.dumps({"linear_top1": 90.0}))
    text = "table: T9\ntitle: t\nbase: {{cpu: configs/{}.yaml}}\nseeds: [0]\nsettings:\n  v1 +both: {{}}\n"
    rerun, original = tmp_path / "rerun.yaml", tmp_path / "original.yaml"
    rerun.write_text(text.format("cpu_cal_moco_v1"))
    original.write_text(text.format("cpu_moco_v1"))
    got = store.load_recorded(rerun, root=record)
    assert [(r["setting"], r["seed"], r["linear_top1"]) for r in got] == [("v1 +both", 0, 50.0), ("v1 +both", 3, 53.0)]
    monkeypatch.setattr(store, "RECIPE_RECORD", record / "summary.csv")
    assert [r["linear_top1"] for r in store.original_recipe_records(rerun)] == [50.0, 53.0]  # rerun: the record
    assert [r["linear_top1"] for r in store.original_recipe_records(original)] == [90.0]  # not rerun: its current runs


def test_the_calibrated_base_of_a_table_is_its_cpu_cal_config_where_one_exists(tmp_path):
    text = "table: T9\ntitle: t\nbase: {{cpu: {}}}\nseeds: [0]\nsettings:\n  a: {{}}\n"

    def cal(base: str) -> str:
        (tmp_path / "e.yaml").write_text(text.format(base))
        return experiment_file.calibrated_base(experiment_file.Experiment.load(tmp_path / "e.yaml")).base["cpu"]

    assert cal("configs/cpu_moco_v1.yaml") == "configs/cpu_cal_moco_v1.yaml"
    assert cal("configs/cpu_cal_moco_v1.yaml") == "configs/cpu_cal_moco_v1.yaml"
    assert cal("configs/smoke_moco_v2.yaml") == "configs/smoke_moco_v2.yaml"  # not a cpu_ config
    for name in ("cpu_new.yaml", "my_cpu_new.yaml", "cpu_cal_new.yaml", "my_cpu_cal_new.yaml"):
        (tmp_path / name).write_text("method: moco\n")
    assert cal(str(tmp_path / "cpu_other.yaml")) == str(tmp_path / "cpu_other.yaml")  # no cpu_cal_ twin
    assert cal(str(tmp_path / "cpu_new.yaml")) == str(tmp_path / "cpu_cal_new.yaml")
    assert cal(str(tmp_path / "my_cpu_new.yaml")) == str(tmp_path / "my_cpu_new.yaml")  # cpu_ only as a prefix


def test_the_momentum_facts_group_each_momentum_by_its_verdict(tmp_path):
    f = tmp_path / "t1.yaml"
    f.write_text("table: T1-fmnist\ntitle: t\nbase: {cpu: configs/cpu_moco_v1.yaml}\nseeds: [0, 1, 2]\n"
                 "settings:\n  m=0: {}\n  m=0.9: {}\n  m=1.0: {}\npaper: {m=0: collapse, m=0.9: 46.5, m=1.0: 31.2}\n")
    exp = experiment_file.Experiment.load(f)
    top1 = {"m=0": (5.0, 6.0, 7.0), "m=0.9": (60.0, 61.0, 62.0), "m=1.0": (20.0, 30.0, 10.0)}  # random init: 20
    records = [{"setting": s, "seed": i, "linear_top1": v, "random_init_linear_top1": 20.0}
               for s, vals in top1.items() for i, v in enumerate(vals)]
    facts = readings.momentum_facts(exp, records)
    assert (facts["seeds"], facts["peak"], facts["peak_readout"], facts["random"]) == ("3", "0.9", "61.0 ± 2.5", "20.0")
    assert (facts["learn_replicated"], facts["learn_inconclusive"], facts["learn_not"]) == ("0.9", "1.0", "")
    assert (facts["collapse_m_0"], facts["collapse_readout_0"], facts["collapse_diff_0"], facts["collapse_verdict_0"]) == (
        "0", "6.0 ± 2.5", "-14.0 ± 2.5", "matches the paper")  # a sanity claim has no size: its side of 0 decides
    assert (facts["edge"], facts["edge_above"], facts["edge_undecided"], facts["edge_below"]) == ("0", "0.9", "1.0", "")
    # the checks chapter 5's words on the shapes rest on, each flipped by these runs or by two seeds
    fails = failures(readings.CHECKS, facts)
    assert "every learning momentum learns as the paper says" in fails  # m = 1.0 is undecided
    assert "the collapse is not reproduced" in fails and "the collapse is undecided" in fails  # it is reproduced
    assert "no learning momentum is below the collapse edge" not in fails
    two_seeds = readings.momentum_facts(exp, [r for r in records if r["seed"] < 2])  # as clear, but only two seeds
    assert two_seeds["seeds"] == "2" and "the collapse is undecided" in failures(readings.CHECKS, two_seeds)
    assert "every momentum has 3 seeds" in failures(readings.CHECKS, two_seeds)
    assert readings.momentum_facts(exp, []) == {"n": 0}


def test_the_step_check_says_when_readout_does_not_step_up_where_the_papers_collapse_ends(tmp_path):
    f = tmp_path / "t1.yaml"
    f.write_text("table: T1\ntitle: t\nbase: {cpu: configs/cpu_moco_v1.yaml}\nseeds: [0, 1, 2]\n"
                 "settings:\n  m=0.5: {}\n  m=0.6: {}\n  m=0.99: {}\npaper: {m=0.5: collapse, m=0.6: 21.2, m=0.99: 56.2}\n")
    top1 = {"m=0.5": (30.0, 32.0, 34.0), "m=0.6": (31.0, 35.0, 33.0), "m=0.99": (80.0, 79.0, 81.0)}  # random init: 20
    records = [{"setting": s, "seed": i, "linear_top1": v, "random_init_linear_top1": 20.0}
               for s, vals in top1.items() for i, v in enumerate(vals)]
    claims = ("every learning momentum learns as the paper says", "the collapse is not reproduced",
              "no learning momentum is below the collapse edge", "the step from collapse to learning is not seen")
    facts = readings.momentum_facts(experiment_file.Experiment.load(f), records)
    assert (facts["edge_above"], facts["edge_undecided"], facts["first"], facts["step_diff"], facts["step_seeds"]) == (
        "0.99", "0.6", "0.6", "+1.0 ± 5.0", "3")
    assert not failures(readings.CHECKS, facts, *claims)  # the shapes' words hold
    top1["m=0.6"] = (50.0, 52.0, 54.0)  # a clear step: the words flip
    records = [{"setting": s, "seed": i, "linear_top1": v, "random_init_linear_top1": 20.0}
               for s, vals in top1.items() for i, v in enumerate(vals)]
    stepped = readings.momentum_facts(experiment_file.Experiment.load(f), records)
    assert list(failures(readings.CHECKS, stepped, *claims)) == [claims[3]]
    assert "every learning momentum is above the collapse edge" not in failures(readings.CHECKS, stepped)


def test_the_score_ends_facts_read_the_last_steps_of_each_momentum():
    import numpy as np

    steps = 200
    ramp = np.linspace(0.0, 1.0, steps)  # the first half differs from the last 100 steps: only those may count
    metrics = {"m=0": {"pos_mean": 0.95 + 0 * ramp, "neg_mean": np.where(ramp < 0.5, 0.1, 0.7)},
               "m=0.99": {"pos_mean": 0.85 + 0 * ramp, "neg_mean": np.where(ramp < 0.5, 0.9, 0.2)},
               "m=1.0": {"pos_mean": 0.15 + 0 * ramp, "neg_mean": 0.03 + 0 * ramp}}
    facts = readings.score_ends_facts(metrics, seed=0)
    assert (facts["window"], facts["seed"], facts["hi"], facts["hi_neg"], facts["lo"], facts["lo_neg"]) == (
        "100", "0", "0", "0.70", "1.0", "0.03")
    assert (facts["frozen_pos"], facts["others_pos_lo"], facts["others_pos_hi"]) == ("0.15", "0.85", "0.95")
    claim = "the frozen key encoder's views agree least"
    assert not failures(readings.CHECKS, facts, claim)
    metrics["m=1.0"]["pos_mean"] = 0.9 + 0 * ramp  # a frozen key encoder that agrees: the words flip
    assert failures(readings.CHECKS, readings.score_ends_facts(metrics, seed=0), claim)
    assert failures(readings.CHECKS, readings.score_ends_facts({k: metrics[k] for k in ("m=0", "m=0.99")}, seed=0), claim)
    assert readings.score_ends_facts({}, seed=0)["n"] == 0


def test_an_identical_run_trained_on_the_same_kind_of_device_is_copied_first(tmp_path, monkeypatch):
    import json

    import yaml

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path))
    cfg = experiment_file.resolve("configs/smoke_moco_v2.yaml", {}, "smoke")
    for folder, device in (("A-gpu/base/seed0", "cuda"), ("B-cpu/base/seed0", "cpu"), ("C-cpu/base/seed0", "cpu")):
        d = tmp_path / "smoke" / folder
        d.mkdir(parents=True)
        (d / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict()))
        (d / "provenance.json").write_text(json.dumps({"device": device}))
        (d / "eval.json").write_text("{}")
    assert store.find_identical_run(cfg, "smoke") == tmp_path / "smoke" / "B-cpu/base/seed0"  # not the GPU run sorted first
    assert store.find_identical_run(cfg.updated({"device": "cuda"}), "smoke") == tmp_path / "smoke" / "A-gpu/base/seed0"
    assert store.find_identical_run(cfg.updated({"seed": 5}), "smoke") is None


def test_step_rates_count_only_runs_trained_on_this_cpu_by_method(tmp_path, monkeypatch):
    import json

    import yaml

    from ftcl_core.runs import cpu_isa, cpu_model

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path))
    cfg = experiment_file.resolve("configs/smoke_moco_v2.yaml", {}, "smoke")
    assert sweeps.step_rates_here("smoke") == {} and math.isnan(sweeps.seconds_a_step(cfg, {}))
    steps = sweeps.planned_steps(cfg)
    provs = {"a": {"cpu_model": cpu_model(), "train_s": 0.1 * steps}, "b": {"cpu_model": cpu_model(), "train_s": 0.3 * steps},
             "c": {"cpu_model": cpu_model(), "train_s": 0.2 * steps},
             "copy": {"cpu_model": cpu_model(), "train_s": 9.0 * steps, "copied_from": "../a"},
             "elsewhere": {"cpu_model": "another CPU", "train_s": 9.0 * steps},
             "gpu": {"device": "cuda", "cpu_model": cpu_model(), "train_s": 9.0 * steps},
             "other_isa": {"cpu_model": cpu_model(), "cpu_isa": "not " + cpu_isa(), "train_s": 9.0 * steps}}
    for name, prov in provs.items():
        d = tmp_path / "smoke" / "T" / name / "seed0"
        d.mkdir(parents=True)
        (d / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict()))
        (d / "provenance.json").write_text(json.dumps({"device": "cpu", **prov}))
        (d / "eval.json").write_text("{}")
    rates = sweeps.step_rates_here("smoke")
    pixels = cfg.augment.out_size ** 2  # rates are per crop pixel: a plan at larger crops costs more a step
    assert list(rates) == [sweeps._rate_key(cfg)]
    assert sorted(rates[sweeps._rate_key(cfg)]) == pytest.approx([0.1 / pixels, 0.2 / pixels, 0.3 / pixels])
    assert sweeps.seconds_a_step(cfg, rates) == pytest.approx(0.2)
    larger = cfg.updated({"data.image_size": 4 * cfg.augment.out_size, "augment.out_size": 2 * cfg.augment.out_size})
    assert sweeps.seconds_a_step(larger, rates) == pytest.approx(0.8)
    simclr = experiment_file.resolve("configs/smoke_simclr.yaml", {},
                                 "smoke") if (experiment_file.ROOT / "configs/smoke_simclr.yaml").is_file() else \
        cfg.updated({"method": "simclr"})
    assert sweeps.seconds_a_step(simclr, rates) == pytest.approx(0.2)  # no SimCLR run here: every rate's median
    assert sweeps.seconds_a_step(simclr, {**rates, sweeps._rate_key(simclr): [0.7 / pixels]}) == pytest.approx(0.7)
    # runs that recorded this CPU's vector extension replace those of the same model name that did not
    d = tmp_path / "smoke" / "T" / "same_isa" / "seed0"
    d.mkdir(parents=True)
    (d / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict()))
    (d / "provenance.json").write_text(json.dumps({"device": "cpu", "cpu_model": cpu_model(), "cpu_isa": cpu_isa(),
                                                   "train_s": 0.5 * steps}))
    (d / "eval.json").write_text("{}")
    assert sweeps.seconds_a_step(cfg, sweeps.step_rates_here("smoke")) == pytest.approx(0.5)


def test_the_plan_command_prints_a_row_per_file_and_the_totals(tmp_path, monkeypatch, capsys):
    from ftcl_core.__main__ import main

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path))
    f = tmp_path / "e.yaml"
    f.write_text("table: T9\ntitle: t\nbase: {cpu: configs/cpu_moco_v1.yaml}\nseeds: [0]\n"
                 "settings:\n  a: {}\n  b: {optim.lr: 0.5}\n")
    assert main(["plan", str(f), "--calibrated", "--seeds", "0", "1", "--list"]) == 0
    out = capsys.readouterr().out
    assert f"| {f} | T9 | configs/cpu_cal_moco_v1.yaml | 4 | 0 | 0 | 0 | 4 |" in out
    assert "to train: a seed 0, b seed 0, a seed 1, b seed 1" in out and "\n4 runs to train:" in out


def test_on_real_images_the_momentum_facts_set_each_momentum_against_the_raw_pixel_probe(tmp_path):
    f = tmp_path / "t1.yaml"
    f.write_text("table: T1-fmnist\ntitle: t\nbase: {cpu: configs/cpu_moco_v1.yaml}\nseeds: [0, 1, 2]\n"
                 "settings:\n  m=0: {}\n  m=0.9: {}\n  m=0.99: {}\npaper: {m=0: collapse, m=0.9: 46.5, m=0.99: 56.2}\n")
    top1 = {"m=0": (70.0, 71.0, 72.0), "m=0.9": (80.0, 90.0, 70.0), "m=0.99": (85.0, 86.0, 87.0)}  # probe: 82
    records = [{"setting": s, "seed": i, "linear_top1": v, "random_init_linear_top1": 20.0, "raw_pixels_linear_top1": 82.0}
               for s, vals in top1.items() for i, v in enumerate(vals)]
    facts = readings.momentum_facts(experiment_file.Experiment.load(f), records)
    assert (facts["probe"], facts["pixels_above"], facts["pixels_undecided"], facts["pixels_below"]) == (
        "82.0", "0.99", "0.9", "0")
    assert (facts["collapse_diff_0"], facts["collapse_verdict_0"], facts["collapse_not"]) == (
        "+51.0 ± 2.5", "opposite to the paper", "0")
    fails = failures(readings.CHECKS, facts)
    assert "the collapsing momenta are below the raw pixels" in fails  # m = 0.9 is undecided against the pixels
    assert "the collapse is not reproduced" not in fails and "the collapse is undecided" in fails
    clear = [{**r, "raw_pixels_linear_top1": 40.0 if r["setting"] != "m=0" else 82.0} for r in records]
    assert "the collapsing momenta are below the raw pixels" not in failures(readings.CHECKS, readings.momentum_facts(
        experiment_file.Experiment.load(f), clear))


def test_each_setting_is_sorted_by_what_its_ft_does_to_the_pairs():
    def load(name):
        return experiment_file.Experiment.load(experiment_file.ROOT / "experiments" / name)

    def kinds(exp):
        return {s: experiment_file.ft_kind(exp, s, "cpu") for s in exp.settings}

    assert set(kinds(load("table4_alpha_in.yaml")).values()) == {"none", "negatives mixed"}
    assert kinds(load("table5_queue.yaml")) == {"K": "none", "2K": "none", "FT queue (K)": "negatives mixed",
                                                "FT + original (2K)": "negatives mixed"}
    assert kinds(load("supp_g_negatives.yaml")) == {"baseline": "none", "neg extrapolation": "harder",
                                                    "hard Beta(2,1)": "harder", "hard Beta(5,2)": "harder"}
    assert kinds(load("table3_interp_vs_extrap.yaml"))["interpolate a=0.2"] == "other"
    t7 = kinds(load("table6_start_epoch.yaml"))
    assert t7["start 0"] == "harder" and t7["start 9"] == "late start" and t7["never"] == "none"
    t5 = kinds(load("table7_ft_v1.yaml"))
    assert t5["v1 +neg"] == "negatives mixed" and {t5[s] for s in ("v1 +pos", "v1 +both", "v1 +both_dim")} == {"harder"}


def test_distinct_claims_and_chapter_tables_handle_blank_cells_and_several_recipes_in_one_table(tmp_path):
    def row(setting, base, verdict="undecided", diff="-1.0", ci="", n="1", ref="b"):
        return {"table": "T7", "data": "shapes", "setting": setting, "mean": "50.0", "ci95": ci, "n_seeds": n,
                "verdict": verdict, "reference": ref if verdict != "baseline" else "", "diff_mean": diff,
                "diff_ci95": ci, "base": base}

    rows = [row("b", "configs/cpu_cal_moco_v1.yaml", "baseline", diff=""),
            row("x", "configs/cpu_cal_moco_v1.yaml", diff=""),  # no seed shared with its reference
            row("y", "configs/cpu_byol.yaml", "opposite to the paper", diff="-3.0", ci="1.0", n="3")]
    shared = {**rows[2], "table": "T2", "setting": "alpha_ex=2.0"}  # the same runs under another table's name
    assert table_verdicts.distinct_claims([rows[2], shared, {**shared, "diff_mean": "-3.1"}]) == [rows[2], {**shared,
                                                                                                         "diff_mean": "-3.1"}]
    out = tmp_path / "summary.csv"  # chapter 9's tables: one per table and recipe, each headed by its recipe
    with out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=[*rows[0], "paper", "claim"])
        writer.writeheader()
        writer.writerows({**r, "paper": "", "claim": ""} for r in rows)
    md = table_verdicts.summary_markdown(out)
    assert "### T7 (shapes, cpu_cal_moco_v1)" in md and "### T7 (shapes, cpu_byol)" in md
    assert md.index("| y |") > md.index("### T7 (shapes, cpu_byol)") > md.index("| x |")


def test_a_table_switched_before_its_first_run_is_named_as_waiting(tmp_path, monkeypatch):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "runs"))
    (tmp_path / "e.yaml").write_text("table: T9\ntitle: t\nbase: {cpu: configs/cpu_cal_byol.yaml}\nsettings:\n  a: {}\n")
    (tmp_path / "g.yaml").write_text("table: T8\ntitle: t\nbase: {gpu: configs/gpu_in100_byol.yaml}\nsettings:\n  a: {}\n")
    assert table_verdicts.tables_without_runs("cpu", folder=tmp_path) == ["T9 (e, cpu_cal_byol)"]


def test_switching_a_table_to_its_calibrated_recipe_moves_only_other_recipes_runs(tmp_path, monkeypatch):
    import shutil

    from ftcl_core.runs import write_yaml

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "runs"))
    record = tmp_path / "record"
    exp_file = tmp_path / "t.yaml"
    exp_file.write_text("# a comment stays\ntable: T9\ntitle: t\nbase: {cpu: configs/cpu_moco_v1.yaml}\nseeds: [0, 1]\n"
                        "settings:\n  baseline: {}\n  +neg: {ft.neg: true}\n")
    exp = experiment_file.Experiment.load(exp_file)

    def store(name, seed, base, complete=True, overrides=None):
        d = experiment_file.run_dir(exp, name, seed, "cpu")
        d.mkdir(parents=True)
        write_yaml(d / "config.yaml", experiment_file.resolve(base, {**exp.overrides(name, seed), **(overrides or {})},
                                                          "cpu").to_dict())
        if complete:
            (d / "eval.json").write_text("{}")
        return d

    old = [store("baseline", 0, "configs/cpu_moco_v1.yaml"), store("+neg", 3, "configs/cpu_moco_v1.yaml")]
    new = store("baseline", 1, "configs/cpu_cal_moco_v1.yaml")  # already the calibrated recipe: stays
    partial = store("+neg", 0, "configs/cpu_moco_v1.yaml", complete=False)  # unfinished: never a record
    with pytest.raises(ConfigError, match="unfinished runs of the original recipe"):
        sweeps.switch_to_calibrated(exp_file, record=record)
    assert all(d.is_dir() for d in old) and "cpu_cal_" not in exp_file.read_text()  # checked before anything moved
    shutil.rmtree(partial)
    store("+neg", 1, "configs/cpu_cal_moco_v1.yaml", complete=False)  # an unfinished run of the new recipe stays
    clash = record / old[0].relative_to(tmp_path / "runs" / "cpu")
    clash.mkdir(parents=True)  # the record is never overwritten
    with pytest.raises(ConfigError, match="already holds"):
        sweeps.switch_to_calibrated(exp_file, record=record)
    clash.rmdir()
    moved = sweeps.switch_to_calibrated(exp_file, record=record)
    assert sorted(moved) == sorted(record / d.relative_to(tmp_path / "runs" / "cpu") for d in old)
    assert all((m / "config.yaml").is_file() and not o.exists() for m, o in zip(sorted(moved), sorted(old)))
    assert new.is_dir()
    text = exp_file.read_text()
    assert text.startswith("# CPU profile: configs/cpu_cal_moco_v1.yaml, the recipe calibrated without FT")
    assert f"(configs/cpu_moco_v1.yaml) are the dated record\n# {record}/T9.\n# a comment stays\n" in text
    assert "base: {cpu: configs/cpu_cal_moco_v1.yaml}" in text
    assert sweeps.switch_to_calibrated(exp_file, record=record) == []  # resumable: nothing left to move
    store("baseline", 0, "configs/cpu_cal_moco_v1.yaml", overrides={"moco.tau": 0.5})  # neither recipe: refused
    with pytest.raises(ConfigError, match="neither the original nor the calibrated"):
        sweeps.switch_to_calibrated(exp_file, record=record)
    exp_file.write_text("table: T9\ntitle: t\nbase: {cpu: configs/smoke_moco_v2.yaml}\nsettings:\n  a: {}\n")
    with pytest.raises(ConfigError, match="no calibrated recipe"):
        sweeps.switch_to_calibrated(exp_file, record=record)


def test_a_late_start_arm_forks_from_its_baseline_and_equals_the_run_trained_whole(tmp_path, monkeypatch):
    """The late-start arm of a sweep starts from its baseline's kept state at the switch (FT is inactive before it,
    so the two runs compute the same steps) and ends bit-identical to the same arm trained from the first step."""
    import numpy as np
    import torch

    from ftcl_core.runs import RunDir

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "runs"))
    monkeypatch.setenv("OMP_NUM_THREADS", str(torch.get_num_threads()))  # the sweep keeps the count the whole run has,
    # beside any other training process on the machine (the policy would lower the sweep's alone)
    exp_file = tmp_path / "late.yaml"
    exp_file.write_text(
        "table: T6\ntitle: late\nbase: {cpu: configs/smoke_moco_v2.yaml}\nseeds: [0]\n"
        "common: {data.n_train: 256, data.n_test: 64, eval.linear_epochs: 1}\n"
        "settings:\n  never: {}\n  start 2: {ft.pos: true, ft.neg: true, ft.start_epoch: 1}\n"
    )
    records = sweeps.sweep(exp_file, "smoke", progress=False)
    late = RunDir(next(r["dir"] for r in records if r["setting"] == "start 2"))
    never = RunDir(next(r["dir"] for r in records if r["setting"] == "never"))
    assert late.load_provenance()["forked_from"]["epochs"] == 1
    assert (never.path / sweeps.PREFIX_FOLDER.format(1)).is_dir()
    whole = tmp_path / "whole"
    from ftcl_core.training import train

    train(late.load_config(), whole, progress=False)
    for key, col in RunDir(whole).load_metrics().items():
        assert np.array_equal(col, late.load_metrics()[key], equal_nan=True), key
    assert RunDir(whole).load_eval()["linear_top1"] == late.load_eval()["linear_top1"]
    ahead = tmp_path / "ahead.yaml"  # a late arm listed before its baseline trains whole
    ahead.write_text(exp_file.read_text().replace("seeds: [0]", "seeds: [1]").replace(
        "  never: {}\n  start 2: {ft.pos: true, ft.neg: true, ft.start_epoch: 1}\n",
        "  start 2: {ft.pos: true, ft.neg: true, ft.start_epoch: 1}\n  never: {}\n"))
    records = sweeps.sweep(ahead, "smoke", progress=False)
    assert all("forked_from" not in RunDir(r["dir"]).load_provenance() for r in records)


def test_a_claims_entry_gives_the_papers_two_readouts_and_is_judged_on_both_scales(tmp_path):
    f = tmp_path / "d.yaml"
    f.write_text("table: D-x\nbase: {cpu: configs/cpu_moco_v1.yaml}\nsettings:\n  base: {}\n  ft: {}\n"
                 "claims:\n  - {arm: ft, vs: base, effect: 5.77, paper: [71.10, 76.87]}\n")
    exp = experiment_file.Experiment.load(f)
    assert exp.claims[0].paper == (71.10, 76.87)
    near = {r["setting"]: r for r in table_verdicts.table_rows(exp, _records({"base": [98.0, 98.2, 97.8], "ft": [99.0, 99.1,
                                                                                                              98.9]}))}
    assert (near["ft"]["verdict_points"], near["ft"]["scale"], near["ft"]["verdict"]) == (
        "smaller than the paper", "errors", "larger than the paper")  # FT halves the errors at 98 %: past the paper's fifth
    assert near["ft"]["log_error_ratio"] == pytest.approx(math.log(0.5))
    far_records = _records({"base": [60.0, 60.5, 59.5], "ft": [64.0, 63.0, 64.5]})
    far = {r["setting"]: r for r in table_verdicts.table_rows(exp, far_records)}
    assert far["ft"]["scale"] == "points" and far["ft"]["verdict"] == far["ft"]["verdict_points"]
    for bad in ("paper: [71.10]", "paper: [71.10, 80.0]"):  # not two numbers; numbers that are not the effect
        f.write_text(f.read_text().replace("paper: [71.10, 76.87]", bad))
        with pytest.raises(ConfigError):
            experiment_file.Experiment.load(f)
        f.write_text(f.read_text().replace(bad, "paper: [71.10, 76.87]"))


def test_a_pair_trained_on_two_devices_leaves_the_bh_family():
    from ftcl_core.study.results import verdicts
    from ftcl_core.study.results.paired import pair

    claim = verdicts.Claim("ft", "base", effect=2.0)

    def row(mean, devices):
        paired = pair({0: mean, 1: mean + 1, 2: mean + 2}, {0: 50.0, 1: 50.5, 2: 50.2}, devices)
        judged = verdicts.judge(claim, paired)  # as table_rows leaves a row: unadjusted until apply_bh
        return {"data": "shapes", "base": "c.yaml", "mean": mean, "ci95": 1.0, "n_seeds": 3, "diff_mean": paired.mean,
                "diff_ci95": paired.ci95, "q_value": math.nan, "verdict_bh": judged.word, "_verdict": judged}

    same, mixed = row(53.0, {s: ("cpu", "cpu") for s in range(3)}), row(54.0, {0: ("cuda", "cpu"), 1: ("cuda", "cpu")})
    table_verdicts.apply_bh([same, mixed])
    assert same["q_value"] == pytest.approx(same["_verdict"].p)  # a family of one: q = p
    assert math.isnan(mixed["q_value"]) and mixed["verdict_bh"] == mixed["_verdict"].word
    assert table_verdicts.scale_cells(mixed["_verdict"])["mixed_seeds"] == "0 1"


def test_the_tally_counts_the_claims_the_error_scale_decided():
    def row(setting, verdict, scale):
        return {"table": "D", "data": "shapes", "setting": setting, "verdict": verdict, "verdict_bh": verdict,
                "kind": "difference", "reference": "never", "scale": scale, "mean": setting}

    big, opp = "larger than the paper", "opposite to the paper"
    t = table_verdicts.tally([row("a", big, "errors"), row("b", opp, "points"), row("c", opp, "errors")])
    assert t["all"]["ft_errors"][big] == 1 and t["all"]["ft_errors"][opp] == 1
    assert sum(t["all"]["ft"].values()) == 3 and sum(t["all"]["ft_errors"].values()) == 2


def test_the_tables_claims_are_the_ones_the_paper_makes():
    t4 = experiment_file.Experiment.load(ROOT / "experiments" / "table3_interp_vs_extrap.yaml")
    interpolation = {s: t4.claims_of(s)[0] for s in ("interpolate a=0.2", "interpolate a=2.0")}
    assert {s: (c.reference, c.effect, c.sign) for s, c in interpolation.items()} == {
        "interpolate a=0.2": ("baseline", -2.0, -1), "interpolate a=2.0": ("baseline", -3.7, -1)}  # below the baseline
    t6 = experiment_file.Experiment.load(ROOT / "experiments" / "table5_queue.yaml")
    two_k = t6.claims_of("2K")
    assert [(c.kind, c.reference, c.effect) for c in two_k] == [("difference", "K", 0.3)]  # what Table 5 reports
    # the supplement's IN-1K table
    assert experiment_file.Experiment.load(ROOT / "experiments" / "supp_e_byol.yaml").table == "S-E"
    simsiam = experiment_file.Experiment.load(ROOT / "experiments" / "table7_simsiam.yaml")
    assert simsiam.table == "T7"  # SimSiam's numbers are Table 7's own (IN-100)


def test_a_refiled_row_is_matched_with_its_dated_record_under_its_old_table():
    def row(table, verdict, base, diff):
        return {"table": table, "data": "shapes", "setting": "byol +pos", "verdict": verdict, "base": base,
                "claim": "above byol baseline", "reference": "byol baseline", "diff_mean": diff, "diff_ci95": "1.0",
                "n_seeds": "3", "effect": "0.7"}

    got = table_verdicts.recipe_sensitivity([row("T7", "contradicted", "configs/cpu_byol.yaml", "-5.0")],  # the record's old word
                               [row("S-E", "undecided", "configs/cpu_cal_byol.yaml", "0.5")])
    assert [(r["table"], r["before"][0], r["after"][0]) for r in got] == [("S-E", "opposite to the paper", "undecided")]


def test_sweep_parallel_deals_the_seeds_to_processes_of_fewer_threads(tmp_path, monkeypatch, capfd):
    """``sweep --parallel 2``: two child sweeps, seeds dealt round-robin, each with cores // 2 threads; every run
    lands once, and a run again trains nothing; ``--parallel 0`` is refused with the fix."""
    from ftcl_core.study.cli import main

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    exp_file = tmp_path / "tiny.yaml"
    exp_file.write_text("table: T-par\ntitle: tiny\nbase: {cpu: configs/smoke_moco_v2.yaml}\nseeds: [0, 1, 2]\n"
                        "common: {train.epochs: 1}\nsettings:\n  baseline: {}\n")
    assert main(["sweep", str(exp_file), "--profile", "smoke", "--parallel", "2"]) == 0
    out = capfd.readouterr().out
    threads = max(1, (os.cpu_count() or 1) // 2)
    assert f"2 processes of {threads} thread(s), seeds [[0, 2], [1]]" in out
    summaries = [line for line in out.splitlines() if "linear" in line and "(n=" in line]
    assert len(summaries) == 1 and "(n=3)" in summaries[0]  # one summary of all seeds, not one a child
    records = store.load_records(exp_file, "smoke")
    assert sorted(r["seed"] for r in records) == [0, 1, 2]
    assert main(["sweep", str(exp_file), "--profile", "smoke", "--parallel", "0"]) == 2
    assert "--parallel 0" in capfd.readouterr().err


def test_a_claim_far_past_the_papers_effect_is_told_apart_from_one_that_matches_it():
    def summary(diff: float, ci: float, verdict: str) -> list[dict]:
        return [{"table": "T3", "setting": "interpolate a=0.2", "diff_mean": str(diff), "diff_ci95": str(ci),
                 "effect": "-2.0", "ratio": str(diff / -2.0), "verdict": verdict, "n_seeds": "3"}]

    name = "larger than the paper's size"
    far = readings.claim_facts(summary(-37.7, 2.1, "larger than the paper"), "T3", "interpolate a=0.2")
    assert (far["diff"], far["effect"], far["ratio"]) == ("-37.7 ± 2.1", "-2.0", "19")
    assert not failures(readings.CLAIM_CHECKS, far, name)
    # [-5.1, -0.9] holds the paper's -2.0: it matches the paper, it is not larger
    assert failures(readings.CLAIM_CHECKS, readings.claim_facts(summary(-3.0, 2.1, "matches the paper"), "T3",
                                                                      "interpolate a=0.2"), name)
    assert failures(readings.CLAIM_CHECKS, readings.claim_facts(summary(-37.7, 2.1, "undecided"), "T3",
                                                                      "interpolate a=0.2"), name)
    with pytest.raises(KeyError, match="T3 'extrapolate a=0.2'"):
        readings.claim_facts(summary(-37.7, 2.1, "larger than the paper"), "T3", "extrapolate a=0.2")


def test_rows_of_one_set_of_runs_under_two_tables_count_as_one_comparison_and_the_check_flips_when_they_differ():
    def row(table: str, setting: str, diff: str, verdict: str = "opposite to the paper") -> dict:
        return {"table": table, "setting": setting, "data": "shapes", "base": "cpu_cal_moco_v1", "mean": "40.0",
                "ci95": "3.0", "n_seeds": "3", "diff_mean": diff, "diff_ci95": "3.9", "verdict": verdict}

    name = "tables share runs"
    base = {**row("T2", "baseline", ""), "verdict": "baseline"}
    one = [base, row("T2", "alpha_ex=2.0", "-44.0"), row("T7", "v1 +pos", "-44.0")]
    facts = readings.shared_run_facts(one)
    assert (facts["rows"], facts["distinct"], facts["same"]) == ("2", "1", True)
    assert not failures(readings.CLAIM_CHECKS, facts, name)
    two = [base, row("T2", "alpha_ex=2.0", "-44.0"), row("T7", "v1 +pos", "-40.0")]
    assert failures(readings.CLAIM_CHECKS, readings.shared_run_facts(two), name)


def test_harder_positive_facts_average_each_run_and_flip_when_one_seed_is_not_harder():
    name = "a larger momentum makes the positives harder"
    run = lambda level: {"pos_mean": np.full(20, level)}  # noqa: E731
    metrics = {"m=0.9": {s: run(0.9) for s in range(3)}, "m=0.99": {s: run(0.7) for s in range(3)}}
    f = readings.harder_positive_facts(metrics)
    assert (f["pos_easy"], f["pos_hard"], f["seeds"]) == ("0.90", "0.70", "3")
    assert not failures(readings.CHECKS, f, name)
    metrics["m=0.99"][2] = run(0.95)  # one seed whose larger momentum leaves the positives easier
    assert name in failures(readings.CHECKS, readings.harder_positive_facts(metrics), name)
    two = {k: {s: v[s] for s in (0, 1)} for k, v in metrics.items()}
    assert name in failures(readings.CHECKS, readings.harder_positive_facts(two), name)  # two seeds: too few


def test_table_cells_keep_only_the_claim_kinds_asked_for():
    exp = experiment_file.Experiment.load("experiments/table1_momentum.yaml")
    records = store.load_records(exp.path, "cpu", experiment_file.STORED)
    everything = table_verdicts.table_cells(exp, records)[2]
    sanity, ordering = (table_verdicts.table_cells(exp, records, [kind])[2] for kind in ("sanity", "ordering"))
    assert sanity and ordering and len(sanity) + len(ordering) <= len(everything)
    assert {row[5] for row in sanity} == {"random init"} and "random init" not in {row[5] for row in ordering}


def test_undone_positive_facts_read_the_last_steps_and_flip_when_one_seed_is_not_crowded_or_not_undone():
    undone, crowded = "the encoder undoes the harder positive", "the encoder crowds the images together"

    def run(pos, neg, ft_pos, ft_neg, early=0.2):  # 20 early steps at another level, then 100 at the end
        at = lambda late: np.r_[np.full(20, early), np.full(100, late)]  # noqa: E731
        return {"pos_mean": at(pos), "neg_mean": at(neg), "ft_pos_mean": at(ft_pos), "ft_neg_mean": at(ft_neg)}

    metrics = {"v1 +pos": {s: run(0.98, 0.64, 0.94, 0.65) for s in range(3)},
               "v1 baseline": {s: run(0.82, 0.15, 0.82, 0.15) for s in range(3)}}
    f = readings.undone_positive_facts(metrics)
    assert (f["arm_pos"], f["ref_pos"], f["arm_ft"], f["arm_neg"], f["ref_neg"]) == ("0.98", "0.82", "0.94", "0.64", "0.15")
    assert (f["arm_margin"], f["ref_margin"], f["seeds"]) == ("0.29", "0.67", "3")
    assert not failures(readings.CHECKS, f, undone, crowded)
    metrics["v1 +pos"][1] = run(0.98, 0.10, 0.94, 0.10)  # one seed whose images stay apart: not crowded
    assert list(failures(readings.CHECKS, readings.undone_positive_facts(metrics), undone, crowded)) == [crowded]
    metrics["v1 +pos"][1] = run(0.70, 0.64, 0.60, 0.65)  # one seed whose views stay apart: not undone
    assert undone in failures(readings.CHECKS, readings.undone_positive_facts(metrics), undone)
    metrics["v1 +pos"][1] = run(0.90, 0.64, 0.75, 0.65)  # closer views, but the extrapolated pair still harder
    assert undone in failures(readings.CHECKS, readings.undone_positive_facts(metrics), undone)
    assert undone in failures(readings.CHECKS, readings.undone_positive_facts({"v1 +pos": {}, "v1 baseline": {}}), undone)


def test_chapter_10s_reading_holds_on_rows_like_the_stored_ones_and_each_check_flips():
    def row(setting: str, diff: float | None, verdict: str, mean: float = 40.0) -> dict:
        ref = "" if diff is None else f"{setting.split()[0]} baseline"
        return {"table": "S-E" if setting.startswith("byol") else "T7", "data": "shapes", "setting": setting,
                "reference": ref, "base": "cpu_cal_x", "mean": str(mean), "ci95": "2.0", "n_seeds": "3",
                "diff_mean": "" if diff is None else str(diff), "diff_ci95": "6.0", "effect": "" if diff is None else "1.5",
                "verdict": verdict, "random_init_mean": "20.0"}

    c, i = "opposite to the paper", "undecided"
    rows = [row("simclr baseline", None, "baseline", 85.0), row("byol baseline", None, "baseline", 38.0),
            row("simsiam baseline", None, "baseline", 33.0), row("swav baseline", None, "baseline", 67.0),
            row("simclr +pos", -60.0, c), row("simclr +neg", -3.0, i), row("simclr +both", -61.0, c),
            row("simclr +both_dim", -59.0, c), row("byol +pos", 1.4, i), row("simsiam +pos", 2.3, i),
            row("swav +pos", -43.0, c)]
    last = {"simclr +pos": {"pos_mean": 1.0, "neg_mean": 1.0, "loss": 6.23},
            "swav +pos": {"pos_mean": 0.98, "neg_mean": 0.75, "loss": 4.19}}
    facts = readings.methods_facts(rows, last, negatives=510)
    assert (facts["constant_loss"], facts["simclr_pos"], facts["random_init"]) == ("6.24", "-60.0 ± 6.0", "20.0")
    assert failures(readings.METHOD_CHECKS, facts, *readings.METHOD_CHECKS) == {}
    flips = {
        "positive extrapolation reverses SimCLR": ([row("simclr +both", -1.0, i)], last),
        "SimCLR's +neg alone is undecided": ([row("simclr +neg", -9.0, c)], last),
        "SimCLR with +pos ends as a constant encoder": ([], {**last, "simclr +pos": {**last["simclr +pos"], "loss": 5.0}}),
        "without negatives nothing is decided": ([row("byol +pos", 9.0, "larger than the paper")], last),  # 9 ± 6 vs 1.5
        "BYOL's and SimSiam's baselines miss the bar": ([row("byol baseline", None, "baseline", 60.0)], last),
        "SwAV's +pos is reversed short of a collapse": ([], {**last, "swav +pos": {**last["swav +pos"], "neg_mean": 0.99}}),
    }
    assert set(flips) == set(readings.METHOD_CHECKS)
    for name, (changed, ends) in flips.items():
        new = [next((n for n in changed if n["setting"] == r["setting"]), r) for r in rows]
        assert name in failures(readings.METHOD_CHECKS, readings.methods_facts(new, ends, negatives=510), name), name


@pytest.mark.parametrize("value, want", [("[0, 1]", [0, 1]), ("0 1 2", [0, 1, 2]), ("3,4", [3, 4]), ([2], [2]),
                                         ((0, 1), [0, 1]), (5, [5]), (None, None)])
def test_seeds_come_as_a_list_or_the_text_of_one(value, want):
    assert experiment_file.seed_list(value) == want


@pytest.mark.parametrize("value", ["[", "a b", "[0, -1]", "[0.5]", [], [True], "{a: 1}"])
def test_seeds_in_another_form_are_refused_with_the_form_they_take(value):
    with pytest.raises(ConfigError, match=r"list of seeds"):
        experiment_file.seed_list(value)


def test_an_experiment_file_that_is_not_a_mapping_is_refused(tmp_path):
    path = tmp_path / "forty_two.yaml"
    path.write_text("42\n")
    with pytest.raises(ConfigError, match="not a mapping"):
        experiment_file.Experiment.load(path)
