"""Run configs: the defaults, YAML files with dotted ``key=value`` overrides, and their validation.

This module imports nothing else from ``ftcl_core`` (a test walks the imports), so every other module may
import it.  The names that other modules own (methods, encoders, augmentation presets, lambda granularities)
are kept here as plain data, and the owners check at import time that their tables agree with these.
"""

from __future__ import annotations

import copy
import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# The names a config may use; each owner (see the comment) checks that its table matches.
METHODS = ("moco", "simclr", "byol", "simsiam", "swav")  # ftcl_core.methods.REGISTRY
CONTRASTIVE = ("moco", "simclr")  # the methods with negatives (the others take positive FT only, Table 5)
SMALL_ENCODERS = ("resnet10_w16", "resnet10_w32", "resnet18_w16", "resnet18_w32")  # ftcl_core.models.SMALL
TORCHVISION_ENCODERS = ("resnet18", "resnet50", "resnet18_cifar", "resnet50_cifar")  # ftcl_core.models.TORCHVISION
AUGMENT_PRESETS = ("v1", "v2", "simclr")  # ftcl_core.augment.PRESETS
GRANULARITIES = ("step", "sample", "dim")  # ftcl_core.transforms.lambda_shape


@dataclass(frozen=True)
class FTConfig:
    """Which feature transformations to apply, and how (the ``ft.*`` keys of a run config)."""

    pos: bool = False                 # positive extrapolation, eq. 3
    pos_mode: str = "extrapolate"     # or "interpolate" (Table 4 ablation)
    alpha_ex: float = 2.0
    neg: bool = False                 # negative interpolation, Sec 4.2
    neg_mode: str = "interpolate"     # or "extrapolate" (Supp G.1)
    alpha_in: float = 1.6
    union_queue: bool = False         # negatives = Z' U Z_neg (Table 6)
    hard: bool = False                # hard negatives mixed with the query (Supp G.2)
    hard_a: float = 2.0
    hard_b: float = 1.0
    granularity: str = "step"         # "step" | "sample" | "dim"
    renorm_pos: bool = False          # Supp F: re-normalise q', k'
    renorm_neg: bool = False          # Supp F: re-normalise the transformed queue
    start_epoch: int = 0              # Table 7

    def __post_init__(self) -> None:
        for name in ("alpha_ex", "alpha_in", "hard_a", "hard_b"):
            if getattr(self, name) <= 0:
                raise ValueError(f"ft.{name}={getattr(self, name)} must be > 0 (a Beta parameter).")
        if self.pos_mode not in ("extrapolate", "interpolate"):
            raise ValueError(f"ft.pos_mode={self.pos_mode!r}: choose 'extrapolate' or 'interpolate'.")
        if self.neg_mode not in ("interpolate", "extrapolate"):
            raise ValueError(f"ft.neg_mode={self.neg_mode!r}: choose 'interpolate' or 'extrapolate'.")
        if self.granularity not in GRANULARITIES:
            raise ValueError(f"unknown lambda granularity {self.granularity!r}; choose one of {sorted(GRANULARITIES)}.")

    @property
    def any(self) -> bool:
        return self.pos or self.neg or self.hard


DEFAULTS: dict[str, Any] = {
    "method": "moco",            # moco | simclr | byol | simsiam | swav
    "seed": 0,
    "device": "cpu",
    "data": {
        "name": "shapes",        # shapes | fashion_mnist | imagefolder | cifar10 | cifar100 | stl10
        "root": None,            # imagefolder / torchvision sets; fashion_mnist: default the Debian package's folder
        "test_root": None,       # imagefolder: the validation tree
        "class_list": None,      # imagefolder: e.g. data/imagenet100.txt
        "image_size": 32,        # stored size (shapes are drawn at it; real images resized to it)
        "n_train": 10000,        # shapes: drawn; fashion_mnist: a class-balanced subset of the 60 000
        "n_test": 2000,          # shapes: drawn; fashion_mnist: a class-balanced subset of the 10 000
        "max_per_class": None,   # imagefolder: cap per class (quick runs)
        "download": False,       # torchvision sets: download only when asked
        "workers": 0,            # imagefolder: processes that decode the images (once, before training)
        "cache": None,           # imagefolder: folder where the decoded set is kept and memory-mapped
        # which held-out images the readout scores: test (the reported numbers) | val (calibration: shapes drawn
        # from their own seed; other sets: the last n_val images of a fixed shuffle of train, removed from training)
        "eval_split": "test",
        "n_val": 2000,
    },
    "augment": {
        "preset": "v2",          # v1 | v2 | simclr (MoCo v1 / v2, SimCLR pipelines)
        "out_size": 24,
        "crop_scale": [0.4, 1.0],
        "blur_sigma": None,      # v2 blur sigma range; null = the recipe's [0.1, 2]
        "jitter": None,          # ColorJitter (brightness, contrast, saturation, hue); null = the preset's
        "jitter_p": None,        # probability of the jitter; null = the preset's
        "gray_p": None,          # probability of grayscale; null = the preset's
        "blur_p": None,          # probability of the Gaussian blur; null = the preset's
    },
    "model": {
        "encoder": "resnet10_w16",
        "mlp": True,             # MoCo v2 head; false = v1 linear head
        "dim": 128,
        "bn_splits": 4,          # split-BN groups per process (shuffle-BN in one process; 1 = plain BN)
        "sync_bn": False,        # torch.distributed: batch statistics over all ranks (needs bn_splits=1)
        "hidden": None,          # SimCLR/BYOL/SimSiam projector hidden size (null = backbone width)
        "pred_hidden": None,     # SimSiam predictor bottleneck (null = dim // 4)
        "init": "default",       # backbone init: default (PyTorch's) | kaiming (fan-out, as torchvision/PyContrast)
    },
    # tau is also SimCLR's and SwAV's temperature; momentum is also BYOL's base target momentum (raised to 1 on a cosine)
    # drop_same_class: a diagnosis oracle, not in the paper: the training labels are used to let the loss ignore queue
    # negatives of the query's own class (no false negatives); it tests whether false negatives make FT collapse
    "moco": {"queue_size": 4096, "momentum": 0.99, "tau": 0.2, "drop_same_class": False},
    # SwAV (two crops, no queue): prototypes, Sinkhorn's entropy weight and iterations; tau is moco.tau
    "swav": {"prototypes": 300, "epsilon": 0.05, "sinkhorn_iters": 3, "freeze_prototypes_epochs": 1},
    "optim": {
        "lr": 0.12,
        "momentum": 0.9,
        "weight_decay": 5.0e-4,
        "schedule": "cosine",    # cosine | step
        "milestones": [],        # epochs where a step schedule multiplies lr by 0.1
        "warmup_epochs": 0,
        "fused": "auto",         # fused SGD: auto (on CUDA) | true | false
    },
    "train": {
        "epochs": 30, "batch_size": 256, "checkpoint_every": 1,
        "amp": None,             # null | bf16 (autocast on CUDA or CPU)
        # NHWC memory format: auto (on: measured faster on CPU, and on tensor cores) | true | false. It changes how,
        # not what, a run computes (float rounding only), so configs that differ only here describe the same run.
        "channels_last": "auto",
        "compile": False,        # torch.compile the model: true (inductor) or a backend name; first steps slower
    },
    "stats": {"n_queries": 64, "sync_every": 50, "histograms": False, "grad_norms_per_step": False},
    "ft": {
        "pos": False, "pos_mode": "extrapolate", "alpha_ex": 2.0,
        "neg": False, "neg_mode": "interpolate", "alpha_in": 1.6,
        "union_queue": False, "hard": False, "hard_a": 2.0, "hard_b": 1.0,
        "granularity": "step", "renorm_pos": False, "renorm_neg": False, "start_epoch": 0,
    },
    "eval": {"knn_k": 200, "knn_t": 0.1, "linear_epochs": 100, "linear_lr": 0.1, "random_init": True,
             # the linear readout of raw pixels, a third reference: auto (real images; the shapes' palette makes
             # it ~14 %, below the random-init encoder) | true | false
             "raw_pixels": "auto"},
}


class ConfigError(ValueError):
    """A config key or value is wrong; the message names the key and the fix."""


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
    known = _flatten(DEFAULTS)
    if dotted not in known:
        close = difflib.get_close_matches(dotted, known, n=3)
        raise ConfigError(f"unknown config key {dotted!r}; did you mean {close}? See ftcl_core.config.DEFAULTS.")
    default = known[dotted]
    if isinstance(value, str) and isinstance(default, (int, float)) and not isinstance(default, bool):
        value = _number(value, integer=isinstance(default, int))
    *parents, leaf = dotted.split(".")
    for p in parents:
        d = d.setdefault(p, {})
    d[leaf] = value


def _number(text: str, integer: bool) -> int | float | str:
    """YAML 1.1 reads ``1e-4`` (no dot) as a string: numeric keys take it as the number it spells.
    Anything else is left as it is for :func:`validate` to name."""
    try:
        x = float(text)
    except ValueError:
        return text
    return int(x) if integer and x.is_integer() else x


# Keys whose value may be of another type than their default (None, "auto", a backend name, ...).
FLEXIBLE_KEYS = {"data.root", "data.test_root", "data.class_list", "data.max_per_class", "data.cache",
                 "augment.blur_sigma", "augment.jitter", "augment.jitter_p", "augment.gray_p", "augment.blur_p",
                 "model.hidden", "model.pred_hidden", "train.amp", "optim.fused",
                 "train.compile", "train.channels_last", "eval.raw_pixels"}
# Keys that choose how a run executes, not what it computes (results agree to float32 rounding): two configs that
# differ only in these describe the same run (a stored run made with another memory format still counts).
EXECUTION_KEYS = ("train.channels_last",)
# Keys with a fixed set of values (method and augment.preset come from their registries, see validate).
CHOICES = {"data.name": ("shapes", "fashion_mnist", "imagefolder", "cifar10", "cifar100", "stl10"),
           "optim.schedule": ("cosine", "step"),
           "data.eval_split": ("test", "val"), "model.init": ("default", "kaiming")}
POSITIVE_INTS = ("train.checkpoint_every", "stats.sync_every", "stats.n_queries", "eval.knn_k", "eval.linear_epochs",
                 "model.dim", "model.bn_splits", "data.image_size", "augment.out_size", "data.n_train", "data.n_test",
                 "data.n_val")


def _check_types(flat: dict) -> None:
    """Every key of the flattened config holds a value of its default's type (bools are not numbers, numbers
    not bools)."""
    for key, default in _flatten(DEFAULTS).items():
        if key in FLEXIBLE_KEYS or default is None:
            continue
        value = flat[key]
        if isinstance(default, bool):
            ok = isinstance(value, bool)
            want = "true or false"
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool)
            want = "an integer"
        elif isinstance(default, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            want = "a number"
        else:
            ok = isinstance(value, type(default))
            want = f"a {type(default).__name__}"
        if not ok:
            raise ConfigError(f"{key}={value!r} must be {want} (default {default!r}).")


def merge(base: dict, update: dict) -> dict:
    """``base`` updated with every leaf of ``update`` (keys checked against :data:`DEFAULTS`)."""
    out = copy.deepcopy(base)
    for key, value in _flatten(update).items():
        _set(out, key, value)
    return out


def parse_overrides(items: list[str]) -> dict:
    """``["ft.pos=true", "moco.momentum=0.9"]`` -> nested dict; values are parsed as YAML scalars."""
    out: dict = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not KEY=VALUE (for example ft.pos=true).")
        key, raw = item.split("=", 1)
        _set(out, key.strip(), yaml.safe_load(raw))
    return out


def load_config(path: str | os.PathLike | None, overrides: list[str] | None = None) -> dict:
    """DEFAULTS, updated by the YAML file at ``path`` (may be None), updated by ``key=value`` overrides."""
    cfg = copy.deepcopy(DEFAULTS)
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(
                f"config file {p} not found; the default CPU runs are configs/cpu_moco_v2.yaml and configs/cpu_moco_v1.yaml."
            )
        cfg = merge(cfg, yaml.safe_load(p.read_text()) or {})
    cfg = merge(cfg, parse_overrides(overrides or []))
    validate(cfg)
    return cfg


def validate(cfg: dict) -> None:
    """Check values that would otherwise fail deep inside training, or be silently ignored, naming the key
    and the fix; all of it before anything is written to a run folder."""
    flat = _flatten(cfg)
    _check_types(flat)
    for key, allowed in {**CHOICES, "method": METHODS, "augment.preset": AUGMENT_PRESETS}.items():
        if flat[key] not in allowed:
            close = difflib.get_close_matches(str(flat[key]), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else "."
            raise ConfigError(f"{key}={flat[key]!r}: choose one of {allowed}{hint}")
    check_method_config(cfg)  # before the generic FT checks: its message names the method
    for key in POSITIVE_INTS:
        if flat[key] < 1:
            raise ConfigError(f"{key}={flat[key]} must be >= 1.")
    d = cfg["data"]
    if d["name"] == "imagefolder" and not (d["root"] and d["test_root"]):
        raise ConfigError("data.name=imagefolder needs data.root=<train folder> and data.test_root=<held-out folder> "
                          "(without a test_root the readout would score the training images; to do that knowingly, "
                          "set data.test_root to data.root).")
    enc = cfg["model"]["encoder"]
    known = [*SMALL_ENCODERS, *TORCHVISION_ENCODERS]
    if enc not in known and not enc.startswith("timm:"):
        close = difflib.get_close_matches(enc, known, n=3)
        raise ConfigError(f"unknown encoder model.encoder={enc!r}; did you mean {close}? Known: {known} "
                          "or timm:<model>.")
    lo, hi = (cfg["augment"]["crop_scale"] + [None, None])[:2]
    if len(cfg["augment"]["crop_scale"]) != 2 or not (0 < lo <= hi <= 1):
        raise ConfigError(f"augment.crop_scale={cfg['augment']['crop_scale']} must be [low, high] with 0 < low <= high <= 1.")
    a = cfg["augment"]
    j = a["jitter"]
    if j is not None and not (isinstance(j, list) and len(j) == 4 and all(isinstance(v, (int, float)) and v >= 0 for v in j)
                              and j[3] <= 0.5):
        raise ConfigError(f"augment.jitter={j} must be [brightness, contrast, saturation, hue], each >= 0 and hue <= 0.5 "
                          "(MoCo v2: [0.4, 0.4, 0.4, 0.1]), or null for the preset's.")
    for key in ("jitter_p", "gray_p", "blur_p"):
        if a[key] is not None and not (isinstance(a[key], (int, float)) and 0 <= a[key] <= 1):
            raise ConfigError(f"augment.{key}={a[key]} must be a probability in [0, 1], or null for the preset's.")
    if d["eval_split"] == "val" and d["name"] != "shapes" and not isinstance(d["n_val"], int):
        raise ConfigError(f"data.n_val={d['n_val']} must be an integer: the images held out of train for validation.")
    ft, epochs = cfg["ft"], cfg["train"]["epochs"]
    for key in ("union_queue", "renorm_neg"):
        if ft[key] and not ft["neg"]:
            raise ConfigError(f"ft.{key}=true acts on the transformed negatives only; set ft.neg=true too, or drop it.")
    if (ft["pos"] or ft["neg"] or ft["hard"]) and not 0 <= ft["start_epoch"] < epochs:
        raise ConfigError(f"ft.start_epoch={ft['start_epoch']} must lie in [0, train.epochs={epochs}): "
                          "otherwise FT never switches on.")
    m, tau, k = cfg["moco"]["momentum"], cfg["moco"]["tau"], cfg["moco"]["queue_size"]
    bs = cfg["train"]["batch_size"]
    if not isinstance(m, (int, float)) or not 0.0 <= m <= 1.0:
        raise ConfigError(f"moco.momentum={m} is outside [0, 1]; MoCo uses 0.99 (IN-100) or 0.999.")
    if not isinstance(tau, (int, float)) or tau <= 0:
        raise ConfigError(f"moco.tau={tau} must be > 0; MoCo v1 uses 0.07, v2 0.2.")
    if not isinstance(bs, int) or bs < 2:
        raise ConfigError(f"train.batch_size={bs} must be an integer >= 2.")
    if cfg["method"] == "moco" and (not isinstance(k, int) or k < bs):
        raise ConfigError(f"moco.queue_size K={k} is smaller than train.batch_size={bs}; use K >= batch size.")
    if cfg["method"] == "moco" and cfg["data"]["name"] in ("shapes", "fashion_mnist") and k >= cfg["data"]["n_train"]:
        raise ConfigError(
            f"moco.queue_size K={k} is not below data.n_train={cfg['data']['n_train']}: the queue would hold "
            "keys of the query's own image. Lower K or draw more images."
        )
    splits = cfg["model"]["bn_splits"]
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if bs % (splits * world):
        raise ConfigError(f"train.batch_size={bs} is not divisible by model.bn_splits={splits} x {world} process(es); "
                          "each process takes batch_size / processes images, split into bn_splits groups.")
    if cfg["model"]["sync_bn"] and splits != 1:
        raise ConfigError("model.sync_bn=true needs model.bn_splits=1 (SyncBN replaces split-BN).")
    sw = cfg["swav"]
    if not (isinstance(sw["epsilon"], (int, float)) and sw["epsilon"] > 0):
        raise ConfigError(f"swav.epsilon={sw['epsilon']} must be > 0 (Sinkhorn's entropy weight; SwAV uses 0.05).")
    for key in ("prototypes", "sinkhorn_iters"):
        if not (isinstance(sw[key], int) and sw[key] >= 1):
            raise ConfigError(f"swav.{key}={sw[key]} must be an integer >= 1.")
    for key in ("hidden", "pred_hidden"):
        v = cfg["model"][key]
        if v is not None and not (isinstance(v, int) and v >= 1):
            raise ConfigError(f"model.{key}={v} must be a positive integer or null (a default size).")
    if cfg["eval"]["raw_pixels"] not in (True, False, "auto"):
        raise ConfigError(f"eval.raw_pixels={cfg['eval']['raw_pixels']!r}: choose auto, true or false.")
    if cfg["train"]["channels_last"] not in (True, False, "auto"):
        raise ConfigError(f"train.channels_last={cfg['train']['channels_last']!r}: choose auto, true or false.")
    if cfg["train"]["amp"] not in (None, "bf16"):
        raise ConfigError(f"train.amp={cfg['train']['amp']!r}: choose null or bf16.")
    if cfg["optim"]["lr"] <= 0:
        raise ConfigError(f"optim.lr={cfg['optim']['lr']} must be > 0.")
    if cfg["train"]["epochs"] < 1:
        raise ConfigError(f"train.epochs={cfg['train']['epochs']} must be >= 1.")
    try:
        FTConfig(**cfg["ft"])
    except (ValueError, TypeError) as err:
        raise ConfigError(str(err)) from err


def check_method_config(cfg: dict) -> None:
    """Errors for FT options a method cannot have (checked before any training): BYOL, SimSiam and SwAV have
    no negatives, so only positive extrapolation applies (Table 5, Supp E.2)."""
    method, ft = cfg["method"], cfg["ft"]
    if method not in METHODS:
        raise ConfigError(f"method={method!r}: choose one of {METHODS}.")
    if cfg["moco"].get("drop_same_class") and (method != "moco" or ft["hard"]):
        raise ConfigError("moco.drop_same_class=true (the false-negative oracle) is for method=moco without "
                          "ft.hard: set it to false, or use method=moco with plain or interpolated negatives.")
    if method not in CONTRASTIVE:
        bad = [k for k in ("neg", "hard", "union_queue") if ft[k]]
        if bad:
            raise ConfigError(
                f"method={method} has no negatives, so ft.{bad[0]}=true cannot apply; the paper applies only "
                "positive extrapolation (ft.pos=true) to BYOL, SimSiam and SwAV."
            )


def config_diff(a: dict, b: dict) -> list[str]:
    """Dotted keys whose values differ between two configs (a key missing from one counts as its default,
    so configs stored before a key was added still compare equal when they used its default; the
    :data:`EXECUTION_KEYS` are not compared)."""
    defaults = _flatten(DEFAULTS)
    fa, fb = {**defaults, **_flatten(a)}, {**defaults, **_flatten(b)}
    return sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k) and k not in EXECUTION_KEYS)
