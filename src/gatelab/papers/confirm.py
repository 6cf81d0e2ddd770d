"""``python -m gatelab confirm [--dry-run] [--design] [--slurm | --status] [--carry] [TARGET ...]``: the confirmation runs
(issues #54, #55).

The results that exist are the exploratory data; :mod:`gatelab.papers.confirm_design` sizes each claim's fresh runs
from them and ``--design`` writes each claim's ``confirm: {from, seeds, needed, basis}`` into its ``claims.yaml``
(committed before any confirmation run). ``--dry-run`` lists, per target, its items, claims, seeds, held-out block
and price on this machine; ``confirm TARGET`` trains exactly those runs (resumable: the recipe's plan), renders the
reports into ``outputs/reports/confirm/<report>`` and writes the ``runs.csv`` that
:mod:`gatelab.papers.preregistration` reads; ``--slurm`` queues the same runs on a cluster and ``--status`` follows
them to the same reports (:mod:`gatelab.papers.confirm_slurm`); ``--carry`` keeps the finished runs in git for the next
machine (:mod:`gatelab.papers.confirm_carry`).
"""
from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from pathlib import Path
from typing import Optional

import yaml

from gatelab.papers import claims as claims_mod
from gatelab.papers.confirm_design import design, needed, seeds_of  # noqa: F401 (the CLI's --design)
from gatelab.papers.confirm_targets import NOT_BUILT, REPORTS_ROOT, RUNS_ROOT, TARGETS, Target  # noqa: F401
from gatelab.papers.preregistration import HELD_OUT, write_runs


def recipe_of(t: Target, data: Optional[str]):
    """The target's recipe on its held-out seeds: runs under outputs/confirm/, reports under outputs/reports/confirm/."""
    from gatelab.launch import recipes
    from gatelab.papers import reproduce
    reproduce.discover()
    n = max(int(c.get("seeds", 0)) for c in _declared(t)) if _declared(t) else t.least
    block = ",".join(str(s) for s in range(HELD_OUT, HELD_OUT + n))
    r = recipes.build(t.recipe, recipes.Options(t.scale, data=data))
    r.runs = [[*(o for o in rs if not o.startswith("seeds=")), f"seeds=[{block}]"] for rs in r.runs]
    r.runs = [[o.replace("out_root=outputs/", f"out_root={RUNS_ROOT}/", 1) for o in rs] for rs in r.runs]
    r.reports = [[a.replace("outputs/reports/", f"{REPORTS_ROOT}/", 1) if i and argv[i - 1] == "--out" else
                  a.replace("outputs/", f"{RUNS_ROOT}/", 1) if i and argv[i - 1] == "--runs" else a
                  for i, a in enumerate(argv)] for argv in r.reports]
    r.banner = f"CONFIRMATION: held-out seeds {block}, claims committed before these runs (issue #55)"
    return r, block


def _declared(t: Target) -> list[dict]:
    out = []
    for paper, item in t.items:
        path = Path(claims_mod.__file__).parent / claims_mod.PACKAGES[paper] / "claims.yaml"
        out += [d["confirm"] for d in yaml.safe_load(path.read_text()) if d.get("item") == item and d.get("confirm")]
    return out


def dry_run(targets: list[Target], data: Optional[str]) -> str:
    from gatelab.launch import costs, recipes
    from gatelab.papers import confirm_carry
    need, table, lines = needed(), costs.load(), []
    for t in targets:
        run, per = seeds_of(t, need)
        per = per + [f"  WOULD NOT PRE-REGISTER: {f}" for f in preflight(t)]
        declared = _declared(t)
        if t.figure:
            seed = min((int(c["from"]) for c in declared), default=HELD_OUT)
            n = max((int(c["seeds"]) for c in declared), default=t.least)
            argv = _figure_argv(t, Path(REPORTS_ROOT) / t.report, seed, n, data)
            price = figure_price(t, seed, n, data, table)
            done = _nets_done(t, seed, Path(REPORTS_ROOT) / t.report)
            lines += [f"{t.name}: python -m {shlex.join(argv)}; items: {', '.join(i for _, i in t.items)}",
                      f"  seed {seed} ({'declared in the claims' if declared else 'NOT YET DECLARED: --design'}); "
                      + (f"{price} ({t.why})" if price else f"not priced by the plan: {t.why}")
                      + (f"; {done}" if done else ""), *per]
            continue
        r, block = recipe_of(t, data)
        waves = recipes.plan_recipe(r, check=False)
        back, stale = confirm_carry.carried_here(r)  # put back before it trains: not left, not priced
        steps = [dataclasses.replace(s, runs=[x for x in s.runs if Path(x.dir) not in back]) for w in waves for s in w]
        price = costs.words(costs.price([x for s in steps for x in s.priced()], table), table) if steps else "nothing left"
        carried = (f" ({len(back)} more carried in git, put back first)" if back else "") + (
            f"; CARRIED RUNS OF OTHER CODE ({', '.join(stale)}): resume from a worktree at {stale[0]}" if stale else "")
        lines += [f"{t.name}: {t.recipe} --scale {t.scale}; items: {', '.join(i for _, i in t.items)}",
                  f"  seeds {block} ({'declared in the claims' if declared else 'NOT YET DECLARED: --design'}); "
                  f"{_runs_left(steps)} runs left{carried}; price here: {price} ({t.why})", *per]
    if NOT_BUILT:
        lines += ["not built (no seed option in their figure commands):"] + [f"  {k}: {v}" for k, v in NOT_BUILT.items()]
    return "\n".join(lines)


def _nets_done(t: Target, seed: int, out: Path, made: bool = False):
    """How far a target that keeps its nets as it goes (002's Figs 1-4) has come, or (``made``) what each net records."""
    if t.name != "dgn-figures1-4":
        return None if made else ""
    from gatelab.papers.dgn.figures import FRG_SCALES, PARTS, nets_done, parts_made
    scale = {**FRG_SCALES["paper"], "first_run": seed}
    if made:
        return parts_made(scale, out / PARTS)
    done, total = nets_done(scale, out / PARTS)
    return f"{done} of its {total} nets done ({out / PARTS}; it resumes there)"


def _runs_left(steps) -> int:  # the runs with steps left to train (a stopped one: its remaining steps)
    return sum(1 for s in steps for r in s.runs if r.steps > 0)


def _dgn7_runs(seed: int, n: int, common: list[str]) -> list[list[str]]:
    from gatelab.papers.dgn.adaptable_gates import FIG7_SCALES, figure7_8_runs
    return figure7_8_runs({**FIG7_SCALES["paper"], "first_seed": seed, "seeds": n}, common)


def _figure3_runs(seed: int, n: int, common: list[str]) -> list[list[str]]:
    from gatelab.papers.npf.figure3 import SCALES, figure3_runs
    return figure3_runs(["middle", "right"], SCALES["paper"], [*common, f"seed={seed}"])


def _figure3_left_runs(seed: int, n: int, common: list[str]) -> list[list[str]]:
    from gatelab.papers.npf.figure3 import SCALES, figure3_runs
    scale = SCALES["reduced"]
    return figure3_runs(["left"], {**scale, "left": {**scale["left"], "seeds": list(range(seed, seed + n))}}, common)


FIGURE_RUNS = {"dgn-figures7-8": _dgn7_runs, "figure3": _figure3_runs, "figure3-left": _figure3_left_runs}
"""The run.py runs a figure target's command trains (``ensure_run``'s overrides, as each figure module lists them for a
recipe's dry run), by target: what the plan prices. The other figure targets draw fresh nets, not run.py runs."""


def figure_price(t: Target, seed: int, n: int, data: Optional[str], table: dict) -> Optional[str]:
    """A figure target's price on every cost entry, from the runs it trains (:data:`FIGURE_RUNS`) and what is left
    of them on disk; None for a target whose command trains none."""
    from gatelab.launch import costs, recipes
    if t.name not in FIGURE_RUNS:
        return None
    common = [f"out_root={RUNS_ROOT}/{t.runs}", *([f"data.root={data}"] if data else [])]
    steps = recipes.figure_steps(recipes.Recipe(t.name, t.name, figure_runs=FIGURE_RUNS[t.name](seed, n, common)))
    left = _runs_left(steps)
    return (f"{left} runs left; price here: " + costs.words(costs.price([x for s in steps for x in s.priced()], table),
                                                          table)) if left else "nothing left to train"


def _figure_argv(t: Target, out: Path, seed: int, n: int, data: Optional[str]) -> list[str]:
    """A figure target's command with its placeholders filled: {out}, {seed} (the first held-out seed), {seeds}
    (the n seeds from it, comma-joined) and {data} (the data root)."""
    from gatelab.data.datasets import data_root
    seeds = ",".join(str(s) for s in range(seed, seed + n))
    return [a.replace("{out}", str(out)).replace("{seeds}", seeds).replace("{seed}", str(seed)).replace("{n}", str(n))
            .replace("{runs}", f"{RUNS_ROOT}/{t.runs}").replace("{data}", str(data_root(data))) for a in t.figure]


def run_figure(t: Target, data: Optional[str] = None) -> int:
    """A figure target: its command on the held-out seeds, into outputs/reports/confirm/<report>, and its rows of
    the report's ``runs.csv``: the run.py runs it trained (``t.runs``), else that one attempt (its start, commit and
    tree state), which the figure's own nets stand for; ``for`` names the files it wrote (several targets share
    a report: paper 002's Figs 1-4, 7-8 and 10)."""
    import shutil
    import subprocess
    import time
    import pandas as pd
    from gatelab.core.results import git_commit, git_tree
    from gatelab.papers.preregistration import COLUMNS, RUNS, merge_rows, parts_row
    seed, out = min(int(c["from"]) for c in _declared(t)), Path(REPORTS_ROOT) / t.report
    n = max(int(c["seeds"]) for c in _declared(t))
    started, commit, dirty = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), git_commit(), git_tree().get("git_dirty")
    argv = _figure_argv(t, out, seed, n, data)
    before = _stamps(out)
    print("$ python -m " + " ".join(argv), flush=True)
    code = subprocess.call([sys.executable, "-m", *argv])
    if code != 0:
        return code
    made = ";".join(sorted(k for k, v in _stamps(out).items() if before.get(k) != v))  # what this command wrote
    if t.runs:  # the runs it trained speak for themselves: each one's seed, start, commits, tree
        mine = pd.read_csv(write_runs([Path(RUNS_ROOT) / t.runs], out / f".{t.name}"), dtype={"commits": str})
    elif (nets := _nets_done(t, seed, out, made=True)) is not None:  # its kept nets: each one's start, commit, tree
        mine = pd.DataFrame([parts_row(f"{t.name}/seed{seed}", seed, nets)])
    else:
        mine = pd.DataFrame([{"run": f"{t.name}/seed{s}", "seed": s, "status": "completed", "started_at": started,
                              "commits": commit, "dirty": dirty if dirty is not None else True}
                             for s in range(seed, seed + n)], columns=COLUMNS)
    mine["for"] = made
    merge_rows(out / RUNS, mine, _own(t))
    shutil.rmtree(out / f".{t.name}", ignore_errors=True)
    print(f"wrote {out / RUNS}")
    return code


def _own(t: Target) -> tuple[str, ...]:
    """How the rows of a report's runs.csv that target ``t`` wrote begin (its later run replaces them)."""
    return (f"{t.name}/", f"{t.runs}/") if t.runs else (f"{t.name}/",)


def preflight(t: Target) -> list[str]:
    """Why runs of ``t`` started now would not pre-register (:func:`~gatelab.papers.preregistration.would_not_count`),
    said before any training."""
    from gatelab.papers.preregistration import RUNS, would_not_count
    return would_not_count(Path(REPORTS_ROOT) / t.report / RUNS if t.report else None, _own(t))


def _stamps(out: Path) -> dict[str, int]:
    """{a report file's CSV or JSON name: its modification time in ns}: what a figure command wrote is what changed."""
    return {p.name: p.stat().st_mtime_ns for p in Path(out).glob("*") if p.suffix in (".csv", ".json")
            and p.name != "runs.csv"} if Path(out).is_dir() else {}


def run(t: Target, data: Optional[str], jobs: int = 1, slurm: Optional[tuple[str, list]] = None,
        carry: bool = False) -> int:
    """Train ``t``'s held-out runs here (``jobs`` at a time) and render its reports; ``slurm``: ("submit" or
    "status", the ``--slurm-set`` settings) queues them on SLURM or follows them there; ``carry``: only carry its
    finished runs in git (:mod:`gatelab.papers.confirm_carry`; the runs here put them back first)."""
    from gatelab.launch import recipes
    if not _declared(t):
        print(f"gatelab confirm: {t.name}: no confirm block declared in its claims (python -m gatelab confirm "
              "--design, then commit, first)", file=sys.stderr)
        return 2
    if slurm:
        from gatelab.papers import confirm_slurm
        return confirm_slurm.run(t, None if t.figure else recipe_of(t, data)[0], data, *slurm, render=render)
    if t.figure:
        return 0 if carry else run_figure(t, data)  # a figure target keeps its own nets (002's Figs 1-4: .parts)
    from gatelab.papers import confirm_carry
    r, block = recipe_of(t, data)
    if carry:
        print(f"{t.name}: carried in {confirm_carry.CARRIED}: {confirm_carry.pack(r)}")
        return 0
    if back := confirm_carry.unpack(r):
        print(f"{t.name}: {back} finished runs carried in {confirm_carry.CARRIED} put back in {RUNS_ROOT}")
    waves = recipes.plan_recipe(r)
    print(recipes.describe(r, waves, t.scale), flush=True)
    failed = recipes.run_local(waves, jobs)
    confirm_carry.pack(r, waves)
    if failed:
        for f in failed:
            print(f"failed: {f}", file=sys.stderr)
        return 1
    return render(r)


def render(r) -> int:
    """A recipe target's reports from its finished runs, each with its ``runs.csv`` (after the runs here or on SLURM)."""
    from gatelab.launch import recipes
    command = "python -m gatelab confirm " + " ".join(shlex.quote(a) for a in sys.argv[2:]).replace("--status", "--slurm")
    failed = recipes.run_figures_and_reports(r, command)
    roots = sorted({o.split("=", 1)[1] for rs in r.runs for o in rs if o.startswith("out_root=")})
    for argv in r.reports:
        out = argv[argv.index("--out") + 1]
        if Path(out).is_dir() and not Path(out).name == "complete-linkage":
            print(f"wrote {write_runs([Path(x) for x in roots], Path(out))}")
    return 1 if failed else 0


def main(argv=None) -> int:
    from gatelab.core.config import ConfigError
    from gatelab.core.commands import modes, positive
    ap = argparse.ArgumentParser(prog="python -m gatelab confirm", description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", help=f"one or more of: {', '.join(t.name for t in TARGETS)} (default: all)")
    ap.add_argument("--dry-run", action="store_true", help="per target: claims, seeds needed, block, price; train nothing")
    ap.add_argument("--design", action="store_true", help="write the seeds into the claims.yaml files (commit them)")
    ap.add_argument("--data", default=None, help="data root (default: data.root's, $GATELAB_DATA)")
    ap.add_argument("--jobs", type=positive, default=1, help="jobs at once on this machine")
    ap.add_argument("--slurm", action="store_true", help="queue the runs on SLURM (job arrays, as reproduce --slurm)")
    ap.add_argument("--status", action="store_true", help="the SLURM jobs' states; once all are done, the reports")
    ap.add_argument("--carry", action="store_true", help="copy the finished runs into outputs/reports/confirm/.carried "
                    "(commit it; the next machine's confirm puts them back and goes on); train nothing")
    ap.add_argument("--slurm-set", action="append", default=[], metavar="KEY=VALUE", help="a SLURM setting "
                    "(partition, account, gpus_per_node, gpu_kind, ... or any sbatch option, as reproduce's)")
    args = ap.parse_args(argv)
    try:
        modes(args, ("dry_run", "design", "carry", "slurm", "status"))
        if args.design and args.targets:
            raise ConfigError(f"--design writes the confirm lines of every target's claims; it takes no target "
                              f"({' '.join(args.targets)})")
    except ConfigError as e:
        print(f"gatelab confirm: {e}", file=sys.stderr)
        return 2
    by_name = {t.name: t for t in TARGETS}
    bad = [x for x in args.targets if x not in by_name]
    if bad:
        print(f"gatelab confirm: no target {', '.join(bad)}; targets: {', '.join(by_name)}", file=sys.stderr)
        return 2
    chosen = [by_name[x] for x in args.targets] or list(TARGETS)
    if args.design:
        for path, n in design().items():
            print(f"wrote {n} confirm lines into {path}")
        return 0
    if args.dry_run:
        print(dry_run(chosen, args.data))
        return 0
    if args.carry:
        return max(run(t, args.data, carry=True) for t in chosen)
    faults = [f"gatelab confirm: {t.name}: {f}" for t in chosen for f in preflight(t)]
    if faults:  # before any training: runs that cannot pre-register are hours that the page never counts
        print("\n".join(faults), file=sys.stderr)
        return 2
    slurm = ("status" if args.status else "submit", args.slurm_set) if args.slurm or args.status else None
    return max(run(t, args.data, args.jobs, slurm) for t in chosen)
