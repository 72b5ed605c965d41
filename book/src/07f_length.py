# %% [markdown]
# (training-length)=
# # Does a longer run remove the cost? Four and eight times as long
#
# **Longer runs narrow {term}`FT`'s cost in points, not the damage: at four and at eight times the steps FT still gets
# several times as many test images wrong as its baseline.** The figure gives the {term}`linear readout` of both arms
# of the {term}`calibrated` MoCo v1 pair on the shapes against the length of the run.

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
from ftcl_core.study.chapters import length

ev = evidence.Evidence.load(profile if profile != "gpu" else "cpu")  # the pairs below (smoke: trains tiny ones)
length_path = diagnosis.LENGTH_EXPERIMENTS["the shapes"]
steps, arms, random_init = diagnosis_readings.length_arms(ev.records[length_path], ev.length)
if any(arms["baseline"]):
    result_figures.readout_by_length(steps, arms, random_init=random_init,
                        title="Shapes, calibrated MoCo v1: linear top-1 against the length of the run")
    plt.show()
stored = ev if profile == "cpu" else evidence.Evidence.load("cpu")  # the words rest on the stored cpu runs

# %% tags=["remove-cell"]
glue_reading(length.read(stored))


# %% [markdown]
# The calibrated MoCo v1 pair at the recipe's length and at four and eight times that length (lr steps at 60 % and
# 80 % of each run), {term}`paired` by seed at each length (`experiments/diagnosis/length_long_v1.yaml`). Most of the
# 30- and 120-epoch runs were trained on a GPU with the same code and recipe; each pair is on one device per seed, so
# the 30-epoch pairs here are their own runs, with the GPU's float32 rounding, and differ a little from the CPU runs
# of [the recipe comparison](recipe-changes). A longer run narrows a gap in points partly because the baseline nears
# the ceiling, so the last table gives how many times as many test images {term}`FT` gets wrong as its baseline.

# %%
display(tables.comparison_table([r for r in ev.length if r["n_seeds"] and r["kind"] == "length"],
                           "Shapes, linear top-1 (%) at each training length, mean over seeds; Δ paired by seed"))
display(tables.comparison_table([r for r in ev.length if r["n_seeds"] and r["kind"] == "gain"],
                           "FT's gain over its baseline (points) at the longer length against 30 epochs",
                           ("gain at 30 epochs", "gain when longer", "Δ (longer - 30 epochs)")))
display(tables.error_ratio_table(ev.length, "FT's error rate relative to its baseline's at each length (linear readout, "
                                            "means over seeds)"))

# %% [markdown]
# The same config and seed trained once on the GPU and once on the CPU: {glue:md}`gap_pairs` pairs of 30-epoch runs
# differ by {glue:md}`gap_least` to {glue:md}`gap_most` points of linear readout (mean {glue:md}`gap_mean`). A pair
# whose two arms trained on different devices carries that much besides the effect it measures; the tables name such
# pairs.
