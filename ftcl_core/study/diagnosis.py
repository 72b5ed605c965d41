"""Chapter 7's comparisons (does FT help, and why not here): FT against its baseline paired by seed, by training
length, start and network, the negatives' scores, and ``results/diagnosis.csv`` and ``results/headroom.csv`` with
their verdicts (:func:`diagnosis_rows`). The gradient algebra they test is :mod:`ftcl_core.study.gradient_algebra`;
what the pages say of these rows, :mod:`ftcl_core.study.diagnosis_readings`."""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import math
import re
from pathlib import Path

import numpy as np
import yaml

from ftcl_core.models import build_encoder
from ftcl_core.runs import RunDir, atomic_write_bytes
from ftcl_core.study import experiment_file, store, sweeps, table_verdicts
from ftcl_core.study.curves import COLLAPSE_LEVEL  # noqa: F401  (one level for chapters 2, 6 and 7)
from ftcl_core.study.fashion_mnist import fashion_mnist_root
from ftcl_core.study.results import verdicts
from ftcl_core.study.results.numbers import cell, csv_number, plus_minus
from ftcl_core.study.results.paired import by_seed, mean_ci95, pair, paired_records
from ftcl_core.study.results.verdicts import BASELINE, MIN_SEEDS, Claim
from ftcl_core.study.signatures import collapse_signature, first_step_above

NOT_RUN = verdicts.NOT_RUN  # a comparison with no paired seed stored: never trained, not undecided
COMPARED = verdicts.COMPARED  # an arm set against its reference of which the paper claims nothing (no verdict on a claim)


def paired_comparison(label: str, records: list[dict], baseline: str, treated: str, key: str = "linear_top1",
                      claim: Claim | None = None, own: bool = False) -> dict:
    """One row of the diagnosis: ``treated`` (FT) against ``baseline`` over the seeds both have, with the paired
    95 % interval and the verdict (:func:`ftcl_core.study.results.verdicts.judge`) on the paper's claim that FT helps:
    ``claim`` (:func:`stated_claim`: the paper's effect in points and its two readouts, so that the verdict sees
    the ceiling), else above ``baseline`` by no stated size; ``key``: the readout compared (``knn_top1`` for the
    kNN readout). The row carries both scales (``log_error_ratio``/``_ci95``, ``verdict_points``,
    ``verdict_errors``, ``scale``); :data:`NOT_RUN` while no seed is paired.  ``own``: a question of this book's, not
    the paper's (a gain against a gain, one recipe against another): its row is labelled by its side only
    (:func:`ftcl_core.study.results.verdicts.row_label`), never in the paper's words."""
    base, ft = ([r[key] for r in records if r["setting"] == s] for s in (baseline, treated))
    paired = paired_records(records, treated, baseline, key, device=run_device)  # each run's provenance read once
    claim = claim or Claim(treated, baseline, direction=1)
    judged = verdicts.judge(dataclasses.replace(claim, arm=treated, reference=baseline), paired)
    return {"comparison": label, "baseline": mean_ci95(base, allow_empty=True)[0],
            "ft": mean_ci95(ft, allow_empty=True)[0], "diff": paired.mean,
            "ci95": paired.ci95, "n_seeds": paired.n, "verdict": judged.word if paired.n else NOT_RUN,
            "mixed_devices": paired.mixed_seeds, "devices": sorted({d for pair_ in paired.devices for d in pair_} - {""}),
            **table_verdicts.scale_cells(judged), **({"own": True} if own else {})}


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
    paired = pair({s: r[key] for s, r in left.items()}, {s: r[key] for s, r in right.items()}, devices,
                  allow_empty=True)
    return [abs(v) for v, (da, db) in zip(paired.values, paired.devices) if da != db]


def relabel(records: list[dict], names: dict[str, str]) -> list[dict]:
    """The records of the settings in ``names``, renamed, so that runs of two tables pair by seed in
    :func:`paired_comparison` (e.g. FT with and without the oracle's same-class negatives)."""
    return [{**r, "setting": names[r["setting"]]} for r in records if r["setting"] in names]


def gap_records(records: list[dict], baseline: str, treated: str, name: str, key: str = "linear_top1") -> list[dict]:
    """Per seed, ``treated`` minus ``baseline`` (FT's gain, negative for a cost) as a record of setting ``name``,
    so that :func:`paired_comparison` compares two such gaps by seed (FT's cost at two training lengths, say)."""
    paired = pair(by_seed(records, treated, key), by_seed(records, baseline, key), allow_empty=True)
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
                                         "steps", recs + gap[0][1], f"gap {short}", f"gap {n}", key, own=True),
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
            row[key], row[f"{key}_ci95"] = mean_ci95([r[key] for r in scored if r["setting"] == treated],
                                                     allow_empty=True)
        row["baseline_final_neg_mean"] = mean_ci95(
            [r["final_neg_mean"] for r in scored if r["setting"] == baseline], allow_empty=True)[0]
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
    same cells' :func:`switch_on_state`, as :class:`ftcl_core.study.evidence.Evidence` holds them), earliest first; starts
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
def encoder_label(name: str) -> str:
    """A page's name for an encoder of :data:`CAPACITY`: ``resnet18_w32`` reads ``ResNet-18, width 32`` (a name
    that is no small ResNet's stays as it is)."""
    m = re.fullmatch(r"resnet(\d+)_w(\d+)", name)
    return f"ResNet-{m[1]}, width {m[2]}" if m else name


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
            row[f"{arm}_ci95"] = mean_ci95(list(by_seed(records, setting, key).values()), allow_empty=True)[1]
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
