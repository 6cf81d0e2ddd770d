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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

Tensor = torch.Tensor
DTYPE = torch.float64

# Fig 4 parameters (caption) and the authors' notebook.
M_FIG4, K_FIG4, HIDDEN, LR_FIG4, STEPS_FIG4, SIGMA0 = 7, 4, 64, 0.02, 500, 0.2
B0_DECOUPLED = 0.2 / 2.5  # the notebook's decoupled init and theory use init_scale .2/2.5
# Published: the K/M at which the untrained pathways' error meets the trained (linear: Figs 5c, 7; leaky: Fig 9)
PAPER_ZERO_SHOT = {"dln": 0.40, "leaky": 0.25}


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


def output_grid(net: RoutingNet, X: Tensor, run: int = 0) -> np.ndarray:
    """Fig 4h / 6d: the outputs Ŷ_ij of every (input i, output j) pair of one run tiled into one matrix,
    (M·N_out, M·P): block (i, j) is Ŷ_ij (features × items)."""
    out = forward(net, X)[2][run]  # (M_in, M_out, N_out, P)
    return out.permute(0, 2, 1, 3).reshape(out.shape[0] * out.shape[2], -1).numpy()


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
