"""Benchmarks (not timed tests), run from the repository's root: ``python -m benchmarks.bench overhead|lightly|breakdown|paths``.

``breakdown --config C [key=value ...] [--synthetic N]`` prints images/s and where a step's time goes
(data, augment, forward, ft_loss, backward, statistics, optimizer) for any method and any GPU setting
(``device=cuda train.amp=bf16 train.channels_last=true train.compile=true``); it is
:func:`benchmarks.profiling.breakdown`, which the GPU check and the book use too.

``paths`` times the model step on the NCHW path (``train.channels_last=false``) and on the default CPU path
(channels-last, split batch-norm in blocks), interleaved, and prints the speed-up.

``overhead`` measures, at the default CPU config (configs/cpu_moco_v2.yaml), the time of a full MoCo
training step (augmentation, forward, backward, SGD, enqueue) in three variants, interleaved round by
round so that drift of the machine hits all three alike:

* ``plain``: no FT, no statistics;
* ``ft``: positive extrapolation + negative interpolation (one lambda per step), no statistics;
* ``stats``: no FT, with the Supp A score statistics and the Supp C layer gradient norms.

It prints the median step times and ``ft_overhead`` and ``stats_overhead`` as fractions of the plain step.

``lightly`` runs ftcl's MoCo v2 and lightly's MoCo (``pip install lightly``; installed only for this) on the
same encoder, batch, queue, augmentation parameters and data, each end to end in its own subprocess (so
that peak memory is measured per library), then the model step alone on views already in memory, and
prints epoch throughput, ratios, the encoder's achieved GFLOP/s against this machine's sgemm, and where
ftcl's step time goes.  Its last line reads
``end_to_end_ratio=X step_ratio=Y ft_overhead=Z stats_overhead=W``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from benchmarks import timing
from benchmarks.profiling import breakdown
from ftcl_core.augment import augment
from ftcl_core.checkpoints import METRIC_COLUMNS
from ftcl_core.config import FTConfig, RunConfig, load_config
from ftcl_core.data import load_data
from ftcl_core.execution import channels_last, memory_format, prepare_model
from ftcl_core.methods import StepContext
from ftcl_core.stats import StepRecorder
from ftcl_core.training import augment_config, make_views, train_step
from ftcl_core.transforms import DeviceDraws


def statistics_cost(config: str = "configs/cpu_moco_v2.yaml", steps: int = 30, reps: int = 200) -> dict:
    """What the recorder costs a step, measured inside one run rather than as a difference of two noisy step times:
    the share of the step spent in its ``statistics`` phase (Supp A scores raw and after FT, the representation
    statistics, Supp C layer gradient norms; :func:`benchmarks.profiling.breakdown`), and the median time of the
    representation statistics alone (alignment, uniformity, rho, effective rank) on a batch of the config's shape."""
    from ftcl_core.stats import representation_statistics

    cfg = load_config(config)
    r = breakdown(config, steps=steps)
    gen = torch.Generator().manual_seed(0)
    z1, z2 = (torch.randn(cfg.train.batch_size, cfg.model.dim, generator=gen) for _ in range(2))
    rep_ms = 1e3 * statistics.median([timing.timed(lambda: representation_statistics(z1, z2), 1) for _ in range(reps)])
    stats_ms = r["phases_ms"]["statistics"]
    return {"step_ms": r["step_ms"], "statistics_ms": stats_ms, "statistics_share": stats_ms / r["step_ms"],
            "representation_ms": rep_ms, "representation_share": rep_ms / r["step_ms"], "cpu": r["cpu"]}


def overhead(config: str = "configs/cpu_moco_v2.yaml", rounds: int = 15, steps: int = 10, warmup: int = 5) -> dict:
    """Median seconds of a full MoCo step (augmentation, forward, backward, SGD, enqueue) plain, with FT and with
    the statistics (recorded and flushed to the host once per ``steps`` steps, as training flushes them),
    interleaved (:func:`benchmarks.timing.interleaved`); the overheads are fractions of the plain step."""
    cfg = load_config(config)
    train_set, _ = load_data(cfg)
    aug = augment_config(cfg)
    bs, nhwc = cfg.train.batch_size, channels_last(cfg)
    variants = {
        "plain": (FTConfig(), False),
        "ft": (FTConfig(pos=True, neg=True), False),
        "stats": (FTConfig(), True),
        "ft_device_draws": (FTConfig(pos=True, neg=True), False, True),  # train.ft_draws=device on the CPU
    }
    x = train_set.images[:bs]

    def step_of(ft: FTConfig, record_stats: bool, device_draws: bool = False):
        model = prepare_model(cfg, "cpu")[0]
        opt = torch.optim.SGD(model.encoder_q.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
        gen, recorder = torch.Generator().manual_seed(0), StepRecorder(METRIC_COLUMNS[2:], steps)
        draws = DeviceDraws.seeded(0, "cpu") if device_draws else None

        def step() -> None:
            out = train_step(model, opt, make_views(x, aug, gen, nhwc),
                             StepContext(gen, ft, record_stats=record_stats, device_draws=draws))
            if record_stats:
                recorder.record(0, torch.cat([out.values, out.grad_norms]))
        return step

    times = timing.interleaved({name: step_of(*v) for name, v in variants.items()}, rounds, steps, warmup)
    med = timing.medians(times)
    return {
        "plain_step_s": med["plain"], "ft_step_s": med["ft"], "stats_step_s": med["stats"],
        "ft_overhead": med["ft"] / med["plain"] - 1, "stats_overhead": med["stats"] / med["plain"] - 1,
        "ft_device_draws_overhead": med["ft_device_draws"] / med["plain"] - 1,
        "spread_plain_s": (min(times["plain"]), max(times["plain"])), "batch_size": bs,
        "threads": torch.get_num_threads(),
    }


def _lightly_model(cfg: RunConfig):
    """lightly's MoCo v2 (its documented recipe) around the same backbone ftcl uses."""
    import copy

    import torch.nn as nn
    from lightly.models.modules import MoCoProjectionHead
    from lightly.models.utils import deactivate_requires_grad

    from ftcl_core.models import build_encoder

    class LightlyMoCo(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(cfg.seed)
            self.backbone = build_encoder(cfg.model.encoder, bn_splits=cfg.model.bn_splits)
            d = self.backbone.out_dim
            self.projection_head = MoCoProjectionHead(d, d, cfg.model.dim)
            self.backbone_momentum = copy.deepcopy(self.backbone)
            self.projection_head_momentum = copy.deepcopy(self.projection_head)
            deactivate_requires_grad(self.backbone_momentum)
            deactivate_requires_grad(self.projection_head_momentum)

        def forward(self, x):
            return self.projection_head(self.backbone(x))

        def forward_momentum(self, x):
            return self.projection_head_momentum(self.backbone_momentum(x)).detach()

    return LightlyMoCo()


def _lightly_setup(cfg: RunConfig):
    """lightly's model, NTXentLoss with a memory bank of K keys, and SGD over the trained parameters."""
    from lightly.loss import NTXentLoss

    model = _lightly_model(cfg)
    criterion = NTXentLoss(temperature=cfg.moco.tau, memory_bank_size=(cfg.moco.queue_size, cfg.model.dim))
    opt = torch.optim.SGD(list(model.backbone.parameters()) + list(model.projection_head.parameters()), lr=0.06,
                          momentum=0.9, weight_decay=5e-4)
    return model, criterion, opt


def _lightly_step(model, criterion, opt, x_q, x_k, m: float) -> torch.Tensor:
    from lightly.models.utils import update_momentum

    update_momentum(model.backbone, model.backbone_momentum, m=m)
    update_momentum(model.projection_head, model.projection_head_momentum, m=m)
    loss = criterion(model(x_q), model.forward_momentum(x_k))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()


def _worker(which: str, config: str, epochs: int, workers: int) -> dict:
    """One library end to end for ``epochs`` epochs; returns img/s per epoch and peak RSS (MiB)."""
    import resource

    cfg = load_config(config)
    train_set, _ = load_data(cfg)
    bs, n = cfg.train.batch_size, len(train_set)
    steps = n // bs
    rates = []
    if which == "ftcl":
        aug = augment_config(cfg)
        model = prepare_model(cfg, "cpu")[0]
        opt = torch.optim.SGD(model.encoder_q.parameters(), lr=0.06, momentum=0.9, weight_decay=5e-4)
        gen = torch.Generator().manual_seed(0)
        recorder = StepRecorder(METRIC_COLUMNS[2:], 50)
        for _ in range(epochs):
            t0 = time.perf_counter()
            order = torch.randperm(n, generator=gen)
            for i in range(steps):
                views = make_views(train_set.images[order[i * bs : (i + 1) * bs]], aug, gen, channels_last(cfg))
                out = train_step(model, opt, views, StepContext(gen))
                recorder.record(i, torch.cat([out.values, out.grad_norms]))
            recorder.flush()
            rates.append(steps * bs / (time.perf_counter() - t0))
    else:
        from lightly.transforms import MoCoV2Transform
        from PIL import Image

        a = cfg.augment
        transform = MoCoV2Transform(input_size=a.out_size, min_scale=a.crop_scale[0])

        class Views(torch.utils.data.Dataset):
            def __len__(self):
                return n

            def __getitem__(self, i):
                return transform(Image.fromarray(train_set.images[i].permute(1, 2, 0).numpy()))

        loader = torch.utils.data.DataLoader(Views(), batch_size=bs, shuffle=True, drop_last=True, num_workers=workers,
                                             persistent_workers=workers > 0)
        model, criterion, opt = _lightly_setup(cfg)
        for _ in range(epochs):
            t0 = time.perf_counter()
            for x_q, x_k in loader:
                _lightly_step(model, criterion, opt, x_q, x_k, cfg.moco.momentum)
            rates.append(steps * bs / (time.perf_counter() - t0))
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return {"rates": rates, "peak_rss_mib": peak / 1024, "workers": workers}


def _step_only(config: str, rounds: int = 9, steps: int = 8, compiled: bool = True) -> dict:
    """Both libraries' model step on the same pre-augmented views, interleaved; median ms per step.  With
    ``compiled``, ftcl's step under ``train.compile=true`` too (the steady state, after its compile)."""
    cfg = load_config(config)
    train_set, _ = load_data(cfg)
    aug = augment_config(cfg)
    bs = cfg.train.batch_size
    gen = torch.Generator().manual_seed(0)
    x = train_set.images[:bs]
    views = (augment(x, aug, gen), augment(x, aug, gen))
    ours = prepare_model(cfg, "cpu")[0]
    opt_o = torch.optim.SGD(ours.encoder_q.parameters(), lr=0.06, momentum=0.9, weight_decay=5e-4)
    theirs, crit, opt_t = _lightly_setup(cfg)
    runs = {
        "ftcl": lambda: train_step(ours, opt_o, memory_format(views, channels_last(cfg)),
                                   StepContext(gen, record_stats=False)),
        "lightly": lambda: _lightly_step(theirs, crit, opt_t, *views, cfg.moco.momentum),
    }
    if compiled:  # ftcl's networks under torch.compile (inductor), compiled during the warm-up
        comp, net = prepare_model(cfg.updated({"train.compile": True}), "cpu")
        opt_c = torch.optim.SGD(comp.encoder_q.parameters(), lr=0.06, momentum=0.9, weight_decay=5e-4)
        runs["ftcl compiled"] = lambda: train_step(comp, opt_c, memory_format(views, channels_last(cfg)),
                                                   StepContext(gen, record_stats=False, wrapped=net))
    times = timing.interleaved(runs, rounds, steps)
    return timing.medians(times) | {"spread": timing.spreads(times)}


def paths(config: str = "configs/cpu_moco_v2.yaml", rounds: int = 10, steps: int = 5) -> dict:
    """The model step (MoCo step on the same views in memory, no statistics) on the NCHW path
    (``train.channels_last=false``), on the default path, and on the default path with split batch-norm over a
    view of the batch (``train.split_bn=view``, what CUDA, autocast and the compiler run), interleaved round by
    round; median ms per step.  ``speedup``: the NCHW path's step over the default's; ``view_ratio``: the view
    kernel's step over the default's (above 1: the default is faster here)."""
    from ftcl_core.execution import execution_path
    from ftcl_core.runs import cpu_model

    runs, names = {}, {}
    for value in ("train.channels_last=false", "train.channels_last=auto", "train.split_bn=view"):
        cfg = load_config(config, [value])
        train_set, _ = load_data(cfg)
        model = prepare_model(cfg, "cpu")[0]
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.06, momentum=0.9, weight_decay=5e-4)
        gen = torch.Generator().manual_seed(0)
        x = train_set.images[: cfg.train.batch_size]
        aug = augment_config(cfg)
        views = (augment(x, aug, gen), augment(x, aug, gen))
        path = execution_path(cfg)
        name = "/".join(str(path[k]) for k in ("memory_format", "split_bn_layout", "split_bn_kernel") if path[k])
        names[value] = name
        cl = channels_last(cfg)
        runs[name] = (lambda m=model, o=opt, g=gen, v=views, c=cl:
                      train_step(m, o, memory_format(v, c), StepContext(g, record_stats=False)))
    med = timing.medians(timing.interleaved(runs, rounds, steps))
    old, new, view = (names[k] for k in ("train.channels_last=false", "train.channels_last=auto", "train.split_bn=view"))
    return {"cpu": cpu_model(), "threads": torch.get_num_threads(), "median_s": med,
            "speedup": med[old] / med[new], "view_ratio": med[view] / med[new], "old": old, "new": new, "view": view}


def _flops_and_profile(config: str, steps: int = 10) -> dict:
    """FLOPs of one training step (forward + backward of both encoders), sgemm GFLOP/s, and ftcl's step
    time split into phases (:func:`breakdown`)."""
    from torch.utils.flop_counter import FlopCounterMode

    from ftcl_core import augment as augment_module

    cfg = load_config(config)
    train_set, _ = load_data(cfg)
    aug = augment_config(cfg)
    bs = cfg.train.batch_size
    model = prepare_model(cfg, "cpu")[0]
    opt = torch.optim.SGD(model.encoder_q.parameters(), lr=0.06, momentum=0.9)
    gen = torch.Generator().manual_seed(0)
    x = train_set.images[:bs]
    views = (augment_module.augment(x, aug, gen), augment_module.augment(x, aug, gen))
    with FlopCounterMode(display=False) as counter:
        train_step(model, opt, memory_format(views, channels_last(cfg)), StepContext(gen, record_stats=False))
    flops = counter.get_total_flops()
    a = torch.randn(2048, 2048)
    b = torch.randn(2048, 2048)
    sgemm = 2 * 2048**3 / timing.timed(lambda: torch.mm(a, b), 10, warmup=1) / 1e9
    r = breakdown(config, steps=steps)
    phases, step_s = r["phases_ms"], r["step_ms"] / 1e3
    model_s = step_s - (phases["data"] + phases["augment"]) / 1e3
    return {"step_gflop": flops / 1e9, "achieved_gflops": flops / 1e9 / model_s, "sgemm_gflops": sgemm,
            "profile": {k: v / r["step_ms"] for k, v in phases.items()}, "step_s": step_s}


def _compile_child(config: str, rounds: int, backend: bool | str = True) -> dict:
    """In a fresh process: seconds of the first compiled step (the compile), then the eager and the compiled
    model step on the same views, interleaved (median seconds).  ``backend``: ``train.compile``'s value (the
    tests pass ``"eager"``, which compiles nothing)."""
    cfg = load_config(config)
    train_set, _ = load_data(cfg)
    aug, bs = augment_config(cfg), cfg.train.batch_size
    gen = torch.Generator().manual_seed(0)
    x = train_set.images[:bs]
    views = memory_format((augment(x, aug, gen), augment(x, aug, gen)), channels_last(cfg))
    runs = {}
    for name, value in (("eager", False), ("compiled", backend)):
        model, net = prepare_model(cfg.updated({"train.compile": value}), "cpu")
        opt = torch.optim.SGD(model.encoder_q.parameters(), lr=0.06, momentum=0.9, weight_decay=5e-4)
        runs[name] = (lambda m=model, o=opt, n=net: train_step(m, o, views, StepContext(gen, record_stats=False, wrapped=n)))
    first = timing.timed(runs["compiled"], 1)  # the compile
    med = timing.medians(timing.interleaved(runs, rounds, 4))
    return {"first_step_s": first, "eager_s": med["eager"], "compiled_s": med["compiled"]}


def compile_cost(config: str = "configs/cpu_moco_v2.yaml", rounds: int = 8) -> dict:
    """What ``train.compile=true`` costs and saves on this machine: two child processes share one new, empty
    inductor cache (``TORCHINDUCTOR_CACHE_DIR``), so the first compiles cold and the second warm; each then
    times the eager against the compiled step.  ``break_even_steps``: the steps after which a cold (warm)
    compile has paid for itself (:data:`ftcl_core.execution.COMPILE_AUTO_MIN_STEPS` comes from here)."""
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        args = ["_compile_child", "--config", config, "--rounds", str(rounds)]
        runs = [timing.child("benchmarks.bench", args, env={"TORCHINDUCTOR_CACHE_DIR": cache}) for _ in ("cold", "warm")]
    eager = statistics.median([r["eager_s"] for r in runs])
    comp = statistics.median([r["compiled_s"] for r in runs])
    saved = eager - comp
    return {"cold_s": runs[0]["first_step_s"], "warm_s": runs[1]["first_step_s"], "eager_s": eager, "compiled_s": comp,
            "speedup": eager / comp, "runs": runs,
            "break_even_steps": {k: (runs[i]["first_step_s"] / saved if saved > 0 else float("inf"))
                                 for i, k in enumerate(("cold", "warm"))}}


def lightly(config: str = "configs/cpu_moco_v2.yaml", epochs: int = 3, workers: tuple[int, ...] = (0, 2)) -> dict:
    try:
        import lightly as _  # noqa: F401
    except ImportError as err:
        raise SystemExit("lightly is not installed: run `.venv/bin/pip install lightly` (only this benchmark uses it)") from err

    def sub(which, w):
        args = ["_worker", which, "--config", config, "--epochs", str(epochs), "--workers", str(w)]
        return timing.child("benchmarks.bench", args)

    ours = sub("ftcl", 0)
    theirs = {w: sub("lightly", w) for w in workers}
    best_w = max(theirs, key=lambda w: statistics.median(theirs[w]["rates"]))
    over = overhead(config, rounds=9)
    return {"ftcl": ours, "lightly": theirs, "lightly_best_workers": best_w, "step": _step_only(config),
            "flops": _flops_and_profile(config), "overhead": over}


# The argument checks a MoCo step with FT runs, by the module that holds each name: made no-ops to time the step
# without them (:func:`check_cost`).
STEP_CHECKS = {"ftcl_core.transforms": ("_check_mix", "_check_permutation", "_check_draws", "_check_beta"),
               "ftcl_core.losses": ("check_dense", "check_global_rows", "check_scores", "check_moco_inputs")}


def check_cost(config: str = "configs/cpu_moco_v2.yaml", rounds: int = 7, number: int = 20) -> dict:
    """The time the library's argument checks add to a step's FT scores and loss (``moco_ft_logits`` then
    ``info_nce``, +pos +neg, at the config's batch, queue and width), with them and with each made a no-op."""
    import importlib

    import torch.nn.functional as F

    from ftcl_core import losses
    from ftcl_core.runs import cpu_model

    cfg = load_config(config, [])
    n, k, c = cfg.train.batch_size, cfg.moco.queue_size, cfg.model.dim
    gen = torch.Generator().manual_seed(0)
    q, key, queue = (F.normalize(torch.randn(rows, c, generator=gen), dim=1) for rows in (n, n, k))
    ft = FTConfig(pos=True, neg=True)

    def step() -> None:
        out = losses.moco_ft_logits(q, key, queue, ft, gen)
        losses.info_nce(torch.cat([out.pos.view(-1, 1), out.neg], 1) / cfg.moco.tau)

    saved = {(m, name): getattr(importlib.import_module(m), name) for m, names in STEP_CHECKS.items() for name in names}

    def checks(on: bool) -> None:
        for (m, name), f in saved.items():
            setattr(importlib.import_module(m), name, f if on else (lambda *a, **kw: None))

    with_checks, without = [], []
    try:
        for _ in range(rounds):  # alternated, so that a disturbed round disturbs both
            checks(True)
            with_checks.append(timing.timed(step, number, warmup=2))
            checks(False)
            without.append(timing.timed(step, number, warmup=2))
    finally:
        checks(True)
    checked, bare = statistics.median(with_checks), statistics.median(without)
    return {"cpu": cpu_model(), "threads": torch.get_num_threads(), "batch": n, "queue": k, "dim": c,
            "checked_ms": 1e3 * checked, "bare_ms": 1e3 * bare, "checks_us": 1e6 * (checked - bare),
            "share": (checked - bare) / checked}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench")
    parser.add_argument("what", choices=["overhead", "lightly", "breakdown", "paths", "compile", "anchor", "checks",
                                         "_worker", "_compile_child"])
    parser.add_argument("which", nargs="*", help="breakdown: key=value overrides of --config")
    parser.add_argument("--steps", type=int, default=20, help="breakdown: timed steps")
    parser.add_argument("--synthetic", type=int, default=0, help="breakdown: N random images instead of the data")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--config", default="configs/cpu_moco_v2.yaml")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_intermixed_args(argv)
    if args.what == "_worker":
        import json

        print(json.dumps(_worker(args.which[0], args.config, args.epochs, args.workers)))
        return 0
    if args.what == "_compile_child":
        import json

        print(json.dumps(_compile_child(args.config, args.rounds)))
        return 0
    if args.what == "compile":
        from ftcl_core.runs import cpu_model

        r = compile_cost(args.config, rounds=min(args.rounds, 8))
        print(f"config={args.config} cpu={cpu_model()} threads={torch.get_num_threads()} torch {torch.__version__}")
        print(f"first compiled step: cold cache {r['cold_s']:.1f} s, warm cache {r['warm_s']:.1f} s")
        print(f"model step: eager {1e3 * r['eager_s']:.1f} ms, compiled {1e3 * r['compiled_s']:.1f} ms "
              f"(speed-up {r['speedup']:.3f}; per process: "
              + ", ".join(f"{1e3 * x['eager_s']:.1f}/{1e3 * x['compiled_s']:.1f}" for x in r["runs"]) + ")")
        print(f"break_even_steps: cold {r['break_even_steps']['cold']:.0f}, warm {r['break_even_steps']['warm']:.0f}")
        return 0
    if args.what == "breakdown":
        r = breakdown(args.config, args.which, steps=args.steps, synthetic=args.synthetic)
        print(f"config={r['config']} {' '.join(r['overrides'])} method={r['method']} device={r['device_name']} "
              f"threads={r['threads']} batch={r['batch_size']}")
        print(f"cpu={r['cpu']} path={r['path']['memory_format']}, split-BN layout {r['path']['split_bn_layout']}, "
              f"compile {r['path']['compile']}")
        print(f"step {r['step_ms']:.1f} ms, {r['images_per_s']:.0f} images/s; "
              + ", ".join(f"{k} {v:.1f} ms" for k, v in r["phases_ms"].items()))
        return 0
    if args.what == "anchor":  # the GPU check's per-sample anchor, per transform, one thread (as a DataLoader worker)
        from benchmarks.gpucheck.loader import _per_transform
        from ftcl_core.runs import cpu_model

        torch.set_num_threads(1)
        images = torch.randint(0, 256, (32, 3, 256, 256), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
        print(f"cpu={cpu_model()} threads=1, 224-px views of 256-px images, ms a view (RandomApply: averaged over views)")
        for blur in ("pil", "torchvision"):
            per = _per_transform(images, 224, 32, blur)
            print(f"blur={blur}: " + ", ".join(f"{k} {v:.2f}" for k, v in per.items())
                  + f"; total {sum(per.values()):.1f} ms a view, {1e3 / (2 * sum(per.values())):.1f} images/s a core")
        return 0
    if args.what == "paths":
        r = paths(args.config)
        print(f"config={args.config} cpu={r['cpu']} threads={r['threads']}")
        for name, t in r["median_s"].items():
            print(f"model step, {name}: {1e3 * t:.1f} ms")
        print(f"speedup of the default path ({r['new']}) over {r['old']}: {r['speedup']:.3f}")
        print(f"view_ratio (step with {r['view']} over the default's): {r['view_ratio']:.3f}")
        return 0
    if args.what == "checks":
        r = check_cost(args.config)
        print(f"config={args.config} cpu={r['cpu']} threads={r['threads']} batch={r['batch']} queue={r['queue']} "
              f"dim={r['dim']}: FT scores and loss (+pos +neg)")
        print(f"with the argument checks {r['checked_ms']:.2f} ms, without {r['bare_ms']:.2f} ms: the checks "
              f"{r['checks_us']:.0f} us, share {r['share']:.4f}")
        return 0
    if args.what == "lightly":
        return _print_lightly(lightly(args.config, epochs=args.epochs), args.config)
    r = overhead(args.config, rounds=args.rounds)
    print(f"config={args.config} batch={r['batch_size']} threads={r['threads']}")
    print(f"median step: plain {r['plain_step_s'] * 1e3:.1f} ms, +FT {r['ft_step_s'] * 1e3:.1f} ms, "
          f"+stats {r['stats_step_s'] * 1e3:.1f} ms (plain range {r['spread_plain_s'][0] * 1e3:.1f}-"
          f"{r['spread_plain_s'][1] * 1e3:.1f} ms)")
    print(f"ft_overhead={r['ft_overhead']:.4f} stats_overhead={r['stats_overhead']:.4f} "
          f"ft_device_draws_overhead={r['ft_device_draws_overhead']:.4f}")
    c = statistics_cost(args.config)
    print(f"inside one run ({c['cpu']}): step {c['step_ms']:.1f} ms, statistics phase {c['statistics_ms']:.2f} ms, "
          f"of which the representation statistics (align, uniform, rho, erank) {c['representation_ms']:.2f} ms")
    print(f"statistics_share={c['statistics_share']:.4f} representation_share={c['representation_share']:.4f}")
    return 0



def _print_lightly(r: dict, config: str) -> int:
    med = statistics.median
    from ftcl_core.execution import execution_path
    from ftcl_core.runs import cpu_model

    ours = med(r["ftcl"]["rates"])
    path = execution_path(load_config(config))
    print(f"config={config} threads={torch.get_num_threads()} cpu={cpu_model()} "
          f"ftcl path={path['memory_format']}, split-BN layout {path['split_bn_layout']}, compile {path['compile']}")
    print(f"ftcl end to end: {ours:.0f} img/s (epochs: {', '.join(f'{x:.0f}' for x in r['ftcl']['rates'])}), "
          f"peak RSS {r['ftcl']['peak_rss_mib']:.0f} MiB")
    for w, t in r["lightly"].items():
        print(f"lightly end to end, {w} loader workers: {med(t['rates']):.0f} img/s "
              f"(epochs: {', '.join(f'{x:.0f}' for x in t['rates'])}), peak RSS {t['peak_rss_mib']:.0f} MiB")
    theirs = r["lightly"][r["lightly_best_workers"]]
    s = r["step"]
    print(f"model step alone (same views in memory): ftcl {s['ftcl'] * 1e3:.1f} ms, lightly {s['lightly'] * 1e3:.1f} ms "
          f"(ranges ftcl {s['spread']['ftcl'][0] * 1e3:.1f}-{s['spread']['ftcl'][1] * 1e3:.1f}, "
          f"lightly {s['spread']['lightly'][0] * 1e3:.1f}-{s['spread']['lightly'][1] * 1e3:.1f})")
    if "ftcl compiled" in s:
        print(f"model step, ftcl under train.compile=true (steady state, after its compile): {s['ftcl compiled'] * 1e3:.1f} ms "
              f"(range {s['spread']['ftcl compiled'][0] * 1e3:.1f}-{s['spread']['ftcl compiled'][1] * 1e3:.1f}); "
              f"step_ratio_compiled={s['lightly'] / s['ftcl compiled']:.3f}")
    f = r["flops"]
    print(f"encoder work {f['step_gflop']:.2f} GFLOP per step, achieved {f['achieved_gflops']:.1f} GFLOP/s; "
          f"sgemm {f['sgemm_gflops']:.1f} GFLOP/s ({100 * f['achieved_gflops'] / f['sgemm_gflops']:.0f} %)")
    print("ftcl step time: " + ", ".join(f"{k} {100 * v:.1f} %" for k, v in f["profile"].items()))
    print(f"end_to_end_ratio={ours / med(theirs['rates']):.3f} step_ratio={s['lightly'] / s['ftcl']:.3f} "
          f"ft_overhead={r['overhead']['ft_overhead']:.4f} stats_overhead={r['overhead']['stats_overhead']:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
