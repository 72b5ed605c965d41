"""Issue 64, the nineteenth trial (a helper at 75000ab: T2 D2 N5 U4; all 9 interrupt/resume pairs matched exactly):
the command line's cases first (an FT arm whose reference lost its readouts labelled "baseline", a calibrated sweep
that moved an external store's runs into the checkout, a report's mapping parameter checked only inside the kernel,
screen's switch-on step), then the public library's (uint8 rows read as masks, a CUDA device without a GPU, tensor
temperatures, SimCLR's FT timing keys, a target network that is its online one, a kNN k past the training set,
repeated rows, a cache folder named as a cache file, a class list that is a folder). Each fails at 75000ab."""

from __future__ import annotations

import pytest
from test_experiments import _records

from ftcl_core.study import experiment_file, table_verdicts


def test_a_claim_whose_reference_has_no_readouts_reads_not_run_never_baseline(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text("table: T7\nbase: {cpu: configs/cpu_moco_v1.yaml}\nsettings:\n  base: {}\n  a: {}\n"
                 "paper: {base: 70.0, a: 72.0}\n")
    rows = table_verdicts.table_rows(experiment_file.Experiment.load(f), _records({"a": [60, 61, 62]}))
    assert [(r["setting"], r["verdict"], r["reference"]) for r in rows] == [("a", "not run", "base")]
    assert table_verdicts.tally(rows)["all"]["ft"] == dict.fromkeys(table_verdicts.verdicts.TALLY_WORDS, 0)


def test_a_calibrated_switch_keeps_an_external_stores_runs_in_that_store(tmp_path, monkeypatch):
    from ftcl_core.runs import write_yaml
    from ftcl_core.study import store, sweeps

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "runs"))
    exp_file = tmp_path / "t.yaml"
    exp_file.write_text("table: HC\ntitle: t\nbase: {cpu: configs/cpu_moco_v1.yaml}\nsettings:\n  s: {moco.momentum: 0.9}\n")
    exp = experiment_file.Experiment.load(exp_file)
    d = experiment_file.run_dir(exp, "s", 0, "cpu")
    d.mkdir(parents=True)
    write_yaml(d / "config.yaml", experiment_file.resolve("configs/cpu_moco_v1.yaml", exp.overrides("s", 0), "cpu").to_dict())
    (d / "eval.json").write_text("{}")
    moved = sweeps.switch_to_calibrated(exp_file)
    assert moved == [tmp_path / "runs" / store.RECIPE_RECORD.parent.name / "HC" / "s" / "seed0"]
    assert (moved[0] / "config.yaml").is_file() and not (store.RECIPE_RECORD.parent / "HC").exists()


@pytest.mark.parametrize("chapter, name, value, kind", [
    ("book/10_methods.ipynb", "settings", [1], "mapping of lists"),
    ("book/10_methods.ipynb", "settings", {"experiments/table7_simclr.yaml": "simclr +pos"}, "mapping of lists"),
    ("book/10_methods.ipynb", "method_files", [0, 1], "list of words"),
    ("book/05_momentum.ipynb", "momenta", ["a"], "list of numbers"),
    ("book/07b_gradient.ipynb", "points", "many", "number"),
])
def test_a_report_parameter_of_the_wrong_kind_is_refused_before_a_kernel_starts(tmp_path, chapter, name, value, kind):
    import time

    from ftcl_core.pages.report import ReportError, report

    start = time.perf_counter()
    with pytest.raises(ReportError, match=f"is a {kind}; write it as one, e.g. -p {name} ") as err:
        report(chapter, tmp_path / "page.html", {name: value})
    assert time.perf_counter() - start < 5 and not list(tmp_path.iterdir())
    example = str(err.value).split("e.g. ")[-1]  # of the parameter's own kind: file names for method_files
    assert name != "method_files" or example.startswith('-p method_files "[experiments/')


def test_screen_names_the_real_switch_step_and_never_asks_past_the_whole_run():
    import numpy as np

    from ftcl_core.config import load_config
    from ftcl_core.study.cli import _screen_prediction

    five = {"epoch": np.zeros(5), "neg_mean": np.zeros(5)}  # a screen shorter than an epoch of 8 steps
    long = load_config("configs/smoke_moco_v2.yaml", ["ft.pos=true", "ft.start_epoch=1", "train.epochs=20"])
    assert "needs --steps 108 (100 steps after FT switches on at step 8, epoch 1)" in _screen_prediction(long, five)
    whole = load_config("configs/smoke_moco_v2.yaml", ["ft.pos=true", "ft.start_epoch=1"])  # 2 epochs, 16 steps
    said = _screen_prediction(whole, {"epoch": np.repeat([0, 1], 8), "neg_mean": np.zeros(16)})
    assert "--steps" not in said and "raise train.epochs to 14 or more" in said
