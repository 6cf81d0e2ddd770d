"""Shared helpers of the papers' tables: read runs, per-cell statistics, write md/csv/tex.

A table module (:mod:`gatelab.papers.npf`, :mod:`gatelab.papers.dgn`) scans the ``results.json``
files below a directory (:func:`scan`, through :mod:`gatelab.core.results` only: no training code is
imported), groups them into cells, and renders them beside the published values. Only
``completed`` runs count; the others are counted per cell and listed. Outputs are a function of
the runs alone: rendering twice gives the same files.
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

import pandas as pd

from gatelab.core import checkpoints
from gatelab.core.results import RESULTS, load_results, skip_note

DATASET_TITLES = {"mnist": "MNIST", "cifar10": "CIFAR-10", "binary_mnist": "Binary-MNIST"}
STATISTICS = {1: "sample std (ddof=1)", 0: "population std (ddof=0, np.std, as the paper's code)"}


@dataclass
class Run:
    """What a table needs of one results.json."""
    path: str
    status: str
    row: tuple  # (arch, optimizer, dataset)
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
    best_epoch: Optional[int]
    test_curve: tuple = ()  # test accuracy per epoch, % (None where not recorded)
    train_curve: tuple = ()  # running-mean train accuracy per epoch, %


def results_below(runs_dir: Path) -> tuple[list[tuple[Path, dict]], list[str]]:
    """(path, results) of every valid results.json below ``runs_dir``, and one line for each one
    skipped: malformed (:func:`gatelab.core.results.load_results`), or a completed run whose
    ``ckpt/best.pt`` disagrees with its results.json (listed, never counted; a run whose whole
    ``ckpt/`` was removed to save disk still counts)."""
    found, bad = [], []
    for path in sorted(Path(runs_dir).rglob(RESULTS)):
        res, why = load_results(path)
        if res is None:
            bad.append(skip_note(path, why or "gone while read"))
            continue
        problem = res["status"] == "completed" and (path.parent / checkpoints.CKPT_DIR).is_dir() and \
            checkpoints.best_mismatch(path.parent, res)
        if problem:
            bad.append(f"{path.parent}: {problem} (python -m gatelab.core.run_check)")
        else:
            found.append((path, res))
    return found, bad


def scan(runs_dir: Path) -> tuple[list[Run], list[str]]:
    """Every valid results.json below ``runs_dir`` as a :class:`Run`; the others are listed, not
    counted (also one whose config lacks a field the tables read)."""
    runs = []
    found, bad = results_below(runs_dir)
    for path, res in found:
        try:
            runs.append(_run(path, res))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            bad.append(skip_note(path, f"a field the tables read is missing or malformed ({type(e).__name__}: {e})"))
    return runs, bad


@lru_cache(maxsize=2)
def _test_data(dataset_json: str, data_json: str):
    from omegaconf import OmegaConf

    from gatelab.data import datasets as data_mod
    return data_mod.load(OmegaConf.create(json.loads(dataset_json)), OmegaConf.create(json.loads(data_json)), "cpu")


def untrained_accuracy(run_path) -> float:
    """A negative control (issue #37: experiment 6, Table 4, Fig 3 left): the run's own net at initialisation
    (its seed's weights, a sourced regime's gates as its source gives them; no step taken) on the run's
    test images, %."""
    import torch
    from omegaconf import OmegaConf

    from gatelab.nets.dgn import stack_models
    from gatelab.nets.regimes import build_model
    from gatelab.training.metrics import evaluate
    res, why = load_results(Path(run_path) / RESULTS)
    if res is None:
        raise ValueError(skip_note(Path(run_path) / RESULTS, why or "there is none"))
    c = res["config"]
    cfg = OmegaConf.create(c)
    data = _test_data(json.dumps(c["dataset"], sort_keys=True), json.dumps(c["data"], sort_keys=True))
    model, _ = build_model(cfg, data.in_shape, data.out_dim)
    with torch.no_grad():
        _, acc = evaluate(stack_models([model]), data.test, int(cfg.eval_batch_size), data.task, 1)
    return 100 * acc[0]


def _run(path: Path, res: dict) -> Run:
    c, env = res["config"], res.get("env") or {}
    best = res.get("best_test_acc")
    train_accs = [100.0 * h["train_acc"] for h in res.get("history", []) if h.get("train_acc") is not None]
    return Run(str(path.parent), res["status"], (c["arch"]["name"], c["optimizer"]["name"], c["dataset"]["name"]),
               c["regime"]["name"], float(c["optimizer"]["lr"]), int(res["seed"]),
               None if best is None else 100.0 * best, int(c["epochs"]),
               (c["dataset"].get("limit_train"), c["dataset"].get("limit_test")),
               res.get("finished_at", ""), env.get("git_commit"), device_words(env), c["regime"],
               max(train_accs, default=None), res.get("best_epoch"),
               tuple(_pct(h.get("test_acc")) for h in res.get("history", [])), tuple(train_accs))


def device_words(env: dict) -> str:
    """The device, threads, precision, layout and stacking and (where recorded) the machine's kind or the CPU's
    kernels that made a run: the path it took (issue #48)."""
    kind = (env.get("machine") or {}).get("kind")
    extra = [env.get("precision") or "fp32"] + (["channels_last"] if env.get("channels_last") else []) + \
        ([f"{len(env['stack'])} nets stacked" if len(env["stack"]) > 1 else "one net a step"] if env.get("stack") else []) + \
        ([kind] if kind else [f"CPU kernels {env['cpu_capability']}"]
         if env.get("cpu_capability") and env.get("device") == "cpu" else []) + \
        ([f"UNCOMMITTED CHANGES (diff {env.get('git_diff_sha1')})"] if env.get("git_dirty") else []) + \
        (["deterministic"] if env.get("deterministic") else [])
    return ", ".join([env.get("device_name", "?"), *extra])


def _pct(v):
    return None if v is None else 100.0 * v


def epochs_to_reach(runs: Iterable[Run], within: float = 0.05) -> Optional[int]:
    """The first epoch at which the seeds' mean best-so-far test accuracy is within ``within``
    points of its final value: how long a run must be to lose nothing (at most ``within``)."""
    best_so_far = _mean_best_so_far(runs)
    if best_so_far is None:
        return None
    return int((best_so_far >= best_so_far.iloc[-1] - within).to_numpy().argmax()) + 1


def _mean_best_so_far(runs: Iterable[Run]) -> Optional[pd.Series]:
    """The seeds' mean best-so-far test accuracy per epoch, over the epochs every seed has; None without
    whole curves."""
    curves = [r.test_curve for r in runs if r.test_curve and None not in r.test_curve]
    if not curves:
        return None
    n = min(len(c) for c in curves)
    return pd.DataFrame([pd.Series(c[:n]).cummax() for c in curves]).mean()


def rise_at_end(runs: Iterable[Run], fraction: float = 0.2) -> Optional[float]:
    """Points the seeds' mean best-so-far test accuracy rose over the last ``fraction`` of the epochs (at
    least one): how much the cell was still learning when it stopped. None without whole curves."""
    best_so_far = _mean_best_so_far(runs)
    if best_so_far is None or len(best_so_far) < 2:
        return None
    back = max(1, math.ceil(fraction * len(best_so_far)))
    return float(best_so_far.iloc[-1] - best_so_far.iloc[-1 - back])


def epochs_to_fit(runs: Iterable[Run], level: float = 99.9) -> Optional[int]:
    """The first epoch by which every seed's (running-mean) train accuracy has reached ``level`` %:
    the length at which the training set is fitted. None if a seed never reached it."""
    firsts = [next((i + 1 for i, a in enumerate(r.train_curve) if a >= level), None) for r in runs]
    return max(firsts) if firsts and None not in firsts else None


def scan_some(runs_dir: Path, archs: Optional[list] = None) -> tuple[list[Run], list[str]]:
    runs, bad = scan(runs_dir)
    runs = [r for r in runs if not archs or r.row[0] in archs]
    if not runs:
        raise SystemExit(f"no {RESULTS} files below {runs_dir}")
    return runs, bad


def completed_by_seed(cell: Iterable[Run]) -> dict[int, Run]:
    """The completed runs of a cell, one per seed (a rerun of a seed replaces the older one)."""
    done = {}
    for r in sorted(cell, key=lambda r: r.finished_at):
        if r.status == "completed":
            done[r.seed] = r
    return done


def mean_std(values: list[float], ddof: int = 1) -> tuple[float, float]:
    s = pd.Series(values, dtype=float)
    if not len(s):
        return math.nan, math.nan
    return float(s.mean()), (float(s.std(ddof=ddof)) if len(s) > ddof else math.nan)


def per_seed(line, column: str = "best_per_seed") -> dict[int, float]:
    """A CSV cell written as ``seed:value;...`` (:func:`seed_text`) as {seed: value}; {} when empty."""
    text = line[column] if isinstance(line[column], str) else ""
    return {int(k): float(v) for k, v in (x.split(":") for x in text.split(";") if x)}


def seed_text(values: dict[int, float]) -> str:
    """{seed: value} as one CSV cell, ``seed:value;...`` in seed order (:func:`per_seed` reads it)."""
    return ";".join(f"{s}:{v:.4f}" for s, v in sorted(values.items()))


def signed(value: float) -> str:
    """A difference with its sign, or — where there is none (a cell without a completed run)."""
    return "—" if value is None or value != value else f"{value:+.2f}"


def fmt(mean: float, std: float) -> str:
    if math.isnan(mean):
        return "—"
    return f"{mean:.2f} ± {std:.2f}" if not math.isnan(std) else f"{mean:.2f}"


def joined(values: Iterable) -> str:
    return ",".join(sorted({str(v) for v in values}))


def limits_text(runs: Iterable[Run]) -> str:
    return joined(f"{a or 'all'}/{b or 'all'}" for a, b in (r.limits for r in runs))


def provenance(runs: list[Run], command: str, scale: list[str]) -> list[str]:
    """The ``## Provenance`` lines: command, runs, commits, dates, devices, scale."""
    used = [r for r in runs if r.status == "completed"]
    dates = sorted(r.finished_at for r in used if r.finished_at)
    return [f"- command: `{command}`" if command else "- command: (not given)",
            f"- runs: {len(runs)} results.json ({len(used)} completed), code commit(s) "
            f"{', '.join(sorted({r.commit or '?' for r in used}))}",
            f"- finished: {dates[0] if dates else '?'} .. {dates[-1] if dates else '?'}; "
            f"device(s): {', '.join(sorted({r.device for r in used}))}",
            f"- scale: {'; '.join(scale) or '?'}"]


def not_counted(excluded: list[tuple[str, str]], bad: list[str]) -> list[str]:
    if not (excluded or bad):
        return []
    return ["", "## Not counted", *[f"- {cell}: {what}" for cell, what in excluded], *[f"- {b}" for b in bad]]


def write_outputs(out_dir: Path, name: str, df: pd.DataFrame, texts: dict) -> None:
    """``<name>.csv`` and the rendered ``<name>.<ext>`` files; deterministic given the runs."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    df.to_csv(out_dir / f"{name}.csv", index=False, float_format="%.4f")
    for ext, text in texts.items():
        (out_dir / f"{name}.{ext}").write_text(text)


def paper_cli(prog: str, doc: str, table: str, table_help: str):
    """A paper module's argument parser: its subcommands, the first being its table with the options
    every table takes. Returns (parser, subparsers, table parser)."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    parser = sub.add_parser(table, help=table_help)
    parser.add_argument("--runs", type=Path, required=True, help="directory searched for results.json files")
    parser.add_argument("--out", type=Path, required=True, help="directory for the rendered table")
    parser.add_argument("--seeds", type=int, default=None, help="seeds expected per cell (default: the fullest cell's)")
    parser.add_argument("--ddof", type=int, choices=(0, 1), default=1, help="1: sample std (ours); 0: np.std (paper)")
    parser.add_argument("--command", default="", help="the command that made the runs, for the provenance block")
    parser.add_argument("--note", default="", help="a line in bold under the title (e.g. the reduced scale it ran at)")
    return ap, sub, parser


def add_note(md: Path, note: str) -> None:
    """Put ``note`` in bold under the first line (the title) of a rendered Markdown table."""
    if note:
        title, _, rest = Path(md).read_text().partition("\n")
        Path(md).write_text(f"{title}\n\n**{note}**\n{rest}")
