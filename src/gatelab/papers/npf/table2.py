"""Paper 001 Table 2: best test accuracy per regime and row beside the published values (see :mod:`gatelab.papers.npf`)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import pandas as pd

from gatelab.papers import claims, report, tables

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


def _points(x) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.2f}"


def _length(chosen: list[report.Run]) -> dict:
    """How long the cell's runs were and when they peaked (the report's Length section)."""
    return {"epochs": report.joined(r.epochs for r in chosen),
            "best_per_seed": report.seed_text({r.seed: r.best for r in chosen}),
            "best_epochs": ";".join(str(r.best_epoch) for r in chosen),
            "epochs_within_0.05": report.epochs_to_reach(chosen),
            "rise_last_fifth": report.rise_at_end(chosen),
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
            "far": claims.far(diff, p_std),
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


per_seed = report.per_seed  # a cell's ``best_per_seed`` column as {seed: accuracy}


def gap(df: pd.DataFrame, a: str = "flnpf", b: str = "relu") -> pd.DataFrame:
    """Per row, ``a`` − ``b`` in best test accuracy, ours and the paper's (FLNPF − ReLU: how much of
    the ReLU net's accuracy its learned gates carry, §6). Paired over the seeds both cells completed
    (FLNPF seed s takes its gates from ReLU seed s); s.e. = std of the paired differences / √n."""
    lines = []
    for row, cells in _rows(df):
        if a not in cells or b not in cells:
            continue
        x, y = per_seed(cells[a]), per_seed(cells[b])
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
           tables.markdown(pd.DataFrame([
               {"Arch": s.arch.upper(), "Optimiser": _opt_title(s.optimizer), "Dataset": report.DATASET_TITLES[s.dataset],
                "pairs": s.pairs, "ours": f"{s.gap:+.2f}" + ("" if math.isnan(s.se) else f" ± {s.se:.2f}"),
                "paper": f"{s.paper_gap:+.2f}"} for _, s in g.iterrows()]))]
    return out


def _step_sizes_md(steps: pd.DataFrame) -> list[str]:
    if not len(steps):
        return []
    out = ["", "## Step sizes", "",
           "Every step size of the cells that ran several, also those the table above leaves out; same "
           "statistic, Δ = ours − paper.", "",
           tables.markdown(pd.DataFrame([
               {"Arch": s.arch.upper(), "Optimiser": _opt_title(s.optimizer), "Regime": REGIME_TITLES[s.regime],
                "lr": f"{s.lr:g}", "n": s.n, "best test acc": report.fmt(s["mean"], s["std"]), "Δ": f"{s['diff']:+.2f}",
                "within 0.05 at": _whole(s["epochs_within_0.05"]), "best epoch per seed": s.best_epochs}
               for _, s in steps.iterrows()]))]
    return out


def render_table2_markdown(df: pd.DataFrame, runs: list[report.Run], bad: list[str], command: str,
                           steps: Optional[pd.DataFrame] = None) -> str:
    ddof = int(df.ddof.iloc[0])
    out = ["# Table 2 (paper 001): best test accuracy (%), ours vs published", "",
           f"Mean ± {report.STATISTICS[ddof]} over seeds of each run's best test accuracy; the paper's "
           "numbers use ddof=0. n = completed seeds. † fewer seeds than the fullest cell; ‡ "
           f"{claims.FLAG_RULE.replace('from', 'points from')}; § seeds of different lengths (Length gives them). " + _lr_rule(df) + " Δ = ours − paper.", ""]
    out.append(tables.markdown(pd.DataFrame([
        {"Arch": row[0].upper(), "Optimiser": _opt_title(row[1]), "Dataset": report.DATASET_TITLES[row[2]],
         **{REGIME_TITLES[r]: _cell_md(cells[r]) if r in cells else "—" for r in REGIMES}} for row, cells in _rows(df)],
        columns=["Arch", "Optimiser", "Dataset", *(REGIME_TITLES[r] for r in REGIMES)])))
    out += ["", "## Length: does a run this long lose anything?", "",
            "Per cell: epochs run; the epoch of each seed's best test accuracy; the first epoch at which the "
            "seeds' mean best-so-far test accuracy is within 0.05 points of its final value; how many points "
            "that mean rose over the last fifth of the epochs (still learning: 1 or more, docs/reproducing.md); the first epoch "
            f"by which every seed's train accuracy (running mean over the epoch) reached {FIT}%; train and test "
            "accuracy at the last epoch, mean over seeds (%).", "",
            tables.markdown(pd.DataFrame([
                {"Arch": row[0].upper(), "Optimiser": _opt_title(row[1]), "Regime": REGIME_TITLES[r],
                 "lr": f"{line['lr']:g}", "epochs": line["epochs"], "best epoch per seed": line["best_epochs"],
                 "within 0.05 at": _whole(line["epochs_within_0.05"]), "rise, last fifth": _points(line.get("rise_last_fifth")),
                 f"train ≥ {FIT}% at": _whole(line[f"train_{FIT}_at"]), "train at end": f"{line['final_train_acc']:.2f}",
                 "test at end": f"{line['final_test_acc']:.2f}"}
                for row, cells in _rows(df) for r in REGIMES
                for line in [cells.get(r)] if line is not None and line["n"]]))]
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
