# %% [markdown]
# # The extrapolation score bound
#
# In this chapter you will learn why positive extrapolation lowers the positive score (eq. 4), how to check it by
# algebra and on random vectors, and how $\alpha$ and $\lambda$ shape the transformed score.
#
# Positive extrapolation (eq. 3) mixes a query and its key beyond their segment:
#
# $$\hat z_q = \lambda z_q + (1-\lambda) z_{k^+},\qquad \hat z_{k^+} = \lambda z_{k^+} + (1-\lambda) z_q,\qquad \lambda\sim\mathrm{Beta}(\alpha,\alpha)+1 . \tag{3}$$
#
# Its companion for the negatives, negative interpolation (eq. 5), mixes each entry of the memory queue with another
# entry drawn by a random permutation, *inside* their segment:
#
# $$\hat Z_{neg} = \lambda_{in} Z_{neg} + (1-\lambda_{in}) Z_{perm},\qquad \lambda_{in}\sim\mathrm{Beta}(\alpha_{in},\alpha_{in})\in(0,1). \tag{5}$$
#
# The figure below draws both in the plane, as the paper's Fig 6 does (`ftcl_core.pages.plotting.ft_geometry`).

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %% tags=["hide-input"]
import matplotlib.pyplot as plt

from ftcl_core.pages import plotting as P

P.ft_geometry()
plt.show()

# %% [markdown]
# The paper's claim (eq. 4): for unit vectors the new score is
# $\hat S = S + 2\lambda(1-\lambda)(1-S) \le S$ for $\lambda\ge 1$, and with $\lambda\in[1,2]$ it lies in
# $[-4+5S,\ S]$. Extrapolation makes positives *harder*; interpolation ($\lambda\in(0,1)$) makes them
# easier. This chapter derives it, checks it on random vectors, and works out what re-normalisation and
# dimension-level mixing change, which the paper states without deriving.

# %% [markdown]
# ## Derivation
#
# Expand $\hat z_q\cdot\hat z_{k^+}$ term by term, with $z_q\cdot z_q = z_k\cdot z_k = 1$ and $z_q\cdot z_k = S$:
#
# $$\hat z_q\cdot\hat z_{k^+} = \lambda^2 S + \lambda(1-\lambda) + (1-\lambda)\lambda + (1-\lambda)^2 S
#   = \bigl(1 - 2\lambda(1-\lambda)\bigr) S + 2\lambda(1-\lambda),$$
#
# since $\lambda^2 + (1-\lambda)^2 = 1 - 2\lambda(1-\lambda)$. Gathering the terms in $\lambda(1-\lambda)$:
#
# $$\hat S = S + 2\lambda(1-\lambda)(1-S). \tag{4}$$
#
# For $\lambda \ge 1$ the factor $\lambda(1-\lambda)$ is at most zero and $1-S$ is at least zero, so $\hat S \le S$;
# at $\lambda = 2$ it is $5S-4$, the bottom of the range. A worked case: a positive pair at $S = 0.87$, mixed with
# $\lambda = 1.5$, scores $0.87 + 2\cdot 1.5\cdot(-0.5)\cdot 0.13 = 0.675$. The cell below has sympy check each step.

# %%
import sympy as sp

lam, S = sp.symbols("lambda S", real=True)
qq, kk, qk = 1, 1, S  # unit vectors
# (l q + (1-l) k) . (l k + (1-l) q), expanded bilinearly
expr = lam * lam * qk + lam * (1 - lam) * qq + (1 - lam) * lam * kk + (1 - lam) ** 2 * qk
closed = S + 2 * lam * (1 - lam) * (1 - S)
print("Ŝ =", sp.simplify(expr))
print("Ŝ - (S + 2 l (1 - l)(1 - S)) =", sp.simplify(expr - closed))
drop = sp.factor(closed - S)
print("Ŝ - S =", drop, " -> <= 0 when l >= 1 since 1 - S >= 0")
print("Ŝ at l = 1:", sp.simplify(closed.subs(lam, 1)), "  at l = 2:", sp.expand(closed.subs(lam, 2)))
print("d Ŝ/d l =", sp.factor(sp.diff(closed, lam)), " -> negative on (1, 2]: Ŝ falls monotonically from S to 5S - 4")

# %% [markdown]
# The family of lines $\hat S(S)$ for several $\lambda$ (`ftcl_core.pages.plotting.score_bound`): for
# $\lambda<1$ (dashed) every line lies above $\lambda = 1$ (the diagonal, no change), for $\lambda\in[1,2]$ inside the
# shaded range. On the left, all of $S$: at $S=-1$ and $\lambda = 2$ the score reaches $-9$, far below $-1$, because
# the mixed vectors are longer than one (below). On the right, the scores a trained encoder gives its positive
# pairs: the nearer $S$ is to one, the less extrapolation can lower it, since the drop is proportional to $1-S$.

# %%
import matplotlib.pyplot as plt

from ftcl_core.pages import plotting as P

P.score_bound()
plt.show()

# %% [markdown]
# ## Numerical check on random unit vectors
#
# Random pairs in 128 dimensions (the output says how many), one $\lambda\sim\mathrm{Beta}(2,2)+1$ each, transformed with
# `ftcl_core.transforms.extrapolate_positive`: every measured score matches eq. 4 and lies in the range.
# Random pairs in 128-d are nearly orthogonal, so we also rotate the keys toward the queries to cover
# all of $S\in[-1,1]$.

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

from ftcl_core import transforms as T
from ftcl_core.pages import plotting as P

n = 10_000 if profile == "smoke" else 100_000
gen = torch.Generator().manual_seed(0)
zq, zk = T.unit_pairs(n, 128, gen)  # pairs whose cosines cover [-1, 1]
s = (zq * zk).sum(1)
lam_ex = T.sample_lambda(2.0, "sample", n, 128, gen, shift=1.0).double()
q2, k2 = T.extrapolate_positive(zq, zk, lam_ex)
s2 = (q2 * k2).sum(1)
err = (s2 - T.transformed_positive_score(s, lam_ex.squeeze(1))).abs().max()
lo, hi = T.score_range(s)
print(f"{n} pairs; max |measured - eq. 4| = {err:.2e}; inside [-4+5S, S]: {bool(((s2 >= lo - 1e-12) & (s2 <= hi + 1e-12)).all())}")

fig, ax = plt.subplots(1, 2, figsize=(P.BOOK_WIDTH_IN, 4.0), layout="constrained")
sel = slice(0, 3000)
ax[0].scatter(s[sel], s2[sel], s=2, alpha=0.4, label="measured (λ ~ Beta(2,2)+1)")
grid = np.linspace(-1, 1, 100)
ax[0].plot(grid, grid, "k-", lw=1, label="S (upper bound)")
ax[0].plot(grid, -4 + 5 * grid, "k--", lw=1, label="5S - 4 (lower bound)")
ax[0].set_xlabel("S")
ax[0].set_ylabel("Ŝ after extrapolation")
ax[0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=9, frameon=False)
lam_in = T.sample_lambda(2.0, "sample", n, 128, gen).double()
q3, k3 = T.extrapolate_positive(zq, zk, lam_in)
ax[1].scatter(s[sel], (q3 * k3).sum(1)[sel], s=2, alpha=0.4, color="darkorange", label="interpolation, λ ~ Beta(2,2)")
ax[1].plot(grid, grid, "k-", lw=1, label="S")
ax[1].set_xlabel("S")
ax[1].set_ylabel("Ŝ after interpolation")
ax[1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=9, frameon=False)
plt.show()

# %% [markdown]
# Interpolation raises every score (right): the pair becomes easier, which is why the paper's Table 3
# finds it hurts. Note that the mixed vectors are no longer unit vectors: $\|\hat z_q\|^2 = \lambda^2 +
# (1-\lambda)^2 + 2\lambda(1-\lambda)S$, which exceeds 1 for $\lambda>1$ and $S<1$. The score $\hat S$ is
# therefore not a cosine any more.
#
# ## What re-normalisation and dimension-level mixing change
#
# {term}`Supp F` re-projects the transformed features onto the sphere; Sec 4.3 draws one $\lambda$ per
# dimension. The paper gives neither a closed form; both follow from the same expansion.
#
# **Re-normalised.** With $c = 2\lambda(\lambda-1)(1-S) \ge 0$, eq. 4 reads $\hat S = S - c$, and the same expansion
# gives $\|\hat z_q\|^2 = \|\hat z_{k^+}\|^2 = 1 + c$. The cosine of the mixed pair is therefore
#
# $$\cos(\hat z_q, \hat z_{k^+}) = \frac{S - c}{1 + c} \le S \quad\text{since}\quad S - c \le S(1+c)
#   \iff c\,(1+S) \ge 0 .$$
#
# Every pair is still at least as hard. Its drop is $c(1+S)/(1+c)$ instead of $c$: smaller wherever $c > S$, which
# covers the pairs whose raw score fell below zero (`ftcl_core.transforms.renormalized_positive_score`).
#
# **One $\lambda$ per dimension.** Expanding dimension by dimension,
#
# $$\hat S = S + \sum_d \lambda_d(1-\lambda_d)\,(z_{q,d} - z_{k,d})^2 ,$$
#
# and every term is at most zero when every $\lambda_d \ge 1$: this pair, too, is at least as hard, pair by pair. With
# one $\lambda$ it is eq. 4 again, since $\sum_d (z_{q,d}-z_{k,d})^2 = 2(1-S)$
# (`ftcl_core.transforms.per_dimension_positive_score`). Re-normalised per dimension, the two norms differ and no
# closed form is derived here: the table measures it. The cell checks both closed forms on the same pairs and counts
# the pairs that end at most as high as they started (share $S \le S_0$).

# %%
rows = []
def describe(name, a, b):
    sc = (a * b).sum(1)
    rows.append((name, float(sc.mean()), float((sc <= s + 1e-12).float().mean()), float((sc - s).mean())))

describe("no FT", zq, zk)
describe("extrapolation, one λ per pair", q2, k2)
describe("extrapolation + re-normalisation", T.renormalize(q2), T.renormalize(k2))
lam_dim = T.sample_lambda(2.0, "dim", n, 128, gen, shift=1.0).double()
qd, kd = T.extrapolate_positive(zq, zk, lam_dim)
describe("extrapolation, one λ per dimension", qd, kd)
describe("per dimension + re-normalisation", T.renormalize(qd), T.renormalize(kd))
print(f"{'transformation':40s} {'mean S':>8s} {'share S<=S0':>12s} {'mean change':>12s}")
for name, m, share, d in rows:
    print(f"{name:40s} {m:8.3f} {share:12.3f} {d:12.3f}")
renorm = (T.renormalize(q2) * T.renormalize(k2)).sum(1)
print(f"max |measured - closed form|: re-normalised {(renorm - T.renormalized_positive_score(s, lam_ex.squeeze(1))).abs().max():.1e}, "
      f"per dimension {((qd * kd).sum(1) - T.per_dimension_positive_score(zq, zk, lam_dim)).abs().max():.1e}")
trained = 0.87  # a trained encoder's positive score (chapter 2's trained run ends near it)
raw_t, ren_t = (float(f(trained, lam_ex.squeeze(1)).mean())
                for f in (T.transformed_positive_score, T.renormalized_positive_score))
print(f"positives at S = {trained}: mean score {raw_t:.3f} raw, {ren_t:.3f} re-normalised")

# %% [markdown]
# Re-normalisation keeps every pair at least as hard. On these test pairs, whose $S$ spreads over $[-1, 1]$, it
# shrinks the mean drop a great deal: wherever $c > S$, which is where the raw score falls below zero (as far as
# $-9$), re-normalising shrinks the drop and brings the score back into $[-1, 1]$. A trained encoder's positives sit
# near $S = 0.87$, where $c \le 4(1-S) < S$: there the re-normalised drop $c(1+S)/(1+c)$ is *larger* than $c$, and
# re-normalising makes the positives harder still (the last line of the output). One $\lambda$ per dimension lowers the score about as much as one per pair, and keeps every pair at
# least as hard, as the algebra says; re-normalised, it behaves like the re-normalised per-pair mix on these pairs.
#
# %% tags=["remove-cell"]
# the sentences above, held to the table: every FT row keeps every pair at least as hard; re-normalising shrinks the
# mean drop; per dimension lowers the score about as much as per pair (within a fifth), with or without re-normalising
table = {name: (mean, share, change) for name, mean, share, change in rows}
assert all(share == 1.0 for name, (_, share, _) in table.items() if name != "no FT"), table
(_, _, raw), (_, _, ren) = table["extrapolation, one λ per pair"], table["extrapolation + re-normalisation"]
(_, _, dim), (_, _, dim_ren) = table["extrapolation, one λ per dimension"], table["per dimension + re-normalisation"]
assert ren > raw / 2 and abs(dim - raw) < abs(raw) / 5 and abs(dim_ren - ren) < abs(ren) / 5, table
assert ren_t < raw_t, (raw_t, ren_t)  # near S = 0.87 re-normalising lowers the positive score further

# %% [markdown]
# ## Hard negatives (Supp G.2)
#
# Mixing the query into each negative, $z^{hard} = \lambda z_q + (1-\lambda) z_{k^-}$ with
# $\lambda\in(0,1)$, gives $z_q\cdot z^{hard} = \lambda + (1-\lambda) S_{q\cdot k^-} \ge S_{q\cdot k^-}$:
# every negative becomes harder. `ftcl_core.transforms.hard_negative_logits` computes these scores
# without building the $N\times K\times D$ tensor of per-query queues.

# %%
queue = F.normalize(torch.randn(4096, 128, generator=gen, dtype=torch.float64), dim=1)
lam_h = T.sample_beta(2.0, 1.0, (), gen).double()
hard = T.hard_negative_logits(zq[:64], queue, lam_h)
plain = zq[:64] @ queue.T
print(f"λ = {float(lam_h):.3f}: mean negative score {plain.mean():.4f} -> {hard.mean():.4f}; "
      f"every score raised: {bool((hard >= plain - 1e-12).all())}; "
      f"identity l + (1-l) S holds: {bool(torch.allclose(hard, lam_h + (1 - lam_h) * plain))}")

# %% [markdown]
# ## Explorer: α, λ and S
#
# Left slider: $\alpha$ sets the Beta density of $\lambda$ and, through eq. 4, the distribution of
# the transformed score $\hat S$ for several starting scores $S$. Small $\alpha$ (U-shaped) puts most draws
# near $\lambda=1$ (no change) or $\lambda=2$ (the extreme $5S-4$); $\alpha>1$ concentrates them around
# $1.5$, the paper's explanation for why $\alpha_{ex}=2$ works best (Table 2). Second figure: $\hat S$
# against $S$ for one $\lambda$; below 1 the curve lies above the diagonal (interpolation), above 1
# below it. Both respond in the static page; in a live kernel the ipywidgets version below drives all
# three at once.

# %%
P.plotly_html(P.bound_explorer(), include_js=True)

# %%
P.plotly_html(P.lambda_explorer(), include_js=False)

# %%
import ipywidgets as widgets


def explore(alpha=2.0, lam=1.5, S=0.6):
    fig, ax = plt.subplots(1, 2, figsize=(P.BOOK_WIDTH_IN, 3.4), layout="constrained")
    u = np.linspace(0.001, 0.999, 300)
    ax[0].plot(1 + u, P.beta_density(u, alpha))
    ax[0].axvline(lam, color="crimson")
    ax[0].set_title(f"λ ~ Beta({alpha}, {alpha}) + 1")
    grid = np.linspace(-4, 1, 500)
    ax[1].plot(grid, P.transformed_score_density(S, alpha, grid))
    ax[1].axvline(T.transformed_positive_score(S, lam), color="crimson", label=f"Ŝ at λ={lam}")
    ax[1].axvspan(*T.score_range(S), alpha=0.1)
    ax[1].set_title(f"Ŝ for S = {S}")
    ax[1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=9, frameon=False)
    plt.show()


P.live_widget(lambda: widgets.interactive(explore, alpha=(0.1, 5.0, 0.1), lam=(0.0, 2.0, 0.05), S=(-1.0, 1.0, 0.05)))

# %% [markdown]
# ## Exercises
#
# 1. Set $\lambda = 2$ in eq. 4 and show that $\hat S = 5S - 4$. Then show that $\|\hat z_q\|^2 =
#    1 + 2\lambda(\lambda-1)(1-S)$, and say when the extrapolated query is longer than one.
# 2. A trained encoder's positive pairs score about $S = 0.87$ (chapter 2's trained run ends near there). With
#    $\alpha_{ex} = 2$, predict {term}`Mean(pos)` after extrapolation before you compute it.
# 3. Write eq. 5 in one line of torch for a queue `Z` of shape $K \times D$, a permutation `perm` and a number `lam`,
#    and check it against `ftcl_core.transforms.interpolate_negatives`. How long is an interpolated negative?
#
# :::{admonition} Answers
# :class: dropdown
#
# 1. $\hat S = S + 2\cdot 2\cdot(1-2)(1-S) = S - 4(1-S) = 5S - 4$. Expanding
#    $\|\lambda z_q + (1-\lambda) z_k\|^2 = \lambda^2 + (1-\lambda)^2 + 2\lambda(1-\lambda)S
#    = 1 - 2\lambda(1-\lambda)(1-S)$, which is $1 + 2\lambda(\lambda-1)(1-S)$: longer than one whenever
#    $\lambda > 1$ and $S < 1$.
# 2. Write $\lambda = 1 + u$ with $u \sim \mathrm{Beta}(2, 2)$: $\lambda(\lambda - 1) = u + u^2$, and
#    $E[u] = 1/2$, $E[u^2] = \mathrm{Var}(u) + E[u]^2 = 1/20 + 1/4 = 3/10$, so $E[\lambda(\lambda-1)] = 4/5$. By eq. 4,
#    $E[\hat S] = S - 2\cdot\tfrac45(1-S) = 0.87 - 1.6 \cdot 0.13 \approx 0.66$. Check it:
#    `T.transformed_positive_score(0.87, T.sample_lambda(2.0, "sample", 100_000, 1, torch.Generator().manual_seed(0),
#    shift=1.0)).mean()`.
# 3. `lam * Z + (1 - lam) * Z[perm]`, and `torch.allclose` with `T.interpolate_negatives(Z, lam, perm)` holds. Its
#    squared length is $\lambda^2 + (1-\lambda)^2 + 2\lambda(1-\lambda)c = 1 - 2\lambda(1-\lambda)(1-c)$ for two
#    entries of cosine $c$: at most one, so the new negative lies inside the sphere (the right panel of the first
#    figure).
# :::

# %% [markdown]
# (try-it-03)=
# ## Try it
#
# * **The α slider** of *Explorer: α, λ and S*: below one, the draws of $\lambda$ pile up at the two ends (no change,
#   and the extreme $5S-4$); above one they gather around $\lambda=1.5$. Whether that makes $\alpha_{ex}=2$ the best
#   choice in training is Table 2, drawn in chapter 6's *The other tables as figures*, with its verdict in chapter 9's
#   *Verdicts by table*.
# * **The λ slider** of the second figure: below one the transformed score lies above $S$, so interpolation makes the
#   pair easier (the right panel of *Numerical check on random unit vectors*). Table 3 in chapter 6 tests what that
#   does to training, and chapter 9 gives its verdict.
# * **The `profile` parameter.** `.venv/bin/papermill book/03_score_bound.ipynb /tmp/03_score_bound.ipynb -p profile
#   smoke --cwd book` runs the numerical check on fewer pairs. Expect the same outcome as in *Numerical check on
#   random unit vectors*: every measured score on eq. 4 and inside its range.
