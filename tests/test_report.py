"""The report command (issue 65, item 5): a chapter run under papermill and written as one HTML page, with the roles
only the book's build understands resolved; every chapter's papermill output renders with none left."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from ftcl_core.pages import report

ROOT = Path(__file__).resolve().parent.parent


def test_roles_resolve_to_what_the_book_shows():
    md = ("A {term}`readout` of {glue:md}`mom_peak` and {glue:text}`07_when_ft_helps.ipynb::claims:s` claims, "
          "{term}`the queue <queue>` and {cite}`he2020momentum`; see {ref}`the figure <momentum-figure>`.")
    out = report.resolve_roles(md, {"mom_peak": "0.99", "claims": "69"}, report.citations())
    assert out == "A readout of 0.99 and 69 claims, the queue and He et al. 2020; see the figure."
    assert not any(s in out for s in report.LEFTOVER)


def test_a_role_without_its_value_is_refused_by_name():
    with pytest.raises(report.ReportError, match="mom_missing"):
        report.resolve_roles("{glue:md}`mom_missing`", {}, {})
    with pytest.raises(report.ReportError, match="eval"):
        report.resolve_roles("{eval}`1 + 1`", {}, {})


def test_parameters_are_read_as_values():
    assert report.parse_parameters([["seeds", "[0, 1, 2]"], ["profile", "smoke"], ["n", "3"]]) == {
        "seeds": [0, 1, 2], "profile": "smoke", "n": 3}
    with pytest.raises(report.ReportError, match="not a value"):
        report.parse_parameters([["seeds", "[0, 1"]])


def test_a_notebook_is_required(tmp_path):
    with pytest.raises(report.ReportError, match="not found"):
        report.report(tmp_path / "nothing.ipynb")
    (tmp_path / "text.txt").write_text("no notebook")
    with pytest.raises(report.ReportError, match="not a notebook"):
        report.report(tmp_path / "text.txt")


@pytest.mark.slow
def test_every_chapters_papermill_output_renders_without_a_raw_role(smoke_book):
    left = {}
    for path in sorted((smoke_book.root / "book").glob("*.ipynb")):
        if smoke_book.errors.get(path.stem) is not None:
            continue  # the chapter's own test reports its error
        text = report.page_text(report.render(nbformat.read(path, as_version=4)))
        found = sorted({s for t in text for s in report.LEFTOVER if s in t})
        if found:
            left[path.stem] = found
    assert not left, f"raw roles left in the rendered page: {left}"


@pytest.mark.slow
def test_the_report_command_writes_the_page_with_the_books_numbers(tmp_path, smoke_book):
    page = tmp_path / "ch5.html"
    env = {"FTCL_RUNS_ROOT": str(tmp_path / "runs"), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, "-m", "ftcl_core", "report", str(ROOT / "book" / "05_momentum.ipynb"),
                          "-p", "profile", "smoke", "--out", str(page)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"report: {page}" in res.stdout  # it says where it wrote
    html = page.read_text()
    book = report.glued(nbformat.read(smoke_book.root / "book" / "05_momentum.ipynb", as_version=4))
    quoted = report.glued(nbformat.read(page.with_suffix(".ipynb"), as_version=4))
    assert quoted == book  # the same runs, the same numbers as the book's execution
    for name in ("mom_peak_readout", "mom_frozen_readout"):
        assert quoted[name].strip() in html
