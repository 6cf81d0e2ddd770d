"""One table renderer (issue #50 §3, gatelab.papers.tables): Markdown, LaTeX and CSV from one frame of cells; every
committed report CSV has its LaTeX (a twin written by the page, or the report's own); re-rendering a report from
its CSV leaves its numbers as they were, and the migrated reports' tables are byte for byte what they were."""
import shutil

import pandas as pd

from conftest import ROOT
from gatelab.papers import tables

REPORTS = ROOT / "outputs" / "reports"


def _parsed(md: str) -> list[list[str]]:
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in md.splitlines()]
    return [rows[0]] + rows[2:]  # the header, then the body (the alignment row dropped)


def test_one_frame_gives_the_same_cells_in_markdown_latex_and_csv(tmp_path):
    frame = pd.DataFrame([{"regime": "frnpf_ii", "mean": "95.81 ± 0.11", "paper": "95.85<br>Δ -0.04", "share": "50%"},
                          {"regime": "relu", "mean": "0.10", "paper": "", "share": "7 & 8"}])
    numbers = pd.DataFrame([{"regime": "frnpf_ii", "mean": 95.8123}, {"regime": "relu", "mean": 0.1}])
    md = tables.write(frame, tmp_path, "t", caption="Table 2", numbers=numbers)
    assert _parsed(md) == [list(frame.columns), *frame.astype(str).values.tolist()]  # "0.10" stays "0.10"
    tex = (tmp_path / "t.tex").read_text()
    assert r"frnpf\_ii" in tex and r"50\%" in tex and r"7 \& 8" in tex and r"\newline" in tex and "<br>" not in tex
    assert r"\toprule" in tex and r"\caption{Table 2}" in tex
    assert md.splitlines()[1] == "|---|---|---|---|"  # unpadded: a diff shows the cells that changed
    assert r"| x\|y |" in tables.markdown(pd.DataFrame([{"a": "x|y"}]))  # a cell's own bar is escaped
    back = pd.read_csv(tmp_path / "t.csv")
    assert back["mean"].tolist() == [95.8123, 0.1]  # the numbers as given, not the display cells


def test_every_committed_report_csv_has_its_latex_and_the_twins_are_current():
    csvs = [p for p in REPORTS.rglob("*.csv") if not {".parts", ".carried"} & set(p.parts)]
    assert len(csvs) > 50
    assert [p for p in csvs if not p.with_suffix(".tex").is_file()] == []
    assert tables.tex_beside(REPORTS, check=True, full=True) == []  # each twin, rendered again, is what is committed
    twin = (REPORTS / "routing-reduced" / "routing.tex").read_text()
    assert twin.startswith(tables.TWIN)
    first = pd.read_csv(REPORTS / "routing-reduced" / "routing.csv", dtype=str, keep_default_na=False).iloc[0]
    assert all(str(v).replace("_", r"\_").replace("%", r"\%") in twin for v in first if v)


def test_a_report_rendered_again_from_its_csv_keeps_its_numbers(tmp_path):
    """routing's report, rendered through the one renderer from its committed CSV alone (no runs)."""
    from gatelab.papers.routing.table import write_table
    out = tmp_path / "routing-reduced"
    shutil.copytree(REPORTS / "routing-reduced", out)
    (tmp_path / "runs").mkdir()
    write_table(tmp_path / "runs", out, "test", keep=True)
    key = ["task", "regime", "M", "K", "gain", "epochs", "h", "lr", "limits"]
    before = pd.read_csv(REPORTS / "routing-reduced" / "routing.csv").sort_values(key).reset_index(drop=True)
    after = pd.read_csv(out / "routing.csv").sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(before, after)
    assert "| task " in (out / "routing.md").read_text()


def test_the_migrated_tables_render_the_committed_reports_byte_for_byte():
    """Table 4, Table 2 and the routing isolation studies, rendered through the renderer from their committed CSVs: the same
    table lines as the committed reports that the hand-joined code wrote."""
    from gatelab.papers.dgn.table4 import render_table4_markdown
    from gatelab.papers.routing.isolation import render

    def table(text):
        return [line for line in text.splitlines() if line.startswith("|")]
    t4 = REPORTS / "table4-conv-reduced"
    assert table(render_table4_markdown(pd.read_csv(t4 / "table4.csv"), [], [], "x")) == table((t4 / "table4.md").read_text())
    from gatelab.papers.npf.table2 import render_table2_markdown
    t2 = REPORTS / "table2-conv-reduced"
    df = pd.read_csv(t2 / "table2.csv", dtype={"epochs": str, "limits": str})
    assert table(render_table2_markdown(df, [], [], "x")) == table((t2 / "table2.md").read_text())
    for rel in ("routing-isolation", "routing-isolation-leaky"):
        iso = pd.read_csv(REPORTS / rel / "isolation.csv")
        assert table(render(iso, [], "x")) == table((REPORTS / rel / "isolation.md").read_text())


def test_a_table_built_row_by_row_is_the_one_renderers_pipe_table():
    """tables.lines: the cells as str gives them, a cell's own bar escaped, a newline a space, empty cells kept and
    an empty table its header alone (what the hand-joined tables wrote, byte for byte)."""
    from gatelab.papers import tables
    assert tables.lines(["a", "b|c", "d"], [[1, "x | y", ""], [0.5, "two\nlines", None]]) == [
        "| a | b\\|c | d |", "|---|---|---|", "| 1 | x \\| y |  |", "| 0.5 | two lines | None |"]
    assert tables.lines(["a", "a"], []) == ["| a | a |", "|---|---|"]


def test_paper_004s_hand_joined_tables_render_their_committed_reports_byte_for_byte():
    """Issue #57 §3: the races tables moved to the one renderer write the committed reports' bytes from their CSVs
    (Fig 3's lengths and composition, Fig 7 and its isolation)."""
    import importlib
    import pandas as pd
    from conftest import ROOT
    appendix = importlib.import_module("gatelab.papers.races.appendix")
    figures = importlib.import_module("gatelab.papers.races.figures")  # the package's name is its figures() too
    reports = ROOT / "outputs" / "reports"
    for name, render in (("figure3_lengths", figures.lengths_md), ("figure3_composition", figures.composition_md)):
        assert render(pd.read_csv(reports / "races" / f"{name}.csv")) == (reports / "races" / f"{name}.md").read_text()
    for folder in ("races-appendix", "confirm/races-appendix"):
        got = appendix.figure7_md(pd.read_csv(reports / folder / "figure7.csv"), 100000, 200, 5)
        assert got == (reports / folder / "figure7.md").read_text(), folder
    iso = reports / "races-appendix"
    assert appendix.figure7_isolation_md(pd.read_csv(iso / "figure7_isolation.csv")) == \
        (iso / "figure7_isolation.md").read_text()


def test_a_twin_is_rendered_again_only_when_its_csv_or_the_renderer_changed(tmp_path, monkeypatch):
    """The twin's first line stamps the CSV's bytes and the renderer: the page skips an equal stamp (and renders the
    rest), ``full`` renders every twin; a changed cell, or a changed renderer, makes the twin stale."""
    csv = tmp_path / "r" / "t.csv"
    csv.parent.mkdir()
    pd.DataFrame([{"a": "1.5", "b": "x_y"}]).to_csv(csv, index=False)
    assert tables.tex_beside(tmp_path) == [csv.with_suffix(".tex")]
    tex = csv.with_suffix(".tex")
    first, body = tex.read_text().split("\n", 1)
    assert first.startswith(tables.TWIN + "t.csv (sha1 ") and r"x\_y" in body
    tex.write_text(first + "\n" + body.replace(r"x\_y", "edited by hand"))
    assert tables.tex_beside(tmp_path, check=True) == []  # the stamp says current: not rendered
    assert tables.tex_beside(tmp_path, check=True, full=True) == [tex]
    pd.DataFrame([{"a": "1.6", "b": "x_y"}]).to_csv(csv, index=False)
    assert tables.tex_beside(tmp_path) == [tex] and r"x\_y" in tex.read_text() and "1.6" in tex.read_text()
    assert tables.tex_beside(tmp_path, check=True) == []
    real = tables.inspect.getsource
    monkeypatch.setattr(tables.inspect, "getsource", lambda f: real(f) + "# changed")
    monkeypatch.setattr(tables, "_renderer", tables._renderer.__wrapped__)  # read once a process: a new one reads it
    assert tables.tex_beside(tmp_path, check=True) == [tex]  # a new renderer: every twin is rendered again
