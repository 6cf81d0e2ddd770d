"""The plan of a command: the jobs it trains, each with its prerequisites, built and checked before
anything trains.

A job is what one process trains at once: a single run, the seeds of ``seeds=[...]`` (stacked), or
a row (``regimes=[...]`` / ``lrs=[...]``, one stack per regime family). Its prerequisites are jobs
too: FLNPF (``regime.source=auto``) needs the ReLU run of its cell and seeds, IMP round k needs
round k-1 (round 0: the dense run), and a CIFAR routing task needs its backbone feature cache.
:func:`build` returns them in order, prerequisites first, a job that a later one repeats only
once; :func:`check` rejects the whole plan on the first bad value; :func:`describe` prints it
(``--dry-run``); :func:`execute` trains what is not done. The local run, joblib and the SLURM
launcher all go through it (:mod:`run`), and a sweep checks every job's plan before the first
starts (:class:`gatelab.launch.sweep.SweepSummary`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Optional

import torch

from gatelab.analyses import pruning
from gatelab.core import checkpoints, machine
from gatelab.core.config import ConfigError
from gatelab.core.validation import validate
from gatelab.core.results import FINAL, RESULTS, check_device, finished_results, load_results, trainer_of
from gatelab.core.runs import job_config, run_dir, seed_configs
from gatelab.data import datasets as data_mod
from gatelab.launch import costs
from gatelab.nets import regimes
from gatelab.training import rows
from gatelab.training.loop import train_entries

log = logging.getLogger("gatelab")


@dataclass
class Job:
    """One process's training: stacks of (config, run directory), trained in order."""
    name: str
    stacks: list[list[tuple[object, Path]]]
    needs: list[str] = field(default_factory=list)  # names of the jobs that must finish first
    features: Optional[object] = None  # a config whose backbone feature cache this job fills (no training)
    delta: list[str] = field(default_factory=list)  # overrides that turn the command into this job
    reused: list[str] = field(default_factory=list)  # prerequisite runs found completed on disk

    @property
    def entries(self) -> list[tuple[object, Path]]:
        return [e for stack in self.stacks for e in stack]


def _name(cfgs: list) -> str:
    c = cfgs[0]
    seeds = ",".join(sorted({str(x.seed) for x in cfgs}, key=int))
    regs = "+".join(dict.fromkeys(x.regime.name + (f"-imp-r{x.imp.round}" if pruning.active(x) else "")
                                  for x in cfgs))
    lrs = ",".join(dict.fromkeys(f"{x.optimizer.lr:g}" for x in cfgs))
    return f"{c.dataset.name}-{c.arch.name}-{c.optimizer.name}-lr{lrs}/{regs} seeds {seeds}"


def _prerequisite(c) -> tuple[Optional[object], list[str]]:
    """(config, overrides) of the run that run ``c`` is made from, or (None, []): the overrides
    turn ``c``'s command into the prerequisite's (a SLURM wave launches it with them)."""
    if regimes.needs_source(c) and c.regime.source == "auto":
        return regimes.relu_twin(c), ["regime=relu"]
    if pruning.active(c):
        r = c.imp.round - 1
        return pruning.parent(c), [f"imp.round={r}"] if r else ["imp.sparsity=null", "imp.round=0"]
    return None, []


def _seeds(cfg) -> list[int]:
    """The seeds a command trains (``seeds``, else ``seed``), refused where they are ambiguous: a single run's
    checks and a row's alike."""
    if cfg.seeds is not None and len(cfg.seeds) == 0:
        raise ConfigError("seeds=[] names no seed: give seeds=[0,1,...] or seed=N")
    seeds = [int(s) for s in cfg.seeds] if cfg.seeds else [int(cfg.seed)]
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds={seeds} lists a seed more than once: the same run would train twice")
    if cfg.seeds and int(cfg.seed) != 0:
        raise ConfigError(f"seeds={seeds} and seed={cfg.seed}: seeds wins (it trains seeds {', '.join(map(str, seeds))});"
                          " give one of the two")
    if cfg.seeds and cfg.get("run_dir"):
        raise ConfigError(f"seeds={seeds} writes each seed to its own run directory; run_dir={cfg.run_dir} cannot be "
                          "set with it (give one seed, or leave run_dir unset)")
    return seeds


def _entries(cfg) -> list[list[tuple[object, Path]]]:
    """The stacks of a command's own job."""
    seeds = _seeds(cfg)
    if cfg.get("regimes") or cfg.get("lrs"):
        return [[(c, run_dir(c)) for _, c in group] for group in rows.row_groups(cfg)]
    base = job_config(cfg)
    cfgs = seed_configs(base, seeds)
    if cfg.seeds and not machine.stack_seeds(cfg):
        return [[(c, run_dir(c))] for c in cfgs]
    if not cfg.seeds and cfg.get("run_dir"):
        return [[(cfgs[0], Path(cfg.run_dir))]]
    return [[(c, run_dir(c)) for c in cfgs]]


def build(cfg) -> list[Job]:
    """The jobs of ``python run.py <cfg>``, prerequisites first."""
    jobs: dict[str, Job] = {}
    _add(Job("", _entries(cfg)), jobs)
    return list(jobs.values())


def _add(job: Job, jobs: dict) -> str:
    """Add ``job`` after the jobs it needs (prerequisite runs that this plan does not train already
    and that are not completed on disk); returns its name."""
    cfgs = [c for c, _ in job.entries]
    job.name = job.name or _name(cfgs)
    own = {str(d) for _, d in job.entries}
    planned = own | {str(d) for j in jobs.values() for _, d in j.entries}
    missing, delta = [], []
    for c in cfgs:
        first, delta = _prerequisite(c)
        if first is None or str(run_dir(first)) in planned:
            continue
        if _completed(run_dir(first)):
            job.reused.append(f"seed {c.seed}: reusing the {_what(delta)} {run_dir(first)}")
        else:
            missing.append(first)
    if missing:
        if not cfgs[0].get("train_prerequisites", True):
            raise ConfigError(f"{_name(missing)} is not completed; this job runs after it (a SLURM wave before "
                              "this one trains it) and does not train it itself")
        prereq = Job("", [[(c, run_dir(c)) for c in missing]], delta=job.delta + delta)
        job.needs.append(_add(prereq, jobs))
    features = next((c for c in cfgs if (c.dataset.get("routing") or {}).get("features")), None)
    if features is not None:
        name = f"features {features.dataset.name} M={features.dataset.routing.M}"
        jobs.setdefault(name, Job(name, [], features=features))
        job.needs.append(name)
    jobs.setdefault(job.name, job)
    return job.name


def _what(delta: list[str]) -> str:
    return "ReLU source run" if delta == ["regime=relu"] else "earlier IMP round"


def _completed(d: Path) -> bool:
    res = finished_results(d)
    return res is not None and res["status"] == "completed"


def check(jobs: list[Job]) -> None:
    """Every run of every job: its config, its device, an explicit FLNPF source, its data file.
    Raises :class:`ConfigError` (or :class:`gatelab.data.datasets.DataNotFoundError`) naming the job."""
    for job in jobs:
        for c, d in job.entries or ([(job.features, None)] if job.features is not None else []):
            try:
                validate(c)
                check_device(str(c.device))
                # a completed run reads no source again: results brought back without checkpoints still plan
                trains = d is None or c.force or not _completed(Path(d))
                if trains and regimes.needs_source(c) and (c.regime.source != "auto"
                                                           or _completed(regimes.relu_source_dir(c))):
                    regimes.check_source(c)  # it exists, agrees with its results.json, is a ReLU net of this arch
                data_mod.check_available(c.dataset.source, c.data.root, c.data.download)
                _check_backbone(c)
            except (ConfigError, FileNotFoundError) as e:
                raise type(e)(f"{e} (job {job.name})") from None


def _check_backbone(c) -> None:
    """A CIFAR routing task's frozen backbone, where its file is present, is the one expected (a missing file may
    not be needed: its features can be cached; loading says what to do then)."""
    routing = c.dataset.get("routing")
    if routing is None or not routing.get("features"):
        return
    from gatelab.data import backbone
    path = data_mod.data_root(c.data.root) / (routing.get("backbone") or backbone.RESNET20_FILE)
    if path.is_file():
        backbone.check_file(path)


def resume_points(stack: list) -> dict[str, Optional[checkpoints.Point]]:
    """What training ``stack`` [(config, run directory)] resumes each unfinished run from: the same
    choice on the same files as the training (:func:`checkpoints.group_resume_point`), read without
    loading the weights."""
    todo = [Path(d) for c, d in stack if c.force or finished_results(d) is None]
    if not todo or stack[0][0].force:
        return {str(d): None for d in todo}
    return dict(zip(map(str, todo), _points(todo)))


def _points(dirs: list[Path]) -> list[Optional[checkpoints.Point]]:
    return checkpoints.group_resume_point([d / checkpoints.CKPT_DIR for d in dirs], checkpoints.group_of(dirs),
                                          peek=True)


def state_of(d: Path, epochs: int, point=False) -> tuple[str, int]:
    """(what is on disk, epochs still to train) for one run directory: its results.json's status and,
    for an unfinished run, the point it resumes from (``point``: from :func:`resume_points`; by
    default this run's own). A malformed results.json is no result: its state names it and why."""
    res, why = load_results(Path(d) / RESULTS)
    if res is not None and res["status"] in FINAL:
        return res["status"], 0
    if point is False:
        point = _points([Path(d)])[0]
    if res is None:
        status = f"{RESULTS} not counted: {why}" if why else "new" if point is None else "stopped"
    else:
        status = trainer_of(d) if res["status"] == "running" else res["status"]
    if point is None:
        return (status if res is None or not res.get("history") else f"{status}, restarts from the start"), epochs
    epoch, batch = point.at
    at = f"epoch {epoch}" + (f", step {batch} of the next" if batch else "")
    return f"{status}, resumes after {at}", epochs - epoch


class RunLeft(NamedTuple):
    """One run of a job as the plan sees it: what is on disk and the optimiser steps left."""
    config: object
    dir: Path
    state: str
    steps: int  # net-steps left: optimiser steps of one net
    stack: int  # the index of the stack it trains in


steps_per_epoch = costs.steps_per_epoch


def _shown(d: Path) -> Path:
    """A run directory as the plan prints it: relative to the working directory when below it (a
    single run's directory comes from Hydra as an absolute path, its prerequisites' from out_root)."""
    try:
        return Path(d).resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return Path(d)


def runs_left(job: Job) -> list[RunLeft]:
    """Each run of a job, with its state and the net-steps it has left."""
    out = []
    for k, stack in enumerate(job.stacks):
        points = resume_points(stack)
        for c, d in stack:
            state, left = state_of(d, int(c.epochs), points.get(str(d)))
            out.append(RunLeft(c, d, state, left * steps_per_epoch(c), k))
    return out


def describe(jobs: list[Job]) -> str:
    """The plan as text: jobs in order, what each needs, its runs and their state, the cost left
    (optimiser steps of one net, summed over nets)."""
    lines, total = [f"plan: {len(jobs)} job(s)"], 0
    for i, job in enumerate(jobs, 1):
        after = f" (after: {'; '.join(job.needs)})" if job.needs else ""
        lines.append(f"{i}. {job.name}{after}")
        if job.features is not None:
            lines.append("   fills the backbone feature cache (no training)")
        for c, d, state, steps, _ in runs_left(job):
            total += steps
            lines.append(f"   {_shown(d)}  [{state}; {steps // max(1, steps_per_epoch(c))} epochs to train]")
    priced = costs.price([(c, steps, (i, k)) for i, job in enumerate(jobs) for c, _, _, steps, k in runs_left(job)],
                         costs.load())
    lines.append(f"cost: {total:,} net-steps left (one optimiser step of one net each): "
                 f"{costs.words(priced)} (estimates: conf/costs.yaml)")
    return "\n".join(lines)


def banner(jobs: list[Job]) -> str:
    """What a command is about to do, before it trains: what trains (dataset, arch, regime,
    optimiser, step size, seeds), where, on which device and precision, its prerequisites and cost."""
    c = next((c for j in jobs for c, _ in j.entries), None)
    if c is None:
        return describe(jobs)
    device = str(c.device)
    if device == "auto":
        device = "auto (cuda)" if torch.cuda.is_available() else "auto (cpu)"
    return f"gatelab: device {device}, precision {machine.precision_of(c)}, out_root {c.out_root}\n" + describe(jobs)


def execute(jobs: list[Job]) -> dict[str, dict]:
    """Train the jobs in order; {run directory: results}. A prerequisite that does not complete stops
    the jobs that need it (recorded as failed, with the reason)."""
    out: dict[str, dict] = {}
    failed: dict[str, str] = {}
    for job in jobs:
        blocked = [n for n in job.needs if n in failed]
        if blocked:
            failed[job.name] = f"prerequisite {blocked[0]} did not complete ({failed[blocked[0]]})"
            raise RuntimeError(f"{job.name}: {failed[job.name]}")
        dependents = [j.name for j in jobs if job.name in j.needs]
        if dependents and job.features is None:
            log.info("%s is %s; training it first (%s needs it)", job.name, _states(job), "; ".join(dependents))
        if job.features is not None:
            log.info("%s: filling the backbone feature cache", job.name)
            data_mod.load(job.features.dataset, job.features.data, "cpu")
            continue
        for line in job.reused:
            log.info("%s", line)
        if job.needs:
            log.info("%s: trains after %s", job.name, "; ".join(job.needs))
        for stack in job.stacks:
            for (_, d), res in zip(stack, train_entries(stack)):
                out[str(d)] = res
        bad = {d: out[str(d)]["status"] for _, d in job.entries if out[str(d)]["status"] != "completed"}
        if bad:
            failed[job.name] = ", ".join(f"{d}: {s}" for d, s in bad.items())
    return out


def _states(job: Job) -> str:
    """What a prerequisite job's runs are on disk, in words: ``missing``, or their states (one each)."""
    points = {k: p for stack in job.stacks for k, p in resume_points(stack).items()}
    states = dict.fromkeys(state_of(d, int(c.epochs), points.get(str(d)))[0] for c, d in job.entries)
    return "missing" if list(states) == ["new"] else "; ".join(states)


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def with_overrides(base: list[str], extra: list[str]) -> list[str]:
    """``base`` with ``extra`` applied: an override of the same key is replaced (a row's
    ``regimes=[...]`` becomes ``regimes=[relu]`` for a ReLU source)."""
    out = list(base)
    for e in extra:
        k = _key(e)
        if k == "regime" and any(_key(o) == "regimes" for o in out):
            e, k = "regimes=[" + e.split("=", 1)[1] + "]", "regimes"
        out = [o for o in out if _key(o) != k] + [e]
    return out


def waves(job_overrides: list[list[str]], load) -> list[list[list[str]]]:
    """The jobs of a sweep in waves, prerequisites first: each wave runs after the one before has
    ended (a SLURM job dependency); a prerequisite that several jobs share runs once. ``load``
    composes a job's config from its overrides. Every job gets ``train_prerequisites=false``: it
    finds its prerequisites done, or fails saying which, instead of training them hidden inside."""
    level: dict[frozenset, int] = {}
    launch: dict[frozenset, list[str]] = {}
    for overrides in job_overrides:
        jobs = build(load(list(overrides)))
        depth: dict[str, int] = {}
        for j in jobs:
            depth[j.name] = 1 + max((depth[n] for n in j.needs), default=-1)
            if j.features is None:
                runs = frozenset(str(d) for _, d in j.entries)  # the same runs: the same job, once
                launch.setdefault(runs, with_overrides(list(overrides), j.delta))
                level[runs] = max(level.get(runs, 0), depth[j.name])
    out: list[list[list[str]]] = [[] for _ in range(1 + max(level.values(), default=0))]
    for runs, lv in level.items():
        out[lv].append([*launch[runs], "train_prerequisites=false"])
    return [w for w in out if w]


def run(cfg) -> dict[str, dict]:
    """What ``python run.py`` does, for code: build, check and execute the plan of ``cfg``."""
    jobs = build(cfg)
    check(jobs)
    return execute(jobs)


def run_seeds(cfg) -> dict[int, dict]:
    """:func:`run`, the results of ``cfg``'s own runs by seed (its prerequisites trained first)."""
    jobs = build(cfg)
    check(jobs)
    out = execute(jobs)
    return {int(c.seed): out[str(d)] for c, d in jobs[-1].entries}
