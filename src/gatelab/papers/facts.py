"""What a report reads from a run's checkpoints, kept beside its results.json (``facts.json``), so that a run whose
checkpoints are gone (carried in git to the next machine, issue #55) still renders the same report, byte for byte.

A report asks :func:`fact` for each number it derives from a checkpoint (a loss, a clustering, a mask's counts),
under a key that names it. With the run's checkpoints here, the fact is computed, passed through its stored form
(so both paths give the same value), and, inside :func:`recording`, written to the run's ``facts.json``. Without
them, the stored fact is read; a fact that was never stored stops the report, naming the run and the key. A
``facts.json`` is tied to its run's ``results.json`` (its sha256): a run trained again ignores its old facts.
Arrays are stored as their bytes (exact); other values as JSON (floats round-trip exactly).
"""
from __future__ import annotations

import base64
import contextlib
import functools
import json
from pathlib import Path
from typing import Any, Callable

import numpy as np

from gatelab.core.checkpoints import CKPT_DIR, atomic_write_json
from gatelab.core.results import RESULTS, results_sha256

FACTS = "facts.json"
_RECORDING: list[bool] = []  # non-empty inside recording()
_MEMO: dict = {}  # (run dir, key, its results.json's version) -> the stored form: a fact is computed once a process


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        return {"__array__": a.dtype.str, "shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode()}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and "__array__" in value:
        return np.frombuffer(base64.b64decode(value["b64"]), dtype=np.dtype(value["__array__"])) \
            .reshape(value["shape"]).copy()
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _version(path: Path) -> tuple:
    try:
        st = path.stat()
        return st.st_mtime_ns, st.st_size
    except OSError:
        return ()


def _results_version(run_dir: Path) -> tuple:
    return _version(Path(run_dir) / RESULTS)


def _stored_form(value: Any) -> Any:
    """``value`` as facts.json holds it (and as read back from it)."""
    return json.loads(json.dumps(_encode(value)))


def stored(run_dir: Path) -> dict:
    """The facts kept for ``run_dir``'s present results.json ({} when none, or when they belong to an earlier one)."""
    run_dir = Path(run_dir)
    return _stored(run_dir, _version(run_dir / FACTS), _results_version(run_dir))


@functools.lru_cache(maxsize=256)
def _stored(run_dir: Path, facts_version: tuple, results_version: tuple) -> dict:
    try:
        got = json.loads((run_dir / FACTS).read_text())
        return got["facts"] if got.get("results_sha256") == results_sha256(run_dir) else {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def has_checkpoints(run_dir: Path) -> bool:
    return (Path(run_dir) / CKPT_DIR).is_dir()


def fact(run_dir: Path, key: str, compute: Callable[[], Any]) -> Any:
    """The fact ``key`` of the run in ``run_dir``: stored, else computed from its checkpoints (and stored while
    :func:`recording`). Raises SystemExit when neither is possible."""
    run_dir = Path(run_dir)
    kept = stored(run_dir)
    if key in kept:
        return _decode(kept[key])
    memo = (str(run_dir), key, _results_version(run_dir))
    if memo not in _MEMO:
        if not has_checkpoints(run_dir):
            raise SystemExit(f"{run_dir}: its checkpoints are not here and its {FACTS} does not hold {key!r}: the "
                             "report needs a fact that was not carried (render it where the run was trained)")
        _MEMO[memo] = _stored_form(compute())  # on both paths
    value = _MEMO[memo]
    if _RECORDING:
        atomic_write_json(run_dir / FACTS, {"results_sha256": results_sha256(run_dir), "facts": {**kept, key: value}})
    return _decode(value)


@contextlib.contextmanager
def recording():
    """Inside: every fact computed from a checkpoint is written to its run's ``facts.json``."""
    _RECORDING.append(True)
    try:
        yield
    finally:
        _RECORDING.pop()
