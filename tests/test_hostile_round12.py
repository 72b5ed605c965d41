"""Issue 64, what the tenth trial left (a helper's ~520 hostile inputs at fbbc221): keys a method ignores
(``model.hidden`` for MoCo, ``model.pred_hidden`` beside SimSiam), one SwAV prototype (a loss of exactly 0), the
library's SwAV and FT functions taking a zero temperature, a zero entropy weight, a negative iteration count,
features that are not normalised or hold no data; and the unclear messages: a missing experiment base (a raw
Errno), advice that cannot be followed (milestones "between 1 and 0"), the smoke hint on errors about no epoch, a
``checkpoint.pt`` that is a folder told to re-download a data set, the start-up line before a damaged file's error,
a multi-line YAML error, NumPy's numbers refused as no number.  One test a class."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)
from test_hostile_round9 import ROOT, SMOKE

from ftcl_core import ft
from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.batch_losses import sinkhorn, swav_loss
from ftcl_core.config import ConfigError, load_config
from ftcl_core.config_sections import FTConfig

TINY = ["train.epochs=1", "data.n_train=320", "data.n_test=64", "eval.linear_epochs=1"]


@pytest.mark.parametrize(("config", "override", "named"), [
    ("configs/smoke_moco_v2.yaml", "model.hidden=64", "model.hidden"),
    ("configs/smoke_byol.yaml", "model.pred_hidden=16", "model.pred_hidden"),
    ("configs/smoke_swav.yaml", "swav.prototypes=1", "swav.prototypes"),
])
def test_a_key_the_method_ignores_or_a_loss_of_nothing_is_refused(config, override, named):
    with pytest.raises(ConfigError, match=named):
        load_config(config, [override])


def test_the_keys_a_method_uses_are_still_taken():
    assert load_config("configs/smoke_simsiam.yaml", ["model.pred_hidden=16"]).model.pred_hidden == 16
    assert load_config("configs/smoke_byol.yaml", ["model.hidden=64"]).model.hidden == 64


@pytest.mark.parametrize("call", [
    lambda s: sinkhorn(s, epsilon=0.0), lambda s: sinkhorn(s, iters=-1), lambda s: sinkhorn(s, iters=0),
    lambda s: sinkhorn(s, epsilon=float("nan")), lambda s: swav_loss(s, s, tau=0.0),
])
def test_swavs_library_functions_refuse_a_zero_temperature_weight_or_count(call):
    with pytest.raises(ValueError, match="SwAV"):
        call(torch.randn(8, 5))


def _unit(*shape: int) -> torch.Tensor:
    return F.normalize(torch.randn(*shape), dim=1)


def test_ft_logits_refuses_features_that_are_not_normalised_on_the_cpu():
    q, k, queue = _unit(4, 8), _unit(4, 8), _unit(16, 8)
    cfg, gen = FTConfig(pos=True), torch.Generator().manual_seed(0)
    assert ft.logits(q, k, queue, cfg, gen, tau=0.2).shape == (4, 17)
    with pytest.raises(ValueError, match=r"F\.normalize\(q"):
        ft.logits(3 * q, k, queue, cfg, gen, tau=0.2)
    with pytest.raises(ValueError, match=r"F\.normalize\(k"):
        ft.logits(q, k * 0.5, queue, cfg, gen, tau=0.2)
    q[0] = float("nan")  # a diverged step's features pass: the loss says NaN, the loop's signal
    assert ft.logits(q, k, queue, cfg, gen, tau=0.2).isnan().any()


def test_ft_logits_names_meta_tensors():
    meta = torch.empty(4, 8, device="meta")
    with pytest.raises(ValueError, match="meta device"):
        ft.logits(meta, meta, torch.empty(16, 8, device="meta"), FTConfig(pos=True), None, tau=0.2)


def test_numpys_numbers_are_numbers_and_complex_ones_are_not():
    cfg = FTConfig(alpha_ex=np.float32(2.5), start_epoch=np.int64(3), pos=True)
    assert cfg.alpha_ex == 2.5 and type(cfg.alpha_ex) is float and type(cfg.start_epoch) is int
    with pytest.raises(ConfigError, match="ft.alpha_ex"):
        FTConfig(alpha_ex=2 + 1j)
    with pytest.raises(ConfigError, match="ft.alpha_ex"):
        FTConfig(alpha_ex=np.bool_(True))


def test_an_experiment_base_that_is_no_file_is_named(capsys, tmp_path):
    exp = tmp_path / "e.yaml"
    exp.write_text("table: T\nbase: {cpu: configs/nosuch.yaml}\nsettings:\n  a: {}\n")
    code, err = cli(capsys, "plan", str(exp), "--profile", "cpu")
    assert_one_line(code, err, EXIT_ERROR, "base cpu", "configs/nosuch.yaml", "not a file")
    assert "Errno" not in err


def test_the_smoke_hint_comes_only_with_an_error_about_epochs(capsys, tmp_path):
    exp = tmp_path / "e.yaml"
    exp.write_text("table: T\nbase: {cpu: configs/cpu_moco_v2.yaml}\nsettings:\n  a: {optim.lr: -1}\n")
    code, err = cli(capsys, "plan", str(exp), "--profile", "smoke")
    assert_one_line(code, err, EXIT_ERROR, "optim.lr")
    assert "2 epochs" not in err


def test_milestones_in_a_one_epoch_run_get_advice_that_can_be_followed(capsys, tmp_path):
    code, err = cli(capsys, "train", SMOKE, *TINY, "optim.schedule=step", "optim.milestones=[5]",
                    "--out", str(tmp_path / "r"), "--no-progress")
    line = assert_one_line(code, err, EXIT_ERROR, "optim.milestones", "cosine")
    assert "between 1 and 0" not in line and not (tmp_path / "r").exists()


def _program(*argv: str) -> subprocess.CompletedProcess:
    """``python -m ftcl_core ARGV`` as a user runs it: the start-up line comes from the entry point."""
    return subprocess.run([sys.executable, "-m", "ftcl_core", *argv], cwd=ROOT, capture_output=True, text=True,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}, timeout=300)


@pytest.mark.slow
def test_a_run_file_that_is_a_folder_or_damaged_is_said_before_the_start_up_line(tmp_path):
    run = tmp_path / "run"
    assert _program("train", SMOKE, *TINY, "--out", str(run), "--no-progress").returncode == 0
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(run / "config.yaml", folder / "config.yaml")
    (folder / "checkpoint.pt").mkdir()
    done = _program("train", SMOKE, *TINY, "--out", str(folder), "--no-progress")
    assert_one_line(done.returncode, done.stderr, EXIT_ERROR, "checkpoint.pt", "folder", "move it away")
    assert done.stdout == "" and "data set" not in done.stderr
    (run / "metrics.npz").write_bytes((run / "metrics.npz").read_bytes()[:100])
    done = _program("train", SMOKE, *TINY, "--out", str(run), "--no-progress")
    assert_one_line(done.returncode, done.stderr, EXIT_ERROR, "metrics.npz")
    assert done.stdout == "", done.stdout  # not "holds a complete run", then the error


def test_a_report_parameter_that_is_no_yaml_is_one_line():
    from ftcl_core.pages.report import ReportError, parse_parameters

    with pytest.raises(ReportError) as err:
        parse_parameters([["seeds", "[0, 1"]])
    assert "\n" not in str(err.value) and "[0, 1, 2]" in str(err.value)
