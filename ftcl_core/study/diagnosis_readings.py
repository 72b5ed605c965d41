"""What chapter 7's pages (and chapter 5) say of the diagnosis' rows: their tables' arrays, the facts they glue
(numbers formatted once) and the checks that bind their words (:data:`CHECKS`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ftcl_core.runs import RunDir, config_digest
from ftcl_core.study import experiment_file, readings, store, table_verdicts
from ftcl_core.study.curves import COLLAPSE_LEVEL, smooth  # noqa: F401  (one level for chapters 2, 6 and 7)
from ftcl_core.study.diagnosis import (
    RESOLUTION,
    _decided,
    chapter_records,
    gap_records,
    harder_by,
    harder_negatives,
    negative_rows,
    paired_comparison,
    relabel,
    same_run_gaps,
)
from ftcl_core.study.results import verdicts
from ftcl_core.study.results.numbers import fixed, plus_minus
from ftcl_core.study.results.paired import mean_ci95
from ftcl_core.study.results.verdicts import MIN_SEEDS
from ftcl_core.study.signatures import volatility

# --- chapter 7's tables and sentences, so that the chapter holds narrative and calls --------------------------------

def zero_crossing(x: np.ndarray, y: np.ndarray) -> float:
    """Where ``y`` first crosses zero upwards along ``x``, linearly interpolated (NaN if it never does): the
    measured attraction threshold of :func:`contraction_rate` curves."""
    sign = np.flatnonzero(np.diff(np.sign(y)) > 0)
    if not sign.size:
        return math.nan
    i = sign[0]
    return float(np.interp(0, y[i:i + 2], x[i:i + 2]))


EARLY_STEPS, EARLY_WINDOW, SETTLED_FROM = 400, 5, 100  # 07b's figure: the first 400 steps, a 5-step moving average


@functools.lru_cache(maxsize=64)
def _stored_metrics(run_dir: str) -> dict[str, np.ndarray]:
    """A stored run's per-step metrics, read once per process (07b reads the first-step pairs for its facts, every
    seed, and again for its figure, seed 0). The stored runs do not change while a page reads them."""
    return RunDir(run_dir).load_metrics()


def early_metrics(records: Mapping[str, list[dict]], seed: int | None = None) -> dict[str, dict]:
    """The per-step metrics of the first-step pairs that recorded ρ (07b), keyed ``"<version> <setting>"`` for
    ``records`` keyed by version (``{"v1": [...], "v2": [...]}``), every seed (keyed ``... seed <n>``) or ``seed``'s."""
    out = {}
    for version, rows in records.items():
        for r in rows:
            if seed is not None and r["seed"] != seed:
                continue
            m = _stored_metrics(str(r["dir"]))
            if "rho" in m:
                out[f"{version} {r['setting']}" + ("" if seed is not None else f" seed {r['seed']}")] = m
    return out


def early_rho_facts(metrics: Mapping[str, Mapping[str, np.ndarray]], band: tuple[float, float]) -> dict:
    """Where the first steps of the first-step pairs sit against the band of attraction thresholds (07b's figure):
    for each run (``metrics`` keyed by a name holding ``baseline`` for the baselines) the first step whose smoothed ρ
    passes above the band's top, and its smoothed Mean(neg) averaged over steps ``SETTLED_FROM`` to ``EARLY_STEPS``.
    Facts ``from``, ``steps`` (the window), ``ft_above_lo``/``_hi`` (steps), ``ft_neg_lo``/``_hi``,
    ``base_neg_lo``/``_hi``, ``n_ft``, ``n_base``;
    raw values under ``_value``."""
    firsts: dict[str, list[float]] = {"ft": [], "base": []}
    negs: dict[str, list[float]] = {"ft": [], "base": []}
    for name, m in metrics.items():
        arm = "base" if "baseline" in name else "ft"
        rho = smooth(np.asarray(m["rho"][:EARLY_STEPS], dtype=float), EARLY_WINDOW)
        neg = smooth(np.asarray(m["neg_mean"][:EARLY_STEPS], dtype=float), EARLY_WINDOW)
        above = np.flatnonzero(rho > band[1])
        firsts[arm].append(float(m["step"][above[0]]) if above.size else math.inf)
        negs[arm].append(float(neg[SETTLED_FROM:].mean()))
    out: dict = {"n_ft": str(len(negs["ft"])), "n_base": str(len(negs["base"])), "from": str(SETTLED_FROM),
                 "steps": str(EARLY_STEPS)}
    for arm in ("ft", "base"):
        if negs[arm]:
            out[f"{arm}_above_lo_value"], out[f"{arm}_above_hi_value"] = min(firsts[arm]), max(firsts[arm])
            out[f"{arm}_neg_lo_value"], out[f"{arm}_neg_hi_value"] = min(negs[arm]), max(negs[arm])
            for key in ("above_lo", "above_hi"):
                v = out[f"{arm}_{key}_value"]
                out[f"{arm}_{key}"] = "never" if math.isinf(v) else str(int(v))
            for key in ("neg_lo", "neg_hi"):
                out[f"{arm}_{key}"] = fixed(out[f"{arm}_{key}_value"], 2)
    return out


def _ft_passes_the_band(f: dict) -> str | None:
    if not f.get("ft_above_hi_value") or math.isinf(f["ft_above_hi_value"]):
        return "an FT run's ρ never passes above the band in the steps shown"
    return None


def _ft_stays_crowded(f: dict) -> str | None:
    if "ft_neg_lo_value" not in f or "base_neg_hi_value" not in f:
        return "no FT run or no baseline to compare"
    return None if f["ft_neg_lo_value"] > f["base_neg_hi_value"] else (
        f"an FT run's Mean(neg) ({f['ft_neg_lo']}) is not above every baseline's ({f['base_neg_hi']})")


def same_class_share(records: list[dict]) -> float | None:
    """The queue's share of the query's own class, averaged over every step and run that recorded it
    (``stats.same_class=true``); None when none did."""
    shares = []
    for r in records:
        m = RunDir(r["dir"]).load_metrics()
        if "same_class" in m:
            shares.append(float(np.nanmean(m["same_class"])))
    return float(np.mean(shares)) if shares else None


def length_arms(records: list[dict], rows: list[dict]) -> tuple[list[int], dict[str, list[list[float]]], float]:
    """The inputs of :func:`ftcl_core.pages.result_figures.readout_by_length` from a length experiment's records and its
    :func:`length_rows`: the steps of each length, each arm's readouts per length, the random-init readout."""
    lengths = [r for r in rows if r["kind"] == "length"]
    arms = {name: [[r["linear_top1"] for r in records if r["setting"] == f"{setting} {row['epochs']}"]
                   for row in lengths] for name, setting in (("baseline", "baseline"), ("FT (+pos +neg)", "+both"))}
    random_init = [r["random_init_linear_top1"] for r in records if "random_init_linear_top1" in r]
    return [r["steps"] for r in lengths], arms, float(np.mean(random_init)) if random_init else math.nan


NEGATIVE_TABLES = {"plain": ("experiments/table7_ft_v1.yaml", ["v1 baseline", "v1 +neg"]),
                   "renorm": ("experiments/supp_f_renorm.yaml", ["baseline", "renorm neg"]),
                   "harder": ("experiments/supp_g_negatives.yaml",
                              ["baseline", "neg extrapolation", "hard Beta(2,1)", "hard Beta(5,2)"])}


def negative_comparisons(profile: str, root: str | Path | None = None) -> tuple[list[dict], dict]:
    """Supp F and Supp G read through what each does to the negatives the loss sees (:func:`negative_rows`), and
    the readout of re-normalised against plain mixed negatives, paired by seed (what :func:`renorm_facts` and
    :func:`harder_facts` read); ``root`` as in :func:`chapter_records`."""
    recs = {key: chapter_records(path, profile, names, root) for key, (path, names) in NEGATIVE_TABLES.items()}
    rows = negative_rows([
        ("mixed negatives (Table 7 +neg)", recs["plain"], "v1 baseline", "v1 +neg"),
        ("mixed, re-normalised (Supp F)", recs["renorm"], "baseline", "renorm neg"),
        ("extrapolated negatives (Supp G)", recs["harder"], "baseline", "neg extrapolation"),
        ("hard negatives Beta(2,1) (Supp G)", recs["harder"], "baseline", "hard Beta(2,1)"),
        ("hard negatives Beta(5,2) (Supp G)", recs["harder"], "baseline", "hard Beta(5,2)")])
    against = paired_comparison("re-normalised against plain mixed negatives",
                                relabel(recs["plain"], {"v1 +neg": "plain"})
                                + relabel(recs["renorm"], {"renorm neg": "re-normalised"}), "plain", "re-normalised")
    return rows, against


def volatility_rows(records: list[dict]) -> list[dict]:
    """Per setting of a momentum sweep (in the records' order), the mean over its seeds of the two swing numbers of
    :func:`ftcl_core.study.signatures.volatility`: the step-to-step change of Mean(neg) and the epoch-to-epoch change of the
    summed gradient norm (Figs 3-4's reading of collapse)."""
    out = []
    for setting in dict.fromkeys(r["setting"] for r in records):
        runs = [RunDir(r["dir"]) for r in records if r["setting"] == setting]
        pairs = [volatility(run.load_metrics()["neg_mean"], run.load_grad_norms()["per_epoch"]) for run in runs]
        out.append({"setting": setting, "n_seeds": len(pairs), "neg": float(np.mean([p[0] for p in pairs])),
                    "grad": float(np.mean([p[1] for p in pairs]))})
    return out


# --- facts and checks: what chapters 5 and 7 say of these rows, as named numbers and verdicts -------------------------
# Each *_facts function returns the strings a chapter glues into its authored Markdown (numbers formatted once) and,
# under names the glue skips (values that are not strings), the raw values :data:`CHECKS` read. A chapter runs the
# checks its words rest on with :func:`ftcl_core.study.checks.expect`.

def _pm(row: dict, digits: int = 1) -> str:
    return plus_minus(row["diff"], row["ci95"], digits, signed=True)


def comparison_facts(row: dict) -> dict:
    """A :func:`paired_comparison` row as facts: its paired difference ± 95 % interval (``diff``), its cost as a
    positive number (``cost``), seeds and verdict; ``n`` and ``side`` (the verdict's side of zero) for the checks."""
    return {"name": row["comparison"], "diff": _pm(row), "cost": plus_minus(-row["diff"], row["ci95"]),
            "n_seeds": str(row["n_seeds"]), "verdict": verdicts.row_label(row),
            "n": row["n_seeds"], "side": verdicts.side(row["verdict"]) if row["n_seeds"] else 0}


def _row_side(direction: int):
    def check(f: dict) -> str | None:
        if f["n"] < MIN_SEEDS:
            return f"{f['name']}: {f['n']} seed(s), undecided"
        return None if f["side"] == direction else f"{f['name']}: {f['verdict']}"
    return check


def switch_on_facts(starts: list[tuple[str, dict, dict]], level: float = 0.9) -> dict:
    """Table 6's starts (``(setting, table row, switch_on_state)`` triples, :func:`switch_on_rows`): per start
    (``start_<i>``: ``passed_<i>`` of ``n_<i>``, in order) how many seeds pass chapter 5's collapse level (Mean(neg) above
    ``level``) after FT switches on; the starts that cost linear readout (the row's verdict, 3 seeds: ``costly``)
    and those of them where some seed never passes the level (``partial``); over the costly starts, the seeds that
    pass and all their seeds (``costly_passed`` of ``costly_n``)."""
    passed = {s: sum(f is not None for f in st["steps_to_collapse"]) for s, _, st in starts}
    costly = [(s, st) for s, row, st in starts if _decided(row, -1)]
    partial = [s for s, st in costly if passed[s] < st["n_seeds"]]
    out = {"level": fixed(level, 1), "costly": ", ".join(s for s, _ in costly), "partial": ", ".join(partial),
           "costly_passed": str(sum(passed[s] for s, _ in costly)), "costly_n": str(sum(st["n_seeds"] for _, st in costly)),
           "starts": [s for s, _, _ in starts], "costly_starts": [s for s, _ in costly], "partial_starts": partial}
    for i, (s, _, st) in enumerate(starts):
        out[f"start_{i}"], out[f"passed_{i}"], out[f"n_{i}"] = s, str(passed[s]), str(st["n_seeds"])
    return out


def random_queue_facts(cfg, row: dict) -> dict:
    """The supplement's account of an early FT start ("FT in the Early Training Stage": a queue still holding its
    random initial vectors) against Table 6's runs: ``cfg`` is the config of the start tested (queue size, batch,
    steps per epoch, ``ft.start_epoch``) and ``row`` its Table 6 row against training without FT. ``fill``: the
    steps until the queue holds real keys only; ``switch``: the steps before FT switches on."""
    fill = math.ceil(cfg.moco.queue_size / cfg.train.batch_size)
    switch = cfg.ft.start_epoch * (cfg.data.n_train // cfg.train.batch_size)
    return {"queue": str(cfg.moco.queue_size), "fill": str(fill), "switch": str(switch),
            **(comparison_facts(row) if row["n_seeds"] else {"n": 0, "side": 0, "name": ""}),
            "seeds": table_verdicts._count(row["n_seeds"], "seed"), "real_keys": switch >= fill}


def baseline_facts(aims: list[dict], data: str = "shapes") -> dict:
    """The calibrated MoCo baselines FT is paired with against the bar this book sets for a baseline
    (:data:`ftcl_core.experiments.BASELINE_AIMS`; :func:`ftcl_core.experiments.baseline_aims` rows): per version
    (``v1_``, ``v2_``) the readout ± interval, seeds, gain over the random-init encoder and spread, and whether each
    aim is met; ``gain_aim``/``spread_aim`` the bar."""
    out: dict = {"gain_aim": fixed(table_verdicts.BASELINE_AIMS["gain"], 0),
                 "spread_aim": fixed(table_verdicts.BASELINE_AIMS["spread"], 0)}
    for a in (a for a in aims if a["data"] == data and a["setting"] in ("v1 baseline", "v2 baseline")):
        v = a["setting"].split()[0]
        out.update({f"{v}_readout": plus_minus(a["mean"], a["ci95"]), f"{v}_mean": fixed(a["mean"]),
                    f"{v}_seeds": table_verdicts._count(a["n_seeds"], "seed"), f"{v}_gain": fixed(a["gain"], signed=True),
                    f"{v}_spread": fixed(a["ci95"]), f"{v}_gain_met": a["gain_met"], f"{v}_spread_met": a["spread_met"]})
    order = readings.v2_against_v1([a for a in aims if a["data"] == data]).get(data)
    out["v2_below_v1"] = bool(order and order[1] < order[0])
    return out


def _baseline_met(v: str):
    def check(f: dict) -> str | None:
        if f"{v}_gain_met" not in f:
            return f"no {v} baseline stored"
        misses = [k for k in ("gain", "spread") if f[f"{v}_{k}_met"] is False]
        return f"{v} baseline misses the {' and '.join(misses)} aim" if misses else None
    return check


def _v2_misses_the_spread_only(f: dict) -> str | None:
    if "v2_gain_met" not in f:
        return "no v2 baseline stored"
    if f["v2_gain_met"] is False:
        return "v2 baseline misses the gain aim"
    return None if f["v2_spread_met"] is False else "v2 baseline meets the spread aim"


def capacity_facts(rows: list[dict]) -> dict:
    """The encoders of :func:`capacity_rows` as facts: per encoder with 3 paired seeds, in order (``name_<i>``,
    ``params_<i>`` in millions, ``diff_<i>``, ``verdict_<i>``); those with fewer (``open``) and none (``unrun``);
    the decided encoders' final effective ranks (FT's and the baselines' ranges), the smallest and largest of them
    and the largest's parameters as a multiple of the smallest's."""
    decided = [r for r in rows if r["n_seeds"] >= MIN_SEEDS]
    out: dict = {"n_decided": len(decided), "sides": [verdicts.side(r["verdict"]) for r in decided],
                 "open": ", ".join(f"{r['comparison']} ({r['n_seeds']} of {MIN_SEEDS})"
                                   for r in rows if 0 < r["n_seeds"] < MIN_SEEDS),
                 "unrun": ", ".join(r["comparison"] for r in rows if not r["n_seeds"]),
                 "n_open": sum(0 < r["n_seeds"] < MIN_SEEDS for r in rows), "n_unrun": sum(not r["n_seeds"] for r in rows)}
    for i, r in enumerate(decided):
        out.update({f"name_{i}": r["comparison"], f"params_{i}": f"{r['parameters'] / 1e6:.2f}",
                    f"diff_{i}": plus_minus(r["diff"], r["ci95"]), f"verdict_{i}": r["verdict"]})
    if decided:
        ft, base = [r["ft_erank"] for r in decided], [r["baseline_erank"] for r in decided]
        small, large = min(decided, key=lambda r: r["parameters"]), max(decided, key=lambda r: r["parameters"])
        out.update({"first": decided[0]["comparison"], "last": decided[-1]["comparison"],
                    "ft_erank_lo": fixed(min(ft)), "ft_erank_hi": fixed(max(ft)), "base_erank_lo": fixed(min(base)),
                    "base_erank_hi": fixed(max(base)), "small": small["comparison"], "large": large["comparison"],
                    "small_erank": fixed(small["ft_erank"]), "large_erank": fixed(large["ft_erank"]),
                    "param_ratio": f"{large['parameters'] / small['parameters']:.0f}",
                    "large_keeps_rank": large["ft_erank"] > 1.2 * small["ft_erank"]})
    return out


def _capacity_every_decided_costs(f: dict) -> str | None:
    if f["n_decided"] < 2:
        return f"{f['n_decided']} encoder(s) decided"
    return None if all(s < 0 for s in f["sides"]) else "a decided encoder does not cost readout"


def resolution_facts(row: dict) -> dict:
    """The width-16 pair at larger crops (:func:`resolution_row`) as facts, with the seeds paired so far, the
    experiment file (``where``) and its image and crop sizes in px (``image``, ``crop``)."""
    _, path, _, treated = RESOLUTION
    exp = experiment_file.Experiment.load(path)
    cfg = experiment_file.resolve(experiment_file.base_for(exp, "cpu"), exp.overrides(treated, exp.seeds[0]), "cpu")
    return {**comparison_facts(row), "min_seeds": str(MIN_SEEDS), "where": path, "image": str(cfg.data.image_size),
            "crop": str(cfg.augment.out_size)}


def device_gap_facts(length_records: list[dict], cpu_records: list[dict]) -> dict:
    """How far float rounding alone moves a run: the 30-epoch arms of the length experiment (mostly GPU) against
    the same configs and seeds of the recipe comparison (CPU), per pair whose two runs trained on different devices:
    how many pairs (``n``) and their absolute readout differences (``least``, ``most``, ``mean``)."""
    gaps = (same_run_gaps(length_records, "baseline 30", cpu_records, "baseline")
            + same_run_gaps(length_records, "+both 30", cpu_records, "+both"))
    return {"pairs": str(len(gaps)), "n": len(gaps), **({"least": fixed(min(gaps), 2), "most": fixed(max(gaps), 2),
                                                          "mean": fixed(float(np.mean(gaps)), 2)} if gaps else {})}


def twin_facts(a: list[dict], a_setting: str, b: list[dict], b_setting: str) -> dict:
    """Two stored sets of runs of one recipe and seeds (Table 1's m = 0.99 and Table 7's MoCo v1 baseline, say):
    their mean readouts over the seeds both hold with 95 % intervals, the largest per-seed gap, the machine each set
    trained on (:func:`ftcl_core.study.store.machine_kind`) and whether every pair shares its config
    (:func:`ftcl_core.runs.config_digest`). Facts ``a_mean``, ``b_mean``, ``a_ci``, ``b_ci``, ``ci`` (the narrower),
    ``gap``, ``most``, ``n``, ``a_machine``, ``b_machine``; raw values under ``_value``, ``same_config`` and
    ``machines_differ``."""
    left = {r["seed"]: r for r in a if r["setting"] == a_setting}
    right = {r["seed"]: r for r in b if r["setting"] == b_setting}
    seeds = sorted(set(left) & set(right))
    if not seeds:
        return {"n": "0", "n_value": 0}
    runs = {s: (RunDir(left[s]["dir"]), RunDir(right[s]["dir"])) for s in seeds}
    same = all(config_digest(x.load_config()) == config_digest(y.load_config()) for x, y in runs.values())
    machines = [(store.machine_kind(x), store.machine_kind(y)) for x, y in runs.values()]
    (am, ac), (bm, bc) = (mean_ci95([side[s]["linear_top1"] for s in seeds]) for side in (left, right))
    gaps = [abs(left[s]["linear_top1"] - right[s]["linear_top1"]) for s in seeds]
    names = [sorted({m[i].split("/", 1)[1] for m in machines}) for i in (0, 1)]
    return {"n": str(len(seeds)), "n_value": len(seeds), "a_mean": fixed(am), "b_mean": fixed(bm),
            "a_ci": fixed(ac), "b_ci": fixed(bc), "ci": fixed(min(ac, bc)), "gap": fixed(abs(am - bm)), "most": fixed(max(gaps)),
            "a_machine": " and ".join(names[0]), "b_machine": " and ".join(names[1]),
            "gap_value": abs(am - bm), "ci_value": min(ac, bc), "same_config": same,
            "machines_differ": all(x != y for x, y in machines)}


def _twins_differ_by_machine(f: dict) -> str | None:
    if not f["n_value"]:
        return "no seed holds both twins"
    return None if f["same_config"] and f["machines_differ"] else (
        "the twins' configs differ" if not f["same_config"] else "some pair trained on one kind of machine")


def renorm_facts(plain: dict, renorm: dict, against: dict) -> dict:
    """Supp F's re-normalisation reading on stored runs: ``plain`` and ``renorm`` are :func:`negative_rows` rows of
    interpolated negatives without and with re-normalisation against the same baseline, ``against`` the
    :func:`paired_comparison` of the readout, re-normalised against plain (the same seeds). ``wider``: the
    re-normalised mixes' spread beyond the plain ones' (each outside the other's 95 % interval); ``harder``:
    re-normalised mixes harder than the raw queue itself (:func:`harder_negatives`); ``narrower``: plain mixes'
    spread below the raw queue's (their ratio's 95 % interval under 1)."""
    n = min(plain["n_seeds"], renorm["n_seeds"], against["n_seeds"])
    out: dict = {"n": n}
    if n:
        out.update({"plain_shift": plus_minus(plain["neg_shift"], plain["neg_shift_ci95"], 3, signed=True),
                    "plain_spread": fixed(plain["neg_var_ratio"], 2), "renorm_spread": fixed(renorm["neg_var_ratio"], 2),
                    "renorm_shift": plus_minus(renorm["neg_shift"], renorm["neg_shift_ci95"], 3, signed=True),
                    "cost": plus_minus(-against["diff"], against["ci95"]), "against_diff": _pm(against),
                    "n_seeds": str(against["n_seeds"]), "plain_diff": _pm(plain),
                    "narrower": plain["neg_var_ratio"] + plain["neg_var_ratio_ci95"] < 1,
                    "wider": renorm["neg_var_ratio"] - renorm["neg_var_ratio_ci95"]
                    > plain["neg_var_ratio"] + plain["neg_var_ratio_ci95"],
                    "harder": bool(harder_negatives(renorm)), "against_side": verdicts.side(against["verdict"]),
                    "plain_side": verdicts.side(plain["verdict"])})
    return out


def _renorm_decided(f: dict) -> str | None:
    return None if f["n"] >= MIN_SEEDS else f"{f['n']} seed(s) of the two kinds of mixed negatives"


def _renorm_wider_not_harder(f: dict) -> str | None:
    if f["n"] < MIN_SEEDS:
        return "undecided"
    if not f["wider"]:
        return "the spreads do not differ"
    return "harder than the raw queue" if f["harder"] else None


def _mixing_narrows(f: dict) -> str | None:
    if f["n"] < MIN_SEEDS:
        return "undecided"
    return None if f["narrower"] else f"the mixes' spread is {f['plain_spread']} of the queue's, not clearly below it"


def _renorm_costs_yet_baseline_as_plain(f: dict) -> str | None:
    if f["n"] < MIN_SEEDS:
        return "undecided"
    bad = [] if f["against_side"] < 0 else ["re-normalised: no cost"]
    bad += [] if f["plain_side"] == 0 else ["plain mixing takes a side"]
    return "; ".join(bad) or None


HARDER_NEGATIVES = ("extrapolated negatives (Supp G)", "hard negatives Beta(2,1) (Supp G)",
                    "hard negatives Beta(5,2) (Supp G)")  # the rows of :func:`negative_comparisons` chapter 7 reads


def harder_facts(rows: list[dict]) -> dict:
    """Supp G's settings (:func:`negative_rows` rows, in :data:`HARDER_NEGATIVES`' order) as facts: per row
    (``_<i>``) how FT made the negatives harder than their queue (:func:`harder_by`: the mean raised, ``mean_<i>``;
    the spread widened, ``spread_<i>``, as ``x<ratio>``), the readout ± interval and verdict, and where the raw
    Mean(neg) ends; the baseline's raw Mean(neg) at the end (``base_final``); ``how``, per row, which of the two (the
    checks')."""
    out: dict = {"names": [r["comparison"] for r in rows],
                 "how": [tuple(h.split()[0] for h in harder_by(r)) for r in rows]}
    for i, r in enumerate(rows):
        if r["n_seeds"]:
            out.update({f"mean_{i}": f"{r['neg_shift']:+.2f}", f"spread_{i}": f"x{r['neg_var_ratio']:.2f}",
                        f"diff_{i}": _pm(r), f"verdict_{i}": r["verdict"], f"final_{i}": f"{r['final_neg_mean']:.2f}"})
    if rows and rows[0]["n_seeds"]:
        out["base_final"] = f"{rows[0]['baseline_final_neg_mean']:.2f}"
    return out


def _harder_as_written(f: dict) -> str | None:
    """Chapter 7's words: extrapolated negatives are harder by their spread alone, both hard-negative settings by
    their mean alone."""
    want = {HARDER_NEGATIVES[0]: ("spread",), HARDER_NEGATIVES[1]: ("mean",), HARDER_NEGATIVES[2]: ("mean",)}
    got = dict(zip(f["names"], f["how"]))
    bad = [f"{name}: harder by {', '.join(got.get(name, ())) or 'neither'}" for name, how in want.items()
           if got.get(name) != how]
    return "; ".join(bad) or None


SMALL_MOMENTUM = 0.9  # the paper's small momenta (its Figs 3-4): m <= 0.9; the large ones: 0.99 and above


def volatility_facts(rows: list[dict]) -> dict:
    """Which momentum swings most and least on each of :func:`volatility_rows`' two numbers (``neg_most``,
    ``neg_least``, ``grad_most``, ``grad_least``; settings such as ``m=0.9``), and the momenta behind them for the
    checks (the paper's reading: the small momenta, m <= 0.9, swing most). For the summed gradient norm, the small
    momenta's range of swings (``grad_small_lo``, ``grad_small_hi``), the large momenta's largest
    (``grad_large_hi``), and the smallest momentum (``grad_smallest``) with its swing (``grad_smallest_sd``)."""
    out: dict = {"n": len(rows)}
    for key in ("neg", "grad"):
        order = sorted(rows, key=lambda r: r[key])
        if order:
            out[f"{key}_most"], out[f"{key}_least"] = order[-1]["setting"], order[0]["setting"]
            out[f"{key}_most_m"] = float(order[-1]["setting"].removeprefix("m="))
    m = {r["setting"]: float(r["setting"].removeprefix("m=")) for r in rows}
    small = [r for r in rows if m[r["setting"]] <= SMALL_MOMENTUM]
    large = [r for r in rows if m[r["setting"]] > SMALL_MOMENTUM]
    if small and large:
        lo, hi, top = min(r["grad"] for r in small), max(r["grad"] for r in small), max(r["grad"] for r in large)
        smallest = min(small, key=lambda r: m[r["setting"]])
        out.update({"grad_small_lo": fixed(lo, 2), "grad_small_hi": fixed(hi, 2), "grad_large_hi": fixed(top, 2),
                    "grad_smallest": smallest["setting"].removeprefix("m="), "grad_smallest_sd": fixed(smallest["grad"], 2),
                    "grad_small_over_large": lo > top, "grad_smallest_calmest": smallest["grad"] == lo})
    return out


def _swings_most(key: str, small: bool):
    def check(f: dict) -> str | None:
        if not f["n"]:
            return "no stored runs of the momentum sweep"
        return None if (f[f"{key}_most_m"] <= 0.9) == small else f"{key} swings most at {f[f'{key}_most']}"
    return check


def _small_swing_more(f: dict) -> str | None:
    if "grad_small_over_large" not in f:
        return "no small and large momenta to compare"
    return None if f["grad_small_over_large"] else (
        f"a small momentum swings {f['grad_small_lo']}, a large one {f['grad_large_hi']}")


def _smallest_calmest(f: dict) -> str | None:
    if "grad_smallest_calmest" not in f:
        return "no small and large momenta to compare"
    return None if f["grad_smallest_calmest"] else (
        f"m = {f['grad_smallest']} swings {f['grad_smallest_sd']}, not the least of the small momenta ({f['grad_small_lo']})")


def _frozen_swings_most(f: dict) -> str | None:
    return None if f["n"] and f["neg_most_m"] == 1.0 else "Mean(neg) does not swing most at m = 1"


CHECKS = {
    # the verdict of one paired_comparison row (comparison_facts): chapter 7's readings of its tables
    "costs": _row_side(-1),
    "helps": _row_side(1),
    "cannot be told from zero": _row_side(0),
    # 07b's first steps (early_rho_facts)
    "FT's ρ passes above the band": _ft_passes_the_band,
    "FT's Mean(neg) stays above every baseline's once ρ has passed the band": _ft_stays_crowded,
    # Table 1's m = 0.99 and Table 7's baseline, one recipe on two machines (twin_facts)
    "the twins share config and seeds and differ by machine": _twins_differ_by_machine,
    "the twins' gap lies inside their intervals": lambda f: None if f["n_value"] and f["gap_value"] < f["ci_value"] else (
        f"gap {f.get('gap')} not inside the narrower interval ± {fixed(f.get('ci_value', math.nan))}"),
    # Table 6's starts (switch_on_facts)
    "an early start costs": lambda f: None if f["costly_starts"] else "no start costs linear readout significantly",
    "the collapse level does not separate the starts that lose": (
        lambda f: None if f["partial_starts"] else "every seed of every costly start passes the collapse level"),
    # the supplement's random queue (random_queue_facts)
    "the start sees real keys only": lambda f: None if f["real_keys"] else "FT switches on before the queue is full",
    # the baselines (baseline_facts)
    "v1 meets the bar": _baseline_met("v1"),
    "v2 misses the spread only": _v2_misses_the_spread_only,
    "v2 reads out below v1": lambda f: None if f["v2_below_v1"] else "MoCo v2's baseline does not read below v1's",
    # the network (capacity_facts)
    "every decided encoder costs": _capacity_every_decided_costs,
    "no encoder is undecided": lambda f: None if not f["n_open"] else f"undecided: {f['open']}",
    "an encoder is planned but not run": lambda f: None if f["n_unrun"] else "every planned encoder has run",
    "the largest encoder keeps no more rank": (
        lambda f: "the largest encoder keeps more rank" if f.get("large_keeps_rank", True) else None),
    # the resolution point (resolution_facts)
    "undecided": lambda f: None if 0 < f["n"] < MIN_SEEDS else f"{f['n']} paired seeds",
    # device rounding (device_gap_facts)
    "some pair trained on two devices": lambda f: None if f["n"] else "no pair differs by device",
    # Supp F and G (renorm_facts, harder_facts)
    "Supp F decided": _renorm_decided,
    "re-normalised mixes are wider, not harder than the queue": _renorm_wider_not_harder,
    "re-normalised mixes cost, plain ones do not": _renorm_costs_yet_baseline_as_plain,
    "mixing narrows the negatives' spread": _mixing_narrows,  # Learn 4's "the mixed scores spread less"
    "harder as written": _harder_as_written,
    # chapter 5's volatility (volatility_facts)
    "Mean(neg) swings most at a large momentum": _swings_most("neg", small=False),
    "the gradient norm swings most at a small momentum": _swings_most("grad", small=True),
    "the frozen key encoder swings most in Mean(neg)": _frozen_swings_most,
    "the gradient norm swings more at every small momentum than at every large one": _small_swing_more,
    "the smallest momentum swings least of the small ones": _smallest_calmest,
}


# ---- the rows of chapter 7's tables that compare two arms of different experiments (07c, 07e) ----


def oracle_rows(e, runs: Mapping[str, list[dict]]) -> list[dict]:  # noqa: ANN001  (an evidence.Evidence)
    """The false-negative oracle's rows (07c): FT against its baseline without same-class negatives (the evidence
    ``e``'s first-step row), then each arm without against with them, paired by seed, from ``runs`` (records by the
    keys of :data:`ftcl_core.study.diagnosis.FIRST_STEP_EXPERIMENTS`)."""
    plain, oracle = runs["recipe"], runs["oracle"]
    both = (relabel(plain, {"+both": "FT"}) + relabel(oracle, {"+both": "FT, no same-class"})
            + relabel(plain, {"baseline": "base"}) + relabel(oracle, {"baseline": "base, no same-class"}))
    return [e.first_step["oracle"],
            paired_comparison("FT: without against with same-class negatives", both, "FT", "FT, no same-class",
                              own=True),
            paired_comparison("baseline: without against with same-class negatives", both, "base",
                              "base, no same-class", own=True)]


def class_rows(e, runs: Mapping[str, list[dict]]) -> list[dict]:  # noqa: ANN001  (an evidence.Evidence)
    """FT against its baseline at 30 classes, and FT's gain at 30 against 10 classes, paired by seed (07c)."""
    gains = (gap_records(runs["recipe"], "baseline", "+both", "10 classes")
             + gap_records(runs["classes"], "baseline", "+both", "30 classes"))
    return [e.first_step["classes"],
            paired_comparison("FT's gain over its baseline: 30 against 10 classes", gains, "10 classes", "30 classes",
                                              own=True)]


def real_rows(e, runs: Mapping[str, list[dict]]) -> tuple[list[dict], dict]:  # noqa: ANN001  (an evidence.Evidence)
    """Fashion-MNIST's pairs at 10 and 30 epochs and the kNN readout at 30, then FT's gain at 30 against 10 epochs
    (07e)."""
    rows = [e.first_step["real"], e.first_step["real, longer"], e.first_step_knn["real, longer"]]
    rows[2] = {**rows[2], "comparison": f"{rows[2]['comparison']}, kNN readout"}
    gains = (gap_records(runs["real"], "baseline", "+both", "short")
             + gap_records(runs["real, longer"], "baseline", "+both", "long"))
    return rows, paired_comparison("FT's gain over its baseline: 30 against 10 epochs", gains, "short", "long", own=True)
