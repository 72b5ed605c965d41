# %% [markdown]
# # Reading a run
#
# **In this chapter you will learn** how to read a MoCo run with the paper's own tool: three statistics of the scores,
# recorded at every step, and the gradient landscape (every layer's gradient norm, epoch by epoch); and how a
# *collapse* would show, and what only looks like one. The next chapter reads the momentum of MoCo's key encoder with
# the same tool.
#
# A loss says little on its own: its value moves with the size of the queue and the temperature. The paper reads
# the scores instead, the cosines that the loss turns into a softmax. The run we read is {term}`MoCo v2`, the previous chapter's MoCo with an MLP head, stronger
# augmentations and a temperature of 0.2, trained for a few minutes on the drawn shapes and stored with the book.

# %% colab-setup

# %% tags=["parameters"]
import os

# how much this page trains: smoke (seconds), cpu (the book's runs), gpu (ImageNet-100)
profile = os.environ.get("FTCL_PROFILE", "cpu")

# %%
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from IPython.display import display

from ftcl_core import augment
from ftcl_core.data import load_data
from ftcl_core.methods import build_model
from ftcl_core.pages import learn as learn_figures
from ftcl_core.pages import markup, run_figures
from ftcl_core.pages.glue import glue_reading
from ftcl_core.runs import RunDir
from ftcl_core.stats import score_statistics
from ftcl_core.study import curves, store, sweeps
from ftcl_core.study.chapters import reading
from ftcl_core.training import augment_config

# the MoCo v2 run this page reads (trained only if it is not stored yet)
(record,) = sweeps.sweep("experiments/table7_ft_v2.yaml", profile, seeds=[0],
                         settings=["v2 baseline"], progress=False)
run = RunDir(record["dir"])
cfg = run.load_config()
# the words below read the stored cpu run, whatever profile this page ran with
stored = store.stored_run("experiments/table7_ft_v2.yaml", "v2 baseline", seed=0)
stored_cfg = stored.load_config()

# %% [markdown]
# ## Three numbers a step
#
# At every step MoCo scores each of its $N$ queries against its own key and the $K$ keys of the queue: a matrix of
# $N\times(1+K)$ cosines, the logits of InfoNCE before the division by $\tau$. The paper's tool ({term}`Supp A`)
# summarises it with three numbers over the first $n = 64$ queries: **{term}`Mean(pos)`**, the mean score of a query
# with its positive key; **{term}`Mean(neg)`**, per query the mean of its $K$ negative scores, averaged over the
# queries; and **{term}`Var(neg)`**, per query the variance of those $K$ scores, averaged. The figures call them
# *raw*: read from the plain cosines, before any feature transformation (two chapters on) changes them. The
# library's function, a few lines, is folded below.

# %% tags=["remove-input"]
display(markup.source_code(score_statistics, collapsed="score_statistics, as the library computes it"))

# %% [markdown]
# ## Where a run starts
#
# Take an encoder that was never trained, encode two views of a few hundred images, and score each view against its
# partner (the positive) and against the other images (the negatives):

# %%
train_set, _ = load_data(cfg)
aug = augment_config(cfg)
model = build_model(cfg).eval()
gen = torch.Generator().manual_seed(0)
x = train_set.images[:256]
with torch.no_grad():
    q = F.normalize(model.encoder_q(augment.augment(x, aug, gen)), dim=1)  # N x C
    k = F.normalize(model.encoder_q(augment.augment(x, aug, gen)), dim=1)
off = ~torch.eye(len(q), dtype=torch.bool)
# N, and N x (N-1): the other images as negatives
l_pos, l_neg = (q * k).sum(1), (q @ k.T)[off].view(len(q), -1)
stats = score_statistics(l_pos, l_neg, n=64)
print(f"Mean(pos) {stats[0]:.3f}   Mean(neg) {stats[1]:.3f}   Var(neg) {stats[2]:.4f}")
# each view's batch mean removed
qc, kc = F.normalize(q - q.mean(0), dim=1), F.normalize(k - k.mean(0), dim=1)
c_pos, c_neg = (qc * kc).sum(1), (qc @ kc.T)[off].view(len(qc), -1)
learn_figures.score_histograms(
    [(l_pos, l_neg, "cosine"), (c_pos, c_neg, "cosine, batch mean removed")]
)
plt.show()

# %% tags=["remove-cell"]
glue_reading([reading.init(q.numpy(), k.numpy(), stored)])


# %% [markdown]
# Every score is close to one (left): Mean(pos) {glue:md}`init_pos`, Mean(neg) {glue:md}`init_neg`. Is that a
# {term}`collapse`? This book uses the word in one sense: every input mapped to nearly the same feature, so that a
# negative scores as high as a positive. The random encoder is not that: its positives still score above its
# negatives, and once the one direction all its features share is taken away (at random initialisation the
# backbone's features come out of a ReLU, all non-negative, and the head carries their common direction through), the
# positives still agree ({glue:md}`init_centred_pos`) while the negatives do not
# ({glue:md}`init_centred_neg`, right). So a collapse is read *during* training: Mean(neg) climbing back towards one,
# above the {term}`collapse level` ({glue:md}`init_level`), with the gap to Mean(pos) gone. The level is a rule of thumb
# for these runs: above where the trained run's positives end ({glue:md}`curve_pos_end`), a query could no longer pick
# out its partner.
#
# ## A whole run, read with the tool
#
# The stored run recorded the three statistics at every step, and the {term}`contrastive top-1`: how often the
# positive outscores all $K$ negatives. Top: the whole run; bottom: its first two epochs, step by step, where the
# queue fills. The red dots are the numbers quoted below.

# %% tags=["remove-input"]
metrics = run.load_metrics()
own = curves.training_curve_facts(metrics, cfg.moco.queue_size, cfg.train.batch_size)  # this run's, as drawn
run_figures.whole_run(metrics, curves.curve_marks(own))
plt.show()

# %% tags=["remove-cell"]
glue_reading(reading.read(stored))


# %% [markdown]
# Three things to read in it:
#
# 1. **The start belongs to the queue, not the encoder.** The queue starts full of random keys, so Mean(neg) starts
#    near zero ({glue:md}`init_queue_neg`). As real keys replace them it jumps to {glue:md}`curve_neg_peak`: the barely
#    trained encoder still points every image the same way.
# 2. **Training first pushes the images apart, then pulls each image's two views together.** Mean(neg) dips below
#    zero and settles at {glue:md}`curve_neg_end`, a negative at right angles to its query on average. Mean(pos) falls
#    with it, to {glue:md}`curve_pos_low` by epoch {glue:md}`curve_pos_low_epoch`, then climbs back to
#    {glue:md}`curve_pos_end` as the encoder learns what two views of one image share: a wide gap, with Mean(neg) far
#    below the collapse level.
# 3. **The contrastive top-1 is not the goal.** Once the queue is full it peaks, at {glue:md}`curve_top1_peak` %, sinks while
#    Var(neg) rises and ends at {glue:md}`curve_top1_end` %, yet the run ends with a {term}`linear readout` of
#    {glue:md}`end_readout` %, against {glue:md}`end_random` % for the same network untrained. One reading of the fall,
#    not measured here: the queue holds about {glue:md}`end_same_class` keys of each query's own shape (false
#    negatives), and once the encoder groups a shape together, each of them that outscores the positive counts as a
#    miss.
#
# <details>
# <summary>The first steps and the rest of the run, number by number</summary>
#
# Var(neg) spikes while the queue fills (bottom row): a share $s$ of real keys scoring $r$ among random ones scoring
# near zero has variance $s(1-s)\,r^2$, largest half-way. At step {glue:md}`curve_spike_step`, $s =$
# {glue:md}`curve_spike_share` % and $r =$ {glue:md}`curve_spike_real` predict {glue:md}`curve_var_mix`; Var(neg) reads
# {glue:md}`curve_var_spike`, and is back to {glue:md}`curve_var_filled` at step {glue:md}`curve_fill`, every key real.
# Mean(neg)'s dip reaches {glue:md}`curve_neg_low`. The top-1 peaks while Var(neg) is {glue:md}`curve_var_at_top1`;
# Var(neg) then rises to {glue:md}`curve_var_peak` near epoch {glue:md}`curve_var_peak_epoch` and ends at
# {glue:md}`curve_var_end`.
#
# </details>

# %% [markdown]
#
# :::{admonition} MoCo v2 against MoCo v1 on these images
# :class: note
# On these small images MoCo v2's linear readout is below MoCo v1's ({glue:md}`end_v2` % against {glue:md}`end_v1` %,
# each the mean of its seeds), the reverse of the paper's ImageNet; [baselines and recipes](09c_baselines.ipynb) compares
# the two. The tool reads either run the same way.
# :::

# %% [markdown]
# ## The gradient landscape
#
# The tool's second picture (the paper's Supp C) looks at the encoder, not the scores: the L2 norm of every layer's
# gradient, averaged over each epoch's steps. Each row below is a layer, from the input (top) to the MLP head
# (bottom); each column an epoch.

# %% tags=["remove-input"]
landscape = run.load_grad_norms()
run_figures.grad_heatmap(landscape["per_epoch"], landscape["layers"])
plt.show()

# %% [markdown]
# Two things to read in it. The batch-norm layers carry the smallest gradients (the darker rows): they scale and
# shift, and have few weights. And the gradients grow as the run goes on: summed over the layers, from
# {glue:md}`land_first` in the first epoch to {glue:md}`land_last` in the last. The next chapter sums the rows into one
# line per run and asks how much that line jumps from one epoch to the next.
#
# ## Summary
#
# - The paper's tool reduces each step's scores to three numbers: Mean(pos), Mean(neg) and Var(neg). The gradient
#   landscape adds every layer's gradient norm, epoch by epoch.
# - A collapse is every input mapped to nearly the same feature. Read it during training, as Mean(neg) climbing
#   towards one with the gap to Mean(pos) gone; an untrained encoder's high cosines are not one.
# - Over a whole run Mean(pos) falls in the first epoch and climbs back, Mean(neg) dips below zero and settles at
#   zero, and Var(neg) peaks mid-run and eases (false negatives, images of the same shape, may drive it).
# - The start of a run belongs to the queue: its random keys, then real ones replacing them, shape the first steps.
#
# ## Exercises
#
# 1. Compute the three statistics of the random encoder above yourself, from `l_pos` and `l_neg`, without
#    `score_statistics`, and compare.
# 2. At the first step every key in the queue is random: a unit vector drawn uniformly in the $C$ dimensions of the
#    features. For a unit query, such a key's cosine has mean $0$ and variance $1/C$. Predict Var(neg) at the run's
#    first step from its feature width (`model.dim` in its config), then check against the stored statistics.
# 3. The details above model the queue while it fills as a share $s$ of real keys among random ones, with variance
#    $s(1-s)\,r^2$. At which share is that largest? The queue holds $K$ keys and each step replaces $N$ of them (the
#    batch): predict the step of Var(neg)'s spike, and check.
#
# The solutions are folded below, in one cell that runs as written.

# %% tags=["hide-cell"]
# Solution 1: per query, the mean and the variance over its row of negatives, then
# averaged over the first 64 queries.
n = 64
mine = (
    float(l_pos[:n].mean()),
    float(l_neg[:n].mean(1).mean()),
    float(l_neg[:n].var(1, unbiased=False).mean()),
)
print("mine:   ", [round(v, 4) for v in mine])
print("library:", [round(float(v), 4) for v in stats])

# Solution 2: the variance of a random unit key's cosine with a unit query is 1 / C.
stored_metrics = stored.load_metrics()
print(f"1/C = {1 / stored_cfg.model.dim:.5f}, "
      f"first step's Var(neg) = {stored_metrics['neg_var'][0]:.5f}")

# Solution 3: s(1 - s) is largest at s = 1/2, half the queue real: K / (2N) steps in.
K, N = stored_cfg.moco.queue_size, stored_cfg.train.batch_size
first_steps = stored_metrics["neg_var"][: K // N + 1]
print(f"predicted step {K // (2 * N)}, "
      f"the spike at step {int(first_steps.argmax())}")

# %% tags=["remove-cell"]
assert all(abs(a - float(b)) < 1e-5 for a, b in zip(mine, stats)), (mine, stats)
# solution 2: the random keys' variance is 1/C, within a tenth
assert abs(stored_metrics["neg_var"][0] * stored_cfg.model.dim - 1) < 0.1
# solution 3: the spike falls within a step of half-way
assert abs(int(first_steps.argmax()) - K // (2 * N)) <= 1
