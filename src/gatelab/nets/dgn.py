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
import torch.nn.functional as F
from torch import nn


class StackedLinear(nn.Module):
    """S independent linear maps (one per seed): (S, B, in) -> (S, B, out) by one batched matmul.

    The weight is held as ``weight_t`` (S, in, out), so that neither the forward nor the backward
    matmul needs a transposed copy (about 1.8x faster per layer on the CPU); the state dict shows it
    as ``weight`` (S, out, in), seed s's slice being an ``nn.Linear``'s weight.
    """

    def __init__(self, stack: int, fan_in: int, fan_out: int, bias: bool = True):
        super().__init__()
        self.weight_t = nn.Parameter(torch.empty(stack, fan_in, fan_out))
        self.bias = nn.Parameter(torch.zeros(stack, fan_out)) if bias else None

    @property
    def weight(self) -> torch.Tensor:
        return self.weight_t.transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.bias is None:
            return torch.bmm(x, self.weight_t)
        return torch.baddbmm(self.bias.unsqueeze(1), x, self.weight_t)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        w = destination.pop(prefix + "weight_t")
        destination[prefix + "weight"] = w.transpose(1, 2)
        if self.bias is not None:  # keep nn.Linear's key order: weight, bias
            destination[prefix + "bias"] = destination.pop(prefix + "bias")

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        if prefix + "weight" in state_dict:
            state_dict[prefix + "weight_t"] = state_dict.pop(prefix + "weight").transpose(1, 2)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class StackedConv2d(nn.Module):
    """S independent 3x3 'same' convolutions as one grouped convolution: (S, B, C, H, W) -> (S, B, C', H, W).
    Parameters ``weight`` (S, C', C, 3, 3), ``bias`` (S, C'): seed s's slice is an ``nn.Conv2d``'s.
    ``channels_last``: the convolution runs on NHWC activations and kernels (the output stays NHWC, a
    view, so the next layer takes it without a copy); the same numbers up to reassociation."""

    def __init__(self, stack: int, c_in: int, c_out: int, bias: bool = True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(stack, c_out, c_in, 3, 3))
        self.bias = nn.Parameter(torch.zeros(stack, c_out)) if bias else None
        self.channels_last = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s, b, c, h, w = x.shape
        x, weight = x.transpose(0, 1).reshape(b, s * c, h, w), self.weight.flatten(0, 1)
        if self.channels_last:
            x, weight = (t.contiguous(memory_format=torch.channels_last) for t in (x, weight))
        y = F.conv2d(x, weight, None if self.bias is None else self.bias.flatten(), padding=1, groups=s)
        return y.view(b, s, -1, h, w).transpose(0, 1)


class Net(nn.Module):
    """Hidden 3x3 'same' convs, then flatten or global average pooling, hidden dense layers, head.

    FC is the case with no convs (the input is flattened). The hidden layers are linear maps only;
    the non-linearity (gating) is applied by :class:`DGN`. With ``stack=S`` every layer holds S
    independent copies (one per seed, leading dimension) and inputs are (S, B, C, H, W); the state
    dict has the same names, and seed s's slice of each tensor is the single network's tensor.
    """

    def __init__(self, in_shape: tuple, conv_channels: list, pool: str, dense: list, out_dim: int,
                 bias: bool = True, stack: Optional[int] = None):
        super().__init__()
        self.spec = (tuple(in_shape), list(conv_channels), pool, list(dense), out_dim, bias)  # to rebuild it
        c, h, w = in_shape
        self.n_conv = len(conv_channels)
        self.pool = pool
        self.stack = stack
        conv = (lambda i, o: nn.Conv2d(i, o, 3, padding=1, bias=bias)) if stack is None else \
            (lambda i, o: StackedConv2d(stack, i, o, bias))
        linear = (lambda i, o: nn.Linear(i, o, bias=bias)) if stack is None else \
            (lambda i, o: StackedLinear(stack, i, o, bias))
        layers: list[nn.Module] = []
        for ch in conv_channels:
            layers.append(conv(c, ch))
            c = ch
        width = c if (self.n_conv and pool == "gap") else c * h * w
        for units in dense:
            layers.append(linear(width, units))
            width = units
        self.hidden = nn.ModuleList(layers)
        self.head = linear(width, out_dim)

    def reshape(self, l: int, z: torch.Tensor) -> torch.Tensor:
        """The input of hidden layer ``l`` (``l = len(hidden)``: of the head): flatten/pool after the convs."""
        if l != self.n_conv:
            return z
        if self.n_conv and self.pool == "gap":
            return z.mean(dim=(-2, -1))
        image = z.dim() == (4 if self.stack is None else 5)  # (S,) B, C, H, W; FC also takes flat inputs
        return z.flatten(-3) if image else z


def build_net(arch, in_shape: tuple, out_dim: int, stack: Optional[int] = None) -> Net:
    """A :class:`Net` from an :class:`gatelab.core.config.ArchConfig`."""
    return Net(tuple(in_shape), list(arch.conv_channels), arch.pool, list(arch.dense), out_dim, arch.bias, stack)


def init_(net: Net, scheme: str, generator: torch.Generator, std: Optional[float] = None) -> Net:
    """Initialise in place from ``generator``: ``glorot`` = Keras default (Glorot-uniform weights,
    zero biases; paper 001 code), ``torch`` = PyTorch's default layer init, ``gaussian`` = N(0, std²)
    weights in every layer, zero biases (paper 004 §5: small initialisation)."""
    with torch.no_grad():
        for m in list(net.hidden) + [net.head]:
            if scheme == "gaussian":
                nn.init.normal_(m.weight, 0.0, std, generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            elif scheme == "glorot":
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
        self.gate_kind, self.beta, self.eps = gate, beta, eps
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


def stack_models(models: list[DGN]) -> DGN:
    """One DGN holding the S seeds of ``models`` (same arch and regime) side by side, for training
    them together; trainability is copied. :func:`unstack_state` gives each seed's state back."""
    m0 = models[0]
    if not isinstance(m0, DGN):  # e.g. a routing net (gatelab.nets.routing), which stacks itself
        return type(m0).stacked(models)

    def like(net: Optional[Net]) -> Optional[Net]:
        return None if net is None else Net(*net.spec, stack=len(models))

    stacked = DGN(like(m0.value), like(m0.feature), m0.gate_kind, m0.beta, m0.eps, m0.feature_act)
    states = [m.state_dict() for m in models]
    stacked.load_state_dict({k: torch.stack([sd[k] for sd in states]) for k in states[0]})
    for (_, p), (_, q) in zip(stacked.named_parameters(), m0.named_parameters()):
        p.requires_grad_(q.requires_grad)
    return stacked.to(next(m0.parameters()).device)


def use_channels_last(model: nn.Module, on: bool) -> nn.Module:
    """Run every stacked convolution of ``model`` on NHWC tensors (``on``) or NCHW; returns the model."""
    for m in model.modules():
        if isinstance(m, StackedConv2d):
            m.channels_last = bool(on)
    return model


def unstack_state(state: dict, s: int) -> dict:
    """Seed ``s``'s single-network state dict from a stacked state dict."""
    return {k: v[s].clone() for k, v in state.items()}
