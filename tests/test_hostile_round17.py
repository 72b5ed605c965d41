"""Issue 64, the thirteenth trial's unclear messages left over (U): a smoke queue scaled to a refused size, a
"resuming" line before a damaged log's refusal, a config.yaml edited in a finished run answered two contradicting ways,
and a sweep told to change the ``--out`` it has not got.  One test a class; each fails at 7785fc9."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import test_run_binding
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)

from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.config import ConfigError, load_config
from ftcl_core.runs import RunDir

SMOKE, TINY = test_run_binding.SMOKE, test_run_binding.TINY
made = test_run_binding.made  # the fixture: a tiny run interrupted after its first checkpoint, and the same run finished

def test_a_smoke_queue_scaled_below_the_batch_says_how_to_give_its_own(tmp_path):
    from ftcl_core.study.experiment_file import Experiment, resolve

    exp = tmp_path / "e.yaml"
    exp.write_text("table: HQ\nbase: {cpu: configs/cpu_moco_v2.yaml}\nsettings:\n  a: {moco.queue_size: 1000}\n"
                   "  b: {moco.queue_size: {cpu: 1000, smoke: 128}}\n")
    e = Experiment.load(exp)
    with pytest.raises(ConfigError, match=r"1000 -> 31.*smoke: 128"):
        resolve(e.base["cpu"], e.settings["a"], "smoke")
    assert resolve(e.base["cpu"], e.settings["b"], "smoke").moco.queue_size == 128  # the fix it names works


def test_a_damaged_log_is_refused_before_any_resuming_line(made, tmp_path, capsys):
    from ftcl_core.__main__ import run

    folder = tmp_path / "run"
    shutil.copytree(made["interrupted"], folder)
    (folder / "metrics.npz").write_bytes(b"garbage")
    code = run(["train", SMOKE, *TINY, "--out", str(folder), "--no-progress"])
    out, err = capsys.readouterr()
    assert "resuming" not in out
    assert_one_line(code, err, EXIT_ERROR, "metrics.npz", "damaged")


def test_an_edited_config_in_a_finished_run_is_answered_one_way(made, tmp_path, capsys):
    """Its checkpoint gone, the run's provenance.json records the config it ran: the edit is named as the edit, and
    the command with the edited values gets the same answer (it was told the run's values were the edited ones)."""
    folder = tmp_path / "run"
    shutil.copytree(made["complete"], folder)
    (folder / "checkpoint.pt").unlink()
    text = (folder / "config.yaml").read_text()
    (folder / "config.yaml").write_text(text.replace("  lr: 0.06\n", "  lr: 0.5\n", 1))
    answers = []
    for extra in ([], ["optim.lr=0.5"]):
        code, err = cli(capsys, "train", SMOKE, *TINY, *extra, "--out", str(folder), "--no-progress")
        answers.append(assert_one_line(code, err, EXIT_ERROR, "provenance.json", "optim.lr=0.06 (the run's)",
                                       "Delete config.yaml"))
    assert answers[0] == answers[1]
    (folder / "config.yaml").unlink()  # the fix it names
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(folder), "--no-progress")
    assert code == 0, err
    assert (folder / "config.yaml").read_text() == text


def test_a_sweep_s_refusal_names_its_folder_not_an_out(made, tmp_path):
    from ftcl_core.checkpoints import IncompatibleCheckpoint, check_compatible
    from ftcl_core.study.sweeps import SWEEP_ADVICE

    folder = tmp_path / "seed0"
    shutil.copytree(made["interrupted"], folder)
    with pytest.raises(IncompatibleCheckpoint) as refused:
        check_compatible(RunDir(folder), load_config(SMOKE, [*TINY, "seed=1"]))
    said = str(refused.value.instead(SWEEP_ADVICE.format(out=folder, path=Path("experiments/e.yaml"))))
    assert "--out" in str(refused.value) and "--out" not in said
    assert f"Move the folder {folder} away" in said and "seed=0 (the run's)" in said
