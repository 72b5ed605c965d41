"""Every chapter executes headless under papermill with the smoke profile; notebooks match their sources."""

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))  # Learn chapters and numbered ones


def test_every_toc_chapter_has_a_notebook_and_a_source():
    toc = (ROOT / "_toc.yml").read_text()
    assert CHAPTERS == sorted(c for c in re.findall(r"file: book/(\w+)", toc) if not (ROOT / "book" / f"{c}.md").is_file())
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
    """Numbers in Markdown outside equations, code, citations, MyST labels (``(try-it-05)=``) and references to
    equations, tables and chapters."""
    t = re.sub(r"^\([\w-]+\)=[ \t]*$", "", markdown, flags=re.M)
    t = re.sub(r"\$\$.*?\$\$", "", t, flags=re.S)
    t = re.sub(r"\$[^$]*\$", "", t)
    t = re.sub(r"```.*?```", "", t, flags=re.S)
    t = re.sub(r"`[^`]*`", "", t)
    t = re.sub(r"\{cite[^}]*\}", "", t)
    t = re.sub(r"\[[^\]]*\]\([^)]*\)", "", t)
    t = re.sub(r"\b(eqs?|Eq|Tables?|Sec|Supp|Fig|Figure|[Cc]hapters?|Section|T|steps?)\.?\s*[A-Z]?\d+(\.\d+)*"
               r"(\s*(-|–|and|,)\s*\d+(\.\d+)*)*", "", t)
    t = re.sub(r"(?<=\d) (?=\d{3}\b)", "", t)  # 10 000 -> 10000
    return set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?", t))


def myst_of(cell: dict) -> str:
    """A notebook cell's Markdown as its author wrote it (MyST): a cell tools/notebooks.py made portable keeps it in
    ``metadata.ftcl.myst``; a code cell without it has none."""
    myst = cell.get("metadata", {}).get("ftcl", {}).get("myst")
    if myst is not None:
        return "".join(myst)
    return "".join(cell["source"]) if cell["cell_type"] == "markdown" else ""


def test_no_new_number_is_typed_into_the_books_prose():
    import json

    allowed = recipe_numbers() | CONSTANTS
    typed = {}
    for name in CHAPTERS:
        cells = json.loads((ROOT / "book" / f"{name}.ipynb").read_text())["cells"]
        text = "\n".join(myst_of(c) for c in cells)
        found = prose_numbers(text) - allowed
        if found:
            typed[name] = found
    found = prose_numbers((ROOT / "book" / "findings.md").read_text()) - allowed  # the index's findings
    if found:
        typed["findings.md"] = found
    new = {k: sorted(v - TYPED_BY_HAND.get(k, set())) for k, v in typed.items() if v - TYPED_BY_HAND.get(k, set())}
    assert not new, f"numbers typed into prose (use myst-nb glue or generated text from the runs): {new}"
    gone = {k: sorted(v - typed.get(k, set())) for k, v in TYPED_BY_HAND.items() if v - typed.get(k, set())}
    assert not gone, f"no longer typed by hand, remove them from TYPED_BY_HAND: {gone}"


# ---- the glossary: every term the issue "A book that teaches" lists, and every {term} link resolves ---------------

GLOSSARY_TERMS = ["readout", "linear readout", "kNN readout", "random-init baseline", "paired", "calibrated",
                  "no effect of the paper's size", "undecided", "open", "BH", "ρ", "rho", "error scale", "ceiling",
                  "+pos", "+neg", "+both", "+both_dim", "Mean(pos)", "Mean(neg)", "Var(neg)", "below random init",
                  "late start", "Supp A", "Supp F", "Supp G", "S-F", "D-capacity-v1", "table name", "smoke", "cpu", "gpu",
                  "profile"]


def glossary_terms() -> set[str]:
    """The terms of ``book/glossary.md``'s glossary directives: the unindented lines of their bodies."""
    text = (ROOT / "book" / "glossary.md").read_text()
    terms = set()
    for body in re.findall(r"```\{glossary\}\n(.*?)```", text, flags=re.S):
        terms |= {line.strip() for line in body.splitlines() if line.strip() and not line.startswith((" ", "\t"))}
    return terms


def test_the_glossary_holds_every_term_a_reader_meets():
    terms = glossary_terms()
    assert not [t for t in GLOSSARY_TERMS if t not in terms]
    assert "file: book/glossary" in (ROOT / "_toc.yml").read_text()


def test_every_term_link_names_a_glossary_term():
    """``{term}`x``` (or ``{term}`text <x>```) anywhere in the book's sources names a term of the glossary; the build
    (``--warningiserror``) fails on the same, this finds it without building."""
    terms = {t.lower() for t in glossary_terms()}
    sources = [*(ROOT / "book").glob("*.md"), *(ROOT / "book" / "src").glob("*.py")]
    used = {(p.name, m.group(2) or m.group(1)) for p in sources
            for m in re.finditer(r"\{term\}`([^`<]*?)\s*(?:<([^>]+)>)?`", p.read_text())}
    assert used, "no {term} link at all"
    assert not [(name, t) for name, t in used if t.strip().lower() not in terms]


def test_nothing_points_outside_the_repository():
    """No file of the package, book, configs, experiments, tools or README names a file outside the repository (the
    project's working notes): a reader of the repository cannot open them; the paper's own references stand instead."""
    outside = re.compile(r"\.\./shared|shared/notes|shared/paper|NOTES\.md|\(NOTES|/work/")
    files = [ROOT / "README.md", ROOT / "Makefile", ROOT / "_config.yml",
             *[p for d in ("ftcl_core", "book", "configs", "experiments", "tools", "benchmarks", "tests")
               for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".md", ".yaml", ".yml", ".sh", ".tsv", ".css")]]
    found = [f"{p.relative_to(ROOT)}:{i}" for p in files if p.is_file() and p.name != "test_book.py"
             for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if outside.search(line)]
    assert not found, found


def test_launch_buttons_need_a_real_repository(monkeypatch):
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from repository_guard import guard

    placeholder = {"repository_url": "https://github.com/ftcl/ftcl", "use_repository_button": True,
                   "launch_buttons": {"colab_url": "https://colab.research.google.com"}}
    said = guard(placeholder, {})
    assert said and "placeholder" in said and placeholder["launch_buttons"] == {}
    assert not placeholder["use_repository_button"]
    named = {**placeholder, "use_repository_button": True, "launch_buttons": {"colab_url": "x"}}
    assert guard(named, {"FTCL_REPOSITORY_URL": "https://github.com/someone/ftcl/"}) is None
    assert named["repository_url"] == "https://github.com/someone/ftcl" and named["launch_buttons"] == {"colab_url": "x"}


def test_the_built_book_shares_one_plotly_js_and_leaves_every_other_script(tmp_path):
    """book/_ext/shared_plotly.py: each page's inline copy of plotly.js becomes a src to one shared file, written
    relative to the page; a page's own scripts, and a look-alike that is not the bundled plotly.js, stay."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from shared_plotly import share_plotly

    js = "/** plotly.js v9 */ window.Plotly = {};"
    (tmp_path / "book").mkdir()
    (tmp_path / "index.html").write_text(f"<p>a</p><script>{js}</script><script>Plotly.newPlot('x')</script>")
    (tmp_path / "book" / "ch.html").write_text(f"<script>{js}</script>")
    (tmp_path / "book" / "other.html").write_text("<script>/** plotly.js v8 */</script>")
    assert share_plotly(tmp_path, js) == [tmp_path / "book" / "ch.html", tmp_path / "index.html"]
    assert (tmp_path / "_static" / "plotly.min.js").read_text() == js
    assert (tmp_path / "book" / "ch.html").read_text() == '<script charset="utf-8" src="../_static/plotly.min.js"></script>'
    assert (tmp_path / "index.html").read_text().endswith("<script>Plotly.newPlot('x')</script>")
    assert 'src="_static/plotly.min.js"' in (tmp_path / "index.html").read_text()
    assert (tmp_path / "book" / "other.html").read_text() == "<script>/** plotly.js v8 */</script>"
    empty = tmp_path / "none"
    empty.mkdir()
    assert share_plotly(empty, js) == [] and not (empty / "_static").exists()


def test_every_chapter_shows_the_smoke_notice_only_under_the_smoke_profile():
    import nbformat

    from ftcl_core.pages.markup import SMOKE_NOTICE, smoke_notice

    assert smoke_notice("cpu") is None and smoke_notice("gpu") is None
    assert SMOKE_NOTICE in smoke_notice("smoke").data
    for name in CHAPTERS:
        cells = nbformat.read(ROOT / "book" / f"{name}.ipynb", as_version=4).cells
        at = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
        assert "smoke_notice(profile)" in cells[at + 1].source, name


def test_the_authors_released_code_is_linked_where_a_reader_starts():
    url = "https://github.com/DTennant/CL-Visualizing-Feature-Transformation"  # the URL the paper's abstract gives
    assert url in (ROOT / "README.md").read_text() and url in (ROOT / "book" / "index.md").read_text()


# ---- "Try it": the Reproduce chapters end with changes a reader can make (issue 52, item 1) -----------------------

TRY_IT_CHAPTERS = ["01_introduction", "05_momentum", "06_feature_transformations", "11_headroom"]


def source_cells(name: str) -> list[tuple[str, str]]:
    """A chapter source's cells as (header line, body), in order (jupytext percent format)."""
    text = (ROOT / "book" / "src" / f"{name}.py").read_text()
    parts = re.split(r"^(# %%.*)$", text, flags=re.M)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]


def parameter_names(name: str) -> set[str]:
    """The names the chapter's papermill parameters cell assigns."""
    import ast

    cell = next(body for head, body in source_cells(name) if 'tags=["parameters"]' in head)
    return {t.id for node in ast.parse(cell).body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def try_it_bullets(markdown: str) -> list[str]:
    """The bullets of a Markdown cell's list, each joined onto one line."""
    bullets: list[str] = []
    for line in markdown.splitlines():
        if line.startswith("* "):
            bullets.append(line[2:])
        elif line.startswith("  ") and bullets:
            bullets[-1] += " " + line.strip()
    return bullets


@pytest.mark.parametrize("name", TRY_IT_CHAPTERS)
def test_every_chapter_ends_with_a_try_it_section(name):
    """The last Markdown cell is a labelled ``## Try it`` with 2-3 bullets; each names a papermill parameter of the
    chapter's parameters cell, a config key ``load_config`` accepts, or a widget (slider); a ``-p NAME`` or
    ``-y "NAME: ..."`` that the parameters cell does not assign fails, so does a config key the configs reject."""
    from ftcl_core.config import load_config

    cells = source_cells(name)
    md = [re.sub(r"^# ?", "", body, flags=re.M) for head, body in cells if head.startswith("# %% [markdown]")]
    assert "In this chapter you will learn" in md[0], f"{name}: no opening 'In this chapter you will learn ...'"
    last = md[-1].strip().splitlines()
    assert last[:2] == [f"(try-it-{name[:2]})=", "## Try it"], f"{name}: its last Markdown cell is not a labelled Try it"
    bullets = try_it_bullets(md[-1])
    assert 2 <= len(bullets) <= 3, f"{name}: {len(bullets)} bullets"
    params = parameter_names(name)
    for bullet in bullets:
        named = re.findall(r"-p\s+(\w+)", bullet) + re.findall(r"-y\s+\"(\w+):", bullet)
        assert set(named) <= params, f"{name}: -p/-y names {sorted(set(named) - params)}, not in {sorted(params)}"
        for notebook in re.findall(r"papermill\s+book/(\w+)\.ipynb", bullet):
            assert notebook == name, f"{name}: a Try it bullet runs {notebook}"
        commands = [cmd.split() for cmd in re.findall(r"ftcl_core train\s+\S+((?:\s+[\w.]+=[^\s`]+)+)", bullet)]
        keys = [kv for cmd in commands for kv in cmd]
        for cmd in commands:  # a command's keys together, as the reader types them: a key another one needs is there
            load_config(ROOT / "configs" / "cpu_cal_moco_v1.yaml", cmd)  # raises ConfigError on an unknown key
        widget = re.search(r"\b(slider|widget)\b", bullet)
        assert named or keys or widget, f"{name}: a bullet names no parameter, config key or widget: {bullet[:80]}"


# ---- shown code: each chapter displays the code it is about, in lines the column holds (issue 52, item 1) ---------

# Characters of code a line of the book's 784-px column holds at the code's 14 px (8.43 px a character, 16 px of
# padding a side, measured in Chromium at the review's 1400-px window): a longer line wraps and breaks its indent.
SHOWN_WIDTH = 88
# What a reader was promised to see, chapter by chapter (module or function, by its qualified name).
SHOWN = {"learn3_reading": {"ftcl_core.stats.score_statistics"},
         "learn6_your_moco": {"ftcl_core.methods.moco.moco_ft_step"},
         "05_momentum": {"ftcl_core.models.ema_update"},
         "06_feature_transformations": {"ftcl_core.transforms.extrapolate_positive",
                                        "ftcl_core.transforms.interpolate_negatives"},
         "10_methods": {"ftcl_core.methods.simclr.SimCLR", "ftcl_core.methods.byol.BYOL",
                        "ftcl_core.methods.simsiam.SimSiam", "ftcl_core.methods.swav.SwAV",
                        "ftcl_core.methods.base.predictive_scores", "ftcl_core.batch_losses.simclr_ft_logits"}}


def shown_objects(name: str) -> list:
    """What the chapter passes to ``source_code``, resolved with the chapter's own imports from ``ftcl_core``."""
    import ast

    tree = ast.parse((ROOT / "book" / "src" / f"{name}.py").read_text())
    namespace: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ftcl_core") or (
                isinstance(node, ast.Import) and all(a.name.startswith("ftcl_core") for a in node.names)):
            exec(compile(ast.Module([node], []), name, "exec"), namespace)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "attr", getattr(n.func, "id", None)) == "source_code"]
    return [eval(compile(ast.Expression(arg), name, "eval"), namespace) for call in calls for arg in call.args]


def qualified(obj) -> str:
    return obj.__name__ if inspect.ismodule(obj) else f"{obj.__module__}.{obj.__qualname__}"


def test_each_chapter_shows_the_code_it_is_about():
    for name, expected in SHOWN.items():
        shown = {qualified(o) for o in shown_objects(name)}
        assert expected <= shown, f"{name} does not show {sorted(expected - shown)}"


def test_the_shown_moco_step_is_short_and_holds_no_plumbing():
    """The step the last Learn chapter shows reads in about twenty lines: the paper's path, no ranks, shards or step
    context."""
    (step,) = shown_objects("learn6_your_moco")
    source = inspect.getsource(step)
    body = inspect.getsource(step).split('"""')[-1].strip().splitlines()
    assert len(body) <= 22, len(body)
    assert not [w for w in ("gather_rows", "shard_rows", "StepContext", "world_size", "ctx.") if w in source]
    for call in ("extrapolate_positive", "interpolate_negatives", "info_nce", "ema_update", "enqueue", "no_grad"):
        assert call in source, call


@pytest.mark.parametrize("name", CHAPTERS)
def test_shown_code_fits_the_column(name):
    """No displayed line is wider than the column (it would wrap mid-indent): SHOWN_WIDTH characters at most."""
    long = [f"{qualified(o)}: {line.rstrip()[:60]}... ({len(line.rstrip())})" for o in shown_objects(name)
            for line in inspect.getsource(o).splitlines() if len(line.rstrip()) > SHOWN_WIDTH]
    assert not long, long


def _readable_code(chapter: str) -> list[tuple[str, str]]:
    """``(tags, line)`` of each code line a reader of ``chapter`` (its ``book/src`` source) sees, shown or folded
    for the reader to open: every code cell but those removed from the page (``remove-cell``, ``remove-input``)."""
    cells = re.split(r"^(?=# %%)", (ROOT / "book" / "src" / f"{chapter}.py").read_text(), flags=re.M)
    return [(head, line) for head, _, body in (c.partition("\n") for c in cells)
            if head.startswith("# %%") and "[markdown]" not in head
            and not any(t in head for t in ('"remove-cell"', '"remove-input"')) for line in body.splitlines()]


@pytest.mark.parametrize("name", [c for c in CHAPTERS if c.startswith("learn")])
def test_the_code_a_learner_reads_fits_the_column(name):
    """A Learn chapter's shown and folded code wraps nowhere (a comment wrapped at column 0 reads as broken code):
    SHOWN_WIDTH characters a line at most, as the library's shown sources."""
    long = [f"{line[:60]}... ({len(line)})" for _, line in _readable_code(name) if len(line.rstrip()) > SHOWN_WIDTH]
    assert _readable_code(name) and not long, long


def test_source_code_names_the_lines_it_shows_and_folds_on_request():
    from ftcl_core import models
    from ftcl_core.methods import simsiam
    from ftcl_core.pages.markup import source_code

    lines, first = inspect.getsourcelines(models.ema_update)
    shown = source_code(models.ema_update).data
    span = f"ftcl_core/models.py, lines {first}-{first + len(lines) - 1}"
    assert f'title="{span}">from ftcl_core.models import ema_update<' in shown
    assert "<details>" not in shown and "_foreach_mul_" in shown
    folded = source_code(simsiam, collapsed="SimSiam").data  # a whole module: from its line 1
    n = len(inspect.getsource(simsiam).splitlines())
    assert folded.startswith("<details><summary>SimSiam</summary>")
    assert f'lines 1-{n}">import ftcl_core.methods.simsiam<' in folded


# ---- the glossary at first use: each chapter links a term the first time its prose uses it (issue 52, item 2) ------

# The glossary terms a reader meets in prose, each with the pattern of its uses (case-sensitive unless marked): the
# everyday words of the glossary (open, profile, ceiling, verdict, cpu, ...) are left out, since their ordinary
# sense also occurs; a link to a narrower term counts for the broader one it defines by ("linear readout": readout).
TERM_USES = {
    "readout": r"(?i:readout)s?", "linear readout": r"(?i:linear readout)s?", "kNN readout": r"kNN readouts?",
    "random-init baseline": r"(?i:random-init baseline)", "calibrated": r"(?i:calibrated)", "paired": r"(?i:paired)",
    "no effect of the paper's size": r"(?i:no effect of the paper's size)", "undecided": r"(?i:undecided)",
    "BH": r"BH|Benjamini-Hochberg", "ρ": r"ρ", "error scale": r"(?i:error scale)", "FT": r"FT",
    "+pos": r"\+pos", "+neg": r"\+neg", "+both": r"\+both", "+both_dim": r"\+both_dim",
    "Mean(pos)": r"Mean\(pos\)", "Mean(neg)": r"Mean\(neg\)", "Var(neg)": r"Var\(neg\)",
    "below random init": r"(?i:below random init)", "late start": r"(?i:late start)",
    "contrastive top-1": r"(?i:contrastive top-1)", "collapse level": r"(?i:collapse level)",
    "Supp A": r"Supp A", "Supp E": r"Supp E", "Supp F": r"Supp F", "Supp G": r"Supp G", "S-E": r"S-E", "S-F": r"S-F",
    "S-G": r"S-G", "D-capacity-v1": r"D-capacity-v1", "H-map-v1": r"H-map-v1",
}
LINK_COUNTS_FOR = {"linear readout": {"readout"}, "knn readout": {"readout"}, "supp e": {"s-e"}, "s-e": {"supp e"},
                   "supp f": {"s-f"}, "s-f": {"supp f"}, "supp g": {"s-g"}, "s-g": {"supp g"}, "rho": {"ρ"},
                   "benjamini-hochberg": {"bh"}}
TERM_LINK = re.compile(r"\{term\}`([^`<]*?)\s*(?:<([^>]+)>)?`")


def prose_with_links(markdown: str) -> str:
    """A page's Markdown with each ``{term}`` link replaced by a marker naming its target (``\\x00target\\x00``), and
    what cannot carry a link removed: headings, code, math, other roles, labels, comments and link targets."""
    t = TERM_LINK.sub(lambda m: f"\x00{(m.group(2) or m.group(1)).strip().lower()}\x00", markdown)
    t = re.sub(r"<!--.*?-->", " ", t, flags=re.S)
    t = re.sub(r"```.*?```", " ", t, flags=re.S)
    t = re.sub(r"^#+ .*$|^\([\w-]+\)=[ \t]*$", " ", t, flags=re.M)
    t = re.sub(r"\$\$.*?\$\$|\$[^$\n]*\$", " ", t, flags=re.S)
    t = re.sub(r"\{[\w:]+\}`[^`]*`|`[^`]*`", " ", t)
    return re.sub(r"\]\([^)]*\)", "]", t)


def unlinked_first_uses(markdown: str) -> list[str]:
    """The terms of :data:`TERM_USES` whose first use in ``markdown`` comes before any link to them."""
    t = prose_with_links(markdown)
    links: dict[str, int] = {}
    for m in re.finditer(r"\x00([^\x00]+)\x00", t):
        for target in {m.group(1), *LINK_COUNTS_FOR.get(m.group(1), ())}:
            links.setdefault(target, m.start())
    late = []
    for term, pattern in TERM_USES.items():
        use = re.search(rf"(?<![\w+-])(?:{pattern})(?![\w(-]|\+)", t)
        if use and use.start() < links.get(term.lower(), len(t) + 1):
            late.append(f"{term} ({t[max(0, use.start() - 40):use.end() + 20]!r})")
    return late


def page_markdown(name: str) -> str:
    """A page's Markdown: a chapter's Markdown cells in order, or a Markdown page's text."""
    if name.endswith(".md"):
        return (ROOT / "book" / name).read_text()
    return "\n".join(re.sub(r"^# ?", "", body, flags=re.M) for head, body in source_cells(name)
                     if head.startswith("# %% [markdown]"))


@pytest.mark.parametrize("name", [*CHAPTERS, "index.md"])
def test_every_glossary_term_is_linked_at_its_first_use(name):
    late = unlinked_first_uses(page_markdown(name))
    assert not late, f"{name}: first used before any {{term}} link: {late}"


def test_the_first_use_check_reads_links_and_skips_code():
    assert unlinked_first_uses("A {term}`readout` first, then readouts.") == []
    assert unlinked_first_uses("The {term}`linear readout <linear readout>`, then a readout.") == []
    assert [u.split()[0] for u in unlinked_first_uses("Its readout, then the {term}`readout`.")] == ["readout"]
    assert unlinked_first_uses("Code `FT` and math $\\rho$ and {glue:md}`undecided_x` are no uses.") == []
    assert [u.split()[0] for u in unlinked_first_uses("v1 +both_dim, not +both.")] == ["+both", "+both_dim"]
    assert unlinked_first_uses("## A heading with FT\n\nThen {term}`FT`.") == []
    assert set(TERM_USES) <= glossary_terms()


def _names_defined_and_read(source: str) -> tuple[set[str], set[str]]:
    """The names a cell binds (assignments, imports, defs, arguments) and the names it reads."""
    import ast

    defined, read = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            (defined if isinstance(node.ctx, (ast.Store, ast.Del)) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    return defined, read


def hidden_names_in_sight(cells: list[dict]) -> set[str]:
    """Names that code a reader can open (shown or folded) reads, but that only a cell the page removes defines:
    in the rendered page such code would run on names from nowhere."""
    import builtins

    seen, removed, late = set(dir(builtins)), set(), set()
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        tags = cell["metadata"].get("tags", [])
        source = "".join(cell["source"])
        defined, read = _names_defined_and_read(source)
        if "remove-cell" in tags or "remove-input" in tags:
            removed |= defined
            continue
        seen |= {name for name in removed if re.search(rf"^#\s+{name} = ", source, re.M)}  # a parameter the fold shows
        late |= (read - defined - seen) & removed
        seen |= defined
    return late


@pytest.mark.parametrize("name", CHAPTERS)
def test_code_a_reader_can_open_reads_only_names_a_reader_can_see(name):
    import json

    cells = json.loads((ROOT / "book" / f"{name}.ipynb").read_text())["cells"]
    assert not hidden_names_in_sight(cells), f"{name}: shown code reads names only removed cells define"


def test_the_hidden_names_check_finds_a_removed_definition():
    def cell(source, *tags):
        return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": source}

    assert hidden_names_in_sight([cell("facts = 1", "remove-cell"), cell("print(facts)", "hide-input")]) == {"facts"}
    assert not hidden_names_in_sight([cell("facts = 1", "hide-input"), cell("print(facts)")])
    assert not hidden_names_in_sight([cell("facts = 1", "remove-cell"), cell("print(facts)", "remove-cell")])
    named = "# the page's parameters:\n#   profile = 'cpu'\nimport os"  # a removed parameter the set-up fold shows
    assert not hidden_names_in_sight([cell("profile = 'cpu'", "parameters", "remove-cell"), cell(named, "hide-input"),
                                      cell("print(profile)", "hide-input")])
