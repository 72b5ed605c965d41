"""Chapter 7's tables: the study's diagnosis rows (:mod:`ftcl_core.study.diagnosis`) as HTML tables, each with
the caption its chapter writes."""

from __future__ import annotations

import numpy as np

from ftcl_core.pages.markup import html_table
from ftcl_core.study import diagnosis
from ftcl_core.study.results import verdicts
from ftcl_core.study.results.numbers import fixed, plus_minus


def comparison_table(rows: list[dict], caption: str,
                     columns: tuple[str, str, str] = ("baseline", "FT (+pos +neg)", "Δ (FT - baseline)")):
    """:func:`diagnosis.paired_comparison` rows as one HTML table (:func:`diagnosis.comparison_cells`)."""
    return html_table(
        ["comparison", *columns, "seeds", "verdict"], [diagnosis.comparison_cells(r) for r in rows], caption=caption
    )


def switch_on_table(starts: list[tuple[str, dict, dict]], caption: str):
    """:func:`diagnosis.switch_on_rows` as an HTML table: where the runs stood when FT switched on, and the readout."""
    return html_table(["FT from", "ρ before", "Mean(neg) before", "highest Mean(neg) after",
                       "steps until Mean(neg) > 0.9, per seed", "linear readout vs never (points)"],
                      [[setting, fixed(st["rho_before"], 2), fixed(st["neg_mean_before"], 2),
                        fixed(st["peak_neg_mean_after"], 2),
                        ", ".join("never" if f is None else str(f) for f in st["steps_to_collapse"]),
                        f"{plus_minus(row['diff'], row['ci95'], signed=True)} "
                        f"({verdicts.row_label(row)}, {row['n_seeds']} seeds)"]
                       for setting, row, st in starts], caption=caption)


def signature_table(arms: dict[str, tuple[list[dict], str]], caption: str):
    """How far each named arm ``(records, setting)`` concentrates its features (:func:`diagnosis.representation_signature`),
    as an HTML table."""
    sigs = {name: diagnosis.representation_signature(recs, setting) for name, (recs, setting) in arms.items()}
    return html_table(["runs (MoCo v1, calibrated)", "seeds", "highest Mean(neg)", "final effective rank", "final ρ"],
                      [[name, str(s["n_seeds"]), fixed(s["peak_neg_mean"], 2), fixed(s["final_erank"]),
                        fixed(s["final_rho"], 2)] for name, s in sigs.items() if s["n_seeds"]],
                      caption=caption)


def reference_table(records: list[dict], caption: str):
    """The references a readout on real images stands against, averaged over ``records``' runs: the raw-pixel
    linear probe, the random-init encoder and each arm's readout, as an HTML table (one row per setting)."""
    def mean(recs: list[dict], key: str) -> str:
        return fixed(float(np.mean([r[key] for r in recs]))) if all(key in r for r in recs) else ""

    rows = []
    for setting in dict.fromkeys(r["setting"] for r in records):
        recs = [r for r in records if r["setting"] == setting]
        rows.append([setting, *(mean(recs, k) for k in ("raw_pixels_linear_top1", "random_init_linear_top1", "linear_top1"))])
    if not rows:
        return html_table(["setting"], [], caption="No runs on real images stored.")
    return html_table(["setting", "raw pixels, linear %", "random-init encoder, linear %", "encoder, linear %"], rows,
                      caption=caption)


def error_ratio_table(rows: list[dict], caption: str):
    """For each training length of :func:`diagnosis.length_rows` with runs, how many times as many test images FT gets
    wrong as its baseline ((100 - FT) / (100 - baseline)), as an HTML table: a gap in points shrinks near the
    ceiling even when the relative damage grows."""
    runs = [r for r in rows if r["kind"] == "length" and r["n_seeds"]]
    return html_table(["steps", "baseline %", "FT %", "errors, FT / baseline"],
                      [[str(r["steps"]), fixed(r["baseline"]), fixed(r["ft"]),
                        fixed(diagnosis.error_ratio(r))] for r in runs],
                      caption=caption)


def negative_table(rows: list[dict], caption: str):
    """:func:`diagnosis.negative_rows` as an HTML table."""
    return html_table(
        ["comparison", "baseline", "FT", "Δ (FT - baseline)", "seeds", "verdict", "Mean(neg) shift by FT",
         "Var(neg) after FT / raw", "final raw Mean(neg) (baseline)"], [diagnosis.negative_cells(r) for r in rows],
        caption=caption)
