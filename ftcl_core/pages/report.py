"""A chapter as a page outside the built book (issue 65, item 5): run it under papermill with parameters, resolve the
Markdown roles that only the book's build understands, and write one HTML page, numbers in place and figures
inline, so that a papermill user gets what a book reader gets.

Roles resolved in the Markdown cells (:func:`resolve_roles`): ``{glue:md}`name```, ``{glue:text}`name```,
``{glue}`name``` and ``{glue:text}`name:fmt``` take the value the chapter glued under that name in its own run (a
name it never glued is refused, naming it); ``{term}`word``` and ``{term}`text <word>``` keep their text;
``{cite}`key``` becomes "Author et al. year" from ``book/references.bib``; ``{ref}``/``{doc}`` keep their text;
``{eval}`expr``` is refused (no chapter uses it). Cells tagged ``remove-cell`` are left out, and code is hidden
where the book hides it (tags ``hide-input``, ``remove-input``, ``hide-cell``), so the page reads like the book's."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import nbformat

from ftcl_core.arguments import is_count
from ftcl_core.config import MAX_SEED
from ftcl_core.pages.portable import BIB, citations
from ftcl_core.study.experiment_file import PROFILES

ROLE = re.compile(r"\{(glue(?::\w+)?|term|cite|ref|doc|eval)\}`([^`]*)`")
LEFTOVER = ("{glue", "{term}", "{eval}", "{ref}", "{doc}", "{cite}")  # what a rendered page never shows
HIDDEN_INPUT = {"hide-input", "remove-input", "hide-cell"}


class ReportError(ValueError):
    """A chapter cannot be rendered as it stands (a role without its value); the message names it and the fix."""


def glued(nb: nbformat.NotebookNode) -> dict[str, str]:
    """Every value the executed notebook glued (myst-nb's ``glue``): ``{name: its text/markdown or text/plain}``."""
    out: dict[str, str] = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            meta = o.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            prefix, data = meta.get("mime_prefix", ""), o.get("data", {})
            for mime in ("text/markdown", "text/plain"):
                if prefix + mime in data:
                    value = data[prefix + mime]
                    out[meta["name"]] = "".join(value) if isinstance(value, list) else value
                    break
    return out


def resolve_roles(markdown: str, values: Mapping[str, str], cites: Mapping[str, str]) -> str:
    """``markdown`` with every role of :data:`ROLE` replaced by what the book would show (see the module)."""
    def one(m: re.Match) -> str:
        role, body = m.group(1), m.group(2)
        if role.startswith("glue"):
            name = body.split("::")[-1]
            name = re.sub(r":[a-z]$", "", name)  # a format suffix (":s") after the name
            if name not in values:
                raise ReportError(f"the page quotes {{{role}}}`{body}`, which this run did not glue: run the chapter "
                                  "whole (a notebook that stops early glues less), or with the profile it glues under")
            return values[name].strip()
        if role == "eval":
            raise ReportError(f"{{eval}}`{body}` cannot be rendered outside the book; glue the value instead")
        if role == "cite":
            return "; ".join(cites.get(k.strip(), k.strip()) for k in body.split(","))
        text = re.match(r"(.*?)\s*<[^>]*>$", body, flags=re.S)  # "{term}`text <target>`"
        return text.group(1) if text else body
    return ROLE.sub(one, markdown)


def render(nb: nbformat.NotebookNode, bib: Path = BIB) -> nbformat.NotebookNode:
    """A copy of the executed notebook ``nb`` as the book shows it: roles resolved in its Markdown, ``remove-cell``
    cells dropped, and the code the book hides marked for the exporter to leave out."""
    values, cites = glued(nb), citations(bib)
    out = nbformat.from_dict(nb)
    cells = []
    for cell in out.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if "remove-cell" in tags or "injected-parameters" in tags:
            continue
        if cell.cell_type == "markdown":
            cell.source = resolve_roles(cell.source, values, cites)
        elif tags & HIDDEN_INPUT:
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
            cell.metadata["transient"] = {"remove_source": True}
        cells.append(cell)
    out.cells = cells
    return out


def to_html(nb: nbformat.NotebookNode) -> str:
    """``nb`` (rendered) as one self-contained HTML page: nbconvert's HTML exporter, the hidden code left out."""
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    tags = TagRemovePreprocessor(remove_input_tags=HIDDEN_INPUT, remove_cell_tags={"remove-cell"})
    exporter = HTMLExporter(template_name="lab", embed_images=True)
    exporter.register_preprocessor(tags, enabled=True)
    left = sorted({s for text in page_text(nb) for s in LEFTOVER if s in text})
    if left:
        raise ReportError(f"the page would still show {left}: a role this renderer does not know")
    html, _ = exporter.from_notebook_node(nb)
    return html


def page_text(nb: nbformat.NotebookNode) -> list[str]:
    """What a reader of the page reads: the Markdown cells and every text output (Markdown, plain text, streams;
    not the scripts a figure carries, whose code may hold braces of its own)."""
    out = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            out.append(cell.source)
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                out.append(o.get("text", ""))
            for mime in ("text/markdown", "text/plain"):
                if mime in o.get("data", {}):
                    out.append("".join(o["data"][mime]))
    return out


def _assigned(nb: nbformat.NotebookNode, value: str) -> set[str]:
    """The names a chapter's ``parameters`` cell assigns a value that begins as the pattern ``value`` says."""
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    return {m for c in cells for m in re.findall(rf"^(\w+)\s*(?::[^=]*)?={value}", c.source, flags=re.M)}


def chapter_parameters(nb: nbformat.NotebookNode) -> set[str]:
    """The names a chapter's ``parameters`` cell assigns (what papermill may set)."""
    return _assigned(nb, "(?!=)")


def parameter_defaults(nb: nbformat.NotebookNode) -> dict:
    """The literal values a chapter's ``parameters`` cell assigns (``seeds = [0, 1, 2]``, ``settings = {...}``); a name
    whose default is computed (``profile = os.environ.get(...)``) is left out."""
    import ast

    out: dict = {}
    for cell in (c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])):
        for node in ast.parse(cell.source).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                try:
                    out[node.targets[0].id] = ast.literal_eval(node.value)
                except ValueError:  # not a literal: its kind is the cell's to say
                    continue
    return out


def _kind(value: object) -> str:
    """A parameter value's kind as a reader names it: list, mapping, number, word or true/false."""
    if isinstance(value, bool):
        return "true/false"
    return {list: "list", dict: "mapping", str: "word"}.get(type(value), "number" if isinstance(value, (int, float))
                                                             else type(value).__name__)


def _same_kind(value: object, default: object) -> bool:
    """Whether ``value`` has ``default``'s kind, and a list's items (a mapping's values) the kind of its first."""
    if _kind(value) != _kind(default):
        return False
    if isinstance(default, list) and default:
        return all(_same_kind(v, default[0]) for v in value)
    if isinstance(default, dict) and default:
        first = next(iter(default.values()))
        return all(isinstance(k, str) and _same_kind(v, first) for k, v in value.items())
    return True


def _example(default: object) -> str:
    """A short value of ``default``'s kind as ``-p`` takes it (YAML): a list's first two items, a mapping's first."""
    import yaml

    short = default[:2] if isinstance(default, list) else dict(list(default.items())[:1]) if isinstance(default, dict) \
        else default
    text = yaml.safe_dump(short, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()
    return f'"{text}"' if isinstance(default, (list, dict)) else text


def check_parameter_kinds(nb: nbformat.NotebookNode, parameters: Mapping, chapter: str) -> None:
    """Refuse (:class:`ReportError`) a parameter whose value is not of its default's kind (a list for ``seeds``, a
    mapping of lists for ``settings``), before a kernel starts: a wrong kind reaches a cell and fails there."""
    defaults = parameter_defaults(nb)
    for name, value in parameters.items():
        if name in defaults and not _same_kind(value, defaults[name]):
            default = defaults[name]
            inner = (f" of {_kind(default[0])}s" if isinstance(default, list) and default else
                     f" of {_kind(next(iter(default.values())))}s" if isinstance(default, dict) and default else "")
            why = ""
            if isinstance(value, str) and _kind(default) == "number":
                try:  # "1e9": YAML 1.1 reads a number with an exponent and no point as text
                    why = f" (YAML reads {value} as text: write {float(value):.1e}, with a point)"
                except ValueError:
                    pass
            raise ReportError(f"-p {name} {value!r}: {chapter}'s {name} is a {_kind(default)}{inner}{why}; write it as "
                              f"one, e.g. -p {name} {_example(default)}")


def parse_parameters(pairs: list[list[str]] | None) -> dict:
    """``-p name value`` pairs as papermill parameters: each value read as YAML, so ``"[0, 1, 2]"`` is a list, ``3`` an
    int and ``smoke`` a string."""
    import yaml

    out: dict = {}
    for name, value in pairs or []:
        if name in out:  # the last would win silently: the page would not say which the user meant
            raise ReportError(f"parameter {name} is given twice (-p {name} ... -p {name} ...): give it once")
        try:
            out[name] = yaml.safe_load(value)
        except yaml.YAMLError as err:
            why = getattr(err, "problem", None) or "not YAML"  # YAML's message spans lines: its one-line cause
            raise ReportError(f"parameter {name}={value!r} is not a value ({why}); write a list as \"[0, 1, 2]\", a "
                              "number as 3, a word as smoke") from None
        if out[name] is None:  # no chapter's parameter defaults to None: a null would reach its cells as a value
            raise ReportError(f"parameter {name}={value!r} reads as null, no value: leave -p {name} out for the "
                              "chapter's default, or give one (a list as \"[0, 1, 2]\", a word as smoke)")
    return out


def _executed_from(notebook: Path, chapter: Path) -> bool:
    """Whether ``notebook`` is papermill's output of ``chapter`` (an earlier report, which a new one may replace)."""
    try:
        run = nbformat.read(notebook, as_version=4).metadata.get("papermill", {})
    except Exception:  # noqa: BLE001  (not a notebook at all: not a report either)
        return False
    return Path(str(run.get("input_path", ""))).name == chapter.name


def _check_place(page: Path, src: Path) -> None:
    """Refuse (:class:`ReportError`) a page under a file, or whose executed-notebook twin (``page`` with ``.ipynb``)
    is a folder; an ``OSError`` from the file system (a name too long) is the caller's to word."""
    if blocked := next((p for p in page.parents if p.exists() and not p.is_dir()), None):
        raise ReportError(f"--out {page} lies under {blocked}, a file, not a folder: name a page elsewhere, e.g. "
                          f"--out reports/{src.stem}.html")
    if page.with_suffix(".ipynb").is_dir():
        raise ReportError(f"--out {page}: its executed notebook would be {page.with_suffix('.ipynb')}, which is a "
                          f"folder: name another page, e.g. --out reports/{src.stem}.html")


def report(chapter: str | os.PathLike, out: str | os.PathLike | None = None, parameters: Mapping | None = None,
           kernel: str = "python3") -> Path:
    """Run ``chapter`` (a ``book/*.ipynb``) under papermill with ``parameters`` and write it rendered as HTML to
    ``out`` (default ``reports/<chapter>.html`` in the current folder); returns the page's path. The executed
    notebook is kept beside it (``<chapter>.ipynb``)."""
    import papermill as pm

    src = Path(chapter)
    if not str(chapter).strip():  # Path("") is ".", a folder
        raise ReportError("the chapter's path is empty: name a chapter of the book, e.g. book/05_momentum.ipynb")
    if not src.exists():
        raise ReportError(f"{chapter} not found: name a chapter of the book, e.g. book/05_momentum.ipynb")
    if not src.is_file() or src.suffix != ".ipynb":
        raise ReportError(f"{chapter} is not a notebook: name a chapter, e.g. book/05_momentum.ipynb")
    try:
        nb = nbformat.read(src, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # noqa: BLE001  (nbformat raises several kinds on a file that is not a notebook)
        raise ReportError(f"{chapter} is not a readable notebook ({type(err).__name__}): name a chapter of the book, "
                          "e.g. book/05_momentum.ipynb") from None
    known = chapter_parameters(nb)
    unknown = sorted(set(parameters or {}) - known)
    if unknown:
        raise ReportError(f"{src.name} takes no parameter {', '.join(unknown)}; its parameters are "
                          f"{', '.join(sorted(known)) or 'none'}")
    check_parameter_kinds(nb, parameters or {}, src.name)  # "0 1", 5 or abc would reach a cell and fail there
    seeds = (parameters or {}).get("seeds")
    if seeds is not None and not (all(is_count(s) and 0 <= s <= MAX_SEED for s in seeds) and len(set(seeds)) == len(seeds)
                                  and seeds):
        raise ReportError(f"-p seeds {seeds!r}: seeds are distinct whole numbers from 0 to {MAX_SEED}, at least one, "
                          'e.g. -p seeds "[0, 1, 2]"')
    profile = (parameters or {}).get("profile")
    if profile is not None and profile not in PROFILES:  # said before a kernel starts, not from a failed cell
        raise ReportError(f"-p profile {profile}: a chapter's profile is one of {', '.join(PROFILES)} (smoke: seconds, "
                          "cpu: the stored runs' recipe, gpu: ImageNet-100)")
    page = Path(out) if out else Path("reports") / f"{src.stem}.html"
    try:
        _check_place(page, src)
    except OSError as err:  # a name too long, a folder the system will not show: said, not a traceback
        raise ReportError(f"--out {str(page)[:80]} cannot be written ({err.strerror or err}): name a page in a folder "
                          f"you can write, e.g. --out reports/{src.stem}.html") from None
    if page.is_dir() or page.suffix != ".html":
        raise ReportError(f"--out {page} must name an HTML page to write (a file ending in .html), e.g. --out "
                          f"reports/{src.stem}.html")
    executed = page.with_suffix(".ipynb")
    if executed.resolve() == src.resolve():
        raise ReportError(f"--out {page} would write the executed notebook over the chapter itself ({src}): name a "
                          f"page in another folder, e.g. --out reports/{src.stem}.html")
    if page.is_file() and not (executed.is_file() and _executed_from(executed, src)):
        raise ReportError(f"--out {page} exists and is not an earlier report of {src.name} (its executed notebook "
                          f"{executed.name} would sit beside it): a report would write over it. Name a free page, e.g. "
                          f"--out reports/{src.stem}.html, or move the file away.")
    if executed.is_file() and not _executed_from(executed, src):
        raise ReportError(f"--out {page} would write the executed notebook over {executed}, which is not an earlier "
                          f"report of {src.name}: name a page whose .ipynb twin is free, e.g. --out reports/{src.stem}.html")
    try:
        page.parent.mkdir(parents=True, exist_ok=True)
        existed = executed.exists()
        with open(executed, "a"):  # a folder that takes no file (/proc, say) is said now, not after the kernel's run
            pass
        if not existed:
            executed.unlink()
    except OSError as err:
        raise ReportError(f"--out {page}: its folder cannot be made or written ({err.strerror or err}): name a page in "
                          f"a folder you can write, e.g. --out reports/{src.stem}.html") from None
    print(f"running {src} with {dict(parameters or {})}; the page will be {page}", flush=True)
    try:
        pm.execute_notebook(str(src), str(executed), parameters=dict(parameters or {}), cwd=str(src.resolve().parent),
                            kernel_name=kernel, progress_bar=False)
    except pm.PapermillExecutionError as err:
        raise ReportError(f"{src.name} failed at cell {err.exec_count} with these parameters ({err.ename}: "
                          f"{err.evalue}); the executed notebook {executed} shows where") from None
    html = to_html(render(nbformat.read(executed, as_version=4)))
    page.write_text(html)
    print(f"report: {page} (the executed notebook: {executed})", flush=True)
    return page
