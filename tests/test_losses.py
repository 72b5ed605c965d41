"""The MoCo loss with FT, checked against the released code's semantics (https://github.com/DTennant/CL-Visualizing-Feature-Transformation)."""

import pytest
import torch
import torch.nn.functional as F

from ftcl_core import transforms
from ftcl_core.config import FTConfig
from ftcl_core.losses import info_nce, logits_from_scores, moco_ft_logits
from ftcl_core.study.config_keys import FTConfig as StudyFT  # ft.shards is the study's key


def feats(seed=0, n=8, k=32, d=16):
    g = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(n, d, generator=g), dim=1).requires_grad_(True)
    key = F.normalize(torch.randn(n, d, generator=g), dim=1)
    queue = F.normalize(torch.randn(k, d, generator=g), dim=1)
    return q, key, queue


def test_no_ft_gives_plain_cosines():
    q, k, queue = feats()
    lp, ln, _ = moco_ft_logits(q, k, queue, FTConfig(pos=True), torch.Generator(), active=False)
    torch.testing.assert_close(lp, (q * k).sum(1))
    torch.testing.assert_close(ln, q @ queue.T)


def test_released_semantics_pos_and_neg():
    """Extrapolated query also used against the (interpolated) negatives; same draws as by hand."""
    q, k, queue = feats()
    ft = FTConfig(pos=True, neg=True)
    lp, ln, _ = moco_ft_logits(q, k, queue, ft, torch.Generator().manual_seed(3))
    g = torch.Generator().manual_seed(3)
    lam = transforms.sample_lambda(2.0, "step", 8, 16, g, shift=1.0)
    q2, k2 = transforms.extrapolate_positive(q, k, lam)
    lam_n = transforms.sample_lambda(1.6, "step", 32, 16, g)
    perm = transforms.sample_permutation(32, g)
    torch.testing.assert_close(lp, (q2 * k2).sum(1))
    torch.testing.assert_close(ln, q2 @ transforms.interpolate_negatives(queue, lam_n, perm).T)


def test_gradient_flows_through_the_mixed_key():
    """k' = l k + (1-l) q holds q: d l_pos / d q must include that path (no stop-gradient)."""
    q, k, queue = feats()
    lp, _, _ = moco_ft_logits(q, k, queue, FTConfig(pos=True), torch.Generator().manual_seed(0))
    lp.sum().backward()
    lam = float(transforms.sample_lambda(2.0, "step", 8, 16, torch.Generator().manual_seed(0), shift=1.0))
    # l_pos = (l q + (1-l) k).(l k + (1-l) q); d/dq = l (l k + (1-l) q) + (1-l)(l q + (1-l) k)
    want = lam * (lam * k + (1 - lam) * q) + (1 - lam) * (lam * q + (1 - lam) * k)
    torch.testing.assert_close(q.grad, want.detach())


def test_ft_never_changes_the_queue():
    q, k, queue = feats()
    before = queue.clone()
    moco_ft_logits(q, k, queue, FTConfig(pos=True, neg=True, union_queue=True, hard=True), torch.Generator())
    torch.testing.assert_close(queue, before)


def test_union_queue_doubles_the_negatives():
    q, k, queue = feats()
    _, ln, partners = moco_ft_logits(q, k, queue, FTConfig(neg=True, union_queue=True), torch.Generator().manual_seed(0))
    assert ln.shape == (8, 64)
    torch.testing.assert_close(ln[:, 32:], q @ queue.T)
    # the mixed half names each row's random partner (a permutation), the plain half each row itself
    assert sorted(partners[:32].tolist()) == list(range(32)) and partners[32:].tolist() == list(range(32))


@pytest.mark.parametrize("gran", ["step", "sample", "dim"])
def test_every_granularity_runs_and_renormalises(gran):
    q, k, queue = feats()
    ft = FTConfig(pos=True, neg=True, hard=True, granularity=gran, renorm_pos=True, renorm_neg=True)
    lp, ln, _ = moco_ft_logits(q, k, queue, ft, torch.Generator().manual_seed(0))
    assert lp.shape == (8,) and ln.shape == (8, 32)
    assert torch.all(lp.abs() <= 1 + 1e-5)  # re-normalised: cosines again


def test_hard_negatives_raise_the_mean_negative_score():
    q, k, queue = feats()
    _, ln, _ = moco_ft_logits(q, k, queue, FTConfig(hard=True), torch.Generator().manual_seed(0))
    assert ln.mean() > (q @ queue.T).mean()


def test_info_nce_matches_the_formula():
    logits = torch.randn(4, 10)
    want = -(logits[:, 0].exp() / logits.exp().sum(1)).log().mean()
    torch.testing.assert_close(info_nce(logits), want)


def test_ft_config_rejects_bad_values():
    with pytest.raises(ValueError, match="alpha_ex"):
        FTConfig(alpha_ex=0)
    with pytest.raises(ValueError, match="pos_mode"):
        FTConfig(pos_mode="sideways")
    with pytest.raises(ValueError, match="tau"):
        logits_from_scores(torch.zeros(2), torch.zeros(2, 3), 0.0)


def test_one_lambda_per_shard_is_one_per_sample_when_every_query_is_a_shard():
    g = torch.Generator().manual_seed(0)
    q, k, queue = (F.normalize(torch.randn(n, 16, generator=g), dim=1) for n in (8, 8, 32))
    per_sample = moco_ft_logits(q, k, queue, FTConfig(pos=True, granularity="sample"), torch.Generator().manual_seed(1))
    per_shard = moco_ft_logits(q, k, queue, StudyFT(pos=True, shards=8), torch.Generator().manual_seed(1))
    for a, b in zip(per_sample, per_shard):  # pos, neg and the partners (each row its own: no mixing)
        torch.testing.assert_close(a, b)


def test_each_shard_scores_its_queries_against_its_own_mixture_of_the_queue():
    from ftcl_core.losses import mixed_queue
    from ftcl_core.study.moco_diagnosis import sharded_ft_logits

    g = torch.Generator().manual_seed(0)
    q, k, queue = (F.normalize(torch.randn(n, 16, generator=g), dim=1) for n in (8, 8, 32))
    ft = StudyFT(pos=True, neg=True, shards=4)
    with pytest.raises(ValueError, match="sharded_ft_logits"):
        moco_ft_logits(q, k, queue, ft, torch.Generator().manual_seed(1))
    pos, neg = sharded_ft_logits(q, k, queue, ft, torch.Generator().manual_seed(1))
    gen = torch.Generator().manual_seed(1)  # the same draws in the same order, by hand
    lam = transforms.sample_lambda(ft.alpha_ex, "sample", 4, 16, gen, shift=1.0).repeat_interleave(2, 0)
    assert lam.unique().numel() == 4  # one lambda per shard of two queries
    qe, ke = transforms.extrapolate_positive(q, k, lam)
    torch.testing.assert_close(pos, (qe * ke).sum(1))
    for s in range(4):
        mix, _ = mixed_queue(queue, ft, gen)
        torch.testing.assert_close(neg[2 * s: 2 * s + 2], qe[2 * s: 2 * s + 2] @ mix.T)
    with pytest.raises(ValueError, match="ft.shards"):
        StudyFT(pos=True, shards=2, granularity="sample")
