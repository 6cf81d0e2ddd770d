"""Paper 003, "The Neural Race Reduction" (Saxe, Sodhani, Lewallen, ICML 2022): the toy tasks.

* Fig 4 (§4): the routing task. M input domains, M output domains, two hidden layers;
  ŷ_ij = W3_j W2 W1_i x for the pair (input i, output j), trained on K of the M output domains per
  input domain (j = i-1 .. i+2 mod M for K=4, the authors' "4_plus_minus_mod" gate).
* Eqs 44-46 (App. C): the exact reduction from decoupled initial conditions, B1, B2, B3 = the
  singular values of the input, hidden and output weights, integrated with RK4 (or Euler).
* Fig 5b (eqs 16-17, 52-56): the pathway race for P paths per hidden matrix; √P·B1² − B2² is
  conserved (M·B1² − B2² for P = M², eqs 13-15), and B2/B1 → P^¼ (√M for full sharing, Fig 4f).
* Fig 5c: trained / untrained error against K/M (M=10, λ=.05/K).
* Fig 6: trained / untrained error and cross-domain similarity against the init scale σ₀.
* Fig 3 (App. A): XoR, the four-path GDLN solution (eqs 21-23) against a ReLU net.

Data (authors' notebook, facebookresearch/gated-dln): X = I₄ (4 items), Y (7 features × 4 items)
with feature rows [6,6,6,6], [4,4,0,0], [0,0,4,4] and 3·I₄; every output domain has the same Y.

Loss and time. Eq. 1 is L₁ = ⟨½‖y−ŷ‖²⟩ averaged over the KM trained pairs and the P items. The
authors' simulations (and hence λ=.02, 500 steps in Fig 4e) use instead the sum over trained pairs of
the mean squared error over the P·N_out entries (``norm="code"``); it is c·L₁ with c = 2·KM/N_out
(= 8 for M=7, K=4). A gradient step of size λ on c·L₁ is an Euler step of size h = λ·c of the
gradient flow τ dW/dt = −∂L₁/∂W, i.e. of eqs 44-46 with t in units of τ. ``norm="paper"`` (c=1)
trains on L₁ itself. Simulations run in float64 so that the decoupled check is limited by the
integrator, not by rounding.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Optional

import numpy as np
import torch

Tensor = torch.Tensor
DTYPE = torch.float64

# Fig 4 parameters (caption) and the authors' notebook.
M_FIG4, K_FIG4, HIDDEN, LR_FIG4, STEPS_FIG4, SIGMA0 = 7, 4, 64, 0.02, 500, 0.2
B0_DECOUPLED = 0.2 / 2.5  # the notebook's decoupled init and theory use init_scale .2/2.5


# ----------------------------------------------------------------------------------------------
# Task (Fig 4c, 4d)
# ----------------------------------------------------------------------------------------------

def toy_data(dtype=DTYPE) -> tuple[Tensor, Tensor]:
    """Fig 4c: X = I₄ (columns are items), Y (7 × 4, columns are items' hierarchical features)."""
    X = torch.eye(4, dtype=dtype)
    Y = torch.cat([torch.full((1, 4), 6.0, dtype=dtype),
                   torch.tensor([[4.0, 4, 0, 0], [0, 0, 4, 4]], dtype=dtype),
                   3.0 * torch.eye(4, dtype=dtype)])
    return X, Y


def output_domains(i: int, M: int = M_FIG4, K: int = K_FIG4) -> list[int]:
    """Fig 4d: the K trained output domains of input domain i, j = i-⌊(K-1)/2⌋ .. i+⌊K/2⌋ mod M."""
    return [(i + o) % M for o in range(-((K - 1) // 2), K // 2 + 1)]


def pair_mask(M: int = M_FIG4, K: int = K_FIG4) -> Tensor:
    """Bool (M, M), [input i, output j] trained; K per row and (circulant) K per column."""
    offsets = torch.arange(-((K - 1) // 2), K // 2 + 1)
    rows = torch.arange(M)[:, None].expand(M, K)
    mask = torch.zeros(M, M, dtype=torch.bool)
    mask[rows, (rows + offsets) % M] = True
    return mask


def task_statistics(X: Tensor, Y: Tensor) -> dict:
    """Eqs 7-8 for one pathway of the base task: Σʸˣ = ⟨yxᵀ⟩ = U S Vᵀ, d = diag(Vᵀ Σˣ V), tr Σʸ."""
    X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
    P = X.shape[1]
    U, s, Vt = np.linalg.svd(Y @ X.T / P, full_matrices=True)
    d = np.einsum("ki,ij,kj->k", Vt, X @ X.T / P, Vt)[: len(s)]
    return {"U": U, "s": s, "V": Vt.T, "d": d, "tr_y": float((Y ** 2).sum() / P), "P": P}


def loss_coef(n_pairs, P: int, n_out: int, norm: str = "code"):
    """Factor in front of Σ_pairs ‖Y − Ŷ_ij‖²_F: 1/(P·N_out) ("code") or 1/(2·P·n_pairs) (eq. 1)."""
    if norm == "code":
        return 1.0 / (P * n_out)
    if norm == "paper":
        return 1.0 / (2 * P * n_pairs)
    raise ValueError(f"norm must be 'code' or 'paper', not {norm!r}")


def time_scale(n_pairs: int, n_out: int, norm: str = "code") -> float:
    """c = L / L₁ (eq. 1): a GD step λ is an Euler step h = λ·c of eqs 44-46 (t in units of τ)."""
    return 2.0 * n_pairs / n_out if norm == "code" else 1.0


# ----------------------------------------------------------------------------------------------
# Gated deep linear network (Fig 4a, 4b), batched over R independent runs
# ----------------------------------------------------------------------------------------------

@dataclass
class RoutingNet:
    """W1: (R, M, N_h, N_in) input banks; W2: (R, N_h, N_h) shared; W3: (R, M, N_out, N_h) output banks."""
    W1: Tensor
    W2: Tensor
    W3: Tensor


def _orthogonal(gen, shape, dtype=DTYPE) -> Tensor:
    """Random (batched) matrices with orthonormal rows or columns (what nn.init.orthogonal_ draws)."""
    *batch, rows, cols = shape
    A = torch.randn(*batch, max(rows, cols), min(rows, cols), generator=gen, dtype=dtype)
    Q, Rm = torch.linalg.qr(A)
    Q = Q * torch.sgn(torch.diagonal(Rm, dim1=-2, dim2=-1)).unsqueeze(-2)
    return Q if rows >= cols else Q.transpose(-1, -2)


def _random_matrix(gen, shape, sigma0, kind):
    if kind == "orthogonal":  # authors' notebook: every singular value = σ₀ (Fig 6 text)
        return sigma0 * _orthogonal(gen, shape)
    if kind == "xavier":  # Fig 4 caption: Xavier-normal scaled by σ₀
        std = sigma0 * math.sqrt(2.0 / (shape[-1] + shape[-2]))
        return std * torch.randn(*shape, generator=gen, dtype=DTYPE)
    raise ValueError(f"init kind must be 'orthogonal' or 'xavier', not {kind!r}")


def init_random(n_runs: int, M: int = M_FIG4, hidden: int = HIDDEN, n_in: int = 4, n_out: int = 7,
                sigma0=SIGMA0, kind: str = "orthogonal", seed: int = 0) -> RoutingNet:
    """Small random weights; ``sigma0`` a scalar or one per run."""
    gen = torch.Generator().manual_seed(seed)
    g = torch.as_tensor(sigma0, dtype=DTYPE).reshape(-1).expand(n_runs)
    W1 = _random_matrix(gen, (n_runs, M, hidden, n_in), 1.0, kind) * g[:, None, None, None]
    W2 = _random_matrix(gen, (n_runs, hidden, hidden), 1.0, kind) * g[:, None, None]
    W3 = _random_matrix(gen, (n_runs, M, n_out, hidden), 1.0, kind) * g[:, None, None, None]
    return RoutingNet(W1, W2, W3)


def init_decoupled(X: Tensor, Y: Tensor, M: int = M_FIG4, hidden: int = HIDDEN, b0=B0_DECOUPLED,
                   seed: int = 0) -> RoutingNet:
    """Eq. 9 with diagonal B(0) = b0: W1_i = R1 b0 Vᵀ, W2 = R2 b0 R1ᵀ, W3_j = U b0 R2ᵀ (one run).

    ``b0`` is a scalar or (b1, b2, b3). R1, R2 are random N_h × N_h orthogonal matrices."""
    b1, b2, b3 = (b0,) * 3 if np.isscalar(b0) else b0
    st = task_statistics(X, Y)
    n_out, n_in = Y.shape[0], X.shape[0]
    gen = torch.Generator().manual_seed(seed)
    R1 = _orthogonal(gen, (hidden, hidden))
    R2 = _orthogonal(gen, (hidden, hidden))
    U, V = torch.as_tensor(st["U"], dtype=DTYPE), torch.as_tensor(st["V"], dtype=DTYPE)
    W1 = b1 * R1[:, :n_in] @ V.T
    W2 = b2 * R2 @ R1.T
    W3 = b3 * U @ R2[:, :n_out].T
    return RoutingNet(W1.expand(1, M, -1, -1).clone(), W2[None].clone(), W3.expand(1, M, -1, -1).clone())


def forward(net: RoutingNet, X: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """h1 = W1_i X, h2 = W2 h1: (R, M, N_h, P); outputs of every pair Ŷ_ij: (R, M_in, M_out, N_out, P)."""
    h1 = net.W1 @ X
    h2 = net.W2[:, None] @ h1
    out = torch.einsum("rjoh,rihp->rijop", net.W3, h2)
    return h1, h2, out


def pair_errors(net: RoutingNet, X: Tensor, Y: Tensor) -> Tensor:
    """½‖Y − Ŷ_ij‖²_F per (run, input i, output j), summed over items and features (Fig 6b)."""
    return 0.5 * ((Y - forward(net, X)[2]) ** 2).sum((-1, -2))


def train(net: RoutingNet, X: Tensor, Y: Tensor, mask: Tensor, lr, steps: int, norm: str = "code",
          sv_every: int = 0) -> dict:
    """Full-batch GD (gradients by hand) on L = coef·Σ_trained ‖Y − Ŷ_ij‖²_F; updates ``net`` in place.

    ``mask`` (M, M) or per run (R, M, M); ``lr`` a scalar or one per run. Returns ``loss`` (steps+1, R)
    (before each step, and after the last) and, every ``sv_every`` steps, the top singular values of
    W1_0, W2, W3_0 (``sv``: (n, R, 3, 4), ``sv_step``)."""
    R = net.W2.shape[0]
    maskf = mask.to(DTYPE).expand(R, -1, -1) if mask.dim() == 2 else mask.to(DTYPE)
    coef = torch.as_tensor(loss_coef(maskf.sum((1, 2)), X.shape[1], Y.shape[0], norm), dtype=DTYPE).expand(R)
    lr = torch.as_tensor(lr, dtype=DTYPE).reshape(-1).expand(R)
    w = (2 * coef)[:, None, None, None, None] * maskf[..., None, None]
    losses, svs, sv_steps = [], [], []
    for step in range(steps + 1):
        h1, h2, out = forward(net, X)
        err = out - Y
        losses.append((0.5 * w * err ** 2).sum((1, 2, 3, 4)))
        if sv_every and step % sv_every == 0:
            svs.append(torch.stack([torch.linalg.svdvals(net.W1[:, 0])[:, :4], torch.linalg.svdvals(net.W2)[:, :4],
                                    torch.linalg.svdvals(net.W3[:, 0])[:, :4]], 1))
            sv_steps.append(step)
        if step == steps:
            break
        g = w * err  # dL/dŶ_ij
        dh2 = torch.einsum("rjoh,rijop->rihp", net.W3, g)
        gW3 = torch.einsum("rijop,rihp->rjoh", g, h2)
        gW2 = torch.einsum("rihp,rikp->rhk", dh2, h1)
        gW1 = (net.W2.transpose(1, 2)[:, None] @ dh2) @ X.T
        step_size = lr[:, None, None]
        net.W1 -= step_size[..., None] * gW1
        net.W2 -= step_size * gW2
        net.W3 -= step_size[..., None] * gW3
    res = {"loss": torch.stack(losses).numpy()}
    if sv_every:
        res["sv"], res["sv_step"] = torch.stack(svs).numpy(), np.array(sv_steps)
    return res


def loss_of(net: RoutingNet, X: Tensor, Y: Tensor, mask: Tensor, norm: str = "code") -> Tensor:
    """The training loss per run (autograd-friendly; :func:`train` uses hand-written gradients)."""
    maskf = mask.to(DTYPE)
    coef = loss_coef(maskf.sum(), X.shape[1], Y.shape[0], norm)
    return coef * (((forward(net, X)[2] - Y) ** 2).sum((-1, -2)) * maskf).sum((1, 2))


def split_errors(errors: Tensor, mask: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean pair error over trained and over untrained pairs, per run (NaN when there are none)."""
    m = mask.to(DTYPE).expand_as(errors)
    tr = (errors * m).sum((1, 2)) / m.sum((1, 2))
    un = (errors * (1 - m)).sum((1, 2)) / (1 - m).sum((1, 2))
    return tr.numpy(), un.numpy()


def cross_domain_similarity(net: RoutingNet, X: Tensor) -> np.ndarray:
    """Fig 4g / 6c: mean cosine of h1 = W1_i x and W1_k x for the same item, over i ≠ k; per run."""
    h = torch.nn.functional.normalize(net.W1 @ X, dim=2)  # (R, M, N_h, P)
    G = torch.einsum("rihp,rkhp->rikp", h, h)
    M = G.shape[1]
    off = ~torch.eye(M, dtype=torch.bool)
    return G[:, off].mean((1, 2)).numpy()


def rsa_matrix(net: RoutingNet, X: Tensor, run: int = 0) -> np.ndarray:
    """Cosine similarity of first-hidden-layer codes of all (domain, item): (M·P, M·P), domain-major."""
    h = torch.nn.functional.normalize(net.W1[run] @ X, dim=1)  # (M, N_h, P)
    flat = h.permute(0, 2, 1).reshape(-1, h.shape[1])
    return (flat @ flat.T).numpy()


# ----------------------------------------------------------------------------------------------
# Reduced dynamics (eq. 10 → eqs 44-46, 13-17)
# ----------------------------------------------------------------------------------------------

def integrate(rhs: Callable, y0: np.ndarray, h: float, n_steps: int, method: str = "rk4") -> np.ndarray:
    """Fixed-step integration of dy/dt = rhs(y): (n_steps+1, *y0.shape). ``method`` rk4 or euler."""
    y = np.array(y0, dtype=float)
    out = np.empty((n_steps + 1, *y.shape))
    out[0] = y
    for n in range(n_steps):
        if method == "rk4":
            k1 = rhs(y)
            k2 = rhs(y + 0.5 * h * k1)
            k3 = rhs(y + 0.5 * h * k2)
            k4 = rhs(y + h * k3)
            y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        elif method == "euler":
            y = y + h * rhs(y)
        else:
            raise ValueError(f"method must be 'rk4' or 'euler', not {method!r}")
        out[n + 1] = y
    return out


def routing_rhs(s: np.ndarray, d: np.ndarray, M: int) -> Callable:
    """Eqs 44-46: τḂ1 = B3B2E/M, τḂ2 = B3B1E, τḂ3 = B2B1E/M with E = S − B3B2B1D; y = (B1, B2, B3)."""
    def f(y):
        b1, b2, b3 = y
        E = s - b3 * b2 * b1 * d
        return np.stack([b3 * b2 * E / M, b3 * b1 * E, b2 * b1 * E / M])
    return f


def race_rhs(s: np.ndarray, d: np.ndarray, M: int, P: int) -> Callable:
    """Eqs 16-17 (52-53): τḂ1 = √P/M²·B2B1E, τḂ2 = P/M²·B1²E, E = S − B2B1²D; y = (B1, B2)."""
    def f(y):
        b1, b2 = y
        E = s - b2 * b1 ** 2 * d
        return np.stack([math.sqrt(P) / M ** 2 * b2 * b1 * E, P / M ** 2 * b1 ** 2 * E])
    return f


def reduced_routing(stats: dict, M: int, b0, h: float, n_steps: int, method: str = "rk4") -> np.ndarray:
    """Eqs 44-46 from B(0) = b0 (scalar or (b1, b2, b3)), step h in units of τ: (n+1, 3, modes)."""
    s, d = stats["s"], stats["d"]
    y0 = np.broadcast_to(np.reshape(np.asarray(b0, float), (-1, 1)), (3, len(s)))
    return integrate(routing_rhs(s, d, M), y0, h, n_steps, method)


def reduced_loss(B: np.ndarray, stats: dict, c: float = 1.0) -> np.ndarray:
    """c·L₁ with L₁ = ½tr Σʸ − Σ s·a + ½Σ d·a², a = B3B2B1 (or B2B1² for a (B1, B2) trajectory)."""
    a = B[:, 0] * B[:, 1] * (B[:, 2] if B.shape[1] == 3 else B[:, 0])
    return c * (0.5 * stats["tr_y"] - (stats["s"] * a).sum(1) + 0.5 * (stats["d"] * a ** 2).sum(1))


def predicted_loss(lr: float = LR_FIG4, steps: int = STEPS_FIG4, M: int = M_FIG4, K: int = K_FIG4,
                   b0=B0_DECOUPLED, norm: str = "code", method: str = "rk4") -> np.ndarray:
    """The loss after each of ``steps`` GD steps predicted by eqs 44-46 (toy data, h = λ·c)."""
    X, Y = toy_data()
    st = task_statistics(X, Y)
    c = time_scale(M * K, Y.shape[0], norm)
    return reduced_loss(reduced_routing(st, M, b0, lr * c, steps, method), st, c)


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
            "untrained_err": un.reshape(len(Ks), n_runs), "loss": loss, "theory_trained_err": theory}


def init_scale_sweep(sigma0s: Optional[Sequence[float]] = None, steps: int = 700, M: int = M_FIG4,
                     K: int = K_FIG4, hidden: int = HIDDEN, n_runs: int = 1, seed: int = 0,
                     lr: Optional[Callable[[float], float]] = None) -> dict:
    """Fig 6: σ₀ ∈ linspace(.2, 2.5, 6), 700 steps, λ(σ₀) = .006/σ₀^⅓ (authors' notebook), orthogonal init.

    Per σ₀ (mean over ``n_runs``): loss curve, trained / untrained pair error, cross-domain same-item
    cosine of h1, and the RSA matrix of the first run."""
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
            "rsa": [rsa_matrix(net, X, i * n_runs) for i in range(len(sigma0s))]}


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


# ----------------------------------------------------------------------------------------------
# Summary and figures
# ----------------------------------------------------------------------------------------------

def run_all(n_runs: int = 10, k_runs: int = 3) -> dict:
    """Everything :func:`summary` and :func:`figures` need (≈ 20 s on one CPU thread)."""
    t0 = time.time()
    res = {"decoupled": decoupled_vs_reduction(), "scaling": step_size_scaling(),
           "random": random_vs_reduction(n_runs=n_runs),
           "random_xavier": random_vs_reduction(n_runs=n_runs, kind="xavier", sv_every=50),
           "race": pathway_race(), "k_sweep": k_sweep(n_runs=k_runs), "init": init_scale_sweep(n_runs=k_runs),
           "xor": xor_curves(n_runs=n_runs)}
    res["seconds"] = time.time() - t0
    return res


def summary(res: Optional[dict] = None) -> dict:
    """Headline numbers (computes :func:`run_all` unless given its result)."""
    res = res or run_all()
    d, r, rx, race, ks, ini, xo = (res[k] for k in ("decoupled", "random", "random_xavier", "race",
                                                    "k_sweep", "init", "xor"))
    Pmax = max(race["P"])
    return {
        "fig4_decoupled_gap_rk4": d["gap_rk4"], "fig4_decoupled_gap_euler": d["gap_euler"],
        "fig4_gap_vs_lr": {row["lr"]: row["gap_rk4"] for row in res["scaling"]},
        "fig4_gap_order": [row["order"] for row in res["scaling"][1:]],
        "fig4_random_gap_mean": float(r["gaps"].mean()), "fig4_random_gap_max": float(r["gaps"].max()),
        "fig4_random_gap_euler_mean": float(r["gaps_euler"].mean()),
        "fig4_random_xavier_gap_mean": float(rx["gaps"].mean()),
        "fig4_random_trained_err": float(r["trained_err"].mean()),
        "fig4_random_untrained_err": float(r["untrained_err"].mean()),
        "fig4_random_similarity": float(r["similarity"].mean()),
        "fig4f_ratio_theory": d["ratio"], "fig4f_ratio_random": float(r["sv_ratio"].mean()), "sqrt_M": d["sqrt_M"],
        "fig5b_t_half": race["t_half"], "fig5b_ratio": race["ratio"],
        "fig5b_ratio_over_P_quarter": {P: race["ratio"][P] / P ** 0.25 for P in race["P"]},
        "fig5b_drift_full_sharing": race["drift"][Pmax], "fig5b_drift_max": max(race["drift"].values()),
        "fig5c_K_over_M": ks["K_over_M"],
        "fig5c_trained_err": ks["trained_err"].mean(1).tolist(),
        "fig5c_untrained_err": ks["untrained_err"].mean(1).tolist(),
        "fig5c_theory_trained_err": ks["theory_trained_err"],
        "fig6_sigma0": [float(s) for s in ini["sigma0"]],
        "fig6_trained_err": ini["trained_err"].tolist(), "fig6_untrained_err": ini["untrained_err"].tolist(),
        "fig6_similarity": ini["similarity"].tolist(),
        "fig3_theory_final": float(xo["theory"][-1]), "fig3_relu_final_mean": float(xo["relu"][-1].mean()),
        "fig3_gap": xo["gap"], "fig3_a0": xo["a0"],
        "seconds": res["seconds"],
    }


def figures(out_dir, res: Optional[dict] = None) -> dict:
    """fig3_xor, fig4_routing, fig5b_race, fig5c_k_sweep, fig6_init_scale (PNG+PDF+CSV); returns summary."""
    import pandas as pd

    from .plotting import plt, save
    res = res or run_all()
    out = Path(out_dir)

    xo = res["xor"]
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.plot(xo["t"], xo["relu"], color="r", lw=0.5)
    ax.plot(xo["t"], xo["theory"], "b--", label="GDLN (eq. 23)")
    ax.set(xlabel="step", ylabel="loss", title="Fig 3c: XoR")
    ax.legend()
    save(fig, pd.DataFrame({"step": xo["t"], "theory": xo["theory"], "relu_mean": xo["relu"].mean(1)}), out, "fig3_xor")

    d, r = res["decoupled"], res["random"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    a1.plot(r["loss_sim"], color="r", lw=0.5)
    a1.plot(d["loss_sim"], color="g", lw=3, label="decoupled sim")
    a1.plot(d["loss_pred"], "b--", label="eqs 44-46")
    a1.set(xlabel="step", ylabel="loss", title="Fig 4e")
    a1.legend()
    a2.plot(r["sv_step"], r["sv"][:, :, 1, :].reshape(len(r["sv_step"]), -1), color="r", lw=0.4)
    a2.plot(r["sv_step"], r["sv"][:, :, 0, :].reshape(len(r["sv_step"]), -1), color="m", lw=0.4)
    a2.plot(d["B"][:, 1], color="b")
    a2.plot(d["B"][:, 0], color="c")
    a2.set(xlabel="step", ylabel="singular value", title="Fig 4f")
    save(fig, pd.DataFrame({"step": np.arange(len(d["loss_sim"])), "decoupled": d["loss_sim"],
                            "theory": d["loss_pred"], "random_mean": r["loss_sim"].mean(1)}), out, "fig4_routing")

    race = res["race"]
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    df = {"t": race["t"]}
    for P in race["P"]:
        ax.plot(race["t"], race["B"][P][:, 1, 0], label=f"P={P}")
        df[f"B2_P{P}"] = race["B"][P][:, 1, 0]
    ax.set(xlabel="t / τ", ylabel="B2 (top mode)", title="Fig 5b")
    ax.legend()
    save(fig, pd.DataFrame(df), out, "fig5b_race")

    ks = res["k_sweep"]
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.plot(ks["K_over_M"], ks["trained_err"].mean(1), "bo-", label="trained")
    ax.plot(ks["K_over_M"], ks["untrained_err"].mean(1), "ro-", label="untrained")
    ax.set(xlabel="K / M", ylabel="½‖Y−Ŷ‖²", title="Fig 5c")
    ax.legend()
    save(fig, pd.DataFrame({"K": ks["K"], "K_over_M": ks["K_over_M"], "trained": ks["trained_err"].mean(1),
                            "untrained": ks["untrained_err"].mean(1)}), out, "fig5c_k_sweep")

    ini = res["init"]
    n = len(ini["sigma0"])
    fig, axes = plt.subplots(1, 5, figsize=(16, 3.3))
    axes[0].plot(ini["loss"])
    axes[0].set(xlabel="step", ylabel="loss", title="Fig 6a")
    axes[1].plot(ini["sigma0"], ini["trained_err"], "bo-", label="trained")
    axes[1].plot(ini["sigma0"], ini["untrained_err"], "ro-", label="untrained")
    axes[1].set(xlabel="σ₀", title="Fig 6b")
    axes[1].legend()
    for ax, i in zip(axes[2:], (0, n // 2, n - 1)):
        ax.imshow(ini["rsa"][i], cmap="coolwarm", vmin=-1, vmax=1)
        ax.set(title=f"Fig 6c σ₀={ini['sigma0'][i]:.2f}", xticks=[], yticks=[])
    save(fig, pd.DataFrame({"sigma0": ini["sigma0"], "trained": ini["trained_err"], "untrained": ini["untrained_err"],
                            "similarity": ini["similarity"]}), out, "fig6_init_scale")
    return summary(res)
