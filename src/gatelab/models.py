"""Networks: the layer stack of FC / VCONV / GCONV, and the deep gated network (DGN) over it.

A DGN (paper 001 §4, Fig. 2) has a feature network Θf that makes the gates and a value network
Θv that makes the output: for every hidden unit (or conv channel at every pixel) of layer l,
``z_v(l) = q_v(l) * G(l)`` with ``G = 1{q_f > 0}`` (hard) or ``G = (1+eps)*sigmoid(beta*q_f)`` (soft).
With ``feature=None`` the net is *tied* (Θf ≡ Θv): hard gates give the ordinary ReLU network.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import torch
from torch import nn


class Net(nn.Module):
    """Hidden 3x3 'same' convs, then flatten or global average pooling, hidden dense layers, head.

    FC is the case with no convs (the input is flattened). The hidden layers are linear maps only;
    the non-linearity (gating) is applied by :class:`DGN`.
    """

    def __init__(self, in_shape: tuple, conv_channels: list, pool: str, dense: list, out_dim: int,
                 bias: bool = True):
        super().__init__()
        c, h, w = in_shape
        self.n_conv = len(conv_channels)
        self.pool = pool
        layers: list[nn.Module] = []
        for ch in conv_channels:
            layers.append(nn.Conv2d(c, ch, 3, padding=1, bias=bias))
            c = ch
        width = c if (self.n_conv and pool == "gap") else c * h * w
        for units in dense:
            layers.append(nn.Linear(width, units, bias=bias))
            width = units
        self.hidden = nn.ModuleList(layers)
        self.head = nn.Linear(width, out_dim, bias=bias)

    def reshape(self, l: int, z: torch.Tensor) -> torch.Tensor:
        """The input of hidden layer ``l`` (``l = len(hidden)``: of the head): flatten/pool after the convs."""
        if l != self.n_conv:
            return z
        if self.n_conv and self.pool == "gap":
            return z.mean(dim=(2, 3))
        return z.flatten(1)


def build_net(arch, in_shape: tuple, out_dim: int) -> Net:
    """A :class:`Net` from an :class:`gatelab.config.ArchConfig`."""
    return Net(tuple(in_shape), list(arch.conv_channels), arch.pool, list(arch.dense), out_dim, arch.bias)


def init_(net: Net, scheme: str, generator: torch.Generator) -> Net:
    """Initialise in place from ``generator``: ``glorot`` = Keras default (Glorot-uniform weights,
    zero biases; paper 001 code), ``torch`` = PyTorch's default layer init."""
    with torch.no_grad():
        for m in list(net.hidden) + [net.head]:
            if scheme == "glorot":
                nn.init.xavier_uniform_(m.weight, generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            else:
                nn.init.kaiming_uniform_(m.weight, a=math.sqrt(5), generator=generator)
                if m.bias is not None:
                    bound = 1 / math.sqrt(m.weight[0].numel())
                    m.bias.uniform_(-bound, bound, generator=generator)
    return net


def gate_fn(kind: str, beta: float = 4.0, eps: float = 0.0) -> Callable[[torch.Tensor], torch.Tensor]:
    """The gate G(q): ``hard`` 1{q>0}; ``soft`` (1+eps)*sigmoid(beta*q) (paper 002 Table 2); ``one`` 1."""
    if kind == "hard":
        return lambda q: (q > 0).to(q.dtype)
    if kind == "soft":
        return lambda q: torch.sigmoid(beta * q) * (1.0 + eps)
    if kind == "one":
        return torch.ones_like
    raise ValueError(f"unknown gate {kind!r}")


class DGN(nn.Module):
    """Deep gated network N(Θf, gate; Θv). ``feature=None``: tied, Θf ≡ Θv (ReLU, soft-ReLU, DLN).

    ``feature_act`` is the feature network's own hidden activation: ``relu`` (gates come from a
    ReLU network, paper 002 §GaLU) or ``gate`` (z_f = q_f * G, the feature net is itself gated).
    """

    def __init__(self, value: Net, feature: Optional[Net] = None, gate: str = "hard", beta: float = 4.0,
                 eps: float = 0.0, feature_act: str = "relu"):
        super().__init__()
        self.value = value
        self.feature = feature
        self.gate_kind = gate
        self.gate = gate_fn(gate, beta, eps)
        self.feature_act = feature_act

    @property
    def tied(self) -> bool:
        return self.feature is None

    def forward(self, x: torch.Tensor, return_gates: bool = False):
        """Output (N, out_dim); with ``return_gates`` also the list of gates G(l), l = 1..d-1."""
        v, f = self.value, self.feature
        gates = []
        zv = x
        zf = x
        frozen_f = f is not None and not any(p.requires_grad for p in f.hidden.parameters())
        for l, layer in enumerate(v.hidden):
            qv = layer(v.reshape(l, zv))
            if f is None:
                if self.gate_kind == "hard" and not return_gates:
                    zv = torch.relu(qv)  # = q*1{q>0}, the same values and gradients, one kernel
                    continue
                g = self.gate(qv)
            else:
                with torch.set_grad_enabled(torch.is_grad_enabled() and not frozen_f):
                    qf = f.hidden[l](f.reshape(l, zf))
                    g = self.gate(qf)
                    zf = torch.relu(qf) if self.feature_act == "relu" else qf * g
            zv = qv * g
            if return_gates:
                gates.append(g)
        out = v.head(v.reshape(len(v.hidden), zv))
        return (out, gates) if return_gates else out
