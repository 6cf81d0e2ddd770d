"""Regime semantics (paper 001 §4, docs/papers.md): what is frozen, what is copied, what is independent."""
import copy

import pytest
import torch
from torch import nn

from gatelab.analyses import kernels
from gatelab.core import checkpoints
from gatelab.data import datasets as data_mod
from gatelab.nets import regimes
from gatelab.core.config import ConfigError
from gatelab.core.validation import validate
from gatelab.training.loop import train
from gatelab.training.metrics import objective
from gatelab.training.stacking import make_optimizer

REGIMES = ["relu", "frnpf_ii", "frnpf_di", "dlnpf", "flnpf"]


def _params(net):
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def _hidden_equal(a, b):
    return all(torch.equal(p, q) for p, q in zip(a.hidden.parameters(), b.hidden.parameters()))


@pytest.fixture(scope="module")
def relu_source(tiny_root, tmp_path_factory):
    """A trained tiny ReLU FC run (2 epochs) to serve as the FLNPF source."""
    from conftest import TINY_ARCH, make_cfg
    run = tmp_path_factory.mktemp("relu_src")
    cfg = make_cfg(["arch=fc", *TINY_ARCH["fc"], "epochs=2"], tiny_root, run)
    assert train(cfg, run)["status"] == "completed"
    return run


def _model(cfg_factory, regime, relu_source, *extra):
    over = [f"regime={regime}", *extra]
    if regime == "flnpf":
        over.append(f"regime.source={relu_source}")
    cfg = cfg_factory(*over)
    data = data_mod.load(cfg.dataset, cfg.data, "cpu")
    model, _ = regimes.build_model(cfg, data.in_shape, data.out_dim)
    return cfg, data, model


def _steps(cfg, data, model, n=5):
    opt = make_optimizer(cfg.optimizer, regimes.trainable_parameters(model))
    gen = torch.Generator().manual_seed(0)
    for i, (xb, yb) in enumerate(data.train.batches(16, gen, shuffle=True)):
        if i == n:
            break
        loss, _ = objective(model(xb), yb, data.task)
        opt.zero_grad()
        loss.backward()
        opt.step()


@pytest.mark.parametrize("regime", REGIMES)
def test_what_trains_and_what_is_frozen(cfg_factory, relu_source, regime):
    cfg, data, model = _model(cfg_factory, regime, relu_source, "optimizer=sgd", "optimizer.lr=0.1")
    v0 = _params(model.value)
    f0 = _params(model.feature) if model.feature is not None else None
    _steps(cfg, data, model)
    assert any(not torch.equal(v0[k], v) for k, v in model.value.state_dict().items()), "value net must train"
    if regime == "relu":
        assert model.feature is None  # tied: one network makes gates and values
        return
    f1 = model.feature.state_dict()
    changed = [k for k in f0 if not torch.equal(f0[k], f1[k])]
    if regime == "dlnpf":
        assert changed and all(not k.startswith("head.") for k in changed)
    else:
        assert changed == []  # bit-identical frozen feature network


@pytest.mark.parametrize("regime", ["frnpf_ii", "frnpf_di", "dlnpf"])
def test_feature_initialisation(cfg_factory, relu_source, regime):
    _, _, model = _model(cfg_factory, regime, relu_source)
    if regime == "frnpf_di":
        assert _hidden_equal(model.feature, model.value)  # Θf0 = Θv0 ...
        model.value.hidden[0].weight.data.add_(1.0)
        assert not _hidden_equal(model.feature, model.value)  # ... as a copy, not shared storage
    else:
        for f, v in zip(model.feature.hidden, model.value.hidden):
            assert not torch.equal(f.weight, v.weight)
            assert abs(torch.corrcoef(torch.stack([f.weight.flatten(), v.weight.flatten()]))[0, 1]) < 0.2


def test_dependent_init_at_step_zero_is_the_relu_net(cfg_factory, relu_source):
    """FRNPF-DI at initialisation computes exactly what the ReLU net of the same seed computes."""
    _, data, di = _model(cfg_factory, "frnpf_di", relu_source)
    _, _, relu = _model(cfg_factory, "relu", relu_source)
    x = data.test.scale(data.test.x[:20])
    with torch.no_grad():
        torch.testing.assert_close(di(x), relu(x), rtol=0, atol=0)


def test_seed_changes_init_and_repeats_exactly(cfg_factory, relu_source):
    a = _model(cfg_factory, "dlnpf", relu_source, "seed=3")[2]
    b = _model(cfg_factory, "dlnpf", relu_source, "seed=3")[2]
    c = _model(cfg_factory, "dlnpf", relu_source, "seed=4")[2]
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.value.hidden[0].weight, c.value.hidden[0].weight)


def test_relu_regime_equals_a_plain_relu_network(cfg_factory, relu_source):
    _, data, model = _model(cfg_factory, "relu", relu_source)
    v = model.value
    plain = nn.Sequential(nn.Flatten(), *sum(([copy.deepcopy(l), nn.ReLU()] for l in v.hidden), []),
                          copy.deepcopy(v.head))
    x = data.test.scale(data.test.x)
    with torch.no_grad():
        torch.testing.assert_close(model(x), plain(x), rtol=0, atol=0)
    # and its gradients are those of the plain net
    for m in (model, plain):
        m.zero_grad()
        objective(m(x), data.test.y, "classification")[0].backward()
    for p, q in zip([*v.hidden.parameters(), *v.head.parameters()], plain.parameters()):
        torch.testing.assert_close(p.grad, q.grad)


def test_flnpf_gates_are_the_source_relu_gates(cfg_factory, relu_source):
    cfg, data, model = _model(cfg_factory, "flnpf", relu_source)
    src = checkpoints.load(checkpoints.resolve(str(relu_source), "best"))
    relu_cfg = cfg_factory("regime=relu", "seed=9")
    relu, _ = regimes.build_model(relu_cfg, data.in_shape, data.out_dim)
    relu.load_state_dict(src["model"])
    x = data.test.scale(data.test.x)
    for g_flnpf, g_relu in zip(kernels.gates(model, x), kernels.gates(relu, x)):
        assert torch.equal(g_flnpf, g_relu)
    # Θv0 is a fresh random draw, independent of the source's values and of its initialisation
    # (the source is the ReLU run of the same seed)
    relu0, _ = regimes.build_model(cfg_factory("regime=relu", f"seed={cfg.seed}"), data.in_shape, data.out_dim)
    for other in (relu, relu0):
        for a, b in zip(model.value.hidden, other.value.hidden):
            r = torch.corrcoef(torch.stack([a.weight.flatten(), b.weight.flatten()]))[0, 1]
            assert abs(r) < 0.2, r


def test_flnpf_uses_the_best_checkpoint_by_default_and_any_other_on_request(cfg_factory, relu_source):
    best = checkpoints.load(relu_source / "ckpt" / "best.pt")
    last = checkpoints.load(relu_source / "ckpt" / "last.pt")
    for which, state in (("best", best), ("last", last)):
        _, _, model = _model(cfg_factory, "flnpf", relu_source, f"regime.source_ckpt={which}")
        assert torch.equal(model.feature.hidden[0].weight, state["model"]["value.hidden.0.weight"])


def test_flnpf_refuses_a_mismatched_or_missing_source(cfg_factory, relu_source, tmp_path):
    with pytest.raises(ConfigError, match="architecture"):
        _model(cfg_factory, "flnpf", relu_source, "arch.dense=[16,16,8]")
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        _model(cfg_factory, "flnpf", relu_source, "regime.source_ckpt=epoch_7")
    with pytest.raises(ConfigError, match="regime.source"):
        validate(cfg_factory("regime=flnpf", "regime.source=null"))
    with pytest.raises(FileNotFoundError, match="regime.source=auto looks for the ReLU run"):
        regimes.build_model(cfg_factory("regime=flnpf", f"out_root={tmp_path / 'empty'}"), (1, 28, 28), 10)


@pytest.mark.parametrize("regime,same_as,extra", [("galu", "frnpf_ii", []), ("frozen_relu", "frnpf_di", []),
                                                  ("soft_galu", "dlnpf", ["regime.feature_act=gate"])])
def test_dgn_paper_names_are_the_npf_paper_networks(cfg_factory, relu_source, regime, same_as, extra):
    _, data, a = _model(cfg_factory, regime, relu_source, "regime.eps=0.1")
    _, _, b = _model(cfg_factory, same_as, relu_source, "regime.eps=0.1", *extra)
    x = data.test.scale(data.test.x)
    with torch.no_grad():
        torch.testing.assert_close(a(x), b(x), rtol=0, atol=0)


def test_gates_only_trains_the_gating_network_and_freezes_the_values(cfg_factory, relu_source):
    cfg, data, model = _model(cfg_factory, "gates_only", relu_source)
    v0, f0 = _params(model.value), _params(model.feature)
    _steps(cfg, data, model)
    assert all(torch.equal(v0[k], v) for k, v in model.value.state_dict().items())
    assert any(not torch.equal(f0[k], v) for k, v in model.feature.state_dict().items())


def test_soft_relu_and_dln_are_the_ordinary_network_with_another_gate(cfg_factory, relu_source):
    _, data, soft = _model(cfg_factory, "soft_relu", relu_source, "regime.beta=8", "regime.eps=0.4")
    _, _, dln = _model(cfg_factory, "dln", relu_source)
    v = soft.value
    x = data.test.scale(data.test.x[:10])
    z = x.flatten(1)
    zl = x.flatten(1)
    for layer in v.hidden:
        q = layer(z)
        z = q * 1.4 * torch.sigmoid(8 * q)
        zl = layer(zl)
    with torch.no_grad():
        torch.testing.assert_close(soft(x), v.head(z))
        torch.testing.assert_close(dln(x), v.head(zl))  # same seed: same Θ; all gates 1
    assert soft.feature is None and dln.feature is None


def test_soft_galu_gating_network_is_itself_gated_and_dlnpf_keeps_relu(cfg_factory, relu_source):
    """Paper 002 §3: soft-GaLU's gating network computes z_g = q_g·G(q_g), G = (1+eps)·sigmoid(beta·q_g);
    DLNPF's feature network is a ReLU network (paper 001's code)."""
    for regime, act in (("soft_galu", lambda q, g: q * g), ("dlnpf", lambda q, g: torch.relu(q))):
        cfg, data, model = _model(cfg_factory, regime, relu_source)
        x = data.test.scale(data.test.x[:7]).flatten(1)
        beta, eps = cfg.regime.beta, cfg.regime.eps
        zf, zv = x, x
        with torch.no_grad():
            for lf, lv in zip(model.feature.hidden, model.value.hidden):
                qf = lf(zf)
                g = (1 + eps) * torch.sigmoid(beta * qf)
                zf, zv = act(qf, g), lv(zv) * g
            torch.testing.assert_close(model(x), model.value.head(zv), rtol=0, atol=0)
    assert cfg_factory("regime=soft_galu").regime.feature_act == "gate"


def test_every_regime_reads_the_same_in_a_row_as_on_its_own():
    """``regimes=[..]`` reads each yaml itself: its ``defaults`` (galu.yaml: frnpf_ii) count as Hydra's do."""
    from gatelab.core.config import CONF_DIR
    from gatelab.core.runs import compose
    from gatelab.nets.regimes import regime_config
    names = sorted(p.stem for p in (CONF_DIR / "regime").glob("*.yaml"))
    assert "galu" in names
    for name in names:
        assert regime_config(name) == compose([f"regime={name}"]).regime, name
