"""What the book finds, written for people, with the numbers and verdicts each sentence rests on.

Chapter 7 states the answer in short authored paragraphs; the README, the book's index and chapter 1 quote its five
bullets (:func:`bullets`).  Numbers never enter the prose typed: they come from :func:`facts`, formatted once by
:mod:`ftcl_core.study.results.numbers` (so a number reads alike on every page), and reach chapter 7 through myst-nb's
``glue``.  Every qualitative word is bound to a check (:data:`CHECKS`, run by :func:`expect`): when the stored
verdicts change, :class:`FindingsDisagree` names the sentence to rewrite, and the book build fails.

The evidence is the committed runs of the ``cpu`` profile (``results/cpu``, :data:`ftcl_core.study.experiments.STORED`),
read by :meth:`Evidence.load`; nothing here trains, except on the ``smoke`` profile, where chapter 7 trains the
tiny versions of its pairs.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ftcl_core.runs import atomic_write_bytes
from ftcl_core.study import diagnosis as G
from ftcl_core.study import experiments as X
from ftcl_core.study.results import claims as verdicts
from ftcl_core.study.results.claims import MIN_SEEDS
from ftcl_core.study.results.numbers import fixed, plus_minus

SHAPES_FIRST_STEP = ("recipe", "recipe v2", "init", "oracle", "classes", "shards")  # one change each, on the shapes
REAL_FIRST_STEP = ("real", "real, longer")  # Fashion-MNIST at 10 and 30 epochs
CHANGES = {"recipe": "a MoCo v1 recipe calibrated without FT", "recipe v2": "a calibrated MoCo v2 recipe",
           "init": "Kaiming initialisation", "oracle": "no same-class negatives", "classes": "30 classes",
           "shards": "one λ per shard of 32 queries"}
LONG_LABEL = "shapes, 120 epochs"  # the phase diagram's row whose first-step cell is D-length-long-v1's pair
LATE_FROM = 0.3  # a late start: FT switched on after 30 % of the run or later (Table 7's epoch 1, at 3 %, is not one)


class FindingsDisagree(AssertionError):
    """A sentence of the book no longer matches the stored verdicts it rests on."""


@dataclass(frozen=True)
class Evidence:
    """The stored comparisons the findings rest on, each a :func:`ftcl_core.study.diagnosis.paired_comparison` row.

    ``phase`` / ``phase_knn``: per row of the phase diagram (data and length, :data:`diagnosis.START_EXPERIMENTS`)
    and start fraction, FT against the same run without FT (linear / kNN readout); ``switch``: where those runs
    stood when FT switched on; ``first_step`` / ``first_step_knn``: FT from the first step against its baseline,
    one named comparison per change of the recipe (:data:`diagnosis.FIRST_STEP_EXPERIMENTS`); ``length``: the
    shapes at each planned length (:func:`diagnosis.length_rows`); ``capacity`` / ``capacity_knn``: one row per encoder;
    ``resolution``: the width-16 pair at 56-px crops (:func:`diagnosis.resolution_row`); ``pixels`` /
    ``random_init``: Fashion-MNIST's raw-pixel and random-init linear probes; ``summary``: results/summary.csv."""

    phase: Mapping[str, Mapping[float, dict]]
    phase_knn: Mapping[str, Mapping[float, dict]]
    switch: Mapping[str, Mapping[float, dict]]
    first_step: Mapping[str, dict]
    first_step_knn: Mapping[str, dict]
    length: tuple[dict, ...]
    capacity: tuple[dict, ...]
    capacity_knn: tuple[dict, ...]
    resolution: dict
    pixels: float
    random_init: float
    summary: tuple[dict, ...]
    band: tuple[float, float]
    records: Mapping[str, list[dict]]  # per experiment file, the records the rows above were computed from

    @classmethod
    def load(cls, profile: str = "cpu", root: str | Path | None = None, summary: str | Path | None = None) -> Evidence:
        """The evidence of ``profile``'s runs (``root``: where they are; the committed ones by default for
        ``cpu``). On ``smoke`` the tiny pairs are trained first (:func:`diagnosis.chapter_records`).

        One number for one quantity: FT from the first step at 120 epochs is D-length-long-v1's pair, whose two
        arms trained on one device per seed, also in the phase diagram (D-start-long-v1's "start 0" and "never"
        are the same configs and seeds, with "never" retrained on the CPU against a "start 0" from the GPU)."""
        root = root or (X.STORED if profile == "cpu" else None)
        smoke = profile == "smoke"  # the tiny runs CI trains: a few settings, seed 0
        phase, knn, switch, loaded = {}, {}, {}, {}
        for label, path in G.START_EXPERIMENTS.items():
            records = loaded[path] = G.chapter_records(path, profile, G.smoke_settings(path) if smoke else None, root)
            phase[label] = G.start_fraction_rows(path, records, profile)
            knn[label] = G.start_fraction_rows(path, records, profile, "knn_top1")
            switch[label] = {f: G.switch_on_state(records, row["comparison"]) for f, row in phase[label].items()}
        first, first_knn, real = {}, {}, []
        for name, path in G.FIRST_STEP_EXPERIMENTS.items():
            records = loaded[path] = G.chapter_records(path, profile, ["baseline", "+both"] if smoke else None, root)
            stated = G.stated_claim(path, "+both", "baseline")
            first[name] = G.paired_comparison(G.FIRST_STEP_NAMES[name], records, "baseline", "+both", claim=stated)
            first_knn[name] = G.paired_comparison(G.FIRST_STEP_NAMES[name], records, "baseline", "+both", "knn_top1",
                                                  stated)
            real += records if name in REAL_FIRST_STEP else []
        path = G.LENGTH_EXPERIMENTS["the shapes"]
        records = loaded[path] = G.chapter_records(path, profile, ["baseline 30", "+both 30"] if smoke else None, root)
        length = G.length_rows(path, records, profile)
        length_knn = G.length_rows(path, records, profile, "knn_top1")
        for rows, grid in ((length, phase), (length_knn, knn)):
            long = next((r for r in rows if r["kind"] == "length" and r["epochs"] == 120), None)
            if long and long["n_seeds"] and 0.0 in grid.get(LONG_LABEL, {}):
                grid[LONG_LABEL][0.0] = {**long, "comparison": grid[LONG_LABEL][0.0]["comparison"]}
        mean = (lambda key: float(np.mean([r[key] for r in real if key in r])) if any(key in r for r in real)  # noqa: E731
                else math.nan)
        return cls(phase, knn, switch, first, first_knn, tuple(length), tuple(G.capacity_rows(profile, root=root)),
                   tuple(G.capacity_rows(profile, "knn_top1", root=root)), G.resolution_row(profile, root=root),
                   mean("raw_pixels_linear_top1"), mean("random_init_linear_top1"), tuple(_summary(summary, profile)),
                   G.threshold_band(), loaded)

    def table_row(self, table: str, setting: str, reference: str) -> dict:
        """The results/summary.csv row of ``setting`` against ``reference`` in ``table`` (e.g. "T5", "v1 +both",
        "v1 baseline"); a clear error when the summary holds none."""
        for r in self.summary:
            if r["table"] == table and r["setting"] == setting and r["reference"] == reference:
                return r
        raise FindingsDisagree(f"results/summary.csv has no row {table} {setting!r} against {reference!r}: a finding "
                               "names a comparison the tables no longer make; rewrite it in ftcl_core/study/findings.py.")

    def late_cells(self, knn: bool = False) -> list[tuple[str, float, dict]]:
        """The phase diagram's decided cells with a late start (FT switched on at :data:`LATE_FROM` of the run or
        later)."""
        grid = self.phase_knn if knn else self.phase
        return [(label, f, r) for label, rows in grid.items() for f, r in sorted(rows.items())
                if f >= LATE_FROM and r["n_seeds"] >= MIN_SEEDS]


def _summary(path: str | Path | None, profile: str) -> list[dict]:
    target = Path(path) if path else X.ROOT / "results" / "summary.csv"
    if profile == "cpu" and target.is_file():
        with open(target) as fh:
            return list(csv.DictReader(fh))
    return X.summary_rows(profile)


def _pm(row: Mapping, signed: bool = True) -> str:
    """A comparison's paired difference ± its 95 % interval, from a diagnosis row or a summary.csv row."""
    diff = row.get("diff", row.get("diff_mean"))
    ci = row.get("ci95") if "diff" in row else row.get("diff_ci95")
    return plus_minus(float(diff), float(ci) if ci not in (None, "") else math.nan, signed=signed)


def facts(ev: Evidence) -> dict[str, str]:
    """Every number the findings print, formatted once: the names chapter 7 glues and :func:`bullets` fills in."""
    out: dict[str, str] = {}
    shapes = [ev.first_step[k] for k in SHAPES_FIRST_STEP if ev.first_step[k]["n_seeds"] >= MIN_SEEDS]
    if shapes:
        out["first_least"] = fixed(max(r["diff"] for r in shapes), signed=True)
        out["first_most"] = fixed(min(r["diff"] for r in shapes), signed=True)
        out["first_n"] = str(len(shapes))
    for key, row in ev.first_step.items():
        out[f"first_{key.replace(', ', '_').replace(' ', '_')}"] = _pm(row)
    for key in REAL_FIRST_STEP:
        out[f"knn_{key.replace(', ', '_')}"] = _pm(ev.first_step_knn[key])
    real = [ev.first_step[k] for k in REAL_FIRST_STEP]
    out["fm_pixels"], out["fm_random"] = fixed(ev.pixels), fixed(ev.random_init)
    fm_bases = [r["baseline"] for r in real] + [float(r["mean"]) for r in ev.summary
                                                if r["data"] == "fashion_mnist" and r["table"].startswith("T5")
                                                and r["verdict"] == verdicts.BASELINE]
    out["fm_base_lo"], out["fm_base_hi"] = fixed(min(fm_bases)), fixed(max(fm_bases))
    out["band_lo"], out["band_hi"] = fixed(ev.band[0], 2), fixed(ev.band[1], 2)
    first_states = [rows[0.0] for rows in ev.switch.values() if 0.0 in rows and rows[0.0]["n_seeds"]]
    late_states = _late_states(ev)
    if first_states:
        out["rho_first"] = fixed(max(st["rho_before"] for st in first_states), 2)
        out["peak_first"] = fixed(max(st["peak_neg_mean_after"] for st in first_states), 2)
        shapes_peak, photos_peak = _first_step_peaks(ev)
        out["peak_first_shapes"], out["peak_first_photos"] = fixed(shapes_peak, 2), fixed(photos_peak, 2)
    for key, name in (("recipe", "shapes"), ("real", "photos")):
        records = ev.records.get(G.FIRST_STEP_EXPERIMENTS[key], [])
        out[f"peak_base_{name}"] = fixed(G.representation_signature(records, "baseline")["peak_neg_mean"], 2)
    early = ev.phase.get("shapes, 30 epochs", {}).get(0.03)
    if early and early["n_seeds"]:
        out["start_3pc"], out["start_3pc_knn"] = _pm(early), _pm(ev.phase_knn["shapes, 30 epochs"][0.03])
    if late_states:
        rho = [st["rho_before"] for st in late_states if math.isfinite(st["rho_before"])]
        out["rho_late_lo"], out["rho_late_hi"] = fixed(min(rho), 2), fixed(max(rho), 2)
        out["rho_late_above"], out["rho_late_n"] = str(sum(r > ev.band[1] for r in rho)), str(len(rho))
        out["peak_late"] = fixed(max(st["peak_neg_mean_after"] for st in late_states), 2)
    cells = [(lb, f, r) for lb, rows in ev.phase.items() for f, r in rows.items() if r["n_seeds"] >= MIN_SEEDS]
    helps = [r for _, _, r in cells if verdicts.side(r["verdict"]) > 0]
    late, late_knn = ev.late_cells(), ev.late_cells(knn=True)
    out["cells"], out["late_cells"] = str(len(cells)), str(len(late))
    out["helps"] = str(len(helps))
    out["help_cells"] = "; ".join(_help_cell(lb, f, r) for lb, f, r in cells if verdicts.side(r["verdict"]) > 0)
    knn_lose = [r for _, _, r in late_knn if verdicts.side(r["verdict"]) < 0]
    knn_gain = [(lb, f, r) for lb, f, r in late_knn if verdicts.side(r["verdict"]) > 0]
    out["knn_late_lose"] = str(len(knn_lose))
    out["knn_late_lose_least"] = fixed(max((r["diff"] for r in knn_lose), default=math.nan), signed=True)
    out["knn_late_lose_most"] = fixed(min((r["diff"] for r in knn_lose), default=math.nan), signed=True)
    out["knn_late_gain"] = str(len(knn_gain))
    out["knn_late_gain_where"] = "; ".join(f"{lb}, FT from {fixed(100 * f, 0)} % of the run: {_pm(r)}" for lb, f, r in knn_gain)
    short, long, gain = _prose_lengths(ev)
    if short and long:
        out.update(short_steps=str(short["steps"]), long_steps=str(long["steps"]), short_cost=_pm(short),
                   long_cost=_pm(long), short_ratio=fixed(G.error_ratio(short)), long_ratio=fixed(G.error_ratio(long)),
                   long_ft=fixed(long["ft"]), short_base=fixed(short["baseline"]))
    if gain:
        out["length_gain"] = _pm(gain)
    out["length_longer"] = G.longer_length_sentence(list(ev.length), PROSE_LENGTHS[1])
    longest, _ = _longest_length(ev)
    if longest:
        out.update(longest_steps=str(longest["steps"]), longest_cost=_pm(longest),
                   longest_verdict=verdicts.labelled(longest["verdict"], longest.get("scale", "")),
                   longest_ratio=fixed(G.error_ratio(longest)))
    unrun = [str(r["steps"]) for r in ev.length if r["kind"] == "length" and not r["n_seeds"]]
    out["length_unrun"] = " and ".join(unrun) or "none"
    wider = [r for r in ev.capacity[1:] if r["n_seeds"] >= MIN_SEEDS]  # the larger encoders decided
    out["capacity_decided"] = "; ".join(f"{r['comparison']} ({r['parameters'] / ev.capacity[0]['parameters']:.0f}x "
                                        f"the parameters) reads {_pm(r)} points" for r in wider)
    out["capacity_base"] = f"{ev.capacity[0]['comparison']} reads {_pm(ev.capacity[0])}"
    out["capacity_open"] = _capacity_open(ev.capacity[1:])
    steps = G.PAPER_TABLE7_STEPS
    out["paper_steps"] = f"{min(steps.values()):,} to {max(steps.values()):,}".replace(",", " ")
    v1 = ev.table_row("T5", "v1 +both", "v1 baseline")
    out["t5_v1_both"], out["t5_v1_both_paper"] = _pm(v1), fixed(float(v1["effect"]), 2, signed=True)
    for key, setting, ref in (("t1_fall_999", "m=0.999", "m=0.99"), ("t1_fall_1", "m=1.0", "m=0.999"),
                              ("t1_m0", "m=0", "random init")):
        out[key] = _pm(ev.table_row("T1", setting, ref))
    counts = X.tally(list(ev.summary))["all"]
    out["claims"] = str(sum(counts["ft"].values()))
    out["claims_tally"], out["claims_tally_bh"] = _tally_words(counts["ft"]), _tally_words(counts["ft_bh"])
    on_errors = sum(counts["ft_errors"].values())
    out["claims_scale"] = (f"{on_errors} of them decided on the error scale, where the ceiling forbids the paper's "
                           f"effect in points ({_tally_words(counts['ft_errors'])})" if on_errors else
                           "every one decided on points: no baseline sits close enough to 100 % to forbid the paper's "
                           "effect")
    return out


TALLY_PHRASES = {verdicts.NO_EFFECT: "with no effect of the paper's size"}  # how a count reads before its verdict
TALLY_ORDER = (verdicts.CONTRADICTED, verdicts.REPLICATED, verdicts.SMALLER, verdicts.NO_EFFECT, verdicts.INCONCLUSIVE,
               verdicts.EQUIVALENT, verdicts.NOT_EQUIVALENT, verdicts.UNDECIDED)


def _tally_words(counts: Mapping[str, int]) -> str:
    """A tally (:func:`ftcl_core.study.experiments.tally`'s counts by word) in words: ``26 contradicted, 2 replicated``."""
    return ", ".join(f"{counts[w]} {TALLY_PHRASES.get(w, w)}" for w in TALLY_ORDER if counts.get(w)) or "none"


def _late_states(ev: Evidence) -> list[dict]:
    """Where the runs stood when FT switched on, at every late start (:data:`LATE_FROM`) with stored runs."""
    return [st for rows in ev.switch.values() for f, st in rows.items() if f >= LATE_FROM and st["n_seeds"]]


def _help_cell(label: str, f: float, row: Mapping) -> str:
    """One phase-diagram cell where FT helps, in words: where, the paired difference and its verdict, and on the
    error scale FT's share of fewer test errors against the paper's (from the geometric mean of the per-seed error
    ratios, :meth:`~ftcl_core.study.results.paired.Paired.log_error_ratios`) where that scale decided."""
    text = (f"{label}, FT from {fixed(100 * f, 0)} % of the run: {_pm(row)} points, "
            f"{verdicts.labelled(row['verdict'], row['scale'])}")
    if row["scale"] == verdicts.ERRORS:
        fewer, paper = (fixed(100 * (1 - math.exp(row[k])), 0) for k in ("log_error_ratio", "paper_log_error_ratio"))
        text += f" ({fewer} % fewer test errors than its baseline, where the paper's start has {paper} % fewer)"
    return text


def _capacity_open(rows: Sequence[Mapping]) -> str:
    """The larger encoders not decided yet, in words: one never trained reads "not run", one with fewer than 3
    paired seeds says how many it has (undecided)."""
    def state(n: int) -> str:
        return G.NOT_RUN if not n else f"{n} of {MIN_SEEDS} seeds, undecided"

    return ", ".join(f"{r['comparison']} ({state(r['n_seeds'])})" for r in rows if r["n_seeds"] < MIN_SEEDS) or "none"


# --- the checks: each names the sentence it guards ---------------------------------------------------------------

Check = Callable[[Evidence], "str | None"]  # None when the sentence holds, else what disagrees


def _verdict(row: Mapping, *words: str) -> str | None:
    if int(row["n_seeds"]) < MIN_SEEDS:
        return f"{row.get('comparison', row.get('setting'))}: {row['n_seeds']} seed(s), undecided"
    return None if row["verdict"] in words else f"{row.get('comparison', row.get('setting'))}: {row['verdict']}"


def _first_step_costs(ev: Evidence) -> str | None:
    bad = [_verdict(ev.first_step[k], verdicts.CONTRADICTED) for k in SHAPES_FIRST_STEP]
    return "; ".join(b for b in bad if b) or None


def _real_no_gain(ev: Evidence) -> str | None:
    bad = [f"{k}: {ev.first_step[k]['verdict']}" for k in REAL_FIRST_STEP
           if verdicts.side(ev.first_step[k]["verdict"]) != 0 or ev.first_step[k]["n_seeds"] < MIN_SEEDS]
    return "; ".join(bad) or None


def _real_knn_costs(ev: Evidence) -> str | None:
    bad = [_verdict(ev.first_step_knn[k], verdicts.CONTRADICTED) for k in REAL_FIRST_STEP]
    return "; ".join(b for b in bad if b) or None


def _late_helps_sometimes(ev: Evidence) -> str | None:
    """FT helps in some decided cells, and every one of them is a late start (:data:`LATE_FROM`)."""
    bad = [f"{lb} from {f:.0%}: {r['verdict']}" for lb, rows in ev.phase.items() for f, r in rows.items()
           if r["n_seeds"] >= MIN_SEEDS and verdicts.side(r["verdict"]) > 0 and f < LATE_FROM]
    helps = [r for _, _, r in ev.late_cells() if verdicts.side(r["verdict"]) > 0]
    return "; ".join(bad) or (None if helps else "FT helps in no late cell")


def _late_avoids_most(ev: Evidence) -> str | None:
    """A late start avoids most of the first step's cost: no late cell loses as much as the smallest first-step
    loss of its row (Table 7's epoch 1, at 3 % of the run, is the exception the prose names)."""
    bad = []
    for label, rows in ev.phase.items():
        first = rows.get(0.0)
        if not first or first["n_seeds"] < MIN_SEEDS or verdicts.side(first["verdict"]) >= 0:
            continue
        bad += [f"{label} from {f:.0%}: {fixed(r['diff'])}" for f, r in rows.items()
                if f >= LATE_FROM and r["n_seeds"] >= MIN_SEEDS and r["diff"] <= first["diff"] / 2]
    return "; ".join(bad) or None


def _rho_below_band_first(ev: Evidence) -> str | None:
    bad = [f"{lb}: ρ {fixed(rows[0.0]['rho_before'], 2)}" for lb, rows in ev.switch.items()
           if 0.0 in rows and rows[0.0]["n_seeds"] and not rows[0.0]["rho_before"] < ev.band[1]]
    return "; ".join(bad) or None


def _rho_above_band_late(ev: Evidence) -> str | None:
    late = _late_states(ev)
    above = sum(st["rho_before"] > ev.band[1] for st in late)
    return None if late and above > len(late) / 2 else f"ρ above the band in {above} of {len(late)} late cells"


def _first_step_peaks(ev: Evidence) -> tuple[float, float]:
    """The highest seed-mean Mean(neg) after FT from the first step, on the shapes' rows and on the photographs'."""
    peaks: dict[bool, list[float]] = {True: [], False: []}
    for label, rows in ev.switch.items():
        if 0.0 in rows and rows[0.0]["n_seeds"]:
            peaks[label.startswith("shapes")].append(rows[0.0]["peak_neg_mean_after"])
    return max(peaks[True], default=math.nan), max(peaks[False], default=math.nan)


def _photos_as_concentrated(ev: Evidence) -> str | None:
    shapes, photos = (float(fixed(p, 2)) for p in _first_step_peaks(ev))  # as printed, to 2 decimals
    return None if shapes - photos <= 0.05 else f"Mean(neg) peaks {photos:.2f} on the photographs, {shapes:.2f} on the shapes"


PROSE_LENGTHS = (30, 120)  # epochs: the two lengths chapter 7's authored length paragraph speaks of ("four times")


def _prose_lengths(ev: Evidence) -> tuple[dict | None, dict | None, dict | None]:
    """The rows the authored length paragraph rests on, each only with 3 seeds: the pair at the shorter and at the
    longer of :data:`PROSE_LENGTHS`, and FT's gain at the longer against the shorter. A still longer length has its
    own generated sentence (:func:`diagnosis.longer_length_sentence`), so its landing cannot falsify the words."""
    short, long = PROSE_LENGTHS
    return _decided_length(ev, "length", short), _decided_length(ev, "length", long), _decided_length(ev, "gain", long)


def _decided_length(ev: Evidence, kind: str, epochs: int) -> dict | None:
    """The :func:`diagnosis.length_rows` row of ``kind`` ("length" or "gain") at ``epochs``, only with 3 paired
    seeds."""
    return next((r for r in ev.length if r["kind"] == kind and r["epochs"] == epochs and r["n_seeds"] >= MIN_SEEDS),
                None)


def _length_narrows_but_ratio_grows(ev: Evidence) -> str | None:
    short, long, gain = _prose_lengths(ev)
    if not (short and long and gain):
        return f"the {PROSE_LENGTHS[0]}- and {PROSE_LENGTHS[1]}-epoch pairs lack 3 seeds"
    problems = [] if verdicts.side(gain["verdict"]) > 0 else [f"gain: {gain['verdict']}"]
    problems += [] if verdicts.side(long["verdict"]) < 0 else [f"longer run: {long['verdict']}"]
    problems += [] if G.error_ratio(long) > G.error_ratio(short) else ["FT's relative error rate does not grow"]
    problems += [] if long["ft"] < short["baseline"] else ["FT at the longer length reaches the shorter baseline"]
    return "; ".join(problems) or None


def _longest_length(ev: Evidence) -> tuple[dict | None, dict | None]:
    """The longest length past :data:`PROSE_LENGTHS` with 3 paired seeds, and FT's gain there against the shortest
    length (None, None while no such length is decided): the rows the longer-run bullet rests on."""
    rows = [r for r in ev.length if r["kind"] == "length" and r["epochs"] > PROSE_LENGTHS[1]
            and r["n_seeds"] >= MIN_SEEDS]
    if not rows:
        return None, None
    longest = max(rows, key=lambda r: r["epochs"])
    return longest, _decided_length(ev, "gain", longest["epochs"])


def _longest_shrinks_in_points_not_errors(ev: Evidence) -> str | None:
    """The longer-run sentences: at the longest length tried, FT's first-step cost in points is narrower than at
    the shortest (the gain's verdict), yet FT still costs (a verdict on the side against the paper, on the scale
    that decided) and gets at least as many times its baseline's test errors as at the shortest length."""
    longest, gain = _longest_length(ev)
    short = _decided_length(ev, "length", PROSE_LENGTHS[0])
    if not (longest and gain and short):
        return f"no length past {PROSE_LENGTHS[1]} epochs has 3 paired seeds"
    problems = [] if verdicts.side(gain["verdict"]) > 0 else [f"gain against the shortest: {gain['verdict']}"]
    problems += [] if verdicts.side(longest["verdict"]) < 0 else [f"longest run: {longest['verdict']}"]
    problems += [] if G.error_ratio(longest) >= G.error_ratio(short) else [
        "FT's share of its baseline's errors shrinks with length"]
    return "; ".join(problems) or None


def _momentum_fall(ev: Evidence) -> str | None:
    bad = [_verdict(ev.table_row("T1", s, r), verdicts.REPLICATED) for s, r in (("m=0.999", "m=0.99"),
                                                                                 ("m=1.0", "m=0.999"))]
    return "; ".join(b for b in bad if b) or None


def _momentum_no_collapse(ev: Evidence) -> str | None:
    return _verdict(ev.table_row("T1", "m=0", "random init"), verdicts.CONTRADICTED)


def _momentum_rise_open(ev: Evidence) -> str | None:
    rows = [r for r in ev.summary if r["table"] == "T1" and r["reference"].startswith("m=") and r.get("effect")
            and float(r["effect"]) > 0]
    bad = [f"{r['setting']} vs {r['reference']}: {r['verdict']}" for r in rows if r["verdict"] != verdicts.INCONCLUSIVE]
    return "; ".join(bad) or (None if rows else "no step up in T1")


def _t5_headline(ev: Evidence) -> str | None:
    bad = _verdict(ev.table_row("T5", "v1 +both", "v1 baseline"), verdicts.CONTRADICTED)
    counts = X.tally(list(ev.summary))["all"]["ft"]
    if counts.get(verdicts.CONTRADICTED, 0) <= counts.get(verdicts.REPLICATED, 0):
        bad = (bad or "") + " more claims replicated than contradicted"
    return bad


def _capacity_open_or_costs(ev: Evidence) -> str | None:
    """The network sentence: every encoder decided so far, and the 56-px resolution point once decided, costs
    readout with FT from the first step."""
    bad = [f"{r['comparison']}: {r['verdict']}" for r in (*ev.capacity, ev.resolution)
           if r["n_seeds"] >= MIN_SEEDS and verdicts.side(r["verdict"]) >= 0]
    return "; ".join(bad) or None


def _capacity_decided(ev: Evidence) -> str | None:
    """The network bullet needs at least one larger encoder decided (3 paired seeds)."""
    return None if any(r["n_seeds"] >= MIN_SEEDS for r in ev.capacity[1:]) else "no larger encoder has 3 seeds"


CHECKS: dict[str, tuple[Check, ...]] = {
    # sentence id -> the checks that must hold for its words to stand
    "momentum": (_momentum_fall, _momentum_no_collapse, _momentum_rise_open),
    "headline": (_t5_headline,),
    "first step": (_first_step_costs, _capacity_open_or_costs),
    "network": (_capacity_open_or_costs,),
    "photographs": (_real_no_gain, _real_knn_costs),
    "mechanism": (_rho_below_band_first, _rho_above_band_late, _photos_as_concentrated),
    "late start": (_late_helps_sometimes, _late_avoids_most),
    "length": (_length_narrows_but_ratio_grows,),
    "longer run": (_longest_shrinks_in_points_not_errors,),
}


def expect(ev: Evidence, *sentences: str) -> None:
    """Raise :class:`FindingsDisagree` naming every sentence of ``sentences`` (all of :data:`CHECKS` when none is
    given) whose checks fail on ``ev``: the prose says something the stored verdicts no longer do."""
    failed = {}
    for sentence in sentences or tuple(CHECKS):
        if sentence not in CHECKS:
            raise KeyError(f"no checks for the sentence {sentence!r}; known: {', '.join(CHECKS)}")
        problems = [p for p in (check(ev) for check in CHECKS[sentence]) if p]
        if problems:
            failed[sentence] = "; ".join(problems)
    if failed:
        raise FindingsDisagree("the stored verdicts disagree with the book's findings; rewrite these sentences "
                               "(ftcl_core/study/findings.py and chapter 7's answer): "
                               + " | ".join(f"{s!r}: {p}" for s, p in failed.items()))


# --- the words -----------------------------------------------------------------------------------------------------

ABSTRACT = (
    "This book re-runs Zhu et al.'s feature transformations (FT) for MoCo at the scale of a laptop CPU: a small ResNet "
    "on procedurally drawn shapes and on Fashion-MNIST's photographs, every run stored with its config, seed and "
    "commit, every claim judged over 3 seeds against the paper's own effect size. The paper's tools and part of its "
    "momentum study reproduce; its headline does not: switched on at the first step, FT costs readout on the shapes "
    "under every single change of the recipe or the encoder tried at the recipe's length, and a start after 30 % of "
    "the run avoids most of that cost and helps in a few cases. Longer runs shrink that cost in points, yet at the "
    "longest tried FT still makes more test errors than its baseline; whether the paper's far longer ImageNet runs "
    "turn it into a gain is not decided here.")
ONLY_WHEN: dict[str, Check] = {"network": _capacity_decided}  # bullet -> None when its evidence exists

ABSTRACT_CHECKS = ("headline", "first step", "late start", "longer run")

# (sentence id, chapter and anchor of its figure, text with {fact} fields)
BULLETS = (
    ("headline", ("09_results", "forest-plot"),
     "**The headline is reversed at this scale.** On the shapes, MoCo v1 with both transformations from the first "
     "step reads {t5_v1_both} points against its baseline, where the paper reports {t5_v1_both_paper}. Of the "
     "paper's {claims} distinct claims tested: {claims_tally}; after the Benjamini-Hochberg correction: "
     "{claims_tally_bh}; {claims_scale}."),
    ("first step", ("07_when_ft_helps", "recipe-changes"),
     "**No single change of the recipe removes the cost.** Changing one thing at a time (the calibrated MoCo v1 or "
     "v2 recipe, Kaiming initialisation, no same-class negatives, 30 classes, one λ per shard of queries), FT from "
     "the first step still reads {first_least} to {first_most} points against its baseline on the shapes, in all "
     "{first_n} comparisons."),
    ("network", ("07_when_ft_helps", "is-it-the-network"),
     "**A larger encoder does not remove it either.** FT from the first step, each against its own encoder's "
     "baseline over 3 paired seeds: {capacity_decided}, where the recipe's {capacity_base}. Not decided "
     "yet: {capacity_open}."),
    ("photographs", ("07_when_ft_helps", "real-photographs"),
     "**On real photographs, FT from the first step costs too little to tell from zero.** On Fashion-MNIST (28-px "
     "greyscale) the pair reads {first_real} points at 10 epochs and {first_real_longer} at 30, where raw pixels "
     "already read {fm_pixels} %, a random-init encoder {fm_random} % and the baselines {fm_base_lo} to "
     "{fm_base_hi} %: little room for any effect. The kNN readout still loses ({knn_real}; {knn_real_longer})."),
    ("longer run", ("07_when_ft_helps", "training-length"),
     "**Longer runs shrink the cost in points, not in errors.** On the shapes, FT from the first step reads "
     "{short_cost} points against its baseline at {short_steps} steps, {long_cost} at {long_steps} and {longest_cost} "
     "at {longest_steps} ({longest_verdict}), and there it still gets {longest_ratio} times as many test images wrong "
     "as its baseline ({short_ratio} times at {short_steps} steps). The paper's Table 7 runs take {paper_steps} steps; "
     "whether such runs turn the cost into a gain is not decided here."),
    ("late start", ("07_when_ft_helps", "phase-diagram"),
     "**Switched on after 30 % of the run or later, FT avoids most of the cost and sometimes helps.** It helps in "
     "{helps} of the {cells} decided cells of the phase diagram, all late starts: {help_cells}. Its kNN readout "
     "loses in {knn_late_lose} of the {late_cells} late cells. At this budget and network: do not switch FT on from "
     "the first step."),
    ("momentum", ("05_momentum", "momentum-figure"),
     "**Momentum (Table 1).** The fall of readout from m = 0.99 to 0.999 ({t1_fall_999} points) and on to m = 1 "
     "({t1_fall_1}) replicates; the rise towards 0.99 is inconclusive at 3 seeds, and small momenta stall learning "
     "without the collapse the paper reports (m = 0 still reads {t1_m0} points above the random-init encoder)."),
)


def bullets(ev: Evidence, link: Callable[[str, str], str] | None = None) -> list[str]:
    """The findings as Markdown bullets, each linking to its figure (``link(chapter, anchor)`` gives the
    target; none: no links), after :func:`expect` has checked every sentence they rest on.  A bullet of
    :data:`ONLY_WHEN` is left out while its evidence does not exist yet (the network's, before a larger encoder
    has 3 paired seeds)."""
    shown = [b for b in BULLETS if b[0] not in ONLY_WHEN or ONLY_WHEN[b[0]](ev) is None]
    expect(ev, *(sentence for sentence, _, _ in shown))
    f = facts(ev)
    out = []
    for _, (chapter, anchor), text in shown:
        line = text.format(**f)
        out.append(f"- {line}" + (f" ([chapter {int(chapter[:2])}]({link(chapter, anchor)}))" if link else ""))
    return out


def abstract(ev: Evidence) -> str:
    """The three-sentence abstract, once the claims it rests on are checked."""
    expect(ev, *ABSTRACT_CHECKS)
    return ABSTRACT


def github_link(chapter: str, anchor: str) -> str:
    """A README link to a chapter's notebook (GitHub renders it; the anchor is the book's)."""
    return f"book/{chapter}.ipynb"


def book_link(chapter: str, anchor: str) -> str:
    """A link from a chapter's HTML output to the target ``anchor`` of ``chapter`` (MyST's ``(anchor)=`` labels
    become HTML ids of the same name)."""
    return f"{chapter}.html#{anchor}"


def index_link(chapter: str, anchor: str) -> str:
    """A link from the book's index (MyST Markdown, resolved by Sphinx, so a moved label fails the build)."""
    return f"#{anchor}"


FIGURE = "book/_static/phase_diagram.png"  # the one figure that says it, written by :func:`ftcl_core.pages.findings.write_figure`

MARKERS = ("<!-- findings: written by `python -m ftcl_core summary` from the stored runs (ftcl_core/study/findings.py); "
           "edit the code, not this block -->", "<!-- /findings -->")


def block(ev: Evidence, link: Callable[[str, str], str], figure: str) -> str:
    """The findings block of the README (``link`` = :func:`github_link`) and of the book's index
    (:func:`index_link`): the abstract, the bullets and the phase diagram, between :data:`MARKERS`."""
    return "\n".join([MARKERS[0], "", abstract(ev), "", *bullets(ev, link), "",
                      f"![FT minus the same run without FT, by when FT switches on]({figure})", "", FIGURE_CAPTION,
                      "", MARKERS[1]])


FIGURE_CAPTION = ("*The phase diagram: each cell is FT (+pos +neg, the paper's settings) minus the same run without FT, "
                  "linear readout, paired over 3 seeds, with its verdict against the paper's effect for that start; "
                  "rows are data set and length (and, at the bottom, larger encoders, undecided below 3 seeds), "
                  "columns when FT switches on; 'not run': a start not tried at that length.*")


def replace_block(text: str, new: str, name: str) -> str:
    """``text`` with its findings block (between :data:`MARKERS`) replaced by ``new``; ``name`` names the file in
    the error when it holds no block."""
    start = text.find(MARKERS[0])
    end = text.find(MARKERS[1], start) if start >= 0 else -1
    if end < 0:
        raise X.ConfigError(f"{name} has no findings block: put the two lines {MARKERS[0]!r} and {MARKERS[1]!r} where "
                            "the findings belong.")
    return text[:start] + new + text[end + len(MARKERS[1]):]


def phase_grid(ev: Evidence, knn: bool = False) -> tuple[list[str], list[float], np.ndarray, np.ndarray, list[list[str]]]:
    """The phase diagram's cells: row labels, start fractions, differences, intervals and verdicts (a cell with
    fewer than 3 seeds reads "undecided"), with the capacity rows (FT from the start at each larger encoder)."""
    grid = {**(ev.phase_knn if knn else ev.phase)}
    for row in (ev.capacity_knn if knn else ev.capacity)[1:]:  # the first encoder is the recipe's own row
        if row["n_seeds"]:  # an encoder without stored runs is the capacity section's, not an empty row here
            grid[f"shapes, 30 epochs, {row['comparison']}"] = {0.0: row}
    fractions = sorted({f for rows in grid.values() for f in rows})
    labels = list(grid)

    def cell(label: str, f: float, field: str):
        row = grid[label].get(f)
        if row is None or not row["n_seeds"]:
            return "" if field == "verdict" else math.nan
        if field == "verdict":
            return (verdicts.labelled(row["verdict"], row.get("scale", "")) if row["n_seeds"] >= MIN_SEEDS
                    else f"{row['n_seeds']} seed(s): undecided")
        return row[field]
    return (labels, fractions, np.array([[cell(lb, f, "diff") for f in fractions] for lb in labels]),
            np.array([[cell(lb, f, "ci95") for f in fractions] for lb in labels]),
            [[cell(lb, f, "verdict") for f in fractions] for lb in labels])


def write_blocks(ev: Evidence | None = None) -> list[Path]:
    """Rewrite the findings blocks of README.md and book/index.md from the stored runs (``python -m ftcl_core
    summary``, which also redraws the figure they show: :func:`ftcl_core.pages.findings.write_figure`); returns the
    files written."""
    ev = ev or Evidence.load("cpu")
    written = []
    for path, link, figure in ((X.ROOT / "README.md", github_link, FIGURE),
                               (X.ROOT / "book" / "index.md", index_link, FIGURE.removeprefix("book/"))):
        atomic_write_bytes(path, replace_block(path.read_text(), block(ev, link, figure), path.name).encode())
        written.append(path)
    return written
