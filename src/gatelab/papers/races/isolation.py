"""Paper 004 Table 1, σ₀=1e-5: which of our choices moves the cluster counts k at τ=0.95 and 0.99.

Our k sit below the paper's there (N=200: 11 against 15 and 30 against 93; N=800: 85 against 156).
Four choices the paper leaves open are varied one at a time from the default (single linkage, the
total weight vector [w1, b1, w2], pm1 inputs, 100 epochs), each on the same seeds:

* the clustering rule: complete linkage (every pair of a cluster at cos ≥ τ);
* the weight vector: the incoming weights w1 alone, or [w1, b1];
* the input scale: unit (x/255) or standardized inputs instead of pm1 (trained runs);
* the epochs: 50 or 300 instead of 100 (trained runs);
* the step size: lr 4e-3 instead of 1e-3, which is the batch's loss summed instead of averaged (trained runs;
  the paper states neither; Fig 1a's drop study found it moves the drop 3x).

The first two re-cluster the default runs' final networks; the last two are runs of their own. The
other input scales are also clustered under each other rule, to see whether two choices add up.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import pandas as pd

from gatelab.papers import report, tables
from gatelab.papers.races.table1 import DEFAULT, PAPER_TABLE1, RaceRun, Rule, cell_lines, main_lr, scan

SIGMA0 = 1e-5
TAUS = (0.95, 0.99)
DEFAULT_EPOCHS = 100
RULES = {  # (choice, variant) -> the clustering rule
    ("default", "single linkage, w1+b1+w2, pm1, 100 epochs"): Rule(),
    ("clustering rule", "complete linkage"): Rule("complete"),
    ("weight vector", "w1 only"): Rule(parts=("w1",)),
    ("weight vector", "w1+b1 (incoming)"): Rule(parts=("w1", "b1")),
}


def _trained_variant(normalize: str, epochs: int, lr: float, base_lr: float) -> Optional[tuple[str, str]]:
    if lr != base_lr:
        if (normalize, epochs) != (DEFAULT["normalize"], DEFAULT_EPOCHS):
            return "step size and more", f"lr {lr:g}, {normalize}, {epochs} epochs"
        return "step size", f"lr {lr:g}" + (" (the batch's loss summed)" if math.isclose(lr, 4 * base_lr) else "")
    if (normalize, epochs) == (DEFAULT["normalize"], DEFAULT_EPOCHS):
        return None
    if epochs == DEFAULT_EPOCHS:
        return "input scale", f"{normalize} inputs"
    if normalize == DEFAULT["normalize"]:
        return "epochs", f"{epochs} epochs"
    return "input scale and epochs", f"{normalize}, {epochs} epochs"


def _dense(runs: list[RaceRun]) -> list[RaceRun]:
    """The runs the isolation compares: σ₀=1e-5, d=300, dense, at Table 1's N only (Fig 3a's other N
    have no paper k)."""
    return [r for r in runs if r.std == SIGMA0 and r.d == DEFAULT["d"] and r.imp is None and r.cell in PAPER_TABLE1]


def isolation(runs: list[RaceRun], root: Optional[str] = None) -> pd.DataFrame:
    """One line per (choice, variant, N, τ) on the σ₀=1e-5, d=300 dense runs: k (mean, std ddof 0),
    its change from the default on the same N, the training accuracy, and the paper's k."""
    dense = _dense(runs)
    lines = []
    lr = main_lr(dense)
    default = [r for r in dense if (r.normalize, r.epochs, r.lr) == (DEFAULT["normalize"], DEFAULT_EPOCHS, lr)]
    for (choice, variant), rule in RULES.items():
        for line in cell_lines(default, root, rule):
            lines.append(dict(line, choice=choice, variant=variant))
    trained = [r for r in dense if r not in default]
    for line in cell_lines(trained, root):
        choice, variant = _trained_variant(line["normalize"], line["epochs"], line["lr"], lr)
        lines.append(dict(line, choice=choice, variant=variant))
    # the input scale together with each other clustering rule: do two choices add up?
    rescaled = [r for r in trained if r.epochs == DEFAULT_EPOCHS and r.lr == lr]
    for (choice, variant), rule in list(RULES.items())[1:]:
        for line in cell_lines(rescaled, root, rule):
            lines.append(dict(line, choice=f"input scale + {choice}", variant=f"{line['normalize']} inputs, {variant}"))
    df = pd.DataFrame(lines)
    if not len(df):
        return df
    df = df[df.n > 0]  # a group whose runs have not completed is missing, not a result
    df = df[df.tau.isin(TAUS)].reset_index(drop=True)
    base = df[df.choice == "default"].set_index(["N", "tau"]).k_mean
    df["delta_k"] = [k - base.get((n, t), math.nan) for n, t, k in zip(df.N, df.tau, df.k_mean)]
    df["paper_k"] = [PAPER_TABLE1.get((SIGMA0, n), {}).get(t, (math.nan,))[0] for n, t in zip(df.N, df.tau)]
    cols = ["choice", "variant", "N", "tau", "n", "seeds", "k_mean", "k_std0", "k_std1", "delta_k", "paper_k",
            "acc_train", "acc_test", "dead", "drop_step", "linkage", "parts", "normalize", "epochs", "lr"]
    return df[cols]


def _k(m, s, n) -> str:
    if m is None or math.isnan(m):
        return "—"
    return f"{m:.1f}" if n < 2 or math.isnan(s) else f"{m:.1f} ± {s:.1f}"


def render(df: pd.DataFrame, runs: list[report.Run], command: str) -> str:
    out = ["# Table 1, σ₀=1e-5: what moves the cluster counts k (paper 004, Appendix G)", "",
           "One choice changed at a time from the default (single linkage on the total weight vector "
           "[w1, b1, w2], inputs scaled to [−1, 1] (pm1), 100 epochs). k: mean ± std (ddof 0) over the seeds n; "
           "Δk: against the default on the same N and τ; train acc of the unmerged nets (%).", ""]
    ns = sorted(df.N.unique())
    head = ["choice", "variant", *(f"N={n} τ={t:.2f}: k (Δk)" for n in ns for t in TAUS),
            *(f"N={n}: n, train acc" for n in ns)]
    paper = [f"{PAPER_TABLE1.get((SIGMA0, n), {}).get(t, (math.nan,))[0]:g}" for n in ns for t in TAUS]
    rows = [["**paper**", "(Table 1)", *paper, *([""] * len(ns))]]
    order = {c: i for i, c in enumerate(dict.fromkeys(c for c, _ in RULES))}
    keys = sorted(df[["choice", "variant"]].drop_duplicates().itertuples(index=False),
                  key=lambda cv: (order.get(cv[0], len(order)), cv[0], cv[1]))
    for choice, variant in keys:
        g = df[(df.choice == choice) & (df.variant == variant)].set_index(["N", "tau"])
        cells = []
        for n in ns:
            for t in TAUS:
                if (n, t) not in g.index:
                    cells.append("—")
                    continue
                line = g.loc[(n, t)]
                delta = "" if choice == "default" else f" ({line.delta_k:+.1f})"
                cells.append(_k(line.k_mean, line.k_std0, line.n) + delta)
        accs = [f"{int(g.loc[(n, TAUS[0])].n)}, {g.loc[(n, TAUS[0])].acc_train:.1f}" if (n, TAUS[0]) in g.index
                else "—" for n in ns]
        rows.append([choice, variant, *cells, *accs])
    out += tables.lines(head, rows)
    out += ["", "## Provenance", *report.provenance(runs, command, [
        f"σ₀={SIGMA0:g}, d={DEFAULT['d']}, N {report.joined(df.N)}, seeds per line {report.joined(df.n)}"])]
    return "\n".join(out) + "\n"


KEPT = "that render's provenance:\n"


def kept_lines(df: pd.DataFrame, previous: pd.DataFrame) -> pd.DataFrame:
    """The lines of a previous ``isolation.csv`` whose (choice, variant) the runs at hand do not give,
    kept only when both agree on the default (every k of its N and τ within the CSV's 4 decimals): the
    same seeds trained by the same code. A default that moved raises: the kept lines' Δk would mix runs."""
    if not len(previous):
        return previous
    have = set(zip(df.choice, df.variant))
    new = df[df.choice == "default"].set_index(["N", "tau"]).k_mean
    old = previous[previous.choice == "default"].set_index(["N", "tau"]).k_mean
    both = new.index.intersection(old.index)
    if not len(both) or (new[both] - old[both]).abs().max() > 1e-4:
        raise SystemExit("the default's k differ from the previous isolation.csv's "
                         f"({new[both].round(2).tolist()} against {old[both].round(2).tolist()}): its other lines "
                         "cannot be kept beside these runs; render from all the runs or none")
    keep = previous[[cv not in have for cv in zip(previous.choice, previous.variant)]]
    return keep.astype({c: df[c].dtype for c in df.columns if c in keep and df[c].dtype != object}, errors="ignore")


def write_isolation(runs_dir: Path, out: Path, command: str = "", root: Optional[str] = None) -> pd.DataFrame:
    """``isolation.{md,csv}`` in ``out`` from the race runs below ``runs_dir``; the lines of a previous
    ``isolation.csv`` that these runs do not give are kept (:func:`kept_lines`), and the provenance says so."""
    races, _ = scan(runs_dir)
    df = isolation(races, root)
    if not len(df):
        raise SystemExit(f"no σ₀={SIGMA0:g}, d={DEFAULT['d']} race runs below {runs_dir}")
    previous = Path(out) / "isolation.csv"
    keep = kept_lines(df, pd.read_csv(previous)) if previous.is_file() else pd.DataFrame()
    if len(keep):  # lines rendered before the step size was a column were all at the grid's
        keep = keep.assign(lr=keep.lr if "lr" in keep else main_lr(_dense(races)))
        df = pd.concat([df, keep[[c for c in df.columns if c in keep]]], ignore_index=True)
    plain_runs, _ = report.scan(runs_dir)
    paths = {str(r.path) for r in _dense(races)}
    text = render(df, [r for r in plain_runs if str(r.path) in paths], command)
    if len(keep):
        md = Path(out) / "isolation.md"
        before = md.read_text().partition("## Provenance\n")[2] if md.is_file() else ""
        # the render the kept lines came from: once kept, its provenance follows KEPT (keeping twice adds nothing)
        before = before.partition(KEPT)[2] or before
        variants = "; ".join(dict.fromkeys(f"{c}: {v}" for c, v in zip(keep.choice, keep.variant)))
        text += (f"- kept from the previous isolation.csv (runs not below {runs_dir}; its default equals this one's): "
                 f"{variants}; {KEPT}" + before)
    report.write_outputs(out, "isolation", df, {"md": text})
    return df


# Fig 1a, the loss drop (issue #39): "The loss drops around t=300" (d=300, N=200, batch 4); ours at about
# 1,200 steps. What moves it, one choice at a time from the default (σ₀=1e-5, lr 1e-3, the batch's mean
# loss): the step size 4e-3, which is the default's loss summed over the batch of 4 (SGD with momentum and
# no weight decay: the sum's gradient is 4× the mean's, so the two runs are the same run), and σ₀=1e-3,
# the paper's other initial scale; then both. Every step of the first 3000 is traced (``loss_trace``).
PAPER_DROP = 300
DROP_BASE = {"std": SIGMA0, "lr": 1e-3}


def drop_isolation(runs: list[RaceRun], root: Optional[str] = None, n: int = 200, d: int = DEFAULT["d"],
                   base: Optional[dict] = None) -> pd.DataFrame:
    """One line per (σ₀, lr) of the N=``n``, width-``d`` runs traced from step 0 (``base``: the default
    setting, :data:`DROP_BASE`): the step at which the loss has come
    10% (and 50%) of the way down (:func:`gatelab.papers.races.table1.drop_step`), mean ± std (ddof 0)
    over seeds, its ratio to the default's and to the paper's t=300."""
    from gatelab.papers.races.table1 import DROP_FRACTION, drop_step, loss_curve
    lines = []
    for r in runs:
        if not (r.trace and r.trace[0] == 0 and r.status == "completed" and r.n == n and r.d == d):
            continue
        curve = loss_curve(r, root)
        lines.append({"sigma0": r.std, "lr": float(r.config["optimizer"]["lr"]), "seed": r.seed,
                      "drop": drop_step(curve, DROP_FRACTION), "half": drop_step(curve, 0.5)})
    if not lines:
        return pd.DataFrame()
    df = pd.DataFrame(lines)
    g = df.groupby(["sigma0", "lr"])
    out = g.agg(n=("seed", "size"), seeds=("seed", lambda s: ",".join(map(str, sorted(s)))),
                drop_mean=("drop", "mean"), drop_std=("drop", lambda x: x.std(ddof=0)), half_mean=("half", "mean"),
                half_std=("half", lambda x: x.std(ddof=0))).reset_index()  # ddof 0: the races tables' convention
    base = base or DROP_BASE
    changed = lambda r: [k for k, v in (("σ₀", r.sigma0 != base["std"]), ("lr", r.lr != base["lr"])) if v]  # noqa: E731
    out["factor"] = [" + ".join(changed(r)) or "base" for r in out.itertuples()]
    ref = out[out.factor == "base"].drop_mean
    out["vs_base"] = out.drop_mean / (ref.iloc[0] if len(ref) else math.nan)
    out["paper"] = PAPER_DROP
    out["vs_paper"] = out.drop_mean / PAPER_DROP
    out["sigma0"] = out.sigma0.map(lambda v: f"{v:g}")  # the CSV's 4 decimals would write 1e-5 as 0.0000
    return out.sort_values(["factor"], key=lambda c: c.map(lambda v: (v != "base", " + " in v, v))).reset_index(drop=True)


def render_drop(df: pd.DataFrame, runs: list[report.Run], command: str) -> str:
    out = ["# Fig 1a (paper 004): what moves the loss drop", "",
           "The step at which the training loss (full training set, every step traced) has come 10% and 50% of "
           "the way down from its plateau (ln 2) to its end; mean ± std (ddof 0, as races/table1.md) over seeds. d=300, N=200, batch 4, "
           "SGD with momentum 0.9. The paper: \"The loss drops around t=300\" (Fig 1a; its σ₀ and loss reduction "
           "are not stated). lr 4e-3 is the default's loss summed over the batch of 4 instead of averaged (the "
           "same updates).", ""]
    out += tables.lines(["factor", "σ₀", "lr", "n", "drop (10%)", "half (50%)", "× base", "× paper's 300"],
                        [[r.factor, r.sigma0, f"{r.lr:g}", r.n, f"{r.drop_mean:.0f} ± {r.drop_std:.0f}",
                          f"{r.half_mean:.0f} ± {r.half_std:.0f}", f"{r.vs_base:.2f}", f"{r.vs_paper:.2f}"]
                         for r in df.itertuples()])
    out += ["", "## Provenance", *report.provenance(runs, command, [f"N=200, d={DEFAULT['d']}, first 3000 steps traced"])]
    return "\n".join(out) + "\n"


def write_drop_isolation(runs_dir: Path, out: Path, command: str = "", root: Optional[str] = None) -> pd.DataFrame:
    """``drop_isolation.{md,csv}`` in ``out`` from the traced race runs below ``runs_dir``."""
    races, _ = scan(runs_dir, traced=True)
    df = drop_isolation(races, root)
    if not len(df):
        raise SystemExit(f"no N=200 race runs traced from step 0 below {runs_dir}")
    plain_runs, _ = report.scan(runs_dir)
    report.write_outputs(out, "drop_isolation", df, {"md": render_drop(df, plain_runs, command)})
    return df
