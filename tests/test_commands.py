"""A mistake on the command line is one line (``gatelab: ...``), exit 2, before Hydra starts, and
leaves nothing behind; Ctrl-C while the entry points import is one line and exit 130."""
import os
import signal
import subprocess
import sys

import pytest

from conftest import ROOT


def _run(argv, cwd, module=False, **env):
    cmd = [sys.executable, "-m", "gatelab", *argv] if module else [sys.executable, str(ROOT / "run.py"), *argv]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **env})


@pytest.mark.parametrize("argv, says", [
    (["dataset.routing.K=3"], "dataset.routing is not set for dataset mnist, so it has no K"),
    (["out_root=/proc/gatelab-x"], "out_root=/proc/gatelab-x: runs cannot be written there"),
    (["epoch=3"], "unknown key epoch (did you mean epochs?)"),
    (["-m", "hydra/launcher=cluster", "seed=0,1"], "hydra/launcher=cluster: no SLURM here"),
    (["regime=flnpff"], "did you mean flnpf?"),
    (["seeds=[0,1]", "run_dir=one"], "seeds=[0, 1] writes each seed to its own run directory; run_dir=one cannot be set"),
    (["seeds=[]"], "seeds=[] names no seed"),
    # a row (regimes/lrs) gets the same seed checks, and refuses what it would drop or train twice
    (["lrs=[0.01]", "optimizer=sgd", "seeds=[]"], "seeds=[] names no seed"),
    (["regimes=[relu,relu]"], "regimes=['relu', 'relu'] lists a value more than once"),
    (["regimes=[relu,dlnpf]", "run_dir=one"], "regimes/lrs write each net to its own run directory; run_dir=one"),
    (["regimes=[relu,flnpf]", "regime.source=/nowhere"], "so regime.source=/nowhere would be ignored"),
    # values that were accepted and then ignored (or, grayscale, failed the run after the plan)
    (["optimizer.momentum=0.9"], "optimizer.momentum=0.9 is SGD's and RMSprop's; Adam has its own betas"),
    (["eval_batch_size=0"], "eval_batch_size must be positive, got 0"),
    (["epochs=3", "checkpoint_epochs=[0,99]"], "checkpoint_epochs=[0, 99]: [99] outside 0..epochs=3, so never written"),
    (["dataset.classes=[3,5]"], "dataset.classes=[3, 5] picks the two digits of task=binary"),
    (["dataset.grayscale=true"], "dataset.grayscale=true makes RGB images one channel; mnist has one already"),
    (["dataset=routing_mnist_perm", "arch=routing", "regime=dln", "arch.init=gaussian", "arch.init_std=0.1"],
     "arch.init, arch.init_std and arch.bias are not its settings"),
    # a gate's settings on a regime of another gate, and sigma_0 without the Gaussian init: the run key changed, the
    # numbers did not
    (["regime=relu", "regime.beta=8"], "regime.beta=8.0 is a setting of gate=soft (regime.gate=hard of regime=relu"),
    (["regime=frozen_relu", "regime.eps=0.4"], "regime.eps=0.4 is a setting of gate=soft"),
    (["regime=dlnpf", "regime.slope=0.2"], "regime.slope=0.2 is a setting of gate=leaky"),
    # an output width that is not the labels': 5 failed at the first step, 20 trained 10 dead outputs
    (["dataset.num_classes=5"], "dataset.num_classes=5: mnist's labels are 0..9, so task=classification has 10"),
    (["dataset=cifar10", "arch=vconv", "dataset.num_classes=20"], "dataset.num_classes=20: cifar10's labels are 0..9"),
    (["arch=gconv", "dataset=cifar10", "arch.init_std=0.1"], "arch.init_std=0.1 is the standard deviation of "
                                                             "arch.init=gaussian; arch.init=glorot ignores it"),
])
def test_a_bad_run_command_is_one_line_exit_2_and_leaves_nothing(argv, says, tmp_path):
    # PATH without sbatch: the SLURM case must not depend on whether this machine has SLURM
    p = _run(argv, tmp_path, PATH=os.path.dirname(sys.executable))
    lines = (p.stdout + p.stderr).strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("gatelab: ") and says in lines[0], lines
    assert list(tmp_path.iterdir()) == []  # no outputs/, no multirun.yaml


def test_the_same_commands_are_accepted_where_they_are_right(tmp_path, tiny_root):
    """The control: a routing K on a routing dataset, a writable out_root, the real key, a dry run."""
    p = _run(["dataset=routing_mnist_perm", "arch=routing", "regime=dln", "dataset.routing.K=3", "epochs=1",
              f"out_root={tmp_path / 'out'}", f"data.root={tiny_root}", "--dry-run"], tmp_path)
    assert p.returncode == 0 and "gatelab: " not in p.stderr, p.stderr[-1500:]


@pytest.mark.parametrize("argv", [
    ["regime=dlnpf", "regime.beta=8", "regime.eps=0.4"],  # the soft gate's own settings
    ["arch.init=gaussian", "arch.init_std=0.1"],  # sigma_0 of the Gaussian init (paper 004)
    ["dataset=routing_mnist_perm", "arch=routing", "regime=leaky", "regime.slope=0.2"],  # the leaky gate's slope
])
def test_a_gates_own_settings_are_accepted(argv, tmp_path, tiny_root):
    """The controls of the refusals above: each setting where its gate or init reads it plans (a dry run)."""
    p = _run([*argv, "epochs=1", f"out_root={tmp_path / 'out'}", f"data.root={tiny_root}", "--dry-run"], tmp_path)
    assert p.returncode == 0 and "gatelab: " not in p.stderr, p.stderr[-1500:]


@pytest.mark.parametrize("argv, says", [
    (["reproduce", "table2-mnist", "--dry-run", "--jobs", "0"], "--jobs: must be 1 or more, got 0"),
    (["reproduce"], "reproduce needs a recipe: "),
    (["reproduce", "table2-mnist", "--dry-run", "epoch=3"], "unknown key epoch (did you mean epochs?)"),
    # 0 epochs was read as "not given": the whole recipe, into its own folders
    (["reproduce", "table2-mnist", "--dry-run", "--epochs", "0"], "--epochs: must be 1 or more, got 0"),
    (["reproduce", "table4", "--dry-run", "--report-only"], "--dry-run and --report-only do different things"),
    (["reproduce", "table4", "--dry-run", "--slurm-set", "partition=gpu"], "which only --slurm makes"),
    # the figure commands train their own nets: --epochs never reached them, yet the folders said "a shorter try"
    (["reproduce", "figure3", "--scale", "quick", "--epochs", "2", "--dry-run"],
     "recipe figure3 trains inside its figure commands, which take none of --epochs 2"),
    (["reproduce", "dgn-figures", "--scale", "quick", "--dry-run", "threads=1"], "which take none of threads=1"),
])
def test_a_bad_recipe_command_is_one_line_exit_2(argv, says, tmp_path):
    p = _run(argv, tmp_path, module=True)
    lines = (p.stdout + p.stderr).strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("gatelab: ") and says in lines[0], lines


@pytest.mark.parametrize("argv, says", [
    (["confirm", "--design", "routing"], "--design writes the confirm lines of every target's claims; it takes no target"),
    (["confirm", "--dry-run", "--design"], "--dry-run and --design do different things"),
    (["confirm", "routing", "--carry", "--slurm"], "--carry and --slurm do different things"),
    (["confirm", "routing", "--slurm-set", "partition=x"], "which only --slurm makes"),
    (["confirm", "routing", "--jobs", "0"], "--jobs: must be 1 or more, got 0"),
    (["page", "--check", "--record-run", "somewhere"], "--check writes nothing, and --record-run writes"),
])
def test_a_flag_that_another_would_silently_override_is_refused_before_anything_is_written(argv, says, tmp_path):
    """--design used to ignore its targets and win over --dry-run, writing every claims.yaml; --check with
    --record-run wrote first-run/; --slurm-set without --slurm and --jobs 0 were dropped without a word."""
    claims = sorted((ROOT / "src" / "gatelab" / "papers").glob("*/claims.yaml"))
    before = [c.read_bytes() for c in claims]
    (tmp_path / "outputs" / "reports").mkdir(parents=True)
    p = _run(argv, tmp_path, module=True)
    assert p.returncode == 2 and says in p.stderr, (p.returncode, p.stdout[-500:], p.stderr[-500:])
    assert [c.read_bytes() for c in claims] == before
    assert list((tmp_path / "outputs" / "reports").iterdir()) == []


def test_help_lists_every_subcommand(tmp_path):
    p = _run(["--help"], tmp_path, module=True)
    assert p.returncode == 0 and "{reproduce,run,page,confirm,costs,recipes}" in p.stdout


def test_ctrl_c_while_importing_is_one_line_and_exit_130(capsys):
    """The entry points' early handler (installed before torch and Hydra load): SIGINT exits 130 with one
    line; released, SIGINT is Python's KeyboardInterrupt again; where SIGINT is ignored it stays so."""
    from gatelab.core import early_stop
    before = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        installed = early_stop.install()
        assert installed
        with pytest.raises(SystemExit) as stop:
            os.kill(os.getpid(), signal.SIGINT)
        assert stop.value.code == 130
        assert capsys.readouterr().err == "gatelab: stopped by Ctrl-C before anything ran\n"
        early_stop.release(installed)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        assert early_stop.install() is False and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_run_redirected_to_a_file_prints_one_line_per_epoch_and_no_bars(tmp_path, tiny_root):
    """``python run.py > log 2>&1``: the epoch lines, no tqdm redraws (progress=true, the default, draws
    bars only at a terminal)."""
    log = tmp_path / "log"
    with open(log, "w") as f:
        p = subprocess.run([sys.executable, str(ROOT / "run.py"), "epochs=3", "arch.dense=[8]", "progress=true",
                            f"data.root={tiny_root}", f"out_root={tmp_path / 'out'}"], stdout=f, stderr=subprocess.STDOUT,
                           timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    text = log.read_text()
    assert p.returncode == 0, text[-1500:]
    assert [f"epoch {e}/3 " in text for e in (1, 2, 3)] == [True] * 3
    assert "\r" not in text and "step/s" not in text and "it/s" not in text
    assert len(text.splitlines()) < 40


def test_ctrl_c_keeps_the_attempts_log_where_the_prerequisite_trained(tmp_path):
    """``run.py regime=flnpf`` stopped while its ReLU source trains: the attempt's log (plan, epoch lines,
    the stop line) is in the ReLU run's run.log, appended, besides Hydra's own folder."""
    import time
    from conftest import default_signals, write_tiny_data
    root = write_tiny_data(tmp_path / "data", n_train=6000, n_test=100)
    log = tmp_path / "log"
    with open(log, "w") as f:
        p = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "regime=flnpf", "epochs=3", "arch.dense=[64,64]",
                              "optimizer.batch_size=1", "progress=false", "threads=1", f"data.root={root}",
                              f"out_root={tmp_path / 'out'}"], stdout=f, stderr=subprocess.STDOUT,
                             preexec_fn=default_signals)
        deadline = time.time() + 120
        while time.time() < deadline and "epoch 1/3" not in log.read_text():
            time.sleep(0.1)
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=60) == 130
    (relu_log,) = (tmp_path / "out").rglob("relu/seed0-*/run.log")
    text = relu_log.read_text()
    assert "plan: 2 job(s)" in text and "relu seed 0 epoch 1/3" in text and "stopped by Ctrl-C" in text


def test_the_shipped_site_example_names_only_real_settings():
    """docs/site.example.yaml (what conf/local/site.yaml starts from): its run keys are schema keys and
    its launcher keys are the cluster launcher's."""
    from hydra import compose as hydra_compose, initialize_config_dir
    from omegaconf import OmegaConf

    from gatelab.core.config import CONF_DIR, register
    from gatelab.core.runs import register_resolver
    from gatelab.core.validation import unknown_key_message
    register()
    register_resolver()
    example = OmegaConf.load(ROOT / "docs" / "site.example.yaml")
    assert unknown_key_message({k: v for k, v in example.items() if k != "hydra"}) is None
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=["hydra/launcher=cluster"], return_hydra_config=True)
    launcher = set(cfg.hydra.launcher.keys())
    assert set(example.hydra.launcher.keys()) <= launcher, set(example.hydra.launcher.keys()) - launcher
    assert unknown_key_message({"data": {"rooot": "x"}}) is not None  # the check can fail


@pytest.mark.slow
def test_a_full_disk_is_one_line_recorded_as_failed_and_resumes_when_there_is_space(tmp_path, tiny_root):
    """out_root on a 3 MiB tmpfs: the second epoch's checkpoints do not fit. The run stops with one line
    naming the file and the free space, results.json says failed (not running) with the same words,
    no partial file is left, and after the tmpfs grows the same command completes the run."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root and tmpfs mounts (a 3 MiB disk to fill)")
    try:
        cmd = [sys.executable, str(ROOT / "run.py"), "epochs=3", "arch.dense=[128]", "progress=false", "threads=1",
               f"data.root={tiny_root}", f"out_root={disk}"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        out = p.stdout + p.stderr
        assert p.returncode == 1 and "Traceback" not in out, out[-2000:]
        (line,) = [ln for ln in out.splitlines() if "no space left writing" in ln]
        assert line.startswith("gatelab: stopped: no space left writing ")
        assert "MiB free of 3.0 MiB there" in line and "/ckpt/" in line
        (res,) = disk.rglob("results.json")
        saved = __import__("json").loads(res.read_text())
        assert saved["status"] == "failed" and "no space left writing" in saved["error"]
        assert not [p for p in disk.rglob("*") if ".tmp" in p.name]
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, (again.stdout + again.stderr)[-2000:]
        done = __import__("json").loads(res.read_text())
        assert done["status"] == "completed" and [h["epoch"] for h in done["history"]] == [1, 2, 3]
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


def test_console_warnings_and_errors_read_as_gatelab_lines_and_progress_keeps_its_time():
    import logging

    from gatelab.core.logs import ConsoleFormatter
    f = ConsoleFormatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    rec = lambda level, msg: logging.LogRecord("gatelab", level, __file__, 1, msg, (), None)
    assert f.format(rec(logging.ERROR, "stopped by Ctrl-C: x")) == "gatelab: stopped by Ctrl-C: x"
    assert f.format(rec(logging.WARNING, "w")) == "gatelab: warning: w"
    info = f.format(rec(logging.INFO, "relu seed 0 epoch 1/3"))
    assert info.startswith("[") and info.endswith("][gatelab][INFO] - relu seed 0 epoch 1/3")


def test_gatelab_help_lists_every_subcommand_in_plain_words():
    """Issue #57 §3: ``gatelab --help`` lists run, reproduce, page, costs, recipes and confirm, one line each, with
    no reStructuredText of a module docstring."""
    from gatelab.papers.reproduce import _parser
    text = _parser().format_help()
    for name in ("run", "reproduce", "page", "costs", "recipes", "confirm"):
        assert f"\n    {name} " in text, name
    assert "``" not in text and ":mod:" not in text
