"""The results contract: what a run leaves in ``<run>/results.json`` and how it is read back.

The report, the figures and the sweep summary read runs through this module alone; none of them
imports the training loop. A results.json holds (version :data:`RESULTS_VERSION`):

``version, status, seed, config`` (the resolved job config, closed sets stored as plain strings),
``history`` (one dict per epoch: train_loss, train_acc, test_loss, test_acc, seconds),
``best_test_acc, best_epoch, final_train_acc``, ``env`` (:func:`environment`), ``model``,
``wall_time_s, finished_at`` and, when they apply, ``resumed_from_epoch, resumes, diverged_epoch,
error, traceback``.

``status`` is ``running`` while a run trains, then ``completed``, ``diverged`` (a non-finite
training loss), ``failed`` (an exception) or ``interrupted`` (Ctrl-C or SIGTERM; the rerun resumes).
Only ``completed`` runs are results. A process killed outright (SIGKILL, out of memory) leaves
``running``: :func:`trainer_of` tells such a run from one that trains, by its ``.lock``.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Optional

import torch

from gatelab.core import machine

RESULTS = "results.json"
LOSS_TRACE = "loss_trace.csv"  # loss_trace=[lo, hi]: the training-set loss after each step of the window
RESULTS_VERSION = 1
STATUSES = ("running", "completed", "diverged", "failed", "interrupted")
FINAL = ("completed", "diverged")  # re-running these gives the same result: they are skipped


def load_results(path: Path) -> tuple[Optional[dict], Optional[str]]:
    """A results.json read and judged: ``(results, None)``; ``(None, why)`` for a malformed one (not
    valid JSON, e.g. truncated; not an object; another version; no status or config; a final run
    without history); ``(None, None)`` where there is none. Every reader of run directories reads
    through it and skips a malformed one with one line (:func:`skip_note`), never counting it."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as e:
        return None, f"unreadable ({e})"
    try:
        res = json.loads(text)
    except ValueError as e:
        return None, f"not valid JSON, truncated? ({e})"
    why = malformed(res)
    return (None, why) if why else (res, None)


def malformed(res) -> Optional[str]:
    """Why a parsed results.json is not one this code reads (None: it is)."""
    if not isinstance(res, dict):
        return f"not a JSON object but a {type(res).__name__}"
    if res.get("version") != RESULTS_VERSION:
        return f"results version {res.get('version')!r}, this code reads version {RESULTS_VERSION}"
    if res.get("status") not in STATUSES:
        return "no status" if "status" not in res else f"status {res['status']!r} is not one of {', '.join(STATUSES)}"
    if not isinstance(res.get("config"), dict):
        return "no config" if "config" not in res else "its config is not an object"
    if not isinstance(res.get("history", []), list) or (res["status"] in FINAL and "history" not in res):
        return f"a {res['status']} run without a history" if "history" not in res else "its history is not a list"
    return None


def skip_note(path: Path, why: str) -> str:
    """The one line a reader gives a results.json it skips: the file and why."""
    return f"{path}: not counted: {why}"


def read_results(path: Path) -> Optional[dict]:
    """A valid results.json (:func:`load_results`), or None if absent or malformed."""
    return load_results(path)[0]


def epoch_seconds(history) -> list[float]:
    """The seconds of each recorded epoch of a results.json ``history`` (epochs without them left out)."""
    return [float(h["seconds"]) for h in history or [] if isinstance(h, dict) and h.get("seconds")]


def finished_results(run_dir: Path) -> Optional[dict]:
    """The results of a run directory whose run is final (completed or diverged), else None."""
    res = read_results(Path(run_dir) / RESULTS)
    return res if res is not None and res.get("status") in FINAL else None


def results_sha256(run_dir: Path) -> str:
    """The sha256 of a run's results.json: what a file made from the run (its facts, a carried mask) is tied to."""
    return hashlib.sha256((Path(run_dir) / RESULTS).read_bytes()).hexdigest()


LOCK = ".lock"  # held (flock, exclusive) by the process that trains the run; it says "pid <n> on <host>"


@contextlib.contextmanager
def locked(run_dirs):
    """Exclusive ``<run>/.lock`` on every run directory (in sorted order, so no two jobs deadlock);
    a lock held by another process is waited for, saying so once."""
    with contextlib.ExitStack() as stack:
        for d in sorted(Path(d) for d in run_dirs):
            d.mkdir(parents=True, exist_ok=True)
            f = stack.enter_context(open(d / LOCK, "a+"))
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                holder = f.read().strip() or "another process"
                logging.getLogger("gatelab").info("waiting for %s: it is training in %s", d, holder)
                fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            f.truncate()
            f.write(f"pid {os.getpid()} on {os.uname().nodename}\n")
            f.flush()
        yield


@contextlib.contextmanager
def lock_if_free(run_dir: Path):
    """Yields True while holding ``<run>/.lock`` if no process held it, else False (the run trains).
    The lock file's text (its last trainer) is left as it is."""
    path = Path(run_dir) / LOCK
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


def trainer_of(run_dir: Path) -> str:
    """Who trains a run whose results.json says ``running``: ``running (pid <n> on <host>)`` while a
    process holds its ``.lock``; ``stopped: pid <n> no longer holds its lock (killed?)`` when none does
    and the lock was taken on this host (SIGKILL, out of memory); ``running or stopped on <host>`` when
    it was taken on another host, whose locks a shared file system may not show here."""
    path = Path(run_dir) / LOCK
    try:
        with open(path) as f:
            holder = f.read().strip()
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return f"running ({holder or 'another process'})"
    except OSError:
        return "stopped: no process ever locked it"
    pid, _, host = holder.partition(" on ")
    if host and host != os.uname().nodename:
        return f"running or stopped on {host}"
    return f"stopped: {pid or 'its process'} no longer holds its lock (killed?)"


def git_commit(top: Optional[Path] = None) -> Optional[str]:
    """The short commit of the code that runs; in a copy without .git, the commit of its code stamp
    (:mod:`gatelab.core.code_stamp`), else None (also where git fails in a checkout: never a stale stamp there)."""
    from gatelab.core import code_stamp
    top = Path(top) if top else code_stamp.TOP  # the checkout that runs
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=top, capture_output=True, text=True,
                             timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out or (code_stamp.commit(top) if code_stamp.applies(top) else None)


def git_tree(top: Optional[Path] = None) -> dict:
    """Whether the checkout that runs has uncommitted changes to tracked files, a hash of that diff (the authors'
    gated-dln records the same) and the paths it touches (the first 20): a run from a dirty tree names which one.
    ``outputs/`` is what runs write, never what they read: a report not yet committed there leaves the tree clean
    (it marked 48 runs of paper 002's Figs 7-8 dirty, 2026-12-07). In a copy without .git, the same from its code
    stamp (:func:`gatelab.core.code_stamp.tree_state`); else, where git cannot answer, {}."""
    import hashlib

    from gatelab.core import code_stamp
    top = Path(top) if top else code_stamp.TOP  # the checkout that runs
    code = ["--", ".", ":(exclude)outputs"]
    try:
        diff = subprocess.run(["git", "diff", "HEAD", *code], cwd=top, capture_output=True, timeout=20)
        names = subprocess.run(["git", "diff", "HEAD", "--name-only", *code], cwd=top, capture_output=True, timeout=20)
        new = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "--", "src", "conf", "run.py"],
                             cwd=top, capture_output=True, timeout=20)  # a new module is a change too (issue #56)
    except (OSError, subprocess.SubprocessError):
        diff = None
    if diff is None or diff.returncode != 0 or new.returncode != 0 or names.returncode != 0:  # git cannot answer
        return code_stamp.tree_state(top) if code_stamp.applies(top) else {}
    added = [n for n in new.stdout.splitlines() if (top / n.decode()).is_file()]
    changed = diff.stdout + b"".join(b"new file " + n + b"\n" + (top / n.decode()).read_bytes() for n in added)
    paths = [n.decode() for n in names.stdout.splitlines() + added]
    return {"git_dirty": bool(changed), "git_diff_sha1": hashlib.sha1(changed).hexdigest()[:12] if changed else None,
            "git_changed": paths[:20] or None}


def other_code(commits, top: Optional[Path] = None) -> list[str]:
    """Those of ``commits`` whose ``src/`` differs from this checkout's HEAD, or that git does not know: results
    made by other code must not be pooled with this code's (kept nets of paper 002's Figs 1-4, carried runs)."""
    top = Path(top) if top else Path(__file__).parents[3]
    here, out = git_commit(), []
    for c in sorted({str(c) for c in commits if c} - {here}):
        same = subprocess.run(["git", "diff", "--quiet", c, "HEAD", "--", "src"], cwd=top, capture_output=True,
                              timeout=60).returncode == 0
        if not same:
            out.append(c)
    return out


def attempts(prior: Optional[dict], env: dict) -> list[dict]:
    """Every attempt that trained a run, oldest first: the prior results' (a resumed run keeps them) and this one,
    its start time, commit and whether its tree was dirty (what pre-registration reads, issue #54). A run resumed
    from results that recorded none is marked unknown, so that it never pre-registers."""
    old = list((prior or {}).get("attempts") or ([{"at": None, "commit": None, "dirty": None}] if prior and
                                                 prior.get("history") else []))
    import uuid
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return old + [{"at": now, "commit": env.get("git_commit"), "dirty": env.get("git_dirty"), "id": uuid.uuid4().hex[:12]}]


PACKAGES = ("hydra-core", "omegaconf", "numpy", "torchvision", "hydra-submitit-launcher", "submitit",
            "hydra-joblib-launcher")  # the versions every results.json records beside torch's


def versions() -> dict:
    """{package: version} of :data:`PACKAGES` installed here (absent ones left out)."""
    from importlib import metadata
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def check_device(name: str) -> None:
    """Raise :class:`gatelab.core.config.ConfigError` unless ``device=name`` can run here."""
    from gatelab.core.config import ConfigError
    if name in ("auto", "cpu", "meta"):
        return
    kind = name.split(":")[0]
    if kind == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device={name}: this machine has no CUDA device (device=auto uses one when present)")
    if kind == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"device={name}: MPS is not available here")
    if kind not in ("cuda", "mps"):
        raise ConfigError(f"device={name!r} is not one of auto, cpu, cuda, cuda:N, mps")


def resolve_device(name: str) -> torch.device:
    """``auto`` (a GPU if there is one, else cpu), or a torch device name checked to exist. ``auto``
    and ``cuda`` on a machine with several GPUs claim a free one (:func:`claim_gpu`), so parallel
    jobs (``make JOBS=N``, joblib) spread over the GPUs instead of all landing on GPU 0."""
    check_device(name)
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(name)
    if dev.type == "cuda" and dev.index is None:
        n = torch.cuda.device_count()
        dev = torch.device("cuda", claim_gpu(n) if n > 1 else 0)
    return dev


_CLAIMED: dict[int, object] = {}  # GPU index -> open lock file, held for the life of the process
GPU_LOCKS = "GATELAB_GPU_LOCKS"


def claim_gpu(n: int, lock_dir: Optional[str] = None) -> int:
    """The index of a GPU that no other gatelab process on this machine holds: an exclusive lock on
    ``<lock_dir>/gpu<i>.lock`` (``$GATELAB_GPU_LOCKS``, default ``/tmp/gatelab-gpu-locks-<uid>``),
    released when the process ends. With every GPU held, the least-numbered one is shared
    (with a warning). Respects ``CUDA_VISIBLE_DEVICES`` (``n`` counts the visible GPUs)."""
    if _CLAIMED:
        return next(iter(_CLAIMED))
    root = Path(lock_dir or os.environ.get(GPU_LOCKS) or f"/tmp/gatelab-gpu-locks-{os.getuid()}")
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        f = open(root / f"gpu{i}.lock", "w")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        _CLAIMED[i] = f
        return i
    logging.getLogger("gatelab").warning("all %d GPUs are held by other gatelab jobs; sharing GPU 0", n)
    return 0


def device_name(device: torch.device | str | None = None) -> str:
    """What a person calls the hardware: the GPU's name, or '<machine> CPU, <n> threads'."""
    device = resolve_device("auto") if device is None else torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"


def environment(device: torch.device) -> dict:
    """``env`` of results.json: versions, device, the kind of machine (gatelab.core.machine), its CPU kernels,
    threads, host and code commit."""
    return {"torch": torch.__version__, "python": platform.python_version(), "device": str(device),
            "device_name": device_name(device), "threads": torch.get_num_threads(), "host": platform.node(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "bf16_native": machine.bf16_native(device),
            "machine": machine.detect(device).as_dict(), "git_commit": git_commit(), **git_tree(),
            "versions": versions()}
