"""Paper 001, "Neural Path Features and Neural Path Kernel" (NeurIPS 2020): Table 2 and Figure 3.

``python -m gatelab.papers.npf table2 --runs outputs/table2 --out outputs/reports/table2``
``python -m gatelab.papers.npf figure3 --scale quick --runs outputs/figure3-quick --out outputs/reports/figure3``

Table 2: best test accuracy (%) per run, mean ± std over seeds (``--ddof 1``, ours, by default;
``--ddof 0`` is ``np.std`` as the paper's code). Each row's experiment runs one step size, the
code's; where a cell ran several (``+experiment=sgd_sweep``, the paper's "best of {0.1, 0.01, 0.001}",
or the FC Adam row at 1e-4 and 3e-4) the table shows the one with the highest mean and a "Step sizes"
section lists them all; ``--lr OPT=LR`` keeps one.

Figure 3:
* left: continuous NPF learning. A ReLU GCONV (Adam, CIFAR-10) is checkpointed at 6 stages; FLNPF-k
  takes its gates from stage k. Reference lines: FRNPF-II, CNTK (77.43, published), ReLU.
* middle: ν_t = yᵀ Ĥ_t⁻¹ y, Ĥ = H/trace(H), H = NPK = Σ ⊙ Λ (Lemma 2.1), on n'=200 Binary-MNIST
  examples (100 per class) over the training of an FC ReLU net (w=100, d=5: 4 hidden layers).
* right: trace and Frobenius norm of Kᵛ and Kᶠ (NTK blocks, Prop 4.1) of a DLNPF FC net on MNIST,
  on 100 examples (10 per class), over training.
The training runs are ordinary gatelab runs (same loop, same run directories, skipped when done).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Optional

import pandas as pd
import torch

from .. import data as data_mod, kernels, plotting, report
from ..plotting import plt
from ..runner import ensure_run, examples, model_at

# ---- Table 2 ----

REGIMES = ["frnpf_ii", "frnpf_di", "dlnpf", "flnpf", "relu"]
REGIME_TITLES = {"frnpf_ii": "FRNPF (II)", "frnpf_di": "FRNPF (DI)", "dlnpf": "DLNPF (β=4)", "flnpf": "FLNPF",
                 "relu": "ReLU"}
ROWS = [("fc", "sgd", "mnist"), ("fc", "adam", "mnist"), ("vconv", "sgd", "cifar10"), ("vconv", "adam", "cifar10"),
        ("gconv", "sgd", "cifar10"), ("gconv", "adam", "cifar10")]
_P = {  # paper 001 Table 2: (mean, std) of best test accuracy in %, 5 runs
    ("fc", "sgd"): [(95.85, .10), (95.85, .17), (97.86, .11), (97.10, .09), (97.85, .09)],
    ("fc", "adam"): [(96.02, .13), (96.09, .12), (98.22, .05), (97.82, .02), (98.14, .07)],
    ("vconv", "sgd"): [(58.92, .62), (58.83, .27), (63.21, .07), (63.06, .73), (67.02, .43)],
    ("vconv", "adam"): [(64.86, 1.18), (64.68, .84), (69.45, .76), (71.40, .47), (72.43, .54)],
    ("gconv", "sgd"): [(67.36, .56), (66.86, .44), (74.57, .43), (78.52, .39), (78.90, .37)],
    ("gconv", "adam"): [(67.09, .58), (67.08, .27), (77.12, .19), (79.68, .32), (80.32, .35)],
}
PAPER_TABLE2 = {row: dict(zip(REGIMES, _P[row[:2]])) for row in ROWS}


def _cells(runs: list[report.Run]):
    """(row, regime, runs of that cell) for every Table 2 cell with at least one run."""
    for row in ROWS:
        for regime in REGIMES:
            cell = [r for r in runs if r.row == row and r.regime == regime]
            if cell:
                yield row, regime, cell


def _by_lr(cell: list[report.Run], ddof: int) -> dict:
    """{lr: (completed runs one per seed, mean, std)} of one cell, over the step sizes with a completed seed."""
    out = {}
    for lr in sorted({r.lr for r in cell}):
        seeds = report.completed_by_seed(r for r in cell if r.lr == lr)
        if seeds:
            chosen = [seeds[k] for k in sorted(seeds)]
            out[lr] = (chosen, *report.mean_std([r.best for r in chosen], ddof))
    return out


FIT = 99.9  # % train accuracy that counts as fitted (the Length section)


def _length(chosen: list[report.Run]) -> dict:
    """How long the cell's runs were and when they peaked (the report's Length section)."""
    return {"epochs": report.joined(r.epochs for r in chosen),
            "best_per_seed": ";".join(f"{r.seed}:{r.best:.4f}" for r in chosen),
            "best_epochs": ";".join(str(r.best_epoch) for r in chosen),
            "epochs_within_0.05": report.epochs_to_reach(chosen),
            f"train_{FIT}_at": report.epochs_to_fit(chosen, FIT)}


def table2(runs: list[report.Run], expected_seeds: Optional[int] = None, ddof: int = 1) -> pd.DataFrame:
    """One line per (row, regime) cell: ours (the step size with the highest mean, when several
    ran), the paper's, the difference. ``expected_seeds`` None: the largest number of seeds of any cell."""
    lines = []
    for row, regime, cell in _cells(runs):
        by_lr = _by_lr(cell, ddof)
        lr = max(by_lr, key=lambda k: (by_lr[k][1], len(by_lr[k][0]))) if by_lr else None
        chosen, mean, std = by_lr[lr] if lr is not None else ([], math.nan, math.nan)
        excluded = [r for r in cell if r.status != "completed" and (lr is None or r.lr == lr)]
        std_other = report.mean_std([r.best for r in chosen], 1 - ddof)[1]
        p_mean, p_std = PAPER_TABLE2[row][regime]
        diff = mean - p_mean
        lines.append({
            "arch": row[0], "optimizer": row[1], "dataset": row[2], "regime": regime,
            "lr": lr, "n": len(chosen), "mean": mean, "std": std, "ddof": ddof, "std_other_ddof": std_other,
            "paper_mean": p_mean, "paper_std": p_std, "diff": diff,
            "far": bool(abs(diff) > max(2 * p_std, 0.5)) if not math.isnan(diff) else False,
            "excluded": ";".join(sorted(f"{r.status}:seed{r.seed}" for r in excluded)),
            "n_lrs": len(by_lr),
            "lrs_tried": ";".join(f"{k:g}={v[1]:.2f}(n={len(v[0])})" for k, v in by_lr.items()),
            **_length(chosen),
            "final_train_acc": report.mean_std([r.train_curve[-1] for r in chosen if r.train_curve])[0],
            "final_test_acc": report.mean_std([r.test_curve[-1] for r in chosen if r.test_curve
                                               and r.test_curve[-1] is not None])[0],
            "limits": report.limits_text(chosen),
        })
    df = pd.DataFrame(lines)
    if len(df):
        df.insert(df.columns.get_loc("far"), "short", df.n < (expected_seeds or df.n.max()))
    return df


def step_sizes(runs: list[report.Run], ddof: int = 1) -> pd.DataFrame:
    """Every step size of every cell that ran more than one (e.g. the FC Adam row at the code's 1e-4
    and the paper text's 3e-4, or the SGD sweep): one line per (cell, lr)."""
    lines = []
    for row, regime, cell in _cells(runs):
        by_lr = _by_lr(cell, ddof)
        if len(by_lr) < 2:
            continue
        p_mean = PAPER_TABLE2[row][regime][0]
        for lr, (chosen, mean, std) in by_lr.items():
            lines.append({"arch": row[0], "optimizer": row[1], "dataset": row[2], "regime": regime, "lr": lr,
                          "n": len(chosen), "mean": mean, "std": std, "ddof": ddof, "paper_mean": p_mean,
                          "diff": mean - p_mean, **_length(chosen)})
    return pd.DataFrame(lines)


def _cell_md(line) -> str:
    if not line["n"]:
        return f"— (no completed seed)<br>paper {line['paper_mean']:.2f} ± {line['paper_std']:.2f}"
    mixed = "," in str(line["epochs"])  # its seeds ran different lengths (e.g. a rerun at other epochs)
    flags = ("†" if line["short"] else "") + ("‡" if line["far"] else "") + ("§" if mixed else "")
    lr = f", lr {line['lr']:g}" if (line["optimizer"] == "sgd" or line["n_lrs"] > 1) and line["lr"] is not None else ""
    other = "" if math.isnan(line["std_other_ddof"]) else f"<br>ddof={1 - line['ddof']}: ± {line['std_other_ddof']:.2f}"
    return (f"**{report.fmt(line['mean'], line['std'])}**{flags} (n={line['n']}{lr}){other}<br>"
            f"paper {line['paper_mean']:.2f} ± {line['paper_std']:.2f}<br>Δ {line['diff']:+.2f}")


def _rows(df: pd.DataFrame):
    for row in ROWS:
        sub = df[(df.arch == row[0]) & (df.optimizer == row[1]) & (df.dataset == row[2])]
        if len(sub):
            yield row, {line["regime"]: line for _, line in sub.iterrows()}


def _opt_title(opt: str) -> str:
    return "SGD" if opt == "sgd" else "Adam"


def _whole(v) -> str:
    """An epoch count that a column of floats (NaN for cells without runs) holds."""
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else str(int(v))


def _lr_rule(df: pd.DataFrame) -> str:
    """How the cells' step sizes were chosen: the best of several, or the one that ran."""
    if (df.n_lrs > 1).any():
        return ("Where a cell ran several step sizes, it shows the one with the highest mean (lr shown; all of "
                "them under Step sizes).")
    return "One step size per row (lr shown for SGD), as the paper's code ran it."


def _per_seed(line) -> dict[int, float]:
    return {int(k): float(v) for k, v in (x.split(":") for x in line["best_per_seed"].split(";") if x)}


def gap(df: pd.DataFrame, a: str = "flnpf", b: str = "relu") -> pd.DataFrame:
    """Per row, ``a`` − ``b`` in best test accuracy, ours and the paper's (FLNPF − ReLU: how much of
    the ReLU net's accuracy its learned gates carry, §6). Paired over the seeds both cells completed
    (FLNPF seed s takes its gates from ReLU seed s); s.e. = std of the paired differences / √n."""
    lines = []
    for row, cells in _rows(df):
        if a not in cells or b not in cells:
            continue
        x, y = _per_seed(cells[a]), _per_seed(cells[b])
        diffs = [x[s] - y[s] for s in sorted(set(x) & set(y))]
        mean, std = report.mean_std(diffs, 1)
        lines.append({"arch": row[0], "optimizer": row[1], "dataset": row[2], "pairs": len(diffs), "gap": mean,
                      "se": std / math.sqrt(len(diffs)) if diffs else math.nan,
                      "paper_gap": PAPER_TABLE2[row][a][0] - PAPER_TABLE2[row][b][0]})
    return pd.DataFrame(lines)


def _gap_md(df: pd.DataFrame) -> list[str]:
    g = gap(df)
    g = g[g.pairs > 0] if len(g) else g
    if not len(g):
        return []
    out = ["", "## FLNPF − ReLU", "",
           "Per row, mean over the seeds both cells completed of FLNPF − ReLU (FLNPF seed s learns nothing but "
           "the value network on ReLU seed s's frozen gates); ± is the paired standard error.", "",
           "| Arch | Optimiser | Dataset | pairs | ours | paper |", "|---|---|---|---|---|---|"]
    for _, s in g.iterrows():
        se = "" if math.isnan(s.se) else f" ± {s.se:.2f}"
        out.append(f"| {s.arch.upper()} | {_opt_title(s.optimizer)} | {report.DATASET_TITLES[s.dataset]} | {s.pairs} | "
                   f"{s.gap:+.2f}{se} | {s.paper_gap:+.2f} |")
    return out


def _step_sizes_md(steps: pd.DataFrame) -> list[str]:
    if not len(steps):
        return []
    out = ["", "## Step sizes", "",
           "Every step size of the cells that ran several, also those the table above leaves out; same "
           "statistic, Δ = ours − paper.", "",
           "| Arch | Optimiser | Regime | lr | n | best test acc | Δ | within 0.05 at | best epoch per seed |",
           "|---|---|---|---|---|---|---|---|---|"]
    for _, s in steps.iterrows():
        out.append(f"| {s.arch.upper()} | {_opt_title(s.optimizer)} | {REGIME_TITLES[s.regime]} | {s.lr:g} | {s.n} | "
                   f"{report.fmt(s['mean'], s['std'])} | {s['diff']:+.2f} | {_whole(s['epochs_within_0.05'])} | "
                   f"{s.best_epochs} |")
    return out


def render_table2_markdown(df: pd.DataFrame, runs: list[report.Run], bad: list[str], command: str,
                           steps: Optional[pd.DataFrame] = None) -> str:
    ddof = int(df.ddof.iloc[0])
    out = ["# Table 2 (paper 001): best test accuracy (%), ours vs published", "",
           f"Mean ± {report.STATISTICS[ddof]} over seeds of each run's best test accuracy; the paper's "
           "numbers use ddof=0. n = completed seeds. † fewer seeds than the fullest cell; ‡ more than max(2 paper-std, "
           "0.5) points from the paper; § seeds of different lengths (Length gives them). " + _lr_rule(df) + " Δ = ours − paper.", ""]
    out.append("| Arch | Optimiser | Dataset | " + " | ".join(REGIME_TITLES[r] for r in REGIMES) + " |")
    out.append("|---|---|---|" + "---|" * len(REGIMES))
    for row, cells in _rows(df):
        vals = [_cell_md(cells[r]) if r in cells else "—" for r in REGIMES]
        out.append(f"| {row[0].upper()} | {_opt_title(row[1])} | {report.DATASET_TITLES[row[2]]} | "
                   + " | ".join(vals) + " |")
    out += ["", "## Length: does a run this long lose anything?", "",
            "Per cell: epochs run; the epoch of each seed's best test accuracy; the first epoch at which the "
            "seeds' mean best-so-far test accuracy is within 0.05 points of its final value; the first epoch "
            f"by which every seed's train accuracy (running mean over the epoch) reached {FIT}%; train and test "
            "accuracy at the last epoch, mean over seeds (%).", "",
            f"| Arch | Optimiser | Regime | lr | epochs | best epoch per seed | within 0.05 at | train ≥ {FIT}% at "
            "| train at end | test at end |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row, cells in _rows(df):
        for r in REGIMES:
            line = cells.get(r)
            if line is None or not line["n"]:
                continue
            out.append(f"| {row[0].upper()} | {_opt_title(row[1])} | {REGIME_TITLES[r]} | {line['lr']:g} | "
                       f"{line['epochs']} | {line['best_epochs']} | {_whole(line['epochs_within_0.05'])} | "
                       f"{_whole(line[f'train_{FIT}_at'])} | {line['final_train_acc']:.2f} | "
                       f"{line['final_test_acc']:.2f} |")
    out += _gap_md(df)
    out += _step_sizes_md(steps if steps is not None else pd.DataFrame())
    scale = []
    for row, cells in _rows(df):  # over the cells with a completed seed
        done = [line for line in cells.values() if line["n"]]
        if done:
            scale.append(f"{row[0].upper()}/{row[1]}/{report.DATASET_TITLES[row[2]]}: "
                         f"{report.joined(x for line in done for x in line['epochs'].split(','))} epochs, examples "
                         f"train/test {report.joined(x for line in done for x in line['limits'].split(','))}")
    out += ["", "## Provenance", *report.provenance(runs, command, scale)]
    excluded = [(f"{line['arch']}/{line['optimizer']}/{line['regime']}", line["excluded"])
                for _, line in df.iterrows() if line["excluded"]]
    out += report.not_counted(excluded, bad)
    return "\n".join(out) + "\n"


def render_table2_latex(df: pd.DataFrame) -> str:
    out = ["\\begin{tabular}{lll" + "c" * len(REGIMES) + "}", "\\toprule",
           "Arch & Opt & Data & " + " & ".join(REGIME_TITLES[r].replace("β", "$\\beta$") for r in REGIMES)
           + " \\\\", "\\midrule"]
    for row, cells in _rows(df):
        vals = []
        for r in REGIMES:
            line = cells.get(r)
            if line is None or math.isnan(line["mean"]):
                vals.append("--")
                continue
            std = "" if math.isnan(line["std"]) else f"$\\pm${line['std']:.2f}"
            vals.append(f"{line['mean']:.2f}{std} ({line['paper_mean']:.2f})")
        out.append(f"{row[0].upper()} & {_opt_title(row[1])} & {report.DATASET_TITLES[row[2]]} & "
                   + " & ".join(vals) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}", "% ours mean$\\pm$std over seeds (paper mean); see table2.md"]
    return "\n".join(out) + "\n"


def write_table2(runs_dir: Path, out_dir: Path, expected_seeds: Optional[int] = None, command: str = "",
                 archs: Optional[list] = None, ddof: int = 1, lrs: Optional[dict] = None) -> pd.DataFrame:
    """``lrs`` {optimizer: lr}: the table shows only the runs of that optimiser at that step size (e.g.
    one of the two Adam step sizes of the FC row); the Step sizes section still lists them all."""
    runs, bad = report.scan_some(runs_dir, archs)
    steps = step_sizes(runs, ddof)  # all step sizes, also those ``lrs`` leaves out of the table
    runs = [r for r in runs if not lrs or r.row[1] not in lrs or r.lr == lrs[r.row[1]]]
    df = table2(runs, expected_seeds, ddof)
    report.write_outputs(out_dir, "table2", df, {"md": render_table2_markdown(df, runs, bad, command, steps),
                                                 "tex": render_table2_latex(df)})
    if len(steps):
        report.write_outputs(out_dir, "table2_step_sizes", steps, {})
    return df


# ---- Figure 3 ----

CNTK_GCONV = 77.43  # Arora et al. 2019, as quoted in paper 001 §6.2

# Scales: "paper" follows SPEC.md; "quick" fits a 2-core CPU in minutes.
SCALES = {
    "paper": {"left": dict(relu_epochs=60, stages=[10, 20, 30, 40, 50, 60], flnpf_epochs=80, data=[]),
              "middle": dict(epochs=30, data=[]), "right": dict(epochs=30, data=[])},
    "quick": {"left": dict(relu_epochs=6, stages=[1, 2, 3, 4, 5, 6], flnpf_epochs=3,
                           data=["dataset.limit_train=2000", "dataset.limit_test=1000"]),
              "middle": dict(epochs=8, data=[]), "right": dict(epochs=5, data=["dataset.limit_train=10000"])},
}


def _epochs_list(epochs) -> str:
    return f"checkpoint_epochs=[{','.join(map(str, epochs))}]"


def figure3_left_data(common: list[str], scale: dict) -> pd.DataFrame:
    """FLNPF-k's best test accuracy with the gates of the ReLU run at stage k, beside the references."""
    base = [*common, "dataset=cifar10", "arch=gconv", "optimizer=adam", *scale["data"]]
    stages = scale["stages"]
    _, relu_dir, relu = ensure_run([*base, "regime=relu", f"epochs={scale['relu_epochs']}", _epochs_list(stages)])
    _, _, frnpf = ensure_run([*base, "regime=frnpf_ii", f"epochs={scale['flnpf_epochs']}"])
    rows = []
    for k, ep in enumerate(stages, 1):
        _, _, res = ensure_run([*base, "regime=flnpf", f"regime.source={relu_dir}", f"regime.source_ckpt=epoch_{ep}",
                                f"epochs={scale['flnpf_epochs']}"])
        rows.append({"stage": k, "source_epoch": ep, "flnpf_best_test_acc": 100 * res["best_test_acc"],
                     "relu_test_acc_at_source_epoch": 100 * relu["history"][ep - 1]["test_acc"]})
    df = pd.DataFrame(rows)
    df["relu_best_test_acc"] = 100 * relu["best_test_acc"]
    df["frnpf_ii_best_test_acc"] = 100 * frnpf["best_test_acc"]
    df["cntk_published"] = CNTK_GCONV
    return df


def figure3_left_plot(df: pd.DataFrame):
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.plot(df.stage, df.flnpf_best_test_acc, "o-", label="FLNPF-k (gates of ReLU at stage k)")
    ax.axhline(df.relu_best_test_acc[0], color="k", ls="-", lw=1, label="ReLU (best)")
    ax.axhline(df.frnpf_ii_best_test_acc[0], color="tab:red", ls="--", lw=1, label="FRNPF-II")
    ax.axhline(CNTK_GCONV, color="tab:green", ls=":", lw=1, label="CNTK 77.43 (published, full data)")
    ax.set_xlabel(f"stage k (ReLU epoch {', '.join(map(str, df.source_epoch))})")
    ax.set_ylabel("best test accuracy (%)")
    ax.set_title("Fig. 3 left: GCONV / CIFAR-10 / Adam", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def figure3_middle_data(common: list[str], scale: dict) -> pd.DataFrame:
    """ν_t of the trace-normalised NPK (Lemma 2.1) over the training of a Binary-MNIST ReLU net."""
    epochs = scale["epochs"]
    cfg, run_dir, _ = ensure_run([*common, "dataset=binary_mnist", "arch=fc", "arch.dense=[100,100,100,100]",
                                  "regime=relu", "optimizer=adam", f"epochs={epochs}", *scale["data"],
                                  _epochs_list(range(epochs + 1))])
    data = data_mod.load(cfg.dataset, cfg.data, "cpu")
    x, y = examples(data, 200)
    rows = []
    for ep in range(epochs + 1):
        h = kernels.npk(model_at(cfg, run_dir, ep, data).double(), x.double())
        rows.append({"epoch": ep, "nu": kernels.nu(h, y), "trace_H": float(torch.trace(h))})
    return pd.DataFrame(rows)


def figure3_middle_plot(df: pd.DataFrame):
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.plot(df.epoch, df.nu, "o-")
    ax.set_xlabel("epoch")
    ax.set_ylabel(r"$\nu_t = y^\top \hat H_t^{-1} y$")
    ax.set_title("Fig. 3 middle: Binary-MNIST, FC w=100 d=5, n'=200", fontsize=9)
    return fig


def figure3_right_data(common: list[str], scale: dict) -> pd.DataFrame:
    """Trace and Frobenius norm of the NTK blocks Kᵛ, Kᶠ (Prop 4.1) over the training of a DLNPF net."""
    epochs = scale["epochs"]
    cfg, run_dir, _ = ensure_run([*common, "dataset=mnist", "arch=fc", "regime=dlnpf", "optimizer=adam",
                                  f"epochs={epochs}", *scale["data"], _epochs_list(range(epochs + 1))])
    data = data_mod.load(cfg.dataset, cfg.data, "cpu")
    x, _ = examples(data, 100)
    rows = []
    for ep in range(epochs + 1):
        row = {"epoch": ep}
        for name, k in kernels.ntk_blocks(model_at(cfg, run_dir, ep, data), x, chunk=25).items():
            row[f"trace_K{name[0]}"] = float(torch.trace(k))
            row[f"fro_K{name[0]}"] = float(torch.linalg.matrix_norm(k))
        rows.append(row)
    return pd.DataFrame(rows)


def figure3_right_plot(df: pd.DataFrame):
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for col, style in (("trace_Kv", "o-"), ("trace_Kf", "s-"), ("fro_Kv", "o--"), ("fro_Kf", "s--")):
        ax.plot(df.epoch, df[col], style, label=col.replace("_K", " K").replace("v", "ᵛ").replace("Kf", "Kᶠ"))
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_title("Fig. 3 right: DLNPF FC / MNIST, 100 examples", fontsize=9)
    ax.legend(fontsize=7)
    return fig


FIGURE3 = {"left": (figure3_left_data, figure3_left_plot), "middle": (figure3_middle_data, figure3_middle_plot),
           "right": (figure3_right_data, figure3_right_plot)}


def figure3(panels: list[str], scale: dict, common: list[str], out: Path) -> dict[str, pd.DataFrame]:
    frames = {}
    for panel in panels:
        compute, plot = FIGURE3[panel]
        frames[panel] = df = compute(common, scale[panel])
        plotting.save(plot(df), df, out, f"figure3_{panel}")
    return frames


def main(argv=None) -> None:
    ap, sub, t2 = report.paper_cli("python -m gatelab.papers.npf", __doc__, "table2", "Table 2: table2.{md,csv,tex} from the runs below --runs")
    t2.add_argument("--arch", nargs="*", default=None, help="only these architectures' rows (e.g. fc)")
    t2.add_argument("--lr", nargs="*", default=[], metavar="OPT=LR",
                    help="only the runs of optimiser OPT at step size LR (e.g. adam=3e-4)")
    f3 = sub.add_parser("figure3", help="Figure 3 equivalents (trains what is missing)")
    f3.add_argument("--scale", default="quick", choices=sorted(SCALES))
    f3.add_argument("--panels", nargs="*", choices=sorted(FIGURE3), default=["middle", "right", "left"])
    f3.add_argument("--runs", default="outputs/figure3", help="out_root of the training runs")
    f3.add_argument("--out", type=Path, default=Path("outputs/reports/figure3"))
    f3.add_argument("overrides", nargs="*", help="extra config overrides for every run (e.g. data.root=...)")
    args = ap.parse_args(argv)
    if args.what == "table2":
        lrs = {k: float(v) for k, v in (item.split("=", 1) for item in args.lr)}
        df = write_table2(args.runs, args.out, args.seeds, args.command, args.arch, args.ddof, lrs)
        print((args.out / "table2.md").read_text())
        print(f"{len(df)} cells -> {args.out}/table2.*", file=sys.stderr)
        return
    started = plotting.now()
    scale = SCALES[args.scale]
    frames = figure3(args.panels, scale, [f"out_root={args.runs}", *args.overrides], args.out)
    for panel, df in frames.items():
        print(f"figure3 {panel} ({args.scale}):\n{df.to_string(index=False)}\n")
    plotting.write_provenance(args.out, "gatelab.papers.npf", argv, scale, started)


if __name__ == "__main__":
    main()
