"""Figure equivalents, each written as PNG + PDF + the CSV of its data.

``python -m gatelab.figures figure3 --scale quick --runs outputs/figure3 --out outputs/reports/figure3``

Figure 3 of paper 001:
* left: continuous NPF learning. A ReLU GCONV (Adam, CIFAR-10) is checkpointed at 6 stages; FLNPF-k
  takes its gates from stage k. Reference lines: FRNPF-II, CNTK (77.43, published), ReLU.
* middle: ν_t = yᵀ Ĥ_t⁻¹ y, Ĥ = H/trace(H), H = NPK = Σ ⊙ Λ (Lemma 2.1), on n'=200 Binary-MNIST
  examples (100 per class) over the training of an FC ReLU net (w=100, d=5: 4 hidden layers).
* right: trace and Frobenius norm of Kᵛ and Kᶠ (NTK blocks, Prop 4.1) of a DLNPF FC net on MNIST,
  on 100 examples (10 per class), over training.
The training runs are ordinary gatelab runs (same loop, same run directories, skipped when done).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from . import checkpoints, data as data_mod, kernels, regimes, runs  # noqa: E402
from .config import compose  # noqa: E402
from .train import train  # noqa: E402

CNTK_GCONV = 77.43  # Arora et al. 2019, as quoted in paper 001 §6.2

# Scales: "paper" follows SPEC.md; "quick" fits a 2-core CPU in minutes.
SCALES = {
    "paper": {"left": dict(relu_epochs=60, stages=[10, 20, 30, 40, 50, 60], flnpf_epochs=80, data=[]),
              "middle": dict(epochs=30, data=[]), "right": dict(epochs=30, data=[])},
    "quick": {"left": dict(relu_epochs=6, stages=[1, 2, 3, 4, 5, 6], flnpf_epochs=3,
                           data=["dataset.limit_train=2000", "dataset.limit_test=1000"]),
              "middle": dict(epochs=8, data=[]), "right": dict(epochs=5, data=["dataset.limit_train=10000"])},
}


def _save(fig, df: pd.DataFrame, out: Path, name: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=130)
    fig.savefig(out / f"{name}.pdf", metadata={"CreationDate": None})
    plt.close(fig)
    df.to_csv(out / f"{name}.csv", index=False, float_format="%.6g")


def _run(overrides: list[str]) -> tuple[object, Path, dict]:
    cfg = compose(["progress=false", *overrides])
    run_dir = runs.run_dir(cfg)
    res = train(cfg, run_dir)
    if res["status"] != "completed":
        raise RuntimeError(f"{run_dir}: run {res['status']}; the figure needs it completed")
    return cfg, run_dir, res


def _model_at(cfg, run_dir: Path, epoch: int, data):
    """The network of a (non-FLNPF) run as it was at ``epoch`` (its ckpt/epoch_<N>.pt)."""
    model, _ = regimes.build_model(cfg, data.in_shape, data.out_dim)
    model.load_state_dict(checkpoints.load(run_dir / "ckpt" / f"epoch_{epoch}.pt")["model"])
    return model.eval()


def figure3_left(common: list[str], scale: dict, out: Path) -> pd.DataFrame:
    base = [*common, "dataset=cifar10", "arch=gconv", "optimizer=adam", *scale["data"]]
    stages = scale["stages"]
    _, relu_dir, relu = _run([*base, "regime=relu", f"epochs={scale['relu_epochs']}",
                              f"checkpoint_epochs=[{','.join(map(str, stages))}]"])
    _, _, frnpf = _run([*base, "regime=frnpf_ii", f"epochs={scale['flnpf_epochs']}"])
    rows = []
    for k, ep in enumerate(stages, 1):
        _, _, res = _run([*base, "regime=flnpf", f"regime.source={relu_dir}", f"regime.source_ckpt=epoch_{ep}",
                          f"epochs={scale['flnpf_epochs']}"])
        rows.append({"stage": k, "source_epoch": ep, "flnpf_best_test_acc": 100 * res["best_test_acc"],
                     "relu_test_acc_at_source_epoch": 100 * relu["history"][ep - 1]["test_acc"]})
    df = pd.DataFrame(rows)
    df["relu_best_test_acc"] = 100 * relu["best_test_acc"]
    df["frnpf_ii_best_test_acc"] = 100 * frnpf["best_test_acc"]
    df["cntk_published"] = CNTK_GCONV
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.plot(df.stage, df.flnpf_best_test_acc, "o-", label="FLNPF-k (gates of ReLU at stage k)")
    ax.axhline(df.relu_best_test_acc[0], color="k", ls="-", lw=1, label="ReLU (best)")
    ax.axhline(df.frnpf_ii_best_test_acc[0], color="tab:red", ls="--", lw=1, label="FRNPF-II")
    ax.axhline(CNTK_GCONV, color="tab:green", ls=":", lw=1, label="CNTK 77.43 (published, full data)")
    ax.set_xlabel(f"stage k (ReLU epoch {', '.join(map(str, stages))})")
    ax.set_ylabel("best test accuracy (%)")
    ax.set_title("Fig. 3 left: GCONV / CIFAR-10 / Adam", fontsize=9)
    ax.legend(fontsize=7)
    _save(fig, df, out, "figure3_left")
    return df


def _examples(data, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    idx = torch.from_numpy(data_mod._first_balanced(data.train.y.cpu().numpy(), n))
    return data_mod.Split.scale(data.train.x[idx]), data.train.y[idx]


def figure3_middle(common: list[str], scale: dict, out: Path) -> pd.DataFrame:
    epochs = scale["epochs"]
    cfg, run_dir, _ = _run([*common, "dataset=binary_mnist", "arch=fc", "arch.dense=[100,100,100,100]",
                            "regime=relu", "optimizer=adam", f"epochs={epochs}", *scale["data"],
                            f"checkpoint_epochs=[{','.join(map(str, range(epochs + 1)))}]"])
    data = data_mod.load(cfg.dataset, cfg.data, "cpu")
    x, y = _examples(data, 200)
    rows = []
    for ep in range(epochs + 1):
        model = _model_at(cfg, run_dir, ep, data).double()
        h = kernels.npk(model, x.double())
        rows.append({"epoch": ep, "nu": kernels.nu(h, y), "trace_H": float(torch.trace(h))})
    df = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.plot(df.epoch, df.nu, "o-")
    ax.set_xlabel("epoch")
    ax.set_ylabel(r"$\nu_t = y^\top \hat H_t^{-1} y$")
    ax.set_title("Fig. 3 middle: Binary-MNIST, FC w=100 d=5, n'=200", fontsize=9)
    _save(fig, df, out, "figure3_middle")
    return df


def figure3_right(common: list[str], scale: dict, out: Path) -> pd.DataFrame:
    epochs = scale["epochs"]
    cfg, run_dir, _ = _run([*common, "dataset=mnist", "arch=fc", "regime=dlnpf", "optimizer=adam",
                            f"epochs={epochs}", *scale["data"],
                            f"checkpoint_epochs=[{','.join(map(str, range(epochs + 1)))}]"])
    data = data_mod.load(cfg.dataset, cfg.data, "cpu")
    x, _ = _examples(data, 100)
    rows = []
    for ep in range(epochs + 1):
        blocks = kernels.ntk_blocks(_model_at(cfg, run_dir, ep, data), x, chunk=25)
        row = {"epoch": ep}
        for name, k in blocks.items():
            row[f"trace_K{name[0]}"] = float(torch.trace(k))
            row[f"fro_K{name[0]}"] = float(torch.linalg.matrix_norm(k))
        rows.append(row)
    df = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for col, style in (("trace_Kv", "o-"), ("trace_Kf", "s-"), ("fro_Kv", "o--"), ("fro_Kf", "s--")):
        ax.plot(df.epoch, df[col], style, label=col.replace("_K", " K").replace("v", "ᵛ").replace("Kf", "Kᶠ"))
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_title("Fig. 3 right: DLNPF FC / MNIST, 100 examples", fontsize=9)
    ax.legend(fontsize=7)
    _save(fig, df, out, "figure3_right")
    return df


FIGURE3 = {"left": figure3_left, "middle": figure3_middle, "right": figure3_right}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m gatelab.figures", description=__doc__.split("\n\n")[0])
    ap.add_argument("figure", choices=["figure3"])
    ap.add_argument("--scale", choices=sorted(SCALES), default="quick")
    ap.add_argument("--panels", nargs="*", choices=sorted(FIGURE3), default=["middle", "right", "left"])
    ap.add_argument("--runs", default="outputs/figure3", help="out_root of the training runs")
    ap.add_argument("--out", type=Path, default=Path("outputs/reports/figure3"))
    ap.add_argument("overrides", nargs="*", help="extra config overrides for every run (e.g. data.root=...)")
    args = ap.parse_intermixed_args(argv)
    common = [f"out_root={args.runs}", *args.overrides]
    for panel in args.panels:
        df = FIGURE3[panel](common, SCALES[args.scale][panel], args.out)
        print(f"figure3 {panel} ({args.scale}):\n{df.to_string(index=False)}\n")


if __name__ == "__main__":
    main()
