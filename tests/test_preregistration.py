"""Pre-registration read from the runs (issue #54): an item counts only when every run behind its results started
after its claim, from a clean tree that descends from the claim's commit, on held-out seeds; the five loopholes of
the issue each leave it "rule after results"."""
import subprocess

import pandas as pd
import pytest

from gatelab.papers import preregistration as pre

CLAIM = "- {id: c1, item: X, words: w, where: s, kind: ordering, cells: [a, b], confirm: {from: 100, seeds: 3}}\n"


def _git(repo, *args, date="2026-12-01T10:00:00Z"):
    out = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                         env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                              "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "GIT_AUTHOR_DATE": date,
                              "GIT_COMMITTER_DATE": date})
    return out.stdout.strip()


def _head(repo):
    return _git(repo, "rev-parse", "--short", "HEAD")


def _runs(rows):
    return pd.DataFrame([{"run": f"out/seed{s}", "seed": s, "status": "completed", "started_at": at, "commits": c,
                          "dirty": d} for s, at, c, d in rows], columns=pre.COLUMNS)


@pytest.fixture
def repo(tmp_path):
    pre._history.cache_clear()
    _git(tmp_path, "init", "-q")
    (tmp_path / "claims.yaml").write_text(CLAIM)
    _git(tmp_path, "add", "claims.yaml")
    _git(tmp_path, "commit", "-qm", "claim", date="2026-12-01T10:00:00Z")
    yield tmp_path
    pre._history.cache_clear()


def _report(repo, runs, date="2026-12-02T10:00:00Z", values="a,b\n1,2\n"):
    (repo / "report").mkdir(exist_ok=True)
    (repo / "report" / "table.csv").write_text(values)
    runs.to_csv(repo / "report" / pre.RUNS, index=False)
    _git(repo, "add", "report")
    _git(repo, "commit", "-qm", "results", date=date)
    pre._history.cache_clear()
    return pre.check(repo / "claims.yaml", ["c1"], repo / "report" / "table.csv")


def test_fresh_runs_after_the_claim_from_a_clean_tree_on_held_out_seeds_count(repo):
    c = _head(repo)
    reg = _report(repo, _runs([(100, "2026-12-01T11:00:00Z", c, False), (101, "2026-12-01T12:00:00Z", c, False)]))
    assert not reg.after, reg.text()
    assert "pre-registered by its runs" in reg.text()


def test_a_recommitted_csv_does_not_date_its_runs(repo):
    """The issue's first loophole: rewriting the results with the same numbers and committing them after the claim
    counted; without a record of the runs behind them it is rule after results."""
    (repo / "report").mkdir()
    (repo / "report" / "table.csv").write_text("dln\n35.3500\n")
    _git(repo, "add", "report")
    _git(repo, "commit", "-qm", "results", date="2026-11-30T10:00:00Z")
    (repo / "report" / "table.csv").write_text("dln\n35.350\n")
    _git(repo, "commit", "-qam", "same numbers", date="2026-12-02T10:00:00Z")
    pre._history.cache_clear()
    reg = pre.check(repo / "claims.yaml", ["c1"], repo / "report" / "table.csv")
    assert reg.after and "runs.csv" in reg.text()


def test_runs_that_predate_the_claim_are_rule_after_results(repo):
    old = _git(repo, "rev-list", "--max-parents=0", "HEAD")[:7]
    reg = _report(repo, _runs([(100, "2026-11-30T09:00:00Z", old, False)]))
    assert reg.after and "before the claims" in reg.text()


def test_runs_from_a_commit_that_does_not_descend_from_the_claim_are_rule_after_results(repo):
    tree = _git(repo, "hash-object", "-t", "tree", "-w", "/dev/null")
    side = _git(repo, "commit-tree", tree, "-m", "another line of history")[:7]  # has no claim in its past
    reg = _report(repo, _runs([(100, "2026-12-01T11:00:00Z", side, False)]))  # started after the claim, though
    assert reg.after and "not after the claims" in reg.text()


def test_a_dirty_run_is_rule_after_results(repo):
    c = _head(repo)
    reg = _report(repo, _runs([(100, "2026-12-01T11:00:00Z", c, False), (101, "2026-12-01T11:00:00Z", c, True)]))
    assert reg.after and "dirty" in reg.text()


def test_a_seed_used_before_the_claim_is_rule_after_results(repo):
    c = _head(repo)
    reg = _report(repo, _runs([(3, "2026-12-01T11:00:00Z", c, False)]))  # an exploratory seed
    assert reg.after and "held-out" in reg.text()
    # a held-out seed of the same settings trained before the claim (an earlier record), then again after it
    c0 = _git(repo, "rev-list", "--max-parents=0", "HEAD")[:7]
    _report(repo, _runs([(100, "2026-11-30T11:00:00Z", c0, False)]), date="2026-12-01T10:10:00Z")
    reg = _report(repo, _runs([(100, "2026-12-01T11:00:00Z", c, False)]), date="2026-12-02T10:00:00Z")
    assert reg.after and "trained before the claims" in reg.text()


def test_a_claim_committed_together_with_its_results_is_rule_after_results(tmp_path):
    pre._history.cache_clear()
    _git(tmp_path, "init", "-q")
    (tmp_path / "claims.yaml").write_text(CLAIM)
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "table.csv").write_text("a,b\n1,2\n")
    _runs([(100, "2026-12-01T11:00:00Z", "0000000", False)]).to_csv(tmp_path / "report" / pre.RUNS, index=False)
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "claim and results together")
    reg = pre.check(tmp_path / "claims.yaml", ["c1"], tmp_path / "report" / "table.csv")
    assert reg.after and "with the claims" in reg.text()


def test_an_uncommitted_or_untracked_report_is_not_counted(repo):
    c = _head(repo)
    assert not _report(repo, _runs([(100, "2026-12-01T11:00:00Z", c, False)])).after
    (repo / "report" / "table.csv").write_text("a,b\n9,9\n")  # changed after its commit
    assert pre.check(repo / "claims.yaml", ["c1"], repo / "report" / "table.csv").after
    (repo / "new").mkdir()
    (repo / "new" / "table.csv").write_text("a,b\n1,2\n")  # never committed
    _runs([(100, "2026-12-01T11:00:00Z", c, False)]).to_csv(repo / "new" / pre.RUNS, index=False)
    assert pre.check(repo / "claims.yaml", ["c1"], repo / "new" / "table.csv").after


def test_write_runs_records_every_attempt_of_a_run(tmp_path):
    import json
    run = tmp_path / "runs" / "x" / "seed100-abc"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps({
        "version": 1, "status": "completed", "seed": 100, "config": {}, "history": [{}],
        "attempts": [{"at": "2026-12-01T11:00:00Z", "commit": "aaaaaaa", "dirty": False},
                     {"at": "2026-12-01T12:00:00Z", "commit": "bbbbbbb", "dirty": True}]}))
    df = pd.read_csv(pre.write_runs([tmp_path / "runs"], tmp_path / "report"), dtype={"commits": str, "for": str})
    assert df.fillna("").to_dict("records") == [{"run": "runs/x/seed100-abc", "seed": 100, "status": "completed",
                                                 "started_at": "2026-12-01T11:00:00Z", "commits": "aaaaaaa;bbbbbbb",
                                                 "dirty": True, "for": ""}]


def test_a_shared_report_dates_each_file_by_the_runs_that_made_it(repo):
    """Several commands render into one report (paper 002's Figs 1-4, 7-8 and 10): a run made before the claim for
    another file of the report does not spoil this one's, and one made for this file does."""
    c = _head(repo)
    early = {"run": "fig10/seed100", "seed": 100, "status": "completed", "started_at": "2026-11-30T11:00:00Z",
             "commits": c, "dirty": False, "for": "other.csv"}
    fresh = {"run": "table/seed100", "seed": 100, "status": "completed", "started_at": "2026-12-01T11:00:00Z",
             "commits": c, "dirty": False, "for": "table.csv"}
    assert not _report(repo, pd.DataFrame([early, fresh], columns=pre.COLUMNS)).after
    mine = {**early, "for": "other.csv;table.csv"}
    reg = _report(repo, pd.DataFrame([mine, fresh], columns=pre.COLUMNS), date="2026-12-02T11:00:00Z")
    assert reg.after and "fig10/seed100: started 2026-11-30" in reg.text()
    unnamed = {**early, "for": None}  # a row that names no file stands behind every file of the report
    assert _report(repo, pd.DataFrame([unnamed, fresh], columns=pre.COLUMNS), date="2026-12-02T12:00:00Z").after
