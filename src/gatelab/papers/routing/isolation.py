"""Paper 003, the linear net's zero-shot threshold: which setting moves it (issue #21).

At the reduced scale the untrained pathways' error meets the trained error at K/M = 0.60 (within
2 s.e.), against the paper's ≈0.40 (Fig 7). The settings that differ from the paper's are varied
one at a time from a base setting: M, the epochs, the number of training images, the step size and the
decoders' initialisation (``arch.decoder_fan``: Xavier per decoder, the paper's text, or over the
(M, h, 10) tensor, the authors' code);
a setting that changes several at once (M=40 with more images: the paper's direction) is listed after.

The base is found from the runs: the setting from which the most others differ in exactly one of
:data:`FACTORS`. Each setting's threshold is read from its K sweep (gain 1) by the one rule of
:mod:`gatelab.papers.thresholds`: the K/M at which the gap (untrained − trained test error) falls to
:data:`GAP_LEVEL` point, interpolated with log(gap) linear in K/M between the two K values that bracket
it (extrapolated, and marked so, when none do), with its interval over seeds.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Optional

import pandas as pd

from gatelab.core.results import git_commit
from gatelab.papers import report, tables, thresholds
from gatelab.papers.thresholds import crossing as gap_crossing  # noqa: F401 (the rule's point estimate)
from gatelab.papers.routing.table import PAPER_ZERO_SHOT, REGIME_TITLES, gap_se, scan, sweep_threshold, table, with_fan

FACTORS = ("M", "epochs", "limits", "lr", "decoder_fan")
FIXED = ("task", "regime", "gain", "h")
GAP_LEVEL = thresholds.LEVEL  # percentage points of test error


def _settings(df: pd.DataFrame) -> pd.DataFrame:
    return df[list(FIXED + FACTORS)].drop_duplicates().reset_index(drop=True)


def _differ(a: pd.Series, b: pd.Series) -> Optional[list[str]]:
    """The factors in which settings ``a`` and ``b`` differ; None when their task, regime, gain or h do."""
    return [f for f in FACTORS if a[f] != b[f]] if all(a[f] == b[f] for f in FIXED) else None


def _values(setting: pd.Series, factors: list[str]):
    """A setting's value of one factor, or its values of several joined (``40, 12000/1000``)."""
    return setting[factors[0]] if len(factors) == 1 else ", ".join(str(setting[f]) for f in factors)


def isolation(df: pd.DataFrame) -> pd.DataFrame:
    """One line per setting of the gain-1 K sweeps: the base first, then each variant, named by the
    factors it changes (``M + limits`` for a setting that changes two at once)."""
    df = df[(df.gain == 1.0) & (df.n > 0)]
    settings = _settings(df)
    if not len(settings):
        return pd.DataFrame()
    one_off = [sum(len(_differ(s, t) or ()) == 1 for _, t in settings.iterrows()) for _, s in settings.iterrows()]
    # ties (two settings, one factor apart) go to the paper's decoder init, then to the first found
    base = settings.iloc[max(range(len(settings)), key=lambda i: (one_off[i], settings.decoder_fan.iloc[i] == "per_decoder", -i))]
    lines = []
    for _, s in settings.iterrows():
        diff = _differ(s, base)
        if diff is None:
            continue
        g = df[(df[list(FIXED + FACTORS)] == s[list(FIXED + FACTORS)]).all(axis=1)].sort_values("K_over_M")
        t = sweep_threshold(g)
        crossing, extrapolated = (t.point, t.extrapolated) if t else (math.nan, False)
        line = {"factor": " + ".join(diff) or "base", "value": _values(s, diff), "base_value": _values(base, diff),
                **{f: s[f] for f in FIXED + FACTORS},
                "points": "; ".join(f"{km:.2f}: {gap:.2f} ± {se:.2f}" for km, gap, se in zip(g.K_over_M, g.gap, gap_se(g))),
                "n": report.joined(g.n), "err_trained": g.err_trained.mean(),
                "k_over_m_at_gap": crossing, "extrapolated": extrapolated,
                "k_over_m_lo": t.lo if t else math.nan, "k_over_m_hi": t.hi if t else math.nan,
                "interval": t.interval() if t else "no interval",
                "verdict": thresholds.verdict(t, PAPER_ZERO_SHOT.get(s.regime, math.nan)) if t else "no result",
                "max_k_over_m": float(g.K_over_M.max()), "paper": PAPER_ZERO_SHOT.get(s.regime, math.nan)}
        lines.append(line)
    out = pd.DataFrame(lines)
    out["shift"] = out.k_over_m_at_gap - out[out.factor == "base"].k_over_m_at_gap.iloc[0]
    return out.sort_values(["factor", "value"], key=lambda c: c.map(lambda v: (v != "base", " + " in v, str(v)))
                           if c.name == "factor" else c.astype(str)).reset_index(drop=True)


def render(iso: pd.DataFrame, rows: list[dict], command: str) -> str:
    nets = " and ".join(sorted({REGIME_TITLES.get(r, r) for r in iso.regime}))
    out = [f"# Routing networks (paper 003): what moves the {nets} net's zero-shot threshold", "",
           "Gap = untrained − trained test error (points, mean ± s.e. over seeds) at each K/M run; the threshold "
           f"as K/M where the gap falls to {GAP_LEVEL:g} point (log-linear between the bracketing K; * extrapolated) "
           f"and its {thresholds.CONFIDENCE:.0%} interval over seeds (the rule of `gatelab.papers.thresholds`). "
           "One setting changed at a time from the base (first line), "
           "then any that change several; shift: the change of the first measure from the base's.", ""]
    out.append(tables.markdown(pd.DataFrame([
        {"factor": r.factor, "base → variant": "—" if r.factor == "base" else f"{r.base_value} → {r.value}",
         "task": r.task, "regime": r.regime, "n": r.n, "err trained": f"{r.err_trained:.2f}", "gap at K/M": r.points,
         "K/M at gap 1": "—" if math.isnan(r.k_over_m_at_gap) else f"{r.k_over_m_at_gap:.2f}{'*' if r.extrapolated else ''}",
         "shift": "" if r.factor == "base" or math.isnan(r.shift) else f"{r.shift:+.2f}", "interval": r.interval,
         "paper": f"≈{r.paper:.2f}", "verdict": r.verdict} for r in iso.itertuples()])))
    base = iso[iso.factor == "base"].iloc[0]
    out += ["", f"Base: M={base.M}, {base.epochs} epochs, {base.limits} train/test images, lr {base.lr:g}, "
            f"h={base.h}, gain {base.gain:g}, decoders initialised {base.decoder_fan}."]
    runs = [report.Run(r["path"], r["status"], ("routing", "sgd", r["task"]), r["regime"], r["lr"], r["seed"], None,
                       r["epochs"], (None, None), r["finished_at"], r["commit"], r["device"], {}, None, None) for r in rows]
    out += ["", "## Provenance", *report.provenance(runs, command, [
        f"M {report.joined(iso.M)}, epochs {report.joined(iso.epochs)}, images {report.joined(iso.limits)}, "
        f"lr {report.joined(iso.lr)}"])]
    return "\n".join(out) + "\n"


def _points(text: str) -> tuple[list[float], list[float], list[float]]:
    """(K/M, gap, s.e.) of a line's ``points``: ``0.40: 6.61 ± 1.16; 0.50: 1.30 ± 0.36``."""
    pts = [re.fullmatch(r"\s*([\d.]+): ([-\d.]+) ± ([\d.nan]+)\s*", p) for p in str(text).split(";")]
    return ([float(m[1]) for m in pts if m], [float(m[2]) for m in pts if m], [float(m[3]) for m in pts if m])


def rejudged(out: Path) -> pd.DataFrame:
    """A previous render's ``isolation.csv`` judged by today's threshold rule (its runs made elsewhere):
    each line's threshold and interval from its points' mean gap ± s.e. over its seeds."""
    iso = with_fan(pd.read_csv(Path(out) / "isolation.csv"))
    iso = iso.drop(columns=[c for c in ("k_over_m_2se",) if c in iso]).astype({"value": object, "base_value": object})
    iso[["value", "base_value"]] = iso[["value", "base_value"]].where(iso[["value", "base_value"]].notna(), "")
    judged = []
    for r in iso.itertuples():
        x, g, se = _points(r.points)
        t = thresholds.threshold(x, g, se, [int(r.n)] * len(x))
        judged.append({"k_over_m_at_gap": t.point, "extrapolated": t.extrapolated, "k_over_m_lo": t.lo,
                       "k_over_m_hi": t.hi, "interval": t.interval(), "verdict": thresholds.verdict(t, r.paper)})
    iso = pd.concat([iso.drop(columns=[c for c in judged[0] if c in iso]), pd.DataFrame(judged)], axis=1)
    iso["shift"] = iso.k_over_m_at_gap - iso[iso.factor == "base"].k_over_m_at_gap.iloc[0]
    return iso


def write_isolation(runs_dir: Path, out: Path, command: str = "") -> Optional[pd.DataFrame]:
    """``isolation.{md,csv}`` in ``out`` from the routing runs below ``runs_dir``; with none there and a
    previous render in ``out``, that render judged again by today's rule (:func:`rejudged`), its
    provenance kept."""
    rows, _ = scan(runs_dir)
    md = Path(out) / "isolation.md"
    if not rows and (Path(out) / "isolation.csv").is_file():
        iso = rejudged(out)
        before = md.read_text().partition("## Provenance\n")[2] if md.is_file() else ""
        # an earlier re-judgement is superseded by this one: judging twice gives the same bytes
        before = "".join(ln for ln in before.splitlines(keepends=True) if not ln.startswith("- re-judged by"))
        text = render(iso, [], command).partition("## Provenance\n")[0] + "## Provenance\n" + (
            f"- re-judged by `{command}` from the previous isolation.csv alone (no runs below {runs_dir}), code "
            f"commit {git_commit() or '?'}; the render it came from:\n" + before)
        report.write_outputs(out, "isolation", iso, {"md": text})
        return iso
    iso = isolation(table(rows))
    if not len(iso):
        raise SystemExit(f"no gain-1 routing K sweeps below {runs_dir}")
    report.write_outputs(out, "isolation", iso, {"md": render(iso, rows, command)})
    return iso
