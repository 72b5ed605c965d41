"""The run store: run folders, atomic writes and provenance (configs: :mod:`ftcl_core.config`).

A run is a folder::

    config.yaml      the full resolved config
    metrics.npz      per-step columns (loss, lr, contrastive top-1, score statistics ...)
    grad_norms.npz   per-epoch (and optionally per-step) layer gradient L2 norms, with layer names
    histograms.npz   optional per-step score histograms (stats.histograms=true)
    checkpoint.pt    model, momentum encoder, queue, pointer, optimizer, step and every RNG state
    eval.json        linear_top1, knn_top1, random_init_linear_top1, ... and wall_s
    provenance.json  commit, versions, device, seed, wall time, status

Every file is written to a temporary name and renamed into place, so a crash never leaves a file that
loads wrong; a run is complete when ``eval.json`` exists.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from ftcl_core.config import DEFAULTS, ConfigError, RunConfig


class RunFileError(ValueError):
    """A run folder's file cannot be read or written; the message names the file and how to recover."""


# ---------------------------------------------------------------------------------------------------
# Atomic file writes
# ---------------------------------------------------------------------------------------------------


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it, and rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; run files are meant to be shared
        os.replace(tmp, path)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            what = "no space left on the device" if err.errno == errno.ENOSPC else f"{type(err).__name__}: {err.strerror or err}"
            raise RunFileError(
                f"could not write {path} ({what}). Nothing was half-written: {path.parent} holds the files of the last "
                "complete save. Free the space (or fix the cause) and run the same command again: it resumes from there."
            ) from err
        raise


def write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def write_yaml(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_bytes(path, yaml.safe_dump(obj, sort_keys=False).encode())


def write_npz(path: str | os.PathLike, arrays: dict) -> None:
    import numpy as np

    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue())


def write_torch(path: str | os.PathLike, obj: Any) -> None:
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, buf.getvalue())


# ---------------------------------------------------------------------------------------------------
# Provenance and the run store
# ---------------------------------------------------------------------------------------------------


def git_commit(cwd: str | os.PathLike | None = None) -> dict:
    """The repository's HEAD commit and whether the work tree had uncommitted changes."""
    cwd = cwd or Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return {"commit": None, "dirty": None}
        return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


# The commit of the code this process runs: read once, when ftcl_core is imported, since a long sweep keeps
# running the code it imported while the work tree moves on.
CODE_COMMIT = git_commit()


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), e.g. "AMD EPYC 9B14": float kernels, and so the last bits of a
    run's numbers, differ between CPU kinds."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def provenance(device: str, seed: int) -> dict:
    """Commit (of the code this process imported), package versions, device and seed of a run."""
    import numpy
    import torch
    import torchvision

    import ftcl_core

    dev_name = platform.processor() or platform.machine()
    if device.startswith("cuda") and torch.cuda.is_available():
        dev_name = torch.cuda.get_device_name(torch.device(device))
    return {
        **CODE_COMMIT,
        "versions": {
            "python": platform.python_version(), "torch": torch.__version__,
            "torchvision": torchvision.__version__, "numpy": numpy.__version__, "ftcl_core": ftcl_core.__version__,
        },
        "device": device, "device_name": dev_name, "cpu_model": cpu_model(), "threads": torch.get_num_threads(),
        "platform": platform.platform(), "seed": seed,
    }


class RunDir:
    """Paths and loaders of one run folder."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    config = property(lambda self: self.path / "config.yaml")
    metrics = property(lambda self: self.path / "metrics.npz")
    grad_norms = property(lambda self: self.path / "grad_norms.npz")
    histograms = property(lambda self: self.path / "histograms.npz")
    checkpoint = property(lambda self: self.path / "checkpoint.pt")
    eval = property(lambda self: self.path / "eval.json")
    provenance = property(lambda self: self.path / "provenance.json")

    def is_complete(self) -> bool:
        return self.eval.is_file()

    def load_config(self) -> RunConfig:
        """The run's config, parsed (keys added since the run take their defaults; old keys map onto new ones)."""
        try:
            cfg = yaml.safe_load(self.config.read_text())
        except yaml.YAMLError as err:
            cfg = err
        if not isinstance(cfg, dict) or not set(cfg) <= set(DEFAULTS):
            what = (f"sections {sorted(set(cfg) - set(DEFAULTS))} that no config has" if isinstance(cfg, dict)
                    else f"not a YAML mapping: {str(cfg).splitlines()[0][:120]}")
        else:
            try:
                return RunConfig.from_dict(cfg)
            except ConfigError as err:
                what = str(err)
        raise RunFileError(
            f"{self.config} is damaged ({what}). If the folder holds "
            "a run of the config you are asking for, delete this file and run the same command: it is rewritten "
            "and training resumes from the checkpoint; otherwise move the folder away or use another --out."
        )

    def load_eval(self) -> dict:
        try:
            result = json.loads(self.eval.read_text())
        except json.JSONDecodeError as err:
            result = err
        if not isinstance(result, dict):
            raise RunFileError(
                f"{self.eval} is damaged (not a JSON object: {result}). Delete it and run the same command: the run "
                "is evaluated again from its final checkpoint."
            )
        return result

    def load_provenance(self) -> dict:
        return json.loads(self.provenance.read_text()) if self.provenance.is_file() else {}

    def load_metrics(self) -> dict:
        import numpy as np

        with np.load(self.metrics) as z:
            return {k: z[k] for k in z.files}

    def load_grad_norms(self) -> dict:
        import numpy as np

        with np.load(self.grad_norms, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}


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
