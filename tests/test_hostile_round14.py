"""Issue 64, what the eleventh trial left (a helper's ~680 hostile inputs at f6681f8): an integer of thousands of
digits, the library's SwAV functions given lists or wrong shapes, readouts and batch-norm groups too small to mean
anything, prototypes frozen past the run, a one-class image folder, augmentations beyond any recipe, a queue that is
not normalised, a dict of losses, ``max_steps=0``, a report's null parameter; and the unclear cases: overrides after
``--out`` dropped from the start-up line, the line said before a refusal, ``device=auto`` refused on a run it resolves
to, ``1.0e+3`` refused where ``1e3`` is taken, NumPy's bools and integers, SIGTERM while torch loads.  One test a
class."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_hostile_inputs import ROOT, assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)
from test_hostile_round9 import SMOKE
from test_hostile_round13 import TINY, finished  # noqa: F401  (finished: a fixture, one complete smoke run)

from ftcl_core import ft
from ftcl_core.__main__ import _announce
from ftcl_core.batch_losses import sinkhorn, swav_loss
from ftcl_core.config import ConfigError, load_config
from ftcl_core.data import ImageSet
from ftcl_core.training import check_data, train

# ---- T: tracebacks ----

@pytest.mark.parametrize("override", ["seed=" + "9" * 5000, "seed=-" + "9" * 5000,
                                      "optim.milestones=[" + "9" * 5000 + "]"])
def test_a_number_of_thousands_of_digits_is_a_config_error(override):
    with pytest.raises(ConfigError, match="digits"):
        load_config(SMOKE, [override])


def test_a_config_file_writing_thousands_of_digits_is_a_config_error(tmp_path):
    bad = tmp_path / "c.yaml"
    bad.write_text(f"base: {ROOT / SMOKE}\nseed: {'9' * 5000}\n")
    with pytest.raises(ConfigError, match="5000 digits"):
        load_config(bad)


@pytest.mark.parametrize("scores", [[[1.0, 2.0]], torch.randn(5), torch.randn(2, 3, 5), torch.ones(4, 3, dtype=torch.long),
                                    torch.ones(0, 3)])
def test_sinkhorn_names_scores_that_are_no_float_matrix(scores):
    with pytest.raises(TypeError, match="B x C"):
        sinkhorn(scores)


def test_swav_loss_names_mismatched_or_wrong_inputs():
    s = torch.randn(8, 5)
    with pytest.raises(ValueError, match="same B x C"):
        swav_loss(s, torch.randn(8, 6), 0.1)
    with pytest.raises(TypeError, match="scores1"):
        swav_loss([[1.0]], [[1.0]], 0.1)
    with pytest.raises(ValueError, match="temperature"):
        swav_loss(s, s, "0.1")
    with pytest.raises(ValueError, match="epsilon"):
        sinkhorn(s, "0.05")


# ---- N: nonsense accepted ----

@pytest.mark.parametrize(("overrides", "named"), [
    (["data.n_test=1"], "data.n_test"),
    (["model.bn_splits=64", "train.batch_size=64"], "model.bn_splits"),
    (["augment.crop_scale=[0.0001, 1.0]"], "augment.crop_scale"),
    (["augment.jitter=[100, 0.4, 0.4, 0.1]"], "augment.jitter"),
    (["augment.blur_sigma=[0.1, 1000]"], "augment.blur_sigma"),
])
def test_a_readout_group_or_augmentation_too_small_or_wide_to_mean_anything_is_refused(overrides, named):
    with pytest.raises(ConfigError, match=named):
        load_config(SMOKE, overrides)


def test_the_recipes_augmentations_still_load():
    for name in ("cpu_cal_simclr", "cpu_cal_moco_v2", "gpu_in100_simclr", "cpu_fmnist_moco_v2"):
        load_config(ROOT / "configs" / f"{name}.yaml")


def test_a_test_set_size_typed_under_the_validation_split_is_refused():
    with pytest.raises(ConfigError, match="data.n_val"):
        load_config(SMOKE, ["data.eval_split=val", "data.n_test=100"])
    kept = load_config("configs/cpu_cal_fmnist_moco_v2.yaml", ["data.eval_split=val"])  # a file's own n_test stays
    assert kept.data.eval_split == "val" and kept.data.n_test == 10000


def test_prototypes_frozen_for_the_whole_run_are_refused():
    with pytest.raises(ConfigError, match="swav.freeze_prototypes_epochs"):
        load_config("configs/smoke_swav.yaml", ["swav.freeze_prototypes_epochs=50"])
    with pytest.raises(ConfigError, match="never learn"):
        load_config("configs/smoke_swav.yaml", ["train.epochs=3", "swav.freeze_prototypes_epochs=3"])
    assert load_config("configs/smoke_swav.yaml", ["train.epochs=1"]).swav.freeze_prototypes_epochs == 1


def test_a_set_of_one_class_is_refused_before_training():
    cfg = load_config(SMOKE, TINY)
    one = ImageSet(torch.zeros(400, 3, 32, 32, dtype=torch.uint8), torch.zeros(400, dtype=torch.long), ("only",))
    two = ImageSet(torch.zeros(64, 3, 32, 32, dtype=torch.uint8), torch.arange(64) % 2, ("a", "b"))
    with pytest.raises(ConfigError, match="one class"):
        check_data(cfg, one, two)
    with pytest.raises(ConfigError, match="one class"):
        check_data(cfg, ImageSet(one.images, torch.arange(400) % 2, ("a", "b")), ImageSet(two.images, two.labels * 0,
                                                                                           ("a", "b")))


def test_ft_logits_refuses_a_queue_that_is_not_normalised():
    g = torch.Generator().manual_seed(0)
    q, k = F.normalize(torch.randn(4, 8), dim=1), F.normalize(torch.randn(4, 8), dim=1)
    with pytest.raises(ValueError, match="queue must hold L2-normalised"):
        ft.logits(q, k, torch.randn(16, 8) * 5, ft.FTConfig(), g, 0.2)
    nan_row = F.normalize(torch.randn(16, 8), dim=1)
    nan_row[3] = float("nan")  # a diverged step reads as NaN, not as a refusal
    assert ft.logits(q, k, nan_row, ft.FTConfig(), g, 0.2).isnan().any()


def test_replay_refuses_a_dict_whose_keys_would_read_as_losses():
    losses = {e: 2.0 - 0.1 * min(e, 4) for e in range(12)}
    with pytest.raises(ValueError, match=r"list\(d.values\(\)\)"):
        ft.PlateauStart.replay(losses)
    assert ft.PlateauStart.replay(list(losses.values())) is not None


@pytest.mark.parametrize("steps", [0, -1, 1.5, True])
def test_train_with_no_step_to_take_leaves_no_folder(tmp_path, steps):
    out = tmp_path / "run"
    with pytest.raises(ConfigError, match="max_steps"):
        train(load_config(SMOKE, TINY), out, progress=False, max_steps=steps)
    assert not out.exists()


@pytest.mark.parametrize("value", ["null", "~", ""])
def test_a_report_parameter_of_null_is_refused(value):
    from ftcl_core.pages.report import ReportError, parse_parameters

    with pytest.raises(ReportError, match="null"):
        parse_parameters([["profile", value]])


# ---- U: unclear ----

def test_the_start_up_line_keeps_overrides_given_after_out(capsys, tmp_path):
    out = tmp_path / "run"
    _announce(["train", SMOKE, "train.epochs=1", "--out", str(out), "data.n_train=320", "--no-progress"])
    said = capsys.readouterr().out
    assert "train.epochs=1" in said and "data.n_train=320" in said and "--no-progress" not in said


@pytest.mark.parametrize("overrides", [["data.n_train=700", "data.n_train=320"],
                                       ["data.image_size=1024", "augment.out_size=1024"]])
def test_the_start_up_line_waits_for_checks_that_may_refuse(capsys, tmp_path, overrides):
    banner = _announce(["train", SMOKE, *overrides, "--out", str(tmp_path / "run")])
    assert banner and capsys.readouterr().out == ""  # printed by the command line only once its checks pass


def test_device_auto_is_the_device_it_resolves_to(capsys, tmp_path, finished):  # noqa: F811  (the fixture)
    code, err = cli(capsys, "train", SMOKE, *TINY, "device=auto", "--out", str(finished), "--no-progress")
    assert code == 0, err
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "eval.json").unlink()  # an unfinished run's checkpoint: the resume compares execution keys
    if torch.cuda.is_available():
        pytest.skip("auto resolves to CUDA here")
    code, err = cli(capsys, "train", SMOKE, *TINY, "device=auto", "--out", str(run), "--no-progress")
    assert code == 0, err


def test_an_integer_in_any_exponent_form_is_taken():
    assert load_config(SMOKE, ["seed=1.0e+3"]).seed == load_config(SMOKE, ["seed=1e3"]).seed == 1000
    assert load_config(SMOKE, ["train.epochs=2.0"]).train.epochs == 2
    with pytest.raises(ConfigError, match="train.epochs"):
        load_config(SMOKE, ["train.epochs=2.5"])


def test_numpy_bools_and_integers_are_taken_where_python_s_are():
    assert ft.FTConfig(pos=np.bool_(True), start_epoch=np.int64(2)).pos is True
    assert ft.PlateauStart(window=np.int64(3)).window == 3
    assert sinkhorn(torch.randn(8, 5), np.float32(0.05), np.int64(3)).shape == (8, 5)
    with pytest.raises(ConfigError, match="ft.alpha_ex"):
        ft.FTConfig(pos=True, alpha_ex=np.bool_(True))


def test_sigterm_while_torch_loads_is_one_line_and_143(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "ftcl_core", "train", SMOKE, *TINY, "--out", str(out),
                             "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.stdout.readline().startswith("training into")  # said before torch loads
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert_one_line(proc.returncode, err, 143, "SIGTERM", "run the same command again")
