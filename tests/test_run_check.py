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


@pytest.fixture(scope="module")
def sound_runs(tiny_root, tmp_path_factory):
    """Three sound completed runs (seeds 0-2), trained once; each test damages a copy of its own."""
    out = tmp_path_factory.mktemp("sound") / "out"
    return out, _runs(tiny_root, out, "[0,1,2]")


def _copy(sound_runs, tmp_path):
    src, dirs = sound_runs
    shutil.copytree(src, tmp_path / "out")
    return tmp_path / "out", {s: tmp_path / "out" / d.relative_to(src) for s, d in dirs.items()}


def _table2(out, tmp_path):
    """The Table 2 report of ``out``'s runs: (seeds counted in the one cell, its Markdown)."""
    from gatelab.papers import npf
    (line,) = npf.write_table2(out / "runs", tmp_path / "table").itertuples()
    return line.n, (tmp_path / "table" / "table2.md").read_text()


def _lines_naming(text, name):
    return [ln for ln in text.splitlines() if name in ln]


def test_a_malformed_results_json_is_named_with_its_reason_by_every_reader_and_never_counted(sound_runs, tmp_path,
                                                                                              capsys):
    out, d = _copy(sound_runs, tmp_path)
    code, text = _check(out, capsys=capsys)
    assert code == 0 and _table2(out, tmp_path)[0] == 3  # sound: all three count
    full = (d[0] / RESULTS).read_text()
    (d[0] / RESULTS).write_text(full.rstrip()[:len(full.rstrip()) // 2])  # a truncated write (older code, a full disk)
    res = json.loads((d[1] / RESULTS).read_text())
    del res["config"]
    (d[1] / RESULTS).write_text(json.dumps(res))

    code, text = _check(out, capsys=capsys)
    assert code == 1
    (row0,) = _lines_naming(text, d[0].name)
    (row1,) = _lines_naming(text, d[1].name)
    assert "  malformed results.json  " in row0 and "no results.json" not in row0
    assert "results.json is malformed: not valid JSON, truncated? (" in row0 and "[UNSOUND]" in row0
    assert "resumes after epoch 3" in row0  # its command rewrites it from last.pt
    assert "results.json is malformed: no config; not counted" in row1 and "[UNSOUND]" in row1
    assert _row(text, d[2]).endswith(" ok") and "2 unsound" in text
    # the report: one line each under "Not counted", the cell counts the sound seed only
    n, md = _table2(out, tmp_path)
    assert n == 1
    (bad0,) = _lines_naming(md, str(d[0] / RESULTS))
    (bad1,) = _lines_naming(md, str(d[1] / RESULTS))
    assert "not counted: not valid JSON, truncated?" in bad0 and bad1 == f"- {d[1] / RESULTS}: not counted: no config"
    # the plan: its state names the file and why; it is not done
    state, left = plan.state_of(d[1], 3)
    assert state == "results.json not counted: no config, resumes after epoch 3" and left == 0
    assert not plan._completed(d[0]) and plan._completed(d[2])


def test_a_completed_runs_unreadable_last_pt_is_reported_not_ok(sound_runs, tmp_path, capsys):
    out, d = _copy(sound_runs, tmp_path)
    last = d[0] / "ckpt" / "last.pt"
    last.write_bytes(last.read_bytes()[:200])
    code, text = _check(out, "--repair", capsys=capsys)
    assert code == 1 and "after repair: 1 runs with findings" in text
    (row,) = _lines_naming(text.split("after repair")[0], d[0].name)
    assert "  completed  " in row and row.endswith("last.pt is unreadable (truncated?): the final weights are lost "
                                                   "(the results stand; force=true retrains it)")
    assert _row(text, d[1]).endswith(" ok") and "0 unsound" in text
    assert len(last.read_bytes()) == 200  # nothing can mend it but retraining: reported on every check
    # its accuracy and best.pt are sound: it counts, as a run whose ckpt/ was removed to save disk does
    assert _table2(out, tmp_path)[0] == 3


def test_a_stray_file_is_named_in_one_line_and_left_alone(sound_runs, tmp_path, capsys):
    from gatelab.analyses import pruning
    from gatelab.core.results import LOCK, LOSS_TRACE
    assert {RESULTS, LOCK, LOSS_TRACE, pruning.MASK_FILE, "ckpt"} <= run_check.RUN_FILES
    out, d = _copy(sound_runs, tmp_path)
    for name in ("run.log", "loss_trace.csv", "mask.pt", "ckpt/epoch_2.pt", "ckpt/step_40.pt", "ckpt/prev.pt"):
        (d[0] / name).write_bytes(b"")  # what gatelab's writers make (Hydra's run.log, an IMP round's mask ...)
    (d[0] / ".hydra").mkdir()
    assert "stray" not in _row(_check(out, capsys=capsys)[1], d[0])
    (d[1] / "notes.txt").write_text("mine")
    (d[1] / "ckpt" / "last.pt.bak").write_bytes(b"x")
    code, text = _check(out, "--repair", capsys=capsys)
    assert code == 1
    (row,) = _lines_naming(text.split("after repair")[0], d[1].name)
    assert row.endswith("stray files ckpt/last.pt.bak, notes.txt (no gatelab writer makes them; left alone)")
    assert (d[1] / "notes.txt").read_text() == "mine" and (d[1] / "ckpt" / "last.pt.bak").exists()
    assert _row(text, d[2]).endswith(" ok") and _table2(out, tmp_path)[0] == 3  # a stray file changes no result


def test_a_completed_run_without_its_ckpt_folder_is_ok_as_the_report_counts_it(sound_runs, tmp_path, capsys):
    """ckpt/ removed to save disk, or a run carried in git without it (``confirm --carry``): the check agrees with
    the report, which counts it; a best.pt that is there but missing from a kept ckpt/ is still unsound."""
    out, d = _copy(sound_runs, tmp_path)
    shutil.rmtree(d[0] / "ckpt")
    (d[1] / "ckpt" / "best.pt").unlink()
    code, text = _check(out, capsys=capsys)
    assert _row(text, d[0]).endswith(" ok") and "  completed  " in _row(text, d[0]), text
    assert "best.pt is missing" in _row(text, d[1]) and "[UNSOUND]" in _row(text, d[1])
    assert _table2(out, tmp_path)[0] == 2
