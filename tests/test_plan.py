"""The plan of a command (issue #22): jobs with their prerequisites, built and checked before
anything trains; ``--dry-run``; a sweep refuses every bad job before the first starts and exits
non-zero when a job failed."""
import json
import subprocess
import sys

import pytest
import torch

from conftest import ROOT, make_cfg, write_tiny_data
from gatelab.core.config import ConfigError
from gatelab.launch import plan


def test_flnpf_plans_its_relu_source_as_an_earlier_job_and_reuses_it_once_done(tiny_root, tmp_path):
    cfg = make_cfg(["regime=flnpf", "arch.dense=[8]", "seeds=[0,1]", "epochs=1", f"out_root={tmp_path}"], tiny_root)
    jobs = plan.build(cfg)
    assert [j.name.split("/")[1] for j in jobs] == ["relu seeds 0,1", "flnpf seeds 0,1"]
    assert jobs[1].needs == [jobs[0].name]
    text = plan.describe(jobs)
    assert text.count("[new; 1 epochs to train]") == 4 and "after: " in text
    assert not list(tmp_path.rglob("results.json"))  # planning trains nothing
    out = plan.execute(jobs)
    assert {r["status"] for r in out.values()} == {"completed"} and len(out) == 4
    again = plan.build(cfg)
    assert len(again) == 1 and "completed" in plan.describe(again)


def test_the_plan_prints_every_run_directory_alike(tiny_root, tmp_path, monkeypatch):
    """A single run's directory comes from Hydra as an absolute path, its ReLU source's from the
    relative out_root: below the working directory both print relative to it, elsewhere absolute."""
    monkeypatch.chdir(tmp_path)
    cfg = make_cfg(["regime=flnpf", "arch.dense=[8]", "epochs=1", "out_root=outputs"], tiny_root)
    cfg.run_dir = str(tmp_path / plan.run_dir(cfg))
    lines = [line.split()[0] for line in plan.describe(plan.build(cfg)).splitlines() if "epochs to train" in line]
    assert len(lines) == 2 and all(line.startswith("outputs/runs/") for line in lines), lines
    monkeypatch.chdir(tiny_root)
    lines = [line.split()[0] for line in plan.describe(plan.build(cfg)).splitlines() if "epochs to train" in line]
    assert lines[1] == cfg.run_dir


def test_imp_rounds_chain_back_to_the_dense_run(tiny_root, tmp_path):
    over = ["+experiment=race", "dataset=mnist", "dataset.limit_train=64", "arch.dense=[8]", "imp.sparsity=0.5",
            "imp.round=2", "epochs=1", f"out_root={tmp_path}"]
    jobs = plan.build(make_cfg(over, tiny_root))
    names = [j.name for j in jobs]
    assert len(jobs) == 3 and "imp" not in names[0] and "imp-r1" in names[1] and "imp-r2" in names[2]
    assert jobs[2].needs == [names[1]] and jobs[1].needs == [names[0]]


def test_a_row_needs_no_prerequisite_job_when_it_holds_the_sources(tiny_root, tmp_path):
    cfg = make_cfg(["arch.dense=[8]", "regimes=[relu,flnpf]", "seeds=[0]", f"out_root={tmp_path}"], tiny_root)
    jobs = plan.build(cfg)
    assert len(jobs) == 1 and len(jobs[0].stacks) == 2  # relu's stack trains before flnpf's


def test_completed_runs_brought_back_without_checkpoints_still_plan(tiny_root, tmp_path):
    """results.json copied back from a GPU or a cluster, no checkpoints: a completed FLNPF run reads no
    source again, so its plan (and a report-only rerun) passes; an unfinished one still needs its source."""
    import shutil
    cfg = make_cfg(["regime=flnpf", "arch.dense=[8]", "seeds=[0]", "epochs=1", f"out_root={tmp_path}"], tiny_root)
    plan.execute(plan.build(cfg))
    for ckpt in tmp_path.rglob("ckpt"):
        shutil.rmtree(ckpt)
    jobs = plan.build(cfg)
    plan.check(jobs)
    assert "[completed" in plan.describe(jobs) and "0 net-steps left" in plan.describe(jobs)
    flnpf = next(tmp_path.rglob("flnpf/*/results.json"))
    flnpf.unlink()
    with pytest.raises(FileNotFoundError, match="regime.source=auto looks for the ReLU run"):
        plan.check(plan.build(cfg))


@pytest.mark.parametrize("bad,message", [("optimizer.lr=-1", "optimizer.lr must be > 0"),
                                         ("epochs=0", "epochs must be positive"),
                                         ("regime=flnpf regime.source=/nowhere", "checkpoint not found")])
def test_check_refuses_a_bad_plan_naming_the_job(tiny_root, tmp_path, bad, message):
    cfg = make_cfg(["arch.dense=[8]", *bad.split(), f"out_root={tmp_path}"], tiny_root)
    with pytest.raises((ConfigError, FileNotFoundError), match=message) as e:
        plan.check(plan.build(cfg))
    assert "(job mnist-fc-" in str(e.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_device_cuda_without_cuda_is_a_one_line_config_error(tiny_root, tmp_path):
    with pytest.raises(ConfigError, match="device=cuda: this machine has no CUDA device"):
        plan.check(plan.build(make_cfg(["device=cuda", f"out_root={tmp_path}"], tiny_root)))


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.mark.slow
def test_a_sweep_with_a_bad_value_starts_nothing_and_exits_2(tiny_root, tmp_path):
    p = _run("-m", "optimizer.lr=0.001,-1", "arch.dense=[8]", "epochs=1", "progress=false",
             f"data.root={tiny_root}", f"out_root={tmp_path}")
    assert p.returncode == 2, p.stderr[-2000:]
    assert "1 of 2 sweep jobs are invalid; nothing was started" in p.stderr + p.stdout
    assert not list(tmp_path.rglob("results.json"))


@pytest.mark.slow
def test_dry_run_prints_the_plan_and_trains_nothing(tiny_root, tmp_path):
    p = _run("--dry-run", "regime=flnpf", "arch.dense=[8]", "seeds=[0,1]", f"data.root={tiny_root}",
             f"out_root={tmp_path}")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "plan: 2 job(s)" in p.stdout and "relu seeds 0,1" in p.stdout and "net-steps left" in p.stdout
    assert not list(tmp_path.rglob("results.json"))
    m = _run("-m", "--dry-run", "seed=0,1", "arch.dense=[8]", f"data.root={tiny_root}", f"out_root={tmp_path}")
    assert m.returncode == 0 and "sweep of 2 jobs" in m.stdout
    assert not list(tmp_path.rglob("results.json"))


def test_the_plan_tells_a_run_that_trains_from_one_whose_process_was_killed(tmp_path):
    """results.json says ``running`` while a run trains and still after its process was killed
    (SIGKILL, out of memory): the plan tells them apart by the run's .lock."""
    import os
    from gatelab.core.results import RESULTS, RESULTS_VERSION, locked
    run, me = tmp_path / "run", f"pid {os.getpid()}"
    run.mkdir()
    (run / RESULTS).write_text(json.dumps({"version": RESULTS_VERSION, "status": "running", "config": {},
                                           "history": [{}, {}]}))
    with locked([run]):  # no checkpoint on disk: it restarts, whatever its history says
        assert plan.state_of(run, 5) == (f"running ({me} on {os.uname().nodename}), restarts from the start", 5)
    assert plan.state_of(run, 5) == (f"stopped: {me} no longer holds its lock (killed?), restarts from the start", 5)
    (run / ".lock").write_text("pid 7 on another-node\n")  # a lock another host's file system may hide
    assert plan.state_of(run, 5)[0] == "running or stopped on another-node, restarts from the start"


@pytest.mark.slow
def test_a_sweep_whose_job_fails_exits_non_zero(tmp_path):
    good = write_tiny_data(tmp_path / "good")
    bad = tmp_path / "bad"
    bad.mkdir()
    data = bytearray((good / "mnist.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF  # the zip's directory intact (the plan passes), a member's CRC wrong (the job fails)
    (bad / "mnist.npz").write_bytes(bytes(data))
    p = _run("-m", f"data.root={bad},{good}", "arch.dense=[8]", "epochs=1", "progress=false", f"out_root={tmp_path}/o")
    assert p.returncode == 1, p.stderr[-2000:]
    summary = next((tmp_path / "o" / "sweeps").glob("*.summary.txt")).read_text()
    assert "2 runs: 1 completed" in summary and "1 failed" in summary


def test_sweep_waves_put_prerequisites_first_once_each(tiny_root, tmp_path):
    """The SLURM launcher's waves: FLNPF seeds 0,1 and ReLU seed 0 -> wave 1 the two ReLU runs
    (seed 0 once, though both the sweep and FLNPF seed 0 ask for it), wave 2 the FLNPF runs; every job
    refuses to train a prerequisite itself."""
    from conftest import make_cfg as load_with
    base = ["arch.dense=[8]", "epochs=1", f"data.root={tiny_root}", f"out_root={tmp_path}"]
    sweep = [[*base, "regime=flnpf", "seed=0"], [*base, "regime=flnpf", "seed=1"], [*base, "regime=relu", "seed=0"]]
    w = plan.waves(sweep, lambda o: load_with(o))
    assert [len(x) for x in w] == [2, 2]
    assert all("regime=relu" in o for o in w[0]) and all("regime=flnpf" in o for o in w[1])
    assert all(o[-1] == "train_prerequisites=false" for x in w for o in x)
    with pytest.raises(ConfigError, match="relu seeds 1 is not completed"):
        plan.build(load_with(w[1][1]))
    imp = [*base, "+experiment=race", "dataset=mnist", "dataset.limit_train=64", "imp.sparsity=0.5", "imp.round=2"]
    chain = plan.waves([imp], lambda o: load_with(o))
    assert [x[0][-3:-1] for x in chain] == [["imp.sparsity=null", "imp.round=0"], ["imp.sparsity=0.5", "imp.round=1"],
                                           ["imp.sparsity=0.5", "imp.round=2"]]


def test_an_unfinished_prerequisite_is_named_by_its_state_not_missing(tiny_root, tmp_path, monkeypatch, caplog):
    """The FLNPF command after its ReLU source was stopped by Ctrl-C: the log says what the source
    is (interrupted, where it resumes), not that it is missing."""
    from conftest import kill_after_writes
    over = ["arch.dense=[16]", "epochs=3", "checkpoint_minutes=0", f"out_root={tmp_path}"]
    restore = kill_after_writes(monkeypatch, 1)
    import conftest
    monkeypatch.setattr(conftest, "Killed", KeyboardInterrupt)  # the kill is a Ctrl-C here
    with pytest.raises(KeyboardInterrupt):
        plan.run(make_cfg([*over, "regime=relu"], tiny_root))
    restore()
    with caplog.at_level("INFO", logger="gatelab"):
        out = plan.run(make_cfg([*over, "regime=flnpf"], tiny_root))
    assert all(r["status"] == "completed" for r in out.values())
    said = [r.getMessage() for r in caplog.records if "training it first" in r.getMessage()]
    assert len(said) == 1 and "is interrupted, resumes after epoch 1; training it first" in said[0], said
