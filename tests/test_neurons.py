"""gatelab.analyses.neurons: merging, clustering, alignment (paper 004 eq. (1), Thm B.1), IMP masks, ranks."""
import math

import pytest
import torch
import torch.nn.functional as F

from gatelab.analyses import neurons as nr
from gatelab.analyses.neurons import OneHidden

EPS = torch.finfo(torch.float64).eps


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _random_net(d=8, din=5, out=2, seed=0):
    g = _gen(seed)
    return OneHidden(torch.randn(d, din, generator=g, dtype=torch.float64),
                     torch.randn(d, generator=g, dtype=torch.float64),
                     torch.randn(out, d, generator=g, dtype=torch.float64),
                     torch.randn(out, generator=g, dtype=torch.float64))


def _logit_tol(net, x):
    """Rounding bound for z: (terms summed + a few ops) * eps * the sum of absolute products."""
    x = x.double()
    hb = x.abs() @ net.w1.abs().T + net.b1.abs()
    zb = hb @ net.w2.abs().T + net.b2.abs()
    return (net.w1.shape[1] + net.d + 8) * EPS * zb.max().item()


def test_from_state_forward_accuracy_loss():
    g = _gen(1)
    state = {"value.hidden.0.weight": torch.randn(6, 4, generator=g), "value.hidden.0.bias": torch.randn(6, generator=g),
             "value.head.weight": torch.randn(2, 6, generator=g), "value.head.bias": torch.randn(2, generator=g),
             "feature.hidden.0.weight": torch.zeros(3)}
    net = OneHidden.from_state(state)
    assert net.d == 6 and net.w1.dtype == torch.float64
    x = torch.randn(30, 2, 2, generator=g)  # flattened to din = 4
    y = torch.randint(0, 2, (30,), generator=g)
    lin1, lin2 = torch.nn.Linear(4, 6).double(), torch.nn.Linear(6, 2).double()
    lin1.load_state_dict({"weight": state["value.hidden.0.weight"].double(), "bias": state["value.hidden.0.bias"].double()})
    lin2.load_state_dict({"weight": state["value.head.weight"].double(), "bias": state["value.head.bias"].double()})
    with torch.no_grad():
        pre = lin1(x.flatten(1).double())
        ref = lin2(pre.relu())
    tol = _logit_tol(net, x.flatten(1))
    assert torch.allclose(net.hidden_pre(x), pre, rtol=0, atol=tol)
    assert torch.allclose(net.logits(x), ref, rtol=0, atol=tol)
    assert net.accuracy(x, y) == (ref.argmax(1) == y).double().mean().item()
    assert net.loss(x, y) == pytest.approx(F.cross_entropy(ref, y).item(), rel=1e3 * EPS)
    back = OneHidden.from_state(net.to_state(prefix="v."), prefix="v.")
    assert torch.equal(back.w1, net.w1) and torch.equal(back.b2, net.b2)
    with pytest.raises(ValueError):
        OneHidden(net.w1, net.b1[:-1], net.w2, net.b2)


def test_total_weights_parts():
    net = _random_net(d=3, din=4, out=2)
    v = nr.total_weights(net)
    assert v.shape == (3, 4 + 1 + 2)
    assert torch.equal(v[1], torch.cat([net.w1[1], net.b1[1:2], net.w2[:, 1]]))
    assert torch.equal(nr.total_weights(net, ("w1",)), net.w1)
    for bad in [(), ("w1", "w1"), ("w3",), ("b2",)]:
        with pytest.raises(ValueError):
            nr.total_weights(net, bad)


def test_cosine_matrix_zero_row_and_range():
    v = torch.tensor([[1.0, 0.0], [0.0, 0.0], [2.0, 2.0], [-3.0, 0.0]])
    c = nr.cosine_matrix(v)
    assert torch.equal(c[1], torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64))
    assert c[0, 2] == pytest.approx(1 / math.sqrt(2), abs=4 * EPS)
    assert c[0, 3] == -1.0 and torch.equal(c, c.T)
    assert torch.equal(torch.diagonal(c), torch.ones(4, dtype=torch.float64))


def _angles(*deg):
    return torch.tensor([[math.cos(math.radians(a)), math.sin(math.radians(a))] for a in deg])


def test_single_vs_complete_on_a_chain():
    # a-b at 25°, b-c at 35° (both above τ = cos 40°), a-c at 60° (below)
    v = _angles(0, 25, 60)
    tau = math.cos(math.radians(40))
    assert torch.equal(nr.clusters(v, tau, "single"), torch.tensor([0, 0, 0]))
    assert torch.equal(nr.clusters(v, tau, "complete"), torch.tensor([0, 0, 1]))
    with pytest.raises(ValueError):
        nr.clusters(v, tau, "average")


@pytest.mark.parametrize("link", ["single", "complete"])
def test_threshold_is_inclusive(link):
    v = torch.tensor([[3.0, 4.0], [0.0, 1.0], [6.0, 8.0], [0.0, 0.0]])  # rows 0 and 2: cos exactly 1
    assert nr.clusters(v, 1.0, link).tolist() == [0, 1, 0, 2]
    assert nr.clusters(v, 0.8, link).tolist() == [0, 0, 0, 1]  # cos(row 0, row 1) = 4/5 exactly


def test_labels_ordered_by_size_then_first_member():
    # groups (by index): {0, 4} near 0°, {1, 2, 5} near 120°, {3} at 240°, {6, 7} near 300°; groups are
    # >= 59° apart and τ = 0.9 (≈ 25.8°) keeps them separate
    v = _angles(0, 120, 121, 240, 1, 119, 300, 301)
    for link in ("single", "complete"):
        lab = nr.clusters(v, 0.9, link)
        assert lab.tolist() == [1, 0, 0, 3, 1, 0, 2, 2]  # size 3 -> 0; sizes 2 by first member 0 < 6


@pytest.mark.parametrize("link", ["single", "complete"])
def test_cluster_properties_random(link):
    v = torch.randn(60, 3, generator=_gen(3), dtype=torch.float64)
    tau = 0.8
    lab = nr.clusters(v, tau, link)
    c = nr.cosine_matrix(v)
    same = lab[:, None] == lab[None, :]
    k = int(lab.max()) + 1
    assert sorted(set(lab.tolist())) == list(range(k))
    sizes = torch.bincount(lab)
    assert torch.all(sizes[:-1] >= sizes[1:])
    if link == "single":  # components: no edge leaves a cluster
        assert not torch.any((c >= tau) & ~same)
    else:                 # every pair in a cluster is similar, and no two clusters could still merge
        assert torch.all(c[same] >= tau)
        for i in range(k):
            for j in range(i + 1, k):
                assert c[lab == i][:, lab == j].min() < tau
    single = nr.clusters(v, tau, "single")
    # complete linkage refines the single-linkage partition
    assert all(len(set(single[lab == i].tolist())) == 1 for i in range(k))


def _parallel_net(seed=4, groups=4, per=3, din=5):
    """Groups of neurons whose [w1, b1] are positive multiples of one direction, plus one zero neuron."""
    g = _gen(seed)
    dirs = torch.randn(groups, din + 1, generator=g, dtype=torch.float64)
    scale = 0.1 + 3 * torch.rand(groups, per, 1, generator=g, dtype=torch.float64)
    u = (scale * dirs[:, None, :]).reshape(groups * per, din + 1)
    u = torch.cat([u, torch.zeros(1, din + 1, dtype=torch.float64)])
    perm = torch.randperm(len(u), generator=g)
    u = u[perm]
    d = len(u)
    net = OneHidden(u[:, :-1], u[:, -1], torch.randn(2, d, generator=g, dtype=torch.float64),
                    torch.randn(2, generator=g, dtype=torch.float64))
    return net, groups + 1


def test_merge_is_exact_for_parallel_incoming_vectors():
    net, k_true = _parallel_net()
    x = torch.randn(200, 5, generator=_gen(5), dtype=torch.float64)
    lab = nr.clusters(nr.total_weights(net, ("w1", "b1")), 0.999)
    assert int(lab.max()) + 1 == k_true
    merged = nr.merge(net, lab)
    assert merged.d == k_true
    assert torch.allclose(merged.logits(x), net.logits(x), rtol=0, atol=_logit_tol(net, x))
    # the zero neuron is its own cluster and merges to zero weights
    zero = int(lab[(net.w1.abs().sum(1) + net.b1.abs()) == 0])
    assert merged.w1[zero].abs().sum() == 0 and merged.w2[:, zero].abs().sum() == 0
    y = torch.randint(0, 2, (200,), generator=_gen(6))
    eff = nr.merge_effect(net, x, y, 0.999, parts=("w1", "b1"), x_test=x[:50], y_test=y[:50])
    assert eff["k"] == k_true
    assert eff["acc_merged"] == eff["acc"] and eff["delta_acc"] == 0.0
    assert eff["acc_test"] == net.accuracy(x[:50], y[:50]) and eff["delta_acc_test"] == 0.0


def test_merge_is_not_exact_for_non_parallel_cluster():
    net = _random_net(d=2, din=3, seed=7)
    x = torch.randn(100, 3, generator=_gen(8), dtype=torch.float64)
    merged = nr.merge(net, torch.tensor([0, 0]))
    assert merged.d == 1
    assert (merged.logits(x) - net.logits(x)).abs().max() > 1e6 * _logit_tol(net, x)


def test_clusters_holding_counts_the_clusters_that_carry_the_norm_product():
    """Two parallel neurons of a = 10, one of a = 1 in another direction and a near-zero one in a
    third: three clusters, one a singleton of a = 1e-6 that k counts and the weight share does not."""
    w1 = torch.tensor([[1.0, 0, 0], [2.0, 0, 0], [0, 1.0, 0], [0, 0, 1e-3]])
    w2 = torch.tensor([[10.0, 5.0, 1.0, 1e-3], [0, 0, 0, 0]])
    net = OneHidden(w1, torch.zeros(4), w2, torch.zeros(2))
    labels = nr.clusters(nr.total_weights(net, ("w1",)), 0.95)
    assert labels.tolist() == [0, 0, 1, 2]
    assert nr.clusters_holding(net, labels) == 2  # 20 + 1 of 21.000001 is over 99%, 20 alone is not
    assert nr.clusters_holding(net, labels, share=0.9) == 1
    assert nr.clusters_holding(net, labels, share=1.0) == 3


def test_merge_with_tau_above_one_reproduces_the_net():
    net = _random_net(d=10, din=6, seed=9)
    x = torch.randn(100, 6, generator=_gen(10), dtype=torch.float64)
    y = torch.randint(0, 2, (100,), generator=_gen(11))
    lab = nr.clusters(nr.total_weights(net), 1.0 + 1e-9)
    assert sorted(lab.tolist()) == list(range(10))
    merged = nr.merge(net, lab)
    assert torch.allclose(merged.logits(x), net.logits(x), rtol=0, atol=_logit_tol(net, x))
    assert nr.merge_effect(net, x, y, 1.0 + 1e-9, linkage="complete")["k"] == 10


def test_merge_effect_relative_change():
    net, _ = _parallel_net(seed=12)
    x = torch.randn(300, 5, generator=_gen(13), dtype=torch.float64)
    y = net.logits(x).argmax(1)  # the net is perfect on its own labels
    eff = nr.merge_effect(net, x, y, -1.0)  # everything in one cluster
    assert eff["k"] == 1 and eff["acc"] == 1.0
    assert eff["delta_acc"] == pytest.approx(100 * (eff["acc_merged"] - 1.0))


# --- alignment (§5, eq. (1), Thm B.1) -------------------------------------------------------------

def _hand_net():
    """w2 = b2 = 0, so p = (1/2, 1/2) and ‖Δy_s‖ = 1/√2 for every sample."""
    w1 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -1.0], [2.0, 1.0]])
    b1 = torch.tensor([0.0, 0.0, 0.0, 0.5, 0.0])
    return OneHidden(w1, b1, torch.zeros(2, 5), torch.zeros(2))


def test_alignment_hand_example():
    x = torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    y = torch.tensor([0, 0, 1, 1])
    out = nr.alignment(_hand_net(), x, y)
    # neuron 0 sees only class 0 (gates are strict: w1·x = 0 is blocked), neuron 1 only class 1;
    # neuron 2 sees all: w1·ξ0 = 3/√2 < w1·ξ1 = 4/√2; neuron 3 (bias 0.5) sees class 0 only;
    # neuron 4 sees all: 6/√2 > 4/√2 (weighted by x, not by sample counts)
    assert out["cls"].tolist() == [0, 1, 1, 0, 0]
    # neuron 2: γ̄ = (1/4)(1/√2)(-(1,0) - (2,0) + (0,1) + (0,3)) = (-3, 4)/(4√2)
    r = 1 / math.sqrt(2)
    assert torch.allclose(out["gamma"][2], torch.tensor([-3.0, 4.0], dtype=torch.float64) * r / 4, rtol=0, atol=8 * EPS)
    # neuron 0: γ̄ = (1/4)(1/√2)((1,0) + (2,0)), parallel to w1
    assert torch.allclose(out["gamma"][0], torch.tensor([3.0, 0.0], dtype=torch.float64) * r / 4, rtol=0, atol=8 * EPS)
    assert out["cos_delta"][2].item() == pytest.approx(1 / (5 * math.sqrt(2)), abs=8 * EPS)
    assert out["cos_delta"][0].item() == pytest.approx(1.0, abs=8 * EPS)
    assert torch.equal(out["a"], torch.zeros(5, dtype=torch.float64))


def _reference_alignment(net, x, y):
    """Eq. (1) per sample and per neuron, with the real angle cosine cos(θ_Δy - θ*_w2)."""
    d = net.d
    z = net.logits(x)
    p = torch.softmax(z, 1)
    pre = net.hidden_pre(x)
    targets = [torch.tensor([1.0, -1.0], dtype=torch.float64) / math.sqrt(2),   # θ* = 7π/4 (class 0)
               torch.tensor([-1.0, 1.0], dtype=torch.float64) / math.sqrt(2)]   # θ* = 3π/4 (class 1)
    cls, gamma = [], torch.zeros(d, x.shape[1], dtype=torch.float64)
    for a in range(d):
        xi = [torch.zeros(x.shape[1], dtype=torch.float64) for _ in range(2)]
        for s in range(len(x)):
            if pre[s, a] > 0:
                dy = F.one_hot(y[s], 2).double() - p[s]
                xi[int(y[s])] += dy.norm() * x[s]
        c = 0 if net.w1[a] @ xi[0] > net.w1[a] @ xi[1] else 1
        cls.append(c)
        for s in range(len(x)):
            if pre[s, a] > 0:
                dy = F.one_hot(y[s], 2).double() - p[s]
                gamma[a] += (dy @ targets[c]) * x[s] / len(x)  # cos(θ_Δy - θ*) ‖Δy‖ = Δy · unit target
    return torch.tensor(cls), gamma


def test_alignment_matches_eq1_reference_and_norm_product():
    net = _random_net(d=7, din=4, seed=14)
    g = _gen(15)
    x = torch.randn(40, 4, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (40,), generator=g)
    out = nr.alignment(net, x, y)
    cls, gamma = _reference_alignment(net, x, y)
    assert torch.equal(out["cls"], cls)
    tol = 64 * EPS * (x.abs().sum(0).max() * math.sqrt(2) / len(x)).item()
    assert torch.allclose(out["gamma"], gamma, rtol=0, atol=tol)
    cos = torch.nn.functional.cosine_similarity(net.w1, gamma, dim=1)
    assert torch.allclose(out["cos_delta"], cos, rtol=0, atol=64 * EPS)
    assert torch.allclose(out["a"], net.w1.norm(dim=1) * net.w2.norm(dim=0), rtol=4 * EPS, atol=0)
    assert len(set(cls.tolist())) == 2  # the example exercises both classes


def test_alignment_is_one_at_the_target_vector():
    """Set w1_0 to its own γ̄_0: gates stay all open (x > 0, large bias), w2_0 = 0 keeps Δy fixed,
    and γ̄·(ξ_c - ξ_o) = N‖γ̄‖² > 0 keeps the class, so γ̄ is unchanged and cos δ̄ = 1."""
    g = _gen(16)
    x = torch.rand(30, 6, generator=g, dtype=torch.float64) + 0.1
    y = torch.randint(0, 2, (30,), generator=g)
    w1 = torch.rand(5, 6, generator=g, dtype=torch.float64)
    w2 = torch.randn(2, 5, generator=g, dtype=torch.float64)
    w2[:, 0] = 0
    net = OneHidden(w1, torch.full((5,), 100.0), w2, torch.randn(2, generator=g))
    first = nr.alignment(net, x, y)
    assert torch.all(net.hidden_pre(x) > 0)
    assert first["cos_delta"][0] < 1 - 1e-3
    w1 = w1.clone()
    w1[0] = first["gamma"][0]
    net2 = OneHidden(w1, net.b1, w2, net.b2)
    assert torch.all(net2.hidden_pre(x) > 0)
    second = nr.alignment(net2, x, y)
    assert second["cls"][0] == first["cls"][0]
    assert torch.allclose(second["gamma"], first["gamma"], rtol=0, atol=0)
    assert second["cos_delta"][0].item() == pytest.approx(1.0, abs=8 * EPS)
    assert second["a"][0] == 0


# --- pruning --------------------------------------------------------------------------------------

def _state(seed=17, d=6, din=5):
    g = _gen(seed)
    return {"value.hidden.0.weight": torch.randn(d, din, generator=g), "value.hidden.0.bias": torch.randn(d, generator=g),
            "value.head.weight": torch.randn(2, d, generator=g), "value.head.bias": torch.randn(2, generator=g)}


def _flat_mask(m, keys=nr._PRUNE_KEYS):
    return torch.cat([m[k].reshape(-1) for k in keys])


def test_prune_mask_global_magnitude():
    state = _state()
    total = 6 * 5 + 2 * 6
    w = torch.cat([state[k].reshape(-1).abs() for k in nr._PRUNE_KEYS])
    for p in (0.0, 0.2, 0.5, 0.7, 0.95):
        m = nr.prune_mask(state, p)
        assert set(m) == set(nr._PRUNE_KEYS)  # biases are never in the mask
        assert all(m[k].shape == state[k].shape and m[k].dtype == torch.bool for k in m)
        flat = _flat_mask(m)
        assert int((~flat).sum()) == round(p * total)
        if 0 < p:
            assert w[~flat].max() <= w[flat].min()  # keeps the largest magnitudes, across both tensors
    # ties: equal magnitudes are pruned in flat-index order
    ones = {k: torch.ones_like(v) for k, v in state.items()}
    m = nr.prune_mask(ones, 0.25)
    n = round(0.25 * total)
    assert torch.equal(_flat_mask(m), torch.arange(total) >= n)
    for bad in (1.0, -0.1):
        with pytest.raises(ValueError):
            nr.prune_mask(state, bad)


def test_prune_mask_respects_previous_mask():
    state = _state(seed=18)
    total = 42
    w = torch.cat([state[k].reshape(-1).abs() for k in nr._PRUNE_KEYS])
    big = torch.argsort(w, descending=True)[:5]  # prune the five largest weights "before"
    prev_flat = torch.ones(total, dtype=torch.bool)
    prev_flat[big] = False
    prev = {"value.hidden.0.weight": prev_flat[:30].reshape(6, 5), "value.head.weight": prev_flat[30:].reshape(2, 6)}
    m = nr.prune_mask(state, 0.5, prev_mask=prev)
    flat = _flat_mask(m)
    assert int((~flat).sum()) == round(0.5 * total)
    assert not torch.any(flat[big])  # stay pruned
    newly = ~flat & prev_flat
    assert int(newly.sum()) == round(0.5 * total) - 5
    assert w[newly].max() <= w[flat].min()
    with pytest.raises(ValueError):
        nr.prune_mask(state, 0.1, prev_mask=prev)  # round(0.1 * 42) = 4 < 5 already pruned


def test_imp_rounds_cumulative_sparsity():
    assert nr.round_sparsity(0.5, 3, 3) == 0.5
    assert nr.round_sparsity(0.7, 3, 3) == 0.7
    assert nr.round_sparsity(0.5, 3, 0) == 0.0
    assert nr.round_sparsity(0.5, 3, 1) == pytest.approx(1 - 0.5 ** (1 / 3), abs=4 * EPS)
    # fixed per-round rate: each round prunes the same fraction of what was left
    s1, s2 = nr.round_sparsity(0.5, 3, 1), nr.round_sparsity(0.5, 3, 2)
    assert (1 - s2) / (1 - s1) == pytest.approx(1 - s1, rel=8 * EPS)
    with pytest.raises(ValueError):
        nr.round_sparsity(0.5, 3, 4)
    state, total, mask = _state(seed=19), 42, None
    for r in (1, 2, 3):
        new = nr.prune_mask(state, nr.round_sparsity(0.5, 3, r), prev_mask=mask)
        if mask is not None:
            assert not torch.any(_flat_mask(new) & ~_flat_mask(mask))  # nested
        mask = new
        state = {k: v * mask[k] if k in mask else v for k, v in state.items()}  # pruned weights are zero
    assert int((~_flat_mask(mask)).sum()) == round(0.5 * total)


def test_pruned_per_neuron_by_hand():
    m1 = torch.tensor([[True, False, False], [True, True, True], [False, True, True], [False, False, False]])
    m2 = torch.tensor([[True, False, True, False], [False, True, True, True]])
    out = nr.pruned_per_neuron({"value.hidden.0.weight": m1, "value.head.weight": m2})
    assert out.tolist() == [2 + 1, 0 + 1, 1 + 0, 3 + 1]
    assert out.dtype == torch.long


def test_spearman():
    # ranks a = (1, 2.5, 2.5, 4), b = (1, 3, 2, 4): ρ = 4.5 / √(4.5 · 5) = √0.9
    a = torch.tensor([1.0, 2.0, 2.0, 3.0])
    b = torch.tensor([1.0, 3.0, 2.0, 4.0])
    assert nr.spearman(a, b) == pytest.approx(math.sqrt(0.9), abs=4 * EPS)
    g = _gen(20)
    u = torch.randn(50, generator=g, dtype=torch.float64)
    v = u + torch.randn(50, generator=g, dtype=torch.float64)
    u[::7] = u[0]  # some ties
    rho = nr.spearman(u, v)
    assert 0.3 < rho < 1
    assert nr.spearman(torch.exp(u), v ** 3) == rho  # same ranks, same value
    assert nr.spearman(-u, v) == pytest.approx(-rho, abs=4 * EPS)
    assert nr.spearman(u, u) == pytest.approx(1.0, abs=4 * EPS)
    assert math.isnan(nr.spearman(torch.ones(5), torch.arange(5.0)))


def test_stable_cell_count_toy():
    # x1 = e1 (class 1), x2 = e2 (class 0): signed rows e1, -e2. A probe that opens x1 goes to e1 and
    # stays (pattern 10); one that opens only x2 gets m = -e2, which opens nothing (pattern 00).
    x = torch.eye(2)
    y = torch.tensor([1, 0])
    assert nr.stable_cell_count(x, y, probes=200, max_iter=50, patience=3, generator=_gen(21)) == 2
    assert nr.stable_cell_count(x, y, probes=200, max_iter=50, patience=3, generator=_gen(21), sign=-1) == 2


def _algorithm1_literal(x, y, probes, max_iter, patience, gen, sign):
    """Appendix D's Algorithm 1 line by line, over all M probes (the reference for the fast one)."""
    xt = sign * (2 * y.double() - 1)[:, None] * x
    w = torch.randn(probes, x.shape[1], generator=gen, dtype=torch.float64)
    w = w / w.norm(dim=1, keepdim=True)
    trace, plateau, n_prev = [], 0, math.inf
    for _ in range(max_iter):
        g = (w @ x.T > 0).double()  # line 7
        m = g @ xt  # line 8
        w = m / m.norm(dim=1, keepdim=True).clamp_min(1e-300)
        n_t = torch.unique((w @ x.T > 0).to(torch.uint8), dim=0).shape[0]  # line 9
        plateau = plateau + 1 if n_t >= n_prev else 0  # line 10
        n_prev = n_t
        trace.append(n_t)
        if plateau >= patience:
            break
    return trace


@pytest.mark.parametrize("n,d", [(40, 3), (120, 8)])
def test_stable_cell_trace_counts_what_the_literal_algorithm_counts(n, d):
    """Carrying only distinct patterns (in chunks) gives the literal algorithm's n_t at every step."""
    x = torch.randn(n, d, generator=_gen(5), dtype=torch.float64)
    y = (torch.rand(n, generator=_gen(6)) > 0.5).long()
    fast = nr.stable_cell_trace(x, y, probes=3000, max_iter=60, patience=4, generator=_gen(7), signs=(1, -1))
    for sign in (1, -1):
        assert fast[sign] == _algorithm1_literal(x, y, 3000, 60, 4, _gen(7), sign)
    assert len(nr._patterns(torch.randn(3000, d, generator=_gen(8), dtype=torch.float64), x, chunk=700)) == \
        len(torch.unique(torch.randn(3000, d, generator=_gen(8), dtype=torch.float64) @ x.T > 0, dim=0))
