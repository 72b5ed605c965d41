"""The readings of the paper's tables that chapters glue: momentum (chapter 5), the harder positive (chapter 6), the
methods (chapter 10), one claim (chapters 5 and 9), with the checks that bind their words (:data:`CHECKS`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ftcl_core.config import (
    ConfigError,
    RunConfig,
)
from ftcl_core.study.experiment_file import Experiment
from ftcl_core.study.results import verdicts
from ftcl_core.study.results.numbers import fixed, plus_minus
from ftcl_core.study.results.paired import by_seed, pair
from ftcl_core.study.results.verdicts import BASELINE, MIN_SEEDS, NOT_RUN, Claim
from ftcl_core.study.table_verdicts import baseline_aims, comparison_key, distinct_claims, table_rows, tally, unfit_baselines


def v2_against_v1(aims: list[dict]) -> dict[str, tuple[float, float]]:
    """Per data set with both, the mean linear readout of MoCo v1's and v2's baselines (:func:`baseline_aims`): the
    issue's aim is v2 >= v1, the order the literature reports."""
    by = {(a["data"], a["setting"]): a["mean"] for a in aims}
    return {d: (by[d, "v1 baseline"], by[d, "v2 baseline"]) for d, _ in by if (d, "v1 baseline") in by
            and (d, "v2 baseline") in by}


def _run_means(metrics: Mapping[str, Mapping[int, Mapping[str, np.ndarray]]], settings: tuple[str, str],
               keys: tuple[str, ...], tail: int | None = None) -> tuple[list[int], dict]:
    """The seeds both ``settings`` hold in ``metrics`` (a setting to ``{seed: run metrics}``), and each run's mean of
    each of ``keys`` over all its steps (its last ``tail`` steps when given), keyed ``(setting, seed, key)``."""
    seeds = sorted(set(metrics.get(settings[0], {})) & set(metrics.get(settings[1], {})))
    start = -tail if tail else 0
    return seeds, {(s, k, key): float(np.mean(np.asarray(metrics[s][k][key])[start:])) for s in settings
                   for k in seeds for key in keys}


def undone_positive_facts(metrics: Mapping[str, Mapping[int, Mapping[str, np.ndarray]]], arm: str = "v1 +pos",
                          reference: str = "v1 baseline", tail: int = 100) -> dict:
    """How the encoder answers positive extrapolation (eq. 3): eq. 4 reads ``S' = 1 - A (1 - S)`` with
    ``A = 1 + 2 l (l - 1)`` >= 1, so extrapolation multiplies a pair's gap to 1 by A, and an encoder can shrink that
    gap (raise its raw S) until the transformed pair is no harder than before; InfoNCE (eq. 1) rewards the margin
    between a positive and the negatives, which that need not keep. ``metrics`` maps a setting to ``{seed: run
    metrics}``. Facts over the seeds both hold, each a run's mean over its last ``tail`` steps, then over the seeds:
    raw Mean(pos) of the reference and the arm (``ref_pos``, ``arm_pos``), the arm's transformed Mean(pos)
    (``arm_ft``), raw Mean(neg) (``ref_neg``, ``arm_neg``), the margin the loss sees, Mean(pos) - Mean(neg) after
    FT (``ref_margin``, ``arm_margin``), ``n`` / ``seeds``; and in every seed: ``undone``, the arm's raw Mean(pos)
    above the reference's and its transformed Mean(pos) no lower (the harder pair no harder than the baseline's);
    ``crowded``, its raw Mean(neg) above the reference's and its margin below."""
    seeds, mean = _run_means(metrics, (arm, reference), ("pos_mean", "neg_mean", "ft_pos_mean", "ft_neg_mean"), tail)
    if not seeds:
        return {"n": 0, "undone": False, "crowded": False}
    margin = lambda s, k: mean[s, k, "ft_pos_mean"] - mean[s, k, "ft_neg_mean"]  # noqa: E731
    avg = lambda s, key: f"{np.mean([mean[s, k, key] for k in seeds]):.2f}"  # noqa: E731
    return {"n": len(seeds), "seeds": str(len(seeds)), "ref_pos": avg(reference, "pos_mean"),
            "arm_pos": avg(arm, "pos_mean"), "arm_ft": avg(arm, "ft_pos_mean"), "ref_neg": avg(reference, "neg_mean"),
            "arm_neg": avg(arm, "neg_mean"), "ref_margin": f"{np.mean([margin(reference, k) for k in seeds]):.2f}",
            "arm_margin": f"{np.mean([margin(arm, k) for k in seeds]):.2f}", "tail": str(tail),
            "undone": all(mean[arm, k, "pos_mean"] > mean[reference, k, "pos_mean"]
                          and mean[arm, k, "ft_pos_mean"] >= mean[reference, k, "pos_mean"] for k in seeds),
            "crowded": all(mean[arm, k, "neg_mean"] > mean[reference, k, "neg_mean"]
                           and margin(arm, k) < margin(reference, k) for k in seeds)}



def undone_positive_records(records: list[dict]) -> dict:
    """:func:`undone_positive_facts` of Table 7's MoCo v1 run records (+pos alone and its baseline), read from each
    record's run folder (the findings' mechanism and the last Learn chapter's why)."""
    from ftcl_core.runs import RunDir

    return undone_positive_facts({s: {r["seed"]: RunDir(r["dir"]).load_metrics() for r in records if r["setting"] == s}
                                  for s in ("v1 +pos", "v1 baseline")})

def _sign_word(word: str) -> str:
    """A sign-only verdict's word in the momentum paragraph's three groups: seen (``replicated``), ``not
    replicated`` (the other side), or ``inconclusive`` (an interval that holds zero, or too few seeds)."""
    return {1: "replicated", -1: "not replicated"}.get(verdicts.side(word), "inconclusive")


def momentum_facts(exp: Experiment, records: list[dict]) -> dict:
    """Table 1's runs (eq. 2's momentum sweep) as facts for chapter 5's authored reading: the seeds per momentum;
    where readout peaks against the random-init encoder, and the frozen key encoder's (m = 1) readout; the momenta
    the paper says learn, grouped by their sign-only verdict against the random-init encoder (``learn_replicated``,
    ``learn_inconclusive``, ``learn_not``: momenta, comma-separated); per momentum the paper says collapses (in order,
    ``collapse_m_<i>``, ``collapse_readout_<i>``, ``collapse_diff_<i>``, ``collapse_verdict_<i>``) and grouped
    (``collapse_replicated`` ...); each learning momentum against the largest collapsing one (``edge``), paired by
    seed (``edge_above``, ``edge_undecided``, ``edge_below``), with the first learner's gap (``first``,
    ``step_diff``, ``step_seeds``, ``step``: its sign word); on real images, each momentum against the raw-pixel
    probe, paired by run (``probe``, ``pixels_above`` ...). Entries that are not strings are the checks' (:data:`CHECKS`)."""
    rows: dict[str, dict] = {}
    for r in table_rows(exp, records):  # each momentum's own row (its sanity check), not its ordering claims
        rows.setdefault(r["setting"], r)
    out: dict = {"n": len(rows)}
    if not rows:
        return out

    def named(settings: list[str]) -> str:
        return ", ".join(s.removeprefix("m=") for s in settings)

    def momentum(s: str) -> float:
        return float(s.removeprefix("m="))

    def sides(gaps_of) -> dict[str, list[str]]:  # the tables' rule (verdict) on paired gaps, with "above" as the claim
        side: dict[str, list[str]] = {"replicated": [], "inconclusive": [], "not replicated": []}
        for s, gap in gaps_of.items():
            side[_sign_word(verdicts.judge(Claim(s, "reference", direction=1), gap).word)].append(s)
        return side

    peak = max(rows, key=lambda s: rows[s]["mean"])
    said_learn = [s for s, r in rows.items() if r["claim"].startswith("learns")]
    said_collapse = [s for s, r in rows.items() if r["claim"].startswith("collapses")]
    n_seeds = sorted({r["n_seeds"] for r in rows.values()})
    out.update({"seeds": " to ".join(map(str, n_seeds[::max(1, len(n_seeds) - 1)])), "min_seeds": min(n_seeds),
                "peak": peak.removeprefix("m="), "peak_readout": plus_minus(rows[peak]["mean"], rows[peak]["ci95"]),
                "peak_mean": fixed(rows[peak]["mean"]),
                "random": fixed(float(np.mean([r["random_init_mean"] for r in rows.values()])))})
    if "m=1.0" in rows:
        out["frozen_readout"] = plus_minus(rows["m=1.0"]["mean"], rows["m=1.0"]["ci95"])
    for word in ("replicated", "inconclusive", "not replicated"):
        key = word.replace(" ", "_").replace("not_replicated", "not")
        out[f"learn_{key}"] = named([s for s in said_learn if _sign_word(rows[s]["verdict"]) == word])
        out[f"collapse_{key}"] = named([s for s in said_collapse if _sign_word(rows[s]["verdict"]) == word])
    out["collapse_few_seeds"] = named([s for s in said_collapse if rows[s]["n_seeds"] < MIN_SEEDS])
    for i, s in enumerate(said_collapse):
        out.update({f"collapse_m_{i}": s.removeprefix("m="),
                    f"collapse_readout_{i}": plus_minus(rows[s]["mean"], rows[s]["ci95"]),
                    f"collapse_mean_{i}": fixed(rows[s]["mean"]),
                    f"collapse_diff_{i}": plus_minus(rows[s]["diff_mean"], rows[s]["diff_ci95"], signed=True),
                    f"collapse_verdict_{i}": rows[s]["verdict"]})
    if said_collapse and said_learn:  # the paper's boundary: readout steps up between its last collapse and first learner
        edge, first = max(said_collapse, key=momentum), min(said_learn, key=momentum)
        gaps = {s: pair(by_seed(records, s), by_seed(records, edge), allow_empty=True) for s in sorted(said_learn, key=momentum)}
        side = sides(gaps)
        gap = gaps[first]
        out.update({"edge": named([edge]), "first": named([first]), "edge_above": named(side["replicated"]),
                    "edge_undecided": named(side["inconclusive"]), "edge_below": named(side["not replicated"]),
                    "step_diff": plus_minus(gap.mean, gap.ci95, signed=True), "step_seeds": str(gap.n),
                    "step_n": gap.n, "step": _sign_word(verdicts.judge(Claim(first, edge, direction=1), gap).word)})
    pixels = [r for r in records if "raw_pixels_linear_top1" in r]
    if pixels:  # real images: the probe on the raw pixels is the bar an encoder must clear (paired by run)
        side = sides({s: pair(by_seed(pixels, s), by_seed(pixels, s, "raw_pixels_linear_top1"), allow_empty=True)
                       for s in rows})
        out.update({"probe": fixed(float(np.mean([r["raw_pixels_linear_top1"] for r in pixels]))),
                    "pixels_above": named(side["replicated"]), "pixels_undecided": named(side["inconclusive"]),
                    "pixels_below": named(side["not replicated"])})
    return out


def _empty(*keys: str):
    """A check that the comma-separated momenta of each of ``keys`` are none (the authored text names none)."""
    def check(f: dict) -> str | None:
        bad = [f"{k}: {f.get(k)}" for k in keys if f.get(k, "")]
        return "; ".join(bad) or None
    return check


def _all_three_seeds(f: dict) -> str | None:
    return None if f["n"] and f["min_seeds"] >= MIN_SEEDS else "a momentum has fewer than 3 seeds"


def _step_not_seen(f: dict) -> str | None:
    if "step" not in f or f["step_n"] < MIN_SEEDS:
        return "the step from collapse to learning is undecided"
    return None if f["step"] == "inconclusive" else f"the step at m = {f['first']}: {f['step']}"


def score_ends_facts(metrics: dict[str, dict], seed: int, window: int = 100) -> dict:
    """Where Supp A's statistics end in each momentum's run (one seed; means over the last ``window`` steps of the
    raw cosines), for chapter 5: the momenta whose Mean(neg) ends highest (``hi``) and lowest (``lo``) with those
    values, and Mean(pos) of a frozen key encoder (m = 1, ``frozen``) against the other momenta's range.
    ``metrics`` maps a setting ("m=0.9") to its run's metrics."""
    out: dict = {"window": str(window), "seed": str(seed), "n": len(metrics)}
    if not metrics:
        return out
    ends = {s: {k: float(np.mean(np.asarray(m[k])[-window:])) for k in ("pos_mean", "neg_mean")} for s, m in metrics.items()}
    hi = max(ends, key=lambda s: ends[s]["neg_mean"])
    lo = min(ends, key=lambda s: ends[s]["neg_mean"])
    out.update({"hi": hi.removeprefix("m="), "hi_neg": f"{ends[hi]['neg_mean']:.2f}", "lo": lo.removeprefix("m="),
                "lo_neg": f"{ends[lo]['neg_mean']:.2f}"})
    others = [e["pos_mean"] for s, e in ends.items() if s != "m=1.0"]
    if "m=1.0" in ends and others:
        frozen = ends["m=1.0"]["pos_mean"]
        out.update({"frozen_pos": f"{frozen:.2f}", "others_pos_lo": f"{min(others):.2f}",
                    "others_pos_hi": f"{max(others):.2f}", "frozen_agrees_least": frozen < min(others)})
    return out


def harder_positive_facts(metrics: Mapping[str, Mapping[int, Mapping[str, np.ndarray]]], easy: str = "m=0.9",
                          hard: str = "m=0.99") -> dict:
    """Sec 3.3, "Hard positive boosts performance": raising the momentum from 0.9 to 0.99 turns easy positive pairs
    (Mean(pos) near 0.9) into hard ones (near 0.7), and Table 1's readout rises with it. ``metrics`` maps a setting to
    ``{seed: run metrics}``. Facts, over the seeds both settings hold: each setting's Mean(pos) averaged over its
    whole run, then over the seeds (``pos_easy``, ``pos_hard``), the seeds (``n``), and ``harder``: True when in every
    seed the ``hard`` run's Mean(pos) lies below the ``easy`` run's."""
    seeds, run_mean = _run_means(metrics, (easy, hard), ("pos_mean",))
    if not seeds:
        return {"n": 0, "harder": False}
    return {"n": len(seeds), "seeds": str(len(seeds)), "easy": easy.removeprefix("m="), "hard": hard.removeprefix("m="),
            "pos_easy": f"{np.mean([run_mean[easy, k, 'pos_mean'] for k in seeds]):.2f}",
            "pos_hard": f"{np.mean([run_mean[hard, k, 'pos_mean'] for k in seeds]):.2f}",
            "harder": all(run_mean[hard, k, "pos_mean"] < run_mean[easy, k, "pos_mean"] for k in seeds)}


METHOD_ARMS = ("simclr +pos", "simclr +neg", "simclr +both", "simclr +both_dim", "byol +pos", "simsiam +pos",
               "swav +pos")  # chapter 10's claims, each against its method's baseline


def methods_facts(rows: list[dict], last: Mapping[str, Mapping[str, float]], negatives: int) -> dict:
    """Chapter 10's reading of the other methods: per arm of :data:`METHOD_ARMS` (``simclr_pos``, ``byol_pos``, ...)
    its paired difference ± 95 % interval from ``rows`` (results/summary.csv), the paper's effect (``<arm>_paper``)
    and verdict (``<arm>_word``); each method's baseline (``<method>_base``); ``last`` maps a setting to its lowest
    seed's last-step ``pos_mean``, ``neg_mean`` and ``loss``; ``negatives``: SimCLR's in-batch negatives per anchor
    (2M - 2), so ``constant_loss`` = ln(negatives + 1) is the InfoNCE loss of a constant encoder (eq. 1: every logit
    equal)."""
    out: dict = {"negatives": str(negatives), "constant_loss": f"{math.log(negatives + 1):.2f}",
                 "constant_value": math.log(negatives + 1), "last": last}
    for arm in METHOD_ARMS:
        key = arm.replace(" +", "_")
        row = next((r for r in rows if r["setting"] == arm and r.get("reference", "").endswith("baseline")), None)
        if row is None:
            out[f"{key}_word"] = NOT_RUN
            continue
        out |= {key: plus_minus(float(row["diff_mean"]), float(row["diff_ci95"] or "nan"), signed=True),
                f"{key}_paper": fixed(float(row["effect"]), 2, signed=True), f"{key}_word": row["verdict"]}
    for method in ("simclr", "byol", "simsiam", "swav"):
        base = next((r for r in rows if r["setting"] == f"{method} baseline"), None)
        out[f"{method}_base"] = plus_minus(float(base["mean"]), float(base["ci95"])) if base else NOT_RUN
    random_init = [float(r["random_init_mean"]) for r in rows if r["setting"] in ("byol baseline", "simsiam baseline")]
    out["random_init"] = fixed(float(np.mean(random_init))) if random_init else NOT_RUN
    weak = [a["gain_met"] for a in baseline_aims(rows) if a["setting"] in ("byol baseline", "simsiam baseline")]
    out["weak"] = len(weak) == 2 and not any(weak)  # both miss the bar this book sets for a baseline
    for arm in ("simclr +pos", "swav +pos"):
        if arm in last:
            key = arm.replace(" +", "_")
            out |= {f"{key}_last_{k}": f"{last[arm][k]:.2f}" for k in ("pos_mean", "neg_mean", "loss")}
    return out


def _words(words: Mapping[str, str]):
    """Each arm's verdict (``<arm>_word`` in :func:`methods_facts`) is the word named."""
    def check(f: Mapping) -> str | None:
        bad = [f"{k}: {f.get(f'{k}_word')}" for k, w in words.items() if f.get(f"{k}_word") != w]
        return "; ".join(bad) or None
    return check


def _simclr_constant(f: Mapping) -> str | None:
    """SimCLR +pos ends as a constant encoder: Mean(pos) and Mean(neg) above 0.95, the loss within 0.05 of
    ln(negatives + 1)."""
    last = f["last"].get("simclr +pos")
    if last is None:
        return "simclr +pos has no stored run"
    ok = min(last["pos_mean"], last["neg_mean"]) > 0.95 and abs(last["loss"] - f["constant_value"]) < 0.05
    return None if ok else f"simclr +pos ends at {dict(last)}, against a constant encoder's loss {f['constant_loss']}"


def _swav_short_of_collapse(f: Mapping) -> str | None:
    last = f["last"].get("swav +pos")
    return None if last is not None and last["neg_mean"] < 0.9 else f"swav +pos ends at {last}"


METHOD_CHECKS = {  # chapter 10's reading (methods_facts)
    "positive extrapolation reverses SimCLR": _words({k: verdicts.OPPOSITE for k in (
        "simclr_pos", "simclr_both", "simclr_both_dim")}),
    "SimCLR's +neg alone is undecided": _words({"simclr_neg": verdicts.UNDECIDED}),
    "SimCLR with +pos ends as a constant encoder": _simclr_constant,
    "without negatives nothing is decided": _words({"byol_pos": verdicts.UNDECIDED,
                                                    "simsiam_pos": verdicts.UNDECIDED}),
    "BYOL's and SimSiam's baselines miss the bar": lambda f: None if f["weak"] else (
        "BYOL's or SimSiam's baseline meets the bar (baseline_aims)"),
    "SwAV's +pos is reversed short of a collapse": lambda f: _words({"swav_pos": verdicts.OPPOSITE})(f) or
    _swav_short_of_collapse(f),
}


def claim_facts(rows: list[dict], table: str, setting: str) -> dict:
    """One claim of ``results/summary.csv`` (``rows``) as chapter 9's text quotes it: our paired difference ± 95 %
    interval (``diff``), the paper's effect (``effect``), ours over the paper's (``ratio``), the verdict
    (``verdict``), its paired seeds (``seeds``); raw values for the checks: ``diff_value``, ``ci_value``,
    ``effect_value``, ``verdict_word``.
    Raises KeyError naming the table and setting when the summary holds no such claim."""
    row = next((r for r in rows if r["table"] == table and r["setting"] == setting and r.get("effect")), None)
    if row is None:
        raise KeyError(f"results/summary.csv holds no claim of {table} {setting!r}: run python -m ftcl_core summary")
    diff, ci, effect = float(row["diff_mean"]), float(row["diff_ci95"] or "nan"), float(row["effect"])
    return {"diff": plus_minus(diff, ci, signed=True), "effect": fixed(effect, signed=True),
            "ratio": fixed(float(row["ratio"]), 0), "verdict": row["verdict"],
            "seeds": row["n_seeds"], "diff_value": diff, "ci_value": ci, "effect_value": effect,
            "verdict_word": row["verdict"]}


def _beyond_the_paper(f: Mapping) -> str | None:
    """The whole interval lies past the paper's effect, on its side: ours is larger, not just as large."""
    if f["verdict_word"] != verdicts.LARGER:
        return f"the verdict is {f['verdict_word']}, not {verdicts.LARGER}"
    far = abs(f["diff_value"]) - f["ci_value"] > abs(f["effect_value"]) and f["diff_value"] * f["effect_value"] > 0
    return None if far else f"{f['diff']} does not lie wholly past the paper's {f['effect']}"


def _in_every_seed(flag: str):
    """A per-seed comparison holds in every one of at least :data:`MIN_SEEDS` seeds (facts ``n`` and ``flag``)."""
    return lambda f: (None if f.get("n", 0) >= MIN_SEEDS and f.get(flag) else
                      f"{f.get('n', 0)} seed(s); {flag} in every seed: {f.get(flag)}")


# the baselines below the bar that the book's words name (chapter 9, the findings): MoCo v2, SimSiam and SwAV in
# Table 7, BYOL in Supp E
NAMED_UNFIT = {("T7", "v2 baseline"), ("T7", "simsiam baseline"), ("T7", "swav baseline"), ("S-E", "byol baseline")}


def unfit_facts(rows: list[dict]) -> dict:
    """The paper's claims left out of the tallies for their baseline (:func:`unfit_baselines`): how many
    (``unfit_claims``) and the baselines (raw ``unfit``, a set of ``(table, setting)``)."""
    return {"unfit_claims": str(sum(tally(rows)["all"]["unfit"].values())), "unfit": set(unfit_baselines(rows))}


def _unfit_as_named(f: Mapping) -> str | None:
    return None if f["unfit"] == NAMED_UNFIT else f"below the bar: {sorted(f['unfit'])}, named: {sorted(NAMED_UNFIT)}"


CLAIM_CHECKS = {  # chapters 5 and 9: the reading of one claim (claim_facts)
    "the baselines below the bar are those named": _unfit_as_named,
    "tables share runs": lambda f: None if f["same"] and int(f["distinct"]) < int(f["rows"]) else (
        f"T2 alpha_ex=2.0 and T7 v1 +pos are {'one' if f['same'] else 'not one'} comparison; "
        f"{f['distinct']} distinct of {f['rows']} claim rows"),
    "the distinct rows are the claims, the checks and the claims set apart": lambda f: None if (
        f["parts_value"] == int(f["distinct"])) else (
        f"{f['distinct']} distinct rows, but {f['paper_claims']} + {f['checks']} + {f['unfit']} counted"),
    "larger than the paper's size": _beyond_the_paper,
    "undecided: the interval holds zero and the paper's effect": (
        lambda f: None if f["verdict_word"] == verdicts.UNDECIDED else f"the verdict is {f['verdict_word']}"),
    "matches: the interval holds the paper's effect and excludes zero": (
        lambda f: None if f["verdict_word"] == verdicts.MATCHES else f"the verdict is {f['verdict_word']}"),
}

CHECKS = {
    # chapter 5's reading of Table 1 (momentum_facts), on the shapes and on Fashion-MNIST
    "every momentum has 3 seeds": _all_three_seeds,
    "every learning momentum learns as the paper says": _empty("learn_inconclusive", "learn_not"),
    "the collapse is not reproduced": _empty("collapse_replicated", "collapse_inconclusive"),
    "the collapse is undecided": _empty("collapse_replicated", "collapse_not", "collapse_few_seeds"),
    "no learning momentum is below the collapse edge": _empty("edge_below"),
    "every learning momentum is above the collapse edge": _empty("edge_undecided", "edge_below"),
    "the step from collapse to learning is not seen": _step_not_seen,
    "the collapsing momenta are below the raw pixels": (
        lambda f: None if f.get("pixels_below") and not f.get("pixels_undecided") else
        f"below the pixels: {f.get('pixels_below')}; undecided: {f.get('pixels_undecided')}"),
    # chapter 5's score statistics (score_ends_facts)
    "the encoder undoes the harder positive": _in_every_seed("undone"),  # undone_positive_facts
    "the encoder crowds the images together": _in_every_seed("crowded"),  # undone_positive_facts
    "a larger momentum makes the positives harder": _in_every_seed("harder"),  # harder_positive_facts
    "the frozen key encoder's views agree least": (
        lambda f: None if f.get("frozen_agrees_least") else "m = 1 does not end with the lowest Mean(pos)"),
}


def shared_run_facts(rows: list[dict], a: tuple[str, str] = ("T2", "alpha_ex=2.0"),
                     b: tuple[str, str] = ("T7", "v1 +pos")) -> dict:
    """How many of ``rows`` (summary rows) make a claim (``rows``) and how many distinct comparisons they hold
    (``distinct``, :func:`distinct_claims`; ``repeats``: rows that repeat one), how the distinct ones divide
    (:func:`tally`: the paper's claims ``paper_claims``, Table 1's ``checks`` against the random-init encoder, the
    claims against a baseline below the bar ``unfit``), and whether the rows ``a`` and ``b`` (table, setting) are one comparison
    (``same``: one set of runs listed under two tables)."""
    claims = [r for r in rows if r["verdict"] != BASELINE]
    pick = [next((r for r in claims if (r["table"], r["setting"]) == t), None) for t in (a, b)]
    same = None not in pick and comparison_key(pick[0]) == comparison_key(pick[1])
    counts = {part: sum(n.values()) for part, n in tally(rows)["all"].items()}
    distinct = len(distinct_claims(claims))
    return {"rows": str(len(claims)), "distinct": str(distinct), "same": same, "repeats": str(len(claims) - distinct),
            "paper_claims": str(counts["ft"]), "checks": str(counts["sanity"]), "unfit": str(counts["unfit"]),
            "parts_value": counts["ft"] + counts["sanity"] + counts["unfit"]}


def recipe_rows(cfg: RunConfig, keys: tuple[str, ...]) -> list[list[str]]:
    """``[key, value]`` rows of a run's config for the dotted ``keys`` (``"moco.tau"``), the few settings a reader
    needs to read a recipe; a key the config does not hold is a clear error."""
    flat = cfg.to_dict()
    rows = []
    for key in keys:
        section, _, name = key.partition(".")
        if section not in flat or name not in flat[section]:
            raise ConfigError(f"the config has no key {key!r}; see ftcl_core/config.py for its sections and fields.")
        rows.append([key, str(flat[section][name])])
    return rows
