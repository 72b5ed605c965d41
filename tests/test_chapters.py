"""Issue 67: one reading per page (:mod:`ftcl_core.study.chapters`): a page's numbers and the checks that bind its
words are found from the page's name, hold on the stored runs, and stop the page when they no longer do."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
from pathlib import Path

import pytest

from ftcl_core.study import chapters
from ftcl_core.study.chapters import Block
from ftcl_core.study.checks import TextDisagrees

BOOK = Path(__file__).resolve().parent.parent / "book" / "src"
READINGS = sorted(m.name for m in pkgutil.iter_modules(chapters.__path__))


def _page(name: str) -> Path:
    found = [p for p in BOOK.glob("*.py") if re.fullmatch(rf"(\w+_)?{name}", p.stem) and
             (p.stem == name or re.fullmatch(r"(\d+[a-z]?|learn\d)", p.stem.removesuffix(f"_{name}")))]
    assert len(found) == 1, (name, found)
    return found[0]


def test_there_are_readings():
    assert len(READINGS) >= 10, READINGS


@pytest.mark.parametrize("name", READINGS)
def test_a_reading_is_found_from_its_page_s_name_and_the_page_reads_it(name):
    page = _page(name)
    module = importlib.import_module(f"ftcl_core.study.chapters.{name}")
    title = re.search(r"^# # (.+)$", page.read_text(), re.M).group(1)
    assert f"*{title.split(': ')[0].split('?')[0]}" in module.__doc__.replace("\n", " "), (title, module.__doc__[:120])
    tree = ast.parse(page.read_text())
    imported = {a.name: a.asname or a.name for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module == "ftcl_core.study.chapters" for a in n.names}
    assert name in imported, f"{page.name} does not read ftcl_core.study.chapters.{name}"
    assert f"glue_reading({imported[name]}.read(" in page.read_text()


@pytest.fixture(scope="module")
def stored():
    from ftcl_core.study.evidence import Evidence

    return Evidence.load("cpu")


def _arguments(name: str, stored):  # noqa: ANN001, ANN202  (an Evidence; the call's arguments)
    """What the page passes its reading, built from the stored cpu runs as the page builds it (or, for the pages that
    train live, as their cpu profile trains)."""
    from ftcl_core.runs import RunDir
    from ftcl_core.study import diagnosis_readings, experiment_file, headroom, learn, predict, store
    from ftcl_core.study.chapters import headroom as room_reading

    if name == "momentum":
        exp = experiment_file.Experiment.load("experiments/table1_momentum.yaml")
        runs = sorted((r for r in store.load_records(exp.path, "cpu", experiment_file.STORED) if r["seed"] in exp.seeds),
                      key=lambda r: (list(exp.settings).index(r["setting"]), r["seed"]))
        return runs, exp.seeds[0], ["m=0", "m=0.5", "m=0.9", "m=0.99", "m=1.0"]
    if name == "first_steps":
        return (json.loads((experiment_file.ROOT / predict.REPORT).read_text()),)
    if name == "negatives":
        return diagnosis_readings.negative_comparisons("cpu", experiment_file.STORED)
    if name == "headroom":
        rows, records = headroom.load()
        return headroom.facts(rows, records, headroom.run_metrics(records)), room_reading.auto_facts()
    if name == "reading":
        exp = experiment_file.Experiment.load("experiments/table7_ft_v2.yaml")
        return (RunDir(experiment_file.run_dir(exp, "v2 baseline", 0, "cpu", experiment_file.STORED)),)
    if name == "your_moco":
        rows, records = headroom.load()
        return learn.first_step_facts(), {**headroom.facts(rows, records, headroom.run_metrics(records)),
                                          **headroom.paper_facts()}
    if name == "contrastive":  # the page trains its toys live, in seconds: as its cpu profile trains them
        from ftcl_core.study.toy import train_toy

        runs = [train_toy(tau, steps=300) for tau in (0.05, 0.1, 0.2, 0.5, 1.0)]
        return (learn.toy_facts([*runs, train_toy(0.2, steps=300, negatives=False)]),)
    if name == "moco":  # the recipe the page trains with in its cpu profile (learn.shapes_recipe's, without its data)
        from ftcl_core.config import load_config
        from ftcl_core.methods import build_model

        cfg = load_config(experiment_file.ROOT / "configs" / "cpu_cal_moco_v1.yaml")
        return cfg, build_model(cfg).encoder_q.backbone
    if name in ("results", "methods", "every_table", "ft"):
        return ()
    return (stored,)


@pytest.mark.parametrize("name", READINGS)
def test_every_claim_of_a_page_holds_on_the_stored_runs(name, stored):
    from ftcl_core.study.checks import expect

    module = importlib.import_module(f"ftcl_core.study.chapters.{name}")
    blocks = module.read(*_arguments(name, stored))
    assert blocks and all(isinstance(b, Block) for b in blocks)
    for block in blocks:
        expect(block.checks, block.facts, *block.claims)
        if block.prefix is not None:
            assert any(isinstance(v, str) for v in block.facts.values()), name  # something to glue


def test_a_claim_the_stored_runs_no_longer_hold_stops_the_page():
    pytest.importorskip("myst_nb")
    from ftcl_core.pages.glue import glue_reading
    from ftcl_core.pages.portable import GLUED

    holds = Block({"gain": "+1.0", "value": 1.0}, {"gains": lambda f: None if f["value"] > 0 else "no gain"},
                  ("gains",), "t_")
    glue_reading([holds])
    assert str(GLUED["t_gain"]) and "t_value" not in GLUED  # the raw value is the check's, not glued
    flipped = Block({"gain": "-1.0", "value": -1.0}, holds.checks, ("gains",), "t_")
    with pytest.raises(TextDisagrees, match="gains"):
        glue_reading([flipped])


def test_reading_the_pages_imports_no_training():
    """The readings read stored runs; none of them loads the code that trains (issue 67, item 3)."""
    import subprocess
    import sys

    code = ("import sys, importlib; "
            + "; ".join(f"importlib.import_module('ftcl_core.study.chapters.{n}')" for n in READINGS)
            + "; print(sorted(m for m in sys.modules if m == 'ftcl_core.training'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.stdout.strip() == "[]", out.stdout


def test_the_ninth_reader_s_new_claims_fail_when_the_runs_disagree():
    """07b's first steps, chapter 5's twin runs and 09b's row count: each check fails on facts that contradict it."""
    import numpy as np

    from ftcl_core.study import diagnosis_readings as dr
    from ftcl_core.study import readings

    steps = np.arange(1, 401)
    rising, low, high = np.linspace(0, 0.9, 400), np.full(400, 0.05), np.full(400, 0.8)
    runs = {"v1 baseline": {"step": steps, "rho": rising, "neg_mean": low},
            "v1 +both": {"step": steps, "rho": rising, "neg_mean": high}}
    band = (0.1, 0.55)
    ok = dr.early_rho_facts(runs, band)
    assert dr.CHECKS["FT's ρ passes above the band"](ok) is None
    assert dr.CHECKS["FT's Mean(neg) stays above every baseline's once ρ has passed the band"](ok) is None
    assert ok["ft_above_lo"] == str(int(steps[np.flatnonzero(np.convolve(rising, np.ones(5), "same") / 5 > 0.55)[0]]))
    never = dr.early_rho_facts({**runs, "v1 +both": {**runs["v1 +both"], "rho": np.full(400, 0.2)}}, band)
    assert dr.CHECKS["FT's ρ passes above the band"](never)
    spread = dr.early_rho_facts({**runs, "v1 +both": {**runs["v1 +both"], "neg_mean": low}}, band)
    assert dr.CHECKS["FT's Mean(neg) stays above every baseline's once ρ has passed the band"](spread)

    twins = {"n_value": 3, "same_config": True, "machines_differ": True, "gap_value": 0.4, "ci_value": 4.0, "gap": "0.4"}
    assert dr.CHECKS["the twins share config and seeds and differ by machine"](twins) is None
    assert dr.CHECKS["the twins share config and seeds and differ by machine"]({**twins, "machines_differ": False})
    assert dr.CHECKS["the twins share config and seeds and differ by machine"]({**twins, "same_config": False})
    assert dr.CHECKS["the twins' gap lies inside their intervals"]({**twins, "gap_value": 5.0})

    rows = {"rows": "93", "distinct": "85", "same": True, "paper_claims": "61", "checks": "16", "unfit": "8"}
    name = "the distinct rows are the claims, the checks and the claims set apart"
    assert readings.CLAIM_CHECKS[name]({**rows, "parts_value": 85}) is None
    assert readings.CLAIM_CHECKS[name]({**rows, "parts_value": 84})


def test_chapter_5_s_twins_are_one_recipe_on_two_machines():
    from ftcl_core.study import diagnosis_readings, experiment_file, store

    a = store.load_records("experiments/table1_momentum.yaml", "cpu", experiment_file.STORED)
    b = store.load_records("experiments/table7_ft_v1.yaml", "cpu", experiment_file.STORED)
    f = diagnosis_readings.twin_facts(a, "m=0.99", b, "v1 baseline")
    assert f["same_config"] and f["n_value"] == 3
    differs = diagnosis_readings.twin_facts(a, "m=0.99", a, "m=0.9")  # another config: the check must see it
    assert not differs["same_config"]


def test_a_page_s_stored_run_is_found_by_its_setting_or_named_missing():
    from ftcl_core.runs import RunFileError
    from ftcl_core.study import store

    run = store.stored_run("experiments/table7_ft_v2.yaml", "v2 baseline", seed=0)
    assert run.is_complete() and run.load_config().seed == 0
    with pytest.raises(ValueError, match="has no setting 'v2 basline'.*'v2 baseline'"):
        store.stored_run("experiments/table7_ft_v2.yaml", "v2 basline", seed=0)
    with pytest.raises(RunFileError, match="seed 987"):
        store.stored_run("experiments/table7_ft_v2.yaml", "v2 baseline", seed=987)


def test_the_versions_claim_fails_when_v2_reads_above_v1():
    from ftcl_core.study import learn
    from ftcl_core.study.checks import expect

    below = learn.versions_facts([{"linear_top1": 79.0}], [{"linear_top1": 55.0}, {"linear_top1": 57.0}])
    assert below["v2"] == "56.0"
    expect(learn.READING_CHECKS, below, "MoCo v2 reads below MoCo v1 on the shapes")
    above = learn.versions_facts([{"linear_top1": 50.0}], [{"linear_top1": 60.0}])
    with pytest.raises(TextDisagrees, match="MoCo v2 reads 60.0"):
        expect(learn.READING_CHECKS, above, "MoCo v2 reads below MoCo v1 on the shapes")
    with pytest.raises(ValueError, match="both baselines"):
        learn.versions_facts([], [{"linear_top1": 60.0}])


def test_the_live_learn_pages_later_readings_hold_on_the_words_and_fail_on_their_opposite():
    """Learn 1 and 2 train live and read what they train at several points of the page (their ``read_*``): each
    block names checks that exist, holds on facts as the words describe them and fails on facts that contradict them."""
    from ftcl_core.study import learn
    from ftcl_core.study.chapters import contrastive, moco
    from ftcl_core.study.checks import expect

    history = {"loss": [0.5] + [8.0] * 40 + [5.0] * 20, "found": [1.0] + [0.0] * 40 + [0.2] * 20}
    noise = {"align_clean": 0.05, "align_default": 0.1, "align_noisy": 0.3, "uniform_clean": -3.0,
             "uniform_default": -3.02, "uniform_noisy": -2.5, "uniform_3d": -3.5, "uniform_2d": -3.0,
             "nearest_3d": [80.0, 85.0], "nearest_2d": [58.0, 60.0]}
    ends = {"m0": 8.0, "m99": 7.0, "k256": 4.0, "k4096": 7.0}
    readings = [(moco.read_training, history, {**history, "loss": [9.0] * 61}),
                (moco.read_readout, {"before": 19.2, "after": 40.2, "chance": 10.0},
                 {"before": 19.2, "after": 21.0, "chance": 10.0}),
                (moco.read_match, learn.moco_match_facts([1.0], [1.0], 0.0), learn.moco_match_facts([1.0], [1.1], 0.0)),
                (moco.read_exercises, ends, {**ends, "m0": 6.0}),
                (contrastive.read_exercises, noise, {**noise, "uniform_3d": -2.0})]
    for read, holds, flipped in readings:
        args = (holds, 4096, 256) if read is moco.read_training else (holds,)
        for block in read(*args):
            expect(block.checks, block.facts, *block.claims)
        args = (flipped, 4096, 256) if read is moco.read_training else (flipped,)
        with pytest.raises(TextDisagrees):
            for block in read(*args):
                expect(block.checks, block.facts, *block.claims)
