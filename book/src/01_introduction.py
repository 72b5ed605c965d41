# %% [markdown]
# # Introduction
#
# In this chapter you will learn what the paper claims, what this book reproduces of it at laptop scale, and how to
# run the chapters yourself.
#
# **The paper in one page.** {cite}`zhu2021improving` studies contrastive methods such as MoCo
# {cite}`he2020momentum,chen2020improved`, which learn by pulling two views of one image
# together (the *positive* pair, score $S_{q\cdot k^+} = z_q\cdot z_{k^+}$ on the unit sphere) and pushing
# other images away (the *negatives*, here a queue of $K$ keys). Zhu et al. make two contributions:
#
# 1. **A visualization tool** (Sec 3.2, {term}`Supp A`): per training step, the mean positive score
#    {term}`Mean(pos)`, and for the negatives the mean {term}`Mean(neg)` and variance {term}`Var(neg)` of their scores. With it
#    they show how MoCo's momentum $m$ shapes training: too small an $m$ and the scores and gradients
#    swing, and the representation "collapses" (the paper's word for a {term}`readout` below a random encoder's; Table 1, Figs 3-5).
# 2. **Feature transformations ({term}`FT`)** (Sec 4): *positive extrapolation* mixes the query and its key
#    with $\lambda \sim \mathrm{Beta}(\alpha,\alpha)+1$, which provably lowers the positive score
#    (eq. 4) and makes positives harder; *negative interpolation* mixes the queue with a permutation of
#    itself, giving fresh negatives each step. On ImageNet-100 they report gains of several points of linear
#    {term}`readout` for MoCo v1 and v2 (Table 7; the paper's numbers are in `experiments/table7_ft_*.yaml` and [Results against the paper](09_results.ipynb)).
#
# **What this book reproduces, and at what scale.** The paper trains ResNet-50 for 200 epochs on
# ImageNet-100 with 8 GPUs. This book runs everything on the CPU, on an embedded data set of procedurally
# drawn shapes (10 classes, no download) with a small ResNet, so that one MoCo run takes minutes on two
# cores ([the scale of the `cpu` profile](#cpu-scale) below times one). So that no verdict rests on synthetic data alone, the momentum study, Table 7 and Table 6
# also run on Fashion-MNIST {cite}`xiao2017fashion`: real 28×28 grayscale photographs of clothing in 10
# classes, read offline from Debian's `dataset-fashion-mnist` package (or downloaded by torchvision when a user asks
# with `data.download=true`); its tables carry the suffix `-fmnist`. On those photographs a linear probe on the raw
# pixels is a third reference beside the random-init encoder: an encoder is worth something only above it.
# A `gpu` profile carries the paper's recipe for ImageNet-100 on your own GPU.
# Where a small-scale run does not reproduce a claim, the book says so: that is a finding, not a bug.
#
# | chapter | what it does |
# |---|---|
# | **Learn** | |
# | [Why contrastive learning works](learn1_contrastive.ipynb) | InfoNCE, alignment and uniformity, and the temperature, on a toy |
# | [MoCo from scratch](learn2_moco.ipynb) | MoCo's queue and momentum encoder in a few dozen lines, one step of it checked against the library's |
# | [Reading a run](learn3_reading.ipynb) | the statistics the visualization tool records, on real features; a real MoCo v2 run with its score statistics and gradient landscape |
# | [Momentum, read with the tool](learn4_momentum_read.ipynb) | the paper's momentum sweep (Table 1) read with the tool: harder positives, crowding, a landscape that jumps |
# | [FT: the bound and the transformations](learn5_ft.ipynb) | eq. 4 derived with sympy and checked numerically; interpolation; an interactive explorer |
# | [Switching FT on in your own MoCo](learn6_your_moco.ipynb) | FT in a MoCo step of your own, from the first step or switched on late |
# | **Reproduce** | |
# | [Momentum (Table 1)](05_momentum.ipynb) | the momentum sweep of Table 1 and Figs 3-5 |
# | [Feature transformations in training](06_feature_transformations.ipynb) | Tables 2-7 and {term}`Supp F`/G, measured; re-normalisation and dimension-level mixing |
# | [When does feature transformation help?](07a_when_ft_helps.ipynb) and the pages after it | the gradient algebra of FT's cost, checked; where training sits; FT on {term}`calibrated` baselines, without false negatives, on real photographs; a phase diagram of when to switch FT on; the answer |
# | [Does FT help once there is room to help?](11_headroom.ipynb) | a harder task, far from a perfect score, where FT has room to gain |
# | [Results against the paper](09_results.ipynb), [every table](09b_every_table.ipynb) and [baselines and recipes](09c_baselines.ipynb) | every reproduced number with seeds, intervals and a verdict; the baseline calibration |
# | [Beyond MoCo](10_methods.ipynb) | SimCLR, BYOL, SimSiam and SwAV with FT |
# | [Run explorer](08_run_explorer.ipynb) | compare any stored runs |
# | [Open questions](open_questions.ipynb) | what was not run |
# | **Use** | |
# | [Using ftcl](guide.md) | every command and config key, the stored runs and sweeps |
# | [Several processes and GPUs](gpus.ipynb) | `torchrun`, where a step's time goes, the first measurements on a GPU |

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)

# %% [markdown]
# **One step of MoCo with FT, in one picture** (the paper's Fig 2; `ftcl_core.pages.diagrams.moco_pipeline`). Two
# augmented views of an image pass through the query encoder and the key encoder, which follows the query encoder
# slowly (eq. 2). FT acts on their outputs and on the queue just before the scores; the loss (eq. 1) trains the
# query encoder only, and the clean keys, not the transformed ones, enter the queue.
# [Switching FT on in your own MoCo](learn6_your_moco.ipynb) takes this step in code.

# %% tags=["hide-input"]
import matplotlib.pyplot as plt

from ftcl_core.pages import diagrams, legibility, markup

diagrams.moco_pipeline()
plt.show()

# %% [markdown]
# ## What this book finds
#
# The paper's machinery reproduces ([MoCo from scratch](learn2_moco.ipynb), [Reading a run](learn3_reading.ipynb),
# [FT: the bound and the transformations](learn5_ft.ipynb)), and so do parts of its momentum study
# ([Momentum (Table 1)](05_momentum.ipynb)). Its headline, that feature transformation improves contrastive
# learning, comes out reversed at this scale when FT runs from the first step
# ([Feature transformations in training](06_feature_transformations.ipynb)).
# [When does feature transformation help?](07a_when_ft_helps.ipynb) asks why and gives [the answer](answer). The findings, each with its numbers and
# a link to the chapter behind it, open this part: [What the runs found](findings.md).
#
# ## How to read and run it
#
# Read the rendered HTML: figures are static, and the explorers (the temperature of
# [Why contrastive learning works](learn1_contrastive.ipynb), α and λ in
# [FT: the bound and the transformations](learn5_ft.ipynb), and the [Run explorer](08_run_explorer.ipynb)) respond
# to their sliders without a kernel. To run a chapter, open it in JupyterLab (`make lab` from the repository root),
# or run it headless with [papermill](https://papermill.readthedocs.io); each chapter takes a `profile` parameter.
# Once the book is published from a repository, launch buttons at the top of each page also open a chapter in
# Colab or Binder. From the repository root, after `make test` or `make book` has created `.venv`, run a chapter
# with the command below, `NN_name` one of the names under it:

# %%
import textwrap
from pathlib import Path

import yaml

# the book's table of contents, in its order: every entry with a notebook beside this one (the Use pages are Markdown)
toc = yaml.safe_load(Path("../_toc.yml").read_text())
entries = [Path(c["file"]).name for part in toc["parts"] for c in part["chapters"]]
chapters = [name for name in entries if Path(f"{name}.ipynb").is_file()]
command = ".venv/bin/papermill book/NN_name.ipynb /tmp/NN_name.ipynb"
print(f"{command} -p profile {profile} --cwd book\n")
print(textwrap.fill(", ".join(chapters), 80))  # lines the page holds, no name split

# %% [markdown]
# The three profiles:
#
# * `smoke`: every chapter in seconds to a minute on tiny data (what CI runs);
# * `cpu` (default): the embedded data at [the scale stated below](#cpu-scale); runs already stored under
#   `results/cpu` are loaded; [Reading a run](learn3_reading.ipynb), [Momentum (Table 1)](05_momentum.ipynb) and
#   [Feature transformations in training](06_feature_transformations.ipynb) train the few runs they show if one is
#   missing, the others only read stored runs (`python -m ftcl_core sweep FILE` trains an experiment's);
# * `gpu`: ImageNet-100 at the paper's recipe (set `data.root` in `configs/gpu_in100_*.yaml`).
#
# (embedded-data)=
# ## The embedded data
#
# Ten shape classes drawn at random rotation, scale, position, palette colours, background gradient
# and pixel noise, deterministically from a seed. The class survives MoCo's augmentations; colour,
# drawn independently of the class from a small palette, neither gives away the class nor identifies an
# instance. (With free colours, a quick calibration on this machine found MoCo solving instance
# discrimination by colour alone and learning nothing about shape.) Below: a sample, and two augmented
# views of each image as MoCo v2 sees them.

# %%
import matplotlib.pyplot as plt
import torch

from ftcl_core import augment
from ftcl_core.pages import diagrams
from ftcl_core.shapes import SHAPE_CLASSES, make_shapes

sample = make_shapes(10 * 6, seed=0)
order = torch.argsort(sample.labels, stable=True)
images = sample.images[order]
gen = torch.Generator().manual_seed(0)
views = [augment.augment(images, augment.moco_v2(24), gen) for _ in range(2)]
std, mean = torch.tensor(augment.moco_v2().std).view(1, 3, 1, 1), torch.tensor(augment.moco_v2().mean).view(1, 3, 1, 1)

fig, axes = plt.subplots(3, 10, figsize=(legibility.BOOK_WIDTH_IN, 2.9))
for c in range(10):
    i = c * 6
    axes[0, c].imshow(images[i].permute(1, 2, 0))
    axes[0, c].set_title(SHAPE_CLASSES[c], fontsize=9)
    for r in (0, 1):
        axes[r + 1, c].imshow((views[r][i : i + 1] * std + mean).clamp(0, 1)[0].permute(1, 2, 0))
for ax in axes.flat:
    ax.axis("off")
axes[1, 0].set_title("view 1", fontsize=9, loc="left")
axes[2, 0].set_title("view 2", fontsize=9, loc="left")
plt.tight_layout()
plt.show()

# %%
import platform

import torchvision

import ftcl_core

threads = torch.get_num_threads()
print(f"ftcl_core {ftcl_core.__version__}, torch {torch.__version__}, torchvision {torchvision.__version__}, "
      f"python {platform.python_version()}")
print(f"{threads} thread{'s' if threads != 1 else ''}, profile {profile}")

# %% [markdown]
# (cpu-scale)=
# ## The scale of the `cpu` profile
#
# On two CPU cores the constraint is the number of useful steps per minute. A small CIFAR-stem ResNet-10 (width 16,
# 0.3 M parameters) at 24-pixel crops of 32-pixel images, batch 256, with batched augmentation, keeps 30 epochs of
# 10 000 images to minutes; the stored MoCo v2 run that [Reading a run](learn3_reading.ipynb) reads prints its own
# training time and steps per second below its recipe (they depend on the CPU: compare them only with runs on the
# same machine). The queue holds $K=4096$ keys, below the data set size as it must (the MoCo CIFAR demo's warning: a
# queue as large as the data holds the query's own earlier keys as negatives). `gpu` runs ResNet-50 on ImageNet-100
# at the paper's recipe.

# %%
from IPython.display import display

from ftcl_core.study import experiment_file, readings, store
from ftcl_core.study.results.numbers import fixed

exp = experiment_file.Experiment.load("experiments/table7_ft_v2.yaml")
run = store.stored_run(exp.path, "v2 baseline", seed=0)  # the stored cpu run, whatever profile this page ran with
recipe = readings.recipe_rows(run.load_config(), ("data.name", "data.n_train", "data.image_size", "augment.out_size",
                                           "model.encoder", "moco.queue_size", "train.batch_size", "train.epochs"))
display(markup.html_table(["setting", "value"], recipe, caption=f"The stored run's recipe ({experiment_file.base_for(exp, 'cpu')}; "
                                                           "the whole config is the run folder's config.yaml)"))
ev, prov = run.load_eval(), run.load_provenance()
n_steps = len(run.load_metrics()["loss"])
print(f"linear top-1 {fixed(ev['linear_top1'])} %  (random init {fixed(ev['random_init_linear_top1'])} %)")  # as every page rounds
print(f"train {ev['train_s']:.0f} s for {n_steps} steps ({n_steps / ev['train_s']:.1f} steps per second) + eval "
      f"{ev['eval_s']:.0f} s on {prov.get('cpu_model') or prov.get('device_name')} ({prov.get('threads')} threads)")

# %% [markdown]
# ## References
#
# ```{bibliography}
# ```

# %% [markdown]
# (try-it-01)=
# ## Try it
#
# * **The `profile` parameter.** Run this chapter headless with `.venv/bin/papermill book/01_introduction.ipynb
#   /tmp/01_introduction.ipynb -p profile smoke --cwd book`: it finishes in seconds, and the command printed above
#   now carries `-p profile smoke`. What each profile trades for its speed is in *How to read and run it* above.
# * **A config key, `seed`.** Train a MoCo v2 run of your own with `.venv/bin/python -m ftcl_core train
#   configs/cpu_cal_moco_v2.yaml seed=1 --out runs/try-seed`: on two cores it takes minutes, as said above. [Reading a run](learn3_reading.ipynb)
#   reads a run like it, and [*The scale of the `cpu` profile*](#cpu-scale) prints how long the stored one took.
