"""Issue 64, the twentieth trial (a helper at 91d0e5e: T3 D2 N3 U7; all 9 interrupt/resume pairs matched exactly): a
timm encoder that takes one input size (it crashed after config.yaml was written), swav.epsilon below Sinkhorn's
bound, predict on runs too short to read, report's 1e9, sweep --parallel's summaries (tests/test_experiments.py), a
command into a folder another process trains; in the library, readouts of features that carry gradients or one
class, augment's rows as a list, one-dimensional features in ft.logits, swav_loss's temperature message, encoder
names with no close match, SplitBatchNorm1d's shape. Each fails at 91d0e5e."""

from __future__ import annotations

import fcntl

import pytest
import torch
import torch.nn.functional as F
from test_hostile_inputs import assert_one_line

from ftcl_core.__main__ import run
from ftcl_core.config import ConfigError, load_config

TINY = ["train.epochs=1", "data.n_train=320", "data.n_test=64", "train.batch_size=32", "eval.knn_k=20"]


def test_a_timm_encoder_that_takes_one_input_size_is_refused_before_anything_is_written(tmp_path, capfd):
    out = tmp_path / "vit"
    code = run(["train", "configs/smoke_moco_v2.yaml", *TINY, "model.bn_splits=1",
                "model.encoder=timm:vit_tiny_patch16_224", "--out", str(out)])
    said = capfd.readouterr()
    assert_one_line(code, said.err, 2, "does not take augment.out_size=16-px views")
    assert not out.exists()
    assert "training into" not in said.out  # the refusal comes alone


def test_swav_epsilon_below_sinkhorns_bound_is_refused_by_the_config():
    with pytest.raises(ConfigError, match=r"swav.epsilon=1e-06 must be at least 0.0001"):
        load_config("configs/smoke_swav.yaml", ["swav.epsilon=1e-6"])


def test_predict_says_its_paired_runs_are_too_short_rather_than_absent(monkeypatch):
    from ftcl_core.study import predict

    def stored(profile, window=predict.WINDOW, dedupe=True, short=None):
        short.extend(["a/seed0", "a/seed1"])
        return []

    monkeypatch.setattr(predict, "stored_examples", stored)
    with pytest.raises(ConfigError, match=f"2 paired FT runs of the smoke profile are stored, each shorter than the "
                                          f"{predict.WINDOW} steps"):
        predict.write_report("smoke")


def test_a_report_number_yaml_reads_as_text_is_named_so():
    import nbformat

    from ftcl_core.pages import report

    nb = nbformat.read("book/07b_gradient.ipynb", as_version=4)
    with pytest.raises(report.ReportError, match=r"YAML reads 1e9 as text: write 1.0e\+09, with a point"):
        report.check_parameter_kinds(nb, report.parse_parameters([["points", "1e9"]]), "07b_gradient.ipynb")


def test_a_command_into_a_folder_another_process_trains_waits_without_saying_it_resumes(tmp_path):
    from ftcl_core.runs import lock_held

    (tmp_path / ".lock").write_text("12345")
    assert not lock_held(tmp_path) and not lock_held(tmp_path / "none")
    with open(tmp_path / ".lock") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # as run_lock holds it (another open file: another holder)
        assert lock_held(tmp_path)
    assert not lock_held(tmp_path)


# ---- the public library ---------------------------------------------------------------------------------------------

def test_a_readout_of_features_that_carry_gradients_leaves_the_encoder_alone():
    from ftcl_core.evaluation import knn_top1, linear_readout

    enc = torch.nn.Linear(32, 16)
    gen = torch.Generator().manual_seed(0)
    f_tr, f_te = enc(torch.randn(100, 32, generator=gen)), enc(torch.randn(30, 32, generator=gen))
    y_tr, y_te = torch.arange(100) % 4, torch.arange(30) % 4
    assert 0 <= linear_readout(f_tr, y_tr, f_te, y_te, epochs=2) <= 100
    assert 0 <= knn_top1(f_tr, y_tr, f_te, y_te, k=10) <= 100
    assert enc.weight.grad is None


def test_a_readout_of_one_class_is_refused():
    from ftcl_core.evaluation import knn_top1, linear_readout

    f, y = torch.randn(20, 8), torch.zeros(20, dtype=torch.long)
    for readout in (linear_readout, knn_top1):
        with pytest.raises(ValueError, match="one class"):
            readout(f, y, f, y)


def test_augment_rows_given_as_a_list_name_the_slice():
    from ftcl_core.augment import augment, moco_v2

    images = torch.zeros(2, 3, 32, 32, dtype=torch.uint8)
    with pytest.raises(ValueError, match="must be the slice"):
        augment(images, moco_v2(16), torch.Generator(), rows=[0, 1], n_total=8)


def test_one_dimensional_features_are_refused_as_model_dim_1_is():
    from ftcl_core import ft

    u = F.normalize(torch.randn(8, 1), dim=1)
    with pytest.raises(ValueError, match="C >= 2"):
        ft.logits(u, u, F.normalize(torch.randn(32, 1), dim=1), ft.FTConfig(pos=True), torch.Generator(), tau=0.2)


def test_swav_loss_says_it_takes_a_number_not_a_tensor():
    from ftcl_core.batch_losses import swav_loss

    scores = torch.randn(8, 5)
    with pytest.raises(ValueError, match="a Python number, not a tensor") as err:
        swav_loss(scores, scores, torch.tensor(0.1))
    assert "one-element float tensor" not in str(err.value)


@pytest.mark.parametrize("name, hint", [("RESNET10_W16", "did you mean 'resnet10_w16'"), ("x", None)])
def test_an_unknown_encoder_suggests_a_close_name_or_none(name, hint):
    from ftcl_core.models import build_encoder

    with pytest.raises(ValueError) as err:
        build_encoder(name)
    assert ("did you mean" in str(err.value)) == bool(hint) and "[]" not in str(err.value)
    assert hint is None or hint in str(err.value)


def test_split_batch_norm_1d_names_the_shape_it_was_given():
    from ftcl_core.models import SplitBatchNorm1d

    with pytest.raises(ValueError, match=r"got a torch.float32 tensor of shape \(4, 7\)\."):
        SplitBatchNorm1d(8, 2)(torch.randn(4, 7))


def test_a_run_on_fewer_training_images_than_its_knn_k_votes_with_every_image():
    """knn_top1 refuses k past its images (the nineteenth trial); a run's evaluation on a small image folder, where
    the config cannot know the count, votes with every image instead (gpucheck's ImageNet-shaped dry run)."""
    from ftcl_core.augment import moco_v2
    from ftcl_core.evaluation import evaluate_backbone
    from ftcl_core.image_set import ImageSet
    from ftcl_core.models import build_encoder

    images = torch.randint(0, 255, (12, 3, 16, 16), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    few = ImageSet(images, torch.arange(12) % 3, ("a", "b", "c"))
    out = evaluate_backbone(build_encoder("resnet10_w16", 1), few, few, moco_v2(16), knn_k=200, linear_epochs=1)
    assert 0 <= out["knn_top1"] <= 100
    with pytest.raises(ValueError, match="k="):
        evaluate_backbone(build_encoder("resnet10_w16", 1), few, few, moco_v2(16), knn_k="many", linear_epochs=1)
