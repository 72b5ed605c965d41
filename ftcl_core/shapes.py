"""The embedded data: procedural *shapes* drawn from a seed (no download), as an :class:`~ftcl_core.image_set.ImageSet`.

The embedded default, :func:`make_shapes`, is drawn deterministically by code from a seed.  Its design
follows the project's first CPU calibration (freely coloured shapes taught MoCo colour, not shape):

* the class is the *shape* (10 kinds), which survives cropping, flipping and colour jitter; with
  ``data.classes`` 20 or 30 it is the shape and its *fill* (solid, outline, striped), a second factor that
  survives the augmentations as well, so that the share of same-class negatives can be varied (chapter 7);
* the nuisances are rotation, scale, position, colour, background gradient and pixel noise;
* colours come from a small palette and are independent of the class, so colour cannot identify an
  instance (with free RGB colours, instance discrimination is solved by colour alone and nothing
  about shape is learned) and says nothing about the class.
"""

from __future__ import annotations

import math

import torch

from ftcl_core.arguments import check_counts, is_count, is_real
from ftcl_core.config import MAX_SEED
from ftcl_core.config_sections import MAX_SHAPES_SIZE
from ftcl_core.image_set import ImageSet

SHAPE_CLASSES = ("disc", "square", "triangle", "star", "cross", "ring", "bar", "half_disc", "corner", "two_dots")
# Colours (RGB, 0-1).  Each image draws a foreground and a different background colour from it.
PALETTE = torch.tensor(
    [
        [0.90, 0.20, 0.20],
        [0.20, 0.70, 0.25],
        [0.20, 0.35, 0.90],
        [0.95, 0.85, 0.20],
        [0.15, 0.15, 0.15],
        [0.92, 0.92, 0.92],
    ]
)


# The second class-defining factor of data.classes > 10: how the shape is filled.  Outline: the shape hollowed
# out, a band of half its inradius (at most OUTLINE_MAX radii, so that an outlined disc is a thin ring, not the
# ring class) left along the edge, so thin shapes, the ring and the bar, stay hollow too;
# striped: stripes of STRIPE_PERIOD radii across the shape's own frame, so they turn with it.  Both survive
# crops, flips and colour jitter; neither involves colour.
FILLS = ("solid", "outline", "striped")
# each shape's inradius (the largest depth inside it) in shape radii, in SHAPE_CLASSES order
INRADIUS = (0.85, 0.72, 0.5, 0.23, 0.28, 0.2, 0.3, 0.45, 0.25, 0.42)
OUTLINE_MAX = 0.18
STRIPE_PERIOD = 0.55


def shape_class_names(classes: int = 10) -> tuple[str, ...]:
    """The class names of the shapes set with ``classes`` classes (10: the shapes; 20, 30: fill and shape)."""
    if not is_count(classes) or classes not in (10, 20, 30):
        raise ValueError(f"data.classes={classes!r}: the shapes set has 10 shapes x {len(FILLS)} fills; choose "
                         "10, 20 or 30.")
    if classes == 10:
        return SHAPE_CLASSES
    return tuple(f"{fill} {shape}" for fill in FILLS[: classes // 10] for shape in SHAPE_CLASSES)


def _shape_sdf(kind: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Signed distance (negative inside) of each image's shape, in units of the shape radius.

    ``kind`` is ``(N,)``; ``x`` and ``y`` are ``(N, H, W)`` coordinates in the shape's own frame.
    All ten shapes are evaluated and the right one picked per image (cheap at these sizes).
    """
    r = torch.sqrt(x * x + y * y)
    theta = torch.atan2(y, x)

    def box(hx: float, hy: float, cx: float = 0.0, cy: float = 0.0) -> torch.Tensor:
        dx, dy = (x - cx).abs() - hx, (y - cy).abs() - hy
        outside = torch.sqrt(dx.clamp(min=0) ** 2 + dy.clamp(min=0) ** 2)
        return outside + torch.maximum(dx, dy).clamp(max=0)

    def polygon(n: int, radius: float) -> torch.Tensor:
        sector = 2 * math.pi / n
        local = torch.remainder(theta, sector) - sector / 2
        return r * torch.cos(local) - radius * math.cos(math.pi / n)

    disc = r - 0.85
    square = box(0.72, 0.72)
    triangle = polygon(3, 1.0)
    star = r - 0.95 * (0.62 + 0.38 * torch.cos(5 * theta))
    cross = torch.minimum(box(0.95, 0.28), box(0.28, 0.95))
    ring = (r - 0.72).abs() - 0.2
    bar = box(1.0, 0.3)
    half_disc = torch.maximum(r - 0.95, -(y + 0.05))
    corner = torch.minimum(box(0.85, 0.25, 0.0, -0.6), box(0.25, 0.85, -0.6, 0.0))
    two_dots = torch.minimum(torch.sqrt((x - 0.5) ** 2 + y**2) - 0.42, torch.sqrt((x + 0.5) ** 2 + y**2) - 0.42)
    all_sdf = torch.stack([disc, square, triangle, star, cross, ring, bar, half_disc, corner, two_dots], dim=1)
    return all_sdf.gather(1, kind.view(-1, 1, 1, 1).expand(-1, 1, *x.shape[1:])).squeeze(1)


def _shape_frame(gx: torch.Tensor, gy: torch.Tensor, cx: torch.Tensor, cy: torch.Tensor, angle: torch.Tensor,
                 rad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Image coordinates ``gx``, ``gy`` ``(H, W)`` -> each shape's own frame ``(m, H, W)``: centred on ``(cx, cy)``
    ``(m,)``, turned by ``angle`` ``(m,)`` and scaled to unit radius (``rad`` ``(m, 1, 1)``)."""
    dx, dy = gx - cx.view(-1, 1, 1), gy - cy.view(-1, 1, 1)
    cos, sin = torch.cos(angle).view(-1, 1, 1), torch.sin(angle).view(-1, 1, 1)
    return (cos * dx + sin * dy) / rad, (-sin * dx + cos * dy) / rad


MAX_CLUTTER = 8
CLUTTER_SEED_OFFSET = 3_000_017  # the distractors' own generator: the labelled shapes do not depend on them
CLUTTER_SCALE = (0.4, 0.7)  # a distractor's radius as a fraction of the labelled shape's smallest and largest


def _draw_clutter(bg: torch.Tensor, k: int, gx: torch.Tensor, gy: torch.Tensor, scale: tuple[float, float],
                  gen: torch.Generator) -> torch.Tensor:
    """``bg`` ``(m, 3, H, W)`` with ``k`` distractor shapes painted over it, each of a random kind (any of the ten,
    the labelled one's too), solid, in a palette colour, rotated, with a radius of :data:`CLUTTER_SCALE` times the
    labelled shapes' ``scale`` range and its centre anywhere in the image (so a crop may hold a distractor and miss
    the labelled shape). They carry no label: the class stays the largest shape's, which lies on top of them."""
    m = len(bg)
    for _ in range(k):
        u = torch.rand(m, 4, generator=gen)
        kind = torch.randint(len(SHAPE_CLASSES), (m,), generator=gen)
        colour = PALETTE[torch.randint(len(PALETTE), (m,), generator=gen)].view(m, 3, 1, 1)
        radius = (scale[0] * CLUTTER_SCALE[0] + (scale[1] * CLUTTER_SCALE[1] - scale[0] * CLUTTER_SCALE[0]) * u[:, 0])
        angle = u[:, 1] * 2 * math.pi
        cx, cy = (u[:, 2] - 0.5) * 0.9, (u[:, 3] - 0.5) * 0.9
        rad = radius.view(-1, 1, 1)
        sdf = _shape_sdf(kind, *_shape_frame(gx, gy, cx, cy, angle, rad))
        alpha = (0.5 - sdf * (gx.shape[-1] * rad)).clamp(0, 1).unsqueeze(1)
        bg = alpha * colour + (1 - alpha) * bg
    return bg


def make_shapes(
    n: int,
    size: int = 32,
    seed: int = 0,
    scale: tuple[float, float] = (0.28, 0.42),
    jitter: float = 0.15,
    noise: float = 0.04,
    classes: int = 10,
    clutter: int = 0,
) -> ImageSet:
    """Draw ``n`` class-balanced shape images deterministically from ``seed`` (no download).

    ``scale`` is the shape radius as a fraction of the image side; ``jitter`` the largest offset of its
    centre from the image centre (same unit); ``noise`` the std of additive pixel noise.  ``classes``: 10
    (the shapes) or 20 / 30 (label = shape + 10 * fill, :data:`FILLS`); the random draws do not depend on it,
    so the 10-class set is unchanged and a 30-class image differs from its 10-class twin only in its fill.
    ``clutter``: how many smaller distractor shapes (:func:`_draw_clutter`) lie behind the labelled one; they are
    drawn from a generator of their own, so ``clutter=0`` gives the same images as before it existed and an image
    with clutter differs from its twin without only by the distractors.
    """
    check_counts("make_shapes", n=n)
    check_counts("make_shapes", minimum=0, seed=seed, clutter=clutter)
    if seed > MAX_SEED:
        raise ValueError(f"make_shapes: seed={seed} must be at most {MAX_SEED} (2**32 - 1), as a config's seed.")
    if not (is_count(size) and 8 <= size <= MAX_SHAPES_SIZE):
        raise ValueError(f"make_shapes: size={size!r} must be a whole number of pixels from 8 to {MAX_SHAPES_SIZE} "
                         "(the book draws 32).")
    names = shape_class_names(classes)
    if not clutter <= MAX_CLUTTER:
        raise ValueError(f"make_shapes: clutter={clutter} must lie in [0, {MAX_CLUTTER}].")
    if not (isinstance(scale, (tuple, list)) and len(scale) == 2 and all(is_real(v) for v in scale)
            and 0 < scale[0] <= scale[1] <= 0.5):
        raise ValueError(f"make_shapes: scale={scale!r} must be (low, high) radii as shares of the side, with 0 < low "
                         "<= high <= 0.5 (the book's (0.28, 0.42)).")
    for name, v in (("jitter", jitter), ("noise", noise)):
        if not (is_real(v) and 0 <= v <= 0.5):
            raise ValueError(f"make_shapes: {name}={v!r} must be a number in [0, 0.5] (the book's jitter 0.15, noise 0.04).")
    gen = torch.Generator().manual_seed(seed)
    clutter_gen = torch.Generator().manual_seed(seed + CLUTTER_SEED_OFFSET)
    n_cls = len(names)
    labels = torch.arange(n) % n_cls
    labels = labels[torch.randperm(n, generator=gen)]
    images = torch.empty(n, 3, size, size, dtype=torch.uint8)
    coords = (torch.arange(size, dtype=torch.float32) + 0.5) / size - 0.5  # in [-0.5, 0.5]
    gy, gx = torch.meshgrid(coords, coords, indexing="ij")
    for start in range(0, n, 2048):  # chunks keep memory small for large n
        kind = labels[start : start + 2048] % len(SHAPE_CLASSES)
        fill = labels[start : start + 2048] // len(SHAPE_CLASSES)
        m = len(kind)
        u = torch.rand(m, 8, generator=gen)
        angle = u[:, 0] * 2 * math.pi
        radius = scale[0] + (scale[1] - scale[0]) * u[:, 1]
        cx, cy = (u[:, 2] - 0.5) * 2 * jitter, (u[:, 3] - 0.5) * 2 * jitter
        rad = radius.view(-1, 1, 1)
        lx, ly = _shape_frame(gx, gy, cx, cy, angle, rad)
        sdf = _shape_sdf(kind, lx, ly)
        pixel = 1.0 / (size * rad)  # one pixel in shape units: anti-aliased edge
        if classes > 10:  # outline: the band -width < sdf < 0; striped: the shape times stripes
            width = (torch.tensor(INRADIUS)[kind] / 2).clamp(max=OUTLINE_MAX).view(-1, 1, 1)
            band = (sdf + width / 2).abs() - width / 2
            stripes = torch.sin(2 * math.pi * ly / STRIPE_PERIOD) * STRIPE_PERIOD / (2 * math.pi)
            striped = torch.maximum(sdf, -stripes)  # inside the shape and on the stripe's positive half
            f = fill.view(-1, 1, 1)
            sdf = torch.where(f == 1, band, torch.where(f == 2, striped, sdf))
        alpha = (0.5 - sdf / pixel).clamp(0, 1).unsqueeze(1)
        fg_idx = torch.randint(len(PALETTE), (m,), generator=gen)
        bg_idx = (fg_idx + torch.randint(1, len(PALETTE), (m,), generator=gen)) % len(PALETTE)
        fg = PALETTE[fg_idx].view(m, 3, 1, 1)
        bg = PALETTE[bg_idx].view(m, 3, 1, 1)
        # Background: a soft linear gradient in a random direction.
        g_angle = u[:, 4] * 2 * math.pi
        ramp = (torch.cos(g_angle).view(-1, 1, 1) * gx + torch.sin(g_angle).view(-1, 1, 1) * gy)
        bg_img = bg * (1.0 + 0.35 * u[:, 5].view(-1, 1, 1, 1) * ramp.unsqueeze(1))
        if clutter:
            bg_img = _draw_clutter(bg_img, clutter, gx, gy, scale, clutter_gen)
        img = alpha * fg + (1 - alpha) * bg_img
        img = img + noise * torch.randn(img.shape, generator=gen)
        images[start : start + m] = (img.clamp(0, 1) * 255).round().to(torch.uint8)
    return ImageSet(images, labels.long(), names)


def shapes_splits(
    n_train: int, n_test: int, size: int = 32, seed: int = 0, **kwargs: float
) -> tuple[ImageSet, ImageSet]:
    """Train and test splits of the shapes set, drawn from disjoint seeds."""
    return (
        make_shapes(n_train, size=size, seed=seed, **kwargs),
        make_shapes(n_test, size=size, seed=seed + 1_000_003, **kwargs),
    )


VALIDATION_SEED_OFFSET = 2_000_003  # test: seed + 1_000_003; validation: its own seed, disjoint from both


def shapes_validation(n_train: int, n_val: int, size: int = 32, seed: int = 0, **kwargs: float) -> tuple[ImageSet, ImageSet]:
    """The training split of :func:`shapes_splits` and a validation split drawn from a third seed (for
    calibrating recipes without looking at the test set)."""
    return (make_shapes(n_train, size=size, seed=seed, **kwargs),
            make_shapes(n_val, size=size, seed=seed + VALIDATION_SEED_OFFSET, **kwargs))
