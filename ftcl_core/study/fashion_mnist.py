"""Fashion-MNIST (Xiao et al. 2017): the study's real images offline, read from the original IDX files of Debian's
``dataset-fashion-mnist`` package (or torchvision's copy), for the diagnosis' check on real photos.

Importing :mod:`ftcl_core.study` registers :func:`load_splits` with the library's loader
(:func:`ftcl_core.data.register_data_set`), so a config with ``data.name=fashion_mnist`` trains; the library reads
only the shapes, image folders and torchvision's sets.  ``data.n_train`` / ``data.n_test`` take class-balanced
subsets of the 60 000 / 10 000 images; ``data.eval_split=val`` scores ``data.n_val`` other training images.
"""

from __future__ import annotations

import gzip
import math
import os
from pathlib import Path

import torch

from ftcl_core.config import RunConfig
from ftcl_core.data import ImageSet

FASHION_MNIST_CLASSES = ("t-shirt/top", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag",
                         "ankle boot")
DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
_IDX_FILES = {True: ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
              False: ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


def read_idx(path: str | os.PathLike) -> torch.Tensor:
    """An IDX file (LeCun's MNIST format, gzipped or not) as a uint8 tensor of its stated shape."""
    p = Path(path)
    raw = (gzip.open if p.suffix == ".gz" else open)(p, "rb").read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{p} is not an unsigned-byte IDX file (magic {raw[:4].hex()}); re-install or re-download it.")
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    body = raw[4 + 4 * dims:]
    if len(body) != math.prod(shape):  # either the body or the header's dimensions are not what was written
        what = "is cut short or its header is damaged" if len(body) < math.prod(shape) else "has a damaged header or extra bytes"
        raise ValueError(f"{p} holds {len(body)} bytes of data, its header says {shape}: the file {what}; "
                         "re-install or re-download it.")
    return torch.frombuffer(bytearray(body), dtype=torch.uint8).view(*shape)


def fashion_mnist_root(root: str | os.PathLike | None) -> Path | None:
    """Where the IDX files are: a given ``root`` is taken at its word (the files themselves, or torchvision's
    ``FashionMNIST/raw`` under it, and nowhere else); without one, the Debian package's folder, else
    ``datasets/FashionMNIST/raw``.  None when none of those holds all four files."""
    if root:
        candidates = [Path(root), Path(root) / "FashionMNIST" / "raw"]
    else:
        candidates = [DEBIAN_FASHION_MNIST, Path("datasets") / "FashionMNIST" / "raw"]
    for c in candidates:
        if all((c / f).is_file() or (c / f.removesuffix(".gz")).is_file() for f in (*_IDX_FILES[True], *_IDX_FILES[False])):
            return c
    return None


def load_fashion_mnist(root: str | os.PathLike | None, train: bool, size: int = 28, download: bool = False) -> ImageSet:
    """Fashion-MNIST (Xiao et al. 2017; 60 000 train / 10 000 test real 28x28 grayscale photos, 10 classes).

    Gray is replicated to three channels (the encoders take RGB) and resized to ``size`` when it differs from 28.
    Nothing is downloaded unless ``download=True`` (torchvision's downloader, into ``root`` or ``datasets/``).
    """
    found = fashion_mnist_root(root)
    if found is None and download:
        import torchvision

        target = Path(root or "datasets")
        torchvision.datasets.FashionMNIST(target, train=train, download=True)
        found = fashion_mnist_root(target)
    files = ", ".join(f for f in (*_IDX_FILES[True], *_IDX_FILES[False]))
    if found is None and root:
        raise FileNotFoundError(
            f"data.root={root} holds no Fashion-MNIST: expected its four IDX files ({files}; gzipped or not) in "
            f"{root} or {Path(root) / 'FashionMNIST' / 'raw'}. Point data.root at the folder that holds them, remove "
            "data.root to read an installed copy (apt-get install dataset-fashion-mnist), or pass data.download=true "
            "to fetch them into it.")
    if found is None:
        raise FileNotFoundError(
            f"Fashion-MNIST not found (data.root not given; looked in {DEBIAN_FASHION_MNIST} and "
            "datasets/FashionMNIST/raw). On Debian: `apt-get install dataset-fashion-mnist`; elsewhere pass "
            f"data.download=true to fetch it (torchvision), or point data.root at a folder holding {files}.")
    _say_once(f"ftcl_core: Fashion-MNIST read from {found.resolve()}" + ("" if root else " (data.root not given)"))

    def one(name: str) -> torch.Tensor:
        p = found / name
        return read_idx(p if p.is_file() else found / name.removesuffix(".gz"))

    images_file, labels_file = _IDX_FILES[train]
    images, labels = one(images_file), one(labels_file).long()
    if images.dim() != 3 or len(images) != len(labels):
        raise ValueError(f"{found}: {tuple(images.shape)} images against {len(labels)} labels; the files do not match.")
    x = images.unsqueeze(1)
    if size != x.shape[-1]:
        x = torch.nn.functional.interpolate(x.float(), size=(size, size), mode="bilinear", antialias=True,
                                            align_corners=False).round().clamp(0, 255).to(torch.uint8)
    return ImageSet(x.expand(-1, 3, -1, -1).contiguous(), labels, FASHION_MNIST_CLASSES)


_SAID: set[str] = set()


def _say_once(line: str) -> None:
    """Print ``line`` (stdout) the first time this process meets it: which copy of a data set a run reads."""
    if line not in _SAID:
        _SAID.add(line)
        print(line, flush=True)


def balanced_indices(labels: torch.Tensor, n: int, seed: int = 0) -> torch.Tensor:
    """Sorted indices of ``n`` items of ``labels``, as close to class-balanced as the classes allow, chosen by a
    fixed shuffle (``seed``); all of them when ``n >= len(labels)``."""
    if n >= len(labels):
        return torch.arange(len(labels))
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    classes = labels.unique().tolist()
    per_class = [order[labels[order] == c] for c in classes]
    quota = [n // len(classes) + (1 if i < n % len(classes) else 0) for i in range(len(classes))]
    return torch.cat([idx[:q] for q, idx in zip(quota, per_class)]).sort().values


def subset(data: ImageSet, idx: torch.Tensor) -> ImageSet:
    return ImageSet(data.images[idx], data.labels[idx], data.classes)


def balanced_subset(data: ImageSet, n: int, seed: int = 0) -> ImageSet:
    """:func:`balanced_indices` of ``data`` as an :class:`ImageSet` (``data`` itself when ``n >= len(data)``)."""
    return data if n >= len(data) else subset(data, balanced_indices(data.labels, n, seed))


def fashion_mnist_validation(train: ImageSet, n_train: int, n_val: int) -> tuple[ImageSet, ImageSet]:
    """The training subset of the reported runs, and ``n_val`` validation images from the *other* training images
    (so calibration trains on exactly what the test-scored runs train on, and never scores the test set)."""
    keep = balanced_indices(train.labels, n_train)
    rest = torch.ones(len(train), dtype=torch.bool)
    rest[keep] = False
    others = rest.nonzero().flatten()
    if len(others) == 0:
        raise ValueError(f"data.n_train={n_train} uses every training image; lower it to leave images for validation.")
    return subset(train, keep), subset(train, others[balanced_indices(train.labels[others], n_val, seed=1)])


def load_splits(cfg: RunConfig) -> tuple[ImageSet, ImageSet]:
    """The train and held-out sets of a ``data.name=fashion_mnist`` config (the loader the study registers)."""
    d = cfg.data
    train = load_fashion_mnist(d.root, True, d.image_size, d.download)
    if d.eval_split == "val":
        return fashion_mnist_validation(train, d.n_train, d.n_val)
    test = load_fashion_mnist(d.root, False, d.image_size, d.download)
    return balanced_subset(train, d.n_train), balanced_subset(test, d.n_test)
