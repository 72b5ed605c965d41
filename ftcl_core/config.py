"""Run configs: a :class:`RunConfig` of frozen, typed sections, built once at the entry point, and how it is loaded,
merged and compared.

:func:`load_config` builds a config from the defaults, a YAML file and dotted ``key=value`` overrides; every value is
checked against its field's annotation (:mod:`ftcl_core.config_fields`), each section checks its own values
(:mod:`ftcl_core.config_sections`, whose names this module re-exports: import them from here), and checks that need
two sections (the queue against the batch, FT against the method) live in :meth:`RunConfig.check`. Each check lives
once; nothing downstream re-validates a config.

Method-specific settings live with their method: ``moco.tau`` is MoCo's temperature, ``simclr.tau`` SimCLR's,
``swav.tau`` SwAV's, ``byol.momentum`` BYOL's base target momentum. Configs written before these sections
existed used ``moco.tau`` and ``moco.momentum`` for every method; :func:`from_dict` maps those old keys onto the
new ones, so every stored run still loads, compares and replays.

Keys the library does not read come with their readers (:func:`register_sections`; the study's, on import); unknown
without them, so a stored run's ``config.yaml`` is read and digested with the keys that made it, or refused.

The three config modules import nothing else from ``ftcl_core`` (a test walks the imports), so every other module
may import them.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ftcl_core.config_fields import ConfigError, Section, _non_ascii_digits, _plain, _yaml, did_you_mean
from ftcl_core.config_sections import (  # the sections, re-exported: ftcl_core.config is where users import them
    AUGMENT_PRESETS,
    BETA_RANGE,
    CONTRASTIVE,
    GRANULARITIES,
    METHODS,
    SMALL_ENCODERS,
    TORCHVISION_ENCODERS,
    AugmentationConfig,
    Auto,
    BYOLConfig,
    DataConfig,
    DataSet,
    EvalConfig,
    FTConfig,
    Granularity,
    Method,
    MoCoConfig,
    ModelConfig,
    OptimConfig,
    Preset,
    SimCLRConfig,
    StatsConfig,
    SwAVConfig,
    TrainConfig,
)
from ftcl_core.config_yaml import DECIMAL, MAX_DIGITS, load_yaml_mapping

__all__ = ["AUGMENT_PRESETS", "BETA_RANGE", "CONTRASTIVE", "DEFAULTS", "EXECUTION_KEYS", "GRANULARITIES", "METHODS",
           "LIBRARY_KEYS", "SECTIONS", "SMALL_ENCODERS", "TORCHVISION_ENCODERS", "AugmentationConfig", "Auto", "BYOLConfig",
           "ConfigError", "DataConfig", "DataSet", "EvalConfig", "FTConfig", "Granularity", "Method", "MoCoConfig",
           "ModelConfig", "OptimConfig", "Preset", "RunConfig", "Section", "SimCLRConfig", "StatsConfig",
           "SwAVConfig", "TrainConfig", "UnregisteredKeyError", "as_config", "config_diff", "config_mismatch", "load_config",
           "load_yaml_mapping", "merge", "parse_overrides", "register_sections"]


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
CHECKS: list[Callable[[RunConfig], None]] = []  # registered checks across sections: each raises a ConfigError


def register_sections(*sections: type[Section], check: Callable[[RunConfig], None] | None = None) -> None:
    """Let each of ``sections`` replace the section it extends (a subclass of the library's, its ``section`` key
    kept), so a config holds its keys and their checks, and add ``check`` to :meth:`RunConfig.check`'s."""
    for new in sections:
        old = SECTIONS.get(getattr(new, "section", None))
        if old is None or not (isinstance(new, type) and issubclass(new, old)):
            raise TypeError(f"register_sections: {new!r} must subclass a config section (one of {list(SECTIONS)}) "
                            "and keep its section key: it extends that section's keys.")
        SECTIONS[new.section] = new
        DEFAULTS[new.section] = _section_dict(new())
    CHECKS.extend([] if check is None or check in CHECKS else [check])
    _known_keys.cache_clear()


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
        """The checks that need two sections, before anything is written; a library section becomes its registered one."""
        for name, registered in SECTIONS.items():
            if type(value := getattr(self, name)) is not registered and issubclass(registered, type(value)):
                object.__setattr__(self, name, registered(**_section_dict(value)))  # frozen: set once, here
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
        for check in CHECKS:  # the registered sections' checks across sections (register_sections)
            check(self)
        if self.optim.warmup_epochs >= self.train.epochs:
            raise ConfigError(f"optim.warmup_epochs={self.optim.warmup_epochs} is not below train.epochs="
                              f"{self.train.epochs}: the learning rate would never reach optim.lr. Lower the warm-up "
                              "(the recipes use 0 or 10 of 100 or more epochs).")
        if self.stats.n_queries > bs and self.stats.n_queries != StatsConfig.n_queries:  # asked for, not the default
            raise ConfigError(f"stats.n_queries={self.stats.n_queries} exceeds train.batch_size={bs}: the statistics "
                              f"read the first n queries of a batch. Set stats.n_queries <= {bs} (64 is usual).")
        if self.data.eval_split == "test" and self.data.n_val != DataConfig.n_val:
            raise ConfigError(f"data.n_val={self.data.n_val} sizes the validation split, and data.eval_split=test "
                              "scores the test set, so it would be ignored. Set data.eval_split=val, or drop data.n_val.")
        if self.augment.out_size > self.data.image_size:  # a crop resized past its stored image: pixels, no detail
            raise ConfigError(f"augment.out_size={self.augment.out_size} exceeds data.image_size={self.data.image_size}: "
                              "a view would be upsampled past the stored image, and its memory grows with its square. "
                              f"Set augment.out_size <= {self.data.image_size}.")
        if self.eval.knn_k > self.data.n_train:
            raise ConfigError(f"eval.knn_k={self.eval.knn_k} exceeds data.n_train={self.data.n_train}: the kNN readout "
                              "votes over the training images' features; set eval.knn_k <= data.n_train (200 is usual).")
        if ft.start == "auto" and ft.auto_window > self.train.epochs - 2:
            raise ConfigError(f"ft.start=auto decides at an epoch's end once ft.auto_window={ft.auto_window} epochs "
                              f"have passed, and FT runs from the next: with train.epochs={self.train.epochs} it could "
                              f"never switch on. It needs train.epochs >= ft.auto_window + 2"
                              + (f", or ft.auto_window <= {self.train.epochs - 2}." if self.train.epochs > 2 else "."))
        if ft.any and not 0 <= ft.start_epoch < self.train.epochs:
            raise ConfigError(f"ft.start_epoch={ft.start_epoch} must lie in [0, train.epochs={self.train.epochs}): "
                              "otherwise FT never switches on.")
        if method == "moco" and self.model.hidden is not None:
            raise ConfigError(f"model.hidden={self.model.hidden} sizes the SimCLR/BYOL/SimSiam/SwAV projector; MoCo's "
                              "head is the backbone width (MoCo v2), so it would be ignored. Drop model.hidden.")
        if method != "simsiam" and self.model.pred_hidden is not None:
            raise ConfigError(f"model.pred_hidden={self.model.pred_hidden} sizes SimSiam's predictor bottleneck; "
                              f"method={method} has none, so it would be ignored. Drop model.pred_hidden.")
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
        if bs // self.model.bn_splits < 2:  # batch-norm over one image normalises it against itself
            raise ConfigError(f"model.bn_splits={self.model.bn_splits} splits train.batch_size={bs} into groups of "
                              f"{bs // self.model.bn_splits} image: batch-norm over one image normalises it against "
                              f"itself. Use model.bn_splits <= {max(1, bs // 2)} (4 is usual; 1 is plain BN).")
        freeze = self.swav.freeze_prototypes_epochs
        if method == "swav" and (freeze > self.train.epochs or (freeze == self.train.epochs > 1)):
            raise ConfigError(f"swav.freeze_prototypes_epochs={freeze} holds the prototypes fixed for the whole run "
                              f"(train.epochs={self.train.epochs}), so they never learn. Use fewer epochs than the run "
                              "(SwAV uses 1).")
        if self.data.eval_split == "test" and self.data.n_test < 10:
            raise ConfigError(f"data.n_test={self.data.n_test}: a readout over fewer than 10 held-out images reads 0 or "
                              "100 % by chance; give data.n_test >= 10 (default 2000).")

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
            except TypeError as err:  # a section given a non-mapping (``ft: true``), or a value of the wrong type
                if isinstance(values, Mapping) and (key := _wrong_type(section, values)):
                    raise ConfigError(f"{name}.{key}={values[key]!r} is of the wrong type ({err}); see the default "
                                      f"{getattr(section, key, '?')!r}.") from None
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
    unknown = f"unknown config key {key!r}{did_you_mean(key, sorted(known))}. The keys and their defaults: ftcl_core.config"
    if set(known) == LIBRARY_KEYS:  # none registered: the key may be one a registered section adds
        return UnregisteredKeyError(f"{unknown}.DEFAULTS; the study's keys are known once ftcl_core.study is imported "
                                    "(python -m ftcl_core imports it).")
    return ConfigError(f"{unknown}.DEFAULTS.")


class UnregisteredKeyError(ConfigError):
    """An unknown key while no section is registered (:func:`register_sections`): perhaps one the study adds."""


# Before the method sections, every method read its temperature from moco.tau and BYOL its momentum from
# moco.momentum; a config (a stored run, an old YAML file) that says so means the method's own key.
OLD_KEYS = {"simclr": {"tau": "tau"}, "swav": {"tau": "tau"}, "byol": {"momentum": "momentum"}}


def _migrate(raw: dict) -> dict:
    """``raw`` with the old keys of :data:`OLD_KEYS` moved to the method's section, unless the new key is given
    too (then they must agree)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"a config must map keys to values, not {type(raw).__name__}"
                          + (": a config file's path is read by load_config(path)." if isinstance(raw, (str, os.PathLike))
                             else "."))
    method = raw.get("method", "moco")
    old = raw.get("moco")
    if not isinstance(method, str) or method not in OLD_KEYS or not isinstance(old, dict):
        return raw  # a method that is no name is refused with the choices where the values are checked
    out = copy.deepcopy(raw)
    own = out.setdefault(method, {})
    if own is None:  # "byol:" with nothing under it: an empty section
        own = out[method] = {}
    if not isinstance(own, dict):
        raise ConfigError(f"{method} is a section: give it keys ({method}.<key>: value), not {own!r}.")
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
    for i, p in enumerate(parents):
        d = d.setdefault(p, {})
        if not isinstance(d, dict):  # the file gave the section one value (data: null): refused as it is alone
            raise _unknown_key(".".join(parents[:i + 1]), known)
    d[leaf] = value


def merge(base: dict, update: dict) -> dict:
    """``base`` updated with every leaf of ``update`` (plain nested dicts, else a ConfigError; keys checked)."""
    for name, x in (("base", base), ("update", update)):
        if not isinstance(x, Mapping):
            raise ConfigError(f"merge's {name} must be a mapping of keys to values, got a {type(x).__name__}: pass a "
                              "nested dict, e.g. {'moco': {'tau': 0.2}} (or parse_overrides(['moco.tau=0.2'])).")
    out = copy.deepcopy(base)
    for key, value in _flatten(update).items():
        _set(out, key, value)
    return out


def parse_overrides(items: list[str]) -> dict:
    """``["ft.pos=true", "moco.momentum=0.9"]`` -> nested dict; values are parsed as YAML scalars."""
    if isinstance(items, str):
        raise ConfigError(f"overrides {items!r} must be a list of KEY=VALUE strings, e.g. [{items!r}].")
    if isinstance(items, dict):
        raise ConfigError(f"overrides must be a list of KEY=VALUE strings, got a dict: pass "
                          f"{[f'{k}={v}' for k, v in items.items()]!r}.")
    out: dict = {}
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(f"override {item!r} is a {type(item).__name__}, not a KEY=VALUE string (for example "
                              "ft.pos=true).")
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not KEY=VALUE (for example ft.pos=true).")
        key, raw = item.split("=", 1)
        if not key.strip():
            raise ConfigError(f"override {item!r} names no key before '=': write KEY=VALUE, e.g. train.epochs=3.")
        if not raw.strip():  # YAML reads "" as null: "device=" would become device=None, which no one typed
            raise ConfigError(f"override {item!r} gives no value after '=': write {key.strip()}=VALUE, or "
                              f"{key.strip()}=null to unset a key that may be empty.")
        if re.match(r"\s*[&*!]", raw):  # YAML's anchor, alias or tag: "&a 1" would read as 1, "*a" fail
            raise ConfigError(f"override {item!r}: the value begins with {raw.strip()[0]!r}, which YAML reads as an anchor, "
                              f"an alias or a tag: write the plain value, e.g. {key.strip()}=1.")
        try:
            value = yaml.safe_load(raw)
        except ValueError as err:  # YAML's int() refuses over 4 300 digits; its dates refuse a 13th month
            what = "a number of thousands of digits" if "digits" in str(err) else f"a value YAML cannot read ({err})"
            shown = raw.strip() if len(raw.strip()) <= 40 else f"<{len(raw.strip())} characters>"
            raise ConfigError(f"override {key.strip()}={shown} writes {what}: write a number "
                              f"of at most {MAX_DIGITS} digits, true/false, a word or a [list].") from None
        except (yaml.YAMLError, RecursionError) as err:
            raise ConfigError(f"override {item!r}: {raw.strip()[:40]!r} is not a YAML value "
                              f"({' '.join(str(err).split())[:100]}); write a number, true/false, a word or a [list].") from None
        # int("١") is 1 to Python
        if _non_ascii_digits(value):
            raise ConfigError(f"override {item!r}: {value!r} holds digits that are not ASCII; write the number in the "
                              "digits 0-9.")
        if isinstance(value, dict) and value and key.strip() in _known_keys():  # "timm:" or "a: b" read as a mapping
            raise ConfigError(f"override {item!r}: YAML reads {raw.strip()!r} as a mapping (a colon then a space or the "
                              f"end), but {key.strip()} takes one value: quote it, {key.strip()}='{raw.strip()}'"
                              + (", or name the model (model.encoder=timm:resnet18)." if key.strip() == "model.encoder"
                                 else "."))
        if value == {}:  # an empty mapping would merge as nothing: the key would keep its default without a word
            raise ConfigError(f"override {item!r} gives an empty mapping: write {key.strip()}=VALUE.")
        if isinstance(value, float) and ":" in raw:  # YAML 1.1 reads 1:0.5 as a base-60 number, 60.5
            raise ConfigError(f"override {item!r}: YAML reads {raw.strip()!r} as {value} (a base-60 number); write the "
                              "number in plain decimal digits, with no colon.")
        if isinstance(value, int) and not isinstance(value, bool) and not DECIMAL.fullmatch(raw.strip()):
            raise ConfigError(f"override {item!r}: YAML reads {raw.strip()!r} as {value} (an octal, hex, base-60 or "
                              "underscored number); write the number in plain decimal digits, with no leading zero, "
                              "colon or underscore.")
        if isinstance(value, float) and "_" in raw:  # YAML 1.1 reads 0.99_9 as 0.999
            raise ConfigError(f"override {item!r}: YAML reads {raw.strip()!r} as {value} (underscores dropped); write "
                              "the number in plain decimal digits.")
        _set(out, key.strip(), value)
    return out


def _wrong_type(section: type, values: Mapping) -> str | None:
    """The first key of ``values`` that ``section`` cannot take alone for its type (a TypeError), if any."""
    for key, value in values.items():
        try:
            section(**{key: value})
        except TypeError:
            return key
        except Exception:  # noqa: BLE001  (another key's check, not this value's type)
            continue
    return None


def check_schedule(cfg: RunConfig) -> None:
    """A step schedule's milestones inside the run: each in ``(0, train.epochs)``, or the decay it asks for never
    happens.  Checked where a user's config enters (``train``, ``screen``), not in
    :meth:`~ftcl_core.config.RunConfig.check`: the smoke profile shortens every recipe to two epochs and keeps its
    milestones on purpose."""
    o, epochs = cfg.optim, cfg.train.epochs
    late = [m for m in o.milestones if not 0 < m < epochs]
    if o.schedule == "step" and late and epochs < 2:
        raise ConfigError(f"optim.milestones={list(o.milestones)}: a step schedule decays inside the run, and "
                          f"train.epochs={epochs} leaves no epoch to decay at. Use optim.schedule=cosine, or "
                          "train.epochs >= 2 with milestones below it.")
    if o.schedule == "step" and late:
        raise ConfigError(f"optim.milestones={list(o.milestones)}: {late} not inside the run's train.epochs={epochs}, "
                          "so the learning rate never decays there. Give milestones between 1 and "
                          f"{epochs - 1} (e.g. optim.milestones={sorted({max(1, epochs * 6 // 10), max(1, epochs * 8 // 10)})}),"
                          " or raise train.epochs.")


def load_config(path: str | os.PathLike | None, overrides: list[str] | None = None) -> RunConfig:
    """The defaults, updated by the YAML file at ``path`` (may be None), updated by ``key=value`` overrides;
    checked once, here."""
    raw: dict = {}
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"load_config takes a config file's path, not a {type(path).__name__}: for a dict of keys "
                          "use RunConfig.from_dict(d), or pass its keys as overrides, load_config(None, ['k=v', ...]).")
    if path is not None:
        p = Path(path)
        raw = load_yaml_mapping(path, "config file", "configs/cpu_moco_v2.yaml")  # an empty path, a folder, none: named
        if {"table", "settings"} <= set(raw):  # an experiment file: its settings are several runs, not one config
            raise ConfigError(f"{p} is an experiment file (it holds table and settings), not a run's config: train its "
                              f"runs with python -m ftcl_core sweep {p}, or train one config, e.g. its base.")
        raw = _migrate(_nested(raw, p))
        _check_other_methods(raw, raw.get("method", "moco"))
    asked = parse_overrides(overrides or [])
    raw = merge(raw, asked)
    _check_other_methods(asked, raw.get("method", "moco"))  # typed now: no old key is mapped onto the new
    cfg = RunConfig.from_dict(raw)
    if "n_test" in asked.get("data", {}) and cfg.data.eval_split == "val":  # stored files keep theirs: typed, refused
        raise ConfigError(f"data.n_test={cfg.data.n_test} sizes the test set, and data.eval_split=val scores the "
                          "validation split (data.n_val), so it would be ignored. Set data.n_val, or data.eval_split=test.")
    return cfg


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
    if method not in METHODS:  # no method's name (null, a number): refused with the choices, not blamed on a key
        return
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
    ``optim.lr=0.06 (the run's) against optim.lr=0.01 (this command's)``, at most ``limit`` (>= 1) of them; "" if none."""
    if not (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1):
        raise ValueError(f"config_mismatch: limit={limit!r} must be a whole number >= 1 (the keys a message quotes).")
    fa, fb = _flatten(as_config(stored).to_dict()), _flatten(as_config(asked).to_dict())
    keys = config_diff(stored, asked)
    shown = [f"{k}={_yaml(_plain(fa.get(k)))} (the run's) against {k}={_yaml(_plain(fb.get(k)))} (this command's)"
             for k in keys[:limit]]
    return "; ".join(shown) + (f"; and {len(keys) - limit} more key(s)" if len(keys) > limit else "")


# Every key with its default, as a nested dict (all method sections): the reference of what a config may say.
DEFAULTS: dict[str, Any] = {"method": "moco", "seed": 0, "device": "cpu",
                            **{name: _section_dict(section()) for name, section in SECTIONS.items()}}
LIBRARY_KEYS = frozenset(_known_keys())  # the library's own, before any section is registered (register_sections)
