"""Replaying a stored run's first steps, so that its stored numbers can be checked against the code today
(``tests/test_results.py``, ``tools/first_steps.py``): the stored runs' compatibility, a concern of the study."""

from __future__ import annotations

import os
import tempfile

import torch

from ftcl_core.runs import RunDir
from ftcl_core.study.threads import pinned, training_threads
from ftcl_core.training import train


def replay(run_path: str | os.PathLike, n_steps: int) -> dict:
    """Re-run the first ``n_steps`` of a stored run from its config and return the per-step metrics, so
    that stored results can be checked against the code that claims to have made them.

    The run's own thread count, memory format, compiler and FT draws (host or device) are used: CPU reductions
    split over another number of threads, or run in another layout or compiled, round differently (about 1e-4
    relative after a dozen steps), and FT's draws on the device are another random stream."""
    run = RunDir(run_path)
    prov = run.load_provenance()
    # the memory format and compiler the run ran with (runs stored before they were recorded ran NCHW, eager)
    execution = prov.get("execution", {})
    cl = execution.get("memory_format") == "channels_last"
    # (a captured GPU step, inductor+cudagraphs, replays as its inductor graphs: CUDA graphs change no maths)
    compiled = {None: False, "inductor": True, "inductor+cudagraphs": True}.get(execution.get("compile"),
                                                                                execution.get("compile"))
    # FT's draws as the run made them (runs stored before it was recorded drew on the host); keys added since the
    # run take their defaults
    ft_draws = execution.get("ft_draws", "host")
    # split batch-norm as the run computed it (before the key: one batch-norm per group everywhere)
    stored = run.load_config()
    split_bn = execution.get("split_bn_kernel") or ("per_group" if cl and stored.model.bn_splits > 1 else "auto")
    cfg = stored.updated({"train.channels_last": cl, "train.compile": compiled, "train.ft_draws": ft_draws,
                          "train.split_bn": split_bn, "train.cuda_graph": False})
    threads = torch.get_num_threads()
    torch.set_num_threads(prov.get("threads", threads))
    try:
        # the run's own count, whoever else trains here (pinned: kept), registered beside the machine's other runs
        with tempfile.TemporaryDirectory() as tmp, pinned(), training_threads(say=False):
            return train(cfg, tmp, progress=False, max_steps=n_steps)["metrics"]
    finally:
        torch.set_num_threads(threads)

