"""The reading of *Why does FT from the first step cost?* (``book/07b_gradient``): where ρ stands against the band."""

from __future__ import annotations

from ftcl_core.study import findings
from ftcl_core.study.chapters import Block
from ftcl_core.study.evidence import Evidence


def read(stored: Evidence) -> list[Block]:
    return [Block(stored, findings.CHECKS, ("rho-below-band-first", "rho-above-band-late"))]
