"""FT for your own MoCo: the settings, the logits after FT and the loss, in one import.

The lift, in the step of a MoCo of your own (``q, k``: the normalised query and key features, ``N x C``;
``queue``: the stored keys, ``K x C``, one key per row)::

    import torch
    from ftcl_core import ft

    cfg = ft.FTConfig(pos=True, neg=True)               # eq. 3 + Sec 4.2, alpha_ex = 2.0, alpha_in = 1.6
    gen = torch.Generator().manual_seed(0)              # FT's draws (lambda, the queue's partners): yours to seed
    logits = ft.logits(q, k, queue, cfg, gen, tau=0.2)  # eq. 1's logits after FT, the positive in column 0
    loss = ft.info_nce(logits)                          # eq. 1

then backward, and enqueue the clean ``k`` as ever (the released code enqueues the un-transformed keys).
facebookresearch/moco's ``builder.py`` keeps its queue ``C x K`` (``l_neg = einsum('nc,ck->nk', q, queue)``):
pass ``self.queue.T``.  A wrong layout, a dict for ``cfg`` or a ``gen`` that is not a generator is refused
with the fix (:func:`ftcl_core.losses.check_moco_inputs`, which also says how a square queue, ``K = C``, is
told apart).  ``FTConfig()`` is FT off: ``logits`` are then MoCo's plain ones and the loss plain InfoNCE.

Names: :class:`FTConfig` (the ``ft.*`` switches of a run config, :mod:`ftcl_core.config`), :func:`logits`,
:func:`info_nce`, :class:`PlateauStart` (when to switch FT on, decided by the run's own loss: ``ft.start=auto``), and
below them :func:`moco_ft_logits` (the scores before the temperature, and which queue row each negative was mixed
with) and :class:`DeviceDraws` (FT's draws made on the GPU, no host copy).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import torch

from ftcl_core.arguments import UNIT_NORM_TOL, check_dense, is_count, is_real, off_unit_norm
from ftcl_core.config import FTConfig
from ftcl_core.losses import (
    FTLogits,
    QueueLayout,
    check_moco_inputs,
    info_nce,
    logits_from_scores,
    moco_ft_logits,
)
from ftcl_core.transforms import DeviceDraws, Draws

__all__ = ["DeviceDraws", "FTConfig", "FTLogits", "PlateauStart", "check_moco_inputs", "info_nce", "logits",
           "moco_ft_logits"]


def logits(q: torch.Tensor, k: torch.Tensor, queue: torch.Tensor, cfg: FTConfig, gen: Draws, tau: float,
           active: bool = True, queue_layout: QueueLayout = "auto") -> torch.Tensor:
    """InfoNCE's logits ``(N, 1 + K')`` after FT, divided by ``tau``, the positive in column 0 (eq. 1).

    FT as the released code runs it (:func:`moco_ft_logits`): eq. 3 on the pair, Sec 4.2 on the queue, on the
    normalised features inside the loss; the extrapolated query also meets the negatives.  ``active=False``
    (before ``cfg.start_epoch``, Table 6) or ``FTConfig()`` gives MoCo's plain logits.  ``queue`` is ``K x C``;
    ``queue_layout="KC"`` states it for a square queue (``K = C``) and skips its data check.

    On the CPU, ``q`` and ``k`` must be rows of unit norm (``F.normalize(x, dim=1)``, as MoCo passes them); on a
    GPU this is not checked, since a check would read the device every step.  Non-finite rows pass: a diverged
    step's loss is NaN, the signal a training loop watches for."""
    check_dense("ft.logits", q=q, k=k, queue=queue)  # meta and sparse tensors named (check_moco_inputs reads shapes)
    if isinstance(cfg, FTConfig) and (when := cfg.when_keys()):
        raise ValueError(f"ft.logits has no epoch, so FTConfig({when}) would be ignored: build the FTConfig without it "
                         "and pass active=epoch >= start_epoch (or active=start.on with an ft.PlateauStart).")
    pos, neg, _ = moco_ft_logits(q, k, queue, cfg, gen, active, queue_layout=queue_layout)  # checks shapes, types
    _check_unit_rows(q, k, queue)
    return logits_from_scores(pos, neg, tau)


def _check_unit_rows(q: torch.Tensor, k: torch.Tensor, queue: torch.Tensor) -> None:
    """On the CPU: the finite rows of ``q``, ``k`` and ``queue`` have unit norm (``|norm^2 - 1| <= UNIT_NORM_TOL``),
    else a ValueError."""
    if any(x.device.type != "cpu" for x in (q, k, queue)):
        return
    for name, x in (("q", q), ("k", k), ("queue", queue)):
        if (worst := off_unit_norm(x)) > UNIT_NORM_TOL:
            raise ValueError(f"{name} must hold L2-normalised features (one per row), but a row's squared norm is off 1 "
                             f"by {worst:.3g}: pass F.normalize({name}, dim=1), as MoCo does (FT's extrapolation and "
                             "its scores are defined on the unit sphere; MoCo enqueues normalised keys).")


class PlateauStart:
    """When to switch FT on, decided by the run itself (``ft.start=auto``; issue 66): once learning slows.

    At the end of each epoch, ask :meth:`update` with the epoch's mean training loss (plain InfoNCE: FT is still
    off).  FT switches on from the next epoch once the loss fell, over the last ``window`` epochs, by less than
    ``fraction`` of all it has fallen since the first epoch::

        L[e - window] - L[e] < fraction * (L[0] - L[e])

    The rule reads nothing but the run's own loss (no labels), so it lifts into any MoCo loop::

        start = ft.PlateauStart()                       # window = 5 epochs, fraction = 0.1
        for epoch in range(epochs):
            for ...:                                    # the steps, with active=start.on in ft.logits
                ...
            start.update(epoch_loss)                    # FT is on from the next epoch once start.on

    Window and fraction were chosen on the task with room (``experiments/headroom/auto_start_v1.yaml`` holds the
    choice and its predictions).  Once on, FT stays on; ``start_epoch`` is its first epoch (None while off).  A flat
    loss gives the rule no fall to measure a slowdown against, so FT stays off (``replay([2.0] * 20)`` is None); a
    loss that has risen above its first epoch's (MoCo's loss climbs while the queue fills) reads as slowed, so FT
    switches on once ``window`` epochs have passed (``replay([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])`` is 6): the rule as its
    predictions were committed; to wait, set ``ft.start_epoch`` instead."""

    def __init__(self, window: int = FTConfig.auto_window, fraction: float = FTConfig.auto_fraction) -> None:
        if not (is_count(window) and window >= 1):
            raise ValueError(f"PlateauStart(window={window!r}): the window is a whole number of epochs, at least 1.")
        if not (is_real(fraction) and 0.0 < fraction < 1.0):
            raise ValueError(f"PlateauStart(fraction={fraction!r}): a fraction of the loss's fall so far, in (0, 1).")
        self.window, self.fraction = int(window), float(fraction)
        self.losses: list[float] = []
        self.start_epoch: int | None = None

    @property
    def on(self) -> bool:
        """Whether FT is on for the epoch about to run."""
        return self.start_epoch is not None

    def update(self, epoch_loss: float) -> bool:
        """Record the mean loss of the epoch just ended; whether FT is on from the next epoch."""
        if not (is_real(epoch_loss) and math.isfinite(epoch_loss)):
            raise ValueError(f"PlateauStart.update({epoch_loss!r}): an epoch's mean loss must be a finite number.")
        self.losses.append(float(epoch_loss))
        e = len(self.losses) - 1
        if not self.on and e >= self.window:
            recent, total = self.losses[e - self.window] - self.losses[e], self.losses[0] - self.losses[e]
            if recent < self.fraction * total:
                self.start_epoch = e + 1
        return self.on

    def switch_on(self, epoch: int) -> None:
        """Switch FT on from ``epoch`` whatever the losses say (several processes follow the first's decision)."""
        if not is_count(epoch) or epoch < 0:
            raise ValueError(f"PlateauStart.switch_on({epoch!r}): an epoch is a whole number >= 0.")
        if not self.on:
            self.start_epoch = epoch

    @classmethod
    def replay(cls, epoch_losses, window: int = FTConfig.auto_window, fraction: float = FTConfig.auto_fraction
               ) -> int | None:
        """The epoch the rule switches FT on at, given a run's mean loss per epoch (before FT, the loss of the run
        without FT: the rule only ever reads those); None if it never does."""
        if isinstance(epoch_losses, (str, bytes, Mapping, set, frozenset)) or not isinstance(epoch_losses, Iterable) \
                or getattr(epoch_losses, "ndim", 1) != 1:
            fix = " (a dict's keys would read as losses: pass list(d.values()) in epoch order)" \
                if isinstance(epoch_losses, Mapping) else " (a set has no epoch order)" \
                if isinstance(epoch_losses, (set, frozenset)) else ""
            raise ValueError(f"PlateauStart.replay({epoch_losses!r}): give the run's mean loss of each epoch, a "
                             f"sequence of numbers{fix}.")
        rule = cls(window, fraction)
        losses = list(epoch_losses)
        if not all(is_real(e) and math.isfinite(e) for e in losses):
            raise ValueError(f"PlateauStart.replay({epoch_losses!r}): each epoch's mean loss must be a finite number "
                             "(a dict or a 2-D array is not a sequence of losses).")
        next((e for e in losses if rule.update(e)), None)
        return rule.start_epoch
