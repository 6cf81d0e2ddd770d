"""Where a run lives: a directory keyed by a short hash of the config that determines its result.

``<out_root>/runs/<dataset>-<arch>-<optimizer>-lr<lr>/<regime>/seed<k>-<key>``: the same run always
lands in the same place (single runs and multiruns alike), so a finished run is found again and
skipped, and FLNPF's ``regime.source=auto`` finds the ReLU run of its own cell and seed.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

# Keys that determine a run's result. Not: device, data root, progress bars, threads, out_root,
# compile (same numbers up to reassociation).
IDENTITY = ("dataset", "arch", "regime", "optimizer", "seed", "epochs", "checkpoint_epochs", "amp")
CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def identity(cfg) -> dict:
    return {k: OmegaConf.to_container(cfg[k], resolve=True) if OmegaConf.is_config(cfg[k]) else cfg[k]
            for k in IDENTITY}


def run_key(cfg) -> str:
    blob = json.dumps(identity(cfg), sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(blob.encode()).hexdigest()[:10]


def cell_name(cfg) -> str:
    """One Table row and step size: what the seeds of one cell share apart from the regime."""
    return f"{cfg.dataset.name}-{cfg.arch.name}-{cfg.optimizer.name}-lr{cfg.optimizer.lr:g}"


def run_subdir(cfg) -> str:
    if cfg.get("seeds"):  # a seed-batched job: its log goes here, each seed's results to its own run_dir
        seeds = "-".join(map(str, cfg.seeds))
        return f"runs/{cell_name(cfg)}/{cfg.regime.name}/seeds{seeds}-{run_key(cfg)}"
    return f"runs/{cell_name(cfg)}/{cfg.regime.name}/seed{cfg.seed}-{run_key(cfg)}"


def seed_run_dirs(cfg) -> dict:
    """``seeds=[...]``: each seed's own run directory, the one a single run of that seed uses."""
    return {int(s): run_dir(OmegaConf.merge(cfg, {"seed": int(s), "seeds": None})) for s in cfg.seeds}


def run_dir(cfg) -> Path:
    return Path(cfg.out_root) / run_subdir(cfg)


def _job_config(root) -> DictConfig:
    """The job's config without the ``hydra`` node (for the resolver inside hydra.run.dir)."""
    return OmegaConf.masked_copy(root, [k for k in root.keys() if k != "hydra"])


def register_resolver() -> None:
    """``${gatelab_run:}`` in ``hydra.run.dir`` / ``hydra.sweep.subdir`` -> :func:`run_subdir`."""
    if not OmegaConf.has_resolver("gatelab_run"):
        OmegaConf.register_new_resolver("gatelab_run", lambda *, _root_: run_subdir(_job_config(_root_)),
                                        use_cache=False)


def relu_source_dir(cfg) -> Path:
    """``regime.source=auto``: the ReLU run with this run's config but ``regime=relu``."""
    from .config import RegimeConfig

    relu = OmegaConf.merge(OmegaConf.structured(RegimeConfig), OmegaConf.load(CONF_DIR / "regime" / "relu.yaml"))
    twin = OmegaConf.merge(_job_config(cfg) if "hydra" in cfg else cfg, {"regime": relu})
    return run_dir(twin)
