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
