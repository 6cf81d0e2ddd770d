"""Nets trained together: their stacked model, optimiser and data-order generators.

Seeds of one cell (and regimes of one family in a row) are stacked along a leading dimension
(:func:`gatelab.nets.dgn.stack_models`: batched matmuls, grouped convolutions), each with its own
initialisation and data order, exactly as when trained alone; the loss is the sum of the per-net
mean losses, so each net gets its own gradient. The optimiser state is stored per net in each
run's checkpoint (:func:`unstack_optimizer_state`) and stacked again on resume.
"""
from __future__ import annotations

from typing import Optional

import torch
from omegaconf import OmegaConf

from gatelab.analyses import pruning
from gatelab.core import machine
from gatelab.nets import regimes
from gatelab.nets.dgn import stack_models, use_channels_last

FUSED_DEVICES = ("cpu", "cuda")  # where torch's fused Adam/SGD kernels run
SHUFFLE_STREAM = 1  # the data order of seed s comes from its own generator, independent of init


def make_optimizer(opt_cfg, params) -> torch.optim.Optimizer:
    """SGD (constant step, momentum 0 by default), Adam, RMSprop; the fused implementation where
    torch has one for the parameters' device (CPU, CUDA; about 25% faster per step on the CPU for
    FC/MNIST), else foreach."""
    params = list(params)
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}[opt_cfg.name]
    kw = dict(lr=opt_cfg.lr, weight_decay=opt_cfg.weight_decay)
    if opt_cfg.name != "adam":
        kw["momentum"] = opt_cfg.momentum
    if not all(p.device.type in FUSED_DEVICES for p in params):
        return cls(params, foreach=True, **kw)
    try:
        return cls(params, fused=True, **kw)
    except (TypeError, RuntimeError, ValueError):
        return cls(params, foreach=True, **kw)


def setup(cfg, runs: list, device: torch.device):
    """The stacked model on ``device`` (resumed runs from their resume point), its optimiser (state
    on the parameters' device, also when resumed from a checkpoint written on another device) and
    one CPU data-order generator per net (:meth:`gatelab.data.datasets.Split.stacked_batches`)."""
    resumed = runs[0].last is not None
    for r in runs if resumed else []:
        r.resume()
    model = use_channels_last(stack_models([r.model for r in runs]).to(device), machine.channels_last(cfg, machine.detect(device)))
    pruning.mask_gradients(model, [r.mask for r in runs])
    lrs = [float(r.cfg.optimizer.lr) for r in runs]
    per_net = len(set(lrs)) > 1  # a row's SGD step sizes: plain SGD at step 1 on gradients scaled by each net's lr
    params = regimes.trainable_parameters(model)
    opt = make_optimizer(OmegaConf.merge(cfg.optimizer, {"lr": 1.0}) if per_net else cfg.optimizer, params)
    if per_net:
        scale = torch.tensor(lrs, device=device)
        for p in params:
            p.register_hook(lambda g, s=scale.view(-1, *[1] * (p.dim() - 1)): g * s)
    gens = [torch.Generator().manual_seed(r.seed * 1000 + SHUFFLE_STREAM) for r in runs]
    if resumed:
        opt.load_state_dict(stack_optimizer_state([r.last["optimizer"] for r in runs]))
        for g in opt.param_groups if per_net else []:
            g["lr"] = 1.0
        for r, g in zip(runs, gens):
            g.set_state(r.last["shuffle_rng"])
    return model, opt, gens


def stack_optimizer_state(states: list[dict]) -> dict:
    """One optimiser state dict for stacked parameters from the nets' own (per-parameter tensors
    stacked; scalars such as Adam's step count, equal across nets, taken from the first)."""
    stacked = {"param_groups": states[0]["param_groups"], "state": {}}
    for idx, first in states[0]["state"].items():
        stacked["state"][idx] = {k: torch.stack([st["state"][idx][k] for st in states])
                                 if torch.is_tensor(v) and v.dim() > 0 else v for k, v in first.items()}
    return stacked


def unstack_optimizer_state(state: dict, s: int, lr: Optional[float] = None) -> dict:
    """Net ``s``'s optimiser state dict (as if it had been trained alone), a copy: every tensor is
    cloned, the step counts too (``opt.state_dict()`` hands out the live tensors, which the next step
    changes while a checkpoint of this state may still be waiting to be written). ``lr``: the net's
    own step size (a row's nets train at step 1 on scaled gradients)."""
    def own(v):
        if not torch.is_tensor(v):
            return v
        return v[s].clone() if v.dim() > 0 else v.clone()
    groups = state["param_groups"] if lr is None else [dict(g, lr=float(lr)) for g in state["param_groups"]]
    return {"param_groups": groups,
            "state": {idx: {k: own(v) for k, v in st.items()} for idx, st in state["state"].items()}}
