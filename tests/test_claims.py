"""Claims declared as data and the one interpreter (issue #47): for each kind a case that must be accepted, and a
control that must be rejected in each direction; the declared files load and are complete; Table 2's rows are
judged by the claims stated for them; pre-registration is checked against git."""
import random
import subprocess

import pandas as pd
import pytest

from gatelab.papers import claims, stats
from gatelab.papers.claims import Claim, Control
from gatelab.papers.npf import verdicts
from gatelab.papers.npf.table2 import PAPER_TABLE2


def seeds(mean, spread=0.4, n=5, seed=0):
    rng = random.Random(seed)
    return [mean + rng.uniform(-spread, spread) for _ in range(n)]


ORDER = Claim("o", "X", "A above B", "§1", "ordering", ("a", "b"), Control("no_difference", untrained=True))
SAME = Claim("e", "X", "A as B", "§1", "equivalence", ("a", "b"), Control("differ", ("c", "d")), margin=1.0, why="w")
NEAR = Claim("n", "X", "A recovers B", "§1", "nearer", ("a", "b", "c"), Control("no_difference", ("d", "e")))


def word(claim, data, untrained=None):
    return claims.summary(claims.judge([claim], data, untrained))[0]


@pytest.mark.parametrize("shift", [+3.0, -3.0])
def test_an_ordering_holds_only_while_its_control_shows_no_difference_either_way(shift):
    init = seeds(10, 1.0, seed=3)
    data, flat = {"a": seeds(62, seed=1), "b": seeds(58, seed=2)}, {"a": init, "b": init[::-1]}
    assert word(ORDER, data, flat) == "agrees"
    assert word(ORDER, {"a": data["b"], "b": data["a"]}, flat) == "differs"
    # the untrained nets differ, either way: no evidence (a one-sided control passed the -3 case)
    assert word(ORDER, data, {"a": [x + shift for x in init], "b": init[::-1]}) == "no evidence"
    assert word(ORDER, data, {}) == "no evidence"  # a control declared but missing is no evidence


@pytest.mark.parametrize("shift", [+4.0, -4.0])
def test_an_equivalence_needs_tost_and_a_control_pair_that_is_not_equivalent(shift):
    ctl = {"c": seeds(70, seed=5), "d": seeds(70 + shift, seed=6)}
    assert word(SAME, {"a": seeds(60, 0.2, seed=1), "b": seeds(60.1, 0.2, seed=2), **ctl}) == "agrees"
    assert word(SAME, {"a": seeds(60, seed=1), "b": seeds(63, seed=2), **ctl}) == "differs"
    # no difference shown is not equivalence: wide seeds cannot place the difference within ±1
    assert word(SAME, {"a": seeds(60, 4, n=3, seed=1), "b": seeds(60, 4, n=3, seed=2), **ctl}) == "differs"
    same_ctl = {"c": seeds(70, 0.2, seed=5), "d": seeds(70.1, 0.2, seed=6)}  # the control equivalent too: blind
    assert word(SAME, {"a": seeds(60, 0.2, seed=1), "b": seeds(60.1, 0.2, seed=2), **same_ctl}) == "no evidence"


@pytest.mark.parametrize("shift", [+3.0, -3.0])
def test_nearer_is_by_distance_not_by_the_midpoint(shift):
    ctl = {"d": seeds(50, seed=7), "e": seeds(50, seed=8)}
    assert word(NEAR, {"a": seeds(69, seed=1), "b": seeds(70, seed=2), "c": seeds(60, seed=3), **ctl}) == "agrees"
    # the GCONV case: FLNPF 55.4 is above the midpoint of ReLU 47.4 and FRNPF-II 51.9, yet nearer FRNPF-II
    assert word(NEAR, {"a": seeds(55.4, seed=1), "b": seeds(47.4, seed=2), "c": seeds(51.9, seed=3), **ctl}) == "differs"
    bad = {"d": seeds(50 + shift, seed=7), "e": seeds(50, seed=8)}
    assert word(NEAR, {"a": seeds(69, seed=1), "b": seeds(70, seed=2), "c": seeds(60, seed=3), **bad}) == "no evidence"


def test_the_statistics_come_from_scipy_and_statsmodels():
    from scipy import stats as st
    a, b = seeds(60, seed=1), seeds(59, seed=2)
    assert stats.above(a, b).p == pytest.approx(st.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)
    assert stats.no_difference(a, b).p == pytest.approx(st.ttest_ind(a, b, equal_var=False).pvalue)
    lo = st.ttest_ind([x + 1 for x in a], b, equal_var=False, alternative="greater").pvalue
    hi = st.ttest_ind([x - 1 for x in a], b, equal_var=False, alternative="less").pvalue
    assert stats.equivalent(a, b, 1.0).p == pytest.approx(max(lo, hi))
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])  # Holm's step-down by definition
    # the paper's mean ± std (ddof=0 over 5 runs) as a sample
    assert stats.Cell.published(60, 1.0).std == pytest.approx((5 / 4) ** 0.5)


def test_several_claims_of_an_item_are_corrected_together():
    """Two orderings each at p ~ 0.03 hold alone, not together (Holm)."""
    a, b = [60.0, 61.0, 62.0], [57.8, 58.8, 59.8]
    alone = claims.judge([ORDER], {"a": a, "b": b})
    two = claims.judge([ORDER, Claim("o2", "X", "w", "§", "ordering", ("a", "b"))], {"a": a, "b": b})
    assert 0.025 < alone[0].test.p < 0.05 and alone[0].holds and not any(j.holds for j in two)


def test_every_declared_claim_loads_with_its_reason_and_a_bad_one_is_refused(tmp_path):
    for package in claims.PAPERS:
        declared = claims.paper_claims(package)
        assert declared and all(c.words and c.where for c in declared)
        assert all(c.margin and c.why for c in declared if c.kind == "equivalence")
    bad = tmp_path / "claims.yaml"
    bad.write_text("- {id: x, item: X, words: w, where: s, kind: equivalence, cells: [a, b]}\n")
    with pytest.raises(ValueError, match="needs a margin and the reason"):
        claims.load(bad)
    bad.write_text("- {id: x, item: X, words: w, where: s, kind: likeness, cells: [a, b]}\n")
    with pytest.raises(ValueError, match="is not one of"):
        claims.load(bad)


ROW = dict(relu=70.0, flnpf=69.5, dlnpf=66.0, frnpf_ii=60.0, frnpf_di=60.1)


def _frame(means, arch="gconv", opt="adam", rise=None):
    rng = random.Random(0)
    lines = []
    for r, m in means.items():
        vals = [m + rng.uniform(-0.3, 0.3) for _ in range(5)]
        lines.append({"arch": arch, "optimizer": opt, "regime": r, "n": 5, "rise_last_fifth": (rise or {}).get(r, 0.2),
                      "best_per_seed": ";".join(f"{s}:{v:.4f}" for s, v in enumerate(vals))})
    return pd.DataFrame(lines)


def test_table2_rows_are_judged_by_the_claims_stated_for_them():
    [(row, w, text)] = verdicts.conv_claims(_frame(ROW))
    assert (row, w) == ("GCONV Adam", "agrees") and "8 of 8 claims hold" in text
    # observation 2 is stated for the GCONV Adam row only: a VCONV row is judged on the other 4, and the paper's
    # own VCONV Adam row (FRNPF-II 64.86 ± 1.18, -DI 64.68 ± 0.84) does not show the equivalence within ±1: not counted
    [(_, w, text)] = verdicts.conv_claims(_frame(ROW, arch="vconv"))
    assert w == "agrees" and "3 of 3 claims hold" in text and "not counted" in text and "FRNPF-II ≈ FRNPF-DI" in text
    [(_, w, _)] = verdicts.conv_claims(_frame({**ROW, "dlnpf": 55.0}))
    assert w == "differs"
    [(_, w, _)] = verdicts.conv_claims(_frame({**ROW, "frnpf_di": 63.0}))  # the DI-II control differs: blind
    assert w == "no evidence"
    [(_, w, text)] = verdicts.conv_claims(_frame(ROW, rise={"relu": claims.STILL + 0.5}))
    assert w == "still learning" and "ReLU +1.50" in text


def test_the_papers_own_rows_back_the_claims_counted():
    """The positive control: every Table 2 claim is also tested on the paper's published row; one that the
    paper's own numbers fail is shown and not counted."""
    paper = {r: stats.Cell.published(*ms) for r, ms in PAPER_TABLE2[("gconv", "adam", "cifar10")].items()}
    judged = claims.judge(claims.of_item(claims.paper_claims("npf"), verdicts.T2, "gconv/adam"),
                          {r: seeds(m, n=5) for r, m in ROW.items()}, paper=paper)
    assert len(judged) == 8 and all(j.paper_holds is not None for j in judged)
    assert sum(j.paper_holds for j in judged) >= 6  # the published row passes its own orderings


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


def test_a_claim_committed_after_its_results_is_rule_after_results(tmp_path):
    from gatelab.papers import preregistration as pre
    repo = tmp_path
    _git(repo, "init", "-q")
    claims_file, results = repo / "claims.yaml", repo / "table.csv"
    claims_file.write_text("- {id: c1, item: X, words: w, where: s, kind: ordering, cells: [a, b]}\n")
    _git(repo, "add", "claims.yaml")
    _git(repo, "commit", "-qm", "claim")
    results.write_text("a,b\n1,2\n")
    _git(repo, "add", "table.csv")
    _git(repo, "commit", "-qm", "results")
    pre._history.cache_clear()
    assert not pre.check(claims_file, ["c1"], results).after  # declared, then the results it judges
    # the rule changed after the results: not counted
    claims_file.write_text("- {id: c1, item: X, words: w, where: s, kind: ordering, cells: [b, a]}\n")
    assert pre.check(claims_file, ["c1"], results).after  # not even committed
    _git(repo, "commit", "-qam", "rule changed")
    pre._history.cache_clear()
    reg = pre.check(claims_file, ["c1"], results)
    assert reg.after and "rule after results" in reg.text()
    # new results after the changed rule: pre-registered again
    results.write_text("a,b\n1,3\n")
    _git(repo, "commit", "-qam", "new results")
    pre._history.cache_clear()
    assert not pre.check(claims_file, ["c1"], results).after
    # ... unless the row reads lines the file kept from renders before the claim: its commit cannot date them
    kept = pre.check(claims_file, ["c1"], results, older="lines kept from earlier renders")
    assert kept.after and "lines kept from earlier renders" in kept.text()


def test_a_threshold_claim_carries_its_value_margin_and_precision_and_judges_a_sweep(tmp_path):
    from gatelab.papers import thresholds as th
    (c,) = [c for c in claims.paper_claims("routing") if c.id == "k-mnist-perm-leaky"]
    assert (c.kind, c.value, c.margin, c.precision, c.decides_within) == ("threshold", 0.25, 0.05, 0.02, 0.2)

    def sweep(lo, hi):
        return th.Threshold((lo + hi) / 2, False, lo, hi, 0.1, 0.9, 3)
    assert claims.threshold_claim(c, sweep(0.20, 0.30)) == "agrees"
    assert claims.threshold_claim(c, sweep(0.33, 0.50)) == "differs"  # Fig 9 i today: 0.33 - 0.07 > 0.25
    assert claims.threshold_claim(c, sweep(0.31, 0.40)) == "borderline"  # within 0.07 of 0.25, not within 0.03
    assert claims.threshold_claim(c, sweep(0.10, 0.50)) == "no evidence"  # holds any value
    bad = tmp_path / "claims.yaml"
    bad.write_text("- {id: x, item: X, words: w, where: s, kind: threshold, cells: [t, r], value: 0.4}\n")
    with pytest.raises(ValueError, match="a threshold needs its value, margin, precision"):
        claims.load(bad)


def _feature(*tests):
    return Claim("f", "X", "a feature", "§1", "feature", (), tests=tuple(tests), why="w")


@pytest.mark.parametrize("test, good, bad", [
    ({"of": "q", "below": 0.25}, 0.2, 0.3), ({"of": "q", "above": 10}, 11, 9),
    ({"of": "q", "at_least": 10}, 10, 9.99), ({"of": "q", "at_most": 100}, 100, 100.01),
    ({"of": "q", "near": 1.0, "within": 0.05}, 0.96, 1.06), ({"of": "q", "near": 1.0, "within": 0.05}, 1.04, 0.94),
    ({"of": "q", "falls": True}, [5, 3, 1], [5, 3, 4]), ({"of": "q", "rises": True}, [1, 2, 3], [1, 1, 3])])
def test_a_feature_holds_on_its_declared_bound_and_fails_past_it_either_side(test, good, bad):
    c = _feature(test)
    assert claims.feature(c, {"q": good})[0] == "agrees"
    word, text = claims.feature(c, {"q": bad})
    assert word == "differs" and "fails: q" in text
    assert claims.feature(c, {})[0] == "no result"  # a quantity the run did not record is not judged
    assert claims.feature_text(c, {"q": good}).startswith("qualitative: agrees (test: q ")


def test_a_feature_declaration_needs_one_operator_a_bound_and_its_reason(tmp_path):
    bad = [{"of": "q"}, {"of": "q", "below": 1, "above": 0}, {"of": "q", "near": 1}, {"below": 1},
           {"of": "q", "below": 1, "typo": 2}]
    for test in bad:
        f = tmp_path / "c.yaml"
        f.write_text(yaml_dump([{"id": "f", "item": "X", "words": "w", "where": "§", "kind": "feature", "tests": [test],
                                 "why": "w"}]))
        with pytest.raises(ValueError, match="a feature needs tests"):
            claims.load(f)
    f.write_text(yaml_dump([{"id": "f", "item": "X", "words": "w", "where": "§", "kind": "feature",
                             "tests": [{"of": "q", "below": 1}]}]))
    with pytest.raises(ValueError, match="reason"):
        claims.load(f)


def yaml_dump(x):
    import yaml
    return yaml.safe_dump(x)


EACH = Claim("g", "X", "only at small gains", "§1", "ordering", ("large", "small"), each=True)


def test_an_each_ordering_judges_every_pair_of_members_with_holm():
    large = {"gain 1": seeds(50, seed=1), "gain 10": seeds(60, seed=2)}
    small = {"gain 0.1": seeds(20, seed=3), "gain 0.01": seeds(10, seed=4)}
    judged = claims.judge([EACH], {"large": large, "small": small})
    assert len(judged) == 4 and all(j.holds for j in judged)
    assert {j.what() for j in judged} >= {"gain 1 > gain 0.1", "gain 10 > gain 0.01"}
    assert claims.summary(judged)[0] == "agrees"
    # one large gain below one small one: that pair fails, and the claim with it
    worse = dict(large, **{"gain 1": seeds(15, seed=1)})
    judged = claims.judge([EACH], {"large": worse, "small": small})
    assert claims.summary(judged)[0] == "differs" and "gain 1 > gain 0.1" in claims.summary(judged)[1]


def test_each_paper_declares_its_own_items():
    """Paper 003's Fig 6 (the toy's initial scale) is declared; paper 004's Fig 6, an identity, is declared by
    paper 004 and never counted: no counted claim for it."""
    path, ids = claims.declared_for("Fig 6", "003")
    assert path.parent.name == "routing" and ids == ["toy-init-scale"]
    assert claims.declared_for("Fig 6", "004") == (None, [])
    assert [c.kind for c in claims.paper_claims("races") if c.item == "Fig 6"] == ["identity"]
    assert claims.declared_for("Fig 7", "004")[1] == ["stable-cells"]
