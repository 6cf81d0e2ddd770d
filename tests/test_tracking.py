"""logger=wandb: one wandb run per gatelab run; off by default; offline mode never blocks on the network."""
import sys
import time
import types

import pytest

from gatelab.training.loop import train


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
