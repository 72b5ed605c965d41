"""The reading of *Why contrastive learning works* (``book/learn1_contrastive``): the toy's runs, trained on the page
in seconds, as its words read them: InfoNCE keeps the views together and spreads the clusters, the positives-only
loss collapses, the readout before and after, the temperature's push, and the folded solutions' noise and sphere.

The facts are :func:`ftcl_core.study.learn.toy_facts` and the checks :data:`ftcl_core.study.learn.CHECKS` and
:data:`~ftcl_core.study.learn.TOY_EXERCISE_CHECKS`. Nothing is glued: the page prints its numbers. The page reads
these blocks outside its smoke profile only (a smoke run's few steps prove only that the page runs)."""

from __future__ import annotations

from collections.abc import Mapping

from ftcl_core.study import learn
from ftcl_core.study.chapters import Block


def read(facts: Mapping) -> list[Block]:
    """``facts``: :func:`ftcl_core.study.learn.toy_facts` of the page's toy runs (every temperature, and the
    positives-only run); one block a passage of the page's words, in its order."""
    return [
        # "Read the top row from left to right": alignment, uniformity, the clusters, the collapse
        Block(facts, learn.CHECKS, ("the views stay together", "the points spread out", "each cluster gathers",
                                    "without negatives it collapses")),
        # the kNN readout before training, after InfoNCE and after positives only
        Block(facts, learn.CHECKS, ("the readout tells the clusters apart", "the collapsed features are worth little",
                                    "an untrained encoder already reads well on the toy")),
        # the temperature's slider
        Block(facts, learn.CHECKS, ("the colder the temperature, the higher the push curve starts",)),
        # the false negatives: the query's own cluster at the coldest temperature
        Block(facts, learn.CHECKS, ("at the coldest temperature most of the push falls on the query's own cluster, "
                                    "a sixth of its negatives", "at the coldest temperature the clusters stay bunched")),
    ]


def read_exercises(ends: Mapping) -> list[Block]:
    """``ends``: what the folded solutions' runs end at (alignment and uniformity at three noises, ``align_clean``,
    ``uniform_noisy``, ...; the uniformity and each cluster's nearest-cluster angle on the sphere and on the circle,
    ``uniform_3d``, ``nearest_2d``, ...: :func:`ftcl_core.study.learn.nearest_cluster_angles`)."""
    return [Block(ends, learn.TOY_EXERCISE_CHECKS, ("more noise, both worse", "half the noise leaves the uniformity",
                                                     "a sphere has more room", "on the sphere the clusters sit further "
                                                     "apart, nearer an octahedron's corners"))]
