"""A whole table row in one process (regimes x step sizes x seeds, stacked by family): each net
gets what its single run gets, in the run directory its single run uses."""
import math

import pytest
import torch

from conftest import TINY_ARCH, make_cfg, reassociation_tol
from gatelab.core import checkpoints, machine
from gatelab.core.config import ConfigError
from gatelab.core.runs import run_dir
from gatelab.training.loop import train
from gatelab.training.rows import family, train_row

ROW = ["relu", "frnpf_ii", "frnpf_di", "dlnpf", "flnpf"]


@pytest.mark.parametrize("arch", ["fc", "gconv", "vconv"])
def test_each_net_of_a_row_equals_its_single_run(tiny_root, tmp_path, arch):
    # MNIST for every arch, as before the conv nets defaulted to CIFAR-10: on tiny CIFAR-10 a VCONV net at
    # lr 0.05 amplifies reassociation to ~20 steps*eps*max|w| (1.9e-5 here), past this test's bound.
    over = ["dataset=mnist", f"arch={arch}", *TINY_ARCH[arch], "optimizer=sgd", "epochs=2", f"out_root={tmp_path}"]
    row = make_cfg([*over, f"regimes=[{','.join(ROW)}]", "lrs=[0.05,0.01]", "seeds=[0,1]"], tiny_root)
    results = train_row(row)
    assert sorted(results) == sorted((r, lr, s) for r in ROW for lr in (0.05, 0.01) for s in (0, 1))
    assert all(res["status"] == "completed" for res in results.values())
    # each net's provenance names its stack mates, with their own step sizes where they differ; FC nets always
    # stack (machine.stack_seeds), conv nets where the machine's conv path does (not on every CPU: then alone)
    stack = results[("relu", 0.05, 0)]["env"]["stack"]
    together = ["relu/seed0/lr0.05", "relu/seed0/lr0.01"]
    assert all(n in stack for n in together) if machine.stack_seeds(row) else stack == ["relu/seed0"], stack
    steps = 2 * math.ceil(240 / 32)
    checked = [("relu", 0.05, 1), ("frnpf_di", 0.01, 0), ("dlnpf", 0.05, 0), ("flnpf", 0.01, 1)]
    for regime, lr, seed in checked:
        single_over = [*over, f"regime={regime}", f"optimizer.lr={lr}", f"seed={seed}", "out_root=" + str(tmp_path / "single")]
        if regime == "flnpf":  # the same source: the row's ReLU run of this step size and seed
            single_over.append(f"regime.source={run_dir(make_cfg([*over, 'regime=relu', f'optimizer.lr={lr}', f'seed={seed}']))}")
        cfg = make_cfg(single_over, tiny_root)
        alone = train(cfg, tmp_path / f"alone-{regime}-{lr}-{seed}")
        row_dir = run_dir(make_cfg([*over, f"regime={regime}", f"optimizer.lr={lr}", f"seed={seed}"]))
        wr = checkpoints.load(row_dir / "ckpt" / "last.pt")
        wa = checkpoints.load(tmp_path / f"alone-{regime}-{lr}-{seed}" / "ckpt" / "last.pt")
        tol = reassociation_tol(wa["model"], steps)
        for k in wa["model"]:
            torch.testing.assert_close(wr["model"][k], wa["model"][k], rtol=0, atol=tol)
        assert [h["test_acc"] for h in results[(regime, lr, seed)]["history"]] == pytest.approx(
            [h["test_acc"] for h in alone["history"]], abs=1.01 / 80)
        # its checkpoint resumes a single run at its own step size
        assert wr["optimizer"]["param_groups"][0]["lr"] == pytest.approx(lr)
    # the bound can fail: the other step size's weights are over 100x outside it
    a = checkpoints.load(run_dir(make_cfg([*over, "regime=relu", "optimizer.lr=0.05", "seed=1"])) / "ckpt" / "last.pt")["model"]
    b = checkpoints.load(run_dir(make_cfg([*over, "regime=relu", "optimizer.lr=0.01", "seed=1"])) / "ckpt" / "last.pt")["model"]
    assert max(float((a[k] - b[k]).abs().max()) for k in a) > 100 * reassociation_tol(a, steps)


def test_a_row_and_single_runs_skip_each_others_finished_runs(tiny_root, tmp_path):
    over = ["arch=fc", *TINY_ARCH["fc"], "optimizer=sgd", "optimizer.lr=0.05", "epochs=1", f"out_root={tmp_path}"]
    single = make_cfg([*over, "regime=frnpf_ii", "seed=1"], tiny_root)
    first = train(single, run_dir(single))
    results = train_row(make_cfg([*over, "regimes=[relu,frnpf_ii]", "seeds=[0,1]"], tiny_root))
    assert results[("frnpf_ii", 0.05, 1)].get("skipped") and results[("frnpf_ii", 0.05, 1)]["history"] == first["history"]
    assert not results[("relu", 0.05, 0)].get("skipped")
    again = train(make_cfg([*over, "regime=relu", "seed=0"], tiny_root), run_dir(make_cfg([*over, "regime=relu", "seed=0"])))
    assert again.get("skipped")


def test_a_row_with_stack_seeds_false_trains_every_net_alone_in_the_rows_order():
    """``stack_seeds=false`` holds for a row too (``regimes=[...]``): each net its own stack, the row's order kept."""
    from gatelab.training.rows import row_groups
    over = ["arch=vconv", "regimes=[dln,relu,frnpf_ii,frnpf_di]", "seeds=[0,1]"]
    stacked, alone = row_groups(make_cfg([*over, "stack_seeds=true"])), row_groups(make_cfg([*over, "stack_seeds=false"]))
    assert sorted(len(g) for g in stacked) == [2, 2, 4] and [len(g) for g in alone] == [1] * 8
    assert [key for g in alone for key, _ in g] == [key for g in stacked for key, _ in g]


def test_families_stack_the_regimes_that_share_a_forward():
    fam = {r: family(make_cfg([f"regime={r}"])) for r in ROW + ["soft_relu", "dln"]}
    assert fam["frnpf_ii"] == fam["frnpf_di"]  # both frozen hard-gated feature nets
    assert len({fam[r] for r in ("relu", "frnpf_ii", "dlnpf", "flnpf", "soft_relu", "dln")}) == 6
    assert fam["flnpf"][0] and not fam["frnpf_ii"][0]  # sourced regimes train last


@pytest.mark.parametrize("over,match", [
    (["optimizer=adam", "lrs=[1e-3,1e-4]"], "plain SGD"),
    (["optimizer=sgd", "optimizer.momentum=0.9", "lrs=[0.1,0.01]"], "plain SGD"),
    (["regimes=[relu,nope]"], "unknown regime 'nope'"),
])
def test_bad_rows_are_rejected_before_training(tiny_root, tmp_path, over, match):
    with pytest.raises(ConfigError, match=match):
        train_row(make_cfg([*over, f"out_root={tmp_path}"], tiny_root))
    assert not list(tmp_path.rglob("results.json"))


def test_an_interrupted_row_resumes_bit_identical(tiny_root, tmp_path, monkeypatch):
    """Stopped after epoch 1 (an exception where results.json is written), the row resumes from its
    nets' last.pt (each net's own step size restored as the scaling it trains with) and ends where an
    uninterrupted row ends, bit for bit on the CPU."""
    from gatelab.training.run_state import RunState
    over = ["arch=fc", *TINY_ARCH["fc"], "optimizer=sgd", "epochs=3", "regimes=[relu,frnpf_ii]", "lrs=[0.05,0.01]"]
    whole = train_row(make_cfg([*over, f"out_root={tmp_path / 'whole'}"], tiny_root))
    write = RunState.write

    def stop_after_epoch_1(self):
        write(self)
        if len(self.history) == 1:
            raise RuntimeError("preempted")
    monkeypatch.setattr(RunState, "write", stop_after_epoch_1)
    with pytest.raises(RuntimeError, match="preempted"):
        train_row(make_cfg([*over, f"out_root={tmp_path / 'cut'}"], tiny_root))
    monkeypatch.setattr(RunState, "write", write)
    resumed = train_row(make_cfg([*over, f"out_root={tmp_path / 'cut'}"], tiny_root))
    for key, res in resumed.items():  # the first family was stopped after epoch 1; the second had not started
        assert res["status"] == "completed" and res.get("resumed_from_epoch") == (1 if key[0] == "relu" else None)
        assert [h["train_loss"] for h in res["history"]] == [h["train_loss"] for h in whole[key]["history"]]
    for c in (tmp_path / "whole").rglob("last.pt"):
        a = checkpoints.load(c)["model"]
        b = checkpoints.load(tmp_path / "cut" / c.relative_to(tmp_path / "whole"))["model"]
        assert all(torch.equal(a[k], b[k]) for k in a)
