# %% [markdown]
# # Switching FT on in your own MoCo
#
# **In this chapter you will learn** how the previous chapter's transformations enter the MoCo you built in
# [MoCo from scratch](learn2_moco.ipynb): the four lines that switch {term}`FT` on in a MoCo step of your own, the
# whole step with FT as the library takes it, how to switch FT on only part-way through a run, and what this book's
# runs say, in plain words, about when that helps.

# %% colab-setup

# %% tags=["parameters"]
import os

# how much this page trains: smoke (seconds), cpu (the book's runs), gpu (ImageNet-100)
profile = os.environ.get("FTCL_PROFILE", "cpu")

# %%
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from IPython.display import display

from ftcl_core import ft, transforms
from ftcl_core.pages import headroom as headroom_figures
from ftcl_core.pages import learn as learn_figures
from ftcl_core.pages import markup
from ftcl_core.study import headroom

# %% [markdown]
# ## Four lines
#
# In the MoCo step you built, a few lines turn the queries `q`, the keys `k` and the `queue` into the loss: the
# positive scores, the negative scores, the logits and InfoNCE over them. FT replaces them with four lines. With `q`, `k`
# normalised ($N\times C$), the queue $K\times C$ and `from ftcl_core import ft`, on random features:

# %% tags=["show-input"]
gen = torch.Generator().manual_seed(0)  # only for the example's features
q, k = (F.normalize(torch.randn(256, 128, generator=gen), dim=1) for _ in range(2))
queue = F.normalize(torch.randn(4096, 128, generator=gen), dim=1)

cfg = ft.FTConfig(pos=True, neg=True)               # eq. 3 + Sec 4.2 (alpha 2.0, 1.6)
gen = torch.Generator().manual_seed(0)              # FT's draws: yours to seed
logits = ft.logits(q, k, queue, cfg, gen, tau=0.2)  # eq. 1's, positive in column 0
loss = ft.info_nce(logits)                          # eq. 1

plain = torch.cat([(q * k).sum(1, keepdim=True), q @ queue.T], 1) / 0.2  # FT off
off = ft.logits(q, k, queue, ft.FTConfig(), gen, tau=0.2)
print(f"loss with FT {float(loss):.3f}, without {float(ft.info_nce(plain)):.3f}; "
      f"FTConfig() gives the plain logits: {torch.allclose(off, plain)}")

# %% tags=["remove-cell"]
assert torch.allclose(off, plain)  # FT off is the plain MoCo of the second chapter

# %% [markdown]
# Inside `ft.logits` are the two transformations of the last chapter (your `my_extrapolate` and `my_interpolate` are
# the library's `extrapolate_positive` and `interpolate_negatives`), drawn from `gen` in this order; the fold below
# writes them out and gets the same logits.

# %% tags=["hide-cell"]
# ft.logits written out: eq. 3, then Sec 4.2
gen = torch.Generator().manual_seed(0)                         # the same draws as above
lam = transforms.sample_lambda(2.0, "step", 256, 128, gen, shift=1.0)  # eq. 3
q_ex, k_ex = transforms.extrapolate_positive(q, k, lam)        # the harder pair
lam_n = transforms.sample_lambda(1.6, "step", 4096, 128, gen)  # Sec 4.2
perm = transforms.sample_permutation(4096, gen)                # each key's partner
mixed = transforms.interpolate_negatives(queue, lam_n, perm)   # the new negatives
by_hand = torch.cat([(q_ex * k_ex).sum(1, keepdim=True), q_ex @ mixed.T], 1) / 0.2
print(f"lambda {float(lam):.2f} and {float(lam_n):.2f}; "
      f"the same logits as ft.logits: {torch.equal(by_hand, logits)}")

# %% tags=["remove-cell"]
assert torch.equal(by_hand, logits)  # ft.logits is eq. 3 then Sec 4.2, drawn in this order

# %% [markdown]
# The loss with FT is far higher than without, as expected: the extrapolated pair scores lower, so the two losses
# are not comparable; runs are compared by their {term}`readout`. Then `loss.backward()`, the optimiser's step, and
# the *clean* keys `k` into the queue, as before. (facebookresearch's MoCo keeps its queue as $C\times K$: pass it
# transposed; the library says so if you forget.)
#
# ## The whole step
#
# Put the four lines into the MoCo step of the second chapter, in place of its scoring lines, and you have
# MoCo with FT. As in the paper's released code, the negatives meet the *extrapolated* query, and the queue
# receives the keys as the encoder made them, not the mixed ones (the *clean* keys). A test holds this step to the
# library's, loss, gradients, weights and queue:

# %% tags=["show-input", "teaching"]
def my_ft_step(model, optimizer, x_q, x_k, gen: torch.Generator, cfg: ft.FTConfig):
    q = F.normalize(model.encoder_q(x_q), dim=1)        # queries: N x C
    with torch.no_grad():                               # no gradient to the keys
        model.momentum_update()                         # eq. 2
        perm = torch.randperm(len(x_k), generator=gen)  # shuffle-BN
        k = F.normalize(model.encoder_k(x_k[perm]), dim=1)[perm.argsort()]  # N x C
    logits = ft.logits(q, k, model.queue, cfg, gen, tau=model.tau)  # N x (1+K), with FT
    loss = ft.info_nce(logits)                          # eq. 1
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model.enqueue(k)                                    # the clean keys
    return loss.detach()


# %% tags=["hide-cell"]
# The library's step, with the two transformations written out
from ftcl_core.methods.moco import moco_ft_step

display(markup.source_code(moco_ft_step))

# %% [markdown]
# ## A minute with FT from the first step
#
# Train the shapes' MoCo for a minute twice from one start, plain and with both transformations, and read each with
# the tool of the third chapter: every few steps, {term}`Mean(pos)` and {term}`Mean(neg)` of a fixed batch of
# images, as raw cosines of the encoder's features (before any mixing).

# %% tags=["hide-input"]
# A minute of training, read every 10 steps
from ftcl_core.evaluation import extract_features, knn_top1
from ftcl_core.methods import build_model
from ftcl_core.study import learn
from ftcl_core.training import build_optimizer, make_views

recipe, train_set, test_set, aug = learn.shapes_recipe(profile)  # the MoCo chapter's
probe = make_views(train_set.images[:256], aug, torch.Generator().manual_seed(1))


def minute(cfg: ft.FTConfig, steps: int = 5 if profile == "smoke" else 200):
    """my_ft_step from one start (weights, queue, images, draws); every 10 steps the
    probe's raw Mean(pos) and Mean(neg), the encoders in eval mode; the kNN readout."""
    torch.manual_seed(recipe.seed)
    model = build_model(recipe)
    optimizer = build_optimizer(recipe, model, "cpu")
    g = torch.Generator().manual_seed(recipe.seed)
    read = {"step": [], "pos": [], "neg": []}
    for step in range(steps + 1):
        if step % 10 == 0 or step == steps:
            model.eval()
            with torch.no_grad():
                q = F.normalize(model.encoder_q(probe[0]), dim=1)
                k = F.normalize(model.encoder_k(probe[1]), dim=1)
            model.train()
            read["step"].append(step)
            read["pos"].append(float((q * k).sum(1).mean()))
            read["neg"].append(float((q @ model.queue.T).mean()))
        if step == steps:
            break
        batch = (recipe.train.batch_size,)
        idx = torch.randint(len(train_set.images), batch, generator=g)
        my_ft_step(model, optimizer, *make_views(train_set.images[idx], aug, g), g, cfg)
    backbone = model.encoder_q.backbone
    knn = knn_top1(extract_features(backbone, train_set.images, aug), train_set.labels,
                   extract_features(backbone, test_set.images, aug), test_set.labels)
    return read, knn


runs = {"plain": minute(ft.FTConfig()), "both": minute(ft.FTConfig(pos=True, neg=True))}
readings = {name: read for name, (read, _) in runs.items()}
knn = {name: readout for name, (_, readout) in runs.items()}
learn_figures.minute_figure(readings, knn)
plt.show()

# %% tags=["remove-cell"]
from ftcl_core.pages.glue import glue_facts, glue_reading
from ftcl_core.study import checks

minute_read = learn.minute_facts(readings, knn)
glue_facts("minute_", minute_read)
if profile != "smoke":  # the words below read a full minute; a smoke run proves only that the page runs
    checks.expect(learn.MINUTE_CHECKS, minute_read, "FT pulls the two views closer", "FT crowds the images",
                  "FT reads below plain MoCo")

# %% [markdown]
# The harder positive is answered at once. The figure reads the raw cosines, before FT mixes them: eq. 4 lowers the
# mixed pair's score, so the encoder raises the raw one, pulling an image's two views almost onto one point
# (Mean(pos) {glue:md}`minute_both_pos` at the end, against {glue:md}`minute_plain_pos` plain), but it pulls every other
# image close too (Mean(neg) {glue:md}`minute_both_neg` against {glue:md}`minute_plain_neg`): the images {term}`crowd
# <crowding>` together, and the features tell them apart less well (a {term}`kNN readout` of
# {glue:md}`minute_both_knn` % against {glue:md}`minute_plain_knn` %). That is one seed and one minute; the stored
# runs below say whether it lasts.
#
# Why would a harder pair hurt, when a larger momentum's harder pairs help (the fourth chapter)? Momentum makes the
# *raw* pair harder: the encoder can raise its score only by learning what two views share. FT makes only the *mixed*
# pair harder, and the mixed score reaches the raw one only where the raw one is 1 (eq. 4): the encoder can answer by
# pushing the raw cosine towards 1, and in the minute every other image came closer with it. Why that pull can crowd
# the images, most in the first steps, is worked out in Reproduce: [Why does FT from the first step cost?](07b_gradient.ipynb)
#
# ## Switching FT on late
#
# The paper's Table 6 asks *when* FT should start: from the first step, or after part of the run (a
# {term}`late start`); it finds FT helps from every start it tried, the earliest starts most. In your loop the
# start is one condition, `active`; before it the step is plain MoCo:

# %% tags=["show-input"]
cfg, start_epoch = ft.FTConfig(pos=True, neg=True), 36  # 120 epochs, FT from 30 %
for epoch in (0, 35, 36, 119):
    active = epoch >= start_epoch
    logits = ft.logits(q, k, queue, cfg, gen, tau=0.2, active=active)  # plain before
    print(f"epoch {epoch:3d}: FT {'on' if active else 'off'}")

# %% [markdown]
# In a run of the library the same switch is the config key `ft.start_epoch`. With `ft.start=auto` the run picks the
# epoch itself, from its own loss: a rule of this book's, not the paper's, tested in [letting the run decide](#auto-start).
#
# ## What the runs say
#
# The paper measured its gains on ImageNet with ResNet-50s; the book's stored runs are small networks on small images,
# so what follows holds at this scale. Besides the drawn shapes they include a *harder task*: thirty classes, ten
# shapes in three fills each, with a smaller distracting shape behind the one that names the class. Three of the ten
# shapes, each in its three fills:

# %% tags=["remove-input"]
headroom_figures.task_images([0, 10, 20, 2, 12, 22, 5, 15, 25], columns=9, height=1.45, named=True)
plt.show()

# %% [markdown]
#
# :::{admonition} How to read the figure
# :class: note
# Each seed trained twice, with FT and without. A line is FT's readout minus the same seed's without it, in points,
# averaged over the seeds: left of zero FT costs, right of it gains. Its bar (±) is the 95 % interval, the range that
# likely holds the true mean: it narrows as seeds are added, and one seed gives none. The diamond is the paper's gain.
# :::

# %%
# the figure, from the stored cpu runs: whatever this page's profile
rows, records = headroom.load()  # the harder task's stored runs
first = learn.first_step_facts()  # the shapes, FT from the first step
metrics = headroom.run_metrics(records)  # the harder task's per-step score statistics
room = {**headroom.facts(rows, records, metrics), **headroom.paper_facts()}

learn_figures.differences_figure({
    "the shapes, from the first step, 30 epochs": (first, "both", "both_paper"),
    "harder task, from the first step, 240 epochs": (room, "both_240", None),
    "harder task, after 30 %, 30 epochs": (room, "both_late_30", None),
    "harder task, after 30 %, 120 epochs": (room, "both_late_120", None),
    "harder task, after 30 %, 240 epochs": (room, "both_late_240", "both_late_paper"),
})
plt.show()

# %% tags=["remove-cell"]
from ftcl_core.study.chapters import your_moco

glue_reading(your_moco.read(first, room))


# %% [markdown]
# **1. From the first step, FT costs.** On the drawn shapes, MoCo v1 with both transformations falls from
# {glue:md}`t7_base` of {term}`linear readout` to {glue:md}`t7_ft`, where the paper gains {glue:md}`t7_both_paper`
# points. Positive extrapolation alone costs too; negative interpolation alone is too small to tell from zero. What
# the minute showed holds at full length: the positives end closer, the negatives closer still, so the margin the loss
# rewards (a positive's score minus its negatives') ends smaller, in every seed: it goes with the cost, and no
# experiment here shows it causes it. [When does FT help?](07a_when_ft_helps.ipynb) has the runs seed by seed.
#
# **2. Switched on late, on a task with room to grow, FT pays.** On the harder task FT switched on after 30 % of the
# run still costs in 30-epoch runs, and gains at 120 and 240 epochs, at 240 about as much as the paper's Table 6; from
# the first step it costs at every length. On the shapes a long run's baseline nears 100 %, which leaves little room
# for a gain. [Does FT help once there is room to help?](11_headroom.ipynb) has every length and seed, and how the task
# was chosen before any FT run.
#
# **3. Judge FT by the readout, not by Mean(neg).** The runs where FT costs show the minute's {term}`crowding` as FT
# switches on, and the runs where it gains do not. But FT can cost without crowding too: switched on at epoch 18 of
# 120, in runs whose prediction was written down before they ran, the images did not crowd and FT still read
# {glue:md}`hr_switch_from_18_of_120_diff` points ([the crowding](#the-crowding)).
#
# ## Summary
#
# - FT enters a MoCo step of your own in four lines: a config, a generator for its draws, the logits after FT, and
#   InfoNCE. The queue still receives the clean keys.
# - `FTConfig()` is plain MoCo; `active` (or `ft.start_epoch` in a run) switches FT on part-way through a run.
# - At this book's scale FT from the first step costs readout, and positive extrapolation carries the cost. Switched
#   on after 30 % of the run on a task with room, it costs in short runs and pays in long ones. In a MoCo of your own,
#   switch it on part-way through a long run, and judge it by the readout against the same run without FT.
#
# **Where next.** [Does FT help once there is room to help?](11_headroom.ipynb) opens with the runs behind the late
# start's gain; [the findings](findings.md) set each of the paper's claims beside what the runs here say of it.
#
# ## Exercises
#
# 1. Switch on negative interpolation alone. Which column of the logits changes, and which stays as in plain MoCo?
# 2. Predict, then check: in the first tenth of the 120-epoch runs, is raw Mean(neg) higher with FT from the first
#    step or without FT? Check it seed by seed on the stored 120-epoch runs of the harder task. What does the answer
#    suggest about why FT from the first step costs?
# 3. Predict, then train: run the minute above with positive extrapolation alone (`ft.FTConfig(pos=True)`) and with
#    negative interpolation alone. Which of the two crowds the images? Does that fit the stored runs, where positive
#    extrapolation carries the cost? What can one seed and one minute tell you, and what not?
# 4. See FT help: in the stored runs of the harder task, take each seed's readout with FT switched on after 30 % of
#    the run minus the same seed's without FT, at 30, 120 and 240 epochs (`headroom.setting("both_late", length)`
#    against `headroom.setting("baseline", length)`). In how many seeds does FT help at each length?
#
# The solutions are folded below, in cells that run as written.

# %% tags=["hide-cell"]
# Solution 1: the positive column 0 is the plain one, since only the queue is mixed;
# every negative column changes.
neg_only = ft.logits(q, k, queue, ft.FTConfig(neg=True), gen, tau=0.2)
print(f"positive column unchanged: {torch.allclose(neg_only[:, 0], plain[:, 0])}; "
      f"negative columns unchanged: {torch.allclose(neg_only[:, 1:], plain[:, 1:])}")

# Solution 2: the first tenth of the 120-epoch runs, FT from the first step against the
# baseline, seed by seed: FT's Mean(neg) stands above the baseline's, its images crowded
# together early (an association: the book's evidence pages test whether the crowding is
# the cause).
import numpy as np

ft_runs, base_runs = (
    metrics.get(headroom.setting("both", 120), {}),
    metrics.get(headroom.setting("baseline", 120), {}),
)
for seed in sorted(set(ft_runs) & set(base_runs)):
    tenth = len(base_runs[seed]["neg_mean"]) // 10
    with_ft, without = (
        float(np.mean(r[seed]["neg_mean"][:tenth])) for r in (ft_runs, base_runs)
    )
    print(f"seed {seed}: Mean(neg) {with_ft:.2f} with FT, {without:.2f} without")

# %% tags=["hide-cell"]
# Solution 3: positive extrapolation alone crowds the images as both do (Mean(neg) ends
# high) and reads lowest; negative interpolation alone stays close to plain MoCo. One
# seed and one minute order these runs, but cannot show how far a second seed would move
# them: the evidence pages pair seeds over full runs and judge their intervals.
from ftcl_core.study.results.numbers import fixed

alone = {"pos": minute(ft.FTConfig(pos=True)), "neg": minute(ft.FTConfig(neg=True))}
for name, (read, readout) in {**runs, **alone}.items():
    end = read["neg"][-1]
    # the readout rounded as the figure's legend rounds it
    print(f"{name:>5}: Mean(neg) {end:.2f} at the end, kNN readout {fixed(readout)} %")

# %% tags=["remove-cell"]
if profile != "smoke":  # solution 4's words: +pos alone crowds and reads below plain; +neg alone does not crowd
    checks.expect(learn.MINUTE_CHECKS, learn.minute_facts({"plain": readings["plain"], "both": alone["pos"][0]},
                                                          {"plain": knn["plain"], "both": alone["pos"][1]}),
                  "FT crowds the images", "FT reads below plain MoCo")
    assert alone["neg"][0]["neg"][-1] < readings["both"]["neg"][-1] - 0.2, alone["neg"][0]["neg"]

# %% tags=["hide-cell"]
# Solution 4: the late start costs in every seed at 30 epochs and gains in every seed at
# 120 and 240: a gain you can check seed by seed, on runs long enough to give it room.
readout = {(r["setting"], r["seed"]): r["linear_top1"] for r in records}
late_gains = {}
for length in (30, 120, 240):
    late = headroom.setting("both_late", length)
    base = headroom.setting("baseline", length)
    seeds = sorted({seed for setting, seed in readout if setting == late})
    late_gains[length] = [readout[late, s] - readout[base, s] for s in seeds]
    print(f"{length:>3} epochs: " + "  ".join(f"{d:+.1f}" for d in late_gains[length]))

# %% tags=["remove-cell"]
# solution 4's words, on the stored runs
assert all(d < 0 for d in late_gains[30]) and all(d > 0 for d in late_gains[120] + late_gains[240]), late_gains
