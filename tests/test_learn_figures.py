"""The Learn chapters' figures keep what their pages say of them: the differences figure colours a line by its side
only (a cost, a gain, or an interval across zero); the temperature slider's title follows the slider; the figures
drawn at the column's width keep their text legible."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from ftcl_core.pages import learn as learn_figures  # noqa: E402
from ftcl_core.pages import legibility  # noqa: E402
from ftcl_core.study.toy import train_toy  # noqa: E402


def test_differences_figure_colours_each_line_by_its_side_and_marks_the_paper():
    facts = {"a_value": -5.0, "a_ci": 1.0, "a_seeds": "5", "b_value": 4.0, "b_ci": 1.0, "c_value": 1.0, "c_ci": 3.0,
             "paper": "+5.8"}
    fig = learn_figures.differences_figure({"cost": (facts, "a", "paper"), "gain": (facts, "b", None),
                                            "unclear": (facts, "c", None)})
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["costs", "gains", "too small to tell from zero",
                                                          "the paper's effect"]
    ax = fig.axes[0]
    top_down = [label.get_text() for _, label in sorted(zip(ax.get_yticks(), ax.get_yticklabels()), key=lambda t: -t[0])]
    assert top_down == ["cost (5 seeds)", "gain", "unclear"]  # in the order given, the first on top
    diamond = next(line for line in fig.axes[0].lines if line.get_marker() == "D")
    assert diamond.get_xdata()[0] == pytest.approx(5.8)
    assert legibility.smallest_text_px(fig) >= legibility.MIN_TEXT_PX
    plt.close(fig)


def test_differences_figure_refuses_a_missing_fact():
    with pytest.raises(KeyError, match="a_ci"):
        learn_figures.differences_figure({"cost": ({"a_value": -5.0}, "a", None)})


def test_the_temperature_sliders_title_follows_the_slider():
    runs = [train_toy(tau, steps=3) for tau in (0.1, 0.5)]
    fig = learn_figures.temperature_explorer(runs)
    for step, run in zip(fig.layout.sliders[0].steps, runs):
        layout_update = step.args[1]
        assert list(layout_update) == ["title.text"]  # a bare "title" string is dropped by plotly.js 3
        assert f"τ = {run.tau:g}" in layout_update["title.text"]


def test_the_learn_figures_at_the_column_width_keep_their_text_legible():
    run, collapsed = train_toy(0.2, steps=3), train_toy(0.2, steps=3, negatives=False)
    points = np.random.default_rng(0).standard_normal((60, 2))
    history = {"loss": list(np.linspace(0.1, 8, 20)), "found": list(np.linspace(0, 0.5, 20))}
    for fig in (learn_figures.toy_figure(points, np.arange(60) % 6, run, collapsed),
                learn_figures.moco_training_figure(history, 4096)):
        assert legibility.smallest_text_px(fig) >= legibility.MIN_TEXT_PX
        assert legibility.legend_overlaps_data(fig) == []
        plt.close(fig)


def test_the_temperature_slider_keeps_every_temperatures_curve_in_view_faint():
    runs = [train_toy(tau, steps=3) for tau in (0.1, 0.5, 1.0)]
    fig = learn_figures.temperature_explorer(runs)
    faint = [tr for tr in fig.data if tr.line.color == "#c9d3e3"]
    assert sorted(tr.name for tr in faint) == sorted(f"τ = {r.tau:g}" for r in runs)
    for step in fig.layout.sliders[0].steps:  # each slider position shows its run and keeps the faint curves
        visible = step.args[0]["visible"]
        assert len(visible) == len(fig.data)
        assert all(visible[i] for i, tr in enumerate(fig.data) if tr.line.color == "#c9d3e3")
