"""The reading of *When does feature transformation help?* (``book/07a_when_ft_helps``): every number of the
findings (the index and chapter 1 paste them too, ``book/findings.md``) and every findings check its words and the
findings page name."""

from __future__ import annotations

from ftcl_core.study import findings
from ftcl_core.study.chapters import Block
from ftcl_core.study.evidence import Evidence


def read(stored: Evidence) -> list[Block]:
    return [Block(findings.facts(stored), {}, prefix="", text=True), Block(stored, findings.CHECKS)]
