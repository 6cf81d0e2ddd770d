"""What a new user still met (issue #49): the page command rewriting the README, a corrupt data file's
traceback, FLNPF sources checked only when training starts, options accepted without a word, and a results.json
read around load_results. Each test fails on the code before the fix."""
import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, make_cfg, write_tiny_data
from gatelab.core.config import ConfigError
from gatelab.data.datasets import DataNotFoundError
from gatelab.launch import plan


def _run(*args, cwd):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


def test_the_page_writes_the_readme_only_for_this_checkouts_reports(tmp_path, monkeypatch):
    """``page --reports <another folder>`` run from a checkout leaves its README alone; a folder that is not
    there is one line and exit 2."""
    from gatelab.papers import page
    checkout = tmp_path / "checkout"
    (checkout / "outputs" / "reports").mkdir(parents=True)
    readme = checkout / "README.md"
    readme.write_text("# mine\n<!-- generated: papers (python -m gatelab page) -->\nold\n<!-- end: papers -->\n"
                      "<!-- generated: first-run (python -m gatelab page) -->\nold\n<!-- end: first-run -->\n")
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(checkout)
    before = readme.read_text()
    assert page.main(["--reports", str(other)]) == 0
    assert readme.read_text() == before and (other / "README.md").is_file()
    assert page.main(["--reports", str(tmp_path / "no" / "such")]) == 2


@pytest.mark.parametrize("source", ["mnist", "cifar10"])
def test_a_corrupt_data_file_is_one_line_in_the_plan_and_leaves_nothing(tmp_path, source):
    root = write_tiny_data(tmp_path / "data")
    good = (root / f"{source}.npz").read_bytes()
    (root / f"{source}.npz").write_bytes(good[: len(good) // 2])  # a download cut short
    arch = ["arch=gconv"] if source == "cifar10" else []
    cfg = make_cfg([*arch, f"out_root={tmp_path / 'out'}"], root)
    with pytest.raises(DataNotFoundError, match=rf"{source}.npz is not a readable .npz .*delete it and fetch it again"):
        plan.check(plan.build(cfg))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_corrupt_data_file_stops_run_py_in_one_line_exit_2(tmp_path):
    root = write_tiny_data(tmp_path / "data")
    (root / "mnist.npz").write_bytes((root / "mnist.npz").read_bytes()[:1000])
    p = _run("epochs=1", f"data.root={root}", cwd=tmp_path)
    out = (p.stdout + p.stderr).strip()
    assert p.returncode == 2 and "Traceback" not in out and len(out.splitlines()) == 1, out[-2000:]
    assert "mnist.npz is not a readable .npz" in out and sorted(x.name for x in tmp_path.iterdir()) == ["data"]


def test_a_corrupt_backbone_names_the_file_and_what_to_do(tmp_path):
    from gatelab.data import backbone
    (tmp_path / backbone.RESNET20_FILE).write_bytes(b"not a checkpoint")
    with pytest.raises(FileNotFoundError, match="the file is corrupt or another one; fetch it again"):
        backbone.load_resnet20(tmp_path)


def _trained(tiny_root, out, regime, dense="[16,16,16]"):
    from gatelab.core.runs import run_dir
    from gatelab.training.loop import train
    cfg = make_cfg(["arch=fc", f"arch.dense={dense}", f"regime={regime}", f"out_root={out}"], tiny_root)
    train(cfg, run_dir(cfg))
    return run_dir(cfg)


@pytest.mark.parametrize("source_regime, dense, words", [("dlnpf", "[16,16,16]", "is a dlnpf run; FLNPF copies a ReLU"),
                                                         ("relu", "[8,8,8]", "has architecture")])
def test_flnpfs_source_is_checked_by_the_plan_before_anything_trains(tiny_root, tmp_path, source_regime, dense, words):
    src = _trained(tiny_root, tmp_path / "src", source_regime, dense)
    cfg = make_cfg(["arch=fc", "arch.dense=[16,16,16]", "regime=flnpf", f"regime.source={src}",
                    f"out_root={tmp_path / 'out'}"], tiny_root)
    with pytest.raises(ConfigError, match=words):
        plan.check(plan.build(cfg))
    assert not (tmp_path / "out").exists()


def test_seeds_and_seed_together_are_refused_naming_which_wins(tiny_root):
    with pytest.raises(ConfigError, match=r"seeds=\[0, 1\] and seed=2: seeds wins \(it trains seeds 0, 1\)"):
        plan.build(make_cfg(["seeds=[0,1]", "seed=2"], tiny_root))


def test_threads_zero_is_refused():
    from gatelab.core.validation import validate
    with pytest.raises(ConfigError, match="threads=0: give 1 or more, or leave it unset"):
        validate(make_cfg(["threads=0"]))


def test_an_unknown_precision_lists_the_allowed_values():
    from gatelab.core.commands import problem
    msg = problem(["precision=fp16"])
    assert "expected one of [fp32, tf32, bf16, auto]" in msg


def test_every_reader_of_results_json_goes_through_load_results():
    """No module reads a results.json with json.load(s) of its own: a truncated file would be a traceback, not
    one line (gatelab.core.results.load_results is the one reader)."""
    offenders = []
    for path in sorted((ROOT / "src" / "gatelab").rglob("*.py")):
        if path.name == "results.py" and path.parent.name == "core":
            continue
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            body = ast.unparse(fn)
            reads = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("load", "loads")
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == "json" for n in ast.walk(fn))
            if reads and ("results.json" in body or "RESULTS" in body):
                offenders.append(f"{path.relative_to(ROOT)}::{fn.name}")
    assert offenders == []


def test_costs_skips_a_truncated_results_json_in_one_line(tiny_root, tmp_path, capsys):
    from gatelab.launch import costs
    run = _trained(tiny_root, tmp_path / "out", "relu")
    (run.parent / "seed9-broken").mkdir()
    (run.parent / "seed9-broken" / "results.json").write_text('{"version": 1, "status": "compl')
    df = costs.priced_against_measured([tmp_path / "out"], "cpu")
    assert len(df) == 1 and "seed9-broken" in capsys.readouterr().err


def test_a_run_whose_output_is_not_a_terminal_prints_progress_inside_its_epochs(tiny_root, tmp_path, monkeypatch,
                                                                                caplog):
    """Without bars (output to a file), a line every TICK seconds inside the epoch: steps, rate, time left."""
    from gatelab.training import heartbeat, loop
    monkeypatch.setattr(heartbeat, "TICK", 1e-9)  # every step, instead of every 30 s
    with caplog.at_level("INFO", logger="gatelab"):
        loop.train(make_cfg(["arch=fc", "arch.dense=[8]"], tiny_root), tmp_path / "run")
    lines = [r.getMessage() for r in caplog.records if "steps/s" in r.getMessage()]
    assert lines and lines[-1].startswith("epoch 1/1: step ") and "left in the epoch" in lines[-1]
    # evaluation too (issue #57): a scheduler's log never goes TICK seconds without a line
    assert any(r.getMessage().startswith("epoch 1/1: evaluating, batch ") for r in caplog.records)
    assert heartbeat.TICK < 1 and 0 < heartbeat.Ticker(1, 1, 8).every  # the default is the module's 30 s


def test_an_epoch_many_times_slower_than_the_run_is_named_in_the_log_once(tmp_path, caplog):
    """An epoch 10x or more its run's median (shared cores, a pause) gets one warning line in the run's log, so a
    wall time that is not the run's speed says so; an epoch of 8x (paper 002's ν every 10 epochs) does not."""
    from gatelab.training.run_state import RunState, slow_epoch
    run = RunState(0, tmp_path / "run", make_cfg(["arch=fc", "arch.dense=[8]", "epochs=8"]), 0.0)
    m = {"train_loss": 1.0, "train_acc": 0.5, "test_loss": 1.0, "test_acc": 0.5}
    with caplog.at_level("INFO", logger="gatelab"):
        for epoch, seconds in enumerate([5.0, 1.0, 1.2, 1.1, 8.5, 1.0, 40.0, 90.0], start=1):
            run.record(epoch, m, seconds, lambda: {})
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and warned[0].startswith("seed 0, epoch 7 took 40 s, 35x its median epoch"), warned
    assert "threads=1" in warned[0]
    assert slow_epoch([{"seconds": 1.0}] * 2, 50.0) is None  # too few epochs to know the run's speed


def test_reproduce_says_job_k_of_n_and_the_time_left(monkeypatch, capsys):
    from gatelab.launch import costs, recipes

    class Step:
        def __init__(self, name):
            self.job = type("Job", (), {"name": name})()

        def priced(self):
            return []
    monkeypatch.setattr(recipes, "_call", lambda argv: 0)
    monkeypatch.setattr(costs, "price", lambda items, table: {k: 600.0 for k in table})
    p = recipes.Progress([Step("a"), Step("b")])
    p.call(p.steps[0], ["x"])
    p.call(p.steps[1], ["y"])
    out = capsys.readouterr().out
    assert "reproduce: job 1 of 2: a" in out and "reproduce: job 2 of 2: b" in out
    assert "1 of 2 jobs done; about" in out and "2 of 2 jobs done; about 0 s left" in out
    # this machine's learned entry prices no job of a network it never trained: the next entry that prices them all
    monkeypatch.setattr(costs, "load", lambda: {"here": {}, "cpu": {}})
    monkeypatch.setattr(costs, "for_machine", lambda table: [("here", "this machine"), ("cpu", "this machine")])
    monkeypatch.setattr(costs, "price", lambda items, table: {k: None if k == "here" else 600.0 for k in table})
    p = recipes.Progress([Step("a"), Step("b")])
    p.call(p.steps[0], ["x"])
    assert "1 of 2 jobs done; about" in capsys.readouterr().out and p.entry == "cpu" and "(priced on cpu, x" in p.left()
    monkeypatch.setattr(costs, "price", lambda items, table: {k: None for k in table})
    assert recipes.Progress([Step("a")]).left() == "time left not priced (no cost entry prices these jobs)"


def test_each_run_records_the_stack_it_trained_in(tiny_root, tmp_path):
    """Stacked and single runs of a seed share a run key (the settings) but not the bits: results.json says which."""
    from gatelab.core.runs import seed_run_dirs
    from gatelab.papers import report
    from gatelab.training.loop import train, train_seeds
    over = ["arch=fc", "arch.dense=[8]", f"out_root={tmp_path / 'a'}"]
    cfg = make_cfg([*over, "seeds=[0,1]"], tiny_root)
    res = train_seeds(cfg, seed_run_dirs(cfg))
    assert res[0]["env"]["stack"] == res[1]["env"]["stack"] == ["relu/seed0", "relu/seed1"]
    alone = train(make_cfg(over, tiny_root), tmp_path / "alone")
    assert alone["env"]["stack"] == ["relu/seed0"]
    assert "2 nets stacked" in report.device_words(res[0]["env"]) and "one net a step" in report.device_words(alone["env"])


def test_deterministic_runs_are_bit_identical_and_record_the_code_that_ran(tiny_root, tmp_path):
    """Issue #50 §2: deterministic=true (torch's deterministic algorithms, no cuDNN autotuning, cuBLAS's fixed
    workspace) gives the same bits twice; env records it, whether the tree had uncommitted changes (with a hash of
    the diff) and the versions of the packages the run used. Not in the run key."""
    import torch
    from conftest import same_run
    from gatelab.core.runs import run_key
    from gatelab.training.loop import train
    over = ["arch=gconv", "arch.conv_channels=[4]", "arch.dense=[8]", "dataset.limit_train=64", "dataset.limit_test=32",
            "deterministic=true", "epochs=2"]
    try:
        a = train(make_cfg(over, tiny_root), tmp_path / "a")
        b = train(make_cfg(over, tiny_root), tmp_path / "b")
    finally:
        torch.use_deterministic_algorithms(False)
    same_run(tmp_path / "a", tmp_path / "b")
    env = a["env"]
    assert env["deterministic"] is True and env["cublas_workspace_config"] == ":4096:8" and not env["cudnn_benchmark"]
    assert {"hydra-core", "omegaconf", "numpy"} <= set(env["versions"])
    assert "git_dirty" in env and (env["git_diff_sha1"] is None) == (not env["git_dirty"])
    assert run_key(make_cfg(over)) == run_key(make_cfg([o for o in over if not o.startswith("deterministic")]))
    assert b["env"]["deterministic"] and not torch.are_deterministic_algorithms_enabled()


def test_a_corrupt_backbone_stops_the_plan_of_a_cifar_routing_task(tmp_path):
    from gatelab.data import backbone
    root = write_tiny_data(tmp_path / "data")
    (root / backbone.RESNET20_FILE).write_bytes(b"cut short")
    cfg = make_cfg(["dataset=routing_cifar_rot", "arch=routing", "regime=dln", "dataset.routing.M=4",
                    "dataset.routing.K=2", f"out_root={tmp_path / 'out'}"], root)
    with pytest.raises(FileNotFoundError, match="the file is corrupt or another one"):
        plan.check(plan.build(cfg))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("deterministic", [True, False])
def test_what_deterministic_sets_is_read_back_from_torch_and_cudnn_autotuning_follows_it(deterministic):
    """Issue #56 §4: the settings ``deterministic`` makes are torch's own state, read back (a no-op
    ``use_deterministic_algorithms`` or a dropped ``cudnn.benchmark`` guard fails here, on a CPU): deterministic
    algorithms on, and cuDNN's autotuning off for a conv net on CUDA, where without it autotuning is on. The device
    is named, not used: no CUDA is needed to set the flags."""
    import torch
    from gatelab.training.speed import determinism, precision
    cfg = make_cfg(["arch=gconv", "arch.conv_channels=[4]", "arch.dense=[8]", f"deterministic={str(deterministic).lower()}"])
    try:
        env = {**determinism(cfg), **precision(cfg, torch.device("cuda"))}
        assert torch.are_deterministic_algorithms_enabled() is deterministic
        assert env["deterministic"] is deterministic
        assert torch.backends.cudnn.benchmark is (not deterministic) and env["cudnn_benchmark"] is (not deterministic)
    finally:
        torch.use_deterministic_algorithms(False)
        torch.backends.cudnn.benchmark = False
