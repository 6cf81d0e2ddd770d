"""Every statistical test a verdict uses, in one place, on scipy.stats and statsmodels (issue #47).

Cells are per-seed values (a list) or a published mean ± std (:meth:`Cell.published`, the papers' ddof=0 over
their runs). All tests are Welch's (unequal variances): the seeds of two regimes are independent samples
with their own spread.

- :func:`above` (an ordering A > B): one-sided Welch t-test, ``scipy.stats.ttest_ind_from_stats``.
- :func:`no_difference` (what an ordering's control must show): two-sided Welch; the control behaves only
  when no difference shows in *either* direction (p >= alpha). A one-sided control would pass a pair that
  differs strongly the other way.
- :func:`equivalent` (A ≈ B within ± margin, where the paper says "≈" or "no significant difference"): TOST,
  two one-sided Welch tests against -margin and +margin (``scipy.stats.ttest_ind_from_stats`` with the mean
  shifted); equivalent when both reject (p = the larger). Absence of a difference is not equivalence.
- :func:`holm`: the several claims of one item, Holm's step-down (``statsmodels.stats.multitest.multipletests``).

scipy is the standard numerical library of the stack; statsmodels is used for the one procedure scipy lacks
(Holm), so that no multiple-testing rule is written here by hand.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence, Union

from scipy import stats as st

ALPHA = 0.05  # the level of every test, before Holm's correction across an item's claims


@dataclass(frozen=True)
class Cell:
    """A cell's mean, sample std (ddof=1) and number of runs."""
    mean: float
    std: float
    n: int

    @staticmethod
    def of(xs: Sequence[float]) -> "Cell":
        xs = [float(x) for x in xs]
        m = sum(xs) / len(xs)
        return Cell(m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else math.nan, len(xs))

    @staticmethod
    def published(mean: float, std: float, n: int = 5) -> "Cell":
        """A paper's mean ± std over ``n`` runs, its std taken as ddof=0 (numpy's default), as a sample std."""
        return Cell(float(mean), float(std) * math.sqrt(n / (n - 1)), n)


Data = Union[Sequence[float], Cell]


def cell(x: Data) -> Cell:
    return x if isinstance(x, Cell) else Cell.of(list(x))


@dataclass(frozen=True)
class Result:
    """A test's outcome: the difference of means, its standard error (Welch), the p-value and whether it
    rejects its null at ``alpha``."""
    test: str  # above | no_difference | equivalent
    diff: float
    se: float
    p: float
    alpha: float = ALPHA
    margin: float = math.nan

    @property
    def rejects(self) -> bool:
        return self.p < self.alpha


def _se(a: Cell, b: Cell) -> float:
    return math.sqrt(a.std ** 2 / a.n + b.std ** 2 / b.n)


def _welch(a: Cell, b: Cell, shift: float = 0.0, alternative: str = "two-sided") -> float:
    """Welch's t-test p-value of mean(a) - mean(b) against ``shift``. Two cells without spread (every seed the
    same value) give p 0 or 1 by the sign of the difference, as the limit of the test."""
    if _se(a, b) == 0:
        d = a.mean - b.mean - shift
        return {"greater": float(d <= 0), "less": float(d >= 0), "two-sided": float(d == 0)}[alternative]
    return float(st.ttest_ind_from_stats(a.mean - shift, a.std, a.n, b.mean, b.std, b.n, equal_var=False,
                                         alternative=alternative).pvalue)


def above(a: Data, b: Data, alpha: float = ALPHA) -> Result:
    """A > B: one-sided Welch; holds when it rejects mean(A) <= mean(B)."""
    a, b = cell(a), cell(b)
    return Result("above", a.mean - b.mean, _se(a, b), _welch(a, b, alternative="greater"), alpha)


def no_difference(a: Data, b: Data, alpha: float = ALPHA) -> Result:
    """Two-sided Welch. A control that must show no order *behaves* when this does not reject (``not rejects``)."""
    a, b = cell(a), cell(b)
    return Result("no_difference", a.mean - b.mean, _se(a, b), _welch(a, b), alpha)


def equivalent(a: Data, b: Data, margin: float, alpha: float = ALPHA) -> Result:
    """TOST: |mean(A) - mean(B)| < margin, two one-sided Welch tests; holds when both reject (p = the larger)."""
    a, b = cell(a), cell(b)
    lower = _welch(a, b, shift=-margin, alternative="greater")
    upper = _welch(a, b, shift=margin, alternative="less")
    return Result("equivalent", a.mean - b.mean, _se(a, b), max(lower, upper), alpha, margin)


def holm(ps: Sequence[float], alpha: float = ALPHA) -> list[float]:
    """Holm-adjusted p-values of an item's claims (statsmodels); compare each with ``alpha``."""
    if not ps:
        return []
    from statsmodels.stats.multitest import multipletests
    return [float(p) for p in multipletests(list(ps), alpha=alpha, method="holm")[1]]


def nearer(a: Data, b: Data, c: Data, alpha: float = ALPHA) -> Result:
    """A nearer B than C, by distance: |mean(A) - mean(C)| - |mean(A) - mean(B)| > 0. With the signs of the two
    differences fixed at their observed values it is a linear contrast of three independent means; its t has
    Welch-Satterthwaite degrees of freedom (``scipy.stats.t``), one-sided."""
    a, b, c = cell(a), cell(b), cell(c)
    sc, sb = math.copysign(1, a.mean - c.mean), math.copysign(1, a.mean - b.mean)
    weights = ((sc - sb, a), (sb, b), (-sc, c))  # D = (sc - sb) a + sb b - sc c
    d = sum(w * x.mean for w, x in weights)
    parts = [(w * x.std) ** 2 / x.n for w, x in weights if w]
    se = math.sqrt(sum(parts))
    if se == 0:
        return Result("nearer", d, 0.0, float(d <= 0), alpha)
    df = se ** 4 / sum(p ** 2 / (x.n - 1) for p, (w, x) in zip(parts, [wx for wx in weights if wx[0]]))
    return Result("nearer", d, se, float(st.t.sf(d / se, df)), alpha)


def outside(a: Data, b: Data, margin: float, alpha: float = ALPHA) -> Result:
    """The opposite of an equivalence: |mean(A) - mean(B)| > margin, shown by the one-sided Welch test on the side
    the difference lies (mean(A) - mean(B) > +margin, or < -margin); what makes an equivalence *contradicted*."""
    a, b = cell(a), cell(b)
    d = a.mean - b.mean
    p = _welch(a, b, shift=margin, alternative="greater") if d >= 0 else \
        _welch(a, b, shift=-margin, alternative="less")
    return Result("outside", d, _se(a, b), p, alpha, margin)


def reverse(r: Result, a: Data, b: Data, c: Data = None) -> Result:
    """The test of the opposite of an ordering (B > A) or of a ``nearer`` (A nearer C than B): what makes the
    claim *contradicted* when it rejects."""
    if r.test == "nearer":
        x = nearer(a, c, b, r.alpha)
        return Result("reverse", x.diff, x.se, x.p, r.alpha)
    x = above(b, a, r.alpha)
    return Result("reverse", x.diff, x.se, x.p, r.alpha)


# -- power (statsmodels.stats.power): what a test at n seeds per cell can show --

MAX_SEEDS = 1000  # the largest n the power functions search


def effect(r: Result, n: int) -> float:
    """Cohen's d of a two-cell Welch result at ``n`` seeds per cell, signed as the claim reads it (negative: the other
    way): the difference over the pooled sd, the sd recovered from the standard error (se = sd * sqrt(2 / n))."""
    sd = r.se * math.sqrt(n / 2)
    return math.copysign(math.inf, r.diff) if sd == 0 else r.diff / sd


def power_of(d: float, n: int, alpha: float = ALPHA) -> float:
    """One-sided two-sample t-test power at Cohen's ``d`` and ``n`` per cell (statsmodels' TTestIndPower)."""
    from statsmodels.stats.power import TTestIndPower
    if n < 2:
        return 0.0
    if math.isinf(d):
        return 1.0 if d > 0 else 0.0
    return float(TTestIndPower().power(effect_size=d, nobs1=n, alpha=alpha, ratio=1.0, alternative="larger"))


def seeds_for(d: float, alpha: float = ALPHA, power: float = 0.8) -> int:
    """The fewest seeds per cell that give ``power`` at Cohen's ``d`` (one-sided; :func:`power_of`, which rises with
    n, searched by bisection); :data:`MAX_SEEDS` + 1 when out of reach."""
    if math.isinf(d) and d > 0:
        return 2
    if d <= 0 or power_of(d, MAX_SEEDS, alpha) < power:
        return MAX_SEEDS + 1
    lo, hi = 2, MAX_SEEDS  # power_of(hi) >= power
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if power_of(d, mid, alpha) < power else (lo, mid)
    return lo


def tost_power(diff: float, sd: float, margin: float, n: int, alpha: float = ALPHA) -> float:
    """TOST's power at a true difference ``diff`` and per-seed ``sd``, ``n`` per cell: both one-sided tests must
    reject, so power >= P(lower rejects) + P(upper rejects) - 1 (each from TTestIndPower); that bound, at least 0."""
    if n < 2 or abs(diff) >= margin:
        return 0.0
    if sd == 0:
        return 1.0
    lo = power_of((margin + diff) / sd, n, alpha)
    hi = power_of((margin - diff) / sd, n, alpha)
    return max(0.0, lo + hi - 1.0)


def tost_seeds_for(diff: float, sd: float, margin: float, alpha: float = ALPHA, power: float = 0.8) -> int:
    """The fewest seeds per cell whose :func:`tost_power` reaches ``power``; :data:`MAX_SEEDS` + 1 when out of
    reach (a difference at or beyond the margin never is)."""
    if abs(diff) >= margin:
        return MAX_SEEDS + 1
    for n in range(2, MAX_SEEDS + 1):
        if tost_power(diff, sd, margin, n, alpha) >= power:
            return n
    return MAX_SEEDS + 1
