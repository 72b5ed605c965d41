"""The reading of *Why does FT from the first step cost?* (``book/07b_gradient``): how FT weighs the pull against
the push, and where ρ stands against the band."""

from __future__ import annotations

from ftcl_core.study import diagnosis, diagnosis_readings, findings, gradient_algebra
from ftcl_core.study.chapters import Block
from ftcl_core.study.evidence import Evidence


def first_step_records(stored: Evidence) -> dict[str, list[dict]]:
    """The first-step pairs of the shapes' recipe, MoCo v1 and v2, keyed by version (07b's figure and facts)."""
    return {version: stored.records[diagnosis.FIRST_STEP_EXPERIMENTS[key]]
            for version, key in (("v1", "recipe"), ("v2", "recipe v2"))}


def read(stored: Evidence) -> list[Block]:
    early = diagnosis_readings.early_metrics(first_step_records(stored))
    return [Block(stored, findings.CHECKS, ("rho-below-band-first", "rho-above-band-late")),
            Block(gradient_algebra.weight_facts(), gradient_algebra.CHECKS, ("FT weighs the pull more than the push",)),
            Block(diagnosis_readings.early_rho_facts(early, stored.band), diagnosis_readings.CHECKS,
                  ("FT's ρ passes above the band",
                   "FT's Mean(neg) stays above every baseline's once ρ has passed the band"), "early_")]
