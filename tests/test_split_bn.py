"""Split batch-norm over a free view of the batch (``models.grouped_batch_norm``, ``train.split_bn=view``): the
same outputs, gradients and running statistics as one batch-norm per group, in either memory format, and no
copy of the activation on the way (what the per-group path's concatenation costs on CUDA)."""

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from ftcl_core.config import ConfigError, config_diff, load_config
from ftcl_core.execution import execution_path, prepare_model, split_bn_kernel
from ftcl_core.models import SplitBatchNorm1d, SplitBatchNorm2d, build_encoder, group_major, grouped_batch_norm


def per_group_reference(x, weight, bias, running_mean, running_var, groups, momentum, eps):
    """One F.batch_norm per contiguous chunk from a shared buffer, the buffers averaged (the per-group path)."""
    means = [running_mean.clone() for _ in range(groups)]
    variances = [running_var.clone() for _ in range(groups)]
    y = torch.cat([F.batch_norm(c, m, v, weight, bias, True, momentum, eps)
                   for c, m, v in zip(x.chunk(groups), means, variances)])
    running_mean.copy_(torch.stack(means).mean(0))
    running_var.copy_(torch.stack(variances).mean(0))
    return y


@pytest.mark.parametrize("fmt", [torch.channels_last, torch.contiguous_format])
@pytest.mark.parametrize("groups", [1, 2, 4, 8])
@pytest.mark.parametrize("affine", [True, False])
def test_grouped_batch_norm_is_one_batch_norm_per_group(fmt, groups, affine):
    torch.manual_seed(groups)
    c = 6
    x = (torch.randn(16, c, 5, 3) * 3 + 1).contiguous(memory_format=fmt)
    w = torch.rand(c) + 0.5 if affine else None
    b = torch.randn(c) if affine else None
    leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
    rm, rv = torch.randn(c), torch.rand(c) + 0.5
    rm_ref, rv_ref = rm.clone(), rv.clone()
    y = grouped_batch_norm(x, w, b, rm, rv, groups, 0.1, 1e-5)
    y_ref = per_group_reference(x, w, b, rm_ref, rv_ref, groups, 0.1, 1e-5)
    assert y.is_contiguous(memory_format=fmt) and y.dtype == x.dtype
    torch.testing.assert_close(y, y_ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(rm, rm_ref, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(rv, rv_ref, rtol=1e-5, atol=1e-6)
    up = torch.randn_like(y)
    grads = torch.autograd.grad((y * up).sum(), leaves)
    grads_ref = torch.autograd.grad((y_ref * up).sum(), leaves)
    for g, g_ref in zip(grads, grads_ref):
        torch.testing.assert_close(g, g_ref, rtol=1e-4, atol=1e-5)


def test_grouped_batch_norm_of_features_and_an_indivisible_batch():
    torch.manual_seed(0)
    x = torch.randn(12, 5)
    rm, rv = torch.zeros(5), torch.ones(5)
    ref = per_group_reference(x, None, None, rm.clone(), rv.clone(), 3, 0.1, 1e-5)
    torch.testing.assert_close(grouped_batch_norm(x, None, None, rm, rv, 3, 0.1, 1e-5), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="not divisible by bn_splits=5"):
        grouped_batch_norm(x, None, None, rm, rv, 5, 0.1, 1e-5)


class FullSizeOutputs(TorchDispatchMode):
    """Counts the ATen ops that write an output with as many elements as the activation into new memory (a pass
    over it: a kernel that writes it, or a copy), by op name; views are not counted."""

    def __init__(self, numel: int) -> None:
        super().__init__()
        self.numel, self.ops = numel, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        inputs = {a.untyped_storage().data_ptr() for a in torch.utils._pytree.tree_leaves((args, kwargs))
                  if isinstance(a, torch.Tensor)}
        if any(isinstance(o, torch.Tensor) and o.numel() == self.numel
               and (func._schema.is_mutable or o.untyped_storage().data_ptr() not in inputs)
               for o in outs):  # a view writes nothing; an in-place op writes its input
            self.ops.append(func.overloadpacket.__name__)
        return out


def passes(kernel: str, fmt, groups: int = 4) -> tuple[list[str], list[str]]:
    bn = SplitBatchNorm2d(8, groups)
    bn.layout, bn.kernel = "blocks", kernel
    x = torch.randn(32, 8, 6, 6).contiguous(memory_format=fmt).requires_grad_()
    with FullSizeOutputs(x.numel()) as fwd:
        y = bn(x)
    up = torch.randn_like(y)
    with FullSizeOutputs(x.numel()) as bwd:
        y.backward(up)
    return fwd.ops, bwd.ops


@pytest.mark.parametrize("fmt", [torch.channels_last, torch.contiguous_format])
def test_the_view_kernel_makes_one_pass_forward_and_no_copy(fmt):
    """Forward: the reduction reads the activation (its outputs are small) and one multiply-add writes the output;
    the per-group path off the CPU writes each group and then copies them all into the concatenation."""
    fwd, bwd = passes("view", fmt)
    assert fwd == ["addcmul"], fwd
    assert not {"cat", "copy_", "clone", "contiguous", "_to_copy"} & set(fwd + bwd), (fwd, bwd)
    # backward in closed form: dy * x for one reduction, then dx = a dy + b x + c in two multiply-adds
    assert bwd == ["mul", "addcmul", "addcmul_"], bwd


def test_the_view_kernel_under_autocast_keeps_the_activation_dtype():
    bn = SplitBatchNorm2d(8, 4)
    bn.layout, bn.kernel = "blocks", "view"
    x = torch.randn(16, 8, 4, 4)
    ref = SplitBatchNorm2d(8, 4)
    ref.layout, ref.kernel = "blocks", "per_group"
    y32 = ref(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = bn(x.bfloat16())
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), y32, rtol=0.02, atol=0.03)  # bf16 rounding of input, scale and output


def test_a_split_batch_norm_module_with_the_view_kernel_matches_the_interleaved_layout():
    torch.manual_seed(0)
    order = torch.arange(24).view(6, 4).T.reshape(-1)
    a, b = SplitBatchNorm2d(8, 4), SplitBatchNorm2d(8, 4)
    with torch.no_grad():
        a.weight.uniform_(0.5, 1.5), a.bias.uniform_(-1, 1)
    b.load_state_dict(a.state_dict())
    b.layout, b.kernel = "blocks", "view"
    x = torch.randn(24, 8, 5, 5)
    ya = a(x)
    yb = b(x[order].contiguous(memory_format=torch.channels_last))[torch.argsort(order)]
    torch.testing.assert_close(yb, ya, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(b.running_var, a.running_var)
    assert int(b.num_batches_tracked) == 1
    f = SplitBatchNorm1d(8, 4)
    f.layout, f.kernel = "blocks", "view"
    assert f(torch.randn(8, 8)).shape == (8, 8)


def test_a_backbone_with_the_view_kernel_gives_the_per_group_features_eager_and_compiled():
    torch.manual_seed(0)
    ref = build_encoder("resnet10_w16", bn_splits=4)
    view = build_encoder("resnet10_w16", bn_splits=4)
    view.load_state_dict(ref.state_dict())
    group_major(ref, "per_group"), group_major(view, "view")
    ref, view = ref.to(memory_format=torch.channels_last), view.to(memory_format=torch.channels_last)
    x = torch.randn(16, 3, 12, 12).contiguous(memory_format=torch.channels_last)
    want = ref(x)
    torch.testing.assert_close(view(x), want, rtol=1e-4, atol=1e-5)
    compiled = torch.compile(view, backend="eager")  # the compiler's path (is_compiling) without a C++ build
    torch.testing.assert_close(compiled(x), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="unknown split batch-norm kernel 'fast'"):
        group_major(view, "fast")


def test_the_kernel_is_an_execution_key_resolved_per_device_and_recorded():
    cfg = load_config("configs/smoke_moco_v2.yaml", ["model.bn_splits=4"])
    assert split_bn_kernel(cfg, "cpu") == "per_group"  # BlockBatchNorm: measured fastest on the CPU
    assert split_bn_kernel(cfg, "cuda") == "view"
    assert split_bn_kernel(cfg.updated({"train.amp": "bf16"}), "cpu") == "view"
    assert split_bn_kernel(cfg.updated({"train.compile": "eager"}), "cpu") == "view"
    assert split_bn_kernel(cfg.updated({"train.split_bn": "per_group"}), "cuda") == "per_group"
    assert split_bn_kernel(cfg.updated({"train.channels_last": False}), "cuda") is None  # interleaved: no blocks
    assert execution_path(cfg.updated({"train.split_bn": "view"}))["split_bn_kernel"] == "view"
    assert config_diff(cfg, cfg.updated({"train.split_bn": "view"})) == []
    model, _ = prepare_model(cfg.updated({"train.split_bn": "view"}), "cpu")
    kernels = {m.kernel for m in model.modules() if isinstance(m, SplitBatchNorm2d) and m.layout == "blocks"}
    assert kernels == {"view"}
    with pytest.raises(ConfigError, match="train.split_bn"):
        load_config("configs/smoke_moco_v2.yaml", ["train.split_bn=fused"])
    with pytest.raises(ConfigError, match="would be ignored. Set train.split_bn=auto"):  # no blocks layout to choose for
        load_config("configs/smoke_moco_v2.yaml", ["model.bn_splits=4", "train.split_bn=view", "train.channels_last=false"])


def test_the_view_kernels_gradient_passes_gradcheck_in_float64():
    torch.manual_seed(0)
    x = torch.randn(8, 3, 3, 2, dtype=torch.float64, requires_grad=True)
    w = torch.rand(3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)

    def f(x, w, b):
        return grouped_batch_norm(x, w, b, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64),
                                  2, 0.1, 1e-5)

    assert torch.autograd.gradcheck(f, (x, w, b))
    # a weight without a bias (an affine layer with bias=None): no gradient for the missing bias
    y = grouped_batch_norm(x, w, None, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64), 2,
                           0.1, 1e-5)
    y.sum().backward()
    assert w.grad is not None
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        grouped_batch_norm(torch.randn(4, 3), None, None, torch.zeros(3), torch.ones(3), 4, 0.1, 1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_low_precision_activation_is_normalised_in_float32(dtype):
    """Where a channel's mean is 16 standard deviations, the view kernel's bf16/fp16 output and gradient are as close
    to a float64 batch-norm of the same (rounded) input as the input's own precision allows."""
    torch.manual_seed(0)
    x = (torch.randn(16, 4, 6, 6) + 16).to(dtype)
    up = torch.randn(16, 4, 6, 6).to(dtype)
    ref_x = x.double().requires_grad_()
    ref = per_group_reference(ref_x, None, None, torch.zeros(4, dtype=torch.float64),
                              torch.ones(4, dtype=torch.float64), 4, 0.1, 1e-5)
    (ref_dx,) = torch.autograd.grad((ref * up.double()).sum(), ref_x)
    lx = x.clone().requires_grad_()
    y = grouped_batch_norm(lx, None, None, torch.zeros(4), torch.ones(4), 4, 0.1, 1e-5)
    (dx,) = torch.autograd.grad((y * up).sum(), lx)
    assert y.dtype == dtype and dx.dtype == dtype
    rounding = 2 ** -8 if dtype == torch.bfloat16 else 2 ** -11
    assert float((y.detach().double() - ref.detach()).abs().max()) <= 2 * rounding * float(ref.detach().abs().max())
    assert float((dx.double() - ref_dx).abs().max()) <= 2 * rounding * float(ref_dx.abs().max())
