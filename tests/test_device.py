"""Placement without a GPU: on the ``meta`` device (shapes only, no data), every parameter, buffer,
gradient, optimiser state and accumulator of a run must live on the run's device. A tensor left on
the CPU fails here exactly as it would fail on CUDA."""
import os
import platform
import subprocess
import sys

import pytest
import torch

from conftest import TINY_ARCH, Killed, kill_after_writes, make_cfg
from gatelab.data import datasets as data_mod
from gatelab.training import loop as train_mod, stacking
from gatelab.training.run_state import RunState
from gatelab.training.loop import train
from gatelab.training.metrics import evaluate

META = torch.device("meta")


class _Stop(Exception):
    pass


@pytest.mark.parametrize("regime", ["relu", "dlnpf"])
def test_the_optimiser_gets_parameters_on_the_run_device(tiny_root, tmp_path, monkeypatch, regime):
    """Through the public entry point: `train(device=meta)` must hand the optimiser meta parameters
    (before the fix, the model stayed on the CPU while the data went to the device)."""
    seen = {}

    def spy(opt_cfg, params):
        seen["devices"] = {p.device for p in params}
        raise _Stop

    monkeypatch.setattr(stacking, "make_optimizer", spy)
    cfg = make_cfg(["arch.dense=[8]", f"regime={regime}", "device=meta"], tiny_root)
    with pytest.raises(_Stop):
        train(cfg, tmp_path / "run")
    assert seen["devices"] == {META}


def _runs(cfg, tmp_path, data):
    runs = [RunState(s, tmp_path / f"s{s}", make_cfg([*cfg, f"seed={s}"]), 0.0) for s in (0, 1)]
    for r in runs:
        r.source = None
        r.build(data, {})
    return runs


def _on(device, tensors) -> set:
    return {t.device for t in tensors}


@pytest.mark.parametrize("arch,regime,opt", [("fc", "dlnpf", "adam"), ("gconv", "frnpf_di", "sgd"),
                                             ("vconv", "relu", "rmsprop")])
def test_a_training_epoch_and_evaluation_stay_on_the_device(tiny_root, tmp_path, arch, regime, opt):
    over = [f"arch={arch}", *TINY_ARCH[arch], f"regime={regime}", f"optimizer={opt}", f"data.root={tiny_root}",
            "progress=false", "device=meta", "eval_batch_size=64"]
    cfg = make_cfg(over)
    data = data_mod.load(cfg.dataset, cfg.data, META)
    runs = _runs(over, tmp_path, data)
    model, opt_, gens = stacking.setup(cfg, runs, META)
    assert _on(META, model.parameters()) | _on(META, model.buffers()) == {META}
    assert all(g.device.type == "cpu" for g in gens)  # data order: CPU streams, the same on every device
    loss_sum, correct = train_mod.train_epoch(cfg, model, opt_, data, gens, torch.autocast("cpu", enabled=False), 1)
    assert loss_sum.device == correct.device == META and loss_sum.shape == (2,)
    assert {p.grad.device for p in model.parameters() if p.grad is not None} == {META}
    state = [v for st in opt_.state.values() for k, v in st.items() if torch.is_tensor(v) and k != "step"]
    assert _on(META, state) == ({META} if opt != "sgd" else set())  # plain SGD keeps no state
    with pytest.raises(NotImplementedError):  # meta tensors have no values: reaching .tolist() means
        evaluate(model, data.test, 64, data.task, 2)  # every op before it ran on the device


def test_a_cpu_checkpoint_resumes_on_another_device(tiny_root, tmp_path):
    """last.pt is written on the CPU; resuming with device=meta puts model and optimiser state on it."""
    over = ["arch.dense=[8]", "regime=dlnpf", "epochs=1", "progress=false", f"data.root={tiny_root}"]
    for s in (0, 1):
        assert train(make_cfg([*over, f"seed={s}"]), tmp_path / f"s{s}")["status"] == "completed"
    cfg = make_cfg([*over, "epochs=2", "device=meta"])
    data = data_mod.load(cfg.dataset, cfg.data, META)
    runs = _runs([*over, "epochs=2", "device=meta"], tmp_path, data)
    train_mod._resume_points(runs, force=False)  # the group resume point of both seeds
    assert [r.start_position() for r in runs] == [(1, 0), (1, 0)]
    model, opt_, gens = stacking.setup(cfg, runs, META)
    assert _on(META, model.parameters()) == {META}
    state = [v for st in opt_.state.values() for k, v in st.items() if torch.is_tensor(v) and k != "step"]
    assert state and _on(META, state) == {META}
    assert [g.get_state().tolist() for g in gens] == [r.last["shuffle_rng"].tolist() for r in runs]


def test_bench_times_the_product_training_path():
    """scripts/bench.py builds, places and trains through gatelab.training.loop's own seams (not a copy)."""
    import importlib.util
    from conftest import ROOT
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    t = bench.seconds_per_step(["dataset=mnist", "arch=fc", "arch.dense=[8]", "regime=dlnpf"], (1, 28, 28), 2, 3,
                               torch.device("cpu"))
    assert 0 < t < 10
    row = bench.seconds_per_step(["dataset=mnist", "arch=fc", "arch.dense=[8]", "regime=relu"], (1, 28, 28), 2, 3,
                                 torch.device("cpu"), lrs=bench.ROW_LRS)  # 6 nets, each its own step size
    assert 0 < row < 10


@pytest.mark.parametrize("native", [False, True])
def test_bench_paths_time_each_conv_path_beside_the_plain_loop(monkeypatch, capsys, native):
    """``bench.py --paths``: every conv path's seconds and ratio to the plain fp32 loop, bf16 skipped
    with the reason where it is emulated, and the fastest named among those that ran; the default path of each
    precision beside its bare twin, the plain loop of the same precision and layout (issue #57)."""
    import importlib.util
    from conftest import ROOT
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    tiny = ["dataset=cifar10", "arch=gconv", *TINY_ARCH["gconv"], "regime=relu"]
    monkeypatch.setattr(bench, "CASES", [("gconv/cifar10 relu", tiny, (3, 8, 8), 100)])
    from gatelab.core import machine
    monkeypatch.setattr(machine, "bf16_native", lambda device: native)
    twins = []
    plain = bench.plain_seconds_per_step

    def spy(*a, bf16=False, channels_last=False, **k):
        twins.append((bf16, channels_last))
        return plain(*a, bf16=bf16, channels_last=channels_last, **k)
    monkeypatch.setattr(bench, "plain_seconds_per_step", spy)
    bench.paths(torch.device("cpu"), 2, 2, None)
    out = capsys.readouterr().out.splitlines()
    timed = [line for line in out if "s/net-step" in line and not line.startswith("default")]
    assert len(timed) == (12 if native else 6)  # 2 or 4 plain loops + 4 or 8 product paths
    assert all(float(line.split()[-1].rstrip("x")) > 0 for line in timed)
    assert sum("skipped: bf16 is emulated" in line for line in out) == (0 if native else 6)
    assert twins == [(False, False), (False, True)] + ([(True, False), (True, True)] if native else [])
    fastest = [line for line in out if line.startswith("fastest gconv")]
    assert len(fastest) == 1 and any(p in fastest[0] for p in ("loop", "stacked", "single"))
    defaults = [line for line in out if line.startswith("default gconv")]
    assert [d.split(": ")[0].split()[-1] for d in defaults] == (["fp32", "bf16"] if native else ["fp32"])
    layout, _ = bench.default_path(tiny, torch.device("cpu"))
    cl = " channels_last" if layout == ["channels_last=true"] else ""
    for d in defaults:
        prec = d.split(": ")[0].split()[-1]
        assert float(d.split("fastest ")[1].split(": ")[1].split("x")[0]) >= 1.0
        assert f"its bare twin (plain {prec}{cl} loop " in d  # the same precision and layout
        assert float(d.split("; ")[1].split("x its bare twin")[0]) > 0


def test_bench_record_keeps_each_case_as_it_is_measured(monkeypatch, tmp_path):
    """``bench.py --record``: each case's cost is written as soon as it is timed, so a bench cut by the
    device check's time limit (as on the H200, 2026-11-28) keeps what it measured; the other entries stay."""
    import functools
    import importlib.util
    import shutil
    import yaml
    from conftest import ROOT
    from gatelab.launch import costs
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    table = tmp_path / "costs.yaml"
    shutil.copy(costs.TABLE, table)
    monkeypatch.setattr(bench.costs, "record", functools.partial(costs.record, path=table))
    tiny = ["dataset=mnist", "arch=fc", "arch.dense=[8]"]
    monkeypatch.setattr(bench, "CASES", [("fc/mnist relu", [*tiny, "regime=relu"], (1, 28, 28), 64),
                                         ("fc/mnist dlnpf", [*tiny, "regime=dlnpf"], (1, 28, 28), 64)])
    calls = []

    def cut_at_the_second_case(*a, **k):  # the time limit, at the second case; the timing is not under test
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return 0.01
    monkeypatch.setattr(bench, "plain_seconds_per_step", cut_at_the_second_case)
    monkeypatch.setattr(bench, "seconds_per_step", lambda overrides, shape, seeds, *a, **k: 0.002 + 0.001 * seeds)
    monkeypatch.setattr(sys, "argv", ["bench.py", "--quick", "--seeds", "2", "--device", "cpu", "--record", "testbox"])
    with pytest.raises(KeyboardInterrupt):
        bench.main()
    entry = yaml.safe_load(table.read_text())["testbox"]
    assert entry["label"].startswith("CPU") and "fc/dlnpf" not in entry and ": fc, epoch/fc;" in entry["source"]
    assert entry["epoch/fc"] > 0 and entry["machine"]["kind"]  # checkpoint writes measured; the machine named
    assert entry["fc"] == pytest.approx([0.002, 0.001])  # a + S*b from the single and stacked steps
    assert yaml.safe_load(table.read_text())["h100"] == costs.load()["h100"]


def test_parallel_jobs_claim_different_gpus(tmp_path, monkeypatch):
    """Several jobs on one machine with 3 GPUs: each process claims a free one (lock files), a fourth
    shares GPU 0; a job that ends frees its GPU. Each subprocess stands for one joblib worker."""
    import subprocess
    import sys
    code = ("import sys, time; from gatelab.core.results import claim_gpu; "
            f"print(claim_gpu(3, {str(tmp_path)!r}), flush=True); time.sleep(float(sys.argv[1]))")
    procs, got = [], []
    for hold in (30, 30, 30, 0):  # one after another: each has its GPU before the next starts
        procs.append(subprocess.Popen([sys.executable, "-c", code, str(hold)], stdout=subprocess.PIPE, text=True))
        got.append(int(procs[-1].stdout.readline()))
    assert got == [0, 1, 2, 0]
    procs[1].kill()
    procs[1].wait()
    freed = subprocess.run([sys.executable, "-c", code, "0"], capture_output=True, text=True)
    assert int(freed.stdout) == got[1]
    for p in procs:
        p.kill()
        p.wait()


def test_auto_device_with_several_gpus_claims_one(tmp_path, monkeypatch):
    from gatelab.core import results
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(results, "_CLAIMED", {})
    monkeypatch.setenv(results.GPU_LOCKS, str(tmp_path))
    assert results.resolve_device("auto") == torch.device("cuda", 0)
    assert results.resolve_device("cuda") == torch.device("cuda", 0)  # the same process keeps its GPU
    assert results.resolve_device("cuda:2") == torch.device("cuda", 2)  # an explicit index is obeyed
    for f in results._CLAIMED.values():  # this "process" ends: its GPU is free again
        f.close()
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(results, "_CLAIMED", {})
    assert results.resolve_device("auto") == torch.device("cuda", 0)
    assert results._CLAIMED == {}  # one GPU: nothing to claim
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with open(tmp_path / "gpu0.lock", "w") as other:  # another job holds GPU 0
        import fcntl
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert results.resolve_device("auto") == torch.device("cuda", 1)
    results._CLAIMED[1].close()


@pytest.mark.parametrize("kind,tf32,autocast", [("fp32", False, None), ("tf32", True, None), ("bf16", False, "bf16")])
def test_precision_is_applied_recorded_and_keyed(tiny_root, tmp_path, kind, tf32, autocast):
    from gatelab.core.runs import run_key
    flags = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        cfg = make_cfg(["arch=fc", *TINY_ARCH["fc"], f"precision={kind}"], tiny_root)
        env = train(cfg, tmp_path / "run")["env"]
        assert (env["precision"], env["matmul_allow_tf32"], env["cudnn_allow_tf32"], env["autocast"]) == \
            (kind, tf32, tf32, autocast)
        assert env["cudnn_benchmark"] is False  # a CPU run of an FC net
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags
    plain = run_key(make_cfg(["arch=fc"]))
    assert (run_key(make_cfg(["arch=fc", f"precision={kind}"])) == plain) == (kind == "fp32")


@pytest.mark.parametrize("native", [True, False])
def test_bf16_on_a_cpu_without_bf16_kernels_is_named_and_recorded(monkeypatch, caplog, native):
    """bf16 autocast on a CPU whose oneDNN emulates it (no AVX-512 BF16/AMX) is one warning naming the
    fast path; env records the CPU's kernels either way. A CPU with them gets no warning."""
    from gatelab.core import results
    from gatelab.training import speed
    from gatelab.core import machine
    monkeypatch.setattr(machine, "bf16_native", lambda device: native)
    with caplog.at_level("WARNING", logger="gatelab"):
        env = speed.precision(make_cfg(["precision=bf16"]), torch.device("cpu"))
    warned = [r.getMessage() for r in caplog.records if "precision=fp32 is the fast path" in r.getMessage()]
    assert env["autocast"] == "bf16" and len(warned) == (0 if native else 1)
    assert results.environment(torch.device("cpu"))["bf16_native"] is native


@pytest.mark.parametrize("case", ["routing", "row_lrs", "imp"])
def test_new_training_paths_stay_on_the_device(tiny_root, tmp_path, case):
    """Paper 003's routing net (its task buffers, trained pairs, per-epoch pair metrics), a row's
    per-net step sizes and IMP's gradient masks: model, gradients and accumulators on the device."""
    base = [f"data.root={tiny_root}", "progress=false", "device=meta", "eval_batch_size=64", "optimizer=sgd"]
    over = {"routing": ["dataset=routing_mnist_perm", "arch=routing", "regime=dln", "arch.dense=[8]",
                        "dataset.routing.M=4", "dataset.routing.K=2", "optimizer.batch_size=8"],
            "row_lrs": ["arch.dense=[8]"], "imp": ["arch.dense=[8]"]}[case]
    cfg = make_cfg([*base, *over])
    data = data_mod.load(cfg.dataset, cfg.data, META)
    lrs = (0.1, 0.01) if case == "row_lrs" else (cfg.optimizer.lr, cfg.optimizer.lr)
    runs = [RunState(s, tmp_path / f"s{s}", make_cfg([*base, *over, f"seed={s}", f"optimizer.lr={lr}"]), 0.0)
            for s, lr in enumerate(lrs)]
    for r in runs:
        r.source = None
        r.build(data, {})
        if case == "imp":  # a mask as an IMP round holds it (CPU tensors, loaded from the parent's mask.pt)
            r.mask = {k: torch.rand(r.model.get_parameter(k).shape) > 0.5
                      for k in ("value.hidden.0.weight", "value.head.weight")}
    model, opt_, gens = stacking.setup(cfg, runs, META)
    assert _on(META, model.parameters()) | _on(META, model.buffers()) == {META}
    loss_sum, correct = train_mod.train_epoch(cfg, model, opt_, data, gens, torch.autocast("cpu", enabled=False), 1)
    assert loss_sum.device == correct.device == META
    assert {p.grad.device for p in model.parameters() if p.grad is not None} == {META}
    with pytest.raises(NotImplementedError):  # the first host read; every op before it ran on the device
        train_mod.extra_metrics(cfg, model, data, 2) if case == "routing" else \
            evaluate(model, data.test, 64, data.task, 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (the device check runs it)")
@pytest.mark.parametrize("first, then", [("cuda", "cpu"), ("cpu", "cuda")])
def test_a_checkpoint_resumes_across_cuda_and_the_cpu(tiny_root, tmp_path, monkeypatch, first, then):
    """Killed mid-training on one device, resumed on the other: the run completes there, its best.pt
    agrees with its results.json, and every tensor a checkpoint holds loads onto the CPU."""
    from gatelab.core import checkpoints
    from gatelab.core.runs import seed_run_dirs
    from gatelab.training.loop import train_seeds
    over = ["arch.dense=[16]", "regime=dlnpf", "epochs=3", "seeds=[0,1]", "checkpoint_minutes=0",
            f"data.root={tiny_root}", f"out_root={tmp_path}"]
    restore = kill_after_writes(monkeypatch, 3)  # net 0 at epoch 2, net 1 at epoch 1
    with pytest.raises(Killed):
        cfg = make_cfg([*over, f"device={first}"])
        train_seeds(cfg, seed_run_dirs(cfg))
    restore()
    cfg = make_cfg([*over, f"device={then}"])
    res = train_seeds(cfg, seed_run_dirs(cfg))
    for s, d in seed_run_dirs(cfg).items():
        assert res[s]["status"] == "completed" and res[s]["resumed_from_epoch"] == 1
        assert res[s]["env"]["device"].startswith(then) and checkpoints.best_mismatch(d, res[s]) is None
        state = checkpoints.load(d / "ckpt" / "last.pt")
        tensors = [v for v in state["model"].values()] + [state["shuffle_rng"]]
        assert {t.device.type for t in tensors} == {"cpu"}


HEAP_PROBE = """
import resource, sys, torch
import gatelab.training.loop  # what a run's process has loaded when it sets the heap (its heap's layout matters)
from gatelab.training.speed import heap_reuse
on = heap_reuse(sys.argv[1] == "on")
for _ in range(2):
    torch.ones(16 * 2**20)  # 64 MB, twice before counting
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    torch.ones(16 * 2**20)  # a step's fresh gradient, freed at once
print(on, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="heap_reuse acts on glibc's allocator only")
def test_heap_reuse_keeps_a_big_tensors_pages_between_steps():
    """Without it, every 64 MB tensor is fresh mmap pages, faulted in one by one (16384 each); with
    it, at most one new region over the ten steps."""
    faults = {}
    for mode in ("off", "on"):
        out = subprocess.run([sys.executable, "-c", HEAP_PROBE, mode], capture_output=True, text=True, check=True)
        on, n = out.stdout.split()
        assert on == str(mode == "on")
        faults[mode] = int(n)
    assert faults["off"] > 10 * 16384 * 0.9 and faults["on"] <= 16384, faults


def test_the_device_checks_step_limits_fit_one_nine_minute_call():
    """scripts/device_check.sh on a GPU: its steps' time limits (the default steps, Table 2 off) add up to
    at most 9 minutes, so one call of the device tool (10 at most) leaves room for its start-up and files."""
    import re
    from conftest import ROOT
    text = (ROOT / "scripts" / "device_check.sh").read_text()
    gpu = re.search(r"^  E2=\d+; E4=\d+; LIM=\(([\d ]+)\).*TABLE2=\$\{TABLE2:-0\}$", text, re.M)
    tests, bench, table2, table4 = map(int, gpu[1].split())
    fixed = [int(x) for x in re.findall(r'^step "2[bc] [^"]+" (\d+) ', text, re.M)]
    assert len(fixed) == 2 and "TABLE2=${TABLE2:-0}" in text
    assert tests + bench + sum(fixed) + table4 <= 540, (tests, bench, fixed, table4)


def test_completed_runs_travel_to_a_bare_machine_as_their_results(tmp_path):
    """scripts/stage_done_runs.sh (device_stage.sh's .stage/runs): a completed run's results.json is copied under
    its own path, where the plan's test of a done run (finished_results) holds; an interrupted run and a
    malformed file stay behind, so the device trains them again rather than counting them."""
    import json
    from conftest import ROOT
    from gatelab.core.results import RESULTS_VERSION, finished_results

    def res(status):
        return json.dumps({"version": RESULTS_VERSION, "status": status, "config": {}, "history": []})
    runs = tmp_path / "outputs" / "t4" / "runs" / "cifar10-vconv" / "relu"
    for name, text in (("seed0-a", res("completed")), ("seed1-b", res("interrupted")), ("seed2-c", "{not json")):
        (runs / name).mkdir(parents=True)
        (runs / name / "results.json").write_text(text)
    p = subprocess.run(["bash", str(ROOT / "scripts" / "stage_done_runs.sh"), "stage", "outputs/t4", "outputs/none"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHON": sys.executable})
    assert p.returncode == 0 and "staged 1 final run(s)" in p.stdout, p.stderr
    staged = sorted(f.relative_to(tmp_path / "stage") for f in (tmp_path / "stage").rglob("results.json"))
    assert staged == [runs.relative_to(tmp_path) / "seed0-a" / "results.json"]
    assert finished_results(tmp_path / "stage" / staged[0].parent)["status"] == "completed"
