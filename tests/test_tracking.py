"""logger=wandb: one wandb run per gatelab run; off by default; offline mode never blocks on the network."""
import json
import sys
import time
import types

import pytest

from gatelab.training.loop import train
from gatelab.training.tracking import wandb_id


class FakeRun:
    def __init__(self, **kw):
        self.init, self.logged, self.summary, self.exit_code = kw, [], {}, None

    def log(self, row, step):
        self.logged.append((step, row))

    def finish(self, exit_code=0):
        self.exit_code = exit_code


def test_default_logger_is_off(cfg_factory):
    assert cfg_factory().logger.name == "none"


def test_wandb_logger_logs_each_epoch_with_cell_group_and_seed_name(cfg_factory, tmp_path, monkeypatch):
    runs = []
    fake = types.SimpleNamespace(init=lambda **kw: runs.append(FakeRun(**kw)) or runs[-1])
    monkeypatch.setitem(sys.modules, "wandb", fake)
    res = train(cfg_factory("logger=wandb", "epochs=2", "seed=3"), tmp_path / "run")
    (run,) = runs
    assert run.init["group"] == "mnist-fc-adam-lr0.0003/relu" and run.init["name"] == "seed3"
    assert run.init["config"]["seed"] == 3 and run.init["resume"] == "allow"
    assert [step for step, _ in run.logged] == [1, 2]
    assert run.logged[1][1]["test_acc"] == res["history"][1]["test_acc"]
    assert run.summary["status"] == "completed" and run.exit_code == 0


def test_wandb_offline_really_runs_without_network(cfg_factory, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    t = time.time()
    res = train(cfg_factory("logger=wandb", "epochs=1"), tmp_path / "run")
    assert res["status"] == "completed" and time.time() - t < 90
    assert list((tmp_path / "run" / "wandb").glob("offline-run-*"))


def _stacked_killed_then_resumed(cfg_factory, tmp_path, monkeypatch, *over):
    """seeds=[0,1], 3 epochs, killed after net 0's epoch-2 checkpoint (net 1's is epoch 1), then resumed."""
    from conftest import Killed, kill_after_writes
    from gatelab.core.runs import seed_run_dirs
    from gatelab.training.loop import train_seeds
    cfg = cfg_factory("logger=wandb", "epochs=3", "seeds=[0,1]", "checkpoint_minutes=0", f"out_root={tmp_path}", *over)
    restore = kill_after_writes(monkeypatch, 3)
    with pytest.raises(Killed):
        train_seeds(cfg, seed_run_dirs(cfg))
    restore()
    return train_seeds(cfg, seed_run_dirs(cfg)), seed_run_dirs(cfg)


def test_wandb_gets_one_run_per_stacked_net_resumed_into_the_same_run(cfg_factory, tmp_path, monkeypatch):
    """Stacked seeds: one wandb run each (a second init must not finish the first: reinit=create_new),
    and after a kill each net's resumed attempt continues its wandb run (id = run key) from its
    resume point, with the final summary."""
    runs = []
    fake = types.SimpleNamespace(init=lambda **kw: runs.append(FakeRun(**kw)) or runs[-1])
    monkeypatch.setitem(sys.modules, "wandb", fake)
    res, dirs = _stacked_killed_then_resumed(cfg_factory, tmp_path, monkeypatch)
    assert [r.init["name"] for r in runs] == ["seed0", "seed1", "seed0", "seed1"]
    assert all(r.init["reinit"] == "create_new" and r.init["resume"] == "allow" for r in runs)
    first, second = runs[:2], runs[2:]
    for s, (a, b) in enumerate(zip(first, second)):
        first_at = json.loads((dirs[s] / "results.json").read_text())["attempts"][0]["id"]
        assert a.init["id"] == b.init["id"] == wandb_id(dirs[s], first_at)  # the resume continues its run
        assert a.exit_code == 1 and b.exit_code == 0 and b.summary["status"] == "completed"
        assert b.summary["best_test_acc"] == res[s]["best_test_acc"]
    assert [step for step, _ in first[0].logged] == [1, 2] and [step for step, _ in first[1].logged] == [1, 2]
    # both nets resume from epoch 1 (the point they share): epochs 2 and 3 are logged again
    assert [step for step, _ in second[0].logged] == [2, 3] == [step for step, _ in second[1].logged]
    assert second[1].logged[-1][1]["test_acc"] == res[1]["history"][-1]["test_acc"]


def test_wandb_offline_stacked_and_resumed_with_the_real_package(cfg_factory, tmp_path, monkeypatch):
    """The case that crashed with wandb 0.31 (`Run ... is finished`): a stacked job with the real
    wandb in offline mode, killed and resumed; every attempt of a net writes under its wandb id (its run directory and first attempt)."""
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_SILENT", "true")
    res, dirs = _stacked_killed_then_resumed(cfg_factory, tmp_path, monkeypatch, "logger.mode=offline")
    for s, d in dirs.items():
        assert res[s]["status"] == "completed"
        attempts = sorted((d / "wandb").glob("offline-run-*"))  # offline-run-<time>-<id>[-<n>], one per attempt
        first_at = json.loads((d / "results.json").read_text())["attempts"][0]["id"]
        assert len(attempts) == 2 and {p.name.split("-")[3] for p in attempts} == {wandb_id(d, first_at)}


def test_the_same_settings_in_two_folders_or_retrained_afresh_are_wandb_runs_of_their_own(cfg_factory, tmp_path,
                                                                                         monkeypatch):
    """Issue #56: the wandb id is the run directory and its first attempt, not the run key (which leaves out
    out_root): two output folders give two runs, force=true a third; tags name the folder, regime and seed."""
    runs = []
    fake = types.SimpleNamespace(init=lambda **kw: runs.append(FakeRun(**kw)) or runs[-1])
    monkeypatch.setitem(sys.modules, "wandb", fake)
    from gatelab.core.runs import seed_run_dirs
    from gatelab.training.loop import train_seeds
    for out, extra in (("a", []), ("b", []), ("b", ["force=true"])):
        cfg = cfg_factory("logger=wandb", "epochs=1", "seeds=[0]", f"out_root={tmp_path / out}", *extra)
        train_seeds(cfg, seed_run_dirs(cfg))
    ids = [r.init["id"] for r in runs]
    assert len(ids) == 3 and len(set(ids)) == 3, ids
    assert {"a", "relu", "seed0"} <= set(runs[0].init["tags"]) and "b" in runs[1].init["tags"]
    assert runs[0].init["config"]["run_key"] == runs[1].init["config"]["run_key"]  # the same settings
