"""The results layer: run records and the index of stored runs (:mod:`.records`), paired comparisons by seed
(:mod:`.paired`), the paper's claims and the verdict on them (:mod:`.verdicts`), and the number formatter
(:mod:`.numbers`). Every table, CSV, chapter and the README read their numbers and verdicts from here."""

from ftcl_core.study.results.numbers import cell, fixed, plus_minus, pm_cell
from ftcl_core.study.results.paired import Paired, mean_ci95, pair, paired_records
from ftcl_core.study.results.verdicts import (
    MIN_SEEDS,
    Claim,
    Verdict,
    after_bh,
    benjamini_hochberg,
    decided,
    judge,
    side,
)

__all__ = ["MIN_SEEDS", "Claim", "Paired", "Verdict", "after_bh", "benjamini_hochberg", "cell", "decided", "fixed",
           "judge", "mean_ci95", "pair", "paired_records", "plus_minus", "pm_cell", "side"]
