"""``python -m gatelab confirm`` (issue #54 §3, #55): every target's command is complete before it runs."""
from pathlib import Path

import pytest

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


def test_a_figure_target_that_trains_run_py_runs_is_priced_by_the_plan_from_what_is_left(tmp_path, monkeypatch):
    """dgn-figures7-8, figure3 and figure3-left train run.py runs inside their figure commands: the dry run prices
    them as a recipe's figure runs (their net-steps on every entry), counting only the runs with steps left; a
    target that draws fresh nets (routing-toy) has no plan price."""
    import re
    from gatelab.launch import costs
    monkeypatch.chdir(tmp_path)  # no runs on disk: every run is left
    table = costs.load(runs=None)
    by = {t.name: t for t in confirm.TARGETS}
    assert set(confirm.FIGURE_RUNS) == {t.name for t in confirm.TARGETS if t.runs}  # every target with run.py runs
    text = confirm.figure_price(by["dgn-figures7-8"], 100, 2, None, table)
    assert re.match(r"12 runs left; price here: about [\d.]+ (s|min|h) on ", text), text  # 6 networks x 2 seeds
    assert "not measured" not in text.split("(Zen 3)")[0]
    assert confirm.figure_price(by["figure3"], 100, 1, None, table).startswith("2 runs left; price here: about ")
    left = confirm.figure_price(by["figure3-left"], 100, 2, None, table)
    assert left.startswith(f"{len(confirm.FIGURE_RUNS['figure3-left'](100, 2, []))} runs left"), left
    assert confirm.figure_price(by["routing-toy"], 100, 1, None, table) is None
    # the first declared seed's ReLU run completed on disk: 11 runs left, and its price is gone from the total
    import json
    from omegaconf import OmegaConf
    from gatelab.core.results import RESULTS_VERSION
    from gatelab.core.runs import compose, run_dir
    first = min(int(c["from"]) for c in confirm._declared(by["dgn-figures7-8"]))  # the claims' held-out block
    relu = compose(["progress=false", *confirm.FIGURE_RUNS["dgn-figures7-8"](first, 2, ["out_root=outputs/confirm/dgn7-paper"])[0]])
    run_dir(relu).mkdir(parents=True)
    (run_dir(relu) / "results.json").write_text(json.dumps({
        "version": RESULTS_VERSION, "status": "completed", "seed": first, "config": OmegaConf.to_container(relu),
        "history": [], "wall_time_s": 1.0, "env": {}}))
    assert confirm.figure_price(by["dgn-figures7-8"], first, 2, None, table).startswith("11 runs left"), text
    out = confirm.dry_run([by["dgn-figures7-8"], by["routing-toy"]], None)
    assert f"seed {first} (declared in the claims); 47 runs left; price here: about " in out  # 8 seeds, one completed
    assert "routing-toy" in out and "not priced by the plan: about 20 s" in out


def test_confirm_refuses_before_training_when_its_runs_could_not_pre_register(tmp_path, monkeypatch, capsys):
    """Uncommitted code (every run would record a dirty tree) or a row of the shared report's runs.csv that names no
    file (it stands behind this target's files too, with its earlier date): exit 2 naming why, nothing trained."""
    from gatelab.core import results
    monkeypatch.setattr(confirm, "REPORTS_ROOT", str(tmp_path / "reports"))
    trained = []
    monkeypatch.setattr(confirm, "run", lambda t, data, jobs, slurm=None: trained.append(t.name) or 0)
    tree = {"git_dirty": True, "git_diff_sha1": "abc", "git_changed": ["src/gatelab/nets/dgn.py"]}
    monkeypatch.setattr(results, "git_tree", lambda top=None: dict(tree))
    assert confirm.main(["dgn-figure10"]) == 2 and not trained
    assert "uncommitted changes (src/gatelab/nets/dgn.py)" in capsys.readouterr().err
    tree.update(git_dirty=False, git_diff_sha1=None, git_changed=None)
    record = tmp_path / "reports" / "dgn-figures-paper" / "runs.csv"
    record.parent.mkdir(parents=True)
    record.write_text("run,seed,status,started_at,commits,dirty,for\n"
                      "dgn-figures7-8/seed100,100,completed,2026-12-06T01:46:22Z,8990d2b,False,\n")
    assert confirm.main(["dgn-figure10"]) == 2 and not trained
    assert "the row of dgn-figures7-8/seed100 names no file" in capsys.readouterr().err
    record.write_text(record.read_text().replace("False,\n", "False,dgn_figure7.csv\n"))
    assert confirm.main(["dgn-figure10"]) == 0 and trained == ["dgn-figure10"]
    record.write_text(record.read_text().replace("dgn-figures7-8/", "dgn-figure10/").replace("dgn_figure7.csv", ""))
    assert confirm.main(["dgn-figure10"]) == 0  # its own earlier row: the run replaces it


def test_the_dry_run_says_how_many_of_figures1_4s_fresh_nets_are_kept(tmp_path, monkeypatch):
    """Paper 002's Figs 1-4 draw fresh nets and keep each as it finishes: the dry run counts those of the held-out
    runs (a net of the exploratory runs 0-9 is not one of them)."""
    from gatelab.papers.dgn import figures
    monkeypatch.setattr(confirm, "REPORTS_ROOT", str(tmp_path / "reports"))
    parts = tmp_path / "reports" / "dgn-figures-paper" / figures.PARTS
    parts.mkdir(parents=True)
    for kind, w, d, run in (("frg", 25, 2, 100), ("frg", 500, 20, 109), ("relu", 100, 4, 104), ("frg", 25, 2, 0)):
        (parts / figures._part_name(kind, "square", w, d, run, 1000)).write_text("{}")
    by = {t.name: t for t in confirm.TARGETS}
    assert confirm._nets_done(by["dgn-figures1-4"], 100, parts.parent) == \
        f"3 of its 210 nets done ({parts}; it resumes there)"
    assert confirm._nets_done(by["dgn-figure10"], 100, parts.parent) == ""


def test_figures1_4s_row_in_runs_csv_is_made_of_its_kept_nets(tmp_path, monkeypatch):
    """Figs 1-4's row in runs.csv comes from its kept nets, not from the command that last rendered them: the first
    net's time, every commit that made one (nets carried in git from another session's machine keep theirs), dirty
    where any net was made from a dirty tree or records nothing; nets of the exploratory runs 0-9 are not its."""
    import json
    import subprocess
    import pandas as pd
    from gatelab.papers.dgn import figures
    monkeypatch.setattr(confirm, "REPORTS_ROOT", str(tmp_path / "reports"))
    out = tmp_path / "reports" / "dgn-figures-paper"
    (out / figures.PARTS).mkdir(parents=True)
    for (kind, w, d, run), made in {
            ("frg", 25, 2, 100): {"at": "2026-12-07T11:00:00Z", "commit": "bbb", "dirty": False},
            ("frg", 500, 20, 109): {"at": "2026-12-06T10:00:00Z", "commit": "aaa", "dirty": False},
            ("relu", 100, 4, 104): {"at": "2026-12-07T12:00:00Z", "commit": "aaa", "dirty": False},
            ("frg", 25, 2, 0): {"at": "2026-11-01T00:00:00Z", "commit": "old", "dirty": True}}.items():
        (out / figures.PARTS / figures._part_name(kind, "square", w, d, run, 1000)).write_text(json.dumps({"made": made}))

    def render(argv):  # the figure command, its nets already kept: it renders the CSVs
        (out / "dgn_figure3.csv").write_text(f"x\n{len(list(out.glob('.parts/*')))}\n")
        return 0
    monkeypatch.setattr(subprocess, "call", render)
    t = {t.name: t for t in confirm.TARGETS}["dgn-figures1-4"]
    assert confirm.run_figure(t) == 0
    row = pd.read_csv(out / "runs.csv", dtype=str, keep_default_na=False).to_dict("records")
    assert row == [{"run": "dgn-figures1-4/seed100", "seed": "100", "status": "completed",
                    "started_at": "2026-12-06T10:00:00Z", "commits": "aaa;bbb", "dirty": "False",
                    "for": "dgn_figure3.csv"}]
    (out / figures.PARTS / figures._part_name("galu", "square", 100, 6, 100, 1000)).write_text("{}")  # says nothing
    assert confirm.run_figure(t) == 0
    row = pd.read_csv(out / "runs.csv", dtype=str, keep_default_na=False).to_dict("records")
    assert len(row) == 1 and row[0]["dirty"] == "True" and row[0]["started_at"] == ""


def test_confirm_on_slurm_queues_the_held_out_runs_and_status_renders_them_once_done(tmp_path, monkeypatch, capsys):
    """``confirm TARGET --slurm`` queues exactly the runs a run here would train (the held-out seeds, below
    outputs/confirm/) with a journal of its own, after the same preflight (a dirty tree queues nothing); a figure
    target is one job running ``confirm TARGET`` on a node; ``--status`` renders the reports and runs.csv only once
    every job is done (3 while one is queued, 1 when one failed)."""
    from gatelab.core import results
    from gatelab.launch import submit
    from conftest import write_tiny_data
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GATELAB_DATA", str(write_tiny_data(tmp_path / "data")))
    monkeypatch.setattr(results, "git_tree", lambda top=None: {"git_dirty": False})
    queued = []
    monkeypatch.setattr(submit, "submit", lambda name, waves, figures, folder, params: queued.append(
        (name, [r.dir for w in waves for s in w for r in s.runs], figures, folder, params)) or [])
    assert confirm.main(["dgn-figure5", "--slurm", "--slurm-set", "partition=gpu"]) == 0
    (name, runs, figures, folder, params), = queued
    assert folder == Path("outputs/slurm/confirm-dgn-figure5-reduced") and params["partition"] == "gpu"
    assert len(runs) == 18 and all(str(d).startswith("outputs/confirm/") for d in runs)
    assert sorted({int(Path(d).name.split("-")[0][4:]) for d in runs}) == [100, 101, 102]  # the held-out seeds
    queued.clear()
    assert confirm.main(["dgn-figure10", "--slurm"]) == 0
    assert queued[0][1] == [] and queued[0][2] == [["gatelab", "confirm", "dgn-figure10"]]
    monkeypatch.setattr(results, "git_tree", lambda top=None: {"git_dirty": True, "git_changed": ["src/x.py"]})
    queued.clear()
    assert confirm.main(["dgn-figure5", "--slurm"]) == 2 and not queued and "uncommitted" in capsys.readouterr().err
    monkeypatch.setattr(results, "git_tree", lambda top=None: {"git_dirty": False})
    assert confirm.main(["dgn-figure5", "--status"]) == 2  # nothing submitted: no journal
    rendered, states = [], ["pending"]
    monkeypatch.setattr(submit, "load_journal", lambda folder: [submit.Entry("a", 1, [], [])])
    monkeypatch.setattr(submit, "status", lambda es: [submit.Status(e, states[0]) for e in es])
    monkeypatch.setattr(confirm, "render", lambda r: rendered.append(r.name) or 0)
    assert confirm.main(["dgn-figure5", "--status"]) == 3 and not rendered
    states[0] = "failed"
    assert confirm.main(["dgn-figure5", "--status"]) == 1 and not rendered
    states[0] = "done"
    assert confirm.main(["dgn-figure5", "--status"]) == 0 and rendered == ["dgn-figure5"]


def test_finished_runs_carried_in_git_resume_a_target_on_a_fresh_machine(tmp_path, monkeypatch, capsys):
    """``confirm --carry`` keeps each final run's results.json, and the ReLU checkpoint an FLNPF run still to train
    copies, in outputs/reports/confirm/.carried; on a machine with no outputs/confirm, ``unpack`` puts them back, so
    the plan trains only what is left (its FLNPF source found); once nothing reads the checkpoint it is dropped; a
    run carried from other code stops the target before it trains, and a run directory with an attempt of its own
    keeps it."""
    import json
    import shutil
    from gatelab.launch import plan, recipes
    from gatelab.core.runs import compose
    from gatelab.papers import confirm_carry as carry
    from conftest import TINY_ARCH, write_tiny_data
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GATELAB_DATA", str(write_tiny_data(tmp_path / "data")))
    r = recipes.Recipe("t", "t", [["regime=flnpf", "arch=fc", *TINY_ARCH["fc"], "epochs=1", "seeds=[100]",
                                   "progress=false", "out_root=outputs/confirm/t"]])

    def left(waves):
        return [[x.steps for s in w for x in s.runs] for w in waves]
    waves = recipes.plan_recipe(r)
    assert len(waves) == 2 and all(n > 0 for w in left(waves) for n in w)
    for s in waves[0]:
        plan.run(compose(s.overrides))  # the ReLU source only: the session ends before its FLNPF run
    assert carry.pack(r) == {"runs": 1, "new": 1, "sources": 1}
    assert sorted(p.name for p in carry.CARRIED.rglob("*")if p.is_file()) == ["best.pt", "results.json"]
    shutil.rmtree("outputs/confirm")  # the next machine
    relu = {Path(x.dir) for x in waves[0][0].runs}
    assert carry.carried_here(r) == (relu, [])  # what its dry run counts as done, before anything is put back
    monkeypatch.setattr(confirm, "recipe_of", lambda t, data: (r, "100"))
    text = confirm.dry_run([confirm.Target("t", "t", "x", (), 1, 1)], None)
    assert "1 runs left (1 more carried in git, put back first); price here" in text, text
    assert carry.pack(r)["sources"] == 1  # a pack there before its unpack keeps the source its FLNPF run needs
    assert carry.unpack(r) == 1
    assert carry.carried_here(r) == (set(), [])  # back here: the plan itself counts it
    waves = recipes.plan_recipe(r)  # checks the FLNPF source: present, and the one its results.json names
    assert len(waves) == 1 and "flnpf" in str(waves[0][0].runs[0].dir) and left(waves)[0][0] > 0  # ReLU done
    for s in waves[0]:
        plan.run(compose(s.overrides))
    assert carry.pack(r) == {"runs": 2, "new": 1, "sources": 0}
    assert not list(carry.CARRIED.rglob("*.pt"))  # no run reads it any more
    shutil.rmtree("outputs/confirm")
    assert carry.unpack(r) == 2 and all(n == 0 for w in left(recipes.plan_recipe(r)) for n in w)
    own = next(Path("outputs/confirm").rglob("results.json"))
    shutil.rmtree("outputs/confirm")
    own.parent.mkdir(parents=True)
    (own.parent / ".lock").write_text("")  # an attempt of this machine's own, begun before the unpack
    assert carry.unpack(r) == 1 and not own.exists()
    path = next(carry.CARRIED.rglob("results.json"))
    res = json.loads(path.read_text())
    res["attempts"][0]["commit"] = "0" * 40
    path.write_text(json.dumps(res))
    shutil.rmtree("outputs/confirm")
    assert carry.carried_here(r)[1] == ["0" * 40]  # the dry run names the code the carried runs need
    try:
        carry.unpack(r)
        raise AssertionError("a run carried from unknown code was put back")
    except SystemExit as e:
        assert "0" * 40 in str(e) and not Path("outputs/confirm").exists()
    assert confirm.main(["dgn-figure5", "--carry"]) == 0  # the command a carrying loop calls: nothing to carry yet
    assert "dgn-figure5: carried in outputs/reports/confirm/.carried: {'runs': 0, 'new': 0, 'sources': 0}" in \
        capsys.readouterr().out


def test_races_runs_carried_without_checkpoints_resume_their_imp_chain_and_render_the_same_reports(tmp_path,
                                                                                                  monkeypatch):
    """Paper 004's runs carried in git (issue #55): a pack records what the reports read of each final run's
    checkpoints (facts.json) and the keep-mask of each IMP round whose parent is final; on a fresh machine the rounds
    left train from those masks, bit for bit as they would have on the first machine, and the reports render the same
    bytes from runs whose checkpoints never came back."""
    import math
    import shutil
    import torch
    from gatelab.analyses import pruning
    from gatelab.core import checkpoints
    from gatelab.core.runs import compose
    from gatelab.launch import plan, recipes
    from gatelab.papers import confirm_carry as carry, facts, races
    from conftest import write_tiny_data
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GATELAB_DATA", str(write_tiny_data(tmp_path / "data", n_train=600)))
    monkeypatch.setitem(races.DEFAULT, "d", 12)  # the tiny nets as the paper's d, in its cell σ₀=1e-5, N=200
    monkeypatch.delenv("GATELAB_STRICT_FIGURES", raising=False)  # 2 epochs of 12 neurons: legends over the data
    root = "outputs/confirm/races"
    r = recipes.Recipe("races", "races", [[
        "+experiment=[race,race_imp]", "imp.sparsity=0.5", "arch.dense=[12]", "dataset.limit_train=200",
        "dataset.limit_test=null", "arch.init_std=1e-5", "optimizer.lr=0.05", "epochs=2",
        "checkpoint_steps=[0,5,20,50]", "seeds=[100,101]", "progress=false", f"out_root={root}"]], reports=[
        ["gatelab.papers.races", "table1", "--runs", root, "--out", "reports/table1", "--command", "{command}"],
        ["gatelab.papers.races", "figures", "--runs", root, "--out", "reports/figures"]])
    waves = recipes.plan_recipe(r)
    assert len(waves) == 4  # the dense runs, then IMP rounds 1, 2 and 3

    def train(ws):
        for w in ws:
            for s in w:
                plan.run(compose(s.overrides))

    def rendered():
        for argv in r.reports:
            races.main(argv[1:])
        facts._MEMO.clear()
        return {str(p): p.read_bytes() for p in sorted(Path("reports").rglob("*")) if p.suffix in (".md", ".csv")}

    def trained(level):  # each seed's keep-mask and final weights of an IMP round
        out = {}
        for d in sorted(Path(root).rglob(f"relu-imp0.5-r{level}/*/results.json")):
            out[d.parent.name] = (checkpoints.load(d.parent / pruning.MASK_FILE)["mask"],
                                  checkpoints.load(d.parent / checkpoints.CKPT_DIR / "last.pt")["model"])
        return out
    train(waves[:1])
    recording = carry.record_facts

    def round_1_ends_meanwhile(r):
        got = recording(r)
        train(waves[1:2])
        return got
    monkeypatch.setattr(carry, "record_facts", round_1_ends_meanwhile)
    assert carry.pack(r) == {"runs": 2, "new": 2, "sources": 2}  # round 2's two masks, from round 1's weights
    monkeypatch.setattr(carry, "record_facts", recording)
    assert not list(carry.CARRIED.rglob("relu-imp0.5-r1/*/results.json"))  # final after the facts: the next pack's
    assert carry.pack(r) == {"runs": 4, "new": 2, "sources": 2}  # the first machine stops after round 1
    masks = sorted(carry.CARRIED.rglob(pruning.CARRIED_MASK))
    assert [m.parent.parent.name for m in masks] == ["relu-imp0.5-r2"] * 2
    assert sorted({p.suffix for p in carry.CARRIED.rglob("*") if p.is_file()}) == [".json", ".pt"]
    assert not list(carry.CARRIED.rglob(checkpoints.CKPT_DIR))  # no checkpoint travels
    assert len(list(carry.CARRIED.rglob(facts.FACTS))) == 2  # the dense runs': the reports read them
    for m in masks:  # bit-packed: a byte holds 8 entries of the bool mask
        got = checkpoints.load(m)
        assert {k: b.numel() for k, b in got["bits"].items()} == {k: -(-math.prod(s) // 8)
                                                                   for k, s in got["shapes"].items()}
    train(waves[2:])  # the first machine, had it lived: the reference
    reference, before = {k: trained(k) for k in (2, 3)}, rendered()
    shutil.rmtree("outputs/confirm")
    shutil.rmtree("reports")
    assert carry.unpack(r) == 4  # a fresh machine: the dense runs and round 1, without checkpoints
    assert not list(Path(root).rglob(checkpoints.CKPT_DIR))
    left = recipes.plan_recipe(r)
    assert len(left) == 2 and all("imp0.5-r2" in str(x.dir) for s in left[0] for x in s.runs)
    x = left[0][0].runs[0]  # a mask made from another parent's results (trained again since) is not used
    mask_file = Path(x.dir) / pruning.CARRIED_MASK
    kept = mask_file.read_bytes()
    checkpoints.save(mask_file, **dict(checkpoints.load(mask_file), parent_results_sha256="0" * 64))
    with pytest.raises(FileNotFoundError, match="not a completed run"):
        pruning.make_mask(x.config)
    mask_file.write_bytes(kept)
    train(left)
    for level in (2, 3):  # the same masks and weights as the first machine's
        got = trained(level)
        assert got.keys() == reference[level].keys()
        for k, (mask, model) in got.items():
            ref_mask, ref_model = reference[level][k]
            assert all(torch.equal(mask[n], ref_mask[n]) for n in ref_mask)
            assert all(torch.equal(model[n], ref_model[n]) for n in ref_model)
    assert carry.pack(r)["sources"] == 0 and not list(carry.CARRIED.rglob(pruning.CARRIED_MASK))  # all final
    after = rendered()  # Table 1 and the figures' data from facts where the checkpoints are gone
    assert after.keys() == before.keys() and len(after) >= 10
    for name, text in after.items():  # rounds 2-3 were trained again: their finishing times are the provenance's
        assert text.partition(b"## Provenance")[0] == before[name].partition(b"## Provenance")[0], name
