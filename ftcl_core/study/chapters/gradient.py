"""The reading of *Why does FT from the first step cost?* (``book/07b_gradient``): how FT weighs the pull against
the push, and where ρ stands against the band."""

from __future__ import annotations

from ftcl_core.study import findings, gradient_algebra
from ftcl_core.study.chapters import Block
from ftcl_core.study.evidence import Evidence


def read(stored: Evidence) -> list[Block]:
    return [Block(stored, findings.CHECKS, ("rho-below-band-first", "rho-above-band-late")),
            Block(gradient_algebra.weight_facts(), gradient_algebra.CHECKS, ("FT weighs the pull more than the push",))]
