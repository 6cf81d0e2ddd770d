"""Optional experiment tracking (``logger=wandb``); off by default. results.json stays the record."""
from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from gatelab.core.config import ConfigError
from gatelab.core.runs import cell_name, run_key


class NullTracker:
    def log(self, row: dict) -> None:
        pass

    def finish(self, results: dict) -> None:
        pass


class WandbTracker:
    """One wandb run per gatelab run, also for the nets of one stacked job (``reinit="create_new"``:
    several runs live side by side in one process, each finished on its own): group = cell/regime,
    name = seed<k>, id = the run key, so a resumed run continues the same wandb run."""

    def __init__(self, cfg, run_dir: Path):
        try:
            import wandb
        except ImportError:
            raise ConfigError("logger=wandb needs the wandb package: pip install -e '.[wandb]'") from None
        lg = cfg.logger
        self.run = wandb.init(project=lg.project, entity=lg.entity, mode=lg.mode, dir=str(run_dir),
                              group=f"{cell_name(cfg)}/{cfg.regime.name}", name=f"seed{cfg.seed}",
                              id=run_key(cfg), resume="allow", reinit="create_new",
                              config=OmegaConf.to_container(cfg, resolve=True))

    def log(self, row: dict) -> None:
        self.run.log({k: v for k, v in row.items() if k != "epoch" and v is not None}, step=row["epoch"])

    def finish(self, results: dict) -> None:
        for key in ("status", "best_test_acc", "best_epoch", "final_train_acc"):
            self.run.summary[key] = results.get(key)
        self.run.finish(exit_code=0 if results.get("status") == "completed" else 1)


def make_tracker(cfg, run_dir: Path):
    if cfg.logger.name == "wandb":
        return WandbTracker(cfg, run_dir)
    if cfg.logger.name != "none":
        raise ConfigError(f"logger={cfg.logger.name!r} is not one of none, wandb")
    return NullTracker()
