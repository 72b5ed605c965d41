"""Issue 64, what the ninth trial found (a helper's ~420 hostile inputs at 221318f): float32 overflows in the
optimiser, override values YAML cannot read, a config file nested too deeply, an auto start decided at the last
epoch's end labelled as a switch, non-ASCII digits, config paths that are not files, ``sweep --set`` with no value,
the library's FT config and plateau rule on values the command line refuses.  One test a class."""

from __future__ import annotations

import json

import pytest
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)
from test_hostile_round9 import ROOT, SMOKE

from ftcl_core import ft
from ftcl_core.__main__ import EXIT_ERROR
from ftcl_core.config import ConfigError, load_config
from ftcl_core.training import train


@pytest.mark.parametrize("override", ["optim.lr=1e308", "optim.weight_decay=1e300"])
def test_a_value_beyond_float32_is_refused_before_anything_is_written(capsys, tmp_path, override):
    code, err = cli(capsys, "train", SMOKE, override, "--out", str(tmp_path / "run"))
    assert_one_line(code, err, EXIT_ERROR, override.split("=")[0], "float32")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("override, words", [("train.epochs=[1", ("not a YAML value",)),
                                             ("train.epochs=&a 1", ("anchor",)), ("train.epochs=*a", ("alias",)),
                                             ("train.epochs=!!python/object/apply:os.system [ls]", ("tag",)),
                                             ("train.epochs=١", ("ASCII",))])
def test_an_override_yaml_cannot_read_as_meant_is_one_error(capsys, tmp_path, override, words):
    code, err = cli(capsys, "train", SMOKE, override, "--out", str(tmp_path / "run"))
    assert_one_line(code, err, EXIT_ERROR, *words)
    assert not (tmp_path / "run").exists()


def test_a_config_nested_too_deeply_is_not_a_mapping(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 10_000)
    with pytest.raises(ConfigError, match="not a YAML mapping"):
        load_config(deep)


@pytest.mark.parametrize("make, words", [(lambda p: p.mkdir(), "a folder"),
                                         (lambda p: (p.symlink_to(p.with_name("b")), p.with_name("b").symlink_to(p)),
                                          "symbolic link loop")])
def test_a_config_path_that_is_no_file_says_what_it_is(tmp_path, make, words):
    path = tmp_path / "a"
    make(path)
    with pytest.raises(ConfigError, match=words):
        load_config(path)


def test_an_auto_start_decided_at_the_last_epochs_end_is_stored_as_never(tmp_path, monkeypatch):
    """A rule that says "on" only as the last epoch ends trained no FT step: eval.json says so (null), as for a
    rule that never switches, not the epoch past the run."""
    cfg = load_config(ROOT / SMOKE, ["data.n_train=320", "data.n_test=64", "eval.linear_epochs=1", "ft.pos=true",
                                     "ft.neg=true", "ft.start=auto", "ft.auto_window=1", "train.epochs=3"])
    epochs = cfg.train.epochs

    def last_epoch_only(self, epoch_loss):
        self.losses.append(float(epoch_loss))
        if len(self.losses) == epochs:
            self.start_epoch = epochs
        return self.on

    monkeypatch.setattr(ft.PlateauStart, "update", last_epoch_only)
    train(cfg, tmp_path / "run", progress=False)
    assert json.loads((tmp_path / "run" / "eval.json").read_text())["ft_start_epoch"] is None


def test_sweep_set_with_no_value_is_refused(capsys):
    code, err = cli(capsys, "sweep", "experiments/table1_momentum.yaml", "--profile", "smoke", "--set")
    assert_one_line(code, err, 2, "--set")


def test_the_librarys_ft_config_and_rule_refuse_what_the_command_line_does():
    with pytest.raises(ConfigError, match="start_epoch"):
        ft.FTConfig(pos=True, start_epoch=-1)
    for losses in ({"a": 1.0}, [[1.0, 2.0]]):
        with pytest.raises(ValueError, match="replay"):
            ft.PlateauStart.replay(losses)
    assert ft.PlateauStart.replay([2.0] * 20, window=2) is None  # no fall to measure a slowdown against: documented


def test_a_view_larger_than_its_stored_image_is_refused(capsys, tmp_path):
    code, err = cli(capsys, "train", SMOKE, "augment.out_size=1000", "--out", str(tmp_path / "run"))
    assert_one_line(code, err, EXIT_ERROR, "augment.out_size", "data.image_size")
    assert not (tmp_path / "run").exists()


def test_features_with_no_dimension_are_refused_by_the_lift():
    import torch

    empty = torch.zeros(4, 0)
    with pytest.raises(ValueError, match="C = 0"):
        ft.logits(empty, empty, torch.zeros(8, 0), ft.FTConfig(pos=True), torch.Generator(), tau=0.2)
