# %% [markdown]
# # Several processes and GPUs
#
# How the methods of [Beyond MoCo](10_methods.ipynb) train under `torchrun`, where the time of a step goes on this
# machine, and what the first measurements on a GPU say.

# %% colab-setup

# %% tags=["parameters"]
import os

profile = os.environ.get("FTCL_PROFILE", "cpu")  # smoke (CI, seconds) | cpu (embedded data) | gpu (ImageNet-100)
# the methods' experiment files, as on the page Beyond MoCo: their recipes are the ones timed here
method_files = ["experiments/table7_simclr.yaml", "experiments/supp_e_byol.yaml", "experiments/table7_simsiam.yaml",
               "experiments/table7_swav.yaml"]

# %%
# %% [markdown]
# The same training entry point runs under `torchrun`; each rank takes the rows `rank::world` of every
# batch, MoCo gathers keys from all ranks into its queue with shuffle-BN across ranks, SimCLR gathers its
# negatives with their gradient:
#
# ```bash
# torchrun --standalone --nproc_per_node=2 -m ftcl_core train configs/smoke_simclr.yaml model.bn_splits=1 --out runs/simclr_ddp
# ```
#
# The tests run this with two gloo processes on CPU and check that they reproduce one process on the
# whole batch (weights, losses and queue to float32 rounding, 1e-4; `model.bn_splits=2` in one process is plain BN on two
# ranks) and that a run killed under `torchrun` resumes bit-identically.
#
# On a GPU the configs `configs/gpu_*.yaml` turn on bf16 autocast (the networks only: {term}`FT`, scores and
# loss stay fp32), channels-last, fused SGD, pinned memory and augmentation on the device. Where the time
# of a step goes, measured now on this machine for each method (the recipes of the tables above; GPU numbers
# come from `python -m benchmarks.bench breakdown` on a GPU machine):
# %%
import sys

from IPython.display import display

from ftcl_core.config import load_config
from ftcl_core.pages import markup
from ftcl_core.study import experiment_file, store

sys.path.insert(0, str(experiment_file.ROOT))  # the step-time profile lives beside the package, in the repository's benchmarks/
from benchmarks import profiling

# the recipes the tables above run (MoCo: Table 7's v2 rows); the smoke profile times its own tiny configs
configs = {}
for path in ["experiments/table7_ft_v2.yaml", *method_files]:
    base = experiment_file.base_for(experiment_file.Experiment.load(path), "cpu")
    configs[load_config(str(experiment_file.ROOT / base)).method] = base
if profile == "smoke":
    configs = {k: f"configs/smoke_{'moco_v2' if k == 'moco' else k}.yaml" for k in configs}
steps = 2 if profile == "smoke" else 10
rows = []
for method, config in configs.items():
    r = profiling.breakdown(str(experiment_file.ROOT / config), steps=steps, warmup=1, synthetic=512 if profile == "smoke" else 0)
    rows.append([method, f"{r['step_ms']:.0f}", f"{r['images_per_s']:.0f}"]
                + [f"{100 * v / r['step_ms']:.0f} %" for v in r["phases_ms"].values()])
phases = list(r["phases_ms"])
print(f"device: {r['device_name']}, {r['threads']} threads, batch {r['batch_size']}")
markup.html_table(["method", "step (ms)", "images/s"] + phases, rows)

# %% [markdown]
# ## On a GPU: the first measurements
#
# `python -m benchmarks.gpucheck` is the one prepared command for a GPU machine: in one process and a fixed time budget it records the
# environment; checks that one training step on the GPU agrees with the CPU (fp32 against a float64
# reference, bf16 with channels-last, `train.compile`, and the batched augmentation from the same random
# parameters); measures MoCo v2's throughput against the same step fed by per-sample torchvision transforms
# in a `DataLoader` (the pipeline of the released code and of lightly); and trains one pair beyond the CPU's
# scale: MoCo v1 with and without FT ({term}`+pos` {term}`+neg`) on the embedded shapes at 64 px with a ResNet-18. Four
# later parts measure what a lease needs to plan its runs: split batch-norm's kernels on the device; the CPU profile's
# small network eager, compiled and captured in CUDA graphs, with its first losses against eager's; where the
# per-sample torchvision anchor spends its time; and an ImageNet-100-shaped run end to end. Its reports are stored in
# `results/gpu/`; this section shows the newest result of each part, or says that none exists yet.

# %%
from IPython.display import Markdown

from benchmarks.gpucheck import report as gpu_report

gpu_reports = gpu_report.stored_reports(experiment_file.ROOT / "results" / "gpu")

# %% tags=["remove-cell"]
from ftcl_core.pages.glue import glue_facts
from ftcl_core.study import checks

gpu_facts = gpu_report.book_facts(gpu_reports)
glue_facts("gpu_", gpu_facts)
checks.expect(gpu_report.BOOK_CHECKS, gpu_facts, *gpu_report.BOOK_CHECKS)

# %% [markdown]
# Measured on one {glue:md}`gpu_gpu` (torch {glue:md}`gpu_torch`, CUDA {glue:md}`gpu_cuda`) on {glue:md}`gpu_date`.
# One fp32 training step on the GPU agrees with the CPU's: the losses differ by {glue:md}`gpu_fp32_loss_rel`
# relative, and the GPU's gradient is as close to a float64 reference as the CPU's own float32 gradient
# ({glue:md}`gpu_fp32_grad_gpu` against {glue:md}`gpu_fp32_grad_cpu`, relative L2). bf16 autocast with channels-last
# moves the loss by at most {glue:md}`gpu_bf16_loss_rel` relative, within bf16's rounding.
#
# The CPU profile's small network steps in {glue:md}`gpu_eager_ms` ms eager, {glue:md}`gpu_compiled_ms` ms compiled
# (`train.compile=true`) and {glue:md}`gpu_captured_ms` ms captured in CUDA graphs (`train.cuda_graph=true`), but
# over the first {glue:md}`gpu_agreement_steps` steps the compiled and captured losses drift from eager's (at worst
# {glue:md}`gpu_compile_worst` relative, against a tolerance of {glue:md}`gpu_compile_tolerance`). Until that is
# understood, `train.compile=auto` keeps GPU runs eager.
#
# MoCo v2 with a ResNet-50 at 224 px trains at {glue:md}`gpu_resnet50_224px_images_per_s` images/s
# ({glue:md}`gpu_resnet50_224px_tflops` TFLOP/s, {glue:md}`gpu_resnet50_224px_peak_percent` % of the bf16 peak),
# {glue:md}`gpu_resnet50_224px_vs_anchor` times the same step fed by per-sample torchvision transforms with PIL's blur,
# as the released code does, in a {glue:md}`gpu_resnet50_224px_anchor_workers`-worker `DataLoader`
# ({glue:md}`gpu_resnet50_224px_anchor_images_per_s` images/s). With a ResNet-18 at 64 px the step is short, and the
# batched augmentation falls behind its anchor: {glue:md}`gpu_resnet18_64px_images_per_s` images/s,
# {glue:md}`gpu_resnet18_64px_vs_anchor` times the anchor's {glue:md}`gpu_resnet18_64px_anchor_images_per_s`.
#
# FT adds nothing measurable to the long step ({glue:md}`gpu_resnet50_224px_ft_ms` ms on
# {glue:md}`gpu_resnet50_224px_step_ms` ms), but {glue:md}`gpu_resnet18_64px_ft_ms` ms to the short one
# ({glue:md}`gpu_resnet18_64px_ft_percent` % of {glue:md}`gpu_resnet18_64px_step_ms` ms). Drawing FT's $\lambda$ and
# the queue's permutation on the CPU and copying them to the GPU every step makes the host wait for the device; a
# long step hides that wait, a short one does not. Timed in one interleaved run, the short step's FT share is
# {glue:md}`gpu_resnet18_64px_ft_host_percent` % with the draws on the host and
# {glue:md}`gpu_resnet18_64px_ft_percent` % on the device (`train.ft_draws`): the wait explains part of it, and the
# rest is not yet explained.
#
# The scale pair (MoCo v1, ResNet-18, 64 px, {glue:md}`gpu_scale_epochs` epochs, one seed each): the baseline reads
# out {glue:md}`gpu_scale_baseline` %, with FT ({term}`+pos` {term}`+neg`) {glue:md}`gpu_scale_ft` %, against
# {glue:md}`gpu_scale_random` % for the random-init encoder, and {term}`Mean(neg)` of FT's raw cosines passes the
# {term}`collapse level` at step {glue:md}`gpu_scale_neg_step`. One pair decides nothing by itself: it is a first
# point beyond the CPU's scale, where FT again ends below its baseline and below the random-init encoder.

# %%
gpu_titles = {"agreement": "The GPU path against the CPU", "throughput": "Throughput, MoCo v2, batch 256, bf16 + channels-last",
              "scale": "The scale pair", "kernels": "Split batch-norm on the device: per group against one pass over a view",
              "captured": "The CPU profile's small network: eager, compiled, captured in CUDA graphs",
              "loader": "Where the per-sample torchvision anchor spends its time",
              "imagenet": "An ImageNet-100-shaped run end to end (fabricated JPEGs)"}
for part, (header, rows) in gpu_report.book_tables(gpu_reports).items():
    display(Markdown(f"**{gpu_titles[part]}**"))
    display(markup.html_table(header, rows))

# %% [markdown]
# Stored runs can be trained on a GPU too: where a run executes is not part of its recipe
# (`python -m ftcl_core sweep FILE --set device=cuda`; `tools/device_sweep.py` packs a GPU machine's runs), and each
# run's `provenance.json` names its device. The table lists every stored setting with a run trained on a GPU,
# beside its runs trained on a CPU, with the mean training time a run. The small networks of the `cpu` profile
# leave a GPU nearly idle: a step dispatches thousands of small operations, so it runs only a few times faster
# there, while several runs share the GPU.

# %%
by_device = store.runs_by_device(profile) if profile != "smoke" else []
on_gpu = {r["runs"] for r in by_device if r["device"] not in ("CPU",) and "NVIDIA" in r["device"]}
device_rows = [[r["runs"], r["device"], ", ".join(map(str, r["seeds"])), f"{r['train_s']:.0f}"]
               for r in by_device if r["runs"] in on_gpu]
display(markup.html_table(["runs", "trained on", "seeds", "train s a run"], device_rows) if device_rows
        else Markdown("No stored run was trained on a GPU yet."))
