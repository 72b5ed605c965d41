# %% [markdown]
# # Run explorer
#
# Every stored run of the chosen profile, in one place. The first figure responds in the static page, with no
# kernel: pick a table or experiment (one entry per experiment file under `experiments/`: the paper's Tables 1-7
# on the shapes and on Fashion-MNIST, the supplement's, the diagnoses, the calibrations), then one of its
# settings, and the three panels show that setting's score statistics (its lowest seed) against the epoch:
# {term}`Mean(pos)`, the mean cosine of a query with its positive key; {term}`Mean(neg)`, the mean cosine with the queue's
# negatives; {term}`Var(neg)`, their variance. Solid lines are the raw cosines, dotted lines the same statistics after
# the setting's feature transformation; where a run trains with {term}`FT` off the dotted line lies on the solid one.
# The figure opens on MoCo v1 with both transformations (Table 7), where the two differ.
# In a live kernel (JupyterLab, Colab), the widget below overlays any runs you select, every seed included,
# with a smoothing slider, and draws their gradient landscapes.
#
# The list of run folders names each run `table/setting/seed` and gives its {term}`readout`s on the test images: linear
# probe, kNN, and the linear probe on the same network at random initialisation (the calibration and screen folders,
# `CAL-…` and `H-task-screen-v1`, score on their validation split instead). A run that two tables share is trained
# once and copied, so it is listed
# under each ([Results against the paper](09_results.ipynb) counts each comparison once).

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %% tags=["hide-input"]
from ftcl_core.pages import explorers, markup
from ftcl_core.study import store, sweeps

if profile == "smoke":  # make sure a few runs exist
    sweeps.sweep("experiments/table7_ft_v2.yaml", profile, seeds=[0], settings=["v2 baseline", "v2 +both"], progress=False)
labels = store.stored_runs(profile)
evals = {name: r.load_eval() for name, r in labels.items()}
markup.html_table(["run", "linear top-1 %", "kNN top-1 %", "random init linear %"],
             [[name, f"{e['linear_top1']:.1f}", f"{e['knn_top1']:.1f}", f"{e['random_init_linear_top1']:.1f}"]
              for name, e in evals.items()], collapsed=f"{len(labels)} stored run folders of the {profile} profile (click to list)")

# %% tags=["hide-input"]
groups = explorers.run_groups(list(labels), profile)  # every stored setting (its lowest seed), by the experiment file listing it
first = next((g for g in groups if g.startswith("T7 · MoCo v1")), None)  # open on FT, where solid and dotted differ
if first:
    groups = {first: sorted(groups[first], key=lambda run: "+both " not in run[1]),
              **{g: rows for g, rows in groups.items() if g != first}}
metrics = {run: labels[run].load_metrics() for rows in groups.values() for run, _ in rows}
explorers.runs_explorer(metrics, groups) if metrics else print("no runs yet")

# %% tags=["hide-input"]
explorers.live_widget(lambda: explorers.runs_widget(labels))
