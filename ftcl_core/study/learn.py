"""Facts and checks of the Learn chapters' toys (:mod:`ftcl_core.study.toy`): what the authored sentences say about them,
bound to named checks (:mod:`ftcl_core.study.checks`), so a change of the toy that makes a sentence false fails the
book's build."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence

import numpy as np

from ftcl_core.study.results.numbers import fixed, grouped
from ftcl_core.study.toy import ToyRun, hardest_share, own_cluster_push


def cluster_tightness(features: np.ndarray, labels: np.ndarray) -> float:
    """The least, over clusters, of the length of a cluster's mean unit feature (1: every point of the cluster maps
    to one feature; near 0: its features spread round the sphere)."""
    return float(min(np.linalg.norm(features[labels == c].mean(0)) for c in np.unique(labels)))


def nearest_cluster_angles(features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per cluster, the angle in degrees from its mean direction to the nearest other cluster's (``features``
    ``(n, dim)`` unit vectors, ``labels`` ``(n,)``): six clusters evenly round a circle are 60 degrees apart, at
    the corners of an octahedron on a sphere 90."""
    c = np.stack([features[labels == k].mean(0) for k in np.unique(labels)])  # clusters x dim
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    angles = np.degrees(np.arccos(np.clip(c @ c.T, -1.0, 1.0)))
    np.fill_diagonal(angles, np.inf)
    return angles.min(1)


def knn_readout(features: np.ndarray, labels: np.ndarray, k: int = 20) -> float:
    """A kNN readout of toy features (the library's :func:`ftcl_core.evaluation.knn_top1`): the first half of the
    evaluation points as the labelled bank, the second half classified by their neighbours; top-1 in percent."""
    import torch

    from ftcl_core.evaluation import knn_top1

    f, y, half = torch.as_tensor(features, dtype=torch.float32), torch.as_tensor(labels), len(labels) // 2
    return knn_top1(f[:half], y[:half], f[half:], y[half:], k=k)


def toy_facts(runs: Sequence[ToyRun], shown: float = 0.2) -> dict:
    """The toy runs as the first Learn chapter quotes them: for the run at temperature ``shown``, alignment and
    uniformity at the first and last step (``align_first``, ``align_last``, ``uniform_first``, ``uniform_last``)
    and the clusters' tightness before and after training (``tight_before``, ``tight_after``); over every
    temperature, the loss at the end (``loss_<tau>``), the tightness after (``tight_<tau>_value``) and the uniformity
    at the end (``uniform_<tau>_value``). Raw values under the same names with ``_value``."""
    run = next(r for r in runs if r.tau == shown and r.negatives)
    h = run.history
    raw = {"align_first": h["align"][0], "align_last": h["align"][-1], "uniform_first": h["uniform"][0],
           "uniform_last": h["uniform"][-1], "tight_before": cluster_tightness(run.before, run.labels),
           "tight_after": cluster_tightness(run.after, run.labels), "knn_before": knn_readout(run.before, run.labels),
           "knn_after": knn_readout(run.after, run.labels), "chance": 100 / len(np.unique(run.labels))}
    out: dict = {k: fixed(v, 2) for k, v in raw.items()} | {f"{k}_value": v for k, v in raw.items()}
    out["tau"], out["steps"] = f"{shown:g}", str(run.steps)
    collapsed = [r for r in runs if not r.negatives]
    if collapsed:  # the positives-only run: every point ends at one place when nothing pushes them apart
        u = float(collapsed[0].history["uniform"][-1])
        out["collapse_uniform"], out["collapse_uniform_value"] = fixed(u, 2), u
        knn = knn_readout(collapsed[0].after, collapsed[0].labels)
        out["knn_collapse"], out["knn_collapse_value"] = fixed(knn, 0), knn
    for r in (r for r in runs if r.negatives):
        out[f"loss_{r.tau:g}"] = fixed(float(r.history["loss"][-1]), 2)
        out[f"tight_{r.tau:g}_value"] = cluster_tightness(r.after, r.labels)
        out[f"uniform_{r.tau:g}_value"] = float(r.history["uniform"][-1])
    by_tau = sorted((r for r in runs if r.negatives), key=lambda r: r.tau)  # the explorer's curves, coldest first
    for r in (by_tau[0], by_tau[-1]):  # the false negatives' share of the push at the coldest and warmest temperature
        push, count = own_cluster_push(r.after, r.labels, r.tau)
        out |= {f"own_push_{r.tau:g}_value": push, f"own_push_{r.tau:g}": f"{100 * push:.0f} %",
                "own_count_value": count, "own_count": f"{100 * count:.0f} %"}
    out["coldest"], out["warmest"] = f"{by_tau[0].tau:g}", f"{by_tau[-1].tau:g}"
    out["hardest_shares_value"] = [hardest_share(r.after, r.tau) for r in by_tau]
    out["hardest_shares"] = ", ".join(f"τ = {r.tau:g}: {100 * v:.0f} %" for r, v in zip(by_tau, out["hardest_shares_value"]))
    return out


def _coldest_bunched(f: Mapping) -> str | None:
    """The coldest run's points end less evenly spread than the shown run's (uniformity higher by more than 0.2)."""
    cold = f[f"uniform_{f['coldest']}_value"]
    return None if cold > f["uniform_last_value"] + 0.2 else (
        f"uniformity ends at {cold:.2f} at τ = {f['coldest']}, {f['uniform_last']} at τ = {f['tau']}")


CHECKS = {
    "the views stay together": lambda f: None if f["align_last_value"] < 0.25 else (
        f"alignment ends at {f['align_last']}: the two views of a point end far apart"),
    "the points spread out": lambda f: None if f["uniform_last_value"] < f["uniform_first_value"] - 0.5 else (
        f"uniformity {f['uniform_first']} -> {f['uniform_last']}: the points did not spread"),
    "each cluster gathers": lambda f: None if f["tight_after_value"] > max(0.9, f["tight_before_value"]) else (
        f"cluster tightness {f['tight_before']} -> {f['tight_after']}"),
    "without negatives it collapses": lambda f: None if f["collapse_uniform_value"] > -0.1 else (
        f"without negatives the uniformity ends at {f['collapse_uniform']}, not near 0 (every point at one place)"),
    "the readout tells the clusters apart": lambda f: None if f["knn_after_value"] > 90 else (
        f"the trained toy's readout is {f['knn_after']} %"),
    "an untrained encoder already reads well on the toy": lambda f: None if f["knn_before_value"] > 60 else (
        f"the untrained toy's readout is {f['knn_before']} %"),
    "the collapsed features are worth little": lambda f: None if f["knn_collapse_value"] < f["knn_after_value"] - 30
    else f"the collapsed toy's readout is {f['knn_collapse']} % against {f['knn_after']} %",
    "at the coldest temperature most of the push falls on the query's own cluster, a sixth of its negatives":
    lambda f: None if f[f"own_push_{f['coldest']}_value"] > 0.5 and 0.1 < f["own_count_value"] < 0.25
    and f[f"own_push_{f['warmest']}_value"] < f[f"own_push_{f['coldest']}_value"] else (
        f"own cluster: {f['own_count']} of the negatives, {f['own_push_' + f['coldest']]} of the push at the "
        f"coldest temperature, {f['own_push_' + f['warmest']]} at the warmest"),
    "at the coldest temperature the clusters stay bunched": lambda f: _coldest_bunched(f),
    "the colder the temperature, the higher the push curve starts": lambda f: None if all(
        a > b for a, b in zip(f["hardest_shares_value"], f["hardest_shares_value"][1:])) else (
        f"the hardest tenth's share of the push does not fall as the temperature rises: {f['hardest_shares']}"),
}

TOY_EXERCISE_CHECKS: Mapping = {  # the first Learn chapter's folded solutions: facts of the runs they train
    "more noise, both worse": lambda f: None if f["align_noisy"] > f["align_clean"] and f["uniform_noisy"] > f[
        "uniform_clean"] else f"noise 0.6 against 0.15: alignment {f['align_noisy']:.3f} / {f['align_clean']:.3f}, "
    f"uniformity {f['uniform_noisy']:.2f} / {f['uniform_clean']:.2f}",
    "half the noise leaves the uniformity": lambda f: None if abs(f["uniform_clean"] - f["uniform_default"]) < 0.05 and (
        f["align_clean"] < f["align_default"] < f["align_noisy"]) and f["uniform_noisy"] > f["uniform_default"] + 0.1
    else f"noise 0.15 / 0.3 / 0.6: alignment {f['align_clean']:.3f} / {f['align_default']:.3f} / "
    f"{f['align_noisy']:.3f}, uniformity {f['uniform_clean']:.2f} / {f['uniform_default']:.2f} / {f['uniform_noisy']:.2f}",
    "a sphere has more room": lambda f: None if f["uniform_3d"] < f["uniform_2d"] else (
        f"uniformity in 3-d {f['uniform_3d']:.2f} against {f['uniform_2d']:.2f} in 2-d"),
    "on the sphere the clusters sit further apart, nearer an octahedron's corners": lambda f: None if min(
        f["nearest_3d"]) > max(f["nearest_2d"]) and min(f["nearest_3d"]) > 70 else (
        f"nearest clusters {min(f['nearest_3d']):.0f} degrees apart in 3-d, {max(f['nearest_2d']):.0f} in 2-d"),
}


def moco_match_facts(losses_mine: Sequence[float], losses_library: Sequence[float], max_weight_diff: float) -> dict:
    """The second Learn chapter's comparison of its from-scratch MoCo with the library's: the steps compared, the
    largest loss difference and the largest weight difference after them (raw values for the check)."""
    diff = float(np.max(np.abs(np.subtract(losses_mine, losses_library))))
    return {"steps": str(len(losses_mine)), "loss_diff": f"{diff:.1e}", "weight_diff": f"{max_weight_diff:.1e}",
            "loss_diff_value": diff, "weight_diff_value": max_weight_diff}


MOCO_CHECKS: Mapping = {
    "the two steps agree": lambda f: None if f["loss_diff_value"] < 1e-5 and f["weight_diff_value"] < 1e-5 else (
        f"loss differs by {f['loss_diff']}, weights by {f['weight_diff']}"),
}


def recipe_facts(cfg, backbone) -> dict[str, str]:
    """The Learn recipe's numbers as the MoCo chapter's prose quotes them: the backbone's parameters (millions), the
    feature dimension C, the queue K, the temperature, the momentum, the batch N and the learning rate of ``cfg`` (a
    RunConfig; :func:`shapes_recipe`'s)."""
    params = sum(p.numel() for p in backbone.parameters()) / 1e6
    return {"params": f"{params:.1f}", "dim": str(cfg.model.dim), "K": grouped(cfg.moco.queue_size),
            "tau": f"{cfg.moco.tau:g}", "m": f"{cfg.moco.momentum:g}", "N": str(cfg.train.batch_size),
            "lr": f"{cfg.optim.lr:g}"}


def moco_training_facts(history: Mapping[str, Sequence[float]], queue_size: int, batch: int) -> dict:
    """A from-scratch MoCo's first steps as the second Learn chapter reads them: the loss at the first step, its
    peak once real keys fill the queue (after ``queue_size / batch`` steps), and at the end; the share of queries
    that find their key at the first step, at its lowest, and over the last ten steps. Raw values under ``_value``."""
    loss, found = np.asarray(history["loss"]), 100 * np.asarray(history["found"])
    fill = int(np.ceil(queue_size / batch))
    raw = {"loss_first": loss[0], "loss_peak": loss.max(), "loss_last": loss[-10:].mean(),
           "guess": float(np.log(queue_size + 1)), "found_first": found[0], "found_low": found[: 3 * fill].min(),
           "found_last": found[-10:].mean()}
    out: dict = {k: fixed(v, 1) for k, v in raw.items()} | {f"{k}_value": v for k, v in raw.items()}
    out["fill"], out["fill_value"] = str(fill), fill
    return out


MOCO_TRAINING_CHECKS: Mapping = {
    "random keys make it easy at first": lambda f: None if f["loss_first_value"] < 1 and f["found_first_value"] > 90
    else f"first step: loss {f['loss_first']}, {f['found_first']} % found",
    "real keys make it hard": lambda f: None if f["guess_value"] - 2.5 < f["loss_peak_value"] < f["guess_value"] and (
        f["found_low_value"] < 5)
    else f"peak loss {f['loss_peak']} against a guess's {f['guess']}; lowest share found {f['found_low']} %",
    "then the encoder learns": lambda f: None if f["loss_last_value"] < f["loss_peak_value"] - 1 and (
        f["found_last_value"] > f["found_low_value"] + 5) else (
        f"last steps: loss {f['loss_last']} (peak {f['loss_peak']}), {f['found_last']} % found"),
    # facts {before, after, chance}: the kNN readout (%) of the untrained and the briefly trained backbone
    "a minute of MoCo already reads better than its start": lambda f: None if f["after"] > f["before"] + 5 else (
        f"kNN readout {f['after']:.1f} % after training against {f['before']:.1f} % untrained"),
}

EXERCISE_CHECKS: Mapping = {  # the second Learn chapter's folded solutions: facts {m0, m99, k256, k4096} (end losses)
    "no momentum ends higher": lambda f: None if f["m0"] > f["m99"] else (
        f"m = 0 ends at {f['m0']:.2f}, m = 0.99 at {f['m99']:.2f}"),
    "a short queue ends lower": lambda f: None if f["k256"] < f["k4096"] else (
        f"K = 256 ends at {f['k256']:.2f}, K = 4096 at {f['k4096']:.2f}"),
}


def crowding_facts(ends: Mapping, level: float) -> dict:
    """The third Learn chapter's reading of Table 1's runs: where Mean(neg) ends highest
    (:func:`ftcl_core.study.readings.score_ends_facts`' ``hi``, ``hi_neg``) against the collapse level
    (:data:`ftcl_core.study.curves.COLLAPSE_LEVEL`). Facts ``crowd_m``, ``crowd_neg``, ``level``; raw under ``_value``."""
    neg, m = float(ends["hi_neg"]), float(ends["hi"])
    return {"crowd_m": ends["hi"], "crowd_neg": ends["hi_neg"], "level": fixed(level, 1), "crowd_neg_value": neg,
            "crowd_m_value": m, "level_value": level}


def run_end_facts(readouts: Mapping, queue_size: int, classes: int) -> dict:
    """What a run's end says beside its falling contrastive top-1 (the third Learn chapter): its linear readout and
    the same network's untrained (``readout``, ``random``, %; raw ``_value``) from its ``eval.json`` ``readouts``,
    and how many of a queue of ``queue_size`` keys share a query's class when the classes are balanced
    (``same_class``: ``queue_size / classes``, the false negatives a query meets)."""
    readout, random = float(readouts["linear_top1"]), float(readouts["random_init_linear_top1"])
    return {"readout": fixed(readout), "random": fixed(random), "readout_value": readout, "random_value": random,
            "same_class": str(round(queue_size / classes))}


def versions_facts(v1: Sequence[Mapping], v2: Sequence[Mapping]) -> dict:
    """MoCo v1's and v2's baselines on the shapes (the stored records of Table 7's ``v1 baseline`` and
    ``v2 baseline``): each one's mean linear readout over its seeds (``v1``, ``v2``, %; raw ``_value``)."""
    if not v1 or not v2:
        raise ValueError("versions_facts needs stored runs of both baselines: run the sweeps of Table 7 (v1 and v2).")
    m1, m2 = (float(np.mean([float(r["linear_top1"]) for r in rs])) for rs in (v1, v2))
    return {"v1": fixed(m1), "v2": fixed(m2), "v1_value": m1, "v2_value": m2}


READING_CHECKS: Mapping = {  # the third Learn chapter (crowding_facts, run_end_facts, versions_facts)
    "MoCo v2 reads below MoCo v1 on the shapes": lambda f: None if f["v2_value"] < f["v1_value"]
    else f"MoCo v2 reads {f['v2']} %, MoCo v1 {f['v1']} %",
    "the run ends well above the same network untrained": lambda f: None if f["readout_value"] > f["random_value"] + 10
    else f"linear readout {f['readout']} % against {f['random']} % untrained",
    "a small momentum crowds the images, short of a collapse": lambda f: None if f["crowd_m_value"] <= 0.5 and (
        0.4 < f["crowd_neg_value"] < f["level_value"]) else (
        f"Mean(neg) ends highest at m = {f['crowd_m']} ({f['crowd_neg']}; the collapse level {f['level']})"),
}


def paper_case_facts() -> dict:
    """The paper's own case for FT, in its numbers (the experiment files' ``paper`` entries, never typed in a page):
    its Table 1 readouts at momentum 0.9 and 0.99 (``t1_m09``, ``t1_m099``, %) and its Table 7 MoCo v1 without FT
    and with both transformations (``t7_base``, ``t7_both``, %), the difference (``t7_gain``, points), and both with
    one λ per dimension (``t7_dim``, %, Sec 4.3)."""
    from ftcl_core.study import experiment_file

    t1 = experiment_file.Experiment.load("experiments/table1_momentum.yaml").paper
    t7 = experiment_file.Experiment.load("experiments/table7_ft_v1.yaml").paper
    return {"t1_m09": f"{t1['m=0.9']:.1f}", "t1_m099": f"{t1['m=0.99']:.1f}", "t7_base": f"{t7['v1 baseline']:.2f}",
            "t7_both": f"{t7['v1 +both']:.2f}", "t7_gain": f"{t7['v1 +both'] - t7['v1 baseline']:+.2f}",
            "t7_dim": f"{t7['v1 +both_dim']:.2f}"}


def first_step_facts(rows: list[dict] | None = None) -> dict:
    """The last Learn chapters' reading of Table 7's MoCo v1 on the shapes, FT from the first step against the same
    run without FT, from ``rows`` (by default the stored runs' ``results/summary.csv``): each arm's
    :func:`ftcl_core.study.readings.claim_facts` under ``both_``, ``pos_``, ``neg_`` (``diff``: points ± 95 %
    interval, ``paper``: the paper's effect; raw ``_value``, ``_ci`` for the checks; ``_seeds``: its paired seeds),
    and the scale they are read on: ``base`` and ``ft`` (the baseline's and +both's mean readout, %) and ``seeds``
    (+both's paired seeds)."""
    from ftcl_core.study import experiment_file, readings

    if rows is None:
        with (experiment_file.ROOT / "results" / "summary.csv").open() as f:
            rows = list(csv.DictReader(f))
    out: dict = {}
    for name in ("both", "pos", "neg"):
        f = readings.claim_facts(rows, "T7", f"v1 +{name}")
        out |= {f"{name}_diff": f["diff"], f"{name}_paper": f["effect"], f"{name}_value": f["diff_value"],
                f"{name}_ci": f["ci_value"], f"{name}_seeds": f["seeds"]}
    both = next(r for r in rows if r["table"] == "T7" and r["setting"] == "v1 +both" and r["reference"] == "v1 baseline")
    base = next(r for r in rows if r["table"] == "T7" and r["setting"] == "v1 baseline")
    out |= {"base": f"{float(base['mean']):.1f} %", "ft": f"{float(both['mean']):.1f} %", "seeds": both["n_seeds"]}
    return out


def why_facts() -> dict:
    """Why FT from the first step costs, as the last Learn chapter reads it: :func:`ftcl_core.study.readings.
    undone_positive_facts` on Table 7's stored MoCo v1 runs, positive extrapolation alone against the same run
    without FT (raw Mean(pos), Mean(neg) and the margin after FT at the end of training, in every seed); the checks
    that bind its words are :data:`ftcl_core.study.readings.CHECKS`' "the encoder undoes the harder positive" and "the
    encoder crowds the images together"."""
    from ftcl_core.study import evidence, experiment_file, readings, store

    return readings.undone_positive_records(store.load_records(evidence.T5_V1, "cpu", experiment_file.STORED))


FIRST_STEP_CHECKS: Mapping = {  # the last Learn chapter (first_step_facts)
    "both transformations cost from the first step": lambda f: None if f["both_value"] + f["both_ci"] < 0 else (
        f"+both reads {f['both_diff']}"),
    "positive extrapolation alone costs": lambda f: None if f["pos_value"] + f["pos_ci"] < 0 else (
        f"+pos reads {f['pos_diff']}"),
    "negative interpolation alone holds zero": lambda f: None if abs(f["neg_value"]) < f["neg_ci"] else (
        f"+neg reads {f['neg_diff']}"),
}


def minute_facts(readings: Mapping[str, Mapping[str, Sequence[float]]], knn: Mapping[str, float]) -> dict:
    """The last Learn chapter's minute of training, plain MoCo against FT from the first step (``readings``: name ->
    its probe's raw ``pos`` and ``neg``, Mean(pos) and Mean(neg) every few steps; ``knn``: name -> kNN readout, %),
    for the names ``plain`` and ``both``: each statistic at the last reading, where the figure's lines end
    (``<name>_pos``, ``<name>_neg``), and each readout (``<name>_knn``); raw values under ``_value``."""
    raw = {f"{name}_{stat}": float(readings[name][stat][-1]) for name in ("plain", "both") for stat in ("pos", "neg")}
    raw |= {f"{n}_knn": knn[n] for n in ("plain", "both")}
    return {k: fixed(v, 1 if k.endswith("knn") else 2) for k, v in raw.items()} | {f"{k}_value": v for k, v in raw.items()}


MINUTE_CHECKS: Mapping = {  # minute_facts: the words under the last Learn chapter's minute of training
    "FT pulls the two views closer": lambda f: None if f["both_pos_value"] > f["plain_pos_value"] + 0.1 else (
        f"Mean(pos) ends at {f['both_pos']} with FT, {f['plain_pos']} without"),
    "FT crowds the images": lambda f: None if f["both_neg_value"] > f["plain_neg_value"] + 0.2 else (
        f"Mean(neg) ends at {f['both_neg']} with FT, {f['plain_neg']} without"),
    "FT reads below plain MoCo": lambda f: None if f["both_knn_value"] < f["plain_knn_value"] - 5 else (
        f"kNN readout {f['both_knn']} % with FT, {f['plain_knn']} % without"),
}


def shapes_recipe(profile: str):
    """The Learn chapters' recipe for training a minute on the drawn shapes: a small ResNet (0.3 M parameters) with
    MoCo v1's loss and head, tuned on these shapes without FT (``configs/cpu_cal_moco_v1.yaml``; the ``smoke``
    profile's seconds-long config under it): ``(config, training set, test set, augmentation)``. Loads the training
    code only when called (the pages that read stored runs never do)."""
    from ftcl_core.config import load_config
    from ftcl_core.data import load_data
    from ftcl_core.study.experiment_file import ROOT
    from ftcl_core.training import augment_config

    cfg = load_config(ROOT / "configs" / ("smoke_moco_v2.yaml" if profile == "smoke" else "cpu_cal_moco_v1.yaml"))
    train_set, test_set = load_data(cfg)
    return cfg, train_set, test_set, augment_config(cfg)
