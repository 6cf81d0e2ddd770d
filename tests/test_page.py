"""The page of what reproduces (issue #30): every item of docs/papers.md has a row, each verdict follows
from the CSV it reads, the committed page and the generated prose are what the CSVs give, and the
numbers the docs quote are the reports'."""
import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT
from gatelab.papers import claims, page, report

REPORTS = ROOT / "outputs" / "reports"


def docs_items() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "papers.md").read_text().split("## Every table, figure and experiment", 1)[1]
    return re.findall(r"^\| (00\d) \| ([^|]+?) \|", text, re.M)


def test_every_item_of_docs_papers_has_one_row_and_no_row_is_extra():
    items = [(it.paper, it.item) for it in page.items()]
    assert sorted(items) == sorted(docs_items()) and len(set(items)) == len(items)
    for paper in ("001", "002", "003", "004"):
        assert sum(p == paper for p, _ in items) >= 8


def test_the_committed_page_and_generated_prose_are_what_the_reports_give():
    """Drift: a report re-rendered without `make page`, or a generated sentence edited by hand, fails here. The page
    names the commits of each item's claims and results (gatelab.papers.preregistration): it needs the history."""
    import subprocess
    shallow = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"], capture_output=True,
                             text=True)
    if shallow.returncode != 0 or shallow.stdout.strip() != "false":
        pytest.skip("not a full git clone: the page's pre-registration column reads the history")
    assert page.write(REPORTS, check=True, readme=ROOT / "README.md") == []


def test_the_readme_links_the_page_first_under_its_results():
    readme = (ROOT / "README.md").read_text()
    first_link = re.search(r"\]\((outputs/reports/[^)]*)\)", readme).group(1)
    assert first_link == "outputs/reports/README.md" and (REPORTS / "README.md").is_file()


def test_every_mean_and_std_the_docs_quote_is_in_a_report():
    """A `mean ± std` typed into the README or docs/ must be a report's, digit for digit (the paper's numbers
    are printed beside ours in every report, so they pass too)."""
    reports = "\n".join(p.read_text() for p in REPORTS.rglob("*.md")).replace("−", "-")
    pat = re.compile(r"[-+]?\d+(?:\.\d+)? ± \d+(?:\.\d+)?")
    for f in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        quoted = pat.findall(f.read_text().replace("−", "-"))
        assert not [q for q in quoted if q not in reports and q.lstrip("+") not in reports], f.name


@pytest.mark.parametrize("diff, std, word", [(0.4, 0.1, "within"), (0.6, 0.1, "off"), (0.6, 0.4, "within"),
                                             (0.9, 0.4, "off"), (0.49, math.nan, "within"), (3.0, math.nan, "off")])
def test_the_one_rule(diff, std, word):
    assert claims.far(diff, std) == (word == "off")
    v = claims.published(50 + diff, 50, std)
    assert v.word == word and v.text.startswith(word)
    if word == "off" and not math.isnan(std):
        assert f"off by {diff / std:.1f} paper-std" in v.text
    if math.isnan(std):
        assert "paper: no std" in v.text


def _copy(tmp_path, *names) -> Path:
    root = tmp_path / "reports"
    for name in names:
        shutil.copytree(REPORTS / name, root / name)
    return root


def test_a_table2_verdict_follows_from_its_csv(tmp_path):
    """The committed FC rows: every cell within, two only by the 0.5 floor (FC Adam DLNPF 2.2 and FLNPF 2.0
    paper-std): borderline, the floor named (issue #47). Moving one cell 1 point (10 paper-std) off turns it into 9 of
    10 and the outcome to differs; with the two floor cells at the paper's mean it agrees."""
    from gatelab.papers.npf.verdicts import table2_fc
    root = _copy(tmp_path, "table2-mnist-full")
    row = table2_fc(root)
    assert row.verdict.startswith("borderline: 10 of 10 within, 2 only by the 0.5 floor") and \
        page.outcome(row) == "not shown" and "FC adam DLNPF (β=4) 2.2 paper-std" in row.verdict
    csv = root / "table2-mnist-full" / "table2.csv"
    df = pd.read_csv(csv)
    floor = (df.optimizer == "adam") & df.regime.isin(["dlnpf", "flnpf"])
    df.loc[floor, "mean"] = df.loc[floor, "paper_mean"]
    df.to_csv(csv, index=False)
    row = table2_fc(root)
    assert row.verdict.startswith("10 of 10 within") and page.outcome(row) == "confirmed"
    csv = root / "table2-mnist-full" / "table2.csv"
    df = pd.read_csv(csv)
    i = df.index[(df.optimizer == "sgd") & (df.regime == "relu")][0]
    df.loc[i, "mean"] = df.loc[i, "paper_mean"] + 1.0
    df.loc[i, "diff"] = 1.0
    df.to_csv(csv, index=False)
    row = table2_fc(root)
    assert row.verdict.startswith("9 of 10 within") and page.outcome(row) == "contradicted"
    assert "off by 11.1 paper-std: Δ +1.00" in row.ours


def test_the_races_table1_block_follows_from_its_csv(tmp_path):
    from gatelab.papers.races.verdicts import table1_block
    root = _copy(tmp_path, "races")
    lines = table1_block(root)
    assert "| 0.001 | 200 | 0.70 | 25.2 ± 5.7 | 21.0 ± 3.7 | within: Δ +4.2 (1.1 paper-std) |" in "\n".join(lines)
    assert "Δacc -17.4 against -14.2 (off by 5.3 paper-std: Δ -3.2)" in lines[-1]
    csv = root / "races" / "table1.csv"
    df = pd.read_csv(csv)
    cell = (df.main.astype(bool)) & (df.sigma0 > 0.0005) & (df.N == 200) & (df.tau == 0.7)
    df.loc[cell, "k_mean"] = 21.0  # exactly the paper's
    df.to_csv(csv, index=False)
    assert "| 0.001 | 200 | 0.70 | 21.0 ± 5.7 | 21.0 ± 3.7 | within: Δ +0.0 (0.0 paper-std) |" in "\n".join(table1_block(root))


def test_a_missing_report_is_a_row_that_says_how_to_make_it(tmp_path):
    got = page.rows(tmp_path)
    assert len(got) == len(page.items())
    for it, row in got:
        assert row.scale in page.SCALES
        if row.scale == "none":
            assert row.verdict == "not run" and row.why


def test_generated_blocks_replace_only_their_own_text():
    text = "a\n<!-- generated: x (python -m gatelab page) -->\nold\n<!-- end: x -->\nb\n"
    assert page.fill(text, "x", ["new", "lines"]) == \
        "a\n<!-- generated: x (python -m gatelab page) -->\nnew\nlines\n<!-- end: x -->\nb\n"
    with pytest.raises(ValueError, match="no generated block"):
        page.fill(text, "y", [])


def test_the_readme_first_run_sentence_is_its_recorded_results(tmp_path):
    import json
    run = tmp_path / "run"
    run.mkdir()
    res = {"version": 1, "status": "completed", "history": [], "config": {"epochs": 10},
           "wall_time_s": 17.4, "best_test_acc": 0.97871, "best_epoch": 9,
           "finished_at": "2026-01-01T00:00:00Z", "env": {"git_commit": "abc1234", "device_name": "x86_64 CPU, 2 threads"}}
    (run / "results.json").write_text(json.dumps(res))
    page.record_run(run, tmp_path / "reports", "python run.py")
    (line,) = page.first_run_lines(tmp_path / "reports")
    assert "10 epochs took 17 s and reached 97.87% test accuracy (epoch 9" in line and "abc1234" in line
    assert "`python run.py`: commit abc1234" in (tmp_path / "reports" / "first-run" / "PROVENANCE.md").read_text()


def test_a_recipes_report_step_renders_the_page_after_its_reports(tmp_path, monkeypatch):
    """A recipe whose figures or reports write under outputs/reports ends with the page, which then has their row."""
    from gatelab.launch import recipes
    monkeypatch.chdir(tmp_path)
    r = recipes.Recipe("t", "test", figures=[["gatelab.papers.dgn", "figure10", "--out", "outputs/reports/dgn-figures"]])
    assert recipes.run_figures_and_reports(r, "test") == []
    text = (tmp_path / "outputs" / "reports" / "README.md").read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("| Fig 10 (experiment 8) |")]
    # its verdict; uncommitted and without a record of its runs, it is not counted (issue #54)
    assert "[dgn-figures](dgn-figures/)" in line and "qualitative: confirmed" in line and "**rule after results**" in line


def test_the_tally_counts_each_experiment_once_and_no_identity_check_as_agreement():
    """An experiment two papers show is one result; a test-suite identity check is not evidence."""
    from gatelab.papers import page
    from gatelab.papers.rows import Item, Row
    agree = Row("paper", verdict="qualitative: confirmed (test: x)")
    got = [(Item("001", "Fig A", "a", None), agree),
           (Item("002", "Fig B", "same as A", None), Row("paper", verdict=agree.verdict, shared=True)),
           (Item("001", "Props", "identities", None), Row("test", verdict="checked by the test suite")),
           (Item("002", "Fig C", "c", None), Row("paper", verdict="qualitative: contradicted (test: y)"))]
    text = page.render(got=got)
    assert "Of the 2 experiments with a result, each counted once (1 items" in text
    assert "): 1 confirmed, 1 contradicted, 0 not shown, 0 not comparable, 0 rule after results" in text


def test_a_rows_run_counts_come_from_its_csv_else_its_provenance(tmp_path):
    """Issue #39: no count in a row's text is typed. The CSV's ``n`` decides; a CSV made before it had
    one falls back to its command's PROVENANCE line; neither gives "?"."""
    from gatelab.papers.dgn import verdicts
    rel = tmp_path / verdicts.FIGS
    rel.mkdir()
    lines = []
    for src, n in (("measured", 7), ("ideal", None)):
        for w in ((25, 500) if src == "measured" else (None,)):
            for i in (1, 2):
                lines.append({"width": w, "depth": 2, "index": i, "eig": 0.5 * i, "ecdf": 0.5 * i * (1 + (w == 25)),
                              "source": src, "n": n})
    pd.DataFrame(lines).to_csv(rel / "dgn_figure1.csv", index=False)
    assert verdicts.figure1(tmp_path).runs == "7 random nets per (w, d)"
    pd.DataFrame(lines).drop(columns="n").to_csv(rel / "dgn_figure1.csv", index=False)
    assert verdicts.figure1(tmp_path).runs == "? random nets per (w, d)"
    (rel / "PROVENANCE.md").write_text(
        "- `python -m gatelab.papers.dgn figures1-4 --scale paper --out x`: commit abc, cpu, scale {'runs': 4, 'steps': 9}\n"
        "- `python -m gatelab.papers.dgn figures7-8 --scale paper`: commit abc, cpu, scale {'seeds': 3}\n")
    assert verdicts.figure1(tmp_path).runs == "4 random nets per (w, d)"
    # paper 001's Figure 3 panels: the seeds of the CSV's seed column; before that column, one curve is one run
    from gatelab.papers.npf import verdicts as npf
    (tmp_path / "figure3-paper").mkdir()
    mid = tmp_path / "figure3-paper" / "figure3_middle.csv"
    pd.DataFrame({"epoch": [0, 1, 0, 1], "nu": [4.0, 3.0, 5.0, 2.0], "seed": [0, 0, 1, 1]}).to_csv(mid, index=False)
    assert npf.figure3_middle(tmp_path).runs == "2 run(s), 1 epochs"
    pd.DataFrame({"epoch": [0, 1, 2], "nu": [4.0, 3.0, 2.0]}).to_csv(mid, index=False)
    assert npf.figure3_middle(tmp_path).runs == "1 run(s), 2 epochs"
    pd.DataFrame({"epoch": [0, 0], "nu": [4.0, 3.0]}).to_csv(mid, index=False)
    assert npf.figure3_middle(tmp_path).runs.startswith("? run(s)")


def test_the_races_isolation_block_bolds_what_the_one_rule_finds_within(tmp_path):
    """races/SUMMARY.md's isolation table is generated: bold exactly where |k − paper| ≤ max(2 paper-std, 0.5),
    and a choice is named "within at all cells" only when it is bold in every cell."""
    from gatelab.papers.races import verdicts
    lines = []
    for choice, variant, k in (("default", "d", {200: 11.0, 800: 81.0}), ("input scale", "s", {200: 15.0, 800: 160.0}),
                               ("epochs", "e", {200: 40.0, 800: 160.0})):
        for n in (200, 800):
            lines.append({"choice": choice, "variant": variant, "N": n, "tau": 0.95, "k_mean": k[n],
                          "delta_k": 0.0 if choice == "default" else k[n] - (11.0 if n == 200 else 81.0)})
    (tmp_path / "races").mkdir()
    pd.DataFrame(lines).to_csv(tmp_path / "races" / "isolation.csv", index=False)
    out = "\n".join(verdicts.isolation_block(tmp_path))
    assert "| input scale: s | **15.0 (+4.0)** | **160.0 (+79.0)** |" in out  # paper 15.3 ± 6.3, 156 ± 11.3
    assert "| epochs: e | 40.0 (+29.0) | **160.0 (+79.0)** |" in out  # 40 is 3.9 paper-std above 15.3
    assert "| default: d | **11.0** | 81.0 |" in out
    assert "Within at all 2 cells: input scale: s." in out


def test_the_page_says_which_run_records_are_not_committed(tmp_path, capsys):
    """A report rendered but not committed: its items read "rule after results" on the page (only committed run
    records date runs), so ``gatelab page`` names the records that wait to be committed, and none once they are."""
    import subprocess

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       check=True, capture_output=True)
    reports = tmp_path / "outputs" / "reports"
    (reports / "done").mkdir(parents=True)
    (reports / "done" / "runs.csv").write_text("run,seed\nr/seed0,0\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "a committed report")
    assert page.main(["--reports", str(reports), "--check"]) in (0, 1)
    assert "not committed" not in capsys.readouterr().err
    (reports / "new").mkdir()
    (reports / "new" / "runs.csv").write_text("run,seed\nr/seed1,1\n")  # rendered, not committed
    (reports / "done" / "runs.csv").write_text("run,seed\nr/seed0,0\nr/seed2,2\n")  # changed since its commit
    page.main(["--reports", str(reports), "--check"])
    err = capsys.readouterr().err
    assert "2 run record(s) not committed" in err and "done/runs.csv" in err and "new/runs.csv" in err, err
    git("add", "-A")
    git("commit", "-qm", "the reports committed")
    page.main(["--reports", str(reports), "--check"])
    assert "not committed" not in capsys.readouterr().err
