"""Every matplotlib figure of the pages (``ftcl_core.pages.run_figures``, ``result_figures``, ``diagrams``) as the
book shows it: text at least 11 px tall in the page's column at its narrowest (:func:`legibility.smallest_text_px` at
:data:`legibility.NARROWEST_COLUMN_PX`: font size in pt x dpi / 72 x displayed width / PNG width) and no legend on
plotted data (:func:`legibility.legend_overlaps_data`).

Each figure is built from small fake inputs shaped like the stored runs' (ten momenta, 69 claims of the summary,
the seven-by-five phase diagram), at the size the chapter calls it with; the checks themselves are shown to fail
on a figure made to fail them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from ftcl_core.pages import diagrams, legibility, result_figures, run_figures  # noqa: E402
from ftcl_core.study import experiment_file  # noqa: E402

RNG = np.random.default_rng(0)


def fake_metrics(steps: int = 240, steps_per_epoch: int = 8, seed: int = 0) -> dict[str, np.ndarray]:
    """A run's per-step statistics, as :meth:`RunDir.load_metrics` returns them (noisy curves in [-1, 1])."""
    rng = np.random.default_rng(seed)
    step = np.arange(steps)
    t = step / steps
    m = {"step": step, "epoch": step // steps_per_epoch}
    for prefix in ("", "ft_"):
        m[prefix + "pos_mean"] = 0.9 - 0.3 * t + 0.05 * rng.standard_normal(steps)
        m[prefix + "neg_mean"] = 0.5 * np.exp(-3 * t) * (1 + seed / 10) + 0.05 * rng.standard_normal(steps)
        m[prefix + "neg_var"] = 0.02 + 0.05 * t + 0.005 * rng.standard_normal(steps)
    return m


def fake_summary(exp: experiment_file.Experiment, pixels: bool = False) -> dict[str, dict[str, float]]:
    """:func:`table_verdicts.summarize` of an experiment with every setting stored (readouts near the top of the axis,
    where a legend inside the frame would sit on them)."""
    out = {}
    for i, s in enumerate(exp.settings):
        out[s] = {"mean": 88.0 - 3 * (i % 4), "ci95": 2.5, "random_init_mean": 21.0}
        if pixels:
            out[s]["raw_pixels_mean"] = 70.0
    return out


def fake_forest_rows(n_claims: int = 69) -> list[dict[str, str]]:
    """Rows of ``results/summary.csv``: per table a baseline row and claims against it, every verdict word."""
    tables = {"T1": 16, "T1-fmnist": 9, "T2": 4, "T4": 4, "T3": 2, "T7": 16, "T7-fmnist": 8, "T5": 4, "T6": 8,
              "S-F": 9, "S-G": 3}
    verdicts = list(result_figures.VERDICT_COLORS)
    rows, k = [], 0
    for table, n in tables.items():
        data = "fashion_mnist" if table.endswith("fmnist") else "shapes"
        rows.append({"table": table, "data": data, "setting": "baseline", "reference": "", "verdict": "baseline",
                     "diff_mean": "", "diff_ci95": "", "paper": "71.1"})
        for i in range(n):
            if k == n_claims:
                break
            rows.append({"table": table, "data": data, "setting": f"setting {i} of {table}", "reference": "baseline",
                         "verdict": verdicts[k % len(verdicts)], "diff_mean": f"{RNG.normal(-5, 15):.3f}",
                         "diff_ci95": f"{abs(RNG.normal(3, 1)):.3f}", "paper": "collapse" if table == "T1" else "73.0"})
            k += 1
    return rows


def phase_inputs(n_rows: int = 7, n_cols: int = 5):
    """Chapter 7's phase diagram: four lengths and three encoders against five starts, one cell not run."""
    rows = ["shapes, 30 epochs", "shapes, 120 epochs", "Fashion-MNIST, 10 epochs", "Fashion-MNIST, 30 epochs",
            "shapes, 30 epochs, resnet10_w32", "shapes, 30 epochs, resnet18_w32", "shapes, 30 epochs, resnet18_w64"]
    cols = ["FT from the start", "FT from 3% of the run", "FT from 30% of the run", "FT from 50% of the run",
            "FT from 80% of the run"][:n_cols]
    diff = RNG.normal(-5, 12, size=(n_rows, n_cols))
    diff[0, 0], diff[1, 1], diff[-1, -1] = -42.4, 0.6, np.nan
    ci = np.abs(RNG.normal(2, 1, size=diff.shape))
    words = ["opposite to the paper", "no effect of the paper's size", "2 seed(s): undecided", "undecided",
             "larger than the paper"]
    verdicts = [[words[(i + j) % len(words)] for j in range(n_cols)] for i in range(n_rows)]
    return rows[:n_rows], cols, diff, ci, verdicts


def capacity_rows() -> list[dict]:
    """:func:`diagnosis.capacity_rows` for the four encoders, the largest without stored runs."""
    out = []
    for name, params, base, ft in (("resnet10_w16", 0.3e6, 92.0, 40.0), ("resnet10_w32", 1.2e6, 92.2, 40.1),
                                   ("resnet18_w32", 2.8e6, 93.0, 55.0), ("resnet18_w64", 11.2e6, np.nan, np.nan)):
        out.append({"comparison": name, "parameters": params, "baseline": base, "ft": ft, "baseline_ci95": 1.0,
                    "ft_ci95": 5.0, "baseline_erank": 40.0, "ft_erank": 3.0})
    return out


def predictor_report() -> dict:
    """``results/predictor.json``: 60 held-out predictions over both data sets and the fitted model's weights."""
    features = ["peak Mean(neg)", "Mean(neg) at the end", "effective rank, end / switch", "rho at the end",
                "Mean(pos) at the end", "slope of Mean(neg), 2nd half"]
    ex = [{"data": ("shapes", "fashion_mnist")[i % 2], "diff": float(RNG.normal(-10, 15)),
           "p_loss_held_out": float(RNG.uniform(0, 1))} for i in range(60)]
    return {"examples": ex, "features": features, "model": {"sign_weights": [0.1, 1.2, -0.4, 0.8, -1.1, 0.3, 0.05]}}


def landscape(n_epochs: int = 30, n_layers: int = 12) -> np.ndarray:
    """A per-epoch, per-layer gradient norm array (:meth:`RunDir.load_grad_norms`'s ``per_epoch``)."""
    return np.abs(RNG.normal(1, 0.3, size=(n_epochs, n_layers))) * np.linspace(2, 0.5, n_epochs)[:, None]


def chapter_score_statistics_with_title():
    """Chapter 10: the score statistics of one method, titled by the chapter with ``plt.suptitle``."""
    fig = run_figures.score_statistics(TABLE5, columns=("pos_mean", "neg_mean", "neg_var"))
    plt.suptitle("SimCLR", y=1.02)
    return fig


LAYERS = ["backbone.stem.0", "backbone.stem.1", *(f"backbone.layers.{i}.{part}" for i in range(4) for part in (
    "conv1", "bn1", "conv2", "bn2", "shortcut.0", "shortcut.1"))][:24] + ["head.0", "head.2"]
MOMENTA = {f"m={m}": fake_metrics(seed=i) for i, m in enumerate((0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 0.999, 1.0))}
TABLE5 = {s: fake_metrics(seed=i) for i, s in enumerate(("v1 baseline", "v1 +pos", "v1 +neg", "v1 +both",
                                                         "v1 +both_dim"))}
EXPERIMENT = {name: experiment_file.Experiment.load(f"experiments/{name}.yaml") for name in (
    "table1_momentum", "table1_momentum_fmnist", "table7_ft_v1", "supp_f_renorm", "supp_g_negatives",
    "table2_alpha_ex", "table5_queue", "table7_simclr", "supp_e_byol", "table7_simsiam", "table7_swav")}
CHAPTER6_GRID = ["table2_alpha_ex", "supp_f_renorm", "supp_g_negatives", "table5_queue", "table7_ft_v1"]
CHAPTER10_GRID = ["table7_simclr", "supp_e_byol", "table7_simsiam", "table7_swav"]

# name -> the figure (or figures) as its chapter draws it
BOOK_FIGURES: dict[str, Callable[[], object]] = {
    "score_statistics, one run (ch 2, 4)": lambda: run_figures.score_statistics({"MoCo v2": MOMENTA["m=0.99"]}),
    "score_statistics, ten momenta (ch 5)": lambda: run_figures.score_statistics(MOMENTA),
    "score_statistics, titled by the chapter (ch 10)": chapter_score_statistics_with_title,
    "score_statistics, ten momenta, four highlighted (ch 5)": lambda: run_figures.score_statistics(
        MOMENTA, highlight=["m=0", "m=0.5", "m=0.99", "m=1.0"], others="the other momenta"),
    "score_trajectory_3d, ten momenta (ch 5)": lambda: run_figures.score_trajectory_3d(
        MOMENTA, highlight=["m=0", "m=0.5", "m=0.99", "m=1.0"], others="the other momenta"),
    "grad_heatmap (ch 4)": lambda: run_figures.grad_heatmap(landscape(n_layers=26), LAYERS, title="MoCo v2, query encoder"),
    "grad_norm_epochs, five momenta (ch 5)": lambda: run_figures.grad_norm_epochs(
        {f"m={m}": landscape() for m in (0, 0.5, 0.9, 0.99, 1.0)}),
    "grad_norm_epochs, baseline and +both (ch 6)": lambda: run_figures.grad_norm_epochs(
        {"v1 baseline": landscape(), "v1 +both": landscape()}),
    "score_bound (ch 3)": lambda: diagrams.score_bound(),
    "ft_geometry (ch 3)": lambda: diagrams.ft_geometry(),
    "moco_pipeline (ch 1)": lambda: diagrams.moco_pipeline(),
    "experiment_bars, ten momenta (ch 5)": lambda: result_figures.experiment_bars(
        EXPERIMENT["table1_momentum"], fake_summary(EXPERIMENT["table1_momentum"])),
    "experiment_bars, Fashion-MNIST with pixels (ch 5)": lambda: result_figures.experiment_bars(
        EXPERIMENT["table1_momentum_fmnist"], fake_summary(EXPERIMENT["table1_momentum_fmnist"], pixels=True)),
    "experiment_bars, no run yet": lambda: result_figures.experiment_bars(EXPERIMENT["table7_ft_v1"], {}),
    "experiment_grid, the other tables (ch 6)": lambda: result_figures.experiment_grid(
        [(EXPERIMENT[n], fake_summary(EXPERIMENT[n], pixels=n == "table5_queue")) for n in CHAPTER6_GRID]),
    "experiment_grid, the methods (ch 10)": lambda: result_figures.experiment_grid(
        [(EXPERIMENT[n], fake_summary(EXPERIMENT[n])) for n in CHAPTER10_GRID],
        titles=[EXPERIMENT[n].title.split(":")[0] for n in CHAPTER10_GRID]),
    "readout_by_length (ch 7)": lambda: result_figures.readout_by_length(
        [1170, 4680, 9360], {"baseline": [[80, 78, 77], [97, 96, 97], []], "FT (+pos +neg)": [[34, 38, 36],
                                                                                           [72, 81, 77], []]},
        random_init=21.0, title="Shapes, calibrated MoCo v1: linear top-1 against the length of the run"),
    "verdict_forests, a few tables a figure (ch 9)": lambda: result_figures.verdict_forests(fake_forest_rows()),
    "difference_grid, 2 x 2 (ch 7)": lambda: result_figures.difference_grid(
        ["MoCo v1", "MoCo v2"], ["original recipe", "calibrated recipe"], np.array([[-30.2, -3.1], [0.4, np.nan]]),
        np.array([[3.0, 1.2], [0.8, np.nan]]), [["opposite to the paper", "no effect of the paper's size"],
                                                 ["undecided", ""]],
        title="FT (+pos +neg) minus its baseline, by method and recipe"),
    "difference_grid, phase diagram 7 x 5 (ch 7)": lambda: result_figures.difference_grid(
        *phase_inputs(), title="MoCo v1: FT minus the same run without FT (linear top-1, points)"),
    "capacity_figure (ch 7)": lambda: result_figures.capacity_figure(capacity_rows()),
    "predictor_figure (ch 7)": lambda: result_figures.predictor_figure(predictor_report()),
}


@pytest.fixture(autouse=True)
def _close_figures():
    """Every figure a test opens is closed after it (the pyplot interface keeps them otherwise)."""
    yield
    plt.close("all")


def figures_of(name: str) -> list:
    """The figures ``BOOK_FIGURES[name]`` draws (one, or a list)."""
    out = BOOK_FIGURES[name]()
    return list(out) if isinstance(out, list) else [out]


@pytest.mark.parametrize("name", list(BOOK_FIGURES))
def test_figure_text_is_11_px_or_more_and_no_legend_covers_data(name):
    figs = figures_of(name)
    for fig in figs:
        sizes = legibility.text_sizes_px(fig, legibility.NARROWEST_COLUMN_PX)
        assert sizes, "no text measured: the check would pass on anything"
        px, text = min(sizes)
        column = legibility.NARROWEST_COLUMN_PX
        assert px >= legibility.MIN_TEXT_PX, f"{text!r} is {px:.1f} px tall in the book's {column}-px column"
        assert legibility.legend_overlaps_data(fig) == []


def test_the_overlap_check_reports_a_legend_placed_on_data():
    fig, (ax, axb) = plt.subplots(1, 2, figsize=(7, 3))
    ax.plot([0, 1], [0, 1], label="diagonal")
    ax.legend(loc="center")  # right on the line's middle
    axb.bar([0, 1, 2], [95, 90, 97], label="bars")
    axb.set_ylim(0, 100)
    axb.legend(loc="upper left")  # the old accuracy_bars placement: on the bars that reach the top
    found = legibility.legend_overlaps_data(fig)
    assert any("axes 0" in f and "Line2D 'diagonal'" in f for f in found)
    assert any("Rectangle" in f and "axes 1" in f for f in found)
    ax.get_legend().remove()
    axb.get_legend().remove()
    axb.legend(loc="upper left", bbox_to_anchor=(1.02, 1))  # beside the axes: clear
    assert legibility.legend_overlaps_data(fig) == []
    scatter_fig, sax = plt.subplots()
    sax.scatter([0.5], [0.5], label="one point")
    sax.legend(loc="center")
    assert any("PathCollection" in f for f in legibility.legend_overlaps_data(scatter_fig))


def test_text_size_is_what_the_page_shows():
    small, ax = plt.subplots(figsize=(5, 3))
    ax.set_title("ten points", fontsize=10)
    ax.tick_params(labelsize=10)
    assert legibility.smallest_text_px(small) == pytest.approx(10 * 100 / 72)  # narrower than the column: its own size
    wide, ax = plt.subplots(figsize=(20, 3))
    ax.tick_params(labelsize=10)
    width = legibility.rendered_width_px(wide)
    assert 1500 < width < 2020  # the tight box: the axes and their labels, not the empty margins
    assert legibility.smallest_text_px(wide) == pytest.approx(10 * 100 / 72 * legibility.BOOK_COLUMN_PX / width)  # scaled down
    assert legibility.smallest_text_px(wide, column_px=4000) == pytest.approx(10 * 100 / 72)
    ax.set_xticks([0.5], ["a tick"])
    ax.tick_params(labelsize=5)
    assert legibility.smallest_text_px(wide) < 5 * 100 / 72


def test_the_phase_diagram_cells_are_legible():
    (fig,) = figures_of("difference_grid, phase diagram 7 x 5 (ch 7)")
    cells = [t for t in fig.axes[0].texts if "±" in t.get_text()]
    assert cells and all(t.get_fontsize() * fig.dpi / 72 >= legibility.MIN_TEXT_PX for t in cells)


def test_the_forest_splits_by_table_and_keeps_every_claim():
    rows = fake_forest_rows()
    claims = [r for r in rows if r["verdict"] != "baseline"]
    figs = result_figures.verdict_forests(rows)
    assert len(figs) > 1
    drawn = []
    for fig, group in zip(figs, result_figures.forest_groups(rows)):
        ax = fig.axes[0]
        labels = [t.get_text() for t in ax.get_yticklabels()]
        drawn += labels
        assert len(labels) <= 20 or len(group) == 1
        assert fig.get_figheight() * fig.dpi <= 700  # under a screen
        assert ax.get_title() == ", ".join(group)
    assert len(drawn) == len(claims)
    data = {r["table"]: r["data"] for r in rows}
    assert all(len({data[t] for t in group}) == 1 for group in result_figures.forest_groups(rows))  # one data set a figure
    t5 = result_figures.verdict_forest(rows, table="T7")
    assert len(t5.axes[0].get_yticklabels()) == sum(r["table"] == "T7" for r in claims)
    everything = result_figures.verdict_forest(rows)  # the old call: every claim in one figure, still drawn
    assert len(everything.axes[0].get_yticklabels()) == len(claims)
    assert legibility.legend_overlaps_data(everything) == []


def test_the_grid_of_tables_has_one_legend_outside_its_panels():
    (fig,) = figures_of("experiment_grid, the other tables (ch 6)")
    assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in fig.axes)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "raw pixels (linear)" in labels and len(labels) == len(set(labels))
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_ylabel() != "paper top-1 (%)"]
    assert len(panels) == len(CHAPTER6_GRID)
    (methods,) = figures_of("experiment_grid, the methods (ch 10)")  # BYOL's numbers are ImageNet-1K's
    assert "paper (ImageNet-100, ImageNet-1K)" in [t.get_text() for t in methods.legends[0].get_texts()]


def test_chapter_sevens_own_figures_read_at_page_width():
    """The contraction test and the early-training figure: text of at least 11 px, legends off the data."""
    from ftcl_core.study import gradient_algebra

    rhos = np.linspace(-0.5, 1.0, 7)
    lams = (1.0, 1.5, 2.0)
    rates = {lam: rhos - gradient_algebra.attraction_threshold(lam) for lam in lams}
    steps = np.arange(200)
    runs = {f"v1 {arm}": {"step": steps, "rho": np.linspace(0, 0.8, 200) * (0.5 if arm == "+both" else 1),
                          "neg_mean": np.linspace(0, 0.9 if arm == "+both" else 0.3, 200)} for arm in ("baseline", "+both")}
    for fig in (run_figures.contraction_figure(rhos, rates, {lam: gradient_algebra.attraction_threshold(lam) for lam in lams}),
                run_figures.early_training(runs, (0.13, 0.56))):
        assert legibility.smallest_text_px(fig, legibility.NARROWEST_COLUMN_PX) >= legibility.MIN_TEXT_PX
        assert legibility.legend_overlaps_data(fig) == []
        plt.close(fig)


def test_a_table_shows_its_verdict_second_and_a_note_row_across_the_table():
    from ftcl_core.pages.markup import html_table

    html = html_table(["setting", "ours", "seeds", "verdict"],
                      [["+pos", "33.8 ± 2.6", "3", "opposite to the paper"], ["+neg", "skipped: no GPU", "", ""]]).data
    assert "<th>setting</th><th>verdict</th><th>ours</th><th>seeds</th>" in html  # only the display: CSVs keep theirs
    assert "<td>+pos</td><td>opposite to the paper</td><td>33.8\u00a0±\u00a02.6</td>" in html  # a number never splits at ±
    assert '<td>+neg</td><td colspan="3">skipped: no GPU</td>' in html  # not one narrow column a screen tall


def test_the_phase_diagram_cells_are_11_px_at_the_narrowest_column():
    (fig,) = figures_of("difference_grid, phase diagram 7 x 5 (ch 7)")
    scale = min(1.0, legibility.NARROWEST_COLUMN_PX / legibility.rendered_width_px(fig))
    cells = [t for t in fig.axes[0].texts if t.get_text().strip()]
    assert cells and min(t.get_fontsize() * fig.dpi / 72 * scale for t in cells) >= legibility.MIN_TEXT_PX


def test_a_highlighted_figure_draws_one_run_in_colour_and_the_rest_grey():
    fig = run_figures.score_statistics(MOMENTA, highlight=["m=0", "m=0.99", "not a run"], others="the other momenta")
    assert len(fig.axes) == 2 * 3  # a row per highlighted run that exists, a column per statistic
    for ax in fig.axes:
        colours = [line.get_color() for line in ax.lines]
        assert len(colours) == len(MOMENTA) and colours.count(run_figures.GREY) == len(MOMENTA) - 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["the other momenta"]
    grads = run_figures.grad_norm_epochs({f"m={m}": landscape() for m in (0, 0.5, 0.9, 0.99, 1.0)})
    drawn = [ax for ax in grads.axes if ax.get_visible()]
    assert len(drawn) == 5 and all(sum(line.get_color() != run_figures.GREY for line in ax.lines) == 1 for ax in drawn)


def test_the_readout_axis_is_zoomed_to_the_data_and_its_references():
    exp = EXPERIMENT["table1_momentum_fmnist"]
    summary = {s: {"mean": 84.0 + 0.2 * i, "ci95": 0.8, "random_init_mean": 77.6, "raw_pixels_mean": 80.3}
               for i, s in enumerate(exp.settings)}
    fig = result_figures.experiment_bars(exp, summary)
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert 70 < lo < 77.6 and 85 < hi < 92  # not 0-100: readouts a point apart stay apart
    refs = sorted(line.get_ydata()[0] for line in ax.lines if line.get_linestyle() in ("--", ":"))
    assert refs == pytest.approx([77.6, 80.3])  # the random-init encoder and the raw pixels drawn as lines
    paper_axes = [a for a in fig.axes if a.get_ylabel() == "paper top-1 (%)"]
    assert len(paper_axes) == 1  # the paper's ImageNet numbers on an axis of their own
    marks = np.asarray(paper_axes[0].lines[0].get_ydata(), dtype=float)
    plo, phi = paper_axes[0].get_ylim()
    assert plo <= np.nanmin(marks) and np.nanmax(marks) <= phi
    assert result_figures._zoomed([]) == (0.0, 100.0) and result_figures._zoomed([50.0]) == (48.0, 52.0)


def test_the_chapters_draw_no_3d_gradient_landscape():
    """The landscapes are read at page width: flat (grad_heatmap) or summed over the layers (grad_norm_epochs)."""
    from pathlib import Path

    sources = (Path(__file__).resolve().parent.parent / "book" / "src").glob("*.py")
    assert not [p.name for p in sources if "grad_landscape(" in p.read_text() or "projection=\"3d\"" in p.read_text()]


def test_each_verdict_is_told_apart_by_marker_and_fill_as_well_as_colour():
    styles = {v: (result_figures.VERDICT_MARKERS[v], result_figures.VERDICT_COLORS[v]) for v in result_figures.VERDICT_COLORS}
    assert set(result_figures.VERDICT_MARKERS) == set(result_figures.VERDICT_COLORS)
    assert len({m for m, _ in styles.values()}) == len(styles)  # no two verdicts share marker and fill
    fig = result_figures.verdict_forest(fake_forest_rows(), table="T7")
    legend = fig.legends[0] if fig.legends else fig.axes[0].get_legend()
    shown = {h.get_label(): (h.get_marker(), h.get_markerfacecolor()) for h in legend.legend_handles}
    assert shown["matches the paper"][0] == shown["smaller than the paper"][0] and shown["smaller than the paper"][1] == "white"


def test_the_bound_explorer_opens_at_the_papers_alpha_ex():
    """Its slider opens at alpha = 2.0 (eq. 3's alpha_ex), not at the queue's 1.6, and shows that alpha's traces."""
    from ftcl_core.pages.explorers import bound_explorer

    fig = bound_explorer()
    slider = fig.layout.sliders[0]
    assert slider.steps[slider.active].label == "2.0"
    shown = {t.name for t in fig.data if t.visible is True}
    assert "α=2.0" in shown and not any(n.startswith("α=") and n != "α=2.0" for n in shown)
    with pytest.raises(ValueError, match="start"):
        bound_explorer(start=3.0)


def test_the_lambda_explorer_draws_a_lambda_below_one_apart():
    """FT draws a positive's λ in [1, 2] (eq. 4's extrapolation); a λ below 1 interpolates, an easier pair: the
    explorer draws it grey and dashed, the draws of FT solid, and each step shows one curve."""
    from ftcl_core.pages.explorers import lambda_explorer

    fig = lambda_explorer(lams=(0.5, 1.0, 1.5))
    curves = {t.name: t.line for t in fig.data if t.name and t.name.startswith("Ŝ at λ")}
    below = [line for name, line in curves.items() if "λ=0.5" in name]
    inside = [line for name, line in curves.items() if "λ=0.5" not in name]
    assert len(below) == 1 and below[0].dash == "dash" and all(line.dash is None for line in inside)
    assert len({line.color for line in inside}) == 1 and below[0].color not in {line.color for line in inside}
    for step in fig.layout.sliders[0].steps:
        assert sum(step.args[0]["visible"][3:]) == 1


def test_the_gradient_landscape_names_each_row_by_what_the_layer_is():
    """Every parameterised layer of the library's small ResNets and MoCo's MLP head gets a name that says conv, BN
    or linear as its module is, and its block; rows change group exactly where the block changes."""
    import torch.nn as nn

    from ftcl_core.models import build_encoder
    from ftcl_core.stats import layer_names

    model = nn.Module()
    model.backbone = build_encoder("resnet10_w32")
    model.head = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    modules = dict(model.named_modules())
    kinds = {nn.Conv2d: "conv", nn.BatchNorm2d: "BN", nn.Linear: "linear"}
    names = layer_names(model)
    labels = [run_figures.layer_label(n) for n in names]
    for name, (label, group) in zip(names, labels):
        kind = next(k for cls, k in kinds.items() if isinstance(modules[name], cls))
        assert kind in label.split() and label.startswith(group), (name, label)
    assert len({label for label, _ in labels}) == len(labels)  # no two rows read alike
    assert [g for g, _ in itertools.groupby(group for _, group in labels)] == ["stem", "block 1", "block 2", "block 3",
                                                                               "block 4", "head"]
    assert run_figures.layer_label("layer1.0.downsample.1") == ("layer1.0.downsample.1",) * 2
