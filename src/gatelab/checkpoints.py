"""Checkpoint files of a run: ``<run>/ckpt/{last,best,epoch_<N>}.pt``, written atomically."""
from __future__ import annotations

import json
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch

CKPT_DIR = "ckpt"
FORMAT = 1


def atomic_write_bytes(path: Path, write) -> None:
    """Write via ``write(tmp_path)`` then rename, so readers never see a partial file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)


def atomic_write_json(path: Path, obj: Any) -> None:
    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=2, sort_keys=False)
            f.write("\n")

    atomic_write_bytes(path, write)


def save(path: Path, **state) -> None:
    atomic_write_bytes(path, lambda tmp: torch.save({"format": FORMAT, **state}, tmp))


class Writer:
    """Writes checkpoints on a background thread, one at a time, so training goes on meanwhile.
    :meth:`save` first waits for the previous write (memory stays bounded, errors surface at the
    next save or at :meth:`close`). The tensors handed over must not change afterwards (clones)."""

    def __init__(self):
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gatelab-ckpt")
        self._pending: list[Future] = []

    def save(self, path: Path, **state) -> None:
        self.wait()
        self._pending.append(self._pool.submit(save, path, **state))

    def wait(self) -> None:
        pending, self._pending = self._pending, []
        for f in pending:
            f.result()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=True)


def resolve(source: str, which: str = "best") -> Path:
    """A checkpoint file from a run directory (``<dir>/ckpt/<which>.pt``) or a ``.pt`` path."""
    p = Path(source).expanduser()
    if p.is_dir():
        p = p / CKPT_DIR / f"{which}.pt"
    if not p.is_file():
        raise FileNotFoundError(f"checkpoint not found: {p} (give a run directory holding "
                                f"{CKPT_DIR}/{which}.pt, or a .pt file)")
    return p


def load(path: Path) -> dict:
    state = torch.load(path, map_location="cpu", weights_only=False)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path} is not a gatelab checkpoint (format {FORMAT})")
    return state
