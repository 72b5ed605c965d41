"""The reading of *MoCo from scratch* (``book/learn2_moco``): the recipe the page trains with, and what its words say
of the minute of training it runs live: the first steps (random keys, then real ones, then learning), the readout
after them, the from-scratch step against the library's, and the folded solutions' short runs.

The facts and checks are :mod:`ftcl_core.study.learn`'s (:func:`~ftcl_core.study.learn.recipe_facts`,
:func:`~ftcl_core.study.learn.moco_training_facts` and :data:`~ftcl_core.study.learn.MOCO_TRAINING_CHECKS`,
:func:`~ftcl_core.study.learn.moco_match_facts` and :data:`~ftcl_core.study.learn.MOCO_CHECKS`,
:data:`~ftcl_core.study.learn.EXERCISE_CHECKS`). The recipe is glued and the two steps compared in every profile; the
page reads the training's blocks outside its smoke profile only (a smoke run trains seconds)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ftcl_core.study import learn
from ftcl_core.study.chapters import Block


def read(cfg, backbone) -> list[Block]:  # noqa: ANN001  (a RunConfig and its backbone, as the page builds them)
    """The recipe's numbers the page's words quote (``recipe_params``, ``recipe_K``, ...): ``cfg``, the page's
    :func:`ftcl_core.study.learn.shapes_recipe` config, and ``backbone``, its model's backbone."""
    return [Block(learn.recipe_facts(cfg, backbone), {}, prefix="recipe_")]


def read_training(history: Mapping[str, Sequence[float]], queue_size: int, batch: int) -> list[Block]:
    """The minute of training's first steps (``history``: the loss and the share of queries that find their key, a
    step each) with the queue of ``queue_size`` keys and batches of ``batch``."""
    return [Block(learn.moco_training_facts(history, queue_size, batch), learn.MOCO_TRAINING_CHECKS,
                  ("random keys make it easy at first", "real keys make it hard", "then the encoder learns"))]


def read_readout(readout: Mapping[str, float]) -> list[Block]:
    """The kNN readout (%) of the untrained backbone and the trained one (``before``, ``after``; ``chance``)."""
    return [Block(readout, learn.MOCO_TRAINING_CHECKS, ("a minute of MoCo already reads better than its start",))]


def read_match(match: Mapping) -> list[Block]:
    """The from-scratch steps against the library's (:func:`ftcl_core.study.learn.moco_match_facts`)."""
    return [Block(match, learn.MOCO_CHECKS, ("the two steps agree",))]


def read_exercises(ends: Mapping[str, float]) -> list[Block]:
    """The folded solutions' end losses (``m0``, ``m99``, ``k256``, ``k4096``)."""
    return [Block(ends, learn.EXERCISE_CHECKS, ("no momentum ends higher", "a short queue ends lower"))]
