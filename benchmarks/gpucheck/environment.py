"""Part 1 of the GPU check: the machine, its libraries, and a measured bf16 matrix product against its datasheet."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess

import torch

from benchmarks import timing
from benchmarks.gpucheck.setting import Setting
from ftcl_core.runs import cpu_model

# The chips' dense bf16 tensor-core peaks (TFLOP/s, no sparsity), from NVIDIA's datasheets.  Checked in order:
# the first name contained in the device name wins.
BF16_PEAK_TFLOPS = (
    ("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.0), ("H200", 989.0), ("GH200", 989.0),
    ("B200", 2250.0), ("A100", 312.0), ("A10G", 70.0), ("A10", 125.0), ("L40S", 362.0), ("L40", 181.0),
    ("L4", 121.0), ("RTX 4090", 165.0), ("RTX A6000", 155.0),
)


def bf16_peak(name: str) -> float | None:
    """The datasheet's dense bf16 peak (TFLOP/s) of the GPU called ``name``; ``None`` for a chip not listed."""
    return next((peak for key, peak in BF16_PEAK_TFLOPS if key in name), None)


def _version(module: str) -> str | None:
    try:
        return __import__(module).__version__
    except Exception:  # a missing or broken package is a fact to report, not a reason to stop
        return None


def environment(s: Setting) -> dict:
    """The machine's facts (``info``), with the bf16 matrix product's measured TFLOP/s (2 n^3 flops a product)."""
    info = {"python": platform.python_version(), "torch": torch.__version__, "torchvision": _version("torchvision"),
            "timm": _version("timm"), "numpy": _version("numpy"), "cpu": cpu_model(), "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "cuda_available": torch.cuda.is_available(),
            "device": s.device}
    if s.device.startswith("cuda"):
        p = torch.cuda.get_device_properties(0)
        info.update({
            "gpu": p.name, "gpu_memory_gib": p.total_memory / 2**30, "multiprocessors": p.multi_processor_count,
            "compute_capability": f"{p.major}.{p.minor}", "cuda_runtime": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "bf16_supported": torch.cuda.is_bf16_supported(),
            "tf32_matmul_default": torch.backends.cuda.matmul.allow_tf32,
            "tf32_cudnn_default": torch.backends.cudnn.allow_tf32,
            "bf16_peak_tflops_datasheet": bf16_peak(p.name),
        })
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20).stdout.strip()
            info["driver"] = out or None
    n = 512 if s.dry else 8192
    a = torch.randn(n, n, device=s.device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=s.device, dtype=torch.bfloat16)
    info["bf16_matmul_tflops_measured"] = 2 * n**3 / timing.timed(lambda: a @ b, 10, warmup=3, device=s.device) / 1e12
    info["bf16_matmul_size"] = n
    return {"status": "pass", "info": info}
