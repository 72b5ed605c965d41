# %% [markdown]
# # Every table, claim by claim
#
# The paper's tables, each with the settings of {term}`FT` this book ran, the paper's number beside ours and a
# verdict for every claim ([Results against the paper](09_results.ipynb) counts them and draws them at a glance).
#
# Each table opens on demand; its summary line counts its verdicts. A row's table is named as the glossary's
# {term}`table name` explains (`T1`-`T7` the paper's tables; {term}`S-E`, {term}`S-F`, {term}`S-G` its supplement's
# sections; the book's own diagnosis and headroom experiments, `D-…` and `H-…` such as {term}`D-capacity-v1` and
# {term}`H-map-v1`, are judged in [When does feature transformation help?](07a_when_ft_helps.ipynb) and
# [Does FT help once there is room to help?](11_headroom.ipynb), not here), and its setting by the feature transformation it switches on: {term}`+pos`, {term}`+neg`,
# {term}`+both`, {term}`+both_dim`, or a {term}`late start`. "ours" is the linear {term}`readout` (top-1 %, mean
# ± 95 % CI over seeds).
#
# The tables hold {glue:md}`rows_rows` verdict rows, {glue:md}`rows_distinct` distinct comparisons
# ({glue:md}`rows_repeats` rows repeat a comparison another table holds, as Table 2's $\alpha_{ex} = 2$ is Table 7's
# {term}`+pos`): the {glue:md}`rows_paper_claims` claims of the paper that [Results against the paper](09_results.ipynb)
# and the findings count, Table 1's {glue:md}`rows_checks` checks of each momentum against the random-init encoder,
# and {glue:md}`rows_unfit` claims measured against a baseline below this book's bar, counted apart.


# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %% tags=["remove-cell"]
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study.chapters import every_table

glue_reading(every_table.read())  # the words rest on the stored cpu runs (results/summary.csv)

# %%
from ftcl_core.pages.markup import markdown_html
from ftcl_core.study import sweeps, table_verdicts

if profile == "smoke":  # the smoke profile's two runs, as on the results page (trained once, then found)
    sweeps.sweep("experiments/table7_ft_v2.yaml", profile, seeds=[0, 1], settings=["v2 baseline", "v2 +pos"], progress=False)
path = table_verdicts.write_summary(profile)
markdown_html(table_verdicts.summary_markdown(path, heading="<b>{table}</b>", fold=True))
