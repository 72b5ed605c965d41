"""What every part of the GPU check shares: its parts, its time budget, and the sizes of a real or a dry run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

# The parts in the order a check runs them and its report lists them.
PARTS = ("environment", "agreement", "throughput", "kernels", "captured", "loader", "imagenet", "scale", "compile")


@dataclass
class Budget:
    """A wall-clock budget: ``fits(s)`` says whether ``s`` more seconds fit in what is left."""

    total_s: float
    start: float = field(default_factory=time.perf_counter)

    def used(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return self.total_s - self.used()

    def fits(self, seconds: float) -> bool:
        return self.left() >= seconds


@dataclass
class Setting:
    """The sizes of one check: the real GPU sizes, or the dry run's CPU sizes (``dry``), on ``device``."""

    dry: bool
    device: str

    @property
    def small(self) -> dict:
        """The model and views of the agreement steps."""
        if self.dry:
            return {"encoder": "resnet10_w16", "size": 20, "out": 16, "batch": 16, "queue": 64}
        return {"encoder": "resnet18", "size": 72, "out": 64, "batch": 64, "queue": 4096}
