"""A recipe target's finished runs carried in git (issue #55), so that a confirmation longer than one machine's life
(a CPU session here, a preemptible node) goes on where the last machine stopped.

:func:`pack` copies each final run's ``results.json`` (completed or diverged: a rerun would only repeat it) from
``outputs/confirm/<root>/`` into ``outputs/reports/confirm/.carried/<root>/``, which git tracks, with what a run still
to train reads from another: an FLNPF stage's ReLU source checkpoint (``regime.source_ckpt``), and an IMP round's
keep-mask, made from its parent's final weights (:func:`gatelab.analyses.pruning.carry_mask`, bit-packed). A recipe
whose reports read checkpoints (:data:`FACTS_FROM_REPORTS`: paper 004's) first renders its reports while recording
(:mod:`gatelab.papers.facts`), so each run's ``facts.json`` holds what they read, and carries it with the run's other
small files (:data:`RUN_FILES`). :func:`unpack` puts them back before the plan, which then skips those runs (a
completed run reads no source again, and a report counts a run whose ``ckpt/`` is gone). Runs made by other code
(``src/`` differs from HEAD's) stop the target before it trains, as paper 002's kept nets do.
``python -m gatelab confirm TARGET --carry`` packs; ``confirm TARGET`` unpacks first.
"""
from __future__ import annotations

from pathlib import Path

from gatelab.papers.confirm_targets import RUNS_ROOT

CARRIED = Path("outputs/reports/confirm/.carried")


def _roots(r) -> list[Path]:
    return sorted({Path(o.split("=", 1)[1]) for rs in r.runs for o in rs if o.startswith("out_root=")
                   and o.split("=", 1)[1].startswith(RUNS_ROOT + "/")})


FACTS_FROM_REPORTS = ("races",)  # recipes whose reports read checkpoints: their facts are recorded before a pack
RUN_FILES = ("facts.json", "loss_trace.csv")  # a final run's small files its reports read, carried with results.json


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


def record_facts(r) -> list[str]:
    """Render ``r``'s reports into a scratch folder while recording (:func:`gatelab.papers.facts.recording`), so each
    final run here keeps in its ``facts.json`` what they read of its checkpoints; the reports that could not render
    yet (no run final, say), each with why."""
    import contextlib
    import importlib
    import io
    import tempfile
    from gatelab.papers import facts
    failed = []
    with tempfile.TemporaryDirectory() as scratch, facts.recording():
        for i, argv in enumerate(r.reports):
            argv = [str(Path(scratch) / str(i)) if j and argv[j - 1] == "--out" else a.replace("{command}", "")
                    for j, a in enumerate(argv)]
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    importlib.import_module(argv[0]).main(argv[1:])
            except SystemExit as e:
                if e.code not in (0, None):
                    failed.append(f"{' '.join(argv[:2])}: {e.code}")
            except Exception as e:  # noqa: BLE001 (a report that fails records less; the pack goes on, and says so)
                failed.append(f"{' '.join(argv[:2])}: {type(e).__name__}: {e}")
    return failed


def pack(r, waves=None) -> dict[str, int]:
    """Carry ``r``'s final runs (with their :data:`RUN_FILES`), each source checkpoint while a run that copies it is
    final neither here nor in the carried runs, and each IMP round's keep-mask while the round is not final; a carried
    source or mask is dropped only once every run of ``r`` that reads it is final (so a pack on a machine that has not
    unpacked, or another target sharing the root, loses nothing). A run that became final while the reports were
    recording waits for the next pack (its facts are not recorded yet). Returns {"runs", "new", "sources"}: the
    final runs, those new to the carry, and the source checkpoints and keep-masks carried for runs still to train."""
    from gatelab.core.results import RESULTS
    from gatelab.launch import recipes
    waves = recipes.plan_recipe(r, check=False) if waves is None else waves
    final = {path: got for root in _roots(r) for path in root.rglob(RESULTS) if (got := _final(path))}
    if r.name in FACTS_FROM_REPORTS:
        for line in record_facts(r):
            print(f"{r.name}: facts: a report did not render (nothing recorded from it): {line}")
    runs, new = 0, 0
    for path, got in sorted(final.items()):  # each final run's results.json read once, before the recording
        runs += 1
        for name in RUN_FILES:
            if (path.parent / name).is_file():
                _put(CARRIED / path.parent.relative_to(RUNS_ROOT) / name, (path.parent / name).read_bytes())
        new += _put(CARRIED / path.relative_to(RUNS_ROOT), got[1])
    kept = _masks(r, waves)
    for src, users in _sources(waves).items():
        carried = CARRIED / src.relative_to(RUNS_ROOT)
        if all(_final(u / RESULTS) or _final(CARRIED / u.relative_to(RUNS_ROOT) / RESULTS) for u in users):
            carried.unlink(missing_ok=True)
            continue
        if src.is_file() and _final(src.parent.parent / RESULTS):
            _put(carried, src.read_bytes())
        kept += carried.is_file()
    return {"runs": runs, "new": new, "sources": kept}


def _masks(r, waves) -> int:
    """Carry the keep-mask of each IMP round of ``waves`` not final here nor carried whose parent is final here with
    its final weights (made here, once: :func:`~gatelab.analyses.pruning.carry_mask`); drop the carried mask of every
    round that is final (a prerequisite round falls out of the plan once done). Returns the masks carried."""
    from gatelab.analyses import pruning
    from gatelab.core.checkpoints import CKPT_DIR
    from gatelab.core.results import RESULTS
    from gatelab.core.runs import run_dir
    for x in (x for w in waves for s in w for x in s.runs if pruning.active(x.config)):
        carried = CARRIED / Path(x.dir).relative_to(RUNS_ROOT) / pruning.CARRIED_MASK
        parent = run_dir(pruning.parent(x.config))
        if not carried.is_file() and not _final(Path(x.dir) / RESULTS) and not _final(carried.parent / RESULTS) \
                and _final(parent / RESULTS) and (parent / CKPT_DIR / "last.pt").is_file():
            _put(carried, pruning.carry_mask(x.config).read_bytes())
    kept = 0
    for root in _roots(r):
        for m in sorted((CARRIED / root.relative_to(RUNS_ROOT)).rglob(pruning.CARRIED_MASK)):
            if _final(m.parent / RESULTS) or _final(Path(RUNS_ROOT) / m.parent.relative_to(CARRIED) / RESULTS):
                m.unlink()
            else:
                kept += 1
    return kept


def _carried(r) -> tuple[list[Path], list[str]]:
    """The results.json files carried for ``r``'s roots, and the commits among their makers whose ``src/`` is not
    this checkout's."""
    from gatelab.core.results import RESULTS, other_code
    carried = [p for root in _roots(r) for p in sorted((CARRIED / root.relative_to(RUNS_ROOT)).rglob(RESULTS))]
    return carried, other_code(t.get("commit") for p in carried for t in ((_final(p) or ({},))[0].get("attempts") or []))


def carried_here(r) -> tuple[set[Path], list[str]]:
    """For a dry run on a machine that has not unpacked: the run directories (under ``outputs/confirm``) of ``r``'s
    final runs carried in git and not final here, which ``confirm TARGET`` puts back before it trains; and the
    commits of other code that would stop it (:func:`unpack`)."""
    from gatelab.core.results import RESULTS
    carried, stale = _carried(r)
    dirs = {Path(RUNS_ROOT) / p.parent.relative_to(CARRIED) for p in carried if _final(p)}
    return {d for d in dirs if not _final(d / RESULTS)}, stale


def unpack(r) -> int:
    """Put ``r``'s carried runs back where no final result of this machine's is; a run directory that holds an
    unfinished attempt of its own keeps it (it resumes here). Its checkpoints go first and its results.json last,
    each atomically, so a kill never leaves a final run without the checkpoint it came with. Raises SystemExit, before
    anything trains, when a carried run was made by other code. Returns the runs put back."""
    from gatelab.core.results import RESULTS
    carried, stale = _carried(r)
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
        for f in p.parent.rglob("*"):
            if f.is_file() and f != p:
                _put(dest.parent / f.relative_to(p.parent), f.read_bytes())
        _put(dest, got[1])
        back += 1
    from gatelab.analyses.pruning import CARRIED_MASK
    for root in _roots(r):  # the keep-mask an IMP round still to train starts from
        for m in sorted((CARRIED / root.relative_to(RUNS_ROOT)).rglob(CARRIED_MASK)):
            dest = Path(RUNS_ROOT) / m.relative_to(CARRIED)
            if not (m.parent / RESULTS).is_file() and not (dest.parent / RESULTS).is_file():
                _put(dest, m.read_bytes())
    return back
