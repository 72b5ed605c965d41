"""Issue 64, what the fifth trial left: keys a run would ignore or cannot honour (a warm-up as long as the run,
statistics over more queries than a batch, a validation size under the test split, a kNN temperature whose weights
overflow), draws that never end, a queue layout that is no layout, a screen asked past its run, a report's unknown
profile, and run files that are no run's.  One test a class."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)

from ftcl_core import ft, transforms
from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.checkpoints import IncompatibleCheckpoint
from ftcl_core.config import ConfigError, load_config
from ftcl_core.pages.report import ReportError, report
from ftcl_core.training import train

ROOT = Path(__file__).resolve().parent.parent
SMOKE = "configs/smoke_moco_v2.yaml"


@pytest.mark.parametrize(("overrides", "named"), [
    (["optim.warmup_epochs=2"], "optim.warmup_epochs"),      # the smoke run has 2 epochs: lr would never peak
    (["stats.n_queries=65"], "stats.n_queries"),             # its batch holds 64 (the default 64 above a batch: all)
    (["data.n_val=500"], "data.eval_split=val"),             # the test split ignores the validation size
    (["eval.knn_t=0.005"], "eval.knn_t"),                    # exp(1 / 0.005) is no float32
])
def test_a_key_the_run_cannot_honour_is_refused(overrides, named):
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_config(SMOKE, overrides)


def test_the_keys_within_reach_still_load():
    cfg = load_config(SMOKE, ["optim.warmup_epochs=1", "stats.n_queries=64", "data.eval_split=val",
                              "data.n_val=500", "eval.knn_t=0.05"])
    assert (cfg.optim.warmup_epochs, cfg.data.n_val, cfg.eval.knn_t) == (1, 500, 0.05)


@pytest.mark.parametrize("alpha", [math.inf, math.nan])
def test_a_beta_parameter_that_is_not_finite_is_refused_not_drawn_forever(alpha):
    with pytest.raises(ValueError, match="finite"):
        transforms.sample_lambda(alpha, "step", 4, 8, torch.Generator().manual_seed(0))


def test_a_queue_layout_that_is_no_layout_is_refused():
    q = torch.nn.functional.normalize(torch.randn(4, 8), dim=1)
    queue = torch.nn.functional.normalize(torch.randn(16, 8), dim=1)
    with pytest.raises(ValueError, match="queue_layout='CK'"):
        ft.logits(q, q, queue, ft.FTConfig(), torch.Generator(), tau=0.2, queue_layout="CK")


def test_a_screen_asked_past_its_run_says_so(capsys):
    code, err = cli(capsys, "screen", SMOKE, "--steps", "1000")
    assert code == 0
    assert "--steps 1000" in err and "16 steps" in err  # the smoke run: 2 epochs of 8 steps


def test_a_report_with_an_unknown_profile_is_refused_before_a_kernel_starts(tmp_path):
    with pytest.raises(ReportError, match="profile"):
        report(ROOT / "book" / "05_momentum.ipynb", tmp_path / "r.html", {"profile": "nosuch"})
    assert not any(tmp_path.iterdir())


def test_run_files_of_no_run_are_never_written_over(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "metrics.npz").write_bytes(b"the user's")
    with pytest.raises(IncompatibleCheckpoint, match="metrics.npz"):
        train(load_config(SMOKE), out, progress=False)
    assert (out / "metrics.npz").read_bytes() == b"the user's" and sorted(p.name for p in out.iterdir()) == ["metrics.npz"]
    code, err = cli(capsys, "train", SMOKE, "--out", str(out))
    assert_one_line(code, err, EXIT_ERROR, "metrics.npz", "--out")


def test_a_run_whose_checkpoint_was_deleted_trains_anew_over_its_own_remains(tmp_path):
    """The recovery a damaged checkpoint's message gives (delete it, run the same command) still works."""
    cfg = load_config(SMOKE, ["train.epochs=1"])
    out = tmp_path / "run"
    train(cfg, out, progress=False, max_steps=100)
    for name in ("eval.json", "checkpoint.pt"):
        (out / name).unlink(missing_ok=True)
    first = np.load(out / "metrics.npz")["loss"].copy()
    train(cfg, out, progress=False)
    assert np.array_equal(np.load(out / "metrics.npz")["loss"], first)
