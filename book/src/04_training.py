# %% [markdown]
# # Training MoCo and watching the scores
#
# In this chapter you will learn how one MoCo run is built and trained, and how to read its loss, its score
# statistics, its gradient landscape and its readout.
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

exp = X.Experiment.load("experiments/table5_ft_v2.yaml")
rec = X.sweep(exp.path, profile, seeds=[seed], settings=["v2 baseline"], progress=False)[0]
run = RunDir(rec["dir"])
cfg = run.load_config()
recipe = X.recipe_rows(cfg, ("data.name", "data.n_train", "data.image_size", "augment.preset", "augment.out_size",
                             "model.encoder", "model.mlp", "model.bn_splits", "moco.queue_size", "moco.momentum",
                             "moco.tau", "optim.lr", "optim.weight_decay", "optim.schedule", "train.batch_size",
                             "train.epochs"))
P.html_table(["setting", "value"], recipe, caption=f"The run's recipe ({X.base_for(exp, profile)}; the whole config "
                                                   "is the run folder's config.yaml)")

# %% [markdown]
# ## One step, in code
#
# One MoCo step with FT, in the paper's terms: the queries from the query encoder; the key encoder moved towards
# it (eq. 2) and the keys, without gradient, from a shuffled batch (shuffle-BN); positive extrapolation (eq. 3) and
# negative interpolation of the queue (Sec 4.2); the logits, InfoNCE (eq. 1) and SGD; then the clean keys into the
# queue. Look at the two lines that do FT, `extrapolate_positive` and `interpolate_negatives`: without them this
# is plain MoCo. The library's `MoCo` (`ftcl_core/methods/moco.py`) takes the same step on several processes and
# with every option of the tables; a test checks that both give the same loss, gradients, weights and queue.

# %%
from IPython.display import display

from ftcl_core.methods.moco import moco_ft_step

display(P.source_code(moco_ft_step))

# %% [markdown]
# ## Loss and contrastive accuracy
#
# The loss starts near $\ln(K+1)$ and falls; the instance-discrimination accuracy (is the positive the
# top logit among $K+1$?) stays low in absolute terms because the shapes repeat: many queue keys are
# other images of the same shape in the same colours, hard to tell from the positive.

# %%
m = run.load_metrics()
epoch = m["step"] / max(1, int(np.sum(m["epoch"] == 0)))
fig, ax = plt.subplots(1, 3, figsize=(P.BOOK_WIDTH_IN, 2.9), layout="constrained")
ax[0].plot(epoch, P.smooth(m["loss"], 10), label="loss (10-step mean)")
ax[0].axhline(np.log(cfg.moco.queue_size + 1), ls="--", color="gray", lw=1, label="ln(K+1)")
ax[0].set_title("InfoNCE loss")
fig.legend(loc="outside lower center", ncol=2, frameon=False)
ax[1].plot(epoch, P.smooth(m["top1"], 10))
ax[1].set_title("contrastive top-1 (%)")
ax[2].plot(epoch, m["lr"])
ax[2].set_title("learning rate")
for a in ax:
    a.set_xlabel("epoch")
plt.show()

# %% [markdown]
# ## The three statistics (Supp A)

# %%
P.score_statistics({"MoCo v2": m})
plt.show()

# %% [markdown]
# ## Gradient landscape (Supp C)
#
# The L2 norm of every layer's gradient, averaged over each epoch, for the query encoder (backbone and
# head). The paper draws this surface to show smooth (stable $m$) against spiky (small $m$) training.

# %%
g = run.load_grad_norms()
P.grad_landscape(g["per_epoch"], title="MoCo v2, query encoder")
plt.show()
print(f"{len(g['layers'])} layers, from {str(g['layers'][0])} to {str(g['layers'][-1])}")

# %% [markdown]
# ## Readout
#
# Linear readout on the frozen backbone (train split features, standardised; softmax classifier; test
# split top-1) and the weighted kNN monitor (k=200, t=0.1), against the same readout of the randomly
# initialised encoder, the baseline that defines collapse (Table 1's footnote).

# %%
ev = run.load_eval()
prov = run.load_provenance()
print(f"linear top-1 {ev['linear_top1']:.1f} %  (random init {ev['random_init_linear_top1']:.1f} %)")
print(f"kNN top-1    {ev['knn_top1']:.1f} %  (random init {ev['random_init_knn_top1']:.1f} %)")
n_steps = len(run.load_metrics()["loss"])
print(f"train {ev['train_s']:.0f} s for {n_steps} steps ({n_steps / ev['train_s']:.1f} steps per second) + eval "
      f"{ev['eval_s']:.0f} s on {prov.get('cpu_model') or prov.get('device_name')} ({prov.get('threads')} threads); "
      f"commit {str(prov.get('commit'))[:10]}, torch {prov['versions']['torch']}")

# %% [markdown]
# (try-it-04)=
# ## Try it
#
# * **The `seed` parameter.** `.venv/bin/papermill book/04_training.ipynb /tmp/04_training.ipynb -p seed 1 --cwd book`
#   loads (or trains, if it is missing) another seed of the same recipe. Compare its loss and contrastive accuracy
#   with this seed's, against the dashed $\ln(K+1)$ line (*Loss and contrastive accuracy*); how far the readout moves
#   from seed to seed is what the intervals of chapter 9's *Verdicts by table* measure.
# * **The `profile` parameter.** `.venv/bin/papermill book/04_training.ipynb /tmp/04_training.ipynb -p profile smoke
#   --cwd book` trains a run in seconds, and the recipe table at the top then lists the smoke profile's own settings,
#   so you can see what it shrinks. Chapter 1's *How to read and run it* says what each profile is for.
