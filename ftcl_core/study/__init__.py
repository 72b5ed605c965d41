"""The study: what this repository asks of the library (:mod:`ftcl_core`) and the data it gets back.

An experiment file and its runs' configs and folders (:mod:`.experiment_file`); the stored runs (:mod:`.store`);
sweeps, forks and plans (:mod:`.sweeps`); the paper's tables judged and ``results/summary.csv``
(:mod:`.table_verdicts`); the chapters' readings of those tables (:mod:`.readings`); run records, paired
comparisons and the paper's claims (:mod:`.results`); the diagnosis rows (:mod:`.diagnosis`), what chapter 7's pages say of them
(:mod:`.diagnosis_readings`) and the gradient algebra (:mod:`.gradient_algebra`); calibration
(:mod:`.calibration`); the outcome predictor (:mod:`.predict`); what the book finds (:mod:`.findings`); the MoCo
variants of the diagnosis (:mod:`.moco_diagnosis`); the command line (:mod:`.cli`).  Data out: nothing here draws
a figure (the pages do, :mod:`ftcl_core.pages`).

Importing the study registers the diagnosis' config keys (:mod:`.config_keys`: ``moco.drop_same_class``,
``stats.same_class``, ``ft.shards``, ``ft.pos_gate``) with the library's config
(:func:`ftcl_core.config.register_sections`), its MoCo variants, which read them, with the library's method registry
(:func:`ftcl_core.methods.register_variants`), so a config with those keys loads and builds them by name, and its
Fashion-MNIST loader (:mod:`.fashion_mnist`) with the library's data sets (:func:`ftcl_core.data.register_data_set`),
so ``data.name=fashion_mnist`` loads.
"""

from ftcl_core.data import register_data_set
from ftcl_core.methods import register_variants
from ftcl_core.study import config_keys, fashion_mnist
from ftcl_core.study.moco_diagnosis import pick_variant

config_keys.register()
register_variants(pick_variant)
register_data_set("fashion_mnist", fashion_mnist.load_splits)
