"""Baseline calibration: the validation split, its knobs, and results/calibration.csv."""

import csv
import math

import pytest
import torch

from ftcl_core.config import ConfigError, load_config
from ftcl_core.data import hold_out, load_data, make_shapes, shapes_splits, shapes_validation
from ftcl_core.methods import build_model
from ftcl_core.study import calibration, experiment_file, sweeps
from ftcl_core.study.checks import failures
from ftcl_core.training import augment_config


def test_the_validation_split_is_neither_train_nor_test():
    train, test = shapes_splits(64, 64, seed=3)
    train_v, val = shapes_validation(64, 64, seed=3)
    assert torch.equal(train.images, train_v.images)  # the same training images as the reported runs
    for other in (train, test):
        assert not any(torch.equal(v, o) for v in val.images[:16] for o in other.images)
    cfg = load_config("configs/smoke_moco_v2.yaml", ["data.eval_split=val", "data.n_val=32"])
    tr, va = load_data(cfg)
    assert len(va) == 32 and torch.equal(tr.images, load_data(load_config("configs/smoke_moco_v2.yaml"))[0].images)


def test_hold_out_removes_the_validation_images_from_training():
    s = make_shapes(50, seed=1)
    rest, val = hold_out(s, 10)
    assert len(rest) == 40 and len(val) == 10
    ids = lambda part: {bytes(im.numpy().tobytes()) for im in part.images}  # noqa: E731
    assert not ids(rest) & ids(val) and ids(rest) | ids(val) == ids(s)
    assert torch.equal(hold_out(s, 10)[1].images, val.images)  # the same images for every trial
    with pytest.raises(ValueError, match="data.n_val=50"):
        hold_out(s, 50)


def test_kaiming_init_is_opt_in_and_larger():
    base = load_config("configs/smoke_moco_v2.yaml")
    norm = lambda cfg: sum(p.norm() ** 2 for p in build_model(cfg).online.backbone.parameters() if p.dim() == 4) ** 0.5  # noqa: E731
    default, again = norm(base), norm(load_config("configs/smoke_moco_v2.yaml", ["model.init=default"]))
    assert default == again  # the default leaves every stored run's init untouched
    assert norm(load_config("configs/smoke_moco_v2.yaml", ["model.init=kaiming"])) > 1.5 * default


def test_augmentation_overrides_and_their_errors():
    cfg = load_config("configs/smoke_moco_v2.yaml", ["augment.jitter=[0.4,0.4,0.4,0.4]", "augment.gray_p=0"])
    aug = augment_config(cfg)
    assert aug.jitter == (0.4, 0.4, 0.4, 0.4) and aug.gray_p == 0 and aug.jitter_p == 0.8
    for bad, match in [("augment.jitter=[0.4,0.4]", "augment.jitter"), ("augment.jitter=[0.4,0.4,0.4,0.7]", "hue"),
                       ("augment.jitter_p=2", "augment.jitter_p"), ("data.eval_split=train", "data.eval_split"),
                       ("model.init=xavier", "model.init")]:
        with pytest.raises(ConfigError, match=match):
            load_config("configs/smoke_moco_v2.yaml", [bad])


def test_every_calibration_file_resolves_scores_on_validation_and_keeps_ft_off():
    files = sorted(calibration.FOLDER.glob("*.yaml"))
    assert {f.stem for f in files} >= {"moco_v1", "moco_v2", "simclr", "byol", "simsiam", "swav"}
    budgets = set()
    for path in files:
        exp = experiment_file.Experiment.load(path)
        for name in exp.settings:
            cfg = experiment_file.resolve(experiment_file.base_for(exp, "cpu"), exp.overrides(name, 0), "cpu")
            assert cfg.data.eval_split == "val", (path, name)
            assert not (cfg.ft.pos or cfg.ft.neg or cfg.ft.hard), (path, name)
            budgets.add((cfg.train.epochs, cfg.train.batch_size, cfg.data.n_train))
    assert len(budgets) == 1  # one step budget for every method


def test_calibration_csv_from_stored_trials(tmp_path, monkeypatch):
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "runs"))
    folder = tmp_path / "cal"
    folder.mkdir()
    (folder / "moco_v2.yaml").write_text(
        "table: CAL-moco_v2\nbase: {cpu: configs/smoke_moco_v2.yaml}\nseeds: [0]\n"
        "common: {train.epochs: 1, data.eval_split: val}\n"
        "settings:\n  recipe: {}\n  kaiming: {model.init: kaiming}\n")
    sweeps.sweep(folder / "moco_v2.yaml", "smoke", progress=False)
    rows = calibration.trials(folder, "smoke")
    assert [(r["method"], r["trial"]) for r in rows] == [("moco_v2", "recipe"), ("moco_v2", "kaiming")]
    assert rows[1]["knobs"] == "model.init=kaiming" and "data.eval_split=val" in rows[0]["budget"]
    out = calibration.write_csv(rows, tmp_path / "calibration.csv")
    read = list(csv.DictReader(out.open()))
    assert [r["trial"] for r in read] == ["recipe", "kaiming"]
    assert float(read[0]["val_knn"]) == pytest.approx(rows[0]["val_knn"], abs=1e-3)
    assert math.isnan(rows[0]["raw_pixels_val_linear"]) and read[0]["raw_pixels_val_linear"] == ""  # shapes: no probe
    best = calibration.choose(rows)["moco_v2"]
    assert best["val_knn"] == max(r["val_knn"] for r in rows)
    assert "**(chosen)**" in calibration.markdown(rows)
    sweeps.sweep(folder / "moco_v2.yaml", "smoke", seeds=[1], settings=["recipe"], progress=False)  # a second round
    again = calibration.trials(folder, "smoke")
    assert [(r["trial"], r["seed"]) for r in again] == [("recipe", 0), ("recipe", 1), ("kaiming", 0)]
    assert calibration.choose(again)["moco_v2"]["n_seeds"] in (1, 2)
    from ftcl_core.runs import RunDir

    last = [float(RunDir(r["dir"]).load_metrics()["erank"][-1]) for r in again if r["trial"] == "recipe"]
    assert calibration.final_erank(again, "moco_v2", "recipe") == pytest.approx(sum(last) / 2)
    assert math.isnan(calibration.final_erank(again, "moco_v2", "no such trial"))


def test_the_init_facts_compare_kaiming_with_the_recipe_it_changes():
    from ftcl_core.models import build_encoder, kaiming_init
    from ftcl_core.study.calibration import init_norm_ratio

    ratio = init_norm_ratio("resnet10_w16")
    assert ratio > 1 and init_norm_ratio("resnet10_w16") == ratio  # Kaiming fan-out is larger; seeded, so repeatable
    torch.manual_seed(0)
    net = kaiming_init(build_encoder("resnet10_w16"))
    conv = next(m for m in net.modules() if isinstance(m, torch.nn.Conv2d))
    fan_out = conv.out_channels * conv.kernel_size[0] * conv.kernel_size[1]
    assert conv.weight.std().item() == pytest.approx((2 / fan_out) ** 0.5, rel=0.2)  # He et al.: std sqrt(2 / fan_out)

    def trial(name, knn, seed=0):
        return {"method": "m", "trial": name, "knobs": name, "seed": seed, "val_knn": knn, "val_linear": knn,
                "random_init_val_linear": 20.0}

    rows = [trial("recipe", 33.0), trial("recipe", 34.0, 1), trial("kaiming", 33.6), trial("lr", 40.4)]
    facts = calibration.init_facts(rows, "m", "resnet10_w16")
    assert facts["ratio"] == f"{ratio:.1f}"
    assert (facts["trial_knn"], facts["trial_seeds"], facts["against_knn"], facts["against_seeds"]) == (
        "33.6", "1 seed", "33.5", "2 seeds")
    assert (facts["pick"], facts["pick_knn"], facts["pick_seeds"]) == ("lr", "40.4", "1 seed")
    claims = ("both trials are stored", "the calibration chose another trial")
    assert not failures(calibration.CHECKS, facts, *claims)
    chosen = calibration.init_facts([*rows, trial("kaiming", 50.0, 1)], "m", "resnet10_w16")  # the calibration chose Kaiming
    assert list(failures(calibration.CHECKS, chosen, *claims)) == [claims[1]]
    assert list(failures(calibration.CHECKS, calibration.init_facts([], "m", "resnet10_w16"), *claims)) == list(claims)
