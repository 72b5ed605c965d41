"""The math of the feature transformations: eq. 3-4, Sec 4.2, Supp G.1/G.2, and the lambda samplers."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from ftcl_core import transforms


def unit(n, d, seed):
    return F.normalize(torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64), dim=1)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), lam=st.floats(1.0, 2.0), d=st.integers(2, 256))
def test_eq4_extrapolated_score_matches_closed_form_and_range(seed, lam, d):
    zq, zk = unit(32, d, seed), unit(32, d, seed + 1)
    s = (zq * zk).sum(1)
    q2, k2 = transforms.extrapolate_positive(zq, zk, lam)
    s2 = (q2 * k2).sum(1)
    torch.testing.assert_close(s2, transforms.transformed_positive_score(s, lam))  # eq. 4
    lo, hi = transforms.score_range(s)
    assert torch.all(s2 <= hi + 1e-12) and torch.all(s2 >= lo - 1e-12)  # [-4 + 5S, S]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), lam=st.floats(1.0, 2.0), d=st.integers(2, 256))
def test_eq4_renormalized_score_is_the_cosine_of_the_mixed_pair_and_still_at_most_s(seed, lam, d):
    zq, zk = unit(32, d, seed), unit(32, d, seed + 1)
    s = (zq * zk).sum(1)
    q2, k2 = transforms.extrapolate_positive(zq, zk, lam)
    cos = (transforms.renormalize(q2) * transforms.renormalize(k2)).sum(1)
    torch.testing.assert_close(cos, transforms.renormalized_positive_score(s, lam))  # eq. 4 + Supp F
    assert torch.all(cos <= s + 1e-12) and torch.all(cos >= -1 - 1e-12)  # still harder, and a cosine again


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(2, 256), low=st.floats(0.0, 1.0), high=st.floats(1.0, 2.0))
def test_eq4_per_dimension_score_matches_its_closed_form_and_is_at_most_s_for_lambdas_from_one(seed, d, low, high):
    gen = torch.Generator().manual_seed(seed)
    zq, zk = unit(32, d, seed), unit(32, d, seed + 1)
    s = (zq * zk).sum(1)
    for lo, hi in ((1.0, high), (low, 1.0)):  # extrapolation per dimension, then interpolation per dimension
        lam = lo + (hi - lo) * torch.rand(1, d, generator=gen, dtype=torch.float64)
        q2, k2 = transforms.extrapolate_positive(zq, zk, lam)
        closed = transforms.per_dimension_positive_score(zq, zk, lam)
        torch.testing.assert_close((q2 * k2).sum(1), closed)  # eq. 4, one lambda per dimension
        assert torch.all(closed <= s + 1e-12) if lo >= 1 else torch.all(closed >= s - 1e-12)
    one = transforms.per_dimension_positive_score(zq, zk, torch.full((1, d), high, dtype=torch.float64))
    torch.testing.assert_close(one, transforms.transformed_positive_score(s, high))  # one lambda: eq. 4 itself


def test_eq4_range_endpoints_are_attained():
    zq, zk = unit(8, 16, 0), unit(8, 16, 1)
    s = (zq * zk).sum(1)
    for lam, want in ((1.0, s), (2.0, -4 + 5 * s)):
        q2, k2 = transforms.extrapolate_positive(zq, zk, lam)
        torch.testing.assert_close((q2 * k2).sum(1), want)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), lam=st.floats(0.0, 1.0))
def test_positive_interpolation_raises_the_score(seed, lam):
    zq, zk = unit(16, 32, seed), unit(16, 32, seed + 1)
    q2, k2 = transforms.extrapolate_positive(zq, zk, lam)
    assert torch.all((q2 * k2).sum(1) >= (zq * zk).sum(1) - 1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), lam=st.floats(0.0, 1.0))
def test_interpolated_negatives_stay_in_the_convex_hull(seed, lam):
    queue = unit(64, 8, seed)
    perm = transforms.sample_permutation(64, torch.Generator().manual_seed(seed))
    mixed = transforms.interpolate_negatives(queue, lam, perm)
    # each mixed vector lies on the segment between queue[i] and queue[perm[i]]
    torch.testing.assert_close(mixed, lam * queue + (1 - lam) * queue[perm])
    assert torch.all(mixed.norm(dim=1) <= 1 + 1e-12)  # inside the unit ball
    seg = queue - queue[perm]
    t = ((mixed - queue[perm]) * seg).sum(1) / seg.pow(2).sum(1).clamp_min(1e-30)
    assert torch.all((t >= -1e-9) & (t <= 1 + 1e-9))


def test_negative_extrapolation_leaves_the_hull():
    queue = unit(64, 8, 0)
    perm = torch.roll(torch.arange(64), 1)
    mixed = transforms.interpolate_negatives(queue, 1.8, perm)
    assert (mixed.norm(dim=1) > 1).float().mean() > 0.5


@pytest.mark.parametrize("lam_shape", [(), (16, 1), (1, 32)])
def test_hard_negatives_raise_the_negative_score_and_match_materialised(lam_shape):
    zq, queue = unit(16, 32, 0), unit(100, 32, 1)
    lam = torch.rand(lam_shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    got = transforms.hard_negative_logits(zq, queue, lam)
    lam_b = lam if lam.dim() == 0 else lam.view(-1, 1, 1) if lam.shape[1] == 1 else lam.view(1, 1, -1)
    hard = lam_b * zq.unsqueeze(1) + (1 - lam_b) * queue.unsqueeze(0)  # (N, K, D), materialised
    want = (zq.unsqueeze(1) * hard).sum(-1)
    torch.testing.assert_close(got, want)
    if lam.dim() < 2 or lam.shape[1] == 1:  # Supp G.2: l + (1-l) S_n >= S_n
        assert torch.all(got >= zq @ queue.T - 1e-12)


def test_lambda_samplers_ranges_shapes_and_moments():
    g = torch.Generator().manual_seed(0)
    ex = transforms.sample_lambda(2.0, "sample", 20000, 4, g, shift=1.0)
    assert ex.shape == (20000, 1) and ex.min() > 1 and ex.max() < 2
    a = 2.0  # Beta(a, a): mean 1/2, var 1 / (4 (2a + 1))
    assert abs(float(ex.mean()) - 1.5) < 0.01
    assert abs(float(ex.var()) - 1 / (4 * (2 * a + 1))) < 0.005
    small = transforms.sample_lambda(0.2, "step", 1, 1, g)
    assert small.shape == () and 0 <= float(small) <= 1
    assert transforms.sample_lambda(1.6, "dim", 8, 128, g).shape == (1, 128)
    b = transforms.sample_beta(2.0, 1.0, (20000,), g)  # hard negatives' Beta(2, 1): mean 2/3
    assert abs(float(b.mean()) - 2 / 3) < 0.01
    low = transforms.sample_beta(0.2, 0.2, (20000,), g)  # alpha < 1 path: U-shaped, mean 1/2, var 1/(4*1.4)
    assert abs(float(low.var()) - 1 / (4 * 1.4)) < 0.01


def test_samplers_are_reproducible_from_the_generator_only():
    draw = lambda: transforms.sample_lambda(1.6, "dim", 4, 16, torch.Generator().manual_seed(7))
    torch.manual_seed(1)
    a = draw()
    torch.manual_seed(2)
    torch.testing.assert_close(a, draw())


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_beta_rejects_non_positive_alpha(bad):
    with pytest.raises(ValueError, match="Beta parameters"):
        transforms.sample_beta(bad, 1.0, (3,), torch.Generator())


def test_unknown_granularity_is_a_clear_error():
    with pytest.raises(ValueError, match="granularity"):
        transforms.lambda_shape("batch", 2, 2)


def test_dimension_level_lambda_mixes_per_dimension():
    zq, zk = unit(4, 8, 0), unit(4, 8, 1)
    lam = torch.linspace(1.0, 2.0, 8, dtype=torch.float64).view(1, 8)
    q2, _ = transforms.extrapolate_positive(zq, zk, lam)
    torch.testing.assert_close(q2[:, 0], zq[:, 0])
    torch.testing.assert_close(q2[:, -1], 2 * zq[:, -1] - zk[:, -1])


def test_renormalize_projects_to_the_sphere():
    z = torch.randn(10, 5) * 3
    assert torch.allclose(transforms.renormalize(z).norm(dim=1), torch.ones(10))
    assert math.isclose(float(transforms.transformed_positive_score(1.0, 1.7)), 1.0)


@pytest.mark.parametrize("s, alpha", [(0.9, 2.0), (0.5, 0.6), (0.0, 1.6)])
def test_density_of_the_transformed_score_matches_monte_carlo(s, alpha):
    import numpy as np

    from ftcl_core.pages.explorers import transformed_score_density

    lam = transforms.sample_lambda(alpha, "sample", 200_000, 1, torch.Generator().manual_seed(0), shift=1.0).double().numpy()
    samples = transforms.transformed_positive_score(s, lam).ravel()
    edges = np.linspace(-4 + 5 * s, s, 21)
    hist, _ = np.histogram(samples, edges, density=True)
    grid = np.linspace(edges[0], edges[-1], 4001)
    dens = transformed_score_density(s, alpha, grid)
    mass = [dens[(grid >= a) & (grid < b)].mean() for a, b in zip(edges[:-1], edges[1:])]
    np.testing.assert_allclose(hist[2:-2], np.asarray(mass)[2:-2], rtol=0.05, atol=0.01)


def test_unit_pairs_are_unit_and_cover_the_score_range():
    zq, zk = transforms.unit_pairs(20_000, 64, torch.Generator().manual_seed(0))
    torch.testing.assert_close(zq.norm(dim=1), torch.ones(20_000, dtype=torch.float64))
    torch.testing.assert_close(zk.norm(dim=1), torch.ones(20_000, dtype=torch.float64))
    s = (zq * zk).sum(1)
    assert s.min() < -0.9 and s.max() > 0.9
