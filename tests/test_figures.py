"""Figure 3 equivalents end to end on tiny data: the runs, the kernels over training, the files."""
import pandas as pd
import matplotlib
import pytest

from gatelab.papers import dgn, npf

TINY = {"left": dict(relu_epochs=2, stages=[1, 2], flnpf_epochs=1, data=["arch.conv_channels=[4,4]", "arch.dense=[16]"]),
        "middle": dict(epochs=2, data=[]), "right": dict(epochs=2, data=["arch.dense=[16,16]"])}


def test_figure3_panels_write_png_pdf_csv(tiny_root, tmp_path, monkeypatch):
    monkeypatch.setitem(npf.SCALES, "tiny", TINY)
    out = tmp_path / "out"
    npf.main(["figure3", "--scale", "tiny", "--runs", str(tmp_path / "runs"), "--out", str(out),
                  f"data.root={tiny_root}", "device=cpu"])
    for panel in ("left", "middle", "right"):
        for ext in ("png", "pdf", "csv"):
            assert (out / f"figure3_{panel}.{ext}").stat().st_size > 0
    prov = (out / "PROVENANCE.md").read_text()
    assert "python -m gatelab.papers.npf figure3 --scale tiny" in prov and "commit" in prov and "relu_epochs" in prov
    left = pd.read_csv(out / "figure3_left.csv")
    assert left.source_epoch.tolist() == [1, 2] and (left.cntk_published == 77.43).all()
    middle = pd.read_csv(out / "figure3_middle.csv")
    assert middle.epoch.tolist() == [0, 1, 2] and (middle.nu > 0).all()
    right = pd.read_csv(out / "figure3_right.csv")
    assert {"trace_Kv", "trace_Kf", "fro_Kv", "fro_Kf"} <= set(right.columns)
    assert (right.trace_Kf > 0).all() and (right.fro_Kv <= right.trace_Kv + 1e-6).all()  # ‖K‖_F ≤ tr K for PSD K
    assert {tuple(df.seed.unique()) for df in (left, middle, right)} == {(0,)}  # the seed that ran, for the page
    # the training runs are ordinary runs: a second call finds and reuses them
    before = sorted(p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("results.json"))
    npf.main(["figure3", "--scale", "tiny", "--panels", "middle", "--runs", str(tmp_path / "runs"),
                  "--out", str(out), f"data.root={tiny_root}", "device=cpu"])
    assert sorted(p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("results.json")) == before
    with pytest.raises(SystemExit):
        npf.main(["figure9"])
    for panel in ("left", "middle", "right"):
        (out / f"figure3_{panel}.png").unlink()
    assert npf.replot(out, "quick") == ["figure3_left", "figure3_middle", "figure3_right"]
    assert all((out / f"figure3_{panel}.png").stat().st_size > 0 for panel in ("left", "middle", "right"))


def test_figure3_left_over_seeds_keeps_each_seeds_stages_and_their_untrained_control(tiny_root, tmp_path, monkeypatch):
    """The left panel with ``seeds`` and ``controls`` (the reduced scale's shape): a row per (seed, stage), each
    FLNPF net's untrained accuracy beside its trained one, and the page's row judges the rise over the seeds."""
    from gatelab.papers.npf import verdicts
    seeded = {"left": dict(TINY["left"], seeds=[0, 1], controls=True)}
    monkeypatch.setitem(npf.SCALES, "tiny-seeds", seeded)
    out = tmp_path / "reports" / "figure3-reduced"
    npf.main(["figure3", "--scale", "tiny-seeds", "--panels", "left", "--runs", str(tmp_path / "runs"), "--out", str(out),
              f"data.root={tiny_root}", "device=cpu"])
    left = pd.read_csv(out / "figure3_left.csv")
    assert sorted(zip(left.seed, left.stage)) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert left.flnpf_untrained_acc.between(0, 100).all()
    relu = sorted(p.parent.name.split("-")[0] for p in (tmp_path / "runs").rglob("relu/seed*/results.json"))
    assert relu == ["seed0", "seed1"]  # each seed's FLNPF nets take their gates from that seed's ReLU run
    # what a recipe's dry run prices (figure3_runs) is what the figure trained: the same run directories
    from gatelab.core.runs import compose, run_dir
    common = [f"out_root={tmp_path / 'runs'}", f"data.root={tiny_root}", "device=cpu"]
    priced = {str(run_dir(compose(["progress=false", *o]))) for o in npf.figure3_runs(["left"], seeded, common)}
    trained = {str(p.parent) for p in (tmp_path / "runs").rglob("seed*-*/results.json") if "seeds" not in p.parent.name}
    assert priced == trained and len(priced) == 2 * (1 + 1 + 2)  # per seed: ReLU, FRNPF-II, FLNPF at 2 stages
    row = verdicts.figure3_left(tmp_path / "reports")
    assert row.scale == "reduced" and "over 2 seeds" in row.verdict and "untrained" in row.verdict
    assert row.verdict.startswith(("qualitative: confirmed", "qualitative: contradicted", "qualitative: not shown"))


def test_figures7_8_price_exactly_the_runs_they_train(monkeypatch, tiny_root):
    """The dgn-figures recipe's dry run prices Figures 7-8's runs (``figure7_8_runs``): the run directories the
    figure asks ``ensure_run`` for, the learned gates' ReLU source among them, in the order it trains them."""
    from gatelab.core.runs import compose, run_dir
    from gatelab.launch import recipes
    from gatelab.launch.recipes import Options
    from gatelab.papers.dgn import adaptable_gates as fig7
    from gatelab.papers.reproduce import discover
    asked = []

    def fake_run(overrides):
        cfg = compose(["progress=false", *overrides])
        asked.append(str(run_dir(cfg)))
        return cfg, run_dir(cfg), {"history": [{"epoch": 1, "train_acc": 0.5, "test_acc": 0.5}]}
    monkeypatch.setattr(fig7, "ensure_run", fake_run)
    monkeypatch.setattr(fig7, "_nu_over_training", lambda cfg, d, every: [dict.fromkeys(fig7.NU_COLUMNS, 1.0) | {"epoch": 0}])
    scale, common = dict(fig7.FIG7_SCALES["quick"], seeds=2), ["out_root=outputs/dgn7-x", f"data.root={tiny_root}"]
    fig7.figure7_8_data(scale, common)
    priced = [str(run_dir(compose(["progress=false", *o]))) for o in fig7.figure7_8_runs(scale, common)]
    assert priced == asked and len(priced) == 2 * (1 + len(fig7.FIG7_NETWORKS) + 1)
    learned = [o for o in fig7.figure7_8_runs(scale, common) if "regime=learned_gates" in o]
    assert [next(x for x in o if x.startswith("regime.source=")).split("=", 1)[1] for o in learned] == asked[::7]
    discover()
    r = recipes.build("dgn-figures", Options("quick", data=str(tiny_root)))
    assert r.figure_runs == fig7.figure7_8_runs(fig7.FIG7_SCALES["quick"], ["out_root=outputs/dgn7-quick", f"data.root={tiny_root}"])
    # at this scale the ReLU source is the ReLU network (the same key): the dry run prices it once
    steps = recipes.figure_steps(r)
    assert len(steps) == len(set(priced)) // 2 == 1 + len(fig7.FIG7_NETWORKS)


def _left(root, trained: dict, untrained: dict, frnpf: float = 20.0):
    """A reduced-scale figure3_left.csv: stage -> per-seed accuracies, trained and untrained."""
    d = root / "figure3-reduced"
    d.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([{"stage": k, "source_epoch": k, "seed": s, "flnpf_best_test_acc": trained[k][s],
                   "flnpf_untrained_acc": untrained[k][s], "relu_best_test_acc": 27.0, "frnpf_ii_best_test_acc": frnpf}
                  for k in trained for s in range(len(trained[k]))]).to_csv(d / "figure3_left.csv", index=False)
    from gatelab.papers.npf import verdicts
    return verdicts.figure3_left(root).verdict


def test_figure3_left_needs_a_rise_of_2_se_that_the_untrained_nets_do_not_show(tmp_path):
    """Fig 3 left's two claims (the stages rise; FLNPF-1 above FRNPF) and the untrained control shown equivalent:
    confirmed; a noisy rise is not shown; a fall is contradicted; untrained nets that rise too leave it not shown;
    FLNPF-1 below FRNPF-II leaves it not shown."""
    flat = {1: [10.0, 10.2, 9.9], 2: [10.1, 9.8, 10.0], 3: [9.9, 10.1, 10.0]}
    rising = {1: [24.0, 25.0, 24.5], 2: [26.0, 26.5, 27.0], 3: [28.0, 29.0, 28.5]}
    assert _left(tmp_path / "a", rising, flat).startswith("qualitative: confirmed")
    noisy = {1: [24.0, 29.0, 24.5], 2: [26.0, 26.5, 27.0], 3: [25.0, 29.0, 26.0]}  # +0.8 at a s.e. of 2: not shown
    assert _left(tmp_path / "b", noisy, flat).startswith("qualitative: not shown")
    falling = {1: [28.0, 29.0, 28.5], 2: [26.0, 26.5, 27.0], 3: [24.0, 25.0, 24.5]}
    assert _left(tmp_path / "c", falling, flat).startswith("qualitative: contradicted")
    assert _left(tmp_path / "d", rising, rising).startswith("qualitative: not shown")  # the untrained nets rise too
    assert _left(tmp_path / "e", rising, flat, frnpf=24.5).startswith("qualitative: not shown")  # FLNPF-1 ≈ FRNPF


def test_frg_gram_entries_follow_eq_5():
    """DGN-FRG (paper 002): E[K0]/d has 1 on the diagonal and µ^(d-1) off it (eq. (5))."""
    import torch
    entries = dgn.frg_entries({"depths": [2, 4], "entry_runs": 20}, torch.Generator().manual_seed(0))
    for row in entries.itertuples():
        assert abs(row.diag - 1) < 0.1 and abs(row.offdiag - 0.5 ** (row.depth - 1)) < 0.05
        assert 0 < row.offdiag_std and abs(row.offdiag - 0.5 ** (row.depth - 1)) < 4 * row.offdiag_std / 20 ** 0.5
    spectrum = dgn.ideal_frg_spectrum(4)
    assert float(spectrum.sum()) == pytest.approx(200.0) and float(spectrum[-1]) == pytest.approx(1 + 199 / 8)


def test_experiment_8_dln_kernel_and_rate():
    """Paper 002 experiment 8: a DLN with ±σ weights, σ² = 1/w, d_in = n = 1. At d = 2, K0 = w σ² + w σ² = 2
    in every draw; at any depth the first GD step's rate is (1 − α K0)² to first order in α = 0.1/d
    (the ideal 0.81 where K0 = E[K0] = d), and K_t and the rate move only once training has begun."""
    import torch
    scale = dict(depths=[2, 4], w=64, runs=3, steps=8, rate=0.81)
    df = dgn.exp8_data(scale)
    first = df[df.step == 0]
    assert first[first.depth == 2].K.tolist() == pytest.approx([2.0] * 3, rel=1e-12)
    for r in first.itertuples():
        assert r.rate == pytest.approx((1 - 0.1 / r.depth * r.K) ** 2, abs=0.02)
    assert (df[df.step == 0].K_over_K0 == 1).all() and (df.groupby(["depth", "run"]).K_over_K0.last() > 1).all()
    summ = dgn.exp8_summary(df)
    assert summ.K0_ideal.tolist() == [2.0, 4.0] and summ.K0.iloc[0] == pytest.approx(2.0)
    # Figure 4's inputs: the paper's experiment 2 (U([-1,1]^2), n=100) and the sphere variant
    from gatelab.papers.dgn.figures import _inputs
    x, y, d_in = _inputs("galu", torch.Generator().manual_seed(0))
    assert x.shape == (100, 2) and d_in == 2 and x.abs().max() <= 1 and y.shape == (100,)
    x, _, d_in = _inputs("relu", torch.Generator().manual_seed(0), "sphere10")
    assert x.shape == (200, 10) and x.norm(dim=1).tolist() == pytest.approx([1.0] * 200)


def test_figure10_writes_and_replots(tmp_path):
    summ = dgn.figure10(tmp_path, dict(depths=[2, 3], w=16, runs=2, steps=5, rate=0.81))
    assert summ.depth.tolist() == [2, 3] and pd.read_csv(tmp_path / "dgn_figure10_summary.csv").depth.tolist() == [2, 3]
    (tmp_path / "dgn_figure10.png").unlink()
    assert "dgn_figure10" in dgn.replot(tmp_path, "quick") and (tmp_path / "dgn_figure10.png").stat().st_size > 0


def test_the_figures1_4_command_says_which_cpus_made_its_nets(tmp_path, monkeypatch):
    """PROVENANCE.md's line of ``figures1-4`` counts its nets by the CPU that made each (nets carried in git from
    another session's machine keep theirs), read from the kept nets, not from the machine that rendered them."""
    import json
    from gatelab.core.machine import cpu_model
    from gatelab.papers.dgn import figures as F
    scale = dict(depths=[2], widths=[8], runs=2, runs_fig4=1, entry_runs=2, steps=3, w_galu=8)
    monkeypatch.setitem(dgn.FRG_SCALES, "quick", scale)
    F.frg_data(scale, "relu", parts=tmp_path / F.PARTS)  # a net kept by another session's machine
    part = next((tmp_path / F.PARTS).glob("relu-*.json"))
    doc = json.loads(part.read_text())
    part.write_text(json.dumps({**doc, "made": {**doc["made"], "cpu": "a Zen 5"}}))
    dgn.main(["figures1-4", "--scale", "quick", "--out", str(tmp_path)])
    assert f"'nets made on': {{'{cpu_model()}': 3, 'a Zen 5': 1}}" in (tmp_path / "PROVENANCE.md").read_text()


def test_dgn_figures_write_files_and_gd_converges(tmp_path):
    scale = dict(depths=[2, 4], widths=[16], runs=1, entry_runs=2, steps=20, w_galu=16)
    for kind, res in dgn.figures1_4(scale, tmp_path).items():
        final = res["convergence"].groupby(["width", "depth"]).err_ratio.last()
        assert (final < 1).all() and (final > 0).all()
    names = ["dgn_figure1", "dgn_figure2", "dgn_figure3", "dgn_figure4_galu", "dgn_figure4_relu"]
    for name in names:
        assert all((tmp_path / f"{name}.{ext}").stat().st_size > 0 for ext in ("png", "pdf", "csv"))
    # a committed report is redrawn from its CSVs by the current code: same data, new PNGs, one provenance line
    csvs = {p.name: p.read_bytes() for p in tmp_path.glob("*.csv")}
    for name in names:
        (tmp_path / f"{name}.png").unlink()
    dgn.main(["replot", "--scale", "quick", "--out", str(tmp_path)])
    assert all((tmp_path / f"{name}.png").stat().st_size > 0 for name in names)
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*.csv")} == csvs
    assert "python -m gatelab.papers.dgn replot --scale quick" in (tmp_path / "PROVENANCE.md").read_text()


def test_a_kept_net_says_what_made_it_and_nets_of_other_code_stop_figures1_4_before_it_trains(tmp_path):
    """Each kept net records its time, commit, tree state and CPU (a confirmation's runs.csv is made of them; they
    travel in git between sessions' machines); a net kept by other code (a commit whose src/ differs, or one git
    does not know) stops figures1_4 before it trains anything: nets of two codes are never averaged."""
    import json
    from gatelab.core.results import git_commit
    from gatelab.papers.dgn import figures as F
    scale = dict(depths=[2], widths=[8], runs=2, runs_fig4=1, entry_runs=2, steps=3, w_galu=8)
    parts = tmp_path / F.PARTS
    F.frg_data(dict(scale, runs=1), "frg", parts=parts)
    made = F.parts_made(scale, parts, ("frg",))
    assert len(made) == 1 and made[0]["commit"] == git_commit() and made[0]["dirty"] in (True, False)
    assert made[0]["at"].endswith("Z") and made[0]["cpu"]
    assert F.stale_parts(scale, parts, ("frg",)) == []
    part = parts / F._part_name("frg", "square", 8, 2, 0, 3)
    doc = json.loads(part.read_text())
    part.write_text(json.dumps({**doc, "made": {**doc["made"], "commit": "0000000"}}))
    assert F.stale_parts(scale, parts, ("frg",)) == ["0000000"]
    with pytest.raises(SystemExit, match="made by code at 0000000"):
        F.figures1_4(scale, tmp_path, kinds=("frg",))
    assert F.nets_done(scale, parts, ("frg",)) == (1, 2) and not list(tmp_path.glob("*.csv"))  # nothing trained


def test_frg_nets_are_seeded_by_their_key_and_a_rerun_resumes_from_the_finished_ones(tmp_path):
    """Raising the nets per (w, d) keeps the nets that ran (each is seeded by its key, not by its place in one
    stream), and a rerun reads a finished net from ``.parts`` instead of training it again."""
    from gatelab.papers.dgn import figures as F
    scale = dict(depths=[2, 3], widths=[8], runs=1, entry_runs=2, steps=5, w_galu=8)
    one = F.frg_data(scale, "frg", parts=tmp_path)
    files = sorted(p.name for p in tmp_path.glob("*.json"))
    assert files == ["frg-square-w8-d2-run0-steps5.json", "frg-square-w8-d3-run0-steps5.json"]
    two = F.frg_data(dict(scale, runs=2), "frg", parts=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 4 and (two["convergence"].n == 2).all()
    runs = {r: F._one_net("frg", "square", 8, 3, r, 5, None)["err_ratio"] for r in (0, 1)}
    assert runs[0] != runs[1]  # two nets, not one drawn twice
    mean = two["convergence"].query("depth == 3").err_ratio.tolist()
    assert mean == pytest.approx([(a + b) / 2 for a, b in zip(runs[0], runs[1])], rel=1e-12)
    assert one["convergence"].query("depth == 3").err_ratio.tolist() == pytest.approx(runs[0], rel=1e-12)
    # a finished net is read, not retrained: a doctored part shows through; another step count is another key
    part = tmp_path / "frg-square-w8-d3-run1-steps5.json"
    part.write_text(part.read_text().replace("[1.0,", "[7.0,", 1))
    assert F.frg_data(dict(scale, runs=2), "frg", parts=tmp_path)["convergence"].query(
        "depth == 3 and step == 0").err_ratio.item() == pytest.approx(4.0)
    F.frg_data(dict(scale, runs=1, steps=6), "frg", parts=tmp_path)
    assert len(list(tmp_path.glob("*steps6.json"))) == 2 and not list(tmp_path.glob("*.tmp"))
    # a second worker fills from the far end and stops at the first finished net it meets
    three = dict(scale, runs=3)  # 6 nets; runs 0 and 1 of both depths are done
    assert F.fill_backwards(three, "frg", "square", tmp_path) == 1  # d=3 run 2; then d=3 run 1 is found
    assert (tmp_path / "frg-square-w8-d3-run2-steps5.json").exists()
    assert not (tmp_path / "frg-square-w8-d2-run2-steps5.json").exists()
    assert F.fill_backwards(three, "frg", "square", tmp_path) == 0


def test_figure7_and_8_on_tiny_data(tiny_root, tmp_path):
    scale = dict(epochs=2, source_epochs=2, data=[], seeds=1, nu_every=1)
    df = dgn.figures7_8(scale, [f"out_root={tmp_path / 'runs'}", f"data.root={tiny_root}", "device=cpu"], tmp_path)
    assert set(df.network) == {"soft-GaLU β=4", "soft-ReLU β=4", "ReLU", "GaLU frozen", "frozen ReLU", "learned gates"}
    nu = pd.read_csv(tmp_path / "dgn_figure8.csv")
    assert sorted(nu.epoch.unique()) == [0, 1, 2] and (nu.nu > 0).all() and (nu.nu_value > 0).all()
    by = nu.set_index(["network", "epoch"])
    # Fig 8's Gram choices: a tied ReLU net's NTK is its value block alone; the gating block Kᵃ exists
    # for the soft-gated net only (hard gates have no gradient), and there ν(K̂ᵃ) = trace(Kᵃ)·ν(Kᵃ) > 0
    assert by.loc["ReLU"].nu.tolist() == pytest.approx(by.loc["ReLU"].nu_value.tolist(), rel=1e-9)
    assert by.loc["soft-GaLU β=4"].nu_gate.notna().all() and (by.loc["soft-GaLU β=4"].nu_gate_raw > 0).all()
    assert by.drop("soft-GaLU β=4").nu_gate.isna().all()
    assert (by.loc["soft-GaLU β=4"].nu != by.loc["soft-GaLU β=4"].nu_value).all()
    assert (tmp_path / "dgn_figure7.png").stat().st_size > 0


def test_provenance_is_one_line_per_command_and_rewritten_byte_for_byte(tmp_path):
    """Re-rendering the same runs rewrites the same bytes (issue #20): a command's line is replaced,
    not appended again; another command gets its own line."""
    from gatelab.papers import plotting
    plotting.write_provenance(tmp_path, "gatelab.papers.npf", ["figure3", "--scale", "quick"], {"a": 1}, "t0")
    first = (tmp_path / "PROVENANCE.md").read_bytes()
    plotting.write_provenance(tmp_path, "gatelab.papers.npf", ["figure3", "--scale", "quick"], {"a": 1}, "t1")
    assert (tmp_path / "PROVENANCE.md").read_bytes() == first
    plotting.write_provenance(tmp_path, "gatelab.papers.dgn", ["figures1-4"], {"b": 2}, "t2")
    lines = (tmp_path / "PROVENANCE.md").read_text().splitlines()
    assert len(lines) == 2 and lines[0].encode() + b"\n" == first


def test_the_overlap_check_sees_a_colour_bar_drawn_over_a_neighbour():
    from gatelab.papers import plotting
    fig, ax = plotting.plt.subplots(1, 2, figsize=(6, 3))
    sc = ax[0].scatter([0, 1], [0, 1], c=[0, 1])
    cax = fig.add_axes([0.45, 0.1, 0.2, 0.8])  # a colour bar over both panels
    fig.colorbar(sc, cax=cax, label="value")
    assert plotting.overlaps(fig)
    plotting.plt.close(fig)
    fig, ax = plotting.plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    sc = ax[0].scatter([0, 1], [0, 1], c=[0, 1])
    fig.colorbar(sc, ax=ax[0], label="value")
    ax[0].set(title="a", xlabel="x", ylabel="y")
    ax[1].set(title="b", xlabel="x", ylabel="y")
    assert plotting.overlaps(fig) == []
    plotting.plt.close(fig)


def test_the_legend_check_sees_a_legend_over_points_and_bars_but_not_beside_them():
    from gatelab.papers import plotting
    from gatelab.papers.plotting import plt
    fig, ax = plt.subplots()
    ax.plot([0, 0.05, 1, 2], [2, 1.95, 1, 0], "o-", label="falls from the top left")
    ax.legend(loc="upper left")
    assert plotting.legend_over_data(fig)
    ax.legend(loc="lower left")
    assert plotting.legend_over_data(fig) == []
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.bar([0, 1], [5, 1], label="bars")
    ax.axvline(0.5, label="a reference line is not data")
    ax.legend(loc="upper left")
    assert plotting.legend_over_data(fig)
    ax.legend(loc="upper right")
    assert plotting.legend_over_data(fig) == []
    plt.close(fig)
    fig, ax = plt.subplots()  # a segment through the legend with both its vertices outside
    ax.plot([0, 1], [1, 1], "-", label="crosses the top")
    ax.plot([0, 1], [0, 0.5], label="stays low")
    ax.set_ylim(-0.1, 1.05)
    ax.legend(loc="upper center")
    assert plotting.legend_over_data(fig)
    ax.legend(loc="center")
    assert plotting.legend_over_data(fig) == []
    plt.close(fig)


def test_dgn_figures_2_7_and_8_show_the_seed_spread_where_the_csv_has_it():
    """Means over seeds with their std (ddof 1) as a band in the curve's colour (Fig 7 in %, Fig 8 on
    a log axis as mean ×/÷ (1 + std/mean), never reaching zero); one seed (std NaN) or an older CSV
    without std columns draws the means alone and says "mean"."""
    from gatelab.papers.dgn import adaptable_gates, figures
    from gatelab.papers.plotting import plt
    runs = pd.DataFrame({"network": ["ReLU"] * 4, "epoch": [1, 1, 2, 2], "seed": [0, 1, 0, 1],
                         "train_acc": [0.5, 0.7, 0.8, 0.9], "test_acc": [0.4, 0.6, 0.5, 0.5]})
    df = adaptable_gates._mean_std(runs, ["train_acc", "test_acc"])
    assert df.test_acc.tolist() == pytest.approx([0.5, 0.5])
    assert df.test_acc_std.tolist() == pytest.approx([0.02 ** 0.5, 0.0])
    assert adaptable_gates._mean_std(runs[runs.seed == 0], ["test_acc"]).test_acc_std.isna().all()
    scale = dict(seeds=2, data=[])
    for frame, bands, word in ((df, 3, "mean ± std"), (df.drop(columns=["train_acc_std", "test_acc_std"]), 0, "mean")):
        fig = adaptable_gates.figure7_plot(frame, scale)
        assert sum(len(ax.collections) for ax in fig.axes) == bands  # ReLU in the panels of experiments 3 (2) and 4
        assert f"{word} of 2 seed(s)" in fig._suptitle.get_text()
        if bands:
            band = fig.axes[0].collections[0].get_paths()[0].vertices[:, 1]
            assert band.min() == pytest.approx(100 * (0.6 - 0.02 ** 0.5)) and band.max() == pytest.approx(100 * (0.85 + 0.005 ** 0.5))
            assert fig.axes[0].collections[0].get_facecolor()[0][:3] == pytest.approx(
                matplotlib.colors.to_rgb(next(l for l in fig.axes[0].get_lines() if l.get_label() == "ReLU").get_color()))
        plt.close(fig)
    nu = adaptable_gates._mean_std(pd.DataFrame({"network": ["ReLU"] * 2, "epoch": [0, 0], "seed": [0, 1], "nu": [100.0, 10.0]}),
                           ["nu"])
    fig = adaptable_gates.figure8_plot(nu, scale)  # std 63.6 > mean 55: a linear band would cross zero
    band = fig.axes[0].collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(55 / (1 + 0.5 * 90 * 2 ** 0.5 / 55)) and band.min() > 0
    assert "mean ± std of 2 seed(s)" in fig._suptitle.get_text()
    plt.close(fig)
    entries = dgn.frg_entries({"depths": [2, 4], "entry_runs": 3}, __import__("torch").Generator().manual_seed(0))
    for frame, bands in ((entries, 2), (entries.drop(columns=["diag_std", "offdiag_std"]), 0)):  # an older CSV
        fig = figures.figure2_plot(frame, {"entry_runs": 3})
        assert sum(len(ax.collections) for ax in fig.axes) == bands
        plt.close(fig)


def test_figure5_compares_relu_and_galu_on_each_training_set_from_its_runs(tiny_root, tmp_path):
    """Paper 002 Fig 5 end to end on tiny data: the rows of +experiment=dgn_fig5 train, and the report
    lays out each training set's curves, the first epoch at 90%, and sentences that follow its numbers."""
    from conftest import make_cfg
    from gatelab.training.loop import train
    for cor in ("none", "labels"):
        for reg in ("relu", "galu"):
            cfg = make_cfg(["+experiment=dgn_fig5", "arch.dense=[32,16]", "epochs=3", "regimes=null", f"regime={reg}", "dataset.limit_train=200",
                            f"dataset.corrupt={cor}", "optimizer.lr=1e-2"], tiny_root)
            assert train(cfg, tmp_path / "runs" / f"{cor}-{reg}")["status"] == "completed"
    s = dgn.figure5(tmp_path / "runs", tmp_path / "out", "python run.py -m +experiment=dgn_fig5")
    assert sorted(zip(s.corrupt, s.regime)) == [("labels", "galu"), ("labels", "relu"), ("none", "galu"), ("none", "relu")]
    assert s[s.corrupt == "labels"].best_test.isna().all() and s[s.corrupt == "none"].best_test.notna().all()
    md = (tmp_path / "out" / "figure5.md").read_text()
    relu, galu = (s[(s.corrupt == "none") & (s.regime == r)].best_test.iloc[0] for r in ("relu", "galu"))
    assert f"ReLU {relu:.2f}%, GaLU {galu:.2f}%" in md and "REDUCED" in md
    assert "- labels training set:" in md and "- pixels training set:" not in md  # no runs, no sentence
    from gatelab.papers.dgn.figure5 import TIE, faster
    g = s[s.corrupt == "labels"].set_index("regime").mean_train
    who = faster(s, "labels")  # one seed: no standard error, the 0.05-point floor alone
    assert who == ("neither" if abs(g.galu - g.relu) < TIE else "GaLU" if g.galu > g.relu else "ReLU")
    two = s.assign(mean_train_se=abs(g.galu - g.relu))  # differences within 2 s.e. are no difference
    assert faster(two, "labels") == "neither"
    assert f"- labels training set: {'neither trains faster' if who == 'neither' else who + ' trains faster'} (" in md
    curves = pd.read_csv(tmp_path / "out" / "figure5.csv")
    assert len(curves) == 4 * 3 and (tmp_path / "out" / "figure5.png").is_file()
