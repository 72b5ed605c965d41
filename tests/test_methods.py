"""SimCLR, BYOL and SimSiam with FT: the loss maths, the config errors, and a training run of each."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ftcl_core import transforms
from ftcl_core.batch_losses import in_batch_negative_scores, simclr_ft_logits, sinkhorn, swav_loss
from ftcl_core.config import ConfigError, load_config
from ftcl_core.losses import FTConfig, info_nce, logits_from_scores
from ftcl_core.methods import build_model
from ftcl_core.models import SplitBatchNorm1d
from ftcl_core.training import train


def nt_xent_reference(z1: torch.Tensor, z2: torch.Tensor, tau: float) -> torch.Tensor:
    """SimCLR's loss written out anchor by anchor, as in the SimCLR paper's algorithm 1."""
    z = torch.cat([z1, z2])
    n2 = z.shape[0]
    losses = []
    for i in range(n2):
        j = (i + n2 // 2) % n2
        others = [k for k in range(n2) if k != i]
        denom = torch.logsumexp(torch.stack([z[i] @ z[k] / tau for k in others]), 0)
        losses.append(denom - z[i] @ z[j] / tau)
    return torch.stack(losses).mean()


def views(n=6, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(n, d, generator=g), dim=1), F.normalize(torch.randn(n, d, generator=g), dim=1)


def test_simclr_scores_without_ft_give_the_nt_xent_loss():
    z1, z2 = views()
    rows = torch.arange(6)
    lp, ln = simclr_ft_logits(z1, z2, z1, z2, rows, FTConfig(), torch.Generator())
    assert ln.shape == (12, 10)
    loss = info_nce(logits_from_scores(lp, ln, 0.5))
    torch.testing.assert_close(loss, nt_xent_reference(z1, z2, 0.5))


def test_simclr_negatives_exclude_the_anchor_and_its_positive():
    eye = torch.eye(4, 8)  # orthogonal samples, the two views identical
    lp, ln = simclr_ft_logits(eye, eye, eye, eye, torch.arange(4), FTConfig(), torch.Generator())
    assert torch.all(lp == 1) and ln.shape == (8, 6) and torch.all(ln == 0)
    # with FT on, the in-batch bank is interpolated too, and the union keeps the clean bank beside it
    _, ln = simclr_ft_logits(eye, eye, eye, eye, torch.arange(4), FTConfig(neg=True, union_queue=True), torch.Generator())
    assert ln.shape == (8, 12)


def test_simclr_positive_extrapolation_follows_eq4():
    z1, z2 = views()
    ft = FTConfig(pos=True, alpha_ex=2.0)
    gen = torch.Generator().manual_seed(4)
    lam = transforms.sample_lambda(2.0, "step", 12, 8, torch.Generator().manual_seed(4), shift=1.0)
    lp, _ = simclr_ft_logits(z1, z2, z1, z2, torch.arange(6), ft, gen)
    s = (torch.cat([z1, z2]) * torch.cat([z2, z1])).sum(1)
    torch.testing.assert_close(lp, transforms.transformed_positive_score(s, lam))  # eq. 4


def test_in_batch_scores_of_non_contrastive_methods_skip_the_own_image():
    eye = torch.eye(4, 8)
    scores = in_batch_negative_scores(torch.cat([eye, eye]), torch.cat([eye, eye]))
    assert scores.shape == (8, 6) and torch.all(scores == 0)


def test_split_batchnorm_1d_is_batchnorm_per_strided_group():
    x = torch.randn(8, 5)
    bn = SplitBatchNorm1d(5, 2)
    y = bn(x)
    ref = torch.nn.BatchNorm1d(5)
    for g in range(2):
        torch.testing.assert_close(y[g::2], ref(x[g::2]))


def test_byol_target_momentum_rises_to_one_on_a_cosine():
    cfg = load_config("configs/smoke_byol.yaml")
    model = build_model(cfg)
    ms = []
    for s in range(101):
        model.start_step(0, s, 100)
        ms.append(model.momentum)
    assert ms[0] == pytest.approx(0.99) and ms[-1] == pytest.approx(1.0) and all(np.diff(ms) >= 0)
    assert math.isclose(ms[50], 0.995)
    moco = build_model(load_config("configs/smoke_moco_v2.yaml"))
    moco.start_step(0, 50, 100)
    assert moco.momentum == 0.99  # MoCo: constant


def test_sinkhorn_codes_spread_the_batch_equally_over_prototypes():
    scores = F.normalize(torch.randn(64, 16), dim=1) @ F.normalize(torch.randn(8, 16), dim=1).T
    q = sinkhorn(scores, epsilon=0.05, iters=50)
    torch.testing.assert_close(q.sum(1), torch.ones(64))  # each sample's code is a distribution
    torch.testing.assert_close(q.sum(0), torch.full((8,), 64 / 8), rtol=1e-3, atol=1e-3)  # equal partition
    # the swapped loss is lowest when each view predicts the other's code
    s1 = scores * 10
    assert swav_loss(s1, s1, 0.1) < swav_loss(s1, s1.roll(1, dims=0), 0.1)


@pytest.mark.parametrize("method", ["byol", "simsiam", "swav"])
@pytest.mark.parametrize("key", ["ft.neg=true", "ft.hard=true", "ft.union_queue=true"])
def test_negative_ft_on_a_method_without_negatives_is_a_clear_error(method, key):
    with pytest.raises(ConfigError, match="has no negatives"):
        load_config(f"configs/smoke_{method}.yaml", [key])


def test_unknown_method_is_a_clear_error():
    with pytest.raises(ConfigError, match="choose one of"):
        load_config("configs/smoke_moco_v2.yaml", ["method=dino"])


@pytest.mark.parametrize("method", ["simclr", "byol", "simsiam", "swav"])
def test_each_method_trains_with_ft_into_a_run_folder(tmp_path, method):
    cfg = load_config(f"configs/smoke_{method}.yaml")
    assert cfg.ft.pos
    result = train(cfg, tmp_path, progress=False)
    assert 0 <= result["linear_top1"] <= 100
    with np.load(tmp_path / "metrics.npz") as m:
        assert np.all(np.isfinite(m["loss"])) and m["loss"].shape == (16,)
        # statistics of the plain cosines and after FT are both recorded, and FT changes the positives
        assert not np.allclose(m["pos_mean"], m["ft_pos_mean"])
        assert np.all((m["neg_mean"] >= -1) & (m["neg_mean"] <= 1))
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)["model"]
    if method == "byol":  # the target moved towards the online network, but is not it
        online, target = state["encoder_q.head.0.weight"], state["target.head.0.weight"]
        assert not torch.equal(online, target)
    if method == "swav":  # prototypes stay on the unit sphere
        torch.testing.assert_close(state["prototypes.weight"].norm(dim=1), torch.ones(30), atol=1e-2, rtol=0)
