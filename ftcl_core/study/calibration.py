"""Baseline calibration (issue "fair baselines"): every trial, and the recipe each method keeps.

A calibration file (``experiments/calibration/<method>.yaml``) is an ordinary experiment file whose ``common``
overrides fix the budget (the same number of steps for every method) and score on the validation split
(``data.eval_split=val``), never on the test set; FT stays off.  Its settings are the trials.  This module reads
their stored runs and writes ``results/calibration.csv``, one row per (method, trial, seed): the knobs, the
validation kNN and linear top-1, the random-init encoder's, and the wall time.  :func:`choose` picks each
method's trial by mean validation kNN (the issue's rule); the chosen recipe then goes into ``configs/cpu_*.yaml``
by hand, with a comment that names the trial, so that a config never changes silently when a run lands.

``python -m ftcl_core calibration`` writes the CSV and prints it as Markdown.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import torch
from torch import nn

from ftcl_core.models import build_encoder, kaiming_init
from ftcl_core.runs import RunDir, atomic_write_bytes
from ftcl_core.study.experiment_file import ROOT, Experiment, _yaml_scalar, run_dir
from ftcl_core.study.results.paired import mean_ci95
from ftcl_core.study.table_verdicts import _count

FOLDER = ROOT / "experiments" / "calibration"
COLUMNS = ("method", "trial", "knobs", "budget", "seed", "val_knn", "val_linear", "random_init_val_knn",
           "random_init_val_linear", "raw_pixels_val_linear", "train_s", "cpu_model", "dir")


def init_norm_ratio(name: str, seed: int = 0) -> float:
    """How much larger :func:`kaiming_init` makes the encoder ``name``'s convolution weights than PyTorch's default
    initialisation: the ratio of the two L2 norms over every conv weight, each encoder built from ``seed``."""
    def conv_norm(net: nn.Module) -> float:
        return float(torch.sqrt(sum((m.weight.detach() ** 2).sum() for m in net.modules() if isinstance(m, nn.Conv2d))))

    torch.manual_seed(seed)
    default = conv_norm(build_encoder(name))
    torch.manual_seed(seed)
    return conv_norm(kaiming_init(build_encoder(name))) / default


def _knobs(overrides: dict) -> str:
    return " ".join(f"{k}={_yaml_scalar(v)}" for k, v in overrides.items()) or "(the config's recipe)"


def trials(folder: str | Path | None = None, profile: str = "cpu", root: str | Path | None = None) -> list[dict]:
    """One row per stored trial run of every calibration file (missing runs are skipped, not trained), under the
    profile's root or ``root`` (:data:`ftcl_core.experiments.STORED`: the committed runs)."""
    rows = []
    for path in sorted(Path(folder or FOLDER).glob("*.yaml")):
        exp = Experiment.load(path)
        for r in stored_trials(exp, profile, root):
            run = RunDir(r["dir"])
            rows.append({
                "method": exp.table.removeprefix("CAL-"), "trial": r["setting"],
                "knobs": _knobs(exp.settings[r["setting"]]), "budget": _knobs(exp.common or {}), "seed": r["seed"],
                "val_knn": r["knn_top1"], "val_linear": r["linear_top1"],
                "random_init_val_knn": r.get("random_init_knn_top1", math.nan),
                "random_init_val_linear": r.get("random_init_linear_top1", math.nan),
                "raw_pixels_val_linear": r.get("raw_pixels_linear_top1", math.nan),  # real images only
                "train_s": r["train_s"], "cpu_model": run.load_provenance().get("cpu_model", ""),
                "dir": str(Path(r["dir"]).resolve().relative_to(ROOT)) if Path(r["dir"]).resolve().is_relative_to(ROOT)
                else r["dir"],
            })
    return rows


KNOB_WORDS = {"optim.lr": "learning rate", "optim.weight_decay": "weight decay", "model.init": "initialisation",
              "augment.crop_scale": "crop scale", "augment.jitter": "colour jitter", "augment.jitter_p": "colour jitter",
              "augment.blur_p": "blur", "byol.momentum": "target momentum", "model.pred_hidden": "predictor width",
              "swav.prototypes": "number of prototypes"}


def varied(method: str, folder: str | Path | None = None) -> list[str]:
    """What a method's calibration file varies, in words (``KNOB_WORDS``; an unknown key as itself), each once, in
    the file's order: what a sentence may say the calibration ruled out, and nothing more. Read from the
    experiment file, so it holds whether or not the trials' runs are stored here."""
    path = Path(folder or FOLDER) / f"{method}.yaml"
    if not path.exists():
        methods = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise FileNotFoundError(f"no calibration file {path}: name one of the methods {methods}")
    keys = [k for overrides in Experiment.load(path).settings.values() for k in overrides]
    return list(dict.fromkeys(KNOB_WORDS.get(k, k) for k in keys))


def stored_trials(exp: Experiment, profile: str, root: str | Path | None = None) -> list[dict]:
    """Every complete run of a calibration file, whatever its seed (the file lists the first round's seeds; a
    second round adds seeds to the trials worth them, ``sweep --seeds 1 2 --settings ...``)."""
    out = []
    for name in exp.settings:
        folder = run_dir(exp, name, 0, profile, root).parent
        seeds = sorted(int(p.name.removeprefix("seed")) for p in folder.glob("seed*") if p.name[4:].isdigit())
        for seed in seeds:
            d = RunDir(folder / f"seed{seed}")
            if d.is_complete():
                out.append({"setting": name, "seed": seed, "dir": str(d.path), **d.load_eval()})
    return out


def choose(rows: list[dict]) -> dict[str, dict]:
    """Per method, the trial with the highest mean validation kNN over its seeds, with its mean and CI (and the
    means of its linear readout, its random-init encoder's and, on real images, the raw-pixel probe's)."""
    return {method: max(trial_scores(rows, method).values(), key=lambda s: s["val_knn"])
            for method in dict.fromkeys(r["method"] for r in rows)}


def chosen_aim(best: dict) -> dict:
    """Whether a chosen trial (:func:`choose`) meets the bar a baseline is held to: ``gain``, its validation linear
    readout above its random-init encoder's; ``bar`` is ``"gain"`` (``BASELINE_AIMS["gain"]`` points) where no raw-pixel
    probe was read, else ``"pixels"``: on real images, whose random-init encoder already reads out well, the bar is the
    raw-pixel probe's readout (``pixels``); ``met`` against it."""
    from ftcl_core.study.table_verdicts import BASELINE_AIMS

    gain = best["val_linear"] - best["random_init_val_linear"]
    pixels = best.get("raw_pixels_val_linear", math.nan)
    if math.isnan(pixels):
        return {"gain": gain, "bar": "gain", "need": BASELINE_AIMS["gain"], "met": gain >= BASELINE_AIMS["gain"]}
    return {"gain": gain, "bar": "pixels", "need": pixels, "met": best["val_linear"] > pixels}


def trial_scores(rows: list[dict], method: str) -> dict[str, dict]:
    """Per trial of ``method`` (in the CSV's order): its mean validation kNN with CI, and the means of its linear
    readout, its random-init encoder's and, on real images, the raw-pixel probe's, over its seeds."""
    per_trial: dict[str, list[dict]] = {}
    for r in rows:
        if r["method"] == method:
            per_trial.setdefault(r["trial"], []).append(r)
    scored = {}
    for trial, rs in per_trial.items():
        m, ci = mean_ci95([r["val_knn"] for r in rs])
        lin, _ = mean_ci95([r["val_linear"] for r in rs])
        rand, _ = mean_ci95([r["random_init_val_linear"] for r in rs])
        pixels, _ = mean_ci95([r.get("raw_pixels_val_linear", math.nan) for r in rs])
        scored[trial] = {"trial": trial, "knobs": rs[0]["knobs"], "val_knn": m, "val_knn_ci95": ci, "val_linear": lin,
                         "random_init_val_linear": rand, "raw_pixels_val_linear": pixels, "n_seeds": len(rs)}
    return scored


def init_facts(rows: list[dict], method: str, encoder: str, trial: str = "kaiming", against: str = "recipe") -> dict:
    """What a method's calibration says about Kaiming initialisation, as facts for chapter 7: how many times the
    convolution weight norm of PyTorch's default Kaiming fan-out gives ``encoder`` (``ratio``,
    :func:`init_norm_ratio`), the validation kNN of its trial and of the trial it changes
    (``against``, the config's recipe with the default init) with the seeds behind each, and the trial the
    calibration chose (``pick``). ``stored`` and ``chose_trial`` are the checks'. A one-seed difference of a point
    decides nothing."""
    out: dict = {"encoder": encoder, "method": method, "trial": trial, "against": against,
                 "ratio": f"{init_norm_ratio(encoder):.1f}"}
    scores = trial_scores(rows, method)
    out["stored"] = trial in scores and against in scores
    if out["stored"]:
        kaiming, base, pick = scores[trial], scores[against], choose(rows)[method]
        out.update({"trial_knn": f"{kaiming['val_knn']:.1f}", "trial_seeds": _count(kaiming["n_seeds"], "seed"),
                    "against_knn": f"{base['val_knn']:.1f}", "against_seeds": _count(base["n_seeds"], "seed"),
                    "pick": pick["trial"], "pick_knn": f"{pick['val_knn']:.1f}",
                    "pick_seeds": _count(pick["n_seeds"], "seed"), "chose_trial": pick["trial"] == trial})
    return out


CHECKS = {
    "both trials are stored": lambda f: None if f["stored"] else f"no stored {f['trial']} and {f['against']} trials",
    "the calibration chose another trial": (
        lambda f: None if f["stored"] and not f["chose_trial"] else f"the calibration chose {f.get('pick')}"),
}


def final_erank(rows: list[dict], method: str, trial: str) -> float:
    """Mean over the trial's seeds of the effective rank of a batch's features at the last training step: a
    method whose features still span few dimensions at the end of the budget (BYOL and SimSiam here) has not
    finished learning, whatever its knobs."""
    ranks = []
    for r in rows:
        if r["method"] == method and r["trial"] == trial:
            metrics = RunDir(ROOT / r["dir"]).load_metrics()  # ROOT / an absolute path is that path
            if "erank" in metrics:  # runs stored before the statistic existed lack it
                ranks.append(float(metrics["erank"][-1]))
    return sum(ranks) / len(ranks) if ranks else math.nan


def write_csv(rows: list[dict], out: str | Path | None = None) -> Path:
    target = Path(out) if out else ROOT / "results" / "calibration.csv"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: f"{v:.3f}" if isinstance(v, float) and not math.isnan(v) else
                         ("" if isinstance(v, float) else v) for k, v in r.items()})
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, buf.getvalue().encode())
    return target


def markdown(rows: list[dict]) -> str:
    """The trials as one Markdown table per method, the chosen trial marked."""
    best = choose(rows)
    out = []
    for method, pick in best.items():
        out += [f"### {method}", "", "| trial | knobs | seed | val kNN | val linear | random-init val linear | train s |",
                "|---|---|---|---|---|---|---|"]
        for r in (r for r in rows if r["method"] == method):
            mark = " **(chosen)**" if r["trial"] == pick["trial"] else ""
            out.append(f"| {r['trial']}{mark} | {r['knobs']} | {r['seed']} | {r['val_knn']:.1f} | {r['val_linear']:.1f} | "
                       f"{r['random_init_val_linear']:.1f} | {r['train_s']:.0f} |")
        out.append("")
    return "\n".join(out)
