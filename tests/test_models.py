"""Encoders, split batch-norm, momentum update (eq. 2) and the queue."""

import copy

import pytest
import torch
import torch.nn as nn

from ftcl_core.methods import MoCo
from ftcl_core.models import Encoder, SplitBatchNorm2d, build_encoder, projection_head


def small_moco(k=10, m=0.9, dim=8):
    bb = build_encoder("resnet10_w16")
    return MoCo(Encoder(bb, projection_head(bb.out_dim, dim)), dim, k, m)


def test_enqueue_wraps_when_k_is_not_a_multiple_of_the_batch():
    model = small_moco(k=10)
    keys = [torch.full((4, 8), float(i)) for i in range(3)]
    for kb in keys:
        model.enqueue(kb)
    q = model.queue
    assert int(model.queue_ptr) == 2
    assert torch.all(q[4:8] == 1) and torch.all(q[8:10] == 2) and torch.all(q[0:2] == 2) and torch.all(q[2:4] == 0)


def test_enqueue_rejects_batch_larger_than_queue():
    with pytest.raises(ValueError, match="K >= batch"):
        small_moco(k=4).enqueue(torch.zeros(5, 8))


def test_momentum_update_is_eq2():
    model = small_moco(m=0.9)
    with torch.no_grad():
        for p in model.encoder_q.parameters():
            p.add_(1.0)
    before_k = [p.clone() for p in model.encoder_k.parameters()]
    model.momentum_update()
    for pk, pk0, pq in zip(model.encoder_k.parameters(), before_k, model.encoder_q.parameters()):
        torch.testing.assert_close(pk, 0.9 * pk0 + 0.1 * pq)


@pytest.mark.parametrize("m", [-0.1, 1.5])
def test_momentum_outside_unit_interval_is_an_error(m):
    with pytest.raises(ValueError, match="outside"):
        small_moco(m=m)


def test_split_bn_equals_bn_per_group():
    torch.manual_seed(0)
    x = torch.randn(8, 3, 4, 4)
    split = SplitBatchNorm2d(3, 4)
    plain = nn.BatchNorm2d(3)
    y = split(x)
    for g in range(4):
        ref = copy.deepcopy(plain)
        torch.testing.assert_close(y[g::4], ref(x[g::4]))  # groups are strided: sample i in group i % 4
    split.eval()
    assert split(x).shape == x.shape


def test_keys_are_normalised_and_unshuffled():
    model = small_moco(k=16)
    model.train()
    x = torch.randn(8, 3, 16, 16)
    q, k, k_all = model(x, x, torch.Generator().manual_seed(0))
    assert torch.equal(k, k_all)  # one process: its keys are the whole batch
    assert torch.allclose(k.norm(dim=1), torch.ones(8), atol=1e-5)
    assert not k.requires_grad and q.requires_grad


@pytest.mark.parametrize("name", ["resnet10_w16", "resnet18_cifar", "timm:resnet10t"])
def test_encoders_build_and_report_their_width(name):
    net = build_encoder(name)
    out = net(torch.randn(2, 3, 32, 32))
    assert out.shape == (2, net.out_dim)


def test_unknown_encoder_names_close_matches():
    with pytest.raises(ValueError, match="did you mean"):
        build_encoder("resnet10_w61")
    with pytest.raises(ValueError, match="unknown timm model"):
        build_encoder("timm:resnet_nonexistent_42")
