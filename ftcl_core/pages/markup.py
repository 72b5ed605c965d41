"""HTML blocks a chapter shows beside its figures: tables (a verdict column second), Markdown with tables, the
source of the code a page is about, and the notice a smoke run shows; each renders the same in Jupyter and in the
static book."""

from __future__ import annotations

import inspect
import pathlib
import re
import string
from html import escape

NBSP_PM = "\u00a0±\u00a0"  # "33.8 ± 2.6" never breaks at its "±" (a narrow column used to stack it on three lines)


def verdict_second(header: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """``header`` and ``rows`` with a ``verdict`` column moved to the second place, where a reader looks first
    (what a row is, then what it says); the other columns keep their order.  Only the display: CSV files keep theirs."""
    at = next((i for i, h in enumerate(header) if str(h).strip().lower() == "verdict"), None)
    if at is None or at <= 1:
        return header, rows
    order = [0, at, *(i for i in range(1, len(header)) if i != at)]
    return [header[i] for i in order], [[r[i] for i in order] if len(r) == len(header) and not _is_note(r) else r
                                        for r in rows]


def _is_note(row: list) -> bool:
    """A note row: a name, then one text ("skipped: ...", "did not finish: ..."), every later cell empty."""
    return len(row) > 3 and str(row[1]) != "" and not any(str(c) for c in row[2:])


def _cells(row: list, width: int) -> str:
    """One table row's cells; a note row (:func:`_is_note`) spans its text over the empty columns instead of
    stacking it in one narrow column."""
    from html import escape

    cells = [escape(str(c)).replace(" ± ", NBSP_PM) for c in row]
    if len(cells) == width and _is_note(row):
        return f"<td>{cells[0]}</td><td colspan=\"{width - 1}\">{cells[1]}</td>"
    return "".join(f"<td>{c}</td>" for c in cells)


SMOKE_NOTICE = "smoke run: tiny data and steps, numbers mean nothing"
SMOKE_NOTICE_HTML = pathlib.Path(__file__).with_name("smoke_notice.html")  # the notice's words, with $notice and $runs


def smoke_notice(profile: str):
    """The admonition a chapter run with the ``smoke`` profile shows at its top (under its title; where scripts do
    not run, where the cell stands): its figures and numbers only show that the code runs.  ``None`` (nothing shown)
    for every other profile."""
    from IPython.display import HTML

    if profile != "smoke":
        return None
    from ftcl_core.study.experiment_file import profile_root

    words = string.Template(SMOKE_NOTICE_HTML.read_text(encoding="utf-8"))  # written by people, two values glued in
    return HTML(words.substitute(notice=SMOKE_NOTICE, runs=escape(str(profile_root(profile)))).strip())


def html_table(header: list[str], rows: list[list[str]], caption: str | None = None, collapsed: str | None = None):
    """An IPython HTML table (escaped), which renders the same in Jupyter and in the static book; a long
    table can start ``collapsed`` behind a summary line.  A ``verdict`` column shows second (:func:`verdict_second`)."""
    from IPython.display import HTML

    header, rows = verdict_second(header, rows)
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + _cells(r, len(header)) + "</tr>" for r in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    table = f'<table class="table">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    if collapsed:
        table = f"<details><summary>{escape(collapsed)}</summary>{table}</details>"
    return HTML(table)


def markdown_html(text: str):
    """Markdown with tables as an IPython HTML object: the static book renders ``text/markdown`` outputs
    without table support (tables came out as raw ``| a | b |`` text), HTML renders everywhere."""
    from IPython.display import HTML
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable("table").render(text.replace(" ± ", NBSP_PM))
    return HTML(html.replace("<table>", '<table class="table">'))


def source_code(*objects, caption: str | None = None, collapsed: str | None = None):
    """The source of functions, classes or whole modules (``inspect.getsource``), highlighted, as an IPython HTML
    object with the import that gives it (its file and lines in the import's tooltip): a chapter shows the code it
    is about, as it runs today.
    ``collapsed``: the summary line of a fold (``<details>``) that holds it, for a long listing.

    The shown functions' lines fit the book's column (tests/test_book.py's ``SHOWN_WIDTH``); on a narrower screen
    a long line wraps under its own indent plus four (:func:`_hanging_lines`), never back at the left edge."""

    from IPython.display import HTML
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    root = pathlib.Path(__file__).resolve().parents[2]  # the repository
    parts = []
    for obj in objects:
        lines, first = inspect.getsourcelines(obj)
        first = max(first, 1)  # a module's source starts at its line 1 (inspect says 0)
        # a decorated function's own file (torch.no_grad's wrapper lives in torch)
        path = pathlib.Path(inspect.getsourcefile(inspect.unwrap(obj))).resolve()
        where = path.relative_to(root) if path.is_relative_to(root) else path.name
        prefix = f"src-{path.stem}-{first}"
        html = highlight("".join(lines), PythonLexer(), HtmlFormatter(noclasses=True, linespans=prefix))
        name = getattr(obj, "__qualname__", None)
        found = (f"import {obj.__name__}" if inspect.ismodule(obj) else f"from {obj.__module__} import {name}")
        span = f"{escape(str(where))}, lines {first}-{first + len(lines) - 1}"  # the file, for a contributor's hover
        parts.append(f'<p><code title="{span}">{escape(found)}</code></p>' + _hanging_lines(html, prefix, lines))
    cap = f"<p>{escape(caption)}</p>" if caption else ""
    body = cap + "".join(parts)
    if collapsed:
        body = f"<details><summary>{escape(collapsed)}</summary>{body}</details>"
    return HTML(body)


def _hanging_lines(html: str, prefix: str, lines: list[str]) -> str:
    """Pygments' line spans (``linespans=prefix``), each with its hanging indent ``--hang``: a line that wraps
    goes on four characters right of its own indent (``book/_static/ftcl.css`` lays the spans out)."""
    def block(m: re.Match) -> str:
        line = lines[int(m.group(1)) - 1]
        hang = len(line) - len(line.lstrip(" ")) + 4
        return f'<span id="{prefix}-{m.group(1)}" style="--hang: {hang}ch">'

    return re.sub(rf'<span id="{re.escape(prefix)}-(\d+)">', block, html)
