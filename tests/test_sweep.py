"""Multiruns: one failure does not stop the others, re-invoking reruns only what did not finish,
duplicate sweep values are refused, and the launchers compose and run."""
import json
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from gatelab.launch.sweep import check_no_duplicates, summarise, sweep_values
from gatelab.core.config import ConfigError
from gatelab.nets.regimes import relu_source_dir
from gatelab.core.runs import compose


def _cli(args, tiny_root, timeout=300):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True,
                          timeout=timeout, env={**__import__("os").environ, "GATELAB_DATA": str(tiny_root)})


def _summary(p):
    return next(line for line in (p.stdout + p.stderr).splitlines() if "sweep summary" in line)


@pytest.mark.slow
def test_failed_run_does_not_stop_the_sweep_and_only_it_reruns(tiny_root, tmp_path):
    common = ["-m", "epochs=1", "progress=false", "arch.dense=[16]", f"out_root={tmp_path}"]
    assert _cli([*common, "regime=relu", "seed=0,1,2,3,4"], tiny_root).returncode == 0
    # Seed 5's ReLU source looks completed but its best.pt is truncated (a disk that filled up): the
    # sweep is refused before anything trains, naming it (a source whose best.pt disagrees is none).
    relu5 = relu_source_dir(compose(["epochs=1", "arch.dense=[16]", f"out_root={tmp_path}", "regime=flnpf", "seed=5"]))
    shutil.copytree(next(tmp_path.glob("runs/*/relu/seed4-*")), relu5)
    (relu5 / "ckpt" / "best.pt").write_bytes((relu5 / "ckpt" / "best.pt").read_bytes()[:100])
    flnpf = [*common, "regime=flnpf", "seed=0,1,2,3,4,5"]
    p = _cli(flnpf, tiny_root)
    assert p.returncode == 2 and "ckpt/best.pt is unreadable" in p.stdout + p.stderr
    assert not list(tmp_path.glob("runs/*/flnpf"))
    # ... and when it is whole but of another architecture (copied by hand), the plan refuses it too (issue #49)
    shutil.rmtree(relu5)
    assert _cli(["epochs=1", "progress=false", "arch.dense=[8]", f"out_root={tmp_path / 'other'}"],
                tiny_root).returncode == 0
    shutil.copytree(next((tmp_path / "other").glob("runs/*/relu/seed0-*")), relu5)
    p = _cli(flnpf, tiny_root)
    assert p.returncode == 2 and "has architecture" in p.stdout + p.stderr
    assert not list(tmp_path.glob("runs/*/flnpf"))
    # ... of this architecture but trained on other inputs (CIFAR-10), which only loading it shows: FLNPF seed 5
    # fails when it loads it while the other seeds go on.
    shutil.rmtree(relu5)
    assert _cli(["epochs=1", "progress=false", "arch.dense=[16]", "dataset=cifar10", f"out_root={tmp_path / 'cifar'}"],
                tiny_root).returncode == 0
    shutil.copytree(next((tmp_path / "cifar").glob("runs/*/relu/seed0-*")), relu5)
    p = _cli(flnpf, tiny_root)
    assert p.returncode == 1, p.stderr  # the other seeds went on; the sweep reports its failure in its exit code
    assert "6 runs: 5 completed, 0 resumed, 0 skipped, 0 diverged, 1 failed" in _summary(p)
    assert "failed: " in p.stdout + p.stderr and "seed5" in p.stdout + p.stderr
    (failed,) = tmp_path.glob("runs/*/flnpf/seed5-*/results.json")
    assert json.loads(failed.read_text())["status"] == "failed"
    shutil.rmtree(relu5)
    assert _cli([*common, "regime=relu", "seed=5"], tiny_root).returncode == 0
    p = _cli(flnpf, tiny_root)
    assert "6 runs: 1 completed, 0 resumed, 5 skipped, 0 diverged, 0 failed" in _summary(p)
    assert json.loads(failed.read_text())["status"] == "completed"


def test_duplicate_sweep_values_are_refused(tiny_root, tmp_path):
    p = _cli(["-m", "seed=0,1,0", f"out_root={tmp_path}"], tiny_root)
    assert p.returncode == 2 and "lists 0 more than once" in p.stdout + p.stderr
    assert not list(tmp_path.glob("runs/**/results.json"))
    with pytest.raises(ConfigError, match="optimizer.lr"):
        check_no_duplicates(sweep_values(["regime=relu"], {"optimizer.lr": "0.1,0.01,0.1"}))
    assert sweep_values(["seed=1,2"], {"seed": "0,0"}) == {"seed": ["1", "2"]}  # the command line wins


def test_summary_lists_failures():
    text = summarise([{"run_dir": "a", "outcome": "completed"}, {"run_dir": "b", "outcome": "failed", "error": "E"},
                      {"run_dir": "c", "outcome": "diverged"}])
    assert text.splitlines() == ["sweep summary: 3 runs: 1 completed, 0 resumed, 0 skipped, 1 diverged, 1 failed",
                                 "  failed: b: E", "  diverged: c"]


def test_slurm_launcher_config_composes(tiny_root):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    p = _cli(["hydra/launcher=cluster", "--cfg", "hydra", "-p", "hydra.launcher"], tiny_root)
    assert p.returncode == 0, p.stderr
    for needle in ("SlurmLauncher", "gpus_per_node: 1", "array_parallelism: 64", "max_num_timeout: 10"):
        assert needle in p.stdout


def test_a_time_limit_signal_in_a_jobs_first_minute_is_warned_of():
    from omegaconf import OmegaConf
    from gatelab.launch.slurm import signal_window
    shipped = OmegaConf.load(ROOT / "conf/hydra/launcher/cluster.yaml")
    assert signal_window({"timeout_min": shipped.timeout_min, "signal_delay_s": shipped.signal_delay_s}) is None
    assert signal_window({"timeout_min": 2, "signal_delay_s": 60}) is None  # a minute left to start
    warning = signal_window({"timeout_min": 1, "signal_delay_s": 40})
    assert "20 s after it starts" in warning and "killed, not requeued" in warning


@pytest.mark.slow
def test_submitit_local_runs_two_jobs(tiny_root, tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    p = _cli(["-m", "hydra/launcher=submitit_local", "epochs=1", "progress=false", "threads=1", "seed=0,1",
              "arch.dense=[16]", f"out_root={tmp_path}"], tiny_root)
    assert p.returncode == 0, p.stderr
    assert "2 runs: 2 completed" in _summary(p)
    assert len(list(tmp_path.glob("runs/*/relu/seed*/results.json"))) == 2


@pytest.mark.slow
def test_a_table2_row_as_make_runs_it_then_its_report(tiny_root, tmp_path):
    """`make table2-quick`'s two phases for one row, on tiny data: the grid comes from the experiment
    configs, the seeds of each regime train stacked, FLNPF finds its ReLU runs; then the report."""
    from gatelab.papers import npf
    common = ["-m", "+experiment=[table2_fc_adam,quick_fc]", "epochs=1", "arch.dense=[8]", f"out_root={tmp_path}",
              "progress=false"]
    p = _cli(common, tiny_root)
    assert p.returncode == 0, p.stderr
    assert "8 runs: 8 completed" in _summary(p)  # 4 regimes x 2 stacked seeds
    p = _cli([*common, "regime=flnpf"], tiny_root)
    assert "2 runs: 2 completed" in _summary(p) and "reusing the ReLU source" in p.stdout + p.stderr
    df = npf.write_table2(tmp_path / "runs", tmp_path / "report")
    assert sorted(df.regime) == sorted(npf.REGIMES) and (df.n == 2).all() and not df.short.any()
    assert (df.lr == 1e-4).all() and (df.epochs == "1").all()
