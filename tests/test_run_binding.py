"""Issue 64: nothing a user types loses or mislabels a run.

A run folder is bound to its config (the checkpoint's seal holds it, with the commit and a sha256 checksum), so a
folder whose ``config.yaml`` is gone still refuses another config and gets its own back; a checkpoint with flipped
bytes is refused; stale temporary files are removed and said; every check that can fail runs before the run folder
is written (device, sizes against the machine's memory, the data, the output path), so the corrected command runs
in the same folder; files that cannot be read are one line; config and experiment files are checked as what they
must be; the commands that read runs refuse an empty store.  Each case is one ``error:`` line and exit status 2
(130 for Ctrl-C), no traceback.  The runs are tiny (256 shapes, 4 steps an epoch, 2 epochs).
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)

from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.config import load_config
from ftcl_core.runs import RunDir
from ftcl_core.study import threads
from ftcl_core.training import train

ROOT = Path(__file__).resolve().parent.parent
SMOKE = "configs/smoke_moco_v2.yaml"
TINY = ["data.n_train=256", "data.n_test=128", "moco.queue_size=128", "eval.linear_epochs=1", "eval.random_init=false"]
STEPS_PER_EPOCH = 256 // 64




def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.name != ".lock"}


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    """A tiny run stopped after its first epoch's checkpoint (``interrupted``) and the same run finished
    uninterrupted (``complete``)."""
    tmp = tmp_path_factory.mktemp("binding")
    cfg = load_config(SMOKE, TINY)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(threads.ENV_DIR, str(tmp / "trainers"))
        train(cfg, tmp / "interrupted", progress=False, max_steps=STEPS_PER_EPOCH + 1)
        train(cfg, tmp / "complete", progress=False)
    return {"interrupted": tmp / "interrupted", "complete": tmp / "complete"}


def copy(made: dict[str, Path], which: str, dest: Path) -> Path:
    shutil.copytree(made[which], dest)
    return dest


def assert_same_run(a: Path, b: Path) -> None:
    ma, mb = RunDir(a).load_metrics(), RunDir(b).load_metrics()
    assert set(ma) == set(mb)
    for key in ma:
        np.testing.assert_array_equal(ma[key], mb[key], err_msg=key)
    ea, eb = RunDir(a).load_eval(), RunDir(b).load_eval()
    assert (ea["linear_top1"], ea["knn_top1"]) == (eb["linear_top1"], eb["knn_top1"])


# ---- 1. a run folder is bound to its config ----


def test_the_checkpoint_is_sealed_with_its_config_commit_and_epoch(made):
    from ftcl_core.runs import read_seal

    seal = read_seal(RunDir(made["complete"]).checkpoint)
    assert seal["config"] == RunDir(made["complete"]).load_config().to_dict()
    assert seal["epoch"] == 2 and "commit" in seal
    assert torch.load(RunDir(made["complete"]).checkpoint, weights_only=True)["epoch"] == 2  # torch reads it as ever


def test_a_complete_run_without_its_config_refuses_another_and_gets_its_own_back(made, tmp_path, capsys):
    run = copy(made, "complete", tmp_path / "run")
    (run / "config.yaml").unlink()
    before = contents(run)
    code, err = cli(capsys, "train", SMOKE, *TINY, "seed=7", "--out", str(run), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", "seed=0 (the run's)", "seed=7 (this command's)", "--out")
    assert contents(run) == before  # nothing relabelled: no config.yaml of seed 7
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(run), "--no-progress")
    assert code == 0, err
    assert (run / "config.yaml").read_bytes() == (made["complete"] / "config.yaml").read_bytes()


def test_an_unfinished_run_without_its_config_refuses_another_learning_rate(made, tmp_path, capsys):
    run = copy(made, "interrupted", tmp_path / "run")
    (run / "config.yaml").unlink()
    before = contents(run)
    code, err = cli(capsys, "train", SMOKE, *TINY, "optim.lr=0.01", "--out", str(run), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", "optim.lr=0.06 (the run's)", "optim.lr=0.01", "checkpoint.pt")
    assert contents(run) == before


def test_the_mismatch_is_refused_with_config_yaml_there_too(made, tmp_path, capsys):
    run = copy(made, "interrupted", tmp_path / "run")
    (run / "config.yaml").write_text(yaml.safe_dump(load_config(SMOKE, [*TINY, "optim.lr=0.01"]).to_dict(),
                                                    sort_keys=False))  # edited to say what the checkpoint did not
    code, err = cli(capsys, "train", SMOKE, *TINY, "optim.lr=0.01", "--out", str(run), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", "checkpoint.pt", "optim.lr=0.06 (the run's)")


def test_an_unfinished_run_resumes_to_the_numbers_of_the_uninterrupted_one(made, tmp_path):
    run = copy(made, "interrupted", tmp_path / "run")
    train(load_config(SMOKE, TINY), run, progress=False)
    assert_same_run(made["complete"], run)


@pytest.mark.parametrize("cut", ["first rows", "last epoch"])
def test_a_log_that_does_not_reach_the_checkpoint_is_refused_on_resume(made, tmp_path, capsys, cut):
    """A metrics.npz replaced by a shorter or gapped one (issue 64, fifth trial) would leave holes in the resumed log:
    refused with the file named, the run's files as they were."""
    from ftcl_core.runs import write_npz
    from ftcl_core.study.cli import main

    run = copy(made, "interrupted", tmp_path / "run")
    metrics = RunDir(run).load_metrics()
    keep = metrics["step"] >= 2 if cut == "first rows" else metrics["step"] < STEPS_PER_EPOCH - 1
    write_npz(RunDir(run).metrics, {k: np.asarray(v)[keep] for k, v in metrics.items()})
    before = contents(run)
    code = main(["train", SMOKE, *TINY, "--out", str(run), "--no-progress"])
    err = capsys.readouterr().err
    assert_one_line(code, err, EXIT_ERROR, "metrics.npz", "not hold the log")
    assert "grad_norms.npz" not in err  # the log that falls short is named alone (fourteenth trial's U)
    assert contents(run) == before


def test_a_checkpoint_written_before_seals_still_resumes_to_the_same_numbers(made, tmp_path):
    from ftcl_core.runs import read_seal

    run = copy(made, "interrupted", tmp_path / "run")
    state = torch.load(RunDir(run).checkpoint, weights_only=True)
    buf = io.BytesIO()
    torch.save(state, buf)  # as every checkpoint was written before issue 64: no seal
    RunDir(run).checkpoint.write_bytes(buf.getvalue())
    assert read_seal(RunDir(run).checkpoint) is None
    train(load_config(SMOKE, TINY), run, progress=False)
    assert_same_run(made["complete"], run)


# ---- 2. checkpoints prove they are whole ----


def test_a_checkpoint_with_flipped_bytes_is_refused(made, tmp_path, capsys):
    run = copy(made, "interrupted", tmp_path / "run")
    data = bytearray(RunDir(run).checkpoint.read_bytes())
    for i in range(8):  # eight bytes in the middle of the tensors: torch alone loads them and trains on
        data[len(data) // 2 + 97 * i] ^= 0x5A
    RunDir(run).checkpoint.write_bytes(bytes(data))
    before = contents(run)
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(run), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", str(RunDir(run).checkpoint), "sha256", "Delete it")
    assert contents(run) == before


def test_a_sealed_checkpoint_verifies(made):
    from ftcl_core.runs import verified_bytes

    assert verified_bytes(RunDir(made["complete"]).checkpoint) == RunDir(made["complete"]).checkpoint.read_bytes()


def test_stale_temporary_files_are_removed_and_said(made, tmp_path, capsys):
    run = copy(made, "interrupted", tmp_path / "run")
    stale = run / ".checkpoint.pt.k3j2x9.tmp"
    stale.write_bytes(RunDir(run).checkpoint.read_bytes())  # what kill -9 during a checkpoint write leaves
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(run), "--no-progress")
    assert code == 0, err
    assert not stale.exists() and "removed 1 temporary file(s)" in err and ".checkpoint.pt.k3j2x9.tmp" in err
    assert_same_run(made["complete"], run)


def test_a_signal_just_after_the_checkpoint_names_the_epoch_it_holds(capsys, tmp_path):
    from ftcl_core.training import epoch_callback

    def press(run, epoch: int) -> None:  # after the checkpoint's rename, before the loop counts it
        raise KeyboardInterrupt

    with epoch_callback(press):
        code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(tmp_path / "run"), "--no-progress")
    assert_one_line(code, err, 130, f"interrupted at step {STEPS_PER_EPOCH}", "resumes from epoch 1")


# ---- 3. checked before written: a refused command leaves nothing, the corrected one runs there ----


def write_fashion_mnist(folder: Path, n: int, label: int | None = None) -> None:
    """Four tiny IDX files in Fashion-MNIST's names (``label``: every label that value)."""
    folder.mkdir(parents=True, exist_ok=True)
    for prefix in ("train", "t10k"):
        labels = torch.arange(n) % 10 if label is None else torch.full((n,), label)
        for kind, array in (("images-idx3", torch.zeros(n, 28, 28)), ("labels-idx1", labels)):
            head = bytes([0, 0, 0x08, array.dim()]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
            with gzip.open(folder / f"{prefix}-{kind}-ubyte.gz", "wb") as fh:
                fh.write(head + array.to(torch.uint8).numpy().tobytes())


def fashion(tmp_path: Path, how: str) -> list[str]:
    root = tmp_path / f"fm_{how}"
    write_fashion_mnist(root, 100 if how == "few" else 300, 255 if how == "labels" else None)
    images = root / "train-images-idx3-ubyte.gz"
    if how == "not_gzip":
        images.write_bytes(b"these bytes are not gzip")
    if how == "truncated":
        images.write_bytes(images.read_bytes()[:40])
    return ["data.name=fashion_mnist", f"data.root={root}", "data.image_size=28", "data.n_test=100"]


REFUSED = {
    "device=nosuch": (lambda tmp: ["device=nosuch"], "device='nosuch'"),
    "image_size=100000": (lambda tmp: ["data.image_size=100000"], "data.image_size=100000"),
    "out_size=100000": (lambda tmp: ["augment.out_size=100000"], "augment.out_size=100000"),
    "dim=10**9": (lambda tmp: ["model.dim=1000000000"], "model.dim=1000000000"),
    "fewer images than n_train": (lambda tmp: fashion(tmp, "few"), "data.n_train=256"),
    "labels outside the classes": (lambda tmp: fashion(tmp, "labels"), "255"),
    "not gzip": (lambda tmp: fashion(tmp, "not_gzip"), "train-images-idx3-ubyte.gz"),
    "truncated gzip": (lambda tmp: fashion(tmp, "truncated"), "train-images-idx3-ubyte.gz"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_refused_command_leaves_nothing_behind(capsys, tmp_path, case):
    make, word = REFUSED[case]
    out = tmp_path / "runs" / "run"
    extra = make(tmp_path)  # its keys replace TINY's: the command line refuses a key given twice
    keys = {e.split("=", 1)[0] for e in extra}
    code, err = cli(capsys, "train", SMOKE, *[a for a in TINY if a.split("=", 1)[0] not in keys], *extra, "--out",
                    str(out), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", word)
    assert not (tmp_path / "runs").exists()


def test_the_corrected_command_then_runs_in_the_same_folder(capsys, tmp_path):
    out = tmp_path / "run"
    code, err = cli(capsys, "train", SMOKE, *TINY, "data.image_size=100000", "--out", str(out), "--no-progress")
    assert code == EXIT_ERROR and not out.exists(), err
    code, err = cli(capsys, "train", SMOKE, *TINY, *fashion(tmp_path, "few")[:2], "--out", str(out), "--no-progress")
    assert code == EXIT_ERROR and not out.exists(), err
    code, err = cli(capsys, "train", SMOKE, *TINY, "train.epochs=1", "--out", str(out), "--no-progress")
    assert code == 0 and RunDir(out).is_complete(), err


# ---- 4. output paths and unreadable files: one line naming the path; Ctrl-C at start-up ----


def test_output_paths_that_cannot_be_a_run_folder_are_one_line(capsys, tmp_path):
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    cases = [("", "--out ''"), (str(tmp_path / ("x" * 300)), "longer than"),
             (str(tmp_path / "dangling"), "does not exist"), (str(tmp_path / "dangling" / "run"), "does not exist")]
    for out, word in cases:
        code, err = cli(capsys, "train", SMOKE, *TINY, "--out", out, "--no-progress")
        assert_one_line(code, err, EXIT_ERROR, "error:", word)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "trainers"] or not (tmp_path / "nowhere").exists()
    assert not (tmp_path / "nowhere").exists() and not Path("run").exists()


def test_a_folder_that_cannot_be_written_is_one_line(capsys, tmp_path, monkeypatch):
    readonly = tmp_path / "ro"
    readonly.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == readonly else real(p, mode, **kw))
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(readonly / "run"), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", str(readonly), "cannot be written")
    assert list(readonly.iterdir()) == []


def test_a_folder_that_fails_to_be_made_is_one_line(capsys, tmp_path, monkeypatch):
    def refuse(self, *args, **kwargs):
        raise OSError(30, "Read-only file system", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(tmp_path / "run"), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", str(tmp_path / "run"), "Read-only file system")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a folder whatever its mode")
def test_a_read_only_folder_is_one_line(capsys, tmp_path):
    readonly = tmp_path / "ro"
    readonly.mkdir(mode=0o555)
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(readonly / "run"), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", str(readonly))


@pytest.mark.parametrize("delay", [0.3, 0.8, 1.5])
def test_ctrl_c_while_the_command_starts_is_one_line_and_130(tmp_path, delay):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), threads.ENV_DIR: str(tmp_path / "trainers")}
    proc = subprocess.Popen([sys.executable, "-m", "ftcl_core", "train", SMOKE, *TINY, "--out", str(tmp_path / "r"),
                             "--no-progress"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("ftcl_core: training with")]
    assert proc.returncode == 130 and len(lines) == 1 and "Traceback" not in err, (proc.returncode, err)
    assert "interrupted" in lines[0]


# ---- 5. config and experiment files are what they must be ----


@pytest.mark.parametrize("text, word", [("", "is empty"), ("  \n# only a comment\n", "is empty"),
                                        ("42\n", "not a mapping"),
                                        ("optim: {lr: 0.1}\ntrain: {epochs: 2}\noptim: {lr: 0.2}\n", "twice")],
                         ids=["empty", "blank", "a number", "a section twice"])
def test_a_config_file_that_is_not_a_config_is_one_line(capsys, tmp_path, text, word):
    config = tmp_path / "c.yaml"
    config.write_text(text)
    code, err = cli(capsys, "train", str(config), "--out", str(tmp_path / "r"), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", str(config), word)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("override, words", [
    ("optim.milestones=[500]", ("optim.milestones", "train.epochs=2")),
    ("seed=1e23", ("seed=", "must be an integer in [0, 4294967295]")),
    ("seed=-1", ("seed=-1",)),
])
def test_values_beyond_the_run_are_refused_with_the_key(capsys, tmp_path, override, words):
    code, err = cli(capsys, "train", SMOKE, *TINY, "optim.schedule=step", override, "--out", str(tmp_path / "r"),
                    "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", *words)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("text, word", [("42\n", "not a mapping"), ("a: 3\n", "lacks"), ("", "is empty"),
                                        (f"table: H\nbase: {{cpu: {SMOKE}}}\nsettings: {{a: {{}}}}\ntable: J\n",
                                         "twice")],
                         ids=["a number", "a: 3", "empty", "a key twice"])
@pytest.mark.parametrize("command", ["sweep", "plan"])
def test_an_experiment_file_that_is_not_one_is_one_line(capsys, tmp_path, monkeypatch, command, text, word):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "root"))
    exp = tmp_path / "exp.yaml"
    exp.write_text(text)
    code, err = cli(capsys, command, str(exp), "--profile", "smoke")
    assert_one_line(code, err, EXIT_ERROR, "error:", str(exp), word)
    assert not (tmp_path / "root").exists()


# ---- 6. the commands that read runs refuse an empty store ----


@pytest.mark.parametrize("command", ["summary", "predict", "calibration"])
def test_a_store_without_runs_is_refused_and_nothing_written(capsys, tmp_path, monkeypatch, command):
    from ftcl_core.study import predict

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "root"))
    monkeypatch.setattr(predict, "REPORT", str(tmp_path / "predictor.json"))  # never the repository's file
    (tmp_path / "root" / "smoke").mkdir(parents=True)
    code, err = cli(capsys, command, "--profile", "smoke")
    assert_one_line(code, err, EXIT_ERROR, "error:", "no runs found", str(tmp_path / "root" / "smoke"))
    assert list((tmp_path / "root" / "smoke").iterdir()) == [] and not (tmp_path / "predictor.json").exists()
