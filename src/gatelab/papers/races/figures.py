"""Paper 004 Figures 1, 3, 4 and 5 (see :mod:`gatelab.papers.races`).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import torch

from gatelab.analyses import neurons, pruning
from gatelab.core import checkpoints
from gatelab.papers import facts, plotting, report, tables
from gatelab.papers.plotting import plt
from gatelab.papers.races.table1 import DEFAULT, PAPER_TABLE1, RaceRun, SPARSITIES, drop_step, loss_curve, main_lr, net_at, run_data, scan, step_checkpoints


# ---- Figures ----

def early_step(run: RaceRun, curve: pd.DataFrame, early: Optional[int]) -> int:
    """The "early" time of Figs 1c, 4, 5: ``early`` if given, else the last step checkpoint at or
    before a quarter of the loss-drop step (the silent-alignment phase)."""
    steps = step_checkpoints(run)
    if not steps:
        raise SystemExit(f"{run.path}: no step checkpoints (checkpoint_steps); the figures need them")
    if early is not None:
        return min(steps, key=lambda t: abs(t - early))
    drop = drop_step(curve) or steps[-1]
    return max([t for t in steps if t <= drop / 4] or [steps[0]])


def neuron_table(run: RaceRun, runs: list[RaceRun], root: Optional[str], early: Optional[int]) -> tuple[pd.DataFrame, dict]:
    """Per neuron: a and cos δ̄ at t=0, at the early step and at the end; its τ=0.99 cluster; and
    the weights IMP pruned from it at each sparsity (round 3 masks of the same cell and seed). What it reads of
    checkpoints and masks are facts (:mod:`gatelab.papers.facts`)."""
    curve = loss_curve(run, root)
    t_early = early_step(run, curve, early)
    df = pd.DataFrame({"neuron": range(run.d)})
    for name, ckpt in (("0", "step_0.pt"), ("early", f"step_{t_early}.pt"), ("end", "last.pt")):
        al = facts.fact(run.path, f"alignment@{ckpt}", lambda ckpt=ckpt: _alignment(run, ckpt, root))
        df[f"a_{name}"], df[f"cos_{name}"] = al["a"], al["cos_delta"]
    df["cluster99"] = facts.fact(run.path, "clusters@0.99:last.pt", lambda: neurons.clusters(
        neurons.total_weights(net_at(run, "last.pt")), 0.99).numpy())
    for sp in SPARSITIES:
        imp = _imp_run(run, sp, runs)
        df[f"pruned@{sp:g}"] = np.nan if imp is None else facts.fact(
            imp.path, "pruned_per_neuron", lambda imp=imp: neurons.pruned_per_neuron(
                checkpoints.load(imp.path / pruning.MASK_FILE)["mask"]).numpy())
    return df, {"curve": curve, "early": t_early, "drop": drop_step(curve), "epochs": run.epochs}


def _alignment(run: RaceRun, ckpt: str, root: Optional[str]) -> dict:
    al = neurons.alignment(net_at(run, ckpt), *run_data(run, root)[0])
    return {"a": al["a"].numpy(), "cos_delta": al["cos_delta"].numpy()}


def _imp_run(run: RaceRun, sparsity: float, runs: list[RaceRun]) -> Optional[RaceRun]:
    """The completed IMP round 3 at ``sparsity`` of ``run``'s cell and seed, if any (its mask: ``mask.pt``)."""
    return next((r for r in runs if r.imp == (sparsity, 3) and r.status == "completed" and
                 (r.std, r.n, r.d, r.normalize, r.epochs, r.seed, r.lr) ==
                 (run.std, run.n, run.d, run.normalize, run.epochs, run.seed, run.lr)), None)


def _pick(runs, std, n, seed=None) -> Optional[RaceRun]:
    cands = [r for r in runs if r.imp is None and r.status == "completed" and r.std == std and r.n == n
             and r.d == DEFAULT["d"] and r.normalize == DEFAULT["normalize"] and (seed is None or r.seed == seed)]
    return min(cands, key=lambda r: (r.seed, -r.epochs), default=None)


def figure1(runs, root, early, out: Path) -> dict:
    run = _pick(runs, 1e-5, 200)
    if run is None:
        return {}
    df, info = neuron_table(run, runs, root, early)
    largest = df[df.cluster99 == 0]
    fig, ax = plt.subplots(1, 4, figsize=(17, 4))
    c = info["curve"]
    ax[0].plot(c.step, c.loss, ".-", ms=3)
    if info["drop"]:
        ax[0].axvline(info["drop"], color="r", ls="--", label=f"drop ≈ step {info['drop']}")
    ax[0].axvline(300, color="gray", ls=":", label="paper: t≈300")
    ax[0].set(xscale="symlog", xlabel="step t", ylabel="training loss", title="a) loss", xlim=(0, None))
    ax[0].legend(fontsize=7)
    order = np.argsort(df.cluster99.to_numpy(), kind="stable")
    cos = facts.fact(run.path, "cosine:last.pt", lambda: neurons.cosine_matrix(neurons.total_weights(
        net_at(run, "last.pt"))).numpy().astype(np.float32))[np.ix_(order, order)]  # float32: a picture's colours
    im = ax[1].imshow(cos, vmin=-1, vmax=1, cmap="RdBu_r")
    fig.colorbar(im, ax=ax[1], fraction=0.046, label="cosine of total weight vectors")
    ax[1].set(title=f"b) cosine, sorted by cluster (τ=0.99, k={df.cluster99.max() + 1})", xlabel="neuron", ylabel="neuron")
    sc = ax[2].scatter(largest.cos_early, largest.a_early, c=np.log10(largest.a_end), s=10)
    fig.colorbar(sc, ax=ax[2], fraction=0.046, label="log10 a(end)")
    ax[2].set(yscale="log", xlabel=f"cos δ̄ (step {info['early']})", ylabel=f"a (step {info['early']})",
              title=f"c) largest cluster ({len(largest)} neurons)")
    if largest["pruned@0.5"].notna().any():
        sc = ax[3].scatter(largest.cos_early, largest["pruned@0.5"], c=np.log10(largest.a_end), s=10)
        fig.colorbar(sc, ax=ax[3], fraction=0.046, label="log10 a(end)")
    ax[3].set(xlabel=f"cos δ̄ (step {info['early']})", ylabel="weights pruned (IMP 50%, 3 rounds)",
              title="d) pruned per neuron, largest cluster")
    df["run"], df["early_step"], df["drop_step"] = str(run.path), info["early"], info["drop"]
    who = f"σ₀=1e-5, N=200, d={run.d}, seed {run.seed}, {run.epochs} epochs"
    plotting.caption(fig, "004", "Fig 1", who)
    plotting.save(fig, df, out, "figure1")
    plotting.save(*_curve_fig(c, info["drop"], who), out, "figure1a_loss")
    return {"run": str(run.path), "drop_step": info["drop"], "early_step": info["early"], "largest_cluster": len(largest)}


def _curve_fig(c: pd.DataFrame, drop: Optional[int], who: str):
    """Fig 1a alone: the training loss with the drop we measure and the paper's t≈300."""
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    ax.plot(c.step, c.loss, ".-", ms=3, label="training loss (full training set)")
    if drop:
        ax.axvline(drop, color="r", ls="--", label=f"drop ≈ step {drop}")
    ax.axvline(300, color="gray", ls=":", label="paper: t≈300")
    ax.set(xscale="symlog", xlabel="step t", ylabel="training loss", xlim=(0, None))
    ax.set_title(who, fontsize=8)
    ax.legend(fontsize=7, loc="lower left")
    plotting.caption(fig, "004", "Fig 1a")
    return fig, c


def report_seeds(df: pd.DataFrame) -> str:
    """The seeds per point of a figure: one number, or the range."""
    counts = df.groupby([c for c in ("sigma0", "N", "d") if c in df]).seed.nunique()
    return str(counts.min()) if counts.min() == counts.max() else f"{counts.min()}-{counts.max()}"


def figure3(runs, root, out: Path) -> pd.DataFrame:
    """3a: k(τ=0.95) at the end against N per d (σ₀=1e-5); 3b: k(0.95) at t=0, before the drop, end."""
    a = _k_end(_ends(runs))
    if not len(a):
        return a
    b_lines = []
    for (std, n), _ in a[a.d == DEFAULT["d"]].groupby(["sigma0", "N"]):
        for r in [r for r in runs if r.imp is None and r.status == "completed" and r.cell == (std, n)
                  and r.d == DEFAULT["d"] and r.normalize == DEFAULT["normalize"]]:
            steps = step_checkpoints(r)
            drop = drop_step(loss_curve(r, root))
            before = max([t for t in steps if drop is None or t < drop], default=None)
            for when, ckpt in (("init", "step_0.pt"), ("before drop", f"step_{before}.pt"), ("end", "last.pt")):
                if ckpt == "last.pt" or ckpt in {f"step_{t}.pt" for t in steps}:  # a completed run has last.pt
                    k = _k95(r, ckpt)
                    b_lines.append({"sigma0": std, "N": n, "seed": r.seed, "when": when, "k": k, "ckpt": ckpt})
    b = pd.DataFrame(b_lines)
    fig, ax = plt.subplots(1, 2, figsize=(13, 4.4))
    sa = a[a.sigma0 == 1e-5].groupby(["d", "N"]).k_end.agg(["mean", "std", "count"]).reset_index()
    for d, g in sa.groupby("d"):
        ax[0].errorbar(g.N, g["mean"], g["std"].fillna(0), marker="o", capsize=2, label=f"d={d}")
    ax[0].set(xscale="log", yscale="log", xlabel="N (training examples)", ylabel="clusters k (τ=0.95)",
              title="3a) effective capacity, σ₀=1e-5")
    ns = sorted(set(sa.N) | {n for (std, n) in PAPER_TABLE1 if std == 1e-5})
    ax[0].set_xticks(ns, [str(n) for n in ns], minor=False)
    ax[0].xaxis.set_minor_formatter(plt.NullFormatter())
    paper = sorted((n, v[0.95][0]) for (std, n), v in PAPER_TABLE1.items() if std == 1e-5)
    ax[0].plot(*zip(*paper), "k*", ms=9, label=f"paper, Table 1 (d={DEFAULT['d']})")
    ax[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
    if len(b):
        sb = b.groupby(["sigma0", "N", "when"], sort=False).k.mean().reset_index()
        labels = [f"σ₀={s:g} N={n}" for s, n in sb[["sigma0", "N"]].drop_duplicates().itertuples(index=False)]
        for j, when in enumerate(("init", "before drop", "end")):
            vals = sb[sb.when == when].k.to_numpy()
            ax[1].bar(np.arange(len(vals)) + 0.27 * (j - 1), vals, width=0.27, label=f"ours: {when}")
        cells = sb[["sigma0", "N"]].drop_duplicates().itertuples(index=False)
        ends = [PAPER_TABLE1.get((s, n), {}).get(0.95, (np.nan,))[0] for s, n in cells]
        ax[1].plot(np.arange(len(ends)) + 0.27, ends, "k*", ms=9, label="paper: end (Table 1)")
        ax[1].set_xticks(range(len(labels)), labels, rotation=20, fontsize=7)
        ax[1].set(ylabel="clusters k (τ=0.95)", xlabel="cell", title="3b) clusters over training")
        ax[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
    a["panel"], b["panel"] = "3a", "3b"
    both = pd.concat([a, b], ignore_index=True)
    plotting.caption(fig, "004", "Fig 3", f"mean ± std over seeds (n={report_seeds(a)}), final networks")
    plotting.save(fig, both, out, "figure3")
    return both


def _k95(run: RaceRun, ckpt: str = "last.pt") -> int:
    """Clusters k at τ=0.95 of a run's network at ``ckpt`` (Fig 3; a fact)."""
    return facts.fact(run.path, f"k95@{ckpt}", lambda: int(neurons.clusters(
        neurons.total_weights(net_at(run, ckpt)), 0.95).max()) + 1)


def _ends(runs) -> list[RaceRun]:
    """The completed dense runs at the default input scale: their final networks are Fig 3a's."""
    return [r for r in runs if r.imp is None and r.status == "completed" and r.normalize == DEFAULT["normalize"]]


def _k_end(runs) -> pd.DataFrame:
    """Of each run's final network: k(τ=0.95), its clusters of one neuron, and the fewest clusters
    that hold 99% of Σ a_α (:func:`neurons.clusters_holding`)."""
    return pd.DataFrame([{"sigma0": r.std, "N": r.n, "d": r.d, "seed": r.seed, "epochs": r.epochs,
                          "steps": r.epochs * r.per_epoch,
                          **facts.fact(r.path, "clusters_of:last.pt", lambda r=r: _clusters_of(r))} for r in runs])


def _clusters_of(run: RaceRun) -> dict:
    """At τ=0.95, of the run's final network: k; its clusters of one neuron, the share of Σ a_α they
    hold, their median ‖w1‖ over the net's and their median cosine to the nearest other neuron; and the
    fewest clusters holding 99% of Σ a_α (a fact, so computed once: Fig 3a, its lengths and its composition
    share it)."""
    net = net_at(run, "last.pt")
    v = neurons.total_weights(net)
    labels = neurons.clusters(v, 0.95)
    single, a, w1 = torch.bincount(labels)[labels] == 1, neurons.norm_product(net), net.w1.norm(dim=1)
    nearest = (neurons.cosine_matrix(v) - 2 * torch.eye(len(v), dtype=v.dtype)).max(1).values
    return {"k_end": int(labels.max()) + 1, "singletons": int(single.sum()),
            "singleton_share": float(a[single].sum() / a.sum()) if a.sum() > 0 else math.nan,
            "singleton_w1": float(w1[single].median() / w1.median()) if single.any() else math.nan,
            "singleton_cos": float(nearest[single].median()) if single.any() else math.nan,
            "k_99": neurons.clusters_holding(net, labels)}


def figure3_lengths(runs, out: Path) -> pd.DataFrame:
    """Fig 3a's k(τ=0.95) at the end for the (σ₀, d, N) cells trained at more than one length, beside
    the optimiser steps of each: whether the length of training, not N, sets k where N is small
    (100 epochs of batch 4 are 1300 steps at N=50, 5000 at N=200). ``figure3_lengths.{csv,md}``."""
    a = _k_end(_ends(runs))  # each network clustered once per render (_clusters_of), shared with figure3
    if not len(a):
        return a
    a = a[a.groupby(["sigma0", "d", "N"]).epochs.transform("nunique") > 1]
    if not len(a):
        return a
    a.to_csv(Path(out) / "figure3_lengths.csv", index=False)
    (Path(out) / "figure3_lengths.md").write_text(lengths_md(a))
    return a


def lengths_md(a: pd.DataFrame) -> str:
    """``figure3_lengths.md`` from its CSV's rows (a row per final network)."""
    s = a.groupby(["sigma0", "d", "N", "epochs", "steps"]).k_end.agg(list).reset_index()
    lines = ["k at τ=0.95 of the final networks (mean ± std over seeds, ddof 1; seeds in brackets) for the cells "
             "trained at more than one length; the figures show the 100-epoch runs.", ""]
    lines += tables.lines(["σ₀", "d", "N", "epochs", "steps", "k (τ=0.95)"],
                          [[f"{r.sigma0:g}", r.d, r.N, r.epochs, r.steps,
                            f"{report.fmt(*report.mean_std(r.k_end))} ({len(r.k_end)})"] for r in s.itertuples()])
    return "\n".join(lines) + "\n"


def figure3_composition(runs, out: Path) -> pd.DataFrame:
    """What Fig 3a's k counts in each final network, per σ₀, d, N and length: the clusters at τ=0.95,
    those of a single neuron, and the fewest clusters that hold 99% of Σ a_α.
    ``figure3_composition.{csv,md}``."""
    a = _k_end(_ends(runs))
    if not len(a):
        return a
    a.to_csv(Path(out) / "figure3_composition.csv", index=False)
    (Path(out) / "figure3_composition.md").write_text(composition_md(a))
    return a


def composition_md(a: pd.DataFrame) -> str:
    """``figure3_composition.md`` from its CSV's rows (a row per final network)."""
    s = a.groupby(["sigma0", "d", "N", "epochs", "steps"]).agg(list).reset_index()
    lines = ["What k counts in the final networks (mean ± std over seeds, ddof 1): the clusters at τ=0.95 (k); "
             "those of one neuron (singletons), the share of Σ_α a_α, a_α = ‖w1_α‖‖w2_α‖, they hold, their ‖w1‖ "
             "over the net's median and their cosine to the nearest other neuron (medians in a net, means over "
             "seeds); and the fewest clusters that together hold 99% of Σ a_α (k_99). Fig 3a shows σ₀=1e-5 at 100 "
             "epochs; the other lengths are the equal-steps and epoch checks.", ""]
    lines += tables.lines(["σ₀", "d", "N", "epochs", "steps", "seeds", "k (τ=0.95)", "singletons",
                           "their share of Σa", "their ‖w1‖ / median", "their nearest cos", "k_99"],
                          [[f"{r.sigma0:g}", r.d, r.N, r.epochs, r.steps, len(r.k_end),
                            report.fmt(*report.mean_std(r.k_end)), report.fmt(*report.mean_std(r.singletons)),
                            f"{np.mean(r.singleton_share):.1e}", _mean(r.singleton_w1, ".3f"),
                            _mean(r.singleton_cos, ".2f"), report.fmt(*report.mean_std(r.k_99))]
                           for r in s.itertuples()])
    return "\n".join(lines) + "\n"


def _mean(values, spec: str) -> str:
    """The mean of the seeds that have a value (a net without singletons has none), or —."""
    kept = [v for v in values if not math.isnan(v)]
    return format(float(np.mean(kept)), spec) if kept else "—"


def _scatter(ax, x, y, df, title, xlabel, ylabel, logy=False):
    sc = ax.scatter(x, y, c=np.log10(df.a_end), s=6)
    ax.set(xlabel=xlabel, ylabel=ylabel, yscale="log" if logy else "linear")
    ax.set_title(title, fontsize=9)
    return sc


def figures4_5(runs, root, early, out: Path) -> pd.DataFrame:
    """Fig 4 for every (σ₀, N) cell of the paper's grid found, Fig 5 for those with IMP runs (each
    cell's first seed drawn); the Spearman ρ and growth slopes of every seed in
    ``figures4_5_stats.csv``, their mean ± std over seeds per cell in ``figures4_5.md``."""
    dense = [r for r in runs if r.imp is None and r.status == "completed" and r.d == DEFAULT["d"]
             and r.normalize == DEFAULT["normalize"] and r.cell in PAPER_TABLE1]
    stats, frames = [], []
    for std, n in sorted({r.cell for r in dense}):
        for i, seed in enumerate(sorted({r.seed for r in dense if r.cell == (std, n)})):
            run = _pick(runs, std, n, seed)
            df, info = neuron_table(run, runs, root, early)
            df["sigma0"], df["N"], df["seed"], df["early_step"] = std, n, run.seed, info["early"]
            stats.append(_neuron_stats(df, info))
            if i == 0:
                frames.append(df)
    if frames:
        _figure4(frames, out)
        _figure5([df for df in frames if df["pruned@0.5"].notna().all()], out)
    s = pd.DataFrame(stats)
    s.to_csv(Path(out) / "figures4_5_stats.csv", index=False, float_format="%.6g")
    (Path(out) / "figures4_5.md").unlink(missing_ok=True)
    if len(s):
        (Path(out) / "figures4_5.md").write_text(_stats_md(s))
    return s


def _neuron_stats(df: pd.DataFrame, info: dict) -> dict:
    """One seed's numbers of Figs 4 and 5: Spearman ρ of early alignment against final log norm and
    against weights pruned, and the slope of log growth in cos δ̄ (Thm 3.11)."""
    grow = np.log(df.a_early / df.a_0)  # Thm 3.11: log a(t)/a(0) linear in cos δ̄ early on
    slope, _ = np.polyfit(df.cos_early, grow, 1)
    log_end = torch.tensor(np.log(df.a_end.values))
    line = {"sigma0": df.sigma0.iloc[0], "N": df.N.iloc[0], "seed": df.seed.iloc[0], "epochs": info["epochs"],
            "early_step": info["early"],
            "drop_step": info["drop"],
            "rho_cos_early_log_a_end": neurons.spearman(torch.tensor(df.cos_early.values), log_end),
            "rho_cos_0_log_a_end": neurons.spearman(torch.tensor(df.cos_0.values), log_end),
            "slope_log_growth_vs_cos": slope, "pearson_log_growth_vs_cos": float(np.corrcoef(df.cos_early, grow)[0, 1])}
    for sp in SPARSITIES:
        col = f"pruned@{sp:g}"
        line[f"rho_pruned@{sp:g}"] = neurons.spearman(torch.tensor(df.cos_early.values), torch.tensor(
            df[col].values, dtype=torch.float64)) if df[col].notna().all() else math.nan
    return line


STAT_COLUMNS = {"rho_cos_0_log_a_end": "ρ(cos δ̄ at t=0, log a end)", "rho_cos_early_log_a_end": "ρ(cos δ̄ early, log a end)",
                **{f"rho_pruned@{sp:g}": f"ρ(cos δ̄ early, pruned) IMP {int(100 * sp)}%" for sp in SPARSITIES}}


def _stats_md(s: pd.DataFrame) -> str:
    """Per cell: mean ± std (ddof 1) over its seeds of each ρ, with the number of seeds it rests on."""
    rows = []
    for (std, n, _), g in s.groupby(["sigma0", "N", "epochs"]):  # one epoch count per cell (main_runs)
        cells = []
        for col in STAT_COLUMNS:
            v = g[col].dropna()
            cells.append("—" if v.empty else f"{report.fmt(*report.mean_std(v.tolist()))} ({len(v)})")
        rows.append([f"{std:g}", n, *cells])
    lines = tables.lines(["σ₀", "N", *STAT_COLUMNS.values()], rows)
    return ("Spearman ρ per cell: mean ± std over seeds (ddof 1), the number of seeds in brackets; "
            "the figures draw each cell's first seed.\n\n" + "\n".join(lines) + "\n")


def _figure4(frames: list, out: Path) -> None:
    cols = len(frames)
    fig4, ax4 = plt.subplots(2, cols, figsize=(4 * cols, 7), squeeze=False, layout="constrained")
    for j, df in enumerate(frames):
        head = f"σ₀={df.sigma0.iloc[0]:g} N={df.N.iloc[0]}"
        for i, (when, t) in enumerate((("0", 0), ("early", df.early_step.iloc[0]))):
            sc = _scatter(ax4[i, j], df[f"cos_{when}"], df[f"a_{when}"], df, f"{head}: t={t}", "cos δ̄", "a = ‖w1‖‖w2‖", True)
        fig4.colorbar(sc, ax=ax4[:, j], fraction=0.03, label="log10 a(end)")
    table = pd.concat(frames, ignore_index=True)
    plotting.caption(fig4, "004", "Fig 4", "norm product a against alignment cos δ̄, each cell's first seed "
                     f"({report_seeds(table)} net per panel)")
    plotting.save(fig4, table, out, "figure4")


def _figure5(pruned: list, out: Path) -> None:
    if not pruned:
        return
    fig5, ax5 = plt.subplots(len(SPARSITIES), len(pruned), figsize=(4.4 * len(pruned), 10), squeeze=False,
                             layout="constrained")
    for j, df in enumerate(pruned):
        for i, sp in enumerate(SPARSITIES):
            sc = _scatter(ax5[i, j], df.cos_early, df[f"pruned@{sp:g}"], df,
                          f"σ₀={df.sigma0.iloc[0]:g} N={df.N.iloc[0]}: IMP {int(100 * sp)}%",
                          f"cos δ̄ (step {df.early_step.iloc[0]})", "weights pruned")
        fig5.colorbar(sc, ax=ax5[:, j], fraction=0.03, label="log10 a(end)")
    plotting.caption(fig5, "004", "Fig 5", "weights IMP prunes per neuron against its early alignment, "
                     f"seed {report.joined(pd.concat(pruned).seed)}")
    plotting.save(fig5, pd.concat(pruned, ignore_index=True), out, "figure5")


def main_runs(runs: list[RaceRun]) -> list[RaceRun]:
    """The runs the figures show: the default input scale, the most common epoch count and step size (the
    checks' other inputs, lengths and steps are left to Table 1's check section and the isolation)."""
    dense = [r for r in runs if r.imp is None and r.status == "completed" and r.normalize == DEFAULT["normalize"]]
    if not dense:
        return []
    epochs, lr = int(pd.Series([r.epochs for r in dense]).mode().iloc[0]), main_lr(dense)
    return [r for r in runs if r.normalize == DEFAULT["normalize"] and r.epochs == epochs and r.lr == lr]


def figures(runs_dir: Path, out: Path, root: Optional[str] = None, early: Optional[int] = None) -> dict:
    found = scan(runs_dir)[0]
    runs = main_runs(found)
    if not runs:
        raise SystemExit(f"no race runs (+experiment=race) below {runs_dir}")
    return {"figure1": figure1(runs, root, early, out), "figure3": figure3(runs, root, out),
            "figure3_lengths": figure3_lengths(found, out), "figure3_composition": figure3_composition(found, out),
            "figures4_5": figures4_5(runs, root, early, out)}


