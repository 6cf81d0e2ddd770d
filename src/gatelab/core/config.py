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
from omegaconf import MISSING

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"  # shipped in the package; a checkout links conf/ to it

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


class Corrupt(StrEnum):
    """What of the training split is replaced by noise (Zhang et al. 2017; paper 002 Fig 5), drawn from
    a fixed generator (``gatelab.data.datasets.CORRUPT_SEED``): every run sees the same corrupted set.
    The test split is left as it is."""
    none = "none"
    labels = "labels"  # every training label uniform over the classes, independent of its image
    pixels = "pixels"  # every training image's pixels in an order of its own (one permutation per image)


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
    """The arithmetic of training (gatelab.training.speed.precision): fp32 strict (no TF32 anywhere), tf32
    (CUDA matmuls and convolutions in TF32), bf16 (bf16 autocast of the training forward pass), auto (bf16 for
    a conv net where the device has bf16 kernels of its own, else fp32: gatelab.core.machine.precision_auto;
    resolved before the run key is made, so the key and results.json say what ran)."""
    fp32 = "fp32"
    tf32 = "tf32"
    bf16 = "bf16"
    auto = "auto"


class EvalPrecision(StrEnum):
    """The arithmetic of each epoch's test evaluation: fp32, or bf16 (autocast of the forward pass; the
    loss in fp32). A loss trace (``loss_trace``) always evaluates in fp32."""
    fp32 = "fp32"
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
    corrupt: Corrupt = later(Corrupt.none)  # random labels or pixels of the training split (paper 002 Fig 5)


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
    # seeds=[...] stacked in one step (true) or one after another (false); unset: the machine's fastest
    # (gatelab.core.machine.stack_seeds: stacked but for conv nets on a CPU). Not in the run key.
    stack_seeds: Optional[bool] = None
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
    progress: bool = True  # tqdm bars, at a terminal only (redirected: one line per epoch)
    amp: bool = False  # bf16 autocast of the training forward pass (the older spelling of precision=bf16)
    precision: Precision = later(Precision.fp32)  # fp32 | tf32 | bf16 | auto; env records what ran
    eval_precision: EvalPrecision = later(EvalPrecision.fp32)  # fp32 | bf16: the test evaluation's (in the run key)
    compile: Optional[str] = None  # torch.compile mode for training: default | reduce-overhead | max-autotune
    # conv activations and kernels in NHWC (torch.channels_last): the same numbers up to reassociation,
    # not in the run key; faster or slower by device and layer (scripts/bench.py --paths measures it)
    # unset: the machine's fastest (gatelab.core.machine.channels_last: NHWC on CPUs with AVX-512); env records it
    channels_last: Optional[bool] = None
    # torch.use_deterministic_algorithms, cuDNN autotuning off, CUBLAS_WORKSPACE_CONFIG=:4096:8 (docs/resume.md): the
    # same bits from the same command on the same machine and software; not in the run key (the same settings)
    deterministic: bool = False
    threads: Optional[int] = None  # torch CPU threads (None: torch's default); 1 when runs go in parallel
    heap_reuse: bool = True  # glibc: keep big host tensors' memory between steps (gatelab.training.speed.heap_reuse)
    out_root: str = "outputs"  # runs go to <out_root>/runs/<cell>/<regime>/seed<k>-<key> (gatelab.core.runs)
    run_dir: Optional[str] = None  # one run's explicit directory (refused with seeds=[...]); None: <out_root>/runs/<cell>/<regime>/seed<N>-<key>
    force: bool = False  # rerun even if the run directory holds a completed results.json
    dry_run: bool = False  # print the plan (jobs, prerequisites, run directories, cost) and train nothing
    train_prerequisites: bool = True  # false: a missing prerequisite is an error (SLURM waves train them)


def register() -> None:
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=Config)
