"""The GPU check (``python -m benchmarks.gpucheck``) runs whole on this CPU as a dry run, needs nothing the GPU
machines lack, and says which parts a short budget skipped."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.gpucheck import checks, environment, report, run
from ftcl_core.study.checks import failures

ROOT = Path(__file__).resolve().parent.parent

# Packages of the book and test extras that the GPU machine need not have: importing any of them fails.
NOT_ON_THE_GPU_MACHINE = ("matplotlib", "plotly", "ipywidgets", "papermill", "IPython", "myst_nb", "jupyter_book",
                          "pandas", "scipy", "sklearn", "lightly", "hypothesis", "playwright", "pytest")
BLOCKER = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None  # import fails with ModuleNotFoundError; importlib.util.find_spec says it is absent
from benchmarks.gpucheck.run import main
raise SystemExit(main(sys.argv[1:]))
"""


@pytest.mark.slow  # the whole GPU check, dry, in a subprocess
def test_dry_run_passes_with_only_the_gpu_machines_packages_and_writes_both_reports(tmp_path):
    script = BLOCKER.format(blocked=NOT_ON_THE_GPU_MACHINE)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, "--dry-run", "--out", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    stored = json.loads((tmp_path / "gpucheck.json").read_text())
    assert stored["command"].startswith("python -m benchmarks.gpucheck")
    parts = stored["parts"]
    assert parts["environment"]["status"] == "pass"
    assert parts["agreement"]["status"] == "pass"
    checks = parts["agreement"]["checks"]
    assert any(k.startswith("augmentation") for k in checks) and any("fp32 vs cpu fp32" in k for k in checks)
    assert parts["compile"]["status"] == "pass"  # ran in its own time-limited child process
    checks = {**checks, **parts["compile"]["checks"]}
    assert len(parts["compile"]["checks"]) == 2 and all(c["pass"] for c in checks.values())
    assert parts["throughput"]["status"] == "measured"
    t = next(iter(parts["throughput"]["settings"].values()))
    assert t["images_per_s"] > 0 and t["anchor"]["images_per_s"] > 0 and t["speedup_vs_anchor"] > 0
    assert set(t["phases_ms_synchronised"]) == {"data", "augment", "forward", "ft_loss", "backward", "statistics", "optimizer"}
    scale = parts["scale"]
    assert scale["status"] == "measured" and set(scale["arms"]) == {"baseline", "ft_pos_neg"}
    assert 0 <= scale["arms"]["baseline"]["linear_top1"] <= 100
    k = parts["kernels"]
    assert k["status"] == "measured" and {n.split()[0] for n in k["layer"]} == {"per_group", "view", "plain"}
    assert all(v["ms"] > 0 and v["kernels"] for v in k["layer"].values())
    assert all(st["view_speedup"] > 0 for st in k["step"].values())
    c = parts["captured"]["executions"]
    assert c["eager"]["pass"] and c["compiled"]["pass"] and c["compiled"]["run_30_epochs_s"] > 0
    assert "device=cpu has none" in c["captured"]["refused"]  # a CPU has no CUDA graphs: refused, with the fix
    lo = parts["loader"]
    assert "RandomResizedCrop" in lo["per_transform_ms_per_view"] and lo["dataloader"][0]["images_per_s"] > 0
    im = parts["imagenet"]
    assert im["status"] == "measured" and im["cache"]["images_per_s"] > 0 and im["train"]["images_per_s"] > 0
    assert im["readout"]["seconds"] > 0 and "ftcl_core train configs/gpu_in100_moco_v2.yaml" in im["command"]
    md = (tmp_path / "gpucheck.md").read_text()
    assert "| compile | pass |" in md
    for heading in ("## 1. Environment", "## 2. The GPU path agrees", "## 3. Throughput", "## 3a. Split batch-norm",
                    "## 3b. The CPU profile's small network", "## 3c. Where the per-sample", "## 3d. An ImageNet-100",
                    "## 4. The scale question"):
        assert heading in md
    print(f"the dry run took {time.perf_counter() - t0:.0f} s")  # reported, not bounded: a loaded CPU is slower


def test_a_budget_too_short_skips_parts_and_says_so(tmp_path):
    result = run.run_check(tmp_path, budget_s=0.5, dry_run=True)
    assert all(p["status"] == "skipped" and "budget" in p["why"] for p in result["parts"].values())
    assert "skipped: needs" in (tmp_path / "gpucheck.md").read_text()


def test_tolerance_helpers_measure_what_they_say():
    import torch

    a = {"w": torch.tensor([1.0, 0.0]), "b": torch.tensor([0.0, 2.0])}
    b = {"w": torch.tensor([1.0, 0.0]), "b": torch.tensor([0.0, 2.2])}
    g = checks.grad_rel(a, b)
    assert abs(g["rel_l2"] - 0.2 / (1 + 2.2**2) ** 0.5) < 1e-6 and g["worst_tensor"] == "b"
    assert environment.bf16_peak("NVIDIA H100 PCIe") == 756.0 and environment.bf16_peak("NVIDIA H200") == 989.0


def test_without_a_gpu_the_real_check_says_what_to_do(tmp_path):
    import pytest
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(SystemExit, match="--dry-run"):
        run.run_check(tmp_path)


def test_the_markdown_report_and_the_book_show_the_same_tables_of_the_stored_reports():
    stored = report.stored_reports(ROOT / "results" / "gpu")
    assert stored, "results/gpu/ holds the reports of the GPU machines"
    for r in stored:
        md = report.report_markdown(r)
        for header, rows in report.tables(r["parts"]).values():
            assert all(len(row) == len(header) for row in rows)
            assert "\n".join(report.markdown_table(header, rows)) in md
    book = report.book_tables(stored)
    assert {"agreement", "throughput", "scale"} <= set(book) <= {"agreement", "throughput", "kernels", "captured", "loader",
                                                               "imagenet", "scale"}
    assert report.book_facts(stored)["gpu"].endswith("H200")
    for part, left_out in report.BOOK_LEAVES_OUT.items():  # too wide for the book's column: the markdown keeps them
        assert part not in book or not left_out & set(book[part][0])
    # every check the book's GPU section names holds on the stored reports, and each fails when its reading flips
    facts = report.book_facts(stored)
    assert failures(report.BOOK_CHECKS, facts, *report.BOOK_CHECKS) == {}
    flipped = {**facts, "values": {**facts["values"], "fp32_pass": False, "compiled_pass": True, "scale_ft": 99.0,
                                   "resnet50_224px_ft": 0.3, "resnet18_64px_pil_anchor": False}}
    assert set(failures(report.BOOK_CHECKS, flipped, *report.BOOK_CHECKS)) >= {
        "one fp32 step on the GPU agrees with the CPU's", "the compiled and captured steps drift from eager's",
        "the scale pair's FT ends below its baseline and the random-init encoder",
        "FT adds nothing measurable to the long step", "the anchors blur with PIL, as the released code does"}
    with pytest.raises(ValueError, match="no GPU report"):
        report.book_facts([])


def test_the_one_prepared_device_command_is_valid_and_its_jobs_resolve():
    """tools/device_lease.sh parses, asks the GPU check only for parts it has, and every job of tools/device_jobs.tsv
    names a stored experiment's setting and seed, in groups of a baseline and its arms (stopped together)."""
    from benchmarks.gpucheck.setting import PARTS
    from ftcl_core.study import experiment_file

    script = (ROOT / "tools/device_lease.sh").read_text()
    assert subprocess.run(["bash", "-n", str(ROOT / "tools/device_lease.sh")]).returncode == 0
    asked = {p for line in script.splitlines() if line.startswith("ALL=") for p in line[4:].split(",")}
    assert asked and asked <= set(PARTS), asked - set(PARTS)
    jobs = [line.split("\t") for line in (ROOT / "tools/device_jobs.tsv").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    assert jobs[0][:2] == ["experiments/diagnosis/capacity_v1.yaml", "baseline r18-w64"]  # the capacity point first
    groups: dict[str, list[list[str]]] = {}
    for job in jobs:
        assert len(job) == 4, job
        groups.setdefault(job[3], []).append(job[:3])
    assert sum(len(g) for g in groups.values()) == len(jobs)
    for (path, base, seed), *arms in groups.values():  # a baseline, then the arms compared with it
        exp = experiment_file.Experiment.load(ROOT / path)
        assert base in exp.settings and int(seed) in exp.seeds and arms
        for path2, setting2, seed2 in arms:
            assert (path2, seed2) == (path, seed) and exp.compare[setting2] == base


def test_the_readmes_imagenet_command_loads_and_its_hours_come_from_the_stored_measurement():
    """README's one ImageNet-100 command is a valid config, and the hours it quotes are its steps at the step time (plus
    FT's overhead) stored in results/gpu/ for that very step."""
    import re
    import shlex

    from ftcl_core.config import load_config

    readme = (ROOT / "README.md").read_text()
    block = readme.split("**ImageNet-100 on one GPU, one command.**")[1].split("```bash\n")[1].split("```")[0]
    argv = shlex.split(block.replace("\\\n", " "))
    assert argv[:4] == [".venv/bin/python", "-m", "ftcl_core", "train"] and "--out" in argv
    cfg = load_config(argv[4], argv[5:argv.index("--out")])
    steps = cfg.train.epochs * (126_689 // cfg.train.batch_size)  # ImageNet-100's training images, whole batches
    assert steps == 98_800 and f"{steps:,}".replace(",", " ") in readme
    stored = json.loads((ROOT / "results/gpu/2026-11-26_NVIDIA-H200_run1_full.json").read_text())
    measured = stored["parts"]["throughput"]["settings"]["resnet50_224px"]
    hours = steps * measured["step_ms"] * (1 + measured["ft_overhead"]) / 3.6e6
    assert f"about {hours:.1f} hours of training on one H200" in readme
    assert f"{measured['step_ms']:.1f} ms" in readme and re.search(rf"{measured['ft_overhead'] * 100:.1f} % FT adds", readme)


@pytest.mark.slow  # two short trainings through dynamo (about 20 s)
def test_compile_agreement_reports_each_executions_worst_difference_and_fails_beyond_the_tolerance():
    """tools/compile_agreement.py: dynamo's eager backend runs eager's maths, so its losses agree to float rounding;
    a tolerance below that difference makes the tool exit 1."""
    cmd = [sys.executable, str(ROOT / "tools/compile_agreement.py"), "--backend", "eager", "--steps", "2"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ok = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    assert ok.returncode == 0, ok.stderr[-2000:]
    out = json.loads(ok.stdout.strip().splitlines()[-1])
    assert len(out["eager"]) == 2 and out["compiled"]["worst"] <= 1e-5
    strict = subprocess.run([*cmd, "--tolerance", "-1"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert strict.returncode == 1
