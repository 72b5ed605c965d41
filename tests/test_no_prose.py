"""No English built in code (issues 51 and 67): no function of ``ftcl_core``, ``benchmarks`` or ``tools`` returns prose.

The code returns facts (named numbers and verdict words); chapters carry the words as authored Markdown and bind
them to named checks (:mod:`ftcl_core.study.checks`), and the GPU check's report is a Markdown template written by
people (``benchmarks/gpucheck/report.md``). This test reads every module's syntax tree and fails on a function that

* is named like a prose generator (``*_sentence``, ``*_paragraph``, ``*_answer``, ``*_text``, ``*_caption``), or
* returns a string built from literals holding more than :data:`MAX_WORDS` English words in all: the literal
  parts of the returned expression, of f-strings, ``+`` concatenations, ``str.join`` / ``format`` and conditional
  expressions in it, and of every local name it returns (what was assigned, added or appended to that name).

Not prose, so not counted: docstrings; a config override (``key=value``, no space); in a list or tuple of two or
more, a literal cell of at most :data:`LABEL_WORDS` words (a table's heading or a row's name); literals passed to
any other call (a table's fixed caption handed to ``html_table``, a figure's label handed to matplotlib); anything
inside ``raise`` or ``assert``; the names of checks (keys of a ``...CHECKS`` mapping), which a page's reading
cites as the claims its words make; the CLI (``__main__.py``: help and the lines it prints); message helpers, functions
whose every call sits inside a ``raise``, an ``assert``, a ``print``, a warning or a log call (an error message built
in one place); and check functions, the values of a ``...CHECKS`` mapping (why a check fails).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ftcl_core"
FOLDERS = ("ftcl_core", "benchmarks", "tools")  # every folder of Python the project ships
MAX_WORDS = 8
LABEL_WORDS = 5  # a literal of at most this many words among two or more in a list is a table's cell: a label
OVERRIDE = re.compile(r"[\w.]+=\S*")  # a config override, key=value with no space: not English
PROSE_NAMES = ("_sentence", "_paragraph", "_answer", "_text", "_caption")
WORD = re.compile(r"[A-Za-z][a-z]+(?:'[a-z]+)?")  # a word of two letters or more: "FT", "%" and numbers do not count
MESSAGE_CALLS = {"print", "warn", "debug", "info", "warning", "error", "exception", "critical", "log"}
STR_METHODS = {"format", "strip", "rstrip", "lstrip", "removeprefix", "removesuffix", "replace", "capitalize",
               "lower", "upper", "title"}
CLI = {"__main__.py"}

# Not prose, though they return words: each with the reason.
ALLOWED = {"_rerun": "error message: the command a damaged run's recovery names (runs.py)",
           "_parse_yaml": "error message: what is wrong with a damaged run file (runs.py)",
           "plan_threads": "log line: the thread count a training run prints (study/threads.py)",
           "recipe_note": "CLI output: the comment `switch_to_calibrated` writes into an experiment file",
           "_draw_noting_text": "returns the text a figure draws, for the legibility checks (legibility.py)"}


def _local_sources(fn: ast.FunctionDef) -> dict[str, list[ast.AST]]:
    """Per local name, every expression assigned, added or appended to it in ``fn``."""
    out: dict[str, list[ast.AST]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                for name in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(name, ast.Name):
                        out.setdefault(name.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name) and node.value:
            out.setdefault(node.target.id, []).append(node.value)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("append", "extend", "insert") and isinstance(node.func.value, ast.Name)):
            out.setdefault(node.func.value.id, []).extend(node.args[-1:])
    return out


def _words(node: ast.AST | None, sources: dict[str, list[ast.AST]], seen: set[str]) -> int:
    """English words in the literals ``node`` returns (see the module's docstring)."""
    if node is None:
        return 0
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, str) or OVERRIDE.fullmatch(node.value):
            return 0  # a number, or a config override ("model.encoder=resnet18"): no words
        return len(WORD.findall(node.value))
    if isinstance(node, ast.JoinedStr):
        return sum(_words(v, sources, seen) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _words(node.value, sources, seen)
    if isinstance(node, ast.BinOp):
        return _words(node.left, sources, seen) + _words(node.right, sources, seen)
    if isinstance(node, (ast.IfExp, ast.BoolOp)):
        parts = [node.body, node.orelse] if isinstance(node, ast.IfExp) else node.values
        return max(_words(p, sources, seen) for p in parts)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        cells = [_words(e, sources, seen) for e in node.elts]
        if len(cells) > 1:  # a row of a table: a cell of a few words is a label (a heading, a row's name)
            cells = [0 if isinstance(e, (ast.Constant, ast.JoinedStr)) and n <= LABEL_WORDS else n
                     for e, n in zip(node.elts, cells)]
        return sum(cells)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
        return _words(node.elt, sources, seen)
    if isinstance(node, ast.Starred):
        return _words(node.value, sources, seen)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "join":
            return _words(node.func.value, sources, seen) + sum(_words(a, sources, seen) for a in node.args)
        if node.func.attr in STR_METHODS:
            return _words(node.func.value, sources, seen)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("filter", "str"):
        return sum(_words(a, sources, seen) for a in node.args)
    if isinstance(node, ast.Name) and node.id in sources and node.id not in seen:
        return sum(_words(v, sources, seen | {node.id}) for v in sources[node.id])
    return 0  # any other call, a subscript, an attribute: not a literal this function writes


def _message_helpers(trees: dict[Path, ast.Module]) -> set[str]:
    """Functions every call of which, across the package, sits inside a raise, an assert or a message call."""
    calls: dict[str, list[bool]] = {}

    def visit(node: ast.AST, quiet: bool) -> None:
        if isinstance(node, (ast.Raise, ast.Assert)):
            quiet = True
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            calls.setdefault(name, []).append(quiet)
            quiet = quiet or name in MESSAGE_CALLS
        for child in ast.iter_child_nodes(node):
            visit(child, quiet)

    for tree in trees.values():
        visit(tree, False)
    return {name for name, quiet in calls.items() if quiet and all(quiet)}


def _check_functions(trees: dict[Path, ast.Module]) -> set[str]:
    """Functions named as the values of a ``...CHECKS`` mapping: each returns why its check fails (a message to
    whoever broke the binding), never the book's words."""
    names = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                    and any(isinstance(t, ast.Name) and t.id.endswith("CHECKS") for t in node.targets)):
                names |= {v.id for v in node.value.values if isinstance(v, ast.Name)}
    return names


def prose_functions(root: Path = PACKAGE) -> list[tuple[str, str, int, str]]:
    """``(file, function, line, why)`` for every function under ``root`` that returns prose."""
    trees = {p: ast.parse(p.read_text()) for p in sorted(root.rglob("*.py"))}
    helpers = _message_helpers(trees) | _check_functions(trees)
    found = []
    for path, tree in trees.items():
        if path.name in CLI:
            continue
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name in helpers:
                continue
            returns = ast.unparse(fn.returns) if fn.returns else "str"
            if fn.name.endswith(PROSE_NAMES) and returns in ("str", "str | None", "Optional[str]"):
                found.append((path.name, fn.name, fn.lineno, "named like a prose generator"))
                continue
            sources = _local_sources(fn)
            inner = {id(n) for sub in ast.walk(fn) if isinstance(sub, (ast.Raise, ast.Assert)) for n in ast.walk(sub)}
            words = max((_words(r.value, sources, set()) for r in ast.walk(fn)
                         if isinstance(r, ast.Return) and id(r) not in inner), default=0)
            if words > MAX_WORDS:
                found.append((path.name, fn.name, fn.lineno, f"returns {words} words of literal text"))
    return found


def _shown(folder: str, rows) -> str:
    return "\n".join(f"{folder}/.../{f}:{line} {name}: {why}" for f, name, line, why in rows)


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_function_returns_prose(folder):
    rows = [r for r in prose_functions(ROOT / folder) if r[1] not in set(ALLOWED)]
    assert not rows, ("functions that return English prose; return facts and author the words in the chapter "
                      "(ftcl_core/study/checks.py) or a Markdown template (benchmarks/gpucheck/report.md):\n"
                      + _shown(folder, rows))


# Calls whose literal arguments are not a page's words, each with the reason
FIGURE_TEXT = {"set_title", "set_xlabel", "set_ylabel", "suptitle", "text", "annotate", "legend", "make_subplots",
               "add_annotation", "update_layout", "update_xaxes", "update_yaxes"}  # text inside a picture
FIGURE_KEYWORDS = {"title", "label", "xlabel", "ylabel", "subplot_titles", "column", "footnote"}  # words a figure draws
CLI_TEXT = {"add_argument", "add_parser", "ArgumentParser", "add_subparsers", "ArgumentTypeError"}  # --help
ALLOWED_CALLS = {"_load_json": "the recovery a damaged run file's error message names (runs.py)",
                 "_say_once": "a log line on stderr: where the data was read from (study/fashion_mnist.py)"}
EXCEPTION = re.compile(r"[A-Z]\w*(Error|Exception|Interrupted|Diverged|Warning)")  # a message, raised where it is made


def check_names(trees: dict) -> set[str]:
    """The names of every check (the string keys of each ``...CHECKS`` mapping written as a literal): identifiers a
    page's reading cites to bind its words (:mod:`ftcl_core.study.chapters`), not words a reader is shown."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(target, ast.Name) and target.id.endswith("CHECKS") and isinstance(node.value, ast.Dict):
                names |= {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return names


def _names_only(arg: ast.AST, names: set[str]) -> bool:
    """A tuple or list of check names (a block's claims), or one check name."""
    items = arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg]
    return all(isinstance(i, ast.Constant) and i.value in names for i in items) and bool(items)


def prose_arguments(root: Path = PACKAGE) -> list[tuple[str, int, str, int]]:
    """``(file, line, call, words)`` for every literal argument of more than :data:`MAX_WORDS` words that a call under
    ``root`` receives outside a raise, an assert, a message, the command line's help, a picture's own text and the
    calls of :data:`ALLOWED_CALLS` (a table's caption, an HTML note: the page's words, which its chapter writes)."""
    trees = {p: ast.parse(p.read_text()) for p in sorted(root.rglob("*.py"))}
    names = check_names({p: ast.parse(p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))})
    helpers = _message_helpers(trees)
    quiet_names = MESSAGE_CALLS | FIGURE_TEXT | CLI_TEXT | set(ALLOWED_CALLS) | helpers
    found = []
    for path, tree in trees.items():
        if path.name in CLI:
            continue
        quiet: set[int] = set()
        for node in ast.walk(tree):
            name = ""
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if isinstance(node, (ast.Raise, ast.Assert)) or name in quiet_names or EXCEPTION.fullmatch(name or "-"):
                quiet |= {id(n) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or id(node) in quiet:
                continue
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ast.unparse(f)
            args = [*node.args, *(k.value for k in node.keywords if k.arg not in FIGURE_KEYWORDS)]
            for arg in args:
                if isinstance(arg, (ast.Constant, ast.JoinedStr, ast.BinOp, ast.List, ast.Tuple)):
                    if _names_only(arg, names):  # the claims a page's words make: checks' names
                        continue
                    words = _words(arg, {}, set())
                    if words > MAX_WORDS:
                        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                        found.append((str(where), node.lineno, name, words))
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_call_is_handed_prose(folder):
    """A table's caption, a notice, a note: the chapter writes it (and passes it in), or a template written by
    people holds it (``ftcl_core/pages/smoke_notice.html``), never a literal in the code."""
    rows = prose_arguments(ROOT / folder)
    assert not rows, "literal prose handed to a call:\n" + "\n".join(f"{f}:{line} {name}(...): {w} words"
                                                                    for f, line, name, w in rows)


def test_the_scan_finds_a_generated_sentence(tmp_path):
    """The heuristic flags a function that builds a sentence in any of the ways the old generators did, and passes
    facts, error messages, fixed captions handed to another call, and short labels."""
    (tmp_path / "m.py").write_text('''
def verdict_word(row):
    return "narrows" if row["gain"] > 0 else "widens"

def gain_facts(row):
    return {"gain": f"{row['gain']:+.1f}", "verdict": verdict_word(row)}

def reading(row):
    text = f"On the shapes FT costs {row['diff']:.1f} points"
    if row["diff"] < 0:
        text += ", so the longer run narrows its cost"
    return text + "."

def listed(rows):
    parts = []
    for r in rows:
        parts.append(f"{r['name']} reads {r['diff']:.1f} points against its own baseline, paired by seed")
    return "; ".join(parts)

def labelled(word, scale):
    return f"{word} on the error scale" if scale else word

def table(rows):
    return html_table(rows, caption="Linear top-1 (%), mean over seeds; the paired difference against the baseline")

def _message(path):
    return f"the experiment file {path} has no settings; add one under settings: and run it again"

def load(path):
    raise ValueError(_message(path))

def summary_caption(exp):
    return exp.title
''')
    assert {name for _, name, _, _ in prose_functions(tmp_path)} == {"reading", "listed", "summary_caption"}


def test_the_argument_scan_finds_a_caption_in_code(tmp_path):
    """A table's caption or a notice handed to a call is found; a figure's own text, an error message, the command
    line's help and a config override are not."""
    (tmp_path / "m.py").write_text('''
def table(rows):
    return html_table(rows, caption="Linear top-1 (%), mean over seeds; the paired difference against the baseline")

def notice():
    return HTML("<p>This page ran with the smoke profile, a few steps on a few images, so its numbers mean nothing</p>")

def figure(ax, n):
    ax.set_title(f"each run predicted by a model that never saw its experiment, {n} runs in all")

def refuse(path):
    raise ValueError(f"the experiment file {path} has no settings; add one under settings: and run it again")

def cli(parser):
    parser.add_argument("--seeds", help="the seeds to run, each a whole number; every word after the option is one")

def scaled(run):
    return run(["model.encoder=resnet18", "data.image_size=72", "augment.out_size=64", "data.n_train=10000"])
''')
    assert sorted(name for _, _, name, _ in prose_arguments(tmp_path)) == ["HTML", "html_table"]
