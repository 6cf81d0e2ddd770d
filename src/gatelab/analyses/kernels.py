"""Kernels of gated networks (paper 001 §2.2, §3).

* Input Gram matrix Σ(s,s') = <x_s, x_s'>.
* Overlap Λ(s,s') = (number of paths active for both s and s') / d_in. For a fully connected
  net a path picks one unit per layer independently, so Λ(s,s') = Π_l <G_l(s), G_l(s')>
  (with soft gates: the same product of gate values, i.e. <φ_s, φ_s'> / Σ(s,s')).
* Neural path kernel H = Σ ⊙ Λ (Lemma 2.1), H(s,s') = <φ_{x_s}, φ_{x_s'}>.
* Fixed-NPF NTK limit d·σ^(2(d-1))·H (Theorem 5.1).
"""
from __future__ import annotations

import torch

from gatelab.nets.dgn import DGN


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


def ntk_blocks(model: DGN, x: torch.Tensor, chunk: int = 50) -> dict[str, torch.Tensor]:
    """NTK blocks of Prop 4.1: ``value`` = Kᵛ = Ψᵛᵀ Ψᵛ (gradients w.r.t. Θv) and, for an untied DGN,
    ``feature`` = Kᶠ (gradients w.r.t. the feature net's hidden layers; its head is unused).

    For a vector output, K(s,s') = Σ_c <∂θ ŷ_c(x_s), ∂θ ŷ_c(x_s')> (the trace over output units).
    Per-example Jacobians come from ``torch.func`` (vmap of jacrev), ``chunk`` examples at a time.
    """
    from torch.func import functional_call, jacrev, vmap

    params = {k: p.detach() for k, p in model.named_parameters()}
    groups = {"value": [k for k in params if k.startswith("value.")]}
    if not model.tied:
        groups["feature"] = [k for k in params if k.startswith("feature.") and not k.startswith("feature.head.")]

    def out(sub, xi):
        return functional_call(model, {**params, **sub}, (xi.unsqueeze(0),)).squeeze(0)

    blocks = {}
    for name, keys in groups.items():
        sub = {k: params[k] for k in keys}
        jac = torch.cat([torch.cat([j.flatten(2) for j in vmap(jacrev(out), in_dims=(None, 0))(sub, xc).values()], 2)
                         for xc in x.split(chunk)])  # (n, outputs, parameters)
        blocks[name] = torch.einsum("ncp,mcp->nm", jac, jac)
    return blocks


def nu(h: torch.Tensor, y: torch.Tensor, normalise: bool = True) -> float:
    """ν = yᵀ Ĥ⁻¹ y with Ĥ = H / trace(H) (paper 001 Fig. 3 middle), in float64; ``normalise=False``:
    yᵀ H⁻¹ y (paper 002 Fig. 8 iii, H = Kᵃ)."""
    h = h.double()
    h_hat = h / torch.trace(h) if normalise else h
    return float(y.double() @ torch.linalg.solve(h_hat, y.double()))


def fnpf_limit(x: torch.Tensor, gate_list: list[torch.Tensor], sigma: float) -> torch.Tensor:
    """K_FNPF = d·σ^(2(d-1))·H (paper 001 Theorem 5.1): the value NTK Kᵛ of a bias-free FC gated net
    of depth d = len(gate_list) + 1 with these fixed gates, in expectation over value weights drawn
    i.i.d. from {-σ, +σ} independently of the gates (exact at any width), and its limit as the width
    grows with σ = σ'/√w."""
    d = len(gate_list) + 1
    return d * sigma ** (2 * (d - 1)) * gram(x) * overlap(gate_list)


def gated_forward(weights: list[torch.Tensor], gates: list, x: torch.Tensor) -> tuple[torch.Tensor, list]:
    """ŷ (n,) and the hidden outputs [z_0 = x, z_1, ..., z_{d-1}] of a bias-free FC gated network,
    z_l = (W_l z_{l-1}) ⊙ G_l. A gate given as None is the ReLU's own, 1{q_l > 0} (paper 002 Table 2)."""
    zs = [x.flatten(1)]
    for w, g in zip(weights[:-1], gates):
        q = zs[-1] @ w.T
        zs.append(q * (q > 0) if g is None else q * g)
    return (zs[-1] @ weights[-1].T).squeeze(1), zs


def gated_ntk(weights: list[torch.Tensor], gates: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """NTK K(s,s') = <∂Θ ŷ(x_s), ∂Θ ŷ(x_s')> of a bias-free fully connected gated network with the
    given gates (gates[l]: (n, w_l), e.g. fixed random Ber(µ) gates of paper 002's DGN-FRG):
    z_l = (W_l z_{l-1}) ⊙ G_l, ŷ = W_d z_{d-1}. Layer by layer, ∂ŷ/∂W_l = δ_l z_{l-1}ᵀ with
    δ_l = ∂ŷ/∂q_l, so K = Σ_l (Δ_l Δ_lᵀ) ⊙ (Z_{l-1} Z_{l-1}ᵀ): no per-example Jacobian is formed,
    which keeps width 500 x depth 20 cheap. ``weights[-1]`` is the (1, w) output layer; a gate
    given as None is the ReLU's own (its gradient through the 0/1 gate is zero).
    """
    zs = gated_forward(weights, gates, x)[1]
    delta = torch.ones(len(x), 1, dtype=x.dtype, device=x.device)  # ∂ŷ/∂ŷ
    k = torch.zeros(len(x), len(x), dtype=x.dtype, device=x.device)
    for l in range(len(weights) - 1, -1, -1):
        k += (delta @ delta.T) * (zs[l] @ zs[l].T)
        if l:
            g = gates[l - 1] if gates[l - 1] is not None else (zs[l] > 0).to(x.dtype)
            delta = (delta @ weights[l]) * g
    return k
