"""FT's draws on the device (``train.ft_draws``), checked where they matter: on a GPU, in one short command.

    PYTHONPATH=. python3 tools/ft_draws_check.py --out "$OUT"                 # on a GPU machine (about a minute)
    .venv/bin/python tools/ft_draws_check.py --device cpu --out /tmp/fdc       # the same code on the CPU

Four checks, written to ``OUT/ft_draws_check.json`` and printed as one JSON line; exit status 1 when one fails:

* ``no_host_sync``: MoCo's FT (eq. 3 on the pair, Sec 4.2 on a 65 536-entry queue, Supp G.2's hard negatives and
  Table 5's union queue; lambda per step, per sample and per dimension) with :class:`DeviceDraws` runs under
  ``torch.cuda.set_sync_debug_mode("error")``: no draw waits for the host (on the CPU: skipped).
* ``state_round_trip``: a device generator's checkpointed state (``torch.save`` / ``torch.load`` onto the device,
  :func:`ftcl_core.checkpoints.resume_draws`) reproduces the next FT step's draws bit for bit.
* ``resume``: a smoke MoCo run with FT on the device, stopped in its second epoch and resumed, ends with the host and
  device generators in the uninterrupted run's states, and (deterministic kernels on) the same metrics bit for bit;
  a run started with host draws (every checkpoint written before ``train.ft_draws``) resumes with ``auto`` on its
  host draws.
* ``timing`` (measured, not judged): one FT call with host draws and with device draws, at K = 4 096 and 65 536.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before CUDA starts: deterministic cuBLAS for `resume`

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from ftcl_core.checkpoints import resume_draws  # noqa: E402
from ftcl_core.config import FTConfig, load_config  # noqa: E402
from ftcl_core.losses import moco_ft_logits  # noqa: E402
from ftcl_core.runs import RunDir  # noqa: E402
from ftcl_core.transforms import DeviceDraws  # noqa: E402

SMOKE = "configs/smoke_moco_v2.yaml"
FTS = {"step": FTConfig(pos=True, neg=True), "sample": FTConfig(pos=True, neg=True, granularity="sample"),
       "dim_hard_union": FTConfig(pos=True, neg=True, granularity="dim", hard=True, union_queue=True)}


def _features(device: str, n: int = 256, k: int = 65536, d: int = 128) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return tuple(F.normalize(torch.randn(m, d, generator=g), dim=1).to(device) for m in (n, n, k))


def no_host_sync(device: str) -> dict:
    """Each FT variant of :data:`FTS` on device draws, with CUDA's sync debug mode raising on any host wait."""
    if not device.startswith("cuda"):
        return {"status": "skipped", "why": "no CUDA device: nothing to synchronise with"}
    q, k, queue = _features(device)

    def waits(ft: FTConfig, draws) -> str | None:
        """The first line of the error a host wait raises in sync debug mode, or None."""
        moco_ft_logits(q, k, queue, ft, draws)  # warm: kernels loaded, caching allocator filled
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            moco_ft_logits(q, k, queue, ft, draws)
            return None
        except RuntimeError as err:
            return str(err).splitlines()[0]
        finally:
            torch.cuda.set_sync_debug_mode(0)

    found = {name: waits(ft, DeviceDraws.seeded(0, device)) for name, ft in FTS.items()}
    host = waits(FTS["step"], torch.Generator().manual_seed(0))  # the contrast: host draws are copied, and wait
    return {"status": "pass" if not any(found.values()) else "fail", "device_draws_synchronising": found,
            "host_draws_synchronise": host is not None, "host_draws_error": host}


def state_round_trip(device: str) -> dict:
    """A device generator's state through a checkpoint's round trip reproduces the next FT step exactly."""
    q, k, queue = _features(device, k=4096)
    ft = FTS["dim_hard_union"]
    draws = DeviceDraws.seeded(3, device)
    moco_ft_logits(q, k, queue, ft, draws)  # some steps in
    buf = io.BytesIO()
    torch.save({"ft_gen": {"device": draws.device.type, "state": draws.gen.get_state()}}, buf)
    buf.seek(0)
    stored = torch.load(buf, map_location=device, weights_only=True)["ft_gen"]  # as a resume loads it
    want = moco_ft_logits(q, k, queue, ft, draws)
    fresh = DeviceDraws(torch.Generator(device=device))  # what a resumed run builds before it reads the checkpoint
    got = moco_ft_logits(q, k, queue, ft, resume_draws(RunDir(tempfile.gettempdir()), stored, fresh, device))
    same = all(torch.equal(a, b) for a, b in zip(want, got))
    return {"status": "pass" if same else "fail", "device": str(draws.device), "bit_identical": same}


class _Interrupted(Exception):
    """A crash in the second epoch, after the first checkpoint."""


def _interrupted_then_resumed(cfg, out: Path, resume_cfg=None) -> None:
    from ftcl_core.training import step_callback, train

    def crash(step: int) -> None:
        if step == 6:
            raise _Interrupted

    try:
        with step_callback(crash):
            train(cfg, out, progress=False)
    except _Interrupted:
        pass
    train(resume_cfg or cfg, out, progress=False)


def resume(device: str) -> dict:
    """Uninterrupted against interrupted-and-resumed smoke runs with FT drawing on the device; an old (host-drawn)
    checkpoint resumed with ``train.ft_draws=auto``."""
    from ftcl_core.training import train

    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    over = [f"device={device}", "ft.pos=true", "ft.neg=true", "ft.granularity=sample", "data.n_train=128",
            "train.batch_size=32", "moco.queue_size=64", "eval.linear_epochs=1", "eval.random_init=false",
            "eval.raw_pixels=false"]  # two epochs of four steps
    cfg = load_config(SMOKE, [*over, "train.ft_draws=device"])
    with tempfile.TemporaryDirectory() as tmp:
        full, resumed, old = Path(tmp) / "full", Path(tmp) / "resumed", Path(tmp) / "old"
        train(cfg, full, progress=False)
        _interrupted_then_resumed(cfg, resumed)
        sa, sb = (torch.load(RunDir(p).checkpoint, weights_only=True)["rng"] for p in (full, resumed))
        ma, mb = RunDir(full).load_metrics(), RunDir(resumed).load_metrics()
        identical = all(np.array_equal(ma[key], mb[key], equal_nan=True) for key in ma)
        diff = max(float(np.nanmax(np.abs(ma[key] - mb[key]), initial=0.0)) for key in ma)
        host_cfg = load_config(SMOKE, [*over, "train.ft_draws=host"])
        _interrupted_then_resumed(host_cfg, old, load_config(SMOKE, [*over, "train.ft_draws=auto"]))
        old_state = torch.load(RunDir(old).checkpoint, weights_only=True)["rng"]
        result = {
            "generators_as_uninterrupted": torch.equal(sa["gen"], sb["gen"])
            and torch.equal(sa["ft_gen"]["state"], sb["ft_gen"]["state"]),
            "ft_gen_device": sa["ft_gen"]["device"],
            "provenance_ft_draws": RunDir(resumed).load_provenance()["execution"]["ft_draws"],
            "metrics_bit_identical": identical, "metrics_max_abs_diff": diff,
            "old_checkpoint_resumes_on_host": "ft_gen" not in old_state
            and RunDir(old).load_provenance()["execution"]["ft_draws"] == "host",
        }
    ok = (result["generators_as_uninterrupted"] and result["provenance_ft_draws"] == "device"
          and result["metrics_bit_identical"] and result["old_checkpoint_resumes_on_host"])
    return {"status": "pass" if ok else "fail", **result}


def timing(device: str) -> dict:
    """Milliseconds of one MoCo FT call (+pos +neg, lambda per step, N = 256, D = 128), host against device draws."""
    calls = 20 if device.startswith("cuda") else 2

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def call(feats: tuple[torch.Tensor, ...], gen) -> object:
        return lambda: moco_ft_logits(*feats, FTS["step"], gen)

    out = {}
    for k in (4096, 65536):
        feats = _features(device, k=k)
        runs = {"host": call(feats, torch.Generator().manual_seed(0)), "device": call(feats, DeviceDraws.seeded(0, device))}
        times: dict[str, list[float]] = {name: [] for name in runs}
        for fn in runs.values():
            fn()
        for r in range(5):  # interleaved rounds
            for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
                sync()
                t0 = time.perf_counter()
                for _ in range(calls):
                    runs[name]()
                sync()
                times[name].append(1e3 * (time.perf_counter() - t0) / calls)
        out[f"K={k}"] = {f"{name}_ms": statistics.median(t) for name, t in times.items()}
    return {"status": "measured", **out}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--out", default=None, help="folder for ft_draws_check.json")
    args = p.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("ft_draws_check: no CUDA device is visible; use --device cpu to run the same code here.")
    report = {"device": args.device, "torch": torch.__version__,
              "device_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"}
    for name, check in (("no_host_sync", no_host_sync), ("state_round_trip", state_round_trip),
                        ("timing", timing), ("resume", resume)):
        t0 = time.perf_counter()
        try:
            report[name] = check(args.device)
        except Exception as err:  # one check's failure is reported, the next one still runs
            report[name] = {"status": "error", "error": f"{type(err).__name__}: {err}"[-2000:]}
        report[name]["seconds"] = time.perf_counter() - t0
        print(f"ft_draws_check: {name} {report[name]['status']} ({report[name]['seconds']:.1f} s)", file=sys.stderr)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "ft_draws_check.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report))
    return 1 if any(v.get("status") in ("fail", "error") for v in report.values() if isinstance(v, dict)) else 0


if __name__ == "__main__":
    sys.exit(main())
