"""The rule for a threshold read off a sweep (issue #39; ``docs/reproducing.md``): paper 003's zero-shot
K/M (Figs 7-9; its toy Fig 5c) and any other "where does the curve reach X" claim.

The threshold is where an effect size fixed in advance is reached: the K/M at which the gap (untrained −
trained test error) falls to :data:`LEVEL` point, with log(gap) linear in the swept value between the two
runs that bracket it (:func:`crossing`). It is read from the seeds' means, so more seeds do not move it
on average; its uncertainty is an interval over seeds: a parametric bootstrap that redraws each point's
mean gap from a Student t with n−1 degrees of freedom scaled by its standard error (the committed reports
hold each point's mean and s.e. over seeds; resampling 3 seeds has 10 distinct draws and no width when
they coincide). More seeds narrow the interval through the s.e. and the t's tails. A draw whose gap never
falls to the level within the sweep lies beyond it: the interval's upper end is then open (``> max``).
The verdict (:func:`verdict`): **agrees** when the paper's value lies in the interval widened by
:data:`READ_WITHIN` (the precision to which a threshold is read off the paper's figure) and the interval
is no wider than :data:`DECIDES_WITHIN`; **differs** when it lies outside, however wide; otherwise
**no evidence**: an interval that wide would hold almost any value, so it cannot agree (a test that
cannot fail).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

LEVEL = 1.0  # percentage points of test error: the effect size, fixed in advance
READ_WITHIN = 0.05  # K/M: the paper's "≈0.40" is read off a figure whose K grid steps by 0.1 (M=20, 40)
READ_PRECISION = 0.02  # K/M: how well READ_WITHIN itself is known; a verdict that flips within it is "borderline"
DECIDES_WITHIN = 0.2  # K/M: a wider interval (two K steps of M=20) cannot tell the paper's value from others
DRAWS = 4000
CONFIDENCE = 0.95


def _log_linear(x1: float, g1: float, x2: float, g2: float, level: float) -> float:
    """x where log(gap) falls to log(``level``) on the line through (x1, log g1) and (x2, log g2); gaps
    floored at 1e-3 (a gap of 0 has no logarithm); NaN when the two logs are equal."""
    l1, l2 = math.log(max(g1, 1e-3)), math.log(max(g2, 1e-3))
    return math.nan if l1 == l2 else x1 + (l1 - math.log(level)) / (l1 - l2) * (x2 - x1)


def crossing(xs: Sequence[float], gaps: Sequence[float], level: float = LEVEL) -> tuple[float, bool]:
    """(x where the gap falls to ``level``, extrapolated?) from points sorted by x; log(gap) is taken
    linear in x between neighbours; past the last pair, extrapolated from it. NaN with fewer than two
    points; the first x (extrapolated) when the gap is already at or below ``level`` there."""
    pts = sorted(zip(xs, gaps))
    if len(pts) < 2:
        return math.nan, False
    if pts[0][1] <= level:
        return pts[0][0], True  # at or below the smallest x run
    pair = next(((a, b) for a, b in zip(pts, pts[1:]) if a[1] > level >= b[1]), None)
    (x1, g1), (x2, g2) = pair or pts[-2:]
    return _log_linear(x1, g1, x2, g2, level), pair is None


def _bracketed(xs: np.ndarray, draws: np.ndarray, level: float) -> np.ndarray:
    """Each draw's (row's) crossing inside the sweep: the first x when the gap is at or below ``level``
    there, +inf when no point falls to it (beyond the sweep), else log-linear between the bracketing points."""
    below = draws <= level
    first = below.argmax(axis=1)
    out = np.full(len(draws), math.inf)
    for i in np.unique(first[below.any(axis=1)]):  # one pass per bracketing pair, not per draw
        rows = below.any(axis=1) & (first == i)
        if i == 0:
            out[rows] = xs[0]
            continue
        l1, l2 = np.log(np.maximum(draws[rows, i - 1], 1e-3)), np.log(np.maximum(draws[rows, i], 1e-3))
        out[rows] = xs[i - 1] + (l1 - math.log(level)) / (l1 - l2) * (xs[i] - xs[i - 1])
    return out


@dataclass(frozen=True)
class Threshold:
    """A sweep's threshold: ``point`` (from the means; NaN: fewer than two points), whether it was
    extrapolated past the sweep, and the ``CONFIDENCE`` interval [lo, hi] over seeds (``hi`` inf: more
    than the tail share of draws never reach the level within the sweep; ``lo`` equal to the first x:
    the level reached at or before the first point run)."""
    point: float
    extrapolated: bool
    lo: float
    hi: float
    x_min: float
    x_max: float
    seeds: int
    level: float = LEVEL  # the effect size the gap falls to, and its unit
    unit: str = "point"

    @property
    def open_below(self) -> bool:
        """The level reached at or before the first point in the lower tail: the interval reaches below the sweep."""
        return self.lo <= self.x_min

    def holds(self, paper: float, within: float = READ_WITHIN) -> bool:
        """The paper's value inside the interval widened by ``within`` (an open end is open)."""
        if math.isnan(self.lo):
            return False
        lo = -math.inf if self.open_below else self.lo
        return lo - within <= paper <= self.hi + within

    def width(self) -> float:
        """hi − lo; inf for an open upper end, and for an open lower end (the level reached at or before
        the first point: the interval reaches below the sweep)."""
        return math.inf if self.open_below or math.isinf(self.hi) else self.hi - self.lo

    def interval(self) -> str:
        if math.isnan(self.lo):
            return "no interval"
        if math.isinf(self.lo):
            return f"[> {self.x_max:.2f}]"  # nearly every draw: beyond the sweep
        lo = f"≤ {self.x_min:.2f}" if self.open_below else f"{self.lo:.2f}"
        hi = f"> {self.x_max:.2f}" if math.isinf(self.hi) else f"{self.hi:.2f}"
        return f"[{lo}, {hi}]"

    def words(self, what: str = "K/M") -> str:
        """``gap 1 point at K/M 0.44 (95% interval [0.41, 0.49], 3 seeds)``."""
        if math.isnan(self.point):
            return "no threshold (fewer than two points)"
        at = f"{self.point:.2f}" + (" (extrapolated)" if self.extrapolated else "")
        return (f"gap {self.level:.3g} {self.unit} at {what} {at} ({CONFIDENCE:.0%} interval {self.interval()}, "
                f"{self.seeds} seed{'s' if self.seeds != 1 else ''})")


def threshold(xs: Sequence[float], gaps: Sequence[float], ses: Sequence[float], n: Sequence[int],
              level: float = LEVEL, draws: int = DRAWS, seed: int = 0, unit: str = "point") -> Threshold:
    """The rule applied to a sweep: points ``xs`` with mean gap ± s.e. over ``n`` seeds each; ``level``
    in ``unit`` (a loss's own scale where the sweep has no error rate, e.g. paper 003's toy task)."""
    order = np.argsort(np.asarray(xs, dtype=float))
    x = np.asarray(xs, dtype=float)[order]
    g = np.asarray(gaps, dtype=float)[order]
    se = np.nan_to_num(np.asarray(ses, dtype=float)[order], nan=0.0)
    nn = np.asarray(n, dtype=int)[order]
    point, extrapolated = crossing(list(x), list(g), level)
    seeds = int(nn.min()) if len(nn) else 0
    if len(x) < 2:
        return Threshold(point, extrapolated, math.nan, math.nan, math.nan, math.nan, seeds, level, unit)
    rng = np.random.default_rng(seed)
    df = np.maximum(nn - 1, 1)
    t = rng.standard_t(df, size=(draws, len(x)))  # one t per point: each point's seeds are other nets
    sample = g + t * se
    cross = _bracketed(x, sample, level)
    tail = (1 - CONFIDENCE) / 2
    # order statistics, not interpolation: inf (beyond the sweep) sorts last and opens the upper end
    lo, hi = np.quantile(cross, tail, method="lower"), np.quantile(cross, 1 - tail, method="higher")
    return Threshold(point, extrapolated, float(lo), float(hi), float(x[0]), float(x[-1]), seeds, level, unit)


def verdict(t, value: float, margin: float = READ_WITHIN, precision: float = READ_PRECISION,
            decides: float = DECIDES_WITHIN) -> str:
    """The paper's ``value`` against a sweep's :class:`Threshold` ``t``: ``confirmed``
    (inside the interval ± ``margin``, the interval no wider than the cap ``decides``), ``contradicted`` (outside),
    ``not shown`` (inside a wider interval), ``borderline`` when the verdicts at ``margin`` ± ``precision`` or at the
    cap ± ``precision`` differ (issue #54: a cap is a margin too; its own precision must not decide it), ``no
    result`` without an interval (a sweep of one point)."""
    if math.isnan(t.lo):
        return "no result"

    def at(within: float, cap: float) -> str:
        if not t.holds(value, within):
            return "contradicted"
        return "confirmed" if t.width() <= cap else "not shown"
    edges = {at(margin + d, decides + e) for d in (-precision, precision) for e in (-precision, precision)}
    return "borderline" if len(edges) > 1 else at(margin, decides)


def text(word: str, interval: str, margin: float = READ_WITHIN, precision: float = READ_PRECISION,
         decides: float = DECIDES_WITHIN) -> str:
    """A threshold's verdict as the page words it (``qualitative: agrees (test: ...)``; no evidence says the
    interval is too wide to decide, borderline which tolerances flip it)."""
    test = f"the paper's value in the interval ± {margin:g}, the interval no wider than {decides:g}"
    if word == "not shown":
        return f"qualitative: not shown (test: {test}; the interval {interval} is wider: more seeds narrow it)"
    if word == "borderline":
        return (f"borderline (test: {test}; the interval {interval} gives another verdict at ± "
                f"{margin - precision:g} .. {margin + precision:g}, or at a cap of {decides - precision:g} .. "
                f"{decides + precision:g})")
    return f"qualitative: {word} (test: {test})"
