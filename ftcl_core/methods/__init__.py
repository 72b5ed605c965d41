"""The methods, one file each: MoCo (v1/v2), SimCLR, BYOL, SimSiam and SwAV, each with FT.

A method is a :class:`~ftcl_core.methods.base.Method`: its networks, its scores with FT inside the loss, its
loss and its hooks around the optimiser step, in one class that reads top to bottom.  FT follows the paper's
reading of each method (Table 7 and the supplement): MoCo and SimCLR get positive extrapolation and negative
interpolation (and every other option of :class:`ftcl_core.config.FTConfig`); BYOL and SimSiam, which have no
negatives, get positive extrapolation only, on the normalised prediction and target, inside the loss; SwAV gets
positive extrapolation of its two views' features before the prototype scores.

:data:`METHODS` maps the config's ``method:`` names to the classes and :func:`build_model` builds one.  Variants of a
method that a config picks by its other keys come from whoever registers a picker (:func:`register_variants`) and
those keys (:func:`ftcl_core.config.register_sections`): the study's MoCo of the diagnosis registers itself when
:mod:`ftcl_core.study` is imported; the library names none.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ftcl_core import config
from ftcl_core.config import RunConfig, as_config
from ftcl_core.methods.base import Method, Scores, StepContext, build_backbone
from ftcl_core.methods.byol import BYOL
from ftcl_core.methods.moco import MoCo
from ftcl_core.methods.simclr import SimCLR
from ftcl_core.methods.simsiam import SimSiam
from ftcl_core.methods.swav import SwAV

METHODS: dict[str, type[Method]] = {"moco": MoCo, "simclr": SimCLR, "byol": BYOL, "simsiam": SimSiam, "swav": SwAV}
assert tuple(METHODS) == config.METHODS, "ftcl_core.config.METHODS lists the names of METHODS"

__all__ = ["BYOL", "METHODS", "Method", "MoCo", "Scores", "SimCLR", "SimSiam", "StepContext", "SwAV", "build_model",
           "method_class", "register_variants"]

# Pickers of variants: ``pick(cfg)`` is the class that trains ``cfg``, or None where it has no say (another method).
VARIANTS: list[Callable[[RunConfig], type[Method] | None]] = []


def register_variants(pick: Callable[[RunConfig], type[Method] | None]) -> Callable[[RunConfig], type[Method] | None]:
    """Let ``pick`` choose the class of the configs it knows (once per picker; the first that answers wins)."""
    if not callable(pick):
        raise TypeError(f"register_variants: pick must be callable (a function of a RunConfig that returns a Method "
                        f"class, or None where it has no say), got {type(pick).__name__}.")
    if pick not in VARIANTS:
        VARIANTS.append(pick)
    return pick


def method_class(cfg: RunConfig) -> type[Method]:
    """The class that trains ``cfg``: a registered picker's (:func:`register_variants`), else :data:`METHODS`'s for
    ``cfg.method``.  A variant's keys load only with its sections registered (:func:`ftcl_core.config.register_sections`)."""
    for pick in VARIANTS:
        if (cls := pick(cfg)) is not None:
            return cls
    return METHODS[cfg.method]


def build_model(cfg: RunConfig | dict) -> Method:
    """The model of ``cfg``, initialised from ``cfg.seed`` (identically on every rank)."""
    cfg = as_config(cfg)
    torch.manual_seed(cfg.seed)
    return method_class(cfg).from_config(cfg, build_backbone(cfg))
