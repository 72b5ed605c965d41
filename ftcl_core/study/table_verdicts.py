"""The paper's tables judged: each claim's row and verdict (:func:`table_rows`), the Benjamini-Hochberg correction,
the tally, the baselines' aims, and ``results/summary.csv`` with its Markdown (:func:`write_summary`)."""

from __future__ import annotations

import csv
import io
import math
import os
from collections import Counter
from collections.abc import Collection
from pathlib import Path

from ftcl_core.runs import RunDir, atomic_write_bytes
from ftcl_core.study.experiment_file import (
    ROOT,
    Experiment,
    _has_entry,
    base_for,
    data_label,
    data_set,
    profile_root,
    recipe_kind,
    writes_committed,
)
from ftcl_core.study.results import verdicts
from ftcl_core.study.results.numbers import csv_number, fixed, pm_cell
from ftcl_core.study.results.paired import by_seed, mean_ci95, pair
from ftcl_core.study.results.verdicts import BASELINE, MIN_SEEDS, NOT_RUN, Claim
from ftcl_core.study.store import load_records, machine_kind, recorded_table


def table_facts(exp: Experiment, profile: str, records: list[dict] | None = None) -> dict:
    """What a table's caption in the book names: its name and title, the images (:func:`data_label`) and recipe
    (``recipe``: the base config; ``recipe_kind``: :func:`recipe_kind`, since a table on the profile's original
    recipe and one on a recipe calibrated without FT are not comparable row by row) its runs use and, given the
    table's ``records``, the settings that have no stored run yet (``missing``, comma-separated; "" for none)."""
    stored = {r["setting"] for r in records or []}
    missing = [s for s in exp.settings if s not in stored] if records is not None else []
    base = base_for(exp, profile)
    return {"table": exp.table, "title": exp.title, "data": data_label(exp, profile), "recipe": base,
            "recipe_kind": recipe_kind(base), "missing": ", ".join(missing)}


def summarize(records: list[dict], key: str = "linear_top1") -> dict[str, dict]:
    """Per setting: mean, ci95, n_seeds of ``key`` and of the random-init baseline."""
    out: dict[str, dict] = {}
    for setting in dict.fromkeys(r["setting"] for r in records):
        vals = [r[key] for r in records if r["setting"] == setting]
        rand = [r["random_init_linear_top1"] for r in records if r["setting"] == setting and "random_init_linear_top1" in r]
        pixels = [r["raw_pixels_linear_top1"] for r in records if r["setting"] == setting and "raw_pixels_linear_top1" in r]
        m, ci = mean_ci95(vals)  # a setting of the records: never empty
        rm, rci = mean_ci95(rand, allow_empty=True)
        out[setting] = {"mean": m, "ci95": ci, "n_seeds": len(vals), "random_init_mean": rm, "random_init_ci95": rci,
                        "raw_pixels_mean": mean_ci95(pixels, allow_empty=True)[0], "values": vals}
    return out


TABLE_HEADER = ["setting", "ours", "±95%", "n", "Δ", "vs", "paper", "paper Δ", "ours/paper", "verdict"]


def table_cells(exp: Experiment, records: list[dict], kinds: Collection[str] | None = None
                ) -> tuple[str, list[str], list[list[str]]]:
    """Title, header and cells of an experiment's table: the rows of :func:`table_rows`, i.e. mean, 95 % CI,
    seeds, paired difference against each claim's reference, the paper's number and effect, our effect over the
    paper's, and the verdict. ``kinds``: only the rows of those claim kinds (``Claim.kind``: "sanity", "ordering",
    ...; a baseline row has none and is kept only without ``kinds``)."""
    rows = []
    for r in table_rows(exp, records):
        if kinds is not None and r.get("kind") not in kinds:
            continue
        rows.append([r["setting"], fixed(r["mean"]), pm_cell(r["ci95"], None), str(r["n_seeds"]),
                     pm_cell(r["diff_mean"], r["diff_ci95"], signed=True), r["reference"],
                     "" if r["paper"] is None else str(r["paper"]), pm_cell(r["effect"], None, 2, signed=True),
                     pm_cell(r["ratio"], None, 2), verdicts.row_label(r)])
    return f"{exp.table}: {exp.title}", TABLE_HEADER, rows


def format_table(exp: Experiment, records: list[dict]) -> str:
    """:func:`table_cells` as plain text (for a terminal; the book shows them as HTML tables)."""
    title, header, rows = table_cells(exp, records)
    widths = [22, 6, 5, 2, 15, 12, 8, 7, 10]

    def line(cells: list[str]) -> str:
        return " ".join(f"{c[:w] if i == 5 else c:>{w}s}" for i, (c, w) in enumerate(zip(cells, widths))) + f"  {cells[-1]}"

    return "\n".join([title, line(header), *(line(r) for r in rows)])


def table_order(table: str) -> tuple[int, str]:
    """Sort key: the paper's tables T1..T7 first, then the supplement's (S-F, S-G)."""
    return (0 if table.startswith("T") else 1, table)


# the columns of the error scale (claims.judge): the paired log error ratio, the paper's, the verdict on each scale,
# the scale that decided, and the seeds whose two runs trained on different devices (such a pair leaves the BH family)
SCALE_COLUMNS = ("verdict_points", "log_error_ratio", "log_error_ratio_ci95", "paper_log_error_ratio",
                 "verdict_errors", "scale", "mixed_seeds", "floor_sensitive")
SUMMARY_COLUMNS = ("table", "data", "setting", "mean", "ci95", "n_seeds", "paper", "verdict", "reference", "diff_mean",
                   "diff_ci95", "random_init_mean", "claim", "base", "kind", "effect", "margin", "ratio", "p_value",
                   "q_value", "verdict_bh", "reference_shared_by", "knn_diff_mean", "knn_diff_ci95", "knn_verdict",
                   *SCALE_COLUMNS)
KNN = "knn_top1"  # the kNN readout, judged beside the linear one where the runs hold it


def claim_row(exp: Experiment, records: list[dict], claim: Claim, key: str = "linear_top1") -> dict:
    """The paired comparison of one claim on ``records`` and its verdict, as row fields: the reference, the
    paired difference, the claim's kind, the paper's effect and margin, our effect over the paper's, the p-value
    and the verdict (:func:`ftcl_core.study.results.verdicts.judge`) with both of its scales (:data:`SCALE_COLUMNS`), and
    the same verdict on the kNN readout. A sanity check against ``random init`` pairs each run with its own
    random-init encoder's readout."""
    def paired_on(readout: str):
        if claim.kind == "sanity":
            return pair(by_seed(records, claim.arm, readout), by_seed(records, claim.arm, f"random_init_{readout}"),
                        allow_empty=True)
        return pair(by_seed(records, claim.arm, readout), by_seed(records, claim.reference, readout),
                    record_devices(records, claim.arm, claim.reference), allow_empty=True)

    judged = verdicts.judge(claim, paired_on(key))
    knn = verdicts.judge(claim, paired_on(KNN)) if any(KNN in r for r in records if r["setting"] == claim.arm) else None
    return {"reference": claim.reference, "diff_mean": judged.paired.mean, "diff_ci95": judged.paired.ci95,
            "verdict": judged.word, "claim": claim.describe(), "kind": claim.kind, "effect": claim.effect,
            "margin": claim.margin, "ratio": judged.ratio, "p_value": judged.p, "q_value": math.nan,
            "verdict_bh": judged.word, "knn_diff_mean": knn.paired.mean if knn else math.nan,
            "knn_diff_ci95": knn.paired.ci95 if knn else math.nan, "knn_verdict": knn.word if knn else "",
            **scale_cells(judged), "_verdict": judged}


def scale_cells(judged: verdicts.Verdict) -> dict:
    """The :data:`SCALE_COLUMNS` of one verdict: the word on points, the paired log error ratio (mean and 95 %
    half-width, NaN where the claim is not judged on errors), the paper's, the word on errors, the scale that
    decided, and the seeds whose arms trained on different devices (space-separated)."""
    errors = judged.errors
    return {"verdict_points": judged.points, "log_error_ratio": errors.mean if errors else math.nan,
            "log_error_ratio_ci95": errors.ci95 if errors else math.nan,
            "paper_log_error_ratio": judged.claim.paper_log_error_ratio if errors else math.nan,
            "verdict_errors": judged.error_word, "scale": judged.scale,
            "mixed_seeds": " ".join(map(str, judged.paired.mixed_seeds)),
            "floor_sensitive": "yes" if judged.floor_sensitive else ""}


def record_devices(records: list[dict], arm: str, reference: str) -> dict[int, tuple[str, str]]:
    """Per seed both settings hold, the kinds of machine their runs trained on (:func:`machine_kind`; "" for a record
    without a run folder), for :func:`ftcl_core.study.results.paired.pair`."""
    runs = {(r["setting"], r["seed"]): r for r in records if r["setting"] in (arm, reference)}

    def device(r: dict) -> str:
        return machine_kind(RunDir(r["dir"])) if r.get("dir") else ""

    return {s: (device(runs[arm, s]), device(runs[reference, s])) for (name, s) in runs
            if name == arm and (reference, s) in runs}


def table_rows(exp: Experiment, records: list[dict]) -> list[dict]:
    """One row per claim of ``exp`` (:meth:`Experiment.claims_of`) whose arm has runs, after the arm's own row
    where the arm has no primary claim (a ``baseline`` row: it claims nothing, and ``reference`` names the setting
    it is compared with, where there is one). A claim whose reference has no readouts stored reads ``not run``, never
    ``baseline``. A claim's row carries :func:`claim_row`; ``reference_shared_by``
    counts the table's claims against the same reference arm (their verdicts are not independent)."""
    summary = summarize(records)
    rows = []
    for setting, v in summary.items():
        base = {"table": exp.table, "data": "", "setting": setting, "mean": v["mean"], "ci95": v["ci95"],
                "n_seeds": v["n_seeds"], "paper": exp.paper.get(setting), "verdict": BASELINE, "reference": "",
                "diff_mean": math.nan, "diff_ci95": math.nan, "random_init_mean": v["random_init_mean"], "claim": "",
                "kind": "", "effect": None, "margin": None, "ratio": math.nan, "p_value": math.nan,
                "q_value": math.nan, "verdict_bh": BASELINE, "reference_shared_by": "", "knn_diff_mean": math.nan,
                "knn_diff_ci95": math.nan, "knn_verdict": "", "verdict_points": "", "log_error_ratio": math.nan,
                "log_error_ratio_ci95": math.nan, "paper_log_error_ratio": math.nan, "verdict_errors": "",
                "scale": "", "mixed_seeds": "", "floor_sensitive": ""}
        asked = exp.claims_of(setting)
        claims = [c for c in asked if c.kind == "sanity" or c.reference in summary]
        primary = bool(asked) and (asked[0].kind == "sanity" or asked[0].reference == exp.compare.get(setting))
        if not primary:
            ref = exp.compare.get(setting)
            if ref in summary:  # compared, but the paper claims nothing of it
                paired = pair(by_seed(records, setting), by_seed(records, ref), allow_empty=True)
                errors = paired.log_error_ratios()  # both scales, as a claim's row has them
                base.update(reference=ref, diff_mean=paired.mean, diff_ci95=paired.ci95,
                            log_error_ratio=errors.mean, log_error_ratio_ci95=errors.ci95)
            rows.append(base)
        rows += [{**base, **claim_row(exp, records, c)} for c in claims]
        rows += [{**base, "reference": c.reference, "verdict": NOT_RUN, "verdict_bh": NOT_RUN, "claim": c.describe(),
                  "kind": c.kind, "effect": c.effect, "margin": c.margin}  # its reference has no readouts stored
                 for c in asked if c not in claims]
    shared: dict[str, int] = {}
    for r in rows:
        if r["kind"] and r["kind"] != "sanity":
            shared[r["reference"]] = shared.get(r["reference"], 0) + 1
    for r in rows:
        if r["kind"] and r["kind"] != "sanity":
            r["reference_shared_by"] = shared[r["reference"]]
    return rows


DATA_SUFFIXES = {"fashion_mnist": "-fmnist"}  # a table's name on another data set: T6 -> T6-fmnist


def data_set_verdicts(rows: list[dict]) -> list[dict]:
    """Each claim tested on more than one data set (a table and its ``-fmnist`` twin, same setting), with the
    verdict per data set and where the claim holds (matches the paper or larger): on every data set, on some (named),
    on ``none`` (opposite to the paper on every data set), or ``open`` (it holds on no data set and not every one reads
    opposite, or one data
    set's runs are on the original recipe and another's on a calibrated one: ``recipes``, per data set).
    ``rows``: summary rows (:func:`write_summary`'s CSV)."""
    claims: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        if r["verdict"] == BASELINE:
            continue
        table = r["table"]
        for suffix in DATA_SUFFIXES.values():
            table = table.removesuffix(suffix)
        claims.setdefault((table, r["setting"], r.get("reference", "")), {})[r["data"]] = r
    out = []
    for (table, setting, reference), per in claims.items():
        if len(per) < 2:
            continue
        decided = {d: r["verdict"] for d, r in per.items() if int(r["n_seeds"]) >= MIN_SEEDS}
        holds = sorted(d for d, v in decided.items() if v in (verdicts.MATCHES, verdicts.LARGER, verdicts.EQUIVALENT))
        recipes = {d: recipe_kind(r.get("base", "")) for d, r in per.items()}
        if len(set(recipes.values())) > 1:  # one data set still on the original recipe: not yet comparable
            where = "open (recipes differ)"  # "open", not "undecided": that verdict means fewer than 3 seeds
        elif len(holds) == len(per):
            where = "every data set"
        elif holds:
            where = ", ".join(holds)
        elif len(decided) == len(per) and all(v in (verdicts.OPPOSITE, verdicts.NOT_EQUIVALENT)
                                              for v in decided.values()):
            where = "none"
        else:  # no data set replicates it, and one has < 3 seeds or an interval that includes zero
            where = "open"
        out.append({"table": table, "setting": setting, "reference": reference, "claim": next(iter(per.values()))["claim"],
                    "per_data": {d: (r["verdict"], int(r["n_seeds"])) for d, r in sorted(per.items())},
                    "recipes": dict(sorted(recipes.items())), "holds_on": where})
    return out


def row_claim(row: dict) -> Claim:
    """The claim a summary row (a CSV row as read by ``csv.DictReader``, or :func:`table_rows`'s) judges."""
    kind = row.get("kind") or ("sanity" if row.get("reference") == "random init" else "difference")
    number = [None if row.get(k) in (None, "") else float(row[k]) for k in ("effect", "margin")]
    below = str(row.get("claim", "")).startswith(("below", "collapses"))
    return Claim(row["setting"], row.get("reference", ""), kind, number[0], -1 if below else 1, number[1],
                 text=row.get("claim", ""))


def judge_cells(row: dict, diff_mean, diff_ci95, n_seeds) -> str:
    """The verdict on ``row``'s claim (:func:`row_claim`) of a paired difference given as numbers or CSV cells."""
    if pm_cell(diff_mean, None) == "":
        return verdicts.UNDECIDED
    mean, ci = float(diff_mean), float(diff_ci95) if pm_cell(diff_ci95, None) else math.nan
    return verdicts.verdict_word(row_claim(row), mean - ci, mean + ci, int(n_seeds))


def recipe_sensitivity(before: list[dict], after: list[dict]) -> list[dict]:
    """Each claim whose table now runs on another recipe (another ``base`` config) than in the dated record
    ``before`` (e.g. :data:`RECIPE_RECORD`): both verdicts, both paired differences and seeds, and whether the
    verdict changed. ``before``/``after``: summary rows (:func:`write_summary`'s CSV). Both verdicts are the ones
    on points (``verdict_points``, where ``after`` has it): the record holds no reference readouts per seed to judge
    its pairs on the error scale. A row refiled under another table since the record (:data:`REFILED`) is matched
    with its row there."""
    old = {(r["table"], r["data"], r["setting"], r.get("reference", "")): r for r in before if r["verdict"] != BASELINE}
    out = []
    for r in after:
        o = old.get((recorded_table(r["table"], r["setting"]), r["data"], r["setting"], r.get("reference", "")))
        if o is None or r["verdict"] == BASELINE or o.get("base") == r.get("base"):
            continue
        # the record's paired interval judged by today's verdict on today's claim (the record was written under
        # earlier rules: a sign-only verdict, two seeds deciding a claim)
        was, now = judge_cells(r, o["diff_mean"], o["diff_ci95"], o["n_seeds"]), r.get("verdict_points") or r["verdict"]
        out.append({"table": r["table"], "data": r["data"], "setting": r["setting"], "claim": r["claim"],
                    "base_before": o.get("base", ""), "base_after": r["base"],
                    "before": (was, o["diff_mean"], o["diff_ci95"], int(o["n_seeds"])),
                    "after": (now, r["diff_mean"], r["diff_ci95"], int(r["n_seeds"])),
                    "changed": was != now})
    return out


METHOD_TABLES = ("T7", "T7-fmnist", "S-E")  # the tables holding each method's baseline: Table 7 (each data set), Supp E
BASELINE_AIMS = {"gain": 25.0, "spread": 5.0}  # issue "fair baselines": >= random init + 25 points, 95 % CI <= 5


def baseline_aims(rows: list[dict]) -> list[dict]:
    """The bar this book sets for each method's baseline, judged at the tables' budget (the ``<method> baseline``
    rows of Table 7 and of Supp E's BYOL table, :data:`METHOD_TABLES`, in ``rows``, :func:`write_summary`'s CSV, on a
    calibrated recipe): linear readout at least
    ``BASELINE_AIMS["gain"]`` points above the random-init encoder, and a run-to-run spread (95 % CI over seeds)
    of at most ``BASELINE_AIMS["spread"]`` points.  Calibration chose the recipes at a shorter, shared budget
    (:mod:`ftcl_core.study.calibration`); these rows say where the tables' longer runs stand.  On data where the
    random-init encoder is not the bar (Fashion-MNIST: the raw-pixel probe, which the summary does not hold)
    ``gain_met`` is None.  ``spread_met`` is None below :data:`MIN_SEEDS` seeds."""
    out = []
    for r in rows:
        if not (r["table"] in METHOD_TABLES and r["verdict"] == "baseline"
                and recipe_kind(r.get("base", "")) == "calibrated"):
            continue
        mean, ci, n = float(r["mean"]), float(r["ci95"] or "nan"), int(r["n_seeds"])
        rand = float(r.get("random_init_mean") or "nan")  # a run stored before the random-init readout has none
        gain = mean - rand
        out.append({"table": r["table"], "data": r["data"], "setting": r["setting"], "base": r["base"], "mean": mean,
                    "ci95": ci, "n_seeds": n, "random_init": rand, "gain": gain,
                    "gain_met": gain >= BASELINE_AIMS["gain"] if r["data"] == "shapes" and not math.isnan(gain) else None,
                    "spread_met": ci <= BASELINE_AIMS["spread"] if n >= MIN_SEEDS else None})
    return out


def summary_rows(profile: str = "cpu", folder: str | os.PathLike | None = None) -> list[dict[str, str]]:
    """Every experiment file's stored runs summarised, one row per table setting, as the cells of
    :func:`write_summary`'s CSV (text; floats at 6 decimals, blank for none): a chapter reads these without
    rewriting the file that chapter 9 writes."""
    folder = Path(folder) if folder else ROOT / "experiments"
    rows = []
    for path in sorted(folder.glob("*.yaml")):
        exp = Experiment.load(path)
        data = data_set(exp, profile)  # shapes | fashion_mnist | ...
        base = base_for(exp, profile)  # the recipe the table runs on (recipe_sensitivity compares two summaries by it)
        rows += [{**r, "data": data, "base": base} for r in table_rows(exp, load_records(path, profile))]
    rows.sort(key=lambda r: table_order(r["table"]))  # T1 ... T7, then the supplement (stable within a table)
    apply_bh(rows)
    return [{k: csv_number(v) for k, v in r.items() if not k.startswith("_")} for r in rows]


def comparison_key(row: dict) -> tuple:
    """What makes two rows one comparison: tables share runs (Table 7's v1 +pos is Table 2's alpha_ex=2.0, copied
    by :func:`sweep`), and a copied run's readouts are the source's to the last digit, so two rows whose data,
    recipe, means, intervals, seeds and paired difference agree are the same comparison."""
    return tuple(csv_number(row.get(k, "")) for k in ("data", "base", "mean", "ci95", "n_seeds", "diff_mean", "diff_ci95"))


def apply_bh(rows: list[dict]) -> None:
    """Fill ``q_value`` and ``verdict_bh`` of ``rows`` (:func:`table_rows`' rows, holding their ``_verdict``) in
    place: Benjamini-Hochberg over the family of the rows' claims that are not sanity checks
    (:attr:`~ftcl_core.study.results.verdicts.Claim.in_family`: differences, orderings, equivalences), each distinct
    comparison (:func:`comparison_key`) counted once; the linear readout only (the kNN verdicts are not adjusted).
    A pair with a seed whose two runs trained on different types of device (a CPU run against a GPU run: float
    rounding besides the effect) leaves the family: its q-value stays blank and its verdict is not adjusted. A pair on
    two CPU models stays in it, marked in ``mixed_seeds``."""
    family: dict[tuple, float] = {}

    def member(v) -> bool:
        return v is not None and v.claim.in_family and not v.paired.mixed_device_types

    for r in rows:
        v = r.get("_verdict")
        if member(v) and not math.isnan(v.p):
            family.setdefault(comparison_key(r) + (v.claim.kind, v.claim.margin), v.p)
    keys = list(family)
    q = dict(zip(keys, verdicts.benjamini_hochberg(list(family.values()))))
    for r in rows:
        v = r.get("_verdict")
        if member(v):
            key = comparison_key(r) + (v.claim.kind, v.claim.margin)
            r["q_value"] = q.get(key, math.nan)
            r["verdict_bh"] = verdicts.after_bh(v, r["q_value"])
            for p_alt in v.floor_p if key in family else ():  # the error floor's rule: half and twice the floor
                alt = verdicts.benjamini_hochberg([p_alt if k == key else family[k] for k in keys])[keys.index(key)]
                if verdicts.after_bh(v, alt) != r["verdict_bh"]:
                    r["floor_sensitive"] = "yes"


def unfit_baselines(rows: list[dict]) -> list[tuple[str, str]]:
    """The baselines (``(table, setting)``) of :func:`baseline_aims` below the bar this book sets for a baseline at the
    tables' budget (:data:`BASELINE_AIMS`: its gain over the random-init encoder, its seed spread): a claim measured
    against one of them is not judged in the tallies (:func:`tally`)."""
    return [(a["table"], a["setting"]) for a in baseline_aims(rows) if a["gain_met"] is False or a["spread_met"] is False]


def tally(rows: list[dict]) -> dict[str, dict[str, dict[str, int]]]:
    """Per table (and ``all``), the distinct claims (:func:`distinct_claims`) of ``rows`` by verdict word, the
    paper's claims (``ft``: every kind but sanity) apart from the ``sanity`` checks, before BH (``verdict``) and after
    it (``verdict_bh``), and the paper's claims that the error scale decided (``ft_errors``: ``scale`` is
    ``errors``, where the ceiling forbids the paper's point effect; their word is in ``ft`` too); the paper's claims
    against a baseline below the bar (:func:`unfit_baselines`) are counted apart (``unfit``), in none of the others:
    ``{table: {"ft": {word: n}, "ft_bh": {...}, "ft_errors": {...}, "sanity": {...}, "unfit": {...}}}``."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    unfit = set(unfit_baselines(rows))
    for table in ["all", *dict.fromkeys(r["table"] for r in rows)]:
        group = distinct_claims([r for r in rows if r["verdict"] != BASELINE and table in ("all", r["table"])])
        claims = [r for r in group if r.get("kind") != "sanity" and r.get("reference") != "random init"]
        ft = [r for r in claims if (r["table"], r.get("reference")) not in unfit]
        sanity = [r for r in group if r not in claims]
        on_errors = [r for r in ft if r.get("scale") == verdicts.ERRORS]
        out[table] = {"ft": {w: sum(r["verdict"] == w for r in ft) for w in verdicts.TALLY_WORDS},
                      "ft_bh": {w: sum(r.get("verdict_bh", r["verdict"]) == w for r in ft) for w in verdicts.TALLY_WORDS},
                      "ft_errors": {w: sum(r["verdict"] == w for r in on_errors) for w in verdicts.TALLY_WORDS},
                      "sanity": {w: sum(r["verdict"] == w for r in sanity) for w in verdicts.TALLY_WORDS},
                      "unfit": {w: sum(r["verdict"] == w for r in claims if r not in ft) for w in verdicts.TALLY_WORDS}}
    return out


def write_summary(profile: str = "cpu", folder: str | os.PathLike | None = None,
                  out: str | os.PathLike | None = None) -> Path:
    """Summarise every experiment file's stored runs into one CSV (``results/summary.csv`` for cpu)."""
    default = ROOT / "results" / "summary.csv" if writes_committed(profile) else profile_root(profile) / "summary.csv"
    target = Path(out) if out else default
    target.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(summary_rows(profile, folder))
    atomic_write_bytes(target, buf.getvalue().encode())
    return target


def summary_markdown(path: str | os.PathLike, folder: str | os.PathLike | None = None,
                     heading: str = "### {table}", fold: bool = False) -> str:
    """``summary.csv`` as one Markdown table per paper table, each with the commands that regenerate it.

    Columns: the setting, its verdict (see :func:`verdict`) and the verdict after Benjamini-Hochberg first, then ours
    (linear top-1, mean ± 95 % CI over seeds), seeds, the paper's number, the claim, and the paired difference
    against the reference.  ``fold``: each table behind its heading and its count of verdicts (an HTML
    ``<details>``, opened on demand; ``heading`` is then HTML, not Markdown).
    """
    folder = Path(folder) if folder else ROOT / "experiments"
    files: dict[tuple[str, str], list[str]] = {}
    for f in sorted(folder.glob("*.yaml")):
        exp = Experiment.load(f)
        for base in {"", base_for(exp, "cpu") if "cpu" in exp.base else ""}:  # by table, and by table and recipe
            files.setdefault((exp.table, base), []).append(f"experiments/{f.name}")

    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    out: list[str] = []
    # one table per paper table and recipe: a table half rerun on a calibrated recipe shows its two halves apart
    for table, base in dict.fromkeys((r["table"], r.get("base", "")) for r in rows):
        group = [r for r in rows if r["table"] == table and r.get("base", "") == base]
        data = group[0].get("data")  # summaries before the column: None
        label = ", ".join(x for x in (data, Path(base).stem if base else "") if x)
        title = heading.format(table=f"{table} ({label})" if label else table)
        if fold:  # the table opens on demand; its heading says what it holds
            tally = Counter(r["verdict"] for r in group if r["verdict"] != BASELINE)
            title = (f"<details><summary>{title}: " + (", ".join(f"{n} {v}" for v, n in tally.most_common()) or
                                                       "no claim") + "</summary>")
        def term(word: str, anchor: str) -> str:  # in the book, a header links its word to the glossary
            return f"[{word}](glossary.html#term-{anchor})" if fold else word

        out += [title, "",
                f"| setting | {term('verdict', 'verdict')} | {term('after BH', 'BH')} | ours | seeds | paper | claim | "
                f"Δ vs ref. | {term('paper Δ', 'paper')} | ours/paper | {term('q (BH)', 'BH')} |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in group:
            try:
                paper = f"{float(r['paper']):g}"
            except ValueError:  # "" or "collapse"
                paper = r["paper"]
            out.append(f"| {r['setting']} | {verdicts.row_label(r)} | "
                       f"{r.get('verdict_bh', '')} | {pm_cell(r['mean'], r['ci95'])} | {r['n_seeds']} | {paper} | "
                       f"{r['claim']} | {pm_cell(r['diff_mean'], r['diff_ci95'])} | "
                       f"{pm_cell(r.get('effect'), None, 2, signed=True)} | {pm_cell(r.get('ratio'), None, 2)} | "
                       f"{pm_cell(r.get('q_value'), None, 3)} |")
        cmds = ", ".join(f"`python -m ftcl_core sweep {f}`" for f in files.get((table, base)) or files.get((table, ""), []))
        out += ["", f"Regenerate: {cmds}", ""] + (["</details>", ""] if fold else [])
    return "\n".join(out)


def tables_without_runs(profile: str = "cpu", folder: str | os.PathLike | None = None) -> list[str]:
    """The experiment files with no stored run on their current recipe (a table just switched to a calibrated recipe,
    say), as ``"T7 (supp_e_byol, cpu_cal_byol)"``: :func:`write_summary` has no row for them, so a reader is told."""
    folder = Path(folder) if folder else ROOT / "experiments"
    waiting = []
    for path in sorted(folder.glob("*.yaml")):
        exp = Experiment.load(path)
        if ("gpu" if profile == "gpu" else "cpu") in exp.base and not load_records(path, profile):
            waiting.append(f"{exp.table} ({path.stem}, {Path(base_for(exp, profile)).stem})")
    return waiting


OPEN_FOLDERS = ("experiments", "experiments/diagnosis", "experiments/headroom")  # the book's questions (no calibration)


def open_runs(paths: list[str | os.PathLike] | None = None, profile: str = "cpu",
              root: str | os.PathLike | None = None) -> list[dict]:
    """What the experiment files at ``paths`` (default: every file of :data:`OPEN_FOLDERS`) ask for and the store
    (``root``) does not hold, one row per setting short of its seeds: ``table``, ``file``, ``setting``, ``planned``
    and ``stored`` (seed lists), ``missing`` (the seeds to train) and ``never`` (True for a setting
    :func:`table_facts` names as missing: no stored run at all). Files without a base for ``profile`` are skipped.
    Nothing is trained here."""
    if paths is None:
        paths = [str(p.relative_to(ROOT)) for d in OPEN_FOLDERS for p in sorted((ROOT / d).glob("*.yaml"))]
    rows = []
    for path in paths:
        exp = Experiment.load(path)
        if not _has_entry(exp.base, profile):
            continue
        records = load_records(path, profile, root)
        never = set(filter(None, table_facts(exp, profile, records)["missing"].split(", ")))
        for name in exp.settings:
            stored = sorted(r["seed"] for r in records if r["setting"] == name)
            missing = [s for s in exp.seeds if s not in stored]
            if missing:
                rows.append({"table": exp.table, "file": str(path), "setting": name, "planned": list(exp.seeds),
                             "stored": stored, "missing": missing, "never": name in never})
    return rows


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def distinct_claims(claims: list[dict]) -> list[dict]:
    """``claims`` (summary rows that make a claim) with each comparison kept once: tables share runs (Table 7's
    v1 +pos is Table 2's alpha_ex=2.0, copied by :func:`sweep`), and a copied run's readouts are the source's to
    the last digit, so two rows whose data, recipe, means, intervals and seeds all agree are the same comparison."""
    seen: dict[tuple, dict] = {}
    for r in claims:
        seen.setdefault(comparison_key(r) + (r.get("kind", ""), r.get("verdict", "")), r)
    return list(seen.values())
