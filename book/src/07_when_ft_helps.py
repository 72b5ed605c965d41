# %% [markdown]
# # When does feature transformation help?
#
# Chapter 6 found the paper's headline reversed at this scale. On the embedded shapes, most settings with positive
# extrapolation from the first step pull the raw negative cosines towards one in their first steps (on the original
# recipes past the collapse level of chapter 5; on the calibrated ones close to it: the table of the real-photographs
# section gives the peaks) and end far below their baselines; on Fashion-MNIST's real photographs the same settings
# cost far less, but do not help either. A finding that contradicts the paper needs a cause, or an honest
# "undecided". This chapter collects what is decided so far, section by section:
#
# 1. **The algebra.** What positive extrapolation does to the gradient, derived, checked against autograd, and
#    turned into a testable prediction: a concentrated representation *attracts* (collapse deepens) while the
#    two views' deviations correlate less than a threshold that FT raises above 0.
# 2. **Where training sits.** The views' correlation $\rho$ and Mean(neg) measured per step in stored runs, against
#    that threshold; then **starting later**: where Table 7's runs stand when FT switches on.
# 3. **Is it our recipe?** FT against its baseline on the recipes calibrated without FT on a validation split
#    (`experiments/calibration/`), beside the verdicts on the profile's original recipes, and with the released
#    code's Kaiming initialisation.
# 4. **Is it the false negatives?** The explanation this book gave first: with 10 classes, about a tenth of the
#    queue holds the query's own class. An oracle that removes those negatives from the loss tests it, and so do
#    30 classes, with the queue's same-class share measured. Then: **is it one λ for the whole batch?**
# 5. **Is it the synthetic data, or the length?** The same comparison on real photographs (Fashion-MNIST) at two
#    training lengths, and the shapes at a fourfold budget (mostly trained on a lent GPU).
# 6. **When to switch FT on.** A phase diagram: FT started after a fraction of the run, on both data sets and at
#    two lengths, with $\rho$ and Mean(neg) at the moment FT switches on.
# 7. **Is it how hard the negatives are?** Supp F's re-normalisation and Supp G's harder negatives, read through
#    what each does to the scores of the negatives the loss sees.
# 8. **What is decided, and what is not**, and the answer the runs give.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)
seeds = [0]
diagnosis = ["experiments/diagnosis/recipe_v1.yaml", "experiments/diagnosis/recipe_v2.yaml"]
oracle = "experiments/diagnosis/oracle_v1.yaml"  # MoCo v1 (calibrated) without same-class negatives
real = "experiments/diagnosis/fmnist_v1.yaml"  # MoCo v1 on Fashion-MNIST
longer = "experiments/diagnosis/length_fmnist_v1.yaml"  # the same pair at the recipe's full length
shards = "experiments/diagnosis/shards_v1.yaml"  # one lambda per shard of 32 queries, as the released run draws it
init = "experiments/diagnosis/init_v1.yaml"  # both arms with Kaiming fan-out init, as the released code trains
classes = "experiments/diagnosis/classes_v1.yaml"  # 30 classes: a third as many same-class negatives
negative_tables = {"plain": "experiments/table5_ft_v1.yaml", "renorm": "experiments/supp_f_renorm.yaml",
                   "harder": "experiments/supp_g_negatives.yaml"}  # MoCo v1 (calibrated): mixed, re-normalised, harder negatives
points = 21  # values of rho in the contraction figure

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import display

from ftcl_core import calibration as C
from ftcl_core import diagnosis as G
from ftcl_core import experiments as X
from ftcl_core import plotting as P
from ftcl_core.data import fashion_mnist_root
from ftcl_core.runs import RunDir

starts = G.START_EXPERIMENTS  # FT switched on later, per data set and length (the answer below rests on the same)

# %% [markdown]
# ## The gradient of the extrapolated loss
#
# The released code mixes the normalised query $q$ and its (detached) key $k$ with one
# $\lambda \sim \mathrm{Beta}(2, 2) + 1$ per step (eq. 3): $\hat q = \lambda q + (1-\lambda) k$,
# $\hat k = \lambda k + (1-\lambda) q$, and scores $\hat q$ against the positive $\hat k$ and the negatives $n_j$.
# For unit $q, k$ the positive score is
#
# $$\hat s_+ = \hat q \cdot \hat k = A\, q\cdot k + 2\lambda(1-\lambda), \qquad A = \lambda^2 + (1-\lambda)^2,$$
#
# so $\partial \hat s_+/\partial q = A k + 2\lambda(1-\lambda) q$, and each negative score $\hat q\cdot n_j$ has
# gradient $\lambda n_j$. With the softmax weights $p$ of eq. 1 and the normaliser $q = z/\lvert z\rvert$, whose
# Jacobian projects onto the tangent plane ($P_q = (I - q q^\top)/\lvert z\rvert$), the $q$ term drops out:
#
# $$\frac{\partial \mathcal{L}}{\partial z} = -\frac{1 - p_0}{\tau}\, P_q\!\left[A\,k - \lambda\,\bar n\right],
# \qquad \bar n = \frac{\sum_j p_j n_j}{1 - p_0}.$$
#
# Without FT, $A = \lambda = 1$: alignment (the pull to $k$) and uniformity (the push from $\bar n$) are weighed
# equally. With FT the pull is weighed by $A$ and the push by $\lambda$. `ftcl_core.diagnosis.analytic_gradient`
# implements this formula; below it is compared with autograd through the library's own FT and loss.

# %%
gen = torch.Generator().manual_seed(0)
z = torch.randn(64, 32, generator=gen, dtype=torch.float64) * 2
k = F.normalize(torch.randn(64, 32, generator=gen, dtype=torch.float64), dim=1)
negatives = F.normalize(torch.randn(512, 32, generator=gen, dtype=torch.float64), dim=1)
worst = max(float((G.analytic_gradient(z, k, negatives, lam, 0.2) - G.autograd_gradient(z, k, negatives, lam, 0.2))
                  .abs().max() / G.autograd_gradient(z, k, negatives, lam, 0.2).abs().max())
            for lam in (1.0, 1.25, 1.5, 1.75, 2.0))
ratio = G.mean_weight_ratio(2.0)
P.markdown_html(
    f"Largest difference between the formula and autograd, relative to the gradient's largest entry, over "
    f"λ = 1 … 2 (float64): **{worst:.1e}**. Averaged over the paper's λ ~ Beta(2, 2) + 1, the pull is weighed "
    f"**{ratio:.2f}** times as much as the push (E[A/λ]; 1 without FT).")

# %% [markdown]
# ## A concentrated state: does it attract or repel?
#
# Linearise around a concentrated representation: every feature near one direction $m$, queries $q_i = m + d_i$
# and keys $k_i = m + e_i$ with small tangent deviations, and negatives whose weighted deviation is unrelated to
# $d_i$. One gradient step moves $d_i$ by $c\,(A e_i - (A - \lambda) d_i)$, so the spread
# $\mathbb{E}\lvert d\rvert^2$ changes at the rate $2c\,(A\rho - (A - \lambda))\,\mathbb{E}\lvert d\rvert^2$, where
# $\rho$ is the correlation of the two views' deviations. The spread **shrinks** (the collapse deepens) when
#
# $$\rho < 1 - \frac{\lambda}{A}.$$
#
# Without FT the threshold is 0: a concentrated state spreads out as soon as the two views agree at all. With
# FT it rises (0.4 at $\lambda = 1.5$, up to 0.6 at $\lambda = 2$): concentration attracts until the views agree
# well. The figure checks the linearisation without it: one SGD step, in float64, of the real loss on a
# concentrated state built with a chosen $\rho$ (`ftcl_core.diagnosis.contraction_rate`; a queue of 4 096
# unrelated negatives, $\tau = 0.2$). Below zero the state contracts. Dotted lines: the predicted thresholds.

# %%
rhos = np.linspace(-0.5, 1.0, points if profile != "smoke" else 7)
lams = (1.0, 1.25, 1.5, 1.75, 2.0)
fig, ax = plt.subplots(figsize=(7, 3.6))
crossings = {}
for lam, color in zip(lams, plt.cm.viridis(np.linspace(0, 0.9, len(lams)))):
    rates = np.array([G.contraction_rate(float(r), lam) for r in rhos])
    ax.plot(rhos, rates, color=color, label=f"λ = {lam:g}" + (" (no FT)" if lam == 1 else ""))
    ax.axvline(G.attraction_threshold(lam), color=color, ls=":", lw=1)
    sign = np.flatnonzero(np.diff(np.sign(rates)) > 0)
    crossings[lam] = float(np.interp(0, rates[sign[0]:sign[0] + 2], rhos[sign[0]:sign[0] + 2])) if sign.size else math.nan
ax.axhline(0, color="black", lw=0.8)
ax.set_xlabel("ρ: correlation of the two views' deviations")
ax.set_ylabel("relative change of the spread\nafter one step")
ax.set_title("Concentrated states contract left of the threshold", fontsize=10)
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
P.markdown_html("Measured sign changes against the predicted thresholds: " + "; ".join(
    f"λ = {lam:g}: {crossings[lam]:.2f} (predicted {G.attraction_threshold(lam):.2f})" for lam in lams) +
    ". The measured crossings sit a little left of the prediction: the softmax-weighted negatives closest to a "
    "query push it away, a repulsion the linearisation leaves out.")

# %% [markdown]
# ## Where training sits
#
# The recorder keeps, per step, the views' deviation correlation $\rho$ of the batch (`rho`), the alignment and
# uniformity of {cite}`wang2020understanding`, and the effective rank {cite}`roy2007effective` of the features
# (`ftcl_core.stats.representation_statistics`). Below: $\rho$ and Mean(neg) of the raw cosines over the first steps of the
# diagnosis runs, baseline against FT (seed 0 of each), with the band of thresholds $1 - \lambda/A$ that
# Beta(2, 2) + 1 draws (its 5th to 95th percentile).

# %%
def load(path):
    if profile == "smoke":  # CI trains the tiny versions; the cpu profile shows what is stored, never trains here
        return X.collect(path, profile, seeds)
    return X.load_records(path, profile)


records = {path: load(path) for path in diagnosis}
runs = {}
for path, recs in records.items():
    exp = X.Experiment.load(path)
    for r in recs:
        if r["seed"] == min(x["seed"] for x in recs):
            m = RunDir(r["dir"]).load_metrics()
            if "rho" in m:
                runs[f"{exp.table.removeprefix('D-recipe-')} {r['setting']}"] = m
band = G.threshold_band(2.0)  # at the 5th and 95th percentiles of lambda ~ Beta(2, 2) + 1
if runs:
    steps = min(400, min(len(m["rho"]) for m in runs.values()))
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    for name, m in runs.items():
        ls = "-" if "baseline" in name else "--"
        axes[0].plot(m["step"][:steps], P.smooth(m["rho"][:steps], 5), ls, label=name)
        axes[1].plot(m["step"][:steps], P.smooth(m["neg_mean"][:steps], 5), ls, label=name)
    axes[0].axhspan(*sorted(band), color="orange", alpha=0.2, label="threshold 1 - λ/A (FT)")
    axes[0].axhline(0, color="black", lw=0.8)
    axes[0].set(xlabel="step", ylabel="ρ (views' deviation correlation)")
    axes[1].set(xlabel="step", ylabel="Mean(neg), raw cosines")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    plt.show()
    start = {name: (float(m["rho"][0]), float(m["neg_mean"][0])) for name, m in runs.items()}
    display(P.markdown_html("At the first step (FT on from step 0): " + "; ".join(
        f"{name}: ρ = {r:.2f}, Mean(neg) = {n:.2f}" for name, (r, n) in start.items()) +
        f". The FT threshold band is {min(band):.2f} to {max(band):.2f}."))
else:
    display(P.markdown_html("No stored diagnosis run records ρ yet: train them with "
                            + ", ".join(f"`python -m ftcl_core sweep {p}`" for p in diagnosis) + "."))

# %% [markdown]
# ## Starting later: where the runs stand when FT switches on
#
# The threshold says a concentrated state attracts while the views' correlation $\rho$ is low, as it is at
# initialisation; training without FT raises $\rho$ within a few dozen steps (the figure above). Table 7's runs
# (chapter 6) switch FT on later, after $\rho$ has risen (the table gives how far). For each start: $\rho$ and
# Mean(neg) of the raw cosines just before FT switches on, the highest Mean(neg) afterwards, and the readout against
# training without FT (paired over seeds).

# %%
t7 = "experiments/table7_start_epoch.yaml"
t7_records = (X.collect(t7, profile, [0], ["start 1", "never"]) if profile == "smoke"
              else X.load_records(t7, profile))
t7_exp = X.Experiment.load(t7)
t7_rows = {r["setting"]: r for r in X.table_rows(t7_exp, t7_records)}
def switch_on_table(rows, records, caption):
    """Rows of a Table 7 experiment's comparisons, with where the runs stood when FT switched on; returns
    ``(setting, row, state)`` per start."""
    out, starts = [], []
    for setting, row in rows.items():
        if not row["reference"]:
            continue
        state = G.switch_on_state(records, setting)
        starts.append((setting, row, state))
        out.append([setting, f"{state['rho_before']:.2f}", f"{state['neg_mean_before']:.2f}",
                    f"{state['peak_neg_mean_after']:.2f}",
                    ", ".join("never" if f is None else str(f) for f in state["steps_to_collapse"]),
                    f"{X.plus_minus(row['diff_mean'], row['diff_ci95'])} ({row['verdict']}, {row['n_seeds']} seeds)"])
    display(P.html_table(["FT from", "ρ before", "Mean(neg) before", "highest Mean(neg) after",
                          "steps until Mean(neg) > 0.9, per seed", "linear readout vs never (points)"], out,
                         caption=caption))
    return starts


later = switch_on_table(t7_rows, t7_records, "Table 7's runs (MoCo v1, +pos +neg), seeds averaged; ρ and Mean(neg) "
                        "over the 5 steps before FT switches on (at the first step for FT from the start)")
display(P.markdown_html(G.switch_on_sentence(later)))
first_start = "start 1"  # the paper's "FT from epoch 2": the first start after step 0
display(P.markdown_html(G.random_queue_sentence(
    X.resolve(X.base_for(t7_exp, profile), t7_exp.overrides(first_start, seeds[0]), profile), first_start,
    t7_rows.get(first_start, {"n_seeds": 0}))))

# %% [markdown]
# ## Is it our recipe? FT on calibrated baselines
#
# Does the collapse belong to this project's recipe rather than to the method? Each MoCo baseline was
# calibrated without FT, on a validation split, at one step budget (`results/calibration.csv`, chapter 9); the
# chosen recipes are `configs/cpu_cal_moco_v1.yaml` and `configs/cpu_cal_moco_v2.yaml`. FT then runs with the
# paper's settings unchanged (both transformations, α_ex = 2, α_in = 1.6), paired by seed with its baseline.
# The original recipe's pair is Table 5's first runs (the dated record `results/cpu-2026-11/` keeps them once the
# table is rerun on the calibrated recipe).

# %%
before = {"v1": ("experiments/table5_ft_v1.yaml", "v1 baseline", "v1 +both"),
          "v2": ("experiments/table5_ft_v2.yaml", "v2 baseline", "v2 +both")}
rows = []
for version, (path, base, treated) in before.items():
    recs = X.original_recipe_records(path, profile) if profile != "smoke" else []  # the dated record once rerun
    rows.append(G.paired_comparison(f"MoCo {version}, original recipe", recs, base, treated,
                                    effect=G.claim_effect(path, treated, base)))
    cal = next(p for p in diagnosis if p.endswith(f"_{version}.yaml"))
    rows.append(G.paired_comparison(f"MoCo {version}, calibrated recipe", records[cal], "baseline", "+both",
                                    effect=G.claim_effect(cal, "+both", "baseline")))



def comparison_table(rows, caption, columns=("baseline", "FT (+pos +neg)", "Δ (FT - baseline)")):
    display(P.html_table(["comparison", *columns, "seeds", "verdict"], [G.comparison_cells(r) for r in rows],
                         caption=caption))


comparison_table(rows, "Linear top-1 (%), mean over seeds; Δ paired by seed with its 95 % interval; the verdict is on "
                       "the paper's claim that FT helps")
versions, recipes = ["MoCo v1", "MoCo v2"], ["original recipe", "calibrated recipe"]
cell = {(v, c): r for r in rows for v in versions for c in recipes if r["comparison"] == f"{v}, {c}"}
grid = np.array([[cell[v, c]["diff"] if cell[v, c]["n_seeds"] else np.nan for c in recipes] for v in versions])
grid_ci = np.array([[cell[v, c]["ci95"] for c in recipes] for v in versions])
P.difference_grid(versions, recipes, grid, grid_ci, [[cell[v, c]["verdict"] for c in recipes] for v in versions],
                  title="FT (+pos +neg) minus its baseline, by method and recipe")
plt.show()
summary_rows = X.summary_rows(profile) if profile != "smoke" else []  # chapter 9 writes results/summary.csv
display(P.markdown_html(G.baseline_caveat(X.baseline_aims(summary_rows))))

# %% [markdown]
# The initialisation: the released code trains from Kaiming fan-out, the calibrated recipe from PyTorch's default.
# Below, what the calibration measured, and the pair again with Kaiming on both arms (D-init-v1; the paper's lr and
# weight decay are the calibrated recipe's already):

# %%
cal_trials = C.trials(profile="cpu") if profile != "smoke" else []  # the stored calibration runs (chapter 9)
display(P.markdown_html(C.init_sentence(cal_trials, "moco_v1", X.resolve(X.base_for(X.Experiment.load(init), profile),
                                                                           {}, profile).model.encoder)))
init_rows = [G.paired_comparison("MoCo v1, calibrated recipe, Kaiming fan-out init", load(init), "baseline", "+both",
                                 effect=G.claim_effect(init, "+both", "baseline"))]
comparison_table(init_rows, "Linear top-1 (%), mean over seeds; Δ paired by seed with its 95 % interval")

# %% [markdown]
# ## Is it the false negatives? An oracle without them
#
# The first explanation this book gave (chapter 6) was false negatives: the embedded data has 10 classes, so
# about a tenth of the queue holds keys of the query's own class, and with interpolated negatives about a fifth
# of the mixtures contain one. If FT collapses the encoder by pushing those apart more strongly, it should not
# collapse when they are gone. `moco.drop_same_class=true` is that oracle (not in the paper; it uses the training
# labels, which no self-supervised method may): the loss ignores every queue negative made of a key of the
# query's class (`ftcl_core.methods.moco_diagnosis.same_class_negatives`). The statistics still describe all negatives, so
# Mean(neg) is comparable with the runs above. Same calibrated MoCo v1 recipe, paired by seed.

# %%
oracle_records = load(oracle)
plain_records = records[next(p for p in diagnosis if p.endswith("_v1.yaml"))]
both = (G.relabel(plain_records, {"+both": "FT"}) + G.relabel(oracle_records, {"+both": "FT, no same-class"})
        + G.relabel(plain_records, {"baseline": "base"}) + G.relabel(oracle_records, {"baseline": "base, no same-class"}))
oracle_rows = [
    G.paired_comparison("no same-class negatives: FT against its baseline", oracle_records, "baseline", "+both",
                        effect=G.claim_effect(oracle, "+both", "baseline")),
    G.paired_comparison("FT: without against with same-class negatives", both, "FT", "FT, no same-class"),
    G.paired_comparison("baseline: without against with same-class negatives", both, "base", "base, no same-class"),
]

comparison_table(oracle_rows, "Linear top-1 (%), mean over seeds; Δ paired by seed with its 95 % interval. Rows 2 and 3 "
                 "compare a run without same-class negatives (right) with the same seed's run with them (left); their "
                 "verdict reads 'replicated' when removing them helps",
                 columns=("left", "right", "Δ (right - left)"))
curves = {}
for name, recs, setting in (("FT", plain_records, "+both"), ("FT, no same-class", oracle_records, "+both"),
                            ("baseline", plain_records, "baseline"), ("baseline, no same-class", oracle_records, "baseline")):
    first = sorted((r for r in recs if r["setting"] == setting), key=lambda r: r["seed"])
    if first:
        curves[name] = RunDir(first[0]["dir"]).load_metrics()
if curves:
    steps = min(400, min(len(m["neg_mean"]) for m in curves.values()))
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for name, m in curves.items():
        ax.plot(m["step"][:steps], P.smooth(m["neg_mean"][:steps], 5), "--" if "no same" in name else "-", label=name)
    ax.axhline(0.9, color="gray", lw=0.8, ls=":")
    ax.set(xlabel="step", ylabel="Mean(neg), raw cosines", title="Seed 0: with and without same-class negatives")
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.show()
    firsts = {name: G.first_step_above(m["neg_mean"]) for name, m in curves.items()}
    display(P.markdown_html("First step at which Mean(neg) passes 0.9 (seed 0): " + "; ".join(
        f"{name}: {'never' if f is None else f}" for name, f in firsts.items()) + "."))

# %% [markdown]
# The other way to thin out false negatives is more classes. `data.classes=30` draws the same shapes with a
# second class-defining factor, their fill (solid, outline, striped), which turns with the shape and survives
# crops, flips and colour jitter; a random negative then shares the query's class one time in 30 instead of one
# in 10, and a linear probe on the colours an image shows stays at chance (`tests/test_data.py`). The same pair on
# 30 classes (D-classes-v1) records the queue's same-class share per step (`stats.same_class=true`, which reads the
# labels only to count them). The second row compares FT's gain over its baseline at 30 and at 10 classes, paired
# by seed: above zero, fewer false negatives soften FT's cost.

# %%
class_records = load(classes)
class_rows = [
    G.paired_comparison("30 classes: FT against its baseline", class_records, "baseline", "+both",
                        effect=G.claim_effect(classes, "+both", "baseline")),
    G.paired_comparison("FT's gain over its baseline: 30 against 10 classes",
                        G.gap_records(plain_records, "baseline", "+both", "10 classes")
                        + G.gap_records(class_records, "baseline", "+both", "30 classes"), "10 classes", "30 classes"),
]
comparison_table(class_rows[:1], "Linear top-1 (%) on 30 classes, mean over seeds; Δ paired by seed")
comparison_table(class_rows[1:], "FT's gain over its baseline (points, negative for a cost) at 10 and 30 classes; Δ "
                 "paired by seed", columns=("10 classes", "30 classes", "Δ (30 - 10)"))
shares = [float(np.nanmean(RunDir(r["dir"]).load_metrics()["same_class"])) for r in class_records
          if "same_class" in RunDir(r["dir"]).load_metrics()]
if shares:
    display(P.markdown_html(f"The queue's same-class share, averaged over every step and run: **{np.mean(shares):.3f}** "
                            f"(1/30 = {1 / 30:.3f}; at 10 classes it is 1/10 by the same balance)."))

# %% [markdown]
# ## Is it one λ for the whole batch?
#
# The released code trains on 8 processes, and each draws its own λ for its own 32 queries and mixes the queue its
# own way; this project draws one λ per step for the whole batch. `ft.shards=8` does what the 8 processes do, in
# one process. A whole batch sharing one large λ might push every query the same way at once; eight independent
# draws average that out. Same calibrated MoCo v1 recipe, paired by seed (the 120-step screen is in
# `results/screens/2026-11-27_lambda-per-shard.md`).

# %%
shard_records = load(shards)
shard_rows = [G.paired_comparison("one λ per shard of 32 queries: FT against its baseline", shard_records, "baseline",
                                  "+both", effect=G.claim_effect(shards, "+both", "baseline"))]
comparison_table(shard_rows, "Linear top-1 (%), mean over seeds; Δ paired by seed with its 95 % interval")

# %% [markdown]
# ## Is it the synthetic data? Real photographs
#
# Every run above draws its images procedurally. Fashion-MNIST holds real 28×28 photographs of clothing in
# 10 classes (chapter 9 and `configs/cpu_fmnist_moco_v1.yaml` say how the recipe treats gray images). Its MoCo v1
# recipe was calibrated without FT on Fashion-MNIST's own validation split, by the same protocol; FT then runs with
# the paper's settings, paired by seed. On real images the linear probe on the raw pixels is a third reference:
# an encoder is worth something only above it.

# %%
def load_real(path):
    if profile != "smoke":
        return X.load_records(path, profile)
    if fashion_mnist_root(None) is not None:
        return X.collect(path, profile, seeds)
    # CI machines without Debian's dataset-fashion-mnist: the section says so instead of training
    display(P.markdown_html("Fashion-MNIST is not installed here (`apt-get install dataset-fashion-mnist`, or "
                            "`data.download=true`): this section shows no runs."))
    return []


def steps_of(path):  # the steps of an experiment's baseline run
    exp = X.Experiment.load(path)
    return X.planned_steps(X.resolve(X.base_for(exp, profile), exp.overrides("baseline", seeds[0]), profile))


real_records = load_real(real)
real_rows = [G.paired_comparison(f"MoCo v1 on Fashion-MNIST, calibrated recipe, {steps_of(real)} steps", real_records,
                                 "baseline", "+both", effect=G.claim_effect(real, "+both", "baseline"))]
comparison_table(real_rows, "Linear top-1 (%) on Fashion-MNIST's test images, mean over seeds; Δ paired by seed")
signatures = {name: G.representation_signature(recs, setting) for name, recs, setting in (
    ("shapes, baseline", plain_records, "baseline"), ("shapes, FT", plain_records, "+both"),
    ("shapes, FT, no same-class negatives", oracle_records, "+both"),
    ("Fashion-MNIST, baseline", real_records, "baseline"), ("Fashion-MNIST, FT", real_records, "+both"))}
display(P.html_table(["runs (MoCo v1, calibrated)", "seeds", "highest Mean(neg)", "final effective rank", "final ρ"],
                     [[name, str(sig["n_seeds"]), f"{sig['peak_neg_mean']:.2f}", f"{sig['final_erank']:.1f}",
                       f"{sig['final_rho']:.2f}"] for name, sig in signatures.items() if sig["n_seeds"]],
                     caption="How far the features concentrate, mean over seeds: Mean(neg) of the raw cosines at its "
                             "highest, and the effective rank and views' correlation at the last step"))
pixels = [r["raw_pixels_linear_top1"] for r in real_records if "raw_pixels_linear_top1" in r]
randoms = [r["random_init_linear_top1"] for r in real_records if "random_init_linear_top1" in r]
if real_records:
    display(P.markdown_html(
        f"References on the same test images: the raw-pixel linear probe {np.mean(pixels):.1f} %, the random-init "
        f"encoder {np.mean(randoms):.1f} %." if pixels and randoms else "The runs stored no raw-pixel reference."))

# %% [markdown]
# ## Is it the training length? The same pair, three times as long
#
# The paper trains far more steps than a CPU run here (the answer at the end of the chapter gives both), and its
# Table 7 run with FT from the first step ends above its baseline; whether its features concentrate early, as here,
# is not reported. On Fashion-MNIST the short pair above left FT close to its baseline, so a longer run is where a
# recovery would show first: the same recipe and seeds at the
# recipe's full length, 30 epochs instead of the calibration budget's 10 (its lr steps scaled with it; the steps
# are in the tables), FT unchanged. The third row compares FT's gain over its
# baseline at the two lengths, paired by seed: above zero, the longer run narrows FT's cost.

# %%
long_records = load_real(longer)


short_steps, long_steps = steps_of(real), steps_of(longer)
length_rows = [
    G.paired_comparison(f"Fashion-MNIST, {long_steps} steps: FT against its baseline", long_records, "baseline", "+both",
                        effect=G.claim_effect(longer, "+both", "baseline")),
    G.paired_comparison(f"Fashion-MNIST, {short_steps} steps: FT against its baseline", real_records, "baseline", "+both",
                        effect=G.claim_effect(real, "+both", "baseline")),
    G.paired_comparison(f"FT's gain over its baseline: {long_steps} against {short_steps} steps",
                        G.gap_records(real_records, "baseline", "+both", "short")
                        + G.gap_records(long_records, "baseline", "+both", "long"), "short", "long"),
]
knn_row = G.paired_comparison(f"Fashion-MNIST, {long_steps} steps, kNN readout: FT against its baseline", long_records,
                              "baseline", "+both", key="knn_top1", effect=G.claim_effect(longer, "+both", "baseline"))
comparison_table([*length_rows[:2], knn_row], "Top-1 (%) on Fashion-MNIST's test images, mean over seeds (linear "
                 "readout, and in the last row the kNN readout); Δ paired by seed")
comparison_table(length_rows[2:], "FT's gain over its baseline (points, negative for a cost) at the two lengths; Δ "
                 "paired by seed", columns=(f"{short_steps} steps", f"{long_steps} steps", "Δ (longer - shorter)"))
if long_records:
    sig = {name: G.representation_signature(long_records, setting) for name, setting in (("baseline", "baseline"),
                                                                                         ("FT", "+both"))}
    display(P.markdown_html(
        f"At {long_steps} steps the features' final effective rank is {sig['FT']['final_erank']:.1f} with FT and "
        f"{sig['baseline']['final_erank']:.1f} without (Mean(neg) of the raw cosines at its highest: "
        f"{sig['FT']['peak_neg_mean']:.2f} and {sig['baseline']['peak_neg_mean']:.2f})."))

# %% [markdown]
# ## Is it the training length? On the shapes, four times as long
#
# On the shapes, where FT from the first step loses most, the same question: the calibrated MoCo v1 pair at the
# recipe's length and at four times that length (the lr steps at 60 % and 80 % of each run; the steps are in the
# tables), the paper's FT settings unchanged, paired by seed at each length
# (`experiments/diagnosis/length_long_v1.yaml`). A run four times as long takes four times a CPU run's time here,
# so most of these pairs were trained on a lent GPU with the same code and recipe
# (`python -m ftcl_core sweep ... --set device=cuda`; float32 throughout); each run's provenance names its device,
# and each pair is on one device. The 30-epoch pairs here are therefore their own runs, not the CPU runs of the
# recipe comparison above: the same recipe and seeds, with the GPU's float32 rounding, so their numbers differ a
# little from that table's. The last rows compare FT's gain over its baseline at
# the longer length with its gain at the recipe's length, paired by seed: above zero, the longer run narrows FT's cost.

# %%
shapes_length = "experiments/diagnosis/length_long_v1.yaml"
shapes_length_records = (X.collect(shapes_length, profile, seeds, ["baseline 30", "+both 30"]) if profile == "smoke"
                         else X.load_records(shapes_length, profile))
shapes_length_rows = {readout: G.length_rows(shapes_length, shapes_length_records, profile, key, "shapes")
                      for readout, key in (("linear", "linear_top1"), ("kNN", "knn_top1"))}
for readout, rows_ in shapes_length_rows.items():
    comparison_table([r for r in rows_ if r["kind"] == "length" and r["n_seeds"]],
                     f"Shapes, {readout} top-1 (%) at each training length, mean over seeds; Δ paired by seed")
    comparison_table([r for r in rows_ if r["kind"] == "gain" and r["n_seeds"]],
                     f"FT's gain over its baseline ({readout} readout, points) at the longer length against 30 epochs",
                     columns=("gain at 30 epochs", "gain when longer", "Δ (longer - 30 epochs)"))
length_steps = [r["steps"] for r in shapes_length_rows["linear"] if r["kind"] == "length"]
length_epochs = [r["epochs"] for r in shapes_length_rows["linear"] if r["kind"] == "length"]
arms = {name: [[r["linear_top1"] for r in shapes_length_records if r["setting"] == f"{setting} {n}"]
               for n in length_epochs] for name, setting in (("baseline", "baseline"), ("FT (+pos +neg)", "+both"))}
if any(len(v) for per in arms.values() for v in per):
    P.readout_by_length(length_steps, arms, random_init=float(np.mean([r["random_init_linear_top1"]
                                                                       for r in shapes_length_records])),
                        title="Shapes, calibrated MoCo v1: linear top-1 against the length of the run")
    display(P.markdown_html(G.length_sentence("the shapes", shapes_length_rows["linear"]) + " " +
                            G.length_sentence("the shapes", shapes_length_rows["kNN"], "kNN readout")))
# how far float rounding alone moves a run: the 30-epoch arms here against the recipe comparison's CPU runs
device_gaps = (G.same_run_gaps(shapes_length_records, "baseline 30", plain_records, "baseline")
               + G.same_run_gaps(shapes_length_records, "+both 30", plain_records, "+both"))
if device_gaps:
    display(P.markdown_html(
        f"The same config and seed trained once on the GPU and once on the CPU: {len(device_gaps)} pairs of 30-epoch "
        f"runs differ by {min(device_gaps):.2f} to {max(device_gaps):.2f} points of linear readout (mean "
        f"{np.mean(device_gaps):.2f}). A pair whose two arms trained on different devices carries that much besides "
        "the effect it measures; the comparison tables and the answer below name such pairs."))

# %% [markdown]
# ## Is it the network? Wider and deeper encoders
#
# Every run above uses one small encoder (a CIFAR-stem ResNet-10 of width 16, 0.3 M parameters, on 24-px crops),
# against the paper's ResNet-18 and ResNet-50 at ImageNet resolution. A 60-step screen at width 32 and at a width-32 ResNet-18
# (`results/screens/2026-12-01_capacity.md`) shows the same early concentration as at width 16; what could depend
# on the encoder is the recovery. So the
# same pair, FT (+pos +neg, the paper's settings) from the first step against the baseline of the same seeds,
# at four encoders on the shapes at the recipe's 30 epochs (`experiments/diagnosis/capacity_v1.yaml`; the
# width-16 pair is the recipe comparison above). Left: the readout of both arms against the encoder's parameters;
# right: the effective rank each arm's features end with. The largest, a standard CIFAR ResNet-18, is a job for a
# GPU; an encoder without 3 stored seeds is left undecided.

# %%
capacity = G.capacity_rows(profile)
P.capacity_figure(capacity)
plt.show()
comparison_table(capacity, "Linear top-1 (%) on the shapes' test images, mean over seeds; Δ paired by seed; FT "
                 "(+pos +neg) from the first step")
display(P.markdown_html(G.capacity_answer(capacity)))

# %% [markdown]
# ### Can the first 100 steps tell?
#
# The visualization tool is cheap: 100 steps of a run cost a few percent of it. From six named statistics of the
# 100 steps after FT switches on (the peak and final Mean(neg) of the raw cosines, the features' effective rank
# relative to the switch, the views' correlation $\rho$, Mean(pos), and the late slope of Mean(neg)), a logistic
# model predicts whether the full run loses readout against its baseline, and a ridge model by how much
# (`ftcl_core/predict.py`; `python -m ftcl_core predict` refits it and writes `results/predictor.json`). Each
# experiment's runs are predicted by models fitted on the other experiments' runs only, and the scores stand
# beside two references: always guessing the majority outcome, and the rule "Mean(neg) passes 0.9 within 20
# steps ⇒ FT loses". `python -m ftcl_core screen` prints the same prediction for a config after its first steps.

# %%
import json

from ftcl_core import predict

predictor = json.loads((X.ROOT / predict.REPORT).read_text())
P.predictor_figure(predictor)
plt.show()
display(P.markdown_html(predict.report_markdown(predictor)))
display(P.markdown_html(predict.report_sentence(predictor)))

# %% [markdown]
# ## When to switch FT on: a phase diagram over data, length and start
#
# The algebra says a concentrated state attracts while the views' correlation $\rho$ is below $1 - \lambda/A$, and
# $\rho$ is low only early in training. Switching FT on later should then spare the encoder the collapse, and the
# paper's Table 7 finds FT from epoch 2 of 100 a little better than from the start. Here the start on one axis and
# the data and length on the other, each cell paired by seed against the same run without FT: FT (+pos +neg, the
# paper's settings) switched on after a fraction of the run (0, 0.3, 0.5, 0.8; at 30 epochs also Table 7's epoch 1),
# on the shapes with the calibrated MoCo v1 recipe at 30 epochs (Table 7) and 120 epochs
# (`experiments/diagnosis/start_long_v1.yaml`), and on Fashion-MNIST at the calibration budget of
# 10 epochs (`start_fmnist_v1.yaml`) and at the recipe's full 30 epochs (Table 7 on Fashion-MNIST). Two
# readouts: the linear probe, and the kNN classifier, which reads the features' geometry as it is and so shows a
# concentration that a trained probe can undo. The tables below the diagrams say where each run stood when FT
# switched on.

# %%
def load_starts(path):
    if profile != "smoke":
        return X.load_records(path, profile)
    exp_ = X.Experiment.load(path)
    if X.data_set(exp_, profile) == "fashion_mnist" and fashion_mnist_root(None) is None:
        return []  # CI machines without Debian's dataset-fashion-mnist
    later_ = next(s for s in exp_.settings if s not in ("never", "start 0"))  # two tiny runs: FT from epoch 1 of 2
    return X.collect(path, profile, seeds, ["never", later_])


start_records = {length: load_starts(path) for length, path in starts.items()}
readouts = {"linear": "linear_top1", "kNN": "knn_top1"}
phases = {name: {length: G.start_fraction_rows(path, start_records[length], profile, key)
                 for length, path in starts.items()} for name, key in readouts.items()}
phase = phases["linear"]
fractions = sorted({f for rows_ in phase.values() for f in rows_})
lengths = list(starts)
# the diagram's capacity rows: FT from the first step at each larger encoder (the section above)
capacity_by_readout = {"linear": capacity, "kNN": G.capacity_rows(profile, readouts["kNN"])}
grids = {name: {**rows_, **{f"shapes, 30 epochs, {row['comparison']}": {0.0: row}
                            for row in capacity_by_readout[name][1:]}}
         for name, rows_ in phases.items()}


def phase_cell(length, f, field, readout="linear"):
    row = grids[readout][length].get(f)
    if row is None or not row["n_seeds"]:
        return np.nan if field != "verdict" else ""
    if field == "verdict":
        return row["verdict"] if row["n_seeds"] >= X.MIN_SEEDS else f"{row['n_seeds']} seed(s): undecided"
    return row[field]


for readout in readouts:
    rows_shown = list(grids[readout])
    P.difference_grid(rows_shown, [f"FT from {f:.0%} of the run" if f else "FT from the start" for f in fractions],
                      np.array([[phase_cell(n, f, "diff", readout) for f in fractions] for n in rows_shown]),
                      np.array([[phase_cell(n, f, "ci95", readout) for f in fractions] for n in rows_shown]),
                      [[phase_cell(n, f, "verdict", readout) for f in fractions] for n in rows_shown],
                      title=f"MoCo v1: FT minus the same run without FT ({readout} top-1, points)")
    plt.show()
phase_states = {}
for length, path in starts.items():
    exp_ = X.Experiment.load(path)
    phase_states[length] = switch_on_table(
        {r["setting"]: r for r in X.table_rows(exp_, start_records[length])}, start_records[length],
        f"{length}: where the runs stood when FT switched on (seeds averaged; for FT from the start, "
        "the first step, when the queue still holds its random initial keys)")

# %% [markdown]
# ## Is it how hard the negatives are? Supp F and Supp G
#
# Two of the supplement's tables change only the negatives; the table below sets them beside plain negative
# interpolation (Table 5's +neg, as in Table 3). Supp F re-normalises each mixed negative
# $\lambda n_i + (1-\lambda) n_j$ onto the sphere; Supp G extrapolates negatives ($\lambda \in (1, 2)$) or mixes the
# query into them (hard negatives, $\lambda \sim$ Beta(a, b)). A reading offered when Supp F's runs landed: a mix of
# two unit vectors is shorter than one, so its score against the query is the mix of their scores, pulled towards
# the mean; the loss sees easier negatives, and re-normalising makes them hard again. Every run stores the Supp A
# statistics of the negatives both raw and after FT (`ftcl_core.diagnosis.with_negative_scores`), so the reading can
# be checked without training: how far FT moves the mean score of the negatives, how it scales their spread, and
# where the raw Mean(neg) of the encoder ends. Same calibrated MoCo v1 recipe and seeds throughout.

# %%
def load_some(path, names):
    if profile == "smoke":  # only the settings this section reads
        return X.collect(path, profile, seeds, settings=names)
    return [r for r in X.load_records(path, profile) if r["setting"] in names]


plain_recs = load_some(negative_tables["plain"], ["v1 baseline", "v1 +neg"])
renorm_recs = load_some(negative_tables["renorm"], ["baseline", "renorm neg"])
harder_recs = load_some(negative_tables["harder"], ["baseline", "neg extrapolation", "hard Beta(2,1)", "hard Beta(5,2)"])
neg_rows = G.negative_rows([
    ("mixed negatives (Table 5 +neg)", plain_recs, "v1 baseline", "v1 +neg"),
    ("mixed, re-normalised (Supp F)", renorm_recs, "baseline", "renorm neg"),
    ("extrapolated negatives (Supp G)", harder_recs, "baseline", "neg extrapolation"),
    ("hard negatives Beta(2,1) (Supp G)", harder_recs, "baseline", "hard Beta(2,1)"),
    ("hard negatives Beta(5,2) (Supp G)", harder_recs, "baseline", "hard Beta(5,2)"),
])
display(P.html_table(
    ["comparison", "baseline", "FT", "Δ (FT - baseline)", "seeds", "verdict", "Mean(neg) shift by FT",
     "Var(neg) after FT / raw", "final raw Mean(neg) (baseline)"],
    [G.negative_cells(r) for r in neg_rows],
    caption="Linear top-1 (%), mean over seeds, Δ paired by seed with its 95 % interval; then, over the FT runs' seeds "
            "(± 95 % interval), how FT changes the negatives the loss sees, averaged over each run, and the raw Mean(neg) "
            f"of its last {G.NEGATIVE_WINDOW} steps"))
renorm_vs_plain = G.paired_comparison(
    "re-normalised against plain mixed negatives",
    G.relabel(plain_recs, {"v1 +neg": "plain"}) + G.relabel(renorm_recs, {"renorm neg": "re-normalised"}),
    "plain", "re-normalised")
renorm_text = G.renorm_sentence(neg_rows[0], neg_rows[1], renorm_vs_plain)
harder_text = G.harder_negatives_sentence(neg_rows[2:])
P.markdown_html(renorm_text + "\n\n" + harder_text)

# %% [markdown]
# ## What is decided, and what is not

# %%
cal_rows = [r for r in rows if "calibrated" in r["comparison"]]
varied = {v: ", ".join(C.varied(v.replace("MoCo ", "moco_"))) for v in versions}  # what each calibration tried
lines = [G.comparison_sentence(r, {
    "below": "Calibrating the baseline without FT does not remove the collapse: at this scale it is not an artefact of "
             f"the knobs {r['comparison'].split(',')[0]}'s calibration varied ({varied[r['comparison'].split(',')[0]]}).",
    "above": "With the calibrated recipe the paper's claim holds here, so the collapse of chapter 6 belonged to the "
             "original recipe."}) for r in cal_rows]
readings = [  # (comparison, what it means below zero, what it means above)
    (init_rows[0],
     "Kaiming fan-out initialisation, the released code's, does not spare the encoder either.",
     "With Kaiming fan-out initialisation, the released code's, FT helps: the default init was the cause."),
    (oracle_rows[0],
     "FT still loses without a single same-class negative: false negatives are not what makes FT collapse "
     "the encoder here.",
     "Without same-class negatives FT helps, as the paper says: false negatives are what turned it into a loss."),
    (oracle_rows[1],
     "Removing the same-class negatives makes the FT run worse still.",
     "Removing the same-class negatives recovers part of what FT loses."),
    (class_rows[0],
     "With a third as many same-class negatives (30 classes), FT still loses.",
     "With a third as many same-class negatives (30 classes), FT helps: false negatives drove its cost."),
    (class_rows[1],
     "Its cost is larger at 30 classes than at 10.",
     "Its cost is smaller at 30 classes than at 10: fewer false negatives soften it."),
    (shard_rows[0],
     "One λ per shard of 32 queries, as the released run draws it, loses as well: sharing one λ across the "
     "batch is not the cause.",
     "With one λ per shard of 32 queries FT helps: drawing one λ for the whole batch was the cause."),
    (real_rows[0],
     "On real photographs FT loses too: the reversal is not a property of the synthetic shapes.",
     "On real photographs FT helps, as the paper says: the reversal belongs to the synthetic shapes."),
    (length_rows[0],
     "At the longer budget FT still loses on real photographs: it has not recovered.",
     "At the longer budget FT helps on real photographs, as the paper says: the short runs were too short."),
    (knn_row,
     "Its kNN readout, which reads the features' geometry without training a classifier, loses: "
     "the concentration costs a nearest-neighbour reader what a linear probe can undo.",
     "Its kNN readout gains too."),
    (length_rows[2],
     "The longer run widens FT's cost: more steps do not bring FT back here.",
     "The longer run narrows FT's cost: training length is part of the answer."),
]
lines += [G.comparison_sentence(row, {"below": below, "above": above}) for row, below, above in readings]


def phase_summary(length):
    cells = [f"from {f:.0%} of the run: {X.plus_minus(r['diff'], r['ci95'])} ({phase_cell(length, f, 'verdict')})"
             for f, r in sorted(phase[length].items()) if f and r["n_seeds"]]
    return f"* **{length}, FT switched on later**: " + ("; ".join(cells) + "." if cells else "not run.")


lines += [phase_summary(length) for length in lengths]
lines.append("* **Harder negatives (Supp F, Supp G).** " + renorm_text + " " + harder_text)
lines += [
    "* **The mechanism.** The algebra and its float64 check above say that positive extrapolation turns a "
    "concentrated representation from a repeller into an attractor while the views' correlation ρ is below "
    f"{min(band):.2f} to {max(band):.2f}; the runs above show where ρ stands when FT switches on. This explanation "
    "needs neither classes nor labels, which is what the oracle tests.",
]
switch = {label: {f: G.switch_on_state(start_records[label], row["comparison"]) for f, row in phase[label].items()}
          for label in lengths}
from_start = {"recipe": cal_rows[0], "init": init_rows[0], "oracle": oracle_rows[0], "shards": shard_rows[0],
              "classes": class_rows[0],
              "recipe v2": cal_rows[1], "real": real_rows[0], "real, longer": length_rows[0]}
lines.append("\n" + G.conclusion(phase, phases["kNN"], switch, band, from_start,
                                 {"the shapes": shapes_length_rows["linear"]}))
P.markdown_html("\n".join(lines))
