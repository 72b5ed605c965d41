"""Issue 64, the nineteenth trial (a helper at 75000ab: T2 D2 N5 U4; all 9 interrupt/resume pairs matched exactly):
the command line's cases first (an FT arm whose reference lost its readouts labelled "baseline", a calibrated sweep
that moved an external store's runs into the checkout, a report's mapping parameter checked only inside the kernel,
screen's switch-on step), then the public library's (uint8 rows read as masks, a CUDA device without a GPU, tensor
temperatures, SimCLR's FT timing keys, a target network that is its online one, a kNN k past the training set,
repeated rows, a cache folder named as a cache file, a class list that is a folder). Each fails at 75000ab."""

from __future__ import annotations

import pytest
from test_experiments import _records

from ftcl_core.study import experiment_file, table_verdicts


def test_a_claim_whose_reference_has_no_readouts_reads_not_run_never_baseline(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text("table: T7\nbase: {cpu: configs/cpu_moco_v1.yaml}\nsettings:\n  base: {}\n  a: {}\n"
                 "paper: {base: 70.0, a: 72.0}\n")
    rows = table_verdicts.table_rows(experiment_file.Experiment.load(f), _records({"a": [60, 61, 62]}))
    assert [(r["setting"], r["verdict"], r["reference"]) for r in rows] == [("a", "not run", "base")]
    assert table_verdicts.tally(rows)["all"]["ft"] == dict.fromkeys(table_verdicts.verdicts.TALLY_WORDS, 0)


def test_a_calibrated_switch_keeps_an_external_stores_runs_in_that_store(tmp_path, monkeypatch):
    from ftcl_core.runs import write_yaml
    from ftcl_core.study import store, sweeps

    monkeypatch.setenv("FTCL_RUNS_ROOT", str(tmp_path / "runs"))
    exp_file = tmp_path / "t.yaml"
    exp_file.write_text("table: HC\ntitle: t\nbase: {cpu: configs/cpu_moco_v1.yaml}\nsettings:\n  s: {moco.momentum: 0.9}\n")
    exp = experiment_file.Experiment.load(exp_file)
    d = experiment_file.run_dir(exp, "s", 0, "cpu")
    d.mkdir(parents=True)
    write_yaml(d / "config.yaml", experiment_file.resolve("configs/cpu_moco_v1.yaml", exp.overrides("s", 0), "cpu").to_dict())
    (d / "eval.json").write_text("{}")
    moved = sweeps.switch_to_calibrated(exp_file)
    assert moved == [tmp_path / "runs" / store.RECIPE_RECORD.parent.name / "HC" / "s" / "seed0"]
    assert (moved[0] / "config.yaml").is_file() and not (store.RECIPE_RECORD.parent / "HC").exists()


@pytest.mark.parametrize("chapter, name, value, kind", [
    ("book/10_methods.ipynb", "settings", [1], "mapping of lists"),
    ("book/10_methods.ipynb", "settings", {"experiments/table7_simclr.yaml": "simclr +pos"}, "mapping of lists"),
    ("book/10_methods.ipynb", "method_files", [0, 1], "list of words"),
    ("book/05_momentum.ipynb", "momenta", ["a"], "list of numbers"),
    ("book/07b_gradient.ipynb", "points", "many", "number"),
])
def test_a_report_parameter_of_the_wrong_kind_is_refused_before_a_kernel_starts(tmp_path, chapter, name, value, kind):
    import time

    from ftcl_core.pages.report import ReportError, report

    start = time.perf_counter()
    with pytest.raises(ReportError, match=f"is a {kind}; write it as one, e.g. -p {name} ") as err:
        report(chapter, tmp_path / "page.html", {name: value})
    assert time.perf_counter() - start < 5 and not list(tmp_path.iterdir())
    example = str(err.value).split("e.g. ")[-1]  # of the parameter's own kind: file names for method_files
    assert name != "method_files" or example.startswith('-p method_files "[experiments/')


def test_screen_names_the_real_switch_step_and_never_asks_past_the_whole_run():
    import numpy as np

    from ftcl_core.config import load_config
    from ftcl_core.study.cli import _screen_prediction

    five = {"epoch": np.zeros(5), "neg_mean": np.zeros(5)}  # a screen shorter than an epoch of 8 steps
    long = load_config("configs/smoke_moco_v2.yaml", ["ft.pos=true", "ft.start_epoch=1", "train.epochs=20"])
    assert "needs --steps 108 (100 steps after FT switches on at step 8, epoch 1)" in _screen_prediction(long, five)
    whole = load_config("configs/smoke_moco_v2.yaml", ["ft.pos=true", "ft.start_epoch=1"])  # 2 epochs, 16 steps
    said = _screen_prediction(whole, {"epoch": np.repeat([0, 1], 8), "neg_mean": np.zeros(16)})
    assert "--steps" not in said and "raise train.epochs to 14 or more" in said


# ---- the public library ---------------------------------------------------------------------------------------------

def _unit(n: int, c: int, seed: int = 0):
    import torch
    import torch.nn.functional as F

    return F.normalize(torch.randn(n, c, generator=torch.Generator().manual_seed(seed)), dim=1)


def test_uint8_rows_and_permutations_are_refused_not_read_as_masks():
    import torch

    from ftcl_core import batch_losses, losses, transforms
    from ftcl_core.ft import FTConfig

    with pytest.raises(TypeError, match="uint8 reads as a mask"):
        batch_losses.other_sample_mask(torch.arange(4, dtype=torch.uint8), 8)
    with pytest.raises(TypeError, match="uint8 reads as a mask"):
        transforms.interpolate_negatives(_unit(64, 16), 0.5, torch.arange(64, dtype=torch.uint8))
    q, k = _unit(8, 16), _unit(8, 16, 1)
    with pytest.raises(TypeError, match="uint8 reads as a mask"):
        losses.positive_ft(q, k, FTConfig(pos=True, granularity="sample"), torch.Generator(),
                           rows=torch.full((8,), 1, dtype=torch.uint8), n_global=8)
    as_int8 = losses.positive_ft(q, k, FTConfig(pos=True), torch.Generator().manual_seed(0),
                                 rows=torch.arange(8, dtype=torch.int8), n_global=8)  # a signed index: read as one
    as_long = losses.positive_ft(q, k, FTConfig(pos=True), torch.Generator().manual_seed(0), rows=torch.arange(8),
                                 n_global=8)
    assert all(torch.equal(a, b) for a, b in zip(as_int8, as_long))


def test_repeated_global_rows_are_refused():
    import torch

    from ftcl_core import batch_losses, losses
    from ftcl_core.ft import FTConfig

    with pytest.raises(ValueError, match="repeat a global index"):
        batch_losses.other_sample_mask(torch.tensor([0, 0, 1, 1]), 8)
    with pytest.raises(ValueError, match="repeat a global index"):
        losses.moco_ft_logits(_unit(8, 16), _unit(8, 16, 1), _unit(32, 16, 2), FTConfig(pos=True), torch.Generator(),
                              True, torch.zeros(8, dtype=torch.long), 8)


def test_extract_features_on_a_cuda_device_this_machine_lacks_says_so():
    import torch

    from ftcl_core.augment import moco_v2
    from ftcl_core.evaluation import extract_features
    from ftcl_core.models import build_encoder

    images = torch.zeros(2, 3, 32, 32, dtype=torch.uint8)
    with pytest.raises(ValueError, match="is not a device"):
        extract_features(build_encoder("resnet10_w16", 8), images, moco_v2(), device="gpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device is visible"):
            extract_features(build_encoder("resnet10_w16", 8), images, moco_v2(), device="cuda")


@pytest.mark.parametrize("tau", [-1.0, float("nan"), 1e-9])
def test_a_cpu_tensor_temperature_out_of_range_is_refused(tau):
    import torch

    from ftcl_core import ft

    q, k, queue = _unit(8, 16), _unit(8, 16, 1), _unit(32, 16, 2)
    with pytest.raises(ValueError, match="temperature"):
        ft.logits(q, k, queue, ft.FTConfig(), torch.Generator(), tau=torch.tensor(tau))
    learnable = torch.tensor(0.2, requires_grad=True)  # a learnable temperature still trains
    ft.info_nce(ft.logits(q, k, queue, ft.FTConfig(), torch.Generator(), tau=learnable)).backward()
    assert learnable.grad is not None


@pytest.mark.parametrize("when", [{"start_epoch": 5}, {"pos_gate": 0.5}, {"start": "auto"}])
def test_one_step_refuses_an_ftconfig_that_says_when_ft_acts(when):
    import torch

    from ftcl_core import losses
    from ftcl_core.batch_losses import simclr_ft_logits
    from ftcl_core.study.config_keys import FTConfig  # the library's, with the study's when-key ft.pos_gate

    cfg = FTConfig(pos=True, **when)
    z1, z2 = _unit(6, 16), _unit(6, 16, 1)
    with pytest.raises(ValueError, match="would be ignored: pass ft.step_only"):
        simclr_ft_logits(z1, z2, z1, z2, torch.arange(6), cfg, torch.Generator())
    with pytest.raises(ValueError, match="would be ignored: pass ft.step_only"):
        losses.moco_ft_logits(z1, z2, _unit(32, 16, 2), cfg, torch.Generator())
    assert cfg.step_only() == FTConfig(pos=True)
    simclr_ft_logits(z1, z2, z1, z2, torch.arange(6), cfg.step_only(), torch.Generator())


def test_a_run_steps_with_its_ft_config_step_only():
    from ftcl_core.config import load_config
    from ftcl_core.methods.base import StepContext

    cfg = load_config("configs/smoke_simclr.yaml", ["ft.pos=true", "ft.start_epoch=1"])
    import torch

    assert StepContext.from_config(cfg, torch.Generator()).ft == cfg.ft.step_only()


def test_ema_update_refuses_a_target_that_is_its_online_network():
    from ftcl_core.models import ema_update, frozen_copy, mlp

    online = mlp(4, 8, 2)
    with pytest.raises(ValueError, match="frozen_copy"):
        ema_update(online, online, 0.9)
    ema_update(frozen_copy(online), online, 0.9)


def test_knn_refuses_more_neighbours_than_training_images():
    import torch

    from ftcl_core.evaluation import knn_top1

    feats, labels = _unit(20, 8), torch.arange(20) % 4
    with pytest.raises(ValueError, match="k=500 neighbours asked of 20 training images"):
        knn_top1(feats, labels, feats, labels, k=500)
    assert 0 <= knn_top1(feats, labels, feats, labels, k=20) <= 100


def test_open_cache_on_the_cache_folder_names_a_file_in_it_and_never_says_delete_the_folder(tmp_path):
    import numpy as np

    from ftcl_core.data import open_cache, read_class_list

    (tmp_path / "tree_32px_4_abc.npy").write_bytes(b"")
    with pytest.raises(ValueError, match="is a folder; name one cache file in it") as err:
        open_cache(tmp_path)
    assert "tree_32px_4_abc.npy" in str(err.value) and "Delete" not in str(err.value)
    np.save(tmp_path / "t_32px_2_x.npy", np.zeros((2, 3, 32, 32), dtype=np.uint8))
    (tmp_path / "t_32px_2_x.json").write_text('{"labels": [0, 1], "classes": ["a", "b"]}')
    assert len(open_cache(tmp_path / "t_32px_2_x")) == 2  # the name without .npy reads too
    with pytest.raises(ValueError, match="is a folder: name a text file"):
        read_class_list(tmp_path)
