# %% [markdown]
# # Training MoCo and watching the scores
#
# In this chapter you will learn how one MoCo run is built and trained, and how to read its loss, its score
# statistics, its gradient landscape and its {term}`readout`.
#
# A real MoCo v2 run: query encoder, momentum key encoder (eq. 2, $\theta_k \leftarrow m\theta_k +
# (1-m)\theta_q$), a queue of $K$ clean keys, InfoNCE at $\tau=0.2$, and single-process shuffle-BN
# emulated with split batch-norm over 4 groups and a shuffled key batch (as the MoCo CIFAR demo does).
# The whole method is one class, `ftcl_core.methods.MoCo`; one of its steps is shown below in the paper's terms.
# The run goes through the run store, so a complete run is loaded, not retrained, and an interrupted one
# resumes from its last epoch.
#
# **Scale of the `cpu` profile, and why.** On two CPU cores the constraint is the number of useful
# steps per minute. A small CIFAR-stem ResNet-10 (width 16, 0.3 M parameters) at 24-pixel crops of
# 32-pixel images, batch 256, with batched augmentation, keeps 30 epochs of 10 000 images to minutes; the
# stored run's own training time and steps per second are printed under its readout below (they depend on
# the CPU: compare them only with runs on the same machine). The queue holds $K=4096$ keys, below the data set
# size as it must (the MoCo CIFAR demo's warning: a queue as large as the data holds the query's own
# earlier keys as negatives). `gpu` runs ResNet-50 on ImageNet-100 at the paper's recipe.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)
seed = 0

# %%
import matplotlib.pyplot as plt
import numpy as np

from ftcl_core.pages import plotting as P
from ftcl_core.runs import RunDir
from ftcl_core.study import experiments as X
from ftcl_core.study.results.numbers import plus_minus

exp = X.Experiment.load("experiments/table7_ft_v2.yaml")
rec = X.sweep(exp.path, profile, seeds=[seed], settings=["v2 baseline"], progress=False)[0]
run = RunDir(rec["dir"])
cfg = run.load_config()
recipe = X.recipe_rows(cfg, ("data.name", "data.n_train", "data.image_size", "augment.preset", "augment.out_size",
                             "model.encoder", "model.mlp", "model.bn_splits", "moco.queue_size", "moco.momentum",
                             "moco.tau", "optim.lr", "optim.weight_decay", "optim.schedule", "train.batch_size",
                             "train.epochs"))
P.html_table(["setting", "value"], recipe, caption=f"The run's recipe ({X.base_for(exp, profile)}; the whole config "
                                                   "is the run folder's config.yaml)")

# %% tags=["remove-cell"]
import csv

from ftcl_core.pages.glue import glue_facts
from ftcl_core.study import checks

order = X.moco_order_facts(X.baseline_aims(list(csv.DictReader((X.ROOT / "results" / "summary.csv").open()))))
glue_facts("order_", order)
checks.expect(X.CHECKS, order, "MoCo v2's baseline reads below MoCo v1's")

# %% [markdown]
# **This run and the paper.** Its learning rate and weight decay are not the paper's 0.03 and 1e-4: they were
# {term}`calibrated` for this data without {term}`FT`, on a validation split (chapter 9, *The baselines, calibrated*). Even so,
# on the shapes MoCo v2's baseline reads below MoCo v1's ({glue:md}`order_v2` % against {glue:md}`order_v1` %,
# {glue:md}`order_seeds` seeds each), the reverse of the paper's order. Read this chapter for how a MoCo run
# behaves, not as the best recipe for this data.
#
# ## One step, in code
#
# One MoCo step with FT, in the paper's terms: the queries from the query encoder; the key encoder moved towards
# it (eq. 2) and the keys, without gradient, from a shuffled batch (shuffle-BN); positive extrapolation (eq. 3) and
# negative interpolation of the queue (eq. 5, Sec 4.2); the logits, InfoNCE (eq. 1) and SGD; then the clean keys into
# the queue. Look at the two lines that do FT, `extrapolate_positive` and `interpolate_negatives`: without them this
# is plain MoCo, the run this chapter trains and reads. Two details follow the paper's released code: the negatives
# are scored against the *extrapolated* query, which is no longer of unit length (chapter 3), and the queue receives
# the clean keys, never the mixed ones.
#
# **Shuffle-BN.** Batch normalisation computes its statistics over the batch it is given. If each query and its own
# key were normalised within the same small group of images, the network could match them by those shared statistics
# instead of by what the images show, and the contrastive task would be solved without learning features. The keys
# are therefore computed in a shuffled order (`perm`), so a key sits in another group than its query, then put back
# in order. The library's `MoCo` (`ftcl_core/methods/moco.py`) takes the same step on several processes and
# with every option of the tables; a test checks that both give the same loss, gradients, weights and queue.

# %%
from IPython.display import display

from ftcl_core.methods.moco import moco_ft_step

display(P.source_code(moco_ft_step))

# %% [markdown]
# ## Loss and contrastive accuracy
#
# Two curves of the same run below: the InfoNCE loss and the *{term}`contrastive top-1`*, the share of queries whose
# positive is the top logit among the $K+1$ (a training signal, not the {term}`linear readout` at the
# end of the chapter). The dotted line marks the step at which the queue holds only real keys. The next two
# paragraphs read the stored `cpu` run.

# %%
m = run.load_metrics()
epoch = m["step"] / max(1, int(np.sum(m["epoch"] == 0)))
fig, ax = plt.subplots(1, 3, figsize=(P.BOOK_WIDTH_IN, 2.9), layout="constrained")
ax[0].plot(epoch, P.smooth(m["loss"], 10), label="loss (10-step mean)")
ax[0].axhline(np.log(cfg.moco.queue_size + 1), ls="--", color="gray", lw=1, label="ln(K+1)")
ax[0].set_title("InfoNCE loss", fontsize=P.TITLE_PT)
ax[1].plot(epoch, P.smooth(m["top1"], 10))
ax[1].set_title("contrastive top-1 (%)", fontsize=P.TITLE_PT)
ax[2].plot(epoch, m["lr"])
ax[2].set_title("learning rate", fontsize=P.TITLE_PT)
filled = np.ceil(cfg.moco.queue_size / cfg.train.batch_size) / max(1, int(np.sum(m["epoch"] == 0)))
for a in ax:
    a.axvline(filled, ls=":", color="black", lw=1, label="queue filled with real keys" if a is ax[0] else None)
    a.set_xscale("symlog", linthresh=1)  # the first epoch stretched: the queue fills within it
    a.set_xlim(0, np.ceil(epoch[-1]))
    ticks = [t for t in (0, 0.5, 1, 3, 10, 30) if t <= np.ceil(epoch[-1])]
    a.set_xticks(ticks, [f"{t:g}" for t in ticks])
    a.set_xlabel("epoch (linear to 1, log after)", fontsize=P.TEXT_PT)
    a.tick_params(labelsize=P.TEXT_PT)
fig.legend(loc="outside lower center", ncol=3, frameon=False, fontsize=P.TEXT_PT)
plt.show()

# %% tags=["remove-cell"]
from ftcl_core.pages.glue import glue_facts
from ftcl_core.study import checks
from ftcl_core.study import curves as C

# the authored reading below rests on the stored cpu run of this seed, whatever profile this page ran with
stored = RunDir(X.run_dir(exp, "v2 baseline", seed, "cpu", X.STORED))
stored_cfg = stored.load_config()
curve = C.training_curve_facts(stored.load_metrics(), stored_cfg.moco.queue_size, stored_cfg.train.batch_size)
glue_facts("curve_", curve)
checks.expect(C.CHECKS, curve, "the loss starts below ln(K+1)", "the loss rises before it falls",
              "the loss peaks as the queue fills", "Mean(neg) climbs from the random keys", "the loss climbs a second, smaller hump",
              "the contrastive top-1 spikes and sinks", "Var(neg) grows as the top-1 sinks")

# %% [markdown]
# **Why the loss rises first.** The loss does not start near $\ln(K+1)$ = {glue:md}`curve_ln_k`, the loss of a
# guess among $K+1$ keys: it starts at {glue:md}`curve_loss_start` (a {glue:md}`curve_window`-step mean). MoCo fills
# its queue with random unit vectors, which score near zero against every query ({term}`Mean(neg)` {glue:md}`curve_neg_start`
# at the first step), while the positive, another view of the same image, already scores high (chapter 2): an easy
# task. Each step replaces a batch of those random keys with the key encoder's keys of real images, and after
# {glue:md}`curve_fill` steps (epoch {glue:md}`curve_fill_epoch`, the dotted line) the queue holds nothing else. A
# barely trained encoder maps all images to similar directions (chapter 2), so these keys score almost as high as
# the positive: Mean(neg) climbs to {glue:md}`curve_neg_peak` and the loss to {glue:md}`curve_loss_peak` at step
# {glue:md}`curve_peak_step`, close to the guess. Only then does training spread the features over the sphere
# (Mean(neg) back to {glue:md}`curve_neg_dip`) and the loss falls, to {glue:md}`curve_loss_dip` by epoch
# {glue:md}`curve_dip_epoch`. It climbs once more, a smaller
# hump to {glue:md}`curve_loss_hump` around epoch {glue:md}`curve_hump_epoch`, in the epochs in which the contrastive
# top-1 sinks (the next paragraph gives the reason), and falls for the rest of the run, to {glue:md}`curve_loss_end`
# over its last {glue:md}`curve_tail` steps.
#
# **Why the contrastive top-1 spikes and sinks.** Past the first steps (whose random keys make it trivially high),
# the top-1 peaks at {glue:md}`curve_top1_peak` % at epoch {glue:md}`curve_top1_epoch`, while {term}`Var(neg)` is still low
# ({glue:md}`curve_var_at_top1`: the negatives spread evenly), then sinks to {glue:md}`curve_top1_end` % over the last
# {glue:md}`curve_tail` steps as Var(neg) grows to {glue:md}`curve_var_end`. That is what an encoder does that learns
# what images of one shape share: the shapes repeat, so the queue holds many other images of the same shape in the
# same colours, which now score as high as the positive and often above it. The loss still falls, because it weighs
# how much of the softmax the positive gets, not whether it comes first.

# %% [markdown]
# ## The three statistics at the start (Supp A)
#
# Chapter 2 draws this run's three statistics over all its epochs. Below are its first three epochs, step by step and
# unsmoothed, where *Why the loss rises first* reads them: Mean(neg) starts near zero against the random keys of
# the queue and climbs as real keys fill it.

# %%
first = 3 * int(np.sum(m["epoch"] == 0))  # optimiser steps in the first three epochs
early = {k: v[:first] if len(v) == len(m["step"]) else v for k, v in m.items()}
P.score_statistics({"MoCo v2": early}, x="step", window=1)
plt.show()

# %% [markdown]
# ## Gradient landscape (Supp C)
#
# The L2 norm of every layer's gradient, averaged over each epoch, for the query encoder (backbone and
# head): one row of colour per layer, from the input (top) to the head (bottom). The paper draws this landscape as a
# 3-D surface to show smooth (stable $m$) against spiky (small $m$) training; chapter 5 compares momenta on its sum
# over the layers.

# %%
g = run.load_grad_norms()
P.grad_heatmap(g["per_epoch"], g["layers"], title="MoCo v2, query encoder")
plt.show()

# %% tags=["remove-cell"]
stored_g = stored.load_grad_norms()
swing = C.grad_swing_facts({"v2 baseline": stored_g["per_epoch"]}, stored_g["layers"])
glue_facts("grad_", swing)
checks.expect(C.CHECKS, swing, "the summed gradient norm grows over the run", "the batch-norm layers carry the smallest gradients")

# %% [markdown]
# Read along the rows: the gradients grow as training goes on; summed over the layers they go from
# {glue:md}`grad_first` in the first epoch to {glue:md}`grad_last` in the last. Read down a column: every batch-norm
# layer (`bn`, `stem.1`, `shortcut.1`) carries a smaller gradient, on average over the run, than every convolution
# and the head.

# %% [markdown]
# ## Readout
#
# Linear readout on the frozen backbone (train split features, standardised; softmax classifier; test
# split top-1) and the weighted kNN monitor (k=200, t=0.1), against the same readout of the randomly
# initialised encoder, the {term}`random-init baseline` that defines a {term}`momentum collapse` (Table 1's footnote).

# %%
ev = run.load_eval()
prov = run.load_provenance()
print(f"linear top-1 {ev['linear_top1']:.1f} %  (random init {ev['random_init_linear_top1']:.1f} %)")
print(f"kNN top-1    {ev['knn_top1']:.1f} %  (random init {ev['random_init_knn_top1']:.1f} %)")
n_steps = len(run.load_metrics()["loss"])
print(f"train {ev['train_s']:.0f} s for {n_steps} steps ({n_steps / ev['train_s']:.1f} steps per second) + eval "
      f"{ev['eval_s']:.0f} s on {prov.get('cpu_model') or prov.get('device_name')} ({prov.get('threads')} threads); "
      f"commit {str(prov.get('commit'))[:10]}, torch {prov['versions']['torch']}")
# the same setting over all its stored seeds (the committed cpu runs, whatever profile this page ran with)
stored_base = X.summarize([r for r in X.load_records(exp.path, "cpu", X.STORED) if r["setting"] == "v2 baseline"])
stored_base = stored_base["v2 baseline"]
glue_facts("seeds_", {"seed": str(seed), "n": str(stored_base["n_seeds"]),
                      "linear": plus_minus(stored_base["mean"], stored_base["ci95"])})

# %% [markdown]
# This run is one draw: seed {glue:md}`seeds_seed` of Table 7's MoCo v2 baseline, whose {glue:md}`seeds_n` stored
# seeds read {glue:md}`seeds_linear` % (mean ± 95 % interval). Every comparison in this book is therefore {term}`paired` by
# seed and judged over several seeds ([chapter 9](09_results.ipynb)).

# %% [markdown]
# (try-it-04)=
# ## Try it
#
# * **The `seed` parameter.** `.venv/bin/papermill book/04_training.ipynb /tmp/04_training.ipynb -p seed 1 --cwd book`
#   loads (or trains, if it is missing) another seed of the same recipe. Compare its loss and contrastive accuracy
#   with this seed's, against the dashed $\ln(K+1)$ line (*Loss and contrastive accuracy*); how far the readout moves
#   from seed to seed is what the intervals of [chapter 9](09_results.ipynb) measure.
# * **The `profile` parameter.** `.venv/bin/papermill book/04_training.ipynb /tmp/04_training.ipynb -p profile smoke
#   --cwd book` trains a run in seconds, and the recipe table at the top then lists the smoke profile's own settings,
#   so you can see what it shrinks. Chapter 1's *How to read and run it* says what each profile is for.
