"""Stored reference results: the code still reproduces them, and the summary is well formed."""

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from ftcl_core.runs import RunDir
from ftcl_core.study.replay import replay

ROOT = Path(__file__).resolve().parent.parent
STORED = ROOT / "results" / "cpu" / "T7" / "v2_baseline" / "seed0"


CONTINUOUS = ("loss", "pos_mean", "neg_mean", "neg_var", "lr")
# Another CPU runs other float32 kernels (AVX-512 against AVX2 blockings, another summation order), so a replay
# there is the same computation rounded differently.  The first step is one forward pass from identical weights
# and views: its statistics agree to float32 reduction-order error (1e-7 measured; 1e-5 allowed).  Each SGD step
# through batch-norm then amplifies that difference: after 12 steps an Intel Xeon (AVX-512) replay of a run made
# on an AMD EPYC differed by at most 3.4e-4 relative; 2e-3 is allowed.  Contrastive top-1 is a count of 256
# queries: at most one query per step, and two in all, may land on the other side of a near-tie.
FIRST_STEP_RTOL, LATER_RTOL, FLIPS_PER_STEP, FLIPS_IN_ALL = 1e-5, 2e-3, 1, 2


def same_machine(prov: dict) -> bool:
    """Whether this process computes exactly as the one that stored the run: same CPU model, torch and threads, and
    eager (a compiled run's kernels come from the compiler's cache or a fresh compile, whose fusions may round
    differently: a replay on the same Xeon differed by 3e-6 relative after 12 steps)."""
    import torch

    from ftcl_core.runs import cpu_model

    return (prov.get("cpu_model") == cpu_model() and prov["versions"]["torch"] == torch.__version__
            and prov.get("threads") == torch.get_num_threads() and not prov.get("execution", {}).get("compile"))


@pytest.mark.slow  # retrains 12 steps of a stored run
@pytest.mark.skipif(not (STORED / "eval.json").is_file(), reason="reference run not stored")
def test_replaying_a_stored_run_matches_its_metrics():
    stored = RunDir(STORED).load_metrics()
    again = replay(STORED, n_steps=12)
    if same_machine(RunDir(STORED).load_provenance()):  # one process on one machine: bit-identical given the seed
        twice = replay(STORED, n_steps=12)
        for key in (*CONTINUOUS, "top1"):
            np.testing.assert_array_equal(twice[key], again[key], err_msg=key)
    # against the stored run: "Intel(R) Xeon(R) Processor" names several microarchitectures, so even a machine
    # that reports the same CPU model may round differently; the stored metrics are checked within tolerances
    for key in CONTINUOUS:
        np.testing.assert_allclose(again[key][0], stored[key][0], rtol=FIRST_STEP_RTOL, err_msg=f"{key}, first step")
        np.testing.assert_allclose(again[key], stored[key][:12], rtol=LATER_RTOL, atol=1e-7, err_msg=key)
    batch = RunDir(STORED).load_config().train.batch_size
    flips = np.abs(np.round((again["top1"] - stored["top1"][:12]) * batch / 100))
    assert flips.max() <= FLIPS_PER_STEP and flips.sum() <= FLIPS_IN_ALL, f"top-1 differs by {flips} queries per step"


def test_replay_tolerances_still_catch_a_changed_recipe():
    """The cross-machine allowance is far below what a real change of the code or recipe does to the same steps."""
    from ftcl_core.config import load_config
    from ftcl_core.training import train

    def first_steps(*over: str) -> dict:
        import tempfile

        cfg = load_config("configs/smoke_moco_v2.yaml", ["data.n_train=256", "moco.queue_size=128", *over])
        with tempfile.TemporaryDirectory() as tmp:
            return train(cfg, tmp, progress=False, max_steps=4)["metrics"]

    base, changed = first_steps(), first_steps("moco.tau=0.21")  # a 5 % change of the temperature
    assert np.max(np.abs(changed["loss"] - base["loss"]) / np.abs(base["loss"])) > 10 * LATER_RTOL
    nudged = first_steps("augment.crop_scale=[0.41,1.0]")  # a 2.5 % change of one augmentation bound
    assert np.abs(nudged["loss"][0] - base["loss"][0]) / abs(base["loss"][0]) > 10 * FIRST_STEP_RTOL


@pytest.mark.skipif(not (ROOT / "results" / "summary.csv").is_file(), reason="no summary yet")
def test_summary_has_the_promised_columns_and_verdicts():
    rows = list(csv.DictReader((ROOT / "results" / "summary.csv").open()))
    assert rows
    for col in ("table", "data", "setting", "mean", "ci95", "n_seeds", "paper", "verdict"):
        assert col in rows[0]
    from ftcl_core.study.results.verdicts import BASELINE, TALLY_WORDS

    assert {r["verdict"] for r in rows} <= {*TALLY_WORDS, BASELINE}
    assert {r["verdict_bh"] for r in rows} <= {*TALLY_WORDS, BASELINE}
    for r in rows:  # a paper table, on the data it names (T6-fmnist: Table 6 on Fashion-MNIST)
        assert re.fullmatch(r"(T[1-7]|S-[EFG])(-fmnist)?", r["table"]) and r["data"], r
        assert (r["data"] == "fashion_mnist") == r["table"].endswith("-fmnist"), r
    from ftcl_core.study.results.verdicts import ERRORS, POINTS

    for r in (r for r in rows if r["kind"] in ("difference", "ordering")):  # both scales, the deciding one named
        assert r["scale"] in (POINTS, ERRORS) and r["verdict_points"] in TALLY_WORDS, r
        assert r["verdict"] == r["verdict_errors" if r["scale"] == ERRORS else "verdict_points"], r
        if r["effect"] and r["paper"]:  # a claim with the paper's numbers is judged on errors too
            assert r["verdict_errors"] in TALLY_WORDS and r["log_error_ratio"] != "", r


def test_every_stored_run_is_what_its_experiment_file_asks_for():
    """A stored run counts for a setting only if its config is the one the experiment file resolves to, so an
    edited experiment file or base config cannot silently relabel old results."""
    import yaml

    from ftcl_core.config import config_diff
    from ftcl_core.study import experiment_file

    checked = 0
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        exp = experiment_file.Experiment.load(path)
        for name, overrides in exp.settings.items():
            for seed_dir in sorted(experiment_file.run_dir(exp, name, 0, "cpu").parent.glob("seed*")):
                if not (seed_dir / "eval.json").is_file():
                    continue
                seed = int(seed_dir.name.removeprefix("seed"))
                cfg = experiment_file.resolve(experiment_file.base_for(exp, "cpu"), {**overrides, "seed": seed}, "cpu")
                stored = yaml.safe_load((seed_dir / "config.yaml").read_text())
                assert not config_diff(cfg, stored), f"{seed_dir}: {config_diff(cfg, stored)}"
                checked += 1
    if checked == 0:
        pytest.skip("no stored runs")


def test_a_setting_value_can_depend_on_the_profile():
    from ftcl_core.config import ConfigError
    from ftcl_core.study import experiment_file

    two_k = {"moco.queue_size": {"cpu": 8192, "gpu": 131072}}
    assert experiment_file.resolve("configs/cpu_moco_v1.yaml", two_k, "cpu").moco.queue_size == 8192
    assert experiment_file.resolve("configs/gpu_in100_moco_v1_r50.yaml", two_k, "gpu").moco.queue_size == 131072
    assert experiment_file.resolve("configs/cpu_moco_v1.yaml", two_k, "smoke").moco.queue_size == 8192 // 32
    start = {"ft.pos": True, "ft.start_epoch": {"cpu": 9, "smoke": 1}}
    assert experiment_file.resolve("configs/cpu_moco_v1.yaml", start, "smoke").ft.start_epoch == 1
    with pytest.raises(ConfigError, match="no entry for the 'gpu' profile"):
        experiment_file.resolve("configs/gpu_in100_moco_v1_r50.yaml", start, "gpu")


@pytest.mark.skipif(not (ROOT / "results" / "summary.csv").is_file(), reason="no summary yet")
def test_summary_is_regenerated_from_the_stored_runs(tmp_path, monkeypatch):
    """results/summary.csv is what the stored runs give today, so no number of it can go stale (the README's copy of
    the findings: tests/test_findings.py)."""
    from ftcl_core.study import table_verdicts

    monkeypatch.delenv("FTCL_RUNS_ROOT", raising=False)  # the committed runs, wherever a user keeps theirs
    fresh = table_verdicts.write_summary("cpu", out=tmp_path / "summary.csv")
    stored = ROOT / "results" / "summary.csv"
    assert fresh.read_text() == stored.read_text(), "results/summary.csv is stale: run `python -m ftcl_core summary`"
