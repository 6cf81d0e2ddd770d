"""Shared fixtures: tiny datasets written in the real cache format, and composed configs."""
from __future__ import annotations

import os as _os

_os.environ["GATELAB_STRICT_FIGURES"] = "1"  # every figure a test renders must have no overlapping text
if _os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in _os.environ:
    # `make test` runs TEST_JOBS workers that share the cores: one thread each, and in the run.py processes they
    # start (two threads a worker beside another worker ran a kill test over 10 min against 21 s, 2026-12-07)
    _os.environ["OMP_NUM_THREADS"] = "1"

import copy
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from gatelab.core.runs import compose

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"

# Small enough for a 2-core CPU: every (dataset, arch, regime) trains one epoch in well under a second.
TINY_ARCH = {"fc": ["arch.dense=[16,16,16]"],
             "vconv": ["arch.conv_channels=[4,4]", "arch.dense=[16]"],
             "gconv": ["arch.conv_channels=[4,4]", "arch.dense=[16]"]}


def _images(rng, n, shape, y):
    """Random images with a class-dependent bright patch, so that a net can learn something."""
    x = rng.integers(0, 90, size=(n, *shape), dtype=np.uint8)
    for c in range(10):
        rows = slice(2 * c, 2 * c + 3)
        x[y == c, rows, 2:10] = 250
    return x


def write_tiny_data(root: Path, n_train: int = 240, n_test: int = 80, seed: int = 0) -> Path:
    """mnist.npz (N,28,28) and cifar10.npz (N,32,32,3), uint8, in the cache format."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    for name, shape in (("mnist", (28, 28)), ("cifar10", (32, 32, 3))):
        ytr = np.arange(n_train, dtype=np.uint8) % 10
        yte = np.arange(n_test, dtype=np.uint8) % 10
        rng.shuffle(ytr)
        np.savez(root / f"{name}.npz", x_train=_images(rng, n_train, shape, ytr), y_train=ytr,
                 x_test=_images(rng, n_test, shape, yte), y_test=yte)
    return root


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same global RNG state: no test depends on luck."""
    import torch
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory) -> Path:
    return write_tiny_data(tmp_path_factory.mktemp("data"))


_COMPOSED: dict[tuple, object] = {}
PATHS = ("out_root=", "run_dir=", "data.root=")  # plain path strings: set on a copy of one composition


def make_cfg(overrides=(), root: Path | None = None, run_dir: Path | None = None):
    """A config composed from conf/ exactly as run.py composes it, plus test overrides. Each set of overrides is
    composed once a session (Hydra's compose is 0.3-0.6 s here, more than most tests' training) and the caller
    gets its own copy, with its paths (``PATHS``: a folder per test) set on it."""
    base = ["progress=false", "device=cpu", "epochs=1"]
    if root is not None:
        base.append(f"data.root={root}")
    if run_dir is not None:
        base.append(f"run_dir={run_dir}")
    overrides = [*base, *overrides]
    key = tuple(o for o in overrides if not o.startswith(PATHS))
    if key not in _COMPOSED:
        _COMPOSED[key] = compose(key)
    cfg = copy.deepcopy(_COMPOSED[key])
    for o in overrides:
        if o.startswith(PATHS):
            OmegaConf.update(cfg, *o.split("=", 1), merge=False)
    return cfg


@pytest.fixture
def cfg_factory(tiny_root, tmp_path):
    def factory(*overrides, arch="fc", run="run"):
        return make_cfg([f"arch={arch}", *TINY_ARCH[arch], *overrides], tiny_root, tmp_path / run)
    return factory



def reassociation_tol(reference, steps: int, factor: float = 16.0) -> float:
    """Absolute tolerance for two float computations that differ only in the order of their sums
    (thread count, batched vs single kernels, another CPU): each of ``steps`` optimiser steps may
    move a weight by a few ulps of its magnitude, so the bound is ``factor * steps * eps * max|x|``
    with eps of the tensors' dtype. ``factor`` 16 covers the largest gap seen on any machine (about
    3x ``steps * eps * max|x|``) with room; it stays orders of magnitude below what a real bug (a
    wrong init, data order or step size) changes after the same steps."""
    import torch
    tensors = list(reference.values()) if isinstance(reference, dict) else [reference]
    eps = max(torch.finfo(t.dtype).eps for t in tensors)
    magnitude = max(float(t.abs().max()) for t in tensors)
    return factor * steps * eps * max(magnitude, 1e-3)


def strip_seconds(history):
    return [{k: v for k, v in h.items() if k != "seconds"} for h in history]


def same_run(a, b):
    """Two run directories hold the same completed run: history, best epoch, final weights and
    data-order RNG, bit for bit; returns both results."""
    import json

    import torch

    from gatelab.core import checkpoints
    ra, rb = (json.loads((Path(d) / "results.json").read_text()) for d in (a, b))
    assert ra["status"] == rb["status"] == "completed"
    assert strip_seconds(ra["history"]) == strip_seconds(rb["history"])
    assert (ra["best_test_acc"], ra["best_epoch"]) == (rb["best_test_acc"], rb["best_epoch"])
    wa, wb = (checkpoints.load(Path(d) / "ckpt" / "last.pt") for d in (a, b))
    assert wa["model"].keys() == wb["model"].keys()
    for k in wa["model"]:
        assert torch.equal(wa["model"][k], wb["model"][k]), (a, k)
    assert torch.equal(wa["shuffle_rng"], wb["shuffle_rng"])
    return ra, rb


class Killed(Exception):
    """A process death modelled inside a test: nothing after it reaches the disk."""


def kill_after_writes(monkeypatch, n: int, name: str = "last.pt"):
    """Stop the job right after the ``n``-th write of a checkpoint file called ``name`` reached the disk
    (the later nets of the group not yet written): the state a SIGKILL at that instant leaves.
    Returns the function that undoes it."""
    from gatelab.core import checkpoints
    real = checkpoints.Writer.save
    count = {"n": 0}

    def save(self, path, rotate=False, **state):
        real(self, path, rotate=rotate, **state)
        if path.name == name:
            count["n"] += 1
            if count["n"] == n:
                self.wait()
                raise Killed(f"killed after write {n} of {name}")
    monkeypatch.setattr(checkpoints.Writer, "save", save)
    return lambda: monkeypatch.setattr(checkpoints.Writer, "save", real)


def evaluation_fails(monkeypatch, n: int, exc):
    """The training loop's ``n``-th evaluation (epoch n's) raises ``exc``; returns what undoes it."""
    from gatelab.training import loop
    real, calls = loop.evaluate, {"n": 0}

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] == n:
            raise exc
        return real(*a, **k)
    monkeypatch.setattr(loop, "evaluate", flaky)
    return lambda: monkeypatch.setattr(loop, "evaluate", real)


def default_signals() -> None:
    """``preexec_fn`` of a child that a test stops with a signal: SIGINT and SIGTERM at their defaults,
    whatever this process inherited (``nohup``, ``setsid ... &`` and some CI runners start the suite
    with SIGINT ignored, and a child inherits an ignored signal, so Ctrl-C would not reach run.py)."""
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)

