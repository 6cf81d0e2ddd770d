"""Routing tasks of paper 003 (§5, App. D): M input domains (pixel permutations or rotations),
M output label permutations, and the K trained pairs of each input domain, drawn from a seed.

The network that learns them is :mod:`gatelab.nets.routing`.
"""
from __future__ import annotations

import itertools
import math

import torch

TASK_STREAM = 3  # the task's random stream of a seed (gatelab.nets.regimes streams: 0 init, 2 FLNPF value)


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
    if routing.get("features"):  # the inputs are already per domain (gatelab.data.backbone): domain i's block
        idx = torch.arange(math.prod(shape)).view(routing.M, -1)
    else:
        idx = input_index(routing.input, routing.M, shape, routing.max_angle, gen)
    maps = label_maps(routing.output_perms, routing.M, classes, gen)
    return {"input_index": idx, "label_maps": maps, "mask": pair_mask(routing.M, routing.K, gen)}


