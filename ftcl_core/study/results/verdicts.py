"""Claims as the paper states them, and the one verdict function that judges a paired comparison against one.

A :class:`Claim` names its arm, its reference arm, its kind and the paper's own effect size ``effect`` (the
paper's ``arm - reference`` in points of top-1; ``None`` where the paper gives no number):

- ``difference``: the paper's gain or loss of one arm over another (Tables 2-7, Supp E and G);
- ``ordering``: one arm of a sweep above (or below) its neighbour, paired by seed (Table 1's rise to m = 0.99 and
  fall at 0.999 and 1; Table 6's "the earlier FT starts, the more it helps"); judged as a difference;
- ``equivalence``: the paper's "no real difference" within ``margin`` points (Table 5's union queue against the
  FT queue; Supp F's re-normalised FT against the same FT without it);
- ``sanity``: a check the method must pass before any FT claim means anything (Table 1's "learns above a random
  encoder", "collapses below it"); reported, and counted apart from the FT claims.

:func:`judge` turns a claim and its :class:`~ftcl_core.study.results.paired.Paired` interval [lo, hi] into a
:class:`Verdict`. With the paper's effect d (signs taken on the paper's side, so d > 0):

- ``matches the paper``: the interval holds d and excludes 0;
- ``larger than the paper``: it lies wholly beyond d (every value the data allow is larger than the paper's);
- ``smaller than the paper``: it lies wholly between 0 and d;
- ``no effect of the paper's size``: it holds 0 and excludes d;
- ``opposite to the paper``: it lies wholly on the other side of 0;
- ``undecided``: it holds both 0 and d, or rests on fewer than :data:`MIN_SEEDS` seeds, however narrow;
- equivalence: ``equivalent`` (the interval lies within ±margin), ``not equivalent`` (wholly outside it),
  else ``undecided``.

The words say how big, so an effect 4x the paper's never reads as one that matches it. Intervals are closed: an
end that touches 0 or d holds it. A claim without a stated size is judged on its sign alone (``matches the
paper`` on its side of 0, ``opposite to the paper`` on the other, else ``undecided``). :func:`benjamini_hochberg` adjusts the
p-values of a family of claims, and :func:`after_bh` says what a verdict reads at the adjusted level.

**Two scales.** A difference or ordering claim whose paper gives both numbers (:attr:`Claim.paper`) is judged
twice by the same rule: on points (above) and on the error scale, the paired log error ratio
``log(e_arm / e_ref)`` per seed (``e = 100 - top-1``; :meth:`~ftcl_core.study.results.paired.Paired.log_error_ratios`)
against the paper's own ``log`` of its two numbers' error ratio (Table 7, MoCo v1 +both: 23.13 / 28.90, i.e.
20 % fewer errors). Points decide, as the paper states its effects in points, except where the ceiling forbids
the paper's point effect (:func:`ceiling_binds`): then a verdict on points could only read "smaller than the paper"
or "no effect of the paper's size" whatever FT did, and the error scale decides (:attr:`Verdict.scale`). The rule
is the plain bound rather than a tuned threshold: the arm's mean gain over the paired seeds can never exceed the
reference's mean headroom, so below the paper's effect a point verdict is forced; above it both verdicts are
possible and the paper's own scale (points) keeps deciding, so verdicts far from the ceiling read as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ftcl_core.study.results.paired import ERROR_FLOOR, Paired

# The error floor's rule, stated before use: a run's test error counts as at least half a test image
# (paired.ERROR_FLOOR); a verdict the error scale decides is tried again at half and at twice that floor, and one whose
# word moves is labelled "sensitive to the error floor"
FLOOR_FACTORS = (0.5, 2.0)
ON_ERRORS, FLOOR_SENSITIVE = " on the error scale", ", sensitive to the error floor"  # what labelled() adds
MIN_SEEDS = 3  # the project's standard: a verdict needs >= 3 seeds and a paired 95 % interval
ALPHA = 0.05  # the level of the 95 % intervals, and of the Benjamini-Hochberg false discovery rate

KINDS = ("difference", "ordering", "equivalence", "sanity")

# the six words of a difference (issue 63, item 2): how big the effect is against the paper's
MATCHES = "matches the paper"
LARGER = "larger than the paper"
SMALLER = "smaller than the paper"
NO_EFFECT = "no effect of the paper's size"
OPPOSITE = "opposite to the paper"
UNDECIDED = "undecided"
EQUIVALENT = "equivalent"
NOT_EQUIVALENT = "not equivalent"
BASELINE = "baseline"  # a row that claims nothing (a reference arm)
NOT_RUN = "not run"  # a comparison with no paired seed stored: never trained, not undecided
POINTS, ERRORS = "points", "errors"  # the two scales a difference is judged on (Verdict.scale)

DIFFERENCE_WORDS = (MATCHES, LARGER, SMALLER, NO_EFFECT, OPPOSITE, UNDECIDED)
EQUIVALENCE_WORDS = (EQUIVALENT, NOT_EQUIVALENT, UNDECIDED)
TALLY_WORDS = (MATCHES, LARGER, SMALLER, NO_EFFECT, OPPOSITE, EQUIVALENT, NOT_EQUIVALENT, UNDECIDED)
SEEN = (MATCHES, LARGER, SMALLER)  # the words that see the paper's direction, 0 excluded
COMPARED = "compared"  # an arm set against its reference of which the paper claims nothing (study.diagnosis's rows)
WORDS = (*TALLY_WORDS, BASELINE, NOT_RUN, COMPARED, "")  # every word a verdict column holds ("": none yet)


@dataclass(frozen=True)
class Claim:
    """One claim of the paper: ``arm`` against ``reference`` (a setting, or ``random init`` for Table 1's sanity
    checks), of kind ``kind`` (:data:`KINDS`). ``effect``: the paper's ``arm - reference`` in points (None: not
    stated); ``direction``: +1 (above) or -1 (below) where no effect is stated; ``margin``: an equivalence claim's
    ± points; ``source``: where the paper says it; ``text``: how the claim reads (default from the fields);
    ``paper``: the paper's own two readouts (reference, arm) in % top-1, where it gives both (None: not stated),
    from which the claim's size on the error scale is read (:attr:`paper_log_error_ratio`)."""

    arm: str
    reference: str
    kind: str = "difference"
    effect: float | None = None
    direction: int = 1
    margin: float | None = None
    source: str = ""
    text: str = ""
    paper: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"claim kind {self.kind!r} is none of {KINDS}")
        if isinstance(self.direction, bool) or self.direction not in (1, -1):
            raise ValueError(f"claim {self.arm} vs {self.reference}: direction={self.direction!r} must be +1 (the arm "
                             "above the reference) or -1 (below).")
        if self.kind == "equivalence" and not (self.margin and self.margin > 0):
            raise ValueError(f"an equivalence claim ({self.arm} vs {self.reference}) needs a margin > 0")
        if self.paper is not None:
            ref, arm = self.paper
            if not (0 <= ref < 100 and 0 <= arm < 100):
                raise ValueError(f"the paper's readouts {self.paper} of {self.arm} vs {self.reference} must lie in "
                                 "[0, 100) %")
            if self.effect is not None and abs(self.effect - (arm - ref)) > 0.011:
                raise ValueError(f"{self.arm} vs {self.reference}: the paper's effect {self.effect} is not its two "
                                 f"readouts' difference {arm} - {ref}")

    @property
    def paper_log_error_ratio(self) -> float:
        """The paper's effect on the error scale: ``log((100 - arm) / (100 - reference))`` of its two readouts
        (< 0: the arm gets fewer test images wrong; Table 7, MoCo v1 +both: log(23.13 / 28.90) = -0.223); NaN
        where the paper does not give both."""
        if self.paper is None:
            return math.nan
        ref, arm = self.paper
        return math.log((100 - arm) / (100 - ref))

    @property
    def on_errors(self) -> Claim | None:
        """The same claim on the error scale, where it is judged there (a difference or an ordering with the
        paper's two numbers): its effect is :attr:`paper_log_error_ratio`, and its side the opposite of the points'
        (a gain in readout is a fall in error). None for other claims."""
        if self.kind not in ("difference", "ordering") or self.paper is None:
            return None
        return Claim(self.arm, self.reference, self.kind, self.paper_log_error_ratio, -self.sign, source=self.source)

    @property
    def sign(self) -> int:
        """+1 when the paper puts ``arm`` above ``reference``, -1 below (equivalence: +1)."""
        if self.effect is not None and self.effect != 0:
            return 1 if self.effect > 0 else -1
        return 1 if self.direction >= 0 else -1

    @property
    def in_family(self) -> bool:
        """Whether the claim is one of the paper's claims that the Benjamini-Hochberg family holds (every kind
        but ``sanity``)."""
        return self.kind != "sanity"

    def describe(self) -> str:
        """How the claim reads in a table: ``above never``, ``within ±1 of K``, ..."""
        if self.text:
            return self.text
        if self.kind == "equivalence":
            return f"within ±{self.margin:g} of {self.reference}"
        return f"{'above' if self.sign > 0 else 'below'} {self.reference}"


@dataclass(frozen=True)
class Verdict:
    """:func:`judge`'s reading of a claim: ``word`` (see the module; the deciding scale's), ``ratio`` (our effect
    over the paper's in points; NaN where the paper states none or for an equivalence claim) and ``p`` (two-sided
    paired t-test against 0 on the deciding scale; for an equivalence claim the TOST p-value of lying within the
    margin; NaN below two seeds). ``points``: the word on points; ``errors`` / ``error_word``: the paired log
    error ratio and the word on it (None / "" where the claim is not judged on errors); ``scale``: which of the
    two decided (:data:`POINTS` or :data:`ERRORS`)."""

    claim: Claim
    paired: Paired
    word: str
    ratio: float
    p: float
    points: str = ""
    errors: Paired | None = None
    error_word: str = ""
    scale: str = POINTS
    floor_sensitive: bool = False  # the error scale decided, and a floor of half or twice the rule's moves its word
    floor_p: tuple[float, ...] = ()  # the deciding p-value at those floors (where the error scale decided)

    @property
    def deciding(self) -> tuple[Claim, Paired]:
        """The claim and the paired values of the scale that decided (the error-scale claim where errors did)."""
        if self.scale == ERRORS and self.errors is not None and self.claim.on_errors is not None:
            return self.claim.on_errors, self.errors
        return self.claim, self.paired


def ceiling_binds(claim: Claim, paired: Paired) -> bool:
    """Whether the ceiling forbids the paper's point effect ``d``.

    The arm cannot read above 100 %, so over the paired seeds its mean gain can be
    at most the reference's headroom, ``100 - mean(reference)`` (and its mean loss
    at most the reference's mean itself). Where that room is below ``|d|``, an
    interval centred on the paper's effect is out of reach, and "smaller than the
    paper" or "no effect of the paper's size" on points would be forced by the
    ceiling rather than found. Only claims judged on both scales
    (:attr:`Claim.on_errors`), with a stated effect and the reference's readouts,
    can bind."""
    if claim.on_errors is None or claim.effect is None or not paired.references:
        return False
    room = 100 - paired.reference_mean if claim.sign > 0 else paired.reference_mean
    return room < abs(claim.effect)


def judge(claim: Claim, paired: Paired) -> Verdict:
    """The one verdict function: ``claim`` judged on ``paired`` (``arm - reference`` by seed), on points and, for a
    claim with the paper's two numbers, on the error scale (:meth:`Paired.log_error_ratios` against
    :attr:`Claim.paper_log_error_ratio`); the error scale decides where :func:`ceiling_binds`, points elsewhere."""
    ratio = paired.mean / claim.effect if claim.effect and claim.kind != "equivalence" else math.nan
    p = paired.p_equivalent(claim.margin) if claim.kind == "equivalence" else paired.p_against(0.0)
    points = verdict_word(claim, paired.lo, paired.hi, paired.n)
    on_errors = claim.on_errors
    if on_errors is None or len(paired.references) != paired.n:
        return Verdict(claim, paired, points, ratio, p, points)
    errors = paired.log_error_ratios()
    error_word = verdict_word(on_errors, errors.lo, errors.hi, errors.n)
    if ceiling_binds(claim, paired):
        others = [paired.log_error_ratios(ERROR_FLOOR * f) for f in FLOOR_FACTORS]  # the floor's rule, tried
        sensitive = any(verdict_word(on_errors, e.lo, e.hi, e.n) != error_word for e in others)
        return Verdict(claim, paired, error_word, ratio, errors.p_against(0.0), points, errors, error_word, ERRORS,
                       sensitive, tuple(e.p_against(0.0) for e in others))
    return Verdict(claim, paired, points, ratio, p, points, errors, error_word, POINTS)


def verdict_word(claim: Claim, lo: float, hi: float, n: int) -> str:
    """:func:`judge`'s word for the closed interval [lo, hi] of ``arm - reference`` over ``n`` seeds."""
    if n < MIN_SEEDS or math.isnan(lo) or math.isnan(hi):
        return UNDECIDED
    if claim.kind == "equivalence":
        m = claim.margin
        if -m <= lo and hi <= m:
            return EQUIVALENT
        return NOT_EQUIVALENT if lo > m or hi < -m else UNDECIDED
    lo, hi = sorted((claim.sign * lo, claim.sign * hi))  # on the paper's side: a gain the paper reports is > 0
    if claim.effect is None:
        return MATCHES if lo > 0 else OPPOSITE if hi < 0 else UNDECIDED
    d = abs(claim.effect)
    if hi < 0:
        return OPPOSITE
    if lo > 0:
        return SMALLER if hi < d else LARGER if lo > d else MATCHES
    return NO_EFFECT if hi < d else UNDECIDED


def labelled(word: str, scale: str = POINTS, floor_sensitive: bool | str = False) -> str:
    """A verdict word as a reader sees it: the word, and " on the error scale" where the error scale decided it
    (:attr:`Verdict.scale`), so that a verdict the ceiling moved off points says so; ", sensitive to the error
    floor" where a floor of half or twice the rule's gives another word (:attr:`Verdict.floor_sensitive`; a CSV's
    "yes" counts)."""
    out = word + ON_ERRORS if scale == ERRORS else word
    return out + FLOOR_SENSITIVE if floor_sensitive in (True, "yes") else out


SIGN_ONLY = " (sign only)"  # a sanity check's verdict (Table 1: above or below the random-init encoder) weighs no size


OWN_SIDES = {1: "higher", -1: "lower"}  # a decided comparison of the book's own (``own``): right against left


def row_label(row) -> str:
    """:func:`labelled` of a results row (a CSV's or a comparison's): its ``verdict``, ``scale`` and
    ``floor_sensitive``; a sanity check's decided verdict (``kind`` "sanity": only which side of the random-init
    encoder, no effect size) says so; a comparison of the book's own (``own``) reads only its side, higher or lower
    (:data:`OWN_SIDES`), the paper having no claim to match."""
    if row.get("own") and side(row["verdict"]):
        return OWN_SIDES[side(row["verdict"])]
    out = labelled(row["verdict"], row.get("scale", ""), row.get("floor_sensitive", ""))
    return out + SIGN_ONLY if row.get("kind") == "sanity" and side(row["verdict"]) else out


def side(word: str) -> int:
    """+1 for a verdict that sees the paper's direction (:data:`SEEN`: matches, larger, smaller), -1 for
    opposite, 0 for the rest (:data:`WORDS`); a word that is no verdict is a ValueError."""
    _check_word("side", word)
    return 1 if word in SEEN else -1 if word == OPPOSITE else 0


def decided(word: str) -> bool:
    """Whether a verdict decides the claim one way or the other (not undecided, not run or a baseline); a word that
    is no verdict (:data:`WORDS`) is a ValueError."""
    _check_word("decided", word)
    return word not in (UNDECIDED, BASELINE, NOT_RUN, "")


def _check_word(caller: str, word: object) -> None:
    if word not in WORDS:
        raise ValueError(f"{caller}: {word!r} is no verdict word: pass a verdict column's word, one of {WORDS} "
                         "(verdicts.WORDS; labelled() adds its suffixes for readers only).")


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg q-values of ``p_values`` (same order); NaN p-values stay NaN and are not counted in the
    family's size; a p-value outside [0, 1] is a ValueError. q_(i) = min over j >= i of p_(j) * m / j, capped at 1
    (Benjamini & Hochberg 1995, the step-up procedure)."""
    if bad := [p for p in p_values if not (math.isnan(p) or 0 <= p <= 1)]:
        raise ValueError(f"benjamini_hochberg: p-values {bad} lie outside [0, 1]: pass probabilities (Paired.p_against's, "
                         "or Verdict.p), NaN for a comparison with none.")
    ranked = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    m, q, running = len(ranked), [math.nan] * len(p_values), 1.0
    for rank in range(m, 0, -1):
        p, i = ranked[rank - 1]
        running = min(running, p * m / rank)
        q[i] = running
    return q


def after_bh(verdict: Verdict, q: float, alpha: float = ALPHA) -> str:
    """The verdict read at the Benjamini-Hochberg level: a verdict that rests on excluding 0 (matches, larger,
    smaller, opposite) or on lying within the margin (equivalent) and whose ``q`` is not below ``alpha`` no longer
    excludes it; it reads ``no effect of the paper's size`` where the interval (on the scale that decided) still
    lies wholly below the paper's effect, else ``undecided``. Other verdicts, and NaN ``q``, are unchanged."""
    word = verdict.word
    if math.isnan(q) or q < alpha:
        return word
    if word == EQUIVALENT:
        return UNDECIDED
    if word in (*SEEN, OPPOSITE):
        c, p = verdict.deciding
        hi = max(c.sign * p.lo, c.sign * p.hi)
        return NO_EFFECT if c.effect is not None and hi < abs(c.effect) else UNDECIDED
    return word
