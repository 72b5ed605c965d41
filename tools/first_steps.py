"""The first steps of every smoke config (each method with and without FT, and MoCo's diagnosis variants) as
arrays, to check that a restructuring leaves what the code computes unchanged, bit for bit on one machine:

    python tools/first_steps.py record before.npz     # at the commit before the change
    python tools/first_steps.py record after.npz      # after it
    python tools/first_steps.py compare before.npz after.npz
"""

from __future__ import annotations

import sys
import tempfile

import numpy as np
import torch

METHODS = ("moco_v2", "simclr", "byol", "simsiam", "swav")
MOCO = "configs/smoke_moco_v2.yaml"
CASES: dict[str, tuple[str, list[str]]] = {
    **{m: (f"configs/smoke_{m}.yaml", []) for m in METHODS},
    **{f"{m}+ft": (f"configs/smoke_{m}.yaml", ["ft.pos=true"] + (["ft.neg=true"] if m in ("moco_v2", "simclr") else []))
       for m in METHODS},
    "moco_oracle": (MOCO, ["moco.drop_same_class=true", "ft.pos=true", "ft.neg=true"]),
    "moco_same_class_share": (MOCO, ["stats.same_class=true"]),
    "moco_shards": (MOCO, ["ft.shards=2", "ft.pos=true", "ft.neg=true"]),
    "moco_union_hard": (MOCO, ["ft.pos=true", "ft.neg=true", "ft.union_queue=true", "ft.hard=true"]),
    "moco_late_start": (MOCO, ["ft.pos=true", "ft.neg=true", "ft.start_epoch=1"]),
}


def record(out: str, steps: int = 12) -> None:
    """Train ``steps`` steps of every case (one thread) and save every per-step metric."""
    import ftcl_core.study  # noqa: F401  (registers the diagnosis' MoCo variants: moco_oracle, moco_shards, ...)
    from ftcl_core.config import load_config
    from ftcl_core.training import train

    torch.set_num_threads(1)
    arrays = {}
    for name, (path, overrides) in CASES.items():
        with tempfile.TemporaryDirectory() as tmp:
            metrics = train(load_config(path, overrides), tmp, progress=False, max_steps=steps)["metrics"]
        arrays.update({f"{name}/{k}": np.asarray(v) for k, v in metrics.items()})
        print(name, "recorded", flush=True)
    np.savez(out, **arrays)


def compare(a_path: str, b_path: str) -> int:
    """0 when both files hold the same arrays, bit for bit (NaN equal to NaN); else 1, naming what differs."""
    a, b = np.load(a_path), np.load(b_path)
    if set(a.files) != set(b.files):
        print("different arrays:", sorted(set(a.files) ^ set(b.files)))
        return 1
    differ = [k for k in a.files if not np.array_equal(a[k], b[k], equal_nan=True)]
    print(f"{len(a.files)} arrays of {len(CASES)} cases:", "bit-identical" if not differ else f"differ: {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "record":
        record(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
