"""The task with headroom's facts and checks (chapter 11): the checks bind the chapter's words and fail when the
verdicts they rest on flip; the map figure shows every planned comparison with readable text."""

import math
from pathlib import Path

import pytest

from ftcl_core.study import checks, headroom, switch_time


def row(arm: str, length: int, n: int, diff: float, ci: float, verdict: str, ler: float = math.nan) -> dict:
    return {"setting": headroom.setting(arm, length), "n_seeds": n, "diff_mean": diff, "diff_ci95": ci, "verdict": verdict,
            "scale": "points", "log_error_ratio": ler, "log_error_ratio_ci95": 0.05}


def stored_like() -> list[dict]:
    """Rows shaped like today's map: every arm costs at 30 epochs; at 120 +both from the first step costs on five
    seeds, +both from 30 % gains (less than the paper), and so does +pos alone from 30 %; +neg shows no effect of the
    paper's size; 240 not run."""
    return [row("both", 30, 5, -20.3, 4.2, "opposite to the paper", 0.28),
            row("both_late", 30, 5, -5.9, 2.1, "opposite to the paper", 0.09),
            row("neg", 30, 5, -2.8, 4.0, "no effect of the paper's size", 0.04),
            row("pos_late", 30, 5, -6.7, 2.1, "compared"),
            row("both", 120, 5, -28.0, 6.0, "opposite to the paper", 0.55),
            row("both_late", 120, 5, 5.4, 1.3, "smaller than the paper", -0.14),
            row("neg", 120, 5, -0.4, 2.7, "no effect of the paper's size", -0.01), row("pos_late", 120, 5, 3.7, 2.0, "compared"),
            {"setting": "baseline 120", "n_seeds": 5, "mean": 60.28, "ci95": 4.65, "verdict": "baseline"}]


def at_30() -> list[dict]:
    return [r for r in stored_like() if r["setting"].endswith(" 30")]


def test_the_chapter_checks_hold_on_rows_like_the_stored_map():
    runs = late_records([-0.5, 1.2, 0.1, 0.9, -0.8], 30) + late_records([2.8, 2.5, 0.4], 120)  # the late arms' gaps
    facts = {
        **headroom.map_facts(stored_like()),
        **headroom.gap_facts(runs),
        **headroom.crowding_facts(crowding_like()),
        "planned": 5,
    }
    on_map = [n for n in headroom.CHECKS if not n.startswith(("aim", "switch")) and not n.endswith("-at-240")]
    assert checks.failures(headroom.CHECKS, facts, *on_map) == {}
    # +both from 30 % at 240: [5.3, 8.7] holds the paper's +6.7; its errors' log ratio [-0.27, -0.17] lies wholly past
    # the paper's log(37.1 / 43.8) = -0.17
    longer = stored_like() + [{**row("both_late", 240, 3, 7.0, 1.7, "matches the paper", -0.22),
                               "verdict_errors": "larger than the paper"},
                              row("both", 240, 3, -19.0, 3.0, "opposite to the paper", 0.45)]
    at_240 = ["late-start-gains-at-240", "late-start-matches-at-240", "late-start-larger-on-errors-at-240",
              "first-step-costs-at-240"]
    assert checks.failures(headroom.CHECKS, headroom.map_facts(longer), *at_240) == {}
    assert "240-pending" in checks.failures(headroom.CHECKS, headroom.map_facts(longer), "240-pending")
    assert facts["both_30_diff"] == "-20.3 ± 4.2" and facts["both_240_diff"] == "not run"
    assert (facts["baseline_120"], facts["baseline_240"]) == ("60.3 ± 4.7", "not run")
    assert facts["both_30_errors"].startswith(f"{math.exp(0.28):.2f}×")


@pytest.mark.parametrize("name, flip", [
    ("late-start-costs-at-30", row("both_late", 30, 5, 7.0, 2.0, "matches the paper")),  # [5, 9] holds +6.7
    ("late-positive-alone-costs-at-30", row("pos_late", 30, 5, -1.0, 2.1, "compared")),
    ("positive-mixing-carries-the-late-cost", row("pos_late", 30, 5, -15.0, 2.1, "compared")),
    ("negatives-alone-not-the-papers-size-at-30", row("neg", 30, 5, 3.0, 2.0, "matches the paper")),  # holds +3.54
    ("first-step-costs-at-30", row("both", 30, 2, -20.3, 40.0, "undecided")),
    ("first-step-costs-at-120", row("both", 120, 3, 1.0, 2.0, "no effect of the paper's size")),  # [-1, 3]
    ("late-start-gains-at-120", row("both_late", 120, 3, 1.0, 4.0, "no effect of the paper's size")),  # [-3, 5]
    ("late-start-smaller-at-120", row("both_late", 120, 5, 6.0, 2.0, "matches the paper")),  # [4, 8] holds +6.7
    ("negatives-alone-not-the-papers-size-at-120", row("neg", 120, 4, -0.4, 5.0, "undecided")),  # holds 0 and +3.54
    ("late-positive-alone-gains-at-120", row("pos_late", 120, 3, 1.0, 2.0, "compared")),
    ("240-pending", row("neg", 240, 3, -3.0, 2.0, "opposite to the paper")),
    ("the ceiling never binds on the map", {**row("neg", 120, 5, -0.4, 2.7, "no effect of the paper's size"),
                                            "scale": "errors"}),
    ("240-pending-but-the-late-start", row("both", 240, 3, -19.0, 3.0, "opposite to the paper")),
    ("late-positive-alone-gains-at-240", row("pos_late", 240, 3, 1.0, 2.0, "compared")),
    ("negatives-alone-not-the-papers-size-at-240", row("neg", 240, 5, 1.5, 0.9, "smaller than the paper")),
    ("late-start-gains-at-240", row("both_late", 240, 3, 1.0, 4.0, "no effect of the paper's size")),  # [-3, 5]
    ("late-start-matches-at-240", row("both_late", 240, 3, 12.0, 2.0, "larger than the paper")),  # [10, 14] past +6.7
    ("late-start-larger-on-errors-at-240", {**row("both_late", 240, 3, 7.0, 1.7, "matches the paper", -0.17),
                                            "verdict_errors": "matches the paper"}),  # [-0.22, -0.12] holds -0.17
    ("first-step-costs-at-240", row("both", 240, 3, -1.0, 4.0, "no effect of the paper's size")),  # [-5, 3]
    ("late-start-costs-less-at-30", row("both_late", 30, 5, -15.0, 2.1, "opposite to the paper", 0.2)),
])
def test_a_flipped_verdict_fails_the_check_bound_to_it(name, flip):
    rows = [r for r in stored_like() if r["setting"] != flip["setting"]] + [flip]
    assert name in checks.failures(headroom.CHECKS, headroom.map_facts(rows), name)


def test_the_aims_and_the_longest_length_read_from_the_baselines():
    records = [{"setting": "baseline 30", "linear_top1": v, "random_init_linear_top1": 9.0} for v in (35, 37, 39)]
    facts = headroom.task_facts(records)
    assert facts["n_seeds"] == "3" and facts["gain"] == "+28.0" and facts["half_point"] == "10"
    assert checks.failures(headroom.CHECKS, facts, "aim-gain-met", "aim-spread-met", "aim-images-met") == {}
    assert "aim-longest-met" in checks.failures(headroom.CHECKS, facts, "aim-longest-met")  # none stored: not met, not assumed
    noisy = [{**r, "linear_top1": v} for r, v in zip(records, (20, 37, 50))]
    assert "aim-spread-met" in checks.failures(headroom.CHECKS, headroom.task_facts(noisy), "aim-spread-met")
    longest = records + [{"setting": "baseline 240", "linear_top1": v, "random_init_linear_top1": 9.0} for v in (80, 88)]
    facts = headroom.task_facts(longest)
    assert (facts["longest"], facts["longest_n"]) == ("84.0", "2") and not checks.failures(
        headroom.CHECKS, facts, "aim-longest-met"
    )
    saturated = records + [{"setting": "baseline 240", "linear_top1": 93.0, "random_init_linear_top1": 9.0}]
    assert "aim-longest-met" in checks.failures(headroom.CHECKS, headroom.task_facts(saturated), "aim-longest-met")


def test_the_map_figure_lists_every_planned_comparison_in_readable_text():
    import matplotlib

    matplotlib.use("Agg")
    from ftcl_core.pages import headroom as headroom_figures
    from ftcl_core.pages import legibility

    fig = headroom_figures.map_figure(at_30())  # only 30 epochs stored: its four rows, the other lengths left out
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(labels) == len(headroom.ARMS) and all(label.startswith("30 ep.") for label in labels)
    assert "FT worse" in fig.axes[0].get_xlabel() and "FT worse" in fig.axes[1].get_xlabel()
    assert legibility.smallest_text_px(fig) >= 11
    # one seed at 120 epochs, its errors 1.8x the baseline's, the paper's 0.8x: an axis as wide as today's map
    longer = at_30() + [{**row("both", 120, 1, -3.0, float("nan"), "undecided", 0.6), "paper_log_error_ratio": -0.223}]
    fig = headroom_figures.map_figure(longer)  # a length with one seed: its four rows, the unstored arms "not run", "(1 seed)"
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(labels) == 2 * len(headroom.ARMS) and sum(label.endswith("(1 seed)") for label in labels) == 1
    assert [t.get_text() for t in fig.axes[0].texts].count("not run") == 3
    fig.canvas.draw()  # the error-ratio axis: no two tick labels overlap
    boxes = [t.get_window_extent() for t in fig.axes[1].get_xticklabels() if t.get_text()]
    assert len(boxes) >= 2 and all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:]))
    assert headroom.map_facts(longer)["pending"] == "240"


def test_the_papers_effects_come_from_the_map_file_and_the_ceiling_example_is_below_them():
    facts = headroom.paper_facts(example_baseline=98.0)
    assert facts["both_paper"] == "+5.8" and facts["both_paper_ratio"] == "0.80×"  # Tab. 7: 28.90 -> 23.13 % errors
    assert float(facts["example_gain"]) < 2 < float(facts["both_paper"])  # a 98 % baseline cannot show +5.8
    assert facts["steps_30"] == "1 170"


def late_records(gaps: list[float], length: int = 120) -> list[dict]:
    """Runs of +both and +pos alone from 30 % at ``length`` epochs, one seed per gap, +both above +pos by that gap."""
    return [r for seed, gap in enumerate(gaps) for r in (
        {"setting": headroom.setting("pos_late", length), "seed": seed, "linear_top1": 60.0 + seed},
        {"setting": headroom.setting("both_late", length), "seed": seed, "linear_top1": 60.0 + seed + gap})]


def test_the_negatives_share_of_the_late_gain_is_paired_by_seed_and_open_only_when_its_interval_holds_0():
    name = "negatives-share-of-the-late-gain-open-at-120"
    facts = headroom.gap_facts(late_records([2.8, 2.5, 0.4]))
    assert (facts["late_gap_120_diff"], facts["late_gap_120_n"]) == ("+1.9 ± 3.2", "3")
    assert facts["late_gap_240_diff"] == "not run"
    assert checks.failures(headroom.CHECKS, facts, name) == {}
    assert name in checks.failures(
        headroom.CHECKS, headroom.gap_facts(late_records([2.0, 2.2, 2.1])), name
    )  # the pair gains more
    assert name in checks.failures(headroom.CHECKS, headroom.gap_facts(late_records([2.8, -2.5])), name)  # below the seeds needed
    unpaired = late_records([1.0, -1.0, 0.5]) + [{"setting": headroom.setting("both_late", 120), "seed": 9, "linear_top1": 99.0}]
    assert headroom.gap_facts(unpaired)["late_gap_120_n"] == "3"  # a seed with one arm only is left out


def test_the_negatives_share_of_the_30_epoch_late_cost_is_open_only_while_its_interval_holds_zero():
    name = "negatives-share-of-the-late-cost-open-at-30"
    assert checks.failures(headroom.CHECKS, headroom.gap_facts(late_records([-0.5, 1.2, 0.1, 0.9, -0.8], 30)), name) == {}
    for gaps in ([0.5, 1.2, 0.6, 0.9, 0.8], [-4.0, -4.5, -4.2, -4.1, -4.4], [0.8, -0.9]):  # above; below; 2 seeds
        assert name in checks.failures(headroom.CHECKS, headroom.gap_facts(late_records(gaps, 30)), name)


def test_the_120_epoch_arms_hold_the_planned_seeds_only_when_every_arm_holds_them():
    name = "120-holds-the-planned-seeds"
    rows = stored_like()
    assert headroom.map_facts(rows)["seeds_120"] == "5"
    assert checks.failures(headroom.CHECKS, {**headroom.map_facts(rows), "planned": 5}, name) == {}
    short = [{**r, "n_seeds": 4} if r["setting"] == headroom.setting("neg", 120) else r for r in rows]
    assert headroom.map_facts(short)["seeds_120"] == "4–5"
    assert name in checks.failures(headroom.CHECKS, {**headroom.map_facts(short), "planned": 5}, name)
    assert name in checks.failures(headroom.CHECKS, {**headroom.map_facts(rows), "planned": 6}, name)
    short_240 = "240-short-of-the-planned-seeds"  # the 240-epoch words say seeds are missing while some arm is short
    partly = rows + [row(arm, 240, 3, 1.0, 2.0, "no effect of the paper's size") for arm in headroom.ARMS]
    assert checks.failures(headroom.CHECKS, {**headroom.map_facts(partly), "planned": 5}, short_240) == {}
    full = rows + [row(arm, 240, 5, 1.0, 2.0, "no effect of the paper's size") for arm in headroom.ARMS]
    assert short_240 in checks.failures(headroom.CHECKS, {**headroom.map_facts(full), "planned": 5}, short_240)


def test_the_error_axis_reaches_a_labelled_tick_beyond_an_interval_near_its_end():
    from ftcl_core.pages import headroom as headroom_figures

    lo, hi = headroom_figures._padded(0.75, 1.95)  # an interval reaching 1.91x on an axis that matplotlib ends at 1.95
    assert hi > 2 and 2 in headroom_figures._spaced_ticks(lo, hi) and lo < 0.67
    assert headroom_figures._padded(0.9, 1.6) == (0.8 / 1.04, 2 * 1.04)  # each end to the nearest round ratio within 1.25x
    assert headroom_figures._padded(0.3, 5.5) == (0.25 / 1.04, 5.5)  # none within reach above 5.5: that end stays


def test_the_late_starts_seed_by_seed_pair_each_arm_with_its_own_seeds_baseline():
    runs = [{"setting": "baseline 120", "seed": 0, "linear_top1": 60.0}, {"setting": "baseline 120", "seed": 1,
            "linear_top1": 58.0}, {"setting": headroom.setting("both_late", 120), "seed": 1, "linear_top1": 64.5},
            {"setting": headroom.setting("pos_late", 120), "seed": 0, "linear_top1": 57.0},
            {"setting": headroom.setting("both_late", 30), "seed": 0, "linear_top1": 99.0}]  # another length: not paired
    assert headroom.seed_pairs(runs, 120) == [["0", "60.0", "", "", "57.0", "-3.0"], ["1", "58.0", "64.5", "+6.5", "", ""]]
    assert headroom.seed_pairs(runs, 240) == []


def test_only_the_checks_the_chapter_names_hold_back_a_landed_run():
    longer = stored_like() + [row("both_late", 240, 2, 7.0, 9.0, "undecided")]  # 240 still training: 2 seeds
    runs = late_records([0.5, 1.2, 0.6, 0.9, 0.8], 30) + late_records([2.8, 2.5, 0.4], 120)
    facts = {**headroom.map_facts(longer), **headroom.gap_facts(runs), "planned": 5}
    assert "late-start-gains-at-240" in checks.failures(headroom.CHECKS, facts, "late-start-gains-at-240")
    assert headroom.bound_failures(facts, chapter='checks.expect(headroom.CHECKS, facts, "240-pending")') == {}
    named = 'checks.expect(headroom.CHECKS, facts, "late-start-gains-at-240")'
    assert list(headroom.bound_failures(facts, chapter=named)) == ["late-start-gains-at-240"]


def metrics_run(length: int, neg: float, switch: int = 0, early: float | None = None, end: float | None = None,
                steps_per_epoch: int = 4) -> dict:
    """A run's per-step columns: raw Mean(neg) ``neg`` throughout, ``early`` over the first tenth from ``switch``,
    ``end`` over the last 100 steps (when given)."""
    import numpy as np

    epoch = np.repeat(np.arange(length), steps_per_epoch)
    values = np.full(epoch.shape, neg, dtype=float)
    if early is not None:
        values[(epoch >= switch) & (epoch < switch + max(1, length // 10))] = early
    if end is not None:
        values[-100:] = end
    return {"epoch": epoch, "neg_mean": values}


def crowding_like(late_120: float = 0.0, neg_120: float = 0.05, both_120_end: float = 0.01, late_30: float = 0.26) -> dict:
    """Metrics shaped like today's map at 30 and 120 epochs: from the first step FT crowds the images early and (at
    120) spreads them by the end; the late start crowds at 30 epochs (``late_30``), not at 120 (``late_120``); +neg
    never does."""
    seeds = range(5)
    m = {}
    for length, late in ((30, late_30), (120, late_120)):
        s = length * 3 // 10
        m[headroom.setting("baseline", length)] = {k: metrics_run(length, 0.02, 0, early=0.15) for k in seeds}
        m[headroom.setting("both", length)] = {k: metrics_run(length, 0.3, 0, early=0.75,
                                                       end=both_120_end if length == 120 else 0.5) for k in seeds}
        m[headroom.setting("both_late", length)] = {k: metrics_run(length, 0.02, s, early=late) for k in seeds}
        m[headroom.setting("pos_late", length)] = {k: metrics_run(length, 0.02, s, early=late + 0.01) for k in seeds}
        m[headroom.setting("neg", length)] = {k: metrics_run(length, 0.02, 0, early=neg_120 if length == 120 else 0.1)
                                       for k in seeds}
    return m


CROWDING_CHECKS = ("crowding-goes-with-the-cost", "first-step-crowding-fades-at-120", "negatives-alone-never-crowd",
                   "crowding-confounded-with-the-clock")


def test_the_crowding_checks_hold_where_ft_crowds_only_where_it_costs():
    facts = {**headroom.map_facts(stored_like()), **headroom.crowding_facts(crowding_like())}
    assert checks.failures(headroom.CHECKS, facts, *CROWDING_CHECKS) == {}
    assert (facts["crowd_both_120_ft"], facts["crowd_both_120_base"]) == ("0.75", "0.15")
    assert facts["crowd_both_late_30_word"] == "crowds" and facts["crowd_both_late_120_word"] == "spread"
    assert facts["crowd_both_120_end_ft"] == "0.01" and facts["crowd_both_240_n"] == "0"


@pytest.mark.parametrize("name, metrics", [
    ("crowding-goes-with-the-cost", crowding_like(late_120=0.3)),  # the late start crowds at 120 and still gains
    ("first-step-crowding-fades-at-120", crowding_like(both_120_end=0.4)),  # still crowded at the end
    ("negatives-alone-never-crowd", crowding_like(neg_120=0.5)),
    # the late start spreads at 30 epochs (FT on at epoch 9) and crowds at 120 (on at epoch 36): a cell that crowds
    # switches on later than one that does not, so the map itself tells the crowding from the clock
    ("crowding-confounded-with-the-clock", crowding_like(late_30=0.0, late_120=0.3)),
])
def test_a_run_that_crowds_otherwise_fails_the_crowding_words(name, metrics):
    facts = {**headroom.map_facts(stored_like()), **headroom.crowding_facts(metrics)}
    assert name in checks.failures(headroom.CHECKS, facts, name)


def test_the_crowding_check_needs_a_costing_and_a_gaining_arm():
    gains_nowhere = [r for r in stored_like() if r["setting"] not in ("+both from 36 of 120", "+pos from 36 of 120")]
    facts = {**headroom.map_facts(gains_nowhere), **headroom.crowding_facts(crowding_like())}
    assert "crowding-goes-with-the-cost" in checks.failures(headroom.CHECKS, facts, "crowding-goes-with-the-cost")


def test_the_crowding_figure_draws_a_panel_per_length_in_readable_text():
    from ftcl_core.pages import headroom as headroom_figures
    from ftcl_core.pages import legibility

    metrics = crowding_like()
    fig = headroom_figures.crowding_figure({n: headroom.neg_curves(metrics, n) for n in (30, 120)})
    assert len(fig.axes) == 2 and legibility.smallest_text_px(fig) >= legibility.MIN_TEXT_PX
    assert len(fig.axes[1].get_lines()) == 4  # baseline, two arms, the switch


def test_the_map_script_refuses_an_unknown_arm_before_it_trains_anything():
    import os
    import subprocess

    root = Path(__file__).resolve().parent.parent
    r = subprocess.run(["bash", str(root / "tools/headroom_map.sh"), "30"], capture_output=True, text=True, cwd=root,
                       env={**os.environ, "ARMS": "baseline lately", "PYTHON": "false"})
    assert r.returncode == 2 and "unknown arm 'lately'" in r.stderr


def test_the_switch_experiment_reads_each_arm_against_the_maps_baseline_of_its_length_and_seed():
    """Issue 66's separating arms (FT from epoch 9 or 18 of longer runs) against the map's baselines, paired by seed;
    each check bound to chapter 11's words fails when its arm's runs say otherwise."""
    base = [{"setting": f"baseline {n}", "seed": s, "linear_top1": 60.0 + s} for n in (120, 240) for s in range(5)]
    arm = [{"setting": "+both from 9 of 120", "seed": s, "linear_top1": 48.0 + s + 0.5 * (s % 2)} for s in range(5)]
    f = switch_time.facts(base, arm)
    assert (f["switch_from_9_of_120_side"], f["switch_from_9_of_120_n"], f["switch_from_9_of_120_step"]) == (
        "costs", "5", "351")
    assert f["switch_from_9_of_240_side"] == "undecided" and f["switch_from_18_of_120_diff"] == "not run"
    names = ("switch-from-9-of-120-costs", "switch-from-9-of-240-short-of-its-seeds")
    assert checks.failures(headroom.CHECKS, f, *names) == {}
    assert "switch-from-9-of-120-crowds" in checks.failures(headroom.CHECKS, f, "switch-from-9-of-120-crowds")  # no metrics
    gains = [{**r, "linear_top1": r["linear_top1"] + 20} for r in arm]
    assert set(checks.failures(headroom.CHECKS, switch_time.facts(base, gains), *names)) == {"switch-from-9-of-120-costs"}
    short = switch_time.facts(base, arm[:4])  # below the planned five seeds: no verdict to bind words to
    assert "switch-from-9-of-120-costs" in checks.failures(headroom.CHECKS, short, "switch-from-9-of-120-costs")
    # three of five seeds at 240 epochs, spread across zero: short of its seeds, an interval that holds zero
    spread = [{"setting": "+both from 9 of 240", "seed": s, "linear_top1": 60.0 + s + d} for s, d in enumerate((-9, 6, -2))]
    three = switch_time.facts(base, arm + spread)
    assert checks.failures(headroom.CHECKS, three, "switch-from-9-of-240-short-of-its-seeds",
                           "switch-from-9-of-240-holds-zero") == {}
    costs = [{**r, "linear_top1": r["linear_top1"] - 20} for r in spread]
    assert "switch-from-9-of-240-holds-zero" in checks.failures(
        headroom.CHECKS, switch_time.facts(base, arm + costs), "switch-from-9-of-240-holds-zero")
    every = arm + [{**r, "setting": s} for r in arm for s in ("+both from 9 of 240", "+both from 18 of 120")]
    assert set(checks.failures(headroom.CHECKS, switch_time.facts(base, every), *names)) == set(names[1:])


def test_the_later_switch_is_read_against_the_earlier_one_and_its_crowding():
    """The switch at epoch 18 of 120 (issue 66): it costs, costs less than the switch at epoch 9 (paired by seed: E1,
    the clock) and does not crowd; each check fails when the runs or the crowding say otherwise."""
    base = [{"setting": "baseline 120", "seed": s, "linear_top1": 60.0 + s} for s in range(5)]
    early = [{"setting": "+both from 9 of 120", "seed": s, "linear_top1": 48.0 + s + 0.5 * (s % 2)} for s in range(5)]
    late = [{"setting": "+both from 18 of 120", "seed": s, "linear_top1": 57.0 + s - 0.3 * (s % 2)} for s in range(5)]
    names = ("switch-from-18-of-120-costs", "switch-later-costs-less")
    f = switch_time.facts(base, early + late)
    assert (f["switch_from_18_of_120_side"], f["switch_later_side"], f["switch_later_n"]) == ("costs", "gains", "5")
    assert checks.failures(headroom.CHECKS, f, *names) == {}
    worse = [{**r, "linear_top1": r["linear_top1"] - 12} for r in late]  # costs more than the early switch
    assert set(checks.failures(headroom.CHECKS, switch_time.facts(base, early + worse), *names)) == {
        "switch-later-costs-less"}
    even = [{**r, "linear_top1": r["linear_top1"] + 3.5} for r in late]  # no cost against its baseline
    assert "switch-from-18-of-120-costs" in checks.failures(headroom.CHECKS, switch_time.facts(base, early + even),
                                                          *names)
    spread = {**f, "switch_from_18_of_120_crowd_word": "spread"}
    assert checks.failures(headroom.CHECKS, spread, "switch-from-18-of-120-does-not-crowd") == {}
    for word in ("crowds", "mixed", "undecided"):
        crowded = {**f, "switch_from_18_of_120_crowd_word": word}
        assert "switch-from-18-of-120-does-not-crowd" in checks.failures(headroom.CHECKS, crowded,
                                                                       "switch-from-18-of-120-does-not-crowd")


def test_the_240_epoch_switch_is_read_at_its_seeds_against_the_time_lefts_predicted_gain():
    """At its five planned seeds the switch at epoch 9 of 240 holds zero and lies below the +3 that E2 (the time
    left) predicted; the held-back arm is short of its seeds until its runs are stored. Each check fails otherwise."""
    base = [{"setting": f"baseline {n}", "seed": s, "linear_top1": 60.0 + s} for n in (120, 240) for s in range(5)]
    spread = [{"setting": "+both from 9 of 240", "seed": s, "linear_top1": 60.0 + s + d}
              for s, d in enumerate((-9.0, 2.0, -4.0, -8.0, 1.0))]
    names = ("switch-from-9-of-240-holds-zero-at-its-seeds", "switch-from-9-of-240-below-the-time-lefts-gain",
             "switch-held-9-of-120-short-of-its-seeds")
    f = switch_time.facts(base, spread)
    assert checks.failures(headroom.CHECKS, f, *names) == {}
    four = switch_time.facts(base, spread[:4])  # short of its seeds: neither verdict binds
    assert set(checks.failures(headroom.CHECKS, four, *names[:2])) == set(names[:2])
    near = [{**r, "linear_top1": r["linear_top1"] + 5.0} for r in spread]  # its interval reaches past +3
    assert set(checks.failures(headroom.CHECKS, switch_time.facts(base, near), *names)) == {names[1]}
    costs = [{**r, "linear_top1": r["linear_top1"] - 15.0} for r in spread]  # a cost: no longer holds zero
    assert set(checks.failures(headroom.CHECKS, switch_time.facts(base, costs), *names)) == {names[0]}
    held = [{**r, "setting": "+both held back from 9 of 120"} for r in spread]
    assert names[2] in checks.failures(headroom.CHECKS, switch_time.facts(base, spread + held), names[2])


def test_the_held_back_arm_is_read_against_the_same_switch_without_its_gate():
    """The held-back arm (issue 66's E3 arm, ft.pos_gate) at its planned seeds: it costs against its baseline, still
    crowds, and crowds and costs less than the ungated switch at the same step, paired by seed; each check fails when
    the runs or the crowding say otherwise."""
    base = [{"setting": "baseline 120", "seed": s, "linear_top1": 60.0 + s} for s in range(5)]
    ungated = [{"setting": "+both from 9 of 120", "seed": s, "linear_top1": 48.0 + s + 0.5 * (s % 2)} for s in range(5)]
    held = [{"setting": "+both held back from 9 of 120", "seed": s, "linear_top1": 52.0 + s - 0.3 * (s % 2)}
            for s in range(5)]
    names = ("switch-held-9-of-120-costs", "switch-held-9-of-120-crowds", "switch-held-crowds-and-costs-less-than-ungated")
    crowding = {"switch_held_9_of_120_crowd_ft": "0.10", "switch_from_9_of_120_crowd_ft": "0.23",
                "switch_held_9_of_120_crowd_word": "crowds"}
    f = {**switch_time.facts(base, ungated + held), **crowding}
    assert (f["switch_held_diff"], f["switch_held_side"]) == ("+3.7 ± 0.5", "gains")
    assert checks.failures(headroom.CHECKS, f, *names) == {}
    assert checks.failures(headroom.CHECKS, {**f, "switch_held_9_of_120_crowd_ft": "0.25"}, names[2])
    assert checks.failures(headroom.CHECKS, {**f, "switch_held_9_of_120_crowd_word": "spread"}, names[1])
    same = [{**r, "linear_top1": r["linear_top1"] - 4.0} for r in held]  # no better than the ungated arm
    assert set(checks.failures(headroom.CHECKS, {**switch_time.facts(base, ungated + same), **crowding},
                               *names)) == {names[2]}
    free = [{**r, "linear_top1": r["linear_top1"] + 9.0} for r in held]  # no cost against its baseline
    assert names[0] in checks.failures(headroom.CHECKS, {**switch_time.facts(base, ungated + free), **crowding},
                                       *names)
    four = {**switch_time.facts(base, ungated + held[:4]), **crowding}  # short of its seeds: no verdict binds
    assert set(checks.failures(headroom.CHECKS, four, names[0], names[2])) == {names[0], names[2]}


def test_task_images_draw_the_named_classes_in_their_fills_and_refuse_others():
    import matplotlib.pyplot as plt

    from ftcl_core.pages import headroom as headroom_figures
    from ftcl_core.shapes import make_shapes, shape_class_names

    fig = headroom_figures.task_images([0, 10, 20], columns=3, height=1.0)
    shown = [ax.images[0].get_array() for ax in fig.axes if ax.images]
    sample = make_shapes(30, size=32, seed=0, classes=30, clutter=1)  # the map's recipe
    for image, c in zip(shown, (0, 10, 20), strict=True):  # circle solid, outline, striped: each its class's image
        first = int((sample.labels == c).nonzero()[0, 0])
        assert (image == sample.images[first].permute(1, 2, 0).numpy()).all()
    assert shape_class_names(30)[10] == "outline " + shape_class_names(10)[0]
    plt.close(fig)
    assert len([ax for ax in headroom_figures.task_images().axes if ax.images]) == 30
    plt.close("all")
    for bad in ([30], [], [-1]):
        with pytest.raises(ValueError, match="name classes in 0..29"):
            headroom_figures.task_images(bad)
