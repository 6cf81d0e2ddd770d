"""What a composed configuration must satisfy, checked before anything trains: :func:`validate`
rejects values that make no sense (naming the key) and keys the schema does not have (naming the
closest real key: ``+epochz=5`` would otherwise be accepted silently). No file I/O: the data and an
FLNPF source are checked by the plan (:mod:`gatelab.launch.plan`)."""
from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import Any

from omegaconf import DictConfig, OmegaConf

from gatelab.core.config import (COMPILE_MODES, Config, ConfigError, FeatureInit, Gate, Init, OutputPerms,
                                  Pool, Precision, RegimeConfig, RoutingInput, Source, Task)


def validate(cfg: Any) -> None:
    """Reject configurations that make no sense, with a message naming the key. No file I/O: the
    data and an FLNPF source are checked by the plan (:mod:`gatelab.launch.plan`), before any training."""
    for check in (_check_keys, _check_dataset, _check_routing, _check_network, _check_training):
        check(cfg)


SOURCE_CLASSES = {Source.mnist: 10, Source.cifar10: 10}  # the classes of each dataset's labels
NOT_SCHEMA = ("hydra",)  # composed beside the schema by Hydra itself


def unknown_keys(node: Any, schema: Any = Config, prefix: str = "") -> list[tuple[str, list[str]]]:
    """The keys of ``node`` that ``schema`` (a dataclass) does not declare, each with the keys it does
    declare at that level, depth first."""
    hints = typing.get_type_hints(schema)
    out = []
    for key in node.keys() if isinstance(node, (dict, DictConfig)) else []:
        if not prefix and key in NOT_SCHEMA:
            continue
        if key not in hints:
            out.append((prefix + str(key), [prefix + k for k in hints]))
            continue
        sub = next((a for a in (hints[key], *typing.get_args(hints[key])) if dataclasses.is_dataclass(a)), None)
        value = node[key]
        if sub is not None and isinstance(value, (dict, DictConfig)):
            out += unknown_keys(value, sub, f"{prefix}{key}.")
    return out


def unknown_key_message(node: Any) -> str | None:
    """One line naming the first key of ``node`` the schema lacks and the closest real key; None if none."""
    bad = unknown_keys(node)
    if not bad:
        return None
    key, known = bad[0]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown key {key}{hint}: no such setting in the schema (src/gatelab/core/config.py)"


def _check_keys(cfg: Any) -> None:
    message = unknown_key_message(cfg)
    if message:
        raise ConfigError(message)


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
    elif ds.task != Task.binary and ds.num_classes != SOURCE_CLASSES[ds.source]:
        raise ConfigError(f"dataset.num_classes={ds.num_classes}: {ds.source}'s labels are "
                          f"0..{SOURCE_CLASSES[ds.source] - 1}, so task={ds.task} has {SOURCE_CLASSES[ds.source]} "
                          "outputs (dataset.class_groups merges classes into fewer)")
    if arch.get("init") == Init.gaussian and not (arch.get("init_std") or 0) > 0:
        raise ConfigError("arch.init=gaussian needs arch.init_std > 0 (the weights' standard deviation)")
    if ds.task != Task.binary and ds.classes is not None:
        raise ConfigError(f"dataset.classes={plain_list(ds.classes)} picks the two digits of task=binary; with "
                          f"task={ds.task} it would be ignored (class_groups merges classes)")
    if ds.get("grayscale") and ds.source != Source.cifar10:
        raise ConfigError(f"dataset.grayscale=true makes RGB images one channel; {ds.source} has one already")


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
        if arch.init != Init.glorot or not arch.bias or arch.get("init_std") is not None:
            raise ConfigError("arch=routing draws Xavier-uniform x arch.init_gain with zero biases (paper 003, App. D.1): "
                              "arch.init, arch.init_std and arch.bias are not its settings (arch.init_gain, "
                              "arch.decoder_fan are)")
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
    for key, gate in (("beta", Gate.soft), ("eps", Gate.soft), ("slope", Gate.leaky)):
        if reg.gate != gate and reg.get(key, default(RegimeConfig, key)) != default(RegimeConfig, key):
            raise ConfigError(f"regime.{key}={reg[key]} is a setting of gate={gate} (regime.gate={reg.gate} of "
                              f"regime={reg.name} ignores it): leave it at {default(RegimeConfig, key)}")
    if arch.get("init") != Init.gaussian and arch.get("init_std") is not None:
        raise ConfigError(f"arch.init_std={arch.init_std} is the standard deviation of arch.init=gaussian; "
                          f"arch.init={arch.init} ignores it")
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
    if opt.name == "adam" and opt.momentum:
        raise ConfigError(f"optimizer.momentum={opt.momentum} is SGD's and RMSprop's; Adam has its own betas and "
                          "would ignore it")
    if cfg.eval_batch_size <= 0:
        raise ConfigError(f"eval_batch_size must be positive, got {cfg.eval_batch_size}")
    outside = [e for e in cfg.get("checkpoint_epochs") or [] if not 0 <= e <= cfg.epochs]
    if outside:
        raise ConfigError(f"checkpoint_epochs={plain_list(cfg.checkpoint_epochs)}: {plain_list(outside)} outside "
                          f"0..epochs={cfg.epochs}, so never written")
    if cfg.get("threads") is not None and cfg.threads < 1:
        raise ConfigError(f"threads={cfg.threads}: give 1 or more, or leave it unset for torch's default "
                          f"({torch_threads()} here)")
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



def default(schema: Any, key: str) -> Any:
    """The schema's default of ``schema.key`` (a dataclass field)."""
    return next(f.default for f in dataclasses.fields(schema) if f.name == key)


def torch_threads() -> int:
    import torch
    return torch.get_num_threads()


def plain_list(v: Any) -> Any:
    """A list config value as plain lists, for messages."""
    return OmegaConf.to_container(v) if OmegaConf.is_config(v) else v
