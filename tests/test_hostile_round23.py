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


def _library_cases():
    import numpy as np
    import torch
    import torch.nn.functional as F

    from ftcl_core import augment, data, evaluation, losses, models, stats, transforms
    from ftcl_core.config import FTConfig

    q = F.normalize(torch.randn(8, 4), dim=1)
    f8, l8 = torch.randn(20, 8), torch.arange(20) % 3
    shapes = data.make_shapes(20)
    return [
        (lambda: transforms.DeviceDraws(None), "torch.Generator"),
        (lambda: transforms.extrapolate_positive(q, q, np.full((8, 1), 1.5)), "NumPy"),
        (lambda: transforms.extrapolate_positive(q.long(), q.long(), 1.5), "float"),
        (lambda: transforms.lambda_shape("sample", -1, 16), "n=-1"),
        (lambda: transforms.sample_lambda(2.0, "step", 4, 4, torch.Generator(), shift=-5), "shift"),
        (lambda: losses.positive_ft(q, q, FTConfig(pos=True), torch.Generator(), rows=torch.arange(8) + 10,
                                    n_global=8), "rows"),
        (lambda: losses.positive_ft(q.numpy(), q, FTConfig(pos=True), torch.Generator()), "float tensors"),
        (lambda: losses.mixed_queue(q[:0], FTConfig(neg=True), torch.Generator()), "K >= 1"),
        (lambda: losses.mixed_queue(q.long(), FTConfig(neg=True), torch.Generator()), "float"),
        (lambda: stats.layer_names(None), "nn.Module"),
        (lambda: stats.layer_grad_norms(models.mlp(4, 4, 4)), "backward"),
        (lambda: models.ema_update(None, models.mlp(4, 4, 4), 0.9), "nn.Module"),
        (lambda: models.frozen_copy(None), "nn.Module"),
        (lambda: models.Encoder("a", "b"), "nn.Module"),
        (lambda: models.SplitBatchNorm2d(4, 2).train()(torch.randn(4, 5, 2, 2)), "4 channels"),
        (lambda: models.SplitBatchNorm1d(4, 2).train()(torch.randn(2, 4)), "at least 2"),
        (lambda: models.SplitBatchNorm1d(4, 2).train()(torch.randn(8, 4, 3)), r"features \(N, 4\), got"),
        (lambda: augment.normalize(shapes.images, augment.moco_v2(16)), "float images"),
        (lambda: augment.normalize(torch.rand(2, 3, 4, 4), None), "AugmentConfig"),
        (lambda: augment.AugmentConfig(std=(1e-30, 1, 1)), "std"),
        (lambda: data.ImageSet(shapes.images, shapes.labels + 100, shapes.classes), "outside its 10 classes"),
        (lambda: data.ImageSet(shapes.images, shapes.labels, ("a", "a")), "once"),
        (lambda: data.ImageSet(shapes.images.numpy(), shapes.labels, shapes.classes), "torch tensors"),
        (lambda: data.open_cache("/nonexistent/cache.npy"), "not a cache"),
        (lambda: data.load_data(None), "RunConfig"),
        (lambda: evaluation.evaluate_backbone(models.build_encoder("resnet10_w16"), None, None, augment.moco_v2(16)),
         "ImageSets"),
        (lambda: evaluation.knn_top1(f8, l8, f8, l8 + 3, k=5), "no training image"),
    ]


@pytest.mark.parametrize("case", range(27))
def test_the_library_refuses_what_the_eighteenth_trial_handed_it(case):
    call, word = _library_cases()[case]
    with pytest.raises((ValueError, TypeError), match=word):
        call()
