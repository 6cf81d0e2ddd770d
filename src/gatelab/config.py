"""Typed config schemas (Hydra ConfigStore) and the checks made before any training.

Each dataclass mirrors one config group in ``conf/`` and one module of the package:
``dataset``/``data`` -> :mod:`gatelab.data`, ``arch`` -> :mod:`gatelab.models`,
``regime`` -> :mod:`gatelab.regimes`, ``optimizer`` -> :mod:`gatelab.train`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from . import checkpoints, runs


class ConfigError(ValueError):
    """A configuration that cannot be run; raised before any training starts."""


@dataclass
class DataConfig:
    # Directory holding the dataset cache files <root>/mnist.npz, <root>/cifar10.npz.
    # None -> $GATELAB_DATA -> ~/.cache/gatelab.
    root: Optional[str] = None
    download: bool = True  # fetch with torchvision when the cache file is absent


@dataclass
class DatasetConfig:
    name: str = MISSING  # mnist | binary_mnist | cifar10
    source: str = MISSING  # cache file stem: mnist | cifar10
    task: str = "classification"  # classification (10-way, cross-entropy) | binary (+-1, squared loss)
    num_classes: int = 10  # output width for task=classification
    classes: Optional[List[int]] = None  # binary: [negative digit, positive digit]
    limit_train: Optional[int] = None  # first N examples (class-balanced)
    limit_test: Optional[int] = None


@dataclass
class ArchConfig:
    name: str = MISSING  # fc | vconv | gconv
    conv_channels: List[int] = field(default_factory=list)  # 3x3 'same' convs, stride 1
    pool: str = "flatten"  # flatten | gap (global average pooling), after the convs
    dense: List[int] = field(default_factory=list)  # hidden dense widths
    bias: bool = True
    init: str = "glorot"  # glorot (Keras default, paper code: Glorot-uniform, zero bias) | torch


@dataclass
class RegimeConfig:
    """A DGN regime (paper 001 §4, SPEC.md regimes table). See :mod:`gatelab.regimes`."""

    name: str = MISSING
    tied: bool = False  # Θf ≡ Θv: one ordinary network (ReLU / soft-ReLU)
    gate: str = "hard"  # hard: 1{q>0} | soft: (1+eps)*sigmoid(beta*q) | one: all gates 1 (deep linear)
    beta: float = 4.0
    eps: float = 0.0
    feature_init: str = "independent"  # independent | copy_value | source
    feature_trainable: bool = False
    value_trainable: bool = True  # false: Θv frozen at init (paper 002 experiment 6, gates only)
    feature_act: str = "relu"  # the feature net's own hidden activation: relu | gate (z_f = q_f*G)
    source: Optional[str] = None  # FLNPF: a ReLU run directory or checkpoint file
    source_ckpt: str = "best"  # which checkpoint of a source run dir: best | last | epoch_<N>


@dataclass
class OptimizerConfig:
    name: str = MISSING  # sgd | adam | rmsprop
    lr: float = MISSING
    momentum: float = 0.0
    weight_decay: float = 0.0
    batch_size: int = 32


@dataclass
class LoggerConfig:
    name: str = "none"  # none | wandb
    project: str = "gatelab"
    entity: Optional[str] = None
    mode: Optional[str] = None  # wandb mode: online | offline | disabled; None -> $WANDB_MODE


@dataclass
class Config:
    dataset: DatasetConfig = MISSING
    arch: ArchConfig = MISSING
    regime: RegimeConfig = MISSING
    optimizer: OptimizerConfig = MISSING
    data: DataConfig = field(default_factory=DataConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    seed: int = 0
    seeds: Optional[List[int]] = None  # train these seeds together in one process (stacked networks)
    epochs: int = 10
    device: str = "auto"  # auto (cuda if available) | cpu | cuda | cuda:N | mps
    eval_batch_size: int = 2048
    checkpoint_epochs: List[int] = field(default_factory=list)  # extra ckpt/epoch_<N>.pt (FLNPF stages; 0 = init)
    progress: bool = True  # tqdm bars
    amp: bool = False  # bf16 autocast of the training forward pass (meant for CUDA; evaluation stays fp32)
    compile: Optional[str] = None  # torch.compile mode for training: default | reduce-overhead | max-autotune
    threads: Optional[int] = None  # torch CPU threads (None: torch's default); 1 when runs go in parallel
    out_root: str = "outputs"  # runs go to <out_root>/runs/<cell>/<regime>/seed<k>-<key> (gatelab.runs)
    run_dir: Optional[str] = None  # explicit run directory; None -> Hydra's output dir
    force: bool = False  # rerun even if the run directory holds a completed results.json


SOURCES = ("mnist", "cifar10")
TASKS = ("classification", "binary")
ARCHS_POOL = ("flatten", "gap")
INITS = ("glorot", "torch")
GATES = ("hard", "soft", "one")
FEATURE_INITS = ("independent", "copy_value", "source")
FEATURE_ACTS = ("relu", "gate")
OPTIMIZERS = ("sgd", "adam", "rmsprop")


def register() -> None:
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=Config)


def compose(overrides=()) -> Any:
    """The job config that ``python run.py <overrides>`` would run (without the ``hydra`` node)."""
    from hydra import compose as hydra_compose, initialize_config_dir
    from omegaconf import open_dict

    register()
    runs.register_resolver()
    with initialize_config_dir(config_dir=str(runs.CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=list(overrides))
    with open_dict(cfg):
        cfg.pop("hydra", None)
    return cfg


def _one_of(what: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise ConfigError(f"{what}={value!r} is not one of {', '.join(map(str, allowed))}")


def require_source(cfg: Any):
    """The FLNPF source checkpoint file (None for other regimes); raises if it is not given or absent.
    ``regime.source=auto``: the ReLU run of the same cell and seed (:func:`gatelab.runs.relu_source_dir`)."""
    reg = cfg.regime
    if reg.feature_init != "source":
        return None
    if not reg.source:
        raise ConfigError(f"regime={reg.name} copies its feature network from a trained ReLU run: "
                          "set regime.source=<ReLU run dir, checkpoint .pt, or auto>")
    if reg.source != "auto":
        return checkpoints.resolve(reg.source, reg.source_ckpt)
    src = runs.relu_source_dir(cfg)
    try:
        return checkpoints.resolve(str(src), reg.source_ckpt)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{e}. regime.source=auto looks for the ReLU run of this cell and seed: "
                                "run it first (same overrides with regime=relu)") from None


def validate(cfg: Any) -> None:
    """Reject configurations that make no sense, with a message naming the key."""
    ds, arch, reg, opt = cfg.dataset, cfg.arch, cfg.regime, cfg.optimizer
    _one_of("dataset.source", ds.source, SOURCES)
    _one_of("dataset.task", ds.task, TASKS)
    if ds.task == "binary" and (ds.classes is None or len(ds.classes) != 2):
        raise ConfigError("dataset.task=binary needs dataset.classes=[neg,pos]")
    for key in ("limit_train", "limit_test"):
        n = ds[key]
        if n is not None and n <= 0:
            raise ConfigError(f"dataset.{key} must be positive, got {n}")
    _one_of("arch.pool", arch.pool, ARCHS_POOL)
    _one_of("arch.init", arch.init, INITS)
    if not arch.conv_channels and not arch.dense:
        raise ConfigError("arch needs at least one hidden layer (conv_channels or dense)")
    if any(w <= 0 for w in list(arch.conv_channels) + list(arch.dense)):
        raise ConfigError("arch layer widths must be positive")
    if arch.pool == "gap" and not arch.conv_channels:
        raise ConfigError("arch.pool=gap averages conv feature maps: it needs arch.conv_channels")
    _one_of("regime.gate", reg.gate, GATES)
    if reg.feature_trainable and reg.gate != "soft":
        raise ConfigError(f"regime.feature_trainable=true with regime.gate={reg.gate}: {reg.gate} gates pass no "
                          "gradient to the feature network; use regime.gate=soft (as DLNPF does)")
    _one_of("regime.feature_init", reg.feature_init, FEATURE_INITS)
    _one_of("regime.feature_act", reg.feature_act, FEATURE_ACTS)
    if reg.gate == "soft" and reg.beta <= 0:
        raise ConfigError(f"regime.beta must be > 0 for soft gates, got {reg.beta}")
    if not reg.value_trainable and not (reg.feature_trainable and not reg.tied):
        raise ConfigError("regime.value_trainable=false leaves nothing to train unless an untied "
                          "feature network trains (regime.feature_trainable=true)")
    if reg.tied and (reg.feature_init != "independent" or reg.feature_trainable):
        raise ConfigError("a tied regime has no separate feature network: "
                          "leave regime.feature_init / feature_trainable at their defaults")
    require_source(cfg)
    if reg.source and reg.feature_init != "source":
        raise ConfigError(f"regime.source is only used by regimes with feature_init=source, not {reg.name}")
    _one_of("optimizer.name", opt.name, OPTIMIZERS)
    if not opt.lr > 0:
        raise ConfigError(f"optimizer.lr must be > 0, got {opt.lr}")
    if opt.batch_size <= 0:
        raise ConfigError(f"optimizer.batch_size must be positive, got {opt.batch_size}")
    if cfg.seeds is not None:
        if len(cfg.seeds) == 0 or len(set(cfg.seeds)) != len(cfg.seeds):
            raise ConfigError(f"seeds={list(cfg.seeds)} must be a non-empty list without duplicates")
        if cfg.run_dir:
            raise ConfigError("seeds=[...] writes each seed to its own run directory; run_dir cannot be set")
    if cfg.compile is not None:
        _one_of("compile", cfg.compile, ("default", "reduce-overhead", "max-autotune"))
    if cfg.epochs <= 0:
        raise ConfigError(f"epochs must be positive, got {cfg.epochs}")
