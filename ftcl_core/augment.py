"""Batched image augmentations with per-sample random parameters (MoCo v1 and v2 pipelines).

A per-sample torchvision loop took 60-65 % of a CPU MoCo step here (the first CPU calibration); these functions
augment a whole uint8 batch at once with tensor ops, on whatever device the batch lives on.  Random
parameters are drawn from a CPU ``torch.Generator`` owned by the run and then moved to the batch's
device, so a run is reproducible and resumable on CPU and GPU alike.

Differences from torchvision, stated: the colour-jitter order is fixed (brightness, contrast, saturation,
hue) instead of random per image, and hue is rotated in YIQ space instead of HSV.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ftcl_core.arguments import check_counts, check_images, described, is_count, is_real
from ftcl_core.config import AUGMENT_PRESETS

# the module's public names: each checks its arguments and names the fix; the rest are building blocks that
# take what these pass them
__all__ = ["AugmentConfig", "PRESETS", "augment", "center_view", "moco_v1", "moco_v2", "normalize", "simclr"]


GRAY_WEIGHTS = (0.299, 0.587, 0.114)


@dataclass(frozen=True)
class AugmentConfig:
    """The parameters of a two-view contrastive augmentation pipeline."""

    out_size: int = 24
    crop_scale: tuple[float, float] = (0.2, 1.0)
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip_p: float = 0.5
    jitter: tuple[float, float, float, float] = (0.4, 0.4, 0.4, 0.1)
    jitter_p: float = 0.8
    gray_p: float = 0.2
    blur_p: float = 0.5
    blur_sigma: tuple[float, float] = (0.1, 2.0)
    mean: tuple[float, float, float] = (0.485, 0.456, 0.406)
    std: tuple[float, float, float] = (0.229, 0.224, 0.225)

    def __post_init__(self) -> None:
        """Every field in its range, or a ValueError naming it (the config checks its own keys the same way)."""
        check_counts("AugmentConfig", minimum=2, out_size=self.out_size)

        for name, lo, hi, usual in (("crop_scale", 1e-4, 1.0, "the share of the image a crop keeps, MoCo's (0.2, 1.0)"),
                                    ("crop_ratio", 1e-2, 1e2, "a crop's aspect ratio, MoCo's (3/4, 4/3)"),
                                    ("blur_sigma", 0.0, float(self.out_size), "in pixels, MoCo v2's (0.1, 2.0)")):
            v = getattr(self, name)
            if not (isinstance(v, (tuple, list)) and len(v) == 2 and all(is_real(x) for x in v)
                    and lo <= v[0] <= v[1] <= hi):
                raise ValueError(f"AugmentConfig: {name}={v!r} must be (low, high) with {lo:g} <= low <= high <= "
                                 f"{hi:g}: {usual}.")
        for name in ("flip_p", "jitter_p", "gray_p", "blur_p"):
            p = getattr(self, name)
            if not (is_real(p) and 0 <= p <= 1):
                raise ValueError(f"AugmentConfig: {name}={p!r} must be a probability in [0, 1].")
        j = self.jitter
        if not (isinstance(j, (tuple, list)) and len(j) == 4 and all(is_real(x) and 0 <= x <= 1 for x in j)
                and j[3] <= 0.5):
            raise ValueError(f"AugmentConfig: jitter={j!r} must be (brightness, contrast, saturation, hue), each in "
                             "[0, 1] and hue <= 0.5 (MoCo v2: (0.4, 0.4, 0.4, 0.1)).")
        for name, low in (("mean", -math.inf), ("std", 1e-3)):  # a std near 0 would blow the views up
            v = getattr(self, name)
            if not (isinstance(v, (tuple, list)) and len(v) == 3 and all(is_real(x) and low < x < math.inf for x in v)):
                raise ValueError(f"AugmentConfig: {name}={v!r} must be three finite numbers, one per channel"
                                 + (" and each above 0.001" if low > 0 else "") + " (ImageNet's by default).")


def moco_v1(out_size: int = 24) -> AugmentConfig:
    """MoCo v1 (Supp B.1): crop(0.2-1), flip, ColorJitter(0.4,0.4,0.4,0.4) always, grayscale 0.2, no blur."""
    return AugmentConfig(out_size=out_size, jitter=(0.4, 0.4, 0.4, 0.4), jitter_p=1.0, blur_p=0.0)


def moco_v2(out_size: int = 24) -> AugmentConfig:
    """MoCo v2 (Supp B.1): crop(0.2-1), flip, ColorJitter(0.4,0.4,0.4,0.1) p 0.8, grayscale 0.2, blur p 0.5.

    The blur keeps the recipe's sigma range [0.1, 2] at any size (its kernel is 10 % of the image).  On the
    24-pixel crops of the CPU profile, scaling sigma down with the crop (x 24/224) measured worse
    (linear top-1 44.6 % against 49.5 %, one seed), so the recipe's values stay; ``augment.blur_sigma``
    overrides them.
    """
    return AugmentConfig(out_size=out_size)


def simclr(out_size: int = 24) -> AugmentConfig:
    """SimCLR (Chen et al. 2020; Supp E.1): crop(0.08-1), flip, ColorJitter(0.8,0.8,0.8,0.2) p 0.8,
    grayscale 0.2, blur p 0.5."""
    return AugmentConfig(out_size=out_size, crop_scale=(0.08, 1.0), jitter=(0.8, 0.8, 0.8, 0.2))


PRESETS = {"v1": moco_v1, "v2": moco_v2, "simclr": simclr}
assert tuple(PRESETS) == AUGMENT_PRESETS, "ftcl_core.config.AUGMENT_PRESETS lists the names of PRESETS"


def check_augment_config(caller: str, cfg: object) -> None:
    """``cfg`` is an :class:`AugmentConfig` (its fields are checked when it is made)."""
    if not isinstance(cfg, AugmentConfig):
        raise TypeError(f"{caller}: cfg must be an AugmentConfig, got {described(cfg)}: e.g. augment.moco_v2(24), or "
                        "AugmentConfig(out_size=24, ...).")


def _uniform(n: int, lo: float, hi: float, gen: torch.Generator) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(n, generator=gen)


def crop_boxes(n: int, cfg: AugmentConfig, gen: torch.Generator) -> torch.Tensor:
    """Per-sample RandomResizedCrop boxes ``(n, 4)`` as (centre x, centre y, width, height) in [0, 1].

    Area fraction uniform in ``crop_scale``, log aspect ratio uniform in ``crop_ratio``; boxes that would
    leave the image are clipped to it (torchvision retries instead; the difference is small).
    """
    area = _uniform(n, *cfg.crop_scale, gen)
    log_r = _uniform(n, math.log(cfg.crop_ratio[0]), math.log(cfg.crop_ratio[1]), gen)
    ratio = torch.exp(log_r)
    w = torch.sqrt(area * ratio).clamp(max=1.0)
    h = torch.sqrt(area / ratio).clamp(max=1.0)
    cx = w / 2 + (1 - w) * torch.rand(n, generator=gen)
    cy = h / 2 + (1 - h) * torch.rand(n, generator=gen)
    return torch.stack([cx, cy, w, h], dim=1)


def resized_crop_flip(images: torch.Tensor, boxes: torch.Tensor, flip: torch.Tensor, out_size: int) -> torch.Tensor:
    """Crop each image to its box, resize to ``out_size`` (bilinear) and mirror where ``flip``: one grid_sample."""
    n = images.shape[0]
    cx, cy, w, h = (boxes[:, i].to(images.device) for i in range(4))
    sign = 1.0 - 2.0 * flip.to(images.device, images.dtype)
    theta = torch.zeros(n, 2, 3, device=images.device, dtype=images.dtype)
    theta[:, 0, 0] = w * sign
    theta[:, 0, 2] = 2 * cx - 1
    theta[:, 1, 1] = h
    theta[:, 1, 2] = 2 * cy - 1
    grid = F.affine_grid(theta, [n, 3, out_size, out_size], align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)


def grayscale(x: torch.Tensor) -> torch.Tensor:
    """Luma ``(n, 1, h, w)`` of RGB images in [0, 1]."""
    wts = torch.tensor(GRAY_WEIGHTS, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
    return (x * wts).sum(1, keepdim=True)


def color_jitter(x: torch.Tensor, factors: torch.Tensor, hue: torch.Tensor) -> torch.Tensor:
    """Brightness, contrast, saturation (``factors`` ``(n, 3)``, 1 = unchanged) and hue shift ``hue`` (n,) in turns."""
    f = factors.to(x.device, x.dtype)
    x = (x * f[:, 0].view(-1, 1, 1, 1)).clamp(0, 1)
    mean = grayscale(x).mean(dim=(2, 3), keepdim=True)
    x = (mean + f[:, 1].view(-1, 1, 1, 1) * (x - mean)).clamp(0, 1)
    gray = grayscale(x)
    x = (gray + f[:, 2].view(-1, 1, 1, 1) * (x - gray)).clamp(0, 1)
    # Hue: rotate the chroma plane of YIQ by 2*pi*hue.
    to_yiq = torch.tensor(
        [[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]], device=x.device, dtype=x.dtype
    )
    angle = 2 * math.pi * hue.to(x.device, x.dtype)
    cos, sin = torch.cos(angle), torch.sin(angle)
    rot = torch.zeros(x.shape[0], 3, 3, device=x.device, dtype=x.dtype)
    rot[:, 0, 0] = 1
    rot[:, 1, 1], rot[:, 1, 2], rot[:, 2, 1], rot[:, 2, 2] = cos, -sin, sin, cos
    mat = torch.linalg.inv(to_yiq) @ rot @ to_yiq  # (n, 3, 3)
    return torch.einsum("nij,njhw->nihw", mat, x).clamp(0, 1)


def gaussian_blur(x: torch.Tensor, sigma: torch.Tensor, kernel_size: int) -> torch.Tensor:
    """Separable Gaussian blur with a per-sample ``sigma`` (n,); sigma <= 0 leaves the image unchanged."""
    n, c, h, w = x.shape
    half = kernel_size // 2
    t = torch.arange(-half, half + 1, device=x.device, dtype=x.dtype)
    s = sigma.to(x.device, x.dtype).clamp(min=1e-3).view(-1, 1)
    k = torch.exp(-0.5 * (t / s) ** 2)
    k = k / k.sum(1, keepdim=True)
    k = torch.where((sigma.to(x.device) > 0).view(-1, 1), k, F.one_hot(torch.tensor(half), kernel_size).to(k))
    k = k.repeat_interleave(c, 0)  # (n*c, K)
    y = F.pad(x.reshape(1, n * c, h, w), (half, half, half, half), mode="reflect")
    y = F.conv2d(y, k.view(n * c, 1, 1, kernel_size), groups=n * c)
    y = F.conv2d(y, k.view(n * c, 1, kernel_size, 1), groups=n * c)
    return y.view(n, c, h, w)


def augment(images: torch.Tensor, cfg: AugmentConfig, gen: torch.Generator, rows: slice | None = None,
            n_total: int | None = None) -> torch.Tensor:
    """One random view of each uint8 image ``(n, 3, H, W)``: float, normalised, ``(n, 3, out, out)``.

    Under torch.distributed each rank holds ``rows`` (``rank::world``) of a global batch of ``n_total``:
    the parameters are drawn for the whole batch, alike on every rank, and this rank applies its rows, so
    the views are those one process would make of the whole batch."""
    check_images("augment", images)
    check_augment_config("augment", cfg)
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"augment: gen must be a torch.Generator you seed, got {described(gen)}: every draw comes from "
                        "the caller's generator, never torch's global one.")
    n = images.shape[0] if n_total is None else n_total
    if (rows is not None and not isinstance(rows, slice)) or not (
            is_count(n) and len(range(n) if rows is None else range(n)[rows]) == len(images)):
        raise ValueError(f"augment: rows={rows!r} must be the slice of the n_total={n_total!r} images this process "
                         f"holds (rank::world), one per image given ({len(images)}).")

    def mine(t: torch.Tensor) -> torch.Tensor:
        return t if rows is None else t[rows]

    x = images.float() / 255.0
    flip = torch.rand(n, generator=gen) < cfg.flip_p
    boxes = crop_boxes(n, cfg, gen)
    x = resized_crop_flip(x, mine(boxes), mine(flip), cfg.out_size)
    b, c, s, h = cfg.jitter
    factors = torch.stack(
        [_uniform(n, max(0.0, 1 - b), 1 + b, gen), _uniform(n, max(0.0, 1 - c), 1 + c, gen),
         _uniform(n, max(0.0, 1 - s), 1 + s, gen)], dim=1)
    hue = _uniform(n, -h, h, gen)
    apply = torch.rand(n, generator=gen) < cfg.jitter_p
    factors = torch.where(apply.view(-1, 1), factors, torch.ones_like(factors))
    hue = torch.where(apply, hue, torch.zeros_like(hue))
    x = color_jitter(x, mine(factors), mine(hue))
    gray = mine(torch.rand(n, generator=gen) < cfg.gray_p).to(x.device).view(-1, 1, 1, 1)
    x = torch.where(gray, grayscale(x).expand_as(x), x)
    if cfg.blur_p > 0:
        sigma = _uniform(n, *cfg.blur_sigma, gen)
        sigma = torch.where(torch.rand(n, generator=gen) < cfg.blur_p, sigma, torch.zeros_like(sigma))
        kernel = max(3, int(0.1 * cfg.out_size) // 2 * 2 + 1)
        x = gaussian_blur(x, mine(sigma), kernel)
    return normalize(x, cfg)


def normalize(x: torch.Tensor, cfg: AugmentConfig) -> torch.Tensor:
    """Subtract the channel mean and divide by the channel std (ImageNet statistics by default). ``x``: float images
    ``(N, 3, H, W)`` in [0, 1] (uint8 ones are :func:`center_view`'s)."""
    check_augment_config("normalize", cfg)
    if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() == 4 and x.shape[1] == 3):
        raise TypeError(f"normalize: x must be float images (N, 3, H, W) in [0, 1], got {described(x)}: uint8 images "
                        "go through center_view, which scales them.")
    mean = torch.tensor(cfg.mean, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
    std = torch.tensor(cfg.std, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
    return (x - mean) / std


def center_view(images: torch.Tensor, cfg: AugmentConfig) -> torch.Tensor:
    """The evaluation view: the whole image resized to ``out_size``, normalised (no randomness). ``images``: uint8
    ``(N, 3, H, W)``; float images are refused (read as 0-255, ones in [0, 1] would be near black)."""
    check_images("center_view", images)
    check_augment_config("center_view", cfg)
    x = images.float() / 255.0
    if x.shape[-1] != cfg.out_size:
        x = F.interpolate(x, size=(cfg.out_size, cfg.out_size), mode="bilinear", antialias=True, align_corners=False)
    return normalize(x, cfg)
