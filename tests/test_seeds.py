"""Seed-batched training: S seeds in one process give each seed what a run of it alone gives."""
import json
import math

import pytest
import torch

from conftest import TINY_ARCH, make_cfg, reassociation_tol
from gatelab.core import checkpoints
from gatelab.nets.dgn import DGN, Net, init_, stack_models, unstack_state
from gatelab.core.runs import run_dir, seed_run_dirs
from gatelab.training.loop import train, train_seeds
from gatelab.training.stacking import stack_optimizer_state, unstack_optimizer_state


@pytest.mark.parametrize("arch,regime", [("fc", "relu"), ("fc", "dlnpf"), ("gconv", "frnpf_di"), ("vconv", "dlnpf")])
def test_batched_seed_equals_its_single_run(tiny_root, tmp_path, arch, regime):
    """Batched matmuls and grouped convolutions reassociate some sums (bias gradients, conv
    reductions), and the thread count changes the order too: weights agree within
    :func:`conftest.reassociation_tol` (from fp32's eps, the weights' magnitude and the number of
    steps), losses to the same relative bound, accuracies to one example."""
    over = [f"arch={arch}", *TINY_ARCH[arch], f"regime={regime}", "epochs=2", "optimizer.lr=1e-3"]
    cfg = make_cfg(over, tiny_root)
    batched = train_seeds(cfg, {s: tmp_path / f"b{s}" for s in (0, 1, 2)})
    steps = cfg.epochs * math.ceil(240 / cfg.optimizer.batch_size)  # 240 tiny training images
    for seed in (0, 2):
        alone = train(make_cfg([*over, f"seed={seed}"], tiny_root), tmp_path / f"a{seed}")
        hb, ha = batched[seed]["history"], alone["history"]
        for key, n in (("test_acc", 80), ("train_acc", 240)):
            assert [h[key] for h in hb] == pytest.approx([h[key] for h in ha], abs=1.01 / n)
        for key in ("train_loss", "test_loss"):
            assert [h[key] for h in hb] == pytest.approx([h[key] for h in ha], rel=reassociation_tol(
                torch.ones(1), steps))
        wb = checkpoints.load(tmp_path / f"b{seed}" / "ckpt" / "last.pt")["model"]
        wa = checkpoints.load(tmp_path / f"a{seed}" / "ckpt" / "last.pt")["model"]
        tol = reassociation_tol(wa, steps)
        for k in wa:
            torch.testing.assert_close(wa[k], wb[k], rtol=0, atol=tol)
        # the bound can fail: another seed's weights are far outside it
        other = checkpoints.load(tmp_path / f"b{1}" / "ckpt" / "last.pt")["model"]
        assert max(float((wa[k] - other[k]).abs().max()) for k in wa) > 1000 * tol
    assert batched[0]["history"] != batched[1]["history"]  # seeds differ: own init, own data order


def test_channels_last_convolutions_give_the_nchw_numbers():
    """A stacked convolution on NHWC tensors: the same output and gradients as on NCHW (fp32, up to the
    order of the kernels' sums), and the model's weights and state dict keep their NCHW layout."""
    from gatelab.nets.dgn import StackedConv2d, use_channels_last
    torch.manual_seed(0)
    conv = StackedConv2d(3, 5, 7)
    torch.nn.init.normal_(conv.weight)
    x = torch.randn(3, 4, 5, 9, 9, requires_grad=True)
    outs = []
    for on in (False, True):
        use_channels_last(conv, on)
        y = conv(x)
        gx, gw = torch.autograd.grad((y * torch.linspace(-1, 1, y.numel()).view_as(y)).sum(), (x, conv.weight))
        outs.append((y, gx, gw))
    for a, b in zip(*outs):
        tol = 64 * torch.finfo(a.dtype).eps * float(a.detach().abs().max())
        torch.testing.assert_close(a, b, rtol=0, atol=tol)
    assert outs[1][0].shape == (3, 4, 7, 9, 9) and conv.weight.is_contiguous()
    # the check can fail: one seed's kernel swapped for another's changes the output far beyond it
    with torch.no_grad():
        conv.weight[[0, 1]] = conv.weight[[1, 0]]
        assert float((conv(x) - outs[1][0]).abs().max()) > 1000 * tol


@pytest.mark.parametrize("arch", ["gconv", "vconv"])
def test_channels_last_trains_the_same_run(tiny_root, tmp_path, arch):
    """``channels_last=true`` is a speed setting: the same run key, and after training the same weights
    within the reassociation bound; the run records that it ran so."""
    from gatelab.core.runs import run_key
    over = [f"arch={arch}", *TINY_ARCH[arch], "regime=dlnpf", "epochs=2", "optimizer.lr=1e-3"]
    assert run_key(make_cfg([*over, "channels_last=false"])) == run_key(make_cfg([*over, "channels_last=true"])) == \
        run_key(make_cfg(over))
    nchw = train(make_cfg([*over, "channels_last=false"], tiny_root), tmp_path / "nchw")
    nhwc = train(make_cfg([*over, "channels_last=true"], tiny_root), tmp_path / "nhwc")
    assert (nchw["env"]["channels_last"], nhwc["env"]["channels_last"]) == (False, True)
    steps = 2 * math.ceil(240 / 32)
    wa = checkpoints.load(tmp_path / "nchw" / "ckpt" / "last.pt")["model"]
    wb = checkpoints.load(tmp_path / "nhwc" / "ckpt" / "last.pt")["model"]
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], rtol=0, atol=reassociation_tol(wa, steps))
    assert [h["test_acc"] for h in nchw["history"]] == pytest.approx([h["test_acc"] for h in nhwc["history"]],
                                                                      abs=1.01 / 80)


def test_stacking_round_trips_models_and_optimiser_state():
    nets = []
    for s in range(3):
        g = torch.Generator().manual_seed(s)
        nets.append(DGN(init_(Net((3, 5, 5), [4], "gap", [6], 2), "glorot", g),
                        init_(Net((3, 5, 5), [4], "gap", [6], 2), "glorot", g), "soft"))
    stacked = stack_models(nets)
    for s, m in enumerate(nets):
        single = unstack_state(stacked.state_dict(), s)
        assert all(torch.equal(single[k], v) for k, v in m.state_dict().items())
    opt = torch.optim.Adam(stacked.parameters())
    stacked(torch.rand(3, 4, 3, 5, 5)).sum().backward()
    opt.step()
    state = opt.state_dict()
    per_seed = [unstack_optimizer_state(state, s) for s in range(3)]
    again = stack_optimizer_state(per_seed)
    for idx, st in state["state"].items():
        for k, v in st.items():
            assert torch.equal(again["state"][idx][k], v)


def test_a_seeds_optimiser_state_is_a_copy_that_later_steps_leave_alone():
    """Checkpoints are written on a background thread: the state handed over must not change under it
    (Adam's step count was once the live tensor, so a resumed run took a later step count)."""
    net = DGN(init_(Net((1, 4, 4), [], "flatten", [6], 2, stack=2), "glorot", torch.Generator().manual_seed(0)))
    opt = torch.optim.Adam(net.parameters())
    for _ in range(2):
        net(torch.rand(2, 3, 1, 4, 4)).sum().backward()
        opt.step()
    saved = unstack_optimizer_state(opt.state_dict(), 1)
    before = {i: {k: v.clone() for k, v in st.items()} for i, st in saved["state"].items()}
    net(torch.rand(2, 3, 1, 4, 4)).sum().backward()
    opt.step()
    for i, st in saved["state"].items():
        for k, v in st.items():
            assert torch.equal(v, before[i][k]), k


def test_seeds_switch_writes_each_seed_where_its_single_run_lives(tiny_root, tmp_path):
    cfg = make_cfg(["seeds=[0,1]", f"out_root={tmp_path}", "arch.dense=[16]"], tiny_root)
    dirs = seed_run_dirs(cfg)
    assert dirs[1] == run_dir(make_cfg(["seed=1", f"out_root={tmp_path}", "arch.dense=[16]"], tiny_root))
    res = train_seeds(cfg, dirs)
    assert {s: r["status"] for s, r in res.items()} == {0: "completed", 1: "completed"}
    assert json.loads((dirs[1] / "results.json").read_text())["config"]["seed"] == 1
    # a single run of seed 1 now finds its result and skips
    assert train(make_cfg(["seed=1", f"out_root={tmp_path}", "arch.dense=[16]"], tiny_root), dirs[1])["skipped"]


def test_one_diverging_seed_does_not_stop_the_others(tiny_root, tmp_path):
    cfg = make_cfg(["arch.dense=[16]", "optimizer=sgd", "optimizer.lr=3", "epochs=3"], tiny_root)
    res = train_seeds(cfg, {s: tmp_path / f"s{s}" for s in range(4)})
    statuses = {s: r["status"] for s, r in res.items()}
    assert set(statuses.values()) <= {"completed", "diverged"}
    for s, r in res.items():
        alone = train(make_cfg(["arch.dense=[16]", "optimizer=sgd", "optimizer.lr=3", "epochs=3", f"seed={s}"],
                               tiny_root), tmp_path / f"a{s}")
        assert alone["status"] == r["status"] and len(alone["history"]) == len(r["history"])


def test_bf16_autocast_trains_close_to_fp32_and_compile_wraps_the_forward(tiny_root, tmp_path, monkeypatch):
    over = ["arch.dense=[32,32]", "epochs=3", "optimizer.lr=3e-3"]
    fp32 = train(make_cfg(over, tiny_root), tmp_path / "fp32")
    bf16 = train(make_cfg([*over, "amp=true"], tiny_root), tmp_path / "bf16")
    assert bf16["status"] == "completed" and bf16["history"] != fp32["history"]
    assert abs(bf16["best_test_acc"] - fp32["best_test_acc"]) < 0.1
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda m, mode: compiled.append(mode) or m)
    res = train(make_cfg([*over, "compile=reduce-overhead"], tiny_root), tmp_path / "compiled")
    assert compiled == ["reduce-overhead"]
    assert [h["test_acc"] for h in res["history"]] == [h["test_acc"] for h in fp32["history"]]


def test_evaluation_batches_shrink_with_the_stack_and_give_the_same_numbers(tmp_path):
    """Each evaluation batch holds eval_batch_size / (nets x networks per net) examples, so a stack of
    conv nets with feature networks keeps one network's memory; the per-net numbers are those of one
    batch over the whole split (fp32 reassociation only)."""
    from gatelab.data.datasets import Data, Split
    from gatelab.training import stacking
    from gatelab.training.metrics import evaluate
    from gatelab.training.run_state import RunState
    from conftest import make_cfg
    over = ["dataset=cifar10", "arch=gconv", *TINY_ARCH["gconv"], "regime=dlnpf"]
    x = torch.randint(0, 256, (50, 3, 8, 8), dtype=torch.uint8)
    y = torch.randint(0, 10, (50,))
    data = Data(Split(x, y), Split(x, y), (3, 8, 8), 10, "classification")
    runs = [RunState(s, tmp_path / f"s{s}", make_cfg([*over, f"seed={s}"]), 0.0) for s in range(3)]
    for r in runs:
        r.build(data, {})
    model, _, _ = stacking.setup(make_cfg(over), runs, torch.device("cpu"))
    seen, graphs = [], []
    hook = model.value.hidden[0].register_forward_pre_hook(lambda m, args: seen.append(args[0].shape[1]))
    head = model.value.head.register_forward_hook(lambda m, args, out: graphs.append(out.requires_grad))
    small = evaluate(model, data.test, 20, "classification", 3)
    assert max(seen) == 20 // 6 and sum(seen) == 50  # 3 nets, each with its feature network
    seen.clear()
    whole = evaluate(model, data.test, 10**6, "classification", 3)
    hook.remove()
    head.remove()
    assert seen == [50] and not any(graphs)  # no autograd graph kept across batches (it held 19.7 GB once)
    assert small[1] == whole[1] and small[0] == pytest.approx(whole[0], rel=1e-5)


def test_bf16_evaluation_is_its_own_setting_close_to_fp32_and_never_touches_training(tiny_root, tmp_path):
    """``eval_precision=bf16`` (issue #37: evaluation had no bf16 path): the test forward runs in bf16, its
    loss within bf16's rounding of the fp32 loss; training is untouched (the same weights, bit for bit);
    the run key changes only when it is set."""
    from gatelab.core.runs import run_key
    over = ["dataset=cifar10", "arch=gconv", *TINY_ARCH["gconv"], "regime=dlnpf", "epochs=2", "optimizer.lr=1e-3"]
    assert run_key(make_cfg(over)) == run_key(make_cfg([*over, "eval_precision=fp32"]))
    assert run_key(make_cfg(over)) != run_key(make_cfg([*over, "eval_precision=bf16"]))
    fp32 = train(make_cfg(over, tiny_root), tmp_path / "fp32")
    bf16 = train(make_cfg([*over, "eval_precision=bf16"], tiny_root), tmp_path / "bf16")
    wa = checkpoints.load(tmp_path / "fp32" / "ckpt" / "last.pt")["model"]
    wb = checkpoints.load(tmp_path / "bf16" / "ckpt" / "last.pt")["model"]
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    for a, b in zip(fp32["history"], bf16["history"]):
        assert a["train_loss"] == b["train_loss"]
        # bf16 keeps 8 bits of mantissa: a loss of order 1 moves by a few 2^-8 through the net's layers
        assert b["test_loss"] == pytest.approx(a["test_loss"], abs=16 * 2 ** -8 * max(1.0, a["test_loss"]))
        assert abs(b["test_acc"] - a["test_acc"]) <= 0.05
    assert [h["test_loss"] for h in fp32["history"]] != [h["test_loss"] for h in bf16["history"]]  # it ran in bf16
