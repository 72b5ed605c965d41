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

from ftcl_core import transforms
from ftcl_core.losses import info_nce, logits_from_scores
from ftcl_core.models import build_encoder
from ftcl_core.runs import RunDir, atomic_write_bytes
from ftcl_core.study import experiment_file, readings, store, sweeps, table_verdicts
from ftcl_core.study.curves import COLLAPSE_LEVEL  # noqa: F401  (one level for chapters 2, 6 and 7)
from ftcl_core.study.fashion_mnist import fashion_mnist_root
from ftcl_core.study.results import claims as verdicts
from ftcl_core.study.results.claims import BASELINE, MIN_SEEDS, Claim
from ftcl_core.study.results.numbers import cell, csv_number, fixed, plus_minus
from ftcl_core.study.results.paired import by_seed, mean_ci95, pair, paired_records
from ftcl_core.study.signatures import collapse_signature, first_step_above, volatility


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


def analytic_gradient(z: torch.Tensor, k: torch.Tensor, negatives: torch.Tensor,
                      lam: float, tau: float) -> torch.Tensor:
    """``dL/dz`` of the InfoNCE loss (eq. 1) after positive extrapolation (eq. 3),
    from the formula above.

    ``z`` ``(N, D)``: the query network's outputs before the normaliser; ``k``
    ``(N, D)`` unit keys (detached); ``negatives`` ``(K, D)`` unit queue entries; the
    loss is the mean over the N queries.
    """
    norm = z.norm(dim=1, keepdim=True)
    q = z / norm
    q_ft, k_ft = transforms.extrapolate_positive(q, k, lam)
    logits = logits_from_scores((q_ft * k_ft).sum(1), q_ft @ negatives.T, tau)
    p = logits.softmax(1)
    pull = (1 - p[:, :1]) * alignment_weight(lam) * k - lam * p[:, 1:] @ negatives
    # pull = (1 - p0)(A k - l n_bar)
    tangent = pull - (pull * q).sum(1, keepdim=True) * q
    return -tangent / (tau * norm) / z.shape[0]


def autograd_gradient(z: torch.Tensor, k: torch.Tensor, negatives: torch.Tensor, lam: float, tau: float) -> torch.Tensor:
    """The same gradient by autograd through the library's own FT and loss functions (what training runs)."""
    z = z.detach().clone().requires_grad_(True)
    q_ft, k_ft = transforms.extrapolate_positive(F.normalize(z, dim=1), k, lam)
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


NOT_RUN = verdicts.NOT_RUN  # a comparison with no paired seed stored: never trained, not undecided
COMPARED = "compared"  # an arm set against its reference of which the paper claims nothing (no verdict on a claim)


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
            **table_verdicts.scale_cells(judged)}


def stated_claim(path: str | Path, arm: str, reference: str) -> Claim | None:
    """The claim that the experiment file at ``path`` makes of ``arm`` against ``reference`` (its ``claims``, else
    the one its ``paper:`` numbers make), with the paper's effect and two readouts, so that a chapter's comparison is
    judged with the paper's size on both scales; None where it states none."""
    exp = experiment_file.Experiment.load(path)
    return next((c for c in exp.claims_of(arm) if c.reference == reference and c.kind != "sanity"), None)


def run_device(record: dict) -> str:
    """The kind of machine a stored run trained on (:func:`store.machine_kind`: ``cpu/AMD EPYC``), or "" for a
    record without a run folder."""
    return store.machine_kind(RunDir(record["dir"])) if record.get("dir") else ""


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
    exp = experiment_file.Experiment.load(path)
    lengths = sorted({int(name.split()[-1]) for name in exp.settings if name.startswith("baseline ")})

    base = experiment_file.base_for(exp, profile)
    steps = {n: sweeps.planned_steps(experiment_file.resolve(base, exp.overrides(f"baseline {n}", exp.seeds[0]), profile))
             for n in lengths}
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


def switch_on_state(records: list[dict], setting: str, window: int = 5) -> dict:
    """Where a setting's runs stand when FT switches on (``ft.start_epoch``; Table 6), averaged over seeds: the
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
    """A Table 6-style experiment (FT switched on at ``ft.start_epoch``) as :func:`paired_comparison` rows keyed by
    the fraction of the run that passes before FT switches on (start epoch / epochs, to 2 decimals), so that runs
    of different lengths line up in one phase diagram (training length x start fraction)."""
    exp = experiment_file.Experiment.load(path)
    rows = {}
    for setting, reference in exp.compare.items():
        cfg = experiment_file.resolve(experiment_file.base_for(exp, profile), exp.overrides(setting, exp.seeds[0]), profile)
        rows[round(cfg.ft.start_epoch / cfg.train.epochs, 2)] = paired_comparison(
            setting, records, reference, setting, key, stated_claim(path, setting, reference))
    return rows


def comparison_cells(row: dict) -> list[str]:
    """A :func:`paired_comparison` row as table cells: label, both means, the paired difference ± CI, seeds, verdict."""
    mixed = row.get("mixed_devices") or []
    types = {d.split("/")[0] for d in row.get("devices") or []}
    what = "CPU against GPU" if {"cpu", "cuda"} <= types else "two kinds of machine"
    seeds = str(row["n_seeds"]) + (f" ({_seeds(mixed)}: {what})" if mixed else "")
    return [row["comparison"], cell(row["baseline"]), cell(row["ft"]),
            " ± ".join(filter(None, [cell(row["diff"]), cell(row["ci95"])])), seeds,
            verdicts.row_label(row)]


def _decided(row: dict, direction: int) -> bool:
    """Whether ``row``'s verdict decides its comparison on ``direction``'s side (+1: FT helps, -1: it costs)."""
    return row["n_seeds"] >= MIN_SEEDS and verdicts.side(row["verdict"]) == direction


# The paper's Table 6 runs in SGD steps: ImageNet-100 (CMC's 100 classes, data/imagenet100.txt) has 126 689 training
# images, at batch 256 (the released code's recipes) for 100 epochs (ResNet-18) and 200 epochs (ResNet-50; Table 6).
PAPER_TABLE7_STEPS = {"ResNet-18": 100 * (126_689 // 256), "ResNet-50": 200 * (126_689 // 256)}

# The stored experiments chapter 7's answer rests on (chapter 1 and the README quote it through stored_answer).
START_EXPERIMENTS = {"shapes, 30 epochs": "experiments/table6_start_epoch.yaml",  # D-start-v1's starts and epoch 1
                     "shapes, 120 epochs": "experiments/diagnosis/start_long_v1.yaml",
                     "Fashion-MNIST, 10 epochs": "experiments/diagnosis/start_fmnist_v1.yaml",
                     "Fashion-MNIST, 30 epochs": "experiments/table6_start_epoch_fmnist.yaml"}
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
    """The settings of a start experiment (Table 6-style) that the smoke profile trains: "never" and its first late
    start (two tiny runs, FT from epoch 1 of 2)."""
    exp = experiment_file.Experiment.load(path)
    return ["never", next(s for s in exp.settings if s not in ("never", "start 0"))]


def chapter_records(path: str | Path, profile: str, settings: list[str] | None = None,
                    root: str | Path | None = None) -> list[dict]:
    """The runs chapter 7 shows of one experiment: on ``smoke``, seed 0 of ``settings`` trained if missing (CI's
    tiny runs; none on Fashion-MNIST where its files are not installed); otherwise the stored runs (never trained
    here), under ``root`` when given, of ``settings`` (all when None)."""
    if profile == "smoke":
        if experiment_file.data_set(experiment_file.Experiment.load(path),
                                profile) == "fashion_mnist" and fashion_mnist_root(None) is None:
            return []
        return sweeps.collect(path, profile, [0], settings)
    return [r for r in store.load_records(path, profile, root) if settings is None or r["setting"] in settings]


def switch_on_rows(phase: dict[float, dict], switch: dict[float, dict]) -> list[tuple[str, dict, dict]]:
    """``(setting, row, switch_on_state)`` per start of one phase-diagram row (:func:`start_fraction_rows` and the
    same cells' :func:`switch_on_state`, as :class:`ftcl_core.study.findings.Evidence` holds them), earliest first; starts
    without stored runs are left out."""
    return [(phase[f]["comparison"], phase[f], switch[f]) for f in sorted(phase) if phase[f]["n_seeds"]]


DIAGNOSIS_COLUMNS = ("question", "data", "table", "setting", "n_seeds", "mean", "ci95", "reference", "diff_mean", "diff_ci95",
                     "verdict", "first_step_neg_mean_above_0.9", "command", "claim", "effect", "ratio", "p_value",
                     "q_value", "verdict_bh", "reference_shared_by", "knn_diff_mean", "knn_diff_ci95", "knn_verdict",
                     *table_verdicts.SCALE_COLUMNS)
_P_COLUMNS = ("p_value", "q_value")  # written at 6 decimals (the others at 3)


def diagnosis_rows(folder=None, profile: str = "cpu", pattern: str = "*.yaml", planned: bool = False,
                   root=None) -> list[dict]:
    """One row per (question, setting) of the diagnosis files' stored runs: readout mean and CI, the paired
    difference against the setting's reference and its verdict (on the paper's claim that FT helps), and the
    median over seeds of the first step at which Mean(neg) of the raw cosines passes 0.9 (blank: never).
    ``pattern``: the experiment files of ``folder`` read; ``planned``: also a row for each setting of a file that has
    no stored run, its verdict :data:`NOT_RUN` (a map still training reads "not run", not "undecided"); ``root``: where
    the runs are (default: the profile's root; :data:`ftcl_core.study.experiment_file.STORED`, the committed ones)."""
    rows = []
    for path in sorted(Path(folder or experiment_file.ROOT / "experiments" / "diagnosis").glob(pattern)):
        exp = experiment_file.Experiment.load(path)
        question = (yaml.safe_load(path.read_text()) or {}).get("question", "")
        records = store.load_records(path, profile, root)
        data = experiment_file.data_set(exp, profile)  # shapes | fashion_mnist | ...
        for row in table_verdicts.table_rows(exp, records):
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
            if row["verdict"] == BASELINE and row["reference"]:  # compared, but the paper claims nothing of it
                word = COMPARED if row["n_seeds"] >= MIN_SEEDS else verdicts.UNDECIDED  # below the seeds: undecided
                rows[-1].update(verdict=word, verdict_bh=word)
        stored = {r["setting"] for r in records}
        for setting in (s for s in exp.settings if planned and s not in stored):
            rows.append({**dict.fromkeys(DIAGNOSIS_COLUMNS, ""), "question": question, "data": data,
                         "table": exp.table, "setting": setting, "n_seeds": 0,
                         "reference": exp.compare.get(setting, ""), "verdict": NOT_RUN, "verdict_bh": NOT_RUN,
                         "command": f"python -m ftcl_core sweep {_shown(path)} --settings '{setting}'"})
    table_verdicts.apply_bh(rows)
    return rows


HEADROOM_CSV = experiment_file.ROOT / "results" / "headroom.csv"  # written by ``summary`` from :func:`headroom_rows`


def headroom_rows(profile: str = "cpu", root=None) -> list[dict]:
    """:func:`diagnosis_rows` of the length x start map on the task with headroom (``experiments/headroom/map_*.yaml``;
    issue 50), every planned setting listed: its stored comparisons judged on both scales, the rest "not run"."""
    return diagnosis_rows(experiment_file.ROOT / "experiments" / "headroom", profile, pattern="map_*.yaml", planned=True,
                          root=root)


def _shown(path: Path) -> str:
    return str(path.relative_to(experiment_file.ROOT)) if path.resolve().is_relative_to(experiment_file.ROOT) else str(path)


def write_diagnosis_csv(rows: list[dict], out=None):
    """``results/diagnosis.csv`` (or ``out``) from :func:`diagnosis_rows`."""
    target = Path(out) if out else experiment_file.ROOT / "results" / "diagnosis.csv"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=DIAGNOSIS_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: csv_number(v, 6 if k in _P_COLUMNS else 3) for k,
                         v in r.items() if not k.startswith("_")})
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
        records = store.load_records(path, profile, root)
        row = paired_comparison(encoder, records, baseline, treated, key, stated_claim(path, treated, baseline))
        row["parameters"] = encoder_parameters(encoder)
        for arm, setting in (("baseline", baseline), ("ft", treated)):
            row[f"{arm}_ci95"] = mean_ci95(list(by_seed(records, setting, key).values()))[1]
            sig = representation_signature(records, setting)
            row[f"{arm}_erank"], row[f"{arm}_peak_neg_mean"] = sig["final_erank"], sig["peak_neg_mean"]
        rows.append(row)
    return rows


# Do larger images recover? The width-16 pair again, on the shapes drawn at 64 px with 56-px crops (against 24-px
# crops of 32-px shapes everywhere else): only the resolution changes.
RESOLUTION = ("resnet10_w16, 56-px crops", "experiments/diagnosis/resolution_v1.yaml", "baseline 56px", "+both 56px")


def resolution_row(profile: str = "cpu", key: str = "linear_top1", root: str | Path | None = None) -> dict:
    """The :func:`paired_comparison` of :data:`RESOLUTION` (FT from the first step against the baseline of the same
    seeds at 56-px crops), judged with the paper's effect; "not run" while nothing is stored."""
    label, path, baseline, treated = RESOLUTION
    records = store.load_records(path, profile, root)
    return paired_comparison(label, records, baseline, treated, key, stated_claim(path, treated, baseline))


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


def renorm_facts(plain: dict, renorm: dict, against: dict) -> dict:
    """Supp F's re-normalisation reading on stored runs: ``plain`` and ``renorm`` are :func:`negative_rows` rows of
    interpolated negatives without and with re-normalisation against the same baseline, ``against`` the
    :func:`paired_comparison` of the readout, re-normalised against plain (the same seeds). ``wider``: the
    re-normalised mixes' spread beyond the plain ones' (each outside the other's 95 % interval); ``harder``:
    re-normalised mixes harder than the raw queue itself (:func:`harder_negatives`)."""
    n = min(plain["n_seeds"], renorm["n_seeds"], against["n_seeds"])
    out: dict = {"n": n}
    if n:
        out.update({"plain_shift": plus_minus(plain["neg_shift"], plain["neg_shift_ci95"], 3, signed=True),
                    "plain_spread": fixed(plain["neg_var_ratio"], 2), "renorm_spread": fixed(renorm["neg_var_ratio"], 2),
                    "renorm_shift": plus_minus(renorm["neg_shift"], renorm["neg_shift_ci95"], 3, signed=True),
                    "cost": plus_minus(-against["diff"], against["ci95"]), "against_diff": _pm(against),
                    "n_seeds": str(against["n_seeds"]), "plain_diff": _pm(plain),
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
    "harder as written": _harder_as_written,
    # chapter 5's volatility (volatility_facts)
    "Mean(neg) swings most at a large momentum": _swings_most("neg", small=False),
    "the gradient norm swings most at a small momentum": _swings_most("grad", small=True),
    "the frozen key encoder swings most in Mean(neg)": _frozen_swings_most,
    "the gradient norm swings more at every small momentum than at every large one": _small_swing_more,
    "the smallest momentum swings least of the small ones": _smallest_calmest,
}
