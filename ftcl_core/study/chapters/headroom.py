"""The reading of *Does FT help once there is room to help?* (``book/11_headroom``): the task with room's map (the
aims, each arm against its baseline at 30, 120 and 240 epochs, the late start, the crowding, the later switches) and
the rule that switches FT on by the run's own loss (``ft.start=auto``)."""

from __future__ import annotations

from ftcl_core.config import FTConfig
from ftcl_core.study import auto_start, headroom
from ftcl_core.study.chapters import Block

RULE = FTConfig()  # its auto_window and auto_fraction: the rule ft.start=auto runs, frozen


def auto_facts() -> dict:
    """The auto start's facts (:func:`ftcl_core.study.auto_start.facts`) with the rule's window and fraction."""
    return {**auto_start.facts(), "window": str(RULE.auto_window), "fraction": f"{RULE.auto_fraction:g}"}


def read(facts: dict, auto: dict) -> list[Block]:
    """``facts``: the map's (:func:`ftcl_core.study.headroom.facts` of the stored map); ``auto``: :func:`auto_facts`."""
    return [
        Block({**facts, **headroom.paper_facts()}, {}, prefix="hr_"),
        Block(facts, headroom.CHECKS,
              ("first-step-costs-at-30", "first-step-costs-at-120", "first-step-costs-at-240",
               "late-start-costs-at-30", "late-start-gains-at-120", "late-start-smaller-at-120",
               "late-start-gains-at-240", "late-start-matches-at-240", "crowding-goes-with-the-cost",
               "switch-from-18-of-120-costs", "switch-from-18-of-120-does-not-crowd",
               "the ceiling never binds on the map", "aim-gain-met", "aim-spread-met", "aim-images-met",
               "aim-longest-met", "late-positive-alone-costs-at-30", "positive-mixing-carries-the-late-cost",
               "negatives-share-of-the-late-cost-open-at-30", "negatives-alone-not-the-papers-size-at-30",
               "late-start-costs-less-at-30", "late-positive-alone-gains-at-120",
               "negatives-share-of-the-late-gain-open-at-120", "negatives-alone-not-the-papers-size-at-120",
               "120-holds-the-planned-seeds", "late-start-larger-on-errors-at-240",
               "late-positive-alone-gains-at-240", "negatives-add-to-the-late-gain-at-240",
               "negatives-alone-not-the-papers-size-at-240", "first-step-crowding-fades-at-120",
               "negatives-alone-never-crowd", "crowding-confounded-with-the-clock", "switch-from-9-of-120-costs",
               "switch-from-9-of-120-crowds", "switch-from-9-of-240-holds-zero-at-its-seeds",
               "switch-from-9-of-240-below-the-time-lefts-gain", "switch-from-9-of-240-crowds",
               "switch-held-9-of-120-costs", "switch-held-9-of-120-crowds",
               "switch-held-crowds-and-costs-less-than-ungated", "switch-later-costs-less")),
        Block(auto, auto_start.CHECKS,
              ("auto-never-costs", "auto-some-runs-switch-away-from-their-baselines-replay", "auto-loss-gaps-small",
               "auto-every-setting-holds-its-seeds", "auto-no-gain-where-the-fixed-start-gains-on-fashion-mnist",
               "auto-no-gain-where-the-fixed-start-gains-on-the-shapes-at-120",
               "auto-switches-before-30-percent-of-120-epochs"), "auto_"),
    ]
