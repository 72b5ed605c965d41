"""Issue 64, the eighteenth trial (a helper at 7312849: T13 D0 N9 U9; every interrupt and resume matched exactly): the
command line's cases, each failing at 7312849: a config whose aliases expand to billions (it hung), a one-dimensional
projection trained to a meaningless readout, an --out of no user's home folder, a setting name that climbs out of
its table's folder, and a report page in a folder that takes no file (papermill's traceback)."""

from __future__ import annotations

import time

import pytest
from test_hostile_inputs import assert_one_line

from ftcl_core.__main__ import run
from ftcl_core.config import ConfigError, load_config

SMOKE = "configs/smoke_moco_v2.yaml"
LAUGHS = "".join(f"{a}: &{a} [{', '.join([f'*{b}'] * 9)}]\n" for a, b in zip("bcdefghi", "abcdefgh"))


def test_aliases_that_expand_to_billions_are_refused_at_once(tmp_path):
    path = tmp_path / "laughs.yaml"
    path.write_text('a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + LAUGHS)
    start = time.perf_counter()
    with pytest.raises(ConfigError, match="expands to"):
        load_config(str(path), [])
    assert time.perf_counter() - start < 10


def test_a_one_dimensional_projection_is_refused():
    with pytest.raises(ConfigError, match="model.dim=1"):
        load_config(SMOKE, ["model.dim=1"])


@pytest.mark.parametrize("argv, word", [
    (["train", SMOKE, "--out", "~no_such_user_here/run"], "no user's home"),
    (["report", "book/05_momentum.ipynb", "-p", "profile", "smoke", "--out", "/proc/no_report_here.html"], "written"),
])
def test_an_out_that_would_go_elsewhere_or_nowhere_is_one_line(capsys, argv, word):
    assert_one_line(run(argv), capsys.readouterr().err, 2, word)


def test_a_setting_name_that_climbs_out_of_its_table_is_refused(tmp_path, capsys):
    path = tmp_path / "x.yaml"
    path.write_text("table: X1\ntitle: t\nbase: {cpu: configs/smoke_moco_v2.yaml}\nseeds: [0]\n"
                    "settings:\n  ../../escape: {moco.momentum: 0.9}\n")
    assert_one_line(run(["plan", str(path)]), capsys.readouterr().err, 2, "setting name")
