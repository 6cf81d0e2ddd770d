"""gatelab.papers.routing.toy: the toy tasks of "The Neural Race Reduction" (paper 003) against eqs 44-46, 16-17, 21-23."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gatelab.papers.routing import toy as rt, toy_experiments as rx

EPS = float(np.finfo(np.float64).eps)


def test_pair_mask_fig4d():
    mask = rt.pair_mask(7, 4)
    assert mask.shape == (7, 7)
    assert mask.sum(1).tolist() == [4] * 7 and mask.sum(0).tolist() == [4] * 7
    for i in range(7):
        assert set(torch.nonzero(mask[i]).flatten().tolist()) == {(i + o) % 7 for o in (-1, 0, 1, 2)}
        assert rt.output_domains(i) == [(i + o) % 7 for o in (-1, 0, 1, 2)]


def test_toy_data_and_statistics():
    X, Y = rt.toy_data()
    assert Y.shape == (7, 4) and torch.equal(X, torch.eye(4, dtype=X.dtype))
    assert Y[0].tolist() == [6] * 4 and Y[1].tolist() == [4, 4, 0, 0] and Y[2].tolist() == [0, 0, 4, 4]
    st = rt.task_statistics(X, Y)
    # Σʸˣ = Y/4: singular values √185, √41, 3, 3 (over P = 4), d = 1/4.
    np.testing.assert_allclose(st["s"] * 4, [math.sqrt(185), math.sqrt(41), 3, 3], rtol=20 * EPS)
    np.testing.assert_allclose(st["d"], 0.25, rtol=20 * EPS)


def test_hand_gradients_match_autograd():
    X, Y = rt.toy_data()
    mask = rt.pair_mask(5, 3)
    net = rt.init_random(2, M=5, hidden=8, sigma0=0.7, seed=3)
    params = [p.clone().requires_grad_(True) for p in (net.W1, net.W2, net.W3)]
    rt.loss_of(rt.RoutingNet(*params), X, Y, mask).sum().backward()
    lr = 1e-3
    before = [p.clone() for p in (net.W1, net.W2, net.W3)]
    rt.train(net, X, Y, mask, lr, 1)
    for b, a, p in zip(before, (net.W1, net.W2, net.W3), params):
        g = (b - a) / lr
        # relative rounding of b − a is ~eps·|b|/|b − a|
        torch.testing.assert_close(g, p.grad, rtol=0, atol=100 * EPS * float(b.abs().max()) / lr)


def test_decoupled_gd_is_euler_on_eqs_44_46():
    r = rx.decoupled_vs_reduction()
    # GD from decoupled init is exactly the Euler map of eqs 44-46 with h = λ·c: only rounding remains.
    assert r["gap_euler"] < 10 * r["steps"] * EPS
    assert r["loss_sim"][-1] < 1e-6 * r["L0"]
    # Fig 4f / eq. 51: B2/B1 → √M, up to C/B1² from the conserved M·B1² − B2² = (M−1)·b0².
    b1 = r["B"][-1, 0, 0]
    assert r["ratio"] ** 2 == pytest.approx(7 - 6 * rt.B0_DECOUPLED ** 2 / b1 ** 2, rel=1e-6)


def test_decoupled_gap_to_flow_is_first_order_in_lr():
    rows = rx.step_size_scaling(lrs=(0.01, 0.005))
    g1, g2 = rows[0]["gap_rk4"], rows[1]["gap_rk4"]
    assert g2 < g1 < 0.5
    assert 0.8 < rows[1]["order"] < 1.2  # GD = Euler: the gap to the flow is O(λ)


def test_conserved_quantity_eqs_16_17():
    X, Y = rt.toy_data()
    st = rt.task_statistics(X, Y)
    rng = np.random.default_rng(0)
    for P in (1, 4, 25, 100):
        f = rt.race_rhs(st["s"], st["d"], 10, P)
        y = rng.uniform(0.1, 3, size=(2, 4))
        f1, f2 = f(y)
        terms = np.abs(2 * math.sqrt(P) * y[0] * f1) + np.abs(2 * y[1] * f2)
        assert np.all(np.abs(2 * math.sqrt(P) * y[0] * f1 - 2 * y[1] * f2) <= 10 * EPS * terms)
    # Integrated with RK4 the drift of M·B1² − B2² is truncation error: 4th order in h and tiny.
    d1 = rx.pathway_race(Ps=[100], h=0.1, t_max=60)["drift"][100]
    d2 = rx.pathway_race(Ps=[100], h=0.05, t_max=60)["drift"][100]
    assert d2 < 1e-8 and math.log2(d1 / d2) > 3.5
    e = rx.pathway_race(Ps=[100], h=0.05, t_max=60, method="euler")["drift"][100]
    assert e > 1e3 * d2


def test_eqs_16_17_at_full_sharing_are_eqs_44_46_balanced():
    X, Y = rt.toy_data()
    st = rt.task_statistics(X, Y)
    B3 = rt.reduced_routing(st, 10, 0.2, 0.05, 400)
    B2 = rx.pathway_race(M=10, Ps=[100], b0=0.2, h=0.05, t_max=20)["B"][100]
    np.testing.assert_allclose(B3[:, 0], B3[:, 2], rtol=10 * EPS * 400)
    np.testing.assert_allclose(B3[:, :2], B2, rtol=1e-12)


def test_race_more_sharing_learns_faster_and_ratio_p_quarter():
    r = rx.pathway_race(M=10, h=0.1, t_max=200)
    t = [r["t_half"][P] for P in (1, 4, 25, 100)]
    assert t == sorted(t, reverse=True) and t[0] > 10 * t[-1]
    for P in (4, 25, 100):  # eq. 56 up to C/B1² with C = (√P − 1)·b0²
        b1 = r["B"][P][-1, 0, 0]
        assert r["ratio"][P] ** 2 == pytest.approx(math.sqrt(P) - (math.sqrt(P) - 1) * 0.04 / b1 ** 2, rel=1e-6)


def test_random_init_shares_and_generalises():
    r = rx.random_vs_reduction(n_runs=2, sv_every=rt.STEPS_FIG4)
    null = 0.5 * float((rt.toy_data()[1] ** 2).sum())  # error of Ŷ = 0
    assert r["trained_err"].max() < 1e-3 * null and r["untrained_err"].max() < 1e-2 * null  # Fig 4h
    assert r["similarity"].min() > 0.9  # Fig 4g
    assert np.all(np.abs(r["sv_ratio"] / math.sqrt(7) - 1) < 0.02)  # Fig 4f (≈ C/(2M·B1²) ≈ 0.6%)


def test_k_sweep_generalisation_needs_enough_trained_routes():
    r = rx.k_sweep(M=10, Ks=[1, 4], n_runs=1, steps=800)
    null = 0.5 * float((rt.toy_data()[1] ** 2).sum())
    assert r["trained_err"].max() < 1e-2 * null
    assert r["untrained_err"][0, 0] > 0.5 * null and r["untrained_err"][1, 0] < 1e-2 * null


def test_small_init_generalises_large_init_does_not():
    r = rx.init_scale_sweep(sigma0s=[0.2, 2.5])
    assert r["untrained_err"][0] < r["untrained_err"][1]
    assert r["similarity"][0] > r["similarity"][1]


def test_xor_theory_and_relu():
    r = rx.xor_curves(n_runs=3, t_max=100)
    assert r["theory"][0] == pytest.approx(0.5, abs=1e-5) and r["theory"][-1] < 1e-12
    assert np.all(r["relu"][-1] < 1e-8)
    # Half-loss times agree within the shift a factor 2 in a0 would cause, τ·ln2/(2s).
    t = r["t"]
    th = t[np.argmax(r["theory"] < 0.25)]
    relu = np.mean([t[np.argmax(r["relu"][:, k] < 0.25)] for k in range(3)])
    assert abs(relu - th) < 2.5 * math.log(2) / (2 * math.sqrt(2) / 4)


def test_toy_figures_render_under_the_strict_figure_check(tmp_path):
    """Figs 3c, 4e-h, 5b, 5c, 6 and 6d on fewer runs: no text over another axes, no legend over data
    (GATELAB_STRICT_FIGURES, set by conftest, makes either an error)."""
    from gatelab.papers.routing import toy_figures
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        toy_figures.figures(tmp_path, toy_figures.run_all(n_runs=2, k_runs=1))
    finally:
        torch.set_num_threads(threads)
    assert sorted(p.stem for p in tmp_path.glob("*.png")) == [
        "fig3_xor", "fig4_routing", "fig4gh_representation", "fig5b_race", "fig5c_k_sweep", "fig6_init_scale",
        "fig6d_outputs"]


def test_output_grid_tiles_every_pair_and_rsa_is_a_cosine_matrix():
    """Fig 4h / 6d: block (i, j) of the grid is Ŷ_ij of :func:`forward`; Fig 4g: unit diagonal, symmetric."""
    X, Y = rt.toy_data()
    net = rt.init_random(2, M=3, hidden=8, sigma0=0.7, seed=1)
    grid, out = rt.output_grid(net, X, 1), rt.forward(net, X)[2][1]
    assert grid.shape == (3 * Y.shape[0], 3 * Y.shape[1])
    for i in range(3):
        for j in range(3):
            np.testing.assert_array_equal(grid[i * 7:(i + 1) * 7, j * 4:(j + 1) * 4], out[i, j].numpy())
    rsa = rt.rsa_matrix(net, X, 1)
    np.testing.assert_allclose(np.diag(rsa), 1.0, rtol=1e-12)
    np.testing.assert_allclose(rsa, rsa.T, atol=1e-15)
