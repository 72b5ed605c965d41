"""Issue 64, the eleventh trial (a helper's ~680 hostile inputs at f6681f8): a readout's learning rate or a
temperature far beyond any use (the probe diverged, or every logit near 0, reported as a result), a gated +pos run
that died at its first gated step and left a run of another config behind, a log copied into a complete run that
never wrote one, an edited eval.json that summary met with a KeyError, a provenance.json whose record of files is
no mapping, a --set value YAML cannot read, a runs root that is a file.  One test a class."""

from __future__ import annotations

import json
import shutil

import pytest
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)
from test_hostile_round9 import SMOKE

from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.config import ConfigError, load_config
from ftcl_core.runs import RunDir, RunFileError
from ftcl_core.study.config_keys import FTConfig  # the study's: ft.pos_gate is its key
from ftcl_core.study.moco_diagnosis import without_pos

TINY = ["train.epochs=1", "data.n_train=320", "data.n_test=64", "eval.linear_epochs=1"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One complete smoke run (seconds), trained by this code (its provenance records its logs), copied by each
    test that damages it."""
    out = tmp_path_factory.mktemp("finished") / "run"
    from ftcl_core.__main__ import main
    assert main(["train", SMOKE, *TINY, "--out", str(out), "--no-progress"]) == 0
    return out


@pytest.mark.parametrize(("override", "named"), [
    ("eval.linear_lr=1.0e+300", "eval.linear_lr"), ("eval.linear_lr=1.0e+30", "eval.linear_lr"),
    ("eval.knn_t=1.0e+300", "eval.knn_t"), ("moco.tau=1.0e+300", "moco.tau"), ("moco.tau=50", "moco.tau"),
])
def test_a_readout_rate_or_temperature_beyond_any_use_is_refused(override, named):
    with pytest.raises(ConfigError, match=named):
        load_config(SMOKE, [override])


def test_the_gated_steps_of_a_pos_only_run_are_plain_moco():
    assert without_pos(FTConfig(pos=True, start_epoch=1, pos_gate=0.1)) == FTConfig()
    both = without_pos(FTConfig(pos=True, neg=True, start_epoch=1, pos_gate=0.1))
    assert both.neg and not both.pos and both.start_epoch == 1


def test_a_log_this_run_never_wrote_is_refused(capsys, tmp_path, finished):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    assert not (run / "histograms.npz").exists() and "files" in json.loads((run / "provenance.json").read_text())
    shutil.copy(run / "metrics.npz", run / "histograms.npz")
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(run), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "histograms.npz", "not a file this run wrote")


@pytest.mark.parametrize("files", [None, [1, 2], "abc", {"metrics.npz": 3}])
def test_a_provenance_whose_files_are_no_mapping_is_damaged(tmp_path, finished, files):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    prov = json.loads((run / "provenance.json").read_text())
    (run / "provenance.json").write_text(json.dumps({**prov, "files": files}))
    with pytest.raises(RunFileError, match="provenance.json is damaged"):
        RunDir(run).load_provenance()


def test_summary_names_an_edited_eval_json(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "store"))
    args = ("experiments/diagnosis/init_v1.yaml", "--profile", "smoke", "--settings", "baseline", "--no-progress")
    assert cli(capsys, "sweep", *args, "--seeds", "0")[0] == 0
    eval_json = tmp_path / "store" / "smoke" / "D-init-v1" / "baseline" / "seed0" / "eval.json"
    readouts = json.loads(eval_json.read_text())
    if "readouts" not in json.loads((eval_json.parent / "provenance.json").read_text()):
        pytest.skip("this run's provenance keeps no digest of its readouts")
    eval_json.write_text(json.dumps({**readouts, "linear_top1": 99.0}))
    code, err = cli(capsys, "summary", "--profile", "smoke")
    assert_one_line(code, err, EXIT_ERROR, "eval.json")
    assert "KeyError" not in err


def test_a_set_value_yaml_cannot_read_is_one_line(capsys):
    code, err = cli(capsys, "sweep", "experiments/table7_ft_v1.yaml", "--profile", "smoke", "--set", "device=[1")
    assert_one_line(code, err, EXIT_ERROR, "not YAML")


@pytest.mark.parametrize("command", ["summary", "predict", "calibration"])
def test_a_runs_root_that_is_a_file_is_one_line(capsys, tmp_path, monkeypatch, command):
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "afile"))
    code, err = cli(capsys, command, "--profile", "smoke")
    assert_one_line(code, err, EXIT_ERROR, "FTCL_RUNS_ROOT", "is a file")
