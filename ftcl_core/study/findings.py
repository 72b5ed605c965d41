"""What the book finds, as named numbers and verdicts: :func:`facts` and the checks of :data:`CHECKS`.

The findings are written once, by hand, in ``book/findings.md`` (the book's index includes it, chapter 1 links
there, ``tools/readme_findings.py`` copies it into the README) and in chapter 7's answer; this module writes no
sentence. Numbers enter that Markdown by myst-nb's ``glue`` from :func:`facts` (formatted once by
:mod:`ftcl_core.study.results.numbers`, so a number reads alike on every page), and every qualitative claim names the
check it rests on (``<!-- checks: name, ... -->``): each check of :data:`CHECKS` returns None while the stored
verdicts agree with the words, else what disagrees, and :func:`expect` raises :class:`FindingsDisagree` naming the
checks whose sentences to rewrite, which fails the book build and ``python -m ftcl_core summary``.

The evidence, the stored comparisons read once, is :class:`ftcl_core.study.evidence.Evidence`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from ftcl_core.study import diagnosis, headroom, readings, table_verdicts
from ftcl_core.study.checks import failures
from ftcl_core.study.evidence import (
    LATE_FROM,
    REAL_FIRST_STEP,
    SHAPES_FIRST_STEP,
    Evidence,
    FindingsDisagree,
    cell_key,
    diagram_rows,
)
from ftcl_core.study.results import verdicts
from ftcl_core.study.results.numbers import fixed, grouped, plus_minus
from ftcl_core.study.results.verdicts import MIN_SEEDS

LATE_GAIN = ("D-start-long-v1", "start 36")  # the phase diagram's shapes-120-epochs late cell, as diagnosis.csv names it
STATED_LATE_BH = verdicts.LARGER  # what the late-start bullet says that cell reads after BH


def _late_gain_row(ev: Evidence) -> dict | None:
    return next((r for r in ev.diagnosis if (r["table"], r["setting"]) == LATE_GAIN), None)


def _pm(row: Mapping, signed: bool = True) -> str:
    """A comparison's paired difference ± its 95 % interval, from a diagnosis row or a summary.csv row."""
    diff = row.get("diff", row.get("diff_mean"))
    ci = row.get("ci95") if "diff" in row else row.get("diff_ci95")
    return plus_minus(float(diff), float(ci) if ci not in (None, "") else math.nan, signed=signed)


TALLY_KEYS = {verdicts.MATCHES: "matches", verdicts.LARGER: "larger", verdicts.SMALLER: "smaller",
              verdicts.NO_EFFECT: "no_effect", verdicts.OPPOSITE: "opposite", verdicts.EQUIVALENT: "equivalent",
              verdicts.NOT_EQUIVALENT: "not_equivalent", verdicts.UNDECIDED: "undecided"}  # verdict -> its facts' name


def facts(ev: Evidence) -> dict[str, str]:
    """Every number the findings print, formatted once, by name: what chapter 7 glues (and the index pastes
    from it), and what ``tools/readme_findings.py`` fills into the README. Numbers only (and the digits of a
    count); the words around them are the Markdown's."""
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
    out["fm_pixels"], out["fm_random"] = fixed(ev.pixels), fixed(ev.random_init)
    fm_bases = _fm_baselines(ev)
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
        records = ev.records.get(diagnosis.FIRST_STEP_EXPERIMENTS[key], [])
        out[f"peak_base_{name}"] = fixed(diagnosis.representation_signature(records, "baseline")["peak_neg_mean"], 2)
    early = ev.phase.get("shapes, 30 epochs", {}).get(0.03)
    if early and early["n_seeds"]:
        out["start_3pc"], out["start_3pc_knn"] = _pm(early), _pm(ev.phase_knn["shapes, 30 epochs"][0.03])
    if late_states:
        rho = [st["rho_before"] for st in late_states if math.isfinite(st["rho_before"])]
        out["rho_late_lo"], out["rho_late_hi"] = fixed(min(rho), 2), fixed(max(rho), 2)
        out["rho_late_above"], out["rho_late_n"] = str(sum(r > ev.band[1] for r in rho)), str(len(rho))
        out["peak_late"] = fixed(max(st["peak_neg_mean_after"] for st in late_states), 2)
    for knn, grid in ((False, ev.phase), (True, ev.phase_knn)):  # every cell of the phase diagram, by name
        for label, rows in grid.items():
            for f, r in rows.items():
                if r["n_seeds"]:
                    out[cell_key(label, f, knn)] = _pm(r)
                if not knn and r["n_seeds"] and r.get("scale") == verdicts.ERRORS:  # FT's share of fewer test errors
                    for name, field in (("fewer_errors", "log_error_ratio"), ("paper_fewer_errors", "paper_log_error_ratio")):
                        out[f"{cell_key(label, f)}_{name}"] = fixed(100 * (1 - math.exp(r[field])), 0)
    if (late := _late_gain_row(ev)) is not None:  # the late gain after BH over the diagnosis's comparisons
        out["late_gain_bh"], out["late_gain_q"] = late["verdict_bh"], fixed(float(late["q_value"] or "nan"), 2)
    # the diagram's decided cells, every row it draws (the task with room's and the encoders' among them)
    cells = [(lb, f, r) for lb, rows in diagram_rows(ev).items() for f, r in rows.items() if r["n_seeds"] >= MIN_SEEDS]
    seeds = sorted({int(r["n_seeds"]) for _, _, r in cells})
    late_knn = ev.late_cells(knn=True)
    out["cells"], out["late_cells"] = str(len(cells)), str(len(ev.late_cells()))
    out["helps"] = str(sum(verdicts.side(r["verdict"]) > 0 for _, _, r in cells))
    out["cells_seeds"] = (f"{seeds[0]} to {seeds[-1]}" if seeds[0] != seeds[-1] else str(seeds[0])) if seeds else "0"
    knn_lose = [r for _, _, r in late_knn if verdicts.side(r["verdict"]) < 0]
    out["knn_late_lose"] = str(len(knn_lose))
    out["knn_late_lose_least"] = fixed(max((r["diff"] for r in knn_lose), default=math.nan), signed=True)
    out["knn_late_lose_most"] = fixed(min((r["diff"] for r in knn_lose), default=math.nan), signed=True)
    out["knn_late_gain"] = str(sum(verdicts.side(r["verdict"]) > 0 for _, _, r in late_knn))
    short, long, gain = _prose_lengths(ev)
    out.update(short_epochs=str(PROSE_LENGTHS[0]), long_epochs=str(PROSE_LENGTHS[1]))
    if short and long:
        out.update(short_steps=str(short["steps"]), long_steps=str(long["steps"]), short_cost=_pm(short),
                   long_cost=_pm(long), short_ratio=fixed(diagnosis.error_ratio(short)),
                   long_ratio=fixed(diagnosis.error_ratio(long)),
                   long_ft=fixed(long["ft"]), short_base=fixed(short["baseline"]))
    if gain:
        out["length_gain"] = _pm(gain)
    longest, longest_gain = _longest_length(ev)
    if longest:
        out.update(longest_epochs=str(longest["epochs"]), longest_steps=str(longest["steps"]),
                   longest_cost=_pm(longest), longest_ratio=fixed(diagnosis.error_ratio(longest)))
    if longest_gain:
        out["longest_gain"] = _pm(longest_gain)
    for r in ev.capacity:  # each encoder's pair, its parameters against the recipe's encoder, its paired seeds
        if r["n_seeds"]:
            out[f"capacity_{r['comparison']}"] = _pm(r)
        out[f"capacity_{r['comparison']}_x"] = f"{r['parameters'] / ev.capacity[0]['parameters']:.0f}"
        out[f"capacity_{r['comparison']}_seeds"] = str(r["n_seeds"])
    steps = diagnosis.PAPER_TABLE7_STEPS
    out["paper_steps_lo"], out["paper_steps_hi"] = (grouped(n) for n in (min(steps.values()),
                                                                                        max(steps.values())))
    v1 = ev.table_row("T7", "v1 +both", "v1 baseline")
    out["t7_v1_both"], out["t7_v1_both_paper"] = _pm(v1), fixed(float(v1["effect"]), 2, signed=True)
    for part in ("pos", "neg"):  # the components alone (Table 7's +pos and +neg rows)
        row = ev.table_row("T7", f"v1 +{part}", "v1 baseline")
        out[f"t7_v1_{part}"], out[f"t7_v1_{part}_paper"] = _pm(row), fixed(float(row["effect"]), 2, signed=True)
    for key in ("ref_pos", "arm_pos", "ref_neg", "arm_neg", "ref_margin", "arm_margin", "seeds"):  # the mechanism
        if key in (ev.undone or {}):
            out[f"undone_{key}"] = ev.undone[key]
    for key, setting, ref in (("t1_fall_999", "m=0.999", "m=0.99"), ("t1_fall_1", "m=1.0", "m=0.999"),
                              ("t1_m0", "m=0", "random init"), ("t1_rise_99", *LAST_RISE)):
        out[key] = _pm(ev.table_row("T1", setting, ref))
    out["t1_rise_99_paper"] = fixed(float(ev.table_row("T1", *LAST_RISE)["effect"]), 1, signed=True)
    counts = table_verdicts.tally(list(ev.summary))["all"]
    out["claims"] = str(sum(counts["ft"].values()))
    out["claims_on_errors"] = str(sum(counts["ft_errors"].values()))
    out["claims_unfit"] = str(sum(counts["unfit"].values()))  # against a baseline below the bar: left out
    for word, key in TALLY_KEYS.items():
        out[f"claims_{key}"], out[f"claims_bh_{key}"] = str(counts["ft"].get(word, 0)), str(counts["ft_bh"].get(word, 0))
    # the task with headroom (chapter 11), its map's comparisons under hr_<arm>_<length>_...
    room_facts = {**headroom.map_facts(list(ev.headroom)), **(ev.room or {}), **headroom.paper_facts()}
    out |= {f"hr_{k}": v for k, v in room_facts.items()
            if isinstance(v, str)}
    return out


def _fm_baselines(ev: Evidence) -> list[float]:
    """Fashion-MNIST's baseline readouts: the first-step pairs' baselines and Table 7's baseline rows."""
    return [ev.first_step[k]["baseline"] for k in REAL_FIRST_STEP] + [
        float(r["mean"]) for r in ev.summary if r["data"] == "fashion_mnist" and r["table"].startswith("T7")
        and r["verdict"] == verdicts.BASELINE]


def _late_states(ev: Evidence) -> list[dict]:
    """Where the runs stood when FT switched on, at every late start (:data:`LATE_FROM`) with stored runs."""
    return [st for rows in ev.switch.values() for f, st in rows.items() if f >= LATE_FROM and st["n_seeds"]]


# --- what the authored text states, item by item ------------------------------------------------------------------
# Where book/findings.md or chapter 7's answer names items (verdict words counted, encoders decided, cells where FT
# helps), its checks compare the stored runs with these; a change names the check, and the sentence, to rewrite.

# the verdicts the headline bullet counts (before and after BH); no others occur
STATED_TALLY = (verdicts.OPPOSITE, verdicts.MATCHES, verdicts.LARGER, verdicts.SMALLER, verdicts.NO_EFFECT,
                verdicts.UNDECIDED, verdicts.NOT_EQUIVALENT)
STATED_ENCODERS = {"resnet10_w32": "decided", "resnet18_w32": "decided", "resnet18_w64": "not run"}  # larger encoders
STATED_HELPS = {("shapes, 120 epochs", 0.3): (verdicts.LARGER, verdicts.ERRORS),  # the cells where FT helps
                ("Fashion-MNIST, 30 epochs", 0.3): (verdicts.SMALLER, verdicts.POINTS),  # (linear readout): verdict,
                ("Fashion-MNIST, 30 epochs", 0.8): (verdicts.SMALLER, verdicts.POINTS),  # scale that decided it
                ("task with room, 120 epochs", 0.3): (verdicts.SMALLER, verdicts.POINTS),
                ("task with room, 240 epochs", 0.3): (verdicts.MATCHES, verdicts.POINTS)}
STATED_KNN_GAINS = {("shapes, 120 epochs", 0.3)}  # the late cells where the kNN readout gains


# --- the checks: each named in the Markdown beside the words it guards -------------------------------------------

Check = Callable[[Evidence], "str | None"]  # None when the words hold, else what disagrees


def _verdict(row: Mapping, *words: str) -> str | None:
    if int(row["n_seeds"]) < MIN_SEEDS:
        return f"{row.get('comparison', row.get('setting'))}: {row['n_seeds']} seed(s), undecided"
    return None if row["verdict"] in words else f"{row.get('comparison', row.get('setting'))}: {row['verdict']}"


def _joined(problems) -> str | None:
    return "; ".join(p for p in problems if p) or None


def _headline_reversed(ev: Evidence) -> str | None:
    """T7's MoCo v1 +both reads opposite to the paper, and more of the paper's claims read opposite to it than
    on its side (matches, larger or smaller)."""
    bad = _verdict(ev.table_row("T7", "v1 +both", "v1 baseline"), verdicts.OPPOSITE)
    counts = table_verdicts.tally(list(ev.summary))["all"]["ft"]
    if counts.get(verdicts.OPPOSITE, 0) <= sum(counts.get(w, 0) for w in verdicts.SEEN):
        bad = (bad or "") + f" opposite {counts.get(verdicts.OPPOSITE, 0)} <= seen {sum(counts.get(w, 0) for w in verdicts.SEEN)}"
    return bad


def _positive_mixing_costs(ev: Evidence) -> str | None:
    """The mechanism: on the shapes, MoCo v1's positive extrapolation alone costs (its paired interval lies below
    zero) and negative interpolation alone cannot be told from zero (its interval holds zero)."""
    pos, neg = (ev.table_row("T7", f"v1 +{p}", "v1 baseline") for p in ("pos", "neg"))
    problems = []
    if float(pos["diff_mean"]) + float(pos["diff_ci95"]) >= 0:
        problems.append(f"v1 +pos's interval reaches zero ({_pm(pos)})")
    lo, hi = float(neg["diff_mean"]) - float(neg["diff_ci95"]), float(neg["diff_mean"]) + float(neg["diff_ci95"])
    if not lo <= 0 <= hi:
        problems.append(f"v1 +neg alone has an interval without zero ({_pm(neg)})")
    return _joined(problems)


def _encoder_undoes_harder_positive(ev: Evidence) -> str | None:
    """The mechanism under the cost (:func:`ftcl_core.study.readings.undone_positive_facts`, 3 or more seeds):
    with positive extrapolation alone an image's views end closer than without FT, and so do all images (higher
    raw Mean(neg), a smaller margin after FT), in every seed."""
    undone = ev.undone or {"n": 0}
    if undone["n"] < MIN_SEEDS:
        return f"{undone['n']} paired seed(s), undecided"
    return None if undone["undone"] and undone["crowded"] else f"undone {undone['undone']}, crowded {undone['crowded']}"


def _claims_tally_as_stated(ev: Evidence) -> str | None:
    """The verdicts the claims read, before and after BH, are those the headline bullet counts (:data:`STATED_TALLY`)."""
    counts = table_verdicts.tally(list(ev.summary))["all"]
    out = []
    for kind in ("ft", "ft_bh"):
        seen = {w for w, n in counts[kind].items() if n}
        out += [f"{kind}: {w} now occurs" for w in sorted(seen - set(STATED_TALLY))]
        out += [f"{kind}: no claim is {w}" for w in STATED_TALLY if w not in seen]
    return _joined(out)


def _claims_on_points(ev: Evidence) -> str | None:
    """No claim of the paper was decided on the error scale (no baseline near enough to 100 % to forbid its effect)."""
    n = sum(table_verdicts.tally(list(ev.summary))["all"]["ft_errors"].values())
    return f"{n} claim(s) decided on the error scale" if n else None


def _first_step_costs(ev: Evidence) -> str | None:
    return _joined(_verdict(ev.first_step[k], verdicts.OPPOSITE) for k in SHAPES_FIRST_STEP)


def _network_costs(ev: Evidence) -> str | None:
    """Every encoder decided so far, and the 56-px resolution point once decided, costs readout with FT from the
    first step."""
    return _joined(f"{r['comparison']}: {r['verdict']}" for r in (*ev.capacity, ev.resolution)
                   if r["n_seeds"] >= MIN_SEEDS and verdicts.side(r["verdict"]) >= 0)


def encoder_state(n_seeds: int) -> str:
    """A larger encoder's state as :data:`STATED_ENCODERS` names it: decided (3 paired seeds), undecided, not run."""
    return "decided" if n_seeds >= MIN_SEEDS else "undecided" if n_seeds else "not run"


def _encoders_as_stated(ev: Evidence) -> str | None:
    """The larger encoders stand as the network bullet says: decided, or not run (:data:`STATED_ENCODERS`)."""
    now = {r["comparison"]: encoder_state(r["n_seeds"]) for r in ev.capacity[1:]}
    return _joined(f"{name}: {now.get(name, 'absent')}, the text says {said}" for name, said in
                   {**dict.fromkeys(now, "nothing"), **STATED_ENCODERS}.items() if now.get(name, "absent") != said)


def _photos_no_gain(ev: Evidence) -> str | None:
    return _joined(f"{k}: {ev.first_step[k]['verdict']}" for k in REAL_FIRST_STEP
                   if verdicts.side(ev.first_step[k]["verdict"]) != 0 or ev.first_step[k]["n_seeds"] < MIN_SEEDS)


def _photos_knn_costs(ev: Evidence) -> str | None:
    return _joined(_verdict(ev.first_step_knn[k], verdicts.OPPOSITE) for k in REAL_FIRST_STEP)


def _photos_little_room(ev: Evidence) -> str | None:
    """"Little room": Fashion-MNIST's baselines read less above the raw-pixel probe than the paper's headline effect
    (Table 7, MoCo v1 +both)."""
    room, effect = max(_fm_baselines(ev)) - ev.pixels, float(ev.table_row("T7", "v1 +both", "v1 baseline")["effect"])
    return None if room < effect else f"room {room:.1f} >= effect {effect:.1f}"


def _rho_below_band_first(ev: Evidence) -> str | None:
    return _joined(f"{lb}: ρ {fixed(rows[0.0]['rho_before'], 2)}" for lb, rows in ev.switch.items()
                   if 0.0 in rows and rows[0.0]["n_seeds"] and not rows[0.0]["rho_before"] < ev.band[1])


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


def _photos_concentrate_as_far(ev: Evidence) -> str | None:
    shapes, photos = (float(fixed(p, 2)) for p in _first_step_peaks(ev))  # as printed, to 2 decimals
    return None if shapes - photos <= 0.05 else f"peaks: photos {photos:.2f}, shapes {shapes:.2f}"


def _late_helps_where_stated(ev: Evidence) -> str | None:
    """FT helps (linear readout) in exactly the decided cells of :data:`STATED_HELPS`, all late starts, each with the
    verdict and scale stated there."""
    helps = {(lb, f): (r["verdict"], r.get("scale", verdicts.POINTS)) for lb, rows in diagram_rows(ev).items()
             for f, r in rows.items() if r["n_seeds"] >= MIN_SEEDS and verdicts.side(r["verdict"]) > 0}
    return _joined(f"{lb} from {f:.0%}: {helps.get((lb, f), 'no help')}, the text says {STATED_HELPS.get((lb, f), 'no help')}"
                   for lb, f in sorted({*helps, *STATED_HELPS}) if helps.get((lb, f)) != STATED_HELPS.get((lb, f)))


def _late_gain_floor_sensitive(ev: Evidence) -> str | None:
    """The late gain's reading after Benjamini-Hochberg moves under a floor of half or twice the rule's (the text says
    it is sensitive to the error floor; results/diagnosis.csv's ``floor_sensitive``)."""
    row = _late_gain_row(ev)
    return None if row and row.get("floor_sensitive") == "yes" else f"{' '.join(LATE_GAIN)}: not sensitive to the floor"


def _late_gain_smaller_in_points(ev: Evidence) -> str | None:
    """The late gain on the shapes at 120 epochs (:data:`LATE_GAIN`) is smaller than the paper's in points and larger
    on the error scale, which decides it (the findings' example of how to read a verdict)."""
    row = _late_gain_row(ev)
    seen = row and (row.get("verdict_points"), row.get("verdict_errors"), row.get("scale"))
    wanted = (verdicts.SMALLER, verdicts.LARGER, verdicts.ERRORS)
    return None if seen == wanted else f"{' '.join(LATE_GAIN)}: (points, errors, scale) {seen}, the text says {wanted}"


def _late_gain_after_bh(ev: Evidence) -> str | None:
    """The late gain at 120 epochs reads :data:`STATED_LATE_BH` after Benjamini-Hochberg (results/diagnosis.csv)."""
    row = _late_gain_row(ev)
    word = row["verdict_bh"] if row else "no row"
    return None if word == STATED_LATE_BH else f"{' '.join(LATE_GAIN)} reads {word!r} after BH, the text says {STATED_LATE_BH!r}"


def _late_avoids_most(ev: Evidence) -> str | None:
    """A late start avoids most of the first step's cost: no late cell loses as much as half the first-step loss of
    its row (Table 6's epoch 1, at 3 % of the run, is the exception the prose names)."""
    bad = []
    for label, rows in ev.phase.items():
        first = rows.get(0.0)
        if not first or first["n_seeds"] < MIN_SEEDS or verdicts.side(first["verdict"]) >= 0:
            continue
        bad += [f"{label} from {f:.0%}: {fixed(r['diff'])}" for f, r in rows.items()
                if f >= LATE_FROM and r["n_seeds"] >= MIN_SEEDS and r["diff"] <= first["diff"] / 2]
    return _joined(bad)


def _epoch_one_too_early(ev: Evidence) -> str | None:
    """Table 6's epoch 1 (3 % of the run) still costs on the shapes' 30-epoch row."""
    cell = ev.phase.get("shapes, 30 epochs", {}).get(0.03)
    return _verdict(cell, verdicts.OPPOSITE) if cell else "no 3 % cell on the shapes"


def _knn_late_mixed(ev: Evidence) -> str | None:
    """The kNN readout loses in some late cells and gains in exactly those of :data:`STATED_KNN_GAINS`."""
    late = ev.late_cells(knn=True)
    gains = {(lb, f) for lb, f, r in late if verdicts.side(r["verdict"]) > 0}
    out = [] if any(verdicts.side(r["verdict"]) < 0 for _, _, r in late) else ["kNN loses in no late cell"]
    out += [f"kNN gains {lb} from {f:.0%}: {(lb, f) in gains}, the text says {(lb, f) in STATED_KNN_GAINS}"
            for lb, f in sorted(gains ^ STATED_KNN_GAINS)]
    return _joined(out)


def _headroom_knn_late_follows(ev: Evidence) -> str | None:
    """On the task with room, the kNN readout of +pos +neg from 30 % lies on the linear readout's side at every
    stored length."""
    f = headroom.map_facts(list(ev.headroom))
    out = [f"{n} epochs: kNN {f[f'both_late_{n}_knn_word']}, linear {f[f'both_late_{n}_word']}"
           for n in headroom.LENGTHS if f[f"both_late_{n}_seeds"]
           and verdicts.side(f[f"both_late_{n}_knn_word"]) != verdicts.side(f[f"both_late_{n}_word"])]
    return _joined(out) if any(f[f"both_late_{n}_seeds"] for n in headroom.LENGTHS) else "no stored length"


PROSE_LENGTHS = (30, 120)  # epochs: the two lengths chapter 7's length paragraph speaks of ("four times")


def _prose_lengths(ev: Evidence) -> tuple[dict | None, dict | None, dict | None]:
    """The rows the length paragraph rests on, each only with 3 seeds: the pair at the shorter and at the longer of
    :data:`PROSE_LENGTHS`, and FT's gain at the longer against the shorter. A still longer length has its own
    sentences and checks (:func:`_longest_length`), so its landing cannot falsify these words."""
    short, long = PROSE_LENGTHS
    return _decided_length(ev, "length", short), _decided_length(ev, "length", long), _decided_length(ev, "gain", long)


def _decided_length(ev: Evidence, kind: str, epochs: int) -> dict | None:
    """The :func:`diagnosis.length_rows` row of ``kind`` ("length" or "gain") at ``epochs``, only with 3 paired
    seeds."""
    return next((r for r in ev.length if r["kind"] == kind and r["epochs"] == epochs and r["n_seeds"] >= MIN_SEEDS),
                None)


def _length_narrows_not_damage(ev: Evidence) -> str | None:
    short, long, gain = _prose_lengths(ev)
    if not (short and long and gain):
        return f"the {PROSE_LENGTHS[0]}- and {PROSE_LENGTHS[1]}-epoch pairs lack 3 seeds"
    problems = [] if verdicts.side(gain["verdict"]) > 0 else [f"gain: {gain['verdict']}"]
    problems += [] if verdicts.side(long["verdict"]) < 0 else [f"longer run: {long['verdict']}"]
    problems += [] if diagnosis.error_ratio(long) > diagnosis.error_ratio(short) else ["FT's relative error rate does not grow"]
    problems += [] if long["ft"] < short["baseline"] else ["FT at the longer length reaches the shorter baseline"]
    return _joined(problems)


def _longest_length(ev: Evidence) -> tuple[dict | None, dict | None]:
    """The longest length past :data:`PROSE_LENGTHS` with 3 paired seeds, and FT's gain there against the shortest
    length (None, None while no such length is decided): the rows the longer-run sentences rest on."""
    rows = [r for r in ev.length if r["kind"] == "length" and r["epochs"] > PROSE_LENGTHS[1]
            and r["n_seeds"] >= MIN_SEEDS]
    if not rows:
        return None, None
    longest = max(rows, key=lambda r: r["epochs"])
    return longest, _decided_length(ev, "gain", longest["epochs"])


def _longest_shrinks_points_not_errors(ev: Evidence) -> str | None:
    """At the longest length tried, FT's first-step cost in points is narrower than at the shortest (the gain's
    verdict), yet FT still costs (a verdict on the side against the paper, on the scale that decided) and gets at
    least as many times its baseline's test errors as at the shortest length."""
    longest, gain = _longest_length(ev)
    short = _decided_length(ev, "length", PROSE_LENGTHS[0])
    if not (longest and gain and short):
        return f"no length past {PROSE_LENGTHS[1]} epochs has 3 paired seeds"
    problems = [] if verdicts.side(gain["verdict"]) > 0 else [f"gain against the shortest: {gain['verdict']}"]
    problems += [] if verdicts.side(longest["verdict"]) < 0 else [f"longest run: {longest['verdict']}"]
    problems += [] if diagnosis.error_ratio(longest) >= diagnosis.error_ratio(short) else [
        "FT's share of its baseline's errors shrinks with length"]
    return _joined(problems)


def _longest_opposite_on_errors(ev: Evidence) -> str | None:
    """The longest decided pair reads "contradicted on the error scale", as the text labels it."""
    longest, _ = _longest_length(ev)
    if not longest:
        return f"no length past {PROSE_LENGTHS[1]} epochs has 3 paired seeds"
    said = (longest["verdict"], longest.get("scale"))
    return None if said == (verdicts.OPPOSITE, verdicts.ERRORS) else f"longest run: {said[0]} on {said[1]}"


def _longest_fewer_errors_than_long(ev: Evidence) -> str | None:
    """At the longest length FT's error ratio is below the one at the longer of :data:`PROSE_LENGTHS` ("fewer than
    the ... times")."""
    longest, _ = _longest_length(ev)
    long = _decided_length(ev, "length", PROSE_LENGTHS[1])
    if not (longest and long):
        return f"no length past {PROSE_LENGTHS[1]} epochs has 3 paired seeds"
    ratio, before = diagnosis.error_ratio(longest), diagnosis.error_ratio(long)
    return None if ratio < before else f"error ratio {ratio:.1f} at the longest, {before:.1f} at {PROSE_LENGTHS[1]} epochs"


def _paper_runs_longer(ev: Evidence) -> str | None:
    """The paper's Table 6 runs take more steps than the longest run here (so whether length turns the cost into a
    gain is not decided here)."""
    longest = max((r["steps"] for r in ev.length if r["kind"] == "length" and r["n_seeds"]), default=0)
    fewest = min(diagnosis.PAPER_TABLE7_STEPS.values())
    return None if longest < fewest else f"a run here takes {longest} steps, the paper's {fewest}"


STATED_FALLS = {("m=0.999", "m=0.99"): (verdicts.LARGER,), ("m=1.0", "m=0.999"): (verdicts.MATCHES,)}  # Table 1's fall


def _momentum_falls(ev: Evidence) -> str | None:
    return _joined(_verdict(ev.table_row("T1", s, r), *want)
                   for (s, r), want in STATED_FALLS.items())


def _momentum_no_collapse(ev: Evidence) -> str | None:
    return _verdict(ev.table_row("T1", "m=0", "random init"), verdicts.OPPOSITE)


LAST_RISE = ("m=0.99", "m=0.9")  # Table 1's last step up, to the peak


def _momentum_last_rise_matches(ev: Evidence) -> str | None:
    return _verdict(ev.table_row("T1", *LAST_RISE), verdicts.MATCHES)


def _momentum_lower_rise_undecided(ev: Evidence) -> str | None:
    """Every step up of Table 1 below the last one reads undecided."""
    rows = [r for r in ev.summary if r["table"] == "T1" and r["reference"].startswith("m=") and r.get("effect")
            and float(r["effect"]) > 0 and (r["setting"], r["reference"]) != LAST_RISE]
    bad = [f"{r['setting']} vs {r['reference']}: {r['verdict']}" for r in rows if r["verdict"] != verdicts.UNDECIDED]
    return "; ".join(bad) or (None if rows else "no step up below the last in T1")


def _length_short_pair_on_gpu(ev: Evidence) -> str | None:
    """The length series' shortest pair trained on a GPU only, so it is another pair than Table 7's CPU runs of the
    same config (the findings give both numbers and say so)."""
    short = next((r for r in ev.length if r["kind"] == "length" and r["epochs"] == min(PROSE_LENGTHS)), None)
    devices = list(short.get("devices", [])) if short else []
    on_gpu = bool(devices) and all(d.split("/")[0] == "cuda" for d in devices)
    return None if on_gpu else f"the shortest length pair ran on {devices or 'nothing stored'}"


def _headroom(*names: str) -> Check:
    """Chapter 11's checks of ``names`` (:data:`ftcl_core.study.headroom.CHECKS`) on the evidence's map (and its
    facts from its runs, :data:`Evidence.room`: none stored reads as no seeds)."""
    def check(ev: Evidence) -> str | None:
        room = ev.room or {**headroom.crowding_facts({}), **headroom.gap_facts([])}
        facts = {**headroom.map_facts(list(ev.headroom)), **room}
        return _joined(list(failures(headroom.CHECKS, facts, *names).values()))
    return check


CHECKS: dict[str, Check] = {
    # name (as the Markdown's <!-- checks: ... --> comments cite it) -> the check
    "headline-reversed": _headline_reversed,
    "positive-mixing-costs": _positive_mixing_costs,
    "encoder-undoes-harder-positive": _encoder_undoes_harder_positive,
    "claims-tally-as-stated": _claims_tally_as_stated,
    "unfit-baselines-as-named": lambda ev: readings.CLAIM_CHECKS["the baselines below the bar are those named"](
        readings.unfit_facts(list(ev.summary))),
    "claims-on-points": _claims_on_points,
    "first-step-costs": _first_step_costs,
    "network-costs": _network_costs,
    "encoders-as-stated": _encoders_as_stated,
    "photos-no-gain": _photos_no_gain,
    "photos-knn-costs": _photos_knn_costs,
    "photos-little-room": _photos_little_room,
    "rho-below-band-first": _rho_below_band_first,
    "rho-above-band-late": _rho_above_band_late,
    "photos-concentrate-as-far": _photos_concentrate_as_far,
    "late-helps-where-stated": _late_helps_where_stated,
    "late-avoids-most": _late_avoids_most,
    "late-gain-after-bh": _late_gain_after_bh,
    "late-gain-smaller-in-points": _late_gain_smaller_in_points,
    "late-gain-sensitive-to-the-floor": _late_gain_floor_sensitive,
    "epoch-one-too-early": _epoch_one_too_early,
    "knn-late-mixed": _knn_late_mixed,
    "headroom-knn-late-follows-linear": _headroom_knn_late_follows,
    "length-narrows-not-damage": _length_narrows_not_damage,
    "longest-shrinks-points-not-errors": _longest_shrinks_points_not_errors,
    "longest-opposite-on-errors": _longest_opposite_on_errors,
    "longest-fewer-errors-than-long": _longest_fewer_errors_than_long,
    "paper-runs-longer": _paper_runs_longer,
    "momentum-falls": _momentum_falls,
    "momentum-no-collapse": _momentum_no_collapse,
    "momentum-last-rise-matches": _momentum_last_rise_matches,
    "momentum-lower-rise-undecided": _momentum_lower_rise_undecided,
    "length-short-pair-on-gpu": _length_short_pair_on_gpu,
    "headroom-costs-at-30": _headroom("first-step-costs-at-30", "late-start-costs-at-30",
                                      "late-positive-alone-costs-at-30", "positive-mixing-carries-the-late-cost"),
    "headroom-first-step-costs-at-120": _headroom("first-step-costs-at-120"),
    "headroom-late-gains-at-120": _headroom("late-start-gains-at-120"),
    "headroom-late-smaller-at-120": _headroom("late-start-smaller-at-120"),
    "headroom-negatives-not-the-papers-size-at-120": _headroom("negatives-alone-not-the-papers-size-at-120"),
    "headroom-positive-alone-gains-at-120": _headroom("late-positive-alone-gains-at-120"),
    "headroom-late-gains-at-240": _headroom("late-start-gains-at-240"),
    "headroom-late-matches-at-240": _headroom("late-start-matches-at-240"),
    "headroom-crowding-confounded-with-the-clock": _headroom("crowding-confounded-with-the-clock"),
    "headroom-late-larger-on-errors-at-240": _headroom("late-start-larger-on-errors-at-240"),
    "headroom-first-step-costs-at-240": _headroom("first-step-costs-at-240"),
    "headroom-positive-alone-gains-at-240": _headroom("late-positive-alone-gains-at-240"),
    "headroom-negatives-add-at-240": _headroom("negatives-add-to-the-late-gain-at-240"),
    "headroom-negatives-not-the-papers-size-at-240": _headroom("negatives-alone-not-the-papers-size-at-240"),
    "headroom-crowding-goes-with-the-cost": _headroom("crowding-goes-with-the-cost"),
    "headroom-crowding-fades": _headroom("first-step-crowding-fades-at-120"),
    "headroom-switch-costs-without-crowding": _headroom("switch-from-18-of-120-costs", "switch-from-18-of-120-does-not-crowd"),
}


def expect(ev: Evidence, *names: str) -> None:
    """Raise :class:`FindingsDisagree` naming every check of ``names`` (all of :data:`CHECKS` when none is given)
    that fails on ``ev``: the Markdown bound to it says something the stored verdicts no longer do."""
    failed = failures(CHECKS, ev, *names)
    if failed:
        raise FindingsDisagree("the stored verdicts disagree with the findings; rewrite the sentences bound to these "
                               "checks (<!-- checks: ... --> in book/findings.md and chapter 7's answer): "
                               + " | ".join(f"{s!r}: {p}" for s, p in failed.items()))


