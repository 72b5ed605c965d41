"""Issue 64, the seventeenth trial (a helper at 747cbea: T17 D0 N13 U9, all but four reachable only by calling the
library): a config's numbers with underscores read silently (5_12 as 512), an override with no key, a YAML tag named
as "not a mapping", and the library's functions handed a wrong config, sizes, dtypes or values. Each test fails at
747cbea (an answer, or a foreign error)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from ftcl_core import augment, batch_losses, data, evaluation, losses, models, stats, transforms
from ftcl_core.config import ConfigError, load_config

SMOKE = "configs/smoke_moco_v2.yaml"
IMAGES = data.make_shapes(8, size=32).images
V2 = augment.moco_v2(16)
F8, L8 = torch.randn(20, 8), torch.randint(0, 3, (20,))
Q = F.normalize(torch.randn(4, 8), dim=1)


@pytest.mark.parametrize("override, word", [
    ("data.n_train=5_12", "underscore"), ("moco.momentum=0.99_9", "underscores"), ("=3", "names no key"),
])
def test_an_override_read_otherwise_than_typed_is_refused(override, word):
    with pytest.raises(ConfigError, match=word):
        load_config(SMOKE, [override])


@pytest.mark.parametrize("text, word", [("seed: 1_0\n", "underscored"), ("moco: {momentum: 0.99_9}\n", "underscores"),
                                        ("seed: !!python/object:os.system {}\n", "YAML tag")])
def test_a_config_file_read_otherwise_than_written_is_refused(tmp_path, text, word):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=word):
        load_config(str(path), [])


@pytest.mark.parametrize("call, word", [
    (lambda: augment.augment(IMAGES, {"out_size": 8}, torch.Generator()), "AugmentConfig"),
    (lambda: augment.center_view(IMAGES, None), "AugmentConfig"),
    (lambda: augment.augment(IMAGES[:4], V2, torch.Generator(), n_total=8), "rows"),
    (lambda: models.ema_update(models.build_encoder("resnet10_w16"), models.build_encoder("resnet10_w32"), 0.9),
     "frozen_copy"),
    (lambda: models.projection_head(8, 4, mlp="no"), "mlp"),
    (lambda: models.mlp(8, 8, 4, last_bn="yes"), "last_bn"),
    (lambda: data.hold_out(data.make_shapes(20), 2.5), "n_val"),
    (lambda: data.hold_out(data.make_shapes(20), True), "n_val"),
    (lambda: data.hold_out((IMAGES, L8), 5), "ImageSet"),
    (lambda: data.make_shapes(4, classes=30.0), "classes"),
    (lambda: data.make_shapes(4, seed=2**70), "seed"),
    (lambda: data.load_image_folder("/nonexistent", 0), "size"),
    (lambda: data.load_image_folder(None, 8), "root"),
    (lambda: data.load_image_folder("/nonexistent", 8, classes=["a", "a"]), "distinct"),
    (lambda: data.load_image_folder("/nonexistent", 8, classes="ab"), "distinct"),
    (lambda: evaluation.linear_readout(F8, L8, F8, L8, epochs=2, seed=2**70), "seed"),
    (lambda: evaluation.knn_top1(F8 * 1e20, L8, F8, L8, k=5), "overflow"),
    (lambda: evaluation.knn_top1(F8[:, :0], L8, F8[:, :0], L8, k=5), "at least one"),
    (lambda: evaluation.knn_top1(F8.to_sparse(), L8, F8, L8, k=5), "dense"),
    (lambda: transforms.extrapolate_positive(Q, Q, torch.tensor(float("nan"))), "lam"),
    (lambda: transforms.interpolate_negatives(Q, torch.tensor(5.0), torch.randperm(4)), "lam"),
    (lambda: transforms.interpolate_negatives(Q[0], 0.5, torch.randperm(8)), "queue"),
    (lambda: transforms.sample_beta(1.0, 1.0, (3,), None), "gen"),
    (lambda: transforms.DeviceDraws.seeded(-1, "cpu"), "seed"),
    (lambda: losses.mixed_queue(Q, {"neg": True}, torch.Generator()), "FTConfig"),
    (lambda: losses.positive_ft(Q, Q, None, torch.Generator()), "FTConfig"),
    (lambda: stats.score_statistics(torch.randn(8), torch.randn(8, 0)), "K >= 1"),
    (lambda: stats.score_statistics(torch.randn(8) > 0, torch.randn(8, 5)), "float"),
    (lambda: stats.representation_statistics(torch.randn(8, 0), torch.randn(8, 0)), "N x C"),
    (lambda: batch_losses.in_batch_negative_scores(Q[:2], Q[:2]), "N >= 2"),
    (lambda: transforms.hard_negative_logits(Q, Q, torch.full((8,), 0.5)), "ambiguous"),
    (lambda: transforms.hard_negative_logits(Q, Q.double(), 0.5), "dtype"),
    (lambda: transforms.transformed_positive_score(torch.rand(3), torch.rand(4) + 1), "broadcast"),
    (lambda: transforms.renormalized_positive_score(-1.0, 0.5), "no cosine"),
    (lambda: stats.layer_grad_norms(torch.nn.ReLU()), "no trainable"),
    (lambda: models.SplitBatchNorm2d(4, 2, momentum=None), "momentum"),
    (lambda: models.SplitBatchNorm2d(4, 2).train()(torch.randn(4, 4)), "N, C, H, W"),
])
def test_the_library_refuses_what_the_seventeenth_trial_handed_it(call, word):
    with pytest.raises((ValueError, TypeError), match=word):
        call()


def test_a_half_or_double_backbone_reads_its_own_dtype():
    """extract_features fed float32 views to a half or double model (a foreign dtype error)."""
    backbone = models.build_encoder("resnet10_w16").double()
    feats = evaluation.extract_features(backbone, IMAGES, V2)
    assert feats.shape == (8, backbone.out_dim) and feats.dtype == torch.float32


def test_half_features_read_as_float32_in_the_knn_readout():
    """exp(s / t) overflowed half precision at t = 0.05: the weights were infinite and a number came back."""
    half = evaluation.knn_top1(F8.half(), L8, F8.half(), L8, k=5, t=0.05)
    assert half == evaluation.knn_top1(F8.half().float(), L8, F8.half().float(), L8, k=5, t=0.05)


@pytest.mark.parametrize("overrides", [["data.name=imagefolder", "data.root=/nonexistent", "data.test_root=/nonexistent"],
                                       ["data.name=fashion_mnist", "data.root=/nonexistent"]])
def test_a_run_whose_data_are_missing_is_refused_without_saying_where_it_would_go(tmp_path, overrides):
    """The fifteenth trial's U: "training into ...: config.yaml now" came before the refusal of a missing data root."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "ftcl_core", "train", SMOKE, *overrides, "--out", str(tmp_path / "r"),
                          "--no-progress"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == "" and len(out.stderr.strip().splitlines()) == 1, (out.stdout, out.stderr)
    assert not (tmp_path / "r").exists()
