"""Checkpoint files of a run: ``<run>/ckpt/{last,prev,best,best_prev,epoch_<N>,step_<t>}.pt``, written atomically.

``last.pt`` is the point to resume from and ``best.pt`` the weights of the best epoch so far (the
FLNPF source). Both rotate: writing a new one first moves the file it replaces to ``prev.pt`` /
``best_prev.pt`` (:func:`save_rotating`), and a group checkpoint writes each net's ``best.pt``
before its ``last.pt``. So a kill at any instant leaves every net of a job a good point that all
nets share, with the weights of that point's best epoch on disk (:func:`group_resume_point`);
:func:`settle` then makes that point ``last.pt`` and its best ``best.pt`` before training goes on,
so no later kill can lose it. A truncated or corrupt file falls back to the previous one with a
one-line message naming it (:func:`load_good`)."""
from __future__ import annotations

import errno
import json
import logging
import os
import re
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

CKPT_DIR = "ckpt"
FORMAT = 1
LAST, PREV = "last.pt", "prev.pt"
BEST, BEST_PREV = "best.pt", "best_prev.pt"
KEPT = {LAST: PREV, BEST: BEST_PREV}  # a rotating file -> where the one it replaces is kept
log = logging.getLogger("gatelab")


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def temporaries(directory: Path) -> list[Path]:
    """Files a killed writer left half-written in ``directory`` (``.<name>.<pid>.tmp``)."""
    return sorted(p for p in Path(directory).glob(".*.tmp") if p.is_file())


def clear_temporaries(run_dir: Path) -> None:
    """Remove what killed writers left in a run directory and its ``ckpt/`` (call under the run's lock)."""
    for d in (Path(run_dir), Path(run_dir) / CKPT_DIR):
        for p in temporaries(d):
            p.unlink(missing_ok=True)


class DiskFull(OSError):
    """A write that found no space (or quota) left: names the file and the free space."""


def _written(path: Path, tmp: Path, write) -> None:
    """``write(tmp)``; on failure the partial ``tmp`` is removed (its space freed for results.json), and a
    full disk becomes :class:`DiskFull` naming ``path`` and what is free where it lives: an ENOSPC or
    EDQUOT, or (torch's zip writer says only ``unexpected pos``) a partial file that took all the
    space there was."""
    try:
        write(tmp)
    except BaseException as e:
        partial = Path(tmp).stat().st_size if Path(tmp).exists() else 0
        Path(tmp).unlink(missing_ok=True)
        usage = shutil.disk_usage(path.parent)
        if (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)) or \
                (isinstance(e, RuntimeError) and 0 < partial and usage.free <= partial + 2**20):
            raise DiskFull(errno.ENOSPC, f"no space left writing {path}: {usage.free / 2**20:.1f} MiB free of "
                                         f"{usage.total / 2**20:.1f} MiB there") from e
        raise


def atomic_write_bytes(path: Path, write) -> None:
    """Write via ``write(tmp_path)`` then rename, so readers never see a partial file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp(path)
    _written(path, tmp, write)
    os.replace(tmp, path)


def atomic_write_json(path: Path, obj: Any, reserve: int = 0) -> None:
    """``obj`` as JSON, atomically; ``reserve``: that many trailing spaces (valid JSON whitespace), room
    that :func:`rewrite_json_in_place` can use when the disk is full."""
    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=2, sort_keys=False)
            f.write("\n" + " " * reserve)

    atomic_write_bytes(path, write)


def rewrite_json_in_place(path: Path, obj: Any) -> None:
    """Overwrite ``path`` with ``obj`` inside the bytes it already holds (padded with spaces), so a full
    disk can still record a status; raises :class:`DiskFull` if it does not fit."""
    data = (json.dumps(obj, indent=2) + "\n").encode()
    size = Path(path).stat().st_size
    if len(data) > size:
        raise DiskFull(errno.ENOSPC, f"no space left writing {path}: {len(data)} bytes do not fit in its {size}")
    with open(path, "r+b") as f:
        f.write(data + b" " * (size - len(data)))


def save(path: Path, **state) -> None:
    atomic_write_bytes(path, lambda tmp: torch.save({"format": FORMAT, **state}, tmp))


def save_rotating(path: Path, **state) -> None:
    """Write ``path`` (``last.pt`` or ``best.pt``) atomically, first moving the file it replaces to
    ``prev.pt`` / ``best_prev.pt``. At every instant the directory holds the new point, the old one, or both."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp(path)
    _written(path, tmp, lambda t: torch.save({"format": FORMAT, **state}, t))
    if path.exists():
        os.replace(path, path.with_name(KEPT[path.name]))
    os.replace(tmp, path)


class Writer:
    """Writes checkpoints on a background thread, one at a time and in order, so training goes on
    meanwhile. :meth:`save` first waits for the previous write (memory stays bounded, errors surface
    at the next save or at :meth:`close`). The tensors handed over must not change afterwards (clones)."""

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


def load(path: Path, peek: bool = False) -> dict:
    """A checkpoint on the CPU. ``peek``: memory-mapped, so that reading its small entries (epoch,
    history) costs no read of the weights (a plan or a check over hundreds of conv runs)."""
    state = torch.load(path, map_location="cpu", weights_only=False, mmap=peek)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path} is not a gatelab checkpoint (format {FORMAT})")
    return state


def _first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence of an error message, whole words only."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
    if len(line) > limit:
        line = line[:limit].rsplit(" ", 1)[0] + " ..."
    return line


def load_good(path: Path, peek: bool = False, quiet: bool = False) -> dict | None:
    """A checkpoint, or None where it is absent or unreadable (truncated, corrupt, of another
    format); an unreadable file is reported in one line naming it (unless ``quiet``)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        return load(path, peek)
    except Exception as e:  # noqa: BLE001 - torch raises RuntimeError, EOFError, pickle errors ...
        stat = path.stat()
        seen = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if not quiet and seen not in _WARNED:  # once per file a process: the plan and the resume both read it
            _WARNED.add(seen)
            log.warning("%s is unreadable (%s: %s); using the previous good checkpoint", path, type(e).__name__,
                        _first_sentence(str(e)))
        return None


_WARNED: set = set()  # the unreadable checkpoints already named, with their size and time


def position(state: dict) -> tuple[int, int]:
    """Where a last.pt resumes: (completed epochs, steps done in the next epoch)."""
    return int(state["epoch"]), int(state.get("batch", 0))


def best_of(history: list) -> tuple[Optional[int], Optional[float]]:
    """(epoch, test accuracy) of a history's best epoch: the highest test accuracy, the first of
    equals (as training records it); (None, None) before any epoch with a test accuracy."""
    scored = [h for h in history if h.get("test_acc") is not None]
    if not scored:
        return None, None
    h = max(scored, key=lambda h: h["test_acc"])
    return int(h["epoch"]), h["test_acc"]


@dataclass
class Point:
    """A net's resume point: its state, the file that holds it (``last.pt`` or ``prev.pt``) and the
    file that holds the weights of its best epoch (None: no epoch yet)."""
    state: dict
    file: str
    best: Optional[str]

    @property
    def at(self) -> tuple[int, int]:
        return position(self.state)


def points(ckpt_dir: Path, peek: bool = False) -> dict[tuple[int, int], Point]:
    """A net's usable resume points by position: ``last.pt`` and ``prev.pt`` where readable and where
    the weights of their best epoch are on disk (a point whose best.pt is gone would leave a run whose
    best.pt disagrees with its results.json)."""
    held = {}  # (epoch, test accuracy) -> the best file holding those weights, best.pt first
    for name in (BEST_PREV, BEST):
        s = load_good(Path(ckpt_dir) / name, peek=True, quiet=name == BEST_PREV)
        if s is not None:
            held[(s.get("epoch"), s.get("test_acc"))] = name
    out: dict[tuple[int, int], Point] = {}
    for name in (PREV, LAST):  # last.pt wins a tie
        s = load_good(Path(ckpt_dir) / name, peek)
        if s is None:
            continue
        epoch, acc = best_of(s.get("history") or [])
        best = None if epoch is None else held.get((epoch, acc))
        if epoch is not None and best is None:
            log.debug("%s: neither %s nor %s holds its best epoch %d; not resumed from it", Path(ckpt_dir) / name,
                      BEST, BEST_PREV, epoch)
            continue
        out[position(s)] = Point(s, name, best)
    return out


def group_of(run_dirs) -> list[str]:
    """The identity of a job's stack, stored in each checkpoint: its run directories (cell/regime/run)."""
    return ["/".join(Path(d).parts[-3:]) for d in run_dirs]


def group_resume_point(ckpt_dirs: list[Path], group: list[str], peek: bool = False) -> list[Point | None]:
    """The resume points of the nets of one job (one per directory, None: from the start).

    When the nets' checkpoints were all written by one group (the same stored group, holding this
    job's nets; a net that has since finished, e.g. diverged, may have left it), they resume from the
    latest point that all of them hold, or all from the start: a kill between two nets' writes never
    splits the stack. Checkpoints of another grouping (a run trained alone before) resume each from
    its own latest point. ``peek``: read without loading the weights (the plan)."""
    cands = [points(d, peek) for d in ckpt_dirs]
    if not any(cands):
        return [None] * len(cands)
    stored = {tuple(p.state.get("group") or ()) for c in cands for p in c.values()}
    grouped = len(stored) == 1 and set(group) <= set(next(iter(stored)))
    if grouped:
        common = set.intersection(*(set(c) for c in cands)) if all(cands) else set()
        if not common:
            log.warning("the checkpoints of %s hold no point common to all nets; they restart together", group)
            return [None] * len(cands)
        at = max(common)
        return [c[at] for c in cands]
    return [c[max(c)] if c else None for c in cands]


def settle(ckpt_dir: Path, point: Point | None) -> None:
    """Before a net trains on from ``point``: make it ``last.pt`` and its best epoch's weights
    ``best.pt``, dropping what lies beyond it (a later point that the group did not reach, an
    unreadable file: training writes them again). The next rotation then keeps ``point`` as
    ``prev.pt``, so a further kill between two nets' writes still finds it. ``None`` (from the
    start): no resume or best file is left to mix with the new run's."""
    d = Path(ckpt_dir)
    if point is None:
        for name in (LAST, PREV, BEST, BEST_PREV):
            (d / name).unlink(missing_ok=True)
        return
    if point.file == PREV:
        os.replace(d / PREV, d / LAST)
    if point.best == BEST_PREV:
        os.replace(d / BEST_PREV, d / BEST)
    elif point.best is None:
        for name in (BEST, BEST_PREV):
            (d / name).unlink(missing_ok=True)


def drop_kept(ckpt_dir: Path) -> int:
    """Remove ``prev.pt`` and ``best_prev.pt`` (a finished run never resumes); the bytes freed."""
    freed = 0
    for name in KEPT.values():
        p = Path(ckpt_dir) / name
        if p.is_file():
            freed += p.stat().st_size
            p.unlink()
    return freed


def best_mismatch(run_dir: Path, res: dict) -> Optional[str]:
    """Why a finished run's ``best.pt`` is not the weights of its results.json's best epoch (None:
    it is, or the run has no best epoch): such a run is no FLNPF source and no result."""
    epoch, acc = res.get("best_epoch"), res.get("best_test_acc")
    if epoch is None:
        return None
    path, name = Path(run_dir) / CKPT_DIR / BEST, f"{CKPT_DIR}/{BEST}"
    s = load_good(path, peek=True, quiet=True)
    if s is None:
        return f"{name} is {'unreadable' if path.is_file() else 'missing'}, its results.json says best_epoch {epoch}"
    if s.get("epoch") != epoch or s.get("test_acc") != acc:
        return f"{name} holds epoch {s.get('epoch')} (test acc {s.get('test_acc')}), its results.json says " \
               f"best_epoch {epoch} (test acc {acc})"
    return None
