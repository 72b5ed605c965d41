"""Issue 64, the twelfth trial (a helper's ~390 hostile inputs at 2e33a63): the library given meta, sparse or
Fraction inputs, temperatures that overflow, a replay of no epoch order, SimCLR's and the global rows' arguments
unchecked, an FTConfig whose start ft.logits cannot honour; augmentation knobs of a transform that never runs, a run
nested in a run, an eval.json copied into an unfinished run, a complete run's truncated checkpoint; and the unclear
words: a mapping read from an override, three conditions in one refusal, a name no folder can take, the start-up line
before a complete run's checks, a readouts line naming files it does not hold.  One test a class."""

from __future__ import annotations

import shutil
from fractions import Fraction

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)
from test_hostile_round9 import SMOKE
from test_hostile_round13 import TINY, finished  # noqa: F401  (finished: a fixture, one complete smoke run)

from ftcl_core import ft
from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.batch_losses import simclr_ft_logits, sinkhorn, swav_loss
from ftcl_core.config import ConfigError, load_config
from ftcl_core.losses import moco_ft_logits
from ftcl_core.study.config_keys import FTConfig as StudyFT  # ft.pos_gate is the study's key


def unit(*shape: int, seed: int = 0) -> torch.Tensor:
    return F.normalize(torch.randn(*shape, generator=torch.Generator().manual_seed(seed)), dim=1)


# ---- T: tracebacks ----

def test_meta_and_sparse_tensors_are_named_everywhere():
    s = torch.randn(8, 5)
    with pytest.raises(ValueError, match="meta"):
        ft.info_nce(s.to("meta"))
    with pytest.raises(ValueError, match="meta"):
        sinkhorn(s.to("meta"))
    with pytest.raises(ValueError, match="meta"):
        swav_loss(s, s.to("meta"), 0.1)
    with pytest.raises(TypeError, match="to_dense"):
        sinkhorn(s.to_sparse())
    q, k, queue = unit(4, 8), unit(4, 8, seed=1), unit(16, 8, seed=2)
    with pytest.raises(TypeError, match="to_dense"):
        ft.logits(q.to_sparse(), k, queue, ft.FTConfig(pos=True), torch.Generator(), tau=0.2)


def test_a_fraction_is_a_number_where_a_temperature_is():
    q, k, queue = unit(4, 8), unit(4, 8, seed=1), unit(16, 8, seed=2)
    assert torch.isfinite(ft.logits(q, k, queue, ft.FTConfig(), torch.Generator(), tau=Fraction(1, 5))).all()
    s = torch.randn(8, 5)
    assert torch.isfinite(swav_loss(s, s, Fraction(1, 10)))
    assert torch.isfinite(sinkhorn(s, Fraction(1, 20))).all()


@pytest.mark.parametrize(("rows", "n_global", "error"), [
    (torch.arange(8.0), 8, TypeError), ([0, 1, 2, 3, 4, 5, 6, 7], 8, TypeError), (torch.arange(8), 4, ValueError),
    (torch.arange(8), -1, ValueError), (torch.arange(8) + 100, 8, ValueError), (None, 8, ValueError),
])
def test_the_global_rows_are_checked(rows, n_global, error):
    q, k, queue = unit(8, 8), unit(8, 8, seed=1), unit(16, 8, seed=2)
    with pytest.raises(error, match="rows|n_global"):
        moco_ft_logits(q, k, queue, ft.FTConfig(pos=True, granularity="sample"), torch.Generator(), True, rows,
                       n_global)


def test_simclr_ft_logits_checks_its_views_banks_and_rows():
    z1, z2 = unit(8, 16), unit(8, 16, seed=1)
    rows, cfg, gen = torch.arange(8), ft.FTConfig(pos=True), torch.Generator()
    with pytest.raises(TypeError, match="rows"):
        simclr_ft_logits(z1, z2, z1, z2, rows.float(), cfg, gen)
    with pytest.raises(ValueError, match="bank"):
        simclr_ft_logits(z1, z2, z1, unit(6, 16), rows, cfg, gen)
    with pytest.raises(TypeError, match="z1"):
        simclr_ft_logits(z1.numpy(), z2, z1, z2, rows, cfg, gen)
    with pytest.raises(ValueError, match="L2-normalised"):
        simclr_ft_logits(z1 * 5, z2, z1 * 5, z2, rows, cfg, gen)
    with pytest.raises(ValueError, match="no in-batch negatives"):
        simclr_ft_logits(z1[:1], z2[:1], z1[:1], z2[:1], rows[:1], cfg, gen)
    pos, neg = simclr_ft_logits(z1, z2, z1, z2, rows, cfg, gen)
    assert pos.shape == (16,) and neg.shape == (16, 14)


@pytest.mark.parametrize("losses", [torch.tensor(1.0), np.array(1.0), {3.0, 2.0, 1.0}])
def test_replay_refuses_losses_of_no_epoch_order(losses):
    with pytest.raises(ValueError, match="sequence of numbers"):
        ft.PlateauStart.replay(losses)


# ---- N: nonsense accepted ----

@pytest.mark.parametrize("cfg", [ft.FTConfig(pos=True, start_epoch=10), ft.FTConfig(pos=True, start="auto"),
                                 StudyFT(pos=True, start_epoch=1, pos_gate=0.5)])
def test_ft_logits_refuses_a_start_it_cannot_honour(cfg):
    q, k, queue = unit(4, 8), unit(4, 8, seed=1), unit(16, 8, seed=2)
    with pytest.raises(ValueError, match="active=epoch >= start_epoch"):
        ft.logits(q, k, queue, cfg, torch.Generator(), tau=0.2)


def test_temperatures_that_overflow_are_refused():
    q, k, queue, s = unit(4, 8), unit(4, 8, seed=1), unit(16, 8, seed=2), torch.randn(8, 5)
    with pytest.raises(ValueError, match="0.0001"):
        ft.logits(q, k, queue, ft.FTConfig(), torch.Generator(), tau=1e-39)
    with pytest.raises(ValueError, match="0.0001"):
        swav_loss(s, s, 1e-39)
    with pytest.raises(ValueError, match="epsilon"):
        sinkhorn(s, 1e-300)
    with pytest.raises(ConfigError, match="moco.tau"):
        load_config(SMOKE, ["moco.tau=1e-39"])


@pytest.mark.parametrize("overrides", [["augment.blur_p=0", "augment.blur_sigma=[0.5, 1.0]"],
                                       ["augment.preset=v1", "augment.blur_sigma=[0.5, 1.0]"],
                                       ["augment.jitter_p=0", "augment.jitter=[0.4, 0.4, 0.4, 0.1]"]])
def test_a_knob_of_a_transform_that_never_runs_is_refused(overrides):
    with pytest.raises(ConfigError, match="never runs"):
        load_config(SMOKE, overrides)


def test_a_run_inside_a_run_folder_is_refused(capsys, finished):  # noqa: F811  (the fixture)
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(finished / "sub"), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "inside the run folder")
    assert not (finished / "sub").exists()


def test_an_eval_json_copied_into_an_unfinished_run_is_refused(capsys, tmp_path, finished):  # noqa: F811
    from ftcl_core.training import step_callback

    def press(step: int) -> None:
        if step == 7:  # in epoch 2 of 2: epoch 1's checkpoint is written
            raise KeyboardInterrupt

    run, two = tmp_path / "run", ["train.epochs=2", *TINY[1:]]
    with step_callback(press):
        code, _ = cli(capsys, "train", SMOKE, *two, "--out", str(run), "--no-progress")
    assert code == 130 and (run / "checkpoint.pt").is_file() and not (run / "eval.json").exists()
    shutil.copy(finished / "eval.json", run / "eval.json")  # another config's readouts: their config is not this one
    code, err = cli(capsys, "train", SMOKE, *two, "--out", str(run), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "eval.json", "config")
    twin = tmp_path / "twin"  # the same config, trained to the end elsewhere: only the epochs tell
    assert cli(capsys, "train", SMOKE, *two, "--out", str(twin), "--no-progress")[0] == 0
    shutil.copy(twin / "eval.json", run / "eval.json")
    code, err = cli(capsys, "train", SMOKE, *two, "--out", str(run), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "eval.json", "epoch 1 of 2")


def test_a_complete_runs_truncated_checkpoint_is_not_said_to_be_held(capsys, tmp_path, finished):  # noqa: F811
    """Its readouts do not rest on the checkpoint (a sweep copies such a run without reading it): they are given,
    and the last line no longer says the folder holds its checkpoint."""
    from ftcl_core.study.cli import main

    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "checkpoint.pt").write_bytes((run / "checkpoint.pt").read_bytes()[:1000])
    assert main(["train", SMOKE, *TINY, "--out", str(run), "--no-progress"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert "readouts:" in last and "checkpoint" not in last, last


# ---- U: unclear ----

def test_a_value_read_as_a_mapping_is_named_as_a_value():
    with pytest.raises(ConfigError, match="quote it"):
        load_config(SMOKE, ["model.encoder=timm:"])


def test_each_shards_condition_is_said_alone():
    with pytest.raises(ConfigError, match="does not divide train.batch_size"):
        load_config(SMOKE, ["ft.pos=true", "ft.shards=7"])


@pytest.mark.parametrize("name", ["with\x00nul", "s" * 300])
def test_a_setting_name_no_folder_can_take_is_refused(tmp_path, name):
    from ftcl_core.study.experiment_file import Experiment

    exp = tmp_path / "e.yaml"
    exp.write_text(f'table: HX\nbase: {{cpu: configs/cpu_moco_v2.yaml}}\nsettings:\n  "{name}": {{}}\n'
                   .replace("\x00", "\\0"))
    with pytest.raises(ConfigError, match="printable characters"):
        Experiment.load(exp)


def test_a_complete_run_says_its_line_after_its_files_are_checked_and_names_what_it_holds(capsys, tmp_path,
                                                                                         finished):  # noqa: F811
    from ftcl_core.__main__ import _announce

    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "config.yaml").unlink()
    (run / "checkpoint.pt").unlink()
    (run / "provenance.json").unlink()
    banner = _announce(["train", SMOKE, *TINY, "optim.lr=0.5", "--out", str(run)])
    from ftcl_core.study.cli import main
    code = main(["train", SMOKE, *TINY, "optim.lr=0.5", "--out", str(run), "--no-progress"], banner=banner)
    out = capsys.readouterr()
    assert code == EXIT_ERROR and "holds a complete run" not in out.out, out
    shutil.copytree(finished, tmp_path / "whole")
    (tmp_path / "whole" / "checkpoint.pt").unlink()
    code = main(["train", SMOKE, *TINY, "--out", str(tmp_path / "whole"), "--no-progress"])
    said = capsys.readouterr().out
    assert code == 0 and "checkpoint" not in said.splitlines()[-1], said


@pytest.mark.slow  # two child sweeps in subprocesses
def test_sigterm_to_a_parallel_sweep_stops_its_children_and_says_so(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from test_hostile_inputs import ROOT

    exp = tmp_path / "par.yaml"
    exp.write_text("table: PAR\nbase: {cpu: configs/cpu_moco_v2.yaml}\nseeds: [0, 1, 2, 3]\nsettings:\n  plain: {}\n")
    env = {**os.environ, "FTCL_RUNS_ROOT": str(tmp_path / "root"), "OMP_NUM_THREADS": "1"}
    parent = subprocess.Popen([sys.executable, "-m", "ftcl_core", "sweep", str(exp), "--profile", "smoke",
                               "--parallel", "2"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    deadline = time.monotonic() + 240
    while not list((tmp_path / "root").rglob("config.yaml")) and time.monotonic() < deadline:
        time.sleep(0.2)
    parent.send_signal(signal.SIGTERM)
    _, err = parent.communicate(timeout=300)
    assert parent.returncode == 143 and "interrupted (SIGTERM)" in err, (parent.returncode, err[-500:])
    assert len(list((tmp_path / "root").rglob("eval.json"))) < 4  # the children stopped, not trained on


def test_readouts_left_under_an_edited_config_are_refused(capsys, tmp_path, finished):  # noqa: F811
    """Their eval.json names the config that made them, so editing config.yaml is found with the checkpoint and the
    provenance gone (the run's other witnesses)."""
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    for name in ("checkpoint.pt", "provenance.json"):
        (run / name).unlink()
    (run / "config.yaml").write_text((run / "config.yaml").read_text().replace("lr: 0.06", "lr: 0.5"))
    assert "lr: 0.5" in (run / "config.yaml").read_text()
    code, err = cli(capsys, "train", SMOKE, *TINY, "optim.lr=0.5", "--out", str(run), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "config.yaml", "eval.json")
