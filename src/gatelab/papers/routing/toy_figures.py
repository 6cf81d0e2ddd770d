"""Paper 003 Figs 3-6: the toy routing task and XoR against the reduced ODEs, all runs, summary and figures
(see :mod:`gatelab.papers.routing.toy`).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import numpy as np
import torch

Tensor = torch.Tensor
from gatelab.papers.routing.toy import K_FIG4, M_FIG4, PAPER_ZERO_SHOT, output_grid, pair_mask, rsa_matrix, toy_data
from gatelab.papers.routing.toy_experiments import decoupled_vs_reduction, init_scale_sweep, k_sweep, pathway_race, random_vs_reduction, step_size_scaling, xor_curves


# ----------------------------------------------------------------------------------------------
# Summary and figures
# ----------------------------------------------------------------------------------------------

SHOWN = {"M": "M", "K": "K", "hidden": "N_h", "lr": "λ", "steps": "steps", "sigma0": "σ0", "b0": "b0", "h": "h",
         "n_runs": "nets", "tau": "τ", "Ps": "P", "Ks": "K", "sigma0s": "σ0"}


def called(fn, **given) -> dict:
    """The parameters a figure's function ran with (its defaults and what the call gave), for the
    page's row text: what ran, not what is typed (the shown ones, :data:`SHOWN`)."""
    import inspect
    bound = inspect.signature(fn).bind_partial(**given)
    bound.apply_defaults()
    return {k: v for k, v in bound.arguments.items() if k in SHOWN and v is not None}


def run_all(n_runs: int = 10, k_runs: int = 3, seed: int = 0) -> dict:
    """Everything :func:`summary` and :func:`figures` need (≈ 20 s on one CPU thread); ``seed`` draws every random
    initialisation (the confirmation runs use held-out ones; the ODEs and the decoupled start have none)."""
    t0 = time.time()
    res = {"decoupled": decoupled_vs_reduction(seed=seed), "scaling": step_size_scaling(),
           "random": random_vs_reduction(n_runs=n_runs, seed=seed),
           "random_xavier": random_vs_reduction(n_runs=n_runs, kind="xavier", sv_every=50, seed=seed),
           "race": pathway_race(), "k_sweep": k_sweep(n_runs=k_runs, seed=seed),
           "init": init_scale_sweep(n_runs=k_runs, seed=seed), "xor": xor_curves(n_runs=n_runs, seed=seed)}
    res["params"] = {"seed": seed, "fig3": called(xor_curves, n_runs=n_runs), "fig4": called(random_vs_reduction, n_runs=n_runs),
                     "fig5b": {**called(pathway_race), "Ps": list(res["race"]["P"])},
                     "fig5c": {**called(k_sweep, n_runs=k_runs), "Ks": [round(x * called(k_sweep)["M"])
                                                                       for x in res["k_sweep"]["K_over_M"]]},
                     "fig6": {**called(init_scale_sweep, n_runs=k_runs), "sigma0s": [float(x) for x in res["init"]["sigma0"]]}}
    res["seconds"] = time.time() - t0
    return res


def summary(res: Optional[dict] = None) -> dict:
    """Headline numbers (computes :func:`run_all` unless given its result)."""
    res = res or run_all()
    d, r, rx, race, ks, ini, xo = (res[k] for k in ("decoupled", "random", "random_xavier", "race",
                                                    "k_sweep", "init", "xor"))
    Pmax = max(race["P"])
    return {
        "fig4_decoupled_gap_rk4": d["gap_rk4"], "fig4_decoupled_gap_euler": d["gap_euler"],
        "fig4_gap_vs_lr": {row["lr"]: row["gap_rk4"] for row in res["scaling"]},
        "fig4_gap_order": [row["order"] for row in res["scaling"][1:]],
        "fig4_random_gap_mean": float(r["gaps"].mean()), "fig4_random_gap_max": float(r["gaps"].max()),
        "fig4_random_gap_euler_mean": float(r["gaps_euler"].mean()),
        "fig4_random_xavier_gap_mean": float(rx["gaps"].mean()),
        "fig4_random_trained_err": float(r["trained_err"].mean()),
        "fig4_random_untrained_err": float(r["untrained_err"].mean()),
        "fig4_random_similarity": float(r["similarity"].mean()),
        "fig4f_ratio_theory": d["ratio"], "fig4f_ratio_random": float(r["sv_ratio"].mean()), "sqrt_M": d["sqrt_M"],
        "fig5b_t_half": race["t_half"], "fig5b_ratio": race["ratio"],
        "fig5b_ratio_over_P_quarter": {P: race["ratio"][P] / P ** 0.25 for P in race["P"]},
        "fig5b_drift_full_sharing": race["drift"][Pmax], "fig5b_drift_max": max(race["drift"].values()),
        "fig5c_K_over_M": ks["K_over_M"],
        "fig5c_trained_err": ks["trained_err"].mean(1).tolist(),
        "fig5c_untrained_err": ks["untrained_err"].mean(1).tolist(),
        "fig5c_theory_trained_err": ks["theory_trained_err"],
        # the threshold rule's inputs (issue #39): each K's gap untrained − trained over the nets, its s.e., and
        # the scale of a pair's error, ½‖Y‖² (a zero output's), against which 1% is the toy's "1 point"
        "fig5c_gap_se": [float(np.std(g, ddof=1) / np.sqrt(len(g))) if len(g) > 1 else float("nan")
                         for g in np.asarray(ks["untrained_err"]) - np.asarray(ks["trained_err"])],
        "fig5c_nets": int(ks["trained_err"].shape[1]), "fig5c_zero_output_err": ks["zero_output_err"],
        "fig6_sigma0": [float(s) for s in ini["sigma0"]],
        "fig6_trained_err": ini["trained_err"].tolist(), "fig6_untrained_err": ini["untrained_err"].tolist(),
        "fig6_similarity": ini["similarity"].tolist(),
        "fig3_theory_final": float(xo["theory"][-1]), "fig3_relu_final_mean": float(xo["relu"][-1].mean()),
        "fig3_gap": xo["gap"], "fig3_a0": xo["a0"],
        "params": res.get("params", {}),
    }


def figures(out_dir, res: Optional[dict] = None) -> dict:
    """fig3_xor, fig4_routing, fig4gh_representation, fig5b_race, fig5c_k_sweep, fig6_init_scale,
    fig6d_outputs (PNG+PDF+CSV); returns summary."""
    import pandas as pd

    from gatelab.papers.plotting import caption, plt, save
    res = res or run_all()
    out = Path(out_dir)

    xo = res["xor"]
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.plot(xo["t"], xo["relu"], color="r", lw=0.5)
    ax.plot([], color="r", lw=0.5, label=f"ReLU nets ({xo['relu'].shape[1]} runs)")
    ax.plot(xo["t"], xo["theory"], "b--", label="GDLN (eq. 23)")
    ax.set(xlabel="step", ylabel="loss", title="XoR: ReLU nets against the GDLN reduction")
    ax.title.set_fontsize(8)
    ax.legend(fontsize=7, loc="upper right")
    caption(fig, "003", "Fig 3c")
    save(fig, pd.DataFrame({"step": xo["t"], "theory": xo["theory"], "relu_mean": xo["relu"].mean(1)}), out, "fig3_xor")

    _figure4(res, out, plt, save, pd, caption)
    _figure4gh(res, out, plt, save, pd, caption)
    _figures5_6(res, out, plt, save, pd, caption)
    _figure6d(res, out, plt, save, pd, caption)
    return summary(res)


def _matrices_csv(pd, panels: dict):
    """Long form of the matrices a figure draws: one line per (panel, row, column, value)."""
    return pd.DataFrame([{"panel": name, "row": r, "col": c, "value": float(v)}
                         for name, m in panels.items() for (r, c), v in np.ndenumerate(np.asarray(m))])


def _draw_grid(ax, grid: np.ndarray, mask, n_out: int, n_items: int, vmax: float):
    """One output grid (:func:`output_grid`): block (i, j) is Ŷ_ij; untrained pairs framed in black."""
    im = ax.imshow(grid, cmap="coolwarm", vmin=-vmax, vmax=vmax, interpolation="nearest")
    M = grid.shape[0] // n_out
    for i in range(M):
        for j in range(M):
            if not bool(mask[i, j]):
                ax.add_patch(plt_rect((j * n_items - 0.5, i * n_out - 0.5), n_items, n_out))
    ax.set(xticks=[(j + 0.5) * n_items - 0.5 for j in range(M)], xticklabels=range(M),
           yticks=[(i + 0.5) * n_out - 0.5 for i in range(M)], yticklabels=range(M),
           xlabel="output domain j (items within)", ylabel="input domain i (features within)")
    return im


def plt_rect(xy, w, h):
    from matplotlib.patches import Rectangle
    return Rectangle(xy, w, h, fill=False, edgecolor="k", lw=1.2)


def _figure4gh(res: dict, out: Path, plt, save, pd, caption) -> None:
    """Fig 4g: the cosine similarity of first-hidden-layer codes of every (input domain, item), first
    random-init run; 4h: every pair's output at the end of training, untrained pairs framed, beside the target."""
    X, Y = toy_data()
    net, mask = res["random"]["net"], pair_mask(M_FIG4, K_FIG4)
    rsa, grid = rsa_matrix(net, X, 0), output_grid(net, X, 0)
    vmax = float(np.abs(Y.numpy()).max())
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.2), layout="constrained", width_ratios=[1.0, 0.8, 0.25])
    im = axes[0].imshow(rsa, cmap="coolwarm", vmin=-1, vmax=1, interpolation="nearest")
    axes[0].set(title="Fig 4g: cosine of hidden codes h1 (layer 1)", xlabel="(input domain, item), domain-major",
                ylabel="(input domain, item)", xticks=[], yticks=[])
    fig.colorbar(im, ax=axes[0], fraction=0.04)
    im = _draw_grid(axes[1], grid, mask, Y.shape[0], Y.shape[1], vmax)
    axes[1].set_title("Fig 4h: outputs Ŷ_ij at the end (untrained pairs framed)")
    axes[2].imshow(Y.numpy(), cmap="coolwarm", vmin=-vmax, vmax=vmax, interpolation="nearest")
    axes[2].set(title="target Y", xlabel="item", ylabel="feature", xticks=range(Y.shape[1]), yticks=range(Y.shape[0]))
    for ax in axes:
        ax.title.set_fontsize(9)
    fig.colorbar(im, ax=axes[1:], fraction=0.04)
    caption(fig, "003", "Fig 4g-h", f"toy routing task, M={M_FIG4}, K={K_FIG4}, first of "
            f"{res['random']['loss_sim'].shape[1]} random-init runs")
    save(fig, _matrices_csv(pd, {"4g_rsa": rsa, "4h_outputs": grid, "target": Y.numpy()}), out, "fig4gh_representation")


def _figure6d(res: dict, out: Path, plt, save, pd, caption) -> None:
    """Fig 6d: every pair's output at the end of training for the smallest, a middle and the largest σ₀."""
    X, Y = toy_data()
    ini, mask = res["init"], pair_mask(M_FIG4, K_FIG4)
    n = len(ini["sigma0"])
    picks = (0, n // 2, n - 1)
    vmax = float(np.abs(Y.numpy()).max())
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.4), layout="constrained")
    for ax, i in zip(axes, picks):
        im = _draw_grid(ax, ini["outputs"][i], mask, Y.shape[0], Y.shape[1], vmax)
        ax.set_title(f"σ₀={ini['sigma0'][i]:.2f}: untrained error {ini['untrained_err'][i]:.3g}", fontsize=9)
    fig.colorbar(im, ax=axes, fraction=0.02, label="output")
    caption(fig, "003", "Fig 6d", f"toy routing task, M={M_FIG4}, K={K_FIG4}, outputs of every (input, output) pair "
            "by initial scale (untrained pairs framed)")
    save(fig, _matrices_csv(pd, {f"sigma0={ini['sigma0'][i]:.4g}": ini["outputs"][i] for i in picks}), out, "fig6d_outputs")


def _figure4(res: dict, out: Path, plt, save, pd, caption) -> None:
    """Fig 4e-f: the decoupled and random-init simulations against eqs 44-46."""
    d, r = res["decoupled"], res["random"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    runs = r["loss_sim"].shape[1]
    a1.plot(r["loss_sim"], color="r", lw=0.5)
    a1.plot([], color="r", lw=0.5, label=f"random init ({runs} runs)")
    a1.plot(d["loss_sim"], color="g", lw=3, label="decoupled init")
    a1.plot(d["loss_pred"], "b--", label="reduction, eqs 44-46")
    a1.set(xlabel="step (λ = 0.02)", ylabel="loss L₁", title="Fig 4e: loss")
    a1.legend(fontsize=8)
    steps = len(r["sv_step"])
    a2.plot(r["sv_step"], r["sv"][:, :, 1, :].reshape(steps, -1), color="r", lw=0.4)
    a2.plot(r["sv_step"], r["sv"][:, :, 0, :].reshape(steps, -1), color="m", lw=0.4)
    a2.plot(d["B"][:, 1], color="b")
    a2.plot(d["B"][:, 0], color="c")
    for color, label in (("r", "random init: shared layer"), ("m", "random init: encoder"),
                         ("b", "reduction: B2 (shared)"), ("c", "reduction: B1 (encoder)")):
        a2.plot([], color=color, label=label)
    a2.set(xlabel="step (λ = 0.02)", ylabel="singular value (per mode)", title="Fig 4f: singular values")
    a2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))  # beside: the curves fill the axes
    caption(fig, "003", "Fig 4e-f", f"toy routing task, M={M_FIG4}, K={K_FIG4}")
    save(fig, pd.DataFrame({"step": np.arange(len(d["loss_sim"])), "decoupled": d["loss_sim"],
                            "theory": d["loss_pred"], "random_mean": r["loss_sim"].mean(1)}), out, "fig4_routing")


def _figures5_6(res: dict, out: Path, plt, save, pd, caption) -> None:
    """Fig 5b (pathway race), 5c (K sweep) and 6 (initial scale)."""
    race = res["race"]
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    df = {"t": race["t"]}
    for P in race["P"]:
        ax.plot(race["t"], race["B"][P][:, 1, 0], label=f"P={P}")
        df[f"B2_P{P}"] = race["B"][P][:, 1, 0]
    ax.set(xlabel="t / τ", ylabel="B2 (top mode)", title="pathway race: P pathways share the layer, M=10")
    ax.title.set_fontsize(8)
    ax.legend(fontsize=7)
    caption(fig, "003", "Fig 5b", "reduced ODEs")
    save(fig, pd.DataFrame(df), out, "fig5b_race")

    ks = res["k_sweep"]
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    runs = ks["trained_err"].shape[1]
    ax.plot(ks["K_over_M"], ks["trained_err"].mean(1), "bo-", label=f"trained pairs (mean of {runs} runs)")
    ax.plot(ks["K_over_M"], ks["untrained_err"].mean(1), "ro-", label=f"untrained pairs (mean of {runs} runs)")
    ax.axhline(ks["theory_trained_err"], color="b", ls="--", lw=1, label="trained, reduction (eqs 44-46)")
    meet = PAPER_ZERO_SHOT["dln"]
    ax.axvline(meet, color="k", ls=":", lw=1, label=f"paper: errors meet at K/M≈{meet:.2f}")
    ax.set(xlabel="K / M", ylabel="½‖Y−Ŷ‖² at the end", title=f"toy task, M={round(ks['K'][0] / ks['K_over_M'][0])}")
    ax.legend(fontsize=7, loc="upper right")
    caption(fig, "003", "Fig 5c")
    save(fig, pd.DataFrame({"K": ks["K"], "K_over_M": ks["K_over_M"], "trained": ks["trained_err"].mean(1),
                            "untrained": ks["untrained_err"].mean(1)}), out, "fig5c_k_sweep")

    ini = res["init"]
    n = len(ini["sigma0"])
    fig, axes = plt.subplots(1, 5, figsize=(18, 3.9), layout="constrained")
    axes[0].plot(ini["loss"])
    axes[0].legend([f"σ₀={v:.2f}" for v in ini["sigma0"]], fontsize=7)
    axes[0].set(xlabel="step", ylabel="loss L₁", title="Fig 6a: loss by initial scale")
    axes[1].plot(ini["sigma0"], ini["trained_err"], "bo-", label="trained routes")
    axes[1].plot(ini["sigma0"], ini["untrained_err"], "ro-", label="untrained routes")
    axes[1].set(xlabel="initial scale σ₀", ylabel="½‖Y−Ŷ‖² at the end", title="Fig 6b")
    axes[1].legend(fontsize=8)
    for ax, i in zip(axes[2:], (0, n // 2, n - 1)):
        im = ax.imshow(ini["rsa"][i], cmap="coolwarm", vmin=-1, vmax=1)
        ax.set(title=f"Fig 6c: σ₀={ini['sigma0'][i]:.2f}", xticks=[], yticks=[],
               xlabel="(input domain, item), domain-major", ylabel="(input domain, item)")
    fig.colorbar(im, ax=axes[2:], fraction=0.02, label="cosine of hidden codes")
    caption(fig, "003", "Fig 6", f"toy routing task, M={M_FIG4}, K={K_FIG4}, by initial scale σ₀")
    save(fig, pd.DataFrame({"sigma0": ini["sigma0"], "trained": ini["trained_err"], "untrained": ini["untrained_err"],
                            "similarity": ini["similarity"]}), out, "fig6_init_scale")
