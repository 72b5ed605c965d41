"""Issue 64, what the ninth trial left (a helper's ~420 hostile inputs at 221318f): a finished run whose log or
provenance is damaged reported as fine by a rerun of its command, a summary that counts fewer seeds than its store
holds folders without a word, numeric fields that coerce any text Python reads as a number (a quoted ``"2"``,
``"nan"``, Arabic-Indic digits in a config file), a loop of symbolic links called a dangling one, and a ``--seeds``
word that is no seed told to move its experiment files.  One test a class."""

from __future__ import annotations

import json
import shutil

import pytest
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)
from test_hostile_round9 import ROOT, SMOKE

from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.config import ConfigError, load_config
from ftcl_core.config_sections import FTConfig

TINY = ["train.epochs=1", "data.n_train=320", "data.n_test=64", "eval.linear_epochs=1"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One complete smoke run (seconds), copied by each test that damages it."""
    out = tmp_path_factory.mktemp("finished") / "run"
    from ftcl_core.__main__ import main
    assert main(["train", SMOKE, *TINY, "--out", str(out), "--no-progress"]) == 0
    return out


@pytest.mark.parametrize("damage, named", [
    (lambda run: (run / "metrics.npz").write_bytes((run / "metrics.npz").read_bytes()[:200]), "metrics.npz"),
    (lambda run: (run / "provenance.json").write_text("{garbage"), "provenance.json"),
])
def test_a_rerun_of_a_finished_run_with_a_damaged_file_says_so(capsys, tmp_path, finished, damage, named):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(run), "--no-progress")
    assert code == 0, err  # whole: the stored readouts, nothing trained
    damage(run)
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(run), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, named)


def test_a_summary_names_the_run_folders_it_counts_no_seed_of(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "store"))
    args = ("experiments/diagnosis/init_v1.yaml", "--profile", "smoke", "--settings", "baseline", "--no-progress")
    assert cli(capsys, "sweep", *args, "--seeds", "0", "1")[0] == 0
    code, err = cli(capsys, "summary", "--profile", "smoke")
    assert code == 0 and "eval.json" not in err, err
    (tmp_path / "store" / "smoke" / "D-init-v1" / "baseline" / "seed1" / "eval.json").unlink()
    code, err = cli(capsys, "summary", "--profile", "smoke")
    assert code == 0
    notes = [ln for ln in err.splitlines() if "eval.json" in ln]
    assert len(notes) == 1 and "seed1" in notes[0] and "seed0" not in notes[0], err


@pytest.mark.parametrize("value", ["2", "nan", "inf", " 0.5"])
def test_a_numeric_field_refuses_text_yaml_would_have_read_as_a_number(value):
    with pytest.raises(ConfigError, match="alpha_ex"):
        FTConfig(pos=True, alpha_ex=value)


def test_a_number_yaml_1_1_leaves_unread_is_still_taken():
    assert FTConfig(pos=True, alpha_ex="1e0").alpha_ex == 1.0
    assert load_config(ROOT / SMOKE, ["optim.lr=1e-4", "train.epochs=1e1"]).train.epochs == 10


def test_non_ascii_digits_in_a_config_file_are_refused_by_their_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("method: moco\ntrain:\n  epochs: ١\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"train\.epochs.*ASCII"):
        load_config(path)


def test_an_out_in_a_loop_of_links_is_called_a_loop(capsys, tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for out in (tmp_path / "a", tmp_path / "a" / "run"):
        code, err = cli(capsys, "train", SMOKE, "--out", str(out))
        line = assert_one_line(code, err, EXIT_ERROR, "loop")
        assert "does not exist" not in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("word, named", [("1.5", "digits 0-9"), ("0-3", "digits 0-9"), ("١", "digits 0-9"),
                                         ("table2.yaml", "before --seeds")])
def test_a_seeds_word_that_is_no_seed_says_what_a_seed_is(capsys, word, named):
    with pytest.raises(SystemExit) as stop:
        from ftcl_core.__main__ import main
        main(["sweep", "experiments/table1_momentum.yaml", "--seeds", word])
    err = capsys.readouterr().err
    assert stop.value.code == EXIT_ERROR and named in err.splitlines()[-1], err
    assert ("before --seeds" in err) == (named == "before --seeds")


# ---- the tenth trial (a helper's ~520 inputs at fbbc221): T 2, D 1 of its findings ----

@pytest.mark.parametrize("section", ["null", "[1, 2]"])
def test_a_section_given_one_value_is_refused_with_an_override_too(capsys, tmp_path, section):
    path = tmp_path / "c.yaml"
    path.write_text(f"method: moco\ndata: {section}\n")
    code, err = cli(capsys, "train", str(path), "data.n_test=64", "--out", str(tmp_path / "run"))
    assert_one_line(code, err, EXIT_ERROR, "data is a section")
    assert not (tmp_path / "run").exists()


def test_another_runs_readouts_copied_into_a_finished_run_are_refused(capsys, tmp_path, finished):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(run), "--no-progress")
    assert code == 0, err
    readouts = json.loads((run / "eval.json").read_text())
    (run / "eval.json").write_text(json.dumps({**readouts, "linear_top1": 99.0}))
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(run), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "eval.json")
    (run / "eval.json").write_text(json.dumps(readouts, indent=4))  # its own readouts, spaced otherwise: whole
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(run), "--no-progress")
    assert code == 0, err


@pytest.mark.parametrize("argv, words", [
    (("plan", "experiments/diagnosis/init_v1.yaml", "--profile", "smoke", "--seeds", "0", "0"), ("twice",)),
    (("train", SMOKE, "device=cpu:99"), ("device=cpu:99", "one device")),
])
def test_a_seed_twice_in_plan_and_a_cpu_index_are_refused(capsys, tmp_path, argv, words):
    code, err = cli(capsys, *argv, *(("--out", str(tmp_path / "run")) if argv[0] == "train" else ()))
    assert_one_line(code, err, EXIT_ERROR, *words)


@pytest.mark.parametrize("effect, words", [(".inf", "finite"), ("abc", "'x'")])
def test_a_claims_effect_that_is_no_finite_number_names_the_claim(tmp_path, effect, words):
    from ftcl_core.study.experiment_file import Experiment
    path = tmp_path / "e.yaml"
    path.write_text("table: X\nquestion: q\ntitle: t\nbase: {cpu: configs/cpu_cal_moco_v1.yaml}\nseeds: [0]\n"
                    "settings:\n  baseline: {}\n  x: {ft.pos: true}\ncompare: {x: baseline}\n"
                    f"claims:\n  - {{arm: x, vs: baseline, effect: {effect}}}\n")
    with pytest.raises(ConfigError, match=words):
        Experiment.load(path)


def test_a_recorded_log_gone_from_a_finished_run_is_called_missing(capsys, tmp_path, finished):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "grad_norms.npz").unlink()
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(run), "--no-progress")
    line = assert_one_line(code, err, EXIT_ERROR, "grad_norms.npz", "missing")
    assert "differ" not in line


def test_an_out_of_spaces_is_quoted_as_given(capsys):
    code, err = cli(capsys, "train", SMOKE, "--out", "  ")
    assert_one_line(code, err, EXIT_ERROR, "--out '  '", "names no folder")


def test_an_experiment_folder_is_called_a_folder(capsys):
    code, err = cli(capsys, "sweep", "experiments", "--profile", "smoke", "--seeds", "0")
    line = assert_one_line(code, err, EXIT_ERROR, "is a folder", "*.yaml")
    assert "not found" not in line
