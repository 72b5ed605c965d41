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


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_under_papermill_smoke(chapter, smoke_book):
    """Each chapter executes headless under papermill with ``-p profile smoke`` (once per session: tests/conftest.py)."""
    err = smoke_book.errors[chapter]
    assert err is None, f"{chapter} failed under papermill: {err}"
