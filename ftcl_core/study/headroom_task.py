"""The task with headroom's map file and the measures both its experiments read (issues 50 and 66).

The map (:data:`MAP`) trains four arms (:data:`ARMS`) against a baseline at three lengths (:data:`LENGTHS`), paired by
seed; :func:`setting` names a cell's setting, :func:`steps_per_epoch` turns an epoch into optimiser steps, and
:func:`crowding` says whether an arm crowds the images as FT switches on. :mod:`ftcl_core.study.headroom` reads the map,
:mod:`ftcl_core.study.switch_time` the separating experiment.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ftcl_core.runs import RunDir
from ftcl_core.study import experiment_file
from ftcl_core.study.diagnosis import NOT_RUN
from ftcl_core.study.results import verdicts
from ftcl_core.study.results.verdicts import MIN_SEEDS

MAP = experiment_file.ROOT / "experiments" / "headroom" / "map_v1.yaml"
LENGTHS = (30, 120, 240)  # epochs; the late starts switch FT on after 30 % of the run (Tab. 6's start 30 of 100)
ARMS = ("both", "both_late", "neg", "pos_late")  # the four arms set against the baseline of the same length and seed
CROWDS = 0.05  # cosine: an arm crowds the images when its raw Mean(neg) exceeds its baseline's by more than this


def setting(arm: str, length: int) -> str:
    """The map's setting of ``arm`` (:data:`ARMS`, or ``baseline``) at ``length`` epochs."""
    start = length * 3 // 10
    return {"baseline": f"baseline {length}", "both": f"+both {length}", "both_late": f"+both from {start} of {length}",
            "neg": f"+neg {length}", "pos_late": f"+pos from {start} of {length}"}[arm]


def steps_per_epoch() -> int:
    """The map's optimiser steps an epoch (its recipe's ``data.n_train // train.batch_size``, the last partial batch
    dropped)."""
    exp = experiment_file.Experiment.load(MAP)
    cfg = experiment_file.resolve(exp.base["cpu"], exp.settings[setting("baseline", 30)], "cpu")
    return cfg.data.n_train // cfg.train.batch_size


def run_metrics(records: list[dict]) -> dict[str, dict[int, dict]]:
    """Each stored map run's per-step metrics (``metrics.npz``), by setting and seed; records without a run
    folder (``dir``) are left out."""
    out: dict[str, dict[int, dict]] = {}
    for r in records:
        if r.get("dir"):
            out.setdefault(r["setting"], {})[int(r["seed"])] = RunDir(r["dir"]).load_metrics()
    return out


def crowding(key: str, pairs: Mapping[int, tuple[Mapping, Mapping]], start: int, length: int, tail: int) -> dict:
    """Whether one arm crowds the images as FT switches on (:func:`ftcl_core.study.headroom.crowding_facts`,
    :func:`ftcl_core.study.switch_time.facts`): ``pairs`` holds, per seed, the arm's and its baseline's run metrics; FT
    switches on at epoch ``start`` of a ``length``-epoch run (the window: the tenth of the run from there); ``key``
    prefixes the facts, as :func:`~ftcl_core.study.headroom.crowding_facts` names them."""
    width, window, end = max(1, length // 10), {}, {}
    for s, (ft, base) in pairs.items():
        epoch = np.asarray(ft["epoch"])
        step = (epoch >= start) & (epoch < start + width)
        window[s] = [float(np.mean(np.asarray(m["neg_mean"])[step])) for m in (ft, base)]
        end[s] = [float(np.mean(np.asarray(m["neg_mean"])[-tail:])) for m in (ft, base)]

    def word(both: dict) -> str:
        if len(both) < MIN_SEEDS:
            return verdicts.UNDECIDED
        above = [a - b > CROWDS for a, b in both.values()]
        return "crowds" if all(above) else "spread" if not any(above) else "mixed"

    avg = lambda both, i: f"{np.mean([p[i] for p in both.values()]):.2f}" if both else NOT_RUN  # noqa: E731
    return {f"{key}_ft": avg(window, 0), f"{key}_base": avg(window, 1), f"{key}_end_ft": avg(end, 0),
            f"{key}_end_base": avg(end, 1), f"{key}_n": str(len(pairs)), f"{key}_seeds": len(pairs),
            f"{key}_word": word(window), f"{key}_end_word": word(end)}
