"""Why positive extrapolation can pull an encoder into collapse: the gradient algebra, checked against autograd.

Take the released code's semantics (eq. 3 with unit ``q``, ``k``, the key detached, one ``l`` in [1, 2], the
extrapolated query also scored against the negatives ``n_j``).  The positive score is

    s+ = q'.k' = A (q.k) + 2 l (1 - l),   A = l^2 + (1 - l)^2,

so its gradient on ``q`` is ``A k + 2 l (1 - l) q``; each negative score ``q'.n_j`` has gradient ``l n_j``.  With
softmax weights ``p`` over ``[s+, s_j] / tau`` (eq. 1) and the normaliser ``q = z / |z|``, whose Jacobian is the
tangent projector ``P_q = (I - q q^T) / |z|``, the ``q`` term drops out:

    dL/dz = -(1 - p_0) / tau . P_q [ A k - l n_bar ],   n_bar = sum_j p_j n_j / (1 - p_0).

Alignment is weighted by ``A``, uniformity by ``l``; without FT both are 1.  Linearise around a concentrated
state (every feature near one direction ``m``; ``q = m + d``, ``k = m + e`` with small tangent deviations, the
negatives' weighted deviation uncorrelated with ``d``): a gradient step moves ``d`` by ``c (A e - (A - l) d)``, so
``E|d|^2`` shrinks when ``A rho < A - l``, i.e. when the views' deviation correlation ``rho < 1 - l / A``.  Without
FT the threshold is 0: a concentrated state repels as soon as the views agree at all.  With ``l = 1.5`` it is
0.4: concentration *attracts* until the two views agree more than that.  (:func:`attraction_threshold`.)
"""

from __future__ import annotations

import csv
import functools
import io
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import yaml

from ftcl_core import experiments as X
from ftcl_core import transforms as T
from ftcl_core.losses import info_nce, logits_from_scores
from ftcl_core.results import claims as verdicts
from ftcl_core.results.claims import MIN_SEEDS, Claim
from ftcl_core.results.numbers import cell, plus_minus
from ftcl_core.results.paired import by_seed, mean_ci95, pair, paired_records
from ftcl_core.runs import RunDir, atomic_write_bytes
from ftcl_core.stats import collapse_signature, first_step_above

COLLAPSE_LEVEL = 0.9  # Mean(neg) of the raw cosines above this: every image mapped near one point (chapter 6)


def alignment_weight(lam: torch.Tensor | float) -> torch.Tensor | float:
    """``A = l^2 + (1 - l)^2``: the factor eq. 3's extrapolation puts on the positive's pull (1 without FT)."""
    return lam**2 + (1 - lam) ** 2


def attraction_threshold(lam: torch.Tensor | float) -> torch.Tensor | float:
    """``1 - l / A``: below this views' correlation rho, a concentrated representation contracts further."""
    return 1 - lam / alignment_weight(lam)


def mean_weight_ratio(alpha: float = 2.0, points: int = 20_001) -> float:
    """``E[A / l]`` for ``l ~ Beta(alpha, alpha) + 1`` (the paper's alpha_ex = 2), by quadrature on a grid."""
    u = torch.linspace(0, 1, points, dtype=torch.float64)[1:-1]
    density = torch.distributions.Beta(torch.tensor(alpha, dtype=torch.float64),
                                       torch.tensor(alpha, dtype=torch.float64)).log_prob(u).exp()
    ratio = alignment_weight(1 + u) / (1 + u)
    return float((density * ratio).sum() / density.sum())


def threshold_band(alpha: float = 2.0, lo: float = 0.05, hi: float = 0.95, points: int = 20_001) -> tuple[float, float]:
    """The attraction thresholds ``1 - l / A`` at the ``lo`` and ``hi`` quantiles of ``l ~ Beta(alpha, alpha) + 1``
    (the threshold rises with ``l`` on [1, 2], so these are the band's quantiles too)."""
    u = torch.linspace(0, 1, points, dtype=torch.float64)
    density = torch.distributions.Beta(torch.tensor(alpha, dtype=torch.float64),
                                       torch.tensor(alpha, dtype=torch.float64)).log_prob(u[1:-1]).exp()
    cdf = torch.cat([torch.zeros(1, dtype=torch.float64), density.cumsum(0) / density.sum(), torch.ones(1, dtype=torch.float64)])
    quantile = [float(u[int(torch.searchsorted(cdf, torch.tensor(q, dtype=torch.float64)))]) for q in (lo, hi)]
    return float(attraction_threshold(1 + quantile[0])), float(attraction_threshold(1 + quantile[1]))


def analytic_gradient(z: torch.Tensor, k: torch.Tensor, negatives: torch.Tensor, lam: float, tau: float) -> torch.Tensor:
    """``dL/dz`` of the InfoNCE loss (eq. 1) after positive extrapolation (eq. 3), from the formula above.

    ``z`` ``(N, D)``: the query network's outputs before the normaliser; ``k`` ``(N, D)`` unit keys (detached);
    ``negatives`` ``(K, D)`` unit queue entries; the loss is the mean over the N queries.
    """
    norm = z.norm(dim=1, keepdim=True)
    q = z / norm
    q_ft, k_ft = T.extrapolate_positive(q, k, lam)
    logits = logits_from_scores((q_ft * k_ft).sum(1), q_ft @ negatives.T, tau)
    p = logits.softmax(1)
    pull = (1 - p[:, :1]) * alignment_weight(lam) * k - lam * p[:, 1:] @ negatives  # (1 - p0)(A k - l n_bar)
    tangent = pull - (pull * q).sum(1, keepdim=True) * q
    return -tangent / (tau * norm) / z.shape[0]


def autograd_gradient(z: torch.Tensor, k: torch.Tensor, negatives: torch.Tensor, lam: float, tau: float) -> torch.Tensor:
    """The same gradient by autograd through the library's own FT and loss functions (what training runs)."""
    z = z.detach().clone().requires_grad_(True)
    q_ft, k_ft = T.extrapolate_positive(F.normalize(z, dim=1), k, lam)
    loss = info_nce(logits_from_scores((q_ft * k_ft).sum(1), q_ft @ negatives.T, tau))
    (grad,) = torch.autograd.grad(loss, z)
    return grad


def contraction_rate(rho: float, lam: float, tau: float = 0.2, n: int = 512, dim: int = 64, queue: int = 4096,
                     spread: float = 1e-3, lr: float = 1e-2, seed: int = 0) -> float:
    """Relative change of a concentrated representation's spread after one SGD step of the FT loss.

    Builds the state of the linearisation in float64: queries ``m + spread d`` around one unit direction ``m``,
    keys ``m + spread e`` whose deviations correlate with the queries' by ``rho``, a queue of unrelated deviations;
    takes one step through :func:`autograd_gradient` and returns ``spread_after / spread_before - 1`` of the
    normalised queries.  Negative: the state contracts (collapse attracts); positive: it spreads out.
    """
    if not -1 <= rho <= 1:
        raise ValueError(f"rho={rho} is a correlation; choose it in [-1, 1].")
    g = torch.Generator().manual_seed(seed)
    m = F.normalize(torch.randn(1, dim, generator=g, dtype=torch.float64), dim=1)

    def tangent(x: torch.Tensor) -> torch.Tensor:
        return x - (x * m).sum(1, keepdim=True) * m

    d = tangent(torch.randn(n, dim, generator=g, dtype=torch.float64))
    e = rho * d + (1 - rho**2) ** 0.5 * tangent(torch.randn(n, dim, generator=g, dtype=torch.float64))
    eta = tangent(torch.randn(queue, dim, generator=g, dtype=torch.float64))
    z = m + spread * d
    k, negatives = F.normalize(m + spread * e, dim=1), F.normalize(m + spread * eta, dim=1)
    step = z - lr * n * autograd_gradient(z, k, negatives, lam, tau)  # n: the gradient of the per-query loss

    def size(x: torch.Tensor) -> torch.Tensor:
        x = F.normalize(x, dim=1)
        return (x - x.mean(0)).pow(2).sum(1).mean()

    return float(size(step) / size(z) - 1)


def paired_comparison(label: str, records: list[dict], baseline: str, treated: str, key: str = "linear_top1",
                      effect: float | None = None) -> dict:
    """One row of the diagnosis: ``treated`` (FT) against ``baseline`` over the seeds both have, with the paired
    95 % interval and the verdict (:func:`ftcl_core.results.claims.judge`) on the paper's claim that FT helps (above
    ``baseline``, by the paper's ``effect`` in points where given); ``key``: the readout compared (``knn_top1`` for
    the kNN readout)."""
    base, ft = ([r[key] for r in records if r["setting"] == s] for s in (baseline, treated))
    paired = paired_records(records, treated, baseline, key, device=run_device)  # each run's provenance read once
    judged = verdicts.judge(Claim(treated, baseline, effect=effect, direction=1), paired)
    return {"comparison": label, "baseline": mean_ci95(base)[0], "ft": mean_ci95(ft)[0], "diff": paired.mean,
            "ci95": paired.ci95, "n_seeds": paired.n, "verdict": judged.word if paired.n else "not run",
            "mixed_devices": paired.mixed_seeds, "devices": sorted({d for pair_ in paired.devices for d in pair_} - {""})}


def claim_effect(path: str | Path, arm: str, reference: str) -> float | None:
    """The paper's effect (points) that the experiment file at ``path`` states for ``arm`` against ``reference``
    (its ``claims``; None where it states none), so that a chapter's comparison is judged with the paper's size."""
    exp = X.Experiment.load(path)
    stated = next((c.effect for c in exp.claims if c.arm == arm and c.reference == reference), None)
    return stated if stated is not None else exp.paper_effect(arm, reference)


def run_device(record: dict) -> str:
    """The kind of device a stored run trained on (:func:`experiments.trained_on`), or "" for a record without
    a run folder."""
    return X.trained_on(RunDir(record["dir"])) if record.get("dir") else ""


def mixed_device_seeds(records: list[dict], a: str, b: str) -> list[int]:
    """Seeds whose ``a`` and ``b`` runs trained on different devices (a CPU run paired with a GPU run: the same
    initialisation and data order, not the same float rounding), so that a reader can weigh such a pair."""
    return paired_records(records, a, b, device=run_device).mixed_seeds


def _seeds(seeds: list[int]) -> str:
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"


def same_run_gaps(a: list[dict], a_setting: str, b: list[dict], b_setting: str, key: str = "linear_top1") -> list[float]:
    """Per seed both hold, the absolute readout difference between two stored runs of one config trained on
    different devices (``a`` and ``b``): how far float rounding alone moves a run."""
    left = {r["seed"]: r for r in a if r["setting"] == a_setting}
    right = {r["seed"]: r for r in b if r["setting"] == b_setting}
    devices = {s: (run_device(left[s]), run_device(right[s])) for s in set(left) & set(right)}
    paired = pair({s: r[key] for s, r in left.items()}, {s: r[key] for s, r in right.items()}, devices)
    return [abs(v) for v, (da, db) in zip(paired.values, paired.devices) if da != db]


def relabel(records: list[dict], names: dict[str, str]) -> list[dict]:
    """The records of the settings in ``names``, renamed, so that runs of two tables pair by seed in
    :func:`paired_comparison` (e.g. FT with and without the oracle's same-class negatives)."""
    return [{**r, "setting": names[r["setting"]]} for r in records if r["setting"] in names]


def gap_records(records: list[dict], baseline: str, treated: str, name: str, key: str = "linear_top1") -> list[dict]:
    """Per seed, ``treated`` minus ``baseline`` (FT's gain, negative for a cost) as a record of setting ``name``,
    so that :func:`paired_comparison` compares two such gaps by seed (FT's cost at two training lengths, say)."""
    paired = pair(by_seed(records, treated, key), by_seed(records, baseline, key))
    return [{"setting": name, "seed": seed, key: gap} for seed, gap in zip(paired.seeds, paired.values)]


def length_rows(path: str | Path, records: list[dict], profile: str = "cpu", key: str = "linear_top1",
                label: str = "") -> list[dict]:
    """Question 1 (training length) from an experiment whose settings come in pairs "baseline N" / "+both N" (N
    epochs, e.g. ``experiments/diagnosis/length_long_v1.yaml``): one :func:`paired_comparison` row per length
    (``kind`` "length", shortest first, each with its ``steps``), then (``kind`` "gain"), for each longer length,
    FT's gain over its baseline there against its gain at the shortest length, paired by seed (above zero: the
    longer run narrows FT's cost)."""
    exp = X.Experiment.load(path)
    lengths = sorted({int(name.split()[-1]) for name in exp.settings if name.startswith("baseline ")})

    steps = {n: X.planned_steps(X.resolve(X.base_for(exp, profile), exp.overrides(f"baseline {n}", exp.seeds[0]),
                                          profile)) for n in lengths}
    prefix = f"{label}, " if label else ""
    rows = [{**paired_comparison(f"{prefix}{steps[n]} steps: FT against its baseline", records, f"baseline {n}",
                                 f"+both {n}", key, claim_effect(path, f"+both {n}", f"baseline {n}")),
             "steps": steps[n], "epochs": n, "kind": "length"} for n in lengths]
    short = lengths[0]
    gap = [(n, gap_records(records, f"baseline {n}", f"+both {n}", f"gap {n}", key)) for n in lengths]
    for n, recs in gap[1:]:
        rows.append({**paired_comparison(f"{prefix}FT's gain over its baseline: {steps[n]} against {steps[short]} "
                                         "steps", recs + gap[0][1], f"gap {short}", f"gap {n}", key),
                     "steps": steps[n], "epochs": n, "kind": "gain"})
    return rows


def length_sentence(label: str, rows: list[dict], readout: str = "linear readout") -> str:
    """What :func:`length_rows` says in one sentence: FT's paired difference at each length with 3 seeds, and
    whether the longer run narrows it (a verdict on the gain needs 3 seeds)."""
    per_length = [r for r in rows if r["kind"] == "length" and r["n_seeds"]]
    gains = [r for r in rows if r["kind"] == "gain" and r["n_seeds"]]
    if not per_length:
        return f"On {label} no training length was run."
    text = (f"On {label}, FT from the first step minus its baseline ({readout}, points): " +
            ", ".join(f"{plus_minus(r['diff'], r['ci95'], signed=True)} at {r['steps']} steps ({r['n_seeds']} seeds"
                      + (f", trained on {' and '.join(d.upper() if d == 'cpu' else 'GPU' for d in r['devices'])}"
                         if set(r.get("devices") or ["cpu"]) != {"cpu"} else "") + ")"
                      for r in per_length))
    decided = [r for r in gains if r["n_seeds"] >= MIN_SEEDS and verdicts.side(r["verdict"]) != 0]
    if decided:
        g = decided[-1]
        text += (f": the longer run {'narrows' if g['diff'] > 0 else 'widens'} FT's cost by {abs(g['diff']):.1f} ± "
                 f"{g['ci95']:.1f} points ({g['steps']} steps, paired by seed)")
        if g["diff"] > 0 and verdicts.side(per_length[-1]["verdict"]) < 0:
            text += ", yet FT is still below its baseline there"
    elif gains:
        text += "; whether the longer run narrows that cost is undecided (fewer than 3 seeds, or an interval holding zero)"
    missing = [f"{r['steps']}" for r in rows if r["kind"] == "length" and not r["n_seeds"]]
    return text + "." + (f" Written but not run: the pair at {' and '.join(missing)} steps." if missing else "")


def representation_signature(records: list[dict], setting: str) -> dict[str, float]:
    """How far a setting's runs concentrate their features, averaged over seeds: the highest Mean(neg) of the raw
    cosines (Supp A; near 1: every image maps near one point), the final effective rank of the features and the
    final correlation rho of the two views' deviations (NaN where the runs predate those columns)."""
    peak, rank, rho = [], [], []
    for r in (r for r in records if r["setting"] == setting):
        m = RunDir(r["dir"]).load_metrics()
        peak.append(float(np.max(m["neg_mean"])))
        rank.append(float(m["erank"][-1]) if "erank" in m else math.nan)
        rho.append(float(m["rho"][-1]) if "rho" in m else math.nan)
    mean = (lambda v: float(np.mean(v)) if v else math.nan)  # noqa: E731
    return {"n_seeds": len(peak), "peak_neg_mean": mean(peak), "final_erank": mean(rank), "final_rho": mean(rho)}


NEGATIVE_WINDOW = 100  # steps at the end of a run over which its raw Mean(neg) is read


def with_negative_scores(records: list[dict], window: int = NEGATIVE_WINDOW) -> list[dict]:
    """Copies of ``records`` with three readings of the negatives each run's loss saw, from its Supp A statistics
    (Sec 3.2: the raw cosines and the scores after FT, over the first 64 queries of each step):

    * ``neg_shift``: Mean(neg) after FT minus the raw Mean(neg), averaged over the run (> 0: FT moved the
      negatives towards the query);
    * ``neg_var_ratio``: Var(neg) after FT over the raw Var(neg), averaged over the run (< 1: FT narrowed the
      scores, so fewer negatives lie near the query; > 1: widened them);
    * ``final_neg_mean``: the raw Mean(neg) over the last ``window`` steps (near 1: every image near one point).

    Each negative enters InfoNCE (eq. 1) through its score over tau, so a higher mean or a wider spread makes the
    set of negatives harder.  Supp F's question is whether re-normalising mixed negatives changes exactly this: a
    mix of two unit vectors is shorter than one, so its score is the mix of theirs, pulled towards the mean."""
    out = []
    for r in records:
        m = RunDir(r["dir"]).load_metrics()
        out.append({**r, "neg_shift": float(np.mean(m["ft_neg_mean"] - m["neg_mean"])),
                    "neg_var_ratio": float(np.mean(m["ft_neg_var"] / np.maximum(m["neg_var"], 1e-12))),
                    "final_neg_mean": float(np.mean(m["neg_mean"][-window:]))})
    return out


def negative_rows(pairs: list[tuple[str, list[dict], str, str]]) -> list[dict]:
    """For each ``(label, records, baseline, treated)``: the :func:`paired_comparison` of the readout, with the
    treated runs' :func:`with_negative_scores` readings (mean and 95 % interval over seeds) and the baseline's
    final raw Mean(neg) beside it."""
    rows = []
    for label, records, baseline, treated in pairs:
        scored = with_negative_scores([r for r in records if r["setting"] in (baseline, treated)])
        row = paired_comparison(label, scored, baseline, treated)
        for key in ("neg_shift", "neg_var_ratio", "final_neg_mean"):
            row[key], row[f"{key}_ci95"] = mean_ci95([r[key] for r in scored if r["setting"] == treated])
        row["baseline_final_neg_mean"] = mean_ci95([r["final_neg_mean"] for r in scored if r["setting"] == baseline])[0]
        rows.append(row)
    return rows


def negative_cells(row: dict) -> list[str]:
    """A :func:`negative_rows` row as table cells: the comparison's cells, then the three negative readings."""
    cells = comparison_cells(row)
    if not row["n_seeds"]:
        return [*cells, "", "", ""]
    return [*cells, plus_minus(row["neg_shift"], row["neg_shift_ci95"], 3, signed=True),
            plus_minus(row["neg_var_ratio"], row["neg_var_ratio_ci95"], 2),
            f"{row['final_neg_mean']:.2f} ({row['baseline_final_neg_mean']:.2f})"]


def harder_by(row: dict) -> list[str]:
    """How a :func:`negative_rows` row's FT made the negatives harder than the queue they came from, each beyond its
    95 % interval over seeds: ``"mean +x"`` (the scores raised) and/or ``"spread xr"`` (widened); [] for neither."""
    how = []
    if row["n_seeds"] and row["neg_shift"] - row["neg_shift_ci95"] > 0:
        how.append(f"mean {row['neg_shift']:+.2f}")
    if row["n_seeds"] and row["neg_var_ratio"] - row["neg_var_ratio_ci95"] > 1:
        how.append(f"spread x{row['neg_var_ratio']:.2f}")
    return how


def harder_negatives(row: dict) -> bool | None:
    """Whether a :func:`negative_rows` row's FT made the negatives harder than their queue (:func:`harder_by`);
    None without runs."""
    return bool(harder_by(row)) if row["n_seeds"] else None


def renorm_sentence(plain: dict, renorm: dict, against: dict) -> str:
    """Supp F's re-normalisation reading tested on stored runs, as generated Markdown: ``plain`` and ``renorm`` are
    :func:`negative_rows` rows of interpolated negatives without and with re-normalisation against the same
    baseline; ``against`` a :func:`paired_comparison` of the readout, re-normalised against plain (the same seeds)."""
    if min(plain["n_seeds"], renorm["n_seeds"], against["n_seeds"]) < MIN_SEEDS:
        return ("Supp F's reading (re-normalising a mixed negative makes it harder) is undecided: it needs both kinds "
                f"of mixed negatives at {MIN_SEEDS} seeds of one recipe.")
    wider = renorm["neg_var_ratio"] - renorm["neg_var_ratio_ci95"] > plain["neg_var_ratio"] + plain["neg_var_ratio_ci95"]
    text = (f"Without re-normalisation, mixing leaves the mean score of the negatives where it was (shift "
            f"{plus_minus(plain['neg_shift'], plain['neg_shift_ci95'], 3, signed=True)}) and narrows their spread to "
            f"{plain['neg_var_ratio']:.2f} of the raw queue's: fewer negatives lie near the query. "
            f"Re-normalised, the spread is {renorm['neg_var_ratio']:.2f} of the queue's and the mean shifts by "
            f"{plus_minus(renorm['neg_shift'], renorm['neg_shift_ci95'], 3, signed=True)}: ")
    hard = harder_negatives(renorm)  # harder than the raw queue, not just than plain mixes
    text += ("the re-normalised mixes are harder than plain ones, as Supp F's reading predicts"
             + (", though still narrower than the raw queue. " if not hard else ". ")
             if wider else "these statistics do not tell the two kinds of mixes apart, against Supp F's reading. ")
    lost = verdicts.side(against["verdict"]) < 0
    change = (f"cost {plus_minus(-against['diff'], against['ci95'])}" if lost
              else f"differ by {plus_minus(against['diff'], against['ci95'], signed=True)}")
    text += (f"Readout: re-normalised mixes {change} points against plain ones (paired, {against['n_seeds']} seeds"
             f"{'' if lost else ', an interval that holds zero'}).")
    if lost and wider and not hard and verdicts.side(plain["verdict"]) == 0:
        text += (" The direction fits the reading, but hardness alone cannot explain the cost: were harder negatives the "
                 "cause, the baseline, whose loss sees the raw queue at its full spread, would lose more than the "
                 "re-normalised mixes; it reads out as well as plain mixing (plain against baseline "
                 f"{plus_minus(plain['diff'], plain['ci95'], signed=True)}). What else re-normalisation changes (each "
                 "mix is a point between two keys lifted back onto the sphere, where no image lies) is not tested here; "
                 "the cause of Supp F's loss stays undecided.")
    return text


def harder_negatives_sentence(rows: list[dict]) -> str:
    """Generated Markdown over :func:`negative_rows` rows: which settings made the negatives harder than their queue
    (:func:`harder_negatives`), with each one's readout change and where its raw Mean(neg) ends."""
    def part(r: dict) -> str:
        return (f"{r['comparison']} ({', '.join(harder_by(r))}; readout {plus_minus(r['diff'], r['ci95'], signed=True)}, "
                f"{r['verdict']}; raw Mean(neg) ends at {r['final_neg_mean']:.2f})")

    harder = [r for r in rows if harder_negatives(r)]
    if not harder:
        return "No stored setting makes the negatives harder than the queue they come from."
    return ("Harder than the queue they come from: " + "; ".join(part(r) for r in harder) + f". The baseline's raw "
            f"Mean(neg) ends at {harder[0]['baseline_final_neg_mean']:.2f}; near 1, every image maps near one point "
            "(chapter 6's collapse signature).")


def switch_on_state(records: list[dict], setting: str, window: int = 5) -> dict:
    """Where a setting's runs stand when FT switches on (``ft.start_epoch``; Table 7), averaged over seeds: the
    views' deviation correlation rho and Mean(neg) of the raw cosines over the ``window`` steps before (the first
    step's value when FT is on from the start), to be read against the attraction threshold ``1 - l / A``; the
    highest Mean(neg) after the switch, and per seed the steps from the switch until Mean(neg) passes 0.9 (None:
    never). NaN where the runs predate the rho column."""
    rho, neg, peak, firsts = [], [], [], []
    for r in sorted((r for r in records if r["setting"] == setting), key=lambda r: r["seed"]):
        run = RunDir(r["dir"])
        m = run.load_metrics()
        start = int(np.searchsorted(m["epoch"], run.load_config().ft.start_epoch))
        before = slice(max(0, start - window), start) if start else slice(0, 1)
        rho.append(float(m["rho"][before].mean()) if "rho" in m else math.nan)
        neg.append(float(m["neg_mean"][before].mean()))
        peak.append(float(m["neg_mean"][start:].max()))
        firsts.append(first_step_above(m["neg_mean"][start:]))
    mean = (lambda v: float(np.mean(v)) if v else math.nan)  # noqa: E731
    return {"n_seeds": len(neg), "rho_before": mean(rho), "neg_mean_before": mean(neg), "peak_neg_mean_after": mean(peak),
            "steps_to_collapse": firsts}


def start_fraction_rows(path: str | Path, records: list[dict], profile: str = "cpu",
                        key: str = "linear_top1") -> dict[float, dict]:
    """A Table 7-style experiment (FT switched on at ``ft.start_epoch``) as :func:`paired_comparison` rows keyed by
    the fraction of the run that passes before FT switches on (start epoch / epochs, to 2 decimals), so that runs
    of different lengths line up in one phase diagram (training length x start fraction)."""
    exp = X.Experiment.load(path)
    rows = {}
    for setting, reference in exp.compare.items():
        cfg = X.resolve(X.base_for(exp, profile), exp.overrides(setting, exp.seeds[0]), profile)
        rows[round(cfg.ft.start_epoch / cfg.train.epochs, 2)] = paired_comparison(
            setting, records, reference, setting, key, claim_effect(path, setting, reference))
    return rows


def comparison_cells(row: dict) -> list[str]:
    """A :func:`paired_comparison` row as table cells: label, both means, the paired difference ± CI, seeds, verdict."""
    mixed = row.get("mixed_devices") or []
    seeds = str(row["n_seeds"]) + (f" ({_seeds(mixed)}: CPU against GPU)" if mixed else "")
    return [row["comparison"], cell(row["baseline"]), cell(row["ft"]),
            " ± ".join(filter(None, [cell(row["diff"]), cell(row["ci95"])])), seeds, row["verdict"]]


def comparison_sentence(row: dict, meaning: dict[str, str]) -> str:
    """One Markdown bullet for a :func:`paired_comparison` row, generated from its numbers: undecided below 3 seeds,
    inconclusive when the 95 % interval holds zero, else the side and ``meaning['above' | 'below']``."""
    if row["n_seeds"] < MIN_SEEDS:
        return (f"* **{row['comparison']}**: {row['n_seeds']} seed(s) stored, fewer than the {MIN_SEEDS} a verdict "
                "needs: undecided.")
    if verdicts.side(row["verdict"]) == 0:
        return (f"* **{row['comparison']}**: {plus_minus(row['diff'], row['ci95'])} points over {row['n_seeds']} "
                f"seeds, which cannot be told from zero: {row['verdict']}.")
    side = "above" if row["diff"] > 0 else "below"
    return (f"* **{row['comparison']}**: {plus_minus(abs(row['diff']), row['ci95'])} points {side} "
            f"({row['n_seeds']} seeds). " + meaning[side])


def _decided(row: dict, direction: int) -> bool:
    """Whether ``row``'s verdict decides its comparison on ``direction``'s side (+1: FT helps, -1: it costs)."""
    return row["n_seeds"] >= MIN_SEEDS and verdicts.side(row["verdict"]) == direction


def switch_on_sentence(starts: list[tuple[str, dict, dict]], level: float = 0.9) -> str:
    """Table 7's starts in words, for ``(setting, table row, switch_on_state)`` triples: per start, how many seeds
    pass chapter 5's collapse level (Mean(neg) above ``level``) after FT switches on, and which starts cost linear
    readout (the row's verdict, 3 seeds). A start that costs readout although some of its seeds never pass the level
    shows that passing it is not what separates the starts that lose."""
    if not starts:
        return "No stored runs of Table 7."
    passed = {s: sum(f is not None for f in st["steps_to_collapse"]) for s, _, st in starts}
    text = (f"Seeds whose Mean(neg) passes {level} after FT switches on: "
            + "; ".join(f"{s}: {passed[s]} of {st['n_seeds']}" for s, _, st in starts) + ".")
    costly = [(s, st) for s, row, st in starts if _decided(row, -1)]
    if not costly:
        return text + " No start costs linear readout significantly."
    partial = [s for s, st in costly if passed[s] < st["n_seeds"]]
    text += f" FT costs linear readout significantly from {', '.join(s for s, _ in costly)}"
    if partial:
        return text + (f"; at {' and '.join(partial)} not every seed passes {level}, so passing chapter 5's collapse level "
                       "is not what separates the starts that lose from those that do not.")
    return text + f", where every seed passes {level}."


def random_queue_sentence(cfg, start: str, row: dict) -> str:
    """The paper's own account of an early FT start tested on Table 7's runs, as generated Markdown. The supplement
    ("FT in the Early Training Stage") blames FT from epoch 0 on a queue still initialised with random vectors and
    starts FT at epoch 2, once the queue holds real keys. ``cfg`` is the runs' config (queue size, batch, steps per
    epoch), ``start`` the setting that switches FT on at ``cfg.ft.start_epoch`` and ``row`` its Table 7 row against
    training without FT. If that start, with a queue of real keys only, still costs readout, the random queue is not
    the cause here."""
    fill = math.ceil(cfg.moco.queue_size / cfg.train.batch_size)
    switch = cfg.ft.start_epoch * (cfg.data.n_train // cfg.train.batch_size)
    text = (f"The paper's supplement blames FT's trouble in the first epoch on a queue that still holds its random "
            f"initial vectors, and starts FT at epoch 2. Here the queue of {cfg.moco.queue_size} keys holds real keys "
            f"only after {fill} steps; {start} switches FT on after {switch} steps, "
            + ("with a queue of real keys, " if switch >= fill else "before the queue is full, "))
    if not row["n_seeds"]:
        return text + "and has no stored runs."
    text += (f"and reads out {plus_minus(row['diff_mean'], row['diff_ci95'], signed=True)} points against never "
             f"({row['verdict']}, {X._count(row['n_seeds'], 'seed')})")
    if switch >= fill and _decided(row, -1):
        return text + ": the random queue is not what makes an early start costly here."
    return text + "."


def baseline_caveat(aims: list[dict], settings: tuple[str, ...] = ("v1 baseline", "v2 baseline"), data: str = "shapes") -> str:
    """Which of the calibrated baselines FT is paired with miss the issue's aims at the tables' budget
    (:func:`ftcl_core.experiments.baseline_aims` rows), as generated Markdown, and whether MoCo v2 reads out below
    v1: a comparison with FT is only as firm as its baseline."""
    parts = []
    for a in (a for a in aims if a["data"] == data and a["setting"] in settings):
        misses = ([f"a gain of {a['gain']:+.1f} points over the random-init encoder, short of "
                   f"+{X.BASELINE_AIMS['gain']:.0f}"] if a["gain_met"] is False else [])
        misses += ([f"a spread of ± {a['ci95']:.1f}, wider than ± {X.BASELINE_AIMS['spread']:.0f}"]
                   if a["spread_met"] is False else [])
        if misses:
            parts.append(f"{a['setting']} ({plus_minus(a['mean'], a['ci95'])} %, {X._count(a['n_seeds'], 'seed')}) misses the "
                         f"issue's aims with {' and '.join(misses)}")
    order = X.v2_against_v1([a for a in aims if a["data"] == data]).get(data)
    if not parts and not (order and order[1] < order[0]):
        return "Both baselines meet the issue's aims at the tables' budget (chapter 9)." if aims else ""
    text = ("; ".join(parts) + ": its comparison with FT rests on that baseline. ") if parts else ""
    if order and order[1] < order[0]:
        text += (f"MoCo v2's baseline reads out below v1's ({order[1]:.1f} % against {order[0]:.1f} %), the reverse of "
                 "the literature's order (chapter 9).")
    return text.strip()


def _concentration_clause(first_peaks: dict[str, float], real: list[str]) -> str:
    """The end of :func:`conclusion`'s sentence on FT from the first step, where real photographs give an
    inconclusive comparison (``real``): whether FT concentrated them as far as the shapes (``first_peaks``: the
    highest seed-mean Mean(neg) after FT from the first step, per phase-diagram row; rows named "shapes..." are the
    shapes), and so whether early concentration alone can set the cost."""
    shapes = [v for k, v in first_peaks.items() if k.startswith("shapes")]
    photos = [v for k, v in first_peaks.items() if not k.startswith("shapes")]
    verdict = f"the same comparison is inconclusive on real photographs ({'; '.join(real)})"
    if not (shapes and photos):
        return f", but {verdict}."
    peaks = (f"Mean(neg) of the raw cosines peaks at {max(photos):.2f} there against {max(shapes):.2f} on the shapes, "
             "the highest seed-means")
    if round(max(shapes) - max(photos), 2) <= 0.05:  # as concentrated, within the spread of seed means
        return (f", but not how much readout that costs: {verdict}, although FT from the first step concentrates "
                f"those features as far ({peaks}). What turns the early concentration into a loss of readout on the "
                "shapes and not on the photographs is undecided.")
    return f"; {verdict}, where FT from the first step concentrates the features less ({peaks})."


def conclusion(phase: dict[str, dict[float, dict]], phase_knn: dict[str, dict[float, dict]],
               switch: dict[str, dict[float, dict]], band: tuple[float, float], from_start: dict[str, dict],
               lengths: dict[str, list[dict]] | None = None) -> str:
    """Chapter 7's answer, generated from the stored comparisons so that it cannot drift from them.

    ``phase`` / ``phase_knn``: per row of the phase diagram (data and length), :func:`start_fraction_rows` for the
    linear and the kNN readout; ``switch``: the same cells' :func:`switch_on_state`; ``band``: the attraction
    threshold band (:func:`threshold_band`); ``from_start``: named :func:`paired_comparison` rows of FT from the
    first step (``"oracle"``, ``"classes"``, ``"recipe"``, ``"init"``, ``"shards"`` on the shapes are read by
    name); ``lengths``: per data set, :func:`length_rows` (question 1). A verdict needs 3 seeds; fewer, and a cell
    counts as undecided."""
    def knn(label, f):  # the kNN readout of the same cell: a gain on the linear probe may be a loss here
        r = phase_knn.get(label, {}).get(f)
        return f", kNN {plus_minus(r['diff'], r['ci95'], signed=True)}" if r and r["n_seeds"] else ""

    def where(cells, with_knn=False):
        return "; ".join(f"{label}, from {f:.0%} of the run: {plus_minus(r['diff'], r['ci95'], signed=True)}"
                         + (knn(label, f) if with_knn else "") for label, f, r in cells)

    cells = [(label, f, r) for label, rows in phase.items() for f, r in sorted(rows.items())]
    helps = [(lb, f, r) for lb, f, r in cells if _decided(r, 1)]
    hurts_late = [(lb, f, r) for lb, f, r in cells if f and _decided(r, -1)]
    knn_late = [(lb, f, r) for lb, rows in phase_knn.items() for f, r in sorted(rows.items())
                if f and _decided(r, -1)]
    decided_first = {key: r for key, r in from_start.items() if r["n_seeds"] >= MIN_SEEDS}
    start_rows = list(decided_first.values())
    losses = [FIRST_STEP_NAMES.get(k, k) for k, r in decided_first.items() if verdicts.side(r["verdict"]) < 0]
    wins = [FIRST_STEP_NAMES.get(k, k) for k, r in decided_first.items() if verdicts.side(r["verdict"]) > 0]
    late = [st for rows in switch.values() for f, st in rows.items() if f and st["n_seeds"]]
    first = [st for rows in switch.values() for f, st in rows.items() if not f and st["n_seeds"]]
    rho = [st["rho_before"] for st in late if math.isfinite(st["rho_before"])]
    first_peaks = {label: rows[0.0]["peak_neg_mean_after"] for label, rows in switch.items()
                   if 0.0 in rows and rows[0.0]["n_seeds"]}
    out = ["**The answer at this scale.**"]
    mixed = [f"{lb}, from {f:.0%}: {_seeds(r['mixed_devices'])}" for lb, f, r in helps if r.get("mixed_devices")]
    decided_cells = sum(r["n_seeds"] >= 3 for _, _, r in cells)
    chance = (f" Each cell is judged on its own 95 % interval: of {decided_cells} cells where FT did nothing, about "
              f"{decided_cells * 0.025:.1f} would pass on the paper's side by chance alone.") if helps else ""
    out.append((f"FT helps in {len(helps)} of the {decided_cells} phase-diagram cells "
                f"with 3 seeds, all with a late start, by little ({where(helps, with_knn=True)} points; linear readout "
                "first)" + (f"; in {'; '.join(mixed)}, the FT run and its baseline trained on different devices (CPU and "
                            "GPU), so float rounding stands in that pair beside FT." if mixed else ".")
                if helps and all(f for _, f, _ in helps) else
                f"FT helps in these cells: {where(helps)} points of linear readout." if helps else
                "FT helps in no setting tried here with 3 seeds.") + chance)
    knn_first = any(_decided(r, -1) for rows in phase_knn.values() for f, r in rows.items() if not f)
    if start_rows:
        named_losses = f" ({'; '.join(losses)})" if losses else ""
        named_wins = f" ({'; '.join(wins)})" if wins else ""
        shapes = sum(k != "recipe v2" and FIRST_STEP_NAMES.get(k, k).startswith("shapes") for k in decided_first)
        out.append(f"Switched on from the first step it loses in {len(losses)} of {len(start_rows)} comparisons with "
                   f"3 seeds{named_losses} and wins in {len(wins)}{named_wins}"
                   + (f" ({shapes} of them change one part each of the same MoCo v1 recipe on the shapes, so they are "
                      "not independent tests)" if shapes > 1 else "")
                   + (", and on real photographs, where the linear probe undoes most of its cost, it still costs the "
                      "kNN readout." if knn_first else "."))
    if rho:
        peak_late = max(st["peak_neg_mean_after"] for st in late)
        peak_first = max((st["peak_neg_mean_after"] for st in first), default=math.nan)
        above = sum(r > band[1] for r in rho)
        out.append(f"Switched on later, the views' correlation ρ stands at {min(rho):.2f} to {max(rho):.2f} when FT "
                   f"switches on, above the attraction threshold band ({band[0]:.2f} to {band[1]:.2f}) in {above} of "
                   f"{len(rho)} cells, and FT concentrates the features less: Mean(neg) of the raw cosines peaks at "
                   f"{peak_late:.2f} at most after a late switch, against {peak_first:.2f} from the first step (the "
                   "highest seed-mean over the cells, no interval).")
    if hurts_late:
        out.append(f"A late start does not always pay: it still costs linear readout in {where(hurts_late)} points.")
    if knn_late:
        out.append(f"Its kNN readout still loses in {where(knn_late)} points, so even a late start leaves the "
                   "features a little less usable as they are.")
    phrases = {"oracle": "without a single same-class negative", "classes": "with a third as many (30 classes)",
               "recipe": "on the recipe calibrated without FT",
               "init": "with Kaiming initialisation", "shards": "with one λ per shard of 32 queries"}
    survives = [text for key, text in phrases.items() if key in from_start and _decided(from_start[key], -1)]
    if survives:
        real = [FIRST_STEP_NAMES.get(k, k) for k in ("real", "real, longer")
                if k in decided_first and verdicts.side(decided_first[k]["verdict"]) == 0]
        out.append("From the first step FT still loses on the shapes " + "; ".join(survives) + ": the cost does not "
                   "come from the parts of the recipe varied here (the network, the crop size and the queue length "
                   "stayed those of the shapes' recipe). The algebra explains why the features concentrate early "
                   "(while ρ is below the threshold, positive extrapolation makes a concentrated state attract)"
                   + (_concentration_clause(first_peaks, real) if real else ", not yet how much readout that costs."))
    out += [length_sentence(label, rows) for label, rows in (lengths or {}).items()]
    help_at = sorted({f for _, f, _ in helps})
    not_everywhere = any(f in help_at and not _decided(r, 1) for _, f, r in cells if r["n_seeds"])
    longest = max((r["steps"] for rows in (lengths or {}).values() for r in rows
                   if r["kind"] == "length" and r["n_seeds"] >= MIN_SEEDS), default=None)
    paper = f"{min(PAPER_TABLE7_STEPS.values()):,} to {max(PAPER_TABLE7_STEPS.values()):,}".replace(",", " ")
    out.append(f"Whether the paper's far longer runs ({paper} steps in its Table 7) outgrow the early cost is not "
               "decided here" + (f" (the longest pair with 3 seeds here has {longest} steps)" if longest else "")
               + ". What a reader "
               "can act on: at a small budget, do not switch FT on from the first step; a late start mostly avoids "
               "that cost, but what it gains is small and not consistent" +
               (f" (the cells where it helped here switch it on after {' or '.join(f'{f:.0%}' for f in help_at)} of the "
                f"run{'; the same start does not help in every cell' if not_everywhere else ''})" if helps else "") +
               ". Judge it with a kNN readout beside the linear probe.")
    return " ".join(out)


# The paper's Table 7 runs in SGD steps: ImageNet-100 (CMC's 100 classes, data/imagenet100.txt) has 126 689 training
# images, at batch 256 (the released recipes, NOTES.md) for 100 epochs (ResNet-18) and 200 epochs (ResNet-50; Table 7).
PAPER_TABLE7_STEPS = {"ResNet-18": 100 * (126_689 // 256), "ResNet-50": 200 * (126_689 // 256)}

# The stored experiments chapter 7's answer rests on (chapter 1 and the README quote it through stored_answer).
START_EXPERIMENTS = {"shapes, 30 epochs": "experiments/table7_start_epoch.yaml",  # D-start-v1's starts and epoch 1
                     "shapes, 120 epochs": "experiments/diagnosis/start_long_v1.yaml",
                     "Fashion-MNIST, 10 epochs": "experiments/diagnosis/start_fmnist_v1.yaml",
                     "Fashion-MNIST, 30 epochs": "experiments/table7_start_epoch_fmnist.yaml"}
FIRST_STEP_EXPERIMENTS = {"recipe": "experiments/diagnosis/recipe_v1.yaml", "recipe v2": "experiments/diagnosis/recipe_v2.yaml",
                          "init": "experiments/diagnosis/init_v1.yaml", "oracle": "experiments/diagnosis/oracle_v1.yaml",
                          "classes": "experiments/diagnosis/classes_v1.yaml",
                          "shards": "experiments/diagnosis/shards_v1.yaml", "real": "experiments/diagnosis/fmnist_v1.yaml",
                          "real, longer": "experiments/diagnosis/length_fmnist_v1.yaml"}
LENGTH_EXPERIMENTS = {"the shapes": "experiments/diagnosis/length_long_v1.yaml"}
FIRST_STEP_NAMES = {  # how the answer names each comparison of FT from the first step against its baseline
    "recipe": "shapes, calibrated MoCo v1", "recipe v2": "shapes, calibrated MoCo v2", "init": "shapes, Kaiming init",
    "oracle": "shapes, no same-class negatives", "classes": "shapes, 30 classes", "shards": "shapes, one λ per shard",
    "real": "Fashion-MNIST, 10 epochs", "real, longer": "Fashion-MNIST, 30 epochs"}


def stored_answer(profile: str = "cpu") -> str:
    """:func:`conclusion` from the stored runs of :data:`START_EXPERIMENTS`, :data:`FIRST_STEP_EXPERIMENTS`
    (FT's "+both" against "baseline") and :data:`LENGTH_EXPERIMENTS`, for readers who want the answer without
    chapter 7's figures."""
    phase, knn, switch = {}, {}, {}
    for label, path in START_EXPERIMENTS.items():
        records = X.load_records(path, profile)
        phase[label] = start_fraction_rows(path, records, profile)
        knn[label] = start_fraction_rows(path, records, profile, "knn_top1")
        switch[label] = {f: switch_on_state(records, row["comparison"]) for f, row in phase[label].items()}
    from_start = {name: paired_comparison(name, X.load_records(path, profile), "baseline", "+both",
                                          effect=claim_effect(path, "+both", "baseline"))
                  for name, path in FIRST_STEP_EXPERIMENTS.items()}
    lengths = {label: length_rows(path, X.load_records(path, profile), profile) for label, path in LENGTH_EXPERIMENTS.items()}
    return conclusion(phase, knn, switch, threshold_band(), from_start, lengths)


def readme_findings_block(summary: Path, profile: str = "cpu") -> str:
    """The README's findings block as ``python -m ftcl_core summary`` writes it: :func:`ftcl_core.experiments.readme_findings`
    of the rows of the summary CSV at ``summary`` and :func:`stored_answer`. One function for the writer and the test
    that keeps the README current, so the two cannot disagree on how the block is built."""
    with open(summary) as fh:
        return X.readme_findings(list(csv.DictReader(fh)), stored_answer(profile), X.tables_without_runs(profile))


DIAGNOSIS_COLUMNS = ("question", "data", "table", "setting", "n_seeds", "mean", "ci95", "reference", "diff_mean", "diff_ci95",
                     "verdict", "first_step_neg_mean_above_0.9", "command", "claim", "effect", "ratio", "p_value",
                     "q_value", "verdict_bh", "reference_shared_by", "knn_diff_mean", "knn_diff_ci95", "knn_verdict")
_P_COLUMNS = ("p_value", "q_value")  # written at 6 decimals (the others at 3)


def diagnosis_rows(folder=None, profile: str = "cpu") -> list[dict]:
    """One row per (question, setting) of the diagnosis files' stored runs: readout mean and CI, the paired
    difference against the setting's reference and its verdict (on the paper's claim that FT helps), and the
    median over seeds of the first step at which Mean(neg) of the raw cosines passes 0.9 (blank: never)."""
    rows = []
    for path in sorted(Path(folder or X.ROOT / "experiments" / "diagnosis").glob("*.yaml")):
        exp = X.Experiment.load(path)
        question = (yaml.safe_load(path.read_text()) or {}).get("question", "")
        records = X.load_records(path, profile)
        data = X.data_set(exp, profile)  # shapes | fashion_mnist | ...
        for row in X.table_rows(exp, records):
            firsts = []
            for r in (r for r in records if r["setting"] == row["setting"]):
                m = RunDir(r["dir"]).load_metrics()
                first = collapse_signature(m["neg_mean"], m["neg_var"])["first_step_above"]
                firsts.append(np.inf if first is None else first)
            median = float(np.median(firsts)) if firsts else np.nan
            rows.append({"question": question, "data": data, "table": row["table"], "setting": row["setting"],
                         "n_seeds": row["n_seeds"], "mean": row["mean"], "ci95": row["ci95"],
                         "reference": row["reference"], "diff_mean": row["diff_mean"], "diff_ci95": row["diff_ci95"],
                         "verdict": row["verdict"],
                         "first_step_neg_mean_above_0.9": "" if not np.isfinite(median) else int(median),
                         "command": f"python -m ftcl_core sweep {_shown(path)}",
                         **{k: row[k] for k in DIAGNOSIS_COLUMNS[13:]}, "_verdict": row.get("_verdict")})
    X.apply_bh(rows)
    return rows


def _shown(path: Path) -> str:
    return str(path.relative_to(X.ROOT)) if path.resolve().is_relative_to(X.ROOT) else str(path)


def write_diagnosis_csv(rows: list[dict], out=None):
    """``results/diagnosis.csv`` (or ``out``) from :func:`diagnosis_rows`."""
    target = Path(out) if out else X.ROOT / "results" / "diagnosis.csv"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=DIAGNOSIS_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: X.csv_number(v, 6 if k in _P_COLUMNS else 3) for k, v in r.items() if not k.startswith("_")})
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, buf.getvalue().encode())
    return target


# Is it the network? FT (+pos +neg) from the first step against the baseline at four encoders, the calibrated MoCo
# v1 recipe on the shapes (30 epochs): resnet10_w16 is D-recipe-v1's pair, the others D-capacity-v1's.
CAPACITY = {"resnet10_w16": ("experiments/diagnosis/recipe_v1.yaml", "baseline", "+both"),
            "resnet10_w32": ("experiments/diagnosis/capacity_v1.yaml", "baseline w32", "+both w32"),
            "resnet18_w32": ("experiments/diagnosis/capacity_v1.yaml", "baseline r18-w32", "+both r18-w32"),
            "resnet18_w64": ("experiments/diagnosis/capacity_v1.yaml", "baseline r18-w64", "+both r18-w64")}


@functools.cache
def encoder_parameters(name: str) -> int:
    """The number of parameters of the backbone ``name`` (:func:`ftcl_core.models.build_encoder`)."""
    from ftcl_core.models import build_encoder

    return sum(p.numel() for p in build_encoder(name).parameters())


def capacity_rows(profile: str = "cpu", key: str = "linear_top1") -> list[dict]:
    """One :func:`paired_comparison` row per encoder of :data:`CAPACITY` (FT from the first step against the
    baseline of the same seeds), with the backbone's parameters, each arm's spread and each arm's final effective
    rank and peak Mean(neg) (:func:`representation_signature`)."""
    rows = []
    for encoder, (path, baseline, treated) in CAPACITY.items():
        records = X.load_records(path, profile)
        row = paired_comparison(encoder, records, baseline, treated, key, claim_effect(path, treated, baseline))
        row["parameters"] = encoder_parameters(encoder)
        for arm, setting in (("baseline", baseline), ("ft", treated)):
            row[f"{arm}_ci95"] = mean_ci95(list(by_seed(records, setting, key).values()))[1]
            sig = representation_signature(records, setting)
            row[f"{arm}_erank"], row[f"{arm}_peak_neg_mean"] = sig["final_erank"], sig["peak_neg_mean"]
        rows.append(row)
    return rows


def capacity_answer(rows: list[dict]) -> str:
    """Chapter 7's answer to "is it the network?", generated from :func:`capacity_rows`: per encoder the paired cost
    of FT from the first step and its verdict, and what the stored pairs decide (nothing beyond the encoders tried,
    at this budget and recipe)."""
    decided = [r for r in rows if r["n_seeds"] >= MIN_SEEDS]
    open_ = [r for r in rows if r["n_seeds"] < MIN_SEEDS]
    parts = []
    for r in decided:
        parts.append(f"{r['comparison']} ({r['parameters'] / 1e6:.2f} M parameters): FT minus baseline "
                     f"{plus_minus(r['diff'], r['ci95'])} points, {r['verdict']}")
    text = ("FT (+pos +neg, the paper's settings) switched on at the first step, paired by seed, on the shapes at 30 "
            "epochs of the calibrated MoCo v1 recipe. " + ("; ".join(parts) + ". " if parts else ""))
    if open_:
        text += ("Fewer than 3 seeds stored, so undecided: " + ", ".join(
            f"{r['comparison']} ({r['n_seeds']} of 3)" for r in open_) + ". ")
    losing = [r for r in decided if verdicts.side(r["verdict"]) < 0]
    if len(decided) >= 2 and len(losing) == len(decided):
        text += (f"FT from the first step costs readout at every encoder decided here, from {decided[0]['comparison']} "
                 f"to {decided[-1]['comparison']}: at this budget and recipe the cost is not an artefact of the "
                 "smallest network; whether a still larger network or the paper's 224-px crops recover is not tested.")
    elif len(decided) >= 2:
        text += "The encoders decided here disagree on the sign: the network matters at this budget."
    else:
        text += "One encoder decided is not enough to say whether the network matters."
    return text
