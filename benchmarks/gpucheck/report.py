"""The GPU check's report: one set of tables, rendered as the Markdown report of a check and in the book.

A check's JSON (``gpucheck.json``) holds ``parts``: ``{part: result}``.  :func:`tables` turns the results of the
agreement (with compile), throughput and scale parts into ``(header, rows)`` tables of formatted cells;
:func:`report_markdown` writes them, after the status and environment tables, as ``gpucheck.md``, and the book
shows the same tables (:func:`book_tables`) of the newest finished result of each part among the reports stored
in ``results/gpu/`` (:func:`stored_reports`, :func:`latest_parts`), with sentences generated from them
(:func:`book_summary`).  Needs nothing beyond the standard library.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.gpucheck.setting import PARTS
from ftcl_core.study.results.numbers import significant as fmt

Table = tuple[list[str], list[list[str]]]  # (header, rows of formatted cells)

COMMAND = "python -m benchmarks.gpucheck"


def _percent(fraction: float | None) -> str:
    return "–" if fraction is None else fmt(100 * fraction)


def _skipped(name: str, why: str, columns: int) -> list[str]:
    return [name, f"skipped: {why}"] + [""] * (columns - 2)


def agreement_table(parts: dict[str, dict]) -> Table | None:
    """The agreement and compile checks: losses of the two steps compared, their relative difference, the
    gradients' relative L2 difference and cosine, each gradient's relative L2 distance to the float64 reference
    where measured, the tolerances and the verdict; the augmentation check's largest absolute difference."""
    checks = {**parts.get("agreement", {}).get("checks", {}), **parts.get("compile", {}).get("checks", {})}
    header = ["check", "loss a", "loss b", "loss rel. diff", "grad rel. L2", "grad cosine", "grad rel. L2 to float64",
              "tolerance", "pass"]
    rows = []
    for name, c in checks.items():
        if "skipped" in c:
            rows.append(_skipped(name, c["skipped"], len(header)))
            continue
        tolerance = ", ".join(f"{k} <= {fmt(v)}" for k, v in c["tolerance"].items())
        if "max_abs" in c:
            rows.append([name, "", "", f"max abs {fmt(c['max_abs'])} (TF32 on: {fmt(c.get('max_abs_with_tf32'))})",
                         "", "", "", tolerance, fmt(c["pass"])])
            continue
        losses = [v for k, v in c.items() if k.startswith("loss_") and k != "loss_rel"]
        to64 = {k.removeprefix("grad_").removesuffix("_vs_float64"): v["rel_l2"] for k, v in c.items()
                if k.endswith("_vs_float64")}
        rows.append([name, fmt(losses[0], 6), fmt(losses[1], 6), fmt(c["loss_rel"]), fmt(c["grad"]["rel_l2"]),
                     fmt(c["grad"]["cosine"], 6), ", ".join(f"{k} {fmt(v)}" for k, v in to64.items()), tolerance,
                     fmt(c["pass"])])
    if parts.get("compile", {}).get("status") == "did not finish":
        rows.append(["train.compile vs eager", f"did not finish: {parts['compile']['why']}"] + [""] * (len(header) - 2))
    return (header, rows) if rows else None


def throughput_table(parts: dict[str, dict]) -> Table | None:
    """Per setting: images/s and ms of the unsynchronised step, peak memory, FLOPs a step, achieved TFLOP/s and its
    share of the bf16 peak, FT and statistics overheads, the torchvision anchor's images/s and the speed-up."""
    settings = parts.get("throughput", {}).get("settings", {})
    header = ["setting", "images/s", "step ms", "peak GiB", "TFLOP/step", "TFLOP/s", "% of bf16 peak", "FT overhead %",
              "statistics overhead %", "torchvision DataLoader images/s", "speed-up vs anchor"]
    rows = []
    for name, t in settings.items():
        if "skipped" in t:
            rows.append(_skipped(name, t["skipped"], len(header)))
            continue
        anchor = t.get("anchor", {})
        faulty = bool(anchor) and "PIL blur" not in anchor.get("pipeline", "")  # an anchor measured before its mends
        rows.append([name, fmt(t["images_per_s"], 4), fmt(t["step_ms"], 4), fmt(t["peak_memory_gib"]),
                     fmt(t["step_tflop"]), fmt(t["achieved_tflops"]), _percent(t.get("fraction_of_bf16_peak")),
                     _percent(t["ft_overhead"]), _percent(t["stats_overhead"]), fmt(anchor.get("images_per_s"), 4),
                     "not comparable (faulty anchor)" if faulty else fmt(t.get("speedup_vs_anchor"))])
    return (header, rows) if rows else None


def scale_table(parts: dict[str, dict]) -> Table | None:
    """Per arm of the scale pair: linear and kNN readouts, the random-init readout, the first step with
    Mean(neg) > 0.9 and the largest Mean(neg) (raw cosines), and the training seconds."""
    scale = parts.get("scale", {})
    header = ["arm", "linear top-1 %", "kNN top-1 %", "random init linear %", "first step Mean(neg) > 0.9",
              "max Mean(neg)", "train s"]
    rows = []
    for arm, a in scale.get("arms", {}).items():
        if "skipped" in a:
            rows.append(_skipped(arm, a["skipped"], len(header)))
            continue
        rand = a["random_init_linear_top1"] if a.get("random_init_linear_top1") is not None else scale.get(
            "random_init_linear_top1")
        rows.append([arm, fmt(a["linear_top1"], 4), fmt(a["knn_top1"], 4), fmt(rand, 4),
                     fmt(a["first_step_neg_mean_above_0.9"]), fmt(a["max_neg_mean"]), fmt(a["train_s"], 4)])
    return (header, rows) if rows else None


def kernels_table(parts: dict[str, dict]) -> Table | None:
    """Split batch-norm: the layer alone per kernel and dtype (ms forward + backward, the top GPU kernels), then the
    MoCo v2 step per kernel (ms, images/s) and the view kernel's speed-up."""
    k = parts.get("kernels", {})
    header = ["what", "kernel", "ms", "images/s", "top kernels (calls a step)"]
    rows = [[f"layer {k.get('layer_shape')}, {k.get('groups')} groups", name, fmt(v["ms"], 3), "",
             "; ".join(v["kernels"][:4])] for name, v in k.get("layer", {}).items()]
    for name, st in k.get("step", {}).items():
        if "skipped" in st:
            rows.append(_skipped(f"step {name}", st["skipped"], len(header)))
            continue
        for kernel in ("per_group", "view"):
            rows.append([f"step {name}", kernel, fmt(st[kernel]["step_ms"], 4), fmt(st[kernel]["images_per_s"], 4),
                         f"view speed-up {fmt(st['view_speedup'], 3)}" if kernel == "view" else ""])
    return (header, rows) if rows else None


def captured_table(parts: dict[str, dict]) -> Table | None:
    """The small network per execution (eager, compiled, captured): step ms, images/s, a 30-epoch run's seconds,
    FT's overhead, the losses' agreement with eager, or why it was refused."""
    c = parts.get("captured", {})
    header = ["execution", "step ms", "images/s", "30-epoch run s", "FT overhead %", "loss rel. diff vs eager", "pass"]
    rows = []
    for name, e in c.get("executions", {}).items():
        why = next((k for k in ("refused", "skipped", "error") if k in e), None)
        if why:
            rows.append([name, f"{why}: {e[why]}"] + [""] * (len(header) - 2))
            continue
        rows.append([name, fmt(e["step_ms"], 3), fmt(e["images_per_s"], 4), fmt(e["run_30_epochs_s"], 3),
                     _percent(e["ft_overhead"]), f"first {fmt(e['first_loss_rel_vs_eager'])}, worst "
                     f"{fmt(e['loss_rel_vs_eager'])}", fmt(e["pass"])])
    return (header, rows) if rows else None


def loader_table(parts: dict[str, dict]) -> Table | None:
    """The per-sample anchor: ms per view of each transform, one process's rate, the DataLoader's rate and busy
    cores per worker count."""
    lo = parts.get("loader", {})
    if "per_transform_ms_per_view" not in lo:
        return None
    header = ["what", "value"]
    rows = [[f"{name} (ms a view)", fmt(ms, 3)] for name, ms in lo["per_transform_ms_per_view"].items()]
    rows.append(["one process (images/s, two views each)", fmt(lo["one_process_images_per_s"], 3)])
    if "torchvision_blur_ms_per_view" in lo:
        rows.append(["torchvision's GaussianBlur instead (ms a view; one process images/s)",
                     f"{fmt(lo['torchvision_blur_ms_per_view'], 3)}; "
                     f"{fmt(lo['one_process_images_per_s_torchvision_blur'], 3)}"])
    for d in lo.get("dataloader", []):
        if "skipped" in d:
            rows.append([f"DataLoader, {d['workers']} workers", f"skipped: {d['skipped']}"])
            continue
        rows.append([f"DataLoader, {d['workers']} workers (images/s; busy cores; images/s a busy core)",
                     f"{fmt(d['images_per_s'], 4)}; {fmt(d['busy_cores'], 3)}; {fmt(d['images_per_s_per_busy_core'], 3)}"])
    return header, rows


def imagenet_table(parts: dict[str, dict]) -> Table | None:
    """The ImageNet-100-shaped run: the tree made, the cache build, training and the readout."""
    im = parts.get("imagenet", {})
    if "cache" not in im:
        return None
    header = ["stage", "value"]
    ft, c = im["fabricate_train"], im["cache"]
    rows = [["fabricated training tree", f"{ft['images']} JPEGs, {fmt(ft['mean_kib'], 3)} KiB each"],
            ["cache build (images/s; busy cores; GB)", f"{fmt(c['images_per_s'], 4)}; {fmt(c['busy_cores'], 3)}; "
                                                      f"{fmt(c['bytes'] / 1e9, 3)} at {c['image_size']} px"]]
    if "train" in im:
        rows += [["training, one epoch (images/s; s)", f"{fmt(im['train']['images_per_s'], 4)}; "
                                                      f"{fmt(im['train']['seconds'], 3)}"],
                 [f"readout ({im['readout']['linear_epochs']} linear epochs, kNN; s)", fmt(im["readout"]["seconds"], 3)],
                 ["the command", f"`python {im['command']}`"]]
    return header, rows


def tables(parts: dict[str, dict]) -> dict[str, Table]:
    """The result tables of ``parts`` (``{part: result}``) that have rows: ``agreement``, ``throughput``,
    ``kernels``, ``captured``, ``loader``, ``imagenet``, ``scale``."""
    found = {"agreement": agreement_table(parts), "throughput": throughput_table(parts),
             "kernels": kernels_table(parts), "captured": captured_table(parts), "loader": loader_table(parts),
             "imagenet": imagenet_table(parts), "scale": scale_table(parts)}
    return {name: table for name, table in found.items() if table is not None}


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub-flavoured Markdown table, one line a row."""
    return [f"| {' | '.join(header)} |", "|" + "---|" * len(header)] + [f"| {' | '.join(row)} |" for row in rows]


def report_markdown(report: dict) -> str:
    """The Markdown report (``gpucheck.md``) of a check's JSON: the status of every part, the environment, then
    :func:`tables`."""
    parts = report.get("parts", {})
    env = parts.get("environment", {}).get("info", {})
    title = env.get("gpu") or f"no GPU ({env.get('cpu', 'cpu')})"
    lines = [f"# GPU check: {title}", "",
             f"Started {report.get('started')}, {'dry run, ' if report.get('dry_run') else ''}budget "
             f"{report.get('budget_s')} s, used {fmt(report.get('used_s'), 4)} s. Command: `{report.get('command')}`.", ""]
    status = []
    for name in PARTS:
        p = parts.get(name, {"status": "not run"})
        status.append([name, f"{p.get('status')}{': ' + p['why'] if p.get('why') else ''}"])
    lines += ["## Status", "", *markdown_table(["part", "status"], status)]
    if env:
        lines += ["", "## 1. Environment", "", *markdown_table(["item", "value"], [[k, fmt(v, 4)] for k, v in env.items()])]
    found = tables(parts)
    if "agreement" in found:
        lines += ["", "## 2. The GPU path agrees with the CPU", "", *markdown_table(*found["agreement"])]
    if "throughput" in found:
        lines += ["", "## 3. Throughput (MoCo v2, bf16 + channels_last, synthetic images in memory)", "",
                  *markdown_table(*found["throughput"]),
                  "", "Step phases (ms, synchronised at every phase, so they add up to an upper bound of the step):", ""]
        for name, t in parts["throughput"]["settings"].items():
            if "phases_ms_synchronised" in t:
                lines.append(f"- {name}: " + ", ".join(f"{k} {fmt(v)}" for k, v in t["phases_ms_synchronised"].items()))
    headings = {"kernels": "## 3a. Split batch-norm on the device: per-group against one pass over a view",
                "captured": "## 3b. The CPU profile's small network: eager, compiled, captured (CUDA graphs)",
                "loader": "## 3c. Where the per-sample torchvision anchor spends its time",
                "imagenet": "## 3d. An ImageNet-100-shaped run end to end (fabricated JPEGs, the user's command)"}
    for name, heading in headings.items():
        if name in found:
            lines += ["", heading, "", *markdown_table(*found[name])]
    if "scale" in found:
        scale = parts["scale"]
        lines += ["", f"## 4. The scale question, one pair ({fmt(scale.get('epochs'))} epochs, {fmt(scale.get('steps'))} "
                  f"steps, {fmt(scale.get('classes'))} classes)", "", *markdown_table(*found["scale"])]
        if "ft_minus_baseline" in scale:
            lines += ["", f"FT minus baseline: {fmt(scale['ft_minus_baseline'], 3)} points (one seed each: a first point "
                      "beyond the CPU's scale, not a verdict)."]
    for name, p in parts.items():
        if p.get("error"):
            lines += ["", f"## Error in {name}", "", "```", p["error"], "```"]
    return "\n".join(lines) + "\n"


def write(out: Path, report: dict) -> None:
    """Write ``report`` as ``out/gpucheck.json`` and ``out/gpucheck.md`` (the folder is made if missing)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpucheck.json").write_text(json.dumps(report, indent=2, default=str))
    (out / "gpucheck.md").write_text(report_markdown(report))


def stored_reports(folder: str | os.PathLike) -> list[dict]:
    """The GPU check reports stored in ``folder`` (``results/gpu``), oldest first, each with its ``file``."""
    reports = []
    for path in sorted(Path(folder).glob("*.json")):
        r = json.loads(path.read_text())
        reports.append({**r, "file": path.name})
    return sorted(reports, key=lambda r: (r.get("started", ""), r["file"]))


def latest_parts(reports: list[dict]) -> dict[str, dict]:
    """For each part, the newest stored report's result that finished (measured, passed, failed or stopped at
    its time limit), with the report's GPU, date and file."""
    out: dict[str, dict] = {}
    for r in reports:
        gpu = r["parts"].get("environment", {}).get("info", {}).get("gpu")
        for name, p in r["parts"].items():
            if p.get("status") not in ("not run", "running", "skipped", None):
                out[name] = {**p, "gpu": gpu, "started": r.get("started"), "file": r["file"]}
    return out


# Columns the book's 784-px column cannot hold (the markdown report keeps them): CUDA kernel names.
BOOK_LEAVES_OUT = {"kernels": {"top kernels (calls a step)"}}


def book_tables(reports: list[dict]) -> dict[str, Table]:
    """The book's tables: :func:`tables` of the newest finished result of each part (:func:`latest_parts`), less
    the columns of :data:`BOOK_LEAVES_OUT`."""
    out = {}
    for part, (header, rows) in tables(latest_parts(reports)).items():
        keep = [i for i, h in enumerate(header) if h not in BOOK_LEAVES_OUT.get(part, set())]
        out[part] = ([header[i] for i in keep], [[row[i] for i in keep] for row in rows])
    return out


def book_summary(reports: list[dict]) -> str:
    """Sentences for the book, generated from the stored reports (no number typed by hand)."""
    if not reports:
        return ("No GPU result exists yet: `results/gpu/` is empty. When a GPU is available, "
                f"`PYTHONPATH=. {COMMAND} --out DIR` measures it (about seven minutes).")
    parts = latest_parts(reports)
    env = parts.get("environment", {})
    info = env.get("info", {})
    out = [f"Measured on one {info.get('gpu', 'GPU')} (torch {info.get('torch')}, CUDA {info.get('cuda_runtime')}), "
           f"{str(env.get('started', ''))[:10]}; files in `results/gpu/`."]
    checks = {**parts.get("agreement", {}).get("checks", {})}
    fp32 = [c for k, c in checks.items() if "fp32 vs cpu fp32" in k]
    if fp32:
        worst = max(c["loss_rel"] for c in fp32)
        ok = all(c["pass"] for c in fp32)
        out.append(f"One fp32 training step on the GPU {'agrees' if ok else 'does not agree'} with the CPU's: losses to "
                   f"{fmt(worst)} relative, and the GPU's gradient is as close to a float64 reference as the CPU's "
                   f"own float32 gradient ({', '.join(fmt(c['grad_gpu_vs_float64']['rel_l2']) for c in fp32)} against "
                   f"{', '.join(fmt(c['grad_cpu_vs_float64']['rel_l2']) for c in fp32)}, relative L2).")
    bf = [c for k, c in checks.items() if "bf16" in k]
    if bf:
        out.append(f"bf16 autocast with channels-last moves the loss by at most {fmt(max(c['loss_rel'] for c in bf))} "
                   "relative, within bf16 rounding.")
    comp = parts.get("compile", {})
    ex = parts.get("captured", {}).get("executions", {})
    timed = {k: e for k, e in ex.items() if "step_ms" in e}
    if {"eager", "compiled"} <= set(timed):  # the captured part measured the compiler's agreement
        tol = parts["captured"]["tolerance"]
        other = {k: e for k, e in timed.items() if k != "eager"}
        ok = all(e["pass"] for e in other.values())
        out.append(f"The CPU profile's small network steps in {fmt(timed['eager']['step_ms'], 3)} ms eager, "
                   + ", ".join(f"{fmt(e['step_ms'], 3)} ms {k}" for k, e in other.items())
                   + " (`train.compile=true`; captured: `train.cuda_graph=true`); over the first "
                   f"{tol['agreement_steps']} steps their losses "
                   + ("agree with eager's" if ok else "drift from eager's")
                   + f" (worst {fmt(max(e['loss_rel_vs_eager'] for e in other.values()))} relative, tolerance "
                   f"{fmt(tol['loss_rel'])})"
                   + ("." if ok else ": until that is understood, `train.compile=auto` keeps GPU runs eager (on the "
                                     "CPU, where it compiles long runs, `tools/compile_agreement.py` measures the "
                                     "agreement)."))
    elif comp.get("status") == "did not finish":
        out.append(f"`train.compile=true` (inductor) {comp['why']}: on this machine compiling costs more than a short "
                   "check can pay, and its agreement is still to be measured.")
    th = parts.get("throughput", {}).get("settings", {})
    old_anchor = False
    for name, t in th.items():
        if "images_per_s" in t and t.get("anchor", {}).get("images_per_s"):
            faulty = "PIL blur" not in t["anchor"].get("pipeline", "")
            old_anchor |= faulty
            ratio = "against" if faulty else f"{fmt(t['speedup_vs_anchor'])} times"  # a faulty anchor's ratio says nothing
            out.append(f"MoCo v2 {name}: {fmt(t['images_per_s'], 4)} images/s, {fmt(t['achieved_tflops'])} TFLOP/s "
                       f"({fmt(100 * (t.get('fraction_of_bf16_peak') or 0))} % of the bf16 peak), "
                       f"{ratio} the same step fed by per-sample torchvision transforms "
                       f"in a {t['anchor']['workers']}-worker DataLoader ({fmt(t['anchor']['images_per_s'], 4)} "
                       "images/s).")
    if old_anchor:
        out.append("Those anchor rates came with two faults of the anchor, since mended, so no ratio is given: "
                   "torchvision's tensor blur, 39 times the released code's PIL blur a view on a "
                   "CPU core (the pipeline 6.4 times slower a core; results/bench_anchor_blur_intel-xeon-avx512.txt), "
                   "and an epoch of only 4 batches, so that at most 4 of its workers were ever busy.")
    sc = parts.get("scale", {})
    arms = sc.get("arms", {})
    if "linear_top1" in arms.get("baseline", {}) and "linear_top1" in arms.get("ft_pos_neg", {}):
        b, f = arms["baseline"], arms["ft_pos_neg"]
        step = f["first_step_neg_mean_above_0.9"]
        out.append(f"The scale pair (ResNet-18, 64 px, {fmt(sc['epochs'])} epochs, one seed each): the MoCo v1 baseline "
                   f"reads out {fmt(b['linear_top1'], 3)} %, with FT (+pos +neg) {fmt(f['linear_top1'], 3)} %, "
                   f"against {fmt(sc.get('random_init_linear_top1'), 3)} % for the random-init encoder; "
                   + (f"Mean(neg) of FT's raw cosines passes 0.9 at step {step}." if step is not None
                      else "Mean(neg) of FT's raw cosines never passes 0.9.")
                   + (" One pair, one seed each, decides nothing by itself: it is a first point beyond the CPU's scale, "
                      "where the FT arm again ends below its baseline"
                      + (" and below the random-init encoder" if f["linear_top1"] < (sc.get("random_init_linear_top1")
                                                                                     or -1) else "")
                      + "; a verdict needs three seeds, paired."
                      if f["linear_top1"] < b["linear_top1"] else ""))
    return " ".join(out)


def ft_overhead_sentence(reports: list[dict]) -> str:
    """Why FT's share of a GPU step differs between the throughput settings (and from the CPU's): per setting, the
    step's time and what FT adds to it in milliseconds, generated from the newest stored throughput part ("" when
    none). FT's per-step draws on a CPU generator make the host wait for the device; where the part also timed FT
    drawing on the device (``ft_overhead_host_draws``, interleaved in the same run), the sentence says how much of
    FT's share that wait was, else that this reading of the code is not yet measured."""
    settings = latest_parts(reports).get("throughput", {}).get("settings", {})
    measured = {name: t for name, t in settings.items() if "ft_overhead" in t and "step_ms" in t}
    if len(measured) < 2:
        return ""
    parts = [f"{name}: {fmt(t['step_ms'] * t['ft_overhead'], 3)} ms on a {fmt(t['step_ms'], 3)} ms step "
             f"({_percent(t['ft_overhead'])} %)" for name, t in measured.items()]
    out = ("What FT adds to a GPU step: " + "; ".join(parts) + ". Drawing FT's λ and the queue's permutation with a "
           "CPU random generator and copying them to the GPU every step makes the host wait for the device instead of "
           "queuing the next step's work ahead of it; a long step (a large network at 224 px) hides that wait, a "
           "short one does not.")
    paired = {name: t for name, t in measured.items()
              if t.get("ft_draws") == "device" and "ft_overhead_host_draws" in t}
    if not paired:
        return out + " This is a reading of the code, not yet a measurement: drawing on the device would test it."
    both = "; ".join(f"{name}: {_percent(t['ft_overhead_host_draws'])} % with the draws on the host, "
                     f"{_percent(t['ft_overhead'])} % on the device" for name, t in paired.items())
    rest = any(t["ft_overhead"] > 0.05 for t in paired.values())
    return (out + f" Timed in one interleaved run, FT's share is {both} (`train.ft_draws`): the wait explains part of "
            "it" + ("; the rest is not yet explained." if rest else "."))
