"""The GPU check's report: one set of tables, rendered as the Markdown report of a check and in the book.

A check's JSON (``gpucheck.json``) holds ``parts``: ``{part: result}``.  :func:`tables` turns the results of the
agreement (with compile), throughput and scale parts into ``(header, rows)`` tables of formatted cells;
:func:`report_markdown` writes them, after the status and environment tables, as ``gpucheck.md``, and the book
shows the same tables (:func:`book_tables`) of the newest finished result of each part among the reports stored
in ``results/gpu/`` (:func:`stored_reports`, :func:`latest_parts`), and the numbers its prose quotes
(:func:`book_facts`, with the checks that bind its words, :data:`BOOK_CHECKS`).
"""

from __future__ import annotations

import json
import os
import re
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
    """The per-sample anchor: ms per view of each transform, one process's rate (with PIL's blur, and with
    torchvision's instead), the DataLoader's rate and busy cores per worker count."""
    lo = parts.get("loader", {})
    if "per_transform_ms_per_view" not in lo:
        return None
    header = ["what", "ms a view", "images/s", "busy cores", "images/s a busy core"]
    rows = [[name, fmt(ms, 3), "", "", ""] for name, ms in lo["per_transform_ms_per_view"].items()]
    rows.append(["one process", "", fmt(lo["one_process_images_per_s"], 3), "", ""])
    if "torchvision_blur_ms_per_view" in lo:
        rows.append(["torchvision's GaussianBlur instead", fmt(lo["torchvision_blur_ms_per_view"], 3),
                     fmt(lo["one_process_images_per_s_torchvision_blur"], 3), "", ""])
    for d in lo.get("dataloader", []):
        if "skipped" in d:
            rows.append(_skipped(f"DataLoader, {d['workers']} workers", d["skipped"], len(header)))
            continue
        rows.append([f"DataLoader, {d['workers']} workers", "", fmt(d["images_per_s"], 4), fmt(d["busy_cores"], 3),
                     fmt(d["images_per_s_per_busy_core"], 3)])
    return header, rows


def imagenet_table(parts: dict[str, dict]) -> Table | None:
    """The ImageNet-100-shaped run: the tree made, the cache build, training and the readout, then the command."""
    im = parts.get("imagenet", {})
    if "cache" not in im:
        return None
    header = ["stage", "images/s", "busy cores", "size", "s"]
    ft, c = im["fabricate_train"], im["cache"]
    rows = [["fabricated training tree", "", "", f"{ft['images']} JPEGs of {fmt(ft['mean_kib'], 3)} KiB", ""],
            ["cache build", fmt(c["images_per_s"], 4), fmt(c["busy_cores"], 3),
             f"{fmt(c['bytes'] / 1e9, 3)} GB at {c['image_size']} px", ""]]
    if "train" in im:
        rows += [["training, one epoch", fmt(im["train"]["images_per_s"], 4), "", "", fmt(im["train"]["seconds"], 3)],
                 [f"readout: {im['readout']['linear_epochs']} linear epochs, kNN", "", "", "",
                  fmt(im["readout"]["seconds"], 3)],
                 ["the command", "", "", f"`python {im['command']}`", ""]]
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


TEMPLATE = Path(__file__).with_name("report.md")  # the report's words, written by people; the values glued in


def fill(template: str, values: dict[str, str]) -> str:
    """``template`` (Markdown in sections under ``## `` headings, paragraphs between blank lines) with ``{name}``
    replaced by ``values[name]``: a paragraph naming a value that is missing (absent or None) is left out, and so is
    a section left with nothing under its heading (or whose heading names such a value)."""
    def filled(paragraph: str) -> str | None:
        names = re.findall(r"\{(\w+)\}", paragraph)
        return None if any(values.get(n) is None for n in names) else paragraph.format_map(values)

    out = []
    for section in re.split(r"\n(?=## )", template.strip()):
        heading, *body = [p.strip() for p in section.strip().split("\n\n")]
        kept = [p for p in map(filled, body) if p is not None]
        if (title := filled(heading)) is not None and (kept or not body):
            out.append("\n\n".join([title, *kept]))
    return "\n\n".join(out) + "\n"


def report_markdown(report: dict) -> str:
    """The Markdown report (``gpucheck.md``) of a check's JSON: :data:`TEMPLATE` filled with the status of every
    part, the environment, then :func:`tables`, each as a Markdown table."""
    parts = report.get("parts", {})
    env = parts.get("environment", {}).get("info", {})
    status = [[name, f"{p.get('status')}{': ' + p['why'] if p.get('why') else ''}"]
              for name, p in ((n, parts.get(n, {"status": "not run"})) for n in PARTS)]
    values = {"title": str(env.get("gpu") or f"no GPU ({env.get('cpu', 'cpu')})"), "started": str(report.get("started")),
              "dry_run": "dry run, " if report.get("dry_run") else "", "budget_s": str(report.get("budget_s")),
              "used_s": fmt(report.get("used_s"), 4), "command": str(report.get("command")),
              "status": "\n".join(markdown_table(["part", "status"], status)),
              "environment": "\n".join(markdown_table(["item", "value"], [[k, fmt(v, 4)] for k, v in env.items()]))
              if env else None}
    values |= {name: "\n".join(markdown_table(*table)) for name, table in tables(parts).items()}
    settings = parts.get("throughput", {}).get("settings", {}) if "throughput" in values else {}
    values["phases"] = "\n".join(f"- {name}: " + ", ".join(f"{k} {fmt(v)}" for k, v in t["phases_ms_synchronised"].items())
                                 for name, t in settings.items() if "phases_ms_synchronised" in t) or None
    scale = parts.get("scale", {}) if "scale" in values else {}
    values |= {f"scale_{k}": fmt(scale.get(k)) for k in ("epochs", "steps", "classes") if scale}
    values["ft_minus_baseline"] = fmt(scale["ft_minus_baseline"], 3) if "ft_minus_baseline" in scale else None
    values["errors"] = "\n\n".join(f"### {name}\n\n```\n{p['error']}\n```" for name, p in parts.items()
                                    if p.get("error")) or None
    return fill(TEMPLATE.read_text(encoding="utf-8"), values)


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


def book_facts(reports: list[dict]) -> dict:
    """The numbers the book's GPU section quotes, from the newest finished result of each part
    (:func:`latest_parts`): formatted strings for its glued prose, and under ``values`` what its checks
    (:data:`BOOK_CHECKS`) read.  The words are the chapter's (``book/src/gpus.py``), never built here."""
    if not reports:
        raise ValueError(f"results/gpu/ holds no GPU report: on a GPU machine, `PYTHONPATH=. {COMMAND} --out DIR` "
                         "measures one (about seven minutes); copy its gpucheck.json into results/gpu/.")
    parts = latest_parts(reports)
    env = parts.get("environment", {})
    info = env.get("info", {})
    f: dict = {"gpu": str(info.get("gpu", "GPU")), "torch": str(info.get("torch")), "cuda": str(info.get("cuda_runtime")),
               "date": str(env.get("started", ""))[:10]}
    v: dict = {}
    checks = parts.get("agreement", {}).get("checks", {})
    fp32 = [c for k, c in checks.items() if "fp32 vs cpu fp32" in k]
    bf = [c for k, c in checks.items() if "bf16" in k]
    f |= {"fp32_loss_rel": fmt(max(c["loss_rel"] for c in fp32)),  # one fp32 step, GPU against CPU
          "fp32_grad_gpu": ", ".join(fmt(c["grad_gpu_vs_float64"]["rel_l2"]) for c in fp32),
          "fp32_grad_cpu": ", ".join(fmt(c["grad_cpu_vs_float64"]["rel_l2"]) for c in fp32),
          "bf16_loss_rel": fmt(max(c["loss_rel"] for c in bf))}
    v |= {"fp32_pass": all(c["pass"] for c in fp32), "bf16_loss_rel": max(c["loss_rel"] for c in bf)}
    captured = parts.get("captured", {})
    timed = {k: e for k, e in captured.get("executions", {}).items() if "step_ms" in e}
    other = {k: e for k, e in timed.items() if k != "eager"}
    f |= {f"{k}_ms": fmt(e["step_ms"], 3) for k, e in timed.items()}
    f |= {"agreement_steps": str(captured["tolerance"]["agreement_steps"]),
          "compile_worst": fmt(max(e["loss_rel_vs_eager"] for e in other.values())),
          "compile_tolerance": fmt(captured["tolerance"]["loss_rel"])}
    v |= {"compiled_pass": all(e["pass"] for e in other.values())}
    for name, t in parts.get("throughput", {}).get("settings", {}).items():
        a = t.get("anchor", {})
        f |= {f"{name}_images_per_s": fmt(t["images_per_s"], 4), f"{name}_tflops": fmt(t["achieved_tflops"]),
              f"{name}_peak_percent": _percent(t.get("fraction_of_bf16_peak")),
              f"{name}_vs_anchor": fmt(t["speedup_vs_anchor"]), f"{name}_anchor_workers": str(a.get("workers")),
              f"{name}_anchor_images_per_s": fmt(a.get("images_per_s"), 4),
              f"{name}_step_ms": fmt(t["step_ms"], 3), f"{name}_ft_ms": fmt(t["step_ms"] * t["ft_overhead"], 3),
              f"{name}_ft_percent": _percent(t["ft_overhead"]),
              f"{name}_ft_host_percent": _percent(t.get("ft_overhead_host_draws"))}
        v |= {f"{name}_speedup": t["speedup_vs_anchor"], f"{name}_pil_anchor": "PIL blur" in a.get("pipeline", ""),
              f"{name}_ft": t["ft_overhead"], f"{name}_ft_host": t.get("ft_overhead_host_draws"),
              f"{name}_draws": t.get("ft_draws")}
    scale = parts.get("scale", {})
    arms = scale.get("arms", {})
    base, ft = arms.get("baseline", {}), arms.get("ft_pos_neg", {})
    f |= {"scale_epochs": fmt(scale["epochs"]), "scale_baseline": fmt(base["linear_top1"], 3),
          "scale_ft": fmt(ft["linear_top1"], 3), "scale_random": fmt(scale["random_init_linear_top1"], 3),
          "scale_neg_step": str(ft["first_step_neg_mean_above_0.9"])}
    v |= {"scale_baseline": base["linear_top1"], "scale_ft": ft["linear_top1"],
          "scale_random": scale["random_init_linear_top1"], "scale_neg_step": ft["first_step_neg_mean_above_0.9"]}
    return {**f, "values": v}


def _host_wait_explains_part(f: dict) -> str | None:
    v = f["values"]
    short = [n for n in ("resnet18_64px",) if v.get(f"{n}_draws") == "device" and v.get(f"{n}_ft_host") is not None]
    if not short:
        return "no setting timed FT with its draws on the host and on the device in one run"
    n = short[0]
    return None if 0.05 < v[f"{n}_ft"] < v[f"{n}_ft_host"] else (
        f"{n}: FT's share {v[f'{n}_ft']:.3f} on the device against {v[f'{n}_ft_host']:.3f} on the host")


BOOK_CHECKS = {  # the GPU section's words (book/src/gpus.py), each bound to the stored reports
    "one fp32 step on the GPU agrees with the CPU's": lambda f: None if f["values"]["fp32_pass"] else "fp32 disagrees",
    "bf16 moves the loss within its rounding": lambda f: None if f["values"]["bf16_loss_rel"] < 0.01 else (
        f"bf16 moves the loss by {f['bf16_loss_rel']} relative"),
    "the compiled and captured steps drift from eager's": lambda f: None if not f["values"]["compiled_pass"] else (
        "they now agree with eager's: train.compile=auto may compile on a GPU"),
    "the anchors blur with PIL, as the released code does": lambda f: None if all(
        v for k, v in f["values"].items() if k.endswith("_pil_anchor")) else "an anchor blurred with torchvision",
    "the large network outruns its anchor and the small one does not": lambda f: None if (
        f["values"]["resnet50_224px_speedup"] > 1 > f["values"]["resnet18_64px_speedup"]) else "the speed-ups moved",
    "the scale pair's FT ends below its baseline and the random-init encoder": lambda f: None if (
        f["values"]["scale_ft"] < min(f["values"]["scale_baseline"], f["values"]["scale_random"])) else (
        "FT no longer ends below both"),
    "FT adds nothing measurable to the long step": lambda f: None if abs(f["values"]["resnet50_224px_ft"]) < 0.02 else (
        f"FT adds {f['resnet50_224px_ft_percent']} % to the long step"),
    "FT's share of a step is larger on the short step": lambda f: None if (
        f["values"]["resnet18_64px_ft"] > f["values"]["resnet50_224px_ft"]) else "FT's share is not larger there",
    "drawing on the device explains part of FT's share on the short step, not all": _host_wait_explains_part,
}
