"""``ft.pos_gate`` (issue 66's held-back arm): +pos skipped on a step whose raw Mean(neg) exceeds its mean over the
epoch before FT switches on by more than the gate's margin; the clock, the queue's FT and every draw otherwise as
the run without the gate."""

import numpy as np
import pytest

import ftcl_core.study  # noqa: F401  (registers the diagnosis' MoCo, which ft.pos_gate needs; the suite imports it elsewhere)
from ftcl_core.config import ConfigError, load_config
from ftcl_core.runs import RunDir
from ftcl_core.training import train

SMOKE = "configs/smoke_moco_v2.yaml"
COMMON = ["ft.pos=true", "ft.neg=true", "train.epochs=3", "ft.start_epoch=1"]


def _metrics(tmp_path, name, extra):
    train(load_config(SMOKE, [*COMMON, *extra]), tmp_path / name, progress=False)
    return RunDir(tmp_path / name).load_metrics()


def test_a_gate_no_step_reaches_is_the_run_without_it_step_for_step(tmp_path):
    plain, wide = _metrics(tmp_path, "plain", []), _metrics(tmp_path, "wide", ["ft.pos_gate=1.99"])
    for key in ("loss", "pos_mean", "ft_pos_mean", "neg_mean", "ft_neg_mean"):
        assert np.array_equal(plain[key], wide[key]), key


def test_a_gated_step_keeps_its_positive_plain_and_every_other_step_extrapolates_it(tmp_path):
    m = _metrics(tmp_path, "gated", ["ft.pos_gate=0.000001"])
    steps = int((m["epoch"] == 0).sum())
    level = m["neg_mean"][:steps].mean() + 1e-6  # the epoch before the switch (epoch 0), plus the margin
    after = m["epoch"] >= 1
    gated = after & (m["neg_mean"] > level)
    assert gated.any()  # the queue's cosines rise once it holds trained keys: the smoke run gates
    assert np.allclose(m["ft_pos_mean"][gated], m["pos_mean"][gated])  # +pos skipped: the positive is the raw one
    assert np.all(m["ft_pos_mean"][after & ~gated] < m["pos_mean"][after & ~gated])  # +pos on: eq. 4 lowers it
    assert np.all(m["ft_neg_var"][after] < m["neg_var"][after])  # +neg stays on at every step: mixing narrows them


@pytest.mark.parametrize("extra, names", [
    (["ft.pos=false", "ft.pos_gate=0.05"], "ft.pos"),                 # nothing to hold back
    (["ft.start_epoch=0", "ft.pos_gate=0.05"], "ft.start_epoch >= 1"),  # no epoch before the switch
    (["ft.pos_gate=0.0"], "(0, 2)"),
    (["ft.pos_gate=2.5"], "(0, 2)"),
    (["method=simclr", "ft.pos_gate=0.05"], "method=moco"),           # no queue to read
])
def test_the_config_refuses_a_gate_with_nothing_to_compare(extra, names):
    with pytest.raises(ConfigError, match="pos_gate") as err:
        load_config(SMOKE, [*COMMON, *extra])
    assert names in str(err.value)


def test_the_gate_is_the_studys_moco_and_runs_on_its_own_queue_only():
    from ftcl_core.methods import method_class
    from ftcl_core.study.moco_diagnosis import GatedMoCo

    assert method_class(load_config(SMOKE, [*COMMON, "ft.pos_gate=0.05"])) is GatedMoCo
    with pytest.raises(ConfigError, match="pos_gate"):
        method_class(load_config(SMOKE, [*COMMON, "ft.pos_gate=0.05", "stats.same_class=true"]))
