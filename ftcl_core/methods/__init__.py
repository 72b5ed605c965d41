"""The methods, one file each: MoCo (v1/v2), SimCLR, BYOL, SimSiam and SwAV, each with FT.

A method is a :class:`~ftcl_core.methods.base.Method`: its networks, its scores with FT inside the loss, its
loss and its hooks around the optimiser step, in one class that reads top to bottom.  FT follows the paper's
reading of each method (Table 5 and the supplement): MoCo and SimCLR get positive extrapolation and negative
interpolation (and every other option of :class:`ftcl_core.config.FTConfig`); BYOL and SimSiam, which have no
negatives, get positive extrapolation only, on the normalised prediction and target, inside the loss; SwAV gets
positive extrapolation of its two views' features before the prototype scores.

:data:`METHODS` maps the config's ``method:`` names to the classes; :func:`build_model` builds one.
"""

from __future__ import annotations

import torch

from ftcl_core import config as C
from ftcl_core.config import CONTRASTIVE, RunConfig, as_config  # noqa: F401  (CONTRASTIVE: imported from here by older code)
from ftcl_core.methods.base import Method, Scores, build_backbone
from ftcl_core.methods.byol import BYOL, cosine_momentum
from ftcl_core.methods.moco import MoCo
from ftcl_core.methods.simclr import SimCLR
from ftcl_core.methods.simsiam import SimSiam
from ftcl_core.methods.swav import SwAV

METHODS: dict[str, type[Method]] = {"moco": MoCo, "simclr": SimCLR, "byol": BYOL, "simsiam": SimSiam, "swav": SwAV}
assert tuple(METHODS) == C.METHODS, "ftcl_core.config.METHODS lists the names of METHODS"

__all__ = ["BYOL", "METHODS", "Method", "MoCo", "Scores", "SimCLR", "SimSiam", "SwAV", "build_model"]


def build_model(cfg: RunConfig | dict) -> Method:
    """The model of ``cfg.method``, initialised from ``cfg.seed`` (identically on every rank)."""
    cfg = as_config(cfg)
    torch.manual_seed(cfg.seed)
    return METHODS[cfg.method].from_config(cfg, build_backbone(cfg))


# The functions of the single-module ``methods`` this package replaced, for older code and stored notebooks.


def target_momentum(cfg: RunConfig, step: int, total_steps: int) -> float:
    """BYOL: the target momentum rises from ``byol.momentum`` to 1 on a cosine; MoCo keeps ``moco.momentum`` (eq. 2)."""
    if cfg.method == "byol":
        return cosine_momentum(cfg.byol.momentum, step, total_steps)
    return cfg.moco.momentum


def method_scores(net, model: Method, x1: torch.Tensor, x2: torch.Tensor, ft: C.FTConfig, active: bool,
                  gen: torch.Generator, n_raw: int = 64, labels: torch.Tensor | None = None) -> Scores:
    """``model.scores(net, ...)``."""
    return model.scores(net, x1, x2, ft, active, gen, n_raw, labels)


def method_loss(model: Method, scores: Scores, tau: float, swav: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``model.loss(scores)``; the method holds its temperature (and SwAV its Sinkhorn settings), so ``tau`` and
    ``swav`` must agree with it."""
    if getattr(model, "tau", tau) != tau:
        raise ValueError(f"tau={tau} differs from the model's temperature {model.tau}; call model.loss(scores).")
    for key, value in (swav or {}).items():
        if key in ("epsilon", "sinkhorn_iters") and getattr(model, key, value) != value:
            raise ValueError(f"swav.{key}={value} differs from the model's {getattr(model, key)}; call model.loss(scores).")
    return model.loss(scores)


def before_optimizer_step(model: Method) -> None:
    """``model.before_optimizer_step()``."""
    model.before_optimizer_step()


def after_step(model: Method, scores: Scores) -> None:
    """``model.after_step(scores)``."""
    model.after_step(scores)
