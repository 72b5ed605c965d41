"""Datasets: loaders for real image data (image folders, torchvision's sets; the study adds Fashion-MNIST,
:mod:`ftcl_core.study.fashion_mnist`, by :func:`register_data_set`), the split of a validation set, and the one entry
the runs call, :func:`load_data`. The embedded shapes are drawn in :mod:`ftcl_core.shapes` and re-exported here.

Every loader returns a :class:`ImageSet` (:mod:`ftcl_core.image_set`): uint8 images ``(N, 3, H, W)`` of one fixed size
plus integer labels.  Augmentation happens afterwards, batched on tensors (:mod:`ftcl_core.augment`), so the same
code path serves the CPU and a GPU.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import typing
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from ftcl_core import distributed
from ftcl_core.arguments import check_counts, described
from ftcl_core.config import ConfigError, DataSet, RunConfig
from ftcl_core.image_set import ImageSet
from ftcl_core.runs import write_json
from ftcl_core.shapes import (  # the embedded data, re-exported: ftcl_core.data is where the runs read it
    make_shapes,
    shape_class_names,
    shapes_splits,
    shapes_validation,
)

# the module's public names: each checks its arguments and names the fix; the rest are building blocks that
# take what these pass them
__all__ = ["ImageSet", "cache_bytes", "hold_out", "load_data", "load_image_folder", "load_torchvision", "make_shapes",
           "open_cache", "read_class_list", "register_data_set", "shape_class_names", "shapes_splits",
           "shapes_validation"]


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
    if p.is_dir():
        raise ValueError(f"class list {p} is a folder: name a text file of class names (WordNet ids), one a line, e.g. "
                         "data/imagenet100.txt.")
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
    if path.is_dir():  # the folder passed as load_image_folder(cache=...): it holds one cache per tree and size
        held = sorted(p.name for p in path.glob("*_*px_*.npy"))[:3]
        raise ValueError(f"open_cache: {path} is a folder; name one cache file in it (<tree>_<size>px_<n>_<hash>.npy)"
                         + (f", e.g. {path / held[0]}" if held else ": it holds none") + ".")
    if not path.exists() and path.with_suffix(".npy").is_file():
        path = path.with_suffix(".npy")  # the cache's name without its .npy
    try:
        meta = json.loads(path.with_suffix(".json").read_text())
        images = torch.from_numpy(np.load(path, mmap_mode="c"))
    except (OSError, ValueError, TypeError) as err:  # missing, not .npy, a pickle
        raise ValueError(f"open_cache: {path} is not a cache load_image_folder wrote (a <tree>_<size>px_<n>_<hash>.npy "
                         f"beside its .json): {type(err).__name__}: {' '.join(str(err).split())[:120]}. Name such a "
                         "file; if it is damaged, delete that .npy and its .json, and load_image_folder writes them "
                         "again.") from None
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
