"""The reading of *Momentum, read with the tool* (``book/learn4_momentum_read``): Table 1's momenta as the course
reads them: the readout's peak, the harder positive of a larger momentum, the crowding of a small one (crowded, not
collapsed), and how much each momentum's gradient landscape jumps."""

from __future__ import annotations

from ftcl_core.runs import RunDir
from ftcl_core.study import curves, evidence, experiment_file, findings, learn, readings, store
from ftcl_core.study.chapters import Block

TABLE_1 = "experiments/table1_momentum.yaml"
DRAWN = ("m=0", "m=0.5", "m=0.9", "m=0.99", "m=1.0")  # the momenta whose gradient landscapes the page draws


def read(stored: evidence.Evidence) -> list[Block]:
    """``stored``: the stored cpu evidence (its findings bind the page's words on the last step up); Table 1's stored
    cpu runs are read from the store."""
    t1 = experiment_file.Experiment.load(TABLE_1)
    runs = [r for r in store.load_records(t1.path, "cpu", experiment_file.STORED) if r["seed"] in t1.seeds]
    ends = readings.score_ends_facts({r["setting"]: RunDir(r["dir"]).load_metrics() for r in runs
                                      if r["seed"] == t1.seeds[0]}, t1.seeds[0])
    by_seed = {s: {r["seed"]: RunDir(r["dir"]).load_metrics() for r in runs if r["setting"] == s}
               for s in ("m=0.9", "m=0.99")}
    hard = readings.harder_positive_facts(by_seed)
    momentum = readings.momentum_facts(t1, runs)
    crowd = learn.crowding_facts(ends, curves.COLLAPSE_LEVEL)
    per_seed = [curves.grad_swing_facts({r["setting"]: RunDir(r["dir"]).load_grad_norms()["per_epoch"] for r in runs
                                         if r["seed"] == seed and r["setting"] in DRAWN}) for seed in t1.seeds]
    swings = per_seed[0]  # the seed the figure draws
    glued = {**ends, **hard, **crowd, "random": momentum["random"], "m0_mean": momentum["collapse_mean_0"],
             "peak": momentum["peak"], "peak_mean": momentum["peak_mean"]}
    return [
        Block(glued, {}, prefix="mom_"),
        Block(ends, readings.CHECKS, ("the frozen key encoder's views agree least",)),
        Block(hard, readings.CHECKS, ("a larger momentum makes the positives harder",)),
        Block(momentum, readings.CHECKS, ("the collapse is not reproduced",)),
        Block(crowd, learn.READING_CHECKS, ("a small momentum crowds the images, short of a collapse",)),
        Block(swings, curves.CHECKS, ("every small momentum swings more than every large one",), "swing_"),
        *[Block(f, curves.CHECKS, ("every small momentum swings more than every large one",)) for f in per_seed[1:]],
        Block({"seeds": str(len(per_seed))}, {}, prefix="swing_"),  # the words: "in each of its seeds"
        Block(stored, findings.CHECKS,  # "the last step up is as large as the paper's", "overlap"
              ("momentum-last-rise-matches", "momentum-lower-rise-undecided")),
    ]
