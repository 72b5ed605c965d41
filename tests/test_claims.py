"""The results layer: each verdict outcome on constructed intervals (boundaries included), Benjamini-Hochberg
against a hand computation, and one definition each of the verdict, the pairing and the number formatter."""

import math
import re
from pathlib import Path

import pytest

from ftcl_core.study.results import verdicts
from ftcl_core.study.results.paired import ERROR_FLOOR, pair

GAIN = verdicts.Claim("ft", "base", "difference", effect=2.0)  # the paper: ft is 2 points above base
LOSS = verdicts.Claim("ft", "base", "difference", effect=-2.0)  # the paper: ft is 2 points below base


@pytest.mark.parametrize("lo, hi, claim, want", [
    (2.5, 3.0, GAIN, verdicts.LARGER),  # wholly beyond d: larger than the paper, not a match
    (2.0, 8.0, GAIN, verdicts.MATCHES),  # touches d: holds it
    (8.0, 9.0, GAIN, verdicts.LARGER),  # 4x the paper's effect never reads as a match
    (1.0, 3.0, GAIN, verdicts.MATCHES),  # contains d
    (1.0, 2.0, GAIN, verdicts.MATCHES),  # touches d: not wholly below it
    (0.5, 1.9, GAIN, verdicts.SMALLER),  # excludes 0, wholly below d
    (-3.0, -0.1, GAIN, verdicts.OPPOSITE),  # excludes 0 on the other side
    (-1.0, 1.5, GAIN, verdicts.NO_EFFECT),  # contains 0, excludes d
    (0.0, 1.0, GAIN, verdicts.NO_EFFECT),  # touches 0: contains it
    (-1.0, 2.5, GAIN, verdicts.UNDECIDED),  # contains both
    (-1.0, 2.0, GAIN, verdicts.UNDECIDED),  # touches d: contains it
    (-3.0, -2.5, LOSS, verdicts.LARGER),  # the paper's side is below 0: a larger loss than the paper's
    (-3.0, -1.0, LOSS, verdicts.MATCHES),
    (-1.5, -0.5, LOSS, verdicts.SMALLER),
    (0.5, 1.0, LOSS, verdicts.OPPOSITE),
    (-1.0, 1.0, LOSS, verdicts.NO_EFFECT),
    (-2.5, 1.0, LOSS, verdicts.UNDECIDED),
])
def test_each_difference_verdict(lo, hi, claim, want):
    assert verdicts.verdict_word(claim, lo, hi, 3) == want


@pytest.mark.parametrize("lo, hi, want", [
    (-0.5, 0.5, verdicts.EQUIVALENT), (-1.0, 1.0, verdicts.EQUIVALENT),  # within ±margin, ends included
    (-1.1, 0.5, verdicts.UNDECIDED), (0.5, 1.5, verdicts.UNDECIDED), (-3.0, 3.0, verdicts.UNDECIDED),
    (1.1, 2.0, verdicts.NOT_EQUIVALENT), (-2.0, -1.01, verdicts.NOT_EQUIVALENT), (1.0, 2.0, verdicts.UNDECIDED),
])
def test_each_equivalence_verdict(lo, hi, want):
    claim = verdicts.Claim("union", "ft queue", "equivalence", effect=0.09, margin=1.0)
    assert verdicts.verdict_word(claim, lo, hi, 3) == want


def test_a_claim_without_a_size_is_judged_on_its_sign_and_few_seeds_decide_nothing():
    above = verdicts.Claim("ft", "base", direction=1)
    assert [verdicts.verdict_word(above, lo, hi, 3) for lo, hi in ((0.1, 1), (-1, -0.1), (0, 1))] == [
        verdicts.MATCHES, verdicts.OPPOSITE, verdicts.UNDECIDED]
    assert verdicts.verdict_word(GAIN, 2.5, 3.0, verdicts.MIN_SEEDS - 1) == verdicts.UNDECIDED
    assert verdicts.verdict_word(GAIN, math.nan, math.nan, 5) == verdicts.UNDECIDED
    with pytest.raises(ValueError):
        verdicts.Claim("a", "b", "equivalence")  # an equivalence needs its margin


def test_judge_reads_the_paired_interval_and_reports_size_and_p():
    paired = pair({0: 1.0, 1: 2.0, 2: 1.5}, {0: 0.0, 1: 0.0, 2: 0.0, 3: 9.0})
    assert paired.seeds == (0, 1, 2) and paired.mean == pytest.approx(1.5)
    assert paired.ci95 == pytest.approx(4.303 * 0.5 / math.sqrt(3))
    assert verdicts.judge(GAIN, paired).word == verdicts.MATCHES  # [0.26, 2.74] reaches d = 2
    v = verdicts.judge(verdicts.Claim("ft", "base", effect=3.0), paired)  # wholly below d = 3
    assert v.word == verdicts.SMALLER and v.ratio == pytest.approx(0.5)
    # t = 1.5 / (0.5 / sqrt 3) = 5.196 at 2 df: two-sided p = 0.0351
    assert v.p == pytest.approx(0.0351, abs=2e-4)
    assert verdicts.after_bh(v, 0.06) == verdicts.NO_EFFECT and verdicts.after_bh(v, 0.01) == verdicts.SMALLER


def test_benjamini_hochberg_against_a_hand_computation():
    p = [0.01, 0.04, 0.03, 0.20, math.nan]
    # sorted: 0.01 (1), 0.03 (2), 0.04 (3), 0.20 (4); m = 4: 0.04, 0.06, 0.0533, 0.20 -> step-up minima
    q = verdicts.benjamini_hochberg(p)
    assert q[:4] == pytest.approx([0.04, 0.0533333, 0.0533333, 0.20]) and math.isnan(q[4])
    assert verdicts.benjamini_hochberg([0.5, 0.9]) == pytest.approx([0.9, 0.9])


PACKAGE = Path(__file__).resolve().parent.parent / "ftcl_core"
RESULTS = PACKAGE / "study" / "results"
OWNED_ELSEWHERE: set[str] = set()


@pytest.mark.parametrize("pattern, owner", [
    (r"^\s*def (verdict|judge|verdict_word)\(", "verdicts.py"),
    (r"^\s*MIN_SEEDS\w*\s*=", "verdicts.py"),
    (r"^\s*def (paired_difference|pair|mean_ci95)\(", "paired.py"),
    (r"^\s*def (fixed|plus_minus|_pm_cells|pm_cell|significant|_?fmt)\(", "numbers.py"),
    (r"^\s*def benjamini_hochberg\(", "verdicts.py"),
])
def test_verdict_pairing_and_formatting_are_defined_once(pattern, owner):
    found = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
             if p.name not in OWNED_ELSEWHERE and re.search(pattern, p.read_text(), re.M)]
    assert found == [f"study/results/{owner}"], found


# ---- the error scale and the ceiling (issue 50) -----------------------------------------------------------------

TABLE7_V1_BOTH = verdicts.Claim("ft", "base", "difference", effect=5.77, paper=(71.10, 76.87))  # errors 28.90 -> 23.13 %


def halved_errors(base: dict[int, float]) -> dict[int, float]:
    """An FT arm that gets half as many test images wrong as ``base``, seed by seed."""
    return {s: 100 - (100 - v) / 2 for s, v in base.items()}


def test_the_papers_relative_change_is_read_off_its_two_numbers():
    assert TABLE7_V1_BOTH.paper_log_error_ratio == pytest.approx(math.log(23.13 / 28.90))
    assert 1 - math.exp(TABLE7_V1_BOTH.paper_log_error_ratio) == pytest.approx(0.20, abs=0.005)  # a fifth fewer errors
    assert math.isnan(GAIN.paper_log_error_ratio) and GAIN.on_errors is None  # no numbers: judged on points only
    with pytest.raises(ValueError, match="not its two"):
        verdicts.Claim("ft", "base", effect=3.0, paper=(71.10, 76.87))  # an effect that is not the numbers' difference


def test_a_pair_at_98_percent_whose_ft_halves_the_errors_reads_as_a_gain_of_the_papers_relative_size():
    base = {0: 98.0, 1: 98.2, 2: 97.8}
    v = verdicts.judge(TABLE7_V1_BOTH, pair(halved_errors(base), base))
    assert verdicts.ceiling_binds(TABLE7_V1_BOTH, v.paired)  # 2 points of headroom, the paper's effect 5.77
    assert v.points == verdicts.SMALLER  # on points the ceiling forces "smaller than the paper"
    assert v.errors.mean == pytest.approx(math.log(0.5)) and v.errors.ci95 == pytest.approx(0.0, abs=1e-9)
    assert v.scale == verdicts.ERRORS and v.word == v.error_word == verdicts.LARGER  # halving is beyond the paper's fifth
    assert verdicts.labelled(v.word, v.scale) == "larger than the paper on the error scale"
    assert v.p == pytest.approx(v.errors.p_against(0.0))  # the deciding scale's test


def test_near_the_ceiling_no_effect_is_not_issued_where_ft_costs_errors():
    base = {0: 98.0, 1: 98.4, 2: 97.9}
    ft = {0: 95.0, 1: 99.0, 2: 93.5}  # points: -2.3 +- 8.8, holds 0 and lies below 5.77 (forced)
    v = verdicts.judge(TABLE7_V1_BOTH, pair(ft, base))
    assert v.points == verdicts.NO_EFFECT and v.scale == verdicts.ERRORS and v.word == v.error_word != verdicts.NO_EFFECT


def test_a_pair_at_60_percent_is_judged_as_before_on_points():
    base = {0: 60.0, 1: 60.5, 2: 59.5}
    for ft in (halved_errors(base), {0: 64.0, 1: 63.0, 2: 64.5}, {0: 55.0, 1: 58.0, 2: 57.0}):
        paired = pair(ft, base)
        v = verdicts.judge(TABLE7_V1_BOTH, paired)
        assert not verdicts.ceiling_binds(TABLE7_V1_BOTH, paired)
        assert v.scale == verdicts.POINTS and v.word == v.points == verdicts.verdict_word(TABLE7_V1_BOTH, paired.lo, paired.hi, 3)
        assert v.p == pytest.approx(paired.p_against(0.0)) and v.error_word in verdicts.DIFFERENCE_WORDS
    assert verdicts.judge(TABLE7_V1_BOTH, pair(halved_errors(base), base)).word == verdicts.LARGER  # +20 points against 5.77


@pytest.mark.parametrize("reference, claim, binds", [
    (95.0, TABLE7_V1_BOTH, True),  # 5 points of headroom < 5.77
    (94.0, TABLE7_V1_BOTH, False),  # 6 points >= 5.77: points decide
    (3.0, verdicts.Claim("ft", "base", effect=-3.7, paper=(71.1, 67.4)), True),  # a loss: at most the reference itself
    (50.0, verdicts.Claim("ft", "base", effect=-3.7, paper=(71.1, 67.4)), False),
    (99.0, verdicts.Claim("ft", "base", effect=5.77), False),  # without the paper's numbers: no error scale to decide
    (99.0, verdicts.Claim("ft", "base", "equivalence", effect=0.1, margin=1.0, paper=(74.64, 74.73)), False),
])
def test_the_ceiling_binds_where_the_references_room_is_below_the_papers_effect(reference, claim, binds):
    base = {0: reference - 0.1, 1: reference, 2: reference + 0.1}
    assert verdicts.ceiling_binds(claim, pair({s: v for s, v in base.items()}, base)) is binds


def test_after_bh_reads_the_deciding_scale():
    base = {0: 98.0, 1: 98.2, 2: 97.8}
    v = verdicts.judge(TABLE7_V1_BOTH, pair({0: 99.0, 1: 99.3, 2: 98.7}, base))  # errors cut by 40-50 %: above the paper's 20
    assert v.scale == verdicts.ERRORS and v.word == verdicts.MATCHES
    assert verdicts.after_bh(v, 0.01) == verdicts.MATCHES  # reaches d on errors
    assert verdicts.after_bh(v, 0.5) == verdicts.UNDECIDED


def test_log_error_ratios_pair_by_seed_and_floor_a_perfect_readout():
    paired = pair({0: 100.0, 1: 90.0}, {0: 99.0, 1: 80.0, 2: 70.0})
    errors = paired.log_error_ratios()
    assert paired.references == (99.0, 80.0) and errors.seeds == (0, 1)
    assert errors.values == pytest.approx((math.log(ERROR_FLOOR / 1.0), math.log(10 / 20)))
    assert ERROR_FLOOR == pytest.approx(100 / 2000 / 2)  # half of one of the shapes' 2 000 test images, in points
    assert pair({}, {}, allow_empty=True).log_error_ratios().n == 0


def test_a_verdict_the_error_floor_moves_says_so():
    """The floor's rule (half a test image) is tried at half and twice the floor: a pair with a run at 100 % whose
    word moves with it is marked, and the reader sees "sensitive to the error floor"; one far from the floor is not."""
    base = {0: 99.0, 1: 99.1, 2: 98.9, 3: 99.05}
    v = verdicts.judge(TABLE7_V1_BOTH, pair({0: 100.0, 1: 99.5, 2: 99.7, 3: 99.8}, base))
    assert v.scale == verdicts.ERRORS and v.floor_sensitive and len(v.floor_p) == len(verdicts.FLOOR_FACTORS)
    assert verdicts.labelled(v.word, v.scale, v.floor_sensitive).endswith("on the error scale, sensitive to the error floor")
    steady = verdicts.judge(TABLE7_V1_BOTH, pair(halved_errors(base), base))  # no run at 100 %: the floor never binds
    assert not steady.floor_sensitive and verdicts.labelled(steady.word, steady.scale, "") == f"{steady.word} on the error scale"
    row = {"verdict": "undecided", "scale": verdicts.ERRORS, "floor_sensitive": "yes"}
    assert verdicts.row_label(row).endswith("error floor")


@pytest.mark.parametrize("name, word", [
    ("undecided: the interval holds zero and the paper's effect", "undecided"),
    ("matches: the interval holds the paper's effect and excludes zero", "matches the paper")])
def test_a_claims_reading_holds_only_on_its_own_verdict(name, word):
    from ftcl_core.study import readings
    from ftcl_core.study.checks import failures

    words = ("undecided", "matches the paper", "larger than the paper", "opposite to the paper")
    for other in words:
        failed = name in failures(readings.CLAIM_CHECKS, {"verdict_word": other}, name)
        assert failed == (other != word), other
