"""What a run keeps while it trains, and how it resumes: the per-step metrics, the layers' gradient norms, the
score histograms (:class:`TrainingLog`) and the checkpoint (model, optimiser, epoch, every RNG state).

Each epoch's save writes the metrics first and the checkpoint last (each file atomically), so on resume the
metrics are cut back to the checkpoint's step; resuming after a ``kill -9`` reproduces the uninterrupted run
exactly on CPU, because every random draw comes from one ``torch.Generator`` whose state is checkpointed.
"""

from __future__ import annotations

import numpy as np
import torch

from ftcl_core import distributed as D
from ftcl_core.runs import RunDir, one_line, write_npz, write_torch
from ftcl_core.stats import REPRESENTATION_COLUMNS, SCORE_COLUMNS, StepRecorder

METRIC_COLUMNS = ("epoch", "lr", "loss", "top1") + SCORE_COLUMNS + REPRESENTATION_COLUMNS
CHECKPOINT_FORMAT = 1


class IncompatibleCheckpoint(RuntimeError):
    """A run folder's checkpoint or config does not match the config asked for, or its checkpoint cannot be read."""


class TrainingLog:
    """The per-step metrics (:data:`METRIC_COLUMNS`), per-epoch (and optionally per-step) layer gradient norms
    and optional score histograms of a run, as the steps produce them on the device."""

    def __init__(self, layer_names: list[str], sync_every: int, grad_norms_per_step: bool = False) -> None:
        self.recorder = StepRecorder(METRIC_COLUMNS, sync_every=sync_every)
        self.layer_names = layer_names
        self.grad_norms_per_step = grad_norms_per_step
        self.grad_epoch: list[np.ndarray] = []
        self.grad_steps: list[np.ndarray] = []
        self.histograms: list[torch.Tensor] = []
        self._grad_sum: torch.Tensor | None = None

    def record(self, step: int, epoch: int, lr: float, values: torch.Tensor, grad_norms: torch.Tensor,
               histogram: torch.Tensor | None = None) -> None:
        """One step's values (``METRIC_COLUMNS[2:]``), gradient norms and histogram; nothing synchronised."""
        if histogram is not None:
            self.histograms.append(histogram)
        self._grad_sum = grad_norms if self._grad_sum is None else self._grad_sum + grad_norms
        if self.grad_norms_per_step:
            self.grad_steps.append(grad_norms.cpu().numpy())
        self.recorder.record(step, torch.cat([torch.tensor([epoch, lr], device=values.device), values]))

    def end_epoch(self, steps: int) -> float:
        """Close an epoch of ``steps`` steps: its mean gradient norms; returns its mean loss."""
        losses = np.asarray([r[1 + METRIC_COLUMNS.index("loss")] for r in self.recorder.rows[-steps:]])
        self.grad_epoch.append((self._grad_sum / steps).cpu().numpy())
        self._grad_sum = None
        return float(losses.mean())

    def load(self, run: RunDir, epochs: int, steps_per_epoch: int) -> None:
        """The stored log of ``run`` up to the end of epoch ``epochs`` (where its checkpoint was written)."""
        steps = epochs * steps_per_epoch
        self.recorder.load(run.load_metrics(), upto_step=steps)
        g = run.load_grad_norms()
        self.grad_epoch = list(g["per_epoch"][:epochs])
        if "per_step" in g:
            self.grad_steps = list(g["per_step"][:steps])
        if run.histograms.is_file():
            self.histograms = list(torch.from_numpy(run.load_histograms()["counts"][:steps]))

    def save(self, run: RunDir) -> None:
        write_npz(run.metrics, self.recorder.as_arrays())
        grads = {"per_epoch": np.stack(self.grad_epoch), "layers": np.asarray(self.layer_names)}
        if self.grad_steps:
            grads["per_step"] = np.stack(self.grad_steps)
        write_npz(run.grad_norms, grads)
        if self.histograms:  # (steps, 2, bins): positive and negative score counts over [-1, 1]
            write_npz(run.histograms, {"counts": torch.stack([h.cpu() for h in self.histograms]).numpy()})


def save(run: RunDir, model: torch.nn.Module, optimizer: torch.optim.Optimizer, gen: torch.Generator, epoch: int,
         train_s: float, log: TrainingLog) -> None:
    """The log first, the checkpoint last: on resume, the log is cut back to the checkpoint's step."""
    log.save(run)
    write_torch(run.checkpoint, {
        "format": CHECKPOINT_FORMAT, "epoch": epoch, "train_s": train_s,
        "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "rng": {"gen": gen.get_state(), "torch": torch.get_rng_state()},
        "world_size": D.world_size(),
    })


def resume(run: RunDir, model: torch.nn.Module, optimizer: torch.optim.Optimizer, gen: torch.Generator,
           log: TrainingLog, steps_per_epoch: int, device: str) -> tuple[int, float]:
    """Restore model, optimiser, RNG states and log from ``run``'s checkpoint, if it has one; returns the epoch
    to start from and the training seconds so far (0, 0.0 for a new run)."""
    if not run.checkpoint.is_file():
        return 0, 0.0
    state = load(run, model, optimizer, device)
    if state.get("world_size", 1) != D.world_size():
        raise IncompatibleCheckpoint(
            f"{run.checkpoint} was written by {state.get('world_size', 1)} process(es), this run has "
            f"{D.world_size()}: batch-norm groups, sharding and random draws would change. Resume with "
            f"--nproc_per_node={state.get('world_size', 1)}, or use another --out."
        )
    gen.set_state(state["rng"]["gen"])
    torch.set_rng_state(state["rng"]["torch"])
    log.load(run, state["epoch"], steps_per_epoch)
    return state["epoch"], state["train_s"]


def load(run: RunDir, model: torch.nn.Module, optimizer: torch.optim.Optimizer, device: str) -> dict:
    """The checkpoint of ``run`` loaded into ``model`` and ``optimizer``; the whole stored state."""
    try:
        state = torch.load(run.checkpoint, map_location=device, weights_only=True)
        if not isinstance(state, dict):
            raise TypeError(f"it holds a {type(state).__name__}, not a checkpoint's mapping")
    except Exception as err:  # unpickling errors come in many types, and their messages in many lines
        what = "empty" if run.checkpoint.stat().st_size == 0 else one_line(err)
        raise IncompatibleCheckpoint(
            f"{run.checkpoint} cannot be read ({what}): it is damaged (cut short or overwritten) or was not written "
            "by this version of ftcl_core. Delete it and run the same command again: the run trains anew from its "
            "first step (its log so far is replaced); or use another --out."
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
