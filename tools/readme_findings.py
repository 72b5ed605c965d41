"""Copy the findings (``book/findings.md``) into README.md's findings block, numbers filled in from the stored runs.

``book/findings.md`` is the one authored text of the findings, the first page of the book's Reproduce part (the index
and chapter 1 link there), its numbers glued from chapter 7 (``{glue:text}`07a_when_ft_helps.ipynb::name:s```) and
their links naming the chapters' labels (``[chapter 7](#phase-diagram)``). GitHub renders neither, so this script
writes the same Markdown into the README with each glued name replaced by its value from
:func:`ftcl_core.study.findings.facts` and each label by the chapter's notebook, after every check of
:data:`ftcl_core.study.findings.CHECKS` has passed, and draws the phase diagram the block shows. ``python -m ftcl_core
summary`` runs it; ``tests/test_findings.py`` fails while the README's block is stale.

    python tools/readme_findings.py           # check the findings, draw the figure, rewrite README.md's block
    python tools/readme_findings.py --check   # exit 1 when README.md's block is not what the stored runs give
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "book" / "findings.md"
README = ROOT / "README.md"
MARKERS = ("<!-- findings: copied from book/findings.md by tools/readme_findings.py (run by `python -m ftcl_core "
           "summary`), numbers from the stored runs; edit book/findings.md, not this block -->", "<!-- /findings -->")
GLUE = re.compile(r"\{glue:text\}`(?:[\w.]+::)?(\w+)(?::s)?`")
LABEL_LINK = re.compile(r"\]\(#([\w-]+)\)")


def labels() -> dict[str, str]:
    """Each MyST label a chapter defines (``(name)=``) -> the chapter's notebook."""
    return {m: f"book/{src.stem}.ipynb" for src in sorted((ROOT / "book" / "src").glob("*.py"))
            for m in re.findall(r"^# \(([\w-]+)\)=$", src.read_text(), re.M)}


def render(markdown: str, facts: Mapping[str, str], anchors: Mapping[str, str]) -> str:
    """``markdown`` (book/findings.md's text) for GitHub: glued names filled from ``facts``, label links pointed at
    the chapters' notebooks (``anchors``), the book-relative figure path made repository-relative."""
    def fact(m: re.Match) -> str:
        if m.group(1) not in facts:
            raise KeyError(f"book/findings.md glues {m.group(1)!r}, which ftcl_core.study.findings.facts does not give")
        return facts[m.group(1)]

    def link(m: re.Match) -> str:
        if m.group(1) not in anchors:
            raise KeyError(f"book/findings.md links to the label {m.group(1)!r}, which no chapter defines")
        return f"]({anchors[m.group(1)]})"

    markdown = re.sub(r"^# .*\n", "", markdown, count=1, flags=re.M)  # the page's title: the README has its own
    out = LABEL_LINK.sub(link, GLUE.sub(fact, markdown))
    return re.sub(r"\]\(_static/", "](book/_static/", out)


def block(ev=None) -> str:
    """README.md's findings block, markers included, once every check holds on the stored runs (``ev``)."""
    from ftcl_core.study import evidence, findings

    ev = ev or evidence.Evidence.load("cpu")
    findings.expect(ev)
    return "\n".join([MARKERS[0], "", render(SOURCE.read_text(), findings.facts(ev), labels()).strip(), "",
                      MARKERS[1]])


def replace_block(text: str, new: str) -> str:
    """``text`` with its findings block (from the line starting ``<!-- findings`` to :data:`MARKERS`' end) replaced
    by ``new``."""
    start, end = text.find("<!-- findings"), text.find(MARKERS[1])
    if start < 0 or end < start:
        raise ValueError(f"README.md has no findings block: put the lines {MARKERS[0]!r} and {MARKERS[1]!r} where "
                         "the findings belong.")
    return text[:start] + new + text[end + len(MARKERS[1]):]


def write_figure(ev) -> Path:
    """The phase diagram the README and the index show (:data:`ftcl_core.study.evidence.FIGURE`)."""
    from ftcl_core.pages.findings import write_figure as draw

    return draw(ev, title="MoCo v1: FT minus the same run without FT (linear top-1, points)",
                column=lambda f: f"FT from {f:.0%} of the run" if f else "FT from the start",
                footnote="\N{DAGGER} Judged on the error scale: near a perfect score, the share of test errors FT "
                         "removes decides, not points.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when README.md's block is stale; write nothing")
    parser.add_argument("--readme", type=Path, default=README, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from ftcl_core.study import evidence

    ev = evidence.Evidence.load("cpu")
    text = args.readme.read_text()
    try:
        fresh = replace_block(text, block(ev))
    except (evidence.FindingsDisagree, KeyError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.check:
        if fresh != text:
            print(f"{args.readme.name}'s findings are stale: run `python tools/readme_findings.py`", file=sys.stderr)
            return 1
        return 0
    from ftcl_core.runs import atomic_write_bytes

    print(f"<!-- findings figure drawn: {write_figure(ev)} -->")
    if fresh != text:
        atomic_write_bytes(args.readme, fresh.encode())
    print(f"<!-- findings block written: {args.readme} -->")
    return 0


if __name__ == "__main__":
    sys.exit(main())
