"""Named checks that bind a chapter's authored words to the stored data they rest on.

The package writes no prose: a study function returns *facts* (a dict of named numbers, formatted once by
:mod:`ftcl_core.study.results.numbers`, and of verdict words; entries that are not strings carry the raw values the
checks read), the chapter carries the words as authored Markdown, numbers entering by myst-nb's ``glue``
(:func:`ftcl_core.pages.glue.glue_facts`), and each qualitative word of the text is bound to a named check. A
check takes the facts and returns ``None`` when they agree with the authored words, else the reason they do not;
:func:`expect` runs the named ones and raises :class:`TextDisagrees`, so that a rerun whose verdict flips fails the
book's build instead of leaving the text stale. Each module holding facts functions keeps its checks in a
``CHECKS`` dict (name -> check), the way :data:`ftcl_core.study.findings.CHECKS` holds the findings'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

Check = Callable[[Mapping], "str | None"]


class TextDisagrees(AssertionError):
    """A chapter's authored words no longer match the stored data they rest on."""


def failures(checks: Mapping[str, Check], facts: Mapping, *names: str) -> dict[str, str]:
    """The reasons of every check of ``names`` (all of ``checks`` when none is given) that fails on ``facts``."""
    out = {}
    for name in names or tuple(checks):
        if name not in checks:
            raise KeyError(f"no check named {name!r}; known: {', '.join(checks)}")
        reason = checks[name](facts)
        if reason:
            out[name] = reason
    return out


def expect(checks: Mapping[str, Check], facts: Mapping, *names: str) -> None:
    """Raise :class:`TextDisagrees` naming every check of ``names`` that fails on ``facts``: the chapter says
    something the stored data no longer do, so its words must be rewritten."""
    failed = failures(checks, facts, *names)
    if failed:
        raise TextDisagrees("the stored data disagree with the chapter's authored text; rewrite the words bound to "
                            + " | ".join(f"{n!r} ({r})" for n, r in failed.items()))
