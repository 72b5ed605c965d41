"""Build the book's notebooks from their percent-format sources: ``book/src/*.py`` -> ``book/*.ipynb``.

Sources are plain Python files that diff well; cells start with ``# %%`` (code) or ``# %% [markdown]``
(markdown, every line prefixed with ``# ``).  A code cell whose marker line reads ``# %% tags=["parameters"]``
is papermill's parameters cell; a lone ``# %% colab-setup`` line becomes the standard first cell that, in
Colab only, fetches the repository named in ``_config.yml`` (``repository.url``) and installs ``ftcl_core``
(:data:`COLAB_SETUP`, one copy for all chapters; it stops with a clear message when the clone fails).
``python tools/notebooks.py --check`` fails when an .ipynb is stale.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat

BOOK = Path(__file__).resolve().parent.parent / "book"
MARKER = re.compile(r"^# %%(?P<md> \[markdown\])?(?: tags=(?P<tags>\[.*\]))?\s*$")
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


def repository() -> tuple[str, str]:
    """The repository the book is published from: ``_config.yml``'s ``repository.url`` and ``branch`` (the launch
    buttons read the same setting)."""
    import yaml

    repo = yaml.safe_load((BOOK.parent / "_config.yml").read_text())["repository"]
    return repo["url"], repo.get("branch", "main")


def to_notebook(source: str) -> nbformat.NotebookNode:
    cells, kind, tags, lines = [], None, [], []

    def close():
        if kind is None:
            return
        text = "\n".join(lines).strip("\n")
        if kind == "markdown":
            text = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in text.splitlines())
            cell = nbformat.v4.new_markdown_cell(text)
        else:
            cell = nbformat.v4.new_code_cell(text)
        if tags:
            cell.metadata["tags"] = tags
        cells.append(cell)

    url, branch = repository()
    setup = COLAB_SETUP.format(url=url, branch=branch)
    for line in source.replace(COLAB_MARKER, "# %%\n" + setup + "\n").splitlines():
        m = MARKER.match(line)
        if m:
            close()
            kind = "markdown" if m.group("md") else "code"
            tags = json.loads(m.group("tags")) if m.group("tags") else []
            lines = []
        elif kind is not None:
            lines.append(line)
    close()
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):  # stable ids keep the .ipynb diff-free across rebuilds
        cell["id"] = f"cell-{i}"
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
