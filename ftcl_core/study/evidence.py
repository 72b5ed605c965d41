"""The stored comparisons the findings rest on (:class:`Evidence`), read once from the committed runs, and the phase
diagram's cells drawn from them (:func:`phase_grid`); :mod:`ftcl_core.study.findings` turns them into named numbers
and the checks that bind the findings' words.

The evidence is the committed runs of the ``cpu`` profile (``results/cpu``, :data:`ftcl_core.study.experiment_file.STORED`),
read by :meth:`Evidence.load`; nothing here trains, except on the ``smoke`` profile, where chapter 7 trains the
tiny versions of its pairs.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ftcl_core.study import diagnosis, experiment_file, gradient_algebra, headroom, readings, store, switch_time, table_verdicts
from ftcl_core.study.results import verdicts
from ftcl_core.study.results.verdicts import MIN_SEEDS

SHAPES_FIRST_STEP = ("recipe", "recipe v2", "init", "oracle", "classes", "shards")  # one change each, on the shapes
REAL_FIRST_STEP = ("real", "real, longer")  # Fashion-MNIST at 10 and 30 epochs
LONG_LABEL = "shapes, 120 epochs"  # the phase diagram's row whose first-step cell is D-length-long-v1's pair
LATE_FROM = 0.3  # a late start: FT switched on after 30 % of the run or later (Table 6's epoch 1, at 3 %, is not one)


T5_V1 = "experiments/table7_ft_v1.yaml"  # Table 7 for MoCo v1: its +pos and baseline runs show the mechanism


class FindingsDisagree(AssertionError):
    """A sentence of the findings no longer matches the stored verdicts it rests on."""


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
    headroom: tuple[dict, ...] = ()  # results/headroom.csv's rows (cpu): the map on the task with headroom
    diagnosis: tuple[dict, ...] = ()  # results/diagnosis.csv's rows (cpu): the diagnosis comparisons after BH
    undone: Mapping | None = None  # the mechanism: Table 7's v1 +pos against its baseline, X.undone_positive_facts
    room: Mapping | None = None  # the map's facts from its runs: headroom.crowding_facts, gap_facts, switch_time.facts (cpu)

    @classmethod
    def load(cls, profile: str = "cpu", root: str | Path | None = None, summary: str | Path | None = None) -> Evidence:
        """The evidence of ``profile``'s runs (``root``: where they are; the committed ones by default for
        ``cpu``). On ``smoke`` the tiny pairs are trained first (:func:`diagnosis.chapter_records`).

        One number for one quantity: FT from the first step at 120 epochs is D-length-long-v1's pair, whose two
        arms trained on one device per seed, also in the phase diagram (D-start-long-v1's "start 0" and "never"
        are the same configs and seeds, with "never" retrained on the CPU against a "start 0" from the GPU)."""
        root = root or (experiment_file.STORED if profile == "cpu" else None)
        smoke = profile == "smoke"  # the tiny runs CI trains: a few settings, seed 0
        phase, knn, switch, loaded = {}, {}, {}, {}
        for label, path in diagnosis.START_EXPERIMENTS.items():
            settings = diagnosis.smoke_settings(path) if smoke else None
            records = loaded[path] = diagnosis.chapter_records(path, profile, settings, root)
            phase[label] = diagnosis.start_fraction_rows(path, records, profile)
            knn[label] = diagnosis.start_fraction_rows(path, records, profile, "knn_top1")
            switch[label] = {f: diagnosis.switch_on_state(records, row["comparison"]) for f, row in phase[label].items()}
        first, first_knn, real = {}, {}, []
        for name, path in diagnosis.FIRST_STEP_EXPERIMENTS.items():
            records = loaded[path] = diagnosis.chapter_records(path, profile, ["baseline", "+both"] if smoke else None, root)
            stated = diagnosis.stated_claim(path, "+both", "baseline")
            label = diagnosis.FIRST_STEP_NAMES[name]
            first[name] = diagnosis.paired_comparison(label, records, "baseline", "+both", claim=stated)
            first_knn[name] = diagnosis.paired_comparison(label, records, "baseline", "+both", "knn_top1", stated)
            real += records if name in REAL_FIRST_STEP else []
        path = diagnosis.LENGTH_EXPERIMENTS["the shapes"]
        records = loaded[path] = diagnosis.chapter_records(path, profile, ["baseline 30", "+both 30"] if smoke else None, root)
        length = diagnosis.length_rows(path, records, profile)
        length_knn = diagnosis.length_rows(path, records, profile, "knn_top1")
        for rows, grid in ((length, phase), (length_knn, knn)):
            long = next((r for r in rows if r["kind"] == "length" and r["epochs"] == 120), None)
            if long and long["n_seeds"] and 0.0 in grid.get(LONG_LABEL, {}):
                grid[LONG_LABEL][0.0] = {**long, "comparison": grid[LONG_LABEL][0.0]["comparison"]}
        mean = (lambda key: float(np.mean([r[key] for r in real if key in r])) if any(key in r for r in real)  # noqa: E731
                else math.nan)
        t5 = store.load_records(T5_V1, profile, root) if not smoke else []  # chapter 6's Table 7 runs, never trained here
        undone = readings.undone_positive_records(t5)
        room_runs = store.load_records(headroom.MAP, profile, root) if profile == "cpu" else None
        room = ({**headroom.crowding_facts(headroom.run_metrics(room_runs)), **headroom.gap_facts(room_runs),
                 **switch_time.facts(room_runs, store.load_records(switch_time.SWITCH, profile, root))}
                if room_runs is not None else None)
        return cls(phase, knn, switch, first, first_knn, tuple(length), tuple(diagnosis.capacity_rows(profile, root=root)),
                   tuple(diagnosis.capacity_rows(profile, "knn_top1", root=root)), diagnosis.resolution_row(profile, root=root),
                   mean("raw_pixels_linear_top1"), mean("random_init_linear_top1"), tuple(summary_rows(summary, profile)),
                   gradient_algebra.threshold_band(), loaded, tuple(_stored_rows(diagnosis.HEADROOM_CSV, profile) or ()),
                   tuple(_stored_rows(experiment_file.ROOT / "results" / "diagnosis.csv", profile) or ()), undone, room)

    def table_row(self, table: str, setting: str, reference: str) -> dict:
        """The results/summary.csv row of ``setting`` against ``reference`` in ``table`` (e.g. "T7", "v1 +both",
        "v1 baseline"); a clear error when the summary holds none."""
        for r in self.summary:
            if r["table"] == table and r["setting"] == setting and r["reference"] == reference:
                return r
        raise FindingsDisagree(f"results/summary.csv has no row {table} {setting!r} against {reference!r}: a finding "
                               "names a comparison the tables no longer make; rewrite it (book/findings.md, chapter 7's answer).")

    def late_cells(self, knn: bool = False) -> list[tuple[str, float, dict]]:
        """The phase diagram's decided cells with a late start (FT switched on at :data:`LATE_FROM` of the run or
        later)."""
        grid = self.phase_knn if knn else self.phase
        return [(label, f, r) for label, rows in grid.items() for f, r in sorted(rows.items())
                if f >= LATE_FROM and r["n_seeds"] >= MIN_SEEDS]


def _stored_rows(target: Path, profile: str) -> list[dict] | None:
    """The rows of a results CSV that ``summary`` writes from the committed runs (kept fresh by the tests); None but
    on ``cpu``, or where the file is missing."""
    if profile != "cpu" or not target.is_file():
        return None
    with open(target) as fh:
        return list(csv.DictReader(fh))


def summary_rows(path: str | Path | None = None, profile: str = "cpu") -> list[dict]:
    """The rows of results/summary.csv (or ``path``) as stored, else summarised from the stored runs."""
    rows = _stored_rows(Path(path) if path else experiment_file.ROOT / "results" / "summary.csv", profile)
    return rows if rows is not None else table_verdicts.summary_rows(profile)


def slug(label: str) -> str:
    """A phase-diagram row's name in :func:`facts`: ``shapes, 120 epochs`` -> ``shapes_120``, ``Fashion-MNIST, 30
    epochs`` -> ``fmnist_30``."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower().replace("fashion-mnist", "fmnist").replace(" epochs", "")).strip("_")


def cell_key(label: str, f: float, knn: bool = False) -> str:
    """The name of a phase-diagram cell's paired difference in :func:`facts`: ``phase_shapes_120_30`` for FT from
    30 % of the shapes' 120-epoch run (``phase_knn_...``: the kNN readout)."""
    return f"phase_{'knn_' if knn else ''}{slug(label)}_{round(100 * f)}"


FIGURE = "book/_static/phase_diagram.png"  # the phase diagram the README and the book's index show


def room_rows(ev: Evidence, knn: bool = False) -> dict[str, dict[float, dict]]:
    """Chapter 11's map (``ev.headroom``, results/headroom.csv) as phase-diagram rows, one per length with a stored
    pair: ``"task with room, <n> epochs"`` -> {0.0: +pos +neg from the first step, 0.3: from 30 % of the run}, each cell with
    the fields :func:`phase_grid` reads (``diff``, ``ci95``, ``verdict``, ``scale``, ``n_seeds``; the kNN readout's
    with ``knn``)."""
    by_setting = {r["setting"]: r for r in ev.headroom}
    prefix = "knn_" if knn else ""
    out: dict[str, dict[float, dict]] = {}
    for length in headroom.LENGTHS:
        cells = {}
        for fraction, arm in ((0.0, "both"), (0.3, "both_late")):
            r = by_setting.get(headroom.setting(arm, length))
            if r and r["n_seeds"] not in ("", "0", 0):
                cells[fraction] = {"diff": float(r[f"{prefix}diff_mean"] or "nan"),
                                   "ci95": float(r[f"{prefix}diff_ci95"] or "nan"),
                                   "verdict": r[f"{prefix}verdict"], "scale": "" if knn else r.get("scale", ""),
                                   "n_seeds": int(r["n_seeds"])}
        if cells:
            out[f"task with room, {length} epochs"] = cells
    return out


def diagram_rows(ev: Evidence, knn: bool = False) -> dict[str, dict[float, dict]]:
    """Every row the phase diagram draws, ``{row label: {start fraction: comparison row}}``: the data-and-length rows,
    chapter 11's map on the task with room, and the capacity rows (FT from the start at each larger encoder)."""
    grid = {**(ev.phase_knn if knn else ev.phase), **room_rows(ev, knn)}
    for row in (ev.capacity_knn if knn else ev.capacity)[1:]:  # the first encoder is the recipe's own row
        if row["n_seeds"]:  # an encoder without stored runs is the capacity section's, not an empty row here
            grid[f"shapes, 30 epochs, {diagnosis.encoder_label(row['comparison'])}"] = {0.0: row}
    return grid


def phase_grid(ev: Evidence, knn: bool = False) -> tuple[list[str], list[float], np.ndarray, np.ndarray, list[list[str]]]:
    """The phase diagram's cells: row labels, start fractions, differences, intervals and verdicts (a cell with
    fewer than 3 seeds reads "undecided"), with the rows of chapter 11's map on the task with room (FT from the start
    and from 30 % of each length stored) and the capacity rows (FT from the start at each larger encoder)."""
    grid = diagram_rows(ev, knn)
    fractions = sorted({f for rows in grid.values() for f in rows})
    labels = list(grid)

    def cell(label: str, f: float, field: str):
        row = grid[label].get(f)
        if row is None or not row["n_seeds"]:
            return "" if field == "verdict" else math.nan
        if field == "verdict":
            return (verdicts.row_label(row) if row["n_seeds"] >= MIN_SEEDS
                    else f"{row['n_seeds']} seed(s): undecided")
        return row[field]
    return (labels, fractions, np.array([[cell(lb, f, "diff") for f in fractions] for lb in labels]),
            np.array([[cell(lb, f, "ci95") for f in fractions] for lb in labels]),
            [[cell(lb, f, "verdict") for f in fractions] for lb in labels])
