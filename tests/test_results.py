"""Stored reference results: the code still reproduces them, and the summary is well formed."""

import csv
from pathlib import Path

import numpy as np
import pytest

from ftcl_core.runs import RunDir
from ftcl_core.training import replay

ROOT = Path(__file__).resolve().parent.parent
STORED = ROOT / "results" / "cpu" / "T5" / "v2_baseline" / "seed0"


@pytest.mark.skipif(not (STORED / "eval.json").is_file(), reason="reference run not stored")
def test_replaying_a_stored_run_matches_its_metrics():
    stored = RunDir(STORED).load_metrics()
    again = replay(STORED, n_steps=12)
    for key in ("loss", "top1", "pos_mean", "neg_mean", "neg_var", "lr"):
        np.testing.assert_allclose(again[key], stored[key][:12], rtol=1e-4, atol=1e-5, err_msg=key)


@pytest.mark.skipif(not (ROOT / "results" / "summary.csv").is_file(), reason="no summary yet")
def test_summary_has_the_promised_columns_and_verdicts():
    rows = list(csv.DictReader((ROOT / "results" / "summary.csv").open()))
    assert rows
    for col in ("table", "setting", "mean", "ci95", "n_seeds", "paper", "verdict"):
        assert col in rows[0]
    assert {r["verdict"] for r in rows} <= {"replicated", "not replicated", "inconclusive", "baseline"}
    assert {r["table"] for r in rows} <= {"T1", "T2", "T3", "T4", "T5", "T6", "T7", "S-F", "S-G"}


def test_every_stored_run_is_what_its_experiment_file_asks_for():
    """A stored run counts for a setting only if its config is the one the experiment file resolves to, so an
    edited experiment file or base config cannot silently relabel old results."""
    import yaml

    from ftcl_core import experiments as X
    from ftcl_core.runs import config_diff

    checked = 0
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        exp = X.Experiment.load(path)
        for name, overrides in exp.settings.items():
            for seed_dir in sorted(X.run_dir(exp, name, 0, "cpu").parent.glob("seed*")):
                if not (seed_dir / "eval.json").is_file():
                    continue
                seed = int(seed_dir.name.removeprefix("seed"))
                cfg = X.resolve(X.base_for(exp, "cpu"), {**overrides, "seed": seed}, "cpu")
                stored = yaml.safe_load((seed_dir / "config.yaml").read_text())
                assert not config_diff(cfg, stored), f"{seed_dir}: {config_diff(cfg, stored)}"
                checked += 1
    if checked == 0:
        pytest.skip("no stored runs")


def test_a_setting_value_can_depend_on_the_profile():
    from ftcl_core import experiments as X
    from ftcl_core.runs import ConfigError

    two_k = {"moco.queue_size": {"cpu": 8192, "gpu": 131072}}
    assert X.resolve("configs/cpu_moco_v1.yaml", two_k, "cpu")["moco"]["queue_size"] == 8192
    assert X.resolve("configs/gpu_in100_moco_v1_r50.yaml", two_k, "gpu")["moco"]["queue_size"] == 131072
    assert X.resolve("configs/cpu_moco_v1.yaml", two_k, "smoke")["moco"]["queue_size"] == 8192 // 32
    start = {"ft.pos": True, "ft.start_epoch": {"cpu": 9, "smoke": 1}}
    assert X.resolve("configs/cpu_moco_v1.yaml", start, "smoke")["ft"]["start_epoch"] == 1
    with pytest.raises(ConfigError, match="no entry for the 'gpu' profile"):
        X.resolve("configs/gpu_in100_moco_v1_r50.yaml", start, "gpu")
