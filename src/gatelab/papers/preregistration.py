"""Pre-registration that git can check (issue #47): a claim is committed before the first results it judges.

A claim's declaration is the commit since which its entry in its ``claims.yaml`` is what it is now (walking the
file's history back from HEAD while the entry stays the same). Its results are the report CSV the item reads, as of
the last commit that changed it (the current numbers' first commit). The claim is pre-registered when its commit is
a strict ancestor of the results' commit; results not yet committed are judged by the claims committed before them.
A claim changed after its results, or not committed as it stands, is "rule after results": its item is shown and
not counted as agree or differ (:mod:`gatelab.papers.page`).
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

import yaml


def _git(repo: Path, *args: str) -> Optional[str]:
    try:
        p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def repo_of(path: Path) -> Optional[Path]:
    top = _git(Path(path).resolve().parent, "rev-parse", "--show-toplevel")
    return Path(top.strip()) if top else None


def _entry(text: str, claim_id: str) -> Optional[dict]:
    try:
        found = [d for d in yaml.safe_load(text) or [] if isinstance(d, dict) and d.get("id") == claim_id]
    except yaml.YAMLError:
        return None
    return found[0] if found else None


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


def results_of(path: Path) -> Optional[tuple[str, str]]:
    """(commit, date) of the last commit that changed the results file ``path``; None when it is not committed or
    differs from that commit (results not yet committed)."""
    path = Path(path).resolve()
    repo = repo_of(path)
    if repo is None or not path.exists():
        return None
    rel = str(path.relative_to(repo))
    if _git(repo, "diff", "--quiet", "HEAD", "--", rel) is None:  # changed since (or untracked: see the log)
        return None
    log = (_git(repo, "log", "-1", "--format=%H %cI", "--", rel) or "").split()
    return (log[0], log[1]) if log else None


@dataclass
class Registration:
    claim: Optional[tuple[str, str]]  # (commit, date) of the claims' latest declaration; None: not committed
    results: Optional[tuple[str, str]]  # (commit, date) of the results; None: not committed yet
    after: bool  # rule after results
    older: str = ""  # why the numbers are older than the results file's commit (lines kept from earlier renders)

    def text(self) -> str:
        c = f"claims of {self.claim[1][:10]} ({self.claim[0][:7]})" if self.claim else "claims not committed"
        r = f"results of {self.results[1][:10]} ({self.results[0][:7]})" if self.results else "results not committed"
        return f"{c}, {r}" + (f" ({self.older})" if self.older else "") + ("; rule after results" if self.after else "")


def check(claims_file: Path, claim_ids: list[str], results: Path, older: str = "") -> Registration:
    """The item's registration: its claims' latest declaration against its results' commit. ``older``: the row's
    numbers were made before that commit (a report that keeps lines of earlier renders), so a commit of the file
    cannot date them: rule after results, saying why."""
    dates = [declared(claims_file, i) for i in claim_ids]
    res = results_of(results)
    if any(d is None for d in dates) or not dates:
        return Registration(None, res, True)
    repo = repo_of(Path(claims_file))
    latest = max(dates, key=lambda d: d[1])
    if older:
        return Registration(latest, res, True, older)
    if res is None:
        return Registration(latest, None, False)
    before = all(c != res[0] and _git(repo, "merge-base", "--is-ancestor", c, res[0]) is not None for c, _ in dates)
    return Registration(latest, res, not before)
