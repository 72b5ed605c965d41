"""The book's findings: every sentence holds on the stored runs, and each fails when a verdict it rests on flips."""

from __future__ import annotations

import dataclasses
import re

import pytest

from ftcl_core.study import experiments as X
from ftcl_core.study import findings as F
from ftcl_core.study.results.numbers import plus_minus

pytestmark = pytest.mark.skipif(not (X.STORED / "T5").is_dir(), reason="no stored cpu runs")


@pytest.fixture(scope="module")
def ev() -> F.Evidence:
    return F.Evidence.load("cpu")


def test_every_finding_holds_on_the_stored_runs(ev):
    F.expect(ev)  # raises FindingsDisagree naming the sentence otherwise
    bullets = F.bullets(ev, F.github_link)
    assert len(bullets) == 7 and all(b.startswith("- **") for b in bullets)
    assert "{" not in "".join(bullets)  # every field filled
    facts = F.facts(ev)
    assert facts["first_recipe"] == plus_minus(ev.first_step["recipe"]["diff"], ev.first_step["recipe"]["ci95"], signed=True)
    assert len(F.ABSTRACT.split(". ")) <= 4  # three sentences (one holds a colon list)


def test_a_flipped_verdict_fails_the_sentence_that_rests_on_it(ev):
    oracle = {**ev.first_step["oracle"], "verdict": "replicated", "diff": 3.0}
    flipped = dataclasses.replace(ev, first_step={**ev.first_step, "oracle": oracle})
    with pytest.raises(F.FindingsDisagree, match="'first step'.*oracle|'first step'.*no same-class"):
        F.expect(flipped)
    F.expect(flipped, "photographs", "late start")  # the other sentences still hold
    label = next(iter(ev.phase))
    helps_first = {**ev.phase[label][0.0], "verdict": "smaller than the paper", "diff": 1.0}
    early = dataclasses.replace(ev, phase={**ev.phase, label: {**ev.phase[label], 0.0: helps_first}})
    with pytest.raises(F.FindingsDisagree, match="'late start'"):
        F.expect(early, "late start")
    long = [{**r, "ft": 99.0} if r["kind"] == "length" and r["epochs"] == 120 else r for r in ev.length]
    with pytest.raises(F.FindingsDisagree, match="'length'.*reaches the shorter baseline"):
        F.expect(dataclasses.replace(ev, length=tuple(long)), "length")
    real = {**ev.first_step["real"], "verdict": "contradicted"}
    with pytest.raises(F.FindingsDisagree, match="'photographs'"):
        F.expect(dataclasses.replace(ev, first_step={**ev.first_step, "real": real}), "photographs")
    with pytest.raises(KeyError, match="no checks for the sentence"):
        F.expect(ev, "nonsense")


def test_the_network_bullet_stands_on_the_capacity_pairs(ev):
    """Shown once a larger encoder has 3 paired seeds, and it fails when one of them stops costing readout."""
    assert any("**A larger encoder does not remove it either.**" in b for b in F.bullets(ev))
    wider = next(r for r in ev.capacity[1:] if r["n_seeds"] >= 3)
    helps = tuple({**r, "verdict": "replicated", "diff": 6.0} if r is wider else r for r in ev.capacity)
    with pytest.raises(F.FindingsDisagree, match="'network'.*replicated"):
        F.bullets(dataclasses.replace(ev, capacity=helps))
    none_yet = tuple({**r, "n_seeds": 2} if i else r for i, r in enumerate(ev.capacity))
    assert not any("larger encoder" in b for b in F.bullets(dataclasses.replace(ev, capacity=none_yet)))


def test_no_runs_decide_nothing_and_the_findings_say_so(tmp_path):
    empty = F.Evidence.load("cpu", root=tmp_path)
    assert all(r["n_seeds"] == 0 for r in empty.first_step.values())
    with pytest.raises(F.FindingsDisagree, match="undecided"):
        F.expect(empty, "first step")


def test_the_findings_block_replaces_only_its_markers(ev):
    text = f"intro\n{F.MARKERS[0]}\nold\n{F.MARKERS[1]}\nrest\n"
    block = F.block(ev, F.index_link, "x.png")
    assert F.replace_block(text, block, "X.md") == f"intro\n{block}\nrest\n"
    assert F.replace_block(F.replace_block(text, block, "X.md"), block, "X.md") == f"intro\n{block}\nrest\n"
    assert "(#phase-diagram)" in block and "![" in block
    with pytest.raises(X.ConfigError, match="X.md has no findings block"):
        F.replace_block("intro\n", block, "X.md")


def test_the_index_links_name_labels_the_chapters_define(ev):
    labels = {m for src in (X.ROOT / "book" / "src").glob("*.py") for m in re.findall(r"^# \(([\w-]+)\)=$",
                                                                                     src.read_text(), re.M)}
    assert {anchor for _, (_, anchor), _ in F.BULLETS} <= labels


def test_a_longer_length_landing_cannot_falsify_the_authored_length_paragraph(ev):
    """The authored paragraph speaks of 30 and 120 epochs only; a decided 240-epoch pair that reads otherwise (FT
    above the 30-epoch baseline, a smaller error ratio) leaves its check standing and enters through its own
    generated sentence."""
    longer = [{**r, "n_seeds": 3, "diff": -1.0, "ci95": 1.0, "verdict": "no effect of the paper's size", "ft": 97.0,
               "baseline": 98.0} if r["kind"] == "length" and r["epochs"] == 240 else r for r in ev.length]
    F.expect(dataclasses.replace(ev, length=tuple(longer)), "length")
    assert "no effect of the paper's size" in F.facts(dataclasses.replace(ev, length=tuple(longer)))["length_longer"]


def test_the_longer_run_sentences_fail_when_the_longest_pair_reads_otherwise(ev):
    """The abstract's and the bullet's "shrink the cost in points, not in errors" rest on the longest decided pair
    (240 epochs): a verdict that no longer costs, a share of errors below the shortest length's, or too few seeds
    each fail them."""
    F.expect(ev, "longer run")
    assert any("**Longer runs shrink the cost in points, not in errors.**" in b for b in F.bullets(ev))

    def longest(**change) -> F.Evidence:
        return dataclasses.replace(ev, length=tuple({**r, **change} if r["kind"] == "length" and r["epochs"] == 240
                                                    else r for r in ev.length))

    with pytest.raises(F.FindingsDisagree, match="'longer run'.*longest run: no effect"):
        F.expect(longest(verdict="no effect of the paper's size"), "longer run")
    with pytest.raises(F.FindingsDisagree, match="'longer run'.*share of its baseline's errors shrinks"):
        F.expect(longest(ft=97.9, baseline=98.0), "longer run")
    with pytest.raises(F.FindingsDisagree, match="'longer run'.*longest run: replicated"):
        F.abstract(longest(diff=6.0, ci95=2.0, verdict="replicated"))
    with pytest.raises(F.FindingsDisagree, match="'longer run'.*no length past 120 epochs"):
        F.expect(longest(n_seeds=2, verdict="undecided"), "longer run")


def test_late_cells_start_at_30_percent_of_the_run(ev):
    """Table 7's epoch 1 (3 % of the run) is not a late start: it neither counts among the late cells nor may help
    under the late-start sentence."""
    assert ev.late_cells() and all(f >= F.LATE_FROM for _, f, _ in ev.late_cells())
    label = next(lb for lb, rows in ev.phase.items() if any(0 < f < F.LATE_FROM for f in rows))
    early_f = next(f for f in ev.phase[label] if 0 < f < F.LATE_FROM)
    assert (label, early_f) not in {(lb, f) for lb, f, _ in ev.late_cells()}
    helps = {**ev.phase[label][early_f], "verdict": "replicated", "scale": "points", "diff": 7.0, "n_seeds": 3}
    with pytest.raises(F.FindingsDisagree, match="'late start'.*from 3%"):
        F.expect(dataclasses.replace(ev, phase={**ev.phase, label: {**ev.phase[label], early_f: helps}}), "late start")


def test_a_cell_the_error_scale_decided_names_both_shares_of_fewer_errors(ev):
    row = {"diff": 2.5, "ci95": 1.6, "verdict": "replicated", "scale": "errors", "log_error_ratio": -1.609,
           "paper_log_error_ratio": -0.223}
    text = F._help_cell("shapes, 120 epochs", 0.3, row)
    assert "replicated on the error scale" in text and "80 % fewer test errors" in text and "has 20 % fewer" in text
    assert "error scale" not in F._help_cell("x", 0.3, {**row, "scale": "points"})


def test_an_encoder_never_trained_reads_not_run(ev):
    rows = [{"comparison": "w64", "n_seeds": 0}, {"comparison": "w32", "n_seeds": 2}, {"comparison": "w16", "n_seeds": 3}]
    assert F._capacity_open(rows) == "w64 (not run), w32 (2 of 3 seeds, undecided)"
    assert F._capacity_open(rows[2:]) == "none"


def test_a_resolution_point_where_ft_helps_fails_the_network_sentences(ev):
    """The "first step" and "network" sentences rest on the 56-px pair too once it is decided."""
    helps = {**ev.resolution, "n_seeds": 3, "diff": 6.0, "ci95": 2.0, "verdict": "replicated"}
    with pytest.raises(F.FindingsDisagree, match="'first step'.*56-px crops: replicated"):
        F.expect(dataclasses.replace(ev, resolution=helps), "first step", "network")
