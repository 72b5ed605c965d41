"""Facts into a chapter's authored Markdown: each string entry of a study's facts (:mod:`ftcl_core.study.checks`)
glued for myst-nb as ``{glue:md}`<prefix><name>```."""

from __future__ import annotations

from collections.abc import Mapping

from IPython.display import Markdown
from myst_nb import glue


def glue_facts(prefix: str, facts: Mapping) -> None:
    """Glue every string entry of ``facts`` as ``<prefix><name>``, not displayed where it is glued (the entries that
    are not strings are the checks' raw values)."""
    for name, value in facts.items():
        if isinstance(value, str):
            glue(f"{prefix}{name}", Markdown(value), display=False)
