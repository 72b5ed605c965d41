# %% [markdown]
# (real-photographs)=
# # Is it the synthetic data? Real photographs
#
# **On Fashion-MNIST's photographs {term}`FT`'s linear cost is too small to tell from zero, but these photographs leave
# little room: the raw pixels read close to the baselines. The {term}`kNN readout` loses.** The figure gives
# {term}`FT` ({term}`+pos` {term}`+neg`, the paper's settings) minus its baseline, {term}`paired` by seed.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
from IPython.display import display

from ftcl_core.pages import result_figures, tables
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study import diagnosis, diagnosis_readings, evidence
from ftcl_core.study.chapters import photographs

ev = evidence.Evidence.load(profile if profile != "gpu" else "cpu")  # the pairs below (smoke: trains tiny ones)
paths = diagnosis.FIRST_STEP_EXPERIMENTS
runs_of = {key: ev.records[path] for key, path in paths.items()}


real_rows, gain = diagnosis_readings.real_rows(ev, runs_of)
result_figures.comparison_forest(real_rows, "Fashion-MNIST, MoCo v1: FT from the first step minus its baseline (top-1)")
plt.show()
# the words rest on the stored cpu runs, whatever profile this page ran with
stored = ev if profile == "cpu" else evidence.Evidence.load("cpu")


# %% tags=["remove-cell"]
glue_reading(photographs.read(stored))


# %% [markdown]
# Fashion-MNIST holds real 28×28 greyscale photographs of clothing in 10 classes. Its MoCo v1 recipe was {term}`calibrated`
# without FT on its own validation split; FT then runs with the paper's settings, at the calibration budget (10
# epochs) and at the recipe's full 30 epochs. This data set leaves little room for any effect: the raw pixels and a
# {term}`random-init baseline` already read close to the baselines (the last table), so a small difference here is
# hard to tell from zero.

# %%
display(tables.comparison_table(real_rows, "Top-1 (%) on Fashion-MNIST's test images, mean over seeds (linear readout; the "
                                      "last row kNN); Δ paired by seed"))
display(tables.comparison_table([gain], "FT's gain over its baseline (points) at the two lengths; Δ paired by seed",
                           ("10 epochs", "30 epochs", "Δ (30 - 10 epochs)")))

# %% [markdown]
# Neither length of the {term}`linear readout` can be told from zero, and neither can FT's gain at 30 against 10
# epochs; the kNN readout, which reads the features' geometry without training a classifier, loses. How far each arm
# concentrates its features (the shapes beside the photographs), and the references a readout on these photographs
# stands against:

# %%
plain, oracle = runs_of["recipe"], runs_of["oracle"]
display(tables.signature_table({"shapes, baseline": (plain, "baseline"), "shapes, FT": (plain, "+both"),
                           "shapes, FT, no same-class negatives": (oracle, "+both"),
                           "Fashion-MNIST, baseline": (runs_of["real"], "baseline"),
                           "Fashion-MNIST, FT": (runs_of["real"], "+both")},
                           "How far the features concentrate, mean over seeds: Mean(neg) of the raw cosines at its "
                           "highest, and the effective rank and views' correlation at the last step"))
display(tables.reference_table(runs_of["real"] + runs_of["real, longer"],
                               "The room an effect has on Fashion-MNIST: the encoder's readout beside the raw-pixel "
                               "probe and the random-init encoder, on the same test images, mean over the seeds of "
                               "both lengths (10 and 30 epochs) together"))
