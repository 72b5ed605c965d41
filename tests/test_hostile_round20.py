"""Issue 64, the fifteenth trial (a helper's ~1 000 inputs at a678a81: T6 D1 N4 U11): a method given as a list, a
method's own section that is no mapping, the library's readouts, scores, views and samplers handed wrong shapes or
values (tracebacks, a sampler that never returned, a permutation that repeats a row, a temperature no config allows),
and an unfinished run's score histograms deleted before its resume (the run sealed with the wrong histograms).  One
test a class; each fails at a678a81."""

from __future__ import annotations

import shutil

import pytest
import torch
import torch.nn.functional as F
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)
from test_run_binding import SMOKE, STEPS_PER_EPOCH, TINY

from ftcl_core import batch_losses, evaluation, ft, losses, stats, transforms
from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.config import load_config
from ftcl_core.runs import RunFileError
from ftcl_core.study import threads
from ftcl_core.training import train


@pytest.mark.parametrize("text, word", [
    ("method: [moco]\n", "choose one of"),
    ("method: byol\nmoco: {momentum: 0.9}\nbyol: 5\n", "byol is a section"),
    ("method: simclr\nmoco: {tau: 0.2}\nsimclr: [1]\n", "simclr is a section"),
])
def test_a_method_that_is_no_name_or_a_section_that_is_no_mapping_is_one_line(tmp_path, capsys, text, word):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    code, err = cli(capsys, "train", str(path), "--out", str(tmp_path / "run"), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, word)
    assert not (tmp_path / "run").exists()


def test_an_empty_method_section_beside_an_old_key_is_an_empty_section():
    from ftcl_core.config import _migrate

    assert _migrate({"method": "byol", "moco": {"momentum": 0.9}, "byol": None})["byol"] == {"momentum": 0.9}


F8, L8 = torch.randn(20, 8), torch.randint(0, 3, (20,))
UNIT = F.normalize(torch.randn(8, 16), dim=1)


@pytest.mark.parametrize("call", [
    lambda: evaluation.knn_top1(F8, L8.float(), F8, L8, 5, 0.1),
    lambda: evaluation.knn_top1(F8, L8[:10], F8, L8, 5, 0.1),
    lambda: evaluation.knn_top1(F8, L8, torch.randn(20, 7), L8, 5, 0.1),
    lambda: evaluation.knn_top1(F8, L8, torch.randn(0, 8), L8[:0]),
    lambda: evaluation.knn_top1(F8, L8, F8, L8, k=0),
    lambda: evaluation.knn_top1(F8, L8, F8, L8, t=0),
    lambda: evaluation.linear_readout(F8, -L8 - 1, F8, L8, epochs=2),
    lambda: evaluation.linear_readout(F8, L8.view(20, 1), F8, L8, epochs=2),
    lambda: evaluation.linear_readout(F8, L8, F8, L8, epochs=0),
    lambda: evaluation.linear_readout(F8, L8, F8, L8, lr=float("nan")),
    lambda: losses.logits_from_scores(torch.randn(3), torch.randn(4, 5), 0.2),
    lambda: losses.logits_from_scores(torch.randn(4, 1), torch.randn(4, 5), 0.2),
    lambda: batch_losses.in_batch_negative_scores(UNIT, F.normalize(torch.randn(7, 16), dim=1)),
    lambda: batch_losses.in_batch_negative_scores(UNIT, UNIT.double()),
    lambda: batch_losses.in_batch_negative_scores(torch.randn(0, 16), torch.randn(0, 16)),
    lambda: batch_losses.other_sample_mask(torch.arange(8), 4),
    lambda: batch_losses.other_sample_mask(torch.arange(8).float(), 8),
    lambda: stats.representation_statistics(UNIT, torch.randn(7, 16)),
    lambda: stats.score_statistics(torch.rand(8), torch.rand(8)),
    lambda: stats.score_histogram(torch.rand(8), torch.rand(8, 32), 64, 0),
    lambda: stats.score_histogram(torch.rand(8), torch.rand(8, 32), 64, 50, 1, -1),
    lambda: transforms.renormalize(torch.ones(4, 8, dtype=torch.long)),
    lambda: transforms.renormalize(None),
    lambda: transforms.per_dimension_positive_score(UNIT, UNIT, torch.full((3,), 1.5)),
    lambda: transforms.hard_negative_logits(UNIT, F.normalize(torch.randn(32, 15), dim=1), 0.5),
    lambda: transforms.unit_pairs(-1, 16, torch.Generator()),
    lambda: transforms.unit_pairs(8, 16, torch.Generator(), dtype=torch.long),
    lambda: transforms.sample_gamma(2.0, torch.Generator()),
    lambda: transforms.sample_gamma(torch.tensor([-1.0]), torch.Generator()),  # looped for ever
    lambda: transforms.sample_gamma(torch.tensor([0.0]), torch.Generator()),
    lambda: transforms.sample_beta(2, 2, (-1,), torch.Generator()),
    lambda: transforms.interpolate_negatives(F.normalize(torch.randn(32, 16), dim=1), 0.5,
                                             torch.zeros(32, dtype=torch.long)),
    lambda: ft.logits(UNIT, UNIT, F.normalize(torch.randn(32, 16), dim=1), ft.FTConfig(pos=True, neg=True),
                      torch.Generator(), tau=1e9),
])
def test_the_library_names_a_wrong_argument_instead_of_a_traceback_or_nonsense(call):
    with pytest.raises((TypeError, ValueError)) as err:
        call()
    assert "\n" not in str(err.value)  # one line, ours: torch's own errors are RuntimeError or IndexError


def test_an_unfinished_run_s_deleted_histograms_are_refused_on_resume(tmp_path, monkeypatch):
    monkeypatch.setenv(threads.ENV_DIR, str(tmp_path / "trainers"))
    cfg = load_config(SMOKE, [*TINY, "stats.histograms=true", "train.epochs=2"])
    train(cfg, tmp_path / "run", progress=False, max_steps=STEPS_PER_EPOCH + 1)
    shutil.copy(tmp_path / "run" / "histograms.npz", tmp_path / "kept.npz")
    (tmp_path / "run" / "histograms.npz").unlink()
    with pytest.raises(RunFileError, match="histograms"):
        train(cfg, tmp_path / "run", progress=False)
    shutil.copy(tmp_path / "kept.npz", tmp_path / "run" / "histograms.npz")  # restored: it resumes
    assert "linear_top1" in train(cfg, tmp_path / "run", progress=False)


def test_two_unclear_messages_of_the_trial(tmp_path, capsys):
    """U5: a report's empty --out was taken as the default page; U7: a milestone example repeated its one epoch."""
    from ftcl_core.__main__ import report

    code = report(["book/05_momentum.ipynb", "--out", ""])
    assert_one_line(code, capsys.readouterr().err, EXIT_ERROR, "--out ''")
    code, err = cli(capsys, "train", SMOKE, *TINY, "optim.schedule=step", "optim.milestones=[5]", "train.epochs=2",
                    "--out", str(tmp_path / "run"), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "optim.milestones=[1])")


@pytest.mark.parametrize("method", ["null", "1"])
def test_a_method_that_is_no_name_is_not_blamed_on_another_key(tmp_path, capsys, method):
    """U1: ``method: null`` beside MoCo's keys was told that moco.queue_size belongs to another method."""
    path = tmp_path / "c.yaml"
    path.write_text(f"method: {method}\nmoco: {{queue_size: 256}}\n")
    code, err = cli(capsys, "train", str(path), "--out", str(tmp_path / "run"), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "choose one of")


def test_the_sixteenth_trial_s_command_line_cases(tmp_path, capsys):
    """A YAML alias inside its own anchor was a RecursionError's traceback; a Sinkhorn of 10^8 iterations hung at step 0."""
    path = tmp_path / "alias.yaml"
    path.write_text("a: &x {b: *x}\n")
    code, err = cli(capsys, "train", str(path), "--out", str(tmp_path / "a"), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "contains itself")
    code, err = cli(capsys, "train", "configs/smoke_swav.yaml", "swav.sinkhorn_iters=100000000", "--out",
                    str(tmp_path / "s"), "--no-progress")
    assert_one_line(code, err, EXIT_ERROR, "swav.sinkhorn_iters")
    with pytest.raises(ValueError, match="iters"):
        batch_losses.sinkhorn(torch.randn(4, 3), 0.05, 10**12)
    assert not (tmp_path / "a").exists() and not (tmp_path / "s").exists()
