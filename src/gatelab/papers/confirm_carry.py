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

import shutil
from pathlib import Path

from gatelab.papers.confirm_targets import RUNS_ROOT

CARRIED = Path("outputs/reports/confirm/.carried")


def _roots(r) -> list[Path]:
    return sorted({Path(o.split("=", 1)[1]) for rs in r.runs for o in rs if o.startswith("out_root=")
                   and o.split("=", 1)[1].startswith(RUNS_ROOT + "/")})


def _final(path: Path):
    from gatelab.core.results import FINAL, read_results
    res = read_results(path)
    return res if res is not None and res["status"] in FINAL else None


def _sources(waves) -> set[Path]:
    """The checkpoint files that runs still to train copy (``regime.source=auto``: their ReLU twin's)."""
    from gatelab.core.checkpoints import CKPT_DIR
    from gatelab.nets import regimes
    return {Path(regimes.relu_source_dir(x.config)) / CKPT_DIR / f"{x.config.regime.source_ckpt}.pt"
            for w in waves for s in w for x in s.runs
            if x.steps and regimes.needs_source(x.config) and x.config.regime.source == "auto"}


def _copy(src: Path, dst: Path) -> bool:
    if dst.is_file() and dst.read_bytes() == src.read_bytes():
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return True


def pack(r, waves=None) -> dict[str, int]:
    """Carry ``r``'s final runs and the sources still needed; a carried source no run needs any more is dropped.
    Returns {"runs": carried, "new": copied now, "sources": checkpoints carried}."""
    from gatelab.core.results import RESULTS
    from gatelab.launch import recipes
    waves = recipes.plan_recipe(r, check=False) if waves is None else waves
    runs, new = 0, 0
    for root in _roots(r):
        for path in sorted(root.rglob(RESULTS)):
            if _final(path):
                runs += 1
                new += _copy(path, CARRIED / path.relative_to(RUNS_ROOT))
    wanted = {CARRIED / p.relative_to(RUNS_ROOT) for p in _sources(waves) if p.is_file()
              and _final(p.parent.parent / RESULTS)}
    for p in wanted:
        _copy(Path(RUNS_ROOT) / p.relative_to(CARRIED), p)
    for root in _roots(r):
        for p in (CARRIED / root.relative_to(RUNS_ROOT)).rglob("*.pt"):
            if p not in wanted:
                p.unlink()
    return {"runs": runs, "new": new, "sources": len(wanted)}


def unpack(r) -> int:
    """Put ``r``'s carried runs back where no final result of this machine's is; a run directory that holds an
    unfinished attempt of its own keeps it (it resumes here). Raises SystemExit, before anything trains, when a carried
    run was made by other code. Returns the runs put back."""
    from gatelab.core.results import RESULTS, other_code
    carried = [p for root in _roots(r) for p in sorted((CARRIED / root.relative_to(RUNS_ROOT)).rglob(RESULTS))]
    stale = other_code(t.get("commit") for p in carried for t in (_final(p) or {}).get("attempts") or [])
    if stale:
        raise SystemExit(f"{CARRIED}: runs carried there were made by code at {', '.join(stale)}, and src/ has "
                         f"changed since: resume from a worktree at that commit (git worktree add --detach DIR "
                         f"{stale[0]}), or move the carried runs away to train them again")
    back = 0
    for p in carried:
        dest = Path(RUNS_ROOT) / p.relative_to(CARRIED)
        if _final(dest) or dest.is_file() or (dest.parent.is_dir() and any(dest.parent.iterdir())):
            continue
        _copy(p, dest)
        back += 1
        for ck in p.parent.rglob("*.pt"):
            _copy(ck, dest.parent / ck.relative_to(p.parent))
    return back
