"""Iterative magnitude pruning (IMP, Frankle & Carbin 2019) as ordinary runs: paper 004 §5, Fig 5.

Round r of ``imp.sparsity=p`` (``imp.round=r``, 1..``imp.rounds``) is a run of the same cell and
seed that starts from the same initialisation (rewinding to t=0), with the weights of W1 and W2
pruned globally by magnitude (biases kept) from the final weights of round r-1 (round 0: the
dense run) to the cumulative sparsity 1-(1-p)^(r/R). The pruned weights stay exactly zero: they
are zeroed at the start and their gradients are masked. The keep-mask is saved with the run
(``mask.pt``); a missing earlier round is trained first, as FLNPF's ReLU source is.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from omegaconf import OmegaConf

from gatelab.analyses import neurons
from gatelab.core import checkpoints
from gatelab.core.config import ImpConfig
from gatelab.core.results import finished_results, results_sha256
from gatelab.core.runs import job_config, plain, run_dir

MASK_FILE = "mask.pt"
PRUNED = ("value.hidden.0.weight", "value.head.weight")  # W1, W2 of a one-hidden-layer net


def active(cfg) -> bool:
    imp = cfg.get("imp")
    return imp is not None and imp.sparsity is not None


def parent(cfg):
    """The run whose final weights this round prunes: round r-1, or the dense run for round 1."""
    prev = OmegaConf.structured(ImpConfig) if cfg.imp.round == 1 else {"round": cfg.imp.round - 1}
    return OmegaConf.merge(job_config(cfg), {"imp": prev})


def parent_dir(cfg) -> Path:
    """The parent run's directory; raises with the run to make when it is not completed, or when its final weights
    are gone and no :data:`CARRIED_MASK` of this round made from them is here."""
    d = run_dir(parent(cfg))
    done = finished_results(d)
    if done is None or done["status"] != "completed" or not (
            (d / checkpoints.CKPT_DIR / "last.pt").is_file() or _carried(cfg, d) is not None):
        raise FileNotFoundError(f"imp.round={cfg.imp.round} prunes the final weights of {d}, which is not a "
                                "completed run: train it first (same overrides, imp.round one lower)")
    return d


def make_mask(cfg) -> dict:
    """This round's keep-masks {state key: bool tensor} from the parent's final weights and mask, or, where they
    are gone (a parent carried in git without its checkpoints, issue #55), the :data:`CARRIED_MASK` made from them."""
    d = parent_dir(cfg)
    if not (d / checkpoints.CKPT_DIR / "last.pt").is_file():
        return _carried(cfg, d)
    state = checkpoints.load(d / checkpoints.CKPT_DIR / "last.pt")["model"]
    prev = checkpoints.load(d / MASK_FILE)["mask"] if active(parent(cfg)) else None
    target = neurons.round_sparsity(cfg.imp.sparsity, cfg.imp.rounds, cfg.imp.round)
    return neurons.prune_mask(state, target, prev, PRUNED)


CARRIED_MASK = "mask.carried.pt"  # a round's keep-mask made where its parent trained, in the round's run directory


def carry_mask(cfg) -> Path:
    """Write this round's keep-mask (:func:`make_mask`, from the parent's final weights here) into the round's run
    directory as :data:`CARRIED_MASK`, bit-packed (an eighth of a bool tensor), with the sha256 of the parent's
    results.json it was made from; the file a machine without the parent's checkpoints starts the round from."""
    mask, d = make_mask(cfg), parent_dir(cfg)
    out = run_dir(cfg) / CARRIED_MASK
    checkpoints.save(out, imp=plain(cfg.imp), parent_results_sha256=results_sha256(d),
                     shapes={k: list(m.shape) for k, m in mask.items()},
                     bits={k: torch.from_numpy(np.packbits(m.numpy().ravel())) for k, m in mask.items()})
    return out


def _carried(cfg, parent: Path) -> Optional[dict]:
    """The :data:`CARRIED_MASK` of this round, if it is here and was made from ``parent``'s present results."""
    got = checkpoints.load_good(run_dir(cfg) / CARRIED_MASK, quiet=True)
    if got is None or got.get("imp") != plain(cfg.imp) or got.get("parent_results_sha256") != results_sha256(parent):
        return None
    return {k: torch.from_numpy(np.unpackbits(b.numpy(), count=int(np.prod(got["shapes"][k])))
                                .reshape(got["shapes"][k]).astype(bool)) for k, b in got["bits"].items()}


def apply_(model: torch.nn.Module, mask: dict) -> None:
    """Zero the pruned weights of a single (unstacked) model."""
    with torch.no_grad():
        for key, keep in mask.items():
            model.get_parameter(key).mul_(keep.to(model.get_parameter(key).dtype))


def mask_gradients(model: torch.nn.Module, masks: list[Optional[dict]]) -> None:
    """Gradient hooks that keep the pruned weights of a stacked model (seed s: ``masks[s]``) at
    zero. The masks are laid out like the model's parameters by loading them into a CPU copy of it;
    each hook holds its mask on the parameter's device."""
    if all(m is None for m in masks):
        return
    state = model.state_dict()
    holder = copy.deepcopy(model).to_empty(device="cpu")  # the masks are CPU tensors: no device reads
    holder.load_state_dict({k: torch.stack([m[k].to(v.dtype) if k in m else torch.ones(v.shape[1:], dtype=v.dtype)
                                            for m in masks]) for k, v in state.items()})
    for p, keep in zip(model.parameters(), holder.parameters()):
        if not bool(keep.all()):
            p.register_hook(lambda g, keep=keep.detach().to(p.device): g * keep)
