"""Encoders, projection heads and the MoCo model (momentum encoder, eq. 2, and the key queue).

``MoCo`` follows facebookresearch/moco's builder: one query encoder, one momentum key encoder, a queue of
clean keys with a pointer.  Single-process shuffle-BN is emulated with split batch-norm and a shuffled key
batch, as the MoCo CIFAR demo does; ``MoCo.shuffle_keys`` is the seam where multi-process shuffle-BN
(gather, shuffle across ranks) plugs in.
"""

from __future__ import annotations

import copy
import difflib

import torch
import torch.nn as nn
import torch.nn.functional as F


class SplitBatchNorm2d(nn.BatchNorm2d):
    """Batch-norm over ``num_splits`` groups of the batch (sample i in group i % num_splits), each with its own statistics.

    With a shuffled key batch this stands in for multi-GPU shuffle-BN on one device (MoCo CIFAR demo).
    In eval mode it is a plain BatchNorm2d.
    """

    def __init__(self, num_features: int, num_splits: int, **kwargs) -> None:
        super().__init__(num_features, **kwargs)
        self.num_splits = num_splits

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        g = self.num_splits
        if not self.training or g == 1:
            return super().forward(x)
        if n % g:
            raise ValueError(f"batch {n} is not divisible by bn_splits={g}; choose a batch size that is.")
        mean = self.running_mean.repeat(g)
        var = self.running_var.repeat(g)
        y = F.batch_norm(
            x.view(-1, c * g, h, w), mean, var, self.weight.repeat(g), self.bias.repeat(g),
            True, self.momentum, self.eps,
        ).view(n, c, h, w)
        self.running_mean.copy_(mean.view(g, c).mean(0))
        self.running_var.copy_(var.view(g, c).mean(0))
        return y


def _norm(bn_splits: int):
    return (lambda c: SplitBatchNorm2d(c, bn_splits)) if bn_splits > 1 else nn.BatchNorm2d


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
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


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
}
TORCHVISION = ("resnet18", "resnet50", "resnet18_cifar", "resnet50_cifar")


def encoder_names() -> list[str]:
    """Names :func:`build_encoder` accepts (plus ``timm:<any timm model>``)."""
    return sorted(SMALL) + list(TORCHVISION) + ["timm:<name>"]


def build_encoder(name: str, bn_splits: int = 1) -> nn.Module:
    """A backbone that maps images to pooled features; ``.out_dim`` gives their size.

    ``resnet10_w16`` etc. are CIFAR-stem CPU models; ``resnet18``/``resnet50`` are torchvision's
    (``_cifar`` for the 3x3 stem); ``timm:<model>`` is any timm model, randomly initialised, no download.
    """
    if name in SMALL:
        return SmallResNet(**SMALL[name], bn_splits=bn_splits)
    if name in TORCHVISION:
        return _torchvision_resnet(name.removesuffix("_cifar"), name.endswith("_cifar"), bn_splits)
    if name.startswith("timm:"):
        import timm

        model_name = name.split(":", 1)[1]
        if not timm.is_model(model_name):
            close = difflib.get_close_matches(model_name, timm.list_models(), n=3)
            raise ValueError(f"unknown timm model {model_name!r}; close names: {close}.")
        if bn_splits > 1:
            raise ValueError("bn_splits > 1 is supported for the ResNet encoders only; set model.bn_splits=1.")
        net = timm.create_model(model_name, pretrained=False, num_classes=0)
        net.out_dim = net.num_features
        return net
    close = difflib.get_close_matches(name, encoder_names(), n=3)
    raise ValueError(f"unknown encoder {name!r}; did you mean {close}? Known: {encoder_names()}.")


def projection_head(in_dim: int, out_dim: int = 128, mlp: bool = True) -> nn.Module:
    """MoCo v1: one linear layer; MoCo v2: Linear-ReLU-Linear (hidden size = in_dim)."""
    if not mlp:
        return nn.Linear(in_dim, out_dim)
    return nn.Sequential(nn.Linear(in_dim, in_dim), nn.ReLU(inplace=True), nn.Linear(in_dim, out_dim))


class Encoder(nn.Module):
    """Backbone followed by a projection head; ``forward`` returns the head output (not normalised)."""

    def __init__(self, backbone: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


class MoCo(nn.Module):
    """MoCo: query encoder, momentum key encoder (eq. 2) and a queue of K clean keys.

    ``forward`` returns the L2-normalised query and key; the loss (with FT) lives in
    :mod:`ftcl_core.losses`, the enqueue happens after it, with the clean keys only.
    """

    def __init__(self, encoder: Encoder, dim: int, queue_size: int, momentum: float, seed: int = 0) -> None:
        super().__init__()
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"momentum m={momentum} is outside [0, 1]; MoCo uses 0.99 or 0.999.")
        self.encoder_q = encoder
        self.encoder_k = copy.deepcopy(encoder)
        for p in self.encoder_k.parameters():
            p.requires_grad_(False)
        self.momentum = momentum
        gen = torch.Generator().manual_seed(seed)
        self.register_buffer("queue", F.normalize(torch.randn(queue_size, dim, generator=gen), dim=1))
        self.register_buffer("queue_ptr", torch.zeros((), dtype=torch.long))

    @torch.no_grad()
    def momentum_update(self) -> None:
        """eq. 2: theta_k <- m theta_k + (1 - m) theta_q; the key encoder keeps its own BN statistics."""
        q_params = [p for p in self.encoder_q.parameters()]
        k_params = [p for p in self.encoder_k.parameters()]
        torch._foreach_mul_(k_params, self.momentum)
        torch._foreach_add_(k_params, q_params, alpha=1.0 - self.momentum)

    @torch.no_grad()
    def enqueue(self, keys: torch.Tensor) -> None:
        """Write ``keys`` (clean, normalised) at the pointer, wrapping around when K % batch != 0."""
        k_size = self.queue.shape[0]
        n = keys.shape[0]
        if n > k_size:
            raise ValueError(f"batch {n} is larger than the queue K={k_size}; use K >= batch size.")
        ptr = int(self.queue_ptr)
        idx = (torch.arange(n, device=keys.device) + ptr) % k_size
        self.queue.index_copy_(0, idx, keys.detach().to(self.queue.dtype))
        self.queue_ptr.fill_((ptr + n) % k_size)

    def shuffle_keys(self, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """The single-process shuffle-BN seam: a permutation of the key batch and its inverse."""
        perm = torch.randperm(n, generator=gen)
        return perm, torch.argsort(perm)

    def forward(self, x_q: torch.Tensor, x_k: torch.Tensor, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        q = F.normalize(self.encoder_q(x_q), dim=1)
        with torch.no_grad():
            self.momentum_update()
            perm, inverse = self.shuffle_keys(x_k.shape[0], gen)
            k = F.normalize(self.encoder_k(x_k[perm.to(x_k.device)]), dim=1)[inverse.to(x_k.device)]
        return q, k
