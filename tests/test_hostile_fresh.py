"""Issue 64's fresh trial of hostile inputs (the second one): each input that ended in a traceback, accepted
nonsense, or lost or mislabelled data has its test, checked before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ftcl_core.config import ConfigError, RunConfig, load_config, parse_overrides
from ftcl_core.runs import RunDir, RunFileError
from ftcl_core.study.cli import check_unique_overrides

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "configs" / "smoke_moco_v2.yaml"


def test_a_key_given_twice_on_the_command_line_is_refused(tmp_path, capsys):
    from ftcl_core.study.cli import main

    with pytest.raises(ConfigError, match="seed is given twice"):
        check_unique_overrides(["seed=1", "seed=2"])
    code = main(["train", str(SMOKE), "seed=1", "seed=2", "--out", str(tmp_path / "run")])
    assert code == 2 and "given twice" in capsys.readouterr().err and not (tmp_path / "run").exists()
    # layered overrides inside the package (a profile over a setting) still take the last, as they must
    assert parse_overrides(["seed=1", "seed=2"]) == {"seed": 2}


def test_a_knn_readout_over_more_neighbours_than_images_is_refused():
    with pytest.raises(ConfigError, match=r"eval.knn_k=100000 exceeds data.n_train"):
        load_config(SMOKE, ["eval.knn_k=100000"])


def test_an_out_name_too_long_is_one_line(tmp_path):
    env = {**os.environ, "FTCL_RUNS_ROOT": str(tmp_path / "store"), "OMP_NUM_THREADS": "1"}
    res = subprocess.run([sys.executable, "-m", "ftcl_core", "train", str(SMOKE), "--out", str(tmp_path / ("a" * 300))],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]


@pytest.mark.parametrize("content", ['{"cells": 5}', "not json"])
def test_a_report_of_a_file_that_is_not_a_notebook_is_refused(tmp_path, content):
    from ftcl_core.pages import report

    fake = tmp_path / "fake.ipynb"
    fake.write_text(content)
    with pytest.raises(report.ReportError, match="not a readable notebook"):
        report.report(fake, tmp_path / "page.html")
    assert not (tmp_path / "page.html").exists()


def test_readouts_without_any_record_of_their_config_are_never_relabelled(tmp_path):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    (run.path / "eval.json").write_text(json.dumps({"linear_top1": 50.0}))  # a finished run's readouts, nothing else
    cfg = load_config(SMOKE, ["seed=7"])
    with pytest.raises(RunFileError, match="nothing in .* records its readouts. config"):
        run.restore_config(cfg)
    assert not run.config.exists()
    # with its provenance the seed decides, as before: the same seed restores, another is refused
    (run.path / "provenance.json").write_text(json.dumps({"seed": 7}))
    run.restore_config(cfg)
    assert isinstance(run.load_config(), RunConfig) and run.load_config().seed == 7


def test_a_fit_on_a_store_without_ft_runs_writes_nothing(tmp_path, monkeypatch):
    from ftcl_core.study import predict

    committed = ROOT / predict.REPORT
    before = committed.read_bytes() if committed.is_file() else None
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "store"))
    (tmp_path / "store" / "smoke").mkdir(parents=True)
    with pytest.raises(ConfigError, match="nothing was written"):
        predict.write_report("smoke")
    assert predict.report_path("smoke") == tmp_path / "store" / "smoke" / "predictor.json"
    assert (committed.read_bytes() if committed.is_file() else None) == before
