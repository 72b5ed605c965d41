"""Score statistics (Supp A), gradient norms (Supp C) and the evaluation protocols."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from ftcl_core.evaluation import knn_top1, linear_readout
from ftcl_core.stats import StepRecorder, layer_grad_norms, layer_names, score_statistics


def test_score_statistics_match_supp_a():
    g = torch.Generator().manual_seed(0)
    lp, ln = torch.rand(100, generator=g), torch.rand(100, 50, generator=g)
    s = score_statistics(lp, ln, n=64)
    assert abs(float(s[0]) - float(lp[:64].mean())) < 1e-6
    means = [float(ln[i].mean()) for i in range(64)]
    vars_ = [float(ln[i].var(unbiased=False)) for i in range(64)]
    assert abs(float(s[1]) - sum(means) / 64) < 1e-6
    assert abs(float(s[2]) - sum(vars_) / 64) < 1e-6


def test_layer_grad_norms_are_per_layer_l2():
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    net(torch.randn(5, 3)).sum().backward()
    norms = layer_grad_norms(net)
    assert layer_names(net) == ["0", "2"]
    want0 = (net[0].weight.grad.pow(2).sum() + net[0].bias.grad.pow(2).sum()).sqrt()
    torch.testing.assert_close(norms[0], want0)


def test_recorder_flushes_in_batches_and_restores():
    rec = StepRecorder(("a", "b"), sync_every=3)
    for s in range(7):
        rec.record(s, torch.tensor([s * 1.0, -s * 1.0]))
    assert len(rec.rows) == 6
    arrays = rec.as_arrays()
    assert arrays["a"].tolist() == list(range(7))
    rec2 = StepRecorder(("a", "b"))
    rec2.load(arrays, upto_step=4)
    assert rec2.as_arrays()["step"].tolist() == [0, 1, 2, 3]


def clusters(n=400, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 4
    centres = torch.eye(8)[:4] * 5
    return centres[y] + torch.randn(n, 8, generator=g), y


def test_knn_and_linear_readout_separate_clusters():
    xtr, ytr = clusters(seed=0)
    xte, yte = clusters(seed=1)
    assert knn_top1(xtr, ytr, xte, yte, k=20) > 95
    assert linear_readout(xtr, ytr, xte, yte, epochs=20) > 95


def test_readouts_are_at_chance_on_noise():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(400, 8, generator=g), torch.randint(0, 4, (400,), generator=g)
    assert linear_readout(x[:300], y[:300], x[300:], y[300:], epochs=20) < 45


def test_histograms_keep_scores_outside_minus_one_one():
    from ftcl_core.stats import score_histogram

    pos = torch.tensor([-3.0, 0.5, 1.0])  # -3: an extrapolated positive (eq. 4, S = 0.2, lambda = 2)
    neg = torch.tensor([[-1.5, 0.0, 2.0], [0.1, 0.2, 0.3], [0.0, 0.0, 0.0]])
    h = score_histogram(pos, neg, n=3, bins=10)
    assert h[0].sum() == 3 and h[1].sum() == 9
    assert h[0, 0] == 1 and h[1, 0] == 1 and h[1, -1] == 1


def test_volatility_is_the_spread_of_the_changes():
    import numpy as np

    from ftcl_core.study.signatures import volatility

    steady = volatility(np.linspace(0, 1, 50), np.ones((5, 3)))
    assert steady == pytest.approx((0.0, 0.0), abs=1e-12)
    neg, grad = volatility(np.array([0.0, 1.0, 0.0, 1.0]), np.array([[1.0, 1.0], [2.0, 2.0], [1.0, 1.0]]))
    assert neg == pytest.approx(np.std([1, -1, 1])) and grad == pytest.approx(2.0)


def test_collapse_signature_finds_the_jump_of_the_negatives():
    import numpy as np

    from ftcl_core.study.signatures import collapse_signature

    neg_mean = np.r_[np.zeros(10), np.full(90, 0.97), np.linspace(0.97, 0.5, 100)]
    neg_var = np.r_[np.full(10, 0.01), np.full(90, 1e-4), np.linspace(1e-4, 0.05, 100)]
    sig = collapse_signature(neg_mean, neg_var)
    assert sig["first_step_above"] == 10 and sig["early_min_var"] == 1e-4
    assert sig["final_neg_mean"] == 0.5 and sig["final_neg_var"] == 0.05
    assert collapse_signature(np.zeros(50), np.full(50, 0.02))["first_step_above"] is None


def _signature_row(kept: float | None, step: int | None, setting: str = "s") -> dict:
    return {"table": "T", "setting": setting, "kept": kept, "first_step_above": step}


def test_signature_facts_count_lost_and_passing_rows_and_their_checks_flip():
    """Chapter 6's words: passing the level is neither needed nor enough to lose the readout. Each check fails when
    its half of the words stops holding: every lost row passes the level, or no passing row keeps its readout."""
    from ftcl_core.study.checks import failures
    from ftcl_core.study.signatures import CHECKS, signature_facts

    both = [_signature_row(None, None, "baseline"), _signature_row(0.2, 16, "a"), _signature_row(0.3, None, "b"),
            _signature_row(0.9, 20, "c"), _signature_row(1.0, None, "d")]
    f = signature_facts(both)
    assert (f["compared"], f["lost"], f["passed"], f["lost_never"], f["passed_kept"]) == ("4", "2", "2", "1", "1")
    assert f["lost_never_names"] == "T b" and f["passed_kept_names"] == "T c" and f["level"] == "0.9"
    assert not failures(CHECKS, f)
    every_lost_passes = [r if r["setting"] != "b" else _signature_row(0.3, 30, "b") for r in both]
    assert list(failures(CHECKS, signature_facts(every_lost_passes))) == [
        "some rows lose their readout without passing the level"]
    every_pass_loses = [r if r["setting"] != "c" else _signature_row(0.4, 20, "c") for r in both]
    assert list(failures(CHECKS, signature_facts(every_pass_loses))) == ["some rows pass the level and keep their readout"]
    assert set(failures(CHECKS, signature_facts([_signature_row(0.2, 16), _signature_row(1.0, None)]))) == set(CHECKS)


def test_signature_rows_read_each_settings_lowest_seed_against_the_files_baseline():
    """Chapter 6's table on the stored runs: a comparison chain (T3's extrapolation against interpolation) leads to
    the file's baseline, and the checks hold."""
    from ftcl_core.study import experiment_file, store
    from ftcl_core.study.checks import failures
    from ftcl_core.study.signatures import CHECKS, signature_facts, signature_rows

    path = "experiments/table3_interp_vs_extrap.yaml"
    rows = signature_rows({path: store.load_records(path, "cpu", experiment_file.STORED)})
    if not rows:
        pytest.skip("no stored runs of Table 3")
    base = next(r for r in rows if r["setting"] == "baseline")
    assert base["kept"] is None and base["baseline"] is None
    assert all(r["baseline"] == base["linear"] for r in rows if r is not base)
    assert all(r["first_step_above"] is None or r["first_step_above"] >= 0 for r in rows)
    paths = ["experiments/table7_ft_v1.yaml", "experiments/table7_ft_v2_fmnist.yaml", "experiments/supp_g_negatives.yaml"]
    records = {p: store.load_records(p, "cpu", experiment_file.STORED) for p in paths}
    assert not failures(CHECKS, signature_facts(signature_rows(records)))


def test_screen_prints_the_collapse_signature_of_a_few_steps(capsys):
    from ftcl_core.__main__ import main

    assert main(["screen", "configs/smoke_moco_v2.yaml", "--steps", "5", "data.n_train=256", "moco.queue_size=128"]) == 0
    out = capsys.readouterr().out
    assert "5 steps in" in out and "Mean(neg) > 0.9 first at step" in out and "final Mean(pos)" in out
    rho = next(line for line in out.splitlines() if line.startswith("rho "))
    assert all(-1 <= float(v) <= 1 for v in rho.split()[1:])  # the representation statistics are recorded
    assert main(["screen", "configs/smoke_moco_v2.yaml", "--steps", "0"]) == 2


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(8, 64), st.integers(4, 32))
def test_representation_statistics_at_their_limits(seed, n, d):
    from ftcl_core.stats import representation_statistics

    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, d, generator=g, dtype=torch.float64).float()
    align, uniform, rho, erank = representation_statistics(z, z).tolist()
    assert align == pytest.approx(0, abs=1e-6) and rho == pytest.approx(1, abs=1e-5)  # identical views
    assert uniform < 0 and 1 <= erank <= min(n, d) + 1e-4
    # every image at one point: uniformity 0; on one line through the mean: effective rank 1
    point = torch.randn(1, d, generator=g).expand(n, d)
    assert representation_statistics(point, point)[1].item() == pytest.approx(0, abs=1e-5)
    # a short segment (1 % of its distance from the origin): base and direction at unit length, so that no draw
    # puts the segment near the origin, where normalising would bend it far from a line
    base, direction = (F.normalize(torch.randn(1, d, generator=g), dim=1) for _ in range(2))
    line = base + torch.linspace(-1, 1, n).unsqueeze(1) * direction * 1e-2
    assert representation_statistics(line, line)[3].item() < 1.05  # (normalising bends the line slightly)
    # independent views: rho near 0 (its chance spread is about 1 / sqrt(n d))
    other = torch.randn(n, d, generator=g)
    if n * d >= 256:
        assert abs(representation_statistics(z, other)[2].item()) < 8 / (n * d) ** 0.5

