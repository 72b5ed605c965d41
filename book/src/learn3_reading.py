# %% [markdown]
# # Reading a run
#
# **In this chapter you will learn** how to read a MoCo run with the paper's own tool: three statistics of the scores,
# recorded at every step, and the gradient landscape (every layer's gradient norm, epoch by epoch); what the momentum
# of eq. 2 does to them (the paper's Table 1); and how a *collapse* would show, and what only looks like one.
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
from ftcl_core.pages import markup, result_figures, run_figures
from ftcl_core.pages.glue import glue_reading
from ftcl_core.runs import RunDir
from ftcl_core.stats import score_statistics
from ftcl_core.study import (
    curves,
    experiment_file,
    store,
    sweeps,
    table_verdicts,
)
from ftcl_core.study.chapters import reading
from ftcl_core.training import augment_config

exp = experiment_file.Experiment.load("experiments/table7_ft_v2.yaml")
cfg = experiment_file.resolve(
    experiment_file.base_for(exp, profile),
    {**exp.settings["v2 baseline"], "seed": 0},
    profile,
)
# the MoCo v2 run this page reads (trained only if it is not stored yet)
rec = sweeps.sweep(
    exp.path, profile, seeds=[0], settings=["v2 baseline"], progress=False
)[0]
run = RunDir(rec["dir"])
# the words below read the stored cpu run, whatever profile this page ran with
stored = RunDir(
    experiment_file.run_dir(exp, "v2 baseline", 0, "cpu", experiment_file.STORED)
)
stored_cfg = stored.load_config()

# %% [markdown]
# ## Three numbers a step
#
# At every step MoCo scores each of its $N$ queries against its own key and the $K$ keys of the queue: a matrix of
# $N\times(1+K)$ cosines, the logits of InfoNCE before the division by $\tau$. The paper's tool ({term}`Supp A`)
# summarises it with three numbers over the first $n = 64$ queries: **{term}`Mean(pos)`**, the mean score of a query
# with its positive key; **{term}`Mean(neg)`**, per query the mean of its $K$ negative scores, averaged over the
# queries; and **{term}`Var(neg)`**, per query the variance of those $K$ scores, averaged. The figures call them
# *raw*: read from the plain cosines, before any feature transformation (the next chapter) changes them. The
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
# negatives, and once the one direction all its features share is taken away (they come out of ReLUs, so all are
# non-negative), the positives still agree ({glue:md}`init_centred_pos`) while the negatives do not
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
#    {glue:md}`curve_pos_end` as the encoder learns what two views of one image share: a wide gap, far below the
#    collapse level.
# 3. **The contrastive top-1 is not the goal.** It peaks early, at {glue:md}`curve_top1_peak` %, and sinks to
#    {glue:md}`curve_top1_end` % while Var(neg) rises, yet the run ends with a {term}`linear readout` of
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
#
# ## Momentum, read with the tool (Table 1)
#
# The paper's first use of the tool is the momentum $m$ of eq. 2. It trains MoCo v1 with $m$ from $0$ (the key
# encoder copies the query encoder every step) to $1$ (it never moves from its random start) and reports that
# {term}`readout` rises with $m$ up to $0.99$ and falls after. The same sweep at this book's scale: each momentum's
# mean readout over its seeds with its 95 % interval (the range that likely holds the mean), the paper's beside it.

# %%
t1 = experiment_file.Experiment.load("experiments/table1_momentum.yaml")
# stored, never trained
t1_all = store.load_records(t1.path, "cpu", experiment_file.STORED)
if t1_all:
    result_figures.experiment_bars(
        t1, table_verdicts.summarize(t1_all), paper_beside=True
    )
    plt.show()

# %% [markdown]
# Look at the peak: readout is highest at $m =$ {glue:md}`mom_peak` ({glue:md}`mom_peak_mean` % on average over its
# seeds) and falls after, as in the paper, and the last step up, from $0.9$ to $0.99$, is as large as the paper's. Below
# $0.9$ the intervals overlap too much to order the momenta. Why the peak? The three statistics through each run (one
# seed):

# %%
t1_runs = [r for r in t1_all if r["seed"] == t1.seeds[0]]
t1_metrics = {r["setting"]: RunDir(r["dir"]).load_metrics() for r in t1_runs}
momenta = ["m=0", "m=0.9", "m=0.99", "m=1.0"]  # one colour each, kept below
if t1_metrics:
    run_figures.score_statistics(t1_metrics, highlight=momenta,
                                 others="the other momenta", row_height=0.68)
    plt.show()

# %% [markdown]
# **Mean(pos)**: the larger the momentum, the harder the positive pair. Averaged over the run it reads
# {glue:md}`mom_pos_easy` at $m = 0.9$ and {glue:md}`mom_pos_hard` at $m = 0.99$, lower in each of
# {glue:md}`mom_seeds` seeds: a key encoder that trails further behind makes keys that agree less with their queries.
# A frozen key encoder gives the hardest positives of all (Mean(pos) {glue:md}`mom_frozen_pos`), too hard: a query
# from a trained encoder meets a key from a random one. Harder positives help, up to a point; the next chapter's
# transformation makes them harder on purpose.
#
# **Mean(neg)**: at the small momenta the images crowd together (this book's {term}`crowding`): Mean(neg) rises above
# the larger momenta's, highest at $m =$ {glue:md}`mom_crowd_m` ({glue:md}`mom_crowd_neg`), where the key encoder
# copies the query encoder every step. Crowded, not collapsed: Mean(neg) stays below the collapse level, and that run
# still reads {glue:md}`mom_m0_mean` % on average, well above the same network never trained (the
# {term}`random-init baseline`, {glue:md}`mom_random` %), where the paper's small momenta read {term}`below random init`
# ([the momentum chapter](05_momentum.ipynb)).
#
# **The landscape**, the tool's second picture (Supp C): each layer's gradient norm, averaged over an epoch, here
# summed over the layers. Smooth is a stable run, spiky one that swings.

# %% tags=["hide-input"]
# each momentum's landscape: its layers' gradient norms summed, epoch by epoch
shown = ("m=0", "m=0.5", "m=0.9", "m=0.99", "m=1.0")
colours = {m: f"C{i}" for i, m in enumerate([*momenta, "m=0.5"])}  # as above
if t1_metrics:
    per_epoch_norms = {r["setting"]: RunDir(r["dir"]).load_grad_norms()["per_epoch"]
                       for r in t1_runs if r["setting"] in shown}
    # how far each line jumps: the sd of its epoch-to-epoch change
    jumps = curves.grad_swing_facts(per_epoch_norms)["sd"]
    run_figures.grad_norm_epochs(per_epoch_norms, colours=colours, cols=5, jumps=jumps)
    plt.show()

# %% [markdown]
# Look at how jagged each line is, not at its level. The number in each title, the *jumps*, is the standard
# deviation of the line's change from one epoch to the next: $m = 0$, $0.5$ and $0.9$ jump more than $m = 0.99$ and
# $m = 1$, those at $m =$ {glue:md}`swing_most` about {glue:md}`swing_ratio` times those at $m =$ {glue:md}`swing_least`.
# A small momentum makes training swing from epoch to epoch.
#
# ## Summary
#
# - The paper's tool reduces each step's scores to three numbers: Mean(pos), Mean(neg) and Var(neg). The gradient
#   landscape adds every layer's gradient norm, epoch by epoch.
# - A collapse is every input mapped to nearly the same feature. Read it during training, as Mean(neg) climbing
#   towards one with the gap to Mean(pos) gone; an untrained encoder's high cosines are not one.
# - Over a whole run Mean(pos) falls in the first epoch and climbs back, Mean(neg) dips below zero and settles at
#   zero, and Var(neg) peaks mid-run and eases (false negatives, images of the same shape, may drive it).
# - A larger momentum makes the positive pairs harder, and readout rises with it up to a point; small momenta crowd
#   the images together and make the landscape spiky.
#
# ## Exercises
#
# 1. Compute the three statistics of the random encoder above yourself, from `l_pos` and `l_neg`, without
#    `score_statistics`, and compare.
# 2. Eq. 2 is an exponential moving average. After how many steps has the key encoder forgotten half of where it
#    started, at $m = 0.99$ and at $m = 0.999$? How many epochs of the stored run is that?
# 3. Predict, then check: from where each coloured momentum's Mean(neg) ends in the statistics figure, which would
#    you expect to read lowest? Check against the readout figure. Does the run whose Mean(neg) ends highest read below
#    the never-trained encoder, as a collapsed one would?
#
# The solutions are folded below, in one cell that runs as written.

# %% tags=["hide-cell"]
import math

import numpy as np

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

# Solution 2: after t steps the starting weights keep a share m**t, one half at
# t = ln 2 / -ln m.
per_epoch = stored_cfg.data.n_train // stored_cfg.train.batch_size  # steps an epoch
for m in (0.99, 0.999):
    t = math.log(2) / -math.log(m)
    epochs = stored_cfg.train.epochs
    print(f"m = {m}: {t:.0f} steps, {t / per_epoch:.1f} epochs of {epochs}")

# Solution 3: the run whose Mean(neg) ends highest reads below every momentum from 0.9
# on, yet it ends below the collapse level and reads above the never-trained encoder:
# crowded, not collapsed. Mean(neg) flags crowding but does not rank the others'
# readouts: compare m = 1 with m = 0.8 below.
for r in t1_runs:
    end_neg = float(np.mean(t1_metrics[r["setting"]]["neg_mean"][-100:]))
    readout, untrained = r["linear_top1"], r["random_init_linear_top1"]
    print(f"{r['setting']:>8}: Mean(neg) {end_neg:.2f}, "
          f"readout {readout:.1f} % (random init {untrained:.1f} %), seed {r['seed']}")

# %% tags=["remove-cell"]
assert all(abs(a - float(b)) < 1e-5 for a, b in zip(mine, stats)), (mine, stats)
# solution 3's words: the run whose Mean(neg) ends highest reads below every momentum of 0.9 and more, and above the
# never-trained encoder
if t1_runs:
    ends_at = {r["setting"]: float(np.mean(t1_metrics[r["setting"]]["neg_mean"][-100:])) for r in t1_runs}
    crowded = next(r for r in t1_runs if r["setting"] == max(ends_at, key=ends_at.get))
    large = [r["linear_top1"] for r in t1_runs if float(r["setting"].removeprefix("m=")) >= 0.9]
    assert crowded["random_init_linear_top1"] < crowded["linear_top1"] < min(large), (crowded, large)
