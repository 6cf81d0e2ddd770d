"""Checkpoints that survive any kill (issue #22): the nets of a job checkpoint as one group, a kill
at any instant (mid-epoch, between two nets' writes; single, stacked or row) resumes bit-identical
to an uninterrupted run on the CPU, a corrupt last.pt falls back to prev.pt, and Ctrl-C records
``interrupted``."""
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, TINY_ARCH, Killed, default_signals, evaluation_fails, kill_after_writes, make_cfg, same_run, strip_seconds, write_tiny_data
from gatelab.core import checkpoints
from gatelab.core.runs import seed_run_dirs
from gatelab.launch.plan import state_of
from gatelab.training.loop import train, train_seeds
from gatelab.training.rows import train_row


_strip = strip_seconds


def _same(a, b):
    return same_run(a, b)[1]


@pytest.mark.parametrize("cut", [3, 4, 5])  # 2 nets: after net 0 of epoch 2, after both, after net 0 of epoch 3
def test_a_stack_killed_between_its_nets_writes_resumes_bit_identical(tiny_root, tmp_path, monkeypatch, cut):
    over = ["regime=dlnpf", "arch.dense=[16,16]", "epochs=4", "seeds=[0,1]", "checkpoint_minutes=0"]
    ref = make_cfg([*over, f"out_root={tmp_path / 'ref'}"], tiny_root)
    train_seeds(ref, seed_run_dirs(ref))
    cfg = make_cfg([*over, f"out_root={tmp_path / 'cut'}"], tiny_root)
    restore = kill_after_writes(monkeypatch, cut)
    with pytest.raises(Killed):
        train_seeds(cfg, seed_run_dirs(cfg))
    restore()
    epochs = {s: checkpoints.load(d / "ckpt" / "last.pt")["epoch"] for s, d in seed_run_dirs(cfg).items()}
    assert len(set(epochs.values())) == (2 if cut % 2 else 1)  # an odd cut leaves the nets at different epochs
    resumed = train_seeds(cfg, seed_run_dirs(cfg))
    for s, d in seed_run_dirs(cfg).items():
        res = _same(seed_run_dirs(ref)[s], d)
        assert res["resumed_from_epoch"] == min(epochs.values()) == resumed[s]["resumed_from_epoch"]


def test_a_row_killed_between_its_nets_writes_resumes_bit_identical(tiny_root, tmp_path, monkeypatch):
    """The case #22 measured at 1.3e-2: a row with per-net SGD step sizes, cut after the first net's write."""
    over = ["arch=fc", *TINY_ARCH["fc"], "optimizer=sgd", "epochs=3", "regimes=[relu]", "lrs=[0.1,0.01]",
            "seeds=[0,1]", "checkpoint_minutes=0"]
    train_row(make_cfg([*over, f"out_root={tmp_path / 'whole'}"], tiny_root))
    restore = kill_after_writes(monkeypatch, 5)  # 4 nets: net 0 of epoch 2 written, nets 1-3 still at epoch 1
    with pytest.raises(Killed):
        train_row(make_cfg([*over, f"out_root={tmp_path / 'cut'}"], tiny_root))
    restore()
    train_row(make_cfg([*over, f"out_root={tmp_path / 'cut'}"], tiny_root))
    for res in (tmp_path / "whole").rglob("results.json"):
        _same(res.parent, tmp_path / "cut" / res.parent.relative_to(tmp_path / "whole"))


def test_a_mid_epoch_checkpoint_resumes_inside_the_epoch_exactly(tiny_root, tmp_path, monkeypatch):
    """checkpoint_minutes (here: after every step) writes a group last.pt inside the epoch; a kill
    right after one resumes at that step, with the epoch's data order and partial sums."""
    over = ["regime=relu", "arch.dense=[16]", "epochs=2", "seeds=[0,1]", "optimizer.batch_size=32"]
    ref = make_cfg([*over, f"out_root={tmp_path / 'ref'}"], tiny_root)
    train_seeds(ref, seed_run_dirs(ref))
    cfg = make_cfg([*over, "checkpoint_minutes=1e-9", f"out_root={tmp_path / 'cut'}"], tiny_root)
    restore = kill_after_writes(monkeypatch, 2 * 8 + 2 * 3)  # 8 steps an epoch: inside epoch 2, after step 3
    with pytest.raises(Killed):
        train_seeds(cfg, seed_run_dirs(cfg))
    restore()
    last = checkpoints.load(seed_run_dirs(cfg)[0] / "ckpt" / "last.pt")
    assert (last["epoch"], last["batch"]) == (1, 3) and last["partial"]["loss_sum"] > 0
    train_seeds(cfg, seed_run_dirs(cfg))
    for s, d in seed_run_dirs(cfg).items():
        _same(seed_run_dirs(ref)[s], d)


def test_a_truncated_last_checkpoint_falls_back_to_the_previous_one(tiny_root, tmp_path, monkeypatch, caplog):
    over = ["regime=dlnpf", "arch.dense=[16,16]", "checkpoint_minutes=0", "epochs=3"]
    train(make_cfg(over, tiny_root, tmp_path / "ref"), tmp_path / "ref")
    restore = kill_after_writes(monkeypatch, 2)  # stopped after epoch 2's last.pt
    with pytest.raises(Killed):
        train(make_cfg(over, tiny_root, tmp_path / "cut"), tmp_path / "cut")
    restore()
    last = tmp_path / "cut" / "ckpt" / "last.pt"
    last.write_bytes(last.read_bytes()[: last.stat().st_size // 2])  # a half-written file
    before = json.loads((tmp_path / "cut" / "results.json").read_text())["history"]
    assert len(before) == 2
    with caplog.at_level("WARNING", logger="gatelab"):  # the plan reads the fallback the resume takes
        assert state_of(tmp_path / "cut", 3) == ("failed, resumes after epoch 1", 2)
        res = train(make_cfg(over, tiny_root, tmp_path / "cut"), tmp_path / "cut")
    warned = [r.getMessage() for r in caplog.records if "unreadable" in r.getMessage()]
    assert len(warned) == 1 and str(last) in warned[0] and "\n" not in warned[0]  # the plan's read names it once
    reason = warned[0].split(" (", 1)[1].rsplit(");", 1)[0]  # torch's message, cut at a sentence or a word
    assert reason.endswith((".", "...")) or reason.split()[-1].isalpha(), reason
    assert res["resumed_from_epoch"] == 1 and _strip(res["history"][:2]) == _strip(before)
    _same(tmp_path / "ref", tmp_path / "cut")


def test_ctrl_c_records_interrupted_and_the_rerun_resumes(tiny_root, tmp_path, monkeypatch):
    over = ["regime=relu", "arch.dense=[16]", "epochs=3", "checkpoint_minutes=0"]
    train(make_cfg(over, tiny_root, tmp_path / "ref"), tmp_path / "ref")
    restore = evaluation_fails(monkeypatch, 3, KeyboardInterrupt)  # Ctrl-C during epoch 3's evaluation
    with pytest.raises(KeyboardInterrupt):
        train(make_cfg(over, tiny_root, tmp_path / "cut"), tmp_path / "cut")
    restore()
    saved = json.loads((tmp_path / "cut" / "results.json").read_text())
    assert saved["status"] == "interrupted" and "traceback" not in saved and len(saved["history"]) == 2
    assert train(make_cfg(over, tiny_root, tmp_path / "cut"), tmp_path / "cut")["resumed_from_epoch"] == 2
    _same(tmp_path / "ref", tmp_path / "cut")


@pytest.mark.slow
def test_sigkill_at_random_instants_then_resume_equals_uninterrupted(tmp_path):
    """A stacked job, SIGKILLed three times at random instants (checkpoints every step and every
    epoch, so kills land inside epochs and between nets' writes), ends as the uninterrupted job."""
    root = write_tiny_data(tmp_path / "data", n_train=2000, n_test=100)
    args = ["epochs=4", "progress=false", "arch.dense=[32,32]", "regime=dlnpf", "seeds=[0,1,2]", "threads=1",
            "checkpoint_minutes=0.0005", f"data.root={root}"]

    def start(out):
        return subprocess.Popen([sys.executable, str(ROOT / "run.py"), *args, f"out_root={out}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.time()
    assert start(tmp_path / "ref").wait(timeout=300) == 0
    span = time.time() - t0
    rng = random.Random(22)
    for _ in range(3):
        p = start(tmp_path / "cut")
        time.sleep(rng.uniform(0.3, 0.9) * span)
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        p.wait()
        for res in (tmp_path / "cut").rglob("seed?-*/results.json"):  # what the next plan says of them
            if json.loads(res.read_text())["status"] == "running":
                assert state_of(res.parent, 4)[0].startswith("stopped: pid "), state_of(res.parent, 4)
    assert start(tmp_path / "cut").wait(timeout=300) == 0
    refs = sorted((tmp_path / "ref").rglob("seed?-*/results.json"))
    assert len(refs) == 3
    for res in refs:
        _same(res.parent, tmp_path / "cut" / res.parent.relative_to(tmp_path / "ref"))


STOP_ARGS = ["epochs=3", "progress=false", "threads=1", "arch.dense=[64,64]", "optimizer.batch_size=1",
             "checkpoint_every=100"]  # about 2 s an epoch; no checkpoint before the end but the stop's own


def _saved_point(out: str) -> tuple[int, int]:
    """The point the stop line says was saved: (epochs done, steps of the next)."""
    m = re.search(r"progress saved at (?:epoch (\d+), step (\d+) of the next|the end of epoch (\d+))", out)
    assert m, out[-3000:]
    return (int(m[1]), int(m[2])) if m[1] else (int(m[3]), 0)


def _wait_for(path, text: str, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and text not in (path.read_text() if path.exists() else ""):
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("sig, code, by", [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")])
def test_ctrl_c_or_sigterm_saves_progress_prints_one_line_and_the_rerun_resumes_exactly(tmp_path, sig, code, by):
    """Stopped inside epoch 2 with no checkpoint since the start (checkpoint_every=100, checkpoint_minutes
    10): the stop writes a group checkpoint at the next step, the plan names that point, and the same
    command resumes from it and ends as an uninterrupted run."""
    root = write_tiny_data(tmp_path / "data", n_train=6000, n_test=100)
    cmd = [sys.executable, str(ROOT / "run.py"), *STOP_ARGS, f"data.root={root}"]
    assert subprocess.run([*cmd, f"out_root={tmp_path / 'ref'}"], capture_output=True).returncode == 0
    log = tmp_path / "log"
    with open(log, "w") as f:
        p = subprocess.Popen([*cmd, f"out_root={tmp_path / 'cut'}"], stdout=f, stderr=subprocess.STDOUT,
                             preexec_fn=default_signals)
        _wait_for(log, "epoch 1/3")  # the event: epoch 1 recorded; the stop lands at its end or a step after
        p.send_signal(sig)
        p.wait(timeout=60)
    out = log.read_text()
    assert p.returncode == code
    assert "Traceback" not in out and out.count("stopped by") == 1 and f"stopped by {by}" in out
    epoch, step = _saved_point(out)
    assert (epoch, step) >= (1, 0)
    run = next((tmp_path / "cut").rglob("results.json")).parent
    assert json.loads((run / "results.json").read_text())["status"] == "interrupted"
    assert state_of(run, 3)[0] == f"interrupted, resumes after epoch {epoch}" + (f", step {step} of the next" if step else "")
    again = subprocess.run([*cmd, f"out_root={tmp_path / 'cut'}"], capture_output=True, text=True)
    assert again.returncode == 0, again.stdout[-2000:]
    assert "already" not in again.stdout and "missing" not in again.stdout
    res, _ = same_run(next((tmp_path / "ref").rglob("results.json")).parent, run)
    assert json.loads((run / "results.json").read_text())["resumed_from_epoch"] == epoch


@pytest.mark.slow
def test_ctrl_c_with_the_output_piped_records_interrupted_and_keeps_progress(tmp_path):
    """``python run.py ... 2>&1 | tee log`` and Ctrl-C: the same signal ends the reader, so every later
    write of the run meets a closed pipe; the run is still ``interrupted`` (not ``failed`` with
    BrokenPipeError), exit 130, with its progress saved."""
    root = write_tiny_data(tmp_path / "data", n_train=6000, n_test=100)
    args = [a for a in STOP_ARGS if a != "progress=false"] + ["progress=true"]
    p = subprocess.Popen([sys.executable, str(ROOT / "run.py"), *args, f"data.root={root}", f"out_root={tmp_path}"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=default_signals)
    deadline = time.time() + 120
    while time.time() < deadline and "epoch 1/3 " not in p.stdout.readline():
        pass
    p.stdout.close()  # tee is gone (the event: epoch 1's line was read)
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=60) == 130
    run = next(tmp_path.rglob("results.json")).parent
    res = json.loads((run / "results.json").read_text())
    assert res["status"] == "interrupted" and "error" not in res, res.get("error")
    state = state_of(run, 3)[0]
    assert state.startswith("interrupted, resumes after epoch ") and state != "interrupted, resumes after epoch 0"


def test_a_stop_signal_at_any_instant_of_a_step_saves_the_point_it_names(tiny_root, tmp_path, monkeypatch):
    """A signal landing between the loop's check for a stop and its checkpoint (here: inside the check
    for a timed checkpoint) is taken at the next step, with that step saved: the stop never names a
    point it did not save (the full suite under load once caught a stop with no checkpoint at all)."""
    from gatelab.training import loop, stops
    over = ["regime=relu", "arch.dense=[16]", "epochs=2", "checkpoint_minutes=0", "checkpoint_every=100"]
    calls, real = {"n": 0}, loop._Saver.due

    def due(self):
        calls["n"] += 1
        if calls["n"] == 5:  # Ctrl-C arrives here, during step 5 of epoch 1
            stops.STOP.handle(signal.SIGINT, None)
        return real(self)
    monkeypatch.setattr(loop._Saver, "due", due)
    with pytest.raises(stops.Interrupted) as stopped:
        train(make_cfg(over, tiny_root, tmp_path / "cut"), tmp_path / "cut")
    at = re.search(r"progress saved at epoch (\d+), step (\d+) of the next", stopped.value.saved)
    assert at, stopped.value.saved
    last = checkpoints.load(tmp_path / "cut" / "ckpt" / "last.pt")
    assert checkpoints.position(last) == (int(at[1]), int(at[2])) == (0, 6)
    assert state_of(tmp_path / "cut", 2) == ("interrupted, resumes after epoch 0, step 6 of the next", 2)
