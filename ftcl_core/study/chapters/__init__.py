"""One reading per page of the book (issue 67): ``ftcl_core.study.chapters.<page>`` holds what ``book/<nn>_<page>``
glues and the checks that bind its words, so a contributor finds a page's numbers from its name alone.

Each module's ``read(...)`` returns the page's :class:`Block` s; the page glues them all and runs every named check
with :func:`ftcl_core.pages.glue.glue_reading` (a check that fails stops the build: the words must be rewritten).
The figures and tables a page draws call the study directly; the words rest on the blocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ftcl_core.study import diagnosis_readings
from ftcl_core.study.checks import Check


@dataclass(frozen=True)
class Block:
    """A block of a page's reading: ``facts`` (a facts dict, :mod:`ftcl_core.study.checks`, or the evidence a
    findings check reads), glued as ``<prefix><name>`` unless ``prefix`` is None, and the ``claims`` the page's words
    make of them, names of ``checks`` (none: every check of ``checks``).  ``text``: glued for ``{glue:text}``."""

    facts: Any
    checks: Mapping[str, Check]
    claims: tuple[str, ...] = ()
    prefix: str | None = None
    text: bool = False


def comparison(prefix: str, row: Mapping, *claims: str) -> Block:
    """A paired comparison's row (:func:`ftcl_core.study.diagnosis_readings.comparison_facts`) and what the page says
    of it (names of :data:`ftcl_core.study.diagnosis_readings.CHECKS`)."""
    return Block(diagnosis_readings.comparison_facts(dict(row)), diagnosis_readings.CHECKS, claims, prefix)
