"""Build the book's notebooks from their percent-format sources: ``book/src/*.py`` -> ``book/*.ipynb``.

Sources are plain Python files that diff well, in jupytext's percent format (jupytext does the conversion):
cells start with ``# %%`` (code) or ``# %% [markdown]`` (markdown, every line prefixed with ``# ``), and a
code cell whose marker line reads ``# %% tags=["parameters"]`` is papermill's parameters cell.  The one thing
jupytext cannot do is share a cell between files: a lone ``# %% colab-setup`` line becomes the standard cell,
first after the page's title, that, in Colab only, fetches the repository named in ``_config.yml``
(``repository.url``) and installs ``ftcl_core`` (:data:`COLAB_SETUP`, one copy for all chapters; it stops with a
clear message when the clone fails).  After the parameters cell every chapter gets one more shared cell,
:data:`SMOKE_CELL`: under the ``smoke`` profile it shows, at the top of the page, that the page's numbers mean
nothing.  ``python tools/notebooks.py --check`` fails when an .ipynb is stale.

The notebooks read right outside the book too (:func:`portable`, :mod:`ftcl_core.pages.portable`): their Markdown is
plain CommonMark, and a paragraph that quotes numbers from the runs is a code cell that prints it; the book's build
puts the MyST each converted cell was written in back (``book/_ext/myst_cells.py``).

What the rendered book shows of the code (:func:`visibility`): a chapter is read for its prose, figures and tables,
so every code cell's source starts hidden behind a toggle (``hide-input``), the parameters and Colab cells are left
out of the page (``remove-cell``; the notebook keeps them), and a cell shows its source only when
its author tags it ``show-input``: the code the chapter is about.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

BOOK = Path(__file__).resolve().parent.parent / "book"
COLAB_MARKER = "# %% colab-setup"
COLAB_SETUP = """import os
import subprocess
import sys

if "google.colab" in sys.modules:  # Colab: fetch the repository (configs, stored runs) and install ftcl_core first
    REPOSITORY = "{url}"  # _config.yml's repository.url, set by whoever publishes the book
    clone = subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", "{branch}", REPOSITORY, "/content/ftcl"],
                           capture_output=True, text=True)
    if clone.returncode != 0 and not os.path.isdir("/content/ftcl/ftcl_core"):
        raise RuntimeError(f"could not clone {{REPOSITORY}} ({{clone.stderr.strip()}}). The book's publisher sets this "
                           "address in _config.yml (repository.url); clone the repository by hand into /content/ftcl "
                           "and run this cell again.")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", "/content/ftcl[book]"], check=True)
    sys.path.insert(0, "/content/ftcl")
    os.chdir("/content/ftcl/book")"""


SAY_CELL = '''#@title A paragraph with numbers from the stored runs
from ftcl_core.pages.portable import say

say(r"""{text}""")'''
PORTABLE = "ftcl"  # a converted cell's metadata key: {"myst": the MyST source the book's build puts back}


SMOKE_CELL = """from ftcl_core.pages.markup import smoke_notice

smoke_notice(profile)  # the smoke profile's pages say their numbers mean nothing"""


def repository() -> tuple[str, str]:
    """The repository the book is published from: ``_config.yml``'s ``repository.url`` and ``branch`` (the launch
    buttons read the same setting)."""
    import yaml

    repo = yaml.safe_load((BOOK.parent / "_config.yml").read_text())["repository"]
    return repo["url"], repo.get("branch", "main")


PARAMETER_NOTE = "# The page's parameters (papermill sets them, in the notebook's parameters cell):"


def parameter_note(parameters: str) -> str:
    """The parameters cell's lines (its imports aside) as comments under :data:`PARAMETER_NOTE`: the set-up fold's
    opening, since the cell itself is left out of the page."""
    kept = [ln for ln in parameters.splitlines() if ln.strip() and not ln.startswith(("import ", "from "))]
    return "\n".join([PARAMETER_NOTE, *(f"#   {ln}" for ln in kept)])

VISIBILITY_TAGS = {"show-input", "hide-input", "hide-cell", "hide-output", "remove-input", "remove-cell", "remove-output"}


def visibility(cell: nbformat.NotebookNode, colab: bool) -> None:
    """Set how the built book shows a code cell (module docstring): an author's own visibility tag wins, else the
    set-up cells (Colab, parameters) leave the rendered page (a notebook keeps them, where papermill and Colab read
    them; the guide says what a profile is) and every other cell hides its source."""
    tags = list(cell.metadata.get("tags", []))
    if not VISIBILITY_TAGS & set(tags):
        tags.append("remove-cell" if colab or "parameters" in tags else "hide-input")
    cell.metadata["tags"] = [t for t in tags if t != "show-input"]
    if not cell.metadata["tags"]:
        del cell.metadata["tags"]


def fold_prompt(cell: nbformat.NotebookNode, exercises: bool, setup: bool) -> str | None:
    """What a folded code cell holds, for its fold's label: the page's set-up (``setup``: its first
    code after them), a solution (a folded cell under the Exercises heading, ``exercises``; by its number where its
    opening comment gives one), or the cell's opening comment; None keeps myst-nb's "Show code cell source"."""
    tags = set(cell.metadata.get("tags", []))
    if not tags & {"hide-input", "hide-cell"}:
        return None
    lines = [ln for ln in cell.source.splitlines() if ln.strip() and not ln.startswith((PARAMETER_NOTE, "#   "))]
    first = lines[0] if lines else ""
    if exercises and "hide-cell" in tags:
        numbers = re.findall(r"^#\s*Solution\s+(\d+)", cell.source, re.M)
        if len(numbers) > 1:
            return f"solutions {numbers[0]}–{numbers[-1]}"
        return f"solution {numbers[0]}" if numbers else "the solutions"
    if setup and first.startswith(("import ", "from ")):
        return "the imports and set-up"
    if first.startswith("#"):
        words = first.lstrip("# ").rstrip(".:").split(":")[0]
        head = words.split(" ")[0]
        if head[1:].islower() or len(head) == 1:  # "Show the library's step", "Show a minute"; MyMoCo keeps its name
            words = words[0].lower() + words[1:]
        return words if len(words) <= 60 else words[:60].rsplit(" ", 1)[0] + " ..."
    return None


def label_folds(cells: list[nbformat.NotebookNode]) -> None:
    """Name each fold by what it holds (:func:`fold_prompt`), in myst-nb's per-cell setting."""
    exercises, setup_seen, last_solution = False, False, None
    for cell in cells:
        if cell.cell_type == "markdown" or PORTABLE in cell.metadata:
            myst = cell.metadata.get(PORTABLE, {}).get("myst", cell.source)
            exercises = exercises or bool(re.search(r"^## Exercises", myst, re.M))
            continue
        tags = set(cell.metadata.get("tags", []))
        setup = not setup_seen and not tags & {"parameters", "remove-cell", "remove-input"}
        setup_seen = setup_seen or setup
        prompt = fold_prompt(cell, exercises, setup)
        if prompt == "the solutions" and last_solution:  # a solution's code continued in the next cell
            prompt = f"the rest of {last_solution}"
        if prompt and prompt.startswith("solution"):  # "solution 4", "solutions 1–3": the last one named
            last_solution = f"solution {re.findall(r'[0-9]+', prompt)[-1]}"
        if prompt:
            cell.metadata["mystnb"] = {"code_prompt_show": f"Show {prompt}", "code_prompt_hide": f"Hide {prompt}"}


def portable(cell: nbformat.NotebookNode, cites: dict[str, str]) -> list[nbformat.NotebookNode]:
    """A Markdown cell as it reads outside the book (:mod:`ftcl_core.pages.portable`): plain CommonMark, or, where it
    quotes glued numbers, a code cell that prints it (after the chapter's title, kept as Markdown, where the cell
    opens with it); a converted cell keeps its MyST source in ``metadata.ftcl.myst``."""
    from ftcl_core.pages.portable import commonmark, quotes_numbers

    myst = cell.source
    text = commonmark(myst, cites)
    if not quotes_numbers(myst):
        if text != myst:
            cell.source = text
            cell.metadata[PORTABLE] = {"myst": myst}
        return [cell]
    if myst.startswith("# ") and "\n" in myst:  # the page's title stays a heading: notebook viewers name the page by it
        title, rest = myst.split("\n", 1)
        return [*portable(nbformat.v4.new_markdown_cell(title), cites),
                *portable(nbformat.v4.new_markdown_cell(rest.lstrip("\n")), cites)]
    if '"""' in text or text.endswith("\\"):
        raise ValueError(f'a paragraph holds """ or ends in a backslash, which say()\'s string cannot: {text[:80]}')
    return [nbformat.v4.new_code_cell(SAY_CELL.format(text=text), metadata={
        "tags": ["remove-input"], "cellView": "form", "jupyter": {"source_hidden": True}, PORTABLE: {"myst": myst}})]


def to_notebook(source: str) -> nbformat.NotebookNode:
    """A percent-format source as a notebook: jupytext reads it (cells, Markdown, tags); this tool only expands
    the ``# %% colab-setup`` line into the one shared set-up cell, which jupytext has no way to include."""
    import jupytext

    url, branch = repository()
    text = source.replace(COLAB_MARKER, "# %%\n" + COLAB_SETUP.format(url=url, branch=branch) + "\n")
    nb = jupytext.reads(text, fmt="py:percent")
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                   "language_info": {"name": "python"}}
    at = next((i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])), None)
    if at is not None:  # after papermill's parameters (and its injected ones): the smoke profile's notice
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(SMOKE_CELL, metadata={"tags": ["remove-input"]}))
    from ftcl_core.pages.portable import citations

    cites = citations()
    nb.cells = [out for c in nb.cells for out in (portable(c, cites) if c.cell_type == "markdown" else [c])]
    colab = next((i for i, c in enumerate(nb.cells) if "google.colab" in c.source), None)
    if colab is not None:  # Colab installs ftcl_core before any cell imports it: first after the title, if there is one
        cell = nb.cells.pop(colab)
        nb.cells.insert(1 if nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ") else 0, cell)
    for i, cell in enumerate(nb.cells):  # stable ids and no jupytext bookkeeping keep the .ipynb diff-free
        cell["id"] = f"cell-{i}"
        cell.metadata.pop("lines_to_next_cell", None)
        if cell.cell_type == "code":
            cell.execution_count, cell.outputs = None, []
            visibility(cell, colab="google.colab" in cell.source)
    parameters = next((c for c in nb.cells if "parameters" in c.metadata.get("tags", [])), None)
    setup = next((c for c in nb.cells if c.cell_type == "code" and not {"parameters", "remove-cell", "remove-input"}
                  & set(c.metadata.get("tags", []))), None)
    if parameters is not None and setup is not None:  # the parameters cell is left out of the page: the fold shows it
        setup.source = parameter_note(parameters.source) + "\n" + setup.source
    label_folds(nb.cells)
    return nb


def render(src: Path) -> str:
    return nbformat.writes(to_notebook(src.read_text())) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="fail if a notebook differs from its source")
    args = parser.parse_args(argv)
    stale = []
    for src in sorted((BOOK / "src").glob("*.py")):
        target = BOOK / f"{src.stem}.ipynb"
        text = render(src)
        if not target.is_file() or target.read_text() != text:
            stale.append(target.name)
            if not args.check:
                target.write_text(text)
    if args.check and stale:
        print(f"stale notebooks (run python tools/notebooks.py): {stale}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
