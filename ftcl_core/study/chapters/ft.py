"""The reading of *FT: the bound and the transformations* (``book/learn5_ft``): the paper's own case for FT, in its
numbers, and what mixing does to the negatives' spread in this book's stored runs (the chapter's derivation and its
check on measured scores run live in the page)."""

from __future__ import annotations

from ftcl_core.study import diagnosis_readings, experiment_file, learn
from ftcl_core.study.chapters import Block


def read() -> list[Block]:
    rows, against = diagnosis_readings.negative_comparisons("cpu", experiment_file.STORED)
    return [Block(learn.paper_case_facts(), {}, prefix="paper_"),
            Block(diagnosis_readings.renorm_facts(rows[0], rows[1], against), diagnosis_readings.CHECKS,
                  ("mixing narrows the negatives' spread",), "mix_")]
