"""SLURM through submitit's public API (``hydra/launcher=cluster``, the launcher class in
``hydra_plugins.gatelab_slurm``; the recipe path is :mod:`gatelab.launch.submit`): before submitting, check that
some node of the partition can hold one job as requested; while a sweep runs, follow its jobs (:func:`wait_for`).

Without the check, a request no node can satisfy (say the default 8 CPUs and 32 GB on a smaller
node) sits in the queue as ``PD (PartitionConfig)`` forever, and nothing says why. With it, the
sweep stops before submitting anything, naming the keys to change.
"""
from __future__ import annotations

import logging
import shutil
import subprocess
import time
from typing import Optional

from gatelab.core.config import ConfigError
from gatelab.launch import sweep

log = logging.getLogger("gatelab")
LIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED", "REQUEUE_HOLD",
        "REQUEUE_FED", "STAGE_OUT", "SIGNALING")


def cluster_nodes(partition: Optional[str] = None) -> Optional[list[dict]]:
    """The nodes ``sinfo`` reports (for ``partition``, else the default one): cpus, memory (MB) and
    GPUs each. None when ``sinfo`` is absent or fails (no check is made then)."""
    if shutil.which("sinfo") is None:
        return None
    cmd = ["sinfo", "-h", "-N", "-o", "%P|%c|%m|%G"] + (["-p", partition] if partition else [])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    nodes = []
    for line in out.splitlines():
        part, cpus, mem, gres = line.split("|")
        if partition is None and not part.endswith("*"):  # the default partition is marked with *
            continue
        gpus = sum(int(g.split(":")[-1].split("(")[0]) for g in gres.split(",") if g.startswith("gpu"))
        nodes.append({"partition": part.rstrip("*"), "cpus": int(cpus.rstrip("+")),
                      "mem_mb": int(mem.rstrip("+")), "gpus": gpus})
    return nodes


def check_request(params: dict, nodes: Optional[list[dict]]) -> None:
    """Raise :class:`ConfigError` if no node can hold one job as ``params`` (hydra.launcher) asks."""
    if nodes is None:
        return
    partition = params.get("partition") or "the default partition"
    if not nodes:
        raise ConfigError(f"hydra.launcher.partition={params.get('partition')}: SLURM reports no node in {partition}")
    tasks = params.get("tasks_per_node") or 1
    want = {"cpus": (params.get("cpus_per_task") or 1) * tasks, "mem_mb": int((params.get("mem_gb") or 0) * 1024),
            "gpus": params.get("gpus_per_node") or 0}
    if any(all(n[k] >= v for k, v in want.items()) for n in nodes):
        return
    best = {k: max(n[k] for n in nodes) for k in want}
    raise ConfigError(
        f"no node of {partition} can run one job as requested: {want['cpus']} CPUs "
        f"(hydra.launcher.cpus_per_task={params.get('cpus_per_task')} x tasks_per_node={tasks}), "
        f"{want['mem_mb']} MB (mem_gb={params.get('mem_gb')}), {want['gpus']} GPUs (gpus_per_node); the largest "
        f"node has {best['cpus']} CPUs, {best['mem_mb']} MB, {best['gpus']} GPUs. Set these in conf/local/site.yaml "
        "or on the command line (e.g. hydra.launcher.cpus_per_task=1 hydra.launcher.mem_gb=4).")


def signal_window(params: dict) -> Optional[str]:
    """A warning when SLURM's time-limit signal (``signal_delay_s`` before ``timeout_min``) is due in
    a job's first minute: submitit handles it only once the job's pickle has loaded (its imports take
    3-20 s), and a signal before that kills the job (FAILED) instead of requeuing it."""
    timeout, delay = params.get("timeout_min"), params.get("signal_delay_s")
    if not timeout or delay is None or timeout * 60 - delay >= 60:
        return None
    return (f"hydra.launcher.signal_delay_s={delay} with timeout_min={timeout}: SLURM signals each job "
            f"{timeout * 60 - delay} s after it starts; a job still loading then is killed, not requeued. "
            "Leave a minute or more (a longer timeout_min or a shorter signal_delay_s).")


def wait_for(jobs: list, out_root: str, poll_s: float = 2.0, grace_s: float = 30.0) -> list:
    """The Hydra returns of a sweep's submitit jobs (submitit's public ``Job``: ``job_id``, ``paths.result_pickle``,
    ``results()``), waiting on the login node as Hydra's launchers do. A job's state comes from SLURM
    (:func:`states`: ``squeue``, then ``sacct`` or ``scontrol`` where accounting does not
    answer), so a job that ends without a result (cancelled, killed, out of requeues) is seen on any cluster; it is
    recorded in the sweep's journal as failed with SLURM's state as the reason, and the sweep goes on waiting for the
    others, so that its summary lists every job. ``results()`` is called only once a job's result file is there."""
    from hydra.core.utils import JobReturn, JobStatus
    out: dict[int, object] = {}
    ended_at: dict[int, float] = {}
    while len(out) < len(jobs):
        known = states([str(j.job_id) for i, j in enumerate(jobs) if i not in out])
        for i, job in enumerate(jobs):
            if i in out:
                continue
            overrides = list(job.submission().args[0])
            if job.paths.result_pickle.exists():
                try:
                    out[i] = job.results()[0]
                    continue
                except Exception as e:  # the job's own error, or submitit's "timed-out too many times"
                    reason = f"SLURM job {job.job_id} ended without a result: {str(e).splitlines()[0]}"
            else:
                state, why = known.get(str(job.job_id), ("", ""))
                if state in LIVE:
                    ended_at.pop(i, None)
                    continue
                if time.monotonic() - ended_at.setdefault(i, time.monotonic()) < grace_s and state in ("", "COMPLETED"):
                    continue  # its result file may still be on its way (a shared file system)
                reason = f"SLURM job {job.job_id} ended without a result: {state or 'unknown to SLURM'} (reason {why or '?'})"
            log.error("%s (%s)", reason, " ".join(overrides))
            sweep.record(out_root, "job " + " ".join(overrides), "failed", reason)
            out[i] = JobReturn(overrides=overrides, status=JobStatus.COMPLETED, _return_value=None)
        if len(out) < len(jobs):
            time.sleep(poll_s)
    return [out[i] for i in range(len(jobs))]


def states(job_ids: list[str]) -> dict[str, tuple[str, str]]:
    """{job id: (state, reason)} from ``squeue`` (live jobs), then ``sacct`` where accounting answers, else
    ``scontrol`` (which knows an ended job for ``MinJobAge`` seconds); a job none knows is left out."""
    ids = [i for i in job_ids if i]
    out: dict[str, tuple[str, str]] = {}
    if not ids or shutil.which("squeue") is None:
        return out
    q = _out(["squeue", "-h", "-r", "-j", ",".join(ids), "-o", "%i|%T|%r"])  # -r: an array's tasks one a line
    for line in q.splitlines():
        i, st, why = (line.split("|") + ["", ""])[:3]
        out[i] = (st, why)
    rest = [i for i in ids if i not in out]
    if rest:
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


def accounting_enabled() -> bool:
    """Whether ``sacct`` can answer: the cluster stores accounting (slurmdbd)."""
    return "accounting_storage/none" not in _out(["scontrol", "show", "config"])


def _out(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
