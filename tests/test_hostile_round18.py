"""Issue 64, the fourteenth trial (a helper's ~620 inputs at 7785fc9: T2 D1 N3 U10): a resume on another thread count
(its numbers silently no longer the uninterrupted run's), SimCLR's views of two dtypes, the transforms' building blocks
given wrong shapes or types, a parallel sweep of one seed twice, and the fix a changed stored file is given.  One test
a class; each fails at 7785fc9."""

from __future__ import annotations

import shutil

import pytest
import test_run_binding
import torch
import torch.nn.functional as F
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)

from ftcl_core import transforms
from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.runs import read_seal

SMOKE, TINY = test_run_binding.SMOKE, test_run_binding.TINY
made = test_run_binding.made  # the fixture: a tiny run interrupted after its first checkpoint, and the same run finished


def unit(*shape: int, seed: int = 0) -> torch.Tensor:
    return F.normalize(torch.randn(*shape, generator=torch.Generator().manual_seed(seed)), dim=1)


def test_a_resume_keeps_the_thread_count_its_run_began_with(made, tmp_path, capsys, monkeypatch):
    from ftcl_core.study.threads import threads_to_train

    folder = tmp_path / "run"
    shutil.copytree(made["interrupted"], folder)
    began = read_seal(folder / "checkpoint.pt")["threads"]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(began + 1)
        monkeypatch.setenv("OMP_NUM_THREADS", str(began + 1))  # a count chosen by hand: refused, the fix named
        code, err = cli(capsys, "train", SMOKE, *TINY, "--out", str(folder), "--no-progress")
        assert_one_line(code, err, EXIT_ERROR, f"OMP_NUM_THREADS={began}", "began training with")
        monkeypatch.delenv("OMP_NUM_THREADS")  # none chosen: the run's own count, whatever else trains
        with threads_to_train(folder, say=False) as threads:
            assert threads == began == torch.get_num_threads()
        assert torch.get_num_threads() == began + 1  # restored after the block
    finally:
        torch.set_num_threads(before)


def test_simclr_views_of_two_dtypes_are_named():
    from ftcl_core.batch_losses import simclr_ft_logits
    from ftcl_core.ft import FTConfig

    z = unit(8, 16)
    with pytest.raises(TypeError, match="dtype"):
        simclr_ft_logits(z.double(), z, z, z, torch.arange(8), FTConfig(pos=True, neg=True), torch.Generator())


@pytest.mark.parametrize("call, word", [
    (lambda q, k, Q: transforms.extrapolate_positive(q, k, torch.full((3,), 1.5)), "lam"),
    (lambda q, k, Q: transforms.extrapolate_positive(q, k, "1.5"), "lam"),
    (lambda q, k, Q: transforms.extrapolate_positive(None, k, 1.5), "z_q"),
    (lambda q, k, Q: transforms.interpolate_negatives(Q, 0.5, torch.rand(64)), "perm"),
    (lambda q, k, Q: transforms.interpolate_negatives(Q, 0.5, torch.arange(10)), "perm"),
    (lambda q, k, Q: transforms.interpolate_negatives(Q, 0.5, torch.arange(64) + 1), "perm"),
    (lambda q, k, Q: transforms.interpolate_negatives(Q, 0.5, None), "perm"),
    (lambda q, k, Q: transforms.sample_lambda(2.0, "sample", -1, 16, torch.Generator()), "n"),
    (lambda q, k, Q: transforms.sample_lambda(2.0, "sample", 3, 4, None, shift=1.0), "gen"),
    (lambda q, k, Q: transforms.sample_lambda(2.0, "sample", 3, 4, torch.Generator(), shift=float("nan")), "shift"),
    (lambda q, k, Q: transforms.sample_permutation(-1, torch.Generator()), "n"),
])
def test_the_building_blocks_name_a_wrong_argument(call, word):
    q, k, queue = unit(4, 8), unit(4, 8, seed=1), unit(64, 8, seed=2)
    with pytest.raises((TypeError, ValueError), match=word):
        call(q, k, queue)


def test_a_parallel_sweep_of_one_seed_twice_is_refused_before_dealing(capsys):
    code, err = cli(capsys, "sweep", "experiments/table7_ft_v2.yaml", "--profile", "smoke", "--parallel", "2",
                    "--seeds", "0", "0", "--settings", "v2 baseline")
    assert_one_line(code, err, EXIT_ERROR, "twice")


def test_a_changed_stored_file_is_given_its_setting_s_sweep_and_an_edited_eval_its_own_fix(tmp_path, monkeypatch):
    import json

    from ftcl_core.runs import RunDir, RunFileError
    from ftcl_core.study.experiment_file import Experiment, run_dir
    from ftcl_core.study.store import check_store
    from ftcl_core.study.sweeps import sweep

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "store"))
    sweep("experiments/table7_ft_v2.yaml", "smoke", seeds=[0], settings=["v2 baseline"], progress=False)
    run = RunDir(run_dir(Experiment.load("experiments/table7_ft_v2.yaml"), "v2 baseline", 0, "smoke"))
    readouts = json.loads(run.eval.read_text())
    run.eval.write_text(json.dumps({**readouts, "linear_top1": 99.0}))
    with pytest.raises(RunFileError, match="--settings 'v2 baseline' --seeds 0"):
        check_store("smoke")
    with pytest.raises(RunFileError, match="eval.json differs.*Delete it: the run.s last checkpoint"):
        run.load_complete()
    run.eval.unlink()  # the fix it names: the last checkpoint evaluates the run again, to the same readouts
    sweep("experiments/table7_ft_v2.yaml", "smoke", seeds=[0], settings=["v2 baseline"], progress=False)
    again = json.loads(run.eval.read_text())
    assert {k: again[k] for k in ("linear_top1", "knn_top1")} == {k: readouts[k] for k in ("linear_top1", "knn_top1")}


def test_a_one_seed_sweep_prints_no_nan_interval(tmp_path, monkeypatch, capsys):
    from ftcl_core.study.cli import main

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "store"))
    assert main(["sweep", "experiments/table7_ft_v2.yaml", "--profile", "smoke", "--seeds", "0", "--settings",
                 "v2 baseline", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "(n=1)" in out and "nan" not in out


def test_a_memory_refusal_names_only_the_keys_that_size_the_run(capsys, tmp_path):
    code, err = cli(capsys, "train", SMOKE, "model.dim=100000000", "--out", str(tmp_path / "run"))
    line = assert_one_line(code, err, EXIT_ERROR, "model.dim=100000000")
    assert "swav.prototypes" not in line and "None" not in line and not (tmp_path / "run").exists()


@pytest.mark.parametrize("value", ["0 1", "5", "abc"])
def test_a_report_s_list_parameter_given_no_list_is_refused_before_a_kernel_starts(value, tmp_path):
    from ftcl_core.pages.report import ReportError, parse_parameters, report

    with pytest.raises(ReportError, match=r'seeds is a list of numbers; write it as one, e\.g\. -p seeds "\[0, 1\]"'):
        report("book/05_momentum.ipynb", tmp_path / "page.html", parse_parameters([["seeds", value]]))
    assert not (tmp_path / "page.html").exists()
