"""The facts and checks of ft.start=auto against its baselines (ftcl_core.study.auto_start), on fabricated records."""

from ftcl_core.study import auto_start
from ftcl_core.study.checks import failures


def records(diffs: dict[str, list[float]]) -> dict[str, list[dict]]:
    """Every file of auto_start.SETTINGS with, for each setting key in ``diffs``, an auto arm that reads ``diffs[key][seed]``
    above its baseline (no run folders: the switch epochs are not known)."""
    out: dict[str, list[dict]] = {s.file: [] for s in auto_start.SETTINGS} | {s.fixed_file: [] for s in auto_start.SETTINGS}
    for s in auto_start.SETTINGS:
        for seed, d in enumerate(diffs.get(s.key, [])):
            out[s.file] += [{"setting": s.baseline, "seed": seed, "linear_top1": 50.0 + seed},
                            {"setting": s.auto, "seed": seed, "linear_top1": 50.0 + seed + d}]
    return out


def test_auto_never_costs_holds_until_a_decided_setting_reads_a_cost():
    f = auto_start.facts(records({"map_120": [4.0, 5.0, 6.0], "fmnist_30": [0.1, -0.2, 0.3]}))
    assert (f["map_120_side"], f["fmnist_30_side"], f["map_240_side"]) == ("gains", "neither", "undecided")
    assert f["map_120_diff"] == "+5.0 ± 2.5" and f["decided"] == "2"
    assert failures(auto_start.CHECKS, f, "auto-never-costs") == {}
    assert "map_240" in failures(auto_start.CHECKS, f, "auto-every-setting-holds-its-seeds")["auto-every-setting-holds-its-seeds"]
    every = auto_start.facts(records({s.key: [1.0, 2.0, 3.0] for s in auto_start.SETTINGS}))
    assert failures(auto_start.CHECKS, every, "auto-every-setting-holds-its-seeds") == {}
    costs = auto_start.facts(records({"map_120": [4.0, 5.0, 6.0], "shapes_30": [-2.0, -3.0, -2.5]}))
    assert "auto-never-costs" in failures(auto_start.CHECKS, costs, "auto-never-costs")
    two_seeds = auto_start.facts(records({"shapes_30": [-2.0, -3.0]}))  # below 3 seeds: undecided, not a cost
    assert failures(auto_start.CHECKS, two_seeds, "auto-never-costs") == {}


def test_the_table_names_each_setting_its_role_and_the_fixed_start_beside_it():
    rows = auto_start.rows(auto_start.facts(records({"map_30": [0.5, -0.5, 0.2]})))
    assert len(rows) == len(auto_start.SETTINGS) and rows[0][:2] == ["task with room, 30 epochs", "chosen on"]
    assert rows[2][1] == "held out" and rows[0][5] == "3"


def test_no_gain_where_the_fixed_start_gains_holds_only_while_auto_holds_zero_and_the_fixed_start_gains():
    name = "auto-no-gain-where-the-fixed-start-gains-on-fashion-mnist"
    fm = next(s for s in auto_start.SETTINGS if s.key == "fmnist_30")

    def with_fixed(auto: list[float], fixed: list[float]) -> dict:
        rec = records({"fmnist_30": auto})
        rec[fm.fixed_file] = [r for seed, d in enumerate(fixed) for r in (
            {"setting": fm.fixed_baseline, "seed": seed, "linear_top1": 80.0 + seed},
            {"setting": fm.fixed, "seed": seed, "linear_top1": 80.0 + seed + d})]
        return auto_start.facts(rec)

    assert failures(auto_start.CHECKS, with_fixed([0.1, -0.2, 0.3], [0.7, 0.8, 0.9]), name) == {}
    assert name in failures(auto_start.CHECKS, with_fixed([1.0, 1.2, 1.1], [0.7, 0.8, 0.9]), name)  # auto gains too
    assert name in failures(auto_start.CHECKS, with_fixed([0.1, -0.2, 0.3], [0.7, -0.8, 0.2]), name)  # the fixed start holds 0


def test_switching_before_30_percent_of_120_epochs_fails_once_a_run_switches_outside_that_span():
    name = "auto-switches-before-30-percent-of-120-epochs"
    base = {"shapes_120_switched": "22, 26, 25"}
    assert failures(auto_start.CHECKS, base, name) == {}
    assert name in failures(auto_start.CHECKS, {"shapes_120_switched": "22, 40, 25"}, name)  # past the fixed start
    assert name in failures(auto_start.CHECKS, {"shapes_120_switched": "9, 26, 25"}, name)  # within the first tenth
