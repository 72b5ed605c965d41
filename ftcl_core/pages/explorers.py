"""The book's interactive figures: the explorers that respond in a static page (plotly sliders and menus, no kernel
needed: eq. 4's score bound and its lambda, every stored run's score statistics) and the ipywidgets versions a live
kernel builds (:func:`live_widget`)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from html import escape
from math import lgamma

import numpy as np

from ftcl_core.pages.run_figures import STAT_LABELS, fractional_epoch, grad_landscape, score_statistics
from ftcl_core.study import experiment_file, store
from ftcl_core.study.curves import smooth
from ftcl_core.transforms import score_range, transformed_positive_score


def beta_density(x: np.ndarray, a: float) -> np.ndarray:
    """Beta(a, a) density on (0, 1)."""
    x = np.clip(x, 1e-6, 1 - 1e-6)
    log_b = 2 * lgamma(a) - lgamma(2 * a)
    return np.exp((a - 1) * (np.log(x) + np.log1p(-x)) - log_b)


def transformed_score_density(s: float, a: float, grid: np.ndarray) -> np.ndarray:
    """Density of S' = S + 2 l (1 - l)(1 - S) (eq. 4) for l ~ Beta(a, a) + 1, on ``grid``.

    With u = l - 1 in (0, 1): S' = S - 2 u (1 + u)(1 - S), monotone in u, so the density is the Beta
    density at the inverse, divided by |dS'/du| = 2 (1 + 2u)(1 - S).
    """
    if s >= 1:
        return np.zeros_like(grid)
    c = (s - grid) / (2 * (1 - s))  # u^2 + u - c = 0
    u = (-1 + np.sqrt(np.maximum(1 + 4 * c, 0))) / 2
    inside = (c > 0) & (u < 1)
    dens = np.zeros_like(grid, dtype=float)
    dens[inside] = beta_density(u[inside], a) / (2 * (1 + 2 * u[inside]) * (1 - s))
    return dens


def bound_explorer(alphas=(0.2, 0.6, 1.0, 1.6, 2.0, 4.0), scores=(0.9, 0.6, 0.3, 0.0), start: float = 2.0):
    """Plotly figure with an alpha slider: Beta(a, a) + 1 density of lambda (left) and the density of the
    transformed positive score S' for several S (right), eq. 4 with its range [-4 + 5S, S] shaded. The slider
    opens at ``start`` (the paper's alpha_ex, 2.0), one of ``alphas``."""
    if start not in alphas:
        raise ValueError(f"start={start} is not one of the slider's alphas {alphas}")
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    lam = np.linspace(1.001, 1.999, 300)
    grid = np.linspace(-4, 1, 600)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("λ ~ Beta(α, α) + 1", "density of Ŝ (eq. 4)"))
    n_traces = 1 + len(scores)
    for a in alphas:
        visible = a == start
        fig.add_trace(go.Scatter(x=lam, y=beta_density(lam - 1, a), name=f"α={a}", visible=visible,
                                 line=dict(color="#4c72b0"), showlegend=False), 1, 1)  # the slider names α
        for s in scores:
            fig.add_trace(go.Scatter(x=grid, y=transformed_score_density(s, a, grid), name=f"S={s}",
                                     visible=visible), 1, 2)
    steps = []
    for i, a in enumerate(alphas):
        vis = [False] * (n_traces * len(alphas))
        vis[i * n_traces : (i + 1) * n_traces] = [True] * n_traces
        steps.append(dict(method="update", args=[{"visible": vis}], label=str(a)))
    fig.update_layout(sliders=[dict(active=alphas.index(start), currentvalue={"prefix": "α = "}, steps=steps, pad={"t": 50})],
                      height=370, margin=dict(t=36, b=10, r=130),  # room for the legend's names: S=0.9
                      legend=dict(x=1.02, y=1, yanchor="top", title=dict(text="raw score")))  # clear of the slider
    fig.update_xaxes(title_text="λ", row=1, col=1)
    fig.update_xaxes(title_text="Ŝ", row=1, col=2)
    fig.update_yaxes(title_text="density", row=1, col=1)
    fig.update_yaxes(title_text="density", row=1, col=2)
    return fig


def lambda_explorer(lams: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(21))):
    """Plotly figure with a lambda slider: S' against S (eq. 4) with the extrapolation range shaded and the diagonal
    S' = S (below it a harder pair, above it an easier one); a λ below 1, which FT never draws for a positive
    (it interpolates: an easier pair), is drawn grey and dashed and says so in the legend."""
    import plotly.graph_objects as go

    s = np.linspace(-1, 1, 201)
    lo, hi = score_range(s)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=s, y=s, name="Ŝ = S (no change)", line=dict(color="grey", dash="dot", width=1)))
    fig.add_trace(go.Scatter(x=s, y=hi, line=dict(width=0), showlegend=False, hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=s, y=lo, fill="tonexty", line=dict(width=0), name="range for λ in [1, 2]",
                             hoverinfo="skip"))
    for i, lam in enumerate(lams):  # λ < 1 interpolates (an easier pair): drawn dashed, outside FT's draws
        inside = lam >= 1
        fig.add_trace(go.Scatter(x=s, y=transformed_positive_score(s, lam), visible=i == len(lams) * 3 // 4,
                                 name=f"Ŝ at λ={lam}" if inside else f"Ŝ at λ={lam}: below 1, not a draw of FT",
                                 line=dict(color="#1f77b4" if inside else "#8c8c8c", dash=None if inside else "dash")))
    steps = []
    for i, lam in enumerate(lams):
        vis = [True, True, True] + [j == i for j in range(len(lams))]  # the diagonal and the range stay
        steps.append(dict(method="update", args=[{"visible": vis}], label=str(lam)))
    fig.update_layout(sliders=[dict(active=len(lams) * 3 // 4, currentvalue={"prefix": "λ = "}, steps=steps)],
                      xaxis_title="S = z_q · z_k", yaxis_title="Ŝ", height=310, margin=dict(t=20, b=10),
                      yaxis_range=[-9.2, 1.2],  # the legend inside, lower right (no curve there): the plot keeps
                      legend=dict(x=0.99, y=0.03, xanchor="right", yanchor="bottom"))  # its width as names change
    return fig


def runs_explorer(runs: Mapping[str, Mapping[str, np.ndarray]], groups: Mapping[str, list[tuple[str, str]]] | None = None,
                  window: int = 10, points: int = 300, include_js: bool = True):
    """The static-HTML run explorer: Mean(pos), Mean(neg), Var(neg) of one run against the fractional epoch, raw
    cosines (solid) and after FT (dotted), chosen with two menus, a table or experiment and then one of its settings.

    ``runs`` maps a run label (``T6/start_9/seed0``) to its metrics; ``groups`` maps a menu entry to its
    ``(run label, setting name)`` pairs (:func:`run_groups`: one entry per experiment file), by default one entry
    holding every run.  Plotly's own menus cannot depend on one another, so the menus are HTML ``<select>``
    elements and a short script (:data:`RUNS_EXPLORER_JS`) swaps the chosen run's curves into the figure: the
    page needs no kernel.  Each smoothed curve keeps ``points`` evenly spaced steps, stored as 16-bit steps of its
    own range (:func:`_pack`, a 65535th of the range: finer than a pixel), so the cpu profile's 170 settings
    weigh about 1 MB beside plotly.js's 5.  Returns an IPython HTML object; embed plotly.js once per page
    (``include_js``)."""

    import plotly.graph_objects as go
    from IPython.display import HTML
    from plotly.subplots import make_subplots

    cols = ("pos_mean", "neg_mean", "neg_var")
    menu = {g: [(k, name) for k, name in rows if k in runs]
            for g, rows in (groups if groups is not None else {"every run": [(k, k) for k in runs]}).items()}
    menu = {g: rows for g, rows in menu.items() if rows}
    if not menu:
        raise ValueError("runs_explorer: no run of `runs` is in `groups`")

    def curves(m: Mapping[str, np.ndarray]) -> list[list]:
        x = fractional_epoch(m)
        keep = np.unique(np.linspace(0, len(x) - 1, min(points, len(x))).round().astype(int))
        out = [_pack(x[keep])]
        for c in cols:  # the trace order: raw then after FT, panel by panel
            out += [_pack(smooth(m[c], window)[keep]), _pack(smooth(m["ft_" + c], window)[keep])]
        return out

    packed = {k: curves(runs[k]) for rows in menu.values() for k, _ in rows}
    first = next(iter(menu.values()))[0][0]
    shown = [_unpack(a) for a in packed[first]]  # the first run, as the script would show it
    fig = make_subplots(rows=1, cols=3, subplot_titles=[STAT_LABELS[c] for c in cols], horizontal_spacing=0.11)
    styles = (("raw cosines (solid)", dict(color="#4c72b0", width=2)),
              ("after FT (dotted; on the solid line where a run has FT off)", dict(color="#dd8452", width=2, dash="dot")))
    for j in range(len(cols)):
        for k, (name, line) in enumerate(styles):
            fig.add_trace(go.Scatter(x=shown[0], y=shown[1 + 2 * j + k], name=name, legendgroup=name,
                                     showlegend=j == 0, line=line, mode="lines",
                                     hovertemplate="%{y:.4g}<extra>" + ("raw" if k == 0 else "after FT") + "</extra>"), 1, j + 1)
    fig.update_layout(height=430, font=dict(size=12), margin=dict(t=40, b=40, l=64, r=12), hovermode="x",
                      legend=dict(orientation="h", x=0, xanchor="left", y=-0.2, yanchor="top", font=dict(size=12)))
    # tick labels kept off the panel's corner: a y label at the bottom edge never meets the first x label
    fig.update_xaxes(title_text="epoch", title_standoff=6, nticks=5, ticklabelstandoff=8)
    fig.update_yaxes(nticks=6, ticklabelstandoff=4)
    for j, title in enumerate(("mean cosine", "mean cosine", "variance of the cosines")):
        fig.update_yaxes(title_text=title, title_standoff=4, row=1, col=j + 1)
    fig.update_annotations(font_size=14)  # the panel titles
    uid = "ftcl-runs-" + hashlib.sha1(json.dumps(list(packed)).encode()).hexdigest()[:10]
    plot = fig.to_html(full_html=False, include_plotlyjs=bool(include_js), div_id=uid,
                       config={"displaylogo": False, "responsive": True})

    def short(text: str, n: int = 80) -> str:
        return text if len(text) <= n else text[: n - 1] + "…"

    group_options = "".join(f'<option value="{i}" title="{escape(g)}">{escape(short(g))}</option>' for i, g in enumerate(menu))
    first_settings = "".join(f'<option value="{escape(k)}">{escape(name)}</option>' for k, name in menu[next(iter(menu))])
    n_runs = len(packed)
    controls = (
        f'<div class="ftcl-runs-explorer" style="font-size: 14px; line-height: 1.5">'
        f'<label style="display: block">table or experiment ({len(menu)}) '
        f'<select id="{uid}-group" style="max-width: 100%">{group_options}</select></label>'
        f'<label style="display: block">setting <select id="{uid}-setting" style="max-width: 100%">{first_settings}</select>'
        f"</label>"
        f'<p style="margin: 0.3em 0 0 0">showing <code id="{uid}-shown">{escape(first)}</code> '
        f"(one of {n_runs} settings, its lowest seed)</p>")
    payload = json.dumps({"id": uid, "groups": [[g, [list(r) for r in rows]] for g, rows in menu.items()], "data": packed},
                         separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return HTML(controls + plot + f"<script>({RUNS_EXPLORER_JS})({payload});</script></div>")


def plotly_html(fig, include_js: bool = True):
    """An IPython HTML object of a plotly figure with plotly.js embedded (no CDN: the static book works
    offline).  Embed the library once per page (``include_js=True`` for the first figure only)."""
    from IPython.display import HTML

    return HTML(fig.to_html(full_html=False, include_plotlyjs=bool(include_js), config={"displaylogo": False}))


def live_widget(make_widget):
    """The widget ``make_widget()`` builds, in a live kernel; in the static book build (``FTCL_BOOK_BUILD=1``,
    set by ``make book``) nothing, and the widget is never built: ipywidgets need a kernel, the static
    explorers above already respond, and building one during the build froze the executing client at random
    (jupyter/nbclient#312: a widget's comm messages while a cell executes).  ``tests/test_jupyterlab.py`` runs
    chapters 3 and 8 in a headless JupyterLab and moves their widgets' sliders."""
    if os.environ.get("FTCL_BOOK_BUILD") == "1":
        return None  # nothing shown: the static explorer above is the page's
    return make_widget()


# ---------------------------------------------------------------------------------------------------
# The run explorer's plumbing (chapter 8): its menus' groups, its script, and the live-kernel widget.
# ---------------------------------------------------------------------------------------------------

PACK_LEVELS = 65535  # 16-bit codes: 0..65534 span a curve's range, 65535 marks a missing value (NaN, inf)


def _pack(a: np.ndarray) -> list:
    """A curve as ``[lowest value, step, base64 of little-endian uint16 codes]``, value = lowest + code * step
    (code 65535: missing, a gap in the line): 2.7 characters a point where a JSON number takes 7 to 10, which keeps
    :func:`runs_explorer`'s page a few MB for every stored setting.  :func:`_unpack` and the explorer's script
    (:data:`RUNS_EXPLORER_JS`) decode it."""
    a = np.asarray(a, dtype=float)
    ok = np.isfinite(a)
    lo, hi = (float(a[ok].min()), float(a[ok].max())) if ok.any() else (0.0, 0.0)
    step = (hi - lo) / (PACK_LEVELS - 1) if hi > lo else 1.0
    codes = np.full(len(a), PACK_LEVELS, dtype="<u2")
    codes[ok] = np.round((a[ok] - lo) / step).astype("<u2")
    return [lo, step, base64.b64encode(codes.tobytes()).decode("ascii")]


def _unpack(packed: list) -> list[float | None]:
    """The values :func:`_pack` stored (within half a step of the originals), None where one was missing."""
    lo, step, b64 = packed
    codes = np.frombuffer(base64.b64decode(b64), dtype="<u2")
    return [None if c == PACK_LEVELS else lo + int(c) * step for c in codes]


def _group_order(exp) -> tuple:
    """Menu order of an experiment file: the paper's tables (T1..T7, each data set after the shapes; MoCo first
    inside Table 7), then the supplement's (S-F, S-G), the diagnoses (D-), the calibrations (CAL-)."""
    rank = next((i for i, p in enumerate(("T", "S-", "D-", "CAL-")) if exp.table.startswith(p)), 4)
    return rank, exp.table, "moco" not in exp.title.lower(), exp.path.name


def run_groups(labels: list[str], profile: str) -> dict[str, list[tuple[str, str]]]:
    """Stored runs (:func:`ftcl_core.study.store.stored_runs` labels, ``table/setting/seedN``) grouped for the run
    explorer's menus: one group per experiment file (``experiments/**/*.yaml``) that lists one of their settings,
    named ``"<table> · <the file's title>"``, in :func:`_group_order`, each holding ``(run label, setting name)``
    for the lowest stored seed of each of its settings, in the file's order.  Several files share a table (Table 7's
    MoCo v1, MoCo v2, SimCLR, ...), hence files rather than tables; a run no file lists (a setting since renamed)
    lands in a last ``"<table> · runs no experiment file lists"`` group, so every stored setting is reachable."""
    first = {}  # "T7/v1_+pos" -> its lowest-seed label; one_seed_per_setting keeps the first of each
    for label in store.one_seed_per_setting(sorted(labels, key=lambda s: (s.rsplit("/", 1)[0], int(s.rsplit("seed",
                                                                                                                  1)[1])))):
        first[label.rsplit("/", 1)[0]] = label
    n_seeds = {folder: sum(s.rsplit("/", 1)[0] == folder for s in labels) for folder in first}
    root = experiment_file.profile_root(profile)
    exps = sorted((experiment_file.Experiment.load(p) for p in sorted((experiment_file.ROOT / "experiments").rglob("*.yaml"))),
                  key=_group_order)
    groups: dict[str, list[tuple[str, str]]] = {}
    listed: set[str] = set()
    for exp in exps:
        rows = []
        for setting in exp.settings:
            folder = experiment_file.run_dir(exp, setting, 0, profile).parent.relative_to(root).as_posix()
            if folder in first:
                seed = first[folder].rsplit("seed", 1)[1]
                rows.append((first[folder], f"{setting}  (seed {seed}; {n_seeds[folder]} stored)"))
                listed.add(folder)
        if rows:
            groups.setdefault(f"{exp.table} · {exp.title}", []).extend(rows)
    for folder in sorted(set(first) - listed):
        table, setting = folder.split("/", 1)
        groups.setdefault(f"{table} · runs no experiment file lists", []).append(
            (first[folder], f"{setting}  ({n_seeds[folder]} stored)"))
    return groups


RUNS_EXPLORER_JS = """function (cfg) {
  var fig = document.getElementById(cfg.id), group = document.getElementById(cfg.id + "-group"),
      setting = document.getElementById(cfg.id + "-setting"), shown = document.getElementById(cfg.id + "-shown");
  function fill(g) {  // the setting menu of group g
    setting.innerHTML = "";
    cfg.groups[g][1].forEach(function (row) {
      var o = document.createElement("option");
      o.value = row[0]; o.textContent = row[1]; setting.appendChild(o);
    });
  }
  function unpack(p) {  // explorers._pack's [lowest, step, base64 of uint16 codes] -> values (null: missing)
    var bin = atob(p[2]), out = new Array(bin.length / 2);
    for (var i = 0; i < out.length; i++) {
      var c = bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8);
      out[i] = c === 65535 ? null : p[0] + c * p[1];
    }
    return out;
  }
  function show(label) {  // the run's six curves into the six traces, axes rescaled
    var d = cfg.data[label].map(unpack), x = [d[0], d[0], d[0], d[0], d[0], d[0]];
    window.Plotly.update(fig, {x: x, y: d.slice(1)}, {"xaxis.autorange": true, "yaxis.autorange": true,
      "xaxis2.autorange": true, "yaxis2.autorange": true, "xaxis3.autorange": true, "yaxis3.autorange": true},
      [0, 1, 2, 3, 4, 5]);
    shown.textContent = label;
  }
  group.addEventListener("change", function () { fill(+group.value); show(setting.value); });
  setting.addEventListener("change", function () { show(setting.value); });
}"""
"""The run explorer's script: fills the setting menu from the chosen group and shows the chosen run."""


def runs_widget(runs: Mapping, selected: list[str] | None = None, window: int = 10):
    """The live-kernel run explorer (chapter 8; build it through :func:`live_widget`): a multiple choice over
    ``runs`` (a label -> :class:`ftcl_core.runs.RunDir` mapping, every seed) and a smoothing slider; shows the
    chosen runs' score statistics overlaid (:func:`score_statistics`, a moving average over the slider's number of
    steps) and each run's gradient landscape (:func:`grad_landscape`).  The slider redraws the statistics only:
    the landscapes do not depend on it and take the longer to draw."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    options = list(runs)
    pick = widgets.SelectMultiple(options=options, value=tuple(selected if selected is not None else options[:2]),
                                  rows=8, description="runs", layout=widgets.Layout(width="95%"))
    smoothing = widgets.IntSlider(value=window, min=1, max=200, description="smoothing", continuous_update=False,
                                  tooltip="moving-average window, in steps")
    stats, landscapes = widgets.Output(), widgets.Output()
    metrics: dict[str, Mapping[str, np.ndarray]] = {}

    def draw_statistics(*_) -> None:
        with stats:
            stats.clear_output(wait=True)
            if pick.value:
                for s in pick.value:
                    metrics.setdefault(s, runs[s].load_metrics())
                score_statistics({s: metrics[s] for s in pick.value}, window=smoothing.value)
                plt.show()

    def draw_landscapes(*_) -> None:
        with landscapes:
            landscapes.clear_output(wait=True)
            if pick.value:
                fig = plt.figure(figsize=(4.2 * len(pick.value), 3.6))
                for i, s in enumerate(pick.value):
                    ax = fig.add_subplot(1, len(pick.value), i + 1, projection="3d")
                    grad_landscape(runs[s].load_grad_norms()["per_epoch"], title=s, ax=ax)
                plt.show()

    pick.observe(draw_statistics, "value")
    pick.observe(draw_landscapes, "value")
    smoothing.observe(draw_statistics, "value")
    draw_statistics()
    draw_landscapes()
    return widgets.VBox([pick, smoothing, stats, landscapes])
