"""The reading of *FT: the bound and the transformations* (``book/learn4_ft``): the paper's own case for FT, in its
numbers (the chapter's derivation and its check on measured scores run live in the page)."""

from __future__ import annotations

from ftcl_core.study import learn
from ftcl_core.study.chapters import Block


def read() -> list[Block]:
    return [Block(learn.paper_case_facts(), {}, prefix="paper_")]
