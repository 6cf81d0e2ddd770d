"""gatelab's command: ``gatelab run [dataset=..] [arch=..] [regime=..] [optimizer=..] [key=value ..]`` (``python run.py ...`` in a checkout).

A command becomes a plan of jobs (:mod:`gatelab.launch.plan`): the runs it asks for, stacked, after
their prerequisites (an FLNPF source, an earlier IMP round, a feature cache). The whole plan is
checked before anything trains; ``--dry-run`` prints it. Each run writes ``results.json`` and
``ckpt/`` into ``outputs/runs/<cell>/<regime>/seed<k>-<hash>``; a completed run is skipped, an
unfinished one resumes. Sweep with ``-m``. See README.md.
"""
import sys
from pathlib import Path

from gatelab.core import early_stop

_EARLY = early_stop.install()

import logging  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from hydra.types import RunMode  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from gatelab.core.checkpoints import DiskFull  # noqa: E402
from gatelab.core.config import ConfigError, register  # noqa: E402
from gatelab.core.runs import register_resolver  # noqa: E402
from gatelab.core.commands import problem  # noqa: E402
from gatelab.data.datasets import DataNotFoundError  # noqa: E402
from gatelab.launch import plan  # noqa: E402
from gatelab.launch.sweep import outcome_of, record  # noqa: E402
from gatelab.training.stops import Interrupted  # noqa: E402

register()
register_resolver()
log = logging.getLogger("gatelab")


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig):
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    own_log = Path(hc.runtime.output_dir) / f"{hc.job.name}.log"  # Hydra's log of this attempt (appended)
    start = own_log.stat().st_size if own_log.is_file() else 0
    if not (cfg.seeds or cfg.regimes or cfg.lrs or cfg.run_dir):  # a single run lives in Hydra's output dir
        cfg.run_dir = hc.runtime.output_dir  # (the run key's directory unless hydra.run.dir says otherwise)
    try:
        jobs = plan.build(cfg)
        plan.check(jobs)
    except (ConfigError, DataNotFoundError, FileNotFoundError) as e:
        print(f"gatelab: {e}", file=sys.stderr)  # the one format of a mistake (run.py, python -m gatelab)
        if multirun:  # the sweep checked every job before the first started: only a race gets here
            record(cfg.out_root, Path(cfg.out_root), "failed", f"{type(e).__name__}: {e}")
            return None
        _as_it_was(own_log, start)
        _remove_hydra_only_dir(Path(hc.runtime.output_dir), Path(cfg.out_root))
        sys.exit(2)
    if cfg.dry_run:
        print(plan.banner(jobs))
        if not multirun:  # a plan leaves nothing on disk
            _remove_hydra_only_dir(Path(hc.runtime.output_dir), Path(cfg.out_root))
        return None
    if not _record(hc, cfg, jobs):  # every run finished: skipped, and its folder left as it was (issue #56)
        _as_it_was(own_log, start)
        print(plan.banner(jobs))
        for job in jobs:
            for _, d in job.entries:
                record(cfg.out_root, Path(d), "skipped")
                print(f"{d}: finished already; skipped (force=true reruns it)")
        return None
    log.info("%s", plan.banner(jobs))
    try:
        results = plan.execute(jobs)
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM while training (gatelab.training.stops)
        by, code = (e.by, e.code) if isinstance(e, Interrupted) else ("Ctrl-C", 130)
        saved = e.saved if isinstance(e, Interrupted) else "nothing was training"
        log.error("stopped by %s: %s; the runs are recorded as interrupted and the same command resumes them",
                  by, saved)
        _log_where_it_trained(own_log, start, jobs)
        _silence_closed_streams()
        sys.exit(code)
    except Exception as e:
        for job in jobs:
            for _, d in job.entries:
                record(cfg.out_root, d, "failed", f"{type(e).__name__}: {e}")
        if multirun:  # recorded in results.json and the sweep journal; the other jobs go on
            log.exception("job failed; the sweep goes on")
            return None
        _log_where_it_trained(own_log, start, jobs)
        if isinstance(e, DiskFull):  # recorded as failed with the file and the free space; its rerun resumes
            log.error("stopped: %s; the runs are recorded as failed and the same command resumes them from "
                      "their last checkpoint once there is space", e.strerror)
            sys.exit(1)
        raise
    for d, res in results.items():
        record(cfg.out_root, Path(d), outcome_of(res))
        log.info("%s: status %s, best test acc %s (epoch %s)", d, res["status"], res["best_test_acc"], res["best_epoch"])
    _log_where_it_trained(own_log, start, jobs)
    return {d: res["best_test_acc"] for d, res in results.items()}


def _log_where_it_trained(own_log: Path, start: int, jobs: list) -> None:
    """This attempt's lines of Hydra's log (plan, epochs, the stop or the failure), appended to the
    ``run.log`` of every other run folder of the plan that holds a run (a prerequisite it trained), so
    each attempt stays readable where the training happened, whatever becomes of Hydra's folder."""
    try:
        for h in logging.getLogger().handlers:
            h.flush()
        with open(own_log, "rb") as f:
            f.seek(start)
            text = f.read()
    except OSError:
        return
    for job in jobs:
        for _, d in job.entries:
            d = Path(d)
            if text and d.resolve() != own_log.parent.resolve() and (d / "results.json").is_file():
                with open(d / "run.log", "ab") as f:
                    f.write(f"--- this attempt was logged in {own_log.parent} too ---\n".encode() + text)


def _silence_closed_streams() -> None:
    """Ctrl-C on ``run.py ... | tee log`` ends the reader too: a write to the closed pipe must not
    turn the stop into a traceback (or Python's exit code 120), so such a stream goes to /dev/null."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def _remove_hydra_only_dir(directory: Path, out_root: Path) -> None:
    """A rejected command or a plan leaves no run directory: remove Hydra's output directory when it
    holds only Hydra's own files (.hydra/, run.log), and the parents it emptied, up to ``out_root``."""
    directory, out_root = directory.resolve(), out_root.resolve()
    if not directory.is_dir() or any(p.name not in (".hydra", "run.log") for p in directory.iterdir()):
        return
    shutil.rmtree(directory)
    for parent in directory.parents:
        if parent == out_root or not parent.is_relative_to(out_root) or any(parent.iterdir()):
            break
        parent.rmdir()
    if out_root.is_dir() and not any(out_root.iterdir()):
        out_root.rmdir()


def _argv_dry_run(argv: list[str]) -> list[str]:
    """``--dry-run`` is ``dry_run=true``; a plan writes no Hydra files (.hydra/, run.log) into the run
    directories it names, whose own .hydra/ records the command that trained them."""
    argv = [("dry_run=true" if a == "--dry-run" else a) for a in argv]
    # lightning-hydra-template's habit, experiment=NAME, is the +experiment=NAME this config appends (issue #57)
    argv = [("+" + a if a.startswith("experiment=") else a) for a in argv]
    if any(a.startswith("seed=") for a in argv) and not any(a.startswith("seeds=") for a in argv):
        argv += ["seeds=null"]  # seed=K on the command line wins over an experiment's seeds (a sweep over seed)
    if "dry_run=true" in argv:
        argv += ["hydra/job_logging=stdout"]
    if not any(a.startswith(("hydra.output_subdir=", "--cfg", "-c")) for a in argv):
        argv += ["hydra.output_subdir=null"]  # .hydra/ is written by :func:`_record`, only where a run trains
    return argv


def _as_it_was(log_file: Path, size: int) -> None:
    """Hydra's log of this attempt cut back to ``size``: a command refused or with nothing to train leaves the run
    folder's bytes unchanged."""
    if log_file.is_file() and log_file.stat().st_size > size:
        with open(log_file, "r+b") as f:
            f.truncate(size)


def _record(hc, cfg, jobs: list) -> bool:
    """Hydra's record of the command (``.hydra/config.yaml``, ``overrides.yaml``, ``hydra.yaml``) in the run
    folder, written only when the plan trains something: a refused command, a plan or a skipped rerun leaves a
    run folder's bytes as they were (issue #56)."""
    from omegaconf import OmegaConf
    forced = any(c.get("force") for job in jobs for c, _ in job.entries)  # force=true retrains a finished run
    if not forced and not any(r.steps for job in jobs if job.features is None for r in plan.runs_left(job)):
        return False
    d = Path(hc.runtime.output_dir) / ".hydra"
    d.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, d / "config.yaml")
    OmegaConf.save(OmegaConf.create(list(hc.overrides.task)), d / "overrides.yaml")
    OmegaConf.save(OmegaConf.create({"hydra": OmegaConf.to_container(hc, resolve=False)}), d / "hydra.yaml")
    return True


def entry(argv: list[str]) -> None:
    """``python run.py ARGS`` and ``gatelab run ARGS``: ``--dry-run`` as ``dry_run=true``, a mistake refused in one
    line before Hydra starts, then Hydra's main with the package's own configs."""
    sys.argv = _argv_dry_run([sys.argv[0], *argv])
    bad = problem(sys.argv[1:])
    if bad:
        print(f"gatelab: {bad}", file=sys.stderr)
        sys.exit(2)
    early_stop.release(_EARLY)
    main()
