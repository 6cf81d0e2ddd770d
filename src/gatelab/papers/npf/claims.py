"""Table 2's stated claims (paper 001 §6, observations 1-3) as tests a reduced scale can support, each
run beside a control it must reject and on the paper's own numbers, so that a pass is evidence and not
an artefact of few seeds, and a failure is not a claim the paper's own table does not pass either.

The claims, on one (architecture, optimiser) row, from each regime's per-seed best test accuracies:

- FRNPF-II ≈ FRNPF-DI ("no significant performance difference", obs. 1);
- DLNPF > FRNPF ("DLNPF performed better than FRNPF", obs. 1);
- FLNPF > FRNPF and ReLU > FRNPF (S3 above S1, obs. 2);
- FLNPF nearer ReLU than FRNPF-II ("we can recover the test accuracy ... almost all useful information
  is stored in the gates", obs. 3): FLNPF − (ReLU + FRNPF-II)/2 > 2 s.e., the gates alone carry more
  than half of what ReLU's training adds over random gates.

An ordering A > B holds when mean(A) − mean(B) > 2 s.e. of the difference (Welch, sample std); a
likeness A ≈ B holds when |mean(A) − mean(B)| < 2 s.e., which is what "no significant difference"
says. The negative controls: the likeness test must reject ReLU ≈ FRNPF-II (the paper's widest gap),
an ordering test must reject FRNPF-DI > FRNPF-II (the paper's pair with no difference); a claim whose
control is not rejected counts as no evidence. The positive control: each claim is also tested on the
paper's published mean ± std (5 runs, ddof=0); a claim the paper's own row does not pass is shown and
not counted. (FLNPF ≈ ReLU within 2 s.e., the earlier reading of obs. 3, fails on 5 of the paper's 6
rows: its FLNPF is 0.04-0.75 points below ReLU at a s.e. of 0.03-0.3.)

The claims are about trained networks, so a row is judged only once it has stopped learning: a cell
whose seeds' mean best-so-far test accuracy still rose by :data:`STILL` points or more over the last
fifth of its epochs leaves its row "still learning", with no verdict (an ordering could yet change).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Union

# (kind, a, b): "same" a ≈ b; "above" a > b; "nearer" a nearer b[0] than b[1]
CLAIMS = [("same", "frnpf_ii", "frnpf_di"), ("above", "dlnpf", "frnpf_ii"), ("above", "dlnpf", "frnpf_di"),
          ("above", "flnpf", "frnpf_ii"), ("above", "flnpf", "frnpf_di"), ("above", "relu", "frnpf_ii"),
          ("above", "relu", "frnpf_di"), ("nearer", "flnpf", ("relu", "frnpf_ii"))]
CONTROLS = {"same": ("relu", "frnpf_ii"), "above": ("frnpf_di", "frnpf_ii"), "nearer": ("frnpf_di", "frnpf_ii")}
STILL = 1.0  # points over the last fifth of the epochs: fixed in advance, the routing threshold's effect size
PAPER_RUNS = 5  # Table 2's runs per cell
NAMES = {"relu": "ReLU", "frnpf_ii": "FRNPF-II", "frnpf_di": "FRNPF-DI", "dlnpf": "DLNPF", "flnpf": "FLNPF"}


@dataclass(frozen=True)
class Stats:
    """A cell's mean, sample variance and number of seeds."""
    mean: float
    var: float
    n: int

    @staticmethod
    def of(xs: Sequence[float]) -> "Stats":
        m = sum(xs) / len(xs)
        return Stats(m, sum((x - m) ** 2 for x in xs) / (len(xs) - 1) if len(xs) > 1 else math.nan, len(xs))

    @staticmethod
    def published(mean: float, std: float, n: int = PAPER_RUNS) -> "Stats":
        """The paper's mean ± std (ddof=0) as a sample variance."""
        return Stats(mean, std ** 2 * n / (n - 1), n)


@dataclass
class Test:
    kind: str  # "same", "above" or "nearer"
    a: str
    b: Union[str, tuple]
    diff: float  # mean(a) − mean(b) (nearer: mean(a) − the midpoint of b's two)
    se: float  # s.e. of that difference
    holds: bool

    def text(self) -> str:
        name = lambda x: NAMES.get(x, x)  # noqa: E731 - another table's cells come named already
        if self.kind == "nearer":
            what = f"{name(self.a)} nearer {name(self.b[0])} than {name(self.b[1])}"
        else:
            what = f"{name(self.a)} {'≈' if self.kind == 'same' else '>'} {name(self.b)}"
        return f"{what}: Δ {self.diff:+.2f} ± {self.se:.2f} s.e. ({'holds' if self.holds else 'does not hold'})"


Cell = Union[Sequence[float], Stats]


def _stats(x: Cell) -> Stats:
    return x if isinstance(x, Stats) else Stats.of(list(x))


def test(kind: str, a: Cell, b: Cell, names=("a", "b"), c: Optional[Cell] = None) -> Test:
    """One claim (:data:`CLAIMS`' rule) on per-seed accuracies or :class:`Stats`; "nearer" compares ``a``
    with the midpoint of ``b`` and ``c``. Needs 2 seeds a cell."""
    sa, sb = _stats(a), _stats(b)
    if kind == "nearer":
        sc = _stats(c)
        diff = sa.mean - (sb.mean + sc.mean) / 2
        se = math.sqrt(sa.var / sa.n + (sb.var / sb.n + sc.var / sc.n) / 4)
    else:
        diff, se = sa.mean - sb.mean, math.sqrt(sa.var / sa.n + sb.var / sb.n)
    holds = abs(diff) < 2 * se if kind == "same" else diff > 2 * se
    return Test(kind, names[0], names[1], diff, se, holds)


def _claim(kind: str, a: str, b, cells: dict) -> Test:
    if kind == "nearer":
        return test(kind, cells[a], cells[b[0]], (a, b), cells[b[1]])
    return test(kind, cells[a], cells[b], (a, b))


def _regimes(a: str, b) -> tuple:
    return (a, *b) if isinstance(b, tuple) else (a, b)


def row_claims(seeds: dict[str, Sequence[float]],
               paper: Optional[dict[str, tuple[float, float]]] = None) -> list[tuple[Test, Test, Optional[Test]]]:
    """(claim, its negative control, the claim on the paper's row or None) for each claim of :data:`CLAIMS`
    whose regimes have at least 2 seeds in ``seeds`` (regime -> per-seed best test accuracies); ``paper``:
    regime -> the published (mean, std). [] where the row is not complete."""
    published = {r: Stats.published(*ms) for r, ms in (paper or {}).items()}
    out = []
    for kind, a, b in CLAIMS:
        ca, cb = CONTROLS[kind]
        if all(len(seeds.get(r, [])) >= 2 for r in (*_regimes(a, b), ca, cb)):
            theirs = _claim(kind, a, b, published) if all(r in published for r in _regimes(a, b)) else None
            control = test("same" if kind == "same" else "above", seeds[ca], seeds[cb], (ca, cb))
            out.append((_claim(kind, a, b, seeds), control, theirs))
    return out


def summary(tests: list[tuple]) -> tuple[str, str]:
    """(verdict word, sentence) over the claims the paper's own row passes: ``agrees`` when every such
    claim holds and every control is rejected, ``differs`` when one fails with the controls rejected,
    ``no evidence`` when a control passes."""
    tests = [(t[0], t[1], t[2] if len(t) > 2 else None) for t in tests]
    counted = [(c, k) for c, k, p in tests if p is None or p.holds]
    unbacked = [f"{c.text().split(':')[0]} (the paper's own: {p.text().split(': ', 1)[1]})"
                for c, _, p in tests if p is not None and not p.holds]
    if not counted:
        return "no result", "no complete row" + (f"; not counted: {'; '.join(unbacked)}" if unbacked else "")
    blind = {k.kind for _, k in counted if k.holds}
    held = sum(claim.holds for claim, _ in counted)
    word = "no evidence" if blind else ("agrees" if held == len(counted) else "differs")
    controls = "; ".join(sorted({k.text().replace("(does not hold)", "(rejected)").replace("(holds)", "(NOT rejected)")
                                 for _, k in counted}))
    failed = [c.text() for c, _ in counted if not c.holds]
    return word, (f"{held} of {len(counted)} claims hold" + (f" (not: {'; '.join(failed)})" if failed else "") +
                  f"; controls: {controls}" +
                  (f"; not counted, the paper's own row fails it: {'; '.join(unbacked)}" if unbacked else ""))


def still_learning(rises: dict[str, Optional[float]]) -> list[str]:
    """The regimes of a row (regime -> points its mean best-so-far rose over the last fifth of the epochs)
    that were still learning when they stopped (:data:`STILL`)."""
    return [f"{NAMES[r]} +{x:.2f}" for r, x in rises.items() if x is not None and x >= STILL]
