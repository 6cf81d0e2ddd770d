"""Claims declared as data, and the one interpreter that judges them (issue #47).

Each paper declares what its tables and figures claim in ``gatelab/papers/<paper>/claims.yaml``: per claim
its id, the page item, the seed's words and where they stand, its kind, the cells it reads, its control and
what the control must show, its margin with the reason, the fewest seeds, and the rows it is stated for.
This module reads them (:func:`load`) and judges them by one rule per kind (:mod:`gatelab.papers.stats`;
docs/reproducing.md "One rule per kind"). A fifth paper adds a claims file and touches no code here.

Kinds (each rule written once, in docs/reproducing.md "One rule per kind"): ``ordering`` (one-sided Welch; ``each``
over groups), ``equivalence`` (TOST within a declared margin), ``nearer`` (by distance), ``threshold`` (a sweep's
interval, borderline at the tolerance's edge), ``feature`` (declared bounds on a deterministic run's quantities),
``published`` (the mean ± std rule, :func:`published`), ``identity`` (never counted). Controls (``no_difference``:
two-sided; ``differ``; ``fail`` for a feature) that misbehave give "no evidence"; an item's claims are corrected
together (Holm); a claim the paper's own numbers do not pass is shown and not counted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

import yaml

from gatelab.papers import stats, thresholds

KINDS = ("ordering", "equivalence", "nearer", "threshold", "feature", "published", "identity")
OPS = ("below", "above", "at_least", "at_most", "falls", "rises", "near")
MUSTS = ("no_difference", "differ", "fail")
STILL = 1.0  # points a cell's mean best-so-far may still rise over its last fifth of epochs: more is "still learning"


@dataclass(frozen=True)
class Control:
    must: str  # no_difference (shown by TOST within ``margin``) | differ | fail
    cells: tuple = ()  # the control pair; empty with untrained: the claim's own cells, untrained
    untrained: bool = False
    margin: Optional[float] = None  # no_difference: the equivalence margin the control must be shown within
    why: str = ""  # the reason for that margin


@dataclass(frozen=True)
class Claim:
    id: str
    item: str  # the page's item ("Table 2")
    words: str  # the seed's words, or ours where ``paraphrase`` gives the seed's sentence they paraphrase
    where: str  # the section or line they stand in
    kind: str
    cells: tuple
    control: Optional[Control] = None
    margin: Optional[float] = None  # equivalence: points of accuracy
    why: str = ""  # the reason for the margin (or the cells)
    min_seeds: int = 2
    rows: tuple = ()  # the rows it is stated for ("gconv/adam"); empty: every row of its item
    value: Optional[float] = None  # threshold: the paper's value
    precision: Optional[float] = None  # threshold: how well the margin itself is known
    decides_within: Optional[float] = None  # threshold: the widest interval that decides
    tests: tuple = ()  # feature: ({"of": quantity, op: bound}, ...)
    each: bool = False  # ordering: the cells are groups, and every member of the first is above every one of the second
    paraphrase: str = ""  # the seed's own sentence that ``words`` paraphrases (tests/test_claims.py finds it)


def _claim(d: dict, source: Path) -> Claim:
    ctl = d.get("control")
    c = Claim(id=str(d["id"]), item=str(d["item"]), words=str(d["words"]), where=str(d["where"]), kind=str(d["kind"]),
              cells=tuple(d.get("cells") or ()), margin=d.get("margin"), why=str(d.get("why", "")),
              min_seeds=int(d.get("min_seeds", 2)), rows=tuple(d.get("rows") or ()), value=d.get("value"),
              precision=d.get("precision"), decides_within=d.get("decides_within"),
              tests=tuple(dict(t) for t in d.get("tests") or ()), each=bool(d.get("each", False)),
              paraphrase=str(d.get("paraphrase", "")),
              control=Control(str(ctl["must"]), tuple(ctl.get("cells") or ()), bool(ctl.get("untrained", False)),
                              ctl.get("margin"), str(ctl.get("why", ""))) if ctl else None)
    need = {"ordering": 2, "equivalence": 2, "nearer": 3, "threshold": 2, "feature": 0, "published": 0, "identity": 0}
    if c.kind not in KINDS:
        raise ValueError(f"{source}: claim {c.id}: kind {c.kind!r} is not one of {', '.join(KINDS)}")
    if c.kind == "feature":
        bad = [t for t in c.tests if "of" not in t or len([o for o in OPS if o in t]) != 1
               or ("near" in t) != ("within" in t) or set(t) - {"of", "within", *OPS}]
        if not c.tests or bad or not c.why:
            raise ValueError(f"{source}: claim {c.id}: a feature needs tests [{{of, one of {', '.join(OPS)}}}] "
                             f"(near with within) and the reason for the bounds; got {list(c.tests)}")
    elif len(c.cells) != need[c.kind]:
        raise ValueError(f"{source}: claim {c.id}: a {c.kind} reads {need[c.kind]} cells, got {list(c.cells)}")
    if c.kind == "published" and not c.why:
        raise ValueError(f"{source}: claim {c.id}: a published comparison needs the reason for its rule")
    if c.kind == "equivalence" and not (c.margin and c.why):
        raise ValueError(f"{source}: claim {c.id}: an equivalence needs a margin and the reason for it")
    if c.kind == "threshold" and not (c.value is not None and c.margin and c.precision is not None and c.decides_within
                                      and c.why):
        raise ValueError(f"{source}: claim {c.id}: a threshold needs its value, margin, precision, decides_within "
                         "and the reason for them")
    if c.control and c.kind == "feature" and c.control.must != "fail":
        raise ValueError(f"{source}: claim {c.id}: a feature's control must fail its tests (must: fail)")
    if c.control and c.kind != "feature" and (c.control.must not in MUSTS[:2] or
                                              (not c.control.untrained and len(c.control.cells) != 2)):
        raise ValueError(f"{source}: claim {c.id}: a control must be {' or '.join(MUSTS)} on two cells or untrained")
    if c.control and c.control.must == "no_difference" and not (c.control.margin and c.control.why):
        raise ValueError(f"{source}: claim {c.id}: a no_difference control is shown by equivalence (TOST): it needs "
                         "its margin and the reason for it (control: {margin: ..., why: ...})")
    return c


def load(path: Path) -> list[Claim]:
    """The claims of one ``claims.yaml`` (checked: kinds, cells, margins with reasons, controls, unique ids), parsed
    once per text of the file (the page asked 103 times: 10 s of YAML)."""
    return list(_parsed(Path(path).read_text(), str(path)))


@lru_cache(maxsize=64)
def _parsed(text: str, path: str) -> tuple[Claim, ...]:  # noqa: D103
    claims = tuple(_claim(d, path) for d in yaml.safe_load(text) or [])
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: claim ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    return claims


def paper_claims(package: str) -> list[Claim]:
    """The claims of one paper's package (``npf``, ``dgn``, ...)."""
    return load(Path(__file__).resolve().parent / package / "claims.yaml")


PACKAGES = {"001": "npf", "002": "dgn", "003": "routing", "004": "races"}  # the page's papers and their packages
PAPERS = tuple(p for p in PACKAGES.values() if (Path(__file__).resolve().parent / p / "claims.yaml").is_file())


def declared_for(item: str, paper: str) -> tuple[Optional[Path], list[str]]:
    """(the claims file, the ids) of the counted claims that paper ``paper`` ("003") declares for its page item
    ``item``; (None, []) if none (the item's rule is still in code)."""
    path = Path(__file__).resolve().parent / PACKAGES[paper] / "claims.yaml"
    ids = [c.id for c in load(path) if c.item == item and c.kind != "identity"] if path.is_file() else []
    return (path, ids) if ids else (None, [])


def of_item(claims: list[Claim], item: str, row: str = "") -> list[Claim]:
    """The counted claims (not identities) of ``item`` stated for ``row`` (all rows when a claim names none)."""
    return [c for c in claims if c.item == item and c.kind != "identity" and (not c.rows or row in c.rows)]


@dataclass
class Judged:
    claim: Claim
    test: stats.Result
    holds: bool = False  # after Holm's correction over the item's claims
    p_holm: float = math.nan
    control: Optional[stats.Result] = None
    control_ok: Optional[bool] = None  # None: no control declared
    against: Optional[stats.Result] = None  # the test of the opposite (gatelab.papers.outcomes: contradicted)
    n: int = 0  # seeds of its smallest cell
    paper_holds: Optional[bool] = None  # None: no published numbers to test it on
    names: dict = field(default_factory=dict)

    def what(self) -> str:
        n = [self.names.get(x, x) for x in self.claim.cells]
        return {"ordering": lambda: f"{n[0]} > {n[1]}", "nearer": lambda: f"{n[0]} nearer {n[1]} than {n[2]}",
                "equivalence": lambda: f"{n[0]} ≈ {n[1]} (±{self.claim.margin:g})"}[self.claim.kind]()

    def text(self) -> str:
        t = self.test
        return (f"{self.what()}: Δ {t.diff:+.2f} ± {t.se:.2f} s.e., p {t.p:.3f} (Holm {self.p_holm:.3f}) "
                f"({'holds' if self.holds else 'does not hold'})")

    def control_text(self) -> str:
        if self.control is None:
            return ""
        c, cl = self.control, self.claim.control
        pair = " untrained" if cl.untrained else ""
        cells = [self.names.get(x, x) for x in (self.claim.cells[:2] if cl.untrained else cl.cells)]
        need = f"equivalence within ±{cl.margin:g} shown (TOST)" if cl.must == "no_difference" else "not equivalent"
        return (f"{cells[0]} vs {cells[1]}{pair} (needs {need}): Δ {c.diff:+.2f} ± {c.se:.2f} s.e., p {c.p:.3f} "
                f"({'shown' if self.control_ok else 'not shown'})")


def _n(x) -> int:
    """Runs in a cell: per-seed values or a :class:`~gatelab.papers.stats.Cell` (mean, std, n)."""
    return 0 if x is None else x.n if isinstance(x, stats.Cell) else len(x)


def _test(kind: str, cells: list, margin: Optional[float]) -> stats.Result:
    if kind == "ordering":
        return stats.above(*cells)
    if kind == "equivalence":
        return stats.equivalent(*cells, margin=float(margin))
    return stats.nearer(*cells)


def _each(claims: list[Claim], data: dict, names: dict) -> tuple[list[Claim], dict]:
    """An ``each`` ordering on groups ({group: {member: values}}) as one ordering per pair of members."""
    from dataclasses import replace
    out, flat = [], {k: v for k, v in data.items() if not isinstance(v, dict)}
    for c in claims:
        if not c.each:
            out.append(c)
            continue
        a, b = (data.get(g) or {} for g in c.cells)
        for x in a:
            for y in b:
                ka, kb = f"{c.cells[0]}:{x}", f"{c.cells[1]}:{y}"
                flat[ka], flat[kb] = a[x], b[y]
                names.setdefault(ka, str(x))
                names.setdefault(kb, str(y))
                out.append(replace(c, id=f"{c.id}[{x}>{y}]", cells=(ka, kb), each=False))
    return out, flat


def _control(c: Claim, data: dict, untrained: dict) -> tuple[Optional[stats.Result], Optional[bool]]:
    if c.control is None:
        return None, None
    src, pair = (untrained, c.cells[:2]) if c.control.untrained else (data, c.control.cells)
    if any(_n(src.get(x)) < 2 for x in pair):
        return None, None
    if c.control.must == "no_difference":  # behaves only when equivalence is shown: absence of a difference is not
        r = stats.equivalent(src[pair[0]], src[pair[1]], margin=float(c.control.margin))
        return r, r.rejects
    r = stats.equivalent(src[pair[0]], src[pair[1]], margin=float(c.margin))
    return r, not r.rejects


def judge(claims: list[Claim], data: dict, untrained: Optional[dict] = None, paper: Optional[dict] = None,
          names: Optional[dict] = None) -> list[Judged]:
    """Judge ``claims`` (one item and row) on ``data`` {cell: per-seed values}; ``untrained``: {cell: values of the
    same nets untrained} for untrained controls; ``paper``: {cell: stats.Cell} published. A claim with fewer than
    its ``min_seeds`` in a cell it reads is left out. Holm's correction runs over the claims judged."""
    untrained, names = untrained or {}, names or {}
    claims, data = _each(claims, data, names)
    out = []
    for c in claims:
        if any(_n(data.get(x)) < max(2, c.min_seeds) for x in c.cells):
            continue
        cells = [data[x] for x in c.cells]
        j = Judged(c, _test(c.kind, cells, c.margin), names=names, n=min(_n(x) for x in cells))
        j.against = stats.outside(*cells, margin=float(c.margin)) if c.kind == "equivalence" else \
            stats.reverse(j.test, *cells)
        j.control, j.control_ok = _control(c, data, untrained)
        if paper and all(x in paper for x in c.cells):
            j.paper_holds = _test(c.kind, [paper[x] for x in c.cells], c.margin).rejects
        out.append(j)
    for j, p in zip(out, stats.holm([j.test.p for j in out])):
        j.p_holm, j.holds = p, p < j.test.alpha
    from gatelab.papers import outcomes
    outcomes.RECORD.extend(out)  # what confirm --dry-run reads the exploratory effects from
    return out


# -- features of deterministic runs --

def _holds(t: dict, x) -> bool:
    if "below" in t:
        return x < t["below"]
    if "above" in t:
        return x > t["above"]
    if "at_least" in t:
        return x >= t["at_least"]
    if "at_most" in t:
        return x <= t["at_most"]
    if "near" in t:
        return abs(x - t["near"]) <= t["within"]
    xs = list(x)
    pairs = list(zip(xs, xs[1:]))
    return bool(pairs) and all(b < a if "falls" in t else b > a for a, b in pairs)


def _said(t: dict) -> str:
    op = next(o for o in OPS if o in t)
    if op in ("falls", "rises"):
        return f"{t['of']} {op}"
    sign = {"below": "<", "above": ">", "at_least": "≥", "at_most": "≤", "near": "≈"}[op]
    return f"{t['of']} {sign} {t[op]:g}" + (
        f" ± {t['within']:g}" if op == "near" else "")


def feature(c: Claim, values: dict, control: Optional[dict] = None) -> tuple[str, str]:
    """(word, test) of a ``feature`` claim on ``values`` {quantity: number or sequence}: ``agrees`` when every test
    holds, ``differs`` when one fails (named), ``no result`` when a quantity is missing. A declared control (``must:
    fail``: the same tests on ``control``, say the nets before training) that passes them all makes it ``no
    evidence``: the test cannot tell the feature from its absence."""
    missing = [t["of"] for t in c.tests if values.get(t["of"]) is None]
    if missing:
        return "no result", f"not recorded: {', '.join(missing)}"
    failed = [_said(t) for t in c.tests if not _holds(t, values[t["of"]])]
    test = "; ".join(_said(t) for t in c.tests)
    ctl = ""
    if c.control is not None:
        if not control or any(control.get(t["of"]) is None for t in c.tests):
            return "not shown", f"{test}; control missing"
        blind = all(_holds(t, control[t["of"]]) for t in c.tests)
        shown = dict.fromkeys(t["of"] for t in c.tests if not isinstance(control[t["of"]], (list, tuple)))
        ctl = "; control " + ", ".join(f"{q} {control[q]:.3g}" for q in shown) + \
            (" passes too: not shown" if blind else " (rejected)")
        if blind:
            return "not shown", test + ctl
    return ("contradicted", f"{test}; fails: {', '.join(failed)}{ctl}") if failed else ("confirmed", test + ctl)


def feature_text(c: Claim, values: dict, control: Optional[dict] = None) -> str:
    """The page's verdict of a feature claim: ``qualitative: agrees (test: ...)``."""
    word, test = feature(c, values, control)
    return "not judged: " + test if word == "no result" else f"qualitative: {word} (test: {test})"


def one(package: str, claim_id: str) -> Claim:
    """The claim ``claim_id`` of a paper's package."""
    found = [c for c in paper_claims(package) if c.id == claim_id]
    if len(found) != 1:
        raise ValueError(f"{package}/claims.yaml: no claim {claim_id!r}")
    return found[0]


# -- published mean ± std (docs/reproducing.md "One rule per kind") --

FLAG_FLOOR = 0.5  # points: below this a difference is never flagged, however small the paper's std
FLAG_RULE = f"more than max(2 paper-std, {FLAG_FLOOR}) from the paper"


def far(diff: float, paper_std: float) -> bool:
    """The one rule every report flags a cell by: |ours − paper| > max(2 paper-std, 0.5). A paper value
    without a std (one run, or none given) is held to the floor alone."""
    if diff is None or math.isnan(diff):
        return False
    std = 0.0 if paper_std is None or math.isnan(paper_std) else paper_std
    return bool(abs(diff) > max(2 * std, FLAG_FLOOR))


@dataclass
class Verdict:
    """A comparison with a published number: ``word`` is within / off / no result; ``text`` the sentence."""
    word: str
    text: str


def published(ours: float, paper: float, paper_std: float = math.nan, digits: int = 2) -> Verdict:
    """The sentence of one comparison by :func:`far`, with the difference and how many paper-std it is,
    e.g. ``within: Δ +0.11 (1.2 paper-std)``, ``off by 11.9 paper-std: Δ +1.07``, ``off: Δ −74.2 (paper: no std)``."""
    if ours is None or paper is None or math.isnan(ours) or math.isnan(paper):
        return Verdict("no result", "no result")
    diff = ours - paper
    no_std = paper_std is None or math.isnan(paper_std)
    n_std = None if no_std or paper_std == 0 else abs(diff) / paper_std
    d = f"Δ {diff:+.{digits}f}"
    if not far(diff, paper_std):
        if n_std is not None and n_std > 2:  # within only through the floor: say so, and by how much
            return Verdict("within", f"within by the {FLAG_FLOOR} floor: {d} ({n_std:.1f} paper-std)")
        extra = " (paper: no std)" if no_std else (f" ({n_std:.1f} paper-std)" if n_std is not None else "")
        return Verdict("within", f"within: {d}{extra}")
    if n_std is not None:
        return Verdict("off", f"off by {n_std:.1f} paper-std: {d}")
    return Verdict("off", f"off: {d} (paper: {'no std' if no_std else 'std 0'})")


def tally(compared: Iterable[Verdict]) -> str:
    """``8 of 10 within`` over the verdicts that have a result, and how many of them only by the floor (more than 2
    paper-std away); every one within, some only by the floor: ``borderline: ...`` (the floor decided it)."""
    vs = [v for v in compared if v.word != "no result"]
    within, floor = sum(v.word == "within" for v in vs), sum(v.text.startswith("within by the") for v in vs)
    text = f"{within} of {len(vs)} within" + (f", {floor} only by the {FLAG_FLOOR} floor" if floor else "")
    return ("borderline: " if floor and within == len(vs) else "") + text


# -- thresholds read off a sweep (gatelab.papers.thresholds estimates them and words the verdict) --

def threshold_claim(c: Claim, t) -> str:
    """A declared threshold claim on a sweep's :class:`~gatelab.papers.thresholds.Threshold`."""
    from gatelab.papers import outcomes
    outcomes.THRESHOLDS.append((c, t))  # what confirm --dry-run sizes the seeds from
    return thresholds.verdict(t, float(c.value), float(c.margin), float(c.precision), float(c.decides_within))


def still_learning(rises: dict, names: Optional[dict] = None) -> list[str]:
    """The cells (cell -> points its mean best-so-far rose over the last fifth of the epochs) still learning."""
    names = names or {}
    return [f"{names.get(r, r)} +{x:.2f}" for r, x in rises.items() if x is not None and x == x and x >= STILL]
