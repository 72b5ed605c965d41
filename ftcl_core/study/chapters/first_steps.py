"""The reading of *Can the first 100 steps tell?* (``book/07h_first_steps``): the held-out predictor of FT's outcome."""

from __future__ import annotations

from collections.abc import Mapping

from ftcl_core.study import predict
from ftcl_core.study.chapters import Block


def read(report: Mapping) -> list[Block]:
    """``report``: the stored predictor report (``predict.REPORT``)."""
    return [Block(predict.report_facts(dict(report)), predict.CHECKS,
                  ("the model beats the majority outcome", "the model's gain is not decided at the level of settings",
                   "the rule misses runs that lose", "the data sets are as written"), "pred_")]
