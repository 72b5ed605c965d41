"""The methods, one file each: MoCo (v1/v2), SimCLR, BYOL, SimSiam and SwAV, each with FT.

A method is a :class:`~ftcl_core.methods.base.Method`: its networks, its scores with FT inside the loss, its
loss and its hooks around the optimiser step, in one class that reads top to bottom.  FT follows the paper's
reading of each method (Table 5 and the supplement): MoCo and SimCLR get positive extrapolation and negative
interpolation (and every other option of :class:`ftcl_core.config.FTConfig`); BYOL and SimSiam, which have no
negatives, get positive extrapolation only, on the normalised prediction and target, inside the loss; SwAV gets
positive extrapolation of its two views' features before the prototype scores.

:data:`METHODS` maps the config's ``method:`` names to the classes; :func:`method_class` adds the MoCo variants of
the diagnosis (:mod:`ftcl_core.methods.moco_diagnosis`), and :func:`build_model` builds one.
"""

from __future__ import annotations

import torch

from ftcl_core import config
from ftcl_core.config import RunConfig, as_config
from ftcl_core.methods.base import Method, Scores, StepContext, build_backbone
from ftcl_core.methods.byol import BYOL
from ftcl_core.methods.moco import MoCo
from ftcl_core.methods.moco_diagnosis import LabelledMoCo, ShardedMoCo, moco_class
from ftcl_core.methods.simclr import SimCLR
from ftcl_core.methods.simsiam import SimSiam
from ftcl_core.methods.swav import SwAV

METHODS: dict[str, type[Method]] = {"moco": MoCo, "simclr": SimCLR, "byol": BYOL, "simsiam": SimSiam, "swav": SwAV}
assert tuple(METHODS) == config.METHODS, "ftcl_core.config.METHODS lists the names of METHODS"

__all__ = ["BYOL", "METHODS", "LabelledMoCo", "Method", "MoCo", "Scores", "ShardedMoCo", "SimCLR", "SimSiam",
           "StepContext", "SwAV", "build_model", "method_class"]


def method_class(cfg: RunConfig) -> type[Method]:
    """The class that trains ``cfg``: :data:`METHODS`'s for ``cfg.method``; for MoCo, the diagnosis variant the
    config asks for (:func:`ftcl_core.methods.moco_diagnosis.moco_class`)."""
    return moco_class(cfg) if cfg.method == "moco" else METHODS[cfg.method]


def build_model(cfg: RunConfig | dict) -> Method:
    """The model of ``cfg``, initialised from ``cfg.seed`` (identically on every rank)."""
    cfg = as_config(cfg)
    torch.manual_seed(cfg.seed)
    return method_class(cfg).from_config(cfg, build_backbone(cfg))
