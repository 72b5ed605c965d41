"""The book's findings: every check holds on the stored runs and fails when a verdict it rests on flips; the authored
Markdown names only known checks and facts; the README's copy is what tools/readme_findings.py writes.

No assert here reads the findings' words: they may be rewritten freely while the checks they name hold."""

from __future__ import annotations

import dataclasses
import importlib.util
import re

import pytest
import yaml

from ftcl_core.study import evidence, experiment_file, findings, table_verdicts
from ftcl_core.study.results import verdicts
from ftcl_core.study.results.numbers import plus_minus

pytestmark = pytest.mark.skipif(not (experiment_file.STORED / "T7").is_dir(), reason="no stored cpu runs")

BOOK = experiment_file.ROOT / "book"
FINDINGS_MD = BOOK / "findings.md"
CHECKS_COMMENT = re.compile(r"<!-- checks: ([^>]*?) -->")
GLUE = re.compile(r"\{glue:text\}`(?:([\w.]+)::)?(\w+)(?::s)?`")


@pytest.fixture(scope="module")
def ev() -> evidence.Evidence:
    return evidence.Evidence.load("cpu")


def answer_markdown() -> str:
    """Chapter 7's answer section as authored: its Markdown cells (book/src, jupytext percent format) from the
    ``(answer)=`` label on, comment marks stripped."""
    src = (BOOK / "src" / "07a_when_ft_helps.py").read_text()
    cells = re.split(r"^# %%", src[src.index("# (answer)="):], flags=re.M)
    markdown = [cells[0]] + [c.split("\n", 1)[1] for c in cells[1:] if c.startswith(" [markdown]")]
    return "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for text in markdown
                     for line in text.splitlines())


def tool():
    spec = importlib.util.spec_from_file_location("readme_findings", experiment_file.ROOT / "tools" / "readme_findings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- the checks ---------------------------------------------------------------------------------------------------

def test_every_check_holds_on_the_stored_runs(ev):
    findings.expect(ev)  # raises FindingsDisagree naming the check otherwise
    assert all(check(ev) is None for check in findings.CHECKS.values())
    with pytest.raises(KeyError, match="no check named"):
        findings.expect(ev, "nonsense")


def _summary(ev: evidence.Evidence, pick, **change) -> evidence.Evidence:
    """``ev`` with the summary rows ``pick`` selects changed."""
    return dataclasses.replace(ev, summary=tuple({**r, **change} if pick(r) else r for r in ev.summary))


def _row(table: str, setting: str, reference: str):
    return lambda r: r["table"] == table and r["setting"] == setting and r["reference"] == reference


def _comparison(ev: evidence.Evidence, table: str, setting: str, reference: str):
    """Every summary row of the comparison ``setting`` against ``reference`` in ``table`` is (tables share runs: T7's
    v1 +both is T6's start 0, counted once, under whichever table comes first)."""
    key = table_verdicts.comparison_key(next(r for r in ev.summary if _row(table, setting, reference)(r)))
    return lambda r: table_verdicts.comparison_key(r) == key


def _cell(ev: evidence.Evidence, label: str, f: float, knn: bool = False, **change) -> evidence.Evidence:
    grid = ev.phase_knn if knn else ev.phase
    new = {**grid, label: {**grid[label], f: {**grid[label][f], **change}}}
    return dataclasses.replace(ev, **{"phase_knn" if knn else "phase": new})


def _first(ev: evidence.Evidence, key: str, knn: bool = False, **change) -> evidence.Evidence:
    rows = ev.first_step_knn if knn else ev.first_step
    return dataclasses.replace(ev, **{"first_step_knn" if knn else "first_step": {**rows, key: {**rows[key], **change}}})


def _length(ev: evidence.Evidence, epochs: int, **change) -> evidence.Evidence:
    return dataclasses.replace(ev, length=tuple({**r, **change} if r["kind"] == "length" and r["epochs"] == epochs
                                                else r for r in ev.length))


def _switch(ev: evidence.Evidence, pick, **change) -> evidence.Evidence:
    return dataclasses.replace(ev, switch={lb: {f: {**st, **change} if pick(lb, f) else st for f, st in rows.items()}
                                           for lb, rows in ev.switch.items()})


def _headroom(ev: evidence.Evidence, setting: str, **change) -> evidence.Evidence:
    return dataclasses.replace(ev, headroom=tuple({**r, **change} if r["setting"] == setting else r
                                                  for r in ev.headroom))


def _capacity(ev: evidence.Evidence, name: str, **change) -> evidence.Evidence:
    return dataclasses.replace(ev, capacity=tuple({**r, **change} if r["comparison"] == name else r
                                                  for r in ev.capacity))


LONGEST = 240  # the longest decided length today (the longer-run checks rest on it)

# One fabricated change of the stored rows per check, under which its verdict flips: the check must fail.
def _summary_row(ev: evidence.Evidence, table: str, setting: str, **change) -> evidence.Evidence:
    return dataclasses.replace(ev, summary=tuple({**r, **change} if (r["table"], r["setting"]) == (table, setting)
                                                 else r for r in ev.summary))


FLIPS = {
    # MoCo v2's baseline spread within the bar: it is no longer below it, as the words name it
    "unfit-baselines-as-named": lambda ev: _summary_row(ev, "T7", "v2 baseline", ci95="1.0"),
    "headline-reversed": lambda ev: _summary(ev, _row("T7", "v1 +both", "v1 baseline"), verdict=verdicts.MATCHES),
    "positive-mixing-costs": lambda ev: _summary(ev, _row("T7", "v1 +neg", "v1 baseline"), diff_mean=-9.0,
                                                 diff_ci95=3.0),
    "encoder-undoes-harder-positive": lambda ev: dataclasses.replace(ev, undone={**ev.undone, "crowded": False}),
    "claims-tally-as-stated": lambda ev: _summary(ev, lambda r: r["verdict"] == verdicts.NOT_EQUIVALENT,
                                                  verdict=verdicts.UNDECIDED, verdict_bh=verdicts.UNDECIDED),
    "claims-on-points": lambda ev: _summary(ev, _comparison(ev, "T7", "v1 +both", "v1 baseline"), scale=verdicts.ERRORS),
    "first-step-costs": lambda ev: _first(ev, "oracle", verdict=verdicts.MATCHES, diff=3.0),
    "network-costs": lambda ev: _capacity(ev, "resnet10_w32", verdict=verdicts.MATCHES, diff=6.0),
    "encoders-as-stated": lambda ev: _capacity(ev, "resnet18_w64", n_seeds=1),
    "photos-no-gain": lambda ev: _first(ev, "real", verdict=verdicts.OPPOSITE),
    "photos-knn-costs": lambda ev: _first(ev, "real, longer", knn=True, verdict=verdicts.NO_EFFECT),
    "photos-little-room": lambda ev: dataclasses.replace(ev, pixels=50.0),
    "rho-below-band-first": lambda ev: _switch(ev, lambda lb, f: f == 0.0 and lb.startswith("shapes"), rho_before=0.9),
    "rho-above-band-late": lambda ev: _switch(ev, lambda lb, f: f >= evidence.LATE_FROM, rho_before=0.1),
    "photos-concentrate-as-far": lambda ev: _switch(ev, lambda lb, f: f == 0.0 and not lb.startswith("shapes"),
                                                    peak_neg_mean_after=0.3),
    "late-helps-where-stated": lambda ev: _cell(ev, "Fashion-MNIST, 30 epochs", 0.8, verdict=verdicts.NO_EFFECT),
    "late-avoids-most": lambda ev: _cell(ev, "shapes, 30 epochs", 0.5, diff=-40.0),
    "epoch-one-too-early": lambda ev: _cell(ev, "shapes, 30 epochs", 0.03, verdict=verdicts.NO_EFFECT),
    "knn-late-mixed": lambda ev: _cell(ev, "shapes, 120 epochs", 0.3, knn=True, verdict=verdicts.NO_EFFECT),
    "length-narrows-not-damage": lambda ev: _length(ev, 120, ft=99.0),
    "longest-shrinks-points-not-errors": lambda ev: _length(ev, LONGEST, verdict=verdicts.NO_EFFECT),
    "longest-opposite-on-errors": lambda ev: _length(ev, LONGEST, scale=verdicts.POINTS),
    "longest-fewer-errors-than-long": lambda ev: _length(ev, LONGEST, ft=60.0, baseline=98.0),
    "paper-runs-longer": lambda ev: _length(ev, LONGEST, steps=10**6),
    "momentum-falls": lambda ev: _summary(ev, _row("T1", "m=0.999", "m=0.99"), verdict=verdicts.NO_EFFECT),
    "momentum-no-collapse": lambda ev: _summary(ev, _row("T1", "m=0", "random init"), verdict=verdicts.MATCHES),
    "momentum-lower-rise-undecided": lambda ev: _summary(
        ev, lambda r: r["table"] == "T1" and r["reference"].startswith("m=") and float(r["effect"] or 0) > 0,
        verdict=verdicts.MATCHES),
    "momentum-last-rise-matches": lambda ev: _summary(ev, _row("T1", "m=0.99", "m=0.9"), verdict=verdicts.UNDECIDED),
    "length-short-pair-on-gpu": lambda ev: _length(ev, 30, devices=["cpu", "cuda"]),
    "late-gain-after-bh": lambda ev: dataclasses.replace(ev, diagnosis=tuple(
        {**r, "verdict_bh": verdicts.UNDECIDED} if (r["table"], r["setting"]) == findings.LATE_GAIN else r
        for r in ev.diagnosis)),
    "late-gain-smaller-in-points": lambda ev: dataclasses.replace(ev, diagnosis=tuple(
        {**r, "verdict_points": verdicts.MATCHES} if (r["table"], r["setting"]) == findings.LATE_GAIN else r
        for r in ev.diagnosis)),
    "late-gain-sensitive-to-the-floor": lambda ev: dataclasses.replace(ev, diagnosis=tuple(
        {**r, "floor_sensitive": ""} if (r["table"], r["setting"]) == findings.LATE_GAIN else r for r in ev.diagnosis)),
    "headroom-costs-at-30": lambda ev: _headroom(ev, "+both from 9 of 30", verdict=verdicts.MATCHES, diff_mean=6.0),
    "headroom-first-step-costs-at-120": lambda ev: _headroom(ev, "+both 120", verdict=verdicts.UNDECIDED, diff_mean=1.0),
    "headroom-late-gains-at-120": lambda ev: _headroom(ev, "+both from 36 of 120", verdict=verdicts.UNDECIDED,
                                                       diff_mean=1.0),
    "headroom-negatives-not-the-papers-size-at-120": lambda ev: _headroom(ev, "+neg 120", verdict=verdicts.UNDECIDED,
                                                                          diff_ci95=5.0),
    "headroom-late-smaller-at-120": lambda ev: _headroom(ev, "+both from 36 of 120", verdict=verdicts.MATCHES),
    "headroom-positive-alone-gains-at-120": lambda ev: _headroom(ev, "+pos from 36 of 120", diff_mean=-1.0),
    "headroom-negatives-add-at-240": lambda ev: dataclasses.replace(ev, room={**ev.room, "late_gap_240_ci": 9.0}),
    "headroom-positive-alone-gains-at-240": lambda ev: _headroom(ev, "+pos from 72 of 240", diff_mean=-1.0),
    "headroom-first-step-costs-at-240": lambda ev: _headroom(ev, "+both 240", verdict=verdicts.UNDECIDED, diff_mean=1.0),
    "headroom-late-gains-at-240": lambda ev: _headroom(ev, "+both from 72 of 240", verdict=verdicts.UNDECIDED,
                                                       diff_mean=1.0),
    "headroom-late-matches-at-240": lambda ev: _headroom(ev, "+both from 72 of 240", verdict=verdicts.SMALLER),
    "headroom-knn-late-follows-linear": lambda ev: _headroom(ev, "+both from 36 of 120", knn_verdict=verdicts.OPPOSITE),
    "headroom-late-larger-on-errors-at-240": lambda ev: _headroom(ev, "+both from 72 of 240", verdict_errors=verdicts.MATCHES),
    "headroom-crowding-confounded-with-the-clock": lambda ev: dataclasses.replace(  # a crowding cell as late as a spread
        ev, room={**ev.room, "crowd_clock_latest": ev.room["spread_clock_earliest"]}),
    "headroom-crowding-goes-with-the-cost": lambda ev: dataclasses.replace(
        ev, room={**ev.room, "crowd_both_late_120_word": "crowds"}),
    "headroom-negatives-not-the-papers-size-at-240": lambda ev: _headroom(ev, "+neg 240", verdict=verdicts.SMALLER,
                                                                                      diff_mean=1.5),
    "headroom-crowding-fades": lambda ev: dataclasses.replace(
        ev, room={**ev.room, "crowd_both_120_end_word": "crowds"}),
    "headroom-switch-costs-without-crowding": lambda ev: dataclasses.replace(
        ev, room={**ev.room, "switch_from_18_of_120_crowd_word": "crowds"}),
}


def test_every_check_has_a_flip():
    assert set(FLIPS) == set(findings.CHECKS)


@pytest.mark.parametrize("name", list(FLIPS))
def test_a_flipped_verdict_fails_the_check_that_rests_on_it(ev, name):
    flipped = FLIPS[name](ev)
    assert findings.CHECKS[name](flipped), f"{name} still holds after its verdict flipped"
    with pytest.raises(evidence.FindingsDisagree, match=re.escape(repr(name))):
        findings.expect(flipped)


def test_a_flip_fails_only_the_checks_that_rest_on_it(ev):
    flipped = FLIPS["first-step-costs"](ev)
    with pytest.raises(evidence.FindingsDisagree, match="'first-step-costs'.*matches the paper"):
        findings.expect(flipped)
    findings.expect(flipped, *(name for name in findings.CHECKS if name != "first-step-costs"))


def test_a_cell_where_ft_helps_early_or_unstated_fails_the_late_start_words(ev):
    """FT helping from the first step, or at Table 6's epoch 1 (3 % of the run, not a late start), contradicts the
    words "all late starts"; so does a late cell that starts to help where the text names none."""
    label = next(lb for lb, rows in ev.phase.items() if any(0 < f < evidence.LATE_FROM for f in rows))
    early_f = next(f for f in ev.phase[label] if 0 < f < evidence.LATE_FROM)
    assert (label, early_f) not in {(lb, f) for lb, f, _ in ev.late_cells()}
    assert ev.late_cells() and all(f >= evidence.LATE_FROM for _, f, _ in ev.late_cells())
    assert all(f >= evidence.LATE_FROM for _, f in findings.STATED_HELPS)
    for f in (0.0, early_f):
        helps = _cell(ev, label, f, verdict=verdicts.MATCHES, scale=verdicts.POINTS, diff=7.0, n_seeds=3)
        with pytest.raises(evidence.FindingsDisagree, match="'late-helps-where-stated'"):
            findings.expect(helps, "late-helps-where-stated")
    with pytest.raises(evidence.FindingsDisagree, match="'late-helps-where-stated'"):
        findings.expect(_cell(ev, "shapes, 30 epochs", 0.8, verdict=verdicts.SMALLER), "late-helps-where-stated")


def test_a_resolution_point_where_ft_helps_fails_the_network_words(ev):
    """The "first step" and "network" words rest on the 56-px pair too once it is decided."""
    helps = {**ev.resolution, "n_seeds": 3, "diff": 6.0, "ci95": 2.0, "verdict": verdicts.MATCHES}
    with pytest.raises(evidence.FindingsDisagree, match="'network-costs'.*56-px crops: matches the paper"):
        findings.expect(dataclasses.replace(ev, resolution=helps), "network-costs")


def test_a_longer_length_landing_cannot_falsify_the_words_on_30_and_120_epochs(ev):
    """The length paragraph speaks of 30 and 120 epochs only: a decided 240-epoch pair that reads otherwise leaves
    its check standing (the longer-run checks are the ones that fail)."""
    longer = _length(ev, LONGEST, n_seeds=3, diff=-1.0, ci95=1.0, verdict=verdicts.NO_EFFECT, ft=97.0, baseline=98.0)
    findings.expect(longer, "length-narrows-not-damage")
    with pytest.raises(evidence.FindingsDisagree, match="'longest-shrinks-points-not-errors'"):
        findings.expect(longer, "longest-shrinks-points-not-errors")


def test_no_runs_decide_nothing_and_the_checks_say_so(tmp_path):
    empty = evidence.Evidence.load("cpu", root=tmp_path)
    assert all(r["n_seeds"] == 0 for r in empty.first_step.values())
    with pytest.raises(evidence.FindingsDisagree, match="undecided"):
        findings.expect(empty, "first-step-costs")
    with pytest.raises(evidence.FindingsDisagree, match="undecided"):
        findings.expect(empty, "encoder-undoes-harder-positive")


# ---- the facts ----------------------------------------------------------------------------------------------------

def test_facts_are_the_stored_numbers_formatted_once(ev):
    facts = findings.facts(ev)
    assert facts["first_recipe"] == plus_minus(ev.first_step["recipe"]["diff"], ev.first_step["recipe"]["ci95"], signed=True)
    cell = ev.phase["shapes, 120 epochs"][0.3]
    assert facts[evidence.cell_key("shapes, 120 epochs", 0.3)] == plus_minus(cell["diff"], cell["ci95"], signed=True)
    assert evidence.cell_key("Fashion-MNIST, 30 epochs", 0.8, knn=True) == "phase_knn_fmnist_30_80"
    counts = table_verdicts.tally(list(ev.summary))["all"]["ft"]
    assert sum(int(facts[f"claims_{k}"]) for k in findings.TALLY_KEYS.values()) == int(facts["claims"]) == sum(counts.values())
    assert all(isinstance(v, str) for v in facts.values())


# ---- the authored Markdown ----------------------------------------------------------------------------------------

def test_the_markdown_names_known_checks_and_every_check_guards_some_words():
    named = {}
    for where, text in (("book/findings.md", FINDINGS_MD.read_text()), ("chapter 7's answer", answer_markdown()),
                        ("book/index.md", (BOOK / "index.md").read_text())):  # the index's plain-words summary
        for m in CHECKS_COMMENT.finditer(text):
            for name in (n.strip() for n in m.group(1).split(",")):
                named.setdefault(name, set()).add(where)
    assert set(named) - set(findings.CHECKS) == set(), "a <!-- checks: --> comment names an unknown check"
    assert set(findings.CHECKS) - set(named) == set(), "a check that guards no words"


def test_every_finding_names_its_checks():
    """Each bullet of book/findings.md and each bold-led paragraph of chapter 7's answer carries a checks comment."""
    lines = FINDINGS_MD.read_text().splitlines()
    bullets = [line for line in lines if line.startswith("- ")]
    assert len(bullets) >= 5 and all(CHECKS_COMMENT.search(b) for b in bullets)
    table_ends = [i for i, line in enumerate(lines) if line.startswith("|") and not lines[i + 1].startswith("|")]
    assert table_ends and all(CHECKS_COMMENT.search(lines[i + 1]) for i in table_ends), "a table without its checks"
    paragraphs = [p for p in answer_markdown().split("\n\n") if p.startswith("**")]
    assert len(paragraphs) >= 5 and all(CHECKS_COMMENT.search(p) for p in paragraphs)


def test_every_glued_name_is_a_fact_chapter_7_glues(ev):
    facts = findings.facts(ev)
    pasted = GLUE.findall(FINDINGS_MD.read_text())
    assert pasted and {doc for doc, _ in pasted} == {"07a_when_ft_helps.ipynb"}  # the chapter that glues every fact
    glued = GLUE.findall(answer_markdown())
    assert glued and all(doc == "" for doc, _ in glued)
    assert {key for _, key in pasted + glued} - set(facts) == set()
    assert "glue_reading(when_ft_helps.read(stored))" in (BOOK / "src" / "07a_when_ft_helps.py").read_text()
    from ftcl_core.study.chapters import when_ft_helps  # the page's reading glues every fact, for {glue:text}

    blocks = when_ft_helps.read(ev)
    assert any(b.prefix == "" and b.text and b.facts == facts for b in blocks)


def test_the_findings_open_reproduce_the_index_and_chapter_1_link_them_and_their_links_name_chapter_labels():
    """The findings show once in the book, as Reproduce's first page; the index and chapter 1 point there instead of
    repeating them."""
    toc = yaml.safe_load((experiment_file.ROOT / "_toc.yml").read_text())
    reproduce = next(p for p in toc["parts"] if p["caption"] == "Reproduce")
    assert reproduce["chapters"][0]["file"] == "book/findings"
    for text in ((BOOK / "index.md").read_text(), (BOOK / "src" / "01_introduction.py").read_text()):
        assert "{include} findings.md" not in text and "](findings.md)" in text
    links = set(re.findall(r"\]\(#([\w-]+)\)", FINDINGS_MD.read_text()))
    assert links and links <= set(tool().labels())


# ---- the README's copy --------------------------------------------------------------------------------------------

def test_the_readmes_findings_are_what_the_script_writes(ev):
    """README.md holds book/findings.md with the stored runs' numbers filled in: stale, this fails (run
    ``python tools/readme_findings.py`` or ``python -m ftcl_core summary``)."""
    readme = (experiment_file.ROOT / "README.md").read_text()
    block = tool().block(ev)
    assert block in readme, "README's findings are stale: run `python tools/readme_findings.py`"
    assert "{glue" not in block and "](#" not in block
    assert (experiment_file.ROOT / evidence.FIGURE).is_file()


def test_the_script_finds_a_stale_readme_and_rewrites_only_its_block(tmp_path):
    readme = tmp_path / "README.md"
    current = (experiment_file.ROOT / "README.md").read_text()
    readme.write_text(current)
    script = tool()
    assert script.main(["--check", "--readme", str(readme)]) == 0
    stale = current.replace(findings.facts(evidence.Evidence.load("cpu"))["t7_v1_both"], "-1.0 ± 0.1", 1)
    readme.write_text(stale)
    assert script.main(["--check", "--readme", str(readme)]) == 1
    text = "intro\n" + script.MARKERS[0] + "\nold\n" + script.MARKERS[1] + "\nrest\n"
    assert script.replace_block(text, "NEW") == "intro\nNEW\nrest\n"
    with pytest.raises(ValueError, match="no findings block"):
        script.replace_block("intro\n", "NEW")


def test_the_script_fills_glue_and_links_and_refuses_unknown_names():
    script = tool()
    md = "reads {glue:text}`07_when_ft_helps.ipynb::x:s` ([chapter 7](#lab)) ![f](_static/p.png)"
    assert script.render(md, {"x": "+1.0 ± 0.5"}, {"lab": "book/07.ipynb"}) == \
        "reads +1.0 ± 0.5 ([chapter 7](book/07.ipynb)) ![f](book/_static/p.png)"
    with pytest.raises(KeyError, match="glues 'x'"):
        script.render(md, {}, {"lab": "book/07.ipynb"})
    with pytest.raises(KeyError, match="label 'lab'"):
        script.render(md, {"x": "1"}, {})


def test_the_phase_diagram_holds_the_task_with_rooms_rows(ev):
    labels, fractions, diff, _, words = evidence.phase_grid(ev)
    rows = evidence.room_rows(ev)
    assert rows and set(rows) <= set(labels) and set(rows["task with room, 120 epochs"]) == {0.0, 0.3}
    i, j = labels.index("task with room, 120 epochs"), fractions.index(0.3)
    late = next(r for r in ev.headroom if r["setting"] == "+both from 36 of 120")
    assert diff[i, j] == float(late["diff_mean"]) and words[i][j].startswith(late["verdict"])
    assert evidence.room_rows(dataclasses.replace(ev, headroom=())) == {}
