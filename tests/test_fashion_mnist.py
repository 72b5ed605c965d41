"""Fashion-MNIST from its IDX files: fabricated files for the loader's logic, the real ones when installed."""

import gzip

import pytest
import torch

from ftcl_core.config import load_config
from ftcl_core.study.fashion_mnist import (
    DEBIAN_FASHION_MNIST,
    balanced_indices,
    fashion_mnist_validation,
    load_fashion_mnist,
    read_idx,
)


def write_idx(path, array: torch.Tensor, gz: bool = True) -> None:
    head = bytes([0, 0, 0x08, array.dim()]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    data = head + array.to(torch.uint8).numpy().tobytes()
    (gzip.open if gz else open)(path, "wb").write(data)


def fabricate(folder, n_train=40, n_test=20, gz=True):
    folder.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        suffix = ".gz" if gz else ""
        write_idx(folder / f"{prefix}-images-idx3-ubyte{suffix}", torch.randint(0, 256, (n, 28, 28), generator=g), gz)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte{suffix}", torch.arange(n) % 10, gz)


@pytest.mark.parametrize("gz", [True, False])
def test_loads_fabricated_idx_files_as_three_channel_uint8(tmp_path, gz):
    fabricate(tmp_path, gz=gz)
    train = load_fashion_mnist(tmp_path, True)
    assert train.images.shape == (40, 3, 28, 28) and train.images.dtype == torch.uint8
    assert torch.equal(train.images[:, 0], train.images[:, 2]) and train.labels[:10].tolist() == list(range(10))
    raw = read_idx(tmp_path / ("train-images-idx3-ubyte" + (".gz" if gz else "")))
    assert torch.equal(train.images[:, 1], raw)
    assert load_fashion_mnist(tmp_path, False, size=32).images.shape == (20, 3, 32, 32)


def test_torchvision_layout_under_the_root_is_found(tmp_path):
    fabricate(tmp_path / "FashionMNIST" / "raw")
    assert len(load_fashion_mnist(tmp_path, True)) == 40


def test_missing_and_damaged_files_are_clear_errors(tmp_path, monkeypatch):
    from ftcl_core.study import fashion_mnist

    monkeypatch.setattr(fashion_mnist, "DEBIAN_FASHION_MNIST", tmp_path / "nowhere")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="apt-get install dataset-fashion-mnist.*data.download=true"):
        load_fashion_mnist(tmp_path / "empty", True)
    fabricate(tmp_path / "bad", gz=False)
    path = tmp_path / "bad" / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(ValueError, match="cut short"):
        load_fashion_mnist(tmp_path / "bad", True)
    path.write_bytes(b"\x00\x00\x0d\x03" + bytes(20))
    with pytest.raises(ValueError, match="not an unsigned-byte IDX file"):
        read_idx(path)


def test_subsets_are_balanced_and_validation_is_outside_the_training_subset():
    labels = torch.arange(1000) % 10
    idx = balanced_indices(labels, 95)
    assert len(idx) == 95 and labels[idx].bincount().tolist() == [10] * 5 + [9] * 5
    assert torch.equal(idx, balanced_indices(labels, 95))  # fixed
    from ftcl_core.data import ImageSet

    data = ImageSet(torch.arange(1000, dtype=torch.uint8).view(-1, 1, 1, 1).expand(-1, 3, 2, 2).contiguous()
                    % 251, labels, tuple(map(str, range(10))))
    data.images[:, 0, 0, 0] = torch.arange(1000) % 256
    data.images[:, 0, 0, 1] = torch.arange(1000) // 256
    train, val = fashion_mnist_validation(data, 600, 200)
    key = lambda s: {(int(a), int(b)) for a, b in zip(s.images[:, 0, 0, 0], s.images[:, 0, 0, 1])}  # noqa: E731
    assert len(train) == 600 and len(val) == 200 and not key(train) & key(val)


def test_the_fmnist_configs_validate():
    for v in ("v1", "v2"):
        cfg = load_config(f"configs/cpu_fmnist_moco_{v}.yaml")
        assert cfg.data.name == "fashion_mnist" and cfg.augment.gray_p == 0


@pytest.mark.skipif(not DEBIAN_FASHION_MNIST.is_dir(), reason="dataset-fashion-mnist is not installed")
def test_real_fashion_mnist_through_the_training_loader():
    import ftcl_core.study  # noqa: F401  (registers the loader of data.name=fashion_mnist)
    from ftcl_core.data import load_data

    cfg = load_config("configs/cpu_fmnist_moco_v1.yaml", ["data.n_train=300", "data.n_test=200", "moco.queue_size=256"])
    train, test = load_data(cfg)
    assert len(train) == 300 and len(test) == 200 and train.labels.bincount().tolist() == [30] * 10
    assert 40 < float(train.images.float().mean()) < 110  # real photos: mostly dark background, bright garments


def test_the_study_registers_the_loader_and_the_library_refuses_the_set_without_it():
    """Like the MoCo variants: the library names ``fashion_mnist`` in its config but reads it only through the loader
    the study registers (:func:`ftcl_core.data.register_data_set`)."""
    import subprocess
    import sys
    from pathlib import Path

    refuse = ("from ftcl_core.config import ConfigError, load_config\nfrom ftcl_core.data import load_data\n"
              "try:\n    load_data(load_config('configs/cpu_fmnist_moco_v2.yaml'))\n"
              "except ConfigError as err:\n    print('refused', 'ftcl_core.study' in str(err))\n")
    out = subprocess.run([sys.executable, "-c", refuse], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.stdout.strip() == "refused True"

    import ftcl_core.study  # noqa: F401
    from ftcl_core import data
    from ftcl_core.study.fashion_mnist import load_splits

    assert data.LOADERS["fashion_mnist"] is load_splits
