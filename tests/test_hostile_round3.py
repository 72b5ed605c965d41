"""Issue 64, a third trial of hostile inputs (a helper, 196 inputs): what it found mended, one test a class."""

import subprocess
import sys
from pathlib import Path

import pytest

from ftcl_core.config import ConfigError, load_config
from ftcl_core.study.experiment_file import Experiment

ROOT = Path(__file__).resolve().parent.parent

SMOKE = "configs/smoke_moco_v2.yaml"
LAYOUT = "table: {table}\ntitle: x\nbase: {base}\nseeds: {seeds}\nsettings:\n{settings}"


def experiment(tmp_path, table="H1", base="{cpu: " + SMOKE + "}", seeds="[0]", settings="  a: {}\n"):
    path = tmp_path / "e.yaml"
    path.write_text(LAYOUT.format(table=table, base=base, seeds=seeds, settings=settings))
    return path


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"seeds": "0"}, "seeds"), ({"seeds": "[]"}, "seeds"), ({"seeds": "[0, 0]"}, "twice"),
    ({"seeds": "[a]"}, "seeds"), ({"settings": "  a: [ft.pos, true]\n"}, "must map"),
    ({"table": "../../x"}, "one folder name"), ({"table": "a/b"}, "one folder name"),
    ({"settings": "  x y: {ft.pos: true}\n  x_y: {}\n"}, "share the folder"),
    ({"base": "configs/smoke_moco_v2.yaml"}, "base"),
])
def test_an_experiment_file_that_would_misplace_or_double_count_runs_is_refused(tmp_path, kwargs, named):
    with pytest.raises(ConfigError, match=named):
        Experiment.load(experiment(tmp_path, **kwargs))


@pytest.mark.parametrize(("overrides", "named"), [
    (["ft.start=auto", "ft.pos=true"], "ft.auto_window"),  # 2 epochs: the rule could never switch on
    (["ft.start=auto", "train.epochs=4"], "nothing to switch"),  # FT off
    (["ft.pos=true", "ft.auto_window=3"], "ft.start=epoch"),  # a rule's key where no rule runs
    (["ft.pos=true", "ft.auto_fraction=0.5"], "ft.start=epoch"),
    (["train.compile=maybe"], "compiler backend"),
    (["data.root=/anything"], "data.name=shapes"),
])
def test_a_config_that_would_be_silently_ignored_or_crash_later_is_refused(overrides, named):
    with pytest.raises(ConfigError, match=named):
        load_config(SMOKE, overrides)


def test_an_auto_start_that_can_switch_on_is_accepted():
    cfg = load_config(SMOKE, ["ft.start=auto", "ft.pos=true", "train.epochs=4", "ft.auto_window=2"])
    assert cfg.ft.start == "auto" and cfg.ft.auto_window == 2


def test_an_option_given_twice_is_refused_before_anything_is_written(tmp_path):
    out = subprocess.run([sys.executable, "-m", "ftcl_core", "train", SMOKE, "--out", str(tmp_path / "p"), "--out",
                          str(tmp_path / "q")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--out given more than once" in out.stderr
    assert "training into" not in out.stdout and not any(tmp_path.iterdir())


def test_screen_refuses_an_auto_start_and_reads_a_whole_short_run(tmp_path):
    cmd = [sys.executable, "-m", "ftcl_core", "screen", SMOKE]
    auto = subprocess.run([*cmd, "ft.start=auto", "ft.pos=true", "train.epochs=4"], capture_output=True, text=True,
                          timeout=120)
    assert auto.returncode == 2 and "ft.start=auto" in auto.stderr and "Traceback" not in auto.stderr
    whole = subprocess.run([*cmd, "--steps", "1000"], capture_output=True, text=True, timeout=300)
    assert whole.returncode == 0 and "Traceback" not in whole.stderr, whole.stderr[-2000:]


def test_a_folder_stopped_before_its_first_checkpoint_takes_the_corrected_command(tmp_path):
    from ftcl_core.runs import RunDir, write_yaml
    from ftcl_core.training import train

    out = tmp_path / "run"
    out.mkdir()
    write_yaml(out / "config.yaml", load_config(SMOKE, ["seed=0"]).to_dict())  # what a run stopped in epoch 0 leaves
    cfg = load_config(SMOKE, ["seed=1", "train.epochs=1"])
    train(cfg, out, progress=False)
    assert RunDir(out).load_config() == cfg and RunDir(out).is_complete()


def test_report_refuses_a_parameter_the_chapter_lacks_and_an_out_that_is_no_page(tmp_path):
    from ftcl_core.pages import report

    with pytest.raises(report.ReportError, match="its parameters are .*seeds"):
        report.report("book/05_momentum.ipynb", tmp_path / "m.html", {"seed": [0]})  # a typo for seeds
    (tmp_path / "d.html").mkdir()
    with pytest.raises(report.ReportError, match="must name an HTML page"):
        report.report("book/01_introduction.ipynb", tmp_path / "d.html", {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.html"]  # nothing run, nothing written


def test_a_config_yaml_edited_after_the_run_began_is_named_as_such(tmp_path):
    from ftcl_core.checkpoints import IncompatibleCheckpoint
    from ftcl_core.runs import write_yaml
    from ftcl_core.training import train

    cfg = load_config(SMOKE, ["train.epochs=1"])
    train(cfg, tmp_path / "run", progress=False)
    write_yaml(tmp_path / "run" / "config.yaml", cfg.updated({"seed": 1}).to_dict())  # edited by hand
    for asked in (cfg, cfg.updated({"seed": 1})):
        with pytest.raises(IncompatibleCheckpoint, match="config.yaml and its checkpoint.pt disagree, seed=0"):
            train(asked, tmp_path / "run", progress=False)


@pytest.mark.parametrize(("overrides", "named"), [
    (['ft={"pos": true}'], "ft is a section"),  # a whole section as one value: say how to set its keys
    (["data.image_size=3"], "at least 8 px"),  # the shapes' drawer would fail after config.yaml is written
    (["zzzzzz=1"], r"unknown config key 'zzzzzz'\. The keys"),  # no close key: no empty suggestion list
])
def test_a_section_as_a_value_a_too_small_image_and_a_key_like_nothing_are_named(overrides, named):
    with pytest.raises(ConfigError, match=named):
        load_config(SMOKE, overrides)


def test_a_file_given_after_seeds_is_named_as_misplaced():
    res = subprocess.run([sys.executable, "-m", "ftcl_core", "plan", "--seeds", "0", "1", "experiments/t.yaml"],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "before --seeds" in res.stderr and "Traceback" not in res.stderr


def test_a_seed_or_setting_given_twice_is_refused_before_a_run_counts_twice(tmp_path, monkeypatch):
    """Hostile round 4: ``--seeds 0 0`` or ``--settings baseline baseline`` would count one run as two."""
    from ftcl_core.study import sweeps
    from ftcl_core.study.experiment_file import seed_list

    with pytest.raises(ConfigError, match="twice"):
        seed_list([0, 0])
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "runs"))
    with pytest.raises(ConfigError, match="twice"):
        sweeps.sweep("experiments/table7_ft_v1.yaml", "smoke", [0], ["v1 baseline", "v1 baseline"], progress=False)
    assert not (tmp_path / "runs").exists()


def test_report_refuses_an_out_whose_notebook_is_the_chapter(tmp_path):
    """Hostile round 4: ``--out book/05_momentum.html`` would write the executed notebook over the chapter."""
    from ftcl_core.pages.report import ReportError, report

    chapter = tmp_path / "05_momentum.ipynb"
    chapter.write_text((ROOT / "book" / "05_momentum.ipynb").read_text())
    before = chapter.read_text()
    with pytest.raises(ReportError, match="over the chapter"):
        report(chapter, tmp_path / "05_momentum.html", {"profile": "smoke"})
    assert chapter.read_text() == before


def test_summary_of_a_store_elsewhere_leaves_the_committed_results_alone(tmp_path):
    """Hostile round 4: ``summary`` and ``calibration`` on a scratch store (``FTCL_RUNS_ROOT``) wrote over the
    committed results/summary.csv and results/calibration.csv; they now write into the store's own folder."""
    import os
    import shutil

    store = tmp_path / "runs" / "cpu" / "T7"
    shutil.copytree(ROOT / "results" / "cpu" / "T7" / "v1_baseline", store / "v1_baseline")
    committed = {p: p.read_bytes() for p in (ROOT / "results" / "summary.csv", ROOT / "results" / "calibration.csv")}
    env = {**os.environ, "FTCL_RUNS_ROOT": str(tmp_path / "runs"), "OMP_NUM_THREADS": "1"}
    for command in ("summary", "calibration"):
        subprocess.run([sys.executable, "-m", "ftcl_core", command], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert {p: p.read_bytes() for p in committed} == committed
    assert (tmp_path / "runs" / "cpu" / "summary.csv").is_file()


# ---- round 4, the rest: inputs a user types that ran something other than was asked, or failed without the fix ------

def test_sweep_refuses_settings_that_name_nothing(tmp_path, capsys):
    from ftcl_core.study import cli, sweeps

    rc = cli.main(["sweep", "experiments/table1_momentum.yaml", "--profile", "smoke", "--settings"])
    assert rc == 2 and "--settings names no setting" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="names no setting"):
        sweeps.sweep("experiments/table1_momentum.yaml", "smoke", [0], [])


@pytest.mark.parametrize("tau", [float("nan"), float("inf"), 0.0, -0.2, True, "0.2"])
def test_ft_logits_refuses_a_temperature_that_is_not_a_positive_number(tau):
    import torch
    import torch.nn.functional as F

    from ftcl_core import ft

    q, k = (F.normalize(torch.randn(4, 8), dim=1) for _ in range(2))
    queue = F.normalize(torch.randn(16, 8), dim=1)
    with pytest.raises(ValueError, match="finite number > 0"):
        ft.logits(q, k, queue, ft.FTConfig(pos=True), torch.Generator(), tau=tau)


def test_ft_logits_refuses_integer_features_an_empty_queue_and_a_string_for_active():
    import torch
    import torch.nn.functional as F

    from ftcl_core import ft

    q, k = (F.normalize(torch.randn(4, 8), dim=1) for _ in range(2))
    queue, gen, cfg = F.normalize(torch.randn(16, 8), dim=1), torch.Generator(), ft.FTConfig(pos=True)
    with pytest.raises(TypeError, match="floating-point"):
        ft.logits(q, k, queue.round().long(), cfg, gen, tau=0.2)
    with pytest.raises(ValueError, match="no keys"):
        ft.logits(q, k, queue[:0], cfg, gen, tau=0.2)
    with pytest.raises(TypeError, match="True .FT on. or False"):
        ft.logits(q, k, queue, cfg, gen, tau=0.2, active="no")
    assert ft.logits(q, k, queue, cfg, gen, tau=0.2, active=False).shape == (4, 17)


def test_a_key_given_twice_is_refused_not_last_wins(capsys):
    from ftcl_core.pages import report
    from ftcl_core.study import cli

    with pytest.raises(report.ReportError, match="given twice"):
        report.parse_parameters([["seeds", "[0]"], ["seeds", "[0, 1]"]])
    assert report.parse_parameters([["seeds", "[0, 1]"], ["profile", "smoke"]]) == {"seeds": [0, 1], "profile": "smoke"}
    rc = cli.main(["sweep", "experiments/table1_momentum.yaml", "--profile", "smoke", "--set", "device=cpu",
                   "device=cuda"])
    assert rc == 2 and "twice" in capsys.readouterr().err


def test_a_one_pixel_view_is_refused_before_anything_is_written(tmp_path):
    from ftcl_core.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="at least 2 px"):
        load_config("configs/smoke_moco_v2.yaml", ["augment.out_size=1"])
    assert load_config("configs/smoke_moco_v2.yaml", ["augment.out_size=2"]).augment.out_size == 2


def test_an_unknown_timm_model_is_refused_when_the_config_is_read():
    from ftcl_core.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="unknown timm model .*did you mean .*timm:resnet18"):
        load_config("configs/smoke_moco_v2.yaml", ["model.encoder=timm:resnet18x"])
    cfg = load_config("configs/smoke_moco_v2.yaml", ["model.encoder=timm:resnet18", "model.bn_splits=1"])
    assert cfg.model.encoder == "timm:resnet18"


def test_the_help_lists_report_and_report_still_runs_its_own_parser():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "ftcl_core", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "report" in out.stdout and "HTML page" in out.stdout
    out = subprocess.run([sys.executable, "-m", "ftcl_core", "report", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--parameter" in out.stdout
