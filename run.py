"""gatelab entry point: ``python run.py [dataset=..] [arch=..] [regime=..] [optimizer=..] [key=value ..]``.

One run trains one (dataset, arch, regime, optimizer, seed) and writes ``results.json`` and
``ckpt/`` into its run directory ``outputs/runs/<cell>/<regime>/seed<k>-<hash>``; a run already
completed there is skipped. Sweep with ``-m``. See README.md.
"""
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))  # this checkout's gatelab, whatever is installed

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from hydra.types import RunMode  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from gatelab.config import ConfigError, register  # noqa: E402
from gatelab.data import DataNotFoundError  # noqa: E402
from gatelab.regimes import row_configs  # noqa: E402
from gatelab.runs import register_resolver, run_dir as run_dir_of, seed_run_dirs  # noqa: E402
from gatelab.sweep import outcome_of, record  # noqa: E402
from gatelab.train import train_row, train_runs  # noqa: E402

register()
register_resolver()
log = logging.getLogger("gatelab")


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig):
    hc = HydraConfig.get()
    run_dir = Path(cfg.run_dir or hc.runtime.output_dir)
    multirun = hc.mode == RunMode.MULTIRUN
    if cfg.regimes or cfg.lrs:  # a whole row in one process
        return row(cfg, multirun)
    # seeds=[...]: the seeds train together, each into the run directory a single run of it would use
    run_dirs = seed_run_dirs(cfg) if cfg.seeds else {int(cfg.seed): run_dir}
    try:
        by_seed = train_runs(cfg, run_dirs)
    except (ConfigError, DataNotFoundError, FileNotFoundError) as e:
        log.error("%s", e)
        for d in run_dirs.values():
            record(cfg.out_root, d, "failed", f"{type(e).__name__}: {e}")
        if multirun:  # recorded in results.json and the sweep journal; the other jobs go on
            return None
        sys.exit(2)
    except Exception as e:
        for d in run_dirs.values():
            record(cfg.out_root, d, "failed", f"{type(e).__name__}: {e}")
        if multirun:
            log.exception("run failed (recorded in %s); the sweep goes on", run_dir / "results.json")
            return None
        raise
    for seed, results in by_seed.items():
        record(cfg.out_root, run_dirs[seed], outcome_of(results))
        log.info("%s seed %d: status %s, best test acc %s (epoch %s), results in %s", cfg.regime.name, seed,
                 results["status"], results["best_test_acc"], results["best_epoch"], run_dirs[seed] / "results.json")
    return {seed: results["best_test_acc"] for seed, results in by_seed.items()}


def row(cfg, multirun: bool):
    """``regimes=[...]`` / ``lrs=[...]``: every regime x step size x seed of a row, stacked by family."""
    try:
        results = train_row(cfg)
    except (ConfigError, DataNotFoundError, FileNotFoundError) as e:
        log.error("%s", e)
        if multirun:
            return None
        sys.exit(2)
    dirs = {key: run_dir_of(c) for key, c in row_configs(cfg)}
    for (regime, lr, seed), res in results.items():
        record(cfg.out_root, dirs[(regime, lr, seed)], outcome_of(res))
        log.info("%s lr %g seed %d: status %s, best test acc %s (epoch %s), results in %s", regime, lr, seed,
                 res["status"], res["best_test_acc"], res["best_epoch"], dirs[(regime, lr, seed)] / "results.json")
    return {f"{regime}/lr{lr:g}/seed{seed}": res["best_test_acc"] for (regime, lr, seed), res in results.items()}


if __name__ == "__main__":
    main()
