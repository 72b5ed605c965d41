# %% [markdown]
# # Why does FT from the first step cost? The gradient's algebra
#
# **Because {term}`FT` weighs the pull of a query towards its key more than the push from its negatives, a
# {term}`concentrated state` attracts until the two views agree well, and in the first steps training sits where it
# attracts.** The
# figure shows one gradient step of the real loss: below zero a concentrated state contracts, and the further
# {term}`FT`'s λ is from 1, the better the views must agree before it spreads out again.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)
points = 21  # values of rho in the contraction figure (every profile draws them all)

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import display

from ftcl_core.pages import markup, run_figures
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study import diagnosis_readings, evidence, gradient_algebra
from ftcl_core.study.chapters import gradient

ev = evidence.Evidence.load(profile if profile != "gpu" else "cpu")  # the runs below (smoke: trains tiny ones)
rhos = np.array(gradient_algebra.rho_grid(points))
lams = (1.0, 1.25, 1.5, 1.75, 2.0)
rates = {lam: np.array([gradient_algebra.contraction_rate(float(r), lam) for r in rhos]) for lam in lams}
run_figures.contraction_figure(rhos, rates, {lam: gradient_algebra.attraction_threshold(lam) for lam in lams})
plt.show()

# %% tags=["remove-cell"]
stored = ev if profile == "cpu" else evidence.Evidence.load("cpu")  # the words rest on the stored cpu runs
glue_reading(gradient.read(stored))


# %% [markdown]
# The runs agree with the algebra: at the first step their $\rho$ lies inside or below the band where FT makes
# concentration attract, and after 30 % of the run it mostly lies above it ([the answer](answer) gives the numbers).
# One quantity recurs: $\rho$, the **{term}`correlation of the two views' deviations <ρ>`**. Take every feature's
# offset from the batch's mean direction; $\rho$ is how well the query's offset and its key's offset agree. At
# initialisation the two views of an image land at unrelated places ($\rho$ near 0); as the encoder learns what the
# views share, $\rho$ rises towards 1.
#
# ## The gradient of the extrapolated loss
#
# The released code mixes the normalised query $q$ and its (detached) key $k$ with one
# $\lambda \sim \mathrm{Beta}(2, 2) + 1$ per step (eq. 3): $\hat q = \lambda q + (1-\lambda) k$,
# $\hat k = \lambda k + (1-\lambda) q$, and scores $\hat q$ against the positive $\hat k$ and the negatives $n_j$.
# For unit $q, k$ the positive score is
#
# $$\hat s_+ = \hat q \cdot \hat k = A\, q\cdot k + 2\lambda(1-\lambda), \qquad A = \lambda^2 + (1-\lambda)^2,$$
#
# so $\partial \hat s_+/\partial q = A k + 2\lambda(1-\lambda) q$, and each negative score $\hat q\cdot n_j$ has
# gradient $\lambda n_j$. With the softmax weights $p$ of eq. 1 and the normaliser $q = z/\lvert z\rvert$, whose
# Jacobian projects onto the tangent plane ($P_q = (I - q q^\top)/\lvert z\rvert$), the $q$ term drops out:
#
# $$\frac{\partial \mathcal{L}}{\partial z} = -\frac{1 - p_0}{\tau}\, P_q\!\left[A\,k - \lambda\,\bar n\right],
# \qquad \bar n = \frac{\sum_j p_j n_j}{1 - p_0}.$$
#
# Without FT, $A = \lambda = 1$: alignment (the pull to $k$) and uniformity (the push from $\bar n$) are weighed
# equally. With FT the pull is weighed by $A$ and the push by $\lambda$. The code below implements the formula;
# the cell after it compares it with autograd through the library's own FT and loss.

# %%
display(markup.source_code(gradient_algebra.analytic_gradient))
gen = torch.Generator().manual_seed(0)
z = torch.randn(64, 32, generator=gen, dtype=torch.float64) * 2
k = F.normalize(torch.randn(64, 32, generator=gen, dtype=torch.float64), dim=1)
negatives = F.normalize(torch.randn(512, 32, generator=gen, dtype=torch.float64), dim=1)
worst = max(float((gradient_algebra.analytic_gradient(z, k, negatives, lam, 0.2) - gradient_algebra.autograd_gradient(z, k, negatives, lam, 0.2))
                  .abs().max() / gradient_algebra.autograd_gradient(z, k, negatives, lam, 0.2).abs().max())
            for lam in (1.0, 1.25, 1.5, 1.75, 2.0))
markup.markdown_html(
    f"Largest difference between the formula and autograd, relative to the gradient's largest entry, over "
    f"λ = 1 … 2 (float64): **{worst:.1e}**. Averaged over the paper's λ ~ Beta(2, 2) + 1, the pull is weighed "
    f"**{gradient_algebra.mean_weight_ratio(2.0):.2f}** times as much as the push (E[A/λ]; 1 without FT).")

# %% [markdown]
# ## A concentrated state: does it attract or repel?
#
# Linearise around a concentrated representation: every feature near one direction $m$, queries $q_i = m + d_i$
# and keys $k_i = m + e_i$ with small tangent deviations, and negatives whose weighted deviation is unrelated to
# $d_i$. One gradient step moves $d_i$ by $c\,(A e_i - (A - \lambda) d_i)$, so the spread
# $\mathbb{E}\lvert d\rvert^2$ changes at the rate $2c\,(A\rho - (A - \lambda))\,\mathbb{E}\lvert d\rvert^2$. The
# spread **shrinks** (the features concentrate further) when
#
# $$\rho < 1 - \frac{\lambda}{A}.$$
#
# Without FT the threshold is 0: a concentrated state spreads out as soon as the two views agree at all. With
# FT it rises (0.4 at $\lambda = 1.5$, up to 0.6 at $\lambda = 2$): concentration attracts until the views agree
# well. This is a local statement about a state that is already concentrated, not a model of training. The figure
# at the top of this page checks it without the linearisation: one SGD step, in float64, of the real loss on a
# concentrated state built with a chosen $\rho$ (`ftcl_core.study.gradient_algebra.contraction_rate`; 4 096 unrelated
# negatives, $\tau = 0.2$). Below zero the state contracts; dotted lines mark the predicted thresholds.

# %%
crossings = {lam: diagnosis_readings.zero_crossing(rhos, rate) for lam, rate in rates.items()}
markup.markdown_html("Measured sign changes against the predicted thresholds: " + "; ".join(
    f"λ = {lam:g}: {crossings[lam]:.2f} (predicted {gradient_algebra.attraction_threshold(lam):.2f})" for lam in lams) +
    ". The measured crossings sit a little left of the prediction: the softmax-weighted negatives closest to a "
    "query push it away, a repulsion the linearisation leaves out.")

# %% [markdown]
# ## Where training sits
#
# The recorder keeps, per step, $\rho$ of the batch, the alignment and uniformity of {cite}`wang2020understanding`
# and the effective rank {cite}`roy2007effective` of the features (`ftcl_core.stats.representation_statistics`).
# Below: $\rho$ and {term}`Mean(neg)` of the raw cosines over the first steps of the {term}`calibrated` MoCo pairs, baseline
# (solid) against FT (dashed), seed 0 of each, with the band of thresholds $1 - \lambda/A$ that Beta(2, 2) + 1
# draws (its 5th to 95th percentile).

# %%
early = diagnosis_readings.early_metrics(gradient.first_step_records(ev), seed=0)
if early:
    run_figures.early_training(early, ev.band, steps=diagnosis_readings.EARLY_STEPS)
    plt.show()

# %% [markdown]
# Training without FT raises $\rho$ within a few dozen steps, so a later start meets a state the algebra says
# repels: [when to switch FT on](07g_switch_on.ipynb) tests that.
#
# With FT on from the first step, $\rho$ passes above the band too, in each of the {glue:md}`early_n_ft` FT runs by
# step {glue:md}`early_ft_above_hi` (the earliest at step {glue:md}`early_ft_above_lo`, over every seed), yet the
# images stay crowded: from step {glue:md}`early_from` to {glue:md}`early_steps` their Mean(neg) averages
# {glue:md}`early_ft_neg_lo` to {glue:md}`early_ft_neg_hi`, against {glue:md}`early_base_neg_lo` to {glue:md}`early_base_neg_hi` in the baselines.
# Above the band the algebra says a concentrated state no longer attracts; it does not say how fast the
# concentration built in the first steps undoes itself, and in these runs it has not within the first
# {glue:md}`early_steps` steps.
