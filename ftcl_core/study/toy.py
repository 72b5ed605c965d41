"""A toy contrastive problem that trains in seconds, for the first Learn chapter: points of a few clusters in the
plane, two noisy views of each point (the toy's augmentation), and a small MLP that maps a point onto the unit
circle, so that every feature can be drawn as an angle. The loss is InfoNCE (eq. 1) with the other points of the
batch as negatives (SimCLR's negatives, one direction): query i's positive is the other view of point i, its
negatives the second views of every other point.

Nothing here is MoCo: no queue and no momentum encoder (the second Learn chapter builds those), only what makes a
contrastive loss learn: the two views of an input are pulled together (alignment) while every input is pushed away
from the others (uniformity, Wang & Isola 2020), at a sharpness the temperature sets."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ftcl_core.losses import info_nce
from ftcl_core.stats import representation_statistics


def toy_points(n: int, clusters: int, gen: torch.Generator, spread: float = 0.35) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` points ``(n, 2)`` of ``clusters`` round clusters whose centres sit on a circle of radius 2, and each
    point's cluster ``(n,)``. The labels are never shown to the loss; they only colour the figures."""
    if n < 1 or clusters < 1:
        raise ValueError(f"toy_points needs n >= 1 and clusters >= 1, got n={n}, clusters={clusters}")
    labels = torch.randint(clusters, (n,), generator=gen)
    angle = 2 * math.pi * labels.float() / clusters
    centres = 2 * torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
    return centres + spread * torch.randn(n, 2, generator=gen), labels


def toy_views(x: torch.Tensor, noise: float, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Two views of each point: the point plus independent Gaussian noise of scale ``noise`` (the toy's
    augmentation: what the two views share is the point, what differs is noise)."""
    return x + noise * torch.randn(x.shape, generator=gen), x + noise * torch.randn(x.shape, generator=gen)


class ToyEncoder(nn.Module):
    """A point of the plane -> a unit feature of ``dim`` dimensions (2: a point on the circle)."""

    def __init__(self, dim: int = 2, hidden: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.net(x), dim=1)  # N x dim, on the unit sphere


def in_batch_logits(q: torch.Tensor, k: torch.Tensor, tau: float) -> torch.Tensor:
    """eq. 1's logits ``(N, N)`` with the other points of the batch as negatives: column 0 holds each query's
    positive score ``q_i . k_i``, columns 1.. its scores against every other point's key ``q_i . k_j`` (j != i),
    all divided by ``tau``. ``q, k``: unit features ``(N, C)``."""
    n = q.shape[0]
    scores = q @ k.T                                                   # N x N, the positives on the diagonal
    off = ~torch.eye(n, dtype=torch.bool, device=q.device)
    return torch.cat([scores.diagonal()[:, None], scores[off].view(n, n - 1)], dim=1) / tau  # N x N


@dataclass
class ToyRun:
    """What :func:`train_toy` returns: per step the loss, alignment and uniformity (``history``); the features of
    a fixed evaluation set before and after training with its clusters (``before``, ``after``, ``labels``,
    ``(n, dim)`` arrays); and the settings."""

    tau: float
    steps: int
    negatives: bool = True
    history: dict[str, np.ndarray] = field(default_factory=dict)
    before: np.ndarray | None = None
    after: np.ndarray | None = None
    labels: np.ndarray | None = None


def train_toy(tau: float = 0.2, steps: int = 300, batch: int = 256, clusters: int = 6, noise: float = 0.3,
              seed: int = 0, lr: float = 3e-3, dim: int = 2, n_eval: int = 600, negatives: bool = True) -> ToyRun:
    """Train :class:`ToyEncoder` with InfoNCE at temperature ``tau`` for ``steps`` Adam steps on fresh batches of
    ``batch`` toy points (:func:`toy_points`, :func:`toy_views`); deterministic given ``seed``. Alignment and
    uniformity are :func:`ftcl_core.stats.representation_statistics`'s, on each step's two views.
    ``negatives=False`` keeps only the positive term, ``-q_i . k_i / tau`` (pull the views together, push nothing
    apart): the loss an encoder satisfies by mapping every input to one point, a collapse."""
    if not tau > 0:
        raise ValueError(f"tau={tau} must be > 0 (InfoNCE divides the scores by it); the paper's MoCo uses 0.07 or 0.2")
    if steps < 1 or batch < 2:
        raise ValueError(f"train_toy needs steps >= 1 and batch >= 2 (a query needs a negative), got {steps}, {batch}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    encoder = ToyEncoder(dim)
    opt = torch.optim.Adam(encoder.parameters(), lr=lr)
    x_eval, labels = toy_points(n_eval, clusters, torch.Generator().manual_seed(10_000 + seed))
    run = ToyRun(tau, steps, negatives, labels=labels.numpy())
    with torch.no_grad():
        run.before = encoder(x_eval).numpy()
    loss_h, align_h, uniform_h = [], [], []
    for _ in range(steps):
        x, _ = toy_points(batch, clusters, gen)
        v1, v2 = toy_views(x, noise, gen)
        q, k = encoder(v1), encoder(v2)
        loss = info_nce(in_batch_logits(q, k, tau)) if negatives else -(q * k).sum(1).mean() / tau  # eq. 1
        opt.zero_grad()
        loss.backward()
        opt.step()
        align, uniform = representation_statistics(q, k)[:2].tolist()
        loss_h.append(float(loss.detach()))
        align_h.append(align)
        uniform_h.append(uniform)
    with torch.no_grad():
        run.after = encoder(x_eval).numpy()
    run.history = {"loss": np.array(loss_h), "align": np.array(align_h), "uniform": np.array(uniform_h)}
    return run


def hardest_share(features: np.ndarray, tau: float, top: float = 0.1) -> float:
    """How much of InfoNCE's push a query spends on its hardest negatives: per query, the softmax weights
    ``exp(s_j / tau)`` of its scores against every other point (the weights eq. 1's gradient gives the negatives),
    the share that falls on the ``top`` fraction with the highest scores, averaged over queries. Near ``top``: every
    negative is pushed alike; near 1: only the closest ones are."""
    x, share = push_curve(features, tau)
    k = max(1, int(round(top * len(x))))
    return float(share[k - 1])


def push_curve(features: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """The whole of :func:`hardest_share` at once: per query its negatives ranked from the highest score down, and
    the share of the push (the softmax weights ``exp(s_j / tau)`` of eq. 1's gradient) the hardest fraction ``x``
    receives, averaged over queries. Returns ``(x, share)``, two arrays of ``n - 1`` points, ``x = 1 / (n - 1) ...
    1``: ``share`` rises from the hardest negative's weight to 1, and lies on the diagonal when every negative is
    pushed alike. ``share`` at ``x = top`` is ``hardest_share(features, tau, top)``."""
    f = torch.as_tensor(features, dtype=torch.float64)
    n = f.shape[0]
    if n < 2:
        raise ValueError(f"push_curve needs at least 2 features (a query needs a negative), got {n}")
    scores = (f @ f.T)[~torch.eye(n, dtype=torch.bool)].view(n, n - 1)
    w = torch.softmax(scores / tau, dim=1).sort(dim=1, descending=True).values
    share = w.cumsum(dim=1).mean(0).numpy()
    return np.arange(1, n) / (n - 1), share


def own_cluster_push(features: np.ndarray, labels: np.ndarray, tau: float) -> tuple[float, float]:
    """How much of InfoNCE's push falls on a query's false negatives (the other points of its own cluster, which a
    label-free loss pushes away like any other): per query the share of the softmax weights ``exp(s_j / tau)`` of
    eq. 1's gradient on same-label negatives, averaged over queries; and the share of the negatives they are (about
    ``1 / clusters``). Returns ``(push share, count share)``."""
    f, y = torch.as_tensor(features, dtype=torch.float64), torch.as_tensor(labels)
    n = f.shape[0]
    if n < 2:
        raise ValueError(f"own_cluster_push needs at least 2 features (a query needs a negative), got {n}")
    off = ~torch.eye(n, dtype=torch.bool)
    w = torch.softmax((f @ f.T)[off].view(n, n - 1) / tau, dim=1)
    same = (y[:, None] == y[None, :])[off].view(n, n - 1)
    return float((w * same).sum(1).mean()), float(same.double().mean())
