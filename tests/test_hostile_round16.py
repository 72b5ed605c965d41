"""Issue 64, the thirteenth trial (a helper's ~300 hostile inputs at 667b804: T2 D0 N2 U9): a smoke sweep of a
queue size that is no integer, BYOL's loss given a list, SimCLR's rows that repeat or miss their samples, the
plateau rule switching on a loss that only rose; and the unclear: NumPy's bool as ``active``, a report of a notebook
that does not exist, the execution keys ``--set`` takes.  One test a class."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_hostile_inputs import own_registry  # noqa: F401  (own_registry: autouse)

from ftcl_core import ft
from ftcl_core.batch_losses import byol_loss, simclr_ft_logits, simsiam_loss
from ftcl_core.config import EXECUTION_KEYS, ConfigError


def unit(*shape: int, seed: int = 0) -> torch.Tensor:
    return F.normalize(torch.randn(*shape, generator=torch.Generator().manual_seed(seed)), dim=1)


@pytest.mark.parametrize("value", ["[4096]", '"4096"', "null"])
def test_a_smoke_queue_that_is_no_integer_is_one_config_error(tmp_path, value):
    from ftcl_core.study.experiment_file import Experiment, resolve

    exp = tmp_path / "e.yaml"
    exp.write_text(f"table: HQ\nbase: {{cpu: configs/cpu_moco_v2.yaml}}\nsettings:\n  a: {{moco.queue_size: {value}}}\n")
    e = Experiment.load(exp)
    with pytest.raises(ConfigError, match="moco.queue_size"):
        resolve(e.base["cpu"], e.settings["a"], "smoke")


@pytest.mark.parametrize("loss", [byol_loss, simsiam_loss])
def test_byol_and_simsiam_losses_name_scores_that_are_no_tensor(loss):
    with pytest.raises(TypeError, match="l_pos"):
        loss([1.0])
    assert torch.isfinite(loss(torch.rand(8)))


def test_simclr_rows_that_repeat_or_miss_their_samples_are_refused():
    z1, z2, gen, cfg = unit(6, 16), unit(6, 16, seed=1), torch.Generator(), ft.FTConfig()
    for rows in (torch.zeros(6, dtype=torch.long), torch.arange(6).flip(0)):
        with pytest.raises(ValueError, match="bank1\\[rows\\] is z1|repeat a global index"):
            simclr_ft_logits(z1, z2, z1, z2, rows, cfg, gen)
    assert simclr_ft_logits(z1, z2, z1, z2, torch.arange(6), cfg, gen)[1].shape == (12, 10)


def test_the_plateau_rule_does_what_its_docstring_says_of_a_loss_that_never_fell():
    """A flat loss never switches FT on; a rising one (MoCo's, while the queue fills) reads as slowed: the rule as
    issue 66 committed it, now documented so (the docstring said neither switched)."""
    assert ft.PlateauStart.replay([2.0] * 20) is None
    assert ft.PlateauStart.replay([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == 6
    assert "replay([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])`` is 6" in " ".join(ft.PlateauStart.__doc__.split())


def test_numpy_bool_is_taken_as_active_and_a_tensor_is_told_the_fix():
    q, k, queue = unit(4, 8), unit(4, 8, seed=1), unit(16, 8, seed=2)
    cfg, gen = ft.FTConfig(pos=True), torch.Generator().manual_seed(0)
    on = ft.logits(q, k, queue, cfg, gen, tau=0.2, active=np.bool_(True))
    assert not torch.allclose(on, ft.logits(q, k, queue, ft.FTConfig(), gen, tau=0.2))
    with pytest.raises(TypeError, match=r"bool\(\.\.\.\)"):
        ft.logits(q, k, queue, cfg, gen, tau=0.2, active=torch.tensor(False))


def test_a_report_of_a_missing_notebook_says_not_found(tmp_path):
    from ftcl_core.pages.report import ReportError, report

    with pytest.raises(ReportError, match="not found"):
        report(tmp_path / "nosuch.ipynb", tmp_path / "r.html", {})


def test_the_set_option_lists_every_execution_key(capsys):
    from ftcl_core.study.cli import main

    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert all(key in shown for key in EXECUTION_KEYS), shown
