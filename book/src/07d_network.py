# %% [markdown]
# (is-it-the-network)=
# # Is it the network? Wider and deeper encoders
#
# **No: {term}`FT` from the first step costs {term}`readout` at every larger encoder decided here, and the larger encoders keep no
# more directions of their features once FT has taken them.** Left: the readout of both arms against the encoder's
# parameters; right: the effective rank each arm's features end with.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
from IPython.display import display

from ftcl_core.pages import result_figures, tables
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study import evidence
from ftcl_core.study.chapters import network

ev = evidence.Evidence.load(profile if profile != "gpu" else "cpu")  # the pairs below (smoke: trains tiny ones)
result_figures.capacity_figure(list(ev.capacity))
plt.show()
stored = ev if profile == "cpu" else evidence.Evidence.load("cpu")  # the words rest on the stored cpu runs

# %% tags=["remove-cell"]
glue_reading(network.read(stored))


# %% [markdown]
# Every run of the other pages uses one small encoder (a CIFAR-stem ResNet-10 of width 16 on 24-px crops), against
# the paper's ResNet-18 and ResNet-50 at ImageNet resolution. The same pair at larger encoders on the shapes at the
# recipe's 30 epochs (`experiments/diagnosis/capacity_v1.yaml`, the table {term}`D-capacity-v1`; the width-16 pair
# is [the recipe comparison](recipe-changes)), FT ({term}`+pos` {term}`+neg`, the paper's settings) switched on at
# the first step, {term}`paired` by seed. A row with fewer than 3 stored seeds is {term}`undecided`. The last row is
# the other half of "the network": the width-16 pair on larger images (the shapes drawn at 64 px and cropped
# accordingly; `experiments/diagnosis/resolution_v1.yaml`).

# %%
display(tables.comparison_table([r for r in [*ev.capacity, ev.resolution] if r["n_seeds"]],
                           "Linear top-1 (%) on the shapes' test images, mean over seeds; Δ paired by seed; FT (+pos "
                           "+neg) from the first step"))

# %% [markdown]
# FT from the first step costs {term}`readout` at every encoder decided here, from {glue:md}`cap_first` to
# {glue:md}`cap_last`: at this budget and recipe the cost is not an artefact of the smallest network.
#
# FT's features end with an effective rank of {glue:md}`cap_ft_erank_lo` to {glue:md}`cap_ft_erank_hi` at these
# encoders, their baselines' {glue:md}`cap_base_erank_lo` to {glue:md}`cap_base_erank_hi`: {glue:md}`cap_param_ratio`x
# the parameters do not keep more directions of the features once FT has taken them. What a still larger network
# or larger images would do is one of the [open questions](open-questions).
