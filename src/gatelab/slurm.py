"""SLURM through submitit (``hydra/launcher=cluster``, the launcher class in
``hydra_plugins.gatelab_slurm``): before submitting, check that some node of the partition can hold
one job as requested.

Without the check, a request no node can satisfy (say the default 8 CPUs and 32 GB on a smaller
node) sits in the queue as ``PD (PartitionConfig)`` forever, and nothing says why. With it, the
sweep stops before submitting anything, naming the keys to change.
"""
from __future__ import annotations

import logging
import shutil
import subprocess
from typing import Optional

from .config import ConfigError

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
