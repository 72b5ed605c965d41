"""The benchmark scripts run (on the smoke config); their numbers are measured by hand, never asserted on time."""

import importlib.util

import pytest

from benchmarks import bench


def test_overhead_benchmark_reports_its_ratios():
    r = bench.overhead("configs/smoke_moco_v2.yaml", rounds=1, steps=1, warmup=1)
    assert {"ft_overhead", "stats_overhead", "ft_device_draws_overhead", "plain_step_s"} <= set(r) and r["plain_step_s"] > 0


def test_flop_count_and_profile_cover_the_step():
    r = bench._flops_and_profile("configs/smoke_moco_v2.yaml", steps=1)
    assert r["step_gflop"] > 0 and r["sgemm_gflops"] > 0
    assert abs(sum(r["profile"].values()) - 1) < 1e-6


@pytest.mark.skipif(importlib.util.find_spec("lightly") is None, reason="lightly is installed only for the benchmark")
def test_lightly_worker_runs_one_epoch():
    r = bench._worker("lightly", "configs/smoke_moco_v2.yaml", 1, 0)
    assert len(r["rates"]) == 1 and r["peak_rss_mib"] > 0


def test_paths_benchmark_times_the_nchw_the_default_and_the_view_path():
    from benchmarks import bench

    r = bench.paths("configs/smoke_moco_v2.yaml", rounds=2, steps=1)
    assert set(r["median_s"]) == {"contiguous/interleaved", "channels_last/blocks/per_group", "channels_last/blocks/view"}
    assert r["old"] == "contiguous/interleaved" and r["new"] == "channels_last/blocks/per_group" and r["speedup"] > 0
    assert r["view"] == "channels_last/blocks/view" and r["view_ratio"] > 0


@pytest.mark.slow  # torch.compile of the MoCo v2 networks
def test_compile_benchmark_child_times_the_first_and_the_steady_steps():
    r = bench._compile_child("configs/smoke_moco_v2.yaml", rounds=1, backend="eager")
    assert r["first_step_s"] > 0 and r["eager_s"] > 0 and r["compiled_s"] > 0
