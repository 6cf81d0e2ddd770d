"""Regimes of a deep gated network: what the feature network Θf is, how it starts, what trains.

A regime is the config ``conf/regime/<name>.yaml`` (schema :class:`gatelab.core.config.RegimeConfig`);
this module turns it into a model. Paper 001 §4 (docs/papers.md):

=========  ===========  =====================================  ===========  ======
regime     Θf trains    Θf at init                             Θv at init   gate
=========  ===========  =====================================  ===========  ======
relu       tied to Θv   = Θv (one network)                     random       hard
frnpf_ii   no           random, independent of Θv              random       hard
frnpf_di   no           copy of Θv0, then frozen               random       hard
dlnpf      yes          random, independent                    random       soft
flnpf      no           copied from a trained ReLU run         random       hard
=========  ===========  =====================================  ===========  ======

Paper 002's networks: ``soft_relu`` N(Θ,β;Θ) and ``dln`` (tied, soft / all-one gates), ``galu``
(= frnpf_ii), ``soft_galu`` (= dlnpf, eps=0), ``frozen_relu`` (= frnpf_di), ``learned_gates``
(= flnpf), ``gates_only`` (Θf trains, Θv frozen at init).

A new regime is a new yaml; new *kinds* of feature initialisation go in :func:`init_feature`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch
from omegaconf import OmegaConf

from gatelab.core import checkpoints
from gatelab.data import routing_tasks
from gatelab.nets import routing
from gatelab.core.config import CONF_DIR, ConfigError, FeatureInit, RegimeConfig
from gatelab.nets.dgn import DGN, Net, build_net, init_
from gatelab.core.runs import job_config, plain, run_dir, seed_configs
from gatelab.core.results import finished_results

# The random streams of each seed. Θv is drawn first, then Θf, from one generator, so all regimes
# of one seed share Θv0 (paired comparisons). FLNPF draws Θv0 from its own stream: its source is
# the ReLU run of the same seed, whose Θ0 is that shared draw, and Θv0 must be independent of Θf.
INIT_STREAM, SOURCE_VALUE_STREAM = 0, 2


def init_generator(seed: int, stream: int = INIT_STREAM) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed) * 1000 + stream)


def needs_source(cfg) -> bool:
    return cfg.regime.feature_init == FeatureInit.source


def regime_config(name: str):
    """``conf/regime/<name>.yaml`` on the regime schema."""
    path = CONF_DIR / "regime" / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in path.parent.glob("*.yaml")))
        raise ConfigError(f"unknown regime {name!r}; known: {known}")
    own = OmegaConf.load(path)
    parents = [d for d in own.pop("defaults", []) if d != "_self_"]  # e.g. galu.yaml: frnpf_ii, then its own keys
    return OmegaConf.merge(OmegaConf.structured(RegimeConfig), *(regime_config(p) for p in parents), own)


def relu_twin(cfg):
    """This run's config with ``regime=relu``: the ReLU run that ``regime.source=auto`` copies."""
    return OmegaConf.merge(job_config(cfg), {"regime": regime_config("relu")})


def row_configs(cfg) -> list:
    """[((regime, lr, seed), config)] of a row job: ``regimes`` (each its conf/regime yaml; default
    this config's regime) × ``lrs`` (default optimizer.lr) × ``seeds`` (default seed)."""
    base = job_config(cfg)
    names = list(cfg.get("regimes") or [cfg.regime.name])
    lrs = [float(v) for v in (cfg.get("lrs") or [cfg.optimizer.lr])]
    seeds = [int(v) for v in (cfg.seeds or [cfg.seed])]
    regs = {n: (cfg.regime if n == cfg.regime.name and not cfg.get("regimes") else regime_config(n)) for n in names}
    out = []
    for n in names:
        for lr in lrs:  # one merge a (regime, lr); its seeds copied from it
            one = OmegaConf.merge(base, {"regime": regs[n], "optimizer": {"lr": lr}, "regimes": None, "lrs": None})
            out += [((n, lr, s), c) for s, c in zip(seeds, seed_configs(one, seeds))]
    return out


def relu_source_dir(cfg) -> Path:
    """``regime.source=auto``: the run directory of :func:`relu_twin`."""
    return run_dir(relu_twin(cfg))


def source_path(cfg) -> Optional[Path]:
    """The FLNPF source checkpoint file (None for other regimes); raises if it is absent, or if it
    is the best.pt of a finished run whose results.json names another best epoch (such a run is no source)."""
    reg = cfg.regime
    if not needs_source(cfg):
        return None
    if reg.source != "auto":
        path = checkpoints.resolve(reg.source, reg.source_ckpt)
    else:
        try:
            path = checkpoints.resolve(str(relu_source_dir(cfg)), reg.source_ckpt)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"{e}. regime.source=auto looks for the ReLU run of this cell and seed: "
                                    "run it first (same overrides with regime=relu)") from None
    run = path.parent.parent
    done = finished_results(run) if path.name == checkpoints.BEST else None
    problem = done and checkpoints.best_mismatch(run, done)
    if problem:
        raise ConfigError(f"regime.source {run}: {problem}; it is no FLNPF source (python -m gatelab.core.run_check "
                          f"lists such runs; force=true on the ReLU run retrains it)")
    return path


def check_source_state(cfg, state: dict, path) -> None:
    """The source checkpoint ``state`` is a ReLU network of this run's architecture, else ConfigError."""
    arch, src_arch, src_regime = plain(cfg.arch), state["arch"], state["regime"]
    mine = {k: v for k, v in arch.items() if k != "name"}
    theirs = {k: v for k, v in src_arch.items() if k != "name"}
    if mine != theirs:
        raise ConfigError(f"regime.source {path} has architecture {src_arch}, this run has {arch}")
    if not (src_regime["tied"] and src_regime["gate"] == "hard"):
        raise ConfigError(f"regime.source {path} is a {src_regime['name']} run; FLNPF copies a ReLU network")


def check_source(cfg) -> Optional[Path]:
    """The plan's check of an FLNPF source before anything trains: it exists (:func:`source_path`), and its
    checkpoint (read memory-mapped) is a ReLU network of this run's architecture (:func:`check_source_state`)."""
    path = source_path(cfg)
    if path is not None:
        check_source_state(cfg, checkpoints.load(path, peek=True), path)
    return path


def load_source(cfg, in_shape: tuple, out_dim: int, path: Optional[Path] = None) -> tuple[dict, str]:
    """State dict of the source ReLU network for FLNPF (``path``, default :func:`source_path`),
    checked against this run's architecture."""
    path = path or source_path(cfg)
    state = checkpoints.load(path)
    check_source_state(cfg, state, path)
    if tuple(state["in_shape"]) != tuple(in_shape) or state["out_dim"] != out_dim:
        raise ConfigError(f"regime.source {path} was trained on inputs {tuple(state['in_shape'])} -> "
                          f"{state['out_dim']} outputs, this run has {tuple(in_shape)} -> {out_dim}")
    sd = state["model"]
    return {k[len("value."):]: v for k, v in sd.items() if k.startswith("value.")}, str(path)


def init_feature(regime, feature: Net, value: Net, source_state: dict | None) -> None:
    """Θf at initialisation, per ``regime.feature_init``."""
    kind = regime.feature_init
    if kind == "copy_value":
        feature.load_state_dict(value.state_dict())
    elif kind == "source":
        feature.load_state_dict(source_state)
    elif kind != "independent":
        raise ConfigError(f"unknown regime.feature_init {kind!r}")


def build_model(cfg, in_shape: tuple, out_dim: int, source: Optional[Path] = None) -> tuple[DGN, dict]:
    """The DGN of ``cfg.regime`` over ``cfg.arch``, initialised from ``cfg.seed``. Also returns
    info for results.json (e.g. the resolved FLNPF source checkpoint, ``source`` if given)."""
    regime, arch = cfg.regime, cfg.arch
    if arch.name == "routing":
        return build_routing(cfg, in_shape, out_dim), {}
    info: dict = {}
    source_state = None
    if needs_source(cfg):  # checked before anything is drawn or trained
        source_state, info["source_checkpoint"] = load_source(cfg, in_shape, out_dim, source)
    gen = init_generator(cfg.seed, SOURCE_VALUE_STREAM if needs_source(cfg) else INIT_STREAM)
    value = init_(build_net(arch, in_shape, out_dim), arch.init, gen, arch.get("init_std"))
    feature = None
    if not regime.tied:
        feature = init_(build_net(arch, in_shape, out_dim), arch.init, gen, arch.get("init_std"))  # independent
        init_feature(regime, feature, value, source_state)
        for name, p in feature.named_parameters():
            # The feature net's head is never used; its hidden layers train only in learning regimes.
            p.requires_grad_(regime.feature_trainable and not name.startswith("head."))
    value.requires_grad_(regime.value_trainable)
    model = DGN(value, feature, regime.gate, regime.beta, regime.eps, regime.feature_act)
    return model, info


def build_routing(cfg, in_shape: tuple, out_dim: int) -> routing.RoutingNet:
    """A routing net (paper 003) with its task drawn from ``cfg.seed`` (:mod:`gatelab.nets.routing`)."""
    arch, reg = cfg.arch, cfg.regime
    task = routing_tasks.make_task(cfg.dataset.routing, tuple(in_shape), out_dim, cfg.seed)
    net = routing.RoutingNet(cfg.dataset.routing.M, task["input_index"].shape[1], arch.dense[0], out_dim, task,
                             "leaky" if reg.gate == "leaky" else "none", reg.get("slope", 0.01))
    return routing.init_(net, arch.init_gain, arch.decoder_fan, init_generator(cfg.seed))


def trainable_parameters(model: DGN) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def describe(model: DGN) -> dict:
    """Parameter counts, for results.json."""
    n = lambda ps: sum(p.numel() for p in ps)  # noqa: E731
    if not isinstance(model, DGN):
        return {"params": n(model.parameters()), "trainable_params": n(trainable_parameters(model))}
    return {"value_params": n(model.value.parameters()),
            "feature_params": n(model.feature.parameters()) if model.feature is not None else 0,
            "trainable_params": n(trainable_parameters(model))}

