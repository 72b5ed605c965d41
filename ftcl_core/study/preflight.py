"""What a user types, checked before anything is written (issue 64): the output path, the device, the sizes against
the machine's memory, a step schedule's milestones, an experiment file's form.  Each refusal is a
:class:`~ftcl_core.config.ConfigError` naming the value and the fix; the command line (:mod:`ftcl_core.study.cli`)
runs these before it calls :func:`ftcl_core.training.train`, which checks the config against the run folder and
the data itself.  A refused command leaves nothing behind, so the corrected one runs in the same folder.
"""

from __future__ import annotations

import errno
import functools
import os
from pathlib import Path

import torch

from ftcl_core.checkpoints import check_compatible
from ftcl_core.config import ConfigError, RunConfig, check_schedule, load_yaml_mapping
from ftcl_core.execution import resolve_device
from ftcl_core.runs import RunDir, check_run_folder, one_line
from ftcl_core.study.experiment_file import ROOT


def check_command(cfg: RunConfig, out: str | os.PathLike | None) -> None:
    """Everything :func:`ftcl_core.training.train` cannot check before it writes: the output path ``out`` (None for
    a screen's temporary folder), and, for a run still to train, that the folder can be written, the device, the
    sizes against the memory and the schedule."""
    if out is not None:
        path = check_out(out)
        check_compatible(RunDir(path), cfg)  # another run's folder: refused before the start-up line, not after
        if RunDir(path).is_complete():
            RunDir(path).load_complete()  # read, not trained: a damaged file is said before the start-up line
            return
        _check_writable(path)
    device = resolve_device(cfg)
    check_device(device)
    check_memory(cfg, device)
    check_schedule(cfg)
    check_input_size(cfg)


def check_input_size(cfg: RunConfig) -> None:
    """A timm encoder (``model.encoder=timm:<name>``) that takes one input size only (a ViT's 224 px) refused before
    anything is written, by one forward pass of two images of ``augment.out_size`` (this library's encoders take
    any size; a timm model is built on the CPU for it, a second or two)."""
    if not cfg.model.encoder.startswith("timm:"):
        return
    import torch

    from ftcl_core.models import build_encoder

    net = build_encoder(cfg.model.encoder, cfg.model.bn_splits).eval()
    size = cfg.augment.out_size
    try:
        with torch.no_grad():
            net(torch.zeros(2, 3, size, size))
    except (RuntimeError, AssertionError, ValueError) as err:
        why = " ".join(str(err).split())[:160]
        raise ConfigError(f"model.encoder={cfg.model.encoder} does not take augment.out_size={size}-px views ({why}): "
                          "set augment.out_size to the size it was built for, or choose another encoder.") from None


def check_out(out: str | os.PathLike) -> Path:
    """``out`` as a run folder's path, refused (a :class:`ConfigError` naming it and the fix) where it cannot be one:
    empty, a file or under one, a dangling symbolic link or under one, or a name longer than the file system takes.
    Nothing is created."""
    text = os.path.expanduser(os.fspath(out))
    if not str(text).strip():
        raise ConfigError(f'--out {text!r} names no folder (the run would be written into the current one): give the run '
                          "folder, e.g. --out runs/my_run.")
    path = Path(text)
    try:
        limit = os.pathconf(next(p for p in path.parents if _exists(p)), "PC_NAME_MAX")
    except (OSError, ValueError, StopIteration):
        limit = 255
    if long := next((part for part in path.parts if len(os.fsencode(part)) > limit), None):
        raise ConfigError(f"--out {text[:60]}...: the name {long[:40]}... is {len(os.fsencode(long))} bytes, longer "
                          f"than the {limit} the file system takes for one name. Name a shorter folder.")
    for p in (path, *path.parents):
        if p.is_symlink() and not _exists(p):
            try:
                p.resolve(strict=True)
            except RuntimeError:  # Python 3.11: a loop of links (3.13 says OSError ELOOP)
                loop = True
            except OSError as err:
                loop = err.errno == errno.ELOOP
            else:
                loop = False
            what = ("a symbolic link in a loop of links that never reaches a folder. Remove the links" if loop else
                    f"a symbolic link to {os.readlink(p)}, which does not exist. Create its target, remove the link")
            raise ConfigError(f"--out {path}: {p} is {what}, or name another folder.")
    return check_run_folder(path)  # a file, or a folder under one, refused there


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long, say: it does not exist either
        return False


def _check_writable(path: Path) -> None:
    """The run folder ``path`` (or, where it does not exist yet, its nearest existing parent) can be written."""
    base = next(p for p in (path, *path.parents) if p.exists())
    if not os.access(base, os.W_OK | os.X_OK):
        what = f"{path}" if base == path else f"{path}: its folder {base}"
        raise ConfigError(f"--out {what} cannot be written (a read-only file system, or a folder that is not yours). "
                          "Name a run folder you can write, e.g. --out runs/my_run.")


def check_device(device: str) -> None:
    """``device`` (as :func:`~ftcl_core.execution.resolve_device` resolved it) is one torch knows and this machine
    has; else a :class:`ConfigError` naming it and the choices."""
    choices = "choose device=cpu, cuda, cuda:N (a GPU's index) or auto"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ConfigError(f"device={device!r} is not a device torch knows ({one_line(err)}); {choices}.") from None
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ConfigError(f"device={device}: this machine has {torch.cuda.device_count()} CUDA device(s) "
                          f"(cuda:0 to cuda:{torch.cuda.device_count() - 1}); {choices}.")
    if dev.type == "cpu" and dev.index not in (None, 0):  # torch takes cpu:99 and runs on the one CPU device
        raise ConfigError(f"device={device}: the CPU is one device, cpu (or cpu:0); {choices}.")
    if dev.type == "meta":  # allocates nothing: a run there cannot read a single number back
        raise ConfigError(f"device={device} holds no data (torch's meta device, for shapes only): a run cannot train "
                          f"there; {choices}.")
    if dev.type not in ("cpu", "cuda"):
        try:
            torch.empty(1, device=dev)
        except (RuntimeError, AssertionError) as err:
            raise ConfigError(f"device={device} is not available on this machine ({one_line(err)}); {choices}.") from None


# The keys that size each part of memory_needed, as a refusal names them.
SIZED_BY = {"images": ("data.n_train", "data.n_test", "data.n_val", "data.image_size"),
            "drawing": ("data.image_size",), "views": ("train.batch_size", "augment.out_size"),
            "queue": ("moco.queue_size", "model.dim"),
            "weights": ("model.encoder", "model.dim", "model.hidden", "swav.prototypes")}


def _sizes(cfg: RunConfig, key: str) -> bool:
    """Whether ``key`` of :data:`SIZED_BY` sizes ``cfg``'s run: a method's own section only under that method, the
    split it does not evaluate on never."""
    section = key.split(".")[0]
    if section in ("moco", "swav"):
        return cfg.method == section
    return key != ("data.n_test" if cfg.data.eval_split == "val" else "data.n_val")


def memory_needed(cfg: RunConfig) -> dict[str, int]:
    """A lower bound of the bytes a run holds at once, by part (:data:`SIZED_BY`): the uint8 images held in memory
    (the shapes and Fashion-MNIST at ``data.image_size``), the shapes' drawing (ten float32 distance maps an image,
    2 048 images at a time), a step's two float32 views, MoCo's queue, the networks' weights and their gradients
    (counted on the meta device, so a head of 10**12 outputs is refused, not allocated).  Activations come on top, so
    this refuses only what cannot fit whatever else the run holds."""
    d, bs = cfg.data, cfg.train.batch_size
    n_images = d.n_train + (d.n_val if d.eval_split == "val" else d.n_test)
    parts = {"views": 2 * bs * 3 * cfg.augment.out_size**2 * 4}
    if d.name in ("shapes", "fashion_mnist"):
        parts["images"] = n_images * 3 * d.image_size**2
    if d.name == "shapes":
        parts["drawing"] = min(n_images, 2048) * 10 * 4 * d.image_size**2
    if cfg.method == "moco":
        parts["queue"] = cfg.moco.queue_size * cfg.model.dim * 4
    parts["weights"] = _parameters(cfg) * 4 * 2  # float32 weights and their gradients
    return parts


def _parameters(cfg: RunConfig) -> int:
    """The networks' parameters, counted on the meta device (nothing is allocated): encoders, heads, prototypes."""
    from ftcl_core.methods import build_model

    with torch.device("meta"):
        return sum(p.numel() for p in build_model(cfg).parameters())


def check_memory(cfg: RunConfig, device: str) -> None:
    """Refuse a config whose :func:`memory_needed` exceeds the machine's physical memory (the images and the
    drawing) or, on CUDA, the GPU's (a step's views and the queue), before anything is allocated or written."""
    parts, cuda = memory_needed(cfg), device.startswith("cuda")
    host = {k: v for k, v in parts.items() if k in ("images", "drawing") or not cuda}
    groups = [(host, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "this machine")]
    if cuda:
        gpu = torch.cuda.get_device_properties(torch.device(device)).total_memory
        groups.append(({k: v for k, v in parts.items() if k not in host}, gpu, f"the GPU ({device})"))
    for group, have, name in groups:
        if group and (need := sum(group.values())) > have:
            biggest = max(group, key=group.get)
            keys = ", ".join(f"{k}={v}" for k in SIZED_BY[biggest] if _sizes(cfg, k)
                             and (v := functools.reduce(getattr, k.split("."), cfg)) is not None)
            raise ConfigError(f"this run needs at least {need / 2**30:,.1f} GiB of memory, {name} has "
                              f"{have / 2**30:,.1f} GiB; most of it for its {biggest} ({group[biggest] / 2**30:,.1f} "
                              f"GiB), sized by {keys}. Lower those values.")


def data_in_place(cfg: RunConfig) -> bool:
    """Whether the config's data are where the run will look for them (folders and files present, nothing read):
    when not, the run will refuse, and the command line says nothing of where it would have gone first."""
    d = cfg.data
    if d.name == "shapes" or d.download:
        return True
    if d.name == "fashion_mnist":
        from ftcl_core.study.fashion_mnist import fashion_mnist_root

        return fashion_mnist_root(d.root) is not None
    roots = (d.root, d.test_root) if d.name == "imagefolder" else (d.root or "datasets",)
    return all(r is not None and Path(os.path.expanduser(r)).is_dir() for r in roots)


def check_experiment_file(path: str) -> None:
    """An experiment file is a YAML mapping with its keys given once: empty, not a mapping (``42``, a list) or with a
    key given twice is a :class:`ConfigError` naming the file and the fix, before anything reads or trains it (its
    layout is :meth:`ftcl_core.study.experiment_file.Experiment.load`'s to check)."""
    p = Path(path) if Path(path).is_file() else ROOT / path
    if not p.is_file():
        return  # Experiment.load says it is not found
    example = "experiments/table7_ft_v1.yaml"
    d = load_yaml_mapping(p, "experiment file", example)
    missing = [k for k in ("table", "base", "settings") if k not in d]
    if missing:
        raise ConfigError(f"experiment file {p} lacks {missing} (it has {sorted(map(str, d))[:5]}); see {example} "
                          "for the layout.")
