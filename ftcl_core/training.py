"""Training any method with the feature transformations, into a resumable run folder.

:func:`train` finds or locks the run folder; :func:`_train_locked` is the loop (data and model from the config,
resume, epochs of :func:`train_step`, a checkpoint per epoch, the evaluation at the end).  A step is the
method's own (:mod:`ftcl_core.methods`): its scores with FT, its loss, SGD, its after-step.  Checkpoints and the
metrics log live in :mod:`ftcl_core.checkpoints`, the data loaders in :mod:`ftcl_core.data`, the run folder's
files and lock in :mod:`ftcl_core.runs`, how a run executes (device, memory format, compile, the wrapped model)
in :mod:`ftcl_core.execution`.  Resuming after a ``kill -9`` reproduces the uninterrupted run's
metrics exactly on CPU, because every random draw comes from one ``torch.Generator`` whose state is
checkpointed.  On CUDA FT draws from a second generator, on the device (``train.ft_draws``,
:func:`ftcl_core.execution.ft_device_draws`), whose state the checkpoint holds too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from ftcl_core import augment, checkpoints, distributed
from ftcl_core.checkpoints import TrainingLog, check_compatible
from ftcl_core.config import ConfigError, RunConfig, as_config
from ftcl_core.data import ImageSet, load_data_rank0_first
from ftcl_core.evaluation import evaluate_backbone, raw_pixel_readout
from ftcl_core.execution import (
    channels_last,
    exact_float32,
    execution_path,
    ft_device_draws,
    host_to_device,
    memory_format,
    prepare_model,
    resolve_device,
)
from ftcl_core.ft import PlateauStart
from ftcl_core.methods import Method, Scores, StepContext, build_model
from ftcl_core.runs import (
    RunDir,
    check_run_folder,
    config_digest,
    provenance,
    read_seal,
    readouts_digest,
    run_lock,
    write_json,
    write_yaml,
)
from ftcl_core.stats import (
    layer_grad_norms,
    layer_names,
    representation_statistics,
    score_histogram,
    score_statistics,
)
from ftcl_core.transforms import DeviceDraws


class TrainingDiverged(RuntimeError):
    """A step's features, loss or gradient became NaN or infinite: the run stopped there, before its next checkpoint,
    so the last good checkpoint is kept.  The message is one line: the step, the quantity, the likely cause and the
    fix.  The command line exits with its own status for it (:data:`ftcl_core.study.cli.EXIT_DIVERGED`)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, as the command line's handler raises it: the loop stops as on Ctrl-C (:class:`TrainingInterrupted`)."""


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM, :class:`Terminated`) during a run: the message is one line, the step it stopped at and
    the epoch the same command resumes from (its last checkpoint; the run folder's lock is released).  A
    ``KeyboardInterrupt``, so a notebook's interrupt still stops a chapter; ``signal`` is the signal's number."""

    def __init__(self, message: str, signal: int) -> None:
        super().__init__(message)
        self.signal = signal


# What a step's health flags say is finite, in the order a divergence spreads through a step (the features feed
# the loss, the loss the gradient): the first that is not finite is the one a divergence message names.
HEALTH = ("features", "loss", "gradient")


def augment_config(cfg: RunConfig) -> augment.AugmentConfig:
    """The augmentation pipeline's parameters: the preset's, with the knobs the config sets (null: the preset's)."""
    a = cfg.augment
    extra = {"crop_scale": a.crop_scale}
    for key in ("blur_sigma", "jitter", "jitter_p", "gray_p", "blur_p"):
        if getattr(a, key) is not None:
            extra[key] = getattr(a, key)
    return dataclasses.replace(augment.PRESETS[a.preset](a.out_size), **extra)


def learning_rate(cfg: RunConfig, step: int, steps_per_epoch: int) -> float:
    """Linear warm-up, then cosine (MoCo v2) or step decay x0.1 at the milestones (MoCo v1; Supp B.3)."""
    o = cfg.optim
    total = cfg.train.epochs * steps_per_epoch
    warm = o.warmup_epochs * steps_per_epoch
    if step < warm:
        return o.lr * (step + 1) / warm
    if o.schedule == "cosine":
        return o.lr * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))
    epoch = step / steps_per_epoch  # "step" (the config admits no other schedule)
    return o.lr * 0.1 ** sum(epoch >= m for m in o.milestones)


@dataclass
class StepOutput:
    loss: torch.Tensor
    values: torch.Tensor | None  # METRIC_COLUMNS[2:] on the device (None without statistics)
    grad_norms: torch.Tensor | None  # per-layer gradient L2 norms (None without statistics)
    histogram: torch.Tensor | None = None  # (2, bins) positive / negative score histograms
    health: torch.Tensor | None = None  # (3,) bool on the device: features, loss, gradient finite (HEALTH)


class Observer:
    """The loop's one seam for code outside it: what a run tells whoever listens (:func:`observe`).  Every method is
    a no-op here; a subclass overrides the ones it needs.  The benchmarks time the phases
    (``benchmarks/profiling.py``), the study keeps a run's state at a checkpoint (its sweeps' late starts), a test
    stops or kills a run at a step.  An observer changes nothing the run computes."""

    def step(self, step: int) -> None:
        """Before each training step; raising :class:`StopTraining` (or anything else) stops the loop there."""

    def phase(self, name: str) -> None:
        """At the end of each :func:`phase` of a step (augment, forward, ft_loss, backward, statistics, optimizer)."""

    def checkpoint(self, run: RunDir, epoch: int) -> None:
        """Right after a checkpoint is written, ``epoch`` epochs done (rank 0 only)."""


_OBSERVERS: list[Observer] = []


@contextlib.contextmanager
def observe(observer: Observer):
    """Tell ``observer`` what every run does while the block runs."""
    _OBSERVERS.append(observer)
    try:
        yield observer
    finally:
        _OBSERVERS.remove(observer)


class StopTraining(Exception):
    """Raised before a step (:meth:`Observer.step`) to end the loop there: :func:`train` then returns the metrics
    recorded so far, without checkpointing or evaluating."""


def step_callback(callback: Callable[[int], None]):
    """:func:`observe` with ``callback(step)`` before every training step (it may raise :class:`StopTraining`)."""
    observer = Observer()
    observer.step = callback  # the instance's own function, called as callback(step)
    return observe(observer)


def epoch_callback(callback: Callable[[RunDir, int], None]):
    """:func:`observe` with ``callback(run, epoch)`` right after each checkpoint (rank 0 only)."""
    observer = Observer()
    observer.checkpoint = callback
    return observe(observer)


def stop_before(max_steps: int) -> Callable[[int], None]:
    """A :func:`step_callback` that stops the loop before step ``max_steps`` (the first ``max_steps`` steps run)."""
    def callback(step: int) -> None:
        if step >= max_steps:
            raise StopTraining(max_steps)
    return callback


@contextlib.contextmanager
def phase(name: str):
    """One phase of a step: a range named in ``torch.profiler`` traces; at its end each observer is told its name."""
    with torch.profiler.record_function(name):
        yield
    for observer in _OBSERVERS:
        observer.phase(name)


def make_views(x: torch.Tensor, aug: augment.AugmentConfig, gen: torch.Generator, channels_last: bool = False,
               n_total: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Two augmented views of the uint8 batch ``x`` (random draws from ``gen``), in the step's memory format.
    Under torch.distributed, ``x`` holds this rank's rows of a global batch of ``n_total``."""
    with phase("augment"):
        rows = slice(distributed.rank(), None, distributed.world_size()) if n_total is not None else None
        views = (augment.augment(x, aug, gen, rows, n_total), augment.augment(x, aug, gen, rows, n_total))
        return memory_format(views, channels_last)


def train_step(model: Method, optimizer: torch.optim.Optimizer, views: tuple[torch.Tensor, torch.Tensor],
               ctx: StepContext) -> StepOutput:
    """One step of any method on two views: its forward (under autocast, through ``ctx.wrapped`` when the
    model runs as its DDP or compiled form), its scores with FT inside the loss (eq. 3, Sec 4.2), its loss
    (eq. 1 for MoCo and SimCLR), backward, the statistics, SGD and the method's after-step (MoCo's enqueue).

    With ``ctx.record_stats`` the Supp A statistics (raw cosines and after FT) and the Supp C layer gradient
    norms are computed on the device; nothing is synchronised here.
    """
    network = ctx.wrapped if ctx.wrapped is not None else model
    inputs = (*views, ctx.gen) if model.forward_takes_gen else views
    if ctx.captured:  # a new step: the graphs' outputs of the last one may be overwritten
        torch.compiler.cudagraph_mark_step_begin()
    with phase("forward"):  # the networks under autocast; FT, scores, loss and statistics in fp32
        with _autocast(views[0].device, ctx.amp):
            out = network(*inputs)
        out = tuple(o.float() for o in out)
    with phase("ft_loss"):
        scores = model.scores(out, ctx)
        loss, top1 = model.loss(scores)
    with phase("backward"):
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
    with phase("statistics"):
        values, norms, hist = _statistics(model, scores, loss, top1, ctx)
        health = step_health(out, loss, model, norms)
    with phase("optimizer"):
        model.before_optimizer_step()
        optimizer.step()
        model.after_step(scores)
    return StepOutput(loss.detach(), values, norms, hist, health)


def step_health(features: tuple[torch.Tensor, ...], loss: torch.Tensor, model: torch.nn.Module,
                grad_norms: torch.Tensor | None = None) -> torch.Tensor:
    """Whether a step's features (the networks' outputs), loss and gradient are finite: ``(3,)`` bool on the device,
    in the order of :data:`HEALTH`; nothing is synchronised.  The gradient is judged by its per-layer norms (NaN or
    infinite exactly when a gradient entry is), the recorded ones (``grad_norms``) when the step has them."""
    if grad_norms is None:
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        grad_norms = torch.stack(torch._foreach_norm(grads)) if grads else loss.detach().new_zeros(1)
    feats = torch.stack([torch.isfinite(f.detach()).all() for f in features]).all()
    return torch.stack([feats, torch.isfinite(loss.detach()), torch.isfinite(grad_norms).all()])


def _statistics(model: Method, scores: Scores, loss: torch.Tensor, top1: torch.Tensor, opts: StepContext
                ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """The step's recorded values (loss, top-1, Supp A statistics raw and after FT, representation statistics,
    a labelled queue's same-class share), the layers' gradient norms (Supp C) and the score histogram, as
    ``opts`` asks."""
    values = norms = hist = None
    neg_for_stats = scores.neg if scores.neg is not None else scores.raw_neg
    if opts.histogram_bins:
        hist = score_histogram(scores.pos, neg_for_stats, opts.n_stats, opts.histogram_bins)
    if opts.record_stats:
        ft_stats = score_statistics(scores.pos, neg_for_stats, opts.n_stats)
        raw_stats = score_statistics(scores.raw_pos, scores.raw_neg, opts.n_stats)
        share = scores.same_class_share  # only a method that reads labels has it
        share = torch.full((1,), math.nan, device=loss.device) if share is None else share.view(1).float()
        rep_stats = torch.cat([representation_statistics(*scores.views), share])
        values = distributed.mean_over_ranks(torch.cat([loss.detach().view(1), top1.view(1), raw_stats, ft_stats, rep_stats]))
        norms = layer_grad_norms(model.online)
    return values, norms, hist


def _autocast(device: torch.device, amp: str | None):
    if amp is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def check_data(cfg: RunConfig, train_set: ImageSet, test_set: ImageSet) -> None:
    """What the config checks cannot know, from the loaded sets: as many images as ``data.n_train`` and the held-out
    count ask (the shapes and Fashion-MNIST take that many), the batch against the set and the number of processes
    (the study's MoCo variants refuse several processes themselves). Every label within the classes is the
    :class:`~ftcl_core.image_set.ImageSet`'s own check, made when a loader builds it."""
    d, n, bs, splits, world = cfg.data, len(train_set), cfg.train.batch_size, cfg.model.bn_splits, distributed.world_size()
    where = f"data.root={d.root}" if d.root else f"data.name={d.name}"
    held = ("data.n_val", d.n_val) if d.eval_split == "val" else ("data.n_test", d.n_test)
    for key, want, got in (("data.n_train", d.n_train, n), (*held, len(test_set))):
        if d.name in ("shapes", "fashion_mnist") and got < want:
            raise ConfigError(f"{where} holds {got} images for {key}={want}: lower {key} to {got}, or point "
                              "data.root at the whole set.")
    if n < bs:
        raise ConfigError(f"the training set holds {n} images, fewer than train.batch_size={bs}.")
    for images, key in ((train_set, "data.root"), (test_set, "data.test_root" if d.test_root else "data.root")):
        if len(images.labels.unique()) < 2:  # one class: the readouts score 100 % whatever the encoder learnt
            raise ConfigError(f"{key}={getattr(d, key.removeprefix('data.')) or d.name} holds images of one class "
                              "only: a readout over one class scores 100 % whatever the encoder learnt. Point it at "
                              "a folder with one sub-folder per class, at least two.")
    if bs % (splits * world):
        raise ConfigError(f"train.batch_size={bs} is not divisible by model.bn_splits={splits} x {world} "
                          "processes; each process takes batch_size / processes images, split into bn_splits groups.")


def _remove_stale(run: RunDir) -> None:
    """Remove, and say so, the temporary files of writes a crash interrupted (``.<name>.<random>.tmp``, never read);
    with the folder's lock held, so no other process is writing one."""
    if stale := sorted(run.path.glob(".*.tmp")):
        for f in stale:
            f.unlink(missing_ok=True)
        print(f"ftcl_core: removed {len(stale)} temporary file(s) an interrupted write left in {run.path} "
              f"({', '.join(f.name for f in stale[:3])}).", file=sys.stderr, flush=True)


def train(cfg: RunConfig | dict, out: str | os.PathLike, progress: bool = True, max_steps: int | None = None) -> dict:
    """Train (or resume, or just load) the run of ``cfg`` in folder ``out``; returns its eval dict.

    Every check that can fail runs before the run folder is created or written (the config against the run the
    folder holds, the device, the data: :func:`check_data`), so a refused call leaves nothing behind and the
    corrected one runs in the same folder; the command line checks what a user types first
    (:mod:`ftcl_core.study.preflight`: the output path, the device, the sizes against the machine's memory).

    A second process asking for the same folder (a sweep and a book build, say) waits on the folder's
    lock and then loads the finished run instead of training it twice.  ``max_steps`` stops after that
    many steps without checkpointing or evaluating and returns ``{"metrics": ...}``
    (:func:`ftcl_core.study.replay.replay` re-runs a stored run's first steps so).
    Launched by ``torchrun``, every rank trains its share of each batch; rank 0 alone holds the lock,
    decides (complete, or train), writes the run folder and evaluates; the other ranks return ``{}``
    when training ends.

    A run uses the threads it finds (``torch.get_num_threads()``; the study's commands set them beside the machine's
    other training processes, :mod:`ftcl_core.study.threads`).  A step whose features, loss or gradient is not
    finite stops the run:
    :class:`TrainingDiverged`, the last good checkpoint kept.  Ctrl-C (or SIGTERM turned into :class:`Terminated`)
    is :class:`TrainingInterrupted`: the lock is released and the same call resumes from the last checkpoint,
    reproducing the uninterrupted run exactly on CPU.
    """
    cfg = as_config(cfg)  # a dict (a stored config, say) is parsed and checked here
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1):
        raise ConfigError(f"max_steps={max_steps!r} must be a whole number of steps >= 1, or None for the whole run.")
    run = RunDir(check_run_folder(out))  # a folder (or none yet), not "", a file, the current folder, a user's folder
    check_compatible(run, cfg)
    if run.is_complete():
        run.restore_config(cfg)  # its damaged config.yaml was deleted: the recovery RunDir.load_config gives
        run.check_finished_checkpoint()  # whole, and of the last epoch: readouts copied in are not this run's
        return run.load_complete()
    device = distributed.init_from_env(resolve_device(cfg))
    exact_float32(cfg, device)
    data = load_data_rank0_first(cfg)
    check_data(cfg, *data)
    main = distributed.is_main()
    if main:
        try:
            run.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(f"--out {run.path} cannot be made ({err.strerror or err}): name a folder you can write.") from err
    with run_lock(run.path) if main else contextlib.nullcontext():
        if main:
            check_compatible(run, cfg)
            _remove_stale(run)
        if distributed.broadcast_flag(run.is_complete() if main else False):  # the others wait here for rank 0's lock
            return run.load_eval() if main else {}
        return _train_locked(cfg, run, device, progress, max_steps, data)


def build_optimizer(cfg: RunConfig, model: torch.nn.Module, device: str) -> torch.optim.Optimizer:
    """SGD over the trainable parameters (not MoCo's key encoder nor BYOL's target); fused on CUDA."""
    o = cfg.optim
    fused = o.fused if o.fused != "auto" else device.startswith("cuda")
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.SGD(params, lr=o.lr, momentum=o.momentum, weight_decay=o.weight_decay,
                           **({"fused": True} if fused else {}))


def _train_locked(cfg: RunConfig, run: RunDir, device: str, progress: bool, max_steps: int | None,
                  data: tuple[ImageSet, ImageSet]) -> dict:
    """The loop: model and optimiser from ``cfg``, on ``data`` (the train and held-out sets, checked); resume from
    the checkpoint; per epoch, the steps on shuffled batches, then a checkpoint; at the end, the evaluation."""
    main = distributed.is_main()
    if main:
        write_yaml(run.config, cfg.to_dict())
    train_set, test_set = data
    bs, epochs = cfg.train.batch_size, cfg.train.epochs
    aug, nhwc = augment_config(cfg), channels_last(cfg)
    steps_per_epoch, n_total = len(train_set) // bs, (bs if distributed.world_size() > 1 else None)
    steps = epochs * steps_per_epoch if max_steps is None else min(max_steps, epochs * steps_per_epoch)
    model, net = prepare_model(cfg, device, steps)
    with_labels = model.needs_labels  # a method that reads the batch's classes says so
    optimizer = build_optimizer(cfg, model, device)
    gen = torch.Generator().manual_seed(cfg.seed)  # the same stream on every rank
    draws = ft_device_draws(cfg, device)  # FT's generator on the device (CUDA), or None: FT draws from gen
    log = TrainingLog(layer_names(model.online), cfg.stats.sync_every, cfg.stats.grad_norms_per_step)
    start_epoch, train_s, draws = checkpoints.resume(run, model, optimizer, gen, log, steps_per_epoch, device, draws)
    ctx = StepContext.from_config(cfg, gen, net if net is not model else None, draws)
    auto = auto_start(cfg, log, start_epoch, steps_per_epoch)  # ft.start=auto: the run's own rule, replayed
    total = epochs * steps_per_epoch
    bar = _progress(total=total, initial=start_epoch * steps_per_epoch, enabled=progress and main)
    stop = step_callback(stop_before(max_steps)) if max_steps is not None else contextlib.nullcontext()
    # on the CPU every step is checked as it ends (nothing to wait for); on a GPU at each flush, before a checkpoint
    watch = DivergenceWatch(run, cfg, total, every_step=not str(device).startswith("cuda"))
    step, saved = start_epoch * steps_per_epoch, start_epoch  # the step running; the epoch a resume starts from
    try:
        with stop:
            for epoch in range(start_epoch, epochs):
                t_epoch = time.perf_counter()
                model.train()
                model.start_epoch(epoch, steps_per_epoch, log.recorder.as_arrays)
                order = torch.randperm(len(train_set), generator=gen)
                for i, (x, labels) in enumerate(batches(train_set, order, bs, device, with_labels)):
                    step = epoch * steps_per_epoch + i
                    for observer in _OBSERVERS:
                        observer.step(step)
                    lr = set_learning_rate(optimizer, cfg, step, steps_per_epoch)
                    model.start_step(epoch, step, epochs * steps_per_epoch)  # BYOL's target momentum, SwAV's prototypes
                    views = make_views(x, aug, gen, nhwc, n_total)
                    ft_on = auto.on if auto is not None else epoch >= cfg.ft.start_epoch
                    step_ctx = dataclasses.replace(ctx, ft_active=ft_on, labels=labels)
                    out = train_step(model, optimizer, views, step_ctx)
                    log.record(step, epoch, lr, out.values, out.grad_norms, out.histogram)
                    watch.add(step, epoch, out.health, saved)
                    bar.update(1)
                    if (i + 1) % cfg.stats.sync_every == 0 or i + 1 == steps_per_epoch:
                        log.recorder.flush()
                        watch.check(saved)
                step = (epoch + 1) * steps_per_epoch
                loss = log.end_epoch(steps_per_epoch)
                if auto is not None and distributed.broadcast_flag(auto.update(loss)):  # every process follows the first's
                    auto.switch_on(epoch + 1)
                train_s += time.perf_counter() - t_epoch
                bar.set_postfix(loss=f"{loss:.3f}", epoch=epoch + 1)
                if (epoch + 1) % cfg.train.checkpoint_every == 0 or epoch + 1 == epochs:
                    distributed.average_batchnorm_buffers(model)  # what one process with split-BN holds
                    if main:
                        checkpoints.save(run, model, optimizer, gen, epoch + 1, train_s, log, draws, cfg)
                        for observer in _OBSERVERS:
                            observer.checkpoint(run, epoch + 1)
                    saved = epoch + 1
        if not main:  # rank 0 evaluates and writes eval.json; no collective waits on that
            return {}
        # ft.start=auto: where FT switched on (None: never; a decision at the last epoch's end trained no FT step)
        switched = {} if auto is None else {
            "ft_start_epoch": auto.start_epoch if auto.start_epoch is not None and auto.start_epoch < epochs else None}
        return _finish(run, cfg, model, train_set, test_set, aug, device, train_s, steps, draws, switched)
    except StopTraining:  # a step callback ended the loop (train(max_steps=...)): no checkpoint, no evaluation
        return {"metrics": log.recorder.as_arrays()}
    except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM (Terminated) from the command line's handler
        raise interrupted(err, run, step, total, saved, epochs) from None
    finally:
        bar.close()


def auto_start(cfg: RunConfig, log: TrainingLog, start_epoch: int, steps_per_epoch: int) -> PlateauStart | None:
    """The rule that switches FT on for ``ft.start=auto`` (:class:`ftcl_core.ft.PlateauStart`), having read the
    mean loss of each epoch the log holds before ``start_epoch`` (a resumed run decides as the uninterrupted one
    did); None for a run whose FT starts at ``ft.start_epoch``."""
    if cfg.ft.start != "auto" or not cfg.ft.any:
        return None
    rule = PlateauStart(cfg.ft.auto_window, cfg.ft.auto_fraction)
    for loss in log.epoch_losses(steps_per_epoch)[:start_epoch]:
        if rule.update(loss):
            break
    return rule


def interrupted(err: KeyboardInterrupt, run: RunDir, step: int, total: int, saved: int, epochs: int
                ) -> TrainingInterrupted:
    """The one-line :class:`TrainingInterrupted` of a run stopped by ``err`` at ``step`` of ``total``, whose last
    checkpoint resumes from epoch ``saved`` (the loop's count: a checkpoint is counted once written)."""
    sig = signal.SIGTERM if isinstance(err, Terminated) else signal.SIGINT
    if distributed.is_main():  # a signal after the checkpoint's rename, before the loop counted it: the file knows
        saved = max(saved, (read_seal(run.checkpoint) or {}).get("epoch", 0))
    what = "evaluates it again (training is complete)" if saved == epochs else (
        f"resumes from epoch {saved}" if saved else "starts it again from epoch 0 (no epoch was checkpointed yet)")
    return TrainingInterrupted(f"interrupted at step {step} of {total} ({sig.name}); the same command {what} "
                               f"(run folder {run.path}).", int(sig))


def batches(train_set: ImageSet, order: torch.Tensor, batch_size: int, device: str, with_labels: bool = False
            ) -> Iterator[tuple[torch.Tensor, torch.Tensor | None]]:
    """The epoch's batches in ``order`` (a partial last batch dropped): this process's rows of each on the
    device, and the whole batch's labels where ``with_labels`` (the diagnosis oracle only)."""
    world, rank = distributed.world_size(), distributed.rank()
    for i in range(len(order) // batch_size):
        batch = order[i * batch_size : (i + 1) * batch_size]
        x = host_to_device(train_set.images[batch[rank::world]], device)
        yield x, (train_set.labels[batch].to(device) if with_labels else None)


def set_learning_rate(optimizer: torch.optim.Optimizer, cfg: RunConfig, step: int, steps_per_epoch: int) -> float:
    """Set (and return) the :func:`learning_rate` of ``step`` on every parameter group."""
    lr = learning_rate(cfg, step, steps_per_epoch)
    for group in optimizer.param_groups:
        group["lr"] = lr
    return lr


class DivergenceWatch:
    """The steps' health flags (:func:`step_health`), checked as each step ends (``every_step``, the CPU) or when
    :meth:`check` is called (a GPU's flush, so that no step waits on the device): the first step whose features,
    loss or gradient is not finite stops the run with :class:`TrainingDiverged`, before any later checkpoint."""

    def __init__(self, run: RunDir, cfg: RunConfig, total: int, every_step: bool) -> None:
        self.run, self.cfg, self.total, self.every_step = run, cfg, total, every_step
        self._pending: list[tuple[int, int, torch.Tensor]] = []

    def add(self, step: int, epoch: int, health: torch.Tensor | None, saved: int) -> None:
        """Record one step's flags (``saved``: the epoch the last checkpoint resumes from)."""
        if health is not None:
            self._pending.append((step, epoch, health))
        if self.every_step:
            self.check(saved)

    def check(self, saved: int) -> None:
        """Raise :class:`TrainingDiverged` for the first pending step that is not finite; forget the others."""
        if not self._pending:
            return
        flags = torch.stack([h for _, _, h in self._pending]).cpu().numpy()
        pending, self._pending = self._pending, []
        bad = ~flags.all(axis=1)
        if bad.any():
            first = int(np.argmax(bad))
            step, epoch, _ = pending[first]
            raise self.diverged(step, epoch, HEALTH[int(np.argmin(flags[first]))], saved)

    def diverged(self, step: int, epoch: int, quantity: str, saved: int) -> TrainingDiverged:
        """The one-line error of a divergence (and its record, ``status.json``, in the run folder)."""
        cfg, run = self.cfg, self.run
        if distributed.is_main():
            write_json(run.path / "status.json", {"status": "diverged", "step": step, "epoch": epoch,
                                                  "quantity": quantity})
        tau = f" or raise {cfg.method}.tau (now {cfg.tau:g})" if cfg.tau is not None else ""
        kept = (f"the last good checkpoint (epoch {saved}) is kept in {run.path}" if saved else
                f"no epoch was checkpointed yet in {run.path}")
        return TrainingDiverged(
            f"training diverged at step {step} of {self.total} (epoch {epoch}): the {quantity} became NaN or infinite, "
            f"most likely a learning rate too high for this run (optim.lr={cfg.optim.lr:g}); {kept}. Lower optim.lr "
            f"(the configs/ recipes train at 0.03 to 0.6){tau} and train into a new --out."
        )


def _finish(run, cfg: RunConfig, model, train_set, test_set, aug, device, train_s, steps: int,
            draws: DeviceDraws | None = None, extra: dict | None = None) -> dict:
    e = cfg.eval
    kw = dict(device=device, knn_k=e.knn_k, knn_t=e.knn_t, linear_epochs=e.linear_epochs,
              linear_lr=e.linear_lr, seed=cfg.seed)
    t0 = time.perf_counter()
    result = evaluate_backbone(model.online.backbone, train_set, test_set, aug, **kw)
    if e.random_init:
        rand = evaluate_backbone(build_model(cfg).online.backbone.to(device), train_set, test_set, aug, **kw)
        result.update({"random_init_knn_top1": rand["knn_top1"], "random_init_linear_top1": rand["linear_top1"]})
    if e.raw_pixels is True or (e.raw_pixels == "auto" and cfg.data.name != "shapes"):
        result["raw_pixels_linear_top1"] = raw_pixel_readout(train_set, test_set, aug, e.linear_epochs, e.linear_lr,
                                                             cfg.seed)
    eval_s = time.perf_counter() - t0
    result.update({**(extra or {}), "train_s": train_s, "eval_s": eval_s, "wall_s": train_s + eval_s,
                   "config_sha256": config_digest(cfg)})  # binds the readouts to what made them
    write_json(run.provenance, {**provenance(device, cfg.seed), "status": "complete", "world_size": distributed.world_size(),
                                "execution": {**execution_path(cfg, device, steps),
                                              "ft_draws": "host" if draws is None else "device"},
                                "train_s": train_s, "eval_s": eval_s, "files": run.file_digests(),
                                "readouts": readouts_digest(json.loads(json.dumps(result))),  # as eval.json reads back
                                "config": cfg.to_dict()})  # what made the readouts, kept if config.yaml is lost
    write_json(run.eval, result)  # last: its presence marks the run complete
    return result


def _progress(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, desc="train", unit="step", dynamic_ncols=True)
