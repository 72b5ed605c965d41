"""The reading of *Switching FT on in your own MoCo* (``book/learn6_your_moco``): what the runs say of FT from the
first step on the shapes, of the late start on the harder task, and why the encoder undoes the harder positive."""

from __future__ import annotations

from collections.abc import Mapping

from ftcl_core.study import headroom, learn, readings
from ftcl_core.study.chapters import Block


def read(first: Mapping, room: Mapping) -> list[Block]:
    """``first``: :func:`ftcl_core.study.learn.first_step_facts`; ``room``: the harder task's facts with the paper's
    (:func:`ftcl_core.study.headroom.facts`, :func:`~.headroom.paper_facts`), as the page's figure draws them."""
    return [
        Block(first, learn.FIRST_STEP_CHECKS, ("both transformations cost from the first step",
                                               "positive extrapolation alone costs",
                                               "negative interpolation alone holds zero"), "t7_"),
        Block(room, headroom.CHECKS, ("late-start-costs-at-30", "first-step-costs-at-30", "first-step-costs-at-120",
                                      "first-step-costs-at-240", "late-start-gains-at-120", "late-start-gains-at-240",
                                      "late-start-matches-at-240", "crowding-goes-with-the-cost",
                                      "crowding-confounded-with-the-clock", "switch-from-18-of-120-costs",
                                      "switch-from-18-of-120-does-not-crowd"), "hr_"),
        Block(learn.why_facts(), readings.CHECKS, ("the encoder undoes the harder positive",
                                                   "the encoder crowds the images together"), "why_"),
    ]
