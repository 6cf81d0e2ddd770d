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

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


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

    def _logits(self, z: torch.Tensor) -> torch.Tensor:
        """Every decoder on every input domain's hidden state, (S, B, M, M, classes), before relabelling:
        one GEMM per seed, (B·M, h) @ (h, M·classes). Cheaper than gathering the P trained pairs'
        decoders once P is more than a few M (M=100, K=50: 3.5x faster per step, measured)."""
        return torch.einsum("sbih,sjhc->sbijc", z, self._lead(self.dec_w)) + self._lead(self.dec_b)[:, None, None]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of the trained pairs, (S, B, P, classes) ((B, P, classes) unstacked)."""
        out = self._logits(self.hidden(self._lead(x)))  # (S, B, M, M, c)
        pairs = self._lead(self.pairs)  # (S, P, 2)
        s = torch.arange(out.shape[0], device=out.device)[:, None]
        out = out[s, :, pairs[..., 0], pairs[..., 1]].transpose(1, 2)  # (S, B, P, c)
        maps = self._lead(self.label_maps)[s, pairs[..., 1]]  # (S, P, c)
        out = self._relabel(out, maps[:, None])
        return out if self.stack is not None else out.squeeze(0)

    def all_pairs(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of every (input i, output j) pair, (S, B, M, M, classes), in base-label space."""
        out = self._logits(self.hidden(self._lead(x)))
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


