"""The embedded shapes data and the offline loaders on fabricated files."""

import os

import numpy as np
import pytest
import torch
from PIL import Image

from ftcl_core.data import ImageSet, load_image_folder, load_torchvision, make_shapes, read_class_list, shapes_splits
from ftcl_core.shapes import PALETTE


def test_shapes_are_deterministic_balanced_and_uint8():
    a, b = make_shapes(200, seed=3), make_shapes(200, seed=3)
    assert torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels)
    assert a.images.dtype == torch.uint8 and a.images.shape == (200, 3, 32, 32)
    assert torch.bincount(a.labels).tolist() == [20] * 10
    assert not torch.equal(a.images, make_shapes(200, seed=4).images)


def test_train_and_test_splits_differ():
    tr, te = shapes_splits(100, 100)
    assert not torch.equal(tr.images, te.images)


def _tree(root, classes, n=2, size=20):
    for c in classes:
        (root / c).mkdir(parents=True)
        for i in range(n):
            arr = (np.random.default_rng(i).random((size, size + 5, 3)) * 255).astype(np.uint8)
            Image.fromarray(arr).save(root / c / f"{i}.png")


def test_image_folder_with_a_class_list(tmp_path):
    _tree(tmp_path / "train", ["n01", "n02", "n03"])
    (tmp_path / "list.txt").write_text("n03\nn01\n")
    ds = load_image_folder(tmp_path / "train", 16, read_class_list(tmp_path / "list.txt"))
    assert ds.images.shape == (4, 3, 16, 16) and ds.classes == ("n03", "n01")
    assert ds.labels.tolist() == [0, 0, 1, 1]


def test_imagenet100_list_ships_with_100_classes():
    assert len(read_class_list("data/imagenet100.txt")) == 100


def test_unknown_class_in_the_list_is_named(tmp_path):
    _tree(tmp_path, ["n01"])
    with pytest.raises(ValueError, match="n09"):
        load_image_folder(tmp_path, 16, ["n01", "n09"])


def test_missing_and_empty_data_dirs_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_image_folder(tmp_path / "nope", 16)
    (tmp_path / "empty" / "c").mkdir(parents=True)
    with pytest.raises(ValueError, match="holds no images"):
        load_image_folder(tmp_path / "empty", 16)


def test_corrupt_image_names_the_file(tmp_path):
    _tree(tmp_path, ["a"])
    (tmp_path / "a" / "bad.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="bad.png"):
        load_image_folder(tmp_path, 16)


def test_cifar_missing_offline_says_how_to_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="data.download=true"):
        load_torchvision("cifar10", tmp_path, train=True)


def test_cifar_loads_from_fabricated_files(tmp_path, monkeypatch):
    import pickle

    base = tmp_path / "cifar-10-batches-py"
    base.mkdir()
    data = np.random.default_rng(0).integers(0, 255, (10, 3072), dtype=np.uint8)
    for name in ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch"]:
        with open(base / name, "wb") as f:
            pickle.dump({"data": data, "labels": list(range(10))}, f)
    with open(base / "batches.meta", "wb") as f:
        pickle.dump({"label_names": [f"c{i}" for i in range(10)]}, f)
    import torchvision.datasets.cifar as tv_cifar

    # the fabricated files cannot match torchvision's md5 sums; everything else is the real loader
    monkeypatch.setattr(tv_cifar, "check_integrity", lambda *a, **k: True)
    monkeypatch.setattr(tv_cifar.CIFAR10, "_check_integrity", lambda self: True)
    ds = load_torchvision("cifar10", tmp_path, train=True)
    assert ds.images.shape == (50, 3, 32, 32) and ds.labels[:10].tolist() == list(range(10))


def test_imageset_validates():
    with pytest.raises(ValueError, match="uint8"):
        ImageSet(torch.zeros(2, 3, 4, 4), torch.zeros(2), ("a",))
    with pytest.raises(ValueError, match="empty"):
        ImageSet(torch.zeros(0, 3, 4, 4, dtype=torch.uint8), torch.zeros(0), ("a",))


def test_image_folder_decodes_in_workers_and_caches(tmp_path, monkeypatch):
    from PIL import Image

    from ftcl_core import data

    for c in ("a", "b"):
        (tmp_path / "tree" / c).mkdir(parents=True)
        for i in range(3):
            Image.new("RGB", (20 + i, 17), (40 * i, 90, 200)).save(tmp_path / "tree" / c / f"{i}.png")
    serial = load_image_folder(tmp_path / "tree", 8)
    parallel = load_image_folder(tmp_path / "tree", 8, workers=2, cache=tmp_path / "cache")
    assert torch.equal(serial.images, parallel.images) and torch.equal(serial.labels, parallel.labels)
    assert [f.suffix for f in sorted((tmp_path / "cache").iterdir())] == [".json", ".npy"]

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded again although cached")

    monkeypatch.setattr(data, "_resize_center", no_decoding)
    opened = []
    load = np.load
    monkeypatch.setattr(np, "load", lambda *a, **k: opened.append(load(*a, **k)) or opened[-1])
    again = load_image_folder(tmp_path / "tree", 8, cache=tmp_path / "cache")
    assert torch.equal(again.images, serial.images) and again.classes == ("a", "b")
    assert torch.equal(again.labels, serial.labels)
    assert [type(a) for a in opened] == [np.memmap]  # read from disk as indexed, not loaded whole


def test_an_interrupted_cache_build_leaves_no_cache_and_a_full_disk_is_refused(tmp_path, monkeypatch):
    from PIL import Image

    from ftcl_core import data

    for c in ("a", "b"):
        (tmp_path / "tree" / c).mkdir(parents=True)
        for i in range(2):
            Image.new("RGB", (30, 20), (60 * i, 10, 99)).save(tmp_path / "tree" / c / f"{i}.jpg")

    def interrupted(out, *args):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(data, "_decode_into", interrupted)
        with pytest.raises(KeyboardInterrupt):
            load_image_folder(tmp_path / "tree", 8, cache=tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("*px_4_????????????.npy"))  # only the partial file, never used
    partial = next((tmp_path / "cache").glob("*.partial-*.npy"))
    partial.rename(partial.with_name(partial.name.replace(f"-{os.getpid()}.", "-999999999.")))  # a dead writer's
    assert len(load_image_folder(tmp_path / "tree", 8, cache=tmp_path / "cache")) == 4  # rebuilt, whole
    assert not list((tmp_path / "cache").glob("*.partial-*"))  # the dead build's partial file is gone
    assert data.cache_bytes(126_689, 256) == 126_689 * 256 * 256 * 3  # ImageNet-100's training set at the paper's size
    monkeypatch.setattr("shutil.disk_usage", lambda p: type("Usage", (), {"free": 100})())
    with pytest.raises(OSError, match=r"needs 0.0 GB in .* which has 0.0 GB free.*lower data.image_size"):
        load_image_folder(tmp_path / "tree", 16, cache=tmp_path / "cache2")
    assert not (tmp_path / "cache2").exists() or not list((tmp_path / "cache2").iterdir())


def test_a_class_folder_without_images_is_named(tmp_path):
    _tree(tmp_path / "train", ["n01", "n02"])
    (tmp_path / "train" / "n03").mkdir()
    with pytest.raises(ValueError, match=r"hold no images: \['n03'\]"):
        load_image_folder(tmp_path / "train", 16)


def test_image_folder_without_a_held_out_folder_is_refused():
    from ftcl_core.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="data.test_root"):
        load_config("configs/smoke_moco_v2.yaml", ["data.name=imagefolder", "data.root=/somewhere"])


def test_shape_classes_add_a_fill_and_leave_the_ten_class_set_unchanged():
    ten, thirty = make_shapes(300, seed=5), make_shapes(300, seed=5, classes=30)
    assert len(thirty.classes) == 30 and thirty.classes[:10] == tuple(f"solid {c}" for c in ten.classes)
    assert torch.bincount(thirty.labels).tolist() == [10] * 30
    solid = thirty.labels < 10  # the solid images are their 10-class twins, pixel for pixel
    assert torch.equal(thirty.images[solid], ten.images[solid])
    assert not torch.equal(thirty.images[~solid], ten.images[~solid])
    with pytest.raises(ValueError, match="choose 10, 20 or 30"):
        make_shapes(10, classes=40)


def test_colour_alone_does_not_tell_the_class_of_thirty():
    """A supervised linear probe on which palette colours an image shows (its foreground and background pair,
    without layout or area) stays at chance on held-out images: colour is drawn independently of shape and
    fill.  (Cruder colour statistics such as each channel's spread also carry the foreground's area, which
    the fill changes; that is shape, not colour.)"""
    data = make_shapes(3000, seed=0, classes=30)
    pixels = data.images.float().permute(0, 2, 3, 1).reshape(len(data), -1, 3) / 255
    nearest = ((pixels.unsqueeze(2) - PALETTE) ** 2).sum(3).argmin(2)  # (N, H*W): the nearest palette colour
    share = torch.nn.functional.one_hot(nearest, len(PALETTE)).float().mean(1)
    feats = (share > 0.02).float()  # the colours present
    tr, te = slice(0, 2000), slice(2000, None)
    torch.manual_seed(0)
    probe = torch.nn.Linear(feats.shape[1], 30)
    opt = torch.optim.Adam(probe.parameters(), lr=0.05)
    for _ in range(300):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(probe(feats[tr]), data.labels[tr]).backward()
        opt.step()
    acc = (probe(feats[te]).argmax(1) == data.labels[te]).float().mean().item()
    assert acc < 1 / 30 + 0.03, f"the colours present read the class: {acc:.3f}"
    assert (feats.sum(1) == 2).float().mean() > 0.9  # the probe does see each image's colour pair


def test_data_classes_reaches_the_shapes_and_nothing_else():
    from ftcl_core.config import ConfigError, load_config
    from ftcl_core.data import load_data

    cfg = load_config("configs/smoke_moco_v2.yaml", ["data.classes=30", "data.n_train=300", "data.n_test=30"])
    train, test = load_data(cfg)
    assert len(train.classes) == len(test.classes) == 30 and int(train.labels.max()) == 29
    with pytest.raises(ConfigError, match="choose 10, 20 or 30"):
        load_config("configs/smoke_moco_v2.yaml", ["data.classes=40"])
    with pytest.raises(ConfigError, match="applies to the embedded shapes only"):
        load_config("configs/cpu_fmnist_moco_v1.yaml", ["data.classes=30"])


def test_the_imagenet_100_recipes_train_at_the_papers_resolution_unless_named_otherwise():
    """224-px crops from a 256-px cache (the paper's), or 128 px in a file that says so in its name; every one of
    them states its resolution and what its cache takes."""
    from pathlib import Path

    from ftcl_core.config import load_config

    files = sorted(Path("configs").glob("gpu_in100_*.yaml"))
    assert len(files) >= 8
    for f in files:
        cfg, text = load_config(f), f.read_text()
        want = (160, 128) if f.stem.endswith("_128px") else (256, 224)
        assert (cfg.data.image_size, cfg.augment.out_size) == want, f
        assert "# Resolution:" in text and " GB" in text, f
        assert cfg.eval.raw_pixels is False, f  # a raw-pixel readout of ImageNet-100 would need ~76 GB of float32


def test_clutter_adds_unlabelled_distractors_and_leaves_the_set_without_it_unchanged():
    from ftcl_core.config import ConfigError, load_config
    from ftcl_core.data import load_data

    plain, cluttered = make_shapes(200, seed=3, classes=30), make_shapes(200, seed=3, classes=30, clutter=2)
    assert torch.equal(plain.labels, cluttered.labels) and plain.classes == cluttered.classes
    assert torch.equal(make_shapes(200, seed=3, classes=30, clutter=0).images, plain.images)
    changed = (plain.images != cluttered.images).flatten(1).any(1).float().mean()
    assert changed > 0.9  # nearly every image holds a visible distractor
    assert torch.equal(make_shapes(200, seed=3, classes=30, clutter=2).images, cluttered.images)  # deterministic
    with pytest.raises(ValueError, match="clutter"):
        make_shapes(10, clutter=9)
    cfg = load_config("configs/smoke_moco_v2.yaml", ["data.clutter=2", "data.n_train=300", "data.n_test=30"])
    train, _ = load_data(cfg)
    assert torch.equal(train.images, make_shapes(300, size=cfg.data.image_size, seed=0, clutter=2).images)
    with pytest.raises(ConfigError, match="data.clutter"):
        load_config("configs/smoke_moco_v2.yaml", ["data.clutter=-1"])
    with pytest.raises(ConfigError, match="embedded shapes only"):
        load_config("configs/cpu_fmnist_moco_v1.yaml", ["data.clutter=1"])
