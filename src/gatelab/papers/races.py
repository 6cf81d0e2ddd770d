"""Paper 004, "It's Not a Lottery, It's a Race": Table 1 (Appendix G) and Figures 1, 3, 4, 5.

``python -m gatelab.papers.races table1 --runs outputs/races-quick --out outputs/reports/races-quick``
``python -m gatelab.papers.races figures --runs outputs/races-quick --out outputs/reports/races-quick``

Reads the runs of ``+experiment=race`` (one hidden layer of d ReLU neurons on CIFAR-10 airplane+cat
vs automobile+bird, SGD 1e-3 momentum 0.9, batch 4) and their checkpoints; trains nothing.

* Table 1: per (σ₀, N) and τ ∈ {0.70, 0.95, 0.99}, the number k of clusters of neurons whose total
  weight vectors [w1, b1, w2] have cosine ≥ τ (single linkage), and the relative accuracy change
  Δacc = 100·(acc_merged − acc)/acc when every cluster is merged into one neuron
  (:func:`gatelab.neurons.merge`), on the training and the test set. Mean ± std over seeds, with
  ddof 0 (what the paper's table looks like: 3 values, np.std) and ddof 1.
* Checks: pm1 against unit inputs, and the number of epochs, on the cell N=200, σ₀=1e-5.
* Fig 1: the loss (drop step marked), the cosine matrix sorted by cluster (τ=0.99), a_α against
  cos δ̄_α early in training for the largest cluster, IMP-pruned weights per neuron at 50%.
* Fig 3a: k(τ=0.95) against N for several d (σ₀=1e-5); Fig 3b: k at init, just before the loss
  drop and at the end, both σ₀.
* Fig 4: a_α against cos δ̄_α at t=0 and early t; Spearman ρ(cos δ̄_α(early), log a_α(end)) and the
  slope of log(a_α(t)/a_α(0)) against cos δ̄_α (Thm 3.11: linear, exponential growth).
* Fig 5: IMP-pruned weights per neuron against early cos δ̄_α, at 20/50/70%, with Spearman ρ.
"""
from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import torch
from omegaconf import OmegaConf

from .. import checkpoints, data as data_mod, neurons, plotting, pruning, report
from ..plotting import plt
from ..results import RESULTS

TAUS = (0.70, 0.95, 0.99)
SPARSITIES = (0.2, 0.5, 0.7)
DEFAULT = {"d": 300, "normalize": "pm1"}  # the paper's network; the input scale we chose (README)

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

    @property
    def cell(self) -> tuple:
        return (self.std, self.n)


def scan(runs_dir: Path) -> tuple[list[RaceRun], list[str]]:
    """The race runs below ``runs_dir`` (one hidden layer, Gaussian init); others are ignored."""
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
                            math.ceil(n / int(c["optimizer"]["batch_size"])), c))
    return runs, bad


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
    names = (run.path / checkpoints.CKPT_DIR).glob("step_*.pt")
    return sorted(int(re.fullmatch(r"step_(\d+)\.pt", p.name).group(1)) for p in names)


def loss_curve(run: RaceRun, root: Optional[str] = None) -> pd.DataFrame:
    """Full training-set loss after t steps (the step checkpoints), then the per-epoch running-mean
    training loss of results.json (``source`` says which)."""
    (x, y), _ = run_data(run, root)
    rows = [{"step": t, "loss": net_at(run, f"step_{t}.pt").loss(x, y), "source": "checkpoint"}
            for t in step_checkpoints(run)]
    last = max((r["step"] for r in rows), default=-1)
    hist = json.loads((run.path / RESULTS).read_text())["history"]
    rows += [{"step": h["epoch"] * run.per_epoch, "loss": h["train_loss"], "source": "epoch (running mean)"}
             for h in hist if h["epoch"] * run.per_epoch > last and h["train_loss"] is not None]
    return pd.DataFrame(rows)


DROP_FRACTION = 0.1


def drop_step(curve: pd.DataFrame, fraction: float = DROP_FRACTION) -> Optional[int]:
    """The loss drop of Fig 1a: the first step at which the training loss has come ``fraction`` of
    the way down from its plateau (its value at t=0, ln 2 from a tiny init) to its final value,
    i.e. has left the plateau. None if the curve never gets there."""
    if len(curve) < 2:
        return None
    start, end = curve.loss.iloc[0], curve.loss.iloc[-1]
    below = curve[curve.loss <= start - fraction * (start - end)]
    return int(below.step.iloc[0]) if len(below) else None


@dataclass(frozen=True)
class Rule:
    """How neurons are clustered: the linkage and the parts of the total weight vector."""
    linkage: str = "single"
    parts: tuple = ("w1", "b1", "w2")


def analyse(run: RaceRun, root: Optional[str] = None, rule: Rule = Rule()) -> dict:
    """k and Δacc (train, test) at each τ for the final network; dead neurons (never active on the
    training set); the loss-drop step."""
    (x, y), (xt, yt) = run_data(run, root)
    net = net_at(run, "last.pt")
    out = {"path": str(run.path), "seed": run.seed, "acc": net.accuracy(x, y), "acc_test": net.accuracy(xt, yt),
           "dead": int(((net.hidden_pre(x) > 0).sum(0) == 0).sum())}
    for tau in TAUS:
        m = neurons.merge_effect(net, x, y, tau, rule.linkage, rule.parts, x_test=xt, y_test=yt)
        out.update({f"k@{tau}": m["k"], f"dacc@{tau}": m["delta_acc"], f"dacc_test@{tau}": m["delta_acc_test"]})
    curve = loss_curve(run, root)
    out["drop_step"], out["half_step"] = drop_step(curve), drop_step(curve, 0.5)
    return out


# ---- Table 1 ----

def _stat(values, ddof):
    return report.mean_std([v for v in values if v is not None and not math.isnan(v)], ddof)


def cell_lines(runs: list[RaceRun], root: Optional[str] = None, rule: Rule = Rule()) -> list[dict]:
    """One line per (σ₀, N, normalize, epochs, d) group of completed dense runs and τ."""
    groups: dict = {}
    for r in runs:
        if r.imp is None:
            groups.setdefault((r.std, r.n, r.normalize, r.epochs, r.d), []).append(r)
    lines = []
    for key, cell in sorted(groups.items()):
        done = {r.seed: r for r in cell if r.status == "completed"}
        stats = [analyse(r, root, rule) for _, r in sorted(done.items())]
        excluded = ";".join(sorted(f"{r.status}:seed{r.seed}" for r in cell if r.status != "completed"))
        for tau in TAUS:
            line = {"linkage": rule.linkage, "parts": "+".join(rule.parts), "sigma0": key[0], "N": key[1], "normalize": key[2], "epochs": key[3], "d": key[4],
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
    """{N: (stable cells with sign +1, with sign -1)} of each main training set with N <= 800."""
    out = {}
    for r in sorted(races, key=lambda r: r.n):
        if r.n in out or r.n > STABLE_MAX_N or r.normalize != DEFAULT["normalize"] or r.imp is not None:
            continue
        (x, y), _ = run_data(r, root)
        out[r.n] = tuple(neurons.stable_cell_count(x, y, generator=torch.Generator().manual_seed(0), sign=s)
                         for s in (1, -1))
    return out


def render_table1(df: pd.DataFrame, runs: list[report.Run], bad: list[str], command: str,
                  stable: Optional[dict] = None) -> str:
    main = df[df.main]
    rule = f"{df.linkage.iloc[0]} linkage, total weight vector {df.parts.iloc[0]}"
    out = ["# Table 1 (paper 004, Appendix G): merging clusters of aligned neurons", "",
           f"k: clusters of neurons with cosine ≥ τ between total weight vectors ({rule}); "
           "Δacc = 100·(acc_merged − acc)/acc (%), each cluster merged into one neuron. Ours: mean ± std over n "
           "seeds, std with ddof=0 (np.std, what the paper's table matches: its means are multiples of 1/3 and "
           "its stds the population std of 3 values) — the comparison uses these; ddof=1 in the CSV. "
           "Δacc on the training set, (test in brackets): the paper does not say which; its τ=0.70 values match our "
           "training-set ones. Paper: N=4000 single runs.", "",
           "| σ₀ | N | n | " + " | ".join(f"τ={t:.2f}: k ours / paper | Δacc ours (test) / paper" for t in TAUS) + " |",
           "|---|---|---|" + "---|---|" * len(TAUS)]
    for (std, n), cell in main.groupby(["sigma0", "N"], sort=True):
        vals = []
        for _, line in cell.sort_values("tau").iterrows():
            vals.append(f"{_pm(line.k_mean, line.k_std0, n=line.n)} / {_pm(line.paper_k, line.paper_k_std)}")
            vals.append(f"{_pm(line.dacc_mean, line.dacc_std0, n=line.n)} "
                        f"({_pm(line.dacc_test_mean, line.dacc_test_std0, n=line.n)}) / "
                        f"{_pm(line.paper_dacc, line.paper_dacc_std)}")
        out.append(f"| {std:g} | {n} | {int(cell.n.iloc[0])} | " + " | ".join(vals) + " |")
    out += ["", "The same with the sample std (ddof=1): k, Δacc (training set).", "",
            "| σ₀ | N | n | " + " | ".join(f"τ={t:.2f}: k | Δacc" for t in TAUS) + " |",
            "|---|---|---|" + "---|---|" * len(TAUS)]
    for (std, n), cell in main.groupby(["sigma0", "N"], sort=True):
        vals = [f"{_pm(c.k_mean, c.k_std1, n=c.n)} | {_pm(c.dacc_mean, c.dacc_std1, n=c.n)}"
                for _, c in cell.sort_values("tau").iterrows()]
        out.append(f"| {std:g} | {n} | {int(cell.n.iloc[0])} | " + " | ".join(vals) + " |")
    out += ["", "Accuracy of the unmerged networks (%, mean over seeds) and the loss drop (mean step at which the "
            f"training loss has come {DROP_FRACTION:.0%} and 50% of the way down from its plateau, on the "
            "step-checkpoint grid, then per epoch; paper: \"drops around t=300\"):", "",
            "| σ₀ | N | epochs | steps/epoch | train acc | test acc | dead neurons | loss drop (10%) | half-way (50%) |",
            "|---|---|---|---|---|---|---|---|---|"]
    for (std, n), cell in main.groupby(["sigma0", "N"], sort=True):
        line = cell.iloc[0]
        out.append(f"| {std:g} | {n} | {line.epochs} | {math.ceil(n / 4)} | {_pm(line.acc_train, None)} | "
                   f"{_pm(line.acc_test, None)} | {_pm(line.dead, None)} | {_pm(line.drop_step, None, 0)} | "
                   f"{_pm(line.half_step, None, 0)} |")
    if stable:
        out += ["", "Stable cells of the training set (Appendix D, Algorithm 1, 1000 probes; both alignments of the "
                "outgoing weights) beside the clusters k at τ=0.99 (σ₀=1e-5):", "",
                "| N | stable cells (class 1 / class 2) | k@0.99 |", "|---|---|---|"]
        for n, (a, b) in sorted(stable.items()):
            k = main[(main.N == n) & (main.sigma0 == 1e-5) & (main.tau == 0.99)].k_mean
            out.append(f"| {n} | {a} / {b} | {_pm(k.iloc[0], None) if len(k) else '—'} |")
    checks = df[(df.sigma0 == 1e-5) & (df.N == 200) & (df.d == DEFAULT["d"]) & ~df.main]
    if len(checks):
        out += ["", "## Checks on the cell N=200, σ₀=1e-5 (inputs and length)", "",
                "| normalize | epochs | n | train acc | test acc | dead neurons | loss drop (10%) | "
                + " | ".join(f"k@{t:.2f}" for t in TAUS) + " |", "|---|---|---|---|---|---|---|" + "---|" * len(TAUS)]
        ref = df[(df.sigma0 == 1e-5) & (df.N == 200) & df.main]
        for (norm, ep), cell in pd.concat([ref, checks]).groupby(["normalize", "epochs"], sort=True):
            line = cell.iloc[0]
            ks = [_pm(c.k_mean, c.k_std0, n=c.n) for _, c in cell.sort_values("tau").iterrows()]
            out.append(f"| {norm} | {ep} | {int(line.n)} | {line.acc_train:.1f} | {line.acc_test:.1f} | "
                       f"{_pm(line.dead, None)} | {_pm(line.drop_step, None, 0)} | " + " | ".join(ks) + " |")
    out += ["", "## Provenance", *report.provenance(runs, command, [
        f"d={DEFAULT['d']}, normalize={DEFAULT['normalize']}, epochs {report.joined(main.epochs)}, "
        f"seeds per cell {report.joined(main.n)}"])]
    excluded = [(f"σ₀={line.sigma0:g} N={line.N}", line.excluded) for _, line in df.drop_duplicates(
        ["sigma0", "N", "normalize", "epochs", "d"]).iterrows() if line.excluded]
    out += report.not_counted(excluded, bad)
    return "\n".join(out) + "\n"


def write_table1(runs_dir: Path, out: Path, command: str = "", root: Optional[str] = None,
                 epochs: Optional[int] = None, rule: Rule = Rule()) -> pd.DataFrame:
    races, bad = scan(runs_dir)
    if not races:
        raise SystemExit(f"no race runs (+experiment=race) below {runs_dir}")
    df = table1(races, root, epochs, rule)
    plain_runs, _ = report.scan(runs_dir)
    paths = {str(r.path) for r in races}
    text = render_table1(df, [r for r in plain_runs if r.path in paths], bad, command, stable_cells(races, root))
    report.write_outputs(out, "table1", df, {"md": text})
    return df


# ---- Figures ----

def early_step(run: RaceRun, curve: pd.DataFrame, early: Optional[int]) -> int:
    """The "early" time of Figs 1c, 4, 5: ``early`` if given, else the last step checkpoint at or
    before a quarter of the loss-drop step (the silent-alignment phase)."""
    steps = step_checkpoints(run)
    if not steps:
        raise SystemExit(f"{run.path}: no step checkpoints (checkpoint_steps); the figures need them")
    if early is not None:
        return min(steps, key=lambda t: abs(t - early))
    drop = drop_step(curve) or steps[-1]
    return max([t for t in steps if t <= drop / 4] or [steps[0]])


def neuron_table(run: RaceRun, runs: list[RaceRun], root: Optional[str], early: Optional[int]) -> tuple[pd.DataFrame, dict]:
    """Per neuron: a and cos δ̄ at t=0, at the early step and at the end; its τ=0.99 cluster; and
    the weights IMP pruned from it at each sparsity (round 3 masks of the same cell and seed)."""
    (x, y), _ = run_data(run, root)
    curve = loss_curve(run, root)
    t_early = early_step(run, curve, early)
    df = pd.DataFrame({"neuron": range(run.d)})
    for name, ckpt in (("0", "step_0.pt"), ("early", f"step_{t_early}.pt"), ("end", "last.pt")):
        al = neurons.alignment(net_at(run, ckpt), x, y)
        df[f"a_{name}"], df[f"cos_{name}"] = al["a"].numpy(), al["cos_delta"].numpy()
    final = net_at(run, "last.pt")
    df["cluster99"] = neurons.clusters(neurons.total_weights(final), 0.99).numpy()
    for sp in SPARSITIES:
        mask = _imp_mask(run, sp, runs)
        df[f"pruned@{sp:g}"] = neurons.pruned_per_neuron(mask).numpy() if mask is not None else np.nan
    return df, {"curve": curve, "early": t_early, "drop": drop_step(curve)}


def _imp_mask(run: RaceRun, sparsity: float, runs: list[RaceRun]) -> Optional[dict]:
    """The keep-mask of the completed IMP round 3 at ``sparsity`` of ``run``'s cell and seed, if any."""
    for r in runs:
        if r.imp == (sparsity, 3) and r.status == "completed" and (r.std, r.n, r.d, r.normalize, r.epochs, r.seed) == \
                (run.std, run.n, run.d, run.normalize, run.epochs, run.seed):
            return checkpoints.load(r.path / pruning.MASK_FILE)["mask"]
    return None


def _pick(runs, std, n, seed=None) -> Optional[RaceRun]:
    cands = [r for r in runs if r.imp is None and r.status == "completed" and r.std == std and r.n == n
             and r.d == DEFAULT["d"] and r.normalize == DEFAULT["normalize"] and (seed is None or r.seed == seed)]
    return min(cands, key=lambda r: (r.seed, -r.epochs), default=None)


def figure1(runs, root, early, out: Path) -> dict:
    run = _pick(runs, 1e-5, 200)
    if run is None:
        return {}
    df, info = neuron_table(run, runs, root, early)
    largest = df[df.cluster99 == 0]
    fig, ax = plt.subplots(1, 4, figsize=(17, 4))
    c = info["curve"]
    ax[0].plot(c.step, c.loss, ".-", ms=3)
    if info["drop"]:
        ax[0].axvline(info["drop"], color="r", ls="--", label=f"drop ≈ step {info['drop']}")
    ax[0].axvline(300, color="gray", ls=":", label="paper: t≈300")
    ax[0].set(xscale="symlog", xlabel="step t", ylabel="training loss", title="a) loss", xlim=(0, None))
    ax[0].legend(fontsize=7)
    order = np.argsort(df.cluster99.to_numpy(), kind="stable")
    cos = neurons.cosine_matrix(neurons.total_weights(net_at(run, "last.pt"))).numpy()[np.ix_(order, order)]
    im = ax[1].imshow(cos, vmin=-1, vmax=1, cmap="RdBu_r")
    fig.colorbar(im, ax=ax[1], fraction=0.046)
    ax[1].set(title=f"b) cosine, sorted by cluster (τ=0.99, k={df.cluster99.max() + 1})", xlabel="neuron", ylabel="neuron")
    sc = ax[2].scatter(largest.cos_early, largest.a_early, c=np.log10(largest.a_end), s=10)
    fig.colorbar(sc, ax=ax[2], fraction=0.046, label="log10 a(end)")
    ax[2].set(yscale="log", xlabel=f"cos δ̄ (step {info['early']})", ylabel=f"a (step {info['early']})",
              title=f"c) largest cluster ({len(largest)} neurons)")
    if largest["pruned@0.5"].notna().any():
        ax[3].scatter(largest.cos_early, largest["pruned@0.5"], c=np.log10(largest.a_end), s=10)
    ax[3].set(xlabel=f"cos δ̄ (step {info['early']})", ylabel="weights pruned (IMP 50%, 3 rounds)",
              title="d) pruned per neuron, largest cluster")
    df["run"], df["early_step"], df["drop_step"] = str(run.path), info["early"], info["drop"]
    plotting.save(fig, df, out, "figure1")
    plotting.save(*_curve_fig(c), out, "figure1a_loss")
    return {"run": str(run.path), "drop_step": info["drop"], "early_step": info["early"], "largest_cluster": len(largest)}


def _curve_fig(c: pd.DataFrame):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot(c.step, c.loss, ".-", ms=3)
    ax.set(xscale="symlog", xlabel="step", ylabel="training loss", xlim=(0, None))
    return fig, c


def figure3(runs, root, out: Path) -> pd.DataFrame:
    """3a: k(τ=0.95) at the end against N per d (σ₀=1e-5); 3b: k(0.95) at t=0, before the drop, end."""
    lines = []
    for r in runs:
        if r.imp is None and r.status == "completed" and r.normalize == DEFAULT["normalize"]:
            lines.append({"sigma0": r.std, "N": r.n, "d": r.d, "seed": r.seed, "epochs": r.epochs,
                          "k_end": int(neurons.clusters(neurons.total_weights(net_at(r, "last.pt")), 0.95).max()) + 1})
    a = pd.DataFrame(lines)
    if not len(a):
        return a
    b_lines = []
    for (std, n), _ in a[a.d == DEFAULT["d"]].groupby(["sigma0", "N"]):
        for r in [r for r in runs if r.imp is None and r.status == "completed" and r.cell == (std, n)
                  and r.d == DEFAULT["d"] and r.normalize == DEFAULT["normalize"]]:
            steps = step_checkpoints(r)
            drop = drop_step(loss_curve(r, root))
            before = max([t for t in steps if drop is None or t < drop], default=None)
            for when, ckpt in (("init", "step_0.pt"), ("before drop", f"step_{before}.pt"), ("end", "last.pt")):
                if (r.path / checkpoints.CKPT_DIR / ckpt).is_file():
                    k = int(neurons.clusters(neurons.total_weights(net_at(r, ckpt)), 0.95).max()) + 1
                    b_lines.append({"sigma0": std, "N": n, "seed": r.seed, "when": when, "k": k, "ckpt": ckpt})
    b = pd.DataFrame(b_lines)
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    sa = a[a.sigma0 == 1e-5].groupby(["d", "N"]).k_end.agg(["mean", "std", "count"]).reset_index()
    for d, g in sa.groupby("d"):
        ax[0].errorbar(g.N, g["mean"], g["std"].fillna(0), marker="o", capsize=2, label=f"d={d}")
    ax[0].set(xscale="log", yscale="log", xlabel="N (training examples)", ylabel="clusters k (τ=0.95)",
              title="3a) effective capacity, σ₀=1e-5")
    if len(sa):
        ax[0].legend(fontsize=7)
    if len(b):
        sb = b.groupby(["sigma0", "N", "when"], sort=False).k.mean().reset_index()
        labels = [f"σ₀={s:g} N={n}" for s, n in sb[["sigma0", "N"]].drop_duplicates().itertuples(index=False)]
        for j, when in enumerate(("init", "before drop", "end")):
            vals = sb[sb.when == when].k.to_numpy()
            ax[1].bar(np.arange(len(vals)) + 0.27 * (j - 1), vals, width=0.27, label=when)
        ax[1].set_xticks(range(len(labels)), labels, rotation=20, fontsize=7)
        ax[1].set(ylabel="clusters k (τ=0.95)", title="3b) clusters over training")
        ax[1].legend(fontsize=7)
    a["panel"], b["panel"] = "3a", "3b"
    both = pd.concat([a, b], ignore_index=True)
    plotting.save(fig, both, out, "figure3")
    return both


def _scatter(ax, x, y, df, title, xlabel, ylabel, logy=False):
    sc = ax.scatter(x, y, c=np.log10(df.a_end), s=6)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title, yscale="log" if logy else "linear")
    return sc


def figures4_5(runs, root, early, out: Path) -> pd.DataFrame:
    """Fig 4 for every (σ₀, N) cell of the paper's grid found, Fig 5 for those with IMP runs (first
    seed); the Spearman ρ and growth slopes of each cell in ``figures4_5_stats.csv``."""
    cells = sorted({r.cell for r in runs if r.imp is None and r.status == "completed" and r.d == DEFAULT["d"]
                    and r.normalize == DEFAULT["normalize"]} & set(PAPER_TABLE1))
    stats, frames = [], []
    for std, n in cells:
        run = _pick(runs, std, n)
        df, info = neuron_table(run, runs, root, early)
        df["sigma0"], df["N"], df["seed"], df["early_step"] = std, n, run.seed, info["early"]
        frames.append(df)
        grow = np.log(df.a_early / df.a_0)  # Thm 3.11: log a(t)/a(0) linear in cos δ̄ early on
        slope, _ = np.polyfit(df.cos_early, grow, 1)
        log_end = torch.tensor(np.log(df.a_end.values))
        line = {"sigma0": std, "N": n, "seed": run.seed, "early_step": info["early"], "drop_step": info["drop"],
                "rho_cos_early_log_a_end": neurons.spearman(torch.tensor(df.cos_early.values), log_end),
                "rho_cos_0_log_a_end": neurons.spearman(torch.tensor(df.cos_0.values), log_end),
                "slope_log_growth_vs_cos": slope, "pearson_log_growth_vs_cos": float(np.corrcoef(df.cos_early, grow)[0, 1])}
        for sp in SPARSITIES:
            col = f"pruned@{sp:g}"
            line[f"rho_pruned@{sp:g}"] = neurons.spearman(torch.tensor(df.cos_early.values), torch.tensor(
                df[col].values, dtype=torch.float64)) if df[col].notna().all() else math.nan
        stats.append(line)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    cols = max(1, len(frames))
    fig4, ax4 = plt.subplots(2, cols, figsize=(4 * cols, 7), squeeze=False)
    for j, df in enumerate(frames):
        head = f"σ₀={df.sigma0.iloc[0]:g} N={df.N.iloc[0]}"
        for i, (when, t) in enumerate((("0", 0), ("early", df.early_step.iloc[0]))):
            sc = _scatter(ax4[i, j], df[f"cos_{when}"], df[f"a_{when}"], df, f"{head}: t={t}", "cos δ̄", "a = ‖w1‖‖w2‖", True)
        fig4.colorbar(sc, ax=ax4[:, j], fraction=0.03, label="log10 a(end)")
    plotting.save(fig4, table, out, "figure4")
    pruned = [df for df in frames if df["pruned@0.5"].notna().all()]
    if pruned:
        fig5, ax5 = plt.subplots(len(SPARSITIES), len(pruned), figsize=(4 * len(pruned), 10), squeeze=False)
        for j, df in enumerate(pruned):
            for i, sp in enumerate(SPARSITIES):
                _scatter(ax5[i, j], df.cos_early, df[f"pruned@{sp:g}"], df,
                         f"σ₀={df.sigma0.iloc[0]:g} N={df.N.iloc[0]}: IMP {int(100 * sp)}%",
                         f"cos δ̄ (step {df.early_step.iloc[0]})", "weights pruned")
        plotting.save(fig5, pd.concat(pruned, ignore_index=True), out, "figure5")
    s = pd.DataFrame(stats)
    s.to_csv(Path(out) / "figures4_5_stats.csv", index=False, float_format="%.4f")
    return s


def main_runs(runs: list[RaceRun]) -> list[RaceRun]:
    """The runs the figures show: the default input scale and the most common epoch count (the
    checks' other inputs and lengths are left to Table 1's check section)."""
    dense = [r for r in runs if r.imp is None and r.status == "completed" and r.normalize == DEFAULT["normalize"]]
    if not dense:
        return []
    epochs = int(pd.Series([r.epochs for r in dense]).mode().iloc[0])
    return [r for r in runs if r.normalize == DEFAULT["normalize"] and r.epochs == epochs]


def figures(runs_dir: Path, out: Path, root: Optional[str] = None, early: Optional[int] = None) -> dict:
    runs = main_runs(scan(runs_dir)[0])
    if not runs:
        raise SystemExit(f"no race runs (+experiment=race) below {runs_dir}")
    return {"figure1": figure1(runs, root, early, out), "figure3": figure3(runs, root, out),
            "figures4_5": figures4_5(runs, root, early, out)}


def main(argv=None) -> None:
    ap, sub, t1 = report.paper_cli("python -m gatelab.papers.races", __doc__, "table1",
                                   "Table 1: table1.{md,csv} from the runs below --runs")
    t1.add_argument("--data", default=None, help="data root (default: each run's data.root)")
    t1.add_argument("--epochs", type=int, default=None, help="the main table's epoch count (default: most common)")
    t1.add_argument("--linkage", choices=("single", "complete"), default="single",
                    help="cluster rule: connected components of cos >= tau (single) or complete linkage")
    t1.add_argument("--parts", default="w1,b1,w2", help="the total weight vector's parts (e.g. w1)")
    f = sub.add_parser("figures", help="Figures 1, 3, 4, 5 from the runs below --runs (PNG, PDF, CSV)")
    f.add_argument("--runs", type=Path, required=True)
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--data", default=None)
    f.add_argument("--early", type=int, default=None, help="the early step (default: last checkpoint ≤ drop/4)")
    args = ap.parse_args(argv)
    if args.what == "table1":
        df = write_table1(args.runs, args.out, args.command, args.data, args.epochs,
                          Rule(args.linkage, tuple(args.parts.split(","))))
        print((args.out / "table1.md").read_text())
        print(f"{len(df)} lines -> {args.out}/table1.*", file=sys.stderr)
        return
    started = plotting.now()
    res = figures(args.runs, args.out, args.data, args.early)
    print(json.dumps(res["figure1"], indent=1))
    print(res["figures4_5"].to_string(index=False))
    plotting.write_provenance(args.out, "gatelab.papers.races", argv, {"runs": str(args.runs), "early": args.early},
                              started)


if __name__ == "__main__":
    main()
