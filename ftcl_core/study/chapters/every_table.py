"""The reading of *Every table, claim by claim* (``book/09b_every_table``): how its rows divide into the paper's
claims that *Results against the paper* counts, Table 1's checks and the claims set apart."""

from __future__ import annotations

from ftcl_core.study import readings
from ftcl_core.study.chapters import Block
from ftcl_core.study.chapters.results import stored_summary


def read() -> list[Block]:
    return [Block(readings.shared_run_facts(stored_summary()), readings.CLAIM_CHECKS,
                  ("tables share runs", "the distinct rows are the claims, the checks and the claims set apart"),
                  "rows_")]
