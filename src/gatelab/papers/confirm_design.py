"""The confirmation design (issue #54 §3): from the exploratory results, the seeds each claim's fresh runs need.

For an ordering or ``nearer``: the seeds per cell that give 80% power at its α (``statsmodels.stats.power``, from
the observed effect and spread, α divided by the item's number of claims as Holm's first step); for an equivalence
the seeds whose TOST power reaches 80% at the observed difference; for a threshold the seeds that bring the interval
under its cap less its precision; for a feature or a published mean ± std the recipe's own count. Where the number is
beyond the target's bound (:attr:`gatelab.papers.confirm_targets.Target.most`) the bound runs, and the claim can then be at
most "not shown". :func:`design` writes each claim's ``confirm:`` line into its ``claims.yaml``.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Optional

import yaml

from gatelab.papers import claims as claims_mod, outcomes, stats
from gatelab.papers.confirm_targets import TARGETS, Target
from gatelab.papers.preregistration import HELD_OUT


def _power_of(j) -> tuple[int, float]:
    """(seeds needed, Cohen's d or the difference) for one judged claim, at α over the claims of its item."""
    k = max(1, len([x for x in outcomes.RECORD if x.claim.item == j.claim.item]))
    alpha = j.test.alpha / k
    sd = j.test.se * math.sqrt(j.n / 2) if j.n else math.nan
    if j.claim.kind == "equivalence":
        return stats.tost_seeds_for(j.test.diff, sd, float(j.claim.margin), alpha), j.test.diff
    d = stats.effect(j.test, j.n) if j.test.diff > 0 else 0.0  # an effect the other way: no n shows the claim
    return stats.seeds_for(d, alpha), d


def needed() -> dict[str, tuple[int, str]]:
    """{claim id: (seeds needed, how)} from every exploratory result the page reads (outcomes.RECORD/THRESHOLDS)."""
    from gatelab.papers import page
    outcomes.RECORD.clear()
    outcomes.THRESHOLDS.clear()
    page.rows(page.REPORTS, confirmations=False)
    out: dict[str, tuple[int, str]] = {}
    for j in outcomes.RECORD:
        cid = j.claim.id.split("[")[0]
        n, d = _power_of(j)
        how = (f"TOST at Δ {d:+.2f}, n {j.n}" if j.claim.kind == "equivalence" else f"d {d:.2f} at n {j.n}")
        if cid not in out or n > out[cid][0]:
            out[cid] = (n, how)
    for c, t in outcomes.THRESHOLDS:
        w, cap = t.width(), float(c.decides_within) - float(c.precision)
        n = t.seeds if w <= cap else (stats.MAX_SEEDS + 1 if not math.isfinite(w) else math.ceil(t.seeds * (w / cap) ** 2))
        if c.id not in out or n > out[c.id][0]:
            out[c.id] = (max(2, n), f"interval {w:.3f} wide at {t.seeds} seeds, cap {cap:g}")
    return out


def _claims_of(t: Target) -> list:
    out = []
    for paper, item in t.items:
        out += [c for c in claims_mod.paper_claims(claims_mod.PACKAGES[paper]) if c.item == item and c.kind != "identity"]
    return out


def seeds_of(t: Target, need: dict) -> tuple[int, list[str]]:
    """(the seeds the target runs, one line per claim: needed, run, power)."""
    lines, run = [], t.least
    for c in _claims_of(t):
        n, how = need.get(c.id, (t.least, "a feature or published number: the recipe's count"))
        run = max(run, min(n, t.most))
        lines.append((c, n, how))
    out = []
    for c, n, how in lines:
        reach = "" if n <= run else f"; out of reach (bound {t.most}): at most not shown"
        out.append(f"  {c.id}: needs {n if n <= stats.MAX_SEEDS else '>' + str(stats.MAX_SEEDS)} ({how}); runs {run}{reach}")
    return run, out


def design(need: Optional[dict] = None, again: bool = False) -> dict[Path, int]:
    """Write each target's claims' ``confirm:`` lines into their claims.yaml (the text kept, one line added per
    claim); {file: claims written}. A claim that has one keeps it (``again``: replaced): a design once committed is
    what its runs are judged by, and rewriting it would make them rule after results."""
    need = needed() if need is None else need
    written: dict[Path, int] = {}
    for t in TARGETS:
        run, _ = seeds_of(t, need)
        for c in _claims_of(t):
            n, how = need.get(c.id, (t.least, "the recipe's count"))
            path = Path(claims_mod.__file__).parent / claims_mod.PACKAGES[next(p for p, i in t.items if i == c.item)] / "claims.yaml"
            line = (f"  confirm: {{from: {HELD_OUT}, seeds: {run}, needed: {min(n, stats.MAX_SEEDS + 1)}, "
                    f"basis: {yaml.safe_dump(how, default_style=chr(34), width=1000).strip()}}}")
            text = path.read_text()
            head = re.search(rf"^- id: {re.escape(c.id)}\n", text, re.M)
            if head is None:
                continue
            start = head.end()
            end = re.search(r"^(- id: |#|\s*$)", text[start:], re.M)
            body = text[start:start + (end.start() if end else len(text) - start)]
            if "\n  confirm: " in "\n" + body and not again:
                continue
            body = re.sub(r"^  confirm: .*\n", "", body, flags=re.M) + line + "\n"
            path.write_text(text[:start] + body + text[start + (end.start() if end else len(text) - start):])
            written[path] = written.get(path, 0) + 1
    return written
