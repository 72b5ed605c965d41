"""Encoders, heads and split batch-norm: the networks the methods (:mod:`ftcl_core.methods`) are made of.

``SmallResNet`` (CIFAR stem, CPU-sized), torchvision's and timm's ResNets, MoCo's projection heads and the
MLPs of SimCLR, BYOL, SimSiam and SwAV; split batch-norm stands in for multi-GPU shuffle-BN in one process
(MoCo CIFAR demo); :func:`ema_update` is eq. 2's moving average.
"""

from __future__ import annotations

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from ftcl_core.arguments import check_counts, check_modules, described, is_real
from ftcl_core.config import SMALL_ENCODERS, TORCHVISION_ENCODERS
from ftcl_core.config_fields import did_you_mean

# the module's public names: each checks its arguments and names the fix; the rest are building blocks that
# take what these pass them
__all__ = ["Encoder", "SplitBatchNorm1d", "SplitBatchNorm2d", "build_encoder", "ema_update", "encoder_names",
           "frozen_copy", "mlp", "projection_head"]


_aten = torch.ops.aten


def _same_format(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``t`` laid out in memory as ``like`` is (channels-last or contiguous), so that chunks of both line up."""
    nhwc = like.dim() == 4 and not like.is_contiguous() and like.is_contiguous(memory_format=torch.channels_last)
    return t.contiguous(memory_format=torch.channels_last if nhwc else torch.contiguous_format)


class BlockBatchNorm(torch.autograd.Function):
    """Training-mode batch-norm of each of ``g`` equal, contiguous chunks of the batch with its own statistics,
    written straight into one output (forward) and one input gradient (backward).

    The same maths as ``torch.cat([F.batch_norm(chunk, ...) for chunk in x.chunk(g)])``, without the copies of
    the concatenation in the forward and of the chunks' gradients in the backward: on the CPU path these
    copies cost about as much as a quarter of all batch-norm work.  ``means`` and ``variances`` are the
    ``g`` running-statistics buffers, updated in place as :func:`torch.nn.functional.batch_norm` updates them.
    Differentiable once (no double backward).
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                means: list[torch.Tensor], variances: list[torch.Tensor], momentum: float, eps: float) -> torch.Tensor:
        g, c = len(means), x.shape[1]
        n = x.shape[0] // g
        x = _same_format(x, x)
        out = torch.empty_like(x)
        save_mean, save_invstd = x.new_empty(g, c), x.new_empty(g, c)
        for i in range(g):
            rows = slice(i * n, (i + 1) * n)
            _aten.native_batch_norm.out(x[rows], weight, bias, means[i], variances[i], True, momentum, eps,
                                        out=out[rows], save_mean=save_mean[i], save_invstd=save_invstd[i])
        ctx.save_for_backward(x, weight, save_mean, save_invstd)
        ctx.eps = eps
        return out

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        x, weight, save_mean, save_invstd = ctx.saved_tensors
        g, c = save_mean.shape
        n = x.shape[0] // g
        grad_out = _same_format(grad_out, x)
        grad_x = torch.empty_like(x)
        grad_w, grad_b = x.new_empty(g, c), x.new_empty(g, c)
        for i in range(g):
            rows = slice(i * n, (i + 1) * n)
            _aten.native_batch_norm_backward.out(grad_out[rows], x[rows], weight, None, None, save_mean[i],
                                                 save_invstd[i], True, ctx.eps, [True, True, True],
                                                 out0=grad_x[rows], out1=grad_w[i], out2=grad_b[i])
        if weight is None:
            return grad_x, None, None, None, None, None, None
        return grad_x, grad_w.sum(0), grad_b.sum(0), None, None, None, None


class _GroupedBatchNorm(torch.autograd.Function):
    """The normalisation of :func:`grouped_batch_norm` and its closed-form gradient (Ioffe & Szegedy 2015, sec. 3).

    In float32 (and float64): one read and one write of the activation forward, two reductions and three writes
    backward (autograd's own formulas for the same ops take eight).  A bf16 or fp16 activation is computed in
    float32 (statistics, normalisation, gradient; the result cast back), as cuDNN's batch-norm does: in the input's
    precision the statistics and the folded shift round to 8 bits, and the backward's sum of dy (x - mean) cancels
    (errors of 4e-2 measured where a channel's mean is 16 standard deviations).  Eager, that costs a float32
    copy; the compiler fuses it away.  Returns the output and the groups' mean and biased variance (not
    differentiated).  Differentiable once (no double backward)."""

    @staticmethod
    def forward(ctx, v: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float):
        dtype = v.dtype
        work = torch.promote_types(dtype, torch.float32)
        x = v.to(work)  # a no-op in float32 and float64
        dims = (1, *range(3, x.dim()))
        if x[0].numel() // x.shape[2] < 2:
            raise ValueError(f"expected more than 1 value per channel in each of the {x.shape[0]} batch-norm groups "
                             f"(a group of input size {list(x.shape[1:])}); use a larger batch or fewer bn_splits.")
        var, mean = torch.var_mean(x, dim=dims, correction=0, keepdim=True)  # one pass, every group at once
        shape = (1, 1, x.shape[2]) + (1,) * (x.dim() - 3)
        invstd = torch.rsqrt(var + eps)
        w = invstd if weight is None else invstd * weight.to(work).view(shape)
        shift = -mean * w if bias is None else bias.to(work).view(shape) - mean * w
        y = torch.addcmul(shift, x, w).to(dtype)  # (x - mean) * invstd * weight + bias
        ctx.save_for_backward(v, weight, mean, invstd)
        ctx.has_bias = bias is not None
        ctx.mark_non_differentiable(mean, var)
        return y, mean, var

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dy: torch.Tensor, _dmean, _dvar):
        v, weight, mean, invstd = ctx.saved_tensors
        work = mean.dtype
        x, dy = v.to(work), dy.to(work)
        dims = (1, *range(3, x.dim()))
        count = x.numel() // (x.shape[0] * x.shape[2])
        shape = (1, 1, x.shape[2]) + (1,) * (x.dim() - 3)
        sum_dy = dy.sum(dims, keepdim=True)
        sum_dy_xhat = invstd * ((dy * x).sum(dims, keepdim=True) - mean * sum_dy)  # sum of dy (x - mean) invstd
        wr = invstd if weight is None else invstd * weight.to(work).view(shape)
        # dx = w invstd (dy - mean(dy) - xhat mean(dy xhat)) = a dy + b x + c, per group and channel
        b = -wr * invstd * sum_dy_xhat / count
        c = -wr * sum_dy / count - b * mean
        dx = torch.addcmul(c, x, b).addcmul_(dy, wr).to(v.dtype)
        if weight is None:
            return dx, None, None, None
        grad_bias = sum_dy.sum(0).flatten().to(weight.dtype) if ctx.has_bias else None
        return dx, sum_dy_xhat.sum(0).flatten().to(weight.dtype), grad_bias, None


def grouped_batch_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                       running_mean: torch.Tensor, running_var: torch.Tensor, groups: int, momentum: float,
                       eps: float) -> torch.Tensor:
    """Training-mode batch-norm (Ioffe & Szegedy 2015, Alg. 1) of each of ``groups`` equal, contiguous chunks of the
    batch with its own statistics, over a free view of ``x``: no chunk, no copy, no concatenation.

    ``x`` (N, C, ...) is batch-major in any memory format, so ``x.unflatten(0, (groups, N // groups))`` is a view in
    every format (channels-last included) and one reduction pass (``torch.var_mean``) gives every group's
    statistics; the normalisation and affine fold into one multiply-add with per-(group, channel) scale and shift,
    written in ``x``'s dtype and memory format (:class:`_GroupedBatchNorm`, which also gives the gradient in closed
    form; a bf16 or fp16 ``x`` is computed in float32). This is what split batch-norm computes wherever
    :class:`BlockBatchNorm` does not apply (CUDA, autocast, ``torch.compile``): there the per-group path runs
    ``groups`` batch-norm kernels and copies the whole activation into a concatenation, forward and backward.
    Statistics are float32 or wider (mean and biased variance, as batch-norm normalises with); ``running_mean`` and
    ``running_var`` (shape (C,)) move by ``momentum`` toward the groups' average mean and unbiased variance, as the
    average of ``groups`` :func:`~torch.nn.functional.batch_norm` calls from one shared buffer moves them."""
    n, c = x.shape[:2]
    if n % groups:
        raise ValueError(f"batch {n} is not divisible by bn_splits={groups}; choose a batch size that is.")
    v = x.unflatten(0, (groups, n // groups))  # (g, n/g, C, ...): a view whatever the strides
    y, mean, var = _GroupedBatchNorm.apply(v, weight, bias, eps)
    with torch.no_grad():
        count = v.numel() // (groups * c)
        unbiased = var.flatten(1).mean(0) * (count / (count - 1))
        running_mean.mul_(1 - momentum).add_(mean.flatten(1).mean(0).to(running_mean.dtype), alpha=momentum)
        running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
    return y.flatten(0, 1)


# How split batch-norm's blocks layout computes its groups (train.split_bn): "per_group" runs one batch-norm per
# group (BlockBatchNorm on the CPU; elsewhere one F.batch_norm per chunk and a concatenation, what every run stored
# before the key did), "view" runs grouped_batch_norm; "auto" is per_group where BlockBatchNorm applies (the CPU
# in one dtype, eager: measured fastest there), view elsewhere.
SPLIT_BN_KERNELS = ("auto", "per_group", "view")


class SplitBatchNorm2d(nn.BatchNorm2d):
    """Batch-norm over ``num_splits`` groups of the batch (sample i in group i % num_splits), each with its own statistics.

    With a shuffled key batch this stands in for multi-GPU shuffle-BN on one device (MoCo CIFAR demo).
    In eval mode it is a plain BatchNorm2d.

    Two layouts compute the same groups.  ``interleaved`` (the default) takes the batch as it comes and folds
    the groups into the channels, ``(N, C, H, W) -> (N/g, g*C, H, W)``: one batch-norm call, but a copy for a
    channels-last input.  ``blocks`` expects the batch already reordered group-major (see :func:`group_major`),
    so that each group is a contiguous chunk in any memory format: one batch-norm call per group, written
    straight into one output (:class:`BlockBatchNorm`), no copy, which keeps a channels-last network
    channels-last end to end (the faster CPU path).
    """

    def __init__(self, num_features: int, num_splits: int, **kwargs) -> None:
        check_counts(type(self).__name__, num_features=num_features, num_splits=num_splits)
        if kwargs.get("momentum", 0.1) is None or kwargs.get("track_running_stats", True) is False:
            raise ValueError("SplitBatchNorm2d keeps running statistics with a float momentum (each group updates "
                             "them): momentum=None or track_running_stats=False is not supported.")
        super().__init__(num_features, **kwargs)
        self.num_splits = num_splits
        self.layout = "interleaved"
        self.kernel = "auto"  # for the blocks layout: SPLIT_BN_KERNELS

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or x.shape[1] != self.num_features or not x.is_floating_point():
            raise ValueError(f"{type(self).__name__}({self.num_features}) takes float features with "
                             f"{self.num_features} channels, (N, C, H, W) or for the 1d layer (N, C); got "
                             f"{described(x)}.")
        n, c, h, w = x.shape
        g = self.num_splits
        if self.training and g > 1 and n // g < 2 and n % g == 0:
            raise ValueError(f"a batch of {n} in bn_splits={g} groups leaves {n // g} sample a group: batch-norm "
                             "needs at least 2 in each; give a larger batch.")
        if not self.training or g == 1:
            return super().forward(x)
        if n % g:
            raise ValueError(f"batch {n} is not divisible by bn_splits={g}; choose a batch size that is.")
        if self.layout == "blocks":
            # BlockBatchNorm on the CPU in one dtype, eager; elsewhere (CUDA, autocast, the compiler) one pass over
            # a view (grouped_batch_norm) unless the per-group reference is asked for
            block = not (torch.compiler.is_compiling() or x.device.type != "cpu" or x.dtype != self.running_mean.dtype)
            if self.kernel == "view" or (self.kernel == "auto" and not block):
                if self.momentum is None:
                    raise ValueError("split batch-norm's view kernel needs a float momentum, not None "
                                     "(cumulative averaging); set momentum or train.split_bn=per_group.")
                self.num_batches_tracked.add_(1)
                return grouped_batch_norm(x, self.weight, self.bias, self.running_mean, self.running_var, g,
                                          self.momentum, self.eps)
            means = [self.running_mean.clone() for _ in range(g)]
            variances = [self.running_var.clone() for _ in range(g)]
            if not block:  # the per-group reference off the CPU: F.batch_norm per chunk (cuDNN), concatenated
                y = torch.cat([F.batch_norm(chunk, m, v, self.weight, self.bias, True, self.momentum, self.eps)
                               for chunk, m, v in zip(x.chunk(g), means, variances)])
            else:
                y = BlockBatchNorm.apply(x, self.weight, self.bias, means, variances, self.momentum, self.eps)
            self.running_mean.copy_(torch.stack(means).mean(0))
            self.running_var.copy_(torch.stack(variances).mean(0))
            self.num_batches_tracked.add_(1)
            return y
        mean = self.running_mean.repeat(g)
        var = self.running_var.repeat(g)
        weight = None if self.weight is None else self.weight.repeat(g)
        bias = None if self.bias is None else self.bias.repeat(g)
        # reshape, not view: a channels_last input is not contiguous in NCHW
        y = F.batch_norm(x.reshape(-1, c * g, h, w), mean, var, weight, bias, True, self.momentum, self.eps).view(n, c, h, w)
        self.running_mean.copy_(mean.view(g, c).mean(0))
        self.running_var.copy_(var.view(g, c).mean(0))
        self.num_batches_tracked.add_(1)  # as BatchNorm2d counts, so one process and W ranks agree
        return y


def group_major(backbone: nn.Module, kernel: str = "auto") -> bool:
    """Switch ``backbone``'s split batch-norms to the ``blocks`` layout: in training, the backbone reorders its
    input batch group-major (samples 0, g, 2g, ... first) and restores the order of its output features, so every
    layer sees each group as one contiguous chunk.  The groups, and so the maths, are those of the interleaved
    layout; ``kernel`` (:data:`SPLIT_BN_KERNELS`) how each layer computes them.  Returns whether anything was
    switched (False without split batch-norm)."""
    if kernel not in SPLIT_BN_KERNELS:
        raise ValueError(f"unknown split batch-norm kernel {kernel!r}; choose one of {SPLIT_BN_KERNELS}.")
    norms = [m for m in backbone.modules() if type(m) is SplitBatchNorm2d and m.num_splits > 1]
    for m in norms:
        m.kernel = kernel
    if not norms or getattr(backbone, "_group_major", False):
        return bool(norms)
    g = norms[0].num_splits
    for m in norms:
        m.layout = "blocks"

    def order(n: int, device: torch.device) -> torch.Tensor:
        return torch.arange(n, device=device).view(n // g, g).T.reshape(-1)

    def reorder_input(module: nn.Module, args: tuple):
        x = args[0]
        if not module.training or x.shape[0] % g:
            return None  # eval mode: plain batch-norm; an indivisible batch: the norm layers raise
        fmt = torch.channels_last if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) else None
        x = x[order(x.shape[0], x.device)]
        return (x.contiguous(memory_format=fmt) if fmt else x, *args[1:])

    def restore_output(module: nn.Module, args: tuple, out: torch.Tensor):
        if not module.training or out.shape[0] % g:
            return None
        return out[torch.argsort(order(out.shape[0], out.device))]

    backbone.register_forward_pre_hook(reorder_input)
    backbone.register_forward_hook(restore_output)
    backbone._group_major = True
    return True


class SplitBatchNorm1d(SplitBatchNorm2d):
    """:class:`SplitBatchNorm2d` for ``(N, C)`` features (the BN layers of the projection heads)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2 or x.shape[1] != self.num_features or not x.is_floating_point():
            raise ValueError(f"SplitBatchNorm1d({self.num_features}) takes float features (N, {self.num_features}), "
                             f"got {described(x)}.")
        return super().forward(x.view(*x.shape, 1, 1)).view(x.shape)


def _norm(bn_splits: int):
    return (lambda c: SplitBatchNorm2d(c, bn_splits)) if bn_splits > 1 else nn.BatchNorm2d


def _norm1d(bn_splits: int):
    return (lambda c, **kw: SplitBatchNorm1d(c, bn_splits, **kw)) if bn_splits > 1 else nn.BatchNorm1d


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int, norm) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = norm(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = norm(c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), norm(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)  # in place: batch-norm's backward needs its input only
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x), inplace=True)


class SmallResNet(nn.Module):
    """A CIFAR-stem ResNet (3x3 stem, no max-pool) of BasicBlocks, sized for a CPU.

    ``blocks=(1,1,1,1)`` is ResNet-10, ``(2,2,2,2)`` ResNet-18.  Output: pooled features of ``8*width``.
    """

    def __init__(self, blocks=(1, 1, 1, 1), width: int = 16, bn_splits: int = 1) -> None:
        super().__init__()
        norm = _norm(bn_splits)
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), norm(width), nn.ReLU(inplace=True))
        layers, c = [], width
        for i, n in enumerate(blocks):
            c_out = width * 2**i
            for j in range(n):
                layers.append(BasicBlock(c, c_out, 2 if (j == 0 and i > 0) else 1, norm))
                c = c_out
        self.layers = nn.Sequential(*layers)
        self.out_dim = c

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1).flatten(1)


def _torchvision_resnet(name: str, cifar_stem: bool, bn_splits: int) -> nn.Module:
    import torchvision

    net = getattr(torchvision.models, name)(weights=None, norm_layer=_norm(bn_splits))
    if cifar_stem:
        net.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        net.maxpool = nn.Identity()
    net.out_dim = net.fc.in_features
    net.fc = nn.Identity()
    return net


SMALL = {
    "resnet10_w16": dict(blocks=(1, 1, 1, 1), width=16),
    "resnet10_w32": dict(blocks=(1, 1, 1, 1), width=32),
    "resnet18_w16": dict(blocks=(2, 2, 2, 2), width=16),
    "resnet18_w32": dict(blocks=(2, 2, 2, 2), width=32),
    "resnet18_w64": dict(blocks=(2, 2, 2, 2), width=64),  # the standard CIFAR ResNet-18 (about 11 M parameters)
}
TORCHVISION = TORCHVISION_ENCODERS
assert tuple(SMALL) == SMALL_ENCODERS, "ftcl_core.config.SMALL_ENCODERS lists the names of SMALL"


def kaiming_init(backbone: nn.Module) -> nn.Module:
    """Kaiming-normal fan-out convolutions and unit/zero batch-norm affines, as torchvision's and PyContrast's
    ResNets start (He et al. 2015); PyTorch's default conv init gives smaller weight norms."""
    for mod in backbone.modules():
        if isinstance(mod, nn.Conv2d):
            nn.init.kaiming_normal_(mod.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(mod, (nn.BatchNorm2d, nn.GroupNorm)) and mod.weight is not None:
            nn.init.ones_(mod.weight)
            nn.init.zeros_(mod.bias)
    return backbone


def encoder_names() -> list[str]:
    """Names :func:`build_encoder` accepts (plus ``timm:<any timm model>``)."""
    return sorted(SMALL) + list(TORCHVISION) + ["timm:<name>"]


def _takes_views(module: nn.Module, args: tuple) -> None:
    """:func:`build_encoder`'s backbones take views, float ``(N, 3, H, W)`` (metadata only: nothing read, no wait)."""
    x = args[0] if args else None
    if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() == 4 and x.shape[1] == 3):
        raise TypeError(f"{type(module).__name__} takes views, float (N, 3, H, W), got {described(x)}: make them from "
                        "the stored images with augment.augment (training) or augment.center_view (evaluation).")


def build_encoder(name: str, bn_splits: int = 1) -> nn.Module:
    """A backbone that maps images to pooled features; ``.out_dim`` gives their size.

    ``resnet10_w16`` etc. are CIFAR-stem CPU models; ``resnet18``/``resnet50`` are torchvision's
    (``_cifar`` for the 3x3 stem); ``timm:<model>`` is any timm model, randomly initialised, no download.
    ``bn_splits``: a whole number >= 1 (split batch-norm's groups).  It takes views, float ``(N, 3, H, W)``
    (:func:`ftcl_core.augment.augment`, :func:`~ftcl_core.augment.center_view`); stored images are refused, naming them.
    """
    if not isinstance(name, str):
        raise TypeError(f"build_encoder: name must be an encoder's name (a str), got {described(name)}; known: "
                        f"{encoder_names()}.")
    check_counts("build_encoder", bn_splits=bn_splits)
    if name in SMALL:
        net = SmallResNet(**SMALL[name], bn_splits=bn_splits)
    elif name in TORCHVISION:
        net = _torchvision_resnet(name.removesuffix("_cifar"), name.endswith("_cifar"), bn_splits)
    elif name.startswith("timm:"):
        import timm

        model_name = name.split(":", 1)[1]
        if not timm.is_model(model_name):
            raise ValueError(f"unknown timm model {model_name!r}{did_you_mean(model_name, timm.list_models())} "
                             "(timm.list_models() lists them all).")
        if bn_splits > 1:
            raise ValueError("bn_splits > 1 is supported for the ResNet encoders only; set model.bn_splits=1.")
        net = timm.create_model(model_name, pretrained=False, num_classes=0)
        net.out_dim = net.num_features
    else:
        raise ValueError(f"unknown encoder {name!r}{did_you_mean(name, encoder_names())}. Known: {encoder_names()}.")
    net.register_forward_pre_hook(_takes_views)  # every encoder: views in, named where they are not
    return net


def projection_head(in_dim: int, out_dim: int = 128, mlp: bool = True) -> nn.Module:
    """MoCo v1: one linear layer; MoCo v2: Linear-ReLU-Linear (hidden size = in_dim)."""
    check_counts("projection_head", in_dim=in_dim, out_dim=out_dim)
    if not isinstance(mlp, bool):
        raise TypeError(f"projection_head: mlp={mlp!r} must be True (MoCo v2) or False (v1).")
    if not mlp:
        return nn.Linear(in_dim, out_dim)
    return nn.Sequential(nn.Linear(in_dim, in_dim), nn.ReLU(inplace=True), nn.Linear(in_dim, out_dim))


class Encoder(nn.Module):
    """Backbone followed by a projection head; ``forward`` returns the head output (not normalised)."""

    def __init__(self, backbone: nn.Module, head: nn.Module) -> None:
        check_modules("Encoder", "build_encoder and projection_head make them", backbone=backbone, head=head)
        super().__init__()
        self.backbone = backbone
        self.head = head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


def mlp(in_dim: int, hidden: int, out_dim: int, layers: int = 2, last_bn: bool = False, bn_splits: int = 1
        ) -> nn.Sequential:
    """Linear-BN-ReLU blocks then a last Linear (optionally followed by an affine-free BN, as SimSiam's
    projector).  The BN layers are split like the backbone's (``bn_splits``), so a head sees the same batch
    statistics in one process as on ``bn_splits`` ranks.  ``layers`` >= 1 (1: one Linear)."""
    check_counts("mlp", in_dim=in_dim, hidden=hidden, out_dim=out_dim, layers=layers, bn_splits=bn_splits)
    if not isinstance(last_bn, bool):
        raise TypeError(f"mlp: last_bn={last_bn!r} must be True or False.")
    norm = _norm1d(bn_splits)
    mods: list[nn.Module] = []
    d = in_dim
    for _ in range(layers - 1):
        mods += [nn.Linear(d, hidden, bias=False), norm(hidden), nn.ReLU(inplace=True)]
        d = hidden
    mods.append(nn.Linear(d, out_dim, bias=not last_bn))
    if last_bn:
        mods.append(norm(out_dim, affine=False))
    return nn.Sequential(*mods)


@torch.no_grad()
def ema_update(target: nn.Module, online: nn.Module, m: float) -> None:
    """eq. 2 (and BYOL's target update): theta_t <- m theta_t + (1 - m) theta_o; BN
    statistics stay separate.  ``m``: a number in [0, 1]; ``target``: a copy of
    ``online``."""
    if not (is_real(m) and not isinstance(m, torch.Tensor) and 0 <= m <= 1):
        raise ValueError(f"ema_update: m={m!r} must be a number in [0, 1] (MoCo: "
                         "0.99 or 0.999): the target keeps m of itself.")
    check_modules("ema_update", target=target, online=online)
    t_params = list(target.parameters())
    o_params = list(online.parameters())
    if any(a is b for a, b in zip(t_params, o_params)):  # then eq. 2 changes nothing
        raise ValueError("ema_update: target and online share their parameters: "
                         "make the target with frozen_copy(online), once.")
    same = len(t_params) == len(o_params) and all(
        a.shape == b.shape for a, b in zip(t_params, o_params))
    if not same:
        n_t, n_o = len(t_params), len(o_params)
        raise ValueError(f"ema_update: the target's {n_t} parameter tensors are not "
                         f"the online network's {n_o}: copy it (frozen_copy).")
    torch._foreach_mul_(t_params, m)
    torch._foreach_add_(t_params, o_params, alpha=1.0 - m)


def frozen_copy(module: nn.Module) -> nn.Module:
    """A copy of ``module`` that the optimiser leaves alone (MoCo's key encoder, BYOL's target)."""
    check_modules("frozen_copy", module=module)
    twin = copy.deepcopy(module)
    for p in twin.parameters():
        p.requires_grad_(False)
    return twin
