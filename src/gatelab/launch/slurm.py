"""SLURM through submitit (``hydra/launcher=cluster``, the launcher class in
``hydra_plugins.gatelab_slurm``): before submitting, check that some node of the partition can hold
one job as requested.

Without the check, a request no node can satisfy (say the default 8 CPUs and 32 GB on a smaller
node) sits in the queue as ``PD (PartitionConfig)`` forever, and nothing says why. With it, the
sweep stops before submitting anything, naming the keys to change.
"""
from __future__ import annotations

import contextlib
import logging
import shutil
import subprocess
import sys
from typing import Optional

from gatelab.core.config import ConfigError
from gatelab.launch import sweep

log = logging.getLogger("gatelab")


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


def job_state(job_id: str) -> str:
    """``JobState`` and ``Reason`` of a job as ``scontrol`` reports them (kept ``MinJobAge`` seconds
    after it ends), without accounting; '?' when it no longer knows the job."""
    try:
        shown = subprocess.run(["scontrol", "-o", "show", "job", str(job_id)], capture_output=True, text=True,
                               timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    fields = dict(f.split("=", 1) for f in shown.split() if "=" in f)
    return f"{fields.get('JobState', '?')} (reason {fields.get('Reason', '?')})" if fields else "?"


def _scontrol(*args: str) -> str:
    try:
        return subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def accounting_enabled() -> bool:
    """Whether ``sacct`` can answer: the cluster stores accounting (slurmdbd)."""
    return "accounting_storage/none" not in _scontrol("show", "config")


def sacct_compat(job_ids: list[str]) -> str:
    """What ``sacct -o JobID,State,NodeList --parsable2 -j <ids>`` prints, from ``scontrol`` (which
    knows a job until ``MinJobAge`` seconds after it ends): for clusters without accounting, where
    submitit would otherwise never learn that a job was cancelled."""
    lines = ["JobID|State|NodeList"]
    for jid in job_ids:
        for line in _scontrol("-o", "show", "job", str(jid)).splitlines():
            f = dict(x.split("=", 1) for x in line.split() if "=" in x)
            array, task = f.get("ArrayJobId"), f.get("ArrayTaskId")
            if array and task and task != "(null)":
                job = f"{array}_[{task}]" if "-" in task or "," in task else f"{array}_{task}"
            else:
                job = f.get("JobId", "")
            lines.append(f"{job}|{f.get('JobState', 'UNKNOWN')}|{f.get('NodeList', '')}")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def report_unfinished_jobs(out_root: str):
    """While a sweep waits for its SLURM jobs: a job that ends without a result (cancelled, killed,
    out of requeues) is recorded in the sweep's journal as failed, with SLURM's state as the reason,
    and the sweep goes on waiting for the others, so that its summary lists every job. On a cluster
    without accounting, submitit polls :func:`sacct_compat` instead of ``sacct``."""
    from hydra.core.utils import JobReturn, JobStatus
    from submitit.core import core, utils
    from submitit.slurm import slurm as submitit_slurm

    real, real_command = core.Job.results, submitit_slurm.SlurmInfoWatcher._make_command
    compat = not accounting_enabled()

    def make_command(watcher):
        command = real_command(watcher)
        if command is None or not compat:
            return command
        ids = [command[i + 1] for i, c in enumerate(command) if c == "-j"]
        return [sys.executable, "-m", "gatelab.launch.slurm", "sacct", *ids]

    def results(job):
        try:
            return real(job)
        except utils.UncompletedJobError as e:
            overrides = list(job.submission().args[0])
            reason = f"SLURM job {job.job_id} ended without a result: {job_state(job.job_id)}; {str(e).splitlines()[0]}"
            log.error("%s (%s)", reason, " ".join(overrides))
            sweep.record(out_root, "job " + " ".join(overrides), "failed", reason)
            return [JobReturn(overrides=overrides, status=JobStatus.COMPLETED, _return_value=None)]

    core.Job.results, submitit_slurm.SlurmInfoWatcher._make_command = results, make_command
    try:
        yield
    finally:
        core.Job.results, submitit_slurm.SlurmInfoWatcher._make_command = real, real_command


if __name__ == "__main__":  # python -m gatelab.launch.slurm sacct <job ids>: see sacct_compat
    if sys.argv[1:2] != ["sacct"]:
        raise SystemExit("usage: python -m gatelab.launch.slurm sacct <job id> ...")
    sys.stdout.write(sacct_compat(sys.argv[2:]))
