# %% [markdown]
# # Can the first 100 steps tell?
#
# **Not reliably: held out by experiment, a model of the first 100 steps after {term}`FT` switches on beats always
# guessing "FT loses" run by run, but not at the level of settings, and the rule "{term}`Mean(neg)` passes 0.9 ⇒ FT
# loses" misses runs that lose.** The figure shows what the model reads and how often each predictor gets the sign of the cost right.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %% tags=["hide-input"]
import json

import matplotlib.pyplot as plt

from ftcl_core.pages import markup, result_figures
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study import experiment_file, predict
from ftcl_core.study.chapters import first_steps

predictor = json.loads((experiment_file.ROOT / predict.REPORT).read_text())  # the stored report, whatever the profile
result_figures.predictor_figure(predictor)
plt.show()

# %% tags=["remove-cell"]
glue_reading(first_steps.read(predictor))


# %% [markdown]
# From six named statistics of the 100 steps after FT switches on (the peak and final Mean(neg), the
# effective rank relative to the switch, $\rho$, {term}`Mean(pos)`, and the late slope of Mean(neg)), a logistic model
# predicts whether the full run loses {term}`readout` against its baseline, and a ridge model by how much
# (`ftcl_core/study/predict.py`; `python -m ftcl_core predict` refits it). Each pair of runs counts once (a run copied
# into another table is the run it was copied from), and experiments that share a run are held out together: each
# such group's runs are predicted by models fitted on the other groups' runs only, beside two references: always
# guessing the majority outcome, and the rule "Mean(neg) passes 0.9 within 20 steps ⇒ FT loses". The held-out
# scores, over all runs and by data set (Fashion-MNIST, then the shapes):

# %%
markup.markdown_html(predict.report_markdown(predictor))

# %% [markdown]
# On the same runs the model beats the majority outcome (exact McNemar test, p = {glue:md}`pred_p`), but that test
# counts every run as independent, and the runs of one setting share a recipe. Counted by setting
# ({glue:md}`pred_set_settings` settings), the model's gain over the majority is {glue:md}`pred_set_gain` points of
# accuracy with a bootstrap 95 % interval of {glue:md}`pred_set_gain_lo` to {glue:md}`pred_set_gain_hi`, and it does
# better in {glue:md}`pred_set_better` settings and worse in {glue:md}`pred_set_worse` (sign test, p =
# {glue:md}`pred_set_sign_p`): at the level of settings its gain over always guessing "FT loses" is not decided.
# Of the runs whose Mean(neg) passes {glue:md}`pred_threshold` within {glue:md}`pred_steps` steps of the switch,
# {glue:md}`pred_flagged_lose` of {glue:md}`pred_flagged` lose readout, but so do {glue:md}`pred_unflagged_lose` of
# the {glue:md}`pred_unflagged` others: the rule misses {glue:md}`pred_unflagged_lose` of the {glue:md}`pred_lose`
# runs that lose.
