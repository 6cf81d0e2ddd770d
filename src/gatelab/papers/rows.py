"""One row of the page of what reproduces (:mod:`gatelab.papers.page`) and the helpers each paper's
``verdicts.py`` builds its rows with: read a report's CSV, say how many runs, name a qualitative verdict."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import pandas as pd

SCALES = ("paper", "reduced", "quick", "test", "none", "n/a")


@dataclass
class Row:
    """One line of the page. ``scale``: paper / reduced / quick / test / none (not run) / n/a (nothing to run)."""
    scale: str
    report: str = ""  # the report directory, relative to the reports root
    runs: str = ""
    ours: str = ""
    paper: str = ""
    verdict: str = ""
    why: str = ""  # why there is no paper-scale result, or what to read next
    shared: bool = False  # another paper's experiment, shown under this one too: counted once, there
    results: str = ""  # the results file its verdict read (relative to the reports root), for the pre-registration check
    older: str = ""  # why its numbers are older than that file's last commit (lines kept from earlier renders)
    registration: Optional[object] = None  # gatelab.papers.preregistration.Registration, set by the page


@dataclass
class Item:
    paper: str  # "001" .. "004"
    item: str  # "Table 2: FC rows", "Fig 10 (experiment 8)", ...
    what: str
    row: Callable[[Path], Row] = field(repr=False)


def nothing(kind: str) -> Callable[[Path], Row]:
    """Items with no result to reproduce: definitions, notation, illustrations, hyperparameter tables."""
    return lambda root: Row("n/a", verdict=f"nothing to run ({kind})")


def not_built(why: str) -> Callable[[Path], Row]:
    return lambda root: Row("none", verdict="not run", why=why)


def missing(report: str, why: str) -> Row:
    return Row("none", report="", verdict="not run", why=f"no report `{report}` yet: {why}")


def csv(root: Path, rel: str) -> Optional[pd.DataFrame]:
    p = Path(root) / rel
    return pd.read_csv(p) if p.is_file() else None


def first_csv(root: Path, candidates, name: str, usable=lambda df: True):
    """(report, scale, frame) of the first of ``candidates`` [(report, scale), ...] whose ``name`` CSV exists
    and is ``usable`` (the paper-scale report first, by convention); (None, None, None) when none is."""
    for rel, scale in candidates:
        df = csv(root, f"{rel}/{name}")
        if df is not None and usable(df):
            return rel, scale, df
    return None, None, None


def runs_of(root: Path, rel: str) -> str:
    """"N runs" from a rendered table's provenance line ``- runs: N results.json (M completed)``."""
    p = Path(root) / rel
    if not p.is_file():
        return ""
    m = re.search(r"^- runs: (\d+)(?: results\.json)? \((\d+) completed\)|^- runs: (\d+) completed", p.read_text(), re.M)
    if not m:
        return ""
    done = m.group(2) or m.group(3)
    return f"{done} runs"


def scale_of(root: Path, rel: str, command: str) -> dict:
    """The scale dict that ``<rel>/PROVENANCE.md`` records for the last line of ``command`` (a figure CLI's
    subcommand, e.g. ``figures7-8``): the parameters a CSV does not carry. {} when there is no such line."""
    import ast
    p = Path(root) / rel / "PROVENANCE.md"
    found = re.findall(rf"^- `python -m \S+ {re.escape(command)}\b.*, scale (\{{.*\}})$", p.read_text(), re.M) \
        if p.is_file() else []
    return ast.literal_eval(found[-1]) if found else {}


def count_of(df: pd.DataFrame, fallback: Optional[int], column: str = "n") -> str:
    """The number of runs a CSV averaged: its ``column`` (one value, or a range), else ``fallback``
    (read from the provenance), else "?"."""
    if column in df and df[column].notna().any():
        lo, hi = int(df[column].min()), int(df[column].max())
        return str(lo) if lo == hi else f"{lo}-{hi}"
    return str(fallback) if fallback is not None else "?"


def qualitative(agrees: bool, test: str) -> str:
    """The verdict on a figure without published numbers: whether ours passes ``test``, the check of the
    feature the paper states."""
    return f"qualitative: {'confirmed' if agrees else 'contradicted'} (test: {test})"


def feature(package: str, claim_id: str, values: dict, control: Optional[dict] = None) -> str:
    """The page's verdict of the feature claim ``claim_id`` that ``<package>/claims.yaml`` declares, on ``values``
    (the quantities the paper's code read off its report) and, where the claim has one, its ``control``."""
    from gatelab.papers import claims
    return claims.feature_text(claims.one(package, claim_id), values, control)
