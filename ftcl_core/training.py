"""Training MoCo (v1/v2) with the feature transformations, into a resumable run folder.

:func:`train` is the whole loop: build data and model from a config, resume from the folder's
checkpoint if there is one, train with a progress bar, record the score statistics and gradient norms,
checkpoint every epoch (atomically), and evaluate at the end.  Resuming after a ``kill -9`` reproduces
the uninterrupted run's metrics exactly on CPU, because every random draw comes from one
``torch.Generator`` whose state is checkpointed.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ftcl_core import augment as A
from ftcl_core.data import ImageSet, load_image_folder, load_torchvision, read_class_list, shapes_splits
from ftcl_core.evaluation import evaluate_backbone
from ftcl_core.losses import FTConfig, info_nce, logits_from_scores, moco_ft_logits, moco_logits
from ftcl_core.models import Encoder, MoCo, build_encoder, projection_head
from ftcl_core.runs import (
    ConfigError,
    RunDir,
    config_diff,
    provenance,
    validate,
    write_json,
    write_npz,
    write_torch,
    write_yaml,
)
from ftcl_core.stats import (
    SCORE_COLUMNS,
    StepRecorder,
    layer_grad_norms,
    layer_names,
    score_histogram,
    score_statistics,
)

METRIC_COLUMNS = ("epoch", "lr", "loss", "top1") + SCORE_COLUMNS
CHECKPOINT_FORMAT = 1


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint is kept."""


class IncompatibleCheckpoint(RuntimeError):
    """A run folder's checkpoint or config does not match the config asked for."""


def load_data(cfg: dict) -> tuple[ImageSet, ImageSet]:
    """Train and test :class:`ImageSet` s for ``cfg['data']``."""
    d = cfg["data"]
    if d["name"] == "shapes":
        return shapes_splits(d["n_train"], d["n_test"], size=d["image_size"], seed=cfg["seed"])
    if d["name"] == "imagefolder":
        if not d["root"]:
            raise ConfigError("data.name=imagefolder needs data.root=<folder of class folders>.")
        classes = read_class_list(d["class_list"]) if d["class_list"] else None
        train = load_image_folder(d["root"], d["image_size"], classes, d["max_per_class"])
        test_root = d["test_root"] or d["root"]
        return train, load_image_folder(test_root, d["image_size"], list(train.classes), d["max_per_class"])
    if d["name"] in ("cifar10", "cifar100", "stl10"):
        root = d["root"] or "datasets"
        return (load_torchvision(d["name"], root, True, d["download"]),
                load_torchvision(d["name"], root, False, d["download"]))
    raise ConfigError(f"unknown data.name={d['name']!r}; choose shapes, imagefolder, cifar10, cifar100 or stl10.")


def augment_config(cfg: dict) -> A.AugmentConfig:
    a = cfg["augment"]
    base = A.moco_v1(a["out_size"]) if a["preset"] == "v1" else A.moco_v2(a["out_size"])
    extra = {"crop_scale": tuple(a["crop_scale"])}
    if a.get("blur_sigma") is not None:
        extra["blur_sigma"] = tuple(a["blur_sigma"])
    return A.AugmentConfig(**{**base.__dict__, **extra})


def build_model(cfg: dict) -> MoCo:
    """The MoCo model of a config, initialised from ``cfg['seed']``."""
    torch.manual_seed(cfg["seed"])
    backbone = build_encoder(cfg["model"]["encoder"], bn_splits=cfg["model"]["bn_splits"])
    head = projection_head(backbone.out_dim, cfg["model"]["dim"], cfg["model"]["mlp"])
    return MoCo(Encoder(backbone, head), cfg["model"]["dim"], cfg["moco"]["queue_size"],
                cfg["moco"]["momentum"], seed=cfg["seed"])


def learning_rate(cfg: dict, step: int, steps_per_epoch: int) -> float:
    """Linear warm-up, then cosine (MoCo v2) or step decay x0.1 at the milestones (MoCo v1, the paper)."""
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


def train_step(model: MoCo, optimizer: torch.optim.Optimizer, x: torch.Tensor, aug: A.AugmentConfig,
               ft: FTConfig, ft_active: bool, tau: float, gen: torch.Generator,
               n_stats: int = 64, record_stats: bool = True, histogram_bins: int = 0,
               views: tuple[torch.Tensor, torch.Tensor] | None = None) -> StepOutput:
    """One MoCo step: two views, FT inside the loss (eq. 3, Sec 4.2), InfoNCE (eq. 1), SGD, enqueue.

    With ``record_stats`` the Supp A statistics (raw cosines and after FT) and the Supp C layer
    gradient norms are computed on the device; nothing is synchronised here.  ``views`` passes two
    already augmented batches instead of ``x`` (benchmarks of the model step alone).
    """
    x_q, x_k = views if views is not None else (A.augment(x, aug, gen), A.augment(x, aug, gen))
    q, k = model(x_q, x_k, gen)
    l_pos, l_neg = moco_ft_logits(q, k, model.queue, ft, gen, active=ft_active)
    logits = logits_from_scores(l_pos, l_neg, tau)
    loss = info_nce(logits)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    values = norms = hist = None
    if histogram_bins:
        hist = score_histogram(l_pos, l_neg, n_stats, histogram_bins)
    if record_stats:
        ft_stats = score_statistics(l_pos, l_neg, n_stats)
        if ft_active and ft.any:
            raw_stats = score_statistics(*moco_logits(q[:n_stats].detach(), k[:n_stats], model.queue), n_stats)
        else:
            raw_stats = ft_stats
        top1 = (logits.detach().argmax(1) == 0).float().mean() * 100
        values = torch.cat([loss.detach().view(1), top1.view(1), raw_stats, ft_stats])
        norms = layer_grad_norms(model.encoder_q)
    optimizer.step()
    model.enqueue(k)  # clean keys only, after the loss used the old queue
    return StepOutput(loss.detach(), values, norms, hist)


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
    """
    validate(cfg)
    run = RunDir(out)
    _check_compatible(run, cfg)
    if run.is_complete():
        return run.load_eval()
    run.path.mkdir(parents=True, exist_ok=True)
    with run_lock(run.path):
        _check_compatible(run, cfg)
        if run.is_complete():
            return run.load_eval()
        return _train_locked(cfg, run, progress, max_steps)


@contextlib.contextmanager
def run_lock(path: Path):
    """An exclusive advisory lock on a run folder (``.lock``), released when the process ends or exits."""
    import fcntl

    with open(path / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _train_locked(cfg: dict, run: RunDir, progress: bool, max_steps: int | None = None) -> dict:
    write_yaml(run.config, cfg)

    device = cfg["device"]
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError("device=cuda but no CUDA device is visible; use device=cpu or device=auto.")
    train_set, test_set = load_data(cfg)
    bs = cfg["train"]["batch_size"]
    if len(train_set) < bs:
        raise ConfigError(f"the training set holds {len(train_set)} images, fewer than train.batch_size={bs}.")
    aug = augment_config(cfg)
    ft = FTConfig(**cfg["ft"])
    model = build_model(cfg).to(device)
    optimizer = torch.optim.SGD(model.encoder_q.parameters(), lr=cfg["optim"]["lr"],
                                momentum=cfg["optim"]["momentum"], weight_decay=cfg["optim"]["weight_decay"])
    gen = torch.Generator().manual_seed(cfg["seed"])
    steps_per_epoch = len(train_set) // bs
    epochs = cfg["train"]["epochs"]
    names = layer_names(model.encoder_q)
    recorder = StepRecorder(METRIC_COLUMNS, sync_every=cfg["stats"]["sync_every"])
    grad_epoch: list[np.ndarray] = []
    grad_steps: list[np.ndarray] = []
    histograms: list = []
    start_epoch, train_s = 0, 0.0

    if run.checkpoint.is_file():
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
    kill_at = int(os.environ.get("FTCL_TEST_KILL_AT_STEP", "-1"))  # test hook: simulate a crash
    bar = _progress(total=epochs * steps_per_epoch, initial=start_epoch * steps_per_epoch, enabled=progress)
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
            x = images[order[i * bs : (i + 1) * bs]].to(device, non_blocking=True)
            out = train_step(model, optimizer, x, aug, ft, ft_active, cfg["moco"]["tau"], gen,
                             cfg["stats"]["n_queries"], histogram_bins=50 if cfg["stats"]["histograms"] else 0)
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
        if (epoch + 1) % cfg["train"]["checkpoint_every"] == 0 or epoch + 1 == epochs:
            _save(run, model, optimizer, gen, epoch + 1, train_s, recorder, names, grad_epoch, grad_steps,
                  histograms)
    bar.close()
    return _finish(run, cfg, model, train_set, test_set, aug, device, train_s)


def replay(run_path: str | os.PathLike, n_steps: int) -> dict:
    """Re-run the first ``n_steps`` of a stored run from its config and return the per-step metrics, so
    that stored results can be checked against the code that claims to have made them."""
    import tempfile

    cfg = RunDir(run_path).load_config()
    with tempfile.TemporaryDirectory() as tmp:
        return train(cfg, tmp, progress=False, max_steps=n_steps)["metrics"]


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
    })


def _finish(run, cfg, model, train_set, test_set, aug, device, train_s) -> dict:
    e = cfg["eval"]
    kw = dict(device=device, knn_k=e["knn_k"], knn_t=e["knn_t"], linear_epochs=e["linear_epochs"],
              linear_lr=e["linear_lr"], seed=cfg["seed"])
    t0 = time.perf_counter()
    result = evaluate_backbone(model.encoder_q.backbone, train_set, test_set, aug, **kw)
    if e["random_init"]:
        rand = evaluate_backbone(build_model(cfg).encoder_q.backbone.to(device), train_set, test_set, aug, **kw)
        result.update({"random_init_knn_top1": rand["knn_top1"], "random_init_linear_top1": rand["linear_top1"]})
    eval_s = time.perf_counter() - t0
    result.update({"train_s": train_s, "eval_s": eval_s, "wall_s": train_s + eval_s})
    write_json(run.provenance, {**provenance(device, cfg["seed"]), "status": "complete",
                                "train_s": train_s, "eval_s": eval_s})
    write_json(run.eval, result)  # last: its presence marks the run complete
    return result


def _progress(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, desc="train", unit="step", dynamic_ncols=True)
