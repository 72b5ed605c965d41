"""The book's table numbers are the paper's own: LaTeX numbers tables in the order of their captions in paper.tex
(issue 63, item 1). Every experiment file of a paper table names the ``\\label`` of the caption it reproduces
(``paper_label``); its ``table`` id (``T4``, ``T7-fmnist``) must carry that caption's number."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT.parent / "shared" / "paper" / "paper.tex"
pytestmark = pytest.mark.skipif(not PAPER.is_file(), reason=f"{PAPER} not here (the shared/ folder beside the clone)")


def caption_numbers(tex: str) -> dict[str, int]:
    """``{label: number}`` for every table of the paper, main text and supplement, numbered in the order their
    environments (``table`` or ``table*``) open, as LaTeX does; a label is the ``\\label{tab:...}`` inside one."""
    out: dict[str, int] = {}
    for n, body in enumerate(re.findall(r"\\begin\{table\*?\}(.*?)\\end\{table\*?\}", tex, flags=re.S), start=1):
        for label in re.findall(r"\\label\{(tab:[^}]+)\}", body):
            out[label] = n
    return out


def test_caption_order_numbers_the_known_tables():
    numbers = caption_numbers(PAPER.read_text())
    # the two anchors the supplement itself cites: "Table 6 (2nd row)" is the when-to-add table, and the IN-1K
    # comparison is "Table 13 in supp"
    assert numbers["tab:in100_whentoadd"] == 6 and numbers["tab:supp_compared_table"] == 13
    assert numbers["tab:in100_lambda_comp"] == 3 and numbers["tab:in100_lambda_in"] == 4


def test_every_paper_table_experiment_carries_its_captions_number():
    numbers = caption_numbers(PAPER.read_text())
    seen: dict[str, str] = {}
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        d = yaml.safe_load(path.read_text())
        table = str(d["table"])
        if not re.fullmatch(r"T\d+(-\w+)?", table):
            continue  # the supplement's (S-...), the diagnosis's (D-...) and the headroom study's (H-...)
        assert "paper_label" in d, f"{path.name}: a paper table's experiment names the caption it reproduces"
        label = d["paper_label"]
        assert label in numbers, f"{path.name}: {label} is no table label of paper.tex"
        assert table.split("-")[0] == f"T{numbers[label]}", f"{path.name}: {table} reproduces Table {numbers[label]}"
        # the title says the same number
        said = re.findall(r"\bTable (\d+)", str(d.get("title", "")))
        assert all(int(s) == numbers[label] for s in said), f"{path.name}: its title names Table {said}"
        seen[table.split("-")[0]] = label
    assert sorted(seen) == [f"T{i}" for i in range(1, 8)], "every one of the paper's Tables 1-7 has its experiment"


def test_claim_sources_name_the_table_that_holds_their_numbers():
    """A claim quotes its source as "Tab. N, ...": N must be the table whose caption holds that comparison."""
    numbers = caption_numbers(PAPER.read_text())
    by_topic = {"start": numbers["tab:in100_whentoadd"], "never": numbers["tab:in100_whentoadd"],
                "+pos +neg": numbers["tab:in100_moco"], "+neg:": numbers["tab:in100_moco"]}
    checked = 0
    for path in sorted((ROOT / "experiments").rglob("*.yaml")):
        for claim in yaml.safe_load(path.read_text()).get("claims") or []:
            if not isinstance(claim, dict):
                continue  # the short form ('x above y') quotes no source
            source = str(claim.get("source", ""))
            m = re.match(r"Tab\. (\d+),", source)
            if not m:
                continue
            for topic, n in by_topic.items():
                if topic in source:
                    assert int(m.group(1)) == n, f"{path.name}: '{source}' is Table {n}'s comparison"
                    checked += 1
                    break
    assert checked >= 9  # the headroom map's claims at least
