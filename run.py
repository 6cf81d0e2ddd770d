"""gatelab entry point: ``python run.py [dataset=..] [arch=..] [regime=..] [optimizer=..] [key=value ..]``.

One run trains one (dataset, arch, regime, optimizer, seed) and writes ``results.json`` and
``ckpt/`` into its Hydra run directory. Sweep with ``-m``. See README.md.
"""
import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from gatelab.config import ConfigError, register
from gatelab.data import DataNotFoundError
from gatelab.train import train

register()
log = logging.getLogger("gatelab")


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    run_dir = Path(cfg.run_dir or HydraConfig.get().runtime.output_dir)
    try:
        results = train(cfg, run_dir)
    except (ConfigError, DataNotFoundError, FileNotFoundError) as e:
        log.error("%s", e)
        sys.exit(2)
    log.info("%s: status %s, best test acc %s (epoch %s), results in %s", cfg.regime.name, results["status"],
             results["best_test_acc"], results["best_epoch"], run_dir / "results.json")
    return results["best_test_acc"] or 0.0


if __name__ == "__main__":
    main()
