"""Paper 002 Figure 10 (experiment 8): a deep linear network on one example (see :mod:`gatelab.papers.dgn`)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from gatelab.analyses import kernels
from gatelab.papers import plotting
from gatelab.papers.dgn.figures import _depth_colors, frg_network
from gatelab.papers.plotting import plt

EXP8 = dict(depths=[2, 4, 6, 8, 10], w=100, runs=5, steps=60, rate=0.81)


def exp8_data(scale: dict = EXP8, seed: int = 0) -> pd.DataFrame:
    """Experiment 8 (paper 002, appendix): a DLN (all gates 1), d_in = n = 1, (x, y) = (1, 1), width w,
    weights ±σ with σ² = 1/w (Assumption 1), full-batch GD at α = 0.1/d on ½e². Corollary 8.1:
    E[K0] = d(wσ²)^(d−1) = d, so the expected rate is e²_{t+1}/e²_t = (1 − αK0)² = 0.81. Per (depth,
    run, step): e²_t, the rate e²_{t+1}/e²_t, K_t, K_t/K_0 and ‖Θ_t‖ (the weights' L2 norm) and ‖Θ_t‖/‖Θ_0‖."""
    gen = torch.Generator().manual_seed(seed)
    x, y, rows = torch.ones(1, 1, dtype=torch.float64), torch.ones(1, dtype=torch.float64), []
    for d in scale["depths"]:
        alpha = 0.1 / d
        for run in range(scale["runs"]):
            weights, gates = frg_network(1, scale["w"], d, gen, mu=1.0)  # Ber(1) gates: all on
            ws = [w.clone().requires_grad_(True) for w in weights]
            k0 = float(kernels.gated_ntk(weights, gates, x)[0, 0])
            norm0 = float(torch.sqrt(sum(w.square().sum() for w in weights)))
            for t in range(scale["steps"] + 1):
                k = float(kernels.gated_ntk([w.detach() for w in ws], gates, x)[0, 0])
                e = kernels.gated_forward(ws, gates, x)[0] - y
                norm = float(torch.sqrt(sum(w.detach().square().sum() for w in ws)))
                rows.append({"depth": d, "width": scale["w"], "run": run, "step": t, "err2": float(e.detach().square().sum()),
                             "K": k, "K_over_K0": k / k0, "weight_norm": norm, "norm_over_norm0": norm / norm0})
                grads = torch.autograd.grad(0.5 * e.square().sum(), ws)
                with torch.no_grad():
                    for w, g in zip(ws, grads):
                        w -= alpha * g
    df = pd.DataFrame(rows)
    df["rate"] = df.groupby(["depth", "run"]).err2.shift(-1) / df.err2
    return df


def exp8_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per depth: K0 (mean ± std over runs) against E[K0] = d, the first step's rate against 0.81, and the
    mean rate over the steps until e² falls below 1e-20 (float64's floor for e)."""
    first = df[df.step == 0]
    live = df[(df.err2 > 1e-20) & df.rate.notna()]
    out = first.groupby("depth").agg(K0=("K", "mean"), K0_std=("K", "std"), rate_first=("rate", "mean")).reset_index()
    out["K0_ideal"] = out.depth.astype(float)
    out["rate_mean"] = out.depth.map(live.groupby("depth").rate.mean())
    out["rate_ideal"] = EXP8["rate"]
    return out


def figure10_plot(df: pd.DataFrame):
    """The four panels of Figure 10: K0 against depth (beside E[K0] = d), the rate e²_{t+1}/e²_t (beside
    0.81), K_t/K_0 and ‖Θ_t‖/‖Θ_0‖ over GD steps, means over runs (all read from ``df``)."""
    depths, runs, w = sorted(df.depth.unique()), df.run.nunique(), report_width(df)
    scale = dict(depths=depths, runs=runs, w=w, rate=EXP8["rate"])
    mean = df.groupby(["depth", "step"], as_index=False)[["rate", "K_over_K0", "norm_over_norm0", "err2"]].mean()
    summ, color = exp8_summary(df), _depth_colors(scale["depths"])
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.4))
    axes[0].errorbar(summ.depth, summ.K0, summ.K0_std, marker="o", capsize=2, label=f"measured, {scale['runs']} runs")
    axes[0].plot(summ.depth, summ.K0_ideal, "k:", label="E[K0] = d (Cor. 8.1)")
    axes[0].set(xlabel="depth d", ylabel="K0", xticks=scale["depths"], title="K0 against depth")
    for d in scale["depths"]:
        sub = mean[(mean.depth == d) & (mean.err2 > 1e-20)]
        axes[1].plot(sub.step, sub.rate, color=color[d], label=f"d={d}")
        sub = mean[mean.depth == d]
        axes[2].plot(sub.step, sub.K_over_K0, color=color[d], label=f"d={d}")
        axes[3].plot(sub.step, sub.norm_over_norm0, color=color[d], label=f"d={d}")
    axes[1].axhline(scale["rate"], color="k", ls=":", label="ideal (1 − 0.1)² = 0.81")
    axes[1].set(xlabel="GD step (α = 0.1/d)", ylabel="e²_{t+1} / e²_t", title="convergence rate")
    axes[2].set(xlabel="GD step", ylabel="K_t / K_0", title="growth of K_t")
    axes[3].set(xlabel="GD step", ylabel="‖Θ_t‖₂ / ‖Θ_0‖₂", title="growth of the weights' norm")
    for ax in axes:
        ax.title.set_fontsize(9)
    axes[0].legend(fontsize=7, loc="best")
    axes[1].set_ylim(top=1.0)
    axes[1].legend(fontsize=7, loc="upper right", ncol=2)
    plotting.caption(fig, "002", "Fig 10 (experiment 8)",
                     f"DLN, d_in=n=1, (x, y)=(1, 1), w={scale['w']}, σ²=1/w, mean of {scale['runs']} runs")
    return fig


def report_width(df: pd.DataFrame):
    return int(df.width.iloc[0]) if "width" in df else EXP8["w"]


def figure10(out: Path, scale: dict = EXP8, seed: int = 0) -> pd.DataFrame:
    """Figure 10: ``dgn_figure10.{png,pdf,csv}`` (per depth, run and step) and ``dgn_figure10_summary.csv``; ``seed``
    draws the nets' weights."""
    df = exp8_data(scale, seed)
    plotting.save(figure10_plot(df), df, out, "dgn_figure10")
    summ = exp8_summary(df)
    summ.to_csv(Path(out) / "dgn_figure10_summary.csv", index=False, float_format="%.6g")
    return summ
