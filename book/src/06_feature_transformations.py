# %% [markdown]
# # Feature transformations in training
#
# **From the first step, positive extrapolation costs MoCo {term}`readout` here ({glue:md}`t7_v1_pos` points with
# {term}`+pos` alone, where the paper gains {glue:md}`t7_v1_pos_paper`): the encoder undoes the harder positive and
# crowds every image together to do it.** In this chapter you will learn how the feature transformations act inside
# MoCo's loss, what they do to the readout and to the score statistics, and how to recognise crowding in those statistics.
#
# The paper's central claim (Sec 4, Table 7): on ImageNet-100, positive extrapolation and negative
# interpolation each improve MoCo's {term}`linear readout`, together more than either alone, for MoCo v1 and v2, and
# more still with one $\lambda$ per dimension (the paper's numbers: the orange diamonds below). Here the same switches run on the embedded data,
# as the released code applies them (`ftcl_core.losses.moco_ft_logits`): on the normalised features
# inside the loss, one $\lambda_{ex}\sim\mathrm{Beta}(2,2)+1$ and one $\lambda_{in}\sim\mathrm{Beta}(1.6,1.6)$
# per step, no re-normalisation, the extrapolated query also against the negatives, gradient through the
# mixed key, clean keys enqueued.
#
# Here one of the two carries the cost: {term}`+pos` (positive extrapolation alone) costs readout and {term}`+neg`
# (negative interpolation alone) cannot be told from no change (*Table 7 as a figure* below); the score statistics
# show why ([the mechanism](#mechanism)).
#
# Each table is an experiment file under `experiments/`; `python -m ftcl_core sweep FILE` trains it.
# This chapter trains the `train` list below if runs are missing and draws every other table for which
# stored runs exist. It shows what the numbers look like and what {term}`FT` does to the scores; the tables themselves,
# each claim with its interval and verdict, are in [Results against the paper](09_results.ipynb), and
# [When does feature transformation help?](07a_when_ft_helps.ipynb) asks when FT helps.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)
seeds = [0]
train = ["experiments/table7_ft_v1.yaml", "experiments/table7_ft_v2.yaml"]
show = ["experiments/table2_alpha_ex.yaml", "experiments/table4_alpha_in.yaml",
        "experiments/table3_interp_vs_extrap.yaml", "experiments/table5_queue.yaml",
        "experiments/table6_start_epoch.yaml", "experiments/supp_f_renorm.yaml",
        "experiments/supp_g_negatives.yaml",
        # the same tables on Fashion-MNIST's real photographs, where runs exist (chapter 9 sets the verdicts side by side)
        "experiments/table7_ft_v1_fmnist.yaml", "experiments/table7_ft_v2_fmnist.yaml",
        "experiments/table6_start_epoch_fmnist.yaml"]

# %%
import matplotlib.pyplot as plt
from IPython.display import display

from ftcl_core.pages import markup, result_figures, run_figures
from ftcl_core.runs import RunDir
from ftcl_core.study import experiment_file, store, sweeps, table_verdicts

records = {}
for path in train:  # the seeds asked for are trained when missing; other stored seeds are shown too
    records[path] = sweeps.collect(path, profile, seeds)
for path in show:  # every stored run, never trained here
    found = store.load_records(path, profile) if profile != "smoke" else []
    if found:
        records[path] = found


summaries = {path: table_verdicts.summarize(recs) for path, recs in records.items()}

# %% [markdown]
# ## FT inside the loss, in code
#
# The switches of these tables are the fields of `FTConfig`. Each transformation is one short function of
# `ftcl_core/transforms.py` that cites its equation. First, positive extrapolation:

# %%
from ftcl_core import losses, transforms

display(markup.source_code(transforms.extrapolate_positive))

# %% [markdown]
# Look at the `return` line: with $\lambda > 1$ the query moves past itself, away from its key (and the key away
# from the query), so the pair the loss must match is harder. Then negative interpolation:

# %%
display(markup.source_code(transforms.interpolate_negatives))

# %% [markdown]
# Look at `queue[perm]`: each negative is mixed with another negative of the queue, never with the query or its
# key, so the positive pair stays as it was. MoCo's scores call `moco_ft_logits`, which draws the $\lambda$s and
# applies both to the normalised query, key and queue just before the logits (folded below: it also checks its
# inputs and handles shards and one $\lambda$ per dimension).

# %%
display(markup.source_code(losses.moco_ft_logits, collapsed="moco_ft_logits: where MoCo's loss applies both"))

# %% [markdown]
# ## Table 7 as a figure

# %%
path = train[0]
exp, s = experiment_file.Experiment.load(path), summaries[path]
result_figures.experiment_bars(exp, s)
plt.show()

# %% tags=["remove-cell"]
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study import evidence
from ftcl_core.study.chapters import feature_transformations

# the authored reading rests on the stored cpu runs, whatever profile this page ran with (results/summary.csv)
glue_reading(feature_transformations.read(evidence.Evidence.load("cpu")))


# %% [markdown]
# Positive extrapolation alone carries FT's cost here: MoCo v1 with {term}`+pos` alone reads {glue:md}`t7_v1_pos` points
# against its baseline (the paper: {glue:md}`t7_v1_pos_paper`), with {term}`+neg` alone {glue:md}`t7_v1_neg`, an
# interval that holds zero (the paper: {glue:md}`t7_v1_neg_paper`).

# %% [markdown]
# ## The other tables as figures
#
# One panel per experiment with stored runs: the blue points are our readout (mean ± 95 % CI over seeds), the dashed
# line the random-init encoder, the orange diamonds the paper's ImageNet-100 numbers on their own axis at the right
# (another scale: compare their pattern across settings, not their levels).

# %%
others = [p for p in records if p != train[0]]
if others:
    result_figures.experiment_grid([(experiment_file.Experiment.load(path), summaries[path]) for path in others])
    plt.show()

# %% [markdown]
# **Reading the pattern.** Two kinds of transformation are worth telling apart in the figures above: those that
# make a pair harder, by moving the query away from its key (positive extrapolation, at any $\alpha_{ex}$, with or
# without re-normalisation) or a negative towards the query (negative extrapolation, hard negatives), and negative
# interpolation alone, which mixes two negatives and leaves the positive pair as it is. Re-normalising after FT
# ({term}`Supp F`) tests whether the growth of $\|\hat z_q\|$ beyond one (sharper logits) is what costs readout: it removes
# that growth, though for a trained encoder's positives it makes the pair harder still
# ([What re-normalisation and dimension-level mixing change](#renormalisation)). For mixed negatives it undoes
# their shrinking, and [Is it how hard the negatives are?](07i_negatives.ipynb) measures what that does to the scores
# the loss sees. [Results against the paper](09_results.ipynb) gives every claim of these tables with its interval and
# verdict.

# %% [markdown]
# (mechanism)=
# ## The mechanism: the encoder undoes the harder positive
#
# The statistics show the mechanism. Below, the raw cosines (what the encoder really produces) for the
# baseline and every FT setting of the first table (Table 7, MoCo v1, one seed), then the scores after FT (what
# the released code recorded). In this seed, with positive extrapolation from the first step, {term}`Mean(neg)` of the raw
# cosines rises towards one
# within the first steps and {term}`Var(neg)` falls towards zero: for a while the images sit near one point, the
# effect the paper reports in Supp D (FT at epoch 0 on a randomly filled queue pushes the negative scores
# up). The table of {term}`concentration signatures <concentration signature>` further down gives, for every setting, the step at which Mean(neg)
# passes 0.9 and where it ends, beside its readout. [Why does FT from the first step cost?](07b_gradient.ipynb)
# derives what positive extrapolation does to the gradient, [Is it our recipe?](#recipe-changes) tests whether the
# cost survives baselines {term}`calibrated` without FT, and [the phase diagram](#phase-diagram) maps when a later
# start helps.

# %%
recs = records[train[0]]
pick = {r["setting"]: RunDir(r["dir"]).load_metrics() for r in recs if r["seed"] == seeds[0]}
run_figures.score_statistics(pick, columns=("pos_mean", "neg_mean", "neg_var"))
plt.show()
run_figures.score_statistics(pick, columns=("ft_pos_mean", "ft_neg_mean", "ft_neg_var"))  # the baseline too: same colours
plt.show()

# %% [markdown]
# **The encoder undoes the harder positive, and crowds every image together to do it.** Look at {term}`Mean(pos)`
# and {term}`Mean(neg)` in the two figures. Write $S = z_q\cdot z_k$ for the raw cosine of a unit query and its key,
# and $\hat S$ for their score after extrapolation (not re-normalised, so not a cosine). Eq. 4 can be written
# $\hat S = 1 - A\,(1 - S)$ with $A = 1 + 2\lambda(\lambda - 1) \ge 1$ (on average $2.6$ for the paper's $\lambda \sim 1 + \mathrm{Beta}(2, 2)$):
# extrapolation multiplies a pair's gap to a perfect score by $A$. The encoder answers by shrinking the gap itself.
# Over the last {glue:md}`undone_tail` steps of MoCo v1 with positive extrapolation alone ({glue:md}`undone_seeds`
# seeds), an image's two views reach a raw Mean(pos) of {glue:md}`undone_arm_pos`, against
# {glue:md}`undone_ref_pos` without FT, so even after extrapolation the pair scores {glue:md}`undone_arm_ft`, where
# the baseline's raw pair scores {glue:md}`undone_ref_pos`: the harder positive is undone. But every other image comes close too: raw Mean(neg) ends at {glue:md}`undone_arm_neg`, against
# {glue:md}`undone_ref_neg`. InfoNCE rewards the margin between a positive and the negatives, and after the
# transformation that margin ends at {glue:md}`undone_arm_margin`, against {glue:md}`undone_ref_margin` without FT, in
# every seed. Features that bring all images near one another leave a linear probe less to separate: +pos alone
# reads {glue:md}`t7_v1_pos` points against its baseline.
#
# The early rise of Mean(neg) in the first figure, which the paper reports in Supp D, is this crowding at its
# strongest. [Does FT help once there is room to help?](#the-crowding) follows it on a task with room to help: there FT
# costs wherever the images crowd as it switches on, and gains where they do not, as when it is switched on late in a longer run.

# %% [markdown]
# ## The concentration signature of every setting
#
# The same reading for every stored setting (its lowest seed), in numbers from
# `ftcl_core.study.signatures.signature_rows`: its linear top-1, the share of its baseline's gain over a
# random-init encoder that it keeps, the first step at which Mean(neg) of the raw cosines passes
# {glue:md}`sig_level` (at that step the negatives score nearly as high as the positive: the features sit near one
# direction), the smallest Var(neg) of the first 100 steps, and where Mean(neg) and Var(neg) end.

# %%
from ftcl_core.study import signatures


def cell(x, digits):
    return "" if x is None else f"{x:.{digits}f}"


sig_rows = [[r["table"], r["setting"], cell(r["linear"], 1), cell(None if r["kept"] is None else 100 * r["kept"], 0),
             "never" if r["first_step_above"] is None else str(r["first_step_above"]), cell(r["early_min_var"], 4),
             cell(r["final_neg_mean"], 3), cell(r["final_neg_var"], 4)] for r in signatures.signature_rows(records)]
markup.html_table(["table", "setting", "linear", "gain kept (%)", "Mean(neg) > 0.9 at step", "min early Var(neg)",
              "final Mean(neg)", "final Var(neg)"], sig_rows,
             caption="Each setting's lowest seed: its linear top-1 %, the share of its baseline's gain over a "
                     "random-init encoder it keeps, and the statistics of its raw cosines",
             collapsed=f"The concentration signature of every stored setting ({len(sig_rows)} settings)")

# %% [markdown]
# Passing {glue:md}`sig_level` marks an early concentration, not a lost readout: it is neither needed nor enough.
# Say a run *loses most of its readout* when it keeps less than {glue:md}`sig_kept_share` % of its baseline's gain
# over a random-init encoder. In the stored runs (lowest seeds), {glue:md}`sig_lost` of the {glue:md}`sig_compared`
# rows with a baseline lose most of it, and {glue:md}`sig_lost_never` of those never pass the level
# ({glue:md}`sig_lost_never_names`); {glue:md}`sig_passed_kept` of the {glue:md}`sig_passed` rows that pass it keep
# most of their readout ({glue:md}`sig_passed_kept_names`). [Can the first 100 steps tell?](07h_first_steps.ipynb)
# asks a milder question, whether the first 100 steps can tell a run that will read below its baseline at all.

# %% [markdown]
# ## Gradient landscapes: baseline against +both
#
# Each run's gradient landscape ([Reading a run](learn3_reading.ipynb)) summed over its layers, epoch by epoch: the
# curve whose swings the paper reads as a spiky landscape ([Momentum (Table 1)](05_momentum.ipynb)).

# %%
pair_names = [next(iter(pick)), [k for k in pick if k.endswith("+both")][0]]
run_figures.grad_norm_epochs({name: RunDir(next(r for r in recs if r["setting"] == name and r["seed"] == seeds[0])["dir"])
                    .load_grad_norms()["per_epoch"] for name in pair_names})
plt.show()

# %% [markdown]
# In seed 0, {glue:md}`swing_most`'s summed norm swings more from epoch to epoch than {glue:md}`swing_least`'s (the
# standard deviation of its epoch-to-epoch change {glue:md}`swing_most_sd` against {glue:md}`swing_least_sd`), the
# paper's sign of an unstable run. That is one seed, read against its own scale: whether FT from the first step makes
# training jumpier in general, these runs do not test.

# %% [markdown]
# (try-it-06)=
# ## Try it
#
# * **The `seeds` parameter.** `.venv/bin/papermill book/06_feature_transformations.ipynb
#   /tmp/06_feature_transformations.ipynb -y "seeds: [1]" --cwd book` draws the statistics and the gradient landscapes
#   of seed 1 (trained if missing). The text reads the concentration in seed 0: see whether Mean(neg) of the raw cosines
#   again rises towards one under positive extrapolation from the first step, and read why in *A concentrated state:
#   does it attract or repel?* of [Why does FT from the first step cost?](07b_gradient.ipynb).
# * **A config key, `ft.pos`.** `.venv/bin/python -m ftcl_core train configs/cpu_cal_moco_v1.yaml ft.pos=true --out
#   runs/try-pos` adds positive extrapolation to the calibrated MoCo v1 baseline. Expect the signature the section
#   *The concentration signature of every setting* tabulates, and find whether it survives the calibrated baselines in
#   {ref}`recipe-changes`.
# * **A config key, `ft.start_epoch`.** `.venv/bin/python -m ftcl_core train configs/cpu_cal_moco_v1.yaml ft.pos=true
#   ft.neg=true ft.start_epoch=15 --out runs/try-late` switches FT on only at epoch 15, after the randomly filled
#   queue of the first steps that Supp D blames is gone. {ref}`phase-diagram` and its section *Where the runs stand
#   when FT switches on* say when a later start helps.
