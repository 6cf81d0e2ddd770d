"""Paper 004 Table 1: clusters k and Δacc per (σ₀, N, τ), and the runs they read (see :mod:`gatelab.papers.races`)."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

import pandas as pd
import torch
from omegaconf import OmegaConf

from gatelab.analyses import neurons
from gatelab.core import checkpoints
from gatelab.core.results import LOSS_TRACE, RESULTS, load_results
from gatelab.data import datasets as data_mod
from gatelab.papers import facts, report, tables

TAUS = (0.70, 0.95, 0.99)
SPARSITIES = (0.2, 0.5, 0.7)
DEFAULT = {"d": 300, "normalize": "pm1"}  # the paper's network; the input scale we chose (README)
TRACE = LOSS_TRACE  # written by the training loop when a run sets loss_trace=[lo, hi]

# Appendix G, Table 1: (σ₀, N) -> τ -> ((k mean, std), (Δacc % mean, std)); N=4000: one seed, no std.
_T1 = {
    (1e-5, 200): [(3.3, 0.5, -5.4, 3.8), (15.3, 6.3, -3.3, 4.6), (93.3, 18.6, 0.7, 0.7)],
    (1e-5, 800): [(4.7, 0.9, -29.2, 1.9), (156.0, 11.3, 0.5, 0.7), (277.0, 5.1, 0.0, 0.0)],
    (1e-5, 4000): [(105, math.nan, -15.0, math.nan), (300, math.nan, 0.0, math.nan), (300, math.nan, 0.0, math.nan)],
    (1e-3, 200): [(21.0, 3.7, -14.2, 0.6), (172.0, 25.7, -0.2, 0.2), (286.3, 7.4, 0.0, 0.0)],
    (1e-3, 800): [(8.7, 2.5, -29.5, 3.1), (256.7, 5.2, 0.0, 0.0), (298.3, 1.7, 0.0, 0.0)],
    (1e-3, 4000): [(188, math.nan, -4.7, math.nan), (300, math.nan, 0.0, math.nan), (300, math.nan, 0.0, math.nan)],
}
PAPER_TABLE1 = {cell: dict(zip(TAUS, vals)) for cell, vals in _T1.items()}


@dataclass
class RaceRun:
    """What the report needs of one run of ``+experiment=race``."""
    path: Path
    status: str
    seed: int
    std: float  # σ₀
    n: int  # N, training examples
    d: int  # neurons
    normalize: str
    epochs: int
    imp: Optional[tuple]  # (sparsity, round) of an IMP round, None for a dense run
    per_epoch: int  # optimiser steps per epoch
    config: dict = field(repr=False)
    trace: tuple = ()  # loss_trace=[lo, hi]: a run that measures the loss drop at every step
    lr: float = 1e-3  # the SGD step (the paper's); the tables and figures show the runs at the most common one

    @property
    def cell(self) -> tuple:
        return (self.std, self.n)


def scan(runs_dir: Path, traced: bool = False) -> tuple[list[RaceRun], list[str]]:
    """The race runs below ``runs_dir`` (one hidden layer, Gaussian init); others are ignored. The
    ``loss_trace`` runs (shortened runs that measure the loss drop) only with ``traced``."""
    runs = []
    found, bad = report.results_below(runs_dir)
    for path, res in found:
        c = res["config"]
        if c["arch"].get("init") != "gaussian" or len(c["arch"]["dense"]) != 1 or c["dataset"]["name"] != "cifar10_binary":
            continue
        imp = c.get("imp") or {}
        n = int(c["dataset"]["limit_train"])
        runs.append(RaceRun(path.parent, res["status"], int(res["seed"]), float(c["arch"]["init_std"]), n,
                            int(c["arch"]["dense"][0]), c["dataset"].get("normalize", "unit"), int(c["epochs"]),
                            (float(imp["sparsity"]), int(imp["round"])) if imp.get("sparsity") is not None else None,
                            math.ceil(n / int(c["optimizer"]["batch_size"])), c, tuple(c.get("loss_trace") or ()),
                            float(c["optimizer"]["lr"])))
    return [r for r in runs if traced or not r.trace], bad


def main_lr(runs: list[RaceRun]) -> float:
    """The step size of the grid: the most common among the dense runs (another is an isolation variant)."""
    lrs = [r.lr for r in runs if r.imp is None] or [r.lr for r in runs]
    return float(pd.Series(lrs).mode().iloc[0]) if lrs else math.nan


def traced_drops(runs: list[RaceRun], main: list[RaceRun], root: Optional[str] = None) -> pd.DataFrame:
    """Per ``loss_trace`` run: the steps at which its loss has come 10% and 50% of the way down, at
    every step of its window (the plateau's level at t=0 and the end from the same seed's main run, so
    a window may start after t=0; a drop before the window's start is None, not a grid step), and the
    largest gap between its loss and the main run's step checkpoints at the steps both have (the two
    runs train the same steps; a gap would show they do not)."""
    lines = []
    for r in (r for r in runs if r.trace and r.status == "completed"):
        twin = next((m for m in main if m.imp is None and m.status == "completed" and (m.std, m.n, m.d, m.seed,
                     m.normalize, m.lr) == (r.std, r.n, r.d, r.seed, r.normalize, r.lr)), None)
        curve = pd.read_csv(r.path / TRACE).drop_duplicates("step", keep="last").sort_values("step")
        if twin is None or not len(curve):
            continue
        main_curve = loss_curve(twin, root)
        traced = curve.set_index("step").loss
        curve = pd.concat([main_curve[main_curve.step < r.trace[0]][["step", "loss"]], curve], ignore_index=True)
        in_window = lambda t: t if t is not None and t >= r.trace[0] else None  # noqa: E731
        gap = max((abs(traced[t] - ckpt_loss(twin, t, root)) for t in step_checkpoints(twin) if t in traced.index),
                  default=math.nan)
        lines.append({"sigma0": r.std, "N": r.n, "seed": r.seed, "window": f"{r.trace[0]}-{r.trace[1]}",
                      "drop_step": in_window(drop_step(curve, DROP_FRACTION, main_curve.loss.iloc[-1])),
                      "half_step": in_window(drop_step(curve, 0.5, main_curve.loss.iloc[-1])),
                      "grid_drop_step": drop_step(main_curve), "max_gap_vs_checkpoints": gap})
    return pd.DataFrame(lines)


@lru_cache(maxsize=8)
def _data(dataset_json: str, root: Optional[str]):
    ds = OmegaConf.create(json.loads(dataset_json))
    data = data_mod.load(ds, OmegaConf.create({"root": root, "download": False}), "cpu")
    flat = lambda s: (s.scale(s.x).flatten(1).double(), s.y)  # noqa: E731
    return flat(data.train), flat(data.test)


def run_data(run: RaceRun, root: Optional[str] = None):
    """((x_train, y_train), (x_test, y_test)) of a run, as its network saw them (float64, flat)."""
    return _data(json.dumps(run.config["dataset"], sort_keys=True), root or run.config["data"].get("root"))


def net_at(run: RaceRun, ckpt: str) -> neurons.OneHidden:
    return neurons.OneHidden.from_state(checkpoints.load(run.path / checkpoints.CKPT_DIR / ckpt)["model"])


def step_checkpoints(run: RaceRun) -> list[int]:
    """The steps t of the run's ``ckpt/step_<t>.pt`` (a fact: :mod:`gatelab.papers.facts`)."""
    def compute():
        names = (run.path / checkpoints.CKPT_DIR).glob("step_*.pt")
        return sorted(int(re.fullmatch(r"step_(\d+)\.pt", p.name).group(1)) for p in names)
    return facts.fact(run.path, "step_checkpoints", compute)


def ckpt_loss(run: RaceRun, t: int, root: Optional[str] = None) -> float:
    """The full training-set loss of the run's network after ``t`` steps (``step_<t>.pt``; a fact)."""
    return facts.fact(run.path, f"loss@step_{t}", lambda: net_at(run, f"step_{t}.pt").loss(*run_data(run, root)[0]))


def loss_curve(run: RaceRun, root: Optional[str] = None) -> pd.DataFrame:
    """Full training-set loss after t steps: at every step of the run's ``loss_trace`` window
    (loss_trace.csv), else at the step checkpoints; then the per-epoch running-mean training loss of
    results.json (``source`` says which)."""
    trace = run.path / TRACE
    traced = pd.read_csv(trace).drop_duplicates("step", keep="last") if trace.is_file() else \
        pd.DataFrame({"step": [], "loss": []})
    lo, hi = (traced.step.min(), traced.step.max()) if len(traced) else (1, 0)
    rows = [{"step": int(t), "loss": float(v), "source": "every step"} for t, v in zip(traced.step, traced.loss)]
    rows += [{"step": t, "loss": ckpt_loss(run, t, root), "source": "checkpoint"}
             for t in step_checkpoints(run) if not lo <= t <= hi]
    rows.sort(key=lambda r: r["step"])
    last = max((r["step"] for r in rows), default=-1)
    res, _ = load_results(run.path / RESULTS)  # a run the report scanned as sound; malformed since: no epoch points
    hist = res["history"] if res else []
    rows += [{"step": h["epoch"] * run.per_epoch, "loss": h["train_loss"], "source": "epoch (running mean)"}
             for h in hist if h["epoch"] * run.per_epoch > last and h["train_loss"] is not None]
    return pd.DataFrame(rows)


DROP_FRACTION = 0.1


def drop_step(curve: pd.DataFrame, fraction: float = DROP_FRACTION, end: Optional[float] = None) -> Optional[int]:
    """The loss drop of Fig 1a: the first step at which the training loss has come ``fraction`` of
    the way down from its plateau (its value at t=0, ln 2 from a tiny init) to its final value
    (``end``, default the curve's last), i.e. has left the plateau. None if the curve never gets there."""
    if len(curve) < 2:
        return None
    start, end = curve.loss.iloc[0], curve.loss.iloc[-1] if end is None else end
    if not end < start:  # a loss that never fell has no drop (not one at step 0)
        return None
    below = curve[curve.loss <= start - fraction * (start - end)]
    return int(below.step.iloc[0]) if len(below) else None


@dataclass(frozen=True)
class Rule:
    """How neurons are clustered: the linkage and the parts of the total weight vector."""
    linkage: str = "single"
    parts: tuple = ("w1", "b1", "w2")


def analyse(run: RaceRun, root: Optional[str] = None, rule: Rule = Rule()) -> dict:
    """k and Δacc (train, test) at each τ for the final network; dead neurons (never active on the
    training set); the loss-drop step. What it reads of ``last.pt`` is a fact (:mod:`gatelab.papers.facts`)."""
    out = {"path": str(run.path), "seed": run.seed}
    out.update(facts.fact(run.path, f"final:{rule.linkage}:{'+'.join(rule.parts)}", lambda: _final(run, root, rule)))
    curve = loss_curve(run, root)
    out["drop_step"], out["half_step"] = drop_step(curve), drop_step(curve, 0.5)
    return out


def _final(run: RaceRun, root: Optional[str], rule: Rule) -> dict:
    """Of the final network: accuracies, dead neurons, and k and Δacc at each τ under ``rule``."""
    (x, y), (xt, yt) = run_data(run, root)
    net = net_at(run, "last.pt")
    out = {"acc": net.accuracy(x, y), "acc_test": net.accuracy(xt, yt),
           "dead": int(((net.hidden_pre(x) > 0).sum(0) == 0).sum())}
    for tau in TAUS:
        m = neurons.merge_effect(net, x, y, tau, rule.linkage, rule.parts, x_test=xt, y_test=yt)
        out.update({f"k@{tau}": m["k"], f"dacc@{tau}": m["delta_acc"], f"dacc_test@{tau}": m["delta_acc_test"]})
    return out


# ---- Table 1 ----

def _stat(values, ddof):
    return report.mean_std([v for v in values if v is not None and not math.isnan(v)], ddof)


def cell_lines(runs: list[RaceRun], root: Optional[str] = None, rule: Rule = Rule()) -> list[dict]:
    """One line per (σ₀, N, normalize, epochs, d, lr) group of completed dense runs and τ."""
    groups: dict = {}
    for r in runs:
        if r.imp is None:
            groups.setdefault((r.std, r.n, r.normalize, r.epochs, r.d, r.lr), []).append(r)
    lines = []
    for key, cell in sorted(groups.items()):
        done = {r.seed: r for r in cell if r.status == "completed"}
        stats = [analyse(r, root, rule) for _, r in sorted(done.items())]
        excluded = ";".join(sorted(f"{r.status}:seed{r.seed}" for r in cell if r.status != "completed"))
        for tau in TAUS:
            line = {"linkage": rule.linkage, "parts": "+".join(rule.parts), "sigma0": key[0], "N": key[1], "normalize": key[2], "epochs": key[3], "d": key[4], "lr": key[5],
                    "tau": tau, "n": len(stats), "seeds": ",".join(str(s["seed"]) for s in stats),
                    "excluded": excluded,
                    "drop_step": _stat([s["drop_step"] for s in stats], 0)[0],
                    "half_step": _stat([s["half_step"] for s in stats], 0)[0],
                    "dead": _stat([s["dead"] for s in stats], 0)[0],
                    "acc_train": 100 * _stat([s["acc"] for s in stats], 0)[0],
                    "acc_test": 100 * _stat([s["acc_test"] for s in stats], 0)[0]}
            for what in ("k", "dacc", "dacc_test"):
                vals = [s[f"{what}@{tau}"] for s in stats]
                m, s0 = _stat(vals, 0)
                line.update({f"{what}_mean": m, f"{what}_std0": s0, f"{what}_std1": _stat(vals, 1)[1]})
            paper = PAPER_TABLE1.get(key[:2], {}).get(tau)
            line.update(dict(zip(("paper_k", "paper_k_std", "paper_dacc", "paper_dacc_std"),
                                 paper if paper else (math.nan,) * 4)))
            lines.append(line)
    return lines


def table1(runs: list[RaceRun], root: Optional[str] = None, epochs: Optional[int] = None,
           rule: Rule = Rule()) -> pd.DataFrame:
    """Every cell found; ``main`` marks the paper's grid at d=300, pm1 and the main epoch count
    (``epochs``, default: the most common among the N=200 runs)."""
    df = pd.DataFrame(cell_lines(runs, root, rule))
    if not len(df):
        return df
    df = df[df.lr == main_lr(runs)].reset_index(drop=True)  # another step size is an isolation variant
    if epochs is None:
        epochs = int(df[df.N == 200].epochs.mode().iloc[0]) if (df.N == 200).any() else int(df.epochs.mode().iloc[0])
    df["main"] = (df.d == DEFAULT["d"]) & (df.normalize == DEFAULT["normalize"]) & (df.epochs == epochs) & \
        df.apply(lambda line: (line.sigma0, line.N) in PAPER_TABLE1, axis=1)
    return df


def _pm(m, s, digits=1, n=2) -> str:
    if m is None or math.isnan(m):
        return "—"
    return f"{m:.{digits}f}" if s is None or math.isnan(s) or n < 2 else f"{m:.{digits}f} ± {s:.{digits}f}"


STABLE_MAX_N = 800  # Algorithm 1 costs probes x N x 1024 per iteration: the N=4000 cells are left out


def stable_cells(races: list[RaceRun], root: Optional[str] = None) -> dict:
    """{N: (stable cells with sign +1, with sign -1)} of each training set of Table 1's grid with N <= 800."""
    out, grid = {}, {n for _, n in PAPER_TABLE1}
    for r in sorted(races, key=lambda r: r.n):
        if r.n in out or r.n not in grid or r.n > STABLE_MAX_N or r.normalize != DEFAULT["normalize"] or \
                r.imp is not None:
            continue
        (x, y), _ = run_data(r, root)
        trace = neurons.stable_cell_trace(x, y, generator=torch.Generator().manual_seed(0), signs=(1, -1))
        out[r.n] = tuple(trace[s][-1] for s in (1, -1))  # one probe draw and first product for both alignments
    return out


def render_table1(df: pd.DataFrame, runs: list[report.Run], bad: list[str], command: str,
                  stable: Optional[dict] = None, traced: Optional[pd.DataFrame] = None) -> str:
    main = df[df.main]
    rule = f"{df.linkage.iloc[0]} linkage, total weight vector {df.parts.iloc[0]}"
    out = ["# Table 1 (paper 004, Appendix G): merging clusters of aligned neurons", "",
           f"k: clusters of neurons with cosine ≥ τ between total weight vectors ({rule}); "
           "Δacc = 100·(acc_merged − acc)/acc (%), each cluster merged into one neuron. Ours: mean ± std over n "
           "seeds, std with ddof=0 (np.std, what the paper's table matches: its means are multiples of 1/3 and "
           "its stds the population std of 3 values) — the comparison uses these; ddof=1 in the CSV. "
           "Δacc on the training set, (test in brackets): the paper does not say which; its τ=0.70 values match our "
           "training-set ones. Paper: N=4000 single runs.", "",
           tables.markdown(pd.DataFrame([
               {"σ₀": f"{std:g}", "N": n, "n": int(cell.n.iloc[0]),
                **{k: v for _, line in cell.sort_values("tau").iterrows() for k, v in (
                    (f"τ={line.tau:.2f}: k ours / paper",
                     f"{_pm(line.k_mean, line.k_std0, n=line.n)} / {_pm(line.paper_k, line.paper_k_std)}"),
                    (f"τ={line.tau:.2f}: Δacc ours (test) / paper",
                     f"{_pm(line.dacc_mean, line.dacc_std0, n=line.n)} "
                     f"({_pm(line.dacc_test_mean, line.dacc_test_std0, n=line.n)}) / "
                     f"{_pm(line.paper_dacc, line.paper_dacc_std)}"))}}
               for (std, n), cell in main.groupby(["sigma0", "N"], sort=True)]))]
    out += ["", "The same with the sample std (ddof=1): k, Δacc (training set).", "",
            tables.markdown(pd.DataFrame([
                {"σ₀": f"{std:g}", "N": n, "n": int(cell.n.iloc[0]),
                 **{k: v for _, c in cell.sort_values("tau").iterrows() for k, v in (
                     (f"τ={c.tau:.2f}: k", _pm(c.k_mean, c.k_std1, n=c.n)),
                     (f"τ={c.tau:.2f}: Δacc", _pm(c.dacc_mean, c.dacc_std1, n=c.n)))}}
                for (std, n), cell in main.groupby(["sigma0", "N"], sort=True)]))]
    out += ["", "Accuracy of the unmerged networks (%, mean over seeds) and the loss drop (mean step at which the "
            f"training loss has come {DROP_FRACTION:.0%} and 50% of the way down from its plateau, on the "
            "step-checkpoint grid, then per epoch; paper: \"drops around t=300\"):", "",
            tables.markdown(pd.DataFrame([
                {"σ₀": f"{std:g}", "N": n, "epochs": line.epochs, "steps/epoch": math.ceil(n / 4),
                 "train acc": _pm(line.acc_train, None), "test acc": _pm(line.acc_test, None),
                 "dead neurons": _pm(line.dead, None), "loss drop (10%)": _pm(line.drop_step, None, 0),
                 "half-way (50%)": _pm(line.half_step, None, 0)}
                for (std, n), cell in main.groupby(["sigma0", "N"], sort=True) for line in [cell.iloc[0]]]))]
    out += _traced_md(traced) + _stable_md(stable, main) + _checks_md(df)
    out += ["", "## Provenance", *report.provenance(runs, command, [
        f"d={DEFAULT['d']}, normalize={DEFAULT['normalize']}, epochs {report.joined(main.epochs)}, "
        f"seeds per cell {report.joined(main.n)}"])]
    excluded = [(f"σ₀={line.sigma0:g} N={line.N}", line.excluded) for _, line in df.drop_duplicates(
        ["sigma0", "N", "normalize", "epochs", "d"]).iterrows() if line.excluded]
    out += report.not_counted(excluded, bad)
    return "\n".join(out) + "\n"


def _traced_md(traced: Optional[pd.DataFrame]) -> list[str]:
    """The loss drop at every step, from the ``loss_trace`` runs."""
    if traced is None or not len(traced):
        return []
    out = ["", "The loss drop at every step (`loss_trace` runs: each seed's first steps trained again with the "
           "training-set loss recorded after every step of the window; the plateau (t=0) and the final loss from its "
           "100-epoch run). "
           "Gap: the largest |loss| difference between the two runs at the checkpoint steps they share (float32 "
           "training-time evaluation against float64 checkpoints; a larger gap would mean they trained different "
           "steps). Paper: \"drops around t=300\".", ""]
    cells = []
    for (std, n), g in traced.groupby(["sigma0", "N"], sort=True):
        d = g.drop_step.dropna()
        half = g.half_step.dropna()
        span = (f" [{int(d.min())}–{int(d.max())}]" if len(d) else "") + \
            (f", {len(g) - len(d)} before the window" if len(d) < len(g) else "")
        cells.append([f"{std:g}", n, len(g), report.joined(g.window),
                      f"{_pm(*report.mean_std(list(d), 0), digits=0, n=len(d))}{span}",
                      _pm(g.grid_drop_step.mean(), None, 0),
                      _pm(half.mean(), None, 0) if len(half) == len(g) else "after the window",
                      f"{g.max_gap_vs_checkpoints.max():.1e}"])
    return out + tables.lines(["σ₀", "N", "n", "window", "drop (10%) every step: mean ± std [min–max]",
                               "on the checkpoint grid", "half-way (50%)", "gap"], cells)


def _stable_md(stable: Optional[dict], main: pd.DataFrame) -> list[str]:
    """Appendix D's stable-cell count beside k at τ=0.99 (σ₀=1e-5)."""
    out: list[str] = []
    if stable:
        out += ["", "Stable cells of the training set (Appendix D, Algorithm 1, 1000 probes; both alignments of the "
                "outgoing weights) beside the clusters k at τ=0.99 (σ₀=1e-5):", ""]
        cells = []
        for n, (a, b) in sorted(stable.items()):
            k = main[(main.N == n) & (main.sigma0 == 1e-5) & (main.tau == 0.99)].k_mean
            cells.append([n, f"{a} / {b}", _pm(k.iloc[0], None) if len(k) else "—"])
        out += tables.lines(["N", "stable cells (class 1 / class 2)", "k@0.99"], cells)
    return out


def _checks_md(df: pd.DataFrame) -> list[str]:
    """The checks on the cell N=200, σ₀=1e-5: input scale and length."""
    out: list[str] = []
    checks = df[(df.sigma0 == 1e-5) & (df.N == 200) & (df.d == DEFAULT["d"]) & ~df.main]
    if len(checks):
        out += ["", "## Checks on the cell N=200, σ₀=1e-5 (inputs and length)", ""]
        ref = df[(df.sigma0 == 1e-5) & (df.N == 200) & df.main]
        cells = []
        for (norm, ep), cell in pd.concat([ref, checks]).groupby(["normalize", "epochs"], sort=True):
            line = cell.iloc[0]
            ks = [_pm(c.k_mean, c.k_std0, n=c.n) for _, c in cell.sort_values("tau").iterrows()]
            cells.append([norm, ep, int(line.n), f"{line.acc_train:.1f}", f"{line.acc_test:.1f}", _pm(line.dead, None),
                          _pm(line.drop_step, None, 0), *ks])
        out += tables.lines(["normalize", "epochs", "n", "train acc", "test acc", "dead neurons", "loss drop (10%)",
                             *(f"k@{t:.2f}" for t in TAUS)], cells)
    return out


def write_table1(runs_dir: Path, out: Path, command: str = "", root: Optional[str] = None,
                 epochs: Optional[int] = None, rule: Rule = Rule()) -> pd.DataFrame:
    every, bad = scan(runs_dir, traced=True)
    races = [r for r in every if not r.trace]
    if not races:
        raise SystemExit(f"no race runs (+experiment=race) below {runs_dir}")
    df = table1(races, root, epochs, rule)
    traced = traced_drops(every, races, root)
    plain_runs, _ = report.scan(runs_dir)
    paths = {str(r.path) for r in every}
    text = render_table1(df, [r for r in plain_runs if r.path in paths], bad, command, stable_cells(races, root),
                         traced)
    report.write_outputs(out, "table1", df, {"md": text})
    if len(traced):
        traced.to_csv(Path(out) / "loss_drop.csv", index=False, float_format="%.6g")
    return df
