"""The Table 2 report: grouping, statistics, step-size choice, exclusions, determinism."""
import json
import re
import statistics
from pathlib import Path

import pandas as pd
import pytest
import torch

from conftest import TINY_ARCH, make_cfg
from gatelab.papers import report
from gatelab.papers import dgn, npf
from gatelab.core.results import RESULTS_VERSION
from gatelab.training.loop import train


def fake_run(root, arch, opt, dataset, regime, lr, seed, best, status="completed", epochs=3, history=None):
    d = root / f"{arch}-{opt}-{lr}" / regime / f"seed{seed}"
    d.mkdir(parents=True)
    best_epoch = max(history, key=lambda h: h["test_acc"])["epoch"] if history else None
    res = {"version": RESULTS_VERSION, "status": status, "seed": seed, "history": history or [], "best_epoch": best_epoch,
           "best_test_acc": best if status == "completed" else None, "finished_at": f"2026-01-01T00:00:{seed:02d}Z",
           "env": {"git_commit": "abc1234", "device_name": "cpu"},
           "config": {"arch": {"name": arch}, "optimizer": {"name": opt, "lr": lr}, "epochs": epochs,
                      "dataset": {"name": dataset, "limit_train": None, "limit_test": None},
                      "regime": {"name": regime}}}
    (d / "results.json").write_text(json.dumps(res))


@pytest.fixture
def runs(tmp_path):
    root = tmp_path / "runs"
    accs = {0.1: [0.970, 0.972, 0.968], 0.01: [0.980, 0.978, 0.982], 0.001: [0.95, 0.951, 0.949]}
    for lr, values in accs.items():
        for seed, acc in enumerate(values):
            fake_run(root, "fc", "sgd", "mnist", "relu", lr, seed, acc)
    for seed, acc in enumerate([0.9800, 0.9810, 0.9820, 0.9830, 0.9840]):
        fake_run(root, "fc", "adam", "mnist", "dlnpf", 3e-4, seed, acc)
    fake_run(root, "fc", "adam", "mnist", "relu", 3e-4, 0, 0.90)
    fake_run(root, "fc", "adam", "mnist", "relu", 3e-4, 1, None, status="diverged")
    fake_run(root, "fc", "adam", "mnist", "relu", 3e-4, 2, None, status="failed")
    bad = root / "truncated"
    bad.mkdir()
    (bad / "results.json").write_text('{"version": 1, "status": "comp')
    return root


def test_cells_statistics_and_step_size_choice(runs, tmp_path):
    df = npf.write_table2(runs, tmp_path / "out")
    cell = lambda opt, reg: df[(df.optimizer == opt) & (df.regime == reg)].iloc[0]  # noqa: E731
    sgd = cell("sgd", "relu")
    assert sgd.lr == 0.01 and sgd.n == 3  # the best mean of the three step sizes
    assert sgd["mean"] == pytest.approx(98.0) and sgd["std"] == pytest.approx(statistics.stdev([98.0, 97.8, 98.2]))
    assert sgd.paper_mean == 97.85 and sgd["diff"] == pytest.approx(0.15) and sgd.short and not sgd.far
    dl = cell("adam", "dlnpf")
    assert dl.n == 5 and not dl.short and dl["mean"] == pytest.approx(98.2)
    relu = cell("adam", "relu")
    assert relu.n == 1 and relu["mean"] == pytest.approx(90.0) and relu.far  # 8 points below the paper
    assert relu.excluded == "diverged:seed1;failed:seed2"


def test_paper_statistic_ddof0_beside_ours(runs, tmp_path):
    ours = npf.write_table2(runs, tmp_path / "ours")
    paper = npf.write_table2(runs, tmp_path / "paper", ddof=0)
    sgd = lambda df: df[(df.optimizer == "sgd") & (df.regime == "relu")].iloc[0]  # noqa: E731
    assert sgd(paper)["std"] == pytest.approx(statistics.pstdev([98.0, 97.8, 98.2]))
    assert sgd(ours)["std"] == pytest.approx(statistics.stdev([98.0, 97.8, 98.2]))
    assert "population std (ddof=0" in (tmp_path / "paper" / "table2.md").read_text()
    assert "sample std (ddof=1)" in (tmp_path / "ours" / "table2.md").read_text()


def test_tables_read_runs_without_importing_the_training_loop():
    import subprocess
    import sys
    code = ("import sys; import gatelab.papers.npf, gatelab.papers.dgn, gatelab.papers.report; "
            "assert 'gatelab.training.loop' not in sys.modules, 'training loop imported'")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_rendered_files_name_the_exclusions_and_are_reproducible(runs, tmp_path):
    npf.write_table2(runs, tmp_path / "a", command="make x")
    npf.write_table2(runs, tmp_path / "b", command="make x")
    for name in ("table2.md", "table2.csv", "table2.tex"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    md = (tmp_path / "a" / "table2.md").read_text()
    assert "| Arch | Optimiser | Dataset | FRNPF (II) | FRNPF (DI) | DLNPF (β=4) | FLNPF | ReLU |" in md
    assert "**98.00 ± 0.20**† (n=3, lr 0.01)" in md and "paper 97.85 ± 0.09" in md and "Δ +0.15" in md
    assert "diverged:seed1" in md and "truncated" in md and "make x" in md
    assert "the one with the highest mean" in md and "## Step sizes" in md  # three SGD step sizes ran
    csv = pd.read_csv(tmp_path / "a" / "table2.csv")
    assert len(csv) == 3 and set(csv.regime) == {"relu", "dlnpf"}
    assert "98.20$\\pm$0.16 (98.22)" in (tmp_path / "a" / "table2.tex").read_text()


def test_report_reads_real_runs(tiny_root, tmp_path):
    for seed in (0, 1):
        run = tmp_path / "runs" / f"s{seed}"
        train(make_cfg(["arch=fc", *TINY_ARCH["fc"], f"seed={seed}", "optimizer=sgd", "optimizer.lr=0.1"],
                       tiny_root, run), run)
    df = npf.write_table2(tmp_path / "runs", tmp_path / "out", expected_seeds=2)
    (line,) = df.itertuples()
    assert (line.arch, line.optimizer, line.regime, line.n, line.short) == ("fc", "sgd", "relu", 2, False)
    accs = [json.loads((tmp_path / "runs" / f"s{s}" / "results.json").read_text())["best_test_acc"] for s in (0, 1)]
    assert line.mean == pytest.approx(100 * sum(accs) / 2)


def test_cli(runs, tmp_path, capsys):
    npf.main(["table2", "--runs", str(runs), "--out", str(tmp_path / "o"), "--arch", "fc"])
    assert "Table 2" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no results.json"):
        npf.main(["table2", "--runs", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")])


def test_table4_rows_train_and_test_beside_the_paper(tmp_path):
    root = tmp_path / "runs"

    def run(regime, seed, test, train_accs, beta=4.0, eps=0.1, status="completed"):
        d = root / f"{regime}-{beta}-{eps}" / f"seed{seed}"
        d.mkdir(parents=True)
        res = {"version": RESULTS_VERSION, "status": status, "seed": seed, "best_test_acc": test,
               "finished_at": "2026-01-01T00:00:00Z", "env": {"git_commit": "c0ffee0", "device_name": "cpu"},
               "history": [{"epoch": i + 1, "train_acc": a, "test_acc": test} for i, a in enumerate(train_accs)],
               "config": {"arch": {"name": "vconv"}, "optimizer": {"name": "adam", "lr": 3e-4}, "epochs": 2,
                          "dataset": {"name": "cifar10", "limit_train": 1000, "limit_test": 500},
                          "regime": {"name": regime, "beta": beta, "eps": eps}}}
        (d / "results.json").write_text(json.dumps(res))
    run("dln", 0, 0.40, [0.45, 0.50])
    run("dln", 1, 0.38, [0.52, 0.48])
    run("soft_relu", 0, 0.70, [0.9, 0.99], beta=16.0, eps=0.4)
    run("soft_relu", 1, None, [0.9], beta=16.0, eps=0.4, status="diverged")
    df = dgn.write_table4(root, tmp_path / "out", expected_seeds=2, controls=False)
    assert len(df) == 18  # DLN, ReLU, 8 betas x 2 eps: the paper's rows, ours where we have runs
    dln = df[df.regime == "dln"].iloc[0]
    assert dln.n == 2 and dln.train_mean == pytest.approx(51.0) and dln.test_mean == pytest.approx(39.0)
    assert dln.paper_test == pytest.approx(39.39) and not dln.short
    soft = df[(df.beta == 16.0) & (df.eps == 0.4)].iloc[0]
    assert soft.n == 1 and soft.short and soft.test_mean == pytest.approx(70.0) and soft.excluded == "diverged:seed1"
    md = (tmp_path / "out" / "table4.md").read_text()
    assert "| β=16, ε=0.4 | 99.00 | 99.00 | **70.00**† | 71.00 | -1.00 | 1 |" in md
    assert "| Deep linear network | 51.00 ± 1.41 | 50.42 | **39.00 ± 1.41** | 39.39 | -0.39 | 2 |" in md
    assert "+nan" not in md and "| β=1, ε=0.1 | — | 99.00 | **—**† | 59.00 | — | 0 |" in md  # a row without runs


def test_one_step_size_per_row_and_the_length_each_cell_needed(tmp_path):
    """``--lr adam=3e-4`` keeps that step size only; the length section gives, per cell, the best
    epochs and the first epoch within 0.05 points of the final best-so-far mean."""
    root = tmp_path / "runs"
    curves = {0: [90.0, 95.0, 96.0, 96.02, 96.0], 1: [91.0, 94.0, 96.2, 96.1, 96.3]}
    for seed, c in curves.items():
        hist = [{"epoch": e + 1, "test_acc": a / 100, "train_acc": 0.99 + e / 1000} for e, a in enumerate(c)]
        fake_run(root, "fc", "adam", "mnist", "relu", 1e-4, seed, max(c) / 100, epochs=5, history=hist)
        fake_run(root, "fc", "adam", "mnist", "relu", 3e-4, seed, 0.5, epochs=5, history=hist)
    fake_run(root, "fc", "adam", "mnist", "frnpf_ii", 1e-4, 0, None, status="running", epochs=7)  # not counted
    df = npf.write_table2(root, tmp_path / "out", lrs={"adam": 1e-4})
    line = df[df.regime == "relu"].iloc[0]
    assert line.lr == 1e-4 and line.n == 2 and line["mean"] == pytest.approx(96.16)
    # mean best-so-far: 90.5, 94.5, 96.1, 96.11, 96.16 -> within 0.05 of 96.16 first at epoch 4
    assert line["epochs_within_0.05"] == 4 and line.best_epochs == "4;5"
    assert line.rise_last_fifth == pytest.approx((96.02 + 96.3) / 2 - (96.02 + 96.2) / 2)  # epoch 4 -> 5
    assert line.final_train_acc == pytest.approx(99.4) and line.final_test_acc == pytest.approx(96.15)
    assert line.std_other_ddof == pytest.approx(statistics.pstdev([96.02, 96.3]))
    text = (tmp_path / "out" / "table2.md").read_text()
    assert "## Length" in text and "| FC | Adam | ReLU | 0.0001 | 5 | 4;5 | 4 | +0.05 | — | 99.40 |" in text  # not fitted
    chosen = [r for r in report.scan(root)[0] if r.lr == 1e-4 and r.status == "completed"]
    assert report.epochs_to_fit(chosen, 99.2) == 3 and report.epochs_to_fit(chosen[:1], 99.05) == 2
    assert "One step size per row" in text and "highest mean" not in text
    assert "— (no completed seed)<br>paper 96.02 ± 0.13" in text  # the running cell: the paper's number only
    assert "FC/adam/MNIST: 5 epochs, examples train/test all/all" in text  # the scale of the counted runs
    other = npf.write_table2(root, tmp_path / "out3", lrs={"adam": 3e-4})
    assert other[other.regime == "relu"].iloc[0]["mean"] == pytest.approx(50.0)


def test_several_step_sizes_of_a_row_are_labelled_and_listed(tmp_path):
    """Without ``--lr`` a cell that ran Adam at 1e-4 and 3e-4 shows the better one with its lr,
    the rule says so, and the Step sizes section gives both means; one step size: no section."""
    root = tmp_path / "runs"
    for seed, (a, b) in enumerate([(0.980, 0.975), (0.982, 0.973), (0.981, 0.971)]):
        fake_run(root, "fc", "adam", "mnist", "relu", 1e-4, seed, a)
        fake_run(root, "fc", "adam", "mnist", "relu", 3e-4, seed, b)
    fake_run(root, "fc", "adam", "mnist", "dlnpf", 1e-4, 0, 0.983)
    df = npf.write_table2(root, tmp_path / "out")
    assert df[df.regime == "relu"].iloc[0].lr == 1e-4
    text = (tmp_path / "out" / "table2.md").read_text()
    assert "**98.10 ± 0.10** (n=3, lr 0.0001)" in text and "highest mean" in text
    assert "| FC | Adam | ReLU | 0.0003 | 3 | 97.30 ± 0.20 | -0.84 |" in text
    assert "| FC | Adam | ReLU | 0.0001 | 3 | 98.10 ± 0.10 | -0.04 |" in text
    assert "DLNPF (β=4) | 0.0001 | 1 |" not in text.split("## Step sizes")[1]  # one step size: not listed
    steps = pd.read_csv(tmp_path / "out" / "table2_step_sizes.csv")
    assert sorted(steps.lr) == [1e-4, 3e-4] and set(steps.regime) == {"relu"}
    one = npf.write_table2(root, tmp_path / "one", lrs={"adam": 3e-4})  # the table: 3e-4 only
    assert one[one.regime == "relu"].iloc[0]["mean"] == pytest.approx(97.3) and "dlnpf" not in set(one.regime)
    text = (tmp_path / "one" / "table2.md").read_text()
    assert "**97.30 ± 0.20**‡ (n=3, lr 0.0003)" not in text  # one step size in the table: lr not singled out
    assert "| FC | Adam | ReLU | 0.0001 | 3 | 98.10 ± 0.10 | -0.04 |" in text.split("## Step sizes")[1]
    fake_run(root, "fc", "adam", "mnist", "relu", 1e-4, 3, 0.95, status="failed")
    (root / "fc-adam-0.0003").rename(tmp_path / "elsewhere")
    npf.write_table2(root, tmp_path / "none")  # one step size left: no section, no csv
    assert "## Step sizes" not in (tmp_path / "none" / "table2.md").read_text()
    assert not (tmp_path / "none" / "table2_step_sizes.csv").exists()


def test_flnpf_minus_relu_is_paired_over_the_seeds_both_completed(tmp_path):
    root = tmp_path / "runs"
    relu, flnpf = [0.9780, 0.9790, 0.9785], [0.9720, 0.9740, 0.9700]
    for seed in range(3):
        fake_run(root, "fc", "sgd", "mnist", "relu", 0.01, seed, relu[seed])
    for seed in range(2):  # FLNPF seed 2 failed: seed 2 is not a pair
        fake_run(root, "fc", "sgd", "mnist", "flnpf", 0.01, seed, flnpf[seed])
    fake_run(root, "fc", "sgd", "mnist", "flnpf", 0.01, 2, None, status="failed")
    df = npf.write_table2(root, tmp_path / "out")
    g = npf.gap(df).iloc[0]
    diffs = [-0.60, -0.50]
    assert g.pairs == 2 and g.gap == pytest.approx(-0.55) and g.paper_gap == pytest.approx(97.10 - 97.85)
    assert g.se == pytest.approx(statistics.stdev(diffs) / 2 ** 0.5)
    assert "| FC | SGD | MNIST | 2 | -0.55 ± 0.05 | -0.75 |" in (tmp_path / "out" / "table2.md").read_text()


def test_a_cell_is_far_beyond_max_of_two_paper_stds_and_half_a_point(tmp_path):
    """FLNPF/SGD/FC: paper 97.10 ± 0.09, so the bound is max(0.18, 0.5) = 0.5 (not 0.18 + 0.5)."""
    root = tmp_path / "runs"
    fake_run(root, "fc", "sgd", "mnist", "flnpf", 0.01, 0, 0.9770)  # Δ +0.60
    fake_run(root, "fc", "sgd", "mnist", "relu", 0.01, 0, 0.9845)  # Δ +0.60, paper 97.85 ± 0.09
    fake_run(root, "fc", "adam", "mnist", "relu", 1e-4, 0, 0.9860)  # Δ +0.46, paper 98.14 ± 0.07
    fake_run(root, "vconv", "adam", "cifar10", "frnpf_ii", 3e-4, 0, 0.6260)  # Δ -2.26, paper 64.86 ± 1.18
    df = npf.write_table2(root, tmp_path / "out").set_index(["arch", "optimizer", "regime"])
    assert df.loc[("fc", "sgd", "flnpf")].far and df.loc[("fc", "sgd", "relu")].far
    assert not df.loc[("fc", "adam", "relu")].far and not df.loc[("vconv", "adam", "frnpf_ii")].far


def test_a_cell_whose_seeds_ran_different_lengths_is_marked(tmp_path):
    root = tmp_path / "runs"
    fake_run(root, "fc", "sgd", "mnist", "relu", 0.01, 0, 0.9780, epochs=100)
    fake_run(root, "fc", "sgd", "mnist", "relu", 0.01, 1, 0.9790, epochs=300)
    fake_run(root, "fc", "sgd", "mnist", "flnpf", 0.01, 0, 0.9720, epochs=300)
    df = npf.write_table2(root, tmp_path / "out").set_index("regime")
    assert df.loc["relu"].epochs == "100,300" and df.loc["flnpf"].epochs == "300"
    text = (tmp_path / "out" / "table2.md").read_text()
    assert "**97.85 ± 0.07**§ (n=2, lr 0.01)" in text and "**97.20**† (n=1, lr 0.01)" in text


def test_experiment_6_report_from_real_gates_only_runs(tiny_root, tmp_path):
    """Experiment 6 as a report: two tiny gates-only CIFAR runs, their best test accuracies averaged
    beside the published 56%, with the scale and provenance."""
    from gatelab.launch.runner import ensure_run
    common = ["dataset=cifar10", "arch=vconv", "arch.conv_channels=[4,4]", "arch.dense=[16]", "regime=gates_only",
              "optimizer=adam", "epochs=1", f"data.root={tiny_root}", f"out_root={tmp_path / 'runs'}", "device=cpu",
              "progress=false"]
    bests = [ensure_run([*common, f"seed={s}", "checkpoint_steps=[0]"])[2]["best_test_acc"] for s in (0, 1)]
    df = dgn.write_exp6(tmp_path / "runs", tmp_path / "out", command="pytest")
    (line,) = df.itertuples()
    # the control is each run's own net before its first step: its step-0 checkpoint, evaluated the same way
    from gatelab.core import checkpoints
    from gatelab.papers.report import untrained_accuracy
    from gatelab.nets.dgn import stack_models
    from gatelab.nets.regimes import build_model
    from gatelab.data import datasets as data_mod
    from gatelab.training.metrics import evaluate
    untrained = []
    for run in sorted((tmp_path / "runs").rglob("results.json")):
        if "seeds" in run.parent.name:
            continue
        ours = untrained_accuracy(run.parent)
        untrained.append(ours)
        cfg = make_cfg([*common, f"seed={json.loads(run.read_text())['seed']}", "checkpoint_steps=[0]"], tiny_root)
        data = data_mod.load(cfg.dataset, cfg.data, "cpu")
        model, _ = build_model(cfg, data.in_shape, data.out_dim)
        model.load_state_dict(checkpoints.load(run.parent / checkpoints.CKPT_DIR / "step_0.pt")["model"])
        with torch.no_grad():
            assert ours == pytest.approx(100 * evaluate(stack_models([model]), data.test, 4096, data.task, 1)[1][0])
    assert line.untrained_test_mean == pytest.approx(sum(untrained) / 2)
    assert (line.arch, line.n, line.seeds, line.paper_test) == ("vconv", 2, "0,1", 56.0)
    assert line.best_test_mean == pytest.approx(100 * sum(bests) / 2)
    assert line.diff_test == pytest.approx(line.best_test_mean - 56.0)
    md = (tmp_path / "out" / "exp6.md").read_text()
    assert "REDUCED scale" not in md and "- command: `pytest`" in md and "runs: 2 results.json (2 completed)" in md


def test_table4_report_tests_the_stated_features_beside_each_seeds_untrained_net(tiny_root, tmp_path):
    """Table 4 from real tiny runs of the five networks its features name (2 seeds each): each seed's best and
    its net untrained (the run's own step-0 checkpoint, evaluated the same way) are in table4.csv, and the
    report says what the tests find."""
    from gatelab.launch.runner import ensure_run
    from gatelab.core import checkpoints
    from gatelab.data import datasets as data_mod
    from gatelab.nets.dgn import stack_models
    from gatelab.nets.regimes import build_model
    from gatelab.training.metrics import evaluate
    common = ["dataset=cifar10", "arch=vconv", "arch.conv_channels=[4,4]", "arch.dense=[16]", "optimizer=adam",
              "epochs=1", f"data.root={tiny_root}", f"out_root={tmp_path / 'runs'}", "device=cpu", "progress=false"]
    nets = [["regime=relu"], ["regime=dln"]] + [["regime=soft_relu", f"regime.beta={b}", "regime.eps=0.1"] for b in (1, 4, 16)]
    made = {}
    for net in nets:
        for s in (0, 1):
            made[(net[-1], s)] = ensure_run([*common, *net, f"seed={s}", "checkpoint_steps=[0]"])
    df = dgn.write_table4(tmp_path / "runs", tmp_path / "out", command="pytest")
    relu = df[df.regime == "relu"].iloc[0]
    best = report.per_seed(relu)
    assert sorted(best) == [0, 1] and best[1] == pytest.approx(100 * made[("regime=relu", 1)][2]["best_test_acc"], abs=1e-3)
    untrained = report.per_seed(relu, "untrained_per_seed")
    run_dir = Path(made[("regime=relu", 1)][1])
    cfg = make_cfg([*common, "regime=relu", "seed=1", "checkpoint_steps=[0]"], tiny_root)
    data = data_mod.load(cfg.dataset, cfg.data, "cpu")
    model, _ = build_model(cfg, data.in_shape, data.out_dim)
    model.load_state_dict(checkpoints.load(run_dir / checkpoints.CKPT_DIR / "step_0.pt")["model"])
    with torch.no_grad():
        assert untrained[1] == pytest.approx(100 * evaluate(stack_models([model]), data.test, 4096, data.task, 1)[1][0],
                                             abs=1e-3)
    assert (df[df.regime == "soft_relu"].n > 0).sum() == 3 and df[df.eps == 0.4].untrained_per_seed.eq("").all()
    md = (tmp_path / "out" / "table4.md").read_text()
    section = md.split("## What the paper states, tested")[1].split("## Provenance")[0]
    assert re.search(r"\*\*(confirmed|contradicted|not shown|still learning)\*\*: ", section) and "untrained" in section


def _damage(root, seed, edit=None, text=None):
    """Seed ``seed``'s results.json (a sound fake_run) rewritten: ``edit(res)`` or raw ``text``."""
    path = root / "fc-sgd-0.01" / "relu" / f"seed{seed}" / "results.json"
    res = json.loads(path.read_text())
    path.write_text(text if text is not None else json.dumps(edit(res)))
    return path


def test_a_malformed_results_json_is_listed_once_with_its_reason_and_never_counted(tmp_path):
    root = tmp_path / "runs"
    for seed in range(9):
        fake_run(root, "fc", "sgd", "mnist", "relu", 0.01, seed, 0.90 + seed / 100,
                 history=[{"epoch": 1, "train_acc": 0.9, "test_acc": 0.90 + seed / 100}])
    assert npf.write_table2(root, tmp_path / "sound").iloc[0].n == 9  # undamaged, every seed counts
    paths = {3: _damage(root, 3, text='{"version": 1, "status": "compl'),
             4: _damage(root, 4, lambda r: {k: v for k, v in r.items() if k != "config"}),
             5: _damage(root, 5, lambda r: [r]),
             6: _damage(root, 6, lambda r: {k: v for k, v in r.items() if k != "history"}),
             7: _damage(root, 7, lambda r: {**r, "version": 0}),
             8: _damage(root, 8, lambda r: {**r, "config": {k: v for k, v in r["config"].items() if k != "arch"}})}
    found, bad = report.results_below(root)
    assert sorted(p.parent.name for p, _ in found) == ["seed0", "seed1", "seed2", "seed8"]
    assert bad[0].startswith(f"{paths[3]}: not counted: not valid JSON, truncated? (")
    assert bad[1:] == [f"{paths[4]}: not counted: no config", f"{paths[5]}: not counted: not a JSON object but a list",
                       f"{paths[6]}: not counted: a completed run without a history",
                       f"{paths[7]}: not counted: results version 0, this code reads version 1"]
    runs, bad = report.scan(root)  # a config without a field the tables read: listed, no crash
    assert len(runs) == 3 and bad[-1] == f"{paths[8]}: not counted: a field the tables read is missing or " \
                                         "malformed (KeyError: 'arch')"
    df = npf.write_table2(root, tmp_path / "out")
    line = df.iloc[0]
    assert line.n == 3 and line["mean"] == pytest.approx(91.0)  # seeds 0, 1, 2 only
    md = (tmp_path / "out" / "table2.md").read_text()
    not_counted = md.split("## Not counted")[1]
    for seed, path in paths.items():
        assert len([ln for ln in md.splitlines() if str(path) in ln]) == 1, seed
        assert f"- {path}: not counted: " in not_counted


def test_the_page_names_a_malformed_first_run_and_record_run_refuses_one(tmp_path):
    from gatelab.papers import page
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text('{"version": 1, "status": "completed", "config": {"epo')
    with pytest.raises(ValueError, match=r"run/results.json: not counted: not valid JSON, truncated\?"):
        page.record_run(run, tmp_path / "reports")
    first = tmp_path / "reports" / "first-run" / "results.json"
    first.parent.mkdir(parents=True)
    first.write_text(json.dumps({"version": 1, "status": "completed", "history": []}))
    (line,) = page.first_run_lines(tmp_path / "reports")
    assert line == f"({first}: not counted: no config: `python -m gatelab page --record-run <run dir>`)"
