# %% [markdown]
# # Beyond MoCo: SimCLR, BYOL, SimSiam and SwAV with FT
#
# **With negatives, positive extrapolation costs here too: SimCLR collapses and SwAV loses {term}`readout`; without
# negatives (BYOL, SimSiam) these seeds cannot tell a gain from zero.** [What the runs say](#methods-answer) gives
# the numbers.
#
# The paper calls its feature transformations generic (Sec 1, Table 7 and the supplement): it adds them
# to SimCLR {cite}`chen2020simple`, and positive extrapolation alone to the methods without negatives,
# BYOL {cite}`grill2020bootstrap` and SimSiam {cite}`chen2020exploring`, and to the clustering method
# SwAV {cite}`caron2020unsupervised`. This chapter shows how each method takes {term}`FT` in `ftcl_core`, trains
# them on the embedded data with and without it.
#
# ## Where FT enters each loss
#
# All four methods encode two views $x_1, x_2$ of each image, normalise, and score pairs by their
# inner product, exactly as MoCo scores $z_q\cdot z_k$. Each method names two normalised features of a view, $v$
# and $w$ (below, per method); a process holds $N$ images of a batch of $M$ over all processes ($N = M$ in one
# process). Each loss is written over the *symmetric* pairs: anchors $a = [v_1; v_2]$ and their positives
# $b = [w_2; w_1]$ ($2N$ of each), so both directions are one batch; $i^+$ is the index of anchor $i$'s positive.
# FT acts on these normalised features inside the loss, with the released code's semantics
# ([Feature transformations in training](06_feature_transformations.ipynb)):
#
# * **SimCLR.** $v = w = z$ (one encoder). The negatives of an anchor are the other $2M-2$ samples of
#   the whole batch, both views, gathered from every process: the in-batch *bank* takes the place of
#   MoCo's queue. Positive extrapolation (eq. 3) mixes $a$ and $b$; negative interpolation (Sec 4.2)
#   mixes the bank with a permutation of itself; the loss is InfoNCE (eq. 1) with temperature $\tau$:
#
#   $$\mathcal L = -\frac{1}{2N}\sum_i \log\frac{e^{a'_i\cdot b'_i/\tau}}{e^{a'_i\cdot b'_i/\tau}+\sum_{j\notin\{i,\,i^+\}} e^{a'_i\cdot \tilde z_j/\tau}}.$$
#
#   A mixed negative $\tilde z_j = \lambda z_j + (1-\lambda) z_{\pi(j)}$ is excluded by the index $j$ it
#   was drawn from, so it may carry a share of the anchor, as a mixed queue entry can in MoCo.
# * **BYOL.** $v = p$ (online prediction), $w = t$ (momentum target, no gradient). With
#   $p' = \lambda p + (1-\lambda) t$, $t' = \lambda t + (1-\lambda) p$ (eq. 3, $\lambda\sim$ Beta$(\alpha,\alpha)+1$),
#   $\mathcal L = \frac{1}{2N}\sum_i (2 - 2\,p'_i\cdot t'_i)$. As in MoCo's released code the gradient also
#   flows through the mixed target, whose share $(1-\lambda)p$ comes from the online network (a negative weight,
#   since $\lambda \ge 1$: the target is pushed away from the prediction).
# * **SimSiam.** $v = p$, $w = \mathrm{sg}(z)$: $\mathcal L = -\frac{1}{2N}\sum_i p'_i\cdot z'_i$.
#
# By eq. 4 the transformed positive score is $S' = (2\lambda^2-2\lambda+1)S + 2\lambda(1-\lambda) \le S$: for
# BYOL and SimSiam, whose loss *is* the positive score, extrapolation makes every pair look less aligned
# than it is and pushes harder towards alignment. Methods without negatives have no queue or bank to
# interpolate: asking them for `ft.neg` is an error, not a silent no-op.
#
# * **SwAV.** The paper "only transform[s] the two features of the input image by positive
#   extrapolation, the rest of the SwAV pipeline is left unchanged" (Supp): $z'_1, z'_2$ from eq. 3, then
#   the prototype scores $s_v = C^\top z'_v$, codes $q_v$ from Sinkhorn-Knopp (equal partition of the batch
#   over the prototypes), and the swapped prediction
#   $\mathcal L = -\tfrac12\sum_i \big(q_{2,i}\cdot\log\mathrm{softmax}(s_{1,i}/\tau) + q_{1,i}\cdot\log\mathrm{softmax}(s_{2,i}/\tau)\big)$.
#   Here with two crops only: multi-crop, SwAV's other ingredient, has no counterpart in a two-view
#   batched augmentation, so our SwAV numbers are two-crop SwAV's.
#
# The code of SimCLR's scores, as the library runs it; look at the one call of `moco_ft_logits`, with the bank in
# place of the queue. Below it, folded, each method's own file, and the scores BYOL and SimSiam share.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)
seeds = [0]
method_files = ["experiments/table7_simclr.yaml", "experiments/supp_e_byol.yaml", "experiments/table7_simsiam.yaml",
               "experiments/table7_swav.yaml"]
# settings the smoke and gpu profiles train when missing (all of an experiment not named here); cpu shows every stored one
settings = {"experiments/table7_simclr.yaml": ["simclr baseline", "simclr +pos", "simclr +neg", "simclr +both"]}

# %%
from IPython.display import display

from ftcl_core import batch_losses
from ftcl_core.methods import BYOL, SimCLR, SimSiam, SwAV, base, byol
from ftcl_core.pages import markup, result_figures, run_figures

display(markup.source_code(batch_losses.simclr_ft_logits, batch_losses.other_sample_mask))
display(markup.source_code(SimCLR, collapsed="SimCLR (ftcl_core/methods/simclr.py)"))
display(markup.source_code(byol.cosine_momentum, BYOL, collapsed="BYOL (ftcl_core/methods/byol.py)"))
display(markup.source_code(SimSiam, collapsed="SimSiam (ftcl_core/methods/simsiam.py)"))
display(markup.source_code(SwAV, collapsed="SwAV (ftcl_core/methods/swav.py)"))
display(markup.source_code(base.predictive_scores, collapsed="BYOL's and SimSiam's scores with FT (eq. 3)"))

# %% [markdown]
# `moco_ft_logits` is MoCo's FT, unchanged: SimCLR reuses it with the bank for the queue and then drops
# each anchor's own and positive columns. Every random draw (λ, the permutation) comes from the run's one
# `torch.Generator`, so runs are deterministic on CPU and identical across ranks.
#
# ## Training each method, with and without FT
#
# The `cpu` profile runs each method at the scale of [its MoCo v2 run](#cpu-scale) (shapes, ResNet-10 width 16,
# 30 epochs, batch 256); each table's caption names the recipe its runs use, and whether it was {term}`calibrated`
# without FT ([The baselines, calibrated](#calibrated-baselines)) or is still the profile's original one. The `cpu` profile shows the stored runs, every
# seed, and names any setting that has none yet: the book never trains them
# (`python -m ftcl_core sweep experiments/supp_e_byol.yaml --seeds 0 1 2` does, resumably). The `smoke` and `gpu`
# profiles train the `seeds` asked for when missing. A symmetric loss encodes both views with gradients, so a
# step costs more than a MoCo step ([Several processes and GPUs](gpus.ipynb) measures how much).

# %%
import matplotlib.pyplot as plt
from IPython.display import display

from ftcl_core.runs import RunDir
from ftcl_core.study import experiment_file, store, sweeps, table_verdicts


def shown_records(path):
    if profile != "cpu":
        return sweeps.collect(path, profile, seeds, settings.get(path))
    return store.load_records(path, profile)  # every stored setting: the tables match chapter 9's


def caption(exp, records, columns=True):
    """A table's caption: what :func:`ftcl_core.experiments.table_facts` names, and (``columns``, the first table
    only) how to read its columns."""
    t = table_verdicts.table_facts(exp, profile, records)
    kind = {"calibrated": " (calibrated without FT)", "original": " (original recipe, not calibrated)"}
    key = (". ours: linear top-1 % (mean ± 95 % CI over n seeds); Δ: the paired difference against the row or reference "
           "named under 'vs', in points; paper: the paper's top-1 % (ImageNet-100 unless the title names another data "
           "set)") if columns else ". Columns as in the first table"
    return (f"{t['table']}: {t['title']}. {t['data']}; recipe {t['recipe']}{kind.get(t['recipe_kind'], '')}{key}")


records = {path: shown_records(path) for path in method_files}
summaries = {}
for i, (path, recs) in enumerate(records.items()):
    _, header, cells = table_verdicts.table_cells(experiment_file.Experiment.load(path), recs)
    display(markup.html_table(header, cells, caption=caption(experiment_file.Experiment.load(path), recs, columns=i == 0)))
    summaries[path] = table_verdicts.summarize(recs)

# %%
result_figures.experiment_grid([(experiment_file.Experiment.load(path), summaries[path]) for path in method_files],
                  titles=[experiment_file.Experiment.load(path).title.split(":")[0] for path in method_files])
plt.show()

# %% [markdown]
# The paper's numbers (orange diamonds, on their own axis at the right) are ImageNet scale (SimCLR and SimSiam: IN-100, 200 epochs;
# BYOL: IN-1K, 100 epochs; SwAV: IN-100 with multi-crop); compare directions, not levels. The red line is the randomly initialised
# encoder under the same {term}`linear readout`.
#
# ## Score statistics of each method
#
# The visualization tool needs no change: for SimCLR the negatives are the in-batch ones; for BYOL and
# SimSiam the "negative" scores are the cosines of a prediction to the other images' targets (for SwAV,
# of a feature to the other images' features), which the loss never sees. They are the collapse detector here: a collapsed encoder maps every image to one
# point and drives {term}`Mean(neg)` to 1.

# %%
for path in method_files:
    pick = {r["setting"]: RunDir(r["dir"]).load_metrics() for r in records[path] if r["seed"] == seeds[0]}
    run_figures.score_statistics(pick, columns=("pos_mean", "neg_mean", "neg_var"), title=experiment_file.Experiment.load(path).title.split(":")[0])
    plt.show()

# %% [markdown]
# (methods-answer)=
# ## What the runs say
#
# The reading rests on the stored runs of the `cpu` profile (3 seeds each), whatever profile this page ran with;
# [Results against the paper](09_results.ipynb) gives every verdict with its interval.

# %% tags=["remove-cell"]
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study.chapters import methods

glue_reading(methods.read())  # the authored reading rests on the stored cpu runs


# %% [markdown]
# **With negatives, positive extrapolation collapses SimCLR**, where MoCo's features only crowd. SimCLR's baseline reads
# {glue:md}`m_simclr_base` %. With {term}`+pos` it reads {glue:md}`m_simclr_pos` points against that baseline (the
# paper: {glue:md}`m_simclr_pos_paper`), with {term}`+both` {glue:md}`m_simclr_both` and with one $\lambda$ per
# dimension {glue:md}`m_simclr_both_dim`: opposite to the paper, all three. {term}`+neg` alone reads {glue:md}`m_simclr_neg`,
# an interval that holds both zero and the paper's {glue:md}`m_simclr_neg_paper`: {term}`undecided`. At the last step of
# the +pos run, {term}`Mean(pos)` reads {glue:md}`m_simclr_pos_last_pos_mean`, Mean(neg)
# {glue:md}`m_simclr_pos_last_neg_mean` and the loss {glue:md}`m_simclr_pos_last_loss`: with every logit equal, eq. 1
# reads $\ln(K + 1)$ = {glue:md}`m_constant_loss` for the $K$ = {glue:md}`m_negatives` in-batch negatives of an
# anchor. The encoder maps every image to one point.
#
# **SwAV loses too, without that collapse.** With +pos it reads {glue:md}`m_swav_pos` points (the paper:
# {glue:md}`m_swav_pos_paper`): opposite to the paper. Its features crowd together (Mean(neg), here the cosine of a feature with
# the other images' features, ends at {glue:md}`m_swav_pos_last_neg_mean`) without meeting at one point.
#
# **Without negatives, nothing is decided.** BYOL with +pos reads {glue:md}`m_byol_pos` points and SimSiam
# {glue:md}`m_simsiam_pos` (the paper: {glue:md}`m_byol_pos_paper` and {glue:md}`m_simsiam_pos_paper`): each interval
# holds both zero and the paper's gain, undecided. Their baselines learned little at this budget
# ({glue:md}`m_byol_base` and {glue:md}`m_simsiam_base` %, against {glue:md}`m_random_init` % for a random-init
# encoder: below the bar of [The baselines, calibrated](#calibrated-baselines)), so these two pairs say little about FT either
# way.
#
# **Reading the pattern.** For BYOL and SimSiam the loss is the positive score itself, which eq. 4 lowers, so
# extrapolation rescales what these methods already maximise rather than crowding the features together. At the
# calibration's short, shared budget the baselines of BYOL, SimSiam and SwAV learned far less than SimCLR's and
# MoCo v1's, and no knob searched without FT on a validation split lifted them to the bar this book sets for a baseline there: the trials
# are in `results/calibration.csv`, and each `configs/cpu_cal_*.yaml` says in its header which trial it keeps and
# why. [The same baselines at the tables' budget](#baselines-at-budget) judges the same bar at the tables' longer budget, where a slow starter can catch up.
#
# Training them with several processes and on a GPU, with where a step's time goes, is on
# [its own page](gpus.ipynb).
