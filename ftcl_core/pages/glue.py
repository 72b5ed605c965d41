"""Facts into a chapter's authored Markdown: each string entry of a study's facts (:mod:`ftcl_core.study.checks`)
glued for myst-nb as ``{glue:md}`<prefix><name>```, and recorded for the paragraphs a notebook prints outside the
book (:mod:`ftcl_core.pages.portable`)."""

from __future__ import annotations

from collections.abc import Mapping

from IPython.display import Markdown
from myst_nb import glue as myst_glue

from ftcl_core.pages.portable import glued
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


def glue_checked(prefix: str, facts: Mapping, checks: Mapping, *claims: str) -> None:
    """Glue ``facts`` (:func:`glue_facts`) and check the claims the page's words make of them: each name in ``claims``
    a check of ``checks`` (:func:`ftcl_core.study.checks.expect` raises when the stored data disagree)."""
    glue_facts(prefix, facts)
    expect(checks, facts, *claims)


def glue_comparison(prefix: str, row: Mapping, *claims: str) -> None:
    """A paired comparison's row glued (:func:`ftcl_core.study.diagnosis_readings.comparison_facts`) and the claims the
    page's words make of it checked (names of :data:`ftcl_core.study.diagnosis_readings.CHECKS`): chapter 7's pages."""
    from ftcl_core.study import diagnosis_readings

    glue_checked(prefix, diagnosis_readings.comparison_facts(row), diagnosis_readings.CHECKS, *claims)
