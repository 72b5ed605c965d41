# %% [markdown]
# # MoCo from scratch
#
# **In this chapter you will learn** how MoCo {cite}`he2020momentum` turns the previous chapter's InfoNCE into a method
# that trains on images: where its positive pairs come from, why it keeps a *queue* of negatives, why that queue
# needs a slowly moving *momentum encoder*, and how the pieces fit in one training step. We build MoCo in a few
# dozen lines, train it for a minute on small drawn images, and check, number for number, that it takes the same
# step as the library the rest of this book uses.
#
# ## Positives from augmentations
#
# The inputs are now images: small pictures of drawn shapes (ten shapes in random colours, sizes and places, 32
# pixels a side). Two views of an image are two random *augmentations* of it: a random crop, resized to 24 pixels,
# a random flip, random changes of brightness, contrast and colour, sometimes grey. Two views of one picture share
# the shape and little else. A good encoder must keep what survives augmentation, which is what a later classifier
# needs. With ten shapes one picture in ten shares the shape too: such a *false negative* is pushed away although it
# shows the same thing, a cost contrastive learning accepts without labels.

# %% colab-setup

# %% tags=["parameters"]
import os

# how much this page trains: smoke (seconds), cpu (the book's runs), gpu (ImageNet-100)
profile = os.environ.get("FTCL_PROFILE", "cpu")

# %%
import copy

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F

from ftcl_core.evaluation import evaluate_backbone, extract_features, knn_top1
from ftcl_core.methods import StepContext, build_model
from ftcl_core.pages import diagrams
from ftcl_core.pages import learn as learn_figures
from ftcl_core.pages.glue import glue_reading
from ftcl_core.study import learn
from ftcl_core.study.chapters import moco
from ftcl_core.training import build_optimizer, make_views, train_step

# a small ResNet (0.3 M parameters) with MoCo v1's loss and head, tuned on the shapes
cfg, train_set, test_set, aug = learn.shapes_recipe(profile)
gen = torch.Generator().manual_seed(0)
x = train_set.images[:10]
view_1, view_2 = make_views(x, aug, gen)
learn_figures.views_figure(x, view_1, view_2, aug)
plt.show()

# %% [markdown]
# ## Why a queue, and why a momentum encoder
#
# InfoNCE gets better with more negatives: picking your key out of 4 096 is a harder, more informative test than out
# of the few hundred a batch holds. The previous chapter took its negatives from the batch, as **SimCLR** does (it
# needs batches of thousands for enough of them), so their number was tied to the batch size. MoCo
# keeps a **queue** instead: the keys of the last few batches, $K$ of them (here 4 096), stored as plain tensors. Each
# step the new batch's keys are enqueued and the oldest dropped, so the negatives cost no extra computation.
#
# But the keys in the queue were computed by the encoder of several steps ago. If that encoder changed quickly, old
# and new keys would not be comparable, and the query would learn to tell *when* a key was made rather than *what*
# it shows. So MoCo computes keys with a second network, the **momentum encoder**, whose weights trail the query
# encoder's as an exponential moving average (the paper's eq. 2):
#
# $$\theta_k \leftarrow m\,\theta_k + (1 - m)\,\theta_q,\qquad m = 0.99 \text{ here}.$$
#
# No gradient flows into the key encoder; it only follows. Too small an $m$ and the keys drift from step to step; at
# $m = 1$ the key encoder never moves from its random start (the paper's first study, read in a later chapter).
#
# Other families drop the negatives (BYOL, SimSiam, SwAV: [Beyond MoCo](10_methods.ipynb)). Here: MoCo.
#
# ## The whole method
#
# One step in a picture (the paper's Fig 2, without {term}`FT`; its $z_q$ and $z_{k^+}$ are the code's `q` and `k`):

# %% tags=["hide-input"]
diagrams.moco_pipeline(ft=False)
plt.show()

# %% [markdown]
# Here is MoCo in code: two encoders, a queue, the momentum update, and one training step. Each tensor's shape is in its
# comment ($N$ images a batch, $C$ feature dimensions, $K$ keys in the queue).

# %% tags=["show-input", "teaching"]
class MyMoCo(nn.Module):
    """MoCo: a query encoder, a momentum key encoder, a queue of K keys (one a row)."""

    def __init__(self, encoder: nn.Module, dim: int, K: int, m: float, tau: float,
                 seed: int = 0):
        super().__init__()
        self.encoder_q = encoder                        # trained by gradient
        self.encoder_k = copy.deepcopy(encoder)         # trained by following (eq. 2)
        for p in self.encoder_k.parameters():
            p.requires_grad = False
        self.m, self.tau = m, tau
        start = torch.randn(K, dim, generator=torch.Generator().manual_seed(seed))
        self.register_buffer("queue", F.normalize(start, dim=1))  # K x C, random
        self.register_buffer("ptr", torch.zeros((), dtype=torch.long))

    @torch.no_grad()
    def momentum_update(self):                          # eq. 2
        for p_k, p_q in zip(self.encoder_k.parameters(), self.encoder_q.parameters()):
            p_k.mul_(self.m).add_(p_q.detach(), alpha=1 - self.m)

    @torch.no_grad()
    def enqueue(self, k: torch.Tensor):                 # new keys replace the oldest
        rows = (torch.arange(len(k)) + self.ptr) % len(self.queue)
        self.queue[rows] = k
        self.ptr.fill_((int(self.ptr) + len(k)) % len(self.queue))


def my_moco_step(model: MyMoCo, optimizer, x_q, x_k, gen: torch.Generator):
    q = F.normalize(model.encoder_q(x_q), dim=1)        # queries: N x C
    with torch.no_grad():                               # no gradient to the keys
        model.momentum_update()
        perm = torch.randperm(len(x_k), generator=gen)  # shuffle the keys (see below)
        k = F.normalize(model.encoder_k(x_k[perm]), dim=1)[perm.argsort()]  # N x C
    l_pos = (q * k).sum(1, keepdim=True)                # N x 1: query with own key
    l_neg = q @ model.queue.T                           # N x K: query with the queue
    logits = torch.cat([l_pos, l_neg], dim=1) / model.tau  # N x (1+K), answer: col 0
    loss = F.cross_entropy(logits, torch.zeros(len(q), dtype=torch.long))  # eq. 1
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model.enqueue(k)                                    # after the loss read the queue
    return loss.detach()


# %% [markdown]
# One line needs a word: the keys' batch is shuffled before the key encoder sees it, and put back after. Batch
# normalisation normalises each image with the statistics of its batch-mates; if query $i$ and key $i$ shared them,
# both would carry a trace of that group, and the loss could fall by matching the trace instead of the image (the MoCo
# paper's model "cheats"). The library's encoder normalises in groups of the batch, as MoCo's single-machine demo
# does, and the shuffle puts key $i$ in another group than query $i$: *shuffle-BN*.
#
# :::{note}
# **Copying this class?** With a plain `nn.BatchNorm2d` its key shuffle does nothing. The training below borrows the
# library's encoder, whose batch norm is split into groups; in your own code use `ftcl_core.models.SplitBatchNorm2d`.
# :::
#
# ## Train it for a minute
#
# The recipe, tuned on these shapes: a ResNet of {glue:md}`recipe_params` M parameters, $C =$ {glue:md}`recipe_dim`,
# $K =$ {glue:md}`recipe_K`, $\tau =$ {glue:md}`recipe_tau`, $m =$ {glue:md}`recipe_m`, $N =$ {glue:md}`recipe_N`, SGD at
# learning rate {glue:md}`recipe_lr`.

# %%
# the model, its optimiser and a probe of the task
steps = 5 if profile == "smoke" else 200
torch.manual_seed(cfg.seed)
# the library's MoCo, for its encoder only
library_model = build_model(cfg)
mine = MyMoCo(copy.deepcopy(library_model.encoder_q), cfg.model.dim,
              cfg.moco.queue_size, cfg.moco.momentum, cfg.moco.tau, seed=cfg.seed)
optimizer = torch.optim.SGD(
    mine.encoder_q.parameters(), lr=cfg.optim.lr, momentum=0.9, weight_decay=1e-4
)
gen = torch.Generator().manual_seed(cfg.seed)
batch = cfg.train.batch_size


@torch.no_grad()
def finds_its_key(model: MyMoCo, x_q: torch.Tensor, x_k: torch.Tensor) -> float:
    """The share of queries whose own key scores above all K keys of the queue."""
    q = F.normalize(model.encoder_q(x_q), dim=1)
    k = F.normalize(model.encoder_k(x_k), dim=1)
    return float(((q * k).sum(1) > (q @ model.queue.T).max(1).values).float().mean())


# %% tags=["remove-cell"]
glue_reading(moco.read(cfg, library_model.encoder_q.backbone))

# %% tags=["show-input"]
history = {"loss": [], "found": []}
for _ in range(steps):  # plain PyTorch: a batch, two views, one step
    idx = torch.randint(len(train_set.images), (batch,), generator=gen)
    x_q, x_k = make_views(train_set.images[idx], aug, gen)
    history["found"].append(finds_its_key(mine, x_q, x_k))  # before the step
    history["loss"].append(float(my_moco_step(mine, optimizer, x_q, x_k, gen)))
learn_figures.moco_training_figure(history, cfg.moco.queue_size)
plt.show()

# %% tags=["remove-cell"]
if profile != "smoke":  # the words below read a full minute of training; a smoke run proves only that the page runs
    glue_reading(moco.read_training(history, cfg.moco.queue_size, batch))

# %% [markdown]
# Read the first steps with care. The queue starts full of random keys, far from any image's features, so at first
# every query finds its own key and the loss is tiny. The untrained encoder gives every image similar features, so
# each batch of real keys that replaces random ones hides a query's own key better: the loss climbs towards (though
# short of) a blind guess's $\log(K+1)$. Then the encoder learns: the loss falls and the share of queries that find
# their key (the {term}`contrastive top-1`) rises, without a single label.
#
# Finding one's own key is the training task, not the goal. What a user keeps, and what a {term}`readout` scores, is
# the backbone's vector (the ResNet's pooled output), not the head's $C$ features the loss scores, as in the paper.
# The {term}`kNN readout` of the first chapter trains nothing on top: a test image's features vote among its nearest
# training images' labels.

# %%
def knn_readout(backbone: nn.Module) -> float:
    """Top-1 % of test images whose class their nearest training images vote for."""
    train_features = extract_features(backbone, train_set.images, aug)  # N_train x F
    test_features = extract_features(backbone, test_set.images, aug)    # N_test x F
    return knn_top1(train_features, train_set.labels, test_features, test_set.labels)


readout = {"before": knn_readout(library_model.encoder_q.backbone),
           "after": knn_readout(mine.encoder_q.backbone),
           "chance": 100 / len(train_set.classes)}
print(f"kNN readout of the test images: untrained {readout['before']:.1f} %, "
      f"after {steps} steps {readout['after']:.1f} % "
      f"(chance {readout['chance']:.0f} %)")
# the paper's protocol: one linear layer trained on the frozen features
linear = evaluate_backbone(mine.encoder_q.backbone, train_set, test_set, aug)
print(f"linear readout after {steps} steps: {linear['linear_top1']:.1f} %")

# %% tags=["remove-cell"]
if profile != "smoke":
    glue_reading(moco.read_readout(readout))

# %% [markdown]
# A minute of MoCo has already made the features more useful than the untrained encoder's. Every later chapter
# compares runs by the {term}`linear readout` printed last: one linear layer trained on the frozen backbone's
# standardised features, scored on the test images (the paper's protocol; the library's `linear_readout`).
#
# ## The same step as the library's
#
# The rest of the book trains with the library's MoCo, which adds what a real run needs (several processes, mixed
# precision, the statistics the paper's tool records, resuming). Under all that it must take the step above. Start
# both from the same weights, the same queue and the same random draws, take five steps on the same images, and
# compare:

# %%
torch.manual_seed(0)
library_model = build_model(cfg)
mine = MyMoCo(copy.deepcopy(library_model.encoder_q), cfg.model.dim,
              cfg.moco.queue_size, cfg.moco.momentum, cfg.moco.tau, seed=cfg.seed)
opt_library = build_optimizer(cfg, library_model, "cpu")
o = cfg.optim
opt_mine = torch.optim.SGD(mine.encoder_q.parameters(), lr=o.lr, momentum=o.momentum,
                           weight_decay=o.weight_decay)
gen_library, gen_mine, images = (torch.Generator().manual_seed(s) for s in (1, 1, 2))
ctx = StepContext(gen_library)
losses_mine, losses_library = [], []
for _ in range(5):
    idx = torch.randint(len(train_set.images), (batch,), generator=images)
    x_q, x_k = make_views(train_set.images[idx], aug, images)
    losses_library.append(
        float(train_step(library_model, opt_library, (x_q, x_k), ctx).loss)
    )
    losses_mine.append(float(my_moco_step(mine, opt_mine, x_q, x_k, gen_mine)))
pairs = zip(mine.encoder_q.state_dict().values(),
            library_model.encoder_q.state_dict().values())
weights = max(float((a - b).abs().max()) for a, b in pairs)
match = learn.moco_match_facts(losses_mine, losses_library, weights)
print(f"losses, mine:    {[round(v, 5) for v in losses_mine]}")
print(f"losses, library: {[round(v, 5) for v in losses_library]}")
print(f"largest difference of any weight after {match['steps']} steps: "
      f"{match['weight_diff']}")

# %% tags=["remove-cell"]
glue_reading(moco.read_match(match))

# %% [markdown]
# They agree, at most float rounding apart (the difference above). The library's MoCo is this class; everything else it does is bookkeeping.
#
# ## Summary
#
# - MoCo's positive pair is two augmentations of one image; its negatives are a queue of keys from earlier batches,
#   $K$ of them, far more than a batch holds.
# - The keys come from a momentum encoder whose weights follow the query encoder's slowly (eq. 2), so that old and
#   new keys in the queue stay comparable.
# - One step: encode the queries, update the key encoder, encode the (shuffled) keys, score each query against its
#   key and the queue, take InfoNCE, step, and enqueue the keys.
#
# This was {term}`MoCo v1`'s head and temperature; {term}`MoCo v2` adds an MLP head, stronger augmentations and
# $\tau = 0.2$, and the next chapters use both. They read a run with the paper's tool, the statistics of the scores.
#
# ## Exercises
#
# 1. Set $m = 0$ (the key encoder copies the query encoder every step) and train a little. Does the loss end higher
#    or lower than with $m = 0.99$, and why might that be?
# 2. Make the queue as small as one batch ($K = 256$, this recipe's batch size). Does the loss end higher or lower, and does that make the
#    encoder better? Score both encoders with `knn_readout`: what can one short run tell you?
#
# The solutions are folded below; each runs as written (shorter runs than the one above).

# %% tags=["hide-cell"]
def short_run(
    m: float = cfg.moco.momentum,
    K: int = cfg.moco.queue_size,
    n: int = 5 if profile == "smoke" else 40,
):
    """A short training of MyMoCo from one start: the mean loss of its last 5 steps, and
    its encoder's kNN readout (%)."""
    torch.manual_seed(0)
    model = MyMoCo(
        copy.deepcopy(build_model(cfg).encoder_q), cfg.model.dim, K, m, cfg.moco.tau
    )
    opt = torch.optim.SGD(
        model.encoder_q.parameters(), lr=cfg.optim.lr, momentum=0.9, weight_decay=1e-4
    )
    g = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(n):
        idx = torch.randint(len(train_set.images), (batch,), generator=g)
        x_q, x_k = make_views(train_set.images[idx], aug, g)
        losses.append(float(my_moco_step(model, opt, x_q, x_k, g)))
    return sum(losses[-5:]) / len(losses[-5:]), knn_readout(model.encoder_q.backbone)


runs = {"m99": short_run(), "m0": short_run(m=0.0), "k256": short_run(K=256)}
runs["k4096"] = runs["m99"]
ends = {name: loss for name, (loss, _) in runs.items()}
# Solution 1: without momentum the loss ends higher over these steps: the key encoder
# moves a whole optimiser step between two batches of keys (at 0.99, a hundredth of
# one), so the queue's keys no longer agree with each other or with the fresh key.
# (Momenta below the paper's 0.99 are the subject of its Table 1, read in a later
# chapter.)
print(f"m = 0: {ends['m0']:.2f}   m = 0.99: {ends['m99']:.2f}")
# Solution 2: a queue of one batch ends lower, because a guess among 257 costs log(257)
# = 5.5, among 4 097 log(4097) = 8.3: fewer negatives make an easier, less informative
# test. A lower loss here does not mean a better encoder: loss values are not comparable
# across K (nor across temperatures); encoders are compared by their readout. After so
# few steps, on one seed, the two readouts differ by chance as much as by K: the later
# chapters pair several seeds over whole runs before they call one setting better.
print(f"K = 256: loss {ends['k256']:.2f}, kNN readout {runs['k256'][1]:.1f} %")
print(f"K = 4096: loss {ends['k4096']:.2f}, kNN readout {runs['k4096'][1]:.1f} %")

# %% tags=["remove-cell"]
if profile != "smoke":
    glue_reading(moco.read_exercises(ends))
