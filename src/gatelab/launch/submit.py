"""A whole recipe on SLURM in one call that returns (issue #50), then followed with ``--status``.

``python -m gatelab reproduce <recipe> --slurm`` plans the recipe (:func:`gatelab.launch.recipes.plan_recipe`),
then submits every job of every wave at once with ``sbatch``: a job that needs runs an earlier wave trains (an
FLNPF job's ReLU sources, an IMP round's parent) waits for the jobs that train them through a dependency
(``afterok``), and ``--kill-on-invalid-dep=yes`` cancels it when one of them fails, so nothing is left pending
for ever. Nothing waits on the login node (a known Hydra problem: facebookresearch/hydra#2479): the command
returns once everything is queued. The figure commands (which train what they need themselves) are jobs of
their own.

The journal, ``outputs/slurm/<recipe>-<scale><variant>/jobs.json``, holds each job's SLURM id, its runs and
what it waits for. ``reproduce <recipe> --status`` reads it back beside the run store (each run's results.json)
and SLURM (``squeue`` for live jobs; ``sacct``, or ``scontrol`` on a cluster without accounting, for ended
ones), prints each job's state (done, running, pending and why, failed and why, not run because a prerequisite
failed) with the time left priced from the plan, and renders the reports once every run is done. Running
``--slurm`` again submits only what is neither done nor queued.

The request (partition, account, GPUs, CPUs, memory, time limit, requeues, setup lines) is the SLURM
launcher's: ``conf/hydra/launcher/cluster.yaml``, then ``conf/local/site.yaml``'s ``hydra.launcher``, then
``--slurm-set key=value``. It is checked against the partition's nodes before anything is queued
(:func:`gatelab.launch.slurm.check_request`). A job nearing its time limit is signalled ``signal_delay_s``
before it (``--signal=B:USR2``), stops its runs at a checkpoint and requeues itself (at most
``max_num_timeout`` times); a preempted job is requeued by SLURM (``--requeue``) and resumes the same way.
"""
from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

import yaml

from gatelab.core.config import CONF_DIR, ConfigError
from gatelab.core.results import RESULTS, load_results

SETTINGS = ("partition", "account", "qos", "gpus_per_node", "cpus_per_task", "mem_gb", "timeout_min",
            "signal_delay_s", "max_num_timeout", "setup")
LIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED", "REQUEUE_HOLD",
        "REQUEUE_FED", "STAGE_OUT", "SIGNALING")


def settings(sets: Optional[list[str]] = None) -> dict:
    """The SLURM request: the launcher config, then the site file's ``hydra.launcher``, then ``sets`` (key=value)."""
    from omegaconf import OmegaConf
    base = OmegaConf.load(CONF_DIR / "hydra" / "launcher" / "cluster.yaml")
    out = {k: base.get(k) for k in SETTINGS}  # resolves each key's ${oc.env:...} alone
    site = CONF_DIR / "local" / "site.yaml"
    if site.is_file():
        launcher = (OmegaConf.load(site).get("hydra") or {}).get("launcher") or {}
        out.update({k: v for k, v in OmegaConf.to_container(launcher, resolve=True).items() if k in SETTINGS})
    for s in sets or []:
        key, _, value = s.partition("=")
        if key not in SETTINGS or not _:
            raise ConfigError(f"--slurm-set {s}: give key=value with a key of {', '.join(SETTINGS)}")
        out[key] = yaml.safe_load(value)
    out["setup"] = list(out.get("setup") or [])
    return out


def script(argv: list[str], params: dict, name: str, logs: Path, cwd: Path) -> str:
    """The batch script of one job: ``argv`` run from ``cwd`` (where the recipe was submitted: its out_roots are
    relative to it); on the time-limit signal its runs stop
    at a checkpoint (run.py's SIGTERM) and the job requeues itself, at most ``max_num_timeout`` times."""
    p = params
    lines = ["#!/bin/bash", f"#SBATCH --job-name={name}", f"#SBATCH --output={logs}/%j.out", "#SBATCH --open-mode=append",
             "#SBATCH --requeue", f"#SBATCH --cpus-per-task={int(p.get('cpus_per_task') or 1)}"]
    lines += [f"#SBATCH --mem={int(float(p['mem_gb']) * 1024)}M"] if p.get("mem_gb") else []
    lines += [f"#SBATCH --time={int(p['timeout_min'])}"] if p.get("timeout_min") else []
    lines += [f"#SBATCH --signal=B:USR2@{int(p['signal_delay_s'])}"] if p.get("timeout_min") and p.get("signal_delay_s") else []
    lines += [f"#SBATCH --gpus-per-node={int(p['gpus_per_node'])}"] if p.get("gpus_per_node") else []
    lines += [f"#SBATCH --{k}={p[k]}" for k in ("partition", "account", "qos") if p.get(k)]
    lines += [*p.get("setup", []), f"cd {shlex.quote(str(cwd))}",
              'stop=""',
              'trap \'stop=1; kill -TERM "$child" 2>/dev/null\' USR2',
              " ".join(shlex.quote(a) for a in argv) + " &",
              "child=$!",
              'while :; do wait "$child"; code=$?; kill -0 "$child" 2>/dev/null || break; done',
              f'if [ -n "$stop" ] && [ "${{SLURM_RESTART_COUNT:-0}}" -lt {int(p.get("max_num_timeout") or 0)} ]; then',
              '  scontrol requeue "$SLURM_JOB_ID"; exit 0', "fi", 'exit "$code"']
    return "\n".join(lines) + "\n"


@dataclass
class Entry:
    """One submitted job of the journal."""
    name: str  # the plan's job name, or "figure: <command>"
    wave: int  # 0 for a figure command
    argv: list[str]
    runs: list[str]  # its run directories (none for a figure command)
    job_id: str = ""  # "" when nothing was submitted (its runs were done)
    after: list[str] = field(default_factory=list)  # the job ids it waits for (afterok)
    submitted: str = ""


def journal_dir(recipe: str, scale: str, variant: str = "") -> Path:
    return Path("outputs") / "slurm" / f"{recipe}-{scale}{variant}"


def load_journal(folder: Path) -> list[Entry]:
    p = Path(folder) / "jobs.json"
    return [Entry(**e) for e in json.loads(p.read_text())] if p.is_file() else []


def _sbatch(path: Path, after: list[str]) -> str:
    dep = [f"--dependency=afterok:{':'.join(after)}", "--kill-on-invalid-dep=yes"] if after else []
    p = subprocess.run(["sbatch", "--parsable", *dep, str(path)], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise ConfigError(f"sbatch {path} failed: {(p.stderr or p.stdout).strip()}")
    return p.stdout.strip().split(";")[0]


def _done(d: str) -> bool:
    res, _ = load_results(Path(d) / RESULTS)
    return res is not None and res.get("status") == "completed"


def submit(recipe_name: str, waves: list, figures: list[list[str]], folder: Path, params: dict) -> list[Entry]:
    """Queue every job not done and not already queued, each after the jobs that train its prerequisites; write the
    journal and return it. ``waves``: :func:`gatelab.launch.recipes.plan_recipe`'s."""
    if shutil.which("sbatch") is None:
        raise ConfigError("--slurm needs SLURM's sbatch on the PATH (a cluster's login node)")
    from gatelab.launch.slurm import check_request, cluster_nodes, signal_window
    check_request(params, cluster_nodes(params.get("partition")))
    warning = signal_window(params)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    folder = Path(folder)
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    before = {e.name: e for e in load_journal(folder)}
    live = states([e.job_id for e in before.values() if e.job_id])
    out, by_run = [], {}
    from gatelab.launch.recipes import RUN
    todo = [(i, s.job.name, [*RUN, *s.overrides], [str(r.dir) for r in s.runs],
             s.after) for i, w in enumerate(waves, 1) for s in w]
    todo += [(0, "figure: " + " ".join(f), [sys.executable, "-m", *f], [], frozenset()) for f in figures]
    for k, (wave, name, argv, runs, needs) in enumerate(todo):
        e = Entry(name, wave, argv, runs)
        old = before.get(name)
        if runs and all(_done(d) for d in runs):
            pass  # nothing to train: no job, nothing waits for it
        elif old and old.job_id and live.get(old.job_id, ("",))[0] in LIVE:
            e.job_id, e.after, e.submitted = old.job_id, old.after, old.submitted  # queued already
        else:
            e.after = sorted({by_run[d] for d in needs if d in by_run})
            path = folder / f"job{k:03d}.sh"
            path.write_text(script(argv, params, f"gatelab:{recipe_name}:{k}", (folder / "logs").resolve(), Path.cwd()))
            e.job_id, e.submitted = _sbatch(path, e.after), time.strftime("%Y-%m-%dT%H:%M:%S")
        if e.job_id:
            by_run.update({d: e.job_id for d in runs})
        out.append(e)
    (folder / "jobs.json").write_text(json.dumps([asdict(e) for e in out], indent=1) + "\n")
    return out


def states(job_ids: list[str]) -> dict[str, tuple[str, str]]:
    """{job id: (state, reason)} from ``squeue`` (live jobs), then ``sacct`` where accounting answers, else
    ``scontrol`` (which knows an ended job for ``MinJobAge`` seconds); a job none knows is left out."""
    ids = [i for i in job_ids if i]
    out: dict[str, tuple[str, str]] = {}
    if not ids or shutil.which("squeue") is None:
        return out
    q = _out(["squeue", "-h", "-j", ",".join(ids), "-o", "%i|%T|%r"])
    for line in q.splitlines():
        i, st, why = (line.split("|") + ["", ""])[:3]
        out[i] = (st, why)
    rest = [i for i in ids if i not in out]
    if rest:
        from gatelab.launch.slurm import accounting_enabled
        if accounting_enabled():
            for line in _out(["sacct", "-n", "-X", "-P", "-j", ",".join(rest), "-o", "JobID,State,Reason"]).splitlines():
                i, st, why = (line.split("|") + ["", ""])[:3]
                out[i] = (st.split()[0] if st else "?", why)
        else:
            for i in rest:
                f = dict(x.split("=", 1) for x in _out(["scontrol", "-o", "show", "job", i]).split() if "=" in x)
                if f.get("JobState"):
                    out[i] = (f["JobState"], f.get("Reason", ""))
    return out


def _out(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


@dataclass
class Status:
    entry: Entry
    state: str  # done | running | pending | failed | not run | lost
    why: str = ""


def status(entries: list[Entry]) -> list[Status]:
    """Each journal entry's state, from its runs' results.json first (a completed run is done whatever SLURM
    says), then SLURM's: ``not run`` for a job cancelled because a job it waits for failed."""
    known = states([e.job_id for e in entries])
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
        elif st in ("PENDING",) and "Dependency" in why and "Never" not in why:
            s = Status(e, "pending", f"waits for job {', '.join(e.after)}")
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
            failed_ids.add(e.job_id)
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
