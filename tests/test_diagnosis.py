"""The FT-collapse algebra (chapter "When does feature transformation help?") against autograd."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from ftcl_core import diagnosis as G


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(1.0, 2.0), st.floats(0.05, 1.0))
def test_the_analytic_gradient_is_the_autograd_gradient(seed, lam, tau):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(16, 8, generator=g, dtype=torch.float64) * 2
    k = F.normalize(torch.randn(16, 8, generator=g, dtype=torch.float64), dim=1)
    negatives = F.normalize(torch.randn(40, 8, generator=g, dtype=torch.float64), dim=1)
    want = G.autograd_gradient(z, k, negatives, lam, tau)
    got = G.analytic_gradient(z, k, negatives, lam, tau)
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-12)


def test_weights_and_threshold():
    assert G.alignment_weight(1.0) == 1 and G.attraction_threshold(1.0) == 0
    assert G.attraction_threshold(1.5) == pytest.approx(0.4)
    assert G.mean_weight_ratio(2.0) == pytest.approx(1.68, abs=0.005)  # E[A / l], l ~ Beta(2, 2) + 1


@pytest.mark.parametrize("lam", [1.0, 1.5])
def test_a_concentrated_state_contracts_below_the_threshold_and_spreads_above(lam):
    edge = G.attraction_threshold(lam)
    assert G.contraction_rate(edge - 0.25, lam) < 0 < G.contraction_rate(edge + 0.25, lam)
    # the stronger the views' agreement, the faster it spreads (monotone in rho)
    rates = [G.contraction_rate(r, lam) for r in (-0.5, 0.0, 0.5, 0.9)]
    assert rates == sorted(rates)
