"""Recipes (issue #29): every recipe at every scale builds, composes, validates and checks its plan;
its run directories are the ones the Makefile's commands planned before recipes existed (run keys
stay stable: ``recipe_runs.json`` pins them); the Makefile is one line per target; the cost estimate
agrees with a measured run; a recipe trains its waves and renders its report."""
import hashlib
import json
import statistics
import re
import subprocess
import sys
import time

import pytest

from conftest import ROOT, write_tiny_data
from gatelab.core import machine
from gatelab.core.machine import Machine
from gatelab.launch import costs, recipes
from gatelab.launch.recipes import Options, Recipe
from gatelab.papers.reproduce import discover, main

REGISTRY = discover()
PINNED = json.loads((ROOT / "tests" / "recipe_runs.json").read_text())
SLOW = {("races", "paper"), ("races", "quick")}  # 100+ jobs each: seconds of composing
CASES = [pytest.param(n, s, marks=[pytest.mark.slow] if (n, s) in SLOW else []) for n, d in sorted(REGISTRY.items())
         for s in d.scales]
# The Make targets before recipes (issue #29 keeps every name): a target per table, scale and utility.
TARGETS = {"help", "install", "test", "test-all", "run", "table2", "table2-mnist", "table2-mnist-full", "table2-quick", "report",
           "figure3", "bench", "table4", "table4-quick", "dgn-figures", "exp6", "exp6-reduced", "page", "table2-conv-reduced", "table2-conv-cpu",
           "table4-conv-reduced", "table4-conv-reduced-grid", "table4-conv-cpu", "dgn-figure5", "dgn-figure5-reduced", "races", "races-quick", "races-report", "races-appendix", "races-drop", "routing-reduced", "routing-reduced-m100", "routing-paper",
           "routing-isolation", "routing-isolation-leaky", "routing-isolation-decoder", "routing-isolation-decoder-rot", "routing-report", "routing-toy", "routing-features", "routing-backbone"}


PINNED_MACHINE = Machine("cpu-avx512-bf16", "the pins' machine", True, "AVX512")  # precision=auto -> bf16 for conv nets


@pytest.fixture(autouse=True)
def _one_machine(monkeypatch):
    """The pinned run keys hold for a machine with bf16 kernels (conv_reduced's and the quick conv scales'
    precision=auto resolve to bf16 there, fp32 on a Zen 3): every test here sees that one."""
    monkeypatch.setattr(machine, "detect", lambda device="cpu": PINNED_MACHINE)


@pytest.mark.parametrize("name, scale", CASES)
def test_every_recipe_plans_checks_and_keeps_its_run_keys(name, scale, tiny_root):
    r = recipes.build(name, Options(scale, data=str(tiny_root)))
    waves = recipes.plan_recipe(r)  # composes, validates and checks every job (raises on the first bad one)
    dirs = sorted({str(d) for w in waves for s in w for _, d in s.job.entries})
    assert r.runs or r.figures
    if not dirs:
        assert f"{name}/{scale}" not in PINNED
        return
    pin = PINNED[f"{name}/{scale}"]
    assert (len(dirs), hashlib.sha1("\n".join(dirs).encode()).hexdigest()[:16]) == (pin["runs"], pin["sha1"])
    first = {str(d) for s in waves[0] for _, d in s.job.entries}
    for later in waves[1:]:  # a job's prerequisites are planned in an earlier wave
        for s in later:
            assert "train_prerequisites=false" in s.overrides
    assert first


def test_the_makefile_keeps_every_target_and_each_is_one_line():
    text = (ROOT / "Makefile").read_text()
    phony = set(re.search(r"^\.PHONY:(.*?)(?<!\\)$", text, re.M | re.S).group(1).replace("\\", " ").split())
    assert phony == TARGETS
    for target in TARGETS - {"help"}:
        (line,) = [ln for ln in text.splitlines() if ln.startswith(f"{target}:")]
        body = line.split(";", 1)[1].strip() if ";" in line else \
            text.split(line + "\n", 1)[1].split("\n\n", 1)[0].strip()
        assert "\n" not in body and body, target
    p = subprocess.run(["make", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    listed = {m.group(1) for m in re.finditer(r"^make ([\w-]+)", p.stdout, re.M)}
    assert listed | {"help", "races-report", "routing-report"} >= TARGETS - {"table4-conv-reduced"}


@pytest.mark.parametrize("target, expected", [
    ("table2", "reproduce table2 --scale paper"), ("races-quick", "reproduce races --scale quick"),
    ("routing-report", "reproduce routing --scale reduced --report-only"),
    ("table2-conv-reduced", "reproduce table2 --scale conv-reduced")])
def test_a_make_target_calls_its_recipe_with_the_make_variables(target, expected):
    p = subprocess.run(["make", "-n", target, "DATA=/data", "EPOCHS=3", "SEEDS=0,1", "JOBS=2", "BATCH=0", "DRY=1",
                        "EXTRA=threads=1"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and expected in p.stdout
    for flag in ("--data /data", "--epochs 3", "--seeds 0,1", "--jobs 2", "--no-stack", "--dry-run", "threads=1"):
        assert flag in p.stdout, (flag, p.stdout)


def test_table4s_grid_scale_adds_networks_to_the_reduced_runs_and_report(tiny_root):
    """``conv-reduced-grid`` trains the whole beta x eps grid in conv-reduced's folder: its 25 runs are among
    the grid's 90 (DLN, ReLU + 16 soft-ReLU networks x 5 seeds), so a GPU call trains only what is missing, and both
    render into the one report."""
    def dirs(scale):
        r = recipes.build("table4", Options(scale, data=str(tiny_root)))
        return r, {str(d) for w in recipes.plan_recipe(r) for s in w for _, d in s.job.entries}
    small, grid = dirs("conv-reduced"), dirs("conv-reduced-grid")
    assert small[1] < grid[1] and len(grid[1]) == 90 and len(small[1]) == 25
    assert small[0].reports == grid[0].reports and "precision=auto" in " ".join(grid[0].reports[0])


def test_a_bad_recipe_scale_or_override_is_one_line_and_exit_2(tiny_root, capsys):
    assert main(["reproduce", "tabel2"]) == 2
    assert "no recipe 'tabel2'; recipes: " in capsys.readouterr().err
    assert main(["reproduce", "table2", "--scale", "huge"]) == 2
    assert "its scales: paper, quick, conv-reduced" in capsys.readouterr().err
    assert main(["reproduce", "exp6", "--data", str(tiny_root), "--dry-run", "optimizer.lr=-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "optimizer.lr must be > 0" in err


def _tiny(name: str, out, extra=()):
    """A recipe of two FC cells (ReLU, then FLNPF from it: two waves) on tiny data, registered as ``name``."""
    @recipes.recipe(name, ("s",), "a test recipe")
    def build(o: Options) -> Recipe:
        base = ["arch.dense=[64,64]", "optimizer.batch_size=8", "dataset.limit_train=2000", "dataset.limit_test=100",
                "seeds=[0,1]",
                f"out_root={out}", *extra]
        return Recipe(name, "test", [[*base, "regime=relu"], [*base, "regime=flnpf"]], reports=[
            ["gatelab.papers.npf", "table2", "--runs", str(out), "--out", str(out / "report"), "--command",
             "{command}"]])
    return build


def test_the_cost_estimate_agrees_with_a_measured_run(tmp_path):
    """Seconds per net-step measured on a calibration run, priced onto a recipe of other seeds and
    lengths, against the training seconds its runs then record: within a factor of 3 (load may vary)."""
    root = write_tiny_data(tmp_path / "data", n_train=2000, n_test=100)
    cal = tmp_path / "cal"
    _tiny("cost-calibration", cal, ["epochs=3"])
    r = recipes.build("cost-calibration", Options("s", data=str(root), extra=["threads=1"]))
    recipes.run_local(recipes.plan_recipe(r))
    # the price's model: a steady epoch (the median of the later ones) and each stack's first-epoch extra
    # (`warmup`); one noisy first epoch read as a steady one priced a CI run 3.7x over (2026-11-28)
    hist = [json.loads(p.read_text())["history"] for p in cal.rglob("results.json")]
    steady = statistics.median(h["seconds"] for run in hist for h in run[1:])
    warmup = max(0.0, statistics.mean(run[0]["seconds"] for run in hist) - steady)
    from gatelab.core.runs import compose
    cfg = compose(["arch.dense=[64,64]", "dataset.limit_train=2000", "dataset.limit_test=100"])
    # two nets stacked share each epoch's seconds, which hold its evaluation (priced on top: eval_share)
    per_step = steady / (1 + costs.eval_share(cfg)) / 2 / 250
    table = {"here": {"label": "here", "fc": per_step / costs.size(cfg),  # per FC_REF step
                      "warmup": warmup}}
    _tiny("cost-check", tmp_path / "run", ["epochs=3", "seed=0"])
    r = recipes.build("cost-check", Options("s", data=str(root), seeds="2,3", extra=["threads=1"]))
    waves = recipes.plan_recipe(r)
    predicted = costs.price([x for w in waves for s in w for x in s.priced()], table)["here"]
    assert [s.steps_left for w in waves for s in w] == [2 * 3 * 250, 2 * 3 * 250]
    text = recipes.describe(r, waves, "s", table)
    assert "wave 2: 1 job(s) (after wave 1)" in text and "total: 2 jobs, 4 runs (0 done)" in text
    recipes.run_local(waves, jobs=2)
    run_root = tmp_path / ("run" + Options("s", seeds="2,3").variant())  # SEEDS: a try of its own, beside
    measured = sum(h["seconds"] for p in run_root.rglob("results.json")
                   for h in json.loads(p.read_text())["history"]) / 2
    assert 1 / 3 < predicted / measured < 3, (predicted, measured)  # a wrong unit or stack count is 10x off
    assert "4 runs (4 done)" in recipes.describe(r, recipes.plan_recipe(r), "s", table)  # found, not retrained


@pytest.mark.slow
def test_reproduce_dry_run_prints_table2_in_waves_with_its_cost_quickly(tiny_root, tmp_path):
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([sys.executable, "-m", "gatelab", "reproduce", "table2", "--scale", "paper", "--dry-run",
                        "--data", str(tiny_root)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # the CPU time it used, not the wall time, which a job beside it stretches. The issue asked under 10 s
    # on a quiet machine (5.8 s measured on a Zen 4 EPYC); a Zen 3 EPYC beside a 2-thread training used
    # 22 s of CPU: the bound catches a planner gone several times slower, not a slower machine
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 45
    assert "wave 1: 24 job(s)" in p.stdout and "wave 2: 6 job(s) (after wave 1)" in p.stdout
    # a device whose entry lacks one of the table's nets (the H200's had no VCONV) says so rather than under-price
    h200 = "[\\d.,]+ H200-hours" if "vconv" in costs.load()["h200"] else "not measured on H200"
    (total,) = [ln for ln in p.stdout.splitlines() if ln.startswith("total: ")]
    assert re.match(r"total: 30 jobs, 150 runs \(0 done\), [\d,]+ net-steps left: about ", total), total
    for part in (r"[\d.,]+ H100-hours", h200, r"[\d.,]+ CPU \(Zen 4\)-hours \(\d+ days\)", r"[\d.,]+ CPU \(Zen 3\)-hours"):
        assert re.search(part, total), (part, total)
    # this machine's entry first, named as such (the entry recorded on it, its kind's, or the nearest)
    mark = re.search(r"\((this machine|this kind of machine|the nearest entry: none for this machine[^)]*)\)", total)
    assert mark and mark.start() < total.index("H100-hours"), total
    assert list(tmp_path.iterdir()) == []  # trains nothing, writes nothing
    assert "report: python -m gatelab.papers.npf table2" in p.stdout


def test_a_figure_recipes_dry_run_prices_the_runs_its_figure_trains(tiny_root, capsys, tmp_path, monkeypatch):
    """Figure 3 left at the reduced scale trains its runs inside the figure command; the dry run prices them
    (15: per seed ReLU, FRNPF-II and FLNPF at 3 stages) and adds them to the total. In an empty folder: runs
    of a checkout's own outputs/ would count as done."""
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "figure3", "--scale", "reduced", "--dry-run", "--data", str(tiny_root)]) in (0, None)
    out = capsys.readouterr().out
    assert "its runs: 15 run(s) [new]" in out and "not priced here" not in out
    assert re.search(r"total: 0 jobs, 15 runs \(0 done\), [\d,]+ net-steps left: about .*CPU \(Zen 3\)", out)


def test_a_fifth_paper_is_a_package_with_a_recipes_file(tmp_path, monkeypatch, tiny_root, capsys):
    """What the README shows: a paper package holding recipes.py is found by name, plans, and lists."""
    import gatelab.papers as papers
    pkg = tmp_path / "fifth"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""Paper 005."""\n')
    (pkg / "recipes.py").write_text('''
from gatelab.launch.recipes import Options, Recipe, recipe


@recipe("fifth-table1", ("paper", "quick"), "Table 1 of paper 005")
def table1(o: Options) -> Recipe:
    root = "outputs/fifth-quick" if o.scale == "quick" else o.root("outputs/fifth")
    epochs = ["epochs=2"] if o.scale == "quick" else []
    runs = [["regime=relu,dlnpf", "seeds=[0,1]", *epochs, f"out_root={root}"]]
    return Recipe("fifth-table1", "Table 1 of paper 005", runs, reports=[
        ["gatelab.papers.fifth", "table1", "--runs", root, "--out", "outputs/reports/fifth", "--command", "{command}"]])
''')
    monkeypatch.setattr(papers, "__path__", [*papers.__path__, str(tmp_path)])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "gatelab.papers.fifth", __import__("importlib").import_module("fifth"))
    assert "fifth-table1" in discover()
    assert main(["reproduce", "fifth-table1", "--scale", "quick", "--dry-run", "--data", str(tiny_root)]) == 0
    out = capsys.readouterr().out
    assert "wave 1: 2 job(s)" in out and "mnist-fc-adam-lr0.0003/dlnpf seeds 0,1: 2 run(s) [new]" in out
    recipes.REGISTRY.pop("fifth-table1")


def test_a_routing_step_is_priced_by_its_domains_more_than_its_pairs():
    """A routing step runs M encoders and every decoder: M=100 costs 5-8x M=20 (measured on this CPU:
    5.6x at K=10, 7.6x at K=90), K moves it little; other networks go by their entry alone."""
    from gatelab.core.runs import compose
    def cfg(m, k):
        return compose(["+experiment=routing_reduced", f"dataset.routing.M={m}", f"dataset.routing.K={k}"])
    small, big = cfg(20, 10), cfg(100, 90)
    entry = {"routing": [0.001, 0.004], "fc": 0.5}
    assert costs.size(small) == 1.0 and 6 < costs.size(big) < 8
    assert costs.size(cfg(20, 2)) == pytest.approx(1.0, abs=0.05) and 5 < costs.size(cfg(100, 10)) < 6
    assert costs.per_step(entry, big) == pytest.approx((0.001, 0.004 * costs.size(big)))  # the launches stay
    assert costs.per_step(entry, compose([])) == (0.0, 0.5)


def test_the_price_adds_each_epochs_evaluation_each_jobs_start_and_each_stacks_warmup():
    """Issue #37: the plan priced optimiser steps only (a GPU's Table 2 conv row: 55 s priced, about 160 s
    measured, of which some 25 s the process's start and 4-14 s a stack's first epoch). Now evaluation (a
    third of a step per test example) and the entry's fixed costs are in the price; a routing run
    evaluates two pathway sets."""
    from gatelab.core.runs import compose
    c = compose(["arch.dense=[128,128,128,128,128]", "dataset.limit_train=1000", "dataset.limit_test=300"])
    assert costs.eval_share(c) == pytest.approx(0.3 / 3)
    routing = compose(["+experiment=routing_reduced"])
    batch = routing.optimizer.batch_size  # 8: a test example costs a third of a batch-32 step's share of it
    assert costs.eval_share(routing) == pytest.approx(2 / 3 * routing.dataset.limit_test / routing.dataset.limit_train
                                                      * batch / costs.EVAL_BATCH)
    entry = {"fc": [0.0, 0.001]}
    items = [(c, 100, (0, 0)), (c, 100, (0, 0)), (c, 50, (0, 1)), (c, 80, (1, 0)), (c, 0, (2, 0))]  # job 2: done
    steps = 100 * 2 * 0.001 + 50 * 0.001 + 80 * 0.001
    assert costs.price(items, {"d": entry})["d"] == pytest.approx(steps * 1.1)
    fixed = costs.price(items, {"d": {**entry, "start": 20.0, "warmup": 5.0}})["d"]
    assert fixed == pytest.approx(steps * 1.1 + 2 * 20.0 + 3 * 5.0)  # 2 jobs with steps left, 3 stacks


def test_the_price_counts_the_examples_an_epoch_sees_a_loss_trace_and_each_epochs_writes():
    """Issue #37 §4: races runs were priced 2-5x under measured. Their test set is the class groups' 4 of
    10 classes (4000, not 10000), every traced step evaluates the training set, and each epoch writes
    checkpoints and results.json (an entry's ``epoch``)."""
    from gatelab.core.runs import compose
    race = compose(["+experiment=race", "dataset.limit_train=800"])
    assert costs.examples(race) == (800, 4000)
    assert costs.examples(compose(["dataset=binary_mnist"]))[1] == 2000  # 2 of 10 classes
    assert costs.examples(compose(["dataset.limit_train=300", "dataset.limit_test=50"])) == (300, 50)
    per_epoch = 800 // int(race.optimizer.batch_size)
    total = int(race.epochs) * per_epoch
    assert costs.traced_steps(race, total) == 0.0  # no trace asked
    traced = compose(["+experiment=race", "dataset.limit_train=800", "loss_trace=[0,99]"])
    one = costs.EVAL * 800 / costs.EVAL_BATCH  # one traced step: the training set's forwards, in large batches
    assert costs.traced_steps(traced, total) == pytest.approx(100 * one)
    assert costs.traced_steps(traced, total - 100) == pytest.approx(0.0)  # resumed past the window
    assert costs.traced_steps(traced, total - 10) == pytest.approx(90 * one)  # the window's last 90 steps
    entry = {"fc-1-hidden": [0.0, 0.001]}
    base = costs.price([(traced, total, 0)], {"d": entry})["d"]
    assert base == pytest.approx(0.001 * (total * (1 + costs.eval_share(traced)) + 100 * one))
    written = costs.price([(traced, total, 0), (traced, total, 0)], {"d": {**entry, "epoch": 0.5}})["d"]
    both = costs.price([(traced, total, 0), (traced, total, 0)], {"d": entry})["d"]
    assert written - both == pytest.approx(2 * 0.5 * int(race.epochs))  # each net's writes, each epoch
    big = costs.price([(traced, total, 0)], {"d": {**entry, "epoch": 0.5, "epoch/fc-1-hidden": 2.0}})["d"]
    assert big - base == pytest.approx(2.0 * int(race.epochs))


def test_a_cost_entry_goes_through_the_single_and_the_stacked_step_even_where_stacking_loses():
    """``fit`` puts ``a + S*b`` through both measurements. On a CPU where 2 stacked conv nets take longer than 2
    single steps, a < 0: one net is priced at its own speed, not the stack's, and a smaller net (size < 1)
    never gets a negative price, its whole step scaled."""
    from gatelab.core.runs import compose
    assert costs.fit(1.0, 1.5, 2) == [0.5, 0.5]  # a GPU: the step's fixed cost shared
    a, b = costs.fit(0.871, 2.27, 2)  # Zen 3 GCONV: single 0.871 s, 2 stacked 2.27 s a step
    assert a < 0 and a + b == pytest.approx(0.871, abs=2e-3) and a + 2 * b == pytest.approx(2.27, abs=2e-3)
    big = compose(["dataset=cifar10", "arch=gconv"])
    tiny = compose(["arch=fc", "arch.dense=[8,8]"])  # priced by its multiply-adds: a small fraction of the entry's net
    assert costs.size(big) == 1.0 and costs.size(tiny) < 0.05
    for cfg, k in ((big, "gconv"), (tiny, "fc")):
        pa, pb = costs.per_step({k: [a, b]}, cfg)
        assert pa + pb == pytest.approx(0.871 * costs.size(cfg), rel=3e-3) and pa + 3 * pb > 0
    priced = costs.price([(big, 100, "one")], {"cpu-x": {"gconv": [a, b]}})["cpu-x"]
    assert priced == pytest.approx(0.871 * 100 * (1 + costs.eval_share(big)), rel=3e-3)


def test_a_regime_with_a_feature_network_is_priced_by_what_it_trains():
    """FRNPF and FLNPF run a frozen feature network's forward beside the value network's step; a trained
    feature network (DLNPF, gates only) is two networks trained; an entry of the regime's own wins."""
    from gatelab.core.runs import compose
    entry = {"gconv": [0.0, 1.0], "gconv/dlnpf": [0.0, 2.5]}

    def b(regime):
        return costs.per_step(entry, compose(["dataset=cifar10", "arch=gconv", f"regime={regime}"]))[1]
    assert b("relu") == 1.0 and b("dlnpf") == 2.5 and b("gates_only") == 2.5
    assert b("frnpf_ii") == b("frnpf_di") == b("flnpf") == pytest.approx(1 + costs.EVAL)
    assert costs.per_step({"gconv": [0.0, 1.0]}, compose(["dataset=cifar10", "arch=gconv", "regime=dlnpf"]))[1] == 2.0
    assert costs.per_step({**entry, "gconv/flnpf": [0.0, 9.0]},
                          compose(["dataset=cifar10", "arch=gconv", "regime=flnpf"]))[1] == 9.0


def test_priced_against_measured_groups_runs_into_their_stacks(tmp_path, capsys):
    """``python -m gatelab costs ROOTS``: each stack (a config but its seed) priced from scratch beside the
    longest wall time of its nets; a failed run is not a measurement."""
    from omegaconf import OmegaConf
    from gatelab.core.results import RESULTS_VERSION
    from gatelab.core.runs import compose
    for seed, wall, status in ((0, 90.0, "completed"), (1, 100.0, "completed"), (2, 999.0, "failed")):
        cfg = compose(["arch.dense=[64,64]", "dataset.limit_train=320", "dataset.limit_test=32", "epochs=2",
                       f"seed={seed}", f"out_root={tmp_path}"])
        d = tmp_path / "runs" / f"seed{seed}"
        d.mkdir(parents=True)
        (d / "results.json").write_text(json.dumps({"version": RESULTS_VERSION, "status": status, "seed": seed,
                                                    "config": OmegaConf.to_container(cfg), "history": [{"epoch": 1},
                                                                                                      {"epoch": 2}],
                                                    "wall_time_s": wall, "env": {"threads": 1}}))
    table = {"here": {"label": "here", "fc": [0.0, 0.01], "start": 30.0}}
    df = costs.priced_against_measured([tmp_path], "here", table)
    assert len(df) == 1 and df.nets.item() == 2 and df.measured_s.item() == 100.0
    steps = 2 * 10  # 2 epochs of 320 / 32
    priced = steps * 2 * 0.01 * costs.size(cfg) * (1 + costs.eval_share(cfg))  # no job start in a run's wall time
    assert df.priced_s.item() == pytest.approx(priced) and df.ratio.item() == pytest.approx(100.0 / priced)
    from gatelab.papers.reproduce import priced_text
    text = priced_text(df, "here")
    assert "| fc | relu | 2 | 2 | 20 |" in text and df.steady_s.item() == 100.0  # no epoch seconds: the wall time
    assert text.splitlines()[-1].endswith(f"steady 100 s: {100.0 / priced:.2f}x")
    # a stack is what its last.pt records: two regimes of a row's family trained together share one wall time
    from gatelab.core import checkpoints
    for seed in (0, 1):
        checkpoints.save(tmp_path / "runs" / f"seed{seed}" / "ckpt" / "last.pt", group=["a/relu/seed0", "a/relu/seed1"])
    assert len(costs.priced_against_measured([tmp_path], "here", table)) == 1
    checkpoints.save(tmp_path / "runs" / "seed1" / "ckpt" / "last.pt", group=["a/relu/seed1"])
    assert sorted(costs.priced_against_measured([tmp_path], "here", table).nets) == [1, 1]
    with pytest.raises(KeyError, match="no entry 'gpu'"):
        costs.priced_against_measured([tmp_path], "gpu", table)
    assert main(["costs", str(tmp_path / "nothing")]) == 2 and "no completed runs" in capsys.readouterr().err


def test_an_fc_step_is_priced_by_its_multiply_adds():
    """The FC entries were measured on Table 2's FC net (MNIST, 5 x 128): a wider net costs more in
    proportion (paper 002 Fig 5's 512..64 net: 5.4x, measured here about 10x); conv nets by their entry."""
    from gatelab.core.runs import compose
    assert costs.size(compose(["+experiment=table2_fc_adam"])) == 1.0
    fig5 = compose(["+experiment=dgn_fig5"])
    assert costs.size(fig5) == pytest.approx((784 * 512 + 512 * 512 + 512 * 256 + 256 * 256 + 256 * 128 + 128 * 64) /
                                             (784 * 128 + 4 * 128 * 128))
    assert costs.size(compose(["dataset=cifar10", "arch=fc"])) > costs.size(compose(["arch=fc"]))
    assert costs.size(compose(["dataset=cifar10", "arch=vconv"])) == 1.0


@pytest.mark.parametrize("change, changes_runs", [
    (dict(epochs=1), True), (dict(seeds="0,1"), True), (dict(extra=["dataset.limit_train=500"]), True),
    (dict(extra=["optimizer.lr=1e-3"]), True), (dict(stack=False), False), (dict(extra=["threads=1"]), False)])
def test_a_shorter_try_never_lands_in_the_recipes_report_folder(change, changes_runs, tmp_path, monkeypatch, tiny_root):
    """EPOCHS, SEEDS and EXTRA overrides of what a run key holds train into <out_root><variant> and
    render into <report><variant>, the report's first line saying so; BATCH=0 and settings a key leaves
    out (threads) are the recipe's own runs, its folders. The rendered report is the real one."""
    own = recipes.build("table2-mnist", Options("paper"))
    r = recipes.build("table2-mnist", Options("paper", **change))
    outs = lambda rec: [a[a.index("--out") + 1] for a in rec.reports] + \
        [o for rs in rec.runs for o in rs if o.startswith("out_root=")]
    assert outs(own) == ["outputs/reports/table2-mnist", *["out_root=outputs/table2"] * len(own.runs)]
    if not changes_runs:
        assert outs(r) == outs(own) and r.banner == ""
        return
    assert all(a != b and a.startswith(b.replace("outputs/reports/", "outputs/tries/"))
               for a, b in zip(outs(r), outs(own))) and len(outs(r)) == len(outs(own))
    assert all(not a.startswith("outputs/reports/") for a in outs(r))  # git ignores a try's report (issue #57)
    assert r.banner.startswith("NOT THE RECIPE'S SCALE (paper)")
    # the report runs as a recipe runs it, from a working folder holding a committed paper-scale report
    monkeypatch.chdir(tmp_path)
    committed = tmp_path / "outputs/reports/table2-mnist/table2.md"
    committed.parent.mkdir(parents=True)
    committed.write_text("# paper-scale table\n")
    from conftest import make_cfg
    from gatelab.core.runs import run_dir
    from gatelab.training.loop import train
    cfg = make_cfg(["+experiment=table2_fc_adam", "arch.dense=[8]", "seed=0", "seeds=null",
                    f"out_root={r.reports[0][r.reports[0].index('--runs') + 1]}"], tiny_root)
    assert train(cfg, run_dir(cfg))["status"] == "completed"  # one tiny ReLU run: the table has a cell
    assert recipes.run_figures_and_reports(r, "make table2-mnist ...") == []
    out = tmp_path / r.reports[0][r.reports[0].index("--out") + 1]
    assert committed.read_text() == "# paper-scale table\n"
    assert (out / "table2.md").read_text().splitlines()[0] == f"**{r.banner}**"


def test_a_stopped_job_leaves_the_reports_as_they_were(tiny_root, tmp_path, monkeypatch, capsys):
    """A job stopped by SIGTERM or Ctrl-C (exit 143 or 130: progress saved, its runs interrupted) renders no
    report: a report of interrupted runs would replace a finished one (2026-11-28: exp6's, stopped to free
    the CPU). A job that failed otherwise still renders what there is, the failure recorded."""
    _tiny("stopped-job", tmp_path / "out")
    rendered = []
    monkeypatch.setattr(recipes, "run_figures_and_reports", lambda r, command: rendered.append(r.name) or [])
    for code, renders in ((143, False), (130, False), (1, True)):
        monkeypatch.setattr(recipes, "_call", lambda argv, code=code: code)
        rendered.clear()
        assert main(["reproduce", "stopped-job", "--scale", "s", "--data", str(tiny_root)]) == 1
        assert bool(rendered) == renders
        assert ("reports not rendered" in capsys.readouterr().err) != renders
