"""Three outcomes of a confirmatory test (issue #54), read from the one interpreter's judged claims
(:func:`gatelab.papers.claims.judge`):

- **confirmed**: every counted claim of the item holds after Holm's correction, and every declared control is
  shown (a ``no_difference`` control by equivalence within its margin, TOST; never by a test that fails to
  reject);
- **contradicted**: the opposite is shown for a claim: an ordering significantly the other way, a ``nearer``
  significantly the other way, an equivalence whose difference lies significantly outside its margin (Holm over
  the item's tests of the opposite);
- **not shown**: neither; the sentence gives the power each undecided test had at the effect it observed
  (``statsmodels.stats.power``), and names a control not shown.

A threshold or a published mean ± std keeps its own rule (``thresholds.verdict``, ``claims.published``),
whose words map here by :data:`WORDS`. The page tallies these outcomes (:func:`gatelab.papers.page.outcome`).
"""
from __future__ import annotations

import math

from gatelab.papers import stats

CONFIRMED, CONTRADICTED, NOT_SHOWN = "confirmed", "contradicted", "not shown"
OUTCOMES = (CONFIRMED, CONTRADICTED, NOT_SHOWN)
# the words of the threshold, published and feature rules, as outcomes
WORDS = {"agrees": CONFIRMED, "within": CONFIRMED, "differs": CONTRADICTED, "off": CONTRADICTED,
         "no evidence": NOT_SHOWN, "borderline": "borderline", "no result": "no result"}

RECORD: list = []  # every Judged the interpreter made in this process, in order (confirm --dry-run reads them)
THRESHOLDS: list = []  # every (Claim, Threshold) the threshold rule judged in this process


def power_had(j) -> float:
    """The power the claim's test had at the effect it observed, with the seeds it had (``j.n``, the smallest
    cell's): one-sided Welch as a two-sample t; TOST for an equivalence."""
    t = j.test
    if j.n < 2 or not math.isfinite(t.se):
        return math.nan
    if j.claim.kind == "equivalence":
        return stats.tost_power(t.diff, t.se * math.sqrt(j.n / 2), float(j.claim.margin), j.n, t.alpha)
    return stats.power_of(stats.effect(t, j.n), j.n, t.alpha)


def summary(judged: list) -> tuple[str, str]:
    """(outcome, sentence) of one item's (or row's) judged claims: ``confirmed``, ``contradicted``, ``not shown``
    (see the module), or ``no result`` when nothing was judged. Counted: claims the paper's own numbers pass (or
    that have none to test them on)."""
    counted = [j for j in judged if j.paper_holds is not False]
    unbacked = [j.what() for j in judged if j.paper_holds is False]
    tail = f"; not counted, the paper's own numbers fail it: {'; '.join(unbacked)}" if unbacked else ""
    if not counted:
        return "no result", "nothing judged" + tail
    against = stats.holm([j.against.p if j.against is not None else 1.0 for j in counted])
    shown_against = [j for j, p in zip(counted, against) if p < j.test.alpha]
    blind = [j for j in counted if j.claim.control and not j.control_ok]
    held = sum(j.holds for j in counted)
    controls = "; ".join(dict.fromkeys(j.control_text() if j.control else f"{j.what()}: control missing"
                                       for j in counted if j.claim.control))
    head = f"{held} of {len(counted)} claims hold (Welch/TOST, Holm)"
    if shown_against:
        word = CONTRADICTED
        head += " and the opposite is shown for " + "; ".join(
            f"{j.what()} (Δ {j.test.diff:+.2f}, p {p:.3f} for the opposite, Holm)"
            for j, p in zip(counted, against) if p < j.test.alpha)
    elif held == len(counted) and not blind:
        word = CONFIRMED
    else:
        word = NOT_SHOWN
        undecided = [f"{j.what()}: Δ {j.test.diff:+.2f} ± {j.test.se:.2f} s.e., p {j.test.p:.3f} (Holm "
                     f"{j.p_holm:.3f}), power {power_had(j):.2f} at that effect" for j in counted if not j.holds]
        head += (f" (not shown: {'; '.join(undecided)})" if undecided else "") + \
            ("; control not shown" if blind else "")
    return word, head + (f"; controls: {controls}" if controls else "") + tail


def combine(words) -> str:
    """One outcome of several (an item's rows, lengths or panels): contradicted if any is, confirmed if all are,
    else not shown."""
    words = set(words)
    return CONTRADICTED if CONTRADICTED in words else CONFIRMED if words == {CONFIRMED} else NOT_SHOWN
