"""Paper 001 identities on small fully connected DGNs, against explicit path enumeration."""
import itertools

import pytest
import torch

from gatelab.analyses import kernels
from gatelab.nets.dgn import DGN, Net, init_

D_IN, WIDTHS = 3, [4, 3, 2]  # P = 3*4*3*2 = 72 paths


def _net(seed):
    net = Net((D_IN, 1, 1), [], "flatten", WIDTHS, 1, bias=False)
    return init_(net, "glorot", torch.Generator().manual_seed(seed)).double()


def _dgn(gate="hard", tied=False, beta=4.0, eps=0.0):
    return DGN(_net(1), None if tied else _net(2), gate=gate, beta=beta, eps=eps)


def enumerate_paths(model: DGN, x: torch.Tensor):
    """Definition 2.1 literally: NPF φ (n, P) and NPV v (P,), one path (i0, i1, ..., i_{d-1}) at a time."""
    _, gs = model(x, return_gates=True)
    weights = [layer.weight for layer in model.value.hidden] + [model.value.head.weight]
    dims = [D_IN] + WIDTHS
    phi, v = [], []
    for path in itertools.product(*[range(d) for d in dims]):
        act = torch.ones(len(x), dtype=x.dtype)
        for l, unit in enumerate(path[1:]):
            act = act * gs[l][:, unit]
        phi.append(x[:, path[0]] * act)
        value = weights[-1][0, path[-1]]
        for l in range(1, len(path)):
            value = value * weights[l - 1][path[l], path[l - 1]]
        v.append(value)
    return torch.stack(phi, 1), torch.stack(v)


@pytest.mark.parametrize("gate,tied", [("hard", True), ("hard", False), ("soft", False), ("soft", True)])
def test_prop_2_1_output_is_npf_dot_npv(gate, tied):
    model = _dgn(gate, tied)
    x = torch.randn(6, D_IN, dtype=torch.float64)
    phi, v = enumerate_paths(model, x)
    assert phi.shape == (6, D_IN * 4 * 3 * 2)
    with torch.no_grad():
        torch.testing.assert_close(model(x).squeeze(1), phi @ v, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("gate", ["hard", "soft"])
def test_lemma_2_1_npk_is_gram_hadamard_overlap(gate):
    model = _dgn(gate)
    x = torch.randn(7, D_IN, dtype=torch.float64)
    phi, _ = enumerate_paths(model, x)
    h_explicit = phi @ phi.T
    torch.testing.assert_close(kernels.npk(model, x), h_explicit, rtol=1e-10, atol=1e-12)
    if gate == "hard":  # Λ(s,s') = |paths active for both| / d_in, counted path by path
        active = (phi != 0) | (x.repeat_interleave(phi.shape[1] // D_IN, dim=1) == 0)
        shared = (active.double() @ active.double().T) / D_IN
        lam = kernels.overlap(kernels.gates(model, x))
        torch.testing.assert_close(lam, shared)
        torch.testing.assert_close(kernels.gram(x) * shared, h_explicit, rtol=1e-10, atol=1e-12)


def test_soft_gate_tends_to_hard_gate_as_beta_grows():
    """(1+eps)σ(βq) -> 1{q>0} with eps=0: gates converge monotonically in mean (σ(0)=1/2 stays) (DGN, gates from a ReLU
    feature net), and the outputs of both the DGN and the tied soft-ReLU net converge."""
    x = torch.randn(50, D_IN, dtype=torch.float64)
    betas = (1.0, 10.0, 100.0, 1e3, 1e4, 1e7)
    g_hard = kernels.gates(_dgn("hard"), x)
    gate_err = [sum((a - b).abs().mean().item() for a, b in zip(kernels.gates(_dgn("soft", beta=beta), x), g_hard))
                for beta in betas]
    assert all(a > b for a, b in zip(gate_err, gate_err[1:])), gate_err
    for tied in (True, False):
        with torch.no_grad():
            y_hard = _dgn("hard", tied)(x)
            errs = [(_dgn("soft", tied, beta=beta)(x) - y_hard).abs().max().item() for beta in betas]
        assert errs[0] > 1e-2 and errs[-2] < errs[0] and errs[-1] < 1e-3, errs


def _explicit_ntk(model, x, params):
    """K(s,s') = Σ_c <∂θ ŷ_c(x_s), ∂θ ŷ_c(x_s')>, one autograd.grad call per example and output."""
    rows = []
    for xi in x:
        out = model(xi.unsqueeze(0)).squeeze(0)
        grads = [torch.autograd.grad(oc, params, retain_graph=True, allow_unused=True) for oc in out]
        rows.append(torch.stack([torch.cat([(torch.zeros_like(p) if g is None else g).flatten()
                                            for g, p in zip(gs, params)]) for gs in grads]))
    j = torch.stack(rows)  # (n, outputs, parameters)
    return torch.einsum("ncp,mcp->nm", j, j)


@pytest.mark.parametrize("gate,tied", [("soft", False), ("hard", False), ("hard", True)])
def test_ntk_blocks_match_explicit_gradients(gate, tied):
    v = Net((D_IN, 1, 1), [], "flatten", WIDTHS, 2, bias=True)
    f = None if tied else Net((D_IN, 1, 1), [], "flatten", WIDTHS, 2, bias=True)
    model = DGN(v, f, gate=gate, beta=2.0, eps=0.1).double()
    x = torch.randn(5, D_IN, dtype=torch.float64)
    blocks = kernels.ntk_blocks(model, x, chunk=2)
    assert set(blocks) == ({"value"} if tied else {"value", "feature"})
    torch.testing.assert_close(blocks["value"], _explicit_ntk(model, x, list(v.parameters())))
    if not tied:
        kf = _explicit_ntk(model, x, list(f.hidden.parameters()))
        torch.testing.assert_close(blocks["feature"], kf)
        if gate == "hard":  # 0/1 gates pass no gradient to Θf (paper 001 §6.2, item 6)
            assert torch.count_nonzero(blocks["feature"]) == 0
        else:
            assert blocks["feature"].trace() > 0


def test_nu_is_invariant_to_kernel_scale_and_matches_the_definition():
    a = torch.randn(6, 6, dtype=torch.float64)
    h = a @ a.T + 0.1 * torch.eye(6, dtype=torch.float64)
    y = torch.tensor([1.0, -1, 1, 1, -1, -1], dtype=torch.float64)
    expected = float(y @ torch.linalg.inv(h / torch.trace(h)) @ y)
    assert kernels.nu(h, y) == pytest.approx(expected)
    assert kernels.nu(7.0 * h, y) == pytest.approx(expected)


def test_gated_ntk_closed_form_matches_autograd():
    model = _dgn("hard")  # bias-free FC DGN: gates from the feature net
    x = torch.randn(6, D_IN, dtype=torch.float64)
    weights = [l.weight for l in model.value.hidden] + [model.value.head.weight]
    k = kernels.gated_ntk([w.detach() for w in weights], kernels.gates(model, x), x)
    torch.testing.assert_close(k, kernels.ntk_blocks(model, x)["value"])
    torch.testing.assert_close(k, _explicit_ntk(model, x, list(model.value.parameters())))


def test_gated_ntk_of_a_relu_net_with_its_own_gates():
    net = _net(3)
    model = DGN(net, None, gate="hard")
    x = torch.randn(5, D_IN, dtype=torch.float64)
    weights = [l.weight.detach() for l in net.hidden] + [net.head.weight.detach()]
    y, _ = kernels.gated_forward(weights, [None] * len(WIDTHS), x)
    torch.testing.assert_close(y, model(x).squeeze(1).detach())
    torch.testing.assert_close(kernels.gated_ntk(weights, [None] * len(WIDTHS), x), kernels.ntk_blocks(model, x)["value"])


def _signs(shapes, sigma, signs):
    """The weights of one sign pattern: ``signs`` (±1 per weight) times σ, cut into ``shapes``."""
    s = torch.tensor(signs, dtype=torch.float64) * sigma
    return [c.view(sh) for c, sh in zip(s.split([a * b for a, b in shapes]), shapes)]


@pytest.mark.parametrize("widths", [[3], [2, 3]])
def test_theorem_5_1_expected_value_ntk_is_scaled_npk(widths):
    """E[Kᵛ] over every ±σ sign pattern of the value weights (enumerated: 2^9 and 2^13 nets), with
    gates fixed independently of them, equals d·σ^(2(d-1))·H exactly (Lemma B.1), at any width."""
    n, sigma = 4, 0.7
    x = torch.randn(n, 2, dtype=torch.float64)
    gates = [torch.bernoulli(torch.full((n, w), 0.5, dtype=torch.float64)) for w in widths]
    shapes = list(zip(widths, [2] + widths[:-1])) + [(1, widths[-1])]
    patterns = list(itertools.product([-1.0, 1.0], repeat=sum(a * b for a, b in shapes)))
    mean = sum(kernels.gated_ntk(_signs(shapes, sigma, p), gates, x) for p in patterns) / len(patterns)
    limit = kernels.fnpf_limit(x, gates, sigma)
    torch.testing.assert_close(mean, limit, rtol=1e-12, atol=1e-12 * float(limit.abs().max()))  # float64: ~1e-14 seen
    one = kernels.gated_ntk(_signs(shapes, sigma, patterns[5]), gates, x)
    assert (one - limit).abs().max() > 1e-3 * limit.abs().max()  # a single draw is not the expectation


def test_theorem_5_1_one_draw_concentrates_as_width_grows():
    """With σ = 1/√w a single ±σ draw's Kᵛ approaches d·σ^(2(d-1))·H: the relative error falls like
    1/√w (Theorem B.2: Var ≤ C d_in² d³ / w), about 4x from w=16 to w=256 (asserted: at least 2x)."""
    def mean_error(w, draws=10):
        g = torch.Generator().manual_seed(w)
        x = torch.randn(6, 3, dtype=torch.float64, generator=g)
        gates = [torch.bernoulli(torch.full((6, w), 0.5, dtype=torch.float64), generator=g) for _ in range(2)]
        sigma = w ** -0.5
        limit = kernels.fnpf_limit(x, gates, sigma)
        errs = []
        for _ in range(draws):
            ws = [sigma * (2 * torch.randint(0, 2, sh, generator=g) - 1).double() for sh in [(w, 3), (w, w), (1, w)]]
            errs.append(float((kernels.gated_ntk(ws, gates, x) - limit).norm() / limit.norm()))
        return sum(errs) / draws
    small, large = mean_error(16), mean_error(256)
    assert large < 0.5 * small and large < 0.2, (small, large)
