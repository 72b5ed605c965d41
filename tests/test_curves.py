"""The facts and named checks of ftcl_core.study.curves (chapters 2, 4-6): each check passes on curves shaped like
the stored runs' and fails when the shape the chapter's words describe is flipped."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ftcl_core.study import curves
from ftcl_core.study.checks import TextDisagrees, expect, failures

STEPS, PER_EPOCH, K, B = 1170, 39, 4096, 256


def run_like_the_stored_one(flip: str = "") -> dict[str, np.ndarray]:
    """Per-step metrics shaped like the stored MoCo v2 run: the loss starts low (random queue), peaks as the queue
    fills (step 16), dips, climbs a smaller hump and falls; the top-1 peaks at epoch 1.5 and sinks as Var(neg) grows.
    ``flip`` breaks one of those shapes."""
    s = np.arange(STEPS, dtype=float)
    loss = np.interp(s, [0, 16, 50, 150, 600, STEPS - 1], [6.0, 7.7, 6.7, 7.1, 6.3, 5.8])
    top1 = np.interp(s, [0, 2, 40, 58, 150, STEPS - 1], [20, 1, 10, 31, 6, 5])
    neg = np.interp(s, [0, 15, 40, 150, STEPS - 1], [0.0, 0.72, -0.19, 0.1, 0.0])
    var = np.interp(s, [0, 10, 20, 58, 550, STEPS - 1], [0.008, 0.18, 0.01, 0.065, 0.19, 0.14])
    if flip == "falls from ln(K+1)":
        loss = np.linspace(8.3, 5.8, STEPS)
    if flip == "no hump":
        loss = np.interp(s, [0, 16, 600, STEPS - 1], [6.0, 7.7, 6.3, 5.8])
    if flip == "top-1 climbs":
        top1 = np.linspace(1, 40, STEPS)
    if flip == "Var(neg) flat":
        var = np.full(STEPS, 0.065)
    pos = np.interp(s, [0, 40, STEPS - 1], [0.8, 0.3, 0.85])
    if flip == "Mean(pos) never falls":
        pos = np.full(STEPS, 0.85)
    if flip == "Mean(neg) stays up":
        neg = np.interp(s, [0, 15, STEPS - 1], [0.0, 0.72, 0.3])
    if flip == "Var(neg) rises to the end":
        var = np.linspace(0.01, 0.2, STEPS)
    return {"step": s.astype(int), "epoch": s.astype(int) // PER_EPOCH, "loss": loss, "top1": top1, "neg_mean": neg,
            "neg_var": var, "pos_mean": pos}


CH4 = ("the loss starts below ln(K+1)", "the loss rises before it falls", "the loss peaks as the queue fills",
       "the loss climbs a second, smaller hump", "Mean(neg) climbs from the random keys",
       "the contrastive top-1 spikes and sinks", "Var(neg) grows as the top-1 sinks",
       "Mean(pos) falls in the first epoch and climbs back", "Mean(neg) dips below zero and settles at zero",
       "Var(neg) peaks mid-run and eases")


def test_the_training_curve_facts_read_the_stored_runs_shape():
    f = curves.training_curve_facts(run_like_the_stored_one(), K, B)
    expect(curves.CHECKS, f, *CH4)
    assert f["fill"] == "16" and f["ln_k"] == "8.32" and 12 <= int(f["peak_step"]) <= 20 and 1.2 <= float(f["top1_epoch"]) <= 1.8
    assert all(isinstance(v, str) for k, v in f.items() if k != "values")


@pytest.mark.parametrize(("flip", "fails"), [
    ("falls from ln(K+1)", {"the loss starts below ln(K+1)", "the loss rises before it falls"}),
    ("no hump", {"the loss climbs a second, smaller hump"}),
    ("top-1 climbs", {"the contrastive top-1 spikes and sinks"}),
    ("Var(neg) flat", {"Var(neg) grows as the top-1 sinks"}),
    ("Mean(pos) never falls", {"Mean(pos) falls in the first epoch and climbs back"}),
    ("Mean(neg) stays up", {"Mean(neg) dips below zero and settles at zero"}),
    ("Var(neg) rises to the end", {"Var(neg) peaks mid-run and eases"}),
])
def test_each_training_curve_check_flips_with_its_shape(flip, fails):
    f = curves.training_curve_facts(run_like_the_stored_one(flip), K, B)
    assert fails <= set(failures(curves.CHECKS, f, *CH4))
    with pytest.raises(TextDisagrees):
        expect(curves.CHECKS, f, *CH4)


def test_the_init_score_facts_tell_a_shared_direction_from_a_collapse():
    rng = np.random.default_rng(0)
    shared = np.ones(32) * 4  # every feature's large common direction
    own = rng.normal(size=(64, 32))
    q, k = shared + own + 0.3 * rng.normal(size=own.shape), shared + own + 0.3 * rng.normal(size=own.shape)
    trained = {"pos_mean": np.full(200, 0.85), "neg_mean": np.r_[0.0, np.full(199, 0.01)]}
    names = [n for n in curves.CHECKS if n.startswith(("a random", "the shared", "the queue's", "the trained"))]
    assert len(names) == 5
    f = curves.init_score_facts(q, k, trained)
    expect(curves.CHECKS, f, *names)
    assert float(f["neg"]) > 0.9 and abs(float(f["centred_neg"])) < 0.1
    spread = curves.init_score_facts(own, own + 0.3 * rng.normal(size=own.shape), trained)  # no shared direction
    assert "a random encoder's cosines sit above the collapse level" in failures(curves.CHECKS, spread, *names)
    collapsed = curves.init_score_facts(q, k, {"pos_mean": np.full(200, 0.95), "neg_mean": np.full(200, 0.93)})
    failed = failures(curves.CHECKS, collapsed, *names)
    assert "the trained run ends with a wide gap below the collapse level" in failed
    assert "the queue's random keys score near zero" in failed


def test_the_gradient_swing_facts_and_their_flips():
    rng = np.random.default_rng(1)
    calm = np.linspace(1.5, 3.8, 30)[:, None] * np.full((30, 4), 0.25)
    spiky = calm + rng.normal(0, 0.4, size=calm.shape)
    layers = ["stem.0", "stem.1", "layers.0.bn1", "head.0"]
    calm[:, [1, 2]] *= 0.1  # the batch-norm layers' gradients the smallest
    f = curves.grad_swing_facts({"v2 baseline": calm}, layers)
    expect(curves.CHECKS, f, "the summed gradient norm grows over the run", "the batch-norm layers carry the smallest gradients")
    assert failures(curves.CHECKS, curves.grad_swing_facts({"flat": np.ones((30, 4))}, layers),
                    "the summed gradient norm grows over the run", "the batch-norm layers carry the smallest gradients")
    momenta = {"m=0": spiky, "m=0.5": spiky * 1.1, "m=0.99": calm, "m=1.0": calm * 0.9}
    expect(curves.CHECKS, curves.grad_swing_facts(momenta), "every small momentum swings more than every large one")
    assert curves.grad_swing_facts(momenta)["most"] == "0.5"
    assert failures(curves.CHECKS, curves.grad_swing_facts({"m=0": calm, "m=0.99": spiky}),
                    "every small momentum swings more than every large one")
    expect(curves.CHECKS, curves.grad_swing_facts({"v1 baseline": calm, "v1 +both": spiky}), "FT swings more than its baseline")
    assert failures(curves.CHECKS, curves.grad_swing_facts({"v1 baseline": spiky, "v1 +both": calm}),
                    "FT swings more than its baseline")
    assert curves.grad_swing_facts({})["n"] == 0


def test_the_temperature_facts_read_the_top_share_and_flip_when_a_hotter_softmax_is_sharper():
    name = "a lower temperature gives the hardest negatives more of the mass"
    ranks = np.arange(1, 101)
    sharp, flat = np.minimum(1.0, ranks / 40), ranks / 100  # cumulative shares by rank
    f = curves.temperature_facts({0.07: sharp, 1.0: flat}, top=30)
    assert (f["top_0_07"], f["top_1"], f["top"], f["k"]) == ("75", "30", "30", "100")
    expect(curves.CHECKS, f, name)
    assert name in failures(curves.CHECKS, curves.temperature_facts({0.07: flat, 1.0: sharp}, top=30), name)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 300))
def test_the_negatives_softmax_mass_by_rank_rises_to_one_and_a_lower_temperature_puts_more_on_the_hardest(seed, k):
    gen = torch.Generator().manual_seed(seed)
    neg = torch.rand(16, k, generator=gen) * 2 - 1
    cold, hot = curves.negative_mass_by_rank(neg, 0.07), curves.negative_mass_by_rank(neg, 1.0)
    for cum in (cold, hot):
        assert cum.shape == (k,) and torch.all(cum[1:] >= cum[:-1] - 1e-12)
        torch.testing.assert_close(cum[-1], torch.tensor(1.0, dtype=cum.dtype))
    assert torch.all(cold >= hot - 1e-12)  # at every rank the hardest negatives hold at least as much when cold
    with pytest.raises(ValueError, match="tau"):
        curves.negative_mass_by_rank(neg, 0.0)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), top=st.integers(1, 8))
def test_the_half_mass_temperature_gives_the_top_negatives_half_the_mass(seed, top):
    neg = torch.rand(8, 64, generator=torch.Generator().manual_seed(seed)) * 2 - 1
    tau = curves.half_mass_temperature(neg, top=top)
    assert abs(float(curves.negative_mass_by_rank(neg, tau)[top - 1]) - 0.5) < 1e-3
    with pytest.raises(ValueError, match="one half"):
        curves.half_mass_temperature(neg, top=top, lo=tau * 2, hi=tau * 4)  # the share stays below half: no crossing
