# %% [markdown]
# # Momentum (Table 1)
#
# **At this scale {term}`readout` peaks at m = {glue:md}`mom_peak` as in the paper, but no momentum reads below a random
# encoder: the paper's fall of the small momenta {term}`below random init` (its "collapse") is not reproduced; a small
# momentum stalls learning instead.** In this chapter you will learn how MoCo's momentum shapes training, and how the
# paper's signs of that fall in the score statistics and the gradient landscape hold up here.
#
# MoCo's key encoder follows the query encoder slowly, $\theta_k \leftarrow m\theta_k + (1-m)\theta_q$
# (eq. 2). The paper sweeps $m$ for MoCo v1 (ResNet-18, ImageNet-100, 100 epochs, $\tau=0.07$) and
# finds (Table 1): with $m\le 0.5$ the run "collapses", the paper's word for a {term}`readout` {term}`below random init`
# (a randomly initialised encoder reads better; this book keeps *collapse* for features that all meet), accuracy rises
# with $m$ to 56.2 % at $m=0.99$, and $m=1$ (a frozen key encoder) falls back to 31.2 %. With the
# visualization tool (Figs 3-5) they tie collapse to the score statistics: small $m$ makes {term}`Mean(neg)` and
# {term}`Var(neg)` swing and the gradient landscape spiky.
#
# Here the same sweep runs on the embedded data with MoCo v1 at [the scale of the `cpu` profile](#cpu-scale). Each
# setting is an entry of the chapter's experiment file (named under *Try it*, at the foot of the page); the chapter
# trains what is missing and loads what is stored.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)
seeds = [0, 1, 2]
momenta = [0.5, 0.9, 0.99, 1.0]  # trained when missing
momenta_if_stored = [0, 0.3, 0.6, 0.7, 0.8, 0.999]  # loaded, never trained here
landscape_momenta = [0, 0.5, 0.9, 0.99, 1.0]  # gradient landscapes drawn (those stored)

# %%
import matplotlib.pyplot as plt
from IPython.display import display

from ftcl_core.pages import markup, result_figures, run_figures
from ftcl_core.pages.glue import glue_reading
from ftcl_core.runs import RunDir
from ftcl_core.study import diagnosis_readings, experiment_file, store, sweeps, table_verdicts
from ftcl_core.study.chapters import momentum

# the experiment file's setting names ("m=0.9"); kept out of the parameters cell, whose lines papermill parses
settings, shown_if_stored, landscapes = ([f"m={m}" for m in ms] for ms in (momenta, momenta_if_stored, landscape_momenta))
exp = experiment_file.Experiment.load("experiments/table1_momentum.yaml")
records = sweeps.sweep(exp.path, profile, seeds=seeds, settings=settings, progress=False)
if profile != "smoke":
    records += [r for r in store.load_records(exp.path, profile) if r["setting"] in shown_if_stored and r["seed"] in seeds]
records.sort(key=lambda r: (list(exp.settings).index(r["setting"]), r["seed"]))
summary = table_verdicts.summarize(records)
metrics = {r["setting"]: RunDir(r["dir"]).load_metrics() for r in records if r["seed"] == seeds[0]}


def caption(exp, records):
    """A table's caption: what :func:`ftcl_core.experiments.table_facts` names, and how to read its columns."""
    t = table_verdicts.table_facts(exp, profile, records)
    kind = {"calibrated": "; the recipe calibrated without FT", "original": "; the original recipe, not calibrated"}
    return (f"{t['table']}: {t['title']}. {t['data']}{kind.get(t['recipe_kind'], '')} (its file: Try it, below). ours: "
            "linear top-1 % (mean ± 95 % CI over n seeds); Δ: the paired difference against the row or reference named "
            "under 'vs', in points; paper: the paper's top-1 % on ImageNet-100 (the paper has no run on these data)")
# the runs the chapter's authored reading rests on: the stored runs of the cpu profile at the experiment's seeds,
# whatever profile and seeds this page ran with (the tables above show this run's)
stored = sorted((r for r in store.load_records(exp.path, "cpu", experiment_file.STORED)
                 if r["setting"] in settings + shown_if_stored and r["seed"] in exp.seeds),
                key=lambda r: (list(exp.settings).index(r["setting"]), r["seed"]))

# %% [markdown]
# ## The momentum update, in code
#
# Eq. 2 is two in-place operations over the key encoder's parameters: scale them by $m$, then add $1-m$ times the
# query encoder's. Look at what it leaves out: the batch-norm statistics, which each encoder keeps for itself. At
# $m=1$ the key encoder keeps its random initialisation; at $m=0$ it is a copy of the query encoder.

# %%
from ftcl_core.models import ema_update

display(markup.source_code(ema_update))

# %% [markdown]
# (momentum-figure)=
# ## Readout against the random-init baseline (Table 1)
#
# Every table of this book gives each setting a **verdict** on the paper's claim about it. We take the
# {term}`paired` difference over seeds against the setting's reference (here: the same seed's random-init encoder)
# and its 95 % t-interval [lo, hi], judged against the paper's own effect d where it states one
# (ftcl_core.study.results.verdicts), in words that say how big: **matches the paper** when the interval holds d and
# excludes zero, **larger than the paper** when it lies wholly beyond d, **smaller than the paper** when wholly between
# zero and d, **{term}`no effect of the paper's size`** when it holds zero but excludes d, **opposite to the paper**
# when it lies wholly on the other side of zero, and **{term}`undecided`** when it holds both, or rests on fewer than
# three seeds. Equivalence claims (Table 5, {term}`Supp F`) read **equivalent** / **not equivalent** against a stated
# margin ([Results against the paper](09_results.ipynb) has the rules in one table). Table 1's checks against the
# random-init encoder state no size, and are read on their sign. The first table below holds those checks, the second
# the paper's ordering of neighbouring momenta. [Results against the paper](09_results.ipynb) collects the verdicts of
# every table.

# %%
# two tables: each momentum against the random-init encoder (learns, or reads below it), then against the next smaller
# momentum (the paper's rise to 0.99 and fall after it); verdicts as in chapter 9
SPLIT = ((["sanity"], "each momentum against the same seed's random-init encoder"),
         (["ordering"], "each momentum against the next smaller one"))
for kinds, rows_are in SPLIT:
    _, header, cells = table_verdicts.table_cells(exp, records, kinds)
    head = caption(exp, records) if kinds == SPLIT[0][0] else "The same runs, columns as above"
    display(markup.html_table(header, cells, caption=f"{head}. Rows: {rows_are}"))
result_figures.experiment_bars(exp, summary)
plt.show()

# %% [markdown]
# Our readouts (blue, left axis) and the paper's (orange, right axis) sit on axes of their own: compare how each
# rises and falls across the momenta, not the levels, which belong to other data and another network. An orange
# cross marks a momentum the paper reports only as collapsed: below its own random-init encoder.
#
# ## Score statistics (Figs 3 and 5)

# %%
# one row per momentum of landscape_momenta, in colour over the other momenta in grey
close_up = [s for s in landscapes if s in metrics]
run_figures.score_statistics(metrics, highlight=close_up, others="the other momenta")
plt.show()
run_figures.score_trajectory_3d(metrics, highlight=close_up, others="the other momenta")
plt.show()

# %% [markdown]
# The first figure is the paper's Fig 5, the flat view of the statistics its Fig 3 draws in 3-D: each row is one
# momentum in colour, every other momentum of the sweep in grey behind it. The second is not in the paper: the same
# runs as paths through the three statistics at once. In the figures above (the embedded shapes),
# compare Mean(neg) at the small momenta with m = 0.99: the paper reads
# collapse off a Mean(neg) that stays high (the negatives far from uniformly spread) and swings from step to step.
# The volatility table at the end of the chapter puts a number on the swings of every momentum.
#
# **What the runs say.** The paragraphs below read the stored runs of the `cpu` profile.

# %% tags=["remove-cell"]
glue_reading(momentum.read(stored, seeds[0], landscapes))


# %% [markdown]
# Over the last {glue:md}`ends_window` steps of seed {glue:md}`ends_seed`, Mean(neg) ends highest at
# m = {glue:md}`ends_hi` ({glue:md}`ends_hi_neg`) and lowest at m = {glue:md}`ends_lo` ({glue:md}`ends_lo_neg`). With
# a frozen key encoder (m = 1) {term}`Mean(pos)` ends at {glue:md}`ends_frozen_pos`, against {glue:md}`ends_others_pos_lo` to
# {glue:md}`ends_others_pos_hi` at the other momenta; the key encoder never learns to agree with the query encoder.
#
# Every momentum the paper says learns does learn here, over {glue:md}`mom_seeds` seeds each: readout peaks at
# m = {glue:md}`mom_peak` ({glue:md}`mom_peak_readout` %, against {glue:md}`mom_random` % for the random-init
# encoder), and even a frozen key encoder (m = 1) reads {glue:md}`mom_frozen_readout` %. The paper's collapse of the
# small momenta, a readout {term}`below random init`, is not reproduced: they stay above the random-init encoder
# (m = {glue:md}`mom_collapse_m_0` by {glue:md}`mom_collapse_diff_0` points), so a small momentum stalls learning
# rather than destroying the features. Nor is the paper's sharp step up from m = {glue:md}`mom_edge` seen:
# m = {glue:md}`mom_first` reads {glue:md}`mom_step_diff` points against it, an interval that holds zero, though no
# larger momentum reads below it.
# The table above gives each momentum's verdict.
#
# The m = 0.99 runs are the same recipe and seeds as the MoCo v1 baseline of
# [Feature transformations in training](06_feature_transformations.ipynb), yet they read {glue:md}`twin_a_mean` %
# here and {glue:md}`twin_b_mean` % there: the two were trained on different processors ({glue:md}`twin_a_machine` here,
# {glue:md}`twin_b_machine` there), which round floating-point sums differently, and a run's path drifts from its
# first steps (one seed by up to {glue:md}`twin_most` points). The gap of the means, {glue:md}`twin_gap` points, lies
# well inside either's 95 % interval (± {glue:md}`twin_ci` at the narrowest); a comparison in this book pairs runs of
# one machine where it can, and marks the pairs it cannot.

# %% [markdown]
# ## Harder positives: from momentum to FT (Sec 3.3)
#
# The paper draws one more lesson from the sweep, and its method is built on it. The smaller the momentum, the more
# the key encoder resembles the query encoder, so the two views of an image differ only by their augmentations and
# score high: an *easy* positive pair. Raising $m$ from 0.9 to 0.99 lowers Mean(pos) from about 0.9 to about 0.7
# (the paper's Fig 5c) and raises readout from 46.5 to 56.2 %: harder positives, better features, though only up to a
# point, since a frozen key encoder ($m = 1$) gives the hardest positives of all and falls back to 31.2 %.

# %% [markdown]
# The same happens here. Averaged over the whole run, Mean(pos) reads {glue:md}`hard_pos_easy` at m = 0.9 and
# {glue:md}`hard_pos_hard` at m = 0.99, lower in each of the {glue:md}`hard_seeds` seeds (the first figure of
# *Score statistics* draws both, step by step). Readout reads
# {glue:md}`rise_diff` points higher at m = 0.99, paired by seed (the paper: {glue:md}`rise_effect`):
# {glue:md}`rise_verdict`: over {glue:md}`hard_seeds` seeds the interval holds the paper's rise and excludes no
# change. The limit shows here too: the frozen key encoder's positives end the hardest (Mean(pos)
# {glue:md}`ends_frozen_pos`), and it reads {glue:md}`mom_frozen_readout` % against {glue:md}`mom_peak_readout` % at
# m = {glue:md}`mom_peak`.
# Positive extrapolation ([the extrapolation bound](learn5_ft.ipynb)) makes the positives harder on purpose, by lowering their
# score directly, and leaves the momentum at 0.99, where the negatives stay consistent.

# %% [markdown]
# ## The same sweep on real images (Fashion-MNIST)
#
# The same sweep runs six of the momenta (0, 0.5, 0.9, 0.99, 0.999, 1) on
# Fashion-MNIST's photographs, on the MoCo v1 recipe {term}`calibrated` there without {term}`FT` (its m = 0.99). On this data a third reference matters: the linear
# probe on the raw pixels, drawn beside the random-init encoder; an encoder is worth something only above it.
# Stored runs only: this page never trains them (the command that does is under *Try it*).

# %%
fm_exp = experiment_file.Experiment.load("experiments/table1_momentum_fmnist.yaml")
fm_records = store.load_records(fm_exp.path, profile) if profile != "smoke" else []
if fm_records:
    for kinds, rows_are in SPLIT:
        _, header, cells = table_verdicts.table_cells(fm_exp, fm_records, kinds)
        head = caption(fm_exp, fm_records) if kinds == SPLIT[0][0] else "The same runs, columns as above"
        display(markup.html_table(header, cells, caption=f"{head}. Rows: {rows_are}"))
    result_figures.experiment_bars(fm_exp, table_verdicts.summarize(fm_records))
    plt.show()
else:
    display(markup.markdown_html("No stored runs of `experiments/table1_momentum_fmnist.yaml` for this profile yet."))

# %% [markdown]
# On the photographs too, every momentum the paper says learns reads out above the random-init encoder and above
# m = {glue:md}`fm_edge`, over {glue:md}`fm_seeds` seeds each; readout peaks at m = {glue:md}`fm_peak`
# ({glue:md}`fm_peak_readout` %, against {glue:md}`fm_random` % for the random-init encoder). Whether the small
# momenta read below random init cannot be told: their readout cannot be told from the random-init encoder's
# (m = {glue:md}`fm_collapse_m_0` by {glue:md}`fm_collapse_diff_0` points, an interval that holds zero). The linear
# probe on the raw pixels ({glue:md}`fm_probe` %) sets a higher bar: at m = {glue:md}`fm_pixels_below` the encoder
# reads below it, worth less than the pixels it is given.

# %% [markdown]
# ## Gradient landscapes (Fig 4, Supp C)
#
# The paper draws each momentum's landscape (every layer's gradient norm in every epoch, [Reading a run](learn3_reading.ipynb)) as a 3-D surface
# and calls the small momenta's spiky. The spikes are what changes from epoch to epoch, so below each landscape is
# summed over its layers into one curve: one panel per momentum, in colour, the other momenta in grey.

# %%
drawn = [r for r in records if r["seed"] == seeds[0] and r["setting"] in landscapes]
run_figures.grad_norm_epochs({r["setting"]: RunDir(r["dir"]).load_grad_norms()["per_epoch"] for r in drawn})
plt.show()

# %% [markdown]
# In seed {glue:md}`ends_seed`, every momentum up to 0.9 jumps from epoch to epoch more than m = 0.99 and m = 1 do
# (the largest swing, the standard deviation of the epoch-to-epoch change, at m = {glue:md}`spikes_most`:
# {glue:md}`spikes_most_sd`; the smallest at m = {glue:md}`spikes_least`: {glue:md}`spikes_least_sd`): the spiky
# landscape of the paper's small momenta, which the table below measures over every seed.

# %% [markdown]
# ## Volatility
#
# The paper reads collapse off the swings of the statistics (Figs 3-4). One number for each: the standard
# deviation of the step-to-step change of Mean(neg), and of the epoch-to-epoch change of the summed gradient norm,
# averaged over the stored seeds of each momentum.

# %%
volatility = diagnosis_readings.volatility_rows(records)
display(markup.html_table(["setting", "seeds", "sd of step change in Mean(neg)", "sd of epoch change in total grad norm"],
                     [[v["setting"], str(v["n_seeds"]), f"{v['neg']:.4f}", f"{v['grad']:.4f}"] for v in volatility],
                     caption="Each momentum on the embedded shapes, mean over seeds"))

# %% [markdown]
# The summed gradient norm swings more at every momentum up to 0.9 ({glue:md}`vol_grad_small_lo` to
# {glue:md}`vol_grad_small_hi`) than at any larger one ({glue:md}`vol_grad_large_hi` at most), as the paper reads
# its figures. But it does not grow as m shrinks, as the paper's reading would have it: m = {glue:md}`vol_grad_smallest`
# swings {glue:md}`vol_grad_smallest_sd`, the least of the small momenta, and the swing peaks at
# {glue:md}`vol_grad_most`. Mean(neg) goes against the paper's reading: it swings most at {glue:md}`vol_neg_most` and
# least at {glue:md}`vol_neg_least`. At m = 1 the key encoder never leaves its random initialisation, so each
# batch's keys score the queries by how the batch happens to fall, a noise no training smooths out.

# %% [markdown]
# ## Exercises
#
# 1. Before you look at *Score statistics*: what Mean(pos) do you expect at $m = 0$, and at $m = 1$? Reason from
#    eq. 2 alone.
# 2. Eq. 2 is an exponential moving average. After how many steps has the key encoder forgotten half of where it
#    started, at $m = 0.99$ and at $m = 0.999$? An epoch here is {glue:md}`ema_steps_per_epoch` steps.
#
# :::{admonition} Answers
# :class: dropdown
#
# 1. At $m = 0$ the key encoder is a copy of the query encoder at every step, so a positive pair differs only by its
#    two augmentations: Mean(pos) high, an easy pair. At $m = 1$ the key encoder keeps its random initialisation,
#    so a query from the trained encoder meets a key from a random one: Mean(pos) low. The runs agree: the frozen
#    key encoder ends at {glue:md}`ends_frozen_pos`, every other momentum between {glue:md}`ends_others_pos_lo` and
#    {glue:md}`ends_others_pos_hi`.
# 2. After $t$ steps the starting weights keep a share $m^t$, which is one half at $t = \ln 2 / (-\ln m)$: about
#    {glue:md}`ema_half_99` steps at $m = 0.99$ (some {glue:md}`ema_half_99_epochs` epochs here) and
#    {glue:md}`ema_half_999` at $m = 0.999$ (some {glue:md}`ema_half_999_epochs`). In a run of {glue:md}`ema_epochs`
#    epochs the key encoder at 0.999 trails the query encoder by a large part of the run.
# :::

# %% [markdown]
# (try-it-05)=
# ## Try it
#
# The sweep is `experiments/table1_momentum.yaml`, one entry a momentum on the recipe `configs/cpu_cal_moco_v1.yaml`
# (calibrated without FT); `.venv/bin/python -m ftcl_core sweep experiments/table1_momentum_fmnist.yaml` trains the
# Fashion-MNIST sweep this page only reads.
#
# * **The `landscape_momenta` parameter.** `.venv/bin/papermill book/05_momentum.ipynb /tmp/05_momentum.ipynb -y
#   "landscape_momenta: [0.5, 0.99]" --cwd book` draws only those two momenta in colour, and their summed gradient
#   norms in one panel. The paper expects the smaller momentum's to be the spikier; the table of *Volatility* says
#   whether the summed gradient norm bears that out here.
# * **The `profile` parameter.** `.venv/bin/papermill book/05_momentum.ipynb /tmp/05_momentum.ipynb -p profile smoke
#   --cwd book` trains the sweep at smoke scale in seconds to a minute, while the paragraphs with numbers still read
#   the stored `cpu` runs (as *Score statistics (Figs 3 and 5)* says). Compare the smoke
#   figures with the stored ones: the reading of the text belongs to the `cpu` runs only.
# * **A config key, `moco.momentum`.** `.venv/bin/python -m ftcl_core train configs/cpu_cal_moco_v1.yaml
#   moco.momentum=0.95 --out runs/try-m` trains a momentum the sweep leaves out, and writes its readout to the run
#   folder's `eval.json`. Place it on the Table 1 figure of {ref}`momentum-figure`, whose text says where readout
#   peaks here.
