"""Datasets: the embedded procedural *shapes* set (no download) and loaders for real image data (image folders,
torchvision's sets; the study adds Fashion-MNIST, :mod:`ftcl_core.study.fashion_mnist`, by :func:`register_data_set`).

Every loader returns a :class:`ImageSet`: uint8 images ``(N, 3, H, W)`` of one fixed size plus integer
labels.  Augmentation happens afterwards, batched on tensors (:mod:`ftcl_core.augment`), so the same
code path serves the CPU and a GPU.

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

import hashlib
import json
import math
import os
import shutil
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ftcl_core import distributed
from ftcl_core.arguments import check_counts, described, is_count, is_real
from ftcl_core.config import MAX_SEED, ConfigError, DataSet, RunConfig
from ftcl_core.config_sections import MAX_SHAPES_SIZE
from ftcl_core.runs import write_json

# the module's public names: each checks its arguments and names the fix; the rest are building blocks that
# take what these pass them
__all__ = ["ImageSet", "cache_bytes", "hold_out", "load_data", "load_image_folder", "load_torchvision", "make_shapes",
           "open_cache", "read_class_list", "register_data_set", "shape_class_names", "shapes_splits",
           "shapes_validation"]


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


@dataclass
class ImageSet:
    """Images as uint8 ``(N, 3, H, W)`` with int64 labels ``(N,)`` and the class names."""

    images: torch.Tensor
    labels: torch.Tensor
    classes: tuple[str, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.images, torch.Tensor) or not isinstance(self.labels, torch.Tensor):
            raise TypeError(f"ImageSet takes torch tensors, got images {described(self.images)} and labels "
                            f"{described(self.labels)}: wrap them with torch.as_tensor(x).")
        if self.images.dtype != torch.uint8 or self.images.dim() != 4 or self.images.shape[1] != 3:
            raise ValueError(
                f"ImageSet.images must be uint8 (N, 3, H, W); got {tuple(self.images.shape)} "
                f"{self.images.dtype}. Convert with (x * 255).round().to(torch.uint8)."
            )
        if len(self.images) != len(self.labels):
            raise ValueError(f"{len(self.images)} images but {len(self.labels)} labels.")
        if len(self.images) == 0:
            raise ValueError("ImageSet is empty: the data source holds no images.")
        if not (isinstance(self.classes, (tuple, list)) and self.classes and all(isinstance(c, str) for c in self.classes)
                and len(set(self.classes)) == len(self.classes)):
            raise ValueError(f"ImageSet.classes must name each class once, got {self.classes!r}.")
        if self.labels.dim() != 1 or self.labels.is_floating_point() or self.labels.dtype == torch.bool:
            raise ValueError(f"ImageSet.labels must be class indices 0 .. {len(self.classes) - 1}, one integer an image, "
                             f"got {described(self.labels)}.")
        if (bad := self.labels[(self.labels < 0) | (self.labels >= len(self.classes))]).numel():
            raise ValueError(f"ImageSet: a label {int(bad[0])} lies outside its {len(self.classes)} classes (0 to "
                             f"{len(self.classes) - 1}): a damaged labels file, or another set's. Replace it.")

    def __len__(self) -> int:
        return len(self.images)


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


def hold_out(train: ImageSet, n_val: int, seed: int = 0) -> tuple[ImageSet, ImageSet]:
    """Split ``train`` into (rest, validation): the last ``n_val`` images of a fixed shuffle (``seed``, the same
    for every run, so all calibration trials score the same images) are held out of training."""
    if not isinstance(train, ImageSet):
        raise TypeError(f"hold_out: train must be an ImageSet (images, labels, classes), got {described(train)}.")
    check_counts("hold_out", n_val=n_val)
    check_counts("hold_out", minimum=0, seed=seed)
    if not 0 < n_val < len(train):
        raise ValueError(f"data.n_val={n_val} must lie in [1, {len(train) - 1}] for a training set of {len(train)} images.")
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(seed))
    keep, val = order[:-n_val].sort().values, order[-n_val:].sort().values
    return (ImageSet(train.images[keep], train.labels[keep], train.classes),
            ImageSet(train.images[val], train.labels[val], train.classes))


# ---------------------------------------------------------------------------------------------------
# Real data.  Nothing is downloaded unless the caller passes download=True.
# ---------------------------------------------------------------------------------------------------

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".JPEG")


def read_class_list(path: str | os.PathLike) -> list[str]:
    """Read a class list (one WordNet id per line, e.g. ``data/imagenet100.txt``)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"class list {p} not found; the ImageNet-100 list ships as data/imagenet100.txt.")
    try:
        classes = [line.strip() for line in p.read_text().splitlines() if line.strip()]
    except UnicodeDecodeError:
        raise ValueError(f"class list {p} is not text: one class name (a WordNet id) per line.") from None
    if not classes:
        raise ValueError(f"class list {p} is empty.")
    if len(set(classes)) != len(classes):
        raise ValueError(f"class list {p} names a class twice.")
    return classes


def load_image_folder(
    root: str | os.PathLike,
    size: int,
    classes: list[str] | None = None,
    max_per_class: int | None = None,
    workers: int = 0,
    cache: str | os.PathLike | None = None,
) -> ImageSet:
    """Load an ImageFolder tree (``root/<class>/<image>``) resized to ``size`` x ``size`` uint8.

    ``classes`` restricts and orders the classes (ImageNet-100: :func:`read_class_list`).  Images are
    resized on the shorter side and centre-cropped; random crops then come from the batched augmentation
    (on the GPU when training there), so decoding happens once, not every epoch.  ``workers`` decodes in
    that many processes (a torch DataLoader).  ``cache`` names a folder where the decoded set is written once,
    batch by batch, as a memory-mapped array (:func:`cache_bytes`: ImageNet-100 at 256 px, the paper's 224-px
    crops, takes 24.9 GB of disk, never all of it in memory) and memory-mapped on later runs; without it the set
    is decoded into memory.
    """
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"load_image_folder: root must be a folder's path, got {described(root)}.")
    check_counts("load_image_folder", size=size)
    check_counts("load_image_folder", minimum=0, workers=workers)
    if max_per_class is not None:
        check_counts("load_image_folder", max_per_class=max_per_class)
    if classes is not None and not (isinstance(classes, (list, tuple)) and all(isinstance(c, str) for c in classes)
                                    and len(set(classes)) == len(classes)):
        raise ValueError(f"load_image_folder: classes must be a list of distinct folder names, got {classes!r}: "
                         "read_class_list reads one from a file.")
    if cache is not None and Path(cache).exists() and not Path(cache).is_dir():
        raise ValueError(f"load_image_folder: cache={cache} is a file; name a folder for the decoded set's cache.")
    files, labels, names = _list_image_folder(root, classes)
    if max_per_class is not None:
        keep, count = [], {}
        for f, y in zip(files, labels):
            if count.get(y, 0) < max_per_class:
                keep.append((f, y))
                count[y] = count.get(y, 0) + 1
        files, labels = [f for f, _ in keep], [y for _, y in keep]
    if cache is None:
        images = torch.empty(len(files), 3, size, size, dtype=torch.uint8)
        _decode_into(images.numpy(), files, size, workers)
        return ImageSet(images, torch.tensor(labels, dtype=torch.long), tuple(names))
    cached = _cache_path(cache, root, size, files)
    if not cached.is_file():
        _build_cache(cached, files, labels, names, size, workers)
    return open_cache(cached)


def cache_bytes(n_images: int, size: int) -> int:
    """The bytes a cache of ``n_images`` images at ``size`` x ``size`` takes on disk (uint8 RGB; ImageNet-100's
    126 689 training images: 24.9 GB at 256 px, 9.7 GB at 160 px)."""
    check_counts("cache_bytes", minimum=0, n_images=n_images, size=size)
    return n_images * 3 * size * size


def _decode_into(out, files: list[Path], size: int, workers: int) -> None:
    """Decode ``files`` into the uint8 array ``out`` (N, 3, size, size) in batches of 64 (``workers`` processes)."""
    loader = torch.utils.data.DataLoader(_DecodedImages(files, size), batch_size=64, num_workers=workers)
    i = 0
    for batch in _progress_over(loader, len(files)):
        out[i : i + len(batch)] = batch.numpy()
        i += len(batch)


def _build_cache(path: Path, files: list[Path], labels: list[int], names: list[str], size: int, workers: int) -> None:
    """Decode the tree once into a memory-mapped ``.npy`` array at ``path`` (written batch by batch, never held in
    memory whole), its labels and class names beside it (``.json``).  The array is written under a partial name
    of this process and renamed when complete, so an interrupted build leaves no cache that looks whole (its
    partial file is removed by the next build); a disk without the room is refused before anything is written.
    Caches of the ``.pt`` format of earlier versions are not read: delete them to free their space."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f"{path.stem}.partial-*.npy"):  # left by an interrupted build whose process is gone
        if not _alive(stale.stem.rsplit("-", 1)[-1]):
            stale.unlink(missing_ok=True)
    need, free = cache_bytes(len(files), size), shutil.disk_usage(path.parent).free
    if need > free:
        raise OSError(f"the decoded cache of {len(files)} images at {size} px needs {need / 1e9:.1f} GB in "
                      f"{path.parent}, which has {free / 1e9:.1f} GB free. Free the space, point data.cache at a "
                      "larger disk, or lower data.image_size (configs/gpu_in100_moco_v2_128px.yaml: 160 px).")
    partial = path.with_name(f"{path.stem}.partial-{os.getpid()}.npy")  # one per process: two builds never share one
    images = np.lib.format.open_memmap(partial, mode="w+", dtype=np.uint8, shape=(len(files), 3, size, size))
    _decode_into(images, files, size, workers)
    images.flush()
    del images
    write_json(path.with_suffix(".json"), {"labels": labels, "classes": names, "size": size})
    os.replace(partial, path)  # last: the array's presence marks the cache complete


def _alive(pid: str) -> bool:
    """Whether the process ``pid`` (a partial cache's writer) still runs on this machine."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def open_cache(path: str | os.PathLike) -> ImageSet:
    """A cache written by :func:`load_image_folder`, memory-mapped copy-on-write: batches are read from disk (or
    the page cache) as training indexes them, so a set larger than the machine's memory still trains."""
    path = Path(path)
    try:
        meta = json.loads(path.with_suffix(".json").read_text())
        images = torch.from_numpy(np.load(path, mmap_mode="c"))
    except (OSError, ValueError, TypeError) as err:  # missing, a folder, not .npy, a pickle
        raise ValueError(f"open_cache: {path} is not a cache load_image_folder wrote (its .npy and .json): "
                         f"{type(err).__name__}: {' '.join(str(err).split())[:120]}. Delete it, and load_image_folder "
                         "writes it again.") from None
    return ImageSet(images, torch.tensor(meta["labels"], dtype=torch.long), tuple(meta["classes"]))


class _DecodedImages(torch.utils.data.Dataset):
    """Image files decoded to uint8 ``(3, size, size)`` (one per item, for a DataLoader's workers)."""

    def __init__(self, files: list[Path], size: int) -> None:
        self.files, self.size = files, size

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> torch.Tensor:
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(self.files[i]) as im:
                return _resize_center(im.convert("RGB"), self.size)
        except (UnidentifiedImageError, OSError) as err:
            raise ValueError(
                f"corrupt or unreadable image {self.files[i]}: {err}. Remove or replace the file and run again."
            ) from err


def _cache_path(cache: str | os.PathLike, root: str | os.PathLike, size: int, files: list[Path]) -> Path:
    """A cache file named by the tree, the size and a hash of the file list (a changed tree gets a new file)."""
    h = hashlib.sha1(f"{size}\n".encode())
    for f in files:
        h.update(f"{f}\n".encode())
    return Path(cache) / f"{Path(root).name}_{size}px_{len(files)}_{h.hexdigest()[:12]}.npy"


def _progress_over(loader, total: int):
    from tqdm.auto import tqdm

    return tqdm(loader, total=math.ceil(total / 64), desc="decode", unit="batch", disable=total < 5000)


def _list_image_folder(root: str | os.PathLike, classes: list[str] | None) -> tuple[list[Path], list[int], list[str]]:
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(
            f"data directory {root} does not exist. Point data.root at an ImageFolder tree "
            "(root/<class>/<image>), or use data.name=shapes for the embedded data."
        )
    present = sorted(d.name for d in root.iterdir() if d.is_dir())
    if classes is None:
        classes = present
    missing = [c for c in classes if c not in present]
    if missing:
        raise ValueError(
            f"{len(missing)} class(es) of the class list are not folders of {root}: {missing[:5]}"
            f"{' ...' if len(missing) > 5 else ''}. Check the class list or the data root."
        )
    files, labels = [], []
    for y, c in enumerate(classes):
        for f in sorted((root / c).iterdir()):
            if f.suffix in IMG_EXTENSIONS or f.suffix.lower() in IMG_EXTENSIONS:
                files.append(f)
                labels.append(y)
    if not files:
        raise ValueError(f"data directory {root} holds no images ({', '.join(IMG_EXTENSIONS)}).")
    empty = [c for y, c in enumerate(classes) if y not in set(labels)]
    if empty:
        raise ValueError(f"{len(empty)} class folder(s) of {root} hold no images: {empty[:5]}"
                         f"{' ...' if len(empty) > 5 else ''}. Fill them, or drop them from the class list.")
    return files, labels, list(classes)


def _resize_center(im, size: int) -> torch.Tensor:
    """PIL image -> uint8 (3, size, size): shorter side resized to ``size``, then centre crop."""
    from PIL import Image

    w, h = im.size
    s = size / min(w, h)
    im = im.resize((max(size, round(w * s)), max(size, round(h * s))), Image.BILINEAR)
    w, h = im.size
    left, top = (w - size) // 2, (h - size) // 2
    im = im.crop((left, top, left + size, top + size))
    return torch.from_numpy(np.asarray(im, dtype=np.uint8).copy()).permute(2, 0, 1)


def load_torchvision(name: str, root: str | os.PathLike, train: bool, download: bool = False) -> ImageSet:
    """CIFAR-10, CIFAR-100 or STL-10 (train: ``unlabeled``+``train`` is not merged; labelled split only).

    Downloads only when ``download=True``; otherwise a missing dataset is a clear error.
    """
    import torchvision

    makers = {
        "cifar10": lambda: torchvision.datasets.CIFAR10(root, train=train, download=download),
        "cifar100": lambda: torchvision.datasets.CIFAR100(root, train=train, download=download),
        "stl10": lambda: torchvision.datasets.STL10(root, split="train" if train else "test", download=download),
    }
    if name not in makers:
        raise ValueError(f"unknown torchvision dataset {name!r}; choose one of {sorted(makers)}.")
    try:
        ds = makers[name]()
    except RuntimeError as err:
        raise FileNotFoundError(
            f"{name} not found under {root} ({err}). Pass data.download=true to download it, "
            "or point data.root at a folder that holds it."
        ) from err
    if name == "stl10":
        images = torch.from_numpy(np.asarray(ds.data))
        labels = torch.from_numpy(np.asarray(ds.labels)).long()
    else:
        images = torch.from_numpy(np.asarray(ds.data)).permute(0, 3, 1, 2).contiguous()
        labels = torch.tensor(ds.targets, dtype=torch.long)
    return ImageSet(images, labels, tuple(ds.classes))


# ---------------------------------------------------------------------------------------------------
# A run's data, from its config
# ---------------------------------------------------------------------------------------------------


# Data sets whose loader comes from whoever registers it (:func:`register_data_set`): the study's Fashion-MNIST
# (``data.name=fashion_mnist``) registers itself when :mod:`ftcl_core.study` is imported; the library reads the shapes,
# image folders and torchvision's sets.
LOADERS: dict[str, Callable[[RunConfig], tuple[ImageSet, ImageSet]]] = {}


def register_data_set(name: str, load: Callable[[RunConfig], tuple[ImageSet, ImageSet]]) -> None:
    """Let ``load(cfg)`` give the train and held-out sets (both ``data.eval_split`` s) of ``data.name=name``: a name
    the config admits that the library does not draw or read itself (fashion_mnist, or a torchvision set's name
    to read it another way)."""
    own = ("shapes", "imagefolder")
    if name not in typing.get_args(DataSet) or name in own:
        raise ValueError(f"register_data_set: name={name!r} must be one of the config's data.name values other than "
                         f"{own} (the library's own): {[n for n in typing.get_args(DataSet) if n not in own]}.")
    if not callable(load):
        raise TypeError(f"register_data_set: load must be a function of the run's config giving (train, held-out) "
                        f"ImageSets, got {described(load)}.")
    LOADERS[name] = load


def _check_same_classes(root: str | os.PathLike, test_root: str | os.PathLike) -> None:
    """Without a class list the classes are ``root``'s folders; a class folder of ``test_root`` that ``root`` lacks
    would be dropped from the readouts without a word, so it is refused (with the fix) before anything is decoded."""
    test = Path(test_root)
    if not Path(root).is_dir() or not test.is_dir():
        return  # _list_image_folder says which folder is missing
    present = {p.name for p in Path(root).iterdir() if p.is_dir()}
    extra = sorted(p.name for p in test.iterdir() if p.is_dir() and p.name not in present)
    if extra:
        raise ValueError(f"data.test_root {test} holds {len(extra)} class folder(s) that data.root {root} lacks: "
                         f"{extra[:5]}{' ...' if len(extra) > 5 else ''}; their images would be left out of the "
                         "readouts. Add the classes to data.root, move them out of data.test_root, or name the classes "
                         "to use in data.class_list.")


def load_data(cfg: RunConfig) -> tuple[ImageSet, ImageSet]:
    """Train and held-out :class:`ImageSet` s for ``cfg.data``: the test set, or with ``data.eval_split=val``
    a validation set that is neither (for calibration, so that the test set never chooses a recipe)."""
    if not isinstance(cfg, RunConfig):
        raise TypeError(f"load_data: cfg must be a RunConfig (ftcl_core.config.load_config or as_config), got "
                        f"{described(cfg)}.")
    d = cfg.data
    if d.name in LOADERS:
        return LOADERS[d.name](cfg)
    if d.name == "fashion_mnist":
        raise ConfigError("data.name=fashion_mnist is read by the study: import ftcl_core.study first (python -m "
                          "ftcl_core does), which registers its loader.")
    if d.eval_split == "val":
        if d.name == "shapes":
            return shapes_validation(d.n_train, d.n_val, size=d.image_size, seed=cfg.seed, classes=d.classes,
                                     clutter=d.clutter)
        return hold_out(_load_train_test(cfg)[0], d.n_val)
    return _load_train_test(cfg)


def _load_train_test(cfg: RunConfig) -> tuple[ImageSet, ImageSet]:
    d = cfg.data
    if d.name == "shapes":
        return shapes_splits(d.n_train, d.n_test, size=d.image_size, seed=cfg.seed, classes=d.classes, clutter=d.clutter)
    if d.name == "imagefolder":
        classes = read_class_list(d.class_list) if d.class_list else None  # root, test_root: checked by the config
        if classes is None:
            _check_same_classes(d.root, d.test_root)
        kw = dict(max_per_class=d.max_per_class, workers=d.workers, cache=d.cache)
        train = load_image_folder(d.root, d.image_size, classes, **kw)
        return train, load_image_folder(d.test_root, d.image_size, list(train.classes), **kw)
    root = d.root or "datasets"  # cifar10 | cifar100 | stl10 (the config admits no other name)
    return load_torchvision(d.name, root, True, d.download), load_torchvision(d.name, root, False, d.download)


def load_data_rank0_first(cfg: RunConfig) -> tuple[ImageSet, ImageSet]:
    """Under torchrun rank 0 loads first (and fills ``data.cache``), the others then read what it wrote."""
    if not distributed.is_main():
        distributed.barrier()
    data = load_data(cfg)
    if distributed.is_main():
        distributed.barrier()
    return data
