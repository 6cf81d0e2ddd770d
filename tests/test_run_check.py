"""``python -m gatelab.core.run_check <out_root> [--repair]`` on run directories damaged in each way
a cluster (or older code) leaves them (issue #28, section 3)."""
import json
import os
import shutil

import pytest

from conftest import evaluation_fails, make_cfg
from gatelab.core import checkpoints, run_check
from gatelab.core.results import RESULTS, locked
from gatelab.core.runs import seed_run_dirs
from gatelab.launch import plan
from gatelab.papers.report import results_below
from gatelab.training.loop import train_seeds

OVER = ["regime=relu", "arch.dense=[16]", "epochs=3", "optimizer=sgd", "optimizer.lr=0.8", "checkpoint_minutes=0"]


class _Stop(Exception):
    pass


def _runs(tiny_root, out, seeds="[0,1,2,3,4,5,6]"):
    cfg = make_cfg([*OVER, f"seeds={seeds}", f"out_root={out}"], tiny_root)
    dirs = seed_run_dirs(cfg)
    train_seeds(cfg, dirs)
    return dirs


def _interrupted(tiny_root, out, monkeypatch, seed=9):
    """A run stopped by an exception in epoch 3 (history 2 epochs, last.pt at epoch 2, prev.pt at 1)."""
    cfg = make_cfg([*OVER, f"seed={seed}", f"seeds=[{seed}]", f"out_root={out}"], tiny_root)
    restore = evaluation_fails(monkeypatch, 3, _Stop)
    with pytest.raises(_Stop):
        train_seeds(cfg, seed_run_dirs(cfg))
    restore()
    return seed_run_dirs(cfg)[seed]


def _edit(path, **change):
    res = json.loads(path.read_text())
    res.update(change)
    path.write_text(json.dumps(res))


def _check(out, *args, capsys):
    code = run_check.main([str(out), *args])
    return code, capsys.readouterr().out


def _row(out_text, run_dir):
    return next(ln for ln in out_text.splitlines() if ln.startswith(run_dir.name) or f"/{run_dir.name} " in ln)


def test_sound_runs_are_ok_and_each_damage_is_found_and_repaired_where_it_can_be(tiny_root, tmp_path, monkeypatch,
                                                                                 capsys):
    out = tmp_path / "out"
    d = _runs(tiny_root, out)
    code, text = _check(out, capsys=capsys)
    assert code == 0 and text.count("  completed  ") == 7 and text.count(" ok\n") == 7, text
    # 0: kept points of a finished run (older code left them); 1: a stale best.pt; 2: best.pt gone;
    # 3: a history one epoch short; 4: temporaries of killed writers; 5: a moved directory (another key);
    # 6: a completed run whose process died after ... results "running", nobody trains it
    ck = {s: d[s] / "ckpt" for s in d}
    shutil.copy(ck[0] / "last.pt", ck[0] / "prev.pt")
    shutil.copy(ck[0] / "best.pt", ck[0] / "best_prev.pt")
    best = checkpoints.load(ck[1] / "best.pt")
    checkpoints.save(ck[1] / "best.pt", **{**{k: v for k, v in best.items() if k != "format"}, "epoch": 0})
    (ck[2] / "best.pt").unlink()
    res3 = json.loads((d[3] / RESULTS).read_text())
    _edit(d[3] / RESULTS, history=res3["history"][:-1])
    (ck[4] / ".last.pt.4242.tmp").write_bytes(b"x" * 1000)
    (d[4] / ".results.json.4242.tmp").write_text("{")
    moved = d[5].with_name(d[5].name.rsplit("-", 1)[0] + "-0123456789")
    d[5].rename(moved)
    _edit(d[6] / RESULTS, status="running")
    (d[6] / ".lock").write_text("pid 999999 on " + os.uname().nodename + "\n")
    interrupted = _interrupted(tiny_root, out, monkeypatch)
    last = interrupted / "ckpt" / "last.pt"
    last.write_bytes(last.read_bytes()[:100])

    code, text = _check(out, capsys=capsys)
    assert code == 1
    assert "prev.pt and best_prev.pt of a finished run" in _row(text, d[0])
    assert "holds epoch" in _row(text, d[1]) and "[UNSOUND]" in _row(text, d[1])
    assert "best.pt is missing" in _row(text, d[2]) and "[UNSOUND]" in _row(text, d[2])
    assert "history holds epochs [1, 2]" in _row(text, d[3]) and "[UNSOUND]" in _row(text, d[3])
    assert "2 temporary file(s) of killed writers" in _row(text, d[4])
    assert "stored config's key" in _row(text, moved) and str(d[5]) in _row(text, moved)
    assert "results.json says running, but pid 999999 no longer holds its lock" in _row(text, d[6])
    row = _row(text, interrupted)
    assert "  failed  " in row and "last.pt is unreadable; prev.pt is at (1, 0)" in row and \
        "resumes after epoch 1" in row
    assert "3 unsound" in text and "--repair frees" in text
    # the unsound runs are no results and no FLNPF sources
    listed = {p.parent for p, _ in results_below(out / "runs")[0]}
    assert d[1] not in listed and d[2] not in listed and d[0] in listed
    flnpf = make_cfg([*OVER, "regime=flnpf", "seed=1", f"out_root={out}"], tiny_root)
    with pytest.raises(Exception, match="holds epoch .* its results.json says best_epoch"):
        plan.check(plan.build(flnpf))

    code, text = _check(out, "--repair", capsys=capsys)
    assert code == 1 and "after repair: 3 runs with findings" in text  # the unsound ones: only retraining mends
    assert not (ck[0] / "prev.pt").exists() and not (ck[0] / "best_prev.pt").exists()
    assert not checkpoints.temporaries(ck[4]) and not checkpoints.temporaries(d[4])
    assert d[5].is_dir() and not moved.exists()
    assert json.loads((d[6] / RESULTS).read_text())["status"] == "interrupted"
    assert checkpoints.position(checkpoints.load(last)) == (1, 0)
    assert plan.state_of(interrupted, 3) == ("failed, resumes after epoch 1", 2)
    code, text = _check(out, capsys=capsys)
    assert sorted(ln.split()[0].split("/")[-1] for ln in text.splitlines() if "UNSOUND" in ln) == \
        sorted(x.name for x in (d[1], d[2], d[3]))


def test_a_run_being_trained_is_left_alone(tiny_root, tmp_path, capsys):
    out = tmp_path / "out"
    d = _runs(tiny_root, out, "[0]")[0]
    (d / "ckpt" / ".last.pt.77.tmp").write_bytes(b"x")
    _edit(d / RESULTS, status="running")
    with locked([d]):  # this process trains it
        code, text = _check(out, "--repair", capsys=capsys)
        assert f"running (pid {os.getpid()}" in _row(text, d) and "training now" in text
    assert (d / "ckpt" / ".last.pt.77.tmp").exists()
    assert json.loads((d / RESULTS).read_text())["status"] == "running"
    code, text = _check(out, "--repair", capsys=capsys)  # its trainer is gone now
    assert not (d / "ckpt" / ".last.pt.77.tmp").exists()
    assert json.loads((d / RESULTS).read_text())["status"] == "interrupted"


def test_no_run_directory_is_one_line_and_exit_2(tmp_path, capsys):
    assert run_check.main([str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err
