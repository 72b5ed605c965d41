"""Evaluation of a frozen encoder: weighted kNN monitor and linear readout (the paper's protocol, scaled).

Linear readout (Supp B): a linear classifier trained on the frozen backbone's pooled features and
reported as single-view top-1 on the test split.  Scaled for a CPU: features are extracted once from the
evaluation view and standardised with the train split's statistics (so random-init and trained encoders,
whose feature scales differ by orders of magnitude, are read out on equal terms), then a softmax
classifier is trained with SGD + momentum and a cosine schedule.  "Collapse" is defined against the same
readout of a randomly initialised encoder (Table 1 footnote).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ftcl_core.arguments import (
    check_counts,
    check_device,
    check_finite,
    check_images,
    check_modules,
    check_readout,
    is_count,
    is_real,
)
from ftcl_core.augment import AugmentConfig, center_view, check_augment_config
from ftcl_core.config import MAX_SEED

# the module's public names: each checks its arguments and names the fix; the rest are building blocks that
# take what these pass them
__all__ = ["evaluate_backbone", "extract_features", "knn_top1", "linear_readout", "raw_pixel_readout"]


# Below this kNN temperature exp(s / t) overflows float32 for a cosine s near 1 (exp(88.7) is its largest value).
MIN_KNN_T = 0.012


@torch.no_grad()
def extract_features(
    backbone: nn.Module, images: torch.Tensor, cfg: AugmentConfig, batch_size: int = 512, device: str = "cpu"
) -> torch.Tensor:
    """Pooled backbone features ``(N, F)`` of uint8 images ``(N, 3, H, W)``, in eval mode, from the evaluation view
    (float images are refused: :func:`~ftcl_core.augment.center_view`)."""
    check_modules("extract_features", "an encoder's backbone", backbone=backbone)
    check_images("extract_features", images)
    check_augment_config("extract_features", cfg)
    check_counts("extract_features", batch_size=batch_size)
    check_device("extract_features", device)
    dtype = next((p.dtype for p in backbone.parameters() if p.is_floating_point()), torch.float32)
    was_training = backbone.training
    backbone.eval()
    feats = []
    for start in range(0, len(images), batch_size):
        x = center_view(images[start : start + batch_size].to(device), cfg).to(dtype)  # a half model: half views
        feats.append(backbone(x).float().cpu())
    backbone.train(was_training)
    return torch.cat(feats)


def knn_top1(
    train_feats: torch.Tensor, train_labels: torch.Tensor, test_feats: torch.Tensor, test_labels: torch.Tensor,
    k: int = 200, t: float = 0.1, chunk: int = 1024,
) -> float:
    """Weighted kNN (InstDisc / MoCo monitor): cosine neighbours, weights ``exp(s / t)``; top-1 in percent."""
    check_readout("knn_top1", train_feats, train_labels, test_feats, test_labels, t=t)
    check_counts("knn_top1", k=k, chunk=chunk)
    if t < MIN_KNN_T:
        raise ValueError(f"knn_top1: t={t!r} is below {MIN_KNN_T}, where exp(s / t) overflows float32: the weights "
                         "would be infinite. InstDisc and MoCo use t=0.07 or 0.1.")
    check_finite("knn_top1", train_feats=train_feats, test_feats=test_feats)
    n_cls = _classes("knn_top1", train_labels, test_labels)
    train_feats, test_feats = train_feats.detach().float(), test_feats.detach().float()  # half: exp(s / t) overflows
    if k > len(train_feats):  # the command line refuses eval.knn_k > data.n_train the same way
        raise ValueError(f"knn_top1: k={k} neighbours asked of {len(train_feats)} training images; pass k at most "
                         f"{len(train_feats)} (k=min(k, len(train_feats)) to vote with every image).")
    bank = F.normalize(train_feats, dim=1)
    correct = 0
    for start in range(0, len(test_feats), chunk):
        f = F.normalize(test_feats[start : start + chunk], dim=1)
        sim, idx = (f @ bank.T).topk(k, dim=1)
        weights = (sim / t).exp()
        votes = torch.zeros(len(f), n_cls, dtype=weights.dtype).scatter_add_(1, train_labels[idx].long(), weights)
        correct += int((votes.argmax(1) == test_labels[start : start + chunk]).sum())
    return 100.0 * correct / len(test_feats)


def _check_sets(caller: str, train: object, test: object) -> None:
    from ftcl_core.data import ImageSet

    if not (isinstance(train, ImageSet) and isinstance(test, ImageSet)):
        raise TypeError(f"{caller}: train and test must be ImageSets (ftcl_core.data), got {type(train).__name__} and "
                        f"{type(test).__name__}.")


def _classes(caller: str, train_labels: torch.Tensor, test_labels: torch.Tensor) -> int:
    """The number of classes, ``max label + 1``: refused when it passes the images given (labels are class indices
    0 .. C-1, not arbitrary codes, which would size the vote and the classifier by the largest)."""
    n_cls = int(max(train_labels.max(), test_labels.max())) + 1
    if n_cls > len(train_labels) + len(test_labels):
        raise ValueError(f"{caller}: the labels reach {n_cls - 1}, more classes than the {len(train_labels)} + "
                         f"{len(test_labels)} images: labels are class indices 0 .. C-1; map codes to them with "
                         "torch.unique(labels, return_inverse=True).")
    if unseen := sorted(set(test_labels.tolist()) - set(train_labels.tolist())):
        raise ValueError(f"{caller}: the test labels hold classes no training image has ({unseen[:5]}"
                         f"{' ...' if len(unseen) > 5 else ''}): a readout can never name them. Train on every class "
                         "it is tested on.")
    if len(set(train_labels.tolist())) < 2:  # every answer right by construction: a readout of nothing
        raise ValueError(f"{caller}: the training labels hold one class: a readout needs at least 2 to tell apart.")
    return n_cls


def linear_readout(
    train_feats: torch.Tensor, train_labels: torch.Tensor, test_feats: torch.Tensor, test_labels: torch.Tensor,
    epochs: int = 100, lr: float = 0.1, batch_size: int = 256, weight_decay: float = 0.0, seed: int = 0,
) -> float:
    """Train a linear softmax classifier on standardised frozen features; test top-1 in percent.

    The paper's linear protocol (Supp B.2-B.3: frozen encoder, one linear layer, lr 10 on raw features) with the
    features standardised first, so that one modest lr serves every encoder and scale."""
    check_readout("linear_readout", train_feats, train_labels, test_feats, test_labels, lr=lr)
    check_counts("linear_readout", epochs=epochs, batch_size=batch_size)
    check_counts("linear_readout", minimum=0, seed=seed)
    if seed > MAX_SEED:
        raise ValueError(f"linear_readout: seed={seed} must be at most {MAX_SEED} (2**32 - 1), as a config's seed.")
    if not (is_real(weight_decay) and 0 <= weight_decay < float("inf")):
        raise ValueError(f"linear_readout: weight_decay={weight_decay!r} must be a finite number >= 0 (0 is usual).")
    if len(train_feats) < 2:
        raise ValueError("linear_readout: one training image has no spread to standardise the features by: give "
                         "at least 2.")
    check_finite("linear_readout", train_feats=train_feats, test_feats=test_feats)
    n_cls = _classes("linear_readout", train_labels, test_labels)
    train_feats, test_feats = train_feats.detach().float(), test_feats.detach().float()  # frozen: no grad reaches them
    train_labels, test_labels = train_labels.long(), test_labels.long()
    gen = torch.Generator().manual_seed(seed)
    mean, std = train_feats.mean(0), train_feats.std(0).clamp_min(1e-6)
    xtr, xte = (train_feats - mean) / std, (test_feats - mean) / std
    clf = nn.Linear(xtr.shape[1], n_cls)
    with torch.no_grad():
        clf.weight.copy_(0.01 * torch.randn(clf.weight.shape, generator=gen))
        clf.bias.zero_()
    opt = torch.optim.SGD(clf.parameters(), lr=lr, momentum=0.9, weight_decay=weight_decay)
    steps_per_epoch = (len(xtr) + batch_size - 1) // batch_size
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs * steps_per_epoch)
    for _ in range(epochs):
        order = torch.randperm(len(xtr), generator=gen)
        for start in range(0, len(xtr), batch_size):
            idx = order[start : start + batch_size]
            loss = F.cross_entropy(clf(xtr[idx]), train_labels[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
    with torch.no_grad():
        return 100.0 * float((clf(xte).argmax(1) == test_labels).float().mean())


def evaluate_backbone(
    backbone: nn.Module, train, test, cfg: AugmentConfig, device: str = "cpu",
    knn_k: int = 200, knn_t: float = 0.1, linear_epochs: int = 100, linear_lr: float = 0.1, seed: int = 0,
) -> dict:
    """kNN and linear-readout top-1 (percent) of ``backbone`` on ``train``/``test`` :class:`ImageSet` s; the kNN
    votes with ``knn_k`` neighbours, or with every training image where there are fewer (a small image folder)."""
    _check_sets("evaluate_backbone", train, test)
    ftr = extract_features(backbone, train.images, cfg, device=device)
    fte = extract_features(backbone, test.images, cfg, device=device)
    return {
        "knn_top1": knn_top1(ftr, train.labels, fte, test.labels, t=knn_t,  # a bad k still reaches knn_top1's check
                             k=min(knn_k, len(ftr)) if is_count(knn_k) else knn_k),
        "linear_top1": linear_readout(ftr, train.labels, fte, test.labels, epochs=linear_epochs, lr=linear_lr, seed=seed),
    }


def raw_pixel_readout(train, test, cfg: AugmentConfig, epochs: int = 100, lr: float = 0.1, seed: int = 0) -> float:
    """The linear readout of the evaluation view's raw pixels (no encoder): the third reference beside the trained
    and random-init encoders. On real images an encoder is only worth something if it beats this."""
    _check_sets("raw_pixel_readout", train, test)
    def pixels(images: torch.Tensor) -> torch.Tensor:
        return torch.cat([center_view(images[i: i + 1024], cfg).flatten(1) for i in range(0, len(images), 1024)])

    return linear_readout(pixels(train.images), train.labels, pixels(test.images), test.labels, epochs=epochs, lr=lr,
                          seed=seed)
