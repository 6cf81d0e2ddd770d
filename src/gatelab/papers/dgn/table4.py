"""Paper 002 Table 4 (see :mod:`gatelab.papers.dgn`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from gatelab.papers import report


# ---- Table 4 ----

# (train, test) accuracy, fractions as published (mean of each run's best, 5 runs).
TABLE4_BETAS = [1, 2, 4, 8, 12, 16, 20, 24]
PAPER_TABLE4 = {("dln", None, None): (0.5042, 0.3939), ("relu", None, None): (0.99, 0.71)}
PAPER_TABLE4.update({("soft_relu", float(b), 0.1): (0.99, t) for b, t in zip(TABLE4_BETAS, [.59, .64, .68, .71, .71, .72, .72, .72])})
PAPER_TABLE4.update({("soft_relu", float(b), 0.4): (0.99, t) for b, t in zip(TABLE4_BETAS, [.56, .63, .68, .71, .71, .71, .71, .71])})


def _table4_key(r: report.Run):
    if r.regime == "soft_relu":
        return ("soft_relu", float(r.regime_cfg["beta"]), float(r.regime_cfg["eps"]))
    return (r.regime, None, None)


def table4(runs: list[report.Run], expected_seeds: Optional[int] = None, ddof: int = 1) -> pd.DataFrame:
    """One line per network of Table 4: mean ± std over seeds of each run's best train and best test
    accuracy (%), beside the published values (CIFAR-10 / VCONV-shaped net / Adam runs only)."""
    lines = []
    for key, (p_train, p_test) in PAPER_TABLE4.items():
        cell = [r for r in runs if r.row == ("vconv", "adam", "cifar10") and _table4_key(r) == key]
        done = report.completed_by_seed(cell)
        tr = report.mean_std([r.best_train for r in done.values()], ddof)
        te = report.mean_std([r.best for r in done.values()], ddof)
        name = f"β={key[1]:g}, ε={key[2]:g}" if key[1] is not None else {"dln": "Deep linear network", "relu": "ReLU"}[key[0]]
        lines.append({"network": name, "regime": key[0], "beta": key[1], "eps": key[2], "n": len(done),
                      "train_mean": tr[0], "train_std": tr[1], "test_mean": te[0], "test_std": te[1], "ddof": ddof,
                      "paper_train": 100 * p_train, "paper_test": 100 * p_test, "diff_test": te[0] - 100 * p_test,
                      "excluded": ";".join(sorted(f"{r.status}:seed{r.seed}" for r in cell if r.status != "completed")),
                      "epochs": report.joined(r.epochs for r in done.values()),
                      "limits": report.limits_text(done.values())})
    df = pd.DataFrame(lines)
    df.insert(df.columns.get_loc("excluded"), "short", df.n < (expected_seeds or max(1, df.n.max())))
    return df


def render_table4_markdown(df: pd.DataFrame, runs: list[report.Run], bad: list[str], command: str) -> str:
    scales = sorted({f"{e} epochs, examples train/test {lim}" for e, lim in zip(df.epochs, df.limits) if e})
    out = ["# Table 4 (paper 002): CIFAR-10, Adam 3e-4, ours vs published (%)", "",
           f"Mean ± {report.STATISTICS[int(df.ddof.iloc[0])]} over seeds of each run's best train accuracy "
           "(running mean over an epoch) and best test accuracy; n = completed seeds († fewer than the fullest "
           "network). Δ = ours − paper (test).", "",
           "| Network | train (ours) | train (paper) | test (ours) | test (paper) | Δ test | n |",
           "|---|---|---|---|---|---|---|"]
    for _, line in df.iterrows():
        flag = "†" if line["short"] else ""
        out.append(f"| {line['network']} | {report.fmt(line['train_mean'], line['train_std'])} | "
                   f"{line['paper_train']:.2f} | **{report.fmt(line['test_mean'], line['test_std'])}**{flag} | "
                   f"{line['paper_test']:.2f} | {report.signed(line['diff_test'])} | {line['n']} |")
    out += ["", "## Provenance", *report.provenance(runs, command, scales)]
    out += report.not_counted([(line["network"], line["excluded"]) for _, line in df.iterrows() if line["excluded"]],
                              bad)
    return "\n".join(out) + "\n"


def write_table4(runs_dir: Path, out_dir: Path, expected_seeds: Optional[int] = None, command: str = "",
                 ddof: int = 1) -> pd.DataFrame:
    runs, bad = report.scan_some(runs_dir)
    df = table4(runs, expected_seeds, ddof)
    report.write_outputs(out_dir, "table4", df, {"md": render_table4_markdown(df, runs, bad, command)})
    return df


