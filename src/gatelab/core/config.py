"""Typed config schemas (Hydra ConfigStore) and the checks made before any training.

Each dataclass mirrors one config group in ``conf/`` and one module of the package:
``dataset``/``data`` -> :mod:`gatelab.data.datasets`, ``arch`` -> :mod:`gatelab.nets.dgn`,
``regime`` -> :mod:`gatelab.nets.regimes`, ``optimizer`` -> :mod:`gatelab.training.loop`.

Closed sets are ``StrEnum``s: a typo fails at composition, naming the key, and the value is
stored as the same plain string as before (results.json, checkpoints, run keys).

Run keys (:mod:`gatelab.core.runs`) hash the fields that determine a result. A field added after the
first schema must be declared with :func:`later`: at its default it is left out of the key, so
runs made before it existed keep their directories.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

CONF_DIR = Path(__file__).resolve().parents[3] / "conf"

LATER = "gatelab_added_later"  # field metadata: omitted from the run key while at its default


def later(default: Any = None, *, factory=None):
    """A field added after schema version 1 (see the module docstring); ``factory`` for lists."""
    if factory is not None:
        return field(default_factory=factory, metadata={LATER: True})
    return field(default=default, metadata={LATER: True})


class Source(StrEnum):
    """Dataset cache file stems (:mod:`gatelab.data.datasets`)."""
    mnist = "mnist"
    cifar10 = "cifar10"


class Task(StrEnum):
    classification = "classification"  # 10-way, cross-entropy
    classification_l2 = "classification_l2"  # class labels, squared error on one-hot targets (paper 003's theory)
    binary = "binary"  # +-1 targets, squared loss (paper 001 §6.1, Binary-MNIST)


class Pool(StrEnum):
    flatten = "flatten"
    gap = "gap"  # global average pooling after the convs (GCONV)


class Init(StrEnum):
    glorot = "glorot"  # Keras default: Glorot-uniform weights, zero biases (paper 001 code)
    torch = "torch"  # PyTorch's default layer init
    gaussian = "gaussian"  # N(0, arch.init_std^2) weights, zero biases (paper 004 §5)


class Normalize(StrEnum):
    """Input scaling of the uint8 pixels (after ``grayscale``), applied on the fly on the device."""
    unit = "unit"  # x/255 in [0,1] (papers 001/002 and their code)
    pm1 = "pm1"  # 2x/255 - 1 in [-1,1]
    standardize = "standardize"  # (x - mean)/std, one mean and std over all pixels of the training split


class Gate(StrEnum):
    """G(q) of a DGN: hard 1{q>0} | soft (1+eps)*sigmoid(beta*q) | one (all gates 1, deep linear);
    leaky: leaky ReLU of slope regime.slope (routing nets, paper 003 Fig 9)."""
    hard = "hard"
    soft = "soft"
    one = "one"
    leaky = "leaky"


class RoutingInput(StrEnum):
    permute = "permute"  # a fixed random pixel permutation per input domain
    rotate = "rotate"  # rotation by max_angle*i/M degrees, nearest pixel


class OutputPerms(StrEnum):
    random = "random"  # uniform random label permutations (paper 003 App. D)
    lexicographic = "lexicographic"  # the first M of itertools.permutations(range(10)) (the authors' code)


class DecoderFan(StrEnum):
    per_decoder = "per_decoder"  # Xavier bound from each decoder's (h, 10) (the paper)
    stacked3d = "stacked3d"  # one (M, h, 10) tensor's Xavier bound (the authors' code)


class FeatureInit(StrEnum):
    """The regime family, by where Θf comes from (paper 001 §4)."""
    independent = "independent"  # its own random draw (FRNPF-II, DLNPF)
    copy_value = "copy_value"  # a copy of Θv0 (FRNPF-DI)
    source = "source"  # copied from a trained ReLU run (FLNPF)


class FeatureAct(StrEnum):
    """The feature network's own hidden activation."""
    relu = "relu"  # gates from a ReLU network (paper 001's code for DLNPF)
    gate = "gate"  # z_f = q_f * G: the feature net is itself gated (paper 002's soft-GaLU)


class Optim(StrEnum):
    sgd = "sgd"
    adam = "adam"
    rmsprop = "rmsprop"


class Precision(StrEnum):
    """The arithmetic of training (gatelab.training.loop.precision): fp32 strict (no TF32 anywhere), tf32
    (CUDA matmuls and convolutions in TF32), bf16 (bf16 autocast of the training forward pass)."""
    fp32 = "fp32"
    tf32 = "tf32"
    bf16 = "bf16"


class Logger(StrEnum):
    none = "none"
    wandb = "wandb"


COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")


class ConfigError(ValueError):
    """A configuration that cannot be run; raised before any training starts."""


@dataclass
class DataConfig:
    # Directory holding the dataset cache files <root>/mnist.npz, <root>/cifar10.npz.
    # None -> $GATELAB_DATA -> ~/.cache/gatelab.
    root: Optional[str] = None
    download: bool = True  # fetch with torchvision when the cache file is absent


@dataclass
class RoutingConfig:
    """A routing task (paper 003 §5, App. D; :mod:`gatelab.nets.routing`): M input and M output domains,
    each input domain trained with K output domains."""
    M: int = 20
    K: int = 5
    input: RoutingInput = RoutingInput.permute
    max_angle: float = 180.0  # rotation of domain i: max_angle*i/M degrees (paper 180, code 270)
    output_perms: OutputPerms = OutputPerms.random
    # CIFAR: the inputs are the frozen backbone's 512-d features of each rotated copy (gatelab.data.backbone):
    # resnet20 (raw images, the authors' code) | resnet20_imagenet_norm; None: the pixels themselves
    features: Optional[str] = later(None)
    # the backbone file in the data root: the published one (sha256 pinned) or one that
    # `python -m gatelab.papers.routing backbone` trained (sha256 in its <file>.json)
    backbone: str = later("resnet20-12fca82f.th")


@dataclass
class DatasetConfig:
    name: str = MISSING  # mnist | binary_mnist | cifar10
    source: Source = MISSING  # cache file stem
    task: Task = Task.classification
    num_classes: int = 10  # output width for task=classification
    classes: Optional[List[int]] = None  # binary: [negative digit, positive digit]
    limit_train: Optional[int] = None  # first N examples (class-balanced)
    limit_test: Optional[int] = None
    # Classes merged into groups, class i = group i (paper 004: [[0,3],[1,2]], airplane+cat vs
    # automobile+bird); other classes dropped; limit_train balances the source classes.
    class_groups: Optional[List[List[int]]] = later(None)
    grayscale: bool = later(False)  # luma 0.299R + 0.587G + 0.114B, one channel
    normalize: Normalize = later(Normalize.unit)
    routing: Optional[RoutingConfig] = later(None)  # a routing task over the base dataset (arch=routing)


@dataclass
class ArchConfig:
    name: str = MISSING  # fc | vconv | gconv
    conv_channels: List[int] = field(default_factory=list)  # 3x3 'same' convs, stride 1
    pool: Pool = Pool.flatten
    dense: List[int] = field(default_factory=list)  # hidden dense widths
    bias: bool = True
    init: Init = Init.glorot
    init_std: Optional[float] = later(None)  # init=gaussian: the weights' standard deviation (sigma_0)
    init_gain: float = later(1.0)  # arch=routing: Xavier-uniform x gain (paper 003's "gain ratio")
    decoder_fan: DecoderFan = later(DecoderFan.per_decoder)  # arch=routing: the decoders' Xavier fans


@dataclass
class RegimeConfig:
    """A DGN regime (paper 001 §4, the regimes table of docs/papers.md). See :mod:`gatelab.nets.regimes`."""

    name: str = MISSING
    tied: bool = False  # Θf ≡ Θv: one ordinary network (ReLU / soft-ReLU)
    gate: Gate = Gate.hard
    beta: float = 4.0
    eps: float = 0.0
    feature_init: FeatureInit = FeatureInit.independent
    feature_trainable: bool = False
    value_trainable: bool = True  # false: Θv frozen at init (paper 002 experiment 6, gates only)
    feature_act: FeatureAct = FeatureAct.relu
    # FLNPF: a ReLU run directory, a checkpoint file, or auto (the ReLU run of this cell and seed,
    # trained first when it is missing; gatelab.nets.regimes.relu_source_dir)
    source: Optional[str] = None
    source_ckpt: str = "best"  # which checkpoint of a source run dir: best | last | epoch_<N>
    slope: float = later(0.01)  # gate=leaky: the negative slope


@dataclass
class OptimizerConfig:
    name: Optim = MISSING
    lr: float = MISSING
    momentum: float = 0.0
    weight_decay: float = 0.0
    batch_size: int = 32


@dataclass
class ImpConfig:
    """Iterative magnitude pruning (Frankle & Carbin; paper 004 §5, Fig 5): round r (1..rounds)
    trains from the same initialisation with the weights of W1 and W2 (biases kept) pruned
    globally by magnitude from round r-1's final weights (round 0: the dense run) to the
    cumulative sparsity 1-(1-sparsity)^(r/rounds). See :mod:`gatelab.analyses.pruning`."""
    sparsity: Optional[float] = None  # None: dense, no pruning
    rounds: int = 3
    round: int = 0


@dataclass
class LoggerConfig:
    name: Logger = Logger.none
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
    seeds: Optional[List[int]] = None  # train these seeds in one process (stacked networks, see stack_seeds)
    stack_seeds: bool = True  # seeds=[...]: false trains them one after another (conv nets on a CPU are faster so)
    # A table row in one process (gatelab.training.rows.train_row): these regimes x lrs x seeds, stacked by family
    regimes: Optional[List[str]] = None
    lrs: Optional[List[float]] = None  # several: plain SGD only (each net's gradient scaled by its lr)
    epochs: int = 10
    device: str = "auto"  # auto (cuda if available) | cpu | cuda | cuda:N | mps
    eval_batch_size: int = 2048
    checkpoint_epochs: List[int] = field(default_factory=list)  # extra ckpt/epoch_<N>.pt (FLNPF stages; 0 = init)
    # extra ckpt/step_<t>.pt after t optimiser steps (0 = init), for the early times of paper 004
    checkpoint_steps: List[int] = later(factory=list)
    loss_trace: List[int] = later(factory=list)  # [lo, hi]: training-set loss after each step in it (loss_trace.csv)
    imp: ImpConfig = later(factory=ImpConfig)
    # last.pt (and best.pt, kept in memory between) every N epochs and at the end; a preempted run
    # replays at most N-1 epochs. Not part of the run key: it changes no result.
    checkpoint_every: int = 1
    checkpoint_minutes: float = 10.0  # also a group last.pt inside an epoch every N minutes (0: off)
    progress: bool = True  # tqdm bars
    amp: bool = False  # bf16 autocast of the training forward pass (the older spelling of precision=bf16)
    precision: Precision = later(Precision.fp32)  # fp32 | tf32 | bf16; env records what ran
    compile: Optional[str] = None  # torch.compile mode for training: default | reduce-overhead | max-autotune
    threads: Optional[int] = None  # torch CPU threads (None: torch's default); 1 when runs go in parallel
    out_root: str = "outputs"  # runs go to <out_root>/runs/<cell>/<regime>/seed<k>-<key> (gatelab.core.runs)
    run_dir: Optional[str] = None  # explicit run directory; None -> Hydra's output dir
    force: bool = False  # rerun even if the run directory holds a completed results.json
    dry_run: bool = False  # print the plan (jobs, prerequisites, run directories, cost) and train nothing
    train_prerequisites: bool = True  # false: a missing prerequisite is an error (SLURM waves train them)


def register() -> None:
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=Config)


def precision_of(cfg: Any) -> str:
    """The arithmetic a run trains in: ``fp32``, ``tf32`` or ``bf16`` (``amp=true`` is the older
    spelling of bf16)."""
    return "bf16" if cfg.amp else str(cfg.get("precision") or "fp32")


def validate(cfg: Any) -> None:
    """Reject configurations that make no sense, with a message naming the key. No file I/O: the
    data and an FLNPF source are checked by the plan (:mod:`gatelab.launch.plan`), before any training."""
    for check in (_check_dataset, _check_routing, _check_network, _check_training):
        check(cfg)


def _check_dataset(cfg: Any) -> None:
    ds, arch = cfg.dataset, cfg.arch
    if ds.task == Task.binary and (ds.classes is None or len(ds.classes) != 2):
        raise ConfigError("dataset.task=binary needs dataset.classes=[neg,pos]")
    for key in ("limit_train", "limit_test"):
        n = ds[key]
        if n is not None and n <= 0:
            raise ConfigError(f"dataset.{key} must be positive, got {n}")
    groups = ds.get("class_groups")
    if groups is not None:
        flat = [c for g in groups for c in g]
        if ds.task == Task.binary or len(groups) != ds.num_classes or any(len(g) == 0 for g in groups):
            raise ConfigError(f"dataset.class_groups={plain_list(groups)} needs task=classification and "
                              f"num_classes={len(groups)} (one output per non-empty group)")
        if len(set(flat)) != len(flat):
            raise ConfigError(f"dataset.class_groups={plain_list(groups)} lists a class twice")
    if arch.get("init") == Init.gaussian and not (arch.get("init_std") or 0) > 0:
        raise ConfigError("arch.init=gaussian needs arch.init_std > 0 (the weights' standard deviation)")


def _check_routing(cfg: Any) -> None:
    ds, arch, reg = cfg.dataset, cfg.arch, cfg.regime
    routing = ds.get("routing")
    if (arch.name == "routing") != (routing is not None):
        raise ConfigError("arch=routing and a routing task (dataset.routing, e.g. dataset=routing_mnist_perm) "
                          "go together")
    if routing is not None:
        if not (1 <= routing.K <= routing.M):
            raise ConfigError(f"dataset.routing.K={routing.K} must be in 1..M={routing.M}")
        if len(arch.dense) != 1 or arch.conv_channels:
            raise ConfigError("arch=routing has one hidden width: arch.dense=[h]")
        if not reg.tied or reg.gate not in (Gate.one, Gate.leaky):
            raise ConfigError(f"arch=routing trains regime=dln (linear) or regime=leaky, not {reg.name}")
        if ds.task not in (Task.classification, Task.classification_l2):
            raise ConfigError("a routing task is a classification task (cross-entropy, or classification_l2)")
        if routing.get("features") is not None and (routing.features not in ("resnet20", "resnet20_imagenet_norm")
                                                    or routing.input != RoutingInput.rotate or ds.source != Source.cifar10):
            raise ConfigError(f"dataset.routing.features={routing.features}: resnet20 | resnet20_imagenet_norm "
                              "features of rotated CIFAR-10 images (source=cifar10, input=rotate)")
        if routing.output_perms == OutputPerms.lexicographic and routing.M > 120:
            raise ConfigError("output_perms=lexicographic gives distinct label maps for M <= 120 only")
    elif reg.gate == Gate.leaky:
        raise ConfigError("regime.gate=leaky is for arch=routing")


def _check_network(cfg: Any) -> None:
    arch, reg = cfg.arch, cfg.regime
    if not arch.conv_channels and not arch.dense:
        raise ConfigError("arch needs at least one hidden layer (conv_channels or dense)")
    if any(w <= 0 for w in list(arch.conv_channels) + list(arch.dense)):
        raise ConfigError("arch layer widths must be positive")
    if arch.pool == Pool.gap and not arch.conv_channels:
        raise ConfigError("arch.pool=gap averages conv feature maps: it needs arch.conv_channels")
    if reg.feature_trainable and reg.gate != Gate.soft:
        raise ConfigError(f"regime.feature_trainable=true with regime.gate={reg.gate}: {reg.gate} gates pass no "
                          "gradient to the feature network; use regime.gate=soft (as DLNPF does)")
    if reg.gate == Gate.soft and reg.beta <= 0:
        raise ConfigError(f"regime.beta must be > 0 for soft gates, got {reg.beta}")
    if not reg.value_trainable and not (reg.feature_trainable and not reg.tied):
        raise ConfigError("regime.value_trainable=false leaves nothing to train unless an untied "
                          "feature network trains (regime.feature_trainable=true)")
    if reg.tied and (reg.feature_init != FeatureInit.independent or reg.feature_trainable):
        raise ConfigError("a tied regime has no separate feature network: "
                          "leave regime.feature_init / feature_trainable at their defaults")
    if reg.feature_init == FeatureInit.source and not reg.source:
        raise ConfigError(f"regime={reg.name} copies its feature network from a trained ReLU run: "
                          "set regime.source=<ReLU run dir, checkpoint .pt, or auto>")
    if reg.source and reg.feature_init != FeatureInit.source:
        raise ConfigError(f"regime.source is only used by regimes with feature_init=source, not {reg.name}")


def _check_training(cfg: Any) -> None:
    arch, reg, opt = cfg.arch, cfg.regime, cfg.optimizer
    if not opt.lr > 0:
        raise ConfigError(f"optimizer.lr must be > 0, got {opt.lr}")
    if opt.batch_size <= 0:
        raise ConfigError(f"optimizer.batch_size must be positive, got {opt.batch_size}")
    if cfg.seeds is not None:
        if len(cfg.seeds) == 0 or len(set(cfg.seeds)) != len(cfg.seeds):
            raise ConfigError(f"seeds={list(cfg.seeds)} must be a non-empty list without duplicates")
        if cfg.run_dir:
            raise ConfigError("seeds=[...] writes each seed to its own run directory; run_dir cannot be set")
    if cfg.compile is not None and cfg.compile not in COMPILE_MODES:
        raise ConfigError(f"compile={cfg.compile!r} is not one of {', '.join(COMPILE_MODES)}")
    if cfg.amp and cfg.get("precision", Precision.fp32) != Precision.fp32:
        raise ConfigError("amp=true is the older spelling of precision=bf16: set precision alone")
    for key in ("epochs", "checkpoint_every"):
        if cfg[key] <= 0:
            raise ConfigError(f"{key} must be positive, got {cfg[key]}")
    if (cfg.get("checkpoint_minutes") or 0) < 0:
        raise ConfigError(f"checkpoint_minutes must be >= 0 (0: off), got {cfg.checkpoint_minutes}")
    trace = list(cfg.get("loss_trace") or [])
    if trace and not (len(trace) == 2 and 0 <= trace[0] <= trace[1]):
        raise ConfigError(f"loss_trace must be [lo, hi] with 0 <= lo <= hi (steps), got {trace}")
    if any(t < 0 for t in cfg.get("checkpoint_steps") or []):
        raise ConfigError(f"checkpoint_steps must be >= 0, got {plain_list(cfg.checkpoint_steps)}")
    imp = cfg.get("imp")
    if imp is not None and imp.sparsity is not None:
        if not 0 < imp.sparsity < 1:
            raise ConfigError(f"imp.sparsity must be in (0, 1), got {imp.sparsity}")
        if not 1 <= imp.round <= imp.rounds:
            raise ConfigError(f"imp.round must be in 1..imp.rounds={imp.rounds}, got {imp.round}")
        if not reg.tied or len(arch.dense) != 1 or arch.conv_channels:
            raise ConfigError("imp (iterative magnitude pruning) is for one-hidden-layer tied nets "
                              "(arch=fc with one dense layer, a tied regime such as relu)")
    elif imp is not None and imp.round:
        raise ConfigError(f"imp.round={imp.round} needs imp.sparsity")



def plain_list(v: Any) -> Any:
    """A list config value as plain lists, for messages."""
    return OmegaConf.to_container(v) if OmegaConf.is_config(v) else v
