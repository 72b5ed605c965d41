"""Every chapter executes headless under papermill with the smoke profile; notebooks match their sources."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted(p.stem for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb"))


def test_every_toc_chapter_has_a_notebook_and_a_source():
    toc = (ROOT / "_toc.yml").read_text()
    assert CHAPTERS == re.findall(r"file: book/(\d\d_\w+)", toc)
    for name in CHAPTERS:
        assert f"book/{name}" in toc
        assert (ROOT / "book" / "src" / f"{name}.py").is_file()


def test_notebooks_are_built_from_their_sources():
    res = subprocess.run([sys.executable, "tools/notebooks.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_papermill_parses_every_parameters_cell(caplog):
    """papermill reads each line of a parameters cell as one ``name = value``; a line it cannot parse (an ``=``
    inside a string, say) is dropped from ``--help-notebook`` with a warning."""
    import logging

    import papermill as pm

    for name in CHAPTERS:
        with caplog.at_level(logging.WARNING):
            params = pm.inspect_notebook(str(ROOT / "book" / f"{name}.ipynb"))
        assert "profile" in params, name
    assert not [r.message for r in caplog.records if "Unable to parse" in r.message]


@pytest.mark.slow  # every chapter executed under papermill (minutes)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_under_papermill_smoke(chapter, smoke_book):
    """Each chapter executes headless under papermill with ``-p profile smoke`` (once per session: tests/conftest.py)."""
    err = smoke_book.errors[chapter]
    assert err is None, f"{chapter} failed under papermill: {err}"


# ---- prose numbers: every number in the book's prose comes from the runs (glue or generated text) ----------------

# Numbers prose may carry without a run behind them: the confidence level of every interval.
CONSTANTS = {"95"}
# Numbers typed by hand in Markdown, chapter by chapter (issue "The reader's book", part 3): none is left, every
# number in prose is generated from the runs. A number may never join this list without a reason written here.
TYPED_BY_HAND: dict[str, set[str]] = {}


def recipe_numbers() -> set[str]:
    """Numbers of the configs and experiment files (recipe constants, the paper's table values)."""
    found: set[str] = set()
    for path in [*(ROOT / "configs").glob("*.yaml"), *(ROOT / "experiments").glob("*.yaml")]:
        found |= set(re.findall(r"\d+(?:\.\d+)?", path.read_text()))
    return found


def prose_numbers(markdown: str) -> set[str]:
    """Numbers in Markdown outside equations, code, citations and references to equations, tables and chapters."""
    t = re.sub(r"\$\$.*?\$\$", "", markdown, flags=re.S)
    t = re.sub(r"\$[^$]*\$", "", t)
    t = re.sub(r"```.*?```", "", t, flags=re.S)
    t = re.sub(r"`[^`]*`", "", t)
    t = re.sub(r"\{cite[^}]*\}", "", t)
    t = re.sub(r"\[[^\]]*\]\([^)]*\)", "", t)
    t = re.sub(r"\b(eqs?|Eq|Tables?|Sec|Supp|Fig|Figure|[Cc]hapters?|Section|T|steps?)\.?\s*[A-Z]?\d+(\.\d+)*"
               r"(\s*(-|–|and|,)\s*\d+(\.\d+)*)*", "", t)
    t = re.sub(r"(?<=\d) (?=\d{3}\b)", "", t)  # 10 000 -> 10000
    return set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?", t))


def test_no_new_number_is_typed_into_the_books_prose():
    import json

    allowed = recipe_numbers() | CONSTANTS
    typed = {}
    for name in CHAPTERS:
        cells = json.loads((ROOT / "book" / f"{name}.ipynb").read_text())["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        found = prose_numbers(text) - allowed
        if found:
            typed[name] = found
    found = prose_numbers((ROOT / "book" / "findings.md").read_text()) - allowed  # the index's and chapter 1's findings
    if found:
        typed["findings.md"] = found
    new = {k: sorted(v - TYPED_BY_HAND.get(k, set())) for k, v in typed.items() if v - TYPED_BY_HAND.get(k, set())}
    assert not new, f"numbers typed into prose (use myst-nb glue or generated text from the runs): {new}"
    gone = {k: sorted(v - typed.get(k, set())) for k, v in TYPED_BY_HAND.items() if v - typed.get(k, set())}
    assert not gone, f"no longer typed by hand, remove them from TYPED_BY_HAND: {gone}"
