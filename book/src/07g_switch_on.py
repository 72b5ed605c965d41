# %% [markdown]
# (phase-diagram)=
# # When to switch FT on: a phase diagram
#
# **After 30 % of the run or later: {term}`FT` then avoids most of its cost and helps in a few cells, while Table 6's epoch 1
# is too early; the {term}`kNN readout` is mixed.** Each cell: {term}`FT` ({term}`+pos` {term}`+neg`) switched on
# after a fraction of the run, {term}`paired` by seed against the same run without FT, for the linear probe (top) and
# the kNN classifier (below).

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
from IPython.display import display

from ftcl_core.pages import findings as findings_figure
from ftcl_core.pages import tables
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study import diagnosis, evidence
from ftcl_core.study.chapters import switch_on

ev = evidence.Evidence.load(profile if profile != "gpu" else "cpu")  # the pairs below (smoke: trains tiny ones)
for knn, readout in ((False, "linear"), (True, "kNN")):
    findings_figure.draw_phase_diagram(ev, knn, title=f"MoCo v1: FT minus the same run without FT ({readout} top-1, points)",
                                       column=lambda f: f"FT from {f:.0%} of the run" if f else "FT from the start",
                                       footnote="\N{DAGGER} Judged on the error scale: near a perfect score, the share of test errors FT removes decides, not points.")
    plt.show()
stored = ev if profile == "cpu" else evidence.Evidence.load("cpu")  # the words rest on the stored cpu runs

# %% tags=["remove-cell"]
glue_reading(switch_on.read(stored))


# %% [markdown]
# Switching FT on later should spare the encoder the early concentration if [the algebra](07b_gradient.ipynb) is right, and the
# paper's Table 6 finds FT from epoch 2 of 100 a little better than from the start. The rows: the shapes (30 and 120
# epochs), Fashion-MNIST (10 and 30 epochs), the task with room to help of
# [Does FT help once there is room to help?](#headroom-map) (from the start and from 30 % only) and, at the bottom, [the larger encoders](is-it-the-network). The kNN classifier reads the features'
# geometry as it is and so shows a concentration that a trained probe can undo. The cells of a row share their
# "never" arm, so they are not independent tests. [The answer](answer) gives the cells where FT helps.
#
# ## Where the runs stand when FT switches on
#
# For each start: $\rho$ and {term}`Mean(neg)` just before FT switches on, the highest Mean(neg) afterwards, and the
# {term}`readout` against training without FT. Table 6's runs
# ([Feature transformations in training](06_feature_transformations.ipynb)) first:

# %%
t7 = "shapes, 30 epochs"  # Table 6's runs
later = diagnosis.switch_on_rows(ev.phase[t7], ev.switch[t7])
display(tables.switch_on_table(later, "Table 6's runs (MoCo v1, +pos +neg), seeds averaged; ρ and Mean(neg) over the 5 "
                                 "steps before FT switches on (the first step for FT from the start)"))

# %% [markdown]
# FT costs {term}`linear readout` significantly only from {glue:md}`sw_costly`. Of those starts'
# {glue:md}`sw_costly_n` seeds, Mean(neg) passes {glue:md}`sw_level` after FT switches on in
# {glue:md}`sw_costly_passed` (the table gives every start, seed by seed), so passing the {term}`collapse level` is not
# what separates the starts that lose from those that do not.
#
# The paper's supplement blames FT's trouble in the first epoch on a queue that still holds its random initial
# vectors, and starts FT at epoch 2. Here the queue of {glue:md}`rq_queue` keys holds real keys only after
# {glue:md}`rq_fill` steps; start 1 switches FT on after {glue:md}`rq_switch` steps, with a queue of real keys, and
# reads out {glue:md}`rq_diff` points against never ({glue:md}`rq_verdict`, {glue:md}`rq_seeds`): the random queue is
# not what makes an early start costly here.
#
# The other rows of the phase diagram, where their runs stood when FT switched on:

# %%
for label in diagnosis.START_EXPERIMENTS:
    if label != t7:  # Table 6's runs: the table above
        display(tables.switch_on_table(diagnosis.switch_on_rows(ev.phase[label], ev.switch[label]),
                                       f"{label}: where the runs stood when FT switched on (seeds averaged)"))
