# %% [markdown]
# # Run explorer
#
# Every stored run of the chosen profile, in one place. The first figure responds in the static page:
# pick a setting from the menu to see its three statistics (its lowest seed), as raw cosines (solid) and
# after FT (dotted). In a live kernel, the widget below it overlays any runs you select, every seed
# included, with their gradient landscapes and readout.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)
max_runs = 120  # settings in the static menu (one seed each)

# %%
import matplotlib.pyplot as plt

from ftcl_core import experiments as X
from ftcl_core import plotting as P

if profile == "smoke":  # make sure a few runs exist
    X.sweep("experiments/table5_ft_v2.yaml", profile, seeds=[0], settings=["v2 baseline", "v2 +both"], progress=False)
labels = X.stored_runs(profile)
evals = {name: r.load_eval() for name, r in labels.items()}
P.html_table(["run", "linear top-1 %", "kNN top-1 %", "random init linear %"],
             [[name, f"{e['linear_top1']:.1f}", f"{e['knn_top1']:.1f}", f"{e['random_init_linear_top1']:.1f}"]
              for name, e in evals.items()], collapsed=f"{len(labels)} complete runs of the {profile} profile (click to list)")

# %%
shown = X.one_seed_per_setting(list(labels))[:max_runs]  # the lowest seed of each setting in the static menu
metrics = {name: labels[name].load_metrics() for name in shown}
P.plotly_html(P.runs_explorer(metrics), include_js=True) if metrics else print("no runs yet")

# %%
import ipywidgets as widgets


def compare(selected=tuple(list(labels)[:2])):
    if not selected:
        return
    P.score_statistics({s: labels[s].load_metrics() for s in selected})
    plt.show()
    fig = plt.figure(figsize=(4.2 * len(selected), 3.6))
    for i, s in enumerate(selected):
        ax = fig.add_subplot(1, len(selected), i + 1, projection="3d")
        P.grad_landscape(labels[s].load_grad_norms()["per_epoch"], title=s, ax=ax)
    plt.show()


P.live_widget(lambda: widgets.interactive(
    compare, selected=widgets.SelectMultiple(options=list(labels), value=tuple(list(labels)[:2]), rows=8, description="runs")))
