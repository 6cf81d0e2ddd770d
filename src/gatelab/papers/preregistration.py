"""Pre-registration read from the runs themselves (issue #54), checked with git.

A claim's declaration is the commit since which its entry in its ``claims.yaml`` reads as it does now (walking the
file's history back from HEAD while the entry stays the same). An item counts only when its report commits, beside
its results, the record of the runs behind them (``runs.csv``, written by ``python -m gatelab confirm``:
:func:`write_runs`), and every one of those runs

- was started and resumed only from commits that descend from the claims' latest declaration (``git merge-base
  --is-ancestor``), each attempt from a clean tree (no change to tracked files, no new file under ``src/`` or
  ``conf/``), and first started after that declaration's commit time;
- trained a seed of the claims' held-out block (``confirm: {from, seeds}``, seeds no run used before the claim:
  :data:`HELD_OUT` and up) and not a seed that a run of the same record started before the claim used;

(the runs of a record that stand behind the item's results file: its ``for`` column, where several commands render
into one report, names the files each run made; :func:`standing_for`)

and the results file and ``runs.csv`` are committed as they stand, in a commit after the claims' (a claim
committed together with its results is not before them). Anything else is **rule after results**: shown, not
counted, with the reason; re-rendering or re-committing a report changes nothing, since the runs keep their dates,
commits and seeds.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

import pandas as pd
import yaml

RUNS = "runs.csv"  # the record of a report's runs, beside its results
HELD_OUT = 100  # confirmation seeds start here: every exploratory run used seeds below (tests/test_confirm.py)
COLUMNS = ["run", "seed", "status", "started_at", "commits", "dirty", "for"]
# "for": the report's files a run stands behind (';'-joined paths in the record's folder), where several commands
# render into one report (paper 002's Figs 1-4, 7-8 and 10); empty: every file of the report


def standing_for(runs: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows of a record that stand behind the report file ``name`` (a path relative to the record's folder):
    those whose ``for`` names it, and those that name nothing (a record without the column names nothing)."""
    if "for" not in runs:
        return runs
    return runs[[(not n.strip()) or name in n.split(";") for n in _names(runs)]]


def _names(runs: pd.DataFrame) -> pd.Series:
    """A record's ``for`` column as text ("" where a row names nothing, or the record has no such column)."""
    if "for" not in runs:
        return pd.Series([""] * len(runs), index=runs.index, dtype=str)
    return runs["for"].astype(object).fillna("").astype(str)  # an all-empty column reads as float64


def _git(repo: Path, *args: str) -> Optional[str]:
    try:
        p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def repo_of(path: Path) -> Optional[Path]:
    top = _git(Path(path).resolve().parent, "rev-parse", "--show-toplevel")
    return Path(top.strip()) if top else None


@lru_cache(maxsize=256)
def _claims_of(text: str) -> dict:
    """{id: entry} of one version of a claims file, parsed once ({} where it does not parse): a dry run asks for
    each claim of each version of the file (the routing target's took 48 s of YAML before this)."""
    try:
        entries = yaml.safe_load(text) or []
    except yaml.YAMLError:
        return {}
    out: dict = {}
    for d in entries:
        if isinstance(d, dict) and "id" in d:
            out.setdefault(d["id"], json.dumps(d, sort_keys=True, default=str))  # the first of an id, as before
    return out


def _entry(text: str, claim_id: str) -> Optional[str]:
    """The claim ``claim_id`` of one version of a claims file, as canonical JSON (equal entries, equal text)."""
    return _claims_of(text).get(claim_id)


@lru_cache(maxsize=None)
def _history(repo: Path, rel: str) -> tuple:
    """(commit, ISO date, file text) of each commit that touched ``rel``, newest first."""
    log = _git(repo, "log", "--format=%H %cI", "--", rel) or ""
    out = []
    for line in log.splitlines():
        commit, date = line.split()
        out.append((commit, date, _git(repo, "show", f"{commit}:{rel}") or ""))
    return tuple(out)


def declared(path: Path, claim_id: str) -> Optional[tuple[str, str]]:
    """(commit, date) since which the claim ``claim_id`` of ``path`` reads as it does in the working tree; None
    when that entry is not committed as it stands."""
    path = Path(path).resolve()
    repo = repo_of(path)
    if repo is None:
        return None
    current = _entry(path.read_text(), claim_id)
    found = None
    for commit, date, text in _history(repo, str(path.relative_to(repo))):
        if _entry(text, claim_id) != current:
            break
        found = (commit, date)
    return found


def committed(path: Path) -> Optional[tuple[str, str]]:
    """(commit, date) of the last commit that changed ``path``; None when it is untracked or differs from HEAD."""
    path = Path(path).resolve()
    repo = repo_of(path)
    if repo is None or not path.exists():
        return None
    rel = str(path.relative_to(repo))
    if _git(repo, "ls-files", "--error-unmatch", "--", rel) is None or \
            _git(repo, "diff", "--quiet", "HEAD", "--", rel) is None:
        return None
    log = (_git(repo, "log", "-1", "--format=%H %cI", "--", rel) or "").split()
    return (log[0], log[1]) if log else None


def uncommitted_records(reports: Path) -> list[Path]:
    """The run records (``runs.csv``) under ``reports`` that are untracked or differ from HEAD: :func:`check` reads
    only committed ones, so the items of their reports read "rule after results" until they are committed."""
    return [p for p in sorted(Path(reports).rglob(RUNS)) if committed(p) is None and repo_of(p) is not None]


def _ancestor(repo: Path, older: str, newer: str) -> bool:
    return _git(repo, "merge-base", "--is-ancestor", older, newer) is not None


def _when(text) -> Optional[datetime]:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def runs_record(results: Path, root: Optional[Path] = None) -> Optional[Path]:
    """The ``runs.csv`` beside ``results``, or in a folder above it up to ``root``."""
    folder = Path(results).resolve().parent
    stop = Path(root).resolve() if root else folder
    while True:
        if (folder / RUNS).is_file():
            return folder / RUNS
        if folder == stop or folder.parent == folder:
            return None
        folder = folder.parent


def block(claims_file: Path, claim_ids: Iterable[str]) -> set[int]:
    """The held-out seeds the claims declare (``confirm: {from, seeds}``), together."""
    out: set[int] = set()
    for d in yaml.safe_load(Path(claims_file).read_text()) or []:
        c = d.get("confirm") if isinstance(d, dict) and d.get("id") in set(claim_ids) else None
        if c:
            out |= set(range(int(c["from"]), int(c["from"]) + int(c["seeds"])))
    return out


def earlier(record: Path, since: Optional[datetime]) -> pd.DataFrame:
    """The runs that any committed version of ``record`` lists as started before ``since`` (a rerun on the same
    settings and seed, recorded later, does not make them unseen)."""
    import io
    repo = repo_of(record)
    frames = [pd.read_csv(io.StringIO(text), dtype={"commits": str})
              for _, _, text in _history(repo, str(Path(record).resolve().relative_to(repo))) if text.strip()] \
        if repo else []
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    return df[[(_when(t) is None or since is None or _when(t) < since) for t in df.started_at]]


def run_faults(runs: pd.DataFrame, repo: Path, claim: tuple[str, str], seeds: set[int],
               before: Optional[pd.DataFrame] = None) -> list[str]:
    """Why the runs of a ``runs.csv`` do not pre-register against the claim declared at ``claim``; [] when they do.
    ``before``: runs of earlier records started before the claim (:func:`earlier`)."""
    out, since = [], _when(claim[1])
    before = pd.DataFrame(columns=COLUMNS) if before is None else before
    if runs.empty:
        return ["no runs recorded"]
    for r in runs.itertuples():
        commits = [c for c in str(r.commits).split(";") if c and c != "nan"]
        started = _when(r.started_at)
        if not commits:
            out.append(f"{r.run}: its commit is not recorded")
        elif not all(_ancestor(repo, claim[0], c) for c in commits):
            out.append(f"{r.run}: ran at {', '.join(c[:7] for c in commits)}, not after the claims' {claim[0][:7]}")
        if str(r.dirty).lower() not in ("false", "0"):
            out.append(f"{r.run}: ran from a dirty tree")
        if started is None or since is None or started < since:
            out.append(f"{r.run}: started {r.started_at}, before the claims of {claim[1]}")
        if int(r.seed) not in seeds:
            out.append(f"{r.run}: seed {r.seed} is not in the held-out block the claims declare "
                       f"({min(seeds)}-{max(seeds)})" if seeds else f"{r.run}: the claims declare no held-out seeds")
    for run, seed in sorted(set(zip(before.run, before.seed.astype(int))) & set(zip(runs.run, runs.seed.astype(int)))):
        out.append(f"{run}: seed {seed} of these settings was trained before the claims (an earlier record)")
    return list(dict.fromkeys(out))


@dataclass
class Registration:
    claim: Optional[tuple[str, str]]  # (commit, date) of the claims' latest declaration; None: not committed
    results: Optional[tuple[str, str]]  # (commit, date) of the results; None: not committed as they stand
    after: bool  # rule after results
    older: str = ""  # why not: the first reasons

    def text(self) -> str:
        c = f"claims of {self.claim[1][:10]} ({self.claim[0][:7]})" if self.claim else "claims not committed"
        r = f"results of {self.results[1][:10]} ({self.results[0][:7]})" if self.results else "results not committed"
        return f"{c}, {r}" + (f" ({self.older})" if self.older else "") + ("; rule after results" if self.after else
                                                                           "; pre-registered by its runs")


def check(claims_file: Path, claim_ids: list[str], results: Path, older: str = "",
          root: Optional[Path] = None) -> Registration:
    """The item's registration, read from the runs behind ``results`` (its ``runs.csv``; see the module).
    ``older``: the row reads numbers kept from earlier renders, which no run record dates."""
    dates = [declared(claims_file, i) for i in claim_ids]
    res = committed(results)
    if not dates or any(d is None for d in dates):
        return Registration(None, res, True, "claims not committed as they stand")
    repo = repo_of(Path(claims_file))
    latest = max(dates, key=lambda d: d[1])
    if older:
        return Registration(latest, res, True, older)
    if res is None:
        return Registration(latest, None, True, "results not committed as they stand")
    if not all(c != res[0] and _ancestor(repo, c, res[0]) for c, _ in dates):
        return Registration(latest, res, True, "results committed before or with the claims")
    record = runs_record(results, root)
    if record is None or committed(record) is None:
        return Registration(latest, res, True, f"no committed {RUNS} dates its runs")
    mine = standing_for(pd.read_csv(record, dtype={"commits": str}),
                        str(Path(results).resolve().relative_to(record.resolve().parent)))
    faults = run_faults(mine, repo, latest, block(claims_file, claim_ids), earlier(record, _when(latest[1])))
    if faults:
        more = f"; and {len(faults) - 2} more" if len(faults) > 2 else ""
        return Registration(latest, res, True, "; ".join(faults[:2]) + more)
    return Registration(latest, res, False)


def write_runs(run_roots: Iterable[Path], out: Path) -> Path:
    """``<out>/runs.csv``: every run below ``run_roots`` (each results.json's seed, status, first start and every
    attempt's commit and tree state, :func:`gatelab.core.results.attempts`), the record :func:`check` reads."""
    from gatelab.core.results import RESULTS, read_results
    rows = []
    for root in run_roots:
        for path in sorted(Path(root).rglob(RESULTS)):
            res = read_results(path)
            if res is None:
                continue
            tries = res.get("attempts") or []
            rows.append({"run": str(path.parent.relative_to(Path(root).parent)), "seed": res.get("seed"),
                         "status": res.get("status"),
                         "started_at": tries[0].get("at") if tries else None,
                         "commits": ";".join(str(t.get("commit")) for t in tries),
                         "dirty": any(t.get("dirty") is not False for t in tries) if tries else True})
    Path(out).mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=COLUMNS).to_csv(Path(out) / RUNS, index=False)
    return Path(out) / RUNS


def parts_row(run: str, seed: int, made: list[dict]) -> dict:
    """The row of a figure whose random nets were kept one by one (paper 002's Figs 1-4: ``parts_made``): its
    first net's time, every commit that made one, and dirty where a net was made from a dirty tree or says nothing."""
    made = sorted(made, key=lambda m: m.get("at") or "")
    return {"run": run, "seed": seed, "status": "completed", "started_at": made[0].get("at") if made else None,
            "commits": ";".join(dict.fromkeys(str(m.get("commit")) for m in made)),
            "dirty": not made or any(m.get("dirty") is not False for m in made)}


def merge_rows(path: Path, mine: pd.DataFrame, own: tuple[str, ...]) -> None:
    """Write ``mine`` into a report's runs.csv beside the rows of the other commands that render into the same report
    (paper 002's Figs 1-4, 7-8 and 10 share dgn-figures-paper): the rows whose run begins with ``own`` (this
    command's earlier ones) are replaced."""
    old = pd.read_csv(path, dtype={"commits": str}).reindex(columns=COLUMNS) if path.is_file() else \
        pd.DataFrame(columns=COLUMNS)
    ours = old.run.astype(str).str.startswith(own)
    rows = [df for df in (old[~ours], mine) if len(df)]
    (pd.concat(rows, ignore_index=True) if rows else mine)[COLUMNS].to_csv(path, index=False)


def would_not_count(record: Optional[Path], own: tuple[str, ...]) -> list[str]:
    """Why runs started now from this checkout, into the report whose runs.csv is ``record``, would not pre-register:
    uncommitted code (each run would record a dirty tree), no git checkout (no commit), or another command's row of
    ``record`` that names no file in ``for`` (it stands behind every file of the report, the new ones included, and
    its date faults them). Each cost a whole confirmation once: paper 002's Figs 7-8, 48 runs, 2026-12-07."""
    from gatelab.core.results import git_tree
    out, tree = [], git_tree()
    if not tree:
        out.append("not run from a git checkout: its runs would record no commit and cannot pre-register")
    elif tree.get("git_dirty"):
        out.append(f"the checkout has uncommitted changes ({', '.join(tree.get('git_changed') or [])}): its runs "
                   "would record a dirty tree and not pre-register; commit them, or run from a clean worktree "
                   "(git worktree add)")
    if record is not None and Path(record).is_file():
        runs = pd.read_csv(record, dtype=str, keep_default_na=False)
        for run in runs.run[~runs.run.str.startswith(own) & (_names(runs).str.strip() == "")]:
            out.append(f"{record}: the row of {run} names no file in its 'for' column, so it stands behind every file "
                       "of the report, this target's included, and its date would fault them: name the files it made")
    return out
