"""Interrupted runs resume from ckpt/last.pt and end exactly as if never interrupted (CPU: bit-identical)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from conftest import ROOT, make_cfg, same_run, strip_seconds, write_tiny_data
from gatelab.core import checkpoints
from gatelab.training import loop as train_mod
from gatelab.training.loop import train


_strip, _same_run = strip_seconds, same_run


def _cut_at_evaluation(monkeypatch, n: int, cfg, run_dir) -> None:
    """Train until the node dies during the ``n``-th evaluation (epoch n); evaluation works again after."""
    real_evaluate = train_mod.evaluate
    calls = {"n": 0}

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] == n:
            raise RuntimeError("node lost")
        return real_evaluate(*a, **k)
    monkeypatch.setattr(train_mod, "evaluate", flaky)
    with pytest.raises(RuntimeError, match="node lost"):
        train(cfg, run_dir)
    monkeypatch.setattr(train_mod, "evaluate", real_evaluate)


def test_a_failed_run_is_resumed_and_matches_an_uninterrupted_one(tiny_root, tmp_path, monkeypatch):
    over = ["regime=dlnpf", "arch.dense=[16,16]", "epochs=4", "optimizer=adam"]
    train(make_cfg(over, tiny_root, tmp_path / "ref"), tmp_path / "ref")
    _cut_at_evaluation(monkeypatch, 3, make_cfg(over, tiny_root, tmp_path / "cut"), tmp_path / "cut")
    saved = json.loads((tmp_path / "cut" / "results.json").read_text())
    assert saved["status"] == "failed" and len(saved["history"]) == 2
    res = train(make_cfg(over, tiny_root, tmp_path / "cut"), tmp_path / "cut")
    assert res["resumed_from_epoch"] == 2 and res["resumes"] == 1
    _same_run(tmp_path / "ref", tmp_path / "cut")


def test_completed_and_diverged_runs_are_skipped_unless_forced(cfg_factory, tmp_path):
    res = train(cfg_factory(), tmp_path / "run")
    again = train(cfg_factory(), tmp_path / "run")
    assert again["skipped"] and again["finished_at"] == res["finished_at"]
    forced = train(cfg_factory("force=true"), tmp_path / "run")
    assert "skipped" not in forced and "resumed_from_epoch" not in forced
    div = train(cfg_factory("optimizer=sgd", "optimizer.lr=1e30"), tmp_path / "div")
    assert div["status"] == "diverged" and train(cfg_factory("optimizer=sgd", "optimizer.lr=1e30"), tmp_path / "div")["skipped"]


@pytest.mark.slow
def test_sigkill_mid_epoch_then_resume_equals_uninterrupted(tmp_path):
    root = write_tiny_data(tmp_path / "data", n_train=6000, n_test=200)
    args = ["epochs=6", "progress=false", "arch.dense=[64,64]", "threads=1", f"data.root={root}"]

    def start(run_dir):
        return subprocess.Popen([sys.executable, str(ROOT / "run.py"), *args, f"hydra.run.dir={run_dir}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ref = start(tmp_path / "ref")
    assert ref.wait(timeout=300) == 0
    cut = start(tmp_path / "cut")
    results = tmp_path / "cut" / "results.json"
    deadline = time.time() + 120
    while time.time() < deadline:  # kill as soon as two epochs are on disk: in the middle of the third
        try:
            if len(json.loads(results.read_text())["history"]) >= 2:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    os.kill(cut.pid, signal.SIGKILL)
    cut.wait()
    killed = json.loads(results.read_text())
    assert killed["status"] == "running" and 2 <= len(killed["history"]) < 6
    assert start(tmp_path / "cut").wait(timeout=300) == 0
    _, resumed = _same_run(tmp_path / "ref", tmp_path / "cut")
    # last.pt is written on the checkpoint thread after results.json is: it can lag by one epoch
    assert resumed["resumed_from_epoch"] >= max(1, len(killed["history"]) - 1)


def test_checkpoint_every_n_epochs_writes_less_and_resumes_identically(tiny_root, tmp_path, monkeypatch):
    """checkpoint_every=2 over 5 epochs: last.pt at epochs 2, 4, 5 only; best.pt holds the best epoch's
    weights (kept in memory between checkpoints); a run cut in epoch 4 replays from epoch 2 and ends
    bit-identical to an uninterrupted run."""
    over = ["regime=dlnpf", "arch.dense=[16,16]", "epochs=5", "optimizer=adam", "checkpoint_every=2"]
    written = []
    real_save, real_rotating = checkpoints.save, checkpoints.save_rotating
    monkeypatch.setattr(checkpoints, "save", lambda path, **st: written.append((path.name, st["epoch"])) or
                        real_save(path, **st))
    monkeypatch.setattr(checkpoints, "save_rotating", lambda path, **st: written.append((path.name, st["epoch"]))
                        or real_rotating(path, **st))
    ref = train(make_cfg(over, tiny_root, tmp_path / "ref"), tmp_path / "ref")
    assert [e for name, e in written if name == "last.pt"] == [2, 4, 5]
    best = checkpoints.load(tmp_path / "ref" / "ckpt" / "best.pt")
    assert (best["epoch"], best["test_acc"]) == (ref["best_epoch"], ref["best_test_acc"])
    every_epoch = train(make_cfg([*over[:-1]], tiny_root, tmp_path / "every"), tmp_path / "every")
    assert _strip(every_epoch["history"]) == _strip(ref["history"])  # the checkpoint schedule changes nothing
    every_best = checkpoints.load(tmp_path / "every" / "ckpt" / "best.pt")["model"]
    assert all(torch.equal(best["model"][k], v) for k, v in every_best.items())
    # dies in epoch 4, after the checkpoint of epoch 2
    _cut_at_evaluation(monkeypatch, 4, make_cfg(over, tiny_root, tmp_path / "cut"), tmp_path / "cut")
    res = train(make_cfg(over, tiny_root, tmp_path / "cut"), tmp_path / "cut")
    assert res["resumed_from_epoch"] == 2
    _same_run(tmp_path / "ref", tmp_path / "cut")
