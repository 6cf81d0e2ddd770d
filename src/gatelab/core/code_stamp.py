"""The code a checkout without ``.git`` runs, for the runs' provenance (what pre-registration reads).

A copy of the working tree sent to another machine (the device tool's GPU machine: tracked files travel, ``.git``
does not) cannot ask git which commit it is or whether it was changed, so its runs would record no commit and never
count (:mod:`gatelab.papers.preregistration`). ``python -m gatelab.core.code_stamp write .stage/code.json``, here
(``scripts/device_stage.sh`` runs it), writes HEAD's short commit and the blob id of every tracked file but
``outputs/``'s; there, :func:`gatelab.core.results.git_commit` and :func:`~gatelab.core.results.git_tree` fall back
to :func:`tree_state`, which hashes the files on disk as git would: each file that differs, is missing, or is a new
``.py``/``.yaml`` under ``src/`` (or a new ``run.py``) marks the tree dirty, as ``git diff HEAD`` and git's untracked
files would. The report's checks (claims before runs, ancestry) are made where git is, from the recorded commit.
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
NEW_CODE = (".py", ".yaml")  # a new file of these kinds under src/ is a change (git_tree: new modules, issue #56)


def blob_id(path: Path) -> Optional[str]:
    """git's blob id of ``path`` (``git hash-object``; a symbolic link: of its target's path), None if absent."""
    try:
        data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    except OSError:
        return None
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write(out: Path, top: Path = TOP) -> dict:
    """The stamp of ``top``'s HEAD into ``out``: {"commit": short commit, "files": {path: blob id}}."""
    def git(*args: str) -> bytes:
        return subprocess.run(["git", *args], cwd=top, capture_output=True, check=True, timeout=60).stdout
    files = {}
    for entry in git("ls-tree", "-r", "-z", "HEAD").split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        if entry and meta.split()[1] == b"blob" and not name.startswith(b"outputs/"):
            files[name.decode()] = meta.split()[2].decode()
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
    changed = sorted(n for n, sha in stamp["files"].items() if blob_id(top / n) != sha)
    src = top / "src"
    new = sorted(str(p.relative_to(top)) for p in src.rglob("*") if p.suffix in NEW_CODE and p.is_file()
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
    else:
        state = tree_state()
        print(json.dumps({"commit": commit(), **state}) if state else f"no stamp at {TOP / STAMP}")


if __name__ == "__main__":
    main()
