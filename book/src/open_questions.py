# %% [markdown]
# (open-questions)=
# # Open questions: what was not run
#
# **What the stored runs leave open, and the runs the book's experiments ask for that are not stored yet.** Every
# other page of this part reads only what is stored; what none of them ran is listed here once, computed from the
# stored runs each time this page runs.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %% tags=["hide-input"]
from ftcl_core.pages import markup
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study import evidence, experiment_file, table_verdicts
from ftcl_core.study.chapters import open_questions

# this page trains nothing: it reads the committed runs, whatever the profile
stored = evidence.Evidence.load("cpu")
open_rows = table_verdicts.open_runs(profile="cpu", root=experiment_file.STORED)

# %% tags=["remove-cell"]
glue_reading(open_questions.read(stored))


# %% [markdown]
# ## Questions the runs leave open
#
# * **Runs as long as the paper's.** The paper's Table 6 runs take
#   {glue:text}`07a_when_ft_helps.ipynb::paper_steps_lo:s` to {glue:text}`07a_when_ft_helps.ipynb::paper_steps_hi:s`
#   steps; the longest pair here takes {glue:text}`07a_when_ft_helps.ipynb::longest_steps:s`
#   ([the training length](training-length)). Whether such runs turn {term}`FT`'s first-step cost into a gain is not
#   decided here.
# * **Larger networks and images.** Planned but not run: {glue:md}`cap_unrun`. At {glue:md}`res_crop`-px crops of
#   {glue:md}`res_image`-px shapes ({glue:md}`res_where`), {glue:md}`res_n_seeds` of {glue:md}`res_min_seeds`
#   {term}`paired` seeds are stored (FT minus baseline {glue:md}`res_diff` points so far): {term}`undecided`. Whether
#   a still larger network or the paper's 224-px crops recover is not tested ([the network](is-it-the-network)).
# * **Why re-normalised negatives cost.** What else {term}`Supp F`'s re-normalisation changes (each mix is a point
#   between two keys lifted back onto the sphere, where no image lies) is not tested; the cause of its loss stays
#   undecided ([the negatives](07i_negatives.ipynb)).
# * **The crowding or the clock.** On the task with room, every cell that crowds the images switches FT on by step
#   {glue:md}`hr_crowd_clock_latest_steps` of its run, every cell that does not at step
#   {glue:md}`hr_spread_clock_earliest_steps` or later, so the map cannot tell the two apart
#   ([the crowding](#the-crowding)). The experiment that holds the switch step and changes the length
#   (`experiments/headroom/switch_v1.yaml`) found that the time left after the switch does not explain the cost at
#   120 epochs ({glue:md}`hr_switch_from_9_of_120_diff` points from epoch 9 of 120), and that a switch at epoch 18
#   of 120 costs without crowding the images ({glue:md}`hr_switch_from_18_of_120_diff` points): the crowding is not
#   needed for the cost; a switch at epoch 9 of 240 did not gain as the time left predicted
#   ({glue:md}`hr_switch_from_9_of_240_diff`). Holding positive extrapolation back while the images crowd
#   (`ft.pos_gate`) lessened the crowding and the cost, but did not remove the cost
#   ({glue:md}`hr_switch_held_9_of_120_diff` points). Open: whether the crowding itself, rather than {term}`+pos` in
#   the crowded steps, adds to the cost; an arm that lessens the crowding without touching +pos would tell.
#
# ## Runs not stored yet
#
# Each setting of the book's experiment files (`experiments/`, `experiments/diagnosis/`, `experiments/headroom/`)
# whose stored runs hold fewer seeds than the file asks for, on the `cpu` profile. `python -m ftcl_core sweep FILE`
# trains a file's missing runs; the task with room's map and its switch experiment train with
# `bash tools/headroom_map.sh` and `bash tools/switch_runs.sh` (a baseline took about {glue:md}`hr_minutes_240`
# minutes at 240 epochs on one CPU thread).

# %%
markup.html_table(["table", "setting", "seeds stored", "seeds to train", "experiment file"],
             [[r["table"], r["setting"], ", ".join(map(str, r["stored"])) or "none",
               ", ".join(map(str, r["missing"])), r["file"]] for r in open_rows],
             caption="Settings short of their seeds (none stored: never run).")
