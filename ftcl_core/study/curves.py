"""Facts of one run's curves, as chapters 2, 4, 5 and 6 draw them: the scores of a random encoder against a trained
one, the loss and contrastive accuracy of the first epochs, and the gradient norm summed over the layers.

Each ``*_facts`` function returns strings the chapter glues (numbers formatted once by
:func:`ftcl_core.study.results.numbers.fixed`) and, under names the glue skips, the raw values :data:`CHECKS` read
(:mod:`ftcl_core.study.checks`). The curves are read as the figures draw them: per-step series through
:func:`smooth`, the same moving average the figures use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from ftcl_core.study.results.numbers import fixed, grouped

COLLAPSE_LEVEL = 0.9
"""Mean(neg) of the raw cosines above this reads as a collapse (chapters 6 and 7: every image mapped near one point)."""


def smooth(y: np.ndarray, window: int) -> np.ndarray:
    """Moving average (edges use the available points), for noisy per-step curves."""
    if window <= 1 or len(y) < window:
        return np.asarray(y, dtype=float)
    kernel = np.ones(window)
    num = np.convolve(y, kernel, mode="same")
    den = np.convolve(np.ones_like(y, dtype=float), kernel, mode="same")
    return num / den


def _num(x: float, digits: int) -> str:
    """:func:`fixed`, with a value that rounds to zero written without a sign ("0.00", never "-0.00")."""
    return fixed(round(x, digits) + 0.0, digits)


def _cos(a: np.ndarray, b: np.ndarray, n: int = 64) -> tuple[float, float]:
    """Supp A's Mean(pos) and Mean(neg) of the first ``n`` queries (rows of ``a``), as
    :func:`ftcl_core.stats.score_statistics` computes them: the cosine of each with the same row of ``b`` (its
    positive), and the mean of its cosines with every other row (its negatives), averaged."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    s = (a @ b.T)[:n]
    off = ~np.eye(len(a), dtype=bool)[:n]
    return float(np.mean(np.diag(s))), float(np.mean([row[keep].mean() for row, keep in zip(s, off)]))


def init_score_facts(q: np.ndarray, k: np.ndarray, trained: Mapping[str, np.ndarray], window: int = 100,
                     level: float = COLLAPSE_LEVEL) -> dict:
    """Chapter 2: the scores of a randomly initialised encoder against the collapse level and against a trained run.

    ``q`` and ``k`` are the random encoder's features of two views of the same images (rows paired); ``trained`` a
    stored run's metrics (:meth:`RunDir.load_metrics`). Facts: Mean(pos) and Mean(neg) of the first 64 queries
    (``pos``, ``neg``: the numbers :func:`ftcl_core.stats.score_statistics` prints), the same after removing each
    view's batch-mean direction (``centred_pos``, ``centred_neg``: what is left once the direction every feature
    shares is gone), the collapse level, the trained run's Mean(neg) at its first step (the queue's random keys,
    ``queue_neg``) and Mean(pos), Mean(neg) over its last ``window`` steps."""
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    pos, neg = _cos(q, k)
    cpos, cneg = _cos(q - q.mean(0), k - k.mean(0))
    end_pos = float(np.mean(np.asarray(trained["pos_mean"])[-window:]))
    end_neg = float(np.mean(np.asarray(trained["neg_mean"])[-window:]))
    queue_neg = float(np.asarray(trained["neg_mean"])[0])
    return {"pos": _num(pos, 3), "neg": _num(neg, 3), "centred_pos": _num(cpos, 2), "centred_neg": _num(cneg, 2),
            "level": fixed(level, 1), "queue_neg": _num(queue_neg, 2), "window": str(window),
            "end_pos": _num(end_pos, 2), "end_neg": _num(end_neg, 2),
            "values": {"pos": pos, "neg": neg, "centred_pos": cpos, "centred_neg": cneg, "level": level,
                       "queue_neg": queue_neg, "end_pos": end_pos, "end_neg": end_neg}}


def negative_mass_by_rank(l_neg: torch.Tensor, tau: float) -> torch.Tensor:
    """How InfoNCE's softmax at temperature ``tau`` (eq. 1) shares the negatives' mass among them: element ``r`` is the
    share the ``r + 1`` highest-scoring negatives of a query carry, averaged over the queries (the positive's logit
    cancels from a share among negatives). ``l_neg`` (N, K) -> (K,), rising from the top negative's share to 1."""
    if tau <= 0:
        raise ValueError(f"temperature tau={tau} must be > 0; MoCo v1 uses 0.07, v2 0.2.")
    top = torch.softmax(l_neg.double() / tau, dim=1).sort(dim=1, descending=True).values  # (N, K), rows sum to 1
    return top.cumsum(1).mean(0)  # (K,)


def half_mass_temperature(l_neg: torch.Tensor, top: int = 30, lo: float = 0.01, hi: float = 10.0,
                          tol: float = 1e-4) -> float:
    """The temperature at which the ``top`` highest-scoring negatives carry half of the negatives' softmax mass
    (eq. 1, :func:`negative_mass_by_rank`), by bisection between ``lo`` and ``hi``: their share falls as tau rises.
    Raises ValueError when half is not crossed in that range (scores too alike, or ``top`` too many)."""
    share = lambda tau: float(negative_mass_by_rank(l_neg, tau)[top - 1])  # noqa: E731
    if not share(lo) > 0.5 > share(hi):
        raise ValueError(f"the top {top} negatives' share does not cross one half between tau={lo} and {hi} "
                         f"({share(lo):.3f} to {share(hi):.3f}); widen the range or pick another top.")
    while hi - lo > tol:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if share(mid) > 0.5 else (lo, mid)
    return (lo + hi) / 2


def temperature_facts(mass: Mapping[float, np.ndarray], top: int = 30) -> dict:
    """Chapter 2's temperature figure: ``mass`` maps each temperature to :func:`negative_mass_by_rank`
    of the same scores. Facts: the share (%) of the negatives' softmax mass the ``top`` highest-scoring negatives carry
    at each temperature (``top_<tau>``, the dot written "_": ``top_0_07``), ``top`` and the number of negatives ``k``."""
    shares = {tau: float(np.asarray(m)[top - 1]) for tau, m in mass.items()}
    k = len(np.asarray(next(iter(mass.values()))))
    named = {f"top_{tau:g}".replace(".", "_"): fixed(100 * v, 0) for tau, v in shares.items()}
    return {**named, "top": str(top), "k": grouped(k), "values": {"shares": shares}}


def _hotter_spreads(f: Mapping) -> str | None:
    """A higher temperature leaves the hardest negatives a smaller share: the shares fall as tau rises."""
    shares = [v for _, v in sorted(_v(f, "shares").items())]
    return None if all(a > b for a, b in zip(shares, shares[1:])) else f"shares by temperature: {shares}"


def training_curve_facts(metrics: Mapping[str, np.ndarray], queue_size: int, batch_size: int, window: int = 10,
                         tail: int = 100) -> dict:
    """Chapter 4: the loss and contrastive top-1 of one run as its figure draws them (``window``-step means).

    The queue starts as ``queue_size`` random unit vectors; each step replaces ``batch_size`` of them by the key
    encoder's keys, so after ``fill`` = ceil(K / B) steps it holds only real keys. Facts: ln(K+1); the loss at the
    first step (``loss_start``), its peak over the first fifth of the run and where (``loss_peak``, ``peak_step``),
    its mean over the last ``tail`` steps (``loss_end``), its lowest point between that peak and the top-1's
    (``loss_dip``) and the top of a second rise after it, in the run's first half (``loss_hump``); Mean(neg) at the
    first step (random keys), at the peak and at the low; the top-1's peak after the queue has filled (``top1_peak``, at
    ``top1_epoch``) and over the last ``tail`` steps, with Var(neg) at both. While the queue fills, Var(neg) step by
    step: its spike (``var_spike`` at ``spike_step``), its value once the queue is full (``var_filled``) and the
    variance a mix predicts, a share s of real keys scoring r (Mean(neg) / s) among random keys scoring ~0:
    ``var_mix`` = s (1 - s) r² (the spread of each group left out)."""
    per_epoch = max(1, int(np.sum(np.asarray(metrics["epoch"]) == np.asarray(metrics["epoch"])[0])))
    loss, top1 = smooth(metrics["loss"], window), smooth(metrics["top1"], window)
    neg, var = np.asarray(metrics["neg_mean"], dtype=float), smooth(metrics["neg_var"], window)
    n = len(loss)
    fill = int(np.ceil(queue_size / batch_size))
    early = max(2, n // 5)
    peak = int(np.argmax(loss[:early]))
    after = min(n - 1, 2 * fill)  # past the filling (and past the first steps' random keys)
    t_peak = after + int(np.argmax(top1[after:]))
    half = max(t_peak + 2, n // 2)
    dip = peak + int(np.argmin(loss[peak:max(peak + 1, t_peak)]))  # the first fall's low, before the top-1 peaks
    hump = dip + int(np.argmax(loss[dip:half]))  # the second rise's top, in the run's first half
    ln_k = float(np.log(queue_size + 1))
    v = {"ln_k": ln_k, "fill": fill, "loss_start": float(loss[0]), "loss_peak": float(loss[peak]), "peak_step": peak,
         "loss_end": float(np.mean(loss[-tail:])), "neg_start": float(neg[0]), "neg_peak": float(neg[peak]),
         "top1_peak": float(top1[t_peak]), "top1_step": t_peak, "top1_end": float(np.mean(top1[-tail:])),
         "var_at_top1": float(var[t_peak]), "var_end": float(np.mean(var[-tail:])), "steps": n,
         "per_epoch": per_epoch, "loss_dip": float(loss[dip]), "loss_hump": float(loss[hump]), "hump_step": hump,
         "neg_dip": float(neg[dip])}
    pos, neg_s = smooth(metrics["pos_mean"], window), smooth(metrics["neg_mean"], window)
    raw_var = np.asarray(metrics["neg_var"], dtype=float)[:fill + 1]  # step by step while the queue fills
    spike = int(np.argmax(raw_var))
    share = min(1.0, spike * batch_size / queue_size)  # the real keys' share of the queue at the spike
    real = neg[spike] / share if share > 0 else float("nan")  # their mean score, the random keys scoring ~0
    v.update(var_spike=float(raw_var[spike]), spike_step=spike, var_filled=float(raw_var[-1]),
             var_mix=share * (1 - share) * real ** 2, spike_share=share, spike_real=real)
    v.update(pos_low=float(pos[:early].min()), pos_low_step=int(np.argmin(pos[:early])),
             pos_end=float(np.mean(pos[-tail:])), neg_low=float(neg_s[:early].min()),
             neg_end=float(np.mean(neg_s[-tail:])), var_peak=float(var.max()), var_peak_step=int(np.argmax(var)),
             neg_low_step=int(np.argmin(neg_s[:early])))
    return {"ln_k": fixed(ln_k, 2), "fill": str(fill), "fill_epoch": fixed(fill / per_epoch, 1),
            "loss_start": fixed(v["loss_start"], 1), "loss_peak": fixed(v["loss_peak"], 1), "peak_step": str(peak),
            "loss_end": fixed(v["loss_end"], 1), "neg_start": _num(v["neg_start"], 2),
            "neg_peak": fixed(v["neg_peak"], 2), "top1_peak": fixed(v["top1_peak"], 0),
            "top1_epoch": fixed(t_peak / per_epoch, 1), "top1_end": fixed(v["top1_end"], 0),
            "var_at_top1": fixed(v["var_at_top1"], 2), "var_end": fixed(v["var_end"], 2), "tail": str(tail),
            "window": str(window), "loss_dip": fixed(v["loss_dip"], 1), "dip_epoch": fixed(dip / per_epoch, 1),
            "loss_hump": fixed(v["loss_hump"], 1), "hump_epoch": fixed(hump / per_epoch, 0),
            "neg_dip": _num(v["neg_dip"], 2), "pos_low": fixed(v["pos_low"], 2),
            "pos_low_epoch": fixed(v["pos_low_step"] / per_epoch, 1), "pos_end": fixed(v["pos_end"], 2),
            "neg_low": _num(v["neg_low"], 2), "neg_end": _num(v["neg_end"], 2), "var_peak": fixed(v["var_peak"], 2),
            "var_peak_epoch": fixed(v["var_peak_step"] / per_epoch, 0), "var_spike": fixed(v["var_spike"], 2),
            "spike_step": str(spike), "var_filled": fixed(v["var_filled"], 2), "var_mix": fixed(v["var_mix"], 2),
            "spike_real": fixed(v["spike_real"], 2), "spike_share": fixed(100 * share, 0), "values": v}


def curve_marks(facts: Mapping) -> dict[str, list[tuple[float, float, str]]]:
    """The numbers :func:`training_curve_facts` quotes, as points to mark on the figure that draws its curves:
    ``{column: [(epoch, value, text), ...]}``, the text as the prose prints it (an end value is the mean of the last
    ``tail`` steps, marked at the last step)."""
    v, per_epoch = facts["values"], facts["values"]["per_epoch"]
    end = (v["steps"] - 1) / per_epoch

    def at(step: int) -> float:
        return step / per_epoch

    return {"pos_mean": [(at(v["pos_low_step"]), v["pos_low"], facts["pos_low"]), (end, v["pos_end"], facts["pos_end"])],
            "neg_mean": [(0.0, v["neg_start"], facts["neg_start"]), (at(v["peak_step"]), v["neg_peak"], facts["neg_peak"]),
                         (at(v["neg_low_step"]), v["neg_low"], facts["neg_low"]), (end, v["neg_end"], facts["neg_end"])],
            "neg_var": [(at(v["top1_step"]), v["var_at_top1"], facts["var_at_top1"]),
                        (at(v["var_peak_step"]), v["var_peak"], facts["var_peak"]), (end, v["var_end"], facts["var_end"])],
            "top1": [(at(v["top1_step"]), v["top1_peak"], facts["top1_peak"]), (end, v["top1_end"], facts["top1_end"])]}


def _batch_norm(name: str) -> bool:
    """A ResNet parameter group of :mod:`ftcl_core.models` that is a batch-norm layer (``bn1``, ``stem.1``,
    ``shortcut.1``): the convolution before it is ``.0``."""
    return ".bn" in name or name.endswith(("stem.1", "shortcut.1"))


def grad_swing_facts(per_epoch: Mapping[str, np.ndarray], layers: Sequence[str] | None = None) -> dict:
    """Chapters 4-6: each run's gradient landscape (:meth:`RunDir.load_grad_norms`' ``per_epoch``, epochs x layers)
    summed over its layers, the curve the figures draw. Facts: per run the standard deviation of its epoch-to-epoch
    change (``sd``: how much it swings, :func:`ftcl_core.study.signatures.volatility`'s second number), the runs
    that swing most and least, and for the first run its first and last epoch's sum and their ratio (``growth``);
    with its ``layers`` (parameter names), the largest mean norm of a batch-norm layer and the smallest of the others
    (convolutions and head: ``bn_max``, ``other_min``)."""
    totals = {name: np.asarray(p, dtype=float).sum(1) for name, p in per_epoch.items()}
    sd = {name: float(np.std(np.diff(t))) if len(t) > 1 else 0.0 for name, t in totals.items()}
    out: dict = {"n": len(totals), "sd": sd}
    if not totals:
        return out
    most, least = max(sd, key=sd.get), min(sd, key=sd.get)
    out.update({"most": most.removeprefix("m="), "least": least.removeprefix("m="), "most_sd": fixed(sd[most], 2),
                "least_sd": fixed(sd[least], 2), "ratio": fixed(sd[most] / sd[least], 0) if sd[least] else "many"})
    first = next(iter(totals.values()))
    out.update({"first": fixed(float(first[0]), 1), "last": fixed(float(first[-1]), 1),
                "growth": float(first[-1] / first[0])})
    if layers is not None:
        mean = np.asarray(next(iter(per_epoch.values())), dtype=float).mean(0)
        bn = [float(v) for name, v in zip(layers, mean) if _batch_norm(str(name))]
        other = [float(v) for name, v in zip(layers, mean) if not _batch_norm(str(name))]
        out.update({"bn_max": max(bn, default=np.nan), "other_min": min(other, default=np.nan)})
    return out


def _momentum(label: str) -> float | None:
    try:
        return float(label.removeprefix("m="))
    except ValueError:
        return None


def _small_swing_more(f: Mapping) -> str | None:
    m = {name: _momentum(name) for name in f.get("sd", {})}
    small = [f["sd"][s] for s, v in m.items() if v is not None and v <= 0.9]
    large = [f["sd"][s] for s, v in m.items() if v is not None and v > 0.9]
    if not small or not large:
        return "no small and large momenta to compare"
    return None if min(small) > max(large) else f"a small momentum swings {min(small):.2f}, a large one {max(large):.2f}"


def _ft_swings_more(f: Mapping) -> str | None:
    base = [s for s in f.get("sd", {}) if "baseline" in s]
    others = [s for s in f.get("sd", {}) if "baseline" not in s]
    if len(base) != 1 or not others:
        return "no baseline and FT run to compare"
    return None if min(f["sd"][s] for s in others) > f["sd"][base[0]] else "the baseline swings as much as FT"


def _v(f: Mapping, key: str) -> float:
    return f["values"][key]


CHECKS = {
    # chapter 2 (init_score_facts)
    "a random encoder's positives score above its negatives": (
        lambda f: None if _v(f, "pos") > _v(f, "neg") else "Mean(pos) is not above Mean(neg) at random init"),
    "a random encoder's cosines sit above the collapse level": (
        lambda f: None if min(_v(f, "pos"), _v(f, "neg")) > _v(f, "level") else "a random encoder's cosines are below it"),
    "the shared direction carries the level": (
        lambda f: None if abs(_v(f, "centred_neg")) < 0.1 and _v(f, "centred_pos") > _v(f, "centred_neg") + 0.1
        else "without the mean direction the negatives still agree, or the positives no longer do"),
    "the queue's random keys score near zero": (
        lambda f: None if abs(_v(f, "queue_neg")) < 0.1 else "the first step's Mean(neg) is not near 0"),
    "the trained run ends with a wide gap below the collapse level": (
        lambda f: None if _v(f, "end_neg") < _v(f, "level") and _v(f, "end_pos") - _v(f, "end_neg") > 0.3
        else "the trained run's Mean(neg) is high or its gap to Mean(pos) small"),
    "a lower temperature gives the hardest negatives more of the mass": _hotter_spreads,  # temperature_facts
    # chapter 4 (training_curve_facts)
    "the loss starts below ln(K+1)": (
        lambda f: None if _v(f, "loss_start") < _v(f, "ln_k") - 0.5 else "the loss starts near or above ln(K+1)"),
    "the loss rises before it falls": (
        lambda f: None if _v(f, "loss_peak") > _v(f, "loss_start") + 0.5 and _v(f, "loss_end") < _v(f, "loss_peak") - 0.5
        else "the loss does not rise at first and fall after"),
    "the loss peaks as the queue fills": (
        lambda f: None if f["values"]["fill"] / 2 <= f["values"]["peak_step"] <= 2 * f["values"]["fill"]
        else f"the loss peaks at step {f['values']['peak_step']}, the queue fills at {f['values']['fill']}"),
    "the loss climbs a second, smaller hump": (
        lambda f: None if _v(f, "loss_dip") + 0.2 < _v(f, "loss_hump") < _v(f, "loss_peak")
        else "no second rise of the loss after its first fall, or one above the first peak"),
    "Mean(neg) climbs from the random keys": (
        lambda f: None if abs(_v(f, "neg_start")) < 0.1 and _v(f, "neg_peak") > 0.3 and _v(f, "neg_dip") < 0.2
        else "Mean(neg) does not climb from near zero and fall back"),
    "the contrastive top-1 spikes and sinks": (
        lambda f: None if _v(f, "top1_peak") > 3 * _v(f, "top1_end") and _v(f, "top1_step") < _v(f, "steps") / 5
        else "the contrastive top-1 has no early peak three times its end"),
    "Var(neg) grows as the top-1 sinks": (
        lambda f: None if _v(f, "var_end") > 1.5 * _v(f, "var_at_top1") else "Var(neg) does not grow after the peak"),
    "Mean(pos) falls in the first epoch and climbs back": (
        lambda f: None if _v(f, "pos_low") < 0.5 * _v(f, "pos_end") and _v(f, "pos_end") > 0.8
        else "Mean(pos) has no early fall to under half its end, or ends below 0.8"),
    "Mean(neg) dips below zero and settles at zero": (
        lambda f: None if _v(f, "neg_low") < -0.05 and abs(_v(f, "neg_end")) < 0.02
        else "Mean(neg) does not dip below zero and end near it"),
    "Var(neg) spikes while the queue fills, as a mix of random and real keys": (  # a two-group mix's variance
        lambda f: None if f["values"]["fill"] / 4 <= f["values"]["spike_step"] <= 3 * f["values"]["fill"] / 4
        and _v(f, "var_filled") < 0.2 * _v(f, "var_spike") and abs(_v(f, "var_mix") / _v(f, "var_spike") - 1) < 0.25
        else "Var(neg)'s early spike is not mid-fill, does not fall once the queue is full, or is not the mix's"),
    "Var(neg) peaks mid-run and eases": (
        lambda f: None if _v(f, "var_peak") > 1.2 * _v(f, "var_end")
        and _v(f, "steps") / 5 < _v(f, "var_peak_step") < 4 * _v(f, "steps") / 5
        else "Var(neg) has no peak in the middle three fifths, a fifth above its end"),
    # chapters 4-6 (grad_swing_facts)
    "the summed gradient norm grows over the run": (
        lambda f: None if f.get("growth", 0) > 1.5 else "the summed gradient norm does not grow by half"),
    "the batch-norm layers carry the smallest gradients": (
        lambda f: None if f.get("bn_max", np.nan) < f.get("other_min", np.nan)
        else "a batch-norm layer's gradient is not the smallest"),
    "every small momentum swings more than every large one": _small_swing_more,
    "FT swings more than its baseline": _ft_swings_more,
}
