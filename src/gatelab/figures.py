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
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from . import checkpoints, data as data_mod, kernels, regimes, runs  # noqa: E402
from .runs import compose  # noqa: E402
from .results import git_commit
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
    """The network of a run as it was at ``epoch`` (its ckpt/epoch_<N>.pt)."""
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
    idx = torch.from_numpy(data_mod.first_balanced(data.train.y.cpu().numpy(), n))
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


# ---- Paper 002 (DGN), experiments 1-2: Gram matrices at initialisation and the role of depth ----

DGN_SCALES = {
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


def _inputs(kind: str, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Experiment 1's data (x_s = 1, y_s ~ U[-1,1], n = 200), or for GaLU/ReLU (Figure 4) 200 points
    uniform on the unit sphere of R^10 (inputs must differ for input-dependent gates) with the same y."""
    y = 2.0 * torch.rand(N_EXAMPLES, generator=gen, dtype=torch.float64) - 1.0
    if kind == "frg":
        return torch.ones(N_EXAMPLES, 1, dtype=torch.float64), y, 1
    x = torch.randn(N_EXAMPLES, 10, generator=gen, dtype=torch.float64)
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


def dgn_frg(scale: dict, out: Path, kind: str = "frg") -> dict:
    """Figures 1-3 (kind=frg: DGN with fixed random gates) or Figure 4 (kind=galu / relu)."""
    gen = torch.Generator().manual_seed(0)
    widths = scale["widths"] if kind == "frg" else [scale["w_galu"]]
    spectra, conv, entries = [], [], []
    for w in widths:
        for d in scale["depths"]:
            for run in range(scale["runs"]):
                x, y, d_in = _inputs(kind, gen)
                weights, g = frg_network(N_EXAMPLES, w, d, gen, gates=kind, d_in=d_in)
                gates = _gates_for(kind, g, x)
                k = kernels.gated_ntk(weights, gates, x)
                ev = torch.linalg.eigvalsh(k / d)
                for i, (a, b) in enumerate(zip(ev.tolist(), (ev / ev.max()).tolist())):
                    spectra.append({"width": w, "depth": d, "run": run, "index": i + 1, "eig": a, "eig_over_max": b})
                for t, r in enumerate(_train_gd(weights, gates, x, y, scale["steps"])):
                    conv.append({"width": w, "depth": d, "run": run, "step": t, "err_ratio": r})
    spec = pd.DataFrame(spectra).groupby(["width", "depth", "index"], as_index=False)[["eig", "eig_over_max"]].mean()
    spec["ecdf"] = spec.groupby(["width", "depth"])["eig"].cumsum()
    spec["ecdf_over_max"] = spec.groupby(["width", "depth"])["eig_over_max"].cumsum()
    conv_df = pd.DataFrame(conv).groupby(["width", "depth", "step"], as_index=False)["err_ratio"].mean()
    depths = scale["depths"]
    cmap = plt.get_cmap("viridis")
    color = {d: cmap(i / max(1, len(depths) - 1)) for i, d in enumerate(depths)}
    name = {"frg": "DGN-FRG", "galu": "GaLU", "relu": "ReLU"}[kind]
    if kind == "frg":
        ideal = pd.DataFrame([{"depth": d, "index": i + 1, "eig": v} for d in depths
                              for i, v in enumerate(ideal_frg_spectrum(d).tolist())])
        ideal["ecdf"] = ideal.groupby("depth")["eig"].cumsum()
        fig, axes = plt.subplots(1, 1 + len(widths), figsize=(4.2 * (1 + len(widths)), 3.4), sharey=True)
        for d in depths:
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
        _save(fig, pd.concat([spec.assign(source="measured"), ideal.assign(source="ideal")]), out, "dgn_figure1")
        entries = _frg_entries(scale, gen)
        fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
        for ax, col, ideal_col, title in ((axes[0], "diag", "ideal_diag", "diagonal K0(s,s)/d"),
                                          (axes[1], "offdiag", "ideal_offdiag", "off-diagonal K0(s,s')/d")):
            ax.plot(entries.depth, entries[col], "o-", label=f"measured (w=500, {scale['entry_runs']} runs)")
            ax.plot(entries.depth, entries[ideal_col], "k:", label="ideal, eq. (5)")
            ax.set_xlabel("depth d")
            ax.set_title(title, fontsize=9)
            ax.legend(fontsize=7)
        _save(fig, entries, out, "dgn_figure2")
    fig, axes = plt.subplots(1, 2 * len(widths), figsize=(4.2 * 2 * len(widths), 3.4))
    for i, w in enumerate(widths):
        for d in depths:
            sub = conv_df[(conv_df.width == w) & (conv_df.depth == d)]
            axes[i].plot(sub.step, sub.err_ratio, color=color[d], label=f"d={d}")
            sub = spec[(spec.width == w) & (spec.depth == d)]
            axes[len(widths) + i].plot(sub["index"], sub.ecdf_over_max, color=color[d], label=f"d={d}")
        axes[i].set_yscale("log")
        axes[i].set_xlabel("GD step (α = 0.1/ρmax)")
        axes[i].set_title(f"{name}: ‖e_t‖²/‖e_0‖², w={w}", fontsize=9)
        axes[len(widths) + i].set_xlabel("eigenvalue index (ascending)")
        axes[len(widths) + i].set_title(f"{name}: e.c.d.f of K0/ρmax, w={w}", fontsize=9)
    axes[0].legend(fontsize=7)
    fig_name = "dgn_figure3" if kind == "frg" else f"dgn_figure4_{kind}"
    _save(fig, conv_df, out, fig_name)
    spec.to_csv(out / f"{fig_name}_spectrum.csv", index=False, float_format="%.6g")
    return {"spectrum": spec, "convergence": conv_df, "entries": entries}


# ---- Paper 002, experiments 3-6 (Figures 7, 8): adaptable vs frozen, learned vs random gates ----

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


def figure7(scale: dict, common: list[str], out: Path) -> pd.DataFrame:
    """Binary-MNIST, FC w=100 d=6, RMSprop 1e-4: training and test accuracy over epochs of the networks
    of experiments 3-5, mean over seeds; plus ν_t = yᵀ K̂_t⁻¹ y (Figure 8) of each network's NTK
    (K̂ = K/trace K, all trainable and gating parameters) on 200 training examples (100 per class)."""
    base = [*common, "dataset=binary_mnist", "arch=fc", "arch.dense=[100,100,100,100,100]", "optimizer=rmsprop",
            "optimizer.lr=1e-4", *scale["data"]]
    every = scale["nu_every"]
    ckpts = f"checkpoint_epochs=[{','.join(map(str, range(0, scale['epochs'] + 1, every)))}]"
    curves, nus = [], []
    for seed in range(scale["seeds"]):
        src_cfg, src_dir, _ = _run([*base, "regime=relu", f"seed={seed}", f"epochs={scale['source_epochs']}", ckpts])
        nets = dict(FIG7_NETWORKS)
        nets["learned gates"] = ["regime=learned_gates", f"regime.source={src_dir}", "regime.source_ckpt=last"]
        for label, over in nets.items():
            cfg, run_dir, res = _run([*base, *over, f"seed={seed}", f"epochs={scale['epochs']}", ckpts])
            for h in res["history"]:
                curves.append({"network": label, "seed": seed, "epoch": h["epoch"], "train_acc": h["train_acc"],
                               "test_acc": h["test_acc"]})
            if label in ("soft-GaLU β=4", "ReLU", "GaLU frozen", "learned gates"):
                nus += [{"network": label, "seed": seed, **row} for row in _nu_over_training(cfg, run_dir, every)]
    df = pd.DataFrame(curves).groupby(["network", "epoch"], as_index=False)[["train_acc", "test_acc"]].mean()
    nu_df = pd.DataFrame(nus).groupby(["network", "epoch"], as_index=False)["nu"].mean()
    panels = [("train_acc", list(FIG7_NETWORKS)[:4], "training: the 4 networks of experiment 3"),
              ("test_acc", list(FIG7_NETWORKS)[:4], "test: the 4 networks of experiment 3"),
              ("test_acc", ["learned gates", "GaLU frozen"], "test: learned vs non-learned gates (exp. 5)"),
              ("test_acc", ["ReLU", "frozen ReLU"], "test: adaptable vs frozen ReLU gates (exp. 4)")]
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.4))
    for ax, (col, labels, title) in zip(axes, panels):
        for label in labels:
            sub = df[df.network == label]
            ax.plot(sub.epoch, sub[col], "o-", ms=3, label=label)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("epoch")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("accuracy")
    _save(fig, df, out, "dgn_figure7")
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for label, sub in nu_df.groupby("network"):
        ax.plot(sub.epoch, sub.nu, "o-", label=label)
    ax.set_xlabel("epoch")
    ax.set_ylabel(r"$\nu_t = y^\top \hat K_t^{-1} y$")
    ax.set_title("Fig. 8 equivalent: Binary-MNIST, 200 examples", fontsize=9)
    ax.legend(fontsize=7)
    _save(fig, nu_df, out, "dgn_figure8")
    return df


def _nu_over_training(cfg, run_dir: Path, every: int) -> list[dict]:
    data = data_mod.load(cfg.dataset, cfg.data, "cpu")
    x, y = _examples(data, 200)
    rows = []
    for ep in range(0, cfg.epochs + 1, every):
        blocks = kernels.ntk_blocks(_model_at(cfg, run_dir, ep, data).double(), x.double(), chunk=50)
        rows.append({"epoch": ep, "nu": kernels.nu(sum(blocks.values()), y)})
    return rows


def _frg_entries(scale: dict, gen: torch.Generator, w: int = 500) -> pd.DataFrame:
    """Figure 2: an arbitrary diagonal K0(0,0)/d and off-diagonal K0(0,1)/d entry, averaged over runs."""
    x = torch.ones(2, 1, dtype=torch.float64)
    rows = []
    for d in scale["depths"]:
        vals = []
        for _ in range(scale["entry_runs"]):
            weights, gates = frg_network(2, w, d, gen)
            vals.append(kernels.gated_ntk(weights, gates, x) / d)
        k = torch.stack(vals).mean(0)
        rows.append({"depth": d, "diag": float(k[0, 0]), "offdiag": float(k[0, 1]),
                     "ideal_diag": 1.0, "ideal_offdiag": MU ** (d - 1)})
    return pd.DataFrame(rows)


def write_provenance(out: Path, argv: list, scale: dict, started: str) -> None:
    """``PROVENANCE.md`` beside the figures: command, commit, dates, device, scale."""
    import platform
    import sys

    commit = git_commit() or "?"
    device = f"{platform.machine()} CPU, {torch.get_num_threads()} threads" if not torch.cuda.is_available() \
        else torch.cuda.get_device_name()
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "PROVENANCE.md", "a") as f:
        f.write(f"- `python -m gatelab.figures {' '.join(argv if argv is not None else sys.argv[1:])}`: commit {commit}, "
                f"{started} .. {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {device}, scale {scale}\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m gatelab.figures", description=__doc__.split("\n\n")[0])
    ap.add_argument("figure", choices=["figure3", "dgn", "dgn7"],
                    help="figure3: paper 001 Figure 3; dgn: paper 002 Figures 1-4 (Gram matrices, depth); "
                         "dgn7: paper 002 Figures 7-8 (Binary-MNIST, adaptable / frozen / learned gates)")
    ap.add_argument("--scale", default="quick", help="paper | quick")
    ap.add_argument("--panels", nargs="*", choices=sorted(FIGURE3), default=["middle", "right", "left"])
    ap.add_argument("--runs", default="outputs/figure3", help="out_root of the training runs")
    ap.add_argument("--out", type=Path, default=Path("outputs/reports/figure3"))
    ap.add_argument("overrides", nargs="*", help="extra config overrides for every run (e.g. data.root=...)")
    args = ap.parse_intermixed_args(argv)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    scales = {"figure3": SCALES, "dgn": DGN_SCALES, "dgn7": FIG7_SCALES}[args.figure]
    if args.scale not in scales:
        ap.error(f"--scale {args.scale}: one of {', '.join(scales)}")
    scale = scales[args.scale]
    common = [f"out_root={args.runs}", *args.overrides]
    if args.figure == "dgn7":
        df = figure7(scale, common, args.out)
        print(df.groupby("network")[["train_acc", "test_acc"]].max().to_string())
    elif args.figure == "dgn":
        for kind in ("frg", "galu", "relu"):
            res = dgn_frg(scale, args.out, kind)
            final = res["convergence"].groupby(["width", "depth"]).err_ratio.last()
            print(f"{kind}: final ‖e_t‖²/‖e_0‖² by (width, depth):\n{final.to_string()}\n")
            if kind == "frg":
                print(f"K0/d entries vs ideal:\n{res['entries'].to_string(index=False)}\n")
    else:
        for panel in args.panels:
            df = FIGURE3[panel](common, scale[panel], args.out)
            print(f"figure3 {panel} ({args.scale}):\n{df.to_string(index=False)}\n")
    write_provenance(args.out, argv, scale, started)


if __name__ == "__main__":
    main()
