"""The twenty-second trial (issue 64, a helper at 3ee48a8: T2 D0 N8 U5): merge's base that is no mapping, a model
given stored images instead of views; execution keys in an experiment file's settings, plan --calibrated on a file
with no calibrated recipe, milestones out of order, a complex lam, zero features' uniformity (documented), a picker
that is no function, the methods' constructors, config_mismatch's limit; empty experiment and report paths, another
seed's eval.json blamed on config.yaml, load_yaml_mapping's paths, a Beta parameter that is many numbers, a .lock
folder's fix. Each fails at 3ee48a8 (the zero features' test pins the documented behaviour)."""

from __future__ import annotations

import json

import pytest
import torch
from test_hostile_inputs import assert_one_line

from ftcl_core.__main__ import run
from ftcl_core.config import ConfigError, load_config, merge

SMOKE = "configs/smoke_moco_v2.yaml"
TINY = ["train.epochs=1", "data.n_train=320", "data.n_test=64", "train.batch_size=32", "eval.linear_epochs=1"]


def _experiment(tmp_path, settings: str = "{a: {}, b: {ft.pos: true}}", common: str = "", base: str = SMOKE):
    path = tmp_path / "exp.yaml"
    path.write_text(f"table: X\nbase: {{cpu: {base}}}\nseeds: [0]\nsettings: {settings}\n" + common)
    return path


# ---- T: crashes -----------------------------------------------------------------------------------------------------

def test_merge_refuses_a_base_that_is_no_mapping():
    with pytest.raises(ConfigError, match="mapping"):
        merge([], {"seed": 1})
    with pytest.raises(ConfigError, match="mapping"):
        merge([], {})


@pytest.mark.parametrize("images", [torch.zeros(2, 3, 16, 16, dtype=torch.uint8), torch.zeros(2, 1, 16, 16)])
def test_a_model_given_images_instead_of_views_names_the_views(images):
    from ftcl_core.methods import build_model
    from ftcl_core.models import build_encoder

    with pytest.raises((TypeError, ValueError), match="center_view"):
        build_encoder("resnet10_w16")(images)
    model = build_model(load_config(SMOKE))
    with pytest.raises((TypeError, ValueError), match="augment"):
        model(images, images, torch.Generator())


# ---- N: nonsense accepted -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["settings", "common"])
def test_execution_keys_inside_an_experiment_file_are_refused(tmp_path, where):
    from ftcl_core.study.experiment_file import Experiment

    path = (_experiment(tmp_path, "{a: {}, b: {device: cuda}}") if where == "settings" else
            _experiment(tmp_path, common="common: {train.compile: true}\n"))
    with pytest.raises(ConfigError, match="--set"):
        Experiment.load(path)


def test_plan_calibrated_refuses_a_file_with_no_calibrated_recipe(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "runs"))
    code = run(["plan", str(_experiment(tmp_path)), "--calibrated"])
    assert_one_line(code, capfd.readouterr().err, 2, "no calibrated recipe")


@pytest.mark.parametrize("milestones", ["[1,1]", "[2,1]"])
def test_milestones_must_increase(milestones):
    with pytest.raises(ConfigError, match="increasing"):
        load_config(SMOKE, ["optim.schedule=step", f"optim.milestones={milestones}", "train.epochs=3"])


@pytest.mark.parametrize("call", ["extrapolate_positive", "interpolate_negatives", "hard_negative_logits",
                                  "transformed_positive_score"])
def test_a_complex_lam_is_refused(call):
    from ftcl_core import transforms as T

    z, lam = torch.randn(4, 8), torch.full((1, 1), 1.5 + 2j, dtype=torch.complex64)
    calls = {"extrapolate_positive": lambda: T.extrapolate_positive(z, z, lam),
             "interpolate_negatives": lambda: T.interpolate_negatives(z, lam, torch.arange(4)),
             "hard_negative_logits": lambda: T.hard_negative_logits(z, z, lam),
             "transformed_positive_score": lambda: T.transformed_positive_score(torch.full((1, 1), 0.5), lam)}
    with pytest.raises(TypeError, match="real"):
        calls[call]()


def test_zero_features_uniformity_is_documented():
    from ftcl_core.stats import representation_statistics

    stats = representation_statistics(torch.zeros(8, 16), torch.zeros(8, 16))
    assert stats[1].item() == pytest.approx(-4.0)  # what the docstring says a zero row reads as
    assert "zero" in representation_statistics.__doc__


def test_register_variants_refuses_what_is_no_function():
    from ftcl_core.methods import VARIANTS, build_model, register_variants

    before = list(VARIANTS)
    with pytest.raises(TypeError, match="callable"):
        register_variants(5)
    assert VARIANTS == before and build_model(load_config(SMOKE)) is not None


def _encoder(dim: int = 32):
    from ftcl_core.models import Encoder, build_encoder, mlp

    bb = build_encoder("resnet10_w16")
    return Encoder(bb, mlp(bb.out_dim, bb.out_dim, dim))


@pytest.mark.parametrize("make, key", [
    (lambda M: M.MoCo(_encoder(), 32, 0, 0.99), "queue_size"),
    (lambda M: M.MoCo(_encoder(), 32, 64, 0.99, tau=0), "tau"),
    (lambda M: M.MoCo(_encoder(), 32, 64, 0.99, seed=-1), "seed"),
    (lambda M: M.MoCo(_encoder(), 64, 64, 0.99), "dim"),
    (lambda M: M.SimCLR(_encoder(), tau=-1), "tau"),
    (lambda M: M.BYOL(_encoder(), torch.nn.Linear(32, 32), momentum=-1), "momentum"),
    (lambda M: M.SwAV(_encoder(), 32, 0), "prototypes"),
    (lambda M: M.SwAV(_encoder(), 32, 10, epsilon=0), "epsilon"),
    (lambda M: M.SwAV(_encoder(), 32, 10, sinkhorn_iters=0), "sinkhorn_iters"),
    (lambda M: M.SwAV(_encoder(), 32, 10, freeze_epochs=-1), "freeze"),
    (lambda M: M.SwAV(_encoder(), 64, 10), "dim"),
])
def test_the_methods_constructors_check_their_arguments(make, key):
    from ftcl_core import methods

    with pytest.raises(ValueError, match=key):
        make(methods)


def test_config_mismatch_refuses_a_limit_below_one():
    from ftcl_core.config import config_mismatch

    a, b = load_config(SMOKE), load_config(SMOKE, ["seed=1"])
    with pytest.raises(ValueError, match="limit"):
        config_mismatch(a, b, limit=-1)


# ---- U: unclear messages --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["sweep", ""], ["plan", ""], ["report", ""]])
def test_an_empty_experiment_or_chapter_path_is_named_empty(argv, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "runs"))
    code = run(argv)
    line = assert_one_line(code, capfd.readouterr().err, 2, "empty")
    assert "folder" not in line and "not a notebook" not in line


def test_another_seeds_eval_json_is_blamed_not_config_yaml(tmp_path, capfd):
    from ftcl_core.runs import config_digest

    out = tmp_path / "run"
    assert run(["train", SMOKE, *TINY, "--out", str(out), "--no-progress"]) == 0
    readouts = json.loads((out / "eval.json").read_text())
    other = config_digest(load_config(SMOKE, [*TINY, "seed=1"]))
    (out / "eval.json").write_text(json.dumps({**readouts, "knn_top1": 12.5, "config_sha256": other}))
    capfd.readouterr()
    code = run(["train", SMOKE, *TINY, "--out", str(out), "--no-progress"])
    line = assert_one_line(code, capfd.readouterr().err, 2, "eval.json")
    assert "config.yaml is not" not in line and "edited after" not in line and "Delete" in line


@pytest.mark.parametrize("path, words", [("", "empty"), ("nowhere.yaml", "not found"), ("configs", "folder")])
def test_load_yaml_mapping_names_a_path_it_cannot_read(path, words):
    from ftcl_core.config import load_yaml_mapping

    with pytest.raises(ConfigError, match=words):
        load_yaml_mapping(path, "config file", "configs/cpu_moco_v2.yaml")


def test_a_beta_parameter_that_is_many_numbers_is_told_to_be_one():
    from ftcl_core.transforms import sample_beta

    with pytest.raises(ValueError, match="one number"):
        sample_beta(torch.tensor([1.0, 2.0]), 1.0, (2,), torch.Generator())


def test_a_lock_folder_is_moved_without_losing_the_run(tmp_path):
    from ftcl_core.runs import check_run_folder

    (tmp_path / ".lock").mkdir()
    with pytest.raises(ConfigError, match=".lock") as err:
        check_run_folder(tmp_path)
    assert "epoch 0" not in str(err.value)
