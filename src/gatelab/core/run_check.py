"""``python -m gatelab.core.run_check <out_root> [--repair]``: is every run directory what its
results.json says? What a cluster's preemptions, kills and older code left behind, per run:

- a malformed results.json (:func:`gatelab.core.results.load_results`: not counted by any reader);
- results.json against the disk: a final run's history (one entry per epoch), its best epoch against
  the history and against ``best.pt`` (a completed run whose best.pt holds another epoch is no
  result and no FLNPF source: only retraining mends it), its ``last.pt`` (an unreadable one: the final
  weights are lost, the results stand);
- a ``running`` run that no process trains (its trainer was killed: the lock is free), and the point
  an unfinished run resumes from (the training's own choice, :mod:`gatelab.core.checkpoints`);
- half-written temporaries of killed writers (``.<name>.<pid>.tmp``), and stray files: any that no
  gatelab writer makes (:data:`RUN_FILES`, :data:`CKPT_FILES`), named and left alone;
- a run whose directory's key is not the one its stored config has now (``rekey`` moves it);
- disk used, and what ``--repair`` frees: ``prev.pt`` / ``best_prev.pt`` of finished runs.

``--repair`` does only what loses no result, says what it did, and leaves alone every run another
process holds the lock of (it trains): it removes temporaries and a finished run's kept points, puts
``prev.pt`` in place of an unreadable ``last.pt`` (what the resume would use), records an orphaned
``running`` run as ``interrupted`` and moves a run to its current key where that place is free.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from gatelab.core import checkpoints
from gatelab.core.checkpoints import BEST, BEST_PREV, CKPT_DIR, KEPT, LAST, PREV
from gatelab.core.results import FINAL, LOCK, LOSS_TRACE, RESULTS, load_results, lock_if_free, trainer_of
from gatelab.core.runs import run_subdir

# What a run directory holds, by writer: results.json, .lock, loss_trace.csv (core.results; the training
# loop), ckpt/ (core.checkpoints), mask.pt (analyses.pruning.MASK_FILE: an IMP round's keep-mask),
# .hydra/ and run.log (Hydra's output directory, run.py's job), wandb/ (logger=wandb); besides them
# only temporaries of killed writers (checkpoints.temporaries).
RUN_FILES = frozenset({RESULTS, LOCK, LOSS_TRACE, CKPT_DIR, "mask.pt", ".hydra", "run.log", "wandb"})
_ROTATING = "|".join(re.escape(Path(n).stem) for n in (LAST, PREV, BEST, BEST_PREV))
CKPT_FILES = re.compile(rf"({_ROTATING}|epoch_\d+|step_\d+)\.pt")  # ckpt/: checkpoints' files (its module doc)


@dataclass
class Finding:
    """Something on disk that disagrees with results.json. ``fix``: what --repair does (None: it
    cannot, without losing a result); ``unsound``: the run is no result until mended."""
    what: str
    fix: Optional[Callable[[], str]] = None
    unsound: bool = False


@dataclass
class RunCheck:
    run_dir: Path
    status: str
    size: int = 0
    freeable: int = 0
    notes: list[str] = field(default_factory=list)  # facts, not problems (where an unfinished run resumes)
    findings: list[Finding] = field(default_factory=list)
    busy: bool = False  # a process holds its lock: it trains, nothing is touched


def _size(paths) -> int:
    return sum(p.stat().st_size for p in paths if p.is_file())


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.1f} MiB"


def run_dirs(out_root: Path) -> list[Path]:
    """Every run directory below ``<out_root>/runs``: those holding a results.json or a checkpoint."""
    found = {p.parent for p in Path(out_root, "runs").rglob(RESULTS)}
    found |= {p.parent.parent for p in Path(out_root, "runs").rglob(f"{CKPT_DIR}/{LAST}")}
    found |= {p.parent.parent for p in Path(out_root, "runs").rglob(f"{CKPT_DIR}/{PREV}")}
    return sorted(found)


def _final(check: RunCheck, res: dict) -> None:
    """A completed or diverged run: its history, best epoch, best.pt and last.pt; its kept points."""
    d, hist = check.run_dir, res.get("history") or []
    epochs = int(res["config"]["epochs"])
    want = epochs if res["status"] == "completed" else res.get("diverged_epoch")
    if [h.get("epoch") for h in hist] != list(range(1, (want or 0) + 1)):
        check.findings.append(Finding(f"history holds epochs {[h.get('epoch') for h in hist]}, a {res['status']} run "
                                      f"of {epochs} epochs should hold 1..{want}", unsound=True))
    if res["status"] == "completed":
        if checkpoints.best_of(hist) != (res.get("best_epoch"), res.get("best_test_acc")):
            check.findings.append(Finding(f"best_epoch {res.get('best_epoch')} is not the history's best "
                                          f"{checkpoints.best_of(hist)[0]}", unsound=True))
        # a run whose ckpt/ is gone (removed to save disk; carried in git without it) still counts, as in the report
        problem = (d / CKPT_DIR).is_dir() and checkpoints.best_mismatch(d, res)
        if problem:
            check.findings.append(Finding(f"{problem}; force=true retrains it", unsound=True))
        last = checkpoints.load_good(d / CKPT_DIR / LAST, peek=True, quiet=True)
        if last is None and (d / CKPT_DIR / LAST).is_file():
            check.findings.append(Finding(f"{LAST} is unreadable (truncated?): the final weights are lost (the "
                                          "results stand; force=true retrains it)"))
        elif last is not None and checkpoints.position(last) != (len(hist), 0):
            check.findings.append(Finding(f"{LAST} is at {checkpoints.position(last)}, not the end of the history"))
    kept = [d / CKPT_DIR / name for name in KEPT.values() if (d / CKPT_DIR / name).is_file()]
    if kept:
        check.freeable += _size(kept)
        check.findings.append(Finding(f"{' and '.join(p.name for p in kept)} of a finished run ({_gib(_size(kept))})",
                                      lambda: f"removed {' and '.join(p.name for p in kept)}, freed "
                                              f"{_gib(checkpoints.drop_kept(d / CKPT_DIR))}"))


def _unfinished(check: RunCheck, res: Optional[dict], who: str) -> None:
    """A run that resumes: where from, an unreadable last.pt, a ``running`` status nobody trains
    (``who``: :func:`trainer_of`, asked before the check took the lock)."""
    d = check.run_dir
    ckpt = d / CKPT_DIR
    if (ckpt / LAST).is_file() and checkpoints.load_good(ckpt / LAST, peek=True, quiet=True) is None:
        prev = checkpoints.load_good(ckpt / PREV, peek=True, quiet=True)
        def promote() -> str:
            os.replace(ckpt / PREV, ckpt / LAST)
            return f"{PREV} put in place of the unreadable {LAST}"
        check.findings.append(Finding(
            f"{LAST} is unreadable" + ("" if prev is None else f"; {PREV} is at {checkpoints.position(prev)}"),
            None if prev is None else promote))
    point = checkpoints.group_resume_point([ckpt], checkpoints.group_of([d]), peek=True)[0]
    done = len((res or {}).get("history") or [])
    if point is None:
        check.notes.append(f"restarts from the start{f' ({done} epochs of history have no checkpoint)' if done else ''}")
    else:
        check.notes.append(f"resumes after epoch {point.at[0]}" + (f", step {point.at[1]}" if point.at[1] else ""))
    if res is not None and res.get("status") == "running":
        if who.startswith("stopped"):
            check.findings.append(Finding(f"results.json says running, but {who.split(': ', 1)[1]}",
                                          lambda: _mark_interrupted(d, res)))
        else:
            check.notes.append(who)


def _mark_interrupted(d: Path, res: dict) -> str:
    checkpoints.atomic_write_json(d / RESULTS, {**res, "status": "interrupted",
                                               "note": "recorded interrupted by run_check: its process had died"})
    return "status running -> interrupted (the same command resumes it)"


def _key(check: RunCheck, res: dict, out_root: Path) -> None:
    target = Path(out_root) / run_subdir({**res["config"], "seeds": None})
    if target.resolve() == check.run_dir.resolve():
        return

    def move() -> str:
        if target.exists():
            return f"not moved: {target} exists"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(check.run_dir), str(target))
        return f"moved to {target}"
    check.findings.append(Finding(f"its stored config's key is {target.name.rsplit('-', 1)[-1]}, not this "
                                  f"directory's (the planner looks for it at {target})", move))


def _strays(d: Path, temps: list[Path]) -> list[str]:
    """Entries of a run directory and its ckpt/ that no gatelab writer makes (:data:`RUN_FILES`,
    :data:`CKPT_FILES`; ``temps``: killed writers' temporaries, found apart)."""
    out = [p for p in d.iterdir() if p.name not in RUN_FILES and p not in temps]
    if (d / CKPT_DIR).is_dir():
        out += [p for p in (d / CKPT_DIR).iterdir() if not CKPT_FILES.fullmatch(p.name) and p not in temps]
    return sorted(str(p.relative_to(d)) + ("/" if p.is_dir() else "") for p in out)


def check_run(d: Path, out_root: Path) -> RunCheck:
    """What is wrong with one run directory (nothing is changed)."""
    res, why = load_results(d / RESULTS)
    status = res["status"] if res is not None else f"malformed {RESULTS}" if why else f"no {RESULTS}"
    check = RunCheck(d, status, size=_size(p for p in d.rglob("*")))
    who = trainer_of(d)
    with lock_if_free(d) as free:
        if not free:
            check.busy = True
            check.notes.append(who)
            return check
        if why:
            check.findings.append(Finding(f"{RESULTS} is malformed: {why}; not counted (its command rewrites it)",
                                          unsound=True))
        temps = checkpoints.temporaries(d) + checkpoints.temporaries(d / CKPT_DIR)
        if temps:
            check.freeable += _size(temps)
            def clear() -> str:
                checkpoints.clear_temporaries(d)
                return f"removed {len(temps)} temporary file(s)"
            check.findings.append(Finding(f"{len(temps)} temporary file(s) of killed writers ({_gib(_size(temps))})",
                                          clear))
        stray = _strays(d, temps)
        if stray:
            one = len(stray) == 1
            check.findings.append(Finding(f"stray {'file' if one else 'files'} {', '.join(stray)} (no gatelab "
                                          f"writer makes {'it' if one else 'them'}; left alone)"))
        if res is not None and res["status"] in FINAL:
            _final(check, res)
        else:
            _unfinished(check, res, who)
        if res is not None:
            _key(check, res, out_root)
    return check


def repair(check: RunCheck) -> list[str]:
    """Apply the fixes of one run's findings, under its lock; what was done, one line each."""
    done = []
    with lock_if_free(check.run_dir) as free:
        if not free:
            return [f"{check.run_dir}: left alone, {trainer_of(check.run_dir)}"]
        for f in check.findings:
            if f.fix is not None:
                done.append(f"{check.run_dir}: {f.fix()}")
    return done


def line(check: RunCheck, out_root: Path) -> str:
    try:
        name = check.run_dir.relative_to(out_root)
    except ValueError:
        name = check.run_dir
    words = [f.what + (" [repairable]" if f.fix else " [UNSOUND]" if f.unsound else "") for f in check.findings]
    return f"{name}  {check.status}  {_gib(check.size)}  " + ("; ".join(check.notes + words) or "ok")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gatelab.core.run_check",
                                 description="Check (and repair) every run directory below <out_root>/runs.")
    ap.add_argument("out_root", type=Path)
    ap.add_argument("--repair", action="store_true", help="fix what loses no result (see the module's doc)")
    args = ap.parse_args(argv)
    if not (args.out_root / "runs").is_dir():
        print(f"run_check: no run directories: {args.out_root / 'runs'} does not exist", file=sys.stderr)
        return 2
    checks = [check_run(d, args.out_root) for d in run_dirs(args.out_root)]
    for c in checks:
        print(line(c, args.out_root))
    flagged = [c for c in checks if c.findings]
    unsound = [c for c in checks if any(f.unsound for f in c.findings)]
    print(f"{len(checks)} runs: {len(checks) - len(flagged)} ok, {len(flagged)} with findings "
          f"({len(unsound)} unsound: not counted as results or FLNPF sources), {sum(c.busy for c in checks)} "
          f"training now; disk {_gib(sum(c.size for c in checks))}, --repair frees "
          f"{_gib(sum(c.freeable for c in checks))}")
    if args.repair:
        for c in flagged:
            for done in repair(c):
                print(done)
        left = [c for c in (check_run(c.run_dir, args.out_root) for c in flagged if c.run_dir.is_dir()) if c.findings]
        print(f"after repair: {len(left)} runs with findings")
        return 1 if left else 0
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
