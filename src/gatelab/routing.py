"""Gated routing networks on transformed domains (paper 003, "The Neural Race Reduction", §5, App. D).

A task (``dataset.routing``) has M input domains, each a fixed transform of the base images (a
pixel permutation, or a rotation by ``max_angle``·i/M degrees, nearest pixel), and M output
domains, each a permutation of the 10 labels. Input domain i is trained with K output domains:
the pairs (i, σ((i+k) mod M)), k < K, σ a seeded shuffle of the output indices (the authors'
code), so every domain is in exactly K trained pairs. The task is drawn from the run's seed.

:class:`RoutingNet` holds M encoders din→h, one shared h→h layer and M decoders h→10 (with
biases) as stacked tensors: ŷ_ij = ψ_j(θ(φ_i(x_i))). The routing choice (which encoder feeds
which decoder) is a *path mask*, not a gate. Training computes the trained pairs only (the
loss: cross-entropy averaged over the batch and the trained pairs); :func:`pair_metrics`
computes all M² pairs. Output domain j's label permutation π_j is applied to the logits
(z'[c] = z[π_j(c)]), so targets stay base labels: CE(z', y) = CE(z, π_j(y)).
"""
from __future__ import annotations

import itertools
import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

TASK_STREAM = 3  # the task's random stream of a seed (gatelab.regimes streams: 0 init, 2 FLNPF value)


def task_generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed) * 1000 + TASK_STREAM)


def input_index(kind: str, m: int, shape: tuple, max_angle: float, gen: torch.Generator) -> torch.Tensor:
    """(M, D) gather indices into a flattened image padded with one zero (index D): domain i's
    pixel d is the base image's pixel ``idx[i, d]``. ``permute``: a random permutation per domain;
    ``rotate``: rotation by max_angle·i/M degrees counter-clockwise about the centre, nearest pixel,
    zero outside (as torchvision's ``rotate`` with nearest interpolation)."""
    c, h, w = shape
    d = c * h * w
    if kind == "permute":
        return torch.stack([torch.randperm(d, generator=gen) for _ in range(m)])
    if kind != "rotate":
        raise ValueError(f"unknown dataset.routing.input {kind!r}")
    ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64), indexing="ij")
    cy, cx = (h - 1) / 2, (w - 1) / 2
    out = []
    for i in range(m):
        a = math.radians(max_angle * i / m)
        # output pixel (y, x) takes the source pixel rotated back by -a (image y axis points down)
        sx = math.cos(a) * (xs - cx) - math.sin(a) * (ys - cy) + cx
        sy = math.sin(a) * (xs - cx) + math.cos(a) * (ys - cy) + cy
        sx, sy = torch.round(sx).long(), torch.round(sy).long()
        inside = (sx >= 0) & (sx < w) & (sy >= 0) & (sy < h)
        pix = torch.where(inside, sy * w + sx, torch.full_like(sx, h * w)).flatten()
        chans = torch.stack([torch.where(pix < h * w, pix + k * h * w, torch.full_like(pix, d)) for k in range(c)])
        out.append(chans.flatten())
    return torch.stack(out)


def label_maps(kind: str, m: int, classes: int, gen: torch.Generator) -> torch.Tensor:
    """(M, classes): output domain j's target for base label y is ``maps[j, y]``. ``random``:
    uniform random permutations (the paper); ``lexicographic``: the first M permutations of
    itertools.permutations (the authors' code: domain 0 is the identity, low labels stay fixed)."""
    if kind == "random":
        return torch.stack([torch.randperm(classes, generator=gen) for _ in range(m)])
    if kind == "lexicographic":
        return torch.tensor(list(itertools.islice(itertools.permutations(range(classes)), m)))
    raise ValueError(f"unknown dataset.routing.output_perms {kind!r}")


def pair_mask(m: int, k: int, gen: torch.Generator) -> torch.Tensor:
    """(M, M) bool, mask[i, j] = (i, j) is trained: (i, σ((i+k') mod M)) for k' < K."""
    sigma = torch.randperm(m, generator=gen)
    mask = torch.zeros(m, m, dtype=torch.bool)
    for kk in range(k):
        mask[torch.arange(m), sigma[(torch.arange(m) + kk) % m]] = True
    return mask


def make_task(routing, shape: tuple, classes: int, seed: int) -> dict:
    """The transforms, label maps and pair mask of a run (saved with it in its checkpoints)."""
    gen = task_generator(seed)
    if routing.get("features"):  # the inputs are already per domain (gatelab.backbone): domain i's block
        idx = torch.arange(math.prod(shape)).view(routing.M, -1)
    else:
        idx = input_index(routing.input, routing.M, shape, routing.max_angle, gen)
    maps = label_maps(routing.output_perms, routing.M, classes, gen)
    return {"input_index": idx, "label_maps": maps, "mask": pair_mask(routing.M, routing.K, gen)}


class RoutingNet(nn.Module):
    """M encoders, a shared layer and M decoders, optionally S-stacked (one per seed, leading dim).

    ``act`` follows the encoders and the shared layer: ``none`` (a gated deep linear network, the
    default) or ``leaky`` (slope ``slope``, paper 003 Fig 9). Buffers: the task (input indices,
    label maps, trained pairs ``pairs`` (P, 2) in row order of the mask).
    """

    def __init__(self, m: int, din: int, hidden: int, classes: int, task: dict, act: str = "none",
                 slope: float = 0.01, stack: Optional[int] = None):
        super().__init__()
        self.spec = dict(m=m, din=din, hidden=hidden, classes=classes, act=act, slope=slope)
        self.stack = stack
        lead = () if stack is None else (stack,)
        self.enc_w = nn.Parameter(torch.empty(*lead, m, din, hidden))
        self.enc_b = nn.Parameter(torch.zeros(*lead, m, hidden))
        self.shared_w = nn.Parameter(torch.empty(*lead, hidden, hidden))
        self.shared_b = nn.Parameter(torch.zeros(*lead, hidden))
        self.dec_w = nn.Parameter(torch.empty(*lead, m, hidden, classes))
        self.dec_b = nn.Parameter(torch.zeros(*lead, m, classes))
        pairs = torch.nonzero(task["mask"]) if stack is None else torch.stack([torch.nonzero(t) for t in task["mask"]])
        self.register_buffer("input_index", task["input_index"])
        self.register_buffer("label_maps", task["label_maps"])
        self.register_buffer("mask", task["mask"])
        self.register_buffer("pairs", pairs)

    @classmethod
    def stacked(cls, models: list["RoutingNet"]) -> "RoutingNet":
        """One net holding the seeds of ``models`` (tasks included) side by side."""
        m0 = models[0]
        task = {k: torch.stack([getattr(m, k) for m in models]) for k in ("input_index", "label_maps", "mask")}
        out = cls(**m0.spec, task=task, stack=len(models))
        states = [m.state_dict() for m in models]
        out.load_state_dict({k: torch.stack([sd[k] for sd in states]) for k in states[0]})
        for p, q in zip(out.parameters(), m0.parameters()):
            p.requires_grad_(q.requires_grad)
        return out.to(m0.enc_w.device)

    def _lead(self, t: torch.Tensor) -> torch.Tensor:
        return t if self.stack is not None else t.unsqueeze(0)

    def act(self, z: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(z, self.spec["slope"]) if self.spec["act"] == "leaky" else z

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """(S, B, M, h): every base image through every input domain, the encoders and θ."""
        s = self._lead(self.input_index).shape[0]
        flat = x.flatten(-3)  # (S, B, D)
        pad = torch.cat([flat, flat.new_zeros(*flat.shape[:-1], 1)], -1)
        idx = self._lead(self.input_index)  # (S, M, D)
        xi = torch.stack([pad[k][:, idx[k]] for k in range(s)])  # (S, B, M, D)
        z = self.act(torch.einsum("sbmd,smdh->sbmh", xi, self._lead(self.enc_w)) + self._lead(self.enc_b)[:, None])
        return self.act(torch.einsum("sbmh,shk->sbmk", z, self._lead(self.shared_w)) + self._lead(self.shared_b)[:, None, None])

    def _relabel(self, out: torch.Tensor, maps: torch.Tensor) -> torch.Tensor:
        """Logits in base-label space: z'[c] = z[π_j(c)] for the output domain of each pair."""
        return torch.gather(out, -1, maps.expand_as(out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of the trained pairs, (S, B, P, classes) ((B, P, classes) unstacked)."""
        x = self._lead(x)
        z = self.hidden(x)  # (S, B, M, h)
        pairs = self._lead(self.pairs)  # (S, P, 2)
        s = torch.arange(z.shape[0], device=z.device)[:, None]
        zi = z[s, :, pairs[..., 0]]  # (S, P, B, h)
        w, b = self._lead(self.dec_w)[s, pairs[..., 1]], self._lead(self.dec_b)[s, pairs[..., 1]]  # (S,P,h,c), (S,P,c)
        out = (torch.einsum("spbh,sphc->sbpc", zi, w) + b[:, None])
        maps = self._lead(self.label_maps)[s, pairs[..., 1]]  # (S, P, c)
        out = self._relabel(out, maps[:, None])
        return out if self.stack is not None else out.squeeze(0)

    def all_pairs(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of every (input i, output j) pair, (S, B, M, M, classes), in base-label space."""
        z = self.hidden(self._lead(x))
        out = torch.einsum("sbih,sjhc->sbijc", z, self._lead(self.dec_w)) + self._lead(self.dec_b)[:, None, None]
        maps = self._lead(self.label_maps)[:, None, None]  # (S, 1, 1, M, c)
        return self._relabel(out, maps)


def init_(net: RoutingNet, gain: float, decoder_fan: str, generator: torch.Generator) -> RoutingNet:
    """Xavier-uniform × ``gain``, zero biases. Encoders and θ: per matrix. Decoders: per decoder
    (``per_decoder``, the paper) or as one 3-D tensor (``stacked3d``, the authors' code: fan-in 10h,
    fan-out 10M, a bound about 4× smaller for M=20)."""
    assert net.stack is None, "initialise single networks, then stack them"
    with torch.no_grad():
        for w in net.enc_w:
            nn.init.xavier_uniform_(w, gain=gain, generator=generator)
        nn.init.xavier_uniform_(net.shared_w, gain=gain, generator=generator)
        if decoder_fan == "per_decoder":
            for w in net.dec_w:
                nn.init.xavier_uniform_(w, gain=gain, generator=generator)
        elif decoder_fan == "stacked3d":
            nn.init.xavier_uniform_(net.dec_w, gain=gain, generator=generator)
        else:
            raise ValueError(f"unknown arch.decoder_fan {decoder_fan!r}")
        for b in (net.enc_b, net.shared_b, net.dec_b):
            b.zero_()
    return net


@torch.no_grad()
def pair_metrics(model: RoutingNet, split, batch: int, limit: Optional[int] = None, task: str = "classification") -> dict:
    """Per seed: mean loss and accuracy over the trained and the untrained pairs of a split (its
    first ``limit`` examples), every pair computed (per-seed lists)."""
    from .train import pointwise  # here: gatelab.train imports this module (through regimes)
    model.eval()
    s = model.stack or 1
    mask = model.mask if model.stack is not None else model.mask[None]  # (S, M, M)
    sums = {k: torch.zeros(s, dtype=torch.float64, device=mask.device) for k in ("lt", "at", "lu", "au")}
    n = min(len(split), limit or len(split))
    for start in range(0, n, batch):
        xb = split.scale(split.x[start:min(n, start + batch)])
        yb = split.y[start:min(n, start + batch)]
        out = model.all_pairs(xb.expand(s, *xb.shape))  # (S, B, M, M, c)
        y = yb.view(1, -1, 1, 1).expand(*out.shape[:-1])
        loss, hit = (t.double() for t in pointwise(out, y, task))
        tm = mask[:, None].double()
        sums["lt"] += (loss * tm).sum((1, 2, 3))
        sums["at"] += (hit * tm).sum((1, 2, 3))
        sums["lu"] += (loss * (1 - tm)).sum((1, 2, 3))
        sums["au"] += (hit * (1 - tm)).sum((1, 2, 3))
    model.train()
    trained = mask.flatten(1).sum(1).double() * n
    untrained = (~mask).flatten(1).sum(1).double() * n
    none = torch.where(untrained > 0, untrained, torch.nan)  # K = M: no untrained pair, NaN (null in results)
    res = {"trained_loss": sums["lt"] / trained, "trained_acc": sums["at"] / trained,
           "untrained_loss": sums["lu"] / none, "untrained_acc": sums["au"] / none}
    return {k: v.tolist() for k, v in res.items()}
