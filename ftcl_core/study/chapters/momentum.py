"""The reading of *Momentum (Table 1)* (``book/05_momentum``): Table 1's momenta on the shapes and on Fashion-MNIST,
the score statistics where the runs end, the harder positive of a larger momentum, the key encoder's half-life
(eq. 2), the paper's rise to 0.99, and how much each momentum's curves swing."""

from __future__ import annotations

import csv
import math

from ftcl_core.runs import RunDir
from ftcl_core.study import curves, diagnosis_readings, experiment_file, readings, store
from ftcl_core.study.chapters import Block

TABLE_1 = "experiments/table1_momentum.yaml"
TABLE_1_FMNIST = "experiments/table1_momentum_fmnist.yaml"
TABLE_7_V1 = "experiments/table7_ft_v1.yaml"  # its MoCo v1 baseline is Table 1's m = 0.99: one recipe, same seeds


def twin_block(stored: list[dict]) -> Block:
    """Table 1's m = 0.99 runs (among ``stored``, the stored cpu runs of Table 1) beside Table 7's MoCo v1 baseline:
    one recipe and seeds, trained on two processors (this page and the last Learn chapter quote both)."""
    return Block(diagnosis_readings.twin_facts(stored, "m=0.99", store.load_records(TABLE_7_V1, "cpu",
                                                                                  experiment_file.STORED),
                                               "v1 baseline"), diagnosis_readings.CHECKS,
                 ("the twins share config and seeds and differ by machine", "the twins' gap lies inside their intervals"),
                 "twin_")


def read(stored: list[dict], seed: int, landscapes: list[str]) -> list[Block]:
    """``stored``: the stored cpu runs of Table 1 the page reads (its settings at the experiment's seeds); ``seed``
    and ``landscapes``: the seed and the settings whose gradient curves the page draws."""
    exp = experiment_file.Experiment.load(TABLE_1)
    first = {r["setting"]: RunDir(r["dir"]).load_metrics() for r in stored if r["seed"] == exp.seeds[0]}
    by_seed = {s: {r["seed"]: RunDir(r["dir"]).load_metrics() for r in stored if r["setting"] == s}
               for s in ("m=0.9", "m=0.99")}
    cfg = experiment_file.resolve(experiment_file.base_for(exp, "cpu"), exp.settings["m=0.99"], "cpu")
    per_epoch = cfg.data.n_train // cfg.train.batch_size  # optimiser steps in one epoch of the stored runs
    half_life = {m: math.log(2) / -math.log(m) for m in (0.99, 0.999)}  # eq. 2: m**t = 1/2
    ema = {"steps_per_epoch": str(per_epoch), "epochs": str(cfg.train.epochs),
           **{f"half_{str(m)[2:]}": f"{t:.0f}" for m, t in half_life.items()},
           **{f"half_{str(m)[2:]}_epochs": f"{t / per_epoch:.0f}" for m, t in half_life.items()}}
    with (experiment_file.ROOT / "results" / "summary.csv").open() as fh:
        rise = readings.claim_facts(list(csv.DictReader(fh)), "T1", "m=0.99")
    fm_exp = experiment_file.Experiment.load(TABLE_1_FMNIST)
    fm = readings.momentum_facts(fm_exp, store.load_records(fm_exp.path, "cpu", experiment_file.STORED))
    drawn = {r["setting"]: RunDir(r["dir"]).load_grad_norms()["per_epoch"] for r in stored
             if r["seed"] == seed and r["setting"] in landscapes}
    return [
        Block(readings.score_ends_facts(first, exp.seeds[0]), readings.CHECKS,
              ("the frozen key encoder's views agree least",), "ends_"),
        Block(readings.momentum_facts(exp, stored), readings.CHECKS,
              ("every momentum has 3 seeds", "every learning momentum learns as the paper says",
               "the collapse is not reproduced", "no learning momentum is below the collapse edge",
               "the step from collapse to learning is not seen"), "mom_"),
        Block(readings.harder_positive_facts(by_seed), readings.CHECKS,
              ("a larger momentum makes the positives harder",), "hard_"),
        Block(ema, {}, prefix="ema_"),
        twin_block(stored),
        Block(rise, readings.CLAIM_CHECKS, ("matches: the interval holds the paper's effect and excludes zero",), "rise_"),
        Block(fm, readings.CHECKS, ("every momentum has 3 seeds", "every learning momentum learns as the paper says",
                                    "the collapse is undecided", "every learning momentum is above the collapse edge",
                                    "the collapsing momenta are below the raw pixels"), "fm_"),
        Block(curves.grad_swing_facts(drawn), curves.CHECKS,
              ("every small momentum swings more than every large one",), "spikes_"),
        Block(diagnosis_readings.volatility_facts(diagnosis_readings.volatility_rows(stored)), diagnosis_readings.CHECKS,
              ("Mean(neg) swings most at a large momentum", "the gradient norm swings most at a small momentum",
               "the frozen key encoder swings most in Mean(neg)",
               "the gradient norm swings more at every small momentum than at every large one",
               "the smallest momentum swings least of the small ones"), "vol_"),
    ]
