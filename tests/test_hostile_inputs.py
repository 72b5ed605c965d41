"""Hostile inputs, as a new user would try them on a fresh clone: config keys, the command line, files, data, signals
and divergence.  Each ends in one line on stderr and a non-zero exit status (2 a wrong input, 3 a diverged run, 130
Ctrl-C, 143 SIGTERM), no traceback, and nothing lost: a wrong input writes no run folder, a diverged run keeps its
last good checkpoint, an interrupted one resumes to the very numbers of an uninterrupted run.

The command line runs in this process (``ftcl_core.__main__.main``) except where a signal or an exit status of the
process itself is tested.  The runs are tiny (256 shapes, 4 steps an epoch, 2 epochs).
"""

from __future__ import annotations

import fcntl
import gzip
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ftcl_core.__main__ import EXIT_DIVERGED, EXIT_ERROR, main
from ftcl_core.config import load_config
from ftcl_core.runs import RunDir
from ftcl_core.stats import representation_statistics
from ftcl_core.study import threads as study_threads
from ftcl_core.training import DivergenceWatch, step_callback

ROOT = Path(__file__).resolve().parent.parent
SMOKE = "configs/smoke_moco_v2.yaml"
TINY = ["data.n_train=256", "data.n_test=128", "moco.queue_size=128", "eval.linear_epochs=1", "eval.random_init=false"]
STEPS = 2 * 256 // 64  # 2 epochs of 4 steps
KILL_AT_STEP = str(ROOT / "tests" / "kill_at_step.py")


@pytest.fixture(autouse=True)
def own_registry(tmp_path, monkeypatch):
    """Runs here register in a folder of their own (another training process on this machine changes nothing)."""
    monkeypatch.setenv(study_threads.ENV_DIR, str(tmp_path / "trainers"))
    monkeypatch.chdir(ROOT)


def cli(capsys, *argv: str) -> tuple[int, str]:
    """``python -m ftcl_core ARGV`` in this process: its exit status and its stderr."""
    code = main(list(argv))
    return code, capsys.readouterr().err


def assert_one_line(code: int, err: str, status: int, *words: str) -> str:
    """Exit ``status``, one non-empty line on stderr holding ``words``, no traceback; returns the line."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == status and len(lines) == 1 and "Traceback" not in err, (code, err)
    for word in words:
        assert word in lines[0], f"{word!r} not in: {lines[0]}"
    return lines[0]


# ---- config keys: every float finite and in its range, every draw terminating, checked before anything is written ----

BAD_KEYS = [
    ("optim.lr=nan", "optim.lr"), ("optim.lr=.inf", "optim.lr"), ("optim.lr=-1", "optim.lr"),
    ("optim.momentum=1.5", "optim.momentum"), ("optim.weight_decay=-1", "optim.weight_decay"),
    ("optim.warmup_epochs=-1", "optim.warmup_epochs"),
    ("moco.tau=inf", "moco.tau"), ("moco.tau=nan", "moco.tau"), ("moco.tau=0", "moco.tau"),
    ("moco.momentum=-0.1", "moco.momentum"),
    ("ft.alpha_ex=inf", "ft.alpha_ex"),  # it hung: a Beta draw that never returns
    ("ft.alpha_ex=1e-9", "ft.alpha_ex"), ("ft.alpha_in=1e9", "ft.alpha_in"), ("ft.hard_a=nan", "ft.hard_a"),
    ("ft.start_epoch=-1", "ft.start_epoch"),
    ("augment.crop_scale=[nan, 1]", "augment.crop_scale"), ("augment.blur_sigma=[0, 1]", "augment.blur_sigma"),
    ("augment.jitter=[inf, 0.4, 0.4, 0.1]", "augment.jitter"), ("augment.gray_p=nan", "augment.gray_p"),
    ("eval.knn_t=0", "eval.knn_t"), ("eval.linear_lr=inf", "eval.linear_lr"),
    ("train.batch_size=1", "train.batch_size"), ("ft.poss=true", "ft.poss"), ("ft.pos", "ft.pos"),
]


@pytest.mark.parametrize("override, key", BAD_KEYS, ids=[o for o, _ in BAD_KEYS])
def test_a_bad_config_value_is_one_line_and_writes_nothing(capsys, tmp_path, override, key):
    out = tmp_path / "run"
    code, err = cli(capsys, "train", SMOKE, "ft.pos=true", override, "--out", str(out), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", key)
    assert not out.exists()


def float_keys() -> list[str]:
    """Every dotted config key whose value is a number or a list of numbers (float-annotated)."""
    import dataclasses
    import typing

    from ftcl_core.config import SECTIONS

    keys = []
    for name, section in SECTIONS.items():
        hints = typing.get_type_hints(section)
        for f in dataclasses.fields(section):
            if "float" in str(hints[f.name]):
                keys.append(f"{name}.{f.name}")
    return keys


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf"])
def test_every_float_key_refuses_what_is_not_finite(bad):
    from ftcl_core.config import DEFAULTS, ConfigError

    keys = float_keys()
    assert len(keys) >= 15  # the sections' numbers: augment, moco, simclr, byol, swav, optim, ft, eval
    for key in keys:
        section, field = key.split(".")
        default = DEFAULTS[section][field]
        width = len(default) if isinstance(default, list) else {"blur_sigma": 2, "jitter": 4}.get(field, 0)
        value = f"[{', '.join([bad] * width)}]" if width else bad
        with pytest.raises(ConfigError, match=re.escape(key)):
            load_config(SMOKE, [f"{key}={value}"])


@pytest.mark.parametrize("method, override", [("simclr", "simclr.tau=inf"), ("swav", "swav.epsilon=inf"),
                                              ("byol", "byol.momentum=nan")])
def test_the_methods_own_floats_are_checked_too(capsys, tmp_path, method, override):
    code, err = cli(capsys, "train", f"configs/smoke_{method}.yaml", override, "--out", str(tmp_path / "r"))
    assert_one_line(code, err, EXIT_ERROR, "error:", override.split("=")[0])


def test_every_beta_draw_of_the_allowed_range_terminates_and_is_a_number():
    from ftcl_core.config import BETA_RANGE
    from ftcl_core.transforms import sample_beta

    for alpha in BETA_RANGE:
        lam = sample_beta(alpha, alpha, (4096,), torch.Generator().manual_seed(0))
        assert torch.isfinite(lam).all() and (lam >= 0).all() and (lam <= 1).all()


# ---- the command line and files ----


def test_cli_faults_are_one_line(capsys, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"table: H\ntitle: hostile\nbase: {{cpu: {SMOKE}}}\nseeds: [0]\nsettings:\n  baseline: {{}}\n")
    cases = [
        (["train", "configs/nope.yaml", "--out", str(tmp_path / "r")], "configs/nope.yaml"),
        (["train", SMOKE, "--out", str(a_file)], str(a_file)),
        (["train", SMOKE, "--out", str(a_file / "run")], str(a_file)),
        (["train", "configs", "--out", str(tmp_path / "r")], "configs"),
        (["screen", SMOKE, "--steps", "0"], "--steps"),
        (["sweep", str(exp), "--profile", "smoke", "--settings", "nope"], "nope"),
        (["sweep", str(exp), "--profile", "smoke", "--set", "train.epochs=3"], "train.epochs"),
    ]
    for argv, word in cases:
        code, err = cli(capsys, *argv)
        assert_one_line(code, err, EXIT_ERROR, "error:", word)
    assert not (tmp_path / "r").exists() and a_file.read_text() == "x"


@pytest.mark.parametrize("text", [b"method: [moco\n", b"\xff\xfe\x00garbage\x81", b"- a\n- list\n",
                                  b"optim: 3\n", b"nosuch: {x: 1}\n"],
                         ids=["not YAML", "not text", "a list", "a section not a mapping", "an unknown section"])
def test_a_broken_config_file_is_one_line(capsys, tmp_path, text):
    config = tmp_path / "broken.yaml"
    config.write_bytes(text)
    code, err = cli(capsys, "train", str(config), "--out", str(tmp_path / "r"))
    assert_one_line(code, err, EXIT_ERROR, "error:")
    assert not (tmp_path / "r").exists()


def test_a_folder_of_another_run_is_refused_and_kept(capsys, tmp_path):
    out = tmp_path / "run"
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(out), "--no-progress")
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.name != ".lock"}
    code, err = cli(capsys, "train", SMOKE, *TINY, "optim.lr=0.01", "--out", str(out), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", "optim.lr")
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != ".lock"} == before


# ---- data: a given path is taken at its word ----


def write_fashion_mnist(folder: Path, n: int = 40) -> None:
    """Four tiny IDX files in Fashion-MNIST's names."""
    folder.mkdir(parents=True, exist_ok=True)
    for prefix in ("train", "t10k"):
        for kind, array in (("images-idx3", torch.zeros(n, 28, 28)), ("labels-idx1", torch.arange(n) % 10)):
            head = bytes([0, 0, 0x08, array.dim()]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
            with gzip.open(folder / f"{prefix}-{kind}-ubyte.gz", "wb") as fh:
                fh.write(head + array.to(torch.uint8).numpy().tobytes())


@pytest.mark.parametrize("where", ["empty", "missing"])
def test_a_data_root_without_the_data_is_an_error_naming_it(capsys, tmp_path, monkeypatch, where):
    from ftcl_core.study import fashion_mnist as data

    monkeypatch.setattr(data, "DEBIAN_FASHION_MNIST", tmp_path / "installed")  # another copy, which must not be read
    write_fashion_mnist(tmp_path / "installed")
    root = tmp_path / where
    if where == "empty":
        root.mkdir()
    code, err = cli(capsys, "train", SMOKE, "data.name=fashion_mnist", f"data.root={root}", "--out",
                    str(tmp_path / "r"), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "error:", str(root), "train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


def test_without_a_root_the_fallback_is_read_and_named(capsys, tmp_path, monkeypatch):
    from ftcl_core.study import fashion_mnist as data

    monkeypatch.setattr(data, "DEBIAN_FASHION_MNIST", tmp_path / "installed")
    write_fashion_mnist(tmp_path / "installed")
    assert data.fashion_mnist_root(None) == tmp_path / "installed"
    assert data.fashion_mnist_root(tmp_path / "elsewhere") is None  # a given root never falls back
    data.load_fashion_mnist(None, True)
    assert str((tmp_path / "installed").resolve()) in capsys.readouterr().out


# ---- divergence: one line, exit 3, the last good checkpoint kept; the statistics never raise ----


@pytest.mark.parametrize("method", ["moco", "simclr", "byol", "simsiam", "swav"])
def test_a_learning_rate_that_diverges_is_one_line(capsys, tmp_path, method):
    out = tmp_path / "run"
    config, tiny = ("configs/smoke_moco_v2.yaml", TINY) if method == "moco" else (f"configs/smoke_{method}.yaml", TINY[:2])
    code, err = cli(capsys, "train", config, *tiny, "optim.lr=1e6", "stats.histograms=true", "--out", str(out),
                    "--no-progress")
    line = assert_one_line(code, err, EXIT_DIVERGED, "error:", "diverged at step", "optim.lr", "NaN or infinite")
    status = json.loads((out / "status.json").read_text())
    assert f"step {status['step']} of {STEPS} (epoch {status['epoch']})" in line and not RunDir(out).is_complete()
    if RunDir(out).checkpoint.exists():  # a checkpoint of an epoch before the divergence, none after it
        assert torch.load(RunDir(out).checkpoint, weights_only=True)["epoch"] == status["epoch"]


def test_a_screen_that_diverges_is_one_line(capsys):
    code, err = cli(capsys, "screen", SMOKE, *TINY, "optim.lr=1e6", "--steps", "8")
    assert_one_line(code, err, EXIT_DIVERGED, "error:", "diverged at step")


def poison_views_at(monkeypatch, step: int) -> None:
    """The views of training step ``step`` NaN (from then on the features are), the random draws as ever."""
    from ftcl_core import training

    real, calls = training.make_views, {"n": 0}

    def views(*args, **kwargs):
        v = real(*args, **kwargs)
        calls["n"] += 1
        return tuple(x * math.nan for x in v) if calls["n"] > step else v

    monkeypatch.setattr(training, "make_views", views)


def test_divergence_keeps_the_last_good_checkpoint(capsys, tmp_path, monkeypatch):
    out = tmp_path / "run"
    poison_views_at(monkeypatch, 5)  # epoch 1, after epoch 0's checkpoint
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(out), "--no-progress")
    assert_one_line(code, err, EXIT_DIVERGED, "step 5 of 8", "features", "epoch 1")
    assert torch.load(RunDir(out).checkpoint, weights_only=True)["epoch"] == 1
    assert not RunDir(out).is_complete()


def test_a_sweep_diverges_with_the_same_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "root"))
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"table: H\ntitle: hostile\nbase: {{cpu: {SMOKE}}}\nseeds: [0]\n"
                   "common: {data.n_train: 256, data.n_test: 128, eval.linear_epochs: 1, optim.lr: 1.0e+6}\n"
                   "settings:\n  baseline: {}\n")
    code, err = cli(capsys, "sweep", str(exp), "--profile", "smoke", "--no-progress")
    assert_one_line(code, err, EXIT_DIVERGED, "error:", "diverged at step", "optim.lr")


def test_the_first_quantity_that_is_not_finite_is_named(tmp_path):
    cfg = load_config(SMOKE)
    for health, named in (([False, False, False], "features"), ([True, False, False], "loss"),
                          ([True, True, False], "gradient")):
        watch = DivergenceWatch(RunDir(tmp_path), cfg, 16, every_step=False)
        watch.add(3, 0, torch.tensor([True, True, True]), 0)
        watch.add(4, 0, torch.tensor(health), 0)
        with pytest.raises(Exception, match=f"step 4 of 16 .*the {named} became NaN"):
            watch.check(0)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_the_statistics_record_nan_and_never_raise(bad):
    z = torch.randn(64, 32, generator=torch.Generator().manual_seed(0))
    z[5, 3] = bad
    assert torch.isnan(representation_statistics(z, z.clone())).all()
    assert torch.isfinite(representation_statistics(torch.full((64, 32), 1e30), z.nan_to_num(0))).all()


# ---- interrupts: one line, 130 / 143, the lock released, the same command finishes the very same run ----


def run_cli(out: Path, interrupt: str | None = None) -> subprocess.CompletedProcess:
    """``python -m ftcl_core train`` on the tiny run (one thread); with ``interrupt`` ("STEP:SIGNAL"), that signal
    before that step (tests/kill_at_step.py)."""
    launch = ["-m", "ftcl_core"] if interrupt is None else [KILL_AT_STEP, interrupt]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *launch, "train", SMOKE, *TINY, "--out", str(out), "--no-progress"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hostile") / "full"
    done = run_cli(out)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.slow  # three runs in subprocesses, one killed
@pytest.mark.parametrize("sig, status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_an_interrupted_run_resumes_to_the_same_numbers(tmp_path, uninterrupted, sig, status):
    out = tmp_path / "run"
    stopped = run_cli(out, f"5:{sig}")
    assert_one_line(stopped.returncode, stopped.stderr, status, "interrupted at step 5 of 8",
                    "the same command resumes from epoch 1")
    with open(out / ".lock") as fh:  # released: taken at once
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fh, fcntl.LOCK_UN)
    resumed = run_cli(out)
    assert resumed.returncode == 0, resumed.stderr
    a, b = RunDir(uninterrupted).load_metrics(), RunDir(out).load_metrics()
    assert set(a) == set(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    ea, eb = RunDir(uninterrupted).load_eval(), RunDir(out).load_eval()
    assert ea["linear_top1"] == eb["linear_top1"] and ea["knn_top1"] == eb["knn_top1"]


@pytest.mark.slow  # a run in a subprocess
def test_the_kill_helper_cannot_pass_without_its_signal(tmp_path):
    """A step the run never reaches is status 99 and a line, not a clean exit (tests/kill_at_step.py)."""
    missed = run_cli(tmp_path / "run", "99:SIGINT")
    assert missed.returncode == 99 and "without reaching step 99" in missed.stderr, (missed.returncode, missed.stderr)


def test_ctrl_c_in_process_is_one_line_and_130(capsys, tmp_path):
    def press(step: int) -> None:
        if step == 2:
            raise KeyboardInterrupt

    with step_callback(press):
        code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(tmp_path / "run"), "--no-progress")
    assert_one_line(code, err, 130, "interrupted at step 2 of 8", "starts it again from epoch 0")
    with open(tmp_path / "run" / ".lock") as fh:  # released in this process too (a notebook's kernel lives on)
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_ctrl_c_in_a_screen_says_it_keeps_nothing(capsys):
    def press(step: int) -> None:
        if step == 3:
            raise KeyboardInterrupt

    with step_callback(press):
        code, err = cli(capsys, "screen", SMOKE, *TINY, "--steps", "6")
    assert_one_line(code, err, 130, "interrupted at step 3 of 8", "keeps nothing")


def test_ctrl_c_during_the_evaluation_evaluates_again(capsys, tmp_path, monkeypatch):
    from ftcl_core import training

    out, real = tmp_path / "run", training.evaluate_backbone

    def pressed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "evaluate_backbone", pressed)
    code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(out), "--no-progress")
    assert_one_line(code, err, 130, f"interrupted at step {STEPS} of {STEPS}", "evaluates it again")
    assert not RunDir(out).is_complete()
    monkeypatch.setattr(training, "evaluate_backbone", real)
    with step_callback(lambda step: pytest.fail(f"step {step} trained again")):
        code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(out), "--no-progress")
    assert code == 0 and RunDir(out).is_complete(), err


# ---- threads: said, and shared with the other training processes of the machine ----


def test_a_run_beside_others_takes_the_threads_they_leave():
    assert study_threads.plan_threads(4, 4, [], explicit=False)[0] == 4
    threads, line = study_threads.plan_threads(2, 2, [2], explicit=False)
    assert threads == 1 and "OMP_NUM_THREADS=1" in line and "\n" not in line
    assert study_threads.plan_threads(4, 8, [2, 2], explicit=False)[0] == 4
    assert study_threads.plan_threads(8, 8, [2, 2], explicit=False)[0] == 4
    threads, line = study_threads.plan_threads(2, 2, [2], explicit=True)  # the user's choice is kept, with the warning
    assert threads == 2 and "OMP_NUM_THREADS" in line


def test_the_registry_counts_live_runs_and_forgets_dead_ones(monkeypatch, capsys):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # no explicit choice: the registry decides
    folder = study_threads.registry()
    folder.mkdir(parents=True)
    (folder / f"999999-0{study_threads.SUFFIX}").write_text("7")  # a run killed by -9: its file left, unlocked
    saved = torch.get_num_threads()
    before = max(2, os.cpu_count() or 1)  # a run alone takes every core
    torch.set_num_threads(before)
    try:
        with study_threads.training_threads(say=False) as first:
            assert first == before and study_threads.others_threads(folder) == [first]
            assert not (folder / f"999999-0{study_threads.SUFFIX}").exists()
            with study_threads.training_threads(say=False) as second:  # started beside it: lowered, and it says so
                assert second == 1 == torch.get_num_threads()
            assert f"takes 1 instead of {before}" in capsys.readouterr().out
            assert torch.get_num_threads() == before
        assert torch.get_num_threads() == before and study_threads.others_threads(folder) == []
    finally:
        torch.set_num_threads(saved)
