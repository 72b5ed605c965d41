"""The reading of *Is it how hard the negatives are?* (``book/07i_negatives``): Supp F's re-normalised negatives and the
harder negatives, against their references."""

from __future__ import annotations

from ftcl_core.study import diagnosis_readings
from ftcl_core.study.chapters import Block


def read(rows: list[dict], against: dict) -> list[Block]:
    """``rows, against``: :func:`ftcl_core.study.diagnosis_readings.negative_comparisons` of the stored cpu runs."""
    return [
        Block(diagnosis_readings.renorm_facts(rows[0], rows[1], against), diagnosis_readings.CHECKS,
              ("Supp F decided", "re-normalised mixes are wider, not harder than the queue",
               "re-normalised mixes cost, plain ones do not"), "renorm_"),
        Block(diagnosis_readings.harder_facts(rows[2:]), diagnosis_readings.CHECKS, ("harder as written",), "hard_"),
    ]
