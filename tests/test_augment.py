"""Batched augmentations: shapes, determinism, and the pieces that have a closed form."""

import torch

from ftcl_core import augment
from ftcl_core.data import make_shapes


def test_views_are_reproducible_and_differ_per_sample():
    imgs = make_shapes(16, size=32).images
    a = augment.augment(imgs, augment.moco_v2(24), torch.Generator().manual_seed(0))
    b = augment.augment(imgs, augment.moco_v2(24), torch.Generator().manual_seed(0))
    assert a.shape == (16, 3, 24, 24) and torch.equal(a, b)
    c = augment.augment(imgs, augment.moco_v2(24), torch.Generator().manual_seed(1))
    assert not torch.equal(a, c)


def test_full_box_crop_and_flip():
    x = torch.rand(2, 3, 8, 8)
    full = torch.tensor([[0.5, 0.5, 1.0, 1.0]] * 2)
    same = augment.resized_crop_flip(x, full, torch.tensor([False, True]), 8)
    torch.testing.assert_close(same[0], x[0])
    torch.testing.assert_close(same[1], x[1].flip(-1))


def test_crop_boxes_stay_inside_the_image():
    b = augment.crop_boxes(1000, augment.moco_v2(), torch.Generator().manual_seed(0))
    cx, cy, w, h = b.T
    assert torch.all(cx - w / 2 >= -1e-6) and torch.all(cx + w / 2 <= 1 + 1e-6)
    assert torch.all(cy - h / 2 >= -1e-6) and torch.all(cy + h / 2 <= 1 + 1e-6)
    assert torch.all(w * h <= 1 + 1e-6) and torch.all(w * h >= 0.2 * 0.74)


def test_identity_jitter_and_zero_blur_change_nothing():
    x = torch.rand(3, 3, 10, 10)
    torch.testing.assert_close(augment.color_jitter(x, torch.ones(3, 3), torch.zeros(3)), x, atol=1e-5, rtol=0)
    torch.testing.assert_close(augment.gaussian_blur(x, torch.zeros(3), 3), x)


def test_blur_keeps_the_mean_of_a_constant_image():
    x = torch.full((2, 3, 9, 9), 0.3)
    torch.testing.assert_close(augment.gaussian_blur(x, torch.tensor([1.0, 2.0]), 5), x)


def test_grayscale_uses_luma_weights():
    x = torch.zeros(1, 3, 1, 1)
    x[0, 1] = 1.0
    assert abs(float(augment.grayscale(x)) - 0.587) < 1e-6


def test_center_view_is_deterministic():
    imgs = make_shapes(4, size=32).images
    v = augment.center_view(imgs, augment.moco_v2(24))
    assert v.shape == (4, 3, 24, 24) and torch.equal(v, augment.center_view(imgs, augment.moco_v2(24)))
