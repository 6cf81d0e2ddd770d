"""Paper 004's set-up in the shared machinery: the CIFAR-10 binary task, Gaussian init, step
checkpoints, and iterative magnitude pruning as chained runs."""
import json

import numpy as np
import pytest
import torch

from conftest import make_cfg
from gatelab import checkpoints, data as data_mod, neurons, pruning
from gatelab.config import ConfigError, validate
from gatelab.runs import run_dir
from gatelab.train import train, train_runs

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
    from gatelab import regimes
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
    from gatelab.runs import seed_run_dirs
    out = train_runs(cfg, seed_run_dirs(cfg))
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
