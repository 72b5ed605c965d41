"""The reading of *Reading a run* (``book/learn3_reading``): a random encoder's scores, and the stored MoCo v2 run's
curves, gradient landscape and readout, and its readout beside MoCo v1's on the same shapes."""

from __future__ import annotations

import numpy as np

from ftcl_core.runs import RunDir
from ftcl_core.study import curves, experiment_file, learn, store
from ftcl_core.study.chapters import Block


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
    v1, v2 = (store.load_records(f"experiments/table7_ft_{v}.yaml", "cpu", experiment_file.STORED) for v in ("v1", "v2"))
    versions = learn.versions_facts([r for r in v1 if r["setting"] == "v1 baseline"],
                                    [r for r in v2 if r["setting"] == "v2 baseline"])
    landscape = stored.load_grad_norms()
    land = curves.grad_swing_facts({"run": landscape["per_epoch"]}, landscape["layers"])
    return [
        Block(curve, curves.CHECKS, ("Mean(neg) climbs from the random keys", "the contrastive top-1 spikes and sinks",
                                     "Var(neg) grows as the top-1 sinks", "the loss peaks as the queue fills",
                                     "Mean(pos) falls in the first epoch and climbs back",
                                     "Mean(neg) dips below zero and settles at zero", "Var(neg) peaks mid-run and eases",
                                     "Var(neg) spikes while the queue fills, as a mix of random and real keys"),
              "curve_"),
        Block(end, learn.READING_CHECKS, ("the run ends well above the same network untrained",), "end_"),
        Block(versions, learn.READING_CHECKS, ("MoCo v2 reads below MoCo v1 on the shapes",), "end_"),
        Block(land, curves.CHECKS, ("the summed gradient norm grows over the run",
                                    "the batch-norm layers carry the smallest gradients"), "land_"),
    ]
