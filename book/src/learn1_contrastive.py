# %% [markdown]
# # Why contrastive learning works
#
# **In this chapter you will learn** what a contrastive loss asks of an encoder, on a toy small enough to train in
# seconds: how two views of one input make a *positive pair*, why InfoNCE is a classification problem with one right
# answer among many, what *alignment* and *uniformity* measure, what the temperature does, and what goes wrong when
# nothing pushes inputs apart (a *collapse*). You need PyTorch; nothing about self-supervised learning.
#
# ## Labels without labels
#
# Self-supervised learning trains an encoder without labels, so that a simple classifier on its features later does
# well (the {term}`readout`: a linear layer trained on the frozen features). Contrastive learning does it with one idea.
# Take an input and make two *views* of it: two random crops of a photograph, say, or two noisy copies of a point.
# Whatever the views share is what the input *is*; whatever differs is nuisance. Ask the encoder to map the two
# views of an input close together, and the views of different inputs apart. The pair of views of one input is a
# **positive pair**; a view of any other input is a **negative**.
#
# Our toy: points in the plane from six clusters, two views of a point made by adding noise, and an encoder (a small
# MLP) that maps a point to a *unit* vector in two dimensions, a point on a circle. We will watch the six clusters
# find their places on the circle, without the loss ever seeing which cluster a point came from.

# %% colab-setup

# %% tags=["parameters"]
import os

# how much this page trains: smoke (seconds), cpu (the book's runs), gpu (ImageNet-100)
profile = os.environ.get("FTCL_PROFILE", "cpu")

# %%
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from ftcl_core.losses import info_nce
from ftcl_core.pages import explorers
from ftcl_core.pages import learn as learn_figures
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study import learn
from ftcl_core.study.chapters import contrastive
from ftcl_core.study.toy import in_batch_logits, toy_points, train_toy

# a smoke run only checks that the page executes
steps = 60 if profile == "smoke" else 300

# %% [markdown]
# ## InfoNCE: pick your partner out of a line-up
#
# Encode a batch of $N$ points twice, once per view: queries $q_i$ and keys $k_i$, each a unit vector, so a *score*
# $q_i\cdot k_j$ is a cosine in $[-1, 1]$. For query $i$ the right answer is its own key $k_i$; the other $N-1$ keys are
# its negatives. InfoNCE (the paper's eq. 1) is the cross-entropy of picking the right one, with scores divided by a
# temperature $\tau$:
#
# $$\mathcal{L}_i = -\log \frac{\exp(q_i\cdot k_i/\tau)}{\exp(q_i\cdot k_i/\tau) + \sum_{j\ne i}\exp(q_i\cdot k_j/\tau)}.$$
#
# Written out it is a classification with the positive in column 0. Here it is from scratch, next to the library's:

# %% tags=["show-input", "teaching"]
# F is torch.nn.functional; info_nce and in_batch_logits: the library's loss and logits,
# to compare with (imported in the set-up above)
def my_info_nce(q: torch.Tensor, k: torch.Tensor, tau: float) -> torch.Tensor:
    """InfoNCE, the batch's other points as negatives. q, k: N x C unit features."""
    scores = q @ k.T                                    # N x N: each query, each key
    l_pos = scores.diagonal()[:, None]                  # N x 1: the query's own key
    off = ~torch.eye(len(q), dtype=torch.bool)
    l_neg = scores[off].view(len(q), len(q) - 1)        # N x (N-1): every other key
    logits = torch.cat([l_pos, l_neg], dim=1) / tau     # N x N, the answer in column 0
    labels = torch.zeros(len(q), dtype=torch.long)
    return F.cross_entropy(logits, labels)


seeds = (torch.Generator().manual_seed(s) for s in (0, 1))
q, k = (F.normalize(torch.randn(8, 2, generator=g), dim=1) for g in seeds)
print("from scratch:", float(my_info_nce(q, k, 0.2)),
      " library:", float(info_nce(in_batch_logits(q, k, 0.2))))

# %% tags=["remove-cell"]
assert torch.allclose(my_info_nce(q, k, 0.2), info_nce(in_batch_logits(q, k, 0.2)))  # the taught loss is the library's

# %% [markdown]
# A guess that spreads its belief evenly over the $N$ choices scores $\log N$; features whose scores point at the
# wrong key score worse (the random vectors above do). The loss falls only as each positive score stands out from its
# negatives, and there are two ways to make it stand out. The loss needs both.
#
# ## Alignment and uniformity
#
# Wang and Isola {cite}`wang2020understanding` split what InfoNCE rewards into two measurable parts. **Alignment** is the mean squared
# distance between the two views' features, $\mathbb{E}\,\lVert q_i - k_i\rVert^2$: 0 when the views coincide.
# **Uniformity** is $\log \mathbb{E}_{i\ne j}\, e^{-2\lVert q_i - q_j\rVert^2}$: 0 when every input sits at one point,
# more negative the more evenly the features cover the sphere. The positive term of the loss pulls the views
# together (alignment); the negatives push the inputs apart (uniformity). Each is a line of torch:

# %% tags=["show-input", "teaching"]
def my_alignment(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """E ||q_i - k_i||^2; q, k: N x C unit features (0: views coincide)."""
    return (q - k).pow(2).sum(1).mean()


def my_uniformity(q: torch.Tensor) -> torch.Tensor:
    """log E_{i != j} exp(-2 ||q_i - q_j||^2); q: N x C unit features."""
    return torch.pdist(q).pow(2).mul(-2).exp().mean().log()


# %% [markdown]
# Train the toy for a few hundred steps at $\tau = 0.2$, and, for contrast, a second encoder whose loss keeps only the
# positive term, $-q_i\cdot k_i/\tau$: pull the views together, push nothing apart.

# %%
runs = [train_toy(tau, steps=steps) for tau in (0.05, 0.1, 0.2, 0.5, 1.0)]
collapsed = train_toy(0.2, steps=steps, negatives=False)
shown = next(r for r in runs if r.tau == 0.2)
points, point_labels = toy_points(600, 6, torch.Generator().manual_seed(10_000))
learn_figures.toy_figure(points.numpy(), point_labels.numpy(), shown, collapsed)
plt.show()
# alignment, uniformity and readouts of these runs, as numbers
facts = learn.toy_facts([*runs, collapsed])

# %% tags=["remove-cell"]
if profile != "smoke":  # the words below describe a full run; a smoke run's few steps prove only that the page runs
    glue_reading(contrastive.read(facts))

# %% [markdown]
# Read the top row from left to right. Before training, the random MLP already maps the two views of a point close
# together (nearby inputs give nearby outputs), but it also crowds the clusters onto one side of the circle.
# InfoNCE spreads the points out while it keeps the views together: the uniformity curve falls, alignment stays small
# (it can range from 0 to 4) and about where it started, and each cluster gathers at a place of its own, evenly
# around the circle. The positives-only loss reaches
# perfect alignment the cheap way: every point, of every cluster, lands on the same spot, and its uniformity goes to
# 0. That is a **collapse**: the encoder maps every input to (nearly) the same feature, so a negative scores as high
# as a positive and the features say little about the input. The negatives are what prevent it; methods without
# them (BYOL, SimSiam) need other devices.
#
# How much are the features worth? That is what a {term}`readout` measures: give a simple classifier the features
# of some labelled points and score it on others. Here the classifier is a vote of each point's nearest neighbours on
# the circle (a {term}`kNN readout`), which needs no training:

# %%
print(f"kNN readout (% of points whose cluster is found; chance "
      f"{facts['chance_value']:.0f} %): "
      f"before training {facts['knn_before_value']:.0f}, "
      f"after InfoNCE {facts['knn_after_value']:.0f}, "
      f"after positives only {facts['knn_collapse_value']:.0f}")

# %% [markdown]
# The InfoNCE features tell the clusters apart almost perfectly, although no label was used to train them; the
# collapsed ones are worth little. On this easy toy even the untrained encoder reads well, because a smooth random map
# keeps neighbouring inputs together; that is why a readout is always compared with the same encoder untrained (the
# {term}`random-init baseline`), as later chapters do for MoCo, with a linear classifier as the paper does.
#
# ## The temperature
#
# Dividing the scores by $\tau$ before the softmax decides how the loss spreads its push over the negatives: the
# gradient pushes each negative $j$ away with a weight proportional to $\exp(q\cdot k_j/\tau)$. A small $\tau$ spends
# almost all of it on the few negatives closest to the query (the *hardest* ones); a large $\tau$ pushes all of them
# about alike. Move the slider: each position is a toy trained at that temperature. On the right, a query's negatives
# are ranked from the closest down, and the curve gives the share of the push that the hardest fraction of them
# receives, averaged over the queries; on the dashed diagonal every negative would be pushed alike. The colder the
# temperature, the higher the curve starts.

# %% tags=["remove-input"]
explorers.plotly_html(learn_figures.temperature_explorer(runs), include_js=True)  # responds in the page, no kernel

# %% [markdown]
# The cold curves bend near a sixth of the negatives. With six clusters, about a sixth of a query's negatives are
# points of its own cluster; once trained they sit closest to it, so they are its hardest negatives, and a cold
# temperature spends most of its push on them:

# %%
cold, warm = facts["coldest"], facts["warmest"]
print(f"the query's own cluster: {facts['own_count']} of its negatives; their share "
      f"of the push {facts['own_push_' + cold]} at τ = {cold}, "
      f"{facts['own_push_' + warm]} at τ = {warm}")

# %% [markdown]
# These are {term}`false negatives <false negative>`: inputs that show the same thing as the query, pushed away only
# because no label says so. Contrastive learning accepts them; the MoCo chapter meets them again. They also explain
# the slider's coldest position, $\tau = 0.05$: after the same steps its clusters sit less evenly round the circle
# than at $\tau = 0.2$ (its uniformity ends higher), keeping more of the untrained encoder's crowding, because the
# push goes to each query's own cluster and little is left to move the clusters apart.
#
# MoCo, the next chapter's method, uses $\tau = 0.07$ (its first version) and $\tau = 0.2$ (its second). The paper we follow makes the hard cases harder on purpose,
# which is why the temperature, and the statistics of the scores, come back in every later chapter.
#
# ## Summary
#
# - Two views of one input form a positive pair; views of other inputs are negatives. No labels are used.
# - InfoNCE is a classification among the batch: find your own key among the negatives, with scores divided by
#   $\tau$.
# - It rewards alignment (views together) and uniformity (inputs spread over the sphere). Without the negatives an
#   encoder can satisfy the positives by mapping everything to one point: a collapse.
# - The temperature sets how much of the push goes to the hardest negatives.
#
# ## Exercises
#
# 1. Train the toy with half and with twice the noise between the two views (0.3 by default: `train_toy(0.2,
#    noise=...)`). Which of
#    alignment and uniformity changes, and why?
# 2. Give the encoder three output dimensions (`dim=3`): where do the six clusters sit on the sphere now?
# 3. Compute the loss of a collapsed encoder by hand: every score equals 1, $N = 256$, $\tau = 0.2$. Compare it
#    with the loss a random guess starts from.
#
# The solutions are folded below, in one cell that runs as written.

# %% tags=["hide-cell"]
import math

# Solution 1: more noise makes the two views of a point differ more, so alignment ends
# higher at each step up. Halving the noise leaves the uniformity where it was; at twice
# the noise the encoder must map whole neighbourhoods alike to keep such different views
# together, so the points spread less evenly: the uniformity ends higher too.
ends = {}
for noise, name in ((0.15, "clean"), (0.3, "default"), (0.6, "noisy")):
    r = train_toy(0.2, steps=steps, noise=noise)
    align, uniform = r.history["align"][-1], r.history["uniform"][-1]
    ends[f"align_{name}"], ends[f"uniform_{name}"] = align, uniform
    print(f"noise {noise}: alignment {align:.3f}, uniformity {uniform:.2f}")

# Solution 2: each cluster's mean direction, and the angle to its nearest neighbour. On
# the circle six clusters sit about 60 degrees apart, evenly round it; on the sphere
# they spread out further, towards the corners of an octahedron (the six points of a
# sphere furthest apart, 90 degrees from each neighbour, each with one opposite): these
# steps get part of the way. More room also means a lower uniformity.
r3 = train_toy(0.2, steps=steps, dim=3)
ends["uniform_3d"] = r3.history["uniform"][-1]
ends["uniform_2d"] = shown.history["uniform"][-1]
ends["nearest_3d"] = learn.nearest_cluster_angles(r3.after, r3.labels)
ends["nearest_2d"] = learn.nearest_cluster_angles(shown.after, shown.labels)
print("nearest cluster, degrees: on the sphere", ends["nearest_3d"].round(),
      " on the circle", ends["nearest_2d"].round())
print(f"uniformity {ends['uniform_3d']:.2f} on the sphere, "
      f"{ends['uniform_2d']:.2f} on the circle")

# Solution 3: with every score 1 each of the N logits is 1 / tau, so the loss is log N
# whatever tau is: exactly the random guess's. A collapsed encoder learns nothing from
# InfoNCE, and InfoNCE does not reward it.
n, tau = 256, 0.2
logits = torch.full((n, n), 1 / tau)
print(float(info_nce(logits)), math.log(n))

# %% tags=["remove-cell"]
if profile != "smoke":
    glue_reading(contrastive.read_exercises(ends))
