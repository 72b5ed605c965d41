"""Issue 64, what the sixth trial left (a helper's ~200 hostile inputs at 584e5d0): a report page over a user's file,
a complete run adopted by another config once its checkpoint and config.yaml are gone, another run's log swapped
into an interrupted one, a resume that executes otherwise, and the tracebacks and accepted nonsense of the library's
lift, experiment files and config files.  One test a class."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)
from test_training import cli as train_cli

from ftcl_core import ft
from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.config import ConfigError, load_config
from ftcl_core.pages.report import ReportError, report
from ftcl_core.runs import RunDir
from ftcl_core.study.config_keys import FTConfig as StudyFT
from ftcl_core.study.experiment_file import Experiment
from ftcl_core.study.preflight import check_device, check_out
from ftcl_core.training import train

ROOT = Path(__file__).resolve().parent.parent
SMOKE = "configs/smoke_moco_v2.yaml"


# ---- data lost or mislabelled ----


def test_a_report_never_writes_over_a_page_it_did_not_make(tmp_path):
    notes = tmp_path / "notes.html"
    notes.write_text("MY NOTES")
    with pytest.raises(ReportError, match="notes.html exists"):
        report(ROOT / "book" / "07b_gradient.ipynb", notes, {"profile": "smoke"})
    assert notes.read_text() == "MY NOTES" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.html"]


def test_a_complete_run_keeps_the_config_of_its_readouts_without_checkpoint_or_config_yaml(tmp_path, capsys):
    out = tmp_path / "run"
    train(load_config(SMOKE, ["train.epochs=1"]), out, progress=False)
    assert RunDir(out).load_provenance()["config"]["train"]["epochs"] == 1  # the record the refusal reads
    for name in ("checkpoint.pt", "config.yaml"):
        (out / name).unlink(missing_ok=True)
    code, err = cli(capsys, "train", SMOKE, "train.epochs=1", "moco.tau=0.5", "--out", str(out))
    assert_one_line(code, err, EXIT_ERROR, "moco.tau", "--out")
    assert not (out / "config.yaml").exists()
    code, err = cli(capsys, "train", SMOKE, "train.epochs=1", "--out", str(out))  # the run's own command restores it
    assert code == 0 and RunDir(out).load_config().moco.tau == load_config(SMOKE).moco.tau


@pytest.mark.slow  # two runs in subprocesses, each killed
def test_another_runs_log_swapped_into_an_interrupted_run_is_refused_and_so_is_another_execution(tmp_path):
    plain, other = tmp_path / "plain", tmp_path / "other"
    assert train_cli(plain, "train.epochs=3", "train.channels_last=true", kill_at=12).returncode != 0  # in epoch 1
    assert train_cli(other, "train.epochs=3", "train.channels_last=true", "ft.pos=true", kill_at=12).returncode != 0
    kept = {n: (plain / n).read_bytes() for n in ("metrics.npz", "grad_norms.npz")}
    for name in kept:
        shutil.copy2(other / name, plain / name)
    r = train_cli(plain, "train.epochs=3", "train.channels_last=true")
    assert r.returncode == EXIT_ERROR and "not the log" in r.stderr and "Traceback" not in r.stderr
    for name, data in kept.items():  # put the run's own log back: the resume goes on
        (plain / name).write_bytes(data)
    r = train_cli(plain, "train.epochs=3", "train.channels_last=false")
    assert r.returncode == EXIT_ERROR and "train.channels_last=True" in r.stderr
    assert train_cli(plain, "train.epochs=3", "train.channels_last=true").returncode == 0


# ---- tracebacks, and nonsense accepted ----


def test_devices_and_output_folders_that_cannot_hold_a_run_are_refused(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="meta"):
        check_device("meta")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.txt").write_text("x")
    with pytest.raises(ConfigError, match="current folder"):
        check_out(".")


@pytest.mark.parametrize(("body", "named"), [
    ("compare: [b]", "compare"),
    ("base: {cpu: 123}", "base cpu"),
    ("paper: {a: .nan}", "finite number"),
    ("paper: [1, 2]", "paper"),
    ("title: [1, 2]", "title"),
])
def test_an_experiment_file_of_the_wrong_shape_is_refused(tmp_path, body, named):
    path = tmp_path / "x.yaml"
    text = "table: X\nbase: {cpu: configs/cpu_moco_v1.yaml}\nsettings: {a: {}, b: {ft.pos: true}}\n"
    if body.startswith("base:"):
        text = text.replace("base: {cpu: configs/cpu_moco_v1.yaml}\n", "")
    path.write_text(text + body + "\n")
    with pytest.raises(ConfigError, match=named):
        Experiment.load(path)


def test_the_lift_refuses_what_is_not_logits_or_features():
    q = F.normalize(torch.randn(8, 16), dim=1)
    queue = F.normalize(torch.randn(32, 16), dim=1)
    for bad in (torch.randn(5), torch.randn(2, 3, 4), torch.ones(2, 3, dtype=torch.long), [[1.0, 2.0]]):
        with pytest.raises(TypeError, match="info_nce takes"):
            ft.info_nce(bad)
    for bad in (torch.randn(4, 1), torch.randn(0, 5)):  # no negative, no query
        with pytest.raises(ValueError, match="at least one query and one negative"):
            ft.info_nce(bad)
    with pytest.raises(TypeError, match="torch tensors"):
        ft.logits(q.numpy(), q, queue, ft.FTConfig(), torch.Generator(), tau=0.2)
    with pytest.raises(ValueError, match="shards"):
        ft.logits(q, q, queue, StudyFT(pos=True, shards=3), torch.Generator(), tau=0.2)


@pytest.mark.parametrize("kwargs", [{"fraction": "0.1"}, {"window": True}])
def test_the_plateau_rule_refuses_a_string_or_a_bool(kwargs):
    with pytest.raises(ValueError, match="PlateauStart"):
        ft.PlateauStart(**kwargs)


@pytest.mark.parametrize("loss", ["5", None, True])
def test_the_plateau_rule_refuses_a_loss_that_is_no_number(loss):
    with pytest.raises(ValueError, match="finite number"):
        ft.PlateauStart().update(loss)
    rule = ft.PlateauStart()
    rule.update(torch.tensor(3.0))
    rule.update(np.float32(2.0))
    assert rule.losses == [3.0, 2.0]


@pytest.mark.parametrize(("overrides", "named"), [([1], "not a KEY=VALUE string"), ({"seed": 2}, "got a dict")])
def test_overrides_that_are_no_key_value_strings_are_refused(overrides, named):
    with pytest.raises(ConfigError, match=named):
        load_config(SMOKE, overrides)


@pytest.mark.parametrize("value", ["010", "0x8", "1:00"])
def test_a_config_file_number_in_another_base_is_refused_as_an_override_is(tmp_path, value):
    path = tmp_path / "c.yaml"
    path.write_text(f"seed: {value}\n")
    with pytest.raises(ConfigError, match="plain decimal digits"):
        load_config(path)


@pytest.mark.parametrize(("overrides", "named"), [
    (["train.epochs=99999999999999999999"], "train.epochs"),
    (["model.encoder=timm:resnet18"], "model.bn_splits"),  # the smoke config splits batch-norm in two
])
def test_a_run_that_could_never_run_is_refused_before_anything_is_written(overrides, named):
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_config(SMOKE, overrides)


@pytest.mark.parametrize("kwargs", [{"alpha_ex": 0.5}, {"neg_mode": "extrapolate"}, {"hard_a": 3.0},
                                    {"granularity": "dim"}, {"pos_gate": 0.3}, {"start": "auto"}])
def test_the_librarys_ft_config_refuses_a_key_its_transformation_would_ignore(kwargs):
    """What the run config refuses, the lift refuses too: ft.logits would give the plain logits all the same."""
    section = StudyFT if "pos_gate" in kwargs else ft.FTConfig  # ft.pos_gate: the study's section
    with pytest.raises(ConfigError, match="ignored|nothing to switch"):
        section(**kwargs)
    section(pos=True, neg=True, hard=True, **kwargs)  # with its transformation on, kept


def test_an_experiment_file_given_to_train_says_to_sweep_it(capsys):
    code, err = cli(capsys, "train", "experiments/table1_momentum.yaml", "--out", "/nonexistent/never")
    assert_one_line(code, err, EXIT_ERROR, "experiment file", "sweep")


def test_a_setting_the_smoke_profile_cannot_run_names_its_file_setting_and_fix(tmp_path):
    from ftcl_core.study.experiment_file import planned_runs

    path = tmp_path / "x.yaml"
    path.write_text("table: X\nbase: {cpu: configs/cpu_moco_v1.yaml}\nsettings: {a: {}, late: {ft.pos: true, "
                    "ft.start_epoch: 5}}\n")
    with pytest.raises(ConfigError, match=r"x\.yaml, setting 'late', profile smoke: .*\{cpu: 9, smoke: 1\}"):
        planned_runs(Experiment.load(path), "smoke")


@pytest.mark.parametrize("key", ["union_queue", "renorm_neg"])
def test_the_lift_refuses_a_negatives_key_without_negative_ft(key):
    """Checked where the config is read with its method (a method without negatives says so first), and in the lift."""
    q = F.normalize(torch.randn(8, 16), dim=1)
    queue = F.normalize(torch.randn(32, 16), dim=1)
    with pytest.raises(ValueError, match=f"ft.{key}=True acts on the transformed negatives only"):
        ft.logits(q, q, queue, ft.FTConfig(pos=True, **{key: True}), torch.Generator(), tau=0.2)
