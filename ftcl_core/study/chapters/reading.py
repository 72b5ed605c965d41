"""The reading of *Reading a run* (``book/learn3_reading``): a random encoder's scores, the stored MoCo v2 run's
curves and readout, MoCo v2 against v1, and Table 1's momenta as the course reads them (crowded, not collapsed)."""

from __future__ import annotations

import numpy as np

from ftcl_core.runs import RunDir
from ftcl_core.study import curves, evidence, experiment_file, findings, learn, readings, store
from ftcl_core.study.chapters import Block

TABLE_1 = "experiments/table1_momentum.yaml"
DRAWN = ("m=0", "m=0.5", "m=0.9", "m=0.99", "m=1.0")  # the momenta whose gradient landscapes the page draws


def init(q: np.ndarray, k: np.ndarray, stored: RunDir) -> Block:
    """A random encoder's scores (``q, k``: its features of two views, computed on the page) against the stored run's
    first and last steps."""
    return Block(curves.init_score_facts(q, k, stored.load_metrics()), curves.CHECKS,
                 ("a random encoder's positives score above its negatives",
                  "a random encoder's cosines sit above the collapse level", "the shared direction carries the level",
                  "the queue's random keys score near zero",
                  "the trained run ends with a wide gap below the collapse level"), "init_")


def read(stored: RunDir) -> list[Block]:
    """``stored``: the stored cpu run of MoCo v2's baseline, seed 0, that the page's words read."""
    cfg = stored.load_config()
    curve = curves.training_curve_facts(stored.load_metrics(), cfg.moco.queue_size, cfg.train.batch_size)
    end = learn.run_end_facts(stored.load_eval(), cfg.moco.queue_size, cfg.data.classes)
    t1 = experiment_file.Experiment.load(TABLE_1)
    runs = [r for r in store.load_records(t1.path, "cpu", experiment_file.STORED) if r["seed"] in t1.seeds]
    ends = readings.score_ends_facts({r["setting"]: RunDir(r["dir"]).load_metrics() for r in runs
                                      if r["seed"] == t1.seeds[0]}, t1.seeds[0])
    by_seed = {s: {r["seed"]: RunDir(r["dir"]).load_metrics() for r in runs if r["setting"] == s}
               for s in ("m=0.9", "m=0.99")}
    hard = readings.harder_positive_facts(by_seed)
    momentum = readings.momentum_facts(t1, runs)
    crowd = learn.crowding_facts(ends, curves.COLLAPSE_LEVEL)
    swings = curves.grad_swing_facts({r["setting"]: RunDir(r["dir"]).load_grad_norms()["per_epoch"] for r in runs
                                      if r["seed"] == t1.seeds[0] and r["setting"] in DRAWN})
    glued = {**ends, **hard, **crowd, "random": momentum["random"], "m0_mean": momentum["collapse_mean_0"],
             "peak": momentum["peak"], "peak_mean": momentum["peak_mean"]}
    return [
        Block(curve, curves.CHECKS, ("Mean(neg) climbs from the random keys", "the contrastive top-1 spikes and sinks",
                                     "Var(neg) grows as the top-1 sinks", "the loss peaks as the queue fills",
                                     "Mean(pos) falls in the first epoch and climbs back",
                                     "Mean(neg) dips below zero and settles at zero", "Var(neg) peaks mid-run and eases",
                                     "Var(neg) spikes while the queue fills, as a mix of random and real keys"),
              "curve_"),
        Block(end, learn.READING_CHECKS, ("the run ends well above the same network untrained",), "end_"),
        Block(glued, {}, prefix="mom_"),
        Block(ends, readings.CHECKS, ("the frozen key encoder's views agree least",)),
        Block(hard, readings.CHECKS, ("a larger momentum makes the positives harder",)),
        Block(momentum, readings.CHECKS, ("the collapse is not reproduced",)),
        Block(crowd, learn.READING_CHECKS, ("a small momentum crowds the images, short of a collapse",)),
        Block(swings, curves.CHECKS, ("every small momentum swings more than every large one",), "swing_"),
        Block(evidence.Evidence.load("cpu"), findings.CHECKS,  # "the last step up is as large as the paper's", "overlap"
              ("momentum-last-rise-matches", "momentum-lower-rise-undecided")),
    ]
