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
    name = seed<k>, id = :func:`wandb_id` (the run directory and its first attempt: a resumed run continues the
    same wandb run; the same settings in another output folder, or retrained with force=true, are runs of their
    own), tags: the recipe's folder, dataset, arch, regime, seed (issue #56)."""

    def __init__(self, cfg, run_dir: Path, first: str = ""):
        try:
            import wandb
        except ImportError:
            raise ConfigError("logger=wandb needs the wandb package: pip install -e '.[wandb]'") from None
        lg = cfg.logger
        self.run = wandb.init(project=lg.project, entity=lg.entity, mode=lg.mode, dir=str(run_dir),
                              group=f"{cell_name(cfg)}/{cfg.regime.name}", name=f"seed{cfg.seed}",
                              id=wandb_id(run_dir, first), resume="allow", reinit="create_new",
                              tags=tags(cfg), config={**OmegaConf.to_container(cfg, resolve=True),
                                                      "run_key": run_key(cfg), "run_dir": str(Path(run_dir).resolve())})

    def log(self, row: dict) -> None:
        self.run.log({k: v for k, v in row.items() if k != "epoch" and v is not None}, step=row["epoch"])

    def finish(self, results: dict) -> None:
        for key in ("status", "best_test_acc", "best_epoch", "final_train_acc"):
            self.run.summary[key] = results.get(key)
        self.run.finish(exit_code=0 if results.get("status") == "completed" else 1)


def wandb_id(run_dir: Path, first: str) -> str:
    """The wandb run id: a hash of the run directory's absolute path and its first attempt (results.json's
    ``attempts[0].id``, drawn when the run starts afresh), the same for every resume of one run and new for a run
    trained afresh."""
    import hashlib
    return hashlib.sha1(f"{Path(run_dir).resolve()}|{first}".encode()).hexdigest()[:16]


def tags(cfg) -> list[str]:
    """The wandb tags of a run: its recipe's folder (out_root's name: races, table2-mnist-full, ...), dataset, arch,
    regime and seed."""
    return [Path(str(cfg.out_root)).name, str(cfg.dataset.name), str(cfg.arch.name), str(cfg.regime.name),
            f"seed{cfg.seed}"]


def make_tracker(cfg, run_dir: Path, first: str = ""):
    if cfg.logger.name == "wandb":
        return WandbTracker(cfg, run_dir, first)
    if cfg.logger.name != "none":
        raise ConfigError(f"logger={cfg.logger.name!r} is not one of none, wandb")
    return NullTracker()
