"""Paper 002 experiment 6 (see :mod:`gatelab.papers.dgn`): only the gates of a CIFAR-10 conv DGN train.

The value network Θw is frozen at its random initialisation; the gating network Θg (soft gates,
β=4, ε=0) is the only thing trained (``regime=gates_only``). Published: 56% test accuracy.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from gatelab.papers import report, tables

PAPER_EXP6 = 56.0  # % test accuracy, paper 002 experiment 6 (no std given)
CHANCE = 10.0  # % on CIFAR-10's 10 balanced classes
REGIMES = ["gates_only", "dln", "relu"]  # the claim's net and the two it is read against, at the same scale
PAPER = {"gates_only": PAPER_EXP6, "dln": 39.39, "relu": 71.0}  # experiment 6; Table 4's DLN and ReLU (same net)


def exp6(runs: list[report.Run], ddof: int = 1, controls: bool = False) -> pd.DataFrame:
    """One line per (regime, architecture, epochs, images) of the gates-only runs and of the deep linear and ReLU
    networks trained beside them (dgn/claims.yaml judges gates-only against the DLN of its own scale): mean ± std
    over seeds of each run's best test accuracy (%), beside the published 56%; with ``controls``, the same nets
    untrained (:func:`gatelab.papers.report.untrained_accuracy`, mean ± std)."""
    lines = []
    cells = {}
    for r in runs:
        if r.regime in REGIMES and r.row[2] == "cifar10":
            cells.setdefault((REGIMES.index(r.regime), r.row[0], r.row[1], r.epochs, report.limits_text([r])), []).append(r)
    for (k, arch, opt, epochs, limits), cell in sorted(cells.items()):
        done = report.completed_by_seed(cell)
        mean, std = report.mean_std([r.best for r in done.values()], ddof)
        lines.append({"regime": REGIMES[k], "arch": arch, "optimizer": opt, "epochs": epochs, "limits": limits,
                      "n": len(done),
                      "seeds": ",".join(map(str, sorted(done))), "best_test_mean": mean, "best_test_std": std,
                      "ddof": ddof, "best_epochs": ",".join(str(r.best_epoch) for _, r in sorted(done.items())),
                      "paper_test": PAPER[REGIMES[k]], "diff_test": mean - PAPER[REGIMES[k]],
                      "excluded": ";".join(sorted(f"{r.status}:seed{r.seed}" for r in cell if r.status != "completed"))})
        if controls:
            m0, s0 = report.mean_std([report.untrained_accuracy(r.path) for r in done.values()], ddof)
            lines[-1].update(untrained_test_mean=m0, untrained_test_std=s0)
    return pd.DataFrame(lines)


def render_exp6_markdown(df: pd.DataFrame, runs: list[report.Run], bad: list[str], command: str) -> str:
    full = df[df.limits == "all/all"]
    out = ["# Experiment 6 (paper 002): only the gates of a CIFAR-10 conv net train" +
           ("" if len(full) else " — REDUCED scale"), "",
           "The value network stays at its random initialisation; the gating network (soft gates, β=4) is trained "
           "alone (`regime=gates_only`), Adam 3e-4, batch 32. Best test accuracy over epochs (%), mean ± "
           f"{report.STATISTICS[int(df.ddof.iloc[0])]} over seeds; the paper gives 56% (no std, no epochs). "
           "Δ = ours − paper.", "",
           "Untrained: the same nets at their initialisation, no step taken (the control of the gates-alone claim; "
           f"chance is {CHANCE:.0f}%).", "",
           tables.markdown(pd.DataFrame([
               {"network": line["regime"], "arch": line["arch"].upper(), "epochs": line["epochs"],
                "train/test images": line["limits"], "n (seeds)": f"{line['n']} ({line['seeds']})",
                "best test (ours)": f"**{report.fmt(line['best_test_mean'], line['best_test_std'])}**",
                "best epoch per seed": line["best_epochs"],
                "untrained": report.fmt(line["untrained_test_mean"], line["untrained_test_std"])
                if "untrained_test_mean" in line else "—",
                "paper": f"{line['paper_test']:.0f}", "Δ": report.signed(line["diff_test"])}
               for _, line in df.iterrows()]))]
    out += ["", "## Provenance", *report.provenance(runs, command, sorted(
        {f"{e} epochs, examples train/test {lim}" for e, lim in zip(df.epochs, df.limits)}))]
    out += report.not_counted([(f"{line['epochs']} epochs {line['limits']}", line["excluded"])
                               for _, line in df.iterrows() if line["excluded"]], bad)
    return "\n".join(out) + "\n"


def write_exp6(runs_dir: Path, out_dir: Path, command: str = "", ddof: int = 1, controls: bool = True) -> pd.DataFrame:
    runs, bad = report.scan_some(runs_dir)
    df = exp6(runs, ddof, controls)
    if not len(df) or "gates_only" not in set(df.regime):
        raise SystemExit(f"no gates_only CIFAR-10 runs below {runs_dir}")
    report.write_outputs(out_dir, "exp6", df, {"md": render_exp6_markdown(df, runs, bad, command)})
    return df
