"""Damaged run files: every file a run folder holds, cut to half its bytes, overwritten by garbage or emptied,
met on resume (``train``, ``sweep``) and on read (the loaders the book, ``summary``, ``plan`` and a sweep's copy
of an identical run use).

Each is one error that names the file, says what is wrong with it and how to recover (the command line prints
it as its one ``error:`` line, exit status 2, no traceback), and leaves every other file as it was; a file a
path never reads is no error there.  One tiny run is trained once for the module (stopped after its first
epoch's checkpoint, then finished) and copied for each case.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ftcl_core.config import RunConfig
from ftcl_core.runs import RunDir, RunFileError, run_lock, write_json, write_yaml
from ftcl_core.study import experiment_file, store, sweeps
from ftcl_core.training import step_callback, stop_before, train

DAMAGES = ("truncated", "garbage", "empty")
# every file a run folder holds (runs.py's module docstring): a finished run's, an interrupted one's, and the
# record of a diverged run (status.json); test_the_cases_cover_every_file_a_run_folder_holds keeps this complete
FILES = ("config.yaml", "metrics.npz", "grad_norms.npz", "histograms.npz", "checkpoint.pt", "eval.json",
         "provenance.json", "status.json", ".lock")
# the words of each file's recovery (see its loader)
RECOVERY = {
    "config.yaml": "Delete this file and run the command that made it",
    "metrics.npz": "away (or delete it) and run the command that made it",
    "grad_norms.npz": "away (or delete it) and run the command that made it",
    "histograms.npz": "away (or delete it) and run the command that made it",
    "checkpoint.pt": "Delete it and run the same command again",
    "eval.json": "Delete it and run the command that made it",
    "provenance.json": "Delete it to keep the run",
}
# what each path reads: a damaged file of the tuple is an error there, any other is not read there
RESUMED = ("config.yaml", "metrics.npz", "grad_norms.npz", "histograms.npz", "checkpoint.pt", "eval.json")
READ = ("config.yaml", "metrics.npz", "grad_norms.npz", "histograms.npz", "eval.json", "provenance.json")
EXPERIMENT = """\
table: DMG
title: damaged run files
base: {cpu: configs/smoke_moco_v2.yaml}
seeds: [0]
common: {data.n_train: 256, data.n_test: 128, eval.linear_epochs: 1, eval.random_init: false, stats.histograms: true}
settings:
  baseline: {}
  twin: {}
"""


@dataclass
class Made:
    """The module's tiny run: its experiment file (two settings of one config), its config as a file (for
    ``train CONFIG --out DIR``), and copies of its folder after the first epoch's checkpoint and when complete."""

    exp_file: Path
    config_file: Path
    cfg: RunConfig
    interrupted: Path
    complete: Path

    @property
    def steps_per_epoch(self) -> int:
        return self.cfg.data.n_train // self.cfg.train.batch_size


@pytest.fixture(scope="module", autouse=True)
def data_drawn_once():
    """The tiny run's data set, drawn once for the module: every ``train`` call draws its shapes anew, two thirds
    of a case's time here and nothing this file tests (the subprocess case draws its own)."""
    from ftcl_core import training

    drawn: dict[str, tuple] = {}

    def once(cfg: RunConfig) -> tuple:
        key = repr(cfg.data)
        if key not in drawn:
            drawn[key] = real(cfg)
        return drawn[key]

    real = training.load_data_rank0_first
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(training, "load_data_rank0_first", once)
        yield


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Made:
    tmp = tmp_path_factory.mktemp("damaged")
    exp_file = tmp / "dmg.yaml"
    exp_file.write_text(EXPERIMENT)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FTCL_RUNS_ROOT", str(tmp / "build"))
        exp = experiment_file.Experiment.load(exp_file)
        _, _, cfg, out = experiment_file.planned_runs(exp, "smoke", settings=["baseline"])[0]
        steps = cfg.data.n_train // cfg.train.batch_size
        train(cfg, out, progress=False, max_steps=steps + 1)  # stopped in epoch 2, after epoch 1's checkpoint
        shutil.copytree(out, tmp / "interrupted")
        train(cfg, out, progress=False)
        shutil.copytree(out, tmp / "complete")
    for folder in (tmp / "interrupted", tmp / "complete"):
        write_json(folder / "status.json", {"status": "diverged", "step": steps + 1, "epoch": 1})  # a past divergence
    shutil.copy(tmp / "complete" / "provenance.json", tmp / "interrupted")  # killed between provenance and eval
    write_yaml(tmp / "run.yaml", cfg.to_dict())
    return Made(exp_file, tmp / "run.yaml", cfg, tmp / "interrupted", tmp / "complete")


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """A fresh root of stored runs (``FTCL_RUNS_ROOT``) for one case."""
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "root"))
    return tmp_path / "root"


def damage(path: Path, kind: str) -> None:
    """Cut ``path`` to half its bytes, overwrite it by as many random bytes, or empty it."""
    data = path.read_bytes()
    path.write_bytes({"truncated": data[: len(data) // 2], "garbage": random.Random(0).randbytes(max(len(data), 64)),
                      "empty": b""}[kind])


def damaged_copy(src: Path, dest: Path, name: str, kind: str) -> Path:
    """A copy of the run folder ``src`` at ``dest`` with its file ``name`` damaged."""
    shutil.copytree(src, dest)
    damage(dest / name, kind)
    return dest


def stored_at(made: Made, setting: str, src: Path, name: str, kind: str) -> Path:
    """``src`` copied to the folder of ``setting`` (seed 0) under the current ``FTCL_RUNS_ROOT``, ``name`` damaged."""
    exp = experiment_file.Experiment.load(made.exp_file)
    return damaged_copy(src, experiment_file.run_dir(exp, setting, 0, "smoke"), name, kind)


def contents(folder: Path) -> dict[str, bytes]:
    """Every file of a run folder but its lock (rewritten with the pid of each process that takes it)."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.name != ".lock"}


def cli(capsys, *argv: str) -> tuple[int, str]:
    from ftcl_core.__main__ import main

    code = main(list(argv))
    return code, capsys.readouterr().err


def assert_one_error_line(code: int, err: str, *names: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    for name in names:
        assert name in lines[0], f"{name!r} not in: {lines[0]}"


def test_the_cases_cover_every_file_a_run_folder_holds(made):
    held = {p.name for folder in (made.interrupted, made.complete) for p in folder.iterdir()}
    assert held == set(FILES)  # a new kind of run file needs its cases here (and a loader that reports it)


# ---- resume: `train CONFIG --out DIR` on a folder holding the damaged file ----


@pytest.mark.parametrize("kind", DAMAGES)
@pytest.mark.parametrize("name", RESUMED)
def test_resume_with_a_damaged_file_is_one_error_line(made, tmp_path, capsys, name, kind):
    run = damaged_copy(made.complete if name == "eval.json" else made.interrupted, tmp_path / "run", name, kind)
    before = contents(run)
    code, err = cli(capsys, "train", str(made.config_file), "--out", str(run), "--no-progress")
    assert_one_error_line(code, err, str(run / name), RECOVERY[name])
    assert contents(run) == before  # nothing discarded, nothing rewritten


@pytest.mark.parametrize("kind", DAMAGES)
@pytest.mark.parametrize("name", sorted(set(FILES) - set(RESUMED)))
def test_resume_does_not_read_the_files_it_writes_anew(made, tmp_path, name, kind):
    run = damaged_copy(made.interrupted, tmp_path / "run", name, kind)
    with step_callback(stop_before(0)):  # stops before the first step after the resume: everything is loaded
        result = train(made.cfg, run, progress=False)
    assert len(result["metrics"]["step"]) == made.steps_per_epoch  # the first epoch's log, resumed


def test_the_command_line_process_prints_one_error_line_and_no_traceback(made, tmp_path):
    run = damaged_copy(made.interrupted, tmp_path / "run", "checkpoint.pt", "garbage")
    res = subprocess.run([sys.executable, "-m", "ftcl_core", "train", str(made.config_file), "--out", str(run),
                          "--no-progress"], capture_output=True, text=True, timeout=300)
    assert_one_error_line(res.returncode, res.stderr, str(run / "checkpoint.pt"), RECOVERY["checkpoint.pt"])


@pytest.mark.parametrize("name, kind", [("config.yaml", kind) for kind in DAMAGES] + [("checkpoint.pt", "garbage")])
def test_resume_through_a_sweep_is_one_error_line(made, root, capsys, name, kind):
    """A sweep reads a begun run's config itself (to resume it compiled or eager), before ``train`` reads the
    rest as the cases above do."""
    run = stored_at(made, "baseline", made.interrupted, name, kind)
    before = contents(run)
    code, err = cli(capsys, "sweep", str(made.exp_file), "--profile", "smoke", "--settings", "baseline",
                    "--no-progress")
    assert_one_error_line(code, err, str(run / name), RECOVERY[name])
    assert contents(run) == before


def test_the_recovery_from_a_damaged_config_keeps_the_run(made, tmp_path, root, capsys):
    run = damaged_copy(made.complete, tmp_path / "run", "config.yaml", "truncated")  # it would parse, as another config
    code, err = cli(capsys, "train", str(made.config_file), "--out", str(run), "--no-progress")
    assert_one_error_line(code, err, str(run / "config.yaml"), "cut short")
    (run / "config.yaml").unlink()  # the recovery: delete it and run the same command
    eval_before = (run / "eval.json").read_bytes()
    code, err = cli(capsys, "train", str(made.config_file), "--out", str(run), "--no-progress")
    assert code == 0, err
    assert RunDir(run).load_config() == made.cfg and (run / "eval.json").read_bytes() == eval_before
    # the same through a sweep, whose readers walk the stored runs before it trains or copies any
    stored = stored_at(made, "baseline", made.complete, "config.yaml", "garbage")
    (stored / "config.yaml").unlink()
    records = sweeps.sweep(made.exp_file, "smoke", progress=False)
    assert RunDir(stored).load_config() == made.cfg and [r["setting"] for r in records] == ["baseline", "twin"]


# ---- read: the loaders of a stored run, and the readers of every stored run ----

Reader = Callable[[RunDir, Made], object]
READERS: dict[str, list[Reader]] = {
    "config.yaml": [lambda run, made: run.load_config(), lambda run, made: sweeps.plan_rows([made.exp_file], "smoke")],
    "metrics.npz": [lambda run, made: run.load_metrics()],
    "grad_norms.npz": [lambda run, made: run.load_grad_norms()],
    "histograms.npz": [lambda run, made: run.load_histograms()],
    "eval.json": [lambda run, made: run.load_eval(), lambda run, made: store.load_records(made.exp_file, "smoke")],
    "provenance.json": [lambda run, made: run.load_provenance(), lambda run, made: sweeps.step_rates_here("smoke")],
}


@pytest.mark.parametrize("kind", DAMAGES)
@pytest.mark.parametrize("name", READ)
def test_reading_a_damaged_file_names_it_and_the_recovery(made, root, name, kind):
    run = stored_at(made, "baseline", made.complete, name, kind)
    for read in READERS[name]:
        with pytest.raises(RunFileError) as caught:
            read(RunDir(run), made)
        message = str(caught.value)
        assert str(run / name) in message and RECOVERY[name] in message and "\n" not in message, message


@pytest.mark.parametrize("kind", DAMAGES)
@pytest.mark.parametrize("name", sorted(set(FILES) - set(READ)))
def test_readers_do_not_read_the_checkpoint_lock_or_status(made, root, name, kind):
    run = RunDir(stored_at(made, "baseline", made.complete, name, kind))
    for readers in READERS.values():
        for read in readers:
            read(run, made)
    assert [r["setting"] for r in store.load_records(made.exp_file, "smoke")] == ["baseline"]


@pytest.mark.parametrize("name", ["eval.json", "metrics.npz"])
def test_summary_of_a_damaged_stored_run_is_one_error_line(made, root, capsys, name):
    # `summary` reads these runs' metrics
    diagnosis = sorted((experiment_file.ROOT / "experiments" / "diagnosis").glob("*.yaml"))[0]
    exp = experiment_file.Experiment.load(diagnosis)
    setting = next(iter(exp.settings))
    run = damaged_copy(made.complete, experiment_file.run_dir(exp, setting, exp.seeds[0], "smoke"), name, "garbage")
    (_, _, cfg, _), = experiment_file.planned_runs(exp, "smoke", seeds=[exp.seeds[0]], settings=[setting])
    write_yaml(run / "config.yaml", cfg.to_dict())  # the setting's own config: summary's store check passes it
    code, err = cli(capsys, "summary", "--profile", "smoke")
    assert_one_error_line(code, err, str(run / name), RECOVERY[name])


@pytest.mark.parametrize("name", ["config.yaml", "provenance.json"])
def test_plan_over_a_damaged_stored_run_is_one_error_line(made, root, capsys, name):
    run = stored_at(made, "baseline", made.complete, name, "truncated")
    code, err = cli(capsys, "plan", str(made.exp_file), "--profile", "smoke")
    assert_one_error_line(code, err, str(run / name), RECOVERY[name])


@pytest.mark.parametrize("kind", DAMAGES)
@pytest.mark.parametrize("name", FILES)
def test_a_sweep_never_copies_a_damaged_run(made, root, name, kind):
    """A sweep copies a stored run of the same config instead of training it again (the twin setting): a damaged
    file of that run stops the sweep with its error before anything is copied; a file it does not read (the
    checkpoint, which is not copied, the lock, the divergence record) does not."""
    source = stored_at(made, "baseline", made.complete, name, kind)
    twin = experiment_file.run_dir(experiment_file.Experiment.load(made.exp_file), "twin", 0, "smoke")
    if name in READ:
        with pytest.raises(RunFileError, match=re.escape(RECOVERY[name])) as caught:
            sweeps.sweep(made.exp_file, "smoke", progress=False)
        assert str(source / name) in str(caught.value) and not twin.exists()
    else:
        sweeps.sweep(made.exp_file, "smoke", progress=False)
        assert (twin / "metrics.npz").read_bytes() == (source / "metrics.npz").read_bytes()
        assert "copied_from" in RunDir(twin).load_provenance()


def test_a_waiting_process_shows_a_damaged_lock_file_as_it_is(tmp_path, capsys):
    """The lock's pid is read only to say whom a second process waits for; garbled bytes there garble that name
    only (they were a UnicodeDecodeError)."""
    entered = threading.Event()

    def second() -> None:
        with run_lock(tmp_path):
            entered.set()

    with run_lock(tmp_path):
        (tmp_path / ".lock").write_bytes(random.Random(0).randbytes(16))
        waiter = threading.Thread(target=second)
        waiter.start()
        time.sleep(0.3)
        assert not entered.is_set()
    waiter.join(10)
    assert entered.is_set() and "is training it" in capsys.readouterr().err


def test_the_recovery_of_a_missing_config_is_named_too(made, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(made.complete, run)
    (run / "config.yaml").unlink()
    with pytest.raises(RunFileError, match="is missing: .* Run the command that made it"):
        RunDir(run).load_config()
