"""A feature claim's control (issue #56 §2): ``must: fail`` means the same tests on the control (the nets before
training) must fail; a control that passes them too, or is missing, leaves the claim "not shown", so a reading
that ignores the control fails here. And the page's outcome words follow the interpreter's."""
from gatelab.papers import claims
from gatelab.papers.claims import Claim, Control
from gatelab.papers.page import outcome
from gatelab.papers.rows import Row

FEATURE = Claim("f", "X", "the ratio falls below 2", "§1", "feature", (), Control("fail"), why="w",
                tests=({"of": "ratio", "below": 2.0},))


def test_a_feature_is_confirmed_only_when_its_control_fails_the_same_tests():
    assert claims.feature(FEATURE, {"ratio": 1.5}, {"ratio": 9.0})[0] == "confirmed"
    word, text = claims.feature(FEATURE, {"ratio": 1.5}, {"ratio": 1.9})  # the control passes too
    assert word == "not shown" and "passes too" in text
    assert claims.feature(FEATURE, {"ratio": 1.5}, None)[0] == "not shown"  # a control declared, none given
    assert claims.feature(FEATURE, {"ratio": 2.5}, {"ratio": 9.0})[0] == "contradicted"


def test_the_page_reads_the_three_outcomes_and_never_counts_an_identity():
    assert outcome(Row("paper", verdict="qualitative: confirmed (test: x)")) == "confirmed"
    assert outcome(Row("paper", verdict="qualitative: contradicted (test: x)")) == "contradicted"
    assert outcome(Row("paper", verdict="qualitative: not shown (test: x)")) == "not shown"
    assert outcome(Row("paper", verdict="borderline (test: x)")) == "not shown"
    assert outcome(Row("paper", verdict="3 of 3 within")) == "confirmed"
    assert outcome(Row("paper", verdict="2 of 3 within")) == "contradicted"
    assert outcome(Row("test", verdict="checked")) == "identity"
