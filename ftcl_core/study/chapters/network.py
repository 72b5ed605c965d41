"""The reading of *Is it the network?* (``book/07d_network``): FT's cost across encoder widths and depths, and the
larger views."""

from __future__ import annotations

from ftcl_core.study import diagnosis_readings, findings
from ftcl_core.study.chapters import Block
from ftcl_core.study.evidence import Evidence


def read(stored: Evidence) -> list[Block]:
    capacity = diagnosis_readings.capacity_facts(list(stored.capacity))
    resolution = diagnosis_readings.resolution_facts(stored.resolution)
    return [
        Block(stored, findings.CHECKS, ("network-costs",)),
        Block(capacity, diagnosis_readings.CHECKS, ("every decided encoder costs", "no encoder is undecided",
                                                    "the largest encoder keeps no more rank"), "cap_"),
        Block({**resolution, "where": f"`{resolution['where']}`"}, {}, prefix="res_"),
    ]
