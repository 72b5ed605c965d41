"""The reading of *When to switch FT on* (``book/07g_switch_on``): where Table 6's runs stood when FT switched
on, and the random queue the earliest start meets."""

from __future__ import annotations

from ftcl_core.study import diagnosis, diagnosis_readings, experiment_file, findings
from ftcl_core.study.chapters import Block
from ftcl_core.study.evidence import Evidence

TABLE_6 = "shapes, 30 epochs"  # the label of Table 6's runs in diagnosis.START_EXPERIMENTS


def read(stored: Evidence) -> list[Block]:
    starts = diagnosis.switch_on_rows(stored.phase[TABLE_6], stored.switch[TABLE_6])
    exp = experiment_file.Experiment.load(diagnosis.START_EXPERIMENTS[TABLE_6])
    first = next((r for _, r, _ in starts if r["comparison"] == "start 1"), {"n_seeds": 0})
    queue = diagnosis_readings.random_queue_facts(
        experiment_file.resolve(experiment_file.base_for(exp, "cpu"), exp.overrides("start 1", 0), "cpu"), first)
    return [
        Block(stored, findings.CHECKS, ("late-avoids-most", "late-helps-where-stated", "epoch-one-too-early",
                                        "knn-late-mixed")),
        Block(diagnosis_readings.switch_on_facts(starts), diagnosis_readings.CHECKS,
              ("an early start costs", "the collapse level does not separate the starts that lose"), "sw_"),
        Block(queue, diagnosis_readings.CHECKS, ("the start sees real keys only", "costs"), "rq_"),
    ]
