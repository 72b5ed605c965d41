"""The Learn part's budgets (issue 65, item 2): a course's prose uses no verdict vocabulary, no multiple-testing
terms and no repository paths; a Learn chapter holds at most two tables; each opens with what you will learn and
ends with a summary and exercises whose solutions are folded code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
LEARN = [c["file"].removeprefix("book/") for part in TOC["parts"] if part["caption"] == "Learn" for c in part["chapters"]]
# the course's own chapters, written for it; the older chapters Learn still borrows are held to these budgets as they
# are rewritten (issue 65)
COURSE = [c for c in LEARN if c.startswith("learn")]
VERDICT_WORDS = ("matches the paper", "larger than the paper", "smaller than the paper", "no effect of the paper",
                 "opposite to the paper", "undecided", "replicated", "contradicted", "inconclusive")
TESTING_TERMS = ("Benjamini", "Hochberg", "q-value", "p-value", "false discovery", "BH")
PATH = re.compile(r"\b(?:results|experiments|configs|ftcl_core|tools|runs)/[\w./-]+")


def cells(chapter: str) -> list[tuple[str, str]]:
    """(marker line, body) of each cell of the chapter's source."""
    parts = re.split(r"^# %%", (ROOT / "book" / "src" / f"{chapter}.py").read_text(), flags=re.M)[1:]
    return [(p.split("\n", 1)[0], p.split("\n", 1)[1] if "\n" in p else "") for p in parts]


def prose(chapter: str) -> str:
    return "\n".join(re.sub(r"^# ?", "", body, flags=re.M) for marker, body in cells(chapter) if "[markdown]" in marker)


def test_learn_holds_the_course_chapters():
    assert COURSE and LEARN[: len(COURSE)] == COURSE, "the course's own chapters open the Learn part"


@pytest.mark.parametrize("chapter", COURSE)
def test_a_course_chapter_speaks_no_verdict_testing_or_path_language(chapter):
    text = prose(chapter)
    assert not [w for w in VERDICT_WORDS if w in text], "verdict vocabulary belongs to Reproduce"
    assert not [w for w in TESTING_TERMS if re.search(rf"\b{re.escape(w)}\b", text)], "no multiple-testing terms"
    assert not PATH.findall(text), "no repository paths in a course's prose"


@pytest.mark.parametrize("chapter", COURSE)
def test_a_course_chapter_opens_with_its_aims_and_ends_with_a_summary_and_exercises(chapter):
    text = prose(chapter)
    assert "In this chapter you will learn" in text.split("\n## ")[0]
    assert "## Summary" in text and "## Exercises" in text
    exercises = len(re.findall(r"^\d+\. ", text.split("## Exercises")[1], flags=re.M))
    solutions = [n for m, body in cells(chapter) if '"hide-cell"' in m  # folded, answer too
                 for n in re.findall(r"^# Solution (\d+)", body, flags=re.M)]
    assert exercises >= 2 and len(solutions) >= exercises - 1, (exercises, len(solutions))


@pytest.mark.parametrize("chapter", COURSE)
def test_a_course_chapter_holds_at_most_two_tables(chapter):
    text = prose(chapter)
    markdown_tables = len(re.findall(r"^\|[-| ]+\|$", text, flags=re.M))
    code = "\n".join(body for marker, body in cells(chapter) if "[markdown]" not in marker)
    html_tables = len(re.findall(r"html_table|comparison_table|summary_markdown", code))
    assert markdown_tables + html_tables <= 2
