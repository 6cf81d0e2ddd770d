"""Paper 002 Figures 1-4 (Gram matrices at initialisation, depth) and 7-8 (see :mod:`gatelab.papers.dgn`)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gatelab.papers import plotting
from gatelab.papers.plotting import plt
from gatelab.analyses import kernels
from gatelab.data import datasets as data_mod
from gatelab.launch.runner import ensure_run, examples, model_at

# ---- Figures 1-4: Gram matrices at initialisation and the role of depth (experiments 1-2) ----

FRG_SCALES = {
    "paper": dict(depths=[2, 4, 6, 8, 12, 16, 20], widths=[25, 500], runs=5, entry_runs=20, steps=1000, w_galu=100),
    "quick": dict(depths=[2, 4, 6, 8, 12, 16, 20], widths=[25, 500], runs=2, entry_runs=5, steps=150, w_galu=100),
}
N_EXAMPLES, MU = 200, 0.5


def frg_network(n: int, w: int, d: int, gen: torch.Generator, mu: float = MU, gates: str = "frg", d_in: int = 1):
    """A depth-d, width-w bias-free FC net with weights ±σ, σ = sqrt(1/(µw)) (paper 002 Assumption 1)
    and its gates: ``frg`` fixed random Ber(µ) gates per example (DGN-FRG), ``galu`` the 0/1 gates
    of an independent random ReLU net on the inputs, ``relu`` the net's own (None)."""
    sigma = (1.0 / (mu * w)) ** 0.5
    shapes = [(w, d_in)] + [(w, w)] * (d - 2) + [(1, w)]

    def draw():
        return [sigma * (2.0 * torch.randint(0, 2, s, generator=gen, dtype=torch.float64) - 1.0) for s in shapes]
    weights = draw()
    if gates == "frg":
        g = [torch.bernoulli(torch.full((n, w), mu, dtype=torch.float64), generator=gen) for _ in range(d - 1)]
    elif gates == "galu":
        g = draw()
    else:
        g = [None] * (d - 1)
    return weights, g


FIG4_INPUTS = {  # Figure 4's inputs: the paper's (experiment 2), and ours before it (a labelled variant)
    "square": "x ~ U([-1,1]^2), n=100 (experiment 2)",
    "sphere10": "x uniform on the unit sphere of R^10, n=200 (gatelab's variant)",
}


def _inputs(kind: str, gen: torch.Generator, inputs: str = "square") -> tuple[torch.Tensor, torch.Tensor, int]:
    """Experiment 1's data (x_s = 1, y_s ~ U[-1,1], n = 200); for GaLU/ReLU (Figure 4) experiment 2's
    x_s ~ U([-1,1]²), y_s ~ U[-1,1], n = 100 (highly correlated inputs, by the paper's choice), or the
    variant ``sphere10``: 200 points uniform on the unit sphere of R^10 with the same y."""
    n = 100 if kind != "frg" and inputs == "square" else N_EXAMPLES
    y = 2.0 * torch.rand(n, generator=gen, dtype=torch.float64) - 1.0
    if kind == "frg":
        return torch.ones(n, 1, dtype=torch.float64), y, 1
    if inputs == "square":
        return 2.0 * torch.rand(n, 2, generator=gen, dtype=torch.float64) - 1.0, y, 2
    x = torch.randn(n, 10, generator=gen, dtype=torch.float64)
    return x / x.norm(dim=1, keepdim=True), y, 10


def _gates_for(kind, weights_g, x):
    """Gates of a GaLU net (from the frozen random ReLU net weights_g), fixed during training."""
    if kind != "galu":
        return weights_g
    _, zs = kernels.gated_forward(weights_g, [None] * (len(weights_g) - 1), x)
    return [(z > 0).to(x.dtype) for z in zs[1:]]


def ideal_frg_spectrum(d: int, n: int = N_EXAMPLES, mu: float = MU) -> torch.Tensor:
    """Eigenvalues of E[K0]/d, eq. (5): 1 on the diagonal, µ^(d-1) off it, ascending."""
    m = mu ** (d - 1)
    return torch.tensor([1 - m] * (n - 1) + [1 + (n - 1) * m], dtype=torch.float64)


def _train_gd(weights, gates, x, y, steps: int) -> list[float]:
    """Full-batch GD on ½‖ŷ−y‖² with step 0.1/ρmax(K0) (paper 002 §2): ‖e_t‖²/‖e_0‖² per step."""
    alpha = 0.1 / torch.linalg.eigvalsh(kernels.gated_ntk(weights, gates, x)).max()
    ws = [w.clone().requires_grad_(True) for w in weights]
    errs = []
    for _ in range(steps + 1):
        e = kernels.gated_forward(ws, gates, x)[0] - y
        errs.append(float(e.detach().square().sum()))
        grads = torch.autograd.grad(0.5 * e.square().sum(), ws)
        with torch.no_grad():
            for w, g in zip(ws, grads):
                w -= alpha * g
    return [v / errs[0] for v in errs]


def frg_entries(scale: dict, gen: torch.Generator, w: int = 500) -> pd.DataFrame:
    """Figure 2: an arbitrary diagonal K0(0,0)/d and off-diagonal K0(0,1)/d entry, their mean and
    standard deviation (ddof 1) over runs."""
    x = torch.ones(2, 1, dtype=torch.float64)
    rows = []
    for d in scale["depths"]:
        vals = []
        for _ in range(scale["entry_runs"]):
            weights, gates = frg_network(2, w, d, gen)
            vals.append(kernels.gated_ntk(weights, gates, x) / d)
        k, sd = torch.stack(vals).mean(0), torch.stack(vals).std(0) if len(vals) > 1 else torch.full((2, 2), math.nan)
        rows.append({"depth": d, "diag": float(k[0, 0]), "offdiag": float(k[0, 1]), "diag_std": float(sd[0, 0]),
                     "offdiag_std": float(sd[0, 1]), "ideal_diag": 1.0, "ideal_offdiag": MU ** (d - 1)})
    return pd.DataFrame(rows)


def frg_data(scale: dict, kind: str = "frg", inputs: str = "square") -> dict[str, pd.DataFrame]:
    """Spectra of K0/d and GD convergence per (width, depth), averaged over runs; for ``frg`` also the
    ideal spectrum of eq. (5) and the K0 entries (Figure 2); ``inputs``: Figure 4's (``FIG4_INPUTS``)."""
    gen = torch.Generator().manual_seed(0)
    widths = scale["widths"] if kind == "frg" else [scale["w_galu"]]
    spectra, conv = [], []
    for w in widths:
        for d in scale["depths"]:
            for run in range(scale["runs"]):
                x, y, d_in = _inputs(kind, gen, inputs)
                weights, g = frg_network(len(x), w, d, gen, gates=kind, d_in=d_in)
                gates = _gates_for(kind, g, x)
                ev = torch.linalg.eigvalsh(kernels.gated_ntk(weights, gates, x) / d)
                for i, (a, b) in enumerate(zip(ev.tolist(), (ev / ev.max()).tolist())):
                    spectra.append({"width": w, "depth": d, "run": run, "index": i + 1, "eig": a, "eig_over_max": b})
                for t, r in enumerate(_train_gd(weights, gates, x, y, scale["steps"])):
                    conv.append({"width": w, "depth": d, "run": run, "step": t, "err_ratio": r})
    spec = pd.DataFrame(spectra).groupby(["width", "depth", "index"], as_index=False)[["eig", "eig_over_max"]].mean()
    spec["ecdf"] = spec.groupby(["width", "depth"])["eig"].cumsum()
    spec["ecdf_over_max"] = spec.groupby(["width", "depth"])["eig_over_max"].cumsum()
    out = {"spectrum": spec,
           "convergence": pd.DataFrame(conv).groupby(["width", "depth", "step"], as_index=False)["err_ratio"].mean(),
           "entries": pd.DataFrame()}
    if kind == "frg":
        ideal = pd.DataFrame([{"depth": d, "index": i + 1, "eig": v} for d in scale["depths"]
                              for i, v in enumerate(ideal_frg_spectrum(d).tolist())])
        ideal["ecdf"] = ideal.groupby("depth")["eig"].cumsum()
        out["ideal"] = ideal
        out["entries"] = frg_entries(scale, gen)
    return out


def _depth_colors(depths):
    cmap = plt.get_cmap("viridis")
    return {d: cmap(i / max(1, len(depths) - 1)) for i, d in enumerate(depths)}


def figure1_plot(res: dict, scale: dict):
    """e.c.d.f of K0/d: the ideal of eq. (5), then each width."""
    spec, ideal, widths, color = res["spectrum"], res["ideal"], scale["widths"], _depth_colors(scale["depths"])
    fig, axes = plt.subplots(1, 1 + len(widths), figsize=(4.2 * (1 + len(widths)), 3.4), sharey=True)
    for d in scale["depths"]:
        sub = ideal[ideal.depth == d]
        axes[0].plot(sub["index"], sub.ecdf, color=color[d], label=f"d={d}")
        for ax, w in zip(axes[1:], widths):
            sub = spec[(spec.width == w) & (spec.depth == d)]
            ax.plot(sub["index"], sub.ecdf, color=color[d])
    axes[0].set_title("ideal, eq. (5)", fontsize=9)
    for ax, w in zip(axes[1:], widths):
        ax.set_title(f"w={w}, µ={MU}, {scale['runs']} runs", fontsize=9)
    for ax in axes:
        ax.set_xlabel("eigenvalue index (ascending)")
    axes[0].set_ylabel("cumulative eigenvalue of K0/d")
    axes[0].legend(fontsize=7)
    plotting.caption(fig, "002", "Fig 1", f"DGN-FRG Gram matrix K0/d at initialisation, n={N_EXAMPLES} examples")
    return fig


def _spread(ax, x, mean, std, scale: float = 1.0) -> None:
    """A band of mean ± std (the spread over runs or seeds) under the last line drawn, in its colour;
    on a log axis mean ×/÷ (1 + std/mean), the same relative width, which never reaches zero. Nothing
    where the CSV has no std (reports made before it was recorded) or one run (NaN)."""
    if std is None or not np.isfinite(std).any():
        return
    if ax.get_yscale() == "log":
        factor = 1 + std / mean
        lo, hi = mean / factor, mean * factor
    else:
        lo, hi = mean - std, mean + std
    ax.fill_between(x, scale * lo, scale * hi, color=ax.get_lines()[-1].get_color(), alpha=0.2, lw=0)


def _stat(df: pd.DataFrame, col: str) -> str:
    """What a curve shows: "mean ± std" where the CSV has the spread, else "mean"."""
    std = df.get(f"{col}_std")
    return "mean ± std" if std is not None and np.isfinite(std).any() else "mean"


def figure2_plot(entries: pd.DataFrame, scale: dict):
    """Mean diagonal and off-diagonal entries of K0/d against depth, beside eq. (5): 1 and µ^(d-1)."""
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
    for ax, col, ideal_col, title in ((axes[0], "diag", "ideal_diag", "diagonal K0(s,s)/d"),
                                      (axes[1], "offdiag", "ideal_offdiag", "off-diagonal K0(s,s')/d")):
        ax.plot(entries.depth, entries[col], "o-", label=f"measured (w=500, {_stat(entries, col)} of {scale['entry_runs']} runs)")
        _spread(ax, entries.depth, entries[col], entries.get(f"{col}_std"))
        ax.plot(entries.depth, entries[ideal_col], "k:", label="ideal, eq. (5)")
        ax.set(xlabel="depth d", ylabel=title, xticks=list(entries.depth))
        ax.set_title(title, fontsize=9)
    axes[0].set_ylim(0, 1.3)
    axes[0].legend(fontsize=7, loc="best")
    axes[1].legend(fontsize=7, loc="upper right")
    plotting.caption(fig, "002", "Fig 2", f"entries of K0/d at initialisation, µ={MU}")
    return fig


def convergence_plot(res: dict, widths: list, depths: list, name: str, runs: int, figure: str, data: str = ""):
    """Figure 3 (DGN-FRG) / Figure 4 (GaLU, ReLU): ‖e_t‖²/‖e_0‖² and the cumulative eigenvalues of
    K0/ρmax per width, means over ``runs`` random nets; ``data`` says which inputs."""
    conv, spec, color = res["convergence"], res["spectrum"], _depth_colors(depths)
    fig, axes = plt.subplots(1, 2 * len(widths), figsize=(4.2 * 2 * len(widths), 3.4))
    for i, w in enumerate(widths):
        for d in depths:
            sub = conv[(conv.width == w) & (conv.depth == d)]
            axes[i].plot(sub.step, sub.err_ratio, color=color[d], label=f"d={d}")
            sub = spec[(spec.width == w) & (spec.depth == d)]
            axes[len(widths) + i].plot(sub["index"], sub.ecdf_over_max, color=color[d], label=f"d={d}")
        axes[i].set_yscale("log")
        axes[i].set(xlabel="GD step (α = 0.1/ρmax)", ylabel="‖e_t‖² / ‖e_0‖²")
        axes[i].set_title(f"{name}: training error, w={w}", fontsize=9)
        axes[len(widths) + i].set(xlabel="eigenvalue index (ascending)", ylabel="cumulative eigenvalue of K0/ρmax")
        axes[len(widths) + i].set_title(f"{name}: spectrum of K0/ρmax, w={w}", fontsize=9)
    axes[0].legend(fontsize=7, loc="lower left")
    n = int(spec["index"].max()) if len(spec) else N_EXAMPLES
    plotting.caption(fig, "002", figure, f"{name}, {data or f'n={n} examples'}, mean of {runs} random nets")
    return fig


FIG4_NAMES = {"square": "", "sphere10": "_sphere10"}  # file suffix per Figure 4 input set


def figures1_4(scale: dict, out: Path, kinds=("frg", "galu", "relu"), inputs: str = "square") -> dict[str, dict]:
    """Figures 1-3 (DGN-FRG) and 4 (GaLU, ReLU, on ``inputs``): PNG + PDF + CSV in ``out``."""
    results = {}
    for kind, name in (("frg", "DGN-FRG"), ("galu", "GaLU"), ("relu", "ReLU")):
        if kind not in kinds:
            continue
        results[kind] = res = frg_data(scale, kind, inputs)
        widths = scale["widths"] if kind == "frg" else [scale["w_galu"]]
        fig_name = "dgn_figure3" if kind == "frg" else f"dgn_figure4_{kind}{FIG4_NAMES[inputs]}"
        if kind == "frg":
            plotting.save(figure1_plot(res, scale), pd.concat([res["spectrum"].assign(source="measured"),
                                                               res["ideal"].assign(source="ideal")]), out, "dgn_figure1")
            plotting.save(figure2_plot(res["entries"], scale), res["entries"], out, "dgn_figure2")
        data = "" if kind == "frg" else FIG4_INPUTS[inputs]
        plotting.save(convergence_plot(res, widths, scale["depths"], name, scale["runs"],
                                       "Fig 3" if kind == "frg" else "Fig 4", data), res["convergence"], out, fig_name)
        res["spectrum"].to_csv(Path(out) / f"{fig_name}_spectrum.csv", index=False, float_format="%.6g")
    return results


# ---- Figure 10 (experiment 8): a deep linear network on one example ----

EXP8 = dict(depths=[2, 4, 6, 8, 10], w=100, runs=5, steps=60, rate=0.81)


def exp8_data(scale: dict = EXP8) -> pd.DataFrame:
    """Experiment 8 (paper 002, appendix): a DLN (all gates 1), d_in = n = 1, (x, y) = (1, 1), width w,
    weights ±σ with σ² = 1/w (Assumption 1), full-batch GD at α = 0.1/d on ½e². Corollary 8.1:
    E[K0] = d(wσ²)^(d−1) = d, so the expected rate is e²_{t+1}/e²_t = (1 − αK0)² = 0.81. Per (depth,
    run, step): e²_t, the rate e²_{t+1}/e²_t, K_t, K_t/K_0 and ‖Θ_t‖ (the weights' L2 norm) and ‖Θ_t‖/‖Θ_0‖."""
    gen = torch.Generator().manual_seed(0)
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


def figure10(out: Path, scale: dict = EXP8) -> pd.DataFrame:
    """Figure 10: ``dgn_figure10.{png,pdf,csv}`` (per depth, run and step) and ``dgn_figure10_summary.csv``."""
    df = exp8_data(scale)
    plotting.save(figure10_plot(df), df, out, "dgn_figure10")
    summ = exp8_summary(df)
    summ.to_csv(Path(out) / "dgn_figure10_summary.csv", index=False, float_format="%.6g")
    return summ


# ---- Figures 7-8: adaptable vs frozen, learned vs random gates (experiments 3-5) ----

FIG7_SCALES = {"paper": dict(epochs=100, source_epochs=100, data=[], seeds=5, nu_every=10),
               "quick": dict(epochs=8, source_epochs=8, data=["dataset.limit_train=4000", "dataset.limit_test=1000"],
                             seeds=1, nu_every=2)}
FIG7_NETWORKS = {  # label -> regime overrides (paper 002 Table 3 and experiments 3-5)
    "soft-GaLU β=4": ["regime=soft_galu", "regime.beta=4"],
    "soft-ReLU β=4": ["regime=soft_relu", "regime.beta=4", "regime.eps=0"],
    "ReLU": ["regime=relu"],
    "GaLU frozen": ["regime=galu"],
    "frozen ReLU": ["regime=frozen_relu"],
}
NU_NETWORKS = ("soft-GaLU β=4", "ReLU", "GaLU frozen", "learned gates")


NU_COLUMNS = {  # column -> (Gram matrix H_t, paper 002 Fig 8 panel); Kʷ = Ψʷᵀ Ψʷ, Kᵃ = Ψᵃᵀ Ψᵃ (§4, K = Kʷ + Kᵃ)
    "nu": (r"$\hat K_t$", "i"),
    "nu_value": (r"$\hat K^w_t$ (the paper prints $\hat K_t$ twice: we read the value block)", "ii"),
    "nu_gate_raw": (r"$K^a_t$ (not normalised)", "iii"),
    "nu_gate": (r"$\hat K^a_t$", "iv"),
}


def _nu_over_training(cfg, run_dir: Path, every: int) -> list[dict]:
    """ν_t = yᵀ H_t⁻¹ y on 200 training examples for each Gram choice of ``NU_COLUMNS``: the whole NTK
    (all trainable and gating parameters) and its value block, trace-normalised, and the gating block
    Kᵃ (soft gates only: hard gates have no gradient, so Kᵃ = 0 and its ν is NaN) raw and normalised."""
    data = data_mod.load(cfg.dataset, cfg.data, "cpu")
    x, y = examples(data, 200)
    rows = []
    for ep in range(0, cfg.epochs + 1, every):
        blocks = kernels.ntk_blocks(model_at(cfg, run_dir, ep, data).double(), x.double(), chunk=50)
        gate = blocks.get("feature")
        has_gate = gate is not None and float(torch.trace(gate)) > 0
        rows.append({"epoch": ep, "nu": kernels.nu(sum(blocks.values()), y), "nu_value": kernels.nu(blocks["value"], y),
                     "nu_gate_raw": kernels.nu(gate, y, normalise=False) if has_gate else math.nan,
                     "nu_gate": kernels.nu(gate, y) if has_gate else math.nan})
    return rows


def figure7_8_data(scale: dict, common: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Binary-MNIST, FC w=100 d=6, RMSprop 1e-4: train/test accuracy over epochs of the networks of
    experiments 3-5 and ν_t of four of them, means and stds over seeds."""
    base = [*common, "dataset=binary_mnist", "arch=fc", "arch.dense=[100,100,100,100,100]", "optimizer=rmsprop",
            "optimizer.lr=1e-4", *scale["data"]]
    every = scale["nu_every"]
    ckpts = f"checkpoint_epochs=[{','.join(map(str, range(0, scale['epochs'] + 1, every)))}]"
    curves, nus = [], []
    for seed in range(scale["seeds"]):
        _, src_dir, _ = ensure_run([*base, "regime=relu", f"seed={seed}", f"epochs={scale['source_epochs']}", ckpts])
        nets = dict(FIG7_NETWORKS)
        nets["learned gates"] = ["regime=learned_gates", f"regime.source={src_dir}", "regime.source_ckpt=last"]
        for label, over in nets.items():
            cfg, run_dir, res = ensure_run([*base, *over, f"seed={seed}", f"epochs={scale['epochs']}", ckpts])
            curves += [{"network": label, "seed": seed, "epoch": h["epoch"], "train_acc": h["train_acc"],
                        "test_acc": h["test_acc"]} for h in res["history"]]
            if label in NU_NETWORKS:
                nus += [{"network": label, "seed": seed, **row} for row in _nu_over_training(cfg, run_dir, every)]
    return _mean_std(pd.DataFrame(curves), ["train_acc", "test_acc"]), _mean_std(pd.DataFrame(nus), list(NU_COLUMNS))


def _mean_std(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """Per (network, epoch): the mean over seeds of each column and its std (``<col>_std``, ddof 1; NaN for one seed)."""
    g = df.groupby(["network", "epoch"], as_index=False)[cols]
    return g.mean().merge(g.std().rename(columns={c: f"{c}_std" for c in cols}), on=["network", "epoch"])


def figure7_plot(df: pd.DataFrame, scale: dict):
    """Training and test accuracy (%) over epochs of the networks of experiments 3-5, means over seeds
    (± std where the CSV has it)."""
    panels = [("train_acc", list(FIG7_NETWORKS)[:4], "training: the 4 networks of experiment 3"),
              ("test_acc", list(FIG7_NETWORKS)[:4], "test: the 4 networks of experiment 3"),
              ("test_acc", ["learned gates", "GaLU frozen"], "test: learned vs non-learned gates (exp. 5)"),
              ("test_acc", ["ReLU", "frozen ReLU"], "test: adaptable vs frozen ReLU gates (exp. 4)")]
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.4))
    for ax, (col, labels, title) in zip(axes, panels):
        for label in labels:
            sub = df[df.network == label]
            ax.plot(sub.epoch, 100 * sub[col], "o-", ms=3, label=label)
            _spread(ax, sub.epoch, sub[col], sub.get(f"{col}_std"), scale=100)
        ax.set_title(title, fontsize=9)
        ax.set(xlabel="epoch", ylabel=f"{'training' if col == 'train_acc' else 'test'} accuracy (%)")
        ax.legend(fontsize=7, loc="lower right")
    plotting.caption(fig, "002", "Fig 7", f"Binary-MNIST, FC w=100 d=6, RMSprop 1e-4, {_stat(df, 'test_acc')} of {scale['seeds']} seed(s)"
                     + (f", {_data_text(scale)}" if scale["data"] else ""))
    return fig


def _data_text(scale: dict) -> str:
    return " ".join(x.split("=", 1)[1] for x in scale["data"]) + " train/test images"


def figure8_plot(nu_df: pd.DataFrame, scale: dict):
    """ν_t = yᵀ H_t⁻¹ y over training, one panel per Gram choice of ``NU_COLUMNS`` that the CSV has
    (log scale: the paper's ordering is at the end); the gating-block panels have the soft-gated net only."""
    cols = [c for c in NU_COLUMNS if c in nu_df and nu_df[c].notna().any()]
    fig, axes = plt.subplots(1, len(cols), figsize=(5.0 * len(cols), 3.8), squeeze=False)
    for ax, col in zip(axes[0], cols):
        ax.set_yscale("log")
        for label, sub in nu_df[nu_df[col].notna()].groupby("network"):
            ax.plot(sub.epoch, sub[col], "o-", label=label)
            _spread(ax, sub.epoch, sub[col], sub.get(f"{col}_std"))
        gram, panel = NU_COLUMNS[col]
        ax.set(xlabel="epoch", ylabel=r"$\nu_t = y^\top H_t^{-1} y$")
        ax.set_title(f"({panel}) H = {gram}", fontsize=8)
        ax.legend(fontsize=7, loc="upper right")
    plotting.caption(fig, "002", "Fig 8", f"Binary-MNIST, 200 examples, {_stat(nu_df, 'nu')} of {scale['seeds']} seed(s)")
    return fig


def figures7_8(scale: dict, common: list[str], out: Path) -> pd.DataFrame:
    df, nu_df = figure7_8_data(scale, common)
    plotting.save(figure7_plot(df, scale), df, out, "dgn_figure7")
    plotting.save(figure8_plot(nu_df, scale), nu_df, out, "dgn_figure8")
    return df


def replot(out: Path, scale: str) -> list[str]:
    """Redraw the figures of a report directory from the CSVs beside them (the data each figure
    plots), with the current plotting code; ``scale`` names the FRG and Figure 7 scales they ran at.
    Returns the figures redrawn."""
    out, frg, fig7, done = Path(out), FRG_SCALES[scale], FIG7_SCALES[scale], []
    csv = lambda name: pd.read_csv(out / f"{name}.csv") if (out / f"{name}.csv").is_file() else None  # noqa: E731
    if (both := csv("dgn_figure1")) is not None:
        res = {"spectrum": both[both.source == "measured"], "ideal": both[both.source == "ideal"]}
        plotting.save(figure1_plot(res, frg), both, out, "dgn_figure1")
        done.append("dgn_figure1")
    if (entries := csv("dgn_figure2")) is not None:
        plotting.save(figure2_plot(entries, frg), entries, out, "dgn_figure2")
        done.append("dgn_figure2")
    figs = [("dgn_figure3", "DGN-FRG", frg["widths"], "")]
    figs += [(f"dgn_figure4_{kind}{suffix}", label, [frg["w_galu"]], FIG4_INPUTS[inputs])
             for inputs, suffix in FIG4_NAMES.items() for kind, label in (("galu", "GaLU"), ("relu", "ReLU"))]
    for name, label, widths, data in figs:
        conv, spec = csv(name), csv(f"{name}_spectrum")
        if conv is not None and spec is not None:
            fig = convergence_plot({"convergence": conv, "spectrum": spec}, widths, frg["depths"], label, frg["runs"],
                                   "Fig 3" if name == "dgn_figure3" else "Fig 4", data)
            plotting.save(fig, conv, out, name)
            done.append(name)
    if (exp8 := csv("dgn_figure10")) is not None:
        plotting.save(figure10_plot(exp8), exp8, out, "dgn_figure10")
        done.append("dgn_figure10")
    if (df := csv("dgn_figure7")) is not None:
        plotting.save(figure7_plot(df, fig7), df, out, "dgn_figure7")
        done.append("dgn_figure7")
    if (nu_df := csv("dgn_figure8")) is not None:
        plotting.save(figure8_plot(nu_df, fig7), nu_df, out, "dgn_figure8")
        done.append("dgn_figure8")
    return done
