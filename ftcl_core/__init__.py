"""ftcl_core: feature transformations for contrastive learning (Zhu et al., ICCV 2021), MoCo on a CPU,
the score-statistics visualization tool, and resumable runs.

To lift FT into a MoCo of your own: ``from ftcl_core import ft`` (``ft.FTConfig``, ``ft.logits``,
``ft.info_nce``; the six lines are in :mod:`ftcl_core.ft` and the README).

Modules, one concern each: ``config`` (defaults, overrides, validation; imports nothing else of the package),
``transforms`` (FT, eq. 3-4, Sec 4.2, Supp G), ``losses`` (InfoNCE, eq. 1, FT inside the loss), ``models``
(encoders, heads, split-BN), ``methods`` (one file per method: MoCo, eq. 2, SimCLR, BYOL, SimSiam, SwAV),
``augment`` (batched MoCo v1/v2 views), ``data`` (embedded shapes set, real-data loaders), ``stats`` (Supp A
statistics, Supp C gradient norms), ``training``, ``execution`` (device, float32 on CUDA, memory format,
split-BN layout, compile, the wrapped model), ``evaluation`` (kNN, linear readout), ``runs`` (run folders,
provenance).  That is the library; it imports neither :mod:`ftcl_core.study` (this repository's experiments,
records, claims, diagnosis and command line) nor :mod:`ftcl_core.pages` (the book's figures and tables).
"""

__version__ = "0.1.0"
