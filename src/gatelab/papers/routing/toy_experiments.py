"""Paper 003 Figs 3-6 experiments on the toy routing task and XoR: simulations against the reduced
ODEs, the pathway race, generalisation to untrained routes (model and ODEs: :mod:`gatelab.papers.routing.toy`)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Optional

import numpy as np
import torch

from gatelab.papers.routing.toy import HIDDEN, K_FIG4, LR_FIG4, M_FIG4, SIGMA0, STEPS_FIG4, B0_DECOUPLED, DTYPE, Tensor, cross_domain_similarity, init_decoupled, init_random, integrate, output_grid, pair_errors, pair_mask, race_rhs, reduced_loss, reduced_routing, rsa_matrix, split_errors, task_statistics, time_scale, toy_data, train


# ----------------------------------------------------------------------------------------------
# Fig 4e-h: decoupled and random-init simulations against the reduction
# ----------------------------------------------------------------------------------------------

def _max_rel_gap(sim: np.ndarray, pred: np.ndarray) -> float:
    """max_t |L_sim(t) − L_pred(t)| / L_sim(0); ``sim`` (T,) or (T, R) → the worst run."""
    sim = sim.reshape(len(sim), -1)
    return float((np.abs(sim - pred[:, None]) / sim[0]).max())


def decoupled_vs_reduction(lr: float = LR_FIG4, steps: int = STEPS_FIG4, M: int = M_FIG4, K: int = K_FIG4,
                           hidden: int = HIDDEN, b0=B0_DECOUPLED, norm: str = "code", seed: int = 0) -> dict:
    """Simulate from decoupled init and integrate eqs 44-46 with h = λ·c.

    ``gap_rk4``: max |ΔL|/L₀ against RK4 (the flow: GD's own O(λ) discretisation error);
    ``gap_euler``: against Euler with the same step (GD is exactly Euler on eqs 44-46: rounding only);
    ``ratio``: final B2/B1 of the top mode against √M (Fig 4f, eq. 51)."""
    X, Y = toy_data()
    st = task_statistics(X, Y)
    net = init_decoupled(X, Y, M, hidden, b0, seed)
    sim = train(net, X, Y, pair_mask(M, K), lr, steps, norm)["loss"][:, 0]
    c = time_scale(M * K, Y.shape[0], norm)
    B = reduced_routing(st, M, b0, lr * c, steps, "rk4")
    pred = reduced_loss(B, st, c)
    pred_euler = reduced_loss(reduced_routing(st, M, b0, lr * c, steps, "euler"), st, c)
    return {"lr": lr, "steps": steps, "L0": float(sim[0]), "loss_sim": sim, "loss_pred": pred,
            "gap_rk4": _max_rel_gap(sim, pred), "gap_euler": _max_rel_gap(sim, pred_euler),
            "B": B, "ratio": float(B[-1, 1, 0] / B[-1, 0, 0]), "sqrt_M": math.sqrt(M)}


def step_size_scaling(lrs: Sequence[float] = (0.02, 0.01, 0.005), total: float = LR_FIG4 * STEPS_FIG4,
                      **kw) -> list[dict]:
    """:func:`decoupled_vs_reduction` at several λ over the same λ·steps; the gap is O(λ) (GD = Euler)."""
    rows = []
    for lr in lrs:
        r = decoupled_vs_reduction(lr=lr, steps=round(total / lr), **kw)
        rows.append({"lr": lr, "steps": r["steps"], "gap_rk4": r["gap_rk4"], "gap_euler": r["gap_euler"]})
    for a, b in pairwise(rows):
        b["order"] = math.log(a["gap_rk4"] / b["gap_rk4"]) / math.log(a["lr"] / b["lr"])
    return rows


def random_vs_reduction(n_runs: int = 10, sigma0: float = SIGMA0, lr: float = LR_FIG4, steps: int = STEPS_FIG4,
                        M: int = M_FIG4, K: int = K_FIG4, hidden: int = HIDDEN, b0=B0_DECOUPLED,
                        kind: str = "orthogonal", norm: str = "code", seed: int = 0, sv_every: int = 5) -> dict:
    """Fig 4e-h: ``n_runs`` nets from small random weights against eqs 44-46 started at ``b0``.

    Returns the loss curves, the max |ΔL|/L₀ per run (``gaps``), trained/untrained pair error,
    the cross-domain similarity, and the final top-singular-value ratio σ₁(W2)/σ₁(W1_0) (Fig 4f)."""
    X, Y = toy_data()
    st = task_statistics(X, Y)
    mask = pair_mask(M, K)
    net = init_random(n_runs, M, hidden, X.shape[0], Y.shape[0], sigma0, kind, seed)
    res = train(net, X, Y, mask, lr, steps, norm, sv_every)
    c = time_scale(M * K, Y.shape[0], norm)
    B = reduced_routing(st, M, b0, lr * c, steps)
    pred = reduced_loss(B, st, c)
    pred_euler = reduced_loss(reduced_routing(st, M, b0, lr * c, steps, "euler"), st, c)
    sim = res["loss"]
    tr, un = split_errors(pair_errors(net, X, Y), mask)
    return {"loss_sim": sim, "loss_pred": pred, "B": B, "sv": res["sv"], "sv_step": res["sv_step"],
            "gaps": np.abs(sim - pred[:, None]).max(0) / sim[0],
            "gaps_euler": np.abs(sim - pred_euler[:, None]).max(0) / sim[0], "trained_err": tr, "untrained_err": un,
            "similarity": cross_domain_similarity(net, X), "sv_ratio": res["sv"][-1, :, 1, 0] / res["sv"][-1, :, 0, 0],
            "net": net}


# ----------------------------------------------------------------------------------------------
# Fig 5b: pathway race (eqs 16-17)
# ----------------------------------------------------------------------------------------------

def conserved(B: np.ndarray, P: int) -> np.ndarray:
    """√P·B1² − B2² along a (B1, B2) trajectory (M·B1² − B2² for P = M², eqs 13-15)."""
    return math.sqrt(P) * B[:, 0] ** 2 - B[:, 1] ** 2


def conservation_drift(B: np.ndarray, P: int) -> float:
    """max_t |Q(t) − Q(0)| / max_t (√P·B1² + B2²): drift relative to the terms that cancel in Q."""
    Q = conserved(B, P)
    return float(np.abs(Q - Q[0]).max() / (math.sqrt(P) * B[:, 0] ** 2 + B[:, 1] ** 2).max())


def pathway_race(M: int = 10, Ps: Optional[Sequence[int]] = None, b0: float = SIGMA0, h: float = 0.05,
                 t_max: float = 300.0, method: str = "rk4") -> dict:
    """Eqs 16-17 for P = g² paths per hidden matrix (groups of g | M domains; toy S, D), t in τ.

    Per P: the trajectory, t½ (the top mode's a = B2B1² reaching half of s/d), final B2/B1 against
    P^¼ (eq. 56; √M at P = M²) and the drift of √P·B1² − B2²."""
    X, Y = toy_data()
    st = task_statistics(X, Y)
    Ps = Ps or [g * g for g in range(1, M + 1) if M % g == 0]
    n = round(t_max / h)
    t = np.arange(n + 1) * h
    out = {"t": t, "P": list(Ps), "B": {}, "t_half": {}, "ratio": {}, "drift": {}}
    for P in Ps:
        y0 = np.full((2, len(st["s"])), b0)
        B = integrate(race_rhs(st["s"], st["d"], M, P), y0, h, n, method)
        a = B[:, 1, 0] * B[:, 0, 0] ** 2
        half = np.nonzero(a >= 0.5 * st["s"][0] / st["d"][0])[0]
        out["B"][P] = B
        out["t_half"][P] = float(t[half[0]]) if len(half) else math.nan
        out["ratio"][P] = float(B[-1, 1, 0] / B[-1, 0, 0])
        out["drift"][P] = conservation_drift(B, P)
    return out


# ----------------------------------------------------------------------------------------------
# Fig 5c, Fig 6: generalisation to untrained routes
# ----------------------------------------------------------------------------------------------

def k_sweep(M: int = 10, Ks: Optional[Sequence[int]] = None, n_runs: int = 3, sigma0: float = SIGMA0,
            lr0: float = 0.05, steps: int = 1000, hidden: int = HIDDEN, seed: int = 0) -> dict:
    """Fig 5c: final trained / untrained pair error (½‖Y−Ŷ‖²) against K/M, λ = lr0/K, all K in one batch.

    Also the reduction's trained error after the same steps (eqs 44-46, b0 = σ₀/2.5; independent of K
    since λ·c = 2·lr0·M/N_out)."""
    X, Y = toy_data()
    Ks = list(Ks or range(1, M + 1))
    masks = torch.stack([pair_mask(M, K) for K in Ks for _ in range(n_runs)])
    lrs = torch.tensor([lr0 / K for K in Ks for _ in range(n_runs)], dtype=DTYPE)
    net = init_random(len(masks), M, hidden, X.shape[0], Y.shape[0], sigma0, seed=seed)
    loss = train(net, X, Y, masks, lrs, steps)["loss"]
    tr, un = split_errors(pair_errors(net, X, Y), masks)
    st = task_statistics(X, Y)
    B = reduced_routing(st, M, sigma0 / 2.5, 2 * lr0 * M / Y.shape[0], steps)
    a = B[-1, 0] * B[-1, 1] * B[-1, 2]
    theory = 0.5 * st["P"] * float((st["d"] * (st["s"] / st["d"] - a) ** 2).sum())
    return {"K": Ks, "K_over_M": [K / M for K in Ks], "trained_err": tr.reshape(len(Ks), n_runs),
            "untrained_err": un.reshape(len(Ks), n_runs), "loss": loss, "theory_trained_err": theory,
            "zero_output_err": float(0.5 * (Y ** 2).sum())}


def init_scale_sweep(sigma0s: Optional[Sequence[float]] = None, steps: int = 700, M: int = M_FIG4,
                     K: int = K_FIG4, hidden: int = HIDDEN, n_runs: int = 1, seed: int = 0,
                     lr: Optional[Callable[[float], float]] = None) -> dict:
    """Fig 6: σ₀ ∈ linspace(.2, 2.5, 6), 700 steps, λ(σ₀) = .006/σ₀^⅓ (authors' notebook), orthogonal init.

    Per σ₀ (mean over ``n_runs``): loss curve, trained / untrained pair error, cross-domain same-item
    cosine of h1, and the RSA matrix (6c) and every pair's outputs (6d) of the first run."""
    X, Y = toy_data()
    sigma0s = list(np.linspace(0.2, 2.5, 6) if sigma0s is None else sigma0s)
    lr = lr or (lambda s: 0.006 / s ** (1 / 3))
    per_run = [s for s in sigma0s for _ in range(n_runs)]
    net = init_random(len(per_run), M, hidden, X.shape[0], Y.shape[0], per_run, seed=seed)
    mask = pair_mask(M, K)
    loss = train(net, X, Y, mask, [lr(s) for s in per_run], steps)["loss"]
    tr, un = split_errors(pair_errors(net, X, Y), mask)
    sim = cross_domain_similarity(net, X)
    shape = (len(sigma0s), n_runs)
    return {"sigma0": sigma0s, "loss": loss.reshape(steps + 1, *shape).mean(2),
            "trained_err": tr.reshape(shape).mean(1), "untrained_err": un.reshape(shape).mean(1),
            "similarity": sim.reshape(shape).mean(1),
            "rsa": [rsa_matrix(net, X, i * n_runs) for i in range(len(sigma0s))],
            "outputs": [output_grid(net, X, i * n_runs) for i in range(len(sigma0s))]}


# ----------------------------------------------------------------------------------------------
# Fig 3: XoR
# ----------------------------------------------------------------------------------------------

def xor_data(dtype=DTYPE) -> tuple[Tensor, Tensor]:
    """App. A.1: x ∈ {±1}² (columns), y = x1·x2 (so x = [1, 1] has y = 1, eq. 18)."""
    X = torch.tensor([[1.0, 1, -1, -1], [1, -1, 1, -1]], dtype=dtype)
    return X, X[0] * X[1]


def xor_theory(t: np.ndarray, tau: float = 2.5, a0: float = 1e-6, P: int = 4) -> np.ndarray:
    """Eqs 21-23: a(t) = (s/d)/(1 − (1 − s/(d a0)) e^{−2st/τ}), L = ½ − P s a + (P/2) d a², s=√2/P, d=2/P."""
    s, d = math.sqrt(2) / P, 2 / P
    a = (s / d) / (1 - (1 - s / (d * a0)) * np.exp(-2 * s * np.asarray(t, float) / tau))
    return 0.5 - P * s * a + 0.5 * P * d * a ** 2


def xor_relu(n_runs: int = 10, hidden: int = 128, sigma0: float = 2e-4, tau: float = 2.5, dt: float = 0.1,
             steps: int = 1000, seed: int = 0) -> np.ndarray:
    """ŷ = w2ᵀ relu(W1 x), no biases, weights N(0, σ₀²); GD with λ = dt/τ on eq. 1 (mean over the 4
    examples of ½(y−ŷ)²), i.e. Euler steps dt of τ dW/dt = −∂L/∂W. Returns the loss (steps+1, n_runs)."""
    X, y = xor_data()
    gen = torch.Generator().manual_seed(seed)
    W1 = sigma0 * torch.randn(n_runs, hidden, 2, generator=gen, dtype=DTYPE)
    w2 = sigma0 * torch.randn(n_runs, hidden, generator=gen, dtype=DTYPE)
    P, lr, losses = X.shape[1], dt / tau, []
    for step in range(steps + 1):
        h = torch.relu(W1 @ X)  # (R, H, P)
        e = torch.einsum("rh,rhp->rp", w2, h) - y
        losses.append(0.5 * (e ** 2).mean(1))
        if step == steps:
            break
        g = e / P
        gw2 = torch.einsum("rhp,rp->rh", h, g)
        gW1 = (w2[:, :, None] * g[:, None, :] * (h > 0)) @ X.T
        w2 -= lr * gw2
        W1 -= lr * gW1
    return torch.stack(losses).numpy()


def xor_curves(n_runs: int = 10, hidden: int = 128, sigma0: float = 2e-4, tau: float = 2.5, dt: float = 0.1,
               t_max: float = 100.0, a0: Optional[float] = None, seed: int = 0) -> dict:
    """Fig 3c: GDLN theory (eqs 21-23) and ReLU losses on t = step·dt. a0 defaults to N_h·σ₀²/4: the
    initial ‖(W1v + w2)/2‖² of the growing mode of a 2-layer net, over the ~N_h/2 units a path uses."""
    a0 = hidden * sigma0 ** 2 / 4 if a0 is None else a0
    steps = round(t_max / dt)
    t = np.arange(steps + 1) * dt
    theory = xor_theory(t, tau, a0)
    relu = xor_relu(n_runs, hidden, sigma0, tau, dt, steps, seed)
    return {"t": t, "theory": theory, "relu": relu, "a0": a0,
            "gap": float((np.abs(relu - theory[:, None]) / theory[0]).max())}
