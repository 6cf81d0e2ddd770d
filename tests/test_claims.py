"""Table 2's claims at a reduced scale (gatelab.papers.npf.claims): each passes only with its control
rejected, and fails when the numbers say otherwise."""
import random

import pandas as pd

from gatelab.papers.npf import claims, verdicts
from gatelab.papers.npf.table2 import PAPER_TABLE2


def _row(**means):
    rng = random.Random(0)
    return {r: [m + rng.uniform(-0.4, 0.4) for _ in range(3)] for r, m in means.items()}


PAPER_LIKE = dict(relu=70.0, flnpf=70.1, dlnpf=66.0, frnpf_ii=60.0, frnpf_di=60.1)


def test_the_papers_pattern_agrees_and_every_control_is_rejected():
    tests = claims.row_claims(_row(**PAPER_LIKE))
    assert len(tests) == len(claims.CLAIMS)
    assert all(c.holds for c, _, _ in tests) and not any(ctrl.holds for _, ctrl, _ in tests)
    word, text = claims.summary(tests)
    assert word == "agrees" and text.startswith("8 of 8 claims hold; controls: ")


def test_an_ordering_the_numbers_contradict_differs():
    tests = claims.row_claims(_row(**{**PAPER_LIKE, "dlnpf": 55.0}))  # DLNPF below FRNPF
    word, text = claims.summary(tests)
    assert word == "differs" and "6 of 8 claims hold" in text and "DLNPF > FRNPF-II: Δ -5" in text


def test_regimes_that_noise_cannot_tell_apart_are_no_evidence():
    """All five regimes alike within the seeds' spread: the likeness control (ReLU ≈ FRNPF-II) passes,
    so the likeness claims that pass say nothing."""
    rng = random.Random(1)
    seeds = {r: [50 + rng.gauss(0, 3) for _ in range(3)] for r in PAPER_LIKE}
    word, _ = claims.summary(claims.row_claims(seeds))
    assert word == "no evidence"


def test_a_row_without_two_seeds_per_regime_has_no_claims():
    seeds = _row(**PAPER_LIKE)
    seeds["flnpf"] = seeds["flnpf"][:1]
    tests = claims.row_claims(seeds)
    assert all(c.a != "flnpf" and c.b != "flnpf" for c, _, _ in tests) and len(tests) == 5
    assert claims.summary([])[0] == "no result"


def test_the_papers_own_rows_pass_every_claim_but_one():
    """The positive control: tested on Table 2's published mean ± std (5 runs), every claim holds on every
    row but obs. 3 on VCONV SGD (FLNPF 63.06 sits at the midpoint of ReLU 67.02 and FRNPF-II 58.92).
    The earlier reading FLNPF ≈ ReLU (within 2 s.e.) fails on 5 of the 6 rows."""
    failing, same = [], 0
    for row, cells in PAPER_TABLE2.items():
        st = {r: claims.Stats.published(*ms) for r, ms in cells.items()}
        failing += [(row[:2], c.kind) for c in (claims._claim(k, a, b, st) for k, a, b in claims.CLAIMS) if not c.holds]
        same += not claims.test("same", st["flnpf"], st["relu"]).holds
    assert failing == [(("vconv", "sgd"), "nearer")]
    assert same == 5


def test_a_claim_the_papers_row_fails_is_shown_and_not_counted():
    seeds = _row(**{**PAPER_LIKE, "flnpf": 62.0})  # FLNPF below the ReLU/FRNPF midpoint, as on VCONV SGD
    word, text = claims.summary(claims.row_claims(seeds, dict(PAPER_TABLE2[("vconv", "sgd", "cifar10")])))
    assert word == "agrees" and text.startswith("7 of 7 claims hold")
    assert "not counted, the paper's own row fails it: FLNPF nearer ReLU than FRNPF-II" in text
    word, text = claims.summary(claims.row_claims(seeds, dict(PAPER_TABLE2[("gconv", "adam", "cifar10")])))
    assert word == "differs" and "7 of 8 claims hold" in text


def _frame(seeds: dict, rises: dict) -> pd.DataFrame:
    return pd.DataFrame([{"arch": "gconv", "optimizer": "adam", "regime": r, "n": len(xs),
                          "best_per_seed": ";".join(f"{i}:{x:.4f}" for i, x in enumerate(xs)),
                          "rise_last_fifth": rises.get(r, 0.0)} for r, xs in seeds.items()])


def test_a_row_still_learning_gets_no_verdict_and_a_settled_one_does():
    seeds = _row(**PAPER_LIKE)
    [(row, word, text)] = verdicts.conv_claims(_frame(seeds, {"relu": 0.3}))
    assert (row, word) == ("GCONV Adam", "agrees")
    [(row, word, text)] = verdicts.conv_claims(_frame(seeds, {"relu": claims.STILL + 0.5}))
    assert word == "still learning" and "ReLU +1.50" in text and "8 of 8 claims hold" in text
