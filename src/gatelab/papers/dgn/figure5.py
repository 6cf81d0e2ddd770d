"""Paper 002 Fig 5 (§3, "Generalisation"): ReLU against GaLU (frozen random gates) on MNIST, on its
standard training set and with random labels or random pixels (``dataset.corrupt``); d=7.

Panels 1-3: training accuracy over epochs (the running mean over each epoch), ReLU and GaLU, one
panel per training set; panel 4: test accuracy on standard MNIST. Published (no std, one run each):
"the GaLU network trains a bit faster than the ReLU network", test accuracy about 96.5% (GaLU) and
98.5% (ReLU). ``python -m gatelab.papers.dgn figure5 --runs outputs/dgn-fig5 --out outputs/reports/dgn-fig5``
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from gatelab.core.results import RESULTS, read_results
from gatelab.papers import plotting, report, tables
from gatelab.papers.plotting import plt

PAPER_FIG5_TEST = {"galu": 96.5, "relu": 98.5}  # % test accuracy on standard MNIST ("around")
CORRUPTIONS = ("none", "labels", "pixels")
PAPER_DENSE = "512,512,256,256,128,64"  # d=7, then 10 and the softmax
PAPER_EPOCHS = 100  # ours at the paper's scale (conf/experiment/dgn_fig5.yaml); the paper gives none
REACH = 90.0  # "trains faster": the first epoch whose training accuracy reaches this (%)


def curves(runs_dir: Path) -> tuple[pd.DataFrame, list, list]:
    """One line per (training set, regime, seed, epoch) of the completed d=7 MNIST runs below ``runs_dir``:
    train and test accuracy (%). Returns (lines, runs counted, runs not counted)."""
    runs, bad = report.scan(runs_dir)
    lines, used = [], []
    for r in runs:
        c = read_results(Path(r.path) / RESULTS)["config"]
        ds = c["dataset"]
        if ds.get("source") != "mnist" or r.regime not in PAPER_FIG5_TEST:
            continue
        if r.status != "completed":
            bad.append(f"{r.path}: {r.status}")
            continue
        used.append(r)
        for e, (tr, te) in enumerate(zip(r.train_curve, r.test_curve)):
            lines.append({"corrupt": ds.get("corrupt", "none"), "regime": r.regime, "seed": r.seed, "epoch": e + 1,
                          "train_acc": tr, "test_acc": te, "limit_train": r.limits[0], "epochs": r.epochs,
                          "dense": ",".join(map(str, c["arch"]["dense"])), "optimizer": f"{r.row[1]} {r.lr:g}"})
    return pd.DataFrame(lines), used, bad


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per (training set, regime), means over seeds: the training accuracy averaged over the epochs (the
    area under the curve: higher trains faster), the first epoch reaching ``REACH``%, the last epoch's
    training accuracy, and the best test accuracy (standard MNIST only)."""
    out = []
    for (cor, reg), g in df.groupby(["corrupt", "regime"]):
        per_seed = g.groupby("seed")
        reach = per_seed.apply(lambda s: s.epoch[s.train_acc >= REACH].min(), include_groups=False)
        out.append({"corrupt": cor, "regime": reg, "n": per_seed.ngroups, "epochs": int(g.epoch.max()),
                    "mean_train": per_seed.train_acc.mean().mean(),
                    "mean_train_se": per_seed.train_acc.mean().std(ddof=1) / per_seed.ngroups ** 0.5
                    if per_seed.ngroups > 1 else 0.0,
                    "final_train": per_seed.train_acc.last().mean(),
                    "epoch_reach": reach.mean(),
                    "best_test": per_seed.test_acc.max().mean() if cor == "none" else float("nan"),
                    "paper_test": PAPER_FIG5_TEST[reg] if cor == "none" else float("nan")})
    return pd.DataFrame(out)


TIE = 0.05  # points of mean training accuracy below which neither trains faster


def faster(s: pd.DataFrame, cor: str) -> str:
    """"GaLU", "ReLU" or "neither" on training set ``cor``, by the training accuracy averaged over the
    epochs: neither when the two differ by less than max(2 standard errors over seeds, 0.05 points)."""
    g = s[s.corrupt == cor].set_index("regime")
    d = g.loc["galu"].mean_train - g.loc["relu"].mean_train
    se = (g.loc["galu"].mean_train_se ** 2 + g.loc["relu"].mean_train_se ** 2) ** 0.5
    return "neither" if abs(d) < max(2 * se, TIE) else "GaLU" if d > 0 else "ReLU"


def sentences(s: pd.DataFrame) -> list[str]:
    """The paper's two claims, checked on ``summary`` (generated, so the words follow the numbers)."""
    out = []
    for cor in CORRUPTIONS:
        g = s[s.corrupt == cor].set_index("regime")
        if not {"relu", "galu"} <= set(g.index):
            continue
        r, q = g.loc["relu"], g.loc["galu"]
        who = faster(s, cor)
        out.append(f"- {cor} training set: {'neither trains faster' if who == 'neither' else who + ' trains faster'} "
                   f"(training accuracy averaged over the epochs: GaLU {q.mean_train:.2f} ± {q.mean_train_se:.2f}%, "
                   f"ReLU {r.mean_train:.2f} ± {r.mean_train_se:.2f}% (± s.e. over seeds); "
                   f"first epoch at {REACH:.0f}%: GaLU {_epoch(q.epoch_reach)}, ReLU {_epoch(r.epoch_reach)}). "
                   "The paper: GaLU a bit faster.")
    g = s[s.corrupt == "none"].set_index("regime")
    if {"relu", "galu"} <= set(g.index):
        r, q = g.loc["relu"].best_test, g.loc["galu"].best_test
        out.append(f"- Test accuracy (standard MNIST): ReLU {r:.2f}%, GaLU {q:.2f}% ({'ReLU' if r > q else 'GaLU'} "
                   f"higher by {abs(r - q):.2f}); the paper: ReLU 98.5%, GaLU 96.5% (ReLU higher by 2.0).")
    return out


def _epoch(v) -> str:
    return "not reached" if pd.isna(v) else f"{v:.0f}"


def figure5(runs_dir: Path, out: Path, command: str = "") -> pd.DataFrame:
    """figure5.{png,pdf,csv} (the curves), figure5_summary.csv and figure5.md."""
    df, used, bad = curves(runs_dir)
    if not len(df):
        raise SystemExit(f"no completed ReLU/GaLU MNIST runs below {runs_dir}")
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
    panels = [(cor, "train_acc", f"train, {'standard MNIST' if cor == 'none' else 'MNIST, random ' + cor}")
              for cor in CORRUPTIONS]
    for ax, (cor, col, title) in zip(axes, panels + [("none", "test_acc", "test, standard MNIST")]):
        for reg, g in df[df.corrupt == cor].groupby("regime"):
            m = g.groupby("epoch")[col].mean()
            ax.plot(m.index, m.values, label=reg + (f" (paper {PAPER_FIG5_TEST[reg]})" if col == "test_acc" else ""))
        ax.set(title=title, xlabel="epoch", ylabel="accuracy (%)")
        if ax.lines:
            ax.legend(fontsize=7, loc="best")
        else:
            ax.text(0.5, 0.5, "not run", ha="center", transform=ax.transAxes)
    plotting.save(fig, df, out, "figure5")
    s = summary(df)
    s.to_csv(Path(out) / "figure5_summary.csv", index=False)
    limits = sorted({str(v) for v in df.limit_train})
    scale = "every" if limits == ["None"] else "the first " + "/".join(limits)
    reduced = limits != ["None"] or df.epochs.max() < PAPER_EPOCHS or set(df.dense) != {PAPER_DENSE}
    md = ["# Paper 002, Fig 5: ReLU against GaLU on MNIST, standard, random labels, random pixels"
          + (" — REDUCED scale" if reduced else ""), "",
          f"Hidden widths {' / '.join(sorted(set(df.dense)))} (the paper: {PAPER_DENSE}), "
          f"{' / '.join(sorted(set(df.optimizer)))} (the paper gives no optimiser or epochs); {scale} training images, "
          f"{int(df.epochs.max())} epochs; random labels and pixels on the training set only (`dataset.corrupt`). "
          "Train accuracy: the running mean over each epoch.", "",
          tables.markdown(pd.DataFrame([
              {"training set": line.corrupt, "regime": line.regime, "seeds": line.n,
               "train acc, mean over epochs (%)": f"{line.mean_train:.2f}", "first epoch ≥ 90%": _epoch(line.epoch_reach),
               "last train acc (%)": f"{line.final_train:.2f}",
               "best test acc (%)": "—" if pd.isna(line.best_test) else f"{line.best_test:.2f}",
               "paper test (%)": "—" if pd.isna(line.paper_test) else f"{line.paper_test:.1f}"}
              for line in s.itertuples()]))]
    md += ["", *sentences(s), "", "## Provenance", *report.provenance(used, command, [f"{scale} training images"])]
    md += report.not_counted([], bad)
    (Path(out) / "figure5.md").write_text("\n".join(md) + "\n")
    return s
