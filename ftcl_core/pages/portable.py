"""A chapter's Markdown as every reader sees it (issue 65, item 4): in the built book, in JupyterLab, in Colab or
GitHub's notebook viewer, and in a papermill output.

The chapters are written in MyST (``book/src/*.py``): ``{term}`` links to the glossary, ``{glue:md}`` numbers from
stored runs, ``(label)=`` targets, ``{cite}``, admonitions.  Only the book's build understands those; everywhere
else they show raw.  So ``tools/notebooks.py`` writes each notebook's Markdown in plain CommonMark
(:func:`commonmark`): a term becomes a link into the glossary, a citation "Author et al. year", a target an HTML
anchor, an admonition a quotation.  A Markdown cell that quotes glued numbers becomes a code cell that prints the
paragraph with its numbers (:func:`say`, input hidden: Colab's form view, JupyterLab's collapsed source, the
book's ``remove-input``), since only a kernel knows them.  Each converted cell keeps its MyST source in its
metadata (``ftcl.myst``), and the book's build puts it back (``book/_ext/myst_cells.py``): the book renders the
MyST as written, and every qualitative sentence stays bound to its named check there and here alike.

Glued values are recorded where they are glued (:mod:`ftcl_core.pages.glue`).  A paragraph may quote a number its
chapter glues further down (the book hides that code, and its prose comes first): it is printed with a mark in
the number's place and printed again, in place, once the number is glued (a display update, which papermill's
output keeps).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

BIB = Path(__file__).resolve().parent.parent.parent / "book" / "references.bib"
GLUE = re.compile(r"\{glue(?::(?:md|text))?\}`([^`]*)`")
PLACEHOLDER = re.compile(r"\{\{([A-Za-z_]\w*)(?::([^{}]*))?\}\}")
TERM = re.compile(r"\{term\}`([^`]*)`")
REF = re.compile(r"\{(?:ref|doc)\}`([^`]*)`")
CITE = re.compile(r"\{cite(?::\w+)?\}`([^`]*)`")
TARGET = re.compile(r"^\(([\w-]+)\)=[ \t]*$", re.M)
FENCE = re.compile(r"^(:{3,}|`{3,})\{(\w+)\}[ \t]*(.*?)\n(.*?)^\1[ \t]*$\n?", re.M | re.S)
GLUED: dict[str, object] = {}  # every value glued in this kernel (ftcl_core.pages.glue), by name


class PortableError(ValueError):
    """A paragraph that cannot be printed as it stands; the message names what is missing and the fix."""


def citations(bib: Path = BIB) -> dict[str, str]:
    """``{key: "Author et al. year"}`` for every entry of the book's BibTeX file."""
    out: dict[str, str] = {}
    for key, body in re.findall(r"@\w+\{([^,]+),(.*?)\n\}", bib.read_text(), flags=re.S):
        author = re.search(r"author\s*=\s*\{(.*?)\}", body, flags=re.S)
        year = re.search(r"year\s*=\s*\{?(\d{4})", body)
        names = [n.strip() for n in (author.group(1) if author else key).split(" and ")]
        last = [n.split(",")[0] if "," in n else n.split()[-1] for n in names]
        who = last[0] if len(last) == 1 else f"{last[0]} and {last[1]}" if len(last) == 2 else f"{last[0]} et al."
        out[key.strip()] = f"{who} {year.group(1) if year else ''}".strip()
    return out


def term_anchor(term: str) -> str:
    """The id Sphinx gives a glossary term (``Mean(neg)`` -> ``term-Mean-neg``)."""
    return "term-" + re.sub(r"[^A-Za-z0-9]+", "-", term).strip("-")


def _text_and_target(body: str) -> tuple[str, str]:
    """``text <target>`` -> (text, target); a bare ``target`` is both."""
    m = re.match(r"(.*?)\s*<([^>]*)>$", body, flags=re.S)
    return (m.group(1), m.group(2)) if m else (body, body)


def _term_link(text: str, term: str) -> str:
    return f"[{text}](glossary.md#{term_anchor(term)})"


def _fence(m: re.Match) -> str:
    kind, title, body = m.group(2), m.group(3).strip(), m.group(4)
    if kind == "bibliography":
        return ""
    if kind == "glossary":
        raise PortableError("a {glossary} directive belongs in book/glossary.md, not in a chapter")
    head = [f"> **{title or kind.capitalize()}**", ">"]
    lines = [ln for ln in body.rstrip("\n").split("\n") if not ln.startswith(":")]  # directive options
    return "\n".join(head + [f"> {ln}".rstrip() for ln in lines]) + "\n"


def commonmark(myst: str, cites: Mapping[str, str]) -> str:
    """``myst`` in plain CommonMark (the module says how); glue roles become ``{{name}}`` placeholders for
    :func:`say`."""
    text = FENCE.sub(_fence, myst)
    text = TARGET.sub(lambda m: f'<a id="{m.group(1)}"></a>', text)
    text = TERM.sub(lambda m: _term_link(*_text_and_target(m.group(1))), text)
    text = REF.sub(lambda m: "[{}](#{})".format(*_text_and_target(m.group(1))), text)
    text = CITE.sub(lambda m: "; ".join(cites.get(k.strip(), k.strip()) for k in m.group(1).split(",")), text)
    return GLUE.sub(lambda m: "{{" + m.group(1).split("::")[-1] + "}}", text)


def quotes_numbers(myst: str) -> bool:
    """Whether a Markdown cell quotes glued values (then it is printed by :func:`say`)."""
    return bool(GLUE.search(myst))


def fill(template: str, values: Mapping[str, object], pending: str | None = None) -> str:
    """``template`` with each ``{{name}}`` or ``{{name:fmt}}`` replaced by its value (a fact's text, or a glued
    number formatted with ``fmt``, as myst-nb's ``{glue:text}`name:fmt``` does); a name not in ``values`` is
    refused, or, given ``pending``, shown as ``pending`` until it is glued."""
    def one(m: re.Match) -> str:
        name, fmt = m.group(1), m.group(2)
        if name not in values:
            if pending is not None:
                return pending
            raise PortableError(f"this paragraph quotes '{name}', which this run never glued: glue it in the "
                                "chapter's code (ftcl_core.pages.glue), or take it out of the paragraph")
        value = values[name]
        value = getattr(value, "data", value)  # a Markdown object: its text
        return format(value, fmt) if fmt and fmt != "s" else str(value).strip()
    return PLACEHOLDER.sub(one, template)


PENDING_MARK = "(…)"  # a number glued further down the chapter, shown until its cell runs
_WAITING: list[tuple[str, object]] = []  # (template, display handle) of paragraphs printed before their numbers


def say(template: str) -> None:
    """Print a paragraph of the chapter with the numbers this kernel glued (:func:`fill`), as Markdown.  A number the
    chapter glues further down (its hidden code comes after the prose that quotes it) shows as :data:`PENDING_MARK`,
    and the paragraph is printed again in place once every number is glued (:func:`glued`)."""
    from IPython.display import Markdown, display

    if all(m.group(1) in GLUED for m in PLACEHOLDER.finditer(template)):
        display(Markdown(fill(template, GLUED)))
    else:
        _WAITING.append((template, display(Markdown(fill(template, GLUED, PENDING_MARK)), display_id=True)))


def glued(name: str, value: object) -> None:
    """Record a glued value, and print again every waiting paragraph whose numbers are now all glued."""
    from IPython.display import Markdown

    GLUED[name] = value
    for item in list(_WAITING):
        template, handle = item
        if all(m.group(1) in GLUED for m in PLACEHOLDER.finditer(template)):
            handle.update(Markdown(fill(template, GLUED)))
            _WAITING.remove(item)


def waiting() -> list[str]:
    """The names the paragraphs printed so far still wait for (empty once the chapter has run whole)."""
    return sorted({m.group(1) for t, _ in _WAITING for m in PLACEHOLDER.finditer(t) if m.group(1) not in GLUED})
