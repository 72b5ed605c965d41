"""Run configs: one frozen, typed dataclass per section, built once at the entry point.

A run's config is a :class:`RunConfig`. :func:`load_config` builds it from the defaults below, a YAML file and
dotted ``key=value`` overrides; every value is checked against its field's annotation (a number where a number
belongs, one of the listed names where a ``Literal`` stands), and each section checks its own values in
``check``. Checks that need two sections (the queue against the batch, FT against the method) live in
:meth:`RunConfig.check`. Each check lives once, here; nothing downstream re-validates a config.

Method-specific settings live with their method: ``moco.tau`` is MoCo's temperature, ``simclr.tau`` SimCLR's,
``swav.tau`` SwAV's, ``byol.momentum`` BYOL's base target momentum. Configs written before these sections
existed used ``moco.tau`` and ``moco.momentum`` for every method; :func:`from_dict` maps those old keys onto the
new ones, so every stored run still loads, compares and replays.

This module imports nothing else from ``ftcl_core`` (a test walks the imports), so every other module may
import it.  The names that other modules own (methods, encoders, augmentation presets, lambda granularities)
are kept here as plain data, and the owners check at import time that their tables agree with these.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import math
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml

# The names a config may use; each owner (see the comment) checks that its table matches.
METHODS = ("moco", "simclr", "byol", "simsiam", "swav")  # the keys of ftcl_core.methods.METHODS
CONTRASTIVE = ("moco", "simclr")  # the methods with negatives (the others take positive FT only, Table 7)
SMALL_ENCODERS = ("resnet10_w16", "resnet10_w32", "resnet18_w16", "resnet18_w32", "resnet18_w64")  # models.SMALL
TORCHVISION_ENCODERS = ("resnet18", "resnet50", "resnet18_cifar", "resnet50_cifar")  # ftcl_core.models.TORCHVISION
AUGMENT_PRESETS = ("v1", "v2", "simclr")  # ftcl_core.augment.PRESETS
GRANULARITIES = ("step", "sample", "dim")  # ftcl_core.transforms.lambda_shape

Method = Literal["moco", "simclr", "byol", "simsiam", "swav"]
DataSet = Literal["shapes", "fashion_mnist", "imagefolder", "cifar10", "cifar100", "stl10"]
Preset = Literal["v1", "v2", "simclr"]
Granularity = Literal["step", "sample", "dim"]
Auto = Literal["auto"]


class ConfigError(ValueError):
    """A config key or value is wrong; the message names the key and the fix."""


# ---------------------------------------------------------------------------------------------------
# Type checks from the annotations
# ---------------------------------------------------------------------------------------------------


def _describe(tp: Any) -> str:
    """How an annotation reads in an error message."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is bool:
        return "true or false"
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if tp is type(None):
        return "null"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is tuple:
        inner = _describe(args[0])
        return f"a list of {inner}s" if args[-1] is Ellipsis else f"a list of {len(args)} ({inner} each)"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    return str(tp)


def _number(text: str, integer: bool) -> int | float | None:
    """YAML 1.1 reads ``1e-4`` (no dot) as a string: numeric fields take it as the number it spells."""
    try:
        x = float(text)
    except ValueError:
        return None
    if integer:
        return int(x) if x.is_integer() else None
    return x


def _conform(value: Any, tp: Any) -> tuple[bool, Any]:
    """(True, ``value`` in the annotation's type) or (False, None). Lists become tuples (frozen); integers are
    numbers; numeric strings that YAML left unread are numbers; bools are never numbers, numbers never bools."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return True, value
    if isinstance(tp, type) and issubclass(tp, Section):
        return isinstance(value, tp), value
    if tp is type(None):
        return value is None, None
    if tp is bool:
        return isinstance(value, bool), value
    if tp in (int, float):
        if isinstance(value, bool):
            return False, None
        if isinstance(value, str):
            value = _number(value, integer=tp is int)
        if tp is int:
            return isinstance(value, int), value
        return isinstance(value, (int, float)), None if value is None else float(value)
    if tp is str:
        return isinstance(value, str), value
    if origin is Literal:
        return (not isinstance(value, bool) and value in args), value
    if origin is tuple:
        if not isinstance(value, (list, tuple)) or (args[-1] is not Ellipsis and len(value) != len(args)):
            return False, None
        kinds = [args[0]] * len(value) if args[-1] is Ellipsis else list(args)
        out = [_conform(v, k) for v, k in zip(value, kinds)]
        return all(ok for ok, _ in out), tuple(v for _, v in out)
    if origin in (typing.Union, types.UnionType):
        for arm in args:
            ok, v = _conform(value, arm)
            if ok:
                return True, v
        return False, None
    raise TypeError(f"config annotation {tp!r} is not supported")  # a programming error, not a user's


def _type_error(key: str, value: Any, tp: Any, default: Any) -> ConfigError:
    if typing.get_origin(tp) is not Literal:
        return ConfigError(f"{key}={value!r} must be {_describe(tp)} (default {_yaml(default)}).")
    choices = typing.get_args(tp)
    close = difflib.get_close_matches(value, [str(a) for a in choices], n=1) if isinstance(value, str) else []
    hint = f"; did you mean {close[0]!r}?" if close else "."
    return ConfigError(f"{key}={value!r}: choose one of {choices}{hint}")


def _floats(value: Any) -> list[float]:
    """The floats in a conformed value (a number, or a tuple of them)."""
    if isinstance(value, float):
        return [value]
    return [x for v in value for x in _floats(v)] if isinstance(value, tuple) else []


def _yaml(value: Any) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else repr(value)


@dataclass(frozen=True)
class Section:
    """A config section: frozen, its fields type-checked from their annotations, then :meth:`check`-ed."""

    section: ClassVar[str] = ""  # the YAML key of the section

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            ok, conformed = _conform(value, hints[f.name])
            if not ok:
                default = f.default if f.default is not dataclasses.MISSING else None
                raise _type_error(f"{self.key(f.name)}", value, hints[f.name], default)
            if not all(math.isfinite(x) for x in _floats(conformed)):
                default = _yaml(_plain(f.default)) if f.default is not dataclasses.MISSING else "none"
                raise ConfigError(f"{self.key(f.name)}={_yaml(_plain(conformed))} must be finite (no nan or inf); "
                                  f"the default is {default}.")
            object.__setattr__(self, f.name, conformed)  # frozen: set once, here
        self.check()

    def key(self, field_name: str) -> str:
        return f"{self.section}.{field_name}" if self.section else field_name

    def check(self) -> None:
        """Value checks beyond the type (ranges, combinations inside the section)."""

    def _positive(self, *names: str) -> None:
        for n in names:
            if getattr(self, n) < 1:
                raise ConfigError(f"{self.key(n)}={getattr(self, n)} must be >= 1.")


@dataclass(frozen=True)
class DataConfig(Section):
    """The images: which set, how many, at what size, and which held-out split the readout scores."""

    section: ClassVar[str] = "data"
    name: DataSet = "shapes"             # shapes | fashion_mnist | imagefolder | cifar10 | cifar100 | stl10
    root: str | None = None              # imagefolder / torchvision sets; fashion_mnist: default the Debian folder
    test_root: str | None = None         # imagefolder: the validation tree
    class_list: str | None = None        # imagefolder: e.g. data/imagenet100.txt
    image_size: int = 32                 # stored size (shapes are drawn at it; real images resized to it)
    n_train: int = 10000                 # shapes: drawn; fashion_mnist: a class-balanced subset of the 60 000
    n_test: int = 2000                   # shapes: drawn; fashion_mnist: a class-balanced subset of the 10 000
    classes: int = 10                    # shapes: 10 (the shapes) | 20 | 30 (shape x fill: solid, outline, striped)
    clutter: int = 0                     # shapes: smaller unlabelled distractor shapes behind the labelled one (0-8)
    max_per_class: int | None = None     # imagefolder: cap per class (quick runs)
    download: bool = False               # torchvision sets: download only when asked
    workers: int = 0                     # imagefolder: processes that decode the images (once, before training)
    cache: str | None = None             # imagefolder: folder where the decoded set is kept and memory-mapped
    # which held-out images the readout scores: test (the reported numbers) | val (calibration: shapes drawn from
    # their own seed; other sets: the last n_val images of a fixed shuffle of train, removed from training)
    eval_split: Literal["test", "val"] = "test"
    n_val: int = 2000

    def check(self) -> None:
        for name in ("root", "test_root", "class_list", "cache"):  # a path typed as ~/data means the home folder's
            if (value := getattr(self, name)) and value.startswith("~"):
                object.__setattr__(self, name, os.path.expanduser(value))
        self._positive("image_size", "n_train", "n_test", "n_val")
        if self.name == "shapes" and self.image_size < 8:
            raise ConfigError(f"data.image_size={self.image_size}: the drawn shapes need at least 8 px (default 32).")
        if self.classes != 10 and self.name != "shapes":
            raise ConfigError(f"data.classes={self.classes} applies to the embedded shapes only; data.name="
                              f"{self.name} has its own classes. Remove data.classes.")
        if self.clutter and self.name != "shapes":
            raise ConfigError(f"data.clutter={self.clutter} applies to the embedded shapes only; remove it for "
                              f"data.name={self.name}.")
        if not 0 <= self.clutter <= 8:
            raise ConfigError(f"data.clutter={self.clutter} must lie in [0, 8] (distractor shapes per image).")
        if self.classes not in (10, 20, 30):
            raise ConfigError(f"data.classes={self.classes}: the shapes set has 10 shapes x 3 fills; choose 10, "
                              "20 or 30.")
        if self.name == "shapes" and (self.root or self.test_root):
            raise ConfigError("data.name=shapes draws its images in memory and reads no folder; drop data.root and "
                              "data.test_root, or name the data set they hold (data.name=imagefolder, ...).")
        folder_only = [k for k in ("test_root", "class_list", "max_per_class", "cache") if getattr(self, k) is not None]
        if self.workers:
            folder_only.append("workers")
        if self.name != "imagefolder" and folder_only:
            raise ConfigError(f"data.{folder_only[0]} applies to data.name=imagefolder only; data.name={self.name} "
                              f"would ignore it. Drop data.{folder_only[0]}, or set data.name=imagefolder.")
        if self.download and self.name in ("imagefolder", "shapes"):
            raise ConfigError(f"data.download=true fetches a torchvision set (fashion_mnist, cifar10, cifar100, stl10); "
                              f"data.name={self.name} has nothing to download. Drop data.download.")
        if self.name == "imagefolder" and not (self.root and self.test_root):
            raise ConfigError("data.name=imagefolder needs data.root=<train folder> and data.test_root=<held-out "
                              "folder> (without a test_root the readout would score the training images; to do that "
                              "knowingly, set data.test_root to data.root).")


@dataclass(frozen=True)
class AugmentationConfig(Section):
    """The two views' augmentation: a preset (MoCo v1 / v2, SimCLR) and the knobs calibration may change."""

    section: ClassVar[str] = "augment"
    preset: Preset = "v2"
    out_size: int = 24
    crop_scale: tuple[float, float] = (0.4, 1.0)
    blur_sigma: tuple[float, float] | None = None             # v2 blur sigma range; null = the recipe's [0.1, 2]
    jitter: tuple[float, float, float, float] | None = None   # ColorJitter (b, c, s, hue); null = the preset's
    jitter_p: float | None = None                              # probability of the jitter; null = the preset's
    gray_p: float | None = None                                # probability of grayscale; null = the preset's
    blur_p: float | None = None                                # probability of the Gaussian blur; null = the preset's

    def check(self) -> None:
        self._positive("out_size")
        if self.out_size < 2:
            raise ConfigError(f"augment.out_size={self.out_size}: a view needs at least 2 px a side (the blur pads by "
                              "reflection); this book's views are 24-32 px, the paper's 224.")
        if self.blur_sigma is not None and not 0 < self.blur_sigma[0] <= self.blur_sigma[1]:
            raise ConfigError(f"augment.blur_sigma={list(self.blur_sigma)} must be [low, high] with 0 < low <= high "
                              "(MoCo v2: [0.1, 2.0]), or null for the recipe's.")
        lo, hi = self.crop_scale
        if not 0 < lo <= hi <= 1:
            raise ConfigError(f"augment.crop_scale={list(self.crop_scale)} must be [low, high] with 0 < low <= high <= 1.")
        if self.jitter is not None and not (min(self.jitter) >= 0 and self.jitter[3] <= 0.5):
            raise ConfigError(f"augment.jitter={list(self.jitter)} must be [brightness, contrast, saturation, hue], "
                              "each >= 0 and hue <= 0.5 (MoCo v2: [0.4, 0.4, 0.4, 0.1]), or null for the preset's.")
        for key in ("jitter_p", "gray_p", "blur_p"):
            p = getattr(self, key)
            if p is not None and not 0 <= p <= 1:
                raise ConfigError(f"augment.{key}={p} must be a probability in [0, 1], or null for the preset's.")


@dataclass(frozen=True)
class ModelConfig(Section):
    """The encoder and the heads every method shares."""

    section: ClassVar[str] = "model"
    encoder: str = "resnet10_w16"
    mlp: bool = True                     # MoCo v2 head; false = v1 linear head
    dim: int = 128
    bn_splits: int = 4                   # split-BN groups per process (shuffle-BN in one process; 1 = plain BN)
    sync_bn: bool = False                # torch.distributed: batch statistics over all ranks (needs bn_splits=1)
    hidden: int | None = None            # SimCLR/BYOL/SimSiam projector hidden size (null = backbone width)
    pred_hidden: int | None = None       # SimSiam predictor bottleneck (null = dim // 4)
    init: Literal["default", "kaiming"] = "default"  # backbone init: PyTorch's, or fan-out (torchvision/PyContrast)

    def check(self) -> None:
        self._positive("dim", "bn_splits")
        known = [*SMALL_ENCODERS, *TORCHVISION_ENCODERS]
        if self.encoder not in known and not self.encoder.startswith("timm:"):
            close = difflib.get_close_matches(self.encoder, known, n=3)
            raise ConfigError(f"unknown encoder model.encoder={self.encoder!r}; did you mean {close}? Known: {known} "
                              "or timm:<model>.")
        if self.encoder.startswith("timm:"):  # checked here, before a run folder or its config.yaml is written
            import timm  # only for a timm encoder: the import takes a second

            name = self.encoder.removeprefix("timm:")
            if not timm.is_model(name):
                close = difflib.get_close_matches(name, timm.list_models(), n=3)
                raise ConfigError(f"unknown timm model model.encoder={self.encoder!r}; close names: "
                                  f"{[f'timm:{c}' for c in close]} (timm.list_models() lists them all).")
        for key in ("hidden", "pred_hidden"):
            v = getattr(self, key)
            if v is not None and v < 1:
                raise ConfigError(f"model.{key}={v} must be a positive integer or null (a default size).")
        if self.sync_bn and self.bn_splits != 1:
            raise ConfigError("model.sync_bn=true needs model.bn_splits=1 (SyncBN replaces split-BN).")


def _check_tau(key: str, tau: float, hint: str) -> None:
    if tau <= 0:
        raise ConfigError(f"{key}={tau} must be > 0; {hint}.")


def _check_momentum(key: str, m: float, hint: str) -> None:
    if not 0.0 <= m <= 1.0:
        raise ConfigError(f"{key}={m} is outside [0, 1]; {hint}.")


@dataclass(frozen=True)
class MoCoConfig(Section):
    """MoCo (eq. 1, eq. 2): the queue, the key encoder's momentum, the temperature."""

    section: ClassVar[str] = "moco"
    queue_size: int = 4096
    momentum: float = 0.99
    tau: float = 0.2
    # a diagnosis oracle, not in the paper: the training labels let the loss ignore queue negatives of the query's
    # own class (no false negatives); it tests whether false negatives make FT collapse
    drop_same_class: bool = False

    def check(self) -> None:
        _check_momentum("moco.momentum", self.momentum, "MoCo uses 0.99 (IN-100) or 0.999")
        _check_tau("moco.tau", self.tau, "MoCo v1 uses 0.07, v2 0.2")


@dataclass(frozen=True)
class SimCLRConfig(Section):
    """SimCLR: the NT-Xent temperature."""

    section: ClassVar[str] = "simclr"
    tau: float = 0.2

    def check(self) -> None:
        _check_tau("simclr.tau", self.tau, "SimCLR uses 0.1 to 0.5")


@dataclass(frozen=True)
class BYOLConfig(Section):
    """BYOL: the target network's base momentum, raised to 1 on a cosine over training."""

    section: ClassVar[str] = "byol"
    momentum: float = 0.99

    def check(self) -> None:
        _check_momentum("byol.momentum", self.momentum, "BYOL uses 0.996")


@dataclass(frozen=True)
class SwAVConfig(Section):
    """SwAV (two crops, no queue): prototypes, the temperature, Sinkhorn's entropy weight and iterations."""

    section: ClassVar[str] = "swav"
    prototypes: int = 300
    epsilon: float = 0.05
    sinkhorn_iters: int = 3
    freeze_prototypes_epochs: int = 1
    tau: float = 0.2

    def check(self) -> None:
        self._positive("prototypes", "sinkhorn_iters")
        if self.epsilon <= 0:
            raise ConfigError(f"swav.epsilon={self.epsilon} must be > 0 (Sinkhorn's entropy weight; SwAV uses 0.05).")
        _check_tau("swav.tau", self.tau, "SwAV uses 0.1")


@dataclass(frozen=True)
class OptimConfig(Section):
    """SGD with momentum, its learning-rate schedule and warm-up."""

    section: ClassVar[str] = "optim"
    lr: float = 0.12
    momentum: float = 0.9
    weight_decay: float = 5.0e-4
    schedule: Literal["cosine", "step"] = "cosine"
    milestones: tuple[int, ...] = ()     # epochs where a step schedule multiplies lr by 0.1
    warmup_epochs: int = 0
    fused: bool | Auto = "auto"          # fused SGD: auto (on CUDA) | true | false

    def check(self) -> None:
        if self.lr <= 0:
            raise ConfigError(f"optim.lr={self.lr} must be > 0 (the CPU recipes use 0.06 to 0.12).")
        if not 0 <= self.momentum < 1:
            raise ConfigError(f"optim.momentum={self.momentum} must lie in [0, 1) (SGD's momentum; the recipes use 0.9).")
        if self.weight_decay < 0:
            raise ConfigError(f"optim.weight_decay={self.weight_decay} must be >= 0 (the recipes use 5e-4 or 1e-4).")
        if self.warmup_epochs < 0:
            raise ConfigError(f"optim.warmup_epochs={self.warmup_epochs} must be >= 0 (0: no warm-up).")
        if any(m < 0 for m in self.milestones):
            raise ConfigError(f"optim.milestones={list(self.milestones)} must be epochs >= 0.")
        if self.milestones and self.schedule != "step":
            raise ConfigError(f"optim.milestones={list(self.milestones)} are the epochs where a step schedule decays; "
                              f"optim.schedule={self.schedule} would ignore them. Set optim.schedule=step, or drop "
                              "optim.milestones.")


@dataclass(frozen=True)
class TrainConfig(Section):
    """The loop: epochs, batch, checkpoints, and how (not what) the steps compute."""

    section: ClassVar[str] = "train"
    epochs: int = 30
    batch_size: int = 256
    checkpoint_every: int = 1
    amp: Literal["bf16"] | None = None   # null | bf16 (autocast on CUDA or CPU)
    # NHWC memory format: auto (on: measured faster on CPU, and on tensor cores) | true | false. It changes how,
    # not what, a run computes (float rounding only), so configs that differ only here describe the same run.
    channels_last: bool | Auto = "auto"
    # torch.compile the networks: auto (inductor on CPU for runs long enough to pay for a cold compile, see
    # ftcl_core.execution.compile_backend) | true (inductor) | false | a backend name. Like channels_last it
    # changes float rounding only, so it is not part of a run's identity.
    compile: bool | str = "auto"
    # Where FT draws its lambdas and queue permutations: auto (device on CUDA, host on CPU) | host (a CPU generator,
    # copied to the device each step: every run stored before this key) | device (a generator on the device,
    # seeded from the seed, checkpointed; ftcl_core.execution.ft_device_draws). The same distributions, so not part
    # of a run's identity; but device draws are another random stream: not the numbers of a host-drawn run.
    ft_draws: Literal["auto", "host", "device"] = "auto"
    # How split batch-norm computes its groups in the channels-last (blocks) layout: auto (one batch-norm per group
    # written into one output on the CPU; one pass over a view of the batch on CUDA, under autocast and compiled) |
    # per_group (one batch-norm per group everywhere: off the CPU a concatenation, as every run stored before this
    # key) | view (ftcl_core.models.grouped_batch_norm everywhere). The same groups and maths: float rounding only.
    split_bn: Literal["auto", "per_group", "view"] = "auto"
    # A captured step on CUDA: the networks compiled by inductor with CUDA graphs (torch.compile mode
    # "reduce-overhead"), so a small network's hundreds of kernel launches a step replay as one graph. CUDA only,
    # one process; the same maths as eager to float32 rounding (the GPU check compares them).
    cuda_graph: bool = False

    def check(self) -> None:
        self._positive("epochs", "checkpoint_every")
        if isinstance(self.compile, str) and self.compile not in ("auto", "inductor"):
            from torch._dynamo import list_backends  # only for a named backend: the config loads without torch

            if self.compile not in list_backends(exclude_tags=()):
                raise ConfigError(f"train.compile={self.compile!r} is neither auto, true, false nor a compiler backend "
                                  f"torch knows ({', '.join(list_backends(exclude_tags=()))}).")
        if self.cuda_graph and isinstance(self.compile, str) and self.compile not in ("auto", "inductor"):
            raise ConfigError(f"train.cuda_graph=true compiles the networks with inductor's CUDA graphs (it compiles "
                              f"whatever train.compile says); train.compile={self.compile!r} names another compiler "
                              "backend. Set train.compile=auto, or train.cuda_graph=false.")
        if self.batch_size < 2:
            raise ConfigError(f"train.batch_size={self.batch_size} must be an integer >= 2.")


@dataclass(frozen=True)
class StatsConfig(Section):
    """What the training log records beside the loss (score statistics, histograms, gradient norms)."""

    section: ClassVar[str] = "stats"
    n_queries: int = 64
    sync_every: int = 50
    histograms: bool = False
    grad_norms_per_step: bool = False
    same_class: bool = False  # MoCo: record the queue's same-class share per step (keeps the keys' labels)

    def check(self) -> None:
        self._positive("n_queries", "sync_every")


# The Beta parameters FT may draw lambda with (ft.alpha_ex, ft.alpha_in, ft.hard_a, ft.hard_b): within it every draw
# terminates and is a number in (0, 1) (ftcl_core.transforms.sample_gamma's rejection loop never ends at inf).
BETA_RANGE = (0.05, 100.0)


@dataclass(frozen=True)
class FTConfig(Section):
    """Which feature transformations to apply, and how (the ``ft.*`` keys of a run config)."""

    section: ClassVar[str] = "ft"
    pos: bool = False                 # positive extrapolation, eq. 3
    pos_mode: Literal["extrapolate", "interpolate"] = "extrapolate"   # interpolate: Table 3 ablation
    alpha_ex: float = 2.0
    neg: bool = False                 # negative interpolation, Sec 4.2
    neg_mode: Literal["interpolate", "extrapolate"] = "interpolate"   # extrapolate: Supp G.1
    alpha_in: float = 1.6
    union_queue: bool = False         # negatives = Z' U Z_neg (Table 5)
    hard: bool = False                # hard negatives mixed with the query (Supp G.2)
    hard_a: float = 2.0
    hard_b: float = 1.0
    granularity: Granularity = "step"
    renorm_pos: bool = False          # Supp F: re-normalise q', k'
    renorm_neg: bool = False          # Supp F: re-normalise the transformed queue
    start_epoch: int = 0              # Table 6
    start: Literal["epoch", "auto"] = "epoch"  # auto: the run switches FT on itself (ft.PlateauStart; issue 66)
    auto_window: int = 5              # ft.start=auto: epochs over which the loss's recent fall is measured
    auto_fraction: float = 0.1        # ft.start=auto: on once that fall is below this share of the fall so far
    pos_gate: float | None = None     # +pos skipped where raw Mean(neg) is this far above the epoch before (issue 66)
    # the released run's 8 processes each draw their own lambda (and mix the queue their own way) for their
    # 32 queries: shards > 1 does that in one process, one draw per shard of batch / shards queries (not in the paper)
    shards: int = 1

    def check(self) -> None:
        lo, hi = BETA_RANGE
        for name in ("alpha_ex", "alpha_in", "hard_a", "hard_b"):
            if not lo <= getattr(self, name) <= hi:
                raise ConfigError(f"ft.{name}={getattr(self, name)} must lie in [{lo:g}, {hi:g}] (a Beta parameter; the "
                                  "paper uses 0.2 to 2.0): beyond that a draw of lambda is a constant or a NaN.")
        self._positive("shards")
        self._positive("auto_window")
        if not 0.0 < self.auto_fraction < 1.0:
            raise ConfigError(f"ft.auto_fraction={self.auto_fraction} must lie in (0, 1): a share of the loss's fall "
                              "so far (0.1 switches FT on once the last ft.auto_window epochs fell by under a tenth).")
        if self.start == "auto" and self.start_epoch != 0:
            raise ConfigError(f"ft.start=auto lets the run choose when FT switches on; ft.start_epoch={self.start_epoch} "
                              "names an epoch too. Drop ft.start_epoch, or set ft.start=epoch.")
        if self.shards > 1 and (self.granularity != "step" or self.hard or self.union_queue):
            raise ConfigError("ft.shards > 1 draws one lambda per shard: it needs ft.granularity=step and neither "
                              "ft.hard nor ft.union_queue; set ft.shards=1 for those.")

    @property
    def any(self) -> bool:
        return self.pos or self.neg or self.hard


@dataclass(frozen=True)
class EvalConfig(Section):
    """The readouts after training: kNN, linear, and the random-init and raw-pixel references."""

    section: ClassVar[str] = "eval"
    knn_k: int = 200
    knn_t: float = 0.1
    linear_epochs: int = 100
    linear_lr: float = 0.1
    random_init: bool = True
    # the linear readout of raw pixels, a third reference: auto (real images; the shapes' palette makes it ~14 %,
    # below the random-init encoder) | true | false
    raw_pixels: bool | Auto = "auto"

    def check(self) -> None:
        self._positive("knn_k", "linear_epochs")
        for key in ("knn_t", "linear_lr"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"eval.{key}={getattr(self, key)} must be > 0 (default {getattr(EvalConfig, key)}).")
        if self.knn_t < 0.02:  # the kNN's weights exp(cosine / t) pass float32's largest number below t = 1 / 88
            raise ConfigError(f"eval.knn_t={self.knn_t} is too small: the kNN weights exp(cosine / t) overflow "
                              "below 0.012. Use 0.02 or more (0.07 and 0.1 are usual).")


MAX_SEED = 2**32 - 1  # the largest seed numpy's generators take (torch's: 2**64 - 1)
# The sections of a run config, by YAML key; the method sections are stored only for their method.
SECTIONS: dict[str, type[Section]] = {
    "data": DataConfig, "augment": AugmentationConfig, "model": ModelConfig, "moco": MoCoConfig,
    "simclr": SimCLRConfig, "byol": BYOLConfig, "swav": SwAVConfig, "optim": OptimConfig, "train": TrainConfig,
    "stats": StatsConfig, "ft": FTConfig, "eval": EvalConfig,
}
METHOD_SECTIONS = {"moco": "moco", "simclr": "simclr", "byol": "byol", "swav": "swav"}  # simsiam has none
# Keys that choose how a run executes, not what it computes: two configs that differ only in these describe the same
# run (a stored run made with another memory format, compiled, or on a GPU still counts).  One step agrees to float32
# rounding; over a whole run that rounding grows as any change of float kernels does (another CPU model, the compiler),
# so a run and its re-execution agree in distribution over seeds, not bit for bit.  train.ft_draws (FT's draws on the
# device, the CUDA default) changes FT's random stream, not its distributions: a like claim, from its first step.
# Each run's provenance.json records where and how it ran.
EXECUTION_KEYS = ("device", "train.channels_last", "train.compile", "train.ft_draws", "train.split_bn",
                  "train.cuda_graph")


@dataclass(frozen=True)
class RunConfig(Section):
    """A whole run: the method, its seed and device, and one typed section per concern."""

    method: Method = "moco"
    seed: int = 0
    device: str = "cpu"
    data: DataConfig = field(default_factory=DataConfig)
    augment: AugmentationConfig = field(default_factory=AugmentationConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    moco: MoCoConfig = field(default_factory=MoCoConfig)
    simclr: SimCLRConfig = field(default_factory=SimCLRConfig)
    byol: BYOLConfig = field(default_factory=BYOLConfig)
    swav: SwAVConfig = field(default_factory=SwAVConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    stats: StatsConfig = field(default_factory=StatsConfig)
    ft: FTConfig = field(default_factory=FTConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def check(self) -> None:
        """The checks that need two sections, all before anything is written to a run folder."""
        if not 0 <= self.seed <= MAX_SEED:
            raise ConfigError(f"seed={self.seed} must be an integer in [0, {MAX_SEED}] (2**32 - 1), e.g. seed=0.")
        ft, method = self.ft, self.method
        if self.train.split_bn != "auto" and (self.model.bn_splits <= 1 or self.train.channels_last is False):
            raise ConfigError(f"train.split_bn={self.train.split_bn} chooses how split batch-norm's channels-last "
                              f"(blocks) layout computes its groups; this config has model.bn_splits="
                              f"{self.model.bn_splits} and train.channels_last={self.train.channels_last}, so it "
                              "would be ignored. Set train.split_bn=auto, or bn_splits > 1 with channels_last auto/true.")
        if self.train.cuda_graph and self.device == "cpu":
            raise ConfigError("train.cuda_graph=true captures the step in CUDA graphs; device=cpu has none. Set "
                              "device=cuda (or auto on a GPU machine), or train.cuda_graph=false (on the CPU "
                              "train.compile=true is the compiled path).")
        k, bs = self.moco.queue_size, self.train.batch_size
        if self.moco.drop_same_class and (method != "moco" or ft.hard):
            raise ConfigError("moco.drop_same_class=true (the false-negative oracle) is for method=moco without "
                              "ft.hard: set it to false, or use method=moco with plain or interpolated negatives.")
        if self.stats.same_class and method != "moco":
            raise ConfigError(f"stats.same_class=true records the share of a MoCo queue's keys that belong to the "
                              f"query's class; method={method} has no queue. Set it to false.")
        if method not in CONTRASTIVE:
            bad = [k for k in ("neg", "hard", "union_queue") if getattr(ft, k)]
            if bad:
                raise ConfigError(
                    f"method={method} has no negatives, so ft.{bad[0]}=true cannot apply; the paper applies only "
                    "positive extrapolation (ft.pos=true) to BYOL, SimSiam and SwAV."
                )
        for key in ("union_queue", "renorm_neg"):  # after the method's check: its message names the method
            if getattr(ft, key) and not ft.neg:
                raise ConfigError(f"ft.{key}=true acts on the transformed negatives only; set ft.neg=true too, "
                                  "or drop it.")
        if ft.shards > 1 and (bs % ft.shards or self.moco.drop_same_class or (ft.neg and method != "moco")):
            raise ConfigError(f"ft.shards={ft.shards} needs train.batch_size={bs} divisible by it, method=moco where "
                              "ft.neg=true, and no moco.drop_same_class; set ft.shards=1 otherwise.")
        if self.optim.warmup_epochs >= self.train.epochs:
            raise ConfigError(f"optim.warmup_epochs={self.optim.warmup_epochs} is not below train.epochs="
                              f"{self.train.epochs}: the learning rate would never reach optim.lr. Lower the warm-up "
                              "(the recipes use 0 or 10 of 100 or more epochs).")
        if self.stats.n_queries > bs:
            raise ConfigError(f"stats.n_queries={self.stats.n_queries} exceeds train.batch_size={bs}: the statistics "
                              f"read the first n queries of a batch. Set stats.n_queries <= {bs} (64 is usual).")
        if self.data.eval_split == "test" and self.data.n_val != DataConfig.n_val:
            raise ConfigError(f"data.n_val={self.data.n_val} sizes the validation split, and data.eval_split=test "
                              "scores the test set, so it would be ignored. Set data.eval_split=val, or drop data.n_val.")
        if self.eval.knn_k > self.data.n_train:
            raise ConfigError(f"eval.knn_k={self.eval.knn_k} exceeds data.n_train={self.data.n_train}: the kNN readout "
                              "votes over the training images' features; set eval.knn_k <= data.n_train (200 is usual).")
        if ft.start == "auto" and not ft.any:
            raise ConfigError("ft.start=auto switches FT on when the run decides; with no transformation on (ft.pos, "
                              "ft.neg or ft.hard) there is nothing to switch. Turn one on, or drop ft.start.")
        if ft.start == "auto" and ft.auto_window > self.train.epochs - 2:
            raise ConfigError(f"ft.start=auto decides at an epoch's end once ft.auto_window={ft.auto_window} epochs "
                              f"have passed, and FT runs from the next: with train.epochs={self.train.epochs} it could "
                              f"never switch on. It needs train.epochs >= ft.auto_window + 2"
                              + (f", or ft.auto_window <= {self.train.epochs - 2}." if self.train.epochs > 2 else "."))
        defaults = FTConfig()
        for on, keys in (("pos", ("pos_mode", "alpha_ex", "renorm_pos", "pos_gate")), ("neg", ("neg_mode", "alpha_in")),
                         ("hard", ("hard_a", "hard_b"))):
            idle = [k for k in keys if not getattr(ft, on) and getattr(ft, k) != getattr(defaults, k)]
            if idle:
                raise ConfigError(f"ft.{idle[0]}={_yaml(_plain(getattr(ft, idle[0])))} shapes ft.{on}, which is off, so "
                                  f"it would be ignored. Set ft.{on}=true, or drop ft.{idle[0]}.")
        idle = [k for k in ("granularity", "start_epoch", "shards") if not ft.any and getattr(ft, k) != getattr(defaults, k)]
        if idle:
            raise ConfigError(f"ft.{idle[0]}={_yaml(_plain(getattr(ft, idle[0])))} shapes the transformations, and none "
                              "is on (ft.pos, ft.neg, ft.hard), so it would be ignored. Turn one on, or drop "
                              f"ft.{idle[0]}.")
        if ft.start != "auto" and (ft.auto_window, ft.auto_fraction) != (defaults.auto_window, defaults.auto_fraction):
            raise ConfigError("ft.auto_window and ft.auto_fraction shape the rule of ft.start=auto; this config has "
                              "ft.start=epoch, so they would be ignored. Set ft.start=auto, or drop them.")
        if ft.pos_gate is not None and not (method == "moco" and ft.start_epoch >= 1 and 0 < ft.pos_gate < 2):
            raise ConfigError(f"ft.pos_gate={ft.pos_gate} skips +pos on a step whose raw Mean(neg) exceeds its mean over "
                              "the epoch before FT switches on by this cosine margin: it needs a margin in (0, 2), "
                              "method=moco (a queue) and ft.start_epoch >= 1. Set them, or drop ft.pos_gate.")
        if ft.any and not 0 <= ft.start_epoch < self.train.epochs:
            raise ConfigError(f"ft.start_epoch={ft.start_epoch} must lie in [0, train.epochs={self.train.epochs}): "
                              "otherwise FT never switches on.")
        if method == "moco" and k < bs:
            raise ConfigError(f"moco.queue_size K={k} is smaller than train.batch_size={bs}; use K >= batch size.")
        if method == "moco" and self.data.name in ("shapes", "fashion_mnist") and k >= self.data.n_train:
            raise ConfigError(
                f"moco.queue_size K={k} is not below data.n_train={self.data.n_train}: the queue would hold "
                "keys of the query's own image. Lower K or draw more images."
            )
        if bs % self.model.bn_splits:
            raise ConfigError(f"train.batch_size={bs} is not divisible by model.bn_splits={self.model.bn_splits}; "
                              "each step's batch is split into bn_splits groups.")

    # ---- the method's own settings, named for what they are to the loop ----

    @property
    def tau(self) -> float | None:
        """The temperature of this run's method (None for BYOL and SimSiam, which have none)."""
        return {"moco": self.moco.tau, "simclr": self.simclr.tau, "swav": self.swav.tau}.get(self.method)

    # ---- conversions ----

    @classmethod
    def from_dict(cls, raw: dict) -> RunConfig:
        """The config of a nested dict (a YAML file, a stored ``config.yaml``): missing keys take their
        defaults, old keys map onto the new ones, unknown keys and wrong values are a :class:`ConfigError`."""
        raw = _migrate(raw)
        top = {f.name for f in dataclasses.fields(cls)} - set(SECTIONS)
        _check_keys(raw)
        kwargs = {k: raw[k] for k in top if k in raw}
        for name, section in SECTIONS.items():
            values = raw.get(name) or {}
            try:
                kwargs[name] = section(**values)
            except TypeError as err:  # a section given a non-mapping, e.g. ``ft: true``
                raise ConfigError(f"config section {name!r} must map keys to values ({err}).") from err
        return cls(**kwargs)

    def to_dict(self) -> dict:
        """The nested dict a run folder stores (lists for tuples; only this method's own method section)."""
        out: dict[str, Any] = {"method": self.method, "seed": self.seed, "device": self.device}
        for name in SECTIONS:
            if name in METHOD_SECTIONS and METHOD_SECTIONS[name] != self.method:
                continue
            out[name] = _section_dict(getattr(self, name))
        return out

    def updated(self, overrides: dict[str, Any] | list[str]) -> RunConfig:
        """A new config with dotted overrides (``{"train.epochs": 2}`` or ``["train.epochs=2"]``), checked again."""
        items = parse_overrides(overrides) if isinstance(overrides, list) else _nest(overrides)
        return RunConfig.from_dict(merge(self.to_dict(), items))


def _section_dict(section: Section) -> dict[str, Any]:
    return {f.name: _plain(getattr(section, f.name)) for f in dataclasses.fields(section)}


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def _nest(dotted: dict[str, Any]) -> dict:
    out: dict = {}
    for key, value in dotted.items():
        _set(out, key, value)
    return out


# ---------------------------------------------------------------------------------------------------
# Keys: the known ones, old ones, dotted overrides
# ---------------------------------------------------------------------------------------------------


@functools.cache
def _known_keys() -> tuple[str, ...]:
    """Every dotted key a config may set (computed once: the sections are fixed)."""
    keys = [f.name for f in dataclasses.fields(RunConfig) if f.name not in SECTIONS]
    for name, section in SECTIONS.items():
        keys += [f"{name}.{f.name}" for f in dataclasses.fields(section)]
    return tuple(keys)


def _check_keys(raw: dict) -> None:
    known = set(_known_keys())
    for key in _flatten(raw):
        if key not in known:
            raise _unknown_key(key, known)


def _unknown_key(key: str, known) -> ConfigError:
    """The refusal of a key no section holds: a whole section given as one value, or a misspelt key."""
    if key in SECTIONS:
        return ConfigError(f"{key} is a section, not one value: set its keys one at a time ({key}.<key>=<value>), "
                           f"e.g. {sorted(k for k in known if k.startswith(key + '.'))[0]}=...")
    close = difflib.get_close_matches(key, known, n=3)
    return ConfigError(f"unknown config key {key!r}" + (f"; did you mean {close}?" if close else "") +
                       " See ftcl_core.config.DEFAULTS.")


# Before the method sections, every method read its temperature from moco.tau and BYOL its momentum from
# moco.momentum; a config (a stored run, an old YAML file) that says so means the method's own key.
OLD_KEYS = {"simclr": {"tau": "tau"}, "swav": {"tau": "tau"}, "byol": {"momentum": "momentum"}}


def _migrate(raw: dict) -> dict:
    """``raw`` with the old keys of :data:`OLD_KEYS` moved to the method's section, unless the new key is given
    too (then they must agree)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"a config must map keys to values, not {type(raw).__name__}.")
    method = raw.get("method", "moco")
    old = raw.get("moco")
    if method not in OLD_KEYS or not isinstance(old, dict):
        return raw
    out = copy.deepcopy(raw)
    own = out.setdefault(method, {})
    for old_key, new_key in OLD_KEYS[method].items():
        if old_key not in old:
            continue
        if new_key in own and own[new_key] != old[old_key]:
            raise ConfigError(f"moco.{old_key}={old[old_key]} and {method}.{new_key}={own[new_key]} disagree; "
                              f"moco.{old_key} is MoCo's: for method={method} set only {method}.{new_key}.")
        own[new_key] = old[old_key]
        del out["moco"][old_key]
    return out


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _set(d: dict, dotted: str, value: Any) -> None:
    known = _known_keys()
    if dotted not in known:
        raise _unknown_key(dotted, known)
    *parents, leaf = dotted.split(".")
    for p in parents:
        d = d.setdefault(p, {})
    d[leaf] = value


def merge(base: dict, update: dict) -> dict:
    """``base`` updated with every leaf of ``update`` (plain nested dicts; keys checked)."""
    out = copy.deepcopy(base)
    for key, value in _flatten(update).items():
        _set(out, key, value)
    return out


def parse_overrides(items: list[str]) -> dict:
    """``["ft.pos=true", "moco.momentum=0.9"]`` -> nested dict; values are parsed as YAML scalars."""
    if isinstance(items, str):
        raise ConfigError(f"overrides {items!r} must be a list of KEY=VALUE strings, e.g. [{items!r}].")
    out: dict = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not KEY=VALUE (for example ft.pos=true).")
        key, raw = item.split("=", 1)
        value = yaml.safe_load(raw)
        if isinstance(value, int) and not isinstance(value, bool) and not DECIMAL.fullmatch(raw.strip()):
            raise ConfigError(f"override {item!r}: YAML reads {raw.strip()!r} as {value} (an octal, hex or base-60 "
                              "number); write the number in plain decimal digits, with no leading zero or colon.")
        _set(out, key.strip(), value)
    return out


DECIMAL = re.compile(r"[-+]?(0|[1-9][0-9_]*)")  # an integer as a user means it (YAML 1.1 also reads 010, 0x8, 1:00)



class _UniqueKeys(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last silently)."""

    def construct_mapping(self, node, deep=False):  # noqa: ANN001, ANN201  (PyYAML's signature)
        keys = [k for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
        if twice := next((k for i, k in enumerate(keys) if k.value in [j.value for j in keys[:i]]), None):
            raise ConfigError(f"gives the key {twice.value!r} twice (again on line {twice.start_mark.line + 1}): YAML "
                              "would keep the second silently; merge them into one")
        return super().construct_mapping(node, deep=deep)


def load_yaml_mapping(path: str | os.PathLike, what: str, example: str) -> dict:
    """The YAML mapping in the file ``path`` (``what``: a config file, an experiment file; ``example``: one to
    compare it with); empty, not text, not YAML, not a mapping or a key given twice is a :class:`ConfigError`."""
    try:
        loaded = yaml.load(Path(path).read_bytes().decode(), Loader=_UniqueKeys)  # noqa: S506  (a safe loader)
        problem = "is empty" if loaded is None else "" if isinstance(loaded, dict) else \
            f"holds a YAML {type(loaded).__name__} ({' '.join(str(loaded).split())[:60]}), not a mapping"
    except ConfigError as err:
        problem = str(err)
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        problem = f"is not a YAML mapping ({' '.join(str(err).split())[:160]})"
    if problem:
        raise ConfigError(f"{what} {path} {problem}; compare it with {example}.")
    return loaded


def load_config(path: str | os.PathLike | None, overrides: list[str] | None = None) -> RunConfig:
    """The defaults, updated by the YAML file at ``path`` (may be None), updated by ``key=value`` overrides;
    checked once, here."""
    raw: dict = {}
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"load_config takes a config file's path, not a {type(path).__name__}: for a dict of keys "
                          "use RunConfig.from_dict(d), or pass its keys as overrides, load_config(None, ['k=v', ...]).")
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(
                f"config file {p} not found; the default CPU runs are configs/cpu_moco_v2.yaml and configs/cpu_moco_v1.yaml."
            )
        raw = _migrate(_nested(load_yaml_mapping(p, "config file", "configs/cpu_moco_v2.yaml"), p))
        _check_other_methods(raw, raw.get("method", "moco"))
    asked = parse_overrides(overrides or [])
    raw = merge(raw, asked)
    _check_other_methods(asked, raw.get("method", "moco"))  # typed now: no old key is mapped onto the new
    return RunConfig.from_dict(raw)


def _nested(raw: dict, path: Path) -> dict:
    """``raw`` with its dotted keys (``ft.pos: true`` at the top of a file) moved into their sections, as an
    override's are; a key given both ways is refused (one of the two would be lost)."""
    dotted = {k: v for k, v in raw.items() if isinstance(k, str) and "." in k}
    if not dotted:
        return raw
    plain = {k: v for k, v in raw.items() if k not in dotted}
    if twice := sorted(set(_flatten(plain)) & set(_flatten(_nest(dotted)))):
        raise ConfigError(f"config file {path} gives {twice[0]} twice, as a dotted key and inside its section; keep one.")
    return merge(plain, dotted)


def _check_other_methods(raw: dict, method: str) -> None:
    """Refuse a key of another method's section than ``method``'s (``simclr.tau`` for a MoCo run) in ``raw`` (a
    file, or the overrides): the run would ignore it, and :meth:`RunConfig.to_dict` would not even store it.  A
    file's own keys are judged by the file's method, so a MoCo file run with ``method=simclr`` keeps working."""
    for owner, name in METHOD_SECTIONS.items():
        given = raw.get(name)
        if owner == method or not isinstance(given, dict):
            continue
        default = SECTIONS[name]()
        if key := next((k for k, v in given.items() if hasattr(default, k) and _plain(getattr(default, k)) != v), None):
            raise ConfigError(f"{name}.{key}={_yaml(given[key])} belongs to method={owner}; this run's method={method} "
                              f"would ignore it. Drop {name}.{key}" + (f", or set {_own_key(method, key)}." if
                                                                      _own_key(method, key) else "."))


def _own_key(method: str, key: str) -> str | None:
    """``method``'s own key of the same name (``simclr.tau`` for ``moco.tau``), if it has one."""
    name = METHOD_SECTIONS.get(method)
    return f"{name}.{key}" if name and hasattr(SECTIONS[name](), key) else None


def as_config(cfg: RunConfig | dict) -> RunConfig:
    """``cfg`` as a :class:`RunConfig` (a stored run's dict is parsed, its old keys mapped)."""
    return cfg if isinstance(cfg, RunConfig) else RunConfig.from_dict(cfg)


def config_diff(a: RunConfig | dict, b: RunConfig | dict) -> list[str]:
    """Dotted keys whose values differ between two configs (missing keys count as their defaults, so configs
    stored before a key was added still compare equal when they used its default; old keys count as the new
    ones; the :data:`EXECUTION_KEYS` are not compared)."""
    fa, fb = _flatten(as_config(a).to_dict()), _flatten(as_config(b).to_dict())
    return sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k) and k not in EXECUTION_KEYS)


def config_mismatch(stored: RunConfig | dict, asked: RunConfig | dict, limit: int = 3) -> str:
    """The keys of :func:`config_diff` with both values, as an error message quotes them:
    ``optim.lr=0.06 (the run's) against optim.lr=0.01 (this command's)``, at most ``limit`` of them; "" when none."""
    fa, fb = _flatten(as_config(stored).to_dict()), _flatten(as_config(asked).to_dict())
    keys = config_diff(stored, asked)
    shown = [f"{k}={_yaml(_plain(fa.get(k)))} (the run's) against {k}={_yaml(_plain(fb.get(k)))} (this command's)"
             for k in keys[:limit]]
    return "; ".join(shown) + (f"; and {len(keys) - limit} more key(s)" if len(keys) > limit else "")


# Every key with its default, as a nested dict (all method sections): the reference of what a config may say.
DEFAULTS: dict[str, Any] = {"method": "moco", "seed": 0, "device": "cpu",
                            **{name: _section_dict(section()) for name, section in SECTIONS.items()}}
