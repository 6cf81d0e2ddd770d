"""``python -m gatelab confirm`` (issue #54 §3, #55): every target's command is complete before it runs."""
from pathlib import Path

from gatelab.papers import confirm


def test_every_figure_targets_command_has_its_placeholders_filled(tmp_path):
    """A figure target's {out}, {seed}, {seeds} and {data} are filled by one function, for the dry run and the run
    alike (the dry run once crashed on races-figure7's {data} and {seeds}, which only the run filled)."""
    figures = [t for t in confirm.TARGETS if t.figure]
    assert figures
    for t in figures:
        argv = confirm._figure_argv(t, tmp_path / "out", 100, 3, str(tmp_path / "data"))
        assert not any("{" in a for a in argv), (t.name, argv)
        assert str(tmp_path / "out") in argv
        if any("{seeds}" in a for a in t.figure):
            assert "100,101,102" in argv
        if any("{data}" in a for a in t.figure):
            assert any(str(tmp_path / "data") in a for a in argv)
        if t.runs:  # a figure that trains run.py runs trains them below outputs/confirm/, never beside others
            assert any(a.endswith(f"{confirm.RUNS_ROOT}/{t.runs}") for a in argv), (t.name, argv)


def test_the_targets_cover_distinct_items_and_the_not_built_list_names_none_of_them():
    names = [t.name for t in confirm.TARGETS]
    assert len(names) == len(set(names))
    assert not set(confirm.NOT_BUILT) & set(names)
    items = [i for t in confirm.TARGETS for i in t.items]
    assert len(items) == len(set(items))


def test_a_figure_targets_rows_join_the_report_record_and_name_the_files_it_wrote(tmp_path, monkeypatch):
    """Two targets render into one report: each one's rows replace only its own earlier rows, and ``for`` names the
    files its command wrote (what pre-registration reads for each item)."""
    import pandas as pd
    from gatelab.papers.preregistration import COLUMNS, RUNS, standing_for
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(confirm, "REPORTS_ROOT", str(tmp_path / "reports"))
    monkeypatch.setattr(confirm, "_declared", lambda t: [{"from": 100, "seeds": 1}])
    writes = {"a": "fig_a.csv", "b": "fig_b.csv"}

    def call(argv):  # the figure command: writes its file into --out
        out = Path(argv[argv.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)
        (out / writes[argv[-1]]).write_text("x\n1\n")
        return 0
    monkeypatch.setattr("subprocess.call", lambda argv: call(argv))
    targets = {k: confirm.Target(k, "", "", (), 1, 1, figure=("m", "--out", "{out}", k), report="shared")
               for k in writes}
    for k in ("a", "b", "a"):
        assert confirm.run_figure(targets[k]) == 0
    df = pd.read_csv(tmp_path / "reports" / "shared" / RUNS)
    assert list(df.columns) == COLUMNS and sorted(df.run) == ["a/seed100", "b/seed100"]
    assert list(standing_for(df, "fig_b.csv").run) == ["b/seed100"]


def test_every_item_with_a_result_has_a_confirmation_target():
    """Issue #54 §3: ``confirm --dry-run`` lists, for every item of the page with a result, its seeds and price: each
    such item belongs to a target (an identity or an item with nothing to run has none)."""
    from gatelab.papers import page
    covered = {i for t in confirm.TARGETS for i in t.items}
    missing = [(it.paper, it.item) for it, r in page.rows(page.REPORTS)
               if r.scale not in ("n/a", "test", "none") and (it.paper, it.item) not in covered]
    assert not missing
