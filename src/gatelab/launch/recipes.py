"""Recipes: what one paper table (or figure set) runs at each of its scales, planned, priced, run and
reported by one command, ``python -m gatelab reproduce <recipe> --scale <scale>``.

A recipe is a function of :class:`Options` (the scale, and the few choices a user may change:
epochs, seeds, data root, ...) returning a :class:`Recipe`: its run sets, each the overrides of one
``python run.py -m`` command (sweeps as on the command line, and the ``+experiment`` files' own
``hydra.sweeper.params``); the commands that train what they need themselves (the figures that read
networks at checkpoints); and the report commands that render the table from the runs. Recipes live
beside their paper, in ``gatelab/papers/<paper>/recipes.py``, registered with :func:`recipe`.

:func:`plan` expands every run set into the jobs ``run.py`` would train, through the same planner
(:mod:`gatelab.launch.plan`), orders them in waves (a job's prerequisites in an earlier wave, a job
that two run sets share once), checks every job before anything trains, and prices what is left
(:mod:`gatelab.launch.costs`). :func:`run_local` trains the waves here, ``--jobs N`` at a time;
:func:`gatelab.launch.submit.submit` queues every wave on SLURM at once, each job after its prerequisites.
"""
from __future__ import annotations

import hashlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from gatelab.core.commands import bad_option, first_point
from gatelab.core.config import ConfigError
from gatelab.core.runs import IDENTITY, compose
from gatelab.launch import costs, plan
from gatelab.launch.sweep import job_overrides

REPORTS, TRIES = "outputs/reports", "outputs/tries"  # the committed reports; a shortened try's (ignored by git)
RUN_PY = Path(__file__).resolve().parents[3] / "run.py"  # a checkout's
# a job's command: a checkout's run.py (its own src first, whatever is installed), else the installed `gatelab run`
RUN = [sys.executable, str(RUN_PY)] if RUN_PY.is_file() else [sys.executable, "-m", "gatelab", "run"]


@dataclass
class Options:
    """What a user may change of a recipe (the Make variables of the same names)."""
    scale: str
    epochs: Optional[int] = None  # every run's epochs (a shorter try); the runs go to <out_root>-<N>ep
    seeds: Optional[str] = None  # "0,1": these seeds instead of the experiments'
    data: Optional[str] = None  # data root (data.root)
    stack: bool = True  # false: a cell's seeds one after another (conv nets on a CPU)
    sgd_sweep: bool = False  # Table 2: SGD at the paper's {0.1, 0.01, 0.001} besides the code's step size
    row: bool = False  # Table 2: each row in one process, nets of a regime family stacked
    extra: list[str] = field(default_factory=list)  # further overrides for every run

    def root(self, base: str) -> str:
        """The out_root of a recipe's runs: ``<base><variant>`` (:meth:`variant`)."""
        return base + self.variant()

    def variant(self) -> str:
        """The suffix of the run and report folders of a try that changes the recipe's runs: ``-<N>ep``
        (epochs), ``-seeds0-1`` (seeds), ``-x<hash>`` (extra overrides of what a run key holds); empty
        at the recipe's own scale. ``stack`` and the extras a key leaves out (threads, device, ...)
        change no result, so they keep the recipe's folders."""
        keyed = sorted(o for o in self.extra if _keyed(o))
        return ((f"-{self.epochs}ep" if self.epochs else "") +
                (f"-seeds{self.seeds.replace(',', '-')}" if self.seeds else "") +
                (f"-x{hashlib.sha1(' '.join(keyed).encode()).hexdigest()[:6]}" if keyed else ""))

    def banner(self) -> str:
        """The first line of every report of a :meth:`variant` try: what it changed."""
        what = ([f"{self.epochs} epochs"] if self.epochs else []) + ([f"seeds {self.seeds}"] if self.seeds else []) + \
            [o for o in self.extra if _keyed(o)]
        return f"NOT THE RECIPE'S SCALE ({self.scale}): a shorter try, {', '.join(what)}" if what else ""

    def common(self) -> list[str]:
        """The overrides every run set of every recipe gets."""
        out = ["progress=false"]
        out += [f"data.root={Path(self.data).resolve()}"] if self.data else []
        out += [f"epochs={self.epochs}"] if self.epochs else []
        out += [f"seeds=[{self.seeds}]"] if self.seeds else []
        out += [] if self.stack else ["stack_seeds=false"]
        return out + list(self.extra)


def _keyed(override: str) -> bool:
    """Whether an override sets something a run key holds (:data:`gatelab.core.runs.IDENTITY`, seeds,
    regimes, step sizes, experiment files), i.e. changes which runs a recipe makes."""
    key = override.split("=", 1)[0].lstrip("+~").split(".")[0]
    return key in (*IDENTITY, "seeds", "regimes", "lrs", "experiment")


@dataclass
class Recipe:
    """What a table runs: ``runs`` (one run.py -m command's overrides each, in order), ``figures``
    (``python -m`` commands that train what they need themselves), ``reports`` (``python -m``
    commands rendering the table; ``{command}`` stands for the reproduce command)."""
    name: str
    about: str
    runs: list[list[str]] = field(default_factory=list)
    figures: list[list[str]] = field(default_factory=list)
    reports: list[list[str]] = field(default_factory=list)
    banner: str = ""  # the first line of every report a shorter try renders (Options.banner)
    figure_runs: list[list[str]] = field(default_factory=list)  # the runs the figure commands train, to price


@dataclass
class Definition:
    name: str
    about: str
    scales: tuple
    build: Callable[[Options], Recipe]


REGISTRY: dict[str, Definition] = {}


def recipe(name: str, scales: tuple, about: str):
    """Register ``build(options) -> Recipe`` as recipe ``name`` at ``scales`` (the first is the default)."""
    def register(build):
        REGISTRY[name] = Definition(name, about, tuple(scales), build)
        return build
    return register


def build(name: str, options: Options) -> Recipe:
    d = REGISTRY.get(name)
    if d is None:
        raise ConfigError(f"no recipe {name!r}; recipes: {', '.join(sorted(REGISTRY))}")
    if options.scale not in d.scales:
        raise ConfigError(f"recipe {name} has no scale {options.scale!r}; its scales: {', '.join(d.scales)}")
    bad = bad_option(list(options.extra))
    if bad:
        raise ConfigError(bad)
    r = d.build(options)
    changed = ([f"--epochs {options.epochs}"] if options.epochs else []) + \
        ([f"--seeds {options.seeds}"] if options.seeds else []) + ([] if options.stack else ["--no-stack"]) + \
        list(options.extra)
    if changed and (r.figure_runs or not r.runs):  # the figure commands train or draw their own nets
        raise ConfigError(f"recipe {name} trains inside its figure commands, which take none of {', '.join(changed)}: "
                          f"its --scale picks their settings (scales: {', '.join(d.scales)}), or run a figure "
                          f"command with its own options (python -m {r.figures[0][0]} --help)")
    common = options.common()
    r.runs = [[*rs, *common] for rs in r.runs]
    return _as_variant(r, options.variant(), options.banner())


def _as_variant(r: Recipe, suffix: str, banner: str) -> Recipe:
    """A try that changes the runs (:meth:`Options.variant`) trains into ``<out_root><suffix>`` and renders into
    ``outputs/tries/<report><suffix>`` (git ignores it: a shortened try is never a committed report, issue #57),
    never the recipe's own folders, its reports headed by ``banner``."""
    if not suffix:
        return r

    def own(path: str) -> str:
        return path if path.endswith(suffix) else path + suffix
    r.runs = [[f"out_root={own(o.split('=', 1)[1])}" if o.startswith("out_root=") else o for o in rs] for rs in r.runs]
    def tried(path: str) -> str:
        return own(path).replace(f"{REPORTS}/", f"{TRIES}/", 1) if path.startswith(f"{REPORTS}/") else own(path)
    r.figures, r.reports = ([[tried(a) if i and argv[i - 1] in ("--runs", "--out") else a for i, a in enumerate(argv)]
                             for argv in cmds] for cmds in (r.figures, r.reports))
    r.banner = banner
    return r


def sweeper_params(overrides: list[str]) -> dict:
    """``hydra.sweeper.params`` of the config a run set composes (its +experiment files' sweeps)."""
    from hydra import compose as hydra_compose, initialize_config_dir

    from gatelab.core.config import CONF_DIR, register
    from gatelab.core.runs import register_resolver
    register()
    register_resolver()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=first_point(overrides), return_hydra_config=True)
    return {str(k): str(v) for k, v in (cfg.hydra.sweeper.get("params") or {}).items()}


def expand(run_set: list[str]) -> list[list[str]]:
    """The jobs of ``python run.py -m <run_set>``: each job's overrides."""
    return job_overrides(list(run_set), sweeper_params(run_set))


@dataclass
class Step:
    """One job of a wave: its overrides (``train_prerequisites=false``: an earlier wave trains them),
    the job the planner makes of them, and its runs (:class:`gatelab.launch.plan.RunLeft`)."""
    overrides: list[str]
    job: plan.Job
    runs: list[plan.RunLeft]
    after: frozenset = frozenset()  # the run directories of its prerequisites (an earlier wave trains them)

    @property
    def steps_left(self) -> int:
        return sum(r.steps for r in self.runs)

    def priced(self) -> list[tuple]:
        """What :func:`gatelab.launch.costs.price` takes: (config, net-steps, stack) per run."""
        return [(r.config, r.steps, (id(self), r.stack)) for r in self.runs]


def plan_recipe(r: Recipe, check: bool = True) -> list[list[Step]]:
    """Every job of the recipe in waves, checked (:func:`gatelab.launch.plan.check`: configs, devices,
    FLNPF sources, data files) before anything trains; raises :class:`ConfigError` on the first bad
    job. ``check=False``: compose and validate only (pricing without the data at hand)."""
    jobs = [j for rs in r.runs for j in expand(rs)]
    composed: dict[tuple, object] = {}

    def load(overrides: list[str]):  # each job's config composed once
        key = tuple(o for o in overrides if o != "train_prerequisites=false")
        if key not in composed:
            try:
                composed[key] = compose(list(key))
            except Exception as e:  # noqa: BLE001 - Hydra's and OmegaConf's many kinds, in one line
                raise ConfigError(f"{' '.join(key)}: the config does not compose: {str(e).splitlines()[0]}") from e
        return composed[key]
    out = []
    for wave in plan.waves(jobs, load):
        steps = []
        for overrides in wave:
            built = plan.build(load(overrides))
            if check:
                plan.check(built)
            after = frozenset(str(d) for j in built[:-1] if j.features is None for _, d in j.entries)
            steps.append(Step(overrides, built[-1], plan.runs_left(built[-1]), after))
        out.append(steps)
    return out


def describe(r: Recipe, waves: list[list[Step]], scale: str, table: Optional[dict] = None) -> str:
    """The dry run: the waves and their jobs with what is done and what is left, the cost in time on
    each device of the cost table, then the figure and report commands."""
    table = costs.load() if table is None else table
    lines = [f"recipe {r.name} (scale {scale}): {r.about}"]
    total, n_runs, done = {}, 0, 0
    for i, wave in enumerate(waves, 1):
        lines.append(f"wave {i}: {len(wave)} job(s)" + (" (after wave %d)" % (i - 1) if i > 1 else ""))
        for s in wave:
            states = sorted({r.state.split(",")[0] for r in s.runs})
            price = costs.price(s.priced(), table)
            lines.append(f"  {s.job.name}: {len(s.runs)} run(s) [{', '.join(states)}], "
                         f"{s.steps_left:,} net-steps left, {costs.words(price, table)}")
            for k, v in price.items():
                total[k] = None if v is None or total.get(k, 0.0) is None else total.get(k, 0.0) + v
            n_runs += len(s.runs)
            done += sum(r.steps == 0 for r in s.runs)
    for f in r.figures:
        lines.append(f"figure step (trains the runs it needs itself{'' if r.figure_runs else ', not priced here'}): "
                     f"python -m {' '.join(f)}")
    fig = figure_steps(r)  # composed once: priced here and counted in the total
    if fig:
        price = costs.price([p for s in fig for p in s.priced()], table)
        left = [x for s in fig for x in s.runs]
        lines.append(f"  its runs: {len(left)} run(s) [{', '.join(sorted({x.state.split(',')[0] for x in left}))}], "
                     f"{sum(s.steps_left for s in fig):,} net-steps left, one after another: {costs.words(price, table)}")
        for k, v in price.items():
            total[k] = None if v is None or total.get(k, 0.0) is None else total.get(k, 0.0) + v
        n_runs += len(left)
        done += sum(x.steps == 0 for x in left)
    for rep in r.reports:
        lines.append("report: python -m " + " ".join(a.replace("{command}", "'<this command>'") for a in rep))
    steps = sum(s.steps_left for w in waves for s in w) + sum(s.steps_left for s in fig)
    lines.append(f"total: {sum(map(len, waves))} jobs, {n_runs} runs ({done} done), {steps:,} net-steps left: "
                 f"{costs.words(total, table, long=True)}")
    bf16 = bf16_instead([p for w in waves for s in w for p in s.priced()] + [p for s in fig for p in s.priced()], table)
    if bf16:
        lines.append(f"at precision=bf16 instead of its fp32 conv runs (EXTRA=precision=bf16; other runs, a run key "
                     f"of its own): {costs.words(bf16, table, long=True)}")
    return "\n".join(lines)


def bf16_instead(items: list[tuple], table: dict) -> Optional[dict]:
    """The price of ``items`` with their fp32 conv runs in bf16 (the paper scale keeps its documented fp32:
    what the faster arithmetic would cost), on the entries that measured a bf16 step; None when no run or no
    entry would change."""
    from omegaconf import OmegaConf
    swap = [(OmegaConf.merge(c, {"precision": "bf16"}) if c.arch.get("conv_channels") and
             str(c.get("precision") or "fp32") == "fp32" and not c.get("amp") else c, n, k) for c, n, k in items]
    if all(a[0] is b[0] for a, b in zip(items, swap)):
        return None
    measured = {d: e for d, e in table.items() if isinstance(e, dict) and any(str(k).endswith("@bf16") for k in e)}
    return costs.price(swap, measured) if measured else None


def figure_steps(r: Recipe) -> list[Step]:
    """The runs a recipe's figure commands train themselves (``Recipe.figure_runs``), each its own job
    as ``ensure_run`` trains it, with what is left of it on disk: their price, not checked (a figure's
    FLNPF source is trained by the figure before it). A run listed twice (Figures 7-8's ReLU source is its
    ReLU network where their epochs agree) is priced once."""
    out, seen = [], set()
    for overrides in r.figure_runs:
        job = plan.build(compose(["progress=false", *overrides]))[-1]
        dirs = {str(d) for _, d in job.entries}
        if not dirs <= seen:
            seen |= dirs
            out.append(Step(list(overrides), job, plan.runs_left(job)))
    return out


def _call(argv: list[str]) -> int:
    print("$ " + " ".join(argv), flush=True)
    return subprocess.run(argv).returncode


def run_local(waves: list[list[Step]], jobs: int = 1) -> list[str]:
    """Train the waves here in order, ``jobs`` processes at a time (one CPU thread each when several);
    each job is ``python run.py <its overrides>``. Returns the jobs that failed (their dependents
    then fail in one line, naming them); a stopped job's name ends in :data:`STOPPED`."""
    failed = []
    progress = Progress([s for w in waves for s in w])
    for wave in waves:
        argvs = [[*RUN, *s.overrides, *(["threads=1"] if jobs > 1 else [])] for s in wave]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            codes = list(pool.map(progress.call, wave, argvs))
        failed += [s.job.name + (STOPPED if code in INTERRUPTED else "") for s, code in zip(wave, codes) if code != 0]
    return failed


class Progress:
    """``reproduce``'s own lines between its jobs: job k of N starting, and when one ends, the time left, priced
    from the plan on the first cost entry, in :func:`gatelab.launch.costs.for_machine`'s order (this machine's
    first), that prices every job (an entry learned from this machine's runs of other networks prices none of a new
    one's), and scaled by how the jobs done so far ran against their price."""

    def __init__(self, steps: list):
        import threading
        self.steps, self.lock, self.started, self.done = steps, threading.Lock(), 0, []
        table = costs.load()
        self.entry, self.price = None, {}
        for name, _ in costs.for_machine(table):
            price = {id(s): costs.price(s.priced(), {name: table[name]})[name] for s in steps}
            if all(p is not None for p in price.values()):
                self.entry, self.price = name, price
                break

    def call(self, step, argv: list[str]) -> int:
        import time
        with self.lock:
            self.started += 1
            print(f"reproduce: job {self.started} of {len(self.steps)}: {step.job.name}", flush=True)
        t0 = time.time()
        code = _call(argv)
        with self.lock:
            self.done.append((id(step), time.time() - t0))
            print(f"reproduce: {len(self.done)} of {len(self.steps)} jobs done; {self.left()}", flush=True)
        return code

    def left(self) -> str:
        if not self.entry:
            return "time left not priced (no cost entry prices these jobs)"
        done = {i for i, _ in self.done}
        priced = sum(self.price[i] for i in done)
        scale = sum(t for _, t in self.done) / priced if priced > 0 else 1.0
        rest = sum(p for i, p in self.price.items() if i not in done) * scale
        return f"about {costs.duration(rest)} left (priced on {self.entry}, x{scale:.2f} as measured so far)"


INTERRUPTED = (130, 143)  # run.py's exit after Ctrl-C or SIGTERM: progress saved, the runs recorded as interrupted
STOPPED = " (stopped: the same command resumes it)"


PAGE = ["gatelab", "page"]  # the page of what reproduces, outputs/reports/README.md (gatelab.papers.page)


def run_figures_and_reports(r: Recipe, command: str) -> list[str]:
    """The figure commands, then the reports (``{command}`` replaced), then, when one of them wrote under
    ``outputs/reports``, the page of what reproduces; the ones that failed."""
    failed = []
    for argv in r.figures + r.reports:
        full = [a.replace("{command}", command) for a in argv]
        if _call([sys.executable, "-m", *full]) != 0:
            failed.append(" ".join(full))
        elif r.banner and "--out" in full:
            for md in Path(full[full.index("--out") + 1]).glob("*.md"):
                text = md.read_text()
                md.write_text(text if text.startswith(f"**{r.banner}**") else f"**{r.banner}**\n\n{text}")
    outs = [argv[argv.index("--out") + 1] for argv in r.figures + r.reports if "--out" in argv]
    if not failed and not r.banner and any(str(o).startswith("outputs/reports/") for o in outs):
        if _call([sys.executable, "-m", *PAGE]) != 0:
            failed.append(" ".join(PAGE))
    return failed
