"""Each qualitative check of the page rejects its negative control (issues #39, #54): a check that passes on a
case where the paper's claim should not hold reports "not shown", not confirmation; a control of no difference is
shown only by equivalence within its declared margin (TOST); "contradicted" only where the opposite is shown."""
import pandas as pd

from gatelab.papers.dgn import verdicts as dgn
from gatelab.papers.npf import verdicts as npf


def _fig3_right(root, start, end):
    d = root / "figure3-paper"
    d.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([{"epoch": 0, "trace_Kv": start[0], "fro_Kv": start[1], "trace_Kf": 1.0, "fro_Kf": 1.0},
                  {"epoch": 30, "trace_Kv": end[0], "fro_Kv": end[1], "trace_Kf": 1.0, "fro_Kf": 1.0}]
                 ).to_csv(d / "figure3_right.csv", index=False)
    return npf.figure3_right(root).verdict


def test_kernels_of_the_same_scale_must_not_be_so_at_initialisation(tmp_path):
    """Paper 001 Fig 3 right: the run's own ratios (4.5 and 14.9 at epoch 0; 0.96 and 1.76 at 30) confirm it;
    a run already within the factor at epoch 0 shows nothing; a trained ratio of 4 contradicts it (a deterministic
    run's feature failing its declared bound)."""
    assert _fig3_right(tmp_path / "a", (4.53, 14.88), (0.96, 1.76)).startswith("qualitative: confirmed")
    blind = _fig3_right(tmp_path / "b", (1.2, 1.5), (0.96, 1.76))
    assert blind.startswith("qualitative: not shown") and "passes too: not shown" in blind
    assert _fig3_right(tmp_path / "c", (4.53, 14.88), (4.0, 1.5)).startswith("qualitative: contradicted")


def _fig7(root, acc):
    """dgn_figure7.csv with each network's last-epoch test accuracy (mean, std over 5 seeds)."""
    d = root / "dgn-figures-paper"
    d.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([{"network": n, "epoch": 100, "train_acc": 1.0, "test_acc": m, "train_acc_std": 0.0, "test_acc_std": s,
                   "n": 5} for n, (m, s) in acc.items()]).to_csv(d / "dgn_figure7.csv", index=False)
    return dgn.figure7(root)


CLEAR = {"GaLU frozen": (0.990, 0.001), "frozen ReLU": (0.9905, 0.001), "ReLU": (0.996, 0.001),
         "learned gates": (0.995, 0.001), "soft-GaLU β=4": (0.997, 0.001), "soft-ReLU β=4": (0.997, 0.001)}


def test_an_ordering_of_experiments_3_to_5_needs_2_se_and_a_control_shown_equivalent(tmp_path):
    row = _fig7(tmp_path / "a", CLEAR)
    assert row.verdict.startswith("qualitative: confirmed") and "within ±2 shown (TOST)" in row.verdict
    # the paper-scale run's learned gates: +0.08 points over GaLU frozen with stds of 0.16 and 0.21: not shown, and
    # not the other way either
    small = dict(CLEAR, **{"learned gates": (0.99474, 0.0016), "GaLU frozen": (0.99393, 0.0021),
                           "frozen ReLU": (0.99294, 0.0023)})
    row = _fig7(tmp_path / "b", small)
    assert row.verdict.startswith("qualitative: not shown") and "opposite" not in row.verdict
    assert "learned gates > GaLU frozen" in row.verdict.split("not shown: ")[1] and "power" in row.verdict
    # the learned gates a point below GaLU frozen at stds of 0.1: the reverse order is shown
    below = dict(CLEAR, **{"learned gates": (0.980, 0.001)})
    row = _fig7(tmp_path / "r", below)
    assert row.verdict.startswith("qualitative: contradicted") and "the opposite is shown for learned gates > GaLU " \
        "frozen" in row.verdict
    # two frozen-gate nets 2.5 points apart at these stds: not equivalent within the control's ±2, so the orderings,
    # which all hold, show nothing
    far = dict(CLEAR, **{"frozen ReLU": (0.965, 0.001)})
    row = _fig7(tmp_path / "c", far)
    assert row.verdict.startswith("qualitative: not shown") and "5 of 5 claims hold" in row.verdict
    assert "control not shown" in row.verdict and "(not shown))" in row.verdict
    # 0.5 points apart at these stds is within the declared ±2, shown by TOST: the margin decides, not a
    # difference test (which rejects here)
    noisy = dict(CLEAR, **{"frozen ReLU": (0.985, 0.001)})
    assert _fig7(tmp_path / "d", noisy).verdict.startswith("qualitative: confirmed")


def _gain_row(tmp_path, cells):
    """routing-reduced/routing.csv of one gain sweep (MNIST perm/perm, M=20, K=5): (epochs, gain, trained,
    untrained, s.e.) per cell, 3 seeds; the Fig 7d/10 ii row read from it."""
    from gatelab.papers.routing import verdicts as routing
    d = tmp_path / "routing-reduced"
    d.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([{"task": "routing_mnist_perm", "regime": "dln", "M": 20, "K": 5, "gain": gain, "h": 128, "lr": 0.01,
                   "epochs": e, "limits": "6000/1000", "K_over_M": 0.25, "n": 3, "excluded": "", "err_trained": tr,
                   "err_trained_se": se, "err_untrained": un, "err_untrained_se": se, "gap": un - tr,
                   "learned": tr < 80, "within_2se": False, "decoder_fan": "per_decoder"}
                  for e, gain, tr, un, se in cells]).to_csv(d / "routing.csv", index=False)
    return routing.gain_sweep("routing_mnist_perm", 40)(tmp_path)


def test_gains_are_compared_at_one_length_and_the_plateau_is_not_generalisation(tmp_path):
    plateau = [(15, 0.01, 90.0, 90.0, 0.0)]  # gap 0: nothing learned, not zero-shot generalisation
    fair = plateau + [(15, 0.1, 15.0, 28.0, 0.5), (15, 1.0, 11.0, 52.0, 0.5), (15, 10.0, 17.0, 74.0, 0.5)]
    assert _gain_row(tmp_path / "a", fair).verdict.startswith("qualitative: confirmed")
    # issue #39's case: the small gain learned only in a longer run; the large gain ran 15 epochs alone
    apart = plateau + [(100, 0.01, 19.0, 19.3, 0.5), (15, 10.0, 17.0, 74.0, 0.5)]
    row = _gain_row(tmp_path / "b", apart)
    assert row.verdict.startswith("qualitative: not shown") and "100 epochs (no gain ≥ 1 ran)" in row.ours
    # the plateau alone below 1: its gap of 0 does not count for the claim
    assert _gain_row(tmp_path / "c", plateau + [(15, 1.0, 11.0, 52.0, 0.5)]).verdict.startswith("qualitative: not shown")
    # gain 0.1's gap 55 points, gain 1's 19, at s.e. 0.5: the reverse order is shown
    reversed_ = [(15, 0.1, 15.0, 70.0, 0.5), (15, 1.0, 11.0, 30.0, 0.5)]
    row = _gain_row(tmp_path / "d", reversed_)
    assert row.verdict.startswith("qualitative: contradicted") and "the opposite is shown for gain 1 > gain 0.1" in \
        row.verdict
    # reversed by 2 points at s.e. 3: neither way
    weak = [(15, 0.1, 15.0, 43.0, 3.0), (15, 1.0, 11.0, 37.0, 3.0)]
    row = _gain_row(tmp_path / "e", weak)
    assert row.verdict.startswith("qualitative: not shown") and "opposite" not in row.verdict


def test_the_gram_entries_meet_eq_5_and_the_test_rejects_a_wrong_ideal():
    """Paper 002 Fig 2: over 300 random DGN-FRG nets the entries of K0/d lie within 3 s.e. of eq. (5)
    (diagonal 1, off-diagonal µ^(d−1)); the same test rejects the control µ^d."""
    import torch
    from gatelab.papers.dgn.figures import MU, frg_entries
    df = frg_entries({"depths": [2, 4], "entry_runs": 300}, torch.Generator().manual_seed(0), w=100)
    assert (df.n == 300).all() and dgn._entries_within(df)[2] == []
    wrong = df.assign(ideal_offdiag=MU ** df.depth)
    assert dgn._entries_within(wrong)[2]  # 0.25 against 0.5 at d=2: many s.e. off


def test_experiment_6_is_judged_against_the_deep_linear_network_of_its_own_scale():
    """Paper 002 exp. 6 (issue #47): the gates trained alone above the DLN of the same images and epochs (the
    paper's 56 against its DLN's 39.39), not above chance; the control, the same nets untrained, must be shown
    equivalent within its declared ±2 (TOST); without the DLN beside it there is nothing to judge."""
    from gatelab.papers.dgn.verdicts import exp6_feature

    def frame(gates, dln, untrained=((10.1, 0.3), (10.0, 0.3)), n=3, with_dln=True):
        rows = [("gates_only", gates, untrained[0]), ("dln", dln, untrained[1]), ("relu", (55.0, 1.0), (10.0, 0.3))]
        df = pd.DataFrame([{"regime": r, "epochs": 5, "limits": "10000/2000", "n": n, "best_test_mean": b[0],
                            "best_test_std": b[1], "untrained_test_mean": u[0], "untrained_test_std": u[1]}
                           for r, b, u in rows if with_dln or r != "dln"])
        return exp6_feature(df, df[df.regime == "gates_only"].iloc[0])
    confirmed = frame((45.0, 1.0), (35.0, 1.0))
    assert confirmed.startswith("qualitative: confirmed") and "share of ReLU's gain over the DLN 0.50 (paper 0.53)" in \
        confirmed and "(shown)" in confirmed
    # above chance, 13.6 points below the DLN at stds of 1: the reverse is shown
    assert frame((22.0, 1.0), (35.6, 1.0)).startswith("qualitative: contradicted")
    # a point below the DLN at stds of 3 over 3 seeds: neither way
    weak = frame((34.0, 3.0), (35.0, 3.0))
    assert weak.startswith("qualitative: not shown") and "opposite" not in weak
    # the untrained nets 4 points apart, either way: not equivalent within ±2
    assert frame((45.0, 1.0), (35.0, 1.0), untrained=((14.0, 0.3), (10.0, 0.3))).startswith("qualitative: not shown")
    assert frame((45.0, 1.0), (35.0, 1.0), untrained=((6.0, 0.3), (10.0, 0.3))).startswith("qualitative: not shown")
    # the same mean untrained, but too spread (std 3, 3 seeds) to place the difference within ±2: not shown
    assert frame((45.0, 1.0), (35.0, 1.0), untrained=((10.0, 3.0), (10.0, 3.0))).startswith("qualitative: not shown")
    assert frame((45.0, 1.0), (35.0, 1.0), with_dln=False).startswith("not comparable")
    assert frame((45.0, 1.0), (35.0, 1.0), n=1).startswith("not comparable")


def _table4(trained, untrained=None, rising=None):
    """A table4 frame: network -> per-seed best test accuracies (%), the same nets untrained, the rise of
    each network's mean best-so-far over its last fifth (0 unless given)."""
    keys = {"relu": ("relu", None, None), "dln": ("dln", None, None), 1: ("soft_relu", 1.0, 0.1),
            4: ("soft_relu", 4.0, 0.1), 16: ("soft_relu", 16.0, 0.1)}
    from gatelab.papers.report import seed_text
    untrained = untrained or {k: [10.0 + 0.3 * s for s in range(3)][::(-1) ** i] for i, k in enumerate(keys)}
    return pd.DataFrame([{"regime": keys[k][0], "beta": keys[k][1], "eps": keys[k][2], "n": len(v),
                          "best_per_seed": seed_text(dict(enumerate(v))),
                          "untrained_per_seed": seed_text(dict(enumerate(untrained[k]))),
                          "rise_last_fifth": (rising or {}).get(k, 0.0)} for k, v in trained.items()])


PAPERLIKE = {"relu": [45.0, 46.0, 44.5], "dln": [33.0, 34.0, 32.5], 1: [38.0, 39.0, 37.5], 4: [42.0, 43.0, 41.5],
             16: [45.5, 44.5, 45.0]}


def test_table4_at_a_reduced_scale_needs_the_order_of_beta_that_untrained_nets_lack():
    """Paper 002 Table 4 at a reduced scale (issue #37 §3): β=4 and β=16 above β=1, ReLU above DLN, β=16 ≈ ReLU,
    by the declared claims (Welch, TOST ±2, Holm); the untrained nets must be shown equivalent within ±2 (TOST), and
    ReLU ≈ DLN must not be equivalent."""
    from gatelab.papers.dgn.table4 import feature_tests
    word, text = feature_tests(_table4(PAPERLIKE))
    assert word == "confirmed" and "4 of 4 claims hold" in text and "(shown)" in text and "(not shown)" not in text
    assert "untrained (needs equivalence within ±2 shown (TOST))" in text
    # the quick scale's own means (β=1 26.7 above β=16 25.5 at ε=0.1, 640 images, 2 epochs): the order is not there;
    # β=16 (25.5) is shown outside ±2 of ReLU (45.2), while its 1.2 points below β=1 at a spread of 3.5 is not shown
    # either way
    quick = PAPERLIKE | {1: [26.4, 27.0, 26.7], 4: [28.0, 29.4, 28.7], 16: [22.0, 29.0, 25.5]}
    word, text = feature_tests(_table4(quick))
    against = text.split("; controls:")[0].split("the opposite is shown for ")[1]
    assert word == "contradicted" and "2 of 4 claims hold" in text and "β=16, ε=0.1 ≈ ReLU (±2)" in against
    assert "β=16, ε=0.1 > β=1, ε=0.1" not in against
    # an order the untrained nets show as well: the test would find it in the initialisation
    for other in (20.0, 0.0):  # the untrained β=16 above or below the rest: either way the control is not shown
        biased = {k: [10.0, 10.5, 10.2] for k in ("relu", "dln", 1, 4)} | {16: [other, other + 0.5, other + 0.2]}
        word, text = feature_tests(_table4(PAPERLIKE, untrained=biased))
        assert word == "not shown" and "4 of 4 claims hold" in text and "control not shown" in text
    # ReLU and DLN alike: the likeness test cannot tell the table's widest gap, so β=16 ≈ ReLU says nothing
    alike = dict(PAPERLIKE, dln=[44.0, 46.5, 45.0])
    word, text = feature_tests(_table4(alike))
    assert word == "not shown" and "ReLU vs Deep linear network (needs not equivalent)" in text and "opposite" not in text
    # a network still learning at its end: no verdict, the tests shown
    word, text = feature_tests(_table4(PAPERLIKE, rising={1: 2.5}))
    assert word == "still learning" and "β=1, ε=0.1 +2.50" in text and "4 of 4 claims hold" in text
    # one seed of a network tested, or no untrained controls: no result
    assert feature_tests(_table4(dict(PAPERLIKE, relu=[45.0])))[0] == "no result"
    no_controls = _table4(PAPERLIKE).assign(untrained_per_seed="")
    assert feature_tests(no_controls)[0] == "no result"


def test_the_table4_row_reads_its_features_at_a_reduced_scale_and_not_at_the_quick_one(tmp_path):
    """The page's Table 4 row: the CPU scale's report is judged by its features; the quick one is not."""
    full = _table4(PAPERLIKE).assign(network="x", test_mean=40.0, paper_test=71.0)
    for name, scale in (("table4-conv-cpu", "reduced"), ("table4-quick", "quick")):
        (tmp_path / name).mkdir()
        full.to_csv(tmp_path / name / "table4.csv", index=False)
    row = dgn.table4(tmp_path)
    assert row.scale == "reduced" and row.verdict.startswith("qualitative: confirmed") and "numbers not comparable" in row.verdict
    (tmp_path / "table4-conv-cpu" / "table4.csv").unlink()
    assert dgn.table4(tmp_path).verdict == "numbers not comparable at the quick scale"


def test_the_table4_row_judges_the_larger_reduced_scale_and_shows_the_smaller(tmp_path):
    """With the GPU's reduced report (10,000 images) and the CPU's (2,000) both there, the row's verdict is the
    larger scale's, fixed by the candidates' order before either ran; the smaller one's verdict is shown beside
    it, whichever way it went, so a contradicting replication is not hidden by a confirming one."""
    full = _table4(PAPERLIKE).assign(network="x", test_mean=40.0, paper_test=71.0)
    quick = {1: [26.4, 27.0, 26.7], 4: [28.0, 29.4, 28.7], 16: [22.0, 29.0, 25.5]}
    small = _table4(PAPERLIKE | quick).assign(network="x", test_mean=30.0, paper_test=71.0)
    for name, df in (("table4-conv-reduced", full), ("table4-conv-cpu", small)):
        (tmp_path / name).mkdir()
        df.to_csv(tmp_path / name / "table4.csv", index=False)
    row = dgn.table4(tmp_path)
    assert row.report == "table4-conv-reduced" and row.verdict.startswith("qualitative: confirmed")
    assert "the smaller [table4-conv-cpu](table4-conv-cpu/): contradicted, 2 of 4 claims hold" in row.verdict, row.verdict
    (tmp_path / "table4-conv-reduced" / "table4.csv").unlink()
    row = dgn.table4(tmp_path)
    assert row.report == "table4-conv-cpu" and row.verdict.startswith("qualitative: contradicted") and \
        "smaller" not in row.verdict
