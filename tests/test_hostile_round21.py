"""Issue 64, the sixteenth trial's library cases (a helper's ~550 inputs at 9b30eff): functions a user lifts, called
directly with wrong arguments, gave a foreign traceback or, worse, an answer. The worst: float images in [0, 1] read
as 0-255 (near black) by the augmentations and the readout's feature extraction, without a word. Each case is now
refused at the module's entry, naming the argument; each test fails at 9b30eff (an answer or a foreign error)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from ftcl_core import augment, data, evaluation, losses, models, stats, transforms
from ftcl_core.config import ConfigError, FTConfig, load_config

IMAGES = data.make_shapes(16, size=32).images  # uint8 (16, 3, 32, 32)
V2 = augment.moco_v2(16)
F8, L8 = torch.randn(20, 8), torch.randint(0, 3, (20,))
GEN = torch.Generator


def _backbone() -> torch.nn.Module:
    return models.build_encoder("resnet10_w16")


@pytest.mark.parametrize("call, kind, word", [
    (lambda: augment.augment(IMAGES.float() / 255, V2, GEN().manual_seed(0)), TypeError, "uint8"),
    (lambda: augment.center_view(IMAGES.float() / 255, V2), TypeError, "uint8"),
    (lambda: evaluation.extract_features(_backbone(), IMAGES.float() / 255, V2), TypeError, "uint8"),
    (lambda: augment.center_view(IMAGES.permute(0, 2, 3, 1), V2), ValueError, "permute"),
    (lambda: augment.center_view(IMAGES[:, :1], V2), ValueError, "expand"),
    (lambda: augment.augment(IMAGES[:0], V2, GEN()), ValueError, "N >= 1"),
])
def test_images_that_are_not_uint8_rgb_batches_are_refused_with_the_fix(call, kind, word):
    with pytest.raises(kind, match=word):
        call()


def test_the_augmentation_draws_from_the_callers_generator_only():
    with pytest.raises(TypeError, match="gen"):
        augment.augment(IMAGES, V2, None)
    with pytest.raises(ValueError, match="rows"):
        augment.augment(IMAGES[:8], V2, GEN(), rows=slice(5, 100), n_total=8)


@pytest.mark.parametrize("field, value", [
    ("out_size", 0), ("out_size", "16"), ("crop_scale", (1.0, 0.2)), ("crop_scale", (0.2, 5.0)),
    ("crop_ratio", (0, 0)), ("flip_p", 2), ("flip_p", float("nan")), ("gray_p", -1), ("blur_sigma", (-1, 0)),
    ("jitter", (1, 2)), ("jitter", (0.4, 0.4, 0.4, 0.9)), ("mean", (0.5,)), ("std", (0, 0, 0)),
])
def test_an_augmentation_out_of_range_is_refused_naming_its_field(field, value):
    with pytest.raises(ValueError, match=field):
        augment.AugmentConfig(**{field: value})


def test_the_presets_and_the_configs_pipeline_still_build():
    from ftcl_core.training import augment_config

    for make in augment.PRESETS.values():
        make(24)
    augment_config(load_config("configs/smoke_moco_v2.yaml", []))


@pytest.mark.parametrize("call, word", [
    (lambda: evaluation.extract_features(None, IMAGES, V2), "backbone"),
    (lambda: evaluation.extract_features(_backbone(), IMAGES, None), "AugmentConfig"),
    (lambda: evaluation.extract_features(_backbone(), IMAGES, V2, batch_size=0), "batch_size"),
    (lambda: evaluation.knn_top1(torch.full_like(F8, float("nan")), L8, F8, L8, k=5), "NaN"),
    (lambda: evaluation.knn_top1(F8, L8, F8, L8, k=5, t=1e-8), "overflows"),
    (lambda: evaluation.knn_top1(F8, torch.full_like(L8, 10**9), F8, L8, k=5), "torch.unique"),
    (lambda: evaluation.linear_readout(F8, L8, F8, L8, epochs=2, weight_decay=float("nan")), "weight_decay"),
    (lambda: evaluation.linear_readout(F8, L8, F8, L8, epochs=2, weight_decay=-5), "weight_decay"),
    (lambda: evaluation.linear_readout(F8[:1], L8[:1], F8, L8, epochs=2), "at least 2"),
    (lambda: evaluation.linear_readout(torch.full_like(F8, float("nan")), L8, F8, L8, epochs=2), "NaN"),
])
def test_the_readouts_refuse_what_would_read_as_a_number(call, word):
    with pytest.raises((ValueError, TypeError), match=word):
        call()


def test_the_readouts_take_other_float_and_integer_dtypes():
    """float64 features and int32 / uint8 labels read as float32 and int64 do (they were foreign errors)."""
    want = evaluation.linear_readout(F8, L8, F8, L8, epochs=2)
    for feats, labels in ((F8.double(), L8), (F8, L8.int()), (F8, L8.to(torch.uint8))):
        assert evaluation.linear_readout(feats, labels, feats, labels, epochs=2) == want
        assert 0 <= evaluation.knn_top1(feats, labels, feats, labels, k=5) <= 100


@pytest.mark.parametrize("call, word", [
    (lambda: models.build_encoder("resnet10_w16", 0), "bn_splits"),
    (lambda: models.build_encoder("resnet10_w16", "2"), "bn_splits"),
    (lambda: models.build_encoder(None), "name"),
    (lambda: models.projection_head(0, 8), "in_dim"),
    (lambda: models.mlp(16, 8, 4, layers=0), "layers"),
    (lambda: models.mlp(16, 0, 4), "hidden"),
    (lambda: models.SplitBatchNorm2d(4, 0), "num_splits"),
    (lambda: models.ema_update(models.mlp(4, 8, 4), models.mlp(4, 8, 4), 2.0), "m=2.0"),
    (lambda: models.ema_update(models.mlp(4, 8, 4), models.mlp(4, 8, 4), float("nan")), "m=nan"),
    (lambda: models.ema_update(models.mlp(4, 8, 4), models.mlp(4, 8, 4, layers=1), 0.9), "parameter tensors"),
])
def test_the_networks_refuse_sizes_and_momenta_out_of_range(call, word):
    with pytest.raises((ValueError, TypeError), match=word):
        call()


@pytest.mark.parametrize("kw, word", [
    ({"n": 10, "seed": -1}, "seed"), ({"n": 10, "scale": (0.5, 0.1)}, "scale"), ({"n": 10, "scale": (2, 3)}, "scale"),
    ({"n": 10, "noise": float("nan")}, "noise"), ({"n": 10, "noise": -1}, "noise"), ({"n": 10, "jitter": float("inf")},
    "jitter"), ({"n": 10, "size": 100_000}, "size"), ({"n": "10"}, "n="), ({"n": True}, "n="), ({"n": 3.5}, "n="),
])
def test_the_shapes_refuse_arguments_out_of_range(kw, word):
    with pytest.raises(ValueError, match=word):
        data.make_shapes(**kw)


def test_the_config_refuses_shapes_larger_than_the_library_draws(tmp_path):
    with pytest.raises(ConfigError, match="image_size"):
        load_config("configs/smoke_moco_v2.yaml", ["data.image_size=2000"])


def test_a_data_set_is_registered_under_a_name_the_config_reads_and_not_over_the_librarys_own():
    loaders = dict(data.LOADERS)
    try:
        for name in ("shapes", "imagefolder", "nosuch", 5):
            with pytest.raises(ValueError, match="register_data_set"):
                data.register_data_set(name, lambda cfg: None)
        with pytest.raises(TypeError, match="load"):
            data.register_data_set("cifar10", None)
    finally:
        data.LOADERS.clear()
        data.LOADERS.update(loaders)
    with pytest.raises(ValueError, match="n_images"):
        data.cache_bytes(-1, 32)


@pytest.mark.parametrize("sampler", [transforms.sample_beta, transforms.sample_beta_on])
def test_a_beta_whose_draws_underflow_is_refused(sampler):
    """Beta(1e-5, 1e-5) drew 0.5 every time (both Gamma draws at the smallest float), not 0 or 1."""
    with pytest.raises(ValueError, match="underflow"):
        sampler(1e-5, 1e-5, (5,), GEN())


@pytest.mark.parametrize("call, word", [
    (lambda: stats.score_statistics(torch.randn(8), torch.randn(8, 5), n=0), "n=0"),
    (lambda: stats.score_statistics(torch.randn(8), torch.randn(8, 5), n=-1), "n=-1"),
    (lambda: stats.score_histogram(torch.randn(8), torch.randn(8, 5), n=0), "n=0"),
    (lambda: stats.score_histogram(torch.randn(8), torch.randn(8, 5), hi=float("inf")), "finite"),
    (lambda: stats.score_histogram(torch.randn(8), torch.randn(8, 5), bins=10**10), "bins"),
    (lambda: stats.representation_statistics(torch.randn(1, 4), torch.randn(1, 4)), "at least 2"),
])
def test_the_statistics_refuse_counts_out_of_range(call, word):
    with pytest.raises(ValueError, match=word):
        call()


Q, K = F.normalize(torch.randn(4, 8), dim=1), F.normalize(torch.randn(4, 8), dim=1)


@pytest.mark.parametrize("call, kind, word", [
    (lambda: transforms.extrapolate_positive(Q, K, float("nan")), ValueError, "lam"),
    (lambda: transforms.extrapolate_positive(Q, K, -5.0), ValueError, "lam"),
    (lambda: transforms.renormalized_positive_score(1.5, 1.5), ValueError, "cosine"),
    (lambda: transforms.renormalized_positive_score(0.5, -3.0), ValueError, "lam"),
    (lambda: transforms.transformed_positive_score(float("nan"), 1.5), ValueError, "cosine"),
    (lambda: transforms.transformed_positive_score("0.5", 1.5), TypeError, "number"),
    (lambda: transforms.score_range([0.5]), TypeError, "number"),
    (lambda: losses.moco_logits(Q, K[:, :6], torch.randn(10, 8)), ValueError, "q and k"),
    (lambda: losses.moco_logits(Q, K, torch.randn(10, 6)), ValueError, "queue"),
    (lambda: losses.mixed_queue(torch.randn(8), FTConfig(neg=True), GEN()), ValueError, "queue"),
])
def test_the_mixes_and_eq_4_refuse_what_they_are_not_defined_on(call, kind, word):
    with pytest.raises(kind, match=word):
        call()


def test_eq_4_still_takes_numbers_arrays_and_tensors():
    import numpy as np

    grid = np.linspace(-1, 1, 5)
    assert transforms.transformed_positive_score(grid, 1.5).shape == (5,)
    assert transforms.renormalized_positive_score(torch.linspace(-1, 1, 5), torch.full((5,), 1.2)).shape == (5,)
    assert transforms.score_range(0.5) == (-1.5, 0.5)


@pytest.mark.parametrize("seeds", ["[-1]", "[0, 0]", "[]", "[1.5]"])
def test_a_reports_seeds_are_refused_before_a_kernel_starts(capsys, tmp_path, seeds):
    """The fifteenth trial's U: -p seeds "[-1]" was refused only by the chapter's first cell, in a kernel."""
    from test_hostile_inputs import assert_one_line

    from ftcl_core.__main__ import run

    code = run(["report", "book/05_momentum.ipynb", "-p", "seeds", seeds, "--out", str(tmp_path / "r.html")])
    assert_one_line(code, capsys.readouterr().err, 2, "seeds")
    assert not (tmp_path / "r.ipynb").exists()
