"""The visualization tool (Sec 3.2, Supp A) and gradient landscapes (Supp C).

Per step, over the first ``n`` queries of the batch (Supp A uses 64):

* Mean(pos): the mean of the n positive scores;
* Mean(neg): per query the mean of its K negative scores, averaged over the n queries;
* Var(neg): per query the variance of its K negative scores, averaged over the n queries.

Both the raw cosines and the scores after FT are kept (the released code recorded only the latter).
Beside them, four statistics of the representation itself (:func:`representation_statistics`): alignment,
uniformity, the views' deviation correlation rho, and the effective rank.
Values stay on the device in a buffer and are copied to the host every ``sync_every`` steps, so a GPU
is not synchronised each step.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ftcl_core.arguments import check_counts, check_modules, check_scores, check_views, is_count, is_real

# the module's public names: each checks its arguments and names the fix; the rest are building blocks that
# take what these pass them
__all__ = ["layer_grad_norms", "layer_names", "representation_statistics", "score_histogram", "score_statistics"]


SCORE_COLUMNS = ("pos_mean", "neg_mean", "neg_var", "ft_pos_mean", "ft_neg_mean", "ft_neg_var")
# Of the batch's two views (runs stored before these existed lack them): see representation_statistics
REPRESENTATION_COLUMNS = ("align", "uniform", "rho", "erank", "same_class")


def representation_statistics(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    """``[align, uniform, rho, erank]`` of a batch's two views ``(B, d)`` (normalised here), as a tensor.

    * align: E ||z1 - z2||^2 over the pairs (Wang & Isola 2020, alignment with alpha = 2; 0 = identical views);
    * uniform: log E_{i != j} exp(-2 ||z1_i - z1_j||^2) (their uniformity, t = 2; 0 = every image at one point,
      about -4 spread over a sphere);
    * rho: the correlation of the views' deviations from the batch mean, <z1 - m1, z2 - m2> / (|.| |.|)
      (Frobenius).  The positive-extrapolation algebra of chapter 6's diagnosis says a concentrated state
      attracts when rho < 1 - lambda / A;
    * erank: the effective rank of the centred z1, exp of the entropy of its normalised singular values (Roy &
      Vetterli 2007); 1 = every image on one line (dimensional collapse), d = isotropic.

    Never raises on non-finite features (a diverged step): each statistic they reach is NaN. Zero rows stay zero when
    normalised, orthogonal to every row: zero features read as uniformity -4 (not refused: that would read them on
    the device every step).
    """
    check_views("representation_statistics", z1, z2)
    if len(z1) < 2:
        raise ValueError("representation_statistics: uniformity and rank compare images with each other: give at "
                         f"least 2 rows, got {len(z1)}.")
    a, b = F.normalize(z1.detach().float(), dim=1), F.normalize(z2.detach().float(), dim=1)
    n = a.shape[0]
    align = (a - b).pow(2).sum(1).mean()
    logits = 4 * (a @ a.T) - 4  # -2 ||a_i - a_j||^2 = -2 (2 - 2 a_i.a_j) for unit rows: one matmul, no cdist
    logits.diagonal().fill_(-math.inf)  # i != j
    uniform = torch.logsumexp(logits.flatten(), 0) - math.log(n * (n - 1))
    da, db = a - a.mean(0), b - b.mean(0)
    rho = (da * db).sum() / (da.norm() * db.norm()).clamp_min(1e-12)
    # singular values of da from the eigenvalues of its smaller Gram matrix, in float64 so that squaring does not
    # lift rounding noise into the small ones (half the time of an SVD; the recorder runs this every step)
    # A diverged step's features are NaN or infinite: the rank is then NaN (recorded as such; the training loop
    # stops the run on it), computed on zeros so that the solver never sees them (it fails to converge on them).
    # No host check: on a GPU nothing waits.
    finite = torch.isfinite(da).all()
    d64 = torch.where(finite, da.double(), torch.zeros((), dtype=torch.float64, device=da.device))
    gram = d64.T @ d64 if n >= d64.shape[1] else d64 @ d64.T
    s = torch.linalg.eigvalsh(gram).clamp_min(0).sqrt()
    p = s / s.sum().clamp_min(1e-12)
    erank = torch.exp(-(p * torch.log(p.clamp_min(1e-300))).sum()).float()
    erank = torch.where(finite, erank, torch.full_like(erank, math.nan))
    return torch.stack([align, uniform, rho, erank])


def score_statistics(l_pos: torch.Tensor, l_neg: torch.Tensor, n: int = 64
                     ) -> torch.Tensor:
    """Supp A statistics of the first ``n`` queries: Mean(pos), Mean(neg), Var(neg).

    ``l_pos`` is ``(N,)``, ``l_neg`` ``(N, K)``; Var is the population variance over
    the K negatives.
    """
    check_scores("score_statistics", l_pos, l_neg, rows=False)
    check_counts("score_statistics", n=n)
    p, g = l_pos[:n].detach().float(), l_neg[:n].detach().float()
    var, mean = torch.var_mean(g, dim=1, correction=0)
    return torch.stack([p.mean(), mean.mean(), var.mean()])


MAX_BINS = 10_000  # a histogram's bins: the recorder keeps 50 per step; beyond this one row is a large allocation


def score_histogram(l_pos: torch.Tensor, l_neg: torch.Tensor, n: int = 64, bins: int = 50,
                    lo: float = -1.0, hi: float = 1.0) -> torch.Tensor:
    """Histograms ``(2, bins)`` of the positive and negative scores of the first n queries over [lo, hi]
    (Supp A, Supp F.1's score distributions).

    Scores after FT leave [-1, 1]: an extrapolated positive falls to 5S - 4 (eq. 4) and the extrapolated
    query, longer than one, scales every negative.  Such scores are counted in the end bins rather than
    dropped, so each row sums to the number of scores that are not NaN; a NaN score (a diverged step, which the
    training loop stops on) falls in no bin, so its row sums short by as many.
    """
    check_scores("score_histogram", l_pos, l_neg, rows=False)
    check_counts("score_histogram", n=n)
    if not (is_count(bins) and 1 <= bins <= MAX_BINS and is_real(lo) and is_real(hi) and -math.inf < lo < hi < math.inf):
        raise ValueError(f"score_histogram: bins={bins!r} must be a whole number from 1 to {MAX_BINS} and lo={lo!r} < "
                         f"hi={hi!r} finite (the recorder's: 50 bins over [-1, 1]).")

    def hist(x: torch.Tensor) -> torch.Tensor:
        return torch.histc(x.detach().float().clamp(lo, hi), bins, lo, hi)

    return torch.stack([hist(l_pos[:n]), hist(l_neg[:n].flatten())])


class StepRecorder:
    """Collects per-step scalars on the device and flushes them to host lists in batches.

    ``record(step, values)`` takes a 1-D tensor of ``len(columns)`` values; ``columns`` names them.
    """

    def __init__(self, columns: tuple[str, ...], sync_every: int = 50) -> None:
        self.columns = ("step",) + tuple(columns)
        self.sync_every = sync_every
        self._pending: list[torch.Tensor] = []
        self._steps: list[int] = []
        self.rows: list[list[float]] = []

    def record(self, step: int, values: torch.Tensor) -> None:
        self._pending.append(values.detach())
        self._steps.append(step)
        if len(self._pending) >= self.sync_every:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        block = torch.stack(self._pending).float().cpu().tolist()
        self.rows.extend([[float(s)] + row for s, row in zip(self._steps, block)])
        self._pending, self._steps = [], []

    def as_arrays(self) -> dict:

        self.flush()
        table = np.asarray(self.rows, dtype=np.float64).reshape(-1, len(self.columns))
        return {c: table[:, i] for i, c in enumerate(self.columns)}

    def load(self, arrays: dict, upto_step: int) -> None:
        """Restore rows from :meth:`as_arrays` output, keeping steps ``< upto_step`` (for resume); a column
        that a run stored before it existed is NaN for those steps."""

        keep = np.asarray(arrays["step"]) < upto_step
        cols = [np.asarray(arrays[c])[keep] if c in arrays else np.full(int(keep.sum()), np.nan) for c in self.columns]
        self.rows = [list(map(float, r)) for r in zip(*cols)]


def layer_names(model: nn.Module) -> list[str]:
    """Names of the parameterised layers (conv, BN, linear...) in forward order, one per module."""
    check_modules("layer_names", model=model)
    names = []
    for name, module in model.named_modules():
        if any(p.requires_grad for p in module.parameters(recurse=False)):
            names.append(name)
    return names


def layer_grad_norms(model: nn.Module) -> torch.Tensor:
    """Supp C: the L2 norm of the gradient of every layer (all its parameters together), ``(n_layers,)``.

    Computed on the device with one fused ``_foreach_norm``; layers without a gradient give 0.
    """
    check_modules("layer_grad_norms", model=model)
    per_layer = []
    for module in model.modules():
        params = [p for p in module.parameters(recurse=False) if p.requires_grad]
        if params:
            per_layer.append(params)
    if not per_layer:
        raise ValueError(f"layer_grad_norms: {type(model).__name__} has no trainable parameters, so no layer has a "
                         "gradient to measure: pass the trained network.")
    flat = [p for params in per_layer for p in params]
    if all(p.grad is None for p in flat):
        raise ValueError("layer_grad_norms: no layer has a gradient yet: call it after loss.backward().")
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in flat]
    norms = torch._foreach_norm(grads)
    out, i = [], 0
    for params in per_layer:
        sq = torch.stack([norms[i + j] ** 2 for j in range(len(params))]).sum()
        out.append(sq.sqrt())
        i += len(params)
    return torch.stack(out)
