"""Table 2's claims at a reduced scale (gatelab.papers.npf.claims): each passes only with its control
rejected, and fails when the numbers say otherwise."""
import random

from gatelab.papers.npf import claims


def _row(**means):
    rng = random.Random(0)
    return {r: [m + rng.uniform(-0.4, 0.4) for _ in range(3)] for r, m in means.items()}


PAPER_LIKE = dict(relu=70.0, flnpf=70.1, dlnpf=66.0, frnpf_ii=60.0, frnpf_di=60.1)


def test_the_papers_pattern_agrees_and_every_control_is_rejected():
    tests = claims.row_claims(_row(**PAPER_LIKE))
    assert len(tests) == len(claims.CLAIMS)
    assert all(c.holds for c, _ in tests) and not any(ctrl.holds for _, ctrl in tests)
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
    assert all("flnpf" not in (c.a, c.b) for c, _ in tests) and len(tests) == 5
    assert claims.summary([])[0] == "no result"
