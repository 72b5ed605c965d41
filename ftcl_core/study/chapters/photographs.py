"""The reading of *Is it the synthetic data?* (``book/07e_photographs``): FT on Fashion-MNIST's photographs at two lengths,
and the room an effect has there."""

from __future__ import annotations

from ftcl_core.study import diagnosis, diagnosis_readings, findings
from ftcl_core.study.chapters import Block, comparison
from ftcl_core.study.evidence import Evidence


def read(stored: Evidence) -> list[Block]:
    runs = {key: stored.records[path] for key, path in diagnosis.FIRST_STEP_EXPERIMENTS.items()}
    real, gain = diagnosis_readings.real_rows(stored, runs)
    return [
        Block(stored, findings.CHECKS, ("photos-no-gain", "photos-little-room", "photos-knn-costs")),
        comparison("real_", real[0], "cannot be told from zero"),
        comparison("real_longer_", real[1], "cannot be told from zero"),
        comparison("real_knn_", real[2], "costs"),
        comparison("real_gain_", gain, "cannot be told from zero"),
    ]
