"""The reading of *Is it our recipe?* (``book/07c_recipe``): the calibrated recipe, the baselines against the bar,
Kaiming's init, the false-negative oracle, more classes and the sharded draws, each against its baseline."""

from __future__ import annotations

from ftcl_core.study import calibration, diagnosis, diagnosis_readings, experiment_file, findings, table_verdicts
from ftcl_core.study.chapters import Block, comparison
from ftcl_core.study.evidence import Evidence


def read(stored: Evidence) -> list[Block]:
    paths = diagnosis.FIRST_STEP_EXPERIMENTS
    runs = {key: stored.records[path] for key, path in paths.items()}
    baselines = diagnosis_readings.baseline_facts(table_verdicts.baseline_aims(list(stored.summary)))
    init_exp = experiment_file.Experiment.load(paths["init"])
    encoder = experiment_file.resolve(experiment_file.base_for(init_exp, "cpu"), {}, "cpu").model.encoder
    init = calibration.init_facts(calibration.trials(profile="cpu", root=experiment_file.STORED), "moco_v1", encoder)
    oracle, classes = diagnosis_readings.oracle_rows(stored, runs), diagnosis_readings.class_rows(stored, runs)
    return [
        Block(stored, findings.CHECKS, ("first-step-costs",)),
        comparison("cal_", stored.first_step["recipe"], "costs"),
        Block(baselines, diagnosis_readings.CHECKS, ("v1 meets the bar", "v2 misses the spread only",
                                                     "v2 reads out below v1"), "base_"),
        Block({**init, "encoder": f"`{init['encoder']}`", "pick": f"`{init.get('pick')}`"}, calibration.CHECKS,
              ("both trials are stored", "the calibration chose another trial"), "init_"),
        comparison("kaiming_", stored.first_step["init"], "costs"),
        comparison("oracle_", oracle[0], "costs"),
        comparison("oracle_ft_", oracle[1], "cannot be told from zero"),
        comparison("classes_", classes[0], "costs"),
        comparison("classes_gain_", classes[1], "cannot be told from zero"),
        comparison("shards_", stored.first_step["shards"], "costs"),
    ]
