# %% [markdown]
# # Results against the paper
#
# This page holds every claim of the paper that this book tested, each judged on the stored runs with a verdict.
# It opens with all of them at a glance, the paper's headline first: {term}`FT` in MoCo (Table 7). Below come the
# verdicts counted in one table, each table claim by claim, the same claims on real photographs and on each recipe,
# and the baselines they rest on. Nothing here is typed by hand: the code writes `results/summary.csv` from the runs
# (`ftcl_core.study.table_verdicts.write_summary`), one row per table and setting, and draws everything from it.
#
# (forest-plot)=
# ## Every claim at a glance
#
# Each row is one claim: our {term}`paired` difference against its reference, with its 95 % interval, coloured and
# shaped by verdict (circles on the paper's side, squares against it, hollow where the effect falls short of the
# paper's size). The orange diamond is the paper's difference between the same two settings at ImageNet scale
# (ImageNet-100; ImageNet-1K for BYOL's rows): another scale, so compare its sign, not its size.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %%
import csv

import matplotlib.pyplot as plt

from ftcl_core.pages.result_figures import verdict_forests
from ftcl_core.study import sweeps, table_verdicts

if profile == "smoke":
    sweeps.sweep("experiments/table7_ft_v2.yaml", profile, seeds=[0, 1], settings=["v2 baseline", "v2 +pos"], progress=False)
path = table_verdicts.write_summary(profile)
rows = list(csv.DictReader(path.open()))
ft_first = sorted(rows, key=lambda r: not r["table"].startswith("T7"))  # Table 7 first
verdict_forests(ft_first)  # a few whole tables a figure, none taller than a screen
plt.show()

# %% tags=["remove-cell"]
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study.chapters import results

glue_reading(results.read())  # the authored reading rests on the stored cpu runs, whatever profile this page ran with


# %% [markdown]
# A dot far past its diamond reads "larger than the paper": the words say how big an effect is, not only its side. Table 3's positive interpolation at a = 0.2 reads {glue:md}`t3_interp_diff` points against
# its baseline where the paper's reads {glue:md}`t3_interp_effect`, about {glue:md}`t3_interp_ratio` times as much, its whole interval
# past the paper's: mixing the positive pair, as in [Feature transformations in training](06_feature_transformations.ipynb), costs here far
# more than at ImageNet scale.
#
# Tables share runs. Where two tables ask for the same setting on the same recipe, the runs are trained once and
# copied (Table 2's $\alpha_{ex} = 2$ is Table 7's v1 {term}`+pos`), so the figure draws that comparison under each table
# with the same dot: its {glue:md}`shared_rows` claim rows hold {glue:md}`shared_distinct` distinct comparisons, and
# the counts below take each once.

# %% [markdown]
# ## The verdicts in one table
#
# The paper's claims counted by verdict, before and after the {term}`Benjamini-Hochberg <BH>` correction for
# testing many claims at once; Table 1's checks of each momentum against the random-init encoder are counted apart.
# The {glue:md}`unfit_claims` claims measured against a baseline below the bar this book sets for a baseline
# ([the baselines at the tables' budget](#baselines-at-budget): MoCo v2, SimSiam and SwAV in Table 7, BYOL in
# {term}`Supp E`) are counted apart too, and enter none of the tallies.
# What the verdicts add up to is said in the [findings on the first page](index).

# %%
from IPython.display import display

from ftcl_core.pages.markup import html_table
from ftcl_core.study.results import verdicts

counts = table_verdicts.tally(rows)["all"]
kinds = ("ft", "ft_bh", "sanity")  # the paper's claims, the same after BH, Table 1's checks
words = [w for w in verdicts.TALLY_WORDS if any(counts[k][w] for k in kinds)]
cells = [[w, *(str(counts[k][w]) for k in kinds)] for w in words]
cells.append(["all", *(str(sum(counts[k].values())) for k in kinds)])
display(html_table(["verdict", "the paper's claims", "after BH", "Table 1's checks"], cells,
                   caption="Distinct claims by verdict, every table and data set; Table 1's "
                           "checks: each momentum against the random-init encoder"))

# %% [markdown]
# A {term}`verdict` weighs the paired interval against zero and against the paper's own effect d. The fold below
# gives the rules; the glossary defines each word.
#
# :::{admonition} How a verdict is reached
# :class: dropdown
#
# For each claim of the paper (a setting beats, or trails, its reference; in Table 1, a momentum reads below or
# above the random-init encoder) we take the paired difference over seeds and its 95 % t-interval:
#
# | verdict | the paired 95 % interval [lo, hi], the paper's effect d on its side of zero |
# |---|---|
# | **matches the paper** | holds d and excludes zero |
# | **larger than the paper** | lies wholly beyond d |
# | **smaller than the paper** | lies wholly between zero and d |
# | **{term}`no effect of the paper's size`** | holds zero and excludes d |
# | **opposite to the paper** | lies wholly on the other side of zero |
# | **{term}`undecided`** | holds both zero and d, or rests on fewer than three seeds |
#
# A claim that states no size (Table 1's checks against the random-init encoder) is read on its sign: matches the
# paper on its side of zero, opposite on the other, else undecided. And besides:
#
# * **equivalent** / **not equivalent**: an equivalence claim (Table 5, {term}`Supp F`) within / wholly outside its
#   margin;
# * **{term}`undecided`**: fewer than three seeds stand behind it (one or two seeds never decide a claim, however
#   narrow their interval);
# * **baseline**: a reference row that makes no claim of its own.
#
# Beside each: our effect over the paper's, and a q-value over the paper's claims (every kind but Table 1's checks
# against the random-init encoder, each distinct comparison once); claims that share a reference arm are counted in
# `reference_shared_by` (their verdicts are not independent).
#
# **Two scales.** A difference claim whose paper gives both numbers is also judged, by the same rule, on the error
# scale: per seed, the log of the arm's test error over its reference's, against the log of the paper's own ratio.
# Points decide, except where the reference is so close to a perfect score that the arm cannot gain the paper's
# effect in points: there the {term}`error scale` decides, and the verdict says "on the error scale". Both scales
# are columns of `results/summary.csv` and `results/diagnosis.csv` (`verdict_points`, `verdict_errors`, `scale`); a
# pair whose two arms trained on different devices (`mixed_seeds`) leaves the correction's family.
#
# The scale differs from the paper's in every respect (data, encoder, epochs, batch, queue): a verdict says whether
# a claim holds *at this scale*, not whether the paper is right at its own.
# :::
#
# ## Every table, claim by claim
#
# Every table, each claim beside the paper's number with its seeds and verdict, is on
# [its own page](09b_every_table.ipynb); whether the verdicts hold on real photographs and on each recipe, and the
# baselines they rest on, on [Baselines and recipes](09c_baselines.ipynb).
