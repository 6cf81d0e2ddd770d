"""Paper 004's set-up in the shared machinery: the CIFAR-10 binary task, Gaussian init, step
checkpoints, and iterative magnitude pruning as chained runs."""
import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import make_cfg
from gatelab.analyses import neurons, pruning
from gatelab.core import checkpoints
from gatelab.data import datasets as data_mod
from gatelab.core.config import ConfigError
from gatelab.core.validation import validate
from gatelab.core.runs import run_dir
from gatelab.launch.plan import run_seeds
from gatelab.training.loop import train

RACE = ["+experiment=race", "arch.dense=[12]", "dataset.limit_train=40", "dataset.limit_test=null",
        "optimizer.lr=0.01", "seeds=null", "checkpoint_steps=[]"]


def _load(root, *over):
    cfg = make_cfg(list(over), root)
    return data_mod.load(cfg.dataset, cfg.data, "cpu")


def test_cifar10_binary_groups_classes_grayscale_and_balances_the_source_classes(tiny_root):
    raw = np.load(tiny_root / "cifar10.npz")
    d = _load(tiny_root, "dataset=cifar10_binary", "dataset.limit_train=40", "dataset.normalize=unit")
    assert d.in_shape == (1, 32, 32) and d.out_dim == 2 and d.train.x.dtype == torch.float32
    # limit_train=40: the first 10 of each source class (0, 3 -> class 0; 1, 2 -> class 1), in data order
    keep = np.flatnonzero(np.isin(raw["y_train"], [0, 1, 2, 3]))
    first = np.sort(np.concatenate([keep[raw["y_train"][keep] == c][:10] for c in (0, 1, 2, 3)]))
    want_y = np.where(np.isin(raw["y_train"][first], [0, 3]), 0, 1)
    assert torch.equal(d.train.y, torch.from_numpy(want_y))
    luma = raw["x_train"][first].astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    np.testing.assert_allclose(d.train.x[:, 0].numpy(), luma, rtol=0, atol=255 * 4e-7)
    # the test set: every test image of the four classes
    assert len(d.test) == int(np.isin(raw["y_test"], [0, 1, 2, 3]).sum())
    xb, _ = next(d.train.batches(8))
    torch.testing.assert_close(xb, d.train.x[:8] / 255)


@pytest.mark.parametrize("kind", ["unit", "pm1", "standardize"])
def test_normalisation_is_explicit_and_leaves_the_stored_data_alone(tiny_root, kind):
    d = _load(tiny_root, "dataset=cifar10_binary", f"dataset.normalize={kind}")
    stored = d.train.x.clone()
    xb = torch.cat([b for b, _ in d.train.batches(16)])
    assert torch.equal(d.train.x, stored)  # float storage: scaling must not write into it
    if kind == "unit":
        assert 0 <= xb.min() and xb.max() <= 1
    elif kind == "pm1":
        assert -1 <= xb.min() < 0 < xb.max() <= 1
        torch.testing.assert_close(xb, stored / 127.5 - 1, rtol=0, atol=1e-6)
    else:
        assert abs(float(xb.double().mean())) < 1e-5 and abs(float(xb.double().std()) - 1) < 1e-5
        t = torch.cat([b for b, _ in d.test.batches(16)])  # the test split uses the train statistics
        torch.testing.assert_close(t, (d.test.x - d.train.shift) / d.train.div)


def test_gaussian_init_has_the_requested_scale_and_zero_biases(tiny_root, tmp_path):
    from gatelab.nets import regimes
    for std in (1e-5, 1e-3):
        cfg = make_cfg([*RACE, f"arch.init_std={std}", "arch.dense=[300]"], tiny_root)
        model, _ = regimes.build_model(cfg, (1, 32, 32), 2)
        w1, w2 = model.value.hidden[0].weight.detach(), model.value.head.weight.detach()
        assert abs(float(w1.std()) / std - 1) < 0.01 and abs(float(w2.std()) / std - 1) < 0.1
        assert not model.value.hidden[0].bias.any() and not model.value.head.bias.any()


@pytest.mark.parametrize("over,match", [
    (["arch.init=gaussian"], "init_std"),
    (["dataset=cifar10_binary", "dataset.num_classes=10"], "class_groups"),
    (["dataset=cifar10_binary", "dataset.class_groups=[[0,1],[1,2]]"], "twice"),
    (["imp.sparsity=0.5"], "imp.round"),
    (["+experiment=race", "imp.sparsity=1.5", "imp.round=1"], "imp.sparsity"),
    (["imp.sparsity=0.5", "imp.round=1"], "one-hidden-layer"),
    (["imp.round=2"], "needs imp.sparsity"),
    (["checkpoint_steps=[-1]"], "checkpoint_steps"),
])
def test_bad_paper_004_settings_are_rejected_before_training(over, match):
    with pytest.raises(ConfigError, match=match):
        validate(make_cfg(over))


def test_step_checkpoints_hold_the_weights_after_t_steps(tiny_root, tmp_path):
    # 40 examples, batch 4: 10 steps per epoch. step_10 is the end of epoch 1, step_0 the init.
    cfg = make_cfg([*RACE, "epochs=2", "checkpoint_steps=[0,3,10,13]", "checkpoint_epochs=[0,1]"], tiny_root)
    res = train(cfg, tmp_path / "run")
    assert res["status"] == "completed"
    ck = tmp_path / "run" / "ckpt"
    step = {t: checkpoints.load(ck / f"step_{t}.pt") for t in (0, 3, 10, 13)}
    assert [step[t]["step"] for t in step] == [0, 3, 10, 13] and step[13]["epoch"] == 2
    for t0, name in ((0, "epoch_0.pt"), (10, "epoch_1.pt")):
        other = checkpoints.load(ck / name)["model"]
        assert all(torch.equal(step[t0]["model"][k], other[k]) for k in other)
    w = lambda t: step[t]["model"]["value.hidden.0.weight"]  # noqa: E731
    assert not torch.equal(w(0), w(3)) and not torch.equal(w(3), w(10)) and not torch.equal(w(10), w(13))


def test_step_checkpoints_are_part_of_the_run_key_only_when_asked_for():
    plain = make_cfg(["+experiment=race"])
    assert run_dir(make_cfg(["+experiment=race", "checkpoint_steps=[]"])) != run_dir(plain)
    assert run_dir(make_cfg(["checkpoint_steps=[]"])) == run_dir(make_cfg([]))


def test_imp_rounds_train_in_chain_prune_globally_rewind_and_keep_pruned_weights_at_zero(tiny_root, tmp_path):
    over = [*RACE, "epochs=2", "checkpoint_steps=[0]", f"out_root={tmp_path}"]
    cfg = make_cfg([*over, "imp.sparsity=0.5", "imp.round=3", "seeds=[0,1]"], tiny_root)
    from gatelab.core.runs import seed_run_dirs
    out = run_seeds(cfg)
    assert {s: r["status"] for s, r in out.items()} == {0: "completed", 1: "completed"}
    for seed in (0, 1):
        dirs = [run_dir(make_cfg([*over, f"seed={seed}"] + (["imp.sparsity=0.5", f"imp.round={r}"] if r else []),
                                 tiny_root)) for r in range(4)]
        assert all(json.loads((d / "results.json").read_text())["status"] == "completed" for d in dirs)
        init = checkpoints.load(dirs[0] / "ckpt" / "step_0.pt")["model"]
        prev = None
        for r in (1, 2, 3):
            mask = checkpoints.load(dirs[r] / pruning.MASK_FILE)["mask"]
            total = sum(m.numel() for m in mask.values())
            pruned = sum(int((~m).sum()) for m in mask.values())
            assert pruned == round(neurons.round_sparsity(0.5, 3, r) * total)
            assert set(mask) == {"value.hidden.0.weight", "value.head.weight"}  # biases are never pruned
            if prev is not None:
                assert all(bool((prev[k] | ~mask[k]).all()) for k in mask)  # pruned once, pruned for good
            # the round prunes the smallest final weights of the round before, among those still kept
            parent = checkpoints.load(dirs[r - 1] / "ckpt" / "last.pt")["model"]
            kept = torch.cat([parent[k][mask[k]].abs() for k in mask])
            newly = torch.cat([parent[k][~mask[k] & (prev[k] if prev else torch.ones_like(mask[k]))].abs()
                               for k in mask])
            assert newly.max() <= kept.min()
            start = checkpoints.load(dirs[r] / "ckpt" / "step_0.pt")["model"]
            last = checkpoints.load(dirs[r] / "ckpt" / "last.pt")["model"]
            for k in init:  # rewound: the dense run's initialisation, pruned weights zero
                want = init[k] * mask[k] if k in mask else init[k]
                assert torch.equal(start[k], want)
                if k in mask:
                    assert not last[k][~mask[k]].any() and last[k][mask[k]].ne(start[k][mask[k]]).any()
            prev = mask


def test_an_imp_round_without_its_previous_round_fails_before_training(tiny_root, tmp_path):
    cfg = make_cfg([*RACE, "imp.sparsity=0.2", "imp.round=2", f"out_root={tmp_path}"], tiny_root)
    with pytest.raises(FileNotFoundError, match="imp.round=2 prunes.*not a completed run"):
        train(cfg, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "results.json").read_text())["status"] == "failed"
    assert not (tmp_path / "run" / "ckpt").exists()


# ---- the paper 004 report (gatelab.papers.races) ----

@pytest.fixture(scope="module")
def race_runs(tmp_path_factory):
    """Two seeds of one tiny cell (one failed on purpose is added by the tests), IMP 50% of seed 0."""
    from conftest import write_tiny_data
    from gatelab.core.runs import seed_run_dirs
    base = tmp_path_factory.mktemp("races")
    root = write_tiny_data(base / "data")
    over = [*RACE, "epochs=3", "checkpoint_steps=[0,2,5,10,20,30]", "arch.init_std=1e-3", "optimizer.lr=0.05",
            f"out_root={base / 'runs'}"]
    cfg = make_cfg([*over, "seeds=[0,1]"], root)
    run_seeds(cfg)
    imp = make_cfg([*over, "seeds=[0]", "imp.sparsity=0.5", "imp.round=3"], root)
    run_seeds(imp)
    return base / "runs", root


def test_race_report_counts_clusters_and_merges_as_the_neuron_analyses_do(race_runs):
    from gatelab.papers import races
    runs_dir, root = race_runs
    found, bad = races.scan(runs_dir)
    assert not bad and len(found) == 5  # 2 dense seeds + 3 IMP rounds
    assert sorted((r.seed, r.imp or ()) for r in found) == [(0, ()), (0, (0.5, 1)), (0, (0.5, 2)), (0, (0.5, 3)), (1, ())]
    df = races.table1(found)
    assert len(df) == len(races.TAUS) and set(df.n) == {2} and set(df.N) == {40} and set(df.d) == {12}
    assert not df.main.any()  # d=12, N=40 is not a cell of the paper's grid
    (x, y), (xt, yt) = races.run_data(found[0])
    for _, line in df.iterrows():
        ks, dts = [], []
        for r in (r for r in found if r.imp is None):
            net = races.net_at(r, "last.pt")
            labels = neurons.clusters(neurons.total_weights(net), line.tau)
            ks.append(int(labels.max()) + 1)
            merged = neurons.merge(net, labels)
            dts.append(100 * (merged.accuracy(xt, yt) - net.accuracy(xt, yt)) / net.accuracy(xt, yt))
        assert line.k_mean == pytest.approx(np.mean(ks)) and line.k_std0 == pytest.approx(np.std(ks))
        assert line.k_std1 == pytest.approx(np.std(ks, ddof=1))
        assert line.dacc_test_mean == pytest.approx(np.mean(dts))


def test_race_report_renders_beside_the_paper_and_lists_failed_runs(race_runs, tmp_path):
    import shutil
    from gatelab.papers import races
    runs_dir, root = race_runs
    copy = tmp_path / "runs"
    shutil.copytree(runs_dir, copy)
    # a failed seed: not counted, listed
    failed = next(p for p in copy.rglob("results.json") if "imp" not in str(p) and "seed1-" in str(p))
    res = json.loads(failed.read_text())
    failed.write_text(json.dumps(dict(res, status="failed")))
    df = races.write_table1(copy, tmp_path / "out", command="make races-quick")
    text = (tmp_path / "out" / "table1.md").read_text()
    assert set(df.n) == {1} and "failed:seed1" in text and "make races-quick" in text
    # the paper's values of a cell appear beside ours once our cell is on its grid
    for p in copy.rglob("results.json"):
        r = json.loads(p.read_text())
        r["config"]["arch"]["dense"], r["config"]["dataset"]["limit_train"] = [300], 200
        p.write_text(json.dumps(r))
    df = races.table1(races.scan(copy)[0])
    assert df.main.all() and df[df.tau == 0.95].paper_k.item() == 172.0


def test_loss_drop_is_the_first_step_a_tenth_of_the_way_down():
    import pandas as pd
    from gatelab.papers import races
    curve = pd.DataFrame({"step": [0, 100, 200, 300, 400, 1000], "loss": [0.693, 0.692, 0.68, 0.5, 0.2, 0.0]})
    assert races.drop_step(curve) == 300  # 0.693 - 0.0693 = 0.624
    assert races.drop_step(curve, 0.5) == 400
    assert races.drop_step(curve.iloc[:1]) is None


def test_race_figures_are_written_with_their_data(race_runs, tmp_path, monkeypatch):
    from gatelab.papers import races
    runs_dir, _ = race_runs
    found, _ = races.scan(runs_dir)
    r = next(r for r in found if r.imp is None and r.seed == 0)
    table, info = races.neuron_table(r, found, None, None)
    assert len(table) == 12 and info["early"] in races.step_checkpoints(r)
    mask = checkpoints.load(next(f.path for f in found if f.imp == (0.5, 3)) / pruning.MASK_FILE)["mask"]
    assert table["pruned@0.5"].tolist() == neurons.pruned_per_neuron(mask).tolist()
    assert table["pruned@0.2"].isna().all()  # no 20% IMP runs
    out = races.figure3(found, None, tmp_path)
    assert set(out.panel) == {"3a"} and (tmp_path / "figure3.png").is_file()  # 3b: d=300 cells only
    import shutil
    grid = tmp_path / "grid"  # the runs as the paper's cell σ₀=1e-5, N=200, which Figs 1, 4, 5 draw
    shutil.copytree(runs_dir, grid)
    for p in grid.rglob("results.json"):
        r = json.loads(p.read_text())
        r["config"]["arch"]["init_std"], r["config"]["dataset"]["limit_train"] = 1e-5, 200
        p.write_text(json.dumps(r))
    races.figures(grid, tmp_path / "all")  # the figures of `make races-report` (no text over other axes)
    assert sorted(p.name for p in (tmp_path / "all").glob("*.png")) == ["figure3.png"]  # 1, 4, 5: d=300 runs only (no empty figure)
    monkeypatch.setitem(races.DEFAULT, "d", 12)  # the tiny nets as the paper's d: Figs 1 and 5 too
    stats = races.figures(grid, tmp_path / "every")["figures4_5"]
    assert sorted(p.name for p in (tmp_path / "every").glob("*.png")) == [
        "figure1.png", "figure1a_loss.png", "figure3.png", "figure4.png", "figure5.png"]
    # the ρ of every seed, not only the one drawn; IMP (seed 0 only) gives ρ(pruned) on that seed alone
    assert stats.seed.tolist() == [0, 1] and stats["rho_pruned@0.5"].notna().tolist() == [True, False]
    drawn = pd.read_csv(tmp_path / "every" / "figure4.csv")
    assert set(drawn.seed) == {0}
    per_cell = (tmp_path / "every" / "figures4_5.md").read_text()
    rho = stats.rho_cos_early_log_a_end
    assert f"{rho.mean():.2f} ± {rho.std():.2f} (2)" in per_cell and f"{stats['rho_pruned@0.5'][0]:.2f} (1)" in per_cell
    for _, line in out.iterrows():
        run = next(f for f in found if f.imp is None and f.seed == line.seed)
        labels = neurons.clusters(neurons.total_weights(races.net_at(run, "last.pt")), 0.95)
        assert line.k_end == int(labels.max()) + 1


def test_figures_show_the_main_epochs_and_inputs_only(race_runs):
    import dataclasses
    from gatelab.papers import races
    found, _ = races.scan(race_runs[0])
    longer = [dataclasses.replace(r, epochs=300) for r in found[:1]]
    unit = [dataclasses.replace(r, normalize="unit") for r in found[:1]]
    kept = races.main_runs(found + longer + unit)
    assert kept == found  # the 300-epoch and unit-input variants are left to the checks


def test_figure3_lengths_lists_k_at_each_length_of_a_cell_trained_at_more_than_one(race_runs, tmp_path):
    import shutil
    import pandas as pd
    from gatelab.papers import races
    runs_dir, root = race_runs
    assert not len(races.figure3_lengths(races.scan(runs_dir)[0], tmp_path))  # one length: nothing to compare
    assert not (tmp_path / "figure3_lengths.md").exists()
    grid = tmp_path / "runs"
    shutil.copytree(runs_dir, grid)
    run_seeds(make_cfg([*RACE, "epochs=6", "seeds=[0,1]", "arch.init_std=1e-3", "optimizer.lr=0.05",
                        f"out_root={grid}"], root))  # the same cell trained twice as long
    found, _ = races.scan(grid)
    df = races.figure3_lengths(found, tmp_path)
    assert sorted(zip(df.epochs, df.steps, df.seed)) == [(3, 30, 0), (3, 30, 1), (6, 60, 0), (6, 60, 1)]
    for line in df.itertuples():
        run = next(r for r in found if r.imp is None and (r.seed, r.epochs) == (line.seed, line.epochs))
        assert line.k_end == int(neurons.clusters(neurons.total_weights(races.net_at(run, "last.pt")), 0.95).max()) + 1
    text = (tmp_path / "figure3_lengths.md").read_text()
    for epochs, g in df.groupby("epochs"):
        k = pd.Series(g.k_end.tolist(), dtype=float)
        assert f"| {epochs} | {epochs * 10} | {k.mean():.2f} ± {k.std():.2f} (2) |" in text
    composition = races.figure3_composition(found, tmp_path)  # every length of every cell, as the lengths
    assert sorted(zip(composition.epochs, composition.seed)) == sorted(zip(df.epochs, df.seed))
    for line in composition.itertuples():
        run = next(r for r in found if r.imp is None and (r.seed, r.epochs) == (line.seed, line.epochs))
        net = races.net_at(run, "last.pt")
        labels = neurons.clusters(neurons.total_weights(net), 0.95)
        single = torch.bincount(labels)[labels] == 1
        assert (line.k_end, line.singletons, line.k_99) == (
            int(labels.max()) + 1, int(single.sum()), neurons.clusters_holding(net, labels))
        a = net.w1.norm(dim=1) * net.w2.norm(dim=0)
        assert line.singleton_share == pytest.approx(float(a[single].sum() / a.sum()), rel=1e-12)
        if single.any():  # the nearest other neuron of each singleton, by its cosine (below τ, else it would merge)
            c = neurons.cosine_matrix(neurons.total_weights(net))
            nearest = torch.stack([torch.cat([c[i, :i], c[i, i + 1:]]).max() for i in range(len(c))])
            assert line.singleton_cos == pytest.approx(float(nearest[single].median()), abs=1e-12)
            assert line.singleton_cos < 0.95
            w1 = net.w1.norm(dim=1)
            assert line.singleton_w1 == pytest.approx(float(w1[single].median() / w1.median()), rel=1e-12)
        assert 1 <= line.k_99 <= line.k_end
    table = (tmp_path / "figure3_composition.md").read_text()
    for epochs, g in composition.groupby("epochs"):
        single = pd.Series(g.singletons.tolist(), dtype=float)
        assert f"| {epochs} | {epochs * 10} | 2 |" in table and f"| {single.mean():.2f} ± {single.std():.2f} |" in table


def test_isolation_varies_one_choice_at_a_time_on_the_same_seeds(race_runs, tmp_path):
    import shutil
    from gatelab.papers import races
    runs_dir, _ = race_runs
    grid = tmp_path / "runs"
    shutil.copytree(runs_dir, grid)
    shutil.copytree(grid / next(p.name for p in grid.iterdir()), grid / "lr")  # the runs again, at 4x the step
    for p in grid.rglob("results.json"):  # the runs as the paper's cell σ₀=1e-5, N=200; seed 1 as a 300-epoch run
        r = json.loads(p.read_text())
        r["config"]["arch"]["init_std"], r["config"]["arch"]["dense"] = 1e-5, [300]
        r["config"]["dataset"]["limit_train"], r["config"]["epochs"] = 200, 300 if "seed1-" in str(p) else 100
        if p.is_relative_to(grid / "lr"):
            r["config"]["optimizer"]["lr"] *= 4
        p.write_text(json.dumps(r))
    df = races.write_isolation(grid, tmp_path / "out", command="make races")
    found, _ = races.scan(grid)
    net = races.net_at(next(r for r in found if r.imp is None and r.seed == 0), "last.pt")
    v = {"w1+b1+w2": neurons.total_weights(net), "w1": neurons.total_weights(net, ("w1",))}
    for tau in (0.95, 0.99):
        line = lambda choice, variant: df[(df.choice == choice) & (df.variant.str.startswith(variant))  # noqa: E731
                                          & (df.tau == tau)].iloc[0]
        k = {name: int(neurons.clusters(vec, tau).max()) + 1 for name, vec in v.items()}
        complete = int(neurons.clusters(v["w1+b1+w2"], tau, "complete").max()) + 1
        assert line("default", "single").k_mean == k["w1+b1+w2"] and line("default", "single").seeds == "0"
        assert line("clustering rule", "complete").k_mean == complete
        assert line("clustering rule", "complete").delta_k == complete - k["w1+b1+w2"]
        assert line("weight vector", "w1 only").k_mean == k["w1"]
        assert line("epochs", "300").seeds == "1"  # a trained variant is a group of its own runs
        assert line("step size", "lr 0.2 (the batch's loss summed)").seeds == "0"  # the grid's step: the most common
        assert races.table1(races.scan(grid)[0]).lr.unique().tolist() == [0.05]  # Table 1 shows the grid's step only
        assert line("default", "single").paper_k == races.PAPER_TABLE1[(1e-5, 200)][tau][0]
    text = (tmp_path / "out" / "isolation.md").read_text()
    assert "| **paper** |" in text and "complete linkage" in text and "make races" in text
    # a later render from some of the runs keeps the previous lines these runs do not give, when the default agrees
    previous = pd.read_csv(tmp_path / "out" / "isolation.csv")
    for p in (grid / "lr").rglob("results.json"):
        p.unlink()
    again = races.write_isolation(grid, tmp_path / "out", command="make races")
    kept_md = (tmp_path / "out" / "isolation.md").read_text()
    assert (again.choice == "step size").sum() == 2 and "- kept from the previous isolation.csv" in kept_md
    races.write_isolation(grid, tmp_path / "out", command="make races")  # keeping again: the same bytes
    assert (tmp_path / "out" / "isolation.md").read_text() == kept_md
    key = ["choice", "variant", "N", "tau"]
    pd.testing.assert_frame_equal(again.round(4).sort_values(key, ignore_index=True).astype(str),
                                  previous.round(4)[again.columns].sort_values(key, ignore_index=True).astype(str))
    moved = previous.assign(k_mean=previous.k_mean + (previous.choice == "default"))
    moved.to_csv(tmp_path / "out" / "isolation.csv", index=False)
    with pytest.raises(SystemExit, match="default's k differ"):
        races.write_isolation(grid, tmp_path / "out", command="make races")


def test_loss_trace_records_the_training_loss_at_every_step_of_its_window(tiny_root, tmp_path, caplog):
    """loss_trace=[lo, hi]: each stacked net's full training-set loss after every step in the window;
    a shortened traced run trains the same steps as the main run (its losses equal the main run's
    step checkpoints'), and the report reads the drop from it."""
    import pandas as pd
    from gatelab.papers import races
    # lr 0.02 on the tiny data: the plateau ends near step 60 (at 0.05 the loss never fell, and the drop
    # this test read was step 0 until drop_step learnt that a loss that never fell has none)
    base = [*RACE, "seeds=[0,1]", "checkpoint_steps=[0,4,7,40,50]", "optimizer.lr=0.02", f"out_root={tmp_path}"]
    run_seeds(make_cfg([*base, "epochs=10"], tiny_root))
    run_seeds(make_cfg([*base, "epochs=8", "loss_trace=[0,79]"], tiny_root))
    run_seeds(make_cfg([*base, "epochs=9", "loss_trace=[30,79]"], tiny_root))  # a window after t=0
    with caplog.at_level("WARNING"):  # the trace is not in the run key: a finished run is not retrained
        run_seeds(make_cfg([*base, "epochs=10", "loss_trace=[30,79]"], tiny_root))
    assert "loss_trace=[30, 79] not recorded" in caplog.text
    main, _ = races.scan(tmp_path)
    every, _ = races.scan(tmp_path, traced=True)
    assert len(main) == 2 and not any(r.trace for r in main) and len(every) == 6
    for r in (r for r in every if r.trace):
        trace = pd.read_csv(r.path / races.TRACE)
        assert trace.step.tolist() == list(range(r.trace[0], 80))
        curve = races.loss_curve(r)
        assert curve[curve.source == "every step"].step.tolist() == list(range(r.trace[0], 80))
    drops = races.traced_drops(every, main)
    assert sorted(drops.seed) == [0, 0, 1, 1] and (drops.max_gap_vs_checkpoints < 1e-5).all()
    # a late window measures the plateau at t=0 from the main run: the same drop where it lies in the window
    whole, late = (drops[drops.window == w].set_index("seed") for w in ("0-79", "30-79"))
    assert whole.drop_step.notna().all() and (whole.drop_step > 10).all()  # a plateau, then a drop
    for seed in (0, 1):
        for col in ("drop_step", "half_step"):
            t = whole.loc[seed, col]
            assert late.loc[seed, col] == t if t >= 30 else pd.isna(late.loc[seed, col]), (seed, col, t)
    races.write_table1(tmp_path, tmp_path / "out")
    assert "The loss drop at every step" in (tmp_path / "out" / "table1.md").read_text()
    assert (tmp_path / "out" / "loss_drop.csv").is_file()
    with pytest.raises(ConfigError, match="loss_trace"):
        validate(make_cfg([*RACE, "loss_trace=[5,2]"], tiny_root))


def test_the_outgoing_weights_gradient_ratio_is_norm_times_tan_of_the_angle_to_3pi_4():
    """App. B (eqs. 22-23, Fig 6): with two classes every Δy lies along (1, −1), so for every neuron
    (∂L/∂θ)/(∂L/∂‖w2‖) = ‖w2‖ tan(3π/4 − θ), whatever the weights; autograd's gradient, turned polar."""
    from gatelab.analyses.neurons import OneHidden
    from gatelab.papers.races.appendix import polar_gradient
    g = torch.Generator().manual_seed(3)
    net = OneHidden(torch.randn(40, 6, generator=g), torch.randn(40, generator=g), torch.randn(2, 40, generator=g),
                    torch.randn(2, generator=g))
    x, y = torch.randn(30, 6, generator=g, dtype=torch.float64), torch.randint(0, 2, (30,), generator=g)
    df = polar_gradient(net, x, y)
    assert (df.x.abs() <= math.pi / 2).all() and df.ratio.abs().max() / df.ratio.abs().min() > 10
    np.testing.assert_allclose(df.ratio, df.identity, rtol=1e-9)
    three = OneHidden(net.w1, net.b1, torch.randn(3, 40, generator=g), torch.randn(3, generator=g))
    with pytest.raises(ValueError, match="two classes"):  # the identity is a two-class one: three outputs have no θ
        polar_gradient(three, x, torch.randint(0, 3, (30,), generator=g))


def test_appendix_figures_6_and_7_render_from_the_data_alone(tiny_root, tmp_path):
    from gatelab.papers.races import main
    main(["figure6", "--data", str(tiny_root), "--out", str(tmp_path)])
    s = json.loads((tmp_path / "figure6.json").read_text())
    assert s["d"] == 1000 and s["max_rel_dev"] < 1e-9 and s["decades"] > 1
    main(["figure7", "--data", str(tiny_root), "--out", str(tmp_path), "--sizes", "8,40", "--probes", "400",
          "--seeds", "0,1"])
    df = pd.read_csv(tmp_path / "figure7.csv")
    assert len(df) == 2 * 2 * 2 and (df.stable_cells >= 1).all() and set(df.sign) == {1, -1}
    md = (tmp_path / "figure7.md").read_text()
    assert "| 40 |" in md and "of 4 means lie in the paper's 10-100" in md
    assert (tmp_path / "figure7.png").is_file() and "figure7" in (tmp_path / "PROVENANCE.md").read_text()
    (tmp_path / "figure7.md").unlink()
    main(["figure7", "--out", str(tmp_path), "--replot"])  # from the CSV alone: the same page
    assert (tmp_path / "figure7.md").read_text() == md and "M=400 probes" in md


def test_the_loss_drop_isolation_reads_each_settings_drop_from_its_traced_runs(tiny_root, tmp_path):
    """``drop-isolation`` (issue #39, Fig 1a): per (σ₀, lr), the drop of runs traced from step 0; a 4x step
    (the batch's loss summed instead of averaged) leaves the plateau earlier; runs not traced from 0 or at
    another N are left out."""
    from gatelab.papers import races
    base = [*RACE, "seeds=[0,1]", "checkpoint_steps=[]", "loss_trace=[0,249]", "epochs=25", f"out_root={tmp_path}"]
    for lr in (0.005, 0.02):  # the tiny data's plateau ends near step 140 at 0.005
        run_seeds(make_cfg([*base, f"optimizer.lr={lr}"], tiny_root))
    run_seeds(make_cfg([*base, "optimizer.lr=0.005", "dataset.limit_train=20", "epochs=2"], tiny_root))  # another N
    every, _ = races.scan(tmp_path, traced=True)
    df = races.drop_isolation(every, n=40, d=12, base={"std": every[0].std, "lr": 0.005}).set_index("factor")
    assert list(df.index) == ["base", "lr"] and (df.n == 2).all()
    assert df.loc["lr", "drop_mean"] < df.loc["base", "drop_mean"] and df.loc["lr", "vs_base"] < 1
    by_hand = [races.drop_step(races.loss_curve(r)) for r in every if r.n == 40 and r.config["optimizer"]["lr"] == 0.005]
    assert df.loc["base", "drop_mean"] == pytest.approx(sum(by_hand) / 2)


def test_figure7_isolation_changes_one_choice_at_a_time_and_judges_from_its_csv(tiny_root, tmp_path):
    """Issue #39: Fig 7's count under each open choice. The default line is Fig 7's own count (same data, probes
    and draw); a data draw is another balanced set of the same size; the summary names only the variants
    that move the count in or out of §3's 10-100."""
    from gatelab.papers.races import appendix
    from gatelab.analyses import neurons
    small = {"probes": 300}
    choices = {("default", "d"): small, ("input scale", "unit"): dict(small, normalize="unit"),
               ("data draw", "draw 1"): dict(small, draw=1)}
    df = appendix.figure7_isolation(str(tiny_root), (8, 40), 0, choices, pool=80)
    assert len(df) == 3 * 2 * 2 and set(df.sign) == {1, -1}
    x, y = appendix.training_set(appendix.race_cfg(40), str(tiny_root))
    ref = neurons.stable_cell_trace(x, y, 300, 200, 5, torch.Generator().manual_seed(0), (1, -1))
    base = df[(df.choice == "default") & (df.N == 40)].set_index("sign").stable_cells
    assert base.to_dict() == {sg: t[-1] for sg, t in ref.items()}
    xd, yd = appendix.cells_data(40, str(tiny_root), draw=1, pool=80)
    assert xd.shape == x.shape and int(yd.sum()) == 20 and not torch.equal(torch.as_tensor(xd), torch.as_tensor(x))
    assert torch.equal(torch.as_tensor(appendix.cells_data(40, str(tiny_root), draw=1, pool=80)[0]), torch.as_tensor(xd))
    md = appendix.figure7_isolation_md(df)
    summary = appendix.figure7_isolation_summary(df)
    assert summary in md and f"the default {int(df[df.choice == 'default'].in_paper_range.sum())} of 4" in summary
    rigged = df.copy()
    rigged.loc[rigged.choice == "input scale", "in_paper_range"] = bool(df[df.choice == "default"].in_paper_range.sum() < 4)
    assert "unit: " in appendix.figure7_isolation_summary(rigged)


def _reports(races, runs_dir, out):
    """Every report the races recipe renders (Table 1 both linkages, isolation, figures): {file: bytes} of its text."""
    races.write_table1(runs_dir, out / "t1", command="c")
    races.write_table1(runs_dir, out / "complete", command="c", rule=races.Rule("complete"))
    races.write_isolation(runs_dir, out / "iso", command="c")
    races.figures(runs_dir, out / "fig")
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.suffix in (".md", ".csv")}


def test_the_reports_render_the_same_bytes_from_carried_facts_once_the_checkpoints_are_gone(race_runs, tmp_path,
                                                                                             monkeypatch):
    """What the races reports read of checkpoints and masks is kept in each run's facts.json while recording
    (gatelab.papers.facts), so a run carried without them (issue #55) renders the same tables and figure data."""
    import shutil
    from gatelab.papers import facts, races
    runs_dir, _ = race_runs
    grid = tmp_path / "runs"
    shutil.copytree(runs_dir, grid)
    for p in grid.rglob("results.json"):  # the paper's cell σ₀=1e-5, N=200, so Figs 1, 3b, 4, 5 all draw it
        r = json.loads(p.read_text())
        r["config"]["arch"]["init_std"], r["config"]["dataset"]["limit_train"] = 1e-5, 200
        p.write_text(json.dumps(r))
    monkeypatch.setitem(races.DEFAULT, "d", 12)
    with facts.recording():
        before = _reports(races, grid, tmp_path / "with")
    assert {"fig/figure1.csv", "fig/figure3.csv", "fig/figure4.csv", "fig/figure5.csv", "t1/table1.md",
            "complete/table1.md", "iso/isolation.md"} <= set(before)
    for d in [*grid.rglob(checkpoints.CKPT_DIR)]:
        shutil.rmtree(d)
    for m in grid.rglob(pruning.MASK_FILE):
        m.unlink()
    facts._MEMO.clear()  # a new process: nothing computed before
    assert _reports(races, grid, tmp_path / "without") == before
    # a fact never stored stops the report, naming the run and the key
    dense = next(p.parent for p in grid.rglob("results.json") if "imp" not in str(p))
    kept = json.loads((dense / facts.FACTS).read_text())
    del kept["facts"]["clusters_of:last.pt"]
    (dense / facts.FACTS).write_text(json.dumps(kept))
    with pytest.raises(SystemExit, match=r"clusters_of:last\.pt"):
        races.figures(grid, tmp_path / "again")
    # facts belong to the results.json they were made with: a run trained again has none
    assert facts.stored(dense) and "step_checkpoints" in facts.stored(dense)
    res = dense / "results.json"
    res.write_text(res.read_text() + " ")
    assert facts.stored(dense) == {}
