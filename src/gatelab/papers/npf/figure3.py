"""Paper 001 Figure 3 equivalents (see :mod:`gatelab.papers.npf`).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from gatelab.papers import plotting
from gatelab.papers.plotting import plt
from gatelab.analyses import kernels
from gatelab.data import datasets as data_mod
from gatelab.launch.runner import ensure_run, examples, model_at
from gatelab.papers.npf.table2 import PAPER_TABLE2


# ---- Figure 3 ----

CNTK_GCONV = 77.43  # Arora et al. 2019, as quoted in paper 001 §6.2

# Scales: "paper" follows the paper (docs/papers.md); "quick" fits a 2-core CPU in minutes.
SCALES = {
    "paper": {"left": dict(relu_epochs=60, stages=[10, 20, 30, 40, 50, 60], flnpf_epochs=80, data=[]),
              "middle": dict(epochs=30, data=[]), "right": dict(epochs=30, data=[])},
    "quick": {"left": dict(relu_epochs=6, stages=[1, 2, 3, 4, 5, 6], flnpf_epochs=3,
                           data=["dataset.limit_train=2000", "dataset.limit_test=1000"]),
              "middle": dict(epochs=8, data=[]), "right": dict(epochs=5, data=["dataset.limit_train=10000"])},
    # the left panel at a 2-core CPU's scale with seeds enough for its verdict (issue #37 §2): 3 stages, 3 seeds,
    # and each FLNPF net untrained as the control (the page's Fig 3 left row); the others as at the quick scale
    "reduced": {"left": dict(relu_epochs=6, stages=[1, 3, 6], flnpf_epochs=3, seeds=[0, 1, 2], controls=True,
                             data=["dataset.limit_train=2000", "dataset.limit_test=1000"]),
                "middle": dict(epochs=8, data=[]), "right": dict(epochs=5, data=["dataset.limit_train=10000"])},
}


def _epochs_list(epochs) -> str:
    return f"checkpoint_epochs=[{','.join(map(str, epochs))}]"


def figure3_left_data(common: list[str], scale: dict) -> pd.DataFrame:
    """FLNPF-k's best test accuracy with the gates of the ReLU run at stage k, beside the references; a row
    per (seed, stage) over the scale's ``seeds`` (the config's seed where it lists none). With ``controls``,
    each FLNPF net untrained too (its random value network on the stage's gates: the page's control)."""
    from gatelab.papers.report import untrained_accuracy
    return pd.DataFrame([row for base in _left_base(common, scale) for row in _left_seed(base, scale, untrained_accuracy)])


def _left_base(common: list[str], scale: dict) -> list[list[str]]:
    """Each seed's overrides of the left panel (the config's seed where the scale lists none)."""
    base = [*common, "dataset=cifar10", "arch=gconv", "optimizer=adam", *scale["data"]]
    return [[*base, *([f"seed={seed}"] if seed is not None else [])] for seed in scale.get("seeds") or [None]]


def _left_runs(base: list[str], scale: dict) -> tuple[list[str], list[str], list[list[str]]]:
    """One seed's runs (ReLU with its stage checkpoints, FRNPF-II, FLNPF per stage) as run.py overrides;
    FLNPF's source is the ReLU run's directory, known from its key before it trains."""
    from gatelab.core.runs import compose, run_dir
    relu = [*base, "regime=relu", f"epochs={scale['relu_epochs']}", _epochs_list(scale["stages"])]
    source = run_dir(compose(["progress=false", *relu]))  # what ensure_run trains it into
    frnpf = [*base, "regime=frnpf_ii", f"epochs={scale['flnpf_epochs']}"]
    return relu, frnpf, [[*base, "regime=flnpf", f"regime.source={source}", f"regime.source_ckpt=epoch_{ep}",
                          f"epochs={scale['flnpf_epochs']}"] for ep in scale["stages"]]


def _left_seed(base: list[str], scale: dict, untrained) -> list[dict]:
    relu_run, frnpf_run, flnpf_runs = _left_runs(base, scale)
    _, relu_dir, relu = ensure_run(relu_run)
    _, _, frnpf = ensure_run(frnpf_run)
    rows = []
    for k, (ep, run) in enumerate(zip(scale["stages"], flnpf_runs), 1):
        _, flnpf_dir, res = ensure_run(run)
        rows.append({"stage": k, "source_epoch": ep, "flnpf_best_test_acc": 100 * res["best_test_acc"],
                     "relu_test_acc_at_source_epoch": 100 * relu["history"][ep - 1]["test_acc"],
                     **({"flnpf_untrained_acc": untrained(flnpf_dir)} if scale.get("controls") else {}),
                     "relu_best_test_acc": 100 * relu["best_test_acc"], "frnpf_ii_best_test_acc": 100 * frnpf["best_test_acc"],
                     "cntk_published": CNTK_GCONV, "seed": int(relu["seed"])})
    return rows


def runs_in(df: pd.DataFrame) -> str:
    """The runs a Figure 3 CSV shows, from the CSV: its ``seed`` column's seeds; a CSV made before that column
    is one curve (one row per epoch or stage), i.e. one run; "?" where it is neither."""
    if "seed" in df:
        return str(df.seed.nunique())
    key = "epoch" if "epoch" in df else "stage"
    return "1" if key in df and df[key].is_unique else "?"


def _seeds(df: pd.DataFrame) -> str:
    n = runs_in(df)
    return f"{n} seed{'' if n == '1' else 's'}"


def _scale_text(scale: dict) -> str:
    return ", ".join(x.replace("dataset.limit_", "") for x in scale["data"] if x.startswith("dataset.limit_")) or "all images"


def figure3_left_plot(df: pd.DataFrame, scale: dict):
    """FLNPF-k's best test accuracy per stage, beside our ReLU and FRNPF-II and the published
    ReLU, FRNPF-II (Table 2, GCONV Adam) and CNTK values."""
    paper = PAPER_TABLE2[("gconv", "adam", "cifar10")]
    fig, ax = plt.subplots(figsize=(8.4, 4.0))
    by = df.groupby("stage")
    mean, se = by.flnpf_best_test_acc.mean(), by.flnpf_best_test_acc.sem().fillna(0.0)  # s.e. over seeds; 0 for one
    ax.errorbar(mean.index, mean, yerr=se, fmt="o-", capsize=3, label="ours: FLNPF-k (gates of ReLU at stage k), ± s.e.")
    if "flnpf_untrained_acc" in df:
        ax.plot(mean.index, by.flnpf_untrained_acc.mean(), "x:", color="tab:gray", label="ours: FLNPF-k untrained (control)")
    ax.axhline(df.relu_best_test_acc.mean(), color="k", ls="-", lw=1, label="ours: ReLU (best)")
    ax.axhline(df.frnpf_ii_best_test_acc.mean(), color="tab:red", ls="-", lw=1, label="ours: FRNPF-II")
    ax.axhline(paper["relu"][0], color="k", ls="--", lw=1, label=f"paper: ReLU {paper['relu'][0]}")
    ax.axhline(paper["frnpf_ii"][0], color="tab:red", ls="--", lw=1, label=f"paper: FRNPF-II {paper['frnpf_ii'][0]}")
    ax.axhline(CNTK_GCONV, color="tab:green", ls=":", lw=1, label=f"CNTK {CNTK_GCONV} (published)")
    ax.set_xlabel(f"stage k (ReLU epoch {', '.join(map(str, by.source_epoch.first()))})")
    ax.set_ylabel("best test accuracy (%)")
    ax.set_title(f"GCONV / CIFAR-10 / Adam, {_seeds(df)}, {_scale_text(scale)}, FLNPF {scale['flnpf_epochs']} epochs",
                 fontsize=8)
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))  # beside the axes: never over the data
    plotting.caption(fig, "001", "Fig 3 left")
    return fig


MIDDLE_DENSE, MIDDLE_EXAMPLES = (100, 100, 100, 100), 200  # Fig 3 middle: a ReLU net of w=100, d=5; ν on n'=200


def _middle_run(common: list[str], scale: dict) -> list[str]:
    return [*common, "dataset=binary_mnist", "arch=fc", f"arch.dense=[{','.join(map(str, MIDDLE_DENSE))}]",
            "regime=relu", "optimizer=adam", f"epochs={scale['epochs']}", *scale["data"], _epochs_list(range(scale["epochs"] + 1))]


def figure3_middle_data(common: list[str], scale: dict) -> pd.DataFrame:
    """ν_t of the trace-normalised NPK (Lemma 2.1) over the training of a Binary-MNIST ReLU net."""
    epochs = scale["epochs"]
    cfg, run_dir, _ = ensure_run(_middle_run(common, scale))
    data = data_mod.load(cfg.dataset, cfg.data, "cpu")
    x, y = examples(data, MIDDLE_EXAMPLES)
    rows = []
    for ep in range(epochs + 1):
        h = kernels.npk(model_at(cfg, run_dir, ep, data).double(), x.double())
        rows.append({"epoch": ep, "nu": kernels.nu(h, y), "trace_H": float(torch.trace(h)), "seed": int(cfg.seed)})
    return pd.DataFrame(rows)


def figure3_middle_plot(df: pd.DataFrame, scale: dict):
    """ν_t of the NPK over the training of one ReLU net (the paper gives the trend, no values)."""
    fig, ax = plt.subplots(figsize=(5, 3.8))
    ax.plot(df.epoch, df.nu, "o-")
    ax.set_xlabel("epoch")
    ax.set_ylabel(r"$\nu_t = y^\top \hat H_t^{-1} y$")
    ax.set_title(f"Binary-MNIST, FC w=100 d=5, Adam, {_seeds(df)}, n'=200, {_scale_text(scale)}", fontsize=8)
    plotting.caption(fig, "001", "Fig 3 middle")
    return fig


def _right_run(common: list[str], scale: dict) -> list[str]:
    return [*common, "dataset=mnist", "arch=fc", "regime=dlnpf", "optimizer=adam", f"epochs={scale['epochs']}",
            *scale["data"], _epochs_list(range(scale["epochs"] + 1))]


def figure3_right_data(common: list[str], scale: dict) -> pd.DataFrame:
    """Trace and Frobenius norm of the NTK blocks Kᵛ, Kᶠ (Prop 4.1) over the training of a DLNPF net."""
    epochs = scale["epochs"]
    cfg, run_dir, _ = ensure_run(_right_run(common, scale))
    data = data_mod.load(cfg.dataset, cfg.data, "cpu")
    x, _ = examples(data, 100)
    rows = []
    for ep in range(epochs + 1):
        row = {"epoch": ep, "seed": int(cfg.seed)}
        for name, k in kernels.ntk_blocks(model_at(cfg, run_dir, ep, data), x, chunk=25).items():
            row[f"trace_K{name[0]}"] = float(torch.trace(k))
            row[f"fro_K{name[0]}"] = float(torch.linalg.matrix_norm(k))
        rows.append(row)
    return pd.DataFrame(rows)


def figure3_right_plot(df: pd.DataFrame, scale: dict):
    """Trace and Frobenius norm of the NTK blocks Kᵛ (value network) and Kᶠ (feature network)."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for col, style, label in (("trace_Kv", "o-", "tr Kᵛ"), ("trace_Kf", "s-", "tr Kᶠ"),
                              ("fro_Kv", "o--", "‖Kᵛ‖_F"), ("fro_Kf", "s--", "‖Kᶠ‖_F")):
        ax.plot(df.epoch, df[col], style, label=label)
    ax.set(yscale="log", xlabel="epoch", ylabel="trace, Frobenius norm")
    ax.set_title(f"DLNPF FC / MNIST, Adam, {_seeds(df)}, 100 examples, {_scale_text(scale)}", fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))  # beside the axes: never over the data
    plotting.caption(fig, "001", "Fig 3 right")
    return fig


FIGURE3 = {"left": (figure3_left_data, figure3_left_plot), "middle": (figure3_middle_data, figure3_middle_plot),
           "right": (figure3_right_data, figure3_right_plot)}


def figure3_runs(panels: list[str], scale: dict, common: list[str]) -> list[list[str]]:
    """The runs the panels train (``ensure_run``'s overrides, in order): what a recipe's dry run prices."""
    out = []
    for panel in panels:
        if panel == "left":
            for base in _left_base(common, scale["left"]):
                relu, frnpf, flnpf = _left_runs(base, scale["left"])
                out += [relu, frnpf, *flnpf]
        else:
            out.append((_middle_run if panel == "middle" else _right_run)(common, scale[panel]))
    return out


def figure3(panels: list[str], scale: dict, common: list[str], out: Path) -> dict[str, pd.DataFrame]:
    frames = {}
    for panel in panels:
        compute, plot = FIGURE3[panel]
        frames[panel] = df = compute(common, scale[panel])
        plotting.save(plot(df, scale[panel]), df, out, f"figure3_{panel}")
    return frames


def replot(out: Path, scale: str) -> list[str]:
    """Redraw the Figure 3 panels of a report directory from their CSVs with the current plotting
    code; ``scale`` names the scale they ran at. Returns the panels redrawn."""
    done = []
    for panel, (_, plot) in FIGURE3.items():
        path = Path(out) / f"figure3_{panel}.csv"
        if path.is_file():
            df = pd.read_csv(path)
            plotting.save(plot(df, SCALES[scale][panel]), df, out, f"figure3_{panel}")
            done.append(f"figure3_{panel}")
    return done


