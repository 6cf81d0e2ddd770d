"""A recipe target's finished runs carried in git (issue #55), so that a confirmation longer than one machine's life
(a CPU session here, a preemptible node) goes on where the last machine stopped.

:func:`pack` copies each final run's ``results.json`` (completed or diverged: a rerun would only repeat it) from
``outputs/confirm/<root>/`` into ``outputs/reports/confirm/.carried/<root>/``, which git tracks, with the one checkpoint
that a run still to train reads from it (an FLNPF stage's ReLU source, ``regime.source_ckpt``). :func:`unpack` puts
them back before the plan, which then skips those runs (a completed run reads no source again, and a report counts a
run whose ``ckpt/`` is gone). Runs made by other code (``src/`` differs from HEAD's) stop the target before it trains,
as paper 002's kept nets do. ``python -m gatelab confirm TARGET --carry`` packs; ``confirm TARGET`` unpacks first.
"""
from __future__ import annotations

from pathlib import Path

from gatelab.papers.confirm_targets import RUNS_ROOT

CARRIED = Path("outputs/reports/confirm/.carried")


def _roots(r) -> list[Path]:
    return sorted({Path(o.split("=", 1)[1]) for rs in r.runs for o in rs if o.startswith("out_root=")
                   and o.split("=", 1)[1].startswith(RUNS_ROOT + "/")})


NOT_CARRIED = {"races": "its figures read every run's step checkpoints (about 100 MB a run) and its IMP rounds their "
                        "parent's last.pt and mask: it runs within one machine's life"}


def refused(r, waves) -> str:
    """Why ``r``'s runs cannot be carried ("" when they can): a run that reads more of another than its
    ``regime.source_ckpt`` (an IMP round), or a recipe whose reports read checkpoints (:data:`NOT_CARRIED`)."""
    if r.name in NOT_CARRIED:
        return NOT_CARRIED[r.name]
    if any((x.config.get("imp") or {}).get("sparsity") is not None for w in waves for s in w for x in s.runs):
        return "an IMP round reads its parent's last.pt and mask, which are not carried"
    return ""


def _final(path: Path):
    """(results, the bytes read) of a final run's results.json, else None: what is carried is what was judged (read
    through :func:`~gatelab.core.results.load_results`; a file rewritten in between waits for the next pack)."""
    from gatelab.core.results import FINAL, load_results
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return None
    res, _ = load_results(path)
    return (res, raw) if res is not None and res["status"] in FINAL and Path(path).read_bytes() == raw else None


def _sources(waves) -> dict[Path, list[Path]]:
    """{checkpoint file an FLNPF run copies (``regime.source=auto``: its ReLU twin's): the runs that copy it}."""
    from gatelab.core.checkpoints import CKPT_DIR
    from gatelab.nets import regimes
    out: dict[Path, list[Path]] = {}
    for w in waves:
        for s in w:
            for x in s.runs:
                if regimes.needs_source(x.config) and x.config.regime.source == "auto":
                    src = Path(regimes.relu_source_dir(x.config)) / CKPT_DIR / f"{x.config.regime.source_ckpt}.pt"
                    out.setdefault(src, []).append(Path(x.dir))
    return out


def _put(dst: Path, data: bytes) -> bool:
    """``data`` into ``dst`` atomically (a kill leaves the old file or the new, never part of one)."""
    from gatelab.core.checkpoints import atomic_write_bytes
    if dst.is_file() and dst.read_bytes() == data:
        return False
    atomic_write_bytes(dst, lambda tmp: Path(tmp).write_bytes(data))
    return True


def pack(r, waves=None) -> dict[str, int]:
    """Carry ``r``'s final runs, and each source checkpoint while a run that copies it is final neither here nor in
    the carried runs; a carried source is dropped only once every run of ``r`` that copies it is (so a pack on a
    machine that has not unpacked, or another target sharing the root, loses nothing). Raises SystemExit for a
    recipe whose runs cannot be carried (:func:`refused`). Returns {"runs", "new", "sources"}."""
    from gatelab.core.results import RESULTS
    from gatelab.launch import recipes
    waves = recipes.plan_recipe(r, check=False) if waves is None else waves
    if why := refused(r, waves):
        raise SystemExit(f"{r.name}: not carried: {why}")
    runs, new = 0, 0
    for root in _roots(r):
        for path in sorted(root.rglob(RESULTS)):
            if got := _final(path):
                runs += 1
                new += _put(CARRIED / path.relative_to(RUNS_ROOT), got[1])
    kept = 0
    for src, users in _sources(waves).items():
        carried = CARRIED / src.relative_to(RUNS_ROOT)
        if all(_final(u / RESULTS) or _final(CARRIED / u.relative_to(RUNS_ROOT) / RESULTS) for u in users):
            carried.unlink(missing_ok=True)
            continue
        if src.is_file() and _final(src.parent.parent / RESULTS):
            _put(carried, src.read_bytes())
        kept += carried.is_file()
    return {"runs": runs, "new": new, "sources": kept}


def unpack(r) -> int:
    """Put ``r``'s carried runs back where no final result of this machine's is; a run directory that holds an
    unfinished attempt of its own keeps it (it resumes here). Its checkpoints go first and its results.json last,
    each atomically, so a kill never leaves a final run without the checkpoint it came with. Raises SystemExit, before
    anything trains, when a carried run was made by other code. Returns the runs put back."""
    from gatelab.core.results import RESULTS, other_code
    carried = [p for root in _roots(r) for p in sorted((CARRIED / root.relative_to(RUNS_ROOT)).rglob(RESULTS))]
    stale = other_code(t.get("commit") for p in carried for t in ((_final(p) or ({},))[0].get("attempts") or []))
    if stale:
        raise SystemExit(f"{CARRIED}: runs carried there were made by code at {', '.join(stale)}, and src/ has "
                         f"changed since: resume from a worktree at that commit (git worktree add --detach DIR "
                         f"{stale[0]}), or move the carried runs away to train them again")
    back = 0
    for p in carried:
        dest = Path(RUNS_ROOT) / p.relative_to(CARRIED)
        got = _final(p)
        if not got or dest.is_file() or (dest.parent.is_dir() and any(
                q.name != "ckpt" for q in dest.parent.iterdir())):
            continue
        for ck in p.parent.rglob("*.pt"):
            _put(dest.parent / ck.relative_to(p.parent), ck.read_bytes())
        _put(dest, got[1])
        back += 1
    return back
