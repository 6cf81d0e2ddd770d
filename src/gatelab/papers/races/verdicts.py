"""Paper 004's rows of the page of what reproduces (:mod:`gatelab.papers.page`), and the generated
comparison in ``outputs/reports/races/SUMMARY.md``, read from its reports."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from gatelab.papers import claims, outcomes, report, tables
from gatelab.papers.races.table1 import _pm
from gatelab.papers.rows import Item, Row, feature, count_of, csv, first_csv, missing, nothing, runs_of

DROP_PAPER = 300  # "the loss drops around t=300" (Fig 1a; d=300, N=200, small init)


def _races(root: Path):
    return first_csv(root, (("races", "paper"), ("races-quick", "quick")), "table1.csv")


def sigma0(values: pd.Series) -> pd.Series:
    """σ0 from a table1.csv: renders before the fix wrote it with 4 decimals, 1e-5 as 0.0000."""
    return values.astype(float).where(values.astype(float) > 0, 1e-5)


def main_cells(df: pd.DataFrame) -> pd.DataFrame:
    """The grid's cells under the default choices (``main``) that the paper's Table 1 has."""
    df = df.assign(sigma0=sigma0(df.sigma0))
    return df[df.main.astype(bool) & df.paper_k.notna()].sort_values(["sigma0", "N", "tau"])


def comparisons(df: pd.DataFrame) -> list[dict]:
    """Per (σ0, N, τ): ours and the paper's k and Δacc (ours with ddof 0, as the paper's table) and the verdicts."""
    out = []
    for line in main_cells(df).itertuples():
        out.append({"sigma0": line.sigma0, "N": int(line.N), "tau": line.tau, "n": int(line.n),
                    "k": (line.k_mean, line.k_std0, line.paper_k, line.paper_k_std,
                          claims.published(line.k_mean, line.paper_k, line.paper_k_std, 1)),
                    "dacc": (line.dacc_mean, line.dacc_std0, line.paper_dacc, line.paper_dacc_std,
                             claims.published(line.dacc_mean, line.paper_dacc, line.paper_dacc_std, 1))})
    return out


def table1_block(root: Path) -> list[str]:
    """The Table 1 comparison of ``races/SUMMARY.md``: every cell, both numbers, the verdict by the one rule."""
    rel, _, df = _races(root)
    if df is None:
        return ["(no races/table1.csv)"]
    rows = comparisons(df)
    ks, ds = [r["k"][4] for r in rows], [r["dacc"][4] for r in rows]
    seeds = sorted({r["n"] for r in rows})
    out = [f"Ours: mean ± std over {','.join(map(str, seeds))} seeds (ddof 0, as the paper's table); the paper: "
           "mean ± std over its runs (N=4000: one run, no std). Verdict by the one rule: within when |ours − paper| ≤ "
           f"max(2 paper-std, 0.5), else off by n paper-std. k: {claims.tally(ks)}; Δacc: {claims.tally(ds)}.", ""]
    out += tables.lines(["σ₀", "N", "τ", "k ours", "k paper", "k verdict", "Δacc ours", "Δacc paper", "Δacc verdict"],
                        [[f"{r['sigma0']:g}", r["N"], f"{r['tau']:.2f}", _pm(r["k"][0], r["k"][1]),
                          _pm(r["k"][2], r["k"][3]), r["k"][4].text, _pm(r["dacc"][0], r["dacc"][1]),
                          _pm(r["dacc"][2], r["dacc"][3]), r["dacc"][4].text] for r in rows])
    off = [r for r in rows if r["k"][4].word == "off" or r["dacc"][4].word == "off"]
    out += ["", "Off by the rule: " + ("; ".join(
        f"σ₀={r['sigma0']:g}, N={r['N']}, τ={r['tau']:.2f}: "
        + ", ".join(f"{name} {v[0]:.1f} against {v[2]:.1f} ({v[4].text})"
                    for name, v in (("k", r["k"]), ("Δacc", r["dacc"])) if v[4].word == "off")
        for r in off) or "none") + "."]
    return out


def drop_block(root: Path) -> list[str]:
    """The loss drop against the paper's t≈300, which Fig 1's caption gives for d=300, N=200, small init."""
    df = csv(root, "races/loss_drop.csv")
    if df is None:
        return ["(no races/loss_drop.csv)"]
    df = df.assign(sigma0=sigma0(df.sigma0))
    cell = df[(df.sigma0 == 1e-5) & (df.N == 200)].drop_step
    return [f"Fig 1's caption places the drop \"around t=300\" for d=300, N=200 from small initial conditions: ours, "
            f"at σ₀=1e-5 and N=200, comes at step {cell.mean():.0f} ± {cell.std(ddof=0):.0f} (mean ± std (ddof 0) over "
            f"{len(cell)} seeds, every step traced), {cell.mean() / DROP_PAPER:.1f}× the paper's."]


def table1(root: Path) -> Row:
    rel, scale, df = _races(root)
    if df is None:
        return missing("races", "`make races` (hours on a CPU)")
    rows = comparisons(df)
    ks, ds = [r["k"][4] for r in rows], [r["dacc"][4] for r in rows]
    worst = max(rows, key=lambda r: abs(r["k"][0] - r["k"][2]) / (r["k"][3] if r["k"][3] == r["k"][3] and r["k"][3] else 1e9))
    return Row(scale, rel, f"{runs_of(root, f'{rel}/table1.md')}, {rows[0]['n']} seeds per cell",
               f"worst k: σ₀={worst['sigma0']:g}, N={worst['N']}, τ={worst['tau']:.2f}: {worst['k'][0]:.1f} against "
               f"{worst['k'][2]:.1f} ({worst['k'][4].text})", "k and Δacc per (σ₀, N, τ)",
               f"k: {claims.tally(ks)}; Δacc: {claims.tally(ds)}",
               "cells, verdicts and the choices that move them: races/SUMMARY.md", results=f"{rel}/table1.csv")


def figure1(root: Path) -> Row:
    df = csv(root, "races/loss_drop.csv")
    if df is None:
        return missing("races", "`make races`")
    df = df.assign(sigma0=sigma0(df.sigma0))
    cell = df[(df.sigma0 == 1e-5) & (df.N == 200)].drop_step
    return Row("paper", "races", f"{len(cell)} seeds (every step traced)",
               f"loss drop (10%) at step {cell.mean():.0f} ± {cell.std(ddof=0):.0f} (std ddof 0, as races/table1.md), "
               f"{cell.mean() / DROP_PAPER:.1f}× the paper's", "drop around t=300 (d=300, N=200)",
               feature("races", "drop-time", {"drop_over_paper": cell.mean() / DROP_PAPER}),
               "clusters and norms: races/figure1.png; " + drop_note(root), results="races/loss_drop.csv")


def drop_note(root: Path) -> str:
    """What the loss-drop isolation study (``make races-drop``) found: each setting's drop against the
    paper's t=300, from races-drop/drop_isolation.csv."""
    df = csv(root, "races-drop/drop_isolation.csv")
    if df is None:
        return "what moves the drop: not run (`make races-drop`)"
    lines = "; ".join(f"{r.factor} (σ₀ {r.sigma0:g}, lr {r.lr:g}): {r.drop_mean:.0f} ({r.vs_paper:.2f}× the paper's)"
                      for r in df.itertuples())
    return (f"`races-drop`: {lines}. lr 4e-3 is the batch's loss summed, not averaged; the paper states neither "
            "its reduction nor Fig 1's σ₀, so no reading of its text moves the default")


def figure3a(root: Path) -> Row:
    df = csv(root, "races/figure3.csv")
    if df is None:
        return missing("races", "`make races`")
    grid = df[(df.panel == "3a") & (sigma0(df.sigma0) == 1e-5) & (df.epochs == 100)]
    a = grid.groupby(["d", "N"]).k_end.mean().unstack("N")
    seeds = count_of(grid.groupby(["d", "N"]).seed.nunique().rename("n").to_frame(), None)
    big = [n for n in a.columns if n >= 200]
    small_d = [d for d in a.index if d <= 100]
    values = {"k_step_min_from_200": float(a[big].diff(axis=1).iloc[:, 1:].min().min()),
              "k_over_d_at_largest_n_min": float(min(a.loc[d, max(a.columns)] / d for d in small_d))}
    below = bool((a.loc[[d for d in a.index if d >= 100], min(a.columns)] > a.loc[[d for d in a.index if d >= 100], 200]).any())
    return Row("paper", "races", f"{len(a.index)} widths × {len(a.columns)} N × {seeds} seeds, σ₀=1e-5, 100 epochs",
               "k at N=4000: " + ", ".join(f"d={int(d)}: {a.loc[d, max(a.columns)]:.0f}" for d in a.index),
               "k rises with N until it saturates at d", feature("races", "clusters-saturate", values)
               + ("; below N=200 k falls with N for d ≥ 100 (races/SUMMARY.md)" if below else ""), results="races/figure3.csv")


def figure3b(root: Path) -> Row:
    df = csv(root, "races/figure3.csv")
    if df is None:
        return missing("races", "`make races`")
    cells = df[df.panel == "3b"].assign(sigma0=lambda x: sigma0(x.sigma0)).groupby(["sigma0", "N", "when"])
    b, seeds = cells.k.mean(), count_of(cells.seed.nunique().rename("n").to_frame(), None)
    small, large = b.loc[1e-5], b.loc[1e-3]
    end_l, end_s = large.xs("end", level="when").align(small.xs("end", level="when"), join="inner")
    values = {"k_before_drop_minus_init_max": float((small.xs("before drop", level="when")
                                                     - small.xs("init", level="when")).max()),
              "k_end_large_minus_small_min": float((end_l - end_s).min())}
    return Row("paper", "races", f"{seeds} seeds per cell",
               f"σ₀=1e-5, N=200: k {small.loc[(200, 'init')]:.0f} → {small.loc[(200, 'before drop')]:.0f} before the drop → "
               f"{small.loc[(200, 'end')]:.0f}; σ₀=1e-3 ends at {large.loc[(200, 'end')]:.0f}",
               "neurons align during the plateau; a larger init gives more clusters",
               feature("races", "clusters-align-and-init", values), results="races/figure3.csv")


def figures4_5(col: str, paper: str, *claim_ids: str):
    """Figs 4-5: Spearman ρ per (σ₀, N) cell, seed-averaged, of ``col``; Fig 4 also at t=0 (``rho_init_min``: the
    paper's "already predictive at initialization"). Several claims: one outcome (outcomes.combine)."""
    def row(root: Path) -> Row:
        df = csv(root, "races/figures4_5_stats.csv")
        if df is None:
            return missing("races", "`make races`")
        cells = df.groupby(["sigma0", "N"])[col].mean()
        values = {"rho_min": float(cells.min()), "rho_max": float(cells.max())}
        if "rho_cos_0_log_a_end" in df:
            values["rho_init_min"] = float(df.groupby(["sigma0", "N"]).rho_cos_0_log_a_end.mean().min())
        judged = [claims.feature(claims.one("races", c), values) for c in claim_ids]
        word = outcomes.combine(w for w, _ in judged) if all(w != "no result" for w, _ in judged) else "no result"
        verdict = ("not judged: " + "; ".join(t for _, t in judged) if word == "no result" else
                   f"qualitative: {word} (test: {'; '.join(t for _, t in judged)})")
        init = f"; at t=0 {values['rho_init_min']:.2f} at least" if "rho_init_min" in values and len(claim_ids) > 1 else ""
        return Row("paper", "races", f"{len(df)} nets (every seed)",
                   f"Spearman ρ per cell {cells.min():.2f} to {cells.max():.2f}{init}", paper, verdict,
                   results="races/figures4_5_stats.csv")
    return row


def figure8(root: Path) -> Row:
    df = csv(root, "races/figure1a_loss.csv")
    if df is None:
        return missing("races", "`make races`")
    return Row("paper", "races", "the traced seed", f"{len(df)} loss points, {df.loss.iloc[0]:.3f} → {df.loss.iloc[-1]:.3g}",
               "a plateau, then a drop", feature("races", "loss-leaves-plateau", {"loss_end_over_start":
                                                                        float(df.loss.iloc[-1] / df.loss.iloc[0])}),
               "the curves of every cell: races/figure1a_loss.png and loss_drop.csv", results="races/figure1a_loss.csv")


APPENDIX = "races-appendix"  # python -m gatelab.papers.races figure6 / figure7 (no runs)


def figure6(root: Path) -> Row:
    p = Path(root) / APPENDIX / "figure6.json"
    if not p.is_file():
        return missing(APPENDIX, "`python -m gatelab.papers.races figure6 --data <root> --out outputs/reports/races-appendix`")
    s = json.loads(p.read_text())
    # an identity read "directly from the gradient equations" (the paper's words): checked, never counted (issue #47)
    return Row("test", APPENDIX, f"one init, d={s['d']}, N={s['N']}, σ₀={s['sigma0']:g}",
               f"the ratio spans {s['decades']:.1f} decades; ‖w2‖·tan(3π/4 − θ) to {s['max_rel_dev']:.0e} (relative)",
               "a tan function, orders of magnitude apart",
               ("checked: " if s["max_rel_dev"] < 1e-6 and s["decades"] > 2 else "differs: ") +
               "an identity, not evidence of agreement (ratio = ‖w2‖ tan(3π/4 − θ) within 1e-6 at every neuron, over "
               "more than 2 decades)",
               "the identity is exact for two classes (every Δy along (1, −1); tested)")


def figure7(root: Path) -> Row:
    from gatelab.papers.races.appendix import FIG7_PAPER, figure7_isolation_summary
    df = csv(root, f"{APPENDIX}/figure7.csv")
    iso = csv(root, f"{APPENDIX}/figure7_isolation.csv")
    if df is None:
        return missing(APPENDIX, "`python -m gatelab.papers.races figure7 --data <root> --out outputs/reports/races-appendix`")
    lo, hi = FIG7_PAPER
    means = df.groupby(["N", "sign"]).stable_cells.mean()
    inside = int(((means >= lo) & (means <= hi)).sum())
    values = {"stable_cells_mean_min": float(means.min()), "stable_cells_mean_max": float(means.max())}
    sizes, seeds = sorted(df.N.unique()), df.seed.nunique()
    return Row("paper" if seeds >= 3 else "reduced", APPENDIX, f"{seeds} probe draws × {len(sizes)} N × 2 alignments",
               f"means {means.min():.1f}-{means.max():.1f} at N {sizes[0]}-{sizes[-1]}",
               f"{lo}-{hi} (§3, for its CIFAR-10 datasets)",
               feature("races", "stable-cells", values) + f"; {inside} of {len(means)} means in {lo}-{hi}",
               ("" if sizes[-1] >= 4000 else "N = 2000, 4000 not run here (the probes' first product grows with N; "
                "`--sizes` runs them)")
               + ("" if iso is None else f"; what moves it ({APPENDIX}/figure7_isolation.md): "
                  + figure7_isolation_summary(iso)), results=f"{APPENDIX}/figure7.csv")


STEP_SIZE = "races/step-size"  # the step-size study: its default rerun beside lr 4e-3 on one machine


def isolation_block(root: Path) -> list[str]:
    """The isolation of Table 1's σ₀=1e-5 cells (``races/isolation.csv``, then the step-size study's): k (Δk from
    the default) per choice at N=200 and 800, τ=0.95 and 0.99, in bold where the one rule finds it within the
    paper's k."""
    df = csv(root, "races/isolation.csv")
    if df is None:
        return ["(no races/isolation.csv)"]
    out = _isolation_table(df)
    step = csv(root, f"{STEP_SIZE}/isolation.csv")
    if step is not None:
        key = ["N", "tau"]
        a, b = (d[d.choice == "default"].set_index(key).k_mean for d in (df, step))
        moved = (b - a).abs().max()
        out += ["", f"The step size (`{STEP_SIZE}/`): its own default, the same 5 seeds rerun on another CPU, beside "
                f"lr 4e-3 (the batch's loss summed); the rerun's k differ from the table above's by at most "
                f"{moved:.1f} (runs are bit-identical on one machine, not across CPU kinds), so its Δk is against "
                "its own default.", ""]
        out += _isolation_table(step[step.choice.isin(["default", "step size"])])
    return out


def _isolation_table(df) -> list[str]:
    from gatelab.papers.races.table1 import PAPER_TABLE1
    cells = [(n, t) for n in (200, 800) for t in (0.95, 0.99) if ((df.N == n) & (df.tau == t)).any()]
    paper = {c: PAPER_TABLE1[(1e-5, c[0])][c[1]][:2] for c in cells}  # (k mean, std)
    out = ["Each choice changed alone from our default, on the same 5 seeds: k (Δk); **bold**: within the paper's k "
           "by the one rule (|ours − paper| ≤ max(2 paper-std, 0.5)).", ""]
    head = ["choice", *(f"N={n} τ={t:.2f} (paper {paper[(n, t)][0]:g} ± {paper[(n, t)][1]:g})" for n, t in cells)]
    reached, everywhere, lines = {}, [], []
    for (choice, variant), g in df.groupby(["choice", "variant"], sort=False):
        g = g.set_index(["N", "tau"])
        words = []
        for c in cells:
            if c not in g.index:
                words.append("—")
                continue
            k, dk = g.loc[c].k_mean, g.loc[c].delta_k
            within = claims.published(k, *paper[c]).word == "within"
            reached.setdefault(c, []).extend([f"{variant} ({k:.1f})"] if within and choice != "default" else [])
            txt = f"{k:.1f}" + ("" if choice == "default" else f" ({dk:+.1f})")
            words.append(f"**{txt}**" if within else txt)
        lines.append([f"{choice}: {variant}", *words])
        if all(w.startswith("**") for w in words):
            everywhere.append(f"{choice}: {variant}")
    out += tables.lines(head, lines) + ["", f"Within at all {len(cells)} cells: {', '.join(everywhere) or 'no choice and no pair run'}. "
            "Within the paper's k by a choice: " + "; ".join(
        f"N={n} τ={t:.2f}: " + (", ".join(reached.get((n, t), [])) or "none") for n, t in cells) + "."]
    return out


BLOCKS = {("races/SUMMARY.md", "table1"): table1_block, ("races/SUMMARY.md", "drop"): drop_block,
          ("races/SUMMARY.md", "isolation"): isolation_block}

ITEMS = [
    Item("004", "Table 1 (Appendix G)", "clusters k and Δacc after merging, per σ₀, N, τ", table1),
    Item("004", "Fig 1", "loss drop, cosine matrix by cluster, norm against alignment, IMP", figure1),
    Item("004", "Fig 3a", "clusters against N for several widths", figure3a),
    Item("004", "Fig 3b", "clusters at init, before the drop and at the end", figure3b),
    Item("004", "Fig 4", "norm against alignment early in training",
         figures4_5("rho_cos_early_log_a_end", "early alignment predicts the final norm; already at initialisation",
                    "norm-follows-alignment", "norm-predicted-at-init")),
    Item("004", "Fig 5", "IMP-pruned weights per neuron against early alignment",
         figures4_5("rho_pruned@0.2", "the aligned neurons lose fewer weights", "pruned-follows-alignment")),
    Item("004", "Fig 6", "gradient ratio against 3π/4 − φ at init, 1000 neurons", figure6),
    Item("004", "Fig 7", "detected stable cells against N (probe algorithm, 10⁵ probes)", figure7),
    Item("004", "Fig 8", "train loss curves of the default experiments", figure8),
    Item("004", "Fig 2", "cells of a toy dataset of 3 samples", nothing("an illustration")),
]
