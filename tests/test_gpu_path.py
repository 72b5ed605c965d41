"""The GPU path's options run on CPU: bf16 autocast, channels_last, torch.compile, fused SGD, SyncBN,
and the step-time benchmark.  (Speed is measured on a GPU machine by the benchmark, not here.)"""

import dataclasses
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks import profiling as bench
from ftcl_core.checkpoints import METRIC_COLUMNS
from ftcl_core.config import ConfigError, load_config
from ftcl_core.execution import prepare_model
from ftcl_core.methods import StepContext
from ftcl_core.training import build_optimizer, train


def first_losses(config: str, *overrides: str, steps: int = 3) -> np.ndarray:
    cfg = load_config(config, list(overrides))
    with tempfile.TemporaryDirectory() as tmp:
        return train(cfg, tmp, progress=False, max_steps=steps)["metrics"]["loss"]


@pytest.mark.parametrize("config", ["configs/smoke_moco_v2.yaml", "configs/smoke_simclr.yaml", "configs/smoke_byol.yaml"])
def test_bf16_autocast_and_channels_last_track_fp32(config):
    fp32 = first_losses(config)
    fast = first_losses(config, "train.amp=bf16", "train.channels_last=true")
    assert np.all(np.isfinite(fast))
    np.testing.assert_allclose(fast[0], fp32[0], rtol=0.05)  # same data and weights, bf16 rounding only


def test_channels_last_alone_changes_nothing_but_rounding():
    """Channels-last with split-BN in blocks (the default) against NCHW with interleaved split-BN: three steps agree
    to float32 rounding: the first loss (no update yet) to 1e-5, the later ones to 1e-3, since each SGD step carries
    the rounding forward (measured 1.5e-4 at step 3 on an AVX2 EPYC, 1 thread; a wrong split of the batch-norm
    groups moves the first loss itself)."""
    last = first_losses("configs/smoke_moco_v2.yaml", "train.channels_last=true")
    nchw = first_losses("configs/smoke_moco_v2.yaml", "train.channels_last=false")
    np.testing.assert_allclose(last[0], nchw[0], rtol=1e-5)
    np.testing.assert_allclose(last, nchw, rtol=1e-3)


def test_torch_compile_gives_the_same_steps():
    # the "eager" backend runs TorchDynamo's graph capture without a C++ build, so the test stays fast
    np.testing.assert_allclose(first_losses("configs/smoke_simclr.yaml", "train.compile=eager"),
                               first_losses("configs/smoke_simclr.yaml"), rtol=1e-5)


def test_fused_sgd_is_used_when_asked_and_gives_the_same_steps():
    cfg = load_config("configs/smoke_moco_v2.yaml", ["optim.fused=true"])
    model, _ = prepare_model(cfg, "cpu")
    assert build_optimizer(cfg, model, "cpu").defaults["fused"] is True
    assert not build_optimizer(load_config("configs/smoke_moco_v2.yaml"), model, "cpu").defaults.get("fused")
    np.testing.assert_allclose(first_losses("configs/smoke_moco_v2.yaml", "optim.fused=true"),
                               first_losses("configs/smoke_moco_v2.yaml"), rtol=1e-5)


def test_sync_bn_converts_every_batchnorm_and_trains_in_one_process():
    cfg = load_config("configs/smoke_simclr.yaml", ["model.sync_bn=true", "model.bn_splits=1"])
    model, _ = prepare_model(cfg, "cpu")
    kinds = {type(m).__name__ for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)}
    assert kinds == {"SyncBatchNorm"}
    with pytest.raises(ConfigError, match="bn_splits=1"):
        load_config("configs/smoke_simclr.yaml", ["model.sync_bn=true", "model.bn_splits=2"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error of a machine without CUDA")
def test_cuda_without_a_gpu_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no CUDA device"):
        train(load_config("configs/smoke_moco_v2.yaml", ["device=cuda"]), tmp_path, progress=False)


def test_unknown_amp_mode_is_a_clear_error():
    with pytest.raises(ConfigError, match="train.amp"):
        load_config("configs/smoke_moco_v2.yaml", ["train.amp=fp8"])


def test_breakdown_benchmark_splits_the_step_into_phases():
    r = bench.breakdown("configs/smoke_simclr.yaml", ["train.amp=bf16", "train.channels_last=true"], steps=2,
                        warmup=1, synthetic=128)
    assert set(r["phases_ms"]) == {"data", "augment", "forward", "ft_loss", "backward", "statistics", "optimizer"}
    assert sum(r["phases_ms"].values()) == pytest.approx(r["step_ms"], rel=1e-6)
    assert r["images_per_s"] > 0 and r["method"] == "simclr"


GPU_CONFIGS = sorted(p.name for p in (Path(__file__).resolve().parent.parent / "configs").glob("gpu_*.yaml"))


@pytest.mark.parametrize("config", GPU_CONFIGS)
def test_every_gpu_config_takes_a_step_on_cpu(config):
    """The GPU recipes (real encoders, bf16, channels_last, their heads and queues) on 8 random images."""
    from ftcl_core.augment import AugmentConfig
    from ftcl_core.training import augment_config, make_views, train_step

    recipe = load_config(f"configs/{config}")
    small = min(64, recipe.data.image_size)  # views no larger than the stored images
    splits = min(recipe.model.bn_splits, 4)  # groups of at least 2 of the 8 images: split-BN's path, at any size
    cfg = load_config(f"configs/{config}", ["device=cpu", "train.batch_size=8", f"augment.out_size={small}",
                                            f"model.bn_splits={splits}"])
    assert cfg.train.amp == "bf16" and cfg.train.channels_last
    model, net = prepare_model(cfg, "cpu")
    opt = build_optimizer(cfg, model, "cpu")
    x = torch.randint(0, 256, (8, 3, 72, 72), dtype=torch.uint8)
    aug: AugmentConfig = augment_config(cfg)
    ft = dataclasses.replace(cfg.ft, pos=True, neg=cfg.method in ("moco", "simclr"))
    gen = torch.Generator().manual_seed(0)
    ctx = StepContext(gen, ft, n_stats=8, amp="bf16", wrapped=net)
    out = train_step(model, opt, make_views(x, aug, gen, channels_last=True), ctx)
    known = [i for i, c in enumerate(METRIC_COLUMNS[2:]) if c != "same_class"]  # NaN unless stats.same_class
    assert torch.isfinite(out.loss) and torch.all(torch.isfinite(out.values[known]))


def test_a_captured_step_is_refused_where_it_cannot_apply_with_the_fix():
    """train.cuda_graph=true (CUDA graphs through inductor) is an execution key; on the CPU, or with another
    compiler asked for, the error says what to change."""
    from ftcl_core.config import config_diff
    from ftcl_core.execution import captured_step_possible, execution_path

    with pytest.raises(ConfigError, match="device=cpu has none. Set device=cuda"):
        load_config("configs/smoke_moco_v2.yaml", ["train.cuda_graph=true"])
    with pytest.raises(ConfigError, match="train.compile='eager' names another compiler backend"):
        load_config("configs/smoke_moco_v2.yaml", ["device=auto", "train.cuda_graph=true", "train.compile=eager"])
    load_config("configs/smoke_moco_v2.yaml", ["device=auto", "train.cuda_graph=true", "train.compile=false"])  # implied
    cfg = load_config("configs/smoke_moco_v2.yaml", ["device=auto", "train.cuda_graph=true"])
    assert config_diff(cfg, load_config("configs/smoke_moco_v2.yaml", ["device=auto"])) == []
    assert execution_path(cfg, "cuda")["compile"] == "inductor+cudagraphs"
    with pytest.raises(ConfigError, match="trains on cpu. Train on a GPU"):
        prepare_model(cfg, "cpu")
    with pytest.raises(ConfigError, match="trains on cpu"):
        captured_step_possible("cpu")
    assert StepContext.from_config(cfg, torch.Generator()).captured
