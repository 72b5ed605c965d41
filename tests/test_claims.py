"""The results layer: each verdict outcome on constructed intervals (boundaries included), Benjamini-Hochberg
against a hand computation, and one definition each of the verdict, the pairing and the number formatter."""

import math
import re
from pathlib import Path

import pytest

from ftcl_core.results import claims as C
from ftcl_core.results.paired import pair

GAIN = C.Claim("ft", "base", "difference", effect=2.0)  # the paper: ft is 2 points above base
LOSS = C.Claim("ft", "base", "difference", effect=-2.0)  # the paper: ft is 2 points below base


@pytest.mark.parametrize("lo, hi, claim, want", [
    (2.5, 3.0, GAIN, C.REPLICATED),  # excludes 0 on the paper's side, above d
    (1.0, 3.0, GAIN, C.REPLICATED),  # contains d
    (1.0, 2.0, GAIN, C.REPLICATED),  # touches d: not wholly below it
    (0.5, 1.9, GAIN, C.SMALLER),  # excludes 0, wholly below d
    (-3.0, -0.1, GAIN, C.CONTRADICTED),  # excludes 0 on the other side
    (-1.0, 1.5, GAIN, C.NO_EFFECT),  # contains 0, excludes d
    (0.0, 1.0, GAIN, C.NO_EFFECT),  # touches 0: contains it
    (-1.0, 2.5, GAIN, C.INCONCLUSIVE),  # contains both
    (-1.0, 2.0, GAIN, C.INCONCLUSIVE),  # touches d: contains it
    (-3.0, -2.5, LOSS, C.REPLICATED),  # the paper's side is below 0
    (-1.5, -0.5, LOSS, C.SMALLER),
    (0.5, 1.0, LOSS, C.CONTRADICTED),
    (-1.0, 1.0, LOSS, C.NO_EFFECT),
    (-2.5, 1.0, LOSS, C.INCONCLUSIVE),
])
def test_each_difference_verdict(lo, hi, claim, want):
    assert C.verdict_word(claim, lo, hi, 3) == want


@pytest.mark.parametrize("lo, hi, want", [
    (-0.5, 0.5, C.EQUIVALENT), (-1.0, 1.0, C.EQUIVALENT),  # within ±margin, ends included
    (-1.1, 0.5, C.INCONCLUSIVE), (0.5, 1.5, C.INCONCLUSIVE), (-3.0, 3.0, C.INCONCLUSIVE),
    (1.1, 2.0, C.NOT_EQUIVALENT), (-2.0, -1.01, C.NOT_EQUIVALENT), (1.0, 2.0, C.INCONCLUSIVE),
])
def test_each_equivalence_verdict(lo, hi, want):
    claim = C.Claim("union", "ft queue", "equivalence", effect=0.09, margin=1.0)
    assert C.verdict_word(claim, lo, hi, 3) == want


def test_a_claim_without_a_size_is_judged_on_its_sign_and_few_seeds_decide_nothing():
    above = C.Claim("ft", "base", direction=1)
    assert [C.verdict_word(above, lo, hi, 3) for lo, hi in ((0.1, 1), (-1, -0.1), (0, 1))] == [
        C.REPLICATED, C.CONTRADICTED, C.INCONCLUSIVE]
    assert C.verdict_word(GAIN, 2.5, 3.0, C.MIN_SEEDS - 1) == C.UNDECIDED
    assert C.verdict_word(GAIN, math.nan, math.nan, 5) == C.UNDECIDED
    with pytest.raises(ValueError):
        C.Claim("a", "b", "equivalence")  # an equivalence needs its margin


def test_judge_reads_the_paired_interval_and_reports_size_and_p():
    paired = pair({0: 1.0, 1: 2.0, 2: 1.5}, {0: 0.0, 1: 0.0, 2: 0.0, 3: 9.0})
    assert paired.seeds == (0, 1, 2) and paired.mean == pytest.approx(1.5)
    assert paired.ci95 == pytest.approx(4.303 * 0.5 / math.sqrt(3))
    assert C.judge(GAIN, paired).word == C.REPLICATED  # [0.26, 2.74] reaches d = 2
    v = C.judge(C.Claim("ft", "base", effect=3.0), paired)  # wholly below d = 3
    assert v.word == C.SMALLER and v.ratio == pytest.approx(0.5)
    # t = 1.5 / (0.5 / sqrt 3) = 5.196 at 2 df: two-sided p = 0.0351
    assert v.p == pytest.approx(0.0351, abs=2e-4)
    assert C.after_bh(v, 0.06) == C.NO_EFFECT and C.after_bh(v, 0.01) == C.SMALLER


def test_benjamini_hochberg_against_a_hand_computation():
    p = [0.01, 0.04, 0.03, 0.20, math.nan]
    # sorted: 0.01 (1), 0.03 (2), 0.04 (3), 0.20 (4); m = 4: 0.04, 0.06, 0.0533, 0.20 -> step-up minima
    q = C.benjamini_hochberg(p)
    assert q[:4] == pytest.approx([0.04, 0.0533333, 0.0533333, 0.20]) and math.isnan(q[4])
    assert C.benjamini_hochberg([0.5, 0.9]) == pytest.approx([0.9, 0.9])


PACKAGE = Path(__file__).resolve().parent.parent / "ftcl_core"
RESULTS = PACKAGE / "results"
OWNED_ELSEWHERE: set[str] = set()


@pytest.mark.parametrize("pattern, owner", [
    (r"^\s*def (verdict|judge|verdict_word)\(", "claims.py"),
    (r"^\s*MIN_SEEDS\w*\s*=", "claims.py"),
    (r"^\s*def (paired_difference|pair|mean_ci95)\(", "paired.py"),
    (r"^\s*def (fixed|plus_minus|_pm_cells|pm_cell|significant|_?fmt)\(", "numbers.py"),
    (r"^\s*def benjamini_hochberg\(", "claims.py"),
])
def test_verdict_pairing_and_formatting_are_defined_once(pattern, owner):
    found = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
             if p.name not in OWNED_ELSEWHERE and re.search(pattern, p.read_text(), re.M)]
    assert found == [f"results/{owner}"], found
