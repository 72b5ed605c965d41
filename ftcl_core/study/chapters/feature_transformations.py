"""The reading of *Feature transformations in training* (``book/06_feature_transformations``): Table 7's FT against
its baseline, how the encoder undoes the harder positive, the concentration signatures of every stored table, and how
much FT's gradient swings."""

from __future__ import annotations

from ftcl_core.runs import RunDir
from ftcl_core.study import curves, experiment_file, findings, readings, signatures, store
from ftcl_core.study.chapters import Block
from ftcl_core.study.evidence import Evidence

TABLE_7_V1 = "experiments/table7_ft_v1.yaml"
# the experiment files whose stored cpu runs the words on the concentration signatures read (the page's train and show)
SIGNATURES = (TABLE_7_V1, "experiments/table7_ft_v2.yaml", "experiments/table2_alpha_ex.yaml",
              "experiments/table4_alpha_in.yaml", "experiments/table3_interp_vs_extrap.yaml",
              "experiments/table5_queue.yaml", "experiments/table6_start_epoch.yaml", "experiments/supp_f_renorm.yaml",
              "experiments/supp_g_negatives.yaml", "experiments/table7_ft_v1_fmnist.yaml",
              "experiments/table7_ft_v2_fmnist.yaml", "experiments/table6_start_epoch_fmnist.yaml")


def read(stored: Evidence) -> list[Block]:
    table7 = {k: v for k, v in findings.facts(stored).items() if k.startswith(("t7_v1_pos", "t7_v1_neg"))}
    signature = signatures.signature_facts(signatures.signature_rows(
        {path: store.load_records(path, "cpu", experiment_file.STORED) for path in SIGNATURES}))
    pair = {r["setting"]: RunDir(r["dir"]).load_grad_norms()["per_epoch"]
            for r in store.load_records(TABLE_7_V1, "cpu", experiment_file.STORED)
            if r["seed"] == 0 and r["setting"] in ("v1 baseline", "v1 +both")}
    return [
        Block(table7, {}, prefix=""),
        Block(stored, findings.CHECKS, ("positive-mixing-costs", "headroom-crowding-goes-with-the-cost")),
        Block(stored.undone, readings.CHECKS, ("the encoder undoes the harder positive",
                                               "the encoder crowds the images together"), "undone_"),
        Block(signature, signatures.CHECKS, ("some rows lose their readout without passing the level",
                                             "some rows pass the level and keep their readout"), "sig_"),
        Block(curves.grad_swing_facts(pair), curves.CHECKS, ("FT swings more than its baseline",), "swing_"),
    ]
