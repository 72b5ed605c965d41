"""What a run keeps while it trains, and how it resumes: the per-step metrics, the layers' gradient norms, the
score histograms (:class:`TrainingLog`) and the checkpoint (model, optimiser, epoch, every RNG state).

Each epoch's save writes the metrics first and the checkpoint last (each file atomically), so on resume the
metrics are cut back to the checkpoint's step; resuming after a ``kill -9`` reproduces the uninterrupted run
exactly on CPU, because every random draw comes from one ``torch.Generator`` whose state is checkpointed.  A run
whose FT draws on the device (``train.ft_draws``, :class:`~ftcl_core.transforms.DeviceDraws`) checkpoints that
generator's state too (``rng.ft_gen``), so it resumes exactly as well; a checkpoint without it drew on the host.

Each checkpoint is sealed (:func:`ftcl_core.runs.seal_bytes`) with the run's config, the code's commit and its epoch,
under a sha256 checksum and a digest of the log it was written beside: a damaged one, or another run's log, is
refused on load, and the folder stays bound to its config without its ``config.yaml``
(:func:`check_compatible`, which every command that writes into a run folder asks first).  One written before seals
existed loads and resumes as before.
"""

from __future__ import annotations

import hashlib
import io
import sys

import numpy as np
import torch

from ftcl_core import distributed
from ftcl_core.config import EXECUTION_KEYS, RunConfig, _flatten, as_config, config_diff, config_mismatch
from ftcl_core.runs import CODE_COMMIT, RunDir, RunFileError, one_line, read_seal, verified_bytes, write_npz, write_torch
from ftcl_core.stats import REPRESENTATION_COLUMNS, SCORE_COLUMNS, StepRecorder
from ftcl_core.transforms import DeviceDraws

METRIC_COLUMNS = ("epoch", "lr", "loss", "top1") + SCORE_COLUMNS + REPRESENTATION_COLUMNS
CHECKPOINT_FORMAT = 1


OTHER_OUT, RUN_VALUES = "use another --out", "run the command with the run's values, or use another --out"  # train's ways round


class IncompatibleCheckpoint(RuntimeError):
    """A run folder holds another run, or a checkpoint that cannot be read: the ``problem``, ``fix`` (what to do in the
    folder) and ``elsewhere`` (what ``train`` can change instead; None: nothing); a sweep raises :meth:`instead`."""

    def __init__(self, problem: str, fix: str = "", elsewhere: str | None = OTHER_OUT) -> None:
        self.problem, self.fix, self.elsewhere = problem, fix, elsewhere
        ways = ", or ".join(w for w in (fix, elsewhere) if w)
        super().__init__(f"{problem} {ways[0].upper()}{ways[1:]}." if ways else problem)

    def instead(self, elsewhere: str) -> IncompatibleCheckpoint:  # the same refusal with another way round, if any
        return IncompatibleCheckpoint(self.problem, self.fix, elsewhere if self.elsewhere else None)


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

    def epoch_losses(self, steps_per_epoch: int) -> list[float]:
        """The mean loss of each whole epoch recorded so far (what :meth:`end_epoch` returned for it)."""
        loss = np.asarray([r[1 + METRIC_COLUMNS.index("loss")] for r in self.recorder.rows], dtype=float)
        whole = len(loss) // steps_per_epoch
        return [float(x) for x in loss[: whole * steps_per_epoch].reshape(whole, steps_per_epoch).mean(axis=1)]

    def load(self, run: RunDir, epochs: int, steps_per_epoch: int) -> None:
        """The stored log of ``run`` up to the end of epoch ``epochs`` (where its checkpoint was written)."""
        steps = epochs * steps_per_epoch
        metrics, g = run.load_metrics(), run.load_grad_norms()
        kept = np.asarray(metrics["step"])[np.asarray(metrics["step"]) < steps]
        short = [f"{run.metrics} (it holds {len(kept)} of the {steps} steps)"] * (not np.array_equal(kept, np.arange(steps)))
        short += [f"{run.grad_norms} (it holds {len(g['per_epoch'])} of the {epochs} epochs)"] * (len(g["per_epoch"]) < epochs)
        if short:  # only the log that falls short is named: the other is the run's own
            one = len(short) == 1
            raise RunFileError(f"{' and '.join(short)} {'does' if one else 'do'} not hold the log of this run's first "
                               f"{epochs} epoch(s), where its checkpoint stands: {'it was' if one else 'they were'} "
                               f"replaced or cut. Restore {'it' if one else 'them'}, or delete {run.checkpoint.name} to "
                               "train the run again from its start.")
        self.recorder.load(metrics, upto_step=steps)
        self.grad_epoch = list(g["per_epoch"][:epochs])
        if "per_step" in g:
            self.grad_steps = list(g["per_step"][:steps])
        if run.histograms.is_file():
            self.histograms = list(torch.from_numpy(run.load_histograms()["counts"][:steps]))

    def digest(self) -> str:
        """A sha256 of the log so far (every recorded step's values and each epoch's gradient norms): the checkpoint's
        seal keeps it, so a resume knows the log it reads is the run's own, not another run's of the same length."""
        self.recorder.flush()
        h = hashlib.sha256(np.ascontiguousarray(np.asarray(self.recorder.rows, dtype=np.float64)).tobytes())
        h.update(np.ascontiguousarray(np.asarray(self.grad_epoch, dtype=np.float64)).tobytes())
        return h.hexdigest()

    def histogram_digest(self) -> str | None:
        """A sha256 of the score histograms so far (None without any): sealed beside :meth:`digest`."""
        stacked = torch.stack([h.cpu() for h in self.histograms]).numpy() if self.histograms else None
        return None if stacked is None else hashlib.sha256(np.ascontiguousarray(stacked).tobytes()).hexdigest()

    def save(self, run: RunDir) -> None:
        write_npz(run.metrics, self.recorder.as_arrays())
        grads = {"per_epoch": np.stack(self.grad_epoch), "layers": np.asarray(self.layer_names)}
        if self.grad_steps:
            grads["per_step"] = np.stack(self.grad_steps)
        write_npz(run.grad_norms, grads)
        if self.histograms:  # (steps, 2, bins): positive and negative score counts over [-1, 1]
            write_npz(run.histograms, {"counts": torch.stack([h.cpu() for h in self.histograms]).numpy()})


def save(run: RunDir, model: torch.nn.Module, optimizer: torch.optim.Optimizer, gen: torch.Generator, epoch: int,
         train_s: float, log: TrainingLog, device_draws: DeviceDraws | None = None, cfg: RunConfig | None = None
         ) -> None:
    """The log first, the checkpoint last: on resume, the log is cut back to the checkpoint's step.  The checkpoint
    is sealed with ``epoch``, the code's commit and ``cfg`` (the run's config, where given).

    ``rng`` holds the host generator's state and torch's global one; with ``device_draws`` also FT's device
    generator's, as ``ft_gen: {device: its type, state: its get_state()}`` (a host-drawn run's checkpoint has no
    ``ft_gen``: byte for byte what it held before device draws existed)."""
    log.save(run)
    rng = {"gen": gen.get_state(), "torch": torch.get_rng_state()}
    if device_draws is not None:
        rng["ft_gen"] = {"device": device_draws.device.type, "state": device_draws.gen.get_state()}
    write_torch(run.checkpoint, {
        "format": CHECKPOINT_FORMAT, "epoch": epoch, "train_s": train_s,
        "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "rng": rng,
        "world_size": distributed.world_size(),
    }, seal={"epoch": epoch, **CODE_COMMIT, **({"config": cfg.to_dict()} if cfg is not None else {}),
             "log": log.digest(), "histograms": log.histogram_digest(),
             "threads": torch.get_num_threads()})  # a resume keeps the count: it rounds the sums


def resume(run: RunDir, model: torch.nn.Module, optimizer: torch.optim.Optimizer, gen: torch.Generator,
           log: TrainingLog, steps_per_epoch: int, device: str, device_draws: DeviceDraws | None = None
           ) -> tuple[int, float, DeviceDraws | None]:
    """Restore model, optimiser, RNG states and log from ``run``'s checkpoint, if it has one; returns the epoch
    to start from, the training seconds so far and where FT draws from now (0, 0.0 and ``device_draws``, the new
    run's choice, when there is no checkpoint).

    A resumed run keeps the draws it started with, whatever ``train.ft_draws`` says now (:func:`resume_draws`):
    a checkpoint without a device generator's state (every one written before device draws existed, or with
    ``train.ft_draws=host``) continues on the host generator, so the run stays one stream and resumes exactly."""
    if not run.checkpoint.is_file():
        return 0, 0.0, device_draws
    state = load(run, model, optimizer, device)
    if (by := (read_seal(run.checkpoint) or {}).get("commit")) and CODE_COMMIT["commit"] not in (by, None):
        print(f"ftcl_core: {run.checkpoint} was written by commit {by[:12]}; the run resumes with this code's "
              f"({CODE_COMMIT['commit'][:12]}).", file=sys.stderr)
    if state.get("world_size", 1) != distributed.world_size():
        raise IncompatibleCheckpoint(
            f"{run.checkpoint} was written by {state.get('world_size', 1)} process(es), this run has {distributed.world_size()}: "
            "batch-norm groups, sharding and random draws would change.", "",
            f"resume with --nproc_per_node={state.get('world_size', 1)}, or {OTHER_OUT}")
    gen.set_state(state["rng"]["gen"].cpu())  # a CPU state (loaded onto the run's device: back to the CPU)
    torch.set_rng_state(state["rng"]["torch"].cpu())
    draws = resume_draws(run, state["rng"].get("ft_gen"), device_draws, device)
    log.load(run, state["epoch"], steps_per_epoch)
    if (sealed := (read_seal(run.checkpoint) or {}).get("log")) and log.digest() != sealed:
        raise RunFileError(f"{run.metrics} and {run.grad_norms} are not the log {run.checkpoint.name} was written with "
                           f"(the first {state['epoch']} epoch(s) differ: another run's log, or edited). Restore them, "
                           f"or delete {run.checkpoint.name} to train the run again from its start.")
    if (sealed := (read_seal(run.checkpoint) or {}).get("histograms")) and log.histogram_digest() != sealed:
        raise RunFileError(f"{run.histograms} is not the score histograms {run.checkpoint.name} was written with (missing, "
                           f"cut or edited). Restore it, or delete {run.checkpoint.name} to train the run again from its start.")
    return state["epoch"], state["train_s"], draws


def resume_draws(run: RunDir, stored: dict | None, wanted: DeviceDraws | None, device: str) -> DeviceDraws | None:
    """Where a resumed run's FT draws come from: its checkpoint's device generator (``stored``, restored), or
    the host generator where the checkpoint has none.  ``wanted`` is what a new run would draw from; where the
    two differ, a line on stderr says which the run keeps.  A CUDA generator's state cannot resume off CUDA:
    :class:`IncompatibleCheckpoint`."""
    if stored is None:
        if wanted is not None:
            print(f"ftcl_core: {run.checkpoint} was written with FT's draws on the host (train.ft_draws=host, or before "
                  "device draws existed): the run resumes with them, as it started; its provenance says ft_draws: host.",
                  file=sys.stderr)
        return None
    kind = stored["device"]
    if kind == "cuda" and not device.startswith("cuda"):
        raise IncompatibleCheckpoint(
            f"{run.checkpoint} drew FT's lambdas and permutations from a CUDA generator (train.ft_draws=device or "
            f"auto on CUDA); on {device} that stream cannot continue.", "", f"resume it on CUDA (device=cuda), or {OTHER_OUT}")
    if wanted is None:
        print(f"ftcl_core: {run.checkpoint} was written with FT's draws on the device ({kind}): the run resumes with "
              "them, as it started; its provenance says ft_draws: device.", file=sys.stderr)
    draws = wanted if wanted is not None and wanted.device.type == kind else DeviceDraws(
        torch.Generator(device=device if kind == "cuda" else "cpu"))
    draws.gen.set_state(stored["state"].cpu())
    return draws


def load(run: RunDir, model: torch.nn.Module, optimizer: torch.optim.Optimizer, device: str) -> dict:
    """The checkpoint of ``run`` loaded into ``model`` and ``optimizer``; the whole stored state (a sealed one's
    checksum verified first, :func:`ftcl_core.runs.verified_bytes`)."""
    data = verified_bytes(run.checkpoint)
    try:
        state = torch.load(io.BytesIO(data), map_location=device, weights_only=True)
        if not isinstance(state, dict):
            raise TypeError(f"it holds a {type(state).__name__}, not a checkpoint's mapping")
    except Exception as err:  # unpickling errors come in many types, and their messages in many lines
        what = "empty" if run.checkpoint.stat().st_size == 0 else one_line(err)
        raise IncompatibleCheckpoint(
            f"{run.checkpoint} cannot be read ({what}): it is damaged (cut short or overwritten) or was not written "
            "by this version of ftcl_core.", "Delete it and run the same command again: the run trains anew from its "
            "first step (its log so far is replaced)") from err
    if state.get("format") != CHECKPOINT_FORMAT:
        raise IncompatibleCheckpoint(f"{run.checkpoint} has format {state.get('format')} (not {CHECKPOINT_FORMAT}).", "", None)
    try:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    except (RuntimeError, ValueError, KeyError) as err:
        raise IncompatibleCheckpoint(f"{run.checkpoint} does not fit the model of this config ({err}).") from err
    return state


def check_compatible(run: RunDir, cfg: RunConfig) -> None:
    """Refuse ``cfg`` where the run folder holds another run: against the config its checkpoint was sealed with (read
    whether or not ``config.yaml`` is there) and its ``config.yaml``, the execution keys aside; each differing key is
    named with both values; a folder holding only a ``config.yaml`` (stopped before its first checkpoint) holds nothing
    to keep, so the command's config replaces it.  A late-start fork (a checkpoint of a run without FT, at or before
    ``ft.start_epoch``, :func:`ftcl_core.study.sweeps.fork_from_prefix`) computed the same steps: it continues."""
    seal = read_seal(run.checkpoint) or {}
    stored = sealed = seal.get("config")
    fork = bool(stored) and not as_config(stored).ft.any and seal["epoch"] <= cfg.ft.start_epoch
    if fork:  # a run without FT, resumed as a late start's prefix: its config.yaml is the plain run's, and is replaced
        stored = {**stored, "ft": cfg.to_dict()["ft"]}
    trained = run.checkpoint.is_file() or run.eval.is_file()  # a config.yaml alone (stopped before epoch 1) holds no run
    if not trained and run.config.is_file():
        try:
            run.load_config()
        except RunFileError as err:  # not a run's config: a file of the user's, never replaced by the command's
            raise IncompatibleCheckpoint(f"run folder {run.path} holds a config.yaml that is not a run's ({err}); a run "
                                         "would replace it.", "Move the file") from None
    kept = [f.name for f in (run.metrics, run.grad_norms, run.histograms, run.provenance) if f.is_file()]
    if not trained and kept and not (run.config.is_file() and not config_mismatch(run.load_config(), cfg)):
        raise IncompatibleCheckpoint(f"run folder {run.path} holds {', '.join(kept)} and no checkpoint.pt, eval.json or "
                                     "config.yaml of this config: a run would write over them.", "Move them away")
    if sealed and trained and run.config.is_file() and config_diff(sealed, run.load_config()):
        edited = config_mismatch(sealed, run.load_config()).replace("(this command's)", "(its config.yaml's)")
        raise IncompatibleCheckpoint(f"run folder {run.path}: its config.yaml and its checkpoint.pt disagree, "
                                     f"{edited}: one was changed, or copied from another run, after this run began. "
                                     "An edited config.yaml: delete it (the checkpoint restores it) and run the command "
                                     "with the checkpoint's values; a checkpoint.pt of another run: delete it (the run "
                                     "trains anew from its first step).", elsewhere=None)
    if not sealed and run.is_complete() and run.config.is_file() and run.provenance.is_file():
        try:  # a finished run whose checkpoint is gone: its provenance.json records the config it ran
            made = run.load_provenance().get("config")
        except RunFileError:
            made = None  # a damaged record: the readers that need it say so
        if made and config_diff(made, run.load_config()):
            edited = config_mismatch(made, run.load_config()).replace("(this command's)", "(its config.yaml's)")
            raise IncompatibleCheckpoint(f"run folder {run.path}: its config.yaml and its provenance.json disagree, "
                                         f"{edited}: config.yaml was changed after this run ended. Delete config.yaml "
                                         "(the run's provenance.json restores it) and run the command with the run's "
                                         "values.", elsewhere=None)
    if stored and run.checkpoint.is_file() and not run.eval.is_file() and (moved := _execution_moved(stored, cfg)):
        raise IncompatibleCheckpoint(f"run folder {run.path} holds a run that executes with {moved[0]} (its checkpoint.pt); "
                                     "resumed otherwise, its numbers would no longer be the uninterrupted run's.", "",
                                     f"resume with {moved[0]}, or {OTHER_OUT}")
    for source, theirs in (("checkpoint.pt", stored), ("config.yaml", trained and run.config.is_file() and not fork
                                                        and run.load_config())):
        if theirs and (diff := config_mismatch(theirs, cfg)):
            raise IncompatibleCheckpoint(f"run folder {run.path} holds a run of another config (its {source}): {diff}.",
                                         elsewhere=RUN_VALUES)
    if run.is_complete() and run.provenance.is_file():  # a config.yaml edited where no seal is left to compare
        try:
            prov = run.load_provenance()
        except RunFileError:
            prov = {}  # a damaged record: the readers that need it say so
        if (recorded := prov.get("seed")) is not None and recorded != cfg.seed:
            raise IncompatibleCheckpoint(f"run folder {run.path} holds a run of seed {recorded} (its provenance.json), "
                                         f"not seed={cfg.seed}.", "", f"run the command with seed={recorded}, or {OTHER_OUT}")
        if (made := prov.get("config")) and (diff := config_mismatch(made, cfg)):
            raise IncompatibleCheckpoint(f"run folder {run.path} holds a run of another config (its provenance.json): "
                                         f"{diff}.", elsewhere=RUN_VALUES)


def _execution_moved(stored: dict, cfg: RunConfig) -> list[str]:
    """``key=value`` of each execution key (:data:`ftcl_core.config.EXECUTION_KEYS`, ``train.ft_draws`` aside: a
    resume keeps its draws and says so) whose value in the checkpoint's config differs from ``cfg``'s; ``device=auto``
    read as the device it resolves to on this machine."""
    theirs, ours = _flatten(as_config(stored).to_dict()), _flatten(cfg.to_dict())
    here = "cuda" if torch.cuda.is_available() else "cpu"
    for values in (theirs, ours):  # device=auto is the device it resolves to here (execution.resolve_device)
        values["device"] = here if values["device"] == "auto" else values["device"]
    return [f"{k}={theirs[k]}" for k in EXECUTION_KEYS if k != "train.ft_draws" and theirs[k] != ours[k]]
