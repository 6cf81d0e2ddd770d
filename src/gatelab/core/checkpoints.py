"""Checkpoint files of a run: ``<run>/ckpt/{last,prev,best,epoch_<N>,step_<t>}.pt``, written atomically.

``last.pt`` is the point to resume from; writing a new one keeps the one it replaces as ``prev.pt``
(:func:`save_rotating`), so a kill at any instant leaves every run with a good point that all nets
of its job share (:func:`group_resume_point`), and a truncated or corrupt file falls back to the
previous one with a one-line message naming it (:func:`load_good`)."""
from __future__ import annotations

import json
import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch

CKPT_DIR = "ckpt"
FORMAT = 1
LAST, PREV = "last.pt", "prev.pt"
log = logging.getLogger("gatelab")


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


def save_rotating(path: Path, **state) -> None:
    """Write ``path`` (``last.pt``) atomically, first moving the file it replaces to ``prev.pt``.
    At every instant the directory holds the new point, the old one, or both."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save({"format": FORMAT, **state}, tmp)
    if path.exists():
        os.replace(path, path.with_name(PREV))
    os.replace(tmp, path)


class Writer:
    """Writes checkpoints on a background thread, one at a time, so training goes on meanwhile.
    :meth:`save` first waits for the previous write (memory stays bounded, errors surface at the
    next save or at :meth:`close`). The tensors handed over must not change afterwards (clones)."""

    def __init__(self):
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gatelab-ckpt")
        self._pending: list[Future] = []

    def save(self, path: Path, rotate: bool = False, **state) -> None:
        self.wait()
        self._pending.append(self._pool.submit(save_rotating if rotate else save, path, **state))

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


def load_good(path: Path) -> dict | None:
    """A checkpoint, or None where it is absent or unreadable (truncated, corrupt, of another
    format); an unreadable file is reported in one line naming it."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        return load(path)
    except Exception as e:  # noqa: BLE001 - torch raises RuntimeError, EOFError, pickle errors ...
        log.warning("%s is unreadable (%s: %s); using the previous good checkpoint", path, type(e).__name__,
                    str(e).splitlines()[0][:120] if str(e) else "")
        return None


def position(state: dict) -> tuple[int, int]:
    """Where a last.pt resumes: (completed epochs, steps done in the next epoch)."""
    return int(state["epoch"]), int(state.get("batch", 0))


def group_resume_point(ckpt_dirs: list[Path], group: list[str]) -> list[dict | None]:
    """The resume states of the nets of one job (one per directory, None: from the start).

    Each net's good checkpoints (``last.pt``, else ``prev.pt``) are candidates. When the nets were
    written as this same ``group`` (the job's run directories), they resume from the latest point
    that all of them hold, or all from the start: a kill between two nets' writes never splits the
    stack. Checkpoints of another grouping (a run trained alone before, or written before groups
    existed) resume each from its own latest point."""
    cands = []
    for d in ckpt_dirs:
        good = [s for s in (load_good(Path(d) / LAST), load_good(Path(d) / PREV)) if s is not None]
        cands.append({position(s): s for s in reversed(good)})  # last.pt wins a tie
    if not any(cands):
        return [None] * len(cands)
    grouped = all(c and all(s.get("group") == group for s in c.values()) or not c for c in cands)
    if grouped:
        common = set.intersection(*(set(c) for c in cands)) if all(cands) else set()
        if not common:
            log.warning("the checkpoints of %s hold no point common to all nets; they restart together", group)
            return [None] * len(cands)
        at = max(common)
        return [c[at] for c in cands]
    return [c[max(c)] if c else None for c in cands]
