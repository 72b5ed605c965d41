"""The sections of a run config, one frozen, typed dataclass each (the ``data.*``, ``model.*``, ``ft.*`` ... keys), with
the checks inside a section; checks that need two sections live in :meth:`ftcl_core.config.RunConfig.check`.

The names that other modules own (methods, encoders, augmentation presets, lambda granularities) are kept here as
plain data, and the owners check at import time that their tables agree with these. Imported from
:mod:`ftcl_core.config`, which re-exports every name.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from typing import ClassVar, Literal

from ftcl_core.config_fields import ConfigError, Section, _plain, _yaml, did_you_mean

FLOAT32_MAX = 3.4028234663852886e38  # the largest float32: a value beyond it cannot enter a weight update
MIN_TEMPERATURE = 1e-4  # below it 1 / tau of a cosine nears float32's range: logits overflow to inf, the loss to NaN
MAX_TEMPERATURE = 10  # above it cosines in [-1, 1] over tau are logits all near 0: nothing to learn

# The names a config may use; each owner (see the comment) checks that its table matches.
METHODS = ("moco", "simclr", "byol", "simsiam", "swav")  # the keys of ftcl_core.methods.METHODS
CONTRASTIVE = ("moco", "simclr")  # the methods with negatives (the others take positive FT only, Table 7)
SMALL_ENCODERS = ("resnet10_w16", "resnet10_w32", "resnet18_w16", "resnet18_w32", "resnet18_w64")  # models.SMALL
TORCHVISION_ENCODERS = ("resnet18", "resnet50", "resnet18_cifar", "resnet50_cifar")  # ftcl_core.models.TORCHVISION
AUGMENT_PRESETS = ("v1", "v2", "simclr")  # ftcl_core.augment.PRESETS
GRANULARITIES = ("step", "sample", "dim")  # ftcl_core.transforms.lambda_shape

Method = Literal["moco", "simclr", "byol", "simsiam", "swav"]
MAX_SHAPES_SIZE = 1024  # the shapes are drawn at any size; past this one image alone takes 3 MB
DataSet = Literal["shapes", "fashion_mnist", "imagefolder", "cifar10", "cifar100", "stl10"]
Preset = Literal["v1", "v2", "simclr"]
Granularity = Literal["step", "sample", "dim"]
Auto = Literal["auto"]


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
        if self.workers < 0:
            raise ConfigError(f"data.workers={self.workers} must be >= 0 (0 decodes in this process, N in N others).")
        if self.max_per_class is not None and self.max_per_class < 1:
            raise ConfigError(f"data.max_per_class={self.max_per_class} would keep no image of a class: give a cap "
                              ">= 1, or drop data.max_per_class to keep them all.")
        if self.eval_split == "val" and self.n_val < 10:
            raise ConfigError(f"data.n_val={self.n_val}: a readout over fewer than 10 held-out images reads 0 or 100 "
                              "% by chance; give data.n_val >= 10 (default 2000).")
        if self.name == "shapes" and not 8 <= self.image_size <= MAX_SHAPES_SIZE:
            raise ConfigError(f"data.image_size={self.image_size}: the drawn shapes need at least 8 px and at most "
                              f"{MAX_SHAPES_SIZE} (default 32).")
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
        if self.blur_sigma is not None and self.blur_sigma[1] > self.out_size:
            raise ConfigError(f"augment.blur_sigma={list(self.blur_sigma)} blurs wider than the {self.out_size}-px view "
                              f"(every view one colour): keep the high end <= augment.out_size={self.out_size} "
                              "(MoCo v2: [0.1, 2.0] at 224 px).")
        lo, hi = self.crop_scale
        if not 0.01 <= lo <= hi <= 1:  # below 1 % of the image a crop of a 32-px image is one or two pixels
            raise ConfigError(f"augment.crop_scale={list(self.crop_scale)} must be [low, high] with 0.01 <= low <= "
                              "high <= 1 (the share of the image a crop keeps; MoCo uses [0.2, 1.0]).")
        if self.jitter is not None and not (min(self.jitter) >= 0 and max(self.jitter[:3]) <= 1
                                            and self.jitter[3] <= 0.5):
            raise ConfigError(f"augment.jitter={list(self.jitter)} must be [brightness, contrast, saturation, hue], "
                              "each in [0, 1] and hue <= 0.5 (MoCo v2: [0.4, 0.4, 0.4, 0.1]; 1 already draws black "
                              "or gray images), or null for the preset's.")
        for key in ("jitter_p", "gray_p", "blur_p"):
            p = getattr(self, key)
            if p is not None and not 0 <= p <= 1:
                raise ConfigError(f"augment.{key}={p} must be a probability in [0, 1], or null for the preset's.")
        no_blur = self.blur_p == 0 or (self.blur_p is None and self.preset == "v1")  # MoCo v1's recipe has no blur
        for knob, off, why in (("blur_sigma", no_blur, "augment.blur_p=0" if self.blur_p == 0 else "preset v1 has no blur"),
                               ("jitter", self.jitter_p == 0, "augment.jitter_p=0")):
            if off and getattr(self, knob) is not None:
                raise ConfigError(f"augment.{knob} shapes a transform that never runs here ({why}), so it would be "
                                  f"ignored. Drop augment.{knob}, or switch the transform on (its probability > 0).")


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
        if self.dim < 2:  # one unit feature is +1 or -1: every score is one of the two, whatever the encoder learns
            raise ConfigError(f"model.dim={self.dim}: features of one dimension, normalised, are +1 or -1, so every "
                              "score is too; give at least 2 (MoCo: 128).")
        known = [*SMALL_ENCODERS, *TORCHVISION_ENCODERS]
        if self.encoder not in known and not self.encoder.startswith("timm:"):
            raise ConfigError(f"unknown encoder model.encoder={self.encoder!r}{did_you_mean(self.encoder, known)}. "
                              f"Known: {known} or timm:<model>.")
        if self.encoder.startswith("timm:"):  # checked here, before a run folder or its config.yaml is written
            import timm  # only for a timm encoder: the import takes a second

            name = self.encoder.removeprefix("timm:")
            if not timm.is_model(name):
                hint = did_you_mean(self.encoder, [f"timm:{m}" for m in timm.list_models()])
                raise ConfigError(f"unknown timm model model.encoder={self.encoder!r}{hint} (timm.list_models() "
                                  "lists them all).")
            if self.bn_splits > 1:
                raise ConfigError(f"model.bn_splits={self.bn_splits} splits batch-norm inside the ResNet encoders "
                                  f"only; {self.encoder} has its own. Set model.bn_splits=1.")
        for key in ("hidden", "pred_hidden"):
            v = getattr(self, key)
            if v is not None and v < 1:
                raise ConfigError(f"model.{key}={v} must be a positive integer or null (a default size).")
        if self.sync_bn and self.bn_splits != 1:
            raise ConfigError("model.sync_bn=true needs model.bn_splits=1 (SyncBN replaces split-BN).")


def _check_tau(key: str, tau: float, hint: str) -> None:
    if tau <= 0:
        raise ConfigError(f"{key}={tau} must be > 0; {hint}.")
    if tau < MIN_TEMPERATURE:  # the library's floor too (ftcl_core.arguments.temperature)
        raise ConfigError(f"{key}={tau} is below {MIN_TEMPERATURE:g}: cosines over it overflow float32's logits and the "
                          f"run diverges at its first step. {hint[0].upper()}{hint[1:]}.")
    if tau > MAX_TEMPERATURE:
        raise ConfigError(f"{key}={tau} divides cosines in [-1, 1] into logits all near 0: the loss cannot tell "
                          f"the positive apart. Use at most {MAX_TEMPERATURE}; {hint}.")


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

    def check(self) -> None:
        self._positive("queue_size")
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
        if self.sinkhorn_iters > 1000:  # each step would wait on them; the codes settle within a few (SwAV: 3)
            raise ConfigError(f"swav.sinkhorn_iters={self.sinkhorn_iters}: use at most 1000 (SwAV uses 3).")
        if self.prototypes < 2:
            raise ConfigError(f"swav.prototypes={self.prototypes}: one prototype takes every code, so the loss is 0 "
                              "and nothing is learnt. Use at least 2 (SwAV uses 3000 on ImageNet; this book 300).")
        if self.freeze_prototypes_epochs < 0:
            raise ConfigError(f"swav.freeze_prototypes_epochs={self.freeze_prototypes_epochs} must be >= 0 (the "
                              "epochs the prototypes stay fixed at the start; SwAV uses 1).")
        if not MIN_TEMPERATURE <= self.epsilon < float("inf"):  # sinkhorn's bound: below, scores / epsilon overflow
            raise ConfigError(f"swav.epsilon={self.epsilon} must be at least {MIN_TEMPERATURE:g} (Sinkhorn's entropy "
                              "weight; below, scores / epsilon overflow; SwAV uses 0.05).")
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
        for key in ("lr", "weight_decay"):  # torch's update multiplies float32 weights by it
            if getattr(self, key) > FLOAT32_MAX:
                raise ConfigError(f"optim.{key}={getattr(self, key)} is beyond float32's largest number (3.4e38), which "
                                  "a weight update cannot hold (the recipes use 0.06 to 0.12 and 1e-4 to 5e-4).")
        if not 0 <= self.momentum < 1:
            raise ConfigError(f"optim.momentum={self.momentum} must lie in [0, 1) (SGD's momentum; the recipes use 0.9).")
        if self.weight_decay < 0:
            raise ConfigError(f"optim.weight_decay={self.weight_decay} must be >= 0 (the recipes use 5e-4 or 1e-4).")
        if self.warmup_epochs < 0:
            raise ConfigError(f"optim.warmup_epochs={self.warmup_epochs} must be >= 0 (0: no warm-up).")
        if any(m < 0 for m in self.milestones) or list(self.milestones) != sorted(set(self.milestones)):
            raise ConfigError(f"optim.milestones={list(self.milestones)} must be epochs >= 0, strictly increasing (each "
                              f"decay once), e.g. optim.milestones={sorted({abs(m) for m in self.milestones})}.")
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
        if self.epochs > 1_000_000:  # the paper's longest run is 800 epochs; a typo of digits would never end
            raise ConfigError(f"train.epochs={self.epochs} is beyond any run (the paper's longest is 800): write the "
                              "epochs meant, at most 1 000 000.")
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
    WHEN_KEYS: ClassVar[tuple[str, ...]] = ("start_epoch", "start", "auto_window", "auto_fraction")  # the loop's: when, not how

    def check(self) -> None:
        lo, hi = BETA_RANGE
        for name in ("alpha_ex", "alpha_in", "hard_a", "hard_b"):
            if not lo <= getattr(self, name) <= hi:
                raise ConfigError(f"ft.{name}={getattr(self, name)} must lie in [{lo:g}, {hi:g}] (a Beta parameter; the "
                                  "paper uses 0.2 to 2.0): beyond that a draw of lambda is a constant or a NaN.")
        self._positive("auto_window")
        if self.start_epoch < 0:  # a run config also bounds it by train.epochs (RunConfig)
            raise ConfigError(f"ft.start_epoch={self.start_epoch} must be an epoch >= 0 (0: FT from the first step).")
        if not 0.0 < self.auto_fraction < 1.0:
            raise ConfigError(f"ft.auto_fraction={self.auto_fraction} must lie in (0, 1): a share of the loss's fall "
                              "so far (0.1 switches FT on once the last ft.auto_window epochs fell by under a tenth).")
        if self.start == "auto" and self.start_epoch != 0:
            raise ConfigError(f"ft.start=auto lets the run choose when FT switches on; ft.start_epoch={self.start_epoch} "
                              "names an epoch too. Drop ft.start_epoch, or set ft.start=epoch.")
        if self.start == "auto" and not self.any:
            raise ConfigError("ft.start=auto switches FT on when the run decides; with no transformation on (ft.pos, "
                              "ft.neg or ft.hard) there is nothing to switch. Turn one on, or drop ft.start.")
        defaults = {f.name: f.default for f in dataclasses.fields(FTConfig)}  # keys a transformation that is off ignores
        for on, keys in (("pos", ("pos_mode", "alpha_ex", "renorm_pos")),
                         ("neg", ("neg_mode", "alpha_in")), ("hard", ("hard_a", "hard_b"))):
            idle = [k for k in keys if not getattr(self, on) and getattr(self, k) != defaults[k]]
            if idle:
                raise ConfigError(f"ft.{idle[0]}={_yaml(_plain(getattr(self, idle[0])))} shapes ft.{on}, which is off, "
                                  f"so it would be ignored. Set ft.{on}=true, or drop ft.{idle[0]}.")
        idle = [k for k in ("granularity", "start_epoch") if not self.any and getattr(self, k) != defaults[k]]
        if idle:
            raise ConfigError(f"ft.{idle[0]}={_yaml(_plain(getattr(self, idle[0])))} shapes the transformations, and none "
                              "is on (ft.pos, ft.neg, ft.hard), so it would be ignored. Turn one on, or drop "
                              f"ft.{idle[0]}.")
        if self.start != "auto" and (self.auto_window, self.auto_fraction) != (defaults["auto_window"],
                                                                               defaults["auto_fraction"]):
            raise ConfigError("ft.auto_window and ft.auto_fraction shape the rule of ft.start=auto; this config has "
                              "ft.start=epoch, so they would be ignored. Set ft.start=auto, or drop them.")

    @property
    def any(self) -> bool:
        return self.pos or self.neg or self.hard

    def when_keys(self) -> str:
        """The keys that say *when* FT acts (``WHEN_KEYS``, the training loop's), where not at their defaults, as
        ``k=v``; "" when none is set. Every FT step's check calls it: it compares with the defaults read once."""
        return ", ".join(f"{k}={getattr(self, k)!r}" for k, v in _when_defaults(type(self)).items() if getattr(self, k) != v)

    def step_only(self) -> FTConfig:
        """This config as one step computes it: the keys that say when FT acts (``WHEN_KEYS``) at their defaults,
        since a step is told instead whether FT is on (``active``)."""
        return dataclasses.replace(self, **_when_defaults(type(self)))

    def lambda_draws(self, n: int) -> tuple[Granularity, int]:
        """eq. 3's lambda for ``n`` pairs: ``(granularity, count)`` draws, each for ``n / count`` pairs in turn; the paper's
        ``(ft.granularity, n)``. A registered section (config.register_sections) may draw fewer, or refuse ``n``."""
        return self.granularity, n

_when_defaults = functools.cache(lambda cls: {f.name: f.default for f in dataclasses.fields(cls) if f.name in cls.WHEN_KEYS})


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
        if self.linear_lr > 10 or self.knn_t > 10:  # the probe diverges; the kNN's weights all equal
            key = "linear_lr" if self.linear_lr > 10 else "knn_t"
            raise ConfigError(f"eval.{key}={getattr(self, key)} is far beyond what a readout of unit features uses "
                              f"(the linear probe diverges, the kNN vote loses its weights): use at most 10 (default "
                              f"{getattr(EvalConfig, key)}).")
        if self.knn_t < 0.02:  # the kNN's weights exp(cosine / t) pass float32's largest number below t = 1 / 88
            raise ConfigError(f"eval.knn_t={self.knn_t} is too small: the kNN weights exp(cosine / t) overflow "
                              "below 0.012. Use 0.02 or more (0.07 and 0.1 are usual).")
