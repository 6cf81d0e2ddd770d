"""The arithmetic and host settings a run trains with (recorded in its ``env``): the precision
(fp32, TF32, bf16 autocast, and whether the device has bf16 kernels of its own) and glibc's heap reuse."""
from __future__ import annotations

import ctypes
import logging
import os
import sys

import torch

from gatelab.core import machine
from gatelab.core.machine import precision_of

log = logging.getLogger("gatelab")


def heap_reuse(enabled: bool) -> bool:
    """On glibc, serve large host tensors from the process's heap, kept between steps, instead of
    fresh ``mmap`` pages zeroed by the kernel at each allocation (tensors above 32 MB always take
    that road by default). Changes no number; measured on a 2-core CPU: a paper 003 step at M=100,
    K=50 (3 seeds, batch 8) 150 -> 96 ms, its 120 MB of encoder gradients being reallocated each
    step. The memory is not given back to the OS until the process ends. Returns what is in force."""
    global _HEAP_REUSED
    if enabled and not _HEAP_REUSED and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6")
            _HEAP_REUSED = bool(libc.mallopt(-4, 0)) and bool(libc.mallopt(-1, 2**31 - 1))  # M_MMAP_MAX, M_TRIM_THRESHOLD
        except (OSError, AttributeError):  # not glibc (musl, ...): keep the default allocator
            pass
    return _HEAP_REUSED


_HEAP_REUSED = False


def determinism(cfg) -> dict:
    """``deterministic=true``: deterministic kernels only (an op without one fails, naming itself), cuDNN's
    autotuning off (it picks kernels by timing), and cuBLAS's fixed workspace (set before CUDA starts: the loop
    calls this first). What ran, for ``env``."""
    on = bool(cfg.get("deterministic", False))
    if on:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(on)
    # what torch now enforces, read back (issue #56: a no-op here must not be recorded as deterministic)
    return {"deterministic": torch.are_deterministic_algorithms_enabled(),
            "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG") if on else None}


def precision(cfg, device: torch.device) -> dict:
    """Set the arithmetic of ``precision`` (fp32: TF32 off for CUDA matmuls and cuDNN, which
    otherwise runs convolutions in TF32 by default; tf32: on; bf16: fp32 flags, bf16 autocast of
    the forward) and cuDNN autotuning for conv nets on CUDA; returns what ran, for ``env``."""
    kind = precision_of(cfg)
    if kind == "bf16" and device.type == "cpu" and not machine.bf16_native(device):
        log.warning("precision=bf16 on a CPU without bf16 kernels (%s, no AVX-512 BF16/AMX): bf16 autocast is "
                    "emulated, convolutions up to 80x slower than fp32; precision=fp32 is the fast path here",
                    torch.backends.cpu.get_cpu_capability())
    tf32 = kind == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = device.type == "cuda" and bool(cfg.arch.conv_channels) and \
        not cfg.get("deterministic", False)
    return {"precision": kind, "autocast": "bf16" if kind == "bf16" else None,
            "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32, "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "float32_matmul_precision": torch.get_float32_matmul_precision()}
