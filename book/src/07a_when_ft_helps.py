# %% [markdown]
# # When does feature transformation help?
#
# **From the first step, nowhere at this scale; switched on after 30 % of the run or later, in a few places.**
# {term}`FT` ({term}`+pos` {term}`+neg`, the paper's settings) switched on at the first step costs {term}`readout`
# under every change of the recipe tried; a {term}`late start` avoids most of that cost and helps in a few cells of
# the phase diagram below, on the shapes near the ceiling and on the task with room of
# [Does FT help once there is room to help?](11_headroom.ipynb).

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %% tags=["hide-input"]
import matplotlib.pyplot as plt

from ftcl_core.pages import findings as findings_figure
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study import evidence
from ftcl_core.study.chapters import when_ft_helps

ev = evidence.Evidence.load(profile if profile != "gpu" else "cpu")  # the pairs below (smoke: trains tiny ones)
findings_figure.draw_phase_diagram(ev, False, title="MoCo v1: FT minus the same run without FT (linear top-1, points)",
                                   column=lambda f: f"FT from {f:.0%} of the run" if f else "FT from the start",
                                   footnote="\N{DAGGER} Judged on the error scale: near a perfect score, the share of test errors FT removes decides, not points.")
plt.show()

# %% tags=["remove-cell"]
# the answer rests on the stored runs of the cpu profile, whatever profile this page ran with
stored = ev if profile == "cpu" else evidence.Evidence.load("cpu")
glue_reading(when_ft_helps.read(stored))  # the index and chapter 1 paste its numbers too (book/findings.md)


# %% [markdown]
# Each cell is FT minus the same run without FT, {term}`paired` by seed, with its {term}`verdict` against the paper's
# own effect, in words that say how big: *matches the paper* (our interval holds its effect and excludes zero),
# *larger* or *smaller than the paper*, *{term}`no effect of the paper's size`*, *opposite to the paper* (wholly on
# the other side of zero), or *{term}`undecided`* ([Results against the paper](09_results.ipynb) gives the rules in one table). Near a
# perfect score a gain in points is capped by the baseline's few errors, so there the verdict is read on the
# {term}`error scale`, the ratio of FT's test errors to its baseline's.
#
# The pages that follow each test one candidate cause of the cost, FT against a baseline of the same seeds:
#
# * [why FT from the first step costs](07b_gradient.ipynb): the gradient's algebra and where training sits;
# * [whether it is our recipe](07c_recipe.ipynb): the calibration, the initialisation, false negatives, one λ per batch;
# * [whether it is the network](07d_network.ipynb): wider and deeper encoders;
# * [whether it is the synthetic data](07e_photographs.ipynb): Fashion-MNIST's photographs;
# * [whether a longer run removes it](07f_length.ipynb): four and eight times the steps;
# * [when to switch FT on](07g_switch_on.ipynb): the phase diagram and where the runs stand at the switch;
# * [whether the first 100 steps can tell](07h_first_steps.ipynb): a predictor of the cost;
# * [whether it is how hard the negatives are](07i_negatives.ipynb): {term}`Supp F` and {term}`Supp G`.
#
# What none of them ran is on [one page](open_questions.ipynb).

# %% [markdown]
# (answer)=
# ## The answer
#
# The answer rests on the stored runs of the `cpu` profile (3 seeds each), whatever profile this page ran with.
# Every number below is glued from them, and the hidden cells check each sentence against the stored verdicts.
#
# **Positive extrapolation alone carries FT's cost.** On the shapes, MoCo v1 with {term}`+pos` alone reads
# {glue:text}`t7_v1_pos` points against its baseline (the paper: {glue:text}`t7_v1_pos_paper`), and with {term}`+neg`
# alone {glue:text}`t7_v1_neg`, an interval that holds zero; with both, {glue:text}`t7_v1_both`. Moving the query
# away from its key is what costs here, not mixing the negatives.
# <!-- checks: positive-mixing-costs -->
#
# **From the first step, FT costs readout on the shapes.** In each of {glue:text}`first_n` comparisons that change one
# part of the {term}`calibrated` recipe (the recipe itself, MoCo v2, Kaiming initialisation, no same-class negatives, 30
# classes, one λ per shard), FT minus its baseline lies between {glue:text}`first_least` and {glue:text}`first_most`
# points. Each part was changed alone: what this shows is that no single one of these changes removes the cost,
# not that none of them matters. The network stayed the small ResNet-10 except in the capacity runs.
# <!-- checks: first-step-costs -->
#
# **On Fashion-MNIST the linear cost is too small to tell from zero.** The pair reads {glue:text}`first_real` points
# at 10 epochs and {glue:text}`first_real_longer` at 30, {term}`no effect of the paper's size`; but raw pixels read
# {glue:text}`fm_pixels` %, a random-init encoder {glue:text}`fm_random` % and the baselines {glue:text}`fm_base_lo`
# to {glue:text}`fm_base_hi` %, so these 28-px greyscale photographs leave little room. The {term}`kNN readout` does lose
# ({glue:text}`knn_real` and {glue:text}`knn_real_longer`).
# <!-- checks: photos-no-gain, photos-little-room, photos-knn-costs -->
#
# **The algebra is consistent with an early attraction.** It is a linearisation about a concentrated state, not a
# model of training: it speaks to how a concentration starts in the first steps after FT switches on, not to how long
# it lasts. The runs agree with it: at the first step $\rho$ is at most {glue:text}`rho_first`, inside
# or below the band {glue:text}`band_lo` to {glue:text}`band_hi` where FT makes concentration attract, and with FT
# from the first step {term}`Mean(neg)` of the raw cosines peaks at {glue:text}`peak_first` (the baselines' own early peak,
# while the queue fills with the first keys: {glue:text}`peak_base_shapes` on the shapes, {glue:text}`peak_base_photos`
# on the photographs); switched on after 30 % of the run or later, $\rho$ stands at {glue:text}`rho_late_lo` to
# {glue:text}`rho_late_hi` (above the band in {glue:text}`rho_late_above` of {glue:text}`rho_late_n` cells) and
# Mean(neg) peaks at {glue:text}`peak_late` at most. It does not say how much readout the concentration costs: the photographs
# concentrate as far ({glue:text}`peak_first_photos` against {glue:text}`peak_first_shapes` on the shapes) with a
# linear cost too small to see.
# <!-- checks: rho-below-band-first, rho-above-band-late, photos-concentrate-as-far -->
#
# **Switched on after 30 % of the run or later, FT avoids most of the cost and sometimes helps.** It helps in
# {glue:text}`helps` of the {glue:text}`cells` decided cells of the phase diagram, all late starts, among them the task
# with room of [Does FT help once there is room to help?](11_headroom.ipynb): {glue:text}`hr_both_late_120_diff`
# points at 120 epochs and {glue:text}`hr_both_late_240_diff` at 240 ({glue:text}`hr_both_late_240_verdict`).
# Table 6's epoch 1 (3 % of the run) is too early: on the shapes it still reads {glue:text}`start_3pc` points. The
# {term}`kNN readout` loses in some late cells of the shapes and Fashion-MNIST, and takes the {term}`linear readout`'s side
# on the task with room (the fold below).
# <!-- checks: late-helps-where-stated, late-avoids-most, epoch-one-too-early, knn-late-mixed, headroom-knn-late-follows-linear -->
#
# :::{admonition} Each cell where FT helps, and the kNN readout
# :class: dropdown
#
# * Shapes, 120 epochs, FT from 30 % of the run: {glue:text}`phase_shapes_120_30` points, larger than the paper on
#   the {term}`error scale` ({glue:text}`phase_shapes_120_30_fewer_errors` % fewer test errors than its baseline,
#   where the paper's start has {glue:text}`phase_shapes_120_30_paper_fewer_errors` % fewer). Near the ceiling a gain
#   in points is bounded by the baseline's few errors, so there the verdict is read on the error scale
#   ([Results against the paper](09_results.ipynb)).
# * Fashion-MNIST, 30 epochs, FT from 30 % of the run: {glue:text}`phase_fmnist_30_30` points, smaller than the paper.
# * Fashion-MNIST, 30 epochs, FT from 80 % of the run: {glue:text}`phase_fmnist_30_80` points, smaller than the paper.
# * The task with room, FT from 30 % of the run: {glue:text}`hr_both_late_120_diff` points at 120 epochs (smaller
#   than the paper) and {glue:text}`hr_both_late_240_diff` at 240 ({glue:text}`hr_both_late_240_verdict`).
#
# The kNN readout loses in {glue:text}`knn_late_lose` of the {glue:text}`late_cells` late cells of the phase diagram,
# by {glue:text}`knn_late_lose_least` to {glue:text}`knn_late_lose_most` points, and gains in
# {glue:text}`knn_late_gain` (shapes, 120 epochs, FT from 30 % of the run: {glue:text}`phase_knn_shapes_120_30`);
# at Table 6's epoch 1 it reads {glue:text}`start_3pc_knn`. On the task with room it takes the linear readout's side
# at every length: FT from 30 % of the run reads {glue:text}`hr_both_late_30_knn` points at 30 epochs,
# {glue:text}`hr_both_late_120_knn` at 120 and {glue:text}`hr_both_late_240_knn` at 240.
# :::
#
# **Four times the steps narrow the gap in points, not the damage.** On the shapes, four times the steps take FT's
# first-step cost from {glue:text}`short_cost` to {glue:text}`long_cost` points ({glue:text}`length_gain` paired by
# seed; these pairs trained mostly on a GPU, so their 30-epoch arms are not the CPU runs above), but the baseline
# nears the ceiling: FT gets {glue:text}`short_ratio` times as many test images wrong as its baseline at
# {glue:text}`short_steps` steps and {glue:text}`long_ratio` times at {glue:text}`long_steps`, and FT at
# {glue:text}`long_steps` steps ({glue:text}`long_ft` %) stays below the baseline at {glue:text}`short_steps`
# ({glue:text}`short_base` %).
# <!-- checks: length-narrows-not-damage -->
#
# **Eight times the steps shrink the cost in points, not in errors.** At {glue:text}`longest_epochs` epochs
# ({glue:text}`longest_steps` steps), FT minus its baseline reads {glue:text}`longest_cost` points (opposite to the
# paper on the error scale), and FT gets {glue:text}`longest_ratio` times as many test images wrong as its baseline, fewer than the
# {glue:text}`long_ratio` times at {glue:text}`long_steps` steps; against {glue:text}`short_epochs` epochs the longer
# run narrows FT's cost ({glue:text}`longest_gain` points, paired by seed). The paper's Table 6 runs take
# {glue:text}`paper_steps_lo` to {glue:text}`paper_steps_hi` steps; whether such runs turn the cost into a gain
# is one of the [open questions](open-questions).
# <!-- checks: longest-opposite-on-errors, longest-fewer-errors-than-long, longest-shrinks-points-not-errors, paper-runs-longer -->
#
# **How the paper's claims were counted.** All {glue:text}`claims` claims tested in the tables' settings are decided
# on points. After the {term}`Benjamini-Hochberg <BH>` correction over them, {glue:text}`claims_bh_opposite` read opposite to the
# paper, {glue:text}`claims_bh_matches` match and {glue:text}`claims_bh_larger` are larger. {glue:text}`claims_unfit`
# more, measured against baselines below the bar this book sets for a baseline (MoCo v2, SimSiam and SwAV in Table 7,
# BYOL in {term}`Supp E`), are left out of the counts. The late gain on the shapes at 120 epochs stays
# {glue:text}`late_gain_bh` after the correction over the diagnosis's many comparisons (q = {glue:text}`late_gain_q`),
# a reading that depends on the error floor: a run with no test error counts as half an image wrong, and at a quarter
# or a whole image the correction reads otherwise. The length series' shortest pair ({glue:text}`short_steps` steps)
# trained again on a GPU, beside the longer runs, so it is another pair than the phase diagram's CPU cell.
# <!-- checks: claims-on-points, unfit-baselines-as-named, late-gain-after-bh, late-gain-sensitive-to-the-floor, length-short-pair-on-gpu -->
#
# **What a reader can act on, at this budget and network:** do not switch FT on from the first step; on these
# tasks a start after 30 % of the run avoids most of the cost and helps in a few cells only; judge FT with a kNN
# readout beside the linear probe. A {term}`late start` needs a long enough run, though: on a task with room to
# help ([Does FT help once there is room to help?](11_headroom.ipynb): 30 classes of shapes with a distractor), FT switched on after 30 % of the
# run costs readout at 30 epochs and gains at 120, while from the first step it costs at both lengths.
# <!-- checks: first-step-costs, late-avoids-most, late-helps-where-stated, knn-late-mixed, headroom-costs-at-30, headroom-first-step-costs-at-120, headroom-late-gains-at-120 -->
