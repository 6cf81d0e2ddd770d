"""Aggregate per-seed ``results.json`` files into the papers' tables, beside the published values.

``python -m gatelab.report table2 --runs outputs/table2 --out outputs/reports/table2``
``python -m gatelab.report table4 --runs outputs/table4 --out outputs/reports/table4``

Table 2 (paper 001): best test accuracy (%) per run, mean ± sample std (ddof=1) over seeds.
Only ``completed`` runs count; the others are counted per cell and listed. For SGD rows the step
size of each cell is the one with the highest mean over its completed seeds (the paper reports
the best of {0.1, 0.01, 0.001}, chosen on test accuracy like everything in Table 2).
Outputs are a function of the runs alone: running the report twice gives the same files.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pandas as pd

from .results import RESULTS, read_results

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
DATASET_TITLES = {"mnist": "MNIST", "cifar10": "CIFAR-10", "binary_mnist": "Binary-MNIST"}


@dataclass
class Run:
    path: str
    status: str
    row: tuple
    regime: str
    lr: float
    seed: int
    best: Optional[float]  # best test accuracy, %
    epochs: int
    limits: tuple  # (limit_train, limit_test)
    finished_at: str
    commit: Optional[str]
    device: str
    regime_cfg: dict  # the resolved regime config (beta, eps, ...)
    best_train: Optional[float]  # best (running-mean) train accuracy over epochs, %


def scan(runs_dir: Path) -> tuple[list[Run], list[str]]:
    """Every results.json below ``runs_dir``; unreadable or foreign files are listed, not counted."""
    runs, bad = [], []
    for path in sorted(Path(runs_dir).rglob(RESULTS)):
        res = read_results(path)
        if res is None:
            bad.append(f"{path}: truncated, unreadable or of another results version")
            continue
        c = res["config"]
        best = res.get("best_test_acc")
        runs.append(Run(str(path.parent), res["status"], (c["arch"]["name"], c["optimizer"]["name"], c["dataset"]["name"]),
                        c["regime"]["name"], float(c["optimizer"]["lr"]), int(res["seed"]),
                        None if best is None else 100.0 * best, int(c["epochs"]),
                        (c["dataset"].get("limit_train"), c["dataset"].get("limit_test")),
                        res.get("finished_at", ""), (res.get("env") or {}).get("git_commit"),
                        (res.get("env") or {}).get("device_name", "?"), c["regime"],
                        max((100.0 * h["train_acc"] for h in res.get("history", []) if h.get("train_acc") is not None),
                            default=None)))
    return runs, bad


def _mean_std(values: list[float]) -> tuple[float, float]:
    s = pd.Series(values, dtype=float)
    return float(s.mean()), (float(s.std(ddof=1)) if len(s) > 1 else math.nan)


def table2(runs: list[Run], expected_seeds: int = 5) -> pd.DataFrame:
    """One line per (row, regime) cell: ours (chosen step size), the paper's, the difference."""
    lines = []
    for row in ROWS:
        for regime in REGIMES:
            cell = [r for r in runs if r.row == row and r.regime == regime]
            if not cell:
                continue
            done = {}
            for r in sorted(cell, key=lambda r: r.finished_at):  # a rerun of a seed replaces the older one
                if r.status == "completed":
                    done.setdefault(r.lr, {})[r.seed] = r
            by_lr = {lr: _mean_std([r.best for r in seeds.values()]) for lr, seeds in done.items()}
            lr = max(by_lr, key=lambda k: (by_lr[k][0], len(done[k]))) if by_lr else None
            mean, std = by_lr[lr] if lr is not None else (math.nan, math.nan)
            chosen = list(done[lr].values()) if lr is not None else []
            excluded = [r for r in cell if r.status != "completed" and (lr is None or r.lr == lr)]
            p_mean, p_std = PAPER_TABLE2[row][regime]
            diff = mean - p_mean
            lines.append({
                "arch": row[0], "optimizer": row[1], "dataset": row[2], "regime": regime,
                "lr": lr, "n": len(chosen), "mean": mean, "std": std,
                "paper_mean": p_mean, "paper_std": p_std, "diff": diff,
                "short": len(chosen) < expected_seeds,
                "far": bool(abs(diff) > 2 * p_std + 0.5) if not math.isnan(diff) else False,
                "excluded": ";".join(sorted(f"{r.status}:seed{r.seed}" for r in excluded)),
                "lrs_tried": ";".join(f"{k:g}={v[0]:.2f}(n={len(done[k])})" for k, v in sorted(by_lr.items())),
                "epochs": ",".join(str(e) for e in sorted({r.epochs for r in chosen})),
                "limits": ",".join(sorted({f"{a or 'all'}/{b or 'all'}" for a, b in (r.limits for r in chosen)})),
            })
    return pd.DataFrame(lines)


def _fmt(mean: float, std: float) -> str:
    if math.isnan(mean):
        return "—"
    return f"{mean:.2f} ± {std:.2f}" if not math.isnan(std) else f"{mean:.2f}"


def _cell_md(line) -> str:
    flags = ("†" if line["short"] else "") + ("‡" if line["far"] else "")
    lr = f", lr {line['lr']:g}" if line["optimizer"] == "sgd" and line["lr"] is not None else ""
    return (f"**{_fmt(line['mean'], line['std'])}**{flags} (n={line['n']}{lr})<br>"
            f"paper {line['paper_mean']:.2f} ± {line['paper_std']:.2f}<br>Δ {line['diff']:+.2f}")


def _rows(df: pd.DataFrame):
    for row in ROWS:
        sub = df[(df.arch == row[0]) & (df.optimizer == row[1]) & (df.dataset == row[2])]
        if len(sub):
            yield row, {line["regime"]: line for _, line in sub.iterrows()}


def provenance(runs: list[Run], df: pd.DataFrame, command: str) -> list[str]:
    used = [r for r in runs if r.status == "completed"]
    commits = sorted({r.commit or "?" for r in used})
    devices = sorted({r.device for r in used})
    dates = sorted(r.finished_at for r in used if r.finished_at)
    scale = []
    for row, cells in _rows(df):
        any_line = next(iter(cells.values()))
        scale.append(f"{row[0].upper()}/{row[1]}/{DATASET_TITLES[row[2]]}: {any_line['epochs']} epochs, "
                     f"examples train/test {any_line['limits']}")
    return [f"- command: `{command}`" if command else "- command: (not given)",
            f"- runs: {len(runs)} results.json ({len(used)} completed), code commit(s) {', '.join(commits)}",
            f"- finished: {dates[0] if dates else '?'} .. {dates[-1] if dates else '?'}; device(s): {', '.join(devices)}",
            f"- scale: {'; '.join(scale)}"]


def render_markdown(df: pd.DataFrame, runs: list[Run], bad: list[str], expected_seeds: int, command: str) -> str:
    out = ["# Table 2 (paper 001): best test accuracy (%), ours vs published", "",
           f"Mean ± sample std (ddof=1) over seeds of each run's best test accuracy; n = completed seeds "
           f"(expected {expected_seeds}). † fewer seeds than expected; ‡ more than 2 paper-std + 0.5 points from "
           "the paper. SGD: per cell, the step size with the highest mean (lr shown). Δ = ours − paper.", ""]
    out.append("| Arch | Optimiser | Dataset | " + " | ".join(REGIME_TITLES[r] for r in REGIMES) + " |")
    out.append("|---|---|---|" + "---|" * len(REGIMES))
    for row, cells in _rows(df):
        vals = [_cell_md(cells[r]) if r in cells else "—" for r in REGIMES]
        out.append(f"| {row[0].upper()} | {'SGD' if row[1] == 'sgd' else 'Adam'} | {DATASET_TITLES[row[2]]} | "
                   + " | ".join(vals) + " |")
    out += ["", "## Provenance", *provenance(runs, df, command)]
    excluded = [(f"{line['arch']}/{line['optimizer']}/{line['regime']}", line["excluded"])
                for _, line in df.iterrows() if line["excluded"]]
    if excluded or bad:
        out += ["", "## Not counted"]
        out += [f"- {cell}: {what}" for cell, what in excluded]
        out += [f"- {b}" for b in bad]
    return "\n".join(out) + "\n"


def render_latex(df: pd.DataFrame) -> str:
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
        out.append(f"{row[0].upper()} & {row[1].upper() if row[1] == 'sgd' else 'Adam'} & "
                   f"{DATASET_TITLES[row[2]]} & " + " & ".join(vals) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}", "% ours mean$\\pm$std over seeds (paper mean); see table2.md"]
    return "\n".join(out) + "\n"


def _scan_some(runs_dir: Path, archs: Optional[list] = None) -> tuple[list[Run], list[str]]:
    runs, bad = scan(runs_dir)
    runs = [r for r in runs if not archs or r.row[0] in archs]
    if not runs:
        raise SystemExit(f"no {RESULTS} files below {runs_dir}")
    return runs, bad


def _write(out_dir: Path, name: str, df: pd.DataFrame, texts: dict) -> None:
    """``<name>.csv`` and the rendered ``<name>.<ext>`` files; deterministic given the runs."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    df.to_csv(out_dir / f"{name}.csv", index=False, float_format="%.4f")
    for ext, text in texts.items():
        (out_dir / f"{name}.{ext}").write_text(text)


def write_table2(runs_dir: Path, out_dir: Path, expected_seeds: int = 5, command: str = "",
                 archs: Optional[list] = None) -> pd.DataFrame:
    runs, bad = _scan_some(runs_dir, archs)
    df = table2(runs, expected_seeds)
    _write(out_dir, "table2", df, {"md": render_markdown(df, runs, bad, expected_seeds, command),
                                   "tex": render_latex(df)})
    return df


# Paper 002 Table 4: (train, test) accuracy, fractions as published (mean of each run's best, 5 runs).
TABLE4_BETAS = [1, 2, 4, 8, 12, 16, 20, 24]
PAPER_TABLE4 = {("dln", None, None): (0.5042, 0.3939), ("relu", None, None): (0.99, 0.71)}
PAPER_TABLE4.update({("soft_relu", float(b), 0.1): (0.99, t) for b, t in zip(TABLE4_BETAS, [.59, .64, .68, .71, .71, .72, .72, .72])})
PAPER_TABLE4.update({("soft_relu", float(b), 0.4): (0.99, t) for b, t in zip(TABLE4_BETAS, [.56, .63, .68, .71, .71, .71, .71, .71])})


def _table4_key(r: Run):
    if r.regime == "soft_relu":
        return ("soft_relu", float(r.regime_cfg["beta"]), float(r.regime_cfg["eps"]))
    return (r.regime, None, None)


def table4(runs: list[Run], expected_seeds: int = 5) -> pd.DataFrame:
    """One line per network of Table 4: mean ± std (ddof=1) over seeds of each run's best train and
    best test accuracy (%), beside the published values (CIFAR-10 / VCONV-shaped net / Adam rows only)."""
    lines = []
    for key, (p_train, p_test) in PAPER_TABLE4.items():
        cell = [r for r in runs if r.row[0] == "vconv" and r.row[1:] == ("adam", "cifar10") and _table4_key(r) == key]
        done = {}
        for r in sorted(cell, key=lambda r: r.finished_at):
            if r.status == "completed":
                done[r.seed] = r
        tr = _mean_std([r.best_train for r in done.values()]) if done else (math.nan, math.nan)
        te = _mean_std([r.best for r in done.values()]) if done else (math.nan, math.nan)
        name = f"β={key[1]:g}, ε={key[2]:g}" if key[1] is not None else {"dln": "Deep linear network", "relu": "ReLU"}[key[0]]
        lines.append({"network": name, "regime": key[0], "beta": key[1], "eps": key[2], "n": len(done),
                      "train_mean": tr[0], "train_std": tr[1], "test_mean": te[0], "test_std": te[1],
                      "paper_train": 100 * p_train, "paper_test": 100 * p_test,
                      "diff_test": te[0] - 100 * p_test, "short": len(done) < expected_seeds,
                      "excluded": ";".join(sorted(f"{r.status}:seed{r.seed}" for r in cell if r.status != "completed")),
                      "epochs": ",".join(str(e) for e in sorted({r.epochs for r in done.values()})),
                      "limits": ",".join(sorted({f"{a or 'all'}/{b or 'all'}" for a, b in (r.limits for r in done.values())}))})
    return pd.DataFrame(lines)


def render_table4_markdown(df: pd.DataFrame, runs: list[Run], bad: list[str], expected_seeds: int, command: str) -> str:
    used = [r for r in runs if r.status == "completed"]
    scales = sorted({f"{e} epochs, examples train/test {lim}" for e, lim in zip(df.epochs, df.limits) if e})
    out = ["# Table 4 (paper 002): CIFAR-10, Adam 3e-4, ours vs published (%)", "",
           f"Mean ± sample std (ddof=1) over seeds of each run's best train accuracy (running mean over an "
           f"epoch) and best test accuracy; n = completed seeds (expected {expected_seeds}; † fewer). "
           "Δ = ours − paper (test).", "",
           "| Network | train (ours) | train (paper) | test (ours) | test (paper) | Δ test | n |",
           "|---|---|---|---|---|---|---|"]
    for _, line in df.iterrows():
        flag = "†" if line["short"] else ""
        out.append(f"| {line['network']} | {_fmt(line['train_mean'], line['train_std'])} | {line['paper_train']:.2f} | "
                   f"**{_fmt(line['test_mean'], line['test_std'])}**{flag} | {line['paper_test']:.2f} | "
                   f"{line['diff_test']:+.2f} | {line['n']} |")
    out += ["", "## Provenance", f"- command: `{command}`" if command else "- command: (not given)",
            f"- runs: {len(used)} completed, code commit(s) {', '.join(sorted({r.commit or '?' for r in used}))}; "
            f"device(s): {', '.join(sorted({r.device for r in used}))}",
            f"- scale: {'; '.join(scales) or '?'}"]
    excluded = [(line["network"], line["excluded"]) for _, line in df.iterrows() if line["excluded"]]
    if excluded or bad:
        out += ["", "## Not counted", *[f"- {n}: {e}" for n, e in excluded], *[f"- {b}" for b in bad]]
    return "\n".join(out) + "\n"


def write_table4(runs_dir: Path, out_dir: Path, expected_seeds: int = 5, command: str = "") -> pd.DataFrame:
    runs, bad = _scan_some(runs_dir)
    df = table4(runs, expected_seeds)
    _write(out_dir, "table4", df, {"md": render_table4_markdown(df, runs, bad, expected_seeds, command)})
    return df


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m gatelab.report", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="table", required=True)
    t2 = sub.add_parser("table2", help="Table 2 of paper 001 (NPF/NPK): table2.{md,csv,tex}")
    t2.add_argument("--arch", nargs="*", default=None, help="only these architectures' rows (e.g. fc)")
    t4 = sub.add_parser("table4", help="Table 4 of paper 002 (DGN: DLN, ReLU, soft-ReLU beta x eps): table4.{md,csv}")
    for p in (t2, t4):
        p.add_argument("--runs", type=Path, required=True, help="directory searched for results.json files")
        p.add_argument("--out", type=Path, required=True, help="directory for the rendered table")
        p.add_argument("--seeds", type=int, default=5, help="seeds expected per cell (cells with fewer are marked)")
        p.add_argument("--command", default="", help="the command that made the runs, for the provenance block")
    args = ap.parse_args(argv)
    if args.table == "table4":
        df = write_table4(args.runs, args.out, args.seeds, args.command)
    else:
        df = write_table2(args.runs, args.out, args.seeds, args.command, args.arch)
    print((args.out / f"{args.table}.md").read_text())
    print(f"{len(df)} cells -> {args.out}/{args.table}.*", file=sys.stderr)


if __name__ == "__main__":
    main()
