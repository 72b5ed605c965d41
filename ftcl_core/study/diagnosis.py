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
import dataclasses
import functools
import io
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import yaml

from ftcl_core import transforms as T
from ftcl_core.data import fashion_mnist_root
from ftcl_core.losses import info_nce, logits_from_scores
from ftcl_core.models import build_encoder
from ftcl_core.runs import RunDir, atomic_write_bytes
from ftcl_core.study import experiments as X
from ftcl_core.study.results import claims as verdicts
from ftcl_core.study.results.claims import MIN_SEEDS, Claim
from ftcl_core.study.results.numbers import cell, fixed, plus_minus
from ftcl_core.study.results.paired import by_seed, mean_ci95, pair, paired_records
from ftcl_core.study.signatures import collapse_signature, first_step_above, volatility

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


NOT_RUN = "not run"  # a comparison with no paired seed stored: never trained, not undecided


def paired_comparison(label: str, records: list[dict], baseline: str, treated: str, key: str = "linear_top1",
                      claim: Claim | None = None) -> dict:
    """One row of the diagnosis: ``treated`` (FT) against ``baseline`` over the seeds both have, with the paired
    95 % interval and the verdict (:func:`ftcl_core.study.results.claims.judge`) on the paper's claim that FT helps:
    ``claim`` (:func:`stated_claim`: the paper's effect in points and its two readouts, so that the verdict sees
    the ceiling), else above ``baseline`` by no stated size; ``key``: the readout compared (``knn_top1`` for the
    kNN readout). The row carries both scales (``log_error_ratio``/``_ci95``, ``verdict_points``,
    ``verdict_errors``, ``scale``); :data:`NOT_RUN` while no seed is paired."""
    base, ft = ([r[key] for r in records if r["setting"] == s] for s in (baseline, treated))
    paired = paired_records(records, treated, baseline, key, device=run_device)  # each run's provenance read once
    claim = claim or Claim(treated, baseline, direction=1)
    judged = verdicts.judge(dataclasses.replace(claim, arm=treated, reference=baseline), paired)
    return {"comparison": label, "baseline": mean_ci95(base)[0], "ft": mean_ci95(ft)[0], "diff": paired.mean,
            "ci95": paired.ci95, "n_seeds": paired.n, "verdict": judged.word if paired.n else NOT_RUN,
            "mixed_devices": paired.mixed_seeds, "devices": sorted({d for pair_ in paired.devices for d in pair_} - {""}),
            **X.scale_cells(judged)}


def stated_claim(path: str | Path, arm: str, reference: str) -> Claim | None:
    """The claim that the experiment file at ``path`` makes of ``arm`` against ``reference`` (its ``claims``, else
    the one its ``paper:`` numbers make), with the paper's effect and two readouts, so that a chapter's comparison is
    judged with the paper's size on both scales; None where it states none."""
    exp = X.Experiment.load(path)
    return next((c for c in exp.claims_of(arm) if c.reference == reference and c.kind != "sanity"), None)


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
                                 f"+both {n}", key, stated_claim(path, f"+both {n}", f"baseline {n}")),
             "steps": steps[n], "epochs": n, "kind": "length"} for n in lengths]
    short = lengths[0]
    gap = [(n, gap_records(records, f"baseline {n}", f"+both {n}", f"gap {n}", key)) for n in lengths]
    for n, recs in gap[1:]:
        rows.append({**paired_comparison(f"{prefix}FT's gain over its baseline: {steps[n]} against {steps[short]} "
                                         "steps", recs + gap[0][1], f"gap {short}", f"gap {n}", key),
                     "steps": steps[n], "epochs": n, "kind": "gain"})
    return rows


def error_ratio(row: dict) -> float:
    """How many times as many test images FT gets wrong as its baseline, (100 - FT) / (100 - baseline), from a
    :func:`paired_comparison` row's means: a gap in points shrinks near the ceiling even when this ratio grows. NaN
    when the baseline reads 100 % (no error to compare with)."""
    base_error = 100 - row["baseline"]
    return (100 - row["ft"]) / base_error if base_error > 0 else math.nan


def _paired_so_far(n: int) -> str:
    return f"{n} of {MIN_SEEDS} paired seeds {'is' if n == 1 else 'are'} stored"


def _gain_word(gain: dict) -> str:
    """How a longer run changes FT's cost, read from a :func:`length_rows` "gain" row's verdict (the claim: the
    longer run narrows it): "narrows", "widens", or "cannot be told to change" while the verdict takes no side."""
    side = verdicts.side(gain["verdict"])
    return ("narrows" if side > 0 else "widens") if side else "cannot be told to change"


def longer_length_sentence(rows: list[dict], beyond: int) -> str:
    """Chapter 7's generated sentences on each length of :func:`length_rows` past ``beyond`` epochs (the authored
    paragraph speaks of the lengths up to ``beyond``): the paired difference and its verdict, FT's error ratio
    (:func:`error_ratio`) against the one at ``beyond`` epochs, and whether the longer run narrows FT's cost against
    the shortest length; undecided below 3 paired seeds; empty when no such length is planned."""
    at_beyond = next((r for r in rows if r["kind"] == "length" and r["epochs"] == beyond), None)
    shortest = min((r["epochs"] for r in rows if r["kind"] == "length"), default=None)
    out = []
    for r in (r for r in rows if r["kind"] == "length" and r["epochs"] > beyond):
        at = f"At {r['epochs']} epochs ({r['steps']} steps)"
        if not r["n_seeds"]:
            out.append(f"{at} no paired seed is stored yet.")
            continue
        diff = f"{plus_minus(r['diff'], r['ci95'], signed=True)} points"
        if r["n_seeds"] < MIN_SEEDS:
            out.append(f"{at}, {_paired_so_far(r['n_seeds'])} (FT minus baseline {diff} so far): undecided.")
            continue
        ratio = error_ratio(r)
        text = f"{at}, FT minus its baseline reads {diff} ({verdicts.labelled(r['verdict'], r.get('scale', ''))})"
        if at_beyond and at_beyond["n_seeds"] >= MIN_SEEDS and math.isfinite(ratio):
            before = error_ratio(at_beyond)
            trend = "fewer" if ratio < before else "more"
            text += (f", and FT gets {ratio:.1f} times as many test images wrong as its baseline, {trend} than the "
                     f"{before:.1f} times at {at_beyond['steps']} steps")
        gain = next((g for g in rows if g["kind"] == "gain" and g["epochs"] == r["epochs"]
                     and g["n_seeds"] >= MIN_SEEDS), None)
        if gain:
            text += (f"; against {shortest} epochs the longer run {_gain_word(gain)} FT's cost "
                     f"({plus_minus(gain['diff'], gain['ci95'], signed=True)} points, paired by seed)")
        out.append(text + ".")
    return " ".join(out)


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
        text += (f": the longer run {_gain_word(g)} FT's cost by {abs(g['diff']):.1f} ± "
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
            setting, records, reference, setting, key, stated_claim(path, setting, reference))
    return rows


def comparison_cells(row: dict) -> list[str]:
    """A :func:`paired_comparison` row as table cells: label, both means, the paired difference ± CI, seeds, verdict."""
    mixed = row.get("mixed_devices") or []
    seeds = str(row["n_seeds"]) + (f" ({_seeds(mixed)}: CPU against GPU)" if mixed else "")
    return [row["comparison"], cell(row["baseline"]), cell(row["ft"]),
            " ± ".join(filter(None, [cell(row["diff"]), cell(row["ci95"])])), seeds,
            verdicts.labelled(row["verdict"], row.get("scale", verdicts.POINTS))]


def comparison_sentence(row: dict, meaning: dict[str, str]) -> str:
    """One Markdown bullet for a :func:`paired_comparison` row, generated from its numbers: undecided below 3 seeds,
    "cannot be told from zero" when the 95 % interval holds zero, else the paired difference and
    ``meaning['above' | 'below']`` (the side of zero it lies on)."""
    if row["n_seeds"] < MIN_SEEDS:
        return (f"* **{row['comparison']}**: {row['n_seeds']} seed(s) stored, fewer than the {MIN_SEEDS} a verdict "
                "needs: undecided.")
    diff = plus_minus(row["diff"], row["ci95"], signed=True)
    if verdicts.side(row["verdict"]) == 0:
        return (f"* **{row['comparison']}**: {diff} points over {row['n_seeds']} seeds, which cannot be told from "
                f"zero ({row['verdict']}).")
    side = "above" if row["diff"] > 0 else "below"
    return f"* **{row['comparison']}**: {diff} points ({row['n_seeds']} seeds). " + meaning[side]


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
    text += (f"and reads out {plus_minus(row['diff'], row['ci95'], signed=True)} points against never "
             f"({row['verdict']}, {X._count(row['n_seeds'], 'seed')})")
    if switch >= fill and _decided(row, -1):
        return text + ": the random queue is not what makes an early start costly here."
    return text + "."


def baseline_caveat(aims: list[dict], settings: tuple[str, ...] = ("v1 baseline", "v2 baseline"), data: str = "shapes") -> str:
    """Which of the calibrated baselines FT is paired with miss the bar this book sets for a baseline
    (:data:`ftcl_core.study.experiments.BASELINE_AIMS`) at the tables' budget (:func:`ftcl_core.study.experiments.baseline_aims`
    rows), as generated Markdown, and whether MoCo v2 reads out below v1: a comparison with FT is only as firm as its
    baseline."""
    parts = []
    for a in (a for a in aims if a["data"] == data and a["setting"] in settings):
        misses = ([f"a gain of {a['gain']:+.1f} points over the random-init encoder, short of "
                   f"+{X.BASELINE_AIMS['gain']:.0f}"] if a["gain_met"] is False else [])
        misses += ([f"a spread of ± {a['ci95']:.1f}, wider than ± {X.BASELINE_AIMS['spread']:.0f}"]
                   if a["spread_met"] is False else [])
        if misses:
            parts.append(f"{a['setting']} ({plus_minus(a['mean'], a['ci95'])} %, {X._count(a['n_seeds'], 'seed')}) misses the "
                         f"bar this book sets for a baseline with {' and '.join(misses)}")
    order = X.v2_against_v1([a for a in aims if a["data"] == data]).get(data)
    if not parts and not (order and order[1] < order[0]):
        return "Both baselines meet the bar this book sets for a baseline at the tables' budget (chapter 9)." if aims else ""
    text = ("; ".join(parts) + ": its comparison with FT rests on that baseline. ") if parts else ""
    if order and order[1] < order[0]:
        text += (f"MoCo v2's baseline reads out below v1's ({order[1]:.1f} % against {order[0]:.1f} %), the reverse of "
                 "the literature's order (chapter 9).")
    return text.strip()


# The paper's Table 7 runs in SGD steps: ImageNet-100 (CMC's 100 classes, data/imagenet100.txt) has 126 689 training
# images, at batch 256 (the released code's recipes) for 100 epochs (ResNet-18) and 200 epochs (ResNet-50; Table 7).
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


def smoke_settings(path: str | Path) -> list[str]:
    """The settings of a start experiment (Table 7-style) that the smoke profile trains: "never" and its first late
    start (two tiny runs, FT from epoch 1 of 2)."""
    exp = X.Experiment.load(path)
    return ["never", next(s for s in exp.settings if s not in ("never", "start 0"))]


def chapter_records(path: str | Path, profile: str, settings: list[str] | None = None,
                    root: str | Path | None = None) -> list[dict]:
    """The runs chapter 7 shows of one experiment: on ``smoke``, seed 0 of ``settings`` trained if missing (CI's
    tiny runs; none on Fashion-MNIST where its files are not installed); otherwise the stored runs (never trained
    here), under ``root`` when given, of ``settings`` (all when None)."""
    if profile == "smoke":
        if X.data_set(X.Experiment.load(path), profile) == "fashion_mnist" and fashion_mnist_root(None) is None:
            return []
        return X.collect(path, profile, [0], settings)
    return [r for r in X.load_records(path, profile, root) if settings is None or r["setting"] in settings]


def switch_on_rows(phase: dict[float, dict], switch: dict[float, dict]) -> list[tuple[str, dict, dict]]:
    """``(setting, row, switch_on_state)`` per start of one phase-diagram row (:func:`start_fraction_rows` and the
    same cells' :func:`switch_on_state`, as :class:`ftcl_core.study.findings.Evidence` holds them), earliest first; starts
    without stored runs are left out."""
    return [(phase[f]["comparison"], phase[f], switch[f]) for f in sorted(phase) if phase[f]["n_seeds"]]


# What each comparison of chapter 7 means, on each side of zero: (below, above). A comparison that cannot be told
# from zero, or has fewer than 3 seeds, says so instead (:func:`comparison_sentence`).
READINGS = {
    "calibrated": ("Calibrating the baseline without FT does not remove the cost: at this scale it is not an artefact "
                   "of the knobs the calibration varied.",
                   "With the calibrated recipe the paper's claim holds here: the cost belonged to the original recipe."),
    "init": ("Kaiming fan-out initialisation, the released code's, does not spare the encoder either.",
             "With Kaiming fan-out initialisation, the released code's, FT helps: the default init was the cause."),
    "oracle": ("FT still loses without a single same-class negative: false negatives are not what makes FT cost "
               "readout here.",
               "Without same-class negatives FT helps, as the paper says: false negatives turned it into a loss."),
    "oracle, FT": ("Removing the same-class negatives makes the FT run worse still.",
                   "Removing the same-class negatives recovers part of what FT loses."),
    "classes": ("With a third as many same-class negatives (30 classes), FT still loses.",
                "With a third as many same-class negatives (30 classes), FT helps: false negatives drove its cost."),
    "classes, gain": ("Its cost is larger at 30 classes than at 10.",
                      "Its cost is smaller at 30 classes than at 10: fewer false negatives soften it."),
    "shards": ("One λ per shard of 32 queries, as the released run draws it, loses as well: sharing one λ across the "
               "batch is not the cause.",
               "With one λ per shard of 32 queries FT helps: drawing one λ for the whole batch was the cause."),
    "real": ("On real photographs FT loses too: the reversal is not a property of the synthetic shapes.",
             "On real photographs FT helps, as the paper says: the reversal belongs to the synthetic shapes."),
    "real, longer": ("At the longer budget FT still loses on real photographs.",
                     "At the longer budget FT helps on real photographs, as the paper says."),
    "real, kNN": ("Its kNN readout, which reads the features' geometry without training a classifier, loses.",
                  "Its kNN readout gains too."),
    "real, gain": ("The longer run widens FT's cost.", "The longer run narrows FT's cost."),
}


def reading(row: dict, key: str):
    """What ``row`` (a :func:`paired_comparison`) means in one sentence, from :data:`READINGS` ``[key]``, as Markdown."""
    below, above = READINGS[key]
    return comparison_sentence(row, {"below": below, "above": above}).removeprefix("* ")


DIAGNOSIS_COLUMNS = ("question", "data", "table", "setting", "n_seeds", "mean", "ci95", "reference", "diff_mean", "diff_ci95",
                     "verdict", "first_step_neg_mean_above_0.9", "command", "claim", "effect", "ratio", "p_value",
                     "q_value", "verdict_bh", "reference_shared_by", "knn_diff_mean", "knn_diff_ci95", "knn_verdict",
                     *X.SCALE_COLUMNS)
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
    return sum(p.numel() for p in build_encoder(name).parameters())


def capacity_rows(profile: str = "cpu", key: str = "linear_top1", root: str | Path | None = None) -> list[dict]:
    """One :func:`paired_comparison` row per encoder of :data:`CAPACITY` (FT from the first step against the
    baseline of the same seeds), with the backbone's parameters, each arm's spread and each arm's final effective
    rank and peak Mean(neg) (:func:`representation_signature`)."""
    rows = []
    for encoder, (path, baseline, treated) in CAPACITY.items():
        records = X.load_records(path, profile, root)
        row = paired_comparison(encoder, records, baseline, treated, key, stated_claim(path, treated, baseline))
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
    open_ = [r for r in rows if 0 < r["n_seeds"] < MIN_SEEDS]
    unrun = [r for r in rows if not r["n_seeds"]]
    parts = []
    for r in decided:
        parts.append(f"{r['comparison']} ({r['parameters'] / 1e6:.2f} M parameters): FT minus baseline "
                     f"{plus_minus(r['diff'], r['ci95'])} points, {r['verdict']}")
    text = ("FT (+pos +neg, the paper's settings) switched on at the first step, paired by seed, on the shapes at 30 "
            "epochs of the calibrated MoCo v1 recipe. " + ("; ".join(parts) + ". " if parts else ""))
    if open_:
        text += (f"Fewer than {MIN_SEEDS} seeds stored, so undecided: " + ", ".join(
            f"{r['comparison']} ({r['n_seeds']} of {MIN_SEEDS})" for r in open_) + ". ")
    if unrun:
        text += f"Planned but {NOT_RUN}: " + ", ".join(r["comparison"] for r in unrun) + ". "
    losing = [r for r in decided if verdicts.side(r["verdict"]) < 0]
    if len(decided) >= 2 and len(losing) == len(decided):
        text += (f"FT from the first step costs readout at every encoder decided here, from {decided[0]['comparison']} "
                 f"to {decided[-1]['comparison']}: at this budget and recipe the cost is not an artefact of the "
                 "smallest network; whether a still larger network or the paper's 224-px crops recover is not tested.")
    elif len(decided) >= 2:
        text += "The encoders decided here disagree on the sign: the network matters at this budget."
    else:
        text += "One encoder decided is not enough to say whether the network matters."
    rank = _rank_sentence(decided)
    return text + ("\n\n" + rank if rank else "")


def _rank_sentence(decided: list[dict]) -> str:
    """What the decided encoders' final effective ranks say (the issue's question: does width keep the rank FT
    takes away?): FT's range against the baselines', and whether the largest encoder keeps more than the smallest
    (by more than a fifth) — empty below two decided encoders."""
    if len(decided) < 2:
        return ""
    ft, base = [r["ft_erank"] for r in decided], [r["baseline_erank"] for r in decided]
    small, large = min(decided, key=lambda r: r["parameters"]), max(decided, key=lambda r: r["parameters"])
    text = (f"FT's features end with an effective rank of {fixed(min(ft))} to {fixed(max(ft))} at these encoders, "
            f"their baselines' {fixed(min(base))} to {fixed(max(base))}: ")
    if large["ft_erank"] > 1.2 * small["ft_erank"]:
        return text + (f"the largest keeps more ({fixed(large['ft_erank'])} against {fixed(small['ft_erank'])} at "
                       f"{small['comparison']}), still below its baseline.")
    return text + (f"{large['parameters'] / small['parameters']:.0f}x the parameters do not keep more directions "
                   "of the features once FT has taken them.")


# Do larger images recover? The width-16 pair again, on the shapes drawn at 64 px with 56-px crops (against 24-px
# crops of 32-px shapes everywhere else): only the resolution changes.
RESOLUTION = ("resnet10_w16, 56-px crops", "experiments/diagnosis/resolution_v1.yaml", "baseline 56px", "+both 56px")


def resolution_row(profile: str = "cpu", key: str = "linear_top1", root: str | Path | None = None) -> dict:
    """The :func:`paired_comparison` of :data:`RESOLUTION` (FT from the first step against the baseline of the same
    seeds at 56-px crops), judged with the paper's effect; "not run" while nothing is stored."""
    label, path, baseline, treated = RESOLUTION
    records = X.load_records(path, profile, root)
    return paired_comparison(label, records, baseline, treated, key, stated_claim(path, treated, baseline))


def resolution_sentence(row: dict, at_24: dict) -> str:
    """Chapter 7's sentence on the resolution point: ``row`` (:func:`resolution_row`) beside ``at_24``, the same
    encoder's pair at 24-px crops (the first :func:`capacity_rows` row); undecided below 3 paired seeds."""
    where = f"`{RESOLUTION[1]}`"
    if not row["n_seeds"]:
        return (f"Larger images are not tested yet: the same width-16 pair at 56-px crops of 64-px shapes ({where}) "
                "has no paired seed stored.")
    diff = f"FT minus baseline {plus_minus(row['diff'], row['ci95'], signed=True)} points"
    if row["n_seeds"] < MIN_SEEDS:
        return f"At 56-px crops of 64-px shapes ({where}), {_paired_so_far(row['n_seeds'])} ({diff} so far): undecided."
    text = (f"At 56-px crops of 64-px shapes ({where}), the same encoder's pair reads {diff}, {row['verdict']}, "
            f"against {plus_minus(at_24['diff'], at_24['ci95'], signed=True)} at 24-px crops ({at_24['verdict']})")
    side = verdicts.side(row["verdict"])
    reading = ("FT still costs readout on larger images" if side < 0 else "FT helps on larger images" if side > 0
               else "on larger images FT's cost can no longer be told from zero")
    turned = "" if side == verdicts.side(at_24["verdict"]) else ", a different verdict from the 24-px pair"
    return text + f": {reading}{turned}, at this budget and network."


# --- chapter 7's tables and sentences, so that the chapter holds narrative and calls --------------------------------

def zero_crossing(x: np.ndarray, y: np.ndarray) -> float:
    """Where ``y`` first crosses zero upwards along ``x``, linearly interpolated (NaN if it never does): the
    measured attraction threshold of :func:`contraction_rate` curves."""
    sign = np.flatnonzero(np.diff(np.sign(y)) > 0)
    if not sign.size:
        return math.nan
    i = sign[0]
    return float(np.interp(0, y[i:i + 2], x[i:i + 2]))


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
    """The inputs of :func:`ftcl_core.pages.plotting.readout_by_length` from a length experiment's records and its
    :func:`length_rows`: the steps of each length, each arm's readouts per length, the random-init readout."""
    lengths = [r for r in rows if r["kind"] == "length"]
    arms = {name: [[r["linear_top1"] for r in records if r["setting"] == f"{setting} {row['epochs']}"]
                   for row in lengths] for name, setting in (("baseline", "baseline"), ("FT (+pos +neg)", "+both"))}
    random_init = [r["random_init_linear_top1"] for r in records if "random_init_linear_top1" in r]
    return [r["steps"] for r in lengths], arms, float(np.mean(random_init)) if random_init else math.nan


def device_gap_sentence(length_records: list[dict], cpu_records: list[dict]) -> str:
    """How far float rounding alone moves a run: the 30-epoch arms of the length experiment (mostly GPU) against
    the same configs and seeds of the recipe comparison (CPU), as one sentence ("" when no pair differs by device)."""
    gaps = (same_run_gaps(length_records, "baseline 30", cpu_records, "baseline")
            + same_run_gaps(length_records, "+both 30", cpu_records, "+both"))
    if not gaps:
        return ""
    return (f"The same config and seed trained once on the GPU and once on the CPU: {len(gaps)} pairs of 30-epoch runs "
            f"differ by {fixed(min(gaps), 2)} to {fixed(max(gaps), 2)} points of linear readout (mean "
            f"{fixed(float(np.mean(gaps)), 2)}). A pair whose two arms trained on different devices carries that much "
            "besides the effect it measures; the tables name such pairs.")


NEGATIVE_TABLES = {"plain": ("experiments/table5_ft_v1.yaml", ["v1 baseline", "v1 +neg"]),
                   "renorm": ("experiments/supp_f_renorm.yaml", ["baseline", "renorm neg"]),
                   "harder": ("experiments/supp_g_negatives.yaml",
                              ["baseline", "neg extrapolation", "hard Beta(2,1)", "hard Beta(5,2)"])}


def negative_comparisons(profile: str) -> tuple[list[dict], str, str]:
    """Supp F and Supp G read through what each does to the negatives the loss sees (:func:`negative_rows`), and
    the two sentences that say what the rows show (:func:`renorm_sentence`, :func:`harder_negatives_sentence`)."""
    recs = {key: chapter_records(path, profile, names) for key, (path, names) in NEGATIVE_TABLES.items()}
    rows = negative_rows([
        ("mixed negatives (Table 5 +neg)", recs["plain"], "v1 baseline", "v1 +neg"),
        ("mixed, re-normalised (Supp F)", recs["renorm"], "baseline", "renorm neg"),
        ("extrapolated negatives (Supp G)", recs["harder"], "baseline", "neg extrapolation"),
        ("hard negatives Beta(2,1) (Supp G)", recs["harder"], "baseline", "hard Beta(2,1)"),
        ("hard negatives Beta(5,2) (Supp G)", recs["harder"], "baseline", "hard Beta(5,2)")])
    against = paired_comparison("re-normalised against plain mixed negatives",
                                relabel(recs["plain"], {"v1 +neg": "plain"})
                                + relabel(recs["renorm"], {"renorm neg": "re-normalised"}), "plain", "re-normalised")
    return rows, renorm_sentence(rows[0], rows[1], against), harder_negatives_sentence(rows[2:])


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


def volatility_sentence(rows: list[dict]) -> str:
    """Which momentum swings most and least on each of :func:`volatility_rows`' two numbers, against the paper's
    reading that the small momenta swing most (Figs 3-4); where the frozen key encoder (m = 1) swings most in
    Mean(neg), what that means."""
    if not rows:
        return "No stored runs of the momentum sweep."
    momentum = (lambda r: float(r["setting"].removeprefix("m=")))  # noqa: E731
    parts = []
    for key, what in (("neg", "Mean(neg)"), ("grad", "the summed gradient norm")):
        order = sorted(rows, key=lambda r: r[key])
        small = momentum(order[-1]) <= 0.9
        parts.append(f"{what} swings most at {order[-1]['setting']} and least at {order[0]['setting']}"
                     + (", as the paper's reading has it" if small else ", against the paper's reading"))
    text = "; ".join(parts) + "."
    if momentum(max(rows, key=lambda r: r["neg"])) == 1.0:
        text += (" At m = 1 the key encoder never leaves its random initialisation, so each batch's keys score the "
                 "queries by how the batch happens to fall, a noise no training smooths out: Mean(neg)'s swing does "
                 "not mark the small momenta's failure to learn here, while the gradient norms' does.")
    return text
