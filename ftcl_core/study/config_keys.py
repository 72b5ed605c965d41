"""The diagnosis' config keys, which only the study's MoCo variants (:mod:`.moco_diagnosis`) read: the library's
``ft``, ``moco`` and ``stats`` sections extended, each with its checks, and the checks across sections.

- ``moco.drop_same_class``: the false-negative oracle (the loss ignores queue negatives of the query's own class);
- ``stats.same_class``: the queue's same-class share recorded per step;
- ``ft.shards``: one FT lambda per shard of queries, the released run's 8 processes imitated in one;
- ``ft.pos_gate``: +pos held back on a step whose raw Mean(neg) stands above its level before the switch.

:mod:`ftcl_core.study` registers them on import (:func:`ftcl_core.config.register_sections`); the classes keep the
library's names, so a config reads and prints as before.  ``to_dict`` stores these keys with the library's, at their
defaults too, as every run stored before the split did: ``config_digest`` of a stored run is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ftcl_core import config
from ftcl_core.config import ConfigError, Granularity, RunConfig


@dataclass(frozen=True)
class MoCoConfig(config.MoCoConfig):
    """MoCo's section with the diagnosis' oracle."""

    # a diagnosis oracle, not in the paper: the training labels let the loss ignore queue negatives of the query's
    # own class (no false negatives); it tests whether false negatives make FT collapse
    drop_same_class: bool = False


@dataclass(frozen=True)
class StatsConfig(config.StatsConfig):
    """The log's section with the queue's same-class share."""

    same_class: bool = False  # MoCo: record the queue's same-class share per step (keeps the keys' labels)


@dataclass(frozen=True)
class FTConfig(config.FTConfig):
    """FT's section with the gate on +pos and one lambda per shard of queries."""

    pos_gate: float | None = None     # +pos skipped where raw Mean(neg) is this far above the epoch before (issue 66)
    # the released run's 8 processes each draw their own lambda (and mix the queue their own way) for their
    # 32 queries: shards > 1 does that in one process, one draw per shard of batch / shards queries (not in the paper)
    shards: int = 1
    WHEN_KEYS: ClassVar[tuple[str, ...]] = (*config.FTConfig.WHEN_KEYS, "pos_gate")  # the gate says when, not how

    def check(self) -> None:
        """The library's checks, then these keys' own: each is refused where the transformation it shapes is off."""
        super().check()
        self._positive("shards")
        if self.pos_gate is not None and not self.pos:  # as the library's idle keys are said
            raise ConfigError(f"ft.pos_gate={self.pos_gate!r} shapes ft.pos, which is off, so it would be ignored. Set "
                              "ft.pos=true, or drop ft.pos_gate.")
        if self.shards != 1 and not self.any:
            raise ConfigError(f"ft.shards={self.shards} shapes the transformations, and none is on (ft.pos, ft.neg, "
                              "ft.hard), so it would be ignored. Turn one on, or drop ft.shards.")
        if self.shards > 1 and (self.granularity != "step" or self.hard or self.union_queue):
            raise ConfigError("ft.shards > 1 draws one lambda per shard: it needs ft.granularity=step and neither "
                              "ft.hard nor ft.union_queue; set ft.shards=1 for those.")

    def lambda_draws(self, n: int) -> tuple[Granularity, int]:
        """eq. 3's lambda per shard: ``("sample", shards)``, each draw for ``n / shards`` pairs (the library's draw
        where ``shards`` is 1); an ``n`` the shards do not divide is a ValueError."""
        if self.shards == 1:
            return super().lambda_draws(n)
        if n % self.shards:
            raise ValueError(f"ft.shards={self.shards} draws one lambda per shard of queries: the batch of {n} must "
                             f"divide into {self.shards} equal shards. Set shards to a divisor of the batch, or 1.")
        return "sample", self.shards


def check_run(cfg: RunConfig) -> None:
    """The checks these keys need across sections (:meth:`ftcl_core.config.RunConfig.check` runs them)."""
    ft, method, bs, oracle = cfg.ft, cfg.method, cfg.train.batch_size, cfg.moco.drop_same_class
    if oracle and (method != "moco" or ft.hard):
        raise ConfigError("moco.drop_same_class=true (the false-negative oracle) is for method=moco without "
                          "ft.hard: set it to false, or use method=moco with plain or interpolated negatives.")
    if cfg.stats.same_class and method != "moco":
        raise ConfigError(f"stats.same_class=true records the share of a MoCo queue's keys that belong to the "
                          f"query's class; method={method} has no queue. Set it to false.")
    if ft.shards > 1 and bs % ft.shards:
        raise ConfigError(f"ft.shards={ft.shards} does not divide train.batch_size={bs} (one lambda per shard of "
                          f"{bs} / {ft.shards} queries): choose a divisor of the batch, or ft.shards=1.")
    if ft.shards > 1 and (oracle or (ft.neg and method != "moco")):
        why = "moco.drop_same_class=true" if oracle else f"ft.neg=true under method={method}"
        raise ConfigError(f"ft.shards={ft.shards} cannot run with {why} (sharded draws mix MoCo's queue per shard, "
                          "without the oracle); set ft.shards=1, or drop it.")
    if ft.pos_gate is not None and not (method == "moco" and ft.start_epoch >= 1 and 0 < ft.pos_gate < 2):
        raise ConfigError(f"ft.pos_gate={ft.pos_gate} skips +pos on a step whose raw Mean(neg) exceeds its mean over "
                          "the epoch before FT switches on by this cosine margin: it needs a margin in (0, 2), "
                          "method=moco (a queue) and ft.start_epoch >= 1. Set them, or drop ft.pos_gate.")


def register() -> None:
    """Register these sections and :func:`check_run` with the library's config (once; again is harmless)."""
    config.register_sections(FTConfig, MoCoConfig, StatsConfig, check=check_run)

