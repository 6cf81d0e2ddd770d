"""What a new user meets (issue #20): the design card's command, the start banner, a second copy
of a running command, clean errors that leave nothing behind, and `--help`."""
import fcntl
import logging
import subprocess
import sys
import threading

import pytest

from conftest import ROOT, make_cfg
from gatelab.core.config import ConfigError
from gatelab.launch import plan
from gatelab.core.results import locked


@pytest.mark.parametrize("arch", ["gconv", "vconv"])
def test_the_conv_nets_default_to_cifar10_unless_a_dataset_is_given(arch):
    assert make_cfg([f"arch={arch}"]).dataset.name == "cifar10"
    assert make_cfg([f"arch={arch}", "dataset=mnist"]).dataset.name == "mnist"
    assert make_cfg(["arch=fc"]).dataset.name == "mnist"


def test_the_banner_says_what_trains_where_and_its_prerequisites(tiny_root, tmp_path):
    text = plan.banner(plan.build(make_cfg(["regime=flnpf", "arch=gconv", f"out_root={tmp_path}"], tiny_root)))
    assert text.startswith("gatelab: device cpu, precision fp32, out_root ")
    assert "1. cifar10-gconv-adam-lr0.0003/relu seeds 0" in text and "(after: cifar10-gconv-adam" in text
    assert "net-steps left" in text


def test_seeds_listing_a_seed_twice_is_refused(tiny_root):
    with pytest.raises(ConfigError, match="lists a seed more than once"):
        plan.build(make_cfg(["seeds=[0,0]"], tiny_root))


def test_a_second_copy_says_whose_run_it_waits_for(tmp_path, caplog):
    run = tmp_path / "run"
    run.mkdir()
    with open(run / ".lock", "w") as held:
        held.write("pid 4242 on elsewhere\n")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX)
        entered = threading.Event()

        def second():
            with locked([run]):
                entered.set()
        with caplog.at_level(logging.INFO, logger="gatelab"):
            t = threading.Thread(target=second)
            t.start()
            t.join(1.0)
            assert not entered.is_set()  # it waits ...
            fcntl.flock(held, fcntl.LOCK_UN)
            t.join(10)
    assert entered.is_set()  # ... until the holder lets go
    assert f"waiting for {run}: it is training in pid 4242 on elsewhere" in caplog.text


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.mark.slow
@pytest.mark.parametrize("bad", ["optimizer.lr=-1", "optimizer.lr=0", "epochs=0", "device=cuda", "seeds=[0,0]",
                                 "regime=flnpf regime.source=/nonexistent"])
def test_a_rejected_command_fails_in_one_line_and_leaves_no_run_directory(tiny_root, tmp_path, bad):
    """Under the default relative out_root (outputs/ in the working directory) as under an absolute one."""
    if bad == "device=cuda":
        pytest.importorskip("torch")
        import torch
        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
    for where in ([], [f"out_root={tmp_path / 'out'}"]):
        p = _run(*bad.split(), f"data.root={tiny_root}", *where, cwd=tmp_path)
        out = p.stdout + p.stderr
        assert p.returncode == 2 and "Traceback" not in out, out[-2000:]
        assert len([line for line in out.splitlines() if line.startswith("gatelab: ")]) == 1  # the one format
        assert sorted(x.name for x in tmp_path.iterdir()) == [], list(tmp_path.rglob("*"))


@pytest.mark.slow
def test_a_plan_leaves_nothing_on_disk_and_keeps_a_trained_runs_hydra_files(tiny_root, tmp_path):
    p = _run("--dry-run", "regime=flnpf", f"data.root={tiny_root}", cwd=tmp_path)
    assert p.returncode == 0 and "plan: 2 job(s)" in p.stdout, p.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []
    args = ["epochs=1", "arch.dense=[8]", "progress=false", f"data.root={tiny_root}"]
    assert _run(*args, cwd=tmp_path).returncode == 0
    run = next(tmp_path.rglob("results.json")).parent
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != ".lock"}
    assert (run / ".hydra" / "config.yaml") in before
    p = _run(*args, "--dry-run", cwd=tmp_path)
    assert p.returncode == 0 and "[completed; 0 epochs to train]" in p.stdout
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != ".lock"} == before


@pytest.mark.slow
def test_help_lists_the_groups_the_keys_and_examples():
    p = _run("--help")
    assert p.returncode == 0
    for text in ("== Config groups", "regime: dln, dlnpf, flnpf", "== Main keys ==", "checkpoint_minutes",
                 "python run.py regime=flnpf arch=gconv", "--dry-run"):
        assert text in p.stdout, text


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["+epochz=5", "--dry-run"], "unknown key epochz (did you mean epochs?)"),
    (["+optimizer.lrr=0.1"], "unknown key optimizer.lrr (did you mean optimizer.lr?)"),
    (["regime=flnpff"], "regime=flnpff: conf/regime has no option flnpff (did you mean flnpf?); options: dln, "),
    (["-m", "regime=relu,flnpff"], "conf/regime has no option flnpff (did you mean flnpf?)"),
    (["+experiment=[table2_fc_sgd,quick_fcc]"], "conf/experiment has no option quick_fcc (did you mean quick_fc?)")])
def test_a_misspelled_key_or_option_is_one_line_exit_2_and_writes_nothing(tiny_root, tmp_path, args, words):
    p = _run(*args, f"data.root={tiny_root}", cwd=tmp_path)
    out = (p.stdout + p.stderr).strip()
    assert p.returncode == 2 and words in out and len(out.splitlines()) == 1, out[-2000:]
    assert list(tmp_path.iterdir()) == []  # no run folder, no outputs/multirun.yaml


@pytest.mark.slow
def test_offline_without_data_is_one_line_before_any_run_folder_and_leaves_no_partial_download(tmp_path):
    """No data and no network (a proxy that refuses): one line naming the file it expected, that the
    download failed and why, and the two fixes; exit 2; no run folder; nothing half-downloaded."""
    import os
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    refuse = "http://127.0.0.1:9"
    env = {k: v for k, v in os.environ.items() if k != "GATELAB_DATA"}
    env.update(HOME=str(home), http_proxy=refuse, https_proxy=refuse, HTTP_PROXY=refuse, HTTPS_PROXY=refuse)
    p = subprocess.run([sys.executable, str(ROOT / "run.py"), "epochs=1"], capture_output=True, text=True,
                       timeout=300, cwd=work, env=env)
    out = (p.stdout + p.stderr).strip()
    assert p.returncode == 2 and len(out.splitlines()) == 1 and "Traceback" not in out, out[-2000:]
    expected = home / ".cache" / "gatelab" / "mnist.npz"
    assert f"{expected} not found, and downloading it failed (" in out
    assert "data.root=<dir>" in out and "GATELAB_DATA" in out and "internet" in out
    assert list(work.iterdir()) == [] and list(home.rglob("*")) == []


@pytest.mark.slow
def test_a_refused_command_or_a_skipped_rerun_leaves_the_run_folder_as_it_was_and_each_sweep_keeps_its_record(
        tiny_root, tmp_path):
    """Issue #56: after a run trained, commands refused (a device not here, threads=0, a data root that is not
    there) and a rerun that skips it (with another thread count) change no byte of its folder (.hydra/, run.log,
    results.json; the lock file aside); two sweeps keep a multirun.yaml each."""
    args = ["epochs=1", "arch.dense=[8]", "progress=false", f"data.root={tiny_root}"]
    assert _run(*args, cwd=tmp_path).returncode == 0
    run = next(tmp_path.rglob("results.json")).parent
    files = lambda: {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != ".lock"}  # noqa: E731
    before = files()
    assert (run / ".hydra" / "config.yaml") in before and (run / ".hydra" / "overrides.yaml") in before
    for bad in ("device=cuda", "threads=0", "data.root=/nonexistent"):
        p = _run(*[a for a in args if not a.startswith(bad.split("=")[0] + "=")], bad, cwd=tmp_path)
        assert p.returncode == 2, (bad, p.stdout[-500:], p.stderr[-500:])
        assert files() == before, bad
    p = _run(*args, "threads=1", cwd=tmp_path)
    assert p.returncode == 0 and "skipped" in p.stdout, p.stdout[-1000:]
    assert files() == before
    for seeds in ("0,1", "0,1"):
        assert _run("-m", *args, f"seed={seeds}", cwd=tmp_path).returncode == 0
    kept = list(tmp_path.rglob("sweeps/*.multirun.yaml")) or list(tmp_path.rglob("*.multirun.yaml"))
    assert len(kept) == 2, sorted(map(str, tmp_path.rglob("*multirun*")))
