"""``ft.start=auto`` (issue 66): the run switches FT on itself once its loss stops falling (ftcl_core.ft.PlateauStart)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ftcl_core import ft
from ftcl_core.config import ConfigError, load_config
from ftcl_core.runs import RunDir
from ftcl_core.training import train

SMOKE = "configs/smoke_moco_v2.yaml"


def test_the_rule_switches_on_once_the_recent_fall_is_a_small_share_of_the_fall_so_far():
    # falls 1.0 an epoch, then 0.05: over the window of 2 the fall (0.1) is below 0.1 x the fall so far (3.05)
    losses = [6.0, 5.0, 4.0, 3.0, 2.95, 2.9, 2.85]
    assert ft.PlateauStart.replay(losses, window=2, fraction=0.1) == 6  # decided after epoch 5: on from epoch 6
    assert ft.PlateauStart.replay(losses, window=2, fraction=0.01) is None  # a stricter share never switches on
    rule = ft.PlateauStart(window=2, fraction=0.1)
    assert [rule.update(x) for x in losses] == [False] * 5 + [True, True]  # once on, it stays on
    assert rule.start_epoch == 6 and rule.on


@given(st.lists(st.floats(0.1, 10.0), min_size=1, max_size=40), st.integers(1, 8), st.floats(0.01, 0.99))
def test_the_rule_never_switches_on_within_its_first_window_and_only_on_a_stall(losses, window, fraction):
    start = ft.PlateauStart.replay(losses, window, fraction)
    if start is not None:
        e = start - 1  # the epoch whose end decided it
        assert e >= window and losses[e - window] - losses[e] < fraction * (losses[0] - losses[e])
        assert ft.PlateauStart.replay(losses[:e], window, fraction) is None  # no earlier epoch decided it


def test_the_rule_refuses_what_cannot_be_a_window_a_share_or_a_loss():
    for kwargs in ({"window": 0}, {"window": 2.5}, {"fraction": 0.0}, {"fraction": 1.0}):
        with pytest.raises(ValueError, match="PlateauStart"):
            ft.PlateauStart(**kwargs)
    with pytest.raises(ValueError, match="finite"):
        ft.PlateauStart().update(float("nan"))


def test_the_config_refuses_an_auto_start_that_also_names_an_epoch_or_a_share_out_of_range():
    with pytest.raises(ConfigError, match="ft.start_epoch"):
        load_config(SMOKE, ["ft.pos=true", "ft.start=auto", "ft.start_epoch=1"])
    with pytest.raises(ConfigError, match="ft.auto_fraction"):
        load_config(SMOKE, ["ft.pos=true", "ft.start=auto", "ft.auto_fraction=1.5"])
    with pytest.raises(ConfigError, match="ft.auto_window"):
        load_config(SMOKE, ["ft.pos=true", "ft.start=auto", "ft.auto_window=0"])


def test_an_auto_start_run_is_the_run_that_starts_ft_where_its_rule_said(tmp_path):
    """The loop asks the rule at each epoch's end; the run equals, step for step, the same recipe with
    ft.start_epoch set to the epoch the rule chose (here it chooses epoch 2 of 4: window 1, share 0.99)."""
    common = ["ft.pos=true", "ft.neg=true", "train.epochs=4"]
    auto_cfg = load_config(SMOKE, [*common, "ft.start=auto", "ft.auto_window=1", "ft.auto_fraction=0.99"])
    train(auto_cfg, tmp_path / "auto", progress=False)
    m = RunDir(tmp_path / "auto").load_metrics()
    losses = [float(m["loss"][m["epoch"] == e].mean()) for e in range(4)]
    start = ft.PlateauStart.replay(losses, 1, 0.99)
    assert start is not None and 1 <= start < 4, losses
    fixed_cfg = load_config(SMOKE, [*common, f"ft.start_epoch={start}"])
    train(fixed_cfg, tmp_path / "fixed", progress=False)
    f = RunDir(tmp_path / "fixed").load_metrics()
    for key in ("loss", "pos_mean", "ft_pos_mean", "neg_mean"):
        assert np.array_equal(m[key], f[key]), key
    before, after = m["epoch"] < start, m["epoch"] >= start
    assert np.allclose(m["pos_mean"][before], m["ft_pos_mean"][before])  # FT off until the rule's epoch
    assert np.all(m["ft_pos_mean"][after] < m["pos_mean"][after])  # and on from it


@pytest.mark.slow  # two runs in subprocesses, one killed
def test_an_auto_start_run_resumed_after_kill9_decides_as_the_uninterrupted_one(tmp_path):
    from test_training import cli

    args = ("ft.pos=true", "ft.neg=true", "train.epochs=4", "ft.start=auto", "ft.auto_window=1",
            "ft.auto_fraction=0.99")
    assert cli(tmp_path / "whole", *args).returncode == 0
    killed = cli(tmp_path / "cut", *args, kill_at=20)  # in epoch 2 (8 steps an epoch), after the rule decided
    assert killed.returncode != 0
    assert cli(tmp_path / "cut", *args).returncode == 0
    whole, cut = RunDir(tmp_path / "whole").load_metrics(), RunDir(tmp_path / "cut").load_metrics()
    for key in ("loss", "ft_pos_mean"):
        assert np.array_equal(whole[key], cut[key]), key
