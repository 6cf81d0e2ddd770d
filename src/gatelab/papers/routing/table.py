"""Paper 003 routing table (trained vs untrained pathways), Figs 7-10 equivalents, features and backbone commands (see :mod:`gatelab.papers.routing`)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from gatelab.core.results import git_commit
from gatelab.papers import plotting, report, tables, thresholds
from gatelab.papers.plotting import plt
from gatelab.papers.routing.toy import PAPER_ZERO_SHOT

METRICS = {"err_trained": ("test_acc", True), "err_untrained": ("test_untrained_acc", True),
           "loss_trained": ("test_loss", False), "loss_untrained": ("test_untrained_loss", False),
           "train_err_trained": ("train_trained_acc", True), "train_err_untrained": ("train_untrained_acc", True)}
PLATEAU_FRACTION = 0.1
LEARNED_BELOW = 70.0  # trained test error (%) below which a net has left its plateau: 20 points under chance
# (90%); a stuck net sits at chance, and CIFAR features reach only about 46% trained error at the reduced scale


def scan(runs_dir: Path) -> tuple[list[dict], list[str]]:
    """One dict per routing run below ``runs_dir``: its task, settings, status and last-epoch metrics."""
    rows = []
    found, bad = report.results_below(runs_dir)
    for path, res in found:
        c = res["config"]
        rt = c["dataset"].get("routing")
        if not rt:
            continue
        hist = res.get("history") or []
        last = hist[-1] if hist else {}
        row = {"path": str(path.parent), "status": res["status"], "seed": int(res["seed"]),
               "task": c["dataset"]["name"], "regime": c["regime"]["name"], "M": int(rt["M"]), "K": int(rt["K"]),
               "input": rt["input"], "gain": float(c["arch"].get("init_gain", 1.0)), "h": int(c["arch"]["dense"][0]),
               "decoder_fan": str(c["arch"].get("decoder_fan") or "per_decoder"),  # runs before the setting: the paper's
               "lr": float(c["optimizer"]["lr"]), "epochs": int(c["epochs"]),
               "limits": f"{c['dataset'].get('limit_train') or 'all'}/{c['dataset'].get('limit_test') or 'all'}",
               "plateau_exit_epoch": plateau_exit(hist), "finished_at": res.get("finished_at", ""),
               "commit": (res.get("env") or {}).get("git_commit"), "device": report.device_words(res.get("env") or {})}
        for name, (key, is_acc) in METRICS.items():
            v = last.get(key)
            row[name] = None if v is None else (100 * (1 - v) if is_acc else v)
        rows.append(row)
    return rows, bad


def plateau_exit(history: list) -> Optional[int]:
    """The first epoch whose training loss has come ``PLATEAU_FRACTION`` of the way down from the
    first epoch's to the last epoch's: the end of the initial plateau, at epoch resolution."""
    losses = [h.get("train_loss") for h in history]
    if len(losses) < 2 or any(v is None for v in losses):
        return None
    target = losses[0] - PLATEAU_FRACTION * (losses[0] - losses[-1])
    return next(i + 1 for i, v in enumerate(losses) if v <= target)


def _mean_se(values: list) -> tuple[float, float]:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return math.nan, math.nan
    m, sd = report.mean_std(vals, 1)
    return m, (sd / math.sqrt(len(vals)) if len(vals) > 1 else math.nan)


GROUP = ["task", "regime", "M", "K", "gain", "h", "decoder_fan", "lr", "epochs", "limits"]


def with_fan(df: pd.DataFrame) -> pd.DataFrame:
    """A table written before ``decoder_fan`` was a column: its runs all had the paper's per-decoder init."""
    return df if "decoder_fan" in df.columns else df.assign(decoder_fan="per_decoder")


def gap_se(cells: pd.DataFrame) -> pd.Series:
    """The s.e. of each cell's gap, √(s.e.² trained + s.e.² untrained) (the two errors taken as independent;
    a missing s.e., one seed, as 0): what the per-cell marks, the threshold rule and the gain test use."""
    return pd.Series(np.hypot(cells.err_trained_se.fillna(0).to_numpy(float),
                              cells.err_untrained_se.fillna(0).to_numpy(float)), index=cells.index)


def sweep_threshold(cells: pd.DataFrame) -> Optional[thresholds.Threshold]:
    """The threshold rule (:func:`gatelab.papers.thresholds.threshold`) on the cells of one K sweep that
    left the plateau (``learned``); None with fewer than two."""
    c = cells[cells.learned & cells.gap.notna()] if "learned" in cells else cells[cells.gap.notna()]
    if len(c) < 2:
        return None
    return thresholds.threshold(list(c.K_over_M), list(c.gap), list(gap_se(c)), list(c.n))


def table(rows: list[dict]) -> pd.DataFrame:
    """One line per (task, regime, M, K, gain, ...): completed seeds, mean ± s.e. of each metric."""
    df = pd.DataFrame(rows)
    if not len(df):
        return df
    lines, df = [], with_fan(df)
    for key, cell in df.groupby(GROUP, sort=True):
        done = cell[cell.status == "completed"].drop_duplicates("seed", keep="last")
        line = dict(zip(GROUP, key))
        line.update(K_over_M=key[3] / key[2], n=len(done),
                    excluded=";".join(f"{s}:seed{d}" for s, d in zip(cell.status, cell.seed) if s != "completed"))
        for name in METRICS:
            line[name], line[f"{name}_se"] = _mean_se(list(done[name]))
        line["gap"] = line["err_untrained"] - line["err_trained"]
        # A net still on its initial plateau (trained error near chance, 90%) generalises trivially.
        line["learned"] = bool(line["err_trained"] < LEARNED_BELOW)
        line["within_2se"] = bool(line["learned"] and line["gap"] <= 2 * math.hypot(
            line["err_untrained_se"] or 0, line["err_trained_se"] or 0)) if not math.isnan(line["gap"]) else False
        # the plateau's end is only defined for a net that left it
        line["plateau_exit_epoch"] = _mean_se(list(done.plateau_exit_epoch.astype(float)))[0] if line["learned"] else math.nan
        lines.append(line)
    return pd.DataFrame(lines)


SWEEP = ["task", "regime", "M", "epochs", "decoder_fan"]  # one K sweep: K varies, all else fixed


def zero_shot_threshold(df: pd.DataFrame) -> pd.DataFrame:
    """Per K sweep (task, regime, M, epochs, decoder init; at least two learned K values) at gain 1: the
    K/M where the gap falls to 1 point and its interval over seeds, by the one rule of
    :mod:`gatelab.papers.thresholds`; ``verdict`` against the paper's K/M."""
    out, df = [], with_fan(df)
    for (task, regime, m, epochs, fan), g in df[df.gain == 1.0].groupby(SWEEP):
        if g.K.nunique() < 2:
            continue
        t = sweep_threshold(g.sort_values("K"))
        paper = PAPER_ZERO_SHOT.get(regime, math.nan)
        out.append({"task": task, "regime": regime, "M": m, "epochs": epochs, "decoder_fan": fan, "K_values": len(g),
                    "K_over_M": t.point if t else math.nan, "extrapolated": bool(t and t.extrapolated),
                    "lo": t.lo if t else math.nan, "hi": t.hi if t else math.nan,
                    "x_min": t.x_min if t else math.nan, "x_max": t.x_max if t else math.nan,
                    "interval": t.interval() if t else "no interval", "seeds": int(g.n.min()),
                    "paper": paper, "verdict": thresholds.verdict(t, paper) if t and paper == paper else "no result"})
    return pd.DataFrame(out)


def _pm(m, se) -> str:
    if m is None or math.isnan(m):
        return "—"
    return f"{m:.2f}" if se is None or math.isnan(se) else f"{m:.2f} ± {se:.2f}"


def render(df: pd.DataFrame, rows: list[dict], bad: list[str], command: str) -> str:
    """The Markdown report; cells without a completed seed are left to "Not counted"."""
    every = df
    df = df[df.n > 0]
    reduced = any("6000" in str(lim) for lim in df.limits)
    out = [f"# Routing networks (paper 003){' — REDUCED scale' if reduced else ''}: trained vs untrained pathways", "",
           "Test-set error (100 − accuracy, %) and cross-entropy on the trained and the untrained (input, output) "
           "domain pairs at the last epoch; mean ± standard error over n seeds (the paper's statistic). "
           "Gap = untrained − trained error; ✓ = within 2 s.e.", ""]
    main = [{"task": r.task, "regime": r.regime, "M": r.M, "epochs": r.epochs, "K": r.K, "K/M": f"{r.K_over_M:.2f}",
             "gain": f"{r.gain:g}", "n": r.n, "err trained": _pm(r.err_trained, r.err_trained_se),
             "err untrained": _pm(r.err_untrained, r.err_untrained_se),
             "gap": f"{r.gap:.2f}" + (" ✓" if r.within_2se else ("" if r.learned else " (not learned)")),
             "loss trained": _pm(r.loss_trained, r.loss_trained_se),
             "loss untrained": _pm(r.loss_untrained, r.loss_untrained_se),
             "plateau exit (epoch)": _pm(r.plateau_exit_epoch, None)}
            for _, r in df.sort_values(["task", "regime", "M", "epochs", "gain", "K"]).iterrows()]
    out += [tables.markdown(pd.DataFrame(main))]
    z = zero_shot_threshold(df)
    if len(z):
        out += ["", f"Zero-shot threshold (gain 1; the rule of `gatelab.papers.thresholds`, docs/reproducing.md): the "
                f"K/M at which the gap falls to {thresholds.LEVEL:g} point, log-linear between the bracketing K of the "
                f"learned cells (* extrapolated), with its {thresholds.CONFIDENCE:.0%} interval over seeds; agrees when "
                f"the paper's value lies in the interval ± {thresholds.READ_WITHIN:g} and the interval is no wider than "
                f"{thresholds.DECIDES_WITHIN:g}, differs when outside, else no evidence:", ""]
        out += [tables.markdown(pd.DataFrame([
            {"task": r.task, "regime": r.regime, "M": r.M, "epochs": r.epochs, "decoders": r.decoder_fan,
             "K values run": r.K_values, "seeds": r.seeds,
             "K/M at gap 1": "—" if math.isnan(r.K_over_M) else f"{r.K_over_M:.2f}{'*' if r.extrapolated else ''}",
             "interval": r.interval, "paper": f"≈{r.paper:.2f}", "verdict": r.verdict} for _, r in z.iterrows()]))]
    gains = df[df.gain != 1.0]
    if len(gains):
        out += ["", "Gain sweep (Fig 10): untrained − trained error per initialisation gain (\"not learned\": "
                f"trained error ≥ {LEARNED_BELOW:g}%, still on the plateau after the run's epochs):", ""]
        out += [tables.markdown(pd.DataFrame([
            {"task": r.task, "regime": r.regime, "M": r.M, "epochs": r.epochs, "K": r.K, "gain": f"{r.gain:g}", "n": r.n,
             "err trained": _pm(r.err_trained, r.err_trained_se), "err untrained": _pm(r.err_untrained, r.err_untrained_se),
             "gap": f"{r.gap:.2f}{'' if r.learned else ' (not learned)'}"}
            for _, r in _gain_lines(df).sort_values(["task", "regime", "epochs", "K", "gain"],
                                                    ascending=[True, True, True, True, False]).iterrows()]))]
    runs = [report.Run(r["path"], r["status"], ("routing", "sgd", r["task"]), r["regime"], r["lr"], r["seed"], None,
                       r["epochs"], (None, None), r["finished_at"], r["commit"], r["device"], {}, None, None) for r in rows]
    out += ["", "## Provenance", *(report.provenance(runs, command, [
        f"epochs {report.joined(df.epochs)}, lr {report.joined(df.lr)}, h {report.joined(df.h)}, "
        f"examples train/test {report.joined(df.limits)}"]) if rows else [
        f"- command: `{command}`" if command else "- command: (not given)",
        f"- {RERENDERED} from the previous routing.csv alone (no runs below the runs directory), "
        f"code commit {git_commit() or '?'}"])]
    excluded = [(f"{r.task}/{r.regime}/K={r.K}/gain={r.gain:g}", r.excluded) for _, r in every.iterrows() if r.excluded]
    out += report.not_counted(excluded, bad)
    return "\n".join(out) + "\n"


def _gain_lines(df: pd.DataFrame) -> pd.DataFrame:
    """The lines of the gain sweeps: every gain of a (task, regime, M, K, epochs) that ran more than one."""
    key = ["task", "regime", "M", "K", "epochs"]
    return df[df.groupby(key).gain.transform("nunique") > 1]


TASK_TITLES = {"routing_mnist_perm": "MNIST perm/perm", "routing_mnist_rot": "MNIST rot/perm",
               "routing_cifar_rot": "CIFAR-10 rot/perm"}
REGIME_TITLES = {"dln": "linear", "leaky": "leaky ReLU"}


def _who(df: pd.DataFrame) -> str:
    """What made a figure: seeds per point, the statistic, the images and the step size."""
    return (f"mean ± s.e. over n={report.joined(df.n)} seeds, {report.joined(df.limits)} train/test images, "
            f"lr {report.joined(df.lr)}")


def figures(df: pd.DataFrame, out: Path) -> None:
    """Error against K/M per task and regime (Figs 7b-c, 8, 9), with the paper's zero-shot K/M
    marked, and against the gain (Fig 10)."""
    df = with_fan(df)
    base = df[(df.gain == 1.0) & (df.groupby(SWEEP).K.transform("nunique") > 1)]
    panels = sorted(base.groupby(SWEEP).groups)
    if panels:
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.0), squeeze=False)
        for ax, key in zip(axes[0], panels):
            g = base[(base[SWEEP] == pd.Series(key, index=SWEEP)).all(axis=1)].sort_values("K")
            for col, color in (("err_trained", "tab:blue"), ("err_untrained", "tab:orange")):
                ax.errorbar(g.K_over_M, g[col], g[f"{col}_se"].fillna(0), color=color, marker="o", capsize=2,
                            label=f"ours: {col.split('_')[1]} pathways")
            if key[1] in PAPER_ZERO_SHOT:
                ax.axvline(PAPER_ZERO_SHOT[key[1]], color="k", ls=":", lw=1,
                           label=f"paper: errors meet at K/M≈{PAPER_ZERO_SHOT[key[1]]:.2f}")
            ax.set(xlabel="K/M (fraction of trained pathways)", ylabel="test error (%)", xlim=(0, 1))
            ax.set_title(f"{TASK_TITLES.get(key[0], key[0])}, {REGIME_TITLES.get(key[1], key[1])}, M={key[2]}, "
                         f"{key[3]} epochs" + ("" if key[4] == "per_decoder" else f", decoders {key[4]}"), fontsize=8)
            ax.legend(fontsize=7, loc="upper right")
        plotting.caption(fig, "003", "Figs 7b-c, 8, 9", _who(base))
        plotting.save(fig, base, out, "error_vs_K")
    gains = _gain_lines(df)
    if len(gains):
        sweeps = sorted(gains.groupby(["task", "regime", "M", "K"]).groups)
        fig, axes = plt.subplots(1, len(sweeps), figsize=(7.6 * len(sweeps), 3.8), squeeze=False)
        for ax, key in zip(axes[0], sweeps):
            sweep = gains[(gains[["task", "regime", "M", "K"]] == pd.Series(key, index=["task", "regime", "M", "K"])).all(axis=1)]
            for (epochs, g), style in zip(sweep.groupby("epochs"), ("-", "--", ":", "-.")):
                g = g.sort_values("gain")
                for col, color, marker in (("err_trained", "tab:blue", "o"), ("err_untrained", "tab:orange", "s")):
                    ax.errorbar(g.gain, g[col], g[f"{col}_se"].fillna(0), color=color, marker=marker, capsize=2,
                                linestyle=style, fillstyle="none" if epochs == sweep.epochs.min() else "full",
                                label=f"{col.split('_')[1]}, {epochs} epochs")
            ax.axhline(90, color="gray", lw=1, ls=":", label="chance (90%)")
            ax.set(xscale="log", xlabel="initialisation gain", ylabel="test error (%)")
            ax.set_title(f"{TASK_TITLES.get(key[0], key[0])}, {REGIME_TITLES.get(key[1], key[1])}, M={key[2]}, K={key[3]} "
                         "(paper: K=10)", fontsize=8)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
        plotting.caption(fig, "003", "Figs 7d, 10", _who(gains))
        plotting.save(fig, gains, out, "error_vs_gain")


def replot(out: Path, scale: str = "") -> list[str]:
    """Redraw ``error_vs_K`` and ``error_vs_gain`` from their own CSVs (the lines each plots, at full
    precision), else from the report's ``routing.csv``."""
    own = [Path(out) / f"{name}.csv" for name in ("error_vs_K", "error_vs_gain")]
    paths = [p for p in own if p.is_file()] or [p for p in [Path(out) / "routing.csv"] if p.is_file()]
    if not paths:
        return []
    df = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True).drop_duplicates(GROUP)
    df["limits"] = df["limits"].astype(str)
    figures(df[df.n > 0].sort_values(GROUP).reset_index(drop=True), out)
    return [name for name in ("error_vs_K", "error_vs_gain") if (Path(out) / f"{name}.png").is_file()]


def provenance_blocks(md: str) -> list[tuple[str, ...]]:
    """The provenance blocks (``- command`` and the lines under it) of a rendered routing.md: its own and,
    nested under "kept from earlier renders", those of the renders its kept lines came from."""
    if "## Provenance" not in md:
        return []
    section = md.split("## Provenance", 1)[1].split("\n## ", 1)[0]
    blocks: list[list[str]] = []
    for ln in (x.strip() for x in section.strip().splitlines()):
        if ln.startswith("- command"):
            blocks.append([ln])
        elif ln.startswith("- ") and not ln.startswith("- kept from") and blocks:
            blocks[-1].append(ln)
    return [tuple(b) for b in blocks]


RERENDERED = "re-rendered by today's rules"


def kept_rows(out: Path, new: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[str, ...]]]:
    """The lines of the report's previous ``routing.csv`` whose settings (``GROUP``) have no run below the
    runs directory now (runs made on another machine or pruned), and every provenance block of the
    previous render (its own and those it kept)."""
    csv, md = Path(out) / "routing.csv", Path(out) / "routing.md"
    if not csv.is_file():
        return pd.DataFrame(), []
    old = with_fan(pd.read_csv(csv))  # a render before the decoder init was a column
    old["limits"] = old["limits"].astype(str)
    old["excluded"] = old["excluded"].astype(object).where(old["excluded"].notna(), "").astype(str)
    if len(new):
        have = set(map(tuple, new[GROUP].astype(str).to_numpy()))
        old = old[[tuple(r) not in have for r in old[GROUP].astype(str).to_numpy()]]
    return old.reset_index(drop=True), provenance_blocks(md.read_text()) if md.is_file() else []


def write_table(runs_dir: Path, out: Path, command: str = "", keep: bool = False) -> pd.DataFrame:
    """routing.{md,csv} and the figures from the runs below ``runs_dir``; with ``keep``, the lines of the
    previous render whose runs are not here stay, with the provenance of the renders they came from
    (rendering the same runs twice gives the same bytes; with no runs at all, the previous lines are
    rendered again: a report whose runs were made elsewhere gets today's rules)."""
    rows, bad = scan(runs_dir)
    if not rows and not (keep and (Path(out) / "routing.csv").is_file()):
        raise SystemExit(f"no routing runs (arch=routing) below {runs_dir}")
    df = table(rows)  # none, with keep: the previous render's lines alone, re-rendered by today's rules
    old, prov = kept_rows(out, df) if keep else (pd.DataFrame(), [])
    md = render(pd.concat([df, old], ignore_index=True) if len(old) else df, rows, bad, command)
    if len(old):
        both = pd.concat([df, old], ignore_index=True).sort_values(GROUP).reset_index(drop=True)
        own = provenance_blocks(md)
        # a render from the CSV alone made no lines of its own: the next one supersedes it (same bytes twice)
        earlier = list(dict.fromkeys(b for b in prov if b not in own and not any(RERENDERED in ln for ln in b)))
        note = [f"- kept from earlier renders ({len(old)} lines whose runs are not below {runs_dir}); the renders "
                "they may come from:", *[f"  {ln}" for block in earlier for ln in block]]
        head, sep, tail = md.partition("\n## Not counted")
        md = head.rstrip("\n") + "\n" + "\n".join(note) + "\n" + (sep + tail if sep else "")
        df = both
    report.write_outputs(out, "routing", df, {"md": md})
    figures(df[df.n > 0], out)  # cells with a completed seed
    return df


def write_toy(out: Path, seed: int = 0) -> dict:
    """Figs 3-6: the toy routing task and XoR against the reduced ODEs (:mod:`gatelab.papers.routing.toy`);
    writes the figures and ``toy_summary.json``."""
    import json

    import torch

    from gatelab.papers.routing import toy_figures as routing_toy
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny float64 nets: one thread is 7x faster here, and the sums keep one order
    try:
        res = routing_toy.run_all(seed=seed)
        routing_toy.figures(out, res)
    finally:
        torch.set_num_threads(threads)
    summary = _rounded(routing_toy.summary(res))
    (Path(out) / "toy_summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _rounded(obj, digits: int = 6):
    """Floats to ``digits`` significant digits (as the CSVs), so a rerun rewrites the same bytes."""
    if isinstance(obj, dict):
        return {k: _rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_rounded(v, digits) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, str)):
        return obj
    return float(f"{float(obj):.{digits}g}")


def features(overrides: list[str]) -> dict:
    """Compute (or find) the cached backbone features of a CIFAR routing config and return the
    backbone's test accuracy record (:mod:`gatelab.data.backbone`)."""
    import json

    from gatelab.core.runs import compose
    from gatelab.data import backbone, datasets as data_mod
    cfg = compose(["dataset=routing_cifar_rot", "arch=routing", "regime=dln", *overrides])
    data = data_mod.load(cfg.dataset, cfg.data, "cpu")
    info = json.loads(backbone.info_path(cfg.dataset.routing.backbone).read_text())
    return {"train": tuple(data.train.x.shape), "test": tuple(data.test.x.shape), "cache": str(backbone.cache_dir()), **info}
