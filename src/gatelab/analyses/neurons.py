"""Neuron-level analysis of one-hidden-layer ReLU nets (paper 004, "It's Not a Lottery, It's a Race").

The net (paper §2): ``h = ReLU(W1 x + b1)``, ``z = W2 h + b2``, softmax, cross-entropy, two classes.

* Mutual alignment / merging (§4, §5 "Reduced effective capacity", App. G Table 1): cosine
  similarity of the neurons' total weight vectors, clusters at a threshold τ, and the net with each
  cluster merged into one neuron.
* Alignment (§5 "Computing the alignment", eq. (1), Thm B.1 eqs (28)-(30)): the angle δ̄_α between
  w1_α and the target vector ⟨γ_α⟩ of its current cell, and the norm product a_α = ‖w1_α‖‖w2_α‖.
* Lottery tickets (§5 "Comparison to Lottery Tickets"): global magnitude pruning masks for IMP and
  the number of pruned weights per neuron.
* Stable cells (App. D, Algorithm 1).

Everything is computed in float64 on the CPU; there are no per-sample Python loops.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

_DT = torch.float64
_PARTS = ("w1", "b1", "w2")


def _f64(t) -> torch.Tensor:
    return torch.as_tensor(t).detach().to(device="cpu", dtype=_DT)


def _flat(x) -> torch.Tensor:
    x = _f64(x)
    return x.reshape(len(x), -1)


@dataclass
class OneHidden:
    """One-hidden-layer ReLU net (paper §2): w1 (d, din), b1 (d,), w2 (out, d), b2 (out,)."""

    w1: torch.Tensor
    b1: torch.Tensor
    w2: torch.Tensor
    b2: torch.Tensor

    def __post_init__(self):
        self.w1, self.b1, self.w2, self.b2 = (_f64(t) for t in (self.w1, self.b1, self.w2, self.b2))
        d = self.w1.shape[0]
        if (self.w1.dim() != 2 or self.b1.shape != (d,) or self.w2.dim() != 2
                or self.w2.shape[1] != d or self.b2.shape != (self.w2.shape[0],)):
            raise ValueError(f"inconsistent shapes w1 {tuple(self.w1.shape)}, b1 {tuple(self.b1.shape)}, "
                             f"w2 {tuple(self.w2.shape)}, b2 {tuple(self.b2.shape)}")

    @classmethod
    def from_state(cls, state: dict, prefix: str = "value.") -> "OneHidden":
        """From a single-seed state dict: ``{prefix}hidden.0.{weight,bias}``, ``{prefix}head.{weight,bias}``."""
        return cls(state[f"{prefix}hidden.0.weight"], state[f"{prefix}hidden.0.bias"],
                   state[f"{prefix}head.weight"], state[f"{prefix}head.bias"])

    def to_state(self, prefix: str = "value.") -> dict:
        """The inverse of :meth:`from_state` (float64 tensors)."""
        return {f"{prefix}hidden.0.weight": self.w1.clone(), f"{prefix}hidden.0.bias": self.b1.clone(),
                f"{prefix}head.weight": self.w2.clone(), f"{prefix}head.bias": self.b2.clone()}

    @property
    def d(self) -> int:
        """Number of hidden neurons."""
        return self.w1.shape[0]

    def hidden_pre(self, x) -> torch.Tensor:
        """Pre-activations W1 x + b1, shape (N, d); the gate of neuron α on sample s is ``pre > 0``."""
        return torch.addmm(self.b1, _flat(x), self.w1.T)

    def logits(self, x) -> torch.Tensor:
        """z = W2 ReLU(W1 x + b1) + b2, shape (N, out)."""
        return torch.addmm(self.b2, self.hidden_pre(x).clamp_min(0), self.w2.T)

    def accuracy(self, x, y) -> float:
        return (self.logits(x).argmax(1) == torch.as_tensor(y)).double().mean().item()

    def loss(self, x, y) -> float:
        """Mean cross-entropy of softmax(z) (paper §2)."""
        return F.cross_entropy(self.logits(x), torch.as_tensor(y).long()).item()


def total_weights(net: OneHidden, parts: Sequence[str] = _PARTS) -> torch.Tensor:
    """Per-neuron total weight vector [w1_α, b1_α, w2_{:,α}] (Fig. 1b, §4), shape (d, ·).

    ``parts`` picks (and orders) the pieces, e.g. ``("w1",)`` for the incoming weights only.
    """
    parts = tuple(parts)
    if not parts or len(set(parts)) != len(parts) or any(p not in _PARTS for p in parts):
        raise ValueError(f"parts must be distinct names among {_PARTS}, got {parts}")
    pieces = {"w1": net.w1, "b1": net.b1[:, None], "w2": net.w2.T}
    return torch.cat([pieces[p] for p in parts], dim=1)


def cosine_matrix(v: torch.Tensor) -> torch.Tensor:
    """(d, d) cosine similarities of the rows of v, clamped to [-1, 1], diagonal exactly 1.

    A zero row has cosine 0 with every other row.
    """
    v = _f64(v)
    norm = v.norm(dim=1, keepdim=True)
    u = torch.where(norm > 0, v / norm.clamp_min(torch.finfo(_DT).tiny), torch.zeros_like(v))
    c = u @ u.T
    c = ((c + c.T) / 2).clamp(-1.0, 1.0)  # exactly symmetric, so the similarity graph is undirected
    c.fill_diagonal_(1.0)
    return c


def _relabel(raw: torch.Tensor) -> torch.Tensor:
    """Renumber cluster ids 0..k-1 by decreasing size, ties by smallest member index."""
    raw = torch.as_tensor(raw).long()
    ids, inverse, counts = torch.unique(raw, return_inverse=True, return_counts=True)
    first = torch.full((len(ids),), len(raw), dtype=torch.long).scatter_reduce(
        0, inverse, torch.arange(len(raw)), reduce="amin")
    # lexicographic order (-count, first member): first < d, so one integer key suffices
    order = torch.argsort(-counts * (len(raw) + 1) + first)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(len(order))
    return rank[inverse]


def clusters(v: torch.Tensor, tau: float, linkage: str = "single") -> torch.Tensor:
    """Cluster labels (d,) from cosine similarity ≥ τ between rows of v (§5, Fig. 3, App. G), by
    ``scipy.cluster.hierarchy`` on the distance 1 − cos, cut at 1 − τ.

    ``single``: connected components of the graph with edges cos ≥ τ.
    ``complete``: agglomerative complete linkage, merging the two clusters with the largest minimum
    pairwise cosine while it is ≥ τ, so every pair within a cluster has cos ≥ τ.
    Labels are numbered by decreasing cluster size (ties: smallest member index); 0 is the largest.
    """
    from scipy.cluster import hierarchy
    from scipy.spatial.distance import squareform
    if linkage not in ("single", "complete"):
        raise ValueError(f"unknown linkage {linkage!r} (single or complete)")
    c = cosine_matrix(v)
    d = c.shape[0]
    if d < 2:
        return torch.zeros(d, dtype=torch.long)
    dist = (1.0 - c).numpy()  # fl(1 − x) falls as x rises: cos ≥ τ exactly when 1 − cos ≤ 1 − τ
    dist[np.diag_indices(d)] = 0.0
    tree = hierarchy.linkage(squareform(dist, checks=False), method=linkage)
    return _relabel(torch.from_numpy(hierarchy.fcluster(tree, t=1.0 - tau, criterion="distance")))


def norm_product(net: OneHidden) -> torch.Tensor:
    """a_α = ‖w1_α‖ ‖w2_{:,α}‖ (d,): what neuron α carries (§5, Thm B.1)."""
    return net.w1.norm(dim=1) * net.w2.norm(dim=0)


def clusters_holding(net: OneHidden, labels: torch.Tensor, share: float = 0.99) -> int:
    """The fewest clusters (``labels``) that together hold ``share`` of Σ_α a_α (:func:`norm_product`):
    k counted by what the clusters carry, where :func:`clusters` also counts a near-zero neuron that
    merged with no other as a cluster of its own."""
    a = norm_product(net)
    held = torch.zeros(int(labels.max()) + 1, dtype=_DT).index_add_(0, labels, a).sort(descending=True).values
    return int((held.cumsum(0) < share * held.sum()).sum()) + 1


def merge(net: OneHidden, labels: torch.Tensor) -> OneHidden:
    """Merge each cluster C into one neuron (§4 "neurons that play the same role").

    With u_α = [w1_α, b1_α] and n_α = ‖u_α‖: incoming [w1, b1] = unit vector of Σ_C u_α,
    outgoing w2 = Σ_C n_α w2_{:,α}; b2 unchanged. Exact when the u_α of a cluster are positive
    multiples of one another, since ReLU(n û·[x,1]) = n ReLU(û·[x,1]). A cluster with Σ u_α = 0
    gets zero incoming and outgoing weights.
    """
    labels = torch.as_tensor(labels).long()
    if labels.shape != (net.d,):
        raise ValueError(f"labels must have shape ({net.d},), got {tuple(labels.shape)}")
    k = int(labels.max()) + 1 if net.d else 0
    u = torch.cat([net.w1, net.b1[:, None]], dim=1)
    n = u.norm(dim=1)
    s = torch.zeros(k, u.shape[1], dtype=_DT).index_add_(0, labels, u)
    sn = s.norm(dim=1, keepdim=True)
    live = sn > 0
    inc = torch.where(live, s / sn.clamp_min(torch.finfo(_DT).tiny), torch.zeros_like(s))
    out = torch.zeros(k, net.w2.shape[0], dtype=_DT).index_add_(0, labels, n[:, None] * net.w2.T)
    out = torch.where(live, out, torch.zeros_like(out))
    return OneHidden(inc[:, :-1], inc[:, -1], out.T, net.b2.clone())


def merge_effect(net: OneHidden, x, y, tau: float, linkage: str = "single",
                 parts: Sequence[str] = _PARTS, x_test=None, y_test=None) -> dict:
    """Cluster at τ, merge, and compare accuracies (App. G Table 1).

    Returns k, acc, acc_merged and delta_acc = 100 (acc_merged - acc) / acc (relative change, %;
    NaN when acc = 0), plus the same keys suffixed ``_test`` when test data is given.
    """
    labels = clusters(total_weights(net, parts), tau, linkage)
    merged = merge(net, labels)
    out = {"k": merged.d}

    def fill(suffix, xx, yy):
        a, am = net.accuracy(xx, yy), merged.accuracy(xx, yy)
        out[f"acc{suffix}"] = a
        out[f"acc_merged{suffix}"] = am
        out[f"delta_acc{suffix}"] = 100.0 * (am - a) / a if a > 0 else math.nan

    fill("", x, y)
    if x_test is not None:
        fill("_test", x_test, y_test)
    return out


def alignment(net: OneHidden, x, y) -> dict:
    """Alignment δ̄_α of each neuron to the target vector of its current cell (§5, eq. (1), Thm B.1).

    With p = softmax(z), Δy_s = Y_s - p_s and gates g_αs = 1[w1_α·x_s + b1_α > 0]:
    ξ_c = Σ_{s∈c, g_αs=1} ‖Δy_s‖ x_s (eq. 30); c(α) = 0 if w1_α·ξ_0 > w1_α·ξ_1 else 1 (eqs 28-29);
    γ̄_α = (1/N) Σ_s g_αs σ_αs ‖Δy_s‖ x_s (eq. 1 with w2_α at its target angle, where
    cos(θ_Δy - θ*_w2) = σ_αs = +1 if y_s = c(α) else -1); cos_delta_α = cos(w1_α, γ̄_α) (0 if either
    is zero); a_α = ‖w1_α‖ ‖w2_{:,α}‖.

    Returns tensors ``a`` (d,), ``cos_delta`` (d,), ``cls`` (d,) long, ``gamma`` (d, din).
    """
    if net.w2.shape[0] != 2:
        raise ValueError("alignment is defined for two output classes")
    x = _flat(x)
    y = torch.as_tensor(y).long()
    n = len(x)
    pre = net.hidden_pre(x)
    g = (pre > 0).to(_DT)                                           # (N, d)
    p = torch.softmax(torch.addmm(net.b2, pre.clamp_min(0), net.w2.T), dim=1)
    r = (F.one_hot(y, 2).to(_DT) - p).norm(dim=1)                   # ‖Δy_s‖ (N,)
    proj = x @ net.w1.T                                             # w1_α·x_s (N, d)
    gr = g * r[:, None]
    is0 = (y == 0).to(_DT)[:, None]
    score0 = (gr * proj * is0).sum(0)                               # w1_α·ξ_0
    score1 = (gr * proj * (1 - is0)).sum(0)                         # w1_α·ξ_1
    cls = torch.where(score0 > score1, 0, 1).long()
    sigma = torch.where(y[:, None] == cls[None, :], 1.0, -1.0).to(_DT)  # (N, d)
    gamma = (gr * sigma).T @ x / n                                  # (d, din)
    nw, ng = net.w1.norm(dim=1), gamma.norm(dim=1)
    ok = (nw > 0) & (ng > 0)
    cos = torch.where(ok, (net.w1 * gamma).sum(1) / (nw * ng).clamp_min(torch.finfo(_DT).tiny),
                      torch.zeros_like(nw)).clamp(-1.0, 1.0)
    return {"a": norm_product(net), "cos_delta": cos, "cls": cls, "gamma": gamma}


_PRUNE_KEYS = ("value.hidden.0.weight", "value.head.weight")


def prune_mask(state: dict, sparsity: float, prev_mask: Optional[dict] = None,
               keys: Sequence[str] = _PRUNE_KEYS) -> dict:
    """Global magnitude pruning over the weight tensors ``keys`` together (IMP, §5; biases never pruned).

    Returns keep-masks (True = kept) with exactly round(sparsity · total) weights pruned in all,
    total = number of entries of the listed tensors. Weights pruned in ``prev_mask`` stay pruned and
    count toward that number; the rest are pruned by smallest |w|, ties by flat index (keys in order).
    """
    keys = tuple(keys)
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    w = [torch.as_tensor(state[k]).detach().cpu() for k in keys]
    flat = torch.cat([t.reshape(-1).abs().to(_DT) for t in w])
    total = flat.numel()
    if prev_mask is None:
        kept = torch.ones(total, dtype=torch.bool)
    else:
        kept = torch.cat([torch.as_tensor(prev_mask[k]).cpu().reshape(-1).bool() for k in keys])
        if kept.numel() != total:
            raise ValueError("prev_mask shapes do not match the state")
    target = round(sparsity * total)
    already = total - int(kept.sum())
    if target < already:
        raise ValueError(f"sparsity {sparsity} prunes {target} weights, prev_mask already pruned {already}")
    cand = torch.nonzero(kept).squeeze(1)
    order = torch.sort(flat[cand], stable=True).indices           # stable: ties by flat index
    kept = kept.clone()
    kept[cand[order[:target - already]]] = False
    out, start = {}, 0
    for k, t in zip(keys, w):
        out[k] = kept[start:start + t.numel()].reshape(t.shape)
        start += t.numel()
    return out


def round_sparsity(target: float, rounds: int, r: int) -> float:
    """Cumulative sparsity after round r of ``rounds`` IMP rounds with a fixed per-round rate:
    1 - (1 - target)^(r / rounds) (§5: target sparsity reached in 3 rounds)."""
    if not 0.0 <= target < 1.0 or rounds < 1 or not 0 <= r <= rounds:
        raise ValueError(f"need 0 <= target < 1 and 0 <= r <= rounds >= 1, got {target}, {rounds}, {r}")
    if r == rounds:
        return float(target)
    return 1.0 - (1.0 - target) ** (r / rounds)


def pruned_per_neuron(mask: dict, w1_key: str = "value.hidden.0.weight",
                      w2_key: str = "value.head.weight") -> torch.Tensor:
    """Pruned entries per hidden neuron α: those of W1[α, :] plus W2[:, α] (Fig. 5), (d,) long."""
    m1, m2 = torch.as_tensor(mask[w1_key]).bool(), torch.as_tensor(mask[w2_key]).bool()
    return (~m1).sum(1) + (~m2).sum(0)


def spearman(a, b) -> float:
    """Spearman rank correlation (``scipy.stats.spearmanr``: average ranks for ties); NaN if either side is
    constant."""
    from scipy import stats
    a, b = _f64(a).reshape(-1), _f64(b).reshape(-1)
    if a.shape != b.shape or a.numel() < 2:
        raise ValueError("spearman needs two equally long vectors of length >= 2")
    if bool((a == a[0]).all()) or bool((b == b[0]).all()):
        return math.nan
    return float(stats.spearmanr(a.numpy(), b.numpy()).statistic)


def _patterns(w: torch.Tensor, x: torch.Tensor, chunk: int = 8192) -> torch.Tensor:
    """The distinct gating patterns 1[X w > 0] of the rows of ``w`` (bool, one row each), ``chunk``
    probes at a time so that M probes × N inputs never sit in memory at once."""
    parts = [torch.unique(w[i:i + chunk] @ x.T > 0, dim=0) for i in range(0, len(w), chunk)]
    return torch.unique(torch.cat(parts), dim=0) if len(parts) > 1 else parts[0]


def stable_cell_trace(x, y, probes: int = 1000, max_iter: int = 200, patience: int = 10,
                      generator: Optional[torch.Generator] = None, signs: Sequence[int] = (1,)) -> dict:
    """Appendix D, Algorithm 1, for each alignment in ``signs``: {sign: [n_1, n_2, ...]}, n_t the
    number of distinct gating patterns G(T(W)) after step t; the estimate is the last n_t.

    Probes w uniform on the sphere iterate T(w) = m/‖m‖ with m = G(w)ᵀ X̃, X̃_i = sign (2y_i - 1) x_i
    and G(w) = 1[X w > 0]; stops once n_t ≥ n_{t-1} for ``patience`` consecutive steps (or after
    ``max_iter``). T(w) depends on w only through G(w), so only the distinct patterns are carried
    from step to step, and G(T(W)) is the next step's G: the same counts as the literal algorithm over
    all M probes (tested against it), at the cost of one M×N×d product (shared by the signs) and then
    n_t×N×d per step. ``sign=-1``: the other alignment of the outgoing weights (App. D runs both).
    """
    if any(sg not in (1, -1) for sg in signs):
        raise ValueError("each sign must be +1 or -1")
    x = _flat(x)
    y = torch.as_tensor(y).to(_DT)
    w = torch.randn(probes, x.shape[1], generator=generator, dtype=_DT)
    g0 = _patterns(w / w.norm(dim=1, keepdim=True).clamp_min(torch.finfo(_DT).tiny), x)
    out = {}
    for sg in signs:
        xt = sg * (2 * y - 1)[:, None] * x
        g, trace, plateau = g0, [], 0
        for _ in range(max_iter):
            m = g.to(_DT) @ xt
            g = _patterns(m / m.norm(dim=1, keepdim=True).clamp_min(torch.finfo(_DT).tiny), x)
            trace.append(len(g))
            plateau = plateau + 1 if len(trace) > 1 and trace[-1] >= trace[-2] else 0
            if plateau >= patience:
                break
        out[sg] = trace
    return out


def stable_cell_count(x, y, probes: int = 1000, max_iter: int = 200, patience: int = 10,
                      generator: Optional[torch.Generator] = None, sign: int = 1) -> int:
    """The estimated number of stable cells (App. D, Algorithm 1) of one alignment ``sign``: the last
    n_t of :func:`stable_cell_trace`."""
    return stable_cell_trace(x, y, probes, max_iter, patience, generator, (sign,))[sign][-1]
