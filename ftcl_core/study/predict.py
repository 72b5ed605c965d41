"""Predict an FT run's outcome from the visualization tool's statistics of its first 100 steps with FT on.

The paper's tool (Supp A: Mean(pos), Mean(neg), Var(neg) of the raw cosines) and the representation statistics
every run records (alignment, uniformity, the views' deviation correlation rho, the effective rank) are read in
the window of ``WINDOW`` steps after FT switches on (for a late start: the steps after the switch, with the state
at the switch).  A few named features of that window go into two small models a reader can inspect:

- the *sign*: logistic regression (L2-penalised, fitted by Newton's method) of "FT loses readout against the
  baseline of the same seed";
- the *size*: ridge regression of the paired difference in linear top-1 points.

Each distinct FT/baseline pair of runs counts once: a run copied between tables (``copied_from`` in its
provenance) is the run it was copied from, and experiments that share a run are held out together.  Both models are
judged held out by such a group of linked experiments (a setting's seeds are never split between training and test,
nor a run between an experiment and its copy), against two references: the majority outcome of the training
folds, and the rule "Mean(neg) of the raw cosines passes 0.9 within 20 steps of the switch => loses".  Accuracy
carries a Wilson 95 % interval and the mean absolute error a bootstrap one; runs of one setting share a recipe, so
both intervals assume an independence the seeds only approximate.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ftcl_core.config import ConfigError, config_diff
from ftcl_core.runs import RunDir, atomic_write_bytes
from ftcl_core.study import experiment_file, store
from ftcl_core.study.results.paired import by_seed, pair

WINDOW = 100  # steps after the switch
RULE_THRESHOLD, RULE_STEPS = 0.9, 20  # the reference rule: Mean(neg) > 0.9 within 20 steps => loses

# (name, how it is read from the window) — kept to a few, so that the fitted weights can be read
FEATURES = ("peak Mean(neg)", "Mean(neg) at the end", "effective rank, end / switch", "rho at the end",
            "Mean(pos) at the end", "slope of Mean(neg), 2nd half")


@dataclass(frozen=True)
class WindowStats:
    """One run's statistics in its window of ``WINDOW`` steps after FT switches on."""

    features: np.ndarray  # (len(FEATURES),) in the order of :data:`FEATURES`
    first_above: int | None  # steps after the switch at which Mean(neg) first passes RULE_THRESHOLD (None: never)


def window_stats(metrics: dict[str, np.ndarray], switch: int, window: int = WINDOW) -> WindowStats:
    """The features of ``metrics`` (a run's ``metrics.npz``) in ``[switch, switch + window)``; ``switch`` is the
    first step with FT on (0 from the first step; ``ft.start_epoch`` x steps per epoch for a late start)."""
    n = len(metrics["neg_mean"])
    if switch + window > n:
        raise ValueError(f"the window [{switch}, {switch + window}) runs past the run's {n} recorded steps; "
                         "choose a shorter window or a run that trained at least that long after FT switched on.")
    w = slice(switch, switch + window)
    neg, pos = np.asarray(metrics["neg_mean"][w], float), np.asarray(metrics["pos_mean"][w], float)
    erank, rho = np.asarray(metrics["erank"], float), np.asarray(metrics["rho"][w], float)
    tail = slice(-10, None)
    half = neg[window // 2:]
    slope = float(np.polyfit(np.arange(half.size), half, 1)[0]) if half.size > 1 else 0.0
    at_switch = float(erank[switch]) if np.isfinite(erank[switch]) and erank[switch] > 0 else math.nan
    features = np.array([neg.max(), neg[tail].mean(), float(erank[w][tail].mean()) / at_switch, rho[tail].mean(),
                         pos[tail].mean(), slope * window])
    above = np.flatnonzero(neg > RULE_THRESHOLD)
    return WindowStats(features, int(above[0]) if above.size else None)


@dataclass(frozen=True)
class Example:
    """One stored FT run beside the baseline of the same seed."""

    experiment: str   # the experiment file's table (the unit held out together)
    setting: str
    seed: int
    data: str         # the data set, e.g. "shapes", "fashion_mnist"
    stats: WindowStats
    diff: float       # linear top-1 of the FT run minus its baseline's, in points
    unit: str = ""    # the linked experiments held out together (:func:`link_experiments`); "" = the experiment
    runs: tuple[str, str] = ("", "")  # the origins of the FT run and of its baseline (:func:`origin`)

    @property
    def held_out_unit(self) -> str:
        return self.unit or self.experiment


def rule_predicts_loss(stats: WindowStats) -> bool:
    """The reference rule: Mean(neg) of the raw cosines passes 0.9 within 20 steps of the switch => loses."""
    return stats.first_above is not None and stats.first_above <= RULE_STEPS


def _standardise(x: np.ndarray, mean: np.ndarray | None = None, std: np.ndarray | None = None):
    mean = np.nanmean(x, 0) if mean is None else mean
    std = np.nanstd(x, 0) if std is None else std
    z = (x - mean) / np.where(std > 0, std, 1.0)
    return np.nan_to_num(z), mean, std


@dataclass(frozen=True)
class Model:
    """A fitted sign model and size model on standardised features (weights in standard deviations)."""

    mean: np.ndarray
    std: np.ndarray
    sign_weights: np.ndarray  # (1 + features,) logistic: intercept first; positive -> more likely to lose
    size_weights: np.ndarray  # (1 + features,) ridge: intercept first; the paired difference in points
    features: tuple[str, ...] = field(default=FEATURES)

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """P(loses) and the predicted paired difference (points) of feature rows ``x``."""
        z, _, _ = _standardise(np.atleast_2d(x), self.mean, self.std)
        design = np.hstack([np.ones((z.shape[0], 1)), z])
        return 1 / (1 + np.exp(-design @ self.sign_weights)), design @ self.size_weights


def fit(x: np.ndarray, loses: np.ndarray, diff: np.ndarray, l2: float = 1.0, iters: int = 50) -> Model:
    """Logistic regression of ``loses`` and ridge regression of ``diff`` on the standardised rows ``x``; the
    penalty ``l2`` spares the intercept (a handful of runs per experiment: keep the weights small)."""
    z, mean, std = _standardise(x)
    design = np.hstack([np.ones((z.shape[0], 1)), z])
    penalty = l2 * np.diag([0.0] + [1.0] * z.shape[1])
    w = np.zeros(design.shape[1])
    y = loses.astype(float)
    for _ in range(iters):  # Newton's method on the penalised log-likelihood
        p = 1 / (1 + np.exp(-design @ w))
        grad = design.T @ (p - y) + penalty @ w
        hess = design.T @ (design * (p * (1 - p))[:, None]) + penalty + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    size = np.linalg.solve(design.T @ design + penalty, design.T @ diff)
    return Model(mean, std, w, size)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95 % interval of a proportion k / n (Wilson 1927)."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def bootstrap_mean(values: np.ndarray, seed: int = 0, draws: int = 2000) -> tuple[float, float]:
    """A percentile bootstrap 95 % interval of the mean of ``values``."""
    if len(values) == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = rng.choice(values, (draws, len(values))).mean(1)
    return (float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975)))


@dataclass(frozen=True)
class Score:
    """Held-out accuracy (sign) with its Wilson interval, and the size model's mean absolute error."""

    name: str
    correct: int
    n: int
    mae: float = math.nan
    mae_ci95: tuple[float, float] = (math.nan, math.nan)

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else math.nan

    @property
    def ci95(self) -> tuple[float, float]:
        return wilson(self.correct, self.n)


def leave_one_experiment_out(examples: Sequence[Example]) -> dict[str, object]:
    """Each experiment's runs predicted by models fitted on the other experiments' runs; the predictor's, the
    majority outcome's and the Mean(neg) rule's held-out scores, per data set too, and each run's predictions."""
    x = np.array([e.stats.features for e in examples])
    loses = np.array([e.diff < 0 for e in examples])
    diff = np.array([e.diff for e in examples])
    groups = np.array([e.held_out_unit for e in examples])
    p_loss, size, majority = np.full(len(examples), np.nan), np.full(len(examples), np.nan), np.zeros(len(examples), bool)
    constant = np.full(len(examples), np.nan)
    for g in sorted(set(groups)):
        test, train = groups == g, groups != g
        if train.sum() < 4 or len(set(loses[train])) < 2:
            majority[test] = loses[train].mean() >= 0.5 if train.any() else True
            continue
        model = fit(x[train], loses[train], diff[train])
        p_loss[test], size[test] = model.predict(x[test])
        majority[test], constant[test] = loses[train].mean() >= 0.5, diff[train].mean()
    rule = np.array([rule_predicts_loss(e.stats) for e in examples])
    fitted = np.isfinite(p_loss)
    data = np.array([e.data for e in examples])

    def scores(mask: np.ndarray) -> list[Score]:
        m = mask & fitted
        err = np.abs(size[m] - diff[m])
        const_err = np.abs(constant[m] - diff[m])
        return [Score("predictor", int(((p_loss[m] >= 0.5) == loses[m]).sum()), int(m.sum()), float(err.mean()) if m.any()
                      else math.nan, bootstrap_mean(err)),
                Score("majority outcome (size: the mean difference)", int((majority[m] == loses[m]).sum()), int(m.sum()),
                      float(const_err.mean()) if m.any() else math.nan, bootstrap_mean(const_err)),
                Score(f"Mean(neg) > {RULE_THRESHOLD} by step {RULE_STEPS} => loses", int((rule[m] == loses[m]).sum()),
                      int(m.sum()))]

    return {"all": scores(np.ones(len(examples), bool)),
            **{d: scores(data == d) for d in sorted(set(data))},
            "p_loss": p_loss, "size": size, "constant": constant, "majority": majority, "rule": rule, "loses": loses,
            "diff": diff, "experiments": groups,
            "data": data,
            "model": fit(x, loses, diff) if len(set(loses)) > 1 else None}


def ft_pairs(profile: str = "cpu", folders: Sequence[str] = ("experiments", "experiments/diagnosis",
                                                              "experiments/headroom")
             ) -> list[tuple[str, str, str, str]]:
    """(experiment file, table, FT arm, its baseline) of every comparison in the experiment files whose reference
    trains without FT and whose arm differs from it only in ``ft.*`` keys (FT's own effect, nothing else)."""
    out = []
    for folder in folders:
        for path in sorted((experiment_file.ROOT / folder).glob("*.yaml")):
            exp = experiment_file.Experiment.load(path)
            base = experiment_file.base_for(exp, profile)
            for arm, ref in exp.compare.items():
                a = experiment_file.resolve(base, exp.overrides(arm, 0), profile)
                r = experiment_file.resolve(base, exp.overrides(ref, 0), profile)
                if a.ft.any and not r.ft.any and all(k.startswith("ft.") for k in config_diff(a, r)):
                    out.append((str(path.relative_to(experiment_file.ROOT)), exp.table, arm, ref))
    return out


def origin(run_dir: str | Path) -> Path:
    """The run a stored run folder holds: the folder its ``provenance.json`` says it was ``copied_from``
    (followed to the first run, relative to the copy's folder), else the folder itself."""
    d, seen = Path(run_dir).resolve(), set()
    while d not in seen:
        seen.add(d)
        prov = d / "provenance.json"
        src = json.loads(prov.read_text()).get("copied_from") if prov.is_file() else None
        if not src:
            return d
        d = (d / src).resolve()
    raise ValueError(f"{run_dir}: its provenance's copied_from links form a loop; repair provenance.json there.")


def distinct(examples: Sequence[Example]) -> tuple[list[Example], int]:
    """One example per distinct pair of runs (FT run, baseline), the first in order; and how many were dropped."""
    kept, seen = [], set()
    for e in examples:
        if e.runs == ("", "") or e.runs not in seen:
            kept.append(e)
            seen.add(e.runs)
    return kept, len(examples) - len(kept)


def link_experiments(examples: Sequence[Example]) -> list[Example]:
    """Each example's held-out unit: the experiments connected through a shared run (FT run or baseline), joined
    with "+" in sorted order, so that no run is ever both trained on and predicted."""
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        while parent.setdefault(a, a) != a:
            a = parent[a]
        return a

    owner: dict[str, str] = {}
    for e in examples:
        for run in e.runs:
            if run:
                parent[find(e.experiment)] = find(owner.setdefault(run, e.experiment))
    members: dict[str, set[str]] = {}
    for e in examples:
        members.setdefault(find(e.experiment), set()).add(e.experiment)
    return [dataclasses.replace(e, unit="+".join(sorted(members[find(e.experiment)]))) for e in examples]


def stored_examples(profile: str = "cpu", window: int = WINDOW, dedupe: bool = True,
                    short: list[str] | None = None) -> list[Example]:
    """Every stored FT run of :func:`ft_pairs` whose baseline of the same seed is stored, with its window
    statistics and its paired difference in linear top-1 (:func:`ftcl_core.study.results.paired.pair`); with ``dedupe``,
    one example per distinct pair of runs (:func:`distinct`), held out by linked experiments
    (:func:`link_experiments`). A paired run too short for the ``window`` after its switch is left out, its folder
    appended to ``short`` where given."""
    out = []
    for path, table, arm, ref in ft_pairs(profile):
        records = store.load_records(path, profile)
        runs = {r["seed"]: r for r in records if r["setting"] == arm}
        refs = {r["seed"]: r for r in records if r["setting"] == ref}
        paired = pair(by_seed(records, arm), by_seed(records, ref), allow_empty=True)
        for seed, diff in zip(paired.seeds, paired.values):
            run = RunDir(runs[seed]["dir"])
            cfg, metrics = run.load_config(), run.load_metrics()
            switch = int(np.searchsorted(metrics["epoch"], cfg.ft.start_epoch))
            if switch + window > len(metrics["neg_mean"]):
                if short is not None:
                    short.append(runs[seed]["dir"])
                continue
            out.append(Example(table, arm, seed, cfg.data.name, window_stats(metrics, switch, window), float(diff),
                               runs=(str(origin(runs[seed]["dir"])), str(origin(refs[seed]["dir"])))))
    return link_experiments(distinct(out)[0]) if dedupe else out


REPORT = "results/predictor.json"
COMMAND = "python -m ftcl_core predict"


def report_path(profile: str = "cpu", out: str | None = None) -> Path:
    """Where :func:`write_report` writes: ``out``; else the committed ``results/predictor.json`` for the cpu profile
    on the committed store, and ``<profile's store>/predictor.json`` for any other profile or ``FTCL_RUNS_ROOT`` (so
    that a smoke or scratch fit never replaces the committed one)."""
    if out:
        return experiment_file.ROOT / out
    own = profile != "cpu" or bool(os.environ.get("FTCL_RUNS_ROOT"))
    return experiment_file.profile_root(profile) / "predictor.json" if own else experiment_file.ROOT / REPORT


def write_report(profile: str = "cpu", out: str | None = None) -> dict:
    """Fit and judge the predictor on every stored FT run (:func:`stored_examples`,
    :func:`leave_one_experiment_out`) and write ``results/predictor.json``: the examples, their held-out
    predictions, the scores with their intervals, and the model fitted on all runs (what ``screen`` applies)."""
    short: list[str] = []
    every = stored_examples(profile, dedupe=False, short=short)
    examples = link_experiments(distinct(every)[0])
    if not examples and short:  # paired runs there are, each too short to read
        raise ConfigError(f"{len(short)} paired FT runs of the {profile} profile are stored, each shorter than the "
                          f"{WINDOW} steps after FT switches on that the predictor reads: train longer runs (the cpu "
                          "profile's); nothing was written.")
    if not examples:  # nothing to fit: never replace a stored report with an empty one
        raise ConfigError(f"no stored FT run of the {profile} profile to fit the predictor on (it needs FT "
                                      "runs and their baselines, paired by seed); nothing was written.")
    res = leave_one_experiment_out(examples)
    model: Model | None = res["model"]

    def score(s: Score) -> dict:
        return {"name": s.name, "correct": s.correct, "n": s.n, "accuracy": s.accuracy, "ci95": list(s.ci95),
                "mae": s.mae, "mae_ci95": list(s.mae_ci95)}

    report = {
        "command": COMMAND, "window": WINDOW, "features": list(FEATURES),
        "rule": {"threshold": RULE_THRESHOLD, "steps": RULE_STEPS},
        "held_out": "leave one group of linked experiments out (experiments that share a run, held out together)",
        "examples_stored": len(every), "examples_distinct": len(examples),
        "held_out_units": sorted({e.held_out_unit for e in examples}),
        "scores": {k: [score(s) for s in v] for k, v in res.items() if isinstance(v, list)},
        "model": None if model is None else {"mean": model.mean.tolist(), "std": model.std.tolist(),
                                             "sign_weights": model.sign_weights.tolist(),
                                             "size_weights": model.size_weights.tolist()},
        "examples": [{"experiment": e.experiment, "unit": e.held_out_unit, "setting": e.setting, "seed": e.seed,
                      "data": e.data,
                      "features": e.stats.features.tolist(), "first_above": e.stats.first_above, "diff": e.diff,
                      "p_loss_held_out": float(res["p_loss"][i]), "size_held_out": float(res["size"][i]),
                      "majority_held_out": bool(res["majority"][i]), "rule": bool(res["rule"][i])}
                     for i, e in enumerate(examples)],
    }
    target = report_path(profile, out)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, (json.dumps(report, indent=1, allow_nan=True) + "\n").encode())
    return report


def load_model(path: str | None = None) -> Model:
    """The model fitted on every stored FT run, from ``results/predictor.json`` (:func:`write_report`)."""
    target = experiment_file.ROOT / (path or REPORT)
    if not target.is_file():
        raise FileNotFoundError(f"{target} not found: run `{COMMAND}` to fit the predictor on the stored runs.")
    m = json.loads(target.read_text())["model"]
    if m is None:
        raise ValueError(f"{target} holds no model (the stored runs have one outcome only); train more FT runs.")
    return Model(*(np.asarray(m[k]) for k in ("mean", "std", "sign_weights", "size_weights")))


def report_markdown(report: dict) -> str:
    """The held-out scores as a Markdown table (overall and per data set)."""
    rows = ["| runs | method | sign correct | accuracy (95 % CI) | size: mean abs. error, points (95 % CI) |",
            "|---|---|---|---|---|"]
    for group, scores in report["scores"].items():
        for s in scores:
            mae = (f"{s['mae']:.1f} ({s['mae_ci95'][0]:.1f} to {s['mae_ci95'][1]:.1f})"
                   if s["mae"] == s["mae"] else "")
            rows.append(f"| {group} | {s['name']} | {s['correct']} / {s['n']} | {s['accuracy']:.2f} "
                        f"({s['ci95'][0]:.2f} to {s['ci95'][1]:.2f}) | {mae} |")
    return "\n".join(rows)


def mcnemar_p(a_right: Sequence[bool], b_right: Sequence[bool]) -> float:
    """Exact two-sided McNemar test of two predictors judged on the same runs: the binomial p-value of the runs
    one gets right and the other wrong (McNemar 1947)."""
    only_a = sum(1 for a, b in zip(a_right, b_right) if a and not b)
    only_b = sum(1 for a, b in zip(a_right, b_right) if b and not a)
    return sign_test_p(only_a, only_b)


def sign_test_p(wins: int, losses: int) -> float:
    """Exact two-sided sign test: the binomial p-value of ``wins`` against ``losses`` (ties left out) under even odds;
    1 when there are none."""
    n = wins + losses
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n)


def report_facts(report: dict) -> dict:
    """The predictor's held-out result (``results/predictor.json``) as facts for chapter 7's authored reading: each
    reference's sign accuracy (``model_``, ``majority_``, ``rule_``: right, of, accuracy and its 95 % interval), the
    exact McNemar p-value of the model against the majority outcome on the same runs, per data set (``data_<i>``)
    the model's accuracy against the majority's count, the size model's mean absolute error against predicting the
    other experiments' mean, and how many runs the Mean(neg) rule flags and misses. ``beats``: +1 when the model is
    better than the majority outcome at p < 0.05, 0 when p >= 0.05, -1 when worse (the checks')."""
    ex = [e for e in report["examples"] if e["p_loss_held_out"] == e["p_loss_held_out"]]
    loses = [e["diff"] < 0 for e in ex]
    model_right = [(e["p_loss_held_out"] >= 0.5) == y for e, y in zip(ex, loses)]
    majority_right = [e["majority_held_out"] == y for e, y in zip(ex, loses)]
    p = mcnemar_p(model_right, majority_right)
    model, majority, rule = report["scores"]["all"]
    out: dict = {"p": f"{p:.2g}", "beats": 1 if p < 0.05 and model["correct"] > majority["correct"] else 0 if p >= 0.05 else -1}
    for name, s in (("model", model), ("majority", majority), ("rule", rule)):
        out.update({f"{name}_right": str(s["correct"]), f"{name}_of": str(s["n"]), f"{name}_acc": f"{s['accuracy']:.2f}",
                    f"{name}_lo": f"{s['ci95'][0]:.2f}", f"{name}_hi": f"{s['ci95'][1]:.2f}"})
    for i, (name, scores) in enumerate((n, sc) for n, sc in report["scores"].items() if n != "all"):
        out.update({f"data_{i}": name, f"data_{i}_right": str(scores[0]["correct"]), f"data_{i}_of": str(scores[0]["n"]),
                    f"data_{i}_acc": f"{scores[0]['accuracy']:.2f}", f"data_{i}_lo": f"{scores[0]['ci95'][0]:.2f}",
                    f"data_{i}_hi": f"{scores[0]['ci95'][1]:.2f}", f"data_{i}_majority": str(scores[1]["correct"])})
    out["data"] = [n for n in report["scores"] if n != "all"]
    flagged = [y for e, y in zip(ex, loses) if e["rule"]]
    unflagged = [y for e, y in zip(ex, loses) if not e["rule"]]
    out.update({f"set_{k}": v for k, v in setting_level(report).items()})
    out["gain_decided"] = out.pop("set_gain_decided")
    out.update({"mae": f"{model['mae']:.1f}", "mae_lo": f"{model['mae_ci95'][0]:.1f}",
                "mae_hi": f"{model['mae_ci95'][1]:.1f}", "majority_mae": f"{majority['mae']:.1f}",
                "threshold": str(report["rule"]["threshold"]), "steps": str(report["rule"]["steps"]),
                "flagged_lose": str(sum(flagged)), "flagged": str(len(flagged)), "unflagged_lose": str(sum(unflagged)),
                "unflagged": str(len(unflagged)), "lose": str(sum(loses)), "n_unflagged_lose": sum(unflagged)})
    return out


def setting_level(report: dict, seed: int = 0, draws: int = 4000) -> dict:
    """The predictor against the majority outcome at the level of settings (issue 63, item 5): the runs of one
    setting (an experiment's setting, its seeds together) share a recipe and are not independent, so the unit here is
    the setting. Per setting, the held-out runs the model gets right minus those the majority gets right; over
    settings, a percentile bootstrap 95 % interval of the model's gain in accuracy points (settings resampled with
    replacement), and an exact two-sided sign test over the settings where the two differ (``better``, ``worse``,
    ``sign_p``). ``gain_decided``: +1 where the interval lies above 0, -1 below, 0 where it holds 0 (the checks')."""
    per: dict[tuple[str, str], list[int]] = {}
    for e in report["examples"]:
        if e["p_loss_held_out"] != e["p_loss_held_out"]:  # NaN: not held out
            continue
        loses = e["diff"] < 0
        d = int((e["p_loss_held_out"] >= 0.5) == loses) - int(e["majority_held_out"] == loses)
        per.setdefault((e["experiment"], e["setting"]), []).append(d)
    sums = np.array([sum(v) for v in per.values()], dtype=float)
    n_runs = sum(len(v) for v in per.values())
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(sums), (draws, len(sums))) if len(sums) else np.zeros((0, 0), int)
    gains = 100 * sums[idx].sum(1) / n_runs if len(sums) else np.array([math.nan])
    lo, hi = (float(np.quantile(gains, 0.025)), float(np.quantile(gains, 0.975))) if len(sums) else (math.nan, math.nan)
    better, worse = int((sums > 0).sum()), int((sums < 0).sum())
    sign_p = sign_test_p(better, worse)
    gain = 100 * sums.sum() / n_runs if n_runs else math.nan
    return {"settings": str(len(sums)), "gain": f"{gain:+.1f}", "gain_lo": f"{lo:+.1f}", "gain_hi": f"{hi:+.1f}",
            "better": str(better), "worse": str(worse), "sign_p": f"{sign_p:.2f}",
            "gain_decided": 1 if lo > 0 else -1 if hi < 0 else 0, "sign_p_value": sign_p}


CHECKS = {
    "the model's gain is not decided at the level of settings": lambda f: None if f["gain_decided"] == 0 else (
        f"over settings the gain's interval {f['gain_lo']} to {f['gain_hi']} excludes 0"),
    "the model beats the majority outcome": (
        lambda f: None if f["beats"] > 0 else f"McNemar p = {f['p']}: {'worse' if f['beats'] < 0 else 'not clearly better'}"),
    "the rule misses runs that lose": lambda f: None if f["n_unflagged_lose"] else "every run that loses is flagged",
    "the data sets are as written": (
        lambda f: None if f["data"] == ["fashion_mnist", "shapes"] else f"data sets: {', '.join(f['data'])}"),
}
