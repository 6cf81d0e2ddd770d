"""The rule for a threshold read off a sweep (issue #39, ``gatelab.papers.thresholds``): the point comes
from the means and does not move with more seeds, the interval narrows with them and covers the true
threshold, and the verdict rejects its controls (a sweep whose gap never closes; too few seeds)."""
import math

import numpy as np
import pytest

from gatelab.papers import thresholds as th

KM = [0.3, 0.4, 0.5, 0.6]


def true_gap(km):
    """A gap falling tenfold per 0.1 of K/M through 1 point at K/M 0.45."""
    return 10 ** (-(np.asarray(km) - 0.45) / 0.1)


def seeds_sweep(rng, n, noise=0.4):
    """Per point: the mean and s.e. of ``n`` seeds' gaps, each the true gap plus N(0, noise²)."""
    draws = true_gap(KM)[None, :] + rng.normal(0, noise, size=(n, len(KM)))
    return draws.mean(0), draws.std(0, ddof=1) / math.sqrt(n)


def test_the_point_is_the_log_linear_crossing_of_the_means_and_the_se_only_widens_the_interval():
    g = list(true_gap(KM))
    narrow = th.threshold(KM, g, [0.05] * 4, [10] * 4)
    wide = th.threshold(KM, g, [0.3] * 4, [10] * 4)
    assert narrow.point == wide.point == pytest.approx(0.45) and not narrow.extrapolated
    assert wide.lo < narrow.lo < 0.45 < narrow.hi < wide.hi
    assert th.verdict(narrow, 0.45) == "confirmed"
    assert th.verdict(narrow, 0.33) == "contradicted"  # 0.33 < lo − 0.07


def test_more_seeds_narrow_the_interval_and_it_covers_the_true_threshold():
    rng = np.random.default_rng(0)
    widths, covered = {3: [], 12: []}, 0
    for rep in range(60):
        for n in (3, 12):
            mean, se = seeds_sweep(rng, n)
            t = th.threshold(KM, list(mean), list(se), [n] * 4, draws=800, seed=rep)
            widths[n].append(min(t.hi, 0.8) - max(t.lo, 0.2))
            if n == 12:
                covered += t.lo <= 0.45 <= t.hi
    assert np.median(widths[12]) < 0.6 * np.median(widths[3])
    assert covered >= 0.85 * 60  # a 95% interval; 60 sweeps: at least 51


def test_a_sweep_whose_gap_never_closes_is_rejected_not_extrapolated_into_confirmation():
    """The control: untrained pairs that never generalise (a gap of 20-30 points at every K); the point
    extrapolates, but every draw lies beyond the sweep, so the paper's 0.40 is outside."""
    t = th.threshold(KM, [30.0, 27.0, 24.0, 21.0], [0.5] * 4, [3] * 4)
    assert t.extrapolated and math.isinf(t.lo) and math.isinf(t.hi)
    assert th.verdict(t, 0.40) == "contradicted" and t.interval() == "[> 0.60]"


def test_an_interval_too_wide_to_decide_is_not_shown_not_confirmed():
    """Three noisy seeds: the paper's value lies inside the interval, and so would almost any other."""
    t = th.threshold(KM, list(true_gap(KM)), [3.0, 2.0, 0.8, 0.4], [3] * 4)
    assert t.holds(0.45) and t.width() > th.DECIDES_WITHIN + th.READ_PRECISION
    assert th.verdict(t, 0.45) == "not shown"
    assert th.text("not shown", t.interval()).startswith("qualitative: not shown (test:")


def test_a_gap_already_below_the_level_at_the_first_point_leaves_the_lower_end_open():
    t = th.threshold(KM, [0.5, 0.3, 0.2, 0.1], [0.05] * 4, [5] * 4)
    assert t.point == 0.3 and t.extrapolated and t.interval().startswith("[≤ 0.30")
    assert t.holds(0.1) and th.verdict(t, 0.1) == "not shown"  # below the sweep: nothing measured there


def test_the_toy_fig5c_row_is_judged_by_the_one_rule_at_its_own_scale():
    """Paper 003 Fig 5c (the toy): the same rule, its level 1% of a zero output's pair error. A sweep crossing
    at the paper's K/M is confirmed; the same sweep moved by two K steps is contradicted; a summary without the rule's
    inputs is not judged."""
    from gatelab.papers.routing import verdicts
    km = [k / 10 for k in range(1, 11)]
    zero = 122.0

    def summary(shift):
        gap = [zero * 0.01 * 10 ** (-(k - 0.40 - shift) / 0.1) for k in km]
        return {"fig5c_K_over_M": km, "fig5c_trained_err": [1e-5] * 10,
                "fig5c_untrained_err": [g + 1e-5 for g in gap[:-1]] + [math.nan],
                "fig5c_gap_se": [0.05 * g for g in gap], "fig5c_nets": 3, "fig5c_zero_output_err": zero}
    assert verdicts._fig5c(summary(0.0)).verdict.startswith("qualitative: confirmed")
    assert "K/M 0.40" in verdicts._fig5c(summary(0.0)).ours and "1.22 (1% of ½‖Y‖²)" in verdicts._fig5c(summary(0.0)).ours
    assert verdicts._fig5c(summary(0.2)).verdict.startswith("qualitative: contradicted")
    old = {k: v for k, v in summary(0.0).items() if k != "fig5c_gap_se"}
    assert verdicts._fig5c(old).verdict == "not judged"


def test_a_verdict_the_tolerances_own_precision_would_flip_is_borderline():
    """Issue #47: the paper's value read within ±0.05 (READ_WITHIN), itself known to ±0.02 (READ_PRECISION): a
    verdict that differs at ±0.03 and ±0.07 is borderline, named, neither confirmed nor contradicted. Issue #54: the
    cap on the interval's width (DECIDES_WITHIN, 0.2) is a margin too, known to the same ±0.02: an interval whose
    width lies within 0.18 .. 0.22 is borderline as well."""
    def t(lo, hi):
        return th.Threshold((lo + hi) / 2, False, lo, hi, 0.1, 0.9, 3)
    assert th.verdict(t(0.46, 0.50), 0.40) == "borderline"  # 0.40 lies within 0.07 of 0.46, not within 0.03
    assert th.verdict(t(0.50, 0.55), 0.40) == "contradicted"  # beyond even ±0.07
    assert th.verdict(t(0.38, 0.45), 0.40) == "confirmed"  # inside the interval itself
    assert th.text("borderline", "[0.46, 0.50]").startswith("borderline (test:")
    # the cap: 0.40 inside each interval; 0.17 wide decides at any cap in 0.18 .. 0.22, 0.23 wide at none,
    # 0.19 and 0.21 wide only at some
    assert th.verdict(t(0.30, 0.47), 0.40) == "confirmed"
    assert th.verdict(t(0.30, 0.49), 0.40) == "borderline"
    assert th.verdict(t(0.30, 0.51), 0.40) == "borderline"
    assert th.verdict(t(0.30, 0.53), 0.40) == "not shown"
    text = th.text("borderline", "[0.30, 0.49]")
    assert "at ± 0.03 .. 0.07, or at a cap of 0.18 .. 0.22" in text
