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
:func:`info_nce`, and below them :func:`moco_ft_logits` (the scores before the temperature, and which queue row
each negative was mixed with) and :class:`DeviceDraws` (FT's draws made on the GPU, no host copy).
"""

from __future__ import annotations

import torch

from ftcl_core.config import FTConfig
from ftcl_core.losses import FTLogits, QueueLayout, check_moco_inputs, info_nce, logits_from_scores, moco_ft_logits
from ftcl_core.transforms import DeviceDraws, Draws

__all__ = ["DeviceDraws", "FTConfig", "FTLogits", "check_moco_inputs", "info_nce", "logits", "moco_ft_logits"]


def logits(q: torch.Tensor, k: torch.Tensor, queue: torch.Tensor, cfg: FTConfig, gen: Draws, tau: float,
           active: bool = True, queue_layout: QueueLayout = "auto") -> torch.Tensor:
    """InfoNCE's logits ``(N, 1 + K')`` after FT, divided by ``tau``, the positive in column 0 (eq. 1).

    FT as the released code runs it (:func:`moco_ft_logits`): eq. 3 on the pair, Sec 4.2 on the queue, on the
    normalised features inside the loss; the extrapolated query also meets the negatives.  ``active=False``
    (before ``cfg.start_epoch``, Table 6) or ``FTConfig()`` gives MoCo's plain logits.  ``queue`` is ``K x C``;
    ``queue_layout="KC"`` states it for a square queue (``K = C``) and skips its data check."""
    pos, neg, _ = moco_ft_logits(q, k, queue, cfg, gen, active, queue_layout=queue_layout)
    return logits_from_scores(pos, neg, tau)
