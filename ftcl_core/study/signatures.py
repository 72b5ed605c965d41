"""What a run's stored statistics say about collapse (Supp A, Figs 3-4), in a few numbers: when Mean(neg) of the raw
cosines first passes a level, the concentration signature a screen prints, and how much the statistics swing."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ftcl_core.study.results.numbers import fixed

LEVEL = 0.9  # Mean(neg) of the raw cosines above it: the negatives score almost as high as the positive
KEPT = 0.5  # a run keeps its readout when it keeps at least this share of its baseline's gain over a random encoder


def volatility(neg_mean: np.ndarray, grad_norms_per_epoch: np.ndarray) -> tuple[float, float]:
    """How much a run's training swings, in two numbers: the standard deviation of the step-to-step change of
    Mean(neg) (Supp A's statistic), and of the epoch-to-epoch change of the summed layer gradient norms
    (Supp C's landscape).  The paper reads collapse off these swings (Sec 3.3, Figs 3-4)."""
    total = np.asarray(grad_norms_per_epoch).sum(1)
    return float(np.std(np.diff(np.asarray(neg_mean)))), float(np.std(np.diff(total)))


def first_step_above(neg_mean: np.ndarray, threshold: float = LEVEL) -> int | None:
    """The first step at which Mean(neg) of the raw cosines passes ``threshold`` (None: never)."""
    above = np.flatnonzero(np.asarray(neg_mean) > threshold)
    return int(above[0]) if above.size else None


def collapse_signature(neg_mean: np.ndarray, neg_var: np.ndarray, threshold: float = LEVEL,
                       early_steps: int = 100) -> dict[str, float | int | None]:
    """The Supp A reading of collapse in a few numbers: the first step at which Mean(neg) exceeds
    ``threshold`` (None if never: the negatives are almost the positives, every image maps near one point),
    the smallest Var(neg) of the first ``early_steps`` steps, and Mean(neg), Var(neg) at the end."""
    neg_mean, neg_var = np.asarray(neg_mean), np.asarray(neg_var)
    return {"first_step_above": first_step_above(neg_mean, threshold),
            "early_min_var": float(neg_var[:early_steps].min()),
            "final_neg_mean": float(neg_mean[-1]), "final_neg_var": float(neg_var[-1])}


def signature_rows(records: Mapping[str, list[dict]], threshold: float = LEVEL) -> list[dict]:
    """Chapter 6's table: per experiment file's records (path -> :func:`ftcl_core.study.store.load_records`),
    each setting's lowest seed with its :func:`collapse_signature`, its linear top-1, the random-init encoder's, and
    its baseline's (the setting its comparisons lead to, same seed; None for a baseline or a missing run).
    ``kept``: the share of the baseline's gain over the random-init encoder the run keeps (None without one)."""
    from ftcl_core.runs import RunDir
    from ftcl_core.study.experiment_file import Experiment

    rows = []
    for path, runs in records.items():
        compare = Experiment.load(path).compare
        lowest = {}
        for run in runs:
            lowest[run["setting"]] = min(lowest.get(run["setting"], run["seed"]), run["seed"])
        by_key = {(r["setting"], r["seed"]): r for r in runs}
        for run in runs:
            if run["seed"] != lowest[run["setting"]]:
                continue
            m = RunDir(run["dir"]).load_metrics()
            base = compare.get(run["setting"])
            while base in compare:  # the file's baseline: follow the comparisons to a setting compared with none
                base = compare[base]
            ref = by_key.get((base, run["seed"]))
            rand = run.get("random_init_linear_top1")
            kept = None
            if ref is not None and rand is not None and ref["linear_top1"] > rand:
                kept = (run["linear_top1"] - rand) / (ref["linear_top1"] - rand)
            rows.append({"table": run["table"], "setting": run["setting"], "linear": run["linear_top1"],
                         "random_init": rand, "baseline": None if ref is None else ref["linear_top1"], "kept": kept,
                         **collapse_signature(m["neg_mean"], m["neg_var"], threshold)})
    return rows


def signature_facts(rows: list[dict]) -> dict:
    """What chapter 6's table says of the level as a sign of a lost readout. Among the rows compared with a
    baseline: those that lose their readout (keep less than :data:`KEPT` of the baseline's gain over the random-init
    encoder, ``lost``) and those that pass the level (``passed``); how many lost rows never pass it
    (``lost_never``) and how many passing rows keep their readout (``passed_kept``), with their names
    (``lost_never_names``, ``passed_kept_names``: "table setting", joined by commas). ``counts``: the raw counts."""
    compared = [r for r in rows if r.get("kept") is not None]
    lost = [r for r in compared if r["kept"] < KEPT]
    passed = [r for r in compared if r["first_step_above"] is not None]
    lost_never = [r for r in lost if r["first_step_above"] is None]
    passed_kept = [r for r in passed if r["kept"] >= KEPT]
    names = lambda rs: ", ".join(f"{r['table']} {r['setting']}" for r in rs)  # noqa: E731
    counts = {"compared": len(compared), "lost": len(lost), "passed": len(passed), "lost_never": len(lost_never),
              "passed_kept": len(passed_kept)}
    return {"level": fixed(LEVEL, 1), "kept_share": fixed(100 * KEPT, 0), **{k: str(v) for k, v in counts.items()},
            "lost_never_names": names(lost_never), "passed_kept_names": names(passed_kept), "counts": counts}


def _needless(f: Mapping) -> str | None:
    c = f["counts"]
    return None if c["lost_never"] > 0 else f"all {c['lost']} lost rows pass the level"


def _insufficient(f: Mapping) -> str | None:
    c = f["counts"]
    return None if c["passed_kept"] > 0 else f"all {c['passed']} passing rows lose readout"


CHECKS = {
    # chapter 6 (signature_facts): passing the level is neither necessary nor sufficient for a lost readout
    "some rows lose their readout without passing the level": _needless,
    "some rows pass the level and keep their readout": _insufficient,
}
