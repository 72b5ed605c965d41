"""The reading of *Open questions: what was not run* (``book/open_questions``): what was planned and not run or
not decided, and the task with room's questions still open."""

from __future__ import annotations

from ftcl_core.study import diagnosis_readings, findings, headroom
from ftcl_core.study.chapters import Block
from ftcl_core.study.evidence import Evidence


def read(stored: Evidence) -> list[Block]:
    capacity = diagnosis_readings.capacity_facts(list(stored.capacity))
    resolution = diagnosis_readings.resolution_facts(stored.resolution)
    rows, records = headroom.load()
    room = headroom.facts(rows, records, headroom.run_metrics(records))
    return [
        Block(stored, findings.CHECKS, ("paper-runs-longer",)),
        Block(capacity, diagnosis_readings.CHECKS, ("an encoder is planned but not run",), "cap_"),
        Block({**resolution, "where": f"`{resolution['where']}`"}, diagnosis_readings.CHECKS, ("undecided",), "res_"),
        Block(room, headroom.CHECKS, ("crowding-confounded-with-the-clock", "switch-from-9-of-120-costs",
                                      "switch-from-9-of-240-below-the-time-lefts-gain", "switch-held-9-of-120-costs",
                                      "switch-held-crowds-and-costs-less-than-ungated", "switch-from-18-of-120-costs",
                                      "switch-from-18-of-120-does-not-crowd"), "hr_"),
    ]
