"""The reading of *Does a longer run remove the cost?* (``book/07f_length``): FT's cost as the runs grow longer, and the
pairs trained on two devices."""

from __future__ import annotations

from ftcl_core.study import diagnosis, diagnosis_readings, findings
from ftcl_core.study.chapters import Block
from ftcl_core.study.evidence import Evidence


def read(stored: Evidence) -> list[Block]:
    gap = diagnosis_readings.device_gap_facts(stored.records[diagnosis.LENGTH_EXPERIMENTS["the shapes"]],
                                              stored.records[diagnosis.FIRST_STEP_EXPERIMENTS["recipe"]])
    return [
        Block(stored, findings.CHECKS, ("length-narrows-not-damage", "longest-shrinks-points-not-errors")),
        Block(gap, diagnosis_readings.CHECKS, ("some pair trained on two devices",), "gap_"),
    ]
