"""The twenty-sixth trial (a helper at 7e9a023): an empty config path, a section given a dict, merge's update that is
no mapping; the study's results layer: a number formatter given text or negative digits, p-values outside [0, 1],
words that are no verdict, a claim's direction, means and pairs of nothing. Each fails at 7e9a023. The trial's
non-finite features, logits and scores (ft.logits, positive_ft, info_nce, sinkhorn, score_histogram) stay as
documented: they are the training step's, where a diverged step must read as NaN for the loop's divergence check
(tests/test_hostile_inputs.py, tests/test_hostile_round12.py)."""

from __future__ import annotations

import math

import pytest
from test_hostile_inputs import assert_one_line

from ftcl_core.__main__ import run
from ftcl_core.config import ConfigError, RunConfig, load_config, merge
from ftcl_core.study import results as R
from ftcl_core.study.results import verdicts


def test_an_empty_config_path_is_named_empty(tmp_path, capfd):
    code = run(["train", "", "--out", str(tmp_path / "x")])
    assert_one_line(code, capfd.readouterr().err, 2, "empty")
    with pytest.raises(ConfigError, match="empty"):
        load_config("")


def test_a_section_given_a_dict_names_the_section_and_the_fix():
    with pytest.raises(ConfigError, match="from_dict") as err:
        RunConfig(moco={"tau": 0.2})
    assert "<class" not in str(err.value) and "MoCoConfig" in str(err.value)


def test_merge_refuses_an_update_that_is_no_mapping():
    with pytest.raises(ConfigError, match="mapping"):
        merge({"a": 1}, [1])


def test_fixed_refuses_text():
    with pytest.raises(TypeError, match="number"):
        R.fixed("x")


def test_benjamini_hochberg_refuses_p_values_outside_0_1():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        R.benjamini_hochberg([2.0, -1.0])
    q = R.benjamini_hochberg([0.01, math.nan])
    assert q[0] == pytest.approx(0.01) and math.isnan(q[1])  # NaN stays NaN, as documented


def test_decided_and_side_refuse_words_that_are_no_verdict():
    with pytest.raises(ValueError, match="verdict"):
        R.decided("garbage")
    with pytest.raises(ValueError, match="verdict"):
        R.side("nonsense")
    assert not R.decided(verdicts.UNDECIDED) and R.side(verdicts.OPPOSITE) == -1 and R.side("") == 0


def test_a_claims_direction_is_plus_or_minus_one():
    with pytest.raises(ValueError, match="direction"):
        R.Claim(arm="a", reference="b", direction=5)
    assert R.Claim(arm="a", reference="b", direction=-1).sign == -1


def test_cell_refuses_negative_digits():
    with pytest.raises(ValueError, match="digits"):
        R.cell(1.234, digits=-1)


def test_a_mean_of_nothing_and_a_pair_of_no_shared_seed_are_refused():
    with pytest.raises(ValueError, match="no value"):
        R.mean_ci95([])
    with pytest.raises(ValueError, match="no seed"):
        R.pair({0: 1.0}, {1: 2.0})
    empty = R.pair({0: 1.0}, {1: 2.0}, allow_empty=True)  # the study's setting not run yet: asked for by name
    assert empty.n == 0 and math.isnan(empty.mean) and math.isnan(R.mean_ci95([], allow_empty=True)[0])
