"""The GPU check: one command, one process, a hard time budget, for a GPU machine this project is lent.

``PYTHONPATH=. python3 -m benchmarks.gpucheck --out DIR [--budget-s 420] [--dry-run]`` writes
``DIR/gpucheck.json`` and ``DIR/gpucheck.md`` (rewritten after every part, so a run stopped from outside still
leaves what it measured).  Parts, each skipped, and said so, when the time left cannot hold it:

1. **environment** (:mod:`.environment`): GPU, memory, driver/CUDA, library versions, TF32/bf16 support, a
   measured bf16 matrix product against the chip's datasheet peak;
2. **agreement** (:mod:`.checks`): one training step (MoCo v2 with FT; SimCLR) from the same weights and views on
   the CPU in fp32 and on the GPU in fp32 (TF32 off), then bf16 + channels_last; GPU augmentation against CPU
   augmentation from the same per-sample parameters; **compile**: ``train.compile=true`` against the eager
   step, in a child process stopped at the budget;
3. **throughput** (:mod:`.throughput`): MoCo v2 ResNet-50 at 224 px and ResNet-18 at 64 px, batch 256, bf16 +
   channels_last on synthetic images: images/s, the step split into phases, peak memory, achieved TFLOP/s, FT
   and statistics overhead, and the same model step fed by a per-sample torchvision-transforms DataLoader (the
   pipeline of lightly and of the released code) as the anchor;
4. **kernels** (:mod:`.kernels`): split batch-norm per group against one pass over a view of the batch, the layer
   alone (bf16, fp16, with the GPU kernels a profile names) and the MoCo v2 step at both sizes;
   **captured** (:mod:`.captured`): the CPU profile's small network eager, compiled and captured in CUDA graphs
   (``train.cuda_graph``), with FT's overhead and the losses' agreement; **loader** (:mod:`.loader`): where the
   per-sample anchor's time goes (each transform, one process, the DataLoader's busy cores); **imagenet**
   (:mod:`.imagenet`): an ImageNet-100-shaped tree of JPEGs made on the machine, then the user's own training
   command for one epoch: cache build rate, training images/s, readout seconds;
5. **scale** (:mod:`.scale`): one pair beyond the CPU's scale (embedded shapes at 64 px, ResNet-18, MoCo v1
   against MoCo v1 + ``ft.pos ft.neg``, one seed, the same short budget): linear readout, random-init readout
   and the first step at which Mean(neg) of the raw cosines exceeds 0.9.

:mod:`.run` orders the parts within the budget; :mod:`.report` renders a report (and the stored ones, for the
book).  ``--dry-run`` shrinks every part so that the whole check runs on a 2-core CPU in well under a minute:
the "GPU" side of every comparison is then the CPU itself, ``train.compile`` uses the ``eager`` backend, and
the GPU-only measurements say that they were skipped.  Needs only torch, torchvision, timm, numpy, pyyaml and
tqdm (what the GPU machines have); nothing is installed or downloaded.  Timing goes through
:mod:`benchmarks.timing`, the harness the benchmarks use.
"""
