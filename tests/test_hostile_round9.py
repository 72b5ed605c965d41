"""Issue 64, what the eighth trial found (a helper's ~330 hostile inputs at fc72958): heads too large for memory, a
report page under a file, another run's log read by ``summary``, a calibrated switch before a refusal, base-60
floats, empty mappings, run files among a user's, ``~`` in paths, the library writing into the current folder,
the plateau rule's other entries, a late-start resume told its config.yaml was edited, and unclear messages of
the data keys.  One test a class."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)

from ftcl_core import ft
from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.config import ConfigError, load_config
from ftcl_core.pages.report import ReportError, report
from ftcl_core.runs import RunDir
from ftcl_core.study.preflight import check_memory
from ftcl_core.training import train

ROOT = Path(__file__).resolve().parent.parent
SMOKE = "configs/smoke_moco_v2.yaml"


@pytest.mark.parametrize("config, override", [("configs/smoke_simclr.yaml", "model.dim=1000000000000"),
                                              ("configs/smoke_swav.yaml", "swav.prototypes=1000000000000")])
def test_a_head_too_large_for_memory_is_refused_before_anything_is_written(capsys, tmp_path, config, override):
    with pytest.raises(ConfigError, match="weights"):
        check_memory(load_config(ROOT / config, [override]), "cpu")
    code, err = cli(capsys, "train", config, override, "train.epochs=1", "--out", str(tmp_path / "run"))
    assert_one_line(code, err, EXIT_ERROR, "weights")
    assert not (tmp_path / "run").exists()


def test_a_report_page_that_cannot_be_placed_is_one_error(tmp_path):
    chapter = ROOT / "book" / "07b_gradient.ipynb"
    (tmp_path / "afile").write_text("mine")
    (tmp_path / "twin.ipynb").mkdir()
    for page, words in ((tmp_path / "afile" / "x.html", "a file"), (tmp_path / "twin.html", "folder"),
                        (tmp_path / ("n" * 300 + ".html"), "cannot be written")):
        with pytest.raises(ReportError, match=words):
            report(chapter, page, {"profile": "smoke"})
    assert (tmp_path / "afile").read_text() == "mine" and (tmp_path / "twin.ipynb").is_dir()


def test_another_runs_log_in_a_complete_run_is_refused_by_summary(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "store"))
    code, _ = cli(capsys, "sweep", "experiments/diagnosis/init_v1.yaml", "--profile", "smoke", "--seeds", "0",
                  "--settings", "baseline", "+both", "--no-progress")
    assert code == 0
    table = tmp_path / "store" / "smoke" / "D-init-v1"
    assert set(RunDir(table / "+both" / "seed0").load_provenance()["files"]) >= {"metrics.npz", "grad_norms.npz"}
    shutil.copy(table / "baseline" / "seed0" / "metrics.npz", table / "+both" / "seed0" / "metrics.npz")
    code, err = cli(capsys, "summary", "--profile", "smoke")
    assert_one_line(code, err, EXIT_ERROR, "metrics.npz", "provenance.json")


def test_a_calibrated_sweep_refused_for_its_settings_or_device_rewrites_nothing(capsys, tmp_path):
    exp = tmp_path / "cal1.yaml"
    text = "table: HXC\nbase: {cpu: configs/cpu_moco_v1.yaml}\nseeds: [0]\nsettings: {a: {}}\n"
    exp.write_text(text)
    for extra in (["--settings", "nosuch"], ["--set", "device=banana"]):
        code, err = cli(capsys, "sweep", str(exp), "--profile", "cpu", "--calibrated", *extra)
        assert code == EXIT_ERROR and "Traceback" not in err, err
        assert exp.read_text() == text


@pytest.mark.parametrize("override", ["moco.tau=0:30.0", "optim.lr=1:0.5"])
def test_a_base_60_float_is_refused(tmp_path, override):
    with pytest.raises(ConfigError, match="base-60"):
        load_config(ROOT / SMOKE, [override])
    key, value = override.split("=")
    section, name = key.split(".")
    path = tmp_path / "c.yaml"
    path.write_text(f"method: moco\n{section}: {{{name}: {value}}}\n")  # the same number in a config file
    with pytest.raises(ConfigError, match="base-60"):
        load_config(path)


@pytest.mark.parametrize("override, named", [
    ("seed={}", "empty mapping"), ("train.epochs={}", "empty mapping"),
    ("data.workers=-1", "data.workers"), ("data.eval_split=val", None), ("moco.tau=[0.2]", "moco.tau"),
])
def test_values_that_mean_nothing_are_refused_by_their_key(override, named):
    if named is None:  # a validation split of one image reads 0 or 100 % by chance
        with pytest.raises(ConfigError, match="data.n_val=1"):
            load_config(ROOT / SMOKE, [override, "data.n_val=1"])
        return
    with pytest.raises(ConfigError, match=named):
        load_config(ROOT / SMOKE, [override])


def test_the_data_and_swav_keys_refuse_what_would_keep_nothing():
    with pytest.raises(ConfigError, match="swav.freeze_prototypes_epochs"):
        load_config(ROOT / "configs/smoke_swav.yaml", ["swav.freeze_prototypes_epochs=-3"])
    with pytest.raises(ConfigError, match="data.max_per_class"):
        load_config(ROOT / SMOKE, ["data.name=imagefolder", "data.root=/x", "data.test_root=/y",
                                   "data.max_per_class=0"])


def test_a_folder_of_the_users_files_is_refused_by_the_command_and_the_library(capsys, tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    code, err = cli(capsys, "train", SMOKE, "train.epochs=1", "--out", str(mine))
    assert_one_line(code, err, EXIT_ERROR, "notes.txt")
    cfg = load_config(ROOT / SMOKE, ["train.epochs=1"])
    for out in (mine, "", "."):
        with pytest.raises(ConfigError, match="--out"):
            train(cfg, out, progress=False)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_a_tilde_in_out_or_the_runs_root_is_the_home_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    code, _ = cli(capsys, "train", str(ROOT / SMOKE), "train.epochs=1", "--out=~/run", "--no-progress")
    assert code == 0 and RunDir(tmp_path / "home" / "run").is_complete() and not (tmp_path / "~").exists()
    from ftcl_core.study.experiment_file import profile_root

    monkeypatch.setenv("FTCL_RUNS_ROOT", "~/store")
    assert profile_root("smoke") == tmp_path / "home" / "store" / "smoke"
    os.chdir(ROOT)


@pytest.mark.parametrize("call", [lambda: ft.PlateauStart().switch_on("x"), lambda: ft.PlateauStart().switch_on(-3),
                                  lambda: ft.PlateauStart.replay("12345"), lambda: ft.PlateauStart.replay(5)])
def test_the_plateau_rule_refuses_an_epoch_or_losses_of_the_wrong_kind(call):
    with pytest.raises(ValueError, match="PlateauStart"):
        call()


def test_a_plain_run_resumed_as_a_late_starts_prefix_is_not_told_its_config_was_edited(capsys, tmp_path):
    from ftcl_core.training import epoch_callback

    def stop(run: RunDir, epoch: int) -> None:  # Ctrl-C right after the first epoch's checkpoint
        raise KeyboardInterrupt

    out, tiny = tmp_path / "run", ["train.epochs=3", "data.n_train=512", "data.n_test=128"]
    with epoch_callback(stop):
        code, _ = cli(capsys, "train", SMOKE, *tiny, "--out", str(out), "--no-progress")
    assert code == 130 and (out / "checkpoint.pt").is_file() and not (out / "eval.json").exists()
    code, err = cli(capsys, "train", SMOKE, *tiny, "ft.pos=true", "ft.neg=true", "ft.start_epoch=2", "--out", str(out),
                    "--no-progress")
    assert code == 0 and "changed after the run began" not in err, err
    assert RunDir(out).load_config().ft.pos and RunDir(out).is_complete()


@pytest.mark.parametrize("value", [{"train.epochs": "abc"}, {"train.epochs": -5}, {"optim.milestones": ["abc"]},
                                   {"ft.pos": {}}])
def test_a_setting_value_is_checked_on_the_smoke_profile_as_on_the_cpu(value):
    from ftcl_core.study.experiment_file import resolve

    with pytest.raises(ConfigError, match=next(iter(value))):
        resolve("configs/cpu_moco_v1.yaml", value, "smoke")
    with pytest.raises(ConfigError, match=next(iter(value))):
        resolve("configs/cpu_moco_v1.yaml", value, "cpu")


def test_a_numpy_or_learnable_temperature_is_taken():
    import numpy as np
    import torch
    import torch.nn.functional as F

    q, k, queue = (F.normalize(torch.randn(n, 8, generator=torch.Generator().manual_seed(n)), dim=1) for n in (4, 5, 16))
    k = k[:4]
    plain = ft.logits(q, k, queue, ft.FTConfig(), torch.Generator().manual_seed(0), tau=0.2)
    for tau in (np.float32(0.2), torch.nn.Parameter(torch.tensor(0.2))):
        got = ft.logits(q, k, queue, ft.FTConfig(), torch.Generator().manual_seed(0), tau=tau)
        assert torch.allclose(got, plain)
    assert ft.logits(q, k, queue, ft.FTConfig(), torch.Generator(), tau=torch.nn.Parameter(torch.tensor(0.2))).requires_grad
    with pytest.raises(ValueError, match="tau"):
        ft.logits(q, k, queue, ft.FTConfig(), torch.Generator(), tau=torch.tensor([0.1, 0.2]))
