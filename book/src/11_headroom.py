# %% [markdown]
# # Does FT help once there is room to help?
#
# **In short:** on a task with room, {term}`FT` switched on from the first step costs {term}`readout` at 30, 120 and 240 epochs; switched
# on after 30 % of the run it costs at 30 epochs, gains at 120 ({glue:md}`hr_both_late_120_diff` points, a little less
# than the paper's Table 6 in points) and at 240 reaches the paper's size ({glue:md}`hr_both_late_240_diff` points over
# {glue:md}`hr_both_late_240_n` {term}`paired` seeds). The runs that cost crowd the images as FT switches on, but a later switch that does not crowd
# still costs: the crowding is not needed for the cost ([below](#the-crowding)).
#
# In this chapter you will learn why a baseline near 100 % can force a verdict, how the ratio of test errors reads a
# comparison there, and what {term}`FT` does on a task whose baseline has room to grow.
#
# The paper's gains are {glue:md}`hr_both_paper` points (Table 7, MoCo v1 {term}`+pos` {term}`+neg`: {glue:md}`hr_both_paper_ref` →
# {glue:md}`hr_both_paper_arm` %) and {glue:md}`hr_both_late_paper` points (Table 6, FT from epoch 30 of 100:
# {glue:md}`hr_both_late_paper_ref` → {glue:md}`hr_both_late_paper_arm` %). On the shapes of the other chapters
# ([the embedded data](#embedded-data)) the baseline nears 100 % after 120-240 epochs: it has less room left than
# the paper's gain, so "no effect of the
# paper's size" in points is forced there, whatever FT does. This chapter takes two ways out: judge a comparison near
# the ceiling on the {term}`error scale`, and move to a task with room.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %%
import matplotlib.pyplot as plt

from ftcl_core.pages import headroom as headroom_figures
from ftcl_core.pages import markup
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study import headroom
from ftcl_core.study.chapters import headroom as reading
from ftcl_core.study.results import verdicts

# this chapter trains nothing: it reads the committed map (bash tools/headroom_map.sh trains it), whatever the profile
rows, records = headroom.load()
metrics = headroom.run_metrics(records)  # each run's per-step scores, for the crowding section
facts = headroom.facts(rows, records, metrics)  # the aims, each arm against its baseline, the late arms, the crowding
auto = reading.auto_facts()  # the rule ft.start=auto runs, on every setting it was tried on
glue_reading(reading.read(facts, auto))  # the map's numbers in the words, and each claim checked

# %% [markdown]
# ## The error scale
#
# Count what a method gets wrong: $e = 100 - \text{top-1}$. The paper's Table 7 gain is
# {glue:md}`hr_both_paper_err_ref` % of the test images wrong falling to {glue:md}`hr_both_paper_err_arm` %, a ratio
# of {glue:md}`hr_both_paper_ratio`: a fifth fewer errors. A baseline at {glue:md}`hr_example_baseline` % can still
# show a fifth fewer errors (it then reads {glue:md}`hr_example_ft` %, {glue:md}`hr_example_gain` points) although it
# can never show {glue:md}`hr_both_paper` points. So every claim is judged twice: on points, and on the {term}`paired` log
# error ratio $\log(e_\text{FT} / e_\text{baseline})$ per seed against the paper's own. Points decide, as the paper
# states its effects in points, unless the ceiling makes the paper's point effect impossible: then the error scale
# decides, and the verdict says "on the error scale". On the task with room below the ceiling never binds, so points
# decide every row of its map. The rule is the plain bound, not a tuned threshold:

# %%
markup.source_code(verdicts.ceiling_binds)

# %% [markdown]
# ## A task with room
#
# The same MoCo v1 recipe on harder images: 30 classes (the 10 shapes of [the embedded data](#embedded-data) in 3 fills: solid, outline,
# striped) with one unlabelled distractor shape behind the labelled one. A crop may keep the distractor and lose the
# shape, as a crop of a photograph may lose its object. The task was chosen among five candidates *without FT*, on
# a validation split, and frozen before any FT run (`results/screens/2026-12-02_headroom-task.md`).
# Thirty of its images, one per class:

# %% tags=["hide-input"]
headroom_figures.task_images()
plt.show()

# %% [markdown]
# What the task had to meet was set before the choice, so that it could not be picked to flatter FT. At 30 epochs the baseline reads {glue:md}`hr_baseline` % over
# {glue:md}`hr_n_seeds` seeds (mean ± 95 % interval), {glue:md}`hr_gain` points above its random-init encoder
# (aim: 20 or more); its seed-to-seed SD is {glue:md}`hr_spread` points (aim: 3 or less); a change of 0.5 point is
# {glue:md}`hr_half_point` of its {glue:md}`hr_test_images` test images (aim: 10 or more, so that half a point is not
# one image's luck). At 240 epochs, the
# longest length planned, the baseline still reads {glue:md}`hr_longest` % (over {glue:md}`hr_longest_n` seeds;
# aim: 90 or less), so far the room remains at every length of the map.

# %% [markdown]
# (headroom-map)=
# ## The map
#
# The map trains four ways of running FT (its *arms*), each beside a baseline of the same length and seed, with
# the paper's FT settings unchanged: +pos +neg from the first step (Table 7), +pos +neg from 30 % of the run (Table 6's start 30 of 100), +neg alone from the
# first step (Table 7) and +pos alone from 30 % (no paper number: it asks whose the late effect is). Dots are our
# paired differences (mean ± 95 % interval over the seeds each row names), coloured and shaped by {term}`verdict` as in
# [Results against the paper](09_results.ipynb); diamonds are
# the paper's own effect on each scale. The two panels point opposite ways: a gain lies right of zero on the left
# and left of 1× on the right (fewer errors). A row with fewer than three paired seeds (its label gives them) reads
# {term}`undecided` ([open questions](open-questions) lists the runs not stored yet). The paper's own effects, the yardsticks of every
# verdict below, once:
#
# | arm | the paper's claim | points | errors |
# |---|---|---|---|
# | +pos +neg from the first step | Table 7, MoCo v1 | {glue:md}`hr_both_paper` | {glue:md}`hr_both_paper_ratio` |
# | +pos +neg from 30 % | Table 6, start 30 of 100 | {glue:md}`hr_both_late_paper` | {glue:md}`hr_both_late_paper_ratio` |
# | +neg alone from the first step | Table 7, MoCo v1 | {glue:md}`hr_neg_paper` | {glue:md}`hr_neg_paper_ratio` |
# | +pos alone from 30 % | none: a comparison of our own | | |

# %% tags=["hide-input"]
headroom_figures.map_figure(rows)
plt.show()

# %% [markdown]
# At 30 epochs, with five paired seeds:
#
# - **Switched on after 30 % of the run**, +pos +neg reads {glue:md}`hr_both_late_30_diff` points
#   ({glue:md}`hr_both_late_30_errors` the baseline's errors): {glue:md}`hr_both_late_30_verdict`. **Positive extrapolation carries that
#   cost**: +pos alone from the same point reads {glue:md}`hr_pos_late_30_diff`, and +pos +neg reads
#   {glue:md}`hr_late_gap_30_diff` points above +pos alone, paired by seed, an interval that holds zero: whether the
#   negatives win any of it back, these seeds cannot tell.
# - **From the first step it costs most**: {glue:md}`hr_both_30_diff` points, {glue:md}`hr_both_30_errors` the
#   errors: {glue:md}`hr_both_30_verdict`.
# - **+neg alone** changes {term}`readout` by {glue:md}`hr_neg_30_diff` points ({glue:md}`hr_neg_30_errors` the errors):
#   {glue:md}`hr_neg_30_verdict`.
#
# Three of the paper's claims are judged here, each verdict corrected for the map's several comparisons
# ({term}`Benjamini-Hochberg`); +pos alone from
# 30 % is a comparison of our own, with no paper number to judge it against. So at 30 epochs, with room to help, FT does not help with this network and data: as on the
# shapes ([Feature transformations in training](06_feature_transformations.ipynb), [the phase diagram](#phase-diagram)), it costs most from the first step and less from a {term}`late start`. At 120 epochs the
# late start pays (below).

# %% [markdown]
# ## Longer runs
#
# The paper trains for tens of thousands of steps; 30 epochs here are {glue:md}`hr_steps_30` steps. At 120 epochs
# the baseline reads {glue:md}`hr_baseline_120` %, and FT **from the first step still costs**:
# {glue:md}`hr_both_120_diff` points over {glue:md}`hr_both_120_n` paired seeds, {glue:md}`hr_both_120_errors` the
# errors: {glue:md}`hr_both_120_verdict`. The
# longer run did not turn that cost into the paper's gain.
#
# **Switched on after 30 % of the run, FT now gains**: {glue:md}`hr_both_late_120_diff` points over
# {glue:md}`hr_both_late_120_n` paired seeds, {glue:md}`hr_both_late_120_errors` the errors: {glue:md}`hr_both_late_120_verdict`
# (once corrected for the map's several comparisons, q {glue:md}`hr_both_late_120_q`:
# {glue:md}`hr_both_late_120_verdict_bh`). The same late start read {glue:md}`hr_both_late_30_diff` at 30 epochs:
# on a task with room, at 120 epochs of this network, the paper's late start pays. Seed by seed (each arm against
# the baseline of its own seed):

# %% tags=["hide-input"]
markup.html_table(["seed", "baseline", "+pos +neg from 30 %", "difference", "+pos alone from 30 %", "difference"],
             headroom.seed_pairs(records, 120), caption="Linear readout (%) at 120 epochs on the task with room.")

# %% [markdown]
#
# **A late gain does not need the negatives.** Switched on at the same point, {term}`+pos` alone gains
# {glue:md}`hr_pos_late_120_diff` points over {glue:md}`hr_pos_late_120_n` paired seeds
# ({glue:md}`hr_pos_late_120_errors` the errors). The component that costs from the first step
# ([Feature transformations in training](06_feature_transformations.ipynb)), and still costs when switched on late at 30 epochs, gains when
# switched on late at 120. Whether the negatives add to it, these seeds cannot tell: +pos +neg reads
# {glue:md}`hr_late_gap_120_diff` points above +pos alone, paired by seed, an interval that holds zero.
#
# **+neg alone** reads {glue:md}`hr_neg_120_diff` from the first step ({glue:md}`hr_neg_120_errors` the errors):
# {glue:md}`hr_neg_120_verdict`, an interval that holds no change but not the paper's gain.
#
# At 120 epochs three of the paper's claims are judged (+pos +neg from the first step and from 30 %, +neg alone) and
# two comparisons it does not make (+pos alone from 30 %, and +pos +neg against it: the paper reports +pos alone only
# from the first step, in Table 7). Every arm at 120 epochs holds the {glue:md}`hr_planned_seeds` planned seeds.
# [The phase diagram](#phase-diagram) shows where a late start pays on the shapes, near the ceiling.

# %% [markdown]
# ## At 240 epochs
#
# Twice as long again ({glue:md}`hr_steps_240` steps), the baseline reads {glue:md}`hr_baseline_240` %: room
# remains. Switched on after 30 % of the run, **it reaches the paper's size**: FT gains {glue:md}`hr_both_late_240_diff`
# points over {glue:md}`hr_both_late_240_n` paired seeds, {glue:md}`hr_both_late_240_errors` the errors (Table 6:
# {glue:md}`hr_both_late_paper`, {glue:md}`hr_both_late_paper_ratio`): on points, the paper's own scale, it
# {glue:md}`hr_both_late_240_verdict` (corrected for the map's several comparisons, q
# {glue:md}`hr_both_late_240_q`: {glue:md}`hr_both_late_240_verdict_bh`); on the {term}`error scale` it is
# {glue:md}`hr_both_late_240_verdict_errors`. Seed by seed:

# %% tags=["hide-input"]
markup.html_table(["seed", "baseline", "+pos +neg from 30 %", "difference", "+pos alone from 30 %", "difference"],
             headroom.seed_pairs(records, 240), caption="Linear readout (%) at 240 epochs on the task with room.")

# %% [markdown]
# **From the first step FT still costs**: {glue:md}`hr_both_240_diff` points over {glue:md}`hr_both_240_n` paired
# seeds, {glue:md}`hr_both_240_errors` the errors: {glue:md}`hr_both_240_verdict` (at 120 epochs: {glue:md}`hr_both_120_diff`).
#
# **+neg alone** reads {glue:md}`hr_neg_240_diff` over
# {glue:md}`hr_neg_240_n` paired seeds ({glue:md}`hr_neg_240_errors` the errors): {glue:md}`hr_neg_240_verdict`
# (the paper's: {glue:md}`hr_neg_paper`), as at 120 epochs, where it read {glue:md}`hr_neg_120_diff`
# ({glue:md}`hr_neg_120_verdict`).
#
# **+pos alone from 30 % gains again**: {glue:md}`hr_pos_late_240_diff` points over {glue:md}`hr_pos_late_240_n`
# paired seeds ({glue:md}`hr_pos_late_240_errors` the errors; at 120 epochs: {glue:md}`hr_pos_late_120_diff`).
# At this length the negatives add to it: +pos +neg reads {glue:md}`hr_late_gap_240_diff` points
# above +pos alone over {glue:md}`hr_late_gap_240_n` paired seeds, an interval wholly above zero
# (a comparison of our own, outside the paper's claims and their correction; at 120 epochs it read
# {glue:md}`hr_late_gap_120_diff`, an interval that held zero).

# %% [markdown]
# (the-crowding)=
# ## When a late start pays: the crowding
#
# [Feature transformations in training](#mechanism) found how positive extrapolation costs on the shapes: the encoder undoes the harder
# positive by pulling every image together, and the margin the loss rewards shrinks. The map shows when that
# happens, though not why. Below is {term}`Mean(neg)`, a query's mean raw score against the queue's negatives, through
# training (each curve the mean over its seeds; the dotted line marks where the late start switches FT on):

# %% tags=["hide-input"]
headroom_figures.crowding_figure({n: headroom.neg_curves(metrics, n) for n in (30, 120)})
plt.show()

# %% [markdown]
# From the first step the images crowd at once: over the first tenth of a 120-epoch run Mean(neg) reads
# {glue:md}`hr_crowd_both_120_ft` against the baseline's {glue:md}`hr_crowd_both_120_base` over the same steps.
# Switched on after 30 % of a 30-epoch run, FT crowds them too ({glue:md}`hr_crowd_both_late_30_ft` against
# {glue:md}`hr_crowd_both_late_30_base`) and costs; switched on after 30 % of a 120-epoch run, it does not
# ({glue:md}`hr_crowd_both_late_120_ft` against {glue:md}`hr_crowd_both_late_120_base`) and gains. Over the whole
# map, **FT costs where it crowds the images and gains where it does not**: every arm that extrapolates positives,
# at every length where its seeds decide, falls on one side or the other. In the table an arm crowds the images
# when its Mean(neg), over the tenth of the run that follows FT's switch, is above its baseline's over the same
# steps by more than {glue:md}`hr_crowds` in every seed.

# %% tags=["hide-input"]
markup.html_table(["epochs", "FT", "seeds", "Mean(neg) after the switch, FT / baseline", "crowds", "Mean(neg) at the end, FT / baseline",
              "readout, FT − baseline"], headroom_figures.crowding_table(facts),
             caption="Raw Mean(neg) over the tenth of the run after FT switches on and over the last 100 steps (FT "
                     "/ its baseline, mean over seeds), and the paired difference in linear readout (points).")

# %% [markdown]
# **The cost outlasts the crowding.** From the first step, by the last 100 steps of a 120-epoch run Mean(neg) is
# back to {glue:md}`hr_crowd_both_120_end_ft` (its baseline: {glue:md}`hr_crowd_both_120_end_base`), yet the run
# still reads {glue:md}`hr_both_120_diff` points against its baseline. This is an association over the map's arms, one
# network and one task, not a proof of cause; nor do these runs say why FT switched on after 30 % crowds the images
# in a 30-epoch run and not in a 120-epoch one, when both baselines already hold their images apart at that point
# ({glue:md}`hr_crowd_both_late_30_base` and {glue:md}`hr_crowd_both_late_120_base`). {term}`+neg` alone never
# crowds them.
#
# **The crowding and the clock are confounded.** Every cell that crowds switches FT on by step
# {glue:md}`hr_crowd_clock_latest_steps` of its run; every cell that does not, at step
# {glue:md}`hr_spread_clock_earliest_steps` or later. The window (the tenth of the run after the switch) and the
# threshold ({glue:md}`hr_crowds`) were chosen after the 120-epoch runs. So the map cannot tell whether FT costs
# because the images crowd, because the encoder is not yet ready when FT switches on, or because of how much of the
# run is left.
#
# **Holding the switch step, changing the length.** An experiment written down with each explanation's prediction
# before its first run switches FT (+pos +neg) on at epoch 9 of a 120-epoch run: step
# {glue:md}`hr_switch_from_9_of_120_step`, the 30-epoch late start's step, the encoder in the same state there. If the
# time left after the switch mattered, this arm would gain; it costs {glue:md}`hr_switch_from_9_of_120_diff` points over
# {glue:md}`hr_switch_from_9_of_120_n` paired seeds, and crowds the images (Mean(neg)
# {glue:md}`hr_switch_from_9_of_120_crowd_ft` against {glue:md}`hr_switch_from_9_of_120_crowd_base` over the tenth of
# the run after the switch). The clock and the crowding both predicted that; this arm cannot tell them apart.
#
# The third arm can. Switched on at epoch 18 of 120 (step {glue:md}`hr_switch_from_18_of_120_step`), FT still costs,
# {glue:md}`hr_switch_from_18_of_120_diff` points over {glue:md}`hr_switch_from_18_of_120_n` paired seeds, but
# {glue:md}`hr_switch_later_diff` points less than from epoch 9 (paired by seed), as the clock predicted; and it does
# not crowd (Mean(neg) {glue:md}`hr_switch_from_18_of_120_crowd_ft` against
# {glue:md}`hr_switch_from_18_of_120_crowd_base`, under the threshold in every seed). The crowding predicted no cost for
# an arm that does not crowd: at this budget and network the crowding is not needed for the cost.
#
# At epoch 9 of 240 the switch crowds too (Mean(neg) {glue:md}`hr_switch_from_9_of_240_crowd_ft` against
# {glue:md}`hr_switch_from_9_of_240_crowd_base`) and reads {glue:md}`hr_switch_from_9_of_240_diff` points over
# {glue:md}`hr_switch_from_9_of_240_n` paired seeds: {term}`undecided` in sign, but wholly below the gain of at least
# 3 points that the time left predicted.
#
# The fourth arm changes the crowding at the same clock: from epoch 9 of 120, it holds +pos back on each step whose
# raw Mean(neg) rises 0.05 above its level before the switch (`ft.pos_gate`, added with its predictions before its
# first run). It held +pos back on {glue:md}`hr_switch_held_share` % of the steps in the tenth after the switch, and
# the images crowded less (Mean(neg) {glue:md}`hr_switch_held_9_of_120_crowd_ft` against
# {glue:md}`hr_switch_from_9_of_120_crowd_ft` without the gate; baseline {glue:md}`hr_switch_held_9_of_120_crowd_base`).
# The crowding predicted no cost; it costs {glue:md}`hr_switch_held_9_of_120_diff` points over
# {glue:md}`hr_switch_held_9_of_120_n` paired seeds, {glue:md}`hr_switch_held_diff` less than without the gate (paired
# by seed). The gate removes +pos as well as crowding from those steps, so which of the two adds to the cost stays
# open. At this budget and network no arm contradicted the clock, the time left did not hold, and lessening the
# crowding did not remove the cost.

# %% [markdown]
# (auto-start)=
# ## Can a run decide when to switch FT on?
#
# A user who lifts FT into a MoCo of their own has no Table 6 for their data. So the library offers a rule that reads
# only the run's own training loss (`ft.start=auto`, `ft.PlateauStart`): at the end of each epoch,
# FT switches on from the next once the loss fell, over the last {glue:md}`auto_window` epochs, by less than
# {glue:md}`auto_fraction` of all it has fallen since the first. The window and the share were chosen on this map's
# 30- and 120-epoch runs only, to switch on near the start that gains at 120 epochs and well after the step that costs
# at both lengths, and written down with a prediction for every setting before the first auto run. Until FT switches
# on, an auto run is its baseline, so its switch epoch is known beforehand from the baseline's stored losses.

# %%
from ftcl_core.study import auto_start

markup.html_table(["setting", "rule", "switched on at epoch (predicted)", "auto − baseline", "fixed 30 % start − baseline",
              "seeds"], auto_start.rows(auto),
             caption="FT (+pos +neg) switched on by the run's own loss, against the same run without FT, and the fixed "
                     "start after 30 % of the run against its own baseline (points of linear readout, ± 95 % interval).")

# %% [markdown]
# Of the {glue:md}`auto_runs` stored auto runs, {glue:md}`auto_agree` switched FT on within an epoch of where their
# baseline's stored losses said they would; the others up to {glue:md}`auto_max_off` epochs away, their losses before
# the switch at most {glue:md}`auto_loss_gap` from their baseline's: near its threshold the rule is that sensitive. All
# {glue:md}`auto_settings` settings hold their paired seeds, and in none of them does the rule cost {term}`readout`.
# It does not always gain where the fixed 30 % start does: on Fashion-MNIST it switches on at about 80 % of the run, on
# the shapes at 120 epochs before the fixed start's 30 %, and in both its difference cannot be told from zero where
# the fixed start gains a little.

# %% [markdown]
# (try-it-11)=
# ## Try it
#
# * **One more pair.** `.venv/bin/python -m ftcl_core train configs/cpu_headroom_moco_v1.yaml seed=5
#   --out runs/try-base` and `.venv/bin/python -m ftcl_core train configs/cpu_headroom_moco_v1.yaml seed=5
#   ft.pos=true ft.start_epoch=9 --out runs/try-pos` train a sixth baseline and its +pos arm from 30 % (the map's
#   30-epoch baselines took about {glue:md}`hr_minutes_30` minutes each on one CPU thread). Each folder's `eval.json` holds the {term}`linear readout`: expect the +pos run below
#   its baseline, as the figure's 30-epoch dark grey dot is.
# * **See the crowding.** `.venv/bin/python -m ftcl_core train configs/cpu_headroom_moco_v1.yaml seed=5 ft.pos=true
#   ft.start_epoch=3 --out runs/try-pos3` switches +pos on earlier. `RunDir(folder).load_metrics()` (from
#   `ftcl_core.runs`) holds a run's scores step by step with each step's epoch: compare `neg_mean` over the three
#   epochs after FT switches on, in both +pos runs, with the same steps of `runs/try-base`. Does the earlier switch
#   crowd the images more, and cost more readout?
