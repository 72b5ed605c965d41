"""The one number formatter: every mean, interval and difference the package prints goes through :func:`fixed`;
measurements of speed and agreement (the GPU check, the benchmarks) through :func:`significant`.

The rounding rule: a float is first written at 6 decimals (the precision of ``results/summary.csv``), then rounded
half away from zero to the digits shown, so a number formatted from runs in memory and the same number read back
from a CSV print alike (plain float formatting could round a tie such as 0.35 either way).
"""

from __future__ import annotations

import math
import numbers
from decimal import ROUND_HALF_UP, Decimal

CSV_DECIMALS = 6  # summary.csv's precision, the one the rounding rule starts from


def missing(x: object) -> bool:
    """True for no number: ``None``, ``""`` or NaN."""
    return x is None or x == "" or (isinstance(x, float) and math.isnan(x))


def fixed(x: float, digits: int = 1, signed: bool = False) -> str:
    """``x`` (a real number) with ``digits`` (>= 0) decimals under the rounding rule above; ``signed`` puts ``+`` on
    positive numbers. Text, or digits below 0, is a TypeError or ValueError naming the fix."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"fixed formats a number, got {type(x).__name__} {x!r}: pass float(x), or cell(x) for a CSV "
                        "cell that may be empty.")
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or digits < 0:
        raise ValueError(f"digits={digits!r} must be a whole number >= 0 (the decimals shown), e.g. digits=1.")
    rounded = Decimal(f"{x:.{CSV_DECIMALS}f}").quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{rounded:{'+' if signed else ''}f}"


def grouped(n: int) -> str:
    """A whole number as the book prints a count: thousands apart by a space (4 096, 15 600)."""
    return f"{n:,}".replace(",", " ")


def relation(q: float, digits: int = 3) -> str:
    """A p- or q-value as the relation a sentence states: ``= 0.012``, or ``< 0.001`` below what ``digits`` show."""
    floor = 10.0 ** -digits
    return f"< {fixed(floor, digits)}" if q < floor else f"= {fixed(q, digits)}"


def plus_minus(mean: float, ci: float, digits: int = 1, signed: bool = False) -> str:
    """``mean ± ci`` (just the mean when there is no interval, e.g. a single seed); ``signed``: ``+`` on gains."""
    return fixed(mean, digits, signed) + ("" if missing(ci) else f" ± {fixed(ci, digits)}")


def cell(x: float | str | None, digits: int = 1, signed: bool = False) -> str:
    """:func:`fixed` of a number or of a CSV cell holding one; ``""`` for no number."""
    return "" if missing(x) else fixed(float(x), digits, signed)


def pm_cell(mean: float | str | None, ci: float | str | None, digits: int = 1, signed: bool = False) -> str:
    """:func:`plus_minus` of numbers or of CSV cells (text); ``""`` when there is no mean."""
    if missing(mean):
        return ""
    return plus_minus(float(mean), math.nan if missing(ci) else float(ci), digits, signed)


def csv_number(x: object, decimals: int = CSV_DECIMALS) -> str:
    """A CSV cell: a float at ``decimals`` decimals, ``""`` for no number, anything else as ``str``."""
    if missing(x):
        return ""
    if isinstance(x, float):
        return f"{x:.{decimals}f}"
    return str(x)


def significant(x, digits: int = 3) -> str:
    """A value as a reader wants it: numbers to ``digits`` significant figures without trailing noise, ``None``
    as a dash, booleans as yes/no."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e6):
            return f"{x:.2e}"
        if abs(x) >= 10 ** (digits - 1):
            return f"{x:.0f}"
        return f"{x:.{digits}g}"
    return str(x)
