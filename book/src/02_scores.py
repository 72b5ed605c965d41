# %% [markdown]
# # Scores on the unit sphere
#
# In this chapter you will learn what a score is, how InfoNCE and its temperature turn scores into a loss, and which
# three statistics of the scores the paper's visualization tool records.
#
# MoCo's encoder maps an image to a 128-d vector that is then L2-normalised, so every feature lies on the
# unit sphere and a *score* is a cosine: $S = z_q\cdot z_k \in [-1, 1]$. For a query $q$ with its
# positive key $k^+$ (another view of the same image) and $K$ negatives from the queue, InfoNCE (eq. 1) is
#
# $$\mathcal{L} = -\log \frac{\exp(S_{q\cdot k^+}/\tau)}{\exp(S_{q\cdot k^+}/\tau) + \sum_{j=1}^{K}\exp(S_{q\cdot k_j^-}/\tau)}.$$
#
# It is a softmax cross-entropy over $K+1$ logits with the positive as the right answer
# (`ftcl_core.losses.info_nce`). The temperature $\tau$ decides how sharply the loss looks at the hardest
# negatives: MoCo v1 uses 0.07, MoCo v2 0.2.
#
# The paper's visualization tool (Sec 3.2, {term}`Supp A`) summarises the $64\times K$ scores of each step with
# three numbers over 64 queries: **{term}`Mean(pos)`**, the mean positive score; **{term}`Mean(neg)`**, per query the mean
# of its $K$ negative scores, averaged; **{term}`Var(neg)`**, per query the variance of its $K$ negative scores,
# averaged (`ftcl_core.stats.score_statistics`). Below they are computed on real features: two views of
# real images from the embedded data, through an encoder that is first random and then trained.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

from ftcl_core import augment as A
from ftcl_core.data import load_data
from ftcl_core.losses import moco_logits
from ftcl_core.methods import build_model
from ftcl_core.pages import plotting as P
from ftcl_core.stats import score_statistics
from ftcl_core.study import experiments as X
from ftcl_core.training import augment_config

exp = X.Experiment.load("experiments/table7_ft_v2.yaml")
cfg = X.resolve(X.base_for(exp, profile), {**exp.settings["v2 baseline"], "seed": 0}, profile)
train_set, _ = load_data(cfg)
aug = augment_config(cfg)
model = build_model(cfg).eval()

# %% [markdown]
# ## The tool, in code
#
# The three statistics, computed on the scores of the first $n$ queries of a step ($n=64$ in Supp A): look at `var_mean`,
# which takes each query's mean and variance over its row of $K$ negatives before they are averaged over the
# queries. The training loop calls it every step, on the plain cosines and on the scores after {term}`FT`.

# %%
from IPython.display import display

display(P.source_code(score_statistics))

# %% [markdown]
# ## Scores of a randomly initialised encoder
#
# Two augmented views of 256 images give 256 positive pairs; the other images' keys serve as negatives.
# Even without training, the positive scores sit above the negative ones, though only just (the printout's means
# differ in the third decimal) and every score is close to one (left). Subtract each view's batch mean before the
# cosine (right) and the difference shows: augmentations keep much of an image's pixels, and a random network maps
# similar inputs to similar outputs.

# %%
gen = torch.Generator().manual_seed(0)
x = train_set.images[:256]
with torch.no_grad():
    q = F.normalize(model.encoder_q(A.augment(x, aug, gen)), dim=1)
    k = F.normalize(model.encoder_q(A.augment(x, aug, gen)), dim=1)
l_pos, _ = moco_logits(q, k, k)
l_neg = (q @ k.T)[~torch.eye(len(q), dtype=torch.bool)].view(len(q), -1)
stats = score_statistics(l_pos, l_neg, n=64)
print(f"Mean(pos) {stats[0]:.3f}   Mean(neg) {stats[1]:.3f}   Var(neg) {stats[2]:.4f}")

qc, kc = F.normalize(q - q.mean(0), dim=1), F.normalize(k - k.mean(0), dim=1)  # each view's batch mean removed
c_pos, _ = moco_logits(qc, kc, kc)
c_neg = (qc @ kc.T)[~torch.eye(len(qc), dtype=torch.bool)].view(len(qc), -1)
fig, axes = plt.subplots(1, 2, figsize=(P.BOOK_WIDTH_IN, 3), layout="constrained")
for ax, (pos, neg), title in zip(axes, ((l_pos, l_neg), (c_pos, c_neg)), ("cosine", "cosine, batch mean removed")):
    ax.hist(neg.flatten().numpy(), bins=80, density=True, alpha=0.6, label="negative scores")
    ax.hist(pos.numpy(), bins=40, density=True, alpha=0.6, label="positive scores")
    ax.set_xlabel(title)
axes[0].set_ylabel("density")
axes[1].legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=9, frameon=False)
plt.show()

# %% tags=["remove-cell"]
from ftcl_core.pages.glue import glue_facts
from ftcl_core.runs import RunDir
from ftcl_core.study import checks
from ftcl_core.study import curves as C

# the trained run the reading compares with: the stored cpu run of chapter 4, whatever profile this page ran with
init = C.init_score_facts(q.numpy(), k.numpy(), RunDir(X.run_dir(exp, "v2 baseline", 0, "cpu", X.STORED)).load_metrics())
glue_facts("init_", init)
checks.expect(C.CHECKS, init, "a random encoder's positives score above its negatives",
              "a random encoder's cosines sit above the collapse level", "the shared direction carries the level",
              "the queue's random keys score near zero", "the trained run ends with a wide gap below the collapse level")

# %% [markdown]
# **High cosines are not a collapse here.** Every score of this random encoder is close to one (Mean(pos)
# {glue:md}`init_pos`, Mean(neg) {glue:md}`init_neg`, as printed above), above the {term}`collapse level` ({glue:md}`init_level`) at
# which chapters 6 and 7 call Mean(neg) a collapse (a collapse of the scores; the paper's own word means a
# {term}`readout` below the random-init encoder's, which chapter 5 tests). Nothing has gone wrong: the features of a
# network that was never trained share one large common direction (its pooled activations come out of ReLUs, so they are all non-negative), and any two images
# point almost the same way. Take that direction away, by subtracting each view's batch mean before the cosine (the
# right panel above), and the positives still agree ({glue:md}`init_centred_pos`) while the negatives do not ({glue:md}`init_centred_neg`).
# That is why the collapse criterion is read on the encoder *being trained*, and on the gap between Mean(pos) and
# Mean(neg) rather than on their level: training starts from a queue of random keys (Mean(neg)
# {glue:md}`init_queue_neg` at the first step of chapter 4's run) and spreads the features within its first epoch,
# and the trained run ends at Mean(pos) {glue:md}`init_end_pos` against Mean(neg) {glue:md}`init_end_neg` (its last
# {glue:md}`init_window` steps). A collapse, in chapters 6 and 7, is Mean(neg) of a run climbing back above the
# collapse level ({glue:md}`init_level`) *during* training, the gap to Mean(pos) gone.

# %% [markdown]
# ## The statistics during a real training run
#
# The stored MoCo v2 run of chapter 4 (trained here if it is missing) recorded the three statistics at
# every step. Over the run, Mean(pos) rises as the encoder becomes invariant to the augmentations, while Mean(neg)
# falls toward zero: the features spread over the sphere. The first epoch runs the other way, as real keys that
# still look alike replace the queue's random ones; chapter 4 reads that start step by step.

# %%
from ftcl_core.runs import RunDir

rec = X.sweep(exp.path, profile, seeds=[0], settings=["v2 baseline"], progress=False)[0]
metrics = RunDir(rec["dir"]).load_metrics()
P.score_statistics({"MoCo v2": metrics})
plt.show()

# %% [markdown]
# ## Temperature
#
# InfoNCE turns scores into softmax probabilities at a temperature $\tau$. A low $\tau$ concentrates the
# softmax on the few highest-scoring negatives (the loss then acts like a hard-negative miner); a high $\tau$
# spreads it over all of them. The random-init scores above are too alike for this to show (they all sit
# near the same value), so the figure uses scores shaped like a *trained* encoder's: the stored run's
# Mean(pos), Mean(neg) and Var(neg) over its last steps (the output says how many), with the negatives of each query drawn from a
# normal distribution of that mean and variance.

# %%
from ftcl_core.study import curves as C

n_last = min(50, len(metrics["loss"]))
last = {c: float(metrics[c][-n_last:].mean()) for c in ("pos_mean", "neg_mean", "neg_var")}
g = torch.Generator().manual_seed(0)
n_neg = cfg.moco.queue_size
t_neg = (last["neg_mean"] + last["neg_var"] ** 0.5 * torch.randn(256, n_neg, generator=g)).clamp(-1, 1)
print(f"from the stored run's last {n_last} steps: Mean(pos) {last['pos_mean']:.3f}, Mean(neg) {last['neg_mean']:.3f}, "
      f"Var(neg) {last['neg_var']:.4f}; {n_neg} negatives per query")
mass = {tau: C.negative_mass_by_rank(t_neg, tau).numpy() for tau in (0.07, 0.2, 0.5, 1.0)}
fig, ax = plt.subplots(figsize=(P.BOOK_WIDTH_IN, 3), layout="constrained")
for tau, cum in mass.items():
    ax.plot(np.arange(1, len(cum) + 1), cum, label=f"τ = {tau}")
ax.set_xscale("log")
ax.set_xlabel("negatives, by rank of their score (hardest first)")
ax.set_ylabel("cumulative share of the\nnegatives' softmax mass")
ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=9, frameon=False)
plt.show()

# %% tags=["remove-cell"]
tau_facts = C.temperature_facts(mass) | {"half": f"{C.half_mass_temperature(t_neg, top=30):.2f}"}
glue_facts("tau_", tau_facts)
checks.expect(C.CHECKS, tau_facts, "a lower temperature gives the hardest negatives more of the mass")

# %% [markdown]
# Read the figure at one rank: at MoCo v1's $\tau = 0.07$ the {glue:md}`tau_top` hardest of the
# {glue:md}`tau_k` negatives carry {glue:md}`tau_top_0_07` % of the negatives' softmax mass, at MoCo v2's
# $\tau = 0.2$ {glue:md}`tau_top_0_2` %, and at $\tau = 1$ {glue:md}`tau_top_1` %. The gradient of InfoNCE pushes
# each negative away in proportion to its softmax probability, so a low temperature trains mostly on the hardest
# negatives.

# %% [markdown]
# ## Exercises
#
# 1. Why can a random encoder's positives score above its negatives at all, when nothing has been learnt? Name the
#    two facts about the network and the augmentations that make it so.
# 2. Find the temperature at which the {glue:md}`tau_top` hardest negatives carry half of the negatives' softmax mass,
#    on the scores of *Temperature*.
#
# :::{admonition} Answers
# :class: dropdown
#
# 1. The augmentations keep much of an image (crops overlap, colours stay close), so the two views' pixels are
#    similar; and a randomly initialised network is still a continuous map, so similar inputs give similar outputs.
#    The scores carry no learnt meaning yet, which is why the batch mean has to be removed to see the difference.
# 2. About $\tau$ = {glue:md}`tau_half` on these scores. `C.negative_mass_by_rank(t_neg, tau)[29]` is the share of
#    the top 30 (counting from zero), and it falls as $\tau$ rises, so bisect over $\tau$ until it reads one half
#    (`C.half_mass_temperature(t_neg, top=30)` does exactly that).
# :::

# %% [markdown]
# (try-it-02)=
# ## Try it
#
# * **The `profile` parameter.** `.venv/bin/papermill book/02_scores.ipynb /tmp/02_scores.ipynb -p profile smoke --cwd
#   book` draws the histogram from the smoke profile's small model and data. Expect the positive scores still above
#   the negative ones, for the reason *Scores of a randomly initialised encoder* gives: a random network maps similar
#   inputs to similar outputs.
# * **A config key, `moco.tau`.** `.venv/bin/python -m ftcl_core train configs/cpu_cal_moco_v1.yaml moco.tau=0.2 --out
#   runs/try-tau` trains MoCo v1 at MoCo v2's temperature, so its loss spreads its softmax over more of the negatives
#   instead of the few hardest. The figure of *Temperature* shows how far, and chapter 8's explorer holds the stored
#   MoCo v1 runs to compare with.
