# %% [markdown]
# # FT: the bound and the transformations
#
# **In this chapter you will learn** why the paper expects its two feature transformations ({term}`FT`) to help; each
# in a few lines of torch; why extrapolation can only lower the positive score (eq. 4), derived with sympy and
# checked on random pairs; and how the two numbers $\alpha$ and $\lambda$ shape the result.
#
# **The paper's case.** At momentum $m = 0.99$ MoCo's positive pairs score lower than at $m = 0.9$, and its encoder
# reads better ({glue:md}`paper_t1_m099` % against {glue:md}`paper_t1_m09` %, the paper's Table 1). Pairs that score
# lower, *hard positives*, ask the encoder to ignore more of what a view changes; FT makes them on purpose by mixing
# features inside the loss, and adds negatives the queue never held. In its Table 7 (a ResNet-50 trained for 200 epochs
# on ImageNet-100)
# MoCo v1 with both reads {glue:md}`paper_t7_both` % against {glue:md}`paper_t7_base` % ({glue:md}`paper_t7_gain`
# points) {cite}`zhu2021improving`.
#
# **Why a harder pair teaches more.** For one query InfoNCE is $L = -\log p$, with $p = e^{s^+/\tau} / \sum_j
# e^{s_j/\tau}$ the softmax share of its positive score $s^+$. Its gradient in that score is
# $\partial L/\partial s^+ = -(1 - p)/\tau$: a pair that already wins by far ($p = 0.95$) pulls with weight $0.05$,
# one that a transformation made harder ($p = 0.5$) with $0.5$, ten times more. That is the paper's case for FT; whether
# it pays at this book's scale is [the next chapter's](learn6_your_moco.ipynb) question.

# %% colab-setup

# %% tags=["parameters"]
import os

# how much this page trains: smoke (seconds), cpu (the book's runs), gpu (ImageNet-100)
profile = os.environ.get("FTCL_PROFILE", "cpu")

# %%
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from ftcl_core import transforms
from ftcl_core.pages import diagrams, explorers
from ftcl_core.pages import learn as learn_figures

# %% tags=["remove-cell"]
# the opening's numbers are the paper's, read from the experiment files (this chapter trains nothing)
from ftcl_core.pages.glue import glue_facts, glue_reading
from ftcl_core.study.chapters import ft as ft_reading

glue_reading(ft_reading.read())

# %% [markdown]
# ## The two transformations, in code
#
# In a MoCo step FT sits between the features and the scores (the paper's Fig 2): the loss scores mixed features,
# while the queue still receives the keys as the encoder made them, the *clean* keys.

# %% tags=["remove-input"]
diagrams.moco_pipeline()
plt.show()

# %% [markdown]
# **Positive extrapolation** (Sec 4.1, eq. 3) mixes a query $z_q$ and its positive key $z_{k^+}$ (the $k$ of the
# code below) *beyond* the segment between them:
#
# $$\hat z_q = \lambda z_q + (1-\lambda) z_{k^+},\quad \hat z_{k^+} = \lambda z_{k^+} + (1-\lambda) z_q,\quad
#   \lambda \sim \mathrm{Beta}(\alpha_{ex},\alpha_{ex})+1 \in (1, 2). \tag{3}$$
#
# With $\lambda > 1$ each vector moves away from the other, so the pair scores lower: a harder positive. The
# {term}`+pos` of the paper's tables. One $\lambda$ serves the whole batch, drawn anew each step, as in the paper. **Negative interpolation** (Sec 4.2, the {term}`+neg`) mixes each key of the
# queue with another one, drawn by a random permutation $\pi$, *inside* their segment:
#
# $$\hat Z_{neg} = \lambda_{in} Z_{neg} + (1-\lambda_{in}) Z_{\pi},\qquad
#   \lambda_{in}\sim\mathrm{Beta}(\alpha_{in},\alpha_{in}) \in (0, 1). \tag{5}$$
#
# Each step gets $K$ new negatives, none of them an image. The paper calls them more diverse, but a mix scores
# $\lambda_{in}\, q\cdot z_i + (1-\lambda_{in})\, q\cdot z_{\pi(i)}$, between its two sources, so the mixed scores
# spread less. Both fit in a line each:

# %% tags=["show-input", "teaching"]
def my_extrapolate(z_q: torch.Tensor, z_k: torch.Tensor, lam):
    """Positive extrapolation, eq. 3. z_q, z_k: N x C unit features; lam in (1, 2)."""
    return lam * z_q + (1 - lam) * z_k, lam * z_k + (1 - lam) * z_q


def my_interpolate(queue: torch.Tensor, lam, partners: torch.Tensor) -> torch.Tensor:
    """Negative interpolation, Sec 4.2 (eq. 5). queue: K x C keys; lam in (0, 1);
    partners: a permutation of K."""
    return lam * queue + (1 - lam) * queue[partners]


# %% tags=["hide-input"]
# Mine against the library's, on eight pairs and a queue
gen = torch.Generator().manual_seed(0)
z_q, z_k = transforms.unit_pairs(8, 128, gen)
queue = F.normalize(torch.randn(4096, 128, generator=gen, dtype=torch.float64), dim=1)
# "step": one λ for the whole batch, new each step (the paper's); shift=1: λ in (1, 2)
lam_ex = transforms.sample_lambda(alpha=2.0, granularity="step", n=8, dim=128,
                                  gen=gen, shift=1.0).double()
lam_in = transforms.sample_lambda(alpha=1.6, granularity="step", n=4096, dim=128,
                                  gen=gen).double()  # in (0, 1)
partners = transforms.sample_permutation(4096, gen)
mine = my_extrapolate(z_q, z_k, lam_ex)
library = transforms.extrapolate_positive(z_q, z_k, lam_ex)
print("extrapolation, largest difference from the library's:",
      float((mine[0] - library[0]).abs().max()))
mixed = my_interpolate(queue, lam_in, partners)
library_mixed = transforms.interpolate_negatives(queue, lam_in, partners)
print("interpolation, largest difference from the library's:",
      float((mixed - library_mixed).abs().max()))
before, order = (z_q * z_k).sum(1).sort(descending=True)      # the 8 pairs' scores S
after = (mine[0] * mine[1]).sum(1)[order]                       # and after eq. 3
print(f"λ_ex = {float(lam_ex):.2f}; the pairs' scores, highest first")
print("  before:", " ".join(f"{float(v):6.2f}" for v in before))
print("  after: ", " ".join(f"{float(v):6.2f}" for v in after))
lengths = mixed.norm(dim=1)
print(f"λ_in = {float(lam_in):.2f}: the new negatives' length "
      f"{float(lengths.mean()):.3f} on average, {float(lengths.max()):.3f} at most")
spread = float((z_q @ mixed.T).var() / (z_q @ queue.T).var())  # the negatives' scores
expected = float(lam_in**2 + (1 - lam_in) ** 2)  # for keys that are independent
print(f"their scores' variance: {spread:.2f} of the raw queue's "
      f"(λ² + (1 - λ)² = {expected:.2f})")

# %% tags=["remove-cell"]
assert torch.allclose(mine[0], library[0]) and torch.allclose(mine[1], library[1])  # the taught FT is the library's
assert torch.allclose(mixed, transforms.interpolate_negatives(queue, lam_in, partners))
assert spread < 1 and abs(spread - expected) < 0.05  # "the mixed scores spread less", as the formula says
glue_facts("toy_", {"spread": f"{spread:.2f}"})

# %% [markdown]
# Every pair's score fell, the less the higher it was. The mixed vectors are longer than one (the first exercise), so
# these scores are dot products, not cosines, and can fall below $-1$. No new negative is longer than one: each lies
# on the chord between two keys, inside the sphere. Their scores spread less: {glue:md}`toy_spread` of the raw
# queue's variance, close to $\lambda^2 + (1-\lambda)^2$ for keys that are independent, and
# {glue:md}`mix_plain_spread` [over this book's whole runs](07i_negatives.ipynb). The paper's Fig 6 draws both:

# %% tags=["hide-input"]
diagrams.ft_geometry()
plt.show()

# %% [markdown]
# ## The bound (eq. 4)
#
# How much lower does an extrapolated pair score? Expand $\hat z_q\cdot\hat z_{k^+}$ term by term, with
# $z_q\cdot z_q = z_k\cdot z_k = 1$ and $z_q\cdot z_k = S$:
#
# $$\hat z_q\cdot\hat z_{k^+} = \lambda^2 S + \lambda(1-\lambda) + (1-\lambda)\lambda + (1-\lambda)^2 S
#   = \bigl(1 - 2\lambda(1-\lambda)\bigr) S + 2\lambda(1-\lambda),$$
#
# since $\lambda^2 + (1-\lambda)^2 = 1 - 2\lambda(1-\lambda)$. Gathering the terms in $\lambda(1-\lambda)$:
#
# $$\hat S = S + 2\lambda(1-\lambda)(1-S). \tag{4}$$
#
# For $\lambda \ge 1$ the factor $\lambda(1-\lambda)$ is at most zero and $1-S$ is at least zero, so $\hat S \le S$:
# the pair can only get harder. At $\lambda = 2$ it is $5S-4$, the bottom of the range $[5S-4,\ S]$. A worked case: a
# positive pair at $S = 0.87$, mixed with $\lambda = 1.5$, scores $0.87 + 2\cdot 1.5\cdot(-0.5)\cdot 0.13 = 0.675$;
# sympy checks each step:

# %% tags=["hide-input"]
import sympy as sp
from IPython.display import Math, display

lam, S = sp.symbols("lambda S", real=True)
qq, kk, qk = 1, 1, S  # unit vectors
# (l q + (1-l) k) . (l k + (1-l) q), expanded bilinearly
expr = (
    lam * lam * qk + lam * (1 - lam) * qq + (1 - lam) * lam * kk + (1 - lam) ** 2 * qk
)
closed = S + 2 * lam * (1 - lam) * (1 - S)  # eq. 4
steps = {  # the left side as written; the right, sympy's own result
    r"\hat S - \big(S + 2\lambda(1-\lambda)(1-S)\big)": sp.simplify(expr - closed),
    r"\hat S - S": sp.factor(closed - S),  # <= 0 when lambda >= 1, since 1 - S >= 0
    r"\hat S\,|_{\lambda=2}": sp.expand(closed.subs(lam, 2)),
    r"d\hat S / d\lambda": sp.factor(sp.diff(closed, lam)),  # < 0 on (1, 2]
}
shown = [f"{left} = {sp.latex(right)}" for left, right in steps.items()]
pairs = [r"\qquad ".join(shown[i:i + 2]) for i in range(0, len(shown), 2)]  # two a line
display(Math(r"\begin{gathered}" + r" \\ ".join(pairs) + r"\end{gathered}"))
assert sp.simplify(expr - closed) == 0  # eq. 4 is the expansion

# %% [markdown]
# ## Checked on random pairs
#
# Pairs of unit vectors in 128 dimensions whose scores cover $[-1, 1]$, one $\lambda\sim\mathrm{Beta}(2,2)+1$ each,
# extrapolated with the library and measured (the code is folded):

# %% tags=["hide-input"]
n = 10_000 if profile == "smoke" else 100_000
gen = torch.Generator().manual_seed(0)
zq, zk = transforms.unit_pairs(n, 128, gen)
s = (zq * zk).sum(1)
# one draw per pair
lam_ex = transforms.sample_lambda(2.0, "sample", n, 128, gen, shift=1.0).double()
q2, k2 = transforms.extrapolate_positive(zq, zk, lam_ex)
s_ex = (q2 * k2).sum(1)
err = float(
    (s_ex - transforms.transformed_positive_score(s, lam_ex.squeeze(1))).abs().max()
)
lo, hi = transforms.score_range(s)
inside = bool(((s_ex >= lo - 1e-12) & (s_ex <= hi + 1e-12)).all())
print(f"{n} pairs; largest |measured - eq. 4| = {err:.1e}; "
      f"every score inside [5S - 4, S]: {inside}")
# λ in (0, 1)
q3, k3 = transforms.extrapolate_positive(
    zq, zk, transforms.sample_lambda(2.0, "sample", n, 128, gen).double()
)
# Sec 4.3: one λ per dimension, 1 x 128, shared by every pair of the step
lam_dim = transforms.sample_lambda(2.0, "dim", n, 128, gen, shift=1.0).double()
q4, k4 = transforms.extrapolate_positive(zq, zk, lam_dim)
s_dim = (q4 * k4).sum(1)
at_mean = transforms.transformed_positive_score(s, lam_dim.mean())  # eq. 4, one λ
off_eq4 = float((s_dim - at_mean).abs().max())
inside_dim = bool(((s_dim >= lo - 1e-12) & (s_dim <= hi + 1e-12)).all())
learn_figures.bound_check_figure(s, s_ex, (q3 * k3).sum(1), s_dim)
plt.show()

# %% tags=["remove-cell"]
assert err < 1e-10 and inside, (err, inside)
# "no longer on eq. 4, but inside its range": the per-dimension scores
assert inside_dim and off_eq4 > 0.01, (inside_dim, off_eq4)
assert torch.allclose(s_dim, transforms.per_dimension_positive_score(zq, zk, lam_dim))
glue_facts("check_", {"n": f"{n:,}".replace(",", " ")})

# %% [markdown]
# Every one of the {glue:md}`check_n` measured scores lies on eq. 4 and inside its range (left). The same formula
# with $\lambda$ in $(0, 1)$ is *interpolation* of the positive pair, and it raises every score (right): an easier
# pair, which is why the paper's Table 3 finds that it hurts.
#
# **One $\lambda$ per dimension.** The paper's Sec 4.3 also mixes with one $\lambda$ a dimension,
# $\hat z_q = \lambda\odot z_q + (1-\lambda)\odot z_{k^+}$ (its Table 7: MoCo v1 with both, {glue:md}`paper_t7_dim` %
# against {glue:md}`paper_t7_both` % with one $\lambda$). In code only the shape of $\lambda$ changes, to $1\times C$
# (`granularity="dim"`): a pair's score strays from eq. 4 but never leaves its range (orange, left; exercise 4).
#
# ## Explorer: α, λ and S
#
# Top: $\alpha$ sets the Beta density of $\lambda$ and, through eq. 4, the spread of $\hat S$; $\alpha>1$ gathers the
# draws near $1.5$, the paper's reading of why $\alpha_{ex}=2$ works best (Table 2). Below: $\hat S$ against $S$ for one
# $\lambda$, harder below the diagonal ($\lambda>1$); dashed grey, a $\lambda<1$ FT never draws (an easier pair).

# %% tags=["remove-input"]
explorers.plotly_html(explorers.bound_explorer(), include_js=True)

# %% tags=["remove-input"]
explorers.plotly_html(explorers.lambda_explorer(), include_js=False)

# %% tags=["remove-input"]
import ipywidgets as widgets


def explore(alpha=2.0, lam=1.5, S=0.6):
    learn_figures.bound_panels(alpha, lam, S)
    plt.show()


explorers.live_widget(lambda: widgets.interactive(explore, alpha=(0.1, 5.0, 0.1), lam=(0.0, 2.0, 0.05), S=(-1.0, 1.0, 0.05)))

# %% [markdown]
# ## Summary
#
# - Positive extrapolation (eq. 3, $\lambda\in(1,2)$) pushes a query and its key apart: by eq. 4 the pair scores
#   $\hat S = S + 2\lambda(1-\lambda)(1-S) \le S$, at worst $5S-4$: the closer $S$ is to one, the less it falls.
# - Negative interpolation (eq. 5, $\lambda\in(0,1)$) makes new negatives on the chords between keys of the queue.
# - $\alpha$ sets how far the draws of $\lambda$ go: the paper's $\alpha_{ex} = 2$ gathers them around $1.5$.
#
# ## Exercises
#
# 1. Show that $\|\hat z_q\|^2 = 1 + 2\lambda(\lambda-1)(1-S)$. When is the extrapolated query longer than one?
# 2. The run of [Reading a run](learn3_reading.ipynb) ends with positive pairs near $S = 0.87$. With $\alpha_{ex} = 2$, predict
#    {term}`Mean(pos)` after extrapolation before you compute it.
# 3. Two keys of the queue at cosine $c$ are interpolated with $\lambda_{in}$. How long is the new negative?
# 4. With one $\lambda_d \in (1, 2)$ per dimension, show that a pair still scores within $[5S-4, S]$. Hint: expand
#    one dimension's product $(\lambda_d q_d + (1-\lambda_d) k_d)(\lambda_d k_d + (1-\lambda_d) q_d)$.
#
# The solutions are folded below, in one cell that runs as written.

# %% tags=["hide-cell"]
# Solution 1: |l q + (1-l) k|^2 = l^2 + (1-l)^2 + 2 l (1-l) S = 1 - 2 l (1-l)(1-S):
# longer than one whenever l > 1 and S < 1, which is why the extrapolated query also
# scales every negative it meets.
norm2 = sp.expand(lam**2 + (1 - lam) ** 2 + 2 * lam * (1 - lam) * S)
print(sp.simplify(norm2 - (1 + 2 * lam * (lam - 1) * (1 - S))))  # 0

# Solution 2: with lambda = 1 + u, u ~ Beta(2, 2): E[lambda (lambda - 1)] = E[u] +
# E[u^2] = 1/2 + 3/10 = 4/5, so by eq. 4 E[S'] = S - 2 (4/5)(1 - S) = 0.87 - 1.6 * 0.13,
# about 0.66.
draws = transforms.sample_lambda(
    2.0, "sample", 100_000, 1, torch.Generator().manual_seed(0), shift=1.0
)
sampled = float(transforms.transformed_positive_score(0.87, draws).mean())
print(f"predicted {0.87 - 1.6 * 0.13:.3f}, sampled {sampled:.3f}")

# Solution 3: its squared length is l^2 + (1-l)^2 + 2 l (1-l) c = 1 - 2 l (1-l)(1-c): at
# most one, so the new negative lies inside the sphere, shortest at l = 1/2 between two
# keys far apart.
c = sp.symbols("c", real=True)
print(sp.factor(sp.expand(lam**2 + (1 - lam) ** 2 + 2 * lam * (1 - lam) * c) - 1))

# Solution 4: one dimension's product is q k + l (1 - l)(q - k)^2, and l (1 - l) lies in
# [-2, 0] for l in [1, 2]. Summed, S' = S + sum_d l_d (1 - l_d)(q_d - k_d)^2, and the
# squares sum to |q - k|^2 = 2 (1 - S): S' lies between S - 4 (1 - S) = 5S - 4 and S.
q_d, k_d = sp.symbols("q_d k_d", real=True)
one_dim = (lam * q_d + (1 - lam) * k_d) * (lam * k_d + (1 - lam) * q_d)
print(sp.factor(sp.expand(one_dim - q_d * k_d)))  # -l (l - 1)(q_d - k_d)^2
