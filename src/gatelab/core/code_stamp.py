"""The code a checkout without ``.git`` runs, for the runs' provenance (what pre-registration reads).

A copy of the working tree sent to another machine (the device tool's GPU machine: tracked files travel, ``.git``
does not) cannot ask git which commit it is or whether it was changed, so its runs would record no commit and never
count (:mod:`gatelab.papers.preregistration`). ``python -m gatelab.core.code_stamp write .stage/code.json``, here
(``scripts/device_stage.sh`` runs it), writes HEAD's short commit and the blob id of every tracked file but
``outputs/``'s, with its mode; there (and only where the checkout has no ``.git``: a checkout whose git fails never
reads a stamp), :func:`gatelab.core.results.git_commit` and :func:`~gatelab.core.results.git_tree` fall back to
:func:`tree_state`, which hashes the files on disk as git would: each file that differs in bytes or executable bit,
is missing, or is new under ``src/`` (but ``__pycache__`` and ``*.egg-info``), or a new ``run.py``, marks the tree
dirty, as ``git diff HEAD`` and git's untracked files would. The report's checks (claims before runs, ancestry) are
made where git is, from the recorded commit.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Optional

STAMP = Path(".stage") / "code.json"  # relative to the checkout's root
TOP = Path(__file__).resolve().parents[3]  # the checkout that runs (src/gatelab/core/code_stamp.py)
WRITTEN_BY_RUNNING = ("__pycache__", ".egg-info")  # folders Python and pip write below src/: never a change


def blob_id(path: Path) -> Optional[str]:
    """git's blob id of ``path`` (``git hash-object``; a symbolic link: of its target's path), None if absent."""
    try:
        data = os.fsencode(os.readlink(path)) if path.is_symlink() else path.read_bytes()
    except OSError:
        return None
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def mode(path: Path) -> str:
    """git's mode of ``path``: 120000 a symbolic link, 100755 an executable file, else 100644."""
    if path.is_symlink():
        return "120000"
    return "100755" if path.stat().st_mode & 0o100 else "100644"


def applies(top: Path = TOP) -> bool:
    """Whether ``top`` is a copy without git (no ``.git`` file or folder): only there is a stamp read."""
    return not os.path.lexists(Path(top) / ".git")


def write(out: Path, top: Path = TOP) -> dict:
    """The stamp of ``top``'s HEAD into ``out``: {"commit": short commit, "files": {path: [blob id, mode]}}."""
    def git(*args: str) -> bytes:
        return subprocess.run(["git", *args], cwd=top, capture_output=True, check=True, timeout=60).stdout
    files = {}
    for entry in git("ls-tree", "-r", "-z", "HEAD").split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        if entry and meta.split()[1] == b"blob" and not name.startswith(b"outputs/"):
            files[name.decode()] = [meta.split()[2].decode(), meta.split()[0].decode()]
    stamp = {"commit": git("rev-parse", "--short", "HEAD").decode().strip(), "files": files}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(stamp, indent=0, sort_keys=True))
    tmp.replace(out)
    return stamp


def read(top: Path = TOP) -> Optional[dict]:
    try:
        stamp = json.loads((Path(top) / STAMP).read_text())
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) and stamp.get("commit") and isinstance(stamp.get("files"), dict) else None


def tree_state(top: Path = TOP) -> dict:
    """What :func:`gatelab.core.results.git_tree` gives, from the stamp: ``git_dirty``, a hash of what changed
    (``git_diff_sha1``, over the changed paths and their bytes, not git's diff text), the changed paths (the first
    20), and ``code_stamp``: True. {} without a stamp."""
    top = Path(top)
    stamp = read(top)
    if stamp is None:
        return {}
    changed = sorted(n for n, (sha, m) in stamp["files"].items() if blob_id(top / n) != sha or mode(top / n) != m)
    src = top / "src"
    new = sorted(str(p.relative_to(top)) for p in src.rglob("*") if (p.is_file() or p.is_symlink())
                 and not any(part.endswith(WRITTEN_BY_RUNNING) for part in p.relative_to(top).parts)
                 and str(p.relative_to(top)) not in stamp["files"]) if src.is_dir() else []
    if (top / "run.py").is_file() and "run.py" not in stamp["files"]:
        new.append("run.py")
    paths = changed + new
    digest = hashlib.sha1()
    for n in paths:
        p = top / n
        digest.update(n.encode() + b"\0" + (p.read_bytes() if p.is_file() else b"(missing)") + b"\0")
    return {"git_dirty": bool(paths), "git_diff_sha1": digest.hexdigest()[:12] if paths else None,
            "git_changed": paths[:20] or None, "code_stamp": True}


def commit(top: Path = TOP) -> Optional[str]:
    """The stamped commit (None without a stamp): the commit whose files :func:`tree_state` compares with."""
    stamp = read(top)
    return stamp["commit"] if stamp else None


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m gatelab.core.code_stamp", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="stamp HEAD's files (run where git is)")
    w.add_argument("out", type=Path, nargs="?", default=TOP / STAMP)
    sub.add_parser("check", help="this tree against its stamp (run where git is not)")
    args = ap.parse_args(argv)
    if args.command == "write":
        stamp = write(args.out)
        print(f"{args.out}: commit {stamp['commit']}, {len(stamp['files'])} files")
    else:  # exit 1 where runs started now could not pre-register: no stamp, or files that are not the commit's
        state = tree_state()
        print(json.dumps({"commit": commit(), **state}) if state else f"no stamp at {TOP / STAMP}")
        raise SystemExit(0 if state and not state["git_dirty"] else 1)


if __name__ == "__main__":
    main()
