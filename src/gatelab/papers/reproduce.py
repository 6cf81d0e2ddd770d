"""``python -m gatelab reproduce <recipe> [--scale S] [--dry-run] [--jobs N | --slurm] [overrides ...]``:
a whole paper table from its recipe (:mod:`gatelab.launch.recipes`). Every job is planned and
checked before anything trains; ``--dry-run`` prints the jobs in waves with what is done and the
cost in time on each measured device, and trains nothing. Without it the waves train here (``--jobs
N`` at a time) or on SLURM (``--slurm``), then the report is rendered with the command that made it.

``python -m gatelab recipes`` lists the recipes and their scales (``--markdown``: with each one's cost,
the README's table). A recipe lives beside its paper in ``gatelab/papers/<paper>/recipes.py`` and is
found by name: a fifth paper adds its package, its recipes file and a Make line.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import shlex
import sys
import time
from pathlib import Path

from gatelab.core.commands import modes, positive
from gatelab.core.config import ConfigError
from gatelab.data.datasets import DataNotFoundError
from gatelab.launch import costs, recipes, submit
from gatelab.launch.recipes import Options
from gatelab.papers import tables


def discover() -> dict:
    """Import every paper's ``recipes`` module; the registry of recipes by name."""
    import gatelab.papers as papers
    for m in pkgutil.iter_modules(papers.__path__):
        if m.ispkg and importlib.util.find_spec(f"gatelab.papers.{m.name}.recipes") is not None:
            importlib.import_module(f"gatelab.papers.{m.name}.recipes")
    return recipes.REGISTRY


class _Parser(argparse.ArgumentParser):
    """A usage mistake in one line (``gatelab: ...``, exit 2), as run.py says its own."""

    def error(self, message):
        self.exit(2, f"gatelab: {self.prog.split()[-1]}: {message} (--help lists the options)\n")


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="gatelab", description="gatelab: the tables and figures of four papers on the gates of deep "
                 "ReLU networks, seed by seed. One subcommand, then its own --help.",
                 epilog="examples: gatelab run regime=flnpf arch=gconv --dry-run; gatelab reproduce table2-mnist "
                 "--dry-run; gatelab confirm --dry-run; gatelab page --check")
    sub = ap.add_subparsers(dest="command", required=True)
    rp = sub.add_parser("reproduce", help="plan, price, run and report one recipe")
    rp.add_argument("recipe", nargs="?", help="one of: python -m gatelab recipes")
    rp.add_argument("--scale", default=None, help="one of the recipe's scales (default: its first)")
    rp.add_argument("--dry-run", action="store_true", help="print the jobs in waves and their cost; train nothing")
    rp.add_argument("--jobs", type=positive, default=1, help="jobs at once on this machine (one CPU thread each when several; one job alone takes every core)")
    rp.add_argument("--slurm", action="store_true", help="queue every job on SLURM at once as job arrays, each "
                    "after the arrays of its prerequisites, each with the time limit of its price, and return "
                    "(gatelab.launch.submit)")
    rp.add_argument("--status", action="store_true", help="the recipe's SLURM jobs: done, running, pending, failed, "
                    "with the time left; renders the reports once every run is done")
    rp.add_argument("--slurm-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a SLURM request setting over conf/hydra/launcher/cluster.yaml and conf/local/site.yaml "
                    "(partition, account, gpus_per_node, cpus_per_task, mem_gb, timeout_min: the longest limit, "
                    "time_margin, gpu_kind: the cost entry that prices the limits, ...) or any sbatch option "
                    "(constraint=a100, gres=..., exclude=..., qos=...)")
    rp.add_argument("--report-only", action="store_true", help="render the report from the runs on disk")
    rp.add_argument("--epochs", type=positive, default=None, help="every run's epochs (runs go to <out_root>-<N>ep)")
    rp.add_argument("--seeds", default=None, help="these seeds (e.g. 0,1) instead of the experiments'")
    rp.add_argument("--data", default=None, help="data root (default: data.root's, $GATELAB_DATA)")
    rp.add_argument("--no-stack", action="store_true", help="a cell's seeds one after another (conv nets on a CPU)")
    rp.add_argument("--sgd-sweep", action="store_true", help="Table 2: SGD also at {0.1, 0.01, 0.001}")
    rp.add_argument("--row", action="store_true", help="Table 2: each row in one process")
    rp.add_argument("overrides", nargs="*", help="further config overrides for every run (key=value)")
    sub.add_parser("run", help="train: gatelab run [key=value ...], what python run.py does in a checkout")
    sub.add_parser("page", help="outputs/reports/README.md, what reproduces item by item (--check: is it current)")
    sub.add_parser("confirm", help="the confirmation runs on held-out seeds: --dry-run lists seeds and prices, "
                   "--design sizes them, TARGET trains them")
    pm = sub.add_parser("costs", help="priced against measured: every completed run below ROOTS, a line per stack")
    pm.add_argument("roots", nargs="+", type=Path, help="out_roots of runs (e.g. outputs/races)")
    pm.add_argument("--device", default="cpu", help="the conf/costs.yaml entry to price with (default: cpu)")
    ls = sub.add_parser("recipes", help="the recipes and their scales")
    ls.add_argument("--markdown", action="store_true", help="a Markdown table with each recipe's cost (plans each)")
    ls.add_argument("--data", default=None)
    return ap


def _options(args) -> Options:
    return Options(args.scale, args.epochs, args.seeds, args.data, not args.no_stack, args.sgd_sweep, args.row,
                   list(args.overrides))


def reproduce(args) -> int:
    modes(args, ("dry_run", "report_only", "status", "slurm"))
    registry = discover()
    if args.recipe is None:
        raise ConfigError(f"reproduce needs a recipe: {', '.join(sorted(registry))} (python -m gatelab recipes)")
    d = registry.get(args.recipe)
    args.scale = args.scale or (d.scales[0] if d else None)
    command = "python -m gatelab " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    t0 = time.time()
    r = recipes.build(args.recipe, _options(args))
    if args.report_only:
        return 1 if recipes.run_figures_and_reports(recipes.Recipe(r.name, r.about, reports=r.reports), command) else 0
    folder = submit.journal_dir(r.name, args.scale, _options(args).variant())
    if args.status:
        return slurm_status(r, folder, command)
    waves = recipes.plan_recipe(r)
    print(recipes.describe(r, waves, args.scale) + f"\n(planned in {time.time() - t0:.1f} s)", flush=True)
    if args.dry_run:
        return 0
    if args.slurm:
        entries = submit.submit(r.name, waves, r.figures, folder, submit.settings(args.slurm_set))
        queued = [e for e in entries if e.job_id]
        print(f"submitted: {len(queued)} job(s) queued, {len(entries) - len(queued)} done already; journal "
              f"{folder / 'jobs.json'}; follow with: python -m gatelab reproduce {args.recipe} --scale {args.scale} "
              "--status (it renders the reports when every run is done)")
        return 0
    failed = recipes.run_local(waves, args.jobs)
    if any(f.endswith(recipes.STOPPED) for f in failed):  # a report of stopped runs would replace a finished one
        print("reports not rendered: a job was stopped; the same command resumes it and then renders them "
              "(--report-only renders what is there now)", file=sys.stderr)
    else:
        failed += recipes.run_figures_and_reports(r, command)
    for f in failed:
        print(f"failed: {f}", file=sys.stderr)
    return 1 if failed else 0


def slurm_status(r, folder: Path, command: str) -> int:
    """``--status``: each submitted job's state, the time left priced from the plan; the reports once every run is
    done. Exit 0 when all is done (and rendered), 3 while jobs are queued or running, 1 when one failed."""
    entries = submit.load_journal(folder)
    if not entries:
        raise ConfigError(f"no SLURM jobs of this recipe: {folder / 'jobs.json'} is missing (submit with --slurm)")
    got = submit.status(entries)
    waves = recipes.plan_recipe(r, check=False)
    left = [s for w in waves for s in w if s.steps_left]
    price = costs.words(costs.price([x for s in left for x in s.priced()], costs.load()), costs.load(), long=True) \
        if left else ""
    print(submit.status_text(got, f"left: {price}" if price else ""), flush=True)
    states = {s.state for s in got}
    if states <= {"done"}:
        failed = recipes.run_figures_and_reports(recipes.Recipe(r.name, r.about, reports=r.reports, banner=r.banner),
                                                 command.replace(" --status", " --slurm"))
        for f in failed:
            print(f"failed: {f}", file=sys.stderr)
        return 1 if failed else 0
    return 1 if states & {"failed", "not run", "lost"} else 3


def make_targets() -> dict[tuple, str]:
    """{(recipe, scale): make target} from the Makefile's one-line targets, where it is at hand."""
    makefile = recipes.RUN_PY.parent / "Makefile"
    lines = (makefile.read_text() if makefile.is_file() else "").splitlines()
    out = {}
    for line in (ln for ln in lines if "--report-only" not in ln):
        m = re.match(r"([\w-]+): ; \$\(R\) ([\w-]+)(?: --scale (\S+))?", line)
        if m:
            out.setdefault((m[2], m[3]), m[1])
    return out


def priced_against_measured(args) -> int:
    """``python -m gatelab costs ROOTS``: each stack of completed runs, priced from scratch beside its
    measured wall time (:func:`gatelab.launch.costs.priced_against_measured`), and the whole."""
    df = costs.priced_against_measured(args.roots, args.device)
    if df.empty:
        print(f"gatelab: no completed runs below {', '.join(map(str, args.roots))}", file=sys.stderr)
        return 2
    print(priced_text(df, args.device))
    return 0


def listing(args) -> int:
    registry = discover()
    if not args.markdown:
        for name, d in sorted(registry.items()):
            print(f"{name:18s} scales: {', '.join(d.scales):28s} {d.about}")
        return 0
    table = costs.load()
    targets = make_targets()
    rows = []
    for name, d in sorted(registry.items()):
        for scale in d.scales:
            target = targets.get((name, scale)) or targets.get((name, "$(FIG_SCALE)")) or targets.get((name, None), "")
            target = f"`make {target}`" + (f" FIG_SCALE={scale}" if (name, "$(FIG_SCALE)") in targets else "") \
                if target else ""
            r = recipes.build(name, Options(scale, data=args.data))
            waves = recipes.plan_recipe(r, check=False)  # priced, not checked: the data need not be here
            steps = [s for w in waves for s in w] + recipes.figure_steps(r)  # and what its figure commands train
            price = costs.price([x for s in steps for x in s.priced()], table)
            cells = ["not measured" if v is None else "not priced" if not steps else costs.duration(v)
                     for v in price.values()]
            runs = sum(len(s.runs) for s in steps)
            trains = "the figure command's own" if r.figures and not steps else ""
            rows.append([target, f"{name}, {scale}", trains or runs, len(steps),
                         f"{sum(s.steps_left for s in steps):,}", *cells])
    print("\n".join(tables.lines(["`make` target", "recipe, scale", "runs", "jobs", "net-steps",
                                  *(e.get("label", k) for k, e in table.items())], rows)))
    return 0


def main(argv=None) -> int:
    ap = _parser()
    args, rest = ap.parse_known_args(argv)  # overrides may follow the options (make's EXTRA, the device check's)
    bad = [a for a in rest if a.startswith("-") or "=" not in a]
    if bad or (rest and args.command != "reproduce"):
        ap.error(f"unrecognized arguments: {' '.join(bad or rest)}")
    if rest:
        args.overrides = [*args.overrides, *rest]
    try:
        if args.command == "costs":
            return priced_against_measured(args)
        return reproduce(args) if args.command == "reproduce" else listing(args)
    except (ConfigError, DataNotFoundError, FileNotFoundError) as e:
        print(f"gatelab: {e}", file=sys.stderr)
        return 2


def priced_text(df, device: str) -> str:
    """:func:`priced_against_measured`'s lines as a Markdown table, grouped by what a stack trains, and
    the whole: measured / priced (the issue's goal: within 1.5x)."""
    cols = ["arch", "regime", "nets", "epochs", "steps", "threads", "cpu"]
    g = df.groupby(cols, dropna=False).agg(stacks=("ratio", "size"), priced_s=("priced_s", "sum"),
                                           measured_s=("measured_s", "sum"), steady_s=("steady_s", "sum")).reset_index()
    rows = []
    for r in g.itertuples(index=False):
        known = r.priced_s == r.priced_s and r.priced_s > 0
        rows.append([*(getattr(r, c) for c in cols), r.stacks, costs.duration(r.priced_s) if known else "not measured",
                     costs.duration(r.measured_s), f"{r.measured_s / r.priced_s:.2f}" if known else "",
                     costs.duration(r.steady_s), f"{r.steady_s / r.priced_s:.2f}" if known else ""])
    lines = [f"priced on {device!r} (conf/costs.yaml) against each stack's measured wall time, and its steady time "
             "(every epoch at the median epoch's seconds: what this machine's entry learns from)",
             *tables.lines([*cols, "stacks", "priced", "measured", "measured / priced", "steady", "steady / priced"],
                           rows)]
    known = df[df.priced_s.notna() & (df.priced_s > 0)]
    total_p, total_m, total_s = known.priced_s.sum(), known.measured_s.sum(), known.steady_s.sum()
    lines.append(f"whole (the {len(known)} of {len(df)} stacks priced): priced {costs.duration(total_p)}, measured "
                 f"{costs.duration(total_m)}: {total_m / total_p:.2f}x; steady {costs.duration(total_s)}: "
                 f"{total_s / total_p:.2f}x" if len(known) else "whole: nothing priced")
    return "\n".join(lines)
