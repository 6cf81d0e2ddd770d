"""Multirun bookkeeping: refuse sweeps that would run one run twice, and summarise each sweep.

Hydra callback (``hydra.callbacks.sweep`` in conf/config.yaml). Every job of a sweep appends one
line to ``<out_root>/sweeps/<sweep id>.jsonl`` (:func:`record`); at the end the callback prints and
saves the summary: completed / resumed / skipped / failed / diverged, with each failure's error
(the traceback is in that run's results.json).
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any, Optional

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from gatelab.core.config import ConfigError

log = logging.getLogger("gatelab")
ENV_SWEEP = "GATELAB_SWEEP"
OUTCOMES = ("completed", "resumed", "skipped", "diverged", "failed")


def _journal(out_root: str, sweep_id: str) -> Path:
    return Path(out_root) / "sweeps" / f"{sweep_id}.jsonl"


def record(out_root: str, run_dir: Path, outcome: str, error: Optional[str] = None) -> None:
    """One line per job of the current sweep (no-op outside a sweep). O_APPEND keeps lines whole."""
    sweep_id = os.environ.get(ENV_SWEEP)
    if not sweep_id:
        return
    path = _journal(out_root, sweep_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"run_dir": str(run_dir), "outcome": outcome, "error": error}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def outcome_of(results: dict) -> str:
    if results.get("skipped"):
        return "skipped"
    if results["status"] == "completed" and results.get("resumed_from_epoch"):
        return "resumed"
    return results["status"]


def _parsed(overrides: list[str], params: Optional[dict] = None) -> list:
    """The command-line overrides, then ``hydra.sweeper.params`` for keys the command line does not
    set (the command line wins), parsed by Hydra."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    given = list(overrides)
    keys = {o.key_or_group for o in parser.parse_overrides(given)}
    given += [f"{k}={v}" for k, v in (params or {}).items() if k not in keys]
    return parser.parse_overrides(given)


def sweep_values(overrides: list[str], params: Optional[dict] = None) -> dict[str, list[str]]:
    """The swept values of each key, from command-line overrides and ``hydra.sweeper.params``."""
    return {o.key_or_group: list(o.sweep_string_iterator()) for o in _parsed(overrides, params)
            if o.is_sweep_override()}


def check_no_duplicates(values: dict[str, list[str]]) -> None:
    for key, vals in values.items():
        dup = sorted(v for v, n in Counter(vals).items() if n > 1)
        if dup:
            raise ConfigError(f"sweep over {key} lists {', '.join(dup)} more than once: the same run would "
                              "run twice in one directory")


def summarise(lines: list[dict]) -> str:
    counts = Counter(line["outcome"] for line in lines)
    out = [f"sweep summary: {len(lines)} runs: " + ", ".join(f"{counts.get(o, 0)} {o}" for o in OUTCOMES)]
    for line in lines:
        if line["outcome"] in ("failed", "diverged"):
            out.append(f"  {line['outcome']}: {line['run_dir']}" + (f": {line['error']}" if line.get("error") else ""))
    return "\n".join(out)


def job_overrides(overrides: list[str], params: Optional[dict] = None) -> list[list[str]]:
    """The override lists of a sweep's jobs (the cartesian product of the swept values, in Hydra's
    order: the last key varies fastest)."""
    jobs = [[]]
    for o in _parsed(overrides, params):
        values = [f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()] if o.is_sweep_override() \
            else [o.input_line]
        jobs = [j + [v] for j in jobs for v in values]
    return jobs


def check_jobs(config: DictConfig, jobs: list[list[str]], describe: bool = False) -> list[str]:
    """Build and check the plan of every job of a sweep (:mod:`gatelab.launch.plan`) before the first
    starts; returns the plans' descriptions if ``describe``, raises :class:`ConfigError` listing
    every bad job."""
    from hydra.core.global_hydra import GlobalHydra

    from gatelab.data.datasets import DataNotFoundError
    from gatelab.launch import plan

    loader = GlobalHydra.instance().config_loader()
    errors, plans = [], []
    for overrides in jobs:
        try:
            cfg = loader.load_sweep_config(config, list(overrides))
            jobs_ = plan.build(cfg)
            plan.check(jobs_)
            if describe:
                plans.append(f"[{' '.join(overrides)}]\n" + plan.describe(jobs_))
        except (ConfigError, DataNotFoundError, FileNotFoundError, ValueError) as e:
            errors.append(f"  {' '.join(overrides)}: {type(e).__name__}: {e}")
    if errors:
        raise ConfigError(f"{len(errors)} of {len(jobs)} sweep jobs are invalid; nothing was started:\n"
                          + "\n".join(errors))
    return plans


class SweepSummary(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Refuse a sweep with a duplicate value or any invalid job before the first job starts;
        ``dry_run=true`` prints every job's plan and starts nothing."""
        params = dict(config.hydra.sweeper.get("params") or {})
        overrides = list(config.hydra.overrides.task)
        try:
            check_no_duplicates(sweep_values(overrides, params))
            jobs = job_overrides(overrides, params)
            plans = check_jobs(config, jobs, describe=bool(config.get("dry_run")))
        except ConfigError as e:  # Hydra turns a callback's exceptions into warnings: stop here
            log.error("%s", e)
            raise SystemExit(2) from None
        if config.get("dry_run"):
            print(f"sweep of {len(jobs)} jobs\n" + "\n".join(plans))
            raise SystemExit(0)
        os.environ[ENV_SWEEP] = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_id = os.environ.pop(ENV_SWEEP, None)
        if not sweep_id:
            return
        path = _journal(config.out_root, sweep_id)
        shared = Path(config.hydra.sweep.dir) / "multirun.yaml"  # Hydra's, overwritten by every sweep: kept per sweep
        if shared.is_file() and path.parent.is_dir():
            shutil.copy2(shared, path.with_suffix(".multirun.yaml"))
        lines = [json.loads(s) for s in path.read_text().splitlines()] if path.is_file() else []
        text = summarise(lines)
        path.with_suffix(".summary.txt").write_text(text + "\n") if path.parent.is_dir() else None
        log.info("%s\n(journal: %s)", text, path)
        if any(line["outcome"] == "failed" for line in lines):  # a sweep with a failed job fails
            raise SystemExit(1)
