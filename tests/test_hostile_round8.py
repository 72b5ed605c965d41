"""Issue 64, what the seventh trial left (9 of 27 at 584e5d0, none a traceback or data loss): reading commands that
write empty results from a store of runs a sweep did not place, a report parameter the smoke profile overrode, a
held-out class dropped without a word, ``train``'s first line said before a refusal that contradicts it,
``FTCL_RUNS_ROOT`` naming a file, and an override with no value.  One test a class."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from test_hostile_inputs import assert_one_line, cli, own_registry  # noqa: F401  (own_registry: autouse)

from ftcl_core.__main__ import EXIT_ERROR, run
from ftcl_core.config import ConfigError, load_config
from ftcl_core.data import load_data
from ftcl_core.study import experiment_file, gradient_algebra
from ftcl_core.training import train

ROOT = Path(__file__).resolve().parent.parent
SMOKE = "configs/smoke_moco_v2.yaml"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A complete one-epoch smoke run."""
    out = tmp_path_factory.mktemp("finished") / "run"
    train(load_config(ROOT / SMOKE, ["train.epochs=1"]), out, progress=False)
    return out


@pytest.mark.parametrize("command", ["summary", "calibration"])
def test_a_store_of_runs_no_experiment_file_places_writes_nothing(capsys, tmp_path, monkeypatch, finished, command):
    shutil.copytree(finished, tmp_path / "store" / "smoke" / "mine" / "seed0")  # trained with train --out, elsewhere
    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "store"))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, err = cli(capsys, command, "--profile", "smoke")
    assert_one_line(code, err, EXIT_ERROR, "1 complete run", "sweep")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("points", [0, 1, 2.5, True, "21", 10_000])
def test_the_contraction_figure_refuses_a_count_that_is_no_grid(points):
    with pytest.raises(ValueError, match="points="):
        gradient_algebra.rho_grid(points)


def test_the_contraction_figure_honours_the_count_asked_for():
    grid = gradient_algebra.rho_grid(4)
    assert np.allclose(grid, [-0.5, 0.0, 0.5, 1.0])
    source = (ROOT / "book" / "src" / "07b_gradient.py").read_text()  # no profile overrides the parameter
    assert "rho_grid(points)" in source and "points if profile" not in source


def _folder(root: Path, classes: list[str]) -> None:
    for c in classes:
        (root / c).mkdir(parents=True)
        for i in range(2):
            arr = (np.random.default_rng(i).random((8, 8, 3)) * 255).astype(np.uint8)
            Image.fromarray(arr).save(root / c / f"{i}.png")


def test_a_held_out_class_the_training_folder_lacks_is_refused(tmp_path):
    _folder(tmp_path / "train", ["cat", "dog"])
    _folder(tmp_path / "val", ["cat", "dog", "eel"])
    keys = ["data.name=imagefolder", f"data.root={tmp_path / 'train'}", f"data.test_root={tmp_path / 'val'}",
            "data.image_size=8", "augment.out_size=8"]
    with pytest.raises(ValueError, match=r"eel.*class_list"):
        load_data(load_config(ROOT / SMOKE, keys))
    (tmp_path / "list.txt").write_text("cat\ndog\n")  # named classes: the others are left out knowingly
    train_set, test_set = load_data(load_config(ROOT / SMOKE, [*keys, f"data.class_list={tmp_path / 'list.txt'}"]))
    assert train_set.classes == test_set.classes == ("cat", "dog") and len(test_set.labels) == 4


def test_the_first_line_is_never_said_before_a_refusal_that_contradicts_it(capsys, tmp_path, finished):
    (tmp_path / "afile").write_text("mine")
    for out, extra in ((tmp_path / "afile" / "run", []), (finished, ["seed=3"]), (finished, ["moco.tau=0.5"])):
        code = run(["train", SMOKE, "train.epochs=1", *extra, "--out", str(out)])
        got = capsys.readouterr()
        assert_one_line(code, got.err, EXIT_ERROR, "--out" if out != finished else "another config"
                        if extra != ["seed=3"] else "seed")
        assert got.out == "", got.out  # no "training into" nor "holds a complete run" above the refusal
    code = run(["train", SMOKE, "train.epochs=1", "--out", str(finished)])
    got = capsys.readouterr()
    assert code == 0 and got.out.startswith(f"{finished} holds a complete run")


def test_a_runs_root_that_is_a_file_is_named_as_such(capsys, tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("mine")
    for env in ("afile", "afile/store"):
        monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / env))
        with pytest.raises(ConfigError, match="FTCL_RUNS_ROOT=.*a file"):
            experiment_file.profile_root("smoke")
        code, err = cli(capsys, "sweep", "experiments/table1_momentum.yaml", "--profile", "smoke", "--seeds", "0")
        line = assert_one_line(code, err, EXIT_ERROR, "FTCL_RUNS_ROOT")
        assert "--out" not in line
    assert (tmp_path / "afile").read_text() == "mine"


@pytest.mark.parametrize("override", ["device=", "seed= ", "data.root="])
def test_an_override_without_a_value_is_refused(capsys, tmp_path, override):
    code, err = cli(capsys, "train", SMOKE, override, "--out", str(tmp_path / "run"))
    assert_one_line(code, err, EXIT_ERROR, "no value", "=null")
    assert not (tmp_path / "run").exists()
