"""Paper 002 Figures 7-8 (experiments 3-5): adaptable vs frozen, learned vs random gates on Binary-MNIST
(see :mod:`gatelab.papers.dgn`)."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import torch

from gatelab.analyses import kernels
from gatelab.data import datasets as data_mod
from gatelab.launch.runner import ensure_run, examples, model_at
from gatelab.papers import plotting
from gatelab.papers.dgn.figures import _spread, _stat
from gatelab.papers.plotting import plt

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


def _seed_runs(scale: dict, common: list[str], seed: int) -> tuple[list[str], dict[str, list[str]]]:
    """One seed's runs as run.py overrides: the ReLU source of the learned gates (trained first) and each
    network of experiments 3-5; the source's directory is known from its key before it trains."""
    from gatelab.core.runs import compose, run_dir
    base = [*common, "dataset=binary_mnist", "arch=fc", "arch.dense=[100,100,100,100,100]", "optimizer=rmsprop",
            "optimizer.lr=1e-4", *scale["data"], f"seed={seed}"]
    ckpts = f"checkpoint_epochs=[{','.join(map(str, range(0, scale['epochs'] + 1, scale['nu_every'])))}]"
    relu = [*base, "regime=relu", f"epochs={scale['source_epochs']}", ckpts]
    nets = dict(FIG7_NETWORKS)
    nets["learned gates"] = ["regime=learned_gates", f"regime.source={run_dir(compose(['progress=false', *relu]))}",
                             "regime.source_ckpt=last"]
    return relu, {label: [*base, *over, f"epochs={scale['epochs']}", ckpts] for label, over in nets.items()}


def figure7_8_runs(scale: dict, common: list[str]) -> list[list[str]]:
    """The runs Figures 7-8 train (``ensure_run``'s overrides, in order): what a recipe's dry run prices."""
    return [run for seed in seeds_of(scale) for relu, nets in [_seed_runs(scale, common, seed)]
            for run in (relu, *nets.values())]


def seeds_of(scale: dict) -> range:
    """The scale's ``seeds`` seeds from its ``first_seed`` (0 unless ``--seed`` set it: a confirmation's held-out
    block, issue #55)."""
    first = int(scale.get("first_seed", 0))
    return range(first, first + int(scale["seeds"]))


def figure7_8_data(scale: dict, common: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Binary-MNIST, FC w=100 d=6, RMSprop 1e-4: train/test accuracy over epochs of the networks of
    experiments 3-5 and ν_t of four of them, means and stds over seeds."""
    curves, nus = [], []
    for seed in seeds_of(scale):
        relu, nets = _seed_runs(scale, common, seed)
        ensure_run(relu)
        for label, over in nets.items():
            cfg, run_dir, res = ensure_run(over)
            curves += [{"network": label, "seed": seed, "epoch": h["epoch"], "train_acc": h["train_acc"],
                        "test_acc": h["test_acc"]} for h in res["history"]]
            if label in NU_NETWORKS:
                nus += [{"network": label, "seed": seed, **row} for row in _nu_over_training(cfg, run_dir, scale["nu_every"])]
    return _mean_std(pd.DataFrame(curves), ["train_acc", "test_acc"]), _mean_std(pd.DataFrame(nus), list(NU_COLUMNS))


def _mean_std(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """Per (network, epoch): the mean over seeds of each column, its std (``<col>_std``, ddof 1; NaN for one
    seed) and the seeds (``n``)."""
    g = df.groupby(["network", "epoch"], as_index=False)[cols]
    n = df.groupby(["network", "epoch"], as_index=False).size().rename(columns={"size": "n"})
    return g.mean().merge(g.std().rename(columns={c: f"{c}_std" for c in cols}), on=["network", "epoch"]).merge(
        n, on=["network", "epoch"])


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
