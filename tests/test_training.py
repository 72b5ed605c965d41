"""End-to-end training on the smoke config: outputs, resume after kill -9, errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ftcl_core.checkpoints import IncompatibleCheckpoint
from ftcl_core.config import load_config
from ftcl_core.runs import RunDir
from ftcl_core.training import TrainingDiverged, train

SMOKE = "configs/smoke_moco_v2.yaml"


KILL_AT_STEP = str(Path(__file__).with_name("kill_at_step.py"))


def cli(out, *overrides, env=None, kill_at=None):
    """``python -m ftcl_core train``; with ``kill_at``, killed by signal 9 before that step (tests/kill_at_step.py)."""
    launch = [sys.executable, "-m", "ftcl_core"] if kill_at is None else [sys.executable, KILL_AT_STEP, str(kill_at)]
    cmd = [*launch, "train", SMOKE, *overrides, "--out", str(out), "--no-progress"]
    return subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=600)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "smoke"
    cfg = load_config(SMOKE, ["ft.pos=true", "ft.neg=true", "train.epochs=3", "ft.start_epoch=1"])
    return out, cfg, train(cfg, out, progress=False)


def test_run_folder_holds_everything(smoke_run):
    out, cfg, result = smoke_run
    run = RunDir(out)
    for key in ("linear_top1", "knn_top1", "random_init_linear_top1", "wall_s"):
        assert key in result
    assert run.load_config() == cfg
    m = run.load_metrics()
    assert len(m["step"]) == 3 * 8 and np.all(np.isfinite(m["loss"]))
    # FT starts at epoch 1: before it raw and FT statistics coincide, after it they differ
    first, later = m["epoch"] == 0, m["epoch"] >= 1
    assert np.allclose(m["pos_mean"][first], m["ft_pos_mean"][first])
    assert np.all(m["ft_pos_mean"][later] < m["pos_mean"][later])
    g = run.load_grad_norms()
    assert g["per_epoch"].shape == (3, len(g["layers"]))
    prov = run.load_provenance()
    assert prov["seed"] == 0 and "torch" in prov["versions"] and prov["status"] == "complete"
    state = torch.load(run.checkpoint, weights_only=True)
    assert {"model", "optimizer", "rng", "epoch"} <= set(state)
    assert "queue" in state["model"] and "queue_ptr" in state["model"]


def test_complete_run_is_loaded_not_retrained(smoke_run):
    out, cfg, result = smoke_run
    mtime = RunDir(out).checkpoint.stat().st_mtime
    assert train(cfg, out, progress=False) == result
    assert RunDir(out).checkpoint.stat().st_mtime == mtime


def test_other_config_in_the_same_folder_is_refused(smoke_run):
    out, cfg, _ = smoke_run
    cfg2 = cfg.updated({"seed": 1})
    with pytest.raises(IncompatibleCheckpoint, match="seed"):
        train(cfg2, out, progress=False)


@pytest.mark.slow  # runs in subprocesses, one killed
def test_resume_after_kill9_reproduces_the_uninterrupted_run(tmp_path):
    args = ("train.epochs=3", "ft.pos=true", "ft.neg=true")
    full = cli(tmp_path / "full", *args)
    assert full.returncode == 0, full.stderr
    # the command says at once where it writes and how to resume, and at the end where the readouts are
    first, last = full.stdout.splitlines()[0], full.stdout.splitlines()[-1]
    assert first.startswith(f"training into {tmp_path / 'full'}:") and "the same command resumes" in first, first
    assert last.startswith(f"readouts: {tmp_path / 'full' / 'eval.json'}"), last
    killed = cli(tmp_path / "resumed", *args, kill_at=13)
    assert killed.returncode == -9
    assert not RunDir(tmp_path / "resumed").is_complete()
    assert torch.load(RunDir(tmp_path / "resumed").checkpoint, weights_only=True)["epoch"] == 1
    resumed = cli(tmp_path / "resumed", *args)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith(f"resuming the run in {tmp_path / 'resumed'} from its checkpoint"), resumed.stdout
    again = cli(tmp_path / "full", *args)
    assert again.stdout.startswith(f"{tmp_path / 'full'} holds a complete run"), again.stdout
    a, b = RunDir(tmp_path / "full").load_metrics(), RunDir(tmp_path / "resumed").load_metrics()
    assert set(a) == set(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    ea, eb = (json.loads((tmp_path / d / "eval.json").read_text()) for d in ("full", "resumed"))
    assert ea["linear_top1"] == eb["linear_top1"] and ea["knn_top1"] == eb["knn_top1"]


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    cfg = load_config(SMOKE, ["train.epochs=3"])
    out = tmp_path / "nan"
    import ftcl_core.training as tr

    real = tr.train_step
    calls = {"n": 0}

    def poisoned(*a, **k):
        res = real(*a, **k)
        calls["n"] += 1
        if calls["n"] > 10:  # epoch 1 (8 steps per epoch): the loss, as recorded and as the step's health says
            res.values[0] = float("nan")
            res.health = torch.tensor([True, False, False])
        return res

    monkeypatch.setattr(tr, "train_step", poisoned)
    with pytest.raises(TrainingDiverged, match="step 10 of 24 .*the loss became NaN"):
        train(cfg, out, progress=False)
    assert torch.load(RunDir(out).checkpoint, weights_only=True)["epoch"] == 1
    assert json.loads((out / "status.json").read_text())["status"] == "diverged"


@pytest.mark.slow  # one subprocess per bad input
def test_cli_reports_bad_input_without_traceback(tmp_path):
    res = cli(tmp_path / "x", "moco.tau=-1")
    assert res.returncode == 2 and "moco.tau" in res.stderr and "Traceback" not in res.stderr
    res = cli(tmp_path / "y", "model.encoder=resnet99")
    assert res.returncode == 2 and "unknown encoder" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "y").exists()  # a typo is caught before the run folder is written
    res = cli(tmp_path / "z", "data.name=imagefolder", f"data.root={tmp_path / 'none'}", f"data.test_root={tmp_path}")
    assert res.returncode == 2 and "does not exist" in res.stderr


def test_unreadable_checkpoint_is_a_clear_error(tmp_path):
    out = tmp_path / "bad"
    cfg = load_config(SMOKE)
    out.mkdir()
    (out / "checkpoint.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(IncompatibleCheckpoint, match="cannot be read"):
        train(cfg, out, progress=False)


def test_a_waiting_process_names_the_holder_of_the_run_lock(tmp_path, capsys):
    import threading
    import time

    from ftcl_core.runs import run_lock

    entered = threading.Event()

    def second():
        with run_lock(tmp_path):
            entered.set()

    with run_lock(tmp_path):
        waiter = threading.Thread(target=second)
        waiter.start()
        time.sleep(0.3)
        assert not entered.is_set()  # flock excludes a second open file, even in the same process
    waiter.join(10)
    assert entered.is_set()
    assert f"process {os.getpid()} is training it" in capsys.readouterr().err
