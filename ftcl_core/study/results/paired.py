"""Paired comparisons by seed: the one pairing function (:func:`pair`) and the 95 % t-interval it reports.

Two arms of an experiment that share a seed share their initialisation and data order, so their readouts are
compared seed by seed: the difference per shared seed, its mean and the half-width of its 95 % t-interval. The
same pairs read on the error scale (:meth:`Paired.log_error_ratios`) give the log of the arm's test error over
the reference's, seed by seed: near the ceiling a difference in points is bounded by the reference's headroom,
the ratio of errors is not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# t quantiles (two-sided 95 %) for small samples; beyond 30 the normal value is close enough.
ERROR_FLOOR = 0.025  # points of test error: half a test image on the shapes' 2 000 (the only data where a run reads
# 100 %), so that a run with no error counts as half an image wrong (a continuity correction) and its log stays finite

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       15: 2.131, 20: 2.086, 30: 2.042}


def t95(df: int) -> float:
    """The two-sided 95 % t quantile at ``df`` degrees of freedom (:data:`T95`, the largest tabulated df <= df)."""
    return T95.get(df) or T95[max(k for k in T95 if k <= df)]


def mean_ci95(values: Sequence[float], allow_empty: bool = False) -> tuple[float, float]:
    """Mean and the half-width of its 95 % t-interval, ``t95(n - 1) * sd / sqrt(n)`` (NaN for a single value). No
    values is a ValueError, or both NaN where ``allow_empty`` says the caller expects none (a setting not run)."""
    n = len(values)
    if n == 0 and not allow_empty:
        raise ValueError("mean_ci95 got no values: pass at least one, or allow_empty=True where none is expected "
                         "(NaN mean and interval).")
    if n == 0:
        return math.nan, math.nan
    mean = sum(values) / n
    if n == 1:
        return mean, math.nan
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, t95(n - 1) * sd / math.sqrt(n)


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (continued fraction, Numerical Recipes' betacf)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)) / a
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return front * f


def t_sf(t: float, df: int) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


@dataclass(frozen=True)
class Paired:
    """``arm - reference`` over the seeds both arms hold: per-seed differences (``values``, in ``seeds`` order),
    their mean and 95 % half-width ``ci95`` (NaN below two seeds), the device each arm's run trained on per seed
    (``devices``: (arm, reference) pairs, ``("", "")`` where unknown) and the reference arm's own readout per seed
    (``references``, in % top-1; empty where the pairs are not of readouts, e.g. of gaps)."""

    mean: float
    ci95: float
    n: int
    seeds: tuple[int, ...] = ()
    values: tuple[float, ...] = ()
    devices: tuple[tuple[str, str], ...] = ()
    references: tuple[float, ...] = ()

    @property
    def lo(self) -> float:
        return self.mean - self.ci95

    @property
    def hi(self) -> float:
        return self.mean + self.ci95

    @property
    def sd(self) -> float:
        if self.n < 2:
            return math.nan
        return math.sqrt(sum((v - self.mean) ** 2 for v in self.values) / (self.n - 1))

    def p_against(self, value: float = 0.0, side: int = 0) -> float:
        """The paired t-test's p-value of ``mean = value``: two-sided for ``side`` 0, else one-sided for the
        alternative ``side * (mean - value) > 0``. NaN below two seeds."""
        if self.n < 2 or math.isnan(self.mean):
            return math.nan
        se = self.sd / math.sqrt(self.n)
        if se == 0:
            t = math.inf if self.mean != value else 0.0
            t = math.copysign(t, self.mean - value)
        else:
            t = (self.mean - value) / se
        if side == 0:
            return min(1.0, 2 * t_sf(abs(t), self.n - 1))
        return t_sf(side * t, self.n - 1)

    def p_equivalent(self, margin: float) -> float:
        """Two one-sided tests (TOST): the p-value of "the difference lies within ±``margin``"."""
        return max(self.p_against(-margin, +1), self.p_against(margin, -1))

    @property
    def reference_mean(self) -> float:
        """The reference arm's mean readout over the paired seeds (NaN without :attr:`references`)."""
        return sum(self.references) / len(self.references) if self.references else math.nan

    def log_error_ratios(self, floor: float = ERROR_FLOOR) -> Paired:
        """The same pairs on the error scale: per seed ``log(e_arm / e_ref)`` with ``e = 100 - readout`` (the test
        error in points, floored at ``floor``, :data:`ERROR_FLOOR` by the rule), their mean and 95 % half-width; < 0
        where the arm gets fewer test images wrong. Empty (n = 0, NaN mean) without :attr:`references`."""
        if not self.n or len(self.references) != self.n:
            return Paired(math.nan, math.nan, 0)
        values = tuple(math.log(max(100 - (r + d), floor) / max(100 - r, floor))
                       for d, r in zip(self.values, self.references))
        mean, ci = mean_ci95(values)
        return Paired(mean, ci, self.n, self.seeds, values, self.devices)

    @property
    def mixed_seeds(self) -> list[int]:
        """Seeds whose two runs trained on different kinds of machine (``cpu/AMD EPYC`` against ``cpu/Intel Xeon``,
        or a CPU run against a GPU run: :func:`ftcl_core.study.store.machine_kind`)."""
        return [s for s, (a, b) in zip(self.seeds, self.devices) if a != b]

    @property
    def mixed_device_types(self) -> list[int]:
        """Seeds whose two runs trained on different types of device (a CPU run against a GPU run)."""
        return [s for s, (a, b) in zip(self.seeds, self.devices) if a.split("/")[0] != b.split("/")[0]]


def pair(arm: Mapping[int, float], reference: Mapping[int, float],
         devices: Mapping[int, tuple[str, str]] | None = None, allow_empty: bool = False) -> Paired:
    """The one pairing function: ``arm[seed] - reference[seed]`` over the seeds both hold (sorted), as a
    :class:`Paired` that keeps ``reference[seed]`` too. ``devices``: per seed, the devices of the two runs. No
    shared seed is a ValueError, or an empty :class:`Paired` (n = 0, NaN mean) where ``allow_empty`` says the caller
    expects it (a setting not run yet)."""
    seeds = tuple(sorted(set(arm) & set(reference)))
    if not seeds and not allow_empty:
        raise ValueError(f"pair: the arm (seeds {sorted(arm)}) and the reference (seeds {sorted(reference)}) share no "
                         "seed: pair runs of the same seeds, or pass allow_empty=True where none is expected.")
    values = tuple(arm[s] - reference[s] for s in seeds)
    mean, ci = mean_ci95(values, allow_empty=True)
    dev = tuple((devices or {}).get(s, ("", "")) for s in seeds)
    return Paired(mean, ci, len(seeds), seeds, values, dev, tuple(reference[s] for s in seeds))


def by_seed(records: Sequence[Mapping], setting: str, key: str = "linear_top1") -> dict[int, float]:
    """``{seed: record[key]}`` of one setting's run records (records without ``key`` are left out)."""
    return {r["seed"]: r[key] for r in records if r["setting"] == setting and key in r}


def paired_records(records: Sequence[Mapping], arm: str, reference: str, key: str = "linear_top1",
                   device=None) -> Paired:
    """:func:`pair` of two settings' run records; ``device(record) -> str`` fills :attr:`Paired.devices`. Empty
    (n = 0, NaN mean) where the two share no seed: a setting not run yet is a state of the study, not an error."""
    devices = None
    if device is not None:
        runs = {(r["setting"], r["seed"]): r for r in records if r["setting"] in (arm, reference)}
        devices = {s: (device(runs[arm, s]), device(runs[reference, s])) for (name, s) in runs
                   if name == arm and (reference, s) in runs}
    return pair(by_seed(records, arm, key), by_seed(records, reference, key), devices, allow_empty=True)
