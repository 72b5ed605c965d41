"""Facts into a chapter's authored Markdown: each string entry of a study's facts (:mod:`ftcl_core.study.checks`)
glued for myst-nb as ``{glue:md}`<prefix><name>```, and recorded for the paragraphs a notebook prints outside the
book (:mod:`ftcl_core.pages.portable`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from IPython.display import Markdown
from myst_nb import glue as myst_glue

from ftcl_core.pages.portable import glued
from ftcl_core.study.chapters import Block
from ftcl_core.study.checks import expect


def glue(name: str, value: object, display: bool = False) -> None:
    """myst-nb's ``glue``, also recorded for the paragraphs a notebook prints outside the book
    (:func:`ftcl_core.pages.portable.glued`)."""
    myst_glue(name, value, display=display)
    glued(name, value)


def glue_facts(prefix: str, facts: Mapping) -> None:
    """Glue every string entry of ``facts`` as ``<prefix><name>``, not displayed where it is glued (the entries that
    are not strings are the checks' raw values)."""
    for name, value in facts.items():
        if isinstance(value, str):
            glue(f"{prefix}{name}", Markdown(value), display=False)


def glue_reading(blocks: Iterable[Block]) -> None:
    """A page's reading (:mod:`ftcl_core.study.chapters`) glued, and every claim its words make checked: each block's
    facts glued as ``<prefix><name>`` (``{glue:text}`` where the block says so), then its named checks run
    (:func:`ftcl_core.study.checks.expect` raises when the stored data disagree)."""
    for block in blocks:
        if block.prefix is not None and block.text:
            for name, value in block.facts.items():
                glue(f"{block.prefix}{name}", value)
        elif block.prefix is not None:
            glue_facts(block.prefix, block.facts)
        expect(block.checks, block.facts, *block.claims)
