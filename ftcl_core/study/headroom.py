"""The task with headroom and the length x start map on it (issue 50): facts and checks for chapter 11.

The shapes of chapters 4-9 saturate (97-98 % linear at 120-240 epochs), so a gain of the paper's size (5.8-6.7
points) cannot show there. The task here is the same recipe on 30 classes of shapes with one distractor shape an
image (``configs/cpu_headroom_moco_v1.yaml``), chosen without FT on the validation split
(``experiments/headroom/task_screen_v1.yaml``), then frozen; the map (``experiments/headroom/map_v1.yaml``) trains
five arms at 30, 120 and 240 epochs, five seeds each, paired by seed. :func:`task_facts` says whether the task meets
the aims set before it was chosen; :func:`map_facts` gives each arm's paired difference on both scales; the chapter's
words are bound to :data:`CHECKS` (with :mod:`ftcl_core.study.switch_time`'s, the experiment that separates the
crowding from the clock).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ftcl_core.runs import RunDir
from ftcl_core.study import experiment_file, store, switch_time
from ftcl_core.study.checks import failures
from ftcl_core.study.diagnosis import COMPARED, NOT_RUN, headroom_rows
from ftcl_core.study.headroom_task import ARMS, CROWDS, LENGTHS, MAP, crowding, run_metrics, setting, steps_per_epoch  # noqa: F401
from ftcl_core.study.results import verdicts
from ftcl_core.study.results.numbers import fixed, grouped, plus_minus, relation
from ftcl_core.study.results.paired import by_seed, mean_ci95, paired_records
from ftcl_core.study.results.verdicts import MIN_SEEDS

CHAPTER = experiment_file.ROOT / "book" / "src" / "11_headroom.py"  # the chapter whose words CHECKS bind
AIMS = {"gain": 20.0, "spread": 3.0, "images_per_half_point": 10, "longest": 90.0}  # issue 50, item 2


def load() -> tuple[list[dict], list[dict]]:
    """The map's rows (:func:`ftcl_core.study.diagnosis.headroom_rows`) and its runs' records: the committed runs
    (:data:`ftcl_core.study.experiment_file.STORED`, wherever ``FTCL_RUNS_ROOT`` points; nothing here trains)."""
    return headroom_rows("cpu", experiment_file.STORED), store.load_records(MAP, "cpu", experiment_file.STORED)


def stored_run(records: list[dict], name: str, seed: int) -> RunDir:
    """The run folder of the map's setting ``name`` (e.g. "baseline 120") and ``seed`` among ``records``
    (:func:`load`); a KeyError names what the records hold when it is not stored."""
    found = [r["dir"] for r in records if r["setting"] == name and r["seed"] == seed]
    if not found:
        raise KeyError(f"no stored run of {name!r}, seed {seed}; stored: {sorted({r['setting'] for r in records})}")
    return RunDir(found[0])


def task_facts(records: list[dict], test_images: int = 2000) -> dict:
    """Whether the task meets the aims set before it was chosen, from the map's baselines: at 30 epochs the mean
    linear readout ± 95 % interval (``baseline``), its seed-to-seed SD (``spread``), the random-init encoder's readout
    and the margin over it (``gain``); how many test images 0.5 point is; the longest length's baseline (``longest``:
    the mean over its ``longest_n`` stored seeds, "not run" until one is). Raw values for the checks: ``gain_value``,
    ``spread_value``, ``images``, ``longest_value`` (NaN until stored)."""
    base = [r for r in records if r["setting"] == setting("baseline", 30)]
    top1 = np.array([r["linear_top1"] for r in base], dtype=float)
    init = np.array([r["random_init_linear_top1"] for r in base], dtype=float)
    mean, ci = mean_ci95(list(top1)) if len(top1) else (math.nan, math.nan)
    spread = float(np.std(top1, ddof=1)) if len(top1) > 1 else math.nan
    gain = float(np.mean(top1 - init)) if len(top1) else math.nan
    longest = [r["linear_top1"] for r in records if r["setting"] == setting("baseline", LENGTHS[-1])]
    return {"baseline": plus_minus(mean, ci), "n_seeds": str(len(top1)), "spread": fixed(spread),
            "random_init": fixed(float(np.mean(init)) if len(init) else math.nan), "gain": fixed(gain, signed=True),
            "test_images": grouped(test_images), "half_point": str(int(test_images * 0.005)),
            "longest": fixed(float(np.mean(longest))) if longest else NOT_RUN, "longest_n": str(len(longest)),
            "gain_value": gain, "spread_value": spread, "images": test_images * 0.005,
            "longest_value": float(np.mean(longest)) if longest else math.nan}


def map_facts(rows: list[dict]) -> dict:
    """Each arm's paired comparison with its baseline at each length (``<arm>_<length>_...``): the difference in
    points ± 95 % interval (``diff``), the ratio of test errors (``errors``: FT's errors over the baseline's, the
    exponentiated mean paired log error ratio, with its interval), seeds (``n``) and verdict (``verdict``: on the
    paper's claim, on the scale that decided; "compared" where the paper claims nothing; "not run"). Raw values for
    the checks under the same names with ``_value``/``_ci``/``_word``; the kNN readout's difference and verdict
    (``knn``, ``knn_word``); each length's baseline (``baseline_<length>``,
    mean ± 95 % interval); ``pending``: the lengths with no stored comparison ("120 and 240")."""
    by_setting = {r["setting"]: r for r in rows}
    out: dict = {}
    for length in LENGTHS:
        base = by_setting.get(setting("baseline", length))
        out[f"baseline_{length}"] = plus_minus(_float(base["mean"]), _float(base["ci95"])) if _seeds(base) else NOT_RUN
        for arm in ARMS:
            r, key = by_setting.get(setting(arm, length)), f"{arm}_{length}"
            n = _seeds(r)
            word = r["verdict"] if r and n else NOT_RUN
            diff, ci = (_float(r["diff_mean"]), _float(r["diff_ci95"])) if n else (math.nan, math.nan)
            ler, ler_ci = (_float(r.get("log_error_ratio")), _float(r.get("log_error_ratio_ci95"))) if n else (
                math.nan, math.nan)
            out[f"{key}_diff"] = plus_minus(diff, ci, signed=True) if n else NOT_RUN
            out[f"{key}_errors"] = (f"{math.exp(ler):.2f}× ({math.exp(ler - ler_ci):.2f}–{math.exp(ler + ler_ci):.2f})"
                                    if n and math.isfinite(ler) and math.isfinite(ler_ci) else "")
            out[f"{key}_n"] = str(n)
            out[f"{key}_verdict"] = verdicts.row_label({**r, "verdict": word}) if r else word
            out[f"{key}_verdict_errors"] = (r.get("verdict_errors") or "") if r and n else NOT_RUN  # the other scale
            q = _float(r.get("q_value")) if r and n else math.nan  # Benjamini-Hochberg within the map (claims only)
            out[f"{key}_q"], out[f"{key}_verdict_bh"] = relation(q), (r.get("verdict_bh") or word) if r else word
            out[f"{key}_value"], out[f"{key}_ci"], out[f"{key}_word"], out[f"{key}_seeds"] = diff, ci, word, n
            knn = _float(r.get("knn_diff_mean")) if n else math.nan  # the kNN readout's difference, its own verdict
            out[f"{key}_knn"] = (plus_minus(knn, _float(r.get("knn_diff_ci95")), signed=True) if math.isfinite(knn)
                                 else "" if n else NOT_RUN)  # "": an arm the paper claims nothing of has no kNN claim
            out[f"{key}_knn_word"] = (r.get("knn_verdict") or "") if n else NOT_RUN
    for length in LENGTHS:  # the paired seeds of the length's arms: "3", or "3-4" where they differ
        lo, hi = min(out[f"{a}_{length}_seeds"] for a in ARMS), max(out[f"{a}_{length}_seeds"] for a in ARMS)
        out[f"seeds_{length}"], out[f"seeds_{length}_least"] = str(lo) if lo == hi else f"{lo}–{hi}", lo
    out["ceiling_binds"] = any(r.get("scale") == verdicts.ERRORS for r in rows)  # the error scale decided some row
    pending = [n for n in LENGTHS if not any(out[f"{a}_{n}_seeds"] for a in ARMS)]
    out["pending"] = " and ".join(str(n) for n in pending) or "none"  # the lengths with no stored comparison
    return out


def gap_facts(records: list[dict]) -> dict:
    """Whether the negatives add to a late start: +both from 30 % minus +pos alone from 30 %, paired by seed, at
    each length (``late_gap_<length>_diff``: mean ± 95 % interval in points, ``_n`` seeds; raw ``_value``, ``_ci``,
    ``_seeds``). A comparison the paper does not make (it starts +pos at the first step): compared, not claimed."""
    out: dict = {}
    for length in LENGTHS:
        gap = paired_records(records, setting("both_late", length), setting("pos_late", length))
        key = f"late_gap_{length}"
        out |= {f"{key}_diff": plus_minus(gap.mean, gap.ci95, signed=True) if gap.n else NOT_RUN,
                f"{key}_n": str(gap.n), f"{key}_value": gap.mean, f"{key}_ci": gap.ci95, f"{key}_seeds": gap.n}
    return out


def seed_pairs(records: list[dict], length: int) -> list[list[str]]:
    """The late starts at ``length`` epochs seed by seed, for each seed with a stored baseline: the seed, the
    baseline's linear readout, then +both from 30 % and +pos alone from 30 %, each with its difference from that
    baseline (signed; "" where the arm is not stored)."""
    base = by_seed(records, setting("baseline", length))
    arms = [by_seed(records, setting(arm, length)) for arm in ("both_late", "pos_late")]
    out = []
    for seed in sorted(base):
        row = [str(seed), fixed(base[seed])]
        for ft in arms:
            row += [fixed(ft[seed]), fixed(ft[seed] - base[seed], signed=True)] if seed in ft else ["", ""]
        out.append(row)
    return out


def _switch(arm: str, length: int) -> int:
    """The epoch FT switches on in ``arm`` at ``length`` epochs (0 from the first step, else 30 % of the run)."""
    return length * 3 // 10 if arm.endswith("_late") else 0


def crowding_facts(metrics: Mapping[str, Mapping[int, Mapping[str, np.ndarray]]], tail: int = 100) -> dict:
    """Whether FT crowds the images together when it switches on (chapter 6's mechanism): for each arm and length,
    over the seeds both it and its baseline hold, raw Mean(neg) (a query's mean score against the queue, eq. 1, Supp
    D) averaged over the first tenth of the run from the epoch FT switches on, for the arm and its baseline over the
    same steps (``crowd_<arm>_<length>_ft``, ``_base``), and over the last ``tail`` steps (``_end_ft``,
    ``_end_base``); the means are over seeds, 2 decimals; ``_n`` seeds (raw ``_seeds``). ``_word``: "crowds" when the
    arm's first-tenth mean exceeds its baseline's by more than :data:`CROWDS` in every seed, "spread" when by less
    in every seed, "undecided" below MIN_SEEDS seeds; ``_end_word`` the same over the last steps. ``metrics``: a
    setting to ``{seed: run metrics}`` (:func:`run_metrics`)."""
    out: dict = {"crowds": f"{CROWDS:.2f}"}
    for length in LENGTHS:
        base = metrics.get(setting("baseline", length), {})
        for arm in ARMS:
            runs, key = metrics.get(setting(arm, length), {}), f"crowd_{arm}_{length}"
            seeds = sorted(set(runs) & set(base))
            out |= crowding(key, {s: (runs[s], base[s]) for s in seeds}, _switch(arm, length), length, tail)
    # the clock beside the crowding (issue 66): the step each decided cell that extrapolates positives switches FT
    # on at, crowding or not (+neg alone never crowds)
    per_epoch, clock = steps_per_epoch(), {"crowds": [], "spread": []}
    for length in LENGTHS:
        for arm in ("both", "both_late", "pos_late"):
            if out[f"crowd_{arm}_{length}_word"] in clock:
                clock[out[f"crowd_{arm}_{length}_word"]].append(_switch(arm, length) * per_epoch)
    out["crowd_clock_latest"] = max(clock["crowds"], default=-1)  # the latest switch step of a cell that crowds
    out["spread_clock_earliest"] = min(clock["spread"], default=-1)  # the earliest of a cell that does not
    out["crowd_clock_latest_steps"] = grouped(out['crowd_clock_latest'])
    out["spread_clock_earliest_steps"] = grouped(out['spread_clock_earliest'])
    return out


def neg_curves(metrics: Mapping[str, Mapping[int, Mapping[str, np.ndarray]]], length: int,
               arms: tuple[str, ...] = ("baseline", "both", "both_late")) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Raw Mean(neg) through training at ``length`` epochs, per epoch, averaged over each setting's stored seeds:
    ``{arm: (epochs, means)}`` for the ``arms`` stored (``baseline`` included)."""
    out = {}
    for arm in arms:
        runs = list(metrics.get(setting(arm, length), {}).values())
        if runs:
            epochs = np.arange(length)
            per_run = [[np.mean(np.asarray(m["neg_mean"])[np.asarray(m["epoch"]) == e]) for e in epochs] for m in runs]
            out[arm] = (epochs, np.mean(per_run, axis=0))
    return out


def facts(rows: list[dict], records: list[dict], metrics: Mapping | None = None,
          switch_records: list[dict] | None = None) -> dict:
    """Every fact :data:`CHECKS` reads: :func:`task_facts`, :func:`map_facts`, :func:`gap_facts`,
    :func:`crowding_facts` (on ``metrics``, loaded from the records' run folders when not given) and
    :func:`ftcl_core.study.switch_time.facts` (on ``switch_records``, the stored runs of its file when not given), the seeds
    the map plans (``planned_seeds``; raw ``planned``) and the median minutes a stored baseline run of each length took
    (``minutes_<length>``: wall time, one CPU thread here)."""
    planned = len(experiment_file.Experiment.load(MAP).seeds)
    minutes = {}  # what a baseline run of each length took here: the median wall time of the stored ones
    for length in LENGTHS:
        walls = [r["wall_s"] / 60 for r in records if r["setting"] == setting("baseline", length) and "wall_s" in r]
        minutes[f"minutes_{length}"] = fixed(float(np.median(walls)), 0) if walls else NOT_RUN
    crowding = crowding_facts(run_metrics(records) if metrics is None else metrics)
    switch = switch_time.facts(records, store.load_records(switch_time.SWITCH, "cpu", experiment_file.STORED)
                               if switch_records is None else switch_records)
    return {**task_facts(records), **map_facts(rows), **gap_facts(records), **crowding, **switch, **minutes,
            "planned_seeds": str(planned), "planned": planned}


def paper_facts(example_baseline: float = 98.0) -> dict:
    """The paper's effects the map's claims carry (:func:`ftcl_core.study.experiment_file.Experiment.claims_of`), as the
    chapter quotes them: per arm the effect in points (``<arm>_paper``), its two readouts and their errors and error
    ratio (``<arm>_paper_ref``, ``_arm``, ``_err_ref``, ``_err_arm``, ``_ratio``); the steps of a run of each length
    (``steps_30``, ``steps_120``, ``steps_240``); and the ceiling on an example baseline (eq.: ``e = 100 - top-1``): a baseline at
    ``example_baseline`` % with the paper's +both error ratio reads ``example_ft`` %, a gain of ``example_gain``
    points where the paper's is ``both_paper``."""
    exp = experiment_file.Experiment.load(MAP)
    out: dict = {}
    for arm in ("both", "both_late", "neg"):
        claim = next(c for c in exp.claims_of(setting(arm, 30)) if c.reference == setting("baseline", 30))
        ref, top = claim.paper
        out |= {f"{arm}_paper": fixed(claim.effect, signed=True), f"{arm}_paper_ref": f"{ref:.2f}",
                f"{arm}_paper_arm": f"{top:.2f}", f"{arm}_paper_err_ref": f"{100 - ref:.2f}",
                f"{arm}_paper_err_arm": f"{100 - top:.2f}",
                f"{arm}_paper_ratio": f"{math.exp(claim.paper_log_error_ratio):.2f}×"}
    cfg = experiment_file.resolve(exp.base["cpu"], exp.settings[setting("baseline", 30)], "cpu")
    ratio = math.exp(next(c for c in exp.claims_of(setting("both", 30))).paper_log_error_ratio)
    ft = 100 - (100 - example_baseline) * ratio
    steps = {f"steps_{n}": grouped(cfg.data.n_train // cfg.train.batch_size * n) for n in LENGTHS}
    return {**out, **steps,
            "example_baseline": fixed(example_baseline, 0), "example_ft": fixed(ft, 1),
            "example_gain": fixed(ft - example_baseline, 1, signed=True)}


def _float(x) -> float:
    return math.nan if x in ("", None) else float(x)


def _seeds(row: dict | None) -> int:
    """A map row's paired seeds (0 for a setting with no row or a blank count)."""
    return int(row["n_seeds"]) if row and row["n_seeds"] not in ("", None) else 0


def _too_few(f: Mapping, *keys: str) -> str | None:
    """Why a check cannot decide yet: one of ``keys`` (each a fact prefix with ``<key>_seeds``) holds fewer than
    :data:`MIN_SEEDS` paired seeds (undecided); None when each holds enough."""
    few = [f"{k}: {f[f'{k}_seeds']} paired seed(s), undecided" for k in keys if f[f"{k}_seeds"] < MIN_SEEDS]
    return ", ".join(few) or None


def _side(key: str, sign: int):
    """The arm ``key`` (``<arm>_<length>``) costs readout (``sign`` -1) or gains it (+1): 3 or more paired seeds and
    an interval wholly on that side of 0 (a claim's verdict on that side, on the scale that decided it)."""
    def check(f: Mapping) -> str | None:
        if few := _too_few(f, key):
            return few
        if f[f"{key}_word"] == COMPARED:
            lo, hi = f[f"{key}_value"] - f[f"{key}_ci"], f[f"{key}_value"] + f[f"{key}_ci"]
            return None if (hi < 0 if sign < 0 else lo > 0) else f"{key}: {f[f'{key}_diff']} does not exclude 0"
        return None if verdicts.side(f[f"{key}_word"]) == sign else f"{key}: {f[f'{key}_word']}"
    return check


def _same_cost(a: str, b: str):
    """Arms ``a`` and ``b`` cost alike: each interval holds the other's mean."""
    def check(f: Mapping) -> str | None:
        va, ca, vb, cb = (f[f"{a}_value"], f[f"{a}_ci"], f[f"{b}_value"], f[f"{b}_ci"])
        if not all(math.isfinite(v) for v in (va, ca, vb, cb)):
            return f"{a} or {b} not stored"
        return None if abs(va - vb) <= min(ca, cb) else f"{a} {f[f'{a}_diff']} and {b} {f[f'{b}_diff']} differ"
    return check


def _word(key: str, *words: str):
    """The arm ``key``'s verdict is one of ``words`` ("not run" and "undecided" are words too)."""
    def check(f: Mapping) -> str | None:
        return None if f[f"{key}_word"] in words else f"{key}: {f[f'{key}_word']}, not {' or '.join(words)}"
    return check


def _pending(length: int, *arms: str):
    """None of ``arms`` (every arm of :data:`ARMS` when none is named) at ``length`` epochs has the seeds a verdict
    needs yet: the text says they are still training."""
    def check(f: Mapping) -> str | None:
        done = [a for a in arms or ARMS if f[f"{a}_{length}_seeds"] >= MIN_SEEDS]
        return f"{', '.join(done)} at {length} epochs now hold {MIN_SEEDS}+ seeds: report them" if done else None
    return check


def _open_gap(length: int):
    """The negatives' share of the late start at ``length`` epochs is open: 3 or more paired seeds and an interval
    that holds 0."""
    def check(f: Mapping) -> str | None:
        key = f"late_gap_{length}"
        if few := _too_few(f, key):
            return few
        lo, hi = f[f"{key}_value"] - f[f"{key}_ci"], f[f"{key}_value"] + f[f"{key}_ci"]
        return None if lo <= 0 <= hi else f"{key}: {f[f'{key}_diff']} excludes 0"
    return check


def _gap_above(length: int):
    """The negatives add to the late start at ``length`` epochs: +both from 30 % minus +pos alone from 30 %, 3 or
    more paired seeds, an interval wholly above 0."""
    def check(f: Mapping) -> str | None:
        key = f"late_gap_{length}"
        if few := _too_few(f, key):
            return few
        return None if f[f"{key}_value"] - f[f"{key}_ci"] > 0 else f"{key}: {f[f'{key}_diff']} does not exclude 0"
    return check


def _costs_less(a: str, b: str):
    """Arm ``a`` costs less than arm ``b``: 3 or more paired seeds each, ``a``'s interval wholly above ``b``'s."""
    def check(f: Mapping) -> str | None:
        if few := _too_few(f, a, b):
            return few
        lo_a, hi_b = f[f"{a}_value"] - f[f"{a}_ci"], f[f"{b}_value"] + f[f"{b}_ci"]
        return None if lo_a > hi_b else f"{a} {f[f'{a}_diff']} overlaps {b} {f[f'{b}_diff']}"
    return check


def _plan(length: int, full: bool):
    """Every arm at ``length`` epochs holds the paired seeds the map plans (``full``), or some arm holds fewer (not
    ``full``: the text says their numbers may still move)."""
    def check(f: Mapping) -> str | None:
        least, planned = f[f"seeds_{length}_least"], f["planned"]
        if (least >= planned) == full:
            return None
        return f"seeds_{length}_least: {least} of {planned} planned"
    return check


def _aim(name: str):
    def check(f: Mapping) -> str | None:
        if name == "longest" and not math.isfinite(f["longest_value"]):
            return f"no {LENGTHS[-1]}-epoch baseline is stored"
        ok = {"gain": f["gain_value"] >= AIMS["gain"], "spread": f["spread_value"] <= AIMS["spread"],
              "images": f["images"] >= AIMS["images_per_half_point"],
              "longest": f["longest_value"] <= AIMS["longest"]}[name]
        return None if ok else f"the aim on {name} is missed"
    return check


def _crowding_tracks_cost(f: Mapping) -> str | None:
    """Where an arm that extrapolates positives costs readout (interval wholly below 0, 3 or more paired seeds) it
    crowds the images in the first tenth after FT switches on (:func:`crowding_facts`); where it gains (wholly above
    0) it does not; and the map holds at least one of each."""
    costs, pays, bad = 0, 0, []
    for length in LENGTHS:
        for arm in ("both", "both_late", "pos_late"):
            key, crowd = f"{arm}_{length}", f"crowd_{arm}_{length}"
            if f[f"{key}_seeds"] < MIN_SEEDS or f[f"{crowd}_seeds"] < MIN_SEEDS:
                continue
            lo, hi = f[f"{key}_value"] - f[f"{key}_ci"], f[f"{key}_value"] + f[f"{key}_ci"]
            if hi < 0:
                costs += 1
                bad += [] if f[f"{crowd}_word"] == "crowds" else [f"{key} costs but {f[f'{crowd}_word']}"]
            elif lo > 0:
                pays += 1
                bad += [] if f[f"{crowd}_word"] == "spread" else [f"{key} gains but {f[f'{crowd}_word']}"]
    if not (costs and pays):
        return f"decided: {costs} costing, {pays} gaining arm(s)"
    return "; ".join(bad) or None


def _negatives_never_crowd(f: Mapping) -> str | None:
    """+neg alone crowds the images at no length where its seeds decide (:func:`crowding_facts`: "spread"), and
    some length decides."""
    words = [f[f"crowd_neg_{n}_word"] for n in LENGTHS if f[f"crowd_neg_{n}_seeds"] >= MIN_SEEDS]
    if not words:
        return "no length holds 3 paired seeds of +neg alone"
    return None if set(words) == {"spread"} else f"+neg alone reads {words}"


def _crowding_fades(length: int):
    """From the first step at ``length`` epochs the crowding is gone by the end (the last steps' Mean(neg) within
    :data:`CROWDS` of the baseline's in every seed) while the cost stays (interval wholly below 0)."""
    def check(f: Mapping) -> str | None:
        key, crowd = f"both_{length}", f"crowd_both_{length}"
        if few := _too_few(f, key, crowd):
            return few
        if f[f"{crowd}_end_word"] != "spread":
            return f"{crowd}: the last steps read {f[f'{crowd}_end_word']}"
        return None if f[f"{key}_value"] + f[f"{key}_ci"] < 0 else f"{key}: {f[f'{key}_diff']} does not exclude 0"
    return check


CHECKS = {
    "aim-gain-met": _aim("gain"),
    "aim-spread-met": _aim("spread"),
    "aim-images-met": _aim("images"),
    "aim-longest-met": _aim("longest"),
    "first-step-costs-at-30": _side("both_30", -1),
    "late-start-costs-at-30": _side("both_late_30", -1),
    "late-positive-alone-costs-at-30": _side("pos_late_30", -1),
    "positive-mixing-carries-the-late-cost": _same_cost("pos_late_30", "both_late_30"),
    "negatives-share-of-the-late-cost-open-at-30": _open_gap(30),
    "negatives-alone-not-the-papers-size-at-30": _word("neg_30", verdicts.NO_EFFECT, verdicts.OPPOSITE),
    "first-step-costs-at-120": _side("both_120", -1),
    "late-start-gains-at-120": _side("both_late_120", +1),
    "late-start-smaller-at-120": _word("both_late_120", verdicts.SMALLER),
    "late-start-costs-less-at-30": _costs_less("both_late_30", "both_30"),
    "120-holds-the-planned-seeds": _plan(120, full=True),
    "negatives-alone-not-the-papers-size-at-120": _word("neg_120", verdicts.NO_EFFECT),
    "late-positive-alone-gains-at-120": _side("pos_late_120", +1),
    "negatives-share-of-the-late-gain-open-at-120": _open_gap(120),
    "the ceiling never binds on the map": lambda f: "the error scale decided a row" if f["ceiling_binds"] else None,
    "240-pending": _pending(240),
    "late-start-gains-at-240": _side("both_late_240", +1),
    "late-start-matches-at-240": _word("both_late_240", verdicts.MATCHES),
    "late-start-larger-on-errors-at-240": lambda f: None if f["both_late_240_verdict_errors"] == verdicts.LARGER else (
        f"both_late_240 on the error scale: {f['both_late_240_verdict_errors']}, not {verdicts.LARGER}"),
    "first-step-costs-at-240": _side("both_240", -1),
    "240-pending-but-the-late-start": _pending(240, "both", "neg", "pos_late"),
    "late-positive-alone-gains-at-240": _side("pos_late_240", +1),
    "negatives-add-to-the-late-gain-at-240": _gap_above(240),
    "negatives-alone-not-the-papers-size-at-240": _word("neg_240", verdicts.NO_EFFECT),
    "240-short-of-the-planned-seeds": _plan(240, full=False),
    "crowding-goes-with-the-cost": _crowding_tracks_cost,
    # the confound (issue 66): every cell that crowds switches FT on earlier in its run's steps than every cell
    # that does not, so the map cannot tell the crowding from the clock
    "crowding-confounded-with-the-clock": lambda f: None if 0 <= f["crowd_clock_latest"] < f["spread_clock_earliest"]
    else (f"a cell that crowds switches on at step {f['crowd_clock_latest']}, one that does not at "
          f"{f['spread_clock_earliest']}: the map itself separates the crowding from the clock"),
    "first-step-crowding-fades-at-120": _crowding_fades(120),
    **switch_time.CHECKS,
    "negatives-alone-never-crowd": _negatives_never_crowd,
}


def bound_failures(facts: Mapping, chapter: str | None = None) -> dict[str, str]:
    """The checks of :data:`CHECKS` that chapter 11 names (``chapter``: its source, :data:`CHAPTER` by default) and
    that fail on ``facts``. A check written ahead of its runs (a length still training) binds no words until the
    chapter names it, so it holds back nothing (``tools/headroom_map.sh`` commits a landed run only when this is
    empty)."""
    src = CHAPTER.read_text() if chapter is None else chapter
    return failures(CHECKS, facts, *(name for name in CHECKS if f'"{name}"' in src))
