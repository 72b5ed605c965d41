"""Issue 64, what the fourth trial of hostile inputs left: keys a run would ignore, a store that mislabels a run,
a hand-edited readout, a plan that counts a file twice, SIGTERM during a report.  One test a class."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)

from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.config import ConfigError, load_config
from ftcl_core.runs import RunDir, RunFileError
from ftcl_core.study.experiment_file import Experiment, planned_runs
from ftcl_core.study.store import check_store

ROOT = Path(__file__).resolve().parent.parent
SMOKE = "configs/smoke_moco_v2.yaml"
T1 = "experiments/table1_momentum.yaml"


# ---- keys the run would ignore: refused with the key and the fix ----


@pytest.mark.parametrize(("overrides", "named"), [
    (["optim.milestones=[1]"], "optim.schedule=step"),                         # cosine ignores milestones
    (["ft.alpha_ex=1.0"], "ft.pos"),                                            # extrapolation's alpha, ft.pos off
    (["ft.pos=true", "ft.alpha_in=1.0"], "ft.neg"),                             # interpolation's alpha, ft.neg off
    (["ft.hard_a=1.0"], "ft.hard"),
    (["ft.start_epoch=1"], "none is on"),                                       # a start for no transformation
    (["ft.granularity=sample"], "none is on"),
    (["simclr.tau=0.5"], "method=simclr"),                                      # another method's key on MoCo
    (["method=simclr", "moco.momentum=0.9"], "method=moco"),
    (["data.cache=/tmp/x"], "imagefolder"),                                     # a folder set's key on the shapes
    (["data.download=true"], "nothing to download"),
    (["data.name=fashion_mnist", "data.workers=2"], "imagefolder"),
])
def test_a_key_the_run_would_ignore_is_refused(overrides, named):
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_config(SMOKE, overrides)


def test_another_methods_key_names_this_methods_own():
    with pytest.raises(ConfigError, match=r"set simclr\.tau"):
        load_config(SMOKE, ["method=simclr", "moco.tau=0.5"])


def test_the_keys_of_a_transformation_that_is_on_are_kept():
    cfg = load_config(SMOKE, ["ft.pos=true", "ft.alpha_ex=1.0", "ft.start_epoch=1", "optim.schedule=step",
                              "optim.milestones=[1]"])
    assert (cfg.ft.alpha_ex, cfg.ft.start_epoch, cfg.optim.milestones) == (1.0, 1, (1,))


def test_a_home_folder_in_a_path_is_expanded():
    cfg = load_config(SMOKE, ["data.name=fashion_mnist", "data.root=~/fmnist"])
    assert cfg.data.root == os.path.expanduser("~/fmnist") and "~" not in cfg.data.root


# ---- a store that would mislabel a run, a readout edited by hand ----


def fake_run(folder: Path, config: dict, readouts: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    (folder / "eval.json").write_text(json.dumps(readouts))
    return folder


def planned(setting: str, seed: int):
    (_, _, cfg, path), = planned_runs(Experiment.load(T1), "smoke", seeds=[seed], settings=[setting])
    return cfg, path


def test_a_run_in_another_seeds_folder_is_refused_by_summary(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "root"))
    cfg, path = planned("m=0.3", 0)
    seed1 = planned("m=0.3", 1)[0]
    fake_run(path, seed1.to_dict(), {"linear_top1": 50.0})  # seed 1's run copied into seed 0's folder
    code, err = cli(capsys, "summary", "--profile", "smoke")
    assert_one_line(code, err, EXIT_ERROR, str(path), "seed=1", "m=0.3")
    assert not (tmp_path / "root" / "smoke" / "summary.csv").exists()


def test_a_run_in_its_own_folder_passes_the_store_check(tmp_path, monkeypatch):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "root"))
    cfg, path = planned("m=0.3", 0)
    fake_run(path, cfg.to_dict(), {"linear_top1": 50.0})
    assert check_store("smoke") == 1
    other = planned("m=0.5", 0)[0]
    (path / "config.yaml").write_text(yaml.safe_dump(other.to_dict()))  # another setting's config, by hand
    with pytest.raises(RunFileError, match="moco.momentum=0.5"):
        check_store("smoke")


@pytest.mark.parametrize(("readouts", "named"), [
    ({"linear_top1": "high"}, "not a finite number"), ({"linear_top1": 150.0}, "percentage"),
    ({"knn_top1": 40.0}, "no linear_top1"), ({"linear_top1": 50.0, "train_s": -3}, "below 0"),
    ({"linear_top1": True}, "not a finite number"),
])
def test_a_readout_edited_by_hand_is_refused_with_its_file(tmp_path, readouts, named):
    run = RunDir(fake_run(tmp_path / "r", load_config(SMOKE).to_dict(), readouts))
    with pytest.raises(RunFileError, match=named) as err:
        run.load_eval()
    assert str(run.eval) in str(err.value) and "Delete it" in str(err.value)


# ---- the command line ----


def test_plan_refuses_a_file_named_twice(capsys):
    code, err = cli(capsys, "plan", T1, str(ROOT / T1), "--profile", "smoke")
    assert_one_line(code, err, EXIT_ERROR, "twice")


def test_a_run_of_another_config_is_refused_before_the_start_up_line(capsys, tmp_path):
    cfg = load_config(SMOKE)
    fake_run(tmp_path / "r", cfg.to_dict(), {"linear_top1": 50.0})
    code = __import__("ftcl_core.study.cli", fromlist=["main"]).main(
        ["train", SMOKE, "optim.lr=0.5", "--out", str(tmp_path / "r"), "--no-progress"])
    out = capsys.readouterr()
    assert_one_line(code, out.err, EXIT_ERROR, "optim.lr")
    assert "training with" not in out.out


@pytest.mark.slow
def test_sigterm_during_a_report_is_one_line(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "ftcl_core", "report", "book/learn1_contrastive.ipynb", "--out",
                             str(tmp_path / "r.html")], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.stdout is not None and proc.stdout.readline().startswith("running")
    time.sleep(3)  # inside papermill's execution
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert proc.returncode == 128 + signal.SIGTERM and len(lines) == 1 and "Traceback" not in err, (proc.returncode, err)
    assert "SIGTERM" in lines[0] and not (tmp_path / "r.html").exists()


# ---- the fifth trial's findings (a helper, ~250 inputs) ----


@pytest.mark.parametrize(("settings", "named"), [
    ("  ..: {}\n", "setting name"), ("  .: {}\n", "setting name"), ("  0.99: {}\n", "setting name"),
    ("  a: {seed: 5}\n", "seed"), ("  a: {}\n  b: {}\ncompare: {b: b}\n", "against itself"),
])
def test_an_experiment_setting_that_would_misplace_a_run_is_refused(tmp_path, settings, named):
    path = tmp_path / "e.yaml"
    path.write_text(f"table: H1\nbase: {{cpu: {SMOKE}}}\nseeds: [0]\nsettings:\n{settings}")
    with pytest.raises(ConfigError, match=named):
        Experiment.load(path)


@pytest.mark.parametrize(("text", "named"), [("seed: [0]\n", "did you mean seeds"), ("base: {cpu: x, smoke: y}\n", "smoke")])
def test_an_experiment_key_that_would_be_ignored_is_refused(tmp_path, text, named):
    path = tmp_path / "e.yaml"
    body = f"table: H1\nbase: {{cpu: {SMOKE}}}\nseeds: [0]\nsettings: {{a: {{}}}}\n"
    path.write_text(body.replace("base: {cpu: " + SMOKE + "}\n", "") + text if "base" in text else body + text)
    with pytest.raises(ConfigError, match=named):
        Experiment.load(path)


def test_dotted_keys_in_a_config_file_are_read_and_a_key_given_both_ways_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("ft.pos: true\ntrain.epochs: 3\n")
    cfg = load_config(path)
    assert cfg.ft.pos and cfg.train.epochs == 3
    path.write_text("ft.pos: true\nft: {pos: false}\n")
    with pytest.raises(ConfigError, match="twice"):
        load_config(path)


@pytest.mark.parametrize("override", ["seed=010", "train.epochs=1:00", "seed=0x8"])
def test_a_number_yaml_reads_in_another_base_is_refused(override):
    with pytest.raises(ConfigError, match="decimal"):
        load_config(SMOKE, [override])


def test_load_config_refuses_a_dict_and_a_bare_override_string():
    with pytest.raises(ConfigError, match="from_dict"):
        load_config({"ft": {"pos": True}})
    with pytest.raises(ConfigError, match="list of KEY=VALUE"):
        load_config(None, "ft.pos=true")


def test_mixed_dtypes_and_an_empty_batch_are_refused_by_the_lifted_logits():
    import torch

    from ftcl_core import ft

    q = torch.nn.functional.normalize(torch.randn(4, 8), dim=1)
    queue = torch.nn.functional.normalize(torch.randn(16, 8), dim=1)
    with pytest.raises(TypeError, match="one dtype"):
        ft.logits(q.double(), q.double(), queue, ft.FTConfig(), torch.Generator(), tau=0.2)
    with pytest.raises(ValueError, match="N = 0"):
        ft.logits(q[:0], q[:0], queue, ft.FTConfig(), torch.Generator(), tau=0.2)


def test_a_folder_with_a_users_config_is_not_overwritten(capsys, tmp_path):
    from ftcl_core.study.cli import main

    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "config.yaml").write_text("foo: 1\n")
    code = main(["train", SMOKE, "--out", str(tmp_path / "r"), "--no-progress"])
    assert_one_line(code, capsys.readouterr().err, EXIT_ERROR, "not a run's")
    assert (tmp_path / "r" / "config.yaml").read_text() == "foo: 1\n"


def test_a_complete_run_of_another_seed_is_refused_by_its_provenance(capsys, tmp_path):
    from ftcl_core.study.cli import main

    cfg = load_config(SMOKE)
    run = fake_run(tmp_path / "r", {**cfg.to_dict(), "seed": 1}, {"linear_top1": 50.0})  # config.yaml edited to seed 1
    (run / "provenance.json").write_text(json.dumps({"seed": 0}))
    code = main(["train", SMOKE, "seed=1", "--out", str(run), "--no-progress"])
    assert_one_line(code, capsys.readouterr().err, EXIT_ERROR, "seed 0", "provenance.json")


def test_summary_refuses_a_copied_seed_whose_config_was_edited_to_match(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "root"))
    cfg, path = planned("m=0.3", 1)
    fake_run(path, cfg.to_dict(), {"linear_top1": 50.0})
    (path / "provenance.json").write_text(json.dumps({"seed": 0}))  # seed 0's run, its config.yaml says seed 1
    code, err = cli(capsys, "summary", "--profile", "smoke")
    assert_one_line(code, err, EXIT_ERROR, str(path), "seed 0")


def test_report_refuses_to_write_over_a_notebook_it_did_not_make(capsys, tmp_path):
    from ftcl_core.__main__ import report

    sibling = tmp_path / "05_momentum.ipynb"
    sibling.write_bytes((ROOT / "book" / "05_momentum.ipynb").read_bytes())
    code = report(["book/learn1_contrastive.ipynb", "--out", str(tmp_path / "05_momentum.html")])
    assert_one_line(code, capsys.readouterr().err, EXIT_ERROR, "not an earlier report")
    assert sibling.read_bytes() == (ROOT / "book" / "05_momentum.ipynb").read_bytes()
    assert report(["book/learn1_contrastive.ipynb", "--out", "a.html", "--out", "b.html"]) == EXIT_ERROR
