"""What machine a run is on, in the words the fast-path rules and the cost table use.

:func:`detect` gives the device's *kind* (``h100``, ``h200``, another GPU's model; on a CPU the best
bf16 support its oneDNN has: ``cpu-amx``, ``cpu-avx512-bf16``, ``cpu-avx512``, ``cpu-avx2``, ``cpu``) and its
*model* (the GPU's name; the CPU's vendor, family and model from ``/proc/cpuinfo``, e.g. ``AMD EPYC family 26
model 2``, a Zen 5). Every results.json records it (``env.machine``); :mod:`gatelab.training.speed` picks the
layout, stacking and ``precision=auto`` from the kind, and :mod:`gatelab.launch.costs` prices a plan on the
entry recorded on this kind of machine first.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

CPU_KINDS = ("cpu-amx", "cpu-avx512-bf16", "cpu-avx512", "cpu-avx2", "cpu")  # best first


@dataclass(frozen=True)
class Machine:
    kind: str  # h200 | h100 | <gpu model> | cpu-amx | cpu-avx512-bf16 | cpu-avx512 | cpu-avx2 | cpu
    model: str  # the GPU's name, or the CPU's vendor, family and model
    bf16_native: bool  # bf16 kernels of its own (CUDA with bf16, oneDNN with AVX-512 BF16 or AMX)
    cpu_capability: str  # torch's CPU kernels: AVX2, AVX512, ...

    @property
    def gpu(self) -> bool:
        return not self.kind.startswith("cpu")

    def as_dict(self) -> dict:
        return asdict(self)


def _cpuinfo() -> dict:
    """The first processor's fields of /proc/cpuinfo ({} where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    except OSError:
        return {}
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def cpu_model(info: dict | None = None) -> str:
    """``AMD EPYC family 26 model 2``: the name alone does not tell a Zen 3 from a Zen 5."""
    info = _cpuinfo() if info is None else info
    name = re.sub(r"\s+", " ", info.get("model name", "unknown CPU")).strip()
    if info.get("cpu family"):
        name += f" family {info['cpu family']} model {info.get('model', '?')}"
    return name


def cpu_kind(info: dict | None = None, bf16_native: bool | None = None) -> str:
    """The CPU's kind from its flags and what its oneDNN offers: AMX tiles (bf16 matrix units), AVX-512 BF16
    (bf16 dot products), AVX-512, AVX2."""
    info = _cpuinfo() if info is None else info
    flags = set(info.get("flags", "").split())
    cap = torch.backends.cpu.get_cpu_capability()
    native = bf16_native(torch.device("cpu")) if bf16_native is None else bf16_native
    if native and "amx_bf16" in flags:
        return "cpu-amx"
    if native and ("avx512_bf16" in flags or not flags):
        return "cpu-avx512-bf16"
    if "AVX512" in cap or "avx512f" in flags:
        return "cpu-avx512"
    if "AVX2" in cap or "avx2" in flags:
        return "cpu-avx2"
    return "cpu"


def bf16_native(device: torch.device) -> bool:
    """Whether ``device`` has bf16 arithmetic of its own: a CUDA GPU that supports it, or a CPU whose
    oneDNN has bf16 kernels (AVX-512 BF16 / AMX). Without them bf16 autocast on the CPU emulates:
    measured on an AMD EPYC (Zen 3, AVX2), a 64->64 3x3 conv of 32 CIFAR images takes 2.47 s in bf16
    against 0.032 s in fp32, one thread."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    if device.type != "cpu":
        return False
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def gpu_kind(name: str) -> str:
    """``NVIDIA H200`` -> ``h200``; a name without a model number: the name, lower case, dashed."""
    found = re.search(r"\b([A-Z]\d{2,3})\b", name)
    return found[1].lower() if found else re.sub(r"\W+", "-", name.lower()).strip("-")


def detect(device: torch.device | str = "cpu") -> Machine:
    """The machine ``device`` is on (``auto``: CUDA if present, else the CPU)."""
    device = torch.device("cuda" if str(device) == "auto" and torch.cuda.is_available() else
                          "cpu" if str(device) == "auto" else device)
    cap = torch.backends.cpu.get_cpu_capability()
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        return Machine(gpu_kind(name), name, bf16_native(device), cap)
    if device.type != "cpu":
        return Machine(device.type, device.type, False, cap)
    native = bf16_native(device)
    return Machine(cpu_kind(bf16_native=native), cpu_model(), native, cap)


# The fastest correct path of a conv net by kind of machine, from scripts/bench.py --paths (seconds per net-step,
# GCONV, batch 32; docs/gpus.md has the tables): (channels_last, stack the seeds).
#  cpu-amx          Intel Xeon (AMX), 1 thread: fp32 0.47 NCHW / 0.39 NHWC; bf16 0.15 / 0.093 (issue #48). Stacking
#                   not measured there: one net at a time, as on the other CPUs where it was.
#  cpu-avx512-bf16  AMD EPYC family 26 (Zen 5), 2 threads, single: fp32 0.202 / 0.201, bf16 0.104 / 0.083; 3 stacked:
#                   fp32 0.233 / 0.258, bf16 0.104 / 0.086 a net; VCONV single bf16 0.180 / 0.173, 3 stacked 0.323 / 0.232:
#                   stacking loses, so one net at a time. (On a Zen 4 5 stacked GCONV nets took 1.56x a single one's
#                   time a net, fp32; that machine's later cost entry, fitted through 2 stacked, had 0.76x.)
#                   Zen 4 (family 25 model 17), 1 thread, 2026-12-08, one process (bench.py --paths): ReLU
#                   single fp32 0.597 / 0.571, bf16 0.287 / 0.275, 3 stacked bf16 0.332 / 0.335; DLNPF single bf16
#                   0.655 / 0.672. The default against the plain loop of its precision and layout (docs/gpus.md):
#                   ReLU 1.01x fp32, 1.05x bf16; DLNPF 0.98x fp32, 1.02x bf16 (issue #57's 1.2x was two processes).
#  cpu-avx2         AMD EPYC Zen 3, 1 thread: NHWC within noise (1.02-1.14 stacked), bf16 emulated; 2 stacked
#                   conv nets cost more than 2 single steps
#  GPUs             H200: 3 stacked 2-2.9x the plain loop; NHWC 2.84x vs 1.94x fp32 in one call, 2.53x vs 2.48x
#                   in another, bf16 NHWC below bf16 NCHW in both: NCHW, stacked
CONV_PATH = {"cpu-amx": (True, False), "cpu-avx512-bf16": (True, False), "cpu-avx512": (True, False),
             "cpu-avx2": (False, False), "cpu": (False, False)}
GPU_CONV_PATH = (False, True)


def _get(cfg, key, default=None):
    return cfg.get(key, default) if hasattr(cfg, "get") else getattr(cfg, key, default)


def is_conv(cfg) -> bool:
    arch = _get(cfg, "arch") or {}
    return bool(_get(arch, "conv_channels"))


def machine_of(cfg) -> Machine:
    """The machine ``cfg.device`` names on this host."""
    return detect(str(_get(cfg, "device") or "auto"))


def precision_of(cfg, machine: Machine | None = None) -> str:
    """The arithmetic a run trains in: ``fp32``, ``tf32`` or ``bf16`` (``amp=true`` is the older spelling of bf16;
    ``auto`` resolved by :func:`precision_auto` on ``machine``, default the run's device here)."""
    if _get(cfg, "amp"):
        return "bf16"
    asked = str(_get(cfg, "precision") or "fp32")
    return precision_auto(cfg, machine) if asked == "auto" else asked


def precision_auto(cfg, machine: Machine | None = None) -> str:
    """``precision=auto``: bf16 for a conv net where the device has bf16 kernels of its own (CUDA, AMX, AVX-512
    BF16), else fp32 (bf16 is emulated: a Zen 3's conv 10-80x slower; an FC or routing step is dispatch-bound,
    where bf16 buys nothing). Resolved before the run key is made (gatelab.core.runs.identity)."""
    machine = machine or machine_of(cfg)
    return "bf16" if is_conv(cfg) and machine.bf16_native else "fp32"


def channels_last(cfg, machine: Machine | None = None) -> bool:
    """Whether a run's convolutions take NHWC tensors: ``channels_last`` when set, else :data:`CONV_PATH`'s
    choice for the machine's kind (False for a net without convolutions)."""
    asked = _get(cfg, "channels_last")
    if asked is not None:
        return bool(asked) and is_conv(cfg)
    if not is_conv(cfg):
        return False
    machine = machine or machine_of(cfg)
    return (GPU_CONV_PATH if machine.gpu else CONV_PATH.get(machine.kind, (False, False)))[0]


def stack_seeds(cfg, machine: Machine | None = None) -> bool:
    """Whether a job's seeds (a row's family) train stacked: ``stack_seeds`` when set, else True for a net
    without convolutions and :data:`CONV_PATH`'s choice for a conv net."""
    asked = _get(cfg, "stack_seeds")
    if asked is not None:
        return bool(asked)
    if not is_conv(cfg):
        return True
    machine = machine or machine_of(cfg)
    return (GPU_CONV_PATH if machine.gpu else CONV_PATH.get(machine.kind, (False, False)))[1]
