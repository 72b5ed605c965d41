"""The reading of *Beyond MoCo* (``book/10_methods``): SimCLR, BYOL, SimSiam and SwAV with FT (Table 7), and where
each method's score statistics end."""

from __future__ import annotations

from ftcl_core.runs import RunDir
from ftcl_core.study import experiment_file, readings, store
from ftcl_core.study.chapters import Block
from ftcl_core.study.chapters.results import stored_summary

# the methods' experiment files, SimCLR's first (its batch sizes the negatives): the page's method_files
METHOD_FILES = ("experiments/table7_simclr.yaml", "experiments/supp_e_byol.yaml", "experiments/table7_simsiam.yaml",
                "experiments/table7_swav.yaml")


def read() -> list[Block]:
    last = {}  # each stored setting's lowest seed at its last step
    for path in METHOD_FILES:
        stored = store.load_records(path, "cpu", experiment_file.STORED)
        for r in stored:
            if r["seed"] == min(x["seed"] for x in stored if x["setting"] == r["setting"]):
                m = RunDir(r["dir"]).load_metrics()
                last[r["setting"]] = {k: float(m[k][-1]) for k in ("pos_mean", "neg_mean", "loss")}
    simclr = experiment_file.Experiment.load(METHOD_FILES[0])
    batch = experiment_file.resolve(simclr.base["cpu"], simclr.settings["simclr baseline"], "cpu").train.batch_size
    facts = readings.methods_facts(stored_summary(), last, negatives=2 * batch - 2)  # SimCLR: the other 2M - 2 samples
    return [Block(facts, readings.METHOD_CHECKS, tuple(readings.METHOD_CHECKS), "m_")]
