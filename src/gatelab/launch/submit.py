"""A whole recipe on SLURM in one call that returns (issues #50, #57), then followed with ``--status``.

``python -m gatelab reproduce <recipe> --slurm`` plans the recipe (:func:`gatelab.launch.recipes.plan_recipe`),
then queues every job of every wave at once through submitit's public executor (``submitit.SlurmExecutor``,
``executor.batch()``): one **job array** per wave and time limit (jobs of a wave whose prices round up to the same
limit), ``array_parallelism`` of its tasks running at once. An array whose jobs need runs that an earlier wave
trains (an FLNPF job's ReLU sources, an IMP round's parent) waits for the arrays that train them
(``--dependency=afterok:<array>``, ``--kill-on-invalid-dep=yes``: cancelled, never left pending, when one of them
fails). Each job's ``--time`` is its price on ``gpu_kind`` (the plan's, :func:`gatelab.launch.costs.price`) times
``time_margin``, plus the signal's lead and a minute to restart, rounded up to a step of :data:`LIMITS` and capped
at ``timeout_min`` (the price unknown: ``timeout_min``). Nothing waits on the login node (facebookresearch/hydra#2479).
The figure commands (which train what they need themselves) are an array of their own.

Each task runs :class:`Command`, a ``submitit.helpers.Checkpointable``: its command (run.py with the job's overrides)
as a child process. SLURM's warning signal (``--signal=USR2@signal_delay_s``) reaches submitit, which calls
:meth:`Command.checkpoint`: the child stops its runs at a checkpoint (SIGTERM) and the job is requeued to resume
them. submitit counts a signal near the time limit against ``max_num_timeout`` and a preemption not at all, so a
preempted job never spends the budget meant for time limits.

The journal, ``outputs/slurm/<recipe>-<scale><variant>/jobs.json``, holds each job's SLURM id (``<array>_<task>``),
its array, time limit, runs and what it waits for. ``reproduce <recipe> --status`` reads it back beside the run
store (each run's results.json) and SLURM (``squeue`` for live jobs; ``sacct``, or ``scontrol`` on a cluster without
accounting, for ended ones), prints each job's state (done, running, pending and why, failed and why, not run
because a prerequisite failed) with the time left priced from the plan, and renders the reports once every run is
done. Running ``--slurm`` again submits only what is neither done nor queued.

The request (partition, account, GPUs, CPUs, memory, time limits, requeues, setup lines) is the SLURM launcher's:
``conf/hydra/launcher/cluster.yaml``, then ``conf/local/site.yaml``'s ``hydra.launcher``, then ``--slurm-set
key=value``, where any other key is an sbatch option (``constraint``, ``gres``, ``exclude``, ``qos``, ...; checked
against ``sbatch --help`` where it answers). It is checked against the partition's nodes before anything is queued
(:func:`gatelab.launch.slurm.check_request`).
"""
from __future__ import annotations

import difflib
import json
import math
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

import yaml

from gatelab.core.config import CONF_DIR, ConfigError
from gatelab.core.results import RESULTS, load_results
from gatelab.launch.slurm import LIVE, check_request, cluster_nodes, signal_window, states

SETTINGS = ("partition", "account", "qos", "gpus_per_node", "cpus_per_task", "mem_gb", "timeout_min",
            "signal_delay_s", "max_num_timeout", "setup", "array_parallelism", "time_margin", "gpu_kind")
RECIPE_ONLY = {"time_margin": 1.5, "gpu_kind": "h100"}  # the recipe path's keys (the sweep launcher's schema lacks them)
LIMITS = (2, 5, 10, 15, 30, 45, 60, 90, 120, 180, 240, 360, 480, 720, 960, 1440, 2880)  # minutes: the arrays' steps


def sbatch_options() -> Optional[set[str]]:
    """The long options ``sbatch --help`` lists (without the dashes); None where it does not answer."""
    if shutil.which("sbatch") is None:
        return None
    try:
        p = subprocess.run(["sbatch", "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    found = set(re.findall(r"--([a-z][a-z0-9-]*)", p.stdout))
    return found or None


def settings(sets: Optional[list[str]] = None, known: Optional[set[str]] = None) -> dict:
    """The SLURM request: the launcher config, then the site file's ``hydra.launcher``, then ``sets`` (key=value).
    A key outside :data:`SETTINGS` is an sbatch option (``extra``, dashes or underscores), refused when ``sbatch
    --help`` (``known``) does not list it."""
    from omegaconf import OmegaConf
    base = OmegaConf.load(CONF_DIR / "hydra" / "launcher" / "cluster.yaml")
    out = {k: base.get(k, RECIPE_ONLY.get(k)) for k in SETTINGS}  # resolves each key's ${oc.env:...} alone
    out["extra"] = {}
    site = CONF_DIR / "local" / "site.yaml"
    if site.is_file():
        launcher = (OmegaConf.load(site).get("hydra") or {}).get("launcher") or {}
        out.update({k: v for k, v in OmegaConf.to_container(launcher, resolve=True).items() if k in SETTINGS})
    known = sbatch_options() if known is None else known
    for s in sets or []:
        key, eq, value = s.partition("=")
        if not eq or not key:
            raise ConfigError(f"--slurm-set {s}: give key=value (a key of {', '.join(SETTINGS)}, or an sbatch option)")
        if key in SETTINGS:
            out[key] = yaml.safe_load(value)
            continue
        option = key.replace("_", "-")
        if known is not None and option not in known:
            near = difflib.get_close_matches(option, sorted(known), n=1)
            raise ConfigError(f"--slurm-set {s}: sbatch has no option --{option}"
                              + (f" (did you mean --{near[0]}?)" if near else "") + f"; the launcher's keys: "
                              f"{', '.join(SETTINGS)}")
        out["extra"][option] = yaml.safe_load(value)
    out["setup"] = list(out.get("setup") or [])
    return out


def minutes(seconds: Optional[float], params: dict) -> int:
    """A job's ``--time``: its price (``seconds`` on ``gpu_kind``) times ``time_margin``, plus the signal's lead and a
    minute to restart, rounded up to a step of :data:`LIMITS`, at most ``timeout_min``; unpriced: ``timeout_min``."""
    cap = int(params.get("timeout_min") or LIMITS[-1])
    if seconds is None:
        return cap
    need = seconds * float(params.get("time_margin") or 1.5) / 60 + float(params.get("signal_delay_s") or 0) / 60 + 1
    return min(cap, next((m for m in LIMITS if m >= need), math.ceil(need)))


class Command:
    """One job's work on a node: ``argv`` (run.py with its overrides, or a figure command) from ``cwd``, as a child
    process. Checkpointable as submitit reads it (a ``checkpoint`` method, as ``submitit.helpers.Checkpointable``'s):
    on SLURM's warning signal, submitit calls :meth:`checkpoint`, which stops the child's runs at a checkpoint
    (SIGTERM) and hands submitit the same command to requeue."""

    def __init__(self, argv: list[str], cwd: str):
        self.argv, self.cwd = [str(a) for a in argv], str(cwd)
        self._child: Optional[subprocess.Popen] = None

    def __getstate__(self):
        return {"argv": self.argv, "cwd": self.cwd}

    def __setstate__(self, state):
        self.argv, self.cwd, self._child = state["argv"], state["cwd"], None

    def __call__(self) -> int:
        # SLURM signals every process of the step: the child ignores USR2 (submitit's, in this process, decides)
        self._child = child = subprocess.Popen(self.argv, cwd=self.cwd,
                                               preexec_fn=lambda: signal.signal(signal.SIGUSR2, signal.SIG_IGN))
        waiter = threading.Thread(target=child.wait, daemon=True)  # this thread stays free for submitit's handler
        waiter.start()
        while waiter.is_alive():
            waiter.join(1.0)
        if child.returncode:
            raise RuntimeError(f"{' '.join(self.argv)} exited with {child.returncode}")
        return 0

    def checkpoint(self, *args, **kwargs):
        import submitit
        child = self._child
        if child is not None and child.returncode is None:
            child.terminate()  # run.py: stop at the next step, save, record "interrupted"
            while child.returncode is None:
                time.sleep(0.2)
        return submitit.helpers.DelayedSubmission(Command(self.argv, self.cwd))


@dataclass
class Entry:
    """One submitted job of the journal."""
    name: str  # the plan's job name, or "figure: <command>"
    wave: int  # 0 for a figure command
    argv: list[str]
    runs: list[str]  # its run directories (none for a figure command)
    job_id: str = ""  # "<array>_<task>"; "" when nothing was submitted (its runs were done)
    after: list[str] = field(default_factory=list)  # the job or array ids it waits for (afterok)
    submitted: str = ""
    array: str = ""  # its job array's id
    minutes: int = 0  # its --time
    price_s: Optional[float] = None  # its price on gpu_kind, seconds (None: not priced)


def journal_dir(recipe: str, scale: str, variant: str = "") -> Path:
    return Path("outputs") / "slurm" / f"{recipe}-{scale}{variant}"


def load_journal(folder: Path) -> list[Entry]:
    p = Path(folder) / "jobs.json"
    return [Entry(**e) for e in json.loads(p.read_text())] if p.is_file() else []


def _done(d: str) -> bool:
    res, _ = load_results(Path(d) / RESULTS)
    return res is not None and res.get("status") == "completed"


def _executor(folder: Path, params: dict, name: str, limit: int, after: list[str]):
    """submitit's SLURM executor for one array: the request, its time limit, the arrays it waits for."""
    import submitit
    ex = submitit.SlurmExecutor(folder=str(Path(folder) / "logs" / "%j"), max_num_timeout=int(params.get("max_num_timeout") or 0))
    extra = {"requeue": True, **params.get("extra", {})}
    if after:
        extra.update({"dependency": "afterok:" + ":".join(after), "kill-on-invalid-dep": "yes"})
    ex.update_parameters(
        job_name=name, time=int(limit), cpus_per_task=int(params.get("cpus_per_task") or 1),
        gpus_per_node=int(params["gpus_per_node"]) if params.get("gpus_per_node") else None,
        mem=f"{int(float(params['mem_gb']) * 1024)}M" if params.get("mem_gb") else None,
        partition=params.get("partition") or None, account=params.get("account") or None,
        qos=params.get("qos") or None, signal_delay_s=int(params.get("signal_delay_s") or 90),
        array_parallelism=int(params.get("array_parallelism") or 256), setup=list(params.get("setup") or []),
        stderr_to_stdout=True, additional_parameters=extra)
    return ex


def _prices(waves: list, params: dict) -> dict[int, Optional[float]]:
    """{id(step): seconds on ``gpu_kind``} from the plan (:func:`gatelab.launch.costs.price`)."""
    from gatelab.launch import costs
    table = costs.load(runs=None)
    kind = str(params.get("gpu_kind") or "h100")
    if kind not in table:
        raise ConfigError(f"gpu_kind={kind}: no such entry in conf/costs.yaml ({', '.join(table)})")
    entry = {kind: table[kind]}
    return {id(s): costs.price(s.priced(), entry)[kind] for w in waves for s in w}


def submit(recipe_name: str, waves: list, figures: list[list[str]], folder: Path, params: dict) -> list[Entry]:
    """Queue every job not done and not already queued, as one job array per wave and time limit, each array after
    the arrays that train its prerequisites; write the journal and return it. ``waves``:
    :func:`gatelab.launch.recipes.plan_recipe`'s."""
    if shutil.which("sbatch") is None:
        raise ConfigError("--slurm needs SLURM's sbatch on the PATH (a cluster's login node)")
    from gatelab.launch.recipes import RUN
    check_request(params, cluster_nodes(params.get("partition")))
    folder = Path(folder)
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    before = {e.name: e for e in load_journal(folder)}
    live = states([e.job_id for e in before.values() if e.job_id])
    prices = _prices(waves, params)
    todo = [(i, s.job.name, [*RUN, *s.overrides], [str(r.dir) for r in s.runs], s.after, prices[id(s)])
            for i, w in enumerate(waves, 1) for s in w]
    todo += [(0, "figure: " + " ".join(f), [sys.executable, "-m", *f], [], frozenset(), None) for f in figures]
    out, by_run, arrays = [], {}, {}
    for wave, name, argv, runs, needs, price in todo:
        e = Entry(name, wave, argv, runs, price_s=price)
        old = before.get(name)
        if runs and all(_done(d) for d in runs):
            pass  # nothing to train: no job, nothing waits for it
        elif old and old.job_id and live.get(old.job_id, ("",))[0] in LIVE:
            e.job_id, e.after, e.submitted, e.array, e.minutes = old.job_id, old.after, old.submitted, old.array, \
                old.minutes  # queued already
        else:
            e.minutes = minutes(price, params)
            arrays.setdefault((wave, e.minutes), []).append((e, needs))
        out.append(e)
        if e.job_id:
            by_run.update({d: e.job_id for d in runs})
    for (wave, limit), group in sorted(arrays.items()):  # earlier waves first: their ids are what later ones wait for
        after = sorted({by_run[d] for _, needs in group for d in needs if d in by_run})
        warning = signal_window({**params, "timeout_min": limit})
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
        ex = _executor(folder, params, f"gatelab:{recipe_name}:w{wave}:{limit}m", limit, after)
        with ex.batch():
            jobs = [ex.submit(Command(e.argv, str(Path.cwd()))) for e, _ in group]
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        for (e, _), job in zip(group, jobs):
            e.job_id, e.array, e.after, e.submitted = str(job.job_id), str(job.job_id).split("_")[0], after, stamp
            by_run.update({d: e.array for d in e.runs})
    (folder / "jobs.json").write_text(json.dumps([asdict(e) for e in out], indent=1) + "\n")
    return out


@dataclass
class Status:
    entry: Entry
    state: str  # done | running | pending | failed | not run | lost
    why: str = ""


def status(entries: list[Entry]) -> list[Status]:
    """Each journal entry's state, from its runs' results.json first (a completed run is done whatever SLURM
    says), then SLURM's: ``not run`` for a job cancelled because a job it waits for failed."""
    known = states([e.job_id for e in entries])
    waiting = {x for e in entries if e.job_id and not (e.runs and all(_done(d) for d in e.runs))
               for x in (e.job_id, e.array)}  # jobs and arrays not done: what a pending job may wait for
    failed_ids = set()
    out = []
    for e in entries:
        runs = [load_results(Path(d) / RESULTS)[0] for d in e.runs]
        bad = [f"{Path(d).name}: {r['status']}" for d, r in zip(e.runs, runs) if r and r.get("status") in ("failed", "diverged")]
        st, why = known.get(e.job_id, ("", ""))
        if e.runs and all(_done(d) for d in e.runs):
            s = Status(e, "done")
        elif not e.job_id:
            s = Status(e, "done" if not e.runs else "lost", "" if not e.runs else "not submitted and not completed")
        elif st == "PENDING" and "Never" not in why and ("Dependency" in why or set(e.after) & waiting):
            s = Status(e, "pending", f"waits for {', '.join(e.after)}")
        elif st in ("PENDING", "REQUEUED", "REQUEUE_HOLD", "CONFIGURING", "SUSPENDED"):
            s = Status(e, "pending", f"SLURM {st} ({why})" if why and why != "None" else f"SLURM {st}")
        elif st in ("RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING"):
            s = Status(e, "running", f"SLURM job {e.job_id}")
        elif st == "COMPLETED" and not e.runs:
            s = Status(e, "done")
        elif (st == "CANCELLED" or "DependencyNeverSatisfied" in why) and set(e.after) & failed_ids:
            s = Status(e, "not run", f"a job it waits for failed ({', '.join(sorted(set(e.after) & failed_ids))})")
        elif st or bad:
            s = Status(e, "failed", "; ".join(bad + ([f"SLURM {st} ({why})"] if st else [])))
        else:
            s = Status(e, "lost", f"SLURM no longer knows job {e.job_id} and its runs are not completed")
        if s.state in ("failed", "not run", "lost"):
            failed_ids |= {e.job_id, e.array} - {""}  # a job that waits on the array waits on each of its tasks
        out.append(s)
    return out


def status_text(got: list[Status], price_left: str = "") -> str:
    """The ``--status`` lines: a count per state, then each job not done, with why."""
    from collections import Counter
    n = Counter(s.state for s in got)
    head = ", ".join(f"{n[k]} {k}" for k in ("done", "running", "pending", "failed", "not run", "lost") if n[k])
    lines = [f"{len(got)} jobs: {head}" + (f"; {price_left}" if price_left else "")]
    for s in got:
        if s.state != "done":
            lines.append(f"  {s.state:8s} {s.entry.name}" + (f" [job {s.entry.job_id}]" if s.entry.job_id else "")
                         + (f": {s.why}" if s.why else ""))
    return "\n".join(lines)
