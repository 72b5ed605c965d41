"""Training MoCo (v1/v2) with the feature transformations, into a resumable run folder.

:func:`train` is the whole loop: build data and model from a config, resume from the folder's
checkpoint if there is one, train with a progress bar, record the score statistics and gradient norms,
checkpoint every epoch (atomically), and evaluate at the end.  Resuming after a ``kill -9`` reproduces
the uninterrupted run's metrics exactly on CPU, because every random draw comes from one
``torch.Generator`` whose state is checkpointed.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ftcl_core import augment as A
from ftcl_core import distributed as D
from ftcl_core.data import (
    ImageSet,
    balanced_subset,
    fashion_mnist_validation,
    hold_out,
    load_fashion_mnist,
    load_image_folder,
    load_torchvision,
    read_class_list,
    shapes_splits,
    shapes_validation,
)
from ftcl_core.evaluation import evaluate_backbone, raw_pixel_readout
from ftcl_core.losses import FTConfig
from ftcl_core.methods import Method, build_model
from ftcl_core.models import Encoder, group_major
from ftcl_core.runs import (
    DEFAULTS,
    ConfigError,
    RunDir,
    config_diff,
    merge,
    provenance,
    validate,
    write_json,
    write_npz,
    write_torch,
    write_yaml,
)
from ftcl_core.stats import (
    REPRESENTATION_COLUMNS,
    SCORE_COLUMNS,
    StepRecorder,
    layer_grad_norms,
    layer_names,
    representation_statistics,
    score_histogram,
    score_statistics,
)

METRIC_COLUMNS = ("epoch", "lr", "loss", "top1") + SCORE_COLUMNS + REPRESENTATION_COLUMNS
CHECKPOINT_FORMAT = 1


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint is kept."""


class IncompatibleCheckpoint(RuntimeError):
    """A run folder's checkpoint or config does not match the config asked for."""


def load_data(cfg: dict) -> tuple[ImageSet, ImageSet]:
    """Train and held-out :class:`ImageSet` s for ``cfg['data']``: the test set, or with ``data.eval_split=val``
    a validation set that is neither (for calibration, so that the test set never chooses a recipe)."""
    d = cfg["data"]
    if d.get("eval_split", "test") == "val":
        if d["name"] == "shapes":
            return shapes_validation(d["n_train"], d["n_val"], size=d["image_size"], seed=cfg["seed"])
        if d["name"] == "fashion_mnist":
            full = load_fashion_mnist(d["root"], True, d["image_size"], d["download"])
            return fashion_mnist_validation(full, d["n_train"], d["n_val"])
        return hold_out(_load_train_test(cfg)[0], d["n_val"])
    return _load_train_test(cfg)


def _load_train_test(cfg: dict) -> tuple[ImageSet, ImageSet]:
    d = cfg["data"]
    if d["name"] == "shapes":
        return shapes_splits(d["n_train"], d["n_test"], size=d["image_size"], seed=cfg["seed"])
    if d["name"] == "imagefolder":
        classes = read_class_list(d["class_list"]) if d["class_list"] else None  # root, test_root: see validate
        kw = dict(max_per_class=d["max_per_class"], workers=d["workers"], cache=d["cache"])
        train = load_image_folder(d["root"], d["image_size"], classes, **kw)
        return train, load_image_folder(d["test_root"], d["image_size"], list(train.classes), **kw)
    if d["name"] == "fashion_mnist":  # n_train / n_test: class-balanced subsets (all with n >= 60 000 / 10 000)
        train = load_fashion_mnist(d["root"], True, d["image_size"], d["download"])
        test = load_fashion_mnist(d["root"], False, d["image_size"], d["download"])
        return balanced_subset(train, d["n_train"]), balanced_subset(test, d["n_test"])
    if d["name"] in ("cifar10", "cifar100", "stl10"):
        root = d["root"] or "datasets"
        return (load_torchvision(d["name"], root, True, d["download"]),
                load_torchvision(d["name"], root, False, d["download"]))
    raise ConfigError(f"unknown data.name={d['name']!r}; choose shapes, fashion_mnist, imagefolder, cifar10, cifar100 or stl10.")


def _load_data_rank0_first(cfg: dict) -> tuple[ImageSet, ImageSet]:
    """Under torchrun rank 0 loads first (and fills ``data.cache``), the others then read what it wrote."""
    if not D.is_main():
        D.barrier()
    data = load_data(cfg)
    if D.is_main():
        D.barrier()
    return data


def augment_config(cfg: dict) -> A.AugmentConfig:
    a = cfg["augment"]
    base = A.PRESETS[a["preset"]](a["out_size"])
    extra = {"crop_scale": tuple(a["crop_scale"])}
    for key in ("blur_sigma", "jitter", "jitter_p", "gray_p", "blur_p"):  # null (or absent in older runs): the preset's
        if a.get(key) is not None:
            extra[key] = tuple(a[key]) if isinstance(a[key], list) else a[key]
    return A.AugmentConfig(**{**base.__dict__, **extra})


def learning_rate(cfg: dict, step: int, steps_per_epoch: int) -> float:
    """Linear warm-up, then cosine (MoCo v2) or step decay x0.1 at the milestones (MoCo v1; Supp B.3)."""
    o = cfg["optim"]
    total = cfg["train"]["epochs"] * steps_per_epoch
    warm = o["warmup_epochs"] * steps_per_epoch
    if step < warm:
        return o["lr"] * (step + 1) / warm
    if o["schedule"] == "cosine":
        return o["lr"] * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))
    if o["schedule"] == "step":
        epoch = step / steps_per_epoch
        return o["lr"] * 0.1 ** sum(epoch >= m for m in o["milestones"])
    raise ConfigError(f"optim.schedule={o['schedule']!r}: choose cosine or step.")


@dataclass
class StepOutput:
    loss: torch.Tensor
    values: torch.Tensor | None  # METRIC_COLUMNS[2:] on the device (None without statistics)
    grad_norms: torch.Tensor | None  # per-layer gradient L2 norms (None without statistics)
    histogram: torch.Tensor | None = None  # (2, bins) positive / negative score histograms


def train_step(model: Method, optimizer: torch.optim.Optimizer, x: torch.Tensor, aug: A.AugmentConfig,
               ft: FTConfig, ft_active: bool, tau: float, gen: torch.Generator,
               n_stats: int = 64, record_stats: bool = True, histogram_bins: int = 0,
               views: tuple[torch.Tensor, torch.Tensor] | None = None, net: torch.nn.Module | None = None,
               amp: str | None = None, channels_last: bool = False, n_total: int | None = None,
               mark: Callable[[str], None] | None = None, swav: dict | None = None,
               labels: torch.Tensor | None = None) -> StepOutput:
    """One step of any method: two views, FT inside the loss (eq. 3, Sec 4.2), the loss (eq. 1 for MoCo and
    SimCLR), SGD, then MoCo's enqueue.

    With ``record_stats`` the Supp A statistics (raw cosines and after FT) and the Supp C layer
    gradient norms are computed on the device; nothing is synchronised here.  ``views`` passes two
    already augmented batches instead of ``x`` (benchmarks of the model step alone).  Under
    torch.distributed, ``x`` holds this rank's rows of a global batch of ``n_total`` and ``net`` is the
    DistributedDataParallel wrapper of ``model``.  ``mark(phase)`` is called at the end of each phase
    (augment, forward, ft_loss, backward, statistics, optimizer) by the step-time benchmark.  ``labels``: the
    batch's classes, passed only to the diagnosis oracle (``moco.drop_same_class``); no method sees them otherwise.
    """
    mark = mark or _no_mark
    if views is None:
        rows = slice(D.rank(), None, D.world_size()) if n_total is not None else None
        views = (A.augment(x, aug, gen, rows, n_total), A.augment(x, aug, gen, rows, n_total))
    x1, x2 = views
    if channels_last:
        x1, x2 = x1.contiguous(memory_format=torch.channels_last), x2.contiguous(memory_format=torch.channels_last)
    mark("augment")
    network = net if net is not None else model

    def forward(*args):  # the networks under autocast; FT, scores, loss and statistics in fp32
        with _autocast(x1.device, amp):
            out = network(*args)
        out = tuple(o.float() for o in out)
        mark("forward")
        return out

    scores = model.scores(forward, x1, x2, ft, ft_active, gen, n_stats, labels)
    loss, top1 = model.loss(scores)
    mark("ft_loss")
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    mark("backward")
    values = norms = hist = None
    neg_for_stats = scores.neg if scores.neg is not None else scores.raw_neg
    if histogram_bins:
        hist = score_histogram(scores.pos, neg_for_stats, n_stats, histogram_bins)
    if record_stats:
        ft_stats = score_statistics(scores.pos, neg_for_stats, n_stats)
        raw_stats = score_statistics(scores.raw_pos, scores.raw_neg, n_stats)
        rep_stats = representation_statistics(*scores.views)
        values = D.mean_over_ranks(torch.cat([loss.detach().view(1), top1.view(1), raw_stats, ft_stats, rep_stats]))
        norms = layer_grad_norms(model.online)
    mark("statistics")
    model.before_optimizer_step()
    optimizer.step()
    model.after_step(scores)
    mark("optimizer")
    return StepOutput(loss.detach(), values, norms, hist)


def host_to_device(x: torch.Tensor, device: str) -> torch.Tensor:
    """A uint8 batch to the device; on CUDA through page-locked memory (PyTorch caches those buffers), so
    the copy runs asynchronously behind the previous step's kernels."""
    if device.startswith("cuda"):
        return x.pin_memory().to(device, non_blocking=True)
    return x.to(device)


def _no_mark(phase: str) -> None:
    pass


def _autocast(device: torch.device, amp: str | None):
    if amp is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def _rng_state(gen: torch.Generator) -> dict:
    return {"gen": gen.get_state(), "torch": torch.get_rng_state()}


def _check_compatible(run: RunDir, cfg: dict) -> None:
    if run.config.is_file():
        diff = config_diff(run.load_config(), cfg)
        if diff:
            raise IncompatibleCheckpoint(
                f"run folder {run.path} holds a run with another config (differs in {diff}). "
                "Use another --out, or delete the folder to start over."
            )


def train(cfg: dict, out: str | os.PathLike, progress: bool = True, max_steps: int | None = None) -> dict:
    """Train (or resume, or just load) the run of ``cfg`` in folder ``out``; returns its eval dict.

    A second process asking for the same folder (a sweep and a book build, say) waits on the folder's
    lock and then loads the finished run instead of training it twice.  ``max_steps`` stops after that
    many steps without checkpointing or evaluating and returns ``{"metrics": ...}`` (see :func:`replay`).
    Launched by ``torchrun``, every rank trains its share of each batch; rank 0 alone holds the lock,
    decides (complete, or train), writes the run folder and evaluates; the other ranks return ``{}``
    when training ends.
    """
    validate(cfg)
    run = RunDir(out)
    if run.path.exists() and not run.path.is_dir():
        raise ConfigError(f"--out {run.path} is a file, not a folder: name a new or existing run folder instead.")
    _check_compatible(run, cfg)
    if run.is_complete():
        return run.load_eval()
    device = D.init_from_env(_device(cfg))
    main = D.is_main()
    if main:
        run.path.mkdir(parents=True, exist_ok=True)
    with run_lock(run.path) if main else contextlib.nullcontext():
        if main:
            _check_compatible(run, cfg)
        if D.broadcast_flag(run.is_complete() if main else False):  # the others wait here for rank 0's lock
            return run.load_eval() if main else {}
        return _train_locked(cfg, run, device, progress, max_steps)


def _device(cfg: dict) -> str:
    device = cfg["device"]
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError("device=cuda but no CUDA device is visible; use device=cpu or device=auto.")
    return device


@contextlib.contextmanager
def run_lock(path: Path):
    """An exclusive advisory lock on a run folder (``.lock``), released when the process ends or exits.

    The holder writes its pid into the lock file; a process that has to wait says which pid it waits for,
    so a build that seems to hang names the process that holds the run.
    """
    import fcntl

    with open(path / ".lock", "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            print(f"waiting for the run folder {path}: process {holder} is training it", file=sys.stderr, flush=True)
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_optimizer(cfg: dict, model: torch.nn.Module, device: str) -> torch.optim.Optimizer:
    """SGD over the trainable parameters (not MoCo's key encoder nor BYOL's target); fused on CUDA."""
    o = cfg["optim"]
    fused = o["fused"] if o["fused"] != "auto" else device.startswith("cuda")
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.SGD(params, lr=o["lr"], momentum=o["momentum"], weight_decay=o["weight_decay"],
                           **({"fused": True} if fused else {}))


def channels_last(cfg: dict) -> bool:
    """Whether the networks run channels-last: ``train.channels_last`` true, or ``auto`` (the default).

    Measured on an Intel Xeon (AVX-512, 2 threads; ``results/bench_breakdown_intel-xeon-avx512.txt``), a channels-last
    ResNet-10 with split batch-norm in the ``blocks`` layout runs its forward and backward about 1.3x faster
    than NCHW; on tensor cores channels-last is the usual fast layout."""
    return cfg["train"]["channels_last"] in (True, "auto")


def execution_path(cfg: dict) -> dict:
    """How a run executes (recorded in ``provenance.json``): memory format and split batch-norm layout."""
    cl = channels_last(cfg)
    return {"memory_format": "channels_last" if cl else "contiguous",
            "split_bn_layout": ("blocks" if cl else "interleaved") if cfg["model"]["bn_splits"] > 1 else None}


def prepare_model(cfg: dict, device: str) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The method's model on ``device`` and the network the step calls: the model itself, or its
    SyncBN / channels_last / torch.compile / DistributedDataParallel form as the config asks."""
    model = build_model(cfg)
    if cfg["model"]["sync_bn"] and D.world_size() > 1 and not device.startswith("cuda"):
        raise ConfigError("model.sync_bn=true needs CUDA (torch's SyncBatchNorm has no CPU kernel); on CPU "
                          "use model.bn_splits (shuffle-BN) instead.")
    if cfg["model"]["sync_bn"]:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.to(device)
    if channels_last(cfg):
        model = model.to(memory_format=torch.channels_last)
        for module in list(model.modules()):  # each backbone keeps its split batch-norm groups contiguous
            if isinstance(module, Encoder):
                group_major(module.backbone)
    net: torch.nn.Module = model
    if D.world_size() > 1:  # the queue stays identical by the maths; BN statistics are averaged at checkpoints
        ddp = torch.nn.parallel.DistributedDataParallel
        # per-rank buffers: the newer keyword where torch has it (it deprecates broadcast_buffers)
        no_sync = ("forward_sync_buffers" if "forward_sync_buffers" in inspect.signature(ddp).parameters
                   else "broadcast_buffers")
        net = ddp(net, **{no_sync: False})
    compile_with = cfg["train"]["compile"]
    if compile_with:  # true: inductor; a string names another torch.compile backend (tests use "eager")
        net = torch.compile(net, **({"backend": compile_with} if isinstance(compile_with, str) else {}))
    return model, net


def _train_locked(cfg: dict, run: RunDir, device: str, progress: bool, max_steps: int | None = None) -> dict:
    main = D.is_main()
    if main:
        write_yaml(run.config, cfg)
    train_set, test_set = _load_data_rank0_first(cfg)
    bs = cfg["train"]["batch_size"]
    if len(train_set) < bs:
        raise ConfigError(f"the training set holds {len(train_set)} images, fewer than train.batch_size={bs}.")
    aug = augment_config(cfg)
    ft = FTConfig(**cfg["ft"])
    model, net = prepare_model(cfg, device)
    optimizer = build_optimizer(cfg, model, device)
    gen = torch.Generator().manual_seed(cfg["seed"])  # the same stream on every rank
    steps_per_epoch = len(train_set) // bs
    epochs = cfg["train"]["epochs"]
    names = layer_names(model.online)
    recorder = StepRecorder(METRIC_COLUMNS, sync_every=cfg["stats"]["sync_every"])
    grad_epoch: list[np.ndarray] = []
    grad_steps: list[np.ndarray] = []
    histograms: list = []
    start_epoch, train_s = 0, 0.0

    if run.checkpoint.is_file():
        state = _load_checkpoint(run, model, optimizer, device)
        if state.get("world_size", 1) != D.world_size():
            raise IncompatibleCheckpoint(
                f"{run.checkpoint} was written by {state.get('world_size', 1)} process(es), this run has "
                f"{D.world_size()}: batch-norm groups, sharding and random draws would change. Resume with "
                f"--nproc_per_node={state.get('world_size', 1)}, or use another --out."
            )
        gen.set_state(state["rng"]["gen"])
        torch.set_rng_state(state["rng"]["torch"])
        start_epoch, train_s = state["epoch"], state["train_s"]
        recorder.load(run.load_metrics(), upto_step=start_epoch * steps_per_epoch)
        g = run.load_grad_norms()
        grad_epoch = list(g["per_epoch"][:start_epoch])
        if "per_step" in g:
            grad_steps = list(g["per_step"][: start_epoch * steps_per_epoch])
        if run.histograms.is_file():
            with np.load(run.histograms) as h:
                histograms = list(torch.from_numpy(h["counts"][: start_epoch * steps_per_epoch]))

    images = train_set.images
    world, rank = D.world_size(), D.rank()
    oracle = bool(cfg["moco"]["drop_same_class"])
    if oracle and world > 1:
        raise ConfigError("moco.drop_same_class=true (the false-negative oracle) runs in one process only: "
                          "launch without torchrun.")
    t = cfg["train"]
    kill_at = int(os.environ.get("FTCL_TEST_KILL_AT_STEP", "-1"))  # test hook: simulate a crash
    bar = _progress(total=epochs * steps_per_epoch, initial=start_epoch * steps_per_epoch, enabled=progress and main)
    for epoch in range(start_epoch, epochs):
        t_epoch = time.perf_counter()
        model.train()
        order = torch.randperm(len(images), generator=gen)
        ft_active = epoch >= ft.start_epoch
        grad_sum = None
        for i in range(steps_per_epoch):
            step = epoch * steps_per_epoch + i
            if step == kill_at:
                os.kill(os.getpid(), 9)
            if max_steps is not None and step >= max_steps:
                bar.close()
                return {"metrics": recorder.as_arrays()}
            lr = learning_rate(cfg, step, steps_per_epoch)
            for group in optimizer.param_groups:
                group["lr"] = lr
            model.start_step(epoch, step, epochs * steps_per_epoch)  # BYOL's target momentum, SwAV's frozen prototypes
            batch = order[i * bs : (i + 1) * bs]
            x = host_to_device(images[batch[rank::world]], device)
            out = train_step(model, optimizer, x, aug, ft, ft_active, cfg["moco"]["tau"], gen,
                             cfg["stats"]["n_queries"], histogram_bins=50 if cfg["stats"]["histograms"] else 0,
                             net=net, amp=t["amp"], channels_last=channels_last(cfg),
                             n_total=bs if world > 1 else None, swav=cfg["swav"],
                             labels=train_set.labels[batch].to(device) if oracle else None)
            if out.histogram is not None:
                histograms.append(out.histogram)
            grad_sum = out.grad_norms if grad_sum is None else grad_sum + out.grad_norms
            if cfg["stats"]["grad_norms_per_step"]:
                grad_steps.append(out.grad_norms.cpu().numpy())
            recorder.record(step, torch.cat([torch.tensor([epoch, lr], device=out.values.device), out.values]))
            bar.update(1)
            if (i + 1) % cfg["stats"]["sync_every"] == 0 or i + 1 == steps_per_epoch:
                recorder.flush()
                _stop_if_diverged(run, recorder, epoch)
        losses = np.asarray([r[3] for r in recorder.rows[-steps_per_epoch:]])
        grad_epoch.append((grad_sum / steps_per_epoch).cpu().numpy())
        train_s += time.perf_counter() - t_epoch
        bar.set_postfix(loss=f"{losses.mean():.3f}", epoch=epoch + 1)
        if (epoch + 1) % t["checkpoint_every"] == 0 or epoch + 1 == epochs:
            D.average_batchnorm_buffers(model)  # what one process with split-BN holds
            if main:
                _save(run, model, optimizer, gen, epoch + 1, train_s, recorder, names, grad_epoch, grad_steps,
                      histograms)
    bar.close()
    if not main:  # rank 0 evaluates and writes eval.json; no collective waits on that
        return {}
    return _finish(run, cfg, model, train_set, test_set, aug, device, train_s)


def _load_checkpoint(run: RunDir, model: torch.nn.Module, optimizer: torch.optim.Optimizer, device: str) -> dict:
    try:
        state = torch.load(run.checkpoint, map_location=device, weights_only=True)
    except Exception as err:  # unpickling errors come in many types
        raise IncompatibleCheckpoint(
            f"{run.checkpoint} cannot be read ({type(err).__name__}: {err}). It was not written by this "
            "version of ftcl_core; move it away to train this run from scratch, or use another --out."
        ) from err
    if state.get("format") != CHECKPOINT_FORMAT:
        raise IncompatibleCheckpoint(f"{run.checkpoint} has format {state.get('format')}, expected {CHECKPOINT_FORMAT}.")
    try:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    except (RuntimeError, ValueError, KeyError) as err:
        raise IncompatibleCheckpoint(
            f"{run.checkpoint} does not fit the model of this config ({err}). Use another --out."
        ) from err
    return state


def replay(run_path: str | os.PathLike, n_steps: int) -> dict:
    """Re-run the first ``n_steps`` of a stored run from its config and return the per-step metrics, so
    that stored results can be checked against the code that claims to have made them.

    The run's own thread count and memory format are used: CPU reductions split over another number of
    threads, or run in another layout, round differently (about 1e-4 relative after a dozen steps)."""
    import tempfile

    run = RunDir(run_path)
    cfg = merge(DEFAULTS, run.load_config())  # keys added since the run take their defaults
    prov = run.load_provenance()
    # the memory format the run ran with (runs stored before it was recorded ran NCHW)
    cfg["train"]["channels_last"] = prov.get("execution", {}).get("memory_format") == "channels_last"
    threads = torch.get_num_threads()
    torch.set_num_threads(prov.get("threads", threads))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            return train(cfg, tmp, progress=False, max_steps=n_steps)["metrics"]
    finally:
        torch.set_num_threads(threads)


def _stop_if_diverged(run: RunDir, recorder: StepRecorder, epoch: int) -> None:
    """Raise :class:`TrainingDiverged` if a recorded loss is not finite (no checkpoint is written)."""
    rows = np.asarray(recorder.rows[-recorder.sync_every :])
    bad = ~np.isfinite(rows[:, 1 + METRIC_COLUMNS.index("loss")])
    if bad.any():
        step = int(rows[np.argmax(bad), 0])
        write_json(run.path / "status.json", {"status": "diverged", "step": step, "epoch": epoch})
        raise TrainingDiverged(
            f"loss became NaN/inf at step {step} (epoch {epoch}); training stopped and the last good "
            f"checkpoint (after {epoch} completed epochs) is kept in {run.path}. Lower optim.lr or raise "
            "moco.tau, then train into a new --out."
        )


def _save(run, model, optimizer, gen, epoch, train_s, recorder, names, grad_epoch, grad_steps, histograms) -> None:
    """Metrics first, checkpoint last: on resume, metrics are cut back to the checkpoint's step."""
    write_npz(run.metrics, recorder.as_arrays())
    grads = {"per_epoch": np.stack(grad_epoch), "layers": np.asarray(names)}
    if grad_steps:
        grads["per_step"] = np.stack(grad_steps)
    write_npz(run.grad_norms, grads)
    if histograms:  # (steps, 2, bins): positive and negative score counts over [-1, 1]
        write_npz(run.histograms, {"counts": torch.stack([h.cpu() for h in histograms]).numpy()})
    write_torch(run.checkpoint, {
        "format": CHECKPOINT_FORMAT, "epoch": epoch, "train_s": train_s,
        "model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": _rng_state(gen),
        "world_size": D.world_size(),
    })


def _finish(run, cfg, model, train_set, test_set, aug, device, train_s) -> dict:
    e = cfg["eval"]
    kw = dict(device=device, knn_k=e["knn_k"], knn_t=e["knn_t"], linear_epochs=e["linear_epochs"],
              linear_lr=e["linear_lr"], seed=cfg["seed"])
    t0 = time.perf_counter()
    result = evaluate_backbone(model.online.backbone, train_set, test_set, aug, **kw)
    if e["random_init"]:
        rand = evaluate_backbone(build_model(cfg).online.backbone.to(device), train_set, test_set, aug, **kw)
        result.update({"random_init_knn_top1": rand["knn_top1"], "random_init_linear_top1": rand["linear_top1"]})
    if e.get("raw_pixels", "auto") is True or (e.get("raw_pixels", "auto") == "auto" and cfg["data"]["name"] != "shapes"):
        result["raw_pixels_linear_top1"] = raw_pixel_readout(train_set, test_set, aug, e["linear_epochs"], e["linear_lr"],
                                                             cfg["seed"])
    eval_s = time.perf_counter() - t0
    result.update({"train_s": train_s, "eval_s": eval_s, "wall_s": train_s + eval_s})
    write_json(run.provenance, {**provenance(device, cfg["seed"]), "status": "complete", "world_size": D.world_size(),
                                "execution": execution_path(cfg), "train_s": train_s, "eval_s": eval_s})
    write_json(run.eval, result)  # last: its presence marks the run complete
    return result


def _progress(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, desc="train", unit="step", dynamic_ncols=True)
