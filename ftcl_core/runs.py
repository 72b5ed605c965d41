"""The run store: run folders, atomic writes and provenance (configs: :mod:`ftcl_core.config`).

A run is a folder::

    config.yaml      the full resolved config
    metrics.npz      per-step columns (loss, lr, contrastive top-1, score statistics ...)
    grad_norms.npz   per-epoch (and optionally per-step) layer gradient L2 norms, with layer names
    histograms.npz   optional per-step score histograms (stats.histograms=true)
    checkpoint.pt    model, momentum encoder, queue, pointer, optimizer, step and every RNG state
    eval.json        linear_top1, knn_top1, random_init_linear_top1, ... and wall_s
    provenance.json  commit, versions, device, seed, wall time, status

Beside them a run folder may hold ``.lock`` (the pid of the process training it, :func:`run_lock`),
``status.json`` (written when a step's features, loss or gradient diverged; nothing reads it back) and, after a
``kill -9`` mid-write, ``.<name>.<random>.tmp`` files (never read).

Every file is written to a temporary name and renamed into place, so a crash never leaves a file that
loads wrong; a run is complete when ``eval.json`` exists.  A file damaged all the same (a disk fault, a bad
copy, an editor) is a :class:`RunFileError` from its loader: one line naming the file, what is wrong with it
and how to recover, which the command line prints as its ``error:`` line.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ftcl_core import config as configs
from ftcl_core.config import DEFAULTS, EXECUTION_KEYS, ConfigError, RunConfig, _flatten, as_config, config_mismatch, merge


class RunFileError(ValueError):
    """A run folder's file cannot be read or written; the message names the file and how to recover."""


def one_line(err: BaseException, limit: int = 160) -> str:
    """``err`` as ``Type: message``, its first sentence only, on one line of at most ``limit`` characters: the
    cause an error message quotes (loaders' messages run over several lines and go on to advice that does not
    fit a damaged file, and an ``error:`` line is one line)."""
    text = " ".join(f"{type(err).__name__}: {err}".split()).split(". ", 1)[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _rerun(folder: Path) -> str:
    """The command that made the run in ``folder``, as a recovery names it."""
    return (f"the command that made it (python -m ftcl_core train CONFIG --out {folder}, or the sweep of its "
            "experiment file)")


def _retrain(path: Path) -> str:
    """The recovery from a damaged file that only training the run again rebuilds (the training log)."""
    return (f"It cannot be rebuilt from the checkpoint: move the folder {path.parent} away (or delete it) and run "
            f"{_rerun(path.parent)} again; the run is trained anew.")


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
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue())


def write_torch(path: str | os.PathLike, obj: Any, seal: dict | None = None) -> None:
    """``obj`` saved by ``torch.save``, written atomically (sealed with the fields ``seal``, :func:`seal_bytes`)."""
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, buf.getvalue() if seal is None else seal_bytes(buf.getvalue(), seal))


# A sealed checkpoint: torch.save's zip archive whose archive comment (which torch, as every zip reader, skips) holds
# JSON fields (the run's config, the code's commit, the epoch) and the sha256 of the archive and those fields.
_EOCD = b"PK\x05\x06"  # the zip archive's last record; its last two bytes are the comment's length


def _digest(archive: bytes, fields: dict) -> str:
    return hashlib.sha256(archive + json.dumps(fields, sort_keys=True).encode()).hexdigest()


def seal_bytes(archive: bytes, fields: dict) -> bytes:
    """``archive`` (``torch.save``'s bytes, no comment) sealed: ``fields`` and their checksum as its comment."""
    comment = json.dumps({**fields, "sha256": _digest(archive, fields)}, sort_keys=True).encode()
    assert archive[-22:-18] == _EOCD and archive[-2:] == b"\0\0" and len(comment) <= 0xFFFF, "not torch.save's bytes"
    return archive[:-2] + len(comment).to_bytes(2, "little") + comment


def _unseal(path: Path, data: bytes) -> tuple[bytes, dict | None]:
    """The archive and the seal in a checkpoint's (last) bytes; no seal (None) for a checkpoint written before seals
    existed or one that is not a whole archive (its loader says so); a garbled seal is a :class:`RunFileError`."""
    at = data.rfind(_EOCD)
    if at < 0 or int.from_bytes(data[at + 20:at + 22], "little") != len(data) - at - 22 or len(data) == at + 22:
        return data, None
    try:
        seal = json.loads(data[at + 22:])
    except ValueError:
        seal = None
    if not isinstance(seal, dict) or "sha256" not in seal:
        raise RunFileError(_damaged_checkpoint(path, "its seal, the record of its config and checksum, is garbled"))
    return data[:at + 20] + b"\0\0", seal


def _damaged_checkpoint(path: Path, what: str) -> str:
    return (f"{path} is damaged ({what}). Delete it and run the same command again: the run trains anew from its "
            "first step (its log so far is replaced); or use another --out.")


def read_seal(path: str | os.PathLike) -> dict | None:
    """The fields a checkpoint was sealed with (``config``, ``commit``, ``epoch``), read from its last bytes, the
    checksum not verified; None without a file or a seal."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - 0xFFFF - 22))
            seal = _unseal(Path(path), fh.read())[1]
    except FileNotFoundError:
        return None
    return None if seal is None else {k: v for k, v in seal.items() if k != "sha256"}


def verified_bytes(path: str | os.PathLike) -> bytes:
    """The checkpoint's bytes, a sealed one's checksum verified (a :class:`RunFileError` naming the file where its
    bytes do not match); an unsealed one is returned as it is."""
    data = Path(path).read_bytes()
    archive, seal = _unseal(Path(path), data)
    if seal is not None and _digest(archive, {k: v for k, v in seal.items() if k != "sha256"}) != seal["sha256"]:
        raise RunFileError(_damaged_checkpoint(Path(path), "its bytes do not match the sha256 checksum written with it"))
    return data


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


def cpu_isa() -> str:
    """The widest vector extension the CPU reports (``/proc/cpuinfo`` flags): ``amx``, ``avx512``, ``avx2`` or
    ``other``.  One model name covers CPUs of different speed ("AMD EPYC" is an AVX-512 and an AVX2-only part, at
    about half the sgemm speed), so the speed of a step is told by the two together."""
    try:
        flags = next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("flags")), [])
    except OSError:
        flags = []
    for isa, flag in (("amx", "amx_tile"), ("avx512", "avx512f"), ("avx2", "avx2")):
        if flag in flags:
            return isa
    return "other"


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
        "device": device, "device_name": dev_name, "cpu_model": cpu_model(), "cpu_isa": cpu_isa(),
        "threads": torch.get_num_threads(),
        "platform": platform.platform(), "seed": seed,
    }


RUN_FILES = ("config.yaml", "checkpoint.pt", "eval.json", "metrics.npz", "grad_norms.npz", "histograms.npz",
             "provenance.json", ".lock")  # what a run folder may hold (a sweep adds its prefix-epoch folders)


def readouts_digest(readouts: dict) -> str:
    """A sha256 of a run's readouts as JSON with sorted keys: ``provenance.json`` keeps it, so readouts copied in
    from another run, or edited, are found (:meth:`RunDir.changed_files`) whatever the file's spacing."""
    return hashlib.sha256(json.dumps(readouts, sort_keys=True).encode()).hexdigest()


def config_digest(cfg: RunConfig | dict, library_only: bool = False) -> str | None:
    """A sha256 of what a config computes (its execution keys aside): ``eval.json`` keeps it, so readouts left under
    an edited ``config.yaml`` are found (:meth:`RunDir.load_complete`) even with the checkpoint and provenance gone.
    Over registered sections' keys too (the study's, defaults included: as every run stored before they left the
    library); ``library_only``: the digest a process without them wrote, None where none could have made ``cfg``."""
    flat = {k: v for k, v in _flatten(as_config(cfg).to_dict()).items() if k not in EXECUTION_KEYS}
    if library_only:  # the registered keys left out, where all are at their defaults (a run of the library alone)
        if any(v != _flatten(DEFAULTS)[k] for k, v in flat.items() if k not in configs.LIBRARY_KEYS):
            return None
        flat = {k: v for k, v in flat.items() if k in configs.LIBRARY_KEYS}
    return hashlib.sha256(json.dumps(flat, sort_keys=True, default=str).encode()).hexdigest()


def check_run_folder(out: str | os.PathLike) -> Path:
    """``out`` as a run folder, refused (a :class:`ConfigError` naming it and the fix) where it cannot be one (a file,
    or a path under one) or where the run's files would lie among a user's: an empty name (the current folder), the
    current folder itself, or a folder that holds files and none of a run's (:data:`RUN_FILES`). Nothing is created."""
    text = os.path.expanduser(os.fspath(out))
    if not text.strip():
        raise ConfigError(f'--out {text!r} names no folder (the run would be written into the current one): give the run '
                          "folder, e.g. --out runs/my_run.")
    if text.startswith("~") and not Path(text).exists():  # ~name of no user: expanduser leaves it as it is
        raise ConfigError(f"--out {text}: {text.split('/')[0]} is no user's home folder here, so the run would go into a "
                          "folder of that name under the current one: write the folder's full path.")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out {path} is a file, not a folder: name a new or existing run folder instead.")
    if blocked := next((p for p in path.parents if p.exists() and not p.is_dir()), None):
        raise ConfigError(f"--out {path} lies under {blocked}, a file, not a folder: name a run folder elsewhere.")
    host = next((p for p in path.parents if (p / "eval.json").is_file() or (p / "checkpoint.pt").is_file()), None)
    if host is not None and not path.relative_to(host).parts[0].startswith("prefix-epoch"):  # a sweep's own prefixes
        raise ConfigError(f"--out {path} lies inside the run folder {host}: its files would mix with that run's. Name "
                          "a run folder of its own, e.g. beside it.")
    if path.is_dir() and (odd := next((f for f in RUN_FILES if (path / f).exists() and not (path / f).is_file()), None)):
        raise ConfigError(f"--out {path}: its {odd} is a folder, not a run's file: move it away (" + ("moving it keeps "
                          "the run" if odd == ".lock" else "without its checkpoint the run starts again from epoch 0")
                          + "), or name another run folder.")
    if path.is_dir() and not any((path / f).exists() for f in RUN_FILES):
        if path.resolve() == Path.cwd().resolve():
            raise ConfigError(f"--out {text} is the current folder itself: the run's files would lie among yours. Give "
                              "the run a folder of its own, e.g. --out runs/my_run.")
        if theirs := sorted(p.name for p in path.iterdir() if not p.name.startswith("prefix-epoch"))[:3]:
            raise ConfigError(f"--out {text} holds files of no run ({', '.join(theirs)}): the run's files would lie "
                              "among them. Give the run a new folder, e.g. --out runs/my_run.")
    return path


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
        """The run's config, parsed (keys added since the run take their defaults; old keys map onto new ones).

        A missing or damaged file is a :class:`RunFileError`: one that is empty, not text, not YAML, not a mapping
        of config sections, not a valid config, or cut short (every written config ends with a newline; a config
        cut at the end of a value would otherwise parse, as another config)."""
        if not self.config.is_file():
            raise RunFileError(
                f"{self.config} is missing: the folder {self.path} holds no config. Run {_rerun(self.path)} again: "
                "it restores the file (from the run's checkpoint, where it is sealed) and keeps the run's other "
                "files; if you do not know that command, move the folder away."
            )
        cfg, what = _parse_yaml(self.config.read_bytes())
        if what:
            pass  # unreadable: said below
        elif not isinstance(cfg, dict):
            what = f"not a YAML mapping: {' '.join(str(cfg).split())[:120]}"
        elif not set(cfg) <= set(DEFAULTS):
            what = f"sections {sorted(set(cfg) - set(DEFAULTS))} that no config has"
        else:
            try:
                return RunConfig.from_dict(cfg)
            except configs.UnregisteredKeyError:  # the file is whole: its keys' sections are not registered (said how)
                raise
            except ConfigError as err:
                what = " ".join(str(err).split())
        raise RunFileError(
            f"{self.config} is damaged ({what}). Delete this file and run {_rerun(self.path)} again: it writes the "
            "file from that command's config, keeps the run's other files and resumes an unfinished run from its "
            "checkpoint (if the folder may hold a run of another config, move it away or use another --out instead)."
        )

    def restore_config(self, cfg: RunConfig) -> None:
        """Give a complete run whose ``config.yaml`` is missing (:meth:`load_config`'s recovery: delete a damaged one
        and run the command that made the run, whose config is ``cfg``) its own config back: the one its checkpoint
        was sealed with, or, without a seal (a run stored before seals, or copied), ``cfg`` where the seed of its
        ``provenance.json`` agrees.  Another config is a :class:`RunFileError` naming both values."""
        if not self.is_complete() or self.config.is_file():
            return
        seal, prov = (read_seal(self.checkpoint) or {}).get("config"), self.load_provenance()
        if not seal and "seed" not in prov and "config" not in prov:  # no record of the readouts: adopt nothing
            raise RunFileError(f"{self.config} is missing, and nothing in {self.path} records its readouts' config (no "
                               "sealed checkpoint.pt, no provenance.json): restore it, or move the folder and train again.")
        stored = seal or prov.get("config") or merge(cfg.to_dict(), {"seed": prov["seed"]})
        if diff := config_mismatch(stored, cfg):
            raise RunFileError(f"{self.config} is missing, and the run in {self.path} has another config than this "
                               f"command's: {diff}. Run the command with the run's values, or use another --out.")
        write_yaml(self.config, as_config(stored).to_dict())

    def load_eval(self) -> dict:
        """The run's readouts (``eval.json``); a damaged file is a :class:`RunFileError` that says how to
        evaluate the run again."""
        how = ("the run is evaluated again from its final checkpoint" if self.checkpoint.is_file() else
               "this folder holds no checkpoint (a run copied from an identical one), so its sweep copies it again "
               "and a train command trains it anew")
        recovery = f"Delete it and run {_rerun(self.path)} again: {how}."
        readouts = _load_json(self.eval, recovery)
        if what := _bad_readout(readouts):
            raise RunFileError(f"{self.eval} is damaged ({what}). {recovery}")
        return readouts

    def load_complete(self) -> dict:
        """A complete run's readouts (:meth:`load_eval`) once its other files are checked whole: ``provenance.json``
        parses, ``metrics.npz`` (and ``grad_norms.npz`` or ``histograms.npz`` where present) loads in full, and each
        log matches the sha256 ``provenance.json`` recorded.  What ``train`` returns for a run already done, so a
        rerun never reports a damaged run as fine; anything damaged is a :class:`RunFileError` naming the file and
        the fix."""
        readouts, recorded = self.load_eval(), self.load_provenance().get("files", {})
        if (made := readouts.get("config_sha256")) and self.config.is_file() \
                and made not in (config_digest(stored := self.load_config()), config_digest(stored, library_only=True)) \
                and self.eval.name not in self.changed_files():  # else eval.json is not what this run wrote: said below
            raise RunFileError(f"{self.config} is not the config {self.eval}'s readouts were made with (edited after the "
                               f"run completed?): restore its values, or move {self.path} away and run "
                               f"{_rerun(self.path)} again to train that config anew.")
        for log in (self.metrics, self.grad_norms, self.histograms):
            if log == self.metrics or log.name in recorded or log.exists():  # a recorded log gone is "missing"
                _load_npz(log)
            if recorded and log.exists() and log.name not in recorded:  # a log this run never wrote, copied in
                raise RunFileError(f"{log} is not a file this run wrote (its provenance.json records "
                                   f"{', '.join(sorted(recorded))}): move it out of {self.path}.")
        if (changed := self.changed_files()) == ["eval.json"] and self.whole_checkpoint():
            raise RunFileError(f"{self.eval} differs from the readouts this run wrote (another run's copied in, or "
                               "edited). Delete it: the run's last checkpoint evaluates it again.")
        if changed:
            raise RunFileError(f"{', '.join(changed)} in {self.path} differ from the files this run wrote (another "
                               f"run's log copied in, or edited). {_retrain(self.path / changed[0])}")
        return readouts

    def check_finished_checkpoint(self) -> None:
        """A complete run's ``checkpoint.pt``, where one is kept and sealed, is of the run's last epoch: readouts
        beside a checkpoint of an earlier epoch are not this run's (an ``eval.json`` copied into an unfinished run).
        What ``train`` checks before it reports a run as done; the readouts do not rest on the checkpoint, so a
        damaged one is not refused here (a sweep copies such a run without reading it)."""
        seal = read_seal(self.checkpoint) if self.checkpoint.is_file() else None
        if seal is None or not isinstance(seal.get("epoch"), int):
            return
        try:
            epochs = self.load_config().train.epochs
        except RunFileError:
            return  # a missing or damaged config.yaml: the callers' own checks name it
        if seal["epoch"] < epochs:
            raise RunFileError(f"{self.eval} sits beside a checkpoint of epoch {seal['epoch']} of {epochs}: these readouts "
                               f"are not this run's (an eval.json copied in?). Delete {self.eval} and run "
                               f"{_rerun(self.path)} again to finish training from that checkpoint.")

    def whole_checkpoint(self) -> bool:
        """Whether ``checkpoint.pt`` is there and reads as a checkpoint (a zip archive), without loading it."""
        return self.checkpoint.is_file() and zipfile.is_zipfile(self.checkpoint)

    def load_provenance(self) -> dict:
        """The run's provenance (commit, versions, device, ...; ``{}`` for runs stored before it was recorded);
        a damaged file is a :class:`RunFileError`."""
        if not self.provenance.is_file():
            return {}
        recovery = ("Delete it to keep the run without its record of commit, versions and device (readers then take "
                    f"the device from config.yaml), or move the folder {self.path} away and run {_rerun(self.path)} "
                    "again to train the run anew, with a new record.")
        prov = _load_json(self.provenance, recovery)
        files = prov.get("files", {}) if isinstance(prov, dict) else None
        if not isinstance(files, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise RunFileError(f"{self.provenance} is damaged (a mapping whose 'files' maps each log to its sha256). "
                               f"{recovery}")
        return prov

    def file_digests(self) -> dict[str, str]:
        """A sha256 of each log file the run holds (``metrics.npz``, ``grad_norms.npz``, ``histograms.npz``): a
        complete run's ``provenance.json`` keeps them, so another run's log copied in is found
        (:meth:`changed_files`)."""
        return {f.name: hashlib.sha256(f.read_bytes()).hexdigest()
                for f in (self.metrics, self.grad_norms, self.histograms) if f.is_file()}

    def changed_files(self) -> list[str]:
        """The log files whose sha256 differs from the one ``provenance.json`` recorded when the run completed, and
        ``eval.json`` where its readouts differ from the ones it recorded (:func:`readouts_digest`; runs completed
        before either record was kept: none)."""
        prov = self.load_provenance() if self.provenance.is_file() else {}
        kept, now = prov.get("files", {}), self.file_digests()
        changed = [name for name, digest in kept.items() if now.get(name) != digest]
        if "readouts" in prov and self.eval.is_file() and readouts_digest(self.load_eval()) != prov["readouts"]:
            changed.append(self.eval.name)  # another run's readouts copied in, or edited
        return sorted(changed)

    def check_logs(self) -> None:
        """Read every training log the folder holds (``metrics.npz``, ``grad_norms.npz``) in full: a damaged one is
        the :class:`RunFileError` a resume would meet, said before anything announces the resume."""
        for log in (self.metrics, self.grad_norms):
            if log.exists():
                _load_npz(log)

    def load_metrics(self) -> dict:
        """The per-step columns (``metrics.npz``); a missing or damaged file is a :class:`RunFileError`."""
        return _load_npz(self.metrics)

    def load_grad_norms(self) -> dict:
        """The layers' gradient norms (``grad_norms.npz``); a missing or damaged file is a :class:`RunFileError`."""
        return _load_npz(self.grad_norms)

    def load_histograms(self) -> dict:
        """The per-step score histograms (``histograms.npz``, runs with ``stats.histograms=true`` only); a missing
        or damaged file is a :class:`RunFileError`."""
        return _load_npz(self.histograms)


def _parse_yaml(data: bytes) -> tuple[Any, str]:
    """The YAML document in a run file's bytes, and what is wrong with them ("" when nothing is): empty, not text,
    cut short (no final newline, which every written file has) or not YAML."""
    if not data:
        return None, "empty"
    try:
        text = data.decode()
    except UnicodeDecodeError as err:
        return None, f"not text: {one_line(err)}"
    if not text.endswith("\n"):
        return None, "cut short: it does not end with a newline, as every written config does"
    try:
        return yaml.safe_load(text), ""
    except yaml.YAMLError as err:
        return None, f"not YAML: {one_line(err)}"


def _load_json(path: Path, recovery: str) -> dict:
    """The JSON object in the run file ``path``; anything else (empty, cut short, not text, not an object) is a
    :class:`RunFileError` that names the file and ends in ``recovery``."""
    data = path.read_bytes()
    try:
        obj = json.loads(data.decode())
        what = "" if isinstance(obj, dict) else f"a JSON {type(obj).__name__}, not an object"
    except ValueError as err:  # JSONDecodeError (cut short, garbage) or UnicodeDecodeError (not text)
        what = "empty" if not data else ("not text: " if isinstance(err, UnicodeDecodeError) else "not JSON: ") + one_line(err)
    if what:
        raise RunFileError(f"{path} is damaged ({what}). {recovery}")
    return obj


def _bad_readout(readouts: dict) -> str:
    """What is wrong with the readouts of an ``eval.json`` (empty when nothing): no ``linear_top1``, a value that
    is not a finite number (``config_sha256`` aside: a sha256), an accuracy (``*_top1``) outside [0, 100] or a time
    below 0."""
    if "linear_top1" not in readouts:
        return "no linear_top1"
    for key, value in readouts.items():
        if key == "config_sha256":  # the config the readouts were made with (config_digest)
            if not (isinstance(value, str) and len(value) == 64):
                return f"config_sha256={json.dumps(value)[:40]} is not a sha256"
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"{key}={json.dumps(value)[:40]} is not a finite number"
        if key.endswith("_top1") and not 0 <= value <= 100:
            return f"{key}={value} is not a percentage in [0, 100]"
        if key.endswith("_s") and value < 0:
            return f"{key}={value} is a time below 0"
    return ""


def _load_npz(path: Path) -> dict:
    """Every array of the run's ``.npz`` archive ``path``, read in full (a damaged member fails here, not later
    in a reader); a missing or damaged archive is a :class:`RunFileError` that names it and says to retrain."""
    if not path.is_file():
        raise RunFileError(f"{path} is missing. {_retrain(path)}")
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head != b"PK\x03\x04":  # numpy would try it as a pickle and say so, which misleads
        what = "empty" if not head else "not an .npz archive: it does not begin as a zip file does"
        raise RunFileError(f"{path} is damaged ({what}). {_retrain(path)}")
    try:
        loaded = np.load(path, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise ValueError("one array, not an archive of them")
        with loaded as z:
            return {k: z[k] for k in z.files}
    except PermissionError:
        raise
    except Exception as err:  # a damaged archive fails in many ways: BadZipFile, EOFError, ValueError, zlib.error, ...
        what = f"not a readable .npz archive, cut short or overwritten: {one_line(err)}"
        raise RunFileError(f"{path} is damaged ({what}). {_retrain(path)}") from err


def lock_held(path: Path) -> bool:
    """Whether another process holds the run folder ``path``'s lock (:func:`run_lock`) now: a command into it waits,
    so a line saying it resumes would come before the wait, and wrongly. The lock file is never created here."""
    try:
        with open(path / ".lock") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
    except OSError:  # no lock file, or none to read: nobody holds it
        return False
    return False


@contextlib.contextmanager
def run_lock(path: Path):
    """An exclusive advisory lock on a run folder (``.lock``), released when the process ends or exits.

    The holder writes its pid into the lock file; a process that has to wait says which pid it waits for,
    so a build that seems to hang names the process that holds the run.
    """
    try:
        fh = open(path / ".lock", "a+", errors="replace")  # damaged bytes only garble the pid shown
    except OSError as err:
        raise RunFileError(f"cannot write {path / '.lock'} ({err.strerror}): name a run folder you can write.") from err
    with fh:
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
