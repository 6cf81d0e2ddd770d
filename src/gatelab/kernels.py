"""Kernels of gated networks (paper 001 §2.2, §3).

* Input Gram matrix Σ(s,s') = <x_s, x_s'>.
* Overlap Λ(s,s') = (number of paths active for both s and s') / d_in. For a fully connected
  net a path picks one unit per layer independently, so Λ(s,s') = Π_l <G_l(s), G_l(s')>
  (with soft gates: the same product of gate values, i.e. <φ_s, φ_s'> / Σ(s,s')).
* Neural path kernel H = Σ ⊙ Λ (Lemma 2.1), H(s,s') = <φ_{x_s}, φ_{x_s'}>.
"""
from __future__ import annotations

import torch

from .models import DGN


def gram(x: torch.Tensor) -> torch.Tensor:
    """Σ = X Xᵀ over flattened inputs."""
    x = x.flatten(1)
    return x @ x.T


@torch.no_grad()
def gates(model: DGN, x: torch.Tensor) -> list[torch.Tensor]:
    """The gates G(l) of every hidden layer, each flattened to (n, units)."""
    _, gs = model(x, return_gates=True)
    return [g.flatten(1) for g in gs]


def overlap(gate_list: list[torch.Tensor]) -> torch.Tensor:
    """Λ = Π_l G_l G_lᵀ for a fully connected net (Definition 2.2)."""
    lam = None
    for g in gate_list:
        term = g @ g.T
        lam = term if lam is None else lam * term
    return lam


def npk(model: DGN, x: torch.Tensor) -> torch.Tensor:
    """H = Σ ⊙ Λ (Lemma 2.1) of a fully connected DGN at inputs ``x``."""
    if model.value.n_conv:
        raise NotImplementedError("npk: the product form of Λ holds for fully connected nets only")
    return gram(x) * overlap(gates(model, x))
