# %% [markdown]
# # Momentum, read with the tool
#
# **In this chapter you will learn** what the momentum of MoCo's key encoder does to a run, read with the previous
# chapter's tool: the paper's first experiment (its Table 1) repeated at this book's scale; why a larger momentum makes
# the positive pairs harder; what a small one does to the score statistics (the images crowd together, short of a
# {term}`collapse`); and what it does to the gradient landscape.
#
# [MoCo from scratch](learn2_moco.ipynb) built the key encoder as a moving average of the query encoder, after every
# step (the paper's eq. 2):
#
# $$\theta_k \leftarrow m\,\theta_k + (1 - m)\,\theta_q .$$
#
# At $m = 0$ the key encoder copies the query encoder every step; at $m = 1$ it never moves from its random start. In
# between, the larger $m$, the further the keys trail the queries. The paper trains {term}`MoCo v1` with $m$ from $0$
# to $1$ and reports that the {term}`readout` rises with $m$ up to $0.99$ and falls after.
#
# ## The sweep
#
# The same sweep at this book's scale, on the drawn shapes: each momentum's mean readout over its seeds with its 95 %
# interval (the range that likely holds the mean), the paper's beside it.

# %% colab-setup

# %% tags=["parameters"]
import os

# this page reads stored runs only; the parameter is every chapter's
profile = os.environ.get("FTCL_PROFILE", "cpu")

# %%
import matplotlib.pyplot as plt
import numpy as np

from ftcl_core.pages import result_figures, run_figures
from ftcl_core.pages.glue import glue_reading
from ftcl_core.runs import RunDir
from ftcl_core.study import curves, evidence, experiment_file, store, table_verdicts
from ftcl_core.study.chapters import momentum_read

# %% tags=["remove-cell"]
# the words below read the stored cpu runs
glue_reading(momentum_read.read(evidence.Evidence.load("cpu")))

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
# $0.9$ the intervals overlap too much to order the momenta.
#
# ## Why the peak: the three statistics
#
# The previous chapter's three statistics, {term}`Mean(pos)`, {term}`Mean(neg)` and {term}`Var(neg)`, through each run
# (one seed):

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
# **Mean(neg)**: at the small momenta the images crowd together ({term}`crowding`): Mean(neg) rises above
# the larger momenta's, highest at $m =$ {glue:md}`mom_crowd_m` ({glue:md}`mom_crowd_neg`), where the key encoder
# copies the query encoder every step. Crowded, not collapsed: Mean(neg) stays below the {term}`collapse level`, and that run
# still reads {glue:md}`mom_m0_mean` % on average, well above the same network never trained (the
# {term}`random-init baseline`, {glue:md}`mom_random` %), where the paper's small momenta read {term}`below random init`
# ([the momentum chapter](05_momentum.ipynb)).
#
# ## The gradient landscape
#
# The previous chapter's picture of every layer's gradient norm, epoch by epoch, here summed over the layers into one
# line a run. A jagged line is a run whose gradients change a lot from one epoch to the next.

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
# deviation of the line's change from one epoch to the next. The small momenta jump more: $m = 0$, $0.5$ and $0.9$
# each jump more than $m = 0.99$ and $m = 1$, and that holds in all {glue:md}`swing_seeds` seeds. Among themselves they
# are not in order. In this seed $m =$ {glue:md}`swing_most` jumps most, about {glue:md}`swing_ratio` times as much as
# $m =$ {glue:md}`swing_least`. Below $0.99$, training swings from epoch to epoch.
#
# ## Summary
#
# - The momentum $m$ sets how far the key encoder trails the query encoder (eq. 2): it copies it at $m = 0$ and never
#   moves at $m = 1$.
# - A larger momentum makes the positive pairs harder, and the readout rises with it up to a point: a key encoder that
#   never moves makes them too hard.
# - Small momenta crowd the images together, short of a collapse, and make the gradient landscape jump from epoch to
#   epoch.
#
# ## Exercises
#
# 1. Eq. 2 is an exponential moving average. After how many steps has the key encoder forgotten half of where it
#    started, at $m = 0.99$ and at $m = 0.999$? How many epochs of this chapter's runs is that?
# 2. Predict, then check: from where each coloured momentum's Mean(neg) ends in the statistics figure, which would
#    you expect to read lowest? Check against the readout figure. Does the run whose Mean(neg) ends highest read below
#    the never-trained encoder, as a collapsed one would?
#
# The solutions are folded below, in one cell that runs as written.

# %% tags=["hide-cell"]
import math

# Solution 1: after t steps the starting weights keep a share m**t, one half at
# t = ln 2 / -ln m.
cfg = RunDir(t1_runs[0]["dir"]).load_config()
per_epoch = cfg.data.n_train // cfg.train.batch_size  # steps an epoch
for m in (0.99, 0.999):
    t = math.log(2) / -math.log(m)
    print(f"m = {m}: {t:.0f} steps, {t / per_epoch:.1f} epochs of {cfg.train.epochs}")

# Solution 2: the run whose Mean(neg) ends highest reads below every momentum from 0.9
# on, yet it ends below the collapse level and reads above the never-trained encoder:
# crowded, not collapsed. Mean(neg) flags crowding but does not rank the others'
# readouts: compare m = 1 with m = 0.8 below.
for r in t1_runs:
    end_neg = float(np.mean(t1_metrics[r["setting"]]["neg_mean"][-100:]))
    readout, untrained = r["linear_top1"], r["random_init_linear_top1"]
    print(f"{r['setting']:>8}: Mean(neg) {end_neg:.2f}, "
          f"readout {readout:.1f} % (random init {untrained:.1f} %), seed {r['seed']}")

# %% tags=["remove-cell"]
# solution 2's words: the run whose Mean(neg) ends highest reads below every momentum of 0.9 and more, and above the
# never-trained encoder
if t1_runs:
    ends_at = {r["setting"]: float(np.mean(t1_metrics[r["setting"]]["neg_mean"][-100:])) for r in t1_runs}
    crowded = next(r for r in t1_runs if r["setting"] == max(ends_at, key=ends_at.get))
    large = [r["linear_top1"] for r in t1_runs if float(r["setting"].removeprefix("m=")) >= 0.9]
    assert crowded["random_init_linear_top1"] < crowded["linear_top1"] < min(large), (crowded, large)
