"""Table 2's stated claims (paper 001 §6, observations 1-3) as tests a reduced scale can support, each
run beside a control it must reject, so that a pass is evidence and not an artefact of few seeds.

The claims, on one (architecture, optimiser) row, from each regime's per-seed best test accuracies:

- FRNPF-II ≈ FRNPF-DI ("no significant performance difference", obs. 1);
- DLNPF > FRNPF ("DLNPF performed better than FRNPF", obs. 1);
- FLNPF > FRNPF and ReLU > FRNPF (S3 above S1, obs. 2);
- FLNPF ≈ ReLU ("we can recover the test accuracy", obs. 3).

An ordering A > B holds when mean(A) − mean(B) > 2 s.e. of the difference (Welch, sample std); a
likeness A ≈ B holds when |mean(A) − mean(B)| < 2 s.e. The controls: a likeness test must reject
ReLU ≈ FRNPF-II (the paper's widest gap), an ordering test must reject FRNPF-DI > FRNPF-II (the
paper's pair with no difference). A claim whose control is not rejected counts as no evidence.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

CLAIMS = [("same", "frnpf_ii", "frnpf_di"), ("above", "dlnpf", "frnpf_ii"), ("above", "dlnpf", "frnpf_di"),
          ("above", "flnpf", "frnpf_ii"), ("above", "flnpf", "frnpf_di"), ("above", "relu", "frnpf_ii"),
          ("above", "relu", "frnpf_di"), ("same", "flnpf", "relu")]
CONTROLS = {"same": ("relu", "frnpf_ii"), "above": ("frnpf_di", "frnpf_ii")}
NAMES = {"relu": "ReLU", "frnpf_ii": "FRNPF-II", "frnpf_di": "FRNPF-DI", "dlnpf": "DLNPF", "flnpf": "FLNPF"}


@dataclass
class Test:
    kind: str  # "same" or "above"
    a: str
    b: str
    diff: float  # mean(a) - mean(b), points
    se: float  # s.e. of the difference
    holds: bool

    def text(self) -> str:
        sign = "≈" if self.kind == "same" else ">"
        return (f"{NAMES[self.a]} {sign} {NAMES[self.b]}: Δ {self.diff:+.2f} ± {self.se:.2f} s.e. "
                f"({'holds' if self.holds else 'does not hold'})")


def _mean_var(xs: list[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    return m, (sum((x - m) ** 2 for x in xs) / (len(xs) - 1) if len(xs) > 1 else math.nan)


def test(kind: str, a: list[float], b: list[float], names=("a", "b")) -> Test:
    """One claim on two regimes' per-seed accuracies (:data:`CLAIMS`' rule); needs 2 seeds each."""
    (ma, va), (mb, vb) = _mean_var(a), _mean_var(b)
    se = math.sqrt(va / len(a) + vb / len(b))
    diff = ma - mb
    holds = abs(diff) < 2 * se if kind == "same" else diff > 2 * se
    return Test(kind, names[0], names[1], diff, se, holds)


def row_claims(seeds: dict[str, list[float]]) -> list[tuple[Test, Test]]:
    """Each claim of :data:`CLAIMS` whose regimes have at least 2 seeds in ``seeds`` (regime -> per-seed
    best test accuracies), with its control; [] where the row is not complete."""
    out = []
    for kind, a, b in CLAIMS:
        ca, cb = CONTROLS[kind]
        if all(len(seeds.get(r, [])) >= 2 for r in (a, b, ca, cb)):
            out.append((test(kind, seeds[a], seeds[b], (a, b)), test(kind, seeds[ca], seeds[cb], (ca, cb))))
    return out


def summary(tests: list[tuple[Test, Test]]) -> tuple[str, str]:
    """(verdict word, sentence): ``agrees`` when every claim holds and every control is rejected,
    ``differs`` when a claim fails with its control rejected, ``no evidence`` when a control passes."""
    if not tests:
        return "no result", "no complete row"
    blind = {t[1].kind for t in tests if t[1].holds}
    held = sum(claim.holds for claim, _ in tests)
    word = "no evidence" if blind else ("agrees" if held == len(tests) else "differs")
    controls = "; ".join(sorted({c.text().replace("(does not hold)", "(rejected)").replace("(holds)", "(NOT rejected)")
                                 for _, c in tests}))
    failed = [c.text() for c, _ in tests if not c.holds]
    return word, (f"{held} of {len(tests)} claims hold" + (f" (not: {'; '.join(failed)})" if failed else "") +
                  f"; controls: {controls}")
