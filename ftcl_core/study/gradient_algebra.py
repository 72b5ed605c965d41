"""Why positive extrapolation can pull an encoder into collapse: the gradient algebra, checked against autograd.

Take the released code's semantics (eq. 3 with unit ``q``, ``k``, the key detached, one ``l`` in [1, 2], the
extrapolated query also scored against the negatives ``n_j``).  The positive score is

    s+ = q'.k' = A (q.k) + 2 l (1 - l),   A = l^2 + (1 - l)^2,

so its gradient on ``q`` is ``A k + 2 l (1 - l) q``; each negative score ``q'.n_j`` has gradient ``l n_j``.  With
softmax weights ``p`` over ``[s+, s_j] / tau`` (eq. 1) and the normaliser ``q = z / |z|``, whose Jacobian is the
tangent projector ``P_q = (I - q q^T) / |z|``, the ``q`` term drops out:

    dL/dz = -(1 - p_0) / tau . P_q [ A k - l n_bar ],   n_bar = sum_j p_j n_j / (1 - p_0).

Alignment is weighted by ``A``, uniformity by ``l``; without FT both are 1.  Linearise around a concentrated
state (every feature near one direction ``m``; ``q = m + d``, ``k = m + e`` with small tangent deviations, the
negatives' weighted deviation uncorrelated with ``d``): a gradient step moves ``d`` by ``c (A e - (A - l) d)``, so
``E|d|^2`` shrinks when ``A rho < A - l``, i.e. when the views' deviation correlation ``rho < 1 - l / A``.  Without
FT the threshold is 0: a concentrated state repels as soon as the views agree at all.  With ``l = 1.5`` it is
0.4: concentration *attracts* until the two views agree more than that.  (:func:`attraction_threshold`.)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ftcl_core import transforms
from ftcl_core.losses import info_nce, logits_from_scores
from ftcl_core.study.curves import COLLAPSE_LEVEL  # noqa: F401  (one level for chapters 2, 6 and 7)


def alignment_weight(lam: torch.Tensor | float) -> torch.Tensor | float:
    """``A = l^2 + (1 - l)^2``: the factor eq. 3's extrapolation puts on the positive's pull (1 without FT)."""
    return lam**2 + (1 - lam) ** 2


def attraction_threshold(lam: torch.Tensor | float) -> torch.Tensor | float:
    """``1 - l / A``: below this views' correlation rho, a concentrated representation contracts further."""
    return 1 - lam / alignment_weight(lam)


def mean_weight_ratio(alpha: float = 2.0, points: int = 20_001) -> float:
    """``E[A / l]`` for ``l ~ Beta(alpha, alpha) + 1`` (the paper's alpha_ex = 2), by quadrature on a grid."""
    u = torch.linspace(0, 1, points, dtype=torch.float64)[1:-1]
    density = torch.distributions.Beta(torch.tensor(alpha, dtype=torch.float64),
                                       torch.tensor(alpha, dtype=torch.float64)).log_prob(u).exp()
    ratio = alignment_weight(1 + u) / (1 + u)
    return float((density * ratio).sum() / density.sum())


def weight_facts(alpha: float = 2.0) -> dict:
    """How FT weighs the pull against the push, averaged over its lambdas (:func:`mean_weight_ratio`): the ratio
    formatted (``ratio``) and raw (``value``; 1 without FT)."""
    value = mean_weight_ratio(alpha)
    return {"ratio": f"{value:.2f}", "value": value}


CHECKS = {  # chapter 7b's words on the algebra (ftcl_core.study.chapters.gradient)
    "FT weighs the pull more than the push": lambda f: None if f["value"] > 1 else f"E[A/l] = {f['ratio']}",
}


def threshold_band(alpha: float = 2.0, lo: float = 0.05, hi: float = 0.95, points: int = 20_001) -> tuple[float, float]:
    """The attraction thresholds ``1 - l / A`` at the ``lo`` and ``hi`` quantiles of ``l ~ Beta(alpha, alpha) + 1``
    (the threshold rises with ``l`` on [1, 2], so these are the band's quantiles too)."""
    u = torch.linspace(0, 1, points, dtype=torch.float64)
    density = torch.distributions.Beta(torch.tensor(alpha, dtype=torch.float64),
                                       torch.tensor(alpha, dtype=torch.float64)).log_prob(u[1:-1]).exp()
    cdf = torch.cat([torch.zeros(1, dtype=torch.float64), density.cumsum(0) / density.sum(), torch.ones(1, dtype=torch.float64)])
    quantile = [float(u[int(torch.searchsorted(cdf, torch.tensor(q, dtype=torch.float64)))]) for q in (lo, hi)]
    return float(attraction_threshold(1 + quantile[0])), float(attraction_threshold(1 + quantile[1]))


def analytic_gradient(z: torch.Tensor, k: torch.Tensor, negatives: torch.Tensor,
                      lam: float, tau: float) -> torch.Tensor:
    """``dL/dz`` of the InfoNCE loss (eq. 1) after positive extrapolation (eq. 3),
    from the formula above.

    ``z`` ``(N, D)``: the query network's outputs before the normaliser; ``k``
    ``(N, D)`` unit keys (detached); ``negatives`` ``(K, D)`` unit queue entries; the
    loss is the mean over the N queries.
    """
    norm = z.norm(dim=1, keepdim=True)
    q = z / norm
    q_ft, k_ft = transforms.extrapolate_positive(q, k, lam)
    logits = logits_from_scores((q_ft * k_ft).sum(1), q_ft @ negatives.T, tau)
    p = logits.softmax(1)
    pull = (1 - p[:, :1]) * alignment_weight(lam) * k - lam * p[:, 1:] @ negatives
    # pull = (1 - p0)(A k - l n_bar)
    tangent = pull - (pull * q).sum(1, keepdim=True) * q
    return -tangent / (tau * norm) / z.shape[0]


def autograd_gradient(z: torch.Tensor, k: torch.Tensor, negatives: torch.Tensor, lam: float, tau: float) -> torch.Tensor:
    """The same gradient by autograd through the library's own FT and loss functions (what training runs)."""
    z = z.detach().clone().requires_grad_(True)
    q_ft, k_ft = transforms.extrapolate_positive(F.normalize(z, dim=1), k, lam)
    loss = info_nce(logits_from_scores((q_ft * k_ft).sum(1), q_ft @ negatives.T, tau))
    (grad,) = torch.autograd.grad(loss, z)
    return grad


RHO_RANGE = (-0.5, 1.0)  # the contraction figure's correlations: from keys that disagree to keys that agree fully


def rho_grid(points: int) -> list[float]:
    """``points`` evenly spaced correlations over :data:`RHO_RANGE` for the contraction figure (chapter 7b's
    ``points`` parameter, which every profile honours); refused unless an integer from 2 to 401."""
    if isinstance(points, bool) or not isinstance(points, int) or not 2 <= points <= 401:
        raise ValueError(f"points={points!r}: the contraction figure needs an integer from 2 to 401 values of rho "
                         "(each costs a gradient step at five values of lambda), e.g. -p points 21.")
    lo, hi = RHO_RANGE
    return [lo + (hi - lo) * i / (points - 1) for i in range(points)]


def contraction_rate(rho: float, lam: float, tau: float = 0.2, n: int = 512, dim: int = 64, queue: int = 4096,
                     spread: float = 1e-3, lr: float = 1e-2, seed: int = 0) -> float:
    """Relative change of a concentrated representation's spread after one SGD step of the FT loss.

    Builds the state of the linearisation in float64: queries ``m + spread d`` around one unit direction ``m``,
    keys ``m + spread e`` whose deviations correlate with the queries' by ``rho``, a queue of unrelated deviations;
    takes one step through :func:`autograd_gradient` and returns ``spread_after / spread_before - 1`` of the
    normalised queries.  Negative: the state contracts (collapse attracts); positive: it spreads out.
    """
    if not -1 <= rho <= 1:
        raise ValueError(f"rho={rho} is a correlation; choose it in [-1, 1].")
    g = torch.Generator().manual_seed(seed)
    m = F.normalize(torch.randn(1, dim, generator=g, dtype=torch.float64), dim=1)

    def tangent(x: torch.Tensor) -> torch.Tensor:
        return x - (x * m).sum(1, keepdim=True) * m

    d = tangent(torch.randn(n, dim, generator=g, dtype=torch.float64))
    e = rho * d + (1 - rho**2) ** 0.5 * tangent(torch.randn(n, dim, generator=g, dtype=torch.float64))
    eta = tangent(torch.randn(queue, dim, generator=g, dtype=torch.float64))
    z = m + spread * d
    k, negatives = F.normalize(m + spread * e, dim=1), F.normalize(m + spread * eta, dim=1)
    step = z - lr * n * autograd_gradient(z, k, negatives, lam, tau)  # n: the gradient of the per-query loss

    def size(x: torch.Tensor) -> torch.Tensor:
        x = F.normalize(x, dim=1)
        return (x - x.mean(0)).pow(2).sum(1).mean()

    return float(size(step) / size(z) - 1)
