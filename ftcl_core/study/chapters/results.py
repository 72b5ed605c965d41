"""The reading of *Results against the paper* (``book/09_results``): Table 3's interpolation against the paper's
size, the tables that share runs, and the baselines below the bar."""

from __future__ import annotations

import csv

from ftcl_core.study import experiment_file, readings
from ftcl_core.study.chapters import Block


def stored_summary() -> list[dict]:
    """The stored cpu runs' summary (``results/summary.csv``), the rows the book's words about the tables rest on."""
    with (experiment_file.ROOT / "results" / "summary.csv").open() as fh:
        return list(csv.DictReader(fh))


def read() -> list[Block]:
    summary = stored_summary()
    unfit = readings.unfit_facts(summary)
    return [
        Block(readings.claim_facts(summary, "T3", "interpolate a=0.2"), readings.CLAIM_CHECKS,
              ("larger than the paper's size",), "t3_interp_"),
        Block(readings.shared_run_facts(summary), readings.CLAIM_CHECKS, ("tables share runs",), "shared_"),
        Block({"unfit_claims": unfit["unfit_claims"]}, {}, prefix=""),
        Block(unfit, readings.CLAIM_CHECKS, ("the baselines below the bar are those named",)),
    ]
